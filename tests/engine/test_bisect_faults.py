"""`zbench bisect` under faults (docs/engine-ci.md, "When a bisect is stopped"): a build command that is not
there, a build that never ends, the sequential gate's arguments reaching a capture session, SIGTERM in the
middle of a session. Each ends with a clear line and a bisect.json holding every step judged so far, and
leaves no worktree, temporary folder, deployed build or process behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from pytest_zbench.cli import main
from pytest_zbench.engine.steps import capture_args
from tests.engine.scratch_engine import make_engine_repo

REPO = Path(__file__).resolve().parents[2]

SCENES = """\
family: engine
scenes:
  - id: engine.flat
    ops:
      - {op: rect, x: 4, y: 4, w: 40, h: 20, color: "#CC3366"}
"""

# The sequential gate's arguments, as docs/engine-ci.md recommends them for the speed sessions.
SPEED_ARGS = "--zbench-frames=30 --zbench-warmup=3 --zbench-budget=3 --zbench-max-launches=16"


def project(tmp_path: Path) -> Path:
    suite = tmp_path / "suite"
    (suite / "scenes").mkdir(parents=True)
    (suite / "scenes" / "engine.yaml").write_text(SCENES)
    (suite / "pytest.ini").write_text("[pytest]\ntestpaths = scenes\n")
    (suite / "devices.yaml").write_text(yaml.safe_dump({"devices": {"box": {
        "transport": "local", "backend": "software", "workdir": str(tmp_path / "device"),
        "runner": ["{deployed}/zbench-runner"], "display": {"width": 320, "height": 240, "refresh_hz": 60}}}}))
    return suite


def argv(tmp_path: Path, shas: list[str], *options: str, build: str = f"{sys.executable} build.py") -> list[str]:
    return ["bisect", shas[0], shas[-1], "--device", "box", "--devices", str(tmp_path / "suite" / "devices.yaml"),
            "--repo", str(tmp_path / "engine"), "--build", build, "--artifact", "out",
            "--project", str(tmp_path / "suite"), "--out", str(tmp_path / "report"), *options]


@pytest.fixture
def engine(tmp_path, monkeypatch):
    """Three commits: the middle one's launches sleep 120 s (same pixels), the last changes a rect's colour."""
    shas = make_engine_repo(tmp_path / "engine", sys.executable, [
        ("start the engine", {}), ("wait for the GPU", {"sleep": 120}),
        ("gamma-correct the flat fill", {"recolor": {"engine.flat": "#CC3367"}})])
    project(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    return shas


def nothing_left(tmp_path: Path, scratch_parent: Path | None = None) -> None:
    """No build on the device, no worktree registered, no temporary folder, no process of the test's."""
    builds = tmp_path / "device" / "builds"
    assert not builds.exists() or not [p.name for p in builds.iterdir() if p.name != "current"]
    listed = subprocess.run(["git", "-C", str(tmp_path / "engine"), "worktree", "list", "--porcelain"],
                            capture_output=True, text=True, check=True).stdout
    assert listed.count("worktree ") == 1, listed
    if scratch_parent is not None:
        assert not list(scratch_parent.glob("zbench-bisect-*"))
    assert not processes_under(tmp_path)


