"""`ssh`: a device reached over SSH with asyncssh, behind the synchronous Transport interface.

* One private event loop thread per transport and one persistent connection per device: create one
  transport per device per process. A dropped connection is re-established on the next call (and, when it
  drops during `run`, the runner it left behind is killed after reconnecting).
* The host key is always verified against the inventory's `known_hosts` file (default ~/.ssh/known_hosts);
  a missing file or a mismatch is a DeviceError naming the file and the host. There is no switch to turn
  verification off.
* Key authentication with `identity_file` (when set, only that key is offered; otherwise asyncssh's
  defaults: the agent and ~/.ssh/id_*). Options `connect_timeout_s` (default 10) and `keepalive_s`
  (default 15; the connection is declared dead after 3 unanswered keepalives).
* Files move over SFTP. Commands go as strings built by shlex.quote of every argv element
  (see _shell.py); the device account's login shell must be a POSIX shell.
* On a device with Python 3.7+ the login shell runs once per connection, to start the launcher
  (_supervisor.py serve) that starts every launch: no login shell and no rc files per launch, and a launch's
  environment is the launcher's fixed one plus the inventory's `env` (docs/architecture.md, "The ssh
  launcher"). The launcher also sends a folder's files back in one request (pull_dir), writes a pushed job
  and runs mkdir and rm -rf, one round trip each. Without Python, each launch is a command of its own,
  through the login shell, and files move over SFTP only.
* `run` has a wall-clock deadline: at the deadline the runner's process group is sent SIGTERM on the
  device, SIGKILL after KILL_GRACE_S, and the host then checks that it is gone.
* Every launch runs supervised on the device (_shell.py supervised_command): with Python 3.7+ there, the
  supervisor the local transport uses (pushed into WORKDIR/.zbench-host/ on each connection), else a shell
  wrapper; either stops what the runner leaves running and, since its stdin is the channel (never written),
  stops the runner when the connection ends, the host dying included. A temporary workdir has a keeper
  process per connection that removes it when that connection ends without close().
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import posixpath
import secrets
import shlex
import stat
import threading
import time
import warnings
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from ..errors import DeviceError, ZbenchError
from ..inventory import DeviceSpec
from ._shell import (
    LAUNCH_VARIABLE,
    SUPERVISOR_NAME,
    alive_command,
    keeper_command,
    launch_token,
    parse_pid_line,
    still_running,
    stop_policy,
    supervised_command,
)
from .base import KILL_GRACE_S, CommandResult, LineCallback, PulledFiles, WorkdirMixin, take_leftover
from .supervised import SUPERVISOR

log = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_KEEPALIVE_S = 15.0
KEEPALIVE_COUNT_MAX = 3
SMALL_COMMAND_TIMEOUT_S = 30.0
PUSH_BY_LAUNCHER_MAX = 1 << 20  # bytes of a text file pushed in one request to the launcher (a job); more: SFTP
# What a launch's environment starts from on a device with Python (the launcher's, set once per connection
# without the account's rc files), before the inventory's `env`: the account's identity as sshd set it, a
# standard PATH, and the session's runtime folder, locale and time zone when they are set.
LAUNCHER_ENV = ('HOME="$HOME" ${USER+"USER=$USER"} ${LOGNAME+"LOGNAME=$LOGNAME"} ${SHELL+"SHELL=$SHELL"} '
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/vc/bin "
                '${XDG_RUNTIME_DIR+"XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR"} ${LANG+"LANG=$LANG"} ${TZ+"TZ=$TZ"}')


def _import_asyncssh() -> None:
    """The first import of asyncssh, with cryptography's warnings that DSA is deprecated silenced: asyncssh names
    the DSA key types when it loads, whatever keys a device uses, and printed five warnings on every session and
    command that nobody running this suite could act on. Raises ModuleNotFoundError when the extra is missing
    (transports/__init__.py turns it into the one-line hint)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="DSA is deprecated")
        import asyncssh  # noqa: F401


