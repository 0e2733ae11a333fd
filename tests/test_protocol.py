"""Runner protocol v1 (docs/runner-protocol.md): frames.csv, probe, job, result.json and progress lines.

The reader must never trust a runner: every bad cell, row, column or key becomes an Issue (or a ProtocolError
for probe and job), the untrusted value is dropped, and nothing crashes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_zbench.protocol import (
    FRAME_COLUMNS,
    GPU_SOURCES,
    PROTOCOL_VERSION,
    FramesWriter,
    Issue,
    Job,
    ProtocolError,
    format_cell,
    parse_probe,
    parse_probe_output,
    parse_progress,
    progress_line,
    read_frames_csv,
    read_result_json,
    write_result_json,
)

HEADER = ",".join(FRAME_COLUMNS)


def row(frame: int, phase: str = "measure", **cells: str) -> str:
    """One frames.csv line with sane defaults; override any column by name."""
    values = {
        "frame": str(frame),
        "phase": phase,
        "t_start_ns": str(1_000_000 + frame * 16_666_667),
        "cpu_ms": "2.5",
        "gpu_ms": "4.25",
        "gpu_source": "timer_query",
        "present_interval_ms": "16.5",
        "complexity": "",
        "draw_calls": "3",
        "texture_upload_bytes": "0",
        "disjoint": "0",
        "gl_error": "0",
    }
    values.update(cells)
    return ",".join(values[c] for c in FRAME_COLUMNS)


def write_csv(tmp_path: Path, *lines: str, header: str = HEADER) -> Path:
    path = tmp_path / "frames.csv"
    path.write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")
    return path


def kinds(table) -> list[str]:
    return [i.kind for i in table.issues]


def details(table) -> str:
    return "\n".join(i.detail for i in table.issues)


# ------------------------------------------------------------------------------------ frames.csv: good


def test_frames_writer_round_trip_has_no_issues(tmp_path):
    path = tmp_path / "frames.csv"
    written = []
    with FramesWriter(path, extra_columns=["shader_switches"]) as w:
        for i in range(5):
            values = dict(
                frame=i,
                phase="warmup" if i < 2 else "measure",
                t_start_ns=10**12 + i * 16_666_667,
                cpu_ms=1.5 + i,
                gpu_ms=0.25 * (i + 1),
                gpu_source="finish_bracket",
                present_interval_ms=16.5,
                complexity=float(i),
                draw_calls=7,
                texture_upload_bytes=4096,
                disjoint=False,
                gl_error=i == 4,
                shader_switches=2,
            )
            w.write(**values)
            written.append(values)
    table = read_frames_csv(path)
    assert table.issues == []
    assert table.counter_columns == ("shader_switches",)
    assert len(table.rows) == 5
    for got, want in zip(table.rows, written):
        for key, value in want.items():
            assert got[key] == value, key
    assert table.count("warmup") == 2 and table.count("measure") == 3
    assert table.column("cpu_ms") == [3.5, 4.5, 5.5]
    assert table.column("frame", phase=None) == [0, 1, 2, 3, 4]


def test_frames_writer_leaves_unknowns_empty_and_reader_reads_none(tmp_path):
    path = tmp_path / "frames.csv"
    with FramesWriter(path) as w:
        w.write(frame=0, phase="measure", cpu_ms=1.0)
    table = read_frames_csv(path)
    assert table.issues == []
    (r,) = table.rows
    assert r["cpu_ms"] == 1.0
    for key in ("t_start_ns", "gpu_ms", "gpu_source", "present_interval_ms", "complexity", "draw_calls",
                "texture_upload_bytes", "disjoint", "gl_error"):
        assert r[key] is None, key


def test_frames_writer_flushes_each_row_so_a_killed_runner_leaves_its_frames(tmp_path):
    path = tmp_path / "frames.csv"
    w = FramesWriter(path)
    w.write(frame=0, phase="warmup", cpu_ms=1.0)
    w.write(frame=1, phase="measure", cpu_ms=2.0)
    try:
        table = read_frames_csv(path)  # read while still open, as if the runner had been killed here
    finally:
        w.close()
    assert [r["frame"] for r in table.rows] == [0, 1]
    assert table.issues == []


def test_format_cell():
    assert format_cell(None) == ""
    assert format_cell(True) == "1" and format_cell(False) == "0"
    assert format_cell(1.5) == "1.5"
    assert format_cell(2.0) == "2"
    assert format_cell(0.1234567) == "0.123457"
    assert format_cell(12) == "12"
    assert format_cell(float("nan")) == "nan"


def test_empty_cells_are_unknown_without_an_issue(tmp_path):
    path = write_csv(tmp_path, row(0, cpu_ms="", gpu_ms="", gpu_source="", t_start_ns="", draw_calls="",
                                   disjoint="", gl_error="", present_interval_ms=""))
    table = read_frames_csv(path)
    assert table.issues == []
    (r,) = table.rows
    assert r["cpu_ms"] is None and r["gpu_ms"] is None and r["gpu_source"] is None
    assert r["t_start_ns"] is None and r["draw_calls"] is None and r["present_interval_ms"] is None
    assert r["disjoint"] is None and r["gl_error"] is None


def test_flags_and_whitespace(tmp_path):
    path = write_csv(tmp_path, row(0, disjoint="1", gl_error="false", gpu_ms=""), row(1, cpu_ms=" 3.0 ", disjoint="0"))
    table = read_frames_csv(path)
    assert table.issues == []
    assert [r["disjoint"] for r in table.rows] == [True, False]
    assert table.rows[0]["gl_error"] is False
    assert table.rows[1]["cpu_ms"] == 3.0


def test_blank_lines_are_skipped(tmp_path):
    path = write_csv(tmp_path, row(0), "", row(1), ",,,,,,,,,,,")
    table = read_frames_csv(path)
    assert [r["frame"] for r in table.rows] == [0, 1]
    assert table.issues == []


def test_extra_columns_are_counters(tmp_path):
    path = write_csv(tmp_path, row(0) + ",12,0.5", row(1) + ",,7", header=HEADER + ",overdraw,fill_ratio")
    table = read_frames_csv(path)
    assert table.issues == []
    assert table.counter_columns == ("overdraw", "fill_ratio")
    assert table.rows[0]["overdraw"] == 12.0 and table.rows[0]["fill_ratio"] == 0.5
    assert table.rows[1]["overdraw"] is None and table.rows[1]["fill_ratio"] == 7.0


def test_extra_column_bad_value_is_dropped_with_issue(tmp_path):
    path = write_csv(tmp_path, row(0) + ",lots", row(1) + ",-3", header=HEADER + ",overdraw")
    table = read_frames_csv(path)
    assert [r["overdraw"] for r in table.rows] == [None, None]
    assert kinds(table) == ["protocol", "protocol"]
    assert "overdraw" in details(table)


def test_columns_in_another_order(tmp_path):
    cols = list(reversed(FRAME_COLUMNS))
    values = {"frame": "0", "phase": "measure", "cpu_ms": "1.25", "gpu_source": "none"}
    line = ",".join(values.get(c, "") for c in cols)
    table = read_frames_csv(write_csv(tmp_path, line, header=",".join(cols)))
    assert table.issues == []
    assert table.rows[0]["cpu_ms"] == 1.25 and table.rows[0]["gpu_source"] == "none"


def test_utf8_bom_header_is_accepted(tmp_path):
    path = tmp_path / "frames.csv"
    path.write_bytes(("\ufeff" + HEADER + "\n" + row(0) + "\n" + row(1) + "\n").encode("utf-8"))
    table = read_frames_csv(path)
    assert table.issues == []
    assert [r["frame"] for r in table.rows] == [0, 1]


# ------------------------------------------------------------------------------ frames.csv: bad cells


@pytest.mark.parametrize("column", ["cpu_ms", "gpu_ms", "present_interval_ms", "complexity", "draw_calls",
                                    "texture_upload_bytes"])
@pytest.mark.parametrize("cell", ["nan", "NaN", "inf", "-inf", "Infinity", "1e400"])
def test_nan_and_inf_cells_are_dropped_as_nan_issues(tmp_path, column, cell):
    table = read_frames_csv(write_csv(tmp_path, row(0, **{column: cell}), row(1, **{column: "1"})))
    assert [r["frame"] for r in table.rows] == [0, 1]  # the row stays, the cell goes
    assert table.rows[0][column] is None
    assert table.rows[1][column] is not None
    assert kinds(table) == ["nan"]
    assert table.issues[0].frame == 0
    assert column in table.issues[0].detail


@pytest.mark.parametrize("column,cell", [
    ("cpu_ms", "-1"),
    ("gpu_ms", "-0.001"),
    ("present_interval_ms", "3600001"),
    ("gpu_ms", "4294967295000"),  # a garbage timer value (0xFFFFFFFF-like) scaled to ms
    ("draw_calls", "-5"),
    ("texture_upload_bytes", "1e16"),
])
def test_negative_and_absurd_values_are_dropped(tmp_path, column, cell):
    table = read_frames_csv(write_csv(tmp_path, row(0, **{column: cell})))
    (r,) = table.rows
    assert r[column] is None
    assert kinds(table) == ["protocol"]
    assert column in table.issues[0].detail and cell in table.issues[0].detail


def test_values_at_the_limits_are_kept(tmp_path):
    table = read_frames_csv(write_csv(tmp_path, row(0, cpu_ms="0", gpu_ms="3600000", draw_calls="1e15")))
    assert table.issues == []
    assert table.rows[0]["cpu_ms"] == 0.0 and table.rows[0]["gpu_ms"] == 3_600_000.0
    assert table.rows[0]["draw_calls"] == 1e15


@pytest.mark.parametrize("column", ["cpu_ms", "gpu_ms", "present_interval_ms", "draw_calls"])
@pytest.mark.parametrize("cell", ["abc", "1,5", "0x10", "12ms", "--1"])
def test_non_numeric_cells_are_dropped(tmp_path, column, cell):
    line = row(0, **{column: f'"{cell}"'})
    table = read_frames_csv(write_csv(tmp_path, line))
    (r,) = table.rows
    assert r[column] is None
    assert kinds(table) == ["protocol"]
    assert "not a number" in table.issues[0].detail and column in table.issues[0].detail


@pytest.mark.parametrize("cell", ["abc", "1.5", "-5", "\u00b2", "1e9"])
def test_bad_t_start_is_dropped_with_an_issue_and_never_crashes(tmp_path, cell):
    table = read_frames_csv(write_csv(tmp_path, row(0, t_start_ns=cell), row(1)))
    assert [r["frame"] for r in table.rows] == [0, 1]
    assert table.rows[0]["t_start_ns"] is None
    assert isinstance(table.rows[1]["t_start_ns"], int)
    assert kinds(table) == ["protocol"]
    assert "t_start_ns" in table.issues[0].detail


def test_unknown_gpu_source_drops_gpu_ms(tmp_path):
    table = read_frames_csv(write_csv(tmp_path, row(0, gpu_source="magic"), row(1)))
    assert table.rows[0]["gpu_ms"] is None and table.rows[0]["gpu_source"] is None
    assert table.rows[0]["cpu_ms"] == 2.5  # the rest of the row is still good
    assert table.rows[1]["gpu_ms"] == 4.25 and table.rows[1]["gpu_source"] == "timer_query"
    assert kinds(table) == ["protocol"]
    assert "magic" in table.issues[0].detail


@pytest.mark.parametrize("source", GPU_SOURCES)
def test_every_known_gpu_source_is_accepted(tmp_path, source):
    table = read_frames_csv(write_csv(tmp_path, row(0, gpu_source=source)))
    assert table.issues == []
    assert table.rows[0]["gpu_source"] == source


# ------------------------------------------------------------------------------- frames.csv: bad rows


@pytest.mark.parametrize("line", [
    "2,measure,1,2,3",  # too few
    row(2) + ",99",  # too many
])
def test_wrong_cell_count_drops_the_row(tmp_path, line):
    table = read_frames_csv(write_csv(tmp_path, row(0), row(1), line, row(3)))
    assert [r["frame"] for r in table.rows] == [0, 1, 3]
    assert kinds(table) == ["protocol"]
    assert "line 4" in table.issues[0].detail and "row dropped" in table.issues[0].detail


@pytest.mark.parametrize("frame", ["x", "1.0", "", "nan"])
def test_bad_frame_index_drops_the_row(tmp_path, frame):
    line = row(0).replace("0,", f"{frame},", 1)
    table = read_frames_csv(write_csv(tmp_path, line, row(1)))
    assert [r["frame"] for r in table.rows] == [1]
    assert kinds(table) == ["protocol"]
    assert "frame" in table.issues[0].detail


def test_negative_frame_index_is_dropped(tmp_path):
    table = read_frames_csv(write_csv(tmp_path, row(-1), row(0)))
    assert [r["frame"] for r in table.rows] == [0]
    assert kinds(table) == ["protocol"]


def test_repeated_and_out_of_order_frames_are_dropped(tmp_path):
    table = read_frames_csv(write_csv(tmp_path, row(0), row(1), row(1, cpu_ms="99"), row(3), row(2), row(4)))
    assert [r["frame"] for r in table.rows] == [0, 1, 3, 4]
    assert table.rows[1]["cpu_ms"] == 2.5  # the first frame 1 is kept, the repeat is not
    assert kinds(table) == ["protocol", "protocol"]
    assert [i.frame for i in table.issues] == [1, 2]
    assert all("out of order" in i.detail for i in table.issues)


def test_gaps_in_frame_numbers_are_allowed(tmp_path):
    table = read_frames_csv(write_csv(tmp_path, row(0), row(5), row(9)))
    assert table.issues == []
    assert [r["frame"] for r in table.rows] == [0, 5, 9]


@pytest.mark.parametrize("phase", ["measuring", "WARMUP", "", "capture"])
def test_unknown_phase_drops_the_row(tmp_path, phase):
    table = read_frames_csv(write_csv(tmp_path, row(0, phase=phase), row(1)))
    assert [r["frame"] for r in table.rows] == [1]
    assert kinds(table) == ["protocol"]
    assert "phase" in table.issues[0].detail and table.issues[0].frame == 0


def test_a_dropped_row_does_not_advance_the_order_check(tmp_path):
    # frame 5 has a bad phase; a following frame 3 is still in order relative to the last kept frame.
    table = read_frames_csv(write_csv(tmp_path, row(0), row(5, phase="bogus"), row(3)))
    assert [r["frame"] for r in table.rows] == [0, 3]


def test_truncated_last_line_from_a_killed_runner(tmp_path):
    path = tmp_path / "frames.csv"
    full = row(2)
    path.write_text("\n".join([HEADER, row(0), row(1), full[: len(full) // 2]]), encoding="utf-8")  # no newline
    table = read_frames_csv(path)
    assert [r["frame"] for r in table.rows] == [0, 1]
    assert kinds(table) == ["protocol"]
    assert "row dropped" in table.issues[0].detail


def test_truncated_inside_a_quoted_cell(tmp_path):
    path = tmp_path / "frames.csv"
    path.write_text(HEADER + "\n" + row(0) + '\n1,"meas', encoding="utf-8")
    table = read_frames_csv(path)
    assert [r["frame"] for r in table.rows] == [0]
    assert len(table.issues) == 1


def test_truncated_after_last_comma_keeps_the_row_with_unknown_last_cell(tmp_path):
    path = tmp_path / "frames.csv"
    path.write_text(HEADER + "\n" + row(0) + "\n" + row(1)[:-1], encoding="utf-8")  # gl_error cut off
    table = read_frames_csv(path)
    assert [r["frame"] for r in table.rows] == [0, 1]
    assert table.rows[1]["gl_error"] is None


# ----------------------------------------------------------------------------- frames.csv: bad files


def test_missing_file_is_an_issue(tmp_path):
    table = read_frames_csv(tmp_path / "nope.csv")
    assert table.rows == []
    assert kinds(table) == ["protocol"]
    assert "could not be read" in table.issues[0].detail


def test_directory_instead_of_file_is_an_issue(tmp_path):
    table = read_frames_csv(tmp_path)
    assert table.rows == [] and kinds(table) == ["protocol"]


def test_empty_file_is_an_issue(tmp_path):
    path = tmp_path / "frames.csv"
    path.write_bytes(b"")
    table = read_frames_csv(path)
    assert table.rows == []
    assert kinds(table) == ["protocol"] and "empty" in table.issues[0].detail


def test_header_only_is_no_rows_and_no_issue(tmp_path):
    table = read_frames_csv(write_csv(tmp_path))
    assert table.rows == [] and table.issues == []


def test_missing_value_columns_are_unknown_with_one_issue(tmp_path):
    cols = [c for c in FRAME_COLUMNS if c not in ("gpu_ms", "gpu_source", "draw_calls")]
    line = ",".join({"frame": "0", "phase": "measure", "cpu_ms": "1.5"}.get(c, "") for c in cols)
    table = read_frames_csv(write_csv(tmp_path, line, header=",".join(cols)))
    (r,) = table.rows
    assert r["cpu_ms"] == 1.5
    assert r["gpu_ms"] is None and r["gpu_source"] is None and r["draw_calls"] is None
    assert kinds(table) == ["protocol"]
    for name in ("gpu_ms", "gpu_source", "draw_calls"):
        assert name in table.issues[0].detail


@pytest.mark.parametrize("drop", ["frame", "phase"])
def test_missing_frame_or_phase_column_gives_no_rows(tmp_path, drop):
    cols = [c for c in FRAME_COLUMNS if c != drop]
    line = ",".join({"frame": "0", "phase": "measure", "cpu_ms": "1.5"}.get(c, "") for c in cols)
    table = read_frames_csv(write_csv(tmp_path, line, header=",".join(cols)))
    assert table.rows == []
    assert len(table.issues) == 2
    assert drop in table.issues[0].detail
    assert "no row can be used" in table.issues[1].detail


def test_undecodable_header_is_an_issue(tmp_path):
    path = tmp_path / "frames.csv"
    path.write_bytes(b"\xff\xfe\x00f\x00r\x00a\x00m\x00e\n")  # UTF-16, not UTF-8
    table = read_frames_csv(path)
    assert table.rows == []
    assert kinds(table) == ["protocol"]


def test_undecodable_bytes_drop_only_their_row(tmp_path):
    path = tmp_path / "frames.csv"
    bad = row(2, cpu_ms="X").encode("utf-8").replace(b"X", b"\xff\xfe")
    path.write_bytes(
        "\n".join([HEADER, row(0), row(1)]).encode("utf-8") + b"\n" + bad + b"\n" + row(3).encode("utf-8") + b"\n"
    )
    table = read_frames_csv(path)
    assert [r["frame"] for r in table.rows] == [0, 1, 3]
    assert kinds(table) == ["protocol"]
    assert table.rows[0]["cpu_ms"] == 2.5


def test_undecodable_bytes_late_in_a_long_file_keep_the_rows_before(tmp_path):
    path = tmp_path / "frames.csv"
    good = "\n".join([HEADER] + [row(i) for i in range(400)]).encode("utf-8")  # well beyond one read buffer
    path.write_bytes(good + b"\n400,measure,\xc3")  # killed mid multi-byte character
    table = read_frames_csv(path)
    assert len(table.rows) == 400
    assert len(table.issues) == 1


def test_nul_bytes_do_not_crash(tmp_path):
    path = tmp_path / "frames.csv"
    path.write_bytes((HEADER + "\n" + row(0) + "\n").encode() + b"1,measure,\x00\x00,1,,,,,,,,\n")
    table = read_frames_csv(path)
    # The row is kept with the bad cell dropped and named: its cpu_ms was measured.
    assert [r["frame"] for r in table.rows] == [0, 1]
    assert table.rows[1]["t_start_ns"] is None and table.rows[1]["cpu_ms"] == 1.0
    assert [(i.frame, "t_start_ns" in i.detail) for i in table.issues] == [(1, True)]
    assert table.issues  # whatever happened to that row, it was reported


def test_reader_never_raises_on_garbage(tmp_path):
    path = tmp_path / "frames.csv"
    garbage = bytes(range(256)) * 8
    path.write_bytes(HEADER.encode() + b"\n" + garbage)
    table = read_frames_csv(path)  # must not raise
    assert all(isinstance(i, Issue) for i in table.issues)
    assert table.issues


# ------------------------------------------------------------------------------------------- probe


def minimal_probe() -> dict:
    return {"protocol": 1, "runner": {"name": "zinc-bench", "version": "2.1"},
            "backends": {"gles2": {"features": ["rect", "rrect"]}}}


def test_valid_minimal_probe():
    probe = parse_probe(minimal_probe())
    assert probe.runner_name == "zinc-bench" and probe.runner_version == "2.1"
    assert set(probe.backends) == {"gles2"}
    backend = probe.backends["gles2"]
    assert backend.features == frozenset({"rect", "rrect"})
    assert backend.timer_sources == ("none",)  # absent means the runner has no GPU timer
    assert probe.display is None


def test_full_probe_keeps_gl_info_and_display():
    raw = minimal_probe()
    raw["backends"]["gles2"].update(timer_sources=["timer_query", "finish_bracket"], gl_vendor="Broadcom",
                                    max_texture_size=2048)
    raw["display"] = {"width": 800, "height": 480, "refresh_hz": 60.0}
    probe = parse_probe(raw)
    b = probe.backends["gles2"]
    assert b.timer_sources == ("timer_query", "finish_bracket")
    assert b.info == {"gl_vendor": "Broadcom", "max_texture_size": 2048}
    assert probe.display == {"width": 800, "height": 480, "refresh_hz": 60.0}
    assert probe.raw is raw


@pytest.mark.parametrize("mutate,key", [
    (lambda p: p.pop("protocol"), "protocol"),
    (lambda p: p.update(protocol=2), "protocol"),
    (lambda p: p.update(protocol="1"), "protocol"),
    (lambda p: p.update(protocol=True), "protocol"),
    (lambda p: p.update(protocol=1.0), "protocol"),
    (lambda p: p.pop("runner"), "runner"),
    (lambda p: p.update(runner="zinc"), "runner"),
    (lambda p: p.update(runner={"version": "1"}), "runner"),
    (lambda p: p.update(runner={"name": 3}), "runner"),
    (lambda p: p.pop("backends"), "backends"),
    (lambda p: p.update(backends={}), "backends"),
    (lambda p: p.update(backends=["gles2"]), "backends"),
    (lambda p: p.update(backends={"gles2": "yes"}), "backends.gles2"),
    (lambda p: p["backends"]["gles2"].pop("features"), "backends.gles2.features"),
    (lambda p: p["backends"]["gles2"].update(features="rect"), "backends.gles2.features"),
    (lambda p: p["backends"]["gles2"].update(features=["rect", 1]), "backends.gles2.features"),
    (lambda p: p["backends"]["gles2"].update(timer_sources="timer_query"), "backends.gles2.timer_sources"),
    (lambda p: p["backends"]["gles2"].update(timer_sources=["stopwatch"]), "backends.gles2.timer_sources"),
    (lambda p: p.update(display=[800, 480]), "display"),
])
def test_bad_probe_raises_naming_the_key(mutate, key):
    raw = minimal_probe()
    mutate(raw)
    with pytest.raises(ProtocolError, match=key.replace(".", r"\.")):
        parse_probe(raw, source="device pi3b")


def test_bad_probe_message_names_the_source():
    with pytest.raises(ProtocolError, match="device pi3b"):
        parse_probe({"protocol": 1}, source="device pi3b")


@pytest.mark.parametrize("raw", [[], "probe", None, 1])
def test_probe_must_be_an_object(raw):
    with pytest.raises(ProtocolError, match="JSON object"):
        parse_probe(raw)


def test_probe_output_plain_and_pretty():
    assert parse_probe_output(json.dumps(minimal_probe())).runner_name == "zinc-bench"
    assert parse_probe_output(json.dumps(minimal_probe(), indent=2) + "\n").runner_name == "zinc-bench"


def test_probe_output_with_log_lines_around():
    out = "\n".join([
        "EGL: using surfaceless platform",
        "{not json at all",
        json.dumps(minimal_probe()),
        "done in 0.2 s",
    ])
    assert parse_probe_output(out).backends["gles2"].features == {"rect", "rrect"}


def test_probe_output_with_two_objects_is_rejected():
    out = json.dumps(minimal_probe()) + "\n" + json.dumps(minimal_probe())
    with pytest.raises(ProtocolError, match="found 2"):
        parse_probe_output(out)


@pytest.mark.parametrize("out", ["", "no json here\nat all", "[1, 2]"])
def test_probe_output_without_an_object_is_rejected(out):
    with pytest.raises(ProtocolError):
        parse_probe_output(out)


def test_probe_output_validates_the_object_it_found():
    out = "log line\n" + json.dumps({"protocol": 1, "runner": {"name": "x"}, "backends": {}})
    with pytest.raises(ProtocolError, match="backends"):
        parse_probe_output(out)


# -------------------------------------------------------------------------------------------- job


def job_dict(**changes) -> dict:
    raw = {
        "protocol": 1, "backend": "software", "mode": "paced", "refresh_hz": 60.0,
        "warmup_frames": 2, "frames": 3, "capture": [4], "seed": 7, "complexity": None,
        "scene": {"id": "fill.alpha.x4", "params": {"layers": 4}, "width": 800, "height": 480,
                  "features": ["rect"], "ops": [{"op": "rect", "x": 0, "y": 0, "w": 800, "h": 480,
                                                  "color": "#336699FF"}]},
    }
    raw.update(changes)
    return raw


def test_job_round_trip():
    job = Job.from_dict(job_dict(complexity=[1, 2, 3, 4.5, 5]))
    again = Job.from_dict(json.loads(job.to_json()))
    assert again == job
    assert job.total_frames == 5
    assert job.complexity == (1.0, 2.0, 3.0, 4.5, 5.0)
    assert job.capture == (4,)
    assert json.loads(job.to_json())["protocol"] == PROTOCOL_VERSION


def test_job_round_trip_through_a_file(tmp_path):
    job = Job.from_dict(job_dict())
    path = tmp_path / "job.json"
    path.write_text(job.to_json(), encoding="utf-8")
    assert Job.load(path) == job
    assert Job.load(str(path)).complexity is None


def test_job_integer_refresh_becomes_float():
    job = Job.from_dict(job_dict(refresh_hz=60, mode="uncapped", warmup_frames=0, capture=[]))
    assert job.refresh_hz == 60.0 and isinstance(job.refresh_hz, float)
    assert job.mode == "uncapped" and job.capture == ()


@pytest.mark.parametrize("changes,key", [
    ({"protocol": 2}, "protocol"),
    ({"protocol": None}, "protocol"),
    ({"protocol": True}, "protocol"),
    ({"mode": "vsync"}, "mode"),
    ({"mode": 1}, "mode"),
    ({"backend": 3}, "backend"),
    ({"seed": "1"}, "seed"),
    ({"seed": True}, "seed"),
    ({"scene": "fill"}, "scene"),
    ({"warmup_frames": -1}, "warmup"),
    ({"frames": 0}, "frames"),
    ({"frames": -3}, "frames"),
    ({"frames": 3.0}, "frames"),
    ({"warmup_frames": "2"}, "warmup_frames"),
    ({"capture": 4}, "capture"),
    ({"capture": [-1]}, "capture"),
    ({"capture": [1.5]}, "capture"),
    ({"capture": [True]}, "capture"),
    ({"complexity": [1, 2]}, "complexity"),
    ({"complexity": 3}, "complexity"),
    ({"complexity": [1, 2, 3, 4, None]}, "complexity"),
    ({"complexity": [1, 2, 3, 4, "x"]}, "complexity"),
    ({"complexity": [1, 2, 3, 4, {}]}, "complexity"),
    ({"refresh_hz": 0}, "refresh_hz"),
    ({"refresh_hz": -60.0}, "refresh_hz"),
    ({"refresh_hz": "60"}, "refresh_hz"),
])
def test_job_validation_names_the_key(changes, key):
    with pytest.raises(ProtocolError, match=key):
        Job.from_dict(job_dict(**changes))


@pytest.mark.parametrize("key", ["backend", "mode", "scene", "warmup_frames", "frames", "capture", "seed",
                                 "refresh_hz"])
def test_job_missing_key_is_named(key):
    raw = job_dict()
    del raw[key]
    with pytest.raises(ProtocolError, match=f"'{key}'"):
        Job.from_dict(raw)


@pytest.mark.parametrize("key", ["id", "width", "height", "ops"])
def test_job_scene_missing_key_is_named(key):
    raw = job_dict()
    del raw["scene"][key]
    with pytest.raises(ProtocolError, match=f"scene is missing key '{key}'"):
        Job.from_dict(raw)


def test_job_load_missing_file(tmp_path):
    with pytest.raises(ProtocolError, match="nope.json"):
        Job.load(tmp_path / "nope.json")


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b"", b"\xff\xfe{\x00}\x00"])
def test_job_load_invalid_file(tmp_path, content):
    path = tmp_path / "job.json"
    path.write_bytes(content)
    with pytest.raises(ProtocolError, match="job"):
        Job.load(path)


# ------------------------------------------------------------------------------------ result.json


def test_result_round_trip(tmp_path):
    path = tmp_path / "result.json"
    write_result_json(path, backend="gles2", timer_source="timer_query", present_source="eglSwapBuffers",
                      gpu={"gl_renderer": "llvmpipe"}, issues=[Issue("timer_invalid", "0xFFFFFFFF", 3)],
                      wall_s=1.5)
    result = read_result_json(path)
    assert result.backend == "gles2" and result.timer_source == "timer_query"
    assert result.present_source == "eglSwapBuffers"
    assert result.gpu == {"gl_renderer": "llvmpipe"}
    assert result.issues == [Issue("timer_invalid", "0xFFFFFFFF", 3)]
    assert result.extra == {"wall_s": 1.5}


def test_result_missing_file(tmp_path):
    result = read_result_json(tmp_path / "result.json")
    assert [i.kind for i in result.issues] == ["protocol"]
    assert "not written" in result.issues[0].detail
    assert result.backend is None and result.gpu == {}


@pytest.mark.parametrize("content", [b"{", b"", b"\xff\xfe\x00", b"{'single': 'quotes'}"])
def test_result_invalid_json(tmp_path, content):
    path = tmp_path / "result.json"
    path.write_bytes(content)
    result = read_result_json(path)
    assert [i.kind for i in result.issues] == ["protocol"]
    assert "unreadable" in result.issues[0].detail


@pytest.mark.parametrize("payload", [[], "ok", 1, None])
def test_result_not_an_object(tmp_path, payload):
    path = tmp_path / "result.json"
    path.write_text(json.dumps(payload))
    result = read_result_json(path)
    assert [i.kind for i in result.issues] == ["protocol"]
    assert "not a JSON object" in result.issues[0].detail


def write_raw(tmp_path, **payload) -> Path:
    """A complete result.json (every key result.schema.json requires), with `payload` replacing keys."""
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"protocol": 1, "backend": "software", "timer_source": "none",
                                "present_source": "frame_delta", "gpu": {}, "issues": [], **payload}))
    return path


@pytest.mark.parametrize("version", [2, "1", True, None])
def test_result_wrong_protocol(tmp_path, version):
    result = read_result_json(write_raw(tmp_path, protocol=version, backend="software"))
    assert result.backend == "software"  # still read: partial results are data
    assert [i.kind for i in result.issues] == ["protocol"] and f"protocol {version!r}" in result.issues[0].detail


@pytest.mark.parametrize("key", ["backend", "timer_source", "present_source"])
def test_result_wrong_types_are_ignored_with_an_issue(tmp_path, key):
    result = read_result_json(write_raw(tmp_path, **{key: 5}))
    assert getattr(result, key) is None
    assert [i.kind for i in result.issues] == ["protocol"]
    assert key in result.issues[0].detail


def test_result_unknown_timer_source(tmp_path):
    result = read_result_json(write_raw(tmp_path, timer_source="stopwatch", backend="gles2"))
    assert result.timer_source is None and result.backend == "gles2"
    assert [i.kind for i in result.issues] == ["protocol"] and "stopwatch" in result.issues[0].detail


def test_result_gpu_not_an_object(tmp_path):
    result = read_result_json(write_raw(tmp_path, gpu=["llvmpipe"]))
    assert result.gpu == {}
    assert [i.kind for i in result.issues] == ["protocol"] and "gpu" in result.issues[0].detail


def test_result_issues_not_a_list(tmp_path):
    result = read_result_json(write_raw(tmp_path, issues={"kind": "nan"}))
    assert [i.kind for i in result.issues] == ["protocol"]
    assert "'issues'" in result.issues[0].detail


def test_result_issue_entries(tmp_path):
    result = read_result_json(write_raw(tmp_path, issues=[
        {"frame": 12, "kind": "gl_error", "detail": "GL_OUT_OF_MEMORY"},
        {"kind": "feature_skipped"},
        {"frame": "x", "kind": "nan", "detail": 3},
        {"frame": True, "kind": "nan"},
        "oops",
    ]))
    got = result.issues
    assert got[0] == Issue("gl_error", "GL_OUT_OF_MEMORY", 12)
    assert got[1] == Issue("feature_skipped", "", None)
    assert got[2] == Issue("nan", "3", None)
    assert got[3].frame is None
    assert got[4].kind == "protocol" and "oops" in got[4].detail
    # The entries are kept as they are, and each way they break result.schema.json is a protocol issue too.
    schema = [i.detail for i in got[5:]]
    assert all(i.kind == "protocol" for i in got[5:])
    assert schema == [
        "result.json issues.1: 'detail' is a required property (result.schema.json)",
        "result.json issues.2.detail: 3 is not of type 'string' (result.schema.json)",
        "result.json issues.2.frame: 'x' is not of type 'integer', 'null' (result.schema.json)",
        "result.json issues.3: 'detail' is a required property (result.schema.json)",
        "result.json issues.3.frame: True is not of type 'integer', 'null' (result.schema.json)",
    ]


def test_result_extra_keys_are_preserved(tmp_path):
    result = read_result_json(write_raw(tmp_path, backend="software", thermal={"start_c": 41}, build="abc"))
    assert result.extra == {"thermal": {"start_c": 41}, "build": "abc"}
    assert result.issues == []


def test_issue_dict_round_trip():
    issue = Issue("shader", "compile failed", 0)
    assert Issue.from_dict(issue.to_dict()) == issue
    assert Issue.from_dict({}) == Issue("unknown", "", None)


# --------------------------------------------------------------------------------------- progress


def test_progress_accepts_frame_of():
    assert parse_progress('{"frame": 1, "of": 2}') == (1, 2)
    assert parse_progress('  {"of": 660, "frame": 120}\n') == (120, 660)
    assert parse_progress(progress_line(5, 10)) == (5, 10)


@pytest.mark.parametrize("line", [
    "frame 1 of 2",
    "",
    "{",
    '{"frame": 1}',
    '{"of": 2}',
    '{"frame": "1", "of": 2}',
    '{"frame": 1.5, "of": 2}',
    '{"frame": 1, "of": 2, "eta": 3}',
    '{"frame": true, "of": 2}',
    '{"frame": 1, "of": false}',
    '["frame", 1]',
    '{"level": "info", "msg": "frame"}',
    'INFO {"frame": 1, "of": 2}',
    '{"frame": 1, "of": 2} trailing',
])
def test_progress_rejects_everything_else(line):
    assert parse_progress(line) is None



@pytest.mark.parametrize("gpu, disjoint, why", [
    ("0", "0", "0 (the counter did not run)"),
    ("4294.967295", "", "all-ones counter"),
    ("2147.483647", "0", "all-ones counter"),
    ("18446744073709.551615", "0", "all-ones counter"),
    ("1.5", "1", "disjoint=1"),
])
def test_gpu_garbage_is_dropped_as_timer_invalid(tmp_path, gpu, disjoint, why):
    path = write_csv(tmp_path, row(0, gpu_ms=gpu, disjoint=disjoint), row(1, gpu_ms="1.25"))
    table = read_frames_csv(path)
    assert [r["gpu_ms"] for r in table.rows] == [None, 1.25]
    assert [(i.kind, i.frame) for i in table.issues] == [("timer_invalid", 0)]
    assert why in table.issues[0].detail


def test_run_json_schema_enumerations_are_the_protocols():
    """run.schema.json spells out modes and GPU sources for run.json's readers; they are the protocol's."""
    from typing import get_args

    from pytest_zbench.host.run_record import load_schema
    from pytest_zbench.protocol import GPU_SOURCES, MODES, GpuSource, Mode

    assert MODES == get_args(Mode) and GPU_SOURCES == get_args(GpuSource)
    scene = load_schema()["properties"]["scenes"]["items"]["properties"]
    assert [m for m in scene["mode"]["enum"] if m is not None] == list(MODES)
    for key in ("gpu_source", "timer_source"):
        assert [s for s in scene[key]["enum"] if s is not None] == list(GPU_SOURCES), key


def test_every_issue_kind_the_code_emits_is_in_the_vocabulary():
    import re
    from pathlib import Path

    from pytest_zbench.protocol import ISSUE_KINDS

    package = Path(__file__).parents[1] / "pytest_zbench"
    emitted = {kind for path in package.rglob("*.py")
               for kind in re.findall(r'Issue\(\s*"([a-z_]+)"', path.read_text(encoding="utf-8"))}
    assert emitted and emitted <= set(ISSUE_KINDS), emitted - set(ISSUE_KINDS)


# ------------------------------------------------------------------ hostile output: bounds (README, Reliability)


def test_rows_beyond_the_job_are_not_read_and_reading_stops(tmp_path):
    path = write_csv(tmp_path, *(row(f) for f in range(4)), *(row(f) for f in range(4, 50_000)))
    table = read_frames_csv(path, max_rows=4)
    assert [r["frame"] for r in table.rows] == [0, 1, 2, 3]
    assert kinds(table) == ["protocol"] and "more rows than the 4 frames" in details(table)
    assert "line 6" in details(table)  # stopped at the first extra row, not at the end of the file


def test_a_frame_index_beyond_the_job_is_dropped(tmp_path):
    table = read_frames_csv(write_csv(tmp_path, row(0), row(1), row(9)), max_rows=4)
    assert [r["frame"] for r in table.rows] == [0, 1]
    assert "frame 9 is beyond the job's 4 frames" in details(table)


def test_without_a_frame_count_every_row_is_read(tmp_path):
    table = read_frames_csv(write_csv(tmp_path, *(row(f) for f in range(10))))
    assert len(table.rows) == 10 and table.issues == []


def test_non_finite_numbers_in_result_json_are_dropped_with_an_issue_naming_the_key(tmp_path):
    path = tmp_path / "result.json"
    path.write_text('{"protocol": 1, "backend": "software", "timer_source": "none", "present_source": "frame_delta", '
                    '"issues": [], "wall_ms": NaN, "gpu": {"clock": Infinity}, '
                    '"power": -Infinity, "big": 1e999, "deep": {"list": [1, NaN]}, "fine": 2.5}')
    result = read_result_json(path)
    assert result.extra == {"wall_ms": None, "power": None, "big": None, "deep": {"list": [1, None]}, "fine": 2.5}
    assert result.gpu == {"clock": None}
    assert [i.kind for i in result.issues] == ["nan"] * 5
    text = " ".join(i.detail for i in result.issues)
    for key in ("result.json wall_ms: nan", "gpu.clock: inf", "power: -inf", "big: inf", "deep.list[1]"):
        assert key in text
    json.dumps(result.extra, allow_nan=False)  # what run.json is written with


def test_result_json_over_its_cap_is_not_read(tmp_path, monkeypatch):
    import pytest_zbench.protocol as protocol

    monkeypatch.setattr(protocol, "MAX_RESULT_JSON_BYTES", 100)
    result = read_result_json(write_raw(tmp_path, backend="software", pad="x" * 200))
    assert result.backend is None
    assert [i.kind for i in result.issues] == ["protocol"] and "MAX_RESULT_JSON_BYTES" in result.issues[0].detail


def test_runner_issues_beyond_the_cap_are_counted_not_kept(tmp_path):
    from pytest_zbench.protocol import cap_issues
    from pytest_zbench.protocol.limits import MAX_ISSUES

    entries = [{"frame": i, "kind": "gl_error", "detail": "x"} for i in range(MAX_ISSUES + 7)]
    entries[-1]["kind"] = "shader"
    result = read_result_json(write_raw(tmp_path, issues=entries))
    assert len(result.issues) == MAX_ISSUES and result.issues_not_kept == {"gl_error": 6, "shader": 1}
    host = [Issue("exit", "runner exited with 1")]
    capped = cap_issues(host + result.issues, result.issues_not_kept)
    assert len(capped) == MAX_ISSUES + 1 and capped[0].kind == "exit"
    assert capped[-1].kind == "issues_capped"
    assert "8 more issues" in capped[-1].detail and "gl_error x 7" in capped[-1].detail
    assert cap_issues(host) == host


def png_bytes(width: int, height: int, *, depth: int = 8, colour: int = 6, header_only: bool = False) -> bytes:
    """A PNG of zeros, written by hand (Pillow cannot write 16-bit RGBA); `header_only`: no image data."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, 0))
    if header_only:
        return header
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[colour]
    raw = (b"\0" + b"\0" * (width * channels * depth // 8)) * height
    return header + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


@pytest.mark.parametrize("content, problem", [
    (png_bytes(16, 12), None),
    (png_bytes(17, 12), "is 17x12, the scene is 16x12"),
    (png_bytes(16, 12, depth=16), "16-bit PNG"),
    (png_bytes(16, 12, colour=2), "RGB without alpha"),
    (png_bytes(16, 12, colour=0), "greyscale"),
    (png_bytes(60000, 60000, header_only=True), "is 60000x60000"),  # a bomb's header: nothing is decoded
    (b"GIF89a" + b"\0" * 40, "not a PNG"),
    (b"\x89PNG\r\n\x1a\n", "no IHDR"),
    (b"", "not a PNG"),
])
def test_a_capture_is_checked_from_its_header(tmp_path, content, problem):
    from pytest_zbench.protocol import capture_problem

    path = tmp_path / "capture-0.png"
    path.write_bytes(content)
    found = capture_problem(path, 16, 12)
    assert found == problem if problem is None else problem in found


# -- probe: machine ------------------------------------------------------------------------------------------


def _probe_with(machine):
    probe = {"protocol": 1, "runner": {"name": "r"}, "backends": {"software": {"features": ["rect"]}}}
    return probe if machine is None else {**probe, "machine": machine}


def test_arch_families_cover_what_uname_and_python_report():
    from typing import get_args

    from pytest_zbench.protocol import ARCH_FAMILIES, ArchFamily, arch_family

    assert set(ARCH_FAMILIES) == set(get_args(ArchFamily))
    cases = {"x86_64": "x86_64", "AMD64": "x86_64", "i686": "x86", "aarch64": "aarch64", "arm64": "aarch64",
             "armv7l": "arm", "armv6l": "arm", "riscv64": "riscv64", "mips": "mips"}
    assert {name: arch_family(name) for name in cases} == cases
    assert arch_family("") is None and arch_family(None) is None and arch_family("x/../y") is None


def test_probe_machine_is_optional_and_parsed():
    from pytest_zbench.protocol import parse_probe

    assert parse_probe({**_probe_with(None)}).machine is None
    probe = parse_probe(_probe_with({"arch": "arm64", "cpu_model": "Cortex-A72", "cores": 4, "os": "Debian 12",
                                     "python": "3.11.2", "libraries": {"skia-python": "144.1"}, "emulated": False,
                                     "vendor_extra": [1]}))
    m = probe.machine
    assert (m.arch, m.family, m.cpu_model, m.cores, m.libraries, m.emulated) == (
        "arm64", "aarch64", "Cortex-A72", 4, {"skia-python": "144.1"}, False)
    assert probe.raw["machine"]["vendor_extra"] == [1]  # unknown keys are kept in the raw probe


@pytest.mark.parametrize("machine,key", [
    ("aarch64", "'machine' must be an object"),
    ({}, "machine.arch"),
    ({"arch": 64}, "machine.arch must be a string"),
    ({"arch": "aarch64", "cores": "4"}, "machine.cores"),
    ({"arch": "aarch64", "cores": True}, "machine.cores"),
    ({"arch": "aarch64", "libraries": {"skia": 144}}, "machine.libraries"),
    ({"arch": "aarch64", "emulated": "yes"}, "machine.emulated"),
])
def test_probe_machine_errors_name_the_key(machine, key):
    from pytest_zbench.protocol import ProtocolError, parse_probe

    with pytest.raises(ProtocolError, match=re.escape(key)):
        parse_probe(_probe_with(machine))
