"""The regression gate end to end: real launches of the reference runner, judged by the perf tests, on the
default gate metrics and without any artificial base cost per frame, with the history in a SQLite file, and
also in a PostgreSQL database where the store's behaviour shapes the outcome (the `history_url` cases: workers
writing one run at once, the CLI reading a URL); PostgreSQL's own cases are in test_history_store.py and
test_lab_history_plugin.py.

A known slowdown comes from the runner's `--cpu-burn-ms MS` (a busy-wait inside each timed frame). Statistical,
not timed: uncapped frames, short launches. The acceptance runs (ten A/A sessions under intermittent load, a
30 % slower build against a history and in A/B) are tests/regression/test_gate_sessions.py; the tests here
check what one or two sessions produce: verdicts with their reasons, run.json, JUnit, the history.
"""

from __future__ import annotations

import csv
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from pytest_zbench.host.run_record import validate_run
from pytest_zbench.regression.history import History

GATED = ["--zbench-runs=6", "--zbench-frames=60", "--zbench-warmup=5", "--zbench-mode=uncapped"]
RUNNER = "[python, -m, pytest_zbench.runner, --cpu-burn-ms, '{ms}']"


def write_inventory(project, **burn_ms: float) -> None:
    """devices.yaml with one device per keyword, each the reference runner burning that many ms a frame."""
    lines = ["devices:"]
    for name, ms in burn_ms.items():
        lines += [f"  {name}:", "    transport: local", "    backend: software",
                  f"    runner: {RUNNER.format(ms=ms)}", "    display: {width: 160, height: 120, refresh_hz: 60}"]
    (project.root / "devices.yaml").write_text("\n".join(lines) + "\n")


def junit_props(path) -> dict[str, dict[str, str]]:
    root = ET.parse(path).getroot()
    return {case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}
            for case in root.iter("testcase")}


def regression(document: dict, scene_id: str) -> dict:
    return next(s for s in document["scenes"] if s["id"] == scene_id)["regression"]


def effect(section: dict, metric: str = "cpu_ms.p50") -> float:
    return next(m["effect"] for m in section["metrics"] if m["metric"] == metric)


@pytest.mark.acceptance
def test_a_second_session_against_one_is_inconclusive_with_the_advice(project, tmp_path):
    write_inventory(project, local=0)
    history = str(tmp_path / "history.sqlite")
    first = project.run(*GATED, "-k", "mini", f"--zbench-history={history}")
    first.assert_outcomes(passed=2, warnings=0)  # a first run is one line under the table, not a warning each
    first.stdout.fnmatch_lines(["mini.fill.x1 * new * pass",
                                "2 scene(s) had no baseline yet (first run): recorded*"])
    assert "RegressionWarning" not in first.stdout.str()
    document = project.run_json()
    assert validate_run(document) == []
    assert regression(document, "mini.fill.x1")["verdict"] == "no_baseline"
    assert all(s["history"]["recorded"] for s in document["scenes"])

    junit = tmp_path / "junit.xml"
    second = project.run(*GATED, "-k", "mini", f"--zbench-history={history}", f"--junitxml={junit}")
    second.assert_outcomes(passed=2, warnings=0)  # one line for the inconclusive scenes, not a warning each
    second.stdout.fnmatch_lines(["2 scene(s) inconclusive with 6 launches; *"])
    document = project.run_json()
    assert validate_run(document) == []
    for scene_id in ("mini.fill.x1", "mini.fill.x2"):
        section = regression(document, scene_id)
        assert section["verdict"] == "inconclusive", section["message"]
        assert "one baseline session" in section["message"] and "--zbench-ab" in section["message"]
        assert section["source"] == "history" and "1 run(s) of " + scene_id + " on local/software" in section["baseline"]
        assert {m["metric"] for m in section["metrics"]} == {"cpu_ms.p50", "cpu_ms.p95"}
        assert [n["metric"] for n in section["not_judged"]] == ["gpu_ms.p50", "gpu_ms.p95"]  # software: no GPU time
        assert all(m["ci"] is None for m in section["metrics"])
    for props in junit_props(junit).values():
        assert props["regression_verdict"] == "inconclusive"
        assert float(props["regression_effect_cpu_ms_p50"]) > 0

    with History(history) as db:
        keys = db.scene_keys(device="local")
        assert sorted(k.scene_id for k in keys) == ["mini.fill.x1", "mini.fill.x2"]
        for key in keys:
            runs = db.runs_of(key)
            assert len(runs) == 2 and all(len(run.launches) == 6 for run in runs)
            assert runs[-1].run_id == f"{document['run_id']}-local"
            assert runs[0].fingerprint == runs[1].fingerprint  # the environment is stable across sessions
            assert all("conditions" in launch and "throttled" in launch for launch in runs[-1].launches)
            raw = db.samples(runs[-1].scene_row)
            assert len(raw) == 6 and raw[0]["cpu_ms"].size == 60


