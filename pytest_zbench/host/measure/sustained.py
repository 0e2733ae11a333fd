"""Sustained runs (docs/sustained.md): one long launch per scene, the device's conditions sampled during it,
and what the frames show over time: burst (the first window) against sustained (the last window) with the
ratio's confidence interval, the time to steady state, and the thermal trajectory.

    sustained_minutes(settings, case) -> minutes or None        whether a scene runs sustained
    measure_sustained(device, case, settings, minutes, ...)     the launch, sampled; SceneMeasurement.sustained
    analyse(times_s, values, ...)                               the statistics, on plain arrays

Conditions are sampled from the host over the transport (the platform probe of host/devices/conditions_probe.py) on a
thread beside the launch, so the runner's frame loop does nothing extra. Each sample is placed on the frames'
clock (t_start_ns) through the runner's progress lines: a line announcing frame d arrives after frame d-1
ended, so the smallest (host arrival - frame end) over all lines is the clock offset, too large by at most
the one-way latency of the fastest line (docs/sustained.md, "Clocks").
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ...protocol import FrameTable, Job
from ...scenes import SceneCase
from ...settings import Settings
from ...stats import frame_times, summarize_scene
from ..devices.device import Device, LaunchOutcome, safe_component
from ..devices.health import DeviceHealth
from .launches import (
    ProgressSink,
    SamplesCsv,
    add_launch,
    guarded_launch,
    launch_conditions,
    launch_samples,
    new_measurement,
)
from .results import SceneMeasurement

# The burst and sustained windows: the first and last WINDOW_S seconds of the measured frames (passively
# cooled devices are faster for about their first 30 s), shorter for a run under 5 windows long.
WINDOW_S = 30.0
MIN_WINDOWS = 5
# Each window's level is the median of its BLOCK_S-second batch medians, and the ratio's interval a bootstrap
# over those batches, so that the frames' autocorrelation (a slow frame is followed by slow frames) does not
# make it too narrow (docs/sustained.md).
BLOCK_S = 1.0
MIN_BLOCKS = 10
BOOTSTRAP = 2000
CONFIDENCE = 0.95
# Steady state: from the first half-window whose median, and every later one's, stays within STEADY_TOLERANCE
# of the sustained window's median.
STEADY_TOLERANCE = 0.03
# At most this many points of the frame-time trajectory in run.json (one median per bin).
TRAJECTORY_POINTS = 300
# A paced job at refresh_hz renders at most refresh_hz frames a second; an uncapped one is capped at this rate
# (the job's `frames` bounds the rows a launch writes; docs/sustained.md).
UNCAPPED_MAX_FPS = 2000.0
SEED = 20240619


def sustained_minutes(settings: Settings, case: SceneCase) -> float | None:
    """The minutes of the scene's sustained launch: the command line's, else the scene file's; None: a
    normal run."""
    return settings.sustained_min if settings.sustained_min is not None else case.sustained_min


def sustained_job(job: Job, minutes: float) -> Job:
    """The job of a sustained launch: the same frames, stopped by duration, with a frame cap above what the
    duration can hold (a per-frame complexity repeats its last value)."""
    duration_s = minutes * 60.0
    rate = job.refresh_hz if job.mode == "paced" else UNCAPPED_MAX_FPS
    frames = max(job.frames, math.ceil(duration_s * rate * 1.1) + 10)
    complexity = job.complexity
    if complexity is not None:
        complexity = (*complexity, *[complexity[-1]] * (job.warmup_frames + frames - len(complexity)))
    return replace(job, frames=frames, duration_s=duration_s, complexity=complexity)


# -- the launch, sampled -------------------------------------------------------------------------------------


@dataclass
class ConditionsSample:
    host_ns: int  # host monotonic clock, the middle of the probe
    probe_s: float  # how long the probe took
    conditions: dict[str, Any]  # measure.launch_conditions of the sample


class _SampledDevice:
    """The device, whose launch() samples conditions every `interval_s` while the runner runs and notes when
    each progress line arrived; everything else is the device's own (guarded_launch takes it unchanged)."""

    def __init__(self, device: Device, interval_s: float) -> None:
        self._device = device
        self.interval_s = interval_s
        self.samples: list[ConditionsSample] = []
        self.progress: list[tuple[int, int]] = []  # (host monotonic ns of arrival, frames done)
        self.launch_host_ns = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._device, name)

    def launch(self, job: Job, index: int, local_dir: Path, *, timeout_s: float,
               on_progress: Callable[[int, int], None] | None = None, **kwargs: Any) -> LaunchOutcome:
        def noted(done: int, of: int) -> None:
            self.progress.append((time.monotonic_ns(), done))
            if on_progress is not None:
                on_progress(done, of)

        stop = threading.Event()
        sampler = threading.Thread(target=self._sample_until, args=(stop,), name="zbench-sustained", daemon=True)
        self.samples, self.progress, self.launch_host_ns = [], [], time.monotonic_ns()
        sampler.start()
        try:
            return self._device.launch(job, index, local_dir, timeout_s=timeout_s, on_progress=noted, **kwargs)
        finally:
            stop.set()
            sampler.join()

    def _sample_until(self, stop: threading.Event) -> None:
        """A sample at 0, interval, 2 x interval, ... after the launch began; a probe slower than the interval
        takes the next slot (the gap shows in run.json `sustained.conditions`)."""
        start = time.monotonic_ns()
        slot = 0
        while not stop.is_set():
            before = time.monotonic_ns()
            sample = self._device.sample_conditions(facts=False)
            after = time.monotonic_ns()
            self.samples.append(ConditionsSample((before + after) // 2, (after - before) / 1e9,
                                                 launch_conditions(sample)))
            slot = max(slot + 1, math.ceil((after - start) / (self.interval_s * 1e9)))
            stop.wait(max(0.0, (start + slot * self.interval_s * 1e9 - time.monotonic_ns()) / 1e9))


