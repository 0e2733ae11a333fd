"""Android 12+ FrameTimeline as a third platform series beside gfxinfo and SurfaceFlinger
(docs/platform-frames.md, "FrameTimeline"): `<device>/<scene>.frametimeline.csv`, one row per surface frame
of every launch, and run.json's `platform_frames.frame_timeline`.

* latency_ms: actual end minus expected end of each frame (SurfaceFlinger's prediction): late is positive.
* missed: frames with a deadline missed (any jank type but None and BufferStuffing).
* buffer_stuffing: frames SurfaceFlinger marked BufferStuffing. The app was ahead and its buffer waited in
  the queue: latency without a miss, so such frames are counted and their latency kept apart
  (`stuffing_latency_ms`), never in `missed`.
* Per scene: statistics per launch, then across launches (stats.across_launches), as the other series.
"""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path
from typing import Any

from ...stats import Distribution, across_launches, distribution
from ..devices.android_frame_timeline import SurfaceFrame, jank_type_counts
from .series_cells import count_cell, ms_cell, rounded

TIMELINE_SOURCE = "frametimeline"
TIMELINE_COLUMNS = ("launch", "layer", "token", "expected_start_ns", "expected_end_ns", "actual_start_ns",
                    "actual_end_ns", "duration_ms", "latency_ms", "jank_types", "present_type", "missed",
                    "buffer_stuffing", "gpu_composition")


def timeline_distributions(frames: list[SurfaceFrame]) -> dict[str, Distribution | None]:
    """latency_ms of the frames not stuffed, stuffing_latency_ms of the stuffed ones, duration_ms of all."""
    return {
        "latency_ms": distribution([f.latency_ms for f in frames if f.latency_ms is not None and not f.buffer_stuffing]),
        "stuffing_latency_ms": distribution([f.latency_ms for f in frames
                                             if f.latency_ms is not None and f.buffer_stuffing]),
        "duration_ms": distribution([f.duration_ms for f in frames]),
    }


def summarize_timeline_launch(index: int, frames: list[SurfaceFrame], issues: list[str]) -> dict[str, Any]:
    """One launch's FrameTimeline: counts, jank types, present types, latency and duration distributions."""
    missed = sum(f.missed for f in frames)
    return {
        "launch": index,
        "n": len(frames),
        "missed": missed,
        "missed_share": round(missed / len(frames), 6) if frames else None,
        "buffer_stuffing": sum(f.buffer_stuffing for f in frames),
        "no_prediction": sum(f.expected_end_ns is None for f in frames),
        "jank_types": jank_type_counts(frames),
        "present_types": dict(sorted(Counter(f.present_type for f in frames).items())),
        **{key: dist.to_dict() if dist else None for key, dist in timeline_distributions(frames).items()},
        "layers": sorted({f.layer for f in frames}),
        "issues": list(issues),
    }


class TimelineSeries:
    """The FrameTimeline frames of one scene: the CSV (started afresh by the first launch) and the summaries."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.summaries: list[dict[str, Any]] = []
        self._distributions: list[dict[str, Distribution | None]] = []
        self._started = False

    @classmethod
    def beside(cls, samples_csv: Path) -> TimelineSeries:
        name = samples_csv.name.removesuffix(".frames.csv")
        return cls(samples_csv.with_name(f"{name}.frametimeline.csv"))

    def add(self, index: int, frames: list[SurfaceFrame], issues: list[str]) -> dict[str, Any]:
        summary = summarize_timeline_launch(index, frames, issues)
        self.summaries.append(summary)
        self._distributions.append(timeline_distributions(frames))
        self._write(index, frames)
        return summary

    def _write(self, index: int, frames: list[SurfaceFrame]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a" if self._started else "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            if not self._started:
                writer.writerow(TIMELINE_COLUMNS)
            for f in frames:
                writer.writerow([index, f.layer, f.token, count_cell(f.expected_start_ns), count_cell(f.expected_end_ns),
                                 f.actual_start_ns, f.actual_end_ns, ms_cell(f.duration_ms), ms_cell(f.latency_ms),
                                 "|".join(f.jank_types), f.present_type, int(f.missed), int(f.buffer_stuffing),
                                 int(f.gpu_composition)])
        self._started = True

    def entry(self, results_dir: Path) -> dict[str, Any]:
        """run.json's `platform_frames.frame_timeline`."""
        launches = self.summaries
        n = sum(s["n"] for s in launches)
        missed = sum(s["missed"] for s in launches)
        jank_types: Counter[str] = Counter()
        for s in launches:
            jank_types.update(s["jank_types"])
        try:
            samples = str(self.path.relative_to(results_dir))
        except ValueError:
            samples = str(self.path)
        return {
            "source": TIMELINE_SOURCE,
            "n": n,
            "missed": missed,
            "missed_share": round(missed / n, 6) if n else None,
            "buffer_stuffing": sum(s["buffer_stuffing"] for s in launches),
            "jank_types": dict(sorted(jank_types.items())),
            "metrics": {key: rounded(across_launches([d[key] for d in self._distributions]) or {})
                        for key in ("latency_ms", "stuffing_latency_ms", "duration_ms")},
            "per_launch": launches,
            "samples_file": samples,
        }
