"""Run history: every run, its scenes, their launches and raw samples, in a SQLite file (the default) or a
lab's shared PostgreSQL database, through one code path (store.py: schema, migrations, transactions).

Written by many processes at once (pytest-xdist workers, concurrent sessions, the legs of a CI matrix):
every write is one transaction, so readers (baselines, `zbench history`) never see half a run, and run ids
are unique per device and session (`<run_id>-<device>`), so no two writers' runs collide.

Comparable runs (a baseline) share device, backend, scene id, params hash, mode and gpu source; the
environment fingerprint (device/gpu/probe/display facts) is recorded per run and a change inside the
baseline window, or between it and the candidate, is reported rather than hidden.
"""

from __future__ import annotations

import hashlib
import io
import json
import socket
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from sqlalchemy import func, or_, select
from sqlalchemy.engine import Connection

from . import store
from .config import DEFAULT_HISTORY_PATH
from .gate import launch_values
from .location import HistoryLocation, parse_location
from .store import SCHEMA_VERSION, HistoryError, Store
from .verdict_words import CHANGES

RUN_KINDS = ("run", "calibration", "ab")

T = TypeVar("T")


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
    host: str | None = field(default_factory=socket.gethostname)  # the machine that records the run

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
    host: str | None = None

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


class History:
    """The history database, a SQLite file or a PostgreSQL database. One object per process; use as a
    context manager or call close().

        with History(".zbench/history.sqlite") as history:      # or "postgresql://zbench@db.lab/history"
            history.record(RunInfo("pi3b", "gles2", build_hash="abc123"), [SceneRecord(...)])
            window = history.comparable(key, window=5)
    """

    def __init__(self, location: str | Path | HistoryLocation = DEFAULT_HISTORY_PATH, *, timeout_s: float = 30.0,
                 retries: int = 8, connection_retries: int = 4) -> None:
        try:
            self.location = parse_location(location)
        except ValueError as exc:
            raise HistoryError(f"history {location if isinstance(location, Path) else '(URL)'}: {exc}") from None
        self.store = Store(self.location, timeout_s=timeout_s, retries=retries,
                           connection_retries=connection_retries)

    @property
    def path(self) -> Path | None:
        """The SQLite file (None for a PostgreSQL history)."""
        return self.location.path

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ------------------------------------------------------------------------------------------

    def record(self, run: RunInfo, scenes: Sequence[SceneRecord]) -> None:
        """Store scenes of a run in one transaction. The run row is created on first use, so several
        processes (xdist workers) may write scenes under one run_id; a scene written again in the same run
        replaces the earlier copy, which also makes a retried write idempotent."""
        rows = [self._scene_rows(scene) for scene in scenes]  # encode outside the transaction
        run_row = {"run_id": run.run_id, "started_utc": run.started_utc, "started_ts": _timestamp(run.started_utc),
                   "kind": run.kind, "build_hash": run.build_hash, "dirty": run.dirty, "device": run.device,
                   "backend": run.backend, "fingerprint": run.fingerprint,
                   "environment": _json(dict(run.environment)), "host": run.host}

        def body(conn: Connection) -> None:
            conn.execute(self.store.insert_missing(store.runs, ["run_id"]).values(**run_row))
            for scene, (params_json, summary_json, launch_rows) in zip(scenes, rows):
                s = store.scenes.c
                conn.execute(store.scenes.delete().where(
                    s.run_id == run.run_id, s.scene_id == scene.scene_id, s.params_hash == scene.params_hash,
                    s.mode == scene.mode))
                scene_row = conn.execute(store.scenes.insert().values(
                    run_id=run.run_id, scene_id=scene.scene_id, params_hash=scene.params_hash, params=params_json,
                    mode=scene.mode, gpu_source=scene.gpu_source, summary=summary_json)).inserted_primary_key
                assert scene_row is not None
                scene_row = scene_row[0]
                if launch_rows:
                    conn.execute(store.launches.insert(), [
                        {"scene_row": scene_row, "idx": i, "summary": summary, "samples": blob}
                        for i, (summary, blob) in enumerate(launch_rows)])

        self.store.write(body, f"recording run {run.run_id}")

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
        row = {"created_utc": calibration.created_utc, "created_ts": _timestamp(calibration.created_utc),
               "device": key.device, "backend": key.backend, "scene_id": key.scene_id,
               "params_hash": key.params_hash, "mode": key.mode, "gpu_source": key.gpu_source,
               "metric": calibration.metric, "noise_floor": calibration.noise_floor,
               "n_launches": calibration.n_launches, "mde": _json({str(n): v for n, v in calibration.mde.items()}),
               "alpha": calibration.alpha, "power": calibration.power, "method": calibration.method,
               "build_hash": calibration.build_hash, "fingerprint": calibration.fingerprint,
               "run_ids": _json(list(calibration.run_ids))}
        self.store.write(lambda conn: conn.execute(store.calibrations.insert().values(**row)),
                         f"saving a calibration of {key.scene_id}")

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
        r = store.runs.c
        where: list[Any] = _key_filter(key, kinds)
        if exclude_run is not None:
            where.append(r.run_id != exclude_run)
        if before_utc is not None:
            where.append(r.started_ts < _timestamp(before_utc))
        if same_fingerprint:
            where.append(r.fingerprint == fingerprint)
        where += self._current_level(key, kinds, where)
        runs = tuple(self._newest_runs(where, window))
        return BaselineWindow(key, runs, tuple(_changes(runs, environment, fingerprint)))

    def _current_level(self, key: SceneKey, kinds: Sequence[str], where: list[Any]) -> list[Any]:
        """What keeps a baseline to the series' current level (docs/regression.md, "History"): a session the
        gate judged a change (CHANGES) is left out until accepted, an excluded one always, and an accepted one
        starts the level, so the runs before it are left out. Perfherder and Skia Perf segment a series at an
        alert alike; without it one bad build blinds the gate for every later one."""
        s, r = store.scenes.c, store.runs.c
        kept = [or_(s.verdict.is_(None), s.verdict.notin_(list(CHANGES)), s.level == "accepted"),
                or_(s.level.is_(None), s.level != "excluded")]
        starts = select(func.max(r.started_ts)).select_from(store.runs.join(store.scenes, s.run_id == r.run_id)) \
            .where(*where, s.level == "accepted")
        start = self.store.read(lambda conn: conn.execute(starts).scalar(), "reading the series' level")
        return kept + ([r.started_ts >= start] if start is not None else [])

    def mark_verdict(self, run_id: str, key: SceneKey, verdict: str) -> None:
        """Keep the history gate's verdict on the scene of a recorded run (a change leaves it out of later
        baselines until accepted)."""
        s = store.scenes.c
        update = store.scenes.update().where(s.run_id == run_id, s.scene_id == key.scene_id,
                                             s.params_hash == key.params_hash, s.mode == key.mode)
        self.store.write(lambda conn: conn.execute(update.values(verdict=verdict)),
                         f"keeping the verdict of {key.scene_id} in run {run_id}")

    def set_level(self, run_id: str, level: str | None, *, scene_id: str | None = None) -> int:
        """`zbench history accept|exclude RUN [--scene ID]` (level None: undo either): the number of scenes
        of runs whose id starts with `run_id` (a session's id covers each of its devices' runs) now marked."""
        if level is not None and level not in store.LEVELS:
            raise ValueError(f"level must be one of {store.LEVELS}, not {level!r}")
        s = store.scenes.c
        where = [s.run_id.startswith(run_id, autoescape=True)]
        if scene_id is not None:
            where.append(s.scene_id == scene_id)
        update = store.scenes.update().where(*where).values(level=level)
        return int(self.store.write(lambda conn: conn.execute(update).rowcount,
                                    f"marking run {run_id} {level or 'unmarked'}"))

    def scene_keys(self, *, device: str | None = None, scene_id: str | None = None,
                   kinds: Sequence[str] = ("run",)) -> list[SceneKey]:
        r, s = store.runs.c, store.scenes.c
        where: list[Any] = [r.kind.in_(list(kinds))]
        if device is not None:
            where.append(r.device == device)
        if scene_id is not None:
            where.append(s.scene_id == scene_id)
        columns = (r.device, r.backend, s.scene_id, s.params_hash, s.mode, s.gpu_source)
        query = (select(*columns).distinct().select_from(store.runs.join(store.scenes, s.run_id == r.run_id))
                 .where(*where))
        rows = self.store.read(lambda conn: conn.execute(query).all(), "listing scenes")
        # Sorted here, not in SQL: NULL gpu sources sort first in SQLite and last in PostgreSQL.
        return sorted((SceneKey(*row) for row in rows),
                      key=lambda k: (k.device, k.backend, k.scene_id, k.params_hash, k.mode, k.gpu_source or ""))

    def runs_of(self, key: SceneKey, *, kinds: Sequence[str] = ("run",), limit: int | None = None) -> list[HistoricRun]:
        """Every run of `key`, oldest first (the newest `limit` when given)."""
        return self._newest_runs(_key_filter(key, kinds), limit)[::-1]

    def _newest_runs(self, where: list[Any], limit: int | None) -> list[HistoricRun]:
        """Runs (joined with one scene row each) matching `where`, newest first; limit None = all."""
        r, s, l = store.runs.c, store.scenes.c, store.launches.c
        query = (select(store.runs, s.id.label("scene_row"), s.summary.label("scene_summary"))
                 .select_from(store.runs.join(store.scenes, s.run_id == r.run_id)).where(*where)
                 .order_by(r.started_ts.desc(), s.id.desc()).limit(limit))

        def body(conn: Connection) -> list[HistoricRun]:
            rows = conn.execute(query).mappings().all()
            by_scene: dict[int, list[dict[str, Any]]] = {row["scene_row"]: [] for row in rows}
            for chunk in _chunks(list(by_scene), 500):  # launches of every run in one query per 500
                for scene_row, summary in conn.execute(
                        select(l.scene_row, l.summary).where(l.scene_row.in_(chunk)).order_by(l.scene_row, l.idx)):
                    by_scene[scene_row].append(json.loads(summary))
            return [_historic(row, by_scene[row["scene_row"]]) for row in rows]

        return self.store.read(body, "reading runs")

    def series(self, key: SceneKey, metric: str = "cpu_ms.p50", *,
               kinds: Sequence[str] = ("run",)) -> list[SeriesPoint]:
        """Per run, oldest first: the median over its launches of a per-launch statistic."""
        return [SeriesPoint(run.run_id, run.started_utc, run.build_hash, run.dirty, run.fingerprint,
                            run.median(metric), len(run.launches)) for run in self.runs_of(key, kinds=kinds)]

    def samples(self, scene_row: int) -> list[dict[str, np.ndarray] | None]:
        """The raw per-frame arrays of each launch of a stored scene (None where none were stored)."""
        l = store.launches.c
        query = select(l.samples).where(l.scene_row == scene_row).order_by(l.idx)
        blobs = self.store.read(lambda conn: conn.execute(query).scalars().all(), "reading samples")
        return [None if blob is None else unpack_samples(blob) for blob in blobs]

    def calibrations(self, key: SceneKey, *, fingerprint: str | None = None) -> dict[str, Calibration]:
        """The newest calibration of each metric of `key` (only those measured with `fingerprint`, if given)."""
        c = store.calibrations.c
        where = [c.device == key.device, c.backend == key.backend, c.scene_id == key.scene_id,
                 c.params_hash == key.params_hash, c.mode == key.mode, _equal(c.gpu_source, key.gpu_source)]
        if fingerprint is not None:
            where.append(c.fingerprint == fingerprint)
        query = select(store.calibrations).where(*where).order_by(c.created_ts, c.id)
        rows = self.store.read(lambda conn: conn.execute(query).mappings().all(), "reading calibrations")
        latest: dict[str, Calibration] = {}
        for row in rows:  # oldest first, so the newest wins
            latest[row["metric"]] = Calibration(
                key=key, metric=row["metric"], noise_floor=row["noise_floor"], n_launches=row["n_launches"],
                mde={int(n): v for n, v in json.loads(row["mde"]).items()}, alpha=row["alpha"],
                power=row["power"], method=row["method"], build_hash=row["build_hash"],
                fingerprint=row["fingerprint"], run_ids=tuple(json.loads(row["run_ids"])),
                created_utc=row["created_utc"])
        return latest


