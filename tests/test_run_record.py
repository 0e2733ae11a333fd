"""write_run: each session-end artifact is written on its own (README, Reliability); a value that breaks one
never costs the others, and the failure is named."""

from __future__ import annotations

import json
import math

import pytest

import pytest_zbench.host.report.html as html_report
import pytest_zbench.host.run_record as run_record
from pytest_zbench.host.run_record import RunRecord, finite_document, write_run


def record_with_one_scene(**entry) -> RunRecord:
    record = RunRecord(run_id="r" * 8, started_utc="2025-01-01T00:00:00+00:00", app={}, suite_version="0")
    record.scenes.append({"id": "faults.one", "device": "local", "outcome": "passed", "issues": [],
                          "metrics": {}, "runs": 1, "complete_runs": 1, "partial": False, **entry})
    return record


def test_a_report_that_cannot_be_drawn_does_not_cost_run_json(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("a value the report cannot draw")

    monkeypatch.setattr(html_report, "write_report", broken)
    artifacts = write_run(record_with_one_scene(), ("local",), tmp_path)
    written = next(tmp_path.glob("run*.json"))
    assert json.loads(written.read_text())["scenes"][0]["id"] == "faults.one"
    assert artifacts.failures == [f"{tmp_path / 'report.html'} could not be written: KeyError: "
                                  "'a value the report cannot draw'"]


def test_run_json_that_cannot_be_written_does_not_cost_the_report(tmp_path, monkeypatch):
    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(run_record, "write_json_atomic", full_disk)
    artifacts = write_run(record_with_one_scene(), ("local",), tmp_path)
    assert (tmp_path / "report.html").is_file()
    assert len(artifacts.failures) == 1 and "No space left on device" in artifacts.failures[0]
    assert not list(tmp_path.glob("run*.json"))


def test_a_non_finite_number_is_written_as_null_and_named(tmp_path):
    artifacts = write_run(record_with_one_scene(metrics={"cpu_ms": {"p50": math.nan, "p95": math.inf}}),
                          ("local",), tmp_path)
    document = json.loads((tmp_path / "run.invalid.json").read_text())  # allow_nan=False passed
    assert document["scenes"][0]["metrics"]["cpu_ms"] == {"p50": None, "p95": None}
    assert "scenes/0/metrics/cpu_ms/p50: nan is not a JSON number; written as null" in artifacts.schema_errors
    assert (tmp_path / "report.html").is_file() and artifacts.failures == []


@pytest.mark.parametrize("value, expected", [(1.5, 1.5), (math.nan, None), ([1, -math.inf], [1, None]),
                                             ({"a": (math.inf,)}, {"a": [None]}), ("nan", "nan")])
def test_finite_document(value, expected):
    assert finite_document(value)[0] == expected
