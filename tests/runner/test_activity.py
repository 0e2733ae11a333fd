"""The runner's CPU time and wake-ups over the measured frames (pytest_zbench/runner/activity.py) and the
host's rates from them (pytest_zbench/host/measure/process_activity.py)."""

from __future__ import annotations

import sys
import time

import pytest

from pytest_zbench.host.measure.process_activity import ProcessActivity, read_activity, summarize_activity
from pytest_zbench.runner.activity import ActivitySample, activity_between, sample

unix = pytest.mark.skipif(sys.platform.startswith("win"), reason="getrusage is Unix's")


@unix
def test_every_sleep_is_a_wake_up_and_cpu_time_follows_the_process_clock():
    start, cpu_start = sample(), time.process_time()
    for _ in range(20):
        time.sleep(0.001)  # blocks: one voluntary context switch each
    spin_until = time.process_time() + 0.05
    while time.process_time() < spin_until:
        pass
    end, cpu_end = sample(), time.process_time()
    counts = activity_between(start, end)
    assert counts is not None and counts["source"] == "getrusage"
    assert counts["voluntary_switches"] >= 20
    # Two CPU clocks of one process over one interval: equal within their tick (getrusage is in microseconds).
    assert counts["cpu_ms"] == pytest.approx((cpu_end - cpu_start) * 1000.0, abs=2.0)
    assert counts["wall_ms"] > 0 and counts["involuntary_switches"] >= 0


def test_counts_need_two_samples_in_order():
    a, b = ActivitySample(1_000, 10, 1, 0), ActivitySample(2_000_000_000, 500_000_010, 61, 3)
    assert activity_between(None, b) is None and activity_between(b, a) is None
    assert activity_between(a, b) == {"source": "getrusage", "wall_ms": pytest.approx(1999.999, abs=1e-3),
                                      "cpu_ms": 500.0, "voluntary_switches": 60, "involuntary_switches": 3}


def test_rates_are_counts_over_the_measured_wall_time_and_the_scene_takes_their_median():
    runs = [read_activity({"source": "getrusage", "wall_ms": wall, "cpu_ms": cpu, "voluntary_switches": v,
                           "involuntary_switches": 2}) for wall, cpu, v in ((500.0, 10.0, 30), (1000.0, 30.0, 61),
                                                                              (250.0, 4.0, 14))]
    assert [r.wakeups_per_s for r in runs if r] == pytest.approx([60.0, 61.0, 56.0])
    assert [r.cpu_ms_per_s for r in runs if r] == pytest.approx([20.0, 30.0, 16.0])
    summary = summarize_activity([*runs, None])  # a launch that reported none is left out
    assert summary is not None and summary["launches"] == 3 and summary["source"] == "getrusage"
    assert summary["wakeups_per_s"] == pytest.approx(60.0) and summary["cpu_ms_per_s"] == pytest.approx(20.0)


@pytest.mark.parametrize("raw", [None, [], "x", {"source": "getrusage", "wall_ms": 0, "cpu_ms": 1, "voluntary_switches": 1},
                                 {"source": "getrusage", "wall_ms": 5, "cpu_ms": -1, "voluntary_switches": 1},
                                 {"source": "getrusage", "wall_ms": 5, "cpu_ms": 1, "voluntary_switches": 1.5},
                                 {"source": "getrusage", "wall_ms": 5, "cpu_ms": 1, "voluntary_switches": True},
                                 {"wall_ms": 5, "cpu_ms": 1, "voluntary_switches": 1}])
def test_a_missing_or_malformed_activity_is_not_read(raw):
    assert read_activity(raw) is None
    assert summarize_activity([read_activity(raw)]) is None


def test_a_launch_record_carries_its_rates():
    activity = ProcessActivity("getrusage", 500.0, 11.0, 30, None)
    assert activity.to_json() == {"source": "getrusage", "wall_ms": 500.0, "cpu_ms": 11.0, "voluntary_switches": 30,
                                  "involuntary_switches": None, "wakeups_per_s": 60.0, "cpu_ms_per_s": 22.0}
