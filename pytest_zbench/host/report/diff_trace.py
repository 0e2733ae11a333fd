"""The diff trace of a regressed or improved scene, `<device>/<scene>.diff.trace.json`: the baseline's and the
candidate's median launch side by side in one Chrome trace, for Perfetto UI (ui.perfetto.dev) or
chrome://tracing (docs/regression.md, "Why it regressed").

Each side is a process of its own (pid 1 the baseline, pid 2 the candidate), both starting at 0: frame by frame
the two launches line up, so a frame that grew, a stage that took longer, a counter that doubled stand next to
their baseline. Per side: the frames (present interval), the CPU time, the CPU stages laid end to end from the
frame's start (record, flush, submit: each a measured duration, their order the frame's), the GPU time, and
every per-frame counter as a counter track. The median launch is the one whose median cpu_ms over its measured
frames is the median of the side's launches (the lower middle one for an even count): a typical launch, not a
lucky or an unlucky one.

The two sides' frames: in A/B the A and the B samples files of this results folder; against a run.json the
baseline entry's CSV in that run.json's folder (run.json `regression.baseline_samples_file`, found by
regression/baseline.py `run_file_frames`) and this run's. A history keeps its samples in the database, not as
a CSV: a scene judged against the history gets no diff trace (the report says so).
Same event rules as the scene trace (host/report/chrome_trace.py), whose helpers it uses.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from ...files import write_json_atomic
from ...protocol import CPU_STAGE_COLUMNS, FRAME_COLUMNS
from .chrome_trace import _float, _int, _meta, _slice, _without_overlap, trace_path

DIFF_TRACE_SUFFIX = ".diff.trace.json"
BASELINE_PID, CANDIDATE_PID = 1, 2
FRAMES, CPU, STAGES, GPU = 1, 2, 3, 4
# Columns that are not per-frame counters: the frame's identity, its timings and flags.
NOT_COUNTERS = frozenset(FRAME_COLUMNS) - {"complexity", "draw_calls", "texture_upload_bytes"} | {"launch"}


def diff_trace_path(results_dir: Path, entry: dict[str, Any]) -> Path | None:
    """Where a scene's diff trace goes: beside its frames CSV; None for a scene without one."""
    return trace_path(results_dir, entry, DIFF_TRACE_SUFFIX)


def sides(entry: dict[str, Any], results_dir: Path) -> tuple[Path, Path] | None:
    """The baseline's and the candidate's frames CSVs, or None when the baseline's are not on disk (a history
    baseline)."""
    ab = entry.get("ab") or {}
    ours = entry.get("samples_file")
    if not ours:
        return None
    if ab.get("samples_file_b"):
        return results_dir / ours, results_dir / ab["samples_file_b"]
    baseline = (entry.get("regression") or {}).get("baseline_samples_file")
    if isinstance(baseline, str) and baseline:
        return Path(baseline), results_dir / ours
    return None


def wanted(entry: dict[str, Any], results_dir: Path) -> bool:
    """A diff trace is written for a scene judged regressed or improved whose both sides' frames are on disk."""
    verdict = (entry.get("regression") or {}).get("verdict")
    return verdict in ("regressed", "improved") and sides(entry, results_dir) is not None


def read_launches(path: Path) -> dict[int, list[dict[str, str]]]:
    """A scene's frames CSV, its rows per launch; an unreadable file gives none."""
    launches: dict[int, list[dict[str, str]]] = {}
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                launches.setdefault(int(row["launch"]), []).append(row)
    except (OSError, ValueError, KeyError):
        return {}
    return launches


