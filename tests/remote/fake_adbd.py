"""An emulated adbd: the device side of the ADB wire protocol over TCP, for the real adb server to talk to.

What it speaks (system/core/adb/protocol.txt, SERVICES.TXT, SYNC.TXT):

* messages: 24-byte header (command, arg0, arg1, data length, data checksum, command ^ 0xffffffff) + data;
  CNXN answered with the device banner (no AUTH: like a device with `ro.adb.secure=0`);
  OPEN / OKAY / WRTE / CLSE streams with one-WRTE-in-flight flow control (each WRTE waits for an OKAY).
* services: `shell:CMD` (v1, raw: stdout and stderr on one stream, no exit code), `shell,v2[,...]:CMD`
  and `exec:CMD` (shell protocol v2: packets id 1 stdout / 2 stderr / 3 exit; id 0/4 stdin is ignored),
  `sync:` with STAT, LIST, SEND (DATA... DONE), RECV, QUIT, replies OKAY / FAIL / DENT / DATA / DONE.

Commands run with /bin/sh -c in the sandbox folder, in a new session (adbd calls setsid for its children),
with the sandbox's bin/ first on PATH: stand-ins for `getprop`, `dumpsys` and `vcgencmd` print recorded
outputs. Paths in sync requests are this machine's paths (the "device" shares its filesystem).

The `dumpsys` stand-in answers from the sandbox's dumpsys/ folder, outputs recorded from real devices
(tests/data/android, SOURCES.md there) unless a test serves others (`serve_dumps`):
`gfxinfo <pkg> framestats` prints the next output of the gfxinfo sequence (the last one again once all were
printed), and a call with `reset` starts the gfxinfo and SurfaceFlinger sequences over (a launch of the app:
its frames are printed again as recorded); `SurfaceFlinger --latency <layer>` prints the next output of the
latency sequence for a layer that `--list` names, only the refresh period for any other;
`SurfaceFlinger --latency` alone prints sf-refresh.txt; `SurfaceFlinger --list` prints sf-list.txt. Every
call, and which file it printed, is logged (`dumpsys_calls`).
The `perfetto` stand-in emulates `perfetto --background -c - -o OUT` of Android 12+: it keeps the config it
read on stdin (perfetto/config.txt) and whether the launch variable reached it, starts a process in a session
of its own, prints its pid, and on SIGTERM that process writes the trace a test served (`serve_trace`) to
OUT, as perfetto writes its buffer out when stopped; no trace served, no file written. Calls are logged
(`perfetto_calls`).
When the host closes a shell stream the process is left running, as a device whose adb stream died would
leave it: killing it is the transport's job, which the tests check.

`drop_connections()` closes the TCP connections to the adb server (the listener stays up), which is what a
pulled cable or a restarted adbd looks like from the host.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import struct
import threading
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data" / "android"

A_CNXN = 0x4E584E43
A_OPEN = 0x4E45504F
A_OKAY = 0x59414B4F
A_CLSE = 0x45534C43
A_WRTE = 0x45545257
A_AUTH = 0x48545541
A_VERSION = 0x01000001
MAX_PAYLOAD = 256 * 1024
SYNC_DATA_MAX = 64 * 1024
NAMES = {A_CNXN: "CNXN", A_OPEN: "OPEN", A_OKAY: "OKAY", A_CLSE: "CLSE", A_WRTE: "WRTE", A_AUTH: "AUTH"}

GETPROP = """\
[dalvik.vm.heapsize]: [384m]
[ro.board.platform]: [tegra3]
[ro.build.fingerprint]: [google/nakasi/grouper:7.1.2/NJH47F/4146041:userdebug/test-keys]
[ro.build.version.release]: [7.1.2]
[ro.build.version.sdk]: [25]
[ro.hardware]: [grouper]
[ro.product.manufacturer]: [asus]
[ro.product.model]: [Nexus 7]
[ro.serialno]: [015d2bc2a8581a0e]
"""

BATTERY = """\
Current Battery Service state:
  AC powered: false
  USB powered: true
  Wireless powered: false
  Max charging current: 500000
  Max charging voltage: 5000000
  Charge counter: 3371000
  status: 2
  health: 2
  present: true
  level: 87
  scale: 100
  voltage: 4123
  temperature: 312
  technology: Li-ion
