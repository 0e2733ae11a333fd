"""The baselines a candidate is judged against: the recent comparable runs in the history, or the launches of
an earlier run.json (`--zbench-baseline=PATH`). The A/B baseline, the other runner's launches interleaved with
the candidate's, is regression/interleaved_ab.py.

Against a history, every run is a session (docs/regression.md, "Two levels"). The centre of the baseline is the
newest `window` comparable runs; the between-session spread is estimated from more sessions than that
(docs/regression.md, "Where the between-session spread comes from"):

* the scene's own newest `spread_window` comparable runs (the centre's runs among them);
* its newest A/A calibration sessions (`zbench calibrate --sessions N`) in the candidate's environment;
* other scenes of the same device (backend, mode, GPU source) in sessions this scene has none in. Other scenes
  in this scene's own sessions add nothing: whatever moves a session moves all its scenes, so their deviations
  are the same draws again, and counting them as new ones overstated the degrees of freedom (the bench
  measures it: bench/bench_regression_power.py --pool-shared).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ZbenchError
from ..json_types import is_number
from .config import GATE_METRIC
from .gate import BaselineSession, GateConfig, SceneVerdict, SessionPool, judge
from .history import BaselineWindow, HistoricRun, History, SceneKey, environment_fingerprint

DEFAULT_WINDOW = 5
DEFAULT_SPREAD_WINDOW = 20
CALIBRATION_SESSIONS = 20


@dataclass(frozen=True)
class HistoryVerdict:
    """verdict is None when the history holds no comparable run (nothing to judge against yet)."""

    verdict: SceneVerdict | None
    window: BaselineWindow
    spread_runs: tuple[HistoricRun, ...] = ()
    pools: tuple[SessionPool, ...] = ()

    def message(self) -> str:
        if self.verdict is None:
            return f"no baseline: {self.window.describe()}"
        return self.verdict.message()


def session_of(run: HistoricRun) -> BaselineSession:
    return BaselineSession(run.launches, label=run.run_id, build=run.build_hash)


def calibration_sessions(history: History, key: SceneKey, fingerprint: str | None) -> list[HistoricRun]:
    """The newest A/A set of `key`: the calibration runs of the newest calibration build, in the candidate's
    environment when it is known."""
    runs = history.runs_of(key, kinds=("calibration",), limit=CALIBRATION_SESSIONS)
    if fingerprint is not None:
        runs = [r for r in runs if r.fingerprint == fingerprint]
    if not runs:
        return []
    newest = runs[-1]
    return [r for r in runs if r.build_hash == newest.build_hash and r.fingerprint == newest.fingerprint]


def device_scene_keys(history: History, key: SceneKey) -> list[SceneKey]:
    """The other scene keys measured alike on the same device: same backend, mode and GPU source."""
    return [k for k in history.scene_keys(device=key.device)
            if k != key and (k.backend, k.mode, k.gpu_source) == (key.backend, key.mode, key.gpu_source)]


@dataclass(frozen=True)
class DeviceSessions:
    """The recent sessions of every scene of a device (read once per gate and device: they do not change
    while a session measures, its own run being excluded)."""

    runs: Mapping[SceneKey, tuple[HistoricRun, ...]]

    def disjoint_pools(self, key: SceneKey, own_run_ids: Iterable[str]) -> list[SessionPool]:
        """Other scenes' sessions that are not sessions of `key`, each session counted once (the first scene,
        by id, that has it), as one pool per scene."""
        used = set(own_run_ids)
        pools = []
        for other in sorted(self.runs, key=lambda k: (k.scene_id, k.params_hash)):
            if other == key or (other.backend, other.mode, other.gpu_source) != (key.backend, key.mode,
                                                                                 key.gpu_source):
                continue
            fresh = [run for run in self.runs[other] if run.run_id not in used]
            if len(fresh) >= 2:
                used.update(run.run_id for run in fresh)
                pools.append(SessionPool(f"{len(fresh)} sessions of {other.scene_id} without this scene",
                                         [run.launches for run in fresh]))
        return pools


def read_device_sessions(history: History, key: SceneKey, *, spread_window: int = DEFAULT_SPREAD_WINDOW,
                         exclude_run: str | None = None, before_utc: str | None = None) -> DeviceSessions:
    runs = {other: history.comparable(other, window=spread_window, exclude_run=exclude_run,
                                      before_utc=before_utc).runs
            for other in device_scene_keys(history, key)}
    return DeviceSessions(runs)


def judge_against_history(history: History, key: SceneKey, candidate: Sequence[Any],
                          config: GateConfig = GateConfig(), *, window: int = DEFAULT_WINDOW,
                          spread_window: int = DEFAULT_SPREAD_WINDOW, exclude_run: str | None = None,
                          before_utc: str | None = None, environment: Mapping[str, Any] | None = None,
                          same_fingerprint: bool = False, use_calibration: bool = True,
                          device_sessions: DeviceSessions | None = None) -> HistoryVerdict:
    """Judge the candidate session's per-launch summaries against the `window` newest comparable runs, the
    between-session spread estimated from the sources in this module's docstring. `device_sessions`: the other
    scenes' recent sessions (read_device_sessions), read here when not given."""
    base = history.comparable(key, window=window, exclude_run=exclude_run, before_utc=before_utc,
                              environment=environment, same_fingerprint=same_fingerprint)
    if base.empty:
        return HistoryVerdict(None, base)
    spread = history.comparable(key, window=max(spread_window, window), exclude_run=exclude_run,
                                before_utc=before_utc, environment=environment,
                                same_fingerprint=same_fingerprint).runs
    centre = {run.run_id for run in base.runs}
    older = tuple(run for run in spread if run.run_id not in centre)
    pools: list[SessionPool] = []
    if use_calibration:
        fingerprint = environment_fingerprint(environment) if environment is not None else None
        aa = calibration_sessions(history, key, fingerprint)
        if len(aa) >= 2:
            pools.append(SessionPool(f"{len(aa)} A/A calibration sessions (build {aa[-1].build_hash[:10]})",
                                     [run.launches for run in aa]))
    if device_sessions is None:
        device_sessions = read_device_sessions(history, key, spread_window=spread_window, exclude_run=exclude_run,
                                               before_utc=before_utc)
    pools += device_sessions.disjoint_pools(key, (run.run_id for run in spread))
    verdict = judge([session_of(run) for run in base.runs], candidate, config,
                    older=[session_of(run) for run in older], pool=pools, baseline_description=base.describe())
    return HistoryVerdict(verdict, base, tuple(spread), tuple(pools))


