"""Moving a history between databases (`zbench history export` / `import`): a SQLite file into a lab's
PostgreSQL database, and back, without losing a row.

Every row is copied as stored: runs (with their host), scenes, launches with their raw samples, and
calibrations; only the surrogate ids (a scene's row number, a calibration's id) are the target's own. A run
is copied in one transaction, so a copy cut short leaves whole runs, and copying again is safe: a run, a
scene or a calibration the target already holds is left as it is and counted as skipped, never doubled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from . import store
from .history import History

# What identifies a calibration across databases (its id does not).
_CALIBRATION_KEY = ("created_utc", "device", "backend", "scene_id", "params_hash", "mode", "gpu_source", "metric")


@dataclass
class TransferReport:
    runs: int = 0
    scenes: int = 0
    launches: int = 0
    calibrations: int = 0
    runs_present: int = 0  # runs whose every scene the target held already
    scenes_present: int = 0
    calibrations_present: int = 0

    def describe(self) -> str:
        text = (f"{self.runs} run(s), {self.scenes} scene(s), {self.launches} launch(es) and "
                f"{self.calibrations} calibration(s) copied")
        present = [f"{n} {what}" for n, what in ((self.runs_present, "run(s)"), (self.scenes_present, "scene(s)"),
                                                 (self.calibrations_present, "calibration(s)")) if n]
        return text + (f"; already there, left as they were: {', '.join(present)}" if present else "")


def copy_history(source: History, target: History,
                 progress: Callable[[int, int], None] | None = None) -> TransferReport:
    """Copy every run and calibration of `source` that `target` does not hold yet; progress(done, total)."""
    report = TransferReport()
    run_ids = source.store.read(lambda conn: conn.execute(
        select(store.runs.c.run_id).order_by(store.runs.c.started_ts, store.runs.c.run_id)).scalars().all(),
        "listing runs")
    for done, run_id in enumerate(run_ids, 1):
        bundle = source.store.read(partial(_read_run, run_id=run_id), f"reading run {run_id}")
        counts = target.store.write(partial(_write_run, target=target, bundle=bundle), f"copying run {run_id}")
        report.runs += counts["run"]
        report.runs_present += 1 - counts["run"]
        report.scenes += counts["scenes"]
        report.scenes_present += counts["present"]
        report.launches += counts["launches"]
        if progress is not None:
            progress(done, len(run_ids))
    rows = source.store.read(lambda conn: [dict(row._mapping) for row in conn.execute(
        select(store.calibrations).order_by(store.calibrations.c.created_ts, store.calibrations.c.id))],
        "reading calibrations")
    copied = target.store.write(lambda conn: _write_calibrations(conn, rows), "copying calibrations")
    report.calibrations += copied
    report.calibrations_present += len(rows) - copied
    return report


@dataclass(frozen=True)
class _RunBundle:
    run: dict[str, Any]
    scenes: list[tuple[dict[str, Any], list[dict[str, Any]]]]  # scene row (no id), its launches (no scene_row)


def _read_run(conn: Connection, run_id: str) -> _RunBundle:
    run = dict(conn.execute(select(store.runs).where(store.runs.c.run_id == run_id)).one()._mapping)
    scenes = []
    for row in conn.execute(select(store.scenes).where(store.scenes.c.run_id == run_id).order_by(store.scenes.c.id)):
        scene = dict(row._mapping)
        scene_row = scene.pop("id")
        launches = [{k: v for k, v in launch._mapping.items() if k != "scene_row"} for launch in conn.execute(
            select(store.launches).where(store.launches.c.scene_row == scene_row).order_by(store.launches.c.idx))]
        scenes.append((scene, launches))
    return _RunBundle(run, scenes)


def _write_run(conn: Connection, target: History, bundle: _RunBundle) -> dict[str, int]:
    """Insert what the target lacks of one run; the counts (returned, so a retried transaction counts once)."""
    counts = {"scenes": 0, "launches": 0, "present": 0}
    inserted = conn.execute(target.store.insert_missing(store.runs, ["run_id"]).values(**bundle.run)).rowcount
    s = store.scenes.c
    for scene, launches in bundle.scenes:
        held = conn.execute(select(s.id).where(s.run_id == scene["run_id"], s.scene_id == scene["scene_id"],
                                               s.params_hash == scene["params_hash"], s.mode == scene["mode"])).first()
        if held is not None:
            counts["present"] += 1
            continue
        inserted_key = conn.execute(store.scenes.insert().values(**scene)).inserted_primary_key
        assert inserted_key is not None
        scene_row = inserted_key[0]
        if launches:
            conn.execute(store.launches.insert(), [dict(launch, scene_row=scene_row) for launch in launches])
        counts["scenes"] += 1
        counts["launches"] += len(launches)
    counts["run"] = int(inserted == 1 or counts["scenes"] > 0)
    return counts


def _write_calibrations(conn: Connection, rows: list[dict[str, Any]]) -> int:
    c = store.calibrations.c
    held = {tuple(row) for row in conn.execute(select(*(c[name] for name in _CALIBRATION_KEY)))}
    missing = [{k: v for k, v in row.items() if k != "id"} for row in rows
               if tuple(row[name] for name in _CALIBRATION_KEY) not in held]
    if missing:
        conn.execute(store.calibrations.insert(), missing)
    return len(missing)


__all__ = ["TransferReport", "copy_history"]
