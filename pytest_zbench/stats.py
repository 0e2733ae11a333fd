"""Frame-time statistics: summarise each launch, then summarise across launches.

Frames inside one runner launch are correlated (thermal state, caches, the same shader binaries), so
the launch is the unit of independence: every cross-launch figure is a statistic *of launch
statistics* (median of per-launch p50s, ...), never a statistic of pooled frames. Pure numpy; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from .percentiles import PERCENTILES
from .protocol import MODES, PREEMPTIONS_COLUMN, STOLEN_COLUMN, Mode

# Log-ish buckets (docs/methodology.md §2); bucket i is [edge i, edge i+1), as np.histogram counts.
HIST_EDGES_MS: tuple[float, ...] = (0, 4, 8, 12, 16.7, 25, 33, 50, 100, math.inf)
# How a percentile is computed: numpy's "linear" method (Hyndman & Fan type 7, the default of numpy, R and
# Excel's PERCENTILE.INC): the value at rank (n - 1) q / 100, interpolated linearly between the two nearest.
PERCENTILE_METHOD: Literal["linear"] = "linear"
# A tail percentile from fewer values than this is mostly one or two frames: it is flagged `unreliable`
# (run.json) and shown with `~` (terminal), never hidden. p99 needs 100 frames for one frame past it, p99.9 1,000.
RELIABLE_FROM: Mapping[str, int] = {"p99": 100, "p999": 1000}
METRICS: tuple[str, ...] = ("cpu_ms", "gpu_ms", "interval_ms", "frame_ms")
MAD_TO_SIGMA = 1.4826  # makes the MAD a consistent estimator of a normal sigma
MS_DIGITS = 4
SHARE_DIGITS = 6
ROUNDING_MS = 1e-5  # frames.csv carries milliseconds to 6 decimals: differences below this are rounding  # a jank share of 1 frame in 10,000 must not round to zero
# Android vitals' frame categories (docs/methodology.md §2, "Slow and frozen frames"): slow is a frame longer
# than one 60 Hz frame (the "16 ms" of Android vitals, which a 60 Hz paced interval of exactly one period,
# 16.667 ms, must not count as) and than the budget (on a display slower than 60 Hz one refresh is the fastest a
# frame can be: a 59 Hz panel's every frame would be slow otherwise), frozen one longer than 700 ms. A frame is
# in one category at most. Android stops at 5 s, where an ANR takes over; a benchmark frame that long is still
# counted frozen rather than lost.
SLOW_FRAME_MS = 1000.0 / 60
FROZEN_FRAME_MS = 700.0



def _finite(values: ArrayLike) -> np.ndarray:
    # dtype=float turns None into NaN; inf is no measurement either and would break JSON.
    arr = np.asarray(values, dtype=float).ravel()
    return arr[np.isfinite(arr)]


def _rounded(value: Any, digits: int = MS_DIGITS) -> Any:
    """JSON-safe copy: NaN/inf become None, floats are rounded, numpy scalars become Python ones."""
    if isinstance(value, Mapping):
        return {str(k): _rounded(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_rounded(v, digits) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return round(float(value), digits) if math.isfinite(value) else None
    return value


@dataclass(frozen=True)
class Distribution:
    """Distribution of one metric; `hist` counts values per HIST_EDGES_MS bucket (negatives in none)."""

    n: int
    p50: float
    p90: float
    p95: float
    p99: float
    p999: float
    max: float
    min: float
    mean: float
    stddev: float
    mad: float
    hist: tuple[int, ...]

    @property
    def unreliable(self) -> list[str]:
        """The percentiles computed from too few values to trust (RELIABLE_FROM)."""
        return unreliable_percentiles(self.n)

    def to_dict(self) -> dict[str, Any]:
        return _rounded(
            {"n": self.n, **{name: getattr(self, name) for name, _ in PERCENTILES},
             "max": self.max, "min": self.min, "mean": self.mean, "stddev": self.stddev, "mad": self.mad,
             "hist": self.hist, "unreliable": self.unreliable}
        )


def unreliable_percentiles(n: int) -> list[str]:
    """The percentiles of PERCENTILES that n values cannot give reliably, in PERCENTILES order."""
    return [name for name, _ in PERCENTILES if n < RELIABLE_FROM.get(name, 0)]


def histogram(values: np.ndarray) -> tuple[int, ...]:
    edges = np.asarray(HIST_EDGES_MS)
    bucket = np.searchsorted(edges, values, side="right") - 1
    inside = (bucket >= 0) & (bucket < len(edges) - 1)
    return tuple(int(c) for c in np.bincount(bucket[inside], minlength=len(edges) - 1))


def distribution(values: ArrayLike) -> Distribution | None:
    """Summary of the known values (NaN, None and inf dropped); None when no value is known."""
    x = _finite(values)
    if x.size == 0:
        return None
    pct = np.percentile(x, [q for _, q in PERCENTILES], method=PERCENTILE_METHOD)
    median = float(np.median(x))
    return Distribution(
        n=int(x.size),
        **{name: float(v) for (name, _), v in zip(PERCENTILES, pct)},
        max=float(x.max()),
        min=float(x.min()),
        mean=float(x.mean()),
        stddev=float(x.std(ddof=1)) if x.size > 1 else 0.0,
        mad=float(np.median(np.abs(x - median))),
        hist=histogram(x),
    )


def _frozen_floats(values: ArrayLike) -> np.ndarray:
    arr = np.array(values, dtype=float).ravel()  # a copy, so freezing it cannot touch the caller's data
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)  # eq=False: dataclass equality on arrays is ambiguous
class LaunchSamples:
    """One runner launch's samples; all per-frame arrays cover the measured frames, NaN = unknown."""

    cpu_ms: np.ndarray
    gpu_ms: np.ndarray
    gpu_source: str | None
    interval_ms: np.ndarray
    warmup_cpu_ms: np.ndarray
    counters: Mapping[str, np.ndarray]
    mode: Mode
    partial: bool = False

    def __post_init__(self) -> None:
        for name in ("cpu_ms", "gpu_ms", "interval_ms", "warmup_cpu_ms"):
            object.__setattr__(self, name, _frozen_floats(getattr(self, name)))
        object.__setattr__(self, "counters", {k: _frozen_floats(v) for k, v in self.counters.items()})
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(map(repr, MODES))}, not {self.mode!r}")
        n = self.cpu_ms.size
        per_frame = {"gpu_ms": self.gpu_ms, "interval_ms": self.interval_ms, **self.counters}
        wrong = {k: v.size for k, v in per_frame.items() if v.size != n}
        if wrong:
            raise ValueError(f"per-frame arrays must have one value per measured frame ({n}); got {wrong}")
        # Unlabelled gpu_ms could later be pooled with another source's numbers (docs/methodology.md §5): refuse it here.
        if self.gpu_source is None and np.isfinite(self.gpu_ms).any():
            raise ValueError("gpu_ms has values but gpu_source is None")