class BaselineFileError(ZbenchError):
    """The run.json given as the baseline cannot be read; the message names the file."""


def read_run_file(path: Path) -> dict[str, Any]:
    """An earlier run.json, as the baseline of this session's scenes; what the gate reads of it is checked
    here, so that a file of another shape is one clear error and not a failure inside the gate."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BaselineFileError(f"cannot read the baseline {path}: {exc}") from exc
    if not isinstance(document, dict):
        raise BaselineFileError(f"the baseline {path} is not a run.json: not a JSON object")
    scenes = document.get("scenes")
    if not isinstance(scenes, list):
        raise BaselineFileError(f"the baseline {path} is not a run.json: key 'scenes' is not a list")
    for index, scene in enumerate(scenes):
        where = f"the baseline {path} is not a run.json of this version: scenes[{index}]"
        if not isinstance(scene, dict):
            raise BaselineFileError(f"{where} is not an object")
        for key in ("id", "device"):
            if not isinstance(scene.get(key), str):
                raise BaselineFileError(f"{where}.{key} is not a string")
        per_run = scene.get("per_run", [])
        if not isinstance(per_run, list) or not all(isinstance(run, dict) for run in per_run):
            raise BaselineFileError(f"{where}.per_run is not a list of launch objects")
        for run_index, run in enumerate(per_run):
            bad = _unreadable_metric(run)
            if bad:
                raise BaselineFileError(f"{where}.per_run[{run_index}].{bad} is not a number")
    if not isinstance(document.get("app", {}), dict):
        raise BaselineFileError(f"the baseline {path} is not a run.json: key 'app' is not an object")
    return document


def _unreadable_metric(launch: Mapping[str, Any]) -> str | None:
    """The first value the gate could read from this launch summary that is not a number (or missing)."""
    for family, stats in launch.items():
        if family == "jank_share":
            if stats is not None and not is_number(stats):
                return family
        elif GATE_METRIC.fullmatch(f"{family}.p50"):
            if stats is not None and not isinstance(stats, dict):
                return family
            for name, value in (stats or {}).items():
                if GATE_METRIC.fullmatch(f"{family}.{name}") and value is not None and not is_number(value):
                    return f"{family}.{name}"
    return None


# What must be equal for a run.json entry to be judged against another (run_record.py writes each): how the
# scene was drawn and measured. The history keys on the same (host/verdicts/perf_gate.py comparison_params).
MEASURED_ALIKE = ("backend", "mode", "params", "gpu_source", "surface", "warmup_frames", "measured_frames", "seed")


def measured_alike(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A run.json scene entry's MEASURED_ALIKE values (a key the entry's writer did not record yet is absent)."""
    return {key: entry[key] for key in MEASURED_ALIKE if key in entry}


