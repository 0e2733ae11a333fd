"""One scene's series as the published site shows it: per run the median of a metric over its launches and the
range of the launches around it, the change points `zbench history` finds, the verdicts the gate gave where
their run.json is still at hand, and whether the scene has an open regression (docs/report.md, "Published
site"). Plain values in, plain values out: the history is read by the caller.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..regression.changepoints import ChangePoint, LatestOutlier, change_points, latest_outside
from ..regression.config import DEFAULT_THRESHOLD, HIGHER_IS_BETTER
from ..regression.hierarchy import launch_values
from ..regression.history import HistoricRun, SceneKey
from .verdicts import ArchivedVerdict


@dataclass(frozen=True)
class RunPoint:
    """A run of the scene: the median of the metric over its launches, and their lowest and highest value
    (for five launches, the range is the 94 % distribution-free interval of the median)."""

    run_id: str
    started_utc: str
    build_hash: str
    dirty: bool | None
    launches: int
    median: float | None
    low: float | None
    high: float | None
    environment_changed: bool


@dataclass(frozen=True)
class SceneSeries:
    key: SceneKey
    metric: str
    points: tuple[RunPoint, ...]
    change_points: tuple[ChangePoint, ...]
    latest_outlier: LatestOutlier | None
    verdicts: Mapping[int, ArchivedVerdict]  # series index -> the gate's verdict on that run
    open_regression: str | None  # why the scene is listed as an open regression, or None

    @property
    def latest_verdict(self) -> tuple[int, ArchivedVerdict] | None:
        """The verdict of the newest run that has one (index, verdict)."""
        if not self.verdicts:
            return None
        index = max(self.verdicts)
        return index, self.verdicts[index]


def run_point(run: HistoricRun, metric: str, previous: HistoricRun | None) -> RunPoint:
    values = sorted(launch_values(run.launches, metric).tolist())  # a handful: sorted, not numpy's median
    n = len(values)
    median = (values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2) if n else None
    changed = previous is not None and previous.fingerprint != run.fingerprint
    return RunPoint(run.run_id, run.started_utc, run.build_hash, run.dirty, len(run.launches), median,
                    values[0] if n else None, values[-1] if n else None, changed)


def run_points(runs: Sequence[HistoricRun], metric: str) -> tuple[RunPoint, ...]:
    """The runs (oldest first) as points of the series."""
    return tuple(run_point(run, metric, previous) for previous, run in zip([None, *runs], runs))


def find_steps(values: Sequence[float | None], sig_level: float = 0.05) -> list[ChangePoint]:
    """The change points of a series' values (a plain function of plain values: build.py runs it in worker
    processes, where the permutation tests of a lab's thousands of series spend their time)."""
    return change_points(values, sig_level=sig_level)


def scene_series(key: SceneKey, points: Sequence[RunPoint], steps: Sequence[ChangePoint], metric: str,
                 verdicts: Mapping[tuple[str, str], ArchivedVerdict], *,
                 threshold: float = DEFAULT_THRESHOLD) -> SceneSeries:
    """The series of `points` with its change points (found by find_steps on their medians), the archived
    verdicts of its runs and whether it has an open regression."""
    named = tuple(dataclasses.replace(step, build_hash=points[step.index].build_hash,
                                      run_id=points[step.index].run_id,
                                      started_utc=points[step.index].started_utc) for step in steps)
    outlier = latest_outside([p.median for p in points])
    known = {i: verdicts[(p.run_id, key.scene_id)] for i, p in enumerate(points)
             if (p.run_id, key.scene_id) in verdicts}
    return SceneSeries(key, metric, tuple(points), named, outlier, known,
                       open_regression(metric, named, outlier, known, len(points), threshold))


def open_regression(metric: str, steps: Sequence[ChangePoint], outlier: LatestOutlier | None,
                    verdicts: Mapping[int, ArchivedVerdict], n_points: int, threshold: float) -> str | None:
    """Why the scene's current level is a regression, or None. When the gate judged the newest run, its verdict
    decides, in its words: the site's own rules once called a run the gate found `inconclusive` after a spike
    "open regression x1.402 against the 6 runs before it". Else open means nothing since has undone it: the
    gate's newest verdict was `regressed`; or the newest change point is a slowdown beyond the gate's threshold
    (a later step back would be the newest change point); or the newest run lies outside the series' spread
    on the slow side (a step in the newest runs, which the change-point test cannot see yet)."""
    def worse(ratio: float) -> bool:
        return ratio < 1 / (1 + threshold) if metric in HIGHER_IS_BETTER else ratio > 1 + threshold

    if verdicts:
        index = max(verdicts)
        newest = index == n_points - 1
        if verdicts[index].verdict == "regressed":
            return f"the gate's verdict on run #{index} (the newest{'' if newest else ' judged'}) is regressed"
        if newest:
            return None
    if steps and worse(steps[-1].magnitude):
        step = steps[-1]
        build = f" at build {step.build_hash[:10]}" if step.build_hash else ""
        return f"step x{step.magnitude:.3f} ({step.magnitude - 1:+.1%}) at run #{step.index}{build}, not undone since"
    if outlier is not None and worse(outlier.ratio):
        return (f"the newest run #{n_points - 1} is x{outlier.ratio:.3f} ({outlier.ratio - 1:+.1%}) against the "
                f"{outlier.earlier} run(s) before it, outside their spread")
    return None