def clock_offset_ns(progress: Sequence[tuple[int, int]], table: FrameTable, launch_host_ns: int,
                    process_start_ns: Any) -> tuple[int, str]:
    """(host ns - frames' clock ns, how it was found): from the progress lines when there are any, else from
    the runner's process start (result.json process_start_ns) against the moment the host asked for the
    launch, else 0 (the frames' clock is taken to be the host's)."""
    ends: dict[int, int] = {}
    for row in table.rows:
        if row.get("t_start_ns") is not None:
            ends[row["frame"] + 1] = row["t_start_ns"] + round((row.get("cpu_ms") or 0.0) * 1e6)
    offsets = [host - ends[done] for host, done in progress if done in ends]
    if offsets:
        return min(offsets), "progress_lines"
    if isinstance(process_start_ns, int) and not isinstance(process_start_ns, bool):
        return launch_host_ns - process_start_ns, "process_start"
    return 0, "host_clock"


def measure_sustained(device: Device, case: SceneCase, settings: Settings, minutes: float, results_dir: Path,
                      progress: ProgressSink | None = None, health: DeviceHealth | None = None) -> SceneMeasurement:
    """One sustained launch of the scene, its conditions sampled; the measurement's `sustained` holds the
    analysis (run.json `scenes[].sustained`)."""
    started = time.monotonic()
    measurement = new_measurement(device, case, settings)
    if measurement.job is None:
        return measurement
    job = measurement.job = sustained_job(measurement.job, minutes)
    device_dir = results_dir / safe_component(device.name)
    measurement.samples_file = device_dir / f"{case.id}.frames.csv"
    assert job.duration_s is not None
    timeout = 1.2 * job.duration_s + settings.launch_timeout(job.refresh_hz, device.spec.timeout_s)
    sampled = _SampledDevice(device, settings.sustained_interval_s)
    writer = SamplesCsv(measurement.samples_file)

    def on_progress(frame: int, of: int) -> None:
        if progress is not None:
            progress(case.id, 0, 1, frame, of)

    try:
        outcome = guarded_launch(sampled, job, 0, device_dir / safe_component(case.id) / "launch-0",  # type: ignore[arg-type]
                                 timeout, on_progress, health or DeviceHealth(), results_dir)
        add_launch(measurement, writer, outcome)
    finally:
        writer.close()
        measurement.wall_s = time.monotonic() - started
    if measurement.summaries:
        measurement.summary = summarize_scene(measurement.summaries, measurement.budget_ms)
    measurement.sustained = sustained_entry(outcome, job, sampled, minutes)
    return measurement


