"""Waiting for what the system does on its own time: a killed process tree leaving, a started one appearing.
Written once, with one stated worst case, so that no test's verdict depends on how loaded the machine is.

A wait returns as soon as its condition holds, so a generous bound costs nothing when the code works; it only
sets how long a broken build takes to fail. The bound is the worst case the suite allows a process to take to
leave (or appear) after the event that should cause it, on a 2-core machine with a busy process on each core
and the other tests of the tier beside it: stopping a launch's tree has been seen to take up to ~2 s there
(a fork under load, a signal delivered to a sleeping interpreter), far below the bound."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

SETTLE_S = 30.0
POLL_S = 0.05


def eventually(condition: Callable[[], bool], within_s: float = SETTLE_S) -> bool:
    """Whether `condition` held at some point within `within_s` (checked once more at the end)."""
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() >= deadline:
            return condition()
        time.sleep(POLL_S)
    return True


def pids_with(pattern: str) -> list[int]:
    """The processes whose command line matches `pattern` (pgrep -f)."""
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def gone(pattern: str, within_s: float = SETTLE_S) -> bool:
    """Whether every process matching `pattern` has left within the bound."""
    return eventually(lambda: not pids_with(pattern), within_s)


def appeared(pattern: str, within_s: float = SETTLE_S) -> list[int]:
    """The processes matching `pattern` once there is one; fails the test when none appears within the bound."""
    if not eventually(lambda: bool(pids_with(pattern)), within_s):
        raise AssertionError(f"no process matching {pattern!r} appeared within {within_s:.0f} s")
    return pids_with(pattern)
