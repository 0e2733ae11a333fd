"""The golden test of one measured scene: its captures against the golden store, plus the invariants that
are not pixels (GL errors, shader failures, NaNs, skipped features, non-deterministic frames)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..golden.artifacts import write_artifacts
from ..golden.check import FrameCheck, check_capture
from ..golden.match import compare
from ..golden.store import REFERENCE_ARCH, GoldenError, GoldenStore, golden_set, load_png, pixel_digest
from ..golden.tolerance import CROSS_ARCH, CROSS_BACKEND, SOFTWARE, ToleranceError, resolve_tolerance
from ..errors import SceneError
from ..inventory import Inventory
from ..scenes import load_corpus
from ..settings import Settings
from .device import LaunchOutcome, safe_component
from .measure import SceneMeasurement

# Runner issues that make a frame wrong even when its pixels match (seed §4: invariants that are not pixels).
INVARIANT_KINDS = ("gl_error", "shader", "nan", "feature_skipped", "error")
# Issues that make a capture unfit to become a golden.
UNTRUSTED_KINDS = INVARIANT_KINDS + ("exit", "timeout", "partial", "protocol", "capture_missing", "font_fallback")


@dataclass
class GoldenOutcome:
    checks: list[FrameCheck] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # invariant violations, beside the frame checks
    # Per captured frame of a non-software backend, or of the software backend on another CPU architecture
    # than the reference one: the capture against the reference software golden (goldens/software/x86_64),
    # under the scene's cross_backend or cross_arch tolerance ({kind, status, metrics, tightness, golden,
    # reference_set, message}).
    cross: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.failures and all(check.ok for check in self.checks)

    def correctness(self, results_dir: Path) -> dict[str, Any]:
        """The run.json `correctness` section of the scene."""
        frames = []
        for check in self.checks:
            comparison = check.comparison
            frames.append({
                "frame": check.key.frame,
                "status": check.status,
                "golden": _rel(check.golden, None),
                "golden_backend": check.golden_backend,
                "golden_set": check.golden_set,
                "set": f"{check.key.backend}/{check.key.device_class}",
                "written": _rel(check.written, None),
                "metrics": comparison.metrics if comparison else None,
                "tightness": comparison.tightness if comparison else None,
                "artifacts": {k: _rel(Path(v), results_dir) for k, v in check.artifacts.items()},
                "defect": check.record if check.status == "failed" else None,
                "message": check.message,
                **_cross_entries(self.cross.get(check.key.frame)),
            })
        return {"outcome": "passed" if self.passed else "failed", "frames": frames, "invariants": self.failures}


def _cross_entries(cross: dict[str, Any] | None) -> dict[str, Any]:
    """The frame's `cross_backend` and `cross_arch` keys of run.json (the one that did not run is null)."""
    kind = (cross or {}).get("kind")
    return {CROSS_BACKEND: cross if kind == CROSS_BACKEND else None, CROSS_ARCH: cross if kind == CROSS_ARCH else None}


def check_goldens(m: SceneMeasurement, store: GoldenStore, *, device_class: str, update: str | None,
                  results_dir: Path, driver: dict[str, Any], build_hash: str | None,
                  arch: str | None = None) -> GoldenOutcome:
    """`arch`: the CPU architecture family the device's runner reported; it picks the software set."""
    outcome = GoldenOutcome()
    job = m.job
    if job is None:
        return outcome
    try:
        golden_set(m.backend, device_class, arch)
    except GoldenError as exc:
        outcome.failures.append(f"no golden set for device {m.device}: {exc}")
        return outcome
    launch = _capture_launch(m.launches)
    issues = m.issues
    invariants = [i for i in issues if i.kind in INVARIANT_KINDS]
    for issue in invariants:
        outcome.failures.append(f"runner reported {issue.kind}"
                                f"{'' if issue.frame is None else f' at frame {issue.frame}'}: {issue.detail}")
    nondeterministic = _nondeterministic_frames(m.complete_launches, job.capture)
    for frame in nondeterministic:
        outcome.failures.append(f"frame {frame} differs between launches: the scene or the runner is not "
                                f"deterministic, so a golden comparison would pass or fail by chance")
    untrusted = sorted({i.kind for i in issues if i.kind in UNTRUSTED_KINDS})
    trusted = launch is not None and launch.complete and not untrusted and not nondeterministic
    reason = ("no launch completed" if launch is None or not launch.complete else
              f"runner issues: {', '.join(untrusted)}" if untrusted else "captures differ between launches")
    artifacts_dir = results_dir / safe_component(m.device) / safe_component(m.case.id) / "golden"
    for frame in job.capture:
        capture = launch.captures.get(frame) if launch is not None else None
        try:
            outcome.checks.append(check_capture(
                store, backend=m.backend, device_class=device_class, arch=arch, scene_id=m.case.id, frame=frame,
                capture=capture, tolerance=m.case.tolerance, update=update, capture_trusted=trusted,
                untrusted_reason="" if trusted else reason, artifacts_dir=artifacts_dir, device=m.device,
                driver=driver, build_hash=build_hash, runner_issues=issues,
            ))
        except ToleranceError as exc:
            raise SceneError(m.case.source, str(exc), scene=m.case.id, key=f"tolerance.{exc.key}") from exc
        check = outcome.checks[-1]
        kind = _cross_kind(m.backend, check.key.device_class)
        if kind is not None and capture is not None:
            cross = _cross_reference(store, m, frame, capture, check, artifacts_dir, kind)
            outcome.cross[frame] = cross
            if cross["status"] == "failed":
                outcome.failures.append(cross["message"])
            elif check.status == "missing" and kind == CROSS_ARCH:
                # Not a pass: the frame still fails for want of its own golden; this says how far it is.
                check.message += f"\n  meanwhile, {cross['status']}: {cross['message']}"
    return outcome


