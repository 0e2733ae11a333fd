"""Lengths in scene files: pixels, or units that the host resolves against the surface of one job.

A scene is written once and runs on an 800x480 tablet and a 2560x1600 desktop, so its lengths may be
relative ("50%", "25vw", "10vh", "5vmin", "5vmax") or sums of terms ("100% - 2"). Parsing happens when the
file is loaded, so a bad unit is reported before any device is touched; resolving happens per surface.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

Axis = Literal["x", "y"] | None

_TERM_RE = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*(px|%|vw|vh|vmin|vmax)?$")
# Binary + and - need spaces around them so that "-10%" stays one negative term.
_SPLIT_RE = re.compile(r"\s+([+-])\s+")
UNITS_HELP = 'a number of pixels, or "50%", "25vw", "10vh", "5vmin", "5vmax", or a sum such as "100% - 2"'


@dataclass(frozen=True)
class Length:
    """px + width * surface_width + height * surface_height + vmin * min(w, h) + vmax * max(w, h)."""

    px: float = 0.0
    width: float = 0.0
    height: float = 0.0
    vmin: float = 0.0
    vmax: float = 0.0

    def __add__(self, other: Length) -> Length:
        return Length(self.px + other.px, self.width + other.width, self.height + other.height,
                      self.vmin + other.vmin, self.vmax + other.vmax)

    def scaled(self, factor: float) -> Length:
        return Length(self.px * factor, self.width * factor, self.height * factor,
                      self.vmin * factor, self.vmax * factor)

    def resolve(self, width: int, height: int) -> int | float:
        value = (self.px + self.width * width + self.height * height
                 + self.vmin * min(width, height) + self.vmax * max(width, height))
        # Rounding hides float noise such as 0.1 * 800 = 80.00000000000001, which would otherwise show up
        # in job files and make identical scenes look different.
        value = round(value, 6)
        return int(value) if value.is_integer() else value


def parse_length(value: object, axis: Axis) -> Length:
    """A plain number (pixels) or a unit string; `axis` says what "%" is a percentage of.

    Raises ValueError with a message that says what is accepted.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"expected {UNITS_HELP}, got {value!r}")
    if not isinstance(value, str):
        if not math.isfinite(value):
            raise ValueError(f"expected a finite length, got {value!r}")
        return Length(px=float(value))
    text = value.strip()
    parts = _SPLIT_RE.split(text)
    total = _term(parts[0], axis, value)
    for sign, term in zip(parts[1::2], parts[2::2]):
        total = total + _term(term, axis, value).scaled(-1.0 if sign == "-" else 1.0)
    return total


def _term(term: str, axis: Axis, whole: str) -> Length:
    match = _TERM_RE.match(term.strip())
    if not match:
        raise ValueError(f"{whole!r} is not a length: expected {UNITS_HELP}")
    number, unit = float(match.group(1)), match.group(2) or "px"
    if unit == "px":
        return Length(px=number)
    if unit == "vw":
        return Length(width=number / 100)
    if unit == "vh":
        return Length(height=number / 100)
    if unit == "vmin":
        return Length(vmin=number / 100)
    if unit == "vmax":
        return Length(vmax=number / 100)
    if axis == "x":
        return Length(width=number / 100)
    if axis == "y":
        return Length(height=number / 100)
    raise ValueError(f"{whole!r}: '%' is ambiguous for a length that is neither horizontal nor vertical; "
                     "use vw, vh, vmin or vmax")
