"""A Chrome trace per scene, `<device>/<scene>.trace.json`, for a look at every frame in Perfetto UI
(ui.perfetto.dev, "Open trace file") or chrome://tracing (docs/report.md, "The trace").

Built from what the run already wrote: the scene's run.json entry and its per-frame CSVs, so `zbench report`
makes the same traces from a results folder. Layout, in the JSON object format of the Trace Event Format:

* one process per device (pid = the device's place in run.json's `devices`, named after it);
* per launch a track of frames: a complete event ("ph": "X") per frame from its start to the next frame's
  (its present interval), warmup frames named so; then, where known, a track of the frame's CPU time and one
  of its GPU time (the duration is measured, its position at the frame's start is not: a GPU time source
  gives a duration, not a moment), one GPU time source per launch, named on the track;
* counters ("ph": "C"): the scene's complexity per frame, the device's temperature from the conditions
  sampled before and after each launch;
* Android's own frames (gfxinfo IntendedVsync..FrameCompleted, on the device's clock like the runner's
  frame starts) on tracks of their own, spread over as many lanes as overlapping frames need;
* metadata events naming every process and track, and `otherData` saying what the trace is of.

Timestamps are integer microseconds from the first frame of the scene on the device's monotonic clock,
sorted, and events on one track never overlap (a frame's slice is cut at the next one's start): the rules
the trace validator checks (tests/trace_format.py) and Perfetto's JSON importer relies on.
"""

from __future__ import annotations

import csv
import datetime as _dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...files import write_json_atomic

TRACE_SUFFIX = ".trace.json"
# Per launch, its tracks' ids: tid = launch * TRACKS_PER_LAUNCH + one of these.
FRAMES, CPU, GPU, PLATFORM = 1, 2, 3, 4
TRACKS_PER_LAUNCH = 16
GAP_US = 1000  # between launches whose clocks do not follow each other (a runner with a clock of its own)


@dataclass
class Frame:
    launch: int
    index: int
    phase: str
    t_start_ns: int | None
    cpu_ms: float | None
    gpu_ms: float | None
    gpu_source: str
    interval_ms: float | None
    complexity: float | None


@dataclass
class Track:
    tid: int
    name: str
    events: list[dict[str, Any]] = field(default_factory=list)


def trace_path(results_dir: Path, entry: dict[str, Any], suffix: str = TRACE_SUFFIX) -> Path | None:
    """Where the scene's trace (or another of its traces, by `suffix`) goes: beside its frames CSV."""
    samples = entry.get("samples_file")
    if not samples:
        return None
    name = Path(samples).name
    stem = name[: -len(".frames.csv")] if name.endswith(".frames.csv") else Path(name).stem
    return results_dir / Path(samples).parent / f"{stem}{suffix}"


