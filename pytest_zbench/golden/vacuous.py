"""Vacuous captures (docs/goldens.md, "Vacuous captures"): a golden that would pass whatever the runner drew.

A capture of a single colour shows no drawing at all (ops drawn off the surface, culled, or not drawn), and a
capture identical to another case of its sweep whose ops differ shows that the swept difference never reached
the pixels. Either makes the golden test vacuous: it fails, and the capture is never written as a golden.

Some differences in ops are invisible by design, and are not compared: the same op drawn more times over
itself (an overdraw stack of opaque layers gives the pixels of one layer: runs of one repeated op are
collapsed to one), keys that change what a frame costs but not what it shows (NON_VISUAL_KEYS), and, at
frame 0, animations (every animation starts from the same place; the later captured frame tells them apart).

Plain values: pixel arrays, digests and op lists in, messages out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..protocol.vocabulary import IssueKind

KIND: IssueKind = "vacuous_capture"
# Op keys that change the cost of a frame, not its pixels (docs/display-list.md): when a texture is uploaded.
NON_VISUAL_KEYS = frozenset({"upload"})


def single_colour(pixels: np.ndarray) -> str | None:
    """The one colour ("#RRGGBBAA") of an image whose every pixel is the same, else None."""
    arr = np.asarray(pixels)
    flat = arr.reshape(-1, arr.shape[-1])
    if flat.size == 0 or not bool((flat == flat[0]).all()):
        return None
    rgba = [int(v) for v in flat[0]] + ([255] if flat.shape[1] == 3 else [])
    return "#" + "".join(f"{v:02X}" for v in rgba)


def ops_differ_visibly(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]], frame: int = 0) -> bool:
    """Whether two cases' ops must give different pixels at `frame`: they differ in more than how many times one
    op is drawn over itself in a row, in non-visual keys, and (at frame 0) in animations."""
    if frame == 0 and (_animated(a) or _animated(b)):
        return False
    return _collapsed(a) != _collapsed(b)


def identical_siblings(digest: str, siblings: Mapping[str, str]) -> list[str]:
    """The sibling cases (id -> the pixel digest of their capture or golden of the same frame) whose pixels equal
    this capture's, sorted."""
    return sorted(case for case, other in siblings.items() if other == digest)


def single_colour_message(frame: int, colour: str) -> str:
    return (f"{KIND} at frame {frame}: every pixel is {colour}; the scene's ops drew nothing visible (off the "
            f"surface, culled, or not drawn), so a golden of it would pass any runner")


def identical_message(frame: int, cases: Sequence[str]) -> str:
    return (f"{KIND} at frame {frame}: the pixels equal those of {', '.join(cases)} of the same sweep, whose ops "
            f"differ; the swept difference never reaches the image, so the golden cannot tell the cases apart")


def _collapsed(ops: Sequence[Mapping[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for op in ops:
        canonical = _canonical(op)
        if not out or out[-1] != canonical:
            out.append(canonical)
    return out


def _canonical(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((k, _canonical(v) if k != "ops" else tuple(_collapsed(v))) for k, v in value.items()
                            if k not in NON_VISUAL_KEYS))
    if isinstance(value, (list, tuple)):
        return tuple(_canonical(v) for v in value)
    return value


def _animated(value: Any) -> bool:
    """An animation anywhere ({anim: ...} or a text with {frame})."""
    if isinstance(value, Mapping):
        return "anim" in value or any(_animated(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_animated(v) for v in value)
    return isinstance(value, str) and "{frame}" in value
