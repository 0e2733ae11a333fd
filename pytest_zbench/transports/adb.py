"""`adb`: an Android device through an adb server, with adbutils.

* The adb server's address: the inventory's `adb_host` / `adb_port`, else ANDROID_ADB_SERVER_HOST /
  ANDROID_ADB_SERVER_PORT (as adb itself reads them), else 127.0.0.1:5037. The device is the inventory's
  `serial`; a network serial (HOST:PORT) is `adb connect`ed when the server does not list it, and again
  after the connection dropped.
* Files move with the sync protocol, one sync stream per push and one per folder pull (STAT, LIST, then RECV of
  each regular file): docs/architecture.md, "Round trips per launch".
* `run` uses the shell protocol v2 (`shell,v2,raw:`: separate stdout / stderr and the exit code; Android 7+)
  and falls back to v1 (`shell:`, stderr merged into stdout, the exit code from a trailing marker) on
  devices without `shell_v2`. The command is the shell wrapper of _shell.py (`echo zbench-pid:$$` first,
  every element quoted): every process of the launch carries a token in its environment, and what the
  runner leaves running when it exits is stopped; at the deadline the host sends `kill -TERM` to the
  wrapper (and its group), which stops every process of the launch, SIGKILL follows, and the host checks
  that they are gone. Nothing on the device notices that this host died: the next session's deadline and
  leases are what protect a device from a runner left by a killed host.
* A killed runner's exit code is what adbd reports, 128 + the signal number.
"""

from __future__ import annotations

import logging
import os
import posixpath
import shlex
import socket
import stat
import struct
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..errors import DeviceError
from ..inventory import DeviceSpec
from ._shell import (
    alive_command,
    launch_token,
    parse_pid_line,
    quote_argv,
    still_running,
    stop_policy,
    supervised_command,
)
from .base import CommandResult, LineCallback, PulledFiles, WorkdirMixin, take_leftover

T = TypeVar("T")

log = logging.getLogger(__name__)

DEFAULT_ADB_HOST = "127.0.0.1"
DEFAULT_ADB_PORT = 5037
CONNECT_TIMEOUT_S = 10.0
SMALL_COMMAND_TIMEOUT_S = 30.0
SYNC_TIMEOUT_S = 60.0  # no byte for this long on a sync stream: the device is gone
SYNC_DATA_MAX = 64 * 1024  # the largest DATA chunk of the sync protocol
EXIT_MARK = "zbench-exit:"
POLL_S = 0.1

# shell protocol v2 packet ids
ID_STDIN, ID_STDOUT, ID_STDERR, ID_EXIT, ID_CLOSE_STDIN = 0, 1, 2, 3, 4


def adb_server_address(spec: DeviceSpec, environ: dict[str, str] | None = None) -> tuple[str, int]:
    env = os.environ if environ is None else environ
    host = spec.option("adb_host") or env.get("ANDROID_ADB_SERVER_HOST") or DEFAULT_ADB_HOST
    port = spec.option("adb_port")
    if port is None:
        raw = env.get("ANDROID_ADB_SERVER_PORT")
        try:
            port = int(raw) if raw else DEFAULT_ADB_PORT
        except ValueError:
            raise DeviceError(f"ANDROID_ADB_SERVER_PORT={raw!r} is not a port number") from None
    return str(host), int(port)


