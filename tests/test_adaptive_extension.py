"""An adaptive scene whose device is still within budget at the scene's `max`: the controller searches past
it (docs/methodology.md §10, "Past max") and the score is finite, beyond `max`, with run.json saying so.

The runner busy-waits a known 1 ms per draw on a 20 Hz display (a 50 ms budget, as in
test_adaptive_plugin.py), so the score is about 40 rects on any machine, and load lowers it by a third at
most; the scene's max of 12 is well under it, and its repeat can draw 100,000.
"""

from __future__ import annotations

import pytest

from pytest_zbench.host.run_record import validate_run

pytestmark = pytest.mark.acceptance

SCENE = """\
family: dense
scenes:
  - id: dense.rects.adaptive
    complexity: {unit: rects, capture: 10, max: 12}
    ops:
      - op: repeat
        count: complexity
        columns: 64
        dx: 1
        dy: 0.2
        ops:
          - {op: rect, x: 0, y: 0, w: 1, h: 1, color: "#33669980"}
"""
MAX = 12
INVENTORY = """\
devices:
  local:
    transport: local
    backend: software
    runner: [python, -m, pytest_zbench.runner, --cpu-burn-per-draw-us, '1000']
    display: {width: 64, height: 48, refresh_hz: 20}
"""


def test_a_device_within_budget_at_max_gets_a_finite_score_past_it(project):
    project.write_scene("dense.yaml", SCENE)
    (project.root / "devices.yaml").write_text(INVENTORY)
    result = project.run("--zbench-device=local", "--zbench-frames=36", "--zbench-warmup=4", "--zbench-runs=1",
                         "-k", "adaptive")
    result.assert_outcomes(passed=1)
    document = project.run_json()
    assert validate_run(document) == []
    adaptive = next(s for s in document["scenes"] if s["id"] == "dense.rects.adaptive")["adaptive"]
    extension = adaptive["plan"]["extension"]
    assert extension["max_complexity"] == MAX and extension["limit"] == 100_000
    assert extension["stopped"] == "budget" and extension["reached"] > MAX
    searched = [c for launch in adaptive["plan"]["launches"] if launch["role"] == "search"
                for c, _ in launch["steps"]]
    assert max(searched) == extension["reached"]
    # The ramp crosses the budget, so the score is a change point, not the censored lower bound `>= max`.
    assert adaptive["censored"] is None and adaptive["note"] is None
    assert adaptive["score"] > MAX
    ramp = next(launch for launch in adaptive["plan"]["launches"] if launch["role"] == "ramp")
    assert max(c for c, _ in ramp["steps"]) > adaptive["score"]
