"""The plugin end to end on remote devices: the loopback sshd and the emulated adbd run the same suite as
`local`, with the same shape of results; faults (killed runner, hung runner, dropped connection, wrong
host key) fail clearly, keep what was measured and quarantine the device when it keeps failing."""

from __future__ import annotations

import csv
import datetime as dt
import json
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
import yaml

from pytest_zbench.host.devices.environment import BUSY_LOAD_PER_CORE
from pytest_zbench.host.run_record import validate_run
from pytest_zbench.regression.history import RunInfo
from tests.remote.servers import adb_device_entry, runner_env
from tests.waiting import gone, pids_with

RECT_RUNNER = Path(__file__).resolve().parent.parent / "thirdparty" / "rect_runner.py"
DISPLAY = {"width": 64, "height": 48, "refresh_hz": 60}
SCENES = ("mini.fill.x1", "mini.fill.x2")


def project_devices(project) -> dict:
    """The project's own devices (local, rectonly), as its conftest wrote them."""
    return yaml.safe_load((project.root / "devices.yaml").read_text())["devices"]


def marked_runner(folder: Path, *, rect: bool = False) -> tuple[list[str], str]:
    """A runner whose command line carries a unique marker (for pgrep on the device): a copy of the
    rect-only runner, or a script that starts the reference runner."""
    mark = f"zbench-runner-{uuid.uuid4().hex[:10]}"
    script = folder / f"{mark}.py"
    if rect:
        shutil.copyfile(RECT_RUNNER, script)
    else:
        script.write_text("import runpy\nrunpy.run_module('pytest_zbench.runner', run_name='__main__', alter_sys=True)\n")
    return [sys.executable, str(script)], mark


class Remote:
    """The project's inventory plus one remote device, `ssh` (loopback sshd) or `adb` (emulated adbd)."""

    def __init__(self, request: pytest.FixtureRequest, project, kind: str) -> None:
        self.project, self.kind, self.request = project, kind, request
        self.name = {"ssh": "pi", "adb": "n7"}[kind]
        if kind == "ssh":
            self.server = request.getfixturevalue("sshd")
        else:
            self.adb_server = request.getfixturevalue("adb_server")
            self.server = request.getfixturevalue("fake_adbd")

    def entry(self, **overrides) -> dict:
        workdir = str(self.project.root / f"{self.kind}-device")
        if self.kind == "ssh":
            entry = self.server.device_entry(workdir=workdir, display=DISPLAY)
        else:
            entry = adb_device_entry(self.adb_server, self.server.serial, Path(workdir), display=DISPLAY)
        entry.update(overrides)
        return entry

    def write(self, **overrides) -> None:
        devices = project_devices(self.project)
        devices[self.name] = self.entry(**overrides)
        (self.project.root / "devices.yaml").write_text(yaml.safe_dump({"devices": devices}))

    def drop(self) -> int:
        return self.server.drop_connections()


@pytest.fixture(params=["ssh", "adb"])
def remote(request, project) -> Remote:
    return Remote(request, project, request.param)


def rows(project, scene: dict) -> list[dict]:
    return list(csv.DictReader(open(project.results / scene["samples_file"])))


def scenes_by_id(document: dict) -> dict[str, dict]:
    return {s["id"]: s for s in document["scenes"]}


