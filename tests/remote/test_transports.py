"""ssh, adb and command transports against real parts: OpenSSH sshd, the adb server + emulated adbd,
and a command-contract script over a local folder. Faults: deadline, killed runner, dropped connection."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

import pytest_zbench.transports.ssh as ssh_transport
from pytest_zbench.errors import DeviceError, UsageError
from pytest_zbench.transports import make_transport
from tests.remote.servers import adb_device_entry
from tests.waiting import appeared, gone, pids_with

HERE = Path(__file__).resolve().parent
FOLDER_DEVICE = HERE / "folder_device.py"


def marker() -> str:
    return f"zbench-marker-{uuid.uuid4().hex[:12]}"


def run_in_background(t, argv, timeout_s=30.0):
    """Start t.run in a thread; return (thread, box, started) where `started` is set on the first stdout line."""
    box: dict = {}
    started = threading.Event()
    thread = threading.Thread(target=lambda: box.setdefault("r", t.run(argv, timeout_s=timeout_s,
                                                                         on_line=lambda line: started.set())))
    thread.start()
    assert started.wait(15), "the runner did not start"
    return thread, box


HUNG_S = 120  # how long the hung stand-in and its child sleep before ending by themselves


def hung(mark: str, child: bool = False) -> list[str]:
    """A runner stand-in that hangs (optionally with a child of its own), tagged with a marker."""
    code = "import subprocess, sys, time\n"
    if child:
        code += f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep({HUNG_S})', sys.argv[1] + '-child'])\n"
    code += f"print('started', flush=True)\ntime.sleep({HUNG_S})\n"
    return [sys.executable, "-c", code, mark]


class FolderDevice:
    """The command transport's stand-in device (folder_device.py): its agent is started here, outside the
    host's process tree, so that what `exec` starts is out of the host's reach but through the scripts."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> FolderDevice:
        self.root.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen([sys.executable, str(FOLDER_DEVICE), "--root", str(self.root), "serve"])
        deadline = time.monotonic() + 30
        while not (self.root / ".runs" / ".agent.pid").exists():
            assert self.proc.poll() is None and time.monotonic() < deadline, "the folder device did not start"
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(30)

    def entry(self, *, exec_can_stop: bool = True) -> dict:
        prefix = [sys.executable, str(FOLDER_DEVICE), "--root", str(self.root)]
        exec_prefix = prefix + ([] if exec_can_stop else ["--exec-cannot-stop"])
        return {
            "transport": "command", "push": prefix + ["push"], "pull": prefix + ["pull"],
            "exec": exec_prefix + ["exec"], "kill": prefix + ["kill"], "workdir": str(self.root / "work"),
            "platform": "webos", "runner": [sys.executable, "-m", "pytest_zbench.runner"],
            "env": {"PYTHONPATH": str(HERE.parent.parent)},
        }


@pytest.fixture
def folder_device(tmp_path):
    device = FolderDevice(tmp_path / "folder-device").start()
    try:
        yield device
    finally:
        device.stop()


@pytest.fixture(params=["ssh", "adb", "command"])
def transport(request, tmp_path, write_inventory):
    kind = request.param
    if kind == "ssh":
        entry = request.getfixturevalue("sshd").device_entry(workdir=str(tmp_path / "ssh-work"))
    elif kind == "adb":
        adb_server = request.getfixturevalue("adb_server")
        device = request.getfixturevalue("fake_adbd")
        entry = adb_device_entry(adb_server, device.serial, tmp_path / "adb-work")
    else:
        entry = request.getfixturevalue("folder_device").entry()
    spec = write_inventory({"dev": entry})["dev"]
    t = make_transport(spec)
    t.open()
    t.kind = kind  # type: ignore[attr-defined]
    try:
        yield t
    finally:
        t.close()


# -- behaviour common to every transport ----------------------------------------------------------------


def test_run_streams_lines_and_reports_exit_code(transport):
    lines: list[str] = []
    code = "import sys\nfor i in range(3): print(i, flush=True)\nprint('oops', file=sys.stderr)\nsys.exit(3)"
    result = transport.run([sys.executable, "-c", code], timeout_s=20, on_line=lines.append)
    assert result.exit_code == 3 and not result.timed_out and not result.ok
    assert lines == ["0", "1", "2"]
    assert result.stdout == "0\n1\n2\n"
    assert "oops" in result.stderr


