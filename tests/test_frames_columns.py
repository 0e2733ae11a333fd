"""frames.csv's cells judged column by column (protocol `_clean_rows`) say exactly what the per-cell rules
(`_row_from_cells`) say, row by row: the same rows, values, issues and their order. The per-cell way alone is
the reference (the reader as it was before the columns were vectorised); both read the same files.

The files: a launch's rows as the reference runner writes them (its counter columns included), with cells
replaced at random by values that each break one rule (or look as if they might: '-0', '1E5', '007').
"""

from __future__ import annotations

import csv
import io
import random
from pathlib import Path

import pytest

from pytest_zbench import protocol
from pytest_zbench.protocol import FRAME_COLUMNS, REFERENCE_COUNTER_COLUMNS, read_frames_csv

HEADER = [*FRAME_COLUMNS, *REFERENCE_COUNTER_COLUMNS]
ODD_CELLS = ["", " ", "nan", "inf", "-1", "-0", "1e999", "007", " 12", "12 ", ".5", "5.", "1_0", "abc", "0", "1",
             "true", "false", "False", "True", "2147.483647", "4294.967295", "3600000", "3600001", "1e15", "1e16",
             "0x10", "+3", "1.0", "\u00b2", "\ufffd", "timer_query", "none", "measure", "warmup", "1E5", "1e-3",
             "9223372036854775807", "12\n13"]


def launch_rows(frames: int, gpu: bool) -> list[dict[str, str]]:
    rows = []
    for frame in range(frames):
        cells = {column: "0" for column in HEADER}
        cells.update(frame=str(frame), phase="warmup" if frame < 6 else "measure",
                     t_start_ns=str(44_908_664_106_875 + frame * 16_666_667), cpu_ms=f"{0.08 + frame * 1e-4:.6f}",
                     gpu_ms=f"{1.5 + frame * 1e-3:.6f}" if gpu else "", gpu_source="timer_query" if gpu else "none",
                     present_interval_ms=f"{16.6 + (frame % 3) * 0.01:.6f}", complexity="", draw_calls="1",
                     disjoint="0" if gpu else "", gl_error="", pixels_drawn="381444", stolen_ms="0.004387")
        rows.append(cells)
    return rows


def a_file(rnd: random.Random, path: Path) -> Path:
    header = list(HEADER)
    if rnd.random() < 0.1:
        header.append(rnd.choice(["overdraw_px", "stolen_ms", "frame", ""]))  # an extra, or a column twice
    if rnd.random() < 0.1:
        header.remove(rnd.choice(HEADER[2:]))
    body = []
    odd = rnd.random() < 0.7  # else a clean launch
    for cells in launch_rows(rnd.choice([8, 40]), gpu=rnd.random() < 0.5):
        if odd and rnd.random() < 0.2:  # the host's own GPU time check: a clock's garbage, a disjoint frame
            cells.update(gpu_ms=rnd.choice(["0", "2147.483647", "4294.967295", "1.5"]),
                         disjoint=rnd.choice(["1", "true", "0", ""]))
        line = [cells.get(column, "3") for column in header]
        for _ in range(rnd.choice([0, 0, 0, 1, 2]) if odd else 0):
            line[rnd.randrange(len(line))] = rnd.choice(ODD_CELLS)
        if odd and rnd.random() < 0.05:
            line.append("1")
        body.append(line)
    if odd and rnd.random() < 0.1:
        rnd.shuffle(body)
    text = io.StringIO()
    csv.writer(text).writerows([header, *body])
    path.write_text(text.getvalue(), encoding="utf-8")
    return path


def as_read(path: Path, max_rows: int | None) -> tuple[str, tuple[str, ...], list[tuple[str, str, int | None]]]:
    table = read_frames_csv(path, max_rows=max_rows)
    return repr(table.rows), table.counter_columns, [(i.kind, i.detail, i.frame) for i in table.issues]


@pytest.mark.parametrize("seed", range(4))
def test_the_columns_and_the_cells_read_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    rnd = random.Random(seed)
    files = [a_file(rnd, tmp_path / f"{n}.csv") for n in range(60)]
    by_columns = {(f.name, m): as_read(f, m) for f in files for m in (None, 30)}
    monkeypatch.setattr(protocol, "_clean_rows", lambda *args: {})  # every row the per-cell way
    by_cells = {(f.name, m): as_read(f, m) for f in files for m in (None, 30)}
    differing = [key for key in by_cells if by_columns[key] != by_cells[key]]
    assert not differing, f"read differently: {differing[:5]}"
    # The files exercise both ways: clean launches and launches with issues of many kinds.
    assert sum(1 for _, _, issues in by_cells.values() if not issues) >= 10
    assert len({kind for _, _, issues in by_cells.values() for kind, _, _ in issues}) >= 3


def test_a_clean_launch_is_read_from_its_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A launch without a bad cell never goes the per-cell way (the point of the columns: its time)."""
    path = a_file(random.Random(0), tmp_path / "clean.csv")
    text = io.StringIO()
    rows = launch_rows(660, gpu=True)
    csv.writer(text).writerows([HEADER, *[[r[c] for c in HEADER] for r in rows]])
    path.write_text(text.getvalue(), encoding="utf-8")
    calls = []
    original = protocol._row_from_cells
    monkeypatch.setattr(protocol, "_row_from_cells", lambda *a: calls.append(a) or original(*a))
    table = read_frames_csv(path, max_rows=660)
    assert not table.issues and len(table.rows) == 660 and not calls
    assert table.rows[7]["gpu_ms"] == pytest.approx(1.507, rel=1e-12)
    assert table.rows[7]["t_start_ns"] == 44_908_664_106_875 + 7 * 16_666_667
    assert table.rows[7]["disjoint"] is False and table.rows[7]["gl_error"] is None
