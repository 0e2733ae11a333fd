#!/usr/bin/env python3
"""A command-transport device over a local folder: the contract of docs/command-transport.md, for tests.

    folder_device.py --root ROOT serve                     the device itself (started by the test, not the host)
    folder_device.py --root ROOT push LOCAL REMOTE
    folder_device.py --root ROOT pull REMOTE_DIR LOCAL_DIR
    folder_device.py --root ROOT [--exec-cannot-stop] exec --run-id ID [--env NAME]... -- ARGV...
    folder_device.py --root ROOT kill ID

Like a real device, it runs what `exec` asks for where the host cannot reach it: `serve` (the device's agent,
started by the test outside the host's process tree) starts each ARGV in a session of its own with cwd ROOT;
`exec` only hands the request over (ROOT/.runs/ID.request, environment included, never on a command line),
streams the process's stdout and stderr as they are written, and exits with its code (128+N when killed by
signal N). Signals to `exec`, or to its whole process tree on the host, never reach the device process:
only `kill` (or `exec` itself, on SIGTERM, as the contract's best effort) stops it. With
--exec-cannot-stop, `exec` just exits on SIGTERM, as device tooling that cannot stop the app does: then
only `kill` can. Device paths are this machine's paths but must lie under ROOT (anything else is refused,
exit 125).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import NoReturn

TOOLING_FAILED = 125
GRACE_S = 2.0
POLL_S = 0.02
AGENT_PID = ".agent.pid"  # in ROOT/.runs: the serving agent's pid


def fail(message: str) -> NoReturn:
    print(f"folder_device: {message}", file=sys.stderr)
    sys.exit(TOOLING_FAILED)


def inside(root: Path, path: str) -> Path:
    resolved = Path(os.path.abspath(path))
    if resolved != root and root not in resolved.parents:
        fail(f"{path} is outside the device folder {root}")
    return resolved


def write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_group(pgid: int) -> None:
    """SIGTERM the process group, SIGKILL it after GRACE_S; return once it is gone."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + GRACE_S
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)


def kill(runs: Path, run_id: str) -> int:
    """Stop what `exec --run-id ID` asked for: cancelled if the agent has not started it yet."""
    (runs / f"{run_id}.cancel").touch()
    pid_file = runs / f"{run_id}.pid"
    try:
        pid = int(pid_file.read_text())
    except (OSError, ValueError):
        return 0  # not started (the agent sees the cancel), or not running any more
    stop_group(pid)
    return 0


# -- the device's agent -------------------------------------------------------------------------------------


def serve(root: Path, runs: Path) -> int:
    """Start each request's process detached (its own session, outside the host's tree), record its pid
    and, when it ends, its exit code. Exits (stopping what it started) on SIGTERM or when its parent dies."""
    runs.mkdir(parents=True, exist_ok=True)
    parent = os.getppid()
    started: dict[str, subprocess.Popen[bytes]] = {}
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    write_atomically(runs / AGENT_PID, str(os.getpid()))

    def finish(run_id: str, proc: subprocess.Popen[bytes]) -> None:
        code = proc.wait()
        write_atomically(runs / f"{run_id}.rc", str(code if code >= 0 else 128 - code))
        (runs / f"{run_id}.pid").unlink(missing_ok=True)

    while not stopping.is_set() and os.getppid() == parent:
        for request in sorted(runs.glob("*.request")):
            run_id = request.name[: -len(".request")]
            job = json.loads(request.read_text())
            request.unlink()  # the environment in it may hold secrets: read once, then gone
            if (runs / f"{run_id}.cancel").exists():
                write_atomically(runs / f"{run_id}.rc", "143")
                continue
            with open(runs / f"{run_id}.out", "wb") as out, open(runs / f"{run_id}.err", "wb") as err:
                try:
                    proc = subprocess.Popen(job["argv"], cwd=root, env=job["env"], stdin=subprocess.DEVNULL,
                                            stdout=out, stderr=err, start_new_session=True)
                except OSError as exc:
                    err.write(f"folder_device: cannot run {job['argv'][0]}: {exc.strerror}\n".encode())
                    err.flush()
                    write_atomically(runs / f"{run_id}.rc", "127")
                    continue
            write_atomically(runs / f"{run_id}.pid", str(proc.pid))
            if (runs / f"{run_id}.cancel").exists():  # a kill that came between the two checks
                stop_group(proc.pid)
            started[run_id] = proc
            threading.Thread(target=finish, args=(run_id, proc), daemon=True).start()
        time.sleep(POLL_S)
    for proc in started.values():
        if proc.poll() is None:
            stop_group(proc.pid)
    (runs / AGENT_PID).unlink(missing_ok=True)
    return 0