def scene_trace(entry: dict[str, Any], results_dir: Path, *, pid: int = 1, run_id: str = "") -> dict[str, Any] | None:
    """The trace document of one scene entry, or None when it measured no frame."""
    frames = read_frames(results_dir / entry["samples_file"]) if entry.get("samples_file") else []
    if not frames:
        return None
    starts = _place_launches(frames)
    t0 = min(starts.values())
    tracks: dict[int, Track] = {}
    counters: list[dict[str, Any]] = []
    gpu_shown = entry.get("gpu_valid") is not False
    for frame in frames:
        ts = starts[(frame.launch, frame.index)] - t0
        base = frame.launch * TRACKS_PER_LAUNCH
        name = f"frame {frame.index}" + (" (warmup)" if frame.phase == "warmup" else "")
        args: dict[str, Any] = {"frame": frame.index, "phase": frame.phase}
        for key in ("cpu_ms", "gpu_ms", "interval_ms"):
            value = getattr(frame, key)
            if value is not None:
                args[key] = value
        span = frame.interval_ms if frame.interval_ms is not None else frame.cpu_ms
        _track(tracks, base + FRAMES, f"launch {frame.launch}: frames").events.append(
            _slice(name, "frame" if frame.phase == "measure" else "warmup", ts, span, args, pid, base + FRAMES))
        if frame.cpu_ms is not None:
            _track(tracks, base + CPU, f"launch {frame.launch}: CPU time").events.append(
                _slice(name, "cpu", ts, frame.cpu_ms, {"cpu_ms": frame.cpu_ms}, pid, base + CPU))
        if gpu_shown and frame.gpu_ms is not None and frame.gpu_source not in ("", "none"):
            _track(tracks, base + GPU, f"launch {frame.launch}: GPU time ({frame.gpu_source})").events.append(
                _slice(name, "gpu", ts, frame.gpu_ms, {"gpu_ms": frame.gpu_ms, "gpu_source": frame.gpu_source},
                       pid, base + GPU))
        if frame.complexity is not None:
            counters.append({"name": "complexity", "ph": "C", "ts": ts, "pid": pid, "tid": 0,
                             "args": {"complexity": frame.complexity}})
    counters += _temperatures(entry, frames, starts, t0, pid)
    platform = entry.get("platform_frames") or {}
    if platform.get("samples_file"):
        for track in _platform_tracks(results_dir / platform["samples_file"], frames, t0, pid):
            tracks[track.tid] = track
    events: list[dict[str, Any]] = [
        _meta("process_name", pid, 0, {"name": f"{entry['device']} ({entry.get('backend', '')})"}),
        _meta("process_sort_index", pid, 0, {"sort_index": pid}),
    ]
    for tid, track in sorted(tracks.items()):
        events.append(_meta("thread_name", pid, tid, {"name": track.name}))
        events.append(_meta("thread_sort_index", pid, tid, {"sort_index": tid}))
        events += _without_overlap(track.events)
    events += sorted(counters, key=lambda e: (e["name"], e["ts"]))
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "scene": entry["id"], "device": entry["device"], "backend": entry.get("backend"),
            "run_id": run_id, "mode": entry.get("mode"), "budget_ms": entry.get("budget_ms"),
            "clock": "the device's monotonic clock, microseconds from the scene's first frame",
            "gpu": ("GPU time slices have a measured duration; their start is placed at the frame's start"
                    if gpu_shown else "GPU times not shown: the device's GPU time source failed the timer check"),
        },
    }


def read_frames(path: Path) -> list[Frame]:
    """The rows of a scene's frames CSV (host/measure/launches.py SamplesCsv); an unreadable file gives none."""
    out: list[Frame] = []
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                out.append(Frame(
                    launch=int(row["launch"]), index=int(row["frame"]), phase=row.get("phase") or "measure",
                    t_start_ns=_int(row.get("t_start_ns")), cpu_ms=_float(row.get("cpu_ms")),
                    gpu_ms=_float(row.get("gpu_ms")), gpu_source=row.get("gpu_source") or "",
                    interval_ms=_float(row.get("present_interval_ms")), complexity=_float(row.get("complexity"))))
    except (OSError, ValueError, KeyError):
        return []
    return out


