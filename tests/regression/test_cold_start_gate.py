"""Cold start gated when asked (docs/regression.md, "Cold start"): a launch's time to first frame and its
warmup total are per-launch metrics of the launch summary, stored in the history with it, judged like the
steady-state metrics when the gate's metrics name them, and never by default."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from pytest_zbench.host.run_record import validate_run
from pytest_zbench.regression.baseline import judge_against_history
from pytest_zbench.regression.config import COLD_START_METRICS, GATE_METRIC, GATING_METRICS, metric_unit
from pytest_zbench.regression.gate import GateConfig, judge
from pytest_zbench.regression.history import History, RunInfo, SceneRecord
from pytest_zbench.stats import LaunchSamples, summarize_launch

ENV = {"device": {"model": "Raspberry Pi 3B+"}, "gpu": {"timer_source": "none"}, "display": {"width": 800}}


def launches(ttff_ms: float, n: int, seed: int) -> list[dict]:
    """Launch summaries whose steady state is the same and whose cold start is `ttff_ms` (warmup a fifth)."""
    rng = np.random.default_rng(seed)
    return [{"cpu_ms": {"p50": 5.0 * float(rng.lognormal(0, 0.02)), "p95": 6.0}, "gpu_ms": None, "gpu_source": None,
             "jank_share": 0.0, "time_to_first_frame_ms": ttff_ms * float(rng.lognormal(0, 0.05)),
             "warmup_ms": ttff_ms / 5 * float(rng.lognormal(0, 0.05))} for _ in range(n)]


def test_cold_start_metrics_are_gate_metrics_in_ms_and_not_defaults():
    for metric in COLD_START_METRICS:
        assert GATE_METRIC.fullmatch(metric) and metric_unit(metric) == "ms"
        assert metric not in GATING_METRICS
    assert not GATE_METRIC.fullmatch("first_frame_ms.p50")


def test_a_launch_summary_carries_its_time_to_first_frame():
    samples = LaunchSamples(cpu_ms=np.full(10, 2.0), gpu_ms=np.full(10, np.nan), gpu_source=None,
                            interval_ms=np.full(10, 16.7), warmup_cpu_ms=np.array([30.0, 4.0]), counters={},
                            mode="paced")
    summary = summarize_launch(samples, 16.7).to_dict()
    assert summary["warmup_ms"] == 34.0 and summary["time_to_first_frame_ms"] is None  # the host fills it in


def test_a_slower_cold_start_is_judged_when_named_and_not_by_default():
    baseline = [launches(400.0, 6, seed) for seed in range(4)]
    candidate = launches(640.0, 6, 99)
    named = judge(baseline, candidate, GateConfig(metrics=("cpu_ms.p50", *COLD_START_METRICS)))
    by_metric = named.by_metric()
    assert by_metric["time_to_first_frame_ms"].verdict == "regressed"
    assert by_metric["warmup_ms"].verdict == "regressed"
    assert by_metric["cpu_ms.p50"].verdict != "regressed"
    assert named.verdict == "regressed"
    default = judge(baseline, candidate, GateConfig())
    assert default.verdict != "regressed" and "time_to_first_frame_ms" not in default.by_metric()


def test_the_history_keeps_each_launchs_cold_start_for_the_next_session(tmp_path):
    history_url = str(tmp_path / "history.sqlite")  # the store plays no part: SQLite only
    config = GateConfig(metrics=("time_to_first_frame_ms",))
    with History(history_url) as history:
        for day in range(1, 4):
            info = RunInfo("pi3b", "gles2", f"build{day}", False, ENV, started_utc=f"2026-10-0{day}T10:00:00Z")
            history.record(info, [SceneRecord("fill.x1", {}, "paced", None, launches(400.0, 5, day))])
        key = SceneRecord("fill.x1", {}, "paced", None, []).key(info)
        stored = history.comparable(key, window=3).runs
        assert all(launch["time_to_first_frame_ms"] > 300 for run in stored for launch in run.launches)
        slower = judge_against_history(history, key, launches(640.0, 5, 9), config, window=3)
        assert slower.verdict is not None and slower.verdict.verdict == "regressed"
        same = judge_against_history(history, key, launches(400.0, 5, 10), config, window=3)
        assert same.verdict is not None and same.verdict.verdict != "regressed"


# B's process sleeps 1.5 s before the reference runner starts in it: the same frames, a slower cold start (a
# launch's start is about 1 s here, and moves by a quarter of that from launch to launch on a loaded machine).
SLOW_START = ("python -c \"import runpy, time; time.sleep(1.5); "
              "runpy.run_module('pytest_zbench.runner', run_name='__main__')\"")


@pytest.mark.acceptance
def test_a_slower_cold_start_fails_its_perf_test_when_gated(project, tmp_path):
    history = tmp_path / "history.sqlite"
    result = project.run("--zbench-runs=6", "--zbench-frames=30", "--zbench-warmup=3", "--zbench-mode=uncapped",
                         "-k", "mini.fill.x1", f"--zbench-ab={SLOW_START}", f"--zbench-history={history}",
                         "--zbench-gate-metrics=cpu_ms.p50,time_to_first_frame_ms")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*time_to_first_frame_ms REGRESSED*"])
    document = project.run_json()
    assert validate_run(document) == []
    scene = document["scenes"][0]
    verdicts = {m["metric"]: m for m in scene["regression"]["metrics"]}
    assert verdicts["time_to_first_frame_ms"]["verdict"] == "regressed"
    assert verdicts["time_to_first_frame_ms"]["effect"] > 1.1
    values = scene["regression"]["distributions"]["metrics"]["time_to_first_frame_ms"]
    assert np.median(values["candidate"]) - np.median(values["baseline"][0]) > 1000  # B's sleep, in ms
    assert [run["time_to_first_frame_ms"] for run in scene["per_run"]] == \
        scene["cold"]["time_to_first_frame_ms"]["per_launch"]
    # each launch's value is stored with it in the history, for the next session's gate
    with sqlite3.connect(history) as db:
        stored = [json.loads(row[0]) for row in db.execute("select summary from launches")]
    assert len(stored) == 12 and all(launch["time_to_first_frame_ms"] > 0 for launch in stored)
