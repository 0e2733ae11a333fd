"""Every row of a history, comparable between two databases: surrogate ids (scene rows, calibration ids)
replaced by the natural keys they stand for. Plain Python, for the migration and export/import tests."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from pytest_zbench.regression import store
from pytest_zbench.regression.history import History, unpack_samples


def table_rows(history: History, *, without: tuple[str, ...] = ()) -> dict[str, list[tuple[Any, ...]]]:
    """{table: sorted rows}; `without` names columns left out (such as "host")."""
    def body(conn: Any) -> dict[str, list[tuple[Any, ...]]]:
        scene_keys = {row.id: (row.run_id, row.scene_id, row.params_hash, row.mode)
                      for row in conn.execute(select(store.scenes))}

        def rows(table: Any, drop: tuple[str, ...] = ()) -> list[dict[str, Any]]:
            return [{k: v for k, v in row._mapping.items() if k not in drop + without}
                    for row in conn.execute(select(table))]

        launches = [dict(row, scene_row=scene_keys[row["scene_row"]], samples=_contents(row["samples"]))
                    for row in rows(store.launches)]
        return {
            "runs": _sorted(rows(store.runs)),
            "scenes": _sorted(rows(store.scenes, ("id",))),
            "launches": _sorted(launches),
            "calibrations": _sorted(rows(store.calibrations, ("id",))),
        }

    return history.store.read(body)


def count(history: History, table: Any, *where: Any) -> int:
    from sqlalchemy import func

    return history.store.read(lambda conn: conn.execute(select(func.count()).select_from(table).where(*where)).scalar())


def _contents(blob: bytes | None) -> tuple[tuple[str, str, bytes], ...] | None:
    """A samples blob by what it holds (each array's name, dtype and bytes): the npz container's own bytes
    differ between Python versions (zipfile's zip64 headers), its arrays must not."""
    if blob is None:
        return None
    return tuple((name, str(values.dtype), values.tobytes()) for name, values in sorted(unpack_samples(blob).items()))


def _sorted(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Rows as (column, value) tuples in a stable order (by the repr of their values)."""
    tuples = [tuple(sorted(row.items())) for row in rows]
    return sorted(tuples, key=lambda row: [repr(value) for _, value in row])