"""

VCGENCMD = """\
#!/bin/sh
case "$1 $2" in
  "measure_temp ") echo "temp=51.5'C" ;;
  "get_throttled ") echo "throttled=0x50005" ;;
  "measure_clock arm") echo "frequency(48)=1400000000" ;;
  "measure_clock core") echo "frequency(1)=400000000" ;;
  "measure_clock v3d") echo "frequency(46)=300000000" ;;
  *) echo "Command not registered" ; exit 255 ;;
esac
"""


# What the emulated device's dumpsys prints when a test serves nothing else (files in tests/data/android).
DEFAULT_DUMPS = {
    "gfxinfo": ["gfxinfo-framestats-120hz-one-window.txt"],
    "sf-latency": ["sf-latency-blast-surfaceview.txt"],
    "sf-list": "sf-list-tecno-camon20.txt",
    "sf-refresh": "sf-latency-unknown-layer-tecno-camon20.txt",
}

DUMPSYS = """\
#!/bin/sh
D='{dumps}'
printf 'call %s\\n' "$*" >> "$D/calls.log"
serve() {{  # print the next output of a sequence (numbered files), the last one again at its end
  dir=$1
  n=$(cat "$dir/.next" 2>/dev/null || echo 1)
  file=$(ls "$dir" | grep '[.]txt$' | sort | sed -n "${{n}}p")
  if [ -n "$file" ]; then echo $((n + 1)) > "$dir/.next"; else file=$(ls "$dir" | grep '[.]txt$' | sort | tail -n 1); fi
  [ -n "$file" ] || return 0
  printf 'served %s\\n' "${{dir##*/}}/$file" >> "$D/calls.log"
  cat "$dir/$file"
}}
case "$1" in
  battery) cat '{sandbox}/battery.txt' ;;
  gfxinfo)
    case " $* " in *" reset "*) echo 1 > "$D/gfxinfo/.next"; echo 1 > "$D/sf-latency/.next" ;; esac
    case " $* " in *" framestats "*) serve "$D/gfxinfo" ;; esac ;;
  SurfaceFlinger)
    case "$2" in
      --list) cat "$D/sf-list.txt" ;;
      --latency)
        if [ $# -lt 3 ]; then cat "$D/sf-refresh.txt"
        elif grep -qF -- "$3" "$D/sf-list.txt"; then serve "$D/sf-latency"
        else head -n 1 "$D/sf-refresh.txt"; fi ;;
      *) echo "SurfaceFlinger: only --list and --latency are emulated" ;;
    esac ;;
  *) echo "Can't find service: $1"; exit 0 ;;
esac
"""

PERFETTO = """\
#!/bin/sh
P='{perfetto}'
out=""; cfg=""; bg=0
while [ $# -gt 0 ]; do
  case "$1" in -o) out=$2; shift ;; -c) cfg=$2; shift ;; --background) bg=1 ;; esac
  shift
done
[ "$cfg" = "-" ] && cat > "$P/config.txt"
printf 'start background=%s out=%s launch_variable=%s\\n' "$bg" "$out" "${{ZBENCH_LAUNCH:+set}}" >> "$P/calls.log"
setsid sh -c 'trap "[ -f \\"$1\\" ] && cp \\"$1\\" \\"$2\\"; echo stopped >> \\"$3\\"; exit 0" TERM; while :; do sleep 0.1; done' \\
  perfetto-trace "$P/trace.pftrace" "$out" "$P/calls.log" </dev/null >/dev/null 2>&1 &
