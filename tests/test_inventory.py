"""The device inventory (README, Devices): the shipped devices.yaml, and every mistake named by file, device, key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from pytest_zbench.errors import InventoryError, UsageError
from pytest_zbench.inventory import CiSpec, DeviceSpec, Display, Inventory, load_inventory

REPO = Path(__file__).resolve().parent.parent

SSH = {"transport": "ssh", "host": "pi3b.lan", "user": "pi"}
ADB = {"transport": "adb", "serial": "015d2bc2a8581a0e"}
COMMAND = {"transport": "command", "push": ["push.sh"], "pull": ["pull.sh"], "exec": ["exec.sh"]}
LOCAL = {"transport": "local"}


def write(tmp_path: Path, data, name: str = "devices.yaml") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data), encoding="utf-8")
    return path


def load_one(tmp_path: Path, entry, name: str = "dev1"):
    return load_inventory(write(tmp_path, {"devices": {name: entry}})).get(name)


def assert_names(exc: pytest.ExceptionInfo, path: Path, device: str | None, key: str | None) -> None:
    message = str(exc.value)
    assert str(path) in message
    if device is not None:
        assert repr(device) in message, message
    if key is not None:
        assert repr(key) in message, message


# ------------------------------------------------------------------------------------ shipped file


def test_repository_inventory_loads():
    inv = load_inventory(REPO / "devices.yaml")
    assert {name: d.transport for name, d in inv.devices.items()} == {
        "local": "local",
        "local-gles2": "local",
        "local-arm64": "local",
        "local-native": "local",
        "local-armhf-native": "local",
        "local-arm64-native": "local",
        "local-cairo": "local",
        "local-arm64-cairo": "local",
        "local-qt-raster": "local",
        "local-qt-gles2": "local",
        "vm-arm64": "ssh",
        "pi3b": "ssh",
        "nexus7": "adb",
        "ipad": "command",
        "touchpad": "command",
        "mac": "ssh",
    }
    local = inv.get("local")
    assert local.backend == "software" and local.runner == ("python", "-m", "pytest_zbench.runner")
    assert local.display == Display(800, 480, 60.0)
    pi = inv.get("pi3b")
    assert (pi.option("host"), pi.option("port"), pi.option("user")) == ("pi3b.lan", 22, "pi")
    assert pi.platform == "raspberrypi" and pi.backend == "gles2" and pi.workdir == "/home/pi/zbench"
    assert pi.option("identity_file") == os.path.expanduser("~/.ssh/zbench")
    assert inv.get("nexus7").option("serial") == "015d2bc2a8581a0e"
    assert inv.get("nexus7").platform == "android"
    assert inv.get("ipad").option("exec") == ["ci/devices/ios-device.sh", "exec"]
    assert inv.get("ipad").platform == "ios" and inv.get("touchpad").platform == "webos"
    assert inv.get("mac").platform == "macos" and inv.get("mac").option("port") is None
    for spec in inv.devices.values():
        assert spec.source == REPO / "devices.yaml"
        assert spec.runner and all(isinstance(a, str) for a in spec.runner)


def test_defaults_of_a_bare_local_device(tmp_path):
    spec = load_one(tmp_path, {"transport": "local"}, name="box")
    assert spec.backend == "software"
    assert spec.runner == ("python", "-m", "pytest_zbench.runner")
    assert spec.platform == "linux"
    assert spec.device_class == "box"
    assert spec.display is None and spec.workdir is None and spec.timeout_s is None
    assert dict(spec.env) == {} and dict(spec.options) == {}


def test_values_are_normalised(tmp_path):
    spec = load_one(tmp_path, {**SSH, "runner": ["zinc-bench", "--level", 3], "env": {"ZINC_LOG": 2},
                               "timeout_s": 90, "display": {"width": 1280, "height": 800}})
    assert spec.runner == ("zinc-bench", "--level", "3")
    assert dict(spec.env) == {"ZINC_LOG": "2"}
    assert spec.timeout_s == 90.0 and isinstance(spec.timeout_s, float)
    assert spec.display == Display(1280, 800, 60.0, refresh_declared=False)  # the device tells the rate


@pytest.mark.parametrize("entry", [LOCAL, SSH, ADB, COMMAND,
                                   {**ADB, "adb_host": "10.0.0.2", "adb_port": 5037},
                                   {**SSH, "port": 2222, "connect_timeout_s": 5, "keepalive_s": 30},
                                   {**COMMAND, "kill": ["kill.sh"]}])
def test_each_transport_with_its_keys_loads(tmp_path, entry):
    spec = load_one(tmp_path, entry)
    assert spec.transport == entry["transport"]
    for key, value in entry.items():
        if key != "transport":
            assert spec.option(key) == value


def test_identity_file_and_known_hosts_expand_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    spec = load_one(tmp_path, {**SSH, "identity_file": "~/.ssh/zbench", "known_hosts": "~/.ssh/known_hosts"})
    assert spec.option("identity_file") == str(tmp_path / "home" / ".ssh" / "zbench")
    assert spec.option("known_hosts") == str(tmp_path / "home" / ".ssh" / "known_hosts")
    assert "~" not in spec.option("identity_file")


def test_public_dict_carries_no_credentials(tmp_path):
    secret = "s3cr3t-token-value"
    spec = load_one(tmp_path, {**SSH, "identity_file": "/keys/zbench_id", "known_hosts": "/keys/known_hosts_file",
                               "env": {"ZINC_TOKEN": secret}, "display": {"width": 8, "height": 4}},
                    name="pi3b")
    public = spec.public_dict()
    assert public == {"id": "pi3b", "transport": "ssh", "backend": "software", "platform": "linux",
                      "device_class": "pi3b", "display": {"width": 8, "height": 4, "refresh_hz": 60.0}}
    text = repr(public)
    for leak in (secret, "zbench_id", "known_hosts_file", "/keys", "ZINC_TOKEN"):
        assert leak not in text


def test_empty_devices_mapping_is_the_embedded_default_alone(tmp_path):
    inv = load_inventory(write(tmp_path, "devices: {}\n"))
    assert list(inv.devices) == ["local"]  # README "Devices": `local` needs no entry
    with pytest.raises(InventoryError, match=r"defines local\."):
        inv.get("pi3b")


def test_unknown_device_lists_the_known_names(tmp_path):
    path = write(tmp_path, {"devices": {"pi3b": SSH, "local": LOCAL}})
    inv = load_inventory(path)
    with pytest.raises(InventoryError) as exc:
        inv.get("nexus9")
    message = str(exc.value)
    assert "'nexus9'" in message and "local, pi3b" in message and str(path) in message
    assert isinstance(exc.value, UsageError)


def test_ci_key_places_a_device_in_the_matrix(tmp_path):
    hosted = load_one(tmp_path, {**LOCAL, "ci": {"labels": ["ubuntu-latest"], "pytest_args": ["--zbench-quick", 5],
                                                 "ab_runner": ["python", "run.py", "--tree={checkout}"]}})
    assert hosted.ci == CiSpec(("ubuntu-latest",), 60, ("--zbench-quick", "5"), ("python", "run.py", "--tree={checkout}"))
    assert hosted.ci.hosted and hosted.ci.runner_from("/w/base") == ("python", "run.py", "--tree=/w/base")
    lab = load_one(tmp_path, {**SSH, "ci": {"labels": ["self-hosted", "zbench", "pi3b"], "timeout_minutes": 7200}})
    assert not lab.ci.hosted and lab.ci.timeout_minutes == 7200 and lab.ci.runner_from("/w") is None
    assert load_one(tmp_path, LOCAL).ci is None


def test_shipped_inventory_has_hosted_local_legs_and_self_hosted_devices():
    inv = load_inventory(REPO / "devices.yaml")
    for name in ("local", "local-gles2"):
        ci = inv.get(name).ci
        assert ci.labels == ("ubuntu-latest",) and ci.hosted and ci.ab_runner is not None
        runner = ci.runner_from("/checkout")
        assert runner[0] == "python" and (REPO / runner[1]).is_file() and runner[2] == "/checkout"
    for name in ("pi3b", "nexus7", "ipad", "touchpad", "mac"):
        ci = inv.get(name).ci
        assert ci is not None and not ci.hosted and {"self-hosted", name} <= set(ci.labels), name


def test_android_app_keys(tmp_path):
    spec = load_one(tmp_path, {**ADB, "platform": "android", "package": "com.zinc.bench",
                               "layer": "SurfaceView[com.zinc.bench/com.zinc.bench.Main](BLAST)#0"})
    assert spec.option("package") == "com.zinc.bench"
    assert spec.option("layer") == "SurfaceView[com.zinc.bench/com.zinc.bench.Main](BLAST)#0"
    assert load_one(tmp_path, {**ADB, "platform": "android", "package": "com.zinc.bench"}).option("layer") is None
    assert load_one(tmp_path, {**ADB, "platform": "android", "package": "com.zinc.bench",
                               "frame_timeline": True}).option("frame_timeline") is True


def test_a_display_without_refresh_hz_leaves_the_rate_to_the_device(tmp_path):
    declared = load_one(tmp_path, {**LOCAL, "display": {"width": 800, "height": 480, "refresh_hz": 60}}).display
    left_out = load_one(tmp_path, {**LOCAL, "display": {"width": 800, "height": 480}}).display
    assert declared is not None and declared.refresh_declared
    assert left_out is not None and not left_out.refresh_declared and left_out.refresh_hz == 60.0


def test_inventory_is_plain_data():
    inv = Inventory(path=Path("x.yaml"), devices={})
    assert inv.path == Path("x.yaml")
    assert DeviceSpec.__dataclass_params__.frozen


# ---------------------------------------------------------------------------------------- mistakes


@pytest.mark.parametrize("entry,key", [
    # unknown keys, including a transport's key on another transport
    ({**LOCAL, "hostname": "x"}, "hostname"),
    ({**LOCAL, "host": "x"}, "host"),
    ({**ADB, "user": "pi"}, "user"),
    ({**SSH, "serial": "abc"}, "serial"),
    # missing required keys per transport
    ({"transport": "ssh", "user": "pi"}, "host"),
    ({"transport": "ssh", "host": "pi3b.lan"}, "user"),
    ({"transport": "adb"}, "serial"),
    ({"transport": "command", "pull": ["p"], "exec": ["e"]}, "push"),
    ({"transport": "command", "push": ["p"], "exec": ["e"]}, "pull"),
    ({"transport": "command", "push": ["p"], "pull": ["p"]}, "exec"),
    # transport
    ({}, "transport"),
    ({"transport": "telnet"}, "transport"),
    ({"transport": ["ssh"]}, "transport"),
    # ports
    ({**SSH, "port": 0}, "port"),
    ({**SSH, "port": 65536}, "port"),
    ({**SSH, "port": -22}, "port"),
    ({**SSH, "port": "22"}, "port"),
    ({**SSH, "port": 22.5}, "port"),
    ({**SSH, "port": True}, "port"),
    ({**ADB, "adb_port": "5037"}, "adb_port"),
    # strings
    ({**SSH, "host": ""}, "host"),
    ({**SSH, "host": 10}, "host"),
    ({**SSH, "user": ["pi"]}, "user"),
    ({**ADB, "serial": 15}, "serial"),
    ({**ADB, "adb_host": 1}, "adb_host"),
    ({**SSH, "identity_file": 5}, "identity_file"),
    ({**LOCAL, "backend": ""}, "backend"),
    ({**LOCAL, "workdir": 3}, "workdir"),
    ({**LOCAL, "device_class": ["x"]}, "device_class"),
    # runner
    ({**LOCAL, "runner": "python -m pytest_zbench.runner"}, "runner"),
    ({**LOCAL, "runner": []}, "runner"),
    ({**LOCAL, "runner": {"argv": "x"}}, "runner"),
    ({**LOCAL, "runner": ["zinc", {"a": 1}]}, "runner"),
    ({**LOCAL, "runner": ["zinc", None]}, "runner"),
    # command argv lists
    ({**COMMAND, "push": "push.sh"}, "push"),
    ({**COMMAND, "exec": []}, "exec"),
    ({**COMMAND, "kill": "kill.sh"}, "kill"),
    # display
    ({**LOCAL, "display": "800x480"}, "display"),
    ({**LOCAL, "display": {"width": 800}}, "display"),
    ({**LOCAL, "display": {"width": 0, "height": 480}}, "display"),
    ({**LOCAL, "display": {"width": 800, "height": -1}}, "display"),
    ({**LOCAL, "display": {"width": 800.5, "height": 480}}, "display"),
    ({**LOCAL, "display": {"width": "800", "height": 480}}, "display"),
    ({**LOCAL, "display": {"width": True, "height": 480}}, "display"),
    ({**LOCAL, "display": {"width": 800, "height": 480, "refresh_hz": 0}}, "display"),
    ({**LOCAL, "display": {"width": 800, "height": 480, "refresh_hz": 5000}}, "display"),
    ({**LOCAL, "display": {"width": 800, "height": 480, "refresh_hz": "60"}}, "display"),
    ({**LOCAL, "display": {"width": 800, "height": 480, "refresh_hz": True}}, "display"),
    ({**LOCAL, "display": {"width": 800, "height": 480, "hz": 60}}, "display"),
    # platform
    ({**LOCAL, "platform": "windows"}, "platform"),
    ({**LOCAL, "platform": "Linux"}, "platform"),
    ({**LOCAL, "platform": 7}, "platform"),
    # env
    ({**LOCAL, "env": ["A=1"]}, "env"),
    ({**LOCAL, "env": "A=1"}, "env"),
    ({**LOCAL, "env": {"A": [1]}}, "env"),
    ({**LOCAL, "env": {"A": None}}, "env"),
    ({**LOCAL, "env": {1: "x"}}, "env"),
    # timeout
    ({**LOCAL, "timeout_s": 0}, "timeout_s"),
    ({**LOCAL, "timeout_s": -5}, "timeout_s"),
    ({**LOCAL, "timeout_s": "60"}, "timeout_s"),
    ({**LOCAL, "timeout_s": True}, "timeout_s"),
    ({**LOCAL, "timeout_s": float("nan")}, "timeout_s"),
    ({**LOCAL, "timeout_s": float("inf")}, "timeout_s"),
    ({**LOCAL, "display": {"width": 800, "height": 480, "refresh_hz": float("nan")}}, "display"),
    # environment names a shell would refuse, known now rather than when the device first opens
    ({**LOCAL, "env": {"A-B": "1"}}, "env"),
    ({**LOCAL, "env": {"1A": "1"}}, "env"),
    ({**LOCAL, "env": {"A\n": "1"}}, "env"),
    ({**LOCAL, "env": {"A B": "1"}}, "env"),
    # ssh seconds
    ({**SSH, "connect_timeout_s": "abc"}, "connect_timeout_s"),
    ({**SSH, "connect_timeout_s": -1}, "connect_timeout_s"),
    ({**SSH, "connect_timeout_s": 0}, "connect_timeout_s"),
    ({**SSH, "keepalive_s": -15}, "keepalive_s"),
    ({**SSH, "keepalive_s": "15"}, "keepalive_s"),
    ({**SSH, "keepalive_s": float("inf")}, "keepalive_s"),
    # ci: the device's leg of the CI matrix
    ({**LOCAL, "ci": ["ubuntu-latest"]}, "ci"),
    ({**LOCAL, "ci": {}}, "ci.labels"),
    ({**LOCAL, "ci": {"labels": []}}, "ci.labels"),
    ({**LOCAL, "ci": {"labels": "self-hosted"}}, "ci.labels"),
    ({**LOCAL, "ci": {"labels": ["self-hosted", ""]}}, "ci.labels"),
    ({**LOCAL, "ci": {"labels": ["self-hosted", None]}}, "ci.labels"),
    ({**LOCAL, "ci": {"labels": ["x"], "runs_on": ["x"]}}, "ci.runs_on"),
    ({**LOCAL, "ci": {"labels": ["x"], "timeout_minutes": 0}}, "ci.timeout_minutes"),
    ({**LOCAL, "ci": {"labels": ["x"], "timeout_minutes": "60"}}, "ci.timeout_minutes"),
    ({**LOCAL, "ci": {"labels": ["x"], "timeout_minutes": 30.5}}, "ci.timeout_minutes"),
    ({**LOCAL, "ci": {"labels": ["x"], "timeout_minutes": True}}, "ci.timeout_minutes"),
    ({**LOCAL, "ci": {"labels": ["ubuntu-latest"], "timeout_minutes": 361}}, "ci.timeout_minutes"),
    ({**LOCAL, "ci": {"labels": ["self-hosted"], "timeout_minutes": 7201}}, "ci.timeout_minutes"),
    ({**LOCAL, "ci": {"labels": ["x"], "pytest_args": "--zbench-quick"}}, "ci.pytest_args"),
    ({**LOCAL, "ci": {"labels": ["x"], "pytest_args": [["-k"]]}}, "ci.pytest_args"),
    ({**LOCAL, "ci": {"labels": ["x"], "ab_runner": "python ci/checkout-runner.py {checkout}"}}, "ci.ab_runner"),
    ({**LOCAL, "ci": {"labels": ["x"], "ab_runner": ["python", "-m", "pytest_zbench.runner"]}}, "ci.ab_runner"),
    # the app whose frames Android times, and its SurfaceFlinger layer (adb only)
    ({**ADB, "platform": "android", "package": "bench"}, "package"),
    ({**ADB, "platform": "android", "package": "com.zinc bench"}, "package"),
    ({**ADB, "platform": "android", "package": "com.zinc.bench; rm -rf /"}, "package"),
    ({**ADB, "platform": "android", "package": 7}, "package"),
    ({**ADB, "platform": "android", "frame_timeline": True}, "frame_timeline"),  # needs package
    ({**ADB, "platform": "android", "package": "com.zinc.bench", "frame_timeline": "yes"}, "frame_timeline"),
    ({**ADB, "platform": "android", "package": "com.zinc.bench", "frame_timeline": "traces"}, "frame_timeline"),
    ({**ADB, "package": "com.zinc.bench"}, "package"),  # platform linux: there is no gfxinfo
    ({**SSH, "platform": "android", "package": "com.zinc.bench"}, "package"),
    ({**ADB, "platform": "android", "layer": "SurfaceView[com.zinc.bench/.Main](BLAST)#0"}, "layer"),
    ({**ADB, "platform": "android", "package": "com.zinc.bench", "layer": "a\nb"}, "layer"),
    ({**ADB, "platform": "android", "package": "com.zinc.bench", "layer": ""}, "layer"),
])
def test_mistake_names_file_device_and_key(tmp_path, entry, key):
    path = write(tmp_path, {"devices": {"pi3b": entry}})
    with pytest.raises(InventoryError) as exc:
        load_inventory(path)
    assert_names(exc, path, "pi3b", key)


def test_first_bad_device_is_named_among_good_ones(tmp_path):
    path = write(tmp_path, {"devices": {"local": LOCAL, "nexus7": {"transport": "adb"}, "pi3b": SSH}})
    with pytest.raises(InventoryError) as exc:
        load_inventory(path)
    assert_names(exc, path, "nexus7", "serial")
    assert "'pi3b'" not in str(exc.value)


@pytest.mark.parametrize("entry", ["local", None, ["transport", "local"], 3])
def test_device_entry_must_be_a_mapping(tmp_path, entry):
    path = write(tmp_path, {"devices": {"pi3b": entry}})
    with pytest.raises(InventoryError) as exc:
        load_inventory(path)
    assert_names(exc, path, "pi3b", None)
    assert "mapping" in str(exc.value)


def test_a_device_name_given_twice_is_refused_naming_both_lines(tmp_path):
    # PyYAML keeps the last of two equal keys: the first device would silently vanish.
    path = write(tmp_path, "devices:\n  pi:\n    transport: local\n  other: {transport: local}\n"
                           "  pi:\n    transport: ssh\n    host: pi.lan\n    user: pi\n")
    with pytest.raises(InventoryError) as exc:
        load_inventory(path)
    message = str(exc.value)
    assert str(path) in message and "'pi'" in message
    assert "line 5" in message and "first at line 2" in message


def test_a_key_given_twice_in_one_device_is_refused(tmp_path):
    path = write(tmp_path, "devices:\n  pi: {transport: local, backend: software, backend: gles2}\n")
    with pytest.raises(InventoryError, match="'backend' is given twice"):
        load_inventory(path)


@pytest.mark.parametrize("name", ["pi 3b", "-pi", "pi/3b", "pi;rm", "", "pi\n"])
def test_bad_device_name(tmp_path, name):
    path = write(tmp_path, {"devices": {name: LOCAL}})
    with pytest.raises(InventoryError) as exc:
        load_inventory(path)
    assert_names(exc, path, name, None)


def test_unknown_top_level_key(tmp_path):
    path = write(tmp_path, {"devices": {"local": LOCAL}, "defaults": {"backend": "gles2"}})
    with pytest.raises(InventoryError) as exc:
        load_inventory(path)
    assert str(path) in str(exc.value) and "'defaults'" in str(exc.value)


@pytest.mark.parametrize("text", ["- local\n- pi3b\n", "just text\n", "", "devices:\n", "devices: [local]\n",
                                  "pi3b: {transport: local}\n"])
def test_non_mapping_file(tmp_path, text):
    path = write(tmp_path, text)
    with pytest.raises(InventoryError) as exc:
        load_inventory(path)
    assert str(path) in str(exc.value) and "'devices'" in str(exc.value)


@pytest.mark.parametrize("text", ["devices:\n  local: {transport: local\n", "devices:\n\tlocal: {}\n",
                                  "devices: {a: 1}\n  b: 2\n"])
def test_invalid_yaml(tmp_path, text):
    path = write(tmp_path, text)
    with pytest.raises(InventoryError) as exc:
        load_inventory(path)
    assert str(path) in str(exc.value)


def test_non_utf8_file(tmp_path):
    path = tmp_path / "devices.yaml"
    path.write_bytes(b"devices:\n  local: {transport: local, description: \"caf\xe9\"}\n")
    with pytest.raises(InventoryError) as exc:
        load_inventory(path)
    assert str(path) in str(exc.value)


def test_missing_file(tmp_path):
    path = tmp_path / "nowhere" / "devices.yaml"
    with pytest.raises(InventoryError) as exc:
        load_inventory(path)
    assert str(path) in str(exc.value) and "--zbench-devices" in str(exc.value)


def test_directory_instead_of_file(tmp_path):
    with pytest.raises(InventoryError) as exc:
        load_inventory(tmp_path)
    assert str(tmp_path) in str(exc.value)


def test_yaml_tags_are_not_executed(tmp_path):
    path = write(tmp_path, "devices:\n  local: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(InventoryError):
        load_inventory(path)
