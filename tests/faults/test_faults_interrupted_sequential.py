"""An A/B session under the sequential gate (--zbench-budget) stopped by a real signal during its rounds, before
any scene was decided: the rounds interleave, so no scene has finished, yet run.json (valid, `interrupted`)
and report.html hold every launch measured so far, each scene marked undecided (`sequential.stopped`
interrupted, no verdict), and nothing goes to the history."""

from __future__ import annotations

import signal
import sqlite3
import time

import pytest

from conftest import HOSTILE
from pytest_zbench.host.run_record import validate_run

# B: the hostile runner, correct for its first two launches (the first round), hanging in its third.
B_RUNNER = f"""\
import os, sys
if sys.argv[1] == "run":
    count = os.path.join(os.path.dirname(os.path.abspath(__file__)), "b-launches")
    with open(count, "a") as f:
        f.write("x")
    if os.path.getsize(count) >= 3:
        os.environ["ZBENCH_FAULT"] = "hang"
os.execv(sys.executable, [sys.executable, {str(HOSTILE)!r}, *sys.argv[1:]])
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signalled_sequential_session_keeps_its_launches_marked_undecided(local_session, signum):
    # Before: no run.json and no report, the launches lost to every reader but the CSVs.
    session = local_session
    (session.root / "b_runner.py").write_text(B_RUNNER)
    history = session.root / "history.sqlite"
    proc = session.popen("-m", "zbench_perf", f"--zbench-history={history}",
                         f"--zbench-ab=python {session.root / 'b_runner.py'}", "--zbench-budget=5",
                         "--zbench-max-launches=8")
    count = session.root / "b-launches"
    try:
        deadline = time.monotonic() + 180
        while not (count.is_file() and count.stat().st_size >= 3):  # the second round's B launch hangs now
            assert proc.poll() is None and time.monotonic() < deadline, "the second round never started"
            time.sleep(0.1)
        time.sleep(1.0)
        proc.send_signal(signum)
        assert session.wait_stopped(proc, 90) == pytest.ExitCode.INTERRUPTED
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    document = session.run_json()
    assert validate_run(document) == []
    assert document["interrupted"] is True
    (scene,) = document["scenes"]
    assert scene["id"] == "faults.one" and scene["outcome"] == "not_run"
    assert scene["sequential"]["stopped"] == "interrupted"
    assert "regression" not in scene or not scene["regression"]  # undecided: no verdict
    assert len(scene["per_run"]) >= 2 and len(scene["ab"]["per_run_b"]) >= 2  # the first round's launches, kept
    report = (session.results / "report.html").read_text()
    assert "Interrupted:" in report and "faults.one" in report
    if history.exists():  # an interrupted A/B is no run of a build
        with sqlite3.connect(history) as db:
            tables = {row[0] for row in db.execute("select name from sqlite_master where type='table'")}
            assert "runs" not in tables or db.execute("select count(*) from runs").fetchone()[0] == 0
