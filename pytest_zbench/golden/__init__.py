"""Golden images: the store, tolerances, the layered matcher and failure artifacts. No pytest here."""

from __future__ import annotations

from ..settings import UPDATE_MODES
from .check import FrameCheck, check_capture
from .failure_images import defect_record, diff_image, write_artifacts
from .match import Comparison, compare
from .perceptual import FlipError, flip, ssim
from .store import (
    REFERENCE_ARCH,
    GoldenError,
    GoldenKey,
    GoldenStore,
    UpdateDecision,
    decide_update,
    golden_set,
    load_png,
    pixel_digest,
)
from .tolerance import GATES, KEYS, Tolerance, ToleranceError, resolve_tolerance, validate_tolerances

__all__ = [
    "GATES", "KEYS", "REFERENCE_ARCH", "UPDATE_MODES", "Comparison", "FlipError", "FrameCheck", "GoldenError",
    "GoldenKey", "GoldenStore", "Tolerance", "ToleranceError", "UpdateDecision", "check_capture", "compare",
    "decide_update", "defect_record", "diff_image", "flip", "golden_set", "load_png", "pixel_digest",
    "resolve_tolerance", "ssim", "validate_tolerances", "write_artifacts",
]
