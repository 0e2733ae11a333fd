"""The history's storage layer: one schema (SQLAlchemy Core), its migrations, and the transactions every
query runs in, the same for a SQLite file and a PostgreSQL database (docs/regression.md, "History").

* Writes are one transaction each, so a reader never sees half a run. SQLite: `BEGIN IMMEDIATE` (the write
  lock up front) in WAL mode, readers never block; PostgreSQL: READ COMMITTED, a run row inserted by
  several writers at once (xdist workers of one session) is `ON CONFLICT DO NOTHING`.
* Reads are one transaction each: SQLite's deferred BEGIN in WAL mode, PostgreSQL's REPEATABLE READ READ
  ONLY, so a query of several statements sees one snapshot while others write.
* A transient failure is retried with jittered backoff: a busy SQLite file or a serialization failure, and
  a lost connection (server restart, network fault). Every write is idempotent (a run row is inserted if
  missing, a scene replaces its earlier copy), so a retry after a commit whose answer was lost duplicates
  nothing. What still fails is a HistoryError naming the location (password removed) and what to do.
* The schema is versioned (`zbench_schema`, and SQLite's user_version, which pytest-zbench up to schema 1
  checks): migrations run on first use, in one transaction under a lock, and a database newer than this
  code is refused.

WAL needs a local file system: keep a SQLite history off NFS/SMB shares; share a PostgreSQL database instead.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import (
    Boolean,
    Column,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    inspect,
    text,
)
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from ..errors import ZbenchError
from .location import HistoryLocation, postgres_driver_missing

SCHEMA_VERSION = 3
T = TypeVar("T")

metadata = MetaData()

runs = Table(
    "runs", metadata,
    Column("run_id", Text, primary_key=True),  # `<session run id>-<device>`: unique per device and session
    Column("started_utc", Text, nullable=False),
    Column("started_ts", Double, nullable=False),
    Column("kind", Text, nullable=False),
    Column("build_hash", Text, nullable=False),
    Column("dirty", Boolean),
    Column("device", Text, nullable=False),
    Column("backend", Text, nullable=False),
    Column("fingerprint", Text, nullable=False),
    Column("environment", Text, nullable=False),  # JSON
    Column("host", Text),  # schema 2: the machine that recorded the run (NULL for runs recorded before)
)
Index("runs_by_device", runs.c.device, runs.c.backend, runs.c.started_ts)

scenes = Table(
    "scenes", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Text, ForeignKey("runs.run_id", ondelete="CASCADE"), nullable=False),
    Column("scene_id", Text, nullable=False),
    Column("params_hash", Text, nullable=False),
    Column("params", Text, nullable=False),  # JSON
    Column("mode", Text, nullable=False),
    Column("gpu_source", Text),
    Column("summary", Text),  # JSON
    # schema 3: the history gate's verdict on the scene in this run, and a person's decision on it (LEVELS):
    # a session judged a change is no baseline until accepted as the new level (docs/regression.md, "History")
    Column("verdict", Text),
    Column("level", Text),
    UniqueConstraint("run_id", "scene_id", "params_hash", "mode"),
)
# `zbench history accept|exclude`: accepted, the run starts the series' new level (runs before it are no longer
# baselines); excluded, the run is never a baseline.
LEVELS = ("accepted", "excluded")
Index("scenes_by_key", scenes.c.scene_id, scenes.c.params_hash, scenes.c.mode, scenes.c.gpu_source)

launches = Table(
    "launches", metadata,
    Column("scene_row", Integer, ForeignKey("scenes.id", ondelete="CASCADE"), primary_key=True),
    Column("idx", Integer, primary_key=True),
    Column("summary", Text, nullable=False),  # JSON
    Column("samples", LargeBinary),  # npz (history.pack_samples)
)

calibrations = Table(
    "calibrations", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("created_utc", Text, nullable=False),
    Column("created_ts", Double, nullable=False),
    Column("device", Text, nullable=False),
    Column("backend", Text, nullable=False),
    Column("scene_id", Text, nullable=False),
    Column("params_hash", Text, nullable=False),
    Column("mode", Text, nullable=False),
    Column("gpu_source", Text),
    Column("metric", Text, nullable=False),
    Column("noise_floor", Double, nullable=False),
    Column("n_launches", Integer, nullable=False),
    Column("mde", Text, nullable=False),  # JSON
    Column("alpha", Double, nullable=False),
    Column("power", Double, nullable=False),
    Column("method", Text, nullable=False),
    Column("build_hash", Text, nullable=False),
    Column("fingerprint", Text, nullable=False),
    Column("run_ids", Text, nullable=False),  # JSON
)
Index("calibrations_by_key", calibrations.c.device, calibrations.c.backend, calibrations.c.scene_id,
      calibrations.c.params_hash, calibrations.c.mode)

schema_info = Table("zbench_schema", metadata, Column("version", Integer, nullable=False))


def _migrate_1_to_2(conn: Connection) -> None:
    """Schema 1 (SQLite only, version in user_version) -> 2: runs.host, and the zbench_schema table."""
    conn.execute(text("ALTER TABLE runs ADD COLUMN host TEXT"))
    schema_info.create(conn)


def _migrate_2_to_3(conn: Connection) -> None:
    """Schema 2 -> 3: scenes.verdict and scenes.level (NULL for the scenes recorded before: never judged here)."""
    conn.execute(text("ALTER TABLE scenes ADD COLUMN verdict TEXT"))
    conn.execute(text("ALTER TABLE scenes ADD COLUMN level TEXT"))


# MIGRATIONS[v] takes a database from schema v to v + 1. A new database is created at SCHEMA_VERSION
# directly from `metadata`; tests/regression check that both roads give the same tables.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {1: _migrate_1_to_2, 2: _migrate_2_to_3}

# Serialises first-use migrations of one PostgreSQL database (an arbitrary, fixed advisory lock key).
_MIGRATION_LOCK = 0x7A62656E6368  # "zbench"

# libpq connection parameters set unless the URL gives its own: fail fast on an unreachable server, and
# notice a dead peer within about a minute instead of the kernel's two hours.
_PG_CONNECT_DEFAULTS = {"connect_timeout": 10, "application_name": "pytest-zbench", "keepalives": 1,
                        "keepalives_idle": 30, "keepalives_interval": 10, "keepalives_count": 3}


_PERMANENT_CONNECT_ERRORS = ("authentication failed", "no password supplied", "password is required",
                             "does not exist", "permission denied", "no pg_hba.conf entry", "invalid dsn",
                             "invalid connection option", "could not translate host name")


class HistoryError(ZbenchError):
    """The history database could not be read or written; the message names it (password removed).
    `permanent`: trying again cannot help (a refused login, a missing database), unlike a lost server."""

    permanent: bool = False


class Store:
    """Engine, schema and transactions of one history database. One object per process."""

    def __init__(self, location: HistoryLocation, *, timeout_s: float = 30.0, retries: int = 8,
                 connection_retries: int = 4) -> None:
        self.location = location
        self.retries = retries
        self.connection_retries = connection_retries
        self._unreachable = False  # the last operation lost the server after every retry: try once only
        self.engine = self._open(timeout_s)
        try:
            self.migrate()
        except BaseException:
            self.engine.dispose()
            raise

    @property
    def postgres(self) -> bool:
        return self.location.kind == "postgresql"

    def close(self) -> None:
        self.engine.dispose()

    # -- engines -----------------------------------------------------------------------------------------

    def _open(self, timeout_s: float) -> Engine:
        return self._postgres_engine() if self.postgres else self._sqlite_engine(timeout_s)

    def _sqlite_engine(self, timeout_s: float) -> Engine:
        path = self.location.path
        assert path is not None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HistoryError(f"cannot create the folder of the history database {path}: {exc}; check the path "
                               "(--zbench-history) and its directory's permissions") from exc
        engine = create_engine(URL.create("sqlite", database=str(path)), connect_args={"timeout": timeout_s},
                               pool_size=1, max_overflow=4)

        @event.listens_for(engine, "connect")
        def configure(dbapi_connection: Any, _record: Any) -> None:
            # The driver's own transaction handling off: `begin` below issues BEGIN, so that a write can
            # take the lock up front (IMMEDIATE) and a read holds one snapshot (SQLAlchemy's pysqlite recipe).
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            try:
                cursor.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
                mode = cursor.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise HistoryError(f"{path}: SQLite refused WAL mode (got {mode!r}); concurrent writers need "
                                       "it: put the history on a local file system")
                cursor.execute("PRAGMA synchronous = NORMAL")
                cursor.execute("PRAGMA foreign_keys = ON")
            finally:
                cursor.close()

        @event.listens_for(engine, "begin")
        def begin(conn: Connection) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("zbench_write") else "BEGIN")

        return engine

    def _postgres_engine(self) -> Engine:
        missing = postgres_driver_missing()
        if missing:
            raise HistoryError(f"{self.location}: {missing}")
        from sqlalchemy.engine import make_url

        url = make_url(self.location.url)
        connect_args = {k: v for k, v in _PG_CONNECT_DEFAULTS.items() if k not in url.query}
        # pool_pre_ping: a pooled connection that died with a server restart is replaced, not used.
        return create_engine(url, connect_args=connect_args, pool_size=1, max_overflow=4, pool_pre_ping=True)

    # -- transactions ------------------------------------------------------------------------------------

    def write(self, body: Callable[[Connection], T], what: str = "write") -> T:
        """Run `body` in one write transaction, retrying transient failures; all of it or nothing."""
        def attempt() -> T:
            with self.engine.connect() as conn:
                if not self.postgres:
                    conn = conn.execution_options(zbench_write=True)
                with conn.begin():
                    return body(conn)
        return self._retry(attempt, what)

    def read(self, body: Callable[[Connection], T], what: str = "read") -> T:
        """Run `body` in one read transaction (one snapshot), retrying transient failures."""
        def attempt() -> T:
            with self.engine.connect() as conn:
                if self.postgres:
                    conn = conn.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
                with conn.begin():
                    return body(conn)
        return self._retry(attempt, what)

    def insert_missing(self, table: Table, key: list[str]) -> Any:
        """An INSERT that does nothing when a row with the same `key` exists (also against a concurrent
        insert of it): the dialect's `ON CONFLICT (key) DO NOTHING`."""
        from sqlalchemy.dialects import postgresql, sqlite

        dialect: Any = postgresql if self.postgres else sqlite
        return dialect.insert(table).on_conflict_do_nothing(index_elements=key)

    def _retry(self, action: Callable[[], T], what: str) -> T:
        attempt = 0
        while True:
            attempt += 1
            try:
                result = action()
                self._unreachable = False
                return result
            except HistoryError:
                raise
            except SQLAlchemyError as exc:
                kind = self._transient(exc)
                budget = {"busy": self.retries, "connection": 0 if self._unreachable else self.connection_retries}
                if kind is None or attempt > budget[kind]:
                    if kind == "connection":
                        self._unreachable = True
                    error = HistoryError(self._describe(exc, kind, what, attempt))
                    error.permanent = kind is None
                    raise error from None
                delay = min(4.0, (0.05 if kind == "busy" else 0.5) * 2 ** (attempt - 1))
                time.sleep(delay * (0.5 + random.random()))

    def _transient(self, exc: SQLAlchemyError) -> str | None:
        """"busy" (a lock or serialization conflict), "connection" (the server went away), or None."""
        if not isinstance(exc, DBAPIError):
            return None
        if not self.postgres:
            message = str(exc.orig).lower()
            return "busy" if "locked" in message or "busy" in message else None
        # Checked first: a refused login also invalidates SQLAlchemy's connection, yet retrying it cannot help
        # (a wrong password, user or database name stays wrong).
        if any(text in str(exc.orig).lower() for text in _PERMANENT_CONNECT_ERRORS):
            return None
        if exc.connection_invalidated:
            return "connection"
        sqlstate = getattr(exc.orig, "sqlstate", None) or ""
        if sqlstate in ("40001", "40P01"):  # serialization failure, deadlock: the transaction may run again
            return "busy"
        if sqlstate.startswith("08") or sqlstate in ("57P01", "57P02", "57P03"):  # connection, shutdown
            return "connection"
        import psycopg

        if isinstance(exc.orig, psycopg.OperationalError) and not sqlstate:
            # libpq's connection errors carry no SQLSTATE: a refused, reset or closed connection may come
            # back (the permanent ones were ruled out above).
            return "connection"
        return None

    def _describe(self, exc: SQLAlchemyError, kind: str | None, what: str, attempts: int) -> str:
        cause = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
        message = self.location.scrub(" ".join(str(cause).split()))
        if not self.postgres and "file is not a database" in message:  # some other file at that path
            return (f"history {self.location} is not a history database ({message}): move it aside, or point "
                    "--zbench-history (zbench: --history) at another file")
        tries = f" (after {attempts} attempt(s))" if attempts > 1 else ""
        if kind == "connection":
            advice = ("the database server could not be reached: check the URL, that the server is up, and the "
                      "credentials (~/.pgpass, PGPASSFILE or the PG* environment, never the URL)")
        elif kind == "busy":
            advice = "another process holds the database: retry, or give this run its own --zbench-history"
        elif self.postgres:
            advice = ("check the URL, the credentials (~/.pgpass, PGPASSFILE or the PG* environment, never the URL) "
                      "and that the user may create tables in the database")
        else:
            advice = "check the path (--zbench-history) and its directory's permissions"
        return f"history {self.location}: {what} failed: {message}{tries}; {advice}"

    # -- schema ------------------------------------------------------------------------------------------

    def version(self) -> int:
        return self.read(_stored_version, "opening it (reading its schema version)")

    def migrate(self) -> None:
        """Bring the database to SCHEMA_VERSION (creating it when empty); refuse a newer one."""
        version = self.version()
        self._refuse_newer(version)
        if version < SCHEMA_VERSION:
            self.write(self._migrate, "migrating the schema")

    def _migrate(self, conn: Connection) -> None:
        if self.postgres:
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
        version = _stored_version(conn)  # again, under the lock: another process may have migrated
        self._refuse_newer(version)
        if version == SCHEMA_VERSION:
            return
        if version == 0:
            if inspect(conn).has_table("runs"):
                raise HistoryError(f"history {self.location}: holds a `runs` table but no pytest-zbench schema "
                                   "version; it is not a pytest-zbench history: point --zbench-history elsewhere")
            metadata.create_all(conn)
        else:
            for step in range(version, SCHEMA_VERSION):
                MIGRATIONS[step](conn)
        conn.execute(schema_info.delete())
        conn.execute(schema_info.insert().values(version=SCHEMA_VERSION))
        if not self.postgres:
            conn.exec_driver_sql(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _refuse_newer(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise HistoryError(f"history {self.location} was written by a newer pytest-zbench (schema {version}, "
                               f"this one reads up to {SCHEMA_VERSION}): upgrade pytest-zbench, or point "
                               "--zbench-history elsewhere")


def _stored_version(conn: Connection) -> int:
    """The schema version of the database: zbench_schema's, and on SQLite at least its user_version (all
    that schema 1 kept), else 0 (empty)."""
    version = 0
    if inspect(conn).has_table(schema_info.name):
        version = int(conn.execute(schema_info.select()).scalar() or 0)
    if conn.dialect.name == "sqlite":
        version = max(version, int(conn.exec_driver_sql("PRAGMA user_version").scalar() or 0))
    return version


__all__ = ["HistoryError", "LEVELS", "MIGRATIONS", "SCHEMA_VERSION", "Store", "calibrations", "launches", "metadata",
           "runs", "scenes", "schema_info"]
