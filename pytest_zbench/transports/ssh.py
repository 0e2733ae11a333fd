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
import logging
import os
import posixpath
import secrets
import stat
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from ..errors import DeviceError
from ..inventory import DeviceSpec
from ._shell import (
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


class SshTransport(WorkdirMixin):
    def __init__(self, spec: DeviceSpec) -> None:
        import asyncssh  # noqa: F401  (fail here, with the hint below, if the extra is not installed)

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

        self._call(self._files(go, f"create folder {path}"), SMALL_COMMAND_TIMEOUT_S)

    def remove_tree(self, path: str) -> None:
        async def go() -> None:
            sftp = await self._sftp_client()
            try:
                if await sftp.exists(path):
                    await sftp.rmtree(path)
            except Exception:
                # rmtree of something that vanished meanwhile, or a file: fall back to the shell
                await self._simple(["rm", "-rf", "--", path])

        self._call(self._files(go, f"remove {path}"), SMALL_COMMAND_TIMEOUT_S * 4)

    def push(self, local: Path, remote: str) -> None:
        async def go() -> None:
            sftp = await self._sftp_client()
            await sftp.put(str(local), remote)

        self._call(self._files(go, f"push {local} to {remote}"), None)

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

        return self._call(self._files(go, f"pull {remote}"), None)

    # -- processes -----------------------------------------------------------------------------------------

    def run(self, argv: Sequence[str], *, timeout_s: float, on_line: LineCallback | None = None) -> CommandResult:
        argv = tuple(str(a) for a in argv)
        # The coroutine enforces the deadline itself; the outer wait only guards against a wedged loop.
        return self._call(self._run(argv, timeout_s, on_line), timeout_s + 4 * KILL_GRACE_S + 60)

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
                found = await self._shell_quiet("python3 -c 'import sys; print(int(sys.version_info >= (3, 7)))'"
                                                " 2>/dev/null")
                self._python = (found or "").strip() == "1"
            if self._python:
                path = posixpath.join(self._workdir, SUPERVISOR_NAME)
                await sftp.put(str(SUPERVISOR), path)
                self._supervisor = path
            if self._owns_workdir:
                import asyncssh

                self._keeper = await self._conn.create_process(
                    keeper_command(self._workdir, secrets.token_hex(8), supervisor=self._supervisor),
                    stdout=asyncssh.DEVNULL, stderr=asyncssh.DEVNULL)
        except Exception as exc:  # noqa: BLE001 - supervision degrades to the shell wrapper, reported
            log.warning("device %s: preparing %s failed (%s); launches run under the shell wrapper",
                        self.name, self._workdir, exc)

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
        conn, self._conn, self._sftp, self._keeper = self._conn, None, None, None
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
