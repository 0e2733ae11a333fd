"""Calibration from A/A sessions: the within- and between-session spreads, the MDE, storage, and the gate's use
of the A/A sessions for its between-session spread."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_zbench.regression.baseline import judge_against_history
from pytest_zbench.regression.calibrate import (
    Spread,
    ab_minimum_detectable_effect,
    calibrate_from_runs,
    describe,
    minimum_detectable_effect,
    spread_of,
)
from pytest_zbench.regression.gate import GateConfig
from pytest_zbench.regression.history import History, RunInfo, SceneRecord

ENV = {"gpu": {"gl_renderer": "llvmpipe"}}


def launches(level: float, n: int, spread: float, seed: int, offset: float = 0.0) -> list[dict]:
    values = level * np.exp(offset + np.random.default_rng(seed).normal(0, spread, n))
    return [{"cpu_ms": {"p50": float(v), "p95": float(v) * 1.3}, "gpu_ms": None, "gpu_source": None,
             "jank_share": 0.0} for v in values]


def test_spread_of_separates_launches_from_sessions():
    rng = np.random.default_rng(1)
    sessions = [list(8.0 * np.exp(rng.normal(0, 0.08) + rng.normal(0, 0.02, 10))) for _ in range(30)]
    spread = spread_of(sessions)
    assert spread.within == pytest.approx(0.02, rel=0.15)
    assert spread.between == pytest.approx(0.08, rel=0.25) and spread.between_df == 29
    one = spread_of(sessions[:1])
    assert one.between is None and one.sessions == 1
    with pytest.raises(ValueError, match="two launches"):
        spread_of([[8.0], [8.1]])


def test_mde_grows_with_the_between_session_spread_and_needs_it():
    quiet, noisy = Spread(0.03, 0.0, 5, 50, 4), Spread(0.03, 0.10, 5, 50, 4)
    config = GateConfig()
    assert minimum_detectable_effect(quiet, 10, config=config) >= config.threshold
    assert minimum_detectable_effect(noisy, 10) > minimum_detectable_effect(quiet, 10)
    assert minimum_detectable_effect(quiet, 5) >= minimum_detectable_effect(quiet, 10)
    assert minimum_detectable_effect(Spread(0.03, None, 1, 10), 10) is None
    assert minimum_detectable_effect(quiet, 0) is None
    # A/B has no session offsets: a 5 % bar, and only the launches' spread.
    assert ab_minimum_detectable_effect(noisy, 10, threshold=0.05) < minimum_detectable_effect(noisy, 10)
    assert ab_minimum_detectable_effect(noisy, 1) is None


def test_calibrate_from_runs_stores_spreads_and_the_gate_uses_the_aa_sessions(tmp_path):
    with History(tmp_path / "h.sqlite") as history:
        old = RunInfo("pi3b", "gles2", "old", False, ENV, started_utc="2026-10-01T00:00:00Z", kind="calibration")
        history.record(old, [SceneRecord("fill", {}, "paced", None, launches(5.0, 10, 0.20, 1))])
        for i in range(3):  # the newest A/A set: one build, one environment, three sessions that move by ~20 %
            info = RunInfo("pi3b", "gles2", "new", False, ENV, started_utc=f"2026-10-0{2 + i}T00:00:00Z",
                           kind="calibration")
            history.record(info, [SceneRecord("fill", {}, "paced", None,
                                              launches(5.0, 6, 0.02, 10 + i, offset=(-0.2, 0.0, 0.2)[i])),
                                  SceneRecord("text", {}, "paced", None, launches(3.0, 1, 0.06, 20 + i))])
        report = calibrate_from_runs(history, "pi3b")
        cpu = {c.metric: c for c in report.calibrations}["cpu_ms.p50"]
        assert cpu.n_launches == 18 and cpu.build_hash == "new" and len(cpu.run_ids) == 3
        assert cpu.noise_floor == pytest.approx(0.02, abs=0.015)  # the within-session spread
        assert "3 A/A session(s); between-session spread" in cpu.method
        assert set(cpu.mde) == {5, 10} and all(v is not None and v > 0.2 for v in cpu.mde.values())
        text = describe(cpu)
        assert "within-session launch spread" in text and "between-session spread" in text
        assert any("text" in note and "at least 6" in note for note in report.notes)
        assert history.calibrations(cpu.key)["cpu_ms.p50"].noise_floor == pytest.approx(cpu.noise_floor)

        # One baseline session: inconclusive on its own; the A/A sessions (same environment) give it a
        # between-session spread, and it is a wide one, so a 25 % slower candidate is no regression here.
        history.record(RunInfo("pi3b", "gles2", "b1", False, ENV, started_utc="2026-10-09T00:00:00Z"),
                       [SceneRecord("fill", {}, "paced", None, launches(5.0, 6, 0.02, 30))])
        slower = launches(5.0 * 1.25, 6, 0.02, 31)
        with_aa = judge_against_history(history, cpu.key, slower, environment=ENV).verdict.by_metric()["cpu_ms.p50"]
        assert with_aa.between_df == 2 and any("A/A calibration" in s for s in with_aa.between_sources)
        assert with_aa.verdict == "inconclusive" and with_aa.ci is not None and with_aa.ci[0] < 1.0
        other_env = judge_against_history(history, cpu.key, slower, environment={"x": 1}).verdict
        assert other_env.by_metric()["cpu_ms.p50"].ci is None  # no A/A sessions in that environment: thin
        assert "one baseline session" in other_env.by_metric()["cpu_ms.p50"].reason


def test_no_aa_runs_is_a_note(tmp_path):
    with History(tmp_path / "h.sqlite") as history:
        report = calibrate_from_runs(history, "pi3b", ["fill"])
    assert report.calibrations == () and "no A/A runs" in report.notes[0]


def test_one_aa_session_says_the_between_session_spread_needs_more(tmp_path):
    with History(tmp_path / "h.sqlite") as history:
        history.record(RunInfo("pi3b", "gles2", "b", False, ENV, kind="calibration"),
                       [SceneRecord("fill", {}, "paced", None, launches(5.0, 10, 0.03, 1))])
        report = calibrate_from_runs(history, "pi3b")
    assert any("one A/A session" in note and "--sessions 3" in note for note in report.notes)
    cpu = {c.metric: c for c in report.calibrations}["cpu_ms.p50"]
    assert all(v is None for v in cpu.mde.values()) and "never (no between-session spread)" in describe(cpu)
    assert math.isfinite(cpu.noise_floor)
