"""Every row of a history, comparable between two databases: surrogate ids (scene rows, calibration ids)
replaced by the natural keys they stand for. Plain Python, for the migration and export/import tests."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
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
    """Rows as (column, value) tuples in a stable order: by the repr of their values, the columns that hold
    measured floats (JSON summaries, sample arrays) last, so that a last-digit difference in one of them cannot
    reorder rows whose keys differ."""
    tuples = [tuple(sorted(row.items())) for row in rows]
    return sorted(tuples, key=lambda row: ([repr(value) for column, value in row if column not in _MEASURED],
                                           [repr(value) for column, value in row if column in _MEASURED]))


_MEASURED = ("summary", "samples")
_JSON_COLUMNS = ("environment", "params", "summary", "mde", "run_ids")


def decoded(tables: dict[str, list[tuple[Any, ...]]]) -> dict[str, list[tuple[Any, ...]]]:
    """table_rows' rows with their JSON columns parsed and their sample arrays as lists of numbers, so that the
    floats inside them can be compared with a tolerance (approx_floats)."""
    def value(column: str, v: Any) -> Any:
        if column in _JSON_COLUMNS and isinstance(v, str):
            return json.loads(v)
        if column == "samples" and v is not None:
            return tuple((name, dtype, np.frombuffer(data, dtype=dtype).tolist()) for name, dtype, data in v)
        return v

    return {table: [tuple((column, value(column, v)) for column, v in row) for row in rows]
            for table, rows in tables.items()}


def approx_floats(obj: Any, rel: float) -> Any:
    """`obj` (nested tuples, lists and dicts) with every float replaced by pytest.approx(float, rel=rel): compared
    with ==, other values must be equal and floats agree to `rel`."""
    if isinstance(obj, float):
        return pytest.approx(obj, rel=rel, abs=0.0)
    if isinstance(obj, tuple):
        return tuple(approx_floats(x, rel) for x in obj)
    if isinstance(obj, list):
        return [approx_floats(x, rel) for x in obj]
    if isinstance(obj, dict):
        return {k: approx_floats(v, rel) for k, v in obj.items()}
    return obj
