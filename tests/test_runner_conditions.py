"""Conditions a runner samples itself (result.json `conditions`, host/measure/runner_conditions.py), the
reference runner's own sample (runner/conditions.py), and `background_load_note` (methodology §8)."""

from __future__ import annotations

import json
import os

import pytest

from pytest_zbench.host.devices.environment import BUSY_LOAD_PER_CORE, background_load_note
from pytest_zbench.host.measure.runner_conditions import runner_sample, with_runner_sample
from pytest_zbench.host.run_record import validate_run
from pytest_zbench.runner import conditions as runner_conditions

IOS_LIKE = {"start": {"thermal_state": "serious", "low_power_mode": True, "temp_c": 44.5, "power": "battery",
                      "battery_pct": 63},
            "end": {"thermal_state": "critical", "low_power_mode": True, "throttled": True}}


def test_a_runner_sample_fills_only_what_the_platform_left_unknown():
    platform = {"sampled_utc": "t", "power": "plugged", "battery_pct": None, "governor": "", "temp_c": 41.0,
                "throttled": None, "thermal_state": "", "load_avg_1m": 0.3, "readings": {}}
    merged = with_runner_sample(platform, runner_sample("start", {"conditions": IOS_LIKE}))
    assert merged["power"] == "plugged" and merged["temp_c"] == 41.0  # read by the platform probe: kept
    assert (merged["thermal_state"], merged["low_power_mode"], merged["battery_pct"]) == ("serious", True, 63)
    assert merged["from_runner"] == ["battery_pct", "thermal_state", "low_power_mode"]
    assert merged["runner"] == IOS_LIKE["start"]
    assert with_runner_sample(platform, None) is platform
    assert runner_sample("start", {"conditions": "hot"}) is None and runner_sample("end", {}) is None
    wrong = with_runner_sample({}, {"temp_c": True, "power": "mains", "throttled": "yes", "thermal_state": 3})
    assert wrong["from_runner"] == []  # wrong types are left out (result.json's schema check said so)


def test_the_reference_runner_reads_a_sys_tree(tmp_path):
    def put(relative: str, text: str) -> None:
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")

    put("class/thermal/thermal_zone0/temp", "41000")
    put("class/thermal/thermal_zone1/temp", "57")  # an old kernel's whole degrees
    put("class/thermal/thermal_zone2/temp", "-274000")  # not a temperature
    put("devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", "1512000")
    put("devices/system/cpu/cpu0/cpufreq/scaling_governor", "schedutil")
    put("devices/system/cpu/cpu1/cpufreq/scaling_cur_freq", "600000")
    put("devices/system/cpu/cpu1/cpufreq/scaling_governor", "schedutil")
    assert runner_conditions.sample(tmp_path) == {
        "thermal_zones_c": {"thermal_zone0": 41.0, "thermal_zone1": 57.0}, "temp_c": 57.0,
        "cpu_freq_khz": {"cpu0": 1512000, "cpu1": 600000}, "governor": "schedutil"}
    assert runner_conditions.sample(tmp_path / "absent") == {}


@pytest.mark.parametrize("load,cores,noted", [(5.7, 2, True), (0.9, 2, False), (1.1, 2, True), (None, 2, False),
                                              (3.0, None, False), (0.5 * 8, 8, False)])
def test_background_load_note(load, cores, noted):
    note = background_load_note(load, cores, "this host")
    assert bool(note) is noted
    if noted:
        assert f"load average {load:.2f} on {cores} cores" in note and f"{load / cores:.2f} per core" in note
        assert load / cores > BUSY_LOAD_PER_CORE


@pytest.mark.acceptance
def test_runner_conditions_and_the_load_note_reach_run_json(project):
    project.write_inventory({"RECT_RUNNER_CONDITIONS": json.dumps(IOS_LIKE)})
    result = project.run("--zbench-device=rectonly,local", "-k", "mini.fill.x1")
    result.assert_outcomes(passed=2)
    document = project.run_json()
    assert validate_run(document) == []
    by_device = {scene["device"]: scene for scene in document["scenes"]}
    for launch in by_device["rectonly"]["launches"]:
        before, after = launch["conditions"]["before"], launch["conditions"]["after"]
        assert before["runner"] == IOS_LIKE["start"] and after["runner"] == IOS_LIKE["end"]
        assert (before["thermal_state"], before["low_power_mode"]) == ("serious", True)
        assert after["thermal_state"] == "critical" and after["throttled"] is True
    # what the regression gate and the history keep of each launch: the runner's states, throttled
    rect = by_device["rectonly"]
    assert rect["throttled_runs"] == 2 and all(run["throttled"] is True for run in rect["per_run"])
    assert all(run["conditions"]["thermal_state"] == "serious -> critical" and run["conditions"]["low_power_mode"]
               is True for run in rect["per_run"])
    # the reference runner samples /sys itself: what it reported is kept as reported
    for k, launch in enumerate(by_device["local"]["launches"]):
        reported = json.loads((project.results / "local" / "mini.fill.x1" / f"launch-{k}" / "result.json").read_text())
        assert launch["conditions"]["before"]["runner"] == reported["conditions"]["start"]
        assert launch["conditions"]["after"]["runner"] == reported["conditions"]["end"]
    conditions = document["devices"]["local"]["conditions"]
    load, cores = conditions["load_avg_1m"], os.cpu_count()
    assert bool(conditions["background_load_note"]) is (load is not None and load / cores > BUSY_LOAD_PER_CORE)
