"""Settings of the regression gate: defaults, baseline keywords and files, threshold and metric validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_zbench.errors import UsageError
from pytest_zbench.regression.config import DEFAULT_BETWEEN_FLOOR
from pytest_zbench.regression.gate import GATING_METRICS
from pytest_zbench.settings import DEFAULT_GATE_METRICS, build_settings


def build(root: Path, calibrate: bool = False, **cli):
    return build_settings(lambda option: cli.get(option.name), root, quick=False, calibrate=calibrate)


def test_defaults(tmp_path):
    s = build(tmp_path)
    assert s.history.kind == "sqlite" and s.history.path == tmp_path / ".zbench" / "history.sqlite"
    assert (s.baseline, s.baseline_file, s.threshold, s.ab, s.calibrate) == ("history", None, None, None, False)
    assert s.gate_metrics is None and DEFAULT_GATE_METRICS == GATING_METRICS  # None: the mode's default
    assert s.between_floor == DEFAULT_BETWEEN_FLOOR == 0.02


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
    ({"between_floor": -0.01}, "--zbench-between-floor: -0.01; give a fraction such as 0.02"),
    ({"between_floor": 1.0}, "--zbench-between-floor: 1.0"),
])
def test_bad_values_name_the_option(tmp_path, cli, match):
    with pytest.raises(UsageError, match=match):
        build(tmp_path, **cli)


def test_a_quieter_device_lowers_the_between_session_floor_or_turns_it_off(tmp_path):
    assert build(tmp_path, between_floor=0.005).between_floor == 0.005
    assert build(tmp_path, between_floor=0.0).between_floor == 0.0


def test_gate_metrics_and_calibration(tmp_path):
    assert build(tmp_path, gate_metrics="cpu_ms.p50, frame_ms.p99,jank_share").gate_metrics == (
        "cpu_ms.p50", "frame_ms.p99", "jank_share")
    assert build(tmp_path, calibrate=True).calibrate
    with pytest.raises(UsageError, match="cannot be combined with --zbench-ab"):
        build(tmp_path, calibrate=True, ab="other")


@pytest.mark.parametrize("document, where", [
    ([], "not a JSON object"),
    ({"run_id": "x"}, "key 'scenes' is not a list"),
    ({"scenes": ["fill"]}, r"scenes\[0\] is not an object"),
    ({"scenes": [{"id": 3, "device": "local"}]}, r"scenes\[0\]\.id is not a string"),
    ({"scenes": [{"id": "a", "device": "local", "per_run": {"cpu_ms": 1}}]}, r"per_run is not a list"),
    ({"scenes": [{"id": "a", "device": "local", "per_run": [{"cpu_ms": {"p50": "fast"}}]}]},
     r"per_run\[0\]\.cpu_ms\.p50 is not a number"),
    ({"scenes": [{"id": "a", "device": "local", "per_run": [{"jank_share": [0.1]}]}]}, r"jank_share is not a number"),
    ({"scenes": [], "app": "abc"}, "key 'app' is not an object"),
])
def test_a_baseline_run_json_of_another_shape_is_refused_naming_the_key(tmp_path, document, where):
    from pytest_zbench.regression.baseline import BaselineFileError, read_run_file

    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(document))
    with pytest.raises(BaselineFileError, match=where) as caught:
        read_run_file(path)
    assert str(path) in str(caught.value)


def test_a_real_run_json_shape_is_accepted(tmp_path):
    from pytest_zbench.regression.baseline import read_run_file

    launch = {"cpu_ms": {"n": 30, "p50": 1.5, "hist": [1, 2]}, "jank_share": 0.0, "gpu_source": None,
              "counters": {"draw_calls": {"p50": 3}}, "partial": False}
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"app": {"build_hash": 7}, "scenes": [{"id": "a", "device": "local",
                                                                      "per_run": [launch]}]}))
    assert read_run_file(path)["scenes"][0]["per_run"] == [launch]


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