def median_launch(launches: dict[int, list[dict[str, str]]]) -> tuple[int, float] | None:
    """(launch, its median cpu_ms) of the launch in the middle of the side's launches by median cpu_ms."""
    medians = []
    for launch, rows in launches.items():
        cpu = sorted(v for v in (_float(r.get("cpu_ms")) for r in rows if r.get("phase", "measure") == "measure")
                     if v is not None and math.isfinite(v))
        if cpu:
            mid = len(cpu) // 2
            medians.append(((cpu[mid] + cpu[~mid]) / 2, launch))
    if not medians:
        return None
    medians.sort()
    value, launch = medians[(len(medians) - 1) // 2]
    return launch, value


def _side_events(rows: list[dict[str, str]], pid: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(track events, counter events) of one launch's frames, from its first frame's start."""
    starts: list[int] = []
    t = 0
    first_ns = next((_int(r.get("t_start_ns")) for r in rows if _int(r.get("t_start_ns")) is not None), None)
    for row in rows:
        ns = _int(row.get("t_start_ns"))
        t = (ns - first_ns) // 1000 if ns is not None and first_ns is not None else t
        starts.append(t)
        t += round((_float(row.get("present_interval_ms")) or _float(row.get("cpu_ms")) or 0.0) * 1000)
    tracks: dict[int, list[dict[str, Any]]] = {FRAMES: [], CPU: [], STAGES: [], GPU: []}
    counters: list[dict[str, Any]] = []
    counter_names = [c for c in rows[0] if c not in NOT_COUNTERS and c not in CPU_STAGE_COLUMNS] if rows else []
    for row, ts in zip(rows, starts):
        phase = row.get("phase") or "measure"
        name = f"frame {row.get('frame')}" + (" (warmup)" if phase == "warmup" else "")
        cpu, interval, gpu = _float(row.get("cpu_ms")), _float(row.get("present_interval_ms")), _float(row.get("gpu_ms"))
        args = {k: v for k, v in (("cpu_ms", cpu), ("interval_ms", interval), ("gpu_ms", gpu)) if v is not None}
        tracks[FRAMES].append(_slice(name, "frame" if phase == "measure" else "warmup", ts,
                                     interval if interval is not None else cpu, dict(args, phase=phase), pid, FRAMES))
        if cpu is not None:
            tracks[CPU].append(_slice(name, "cpu", ts, cpu, {"cpu_ms": cpu}, pid, CPU))
        at = ts
        for stage in CPU_STAGE_COLUMNS:
            ms = _float(row.get(stage))
            if ms is not None:
                tracks[STAGES].append(_slice(stage.removeprefix("cpu_").removesuffix("_ms"), "cpu_stage", at, ms,
                                             {stage: ms, "frame": row.get("frame")}, pid, STAGES))
                at += round(ms * 1000)
        if gpu is not None and row.get("gpu_source") not in ("", "none", None):
            tracks[GPU].append(_slice(name, "gpu", ts, gpu, {"gpu_ms": gpu, "gpu_source": row["gpu_source"]}, pid, GPU))
        for counter in counter_names:
            value = _float(row.get(counter))
            if value is not None:
                counters.append({"name": counter, "ph": "C", "ts": ts, "pid": pid, "tid": 0, "args": {counter: value}})
    names = {FRAMES: "frames", CPU: "CPU time", STAGES: "CPU stages (record, flush, submit)", GPU: "GPU time"}
    events: list[dict[str, Any]] = []
    for tid, track in tracks.items():
        if track:
            events.append(_meta("thread_name", pid, tid, {"name": names[tid]}))
            events.append(_meta("thread_sort_index", pid, tid, {"sort_index": tid}))
            events += _without_overlap(track)
    return events, counters


def diff_trace(entry: dict[str, Any], results_dir: Path, *, run_id: str = "") -> dict[str, Any] | None:
    """The diff trace document of one scene entry, or None when it has no two sides on disk."""
    both = sides(entry, results_dir)
    if both is None:
        return None
    events: list[dict[str, Any]] = []
    counters: list[dict[str, Any]] = []
    picked: dict[str, Any] = {}
    for pid, role, samples in ((BASELINE_PID, "baseline", both[0]), (CANDIDATE_PID, "candidate", both[1])):
        launches = read_launches(samples)
        median = median_launch(launches)
        if median is None:
            return None
        launch, value = median
        picked[role] = {"samples_file": str(samples), "launch": launch, "median_cpu_ms": value,
                        "launches": len(launches)}
        side_events, side_counters = _side_events(launches[launch], pid)
        label = f"{role}: launch {launch} of {len(launches)} (median cpu_ms {value:.4g} ms) from {Path(samples).name}"
        events += [_meta("process_name", pid, 0, {"name": label}), _meta("process_sort_index", pid, 0, {"sort_index": pid})]
        events += side_events
        counters += side_counters
    events += sorted(counters, key=lambda e: (e["pid"], e["name"], e["ts"]))
    regression = entry.get("regression") or {}
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "scene": entry["id"], "device": entry["device"], "backend": entry.get("backend"), "run_id": run_id,
            "verdict": regression.get("verdict"), "why": (regression.get("attribution") or {}).get("line"),
            "baseline": picked["baseline"], "candidate": picked["candidate"],
            "clock": "each side from its launch's first frame, microseconds: the two launches side by side",
        },
    }


def write_diff_traces(document: dict[str, Any], results_dir: Path) -> list[Path]:
    """The diff trace of every regressed or improved scene whose two sides are in this folder; paths written."""
    written = []
    for entry in document.get("scenes") or []:
        path = diff_trace_path(results_dir, entry)
        if path is None or not wanted(entry, results_dir):
            continue
        trace = diff_trace(entry, results_dir, run_id=str(document.get("run_id", "")))
        if trace is None:
            continue
        write_json_atomic(path, trace, indent=None)
        written.append(path)
    return written
