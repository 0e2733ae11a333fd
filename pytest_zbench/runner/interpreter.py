"""The display list of docs/display-list.md, drawn on any skia.Canvas.

`compile_scene` validates the whole list once and turns it into a tree of small closures ("nodes"). Everything
that does not depend on the frame index (rects, paints, shaders, text blobs, images uploaded once) is built
there, before frame 0, so the frame loop measures drawing and not Python setup. An op with an animated number
is rebuilt from its resolved values in every frame, as an engine animating that property would. An op whose
count takes the frame's complexity (adaptive scenes: a mesh's rows, a batch's rects, a shader's loop count) is
built before frame 0 once for every count the job's complexity list holds, and frame f draws the one built for
round(complexity[f]) (docs/display-list.md, "Complexity").

The interpreter knows nothing of backends: it draws on the canvas it is given and asks its caller to upload
images, so the software and GPU backends render the same calls.

Every node also carries a counting function (`Program.count`): a walk of the same tree that draws nothing and
adds up what a frame asks of the rasteriser (state changes, render-target switches, pixels drawn, pixel memory
allocated; docs/runner-protocol.md, "The reference runner's counters"). The runner calls it after a frame's
clocks stopped, and only once for a scene whose frames are all alike, so counting never costs frame time.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import skia

from pytest_zbench.protocol import Issue, ZbenchError
from pytest_zbench.protocol.display_list import (
    ANIMATIONS,
    CHOICES,
    CLIP_SHAPES,
    COMPLEXITY_COUNT,
    FEATURES,
    INTEGER_RANGES,
    MAX_MESH_CELLS,
    OPS,
    complexity_cap,
    complexity_keys_text,
    complexity_round,
    counts_complexity,
    takes_complexity,
)
from pytest_zbench.runner import etc1

# DejaVu Sans makes text captures identical across devices that have it; the usual places on Linux.
FONT_PATHS = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
)
# A CJK font for `font: cjk` text: Debian's fonts-wqy-zenhei (ci/setup.sh installs it) or Noto Sans CJK; a
# device whose font is elsewhere names it in ZBENCH_CJK_FONT. Missing, the scene fails: a fallback typeface
# has no CJK glyphs, and drawing empty boxes would measure nothing.
CJK_FONT_PATHS = (
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
)
CJK_FONT_ENV = "ZBENCH_CJK_FONT"
SKIA_BLEND_MODES = {"src_over": skia.BlendMode.kSrcOver, "multiply": skia.BlendMode.kMultiply,
                    "screen": skia.BlendMode.kScreen, "plus": skia.BlendMode.kPlus}
# A translucent texture's alpha (alpha: premul / unpremul): one value, so that both store the same picture.
TEXTURE_ALPHA = 0xA0
VIDEO_FRAMES = 4  # distinct frames of a video op, cycled: every frame's planes differ from the last one's
CHECKER_CELL = 8  # texels per checker square, whatever the texture size
CHECKER_COLORS = ((0x20, 0x50, 0xA0, 0xFF), (0xF0, 0xC0, 0x40, 0xFF))
WHITE = 0xFFFFFFFF


class DisplayListError(ZbenchError, ValueError):
    """The display list breaks the contract; the message names the op path and key."""


class MissingFont(ZbenchError, RuntimeError):
    """A font the scene asks for is not on the device; the message names it and where it was looked for."""


@dataclass
class FrameState:
    """Per-frame values the nodes read and the counters they bump; one instance is reused for every frame."""

    frame: int = 0
    complexity: float | None = None
    i: int = 0  # index of the innermost enclosing repeat
    draw_calls: int = 0
    upload_bytes: int = 0
    tapped: bool = False  # this frame is the first to start after a synthetic tap (runner/input_proxy.py)


Node = Callable[[skia.Canvas, FrameState], None]
Draw = Callable[[skia.Canvas, FrameState], None]
# (ETC2 RGB8 data, width, height) -> the image a backend draws it as (an etc2_image op's texture).
CompressedUpload = Callable[[bytes, int, int], skia.Image]
Bounds = tuple[float, float, float, float]  # x0, y0, x1, y1 (x0 <= x1, y0 <= y1) in an op's own coordinates


@dataclass
class FrameCounts:
    """The counting walk's state and result for one frame. `clip` is the current clip's bounds in the
    coordinates of the op being counted: a translation moves the clip the other way instead of every op."""

    frame: int = 0
    complexity: float | None = None
    i: int = 0
    clip: Bounds = (0.0, 0.0, 0.0, 0.0)
    pixels_drawn: float = 0.0
    state_changes: int = 0
    rt_switches: int = 0
    alloc_bytes: float = 0.0

    def columns(self) -> dict[str, int]:
        """The frames.csv cells of these counts."""
        return {"state_changes": self.state_changes, "rt_switches": self.rt_switches,
                "pixels_drawn": round(self.pixels_drawn), "alloc_bytes": round(self.alloc_bytes)}


Count = Callable[[FrameCounts], None]


@dataclass(frozen=True)
class _Footprint:
    """What one execution of a drawing op asks for: the bounds it may touch (None: nothing), whether it
    draws through an offscreen layer (backdrop_blur), and pixel bytes it allocates besides (image copies)."""

    bounds: Bounds | None
    layer: bool = False
    alloc_bytes: int = 0
    covered: float | None = None  # the pixels drawn when they are fewer than the bounds' (a rect_batch's)


NOTHING = _Footprint(None)


def _box(x0: float, y0: float, x1: float, y1: float, grow: float = 0.0) -> Bounds:
    return (min(x0, x1) - grow, min(y0, y1) - grow, max(x0, x1) + grow, max(y0, y1) + grow)


def _rect_box(p: dict[str, Any], grow: float = 0.0) -> Bounds:
    return _box(p["x"], p["y"], p["x"] + p["w"], p["y"] + p["h"], grow)


def _points_box(points: list[list[float]], grow: float = 0.0) -> Bounds:
    xs, ys = [pt[0] for pt in points], [pt[1] for pt in points]
    return _box(min(xs), min(ys), max(xs), max(ys), grow)


def _intersect(a: Bounds, b: Bounds) -> Bounds:
    return (max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3]))


def _area(b: Bounds) -> float:
    w, h = b[2] - b[0], b[3] - b[1]
    return w * h if w > 0 and h > 0 else 0.0


def _counted(node: Node, count: Count) -> Node:
    node.count = count  # type: ignore[attr-defined]  # the counting twin travels with the node
    return node


def _count_of(node: Node) -> Count:
    count: Count = node.count  # type: ignore[attr-defined]
    return count


def _shifted(clip: Bounds, dx: float, dy: float) -> Bounds:
    """The clip as seen by ops translated by (dx, dy)."""
    return (clip[0] - dx, clip[1] - dy, clip[2] - dx, clip[3] - dy)


def _count_children(children: list[Node]) -> Callable[[FrameCounts], None]:
    counts = [_count_of(child) for child in children]

    def count(cs: FrameCounts) -> None:
        for child in counts:
            child(cs)

    return count


# ------------------------------------------------------------------------------------------- animations


class Anim:
    """A number that is a function of the frame index (never of wall time)."""

    def __call__(self, f: int) -> float:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Linear(Anim):
    start: float
    end: float
    period: float

    def __call__(self, f: int) -> float:
        return self.start + (self.end - self.start) * ((f % self.period) / self.period)


@dataclass(frozen=True, slots=True)
class Sine(Anim):
    center: float
    amplitude: float
    period: float

    def __call__(self, f: int) -> float:
        return self.center + self.amplitude * math.sin(2.0 * math.pi * f / self.period)


@dataclass(frozen=True, slots=True)
class Step(Anim):
    values: tuple[float, ...]
    every: int

    def __call__(self, f: int) -> float:
        return self.values[(f // self.every) % len(self.values)]


class PerFrameCount:
    """The value of a key given "complexity": in frame f, round(complexity[f]) (never below 0)."""

    def __repr__(self) -> str:
        return "PER_FRAME_COUNT"


PER_FRAME_COUNT = PerFrameCount()


def _any_value(value: Any, kind: type | tuple[type, ...]) -> bool:
    if isinstance(value, kind):
        return True
    if isinstance(value, dict):
        return any(_any_value(v, kind) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_any_value(v, kind) for v in value)
    return False


def _is_dynamic(value: Any) -> bool:
    """Whether the value can differ between frames: an animation or a count taken from the complexity."""
    return _any_value(value, (Anim, PerFrameCount))


def _is_animated(value: Any) -> bool:
    return _any_value(value, Anim)


def _resolve(value: Any, f: int, complexity: float | None = None) -> Any:
    if isinstance(value, Anim):
        return value(f)
    if isinstance(value, PerFrameCount):
        return complexity_round(complexity)
    if isinstance(value, dict):
        return {k: _resolve(v, f, complexity) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_resolve(v, f, complexity) for v in value]
    return value


# ----------------------------------------------------------------------------------------- value parsing


def _plain_number(raw: Any, where: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise DisplayListError(f"{where}: {raw!r} is not a number")
    if not math.isfinite(raw):
        raise DisplayListError(f"{where}: {raw!r} is not a finite number")
    return float(raw)


def _positive_int(raw: Any, where: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        raise DisplayListError(f"{where}: {raw!r} is not a positive integer")
    return raw


def _anim(raw: dict[str, Any], where: str) -> Anim:
    kind = raw.get("anim")
    if not isinstance(kind, str) or kind not in ANIMATIONS:
        raise DisplayListError(f"{where}: animation {raw!r} needs 'anim' to be {' or '.join(ANIMATIONS)}")
    value_keys, frames_key = ANIMATIONS[kind]
    keys = (*value_keys, frames_key)
    missing = [k for k in keys if k not in raw]
    extra = sorted(set(raw) - set(keys) - {"anim"})
    if missing or extra:
        raise DisplayListError(f"{where}: {kind} animation takes keys {', '.join(keys)}"
                               + (f"; missing {missing}" if missing else "") + (f"; unknown {extra}" if extra else ""))
    if kind == "step":
        values = raw["values"]
        if not isinstance(values, list) or not values:
            raise DisplayListError(f"{where}: step animation 'values' must be a non-empty list of numbers")
        return Step(tuple(_plain_number(v, f"{where} values[{n}]") for n, v in enumerate(values)),
                    _positive_int(raw["every"], f"{where} every"))
    period = _plain_number(raw["period"], f"{where} period")
    if period <= 0:
        raise DisplayListError(f"{where}: animation period {period:g} must be positive")
    if kind == "linear":
        return Linear(_plain_number(raw["from"], f"{where} from"), _plain_number(raw["to"], f"{where} to"), period)
    return Sine(_plain_number(raw["center"], f"{where} center"),
                _plain_number(raw["amplitude"], f"{where} amplitude"), period)


def _number(raw: Any, where: str) -> float | Anim:
    if isinstance(raw, dict):
        return _anim(raw, where)
    return _plain_number(raw, where)


def _color(raw: Any, where: str) -> int:
    """"#RRGGBB" or "#RRGGBBAA" → Skia's ARGB integer."""
    if not isinstance(raw, str) or len(raw) not in (7, 9) or raw[0] != "#":
        raise DisplayListError(f"{where}: {raw!r} is not a colour \"#RRGGBB\" or \"#RRGGBBAA\"")
    try:
        value = int(raw[1:], 16)
    except ValueError:
        raise DisplayListError(f"{where}: {raw!r} is not a colour \"#RRGGBB\" or \"#RRGGBBAA\"") from None
    if len(raw) == 7:
        return 0xFF000000 | value
    return ((value & 0xFF) << 24) | (value >> 8)


