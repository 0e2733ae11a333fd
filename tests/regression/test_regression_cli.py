"""`zbench history`, `zbench history export/import` and `zbench calibrate --from-history` on a seeded
history, a SQLite file and a PostgreSQL database alike."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from history_rows import table_rows

from pytest_zbench.cli import main
from pytest_zbench.regression.changepoints import latest_outside
from pytest_zbench.regression.history import (
    Calibration,
    History,
    RunInfo,
    SceneKey,
    SceneRecord,
)

ENV = {"gpu": {"gl_renderer": "VC4 V3D 2.1"}}


def launches(level: float, seed: int, n: int = 5) -> list[dict]:
    values = level * np.exp(np.random.default_rng(seed).normal(0, 0.02, n))
    return [{"cpu_ms": {"p50": float(v), "p95": float(v) * 1.3}, "gpu_ms": None, "gpu_source": None,
             "jank_share": 0.0} for v in values]


@pytest.fixture
def seeded(history_url):
    path = history_url
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


def fill_more(path: str) -> None:
    """Rows of every kind the seeded history lacks: raw samples, an A/B run from another host, a scene
    summary, a timer_query gpu source beside the NULL ones, a stored calibration."""
    with History(path) as history:
        rng = np.random.default_rng(5)
        info = RunInfo("nexus7", "gles2", "ffff", True, {"gpu": {"gl_renderer": "Adreno"}},
                       started_utc="2026-11-01T10:00:00.5Z", kind="ab", host="runner-7")
        history.record(info, [SceneRecord("fill.alpha.x4", {"layers": 4}, "paced", "timer_query",
                                          launches(4.0, 1, 3), [{"cpu_ms": rng.lognormal(1, 0.2, 50),
                                                                 "counter.draw_calls": np.ones(50)}] * 3,
                                          {"frame_ms": {"p50": 16.7}})])
        key = SceneKey("pi3b", "gles2", "fill.alpha.x4", history.scene_keys()[0].params_hash, "paced", None)
        history.save_calibration(Calibration(key, "cpu_ms.p50", 0.0123456789, 10, {5: 0.2, 10: None}, 0.05, 0.8,
                                             "sim", "b", "fp", ("r1", "r2"), created_utc="2026-11-02T00:00:00Z"))


def test_history_prints_series_with_change_points(seeded, capsys):
    assert main(["history", "--history", str(seeded), "--scene", "fill.alpha.x4"]) == 0
    out = capsys.readouterr().out
    assert "fill.alpha.x4 on pi3b/gles2" in out and "cpu_ms.p50, 16 run(s)" in out
    assert "text.labels" not in out
    assert "<- step x1.3" in out
    assert "change point: run #9, build 10c0ffeec0ff (2026-10-10), x1.3" in out
    assert "environment changed" in out  # at run #12


def test_history_flags_a_latest_run_outside_the_series_spread(tmp_path, capsys):
    """0.118 -> 3.144 ms in the newest run: no change point can be found yet (3 runs must follow a step), but
    the run is flagged; a flat series is not."""
    path = str(tmp_path / "history.sqlite")
    with History(path) as history:
        for day in range(1, 9):
            level = 3.144 if day == 8 else 0.118
            info = RunInfo("pi3b", "gles2", f"{day:02d}" + "c0ffee" * 6, False, ENV,
                           started_utc=f"2026-10-{day:02d}T10:00:00Z")
            history.record(info, [SceneRecord("fill.opaque.x1", {}, "paced", None, launches(level, day)),
                                  SceneRecord("text.labels", {}, "paced", None, launches(3.0, 100 + day))])
    assert main(["history", "--history", path, "--scene", "fill.opaque.x1"]) == 0
    out = capsys.readouterr().out
    assert "change points: none" in out
    assert "latest run #7 is outside the series' spread: x26." in out and "median of the 7 run(s)" in out
    assert main(["history", "--history", path, "--scene", "text.labels"]) == 0
    assert "outside the series' spread" not in capsys.readouterr().out


def test_latest_outside_needs_earlier_runs_and_a_step_past_the_bar():
    assert latest_outside([1.0, 1.01, 0.99, 1.0, 1.3]) is not None
    assert latest_outside([1.0, 1.01, 0.99, 1.0, 1.1]) is None  # within 15 %
    assert latest_outside([1.0, 1.0, 1.0, 3.0]) is None  # 3 earlier runs: too few
    flagged = latest_outside([2.0, 2.0, 2.0, 2.0, None, 1.0])
    assert flagged is not None and flagged.ratio == pytest.approx(0.5, rel=1e-9) and flagged.z < 0


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


@pytest.mark.parametrize("command", ["history", "calibrate"])
def test_a_history_file_that_is_not_a_database_fails_naming_it(tmp_path, capsys, command):
    path = tmp_path / "history.sqlite"
    path.write_text("device,scene\npi,fill\n" * 200)  # a CSV where the database should be
    args = ["--device", "pi", "--from-history"] if command == "calibrate" else []
    assert main([command, "--history", str(path), *args]) == 1  # a HistoryError, as for any unusable history
    err = capsys.readouterr().err
    assert f"{path} is not a history database" in err and "move it aside" in err
    assert path.read_text().startswith("device,scene")  # left as it was


def test_history_of_an_unreachable_server_fails_without_the_password(postgres, capsys):
    url = postgres.url("no_such_database", password="Sh0wn-nowhere")
    assert main(["history", "--history", url]) == 1
    err = capsys.readouterr().err
    assert f"zbench history: history postgresql+psycopg://zbench@127.0.0.1:{postgres.port}/no_such_database" in err
    assert 'database "no_such_database" does not exist' in err and "Sh0wn" not in err


def test_history_url_from_the_environment(postgres, pg_database, monkeypatch, capsys):
    with History(postgres.url(pg_database)) as history:
        history.record(RunInfo("pi3b", "gles2", "b", environment=ENV),
                       [SceneRecord("text.labels", {}, "paced", None, launches(3.0, 1))])
    monkeypatch.setenv("ZBENCH_HISTORY_URL", postgres.url(pg_database))
    assert main(["history"]) == 0
    assert "text.labels on pi3b/gles2" in capsys.readouterr().out


def test_export_and_import_move_a_history_without_loss(seeded, tmp_path, postgres, capsys):
    """SQLite -> PostgreSQL -> SQLite, or PostgreSQL -> SQLite -> PostgreSQL: every row of every table arrives."""
    fill_more(seeded)
    exported = tmp_path / "exported.sqlite"
    assert main(["history", "export", str(exported), "--history", seeded]) == 0
    out = capsys.readouterr().out
    assert "exported: 19 run(s), 35 scene(s), 173 launch(es) and 1 calibration(s) copied" in out
    other = postgres.url(postgres.create_database()) if seeded.endswith(".sqlite") else str(tmp_path / "back.sqlite")
    assert main(["history", "import", str(exported), "--history", other]) == 0
    assert "imported: 19 run(s)" in capsys.readouterr().out
    with History(seeded) as a, History(exported) as b, History(other) as c:
        rows = table_rows(a)
        assert rows == table_rows(b) == table_rows(c)
        assert {name: len(r) for name, r in rows.items()} == {"runs": 19, "scenes": 35, "launches": 173,
                                                             "calibrations": 1}
        ab_key = c.scene_keys(kinds=("ab",))[0]
        (run,) = c.runs_of(ab_key, kinds=("ab",))
        assert run.host == "runner-7" and run.dirty is True and run.started_utc == "2026-11-01T10:00:00.5Z"
        np.testing.assert_array_equal(c.samples(run.scene_row)[0]["counter.draw_calls"], np.ones(50))

    # Importing again adds nothing and says so; the target is unchanged.
    assert main(["history", "import", str(exported), "--history", other]) == 0
    assert ("imported: 0 run(s), 0 scene(s), 0 launch(es) and 0 calibration(s) copied; already there, left as "
            "they were: 19 run(s), 35 scene(s), 1 calibration(s)") in capsys.readouterr().out
    with History(seeded) as a, History(other) as c:
        assert table_rows(a) == table_rows(c)


def test_export_refuses_to_overwrite_and_import_needs_a_file(seeded, tmp_path, capsys):
    existing = tmp_path / "there.sqlite"
    existing.write_bytes(b"")
    assert main(["history", "export", str(existing), "--history", seeded]) == 2
    assert "exists; export writes a new file" in capsys.readouterr().err
    assert main(["history", "import", str(tmp_path / "missing.sqlite"), "--history", seeded]) == 2
    assert "no history database at" in capsys.readouterr().err
    assert main(["history", "export", "--history", seeded]) == 2
    assert "give the FILE to export to" in capsys.readouterr().err


def test_module_entry_point(seeded):
    done = subprocess.run([sys.executable, "-m", "pytest_zbench.cli", "history", "--history", seeded,
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


def test_history_is_found_from_a_subfolder_of_the_project(tmp_path, monkeypatch, capsys):
    with History(str(tmp_path / ".zbench" / "history.sqlite")) as history:
        history.record(RunInfo("pi3b", "gles2", "c0ffee" * 6, False, ENV, started_utc="2026-10-01T10:00:00Z"),
                       [SceneRecord("text.labels", {}, "paced", None, launches(3.0, 1))])
    (tmp_path / "scenes" / "deep").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "scenes" / "deep")
    monkeypatch.delenv("ZBENCH_HISTORY_URL", raising=False)
    assert main(["history"]) == 0
    assert "text.labels" in capsys.readouterr().out


def test_history_rejects_an_unknown_metric(seeded, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["history", "--history", seeded, "--metric", "cpu_ms.p42"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "unknown metric 'cpu_ms.p42'" in err and "cpu_ms.STAT" in err and "jank_share" in err


def test_history_into_a_closed_pipe_ends_quietly(seeded):
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line, as `| head -0` would be
    try:
        done = subprocess.run([sys.executable, "-m", "pytest_zbench.cli", "history", "--history", seeded],
                              stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert done.returncode == 1


def test_calibrate_refuses_bad_options_before_running_anything(tmp_path, capsys):
    history = str(tmp_path / "history.sqlite")
    assert main(["calibrate", "--device", "local", "--history", history, "--sessions", "1", "--runs", "4"]) == 2
    assert "at least 6 A/A launches" in capsys.readouterr().err
    assert main(["calibrate", "--device", "local", "--history", history, "--frames", "0"]) == 2
    assert "--frames 0" in capsys.readouterr().err
    assert not (tmp_path / "history.sqlite").exists()
