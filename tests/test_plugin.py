"""The plugin end to end: pytest runs on a throwaway project, real runners in subprocesses."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_zbench.host.run_record import validate_run
from pytest_zbench.runner.machine import linux_facts

XDIST = [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="xdist")]


def junit_cases(path) -> dict[str, dict[str, str]]:
    root = ET.parse(path).getroot()
    return {
        case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}
        for case in root.iter("testcase")
    }


@pytest.mark.parametrize("extra", XDIST)
def test_scene_files_become_measured_perf_tests(project, tmp_path, extra):
    junit = tmp_path / "junit.xml"
    result = project.run("--zbench-device=local", f"--junitxml={junit}", *extra)
    result.assert_outcomes(passed=3)  # mini.fill.x1, mini.fill.x2, round.one on the reference runner

    cases = junit_cases(junit)
    assert set(cases) == {"perf[mini.fill.x1-local]", "perf[mini.fill.x2-local]", "perf[round.one-local]"}
    for props in cases.values():
        for key in ("frame_ms_p50", "frame_ms_p95", "frame_ms_p99", "cpu_ms_p50", "cpu_ms_p95", "cpu_ms_p99", "jank"):
            assert key in props, key
        assert float(props["cpu_ms_p50"]) > 0
        assert props["runs"] == "2"

    document = project.run_json()
    assert validate_run(document) == []
    assert document["device"]["id"] == "local"
    # The SoC, OS build and highest clock where this Linux host's /proc and /sys give them (the runner's probe)
    linux = linux_facts(Path("/"))
    device = document["device"]
    assert (device.get("soc"), device.get("os_build"), device["cpu"].get("max_mhz")) == (
        linux.get("soc"), linux.get("os_build"), linux.get("max_mhz"))
    assert device["os_build"] and device["facts_from"] == "runner probe"
    # What the reference runner was built with: its interpreter, and the versions of what renders.
    import platform

    import skia
    app = document["app"]
    assert app["compiler"].startswith(f"{platform.python_implementation()} {platform.python_version()} (")
    assert f"skia-python {skia.__version__}" in app["flags"] and app["runner_toolchains"]["local"]["flags"] == app["flags"]
    assert document["gpu"]["backend"] == "software"
    assert document["display"]["present_source"] == "simulated_vsync"
    assert {s["id"] for s in document["scenes"]} == {"mini.fill.x1", "mini.fill.x2", "round.one"}
    for scene in document["scenes"]:
        assert scene["outcome"] == "passed"
        assert len(scene["per_run_medians"]["cpu_ms"]) == 2
        samples = list(csv.DictReader(open(project.results / scene["samples_file"])))
        assert len(samples) == 2 * (2 + 6)
        # The JUnit property names the same file, relative to the results folder, so it survives a download.
        assert cases[f"perf[{scene['id']}-local]"]["samples_file"] == scene["samples_file"]
        assert not scene["samples_file"].startswith("/")
        # Slow and frozen frames (Android vitals' boundaries) and the overrun, recounted from the CSV's frames.
        for k, launch in enumerate(scene["per_run"]):
            frames = [float(r["present_interval_ms"]) for r in samples
                      if r["launch"] == str(k) and r["phase"] == "measure" and r["present_interval_ms"]]
            slow_from = max(1000 / 60, scene["budget_ms"]) + 1e-4  # budget_ms is rounded to 4 decimals
            assert launch["slow_frames"] == sum(slow_from < f <= 700 + 1e-5 for f in frames)
            assert launch["frozen_frames"] == sum(f > 700 + 1e-5 for f in frames)
            assert launch["overrun_ms"]["max"] == pytest.approx(max(frames) - scene["budget_ms"], abs=1e-3)
        metrics = scene["metrics"]
        assert metrics["slow_frames"] == sum(r["slow_frames"] for r in scene["per_run"])
        assert metrics["overrun_ms"]["p50"] == pytest.approx(metrics["frame_ms"]["p50"] - scene["budget_ms"], abs=1e-3)
        assert [r["launch"] for r in samples].count("1") == 8
        assert {r["phase"] for r in samples} == {"warmup", "measure"}
    report = (project.results / "report.html").read_text()
    assert report.count("<section") == 3 and report.count("<svg") == 9  # CDF, timeline, vsync buckets per scene
    assert "src='http" not in report and "<script src" not in report  # self-contained: its one script is inline
    # Twice the overdraw is more pixels blended: the measurement must see it.
    draw_calls = {s["id"]: s["metrics"]["counters"]["draw_calls"] for s in document["scenes"]}
    assert draw_calls["mini.fill.x2"] == 2 * draw_calls["mini.fill.x1"]


def test_keyword_selects_scenes_by_id(project):
    result = project.run("--zbench-device=local", "-k", "x2", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["scenes/mini.yaml::perf[[]mini.fill.x2-local[]]", "*1/6 tests collected (5 deselected)*"])


def test_third_party_runner_runs_what_it_supports_and_skips_the_rest(project):
    result = project.run("--zbench-device=rectonly", "-rs")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["*round.one needs feature(s) rrect*rect-only*"])
    document = project.run_json()
    assert validate_run(document) == []
    skipped = [s for s in document["scenes"] if s["outcome"] == "skipped"]
    assert [s["id"] for s in skipped] == ["round.one"]
    assert "rrect" in skipped[0]["skipped"]
    measured = [s for s in document["scenes"] if s["outcome"] == "passed"]
    assert all(s["metrics"]["counters"]["overdraw_px"] > 0 for s in measured)  # extra columns kept as counters


def test_under_ci_a_scene_the_device_cannot_run_fails_instead_of_skipping(project, monkeypatch):
    # CI=true (as CI sets it): the device is one the run exists to exercise; a skip would let a backend that
    # went missing (EGL gone from the image) pass as "N skipped", exit 0.
    monkeypatch.setenv("CI", "true")
    result = project.run("--zbench-device=rectonly", "-k", "round", goldens=True)
    result.assert_outcomes(failed=2)  # its perf and golden test
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*round.one needs feature(s) rrect*", "*CI=true: device rectonly is one this CI run "
                                 "exercises, so a scene it cannot run fails instead of skipping*"])
    assert [s["outcome"] for s in project.run_json()["scenes"]] == ["failed"]


def test_two_devices_in_one_session(project):
    result = project.run("--zbench-device=local,rectonly", "-k", "mini")
    result.assert_outcomes(passed=4)
    document = project.run_json()
    assert validate_run(document) == []
    assert set(document["devices"]) == {"local", "rectonly"}
    assert document["devices"]["rectonly"]["gpu"]["runner"]["name"] == "rect-only"
    assert sorted((s["device"], s["id"]) for s in document["scenes"]) == [
        ("local", "mini.fill.x1"), ("local", "mini.fill.x2"), ("rectonly", "mini.fill.x1"), ("rectonly", "mini.fill.x2")]


def test_unknown_device_is_a_usage_error_listing_known_devices(project):
    result = project.run("--zbench-device=nexus9")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown device 'nexus9'*defines local, rectonly*"])


def test_bad_option_value_is_a_usage_error(project):
    result = project.run("--zbench-mode=vsync")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--zbench-mode*'vsync'*paced, uncapped*"])


def test_malformed_scene_file_is_a_collection_error_and_others_still_collect(project):
    project.write_scene("broken.yaml", "family: broken\nscenes:\n  - id: broken.one\n    ops:\n      - {op: rect, x: 0}\n")
    result = project.run("--zbench-device=local", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*broken.yaml*broken.one*", "*3/6 tests collected (3 deselected), 1 error*"])
    assert "'y'" in result.stdout.str() or "'w'" in result.stdout.str()


def test_crashing_runner_fails_the_test_and_keeps_partial_samples(project):
    project.write_inventory({"RECT_RUNNER_EXIT_AT": "5"})
    result = project.run("--zbench-device=rectonly", "-k", "mini.fill.x1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*0 of 2 launches complete*", "*exited with 1*", "*Samples kept*"])
    document = project.run_json()
    scene = document["scenes"][0]
    assert scene["outcome"] == "failed" and scene["partial"] is True
    assert {i["kind"] for i in scene["issues"]} >= {"exit", "partial"}
    rows = list(csv.DictReader(open(project.results / scene["samples_file"])))
    assert len(rows) == 2 * 5  # every frame written before the crash, from both launches


def test_garbage_samples_are_recorded_and_dropped_not_kept(project):
    project.write_inventory({"RECT_RUNNER_BAD": "1"})
    result = project.run("--zbench-device=rectonly", "-k", "mini.fill.x1")
    result.assert_outcomes(failed=1)
    scene = project.run_json()["scenes"][0]
    kinds = [i["kind"] for i in scene["issues"]]
    assert kinds.count("nan") == 2 and kinds.count("protocol") == 4  # NaN, negative, absurd in each launch
    # The three bad frames of each launch are dropped: 6 measured frames minus 3, in each launch.
    assert [run["cpu_ms"]["n"] for run in scene["per_run"]] == [3, 3]
    assert scene["metrics"]["cpu_ms"]["max"] < 1e6


def test_hung_runner_is_killed_at_its_deadline(project):
    project.write_inventory({"RECT_RUNNER_HANG": "1"})
    result = project.run("--zbench-device=rectonly", "-k", "mini.fill.x1", "--zbench-timeout=3", "--zbench-runs=1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*killed at its 3 s deadline*"])
    scene = project.run_json()["scenes"][0]
    assert scene["partial"] is True and scene["runs"] == 1


def test_plain_tests_use_the_device_and_scene_fixtures(project):
    project.pytester.makepyfile(test_custom="""
        import pytest

        @pytest.mark.zbench_scene("mini.fill.x2")
        def test_overdraw_counted(device, scene):
            measurement = scene.measure(device)
            assert measurement.summary.counters["draw_calls"] == 2
            assert device.probe().runner_name == "zbench-reference"
    """)
    result = project.run("--zbench-device=local", "test_custom.py", goldens=True)  # no -m filter: a plain test
    result.assert_outcomes(passed=1)


def test_quick_preset_is_documented_and_applies(project):
    help_text = project.pytester.runpytest_subprocess("--help").stdout.str()
    assert "--zbench-quick" in help_text and "(default: 5)" in help_text
    result = project.pytester.runpytest_subprocess(
        "--zbench-device=local", "--zbench-quick", "--zbench-runs=3", "-k", "perf and mini.fill.x1",
        f"--zbench-results={project.results}", "-p", "no:cacheprovider", timeout=300)
    result.assert_outcomes(passed=1)
    scene = project.run_json()["scenes"][0]
    # quick: 5 warmup + 30 measured frames, but an explicit --zbench-runs wins over the preset's 2.
    assert (scene["warmup_frames"], scene["measured_frames"], scene["runs"]) == (5, 30, 3)


def test_projects_receive_the_finished_run_through_a_hook(project):
    project.pytester.makeconftest("""
        import json

        def pytest_zbench_run_finished(config, document, results_dir):
            (results_dir / "uploaded.json").write_text(json.dumps(
                {"run_id": document["run_id"], "scenes": [s["id"] for s in document["scenes"]]}))
    """)
    project.run("--zbench-device=local", "-k", "mini").assert_outcomes(passed=2)
    uploaded = json.loads((project.results / "uploaded.json").read_text())
    assert uploaded == {"run_id": project.run_json()["run_id"], "scenes": ["mini.fill.x1", "mini.fill.x2"]}


@pytest.mark.parametrize("api, fields", [
    ("vulkan", {"vk_device_name": "llvmpipe (LLVM 15.0.6, 256 bits)", "vk_api_version": "1.3.230",
                "vk_timestamp_period_ns": 1.0, "vk_timestamp_valid_bits": 64}),
    ("metal", {"metal_device": "Apple M1", "metal_gpu_family": "apple7", "metal_counter_sampling": ["atStageBoundary"]}),
])
def test_a_runners_vulkan_or_metal_fields_reach_run_json_gpu(project, api, fields):
    project.write_inventory({"RECT_RUNNER_API": api})
    result = project.run("--zbench-device=rectonly", "-k", "mini.fill.x1", "--zbench-runs=1")
    result.assert_outcomes(passed=1)
    document = project.run_json()
    assert validate_run(document) == []
    gpu = document["gpu"]
    assert {k: gpu.get(k) for k in fields} == fields
    other = "metal_" if api == "vulkan" else "vk_"
    assert not [k for k in gpu if k.startswith(other)]
