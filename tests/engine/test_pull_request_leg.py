"""An engine repository's pull-request leg end to end, as the reusable workflow runs it
(.github/workflows/zbench-engine.yml, docs/engine-ci.md): the workflow's own "Build and deploy the runner" step,
taken from the workflow file and run with bash, builds the pull request's head and its merge base and deploys
both by content hash; then `zbench leg` A/Bs them on the device and fails on the slow head.

The scratch engine (tests/engine/scratch_engine.py) has two commits: the merge base, and a head that draws
the busy scene's rect 48 times instead of 40 over the same pixels (about 20 % slower). The A/B runs under the
sequential gate (`--zbench-budget`), so it launches until decided on this shared machine (docs/regression.md,
"The sequential gate"); 300 frames a launch, as a real launch has.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.engine.scratch_engine import make_engine_repo
from tests.engine.test_bisect import SCENES  # engine.busy (the leg selects it) and engine.flat

pytestmark = [pytest.mark.acceptance, pytest.mark.exclusive]

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / ".github" / "workflows" / "zbench-engine.yml"

def workflow_step(step_id: str) -> str:
    """The shell script of one step of the reusable workflow's device job."""
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    (step,) = [s for job in jobs.values() for s in job.get("steps", []) if s.get("id") == step_id]
    return step["run"]


def test_the_pull_request_leg_builds_deploys_and_fails_on_the_slow_head(tmp_path):
    device_dir = tmp_path / "device"
    inventory = yaml.safe_dump({"devices": {"box": {
        "transport": "local", "backend": "software", "workdir": str(device_dir),
        "runner": ["{deployed}/zbench-runner"], "display": {"width": 320, "height": 240, "refresh_hz": 60},
        "ci": {"labels": ["self-hosted", "zbench", "box"], "timeout_minutes": 30}}}})
    workspace = tmp_path / "engine"
    base, head = make_engine_repo(workspace, sys.executable, [
        ("start the engine", {}), ("batch the rects", {"grow": {"engine.busy": 1.2}})],
        suite={"scenes/engine.yaml": SCENES, "pytest.ini": "[pytest]\ntestpaths = scenes\n",
               "devices.yaml": inventory})
    temp, output, summary = tmp_path / "runner-temp", tmp_path / "github_output", tmp_path / "step_summary"
    temp.mkdir()
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"head": {"sha": head}, "base": {"sha": base}}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "ZBENCH_"))}
    env.update({
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",  # zbench, as pip installs it
        "PYTHONPATH": str(REPO), "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event), "RUNNER_TEMP": str(temp),
        "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary), "ZBENCH_DEVICE": "box",
        "ZBENCH_INVENTORY": "devices.yaml", "ZBENCH_BASE_SHA": base,
        "ZBENCH_BUILDS": json.dumps({"default": {"command": f"{sys.executable} build.py", "artifact": "out"}}),
    })

    deploy = subprocess.run(["bash", "-e", "-c", workflow_step("deploy")], cwd=workspace, env=env,
                            capture_output=True, text=True, timeout=300, check=False)
    assert deploy.returncode == 0, deploy.stdout[-3000:] + deploy.stderr[-3000:]
    head_build = json.loads((temp / "head.json").read_text())
    base_build = json.loads((temp / "base.json").read_text())
    # Two builds by content hash, each probed with its own commit's build id; the device's runner (`current`)
    # is the merge base's, and the leg's B the head's.
    assert (head_build["build_id"], base_build["build_id"]) == (head, base)
    assert head_build["content_hash"] != base_build["content_hash"]
    assert (device_dir / "builds" / "current").resolve().name == base_build["content_hash"]
    ab_runner = dict(line.split("=", 1) for line in output.read_text().splitlines())["ab-runner"]
    assert head_build["content_hash"] in ab_runner and base_build["content_hash"] not in ab_runner
    assert not (temp / "merge-base").exists()  # the merge base's worktree is gone again

    leg = subprocess.run(["zbench", "leg", "--device", "box", "--devices", "devices.yaml", "-k", "engine.busy", "--",
                          "--zbench-frames=300", "--zbench-warmup=10", "--zbench-budget=3",
                          "--zbench-max-launches=16"],
                         cwd=workspace, env={**env, "ZBENCH_AB_RUNNER": ab_runner}, capture_output=True, text=True,
                         timeout=600, check=False)
    assert leg.returncode == 1, leg.stdout[-4000:] + leg.stderr[-4000:]
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert outputs["mode"] == "ab" and outputs["regressed"] == "1"
    run = json.loads((workspace / outputs["results"] / "run.json").read_text())
    (scene,) = run["scenes"]
    assert scene["regression"]["verdict"] == "regressed", scene["regression"]["message"]
    assert "regressed" in summary.read_text()
