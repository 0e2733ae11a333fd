"""The run history, against SQLite and PostgreSQL alike: round trip, comparable-run selection, fingerprints,
concurrent writers, the schema's versions, and faults mid-write."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
import time

import numpy as np
import pytest
from history_rows import count
from sqlalchemy import func, select

from pytest_zbench.regression import store
from pytest_zbench.regression.baseline import judge_against_history
from pytest_zbench.regression.history import (
    Calibration,
    History,
    HistoryError,
    RunInfo,
    SceneKey,
    SceneRecord,
    changed_keys,
    environment_fingerprint,
    hash_params,
)
from pytest_zbench.stats import LaunchSamples

ENV = {"device": {"model": "Raspberry Pi 3B+"}, "gpu": {"gl_renderer": "VC4 V3D 2.1", "timer_source": "none"},
       "display": {"width": 800, "height": 480, "refresh_hz": 60.0}}


def launch(p50: float, *, source: str | None = None, gpu: float | None = None) -> dict:
    return {"cpu_ms": {"p50": p50, "p95": p50 * 1.3}, "gpu_ms": None if gpu is None else {"p50": gpu, "p95": gpu},
            "gpu_source": source, "jank_share": 0.0}


def scene(level: float = 5.0, *, scene_id: str = "fill.alpha.x4", params: dict | None = None, mode: str = "paced",
          source: str | None = None, n: int = 5, samples: bool = False, seed: int = 0) -> SceneRecord:
    rng = np.random.default_rng(seed)
    values = level * np.exp(rng.normal(0, 0.02, n))
    arrays = [{"cpu_ms": rng.lognormal(np.log(level), 0.2, 600), "interval_ms": np.full(600, 16.7)}
              for _ in range(n)] if samples else None
    return SceneRecord(scene_id, params if params is not None else {"layers": 4}, mode, source,
                       [launch(float(v), source=source, gpu=None if source is None else 3.0) for v in values],
                       arrays)


def run(day: int, *, device: str = "pi3b", backend: str = "gles2", build: str | None = None,
        env: dict | None = None, kind: str = "run", run_id: str | None = None) -> RunInfo:
    extra = {"run_id": run_id} if run_id else {}
    return RunInfo(device, backend, build or f"build{day:02d}", False, env if env is not None else ENV,
                   started_utc=f"2026-10-{day:02d}T10:00:00Z", kind=kind, **extra)


@pytest.fixture
def history(history_url):
    with History(history_url) as h:
        yield h


def key_of(record: SceneRecord, info: RunInfo) -> SceneKey:
    return record.key(info)


def test_round_trip_keeps_summaries_samples_and_environment(history):
    info, record = run(1), scene(samples=True, seed=3)
    history.record(info, [record])
    window = history.comparable(key_of(record, info))
    (stored,) = window.runs
    assert stored.run_id == info.run_id and stored.build_hash == "build01" and stored.dirty is False
    assert stored.environment == ENV and stored.fingerprint == environment_fingerprint(ENV)
    assert list(stored.launches) == list(record.launches)
    samples = history.samples(stored.scene_row)
    assert len(samples) == 5
    for got, sent in zip(samples, record.samples):
        np.testing.assert_array_equal(got["cpu_ms"], sent["cpu_ms"])
        np.testing.assert_array_equal(got["interval_ms"], sent["interval_ms"])
    stored_bytes = history.store.read(lambda conn: conn.execute(
        select(func.sum(func.length(store.launches.c.samples)))).scalar())
    assert stored_bytes < 5 * 600 * 8 * 2 * 0.8  # compressed float64, not text


def test_launch_samples_objects_are_stored_by_array(history):
    cpu = np.linspace(4, 6, 100)
    raw = LaunchSamples(cpu_ms=cpu, gpu_ms=np.full(100, 2.0), gpu_source="timer_query",
                        interval_ms=np.full(100, 16.7), warmup_cpu_ms=[9.0, 8.0], counters={"draw_calls": np.ones(100)},
                        mode="paced")
    record = SceneRecord("s", {}, "paced", "timer_query", [launch(5.0, source="timer_query", gpu=2.0)], [raw])
    info = run(1)
    history.record(info, [record])
    (stored,) = history.samples(history.comparable(key_of(record, info)).runs[0].scene_row)
    np.testing.assert_array_equal(stored["cpu_ms"], cpu)
    np.testing.assert_array_equal(stored["warmup_cpu_ms"], [9.0, 8.0])
    np.testing.assert_array_equal(stored["counter.draw_calls"], np.ones(100))


def test_comparable_runs_share_device_backend_scene_params_mode_and_gpu_source(history):
    base = scene()
    for day in range(1, 8):
        history.record(run(day), [base])
    history.record(run(10, device="nexus7"), [base])
    history.record(run(11, backend="software"), [base])
    history.record(run(12), [scene(params={"layers": 8})])
    history.record(run(13), [scene(mode="uncapped")])
    history.record(run(14), [scene(source="timer_query")])
    history.record(run(15), [scene(scene_id="fill.opaque")])
    history.record(run(16, kind="calibration"), [base])

    window = history.comparable(key_of(base, run(1)), window=5)
    assert [r.build_hash for r in window.runs] == ["build07", "build06", "build05", "build04", "build03"]
    assert len(window.launches) == 25
    everything = history.comparable(key_of(base, run(1)), window=100)
    assert len(everything.runs) == 7  # none of the other device/backend/params/mode/source/scene/kind runs

    with_source = SceneRecord("fill.alpha.x4", {"layers": 4}, "paced", "timer_query", [])
    assert [r.build_hash for r in history.comparable(with_source.key(run(1))).runs] == ["build14"]
    assert hash_params({"b": 1, "a": 2}) == hash_params({"a": 2, "b": 1})


def test_window_excludes_the_candidate_and_later_runs(history):
    base = scene()
    infos = [run(day) for day in range(1, 6)]
    for info in infos:
        history.record(info, [base])
    key = key_of(base, infos[0])
    assert infos[-1].run_id not in [r.run_id for r in history.comparable(key, exclude_run=infos[-1].run_id).runs]
    earlier = history.comparable(key, before_utc="2026-10-03T10:00:00Z")
    assert [r.build_hash for r in earlier.runs] == ["build02", "build01"]
    assert history.comparable(SceneKey("pi3b", "gles2", "nothing", "0", "paced", None)).empty


def test_fingerprint_change_is_reported_with_the_keys_that_changed(history):
    base = scene()
    new_driver = {**ENV, "gpu": {**ENV["gpu"], "gl_renderer": "VC4 V3D 2.2"}}
    for day in range(1, 4):
        history.record(run(day), [base])
    history.record(run(4, env=new_driver), [base])
    history.record(run(5, env=new_driver), [base])
    key = key_of(base, run(1))

    window = history.comparable(key, window=5, environment=new_driver)
    (change,) = window.changes
    assert change.build_hash == "build04" and change.changed_keys == ("gpu.gl_renderer",)
    assert "environment fingerprint changed at run" in window.describe()
    assert "gpu.gl_renderer" in window.describe()

    display_changed = {**new_driver, "display": {**ENV["display"], "refresh_hz": 50.0}}
    latest = history.comparable(key, window=2, environment=display_changed)
    (to_candidate,) = latest.changes
    assert to_candidate.run_id is None and to_candidate.changed_keys == ("display.refresh_hz",)
    assert "between the baseline and the candidate" in latest.describe()

    same_env = history.comparable(key, window=5, environment=ENV, same_fingerprint=True)
    assert [r.build_hash for r in same_env.runs] == ["build03", "build02", "build01"]
    assert changed_keys({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}}) == ("a.c",)


def test_scene_written_again_in_one_run_replaces_the_first_copy(history):
    info = run(1)
    history.record(info, [scene(5.0)])
    history.record(info, [scene(7.0, seed=1)])
    (stored,) = history.comparable(key_of(scene(), info)).runs
    assert stored.median("cpu_ms.p50") == pytest.approx(7.0, rel=0.05)


def test_series_and_scene_keys(history):
    for day in range(1, 5):
        history.record(run(day), [scene(5.0 if day < 3 else 6.0, seed=day), scene(scene_id="text.labels")])
    history.record(run(5, device="nexus7"), [scene()])
    keys = history.scene_keys(device="pi3b")
    assert [k.scene_id for k in keys] == ["fill.alpha.x4", "text.labels"]
    series = history.series(keys[0])
    assert [p.build_hash for p in series] == ["build01", "build02", "build03", "build04"]
    assert series[-1].value == pytest.approx(6.0, rel=0.05) and series[-1].n_launches == 5
    assert [k.device for k in history.scene_keys(scene_id="fill.alpha.x4")] == ["nexus7", "pi3b"]


def test_calibrations_newest_per_metric(history):
    key = SceneKey("pi3b", "gles2", "fill.alpha.x4", hash_params({"layers": 4}), "paced", None)
    for floor, when in ((0.05, "2026-10-01T00:00:00Z"), (0.02, "2026-10-02T00:00:00Z")):
        history.save_calibration(Calibration(key, "cpu_ms.p50", floor, 10, {5: 0.2, 10: None}, 0.05, 0.8, "sim",
                                             "b1", "fp", ("r1",), created_utc=when))
    got = history.calibrations(key)
    assert got["cpu_ms.p50"].noise_floor == 0.02 and got["cpu_ms.p50"].mde == {5: 0.2, 10: None}
    assert history.calibrations(key, fingerprint="other") == {}


def test_judge_against_history(history):
    base = scene()
    info = run(1)
    key = key_of(base, info)
    assert judge_against_history(history, key, base.launches).verdict is None
    for day in range(1, 4):
        history.record(run(day), [scene(5.0, seed=day)])
    slower = scene(7.5, seed=9)
    result = judge_against_history(history, key, slower.launches, window=3)
    assert result.verdict is not None and result.verdict.verdict == "regressed"
    assert "3 run(s) of fill.alpha.x4 on pi3b/gles2" in result.message()
    # A/A calibration sessions that move by 40 % between them widen the between-session spread.
    for day, level in ((5, 3.5), (6, 5.0), (7, 7.0)):
        history.record(run(day, kind="calibration", build="aa"), [scene(level, seed=20 + day)])
    damped = judge_against_history(history, key, slower.launches, window=3, environment=ENV)
    assert any("A/A calibration" in source for source in damped.verdict.by_metric()["cpu_ms.p50"].between_sources)
    assert damped.verdict.by_metric()["cpu_ms.p50"].verdict != "regressed"


def test_newer_schema_is_refused(history_url):
    History(history_url).close()
    with History(history_url) as h:
        h.store.write(lambda conn: conn.execute(store.schema_info.update().values(version=99)))
    with pytest.raises(HistoryError, match=rf"written by a newer pytest-zbench \(schema 99, this one reads up to "
                                           rf"{store.SCHEMA_VERSION}\)"):
        History(history_url)


def test_newer_schema_in_user_version_is_refused(tmp_path):
    """What schema 1 kept (SQLite's user_version) is still read: a file a newer version stamped there is refused."""
    path = tmp_path / "h.sqlite"
    History(path).close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(HistoryError, match="newer pytest-zbench"):
        History(path)


def test_wal_mode(tmp_path):
    with History(tmp_path / "h.sqlite") as history, history.store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"


def _writer(location: str, worker: int, shared_run_id: str, count: int, start=None) -> None:  # type: ignore[no-untyped-def]
    if start is not None:
        start.wait()  # all open the (new, empty) database at once, then all write at once
    with History(location, timeout_s=10) as h:
        shared = RunInfo("pi3b", "gles2", "shared", False, ENV, run_id=shared_run_id,
                         started_utc="2026-10-20T10:00:00Z")
        for i in range(count):
            own = RunInfo("pi3b", "gles2", f"w{worker}-{i}", False, ENV,
                          started_utc=f"2026-10-01T{worker:02d}:00:{i:02d}Z")
            h.record(own, [scene(5.0, samples=True, n=3, seed=worker * 100 + i)])
            # xdist workers write their scenes under the controller's one run id
            h.record(shared, [scene(5.0, scene_id=f"scene.w{worker}.{i}", n=2, seed=i)])


def test_concurrent_writers_lose_nothing(history_url):
    workers, count_each = 4, 40
    # fork where it exists (fast); no connection is open in this process when the writers start
    ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    start = ctx.Barrier(workers)
    procs = [ctx.Process(target=_writer, args=(history_url, w, "shared-run", count_each, start))
             for w in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * workers  # a "database is locked" would exit 1
    with History(history_url) as h:
        key = scene().key(RunInfo("pi3b", "gles2", "x", environment=ENV))
        assert len(h.comparable(key, window=1000).runs) == workers * count_each
        assert len(h.scene_keys()) == 1 + workers * count_each
        assert count(h, store.scenes, store.scenes.c.run_id == "shared-run") == workers * count_each
        assert count(h, store.runs, store.runs.c.run_id == "shared-run") == 1
        assert count(h, store.runs) == 1 + workers * count_each
        assert count(h, store.launches, store.launches.c.samples.is_not(None)) == workers * count_each * 3
        assert count(h, store.launches) == workers * count_each * 3 + workers * count_each * 2


def test_a_run_recording_one_scene_in_two_modes_keeps_both(history):
    info = run(1)
    paced, uncapped = scene(5.0, mode="paced", n=3), scene(9.0, mode="uncapped", n=4, seed=1)
    history.record(info, [paced, uncapped])
    assert count(history, store.scenes) == 2 and count(history, store.launches) == 3 + 4
    # Writing the paced copy again replaces it and leaves the uncapped one alone.
    history.record(info, [scene(6.0, mode="paced", n=2, seed=2)])
    assert count(history, store.scenes) == 2 and count(history, store.launches) == 2 + 4
    (kept,) = history.comparable(key_of(uncapped, info)).runs
    assert kept.median("cpu_ms.p50") == pytest.approx(9.0, rel=0.05)
    (rewritten,) = history.comparable(key_of(paced, info)).runs
    assert rewritten.median("cpu_ms.p50") == pytest.approx(6.0, rel=0.05)


def test_a_sqlite_write_waits_while_another_connection_holds_the_database_for_a_second(tmp_path):
    path = tmp_path / "history.sqlite"
    # SQLite's own busy wait (timeout_s) far shorter than the hold: only the store's retries can carry the write.
    with History(path, timeout_s=0.05) as history:
        holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        holder.execute("BEGIN EXCLUSIVE")
        release = threading.Timer(1.0, lambda: holder.execute("COMMIT"))
        release.start()
        started = time.monotonic()
        try:
            history.record(run(1), [scene()])
        finally:
            release.join()
            holder.close()
        assert time.monotonic() - started >= 0.9  # it did wait for the holder
        assert count(history, store.runs) == 1 and count(history, store.launches) == 5


def test_a_session_judged_a_change_is_no_baseline_until_accepted(history):
    """The 9x spike series: runs 0-4 at 1.23 ms, run 5 at 9x is `regressed`; before, run 5 stayed in run 6's
    baseline and run 6 (back at 1.23 ms) came out `inconclusive x0.912 [0.069, 12.054]`. Now run 6 is judged
    against runs 0-4, as change-point tools segment a series at an alert."""
    key = key_of(scene(1.23), run(1))
    for day in range(1, 6):
        history.record(run(day, run_id=f"r{day}"), [scene(1.23, seed=day)])
    spike = scene(1.23 * 9, seed=6)
    judged = judge_against_history(history, key, spike.launches, window=5).verdict
    assert judged is not None and judged.verdict == "regressed"
    history.record(run(6, run_id="r6"), [spike])
    history.mark_verdict("r6", key, judged.verdict)

    back = scene(1.23, seed=7).launches
    window = history.comparable(key, window=5)
    assert [r.run_id for r in window.runs] == ["r5", "r4", "r3", "r2", "r1"]
    after = judge_against_history(history, key, back, window=5).verdict
    assert after is not None and after.verdict == "same", after.verdicts[0].reason

    # Accepted as the new level: the series starts there, the runs before it are no longer baselines.
    assert history.set_level("r6", "accepted") == 1
    assert [r.run_id for r in history.comparable(key, window=5).runs] == ["r6"]
    # Excluded: never a baseline, and the level is the runs before it again.
    assert history.set_level("r6", "excluded") == 1
    assert [r.run_id for r in history.comparable(key, window=5).runs] == ["r5", "r4", "r3", "r2", "r1"]
    assert history.set_level("r5", "excluded", scene_id="another.scene") == 0
    # Unmarked: the gate's own verdict rules again.
    assert history.set_level("r6", None) == 1
    assert "r6" not in [r.run_id for r in history.comparable(key, window=5).runs]
    assert [p.run_id for p in history.series(key)][-1] == "r6"  # the series itself keeps every run


def test_zbench_history_accept_exclude_and_unmark_a_run(tmp_path, capsys):
    from pytest_zbench.cli import main

    path = tmp_path / "history.sqlite"
    with History(path) as h:
        for day in (1, 2):
            h.record(run(day, run_id=f"session{day}-pi3b"), [scene(5.0, seed=day), scene(5.0, scene_id="other")])
    assert main(["history", "accept", "session2", "--history", str(path)]) == 0
    assert "2 scene(s) of run session2 accepted as the new level" in capsys.readouterr().out
    assert main(["history", "exclude", "session1", "--history", str(path), "--scene", "other"]) == 0
    assert "1 scene(s) of run session1 (other) excluded from every baseline" in capsys.readouterr().out
    with History(path) as h:
        key = key_of(scene(5.0), run(3))
        assert [r.run_id for r in h.comparable(key, window=5).runs] == ["session2-pi3b"]
    assert main(["history", "unmark", "session2", "--history", str(path)]) == 0
    assert main(["history", "accept", "nosuchrun", "--history", str(path)]) == 2
    assert "no scene of a run 'nosuchrun'" in capsys.readouterr().err
    assert main(["history", "accept", "--history", str(path)]) == 2
    assert "give the RUN to accept" in capsys.readouterr().err
