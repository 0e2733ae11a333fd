"""The regression gate end to end: real launches of the reference runner, judged by the perf tests, with
the history in a SQLite file and in a PostgreSQL database (the `history_url` cases).

A known slowdown comes from the runner's `--cpu-burn-ms MS` (a busy-wait inside each timed frame). The
devices here burn 1.0 ms per frame as their base cost: the rect scenes alone take ~6 us on the 64x48
surface, and at that scale a launch's cpu_ms lands in one of two modes (process layout), which a single
6-launch baseline cannot know about (calibration is what measures such a spread). A stable base cost makes
the acceptance criteria about the gate, not about this machine. Burning 1.3 ms instead is a ~30 % slowdown.

Statistical, not timed: uncapped frames, 6 launches per side, 120 frames per launch, so the effect (1.3x) is
far past the 15 % bar and the p95 of a launch survives a few preempted frames on a busy CI machine. The
sessions compared with each other run under the same conditions: two scenes measured at once on a 2-core
machine (xdist) really are slower at p95 than one at a time, and the gate rightly says so.
"""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from pytest_zbench.host.run_record import validate_run
from pytest_zbench.regression.gate import GateConfig, judge
from pytest_zbench.regression.history import History

GATED = ["--zbench-runs=6", "--zbench-frames=120", "--zbench-warmup=5", "--zbench-mode=uncapped"]
RUNNER = "[python, -m, pytest_zbench.runner, --cpu-burn-ms, '{ms}']"


def write_inventory(project, **burn_ms: float) -> None:
    """devices.yaml with one device per keyword, each the reference runner burning that many ms a frame."""
    lines = ["devices:"]
    for name, ms in burn_ms.items():
        lines += [f"  {name}:", "    transport: local", "    backend: software",
                  f"    runner: {RUNNER.format(ms=ms)}", "    display: {width: 64, height: 48, refresh_hz: 60}"]
    (project.root / "devices.yaml").write_text("\n".join(lines) + "\n")


def junit_props(path) -> dict[str, dict[str, str]]:
    root = ET.parse(path).getroot()
    return {case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}
            for case in root.iter("testcase")}


def regression(document: dict, scene_id: str) -> dict:
    return next(s for s in document["scenes"] if s["id"] == scene_id)["regression"]


def effect(section: dict, metric: str = "cpu_ms.p50") -> float:
    return next(m["effect"] for m in section["metrics"] if m["metric"] == metric)


def test_same_build_twice_is_never_regressed(project, tmp_path, history_url):
    """Gated on the medians. A launch's p95 moves with whatever else the machine runs (a session next to
    another's CI job is slower at p95, all launches alike), which one 6-launch baseline run cannot know:
    on a shared host gate p50, as here and as the README advises."""
    write_inventory(project, local=1.0)
    history = history_url
    p50 = "--zbench-gate-metrics=cpu_ms.p50,gpu_ms.p50,jank_share"
    first = project.run(*GATED, p50, "-k", "mini", f"--zbench-history={history}")
    first.assert_outcomes(passed=2, warnings=0)  # a first run is one line under the table, not a warning each
    first.stdout.fnmatch_lines(["mini.fill.x1 * new * pass",
                                "2 scene(s) had no baseline yet (first run): recorded*"])
    assert "RegressionWarning" not in first.stdout.str()
    document = project.run_json()
    assert validate_run(document) == []
    assert regression(document, "mini.fill.x1")["verdict"] == "no_baseline"
    assert all(s["history"]["recorded"] for s in document["scenes"])

    junit = tmp_path / "junit.xml"
    second = project.run(*GATED, p50, "-k", "mini", f"--zbench-history={history}", f"--junitxml={junit}")
    second.assert_outcomes(passed=2)
    document = project.run_json()
    assert validate_run(document) == []
    for scene_id in ("mini.fill.x1", "mini.fill.x2"):
        section = regression(document, scene_id)
        assert section["verdict"] in ("same", "inconclusive"), section["message"]
        assert section["source"] == "history" and "1 run(s) of " + scene_id + " on local/software" in section["baseline"]
        assert {m["metric"] for m in section["metrics"]} == {"cpu_ms.p50", "jank_share"}
        assert [n["metric"] for n in section["not_judged"]] == ["gpu_ms.p50"]  # software: no GPU time
        assert 0.9 < effect(section) < 1.1
    for props in junit_props(junit).values():
        assert props["regression_verdict"] in ("same", "inconclusive")
        assert 0.9 < float(props["regression_effect_cpu_ms_p50"]) < 1.1

    with History(history) as db:
        keys = db.scene_keys(device="local")
        assert sorted(k.scene_id for k in keys) == ["mini.fill.x1", "mini.fill.x2"]
        for key in keys:
            runs = db.runs_of(key)
            assert len(runs) == 2 and all(len(run.launches) == 6 for run in runs)
            assert runs[-1].run_id == f"{document['run_id']}-local"
            assert runs[0].fingerprint == runs[1].fingerprint  # the environment is stable across sessions
            raw = db.samples(runs[-1].scene_row)
            assert len(raw) == 6 and raw[0]["cpu_ms"].size == 120


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