def frame_times(samples: LaunchSamples) -> np.ndarray:
    """The series jank and frame_ms are judged on: the frame-to-frame interval, in both modes.

    Paced: the present interval on the simulated vsync, which is what the user sees. Uncapped: the time from
    one frame's end to the next's, which is the real cost of a frame, whatever the backend: it contains the
    CPU work, the GPU work the backend waits for (its frames-in-flight limit) and the loop's own overhead. Not
    max(cpu_ms, gpu_ms): a GPU backend's cpu_ms ends at the submit and a timer query may see one tile, so on
    llvmpipe that read 0.13 ms for frames that took 2.49 ms (docs/methodology.md §4).
    """
    return samples.interval_ms.copy()


def throughput_fps(samples: LaunchSamples) -> float | None:
    """Uncapped: measured frames per second of wall time (frames / the sum of their intervals). Paced: None,
    the display's refresh decides it."""
    if samples.mode != "uncapped":
        return None
    known = _finite(samples.interval_ms)
    total = float(known.sum())
    return known.size * 1000.0 / total if known.size and total > 0 else None


@dataclass(frozen=True)
class LaunchSummary:
    """One launch: distributions of the measured frames, jank against the budget, cold-start cost."""

    n_frames: int
    cpu_ms: Distribution | None
    gpu_ms: Distribution | None
    gpu_source: str | None
    interval_ms: Distribution | None
    frame_ms: Distribution | None
    jank: int
    severe_jank: int
    jank_share: float | None  # None when no frame time is known: 0.0 would claim a smooth launch
    longest_stall_ms: float | None  # likewise
    first_frame_ms: float | None
    warmup_ms: float | None
    counters: dict[str, float]  # mean per measured frame, over frames where the counter is known
    partial: bool
    mode: Mode
    budget_ms: float
    fps: float | None = None  # uncapped: throughput_fps
    # Measured frames the kernel preempted (the runner's `preemptions` counter > 0), over those where it is
    # known; None when the runner does not count them (docs/regression.md, "A busy host").
    preempted_share: float | None = None
    # With the runner's stolen_ms (docs/runner-protocol.md): each measured frame's cpu_ms less the time its
    # thread was off the CPU inside it (on-CPU time), and the stolen time's share of cpu_ms over the launch;
    # None without the column. The busy-host guard judges a metric on both (docs/regression.md, "A busy host").
    oncpu_ms: Distribution | None = None
    stolen_share: float | None = None
    # CPUs other tasks kept busy on the device while the runner ran, on average (result.json host_load: the CPUs'
    # busy time less the runner's own, over the wall time); None when unknown. Set by the host; the busy-host guard reads it for the
    # load a frame's stolen time cannot show (docs/regression.md, "A busy host").
    corun_load: float | None = None
    # An adaptive scene's launch: its role (search or ramp) and a ramp's score
    # (host/measure/adaptive_launches.py), which the regression gate reads as the per-launch metric
    # `adaptive.score`.
    adaptive: Mapping[str, Any] | None = None
    # Cold start: from the runner process's start to the end of its first frame (host/measure/cold_start.py; None
    # when the runner does not say when its process started). Set by the host, which reads result.json.
    time_to_first_frame_ms: float | None = None
    # Android vitals' slow and frozen frames of frame_ms (frame_categories), and frame_ms less the budget
    # (overrun); beside jank, which is judged against the budget.
    slow_frames: int = 0
    frozen_frames: int = 0
    overrun_ms: Distribution | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n_frames": self.n_frames}
        for name in METRICS:
            dist = getattr(self, name)
            out[name] = dist.to_dict() if dist is not None else None
        out.update(_rounded({
            "gpu_source": self.gpu_source, "jank": self.jank, "severe_jank": self.severe_jank,
            "longest_stall_ms": self.longest_stall_ms, "first_frame_ms": self.first_frame_ms,
            "warmup_ms": self.warmup_ms, "time_to_first_frame_ms": self.time_to_first_frame_ms,
            "counters": self.counters, "partial": self.partial,
            "mode": self.mode, "budget_ms": self.budget_ms, "fps": self.fps,
            "slow_frames": self.slow_frames, "frozen_frames": self.frozen_frames,
        }))
        out["overrun_ms"] = overrun_dict(self.overrun_ms.to_dict() if self.overrun_ms is not None else None)
        out["jank_share"] = _rounded(self.jank_share, SHARE_DIGITS)
        out["preempted_share"] = _rounded(self.preempted_share, SHARE_DIGITS)
        if self.oncpu_ms is not None:
            out["oncpu_ms"] = self.oncpu_ms.to_dict()
            out["stolen_share"] = _rounded(self.stolen_share, SHARE_DIGITS)
        if self.corun_load is not None:
            out["corun_load"] = _rounded(self.corun_load, SHARE_DIGITS)
        if self.adaptive is not None:
            out["adaptive"] = _rounded(self.adaptive, SHARE_DIGITS)
        return out


