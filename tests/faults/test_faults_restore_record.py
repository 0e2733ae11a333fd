"""A session killed with SIGKILL after it set a device's governor cannot restore it; its restore record does:
the next session on the device restores the original governor first, and so restores the original again at
its end, instead of taking the killed session's `performance` for the device's own setting."""

from __future__ import annotations

import signal


def test_the_next_session_applies_the_restore_record_of_a_killed_one(local_session):
    session = local_session
    sysfs = session.root / "sys"  # the device's sysfs: real files the governor step reads and writes
    governor = sysfs / "devices" / "system" / "cpu" / "cpu0" / "cpufreq" / "scaling_governor"
    governor.parent.mkdir(parents=True)
    governor.write_text("schedutil\n")
    prepare = {"governor": "performance", "sysfs": str(sysfs)}
    session.device("hang", prepare=prepare)
    killed = session.popen("-m", "zbench_perf")
    try:
        session.wait_for_runner()  # measuring: the governor was set
        assert governor.read_text().strip() == "performance"
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=30)
    finally:
        if killed.poll() is None:
            killed.kill()
            killed.wait()
    assert governor.read_text().strip() == "performance"  # SIGKILL: nothing restored it (README)
    assert (session.tmp / "leases" / f"{session.name}.restore.json").is_file()

    session.device("ok", prepare=prepare)
    result = session.run("-m", "zbench_perf")
    result.assert_outcomes(passed=1)
    text = result.stdout.str()
    assert f"zbench: {session.name} was left prepared by a session that did not end; restored first: " \
           "governor (undone)" in text
    (step,) = [s for s in session.run_json()["conditions"]["prepared"] if s["name"] == "governor"]
    assert step["old"] == {"cpu0": "schedutil"} and step["restored"] is True
    assert governor.read_text().strip() == "schedutil"  # the device as it was before either session
    assert not (session.tmp / "leases" / f"{session.name}.restore.json").exists()


def test_a_session_that_ends_leaves_no_restore_record(local_session):
    session = local_session
    sysfs = session.root / "sys"
    governor = sysfs / "devices" / "system" / "cpu" / "cpu0" / "cpufreq" / "scaling_governor"
    governor.parent.mkdir(parents=True)
    governor.write_text("ondemand\n")
    session.device("ok", prepare={"governor": "performance", "sysfs": str(sysfs)})
    session.run("-m", "zbench_perf").assert_outcomes(passed=1)
    assert governor.read_text().strip() == "ondemand"
    assert not list((session.tmp / "leases").glob("*.restore.json"))