def differences(baseline: Mapping[str, Any], candidate: Mapping[str, Any]) -> list[str]:
    """How the baseline entry was measured differently from the candidate, each named: empty when they compare.
    A key either side lacks (a file written before it was recorded) is not held against it."""
    return [f"{key} {baseline[key]!r} there, {candidate[key]!r} here" for key in MEASURED_ALIKE
            if key in baseline and key in candidate and baseline[key] != candidate[key]]


@dataclass(frozen=True)
class FileVerdict:
    """verdict is None when nothing was judged: no launches to judge against (`comparable`), or an entry
    measured differently (not `comparable`); `message` then says which. `launches` and `build` are the
    baseline's (for what else changed)."""

    verdict: SceneVerdict | None
    description: str
    message: str = ""
    comparable: bool = True
    launches: tuple[dict[str, Any], ...] = ()
    build: str = ""


def judge_against_run_file(document: Mapping[str, Any], path: Path, scene_id: str, device: str,
                           comparison: Mapping[str, Any], candidate: Sequence[Any],
                           config: GateConfig = GateConfig(), *, pool: Sequence[SessionPool] = ()) -> FileVerdict:
    """Judge the candidate's per-launch summaries against the complete launches of the same device and scene
    in an earlier run.json: one session, so its between-session spread must come from `pool` (A/A calibration
    sessions in the history), else the verdict is inconclusive. `comparison` (the candidate's MEASURED_ALIKE)
    must equal the entry's: a run of other frame counts, warmup, surface or seed is not comparable, never judged."""
    entries = [s for s in document.get("scenes", []) if s.get("id") == scene_id and s.get("device") == device]
    if not entries or not entries[0].get("per_run"):
        description = f"{path} has no measured launches of {scene_id} on {device}"
        return FileVerdict(None, description, f"no baseline: {description}")
    entry = entries[0]
    differ = differences(entry, comparison)
    conditions = _launch_conditions(entry)
    launches = [dict(launch, conditions=conditions[i]) if i in conditions else launch
                for i, launch in enumerate(entry["per_run"]) if not launch.get("partial")]
    build = str((document.get("app") or {}).get("build_hash") or "")
    description = (f"{len(launches)} launches of {scene_id} on {device} in {path} "
                   f"(run {str(document.get('run_id', '?'))[:8]}, build {(build or '?')[:10]})")
    if differ:
        return FileVerdict(None, description, f"not comparable with {description}: {'; '.join(differ)}",
                           comparable=False)
    if not launches:
        return FileVerdict(None, description, f"no baseline: every launch in {path} was partial")
    verdict = judge([BaselineSession(launches, label=str(document.get("run_id", "")), build=build)], candidate,
                    config, pool=pool, baseline_description=description)
    return FileVerdict(verdict, description, launches=tuple(launches), build=build)


def run_file_frames(document: Mapping[str, Any], path: Path, scene_id: str, device: str) -> Path | None:
    """The frames CSV of the scene's entry in an earlier run.json, inside that file's folder (its results
    folder); None when the entry names none, the file is missing, or its path leads outside the folder (a
    run.json is input: its paths are never followed out of where it lives). For the diff trace
    (docs/regression.md, "Why it regressed")."""
    entry = next((s for s in document.get("scenes", []) if s.get("id") == scene_id and s.get("device") == device),
                 None)
    samples = entry.get("samples_file") if entry else None
    if not isinstance(samples, str) or not samples:
        return None
    folder = path.parent.resolve()
    frames = (folder / samples).resolve()
    if not frames.is_relative_to(folder) or not frames.is_file():
        return None
    return frames


def _launch_conditions(entry: Mapping[str, Any]) -> dict[int, Any]:
    """Per launch index, the conditions run.json recorded around it (launches[].conditions)."""
    out: dict[int, Any] = {}
    for record in entry.get("launches") or []:
        if isinstance(record, Mapping) and isinstance(record.get("launch"), int) and record.get("conditions"):
            out[record["launch"]] = record["conditions"]
    return out


__all__ = [
    "BaselineFileError", "DEFAULT_SPREAD_WINDOW", "DEFAULT_WINDOW", "DeviceSessions", "FileVerdict",
    "HistoryVerdict", "MEASURED_ALIKE", "calibration_sessions", "device_scene_keys", "differences",
    "judge_against_history", "measured_alike",
    "judge_against_run_file", "read_device_sessions", "read_run_file", "session_of", "run_file_frames",
]
