"""The terminal table from run.json entries: fits the width, failures first, says nothing twice."""

from __future__ import annotations

from pytest_zbench.host.report.terminal_table import summary_lines


def entry(scene_id: str, *, device: str = "local", cpu: float = 1.0, frame=(16.67, 16.67, 16.67), gpu=None,
          verdict: str | None = "same", outcome: str = "passed", golden: str = "passed", runs: int = 5,
          complete: int = 5, jank: int = 0, unreliable=None) -> dict:
    regression = None if verdict is None else {
        "verdict": verdict, "metrics": [{"metric": "cpu_ms.p50", "effect": 1.3 if verdict == "regressed" else 1.01,
                                         "verdict": verdict, "more_launches": 9, "n_baseline": complete,
                                         "n_candidate": complete}]}
    cpu_ms = {"p50": cpu, "p95": cpu * 1.4}
    if unreliable:
        cpu_ms["unreliable"] = unreliable
    return {
        "id": scene_id, "device": device, "backend": "software", "mode": "paced", "runs": runs,
        "complete_runs": complete, "budget_ms": 16.6667, "measured_frames": 600, "warmup_frames": 60,
        "metrics": {"cpu_ms": cpu_ms, "gpu_ms": {} if gpu is None else {"p50": gpu},
                    "frame_ms": dict(zip(("p50", "p95", "p99"), frame)), "jank": jank, "jank_share": jank / 600},
        "regression": regression, "outcome": outcome, "correctness": {"outcome": golden},
        "history": {"recorded": True, "path": ".zbench/history.sqlite"}, "gpu_valid": None if gpu is None else True,
    }


def suite(device: str, gpu: bool) -> list[dict]:
    """The shape of the default suite: 42 scenes with the longest ids it has."""
    ids = [f"texture.every_frame.s{n}" for n in range(10)] + [f"drawcalls.rects.n{n}" for n in range(32)]
    return [entry(i, device=device, cpu=0.4 + n * 0.9, gpu=0.2 + n if gpu else None,
                  frame=(16.67, 16.67 + n % 3 * 8.3, 33.3 + n), jank=n % 4) for n, i in enumerate(ids)]


def test_the_default_suite_fits_100_columns_on_local_and_local_gles2():
    for device, gpu in (("local", False), ("local-gles2", True)):
        lines = summary_lines(suite(device, gpu), width=100)
        assert max(map(len, lines)) <= 100, "\n".join(lines)
        assert lines[0].startswith(f"{device}: software")  # one device: named once, above the table
        header = lines[2]
        assert "device" not in header and ("p50" in header)
        assert ("gpu ms" in lines[1]) == gpu  # no GPU time: no column of dashes


def test_both_devices_in_one_table_still_fit_and_name_the_device():
    lines = summary_lines(suite("local", False) + suite("local-gles2", True), width=100)
    assert max(map(len, lines)) <= 100, "\n".join(lines)
    assert lines[3].startswith("device")
    narrow = summary_lines(suite("local", False) + suite("local-gles2", True), width=80)
    assert max(map(len, narrow)) <= 80, "\n".join(narrow)
    assert any(line.startswith("left out to fit 80 columns: frame p95") for line in narrow), narrow


def test_regressed_and_failed_first_then_inconclusive():
    scenes = [entry("a.same"), entry("b.inconclusive", verdict="inconclusive"), entry("c.regressed", verdict="regressed"),
              entry("d.golden_failed", golden="failed"), entry("e.same")]
    rows = [line.split()[0] for line in summary_lines(scenes) if line.split() and "." in line.split()[0]]
    assert rows[:4] == ["c.regressed", "d.golden_failed", "b.inconclusive", "a.same"]
    table = "\n".join(summary_lines(scenes))
    assert "regressed 1.30x" in table and "FAIL golden" in table and "inconcl. 1.01x" in table


def test_first_run_is_one_line_and_a_constant_paced_column_is_a_note():
    scenes = [entry(f"s.{n}", verdict="no_baseline", frame=(16.67, 16.67 + n, 20 + n)) for n in range(5)]
    lines = summary_lines(scenes)
    about_baselines = [line for line in lines if "baseline" in line]
    assert about_baselines == ["5 scene(s) had no baseline yet (first run): recorded in .zbench/history.sqlite"]
    assert "frame p50 16.7 ms in every scene" in lines
    assert "p95" in lines[2] and lines[2].count("p50") == 1  # cpu p50 kept, frame p50 collapsed


def test_inconclusive_scenes_are_one_line_with_the_launches_that_would_decide_them():
    """The launches a side in all, as run.json's more_launches plus those made (the Markdown summary's figure):
    before, the terminal printed the 9 still needed as the total."""
    lines = summary_lines([entry(f"s.{n}", verdict="inconclusive", runs=2, complete=2) for n in range(4)])
    assert any(line.startswith("4 scene(s) inconclusive with 2 launches; about 11 launches per side "
                               "(--zbench-runs=11)") for line in lines), lines


