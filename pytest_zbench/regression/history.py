"""Run history: an embedded SQLite store of every run, its scenes, their launches and raw samples.

Written by many processes at once (pytest-xdist workers, two sessions on one machine): the database is in
WAL mode so readers never block, every write is one `BEGIN IMMEDIATE` transaction, SQLite's busy timeout
waits for a lock, and a write that still finds the database busy is retried with jittered backoff. WAL needs
a local file system: keep the history off NFS/SMB shares.

Comparable runs (a baseline) share device, backend, scene id, params hash, mode and gpu source; the
environment fingerprint (device/gpu/probe/display facts) is recorded per run and a change inside the
baseline window, or between it and the candidate, is reported rather than hidden.
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ..errors import ZbenchError
from .config import DEFAULT_HISTORY_PATH
from .gate import launch_values

SCHEMA_VERSION = 1
RUN_KINDS = ("run", "calibration", "ab")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id      TEXT PRIMARY KEY,
    started_utc TEXT NOT NULL,
    started_ts  REAL NOT NULL,
    kind        TEXT NOT NULL,
    build_hash  TEXT NOT NULL,
    dirty       INTEGER,
    device      TEXT NOT NULL,
    backend     TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    environment TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_device ON runs (device, backend, started_ts);
CREATE TABLE IF NOT EXISTS scenes (
    id          INTEGER PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    scene_id    TEXT NOT NULL,
    params_hash TEXT NOT NULL,
    params      TEXT NOT NULL,
    mode        TEXT NOT NULL,
    gpu_source  TEXT,
    summary     TEXT,
    UNIQUE (run_id, scene_id, params_hash, mode)
);
CREATE INDEX IF NOT EXISTS scenes_by_key ON scenes (scene_id, params_hash, mode, gpu_source);
CREATE TABLE IF NOT EXISTS launches (
    scene_row INTEGER NOT NULL REFERENCES scenes (id) ON DELETE CASCADE,
    idx       INTEGER NOT NULL,
    summary   TEXT NOT NULL,
    samples   BLOB,
    PRIMARY KEY (scene_row, idx)
);
CREATE TABLE IF NOT EXISTS calibrations (
    id          INTEGER PRIMARY KEY,
    created_utc TEXT NOT NULL,
    created_ts  REAL NOT NULL,
    device      TEXT NOT NULL,
    backend     TEXT NOT NULL,
    scene_id    TEXT NOT NULL,
    params_hash TEXT NOT NULL,
    mode        TEXT NOT NULL,
    gpu_source  TEXT,
    metric      TEXT NOT NULL,
    noise_floor REAL NOT NULL,
    n_launches  INTEGER NOT NULL,
    mde         TEXT NOT NULL,
    alpha       REAL NOT NULL,
    power       REAL NOT NULL,
    method      TEXT NOT NULL,
    build_hash  TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    run_ids     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS calibrations_by_key ON calibrations (device, backend, scene_id, params_hash, mode);
"""

T = TypeVar("T")


class HistoryError(ZbenchError):
    """The history database could not be read or written; the message names the file."""