def test_argv_is_quoted_element_by_element(transport, tmp_path):
    canary = tmp_path / "canary"
    nasty = ["a b", "$HOME", "`id`", "'; touch " + str(canary) + "; '", '"', "*", "\\n", ""]
    result = transport.run([sys.executable, "-c", "import json, sys; print(json.dumps(sys.argv[1:]))", *nasty],
                           timeout_s=20)
    assert result.ok, result.stderr
    assert json.loads(result.stdout) == nasty
    assert not canary.exists()


def test_inventory_env_reaches_the_runner(transport):
    result = transport.run([sys.executable, "-c", "import os; print(os.environ['PYTHONPATH'])"], timeout_s=20)
    assert result.ok and result.stdout.strip() == str(HERE.parent.parent)


def test_files_push_pull_dir_mkdir_remove_tree(transport, tmp_path):
    base = transport.workdir()
    out = base + "/scene/launch-0"
    transport.mkdir(out)
    job = tmp_path / "job.json"
    job.write_text('{"protocol": 1}')
    transport.push(job, out + "/job.json")
    transport.run([sys.executable, "-c", "import sys; open(sys.argv[1] + '/frames.csv', 'w').write('frame\\n0\\n')", out],
                  timeout_s=20)
    transport.mkdir(out + "/sub")  # folders are not pulled
    pulled = transport.pull_dir(out, tmp_path / "back")
    assert [p.name for p in pulled] == ["frames.csv", "job.json"]
    assert (tmp_path / "back" / "job.json").read_text() == '{"protocol": 1}'
    assert (tmp_path / "back" / "frames.csv").read_text() == "frame\n0\n"
    transport.remove_tree(base + "/scene")
    transport.remove_tree(base + "/scene")  # a missing folder is not an error
    assert not os.path.exists(base + "/scene")


def test_deadline_kills_the_runner_and_its_children_on_the_device(transport):
    mark = marker()
    lines: list[str] = []
    started = time.monotonic()
    result = transport.run(hung(mark, child=True), timeout_s=1.5, on_line=lines.append)
    took = time.monotonic() - started
    assert result.timed_out and result.exit_code is None and not result.ok
    assert lines == ["started"]
    # Not a speed check: it waited for its deadline, and returned instead of waiting for the hung runner's
    # own end (HUNG_S).
    assert 1.5 <= took < HUNG_S / 2, took
    assert gone(mark), "a process of the killed runner is left on the device"


def test_run_script_output_status_and_deadline(transport):
    """The platform probe's way in (`run_script`: unsupervised on ssh with Python): output and status as
    `run` gives them, and at the deadline the script and what it started are stopped on the device."""
    result = transport.run_script("echo one; echo two >&2; exit 3", timeout_s=20)
    assert result.exit_code == 3 and result.stdout == "one\n" and "two" in result.stderr, result
    mark = marker()
    started = time.monotonic()
    result = transport.run_script(f"sleep {HUNG_S}; : {mark}", timeout_s=1.5)
    assert result.timed_out and result.exit_code is None and time.monotonic() - started < HUNG_S / 2
    assert gone(mark), "the script outlived its deadline"


def test_local_run_script_is_stopped_at_its_deadline(write_inventory):
    t = make_transport(write_inventory({"l": {"transport": "local"}})["l"])
    t.open()
    mark = marker()
    try:
        assert t.run_script("echo ok", timeout_s=20).stdout == "ok\n"
        result = t.run_script(f"sleep {HUNG_S} & wait; : {mark}", timeout_s=1)
    finally:
        t.close()
    assert result.timed_out and result.exit_code is None
    assert gone(mark)


def test_runner_killed_mid_run_reports_the_signal(transport):
    mark = marker()
    thread, box = run_in_background(transport, hung(mark))
    pids = appeared(mark)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    thread.join(20)
    result = box["r"]
    assert not result.timed_out
    # local and ssh report -9 (a signal); adbd and the command contract report 128 + 9
    assert result.exit_code in (-9, 137), result
    assert result.wall_s < HUNG_S / 2  # the kill ended it, not the stand-in's own end


def test_probe_of_the_reference_runner(transport):
    pytest.importorskip("pytest_zbench.runner.__main__")
    result = transport.run([*transport.spec.runner, "probe"], timeout_s=60)
    assert result.ok, result.stderr
    probe = json.loads(result.stdout)
    assert probe["protocol"] == 1 and "software" in probe["backends"]


