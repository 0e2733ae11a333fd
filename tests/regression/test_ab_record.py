"""An A/B scene's record of B is as complete as A's: run.json `ab.metrics_b` holds the scene-level figures A's
`metrics` holds (jank, jank share, slow and frozen frames, counters, fps, overrun), not only the timing series.
Before, B had cpu_ms, frame_ms and interval_ms alone."""

from __future__ import annotations

from test_gate_plugin import write_inventory

from pytest_zbench.stats import SCENE_FIGURES


def test_b_has_every_scene_figure_a_has(project):
    write_inventory(project, local=0)
    project.run("--zbench-mode=uncapped", "-k", "mini.fill.x1",
                "--zbench-ab=python -m pytest_zbench.runner --cpu-burn-ms 0").assert_outcomes(passed=1)
    (scene,) = [s for s in project.run_json()["scenes"] if s["id"] == "mini.fill.x1"]
    a, b = scene["metrics"], scene["ab"]["metrics_b"]
    assert set(a) == set(b), set(a) ^ set(b)
    for name in SCENE_FIGURES:
        assert name in b, name
    assert isinstance(b["jank_share"], float) and isinstance(b["fps"], float) and b["fps"] > 0
    assert b["cpu_ms"]["runs"] == scene["ab"]["complete_runs_b"]
