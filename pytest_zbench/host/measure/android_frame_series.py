"""Android's platform frames as a series of their own, per launch and per scene (docs/platform-frames.md):
`<device>/<scene>.platform.frames.csv` beside the runner's CSV, each launch's summary, and run.json's
`platform_frames` section. Never mixed with the runner's samples: the runner's frame times are what the
runner measured, these are what Android measured of the app, and `present_source` says where each series'
present times come from.

* frame_ms: FrameCompleted - IntendedVsync of each normal gfxinfo frame (Flags 0; flagged rows are counted
  in `dropped_flagged`, rows whose duration is not a time in `dropped_invalid`; the CSV keeps both, without
  a frame_ms).
* present_interval_ms: between SurfaceFlinger present times of frames that follow each other on the layer.
* Jank against the refresh period (SurfaceFlinger's, read in the launch, else the device's rate): a frame
  slower than one period is jank, slower than two severe (stats.jank_counts, Android's legacy "janky"
  count), slower than 16.7 ms and the period slow and than 700 ms frozen (stats.frame_categories, Android vitals' categories),
  and frame_ms less the period is the frame's overrun (stats.overrun, Macrobenchmark's frameOverrunMs, here
  against the refresh period rather than Android 12's per-frame deadline); a present interval over MISSED periods repeated the frame before (one missed refresh or more),
  over SEVERE_MISSED periods at least two.
* Per scene: statistics per launch, then across launches (stats.across_launches), never pooled frames.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ...stats import Distribution, across_launches, distribution, frame_categories, jank_counts, overrun, overrun_dict
from ..devices.android_frame_parsers import PlatformLaunch
from .android_frame_timeline_series import TimelineSeries
from .series_cells import MS_DIGITS, count_cell, ms_cell, rounded

PLATFORM_COLUMNS = ("launch", "source", "window", "flags", "intended_vsync_ns", "vsync_ns", "frame_completed_ns",
                    "frame_ms", "gpu_ms", "desired_present_ns", "actual_present_ns", "frame_ready_ns",
                    "present_interval_ms")
FRAME_SOURCE = "gfxinfo"  # where the frame durations come from (run.json `source`, the CSV's `source`)
PRESENT_SOURCE = "surfaceflinger"  # where the present times come from (run.json `present_source`)
PeriodSource = Literal["surfaceflinger", "device"]
MISSED = 1.5
SEVERE_MISSED = 2.5
CLOCK = "device CLOCK_MONOTONIC, ns"


@dataclass(frozen=True)
class PlatformLaunchSummary:
    launch: int
    n: int
    dropped_flagged: int
    dropped_invalid: int
    n_present: int
    period_ms: float
    period_source: PeriodSource
    frame_ms: Distribution | None
    present_interval_ms: Distribution | None
    jank: int
    severe_jank: int
    jank_share: float | None
    present_jank: int
    present_severe_jank: int
    present_jank_share: float | None
    layer: str | None
    layer_source: str | None
    baseline_frames: int
    dumps: int
    dump_interval_s: float
    ring_gaps: int
    issues: tuple[str, ...] = field(default_factory=tuple)
    slow_frames: int = 0
    frozen_frames: int = 0
    overrun_ms: Distribution | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "launch": self.launch, "n": self.n, "dropped_flagged": self.dropped_flagged,
            "dropped_invalid": self.dropped_invalid, "n_present": self.n_present,
            "period_ms": round(self.period_ms, MS_DIGITS), "period_source": self.period_source,
            "frame_ms": self.frame_ms.to_dict() if self.frame_ms else None,
            "present_interval_ms": self.present_interval_ms.to_dict() if self.present_interval_ms else None,
            "jank": self.jank, "severe_jank": self.severe_jank, "jank_share": _share(self.jank_share),
            "present_jank": self.present_jank, "present_severe_jank": self.present_severe_jank,
            "present_jank_share": _share(self.present_jank_share),
            "slow_frames": self.slow_frames, "frozen_frames": self.frozen_frames,
            "overrun_ms": overrun_dict(self.overrun_ms.to_dict() if self.overrun_ms else None),
            "layer": self.layer, "layer_source": self.layer_source, "baseline_frames": self.baseline_frames,
            "dumps": self.dumps, "dump_interval_s": round(self.dump_interval_s, 4), "ring_gaps": self.ring_gaps,
            "issues": list(self.issues),
        }


def summarize_platform_launch(index: int, launch: PlatformLaunch, device_refresh_hz: float) -> PlatformLaunchSummary:
    """One launch's platform series against the refresh period (SurfaceFlinger's when it was read)."""
    frames = launch.gfx.frames
    frame_ms = np.array([f.total_ms for f in frames], dtype=float)
    present_ms = np.array([ms for _, ms in launch.sf.intervals()], dtype=float)
    period_source: PeriodSource = "surfaceflinger" if launch.refresh_period_ns else "device"
    period_ms = launch.refresh_period_ns / 1e6 if launch.refresh_period_ns else 1000.0 / device_refresh_hz
    jank, severe, share, _ = jank_counts(frame_ms, period_ms)
    slow, frozen = frame_categories(frame_ms, period_ms)
    missed = int(np.count_nonzero(present_ms > MISSED * period_ms))
    issues = list(launch.issues)
    periods = sorted(launch.sf.periods_ns)
    if len(periods) > 1:
        issues.append(f"SurfaceFlinger's refresh period changed during the launch: "
                      f"{', '.join(f'{p / 1e6:.3f}' for p in periods)} ms")
    return PlatformLaunchSummary(
        launch=index, n=len(frames), dropped_flagged=len(launch.gfx.flagged),
        dropped_invalid=len(launch.gfx.implausible), n_present=int(present_ms.size),
        period_ms=period_ms, period_source=period_source,
        frame_ms=distribution(frame_ms), present_interval_ms=distribution(present_ms),
        jank=jank, severe_jank=severe, jank_share=share,
        present_jank=missed, present_severe_jank=int(np.count_nonzero(present_ms > SEVERE_MISSED * period_ms)),
        present_jank_share=missed / present_ms.size if present_ms.size else None,
        layer=launch.layer, layer_source=launch.layer_source, baseline_frames=launch.baseline_frames,
        dumps=launch.dumps, dump_interval_s=launch.interval_s, ring_gaps=launch.gfx.gaps + launch.sf.gaps,
        issues=tuple(issues), slow_frames=slow, frozen_frames=frozen, overrun_ms=overrun(frame_ms, period_ms),
    )


class PlatformSeries:
    """The platform frames of one scene (one side of an A/B scene): the CSV, written as each launch is kept
    (the first launch starts it afresh), and the launch summaries."""

    def __init__(self, path: Path, package: str) -> None:
        self.path = path
        self.package = package
        self.summaries: list[PlatformLaunchSummary] = []
        self._started = False
        name = path.name.removesuffix(".platform.frames.csv")
        self.timeline = TimelineSeries(path.with_name(f"{name}.frametimeline.csv"))  # fed by traced launches

    @classmethod
    def beside(cls, samples_csv: Path, package: str) -> PlatformSeries:
        """The series whose CSV sits beside the runner's `<scene>.frames.csv`: `<scene>.platform.frames.csv`."""
        name = samples_csv.name.removesuffix(".frames.csv")
        return cls(samples_csv.with_name(f"{name}.platform.frames.csv"), package)

    def add(self, index: int, launch: PlatformLaunch, device_refresh_hz: float) -> PlatformLaunchSummary:
        summary = summarize_platform_launch(index, launch, device_refresh_hz)
        self.summaries.append(summary)
        self._write(index, launch)
        if launch.timeline is not None or launch.timeline_issues:
            self.timeline.add(index, launch.timeline or [], launch.timeline_issues)
        return summary

    def _write(self, index: int, launch: PlatformLaunch) -> None:
        rows: list[tuple[int, list[Any]]] = []
        for f in launch.gfx.all_frames:
            rows.append((f.intended_vsync_ns, [
                index, FRAME_SOURCE, f.window, f.flags, f.intended_vsync_ns, count_cell(f.vsync_ns), f.frame_completed_ns,
                ms_cell(f.total_ms) if f.flags == 0 and f.plausible else "", ms_cell(f.gpu_ms), "", "", "", ""]))
        intervals = {frame.actual_present_ns: ms for frame, ms in launch.sf.intervals()}
        for p in launch.sf.frames:
            rows.append((p.actual_present_ns, [
                index, PRESENT_SOURCE, launch.layer or "", "", "", "", "", "", "", p.desired_present_ns,
                p.actual_present_ns, p.frame_ready_ns, ms_cell(intervals.get(p.actual_present_ns))]))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a" if self._started else "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            if not self._started:
                writer.writerow(PLATFORM_COLUMNS)
            for _, row in sorted(rows, key=lambda item: item[0]):
                writer.writerow(row)
        self._started = True

    def entry(self, results_dir: Path) -> dict[str, Any]:
        """run.json's `platform_frames` section of the scene."""
        launches = self.summaries
        n = sum(s.n for s in launches)
        n_present = sum(s.n_present for s in launches)
        jank = sum(s.jank for s in launches)
        present_jank = sum(s.present_jank for s in launches)
        has_presents = any(s.n_present for s in launches)
        layers = sorted({s.layer for s in launches if s.layer})
        try:
            samples = str(self.path.relative_to(results_dir))
        except ValueError:
            samples = str(self.path)
        return {
            "source": FRAME_SOURCE,
            "present_source": PRESENT_SOURCE if has_presents else None,
            "package": self.package,
            "layers": layers,
            "clock": CLOCK,
            "n": n,
            "dropped_flagged": sum(s.dropped_flagged for s in launches),
            "dropped_invalid": sum(s.dropped_invalid for s in launches),
            "n_present": n_present,
            "period_ms": round(float(np.median([s.period_ms for s in launches])), MS_DIGITS) if launches else None,
            "metrics": {
                "frame_ms": rounded(across_launches([s.frame_ms for s in launches]) or {}),
                "present_interval_ms": rounded(across_launches([s.present_interval_ms for s in launches]) or {}),
                "jank": jank,
                "severe_jank": sum(s.severe_jank for s in launches),
                "jank_share": _share(jank / n if n else None),
                "present_jank": present_jank,
                "present_severe_jank": sum(s.present_severe_jank for s in launches),
                "present_jank_share": _share(present_jank / n_present if n_present else None),
                "slow_frames": sum(s.slow_frames for s in launches),
                "frozen_frames": sum(s.frozen_frames for s in launches),
                "overrun_ms": overrun_dict(rounded(across_launches([s.overrun_ms for s in launches]) or {})),
            },
            "per_launch": [s.to_dict() for s in launches],
            "samples_file": samples,
            "issues": [{"launch": s.launch, "detail": detail} for s in launches for detail in s.issues],
            "frame_timeline": self.timeline.entry(results_dir) if self.timeline.summaries else None,
        }



def _share(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
