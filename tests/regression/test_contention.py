"""The busy-host guard: a sessions verdict the host's load can explain is made inconclusive; the rest stand.
With stolen_ms the guard judges cpu_ms again on on-CPU time; without it, on the preempted share of the frames."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_zbench.protocol import PREEMPTIONS_COLUMN
from pytest_zbench.regression import contention
from pytest_zbench.regression.gate import GateConfig, judge
from pytest_zbench.stats import LaunchSamples, summarize_launch

CPU = GateConfig(metrics=("cpu_ms.p50", "cpu_ms.p95"))


def launch(p50: float, p95: float, preempted: float | None) -> dict:
    return {"cpu_ms": {"p50": p50, "p95": p95}, "gpu_ms": None, "gpu_source": None, "jank_share": 0.0,
            "preempted_share": preempted}


def sessions(rng: np.random.Generator, count: int, *, p95: float = 0.4, preempted: float | None = 0.004) -> list:
    return [[launch(0.2 * float(np.exp(rng.normal(0, 0.02))), p95 * float(np.exp(rng.normal(0, 0.03))), preempted)
             for _ in range(5)] for _ in range(count)]


def test_a_tail_regression_on_a_busy_host_is_inconclusive_and_says_why():
    rng = np.random.default_rng(1)
    base = sessions(rng, 5)
    (busy,) = sessions(rng, 1, p95=4.0, preempted=0.12)  # 10x p95, 12 % of the frames preempted
    raw = judge(base, busy, CPU)
    assert raw.by_metric()["cpu_ms.p95"].verdict == "regressed"
    guarded = contention.guard(raw, [x for s in base for x in s], busy)
    p95 = guarded.by_metric()["cpu_ms.p95"]
    assert p95.verdict == "inconclusive" and guarded.verdict != "regressed"
    assert "busy host" in p95.reason and "12.0%" in p95.reason and "--zbench-ab" in p95.advice
    assert any(n.startswith("busy host: 12.0% of the candidate") for n in guarded.notes)
    assert guarded.by_metric()["cpu_ms.p50"] == raw.by_metric()["cpu_ms.p50"]  # untouched


def test_a_regression_on_a_quiet_host_stands():
    rng = np.random.default_rng(2)
    base = sessions(rng, 5)
    (slow,) = sessions(rng, 1, p95=0.8, preempted=0.006)
    raw = judge(base, slow, CPU)
    assert raw.by_metric()["cpu_ms.p95"].verdict == "regressed"
    assert contention.guard(raw, [x for s in base for x in s], slow) is raw


def test_an_improvement_measured_against_a_busy_baseline_is_inconclusive():
    rng = np.random.default_rng(3)
    base = sessions(rng, 5, p95=4.0, preempted=0.15)
    (quiet,) = sessions(rng, 1, preempted=0.002)
    raw = judge(base, quiet, CPU)
    assert raw.by_metric()["cpu_ms.p95"].verdict == "improved"
    guarded = contention.guard(raw, [x for s in base for x in s], quiet)
    assert guarded.by_metric()["cpu_ms.p95"].verdict == "inconclusive"
    assert "the baseline was measured on a busy host" in guarded.by_metric()["cpu_ms.p95"].reason


def test_without_preemption_counts_nothing_is_guarded():
    rng = np.random.default_rng(4)
    base = sessions(rng, 5, preempted=None)
    (busy,) = sessions(rng, 1, p95=4.0, preempted=None)
    raw = judge(base, busy, CPU)
    assert contention.guard(raw, [x for s in base for x in s], busy) is raw


@pytest.mark.parametrize(("metric", "edge"), [("cpu_ms.p50", 0.25), ("cpu_ms.p95", 0.025), ("cpu_ms.p99", 0.01),
                                              ("cpu_ms.max", 0.01), ("cpu_ms.mean", 0.01),
                                              ("adaptive.score", 0.25)])  # fitted to each step's median
def test_a_metric_is_guarded_once_the_difference_passes_half_its_tail(metric, edge):
    assert contention.margin(metric) == pytest.approx(edge)


def test_a_launch_summary_carries_the_share_of_its_frames_that_were_preempted():
    n = 40
    preemptions = np.zeros(n)
    preemptions[[3, 7, 11]] = [1, 2, 1]
    preemptions[20] = np.nan  # not known for this frame: left out of the share
    samples = LaunchSamples(cpu_ms=np.full(n, 0.2), gpu_ms=np.full(n, np.nan), gpu_source=None,
                            interval_ms=np.full(n, 0.3), warmup_cpu_ms=np.empty(0),
                            counters={PREEMPTIONS_COLUMN: preemptions}, mode="uncapped")
    summary = summarize_launch(samples, 16.7)
    assert summary.preempted_share == pytest.approx(3 / 39)
    assert summary.to_dict()["preempted_share"] == pytest.approx(3 / 39, abs=1e-4)
    no_counter = LaunchSamples(cpu_ms=np.full(n, 0.2), gpu_ms=np.full(n, np.nan), gpu_source=None,
                               interval_ms=np.full(n, 0.3), warmup_cpu_ms=np.empty(0), counters={}, mode="uncapped")
    assert summarize_launch(no_counter, 16.7).preempted_share is None


# With stolen_ms (docs/regression.md, "A busy host"): launches carry on-CPU time and the stolen share.
def stolen_launch(rng: np.random.Generator, on_cpu: float, stolen: float) -> dict:
    """A launch whose frames spent `on_cpu` ms on the CPU and lost a share `stolen` of their time to others."""
    p50 = on_cpu * float(np.exp(rng.normal(0, 0.02)))
    p95 = 1.5 * on_cpu * float(np.exp(rng.normal(0, 0.03)))
    grow = 1 / (1 - stolen)
    return {"cpu_ms": {"p50": p50 * grow, "p95": p95 * grow}, "oncpu_ms": {"p50": p50, "p95": p95},
            "gpu_ms": None, "gpu_source": None, "jank_share": 0.0, "stolen_share": stolen, "preempted_share": 0.5}


def stolen_sessions(rng: np.random.Generator, count: int, on_cpu: float, stolen: float) -> list:
    return [[stolen_launch(rng, on_cpu, stolen) for _ in range(5)] for _ in range(count)]


def guarded_with_twins(base: list, cand: list):
    raw = judge(base, cand, CPU)
    flat = [x for s in base for x in s]
    twins = contention.twins_to_judge(raw)
    on_cpu = judge(base, cand, GateConfig(metrics=twins)) if twins else None
    return raw, contention.guard(raw, flat, cand, on_cpu)


def test_a_slowdown_on_cpu_under_load_stays_regressed():
    """A 3 ms burn on 0.12 ms frames, measured with 60 % of the frame time stolen: larger than the stolen time
    explains, so it is regressed, whatever the preempted share says."""
    rng = np.random.default_rng(5)
    base = stolen_sessions(rng, 5, 0.12, 0.002)
    (cand,) = stolen_sessions(rng, 1, 3.12, 0.6)
    raw, guarded = guarded_with_twins(base, cand)
    assert raw.verdict == "regressed" and guarded.verdict == "regressed"
    p50 = guarded.by_metric()["cpu_ms.p50"]
    assert "on-CPU time too (oncpu_ms.p50" in p50.reason
    assert any("holding on on-CPU time: cpu_ms.p50, cpu_ms.p95" in n for n in guarded.notes)


def test_the_same_build_under_load_is_excused_by_its_stolen_time():
    rng = np.random.default_rng(6)
    base = stolen_sessions(rng, 5, 0.12, 0.002)
    (cand,) = stolen_sessions(rng, 1, 0.12, 0.5)  # twice as long a frame, all of it other tasks' time
    raw, guarded = guarded_with_twins(base, cand)
    assert raw.by_metric()["cpu_ms.p50"].verdict == "regressed"
    assert guarded.verdict not in ("regressed", "improved")
    p50 = guarded.by_metric()["cpu_ms.p50"]
    assert p50.verdict == "inconclusive" and "the host's load explains it" in p50.reason
    assert "--zbench-ab" in p50.advice


def test_equal_stolen_shares_leave_the_verdict_alone():
    rng = np.random.default_rng(7)
    base = stolen_sessions(rng, 5, 0.12, 0.3)
    (cand,) = stolen_sessions(rng, 1, 0.3, 0.305)
    raw, guarded = guarded_with_twins(base, cand)
    assert raw.verdict == "regressed" and guarded is raw


def test_on_cpu_metrics_are_the_cpu_series_twins():
    assert contention.on_cpu_metric("cpu_ms.p95") == "oncpu_ms.p95"
    assert contention.on_cpu_metric("gpu_ms.p50") is None and contention.on_cpu_metric("jank_share") is None
