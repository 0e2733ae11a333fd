"""The golden test of one measured scene: its captures against the golden store, plus the invariants that
are not pixels (GL errors, shader failures, NaNs, skipped features, non-deterministic frames)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import SceneError
from ...golden import vacuous as vacuity
from ...golden.check import FrameCheck, check_capture, check_cross_reference, cross_kind
from ...golden.store import GoldenError, GoldenStore, golden_set, load_png, make_key, pixel_digest
from ...golden.tolerance import CROSS_ARCH, CROSS_BACKEND, ToleranceError
from ...golden.triage import archive_note, triage_command, triage_hint
from ...inventory import Inventory
from ...protocol.vocabulary import INVARIANT_KINDS, IssueKind
from ...scenes import SceneCase, load_corpus
from ...settings import Settings
from ..devices.device import LaunchOutcome, safe_component
from ..measure.results import SceneMeasurement

# Issues that make a capture unfit to become a golden: the invariants (protocol/vocabulary.py), and these.
UNTRUSTED_KINDS: tuple[IssueKind, ...] = INVARIANT_KINDS + ("exit", "timeout", "partial", "protocol", "capture_missing", "capture_invalid",
                                     "font_fallback")


@dataclass
class GoldenOutcome:
    checks: list[FrameCheck] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # invariant violations, beside the frame checks
    # Issues of the golden test itself ({frame, kind, detail}): vacuous captures (golden/vacuous.py)
    issues: list[dict[str, Any]] = field(default_factory=list)
    # Per captured frame of a non-software backend, or of the software backend on another CPU architecture
    # than the reference one: the capture against the reference software golden (goldens/software/x86_64),
    # under the scene's cross_backend or cross_arch tolerance ({kind, status, metrics, tightness, golden,
    # reference_set, message}).
    cross: dict[int, dict[str, Any]] = field(default_factory=dict)
    # Per untriaged frame: the `zbench goldens accept` command of its capture (golden/triage.py)
    accept_commands: dict[int, str] = field(default_factory=dict)
    reject_commands: dict[int, str] = field(default_factory=dict)
    triage_note: str | None = None  # how long those commands work: the session keeps no run archive

    @property
    def passed(self) -> bool:
        return not self.failures and all(check.ok for check in self.checks)

    def failure_message(self, m: SceneMeasurement, update: str | None) -> str | None:
        """The golden test's failure text, or None when it passed: the invariants broken, every frame that
        failed, and the command that records a missing golden."""
        if self.passed:
            return None
        lines = [f"golden test of scene {m.case.id} on device {m.device} failed:"]
        lines += [f"  {failure}" for failure in self.failures]
        lines += [check.message for check in self.checks if not check.ok]
        if any(check.status == "missing" for check in self.checks) and update is None:
            lines.append(f"  create it: pytest --zbench-device={m.device} "
                         f"-k 'golden[{m.case.id}-{m.device}]' --zbench-update-goldens=missing --zbench-goldens-only")
        return "\n".join(lines)

    def correctness(self, results_dir: Path) -> dict[str, Any]:
        """The run.json `correctness` section of the scene."""
        frames = []
        for check in self.checks:
            comparison = check.comparison
            frames.append({
                "frame": check.key.frame,
                "status": check.status,
                "golden": _rel(check.golden, results_dir),
                "golden_backend": check.golden_backend,
                "golden_set": check.golden_set,
                "set": f"{check.key.backend}/{check.key.device_class}",
                "written": _rel(check.written, results_dir),
                "metrics": comparison.metrics if comparison else None,
                "tightness": comparison.tightness if comparison else None,
                "artifacts": _rel_paths(check.artifacts, results_dir),
                "defect": _rel_record(check.record, results_dir) if check.status == "failed" else None,
                "message": check.message,
                "digest": check.digest,
                "triage": check.triage,
                "accept": self.accept_commands.get(check.key.frame),
                "reject": self.reject_commands.get(check.key.frame),
                "triage_note": self.triage_note if check.key.frame in self.accept_commands else None,
                **_cross_entries(_rel_record(self.cross.get(check.key.frame), results_dir)),
            })
        return {"outcome": "passed" if self.passed else "failed", "frames": frames, "invariants": self.failures,
                "issues": self.issues}


def _cross_entries(cross: dict[str, Any] | None) -> dict[str, Any]:
    """The frame's `cross_backend` and `cross_arch` keys of run.json (the one that did not run is null)."""
    kind = (cross or {}).get("kind")
    return {CROSS_BACKEND: cross if kind == CROSS_BACKEND else None, CROSS_ARCH: cross if kind == CROSS_ARCH else None}


