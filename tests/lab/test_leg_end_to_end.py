"""The workflow's job script end to end: ci/zbench-leg.sh on `local` with the GITHUB_* variables pointing at
temporary files, in a copy of this repository, for a push (the history gate, its history outside the
workspace, kept between jobs) and a pull request (A/B of the head against its merge base, checked out as a
second tree whose runner really is other code). Also the planning script."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_zbench.regression.history import History

pytestmark = pytest.mark.acceptance  # every test here is an end-to-end acceptance run

REPO = Path(__file__).resolve().parents[2]
QUICK = ["--zbench-frames=20", "--zbench-warmup=3"]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), "-c", "user.name=lab", "-c", "user.email=lab@example.org",
                           *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A git repository holding this checkout's files (committed or not), as a runner's workspace."""
    repo = tmp_path / "workspace"
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, repo / name)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    return repo


class Job:
    """The files and variables GitHub gives a job step, in temporary folders."""

    def __init__(self, tmp_path: Path, workspace: Path, event: str, payload: dict) -> None:
        self.workspace = workspace
        self.home = tmp_path / "runner-home"  # the runner machine's disk outside the workspace
        self.temp = tmp_path / "runner-temp"
        self.temp.mkdir(exist_ok=True)
        self.output = tmp_path / f"github_output_{event}"
        self.summary = tmp_path / f"step_summary_{event}"
        self.event_file = tmp_path / f"event_{event}.json"
        self.event_file.write_text(json.dumps(payload))
        for path in (self.output, self.summary):
            path.write_text("")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "ZBENCH_"))}
        self.env = {**env, "GITHUB_ACTIONS": "true", "CI": "true", "GITHUB_WORKSPACE": str(workspace),
                    "GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": str(self.event_file),
                    "GITHUB_OUTPUT": str(self.output), "GITHUB_STEP_SUMMARY": str(self.summary),
                    "GITHUB_SERVER_URL": "https://github.example", "GITHUB_REPOSITORY": "lab/zinc",
                    "GITHUB_RUN_ID": "1234", "GITHUB_RUN_ATTEMPT": "2", "RUNNER_TEMP": str(self.temp),
                    "ZBENCH_HISTORY_DIR": str(self.home / "zbench"), "ZBENCH_PYTHON": sys.executable,
                    "ZBENCH_DEVICE": "local"}

    def run(self, script: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(self.workspace / "ci" / script), *args], cwd=self.workspace,
                              env={**self.env, **env}, capture_output=True, text=True, timeout=600,
                              check=False)

    def outputs(self) -> dict[str, str]:
        return dict(line.split("=", 1) for line in self.output.read_text().splitlines())


def junit_cases(path: Path) -> dict[str, ET.Element]:
    return {case.get("name"): case for case in ET.parse(path).getroot().iter("testcase")}


def verdicts(run_json: Path) -> dict[str, str]:
    return {s["id"]: s["regression"]["verdict"] for s in json.loads(run_json.read_text())["scenes"]}


