"""Adaptive scenes end to end: real launches of the reference runner planned by the host, the score and its
interval recomputed from the per-frame CSV by a fit written separately here, the properties, the table and
the report; a runner with a known cost per draw scores lower in proportion, and the gate calls that a
regression, against the history and in A/B.

The scene draws tiny translucent rects on a 64x48 surface against a 2 ms budget (a few µs each on the
software backend, a few hundred within the budget), so a launch takes a fraction of a second to render. On a
shared 2-core machine a launch's frames are 2-4x slower when other test suites run, and launches of one
session differ as much: the gated tests compare 6 launches per side and a cost per draw that divides the
score by about 3, so that the verdict is about the gate, not the machine's load.
"""

from __future__ import annotations

import csv
import math
import xml.etree.ElementTree as ET

import numpy as np

from pytest_zbench.host.run_record import validate_run

SCENE = """\
family: dense
scenes:
  - id: dense.rects.adaptive
    budget_ms: 2
    complexity: {unit: rects, capture: 50, max: 15000}
    ops:
      - op: repeat
        count: complexity
        columns: 64
        dx: 1
        dy: 0.2
        ops:
          - {op: rect, x: 0, y: 0, w: 1, h: 1, color: "#33669980"}
"""
SCENE_ID = "dense.rects.adaptive"
PLAN = ["--zbench-frames=48", "--zbench-warmup=4", "-k", "adaptive"]
GATED = ["--zbench-runs=6", *PLAN]
# A few times the cost of one of these rects (busy-waited in wall time, so its share does not grow with the
# machine's load as the rendering's does): a score between a fifth and a half as high.
BURN_US = 20.0
RUNNER = "[python, -m, pytest_zbench.runner, --cpu-burn-per-draw-us, '{us}']"


def write_inventory(project, **burn_us: float) -> None:
    lines = ["devices:"]
    for name, us in burn_us.items():
        lines += [f"  {name}:", "    transport: local", "    backend: software",
                  f"    runner: {RUNNER.format(us=us)}", "    display: {width: 64, height: 48, refresh_hz: 60}"]
    (project.root / "devices.yaml").write_text("\n".join(lines) + "\n")


def adaptive_project(project):
    project.write_scene("dense.yaml", SCENE)
    return project


def scene_entry(document: dict) -> dict:
    return next(s for s in document["scenes"] if s["id"] == SCENE_ID)


# --- an independent recomputation: its own grouping, a brute-force change point, its own bootstrap ------------


def settled_medians(rows: list[dict], settle: int) -> dict[float, tuple[float, int]]:
    """complexity -> (median interval, frames) over the measured frames whose `settle` predecessors (by frame
    number, warmup included) all had the same complexity."""
    by_frame = {int(r["frame"]): float(r["complexity"]) for r in rows}
    groups: dict[float, list[float]] = {}
    for r in rows:
        f, c = int(r["frame"]), float(r["complexity"])
        if r["phase"] != "measure" or not r["present_interval_ms"]:
            continue
        if all(by_frame.get(f - k) == c for k in range(1, settle + 1) if f - k >= 0):
            groups.setdefault(c, []).append(float(r["present_interval_ms"]))
    return {c: (float(np.median(v)), len(v)) for c, v in groups.items()}


def brute_force_score(medians: dict[float, tuple[float, int]], budget: float, grid: int = 40001) -> float:
    x = np.array(sorted(medians))
    y = np.array([medians[c][0] for c in x])
    w = np.array([medians[c][1] for c in x], dtype=float)
    r = np.maximum(y, budget) - budget
    s_grid = np.linspace(0.0, x.max(), grid)
    h = np.maximum(0.0, x[None, :] - s_grid[:, None])
    hh = np.sum(w * h * h, axis=1)
    t = np.where(hh > 0, np.maximum(0.0, np.sum(w * r * h, axis=1) / np.where(hh > 0, hh, 1)), 0.0)
    sse = np.sum(w * (r[None, :] - t[:, None] * h) ** 2, axis=1)
    return float(s_grid[int(np.argmin(sse))])