def _cross_kind(backend: str, own_set: str) -> str | None:
    """Which comparison with the reference software set a capture also gets: cross_backend for a GPU
    backend, cross_arch for the software backend of another CPU architecture, none for the reference."""
    if backend != SOFTWARE:
        return CROSS_BACKEND
    return CROSS_ARCH if own_set != REFERENCE_ARCH else None


def _cross_reference(store: GoldenStore, m: SceneMeasurement, frame: int, capture: Path, check: FrameCheck,
                     artifacts_dir: Path, kind: str) -> dict[str, Any]:
    """The capture against the reference software golden (goldens/software/x86_64/...), whether or not the
    device has its own golden: its own golden catches a change on this device (exactly, for software), this
    catches a rasteriser -- another backend, or another architecture's raster pipeline -- that drifted from
    the reference as a whole. For another architecture it is never a pass in place of its own golden."""
    reference = store.reference_key(check.key)
    shared = store.path(reference)
    reference_set = f"{reference.backend}/{reference.device_class}"
    across = (f"across backends: {m.backend} against the software reference" if kind == CROSS_BACKEND else
              f"across CPU architectures: this device is {check.key.device_class}, the reference {REFERENCE_ARCH}")
    base = {"kind": kind, "golden": str(shared), "reference_set": reference_set}
    if check.golden_backend == SOFTWARE and check.golden_set == reference_set and check.comparison is not None:
        comparison = check.comparison  # a GPU device's own golden is missing: the frame check already was this
    elif not shared.is_file():
        return {**base, "status": "missing", "metrics": None, "tightness": None,
                "message": f"frame {frame}: no reference golden at {shared} to compare {across}"}
    else:
        try:
            tolerance = resolve_tolerance(m.case.tolerance, m.backend, golden_backend=SOFTWARE,
                                          cross_arch=kind == CROSS_ARCH)
            comparison = compare(load_png(shared), load_png(capture), tolerance)
        except ToleranceError as exc:
            raise SceneError(m.case.source, str(exc), scene=m.case.id, key=f"tolerance.{exc.key}") from exc
        except GoldenError as exc:
            return {**base, "status": "error", "metrics": None, "tightness": None,
                    "message": f"frame {frame}: comparison {across} not possible: {exc}"}
    status = "passed" if comparison.passed else "failed"
    message = (f"frame {frame} vs the reference set {reference_set}, {shared} ({across}; {kind} tolerance of "
               f"{m.backend}): {comparison.message()}")
    entry = {**base, "status": status, "metrics": comparison.metrics, "tightness": comparison.tightness,
             "message": message}
    if status == "failed":
        artifacts = write_artifacts(comparison, artifacts_dir, stem=f"frame-{frame}-cross" + ("-arch" if kind == CROSS_ARCH else ""))
        entry["artifacts"] = artifacts
        entry["message"] += "\n  artifacts: " + ", ".join(f"{k} {v}" for k, v in artifacts.items())
        entry["message"] += (f"\n  if the difference is a real rasteriser difference, declare it in the scene's "
                             f"tolerance.{m.backend}.{kind}")
    return entry


def device_arch(sections: dict[str, Any]) -> str | None:
    """The CPU architecture family in a device's run.json sections (what its runner reported)."""
    cpu = (sections.get("device") or {}).get("cpu") or {}
    return cpu.get("family") if isinstance(cpu, dict) else None


def unused_goldens(settings: Settings, inventory: Inventory,
                   devices: dict[str, dict[str, Any]] | None = None) -> list[Path]:
    """Goldens under the selected devices' sets that no scene of the corpus captures any more. `devices`:
    the session's device sections (RunRecord.devices); a software device's set is known only once its
    runner reported its architecture, so one that was never probed is left out."""
    cases, _ = load_corpus(settings.scenes_dir)
    store = GoldenStore(settings.goldens_dir)
    sets = set()
    for name in settings.devices:
        spec = inventory.get(name)
        try:
            sets.add((spec.backend, golden_set(spec.backend, spec.device_class,
                                               device_arch((devices or {}).get(name) or {}))))
        except GoldenError:
            continue
    expected = [store.path_for(backend, folder, case.id, frame)
                for backend, folder in sets for case in cases for frame in case.capture]
    return store.unused(expected, within=sorted(sets))  # type: ignore[arg-type]


def _capture_launch(launches: list[LaunchOutcome]) -> LaunchOutcome | None:
    """The launch whose captures are judged: the first complete one, else the first with any capture."""
    for launch in launches:
        if launch.complete and launch.captures:
            return launch
    return next((launch for launch in launches if launch.captures), None)


def _nondeterministic_frames(launches: list[LaunchOutcome], frames: tuple[int, ...]) -> list[int]:
    """Frames whose decoded pixels differ between complete launches (seed §9, pitfall 10)."""
    differing = []
    for frame in frames:
        digests = {pixel_digest(load_png(l.captures[frame])) for l in launches if frame in l.captures}
        if len(digests) > 1:
            differing.append(frame)
    return differing


def _rel(path: Path | None, base: Path | None) -> str | None:
    if path is None:
        return None
    if base is not None:
        try:
            return str(Path(path).relative_to(base))
        except ValueError:
            pass
    return str(path)