def test_thirty_percent_slower_build_is_regressed(project, tmp_path, history_url):
    history = history_url
    write_inventory(project, local=1.0)
    project.run(*GATED, "-k", "mini.fill.x1", f"--zbench-history={history}").assert_outcomes(passed=1, warnings=0)
    shutil.copy(project.results / "run.json", tmp_path / "baseline.json")

    # A new build on the same device: the same device name, its runner now 30 % slower per frame.
    write_inventory(project, local=1.3)
    junit = tmp_path / "junit.xml"
    result = project.run(*GATED, "-k", "mini.fill.x1", f"--zbench-history={history}", f"--junitxml={junit}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*scene mini.fill.x1 on device local: scene verdict: regressed*",
        "*cpu_ms.p50 REGRESSED: candidate 1.3* ms vs baseline 1.0* ms: effect 1.*x (+*%); 95% CI 1.*x..1.*x; "
        "Mann-Whitney p=0.0* (one-sided, candidate slower; *; 6 vs 6 launches; alpha 0.05); "
        "bar +15.0% = max(threshold 15%, 3 x noise floor *% (baseline launches)); "
        "baseline: 1 run(s) of mini.fill.x1 on local/software*6 launches*",
        "*regressed 1.*x  FAIL perf*",
    ])
    document = project.run_json()
    assert validate_run(document) == []
    section = regression(document, "mini.fill.x1")
    assert section["verdict"] == "regressed"
    assert 1.2 < effect(section) < 1.4
    props = junit_props(junit)["perf[mini.fill.x1-local]"]
    assert props["regression_verdict"] == "regressed" and props["regression_cpu_ms_p50"] == "regressed"
    assert 1.2 < float(props["regression_effect_cpu_ms_p50"]) < 1.4

    # The same judgement against the first session's run.json instead of the history.
    result = project.run(*GATED, "-k", "mini.fill.x1", f"--zbench-baseline={tmp_path / 'baseline.json'}",
                         f"--zbench-history={tmp_path / 'other.sqlite'}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*cpu_ms.p50 REGRESSED*baseline: 6 launches of mini.fill.x1 on local in *baseline.json*"])
    section = regression(project.run_json(), "mini.fill.x1")
    assert section["source"] == "file" and 1.2 < effect(section) < 1.4


