"""The gate's acceptance runs end to end, on this machine: real runner launches, one history, the default gate
metrics, no artificial base cost per frame (docs/regression.md, "End to end").

* A/A: the same build, 10 sessions into one history while a busy-loop process loads the CPU for three of them:
  no session is `regressed` or `improved` (the busy-host guard judges on-CPU time where the load is the
  difference; its other side, a 3 ms burn under load that stays `regressed`, is test_busy_host_gate.py). Each is judged against the sessions before it, so the sessions after
  the first loaded one see what load does to this device in their between-session spread.

The power side (a build burning 30 % more CPU per frame, against the history and in an interleaved A/B session)
is a rate on a loaded host, not a pass/fail case: bench/bench_gate_e2e.py measures it.

Statistical, not timed: small uncapped scenes (320x240, 5 + 60 frames), 5 launches per session.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from pytest_zbench.host.run_record import validate_run

pytestmark = [pytest.mark.acceptance, pytest.mark.exclusive]  # every test here is an end-to-end acceptance run

SESSION = ["--zbench-runs=5", "--zbench-frames=60", "--zbench-warmup=5", "--zbench-mode=uncapped",
           "-k", "mini.fill.x1"]


def write_inventory(project) -> None:
    (project.root / "devices.yaml").write_text(
        "devices:\n  local:\n    transport: local\n    backend: software\n"
        "    runner: [python, -m, pytest_zbench.runner]\n"
        "    display: {width: 320, height: 240, refresh_hz: 60}\n")


@contextmanager
def busy_cpu() -> Iterator[subprocess.Popen[bytes]]:
    """A real background load: one process spinning on a core for as long as the block runs."""
    process = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield process
    finally:
        process.kill()
        process.wait(timeout=30)
    assert process.poll() is not None  # it ended with the block


def regression(project) -> dict:
    document = project.run_json()
    assert validate_run(document) == []
    return document["scenes"][0]["regression"]


def metric(section: dict, name: str) -> dict:
    return next(m for m in section["metrics"] if m["metric"] == name)


def test_same_build_in_ten_sessions_under_intermittent_load_is_never_regressed_or_improved(project, tmp_path,
                                                                                           monkeypatch):
    monkeypatch.setenv("ZBENCH_BUILD_HASH", "a" * 40)
    write_inventory(project)
    history = f"--zbench-history={tmp_path / 'history.sqlite'}"
    loaded = {2, 5, 8}
    sections = []
    for number in range(1, 11):
        if number in loaded:
            with busy_cpu():
                result = project.run(*SESSION, history)
        else:
            result = project.run(*SESSION, history)
        section = regression(project)
        sections.append(section)
        assert section["verdict"] not in ("regressed", "improved"), f"session {number}: {section['message']}"
        # What the busy-host guard reads: each launch's share of its frame time other tasks took, and its
        # frames' on-CPU time (docs/regression.md, "A busy host").
        launches = project.run_json()["scenes"][0]["per_run"]
        shares = [run["stolen_share"] for run in launches]
        assert len(shares) == 5 and all(0.0 <= share <= 1.0 for share in shares), shares
        assert all(run["oncpu_ms"]["p50"] <= run["cpu_ms"]["p50"] + 1e-3 for run in launches)
        result.assert_outcomes(passed=1)
        if number >= 2:
            assert section["same_build"] is True and "same build" in section["message"]
            assert {m["metric"] for m in section["metrics"]} == {"cpu_ms.p50", "cpu_ms.p95"}
            assert section["settings"]["threshold"] == 0.15 and section["settings"]["alpha"] == 0.01
    assert sections[0]["verdict"] == "no_baseline"
    # One baseline session: its between-session spread is unknown, whatever the launches say.
    assert sections[1]["verdict"] == "inconclusive" and "one baseline session" in sections[1]["message"]
    last = metric(section, "cpu_ms.p50")
    assert last["n_sessions"] == 5 and last["between_sessions_used"] == 9 and last["between_df"] == 8
    assert last["ci"][0] < 1.0 < last["ci"][1]