def _place_launches(frames: list[Frame]) -> dict[tuple[int, int], int]:
    """Each frame's start in microseconds. Launches on one device clock keep their real gaps; a launch whose
    clock does not follow the one before (a runner counting from its own start) goes after it; a frame
    without a start follows the frame before it."""
    starts: dict[tuple[int, int], int] = {}
    previous_end: int | None = None
    for launch in sorted({f.launch for f in frames}):
        rows = [f for f in frames if f.launch == launch]
        first = next((f.t_start_ns for f in rows if f.t_start_ns is not None), None)
        offset = 0
        if first is not None and previous_end is not None and first // 1000 < previous_end:
            offset = previous_end + GAP_US - first // 1000
        at = (first // 1000 + offset) if first is not None else (previous_end or 0) + GAP_US
        for row in rows:
            if row.t_start_ns is not None:
                at = row.t_start_ns // 1000 + offset
            starts[(launch, row.index)] = at
            span = row.interval_ms if row.interval_ms is not None else (row.cpu_ms or 0.0)
            at += max(1, round(span * 1000))
        previous_end = at
    return starts


def _temperatures(entry: dict[str, Any], frames: list[Frame], starts: dict[tuple[int, int], int], t0: int,
                  pid: int) -> list[dict[str, Any]]:
    """The device's temperature before and after each launch (its conditions samples), at the launch's first
    and last frame: the samples are on the wall clock, the frames on the device's."""
    out = []
    for record in entry.get("launches") or []:
        launch = record.get("launch")
        rows = [f for f in frames if f.launch == launch]
        if not rows:
            continue
        for when, row in (("before", rows[0]), ("after", rows[-1])):
            temp = ((record.get("conditions") or {}).get(when) or {}).get("temp_c")
            if isinstance(temp, (int, float)) and not isinstance(temp, bool):
                out.append({"name": "temperature (°C)", "ph": "C", "ts": starts[(launch, row.index)] - t0,
                            "pid": pid, "tid": 0, "args": {"temp_c": temp}})
    return out


def _platform_tracks(path: Path, frames: list[Frame], t0: int, pid: int) -> list[Track]:
    """Android's frames (gfxinfo rows with a duration) per launch, on as many lanes as overlap needs; the
    device clock is the runner's, so they line up with the runner's frames."""
    tracks: list[Track] = []
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
    except (OSError, ValueError):
        return tracks
    by_launch: dict[int, list[tuple[int, int, dict[str, Any]]]] = {}
    for row in rows:
        start, end = _int(row.get("intended_vsync_ns")), _int(row.get("frame_completed_ns"))
        if start is None or end is None or end < start or not row.get("frame_ms"):
            continue
        by_launch.setdefault(int(row["launch"]), []).append((start // 1000 - t0, end // 1000 - t0, row))
    for launch, spans in sorted(by_launch.items()):
        lanes: list[Track] = []
        for start, end, row in sorted(spans, key=lambda s: s[0]):
            lane = next((t for t in lanes if not t.events or t.events[-1]["ts"] + t.events[-1]["dur"] <= start), None)
            if lane is None:
                tid = launch * TRACKS_PER_LAUNCH + PLATFORM + len(lanes)
                lane = Track(tid, f"launch {launch}: Android frames (gfxinfo, lane {len(lanes)})")
                lanes.append(lane)
            args = {"frame_ms": _float(row.get("frame_ms")), "window": row.get("window") or ""}
            if row.get("gpu_ms"):
                args["gpu_ms"] = _float(row.get("gpu_ms"))
            lane.events.append({"name": "Android frame", "cat": "platform", "ph": "X", "ts": start,
                                "dur": max(0, end - start), "pid": pid, "tid": lane.tid, "args": args})
        tracks += lanes[: TRACKS_PER_LAUNCH - PLATFORM]
    return tracks


def _track(tracks: dict[int, Track], tid: int, name: str) -> Track:
    if tid not in tracks:
        tracks[tid] = Track(tid, name)
    return tracks[tid]


def _slice(name: str, cat: str, ts: int, ms: float | None, args: dict[str, Any], pid: int, tid: int) -> dict[str, Any]:
    return {"name": name, "cat": cat, "ph": "X", "ts": ts, "dur": max(0, round((ms or 0.0) * 1000)), "pid": pid,
            "tid": tid, "args": args}


def _without_overlap(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sorted by start; each slice cut at the next one's start (a frame's CPU time may run past the next
    frame's start only where a clock lied: the slice ends where the next begins)."""
    ordered = sorted(events, key=lambda e: e["ts"])
    for current, following in zip(ordered, ordered[1:]):
        if current["ts"] + current["dur"] > following["ts"]:
            current["dur"] = following["ts"] - current["ts"]
            current["args"] = {**current["args"], "cut": "at the next frame's start"}
    return ordered


def _meta(name: str, pid: int, tid: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "ph": "M", "ts": 0, "pid": pid, "tid": tid, "args": args}


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text not in (None, "") else None
    except ValueError:
        return None


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def write_traces(document: dict[str, Any], results_dir: Path) -> list[Path]:
    """Every measured scene's trace beside its CSV; the paths written."""

    order = list(document.get("devices") or {})
    written = []
    for entry in document.get("scenes") or []:
        path = trace_path(results_dir, entry)
        pid = order.index(entry["device"]) + 1 if entry["device"] in order else len(order) + 1
        trace = scene_trace(entry, results_dir, pid=pid, run_id=str(document.get("run_id", ""))) if path else None
        if path is None or trace is None:
            continue
        trace["otherData"]["written_utc"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        write_json_atomic(path, trace, indent=None)
        written.append(path)
    return written