def check_goldens(m: SceneMeasurement, store: GoldenStore, *, device_class: str, update: str | None,
                  results_dir: Path, driver: dict[str, Any], build_hash: str | None,
                  arch: str | None = None, siblings: Sequence[SceneCase] = (),
                  sibling_captures: Mapping[str, Mapping[int, Path]] | None = None,
                  run_id: str | None = None, archive_off: str | None = None) -> GoldenOutcome:
    """`arch`: the CPU architecture family the device's runner reported; it picks the software set.
    `siblings`: the other cases of the scene's sweep; `sibling_captures`: their captures measured in this
    process (else their goldens stand for them), for the vacuous-capture check. `run_id`: the session's, which
    the printed triage commands name; `archive_off`: why the session keeps no run archive (None: it does)."""
    outcome = GoldenOutcome(triage_note=archive_note(results_dir, archive_off))
    job = m.job
    if job is None:
        return outcome
    try:
        golden_set(m.backend, device_class, arch)
    except GoldenError as exc:
        outcome.failures.append(f"no golden set for device {m.device}: {exc}")
        return outcome
    launch = capture_launch(m.launches)
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
        vacuous = _vacuous(store, m, device_class, arch, frame, capture, siblings, sibling_captures or {})
        if vacuous is not None:
            outcome.failures.append(vacuous)
            outcome.issues.append({"frame": frame, "kind": vacuity.KIND, "detail": vacuous})
        try:
            check = check_capture(
                store, backend=m.backend, device_class=device_class, arch=arch, scene_id=m.case.id, frame=frame,
                capture=capture, tolerance=m.case.tolerance, update=update,
                capture_trusted=trusted and vacuous is None,
                untrusted_reason=reason if not trusted else "" if vacuous is None else "the capture is vacuous", artifacts_dir=artifacts_dir, device=m.device,
                driver=driver, build_hash=build_hash, runner_issues=issues,
                capture_problem=_capture_problem(launch or (m.launches[0] if m.launches else None), frame),
            )
            if check.status in ("missing", "written", "failed") and capture is not None and not check.artifacts:
                # The capture itself, for review in the report before it is recorded (docs/report.md), and
                # for `zbench goldens accept` to take it from (a rejected image has no other artifact).
                check.artifacts = {"actual": str(capture)}
            if check.triage == "untriaged":
                command = triage_command("accept", results_dir, m.device, m.case.id, frame, run_id)
                rejection = triage_command("reject", results_dir, m.device, m.case.id, frame, run_id)
                outcome.accept_commands[frame], outcome.reject_commands[frame] = command, rejection
                check.message += triage_hint(command, rejection, outcome.triage_note)
            outcome.checks.append(check)
            kind = cross_kind(m.backend, check.key.device_class)
            if kind is not None and capture is not None:
                cross = check_cross_reference(store, kind=kind, backend=m.backend, frame=frame, capture=capture,
                                              tolerance=m.case.tolerance, own=check, artifacts_dir=artifacts_dir)
                outcome.cross[frame] = cross
                if cross["status"] == "failed":
                    outcome.failures.append(cross["message"])
                elif check.status == "missing" and kind == CROSS_ARCH:
                    # Not a pass: the frame still fails for want of its own golden; this says how far it is.
                    check.message += f"\n  meanwhile, {cross['status']}: {cross['message']}"
        except ToleranceError as exc:
            raise SceneError(m.case.source, str(exc), scene=m.case.id, key=f"tolerance.{exc.key}") from exc
        except GoldenError as exc:  # the golden's place itself is unusable (its folder links out of the store)
            key = make_key(m.backend, golden_set(m.backend, device_class, arch), m.case.id, frame)
            outcome.checks.append(FrameCheck(key, "error", f"frame {frame}: {exc}"))
    return outcome


def _capture_problem(launch: LaunchOutcome | None, frame: int) -> str | None:
    """Why the launch has no usable capture of `frame` (a capture_invalid issue), or None."""
    if launch is None:
        return None
    return next((i.detail for i in launch.issues if i.kind == "capture_invalid" and i.frame == frame), None)