class AdbTransport(WorkdirMixin):
    def __init__(self, spec: DeviceSpec) -> None:
        import adbutils  # noqa: F401  (fail early if the extra is not installed)

        self.name = spec.name
        self.spec = spec
        self.serial: str = spec.option("serial")
        self.server = adb_server_address(spec)
        self._client: Any = None
        self._device: Any = None
        self._shell_v2: bool | None = None
        self._workdir: str | None = None
        self.reconnects = 0

    @property
    def where(self) -> str:
        return f"{self.serial} via adb server {self.server[0]}:{self.server[1]}"

    # -- lifecycle -------------------------------------------------------------------------------------

    def open(self) -> None:
        if self._client is None:
            self._client = _client_that_starts_no_server(self.server, CONNECT_TIMEOUT_S)
        self._attach()
        if self._workdir is None:
            path = self.spec.workdir or f"/data/local/tmp/zbench-{self.name}"
            self._simple(["mkdir", "-p", path])
            self._workdir = path

    def close(self) -> None:
        self._device = None
        self._client = None
        self._workdir = None

    # -- files -------------------------------------------------------------------------------------------

    def mkdir(self, path: str) -> None:
        self._simple(["mkdir", "-p", path])

    def remove_tree(self, path: str) -> None:
        self._simple(["rm", "-rf", path])

    def push(self, local: Path, remote: str) -> None:
        def go() -> None:
            # SEND creates the file's folder on the device (adbd's sync service does)
            with _SyncSession(self._device) as sync:
                sync.send(Path(local).read_bytes(), remote, 0o644)

        self._retrying(go, f"push {local} to {remote}")

    def pull_dir(self, remote: str, local: Path, *, max_bytes: int | None = None) -> PulledFiles:
        def go() -> PulledFiles:
            # One sync session for the whole folder (stat, list, every file): one stream to open, not one
            # per file (docs/architecture.md, "Round trips per launch").
            with _SyncSession(self._device) as sync:
                if not stat.S_ISDIR(sync.stat(remote)):
                    raise DeviceError(f"device {self.name}: {remote} is not a folder on the device")
                local.mkdir(parents=True, exist_ok=True)
                pulled = PulledFiles()
                for name, mode, size in sorted(sync.list(remote)):
                    if name in (".", "..") or "/" in name or not stat.S_ISREG(mode):
                        continue
                    if max_bytes is not None and size > max_bytes:
                        pulled.too_large[name] = size
                        continue
                    target = local / name
                    sync.recv(posixpath.join(remote, name), target)
                    pulled.append(target)
                return pulled

        return self._retrying(go, f"pull {remote}")

    # -- processes -----------------------------------------------------------------------------------------

    def run(self, argv: Sequence[str], *, timeout_s: float, on_line: LineCallback | None = None) -> CommandResult:
        argv = tuple(str(a) for a in argv)
        started = time.monotonic()
        deadline = started + timeout_s
        token = launch_token()
        conn, v2 = self._retrying(lambda: self._open_shell(argv, token), f"start `{argv[0] if argv else ''}`")
        state = _ShellState(on_line, log_name=self.name)
        timed_out = lost = False
        notes: list[str] = []
        sock = conn.conn
        parser = _V2Parser() if v2 else None
        try:
            while not state.finished:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    break
                sock.settimeout(min(POLL_S * 5, remaining))
                try:
                    data = sock.recv(64 * 1024)
                except TimeoutError:
                    continue
                except OSError as exc:
                    lost = True
                    notes.append(f"adb stream lost during the run: {exc}")
                    break
                if not data:
                    if v2 and not state.finished:
                        lost = True
                        notes.append(f"adb stream to {self.where} closed before the runner's exit status arrived")
                    state.finished = True
                    break
                if parser is not None:
                    for packet_id, payload in parser.feed(data):
                        if packet_id == ID_STDOUT:
                            state.stdout(payload)
                        elif packet_id == ID_STDERR:
                            state.stderr(payload)
                        elif packet_id == ID_EXIT:
                            state.exit_code = payload[0] if payload else 255
                            state.finished = True
                else:
                    state.stdout(data)
        finally:
            conn.close()
        state.flush()
        if not v2 and not timed_out:
            state.take_v1_exit()
            if state.exit_code is None and not lost:
                lost = True
                notes.append("the v1 shell ended without reporting an exit status")
        if timed_out or lost:
            if state.pid is not None:
                notes.append(self._kill_on_device(state.pid, token, reconnect=lost))
            else:
                notes.append("the runner never reported its pid; only its stream was closed")
        stderr, leftover = take_leftover(state.err_text())
        stdout, leftover_v1 = take_leftover(state.out_text())  # v1 merges stderr into stdout
        if notes:
            stderr += ("" if not stderr or stderr.endswith("\n") else "\n") + "".join(f"zbench: {n}\n" for n in notes)
        return CommandResult(argv=argv, exit_code=None if (timed_out or lost) else state.exit_code,
                             stdout=stdout, stderr=stderr, timed_out=timed_out, leftover=leftover + leftover_v1,
                             wall_s=time.monotonic() - started)

    def run_script(self, script: str, *, timeout_s: float) -> CommandResult:
        return self.run(["sh", "-c", script], timeout_s=timeout_s)

    # -- internals -------------------------------------------------------------------------------------------

    def _attach(self) -> None:
        """Make sure the server knows the device and it is online; `adb connect` network serials."""
        import adbutils

        try:
            states = {info.serial: info.state for info in self._client.list()}
        except (adbutils.AdbError, OSError) as exc:
            raise DeviceError(
                f"device {self.name}: no adb server at {self.server[0]}:{self.server[1]} ({exc}). Start one with "
                f"`adb -P {self.server[1]} start-server`, or set adb_host/adb_port in the inventory; the host "
                "never starts one itself."
            ) from None
        if states.get(self.serial) != "device" and ":" in self.serial:
            deadline = time.monotonic() + CONNECT_TIMEOUT_S
            while True:
                try:
                    self._client.connect(self.serial, timeout=CONNECT_TIMEOUT_S)
                except (adbutils.AdbError, OSError) as exc:
                    log.info("device %s: adb connect %s: %s", self.name, self.serial, exc)
                states = {info.serial: info.state for info in self._client.list()}
                if states.get(self.serial) == "device" or time.monotonic() > deadline:
                    break
                time.sleep(POLL_S)
        state = states.get(self.serial)
        if state != "device":
            listed = ", ".join(f"{s} ({st})" for s, st in sorted(states.items())) or "none"
            why = "is not listed" if state is None else f"is {state}"
            hint = " (unauthorized: accept the host's key on the device)" if state == "unauthorized" else ""
            raise DeviceError(
                f"device {self.name}: serial {self.serial} {why} on the adb server at "
                f"{self.server[0]}:{self.server[1]}{hint}; devices there: {listed}"
            )
        self._device = self._client.device(self.serial)
        if self._shell_v2 is None:
            try:
                self._shell_v2 = "shell_v2" in self._device.get_features().split(",")
            except (adbutils.AdbError, OSError):
                self._shell_v2 = False

    def _reconnect(self) -> None:
        self.reconnects += 1
        self._device = None
        self._client.version = None
        self._attach()

    def _retrying(self, action: Callable[[], T], what: str) -> T:
        """Run a device action; on a lost device/stream reconnect once and retry."""
        import adbutils

        for attempt in (1, 2):
            if self._device is None:
                if self._client is None:
                    raise RuntimeError(f"device {self.name}: transport used before open()")
                self._attach()
            try:
                return action()
            except DeviceError:
                raise
            except (adbutils.AdbError, OSError, EOFError, struct.error) as exc:
                if attempt == 2:
                    raise DeviceError(f"device {self.name} ({self.where}): cannot {what}: {exc}") from None
                log.info("device %s: %s failed (%s); reconnecting", self.name, what, exc)
                try:
                    self._reconnect()
                except DeviceError as again:
                    raise DeviceError(f"device {self.name}: cannot {what}: {exc}; reconnecting failed: {again}") from None
        raise AssertionError("unreachable")

    def _open_shell(self, argv: Sequence[str], token: str) -> tuple[Any, bool]:
        # The shell wrapper without the stdin watchdog: adbd gives a v2 raw shell a closed stdin, so nothing
        # on the device notices that this host went away (README, Reliability: what adb guarantees).
        command = supervised_command(argv, self.spec.env, token=token, watch_stdin=False)
        conn = self._device.open_transport(timeout=CONNECT_TIMEOUT_S)
        try:
            if self._shell_v2:
                conn.send_command("shell,v2,raw:" + command)
            else:
                # v1: no exit status on the wire; an outer shell prints it after the runner ends
                conn.send_command(f"shell:sh -c {shlex.quote(command)}; echo {EXIT_MARK}$?")
            conn.check_okay()
        except BaseException:
            conn.close()
            raise
        return conn, bool(self._shell_v2)

    def _shell_collect(self, command: str, timeout_s: float) -> tuple[int | None, str]:
        """A fixed housekeeping command (already quoted); (exit code or None, stdout+stderr)."""
        import adbutils

        if self._shell_v2:
            result = self._device.shell2(command, timeout=timeout_s, v2=True)
            return result.returncode, result.output
        try:
            result = self._device.shell2(command, timeout=timeout_s)
        except adbutils.AdbError as exc:
            return None, str(exc)
        return result.returncode, result.output

    def _simple(self, argv: Sequence[str]) -> str:
        command = quote_argv(argv)
        code, output = self._retrying(lambda: self._shell_collect(command, SMALL_COMMAND_TIMEOUT_S), f"run `{argv[0]}`")
        if code != 0:
            raise DeviceError(f"device {self.name}: `{' '.join(argv)}` failed ({code}): {output.strip()}")
        return output

    def _quiet(self, command: str) -> str | None:
        try:
            return self._retrying(lambda: self._shell_collect(command, SMALL_COMMAND_TIMEOUT_S)[1], "clean up")
        except DeviceError as exc:
            log.warning("device %s: %s", self.name, exc)
            return None

    def _kill_on_device(self, pid: int, token: str, *, reconnect: bool) -> str:
        if reconnect:
            try:
                self._reconnect()
            except DeviceError as exc:
                return f"connection lost and not re-established ({exc}); runner pid {pid} may still be running"
        term, kill = stop_policy(pid, token)
        self._quiet(term.command)  # the wrapper stops every process of the launch
        deadline = time.monotonic() + term.wait_s
        while time.monotonic() < deadline:
            state = self._quiet(alive_command(pid, token))
            if state is not None and state.strip() == "gone":
                return term.note
            time.sleep(POLL_S)
        self._quiet(kill.command)
        deadline = time.monotonic() + kill.wait_s
        while True:
            state = self._quiet(alive_command(pid, token))
            if state is not None and state.strip() == "gone":
                return kill.note
            if time.monotonic() > deadline:
                raise still_running(self.name, pid, self.serial, state)
            time.sleep(POLL_S)