def test_push_runs_the_history_gate_with_the_history_outside_the_workspace(tmp_path, workspace):
    job = Job(tmp_path, workspace, "push", {"ref": "refs/heads/main", "after": git(workspace, "rev-parse", "HEAD")})
    stale = workspace / "zbench-results" / "local" / "local" / "fill.alpha.x1.frames.csv"
    stale.parent.mkdir(parents=True)
    stale.write_text("launch,frame\n0,0\n")  # an earlier job's file on a self-hosted runner's workspace
    done = job.run("zbench-leg.sh", *QUICK, ZBENCH_KEYWORD="fill.alpha.x1 or (rrect.grid and not adaptive)")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]

    outputs = job.outputs()
    assert outputs["artifact"] == "zbench-local-2" and outputs["mode"] == "history" and outputs["exit-code"] == "0"
    assert outputs["results"] == "zbench-results/local" and outputs["scenes"] == "2" and outputs["regressed"] == "0"
    results = workspace / outputs["results"]
    assert {p.name for p in results.iterdir()} >= {"run.json", "report.html", "junit.xml", "summary.md", "local"}
    assert (results / "local" / "fill.alpha.x1.frames.csv").read_text() != "launch,frame\n0,0\n"
    assert verdicts(results / "run.json") == {"fill.alpha.x1": "no_baseline", "rrect.grid": "no_baseline"}
    cases = junit_cases(workspace / outputs["junit"])
    assert set(cases) == {f"{kind}[{scene}-local]" for kind in ("perf", "golden")
                          for scene in ("fill.alpha.x1", "rrect.grid")}
    assert not any(case.find("failure") is not None for case in cases.values())

    history = job.home / "zbench" / "history.sqlite"
    with History(history) as opened:
        assert {key.scene_id for key in opened.scene_keys(device="local")} == {"fill.alpha.x1", "rrect.grid"}
    assert not (workspace / ".zbench").exists()
    summary = job.summary.read_text()
    assert summary.startswith("## zbench local: 2 scene(s), nothing failed")
    assert f"History gate on `local` (push): each scene judged against its recent comparable runs in `{history}`" in summary
    assert "[artifact zbench-local-2 (the run's artifacts)](https://github.example/lab/zinc/actions/runs/1234#artifacts)" in summary
    assert summary == (results / "summary.md").read_text()
    assert "::error" not in done.stdout

    # The next job on this runner finds the history the first one recorded: the scenes have a baseline now.
    job.output.write_text("")
    done = job.run("zbench-leg.sh", *QUICK, ZBENCH_KEYWORD="fill.alpha.x1 or (rrect.grid and not adaptive)")
    judged = verdicts(results / "run.json")
    assert set(judged) == {"fill.alpha.x1", "rrect.grid"} and "no_baseline" not in judged.values(), judged
    # Two quick A/A sessions on a shared machine may differ by more than the bar; whichever way the gate
    # decides, the leg's exit code and outputs must say what the verdicts say.
    regressed = sorted(scene for scene, verdict in judged.items() if verdict == "regressed")
    assert done.returncode == (1 if regressed else 0), done.stdout[-4000:]
    assert job.outputs()["exit-code"] == str(done.returncode) and job.outputs()["regressed"] == str(len(regressed))