@pytest.mark.acceptance
def test_remote_device_runs_the_suite_like_local(project, remote):
    remote.write()
    project.run("--zbench-device=local", "-k", "mini", "--zbench-update-goldens", goldens=True).assert_outcomes(passed=4)
    local = project.run_json()
    local_captures = {s: (project.results / "local" / s / "launch-0" / "capture-0.png").read_bytes() for s in SCENES}
    local_rows = {s["id"]: len(rows(project, s)) for s in local["scenes"]}

    result = project.run(f"--zbench-device={remote.name}", "-k", "mini", goldens=True)
    result.assert_outcomes(passed=4)  # perf + golden, against the goldens the local device wrote
    document = project.run_json()
    assert validate_run(document) == []
    scenes = scenes_by_id(document)
    assert set(scenes) == set(SCENES)
    for scene_id, scene in scenes.items():
        assert scene["device"] == remote.name and scene["outcome"] == "passed"
        assert scene["correctness"]["outcome"] == "passed"
        assert len(rows(project, scene)) == local_rows[scene_id] == 2 * (2 + 6)
        capture = project.results / remote.name / scene_id / "launch-0" / "capture-0.png"
        assert capture.read_bytes() == local_captures[scene_id]
        # every launch: when it ran, how it ended, the platform sampled before and after it
        assert [l["launch"] for l in scene["launches"]] == [0, 1]
        for launch in scene["launches"]:
            assert launch["status"] == "complete" and launch["exit_code"] == 0 and launch["retried"] is None
            assert launch["started_utc"] < launch["ended_utc"]
            before, after = launch["conditions"]["before"], launch["conditions"]["after"]
            assert before["sampled_utc"] <= after["sampled_utc"]
            assert before["readings"]["load_avg"] and after["power"] in ("plugged", "battery", "unknown")

    device = document["devices"][remote.name]
    assert document["device"]["id"] == remote.name and document["device"]["transport"] == remote.kind
    assert len(device["fingerprint"]) == 16 and device["device"]["fingerprint"] == device["fingerprint"]
    # the regression history hashes the same plain dict to the same fingerprint
    run = RunInfo(device=remote.name, backend="software", build_hash="x", environment=device["environment"])
    assert run.fingerprint == device["fingerprint"]
    assert device["conditions"]["launches_sampled"] == 4
    # the device's own load, as its probe read it, is what the background load note goes by (methodology §8)
    load, cores = device["conditions"].get("load_avg_1m"), (device["device"].get("cpu") or {}).get("cores")
    busy = load is not None and bool(cores) and load / cores > BUSY_LOAD_PER_CORE
    assert bool(device["conditions"]["background_load_note"]) is busy
    assert not busy or device["conditions"]["background_load_note"].startswith(f"device {remote.name}: load average")
    if remote.kind == "adb":  # the Android probe through the emulated adbd: getprop and dumpsys battery
        assert device["device"]["model"] == "Nexus 7" and device["device"]["soc"] == "tegra3"
        assert device["device"]["os"] == "Android 7.1.2"
        assert device["conditions"]["power"] == "plugged" and device["conditions"]["battery_pct"] == 87
        first = scenes["mini.fill.x1"]["launches"][0]["conditions"]["before"]
        assert first["readings"]["battery"]["temp_c"] == 31.2 and first["battery_pct"] == 87
    else:
        assert device["device"]["os"] and device["device"]["kernel"] and device["device"]["cpu"]["cores"] >= 1
    # No credential and no environment value in run.json. The runner's argv from devices.yaml is recorded on
    # purpose (the runner's identity, docs/native-runner.md): here it is the checkout's own interpreter, so the
    # checkout's path (also PYTHONPATH's value) is looked for everywhere else.
    recorded = json.loads((project.results / "run.json").read_text())
    for section in (recorded, *recorded["devices"].values()):  # the run's device and each device's section
        section["gpu"]["runner"].pop("argv")
    text = json.dumps(recorded)
    for secret in ("identity_file", "known_hosts", "id_ed25519", "PYTHONPATH", str(Path(__file__).parents[2])):
        assert secret not in text, secret

    # the same device twice: the same fingerprint
    project.run(f"--zbench-device={remote.name}", "-k", "mini.fill.x1").assert_outcomes(passed=1)
    assert project.run_json()["devices"][remote.name]["fingerprint"] == device["fingerprint"]


@pytest.mark.acceptance
def test_runner_killed_mid_run_reads_as_a_signal_and_keeps_samples(project, remote):
    runner, _ = marked_runner(project.root, rect=True)
    remote.write(runner=runner, env={**runner_env(), "RECT_RUNNER_KILL_AT": "5"})
    result = project.run(f"--zbench-device={remote.name}", "-k", "mini")
    result.assert_outcomes(failed=2)  # a runner killed by a signal fails its scene; the device stays in use
    exit_status = {"ssh": -9, "adb": 137}[remote.kind]
    result.stdout.fnmatch_lines([f"*killed by signal 9 (SIGKILL) (exit status {exit_status})*", "*Samples kept*"])
    document = project.run_json()
    assert validate_run(document) == [] and document["quarantined"] == {}
    for scene in document["scenes"]:
        assert scene["partial"] is True and len(rows(project, scene)) == 2 * 5
        assert [l["status"] for l in scene["launches"]] == ["failed", "failed"]
        assert [l["exit_code"] for l in scene["launches"]] == [exit_status] * 2


