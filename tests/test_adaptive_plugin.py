"""Adaptive scenes end to end: real launches of the reference runner planned by the host, the score and its
interval recomputed from the per-frame CSV by a fit written separately here, the properties, the table and
the report; a runner that burns a known time in every frame scores lower in proportion, and the gate judges
it on the score alone: a regression in A/B, inconclusive against a history of one session (its
between-session spread cannot be estimated, as for any metric).

The scene draws tiny rects on a 64x48 surface of a 20 Hz display (a 50 ms budget), on a runner that
busy-waits a known 1 ms per draw call: the score is then about 40 rects on any machine. The busy-wait runs on
the wall clock, so a shared machine's load does not stretch it; what load does stretch is the rest of a frame
(Skia's drawing, the runner's bookkeeping), from under a millisecond on an idle machine to 15 ms per frame
at a load average of 18 on 2 cores, which lowers the score by a third at most. The budget is long enough
for the known costs to dominate and short enough for a launch to take a few seconds.
"""

from __future__ import annotations

import csv
import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from pytest_zbench.host.run_record import validate_run

SCENE = """\
family: dense
scenes:
  - id: dense.rects.adaptive
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
BUDGET_MS = 50.0
PER_DRAW_US = 1000.0
# The known slowdown of the candidate runner: --cpu-burn-ms in every frame, two fifths of the budget.
BURN_MS = 20.0
PLAN = ["--zbench-frames=36", "--zbench-warmup=4", "--zbench-runs=3", "-k", "adaptive"]
RUNNER = "[python, -m, pytest_zbench.runner, --cpu-burn-per-draw-us, '{us}', --cpu-burn-ms, '{ms}']"


def write_inventory(project, **burn_ms: float) -> None:
    """One local device per name, each runner burning PER_DRAW_US per draw and its own ms per frame."""
    lines = ["devices:"]
    for name, ms in burn_ms.items():
        lines += [f"  {name}:", "    transport: local", "    backend: software",
                  f"    runner: {RUNNER.format(us=PER_DRAW_US, ms=ms)}",
                  "    display: {width: 64, height: 48, refresh_hz: 20}"]
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


def predicted_score(adaptive: dict, burn_ms: float) -> float:
    """The score a runner burning `burn_ms` more per frame should get: past the change point a frame costs
    budget + slope x (n - score), so `burn_ms` more reaches the budget `burn_ms / slope` elements earlier."""
    slope = float(np.median([fit["slope_ms"] for fit in adaptive["fit"]["launches"]]))
    return adaptive["score"] - burn_ms / slope


@pytest.mark.acceptance
def test_an_adaptive_scene_scores_with_an_interval_an_independent_fit_reproduces_and_a_burn_lowers_it(
        project, tmp_path):
    adaptive_project(project)
    write_inventory(project, local=0.0)
    history = tmp_path / "history.sqlite"
    junit = tmp_path / "junit.xml"
    result = project.run("--zbench-device=local", *PLAN, f"--junitxml={junit}", f"--zbench-history={history}",
                         "--zbench-update-goldens=missing", goldens=True)
    result.assert_outcomes(passed=2)  # perf (no baseline yet) and golden: captures equal throughout
    document = project.run_json()
    assert validate_run(document) == []
    scene = scene_entry(document)
    adaptive = scene["adaptive"]
    assert scene["mode"] == "uncapped" and adaptive["plan"]["mode"] == "uncapped"
    assert adaptive["unit"] == "rects" and adaptive["budget_ms"] == pytest.approx(BUDGET_MS, abs=1e-3)
    plans = adaptive["plan"]["launches"]
    roles = [p["role"] for p in plans]
    assert roles[-3:] == ["ramp"] * 3 and set(roles[:-3]) == {"search"} and len(roles) == scene["runs"]
    assert adaptive["scored_launches"] == [p["launch"] for p in plans if p["role"] == "ramp"]
    assert all(p["steps"] == plans[-1]["steps"] for p in plans[-3:])  # one plan for every scored launch
    assert all(p["steps"][0] == [50, 1] for p in plans)  # frame 0, the captured one, at the capture complexity
    ramp_levels = [c for c, _ in plans[-1]["steps"][1:]]
    assert ramp_levels == sorted(ramp_levels, reverse=True) and len(ramp_levels) == 36 // 6

    # The known cost bounds the score: 1 ms per rect fills the budget at 50 rects, less the frame's overhead.
    score, ci = adaptive["score"], adaptive["ci"]
    assert 0.4 * BUDGET_MS / (PER_DRAW_US / 1000) < score < 1.05 * BUDGET_MS / (PER_DRAW_US / 1000)
    assert ci[0] <= score <= ci[1] and adaptive["censored"] is None and len(adaptive["per_run_scores"]) == 3

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
    result.stdout.fnmatch_lines([f"{SCENE_ID}*{score:.4g}±*%*new*pass*",
                                 "adaptive scenes: the score is the largest complexity within the frame budget*"])
    report = (project.results / "report.html").read_text()
    assert f"score {score:.4g}" in report and "frame cost (uncapped interval, ms) against complexity" in report
    assert len(list((project.root / "goldens" / "software").glob(f"*/{SCENE_ID}/frame-0.png"))) == 1

    # A new build of the runner on the same device, burning BURN_MS more in every frame: judged against the
    # history by the same rules as any metric, higher being better. One baseline session cannot give the
    # between-session spread, so the verdict is inconclusive with its advice; the effect is measured all the same.
    write_inventory(project, local=BURN_MS)
    result = project.run("--zbench-device=local", *PLAN, f"--zbench-history={history}")
    result.assert_outcomes(passed=1)
    candidate = scene_entry(project.run_json())
    section = candidate["regression"]
    assert section["verdict"] == "inconclusive", section["message"]
    assert "adaptive.score INCONCLUSIVE: " in section["message"] and "\n  candidate " in section["message"]
    assert "one baseline session" in section["message"] and "--zbench-ab" in section["message"]
    assert [m["metric"] for m in section["metrics"]] == ["adaptive.score"]  # per-frame stats not judged
    effect = section["metrics"][0]["effect"]
    assert effect == pytest.approx(candidate["adaptive"]["score"] / score, rel=1e-3)
    expected = predicted_score(adaptive, BURN_MS) / score
    assert 0.6 * expected < effect < 1.5 * expected, (effect, expected)


@pytest.mark.acceptance
def test_ab_of_an_adaptive_scene_ramps_both_runners_through_one_plan(project):
    adaptive_project(project)
    write_inventory(project, local=0.0, burn=BURN_MS)
    # Five launches per side: the fewest for which the permutation test can reach the scene's alpha of 1 %.
    result = project.run("--zbench-device=local", *PLAN, "--zbench-runs=5", "--zbench-ab=burn")
    result.assert_outcomes(failed=1)
    # The verdict's short first line with its direction, then the figures behind it.
    result.stdout.fnmatch_lines(["*adaptive.score REGRESSED*higher is better*",
                                 "*for candidate lower*5 vs 5 launches*"])
    document = project.run_json()
    assert validate_run(document) == []
    scene = scene_entry(document)
    a, ab = scene["adaptive"], scene["ab"]
    b = ab["adaptive_b"]
    searches = [p for p in a["plan"]["launches"] if p["role"] == "search"]
    assert searches and not [p for p in b["plan"]["launches"] if p["role"] == "search"]
    ramp_a = [p["steps"] for p in a["plan"]["launches"] if p["role"] == "ramp"]
    ramp_b = [p["steps"] for p in b["plan"]["launches"] if p["role"] == "ramp"]
    assert len(ramp_a) == len(ramp_b) == 5 and all(steps == ramp_a[0] for steps in ramp_a + ramp_b)
    assert ab["order"] == ["A", "B", "B", "A"] * 2 + ["A", "B"] and ab["pattern"] == "ABBA"
    expected = predicted_score(a, BURN_MS) / a["score"]
    ratio = b["score"] / a["score"]
    assert 0.6 * expected < ratio < 1.5 * expected, (ratio, expected)