def stubborn(mark: str, *, unmarked_child: bool) -> list[str]:
    """A runner stand-in that ignores SIGTERM; with `unmarked_child`, a child that ignores it too, stays in
    the runner's process group and drops the launch's environment (so only a signal to the group finds it)."""
    code = "import os, signal, subprocess, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    if unmarked_child:
        code += ("subprocess.Popen([sys.executable, '-c', 'import signal, time; "
                 "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)', sys.argv[1] + '-child'], "
                 "env={'PATH': os.environ.get('PATH', '/usr/bin:/bin')})\n")
    code += "print('started', flush=True)\ntime.sleep(120)\n"
    # SIGTERM ignored from the shell on (an ignored signal stays ignored across exec), so that a deadline
    # that comes while Python is still starting finds it ignored too.
    return ["sh", "-c", 'trap "" TERM; exec "$@"', "sh", sys.executable, "-c", code, mark]


@pytest.mark.parametrize("kind", ["ssh", "adb"])
def test_sigkill_follows_an_ignored_sigterm_at_the_deadline(kind, request, write_inventory, tmp_path):
    """What stops the launch on the device at the deadline is the host's SIGKILL after the grace. On ssh the
    device's supervisor is given a grace longer than the test (ZBENCH_KILL_GRACE_S), on adb the child is
    beyond the shell wrapper's reach: either way only the host's follow-up ends them."""
    if kind == "ssh":
        entry = request.getfixturevalue("sshd").device_entry(workdir=str(tmp_path / "w"))
        entry["env"] = {**entry["env"], "ZBENCH_KILL_GRACE_S": "120"}
    else:
        entry = adb_device_entry(request.getfixturevalue("adb_server"), request.getfixturevalue("fake_adbd").serial,
                                 tmp_path / "w")
    t = make_transport(write_inventory({"d": entry})["d"])
    t.open()
    mark = marker()
    try:
        result = t.run(stubborn(mark, unmarked_child=kind == "adb"), timeout_s=3)
    finally:
        t.close()
    assert result.timed_out and result.exit_code is None
    assert "killed on the device" in result.stderr, result.stderr  # not "terminated": SIGTERM was ignored
    assert gone(mark), "a process that ignored SIGTERM outlived the deadline"


# -- ssh specifics ------------------------------------------------------------------------------------


def test_ssh_reconnects_after_the_connection_dropped(sshd, write_inventory, tmp_path):
    spec = write_inventory({"pi": sshd.device_entry(workdir=str(tmp_path / "w"))})["pi"]
    t = make_transport(spec)
    t.open()
    try:
        assert t.run(["true"], timeout_s=10).ok
        assert sshd.drop_connections() >= 1
        time.sleep(0.2)
        result = t.run(["echo", "back"], timeout_s=10)
        assert result.ok and result.stdout == "back\n"
        assert t.connects == 2
        # and mid-run: the runner left behind is killed after reconnecting
        mark = marker()
        thread, box = run_in_background(t, hung(mark))
        sshd.drop_connections()
        thread.join(20)
        result = box["r"]
        assert result.exit_code is None and not result.timed_out
        assert "lost" in result.stderr and ("killed" in result.stderr or "terminated" in result.stderr)
        assert gone(mark)
        assert t.connects == 3
        pulled = t.pull_dir(t.workdir(), tmp_path / "after")  # files work on the new connection too
        assert pulled == []
        sshd.drop_connections()  # and SFTP calls reconnect by themselves
        job = tmp_path / "job.json"
        job.write_text("{}")
        t.push(job, t.workdir() + "/job.json")
        assert [p.name for p in t.pull_dir(t.workdir(), tmp_path / "after2")] == ["job.json"]
        assert t.connects == 4
    finally:
        t.close()