def processes_under(tmp_path: Path) -> list[str]:
    """Command lines of live processes that name a path under tmp_path (the runners, the builds, pytest)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = next(line for line in (proc / "status").read_text().splitlines() if line.startswith("State:"))
        except (OSError, StopIteration):
            continue
        if str(tmp_path) in cmdline and "zombie" not in state:
            found.append(f"{proc.name}: {cmdline}")
    return found


def test_capture_sessions_get_only_the_arguments_they_accept():
    given = ["-k", "blur", "--zbench-budget=8", "--zbench-max-launches", "16", "--zbench-ab", "x y",
             "--zbench-calibrate", "--zbench-frames=300", "--zbench-sustained=2", "-x"]
    assert capture_args(given) == ["-k", "blur", "--zbench-frames=300", "-x"]


def test_a_build_command_not_on_path_is_a_one_line_usage_error(tmp_path, capsys, engine):
    status = main(argv(tmp_path, engine, "--pixels", build="mkae-typo runner"))
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and "--build: 'mkae-typo' is not a command on PATH" in err, err
    nothing_left(tmp_path)


def test_a_build_script_missing_from_the_checkout_is_a_one_line_error(tmp_path, capsys, engine):
    status = main(argv(tmp_path, engine, "--pixels", build="./biuld.sh"))
    captured = capsys.readouterr()
    assert status == 1
    assert "Traceback" not in captured.err and "could not be built, and an end cannot be skipped: the build " \
        "command './biuld.sh' could not be started in the checkout" in captured.err, captured.err
    assert captured.err.count("\n") == 1, captured.err
    assert (tmp_path / "report" / "bisect.json").is_file()
    nothing_left(tmp_path)


def test_a_build_that_runs_past_its_timeout_is_stopped(tmp_path, capsys, engine):
    started = time.monotonic()
    marker = tmp_path / "still-building"
    # The build's shell starts a child that would outlive it: the whole process group is stopped.
    build = (f"{sys.executable} -c 'import subprocess, sys, time; subprocess.Popen([sys.executable, \"-c\", "
             f"\"import time; time.sleep(300)\", \"{marker}\"]); time.sleep(300)'")
    status = main(argv(tmp_path, engine, "--pixels", "--build-timeout", "0.05", build=build))
    captured = capsys.readouterr()
    assert status == 1
    assert "did not finish within --build-timeout 0.05 minutes" in captured.err, captured.err
    assert time.monotonic() - started < 60
    nothing_left(tmp_path)


@pytest.mark.acceptance  # whole pytest sessions of a bisect
def test_the_sequential_gate_arguments_do_not_reach_the_capture_sessions(tmp_path, capsys, monkeypatch):
    # Before: the goldens-only session refused --zbench-budget, the bisect exited 1 with no finding and no report.
    shas = make_engine_repo(tmp_path / "engine", sys.executable, [
        ("start the engine", {}), ("tidy", {"tidy": 1}),
        ("gamma-correct the flat fill", {"recolor": {"engine.flat": "#CC3367"}})])
    project(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    status = main(argv(tmp_path, shas, "--pixels", "--pytest-args", SPEED_ARGS))
    out = capsys.readouterr().out
    document = json.loads((tmp_path / "report" / "bisect.json").read_text())
    assert status == 0, out
    assert [(f["kind"], f["status"], f["first_bad"]["sha"]) for f in document["findings"]] == \
        [("pixels", "culprit", shas[2])]
    assert document["searches"] == {"pixels": {"status": "done"}}
    nothing_left(tmp_path)


@pytest.mark.acceptance  # whole pytest sessions of a bisect
def test_sigterm_in_a_session_writes_the_report_and_leaves_nothing(tmp_path, engine):
    scratch_parent = tmp_path / "tmp"
    scratch_parent.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch_parent), "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen([sys.executable, "-m", "pytest_zbench.cli", *argv(tmp_path, engine, "--pixels")],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    seen = []
    for line in process.stdout:  # the ends' captures, then the middle commit's session, whose launch sleeps
        seen.append(line)
        if f"captures of {engine[1][:12]}" in line:
            break
    else:
        pytest.fail(f"the bisect ended before the middle commit's session: {''.join(seen)}{process.stderr.read()}")
    deadline = time.monotonic() + 120
    while not processes_under(tmp_path / "device"):  # until the session has launched the sleeping runner
        assert time.monotonic() < deadline and process.poll() is None, "the middle commit's runner never started"
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=90)
    assert process.returncode == 128 + signal.SIGTERM, "".join(seen) + out + err
    assert "stopped by SIGTERM" in err
    document = json.loads((tmp_path / "report" / "bisect.json").read_text())
    assert document["searches"]["pixels"]["status"] == "stopped"
    [finding] = document["findings"]
    assert (finding["kind"], finding["status"], finding["last_good"]["sha"], finding["first_bad"]["sha"]) == \
        ("pixels", "stopped", engine[0], engine[2])
    assert [e["commit"] for e in finding["evidence"]] == [engine[0], engine[2]]  # both ends judged, kept
    assert "pixels engine.flat: stopped, between" in out
    nothing_left(tmp_path, scratch_parent)