def stable_hash(value: Any) -> str:
    """A short hash of a JSON-able value that does not depend on key order (16 hex digits)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def environment_fingerprint(environment: Mapping[str, Any]) -> str:
    """Stable hash of the device/gpu/probe/display facts a run was measured with."""
    return stable_hash(dict(environment))



def hash_params(params: Mapping[str, Any]) -> str:
    """The params hash of a scene: two runs compare only when their resolved params hash alike."""
    return stable_hash(dict(params))


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _timestamp(iso: str) -> float:
    try:
        moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"started_utc must be an ISO 8601 time, not {iso!r}") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


@dataclass(frozen=True)
class SceneKey:
    """What makes two measurements of a scene comparable."""

    device: str
    backend: str
    scene_id: str
    params_hash: str
    mode: str
    gpu_source: str | None

    def describe(self) -> str:
        return (f"{self.scene_id} on {self.device}/{self.backend} "
                f"[params {self.params_hash[:8]}, {self.mode}, gpu {self.gpu_source or 'none'}]")


@dataclass(frozen=True)
class RunInfo:
    """One session's run on one device. Under xdist every worker writes its scenes under one run_id,
    so the controller creates this once and hands run_id/started_utc to the workers."""

    device: str
    backend: str
    build_hash: str
    dirty: bool | None = None
    environment: Mapping[str, Any] = field(default_factory=dict)
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    started_utc: str = field(default_factory=utc_now)
    kind: str = "run"  # "run", "calibration" (A/A launches for calibrate) or "ab"

    def __post_init__(self) -> None:
        if self.kind not in RUN_KINDS:
            raise ValueError(f"run kind must be one of {RUN_KINDS}, not {self.kind!r}")
        _timestamp(self.started_utc)

    @property
    def fingerprint(self) -> str:
        return environment_fingerprint(self.environment)


@dataclass(frozen=True)
class SceneRecord:
    """One scene of a run: per-launch summaries (stats.LaunchSummary or to_dict()) and, optionally, per
    launch the raw per-frame arrays (stats.LaunchSamples, or a mapping of name -> array)."""

    scene_id: str
    params: Mapping[str, Any]
    mode: str
    gpu_source: str | None
    launches: Sequence[Any]
    samples: Sequence[Any] | None = None
    summary: Mapping[str, Any] | None = None

    @classmethod
    def from_summary(cls, scene_id: str, params: Mapping[str, Any], summary: Any,
                     samples: Sequence[Any] | None = None) -> SceneRecord:
        """From a stats.SceneSummary (its per_run launch dicts, mode and gpu_source)."""
        doc = summary.to_dict()
        doc.pop("per_run", None)  # stored launch by launch
        return cls(scene_id, params, summary.mode or "paced", summary.gpu_source, list(summary.per_run),
                   samples, doc)

    @property
    def params_hash(self) -> str:
        return hash_params(self.params)

    def key(self, run: RunInfo) -> SceneKey:
        return SceneKey(run.device, run.backend, self.scene_id, self.params_hash, self.mode, self.gpu_source)


@dataclass(frozen=True)
class HistoricRun:
    """A past run of one scene, as the baseline sees it."""

    run_id: str
    started_utc: str
    kind: str
    build_hash: str
    dirty: bool | None
    fingerprint: str
    environment: dict[str, Any]
    scene_row: int
    launches: tuple[dict[str, Any], ...]
    summary: dict[str, Any] | None

    def median(self, metric: str) -> float | None:
        """The run's median over launches of a per-launch statistic (None when no launch has it)."""
        values = launch_values(self.launches, metric)
        return float(np.median(values)) if values.size else None


@dataclass(frozen=True)
class FingerprintChange:
    """The environment fingerprint changed at `run_id` (None: at the candidate, after the window)."""

    run_id: str | None
    build_hash: str | None
    started_utc: str | None
    before: str
    after: str
    changed_keys: tuple[str, ...]

    def describe(self) -> str:
        where = (f"at run {self.run_id[:8]} (build {_short(self.build_hash)}, {self.started_utc})"
                 if self.run_id else "between the baseline and the candidate")
        keys = f": {', '.join(self.changed_keys)}" if self.changed_keys else ""
        return f"environment fingerprint changed {where}, {self.before[:8]} -> {self.after[:8]}{keys}"