def sustained_entry(outcome: LaunchOutcome, job: Job, sampled: _SampledDevice, minutes: float) -> dict[str, Any]:
    """run.json `scenes[].sustained`: the launch's analysis per metric and its conditions on the frames' clock."""
    table = outcome.frames
    offset, clock = clock_offset_ns(sampled.progress, table, sampled.launch_host_ns,
                                    outcome.result.extra.get("process_start_ns"))
    measured = [row for row in table.rows if row["phase"] == "measure" and row.get("t_start_ns") is not None]
    origin = measured[0]["t_start_ns"] if measured else sampled.launch_host_ns - offset
    times_s = np.array([(row["t_start_ns"] - origin) / 1e9 for row in measured], dtype=float)
    samples = launch_samples(FrameTable(rows=measured), job.mode, partial=outcome.partial)
    metrics: dict[str, Any] = {}
    if samples is not None:
        for name, values in (("frame_ms", frame_times(samples)), ("cpu_ms", samples.cpu_ms),
                             ("gpu_ms", samples.gpu_ms)):
            if np.isfinite(values).sum() >= 2:
                metrics[name] = analyse(times_s, values).to_dict()
    conditions = [{"t_s": round((s.host_ns - offset - origin) / 1e9, 3), "probe_s": round(s.probe_s, 3),
                   **s.conditions} for s in sampled.samples]
    span_s = float(times_s[-1]) if times_s.size else 0.0
    return {
        "duration_min": minutes,
        "measured_s": round(span_s, 3),
        "measured_frames": len(measured),
        # What ended the launch: its duration, or the job's frame cap first (a scene faster than the cap's
        # rate, see sustained_job), or neither (it failed or was stopped: see the scene's issues).
        "ended_by": ("frame_cap" if len(measured) >= job.frames else
                     "duration" if outcome.complete else "failure"),
        "frame_cap": job.frames,
        "interval_s": sampled.interval_s,
        "clock": clock,
        "metrics": metrics,
        "conditions": conditions,
        "coverage": coverage(conditions, span_s, sampled.interval_s),
    }


def coverage(conditions: Sequence[dict[str, Any]], span_s: float, interval_s: float) -> dict[str, Any]:
    """How well the samples cover the measured frames: the first and last sample's time, the widest gap
    between samples (and to the span's ends), and whether that gap stayed within 1.5 intervals."""
    times = [c["t_s"] for c in conditions]
    if not times:
        return {"samples": 0, "first_s": None, "last_s": None, "max_gap_s": None, "at_interval": False}
    inside = sorted(t for t in times if 0.0 <= t <= span_s)
    edges = [0.0, *inside, span_s]
    gap = max(b - a for a, b in zip(edges, edges[1:]))
    return {"samples": len(times), "first_s": min(times), "last_s": max(times), "max_gap_s": round(gap, 3),
            "at_interval": gap <= 1.5 * interval_s}


# -- the statistics ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SustainedStats:
    window_s: float
    burst_ms: float  # the first window's level (median of its batch medians)
    sustained_ms: float  # the last window's level
    ratio: float  # sustained / burst: above 1, the run slowed down
    ci: tuple[float, float]  # CONFIDENCE interval of the ratio, block bootstrap
    steady_s: float | None  # time to steady state; None: still drifting into the last window
    trajectory: list[tuple[float, float]]  # (bin start s, median ms)

    @property
    def drift(self) -> bool:
        """The interval excludes 1: burst and sustained speed differ."""
        return not self.ci[0] <= 1.0 <= self.ci[1]

    def to_dict(self) -> dict[str, Any]:
        return {
            "window_s": round(self.window_s, 3), "burst_ms": round(self.burst_ms, 4),
            "sustained_ms": round(self.sustained_ms, 4), "ratio": round(self.ratio, 4),
            "ci": [round(self.ci[0], 4), round(self.ci[1], 4)], "confidence": CONFIDENCE, "drift": self.drift,
            "steady_s": None if self.steady_s is None else round(self.steady_s, 3),
            "trajectory": [[round(t, 3), round(v, 4)] for t, v in self.trajectory],
        }