echo $!
"""


def serve_dumps(sandbox: Path, gfxinfo: list[str] | None = None, sf_latency: list[str] | None = None,
                sf_list: str | None = None, sf_refresh: str | None = None) -> None:
    """Replace what the sandbox's dumpsys prints (texts; None: the recorded default) and clear its log."""
    dumps = sandbox / "dumpsys"
    texts = {
        "gfxinfo": gfxinfo if gfxinfo is not None else [_data(n) for n in DEFAULT_DUMPS["gfxinfo"]],
        "sf-latency": sf_latency if sf_latency is not None else [_data(n) for n in DEFAULT_DUMPS["sf-latency"]],
    }
    for name, sequence in texts.items():
        folder = dumps / name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        for i, text in enumerate(sequence, 1):
            (folder / f"{i:03d}.txt").write_text(text, encoding="utf-8")
    (dumps / "sf-list.txt").write_text(sf_list if sf_list is not None else _data(DEFAULT_DUMPS["sf-list"]),
                                       encoding="utf-8")
    (dumps / "sf-refresh.txt").write_text(sf_refresh if sf_refresh is not None else _data(DEFAULT_DUMPS["sf-refresh"]),
                                          encoding="utf-8")
    (dumps / "calls.log").write_text("")


def dumpsys_calls(sandbox: Path) -> list[tuple[str, list[str]]]:
    """Every dumpsys call since the dumps were served: (its arguments, the files it printed)."""
    calls: list[tuple[str, list[str]]] = []
    for line in (sandbox / "dumpsys" / "calls.log").read_text().splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "call":
            calls.append((rest, []))
        elif kind == "served" and calls:
            calls[-1][1].append(rest)
    return calls