def bootstrap(values: list[float], resamples: int, confidence: float, seed: int) -> tuple[float, float]:
    v = np.array(values)
    picks = np.random.default_rng(seed).integers(0, len(v), size=(resamples, len(v)))
    medians = np.median(v[picks], axis=1)
    return (float(np.quantile(medians, (1 - confidence) / 2)), float(np.quantile(medians, (1 + confidence) / 2)))


def test_an_adaptive_scene_reports_a_score_with_an_interval_that_an_independent_fit_reproduces(project, tmp_path):
    adaptive_project(project)
    junit = tmp_path / "junit.xml"
    result = project.run("--zbench-device=local", "--zbench-runs=3", *PLAN, f"--junitxml={junit}",
                         "--zbench-update-goldens=missing", goldens=True)
    result.assert_outcomes(passed=2)  # perf and golden: captures equal across every launch and plan
    document = project.run_json()
    assert validate_run(document) == []
    scene = scene_entry(document)
    adaptive = scene["adaptive"]
    assert scene["mode"] == "uncapped" and adaptive["plan"]["mode"] == "uncapped"
    assert adaptive["unit"] == "rects" and adaptive["budget_ms"] == 2
    plans = adaptive["plan"]["launches"]
    roles = [p["role"] for p in plans]
    assert roles[-3:] == ["ramp"] * 3 and set(roles[:-3]) == {"search"} and len(roles) == scene["runs"]
    assert adaptive["scored_launches"] == [p["launch"] for p in plans if p["role"] == "ramp"]
    assert all(p["steps"] == plans[-1]["steps"] for p in plans[-3:])  # one plan for every scored launch
    assert all(p["steps"][0] == [50, 1] for p in plans)  # frame 0, the captured one, at the capture complexity
    ramp_levels = [c for c, _ in plans[-1]["steps"][1:]]
    assert ramp_levels == sorted(ramp_levels, reverse=True) and len(ramp_levels) == 48 // 6

    score, ci = adaptive["score"], adaptive["ci"]
    assert 20 < score < 15000 and ci[0] <= score <= ci[1] and adaptive["censored"] is None
    assert len(adaptive["per_run_scores"]) == 3

    # Recompute from the per-frame CSV alone.
    rows = list(csv.DictReader(open(project.results / scene["samples_file"])))
    settle = adaptive["plan"]["settle_frames"]
    recomputed = []
    for launch, fit in zip(adaptive["scored_launches"], adaptive["fit"]["launches"]):
        medians = settled_medians([r for r in rows if int(r["launch"]) == launch], settle)
        assert sorted(medians) == [p[0] for p in fit["points"]]
        for c, ms, frames in fit["points"]:
            assert medians[c][1] == frames and math.isclose(medians[c][0], ms, rel_tol=1e-5, abs_tol=1e-5)
        recomputed.append(brute_force_score(medians, adaptive["budget_ms"]))
    resolution = max(ramp_levels) / 40000 + 1e-3
    for mine, theirs in zip(recomputed, adaptive["per_run_scores"]):
        assert abs(mine - theirs) <= 2 * resolution, (recomputed, adaptive["per_run_scores"])
    assert abs(float(np.median(recomputed)) - score) <= 2 * resolution
    lo, hi = bootstrap(recomputed, adaptive["resamples"], adaptive["confidence"], adaptive["seed"])
    assert abs(lo - ci[0]) <= 2 * resolution and abs(hi - ci[1]) <= 2 * resolution

    props = {p.get("name"): p.get("value") for case in ET.parse(junit).getroot().iter("testcase")
             if case.get("name") == f"perf[{SCENE_ID}-local]" for p in case.iter("property")}
    assert float(props["adaptive_score"]) == score and props["adaptive_unit"] == "rects"
    assert float(props["adaptive_ci_low"]) == ci[0] and float(props["adaptive_ci_high"]) == ci[1]
    assert props["mode"] == "uncapped" and "frame_ms_p50" not in props  # per-frame stats mix complexities
    result.stdout.fnmatch_lines([f"local*{SCENE_ID}*{scene['runs']}/{scene['runs']}*{score:.4g}±*%*-*-*passed*passed",
                                 "adaptive scenes: 'frame p50' is the score*"])
    report = (project.results / "report.html").read_text()
    assert f"score {score:.4g}" in report and "frame cost (uncapped interval, ms) against complexity" in report
    assert (project.root / "goldens" / "software" / "any" / SCENE_ID / "frame-0.png").is_file()


