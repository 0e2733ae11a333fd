#!/usr/bin/env python3
"""A command-transport device over a local folder: the contract of docs/command-transport.md, for tests.

    folder_device.py --root ROOT push LOCAL REMOTE
    folder_device.py --root ROOT pull REMOTE_DIR LOCAL_DIR
    folder_device.py --root ROOT exec --run-id ID [--env NAME]... -- ARGV...
    folder_device.py --root ROOT kill ID

Device paths are this machine's paths but must lie under ROOT (anything else is refused, exit 125).
`exec` runs ARGV in its own session with cwd ROOT, records its pid in ROOT/.runs/ID.pid, passes stdout
and stderr straight through (streaming) and exits with ARGV's code (128+N when killed by signal N).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

TOOLING_FAILED = 125
GRACE_S = 2.0


def fail(message: str) -> NoReturn:  # type: ignore[name-defined]  # noqa: F821
    print(f"folder_device: {message}", file=sys.stderr)
    sys.exit(TOOLING_FAILED)


def inside(root: Path, path: str) -> Path:
    resolved = Path(os.path.abspath(path))
    if resolved != root and root not in resolved.parents:
        fail(f"{path} is outside the device folder {root}")
    return resolved


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("verb", choices=["push", "pull", "exec", "kill"])
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    root = Path(os.path.abspath(args.root))
    runs = root / ".runs"
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
        pid_file = runs / f"{args.rest[0]}.pid"
        try:
            pid = int(pid_file.read_text())
        except (OSError, ValueError):
            return 0  # not running (any more)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + GRACE_S
            while time.monotonic() < deadline:
                try:
                    os.killpg(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)
            else:
                continue
            break
        pid_file.unlink(missing_ok=True)
        return 0
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
    if not rest or rest[0] != "--" or len(rest) < 2:
        fail("usage: exec --run-id ID [--env NAME]... -- ARGV...")
    command = rest[1:]
    if command[:2] == ["mkdir", "-p"] and len(command) == 3:
        inside(root, command[2]).mkdir(parents=True, exist_ok=True)
        return 0
    if command[:2] == ["rm", "-rf"] and len(command) == 3:
        shutil.rmtree(inside(root, command[2]), ignore_errors=True)
        return 0
    try:
        proc = subprocess.Popen(command, cwd=root, env=env, start_new_session=True)
    except OSError as exc:
        print(f"folder_device: cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
        return 127
    if run_id:
        runs.mkdir(exist_ok=True)
        (runs / f"{run_id}.pid").write_text(str(proc.pid))

    def forward(signum: int, _frame: object) -> None:
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGTERM, forward)
    code = proc.wait()
    if run_id:
        (runs / f"{run_id}.pid").unlink(missing_ok=True)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
