"""Device preparation (README "Preparing a device"): the inventory's `prepare` keys, and the steps' logic on
plain values (the scripts' output, a clock and a temperature reader). The steps on a real device over ssh
and an interrupted session are in tests/remote/test_prepare_remote.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_zbench.errors import InventoryError
from pytest_zbench.host.devices.prepare import (
    Preparation,
    command_record,
    cool_down,
    cooldown_lines,
    cooldown_wait,
    governor_record,
    governor_restore_args,
    hottest_c,
    needs_root,
    prepare_on,
    restore_on,
    screen_record,
)
from pytest_zbench.host.run_record import validate_run
from pytest_zbench.inventory import CommandStep, CooldownSpec, PrepareSpec, load_inventory
from pytest_zbench.transports import make_transport

SSH = {"transport": "ssh", "host": "pi3b.lan", "user": "pi"}


def load(tmp_path: Path, entry: dict):
    path = tmp_path / "devices.yaml"
    path.write_text(yaml.safe_dump({"devices": {"dev1": entry}}))
    return load_inventory(path).get("dev1")


# -- inventory keys

def test_prepare_keys_load(tmp_path):
    spec = load(tmp_path, {**SSH, "platform": "raspberrypi", "prepare": {
        "governor": "performance", "cooldown": {"below_c": 50, "max_wait_s": 120}, "sysfs": "/srv/sys/",
        "commands": [{"name": "stop-weston", "run": ["systemctl", "stop", "weston"],
                      "restore": ["systemctl", "start", "weston"]}, {"name": "sync", "run": ["sync"]}]}})
    assert spec.prepare == PrepareSpec(
        governor="performance", cooldown=CooldownSpec(below_c=50.0, max_wait_s=120.0, poll_s=5.0),
        sysfs="/srv/sys", commands=(CommandStep("stop-weston", ("systemctl", "stop", "weston"),
                                                ("systemctl", "start", "weston")), CommandStep("sync", ("sync",))))
    assert load(tmp_path, SSH).prepare is None  # nothing is done to a device unless its entry asks
    assert load(tmp_path, {"transport": "local"}).prepare is None


@pytest.mark.parametrize("prepare, key, words", [
    ("performance", "prepare", "expected a mapping"),
    ({"governer": "performance"}, "prepare.governer", "not a key of 'prepare'"),
    ({"governor": "perf; reboot"}, "prepare.governor", "governor name"),
    ({"screen_on": True}, "prepare.screen_on", "platform android, not linux"),
    ({"screen_on": "yes please"}, "prepare.screen_on", "true or false"),
    ({"cooldown": 50}, "prepare.cooldown", "below_c"),
    ({"cooldown": {"below_c": 500}}, "prepare.cooldown.below_c", "0 to 150"),
    ({"cooldown": {"below_c": 50, "max_wait_s": 0}}, "prepare.cooldown.max_wait_s", "positive number"),
    ({"cooldown": {"below_c": 50, "wait": 3}}, "prepare.cooldown.wait", "not a key of 'cooldown'"),
    ({"sysfs": "sys"}, "prepare.sysfs", "absolute"),
    ({"commands": "systemctl stop weston"}, "prepare.commands", "list of steps"),
    ({"commands": [{"name": "x", "run": "systemctl stop weston"}]}, "prepare.commands[0].run", "argv list"),
    ({"commands": [{"name": "governor", "run": ["true"]}]}, "prepare.commands[0].name", "built-in"),
    ({"commands": [{"name": "a", "run": ["true"]}, {"name": "a", "run": ["true"]}]}, "prepare.commands[1].name",
     "unique"),
    ({"commands": [{"name": "a", "run": ["true"], "undo": ["true"]}]}, "prepare.commands[0].undo", "allowed"),
])
def test_prepare_mistakes_name_file_device_and_key(tmp_path, prepare, key, words):
    with pytest.raises(InventoryError) as caught:
        load(tmp_path, {**SSH, "prepare": prepare})
    message = str(caught.value)
    assert str(tmp_path / "devices.yaml") in message and "'dev1'" in message and f"key {key!r}" in message
    assert words in message


def test_built_in_steps_are_per_platform(tmp_path):
    with pytest.raises(InventoryError, match="prepare.governor.*not ios.*prepare.commands"):
        load(tmp_path, {**SSH, "platform": "ios", "prepare": {"governor": "performance"}})
    assert load(tmp_path, {**SSH, "platform": "ios", "prepare": {"commands": [{"name": "a", "run": ["x"]}]}})
    assert load(tmp_path, {"transport": "adb", "serial": "s", "platform": "android",
                           "prepare": {"screen_on": True}}).prepare.screen_on


# -- the governor step

def test_governor_set_on_every_cpu_is_done_and_restores_what_it_changed():
    out = "uid 0\ncpu cpu0 schedutil set\ncpu cpu1 performance same\n"
    record = governor_record("performance", 0, out, sysfs="/sys")
    assert record["done"] is True and record["reason"] is None
    assert record["old"] == {"cpu0": "schedutil", "cpu1": "performance"} and record["new"] == "performance"
    assert record["changed"] == ["cpu0"]
    assert governor_restore_args(record) == ["cpu0", "schedutil"]  # cpu1 was already performance


def test_governor_not_writable_as_a_user_needs_root_and_nothing_is_restored():
    out = ("uid 1000\ncpu cpu0 ondemand failed sh: 1: cannot create /sys/x: Permission denied \n"
           "cpu cpu1 ondemand failed sh: 1: cannot create /sys/y: Permission denied \n")
    record = governor_record("performance", 0, out, sysfs="/sys")
    assert record["done"] is False and record["reason"].startswith("needs root: cpu0: needs root (sh: 1: cannot")
    assert record["old"] == {"cpu0": "ondemand", "cpu1": "ondemand"} and record["changed"] == []
    assert governor_restore_args(record) == []
    # as root, a failed write is its own error, not "needs root"
    as_root = governor_record("performance", 0, out.replace("uid 1000", "uid 0"), sysfs="/sys")
    assert as_root["done"] is False and "needs root" not in as_root["reason"] and "Permission denied" in as_root["reason"]


def test_governor_absent_or_unavailable_is_not_done_with_the_reason():
    none = governor_record("performance", 0, "uid 0\nnone\n", sysfs="/data/sys")
    assert none["done"] is False and "no cpufreq governor under /data/sys/devices/system/cpu" in none["reason"]
    partial = governor_record("performance", 0, "uid 0\ncpu cpu0 ondemand set\n"
                                                 "cpu cpu4 ondemand unavailable ondemand powersave\n", sysfs="/sys")
    assert partial["done"] is False and "cpu4: performance is not one of its governors" in partial["reason"]
    assert governor_restore_args(partial) == ["cpu0", "ondemand"]  # what was changed is still undone
    failed = governor_record("performance", None, "timed out after 30 s", sysfs="/sys")
    assert failed["done"] is False and "timed out" in failed["reason"]


def test_a_restore_never_passes_on_what_the_device_made_up():
    record = governor_record("performance", 0, "uid 0\ncpu cpu0 $(reboot) set\ncpu cpu1 ondemand set\n", sysfs="/sys")
    assert governor_restore_args(record) == ["cpu1", "ondemand"]


def test_needs_root_only_for_a_user():
    assert needs_root(2000, " Permission denied ") == "needs root (Permission denied)"
    assert needs_root(0, "Read-only file system") == needs_root(None, "Read-only file system") == \
        "Read-only file system"


# -- screen, commands, temperatures

def test_screen_on_records_the_old_setting():
    done = screen_record(0, "old 0\nset\n")
    assert done["done"] is True and done["old"] == "0" and done["new"] == "stay on"
    failed = screen_record(0, "old null\nfailed svc: not found\n")
    assert failed["done"] is False and failed["old"] is None and "svc: not found" in failed["reason"]


def test_command_step_done_by_its_exit_code():
    step = CommandStep("stop-weston", ("systemctl", "stop", "weston"))
    assert command_record(step, 0, "")["done"] is True
    failed = command_record(step, 5, "Failed to stop weston.service: Access denied\n")
    assert failed["done"] is False and failed["reason"] == "exit 5: Failed to stop weston.service: Access denied"


def test_hottest_zone_in_degrees():
    assert hottest_c("thermal_zone0 cpu 48312\nthermal_zone1 gpu 51000\nthermal_zone2 bogus -274000\n") == 51.0
    assert hottest_c("thermal_zone0 cpu 45\n") == 45.0  # old kernels report whole degrees
    assert hottest_c("") is None


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_cooldown_waits_until_under_the_threshold():
    clock = Clock()
    temps = iter([62.0, 55.0, 49.5])
    record = cooldown_wait(CooldownSpec(below_c=50, max_wait_s=60, poll_s=5), lambda: next(temps),
                           clock=clock, sleep=clock.sleep)
    assert record == {"below_c": 50, "max_wait_s": 60, "temp_start_c": 62.0, "temp_end_c": 49.5, "waited_s": 10.0,
                      "reached": True, "reason": None}


def test_cooldown_wait_is_bounded_and_a_hot_scene_says_so():
    clock = Clock()
    record = cooldown_wait(CooldownSpec(below_c=50, max_wait_s=12, poll_s=5), lambda: 70.0, clock=clock,
                           sleep=clock.sleep)
    assert record["reached"] is False and record["waited_s"] == 12.0 and "still 70 °C after the 12 s wait" in \
        record["reason"]
    cool = cooldown_wait(CooldownSpec(below_c=50), lambda: 40.0, clock=clock, sleep=clock.sleep)
    assert cool["reached"] is True and cool["waited_s"] == 0.0
    blind = cooldown_wait(CooldownSpec(below_c=50), lambda: None, clock=clock, sleep=clock.sleep)
    assert blind["reached"] is False and blind["reason"] == "no readable thermal zone"


def test_an_unreachable_device_at_restore_is_recorded_on_each_step_to_undo():
    preparation = Preparation("pi", PrepareSpec(governor="performance"), steps=[
        governor_record("performance", 0, "uid 0\ncpu cpu0 ondemand set\n", sysfs="/sys"),
        command_record(CommandStep("noop", ("true",)), 1, "")])
    assert "governor done (was ondemand); noop not done: exit 1" in preparation.summary()
    preparation.fail_restore("could not reach the device to restore it: connection refused")
    governor, noop = preparation.steps
    assert governor["restored"] is False and "connection refused" in governor["restore_reason"]
    assert noop["restored"] is None  # nothing was done, nothing to undo
    assert preparation.restored
    # a governor written on some CPUs only is not done, and still has those CPUs to undo
    partial = Preparation("pi", PrepareSpec(governor="performance"), steps=[governor_record(
        "performance", 0, "uid 0\ncpu cpu0 ondemand set\ncpu cpu1 ondemand failed Device busy\n", sysfs="/sys")])
    assert not partial.steps[0]["done"] and partial.to_undo() == partial.steps
    partial.fail_restore("connection refused")
    assert partial.steps[0]["restored"] is False and partial.to_undo() == []


def test_a_scene_measured_hot_gets_a_terminal_line():
    clock = Clock()
    hot = cooldown_wait(CooldownSpec(below_c=50, max_wait_s=1), lambda: 70.0, clock=clock, sleep=clock.sleep)
    scenes = [{"id": "fill.x1", "device": "pi", "cooldown": {**hot, "reached": False}},
              {"id": "fill.x2", "device": "pi", "cooldown": {**hot, "reached": True}}, {"id": "fill.x3", "device": "pi"}]
    assert cooldown_lines(scenes) == [f"cooldown: fill.x1 on pi was measured hot: {hot['reason']} (below_c 50; "
                                      "run.json scenes[].cooldown)"]


# -- the steps' scripts on a real shell (the local transport; over ssh: tests/remote/test_prepare_remote.py)

def fake_sysfs(root: Path, governors: dict[str, str], temp_mc: int | None) -> Path:
    for cpu, governor in governors.items():
        folder = root / "devices/system/cpu" / cpu / "cpufreq"
        folder.mkdir(parents=True)
        (folder / "scaling_governor").write_text(governor + "\n")
        (folder / "scaling_available_governors").write_text("ondemand performance\n")
    if temp_mc is not None:
        zone = root / "class/thermal/thermal_zone0"
        zone.mkdir(parents=True)
        (zone / "temp").write_text(f"{temp_mc}\n")
    return root


def test_the_steps_run_on_a_device_and_are_undone_in_reverse_order(tmp_path):
    sys_root = fake_sysfs(tmp_path / "sys", {"cpu0": "ondemand", "cpu1": "performance"}, 38500)
    log = tmp_path / "log"
    spec = load(tmp_path, {"transport": "local", "workdir": str(tmp_path / "work"), "prepare": {
        "governor": "performance", "sysfs": str(sys_root), "cooldown": {"below_c": 40, "max_wait_s": 5},
        "commands": [{"name": "note", "run": ["sh", "-c", 'echo "run $(cat "$0")" >> "$1"', str(
            sys_root / "devices/system/cpu/cpu0/cpufreq/scaling_governor"), str(log)],
            "restore": ["sh", "-c", 'echo "restore $(cat "$0")" >> "$1"', str(
                sys_root / "devices/system/cpu/cpu0/cpufreq/scaling_governor"), str(log)]},
            {"name": "fails", "run": ["sh", "-c", "echo no such service >&2; exit 3"], "restore": ["true"]}]}})
    preparation = Preparation(spec.name, spec.prepare)
    prepare_on(spec, preparation)
    governor, cooldown, note, fails = preparation.steps
    assert governor["done"] and governor["old"] == {"cpu0": "ondemand", "cpu1": "performance"}
    assert governor["changed"] == ["cpu0"]
    assert cooldown["done"] and cooldown["temp_c"] == 38.5
    assert note["done"] and not fails["done"] and fails["reason"] == "exit 3: no such service"
    assert (sys_root / "devices/system/cpu/cpu0/cpufreq/scaling_governor").read_text() == "performance\n"
    transport = make_transport(spec)
    transport.open()
    try:  # the cooldown before a scene reads the same zones
        assert cool_down(transport, spec.prepare)["reached"] is True
    finally:
        transport.close()
    restore_on(spec, preparation)
    assert (sys_root / "devices/system/cpu/cpu0/cpufreq/scaling_governor").read_text() == "ondemand\n"
    assert (sys_root / "devices/system/cpu/cpu1/cpufreq/scaling_governor").read_text() == "performance\n"
    assert log.read_text() == "run performance\nrestore performance\n"  # the governor is undone after it
    assert governor["restored"] is True and note["restored"] is True and fails["restored"] is None
    restore_on(spec, preparation)  # once only
    assert log.read_text().count("restore") == 1


def test_a_kernel_without_cpufreq_or_thermal_zones_is_recorded_as_such(tmp_path):
    spec = load(tmp_path, {"transport": "local", "workdir": str(tmp_path / "work"), "prepare": {
        "governor": "performance", "sysfs": str(tmp_path / "empty"), "cooldown": {"below_c": 40}}})
    preparation = Preparation(spec.name, spec.prepare)
    prepare_on(spec, preparation)
    governor, cooldown = preparation.steps
    assert not governor["done"] and "no cpufreq governor under" in governor["reason"]
    assert not cooldown["done"] and "no readable thermal zone under" in cooldown["reason"]
    restore_on(spec, preparation)
    assert preparation.restored and governor["restored"] is None


def test_a_prepared_local_device_end_to_end(project, tmp_path):
    """One session on a `local` device whose entry asks for preparation (README "Preparing a device"): the
    terminal lines, run.json conditions.prepared and scenes[].cooldown, and the governor back at the end."""
    sys_root = fake_sysfs(tmp_path / "sys", {"cpu0": "ondemand"}, 45000)
    devices = yaml.safe_load((project.root / "devices.yaml").read_text())
    devices["devices"]["local"]["prepare"] = {"governor": "performance", "sysfs": str(sys_root),
                                              "cooldown": {"below_c": 40, "max_wait_s": 0.5, "poll_s": 0.2}}
    (project.root / "devices.yaml").write_text(yaml.safe_dump(devices))
    result = project.run("--zbench-device=local", "--zbench-runs=1", "-k", "mini.fill.x1")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["zbench: prepared local: governor done (was ondemand); cooldown done",
                                 "*zbench: restored local", "cooldown: mini.fill.x1 on local was measured hot: *"])
    document = project.run_json()
    assert validate_run(document) == []
    governor, cooldown = document["conditions"]["prepared"]
    assert governor["name"] == "governor" and governor["done"] and governor["restored"] is True
    assert cooldown["name"] == "cooldown" and cooldown["done"] and cooldown["restored"] is None
    (scene,) = document["scenes"]
    assert scene["cooldown"]["reached"] is False and scene["cooldown"]["temp_start_c"] == 45.0
    assert (sys_root / "devices/system/cpu/cpu0/cpufreq/scaling_governor").read_text() == "ondemand\n"


def test_cooldown_is_reached_below_the_threshold_not_at_it():
    clock = Clock()
    at = cooldown_wait(CooldownSpec(below_c=50, max_wait_s=12, poll_s=5), lambda: 50.0, clock=clock, sleep=clock.sleep)
    assert at["reached"] is False and at["temp_end_c"] == 50.0 and at["waited_s"] == 12.0  # waited all it could
    clock = Clock()
    temps = iter([50.0, 50.0, 49.9])
    under = cooldown_wait(CooldownSpec(below_c=50, max_wait_s=60, poll_s=5), lambda: next(temps), clock=clock,
                          sleep=clock.sleep)
    assert under["reached"] is True and under["temp_end_c"] == 49.9 and under["waited_s"] == 10.0