def analyse(times_s: np.ndarray, values: np.ndarray, *, window_s: float | None = None,
            seed: int = SEED) -> SustainedStats:
    """Burst vs sustained over one launch's measured frames (`times_s` from the first one's start, `values`
    in ms; NaN values are unknown and left out)."""
    keep = np.isfinite(values)
    times_s, values = np.asarray(times_s, dtype=float)[keep], np.asarray(values, dtype=float)[keep]
    span = float(times_s[-1] - times_s[0]) if times_s.size else 0.0
    window = window_s if window_s is not None else min(WINDOW_S, span / MIN_WINDOWS)
    window = max(window, 1e-9)
    first, last = times_s < times_s[0] + window, times_s >= times_s[-1] - window
    block = min(BLOCK_S, window / MIN_BLOCKS)
    burst_batches = _batch_medians(times_s[first], values[first], block)
    sustained_batches = _batch_medians(times_s[last], values[last], block)
    burst, sustained = float(np.median(burst_batches)), float(np.median(sustained_batches))
    rng = np.random.default_rng(seed)
    ratios = _bootstrap_medians(sustained_batches, rng) / _bootstrap_medians(burst_batches, rng)
    alpha = (1.0 - CONFIDENCE) / 2
    ci = (float(np.quantile(ratios, alpha)), float(np.quantile(ratios, 1 - alpha)))
    return SustainedStats(window, burst, sustained, sustained / burst, ci,
                          _steady_after(times_s, values, window / 2, sustained), _trajectory(times_s, values, span))


def _batch_medians(times_s: np.ndarray, values: np.ndarray, block_s: float) -> np.ndarray:
    """The median of each block_s-second batch of frames (batch means, with medians: batches far apart in
    time are nearly independent even when neighbouring frames are not)."""
    return np.array(_binned(times_s, values, block_s)[1])


def _bootstrap_medians(batches: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The median of the batch medians in BOOTSTRAP resamples of the batches, drawn with replacement."""
    picks = rng.integers(0, batches.size, size=(BOOTSTRAP, batches.size))
    medians: np.ndarray = np.median(batches[picks], axis=1)
    return medians


def _steady_after(times_s: np.ndarray, values: np.ndarray, step_s: float, level: float) -> float | None:
    """The start of the first step_s bin from which every bin's median stays within STEADY_TOLERANCE of
    `level`; None when only the last bins do (the run was still drifting)."""
    starts, medians = _binned(times_s, values, step_s)
    if len(starts) > 1 and times_s[-1] - starts[-1] < step_s / 2:
        starts, medians = starts[:-1], medians[:-1]  # a last bin of a few frames is noise, not drift
    steady: float | None = None
    for start, median in zip(starts, medians):
        if abs(median / level - 1.0) > STEADY_TOLERANCE:
            steady = None
        elif steady is None:
            steady = start
    if steady is not None and steady >= times_s[-1] - 2 * step_s:
        return None  # only the sustained window itself is steady: no evidence it stopped drifting
    return steady


def _binned(times_s: np.ndarray, values: np.ndarray, bin_s: float) -> tuple[list[float], list[float]]:
    index = np.floor((times_s - times_s[0]) / bin_s).astype(int)
    starts, medians = [], []
    for i in np.unique(index):
        starts.append(float(times_s[0] + i * bin_s))
        medians.append(float(np.median(values[index == i])))
    return starts, medians


def _trajectory(times_s: np.ndarray, values: np.ndarray, span: float) -> list[tuple[float, float]]:
    starts, medians = _binned(times_s, values, max(span / (TRAJECTORY_POINTS - 1), 0.1))
    return list(zip(starts, medians))