class _OpReader:
    """Reads one op's keys as the protocol's op table (OPS) declares them; unknown (misspelt) keys are
    reported too."""

    def __init__(self, raw: dict[str, Any], path: str) -> None:
        self.raw, self.path, self.name = raw, path, raw["op"]
        self.spec = OPS[self.name]

    def where(self, key: str) -> str:
        return f"{self.path} key {key!r}"

    def get(self, key: str, *, optional: bool = False) -> Any:
        assert key in self.spec.keys, f"{self.name!r} has no key {key!r} in protocol.display_list.OPS"
        if key not in self.raw:
            if optional:
                return None
            raise DisplayListError(f"{self.where(key)}: missing from this {self.name!r} op")
        raw = self.raw[key]
        if raw == COMPLEXITY_COUNT and not takes_complexity(self.name, key):
            raise DisplayListError(f"{self.where(key)}: 'complexity' is taken only by {complexity_keys_text()}")
        return raw

    def per_frame_count(self, key: str, counts: frozenset[int] | None) -> PerFrameCount | None:
        """PER_FRAME_COUNT when `key` is "complexity" (a key the protocol lets take it), else None. `counts`: the
        counts the job's complexity list holds (None: it holds none), none of which may pass the op's cap."""
        if self.get(key) != COMPLEXITY_COUNT:
            return None
        if counts is None:
            raise DisplayListError(f"{self.where(key)}: 'complexity' but the job carries no complexity list")
        cap = complexity_cap(self.raw)
        if counts and max(counts) > cap:
            raise DisplayListError(f"{self.where(key)}: the job's complexity reaches {max(counts)}, more than this "
                                   f"{self.name!r} op draws ({cap})")
        return PER_FRAME_COUNT

    def num(self, key: str, *, optional: bool = False) -> float | Anim | None:
        raw = self.get(key, optional=optional)
        return None if raw is None else _number(raw, self.where(key))

    def nums(self, *keys: str) -> dict[str, float | Anim]:
        return {k: self.num(k) for k in keys}  # type: ignore[misc]

    def color(self, key: str) -> int:
        return _color(self.get(key), self.where(key))

    def choice(self, key: str) -> str:
        raw = self.get(key)
        choices = CHOICES[key]
        if raw not in choices:
            raise DisplayListError(f"{self.where(key)}: {raw!r} is not one of {', '.join(choices)}")
        return str(raw)

    def points(self, key: str, raw: Any | None = None, where: str | None = None) -> list[list[float | Anim]]:
        raw = self.get(key) if raw is None else raw
        where = where or self.where(key)
        if not isinstance(raw, list) or len(raw) < 2:
            raise DisplayListError(f"{where}: needs a list of at least two [x, y] points")
        out = []
        for n, point in enumerate(raw):
            if not isinstance(point, list) or len(point) != 2:
                raise DisplayListError(f"{where}[{n}]: {point!r} is not an [x, y] point")
            out.append([_number(point[0], f"{where}[{n}][0]"), _number(point[1], f"{where}[{n}][1]")])
        return out

    def finish(self) -> None:
        unknown = sorted(set(self.raw) - {"op", *self.spec.keys})
        if unknown:
            raise DisplayListError(f"{self.where(unknown[0])}: unknown key for a {self.name!r} op "
                                   f"(it takes {', '.join(sorted(self.spec.keys))})")


# ----------------------------------------------------------------------------------------------- paints


def _fill(color: int) -> skia.Paint:
    return skia.Paint(Color=color, AntiAlias=True)


def _rect(p: dict[str, Any]) -> skia.Rect:
    return skia.Rect.MakeXYWH(p["x"], p["y"], p["w"], p["h"])


def _rrect(p: dict[str, Any], radius: float) -> skia.RRect:
    return skia.RRect.MakeRectXY(_rect(p), radius, radius)


def _path(points: list[list[float]], closed: bool) -> skia.Path:
    path = skia.Path()
    path.moveTo(*points[0])
    for x, y in points[1:]:
        path.lineTo(x, y)
    if closed:
        path.close()
    return path