# -- exec: hand the request to the agent, stream what the process writes ---------------------------------------


class Follower:
    """Copies what is appended to a file to one of our streams, as it comes."""

    def __init__(self, path: Path, target: int) -> None:
        self.path, self.target, self.offset = path, target, 0

    def pump(self) -> None:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except FileNotFoundError:
            return
        if data:
            self.offset += len(data)
            os.write(self.target, data)


def execute(root: Path, runs: Path, run_id: str, command: list[str], env: dict[str, str],
            can_stop: bool) -> int:
    try:
        agent = int((runs / AGENT_PID).read_text())
    except (OSError, ValueError):
        agent = 0
    if not agent or not alive(agent):
        fail(f"the device is not running (no agent serving {root})")
    env = {**env, "FOLDER_DEVICE_EXEC_PID": str(os.getpid())}  # lets a test find this script's command line

    def on_sigterm(_signum: int, _frame: object) -> None:
        if can_stop:
            kill(runs, run_id)  # the contract's best effort; then report how it ended, below
        else:
            os._exit(143)  # device tooling that cannot stop the app: the process runs on

    signal.signal(signal.SIGTERM, on_sigterm)
    write_atomically(runs / f"{run_id}.request", json.dumps({"argv": command, "env": env}))
    followers = [Follower(runs / f"{run_id}.out", 1), Follower(runs / f"{run_id}.err", 2)]
    rc_file = runs / f"{run_id}.rc"
    while not rc_file.exists():
        for follower in followers:
            follower.pump()
        if not alive(agent):
            fail("the device stopped while running the command")
        time.sleep(POLL_S)
    for follower in followers:
        follower.pump()
    code = int(rc_file.read_text())
    for suffix in (".rc", ".out", ".err", ".cancel"):
        (runs / f"{run_id}{suffix}").unlink(missing_ok=True)
    return code


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("--exec-cannot-stop", action="store_true")
    parser.add_argument("verb", choices=["serve", "push", "pull", "exec", "kill"])
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    root = Path(os.path.abspath(args.root))
    runs = root / ".runs"
    if args.verb == "serve":
        return serve(root, runs)
    if args.verb == "push":
        if len(args.rest) != 2:
            fail("usage: push LOCAL REMOTE")
        shutil.copyfile(args.rest[0], inside(root, args.rest[1]))
        return 0
    if args.verb == "pull":
        if len(args.rest) != 2:
            fail("usage: pull REMOTE_DIR LOCAL_DIR")
        remote = inside(root, args.rest[0])
        if not remote.is_dir():
            fail(f"{remote}: no such folder on the device")
        for entry in os.scandir(remote):
            if entry.is_file(follow_symlinks=False):
                shutil.copyfile(entry.path, os.path.join(args.rest[1], entry.name))
        return 0
    if args.verb == "kill":
        if len(args.rest) != 1:
            fail("usage: kill ID")
        return kill(runs, args.rest[0])
    # exec
    rest = list(args.rest)
    run_id, env = None, dict(os.environ)
    while rest and rest[0] != "--":
        option = rest.pop(0)
        if option == "--run-id" and rest:
            run_id = rest.pop(0)
        elif option == "--env" and rest and rest[0] in os.environ:
            key = rest.pop(0)  # its value is in our own environment (never on a command line)
            env[key] = os.environ[key]
        else:
            fail(f"exec: unknown option {option!r}")
    if not rest or rest[0] != "--" or len(rest) < 2 or not run_id or not run_id.replace("-", "").isalnum():
        fail("usage: exec --run-id ID [--env NAME]... -- ARGV...")
    command = rest[1:]
    if command[:2] == ["mkdir", "-p"] and len(command) == 3:
        inside(root, command[2]).mkdir(parents=True, exist_ok=True)
        return 0
    if command[:2] == ["rm", "-rf"] and len(command) == 3:
        shutil.rmtree(inside(root, command[2]), ignore_errors=True)
        return 0
    return execute(root, runs, run_id, command, env, can_stop=not args.exec_cannot_stop)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
