"""transports/supervised.py `wait_for_exit`: woken by the process's exit (a pidfd), and a deadline still
ends the wait; `supervised_run` interrupted by Ctrl-C stops the tree. Real processes; no timed assertions,
only what the wait reports."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from pytest_zbench.transports.supervised import supervised_run, wait_for_exit


def test_a_process_that_exits_is_reaped_with_its_status() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    assert wait_for_exit(proc, 60.0)
    assert proc.returncode == 3


def test_the_deadline_ends_the_wait_and_leaves_the_process_running() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert not wait_for_exit(proc, 0.2)
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
    assert wait_for_exit(proc, 1.0)  # already reaped: nothing left to wait for


def _alive_with(mark: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and mark.encode() in (entry / "cmdline").read_bytes() \
                    and (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_ctrl_c_during_a_supervised_run_stops_the_tree_before_it_leaves() -> None:
    """A session interrupted mid-launch leaves no runner behind, even for the moments until the host exits
    (before, the tree was stopped only when the host's exit closed the supervisor's pipe)."""
    mark = f"zbench-interrupted-{uuid.uuid4().hex}"
    child = f"import subprocess, time; subprocess.Popen(['sleep', '60', {mark!r}]); time.sleep(60)  # {mark}"

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        with pytest.raises(KeyboardInterrupt):
            supervised_run([sys.executable, "-c", child], os.environ, timeout_s=60.0, on_line=None, argv=("child",))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert _alive_with(mark) == []