def test_pull_request_runs_ab_of_the_head_against_its_merge_base(tmp_path, workspace):
    merge_base = git(workspace, "rev-parse", "HEAD")
    # The pull request: a runner that burns 8 ms more CPU in every frame, a slowdown the gate must catch.
    git(workspace, "checkout", "-q", "-b", "slower-runner")
    main_py = workspace / "pytest_zbench" / "runner" / "__main__.py"
    text = main_py.read_text()
    assert 'type=_non_negative, default=0.0' in text
    main_py.write_text(text.replace('type=_non_negative, default=0.0', 'type=_non_negative, default=8.0'))
    git(workspace, "commit", "-q", "-am", "runner: more work per frame")
    head = git(workspace, "rev-parse", "HEAD")
    # Meanwhile the base branch moved on, so its tip is not the merge base.
    git(workspace, "checkout", "-q", "main")
    (workspace / "NOTES.md").write_text("an unrelated change on main\n")
    git(workspace, "add", "NOTES.md")
    git(workspace, "commit", "-q", "-m", "notes")
    base_tip = git(workspace, "rev-parse", "HEAD")
    git(workspace, "checkout", "-q", head)
    job = Job(tmp_path, workspace, "pull_request", {"number": 7, "pull_request": {
        "head": {"sha": head, "ref": "slower-runner"}, "base": {"sha": base_tip, "ref": "main"}}})

    done = job.run("zbench-leg.sh", "--zbench-runs=5", *QUICK, ZBENCH_KEYWORD="fill.alpha.x1")
    log = done.stdout + done.stderr
    assert done.returncode == 1, log[-6000:]  # B regressed fails the perf test; exit code is pytest's

    outputs = job.outputs()
    assert outputs["mode"] == "ab" and outputs["regressed"] == "1" and outputs["exit-code"] == "1"
    results = workspace / outputs["results"]
    run = json.loads((results / "run.json").read_text())
    (entry,) = run["scenes"]
    ab = entry["ab"]
    assert ab["order"] == ["A", "B", "B", "A"] * 2 + ["A", "B"] and ab["pattern"] == "ABBA" and ab["complete_runs_b"] == 5
    # The script's path is the head's checkout's own, absolute: the local runner runs in its device folder.
    assert ab["runner_b"][1:] == [str(workspace / "ci" / "checkout-runner.py"), str(workspace)]
    regression = entry["regression"]
    assert regression["verdict"] == "regressed" and regression["source"] == "ab"
    assert "checkout-runner.py" in regression["baseline"] and "merge-base" in regression["baseline"]
    cpu = next(m for m in regression["metrics"] if m["metric"] == "cpu_ms.p50")
    assert cpu["verdict"] == "regressed" and cpu["effect"] > 2
    assert (entry["correctness"] or {}).get("outcome") == "passed"  # same pixels, more time

    summary = job.summary.read_text()
    assert summary.startswith("## zbench local: 1 regressed")
    assert (f"Pull request A/B on `local`: the head `{head[:12]}` (B) against its merge base "
            f"`{merge_base[:12]}` (A)") in summary
    assert summary.index("### Regressed (1 scene(s), ") < summary.index("### Artifacts")
    assert any(line.startswith("| fill.alpha.x1 | local | cpu_ms.p50 | **") for line in summary.splitlines())
    perf = junit_cases(workspace / outputs["junit"])["perf[fill.alpha.x1-local]"]
    assert "REGRESSED" in perf.find("failure").get("message", "") + (perf.find("failure").text or "")
    assert any(line.startswith("::error file=scenes/fill.yaml,title=perf[fill.alpha.x1-local] failed::")
               for line in done.stdout.splitlines())

    # Neither history read nor written, and nothing left behind: no worktree, no scratch folder.
    assert not (job.home / "zbench").exists() and not (workspace / ".zbench").exists()
    assert git(workspace, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert not (job.temp / "zbench-leg-local").exists()


def test_pull_request_without_the_merge_base_says_how_to_check_out(tmp_path, workspace):
    job = Job(tmp_path, workspace, "pull_request", {"pull_request": {
        "head": {"sha": git(workspace, "rev-parse", "HEAD")}, "base": {"sha": "1" * 40}}})
    done = job.run("zbench-leg.sh", ZBENCH_KEYWORD="fill.alpha.x1")
    assert done.returncode == 2
    assert "fetch-depth: 0" in done.stderr
    assert job.outputs()["mode"] == "error"
    assert "the leg could not run: git merge-base" in job.summary.read_text()


def test_plan_script_writes_the_matrix_hosted_legs_until_the_lab_is_on(tmp_path, workspace):
    job = Job(tmp_path, workspace, "push", {})
    done = job.run("zbench-plan.sh")
    assert done.returncode == 0, done.stderr
    legs = json.loads(job.outputs()["matrix"])["include"]
    assert [leg["device"] for leg in legs] == ["local", "local-gles2"] and job.outputs()["legs"] == "2"
    job.output.write_text("")
    done = job.run("zbench-plan.sh", ZBENCH_LAB="true", ZBENCH_PLAN_LABEL="self-hosted", ZBENCH_KEYWORD="fill")
    assert done.returncode == 0, done.stderr
    legs = json.loads(job.outputs()["matrix"])["include"]
    assert {leg["device"] for leg in legs} == {"pi3b", "nexus7", "ipad", "touchpad", "mac"}
    assert all(leg["keyword"] == "fill" and not leg["hosted"] for leg in legs)


def test_leg_usage_errors(tmp_path, monkeypatch, capsys):
    from pytest_zbench.cli import main

    monkeypatch.delenv("ZBENCH_DEVICE", raising=False)
    assert main(["leg"]) == 2
    assert "name the device with --device NAME" in capsys.readouterr().err
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path))
    assert main(["leg", "--device", "local"]) == 2
    assert "no devices.yaml" in capsys.readouterr().err
    (tmp_path / "devices.yaml").write_text("devices: {bench: {transport: local}}")
    monkeypatch.setenv("RUNNER_TEMP", str(tmp_path / "temp"))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    assert main(["leg", "--device", "bench"]) == 2
    err = capsys.readouterr().err
    assert "device 'bench'" in err and "has no 'ci' key" in err
    assert "the leg could not run: device 'bench'" in (tmp_path / "summary.md").read_text()
