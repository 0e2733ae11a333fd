"""Fixtures of the history tests: every test that touches the store runs against SQLite and PostgreSQL.

* `postgres` (session): a real PostgreSQL server started for the tests (tests/regression/pg_server.py).
* `pg_database` (function): a fresh database on it, dropped afterwards; its name.
* `history_url` (function, parametrised sqlite | postgresql): where a test's history lives, a file path
  or a postgresql:// URL, as a user would pass it to --zbench-history.

A missing PostgreSQL skips the postgresql cases locally and fails them when CI=true.
"""

from __future__ import annotations

import pytest
from parts import require
from pg_server import MissingPostgres, PostgresServer

try:
    # Imported once here, before any pytester fixture snapshots sys.modules: a dialect re-imported after
    # pytester's restore re-registers SQLAlchemy's functions and warns.
    import sqlalchemy.dialects.postgresql.psycopg  # noqa: F401
except ImportError:
    pass


@pytest.fixture(scope="session")
def postgres():
    try:
        server = PostgresServer().start()
    except MissingPostgres as exc:
        require(False, f"PostgreSQL ({exc})")
        return
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_database(postgres: PostgresServer):
    name = postgres.create_database()
    try:
        yield name
    finally:
        postgres.drop_database(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def history_url(request: pytest.FixtureRequest, tmp_path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "history.sqlite")
    server = request.getfixturevalue("postgres")
    return server.url(request.getfixturevalue("pg_database"))
