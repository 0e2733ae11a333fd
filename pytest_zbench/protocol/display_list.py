"""The display list of protocol v1 as data (docs/display-list.md): op names (each op is a feature a runner's
probe lists), the keys of each op, what kind of value each key holds, animations and clip shapes.

Written once, read by both sides: the scene loader (scenes.py) validates scene files against it and fills
in the defaults, the reference runner (runner/interpreter.py) compiles jobs against it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

# What a key's value is. x / y: a length along that axis (a scene file may write "50%" or "25vw"); length: a
# length along no axis (radius, blur, size: "%" is refused there); count: a whole number or "complexity".
ValueKind = Literal["x", "y", "length", "color", "stops", "points", "text", "opacity", "count", "integer",
                    "choice", "boolean", "shape", "ops"]


@dataclass(frozen=True)
class OpSpec:
    """The keys of one op: those a runner always receives, those it may receive, and the defaults the host
    fills in for required keys a scene file may leave out."""

    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    defaults: Mapping[str, Any] = field(default_factory=dict)

    @property
    def keys(self) -> tuple[str, ...]:
        return (*self.required, *self.optional)


OPS: Mapping[str, OpSpec] = {
    "rect": OpSpec(("x", "y", "w", "h", "color"), ("blend",)),
    "rrect": OpSpec(("x", "y", "w", "h", "radius", "color")),
    "border": OpSpec(("x", "y", "w", "h", "radius", "width", "color")),
    "linear_gradient": OpSpec(("x", "y", "w", "h", "x0", "y0", "x1", "y1", "stops")),
    "radial_gradient": OpSpec(("x", "y", "w", "h", "cx", "cy", "r", "stops")),
    "shadow": OpSpec(("x", "y", "w", "h", "radius", "blur", "dx", "dy", "color")),
    "backdrop_blur": OpSpec(("x", "y", "w", "h", "blur")),
    "text": OpSpec(("x", "y", "size", "color", "text"), ("max_width", "line_height", "font")),
    "image": OpSpec(("x", "y", "w", "h", "tex_w", "tex_h", "pattern", "seed", "upload", "filter"), ("alpha",),
                    defaults={"seed": 0, "upload": "once", "filter": "linear"}),
    # The image op's texture uploaded ETC2-compressed (ETC1-compatible RGB8 blocks), opaque: a backend draws it
    # wherever its runner can; measuring it needs the format in the backend's probe (COMPRESSED_FORMATS).
    "etc2_image": OpSpec(("x", "y", "w", "h", "tex_w", "tex_h", "pattern", "seed", "upload", "filter"),
                         defaults={"seed": 0, "upload": "once", "filter": "linear"}),
    "mesh": OpSpec(("x", "y", "w", "h", "columns", "rows", "color", "alt_color")),
    # A rect in `color` that turns `active_color` in the frame that reflects a synthetic tap (the runner makes
    # one every `tap_every` frames): the input-to-photon proxy's scene (docs/display-list.md, "Input").
    "tap_target": OpSpec(("x", "y", "w", "h", "color", "active_color", "tap_every")),
    "rect_batch": OpSpec(("count", "columns", "dx", "dy", "x", "y", "w", "h", "color")),
    "shader": OpSpec(("x", "y", "w", "h", "loops", "fetches"), ("reads",)),
    "video": OpSpec(("x", "y", "w", "h", "tex_w", "tex_h", "seed")),
    "path": OpSpec(("points", "closed", "color"), ("stroke_width",), {"closed": True}),
    "clip": OpSpec(("shape", "ops")),
    "layer": OpSpec(("opacity", "ops")),
    "group": OpSpec(("dx", "dy", "ops"), defaults={"dx": 0, "dy": 0}),
    "repeat": OpSpec(("count", "dx", "dy", "ops"), ("columns",), {"dx": 0, "dy": 0}),
}
FEATURES = frozenset(OPS)

# Every key means the same in every op that has it.
KEY_KINDS: Mapping[str, ValueKind] = {
    **{key: "x" for key in ("x", "w", "dx", "x0", "x1", "cx", "max_width")},
    **{key: "y" for key in ("y", "h", "dy", "y0", "y1", "cy")},
    **{key: "length" for key in ("radius", "width", "blur", "size", "r", "line_height", "stroke_width")},
    "color": "color", "stops": "stops", "points": "points", "text": "text", "opacity": "opacity",
    "alt_color": "color", "active_color": "color", "tap_every": "integer", "count": "count", "columns": "integer", "rows": "integer", "tex_w": "integer",
    "tex_h": "integer", "seed": "integer", "loops": "integer", "fetches": "integer",
    "pattern": "choice", "upload": "choice", "filter": "choice", "alpha": "choice", "blend": "choice",
    "font": "choice", "reads": "choice", "closed": "boolean", "shape": "shape",
    "ops": "ops",
}
# Lengths that draw nothing unless positive (sizes), and those that only make no sense negative (a radius or
# blur of 0 is a sharp corner or a hard shadow). Checked on static values; an animation may pass through 0.
POSITIVE_KEYS = frozenset({"w", "h", "size", "r", "width", "line_height", "stroke_width", "max_width"})
NON_NEGATIVE_KEYS = frozenset({"radius", "blur"})
MAX_COUNT = 100_000
MAX_TEXTURE = 16_384
# A mesh's cells (two triangles each) and a rect_batch's rects: one draw, so the cap is on vertices.
MAX_MESH_CELLS = 65_536
# A shader op's loop and fetch counts are unrolled into the shader's source (constant loop bounds).
MAX_SHADER_LOOPS = 1024
MAX_SHADER_FETCHES = 64
# Frames between a tap_target's synthetic taps, at most (a tap in every frame leaves no frame without one).
MAX_TAP_EVERY = 10_000
INTEGER_RANGES: Mapping[str, tuple[int, int]] = {
    "columns": (1, MAX_COUNT), "rows": (1, MAX_MESH_CELLS), "tex_w": (1, MAX_TEXTURE), "tex_h": (1, MAX_TEXTURE),
    "seed": (0, 2**31 - 1), "loops": (0, MAX_SHADER_LOOPS), "fetches": (0, MAX_SHADER_FETCHES),
    "tap_every": (2, MAX_TAP_EVERY),
}
CHOICES: Mapping[str, tuple[str, ...]] = {
    "pattern": ("checker", "noise"),
    # decode: the texture is held as a PNG, decoded (and uploaded) again every frame.
    "upload": ("once", "every_frame", "decode"),
    # mipmap: linear within and between mip levels, which are built when the texture is (re)uploaded.
    "filter": ("nearest", "linear", "mipmap"),
    # The texture's alpha (absent: opaque): translucent, stored premultiplied or unpremultiplied.
    "alpha": ("opaque", "premul", "unpremul"),
    # A rect's blend mode (absent: src_over).
    "blend": ("src_over", "multiply", "screen", "plus"),
    # A text's typeface (absent: sans, DejaVu Sans); cjk: a CJK font, never a silent fallback.
    "font": ("sans", "cjk"),
    # A shader's texture reads (absent: independent): dependent ones each read where the one before points.
    "reads": ("independent", "dependent"),
}
# A key whose value is this takes it per frame from the job's complexity list (adaptive scenes): in frame f it
# holds round(complexity[f]) (docs/display-list.md, "Complexity").
COMPLEXITY_COUNT = "complexity"
# The one key of each op that may take "complexity", the op's natural count: repetitions (separate draws), rects
# in one batch, rows of a mesh's grid (2 x columns triangles each) and ALU loop iterations of a shader. No other
# key may: a size or a colour that changed with the complexity would not be "more of the same work".
COMPLEXITY_OP_KEYS: Mapping[str, str] = {"repeat": "count", "rect_batch": "count", "mesh": "rows", "shader": "loops"}

# Ops whose texture a backend must upload in a compressed format, and the format's name in a probe's
# `compressed_formats` (docs/runner-protocol.md): a backend without it does not support the scene (its runner
# may still draw the op, decoded on the CPU, as the reference runner's raster backend does for references).
COMPRESSED_FORMATS: Mapping[str, str] = {"etc2_image": "etc2_rgb8"}

# anim -> (keys holding values of the animated number, key holding a frame count)
ANIMATIONS: Mapping[str, tuple[tuple[str, ...], str]] = {
    "linear": (("from", "to"), "period"),
    "sine": (("center", "amplitude"), "period"),
    "step": (("values",), "every"),
}
# clip shape kind -> its keys (besides `kind`)
CLIP_SHAPES: Mapping[str, tuple[str, ...]] = {
    "rect": ("x", "y", "w", "h"),
    "rrect": ("x", "y", "w", "h", "radius"),
    "path": ("points",),
}
# Placeholders in text that the runner fills in: the frame index and the index of the enclosing repeat.
TEXT_PLACEHOLDERS = frozenset({"frame", "i"})


def walk_ops(ops: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    """Every op of a display list, nested ones (in `ops` of clip, layer, group, repeat) included."""
    for op in ops:
        yield op
        if "ops" in op:
            yield from walk_ops(op["ops"])


def ops_features(ops: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """A job's `features`: every op name used anywhere in the display list (docs/display-list.md)."""
    return frozenset(op["op"] for op in walk_ops(ops))