@pytest.mark.acceptance
def test_hung_runner_is_killed_on_the_device_and_the_device_quarantined(project, remote):
    runner, mark = marked_runner(project.root, rect=True)
    remote.write(runner=runner, env={**runner_env(), "RECT_RUNNER_HANG": "1"})
    result = project.run(f"--zbench-device={remote.name}", "-k", "mini", "--zbench-timeout=2", "-rs")
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines([
        "*killed at its 2 s deadline*",
        f"*device {remote.name} is quarantined for the rest of this session: 2 device faults in a row*",
    ])
    assert gone(mark), "a runner killed at its deadline is still running on the device"
    document = project.run_json()
    assert validate_run(document) == []
    scenes = scenes_by_id(document)
    hung = scenes["mini.fill.x1"]
    assert [l["status"] for l in hung["launches"]] == ["timeout", "timeout"]
    assert len(rows(project, hung)) == 2  # one frame written before each hang, kept
    assert scenes["mini.fill.x2"]["outcome"] == "skipped" and "quarantined" in scenes["mini.fill.x2"]["skipped"]
    assert remote.name in document["quarantined"]


@pytest.mark.acceptance
def test_connection_dropped_mid_launch_is_retried_once(project, remote):
    runner, mark = marked_runner(project.root)
    remote.write(runner=runner)
    dropped: list[int] = []

    def drop_once() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if pids_with(f"{mark}.py run "):
                time.sleep(0.3)  # a few frames into the launch
                dropped.append(remote.drop())
                return
            time.sleep(0.05)

    thread = threading.Thread(target=drop_once, daemon=True)
    thread.start()
    # paced, 90 frames: long enough to drop the connection in the middle of the first launch
    result = project.run(f"--zbench-device={remote.name}", "-k", "mini.fill.x1", "--zbench-frames=90")
    thread.join(5)
    assert dropped and dropped[0] >= 1
    result.assert_outcomes(passed=1)
    assert gone(mark)
    scene = project.run_json()["scenes"][0]
    first = scene["launches"][0]
    assert first["status"] == "complete" and first["retried"] is not None
    assert "lost" in first["retried"]["reason"] or "closed" in first["retried"]["reason"]
    assert (project.results / first["retried"]["kept_in"]).is_dir()  # the lost attempt's files are kept
    assert [i["kind"] for i in scene["issues"]] == ["retried"]
    assert scene["launches"][1]["retried"] is None
    assert len(rows(project, scene)) == 2 * (2 + 90)  # only the two counted launches in the samples


def test_host_key_mismatch_fails_once_then_the_device_is_quarantined(project, sshd, tmp_path):
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    bad = tmp_path / "known_hosts"
    bad.write_text(sshd.known_hosts_line(other.with_suffix(".pub")))
    remote = Remote.__new__(Remote)
    remote.project, remote.kind, remote.name, remote.server = project, "ssh", "pi", sshd
    remote.write(known_hosts=str(bad))
    result = project.run("--zbench-device=pi", "-k", "mini", "-rs")
    result.assert_outcomes(errors=1, skipped=1)
    result.stdout.fnmatch_lines([
        f"*host key of 127.0.0.1:{sshd.port} does not match known_hosts file {bad}*",
        "*device pi is quarantined for the rest of this session*does not match known_hosts*",
    ])


@pytest.mark.acceptance
def test_two_devices_over_two_workers_never_measure_one_device_at_once(project, sshd):
    devices = project_devices(project)
    for name in ("pi-a", "pi-b"):
        devices[name] = sshd.device_entry(workdir=str(project.root / f"{name}-work"), display=DISPLAY)
    (project.root / "devices.yaml").write_text(yaml.safe_dump({"devices": devices}))
    lease_dir = project.root / "leases"
    result = project.run("--zbench-device=pi-a,pi-b", "-k", "mini", "-n", "2", f"--zbench-lease-dir={lease_dir}")
    result.assert_outcomes(passed=4)
    document = project.run_json()
    assert validate_run(document) == []
    assert sorted((s["device"], s["id"]) for s in document["scenes"]) == sorted(
        (d, s) for d in ("pi-a", "pi-b") for s in SCENES)

    def moment(text: str) -> dt.datetime:
        return dt.datetime.fromisoformat(text)

    spans = sorted((moment(s["launches"][0]["started_utc"]), moment(s["launches"][-1]["ended_utc"]), s["device"])
                   for s in document["scenes"])
    # Both names reach one sshd, so they share one lease (keyed by address, not by name): no two scenes,
    # of either device, were ever measured at the same time.
    for (_, end, _), (start, _, _) in zip(spans, spans[1:]):
        assert end <= start, spans
    assert [p.name for p in lease_dir.iterdir()] == [f"ssh-127.0.0.1-{sshd.port}.lock"]
