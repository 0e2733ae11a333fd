"""The baselines a candidate is judged against: the recent comparable runs in the history, or the launches of
an earlier run.json (`--zbench-baseline=PATH`). The A/B baseline, the other runner's launches interleaved with
the candidate's, is regression/ab.py."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ZbenchError
from .config import GATE_METRIC
from .gate import GateConfig, SceneVerdict, judge
from .history import BaselineWindow, History, SceneKey, environment_fingerprint


@dataclass(frozen=True)
class HistoryVerdict:
    """verdict is None when the history holds no comparable run (nothing to judge against yet)."""

    verdict: SceneVerdict | None
    window: BaselineWindow
    noise_floors: Mapping[str, float]

    def message(self) -> str:
        if self.verdict is None:
            return f"no baseline: {self.window.describe()}"
        return self.verdict.message()


def judge_against_history(history: History, key: SceneKey, candidate: Sequence[Any],
                          config: GateConfig = GateConfig(), *, window: int = 5, exclude_run: str | None = None,
                          before_utc: str | None = None, environment: Mapping[str, Any] | None = None,
                          same_fingerprint: bool = False, use_calibration: bool = True) -> HistoryVerdict:
    """Judge the candidate's per-launch summaries against the launches of the `window` newest comparable
    runs. Calibrated noise floors are used when stored for this key (and, given the candidate's
    environment, measured with its fingerprint); otherwise the gate estimates them from the baseline."""
    base = history.comparable(key, window=window, exclude_run=exclude_run, before_utc=before_utc,
                              environment=environment, same_fingerprint=same_fingerprint)
    floors: dict[str, float] = {}
    if use_calibration:
        fingerprint = environment_fingerprint(environment) if environment is not None else None
        floors = {m: c.noise_floor for m, c in history.calibrations(key, fingerprint=fingerprint).items()}
    if base.empty:
        return HistoryVerdict(None, base, floors)
    return HistoryVerdict(judge(base.launches, candidate, config, noise_floors=floors,
                                baseline_description=base.describe()), base, floors)


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
            if stats is not None and not _number(stats):
                return family
        elif GATE_METRIC.fullmatch(f"{family}.p50"):
            if stats is not None and not isinstance(stats, dict):
                return family
            for name, value in (stats or {}).items():
                if GATE_METRIC.fullmatch(f"{family}.{name}") and value is not None and not _number(value):
                    return f"{family}.{name}"
    return None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class FileVerdict:
    """verdict is None when nothing was judged: no launches to judge against (`comparable`), or an entry
    measured differently (not `comparable`); `message` then says which."""

    verdict: SceneVerdict | None
    description: str
    message: str = ""
    comparable: bool = True


def judge_against_run_file(document: Mapping[str, Any], path: Path, scene_id: str, device: str,
                           comparison: Mapping[str, Any], candidate: Sequence[Any],
                           config: GateConfig = GateConfig()) -> FileVerdict:
    """Judge the candidate's per-launch summaries against the complete launches of the same device and scene
    in an earlier run.json. `comparison` (backend, mode, params, gpu_source) must equal the entry's."""
    entries = [s for s in document.get("scenes", []) if s.get("id") == scene_id and s.get("device") == device]
    if not entries or not entries[0].get("per_run"):
        description = f"{path} has no measured launches of {scene_id} on {device}"
        return FileVerdict(None, description, f"no baseline: {description}")
    entry = entries[0]
    differ = [f"{k} {entry.get(k)!r} there, {v!r} here" for k, v in comparison.items() if entry.get(k) != v]
    launches = [launch for launch in entry["per_run"] if not launch.get("partial")]
    build = str((document.get("app") or {}).get("build_hash") or "?")
    description = (f"{len(launches)} launches of {scene_id} on {device} in {path} "
                   f"(run {str(document.get('run_id', '?'))[:8]}, build {build[:10]})")
    if differ:
        return FileVerdict(None, description, f"not comparable with {description}: {'; '.join(differ)}",
                           comparable=False)
    if not launches:
        return FileVerdict(None, description, f"no baseline: every launch in {path} was partial")
    return FileVerdict(judge(launches, candidate, config, baseline_description=description), description)
