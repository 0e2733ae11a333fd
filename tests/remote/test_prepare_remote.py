"""Device preparation end to end on the loopback sshd (README "Preparing a device"): the prepare steps run
once per device (on the xdist controller, not once per worker), what cannot be done is recorded with its
reason, the cooldown is bounded and recorded, and the restore runs at the end, also after a SIGTERM mid-run.
Android's steps over the real adb server to the emulated adbd.

The governor and thermal files are a folder of the test's (`prepare.sysfs`): the tests run as root, and this
machine's own governor is never touched."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from pytest_zbench.host.devices.prepare import Preparation, prepare_on, restore_on
from pytest_zbench.host.run_record import validate_run
from pytest_zbench.inventory import load_inventory
from tests.remote.servers import adb_device_entry, runner_env
from tests.waiting import gone, pids_with

RECT_RUNNER = Path(__file__).resolve().parent.parent / "thirdparty" / "rect_runner.py"
DISPLAY = {"width": 64, "height": 48, "refresh_hz": 60}
GOVERNOR = "devices/system/cpu/cpu{n}/cpufreq/scaling_governor"


def sysfs(root: Path, *, cpus: int, temp_mc: int) -> Path:
    """A sysfs-shaped folder: `cpus` CPUs on schedutil (performance available), one thermal zone."""
    for n in range(cpus):
        governor = root / GOVERNOR.format(n=n)
        governor.parent.mkdir(parents=True)
        governor.write_text("schedutil\n")
        (governor.parent / "scaling_available_governors").write_text("schedutil performance powersave\n")
    zone = root / "class/thermal/thermal_zone0"
    zone.mkdir(parents=True)
    (zone / "temp").write_text(f"{temp_mc}\n")
    (zone / "type").write_text("cpu-thermal\n")
    return root


def prepare(folder: Path, log: Path, *, below_c: float, max_wait_s: float) -> dict:
    """`prepare` keys: the governor, a cooldown, and a step of one's own that logs (with cpu0's governor at
    that moment) each time it runs, so the test sees how often and in which order the steps ran."""
    snapshot = 'echo "$1 $(cat "$2" 2>/dev/null || echo absent)" >> "$3"'
    governor = str(folder / GOVERNOR.format(n=0))
    return {"governor": "performance", "sysfs": str(folder),
            "cooldown": {"below_c": below_c, "max_wait_s": max_wait_s, "poll_s": 0.2},
            "commands": [{"name": "log", "run": ["sh", "-c", snapshot, "sh", "prepare", governor, str(log)],
                          "restore": ["sh", "-c", snapshot, "sh", "restore", governor, str(log)]}]}


def write_devices(project, devices: dict) -> None:
    inventory = yaml.safe_load((project.root / "devices.yaml").read_text())
    inventory["devices"].update(devices)
    (project.root / "devices.yaml").write_text(yaml.safe_dump(inventory))


@pytest.mark.acceptance
def test_prepare_and_restore_once_per_device_over_two_workers(project, sshd):
    # pi-a: a governor to set and a cool device; pi-b: no cpufreq at all, and too hot for the whole wait
    cool = sysfs(project.root / "sys-a", cpus=2, temp_mc=30000)
    hot = sysfs(project.root / "sys-b", cpus=0, temp_mc=90000)
    log_a, log_b = project.root / "a.log", project.root / "b.log"
    write_devices(project, {
        "pi-a": sshd.device_entry(workdir=str(project.root / "a-work"), display=DISPLAY,
                                  prepare=prepare(cool, log_a, below_c=45, max_wait_s=30)),
        "pi-b": sshd.device_entry(workdir=str(project.root / "b-work"), display=DISPLAY,
                                  prepare=prepare(hot, log_b, below_c=45, max_wait_s=1)),
    })
    result = project.run("--zbench-device=pi-a,pi-b", "-k", "mini.fill.x1", "-n", "2")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines_random([
        "*zbench: prepared pi-a: governor done (was schedutil); cooldown done; log done*",
        "*zbench: prepared pi-b: governor not done: no cpufreq governor under */sys-b/devices/system/cpu*",
        "*zbench: restored pi-a", "*zbench: restored pi-b",
        "cooldown: mini.fill.x1 on pi-b was measured hot: still 90 °C after the 1 s wait: measured hot (below_c 45*"])

    # Once per device, not once per worker; the governor was performance from before the first scene until
    # after the last, and is schedutil again now (the steps are undone in reverse order).
    assert log_a.read_text() == "prepare performance\nrestore performance\n"
    assert log_b.read_text() == "prepare absent\nrestore absent\n"
    assert [(cool / GOVERNOR.format(n=n)).read_text() for n in (0, 1)] == ["schedutil\n"] * 2

    document = project.run_json()
    assert validate_run(document) == []
    steps = {name: {s["name"]: s for s in document["devices"][name]["conditions"]["prepared"]}
             for name in ("pi-a", "pi-b")}
    governor = steps["pi-a"]["governor"]
    assert governor["done"] is True and governor["old"] == {"cpu0": "schedutil", "cpu1": "schedutil"}
    assert governor["new"] == "performance" and governor["restored"] is True
    assert steps["pi-b"]["governor"]["done"] is False and steps["pi-b"]["governor"]["restored"] is None
    assert steps["pi-a"]["log"]["restored"] is True and steps["pi-b"]["log"]["restored"] is True
    assert steps["pi-a"]["cooldown"]["temp_c"] == 30.0 and steps["pi-a"]["cooldown"]["new"]["below_c"] == 45
    cooldown = {s["device"]: s["cooldown"] for s in document["scenes"]}
    assert cooldown["pi-a"]["reached"] is True and cooldown["pi-a"]["temp_end_c"] == 30.0
    assert cooldown["pi-b"]["reached"] is False and cooldown["pi-b"]["waited_s"] >= 1
    assert cooldown["pi-b"]["temp_start_c"] == 90.0 and "measured hot" in cooldown["pi-b"]["reason"]


@pytest.mark.acceptance
def test_restore_runs_after_a_session_is_sent_sigterm_mid_launch(project, sshd):
    """SIGTERM to the xdist controller while its worker is in a launch: the controller, which prepared the
    device, restores it; the hung runner does not outlive the session."""
    cool = sysfs(project.root / "sys", cpus=1, temp_mc=30000)
    log = project.root / "steps.log"
    mark = f"zbench-runner-{uuid.uuid4().hex[:10]}"
    runner = project.root / f"{mark}.py"
    shutil.copyfile(RECT_RUNNER, runner)
    write_devices(project, {"pi": sshd.device_entry(
        workdir=str(project.root / "work"), display=DISPLAY, runner=[sys.executable, str(runner)],
        env={**runner_env(), "RECT_RUNNER_HANG": "1"}, prepare=prepare(cool, log, below_c=45, max_wait_s=30))})
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "zbench_perf", "--zbench-device=pi",
            "--zbench-baseline=none", "--zbench-timeout=120", "-k", "mini.fill.x1", "-n", "2",
            f"--zbench-results={project.results}"]
    session = subprocess.Popen(args, cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               env=os.environ.copy(), start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not pids_with(f"{mark}.py run ") and time.monotonic() < deadline and session.poll() is None:
            time.sleep(0.1)
        assert pids_with(f"{mark}.py run "), "the launch never started"
        assert (cool / GOVERNOR.format(n=0)).read_text() == "performance\n"  # prepared, mid-launch
        session.send_signal(signal.SIGTERM)
        output, _ = session.communicate(timeout=90)
    finally:
        if session.poll() is None:
            os.killpg(session.pid, signal.SIGKILL)
            session.wait()
    text = output.decode(errors="replace")
    assert session.returncode == pytest.ExitCode.INTERRUPTED, text
    assert "zbench: restored pi" in text, text
    assert log.read_text() == "prepare performance\nrestore performance\n"
    assert (cool / GOVERNOR.format(n=0)).read_text() == "schedutil\n"  # on the device side, undone
    # the supervisor stops the hung runner when its connection closes
    assert gone(f"{mark}.py run "), "the interrupted launch's runner outlived the session"


# Android's `settings`, `svc` and `input` on the emulated device (its stand-ins keep the stay-on value in a file).
ANDROID_STANDINS = {
    "settings": '#!/bin/sh\nf="$HOME/stay_on"\ncase "$1 $2 $3" in\n'
                '  "get global stay_on_while_plugged_in") cat "$f" 2>/dev/null || echo 0 ;;\n'
                '  "put global stay_on_while_plugged_in") echo "$4" > "$f" ;;\n  *) exit 1 ;;\nesac\n',
    "svc": '#!/bin/sh\n[ "$1 $2" = "power stayon" ] || exit 1\n'
           'case "$3" in true) echo 7 > "$HOME/stay_on" ;; false) echo 0 > "$HOME/stay_on" ;; *) exit 1 ;; esac\n',
    "input": '#!/bin/sh\necho "$*" >> "$HOME/input.log"\n',
}


def test_android_steps_over_adb_keep_the_screen_on_and_put_it_back(fake_adbd, adb_server, tmp_path):
    standins = [fake_adbd.bin_dir / name for name in ANDROID_STANDINS]
    for path, text in zip(standins, ANDROID_STANDINS.values()):
        path.write_text(text)
        path.chmod(0o755)
    stay_on = fake_adbd.sandbox / "stay_on"
    stay_on.write_text("0\n")
    try:
        cool = sysfs(tmp_path / "sys", cpus=1, temp_mc=30000)
        (tmp_path / "devices.yaml").write_text(yaml.safe_dump({"devices": {"n7": adb_device_entry(
            adb_server, fake_adbd.serial, tmp_path / "work",
            prepare={"governor": "performance", "screen_on": True, "sysfs": str(cool)})}}))
        spec = load_inventory(tmp_path / "devices.yaml").get("n7")
        preparation = Preparation(spec.name, spec.prepare)
        prepare_on(spec, preparation)
        governor, screen = preparation.steps
        assert governor["done"] and governor["old"] == {"cpu0": "schedutil"}
        assert screen == {"name": "screen_on", "done": True, "reason": None, "old": "0", "new": "stay on",
                          "restored": None, "restore_reason": None}
        assert stay_on.read_text() == "7\n" and "KEYCODE_WAKEUP" in (fake_adbd.sandbox / "input.log").read_text()
        assert (cool / GOVERNOR.format(n=0)).read_text() == "performance\n"
        restore_on(spec, preparation)
        assert stay_on.read_text() == "0\n" and screen["restored"] is True
        assert (cool / GOVERNOR.format(n=0)).read_text() == "schedutil\n" and governor["restored"] is True
    finally:
        for path in standins:
            path.unlink(missing_ok=True)
        stay_on.unlink(missing_ok=True)


@pytest.mark.parametrize("old", ["2", "3"])
def test_the_screen_restore_puts_back_the_old_stay_on_value_whatever_it_was(fake_adbd, adb_server, tmp_path, old):
    # Neither 0 (what `svc power stayon false` leaves) nor 7 (what `svc power stayon true` sets): only a restore
    # of the value read before can put it back.
    standins = [fake_adbd.bin_dir / name for name in ANDROID_STANDINS]
    for path, text in zip(standins, ANDROID_STANDINS.values()):
        path.write_text(text)
        path.chmod(0o755)
    stay_on = fake_adbd.sandbox / "stay_on"
    stay_on.write_text(f"{old}\n")
    try:
        (tmp_path / "devices.yaml").write_text(yaml.safe_dump({"devices": {"n7": adb_device_entry(
            adb_server, fake_adbd.serial, tmp_path / "work", prepare={"screen_on": True})}}))
        spec = load_inventory(tmp_path / "devices.yaml").get("n7")
        preparation = Preparation(spec.name, spec.prepare)
        prepare_on(spec, preparation)
        (screen,) = preparation.steps
        assert screen["done"] is True and screen["old"] == old and stay_on.read_text() == "7\n"
        restore_on(spec, preparation)
        assert stay_on.read_text() == f"{old}\n" and screen["restored"] is True
    finally:
        for path in standins:
            path.unlink(missing_ok=True)
        stay_on.unlink(missing_ok=True)
