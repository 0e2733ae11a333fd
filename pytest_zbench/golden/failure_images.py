"""Failure artifacts (expected / actual / diff / FLIP map PNGs) and the defect record (docs/methodology.md §7, docs/goldens.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..files import write_bytes_atomic
from .match import Comparison
from .perceptual import luminance
from .store import encode_png

# Magma-like ramp (dark purple -> orange -> pale yellow), the colour map FLIP's own tool uses.
_MAGMA_ANCHORS = np.array([
    (0, 0, 4), (28, 16, 68), (79, 18, 123), (129, 37, 129), (181, 54, 122),
    (229, 80, 100), (251, 135, 97), (254, 194, 135), (252, 253, 191),
], dtype=np.float32)
WITHIN_TOLERANCE_RGB = (40, 120, 255)


def magma(values: np.ndarray) -> np.ndarray:
    """HxW floats in 0..1 -> HxWx4 uint8 opaque, magma-like."""
    v = np.clip(np.nan_to_num(values.astype(np.float32)), 0.0, 1.0) * (len(_MAGMA_ANCHORS) - 1)
    lo = np.floor(v).astype(np.int32).clip(0, len(_MAGMA_ANCHORS) - 2)
    t = (v - lo)[..., None]
    rgb = _MAGMA_ANCHORS[lo] * (1 - t) + _MAGMA_ANCHORS[lo + 1] * t
    return _opaque(rgb)


def _opaque(rgb: np.ndarray) -> np.ndarray:
    out = np.empty(rgb.shape[:2] + (4,), np.uint8)
    out[..., :3] = np.clip(np.rint(rgb), 0, 255).astype(np.uint8)
    out[..., 3] = 255
    return out


def diff_image(expected: np.ndarray, delta: np.ndarray, max_delta: int) -> np.ndarray:
    """A dimmed grey copy of the expected image with every differing pixel painted over it: within the
    tolerance in blue, beyond it from yellow (small) to red (large) by log-magnitude."""
    grey = 48.0 + 0.3 * (luminance(expected) * 255.0)
    rgb = np.repeat(grey[..., None], 3, axis=2)
    within = (delta > 0) & (delta <= max_delta)
    rgb[within] = WITHIN_TOLERANCE_RGB
    over = delta > max_delta
    t = np.log1p(delta[over].astype(np.float32)) / np.log(256.0)
    rgb[over] = np.stack([np.full_like(t, 255.0), 230.0 * (1.0 - t), np.zeros_like(t)], axis=1)
    return _opaque(rgb)


def write_artifacts(comparison: Comparison, folder: str | Path, *, stem: str = "frame") -> dict[str, str]:
    """Write <stem>-expected.png, -actual.png, and when the sizes agree -diff.png and (if FLIP ran)
    -flip.png into `folder`. Returns {kind: path}."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    images: dict[str, np.ndarray] = {"expected": comparison.expected, "actual": comparison.actual}
    if comparison.delta is not None:
        images["diff"] = diff_image(comparison.expected, comparison.delta, comparison.tolerance.max_delta)
    if comparison.flip_map is not None:
        images["flip"] = magma(comparison.flip_map)
    written: dict[str, str] = {}
    for kind, pixels in images.items():
        path = folder / f"{stem}-{kind}.png"
        write_bytes_atomic(path, encode_png(pixels, compress_level=1))
        written[kind] = str(path)
    return written


def _issue_dict(issue: Any) -> dict[str, Any]:
    if hasattr(issue, "to_dict"):
        return dict(issue.to_dict())
    if isinstance(issue, Mapping):
        return dict(issue)
    return {"kind": "unknown", "detail": str(issue), "frame": None}


def defect_record(
    *,
    scene: str,
    frame: int,
    backend: str,
    comparison: Comparison,
    device: str | None = None,
    device_class: str | None = None,
    driver: Mapping[str, Any] | None = None,
    golden: str | Path | None = None,
    golden_backend: str | None = None,
    artifacts: Mapping[str, str | Path] | None = None,
    build_hash: str | None = None,
    runner_issues: Iterable[Any] = (),
) -> dict[str, Any]:
    """One JSON-safe record per failing (or passing, if wanted) frame: what, where, on what, how far off.

    driver: the probe/result `gpu` keys (gl_vendor, gl_renderer, gl_version, ...); runner_issues: protocol
    `Issue`s or their dicts (GL errors, shader failures, NaNs, skipped features) — invariants that are not
    pixels, kept beside the pixel verdict."""
    metrics = comparison.metrics
    return {
        "kind": "diff",
        "scene": scene,
        "frame": frame,
        "backend": backend,
        "golden_backend": golden_backend or backend,
        "device": device,
        "device_class": device_class,
        "driver": {str(k): v for k, v in (driver or {}).items()},
        "passed": comparison.passed,
        "failures": [{"metric": m, "observed": o, "bound": b} for m, o, b in comparison.failures],
        "bbox": metrics.get("bbox"),
        "metrics": dict(metrics),
        "tightness": comparison.tightness,
        "tolerance": comparison.tolerance.to_dict(),
        "golden": None if golden is None else str(golden),
        "artifacts": {k: str(v) for k, v in (artifacts or {}).items()},
        "build_hash": build_hash,
        "runner_issues": [_issue_dict(i) for i in runner_issues],
    }
