"""The sequential gate end to end (docs/regression.md, "The sequential gate"): one A/B session under a budget in
which B is the reference runner burning 3 ms per frame in one scene only. The unchanged scene stops before its
maximum of launches, decided `same` or stopped `futile`; the burned one is decided `regressed`; run.json records
both scenes' looks.

Statistical, not timed: small uncapped scenes (160x120, 10 + 300 frames of well under 1 ms, so a launch's frames
take tens of ms and its process start dominates), a 3 ms burn. The gate judges the median frame alone, at a bar
of 25 %: on this shared machine a launch's p95 and jank share move by several times from launch to launch (one
preempted launch). With 300 frames a launch, as a real launch has (the default is 600), the launch median is a
median of enough frames; what is left is the launches' own spread, which on this machine is two speeds 1.5x
apart in blocks of a few launches (0.059 or 0.09 ms a frame for the unchanged scene). The unchanged scene then
either comes inside the bar (`same`) or its interval stays so wide that its maximum could not decide it
(`futile`): both before its maximum. The burn is past the bar many times over.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from pytest_zbench.host.run_record import validate_run
from pytest_zbench.settings import DEFAULT_MAX_LAUNCHES

pytestmark = [pytest.mark.acceptance, pytest.mark.exclusive]

SLOW, UNCHANGED = "mini.fill.x1", "mini.fill.x2"
MAX_LAUNCHES = DEFAULT_MAX_LAUNCHES
# The reference runner, with --cpu-burn-ms 3 for the jobs of the scene named first (the job names its scene).
# A runs it too, naming no scene: both sides start the same way, so the unchanged scene is A/A.
BURN_ONE_SCENE = """\
import json, runpy, sys
slowed, args = sys.argv[1], sys.argv[2:]
burn = []
if args[:1] == ["run"]:
    with open(args[1], encoding="utf-8") as job:
        if json.load(job)["scene"]["id"] == slowed:
            burn = ["--cpu-burn-ms", "3"]
sys.argv = ["pytest_zbench.runner", *burn, *args]
runpy.run_module("pytest_zbench.runner", run_name="__main__")
"""


def test_an_unchanged_scene_stops_early_and_a_burned_one_is_regressed(project, tmp_path):
    (project.root / "burn_one_scene.py").write_text(BURN_ONE_SCENE)
    wrapper = str(project.root / "burn_one_scene.py")
    (project.root / "devices.yaml").write_text(
        "devices:\n"
        + "".join(f"  {name}:\n    transport: local\n    backend: software\n"
                  f"    runner: [python, {wrapper!r}, {slowed!r}]\n"
                  "    display: {width: 160, height: 120, refresh_hz: 60}\n"
                  for name, slowed in (("local", "none"), ("burn", SLOW))))
    result = project.run("--zbench-frames=300", "--zbench-warmup=10", "--zbench-mode=uncapped",
                         "--zbench-ab=burn", "--zbench-gate-metrics=cpu_ms.p50", "--zbench-threshold=0.25",
                         "--zbench-budget=5", f"--junitxml={tmp_path / 'junit.xml'}",
                         f"--zbench-max-launches={MAX_LAUNCHES}",
                         "-k", f"{SLOW} or {UNCHANGED}")
    document = project.run_json()
    assert validate_run(document) == []
    scenes = {scene["id"]: scene for scene in document["scenes"]}
    assert set(scenes) == {SLOW, UNCHANGED}

    slow = scenes[SLOW]
    assert slow["regression"]["verdict"] == "regressed", slow["regression"]["message"]
    assert slow["sequential"]["stopped"] == "decided"
    assert slow["sequential"]["looks"][-1]["verdict"] == "regressed"

    unchanged = scenes[UNCHANGED]
    verdict, sequential = unchanged["regression"]["verdict"], unchanged["sequential"]
    # Never a change it does not have, however the launches spread.
    assert verdict in ("same", "inconclusive"), unchanged["regression"]["message"]
    # It stops before its maximum: decided `same`, or `futile` when its intervals say the maximum could not
    # decide it. On this shared machine a launch of this scene runs at one of two speeds 1.5x apart, in blocks
    # of a few launches whatever the vCPU or the address layout (docs/regression.md, the end-to-end test), so
    # its first 4 + 4 launches can read 0.68x or 1.49x and its interval stay wide: then it stops `futile`.
    assert (sequential["stopped"], verdict) in (("decided", "same"), ("futile", "inconclusive")), (
        sequential, unchanged["regression"]["message"])
    assert sequential["launches_a"] < MAX_LAUNCHES and sequential["launches_b"] < MAX_LAUNCHES
    # run.json's launches are the ones the looks judged, in the order they ran (rounds of A, B, B, A)
    assert len(unchanged["per_run"]) == sequential["launches_a"]
    assert unchanged["ab"]["order"][:4] == ["A", "B", "B", "A"]
    for scene in (slow, unchanged):
        looks = scene["sequential"]["looks"]
        assert [look["index"] for look in looks] == list(range(len(looks)))
        # each look's level is what the spending leaves it, never past the alpha of one direction (the levels
        # need not rise: the permutation test's discreteness leaves some looks less to spend than the one before)
        levels = [look["nominal_alpha"] for look in looks]
        assert all(0 <= level <= scene["sequential"]["alpha_per_direction"] for level in levels)
        assert all(look["verdict"] == "inconclusive" for look in looks[:-1])
        assert 0 < looks[-1]["launches_a"] <= MAX_LAUNCHES
    # The looks where people read them: JUnit properties of each perf test, and the report's scene section
    for case in ET.parse(tmp_path / "junit.xml").iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        scene = next(s for s in (slow, unchanged) if s["id"] == props["zbench_scene"])
        assert props["sequential_stopped"] == scene["sequential"]["stopped"]
        assert int(props["sequential_looks"]) == len(scene["sequential"]["looks"])
        assert int(props["sequential_launches_a"]) == scene["sequential"]["launches_a"]
        assert props["sequential_trail"].split("; ")[-1].split(" ")[1] == scene["sequential"]["looks"][-1]["verdict"]
    report = (project.results / "report.html").read_text()
    assert report.count("<table class=looks>") == 2
    assert "sequential gate: decided regressed at look " in report
    result.assert_outcomes(passed=1, failed=1)  # the regressed scene fails its perf test