def _data(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def _standins(sandbox: Path) -> Path:
    bin_dir = sandbox / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (sandbox / "getprop.txt").write_text(GETPROP)
    (sandbox / "battery.txt").write_text(BATTERY)
    serve_dumps(sandbox)
    scripts = {
        "getprop": f"""#!/bin/sh
if [ $# -eq 0 ]; then cat '{sandbox}/getprop.txt'; exit 0; fi
sed -n "s/^\\[$1\\]: \\[\\(.*\\)\\]$/\\1/p" '{sandbox}/getprop.txt'
""",
        "dumpsys": DUMPSYS.format(dumps=sandbox / "dumpsys", sandbox=sandbox),
        "vcgencmd": VCGENCMD,
        "perfetto": PERFETTO.format(perfetto=sandbox / "perfetto"),
    }
    (sandbox / "perfetto").mkdir(exist_ok=True)
    for name, text in scripts.items():
        path = bin_dir / name
        path.write_text(text)
        path.chmod(0o755)
    return bin_dir


def _checksum(data: bytes) -> int:
    return sum(data) & 0xFFFFFFFF


class _Stream:
    def __init__(self, conn: _Connection, local_id: int, remote_id: int) -> None:
        self.conn, self.local_id, self.remote_id = conn, local_id, remote_id
        self.okay = asyncio.Event()
        self.okay.set()
        self.incoming: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.closed = False
        self.task: asyncio.Task[None] | None = None

    async def write(self, data: bytes) -> None:
        limit = min(self.conn.max_payload, MAX_PAYLOAD)
        for start in range(0, len(data), limit):
            if self.closed:
                return
            await self.okay.wait()
            if self.closed:
                return
            self.okay.clear()
            self.conn.send(A_WRTE, self.local_id, self.remote_id, data[start:start + limit])

    async def read_exact(self, buffer: bytearray, n: int) -> bytes | None:
        while len(buffer) < n:
            chunk = await self.incoming.get()
            if chunk is None:
                return None
            buffer.extend(chunk)
        out = bytes(buffer[:n])
        del buffer[:n]
        return out

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.okay.set()
            self.conn.send(A_CLSE, self.local_id, self.remote_id)
            self.conn.streams.pop(self.local_id, None)


class _Connection:
    def __init__(self, device: FakeAdbd, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.device, self.reader, self.writer = device, reader, writer
        self.streams: dict[int, _Stream] = {}
        self.next_id = 1
        self.max_payload = 4096

    def send(self, command: int, arg0: int, arg1: int, data: bytes = b"") -> None:
        if self.writer.is_closing():
            return
        header = struct.pack("<6I", command, arg0, arg1, len(data), _checksum(data), command ^ 0xFFFFFFFF)
        self.writer.write(header + data)

    async def serve(self) -> None:
        try:
            while True:
                header = await self.reader.readexactly(24)
                command, arg0, arg1, length, _check, magic = struct.unpack("<6I", header)
                if magic != command ^ 0xFFFFFFFF:
                    return
                data = await self.reader.readexactly(length) if length else b""
                await self.handle(command, arg0, arg1, data)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            for stream in list(self.streams.values()):
                stream.closed = True
                stream.okay.set()
                stream.incoming.put_nowait(None)
            self.streams.clear()
            self.writer.close()

    async def handle(self, command: int, arg0: int, arg1: int, data: bytes) -> None:
        if command == A_CNXN:
            self.max_payload = max(4096, min(arg1, MAX_PAYLOAD))
            self.send(A_CNXN, A_VERSION, MAX_PAYLOAD, self.device.banner())
        elif command == A_AUTH:
            # a host offering a signature/public key: a device with auth disabled just says hello
            self.send(A_CNXN, A_VERSION, MAX_PAYLOAD, self.device.banner())
        elif command == A_OPEN:
            service = data.rstrip(b"\0").decode("utf-8", "replace")
            local_id = self.next_id
            self.next_id += 1
            stream = _Stream(self, local_id, arg0)
            handler = self.device.service_handler(service)
            if handler is None:
                self.send(A_CLSE, 0, arg0)
                return
            self.streams[local_id] = stream
            self.send(A_OKAY, local_id, arg0)
            stream.task = asyncio.ensure_future(self._run_service(handler, stream))
        elif command == A_OKAY:
            stream = self.streams.get(arg1)
            if stream is not None:
                stream.remote_id = arg0
                stream.okay.set()
        elif command == A_WRTE:
            stream = self.streams.get(arg1)
            if stream is None:
                self.send(A_CLSE, 0, arg0)
                return
            stream.incoming.put_nowait(data)
            self.send(A_OKAY, stream.local_id, stream.remote_id)
        elif command == A_CLSE:
            stream = self.streams.pop(arg1, None)
            if stream is not None:
                stream.closed = True
                stream.okay.set()
                stream.incoming.put_nowait(None)

    async def _run_service(self, handler, stream: _Stream) -> None:  # type: ignore[no-untyped-def]
        try:
            await handler(stream)
        except Exception as exc:  # noqa: BLE001 - a broken service closes its stream, as adbd does
            self.device.errors.append(repr(exc))
        finally:
            stream.close()


class FakeAdbd:
    """Start with `.start()`; `.serial` is what `adb connect` takes; `.stop()` ends everything it started."""

    def __init__(self, sandbox: Path, *, shell_v2: bool = True, port: int = 0) -> None:
        self.sandbox = Path(sandbox)
        self.shell_v2 = shell_v2
        self.port = port
        self.errors: list[str] = []
        self.processes: list[asyncio.subprocess.Process] = []
        self.connections: list[_Connection] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self.bin_dir = _standins(self.sandbox)

    @property
    def serial(self) -> str:
        return f"127.0.0.1:{self.port}"

    def serve_dumps(self, **outputs: Any) -> None:
        """What dumpsys prints from now on (module serve_dumps); `serve_dumps()` restores the recorded defaults."""
        serve_dumps(self.sandbox, **outputs)

    def dumpsys_calls(self) -> list[tuple[str, list[str]]]:
        return dumpsys_calls(self.sandbox)

    def serve_trace(self, trace: bytes | None) -> None:
        """The trace `perfetto` writes when stopped from now on (None: none), and its log cleared."""
        folder = self.sandbox / "perfetto"
        (folder / "trace.pftrace").unlink(missing_ok=True)
        if trace is not None:
            (folder / "trace.pftrace").write_bytes(trace)
        for name in ("calls.log", "config.txt"):
            (folder / name).unlink(missing_ok=True)

    def perfetto_calls(self) -> list[str]:
        log = self.sandbox / "perfetto" / "calls.log"
        return log.read_text().splitlines() if log.exists() else []

    def perfetto_config(self) -> str:
        return (self.sandbox / "perfetto" / "config.txt").read_text()

    def banner(self) -> bytes:
        features = ["cmd"] + (["shell_v2"] if self.shell_v2 else [])
        return (
            "device::ro.product.name=nakasi;ro.product.model=Nexus 7;ro.product.device=grouper;"
            f"features={','.join(features)}"
        ).encode()

    # -- lifecycle -----------------------------------------------------------------------------------

    def start(self) -> FakeAdbd:
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()

        async def listen() -> None:
            self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()

        def main() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(listen())
            self._loop.run_forever()

        self._thread = threading.Thread(target=main, name="fake-adbd", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("fake adbd did not start")
        return self

    def stop(self) -> None:
        if self._loop is None:
            return
        loop = self._loop

        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            for conn in list(self.connections):
                conn.writer.close()
            for proc in self.processes:
                if proc.returncode is None:
                    try:
                        os.killpg(proc.pid, 9)
                    except ProcessLookupError:
                        pass
                    try:
                        await asyncio.wait_for(proc.wait(), 5)
                    except asyncio.TimeoutError:
                        pass

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self._loop = None

    def drop_connections(self) -> int:
        """Close every TCP connection to the adb server now (the listener keeps accepting)."""
        assert self._loop is not None

        async def drop() -> int:
            conns = list(self.connections)
            for conn in conns:
                transport = conn.writer.transport
                transport.abort()
            return len(conns)

        return asyncio.run_coroutine_threadsafe(drop(), self._loop).result(10)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = _Connection(self, reader, writer)
        self.connections.append(conn)
        try:
            await conn.serve()
        finally:
            self.connections.remove(conn)

    # -- services ------------------------------------------------------------------------------------------

    def service_handler(self, service: str):  # type: ignore[no-untyped-def]
        if service == "sync:":
            return self._sync
        name, sep, command = service.partition(":")
        if not sep:
            return None
        kind, *options = name.split(",")
        if kind == "shell":
            v2 = "v2" in options
            if v2 and not self.shell_v2:
                return None
            return lambda stream: self._shell(stream, command, v2)
        if kind == "exec":
            return lambda stream: self._shell(stream, command, False, merge_stderr=False)
        return None

    async def _spawn(self, command: str, merge_stderr: bool) -> asyncio.subprocess.Process:
        env = {"PATH": f"{self.bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}", "HOME": str(self.sandbox),
               "ANDROID_DATA": "/data", "TMPDIR": str(self.sandbox)}
        proc = await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", command or "sh", cwd=self.sandbox, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT if merge_stderr else asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        self.processes = [p for p in self.processes if p.returncode is None]
        self.processes.append(proc)
        return proc

    async def _shell(self, stream: _Stream, command: str, v2: bool, merge_stderr: bool = True) -> None:
        proc = await self._spawn(command, merge_stderr=not v2 and merge_stderr)

        async def pump(source: asyncio.StreamReader | None, packet_id: int) -> None:
            if source is None:
                return
            while True:
                chunk = await source.read(16 * 1024)
                if not chunk or stream.closed:
                    return  # the process keeps running when the host went away
                if v2:
                    await stream.write(bytes([packet_id]) + struct.pack("<I", len(chunk)) + chunk)
                else:
                    await stream.write(chunk)

        async def drain_host() -> None:  # stdin packets and the like: ignored, but consumed
            while await stream.incoming.get() is not None:
                pass

        host = asyncio.ensure_future(drain_host())
        try:
            await asyncio.gather(pump(proc.stdout, 1), pump(proc.stderr if v2 else None, 2))
            if stream.closed:
                asyncio.ensure_future(proc.wait())  # reap it whenever it ends
                return
            code = await proc.wait()
            if v2:
                exit_code = code if code >= 0 else 128 - code  # adbd reports 128+signal for a killed child
                await stream.write(bytes([3]) + struct.pack("<I", 1) + bytes([exit_code & 0xFF]))
        finally:
            host.cancel()

    async def _sync(self, stream: _Stream) -> None:
        buffer = bytearray()
        while True:
            request = await stream.read_exact(buffer, 8)
            if request is None:
                return
            ident, length = request[:4], struct.unpack("<I", request[4:])[0]
            payload = await stream.read_exact(buffer, length) if length else b""
            if payload is None:
                return
            path = payload.decode("utf-8", "replace")
            if ident == b"STAT":
                try:
                    st = os.stat(path)
                    await stream.write(b"STAT" + struct.pack("<III", st.st_mode & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF,
                                                             int(st.st_mtime)))
                except OSError:
                    await stream.write(b"STAT" + struct.pack("<III", 0, 0, 0))
            elif ident == b"LIST":
                out = bytearray()
                try:
                    names = [".", ".."] + sorted(os.listdir(path))
                except OSError:
                    names = []
                for name in names:
                    try:
                        st = os.lstat(os.path.join(path, name))
                    except OSError:
                        continue
                    raw = name.encode()
                    out += b"DENT" + struct.pack("<IIII", st.st_mode & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF,
                                                 int(st.st_mtime), len(raw)) + raw
                out += b"DONE" + struct.pack("<IIII", 0, 0, 0, 0)
                await stream.write(bytes(out))
            elif ident == b"SEND":
                target, _, mode_text = path.rpartition(",")
                mode = int(mode_text) if mode_text.isdigit() else 0o644
                content = bytearray()
                while True:
                    head = await stream.read_exact(buffer, 8)
                    if head is None:
                        return
                    kind, size = head[:4], struct.unpack("<I", head[4:])[0]
                    if kind == b"DATA":
                        chunk = await stream.read_exact(buffer, size)
                        if chunk is None:
                            return
                        content += chunk
                    elif kind == b"DONE":
                        break
                    else:
                        await self._fail(stream, f"unexpected {kind!r} in SEND")
                        return
                try:
                    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
                    with open(target, "wb") as f:
                        f.write(content)
                    os.chmod(target, stat.S_IMODE(mode) or 0o644)
                    await stream.write(b"OKAY" + struct.pack("<I", 0))
                except OSError as exc:
                    await self._fail(stream, f"{target}: {exc.strerror}")
            elif ident == b"RECV":
                # adbd's sync service writes DATA... DONE into a socket that adbd reads in payload-sized
                # pieces: what was written meanwhile goes out in one WRTE (a small file's DATA and DONE
                # together), so the reply is queued up to a payload before each write, as it would be there.
                try:
                    reply = bytearray()
                    with open(path, "rb") as f:
                        while chunk := f.read(SYNC_DATA_MAX):
                            reply += b"DATA" + struct.pack("<I", len(chunk)) + chunk
                            if len(reply) >= MAX_PAYLOAD:
                                await stream.write(bytes(reply))
                                reply.clear()
                    reply += b"DONE" + struct.pack("<I", 0)
                    await stream.write(bytes(reply))
                except OSError as exc:
                    if reply:
                        await stream.write(bytes(reply))
                    await self._fail(stream, f"{path}: {exc.strerror}")
            elif ident == b"QUIT":
                return
            else:
                await self._fail(stream, f"unknown sync request {ident!r}")
                return

    @staticmethod
    async def _fail(stream: _Stream, message: str) -> None:
        raw = message.encode()
        await stream.write(b"FAIL" + struct.pack("<I", len(raw)) + raw)
