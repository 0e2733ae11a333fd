"""The busy-host guard: a sessions verdict that preempted frames can explain is made inconclusive; the rest
stand. Launches carry the share of their frames the kernel preempted, as the reference runner counts them."""

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
