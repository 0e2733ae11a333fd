"""README's first look, run as README gives it: the pytest command after `bash ci/setup.sh &&`, in a checkout (the
repository's scenes, goldens, inventory and pytest configuration), on `local`. It must see every family and end
within its stated budget; loosely (3x), as CI's machine runs other tests beside it."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_zbench.scenes import load_corpus

REPO = Path(__file__).resolve().parent.parent
SETUP_THEN = "bash ci/setup.sh && "


def readme_first_look() -> tuple[list[str], float]:
    """README's first command after the setup, as argv (without `.venv/bin/pytest`), and the budget its comment
    states, in seconds."""
    line = next(line for line in (REPO / "README.md").read_text(encoding="utf-8").splitlines()
                if line.strip().startswith(SETUP_THEN))
    command, _, comment = line.strip()[len(SETUP_THEN):].partition("#")
    argv = shlex.split(command)
    assert argv[0] == ".venv/bin/pytest", line
    budget = re.search(r"within (\d+) minutes?", comment)
    assert budget, f"README's first look states no budget: {line}"
    return argv[1:], float(budget.group(1)) * 60


def test_readme_names_the_first_look_and_its_budget():
    args, budget_s = readme_first_look()
    assert args == ["--zbench-first-look"] and budget_s == 120


# Not `exclusive`: its wall-time bound (3x README's budget) holds beside another test of the tier, which
# about doubles a session's time on 2 cores; the first look's time itself is bench/bench_first_look.py's figure.
@pytest.mark.acceptance
def test_readme_first_look_sees_every_family_within_its_budget(tmp_path):
    args, budget_s = readme_first_look()
    # The checkout's own folders; only what a session writes goes elsewhere, so that the checkout stays as it is.
    extra = [f"--zbench-results={tmp_path / 'results'}", f"--zbench-history={tmp_path / 'history.sqlite'}",
             "-p", "no:cacheprovider"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.pop("ZBENCH_HISTORY_URL", None)
    started = time.monotonic()
    ran = subprocess.run([sys.executable, "-m", "pytest", *args, *extra], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=3 * budget_s + 60)
    wall_s = time.monotonic() - started
    out = ran.stdout + ran.stderr
    assert ran.returncode == 0, out[-4000:]
    assert wall_s < 3 * budget_s, f"the first look took {wall_s:.0f} s, README says {budget_s:.0f} s"

    cases, errors = load_corpus(REPO / "scenes")
    assert not errors
    families = {case.family for case in cases}
    measured = json.loads((tmp_path / "results" / "run.json").read_text())["scenes"]
    by_id = {case.id: case for case in cases}
    assert {by_id[scene["id"]].family for scene in measured} == families  # every family, once each
    assert len(measured) == len(families)
    assert all(scene["runs"] == 1 and not scene.get("adaptive") for scene in measured)  # no ramp, one launch
    line = next((line for line in out.splitlines() if line.startswith("first look: ")), None)
    assert line is not None, out[-4000:]
    estimate = re.search(rf"first look: {len(families)} of {len(cases)} scenes .*; the whole suite with "
                         r"--zbench-quick would take about (\d+m \d\ds|\d+ min|\d+ s)", line)
    assert estimate, line