def test_ssh_launches_start_from_one_launcher_without_the_login_shell(sshd, write_inventory, tmp_path):
    """On a device with Python every launch is a request to the connection's launcher, not a new SSH
    session: no login shell, no rc files. Its environment is the account's identity, a standard PATH and the
    inventory's env, nothing an rc file set (README, Remote devices)."""
    t = make_transport(write_inventory({"pi": sshd.device_entry(workdir=str(tmp_path / "w"))})["pi"])
    t.open()
    code = ("import json, os\nstat = open(f'/proc/{os.getppid()}/stat').read()\n"
            "launcher = int(stat[stat.rindex(')') + 2:].split()[1])\n"
            "print(json.dumps({'launcher': open(f'/proc/{launcher}/cmdline').read().split('\\0'), "
            "'pid': launcher, 'env': sorted(os.environ)}))")
    try:
        first, second = (json.loads(t.run([sys.executable, "-c", code], timeout_s=20).stdout) for _ in range(2))
        assert t.connects == 1
    finally:
        t.close()
    assert first["pid"] == second["pid"] and "serve" in first["launcher"], first
    # LC_CTYPE: Python's own locale coercion (PEP 538) when no locale is set
    assert {"HOME", "PATH", "PYTHONPATH", "ZBENCH_LAUNCH"} <= set(first["env"]) <= {
        "HOME", "USER", "LOGNAME", "SHELL", "PATH", "XDG_RUNTIME_DIR", "LANG", "TZ", "LC_CTYPE", "PYTHONPATH",
        "ZBENCH_LAUNCH"}, first["env"]


def test_ssh_pull_takes_regular_files_only_and_leaves_large_ones(sshd, write_inventory, tmp_path):
    """The launcher's one-request pull (and the SFTP one without Python): regular files under their own
    names; no link (to a file outside the folder), no subfolder; a file over the cap named, not copied."""
    t = make_transport(write_inventory({"pi": sshd.device_entry(workdir=str(tmp_path / "w"))})["pi"])
    t.open()
    outside = tmp_path / "secret.txt"
    outside.write_text("not the launch's")
    launch = Path(t.workdir()) / "launch-0"
    (launch / "sub").mkdir(parents=True)
    (launch / "sub" / "inner.txt").write_text("x")
    (launch / "frames.csv").write_text("frame\n0\n")
    (launch / "big.bin").write_bytes(b"\0" * 5000)
    (launch / "link.txt").symlink_to(outside)
    try:
        pulled = t.pull_dir(str(launch), tmp_path / "back", max_bytes=4096)
    finally:
        t.close()
    assert [p.name for p in pulled] == ["frames.csv"] and pulled.too_large == {"big.bin": 5000}
    assert sorted(os.listdir(tmp_path / "back")) == ["frames.csv"]


def test_ssh_sftp_errors_are_device_errors_naming_the_device_and_path(sshd, write_inventory, tmp_path):
    t = make_transport(write_inventory({"pi": sshd.device_entry(workdir=str(tmp_path / "w"))})["pi"])
    t.open()
    job = tmp_path / "job.json"
    job.write_text("{}")
    try:
        missing = t.workdir() + "/no/such/folder/job.json"
        with pytest.raises(DeviceError) as push_error:
            t.push(job, missing)
        with pytest.raises(DeviceError) as pull_error:
            t.pull_dir(t.workdir() + "/missing", tmp_path / "back")
        assert t.run(["true"], timeout_s=20).ok  # an SFTP error is not a lost connection
    finally:
        t.close()
    assert str(push_error.value).startswith(f"device pi: cannot push {job} to {missing}: "), push_error.value
    assert str(pull_error.value).startswith(f"device pi: cannot pull {t.spec.workdir}/missing: "), pull_error.value
    assert t.connects == 1


class DropDuringTransfer:
    """Drops the ssh connection (the real sshd's per-connection processes, killed) while `target` is being
    written by a pull, once a quarter to all but the last byte of it is there, `times` times: at most once per
    attempt at the file, so that a retry that starts it again is dropped again.

    The drop is made from the pull's own writes: the ssh transport module's `os` is one whose `fdopen` wraps
    the file opened for `target`. A thread watching the file's size raced a loopback stream that fills 48 MB
    in tens of milliseconds in the same process, and missed it under load."""

    def __init__(self, sshd, target: Path, size: int, times: int) -> None:
        self.sshd, self.target, self.size, self.times = sshd, target, size, times
        self.drops = 0
        self._real_os = ssh_transport.os
        ssh_transport.os = _OsOpeningWatched(self._real_os, self)

    def watch(self, handle, path: Path):
        return _DroppingFile(handle, self) if path == self.target else handle

    def written(self, total: int) -> bool:
        """Called after each write of one attempt at the file: True once this attempt was dropped."""
        if self.drops < self.times and self.size // 4 < total < self.size and self.sshd.drop_connections():
            self.drops += 1
            return True
        return False

    def stop(self) -> None:
        ssh_transport.os = self._real_os


