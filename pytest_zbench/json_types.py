"""What a value read from JSON or YAML is, where a number belongs: Python's bool is an int, so `true` (or YAML's
`yes` and `on`) would pass as 1; every reader of files, settings and records asks these instead."""

from __future__ import annotations

from typing import Any, TypeGuard


def is_int(value: Any) -> TypeGuard[int]:
    """A whole number, not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> TypeGuard[float]:
    """An int or a float (NaN and the infinities included: callers that need finite say so), not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)