def predicted_ratio(adaptive: dict, burn_us: float) -> float:
    """Score with a burn / score without: with frame cost a + slope * n, the budget is reached at
    (budget - a) / slope, so burning `burn_us` per draw multiplies the score by slope / (slope + burn)."""
    slope = float(np.median([fit["slope_ms"] for fit in adaptive["fit"]["launches"]]))
    return slope / (slope + burn_us / 1000.0)


def test_a_runner_with_a_cost_per_draw_scores_lower_in_proportion_and_is_regressed(project, tmp_path):
    adaptive_project(project)
    history = tmp_path / "history.sqlite"
    write_inventory(project, local=0.0)
    project.run("--zbench-device=local", *GATED, f"--zbench-history={history}"
                ).assert_outcomes(passed=1, warnings=1)  # no baseline yet
    baseline = scene_entry(project.run_json())["adaptive"]

    # A new build of the runner on the same device, spending BURN_US more per draw.
    write_inventory(project, local=BURN_US)
    result = project.run("--zbench-device=local", *GATED, f"--zbench-history={history}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        f"*scene {SCENE_ID} on device local: scene verdict: regressed*",
        "*adaptive.score REGRESSED: candidate * vs baseline *: effect 0.*x (-*%); 95% CI 0.*x..0.*x; "
        "Mann-Whitney p=0.0* (one-sided, candidate lower; *; 6 vs 6 launches; alpha 0.05); "
        "bar +15.0% = max(threshold 15%, *); baseline: 1 run(s) of dense.rects.adaptive on local/software*",
    ])
    document = project.run_json()
    assert validate_run(document) == []
    scene = scene_entry(document)
    section = scene["regression"]
    assert [m["metric"] for m in section["metrics"]] == ["adaptive.score"]  # per-frame stats not judged
    effect = section["metrics"][0]["effect"]
    assert effect == scene["adaptive"]["score"] / baseline["score"]
    expected = predicted_ratio(baseline, BURN_US)
    assert effect < 1 / 1.15
    assert 0.5 * expected < effect < 2 * expected, (effect, expected)


def test_ab_of_an_adaptive_scene_ramps_both_runners_through_one_plan(project):
    adaptive_project(project)
    write_inventory(project, local=0.0, burn=BURN_US)
    result = project.run("--zbench-device=local", *GATED, "--zbench-ab=burn")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*adaptive.score REGRESSED*(one-sided, candidate lower;*6 vs 6 launches*"])
    document = project.run_json()
    assert validate_run(document) == []
    scene = scene_entry(document)
    a, ab = scene["adaptive"], scene["ab"]
    b = ab["adaptive_b"]
    searches = [p for p in a["plan"]["launches"] if p["role"] == "search"]
    assert searches and not [p for p in b["plan"]["launches"] if p["role"] == "search"]
    ramp_a = [p["steps"] for p in a["plan"]["launches"] if p["role"] == "ramp"]
    ramp_b = [p["steps"] for p in b["plan"]["launches"] if p["role"] == "ramp"]
    assert len(ramp_a) == len(ramp_b) == 6 and all(steps == ramp_a[0] for steps in ramp_a + ramp_b)
    assert ab["order"] == ["A", "B"] * 6
    ratio = b["score"] / a["score"]
    expected = predicted_ratio(a, BURN_US)
    assert 0.5 * expected < ratio < 2 * expected, (ratio, expected)
