"""The busy-host guard end to end (docs/regression.md, "A busy host"): a real slowdown measured while another
process loads the CPU is `regressed`, because the guard judges it again on on-CPU time (cpu_ms less the runner's
stolen_ms) and the slowdown survives that. The same build under the same load is never `regressed` or `improved`:
tests/regression/test_gate_sessions.py (ten A/A sessions, three of them loaded).

Statistical, not timed: small uncapped scenes (160x120, 4 + 40 frames), 5 launches per session, the history
quiet (the largest difference in load a candidate can bring).
"""

from __future__ import annotations

import pytest
from test_gate_sessions import busy_cpu

from pytest_zbench.host.run_record import validate_run
from pytest_zbench.protocol import read_frames_csv

pytestmark = [pytest.mark.acceptance, pytest.mark.exclusive]

SCENES = ["mini.fill.x1", "minitext.label"]
SESSION = ["--zbench-runs=5", "--zbench-frames=40", "--zbench-warmup=4", "--zbench-mode=uncapped",
           "-k", "mini.fill.x1 or minitext.label"]
TEXT_SCENE = """\
family: minitext
description: one short label
scenes:
  - id: minitext.label
    ops:
      - {op: text, x: 4, y: 20, size: 14, color: "#1B1B1B", text: "Busy host, 12.5 ms"}
"""


def write_inventory(project, burn_ms: float) -> None:
    (project.root / "devices.yaml").write_text(
        "devices:\n  local:\n    transport: local\n    backend: software\n"
        f"    runner: [python, -m, pytest_zbench.runner, --cpu-burn-ms, '{burn_ms}']\n"
        "    display: {width: 160, height: 120, refresh_hz: 60}\n")


def test_a_3ms_burn_under_a_cpu_hog_is_regressed_on_fill_and_text(project, tmp_path, monkeypatch):
    project.write_scene("minitext.yaml", TEXT_SCENE)
    history = f"--zbench-history={tmp_path / 'history.sqlite'}"
    monkeypatch.setenv("ZBENCH_BUILD_HASH", "a" * 40)
    write_inventory(project, 0)
    # The history's sessions are recorded, not judged: they build the baseline. Whether a same-build session
    # is ever judged regressed is test_gate_sessions.py's claim (ten A/A sessions), not this test's.
    for _ in range(5):
        project.run(*SESSION, history, "--zbench-baseline=none").assert_outcomes(passed=2)
    monkeypatch.setenv("ZBENCH_BUILD_HASH", "b" * 40)
    write_inventory(project, 3)
    with busy_cpu():
        result = project.run(*SESSION, history)
    document = project.run_json()
    assert validate_run(document) == []
    for scene in document["scenes"]:
        section = scene["regression"]
        assert scene["id"] in SCENES
        assert section["verdict"] == "regressed", section["message"]
        p50 = next(m for m in section["metrics"] if m["metric"] == "cpu_ms.p50")
        assert p50["verdict"] == "regressed" and p50["effect"] > 3.0, p50
        # Every launch reports how much of its frame time other tasks took, and its on-CPU time.
        for launch in scene["per_run"]:
            assert 0.0 <= launch["stolen_share"] <= 1.0
            assert launch["oncpu_ms"]["p50"] <= launch["cpu_ms"]["p50"] + 1e-3
            # and the CPUs other tasks kept busy while it ran (the hog: about one), from /proc/stat
            assert launch["corun_load"] >= 0.0
    assert result.ret != 0  # a regressed scene fails its test


def test_the_reference_runner_writes_stolen_ms_within_each_frame(project, tmp_path):
    """stolen_ms is the frame's wall time less its thread's CPU time: never negative, never longer than the
    frame's own cpu_ms by more than the bracket's slack (docs/runner-protocol.md)."""
    write_inventory(project, 0)
    with busy_cpu():
        project.run("--zbench-runs=1", "--zbench-frames=30", "--zbench-warmup=2", "--zbench-mode=uncapped",
                    "-k", "mini.fill.x1").assert_outcomes(passed=1)
    tables = [read_frames_csv(path) for path in project.results.rglob("launch-*/frames.csv")]
    assert tables
    for table in tables:
        assert "stolen_ms" in table.counter_columns
        for row in table.rows:
            assert 0.0 <= row["stolen_ms"] <= row["cpu_ms"] + 0.5, row
