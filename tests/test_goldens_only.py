"""--zbench-goldens-only: the golden tests alone, one short launch, no perf test, no history entry; and the
command a missing golden prints uses it."""

from __future__ import annotations

import re
import shlex

import pytest

MINI = "goldens/software/x86_64/mini.fill.x1/frame-0.png"


def test_missing_golden_prints_the_goldens_only_command_and_it_records_the_golden(project):
    result = project.run("--zbench-device=local", "-k", "golden and mini.fill.x1", goldens=True)
    result.assert_outcomes(failed=1)
    line = next(line for line in result.stdout.lines if "create it: pytest " in line)
    history = project.root / ".zbench" / "history.sqlite"  # the first session's measurement is in it
    before = history.read_bytes()
    assert line.rstrip().endswith("--zbench-update-goldens=missing --zbench-goldens-only")

    # The printed command as it is, with only the project's results folder added.
    args = shlex.split(line.split("create it: pytest ", 1)[1])
    fix = project.pytester.runpytest_subprocess(*args, f"--zbench-results={project.results}", "-p",
                                                "no:cacheprovider", timeout=120)
    fix.assert_outcomes(passed=1, deselected=5)  # the perf tests and the other scenes' golden tests
    fix.stdout.fnmatch_lines(["goldens written (missing): 1", f"*{MINI}",
                              "goldens only: no perf test, nothing recorded in the history"])
    assert (project.root / MINI).is_file()
    assert history.read_bytes() == before  # no history entry
    scene = project.run_json()["scenes"][0]
    assert (scene["runs"], scene["warmup_frames"], scene["measured_frames"]) == (1, 0, 1)
    assert scene["history"] is None and scene["correctness"]["frames"][0]["status"] == "written"

    # The golden recorded from one frame's launch is the one a full measurement compares with.
    project.run("--zbench-device=local", "-k", "golden and mini.fill.x1", goldens=True).assert_outcomes(passed=1)


def test_goldens_only_keeps_explicit_counts_and_refuses_measuring_modes(project):
    result = project.run("--zbench-device=local", "-k", "mini.fill.x1", "--zbench-goldens-only",
                         "--zbench-update-goldens", goldens=True)
    result.assert_outcomes(passed=1, deselected=5)
    scene = project.run_json()["scenes"][0]
    assert scene["runs"] == 2  # project.run's --zbench-runs=2 given explicitly wins: determinism is checked
    assert re.search(r"deselected", result.stdout.str())
    for other in ("--zbench-calibrate", "--zbench-sustained=1"):
        bad = project.run("--zbench-goldens-only", other, goldens=True)
        assert bad.ret == pytest.ExitCode.USAGE_ERROR
        bad.stderr.fnmatch_lines([f"*--zbench-goldens-only*cannot be combined with {other.split('=')[0]}*"])


SCENES_ADAPTIVE = """\
family: grow
scenes:
  - id: grow.alpha.adaptive
    complexity: {unit: layers, capture: 3}
    ops:
      - op: repeat
        count: complexity
        ops:
          - {op: rect, x: 1, y: 1, w: "100% - 2", h: "100% - 2", color: "#3366CC40"}
"""


def test_an_adaptive_scene_is_captured_at_its_capture_complexity(project):
    project.write_scene("grow.yaml", SCENES_ADAPTIVE)
    args = ("--zbench-device=local", "-k", "grow", "--zbench-goldens-only")
    project.run(*args, "--zbench-update-goldens", goldens=True).assert_outcomes(passed=1, deselected=7)
    scene = project.run_json()["scenes"][0]
    assert scene["correctness"]["frames"][0]["status"] == "written"
    # Three layers of 25 % #3366CC over white, as the scene's `capture: 3` asks: red 255 -> 204 -> 166 -> 137.
    from PIL import Image

    golden = Image.open(project.root / "goldens/software/x86_64/grow.alpha.adaptive/frame-0.png").convert("RGB")
    assert 130 <= golden.getpixel((10, 10))[0] <= 145 and golden.getpixel((0, 0)) == (255, 255, 255)
    project.run(*args, goldens=True).assert_outcomes(passed=1, deselected=7)


RECT = '{op: rect, x: 1, y: 1, w: "100% - 2", h: "100% - 2", color: "#3366CC80"}'
PAIR = ("family: pair\nscenes:\n  - {id: pair.plain, ops: [" + RECT + "]}\n"
        "  - {id: pair.twice, differential: {minus: pair.plain, feature: a second rect}, ops: [" + RECT + ", "
        + RECT + "]}\n")


def test_a_goldens_only_run_makes_no_timing_claims_where_a_measured_run_does(project):
    """A differential pair: a measured run prints its analysis line and charts its frames; a goldens-only
    run of the same scenes prints neither, and its report says in one line why."""
    project.write_scene("pair.yaml", PAIR)
    measured = project.run("--zbench-device=local", "-k", "pair")
    measured.assert_outcomes(passed=2)
    assert any(line.startswith("analysis: 1 differential pair(s)") for line in measured.stdout.lines)
    report = (project.results / "report.html").read_text()
    assert "<figure class='chart" in report and "id=goldens-only" not in report
    assert not project.run_json().get("goldens_only") and len(project.run_json()["differentials"]) == 1

    goldens = project.run("--zbench-device=local", "-k", "pair", "--zbench-goldens-only", "--zbench-update-goldens",
                          goldens=True)
    goldens.assert_outcomes(passed=2, deselected=8)  # the perf tests and the other scenes
    assert not any(line.startswith("analysis:") for line in goldens.stdout.lines)
    report = (project.results / "report.html").read_text()
    assert "<figure class='chart" not in report
    assert report.count("timings were not measured") == 1
    document = project.run_json()
    assert document["goldens_only"] is True and document["differentials"] == [] and document["isolation"] == []
