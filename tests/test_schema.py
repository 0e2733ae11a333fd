"""The published protocol schemas (pytest_zbench/schema/) are the contract: every enumeration in them is the
protocol's own tuple, the host's jobs validate against them, and the readers reject exactly what they reject."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_zbench import protocol, schema
from pytest_zbench.protocol import (
    ABSURD_COUNT,
    ABSURD_MS,
    FRAME_COLUMNS,
    GPU_SOURCES,
    MODES,
    PHASES,
    RUNNER_ISSUE_KINDS,
    Job,
    read_frames_csv,
)
from pytest_zbench.protocol.vocabulary import POWER_SOURCES
from pytest_zbench.schema import cell_value, frame_rules, violations

REPO = Path(__file__).resolve().parent.parent


def enums(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], list[Any]]]:
    """(path, values) of every `enum` (and `const`) anywhere in a schema."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("enum", "const"):
                yield path, value if key == "enum" else [value]
            else:
                yield from enums(value, path + (key,))
    elif isinstance(node, list):
        for n, value in enumerate(node):
            yield from enums(value, path + (n,))


# Where each of the protocol's enumerations appears; nothing else in the schemas may enumerate values.
EXPECTED_ENUMS = {
    ("probe", ("properties", "protocol")): [protocol.PROTOCOL_VERSION],
    ("probe", ("$defs", "backend", "properties", "features", "contains")): ["rect"],
    ("probe", ("$defs", "backend", "properties", "timer_sources", "items")): list(GPU_SOURCES),
    ("job", ("properties", "protocol")): [protocol.PROTOCOL_VERSION],
    ("job", ("properties", "mode")): list(MODES),
    ("job", ("properties", "gpu_timer")): list(GPU_SOURCES),
    ("result", ("properties", "protocol")): [protocol.PROTOCOL_VERSION],
    ("result", ("properties", "timer_source")): list(GPU_SOURCES),
    ("result", ("properties", "issues", "items", "properties", "kind")): list(RUNNER_ISSUE_KINDS),
    **{("result", ("properties", "conditions", "properties", side, "properties", "power")): list(POWER_SOURCES)
       for side in ("start", "end")},
    ("frames", ("properties", "phase")): list(PHASES),
    ("frames", ("properties", "gpu_source")): [*GPU_SOURCES, None],
    ("frames", ("properties", "disjoint")): [0, 1, True, False, None],
    ("frames", ("properties", "gl_error")): [0, 1, True, False, None],
}


@pytest.mark.parametrize("name", [*schema.PROTOCOL_SCHEMAS, "run", "check-runner"])
def test_every_schema_is_a_valid_draft_2020_12_schema(name):
    jsonschema.Draft202012Validator.check_schema(schema.load(name))


def test_every_enumeration_is_the_protocols_own():
    found = {(name, path): values for name in schema.PROTOCOL_SCHEMAS for path, values in enums(schema.load(name))}
    assert found == EXPECTED_ENUMS


def test_frames_columns_and_limits_are_the_readers():
    frames = schema.load("frames")
    assert tuple(frames["x-columns"]) == FRAME_COLUMNS
    assert tuple(frames["required"]) == FRAME_COLUMNS
    # Besides the required columns, the optional ones the protocol names (docs/runner-protocol.md).
    assert set(frames["properties"]) == {*FRAME_COLUMNS, protocol.STOLEN_COLUMN}
    rules = frame_rules()
    assert (rules.rule("stolen_ms").minimum, rules.rule("stolen_ms").maximum) == (0, ABSURD_MS)
    for column in protocol.TIMING_COLUMNS:
        assert (rules.rule(column).minimum, rules.rule(column).maximum) == (0, ABSURD_MS)
        assert rules.rule(column).unit == "ms"
    for column in protocol.COUNTER_COLUMNS:
        assert (rules.rule(column).minimum, rules.rule(column).maximum) == (0, ABSURD_COUNT)
    assert (rules.extra.minimum, rules.extra.maximum) == (0, ABSURD_COUNT)
    assert rules.rule("t_start_ns").unit == "ns"


@pytest.mark.parametrize("cell,value", [
    ("", None), ("  ", None), ("12", 12), (" 3 ", 3), ("-4", -4), ("2.5", 2.5), ("1e-3", 0.001), ("1E3", 1000.0),
    ("true", True), ("false", False), ("measure", "measure"), ("1_0", "1_0"), ("+5", "+5"), ("0x10", "0x10"),
    ("nan", "nan"), ("1e400", "1e400"), ("012", "012"),
])
def test_cell_values(cell, value):
    got = cell_value(cell)
    assert got == value and type(got) is type(value)


# Cells of every kind, for every column: the compiled rules must judge them as a JSON Schema validator does.
CELLS = ["", "0", "1", "7", "-1", "2.5", "-0.5", "3600000", "3600000.5", "1e15", "1e16", "true", "false", "True",
         "warmup", "measure", "none", "timer_query", "stopwatch", "abc", "1_0", "nan"]


