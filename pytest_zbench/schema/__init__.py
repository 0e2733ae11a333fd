"""The published schemas of runner protocol 1 (probe, job, result.json, one frames.csv row) and run.json.

The JSON files beside this module are the contract (docs/runner-protocol.md links them). The host's readers
in pytest_zbench/protocol.py validate what a runner wrote against them, so the documented contract and the
enforced one are the same files; tests/test_schema.py checks that every enumeration in them equals the
protocol's own tuple.

A frames.csv row is a CSV line, not JSON: each cell is read as a JSON value first (`cell_value`), then the
row is checked column by column against the rules compiled once from frames.schema.json (`FrameRules`): a
JSON Schema validator costs about 0.2 ms a row, too much for every row of every launch.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

PROTOCOL_SCHEMAS = ("probe", "job", "result", "frames")


def schema_file(name: str) -> str:
    return f"{name}.schema.json"


@cache
def load(name: str) -> dict[str, Any]:
    """The parsed schema `name` (probe, job, result, frames, run)."""
    text = resources.files(__name__).joinpath(schema_file(name)).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
@cache
def validator_available() -> bool:
    """Whether jsonschema is installed: on the host always (a dependency of the package); on a device that
    runs only the reference runner it may be missing."""
    import importlib.util

    return importlib.util.find_spec("jsonschema") is not None


def _validator(name: str) -> Any:
    import jsonschema

    return jsonschema.Draft202012Validator(load(name))


@dataclass(frozen=True)
class Violation:
    """One place where a document breaks its schema: the JSON path ('' for the root) and what is wrong."""

    path: tuple[str | int, ...]
    message: str

    @property
    def where(self) -> str:
        return ".".join(str(p) for p in self.path) or "(top level)"

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def violations(name: str, instance: Any) -> list[Violation]:
    """Every violation of schema `name` by `instance`, in document order; empty when it is valid."""
    found = [Violation(tuple(e.absolute_path), _short(e.message)) for e in _validator(name).iter_errors(instance)]
    return sorted(found, key=lambda v: [str(p) for p in v.path])


def _short(message: str) -> str:
    # jsonschema quotes whole sub-documents in its messages; a runner author needs the key, not a page of JSON.
    return message if len(message) <= 240 else message[:237] + "..."


# ------------------------------------------------------------------------------------------- frames.csv

_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)\Z")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\Z")


def cell_value(cell: str) -> Any:
    """A frames.csv cell as the JSON value frames.schema.json judges: empty is None (unknown), digits are an
    integer, another JSON number is a float, true/false are booleans, anything else stays a string."""
    text = cell.strip()
    if text == "":
        return None
    if _INTEGER.match(text):
        return int(text)
    if _NUMBER.match(text):
        value = float(text)
        return value if math.isfinite(value) else text
    if text in ("true", "false"):
        return text == "true"
    return text


_TYPES = {"integer", "number", "string", "null", "boolean"}
MAX_VERDICTS = 1 << 16  # cells whose verdict is kept (FrameRules.row_problems)
_KEYWORDS = {"type", "enum", "minimum", "maximum", "description", "x-unit"}


@dataclass(frozen=True)
class ColumnRule:
    """What frames.schema.json allows in one column, as plain Python: types, an enumeration, a range."""

    column: str
    types: frozenset[str] | None
    enum: tuple[Any, ...] | None
    minimum: float | None
    maximum: float | None
    unit: str | None = None

    def problem(self, value: Any) -> str | None:
        """Why `value` (a cell_value) breaks the rule, or None when it is allowed."""
        if self.enum is not None:
            if not any(_same(value, allowed) for allowed in self.enum):
                return f"{value!r} is not one of {[a for a in self.enum if a is not None]}" + (
                    " (or empty)" if None in self.enum else "")
            return None
        if self.types is not None and not any(_is_type(value, t) for t in self.types):
            return f"{value!r} is not {' or '.join(sorted(self.types - {'null'}))}" + (
                " (or empty)" if "null" in self.types else "")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if self.minimum is not None and value < self.minimum:
                return f"{value!r} is below the minimum {self.minimum:g}"
            if self.maximum is not None and value > self.maximum:
                return f"{value!r} is above the maximum {self.maximum:g}"
        return None


def _same(value: Any, allowed: Any) -> bool:
    # JSON equality: 1 and true are different values, 1 and 1.0 the same number.
    if isinstance(value, bool) or isinstance(allowed, bool):
        return isinstance(value, bool) and isinstance(allowed, bool) and value == allowed
    if value is None or allowed is None:
        return value is allowed
    return bool(value == allowed)


def _is_type(value: Any, kind: str) -> bool:
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, (int, float)) and not isinstance(value, bool)  # number


def _compile(column: str, raw: Mapping[str, Any]) -> ColumnRule:
    unknown = set(raw) - _KEYWORDS
    if unknown:
        raise ValueError(f"frames.schema.json column {column!r}: keywords {sorted(unknown)} are not compiled; "
                         f"extend pytest_zbench.schema.ColumnRule")
    types = raw.get("type")
    if isinstance(types, str):
        types = [types]
    if types is not None and not set(types) <= _TYPES:
        raise ValueError(f"frames.schema.json column {column!r}: type {types!r} is not compiled")
    return ColumnRule(column, frozenset(types) if types is not None else None,
                      tuple(raw["enum"]) if "enum" in raw else None, raw.get("minimum"), raw.get("maximum"),
                      raw.get("x-unit"))


@dataclass(frozen=True)
class FrameRules:
    """frames.schema.json compiled: the required columns in header order, and each column's rule."""

    columns: tuple[str, ...]
    rules: Mapping[str, ColumnRule]
    extra: ColumnRule
    # (column, cell) -> its verdict: a pure function of the two, and most cells of a frames.csv repeat (phase,
    # sources, flags, counters, empty cells), so each is judged once, not once per row. Bounded.
    _verdicts: dict[tuple[str, str], str | None] = field(default_factory=dict, compare=False, repr=False)

    def rule(self, column: str) -> ColumnRule:
        return self.rules.get(column, self.extra)

    def row_problems(self, cells: Mapping[str, str], columns: Iterable[str] | None = None) -> dict[str, str]:
        """Column -> why its cell breaks the schema, for the given columns (default: every cell)."""
        problems = {}
        verdicts = self._verdicts
        for column in cells if columns is None else columns:
            cell = cells.get(column)
            if cell is None:
                continue
            key = (column, cell)
            if key in verdicts:
                why = verdicts[key]
            else:
                why = self.rule(column).problem(cell_value(cell))
                if len(verdicts) < MAX_VERDICTS:
                    verdicts[key] = why
            if why is not None:
                problems[column] = why
        return problems


@cache
def frame_rules() -> FrameRules:
    schema = load("frames")
    rules = {column: _compile(column, raw) for column, raw in schema["properties"].items()}
    return FrameRules(tuple(schema["x-columns"]), rules, _compile("(extra)", schema["additionalProperties"]))
