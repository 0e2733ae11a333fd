"""The input-to-photon proxy end to end on `local`: a paced scene with a tap_target, the reference runner's
synthetic taps, and run.json's `input_to_photon` recomputed from the launches' result.json
(docs/methodology.md §13)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pytest_zbench.host.run_record import validate_run

pytestmark = pytest.mark.acceptance

SCENE = """\
family: press
defaults:
  mode: paced
scenes:
  - id: press.tap
    capture: [0, 1]
    ops:
      - {op: tap_target, x: 8, y: 8, w: 40, h: 24, color: "#A8DADC", active_color: "#E63946", tap_every: 4}
"""


def test_a_paced_tap_scene_reports_its_input_to_photon_proxy(project):
    project.write_scene("press.yaml", SCENE)
    result = project.run("--zbench-device=local", "-k", "press", "--zbench-frames=24", "--zbench-warmup=2")
    result.assert_outcomes(passed=1)
    document = project.run_json()
    assert validate_run(document) == []
    scene = next(s for s in document["scenes"] if s["id"] == "press.tap")
    summary = scene["input_to_photon"]
    assert summary["proxy"] is True and "no input device" in summary["definition"]
    launches = []
    for folder in sorted((project.results / "local" / "press.tap").glob("launch-*")):
        raw = json.loads((folder / "result.json").read_text())["input_to_photon"]
        assert raw["tap_every"] == 4
        # Measured frames 2..25 that reflect a tap: 5, 9, ..., 25 (1 is in the warmup).
        assert [f for f, _ in raw["events"]] == [5, 9, 13, 17, 21, 25]
        launches.append([ms for _, ms in raw["events"]])
    assert len(launches) == 2 and summary["taps"] == 12
    # A tap is taken before its frame starts, and the frame presents at a vsync at or after its end. (How many
    # periods that is depends on the machine's load: a late wake-up stamps a tap late; the fake-clock tests in
    # tests/runner/test_input_proxy.py pin the schedule itself.)
    assert all(ms > 0 for ms in np.concatenate(launches))
    everything = np.concatenate(launches)
    assert summary["p50_ms"] == pytest.approx(np.percentile(everything, 50), abs=1e-3)
    assert summary["p95_ms"] == pytest.approx(np.percentile(everything, 95), abs=1e-3)
    assert summary["max_ms"] == pytest.approx(everything.max(), abs=1e-3)
    assert summary["per_run_p50_ms"] == pytest.approx([np.median(e) for e in launches], abs=1e-3)
