"""One call per captured frame: locate the golden, compare, decide and perform an update, write failure
artifacts and the defect record. This is what a `golden` fixture wraps; it knows nothing of pytest."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping

import numpy as np

from .artifacts import defect_record, write_artifacts
from .match import Comparison, compare
from .store import (
    GoldenError, GoldenKey, GoldenStore, UpdateDecision, as_rgba8, decide_update, golden_set, load_png,
)
from .tolerance import SOFTWARE, resolve_tolerance

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
) -> FrameCheck:
    """Check one capture against its golden.

    tolerance: SceneCase.tolerance (raw, keyed by backend); a ToleranceError propagates for the caller to
    wrap as a SceneError. update: None or 'missing' | 'failed' | 'all'. capture_trusted: False when the
    launch exited non-zero, was partial, or reported GL/shader/NaN issues; then nothing is ever written.
    artifacts_dir: where expected/actual/diff/FLIP PNGs go on failure (nothing written if None).
    arch: the CPU architecture family the runner reported; it selects the software set (golden_set)."""
    key = store.key(backend, golden_set(backend, device_class, arch), scene_id, frame)
    own_path = store.path(key)
    if capture is None:
        return FrameCheck(key, "error", f"frame {frame}: the runner wrote no capture; golden {own_path} not checked")
    try:
        pixels = load_png(capture) if isinstance(capture, (str, Path)) else as_rgba8(capture)
    except GoldenError as exc:
        return FrameCheck(key, "error", f"frame {frame}: capture unusable: {exc}")

    reference = store.reference_for(key)
    comparison: Comparison | None = None
    ref_key: GoldenKey | None = None
    ref_path: Path | None = None
    if reference is not None:
        ref_key, ref_path = reference
        tol = resolve_tolerance(tolerance, backend, golden_backend=ref_key.backend)
        comparison = compare(load_png(ref_path), pixels, tol, perceptual=perceptual)

    own_exists = ref_key == key
    decision = decide_update(
        update,
        exists=own_exists,
        passed=None if comparison is None else comparison.passed,
        identical=own_exists and comparison is not None and comparison.identical,
        capture_trusted=capture_trusted,
        untrusted_reason=untrusted_reason,
    )
    result = FrameCheck(key, "passed", "", golden=ref_path, golden_backend=ref_key.backend if ref_key else None,
                        golden_set=f"{ref_key.backend}/{ref_key.device_class}" if ref_key else None,
                        comparison=comparison, decision=decision)
    if decision.write:
        result.written = store.write(key, pixels)
        result.status = "written"
    elif comparison is None:
        result.status = "missing"
    elif not comparison.passed:
        result.status = "failed"

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
        lines.append("  artifacts: " + ", ".join(f"{k} {v}" for k, v in result.artifacts.items()))
    if result.status == "failed":
        if update is None:
            lines.append("  if the change is intended: --zbench-update-goldens=failed")
        else:
            lines.append(f"  not updated: {result.decision.reason}")  # type: ignore[union-attr]
    return "\n".join(lines)