def preempted_share(samples: LaunchSamples) -> float | None:
    known = _finite(samples.counters.get(PREEMPTIONS_COLUMN, np.empty(0)))
    return float(np.count_nonzero(known > 0)) / known.size if known.size else None


def on_cpu(samples: LaunchSamples) -> tuple[Distribution | None, float | None]:
    """(the on-CPU time's distribution, the stolen share) of a launch whose runner wrote stolen_ms; a frame
    without a stolen_ms is left out of both, and stolen time is capped at the frame's cpu_ms (the stolen
    bracket is a little wider than cpu_ms's, docs/runner-protocol.md)."""
    stolen = samples.counters.get(STOLEN_COLUMN)
    if stolen is None:
        return None, None
    known = np.isfinite(stolen) & np.isfinite(samples.cpu_ms)
    if not known.any():
        return None, None
    cpu = samples.cpu_ms[known]
    taken = np.clip(stolen[known], 0.0, cpu)
    total = float(cpu.sum())
    return distribution(cpu - taken), (float(taken.sum()) / total if total > 0 else 0.0)


def _jank(frames: np.ndarray, budget_ms: float) -> tuple[int, int, float | None, float | None]:
    known = _finite(frames)
    if known.size == 0:
        return 0, 0, None, None
    # A frame of exactly the budget made its deadline. Runners write ms with ns resolution, so a paced
    # interval of one whole period reads 16.666667 against a budget of 16.6666...: allow that rounding.
    jank = int(np.count_nonzero(known > budget_ms + ROUNDING_MS))
    severe = int(np.count_nonzero(known > 2 * budget_ms + ROUNDING_MS))
    return jank, severe, jank / known.size, float(known.max())


