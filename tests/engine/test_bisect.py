"""`zbench bisect` on a scratch engine repository (tests/engine/scratch_engine.py): eight commits, one makes
a scene slower, a later one changes a pixel of another scene, one does not build; bisect names both commits
on the local transport, skips the broken one, and leaves nothing deployed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from pytest_zbench.cli import main
from tests.engine.scratch_engine import make_engine_repo

pytestmark = pytest.mark.acceptance

REPO = Path(__file__).resolve().parents[2]

SCENES = """\
family: engine
defaults:
  mode: uncapped
scenes:
  - id: engine.busy
    ops:
      - op: repeat
        count: 40
        dx: 0
        ops:
          - {op: rect, x: 2, y: 2, w: 90, h: 70, color: "#3366CC"}
  - id: engine.flat
    ops:
      - {op: rect, x: 4, y: 4, w: 40, h: 20, color: "#CC3366"}
"""

STEPS = [
    ("start the engine", {}),
    ("tidy the build", {"tidy": 1}),
    ("batch the rects", {"tidy": 1, "grow": {"engine.busy": 1.25}}),
    ("rename a shader", {"tidy": 2, "grow": {"engine.busy": 1.25}}),
    ("break the build for a commit", {"tidy": 2, "grow": {"engine.busy": 1.25}, "broken": True}),
    ("fix the build", {"tidy": 3, "grow": {"engine.busy": 1.25}}),
    ("gamma-correct the flat fill", {"tidy": 3, "grow": {"engine.busy": 1.25},
                                     "recolor": {"engine.flat": "#CC3367"}}),
    ("update the changelog", {"tidy": 4, "grow": {"engine.busy": 1.25}, "recolor": {"engine.flat": "#CC3367"}}),
]


def test_bisect_names_the_slow_commit_and_the_pixel_commit(tmp_path, capsys, monkeypatch):
    shas = make_engine_repo(tmp_path / "engine", sys.executable, STEPS)
    project = tmp_path / "suite"
    (project / "scenes").mkdir(parents=True)
    (project / "scenes" / "engine.yaml").write_text(SCENES)
    (project / "pytest.ini").write_text("[pytest]\ntestpaths = scenes\n")
    device = tmp_path / "device"
    devices = project / "devices.yaml"
    devices.write_text(yaml.safe_dump({"devices": {"box": {
        "transport": "local", "backend": "software", "workdir": str(device), "runner": ["{deployed}/zbench-runner"],
        "display": {"width": 96, "height": 72, "refresh_hz": 60}}}}))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    report = tmp_path / "report"
    status = main(["bisect", shas[0], shas[-1], "--device", "box", "--devices", str(devices),
                   "--repo", str(tmp_path / "engine"), "--build", f"{sys.executable} build.py", "--artifact", "out",
                   "--project", str(project), "--report", str(report),
                   "--pytest-args", "--zbench-runs=5 --zbench-frames=20 --zbench-warmup=3"])
    captured = capsys.readouterr()
    out = captured.out
    print(out, captured.err)
    document = json.loads((report / "bisect.json").read_text())
    findings = {(f["kind"], f["scene"]): f for f in document["findings"]}
    assert set(findings) == {("speed", "engine.busy"), ("pixels", "engine.flat")}, out
    speed = findings[("speed", "engine.busy")]
    assert (speed["status"], speed["first_bad"]["sha"]) == ("culprit", shas[2]), out
    assert speed["effect"]["verdict"] == "regressed" and speed["effect"]["effect"] > 1
    pixels = findings[("pixels", "engine.flat")]
    assert (pixels["status"], pixels["first_bad"]["sha"], pixels["last_good"]["sha"]) == ("culprit", shas[6], shas[5])
    assert f"{shas[2][:12]} 'batch the rects'" in out and f"{shas[6][:12]} 'gamma-correct" in out
    assert status == 0
    assert (report / "bisect.md").read_text().count("culprit") == 2
    # Nothing deployed is left behind, and the user's checkout and worktree list are as they were.
    builds = device / "builds"
    assert not builds.exists() or not any(p.name != "current" for p in builds.iterdir())
    assert "worktree" not in " ".join(p.name for p in (tmp_path / "engine").iterdir())