class SshTransport(WorkdirMixin):
    def __init__(self, spec: DeviceSpec) -> None:
        _import_asyncssh()

        self.name = spec.name
        self.spec = spec
        self.host: str = spec.option("host")
        self.port: int = int(spec.option("port", 22))
        self.user: str = spec.option("user")
        self.identity_file: str | None = spec.option("identity_file")
        self.known_hosts: str = spec.option("known_hosts") or os.path.expanduser("~/.ssh/known_hosts")
        self.connect_timeout_s = float(spec.option("connect_timeout_s", DEFAULT_CONNECT_TIMEOUT_S))
        self.keepalive_s = float(spec.option("keepalive_s", DEFAULT_KEEPALIVE_S))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._conn: Any = None
        self._sftp: Any = None
        self._lost = False
        self._workdir: str | None = None
        self._owns_workdir = False
        self._python: bool | None = None  # the device has Python 3.7+: launches run under the supervisor
        self._supervisor: str | None = None  # its path on the device, once pushed on this connection
        self._keeper: Any = None  # the temporary workdir's keeper process on this connection
        self._interpreter: str | None = None  # the device's python3 by absolute path (no PATH lookup)
        self._launcher: Any = None  # this connection's launcher (_supervisor.py serve), on a device with Python
        # the current launcher's requests: their frames by request id (a dict per launcher, so that the end of
        # a lost connection's launcher reaches only the requests it had)
        self._frames: dict[int, asyncio.Queue[dict[str, Any] | None]] = {}
        self._requests = 0
        self.connects = 0  # how many connections were opened (1 + reconnections)

    # -- lifecycle -------------------------------------------------------------------------------------

    @property
    def where(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"

    def open(self) -> None:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name=f"zbench-ssh-{self.name}", daemon=True)
            thread.start()
            self._loop, self._thread = loop, thread
        self._call(self._ensure(), self.connect_timeout_s + 30)
        if self._workdir is None:
            self._workdir = self._call(self._make_workdir(), SMALL_COMMAND_TIMEOUT_S)
            self._call(self._prepare_device(), SMALL_COMMAND_TIMEOUT_S * 2)

    def close(self) -> None:
        if self._loop is None:
            return
        try:
            if self._owns_workdir and self._workdir and not self._lost:
                try:
                    self.remove_tree(self._workdir)
                except DeviceError as exc:
                    log.warning("device %s: could not remove %s: %s", self.name, self._workdir, exc)
            self._call(self._disconnect(), 10)
        finally:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
            self._workdir = None
            loop.call_soon_threadsafe(loop.stop)
            if thread is not None:
                thread.join(timeout=5)
            loop.close()

    # -- files -------------------------------------------------------------------------------------------

    def mkdir(self, path: str) -> None:
        async def go() -> None:
            sftp = await self._sftp_client()
            await sftp.makedirs(path, exist_ok=True)

        async def quick() -> None:
            if not await self._by_launcher(("mkdir", "-p", "--", path), f"create folder {path}"):
                await self._files(go, f"create folder {path}")

        self._call(quick(), SMALL_COMMAND_TIMEOUT_S * 2)

    def remove_tree(self, path: str) -> None:
        async def go() -> None:
            sftp = await self._sftp_client()
            try:
                if await sftp.exists(path):
                    await sftp.rmtree(path)
            except Exception:
                # rmtree of something that vanished meanwhile, or a file: fall back to the shell
                await self._simple(["rm", "-rf", "--", path])

        async def quick() -> None:
            if not await self._by_launcher(("rm", "-rf", "--", path), f"remove {path}"):
                await self._files(go, f"remove {path}")

        self._call(quick(), SMALL_COMMAND_TIMEOUT_S * 6)

    def push(self, local: Path, remote: str) -> None:
        async def go() -> None:
            sftp = await self._sftp_client()
            await sftp.put(str(local), remote)

        async def quick() -> None:
            # A job (small UTF-8 text) is one request to the launcher, where SFTP takes an open, the writes
            # and a close; anything else, or a connection lost meanwhile, goes over SFTP.
            await self._ensure()
            text: str | None = None
            if self._launcher is not None and local.stat().st_size <= PUSH_BY_LAUNCHER_MAX:
                try:
                    text = local.read_bytes().decode("utf-8")
                except UnicodeDecodeError:
                    text = None
            if text is not None:
                try:
                    await self._request({"write": remote, "text": text}, f"push {local} to {remote}",
                                        lambda _frame: None)
                    return
                except _StreamLost:
                    self._lost = True
            await self._files(go, f"push {local} to {remote}")

        self._call(quick(), None)

    def pull_dir(self, remote: str, local: Path, *, max_bytes: int | None = None) -> PulledFiles:
        async def go() -> PulledFiles:
            import asyncssh

            sftp = await self._sftp_client()
            local.mkdir(parents=True, exist_ok=True)
            entries = sorted((entry for entry in await sftp.readdir(remote)
                              if entry.attrs.type == asyncssh.FILEXFER_TYPE_REGULAR
                              or (entry.attrs.permissions is not None and stat.S_ISREG(entry.attrs.permissions))),
                             key=lambda entry: entry.filename)
            pulled = PulledFiles()
            for entry in entries:
                name = entry.filename
                if name in (".", "..") or "/" in name:
                    continue
                if max_bytes is not None and (entry.attrs.size or 0) > max_bytes:
                    pulled.too_large[name] = entry.attrs.size
                    continue
                target = local / name
                await sftp.get(posixpath.join(remote, name), str(target))
                pulled.append(target)
            return pulled

        async def pull() -> PulledFiles:
            for attempt in (1, 2):
                await self._ensure()
                if self._launcher is None:
                    return await self._files(go, f"pull {remote}")
                try:
                    return await self._pack(remote, local, max_bytes)
                except _StreamLost as exc:
                    if attempt == 2:
                        raise DeviceError(f"device {self.name}: connection to {self.where} lost during pull "
                                          f"{remote}: {exc}") from None
                    self._lost = True
                    log.info("device %s: connection lost during pull %s, reconnecting", self.name, remote)
            raise AssertionError("unreachable")

        return self._call(pull(), None)

    # -- processes -----------------------------------------------------------------------------------------

    def run(self, argv: Sequence[str], *, timeout_s: float, on_line: LineCallback | None = None) -> CommandResult:
        argv = tuple(str(a) for a in argv)
        # The coroutine enforces the deadline itself; the outer wait only guards against a wedged loop.
        return self._call(self._run(argv, timeout_s, on_line), timeout_s + 4 * KILL_GRACE_S + 60)

    def run_script(self, script: str, *, timeout_s: float) -> CommandResult:
        argv = ("sh", "-c", script)

        async def go() -> CommandResult:
            started = time.monotonic()
            await self._ensure()
            if self._launcher is not None:  # started by the launcher itself, without a supervisor
                return await self._launch(argv, timeout_s, None, launch_token(), started, plain=True)
            return await self._run(argv, timeout_s, None)

        return self._call(go(), timeout_s + 4 * KILL_GRACE_S + 60)

    # -- internals -------------------------------------------------------------------------------------------

    def _call(self, coro: Awaitable[T], timeout: float | None) -> T:
        if self._loop is None:
            raise RuntimeError(f"device {self.name}: transport used before open()")
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self._loop)  # type: ignore[arg-type]
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise DeviceError(f"device {self.name} ({self.where}): no answer within {timeout:.0f} s") from None

    async def _ensure(self) -> Any:
        if self._conn is not None and not self._lost:
            return self._conn
        await self._disconnect()
        self._conn = await self._connect()
        self._lost = False
        self.connects += 1
        if self._workdir is not None:  # a reconnection: the last connection's keeper may have removed it
            await self._prepare_device()
        return self._conn

    async def _prepare_device(self) -> None:
        """On each connection: the workdir, the supervisor (on a device with Python 3.7+) and, for a
        temporary workdir, its keeper. A failure leaves the launches under the shell wrapper."""
        assert self._workdir is not None
        self._supervisor = None
        try:
            sftp = await self._sftp_client()
            await sftp.makedirs(posixpath.join(self._workdir, posixpath.dirname(SUPERVISOR_NAME)), exist_ok=True)
            if self._python is None:
                # the interpreter's own path: what the account's rc files put on PATH (a version manager's
                # shim, say) is looked up once here, not on every launch
                found = await self._shell_quiet("python3 -c 'import sys; print(int(sys.version_info >= (3, 7)), "
                                                "sys.executable)' 2>/dev/null")
                flag, _, interpreter = (found or "").strip().partition(" ")
                self._python = flag == "1" and interpreter.startswith("/")
                self._interpreter = interpreter if self._python else None
            if self._python:
                path = posixpath.join(self._workdir, SUPERVISOR_NAME)
                await sftp.put(str(SUPERVISOR), path)
                self._supervisor = path
            import asyncssh

            if self._owns_workdir:
                self._keeper = await self._conn.create_process(
                    keeper_command(self._workdir, secrets.token_hex(8), supervisor=self._supervisor,
                                   python=self._interpreter or "python3"),
                    stdout=asyncssh.DEVNULL, stderr=asyncssh.DEVNULL)
            if self._supervisor is not None and self._interpreter is not None:
                await self._start_launcher()
        except Exception as exc:  # noqa: BLE001 - supervision degrades to the shell wrapper, reported
            log.warning("device %s: preparing %s failed (%s); launches run under the shell wrapper",
                        self.name, self._workdir, exc)

    async def _start_launcher(self) -> None:
        """This connection's launcher (_supervisor.py serve): started once by the login shell, it starts
        every launch itself, so a launch runs no login shell and no rc files (docs/architecture.md, "The ssh
        launcher")."""
        assert self._supervisor is not None and self._interpreter is not None
        command = (f"exec env -i {LAUNCHER_ENV} {shlex.quote(self._interpreter)} -I {shlex.quote(self._supervisor)} "
                   "serve")
        launcher = await self._conn.create_process(command, encoding=None)
        self._launcher = launcher
        self._frames = {}
        asyncio.ensure_future(self._read_frames(launcher, self._frames))

    async def _read_frames(self, launcher: Any, requests: dict[int, asyncio.Queue[dict[str, Any] | None]]) -> None:
        """Hand each launcher frame to the launch it belongs to; when the channel ends, every launch still
        waiting learns that (None)."""
        try:
            while True:
                raw = await launcher.stdout.readline()
                if not raw:
                    break
                try:
                    frame = json.loads(raw)
                except ValueError:
                    continue  # what the account's rc files printed before the launcher started
                if not isinstance(frame, dict):
                    continue
                if "chunk" in frame:  # a pulled file's bytes follow the frame
                    frame["data"] = await launcher.stdout.readexactly(int(frame["chunk"]))
                if frame.get("id") in requests:
                    requests[frame["id"]].put_nowait(frame)
        except Exception:  # noqa: BLE001 - a lost channel: the same as its end
            pass
        finally:
            if self._launcher is launcher:
                self._launcher = None
            for queue in requests.values():
                queue.put_nowait(None)

    async def _connect(self) -> Any:
        import asyncssh

        if not os.path.isfile(self.known_hosts):
            raise DeviceError(
                f"device {self.name}: known_hosts file {self.known_hosts} does not exist, so the host key of "
                f"{self.host}:{self.port} cannot be verified. Record the device's key there (check its "
                f"fingerprint on the device first), e.g. `ssh-keyscan -p {self.port} {self.host} >> {self.known_hosts}`."
            )
        if self.identity_file and not os.path.isfile(self.identity_file):
            raise DeviceError(f"device {self.name}: identity_file {self.identity_file} does not exist")
        transport = self

        class Client(asyncssh.SSHClient):
            def connection_lost(self, exc: Exception | None) -> None:
                transport._lost = True

        options: dict[str, Any] = dict(
            port=self.port,
            username=self.user,
            known_hosts=self.known_hosts,
            connect_timeout=self.connect_timeout_s,
            login_timeout=self.connect_timeout_s * 3,
            keepalive_interval=self.keepalive_s,
            keepalive_count_max=KEEPALIVE_COUNT_MAX,
            password_auth=False,
            kbdint_auth=False,
        )
        if self.identity_file:
            options.update(client_keys=[self.identity_file], agent_path=None)
        try:
            conn, _client = await asyncssh.create_connection(Client, self.host, **options)
        except asyncssh.HostKeyNotVerifiable as exc:
            raise DeviceError(
                f"device {self.name}: the host key of {self.host}:{self.port} does not match known_hosts file "
                f"{self.known_hosts} ({exc.reason}). If the device was reinstalled, verify its new key out of band "
                f"and update that file; host key verification is never turned off."
            ) from None
        except asyncssh.PermissionDenied as exc:
            key = f"identity_file {self.identity_file}" if self.identity_file else "the default keys / agent"
            raise DeviceError(
                f"device {self.name}: {self.where} refused key authentication with {key} ({exc.reason}). "
                f"Add the public key to ~{self.user}/.ssh/authorized_keys on the device."
            ) from None
        except asyncssh.KeyImportError as exc:
            raise DeviceError(f"device {self.name}: cannot load identity_file {self.identity_file}: {exc}") from None
        except asyncssh.Error as exc:
            raise DeviceError(f"device {self.name}: SSH to {self.where} failed: {exc.reason}") from None
        except (OSError, asyncio.TimeoutError) as exc:
            why = "timed out" if isinstance(exc, asyncio.TimeoutError) else (exc.strerror or str(exc))
            raise DeviceError(
                f"device {self.name}: cannot connect to {self.host}:{self.port} within "
                f"{self.connect_timeout_s:.0f} s ({why}). Is the device on and sshd running?"
            ) from None
        return conn

    async def _disconnect(self) -> None:
        conn, self._conn, self._sftp, self._keeper, self._launcher = self._conn, None, None, None, None
        if conn is not None:
            conn.close()
            try:
                await asyncio.wait_for(conn.wait_closed(), 5)
            except Exception:
                pass

    async def _sftp_client(self) -> Any:
        await self._ensure()
        if self._sftp is None:
            self._sftp = await self._conn.start_sftp_client()
        return self._sftp

    async def _files(self, action: Callable[[], Awaitable[T]], what: str) -> T:
        """Run an SFTP action; on a dropped connection reconnect once and retry."""
        import asyncssh

        for attempt in (1, 2):
            try:
                return await action()
            except asyncssh.SFTPError as exc:
                # A connection that drops in the middle of a transfer fails the transfer as an SFTP error
                # (connection lost / no connection): that one is a lost connection, handled below.
                dead = self._lost or (self._conn is not None and self._conn.is_closed())
                if not dead and exc.code not in (asyncssh.FX_CONNECTION_LOST, asyncssh.FX_NO_CONNECTION):
                    raise DeviceError(f"device {self.name}: cannot {what}: {exc.reason}") from None
                if attempt == 2:
                    raise DeviceError(f"device {self.name}: connection to {self.where} lost during {what}: "
                                      f"{exc.reason}") from None
                self._lost = True
                log.info("device %s: connection lost during %s, reconnecting", self.name, what)
            except (asyncssh.Error, OSError, EOFError) as exc:
                dead = self._lost or (self._conn is not None and self._conn.is_closed())
                if not dead:
                    raise DeviceError(f"device {self.name}: cannot {what}: {exc}") from None
                if attempt == 2:
                    raise DeviceError(f"device {self.name}: connection to {self.where} lost during {what}: {exc}") from None
                self._lost = True
                log.info("device %s: connection lost, reconnecting", self.name)
        raise AssertionError("unreachable")

    async def _simple(self, argv: Sequence[str]) -> str:
        """A short housekeeping command (quoted argv); returns stdout, raises DeviceError on failure."""
        from ._shell import quote_argv

        conn = await self._ensure()
        result = await asyncio.wait_for(conn.run(quote_argv(argv), check=False), SMALL_COMMAND_TIMEOUT_S)
        if result.exit_status != 0:
            raise DeviceError(f"device {self.name}: `{' '.join(argv)}` failed: {str(result.stderr).strip()}")
        return str(result.stdout)

    async def _make_workdir(self) -> str:
        sftp = await self._sftp_client()
        if self.spec.workdir:
            path = self.spec.workdir
            if path == "~" or path.startswith("~/"):
                path = posixpath.join(await sftp.realpath("."), path[2:])
            elif not path.startswith("/"):
                path = posixpath.join(await sftp.realpath("."), path)
            await sftp.makedirs(path, exist_ok=True)
            return path
        self._owns_workdir = True
        return (await self._simple(["mktemp", "-d", f"/tmp/zbench-{self.name}-XXXXXXXX"])).strip()

    async def _shell_quiet(self, command: str) -> str | None:
        """A fixed housekeeping command on the current connection; None if it could not run."""
        try:
            conn = await self._ensure()
            result = await asyncio.wait_for(conn.run(command, check=False), SMALL_COMMAND_TIMEOUT_S)
            return str(result.stdout)
        except Exception as exc:  # noqa: BLE001 - reported by the caller
            log.warning("device %s: %r failed: %s", self.name, command, exc)
            return None

    async def _kill_on_device(self, pid: int, proc: Any, token: str) -> str:
        """TERM the runner's supervisor (it stops the whole tree), KILL every process of the launch if some
        are left after the supervisor's own grace, then check they are gone. Returns a note."""
        term, kill = stop_policy(pid, token)
        await self._shell_quiet(term.command)
        deadline = time.monotonic() + term.wait_s
        if proc is not None:
            try:
                await asyncio.wait_for(proc.wait_closed(), term.wait_s)
            except Exception:
                pass
        while True:
            state = await self._shell_quiet(alive_command(pid, token))
            if state is not None and state.strip() == "gone":
                return term.note
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
        await self._shell_quiet(kill.command)
        deadline = time.monotonic() + kill.wait_s
        while True:
            state = await self._shell_quiet(alive_command(pid, token))
            if state is not None and state.strip() == "gone":
                return kill.note
            if time.monotonic() > deadline:
                raise still_running(self.name, pid, self.host, state)
            await asyncio.sleep(0.1)

    async def _run(self, argv: tuple[str, ...], timeout_s: float, on_line: LineCallback | None) -> CommandResult:
        import asyncssh

        started = time.monotonic()
        deadline = started + timeout_s
        token = launch_token()
        await self._ensure()
        if self._launcher is not None:
            return await self._launch(argv, timeout_s, on_line, token, started)
        proc = None
        for attempt in (1, 2):
            try:
                conn = await self._ensure()
                # The channel's stdin stays open and unwritten: its end of file tells the supervisor that the
                # connection, or this host, is gone.
                command = supervised_command(argv, self.spec.env, token=token, supervisor=self._supervisor,
                                             watch_stdin=True)
                proc = await conn.create_process(command, encoding="utf-8", errors="replace")
                break
            except (asyncssh.ChannelOpenError, asyncssh.DisconnectError, OSError) as exc:
                if attempt == 2:
                    raise DeviceError(f"device {self.name}: cannot start `{argv[0]}` on {self.where}: {exc}") from None
                self._lost = True  # a stale connection: reconnect and try once more
        assert proc is not None

        pid: int | None = None
        pid_seen = asyncio.Event()
        out_lines: list[str] = []
        err_chunks: list[str] = []

        async def read_stdout() -> None:
            nonlocal pid
            async for line in proc.stdout:
                if not line:
                    continue
                if pid is None:
                    # lines before the marker come from the login shell's rc files: kept as output
                    found = parse_pid_line(line)
                    if found is not None:
                        pid = found
                        pid_seen.set()
                        continue
                out_lines.append(line)
                if on_line is not None:
                    try:
                        on_line(line.rstrip("\n"))
                    except Exception:  # noqa: BLE001 - a progress callback must not lose the run
                        log.exception("device %s: on_line callback failed", self.name)
            pid_seen.set()

        async def read_stderr() -> None:
            async for chunk in proc.stderr:
                err_chunks.append(chunk)

        readers = asyncio.gather(read_stdout(), read_stderr(), proc.wait_closed())
        timed_out = lost = False
        notes: list[str] = []
        try:
            await asyncio.wait_for(asyncio.shield(readers), max(0.0, deadline - time.monotonic()))
        except asyncio.TimeoutError:
            timed_out = True
        except (asyncssh.Error, OSError, EOFError, ConnectionError) as exc:
            lost = True
            notes.append(f"connection to {self.where} lost during the run: {exc}")
        if not timed_out and not lost and proc.exit_status is None and proc.exit_signal is None:
            # the channel closed without an exit status: the connection (or the sshd serving it) went away
            lost = True
            self._lost = True
            notes.append(f"connection to {self.where} lost during the run")
        if timed_out or lost:
            if pid is not None:
                if lost:
                    self._lost = True  # reconnect (in _shell_quiet) and clean up what the drop left behind
                notes.append(await self._kill_on_device(pid, None if lost else proc, token))
            else:
                notes.append("the runner never reported its pid; only its channel was closed")
            proc.close()
            try:
                await asyncio.wait_for(asyncio.shield(readers), KILL_GRACE_S)
            except Exception:
                readers.cancel()
        exit_code: int | None = None
        if not timed_out and not lost:
            exit_code = proc.returncode if proc.returncode is not None else None
        stderr, leftover = take_leftover("".join(err_chunks))
        if notes:
            stderr += ("" if not stderr or stderr.endswith("\n") else "\n") + "".join(f"zbench: {n}\n" for n in notes)
        return CommandResult(argv=argv, exit_code=exit_code, stdout="".join(out_lines), stderr=stderr,
                             timed_out=timed_out, wall_s=time.monotonic() - started, leftover=leftover)

    async def _launch(self, argv: tuple[str, ...], timeout_s: float, on_line: LineCallback | None, token: str,
                      started: float, *, plain: bool = False) -> CommandResult:
        """`run` through this connection's launcher: the same supervision as a command of its own (the
        launcher starts `_supervisor.py run` for it), without a new session and its login shell. `plain`:
        the launcher starts argv itself, unsupervised (`run_script`)."""
        deadline = started + timeout_s
        env = {**self.spec.env, LAUNCH_VARIABLE: token}
        self._requests += 1
        ident = self._requests
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        requests = self._frames
        requests[ident] = queue
        pid: int | None = None
        partial = ""
        out_lines: list[str] = []
        err_chunks: list[str] = []
        exit_code: int | None = None
        timed_out = lost = False
        notes: list[str] = []

        def lines(text: str) -> None:
            nonlocal partial
            partial += text
            *complete, partial = partial.split("\n")
            for line in complete:
                out_lines.append(line + "\n")
                if on_line is not None:
                    try:
                        on_line(line)
                    except Exception:  # noqa: BLE001 - a progress callback must not lose the run
                        log.exception("device %s: on_line callback failed", self.name)

        try:
            try:
                request = {"id": ident, "argv": list(argv), "env": env, **({"plain": True} if plain else {})}
                self._launcher.stdin.write(json.dumps(request).encode() + b"\n")
                await self._launcher.stdin.drain()
            except Exception as exc:  # noqa: BLE001 - the channel is gone: the same as a lost connection
                raise DeviceError(f"device {self.name}: cannot start `{argv[0]}` on {self.where}: {exc}") from None
            while True:
                try:
                    frame = await asyncio.wait_for(queue.get(), max(0.0, deadline - time.monotonic()))
                except asyncio.TimeoutError:
                    timed_out = True
                    break
                if frame is None:
                    lost = True
                    self._lost = True
                    notes.append(f"connection to {self.where} lost during the run")
                    break
                if "pid" in frame:
                    pid = int(frame["pid"])
                elif "out" in frame:
                    lines(str(frame["out"]))
                elif "err" in frame:
                    err_chunks.append(str(frame["err"]))
                elif "exit" in frame:
                    exit_code = int(frame["exit"])
                    break
            if timed_out or lost:
                if pid is not None:
                    notes.append(await self._kill_on_device(pid, None, token))
                else:
                    notes.append("the runner never reported its pid")
                exit_code = None
        finally:
            del requests[ident]
        if partial:
            lines("\n")
        stderr, leftover = take_leftover("".join(err_chunks))
        if notes:
            stderr += ("" if not stderr or stderr.endswith("\n") else "\n") + "".join(f"zbench: {n}\n" for n in notes)
        return CommandResult(argv=argv, exit_code=exit_code, stdout="".join(out_lines), stderr=stderr,
                             timed_out=timed_out, wall_s=time.monotonic() - started, leftover=leftover)

    async def _by_launcher(self, argv: tuple[str, ...], what: str) -> bool:
        """A housekeeping command (mkdir, rm) as one request to the launcher: one round trip where SFTP takes
        one per folder level or per file. False when there is no launcher, or the connection went during
        it: the caller then does it over SFTP, which reconnects."""
        await self._ensure()
        if self._launcher is None:
            return False
        result = await self._launch(argv, SMALL_COMMAND_TIMEOUT_S, None, launch_token(), time.monotonic(), plain=True)
        if result.exit_code is None:
            return False
        if result.exit_code != 0:
            raise DeviceError(f"device {self.name}: cannot {what}: {result.stderr.strip()}")
        return True

    async def _request(self, request: dict[str, Any], what: str, on_frame: Callable[[dict[str, Any]], None]) -> None:
        """A file request to the launcher (`write`, `pack`): its frames to `on_frame` until `end`; an `error`
        frame is a DeviceError naming `what`, the stream ending is _StreamLost."""
        self._requests += 1
        ident = self._requests
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        requests = self._frames
        requests[ident] = queue
        try:
            try:
                self._launcher.stdin.write(json.dumps({"id": ident, **request}).encode() + b"\n")
                await self._launcher.stdin.drain()
            except Exception as exc:  # noqa: BLE001 - the channel is gone
                raise _StreamLost(str(exc)) from None
            while True:
                try:
                    frame = await asyncio.wait_for(queue.get(), SMALL_COMMAND_TIMEOUT_S * 4)
                except asyncio.TimeoutError:
                    raise DeviceError(f"device {self.name}: {what}: no answer for {SMALL_COMMAND_TIMEOUT_S * 4:.0f} s") from None
                if frame is None:
                    raise _StreamLost("the connection ended")
                if "error" in frame:
                    raise DeviceError(f"device {self.name}: cannot {what}: {frame['error']}")
                if "end" in frame:
                    return
                on_frame(frame)
        finally:
            del requests[ident]

    async def _pack(self, remote: str, local: Path, max_bytes: int | None) -> PulledFiles:
        """`pull_dir` as one request to the launcher: the folder's regular files come back on its stream
        (_supervisor.py serve, `pack`), not as a listing and a transfer per file (docs/architecture.md,
        "Round trips per launch"). Each file is written as its bytes arrive, like an SFTP transfer, and only
        under its own name in `local` (never through a link)."""
        pulled = PulledFiles()
        current: list[Any] = [None, None]  # the file being written: its handle and its path

        def on_frame(frame: dict[str, Any]) -> None:
            handle, target = current
            if "too_large" in frame:
                pulled.too_large[str(frame["too_large"])] = int(frame["size"])
            elif "file" in frame:
                name = str(frame["file"])
                current[:] = [None, None]
                if name not in ("", ".", "..") and "/" not in name and "\0" not in name:
                    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
                    current[:] = [os.fdopen(os.open(local / name, flags, 0o644), "wb"), local / name]
            elif "chunk" in frame and handle is not None:
                handle.write(frame["data"])
                handle.flush()
            elif "done" in frame and handle is not None:
                handle.close()
                current[:] = [None, None]
                pulled.append(target)

        local.mkdir(parents=True, exist_ok=True)
        try:
            await self._request({"pack": remote, "max_bytes": max_bytes}, f"pull {remote}", on_frame)
        finally:
            if current[0] is not None:
                current[0].close()
        return pulled


class _StreamLost(ZbenchError):
    """The launcher's stream ended in the middle of a request: the connection is gone (caught inside this
    module, which turns it into a DeviceError or a partial pull)."""