def _client_that_starts_no_server(server: tuple[str, int], socket_timeout: float) -> Any:
    """An adbutils client of the server at `server` that never starts one. adbutils runs `adb start-server`
    when it cannot connect, which starts a server on adb's default port (5037), whatever port the inventory
    named, and leaves it running after the session: here a missing server is a DeviceError instead."""
    import adbutils
    from adbutils._adb import AdbConnection

    class Connection(AdbConnection):  # type: ignore[misc]
        def _safe_connect(self) -> Any:
            sock = self._create_socket()  # raises AdbConnectionError / AdbTimeout; never starts a server
            # Requests go out as several small writes (length, command, then data): without TCP_NODELAY each
            # one can wait for the delayed ACK of the last (40 ms on Linux), several times per request.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock

        def close(self) -> None:
            # adbutils sleeps 10 ms before closing every connection; a finished stream needs no grace.
            try:
                self.conn.close()
            except Exception:  # noqa: BLE001 - closed already
                pass
            self._AdbConnection__conn = None

    class Client(adbutils.AdbClient):  # type: ignore[misc]
        version: int | None = None

        def make_connection(self, timeout: float | None = None) -> Any:
            connection = Connection(self.host, self.port)
            connection.conn.settimeout(timeout or socket_timeout)
            return connection

        def server_version(self) -> int:
            # asked by adbutils before every stream it opens: one extra connection each time; read once
            # (a reconnection asks again: the server may have been restarted)
            if self.version is None:
                self.version = int(super().server_version())
            return self.version

    return Client(host=server[0], port=server[1], socket_timeout=socket_timeout)