def test_ab_with_a_slower_b_runner_is_regressed(project, history_url):
    write_inventory(project, local=1.0)
    b_runner = "python -m pytest_zbench.runner --cpu-burn-ms 1.3"
    result = project.run(*GATED, "-k", "mini.fill.x1", f"--zbench-ab={b_runner}",
                         f"--zbench-history={history_url}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*cpu_ms.p50 REGRESSED*baseline: A (python -m pytest_zbench.runner --cpu-burn-ms 1.0),"
                                 " 6 launches interleaved with 6 of B (python -m pytest_zbench.runner --cpu-burn-ms 1.3)"
                                 " on local*"])
    document = project.run_json()
    assert validate_run(document) == []
    scene = document["scenes"][0]
    assert scene["regression"]["source"] == "ab" and 1.2 < effect(scene["regression"]) < 1.4
    ab = scene["ab"]
    assert ab["order"] == ["A", "B"] * 6 and ab["runner_b"] == b_runner.split()
    assert len(ab["per_run_b"]) == 6 and len(scene["per_run"]) == 6
    a_rows = list(csv.DictReader(open(project.results / scene["samples_file"])))
    b_rows = list(csv.DictReader(open(project.results / ab["samples_file_b"])))
    assert {r["launch"] for r in a_rows} == {r["launch"] for r in b_rows} == {str(k) for k in range(6)}
    b_cpu = np.median([float(r["cpu_ms"]) for r in b_rows if r["phase"] == "measure"])
    a_cpu = np.median([float(r["cpu_ms"]) for r in a_rows if r["phase"] == "measure"])
    assert 1.2 < b_cpu / a_cpu < 1.4  # both sides' raw samples are kept
    with History(history_url) as db:  # A/B sessions are kept out of the baselines
        assert db.scene_keys() == [] and len(db.scene_keys(kinds=("ab",))) == 1


def test_a_a_judged_twenty_times_never_regresses(project, tmp_path):
    """Twenty A/A comparisons drawn from 24 real launches of one build: 6 against 6 other launches each.

    Medians and jank, as in the test above: when the machine is busy for part of the session, launch p95s
    fall into a quiet and a busy mode, and a baseline side drawn only from the quiet one has no spread to
    raise the bar with, so p95 would be flagged at about the test's alpha per comparison (by design of a
    5 % test, not a bug); twenty comparisons would then fail about once in three sessions."""
    write_inventory(project, local=1.0)
    project.run(*GATED, "--zbench-runs=24", "-k", "mini.fill.x1", "--zbench-baseline=none",
                f"--zbench-history={tmp_path / 'history.sqlite'}").assert_outcomes(passed=1)
    launches = project.run_json()["scenes"][0]["per_run"]
    assert len(launches) == 24
    rng = np.random.default_rng(7)
    medians = GateConfig(metrics=("cpu_ms.p50", "gpu_ms.p50", "jank_share"))
    verdicts = []
    for _ in range(20):
        pick = rng.permutation(24)
        verdict = judge([launches[i] for i in pick[:6]], [launches[i] for i in pick[6:12]], medians)
        verdicts.append(verdict.verdict)
        assert not verdict.regressed, verdict.message()
    assert verdicts.count("same") + verdicts.count("inconclusive") + verdicts.count("improved") == 20


def test_zbench_history_and_calibrate_against_real_runs(project, history_url):
    write_inventory(project, local=1.0)
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

    calibrated = zbench("calibrate", "--device", "local", "--runs", "6", "-k", "mini.fill.x1",
                        "--history", history)
    assert calibrated.returncode == 0, calibrated.stdout + calibrated.stderr
    assert "mini.fill.x1 on local/software" in calibrated.stdout and "from 6 A/A launches" in calibrated.stdout
    assert "calibration(s) stored" in calibrated.stdout
    with History(history) as db:  # the A/A launches are calibration runs, never baseline material
        assert [len(db.runs_of(key)) for key in db.scene_keys()] == [2]
        assert len(db.scene_keys(kinds=("calibration",))) == 1

    # The next gated run uses the stored noise floor instead of the baseline's own spread; p50 only, as
    # in the A/A test above.
    project.run("--zbench-runs=6", *same, "--zbench-gate-metrics=cpu_ms.p50,jank_share")
    section = regression(project.run_json(), "mini.fill.x1")
    assert section["verdict"] in ("same", "inconclusive"), section["message"]
    assert {m["noise_source"] for m in section["metrics"]} == {"calibration"}


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
    from pytest_zbench.host.ab_launches import resolve_b_runner
    from pytest_zbench.inventory import load_inventory

    write_inventory(project, local=1.0, slow=1.3)
    inventory = load_inventory(project.root / "devices.yaml")
    assert resolve_b_runner("slow", inventory) == ("python", "-m", "pytest_zbench.runner", "--cpu-burn-ms", "1.3")
    assert resolve_b_runner("/opt/zinc/zinc-bench --fast 'a b'", inventory) == ("/opt/zinc/zinc-bench", "--fast", "a b")
