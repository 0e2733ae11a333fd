"""Installed into an environment, the plugin stays out of the way of every other test suite there: it only
registers its options and markers unless the project asks for zbench (plugin/options.py, `asked_for`).

Each project here is a real folder run by a real `python -m pytest` subprocess, with the plugin loaded from
its `pytest11` entry point as an installed plugin is, beside pytest-benchmark (installed with the test
extras) and pytest-xdist.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCENES = """\
family: mini
description: two tiny rect scenes
scenes:
  - id: mini.fill.x{layers}
    sweep: {layers: [1, 2]}
    ops:
      - {op: rect, x: 0, y: 0, w: "100%", h: "100%", color: "#3366CC80"}
"""
INVENTORY = """\
devices:
  local:
    transport: local
    backend: software
    runner: [python, -m, pytest_zbench.runner]
    display: {width: 64, height: 48, refresh_hz: 60}
"""

PLAIN_TEST = """\
def test_arithmetic():
    assert 1 + 1 == 2
"""

BENCHMARK_TEST = """\
def test_sum_of_a_range(benchmark):
    assert benchmark(sum, range(1000)) == 499500
"""

FIXTURE_TEST = """\
import pytest

@pytest.mark.zbench_device("local")
def test_the_device_is_probed(device):
    assert "software" in device.probe().backends
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project of someone else's: a plain test and a pytest-benchmark test, no scenes, no devices.yaml."""
    if importlib.util.find_spec("pytest_benchmark") is None:  # a test extra: missing is a failure, not a skip
        pytest.fail("pytest-benchmark is missing: pip install -e '.[test]'", pytrace=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    pytester.makepyfile(test_plain=PLAIN_TEST, test_bench=BENCHMARK_TEST)
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=300)


def assert_untouched(pytester: pytest.Pytester) -> None:
    """Nothing of zbench was written into the project."""
    left = sorted(p.name for p in pytester.path.iterdir())
    assert not any(name.startswith(("zbench", ".zbench")) for name in left), left


@pytest.mark.parametrize("xdist", [False, True], ids=["in-process", "xdist"])
def test_other_suites_pass_and_nothing_is_read_or_written(suite, xdist):
    result = run(suite, *(["-n", "2"] if xdist else []))
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    assert "plugins:" in out and "zbench-" in out  # the plugin is loaded...
    assert "inventory" not in out and "-- zbench --" not in out  # ...and did nothing
    assert_untouched(suite)


def test_an_option_or_an_ini_key_asks_for_zbench(suite):
    """Asked for, the plugin is active: here without an inventory, so with the embedded `local` alone, and a
    device it does not know is a usage error naming it."""
    by_option = run(suite, "--zbench-device=pi3b")
    assert by_option.ret == pytest.ExitCode.USAGE_ERROR
    by_option.stderr.fnmatch_lines(["*unknown device 'pi3b': *devices.yaml defines local.*"])
    (suite.path / "pytest.ini").write_text("[pytest]\nzbench_device = pi3b\n")
    by_ini = run(suite)
    assert by_ini.ret == pytest.ExitCode.USAGE_ERROR
    by_ini.stderr.fnmatch_lines(["*unknown device 'pi3b': *devices.yaml defines local.*"])


def test_a_zbench_fixture_activates_it(suite):
    """A plain test that asks for the `device` fixture gets the plugin, with the project's inventory."""
    (suite.path / "devices.yaml").write_text(INVENTORY)
    suite.makepyfile(test_device=FIXTURE_TEST)
    result = run(suite)
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.assert_outcomes(passed=3)


def test_a_project_with_scenes_gets_its_scene_tests_beside_the_others(suite):
    (suite.path / "scenes").mkdir()
    (suite.path / "scenes" / "mini.yaml").write_text(SCENES)
    (suite.path / "devices.yaml").write_text(INVENTORY)
    results = suite.path / "results"
    result = run(suite, ".", "scenes", "-k", "not golden", "--zbench-runs=2", "--zbench-frames=4",
                 "--zbench-warmup=1", "--zbench-baseline=none", f"--zbench-results={results}")
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.assert_outcomes(passed=4, deselected=2)  # plain, benchmark, two perf tests; goldens deselected
    document = json.loads((results / "run.json").read_text())
    assert sorted(s["id"] for s in document["scenes"]) == ["mini.fill.x1", "mini.fill.x2"]