class _SyncSession:
    """One `sync:` stream on the device (the adb sync protocol, SYNC.TXT in adb's sources): any number of
    STAT / LIST / RECV / SEND requests, then QUIT. A FAIL ends the session (adbd closes it after one)."""

    def __init__(self, device: Any) -> None:
        self._conn = device.open_transport(timeout=CONNECT_TIMEOUT_S)
        try:
            self._conn.send_command("sync:")
            self._conn.check_okay()
        except BaseException:
            self._conn.close()
            raise
        self._sock = self._conn.conn
        self._sock.settimeout(SYNC_TIMEOUT_S)

    def __enter__(self) -> _SyncSession:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if exc[0] is None:
                self._request(b"QUIT", b"")
        except OSError:
            pass
        finally:
            self._conn.close()

    def _request(self, ident: bytes, path: bytes | str) -> None:
        raw = path.encode("utf-8") if isinstance(path, str) else path
        self._sock.sendall(ident + struct.pack("<I", len(raw)) + raw)

    def _read(self, n: int) -> bytes:
        chunks, left = [], n
        while left:
            chunk = self._sock.recv(min(left, 1 << 20))
            if not chunk:
                raise EOFError(f"sync stream closed with {left} of {n} bytes to come")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _fail(self, head: bytes, what: str) -> OSError:
        """The error of a FAIL reply (`head`: its id and length)."""
        length = struct.unpack("<I", head[4:8])[0]
        return OSError(f"{what}: {self._read(length).decode('utf-8', 'replace')}")

    def stat(self, path: str) -> int:
        """The mode of `path` (0 when it does not exist)."""
        self._request(b"STAT", path)
        head = self._read(16)
        if head[:4] != b"STAT":
            raise OSError(f"sync STAT {path}: unexpected reply {head[:4]!r}")
        return int(struct.unpack("<III", head[4:])[0])

    def list(self, path: str) -> list[tuple[str, int, int]]:
        """(name, mode, size) of each entry of a folder (names as the device gives them, '.' and '..' too)."""
        self._request(b"LIST", path)
        entries: list[tuple[str, int, int]] = []
        while True:
            head = self._read(20)
            if head[:4] == b"DONE":
                return entries
            if head[:4] != b"DENT":
                raise OSError(f"sync LIST {path}: unexpected reply {head[:4]!r}")
            mode, size, _mtime, length = struct.unpack("<IIII", head[4:])
            entries.append((self._read(length).decode("utf-8", "replace"), mode, size))

    def recv(self, path: str, target: Path) -> None:
        self._request(b"RECV", path)
        with open(target, "wb") as out:
            while True:
                head = self._read(8)
                if head[:4] == b"DATA":
                    out.write(self._read(struct.unpack("<I", head[4:])[0]))
                elif head[:4] == b"DONE":
                    return
                elif head[:4] == b"FAIL":
                    raise self._fail(head, f"sync RECV {path}")
                else:
                    raise OSError(f"sync RECV {path}: unexpected reply {head[:4]!r}")

    def send(self, data: bytes, path: str, mode: int) -> None:
        self._request(b"SEND", f"{path},{stat.S_IFREG | mode}")
        for start in range(0, len(data), SYNC_DATA_MAX):
            chunk = data[start:start + SYNC_DATA_MAX]
            self._sock.sendall(b"DATA" + struct.pack("<I", len(chunk)) + chunk)
        self._sock.sendall(b"DONE" + struct.pack("<I", int(time.time())))
        head = self._read(8)
        if head[:4] == b"FAIL":
            raise self._fail(head, f"sync SEND {path}")
        if head[:4] != b"OKAY":
            raise OSError(f"sync SEND {path}: unexpected reply {head[:4]!r}")


