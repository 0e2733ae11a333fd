"""Golden tolerances: parse a scene's per-backend tolerance mapping into one frozen `Tolerance`.

A scene writes, per backend, only what differs from the backend's defaults:

    tolerance:
      gles2: {max_delta: 3, max_pixels: "0.2%", cross_backend: {flip_mean: 0.03}}

Every metric is always computed and recorded; a bound *gates* (can fail the test) only when it is set,
or exactly the bounds listed under `gate` when that key is given. Errors are `ToleranceError` (a
ValueError) whose `key` is the dotted path of the bad key, so the caller can wrap it in a SceneError.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from ..errors import ZbenchError
from ..json_types import is_int, is_number

SOFTWARE = "software"
# The comparisons with the reference software set beside a device's own golden: a GPU backend's capture
# (cross_backend), and the software capture of one CPU architecture against the reference architecture's
# golden (cross_arch); docs/goldens.md.
CrossKind = Literal["cross_backend", "cross_arch"]
CROSS_BACKEND: Final = "cross_backend"
CROSS_ARCH: Final = "cross_arch"

# Gate names are the keys that set a bound.
GATES: tuple[str, ...] = ("exact", "max_pixels", "fuzzy", "buckets", "edge_mask", "flip_mean", "flip_max", "ssim_min")
KEYS: tuple[str, ...] = (
    "exact", "max_delta", "max_pixels", "fuzzy", "buckets", "border", "edge_mask",
    "flip_mean", "flip_max", "ssim_min", "gate",
)
EDGE_KEYS: tuple[str, ...] = ("threshold", "dilate", "on", "max_pixels")
EDGE_SOURCES: tuple[str, ...] = ("both", "expected")
FUZZY_KEYS: tuple[str, ...] = ("max_difference", "total_pixels")

# The software raster is deterministic: its goldens are byte-exact. So are the CPU rasterisers of the engines
# built on the kit: Cairo's (runners/cairo: pixman, one golden set per architecture as device class) and Qt 6's
# raster engine (backend `raster`, runners/qt), where a one-level change of a colour must fail (docs/goldens.md,
# "Cairo", "Qt 6"). Every other backend is a GPU whose drivers round coverage and colour differently by a level
# or two (docs/methodology.md §7). Budgets are pixel counts, not fractions, so that a missing glyph (~50-100
# pixels) fails on a large scene too.
RASTER = "raster"
DEFAULTS: dict[str, dict[str, Any]] = {
    SOFTWARE: {"exact": True},
    "cairo": {"exact": True},
    RASTER: {"exact": True},
    "gpu": {"max_delta": 2, "max_pixels": 16},
}
# A GPU capture against the software golden: real rasteriser differences sit on anti-aliased edges and
# glyphs. Measured on an 800x480 UI-like scene, Mesa llvmpipe GLES2 vs Skia raster: 656 pixels over delta
# 8, all of them on edges (0.17% of the area), none elsewhere; hence edges get their own budget.
CROSS_DEFAULTS: dict[str, Any] = {
    "max_delta": 8,
    "max_pixels": 32,
    "edge_mask": {"threshold": 64, "dilate": 1, "on": "both", "max_pixels": "0.5%"},
}


# A software capture of another CPU architecture against the reference (x86_64) golden. Measured with the
# reference runner on aarch64 (qemu-user, skia-python 144.1) on the 47 captured frames of scenes/: 17
# identical; elsewhere NEON and SSE round a blend's divide-by-255 apart by one level, on up to 99% of a
# translucent scene, and glyphs, borders and filtered textures by at most 2; only anti-aliased rounded edges
# go further (up to 9 levels on 52 pixels of clip.rrect, every one of them on an edge). Hence a tight bound
# everywhere and a small budget of its own on edges; docs/goldens.md has the figures per scene.
CROSS_ARCH_DEFAULTS: dict[str, Any] = {
    "max_delta": 2,
    "max_pixels": 32,
    "edge_mask": {"threshold": 64, "dilate": 1, "on": "both", "max_pixels": "0.1%"},
}


class ToleranceError(ZbenchError, ValueError):
    """A bad tolerance key or value. `key` is the dotted path, e.g. 'gles2.edge_mask.threshold'."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"tolerance key {key!r}: {message}")
        self.key = key