def _equal(column: Any, value: str | None) -> Any:
    """column = value, NULL matching NULL (`IS NULL`, which both databases can answer from an index)."""
    return column.is_(None) if value is None else column == value


def _key_filter(key: SceneKey, kinds: Sequence[str]) -> list[Any]:
    r, s = store.runs.c, store.scenes.c
    return [r.device == key.device, r.backend == key.backend, s.scene_id == key.scene_id,
            s.params_hash == key.params_hash, s.mode == key.mode, _equal(s.gpu_source, key.gpu_source),
            r.kind.in_(list(kinds))]


def _historic(row: Any, launches: list[dict[str, Any]]) -> HistoricRun:
    return HistoricRun(
        run_id=row["run_id"], started_utc=row["started_utc"], kind=row["kind"], build_hash=row["build_hash"],
        dirty=None if row["dirty"] is None else bool(row["dirty"]), fingerprint=row["fingerprint"],
        environment=json.loads(row["environment"]), scene_row=row["scene_row"], launches=tuple(launches),
        summary=None if row["scene_summary"] is None else json.loads(row["scene_summary"]), host=row["host"])


def _chunks(items: list[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


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
    "HistoryError", "HistoryLocation", "SCHEMA_VERSION", "RunInfo", "SceneKey", "SceneRecord", "SeriesPoint", "changed_keys", "environment_fingerprint",
    "hash_params", "pack_samples", "sample_arrays", "stable_hash", "unpack_samples", "utc_now",
]