class _OsOpeningWatched:
    """The os module, but for `fdopen`, which hands a file opened for writing to the dropper."""

    def __init__(self, real, dropper: DropDuringTransfer) -> None:
        self._real, self._dropper = real, dropper

    def __getattr__(self, name: str):
        return getattr(self._real, name)

    def fdopen(self, fd: int, *args, **kwargs):
        handle = self._real.fdopen(fd, *args, **kwargs)
        return self._dropper.watch(handle, Path(self._real.readlink(f"/proc/self/fd/{fd}")))


class _DroppingFile:
    def __init__(self, handle, dropper: DropDuringTransfer) -> None:
        self._handle, self._dropper = handle, dropper
        self._total, self._dropped = 0, False

    def write(self, data: bytes) -> int:
        count = self._handle.write(data)
        self._total += count
        if not self._dropped:
            self._dropped = self._dropper.written(self._total)
        return count

    def __getattr__(self, name: str):
        return getattr(self._handle, name)


def test_ssh_connection_lost_during_a_pull_loses_nothing(sshd, write_inventory, tmp_path):
    """A connection dropped in the middle of a file: the pull reconnects and starts again, and every byte
    arrives. Dropped again during the retry: a DeviceError naming the device, and the files are still on
    the device (a pull never removes them)."""
    t = make_transport(write_inventory({"pi": sshd.device_entry(workdir=str(tmp_path / "w"))})["pi"])
    t.open()
    measured = os.urandom(48 * 1024 * 1024)  # incompressible, and large enough to be caught mid-transfer
    launch = Path(t.workdir()) / "launch-0"
    launch.mkdir()
    (launch / "frames.csv").write_bytes(measured)
    try:
        back = tmp_path / "back"
        dropper = DropDuringTransfer(sshd, back / "frames.csv", len(measured), times=1)
        try:
            pulled = t.pull_dir(str(launch), back)
        finally:
            dropper.stop()
        assert dropper.drops == 1 and t.connects == 2
        assert [p.name for p in pulled] == ["frames.csv"] and (back / "frames.csv").read_bytes() == measured

        again = tmp_path / "again"
        dropper = DropDuringTransfer(sshd, again / "frames.csv", len(measured), times=2)
        try:
            with pytest.raises(DeviceError) as lost:
                t.pull_dir(str(launch), again)
        finally:
            dropper.stop()
        assert dropper.drops == 2
        assert str(lost.value).startswith(f"device pi: connection to {t.where} lost during pull {launch}"), lost.value
        assert (launch / "frames.csv").read_bytes() == measured  # still on the device
        assert t.pull_dir(str(launch), tmp_path / "third")[0].read_bytes() == measured  # and fetched later
    finally:
        t.close()


def test_a_launch_whose_pull_fails_keeps_what_was_measured(sshd, write_inventory, tmp_path):
    """Through Device: the connection drops during the pull and again during its retry. The launch reads
    the rows pulled before the failure, says where the rest is, and leaves it on the device."""
    from pytest_zbench.host.devices.device import Device
    from pytest_zbench.protocol import Job

    writer = ("import os, sys\nout = sys.argv[-1]\n"
              "open(os.path.join(out, 'frames.csv'), 'w').write('frame,phase,cpu_ms\\n' + "
              "''.join(f'{f},{\"warmup\" if f < 1 else \"measure\"},1.5\\n' for f in range(4)))\n"
              "open(os.path.join(out, 'zz-extra.bin'), 'wb').write(os.urandom(48 * 1024 * 1024))\n")
    spec = write_inventory({"pi": sshd.device_entry(workdir=str(tmp_path / "w"), runner=[sys.executable, "-c", writer])})["pi"]
    device = Device(spec, make_transport(spec))
    job = Job(backend="software", mode="uncapped", refresh_hz=60.0, warmup_frames=1, frames=3, capture=(), seed=1,
              scene={"id": "pull.fails", "width": 16, "height": 12, "ops": []})
    local = tmp_path / "launch-0"
    dropper = DropDuringTransfer(sshd, local / "zz-extra.bin", 48 * 1024 * 1024, times=2)
    try:
        outcome = device.launch(job, 0, local, timeout_s=60)
    finally:
        dropper.stop()
        device.close()
    assert dropper.drops == 2
    (lost,) = [i for i in outcome.issues if i.kind == "protocol" and "could not pull" in i.detail]
    # The launch's own folder in the workdir (.zbench-<scene>-<random>, host/devices/device.py).
    outdir = lost.detail.split(" ")[3]
    assert re.fullmatch(re.escape(f"{tmp_path / 'w'}/.zbench-pull.fails-") + r"[0-9a-f]+/launch-0", outdir), outdir
    assert lost.detail.startswith(f"could not pull {outdir} from device pi: device pi: connection to ") and (
        f"left on the device in {outdir}" in lost.detail)
    assert [row["frame"] for row in outcome.frames.rows] == [0, 1, 2, 3]  # pulled before the drop: kept
    assert sorted(os.listdir(outdir)) == ["frames.csv", "zz-extra.bin"]


