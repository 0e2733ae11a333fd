"""Real loopback servers for the remote transports: OpenSSH sshd, the adb server, the emulated adbd.

Shared by tests/remote/conftest.py and bench/bench_transport_overhead.py; plain Python, no pytest.
Everything listens on 127.0.0.1 only and lives in a temporary folder given by the caller.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
ADB = shutil.which("adb") or "/usr/bin/adb"


class MissingPart(RuntimeError):
    """A real part (sshd, ssh-keygen, adb) is not installed: the caller skips, or fails in CI."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 10.0, proc: subprocess.Popen[Any] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listening on 127.0.0.1:{port} after {timeout} s")


def runner_argv() -> list[str]:
    """This repository's reference runner, by absolute interpreter path (the sshd session has a minimal PATH)."""
    return [sys.executable, "-m", "pytest_zbench.runner"]


def runner_env() -> dict[str, str]:
    return {"PYTHONPATH": str(REPO)}


def _children(pid: int) -> dict[int, tuple[int, str]]:
    """pid -> (ppid, comm) for every process, from /proc."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1: stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        table[int(entry)] = (ppid, comm)
    return table


def descendants(pid: int) -> list[tuple[int, str]]:
    table = _children(pid)
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        for child, (ppid, comm) in table.items():
            if ppid == parent:
                found.append((child, comm))
                frontier.append(child)
    return found


# -- sshd -----------------------------------------------------------------------------------------------


@dataclass
class SshServer:
    """OpenSSH sshd on 127.0.0.1:port, key auth only, for the current user, with its own host key."""

    root: Path
    port: int = 0
    user: str = ""
    identity_file: Path = field(default=Path())
    known_hosts: Path = field(default=Path())
    host_key: Path = field(default=Path())
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> SshServer:
        for tool in (SSHD, shutil.which("ssh-keygen")):
            if not tool or not os.path.exists(tool):
                raise MissingPart(f"{tool or 'ssh-keygen'} is not installed (Debian: openssh-server, openssh-client)")
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        import pwd

        self.user = pwd.getpwuid(os.getuid()).pw_name
        self.host_key = self.root / "ssh_host_ed25519_key"
        self.identity_file = self.root / "id_ed25519"
        for key in (self.host_key, self.identity_file):
            if not key.exists():
                subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "zbench-test", "-f", str(key)],
                               check=True, stdout=subprocess.DEVNULL)
        authorized = self.root / "authorized_keys"
        authorized.write_text((self.identity_file.with_suffix(".pub")).read_text())
        authorized.chmod(0o600)
        self.known_hosts = self.root / "known_hosts"
        self.known_hosts.write_text(self.known_hosts_line(self.host_key.with_suffix(".pub")))
        config = self.root / "sshd_config"
        config.write_text("\n".join([
            f"Port {self.port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {self.host_key}",
            f"PidFile {self.root / 'sshd.pid'}",
            f"AuthorizedKeysFile {authorized}",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            # the tests run as whoever runs pytest; in containers that is root
            "PermitRootLogin prohibit-password",
            "StrictModes no",
            "UsePAM no",
            "PrintMotd no",
            "MaxStartups 50",
            "MaxSessions 50",
            "Subsystem sftp internal-sftp",
            "LogLevel ERROR",
            "",
        ]))
        if os.getuid() == 0 and not os.path.isdir("/run/sshd"):
            # sshd's privilege separation folder, as the Debian service creates it at start
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=open(self.root / "sshd.log", "ab"))
        wait_port(self.port, proc=self.proc)
        return self

    def known_hosts_line(self, pub: Path) -> str:
        kind, blob = pub.read_text().split()[:2]
        return f"[127.0.0.1]:{self.port} {kind} {blob}\n"

    def device_entry(self, **extra: Any) -> dict[str, Any]:
        """An inventory entry (devices.yaml mapping) for this server."""
        entry = {
            "transport": "ssh", "host": "127.0.0.1", "port": self.port, "user": self.user,
            "identity_file": str(self.identity_file), "known_hosts": str(self.known_hosts),
            "backend": "software", "platform": "linux", "runner": runner_argv(), "env": runner_env(),
            "connect_timeout_s": 5, "keepalive_s": 2,
        }
        entry.update(extra)
        return entry

    def drop_connections(self) -> int:
        """SIGKILL every per-connection sshd process (not the listener, not the commands they started)."""
        assert self.proc is not None
        killed = 0
        for pid, comm in descendants(self.proc.pid):
            if comm.startswith("sshd"):
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
                except ProcessLookupError:
                    pass
        return killed

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.drop_connections()
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None


# -- adb server + emulated adbd ----------------------------------------------------------------------------


@dataclass
class AdbServer:
    """The real adb server on 127.0.0.1:port (its own port, so a user's adb server is never touched)."""

    port: int = 0
    started: bool = False

    def start(self) -> AdbServer:
        if not os.path.exists(ADB):
            raise MissingPart("adb is not installed (Debian: adb)")
        self.port = self.port or free_port()
        subprocess.run([ADB, "-P", str(self.port), "start-server"], check=True, timeout=30,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self.env())
        self.started = True
        return self

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANDROID_ADB_SERVER")}
        env["ANDROID_ADB_SERVER_PORT"] = str(self.port)
        return env

    def adb(self, *args: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
        return subprocess.run([ADB, "-P", str(self.port), *args], capture_output=True, text=True, timeout=timeout,
                              env=self.env())

    def connect(self, serial: str, timeout: float = 15) -> None:
        """`adb connect serial` and wait until the device is online."""
        deadline = time.monotonic() + timeout
        while True:
            out = self.adb("connect", serial)
            state = self.adb("-s", serial, "get-state").stdout.strip()
            if state == "device":
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"adb connect {serial}: {out.stdout.strip()} {out.stderr.strip()} (state {state!r})")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.started:
            try:
                self.adb("kill-server", timeout=10)
            except subprocess.TimeoutExpired:
                pass
            self.started = False


def adb_device_entry(adb: AdbServer, serial: str, workdir: Path, **extra: Any) -> dict[str, Any]:
    entry = {
        "transport": "adb", "serial": serial, "adb_host": "127.0.0.1", "adb_port": adb.port,
        "backend": "software", "platform": "android", "runner": runner_argv(), "env": runner_env(),
        "workdir": str(workdir),
    }
    entry.update(extra)
    return entry
