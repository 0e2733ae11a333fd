"""POSIX shell text for transports whose wire only carries a command string (ssh, adb).

Every argv element and environment entry is passed through shlex.quote; nothing else is ever interpolated
but integers the host generated (pids, signal names from a fixed set).

A command is started as `echo zbench-pid:$$; exec [env K=V ...] ARGV...`: the first stdout line is the pid
of the shell, which `exec` turns into the runner, so the host knows which process to kill at a deadline.
sshd and adbd start the command's shell as a session (process group) leader, so `kill -- -PID` also reaches
the runner's children; a plain `kill PID` follows for devices where it is not a group leader.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

from ..errors import UsageError
from ..inventory import ENV_NAME

PID_MARK = "zbench-pid:"
SIGNALS = ("TERM", "KILL")


def quote_argv(argv: Sequence[str]) -> str:
    if not argv:
        raise UsageError("cannot run an empty argv")
    return " ".join(shlex.quote(str(arg)) for arg in argv)


def wrapped_command(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """The command string that reports its pid on the first stdout line, then becomes argv."""
    prefix = ""
    if env:
        for key in env:
            if not ENV_NAME.fullmatch(key):
                raise UsageError(f"environment variable name {key!r} is not a valid shell name")
        prefix = "env " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()) + " "
    return f"echo {PID_MARK}$$; exec {prefix}{quote_argv(argv)}"


def parse_pid_line(line: str) -> int | None:
    line = line.strip()
    if line.startswith(PID_MARK):
        digits = line[len(PID_MARK):]
        if digits.isdigit():
            return int(digits)
    return None


def kill_command(pid: int, signal: str) -> str:
    """Signal the process group led by pid, and pid itself; never fails."""
    if signal not in SIGNALS or not isinstance(pid, int) or pid <= 1:
        raise ValueError(f"refusing to build a kill for pid {pid!r} signal {signal!r}")
    # `kill -s SIG -- -PGID` is the portable spelling (dash rejects `kill -SIG -- -PGID`); the second form
    # covers shells without `--`.
    return (f"kill -s {signal} -- -{pid} 2>/dev/null || kill -{signal} -{pid} 2>/dev/null; "
            f"kill -s {signal} {pid} 2>/dev/null; true")


def alive_command(pid: int) -> str:
    """Prints `alive` while pid or any member of its process group exists, else `gone`."""
    if not isinstance(pid, int) or pid <= 1:
        raise ValueError(f"bad pid {pid!r}")
    return (f"if kill -s 0 {pid} 2>/dev/null || kill -s 0 -- -{pid} 2>/dev/null; "
            f"then echo alive; else echo gone; fi")