def _gradient_colors(reader: _OpReader) -> tuple[list[float | Anim], list[int]]:
    raw = reader.get("stops")
    where = reader.where("stops")
    if not isinstance(raw, list) or not raw:
        raise DisplayListError(f"{where}: needs a non-empty list of [pos, colour] stops")
    positions, colors = [], []
    for n, stop in enumerate(raw):
        if not isinstance(stop, list) or len(stop) != 2:
            raise DisplayListError(f"{where}[{n}]: {stop!r} is not a [pos, colour] stop")
        positions.append(_number(stop[0], f"{where}[{n}][0]"))
        colors.append(_color(stop[1], f"{where}[{n}][1]"))
    return positions, colors


def _wrap(text: str, font: skia.Font, max_width: float | None) -> list[str]:
    """Greedy word wrap; a word wider than max_width gets a line of its own. Newlines always break."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        if max_width is None:
            lines.append(paragraph)
            continue
        line = ""
        for word in paragraph.split(" "):
            candidate = f"{line} {word}" if line else word
            if line and font.measureText(candidate) > max_width:
                lines.append(line)
                line = word
            else:
                line = candidate
        lines.append(line)
    return lines


def _substitute(text: str, st: FrameState | FrameCounts) -> str:
    # str.replace, not str.format: other braces in user text stay as they are.
    return text.replace("{frame}", str(st.frame)).replace("{i}", str(st.i))


def checker_pixels(width: int, height: int) -> np.ndarray:
    ys, xs = np.indices((height, width))
    odd = ((xs // CHECKER_CELL + ys // CHECKER_CELL) % 2).astype(bool)
    out = np.empty((height, width, 4), dtype=np.uint8)
    out[~odd] = CHECKER_COLORS[0]
    out[odd] = CHECKER_COLORS[1]
    return out


def noise_pixels(width: int, height: int, seed: int) -> np.ndarray:
    # Opaque noise: premultiplied and unpremultiplied are then the same bytes on every backend.
    out = np.random.default_rng(seed).integers(0, 256, size=(height, width, 4), dtype=np.uint8)
    out[..., 3] = 255
    return out


def translucent(pixels: np.ndarray, alpha: str) -> np.ndarray:
    """The texture with alpha TEXTURE_ALPHA, stored as `alpha` says (premul: colour scaled by alpha)."""
    out: np.ndarray = pixels.copy()
    if alpha == "premul":
        out[..., :3] = ((pixels[..., :3].astype(np.uint16) * TEXTURE_ALPHA + 127) // 255).astype(np.uint8)
    out[..., 3] = TEXTURE_ALPHA
    return out


ALPHA_TYPES = {"opaque": skia.kOpaque_AlphaType, "premul": skia.kPremul_AlphaType,
               "unpremul": skia.kUnpremul_AlphaType}


def _make_image(pixels: np.ndarray, alpha: str = "opaque") -> skia.Image:
    return skia.Image.fromarray(pixels, colorType=skia.kRGBA_8888_ColorType, alphaType=ALPHA_TYPES[alpha])


def _mesh_vertices(x: float, y: float, w: float, h: float, columns: int, rows: int,
                   colors: tuple[int, int]) -> skia.Vertices:
    """A columns x rows grid over the rect, two triangles per cell, the first of each in colors[0]."""
    xs = [x + w * c / columns for c in range(columns + 1)]
    ys = [y + h * r / rows for r in range(rows + 1)]
    grid = [[skia.Point(gx, gy) for gx in xs] for gy in ys]  # one Point per grid vertex, shared by its cells
    points: list[skia.Point] = []
    for r in range(rows):
        top, bottom = grid[r], grid[r + 1]
        for c in range(columns):
            points += [top[c], top[c + 1], bottom[c], top[c + 1], bottom[c + 1], bottom[c]]
    return skia.Vertices(skia.Vertices.kTriangles_VertexMode, points, None,
                         [colors[k // 3 % 2] for k in range(6 * columns * rows)])


def _batch_vertices(rects: list[tuple[float, float, float, float]], color: int) -> skia.Vertices:
    points: list[skia.Point] = []
    for x0, y0, x1, y1 in rects:
        points += [skia.Point(x0, y0), skia.Point(x1, y0), skia.Point(x0, y1),
                   skia.Point(x1, y0), skia.Point(x1, y1), skia.Point(x0, y1)]
    return skia.Vertices(skia.Vertices.kTriangles_VertexMode, points, None, [color] * len(points))


def _first_typeface(paths: Sequence[str]) -> skia.Typeface | None:
    """The typeface of the first of these font files that exists and loads, or None."""
    for candidate in paths:
        if Path(candidate).is_file():
            typeface = skia.Typeface.MakeFromFile(candidate)
            if typeface is not None:
                return typeface
    return None


def shader_source(loops: int, fetches: int, dependent: bool = False) -> str:
    """The SkSL of a shader op: `fetches` reads of a texture at fixed offsets, then `loops` iterations of a
    contracting ALU step (each moves the value 10 % of the way to a sine), so that float rounding differences
    between backends shrink instead of growing. Dependent reads each add the read before's red and green
    (times 8 px) to the next one's offset: a chain of fetches no texture unit can issue ahead. Loop bounds are
    constants: SkSL needs them."""
    step = "t = tex.eval(p + float2(float(k) * 5.0, float(k) * 3.0)" + (" + floor(t.rg * 8.0)" if dependent else "") + ");"
    fetch = (f"half4 t = half4(0);\n    for (int k = 0; k < {fetches}; k++) {{ {step} c += t; }}\n"
             f"    c /= {float(fetches)};" if fetches else "c = half4(0.5, 0.5, 0.5, 1);")
    return f"""uniform shader tex;
