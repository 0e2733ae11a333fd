"""`zbench history` and `zbench calibrate --from-history` on a seeded history file."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from pytest_zbench.cli import main
from pytest_zbench.regression.history import History, RunInfo, SceneRecord

ENV = {"gpu": {"gl_renderer": "VC4 V3D 2.1"}}


def launches(level: float, seed: int, n: int = 5) -> list[dict]:
    values = level * np.exp(np.random.default_rng(seed).normal(0, 0.02, n))
    return [{"cpu_ms": {"p50": float(v), "p95": float(v) * 1.3}, "gpu_ms": None, "gpu_source": None,
             "jank_share": 0.0} for v in values]


@pytest.fixture
def seeded(tmp_path):
    path = tmp_path / "history.sqlite"
    with History(path) as history:
        for day in range(1, 17):
            env = ENV if day < 13 else {"gpu": {"gl_renderer": "VC4 V3D 2.2"}}
            info = RunInfo("pi3b", "gles2", f"{day:02d}" + "c0ffee" * 6, False, env,
                           started_utc=f"2026-10-{day:02d}T10:00:00Z")
            history.record(info, [SceneRecord("fill.alpha.x4", {"layers": 4}, "paced", None,
                                               launches(5.0 if day < 10 else 6.5, day)),
                                  SceneRecord("text.labels", {}, "paced", None, launches(3.0, 100 + day))])
        for i in range(2):
            info = RunInfo("pi3b", "gles2", "aa", False, ENV, started_utc=f"2026-10-2{i}T10:00:00Z",
                           kind="calibration")
            history.record(info, [SceneRecord("fill.alpha.x4", {"layers": 4}, "paced", None, launches(5.0, 50 + i))])
    return path


def test_history_prints_series_with_change_points(seeded, capsys):
    assert main(["history", "--history", str(seeded), "--scene", "fill.alpha.x4"]) == 0
    out = capsys.readouterr().out
    assert "fill.alpha.x4 on pi3b/gles2" in out and "cpu_ms.p50, 16 run(s)" in out
    assert "text.labels" not in out
    assert "<- step x1.3" in out
    assert "change point: run #9, build 10c0ffeec0ff (2026-10-10), x1.3" in out
    assert "environment changed" in out  # at run #12


def test_history_filters_by_device_and_reports_flat_series(seeded, capsys):
    assert main(["history", "--history", str(seeded), "--device", "pi3b", "--scene", "text.labels"]) == 0
    out = capsys.readouterr().out
    assert "text.labels" in out and "change points: none" in out
    assert main(["history", "--history", str(seeded), "--device", "nexus7"]) == 0
    assert "no runs of device 'nexus7'" in capsys.readouterr().out


def test_history_without_a_database_is_a_usage_error(tmp_path, capsys):
    assert main(["history", "--history", str(tmp_path / "missing.sqlite")]) == 2
    assert "no history database" in capsys.readouterr().err
    assert not (tmp_path / "missing.sqlite").exists()


def test_module_entry_point(seeded):
    done = subprocess.run([sys.executable, "-m", "pytest_zbench.cli", "history", "--history", str(seeded),
                           "--metric", "cpu_ms.p95"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "cpu_ms.p95" in done.stdout and "change point: run #9" in done.stdout


def test_calibrate_from_history(seeded, capsys):
    assert main(["calibrate", "--device", "pi3b", "--history", str(seeded), "--from-history"]) == 0
    out = capsys.readouterr().out
    assert "fill.alpha.x4 on pi3b/gles2" in out and "within-session launch spread" in out
    assert "from 10 A/A launches" in out and "2 A/A session(s); between-session spread" in out
    assert "calibration(s) stored" in out
    with History(seeded) as history:
        key = history.scene_keys(kinds=("calibration",))[0]
        assert "cpu_ms.p50" in history.calibrations(key)


def test_calibrate_without_aa_runs_fails(seeded, capsys):
    assert main(["calibrate", "--device", "nexus7", "--history", str(seeded), "--from-history"]) == 1
    assert "no A/A runs" in capsys.readouterr().out
