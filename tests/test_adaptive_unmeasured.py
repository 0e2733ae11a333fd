"""An adaptive score that could not be measured says so, with its reason, in the terminal table and report.html,
instead of a score of 0 beside a passing result."""

from __future__ import annotations

import html

from pytest_zbench.adaptive_score import StepPoint, fit_hinge, not_measured
from pytest_zbench.host.measure.results import AdaptiveResult, LaunchPlan
from pytest_zbench.host.report.html import write_report
from pytest_zbench.host.report.terminal_table import summary_lines
from pytest_zbench.scenes import ComplexitySpec

BUDGET = 16.6667


def adaptive_section(costs: dict[int, float]) -> dict:
    """run.json's `adaptive` section of two ramp launches whose steps cost `costs` (complexity -> ms), through
    the real fit and summary (AdaptiveResult.finish, to_json)."""
    result = AdaptiveResult(ComplexitySpec("rects", 10, 1000), BUDGET)
    points = [StepPoint(float(c), ms, 20) for c, ms in costs.items()]
    for launch in (0, 1):
        result.plans[launch] = LaunchPlan("ramp", 0, tuple(float(c) for c in costs for _ in range(20)), 20)
        if points:  # no step at all: the launch was never complete, so it has no fit
            result.fits[launch] = fit_hinge(points, BUDGET)
    result.finish()
    return result.to_json()


def entry(section: dict) -> dict:
    return {"id": "fill.alpha.adaptive", "device": "local", "backend": "software", "mode": "uncapped", "runs": 2,
            "complete_runs": 2, "budget_ms": BUDGET, "measured_frames": 60, "warmup_frames": 5,
            "metrics": {"cpu_ms": {"p50": 30.0}, "frame_ms": {"p50": 30.0}}, "regression": None,
            "outcome": "passed", "correctness": {"outcome": "passed"}, "adaptive": section}


def unwrapped(lines: list[str]) -> str:
    """The table's notes as one text: a note longer than the width goes on over indented lines."""
    return " ".join(line.strip() for line in lines)


def test_a_device_over_budget_at_every_complexity_has_no_score_to_pass_with(tmp_path):
    # Every step is over the 16.7 ms budget and the cost line (20 ms + 0.01 ms per rect) stays over it down to
    # no rects: the fit sits on its bound, score 0, which the table showed as "0" beside "pass".
    section = adaptive_section({100: 21.0, 200: 22.0, 400: 24.0})
    assert section["score"] == 0
    reason = not_measured(section)
    assert reason is not None and "down to complexity 100" in reason and "never within its frame budget" in reason

    lines = summary_lines([entry(section)], width=200)
    row = next(line for line in lines if line.startswith("fill.alpha.adaptive"))
    assert "not measured" in row and " 0 " not in row
    assert f"fill.alpha.adaptive on local: adaptive score not measured: {reason}" in unwrapped(lines)

    document = {"run_id": "r", "started_utc": "t", "app": {}, "gpu": {}, "display": {}, "device": {"id": "local"},
                "scenes": [entry(section)]}
    text = write_report(document, tmp_path, tmp_path / "report.html").read_text()
    assert f"score not measured: {html.escape(reason)}" in text  # the overview row and the chart's caption
    assert "score 0 " not in text


def test_a_scene_without_a_scored_launch_gives_the_note_of_run_json_as_its_reason():
    section = adaptive_section({})  # no ramp fitted: finish() leaves the score out
    assert section["score"] is None
    lines = summary_lines([entry(section)], width=200)
    assert ("fill.alpha.adaptive on local: adaptive score not measured: no complete ramp launch: no score"
            in unwrapped(lines))


def test_a_measured_score_is_shown_as_before():
    # Within budget up to 200 rects, then 0.05 ms per rect: the change point is measured inside the ramp.
    section = adaptive_section({100: 10.0, 200: 16.0, 400: 26.0, 800: 46.0})
    assert not_measured(section) is None and section["score"] > 100
    lines = summary_lines([entry(section)], width=200)
    assert not any("not measured" in line for line in lines)
