"""Where the history lives: a SQLite file (the default) or a PostgreSQL database named by a URL.

    .zbench/history.sqlite                       a file, created on first use
    postgresql://zbench@db.lab:5432/history      a lab's shared database (psycopg 3)
    postgresql+psycopg://zbench@/history?host=/run/postgresql

Credentials belong in libpq's own places (~/.pgpass, PGPASSFILE, PGPASSWORD, a service file), never in the
URL. A password given in the URL anyway is used to connect and shown nowhere: str() of a location, which is
what run.json, JUnit, the terminal and every error message print, has it removed (docs/regression.md).
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import quote, quote_plus

# The environment variable that names the history when neither the command line nor the ini does: CI
# passes a lab's URL from a secret this way, without putting it on a command line.
HISTORY_ENV = "ZBENCH_HISTORY_URL"

POSTGRES_SCHEMES = ("postgresql", "postgresql+psycopg")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
# libpq connection parameters that are secrets when given in a URL's query string.
_SECRET_PARAMS = ("password", "sslpassword")
REDACTED = "***"


@dataclass(frozen=True)
class HistoryLocation:
    """A history database. `str()` is safe to print: a URL without its password."""

    kind: Literal["sqlite", "postgresql"]
    display: str
    path: Path | None = None
    url: str = field(default="", repr=False, compare=False)  # the full URL, password included: connect only
    secrets: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def __str__(self) -> str:
        return self.display

    def __repr__(self) -> str:
        return f"HistoryLocation({self.display!r})"

    @property
    def is_file(self) -> bool:
        return self.kind == "sqlite"

    def scrub(self, text: str) -> str:
        """`text` (a driver's error message, say) with every secret of this location replaced."""
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text

    @classmethod
    def file(cls, path: str | Path) -> HistoryLocation:
        path = Path(path)
        return cls("sqlite", str(path), path=path)


def is_url(text: str) -> bool:
    return bool(_URL.match(text))


def parse_location(value: str | Path | HistoryLocation,
                   resolve: Callable[[str], Path] = lambda text: Path(text).expanduser()) -> HistoryLocation:
    """A location from a command-line, ini or environment value: a URL, else a file path (made absolute by
    `resolve`). Raises ValueError naming what is wrong and what to give instead."""
    if isinstance(value, HistoryLocation):
        return value
    if isinstance(value, Path):
        return HistoryLocation.file(value)
    text = value.strip()
    if not text:
        raise ValueError("give a SQLite file path or a postgresql:// URL")
    if not is_url(text):
        return HistoryLocation.file(resolve(text))
    scheme = text.split("://", 1)[0].lower()
    if scheme not in POSTGRES_SCHEMES:
        hint = (" (psycopg 2 is not supported: use postgresql:// or postgresql+psycopg://, psycopg 3)"
                if scheme.startswith("postgres") else "")
        raise ValueError(f"{scheme}:// is not a history database{hint}; give a SQLite file path or a "
                         "postgresql://USER@HOST:PORT/DATABASE URL")
    return _postgres(text)


def _postgres(text: str) -> HistoryLocation:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(text)
    except ArgumentError:
        # The message would quote the URL, password and all.
        raise ValueError("not a valid postgresql:// URL; the form is postgresql://USER@HOST:PORT/DATABASE "
                         "(credentials in ~/.pgpass or the PG* environment)") from None
    url = url.set(drivername="postgresql+psycopg")
    if not url.database:
        raise ValueError(f"{_display(url)} names no database; the form is postgresql://USER@HOST:PORT/DATABASE")
    secrets = [url.password] if url.password else []
    for name in _SECRET_PARAMS:
        given = url.query.get(name)
        secrets += [given] if isinstance(given, str) else list(given or ())
    # As given and as a URL quotes it; longest first, so that a secret containing another is replaced whole.
    forms = {form for s in secrets if s for form in (str(s), quote(str(s), safe=""), quote_plus(str(s)))}
    secrets = sorted(forms, key=len, reverse=True)
    return HistoryLocation("postgresql", _display(url), url=url.render_as_string(hide_password=False),
                           secrets=tuple(secrets))


def _display(url) -> str:  # type: ignore[no-untyped-def]
    shown = url._replace(password=None).difference_update_query(_SECRET_PARAMS)  # set() ignores None
    return shown.render_as_string(hide_password=False)


def postgres_driver_missing() -> str | None:
    """Why a PostgreSQL history cannot be opened here (psycopg not installed), or None."""
    if importlib.util.find_spec("psycopg") is None:
        return "a PostgreSQL history needs psycopg 3: pip install 'pytest-zbench[postgres]'"
    return None


__all__ = ["HISTORY_ENV", "HistoryLocation", "POSTGRES_SCHEMES", "is_url", "parse_location",
           "postgres_driver_missing"]
