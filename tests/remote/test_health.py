"""Plain pieces of the remote-device policy: exit statuses in words, quarantine counting, lease keys, and the
session summary of the per-launch conditions in run.json."""

from __future__ import annotations

import pytest

from pytest_zbench.host.devices.device import describe_exit
from pytest_zbench.host.devices.health import DeviceHealth, lease_key
from pytest_zbench.host.run_record import RunRecord


@pytest.mark.parametrize("code, transport, words", [
    (-9, "local", "killed by signal 9 (SIGKILL) (exit status -9)"),
    (-15, "ssh", "killed by signal 15 (SIGTERM) (exit status -15)"),
    (137, "adb", "killed by signal 9 (SIGKILL) (exit status 137)"),
    (139, "command", "killed by signal 11 (SIGSEGV) (exit status 139)"),
    (137, "ssh", "exited with 137"),  # over ssh the runner's own status: 137 is what it chose to exit with
    (1, "adb", "exited with 1"),
    (128, "adb", "exited with 128"),
])
def test_exit_status_in_words(code, transport, words):
    assert describe_exit(code, transport) == words


def test_two_faults_in_a_row_quarantine_and_a_good_launch_resets_the_count():
    health = DeviceHealth()
    assert health.fault("pi", "timeout") is False
    health.ok("pi")
    assert health.fault("pi", "timeout") is False and health.reason("pi") is None
    assert health.fault("pi", "connection lost") is True
    assert health.skip_reason("pi") == ("device pi is quarantined for the rest of this session: "
                                        "2 device faults in a row, the last: connection lost")
    assert health.fault("pi", "again") is False  # quarantined once; the first reason stays
    assert health.skip_reason("n7") is None


def test_lease_keys_follow_the_address_not_the_name(write_inventory):
    specs = write_inventory({
        "pi": {"transport": "ssh", "host": "pi3b.lan", "user": "pi"},
        "pi-again": {"transport": "ssh", "host": "pi3b.lan", "user": "other", "port": 22},
        "n7": {"transport": "adb", "serial": "192.168.1.7:5555"},
        "local": {"transport": "local"},
    })
    assert lease_key(specs["pi"]) == lease_key(specs["pi-again"]) == "ssh-pi3b.lan-22"
    assert lease_key(specs["n7"]) == "adb-192.168.1.7_5555"
    assert lease_key(specs["local"]) is None


def _launch(start: str, end: str, before: dict, after: dict) -> dict:
    return {"launch": 0, "started_utc": start, "ended_utc": end, "status": "complete",
            "conditions": {"before": before, "after": after}}


def test_session_conditions_summarise_every_launch_in_time_order():
    record = RunRecord(run_id="r" * 8, started_utc="2025-01-01T00:00:00+00:00", app={}, suite_version="0")
    record.devices["pi"] = {"device": {"id": "pi"}, "gpu": {"backend": "gles2", "timer_source": None},
                            "display": {"width": 1, "height": 1, "refresh_hz": 60.0},
                            "conditions": {"power": "unknown", "throttled": None, "governor": ""}}
    # scenes arrive in any order (xdist workers); the summary follows the launches' start times
    record.scenes.append({"device": "pi", "id": "b", "launches": [
        _launch("2025-01-01T00:02:00", "2025-01-01T00:03:00", {"temp_c": 55.0, "throttled": False},
                {"temp_c": 61.5, "throttled": True, "governor": "ondemand"})]})
    record.scenes.append({"device": "pi", "id": "a", "launches": [
        _launch("2025-01-01T00:00:00", "2025-01-01T00:01:00", {"temp_c": 48.0, "throttled": False},
                {"temp_c": 52.0, "throttled": False, "governor": "ondemand"})]})
    conditions = record.document(("pi",))["conditions"]
    assert (conditions["temp_start_c"], conditions["temp_end_c"], conditions["temp_max_c"]) == (48.0, 61.5, 61.5)
    assert conditions["throttled"] is True and conditions["governor"] == "ondemand"
    assert conditions["launches_sampled"] == 2
    assert record.devices["pi"]["conditions"]["throttled"] is None  # the record itself is left as it was
