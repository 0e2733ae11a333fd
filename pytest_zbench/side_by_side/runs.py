"""The runs `zbench engines` and the site's engines pages read: a run.json, or a results folder holding one,
checked against run.schema.json (host/run_record.py), each mistake one line naming the file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..results_folder import run_json_path
from .table import Engine, EnginesError, engines_of


def read_run(path: Path, *, check: bool = True) -> dict[str, Any]:
    """A run.json of this version; anything else is one clear error naming the file. check=False: a JSON
    object, not yet checked against the schema (run_schema_errors, for the caller to call when it uses it)."""
    import json

    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EnginesError(f"cannot read {path}: {exc}") from None
    if not isinstance(document, dict):
        raise EnginesError(f"{path} is not a run.json of this version: not a JSON object")
    errors = run_schema_errors(document, path) if check else ""
    if errors:
        raise EnginesError(errors)
    return dict(document)


def run_schema_errors(document: dict[str, Any], path: Path) -> str:
    """Why `document` is not a run.json of this version, in one line naming the file; empty when it is."""
    from ..host.run_record import validate_run

    errors = validate_run(document)
    return f"{path} is not a run.json of this version: {'; '.join(errors[:3])}" if errors else ""


def load_engines(paths: Sequence[Path]) -> list[Engine]:
    """The engines of every run, each named once: a device in two runs is two measurements of one engine,
    which `zbench compare` judges, not this view."""
    engines: list[Engine] = []
    for given in paths:
        path = run_json_path(given)
        for engine in engines_of(read_run(path), path):
            twin = next((e for e in engines if e.name == engine.name), None)
            if twin is not None:
                raise EnginesError(f"device {engine.name!r} is in both {twin.run_json} and {path}: give one run per "
                                   "engine (`zbench compare A.json B.json` compares two runs of one engine)")
            engines.append(engine)
    if len(engines) < 2:
        raise EnginesError(f"{len(engines)} engine(s) in {', '.join(str(p) for p in paths)}: side by side needs "
                           "at least two (a run of each engine: pytest --zbench-device=NAME --zbench-results=DIR)")
    return engines
