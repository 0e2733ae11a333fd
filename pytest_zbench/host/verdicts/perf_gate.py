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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypedDict

import numpy as np

from ...errors import ZbenchError
from ...percentiles import PERCENTILES
from ...protocol import dropped_cells
from ...regression import contention
from ...regression.attribution import Attribution, Rejudge, explain
from ...regression.baseline import (
    BaselineFileError,
    DeviceSessions,
    calibration_sessions,
    judge_against_history,
    judge_against_run_file,
    read_device_sessions,
    read_run_file,
    run_file_frames,
    session_of,
)
from ...regression.changepoints import change_points
from ...regression.conditions import ConditionChange, build_note, conditions_changed, throttle_note
from ...regression.config import (
    AB_GATING_METRICS,
    DEFAULT_AB_THRESHOLD,
    DEFAULT_THRESHOLD,
    GATING_METRICS,
    scene_metrics,
)
from ...regression.gate import (
    BaselineSession,
    GateConfig,
    SceneVerdict,
    SessionPool,
    Verdict,
    launch_values,
    launches_to_decide,
)
from ...regression.history import (
    HistoricRun,
    History,
    HistoryError,
    RunInfo,
    SceneKey,
    SceneRecord,
    environment_fingerprint,
)
from ...regression.interleaved_ab import judge_ab
from ...regression.paired import PAIRED_IN_SESSIONS
from ...regression.sequential import judge_look
from ...regression.verdict_words import GateVerdict
from ...settings import Settings
from ..devices.environment import environment
from ..measure.launch_flags import flagged_launches
from ..measure.results import SceneMeasurement

# The reference runner's argv: its build is the harness checkout, so its identity needs no argv.
REFERENCE_RUNNER_ARGV = ("python", "-m", "pytest_zbench.runner")