def slow_frame_ms(budget_ms: float) -> float:
    """Where slow frames start against a budget: SLOW_FRAME_MS, or the budget when it is longer."""
    return max(SLOW_FRAME_MS, budget_ms)


def frame_categories(frames: ArrayLike, budget_ms: float) -> tuple[int, int]:
    """(slow, frozen) frames of a series, by Android vitals' boundaries (slow_frame_ms, FROZEN_FRAME_MS), with
    the jank rule's allowance for rounding; unknown frames are in neither."""
    known = _finite(frames)
    frozen = int(np.count_nonzero(known > FROZEN_FRAME_MS + ROUNDING_MS))
    return int(np.count_nonzero(known > slow_frame_ms(budget_ms) + ROUNDING_MS)) - frozen, frozen


def overrun(frames: ArrayLike, budget_ms: float) -> Distribution | None:
    """The budget overrun of each frame (Macrobenchmark's frameOverrunMs): its frame time minus the budget,
    positive when it missed the deadline, negative its slack; its distribution, None when no frame is known."""
    return distribution(np.asarray(frames, dtype=float) - budget_ms)


def overrun_dict(summary: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """An overrun distribution as run.json keeps it: without the histogram, whose buckets are frame times, and
    without the noise floor, a spread relative to a median that is near zero when frames just make it."""
    return None if summary is None else {k: v for k, v in summary.items() if k not in ("hist", "noise_floor")}


def jank_counts(frames: ArrayLike, budget_ms: float) -> tuple[int, int, float | None, float | None]:
    """(jank, severe jank, jank share, longest frame) of a series against a budget, by the rule of
    summarize_launch; for series of their own, such as Android's platform frames (host/measure/android_frame_series.py)."""
    return _jank(np.asarray(frames, dtype=float), budget_ms)


def _check_budget(budget_ms: float) -> None:
    if not (math.isfinite(budget_ms) and budget_ms > 0):
        raise ValueError(f"budget_ms must be a positive number of milliseconds, not {budget_ms!r}")


def summarize_launch(samples: LaunchSamples, budget_ms: float) -> LaunchSummary:
    _check_budget(budget_ms)
    frames = frame_times(samples)
    jank, severe, share, stall = _jank(frames, budget_ms)
    warmup = samples.warmup_cpu_ms
    first = warmup if warmup.size else samples.cpu_ms  # the first frame rendered, warmup or not
    first_frame = float(first[0]) if first.size and math.isfinite(first[0]) else None
    # A sum over the known warmup frames would undercount and look like an improvement: all or nothing.
    warmup_ms = float(warmup.sum()) if warmup.size and np.isfinite(warmup).all() else None
    known_counters = {k: _finite(v) for k, v in samples.counters.items()}
    counters = {k: float(v.mean()) for k, v in known_counters.items() if v.size}
    oncpu, stolen_share = on_cpu(samples)
    slow, frozen = frame_categories(frames, budget_ms)
    return LaunchSummary(
        n_frames=int(samples.cpu_ms.size),
        cpu_ms=distribution(samples.cpu_ms),
        gpu_ms=distribution(samples.gpu_ms),
        gpu_source=samples.gpu_source,
        interval_ms=distribution(samples.interval_ms),
        frame_ms=distribution(frames),
        jank=jank,
        severe_jank=severe,
        jank_share=share,
        longest_stall_ms=stall,
        first_frame_ms=first_frame,
        warmup_ms=warmup_ms,
        counters=counters,
        partial=samples.partial,
        mode=samples.mode,
        budget_ms=float(budget_ms),
        fps=throughput_fps(samples),
        preempted_share=preempted_share(samples),
        oncpu_ms=oncpu,
        stolen_share=stolen_share,
        slow_frames=slow,
        frozen_frames=frozen,
        overrun_ms=overrun(frames, budget_ms),
    )


def noise_floor(per_run_medians: Sequence[float | None]) -> float:
    """Relative robust spread of per-launch medians: 1.4826 * MAD / median (None/NaN ignored).

    Raises ValueError when it cannot be estimated (fewer than two known launches, or a zero median),
    so that a regression gate never silently compares against a made-up noise level.
    """
    x = _finite([np.nan if v is None else v for v in per_run_medians])
    if x.size < 2:
        raise ValueError(f"a noise floor needs at least 2 launches with a value, got {x.size}")
    median = float(np.median(x))
    if median == 0:
        raise ValueError("a noise floor relative to a zero median is undefined")
    return MAD_TO_SIGMA * float(np.median(np.abs(x - median))) / abs(median)


@dataclass(frozen=True)
class SceneSummary:
    """Across launches. metrics[m] holds, per statistic, the median over launches of that launch
    statistic (p50..p999, mean, stddev, mad), plus min/max over launches, summed hist, total n, the
    number of launches that had the metric, and noise_floor of the per-launch p50s (None if < 2)."""

    runs: int
    partial_runs: int
    budget_ms: float
    metrics: dict[str, dict[str, Any]]
    jank: int
    severe_jank: int
    jank_share: float | None  # jank frames / known frame times, over all launches
    longest_stall_ms: float | None
    per_run_medians: dict[str, list[float | None]]  # None where that launch lacks the metric
    per_run: list[dict[str, Any]]
    cold: dict[str, dict[str, float | None]]
    counters: dict[str, float]  # median over launches of the per-frame mean
    gpu_source: str | None
    notes: list[str] = field(default_factory=list)
    mode: str | None = None
    fps: float | None = None  # uncapped: the median over launches of their throughput (frames per second)
    slow_frames: int = 0  # summed over launches, as jank
    frozen_frames: int = 0
    overrun_ms: dict[str, Any] | None = None  # across launches, as a metric (the median of each launch statistic)

    def to_dict(self) -> dict[str, Any]:
        out = _rounded({
            "runs": self.runs, "partial_runs": self.partial_runs, "budget_ms": self.budget_ms,
            "mode": self.mode, "metrics": self.metrics, "jank": self.jank, "severe_jank": self.severe_jank,
            "slow_frames": self.slow_frames, "frozen_frames": self.frozen_frames,
            "overrun_ms": overrun_dict(self.overrun_ms),
            "longest_stall_ms": self.longest_stall_ms, "per_run_medians": self.per_run_medians,
            "per_run": self.per_run, "cold": self.cold, "counters": self.counters,
            "gpu_source": self.gpu_source, "notes": self.notes, "fps": self.fps,
        })
        # Each launch's dict was rounded by LaunchSummary.to_dict, shares to SHARE_DIGITS: rounding it again to
        # MS_DIGITS would turn one janky frame in 30,000 into 0.0.
        out["per_run"] = self.per_run
        out["jank_share"] = _rounded(self.jank_share, SHARE_DIGITS)
        return out


# The scene-level figures run.json's `metrics` holds beside the four timing series (A's `metrics` and an A/B
# scene's `ab.metrics_b` alike).
SCENE_FIGURES = ("jank", "severe_jank", "jank_share", "longest_stall_ms", "counters", "fps", "slow_frames",
                 "frozen_frames", "overrun_ms")


def scene_metrics(summary: Mapping[str, Any] | None) -> dict[str, Any]:
    """A run.json entry's `metrics` from SceneSummary.to_dict(): each timing series' statistics (empty when
    not measured) and the SCENE_FIGURES."""
    metrics: dict[str, Any] = {"interval_ms": {}, "cpu_ms": {}, "gpu_ms": {}, "frame_ms": {}}
    if summary:
        metrics.update(summary["metrics"])
        metrics.update({name: summary.get(name) for name in SCENE_FIGURES})
    return metrics


def _across(dists: Sequence[Distribution | None]) -> dict[str, Any] | None:
    present = [d for d in dists if d is not None]
    if not present:
        return None
    col = {name: np.array([getattr(d, name) for d in present]) for name in Distribution.__dataclass_fields__}
    medians = [d.p50 if d is not None else None for d in dists]
    return {
        "n": int(col["n"].sum()),
        "runs": len(present),
        **{name: float(np.median(col[name])) for name, _ in PERCENTILES},
        "max": float(col["max"].max()),
        "min": float(col["min"].min()),
        **{name: float(np.median(col[name])) for name in ("mean", "stddev", "mad")},
        "hist": [int(c) for c in np.sum([d.hist for d in present], axis=0)],
        "noise_floor": _noise_or_none(medians),
        # A launch's percentile comes from its own frames: the scene's is unreliable if any launch's is.
        "unreliable": unreliable_percentiles(int(col["n"].min())),
    }


def across_launches(dists: Sequence[Distribution | None]) -> dict[str, Any] | None:
    """One metric across launches, by the rule of summarize_scene (the median over launches of each launch
    statistic, summed hist, total n); for series of their own, such as Android's platform frames."""
    return _across(dists)


def _noise_or_none(per_run_medians: Sequence[float | None]) -> float | None:
    try:
        return noise_floor(per_run_medians)
    except ValueError:  # one launch or a zero median: the gate must treat the noise as unknown
        return None


def _median_max(values: Sequence[float | None]) -> dict[str, float | None]:
    known = _finite([np.nan if v is None else v for v in values])
    if known.size == 0:
        return {"median": None, "max": None}
    return {"median": float(np.median(known)), "max": float(known.max())}


def summarize_scene(launches: Sequence[LaunchSummary], budget_ms: float) -> SceneSummary:
    _check_budget(budget_ms)
    launches = list(launches)
    for i, launch in enumerate(launches):
        if not math.isclose(launch.budget_ms, budget_ms, rel_tol=1e-9):
            raise ValueError(f"run {i} was summarised against {launch.budget_ms} ms, not {budget_ms} ms")
    modes = sorted({launch.mode for launch in launches})
    if len(modes) > 1:
        # frame_ms and jank mean different things in paced and uncapped launches.
        raise ValueError(f"launches of one scene mix modes: {modes}")
    notes: list[str] = []

    partial = [i for i, launch in enumerate(launches) if launch.partial]
    if partial:
        notes.append(f"{len(partial)} of {len(launches)} runs partial (runs {', '.join(map(str, partial))}); "
                     "their frames are included")
    if not launches:
        notes.append("no runs")

    sources: dict[str, list[int]] = {}
    for i, launch in enumerate(launches):
        if launch.gpu_ms is not None:
            sources.setdefault(str(launch.gpu_source), []).append(i)
    dropped: set[str] = set()
    gpu_source = next(iter(sources)) if len(sources) == 1 else None
    if len(sources) > 1:
        which = "; ".join(f"{src} in runs {', '.join(map(str, runs))}" for src, runs in sorted(sources.items()))
        notes.append(f"gpu_ms omitted: runs disagree on gpu_source ({which}); never compared across sources")
        dropped.add("gpu_ms")

    metrics: dict[str, dict[str, Any]] = {}
    per_run_medians: dict[str, list[float | None]] = {}
    for name in METRICS:
        dists = [getattr(launch, name) for launch in launches]
        summary = None if name in dropped else _across(dists)
        if summary is not None:
            metrics[name] = summary
            per_run_medians[name] = [d.p50 if d is not None else None for d in dists]

    known_frames = sum(launch.frame_ms.n for launch in launches if launch.frame_ms is not None)
    jank = sum(launch.jank for launch in launches)
    stalls = [launch.longest_stall_ms for launch in launches if launch.longest_stall_ms is not None]
    counter_names = sorted({k for launch in launches for k in launch.counters})
    return SceneSummary(
        runs=len(launches),
        partial_runs=len(partial),
        budget_ms=float(budget_ms),
        metrics=metrics,
        jank=jank,
        severe_jank=sum(launch.severe_jank for launch in launches),
        jank_share=jank / known_frames if known_frames else None,
        longest_stall_ms=max(stalls) if stalls else None,
        per_run_medians=per_run_medians,
        per_run=[launch.to_dict() for launch in launches],
        cold={
            "first_frame_ms": _median_max([launch.first_frame_ms for launch in launches]),
            "warmup_ms": _median_max([launch.warmup_ms for launch in launches]),
        },
        counters={k: float(np.median([launch.counters[k] for launch in launches if k in launch.counters]))
                  for k in counter_names},
        gpu_source=gpu_source,
        notes=notes,
        mode=modes[0] if modes else None,
        fps=_median_max([launch.fps for launch in launches])["median"],
        slow_frames=sum(launch.slow_frames for launch in launches),
        frozen_frames=sum(launch.frozen_frames for launch in launches),
        overrun_ms=_across([launch.overrun_ms for launch in launches]),
    )


# The percentile bootstraps over launches (an adaptive scene's score, adaptive_score.py; a differential pair's
# cost, host/verdicts/differentials.py): resamples, confidence, seed.
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_CONFIDENCE = 0.95
BOOTSTRAP_SEED = 0


def bootstrap_median_ci(values: Sequence[float], *, resamples: int = BOOTSTRAP_RESAMPLES,
                        confidence: float = BOOTSTRAP_CONFIDENCE, seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile bootstrap of the median: `resamples` resamples of the launches with replacement, drawn as
    numpy.random.default_rng(seed).integers(0, n, size=(resamples, n)); the interval's ends are the
    (1 - confidence) / 2 and (1 + confidence) / 2 quantiles (linear interpolation) of the resampled medians."""
    v = np.asarray(values, dtype=float)
    if v.size < 1:
        raise ValueError("a bootstrap needs at least one value")
    rng = np.random.default_rng(seed)
    return _percentile_interval(_resampled_medians(v, rng, resamples), confidence)


def bootstrap_difference_ci(a: Sequence[float], b: Sequence[float], *, resamples: int = BOOTSTRAP_RESAMPLES,
                            confidence: float = BOOTSTRAP_CONFIDENCE, seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile bootstrap interval of median(a) - median(b), where a and b are per-launch values of two
    scenes: each side's launches are resampled with replacement on their own (the launch is the unit), drawn
    as numpy.random.default_rng(seed).integers for a then for b; the ends are the (1 - confidence) / 2 and
    (1 + confidence) / 2 quantiles (linear interpolation) of the resampled differences."""
    va, vb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if va.size < 1 or vb.size < 1:
        raise ValueError("a bootstrap of a difference needs at least one value a side")
    rng = np.random.default_rng(seed)
    ma = _resampled_medians(va, rng, resamples)
    mb = _resampled_medians(vb, rng, resamples)
    return _percentile_interval(ma - mb, confidence)


def _resampled_medians(values: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    return np.median(values[rng.integers(0, values.size, size=(resamples, values.size))], axis=1)


def _percentile_interval(resampled: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1 - confidence) / 2
    lo, hi = np.quantile(resampled, [tail, 1 - tail])
    return float(lo), float(hi)