def compressed_formats(ops: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """The compressed texture formats a display list uploads (COMPRESSED_FORMATS)."""
    return frozenset(COMPRESSED_FORMATS[op["op"]] for op in walk_ops(ops) if op["op"] in COMPRESSED_FORMATS)


def takes_complexity(op: str, key: str) -> bool:
    """Whether `key` of op `op` may be "complexity" (COMPLEXITY_OP_KEYS)."""
    return COMPLEXITY_OP_KEYS.get(op) == key


def complexity_keys_text() -> str:
    """The keys that take "complexity", for error messages: "repeat count, rect_batch count, ..."."""
    return ", ".join(f"{op} {key}" for op, key in COMPLEXITY_OP_KEYS.items())


def counts_complexity(op: Mapping[str, Any]) -> bool:
    """Whether this one op takes its count from the frame's complexity."""
    key = COMPLEXITY_OP_KEYS.get(op.get("op", ""))
    return key is not None and op.get(key) == COMPLEXITY_COUNT


def is_adaptive(ops: Iterable[Mapping[str, Any]]) -> bool:
    """Whether a display list is adaptive: an op anywhere in it takes its count from the complexity."""
    return any(counts_complexity(op) for op in walk_ops(ops))


def complexity_cap(op: Mapping[str, Any]) -> int:
    """The largest complexity this op (one that counts it) can draw: its key's own cap, and for a mesh the
    cell cap over its columns (when columns is not a positive integer, validation of columns reports it)."""
    name = op["op"]
    if name == "repeat":
        return MAX_COUNT
    if name == "rect_batch":
        return MAX_MESH_CELLS
    if name == "mesh":
        columns = op.get("columns")
        if isinstance(columns, int) and not isinstance(columns, bool) and columns > 0:
            return MAX_MESH_CELLS // columns
        return MAX_MESH_CELLS
    if name == "shader":
        return MAX_SHADER_LOOPS
    raise ValueError(f"op {name!r} takes no complexity")


def complexity_round(complexity: float | None) -> int:
    """A frame's complexity as the count it draws: rounded half to even, never below 0."""
    return max(0, round(complexity or 0.0))