def test_ssh_host_key_mismatch_is_a_clear_device_error(sshd, write_inventory, tmp_path):
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    bad = tmp_path / "known_hosts"
    bad.write_text(sshd.known_hosts_line(other.with_suffix(".pub")))
    spec = write_inventory({"pi": sshd.device_entry(known_hosts=str(bad))})["pi"]
    t = make_transport(spec)
    with pytest.raises(DeviceError) as info:
        t.open()
    t.close()
    message = str(info.value)
    assert str(bad) in message and f"127.0.0.1:{sshd.port}" in message and "does not match" in message


def test_ssh_missing_known_hosts_and_unreachable_host(sshd, write_inventory, tmp_path):
    missing = tmp_path / "nope" / "known_hosts"
    spec = write_inventory({"pi": sshd.device_entry(known_hosts=str(missing))})["pi"]
    t = make_transport(spec)
    with pytest.raises(DeviceError, match="known_hosts file .* does not exist"):
        t.open()
    t.close()
    from tests.remote.servers import free_port

    spec = write_inventory({"pi": sshd.device_entry(port=free_port(), connect_timeout_s=2)})["pi"]
    t = make_transport(spec)
    with pytest.raises(DeviceError, match="cannot connect"):
        t.open()
    t.close()


def test_ssh_wrong_identity_is_refused(sshd, write_inventory, tmp_path):
    other = tmp_path / "id_other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    spec = write_inventory({"pi": sshd.device_entry(identity_file=str(other))})["pi"]
    t = make_transport(spec)
    with pytest.raises(DeviceError, match="refused key authentication"):
        t.open()
    t.close()


def test_ssh_without_workdir_uses_and_removes_a_temporary_folder(sshd, write_inventory):
    spec = write_inventory({"pi": sshd.device_entry()})["pi"]
    t = make_transport(spec)
    t.open()
    folder = t.workdir()
    assert os.path.isdir(folder) and "zbench-pi-" in folder
    t.close()
    assert not os.path.exists(folder)


# -- adb specifics --------------------------------------------------------------------------------------


def test_adb_reconnects_after_the_device_connection_dropped(adb_server, fake_adbd, write_inventory, tmp_path):
    spec = write_inventory({"n7": adb_device_entry(adb_server, fake_adbd.serial, tmp_path / "w")})["n7"]
    t = make_transport(spec)
    t.open()
    try:
        assert t.run(["true"], timeout_s=10).ok
        assert fake_adbd.drop_connections() >= 1
        result = t.run(["echo", "back"], timeout_s=20)
        assert result.ok and result.stdout == "back\n", result
        mark = marker()
        thread, box = run_in_background(t, hung(mark))
        time.sleep(0.2)
        fake_adbd.drop_connections()
        thread.join(30)
        result = box["r"]
        assert result.exit_code is None and not result.timed_out, result
        assert "closed before" in result.stderr or "lost" in result.stderr
        assert gone(mark)
        assert t.reconnects >= 1
    finally:
        t.close()


def test_adb_shell_v1_fallback(adb_server, write_inventory, tmp_path):
    from tests.remote.fake_adbd import FakeAdbd

    old = FakeAdbd(tmp_path / "old-device", shell_v2=False).start()
    try:
        adb_server.connect(old.serial)
        spec = write_inventory({"old": adb_device_entry(adb_server, old.serial, tmp_path / "w")})["old"]
        t = make_transport(spec)
        t.open()
        lines: list[str] = []
        result = t.run(["sh", "-c", "echo one; echo two; exit 4"], timeout_s=10, on_line=lines.append)
        assert result.exit_code == 4 and lines == ["one", "two"] and result.stdout == "one\ntwo\n"
        mark = marker()
        result = t.run(hung(mark), timeout_s=1)
        assert result.timed_out and gone(mark)
        t.close()
    finally:
        adb_server.adb("disconnect", old.serial)
        old.stop()