@pytest.mark.acceptance
def test_xdist_workers_record_their_scenes_under_one_run(project, history_url):
    history = history_url
    project.run("-k", "mini", f"--zbench-history={history}", "--zbench-baseline=none", "-n", "2").assert_outcomes(passed=2)
    document = project.run_json()
    assert validate_run(document) == []
    assert all("regression" not in s and s["history"]["recorded"] for s in document["scenes"])  # not gated
    run_id = document["run_id"]
    with History(history) as db:
        keys = db.scene_keys()
        assert sorted(k.scene_id for k in keys) == ["mini.fill.x1", "mini.fill.x2"]
        assert {db.runs_of(key)[0].run_id for key in keys} == {f"{run_id}-local"}


@pytest.mark.acceptance
@pytest.mark.exclusive  # a history verdict on speeds measured here: beside another measuring test, a session read 1.54x
@pytest.mark.parametrize("runs", [1, 2])  # no within-session spread at all; the quick preset's two launches
def test_quick_runs_against_any_baseline_get_a_verdict_with_its_reason(project, tmp_path, runs):
    """--zbench-runs=1/2 against a history of one session and of several, and against a run.json: a verdict
    with its reason every time, never an exception."""
    write_inventory(project, local=0)
    history = f"--zbench-history={tmp_path / 'history.sqlite'}"
    quick = [f"--zbench-runs={runs}", "--zbench-frames=30", "--zbench-warmup=2", "--zbench-mode=uncapped",
             "-k", "mini.fill.x1"]
    for session in range(3):
        result = project.run(*quick, history)
        result.assert_outcomes(passed=1)
        section = regression(project.run_json(), "mini.fill.x1")
        assert section["verdict"] in (("no_baseline",) if session == 0 else ("same", "inconclusive")), section
        for m in section["metrics"]:
            assert m["n_candidate"] == runs
            if m["verdict"] == "inconclusive":
                assert m["reason"], m
    (tmp_path / "baseline.json").write_text((project.results / "run.json").read_text())
    result = project.run(*quick, f"--zbench-baseline={tmp_path / 'baseline.json'}",
                         f"--zbench-history={tmp_path / 'other.sqlite'}")
    result.assert_outcomes(passed=1)
    section = regression(project.run_json(), "mini.fill.x1")
    assert section["source"] == "file" and section["verdict"] == "inconclusive"
    assert "one baseline session" in section["message"]


@pytest.mark.acceptance
def test_ab_with_a_slower_b_runner_is_regressed(project, tmp_path):
    history_url = str(tmp_path / "history.sqlite")
    write_inventory(project, local=0)
    b_runner = "python -m pytest_zbench.runner --cpu-burn-ms 0.2"
    result = project.run(*GATED, "-k", "mini.fill.x1", f"--zbench-ab={b_runner}",
                         f"--zbench-history={history_url}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*cpu_ms.p50 REGRESSED: *x (+*, candidate/baseline, lower is better), 95% CI *",
                                 "*launch bootstrap*baseline: A (python -m pytest_zbench.runner"
                                 " --cpu-burn-ms 0), 6 launches interleaved with 6 of B (python -m pytest_zbench.runner"
                                 " --cpu-burn-ms 0.2) on local*"])
    document = project.run_json()
    assert validate_run(document) == []
    scene = document["scenes"][0]
    assert scene["regression"]["source"] == "ab" and effect(scene["regression"]) > 1.2
    assert scene["regression"]["settings"]["threshold"] == 0.05
    ab = scene["ab"]
    assert ab["order"] == ["A", "B", "B", "A"] * 3 and ab["pattern"] == "ABBA" and ab["runner_b"] == b_runner.split()
    assert len(ab["per_run_b"]) == 6 and len(scene["per_run"]) == 6
    a_rows = list(csv.DictReader(open(project.results / scene["samples_file"])))
    b_rows = list(csv.DictReader(open(project.results / ab["samples_file_b"])))
    assert {r["launch"] for r in a_rows} == {r["launch"] for r in b_rows} == {str(k) for k in range(6)}
    b_cpu = np.median([float(r["cpu_ms"]) for r in b_rows if r["phase"] == "measure"])
    a_cpu = np.median([float(r["cpu_ms"]) for r in a_rows if r["phase"] == "measure"])
    assert b_cpu - a_cpu > 0.15  # both sides' raw samples are kept; B burns 0.2 ms more per frame
    with History(history_url) as db:  # A/B sessions are kept out of the baselines
        assert db.scene_keys() == [] and len(db.scene_keys(kinds=("ab",))) == 1


