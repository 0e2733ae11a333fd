"""Successive dumps cut from one recorded dump (tests/data/android), and a reading of them that shares no code
with the parsers under test: what the tests expect is computed here, from the files, independently.

A ring buffer dumped again while frames arrive prints a window of rows that slides: `ring_windows` keeps
the recorded text as it is and replaces the rows of one block by such a window (rows are never altered), so
overlapping dumps of real rows exercise what a real device's successive dumps do.
"""

from __future__ import annotations

import csv
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data" / "android"
MARK = "---PROFILEDATA---"


def data(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def _block_spans(lines: list[str]) -> list[tuple[int, int]]:
    """(first row line, end) of each PROFILEDATA block: the header is the line before the first row."""
    spans, i = [], 0
    while i < len(lines):
        if lines[i].strip() == MARK:
            end = next(k for k in range(i + 1, len(lines)) if lines[k].strip() == MARK)
            spans.append((i + 2, end))
            i = end + 1
        else:
            i += 1
    return spans


def ring_windows(text: str, block: int, size: int, step: int) -> list[str]:
    """Dumps of the recorded `text` in which block number `block` shows rows [s, s + size) for s = 0, step, ..."""
    lines = text.splitlines(keepends=True)
    first, end = _block_spans(lines)[block]
    rows = lines[first:end]
    dumps = []
    for start in range(0, max(len(rows) - size, 0) + 1, step):
        window = rows[start:start + size]
        if window and not window[-1].endswith("\n"):
            window[-1] += "\n"
        dumps.append("".join(lines[:first] + window + lines[end:]))
    return dumps


def latency_windows(text: str, size: int, step: int) -> list[str]:
    """Dumps of a recorded `SurfaceFlinger --latency` output showing rows [s, s + size) after its period line."""
    period, *rows = text.splitlines(keepends=True)
    return ["".join([period, *rows[start:start + size]]) for start in range(0, max(len(rows) - size, 0) + 1, step)]


def gfx_rows(text: str) -> list[dict[str, int]]:
    """Every row of every block, as {column: value}, in dump order (header read by name, trailing comma dropped)."""
    lines = text.lstrip("\ufeff").splitlines()
    out = []
    for first, end in _block_spans(lines):
        header = next(csv.reader([lines[first - 1]]))
        for line in lines[first:end]:
            if line.strip():
                cells = next(csv.reader([line]))
                out.append({name: int(cell) for name, cell in zip(header, cells) if name})
    return out


def frame_key(row: dict[str, int]) -> tuple[int, int, int]:
    return row["IntendedVsync"], row["DrawStart"], row["SwapBuffers"]


def plausible(row: dict[str, int]) -> bool:
    """A frame time: completed, and at most 10 s long (longer is a garbage timestamp, as Android's JankTracker says)."""
    return 0 < row["FrameCompleted"] - row["IntendedVsync"] <= 10_000_000_000


def latency_rows(text: str) -> list[tuple[int, int, int]]:
    return [tuple(int(v) for v in line.split()) for line in text.splitlines()[1:] if line.strip()]  # type: ignore[misc]
