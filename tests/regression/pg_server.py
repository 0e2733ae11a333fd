"""A real PostgreSQL server for the history tests: Debian's `postgresql` package, `initdb` into a temporary
folder, listening on 127.0.0.1 (a free port) and on a Unix socket in that folder. Plain Python, no pytest.

initdb and postgres refuse to run as root: as root (CI, containers) both run as the `postgres` account the
package creates, and the folder belongs to it; as anyone else they run as that user. Connections from this
machine are trusted for the superuser `zbench`; other roles (made by `create_role`) must give a password
over TCP, which is how the tests check that passwords from .pgpass or a URL reach the server and no
artifact.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUPERUSER = "zbench"


class MissingPostgres(RuntimeError):
    """PostgreSQL (or psycopg) is not installed: the caller skips, or fails in CI."""


def server_bindir() -> Path:
    """The folder of initdb and postgres: Debian keeps them out of PATH, under /usr/lib/postgresql/N/bin."""
    found = shutil.which("initdb")
    if found:
        return Path(os.path.realpath(found)).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                      key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0)
    if not versions:
        raise MissingPostgres("initdb is not installed (Debian: apt-get install postgresql)")
    return Path(versions[-1]).parent


def free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    """In the server's child process, after it became `postgres`: an immediate shutdown (SIGQUIT) when the
    test process dies without stopping it, so that no server outlives the tests."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGQUIT), 0, 0, 0)


@dataclass
class PostgresServer:
    """One postgres process (a direct child, so the tests can stop, kill and restart it)."""

    root: Path = field(default=Path())
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    _account: dict[str, Any] = field(default_factory=dict)

    def start(self) -> PostgresServer:
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise MissingPostgres("psycopg is not installed (pip install 'pytest-zbench[postgres]')") from None
        bindir = server_bindir()
        self._bin = {name: str(bindir / name) for name in ("initdb", "postgres")}
        # Not under pytest's basetemp: that is private to the user running pytest, and the server may
        # have to run as another account.
        self.root = Path(tempfile.mkdtemp(prefix="zbench-pg-"))
        if os.getuid() == 0:
            try:
                account = pwd.getpwnam("postgres")
            except KeyError:
                raise MissingPostgres("running as root, and there is no `postgres` account to run the server as "
                                      "(Debian's postgresql package creates it)") from None
            self._account = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
            os.chown(self.root, account.pw_uid, account.pw_gid)
        self.root.chmod(0o700)
        self.port = self.port or free_port()
        data = self.root / "data"
        self._run([self._bin["initdb"], "-D", str(data), "-U", SUPERUSER, "--auth=trust", "--no-locale",
                   "--encoding=UTF8", "--no-sync"])
        (data / "pg_hba.conf").write_text(
            "local all all trust\n"
            f"host all {SUPERUSER} 127.0.0.1/32 trust\n"
            "host all all 127.0.0.1/32 scram-sha-256\n")
        with open(data / "postgresql.conf", "a") as conf:
            conf.write("\n".join([
                "listen_addresses = '127.0.0.1'",
                f"port = {self.port}",
                f"unix_socket_directories = '{self.root}'",
                "max_connections = 60",
                # Test speed: no crash of the machine is simulated, only of the server, which loses nothing
                # the kernel already has (a committed transaction's WAL is written, not flushed, at commit).
                "fsync = off", "full_page_writes = off",
                # Databases live for one test: no background vacuum competing with the measured launches.
                "autovacuum = off",
                "logging_collector = off", "log_min_messages = warning",
                "",
            ]))
        self._launch()
        return self

    def _run(self, argv: list[str]) -> None:
        done = subprocess.run(argv, cwd=self.root, capture_output=True, text=True, timeout=120, **self._account)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited with {done.returncode}: {done.stderr.strip()}")

    def _launch(self) -> None:
        log = open(self.root / "postgres.log", "ab")
        self.proc = subprocess.Popen([self._bin["postgres"], "-D", str(self.root / "data")], cwd=self.root,
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=log, preexec_fn=_die_with_parent,
                                     **self._account)
        log.close()
        self.wait_ready()

    def wait_ready(self, timeout: float = 60.0) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited with {self.proc.returncode}: {self.log_tail()}")
            try:
                psycopg.connect(self.dsn("postgres"), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"postgres did not accept connections in {timeout} s: {self.log_tail()}") from None
                time.sleep(0.1)

    def log_tail(self) -> str:
        try:
            return (self.root / "postgres.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    # -- addresses -------------------------------------------------------------------------------------------

    def dsn(self, database: str, user: str = SUPERUSER) -> str:
        """A libpq connection string over TCP for psycopg (tests' own checks)."""
        return f"host=127.0.0.1 port={self.port} dbname={database} user={user}"

    def url(self, database: str, user: str = SUPERUSER, password: str | None = None) -> str:
        """The history URL of a database over TCP, as a user would write it."""
        from urllib.parse import quote

        auth = user if password is None else f"{user}:{quote(password, safe='')}"
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{database}"

    def socket_url(self, database: str) -> str:
        """The history URL of a database over the Unix socket in the server's folder."""
        return f"postgresql+psycopg://{SUPERUSER}@/{database}?host={self.root}&port={self.port}"

    # -- administration --------------------------------------------------------------------------------------

    def execute(self, sql: str, database: str = "postgres", params: Any = None) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.dsn(database), autocommit=True) as conn:
            cursor = conn.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    def create_database(self, owner: str = SUPERUSER) -> str:
        name = "h_" + uuid.uuid4().hex[:12]
        self.execute(f'CREATE DATABASE "{name}" OWNER "{owner}"')
        return name

    def drop_database(self, name: str) -> None:
        self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def create_role(self, name: str, password: str) -> None:
        """A login role that must give `password` over TCP (scram-sha-256)."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(name),
                                                                             sql.Literal(password)))

    # -- faults ----------------------------------------------------------------------------------------------

    def crash(self) -> None:
        """Immediate shutdown (SIGQUIT): every connection cut, no checkpoint, crash recovery at the next start."""
        self._signal(signal.SIGQUIT)

    def restart(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self._signal(signal.SIGINT)
        self._launch()

    def _signal(self, sig: signal.Signals) -> None:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None:
            self._signal(signal.SIGINT)  # fast shutdown
            self.proc = None
        if self.root != Path() and self.root.exists():
            shutil.rmtree(self.root, ignore_errors=True)