def test_adb_unknown_serial_names_the_server_and_devices(adb_server, fake_adbd, write_inventory, tmp_path):
    spec = write_inventory({"x": adb_device_entry(adb_server, "0123456789abcdef", tmp_path)})["x"]
    t = make_transport(spec)
    with pytest.raises(DeviceError) as info:
        t.open()
    assert "0123456789abcdef is not listed" in str(info.value) and fake_adbd.serial in str(info.value)


def test_adb_server_address_resolution(monkeypatch, write_inventory, tmp_path):
    from pytest_zbench.transports.adb import adb_server_address

    spec = write_inventory({"a": {"transport": "adb", "serial": "s"}})["a"]
    assert adb_server_address(spec, {}) == ("127.0.0.1", 5037)
    assert adb_server_address(spec, {"ANDROID_ADB_SERVER_HOST": "10.0.0.2", "ANDROID_ADB_SERVER_PORT": "5038"}) == (
        "10.0.0.2", 5038)
    spec = write_inventory({"a": {"transport": "adb", "serial": "s", "adb_host": "h", "adb_port": 7}})["a"]
    assert adb_server_address(spec, {"ANDROID_ADB_SERVER_PORT": "5038"}) == ("h", 7)


# -- command specifics ------------------------------------------------------------------------------------


def test_command_scripts_resolve_relative_to_the_inventory(write_inventory, folder_device):
    entry = folder_device.entry()
    spec = write_inventory({"c": {**entry, "exec": ["nope/missing.sh", "exec"]}})["c"]
    t = make_transport(spec)
    with pytest.raises(DeviceError, match="missing.sh"):
        t.open()


def test_command_failed_push_names_the_script(write_inventory, folder_device, tmp_path):
    spec = write_inventory({"c": folder_device.entry()})["c"]
    t = make_transport(spec)
    t.open()
    with pytest.raises(DeviceError, match="outside the device folder"):
        t.push(FOLDER_DEVICE, "/etc/zbench-should-not-exist")
    with pytest.raises(DeviceError, match="no such folder"):
        t.pull_dir(t.workdir() + "/missing", tmp_path / "x")


def test_command_without_kill_key_the_exec_script_stops_the_device_process(write_inventory, folder_device):
    entry = folder_device.entry()  # an exec script that stops the device process on SIGTERM
    del entry["kill"]
    t = make_transport(write_inventory({"c": entry})["c"])
    t.open()
    mark = marker()
    result = t.run(hung(mark), timeout_s=1)
    t.close()
    assert result.timed_out and "no kill script" in result.stderr
    assert gone(mark)


def test_command_deadline_reaches_the_device_only_through_the_kill_script(write_inventory, folder_device):
    """The stand-in runs what exec starts outside the host's process tree, like a phone or a TV: when exec
    cannot stop it either, the kill script is all that stops it at the deadline."""
    entry = folder_device.entry(exec_can_stop=False)
    without_kill = {k: v for k, v in entry.items() if k != "kill"}
    specs = write_inventory({"c": entry, "c-no-kill": without_kill})
    t = make_transport(specs["c"])
    t.open()
    mark = marker()
    try:
        result = t.run(hung(mark, child=True), timeout_s=1.5)
    finally:
        t.close()
    assert result.timed_out and "kill script exited 0" in result.stderr, result.stderr
    assert gone(mark), "the device process (or its child) outlived the deadline: the kill script was not used"

    # The same deadline without a kill script: the host stops exec and its whole tree, and the device
    # process runs on. This is what makes the check above mean something.
    t = make_transport(specs["c-no-kill"])
    t.open()
    left = marker()
    try:
        result = t.run(hung(left), timeout_s=1)
        assert result.timed_out and "stopped with its whole process tree" in result.stderr
        time.sleep(0.5)
        assert pids_with(left), "the stand-in device's process was stopped without the kill script"
    finally:
        t.close()
        for run in (folder_device.root / ".runs").glob("*.pid"):
            subprocess.run([sys.executable, str(FOLDER_DEVICE), "--root", str(folder_device.root), "kill",
                            run.name[: -len(".pid")]], timeout=30)
    assert gone(left)


