"""No process outlives its launch or its session, through the local transport and over ssh: the `session`
fixture fails any of these tests that leaves a process of the hostile runner running, or a temporary
workdir behind (conftest.py)."""

from __future__ import annotations

import signal
import time


def test_what_a_runner_leaves_running_after_exiting_0_is_stopped(session):
    # a child in its process group, and one that left its session (setsid) and cleared its environment
    session.device("linger,detach_scrub")
    result = session.run("-m", "zbench_perf")
    result.assert_outcomes(passed=1)  # the measurement itself was fine
    leftovers = session.issues("leftover")
    assert len(leftovers) == 2, session.issues()  # one per launch
    assert "left 2 process(es) running" in leftovers[0]["detail"]


def test_a_hung_runner_and_what_it_started_are_stopped_at_the_deadline(session):
    # it ignores SIGTERM (the deadline escalates to SIGKILL) and has a detached child
    session.device("hang,ignore_term,detach_scrub")
    result = session.run("-m", "zbench_perf", "--zbench-timeout=3", "--zbench-runs=1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*runner killed at its 3 s deadline*"])
    assert [launch["status"] for launch in session.scene()["launches"]] == ["timeout"]


def test_a_killed_pytest_leaves_no_runner_and_no_workdir(session):
    session.device("hang,detach")
    pytest_process = session.popen("-m", "zbench_perf", "--zbench-timeout=600")
    try:
        runners = session.wait_for_runner()
        time.sleep(0.5)  # let the detached child start too
        assert runners
    finally:
        pytest_process.send_signal(signal.SIGKILL)  # nothing of pytest runs any more: no cleanup code
        pytest_process.wait()
    # The fixture checks, after a few seconds' grace, that the runner, its detached child and the session's
    # temporary workdir (here, or in /tmp of the ssh device) are gone.
