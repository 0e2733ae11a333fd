"""A validator of Chrome trace files, written from the Trace Event Format's documented rules (the JSON Object
Format: traceEvents, phases, complete and counter and metadata events) plus the stricter ones pytest-zbench
promises and Perfetto's JSON importer relies on: integer microseconds, per track sorted and never
overlapping complete events (Perfetto drops slices that overlap without nesting), named processes and tracks.

`problems(document)` lists every broken rule as a sentence; an empty list is a valid trace.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

PHASES = set("BEXiIbneCMsftPOND(") | {"R", "c", "T", "p", "S", "F"}
METADATA = {"process_name": "name", "process_labels": "labels", "process_sort_index": "sort_index",
            "thread_name": "name", "thread_sort_index": "sort_index"}
TIME_UNITS = {"ms", "ns"}
INSTANT_SCOPES = {"g", "p", "t"}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value))


def problems(document: Any) -> list[str]:
    out: list[str] = []
    if isinstance(document, list):
        events = document
    elif isinstance(document, dict):
        events = document.get("traceEvents")
        if not isinstance(events, list):
            return ["the object form needs a traceEvents array"]
        unit = document.get("displayTimeUnit")
        if unit is not None and unit not in TIME_UNITS:
            out.append(f"displayTimeUnit {unit!r} is not one of {sorted(TIME_UNITS)}")
        if "otherData" in document and not isinstance(document["otherData"], dict):
            out.append("otherData must be an object")
    else:
        return ["a trace is a JSON array of events or an object with traceEvents"]

    tracks: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    counters: dict[tuple[int, str], list[float]] = defaultdict(list)
    named_processes: set[int] = set()
    named_threads: set[tuple[int, int]] = set()
    used_processes: set[int] = set()
    open_slices: dict[tuple[int, int], list[str]] = defaultdict(list)
    for n, event in enumerate(events):
        where = f"event {n}"
        if not isinstance(event, dict):
            out.append(f"{where}: not an object")
            continue
        ph = event.get("ph")
        if ph not in PHASES:
            out.append(f"{where}: phase {ph!r} is not a phase of the format")
            continue
        where = f"event {n} ({ph} {event.get('name')!r})"
        if not isinstance(event.get("name"), str):
            out.append(f"{where}: name must be a string")
        if not _is_int(event.get("pid")) or not _is_int(event.get("tid")):
            out.append(f"{where}: pid and tid must be integers")
            continue
        if "args" in event and not isinstance(event["args"], dict):
            out.append(f"{where}: args must be an object")
        if "cat" in event and not isinstance(event["cat"], str):
            out.append(f"{where}: cat must be a string")
        pid, tid = event["pid"], event["tid"]
        if ph == "M":
            key = METADATA.get(event.get("name"))  # type: ignore[arg-type]
            if key is None:
                out.append(f"{where}: metadata event name must be one of {sorted(METADATA)}")
                continue
            value = (event.get("args") or {}).get(key)
            if (key == "sort_index" and not _is_int(value)) or (key != "sort_index" and not isinstance(value, str)):
                out.append(f"{where}: args.{key} is missing or of the wrong type")
            if event["name"] == "process_name":
                named_processes.add(pid)
            elif event["name"] == "thread_name":
                named_threads.add((pid, tid))
            continue
        ts = event.get("ts")
        if not _is_number(ts):
            out.append(f"{where}: ts must be a finite number of microseconds")
            continue
        if not _is_int(ts) or ts < 0:
            out.append(f"{where}: ts must be a non-negative integer of microseconds (got {ts!r})")
        used_processes.add(pid)
        if ph == "X":
            dur = event.get("dur")
            if not _is_number(dur) or dur < 0:
                out.append(f"{where}: a complete event needs a non-negative dur")
                continue
            if not _is_int(dur):
                out.append(f"{where}: dur must be an integer of microseconds (got {dur!r})")
            tracks[(pid, tid)].append(event)
        elif ph == "C":
            args = event.get("args")
            if not isinstance(args, dict) or not args or not all(_is_number(v) for v in args.values()):
                out.append(f"{where}: a counter event needs args of numbers")
            counters[(pid, str(event.get("name")))].append(ts)
        elif ph in ("i", "I"):
            if event.get("s", "t") not in INSTANT_SCOPES:
                out.append(f"{where}: instant scope s must be one of {sorted(INSTANT_SCOPES)}")
            tracks[(pid, tid)]  # a track of its own to name
        elif ph == "B":
            open_slices[(pid, tid)].append(str(event.get("name")))
            tracks[(pid, tid)]
        elif ph == "E":
            if not open_slices[(pid, tid)]:
                out.append(f"{where}: an end event without a begin on its track")
            else:
                open_slices[(pid, tid)].pop()
    for (pid, tid), slices in sorted(tracks.items()):
        track = f"track pid {pid} tid {tid}"
        if (pid, tid) not in named_threads:
            out.append(f"{track}: no thread_name metadata")
        for a, b in zip(slices, slices[1:]):
            if b["ts"] < a["ts"]:
                out.append(f"{track}: events not sorted by ts ({a['name']!r} at {a['ts']} before "
                           f"{b['name']!r} at {b['ts']})")
                break
            if a["ts"] + a["dur"] > b["ts"]:
                out.append(f"{track}: {a['name']!r} ({a['ts']}+{a['dur']}) overlaps {b['name']!r} at {b['ts']}")
                break
    for (pid, name), times in sorted(counters.items()):
        if times != sorted(times):
            out.append(f"counter {name!r} of pid {pid}: samples not sorted by ts")
    for pid in sorted(used_processes - named_processes):
        out.append(f"pid {pid}: no process_name metadata")
    for (pid, tid), names in sorted(open_slices.items()):
        if names:
            out.append(f"track pid {pid} tid {tid}: begin events without an end: {names}")
    return out