class _V2Parser:
    """Splits a shell-protocol-v2 byte stream into (id, payload) packets (5-byte header: id, LE length)."""

    def __init__(self) -> None:
        self.buffer = bytearray()

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        self.buffer += data
        packets = []
        while len(self.buffer) >= 5:
            length = struct.unpack("<I", self.buffer[1:5])[0]
            if len(self.buffer) < 5 + length:
                break
            packets.append((self.buffer[0], bytes(self.buffer[5:5 + length])))
            del self.buffer[:5 + length]
        return packets


class _ShellState:
    """Line splitting, the pid marker, the v1 exit marker, and what goes to on_line."""

    def __init__(self, on_line: LineCallback | None, log_name: str) -> None:
        self.on_line = on_line
        self.log_name = log_name
        self.pid: int | None = None
        self.exit_code: int | None = None
        self.finished = False
        self._partial = b""
        self._lines: list[str] = []
        self._err = bytearray()

    def stdout(self, data: bytes) -> None:
        self._partial += data
        *complete, self._partial = self._partial.split(b"\n")
        for raw in complete:
            self._line(raw.decode("utf-8", "replace") + "\n")

    def stderr(self, data: bytes) -> None:
        self._err += data

    def flush(self) -> None:
        if self._partial:
            raw, self._partial = self._partial, b""
            self._line(raw.decode("utf-8", "replace"))

    def _line(self, line: str) -> None:
        if self.pid is None:
            found = parse_pid_line(line)
            if found is not None:
                self.pid = found
                return
        if line.startswith(EXIT_MARK):  # v1 only; held back, read by take_v1_exit
            self._lines.append(line)
            return
        self._lines.append(line)
        if self.on_line is not None:
            try:
                self.on_line(line.rstrip("\r\n"))
            except Exception:  # noqa: BLE001 - a progress callback must not lose the run
                log.exception("device %s: on_line callback failed", self.log_name)

    def take_v1_exit(self) -> None:
        for i in range(len(self._lines) - 1, -1, -1):
            line = self._lines[i].strip()
            if line.startswith(EXIT_MARK) and line[len(EXIT_MARK):].isdigit():
                self.exit_code = int(line[len(EXIT_MARK):])
                del self._lines[i]
                return

    def out_text(self) -> str:
        return "".join(self._lines)

    def err_text(self) -> str:
        return self._err.decode("utf-8", "replace")
