"""Shared test helpers: a throwaway zbench project (scenes, inventory) for end-to-end runs with pytester."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]


def pytest_configure(config: pytest.Config) -> None:
    # The two tiers of the suite (README, "Set up and run"): ci/test.sh runs `-m "not acceptance"`, the checks a change
    # needs within minutes; ci/acceptance.sh runs `-m acceptance`, and CI (.ci/run) runs both.
    config.addinivalue_line("markers", "acceptance: an end-to-end acceptance run of many pytest sessions with real "
                                       "launches (15 s or more on 2 cores); ci/acceptance.sh runs them")
    # A test whose verdict is a speed measured on this machine (the gate over sessions, A/B, bisect) runs alone:
    # a second test measuring beside it is load no test controls, as no lab runs two sessions on one device.
    config.addinivalue_line("markers", "exclusive: an acceptance run whose verdict is a speed measured on this "
                                       "machine; ci/acceptance.sh runs these one at a time, after the others")

HERE = Path(__file__).parent
REPO = HERE.parent
RECT_RUNNER = HERE / "thirdparty" / "rect_runner.py"

SCENES_RECT = """\
family: mini
description: two tiny rect scenes
scenes:
  - id: mini.fill.x{layers}
    sweep: {layers: [1, 2]}
    ops:
      - unroll: "{layers}"
        ops:
          # Inset by 1 px: a capture of one colour would be a vacuous golden (docs/goldens.md).
          - {op: rect, x: 1, y: 1, w: "100% - 2", h: "100% - 2", color: "#3366CC80"}
"""

SCENES_ROUNDED = """\
family: round
description: needs rrect
scenes:
  - id: round.one
    ops:
      - {op: rrect, x: 4, y: 4, w: 40, h: 20, radius: 6, color: "#CC3366"}
"""


def inventory_text(extra_env: dict[str, str] | None = None) -> str:
    env = json.dumps(extra_env or {})
    return f"""\
devices:
  local:
    transport: local
    backend: software
    runner: [python, -m, pytest_zbench.runner]
    display: {{width: 64, height: 48, refresh_hz: 60}}
  rectonly:
    transport: local
    backend: software
    runner: [python, {json.dumps(str(RECT_RUNNER))}]
    display: {{width: 64, height: 48, refresh_hz: 60}}
    env: {env}
"""


class Project:
    """A pytester project laid out like the repository: scenes/, devices.yaml, pytest.ini."""

    def __init__(self, pytester: pytest.Pytester) -> None:
        self.pytester = pytester
        self.root = pytester.path
        (self.root / "scenes").mkdir()
        self.write_scene("mini.yaml", SCENES_RECT)
        self.write_scene("round.yaml", SCENES_ROUNDED)
        self.write_inventory()
        (self.root / "pytest.ini").write_text("[pytest]\ntestpaths = scenes\n")
        self.results = self.root / "results"

    def write_scene(self, name: str, text: str) -> None:
        (self.root / "scenes" / name).write_text(text)

    def write_inventory(self, extra_env: dict[str, str] | None = None) -> None:
        (self.root / "devices.yaml").write_text(inventory_text(extra_env))

    def run(self, *args: str, goldens: bool = False) -> pytest.RunResult:
        """Run pytest in the project; perf tests only unless `goldens` (this project has no goldens yet)."""
        quick = ["--zbench-runs=2", "--zbench-frames=6", "--zbench-warmup=2", f"--zbench-results={self.results}",
                 "-p", "no:cacheprovider"]
        select = [] if goldens else ["-m", "zbench_perf"]
        # Tests that are not about the regression gate run ungated: the project's sessions would otherwise
        # become each other's baselines, and a 6-frame scene on a shared machine is all noise. A test that
        # names a history is about the gate; an explicit --zbench-baseline given later still wins.
        if not any(arg.startswith("--zbench-history") for arg in args):
            quick.append("--zbench-baseline=none")
        if any(arg.startswith("--zbench-budget") for arg in args):  # the sequential gate decides the launches
            quick.remove("--zbench-runs=2")
        return self.pytester.runpytest_subprocess(*quick, *select, *args, timeout=300)

    def run_json(self) -> dict:
        return json.loads((self.results / "run.json").read_text())


@pytest.fixture(autouse=True)
def _no_history_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lab's ZBENCH_HISTORY_URL in the environment of whoever runs the tests is never written to by them."""
    monkeypatch.delenv("ZBENCH_HISTORY_URL", raising=False)


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Project:
    # The subprocess must import this checkout's package even when it is not installed.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    # A project's sessions are the plugin's own tests, not a CI run of their devices, even when these tests run
    # in CI: a test about CI's rule (a scene a device cannot run fails) sets CI=true itself.
    monkeypatch.delenv("CI", raising=False)
    return Project(pytester)


def require(condition: bool, what: str) -> None:
    """Skip a test whose real part is missing, except in CI, where a missing part is a failure."""
    if condition:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{what} is required in CI (CI=true) but missing", pytrace=False)
    pytest.skip(f"{what} is missing")


