"""A session stopped by a real signal after its first scene was recorded still writes run.json (valid against
the schema, `interrupted: true`, the completed scene) and report.html."""

from __future__ import annotations

import signal
import sqlite3
import time

import pytest
import yaml

from conftest import DISPLAY, HOSTILE
from pytest_zbench.host.run_record import validate_run

SCENES = """\
family: faults
scenes:
  - id: faults.one
    ops: [{op: rect, x: 1, y: 1, w: 4, h: 4, color: "#3366CC"}]
  - id: faults.two
    ops: [{op: rect, x: 1, y: 1, w: 5, h: 4, color: "#3366CC"}]
"""
# The hostile runner, which hangs in the second scene: the session is stopped while it waits for it.
RUNNER = f"""\
import json, os, sys
if sys.argv[1] == "run" and json.load(open(sys.argv[2]))["scene"]["id"] == "faults.two":
    os.environ["ZBENCH_FAULT"] = "hang"
os.execv(sys.executable, [sys.executable, {str(HOSTILE)!r}, *sys.argv[1:]])
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signalled_session_writes_run_json_marked_interrupted_and_the_report(local_session, signum):
    session = local_session
    (session.root / "scenes" / "faults.yaml").write_text(SCENES)
    (session.root / "runner.py").write_text(RUNNER)
    entry = {"transport": "local", "backend": "software", "runner": ["python", str(session.root / "runner.py")],
             "display": DISPLAY, "env": {"ZBENCH_FAULT": "ok", "ZBENCH_FAULT_MARK": session.mark}}
    (session.root / "devices.yaml").write_text(yaml.safe_dump({"devices": {session.name: entry}}))
    history = session.root / "history.sqlite"
    proc = session.popen("-m", "zbench_perf", f"--zbench-history={history}")
    try:
        deadline = time.monotonic() + 120
        while not any("faults.two" in cmd for cmd in session.wait_for_runner().values()):
            assert time.monotonic() < deadline, "the second scene never started"
            time.sleep(0.1)
        with sqlite3.connect(history) as db:  # the first scene is in the history before the signal
            assert db.execute("select count(*) from sqlite_master").fetchone()[0] > 0
        proc.send_signal(signum)
        assert session.wait_stopped(proc, 60) == pytest.ExitCode.INTERRUPTED
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    document = session.run_json()
    assert validate_run(document) == []
    assert document["interrupted"] is True
    assert [(s["id"], s["outcome"]) for s in document["scenes"]] == [("faults.one", "passed")]
    report = (session.results / "report.html").read_text()
    assert "Interrupted:" in report and "faults.one" in report


def test_a_session_that_ran_out_is_not_marked_interrupted(local_session):
    session = local_session
    session.run("-m", "zbench_perf").assert_outcomes(passed=1)
    assert session.run_json()["interrupted"] is False