def test_unreliable_percentiles_are_marked_and_colour_comes_from_the_markup():
    scenes = [entry("a", unreliable=["p95"]), entry("b", verdict="regressed", outcome="failed")]
    styled = summary_lines(scenes, markup=lambda text, style: f"<{style}>{text}</{style}>" if style else text)
    row_a = next(line for line in styled if line.startswith("a "))
    assert "1.40~" in row_a and "1.00~" not in row_a
    row_b = next(line for line in styled if line.startswith("b "))
    assert "<red>regressed 1.30x" in row_b and "<red>FAIL perf" in row_b


def test_partial_launches_keep_the_runs_column():
    lines = summary_lines([entry("a"), entry("b", complete=4)])
    assert "runs" in lines[2] and "4/5" in "\n".join(lines)


def test_an_adaptive_scene_shows_its_score_and_a_table_without_one_has_no_score_column():
    fixed = [entry(f"fill.alpha.x{n}", cpu=1.0 + n) for n in (1, 2, 4)]
    adaptive = entry("fill.alpha.adaptive", verdict="regressed")
    adaptive["regression"]["metrics"] = [{"metric": "adaptive.score", "effect": 0.8, "verdict": "regressed"}]
    adaptive["adaptive"] = {"score": 1234.0, "ci": [1210.0, 1272.0], "censored": None}
    lines = summary_lines([*fixed, adaptive], width=100)
    assert max(map(len, lines)) <= 100, "\n".join(lines)
    assert "score" in lines[2]
    row = next(line for line in lines if line.startswith("fill.alpha.adaptive"))
    assert "1234±2.5%" in row and "regressed 0.80x score" in row and "1.00" not in row  # per-frame statistics: "-"
    assert any(line.startswith("adaptive scenes: the score is the largest complexity") for line in lines)
    plain = summary_lines(fixed, width=100)
    assert "score" not in plain[2] and not any(line.startswith("adaptive scenes") for line in plain)


def test_a_warmup_of_zero_is_recorded_and_noted(project):
    """--zbench-warmup=0: cold frames enter the statistics; run.json and the terminal say so."""
    result = project.run("--zbench-warmup=0", "-k", "mini.fill.x1")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*warm-up 0 (--zbench-warmup=0): the first frames are measured cold in 1 scene(s)*"])
    (scene,) = project.run_json()["scenes"]
    assert scene["warmup_frames"] == 0 and any(n.startswith("warm-up 0:") for n in scene["notes"])


def test_slow_and_frozen_frames_sit_beside_jank():
    scenes = [dict(entry("a.smooth")), dict(entry("b.stalls", jank=5))]
    scenes[0]["metrics"].update(slow_frames=0, frozen_frames=0)
    scenes[1]["metrics"].update(slow_frames=4, frozen_frames=1)
    lines = summary_lines(scenes, width=100)
    header = next(line for line in lines if "jank" in line)
    assert header.index("jank") < header.index("slow/frz")
    rows = {line.split()[0]: line for line in lines if line.split() and line.split()[0] in ("a.smooth", "b.stalls")}
    assert "0/0" in rows["a.smooth"] and "4/1" in rows["b.stalls"]
    # Entries without the counts (an older run.json) show no column of dashes.
    assert "slow/frz" not in "\n".join(summary_lines([entry("c.old")]))


def test_scenes_the_sequential_gate_left_undecided_point_at_its_maximum_and_budget():
    scenes = [dict(entry(f"s.{n}", verdict="inconclusive", runs=12, complete=12),
                   sequential={"stopped": stopped}) for n, stopped in enumerate(("max_launches", "budget"))]
    text = " ".join(line.strip() for line in summary_lines(scenes))
    assert ("2 scene(s) inconclusive with 12 launches; the sequential gate stopped them on budget/max_launches: "
            "a larger --zbench-max-launches or --zbench-budget would give them more rounds") in text, text
    assert "--zbench-runs" not in text


def test_a_legend_line_names_each_mark_the_table_shows_and_no_other():
    plain = summary_lines([entry("a"), entry("b")])
    assert not any(line.startswith("marks: ") for line in plain)
    marked = summary_lines([entry("a", unreliable=["p95"]), entry("b")])
    [legend] = [line for line in marked if line.startswith("marks: ")]
    assert legend.startswith("marks: ~ a tail percentile from too few frames to be reliable (p99 needs 100 frames")
    assert ">=" not in legend
    censored = dict(entry("grow.adaptive"), adaptive={"score": 40.0, "ci": [38.0, 42.0], "censored": "above"})
    [legend] = [line for line in summary_lines([censored, entry("b")]) if line.startswith("marks: ")]
    assert legend.startswith("marks: >= a score at the largest complexity tried, a lower bound") and "~" not in legend
