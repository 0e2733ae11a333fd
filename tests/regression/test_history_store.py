"""The history's storage layer: migrations from schema 1, credentials, and faults in the middle of a write.

Against a real PostgreSQL server (tests/regression/pg_server.py) where the subject is the network or the
server; against SQLite where it is the file a user already has.
"""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time
from pathlib import Path

import pytest
import schema1_data
from history_rows import approx_floats, count, decoded, table_rows
from sqlalchemy import inspect

from pytest_zbench.regression import history as history_module
from pytest_zbench.regression import store
from pytest_zbench.regression.history import History, HistoryError, RunInfo, SceneRecord
from pytest_zbench.regression.location import parse_location

SCHEMA1_FILE = Path(__file__).parent.parent / "data" / "history" / "schema1.sqlite"


def launches(n: int = 3) -> list[dict]:
    return [{"cpu_ms": {"p50": 5.0 + i / 10, "p95": 6.0}, "gpu_ms": None, "gpu_source": None, "jank_share": 0.0}
            for i in range(n)]


def record_one(h: History, run_id: str = "run-a-local", n: int = 3) -> RunInfo:
    info = RunInfo("local", "software", "b1", False, {"gpu": {}}, run_id=run_id,
                   started_utc="2026-11-01T10:00:00Z")
    h.record(info, [SceneRecord("fill", {"layers": 1}, "paced", None, launches(n), [{"cpu_ms": [1.0, 2.0]}] * n)])
    return info


# -- migrations ---------------------------------------------------------------------------------------------


def test_a_schema1_file_is_migrated_in_place_without_loss(tmp_path):
    """tests/data/history/schema1.sqlite was written by pytest-zbench before schema 2 (schema1_data.fill):
    opened now, it is migrated in place, and every row equals what today's code writes for the same runs."""
    old = tmp_path / "history.sqlite"
    shutil.copy(SCHEMA1_FILE, old)
    assert sqlite3.connect(old).execute("PRAGMA user_version").fetchone()[0] == 1

    with History(old) as migrated:
        assert migrated.store.version() == store.SCHEMA_VERSION
        schema1_data.fill(history_module, str(tmp_path / "fresh.sqlite"))
        with History(tmp_path / "fresh.sqlite") as fresh:
            # The launches' summaries and samples are recomputed today (np.exp, the generator's lognormal): their
            # last digit depends on the machine's math kernels (SIMD width, libm), not on the code, so floats agree
            # to 1e-12 relative, far above a few ulps of rounding and far below any change a migration could make.
            assert decoded(table_rows(migrated, without=("host",))) == approx_floats(
                decoded(table_rows(fresh, without=("host",))), rel=1e-12)
            assert sum(map(len, table_rows(migrated).values())) == 5 + 9 + 26 + 1  # runs, scenes, launches, calibrations
            # the runs recorded before schema 2 have no host; new ones do
            assert {row[-1] for row in _hosts(migrated)} == {None}
            assert None not in {row[-1] for row in _hosts(fresh)}
            # both roads (create at the newest schema, migrate from 1) give the same tables and columns
            assert _columns(migrated) == _columns(fresh)
        # the migrated file serves reads and writes as any other
        key = migrated.scene_keys(kinds=("run",))[0]
        assert [r.run_id for r in migrated.runs_of(key)] == ["run01-pi3b", "run02-pi3b", "run03-pi3b"]
        assert migrated.samples(migrated.runs_of(key)[0].scene_row)[0]["cpu_ms"].size == 120
        record_one(migrated)
    # schema 1 code reads user_version and refuses what it cannot read
    assert sqlite3.connect(old).execute("PRAGMA user_version").fetchone()[0] == store.SCHEMA_VERSION


def _hosts(h: History) -> list[tuple]:
    return h.store.read(lambda conn: conn.execute(store.runs.select().with_only_columns(
        store.runs.c.run_id, store.runs.c.host)).all())


def _columns(h: History) -> dict[str, list[str]]:
    def body(conn):  # type: ignore[no-untyped-def]
        inspector = inspect(conn)
        return {table: sorted(c["name"] for c in inspector.get_columns(table)) for table in inspector.get_table_names()}
    return h.store.read(body)


def test_opening_a_database_created_by_another_program_is_refused(tmp_path):
    path = tmp_path / "other.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE runs (x TEXT)")
    conn.close()
    with pytest.raises(HistoryError, match="holds a `runs` table but no pytest-zbench schema version"):
        History(path)


def test_concurrent_first_use_of_an_empty_postgres_database(postgres, pg_database):
    """Several writers creating the schema at once: one creates it (under an advisory lock), all use it."""
    url = postgres.url(pg_database)
    errors: list[BaseException] = []

    def open_and_write(i: int) -> None:
        try:
            with History(url) as h:
                record_one(h, run_id=f"run-{i}-local")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_and_write, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    with History(url) as h:
        assert count(h, store.runs) == 6 and count(h, store.schema_info) == 1 and h.store.version() == store.SCHEMA_VERSION


# -- credentials --------------------------------------------------------------------------------------------