def _vacuous(store: GoldenStore, m: SceneMeasurement, device_class: str, arch: str | None, frame: int,
             capture: Path | None, siblings: Sequence[SceneCase],
             sibling_captures: Mapping[str, Mapping[int, Path]]) -> str | None:
    """Why the frame's capture is vacuous (golden/vacuous.py), or None. A sibling's capture from this process
    stands for it, else its golden in the device's own set; siblings whose ops differ only by overdraw of one
    op are not compared."""
    if capture is None:
        return None
    try:
        pixels = load_png(capture)
    except GoldenError:
        return None  # check_capture reports an unusable capture
    colour = vacuity.single_colour(pixels)
    if colour is not None:
        return vacuity.single_colour_message(frame, colour)
    digests: dict[str, str] = {}
    for sibling in siblings:
        if sibling.id == m.case.id or not vacuity.ops_differ_visibly(m.case.ops, sibling.ops, frame):
            continue
        path = sibling_captures.get(sibling.id, {}).get(frame)
        if path is None:
            golden = store.path_for(m.backend, golden_set(m.backend, device_class, arch), sibling.id, frame)
            path = golden if golden.is_file() else None
        if path is not None:
            try:
                digests[sibling.id] = pixel_digest(load_png(path))
            except GoldenError:
                continue
    same = vacuity.identical_siblings(pixel_digest(pixels), digests)
    return vacuity.identical_message(frame, same) if same else None


def written_goldens(scenes: Iterable[dict[str, Any]]) -> list[str]:
    """The goldens this session wrote, from run.json scene entries (their `correctness` frames)."""
    return [frame["written"] for scene in scenes for frame in (scene.get("correctness") or {}).get("frames", [])
            if frame.get("written")]


def device_arch(sections: dict[str, Any]) -> str | None:
    """The CPU architecture family in a device's run.json sections (what its runner reported)."""
    cpu = (sections.get("device") or {}).get("cpu") or {}
    family = cpu.get("family") if isinstance(cpu, dict) else None
    return family if isinstance(family, str) else None


def unused_goldens(settings: Settings, inventory: Inventory,
                   devices: dict[str, dict[str, Any]] | None = None) -> list[Path]:
    """Goldens under the selected devices' sets that no scene of the corpus captures any more. `devices`:
    the session's device sections (RunRecord.devices); a software device's set is known only once its
    runner reported its architecture, so one that was never probed is left out."""
    cases, _ = load_corpus(settings.scenes_dir)
    store = GoldenStore(settings.goldens_dir)
    sets: set[tuple[str, str]] = set()
    for name in settings.devices:
        spec = inventory.get(name)
        try:
            folder = golden_set(spec.backend, spec.device_class, device_arch((devices or {}).get(name) or {}))
        except GoldenError:
            continue
        if folder is not None:
            sets.add((spec.backend, folder))
    expected = [store.path_for(backend, folder, case.id, frame)
                for backend, folder in sets for case in cases for frame in case.capture]
    return store.unused(expected, within=sorted(sets))


def capture_launch(launches: list[LaunchOutcome]) -> LaunchOutcome | None:
    """The launch whose captures are judged: the first complete one, else the first with any capture."""
    for launch in launches:
        if launch.complete and launch.captures:
            return launch
    return next((launch for launch in launches if launch.captures), None)


def _nondeterministic_frames(launches: list[LaunchOutcome], frames: tuple[int, ...]) -> list[int]:
    """Frames whose decoded pixels differ between complete launches (docs/methodology.md §7, §9). A capture
    that cannot be decoded counts as differing from one that can (the frame check reports why)."""
    differing = []
    for frame in frames:
        digests = set()
        for launch in launches:
            if frame in launch.captures:
                try:
                    digests.add(pixel_digest(load_png(launch.captures[frame])))
                except GoldenError as exc:
                    digests.add(f"undecodable: {exc}")
        if len(digests) > 1:
            differing.append(frame)
    return differing


def _rel(path: str | Path | None, base: Path) -> str | None:
    """A path of run.json, relative to the results folder (`../../goldens/...` for a golden), so that a
    results folder moved or unpacked elsewhere beside its checkout still points at its files."""
    if path is None:
        return None
    try:
        return os.path.relpath(Path(path).absolute(), Path(base).absolute())
    except ValueError:  # another drive (Windows): no relative path exists
        return str(path)


def _rel_paths(paths: dict[str, Any], base: Path) -> dict[str, Any]:
    return {k: _rel(v, base) for k, v in paths.items()}


def _rel_record(record: dict[str, Any] | None, base: Path) -> dict[str, Any] | None:
    """A defect record or cross-reference entry with its golden and artifact paths relative to `base`."""
    if record is None:
        return None
    out = dict(record)
    if out.get("golden"):
        out["golden"] = _rel(out["golden"], base)
    if isinstance(out.get("artifacts"), dict):
        out["artifacts"] = _rel_paths(out["artifacts"], base)
    return out
