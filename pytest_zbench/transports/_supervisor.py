"""The local transport's supervisor: what stands between the host and a runner (or a host-side exec script),
so that no process of a launch outlives it (README, Reliability). Standard library only, run by path with
`python -I` (it imports nothing of pytest_zbench and starts in milliseconds):

    _supervisor.py run -- ARGV...   run ARGV in a session of its own; exit as it exited
    _supervisor.py keep DIR [ID]    remove DIR when the host goes away (a temporary workdir)
    _supervisor.py serve            run commands sent on stdin, each under `run` (an ssh connection's launcher)

`run`:
* The supervisor is a child subreaper (Linux prctl PR_SET_CHILD_SUBREAPER): a process the runner starts stays
  in the supervisor's tree even when its parent exits or it detaches with setsid, so it is still found.
* When the runner exits, whatever it left running is sent SIGTERM, then SIGKILL, and reaped; a line
  `zbench-leftover:N` on stderr tells the host how many there were.
* SIGTERM, SIGINT or SIGHUP to the supervisor (the host's deadline) go to the runner's process group and
  every process of the tree; SIGKILL follows after the grace (ZBENCH_KILL_GRACE_S, default 2 s).
* The host is watched: stdin is a pipe from the host, which never writes to it; end of file means the host
  closed it or died (even by SIGKILL), and the tree is stopped as at a deadline. With `--pdeathsig` the
  kernel also sends SIGTERM when the host's thread that started it dies (PR_SET_PDEATHSIG).
* The exit status is the runner's; a runner killed by signal N makes the supervisor die of signal N, so the
  host reads -N as it did without a supervisor.

`keep`: waits for end of file on stdin (the host closed it, or died), then removes DIR. With ID, it first
writes ID into DIR/.zbench-host/keeper and removes DIR only if the file still holds it: after a connection was
lost and made again, the new connection's keeper owns the folder, and the old one (whose end of file may come
much later) leaves it alone.

`serve`: one per ssh connection, started once, so that a launch is not a new SSH session running the
account's login shell and its rc files (docs/architecture.md, "The ssh launcher"). Requests arrive on stdin,
one JSON object a line: {"id": N, "argv": [...], "env": {...}} starts `run --pdeathsig -- ARGV` with the
launcher's own environment plus `env`. Frames go out on stdout, one JSON object a line: {"id": N, "pid": P}
(the `run` process, leader of its own process group), {"id": N, "out": TEXT} and {"id": N, "err": TEXT} as
the command writes them, then {"id": N, "exit": STATUS} (-N: killed by signal N). With "plain": true the
command is started as it is, in a session of its own, unsupervised (a short script of the host's).
{"id": N, "pack": DIR, "max_bytes": M} sends the regular files of DIR back on the same stream (see `pack`):
a launch's outputs in one request, not a listing and a transfer per file. {"id": N, "write": PATH, "text": T}
writes a small text file of the host's (a job) and answers `end` (after `error` when it could not). End of file on stdin (the
connection ended, or the host died) closes the stdin of every `run` it started: each stops its tree as when
its own host goes away.

Without procfs and prctl (macOS) the runner's process group is still stopped, which covers every child that
does not leave the group.
"""

from __future__ import annotations

import ctypes
import os
import select
import shutil
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
LEFTOVER_MARK = "zbench-leftover:"
GRACE_S = float(os.environ.get("ZBENCH_KILL_GRACE_S", "2"))
POLL_S = 0.05
PACK_CHUNK = 256 * 1024  # bytes of a file per `chunk` frame of `serve`'s pack


def prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(option, value, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def descendants(root: int) -> list[int]:
    """Every process below `root` (procfs); the subreaper keeps orphans of the tree under it."""
    parents: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2:].split()
        if fields[0] == b"Z":
            continue  # a zombie is dead already; reaping it is enough
        parents.setdefault(int(fields[1]), []).append(int(entry))
    found, frontier = [], [root]
    while frontier:
        for child in parents.get(frontier.pop(), []):
            found.append(child)
            frontier.append(child)
    return found


def signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def reap() -> None:
    """Collect every child that has exited (orphans of the tree become the subreaper's children)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def stop_tree(runner_group: int | None, grace: float, *, reaping: bool) -> int:
    """SIGTERM the runner's group and every process of the tree, SIGKILL what is left after `grace`;
    returns how many processes there were. Only the thread that waits for the runner reaps (`reaping`), so
    that the runner's own exit status is never collected by another."""
    me = os.getpid()
    pids = descendants(me)
    if runner_group is not None:
        try:
            os.killpg(runner_group, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    signal_all(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and descendants(me):
        if reaping:
            reap()
        time.sleep(POLL_S)
    for _ in range(100):  # a process may fork while it is being killed: repeat until the tree is empty
        left = descendants(me)
        if runner_group is not None:
            try:
                os.killpg(runner_group, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if not left:
            break
        signal_all(left, signal.SIGKILL)
        time.sleep(POLL_S)
        if reaping:
            reap()
    return len(pids)


def watch_host(parent: int, on_gone: Callable[[], object]) -> None:
    """End of file on stdin, or a new parent (the host died and we were re-parented): the host is gone."""
    while True:
        if os.getppid() != parent:
            break
        try:
            ready, _, _ = select.select([0], [], [], 0.5)
        except (OSError, ValueError):
            break
        if ready:
            try:
                if not os.read(0, 4096):
                    break
            except OSError:
                break
    on_gone()


STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


def start_helper(target: Callable[..., object], *args: object, **kwargs: object) -> None:
    """A daemon thread that never takes SIGTERM, SIGINT or SIGHUP. Python runs a handler in the main thread
    only, and a signal the kernel gives another thread does not interrupt the main thread's blocking waitpid:
    the handler would wait for the runner, which may never exit. Blocked here, those signals always reach the
    main thread (the new thread inherits the mask; the main thread's own is put back at once)."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        threading.Thread(target=target, args=args, kwargs=kwargs, daemon=True).start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def run(argv: list[str], pdeathsig: bool) -> int:
    parent = os.getppid()
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    if pdeathsig:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent or parent == 1:
        return 125  # the host died before the signal was set

    stopping = threading.Event()
    runner_pid = os.fork()
    if runner_pid == 0:  # the runner: its own session, stdin closed, killed with the supervisor
        try:
            os.setsid()
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.close(null)
            for sig in STOP_SIGNALS:
                signal.signal(sig, signal.SIG_DFL)
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(2, f"cannot start {argv[0]!r}: {exc.strerror or exc}\n".encode())
        os._exit(127)

    def stop(signum: int = signal.SIGTERM, _frame: object = None) -> None:
        if stopping.is_set():
            return
        stopping.set()
        start_helper(stop_tree, runner_pid, GRACE_S, reaping=False)

    for sig in STOP_SIGNALS:
        signal.signal(sig, stop)
    start_helper(watch_host, parent, lambda: os.kill(os.getpid(), signal.SIGTERM))

    status: int | None = None
    while status is None:
        try:
            pid, wait_status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if pid == runner_pid:
            status = wait_status
    left = stop_tree(None, 0.0 if stopping.is_set() else GRACE_S / 4, reaping=True)
    if left:
        os.write(2, f"{LEFTOVER_MARK}{left}\n".encode())
    if status is None:
        return 125
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        for handled in STOP_SIGNALS:
            signal.signal(handled, signal.SIG_DFL)
        os.kill(os.getpid(), number)  # die as the runner died: the host reads -N
        return 128 + number  # a signal whose default is not to terminate
    return os.WEXITSTATUS(status)


# The host's own files in a device workdir, in a folder of their own (pull_dir copies files, not folders):
# this script, pushed to devices with Python, and the keeper's id.
HOST_FOLDER = ".zbench-host"
KEEPER_ID_FILE = f"{HOST_FOLDER}/keeper"


def keep(folder: str, keeper_id: str | None) -> int:
    parent = os.getppid()
    marker = os.path.join(folder, KEEPER_ID_FILE)
    if keeper_id is not None:
        os.makedirs(os.path.dirname(marker), exist_ok=True)
        with open(marker, "w") as handle:
            handle.write(keeper_id + "\n")
    watch_host(parent, lambda: None)
    if keeper_id is not None:
        try:
            with open(marker) as handle:
                if handle.read().strip() != keeper_id:
                    return 0
        except OSError:
            return 0
    shutil.rmtree(folder, ignore_errors=True)
    return 0


def serve() -> int:
    import json
    import selectors
    import subprocess

    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)  # the sshd process serving the channel is gone: so is the launcher
    selector = selectors.DefaultSelector()
    selector.register(0, selectors.EVENT_READ, None)
    running: dict[int, tuple[subprocess.Popen[bytes], set[int]]] = {}
    pending = b""

    def send(frame: dict[str, object], payload: bytes = b"") -> None:
        data = json.dumps(frame).encode() + b"\n" + payload
        try:
            while data:
                data = data[os.write(1, data):]
        except OSError:  # the channel is gone: so is the host; every `run` stops its tree
            for proc, _ in running.values():
                if proc.stdin is not None:
                    proc.stdin.close()
            raise SystemExit(0) from None

    def start(request: dict[str, object]) -> None:
        ident = int(request["id"])  # type: ignore[call-overload]
        argv = [str(a) for a in request["argv"]]  # type: ignore[attr-defined]
        env = dict(os.environ)
        env.update({str(k): str(v) for k, v in dict(request.get("env") or {}).items()})  # type: ignore[call-overload]
        # `plain`: a short script of the host's that starts nothing (the platform probe), without the
        # supervisor's own start; otherwise the supervisor, whose stdin tells it when the host is gone
        plain = bool(request.get("plain"))
        # (-S: the supervisor needs no site-packages; transports/supervised.py start_supervisor says why)
        command = argv if plain else [sys.executable, "-I", "-S", os.path.abspath(__file__), "run", "--pdeathsig",
                                      "--", *argv]
        try:
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL if plain else subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
        except OSError as exc:
            send({"id": ident, "err": f"cannot start the supervisor: {exc}\n"})
            send({"id": ident, "exit": 125})
            return
        assert proc.stdout is not None and proc.stderr is not None
        send({"id": ident, "pid": proc.pid})
        running[ident] = (proc, {proc.stdout.fileno(), proc.stderr.fileno()})
        selector.register(proc.stdout.fileno(), selectors.EVENT_READ, (ident, "out"))
        selector.register(proc.stderr.fileno(), selectors.EVENT_READ, (ident, "err"))

    def pack(ident: int, folder: str, max_bytes: object) -> None:
        """The regular files of `folder` (not its subfolders, not links) as one stream: a `file` frame, its
        bytes in `chunk` frames (each followed by that many raw bytes), `done`; `too_large` for a file above
        max_bytes (left where it is); `end` last, `error` before it when the folder cannot be read."""
        try:
            names = sorted(os.listdir(folder))
            if not os.path.isdir(folder) or os.path.islink(folder):
                raise NotADirectoryError(f"{folder} is not a folder")
        except OSError as exc:
            send({"id": ident, "error": str(exc)})
            send({"id": ident, "end": True})
            return
        for name in names:
            path = os.path.join(folder, name)
            try:
                info = os.lstat(path)
                if not stat.S_ISREG(info.st_mode):
                    continue
                if isinstance(max_bytes, int) and info.st_size > max_bytes:
                    send({"id": ident, "too_large": name, "size": info.st_size})
                    continue
                handle = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            except OSError:
                continue  # gone meanwhile, or unreadable: not pulled, as with a listing
            try:
                send({"id": ident, "file": name})
                while True:
                    data = os.read(handle, PACK_CHUNK)
                    if not data:
                        break
                    send({"id": ident, "chunk": len(data)}, data)
                send({"id": ident, "done": name})
            finally:
                os.close(handle)
        send({"id": ident, "end": True})

    def write(ident: int, path: str, text: str) -> None:
        """A small text file of the host's (a job), written where it says: the folder must exist, a link
        there is not followed."""
        try:
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
            try:
                data = text.encode("utf-8")
                while data:
                    data = data[os.write(handle, data):]
            finally:
                os.close(handle)
        except OSError as exc:
            send({"id": ident, "error": str(exc)})
        send({"id": ident, "end": True})

    host_gone = False
    while not host_gone or running:
        for key, _ in selector.select():
            if key.data is None:  # a request, or end of file: the host is gone
                chunk = os.read(0, 65536)
                if not chunk:
                    host_gone = True
                    selector.unregister(0)
                    for proc, _ in running.values():
                        if proc.stdin is not None:
                            proc.stdin.close()  # each `run` stops its tree
                    continue
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        request = json.loads(line)
                        if "pack" in request:
                            pack(int(request["id"]), str(request["pack"]), request.get("max_bytes"))
                        elif "write" in request:
                            write(int(request["id"]), str(request["write"]), str(request["text"]))
                        else:
                            start(request)
                continue
            ident, stream = key.data
            data = os.read(key.fd, 65536)
            if data:
                send({"id": ident, stream: data.decode("utf-8", "replace")})
                continue
            selector.unregister(key.fd)
            proc, fds = running[ident]
            fds.discard(key.fd)
            if not fds:  # both pipes closed: the supervisor has stopped its tree and is exiting
                del running[ident]
                status = proc.wait()
                for handle in (proc.stdin, proc.stdout, proc.stderr):
                    if handle is not None:
                        handle.close()
                send({"id": ident, "exit": status})
    return 0


def main(args: list[str]) -> int:
    if args == ["serve"]:
        return serve()
    if args[:1] == ["keep"] and len(args) in (2, 3):
        return keep(args[1], args[2] if len(args) == 3 else None)
    pdeathsig = "--pdeathsig" in args[: args.index("--")] if "--" in args else False
    if args[:1] == ["run"] and "--" in args and args.index("--") + 1 < len(args):
        return run(args[args.index("--") + 1:], pdeathsig)
    print("usage: _supervisor.py run [--pdeathsig] -- ARGV... | keep DIR [ID] | serve", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
