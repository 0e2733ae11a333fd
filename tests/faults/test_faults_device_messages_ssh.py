"""The runner's stderr and the workdir over the loopback sshd (tests/remote/servers.py): escaped and masked
as through the local transport, and a launch removes only the folder it created in the device's workdir."""

from __future__ import annotations

import sys

import yaml
from test_faults_device_messages import NOISY, TOKEN

from conftest import DISPLAY


def test_runner_stderr_over_ssh_is_escaped_and_masked(ssh_session, faults_sshd):
    session = ssh_session
    script = session.root / "noisy.py"
    script.write_text(NOISY)
    entry = faults_sshd.device_entry(runner=[sys.executable, str(script)], display=DISPLAY)
    entry["env"] = {**entry["env"], "API_TOKEN": TOKEN, "ZBENCH_FAULT": "ok", "ZBENCH_FAULT_MARK": session.mark}
    (session.root / "devices.yaml").write_text(yaml.safe_dump({"devices": {session.name: entry}}))
    result = session.run("-m", "zbench_perf")
    result.assert_outcomes(failed=1)
    text = result.stdout.str() + result.stderr.str()
    document = (session.results / "run.json").read_text()
    report = (session.results / "report.html").read_text()
    for where, content in (("terminal", text), ("run.json", document), ("report.html", report)):
        assert TOKEN not in content, where
        assert "\x1b" not in content and "\x00" not in content and "\x07" not in content, where
    assert "\\x1b[2J" in text and "token=***" in text


def test_a_launch_over_ssh_removes_only_what_it_created(ssh_session, faults_sshd):
    session = ssh_session
    workdir = session.root / "device-folder"
    precious = workdir / "faults.one"
    precious.mkdir(parents=True)
    (precious / "keep.txt").write_text("the device's own file\n")
    session.device(workdir=str(workdir))
    session.run("-m", "zbench_perf").assert_outcomes(passed=1)
    # The transport's own supervisor copy (.zbench-host, transports/ssh.py) stays for the next connection;
    # of the launches nothing is left.
    assert sorted(p.name for p in workdir.iterdir() if p.name != ".zbench-host") == ["faults.one"]
    assert (precious / "keep.txt").read_text() == "the device's own file\n"


def test_an_adb_serial_the_server_does_not_know_is_one_message(local_session):
    from remote.servers import AdbServer, MissingPart, adb_device_entry
    from test_faults_device_messages import assert_once, write_devices

    session = local_session
    try:
        server = AdbServer().start()  # the real adb server, on a port of its own
    except MissingPart as exc:
        from parts import require

        require(False, str(exc))
        return
    try:
        entry = adb_device_entry(server, "127.0.0.1:9", session.root / "device", display=DISPLAY)
        entry["platform"] = "linux"
        write_devices(session, entry)
        assert_once(session.run(), "127.0.0.1:9")
    finally:
        server.stop()
