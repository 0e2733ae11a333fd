"""The host's readers of what a runner writes, fuzzed: read_frames_csv and read_result_json
(pytest_zbench/protocol) are given bytes no runner should write, from a third-party runner, a runner killed
mid-write or a full disk. Their contract: never raise; say what is wrong as an Issue naming the file; keep only
values the schema allows. An exception from inside them (IndexError, KeyError, UnicodeDecodeError, TypeError...)
would end the host's session instead of failing one launch.

Hypothesis generates the inputs: raw bytes, and inputs shaped like the files (a frames.csv header from the real
columns and junk, cells drawn from numbers, sentinels, quotes, separators and undecodable bytes; result.json
from JSON values of every type under the keys the reader looks at). Derandomised and bounded, so that the suite
stays fast and a failure repeats; every input that broke a reader is an @example below, so it stays fixed."""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_zbench.protocol import (
    FRAME_COLUMNS,
    GPU_SOURCES,
    PHASES,
    Issue,
    read_frames_csv,
    read_result_json,
)

# Bounded for the fast tier (seconds on a shared CI machine); derandomize: the same examples every run, so that
# CI does not turn red on a draw a later run cannot repeat. ZBENCH_FUZZ_SECONDS=N (ci/fuzz.sh) searches instead:
# each test draws fresh random examples, 100 at a time, for about N seconds; what it finds becomes an @example.
_SECONDS = float(os.environ.get("ZBENCH_FUZZ_SECONDS", "0"))
FUZZ = settings(max_examples=100, deadline=None, derandomize=not _SECONDS, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _search(test: Any, *args: Any) -> None:
    """Run a Hypothesis test once (its fixed examples), or under ZBENCH_FUZZ_SECONDS again and again with fresh
    ones until the time is up; the number of examples drawn is printed for ci/fuzz.sh's log."""
    deadline, rounds = time.monotonic() + _SECONDS, 0
    while True:
        test(*args)
        rounds += 1
        if time.monotonic() >= deadline:
            break
    if _SECONDS:
        print(f"{test.__name__}: {rounds * FUZZ.max_examples} examples at most in {rounds} rounds")


def _write(folder: Path, name: str, data: bytes) -> Path:
    """The example's file, in the test's folder (one for all its examples: each overwrites the last)."""
    path = folder / name
    path.write_bytes(data)
    return path


# ------------------------------------------------------------------------------------------------ frames.csv

CELLS = st.one_of(
    st.sampled_from(["", " ", "0", "1", "-1", "2.5", "1e3", "1e999", "-0", "nan", "NaN", "inf", "-inf", "Infinity",
                     "true", "false", "null", "warmup", "measure", "timer_query", "none", "readback", "0x10", "1_000",
                     "\u0661", "９", "00", "+1", " 3 ", "1e-400", "99999999999999999999999", "1.7976931348623157e309"]),
    st.sampled_from(list(PHASES) + list(GPU_SOURCES)),
    st.integers(min_value=-10, max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=8),
)
COLUMN_NAMES = st.one_of(st.sampled_from(FRAME_COLUMNS), st.text(max_size=6))


@st.composite
def frames_csv(draw: st.DrawFn) -> bytes:
    """A frames.csv-shaped file: a header of real and junk columns, rows of awkward cells (some of the wrong
    length), CSV quoting, line ends of every kind, and now and then a BOM, a NUL or bytes that are not UTF-8."""
    header = draw(st.lists(COLUMN_NAMES, min_size=0, max_size=len(FRAME_COLUMNS) + 3))
    if draw(st.booleans()):
        header = list(FRAME_COLUMNS) + header[:2]
    rows = []
    for frame in range(draw(st.integers(0, 12))):
        width = len(header) + draw(st.sampled_from([0, 0, 0, -1, 1]))
        cells = [draw(CELLS) for _ in range(max(0, width))]
        if cells and draw(st.booleans()) and "frame" in header[:len(cells)]:
            cells[header.index("frame")] = str(frame + draw(st.sampled_from([0, 0, -2, 5])))
        rows.append(cells)

    def quote(cell: str) -> str:
        return '"' + cell.replace('"', '""') + '"' if any(c in cell for c in ',"\r\n') else cell

    eol = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    text = eol.join(",".join(quote(c) for c in line) for line in [header, *rows])
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        cut = draw(st.integers(0, len(data)))  # a runner killed mid-write
        junk = draw(st.sampled_from([b"", b"\xff\xfe", b"\x00", b'"', b"\xc3", b"\xef\xbb\xbf"]))
        data = data[:cut] + junk + data[cut:]
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    return data


def _check_frames(path: Path, max_rows: int | None) -> None:
    table = read_frames_csv(path, max_rows=max_rows)
    for issue in table.issues:
        assert isinstance(issue, Issue) and isinstance(issue.detail, str)
        assert "frames.csv" in issue.detail, issue  # the reader's own message, naming the file
    frames = [row["frame"] for row in table.rows]
    assert frames == sorted(set(frames)), "rows kept in frame order, once each"
    for row in table.rows:
        assert isinstance(row["frame"], int) and row["frame"] >= 0
        assert max_rows is None or row["frame"] < max_rows
        assert row["phase"] in PHASES
        assert row["gpu_source"] is None or row["gpu_source"] in GPU_SOURCES
        for key, value in row.items():
            if isinstance(value, float):
                assert math.isfinite(value) and value >= 0, (key, value)


@FUZZ
@given(data=st.binary(max_size=600), max_rows=st.one_of(st.none(), st.integers(0, 20)))
def _frames_csv_of_any_bytes_reads_without_raising(folder: Path, data, max_rows):
    _check_frames(_write(folder, "frames.csv", data), max_rows)


def test_frames_csv_of_any_bytes_reads_without_raising(tmp_path):
    _search(_frames_csv_of_any_bytes_reads_without_raising, tmp_path)


@FUZZ
@given(data=frames_csv(), max_rows=st.one_of(st.none(), st.integers(0, 20)))
def _frames_csv_shaped_input_gives_the_readers_own_issues(folder: Path, data, max_rows):
    _check_frames(_write(folder, "frames.csv", data), max_rows)


def test_frames_csv_shaped_input_gives_the_readers_own_issues(tmp_path):
    _search(_frames_csv_shaped_input_gives_the_readers_own_issues, tmp_path)


# ----------------------------------------------------------------------------------------------- result.json

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(st.text(max_size=5), inner, max_size=4)),
                    max_leaves=12)
