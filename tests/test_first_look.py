"""--zbench-first-look: one scene per family, its closing estimate of the whole suite, and the elapsed and remaining
time a long session shows. The end-to-end run of README's command is tests/test_first_look_readme.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pytest_zbench.host.report.session_time import (
    ADAPTIVE_LAUNCHES,
    Frames,
    clock_text,
    duration,
    first_look_line,
    quick_estimate_s,
)
from pytest_zbench.plugin.progress import SceneClock
from pytest_zbench.scenes import first_look_cases, load_corpus

REPO = Path(__file__).resolve().parent.parent


def test_each_family_of_the_repository_is_represented_by_its_first_plain_scene():
    cases, errors = load_corpus(REPO / "scenes")
    assert not errors
    chosen = first_look_cases(cases)
    families = list(dict.fromkeys(case.family for case in cases))
    assert [case.family for case in chosen] == families  # every family once, in corpus order
    for case in chosen:
        assert not case.adaptive and case.sustained_min is None
        # the first such scene of its family: no plain scene of the family comes before it
        earlier = cases[:cases.index(case)]
        assert not [c for c in earlier if c.family == case.family and not c.adaptive and c.sustained_min is None]
    assert len(chosen) < len(cases) / 3  # what makes the first look short: 22 of 90 scenes today


def test_a_family_of_adaptive_scenes_only_is_still_seen_and_a_sustained_scene_is_passed_over():
    cases, _ = load_corpus(REPO / "scenes")
    fill = [c for c in cases if c.family == "fill"]
    adaptive = [c for c in fill if c.adaptive]
    assert adaptive, "scenes/fill.yaml has an adaptive scene"
    # fill's plain scenes made sustained: the first look skips each of them, and with none left takes the first
    sustained = [replace(c, sustained_min=1.0) if not c.adaptive else c for c in fill]
    assert first_look_cases(sustained) == [sustained[0]]
    assert first_look_cases(adaptive) == adaptive[:1]
    assert first_look_cases([*adaptive, fill[1]]) == [fill[1]]


@pytest.mark.parametrize(("seconds", "text"), [(0.2, "0 s"), (44.4, "44 s"), (59.6, "1m 00s"), (72, "1m 12s"),
                                               (599.4, "9m 59s"), (1020, "17 min"), (7500, "2 h 05 min")])
def test_durations_read_as_a_person_says_them(seconds, text):
    assert duration(seconds) == text


def test_the_remaining_time_is_the_pace_so_far_and_is_quiet_on_a_short_session():
    assert clock_text(29.9, 5, 20) is None  # under CLOCK_AFTER_S: the session is nearly over, or just started
    assert clock_text(45.0, 0, 20) is None  # nothing finished: no pace to extrapolate
    # 45 s for 5 scenes: 9 s each, 15 left
    assert clock_text(45.0, 5, 20) == "45 s elapsed, about 2m 15s left, 5 of 20 scenes done"
    assert clock_text(130.0, 20, 20) == "2m 10s elapsed"


def test_the_clock_counts_a_scene_once_for_its_perf_and_golden_tests_and_ignores_plain_tests():
    now = [100.0]
    clock = SceneClock(clock=lambda: now[0])
    clock.collected(["scenes/fill.yaml::perf[fill.opaque.x1-local]", "scenes/fill.yaml::golden[fill.opaque.x1-local]",
                     "scenes/text.yaml::perf[text.paragraph-local]", "tests/test_x.py::test_plain"])
    now[0] = 160.0
    clock.finished("scenes/fill.yaml::perf[fill.opaque.x1-local]")
    clock.finished("scenes/fill.yaml::golden[fill.opaque.x1-local]")
    clock.finished("tests/test_x.py::test_plain")
    assert clock.text() == "1m 00s elapsed, about 1m 00s left, 1 of 2 scenes done"


def entry(launch_wall_s: list[float], frame_ms: float = 1000 / 60) -> dict:
    return {"id": "s", "device": "local", "launch_wall_s": launch_wall_s, "budget_ms": 1000 / 60,
            "metrics": {"frame_ms": {"p50": frame_ms}}}


def test_the_quick_estimate_splits_a_launch_into_start_up_and_frames():
    first, quick = Frames(1, 5, 20), Frames(2, 5, 30)
    # A launch of 25 paced frames at 60 Hz (0.4167 s) that took 1.0 s started up in 0.5833 s; a quick launch is
    # that start-up and 35 frames (0.5833 s): 1.1667 s. The session's other 2 s over 2 scenes: 1 s per scene.
    estimate = quick_estimate_s([entry([1.0]), entry([1.0])], 4.0, plain=10, adaptive=2, devices=1,
                                first_look=first, quick=quick)
    quick_launch = 1.0 - 25 / 60 + 35 / 60
    expected = 10 * (1.0 + 2 * quick_launch) + 2 * (1.0 + ADAPTIVE_LAUNCHES * quick_launch)
    assert estimate == pytest.approx(expected, rel=1e-9)  # arithmetic only: exact up to rounding
    # one scene measured, the same cost per scene, two devices: twice the suite
    assert quick_estimate_s([entry([1.0])], 2.0, 10, 2, 2, first, quick) == pytest.approx(2 * expected, rel=1e-9)
    assert quick_estimate_s([{"id": "s", "launch_wall_s": []}], 3.0, 10, 0, 1, first, quick) is None


def test_the_closing_line_names_what_was_seen_and_the_estimate():
    line = first_look_line(22, 22, 90, 44.0, 17 * 60)
    assert line.startswith("first look: 22 of 90 scenes (one per family, 22 families) in 44 s; the whole suite "
                           "with --zbench-quick would take about 17 min")
    assert "no estimate" in first_look_line(0, 22, 90, 3.0, None)


def settings(cli: dict[str, str] | None = None, **flags: bool):
    from pytest_zbench.settings import build_settings

    def get(option):  # the plugin's get(): the command-line value, else None (no ini here)
        return (cli or {}).get(option.name)

    return build_settings(get, Path("/project/root"), quick=flags.pop("quick", False), **flags)


def test_the_first_look_is_one_short_launch_that_explicit_values_and_goldens_only_override():
    s = settings(first_look=True, quick=True)  # README's first look wins over quick: it asks for less
    assert (s.runs, s.warmup, s.frames, s.first_look) == (1, 5, 20, True)
    assert settings({"frames": "50"}, first_look=True).frames == 50
    assert settings(first_look=True, goldens_only=True).frames == 1


def test_the_first_look_refuses_options_that_measure_scenes_in_full():
    from pytest_zbench.errors import UsageError

    with pytest.raises(UsageError, match="--zbench-first-look .* --zbench-sustained"):
        settings({"sustained_min": 1.0}, first_look=True)


def test_a_first_look_in_a_project_deselects_all_but_one_scene_per_family_and_ends_with_its_estimate(project):
    # conftest's project: family mini (mini.fill.x1, mini.fill.x2) and family round (round.one); perf tests only,
    # as the project has no goldens
    ran = project.pytester.runpytest_subprocess(
        "--zbench-first-look", "-m", "zbench_perf", f"--zbench-results={project.results}", "--zbench-baseline=none",
        "-p", "no:cacheprovider", timeout=300)
    ran.assert_outcomes(passed=2, deselected=4)  # 1 perf test deselected by the first look, 3 golden tests by -m
    assert [s["id"] for s in project.run_json()["scenes"]] == ["mini.fill.x1", "round.one"]
    assert [s["runs"] for s in project.run_json()["scenes"]] == [1, 1]
    line = next(line for line in ran.outlines if line.startswith("first look: "))
    assert line.startswith("first look: 2 of 3 scenes (one per family, 2 families) in ")
    assert "; the whole suite with --zbench-quick would take about " in line
