"""Settings of the regression gate: defaults, baseline keywords and files, threshold and metric validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_zbench.errors import UsageError
from pytest_zbench.regression.gate import GATING_METRICS
from pytest_zbench.settings import DEFAULT_GATE_METRICS, build_settings


def build(root: Path, calibrate: bool = False, **cli):
    return build_settings(lambda option: cli.get(option.name), root, quick=False, calibrate=calibrate)


def test_defaults(tmp_path):
    s = build(tmp_path)
    assert s.history.kind == "sqlite" and s.history.path == tmp_path / ".zbench" / "history.sqlite"
    assert (s.baseline, s.baseline_file, s.threshold, s.ab, s.calibrate) == ("history", None, None, None, False)
    assert s.gate_metrics is None and DEFAULT_GATE_METRICS == GATING_METRICS  # None: the mode's default


def test_baseline_is_a_keyword_or_an_existing_run_json(tmp_path):
    assert build(tmp_path, baseline="none").baseline == "none"
    (tmp_path / "run.json").write_text("{}")
    s = build(tmp_path, baseline="run.json")
    assert (s.baseline, s.baseline_file) == ("file", tmp_path / "run.json")
    with pytest.raises(UsageError, match="--zbench-baseline: .*nope.json is not a file"):
        build(tmp_path, baseline="nope.json")


@pytest.mark.parametrize("cli,match", [
    ({"threshold": "-0.1"}, "--zbench-threshold"),
    ({"threshold": "inf"}, "--zbench-threshold"),
    ({"gate_metrics": "cpu_ms.p50,cpu_ms.median"}, "--zbench-gate-metrics: cpu_ms.median"),
    ({"ab": "   "}, "--zbench-ab"),
])
def test_bad_values_name_the_option(tmp_path, cli, match):
    with pytest.raises(UsageError, match=match):
        build(tmp_path, **cli)


def test_gate_metrics_and_calibration(tmp_path):
    assert build(tmp_path, gate_metrics="cpu_ms.p50, frame_ms.p99,jank_share").gate_metrics == (
        "cpu_ms.p50", "frame_ms.p99", "jank_share")
    assert build(tmp_path, calibrate=True).calibrate
    with pytest.raises(UsageError, match="cannot be combined with --zbench-ab"):
        build(tmp_path, calibrate=True, ab="other")


def test_history_is_a_file_or_a_postgres_url_and_the_password_is_never_shown(tmp_path):
    assert build(tmp_path, history="lab.sqlite").history.path == tmp_path / "lab.sqlite"
    s = build(tmp_path, history="postgresql://ci:S3cret%21@db.lab:5433/history?sslmode=require")
    assert s.history.kind == "postgresql" and s.history.path is None
    assert str(s.history) == "postgresql+psycopg://ci@db.lab:5433/history?sslmode=require"
    assert "S3cret" not in repr(s) and "S3cret" not in str(s.history)
    assert "S3cret%21" in s.history.url and "S3cret!" in s.history.secrets  # the driver gets it, messages not
    query = build(tmp_path, history="postgresql+psycopg://ci@db.lab/history?password=Hidden1").history
    assert str(query) == "postgresql+psycopg://ci@db.lab/history" and query.scrub("Hidden1 said") == "*** said"
    for bad, match in (("mysql://u@h/db", "mysql:// is not a history database"),
                       ("postgresql+psycopg2://u@h/db", "psycopg 2 is not supported"),
                       ("postgresql://u:Pw9@h", "names no database")):
        with pytest.raises(UsageError, match="--zbench-history") as error:
            build(tmp_path, history=bad)
        assert match in str(error.value) and "Pw9" not in str(error.value)
