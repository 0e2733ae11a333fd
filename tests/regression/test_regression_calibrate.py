"""Calibration from A/A launches: noise floor, simulated MDE, storage, and use by the gate."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_zbench.regression.baseline import judge_against_history
from pytest_zbench.regression.calibrate import (
    calibrate_from_runs,
    calibrate_values,
    describe,
    detection_rate,
    minimum_detectable_effect,
)
from pytest_zbench.regression.gate import GateConfig
from pytest_zbench.regression.history import History, RunInfo, SceneRecord
from pytest_zbench.stats import noise_floor

ENV = {"gpu": {"gl_renderer": "llvmpipe"}}


def launches(level: float, n: int, spread: float, seed: int) -> list[dict]:
    values = level * np.exp(np.random.default_rng(seed).normal(0, spread, n))
    return [{"cpu_ms": {"p50": float(v), "p95": float(v) * 1.3}, "gpu_ms": None, "gpu_source": None,
             "jank_share": 0.0} for v in values]


def test_noise_floor_is_the_relative_mad_of_the_launches():
    values = list(8.0 * np.exp(np.random.default_rng(1).normal(0, 0.05, 20)))
    floor, mde = calibrate_values(values, ns=(3, 5, 10))
    assert floor == pytest.approx(noise_floor(values))
    assert set(mde) == {3, 5, 10}


def test_mde_is_at_least_the_bar_and_shrinks_with_launches():
    config = GateConfig()
    mde = {n: minimum_detectable_effect(0.08, n, config=config) for n in (3, 5, 10, 20)}
    bar = max(config.threshold, config.k_noise * 0.08)
    assert all(v is not None and v >= bar for v in mde.values())
    assert mde[3] >= mde[5] >= mde[10] >= mde[20]
    assert minimum_detectable_effect(0.08, 2) is None  # 2 vs 2 never reaches alpha 0.05
    assert detection_rate(0.08, 5, mde[5]) >= 0.8
    assert detection_rate(0.08, 5, mde[5] - 0.02) < 0.8
    assert detection_rate(0.08, 5, 0.0) <= 0.05


def test_calibrate_from_runs_stores_noise_floors_the_gate_then_uses(tmp_path):
    with History(tmp_path / "h.sqlite") as history:
        old = RunInfo("pi3b", "gles2", "old", False, ENV, started_utc="2026-10-01T00:00:00Z", kind="calibration")
        history.record(old, [SceneRecord("fill", {}, "paced", None, launches(5.0, 10, 0.20, 1))])
        for i in range(2):  # the newest A/A set: one build, one environment, two runs of 6 launches
            info = RunInfo("pi3b", "gles2", "new", False, ENV, started_utc=f"2026-10-0{2 + i}T00:00:00Z",
                           kind="calibration")
            history.record(info, [SceneRecord("fill", {}, "paced", None, launches(5.0, 6, 0.06, 10 + i)),
                                  SceneRecord("text", {}, "paced", None, launches(3.0, 2, 0.06, 20 + i))])
        report = calibrate_from_runs(history, "pi3b", sims=500)
        by_metric = {c.metric: c for c in report.calibrations}
        cpu = by_metric["cpu_ms.p50"]
        pooled = [launch["cpu_ms"]["p50"] for run in history.runs_of(cpu.key, kinds=("calibration",))[1:]
                  for launch in run.launches]
        assert cpu.n_launches == 12 and cpu.build_hash == "new"
        assert cpu.noise_floor == pytest.approx(noise_floor(pooled))
        assert set(cpu.mde) == {5, 10}
        assert "noise floor" in describe(cpu) and "A/A launches" in describe(cpu)
        assert any("text" in note and "at least 6" in note for note in report.notes)

        stored = history.calibrations(cpu.key)
        assert stored["cpu_ms.p50"].noise_floor == pytest.approx(cpu.noise_floor)
        # The gate against history picks the calibrated floor up (none stored for this environment: none used).
        history.record(RunInfo("pi3b", "gles2", "b1", False, ENV, started_utc="2026-10-05T00:00:00Z"),
                       [SceneRecord("fill", {}, "paced", None, launches(5.0, 5, 0.02, 30))])
        result = judge_against_history(history, cpu.key, launches(5.0, 5, 0.02, 31), environment=ENV)
        verdict = result.verdict.by_metric()["cpu_ms.p50"]
        assert verdict.noise_source == "calibration" and verdict.noise_floor == pytest.approx(cpu.noise_floor)
        other_env = judge_against_history(history, cpu.key, launches(5.0, 5, 0.02, 31), environment={"x": 1})
        assert other_env.verdict.by_metric()["cpu_ms.p50"].noise_source == "baseline launches"


def test_no_aa_runs_is_a_note(tmp_path):
    with History(tmp_path / "h.sqlite") as history:
        report = calibrate_from_runs(history, "pi3b", ["fill"])
    assert report.calibrations == () and "no A/A runs" in report.notes[0]
