"""Commands on this host under the supervisor (_supervisor.py): the local transport's runner, the command
transport's host-side scripts, a temporary workdir's keeper. What the supervisor guarantees is in its
docstring and README, "Reliability"."""

from __future__ import annotations

import math
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from .base import KILL_GRACE_S, SUPERVISOR_STOP_S, CommandResult, LineCallback, OutputReaders, take_leftover

SUPERVISOR = Path(__file__).with_name("_supervisor.py")


def start_supervisor(args: list[str], env: Mapping[str, str], *, capture: bool = False,
                     cwd: str | None = None) -> subprocess.Popen[bytes]:
    """The supervisor in a session of its own (so the deadline can signal it alone), its stdin a pipe from
    this process that stays open until the run ends: end of file tells it that this host is gone. The
    command it runs inherits `cwd` (the supervisor itself is run by absolute path)."""
    pdeathsig = ["--pdeathsig"] if args[0] == "run" and threading.current_thread() is threading.main_thread() else []
    # PR_SET_PDEATHSIG fires when the thread that started the child exits: only the main thread lives as long
    # as the host. From another thread, the stdin watchdog alone tells the supervisor that the host is gone.
    # -S: the supervisor needs only the standard library, and site's start (the .pth files of an environment,
    # an editable install's finder) was 50 ms of each launch's time on this host, more when it is loaded.
    return subprocess.Popen(
        [sys.executable, "-I", "-S", str(SUPERVISOR), args[0], *pdeathsig, *args[1:]], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
        stderr=subprocess.PIPE if capture else subprocess.DEVNULL, env=dict(env), start_new_session=True, cwd=cwd,
    )


def release(proc: subprocess.Popen[bytes]) -> None:
    """Close the watchdog pipe of a supervisor whose work is done, and collect it."""
    try:
        if proc.stdin is not None:
            proc.stdin.close()
    except OSError:
        pass
    try:
        proc.wait(timeout=KILL_GRACE_S * 3)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def supervised_run(command: Sequence[str], env: Mapping[str, str], *, timeout_s: float,
                   on_line: LineCallback | None, argv: tuple[str, ...],
                   before_stop: Callable[[], str] | None = None, cwd: str | None = None) -> CommandResult:
    """Run `command` on this host under the supervisor, in `cwd`; at the deadline the whole tree is stopped.
    `before_stop` runs first at the deadline (the command transport's kill script); its note goes to stderr."""
    started = time.monotonic()
    try:
        proc = start_supervisor(["run", "--", *command], env, capture=True, cwd=cwd)
    except OSError as exc:
        return CommandResult(argv, 127, "", f"cannot start {command[0]!r}: {exc.strerror or exc}", False, 0.0)
    readers = OutputReaders(proc, on_line)
    timed_out = False
    notes: list[str] = []
    try:
        exited = wait_for_exit(proc, timeout_s)
    except BaseException:  # Ctrl-C or SIGTERM read as one: the tree is stopped now, not when this host exits
        stop(proc)
        release(proc)
        raise
    if not exited:
        timed_out = True
        if before_stop is not None:
            notes.append(before_stop())
            try:
                proc.wait(timeout=KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
        if proc.poll() is None:
            stop(proc)
            notes.append("stopped with its whole process tree")
    readers.join(KILL_GRACE_S)
    release(proc)
    stderr, leftover = take_leftover(readers.stderr)
    if notes:
        stderr += ("" if not stderr or stderr.endswith("\n") else "\n") + "".join(f"zbench: {n}\n" for n in notes)
    return CommandResult(
        argv=argv,
        exit_code=None if timed_out else proc.returncode,
        stdout=readers.stdout,
        stderr=stderr,
        timed_out=timed_out,
        wall_s=time.monotonic() - started,
        leftover=leftover,
    )


def wait_for_exit(proc: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Wait until `proc` exits, at most `timeout_s`; True when it did (and it is reaped).

    Woken by the exit itself through a pidfd where Linux has one (5.3 and later): Popen.wait with a timeout
    polls, sleeping up to 50 ms between looks, which every launch paid after its runner had exited (25 ms on
    average, docs/architecture.md "Round trips per launch")."""
    pidfd_open = getattr(os, "pidfd_open", None)
    try:
        pidfd = pidfd_open(proc.pid) if pidfd_open is not None and proc.returncode is None else None
    except OSError:  # no pidfd on this kernel: poll as Popen does
        pidfd = None
    if pidfd is None:
        try:
            proc.wait(timeout=timeout_s)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        if not poller.poll(min(max(0, math.ceil(timeout_s * 1000)), 2**31 - 1)):  # poll takes a C int of ms
            return False
    finally:
        os.close(pidfd)
    proc.wait()  # it has exited: this only reaps it
    return True


def stop(proc: subprocess.Popen[bytes]) -> None:
    """The deadline: SIGTERM to the supervisor, which stops the tree (SIGKILL after its grace); SIGKILL to
    the supervisor only if it has not finished well after that."""
    for sig, wait in ((signal.SIGTERM, SUPERVISOR_STOP_S), (signal.SIGKILL, KILL_GRACE_S)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