@pytest.mark.acceptance
def test_a_scene_files_gate_settings_replace_the_command_lines_for_that_scene(project, tmp_path):
    write_inventory(project, local=0)
    project.write_scene("mini.yaml", """\
family: mini
scenes:
  - id: mini.fill.x{layers}
    sweep: {layers: [1, 2]}
    gate: {threshold: 0.4, metrics: [cpu_ms.p50]}
    ops:
      - unroll: "{layers}"
        ops:
          - {op: rect, x: 0, y: 0, w: "100%", h: "100%", color: "#3366CC80"}
""")
    history = f"--zbench-history={tmp_path / 'history.sqlite'}"
    for _ in range(2):
        project.run(*GATED, "-k", "mini.fill.x1", "--zbench-threshold=0.1", "--zbench-between-floor=0.01",
                    history).assert_outcomes(passed=1)
    section = regression(project.run_json(), "mini.fill.x1")
    assert section["settings"] == {"threshold": 0.4, "threshold_from": "scene file", "metrics": ["cpu_ms.p50"],
                                   "metrics_from": "scene file", "alpha": 0.01, "confidence": 0.95,
                                   "resamples": 2000, "seed": 0, "between_floor": 0.01,
                                   "mode": "sessions (two levels)"}
    assert [m["metric"] for m in section["metrics"]] == ["cpu_ms.p50"] and section["metrics"][0]["bar"] == 0.4
    project.write_scene("mini.yaml", (project.root / "scenes" / "mini.yaml").read_text().replace(
        "metrics: [cpu_ms.p50]", "metrics: [cpu_ms.p51]"))
    result = project.run(*GATED, "-k", "mini.fill.x1", history)
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*mini.yaml*gate*metrics*'cpu_ms.p51' is not a gate metric*"])


@pytest.mark.acceptance
@pytest.mark.exclusive  # its last session's history verdict is on speeds measured here
def test_zbench_history_and_calibrate_against_real_runs(project, history_url):
    write_inventory(project, local=0)
    history = history_url
    # What `zbench calibrate` runs reads these from the ini; the sessions here pass the same on the command line.
    (project.root / "pytest.ini").write_text(
        "[pytest]\ntestpaths = scenes\nzbench_frames = 60\nzbench_warmup = 5\nzbench_mode = uncapped\n")
    same = ["--zbench-frames=60", "--zbench-warmup=5", "-k", "mini.fill.x1", f"--zbench-history={history}"]
    for _ in range(2):
        project.run("--zbench-runs=3", *same)

    def zbench(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pytest_zbench.cli", *args], cwd=project.root,
                              capture_output=True, text=True, timeout=600)

    shown = zbench("history", "--history", history)
    assert shown.returncode == 0, shown.stderr
    assert "mini.fill.x1 on local/software [params" in shown.stdout and "cpu_ms.p50, 2 run(s)" in shown.stdout
    assert "change points: none" in shown.stdout

    calibrated = zbench("calibrate", "--device", "local", "--sessions", "2", "--runs", "3", "-k", "mini.fill.x1",
                        "--history", history)
    assert calibrated.returncode == 0, calibrated.stdout + calibrated.stderr
    assert "running A/A session 2 of 2" in calibrated.stdout
    assert "mini.fill.x1 on local/software" in calibrated.stdout and "from 6 A/A launches" in calibrated.stdout
    assert "2 A/A session(s); between-session spread" in calibrated.stdout
    assert "calibration(s) stored" in calibrated.stdout
    with History(history) as db:  # the A/A launches are calibration runs, never baseline material
        assert [len(db.runs_of(key)) for key in db.scene_keys()] == [2]
        assert [len(db.runs_of(key, kinds=("calibration",))) for key in db.scene_keys(kinds=("calibration",))] == [2]

    # The next gated run draws its between-session spread from the A/A sessions too.
    project.run("--zbench-runs=3", *same)
    section = regression(project.run_json(), "mini.fill.x1")
    assert section["verdict"] in ("same", "inconclusive"), section["message"]
    p50 = next(m for m in section["metrics"] if m["metric"] == "cpu_ms.p50")
    assert any("A/A calibration sessions" in source for source in p50["between_sources"])
    assert p50["between_df"] == 1 + 1  # this scene's 2 sessions, and the 2 A/A sessions about their own mean


def test_bad_regression_options_are_usage_errors(project, tmp_path):
    result = project.run("--zbench-baseline=missing.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--zbench-baseline: *missing.json is not a file; give history, none, or the path*"])
    result = project.run("--zbench-threshold=-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result = project.run("--zbench-ab=python -m x", "--zbench-calibrate")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--zbench-calibrate*cannot be combined with --zbench-ab*"])


def test_b_runner_is_a_device_name_or_an_argv_string(project):
    from pytest_zbench.host.measure.ab_launches import resolve_b_runner
    from pytest_zbench.inventory import load_inventory

    write_inventory(project, local=0, slow=1.3)
    inventory = load_inventory(project.root / "devices.yaml")
    assert resolve_b_runner("slow", inventory) == ("python", "-m", "pytest_zbench.runner", "--cpu-burn-ms", "1.3")
    assert resolve_b_runner("/opt/zinc/zinc-bench --fast 'a b'", inventory) == ("/opt/zinc/zinc-bench", "--fast", "a b")
