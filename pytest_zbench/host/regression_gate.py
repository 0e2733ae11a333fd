"""The regression gate of a perf test, and the run history every measured scene is recorded in.

Plain values in, plain values out (docs/regression.md): the plugin turns a GateResult into the test's
outcome, a warning, JUnit properties and the `regression` section of the scene's run.json entry.

The baseline is one of:
* history: the newest comparable runs in the history database (same device, backend, scene, params, mode,
  gpu source), the current run excluded;
* file: the per-launch summaries of the same device and scene in an earlier run.json (regression/baseline.py);
* A/B: the device's own runner, launched interleaved with the B runner in this session.
"""

from __future__ import annotations

import dataclasses
import math
import shlex
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from ..errors import ZbenchError
from ..regression.ab import judge_ab
from ..regression.baseline import BaselineFileError, judge_against_history, judge_against_run_file, read_run_file
from ..regression.config import scene_metrics
from ..regression.gate import GateConfig, SceneVerdict, Verdict, launches_to_decide
from ..regression.history import History, HistoryError, RunInfo, SceneRecord
from ..settings import Settings
from .environment import environment
from .measure import SceneMeasurement, launch_samples
from .run_record import RunRecord


class HistorySection(TypedDict):
    """The `history` section of a run.json scene entry: where the scene was recorded, or why it was not."""

    path: str
    run_id: str
    kind: str
    recorded: bool
    reason: str | None


class RegressionWarning(UserWarning):
    """A perf test passed without a decided verdict (inconclusive, or a fingerprint changed), or its scene
    could not be recorded in the history."""


@dataclass(frozen=True)
class GateResult:
    """verdict: same | regressed | improved | inconclusive (the gate's), or no_baseline | not_judged.

    broken: the gate could not run although it was asked to (history unreadable, B side failed): the test
    fails with the message."""

    verdict: str
    source: str  # history | file | ab | calibration
    baseline: str
    message: str
    scene_verdict: SceneVerdict | None = None
    fingerprint_changes: tuple[str, ...] = ()
    broken: bool = False

    @property
    def failed(self) -> bool:
        return self.broken or self.verdict == "regressed"

    @property
    def metrics(self) -> tuple[Verdict, ...]:
        return self.scene_verdict.verdicts if self.scene_verdict else ()

    def more_launches(self, cap: int = GateConfig.max_suggested_launches) -> tuple[int, int | None]:
        """(launches per side now, per side needed) for an inconclusive verdict; None = `cap` or more."""
        return launches_to_decide(((v.n_baseline, v.n_candidate, v.more_launches) for v in self.metrics
                                   if v.verdict == "inconclusive"), cap)

    def warning(self) -> str | None:
        """The note a passing test leaves: inconclusive (with the launches that would decide it),
        no baseline, or a changed environment fingerprint."""
        notes = []
        if self.verdict == "inconclusive":
            now, needed = self.more_launches()
            advice = (f"about {needed} launches per side (--zbench-runs={needed}) would decide it" if needed
                      else f"at this effect and spread {GateConfig.max_suggested_launches} or more launches per "
                           "side would be needed to decide it")
            notes.append(f"regression verdict inconclusive with {now} launches per side; {advice}. "
                         f"Baseline: {self.baseline}")
        elif self.verdict == "no_baseline":
            notes.append(f"not gated: {self.baseline}")
        notes += self.fingerprint_changes
        return "; ".join(notes) or None

    def to_json(self) -> dict[str, Any]:
        """The `regression` section of a run.json scene entry."""
        skipped = self.scene_verdict.skipped if self.scene_verdict else ()
        return {
            "verdict": self.verdict,
            "source": self.source,
            "baseline": self.baseline,
            "message": self.message,
            "metrics": [dict(_finite(dataclasses.asdict(v)), message=v.message()) for v in self.metrics],
            "not_judged": [{"metric": metric, "reason": why} for metric, why in skipped],
            "fingerprint_changes": list(self.fingerprint_changes),
        }

    def junit_properties(self) -> list[tuple[str, object]]:
        props: list[tuple[str, object]] = [("regression_verdict", self.verdict), ("regression_baseline", self.baseline)]
        for v in self.metrics:
            name = v.metric.replace(".", "_")
            props.append((f"regression_{name}", v.verdict))
            if v.effect is not None:
                props.append((f"regression_effect_{name}", round(v.effect, 4)))
            if v.p is not None and math.isfinite(v.p):
                props.append((f"regression_p_{name}", round(v.p, 6)))
        return props


