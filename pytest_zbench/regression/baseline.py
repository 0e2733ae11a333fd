"""The gate against history: the candidate's launches judged against the recent comparable runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