@dataclass(frozen=True)
class BaselineWindow:
    """The most recent comparable runs of a scene, newest first."""

    key: SceneKey
    runs: tuple[HistoricRun, ...]
    changes: tuple[FingerprintChange, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.runs

    @property
    def launches(self) -> list[dict[str, Any]]:
        """Every launch of every run in the window: the baseline side of the gate."""
        return [launch for run in self.runs for launch in run.launches]

    def describe(self) -> str:
        if not self.runs:
            return f"no comparable run of {self.key.describe()}"
        newest, oldest = self.runs[0], self.runs[-1]
        builds = (f"build {_short(newest.build_hash)}" if len(self.runs) == 1 else
                  f"builds {_short(oldest.build_hash)} ({oldest.started_utc[:10]}) .. "
                  f"{_short(newest.build_hash)} ({newest.started_utc[:10]})")
        dirty = sum(1 for run in self.runs if run.dirty)
        text = (f"{len(self.runs)} run(s) of {self.key.describe()}, {builds}, {len(self.launches)} launches"
                + (f", {dirty} from a dirty tree" if dirty else ""))
        for change in self.changes:
            text += f"; {change.describe()}"
        return text


@dataclass(frozen=True)
class SeriesPoint:
    run_id: str
    started_utc: str
    build_hash: str
    dirty: bool | None
    fingerprint: str
    value: float | None
    n_launches: int


@dataclass(frozen=True)
class Calibration:
    """Noise floor and minimum detectable effects of one metric of one scene key, from A/A launches.

    mde maps launches per side -> the smallest slowdown (ratio - 1) the gate flags with `power`."""

    key: SceneKey
    metric: str
    noise_floor: float
    n_launches: int
    mde: Mapping[int, float | None]
    alpha: float
    power: float
    method: str
    build_hash: str
    fingerprint: str
    run_ids: tuple[str, ...]
    created_utc: str = field(default_factory=utc_now)


def pack_samples(arrays: Mapping[str, Any]) -> bytes:
    """Compressed, pickle-free blob of a launch's named per-frame arrays (npz, float64)."""
    buffer = io.BytesIO()
    named: dict[str, Any] = {name: np.asarray(values, dtype=float) for name, values in arrays.items()}
    np.savez_compressed(buffer, **named)
    return buffer.getvalue()


def unpack_samples(blob: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(blob), allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def sample_arrays(samples: Any) -> dict[str, Any]:
    """Named arrays of one launch: a mapping as given, or a stats.LaunchSamples flattened."""
    if isinstance(samples, Mapping):
        return dict(samples)
    arrays = {name: getattr(samples, name) for name in ("cpu_ms", "gpu_ms", "interval_ms", "warmup_cpu_ms")
              if getattr(samples, name, None) is not None}
    arrays.update({f"counter.{name}": values for name, values in getattr(samples, "counters", {}).items()})
    return arrays


def _launch_dict(launch: Any) -> dict[str, Any]:
    return dict(launch) if isinstance(launch, Mapping) else launch.to_dict()


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False, default=_json_default)


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class History:
    """The history database. One object per process; use as a context manager or call close().

        with History(".zbench/history.sqlite") as history:
            history.record(RunInfo("pi3b", "gles2", build_hash="abc123"), [SceneRecord(...)])
            window = history.comparable(key, window=5)
    """

    def __init__(self, path: str | Path = DEFAULT_HISTORY_PATH, *, timeout_s: float = 30.0,
                 retries: int = 8) -> None:
        self.path = Path(path)
        self.retries = retries
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), timeout=timeout_s, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise HistoryError(f"cannot open the history database {self.path}: {exc}; "
                               "check the path (--history) and its directory's permissions") from exc
        self._conn.row_factory = sqlite3.Row
        try:
            self._retry(lambda: self._conn.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}"))
            mode = self._retry(lambda: self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
            if str(mode).lower() != "wal":
                raise HistoryError(f"{self.path}: SQLite refused WAL mode (got {mode!r}); concurrent writers "
                                   "need it: put the history on a local file system")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._write(self._create_schema)
        except sqlite3.DatabaseError as exc:  # "file is not a database": some other file at that path
            self._conn.close()
            raise HistoryError(f"{self.path} is not a history database ({exc}): move it aside, or point "
                               "--zbench-history (zbench: --history) at another file") from exc
        except HistoryError:
            self._conn.close()
            raise

    # -- plumbing -----------------------------------------------------------------------------------------

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _retry(self, action: Callable[[], T]) -> T:
        for attempt in range(self.retries + 1):
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or attempt == self.retries:
                    raise HistoryError(f"{self.path}: {exc} (after {attempt + 1} attempt(s)); another process "
                                       "holds the database: retry, or give this run its own --history") from exc
                time.sleep(min(2.0, 0.05 * 2 ** attempt) * (0.5 + random.random()))
        raise AssertionError("unreachable")

    def _write(self, body: Callable[[sqlite3.Connection], T]) -> T:
        """Run `body` in one IMMEDIATE transaction (the write lock up front), retrying while busy."""
        def attempt() -> T:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                result = body(self._conn)
                self._conn.execute("COMMIT")
                return result
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
        return self._retry(attempt)

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        # One read transaction, so a query sees one snapshot even while others write.
        self._retry(lambda: self._conn.execute("BEGIN"))
        try:
            yield self._conn
        finally:
            self._conn.execute("COMMIT")

    def _create_schema(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise HistoryError(f"{self.path} was written by a newer pytest-zbench (schema {version}, this one "
                               f"reads {SCHEMA_VERSION}): upgrade, or point --history elsewhere")
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    # -- writing ------------------------------------------------------------------------------------------

    def record(self, run: RunInfo, scenes: Sequence[SceneRecord]) -> None:
        """Store scenes of a run in one transaction. The run row is created on first use, so several
        processes (xdist workers) may write scenes under one run_id; a scene written again in the same run
        replaces the earlier copy."""
        rows = [self._scene_rows(scene) for scene in scenes]  # encode outside the lock

        def body(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR IGNORE INTO runs (run_id, started_utc, started_ts, kind, build_hash, dirty, device,"
                " backend, fingerprint, environment) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run.run_id, run.started_utc, _timestamp(run.started_utc), run.kind, run.build_hash,
                 None if run.dirty is None else int(run.dirty), run.device, run.backend, run.fingerprint,
                 _json(dict(run.environment))))
            for scene, (params_json, summary_json, launch_rows) in zip(scenes, rows):
                conn.execute("DELETE FROM scenes WHERE run_id = ? AND scene_id = ? AND params_hash = ? AND mode = ?",
                             (run.run_id, scene.scene_id, scene.params_hash, scene.mode))
                cursor = conn.execute(
                    "INSERT INTO scenes (run_id, scene_id, params_hash, params, mode, gpu_source, summary)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (run.run_id, scene.scene_id, scene.params_hash, params_json, scene.mode, scene.gpu_source,
                     summary_json))
                conn.executemany("INSERT INTO launches (scene_row, idx, summary, samples) VALUES (?, ?, ?, ?)",
                                 [(cursor.lastrowid, i, summary, blob)
                                  for i, (summary, blob) in enumerate(launch_rows)])

        self._write(body)

    @staticmethod
    def _scene_rows(scene: SceneRecord) -> tuple[str, str | None, list[tuple[str, bytes | None]]]:
        samples = list(scene.samples) if scene.samples is not None else [None] * len(scene.launches)
        if len(samples) != len(scene.launches):
            raise ValueError(f"scene {scene.scene_id}: {len(scene.launches)} launch summaries but "
                             f"{len(samples)} launches of samples")
        launch_rows = [(_json(_launch_dict(launch)), None if raw is None else pack_samples(sample_arrays(raw)))
                       for launch, raw in zip(scene.launches, samples)]
        summary = None if scene.summary is None else _json(dict(scene.summary))
        return _json(dict(scene.params)), summary, launch_rows

    def save_calibration(self, calibration: Calibration) -> None:
        key = calibration.key
        self._write(lambda conn: conn.execute(
            "INSERT INTO calibrations (created_utc, created_ts, device, backend, scene_id, params_hash, mode,"
            " gpu_source, metric, noise_floor, n_launches, mde, alpha, power, method, build_hash, fingerprint,"
            " run_ids) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (calibration.created_utc, _timestamp(calibration.created_utc), key.device, key.backend, key.scene_id,
             key.params_hash, key.mode, key.gpu_source, calibration.metric, calibration.noise_floor,
             calibration.n_launches, _json({str(n): v for n, v in calibration.mde.items()}), calibration.alpha,
             calibration.power, calibration.method, calibration.build_hash, calibration.fingerprint,
             _json(list(calibration.run_ids)))))

    # -- reading ------------------------------------------------------------------------------------------

    def comparable(self, key: SceneKey, *, window: int = 5, exclude_run: str | None = None,
                   before_utc: str | None = None, environment: Mapping[str, Any] | None = None,
                   same_fingerprint: bool = False, kinds: Sequence[str] = ("run",)) -> BaselineWindow:
        """The `window` most recent runs comparable with `key` (same device, backend, scene id, params,
        mode and gpu source), newest first.

        exclude_run: the candidate's own run id (it may be recorded already). before_utc: only runs that
        started earlier. environment: the candidate's environment; a fingerprint change inside the window,
        or between it and the candidate, is reported in `changes`. same_fingerprint: keep only runs whose
        fingerprint equals the candidate's (needs `environment`).
        """
        if window < 1:
            raise ValueError(f"window must be at least 1, not {window}")
        fingerprint = environment_fingerprint(environment) if environment is not None else None
        if same_fingerprint and fingerprint is None:
            raise ValueError("same_fingerprint needs the candidate's environment")
        where, args = self._key_filter(key, kinds)
        if exclude_run is not None:
            where += " AND r.run_id != ?"
            args.append(exclude_run)
        if before_utc is not None:
            where += " AND r.started_ts < ?"
            args.append(_timestamp(before_utc))
        if same_fingerprint:
            where += " AND r.fingerprint = ?"
            args.append(fingerprint)
        runs = tuple(self._newest_runs(where, args, window))
        return BaselineWindow(key, runs, tuple(_changes(runs, environment, fingerprint)))

    def scene_keys(self, *, device: str | None = None, scene_id: str | None = None,
                   kinds: Sequence[str] = ("run",)) -> list[SceneKey]:
        where, args = [f"r.kind IN ({','.join('?' * len(kinds))})"], list(kinds)
        if device is not None:
            where.append("r.device = ?")
            args.append(device)
        if scene_id is not None:
            where.append("s.scene_id = ?")
            args.append(scene_id)
        with self._read() as conn:
            rows = conn.execute(
                "SELECT DISTINCT r.device, r.backend, s.scene_id, s.params_hash, s.mode, s.gpu_source FROM runs r"
                f" JOIN scenes s ON s.run_id = r.run_id WHERE {' AND '.join(where)}"
                " ORDER BY r.device, r.backend, s.scene_id, s.params_hash, s.mode, s.gpu_source", args).fetchall()
        return [SceneKey(*row) for row in rows]

    def runs_of(self, key: SceneKey, *, kinds: Sequence[str] = ("run",), limit: int | None = None) -> list[HistoricRun]:
        """Every run of `key`, oldest first (the newest `limit` when given)."""
        where, args = self._key_filter(key, kinds)
        return self._newest_runs(where, args, -1 if limit is None else limit)[::-1]

    def _newest_runs(self, where: str, args: list[Any], limit: int) -> list[HistoricRun]:
        """Runs (joined with one scene row each) matching `where`, newest first; limit -1 = all."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT r.*, s.id AS scene_row, s.summary AS scene_summary FROM runs r JOIN scenes s"
                f" ON s.run_id = r.run_id WHERE {where} ORDER BY r.started_ts DESC, s.id DESC LIMIT ?",
                (*args, limit)).fetchall()
            return [self._historic(conn, row) for row in rows]

    def series(self, key: SceneKey, metric: str = "cpu_ms.p50", *,
               kinds: Sequence[str] = ("run",)) -> list[SeriesPoint]:
        """Per run, oldest first: the median over its launches of a per-launch statistic."""
        return [SeriesPoint(run.run_id, run.started_utc, run.build_hash, run.dirty, run.fingerprint,
                            run.median(metric), len(run.launches)) for run in self.runs_of(key, kinds=kinds)]

    def samples(self, scene_row: int) -> list[dict[str, np.ndarray] | None]:
        """The raw per-frame arrays of each launch of a stored scene (None where none were stored)."""
        with self._read() as conn:
            rows = conn.execute("SELECT samples FROM launches WHERE scene_row = ? ORDER BY idx",
                                (scene_row,)).fetchall()
        return [None if row[0] is None else unpack_samples(row[0]) for row in rows]

    def calibrations(self, key: SceneKey, *, fingerprint: str | None = None) -> dict[str, Calibration]:
        """The newest calibration of each metric of `key` (only those measured with `fingerprint`, if given)."""
        sql = ("SELECT * FROM calibrations WHERE device = ? AND backend = ? AND scene_id = ? AND params_hash = ?"
               " AND mode = ? AND gpu_source IS ?")
        args: list[Any] = [key.device, key.backend, key.scene_id, key.params_hash, key.mode, key.gpu_source]
        if fingerprint is not None:
            sql += " AND fingerprint = ?"
            args.append(fingerprint)
        with self._read() as conn:
            rows = conn.execute(sql + " ORDER BY created_ts, id", args).fetchall()
        latest: dict[str, Calibration] = {}
        for row in rows:  # oldest first, so the newest wins
            latest[row["metric"]] = Calibration(
                key=key, metric=row["metric"], noise_floor=row["noise_floor"], n_launches=row["n_launches"],
                mde={int(n): v for n, v in json.loads(row["mde"]).items()}, alpha=row["alpha"],
                power=row["power"], method=row["method"], build_hash=row["build_hash"],
                fingerprint=row["fingerprint"], run_ids=tuple(json.loads(row["run_ids"])),
                created_utc=row["created_utc"])
        return latest

    @staticmethod
    def _key_filter(key: SceneKey, kinds: Sequence[str]) -> tuple[str, list[Any]]:
        where = ("r.device = ? AND r.backend = ? AND s.scene_id = ? AND s.params_hash = ? AND s.mode = ?"
                 f" AND s.gpu_source IS ? AND r.kind IN ({','.join('?' * len(kinds))})")
        return where, [key.device, key.backend, key.scene_id, key.params_hash, key.mode, key.gpu_source, *kinds]

    @staticmethod
    def _historic(conn: sqlite3.Connection, row: sqlite3.Row) -> HistoricRun:
        launches = conn.execute("SELECT summary FROM launches WHERE scene_row = ? ORDER BY idx",
                                (row["scene_row"],)).fetchall()
        return HistoricRun(
            run_id=row["run_id"], started_utc=row["started_utc"], kind=row["kind"], build_hash=row["build_hash"],
            dirty=None if row["dirty"] is None else bool(row["dirty"]), fingerprint=row["fingerprint"],
            environment=json.loads(row["environment"]), scene_row=row["scene_row"],
            launches=tuple(json.loads(launch[0]) for launch in launches),
            summary=None if row["scene_summary"] is None else json.loads(row["scene_summary"]))


def _changes(runs: Sequence[HistoricRun], environment: Mapping[str, Any] | None,
             fingerprint: str | None) -> list[FingerprintChange]:
    changes = []
    oldest_first = list(reversed(runs))
    for previous, run in zip(oldest_first, oldest_first[1:]):
        if run.fingerprint != previous.fingerprint:
            changes.append(FingerprintChange(run.run_id, run.build_hash, run.started_utc, previous.fingerprint,
                                             run.fingerprint, changed_keys(previous.environment, run.environment)))
    if runs and fingerprint is not None and environment is not None and runs[0].fingerprint != fingerprint:
        changes.append(FingerprintChange(None, None, None, runs[0].fingerprint, fingerprint,
                                         changed_keys(runs[0].environment, environment)))
    return changes


def changed_keys(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[str, ...]:
    """Dotted paths of the leaves that differ between two environment dicts."""
    flat_before, flat_after = _flatten(before), _flatten(after)
    return tuple(sorted(k for k in flat_before.keys() | flat_after.keys()
                        if flat_before.get(k, _MISSING) != flat_after.get(k, _MISSING)))


_MISSING = object()


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping) and value:
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value}


def _short(build: str | None) -> str:
    return (build or "?")[:10]


__all__ = [
    "BaselineWindow", "Calibration", "DEFAULT_HISTORY_PATH", "FingerprintChange", "HistoricRun", "History",
    "HistoryError", "RunInfo", "SceneKey", "SceneRecord", "SeriesPoint", "changed_keys", "environment_fingerprint",
    "hash_params", "pack_samples", "sample_arrays", "stable_hash", "unpack_samples", "utc_now",
]
