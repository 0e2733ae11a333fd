"""GPU time on the host, end to end with a third-party runner at the protocol boundary: garbage values are
dropped and counted, the timer check decides whether gpu_ms is trusted, and an untrusted source is neither shown,
charted, written as a JUnit property nor gated."""

from __future__ import annotations

import csv
import xml.etree.ElementTree as ET

import pytest

from pytest_zbench.host.run_record import validate_run
from pytest_zbench.regression.gate import gpu_incomparable


def junit_cases(path) -> dict[str, dict[str, str]]:
    root = ET.parse(path).getroot()
    return {case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}
            for case in root.iter("testcase")}


def test_garbage_gpu_values_from_a_runner_are_dropped_and_counted(project, tmp_path):
    project.write_inventory({"RECT_RUNNER_GPU": "garbage"})
    junit = tmp_path / "junit.xml"
    result = project.run("--zbench-device=rectonly", "-k", "mini.fill.x1", f"--junitxml={junit}")
    result.assert_outcomes(passed=1)

    document = project.run_json()
    assert validate_run(document) == []
    (scene,) = document["scenes"]
    # Per launch (6 measured frames): a 0, an all-ones counter read as ms, a value flagged disjoint and
    # another 0 are dropped at the protocol boundary; two good values remain.
    invalid = [i for i in scene["issues"] if i["kind"] == "timer_invalid"]
    assert len(invalid) == 2 * 4
    assert any("4294.967295" in i["detail"] for i in invalid)
    assert any("disjoint=1" in i["detail"] for i in invalid)
    assert {i["frame"] for i in invalid} == {3, 4, 5, 7}
    assert scene["gpu_timer"] == {"source": "timer_query", "sources": ["timer_query"], "frames_with_gpu": 4,
                                  "disjoint": 2, "invalid": 8}
    samples = list(csv.DictReader(open(project.results / scene["samples_file"])))
    measured = [r for r in samples if r["phase"] == "measure"]
    assert sum(1 for r in measured if r["gpu_ms"]) == 4
    assert all(float(r["gpu_ms"]) < 1 for r in measured if r["gpu_ms"])  # no garbage reached the samples
    # The good values are all the statistics saw; the source passed the timer check (8 rects read 8x one rect).
    assert 0.04 < scene["metrics"]["gpu_ms"]["p50"] < 0.06
    check = document["gpu"]["timer_check"]
    assert check["source"] == "timer_query" and check["valid"] is True, check
    assert check["heavy_ms"] > 5 * check["light_ms"]
    assert scene["gpu_valid"] is True
    props = junit_cases(junit)["perf[mini.fill.x1-rectonly]"]
    assert props["gpu_source"] == "timer_query" and "gpu_ms_p50" in props and props["gpu_valid"] == "True"


def test_a_source_failing_the_timer_check_is_not_shown_charted_or_gated(project, tmp_path):
    project.write_inventory({"RECT_RUNNER_GPU": "stuck"})
    junit = tmp_path / "junit.xml"
    result = project.run("--zbench-device=rectonly", "-k", "mini.fill.x1", f"--junitxml={junit}")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*mini.fill.x1*untrusted*", "*gpu_ms of rectonly not shown*failed the timer check*"])

    document = project.run_json()
    assert validate_run(document) == []
    check = document["gpu"]["timer_check"]
    assert check["valid"] is False and "timer check failed" in check["detail"]
    assert check["light_ms"] == check["heavy_ms"] == 0.5
    (scene,) = document["scenes"]
    assert scene["gpu_valid"] is False
    assert scene["metrics"]["gpu_ms"]["p50"] == 0.5  # kept as data, flagged
    props = junit_cases(junit)["perf[mini.fill.x1-rectonly]"]
    assert not any(k.startswith("gpu_ms") for k in props) and props["gpu_valid"] == "False"
    report = (project.results / "report.html").read_text()
    assert "not trusted" in report and "untrusted" in report and "GPU time per frame" not in report
    # The gate never compares gpu_ms of an untrusted source, even against itself.
    reason = gpu_incomparable(scene["per_run"], scene["per_run"])
    assert reason is not None and "timer check" in reason


def test_a_runner_without_gpu_time_gets_no_timer_check(project):
    result = project.run("--zbench-device=rectonly", "-k", "mini.fill.x1")
    result.assert_outcomes(passed=1)
    document = project.run_json()
    assert "timer_check" not in document["gpu"]
    (scene,) = document["scenes"]
    assert scene["gpu_valid"] is None
    assert scene["gpu_timer"] == {"source": None, "sources": [], "frames_with_gpu": 0, "disjoint": 0, "invalid": 0}


def test_a_timer_query_that_covers_2_percent_of_the_finish_bracket_is_not_trusted(project):
    # The runner's query reads 2 % of what its finish bracket (less the CPU part) reads, on both variants, and
    # scales with the work, so the timer check's ratio alone would pass it.
    project.write_inventory({"RECT_RUNNER_GPU": "tile"})
    result = project.run("--zbench-device=rectonly", "-k", "mini.fill.x1")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*mini.fill.x1*untrusted*"])
    document = project.run_json()
    assert validate_run(document) == []
    check = document["gpu"]["timer_check"]
    assert check["source"] == "timer_query" and check["heavy_ms"] > 5 * check["light_ms"]  # it scales
    coverage = check["coverage"]
    assert coverage["checked"] is True and coverage["valid"] is False and check["valid"] is False
    # 0.001 ms a rect against 0.05 ms a rect; the bracket's fixed part is nothing here
    assert coverage["light"]["share"] == pytest.approx(0.02, abs=0.002)
    assert coverage["heavy"]["share"] == pytest.approx(0.02, abs=0.002)
    assert "timer_query coverage failed" in check["detail"]
    (scene,) = document["scenes"]
    assert scene["gpu_valid"] is False