half4 main(float2 p) {{
    half4 c = half4(0);
    {fetch}
    float v = 0.5;
    for (int k = 0; k < {loops}; k++) {{ v = 0.9 * v + 0.1 * (0.5 + 0.5 * sin(p.x * 0.02 + p.y * 0.011 + float(k) * 0.37)); }}
    return half4(c.rgb * half(0.4 + 0.6 * v), 1);
}}
"""


# BT.601 limited range: Y 16..235, U and V 16..240 around 128.
VIDEO_SHADER = """uniform shader y_plane;
uniform shader u_plane;
uniform shader v_plane;
half4 main(float2 p) {
    float y = (y_plane.eval(p).r - 0.0627) * 1.164;
    float u = u_plane.eval(p * 0.5).r - 0.502;
    float v = v_plane.eval(p * 0.5).r - 0.502;
    return half4(half3(saturate(y + 1.596 * v), saturate(y - 0.392 * u - 0.813 * v), saturate(y + 2.017 * u)), 1);
}
"""


def video_planes(width: int, height: int, seed: int, frame: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One frame's Y (width x height), U and V (half each way) planes: smooth gradients that move with the
    frame, plus noise, so that no two frames are alike and no codec-like cache could reuse one."""
    rng = np.random.default_rng(seed * VIDEO_FRAMES + frame)
    ys, xs = np.indices((height, width))
    luma = 16 + (219 * ((xs + ys + frame * 37) % width) / width) + rng.integers(0, 24, (height, width))
    cw, ch = max(1, width // 2), max(1, height // 2)
    cys, cxs = np.indices((ch, cw))
    u = 128 + 48 * np.sin((cxs + frame * 11) / max(1, cw) * 6.283)
    v = 128 + 48 * np.cos((cys + frame * 7) / max(1, ch) * 6.283)
    return tuple(np.ascontiguousarray(np.clip(plane, 0, 255).astype(np.uint8)) for plane in (luma, u, v))  # type: ignore[return-value]


def _gray_image(plane: np.ndarray) -> skia.Image:
    return skia.Image.fromarray(plane, colorType=skia.kGray_8_ColorType)


# ---------------------------------------------------------------------------------------------- compiler

# An op compiler reads the op's keys and returns (build, values): `values` holds the op's numbers (some may be
# animations) and build(resolved values) returns the draw function. Static ops are built once.
Build = Callable[[dict[str, Any]], Draw]


def _leaf(build: Build, values: dict[str, Any], footprint: Callable[[dict[str, Any], FrameCounts], _Footprint],
          *, per_execution: bool = False, counts: frozenset[int] | None = None) -> Node:
    """A drawing op's node. `footprint(values, counts)` is what one execution asks for; it is computed once
    for an op without animation unless `per_execution` (text that changes with {frame} or {i}). An op whose
    only per-frame value is a count taken from the complexity is built once per count in `counts`."""
    if not _is_animated(values) and _is_dynamic(values):
        return _complexity_leaf(build, values, footprint, counts or frozenset())
    if not _is_dynamic(values):
        draw = build(values)

        def static_node(canvas: skia.Canvas, st: FrameState) -> None:
            st.draw_calls += 1
            draw(canvas, st)

        cached: list[_Footprint] = []

        def count_static(cs: FrameCounts) -> None:
            if per_execution:
                _add(cs, footprint(values, cs))
                return
            if not cached:
                cached.append(footprint(values, cs))
            _add(cs, cached[0])

        return _counted(static_node, count_static)

    def animated_node(canvas: skia.Canvas, st: FrameState) -> None:
        st.draw_calls += 1
        build(_resolve(values, st.frame, st.complexity))(canvas, st)

    def count_animated(cs: FrameCounts) -> None:
        _add(cs, footprint(_resolve(values, cs.frame, cs.complexity), cs))

    return _counted(animated_node, count_animated)


def _complexity_leaf(build: Build, values: dict[str, Any],
                     footprint: Callable[[dict[str, Any], FrameCounts], _Footprint], counts: frozenset[int]) -> Node:
    """A drawing op whose count is the frame's complexity and which is otherwise static: built here, before frame
    0, for every count of the job's list (a mesh's vertices, a batch's, a compiled shader), so that a measured
    frame at a new count draws what is ready instead of timing the building. Frame f draws the one for
    round(complexity[f]); the same count always draws the same thing."""
    draws = {n: build(_resolve(values, 0, n)) for n in sorted(counts)}
    footprints: dict[int, _Footprint] = {}

    def node(canvas: skia.Canvas, st: FrameState) -> None:
        st.draw_calls += 1
        n = complexity_round(st.complexity)
        draw = draws.get(n)
        if draw is None:  # a count the job's list does not hold (a caller rendering frames of its own choice)
            draw = draws[n] = build(_resolve(values, st.frame, n))
        draw(canvas, st)

    def count(cs: FrameCounts) -> None:
        n = complexity_round(cs.complexity)
        if n not in footprints:
            footprints[n] = footprint(_resolve(values, cs.frame, n), cs)
        _add(cs, footprints[n])

    return _counted(node, count)


def _rect_footprint(p: dict[str, Any], cs: FrameCounts) -> _Footprint:
    return _Footprint(_rect_box(p))


def _add(cs: FrameCounts, fp: _Footprint) -> None:
    """Count one execution of a drawing op: the pixels its bounds cover inside the clip; a backdrop layer is
    entered and left (save, clip, saveLayer, restore, restore), and its pixels allocated."""
    cs.alloc_bytes += fp.alloc_bytes
    if fp.bounds is None:
        return
    covered = _area(_intersect(fp.bounds, cs.clip)) if fp.covered is None else fp.covered
    cs.pixels_drawn += covered
    if fp.layer:
        cs.state_changes += 5
        cs.rt_switches += 2
        cs.alloc_bytes += 4 * covered


def _bounded_int(o: _OpReader, key: str) -> int:
    raw = o.get(key)
    low, high = INTEGER_RANGES[key]
    if isinstance(raw, bool) or not isinstance(raw, int) or not low <= raw <= high:
        raise DisplayListError(f"{o.where(key)}: {raw!r} is not a whole number from {low} to {high}")
    return raw


SAMPLINGS = {
    "nearest": skia.SamplingOptions(skia.FilterMode.kNearest),
    "linear": skia.SamplingOptions(skia.FilterMode.kLinear),
    "mipmap": skia.SamplingOptions(skia.FilterMode.kLinear, skia.MipmapMode.kLinear),
}


def _getter(value: float | Anim) -> Callable[[int], float]:
    if isinstance(value, Anim):
        return value
    return lambda f: value


@dataclass
class _Texture:
    """An image op's pixels, made before frame 0; `once` images are also uploaded then."""

    pixels: np.ndarray
    image: skia.Image | None  # the uploaded image (upload=once), None for every_frame
    nbytes: int
    counted: bool = False  # a once image's bytes count in the first frame that draws it


class _Compiler:
    def __init__(self, counts: frozenset[int] | None, upload_image: Callable[[skia.Image], skia.Image],
                 upload_compressed: CompressedUpload) -> None:
        self.counts = counts  # the counts the job's complexity list holds, rounded; None without a list
        self.upload_image = upload_image
        self.upload_compressed = upload_compressed
        self.tap_every: int | None = None  # a tap_target's tap_every: the runner's synthetic taps
        self.features: set[str] = set()
        self.issues: list[Issue] = []
        self._typeface: skia.Typeface | None = None
        self._cjk_typeface: skia.Typeface | None = None
        self._textures: dict[tuple[Any, ...], np.ndarray] = {}
        self._effects: dict[tuple[int, int, bool], skia.RuntimeEffect] = {}

    # -- structure

    def ops(self, raw: Any, path: str) -> list[Node]:
        if not isinstance(raw, list):
            raise DisplayListError(f"{path}: must be a list of ops, got {type(raw).__name__}")
        return [self.op(op, f"{path}[{n}]") for n, op in enumerate(raw)]

    def op(self, raw: Any, path: str) -> Node:
        if not isinstance(raw, dict) or not isinstance(raw.get("op"), str):
            raise DisplayListError(f"{path}: an op must be an object with a string key 'op'")
        name = raw["op"]
        compile_op: Callable[[_OpReader], Node] | None = getattr(self, f"_op_{name}", None) if name in FEATURES else None
        if compile_op is None:
            raise DisplayListError(f"{path}: unknown op {name!r} (known: {', '.join(sorted(FEATURES))})")
        self.features.add(name)
        reader = _OpReader(raw, path)
        node = compile_op(reader)
        reader.finish()
        return node

    @property
    def typeface(self) -> skia.Typeface:
        if self._typeface is None:
            found = _first_typeface(FONT_PATHS)
            if found is not None:
                self._typeface = found
                return found
            self._typeface = skia.Typeface.MakeDefault()
            self.issues.append(Issue("font_fallback", "DejaVu Sans not found (looked in "
                                     f"{', '.join(FONT_PATHS)}); text uses the default typeface"))
        return self._typeface

    @property
    def cjk_typeface(self) -> skia.Typeface:
        if self._cjk_typeface is None:
            override = os.environ.get(CJK_FONT_ENV)
            found = _first_typeface((override,) if override else CJK_FONT_PATHS)
            if found is not None:
                self._cjk_typeface = found
                return found
            where = f"{CJK_FONT_ENV}={override}" if override else ", ".join(CJK_FONT_PATHS)
            raise MissingFont(f"CJK font not found (looked in {where}): text with font 'cjk' needs WenQuanYi Zen "
                              f"Hei (Debian: apt-get install fonts-wqy-zenhei) or Noto Sans CJK (fonts-noto-cjk), "
                              f"or {CJK_FONT_ENV} set to a CJK font file")
        return self._cjk_typeface

    # -- drawing ops (each counts as one draw call per execution)

    def _op_rect(self, o: _OpReader) -> Node:
        values, paint = o.nums("x", "y", "w", "h"), _fill(o.color("color"))
        if o.get("blend", optional=True) is not None:
            paint.setBlendMode(SKIA_BLEND_MODES[o.choice("blend")])

        def build(p: dict[str, Any]) -> Draw:
            rect = _rect(p)
            return lambda canvas, st: canvas.drawRect(rect, paint)

        return _leaf(build, values, _rect_footprint)

    def _op_rrect(self, o: _OpReader) -> Node:
        values, paint = o.nums("x", "y", "w", "h", "radius"), _fill(o.color("color"))

        def build(p: dict[str, Any]) -> Draw:
            rrect = _rrect(p, p["radius"])
            return lambda canvas, st: canvas.drawRRect(rrect, paint)

        return _leaf(build, values, _rect_footprint)

    def _op_border(self, o: _OpReader) -> Node:
        values, color = o.nums("x", "y", "w", "h", "radius", "width"), o.color("color")

        def build(p: dict[str, Any]) -> Draw:
            rrect = _rrect(p, p["radius"])
            paint = skia.Paint(Color=color, AntiAlias=True, Style=skia.Paint.kStroke_Style, StrokeWidth=p["width"])
            return lambda canvas, st: canvas.drawRRect(rrect, paint)

        # The stroke is centred on the edge: half its width lies outside the rect.
        return _leaf(build, values, lambda p, cs: _Footprint(_rect_box(p, abs(p["width"]) / 2)))

    def _op_linear_gradient(self, o: _OpReader) -> Node:
        values: dict[str, Any] = o.nums("x", "y", "w", "h", "x0", "y0", "x1", "y1")
        values["stops"], colors = _gradient_colors(o)

        def build(p: dict[str, Any]) -> Draw:
            rect = _rect(p)
            shader = skia.GradientShader.MakeLinear(
                [skia.Point(p["x0"], p["y0"]), skia.Point(p["x1"], p["y1"])], colors, p["stops"])
            paint = skia.Paint(Shader=shader, AntiAlias=True)
            return lambda canvas, st: canvas.drawRect(rect, paint)

        return _leaf(build, values, _rect_footprint)

    def _op_radial_gradient(self, o: _OpReader) -> Node:
        values: dict[str, Any] = o.nums("x", "y", "w", "h", "cx", "cy", "r")
        values["stops"], colors = _gradient_colors(o)

        def build(p: dict[str, Any]) -> Draw:
            rect = _rect(p)
            shader = skia.GradientShader.MakeRadial(skia.Point(p["cx"], p["cy"]), p["r"], colors, p["stops"])
            paint = skia.Paint(Shader=shader, AntiAlias=True)
            return lambda canvas, st: canvas.drawRect(rect, paint)

        return _leaf(build, values, _rect_footprint)

    def _op_shadow(self, o: _OpReader) -> Node:
        values, color = o.nums("x", "y", "w", "h", "radius", "blur", "dx", "dy"), o.color("color")

        def build(p: dict[str, Any]) -> Draw:
            rrect = _rrect(p, p["radius"])
            rrect.offset(p["dx"], p["dy"])
            paint = _fill(color)
            if p["blur"] > 0:  # CSS blur radius is twice the Gaussian sigma; Skia rejects sigma 0
                paint.setMaskFilter(skia.MaskFilter.MakeBlur(skia.kNormal_BlurStyle, p["blur"] / 2.0))
            return lambda canvas, st: canvas.drawRRect(rrect, paint)

        def footprint(p: dict[str, Any], cs: FrameCounts) -> _Footprint:
            # A Gaussian of sigma blur / 2 reaches visibly about 3 sigma past the shape.
            x, y = p["x"] + p["dx"], p["y"] + p["dy"]
            return _Footprint(_box(x, y, x + p["w"], y + p["h"], 1.5 * max(0.0, p["blur"])))

        return _leaf(build, values, footprint)

    def _op_backdrop_blur(self, o: _OpReader) -> Node:
        values = o.nums("x", "y", "w", "h", "blur")

        def build(p: dict[str, Any]) -> Draw:
            rect = _rect(p)
            if p["blur"] <= 0:
                return lambda canvas, st: None
            sigma = p["blur"] / 2.0
            # The rec keeps raw pointers to its filter and paint: hold them in this closure (skia-python
            # crashes if they are collected first).
            blur, paint = skia.ImageFilters.Blur(sigma, sigma), skia.Paint()
            rec = skia.Canvas.SaveLayerRec(rect, paint, blur, 0)

            def draw(canvas: skia.Canvas, st: FrameState, _keep: tuple[Any, ...] = (blur, paint)) -> None:
                canvas.save()
                canvas.clipRect(rect, skia.ClipOp.kIntersect, True)
                canvas.saveLayer(rec)  # the backdrop filter blurs what is under the layer into it
                canvas.restore()
                canvas.restore()

            return draw

        def footprint(p: dict[str, Any], cs: FrameCounts) -> _Footprint:
            return _Footprint(_rect_box(p), layer=True) if p["blur"] > 0 else NOTHING

        return _leaf(build, values, footprint)

    def _op_text(self, o: _OpReader) -> Node:
        values: dict[str, Any] = o.nums("x", "y", "size")
        color, text = o.color("color"), o.get("text")
        if not isinstance(text, str):
            raise DisplayListError(f"{o.where('text')}: {text!r} is not a string")
        values["max_width"] = o.num("max_width", optional=True)
        values["line_height"] = o.num("line_height", optional=True)
        cjk = o.get("font", optional=True) is not None and o.choice("font") == "cjk"
        typeface, paint = self.cjk_typeface if cjk else self.typeface, _fill(color)
        templated = "{frame}" in text or "{i}" in text

        def build(p: dict[str, Any]) -> Draw:
            font = skia.Font(typeface, p["size"])
            # Fixed rasterisation settings: no hinting and no LCD subpixel text, which depend on the device.
            font.setEdging(skia.Font.Edging.kAntiAlias)
            font.setHinting(skia.FontHinting.kNone)
            font.setSubpixel(True)
            x, y, max_width = p["x"], p["y"], p["max_width"]
            step = p["line_height"] if p["line_height"] is not None else 1.2 * p["size"]
            if not templated:
                blobs = [(skia.TextBlob.MakeFromString(line, font), y + n * step)
                         for n, line in enumerate(_wrap(text, font, max_width)) if line]

                def draw_blobs(canvas: skia.Canvas, st: FrameState) -> None:
                    for blob, line_y in blobs:
                        canvas.drawTextBlob(blob, x, line_y, paint)

                return draw_blobs

            def draw_templated(canvas: skia.Canvas, st: FrameState) -> None:
                for n, line in enumerate(_wrap(_substitute(text, st), font, max_width)):
                    if line:
                        canvas.drawString(line, x, y + n * step, font, paint)

            return draw_templated

        def footprint(p: dict[str, Any], cs: FrameCounts) -> _Footprint:
            # The lines' advance widths from the baseline's ascent to the last line's descent: a box that
            # holds the glyphs (their exact coverage is not counted).
            font = skia.Font(typeface, p["size"])
            step = p["line_height"] if p["line_height"] is not None else 1.2 * p["size"]
            content = _substitute(text, cs) if templated else text
            lines = _wrap(content, font, p["max_width"])
            widths = [font.measureText(line) for line in lines if line]
            if not widths:
                return NOTHING
            return _Footprint(_box(p["x"], p["y"] - p["size"], p["x"] + max(widths),
                                   p["y"] + (len(lines) - 1) * step + 0.3 * p["size"]))

        return _leaf(build, values, footprint, per_execution=templated)

    def _op_image(self, o: _OpReader) -> Node:
        values = o.nums("x", "y", "w", "h")
        tex_w = _positive_int(o.get("tex_w"), o.where("tex_w"))
        tex_h = _positive_int(o.get("tex_h"), o.where("tex_h"))
        pattern = o.choice("pattern")
        seed = o.get("seed")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise DisplayListError(f"{o.where('seed')}: {seed!r} is not an integer")
        upload = o.choice("upload")
        alpha = "opaque" if o.get("alpha", optional=True) is None else o.choice("alpha")
        sampling = SAMPLINGS[o.choice("filter")]
        key = (pattern, tex_w, tex_h, seed if pattern == "noise" else None, alpha)
        pixels = self._textures.get(key)
        if pixels is None:
            pixels = checker_pixels(tex_w, tex_h) if pattern == "checker" else noise_pixels(tex_w, tex_h, seed)
            if alpha != "opaque":
                pixels = translucent(pixels, alpha)
            self._textures[key] = pixels
        tex = _Texture(pixels, self.upload_image(_make_image(pixels, alpha)) if upload == "once" else None,
                       pixels.nbytes)
        # decode: the pixels as a PNG, decoded again in every frame (an image viewer, a thumbnail grid).
        encoded = _make_image(pixels, alpha).encodeToData(skia.kPNG, 100) if upload == "decode" else None

        def build(p: dict[str, Any]) -> Draw:
            dst = _rect(p)
            if tex.image is not None:
                image = tex.image

                def draw_once(canvas: skia.Canvas, st: FrameState) -> None:
                    if not tex.counted:
                        tex.counted = True
                        st.upload_bytes += tex.nbytes
                    canvas.drawImageRect(image, dst, sampling)

                return draw_once

            if encoded is not None:
                def draw_decoded(canvas: skia.Canvas, st: FrameState) -> None:
                    # Decoded now, into a new image (a new id: no cache holds it), then uploaded by the draw.
                    decoded = skia.Image.MakeFromEncoded(encoded).makeRasterImage()
                    st.upload_bytes += tex.nbytes
                    canvas.drawImageRect(decoded, dst, sampling)

                return draw_decoded

            def draw_every_frame(canvas: skia.Canvas, st: FrameState) -> None:
                # A fresh image (a copy of the pixels, with a new id) defeats every texture cache: a GPU
                # backend must upload it again (and build its mip levels), the raster one pays the copy.
                st.upload_bytes += tex.nbytes
                canvas.drawImageRect(_make_image(tex.pixels, alpha), dst, sampling)

            return draw_every_frame

        # An every_frame or decoded image is a fresh copy of its pixels in every draw.
        copied = 0 if upload == "once" else tex.nbytes
        return _leaf(build, values, lambda p, cs: _Footprint(_rect_box(p), alloc_bytes=copied))

    def _op_etc2_image(self, o: _OpReader) -> Node:
        """The image op's texture as ETC2 RGB8 data (runner/etc1.py), uploaded compressed by the backend
        (`upload_compressed`) once before frame 0 or again in every frame; what is drawn is the decoded texels."""
        values = o.nums("x", "y", "w", "h")
        tex_w = _positive_int(o.get("tex_w"), o.where("tex_w"))
        tex_h = _positive_int(o.get("tex_h"), o.where("tex_h"))
        if tex_w % 4 or tex_h % 4:
            raise DisplayListError(f"{o.where('tex_w')}: an etc2_image's texture is whole 4x4 blocks: tex_w and "
                                   f"tex_h must be multiples of 4, got {tex_w}x{tex_h}")
        pattern = o.choice("pattern")
        seed = o.get("seed")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise DisplayListError(f"{o.where('seed')}: {seed!r} is not an integer")
        upload = o.choice("upload")
        if upload == "decode":
            raise DisplayListError(f"{o.where('upload')}: an etc2_image is uploaded once or every_frame, not decoded")
        filter_name = o.choice("filter")
        if filter_name == "mipmap":
            raise DisplayListError(f"{o.where('filter')}: an etc2_image has no mip levels: nearest or linear")
        pixels = checker_pixels(tex_w, tex_h) if pattern == "checker" else noise_pixels(tex_w, tex_h, seed)
        data, _ = etc1.encode(np.ascontiguousarray(pixels[:, :, :3]))
        nbytes = len(data)
        sampling = SAMPLINGS[filter_name]
        uploaded = self.upload_compressed(data, tex_w, tex_h) if upload == "once" else None
        counted = [False]

        def build(p: dict[str, Any]) -> Draw:
            dst = _rect(p)
            if uploaded is not None:
                def draw_once(canvas: skia.Canvas, st: FrameState) -> None:
                    if not counted[0]:
                        counted[0] = True
                        st.upload_bytes += nbytes
                    canvas.drawImageRect(uploaded, dst, sampling)

                return draw_once

            def draw_every_frame(canvas: skia.Canvas, st: FrameState) -> None:
                # A new texture from the compressed data in every frame: the upload is the frame's work.
                st.upload_bytes += nbytes
                canvas.drawImageRect(self.upload_compressed(data, tex_w, tex_h), dst, sampling)

            return draw_every_frame

        return _leaf(build, values, _rect_footprint)

    def _op_tap_target(self, o: _OpReader) -> Node:
        """A rect that shows the frame's input state: `active_color` when the frame reflects a tap."""
        values = o.nums("x", "y", "w", "h")
        idle, active = _fill(o.color("color")), _fill(o.color("active_color"))
        every = _positive_int(o.get("tap_every"), o.where("tap_every"))
        if every < 2:
            raise DisplayListError(f"{o.where('tap_every')}: a tap every frame leaves no frame without one: 2 or more")
        if self.tap_every not in (None, every):
            raise DisplayListError(f"{o.where('tap_every')}: {every}, but another tap_target of the scene has "
                                   f"{self.tap_every}: the runner makes one series of taps")
        self.tap_every = every

        def build(p: dict[str, Any]) -> Draw:
            rect = _rect(p)
            return lambda canvas, st: canvas.drawRect(rect, active if st.tapped else idle)

        return _leaf(build, values, _rect_footprint)

    def _op_mesh(self, o: _OpReader) -> Node:
        values: dict[str, Any] = o.nums("x", "y", "w", "h")
        columns = _positive_int(o.get("columns"), o.where("columns"))
        values["rows"] = o.per_frame_count("rows", self.counts) or _positive_int(o.get("rows"), o.where("rows"))
        if isinstance(values["rows"], int) and columns * values["rows"] > MAX_MESH_CELLS:
            raise DisplayListError(f"{o.where('rows')}: {columns} x {values['rows']} cells is more than {MAX_MESH_CELLS}")
        colors = (o.color("color"), o.color("alt_color"))
        paint = skia.Paint(AntiAlias=False)

        def build(p: dict[str, Any]) -> Draw:
            if p["rows"] == 0:  # complexity 0: no cells
                return lambda canvas, st: None
            vertices = _mesh_vertices(p["x"], p["y"], p["w"], p["h"], columns, p["rows"], colors)
            # kDst: the vertex colours alone (the paint has no shader to blend them with).
            return lambda canvas, st: canvas.drawVertices(vertices, paint, skia.BlendMode.kDst)

        return _leaf(build, values, _rect_footprint, counts=self.counts)

    def _op_rect_batch(self, o: _OpReader) -> Node:
        per_frame = o.per_frame_count("count", self.counts)
        count = per_frame or _positive_int(o.get("count"), o.where("count"))
        columns = _positive_int(o.get("columns"), o.where("columns"))
        if isinstance(count, int) and count > MAX_MESH_CELLS:
            raise DisplayListError(f"{o.where('count')}: {count} rects is more than {MAX_MESH_CELLS}")
        values: dict[str, Any] = {**o.nums("dx", "dy", "x", "y", "w", "h"), "count": count}
        color = o.color("color")
        paint = skia.Paint(AntiAlias=False)

        def layout(p: dict[str, Any]) -> list[Bounds]:
            return [_box(p["x"] + p["dx"] * (i % columns), p["y"] + p["dy"] * (i // columns),
                         p["x"] + p["dx"] * (i % columns) + p["w"], p["y"] + p["dy"] * (i // columns) + p["h"])
                    for i in range(p["count"])]

        def build(p: dict[str, Any]) -> Draw:
            if p["count"] == 0:  # complexity 0: no rects
                return lambda canvas, st: None
            vertices = _batch_vertices(layout(p), color)
            return lambda canvas, st: canvas.drawVertices(vertices, paint, skia.BlendMode.kDst)

        def footprint(p: dict[str, Any], cs: FrameCounts) -> _Footprint:
            # One draw whose pixels are its rects'; the footprint's box is their bounds, area counted exactly.
            rects = layout(p)
            if not rects:
                return NOTHING
            covered = sum(_area(_intersect(r, cs.clip)) for r in rects)
            box = _box(min(r[0] for r in rects), min(r[1] for r in rects), max(r[2] for r in rects),
                       max(r[3] for r in rects))
            return _Footprint(box, covered=covered)

        return _leaf(build, values, footprint, counts=self.counts)

    def _op_shader(self, o: _OpReader) -> Node:
        values: dict[str, Any] = o.nums("x", "y", "w", "h")
        # A loop count taken from the complexity compiles one effect per count, each with the constant loop bound
        # of a fixed-load shader of that count (the same source, so the same work per pixel); all of them are
        # compiled before frame 0 (_complexity_leaf), never in a measured frame. docs/display-list.md says why
        # not a uniform loop count.
        values["loops"] = o.per_frame_count("loops", self.counts) or _bounded_int(o, "loops")
        fetches = _bounded_int(o, "fetches")
        dependent = o.get("reads", optional=True) is not None and o.choice("reads") == "dependent"
        noise = self.upload_image(_make_image(noise_pixels(64, 64, 0)))
        texture = noise.makeShader(skia.TileMode.kRepeat, skia.TileMode.kRepeat, SAMPLINGS["nearest"])

        def build(p: dict[str, Any]) -> Draw:
            rect = _rect(p)
            builder = skia.RuntimeShaderBuilder(self._effect(o, p["loops"], fetches, dependent))
            builder.setChild("tex", texture)
            paint = skia.Paint(Shader=builder.makeShader())

            # The shader keeps raw pointers to its child: hold the builder and the texture in this closure.
            def draw(canvas: skia.Canvas, st: FrameState, _keep: tuple[Any, ...] = (builder, noise, texture)) -> None:
                canvas.drawRect(rect, paint)

            return draw

        return _leaf(build, values, _rect_footprint, counts=self.counts)

    def _effect(self, o: _OpReader, loops: int, fetches: int, dependent: bool) -> skia.RuntimeEffect:
        """The compiled runtime effect of a shader op's source, one per (loops, fetches, reads)."""
        key = (loops, fetches, dependent)
        effect = self._effects.get(key)
        if effect is None:
            effect = skia.RuntimeEffect.MakeForShader(shader_source(loops, fetches, dependent))
            if effect is None:
                raise DisplayListError(f"{o.path}: the runtime effect of {loops} loops and {fetches} fetches did not "
                                       "compile")
            self._effects[key] = effect
        return effect

    def _op_video(self, o: _OpReader) -> Node:
        values = o.nums("x", "y", "w", "h")
        tex_w = _positive_int(o.get("tex_w"), o.where("tex_w"))
        tex_h = _positive_int(o.get("tex_h"), o.where("tex_h"))
        seed = _bounded_int(o, "seed")
        effect = skia.RuntimeEffect.MakeForShader(VIDEO_SHADER)
        frames = [video_planes(tex_w, tex_h, seed, f) for f in range(VIDEO_FRAMES)]
        nbytes = sum(plane.nbytes for plane in frames[0])
        sampling = SAMPLINGS["linear"]

        def build(p: dict[str, Any]) -> Draw:
            rect = _rect(p)
            # The planes are scaled into the rect by the shader's local matrix: one texel of Y per pixel at 1:1.
            matrix = skia.Matrix.Translate(p["x"], p["y"]).preScale(p["w"] / tex_w, p["h"] / tex_h)

            def draw(canvas: skia.Canvas, st: FrameState) -> None:
                # Fresh images of this frame's planes: uploaded again, as a video decoder's output is.
                builder = skia.RuntimeShaderBuilder(effect)
                for name, plane in zip(("y_plane", "u_plane", "v_plane"), frames[st.frame % VIDEO_FRAMES]):
                    builder.setChild(name, _gray_image(plane).makeShader(
                        skia.TileMode.kClamp, skia.TileMode.kClamp, sampling))
                st.upload_bytes += nbytes
                canvas.drawRect(rect, skia.Paint(Shader=builder.makeShader(matrix)))

            return draw

        return _leaf(build, values, lambda p, cs: _Footprint(_rect_box(p), alloc_bytes=nbytes))

    def _op_path(self, o: _OpReader) -> Node:
        values: dict[str, Any] = {"points": o.points("points")}
        closed = o.get("closed")
        if not isinstance(closed, bool):
            raise DisplayListError(f"{o.where('closed')}: {closed!r} is not true or false")
        color = o.color("color")
        values["stroke_width"] = o.num("stroke_width", optional=True)

        def build(p: dict[str, Any]) -> Draw:
            path = _path(p["points"], closed)
            paint = _fill(color)
            if p["stroke_width"] is not None:
                paint.setStyle(skia.Paint.kStroke_Style)
                paint.setStrokeWidth(p["stroke_width"])
            return lambda canvas, st: canvas.drawPath(path, paint)

        def footprint(p: dict[str, Any], cs: FrameCounts) -> _Footprint:
            stroke = p["stroke_width"]
            return _Footprint(_points_box(p["points"], 0.0 if stroke is None else abs(stroke) / 2))

        return _leaf(build, values, footprint)

    # -- structural ops (not draw calls themselves)

    def _op_clip(self, o: _OpReader) -> Node:
        shape = o.get("shape")
        where = o.where("shape")
        kinds = ", ".join(CLIP_SHAPES)
        if not isinstance(shape, dict):
            raise DisplayListError(f"{where}: must be an object with 'kind' {kinds}")
        kind = shape.get("kind")
        if not isinstance(kind, str) or kind not in CLIP_SHAPES:
            raise DisplayListError(f"{where} 'kind': {kind!r} is not one of {kinds}")
        keys = CLIP_SHAPES[kind]
        for key in keys:
            if key not in shape:
                raise DisplayListError(f"{where} key {key!r}: missing from this {kind} clip shape")
        extra = sorted(set(shape) - set(keys) - {"kind"})
        if extra:
            raise DisplayListError(f"{where} key {extra[0]!r}: unknown key for a {kind} clip shape")
        if kind == "path":
            values: dict[str, Any] = {"points": o.points("shape", shape["points"], f"{where} key 'points'")}
        else:
            values = {k: _number(shape[k], f"{where} key {k!r}") for k in keys}
        children = self.ops(o.get("ops"), f"{o.path}.ops")

        def build(p: dict[str, Any]) -> Callable[[skia.Canvas], None]:
            if kind == "rect":
                rect = _rect(p)
                return lambda canvas: canvas.clipRect(rect, skia.ClipOp.kIntersect, True)
            if kind == "rrect":
                rrect = _rrect(p, p["radius"])
                return lambda canvas: canvas.clipRRect(rrect, skia.ClipOp.kIntersect, True)
            path = _path(p["points"], True)
            return lambda canvas: canvas.clipPath(path, skia.ClipOp.kIntersect, True)

        static_clip = None if _is_dynamic(values) else build(values)

        def node(canvas: skia.Canvas, st: FrameState) -> None:
            canvas.save()
            (static_clip or build(_resolve(values, st.frame)))(canvas)
            for child in children:
                child(canvas, st)
            canvas.restore()

        def box(p: dict[str, Any]) -> Bounds:
            return _points_box(p["points"]) if kind == "path" else _rect_box(p)

        static_box = None if _is_dynamic(values) else box(values)
        count_children = _count_children(children)

        def count(cs: FrameCounts) -> None:
            cs.state_changes += 3  # save, clip, restore
            outer = cs.clip
            cs.clip = _intersect(outer, static_box or box(_resolve(values, cs.frame)))
            count_children(cs)
            cs.clip = outer

        return _counted(node, count)

    def _op_layer(self, o: _OpReader) -> Node:
        opacity = _getter(o.num("opacity"))  # type: ignore[arg-type]
        children = self.ops(o.get("ops"), f"{o.path}.ops")

        def node(canvas: skia.Canvas, st: FrameState) -> None:
            alpha = round(255 * min(1.0, max(0.0, opacity(st.frame))))
            canvas.saveLayerAlpha(None, alpha)
            for child in children:
                child(canvas, st)
            canvas.restore()

        count_children = _count_children(children)

        def count(cs: FrameCounts) -> None:
            # An unbounded layer is as large as the clip: allocated, drawn into, then composited back.
            covered = _area(cs.clip)
            cs.state_changes += 2  # saveLayer, restore
            cs.rt_switches += 2  # into the layer and back
            cs.alloc_bytes += 4 * covered
            count_children(cs)
            cs.pixels_drawn += covered

        return _counted(node, count)

    def _op_group(self, o: _OpReader) -> Node:
        dx, dy = _getter(o.num("dx")), _getter(o.num("dy"))  # type: ignore[arg-type]
        children = self.ops(o.get("ops"), f"{o.path}.ops")

        def node(canvas: skia.Canvas, st: FrameState) -> None:
            canvas.save()
            canvas.translate(dx(st.frame), dy(st.frame))
            for child in children:
                child(canvas, st)
            canvas.restore()

        count_children = _count_children(children)

        def count(cs: FrameCounts) -> None:
            cs.state_changes += 3  # save, translate, restore
            outer = cs.clip
            cs.clip = _shifted(outer, dx(cs.frame), dy(cs.frame))
            count_children(cs)
            cs.clip = outer

        return _counted(node, count)

    def _op_repeat(self, o: _OpReader) -> Node:
        raw_count = o.get("count")
        if o.per_frame_count("count", self.counts) is not None:

            def count(st: FrameState | FrameCounts) -> int:
                return complexity_round(st.complexity)  # the job carries one value per frame
        else:
            count_value = _getter(_number(raw_count, o.where("count")))

            def count(st: FrameState | FrameCounts) -> int:
                return max(0, round(count_value(st.frame)))
        dx, dy = _getter(o.num("dx")), _getter(o.num("dy"))  # type: ignore[arg-type]
        raw_columns = o.get("columns", optional=True)
        columns = None if raw_columns is None else _positive_int(raw_columns, o.where("columns"))
        children = self.ops(o.get("ops"), f"{o.path}.ops")

        def node(canvas: skia.Canvas, st: FrameState) -> None:
            outer_i, step_x, step_y = st.i, dx(st.frame), dy(st.frame)
            for i in range(count(st)):
                st.i = i
                canvas.save()
                if columns is None:
                    canvas.translate(step_x * i, step_y * i)
                else:
                    canvas.translate(step_x * (i % columns), step_y * (i // columns))
                for child in children:
                    child(canvas, st)
                canvas.restore()
            st.i = outer_i

        count_children = _count_children(children)

        def count_repetitions(cs: FrameCounts) -> None:
            outer_i, outer_clip, step_x, step_y = cs.i, cs.clip, dx(cs.frame), dy(cs.frame)
            for i in range(count(cs)):
                cs.i = i
                cs.state_changes += 3  # save, translate, restore
                if columns is None:
                    cs.clip = _shifted(outer_clip, step_x * i, step_y * i)
                else:
                    cs.clip = _shifted(outer_clip, step_x * (i % columns), step_y * (i // columns))
                count_children(cs)
            cs.i, cs.clip = outer_i, outer_clip

        return _counted(node, count_repetitions)


@dataclass
class Program:
    """A compiled scene: render(canvas, frame) draws frame `frame` and returns its counters;
    count(frame, ...) adds up what that frame asks of the rasteriser without drawing it."""

    nodes: list[Node]
    features: frozenset[str]  # op names used anywhere in the list
    issues: list[Issue] = field(default_factory=list)  # found while compiling (font fallback)
    # False when every frame draws the same thing (no animation, no complexity, no {frame} text): its
    # counts are taken once.
    dynamic: bool = True
    # Frames between synthetic taps when the scene has a tap_target (runner/input_proxy.py), else None.
    tap_every: int | None = None
    _state: FrameState = field(default_factory=FrameState)
    _static_counts: dict[str, int] | None = None

    def render(self, canvas: skia.Canvas, frame: int, complexity: float | None = None,
               tapped: bool = False) -> FrameState:
        """`tapped`: the frame is the first to start after a synthetic tap, and reflects it."""
        st = self._state
        st.frame, st.complexity, st.i, st.draw_calls, st.upload_bytes = frame, complexity, 0, 0, 0
        st.tapped = tapped
        canvas.clear(WHITE)
        for node in self.nodes:
            node(canvas, st)
        return st

    def count(self, frame: int, complexity: float | None, width: int, height: int) -> dict[str, int]:
        """The counters of frame `frame` on a width x height surface (FrameCounts.columns): state changes,
        render-target switches, pixels drawn (each draw's bounds inside its clip and the surface: the
        overdraw estimate) and pixel bytes allocated."""
        if self._static_counts is not None:
            return self._static_counts
        cs = FrameCounts(frame=frame, complexity=complexity, clip=(0.0, 0.0, float(width), float(height)))
        for node in self.nodes:
            _count_of(node)(cs)
        columns = cs.columns()
        if not self.dynamic:
            self._static_counts = columns
        return columns


def _changes_per_frame(ops: Any) -> bool:
    """Whether frames of this display list can differ: an animation, a complexity count or {frame} text."""
    if isinstance(ops, dict):
        if "anim" in ops or counts_complexity(ops):
            return True
        return any(_changes_per_frame(v) for v in ops.values())
    if isinstance(ops, list):
        return any(_changes_per_frame(v) for v in ops)
    return isinstance(ops, str) and "{frame}" in ops


def decode_compressed(data: bytes, width: int, height: int) -> skia.Image:
    """ETC2 RGB8 data as a raster image, decoded by Skia on the CPU: how a backend without compressed textures
    draws an etc2_image (the raster backend, for references; it does not list the format in its probe)."""
    image = skia.Image.MakeRasterFromCompressed(skia.Data.MakeWithCopy(data), width, height,
                                                skia.Image.CompressionType.kETC2_RGB8_UNORM)
    if image is None:
        raise DisplayListError(f"Skia could not decode {width}x{height} ETC2 RGB8 data of {len(data)} bytes")
    return image


def compile_scene(ops: Any, *, complexity: Iterable[float] | None = None,
                  upload_image: Callable[[skia.Image], skia.Image] = lambda image: image,
                  upload_compressed: CompressedUpload = decode_compressed) -> Program:
    """Validate `ops` (a scene's display list) and precompute it; raise DisplayListError naming the op path.
    `complexity` is the job's per-frame complexity list (None: the job has none): an op counting it is built
    for each count it holds."""
    counts = None if complexity is None else frozenset(complexity_round(c) for c in complexity)
    compiler = _Compiler(counts, upload_image, upload_compressed)
    nodes = compiler.ops(ops, "ops")
    return Program(nodes, frozenset(compiler.features), compiler.issues, dynamic=_changes_per_frame(ops),
                   tap_every=compiler.tap_every)
