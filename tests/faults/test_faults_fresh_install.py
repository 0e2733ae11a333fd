"""A newcomer's install: a fresh virtual environment with only `pip install <this checkout>`, and an empty
folder holding one scene file; `pytest` there runs it on `local`, the embedded default (no devices.yaml, no
extras). Slow: pip fetches skia-python, numpy and scipy (about 80 s on the project's machine)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
SCENE = """\
family: one
scenes:
  - id: one.a
    ops: [{op: rect, x: 1, y: 1, w: "100% - 2", h: "100% - 2", color: "#3366CC"}]
"""


@pytest.mark.acceptance
def test_pip_install_into_a_fresh_venv_runs_a_scene_on_local(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # Nothing of this checkout's environment: the installed package is the one imported.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "COVERAGE_PROCESS_START")}
    # A copy of the checkout: setuptools builds in the source folder (build/, *.egg-info), which must not be
    # this checkout.
    source = tmp_path / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "*.egg-info", ".mypy_cache", ".ruff_cache", "__pycache__", ".zbench",
        "zbench-results"))
    installed = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                                str(source)], env=env, capture_output=True, text=True, timeout=1200)
    assert installed.returncode == 0, installed.stderr[-3000:]
    project = tmp_path / "project"
    (project / "scenes").mkdir(parents=True)
    (project / "scenes" / "one.yaml").write_text(SCENE)
    ran = subprocess.run([str(venv / "bin" / "pytest"), "--zbench-quick", "--zbench-update-goldens=missing",
                          "-p", "no:cacheprovider"], cwd=project, env=env, capture_output=True, text=True,
                         timeout=600)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert "2 passed" in ran.stdout
    document = json.loads((project / "zbench-results" / "run.json").read_text())
    assert [(s["id"], s["device"], s["outcome"]) for s in document["scenes"]] == [("one.a", "local", "passed")]
