"""A lab's shared PostgreSQL history, end to end through pytest sessions of the plugin: concurrent sessions
with xdist workers, credentials that reach the server and no artifact, and a server lost mid-write."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from history_rows import count
from sqlalchemy import select

from pytest_zbench.host.run_record import validate_run
from pytest_zbench.regression import store
from pytest_zbench.regression.history import History

pytestmark = pytest.mark.acceptance  # every test here is an end-to-end acceptance run

QUICK = ["--zbench-runs=3", "--zbench-frames=6", "--zbench-warmup=2", "-p", "no:cacheprovider", "-m", "zbench_perf"]
INVENTORY = """\
devices:
  local:  {transport: local, backend: software, runner: [python, -m, pytest_zbench.runner],
           display: {width: 64, height: 48, refresh_hz: 60}}
  local2: {transport: local, backend: software, runner: [python, -m, pytest_zbench.runner],
           display: {width: 64, height: 48, refresh_hz: 60}}
"""


def session(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """A pytest session of the zbench project in `root`, started in the background."""
    return subprocess.Popen([sys.executable, "-m", "pytest", *QUICK, f"--zbench-results={root / 'results'}", *args],
                            cwd=root, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def finish(proc: subprocess.Popen[str], timeout: float = 600) -> str:
    out, _ = proc.communicate(timeout=timeout)
    return out


def run_json(root: Path) -> dict:
    document = json.loads((root / "results" / "run.json").read_text())
    assert validate_run(document) == []
    return document


def second_project(project, name: str) -> Path:
    other = project.root.parent / name
    shutil.copytree(project.root, other, ignore=shutil.ignore_patterns("results"))
    return other


def test_two_sessions_with_two_workers_each_write_every_run_and_launch_once(project, postgres, pg_database):
    (project.root / "devices.yaml").write_text(INVENTORY)
    other = second_project(project, "leg-b")
    url = postgres.url(pg_database)
    legs = [session(project.root, "-n", "2", "--zbench-device=local", "--zbench-baseline=none", env={
                 "ZBENCH_HISTORY_URL": url}),
            session(other, "-n", "2", "--zbench-device=local,local2", "--zbench-baseline=none",
                    f"--zbench-history={url}")]
    outputs = [finish(leg) for leg in legs]
    for leg, out in zip(legs, outputs):
        assert leg.returncode == 0, out[-3000:]

    expected: dict[tuple[str, str], list[float]] = {}  # (run id, scene) -> per-launch cpu_ms.p50 from run.json
    for root in (project.root, other):
        document = run_json(root)
        for scene in document["scenes"]:
            assert scene["history"]["recorded"] is True and scene["history"]["path"] == str(url).replace(
                "postgresql://", "postgresql+psycopg://")
            run_id = f"{document['run_id']}-{scene['device']}"
            assert scene["history"]["run_id"] == run_id
            expected[(run_id, scene["id"])] = [launch["cpu_ms"]["p50"] for launch in scene["per_run"]]
    assert len(expected) == 3 + 6  # 3 scenes on local; 3 on local and 3 on local2
    assert len({run_id for run_id, _ in expected}) == 3

    with History(url) as history:
        assert count(history, store.runs) == 3 and count(history, store.scenes) == 9
        assert count(history, store.launches) == 27  # 9 scenes x 3 launches, none lost, none twice
        stored: dict[tuple[str, str], list[float]] = {}
        for key in history.scene_keys():
            for run in history.runs_of(key):
                assert (run.run_id, key.scene_id) not in stored
                stored[(run.run_id, key.scene_id)] = [launch["cpu_ms"]["p50"] for launch in run.launches]
        assert stored == expected


def test_a_password_reaches_the_server_and_no_artifact(project, postgres, tmp_path):
    password = "Pa55-word-of-the-lab"
    postgres.create_role("lab_ci", password)
    database = postgres.create_database(owner="lab_ci")
    with_password = postgres.url(database, user="lab_ci", password=password)
    shown = f"postgresql+psycopg://lab_ci@127.0.0.1:{postgres.port}/{database}"
    junit = tmp_path / "junit.xml"

    # On the command line, and then from the environment (as CI passes a secret).
    outputs = []
    for args, env in (([f"--zbench-history={with_password}", f"--junitxml={junit}"], {}),
                      ([f"--junitxml={tmp_path / 'junit-env.xml'}"], {"ZBENCH_HISTORY_URL": with_password})):
        out = finish(session(project.root, "-k", "mini", *args, env=env))
        outputs.append(out)
        document = run_json(project.root)
        assert [s["history"]["recorded"] for s in document["scenes"]] == [True, True], out[-3000:]
        assert {s["history"]["path"] for s in document["scenes"]} == {shown}
        artifacts = [p for p in (project.root / "results").rglob("*") if p.is_file()]
        assert any(p.name == "report.html" for p in artifacts)
        for path in artifacts:
            assert password.encode() not in path.read_bytes(), path
    assert shown in junit.read_text()  # the first session's no-baseline note names the history, bare
    assert "regression_verdict" in (tmp_path / "junit-env.xml").read_text()  # the second was judged by the first
    for path in (junit, tmp_path / "junit-env.xml"):
        assert password not in path.read_text()
    assert "had no baseline yet (first run): recorded" in outputs[0]
    assert f"history: {shown}" in outputs[0]  # the terminal names it, bare
    assert all(password not in out for out in outputs)
    with History(with_password) as history:
        assert count(history, store.runs) == 2

    # A wrong password: refused for good when the session starts, before anything is measured (not after every
    # scene, nor retried as a lost server), and the password is nowhere either.
    wrong = "Not-the-Pa55word"
    before = run_json(project.root)["run_id"]
    proc = session(project.root, "-k", "mini.fill.x1",
                   f"--zbench-history={postgres.url(database, user='lab_ci', password=wrong)}", f"--junitxml={junit}")
    out = finish(proc)
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert "password authentication failed" in out and shown in out and "nothing was measured" in out
    assert "attempt(s)" not in out and "could not be reached" not in out
    assert run_json(project.root)["run_id"] == before  # no session measured, no run.json written over the last
    for path in [junit, *(p for p in (project.root / "results").rglob("*") if p.is_file())]:
        assert wrong.encode() not in path.read_bytes(), path
    assert wrong not in out


def test_a_server_lost_mid_write_keeps_the_samples_and_the_database_consistent(project, postgres, pg_database):
    url = postgres.url(pg_database)
    History(url).close()
    admin = psycopg.connect(postgres.dsn(pg_database))
    admin.execute("LOCK TABLE launches IN ACCESS EXCLUSIVE MODE")  # the session's write stops at the launches
    leg = session(project.root, "-k", "mini.fill.x1", f"--zbench-history={url}", "--zbench-baseline=none")
    deadline = time.monotonic() + 300
    while not postgres.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'"
                               " AND application_name = 'pytest-zbench'", params=(pg_database,)):
        assert leg.poll() is None and time.monotonic() < deadline, "the session never reached the write"
        time.sleep(0.1)
    postgres.crash()  # mid-write: run and scene rows sent, launches not yet; the server stays down
    out = finish(leg)
    admin.close()
    assert leg.returncode == 0, out[-3000:]  # measured and not gated: the perf test passes
    assert "RegressionWarning: scene mini.fill.x1 on device local: not recorded: history postgresql" in out

    document = run_json(project.root)
    (scene,) = document["scenes"]
    history = scene["history"]
    assert history["recorded"] is False and history["run_id"] == f"{document['run_id']}-local"
    assert f"history postgresql+psycopg://zbench@127.0.0.1:{postgres.port}/{pg_database}" in history["reason"]
    assert "could not be reached" in history["reason"]
    assert len(scene["per_run"]) == 3 and scene["outcome"] == "passed"
    with open(project.root / "results" / scene["samples_file"]) as samples:
        rows = list(csv.DictReader(samples))
    assert {row["launch"] for row in rows} == {"0", "1", "2"} and len(rows) == 3 * (6 + 2)

    postgres.restart()
    with History(url) as db:  # crash recovery: nothing of the interrupted transaction
        assert db.store.read(lambda conn: conn.execute(select(store.runs.c.run_id)).all()) == []
        assert count(db, store.scenes) == 0 and count(db, store.launches) == 0
    out = finish(session(project.root, "-k", "mini.fill.x1", f"--zbench-history={url}", "--zbench-baseline=none"))
    assert run_json(project.root)["scenes"][0]["history"]["recorded"] is True, out[-3000:]
    with History(url) as db:
        assert count(db, store.runs) == 1 and count(db, store.launches) == 3
