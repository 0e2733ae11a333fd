"""One call per captured frame: locate the golden, compare, decide and perform an update, write failure
artifacts and the defect record; and for a GPU backend the same capture against the software golden (the
cross-backend check). This is what a `golden` fixture wraps; it knows nothing of pytest."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .failure_images import defect_record, write_artifacts
from .match import Comparison, compare
from .store import (
    REFERENCE_ARCH,
    GoldenError,
    GoldenKey,
    GoldenStore,
    UpdateDecision,
    as_rgba8,
    decide_update,
    golden_set,
    load_png,
    pixel_digest,
)
from .tolerance import CROSS_ARCH, CROSS_BACKEND, SOFTWARE, CrossKind, resolve_tolerance
from .triage import load_triage

Status = Literal["passed", "failed", "missing", "written", "error"]


@dataclass
class FrameCheck:
    key: GoldenKey
    status: Status
    message: str
    golden: Path | None = None  # the reference compared with (own golden, or the software one)
    golden_backend: str | None = None
    golden_set: str | None = None  # "<backend>/<set>" of that golden, e.g. software/aarch64
    comparison: Comparison | None = None
    decision: UpdateDecision | None = None
    written: Path | None = None
    artifacts: dict[str, str] = field(default_factory=dict)
    record: dict[str, Any] | None = None  # defect record, whenever a comparison ran
    digest: str | None = None  # pixel_digest of the capture
    # golden/triage.py: accepted or rejected (the digest is in the triage file), untriaged (not in it, and the
    # comparison failed or there is no golden), None (passed, or nothing to triage)
    triage: str | None = None

    @property
    def ok(self) -> bool:
        """passed, or a golden was (re)written from a trusted capture."""
        return self.status in ("passed", "written")


def check_capture(
    store: GoldenStore,
    *,
    backend: str,
    device_class: str | None,
    scene_id: str,
    arch: str | None = None,
    frame: int,
    capture: str | Path | np.ndarray | None,
    tolerance: Mapping[str, Any] | None = None,
    update: str | None = None,
    capture_trusted: bool = True,
    untrusted_reason: str = "",
    artifacts_dir: str | Path | None = None,
    perceptual: bool = True,
    device: str | None = None,
    driver: Mapping[str, Any] | None = None,
    build_hash: str | None = None,
    runner_issues: Iterable[Any] = (),
    capture_problem: str | None = None,
) -> FrameCheck:
    """Check one capture against its golden.

    tolerance: SceneCase.tolerance (raw, keyed by backend); a ToleranceError propagates for the caller to
    wrap as a SceneError. update: None or 'missing' | 'failed' | 'all'. capture_trusted: False when the
    launch exited non-zero, was partial, or reported GL/shader/NaN issues; then nothing is ever written.
    artifacts_dir: where expected/actual/diff/FLIP PNGs go on failure (nothing written if None).
    capture_problem: why there is no capture to check (it was refused at the protocol boundary).
    arch: the CPU architecture family the runner reported; it selects the software set (golden_set)."""
    key = store.key(backend, golden_set(backend, device_class, arch), scene_id, frame)
    own_path = store.path(key)
    if capture is None:
        why = f"capture unusable: {capture_problem}" if capture_problem else "the runner wrote no capture"
        return FrameCheck(key, "error", f"frame {frame}: {why}; golden {own_path} not checked")
    try:
        pixels = load_png(capture) if isinstance(capture, (str, Path)) else as_rgba8(capture)
    except GoldenError as exc:
        return FrameCheck(key, "error", f"frame {frame}: capture unusable: {exc}")

    # The triage first (docs/goldens.md, "Triage"): a known image is decided by its digest alone, whatever the
    # update mode (a rejected image is never written).
    digest = pixel_digest(pixels)
    triage = load_triage(store, key)
    known = triage.frame(frame)
    if digest in known.rejected:
        rejection = known.rejected[digest]
        return FrameCheck(key, "failed", f"frame {frame}: a rejected image (digest {digest[:12]}, rejected "
                                         f"{rejection.date or 'on an unknown date'} in {triage.path}): "
                                         f"{rejection.reason}",
                          digest=digest, triage="rejected")
    if digest in known.accepted:
        return FrameCheck(key, "passed", f"frame {frame}: an accepted image (digest {digest[:12]} in "
                                         f"{triage.path})", golden=triage.path, golden_backend=key.backend,
                          golden_set=f"{key.backend}/{key.device_class}", digest=digest, triage="accepted")

    reference = store.reference_for(key)
    comparison: Comparison | None = None
    ref_key: GoldenKey | None = None
    ref_path: Path | None = None
    unusable: str | None = None  # why the golden there cannot be compared with (corrupt, linked out of the store)
    if reference is not None:
        ref_key, ref_path = reference
        tol = resolve_tolerance(tolerance, backend, golden_backend=ref_key.backend)
        try:
            golden = store.load(ref_key)
        except GoldenError as exc:
            unusable = str(exc)
        else:
            if golden is not None:
                comparison = compare(golden, pixels, tol, perceptual=perceptual)

    own_exists = ref_key == key
    decision = decide_update(
        update,
        exists=own_exists,
        # An unusable golden of its own counts as failed: =failed and =all replace it from a trusted capture.
        passed=False if unusable is not None and own_exists else None if comparison is None else comparison.passed,
        identical=own_exists and comparison is not None and comparison.identical,
        capture_trusted=capture_trusted,
        untrusted_reason=untrusted_reason,
    )
    result = FrameCheck(key, "passed", "", golden=ref_path, golden_backend=ref_key.backend if ref_key else None,
                        golden_set=f"{ref_key.backend}/{ref_key.device_class}" if ref_key else None,
                        comparison=comparison, decision=decision, digest=digest)
    if decision.write:
        result.written = store.write(key, pixels)
        result.status = "written"
    elif unusable is not None:
        result.status = "error"
        result.message = (f"frame {frame}: golden {ref_path} cannot be compared with: {unusable}"
                          + ("" if update in ("failed", "all") else
                             "\n  replace it from this capture, once checked by eye: --zbench-update-goldens=failed")
                          + ("" if update is None else f"\n  not updated: {decision.reason}"))
        return result
    elif comparison is None:
        result.status = "missing"
    elif not comparison.passed:
        result.status = "failed"
    if result.status in ("missing", "failed"):
        result.triage = "untriaged"

    if comparison is not None and result.status == "failed" and artifacts_dir is not None:
        result.artifacts = write_artifacts(comparison, artifacts_dir, stem=f"frame-{frame}")
    if comparison is not None:
        result.record = defect_record(
            scene=scene_id, frame=frame, backend=backend, comparison=comparison, device=device,
            device_class=key.device_class, driver=driver, golden=ref_path, golden_backend=result.golden_backend,
            artifacts=result.artifacts, build_hash=build_hash, runner_issues=runner_issues,
        )
    result.message = _message(result, own_path, update, store.legacy_software_set())
    return result


def set_description(key: GoldenKey) -> str:
    """Which set a key is in and why that one, for messages: software sets are per CPU architecture."""
    if key.backend == SOFTWARE:
        return (f"set {key.backend}/{key.device_class}: software goldens are exact within one CPU architecture, "
                f"and this device's runner is {key.device_class}")
    return f"set {key.backend}/{key.device_class}: the device class of this {key.backend} device"


def _message(result: FrameCheck, own_path: Path, update: str | None, legacy: Path | None) -> str:
    frame = result.key.frame
    if result.status == "written":
        return f"frame {frame}: golden written to {result.written} ({result.decision.reason})"  # type: ignore[union-attr]
    if result.status == "missing":
        hint = ("" if update is None else f"; not written: {result.decision.reason}")  # type: ignore[union-attr]
        if legacy is not None and result.key.backend == SOFTWARE:
            hint += (f". {legacy} is the layout before software sets per architecture: move it to its "
                     f"architecture's set (git mv goldens/software/any goldens/software/x86_64 for goldens "
                     f"recorded on x86_64)")
        return (f"frame {frame}: no golden at {own_path} ({set_description(result.key)}){hint}. Record this "
                f"capture with --zbench-update-goldens=missing after checking it by eye.")
    comparison = result.comparison
    assert comparison is not None
    against = f"{result.golden} ({set_description(result.key)})"
    if result.golden_backend != result.key.backend:
        against = (f"{result.golden} (the {result.golden_set} reference golden, compared with the cross_backend "
                   f"tolerance: no {result.key.backend}/{result.key.device_class} golden yet)")
    lines = [f"frame {frame} vs {against}: {comparison.message()}"]
    if result.artifacts:
        lines.append(_artifacts_line(result.artifacts))
    if result.status == "failed":
        if update is None:
            lines.append("  if the change is intended: --zbench-update-goldens=failed")
        else:
            lines.append(f"  not updated: {result.decision.reason}")  # type: ignore[union-attr]
    return "\n".join(lines)


def cross_kind(backend: str, own_set: str) -> CrossKind | None:
    """Which comparison with the reference software set a capture also gets: cross_backend for a GPU
    backend, cross_arch for the software backend of another CPU architecture, none for the reference."""
    if backend != SOFTWARE:
        return CROSS_BACKEND
    return CROSS_ARCH if own_set != REFERENCE_ARCH else None


def check_cross_reference(store: GoldenStore, *, kind: CrossKind, backend: str, frame: int,
                          capture: str | Path, tolerance: Mapping[str, Any] | None, own: FrameCheck,
                          artifacts_dir: str | Path) -> dict[str, Any]:
    """The capture against the reference software golden (goldens/software/x86_64/...) under the scene's
    cross_backend or cross_arch tolerance, whether or not the device has its own golden: its own golden
    catches a change on this device (exactly, for software), this catches a rasteriser -- another backend, or
    another architecture's raster pipeline -- that drifted from the reference as a whole. For another
    architecture it is never a pass in place of its own golden. `own` is the frame's check_capture result.
    Returns run.json's `cross_backend` / `cross_arch` entry of the frame (kind, status, metrics, tightness,
    golden, reference_set, message, artifacts on failure); a ToleranceError propagates."""
    reference = store.reference_key(own.key)
    shared = store.path(reference)
    reference_set = f"{reference.backend}/{reference.device_class}"
    across = (f"across backends: {backend} against the software reference" if kind == CROSS_BACKEND else
              f"across CPU architectures: this device is {own.key.device_class}, the reference {REFERENCE_ARCH}")
    base: dict[str, Any] = {"kind": kind, "golden": str(shared), "reference_set": reference_set}
    if own.golden_backend == SOFTWARE and own.golden_set == reference_set and own.comparison is not None:
        comparison = own.comparison  # a GPU device's own golden is missing: the frame check already was this
    elif not store.exists(reference):
        return {**base, "status": "missing", "metrics": None, "tightness": None,
                "message": f"frame {frame}: no reference golden at {shared} to compare {across}"}
    else:
        resolved = resolve_tolerance(tolerance, backend, golden_backend=SOFTWARE, cross_arch=kind == CROSS_ARCH)
        try:
            golden = store.load(reference)
            assert golden is not None
            comparison = compare(golden, load_png(capture), resolved)
        except GoldenError as exc:
            return {**base, "status": "error", "metrics": None, "tightness": None,
                    "message": f"frame {frame}: comparison {across} not possible: {exc}"}
    status = "passed" if comparison.passed else "failed"
    message = (f"frame {frame} vs the reference set {reference_set}, {shared} ({across}; {kind} tolerance of "
               f"{backend}): {comparison.message()}")
    entry = {**base, "status": status, "metrics": comparison.metrics, "tightness": comparison.tightness,
             "message": message}
    if status == "failed":
        stem = f"frame-{frame}-cross" + ("-arch" if kind == CROSS_ARCH else "")
        artifacts = write_artifacts(comparison, artifacts_dir, stem=stem)
        entry["artifacts"] = artifacts
        entry["message"] += "\n" + _artifacts_line(artifacts)
        entry["message"] += (f"\n  if the difference is a real rasteriser difference, declare it in the scene's "
                             f"tolerance.{backend}.{kind}")
    return entry


def _artifacts_line(artifacts: Mapping[str, str]) -> str:
    return "  artifacts: " + ", ".join(f"{k} {v}" for k, v in artifacts.items())
