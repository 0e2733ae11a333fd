"""The fault suite: end-to-end pytest sessions whose device runs the hostile runner (hostile_runner.py, one
fault per mode), through the local transport and through the loopback sshd (tests/remote/servers.py).

Every test gets a marker of its own, which the hostile runner carries in the environment and on the command
line of every process it starts; after the test, `leftovers` fails it if any process with the marker is
still alive (and kills them, so one failure does not leak into the next test), or if a temporary workdir of
the session is left in its temporary folder (local) or in /tmp on the ssh "device".

The sessions are tiny on purpose (16 x 12 pixels, a few frames): the suite checks outcomes, not speed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from fault_support import processes_with
from remote.servers import MissingPart, SshServer

from tests.waiting import SETTLE_S

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
HOSTILE = HERE / "hostile_runner.py"
DISPLAY = {"width": 16, "height": 12, "refresh_hz": 60}
SCENE = """\
family: faults
description: one tiny rect, captured
scenes:
  - id: faults.one
    capture: [0]
    ops:
      - {op: rect, x: 1, y: 1, w: "100% - 2", h: "100% - 2", color: "#3366CC"}
"""
# Few frames: a launch is a fraction of a second even on a loaded machine.
QUICK = ("--zbench-runs=2", "--zbench-frames=3", "--zbench-warmup=1", "--zbench-baseline=none",
         "-p", "no:cacheprovider")


class FaultSession:
    """A pytester project with one scene and a `hostile` device (local, or `ssh` over the loopback sshd)."""

    def __init__(self, pytester: pytest.Pytester, mark: str, tmp: Path, sshd: SshServer | None) -> None:
        self.pytester = pytester
        self.root = pytester.path
        self.mark = mark
        self.tmp = tmp
        self.sshd = sshd
        self.results = self.root / "results"
        self.name = f"ssh-{mark[-8:]}" if sshd is not None else "hostile"
        (self.root / "scenes").mkdir()
        (self.root / "scenes" / "faults.yaml").write_text(SCENE)
        (self.root / "pytest.ini").write_text("[pytest]\ntestpaths = scenes\n")
        self.device()

    @property
    def transport(self) -> str:
        return "local" if self.sshd is None else "ssh"

    def device(self, fault: str = "ok", env: dict[str, str] | None = None, **extra: object) -> None:
        """(Re)write devices.yaml: the hostile device with this fault mode, `env` and `extra` keys."""
        env = {"ZBENCH_FAULT": fault, "ZBENCH_FAULT_MARK": self.mark, **(env or {})}
        if self.sshd is None:
            entry: dict[str, object] = {"transport": "local", "backend": "software",
                                        "runner": ["python", str(HOSTILE)], "display": DISPLAY}
        else:
            entry = self.sshd.device_entry(runner=[sys.executable, str(HOSTILE)], display=DISPLAY)
        entry["env"] = env
        entry.update(extra)
        (self.root / "devices.yaml").write_text(yaml.safe_dump({"devices": {self.name: entry}}))

    def args(self, *extra: str) -> list[str]:
        sequential = any(arg.startswith("--zbench-budget") for arg in extra)  # it decides the launches itself
        quick = [arg for arg in QUICK if not (sequential and arg.startswith("--zbench-runs"))]
        return [*quick, f"--zbench-device={self.name}", f"--zbench-results={self.results}",
                f"--zbench-lease-dir={self.tmp / 'leases'}", *extra]

    def run(self, *extra: str, timeout: float = 240) -> pytest.RunResult:
        return self.pytester.runpytest_subprocess(*self.args(*extra), timeout=timeout)

    def popen(self, *extra: str) -> subprocess.Popen[bytes]:
        """The session in the background (to be killed by the test); its output in `session.out`."""
        with open(self.root / "session.out", "wb") as out:
            return subprocess.Popen([sys.executable, "-m", "pytest", *self.args(*extra)], cwd=self.root,
                                    stdout=out, stderr=subprocess.STDOUT, preexec_fn=_interruptible)

    def wait_stopped(self, proc: subprocess.Popen[bytes], timeout: float) -> int:
        """The exit status of a signalled session. One still running after `timeout` is made to show where it
        is before it is killed: SIGABRT, on which pytest's faulthandler writes every thread's stack to the
        session's output, quoted in the failure."""
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            output = (self.root / "session.out").read_text(errors="replace")
            raise AssertionError(f"the session was still running {timeout:.0f} s after its signal; its output "
                                 f"and stacks:\n{output[-12000:]}") from None

    def run_json(self) -> dict:
        return json.loads((self.results / "run.json").read_text())

    def scene(self, document: dict | None = None) -> dict:
        (entry,) = (document or self.run_json())["scenes"]
        return entry

    def issues(self, kind: str | None = None) -> list[dict]:
        return [i for i in self.scene()["issues"] if kind is None or i["kind"] == kind]

    def wait_for_runner(self, timeout: float = 120) -> dict[int, str]:
        """Until a process with this test's mark runs (the runner, once the session got that far)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            # A launch's runner, not the probe: the probe now starts while the host imports, so a kill timed
            # from it could land while the first launch's job is being pushed, before anything measures.
            found = {pid: cmd for pid, cmd in processes_with(self.mark).items()
                     if str(HOSTILE) in cmd and not cmd.rstrip("'\"").endswith(" probe")}
            if found:
                return found
            time.sleep(0.1)
        raise AssertionError(f"no runner with mark {self.mark} started within {timeout} s")

    def leftover_workdirs(self) -> list[Path]:
        local = [p for p in self.tmp.glob("zbench-*") if not p.name.startswith("zbench-leases")]
        remote = list(Path("/tmp").glob(f"zbench-{self.name}-*")) if self.sshd is not None else []
        return local + remote


def _sshd(request: pytest.FixtureRequest, factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    try:
        server = SshServer(factory.mktemp("faults-sshd")).start()
    except MissingPart as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"OpenSSH sshd is required in CI: {exc}", pytrace=False)
        pytest.skip(f"OpenSSH sshd is missing: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def faults_sshd(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    yield from _sshd(request, tmp_path_factory)


@pytest.fixture(params=["local", "ssh"])
def session(request: pytest.FixtureRequest, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultSession]:
    """A fault session through the local transport and through ssh; checked for leftovers afterwards."""
    sshd = request.getfixturevalue("faults_sshd") if request.param == "ssh" else None
    yield from _session(pytester, monkeypatch, tmp_path_factory, sshd)


@pytest.fixture
def local_session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultSession]:
    """A fault session through the local transport only (a case that does not depend on the transport)."""
    yield from _session(pytester, monkeypatch, tmp_path_factory, None)


@pytest.fixture
def ssh_session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory,
                faults_sshd: SshServer) -> Iterator[FaultSession]:
    """A fault session through the loopback sshd only (a case that needs a remote workdir)."""
    yield from _session(pytester, monkeypatch, tmp_path_factory, faults_sshd)


def _session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, factory: pytest.TempPathFactory,
             sshd: SshServer | None) -> Iterator[FaultSession]:
    mark = f"zbench-fault-{uuid.uuid4().hex}"
    tmp = factory.mktemp("faults-tmp")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("TMPDIR", str(tmp))  # the local transport's workdir goes there
    fault = FaultSession(pytester, mark, tmp, sshd)
    yield fault
    left = _settle(mark)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    workdirs = _settle_workdirs(fault)
    assert not left, f"processes of the test still running after it: {left}"
    assert not workdirs, f"temporary workdirs left after the test: {workdirs}"


def _interruptible() -> None:
    """In the session's process before its exec: SIGINT back to its default, as a terminal's Ctrl-C finds it. A
    suite started as a background job of a non-interactive shell (`cmd &`, as a CI runner may start it)
    inherits SIGINT ignored, and Python keeps an ignored SIGINT ignored: the test's SIGINT would never reach
    the session, which then ran on until the test's deadline."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _settle(mark: str, timeout: float = SETTLE_S) -> dict[int, str]:
    """The processes with `mark` still alive once `timeout` has passed (teardown may still be under way)."""
    deadline = time.monotonic() + timeout
    while True:
        left = {pid: cmd for pid, cmd in processes_with(mark).items() if not _zombie(pid)}
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def _settle_workdirs(fault: FaultSession, timeout: float = SETTLE_S) -> list[Path]:
    deadline = time.monotonic() + timeout
    while True:
        left = fault.leftover_workdirs()
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] == "Z"