def comparison_params(m: SceneMeasurement) -> dict[str, Any]:
    """What must be equal for two measurements of a scene to be compared, beyond device, backend, mode and
    gpu source: the scene's params, the surface, the frame counts and the seed."""
    assert m.job is not None
    return {"scene": dict(m.case.params), "surface": [m.job.scene["width"], m.job.scene["height"]],
            "frames": m.job.frames, "warmup": m.job.warmup_frames, "seed": m.job.seed}


def scene_record(m: SceneMeasurement) -> SceneRecord:
    """The history's copy of a measured scene: per-launch summaries and the raw samples behind them."""
    assert m.job is not None and m.summary is not None
    samples = [s for s in (launch_samples(l.frames, m.job.mode, partial=l.partial) for l in m.launches)
               if s is not None]  # one per summary: add_launch summarised exactly these
    return SceneRecord.from_summary(m.case.id, comparison_params(m), m.summary, samples)


class RegressionGate:
    """Records measured scenes in the history and judges them against the configured baseline."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.config = GateConfig(threshold=settings.threshold, metrics=settings.gate_metrics)
        self._history: History | None = None
        self._history_error: HistoryError | None = None
        self._baseline_file: dict[str, Any] | None = None

    @property
    def history(self) -> History:
        if self._history is None:
            # A history that could not be opened (after its retries) is not tried again for every scene.
            if self._history_error is not None:
                raise self._history_error
            try:
                self._history = History(self.settings.history)
            except HistoryError as exc:
                self._history_error = exc
                raise
        return self._history

    def close(self) -> None:
        if self._history is not None:
            self._history.close()
            self._history = None

    @property
    def kind(self) -> str:
        return "calibration" if self.settings.calibrate else "ab" if self.settings.ab else "run"

    def run_info(self, record: RunRecord, device: str, backend: str, *, b_runner: Sequence[str] = ()) -> RunInfo:
        """This session's run on `device`. One run id per device (`<run_id>-<device>`): the history keeps
        one device per run, and xdist workers measuring that device share it. The B side of an A/B
        session is a run of its own (`-b`), its build named by the B runner's argv."""
        build = "B: " + shlex.join(b_runner) if b_runner else record.app.get("build_hash") or ""
        return RunInfo(device, backend, build_hash=build, dirty=None if b_runner else record.app.get("dirty"),
                       environment=environment(record.devices.get(device, {})),
                       run_id=f"{record.run_id}-{device}{'-b' if b_runner else ''}",
                       started_utc=record.started_utc, kind=self.kind)

    def record(self, record: RunRecord, m: SceneMeasurement) -> HistorySection | None:
        """Store the measured scene (and in A/B mode its B side) in the history; the entry's `history`
        section. Scenes with a partial launch are not stored: a launch cut short by a crash or the deadline
        is not a sample of the build's speed, and as baseline material it would hide the next regression.
        Their samples stay in the CSV and run.json."""
        if m.skipped or m.summary is None:
            return None
        run = self.run_info(record, m.device, m.backend)
        section: HistorySection = {"path": str(self.settings.history), "run_id": run.run_id, "kind": run.kind,
                                   "recorded": False, "reason": None}
        sides = [(run, m)]
        if m.ab is not None and m.ab.b.summary is not None:
            sides.append((self.run_info(record, m.device, m.backend, b_runner=m.ab.runner), m.ab.b))
        partial = [side for side in sides if side[1].partial]
        if partial:
            section["reason"] = ("not recorded: a launch was partial, and partial launches are never baseline "
                                 "material (the samples are kept in the CSV and run.json)")
            return section
        try:
            for info, side in sides:
                self.history.record(info, [scene_record(side)])
        except ZbenchError as exc:
            section["reason"] = f"not recorded: {exc}"
            warnings.warn(RegressionWarning(f"scene {m.case.id} on device {m.device}: {section['reason']}; "
                                            f"its samples are kept in {m.samples_file} and run.json"), stacklevel=2)
            return section
        section["recorded"] = True
        return section

    def config_for(self, m: SceneMeasurement) -> GateConfig | None:
        """The gate's configuration for this scene: the configured metrics that apply to it (an adaptive scene
        is judged on its score, regression/config.scene_metrics); None when none does."""
        metrics = scene_metrics(self.config.metrics, adaptive=m.case.adaptive)
        return dataclasses.replace(self.config, metrics=metrics) if metrics else None

    def judge(self, record: RunRecord, m: SceneMeasurement) -> GateResult | None:
        """The verdict of a measured (not skipped, not partial) scene; None when gating is off."""
        if self.settings.calibrate:
            return GateResult("not_judged", "calibration", "calibration run",
                              f"calibration run: launches recorded as A/A data in {self.settings.history}; "
                              "nothing gated")
        config = self.config_for(m)
        if config is None:
            return None
        if m.ab is not None:
            return self._judge_ab(m, config)
        if self.settings.baseline == "none":
            return None
        if self.settings.baseline == "file":
            return self._judge_file(m, config)
        return self._judge_history(record, m, config)

    def _judge_history(self, record: RunRecord, m: SceneMeasurement, config: GateConfig) -> GateResult:
        run = self.run_info(record, m.device, m.backend)
        key = scene_record(m).key(run)
        try:
            result = judge_against_history(self.history, key, m.summaries, config, exclude_run=run.run_id,
                                           environment=run.environment)
        except ZbenchError as exc:
            return GateResult("not_judged", "history", str(self.settings.history),
                              f"the history could not be read: {exc}; fix it, or pass "
                              "--zbench-baseline=none to run without a gate", broken=True)
        changes = tuple(c.describe() for c in result.window.changes)
        if result.verdict is None:
            description = (f"{result.window.describe()} in {self.settings.history} yet; this run is recorded "
                           "and becomes the baseline of the next")
            return GateResult("no_baseline", "history", description, f"no baseline: {description}",
                              fingerprint_changes=changes)
        return _from_scene_verdict(result.verdict, "history", result.window.describe(), changes)

    def _judge_file(self, m: SceneMeasurement, config: GateConfig) -> GateResult:
        path = self.settings.baseline_file
        assert path is not None
        if self._baseline_file is None:
            try:
                self._baseline_file = read_run_file(path)
            except BaselineFileError as exc:
                return GateResult("not_judged", "file", str(path), str(exc), broken=True)
        ours = {"backend": m.backend, "mode": m.job.mode if m.job else None, "params": dict(m.case.params),
                "gpu_source": m.summary.gpu_source if m.summary else None}
        result = judge_against_run_file(self._baseline_file, path, m.case.id, m.device, ours, m.summaries,
                                        config)
        if result.verdict is None:
            return GateResult("no_baseline" if result.comparable else "not_judged", "file", result.description,
                              result.message)
        return _from_scene_verdict(result.verdict, "file", result.description, ())

    def _judge_ab(self, m: SceneMeasurement, config: GateConfig) -> GateResult:
        assert m.ab is not None
        b = m.ab.b
        a_name = "A (" + shlex.join(m.ab.a_runner) + ")"
        b_name = "B (" + shlex.join(m.ab.runner) + ")"
        if b.partial or b.summary is None:
            issues = "; ".join(f"[{i.kind}] {i.detail}" for i in b.issues[:4])
            return GateResult("not_judged", "ab", a_name,
                              f"the B runner's launches were not all complete ({len(b.complete_launches)} of "
                              f"{len(b.launches)}): {issues}; samples kept in {b.samples_file}", broken=True)
        verdict = judge_ab(m.summaries, b.summaries, config, a_name=a_name, b_name=b_name, device=m.device)
        return _from_scene_verdict(verdict, "ab", verdict.verdicts[0].baseline if verdict.verdicts else a_name, ())


def _from_scene_verdict(verdict: SceneVerdict, source: str, baseline: str, changes: tuple[str, ...]) -> GateResult:
    return GateResult(verdict.verdict, source, baseline, verdict.message(), verdict, changes)


def _finite(value: Any) -> Any:
    """JSON-safe: NaN and infinities become None (run.json is written with allow_nan=False)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
