"""`pytest --zbench-check-runner`: the kit runs once per device before measuring; its report is saved in
the results folder and linked from run.json; a failing check stops the session before anything is measured."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

BROKEN = Path(__file__).resolve().parent / "broken"


def test_a_conforming_runner_is_checked_then_measured(project):
    result = project.run("--zbench-device=rectonly", "--zbench-check-runner", "-k", "mini.fill.x1")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["zbench check-runner: device rectonly (local, backend software)*",
                                 "*pass  signal.sigterm*", "runner of device rectonly conforms: *"])
    document = project.run_json()
    link = document["check_runner"]["rectonly"]
    assert link["passed"] is True and link["report"] == "check-runner/rectonly.json" and link["failed"] == []
    report = json.loads((project.results / link["report"]).read_text())
    assert report["device"] == "rectonly" and report["passed"] is True
    assert (project.results / "check-runner" / "rectonly").is_dir()  # the launches' files, for a look


def test_a_failing_check_stops_the_session_before_measuring(project):
    devices = yaml.safe_load((project.root / "devices.yaml").read_text())
    devices["devices"]["rectonly"]["runner"] = ["python", str(BROKEN / "malformed.py")]
    (project.root / "devices.yaml").write_text(yaml.safe_dump(devices))
    result = project.run("--zbench-device=rectonly", "--zbench-check-runner", "-k", "mini.fill.x1")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*fail  job.malformed*", "*fix: validate the job*"])
    result.stdout.fnmatch_lines(["*the runner conformance check (--zbench-check-runner) failed, nothing was measured*",
                                 "*device rectonly: job.malformed (report: *check-runner/rectonly.json)*"])
    assert not (project.results / "run.json").exists()
    report = json.loads((project.results / "check-runner" / "rectonly.json").read_text())
    assert report["failed"] == ["job.malformed"]