# The report's history chart: the newest sessions of a scene it shows (its change points are found in these).
HISTORY_SERIES_SESSIONS = 30
# Significant digits a value keeps in run.json's distributions and history series: launches differ by far more,
# and 4 digits keep a scene's values small.
DIGITS = 4


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
    """verdict: the gate's Outcome, or no_baseline | not_judged (regression/verdict_words.py).

    broken: the gate could not run although it was asked to (history unreadable, B side failed): the test
    fails with the message."""

    verdict: GateVerdict
    source: str  # history | file | ab | calibration
    baseline: str
    message: str
    scene_verdict: SceneVerdict | None = None
    fingerprint_changes: tuple[str, ...] = ()
    broken: bool = False
    conditions_changed: tuple[ConditionChange, ...] = ()
    same_build: bool = False
    settings: dict[str, Any] | None = None  # the gate settings this scene was judged with, and where from
    distributions: dict[str, Any] | None = None  # the per-launch values judged (run.json, `distributions`)
    history_series: dict[str, Any] | None = None  # the scene's recent sessions (`history_series`)
    attribution: Attribution | None = None  # why a regressed or improved scene moved (`attribution`)
    baseline_frames: str | None = None  # a run.json baseline's frames CSV, for the diff trace

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
        """The note a passing test leaves: inconclusive (with what would decide it), no baseline, a changed
        environment fingerprint or changed conditions."""
        notes = []
        if self.verdict == "inconclusive":
            undecided = [v for v in self.metrics if v.verdict == "inconclusive"]
            first = undecided[0] if undecided else None
            launches = (f"{first.n_candidate} launches vs {first.n_sessions} baseline session(s)"
                        if first is not None and first.mode == "sessions" else
                        f"{first.n_candidate} launches per side" if first is not None else "these launches")
            advice = " ".join(dict.fromkeys(v.advice for v in undecided if v.advice))
            notes.append(f"regression verdict inconclusive with {launches}"
                         + (f" ({', '.join(v.metric for v in undecided)})" if undecided else "")
                         + (f". {advice}" if advice else "") + f" Baseline: {self.baseline}")
        elif self.verdict == "no_baseline":
            notes.append(f"not gated: {self.baseline}")
        notes += self.fingerprint_changes
        if self.conditions_changed:
            notes.append("conditions changed: " + "; ".join(c.describe() for c in self.conditions_changed))
        return "; ".join(notes) or None

    def to_json(self) -> dict[str, Any]:
        """The `regression` section of a run.json scene entry."""
        skipped = self.scene_verdict.skipped if self.scene_verdict else ()
        return {
            "verdict": self.verdict,
            "source": self.source,
            "baseline": self.baseline,
            "message": self.message,
            "metrics": [dict(_finite(dataclasses.asdict(v)), bar=v.bar, message=v.message()) for v in self.metrics],
            "not_judged": [{"metric": metric, "reason": why} for metric, why in skipped],
            "fingerprint_changes": list(self.fingerprint_changes),
            "conditions_changed": [c.to_json() for c in self.conditions_changed],
            "same_build": self.same_build,
            "notes": list(self.scene_verdict.notes) if self.scene_verdict else [],
            "settings": self.settings,
            "distributions": self.distributions,
            "history_series": self.history_series,
            "attribution": self.attribution.to_json() if self.attribution else None,
            "baseline_samples_file": self.baseline_frames,
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
        if self.attribution is not None:
            props.append(("regression_why", self.attribution.line()))
            props.append(("regression_moved", ",".join(m.name for m in self.attribution.moved)))
        return props


def comparison_params(m: SceneMeasurement) -> dict[str, Any]:
    """What must be equal for two measurements of a scene to be compared, beyond device, backend, mode and
    gpu source: the scene's params, the surface, the frame counts and the job's random seed."""
    assert m.job is not None
    return {"scene": dict(m.case.params), "surface": [m.job.scene["width"], m.job.scene["height"]],
            "frames": m.job.frames, "warmup": m.job.warmup_frames, "seed": m.job.seed}


class RunFacts(Protocol):
    """What the gate reads of the run (host/run_record.py RunRecord has it): its identity, its build and its
    devices' sections. A protocol, so that a verdict takes these facts and not the run record's module."""

    run_id: str
    started_utc: str
    app: dict[str, Any]
    devices: dict[str, dict[str, Any]]


def gpu_valid(record: RunFacts, device: str) -> bool | None:
    """Whether the device's GPU time source passed the timer check (None: it has none)."""
    check = (record.devices.get(device) or {}).get("gpu", {}).get("timer_check")
    return None if check is None else bool(check.get("valid"))


def _untrusted_gpu(launches: list[dict[str, Any]], valid: bool | None) -> list[dict[str, Any]]:
    """Launch dicts marked gpu_valid false when the timer check failed: their gpu_ms is never gated."""
    return [dict(launch, gpu_valid=False) for launch in launches] if valid is False else launches


def scene_record(m: SceneMeasurement, valid: bool | None = None) -> SceneRecord:
    """The history's copy of a measured scene: per-launch summaries and the raw samples behind them."""
    assert m.job is not None and m.summary is not None
    record = SceneRecord.from_summary(m.case.id, comparison_params(m), m.summary, m.samples)
    # Each launch is stored with the conditions around it, so a later verdict can name what changed.
    return dataclasses.replace(record, launches=_untrusted_gpu(flagged_launches(m, list(record.launches)), valid))


def scene_key(m: SceneMeasurement, run: RunInfo) -> SceneKey:
    """The history's key of a measured scene, as scene_key(m, run) gives it, without re-deriving every
    launch's samples from its frames: the key needs only the scene, its parameters and its summary."""
    assert m.summary is not None
    return SceneRecord.from_summary(m.case.id, comparison_params(m), m.summary).key(run)


class RegressionGate:
    """Records measured scenes in the history and judges them against the configured baseline."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._history: History | None = None
        self._history_error: HistoryError | None = None
        self._baseline_file: dict[str, Any] | None = None
        self._device_sessions: dict[tuple[str, str, str, str | None], DeviceSessions] = {}

    def config(self, m: SceneMeasurement, *, interleaved: bool) -> tuple[GateConfig, dict[str, Any]] | None:
        """The gate settings of one scene: the scene file's `gate:` (threshold, metrics) over the command line
        over the mode's default (A/B: 5 %, against sessions: 15 %); and run.json's record of them. Of those
        metrics the ones that apply to the scene are judged (an adaptive scene is judged on its score,
        regression/config.scene_metrics); None when none does: the scene is not gated."""
        override = m.case.gate
        default = DEFAULT_AB_THRESHOLD if interleaved else DEFAULT_THRESHOLD
        if override is not None and override.threshold is not None:
            threshold, threshold_from = override.threshold, "scene file"
        elif self.settings.threshold is not None:
            threshold, threshold_from = self.settings.threshold, "command line"
        else:
            threshold, threshold_from = default, "default (A/B)" if interleaved else "default"
        if override is not None and override.metrics is not None:
            metrics, metrics_from = override.metrics, "scene file"
        elif self.settings.gate_metrics is not None:
            metrics, metrics_from = self.settings.gate_metrics, "command line"
        else:
            metrics = AB_GATING_METRICS if interleaved else GATING_METRICS
            metrics_from = "default (A/B)" if interleaved else "default"
        applied = scene_metrics(tuple(metrics), adaptive=m.case.adaptive)
        if not applied:
            return None
        if not set(applied) & set(metrics):
            metrics_from = "default (adaptive scene)"
        metrics = applied
        config = GateConfig(threshold=threshold, metrics=metrics, between_floor=self.settings.between_floor)
        return config, {"threshold": threshold, "threshold_from": threshold_from, "metrics": list(metrics),
                        "metrics_from": metrics_from, "alpha": config.alpha, "confidence": config.confidence,
                        "resamples": config.resamples, "seed": config.seed, "between_floor": config.between_floor,
                        "mode": "interleaved A/B, launches" if interleaved else "sessions (two levels)"}

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

    def run_info(self, record: RunFacts, device: str, backend: str, *, b_runner: Sequence[str] = ()) -> RunInfo:
        """This session's run on `device`. One run id per device (`<run_id>-<device>`): the history keeps
        one device per run, and xdist workers measuring that device share it. The B side of an A/B
        session is a run of its own (`-b`), its build named by the B runner's argv."""
        build, dirty = runner_identity(record, device)
        if b_runner:
            build, dirty = "B: " + shlex.join(b_runner), None
        return RunInfo(device, backend, build_hash=build, dirty=dirty,
                       environment=environment(record.devices.get(device, {})),
                       run_id=f"{record.run_id}-{device}{'-b' if b_runner else ''}",
                       started_utc=record.started_utc, kind=self.kind)

    def record(self, record: RunFacts, m: SceneMeasurement) -> HistorySection | None:
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
        valid = gpu_valid(record, m.device)
        try:
            for info, side in sides:
                self.history.record(info, [scene_record(side, valid)])
        except ZbenchError as exc:
            section["reason"] = f"not recorded: {exc}"
            warnings.warn(RegressionWarning(f"scene {m.case.id} on device {m.device}: {section['reason']}; "
                                            f"its samples are kept in {m.samples_file} and run.json"), stacklevel=2)
            return section
        section["recorded"] = True
        return section

    def judge(self, record: RunFacts, m: SceneMeasurement) -> GateResult | None:
        """The verdict of a measured (not skipped, not partial) scene; None when gating is off."""
        if self.settings.calibrate:
            return GateResult("not_judged", "calibration", "calibration run",
                              f"calibration run: launches recorded as A/A data in {self.settings.history}; "
                              "nothing gated")
        if m.ab is None and self.settings.baseline == "none":
            return None
        gated = self.config(m, interleaved=m.ab is not None)
        if gated is None:
            return None
        config, settings = gated
        if m.ab is not None:
            result = self._judge_ab(record, m, config, settings)
        elif self.settings.baseline == "file":
            result = self._judge_file(record, m, config, settings)
        else:
            result = self._judge_history(record, m, config, settings)
            self._keep_verdict(record, m, result)
        return dataclasses.replace(result, history_series=self._history_series(record, m, config.metrics[0]))

    def _keep_verdict(self, record: RunFacts, m: SceneMeasurement, result: GateResult) -> None:
        """The history verdict kept with the recorded scene: a session judged a change is no baseline of the
        next until accepted (regression/history.py `comparable`). Losing it loses no measurement: warned."""
        if result.broken or result.verdict in ("no_baseline", "not_judged"):
            return
        run = self.run_info(record, m.device, m.backend)
        try:
            self.history.mark_verdict(run.run_id, scene_key(m, run), result.verdict)
        except ZbenchError as exc:
            warnings.warn(RegressionWarning(f"scene {m.case.id} on device {m.device}: its verdict was not kept in "
                                            f"the history ({exc}): a later session may take this one as its "
                                            "baseline"), stacklevel=2)

    def _history_series(self, record: RunFacts, m: SceneMeasurement, metric: str) -> dict[str, Any] | None:
        """run.json's `regression.history_series` of the scene's newest runs; None when the gate has not opened
        the history (it is not opened for a chart) or cannot read it: the report then says the chart is
        missing."""
        if self._history is None:
            return None
        run = self.run_info(record, m.device, m.backend)
        try:
            runs = self._history.runs_of(scene_key(m, run), limit=HISTORY_SERIES_SESSIONS)
        except ZbenchError:
            return None
        return history_series(runs, metric, candidate_run=run.run_id)

    def _device_pool(self, key: SceneKey, exclude_run: str) -> DeviceSessions:
        """The other scenes' recent sessions on this device, read once per session and device."""
        cache = (key.device, key.backend, key.mode, key.gpu_source)
        if cache not in self._device_sessions:
            self._device_sessions[cache] = read_device_sessions(self.history, key, exclude_run=exclude_run)
        return self._device_sessions[cache]

    def _judge_history(self, record: RunFacts, m: SceneMeasurement, config: GateConfig,
                       settings: dict[str, Any]) -> GateResult:
        run = self.run_info(record, m.device, m.backend)
        key = scene_key(m, run)
        candidate = self._candidate(m, gpu_valid(record, m.device))
        try:
            result = judge_against_history(self.history, key, candidate, config, exclude_run=run.run_id,
                                           environment=run.environment,
                                           device_sessions=self._device_pool(key, run.run_id))
        except ZbenchError as exc:
            return GateResult("not_judged", "history", str(self.settings.history),
                              f"the history could not be read: {exc}; fix it, or pass "
                              "--zbench-baseline=none to run without a gate", broken=True, settings=settings)
        changes = tuple(c.describe() for c in result.window.changes)
        if result.verdict is None:
            description = (f"{result.window.describe()} in {self.settings.history} yet; this run is recorded "
                           "and becomes the baseline of the next")
            return GateResult("no_baseline", "history", description, f"no baseline: {description}",
                              fingerprint_changes=changes, settings=settings)
        sessions = [session_of(run) for run in reversed(result.window.runs)]  # oldest first, like the series

        def rejudge(metrics: tuple[str, ...]) -> SceneVerdict:
            """The same sessions judged on other metrics: the busy-host guard's on-CPU time, the attribution's
            measurements (docs/regression.md)."""
            return judge_against_history(self.history, key, candidate, dataclasses.replace(config, metrics=metrics),
                                         exclude_run=run.run_id, environment=run.environment,
                                         device_sessions=self._device_pool(key, run.run_id)).verdict or SceneVerdict(())

        twins = contention.twins_to_judge(result.verdict)
        on_cpu = rejudge(twins) if twins else None
        return _with_context(result.verdict, "history", result.window.describe(), changes, settings,
                             self.run_info(record, m.device, m.backend).build_hash,
                             [r.build_hash for r in result.window.runs],
                             sessions, candidate, on_cpu, rejudge)

    @staticmethod
    def _candidate(m: SceneMeasurement, valid: bool | None) -> list[dict[str, Any]]:
        """The candidate's launches as the gate sees them: summaries with the conditions around each, gpu_ms
        marked untrusted when the device's timer check failed."""
        return _untrusted_gpu(flagged_launches(m, [summary.to_dict() for summary in m.summaries]), valid)

    def _calibration_pool(self, record: RunFacts, m: SceneMeasurement) -> list[SessionPool]:
        """A/A calibration sessions in the history for this scene (a run.json baseline has one session: only
        a calibration can give it a between-session spread)."""
        run = self.run_info(record, m.device, m.backend)
        key = scene_key(m, run)
        try:
            aa = calibration_sessions(self.history, key, environment_fingerprint(run.environment))
        except ZbenchError:
            return []
        if len(aa) < 2:
            return []
        return [SessionPool(f"{len(aa)} A/A calibration sessions (build {aa[-1].build_hash[:10]})",
                            [r.launches for r in aa])]

    def _judge_file(self, record: RunFacts, m: SceneMeasurement, config: GateConfig,
                    settings: dict[str, Any]) -> GateResult:
        path = self.settings.baseline_file
        assert path is not None
        if self._baseline_file is None:
            try:
                self._baseline_file = read_run_file(path)
            except BaselineFileError as exc:
                return GateResult("not_judged", "file", str(path), str(exc), broken=True)
        document = self._baseline_file
        ours = m.measured_alike()
        candidate = self._candidate(m, gpu_valid(record, m.device))
        result = judge_against_run_file(document, path, m.case.id, m.device, ours, candidate, config,
                                        pool=self._calibration_pool(record, m))
        if result.verdict is None:
            return GateResult("no_baseline" if result.comparable else "not_judged", "file", result.description,
                              result.message, settings=settings)
        session = BaselineSession(list(result.launches), str(document.get("run_id") or ""), result.build)

        def rejudge(metrics: tuple[str, ...]) -> SceneVerdict:
            """The same baseline judged on other metrics (the busy-host guard's, the attribution's)."""
            return judge_against_run_file(document, path, m.case.id, m.device, ours, candidate,
                                          dataclasses.replace(config, metrics=metrics),
                                          pool=self._calibration_pool(record, m)).verdict or SceneVerdict(())

        twins = contention.twins_to_judge(result.verdict)
        on_cpu = rejudge(twins) if twins else None
        judged = _with_context(result.verdict, "file", result.description, (), settings,
                               record.app.get("build_hash") or "", [result.build] if result.build else [],
                               [session], candidate, on_cpu, rejudge)
        frames = run_file_frames(document, path, m.case.id, m.device)
        return dataclasses.replace(judged, baseline_frames=None if frames is None else str(frames))

    def ab_look(self, record: RunFacts, m: SceneMeasurement, level: float) -> SceneVerdict | None:
        """One look of the sequential gate at an A/B scene's launches so far, at the look's nominal level;
        None when the scene is not gated."""
        gated = self.config(m, interleaved=True)
        if gated is None or m.ab is None:
            return None
        valid = gpu_valid(record, m.device)
        return judge_look(self._candidate(m, valid), self._candidate(m.ab.b, valid), gated[0], level,
                          paired=_paired_rounds(m) and m.sequential is not None and m.sequential.paired)

    def _judge_ab(self, record: RunFacts, m: SceneMeasurement, config: GateConfig,
                  settings: dict[str, Any]) -> GateResult:
        assert m.ab is not None
        b = m.ab.b
        a_name = "A (" + shlex.join(m.ab.a_runner) + ")"
        b_name = "B (" + shlex.join(m.ab.runner) + ")"
        if b.partial or b.summary is None:
            issues = "; ".join(f"[{i.kind}] {i.detail}" for i in b.issues[:4])
            return GateResult("not_judged", "ab", a_name,
                              f"the B runner's launches were not all complete ({len(b.complete_launches)} of "
                              f"{len(b.launches)}): {issues}; samples kept in {b.samples_file}", broken=True)
        valid = gpu_valid(record, m.device)
        a_launches = self._candidate(m, valid)
        b_launches = self._candidate(b, valid)
        level = m.sequential.final_level if m.sequential is not None else None
        paired = _paired_rounds(m) and (m.sequential is None or m.sequential.paired)

        def judged(cfg: GateConfig) -> SceneVerdict:
            """The A/B verdict on these launches, at the sequential gate's last look when it ran one (its level;
            regression/sequential.py), so the attribution rejudges with the gate that decided the scene."""
            if level is None:
                return judge_ab(a_launches, b_launches, cfg, a_name=a_name, b_name=b_name, device=m.device,
                                paired=paired)
            return judge_look(a_launches, b_launches, cfg, level, baseline_description=(
                f"{a_name}, {len(a_launches)} launches interleaved with {len(b_launches)} of {b_name} on {m.device}"),
                paired=paired)

        def rejudge(metrics: tuple[str, ...]) -> SceneVerdict:
            return judged(dataclasses.replace(config, metrics=metrics))

        verdict = judged(config)
        if m.sequential is not None and level is not None:
            sequence = m.sequential
            verdict = verdict.with_notes(
                f"sequential gate: look {len(sequence.looks)} at level {level:.3g} (alpha {sequence.alpha:g}, "
                f"{sequence.alpha_per_direction:g} per direction, spent by launches per side / "
                f"{sequence.max_launches}), stopped: {sequence.stopped}")
        return _with_context(verdict, "ab", verdict.verdicts[0].baseline if verdict.verdicts else a_name, (),
                             settings, "", [], [BaselineSession(a_launches, "A")], b_launches, rejudge=rejudge,
                             dropped=(_dropped(m), _dropped(b)))


def _paired_rounds(m: SceneMeasurement) -> bool:
    """Whether an A/B scene's launches pair up by round: every launch of both sides summarised, so the i-th
    summary of A and the i-th of B ran adjacently in one round (ABBA). A failed launch breaks the pairing: the
    scene is then judged all A launches against all B launches (docs/regression.md, "Paired rounds")."""
    if not PAIRED_IN_SESSIONS or m.ab is None:
        return False
    b = m.ab.b
    return (len(m.summaries) == len(m.launches) and len(b.summaries) == len(b.launches)
            and len(m.launches) == m.ab.order.count("A") and len(b.launches) == m.ab.order.count("B"))


def runner_identity(record: RunFacts, device: str) -> tuple[str, bool | None]:
    """The build a device's runs are recorded under (the history's build_hash) and whether it was dirty: the
    engine build the device's runner reported in its probe, so that two runners built from different engine
    commits are two builds; else the session's app.build_hash (ZBENCH_BUILD_HASH or the harness checkout) with
    the runner's argv from devices.yaml when that is not the default reference runner, so that "same build" is
    claimed only when the runner is the same too (docs/native-runner.md, "Build identity")."""
    runner = record.devices.get(device, {}).get("gpu", {}).get("runner") or {}
    reported = runner.get("build")
    if isinstance(reported, str) and reported:
        builds = record.app.get("runner_builds") or {}
        return reported, (builds.get(device) or {}).get("dirty")
    build = record.app.get("build_hash") or ""
    argv = runner.get("argv")
    if build and isinstance(argv, list) and argv and argv != list(REFERENCE_RUNNER_ARGV):
        build = f"{build} runner {shlex.join(str(a) for a in argv)}"
    return build, record.app.get("dirty")


def _dropped(m: SceneMeasurement) -> dict[str, int]:
    """frames.csv column -> cells dropped as no number over the measurement's launches (protocol.dropped_cells)."""
    counts: dict[str, int] = {}
    for launch in m.launches:
        for column, n in dropped_cells(launch.issues).items():
            counts[column] = counts.get(column, 0) + n
    return counts


def _with_context(verdict: SceneVerdict, source: str, baseline: str, changes: tuple[str, ...],
                  settings: dict[str, Any], candidate_build: str, baseline_builds: Sequence[str],
                  baseline_sessions: Sequence[BaselineSession], candidate_launches: Sequence[Any],
                  on_cpu: SceneVerdict | None = None, rejudge: Rejudge | None = None,
                  dropped: tuple[Mapping[str, int], Mapping[str, int]] = ({}, {})) -> GateResult:
    """The verdict with what else changed named in its message: the same build, conditions that differ between
    the candidate's launches and the baseline's, launches measured while throttled; and the values judged. A
    regressed or improved scene's message says first which measurements moved (`rejudge`: the same gate on
    other metrics; regression/attribution.py)."""
    baseline_launches = [launch for session in baseline_sessions for launch in session.launches]
    conditions = tuple(conditions_changed(baseline_launches, candidate_launches))
    if source != "ab":  # interleaved launches share the host's load; sessions apart do not
        verdict = contention.guard(verdict, baseline_launches, candidate_launches, on_cpu)
    same = build_note(candidate_build, baseline_builds)
    notes = [same, throttle_note(baseline_launches, candidate_launches)]
    if conditions:
        notes.append("conditions changed between the baseline and the candidate: "
                     + "; ".join(c.describe() for c in conditions))
    why = (explain(baseline_launches, candidate_launches, rejudge, dropped=dropped)
           if rejudge is not None and verdict.verdict in ("regressed", "improved") else None)
    if why is not None:  # named first, right under the scene's verdict
        verdict = dataclasses.replace(verdict, notes=(why.line(), *verdict.notes))
    verdict = verdict.with_notes(*notes)
    return GateResult(verdict.verdict, source, baseline, verdict.message(), verdict, changes,
                      conditions_changed=conditions, same_build=bool(same), settings=settings,
                      distributions=distributions(verdict, baseline_sessions, candidate_launches), attribution=why)


def history_series(runs: Sequence[HistoricRun], metric: str, *, candidate_run: str) -> dict[str, Any]:
    """run.json's `regression.history_series`: runs of a scene, oldest first (this session's among them once
    recorded, marked `candidate`), each the median of `metric` over its launches, and the change points `zbench
    history` finds in them."""
    values = [r.median(metric) for r in runs]
    return {"metric": metric,
            "sessions": [{"run_id": r.run_id, "build": r.build_hash, "started_utc": r.started_utc,
                          "value": None if value is None else _rounded(value), "candidate": r.run_id == candidate_run}
                         for r, value in zip(runs, values)],
            "change_points": [{"index": c.index, "magnitude": round(c.magnitude, DIGITS),
                               "p_value": round(c.p_value, DIGITS)} for c in change_points(values)]}


def distributions(verdict: SceneVerdict, baseline: Sequence[BaselineSession],
                  candidate: Sequence[Any]) -> dict[str, Any]:
    """run.json's `regression.distributions`: per judged metric the per-launch values the gate judged, per
    baseline session (in `sessions`' order; A/B: one, the A launches) and the candidate's, for the report to
    draw overlaid. Per-launch values only, rounded: a scene's are a few dozen numbers."""
    return {"sessions": [{"label": s.label or None, "build": s.build or None} for s in baseline],
            "metrics": {v.metric: {"baseline": [_values(s.launches, v.metric) for s in baseline],
                                   "candidate": _values(candidate, v.metric)} for v in verdict.verdicts},
            "frames": frame_quantiles([launch for s in baseline for launch in s.launches], candidate)}


# The levels of a frame-time series' distribution each launch summary keeps: its least frame, its percentiles
# (percentiles.py) and its longest frame.
QUANTILE_LEVELS: tuple[tuple[str, float], ...] = (("min", 0.0), *((name, round(level / 100, 6)) for name, level in PERCENTILES),
                                                  ("max", 1.0))


def frame_quantiles(baseline: Sequence[Any], candidate: Sequence[Any]) -> dict[str, Any]:
    """run.json's `regression.distributions.frames`: per frame-time series (cpu_ms, gpu_ms), each side's
    distribution as the median over its launches of each level's value (QUANTILE_LEVELS). The report draws it
    beside the candidate's frames in the CDF (the baseline's frames themselves are not in this run's folder;
    a history or a baseline run.json keeps its launch summaries). A series a side lacks is left out."""
    out: dict[str, Any] = {}
    for series in ("cpu_ms", "gpu_ms"):
        sides: dict[str, Any] = {}
        for side, launches in (("baseline", baseline), ("candidate", candidate)):
            per_level = [launch_values(launches, f"{series}.{name}") for name, _ in QUANTILE_LEVELS]
            if any(values.size == 0 for values in per_level):
                break
            sides[side] = [_rounded(float(np.median(values))) for values in per_level]
            sides[f"n_{side}"] = min(values.size for values in per_level)
        else:
            out[series] = {"levels": [level for _, level in QUANTILE_LEVELS], **sides}
    return out


def _values(launches: Sequence[Any], metric: str) -> list[float]:
    return [_rounded(float(value)) for value in launch_values(launches, metric)]


def _rounded(value: float) -> float:
    return float(f"{value:.{DIGITS}g}")


def _finite(value: Any) -> Any:
    """JSON-safe: NaN and infinities become None (run.json is written with allow_nan=False)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
