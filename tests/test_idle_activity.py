"""The idle scene's own metric end to end on `local`: the reference runner reports its CPU time and wake-ups
over the measured frames, and run.json and the JUnit properties carry them as rates per second
(docs/methodology.md, "Idle: wake-ups and CPU time per second")."""

from __future__ import annotations

import statistics
import xml.etree.ElementTree as ET

import pytest

from pytest_zbench.host.run_record import validate_run

pytestmark = pytest.mark.acceptance

SCENE = """\
family: calm
defaults:
  mode: paced
scenes:
  - id: calm.pulse
    ops:
      - {op: rrect, x: {anim: sine, center: 50%, amplitude: 20%, period: 12}, y: 40%, w: 8, h: 8, radius: 2,
         color: "#E63946"}
"""


def test_a_paced_scene_reports_wake_ups_and_cpu_time_per_second(project, tmp_path):
    project.write_scene("calm.yaml", SCENE)
    junit = tmp_path / "junit.xml"
    result = project.run("--zbench-device=local", "-k", "calm", "--zbench-frames=30", f"--junitxml={junit}")
    result.assert_outcomes(passed=1)
    document = project.run_json()
    assert validate_run(document) == []
    scene = next(s for s in document["scenes"] if s["id"] == "calm.pulse")
    launches = [launch["activity"] for launch in scene["launches"]]
    assert len(launches) == 2 and all(a is not None and a["source"] == "getrusage" for a in launches)
    frame_period_ms = 1000.0 / 60
    for a in launches:
        # The window is the 30 measured frames of a 60 Hz pacer: at least 29 periods of wall time.
        assert a["wall_ms"] >= 29 * frame_period_ms
        assert a["wakeups_per_s"] == pytest.approx(a["voluntary_switches"] * 1000.0 / a["wall_ms"], rel=1e-3)
        assert a["cpu_ms_per_s"] == pytest.approx(a["cpu_ms"] * 1000.0 / a["wall_ms"], rel=1e-3, abs=1e-3)
        # A paced runner drawing one small square sleeps until its next frame: it wakes, it is not busy.
        assert a["voluntary_switches"] >= 1 and a["cpu_ms"] < 2 * a["wall_ms"]
    activity = scene["activity"]
    assert activity["launches"] == 2 and activity["source"] == "getrusage"
    assert activity["wakeups_per_s"] == pytest.approx(statistics.median(a["wakeups_per_s"] for a in launches),
                                                      abs=1e-3)
    assert activity["cpu_ms_per_s"] == pytest.approx(statistics.median(a["cpu_ms_per_s"] for a in launches),
                                                     abs=1e-3)
    props = {p.get("name"): p.get("value") for case in ET.parse(junit).getroot().iter("testcase")
             if case.get("name") == "perf[calm.pulse-local]" for p in case.iter("property")}
    assert float(props["wakeups_per_s"]) == activity["wakeups_per_s"]
    assert float(props["cpu_ms_per_s"]) == activity["cpu_ms_per_s"]