@pytest.mark.parametrize("column", [*FRAME_COLUMNS, "overdraw_px"])
def test_compiled_frame_rules_agree_with_the_json_schema(column):
    frames = schema.load("frames")
    column_schema = frames["properties"].get(column, frames["additionalProperties"])
    validator = jsonschema.Draft202012Validator(column_schema)
    rule = frame_rules().rule(column)
    for cell in CELLS:
        value = cell_value(cell)
        if isinstance(value, float) and value.is_integer() and "integer" in (rule.types or ()):
            continue  # JSON Schema calls 1e15 an integer; a frames.csv integer cell is digits (cell_value)
        assert (rule.problem(value) is None) == validator.is_valid(value), (column, cell)


def test_an_unknown_keyword_in_the_frames_schema_is_refused():
    with pytest.raises(ValueError, match="pattern"):
        schema._compile("cpu_ms", {"type": "number", "pattern": "x"})


HEADER = ",".join(FRAME_COLUMNS)
GOOD = {"frame": "0", "phase": "measure", "t_start_ns": "100", "cpu_ms": "2.5", "gpu_ms": "", "gpu_source": "none",
        "present_interval_ms": "16.6", "complexity": "", "draw_calls": "3", "texture_upload_bytes": "0",
        "disjoint": "0", "gl_error": "0"}


@pytest.mark.parametrize("column,cell", [
    ("cpu_ms", "1_0"), ("cpu_ms", "+5"), ("present_interval_ms", "-1"), ("cpu_ms", "3600001"), ("draw_calls", "abc"),
    ("disjoint", "yes"), ("gl_error", "2"), ("gpu_source", "stopwatch"), ("t_start_ns", "1.5"), ("phase", "run"),
    ("frame", "x"), ("frame", "+3"), ("complexity", "1e16"),
])
def test_the_reader_rejects_what_the_schema_rejects(tmp_path, column, cell):
    cells = dict(GOOD, **{column: cell})
    assert column in frame_rules().row_problems(cells)
    path = tmp_path / "frames.csv"
    path.write_text(HEADER + "\n" + ",".join(cells[c] for c in FRAME_COLUMNS) + "\n")
    table = read_frames_csv(path)
    assert table.issues and all(i.kind == "protocol" for i in table.issues)
    assert not table.rows or table.rows[0][column] is None


def test_a_row_the_schema_accepts_is_read_without_issues(tmp_path):
    assert frame_rules().row_problems(GOOD) == {}
    path = tmp_path / "frames.csv"
    path.write_text(HEADER + "\n" + ",".join(GOOD[c] for c in FRAME_COLUMNS) + "\n")
    assert read_frames_csv(path).issues == []


def test_every_scene_job_the_host_builds_validates(tmp_path):
    from pytest_zbench.scenes import load_corpus

    cases, errors = load_corpus(REPO / "scenes")
    assert cases and not errors
    for case in cases:
        job = Job(backend="software", mode=case.mode or "paced", refresh_hz=60.0, warmup_frames=2, frames=3,
                  capture=tuple(case.capture), seed=1, scene=case.job_scene(800, 480),
                  complexity=(1.0,) * 5 if case.adaptive else None)
        assert violations("job", json.loads(job.to_json())) == [], case.id
        assert Job.from_dict(json.loads(job.to_json())) == job


def test_a_job_breaking_its_schema_is_refused_naming_the_key():
    raw = {"protocol": 1, "backend": "software", "mode": "paced", "refresh_hz": 60, "warmup_frames": 0, "frames": 1,
           "capture": [], "seed": 1, "complexity": None,
           "scene": {"id": "x", "params": {}, "width": 8, "height": 8, "features": "rect", "ops": []}}
    with pytest.raises(protocol.ProtocolError, match=r"job.schema.json: scene.features: 'rect' is not of type"):
        Job.from_dict(raw)


def test_a_probe_breaking_its_schema_is_refused_naming_the_key():
    raw = {"protocol": 1, "runner": {"name": "zinc"}, "backends": {"gles2": {"features": ["rect"]}},
           "display": {"width": "800", "height": 480}}
    with pytest.raises(protocol.ProtocolError, match=r"probe.schema.json: display.width: '800' is not of type"):
        protocol.parse_probe(raw)
    raw["display"] = {"width": 800, "height": 480}
    raw["backends"]["gles2"]["features"] = ["rrect"]
    with pytest.raises(protocol.ProtocolError, match=r"backends.gles2.features: .* does not contain items matching"):
        protocol.parse_probe(raw)


def test_the_check_runner_report_schema_uses_the_kits_enumerations():
    from pytest_zbench.conformance.report import STATUSES
    from pytest_zbench.inventory import TRANSPORTS

    report = schema.load("check-runner")
    assert report["properties"]["transport"]["enum"] == list(TRANSPORTS)
    assert report["properties"]["checks"]["items"]["properties"]["status"]["enum"] == list(STATUSES)
    assert set(report["properties"]["counts"]["required"]) == set(STATUSES)