def test_credentials_from_pgpass_and_never_in_messages(postgres, pg_database, tmp_path, monkeypatch):
    postgres.create_role("lab_writer", "pgpass-s3cret")
    postgres.execute(f'GRANT ALL ON DATABASE "{pg_database}" TO lab_writer')
    postgres.execute("GRANT ALL ON SCHEMA public TO lab_writer", database=pg_database)
    url = postgres.url(pg_database, user="lab_writer")
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "nowhere"))
    with pytest.raises(HistoryError) as refused:
        History(url)
    assert "could not be reached" not in str(refused.value)  # a missing password is not retried as a blip
    assert "lab_writer@127.0.0.1" in str(refused.value) and "credentials" in str(refused.value)

    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"127.0.0.1:{postgres.port}:{pg_database}:lab_writer:pgpass-s3cret\n")
    pgpass.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    with History(url) as h:
        record_one(h)
        assert count(h, store.runs) == 1

    wrong = parse_location(postgres.url(pg_database, user="lab_writer", password="Wr0ng-pass:@x"))
    assert "Wr0ng" not in str(wrong) and "Wr0ng" not in repr(wrong)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "nowhere"))
    with pytest.raises(HistoryError) as failed:
        History(wrong)
    assert "password authentication failed" in str(failed.value) and "Wr0ng" not in str(failed.value)
    # Permanent at once: not retried as a lost server (before: "after 5 attempt(s)", "could not be reached").
    assert "attempt(s)" not in str(failed.value) and "could not be reached" not in str(failed.value), failed.value


def test_a_refused_login_on_a_reconnect_is_permanent_at_once(postgres, pg_database, tmp_path, monkeypatch):
    """A pooled connection that died is replaced (pool_pre_ping); when that reconnect is refused for its password,
    SQLAlchemy marks the connection invalidated, and that must not make it a lost server to retry 5 times."""
    import psycopg
    from sqlalchemy.exc import OperationalError

    postgres.create_role("lab_reader", "right-s3cret")
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "nowhere"))
    with pytest.raises(psycopg.OperationalError) as refused:  # the server's own answer to a wrong password
        psycopg.connect(postgres.dsn(pg_database, user="lab_reader") + " password=wrong", connect_timeout=10)
    invalidated = OperationalError("SELECT 1", {}, refused.value, connection_invalidated=True)
    with History(postgres.url(pg_database)) as h:
        assert h.store._transient(invalidated) is None  # permanent: not "connection"
        lost = psycopg.OperationalError("server closed the connection unexpectedly")
        assert h.store._transient(OperationalError("SELECT 1", {}, lost, connection_invalidated=True)) == "connection"
        attempts = []

        def refuse() -> None:
            attempts.append(1)
            raise invalidated

        with pytest.raises(HistoryError) as failed:
            h.store._retry(refuse, "reading the baseline")
    assert attempts == [1] and "password authentication failed" in str(failed.value)
    assert "could not be reached" not in str(failed.value)


# -- faults mid-write ---------------------------------------------------------------------------------------


def _blocked_writer(postgres, database: str) -> tuple[threading.Thread, list, dict]:  # type: ignore[no-untyped-def]
    """Start record() in a thread and wait until it is in the middle of its transaction: the run and scene rows
    written, the launches' INSERT waiting for the lock that _lock_launches holds on the table."""
    outcome: list = []
    holder: dict = {}

    def write() -> None:
        try:
            with History(postgres.url(database)) as h:
                holder["history"] = h
                record_one(h)
            outcome.append("recorded")
        except HistoryError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=write)
    thread.start()
    deadline = time.monotonic() + 30
    while True:
        waiting = postgres.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND application_name = 'pytest-zbench'"
            " AND wait_event_type = 'Lock'", database, (database,))
        if waiting:
            holder["pid"] = waiting[0][0]
            return thread, outcome, holder
        assert time.monotonic() < deadline, "the write never reached the locked table"
        time.sleep(0.05)


def _lock_launches(postgres, database: str):  # type: ignore[no-untyped-def]
    import psycopg

    admin = psycopg.connect(postgres.dsn(database))
    admin.execute("LOCK TABLE launches IN ACCESS EXCLUSIVE MODE")
    return admin


def test_a_connection_cut_mid_write_is_retried_and_the_run_is_there_once(postgres, pg_database):
    History(postgres.url(pg_database)).close()
    admin = _lock_launches(postgres, pg_database)
    thread, outcome, holder = _blocked_writer(postgres, pg_database)
    # Half a run is in the writer's open transaction: no reader sees any of it.
    with History(postgres.url(pg_database)) as reader:
        assert reader.scene_keys() == []
    postgres.execute("SELECT pg_terminate_backend(%s)", params=(holder["pid"],))
    time.sleep(0.3)
    admin.commit()
    admin.close()
    thread.join(60)
    assert outcome == ["recorded"]
    with History(postgres.url(pg_database)) as h:
        assert count(h, store.runs) == 1 and count(h, store.scenes) == 1 and count(h, store.launches) == 3


def test_a_server_crash_mid_write_leaves_nothing_half_written(postgres, pg_database):
    with History(postgres.url(pg_database)) as h:
        record_one(h, run_id="earlier-local")
    admin = _lock_launches(postgres, pg_database)
    thread, outcome, _ = _blocked_writer(postgres, pg_database)
    postgres.crash()  # and it stays down while the writer retries
    thread.join(120)
    admin.close()
    (error,) = outcome
    assert isinstance(error, HistoryError)
    assert f"history postgresql+psycopg://zbench@127.0.0.1:{postgres.port}/{pg_database}" in str(error)
    assert "recording run run-a-local failed" in str(error) and "could not be reached" in str(error)
    postgres.restart()
    with History(postgres.url(pg_database)) as h:
        assert [row[0] for row in _hosts(h)] == ["earlier-local"]
        assert count(h, store.scenes) == 1 and count(h, store.launches) == 3  # the earlier run's only
        record_one(h)  # and the same run, written again, goes in whole
        assert count(h, store.runs) == 2 and count(h, store.launches) == 6