@dataclass(frozen=True)
class PixelBudget:
    """A number of pixels, given as a count or as a fraction of the compared area ('0.1%')."""

    count: int | None = None
    fraction: float | None = None

    def resolve(self, area: int) -> int:
        if self.count is not None:
            return self.count
        assert self.fraction is not None
        return int(math.floor(self.fraction * area + 1e-9))

    def describe(self) -> str:
        return str(self.count) if self.count is not None else f"{self.fraction * 100:g}%"  # type: ignore[operator]


@dataclass(frozen=True)
class EdgeMask:
    threshold: float = 64.0  # Sobel gradient magnitude on 0..255 luminance
    dilate: int = 1  # pixels next to an edge count as edge
    on: str = "both"  # mask a pixel only if it is near an edge in both images ('both') or in the expected one
    max_pixels: PixelBudget | None = None  # None: differences on edges are ignored; else their own budget


@dataclass(frozen=True)
class Fuzzy:
    """WPT-style two-axis fuzz: the largest channel delta and the number of differing pixels must each lie
    in an inclusive range (a lower bound above 0 asserts that the images do differ)."""

    max_difference: tuple[int, int]
    total_pixels: tuple[int, int]


@dataclass(frozen=True)
class Tolerance:
    exact: bool = False
    max_delta: int = 0
    max_pixels: PixelBudget | None = None
    fuzzy: Fuzzy | None = None
    buckets: tuple[tuple[int, PixelBudget], ...] | None = None
    border: int = 0
    edge_mask: EdgeMask | None = None
    flip_mean: float | None = None
    flip_max: float | None = None
    ssim_min: float | None = None
    gate: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe and re-parseable: what was in force, for the defect record."""
        def budget(b: PixelBudget | None) -> Any:
            return None if b is None else (b.count if b.count is not None else b.describe())

        return {
            "exact": self.exact,
            "max_delta": self.max_delta,
            "max_pixels": budget(self.max_pixels),
            "fuzzy": None if self.fuzzy is None else {
                "max_difference": list(self.fuzzy.max_difference),
                "total_pixels": list(self.fuzzy.total_pixels),
            },
            "buckets": None if self.buckets is None else [[d, budget(b)] for d, b in self.buckets],
            "border": self.border,
            "edge_mask": None if self.edge_mask is None else {
                "threshold": self.edge_mask.threshold,
                "dilate": self.edge_mask.dilate,
                "on": self.edge_mask.on,
                "max_pixels": budget(self.edge_mask.max_pixels),
            },
            "flip_mean": self.flip_mean,
            "flip_max": self.flip_max,
            "ssim_min": self.ssim_min,
            "gate": list(self.gate),
        }


EXACT = Tolerance(exact=True, gate=("exact",))

# ------------------------------------------------------------------------------------------- parsing

_BACKEND_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_PERCENT_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*%\s*$")
_WPT_RE = re.compile(r"^\s*(?:maxDifference\s*=\s*)?(\d+)(?:\s*-\s*(\d+))?\s*;\s*(?:totalPixels\s*=\s*)?(\d+)(?:\s*-\s*(\d+))?\s*$")


def _is_finite(value: Any) -> bool:
    return is_number(value) and math.isfinite(value)


def _channel(value: Any, key: str) -> int:
    if not is_int(value) or not 0 <= value <= 255:
        raise ToleranceError(key, f"{value!r} must be an integer channel delta 0..255")
    return int(value)


def parse_budget(value: Any, key: str) -> PixelBudget:
    """A count (int >= 0) or a percentage string '0.1%' (0..100%)."""
    if is_int(value):
        if value < 0:
            raise ToleranceError(key, f"{value!r} must be a pixel count >= 0 or a percentage such as '0.1%'")
        return PixelBudget(count=int(value))
    if isinstance(value, str):
        match = _PERCENT_RE.match(value)
        if match:
            fraction = float(match.group(1)) / 100.0
            if 0.0 <= fraction <= 1.0:
                return PixelBudget(fraction=fraction)
    raise ToleranceError(key, f"{value!r} must be a pixel count >= 0 or a percentage such as '0.1%' (0..100%)")


def _unit_interval(value: Any, key: str) -> float:
    if not _is_finite(value) or not 0.0 <= value <= 1.0:
        raise ToleranceError(key, f"{value!r} must be a number in 0..1")
    return float(value)


def _range(value: Any, key: str, *, upper: int | None) -> tuple[int, int]:
    if is_int(value):
        lo, hi = 0, value
    elif isinstance(value, (list, tuple)) and len(value) == 2 and all(is_int(v) for v in value):
        lo, hi = value
    else:
        raise ToleranceError(key, f"{value!r} must be an integer (upper bound) or a [low, high] pair")
    if not 0 <= lo <= hi or (upper is not None and hi > upper):
        top = f"..{upper}" if upper is not None else ""
        raise ToleranceError(key, f"{value!r} must satisfy 0 <= low <= high{top}")
    return int(lo), int(hi)


def _fuzzy(value: Any, key: str) -> Fuzzy:
    if isinstance(value, str):
        match = _WPT_RE.match(value)
        if not match:
            raise ToleranceError(key, f"{value!r}: expected 'maxDifference=LO-HI;totalPixels=LO-HI' (WPT syntax)")
        d_lo, d_hi, p_lo, p_hi = match.groups()
        value = {
            "max_difference": [int(d_lo), int(d_hi)] if d_hi is not None else int(d_lo),
            "total_pixels": [int(p_lo), int(p_hi)] if p_hi is not None else int(p_lo),
        }
    if not isinstance(value, Mapping):
        raise ToleranceError(key, f"{value!r} must be a mapping {{max_difference, total_pixels}} or a WPT string")
    _unknown(value, FUZZY_KEYS, key)
    for sub in FUZZY_KEYS:
        if sub not in value:
            raise ToleranceError(f"{key}.{sub}", "is required")
    return Fuzzy(
        max_difference=_range(value["max_difference"], f"{key}.max_difference", upper=255),
        total_pixels=_range(value["total_pixels"], f"{key}.total_pixels", upper=None),
    )


def _buckets(value: Any, key: str) -> tuple[tuple[int, PixelBudget], ...]:
    if not isinstance(value, (list, tuple)) or not value:
        raise ToleranceError(key, f"{value!r} must be a non-empty list of [delta_upto, max_pixels] pairs")
    out: list[tuple[int, PixelBudget]] = []
    for i, pair in enumerate(value):
        where = f"{key}[{i}]"
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ToleranceError(where, f"{pair!r} must be a [delta_upto, max_pixels] pair")
        upto = _channel(pair[0], where)
        if upto < 1 or (out and upto <= out[-1][0]):
            raise ToleranceError(where, f"delta_upto {upto} must be >= 1 and larger than the previous bucket's")
        out.append((upto, parse_budget(pair[1], where)))
    return tuple(out)


def _edge_mask(value: Any, key: str) -> EdgeMask | None:
    if value is None or value is False:
        return None
    if value is True:
        return EdgeMask()
    if _is_finite(value):
        value = {"threshold": value}
    if not isinstance(value, Mapping):
        raise ToleranceError(key, f"{value!r} must be true/false, a Sobel threshold, or a mapping with keys {list(EDGE_KEYS)}")
    _unknown(value, EDGE_KEYS, key)
    threshold = value.get("threshold", EdgeMask.threshold)
    if not _is_finite(threshold) or threshold <= 0:
        raise ToleranceError(f"{key}.threshold", f"{threshold!r} must be a positive Sobel magnitude (0..255 scale)")
    dilate = value.get("dilate", EdgeMask.dilate)
    if not is_int(dilate) or not 0 <= dilate <= 8:
        raise ToleranceError(f"{key}.dilate", f"{dilate!r} must be an integer 0..8")
    on = value.get("on", EdgeMask.on)
    if on not in EDGE_SOURCES:
        raise ToleranceError(f"{key}.on", f"{on!r} must be one of {list(EDGE_SOURCES)}")
    budget = value.get("max_pixels")
    return EdgeMask(
        threshold=float(threshold),
        dilate=int(dilate),
        on=str(on),
        max_pixels=None if budget is None else parse_budget(budget, f"{key}.max_pixels"),
    )


def _unknown(raw: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    for k in raw:
        if k not in allowed:
            prefix = f"{where}." if where else ""
            raise ToleranceError(f"{prefix}{k}", f"unknown key; allowed keys are {list(allowed)}")


def parse_tolerance(raw: Mapping[str, Any], *, where: str = "") -> Tolerance:
    """Parse one complete (already merged) tolerance block."""
    if not isinstance(raw, Mapping):
        raise ToleranceError(where or "tolerance", f"{raw!r} must be a mapping of tolerance keys {list(KEYS)}")
    _unknown(raw, KEYS, where)

    def k(name: str) -> str:
        return f"{where}.{name}" if where else name

    exact = raw.get("exact", False)
    if not isinstance(exact, bool):
        raise ToleranceError(k("exact"), f"{exact!r} must be true or false")
    border = raw.get("border", 0)
    if not is_int(border) or border < 0:
        raise ToleranceError(k("border"), f"{border!r} must be a pixel count >= 0")
    tol = Tolerance(
        exact=exact,
        max_delta=_channel(raw.get("max_delta", 0), k("max_delta")),
        max_pixels=None if raw.get("max_pixels") is None else parse_budget(raw["max_pixels"], k("max_pixels")),
        fuzzy=None if raw.get("fuzzy") is None else _fuzzy(raw["fuzzy"], k("fuzzy")),
        buckets=None if raw.get("buckets") is None else _buckets(raw["buckets"], k("buckets")),
        border=int(border),
        edge_mask=_edge_mask(raw.get("edge_mask"), k("edge_mask")),
        flip_mean=None if raw.get("flip_mean") is None else _unit_interval(raw["flip_mean"], k("flip_mean")),
        flip_max=None if raw.get("flip_max") is None else _unit_interval(raw["flip_max"], k("flip_max")),
        ssim_min=None if raw.get("ssim_min") is None else _ssim(raw["ssim_min"], k("ssim_min")),
    )
    configured = [g for g in GATES if _bound_set(tol, g)]
    gate_raw = raw.get("gate")
    if gate_raw is None:
        gate = tuple(configured)
    else:
        if isinstance(gate_raw, str):
            gate_raw = [gate_raw]
        if not isinstance(gate_raw, (list, tuple)) or not all(isinstance(g, str) for g in gate_raw):
            raise ToleranceError(k("gate"), f"{gate_raw!r} must be a list drawn from {list(GATES)}")
        for g in gate_raw:
            if g not in GATES:
                raise ToleranceError(k("gate"), f"{g!r} is not a gate; allowed values are {list(GATES)}")
            if not _bound_set(tol, g):
                raise ToleranceError(k("gate"), f"{g!r} gates but has no bound: set {_bound_key(g)!r} too")
        gate = tuple(dict.fromkeys(gate_raw))
    if not gate:
        raise ToleranceError(k("gate"), f"nothing gates: set at least one of {list(GATES)} (or exact: true)")
    return _replace(tol, gate=gate)


def _ssim(value: Any, key: str) -> float:
    if not _is_finite(value) or not -1.0 <= value <= 1.0:
        raise ToleranceError(key, f"{value!r} must be a number in -1..1 (1 means identical)")
    return float(value)


def _bound_set(tol: Tolerance, gate: str) -> bool:
    if gate == "exact":
        return tol.exact
    if gate == "edge_mask":
        return tol.edge_mask is not None and tol.edge_mask.max_pixels is not None
    return getattr(tol, gate) is not None


def _bound_key(gate: str) -> str:
    return "edge_mask.max_pixels" if gate == "edge_mask" else ("exact: true" if gate == "exact" else gate)


def _replace(tol: Tolerance, **changes: Any) -> Tolerance:
    from dataclasses import replace

    return replace(tol, **changes)


def _merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if key == "edge_mask" and isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def backend_defaults(backend: str, *, cross: bool = False) -> dict[str, Any]:
    if cross:
        return dict(CROSS_DEFAULTS)
    return dict(DEFAULTS.get(backend, DEFAULTS["gpu"]))


def resolve_tolerance(raw: Mapping[str, Any] | None, backend: str, *, golden_backend: str | None = None,
                      cross_arch: bool = False) -> Tolerance:
    """The tolerance in force when `backend`'s capture is compared with a golden from `golden_backend`.

    `raw` is the scene's tolerance mapping keyed by backend name (SceneCase.tolerance), or None. The same
    backend (golden_backend None or equal) uses the backend block over the backend defaults; a GPU capture
    against the software golden uses the block's `cross_backend` over CROSS_DEFAULTS; with `cross_arch`, a
    software capture against the reference architecture's golden uses `software.cross_arch` over
    CROSS_ARCH_DEFAULTS.
    """
    validate_tolerances(raw)
    block = dict((raw or {}).get(backend) or {})
    cross_raw = block.pop(CROSS_BACKEND, None) or {}
    arch_raw = block.pop(CROSS_ARCH, None) or {}
    if cross_arch:
        if backend != SOFTWARE:
            raise ToleranceError(backend, f"a {backend} capture has no cross-architecture comparison: its goldens "
                                          f"are per device class")
        return parse_tolerance(_merge(CROSS_ARCH_DEFAULTS, arch_raw), where=f"{backend}.{CROSS_ARCH}")
    cross = golden_backend is not None and golden_backend != backend
    if cross and golden_backend != SOFTWARE:
        raise ToleranceError(backend, f"a {backend} capture can be compared with its own goldens or the software ones, not {golden_backend!r}")
    if cross:
        return parse_tolerance(_merge(CROSS_DEFAULTS, cross_raw), where=f"{backend}.{CROSS_BACKEND}")
    return parse_tolerance(_merge(backend_defaults(backend), block), where=backend)


def validate_tolerances(raw: Mapping[str, Any] | None) -> None:
    """Check a whole scene tolerance mapping at load time; raise ToleranceError on the first bad key."""
    if raw is None:
        return
    if not isinstance(raw, Mapping):
        raise ToleranceError("tolerance", f"{raw!r} must be a mapping keyed by backend name (e.g. software, gles2)")
    for backend, block in raw.items():
        if not isinstance(backend, str) or not _BACKEND_RE.fullmatch(backend):
            raise ToleranceError(str(backend), "a backend name such as 'software' or 'gles2' is expected here")
        if block is None:
            continue
        if not isinstance(block, Mapping):
            raise ToleranceError(backend, f"{block!r} must be a mapping of tolerance keys {list(KEYS) + [CROSS_BACKEND, CROSS_ARCH]}")
        block = dict(block)
        cross_raw = block.pop(CROSS_BACKEND, None)
        if cross_raw is not None:
            if backend == SOFTWARE:
                raise ToleranceError(f"{backend}.{CROSS_BACKEND}", "the software backend has no cross-backend "
                                     f"comparison (across CPU architectures it is {CROSS_ARCH})")
            if not isinstance(cross_raw, Mapping):
                raise ToleranceError(f"{backend}.{CROSS_BACKEND}", f"{cross_raw!r} must be a mapping of tolerance keys {list(KEYS)}")
            parse_tolerance(_merge(CROSS_DEFAULTS, cross_raw), where=f"{backend}.{CROSS_BACKEND}")
        arch_raw = block.pop(CROSS_ARCH, None)
        if arch_raw is not None:
            if backend != SOFTWARE:
                raise ToleranceError(f"{backend}.{CROSS_ARCH}", f"only the software backend is compared across CPU "
                                     f"architectures; a {backend} device's goldens are per device class")
            if not isinstance(arch_raw, Mapping):
                raise ToleranceError(f"{backend}.{CROSS_ARCH}", f"{arch_raw!r} must be a mapping of tolerance keys {list(KEYS)}")
            parse_tolerance(_merge(CROSS_ARCH_DEFAULTS, arch_raw), where=f"{backend}.{CROSS_ARCH}")
        _unknown(block, KEYS + (CROSS_BACKEND, CROSS_ARCH), backend)
        parse_tolerance(_merge(backend_defaults(backend), block), where=backend)