RESULT_KEYS = ["protocol", "backend", "timer_source", "present_source", "gpu", "issues", "frames_rendered",
               "host_load", "conditions", "peak_rss_kb", "activity", "ended_at_duration", "process_start_ns",
               "time_to_first_frame_ms", "machine", "captures"]


@st.composite
def result_json(draw: st.DrawFn) -> bytes:
    """A result.json-shaped document: the keys the reader and its schema check look at, each holding any JSON
    value, issues as lists of objects whose kind, detail and frame are of any type; NaN and Infinity included
    (Python's json writes them, and reads them)."""
    doc: dict[str, Any] = {}
    for key in draw(st.lists(st.sampled_from(RESULT_KEYS), unique=True, max_size=8)):
        doc[key] = draw(JSON)
    if draw(st.booleans()):
        doc["protocol"] = 1
    if draw(st.booleans()):
        issue = st.fixed_dictionaries({}, optional={"kind": JSON, "detail": JSON, "frame": JSON})
        doc["issues"] = draw(st.lists(st.one_of(issue, JSON), max_size=5))
    top: Any = doc if draw(st.integers(0, 9)) else draw(JSON)
    data = json.dumps(top, allow_nan=True).encode()
    if draw(st.integers(0, 4)) == 0:
        cut = draw(st.integers(0, len(data)))
        data = data[:cut] + draw(st.sampled_from([b"", b"\xff", b"\x00", b"\xef\xbb\xbf", b"]"])) + data[cut:]
    return data


def _check_result(path: Path) -> None:
    result = read_result_json(path)
    try:
        doc = json.loads(path.read_bytes().decode("utf-8"), parse_constant=float)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        doc = None
    if not isinstance(doc, dict):  # not a JSON object: one issue of the reader's, naming the file
        assert [i.kind for i in result.issues] == ["protocol"] and "result.json" in result.issues[0].detail, result
    else:  # the issues the runner reported are kept as reported; every other one is the reader's, naming the file
        reported = doc.get("issues")
        from_runner = len(reported) if isinstance(reported, list) else 0
        own = [i for i in result.issues if "result.json" in i.detail]
        assert len(own) >= len(result.issues) - from_runner, result.issues
    for issue in result.issues:
        assert isinstance(issue, Issue) and isinstance(issue.kind, str) and isinstance(issue.detail, str)
        assert issue.frame is None or isinstance(issue.frame, int)
    for key in ("backend", "timer_source", "present_source"):
        assert getattr(result, key) is None or isinstance(getattr(result, key), str)
    assert result.timer_source is None or result.timer_source in GPU_SOURCES
    assert isinstance(result.gpu, dict) and isinstance(result.extra, dict)
    # What the reader kept is JSON that run.json can hold: no NaN, no infinity anywhere.
    json.dumps(result.extra, allow_nan=False)
    json.dumps(result.gpu, allow_nan=False)


@FUZZ
@given(data=st.binary(max_size=400))
def _result_json_of_any_bytes_reads_without_raising(folder: Path, data):
    _check_result(_write(folder, "result.json", data))


def test_result_json_of_any_bytes_reads_without_raising(tmp_path):
    _search(_result_json_of_any_bytes_reads_without_raising, tmp_path)


@FUZZ
@given(data=result_json())
def _result_json_shaped_input_gives_the_readers_own_issues(folder: Path, data):
    _check_result(_write(folder, "result.json", data))


def test_result_json_shaped_input_gives_the_readers_own_issues(tmp_path):
    _search(_result_json_shaped_input_gives_the_readers_own_issues, tmp_path)