def test_factory(write_inventory, tmp_path, monkeypatch):
    specs = write_inventory({
        "s": {"transport": "ssh", "host": "h", "user": "u"},
        "a": {"transport": "adb", "serial": "x"},
        "c": FolderDevice(tmp_path).entry(),
        "l": {"transport": "local"},
    })
    # The embedded `local` device is in every inventory too (inventory.py); these four are the ones written.
    names = {k: type(make_transport(v)).__name__ for k, v in specs.items() if k in {"s", "a", "c", "l"}}
    assert names == {"s": "SshTransport", "a": "AdbTransport", "c": "CommandTransport", "l": "LocalTransport"}
    monkeypatch.setitem(sys.modules, "asyncssh", None)
    with pytest.raises(UsageError, match="asyncssh"):
        make_transport(specs["s"])


def test_adb_never_starts_a_server_on_a_port_the_inventory_did_not_name(write_inventory, tmp_path, monkeypatch):
    # adbutils runs `adb start-server` (on adb's default port 5037) when it cannot connect; a recording adb
    # in its place shows whether it tried.
    from tests.remote.servers import free_port

    calls = tmp_path / "adb-calls"
    fake_adb = tmp_path / "adb"
    fake_adb.write_text(f"#!/bin/sh\necho \"$@\" >> {calls}\n")
    fake_adb.chmod(0o755)
    monkeypatch.setenv("ADBUTILS_ADB_PATH", str(fake_adb))
    port = free_port()
    spec = write_inventory({"n7": {"transport": "adb", "serial": "emulator-5554", "adb_host": "127.0.0.1",
                                   "adb_port": port}})["n7"]
    t = make_transport(spec)
    with pytest.raises(DeviceError) as info:
        t.open()
    t.close()
    assert f"no adb server at 127.0.0.1:{port}" in str(info.value)
    assert f"adb -P {port} start-server" in str(info.value)
    assert not calls.exists(), calls.read_text()


def test_command_env_values_never_reach_the_exec_scripts_command_line(write_inventory, folder_device):
    entry = folder_device.entry()
    entry["env"] = {**entry["env"], "ZB_TOKEN": "s3cret-value"}
    spec = write_inventory({"dev": entry})["dev"]
    t = make_transport(spec)
    t.open()
    try:
        # the stand-in device tells the runner the exec script's pid: its command line is what `ps` shows
        code = ("import os; print(os.environ['ZB_TOKEN']); "
                "print(open(f'/proc/{os.environ[\"FOLDER_DEVICE_EXEC_PID\"]}/cmdline').read().replace(chr(0), ' '))")
        result = t.run([sys.executable, "-c", code], timeout_s=30)
    finally:
        t.close()
    assert result.ok, result.stderr
    value, parent_cmdline = result.stdout.splitlines()[:2]
    assert value == "s3cret-value"
    assert "folder_device.py" in parent_cmdline and "--env ZB_TOKEN" in parent_cmdline
    assert "s3cret-value" not in parent_cmdline


# -- local specifics ----------------------------------------------------------------------------------------


def test_local_runner_runs_in_the_device_folder_not_pytests(write_inventory, tmp_path, monkeypatch):
    # A `pytest_zbench` folder in pytest's working directory must not be what `python -m` imports.
    decoy = tmp_path / "cwd"
    (decoy / "pytest_zbench").mkdir(parents=True)
    (decoy / "pytest_zbench" / "__init__.py").write_text("raise SystemExit('imported the decoy')\n")
    monkeypatch.chdir(decoy)
    spec = write_inventory({"l": {"transport": "local", "workdir": str(tmp_path / "device")}})["l"]
    t = make_transport(spec)
    t.open()
    try:
        where = t.run(["python", "-c", "import os; print(os.getcwd())"], timeout_s=30)
        assert where.ok and Path(where.stdout.strip()).resolve() == (tmp_path / "device").resolve()
        probe = t.run(["python", "-m", "pytest_zbench.runner", "probe"], timeout_s=120)
        assert probe.ok, probe.stderr
        assert json.loads(probe.stdout)["runner"]["name"] == "zbench-reference"
    finally:
        t.close()


def test_local_relative_program_resolves_against_the_inventory(write_inventory, tmp_path, monkeypatch):
    script = tmp_path / "bin" / "runner.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\necho \"runner in $(pwd)\"\n")
    script.chmod(0o755)
    monkeypatch.chdir(tmp_path.parent)  # anywhere but the inventory's folder
    spec = write_inventory({"l": {"transport": "local", "runner": ["bin/runner.sh"]}})["l"]
    t = make_transport(spec)
    t.open()
    try:
        result = t.run([*spec.runner, "probe"], timeout_s=30)
        assert result.ok, result.stderr
        assert result.stdout.strip() == f"runner in {t.workdir()}"
    finally:
        t.close()
