"""transports/supervised.py `wait_for_exit`: woken by the process's exit (a pidfd), and a deadline still
ends the wait. Real processes; no timed assertions, only what the wait reports."""

from __future__ import annotations

import subprocess
import sys

from pytest_zbench.transports.supervised import wait_for_exit


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
