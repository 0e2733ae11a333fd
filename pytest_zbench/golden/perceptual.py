"""Perceptual metrics: SSIM (numpy/scipy, no scikit-image) and NVIDIA FLIP via flip-evaluator, contained.

Both take straight-alpha RGBA8 images and first composite them over mid grey, so a difference in alpha
alone is still seen (over black, black text on transparency would vanish; over white, white text).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import threading
from collections.abc import Iterator

import numpy as np

from ..errors import ZbenchError

BACKDROP = 128.0 / 255.0
# Rec. 601 luma weights on the sRGB-encoded values, as in the original SSIM evaluations.
LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)
SSIM_SIGMA = 1.5
SSIM_RADIUS = 5  # 11x11 Gaussian window (Wang et al. 2004)
SSIM_K1, SSIM_K2 = 0.01, 0.03


class FlipError(ZbenchError):
    """flip-evaluator could not be imported or refused its input; the message says what it said."""


def composite_rgb(rgba: np.ndarray) -> np.ndarray:
    """HxWx4 uint8 straight alpha -> HxWx3 float32 in 0..1, over the grey backdrop (sRGB-space blend)."""
    rgb = rgba[..., :3].astype(np.float32) / 255.0
    alpha = rgba[..., 3:4].astype(np.float32) / 255.0
    return rgb * alpha + BACKDROP * (1.0 - alpha)


def luminance(rgba: np.ndarray) -> np.ndarray:
    return composite_rgb(rgba) @ LUMA


def ssim_map(x: np.ndarray, y: np.ndarray, *, data_range: float = 1.0) -> np.ndarray:
    """Per-pixel SSIM of two equally sized 2-D float images, Gaussian-weighted 11x11 window, sigma 1.5."""
    from scipy.ndimage import gaussian_filter

    x = x.astype(np.float64, copy=False)
    y = y.astype(np.float64, copy=False)
    truncate = SSIM_RADIUS / SSIM_SIGMA

    def blur(a: np.ndarray) -> np.ndarray:
        return gaussian_filter(a, SSIM_SIGMA, truncate=truncate, mode="reflect")

    mu_x, mu_y = blur(x), blur(y)
    var_x = blur(x * x) - mu_x * mu_x
    var_y = blur(y * y) - mu_y * mu_y
    cov = blur(x * y) - mu_x * mu_y
    c1 = (SSIM_K1 * data_range) ** 2
    c2 = (SSIM_K2 * data_range) ** 2
    num = (2 * mu_x * mu_y + c1) * (2 * cov + c2)
    den = (mu_x * mu_x + mu_y * mu_y + c1) * (var_x + var_y + c2)
    return num / den


def ssim(expected: np.ndarray, actual: np.ndarray, *, border: int = 0) -> float:
    """Mean SSIM of the luminance of two RGBA8 images. Pixels within the window radius of the image edge
    (and within `border`) are left out of the mean, as the reflected padding there is invented data."""
    smap = ssim_map(luminance(expected), luminance(actual))
    crop = max(SSIM_RADIUS, border)
    h, w = smap.shape
    if h > 2 * crop and w > 2 * crop:
        smap = smap[crop:h - crop, crop:w - crop]
    return float(smap.mean())


_FD_LOCK = threading.Lock()


@contextlib.contextmanager
def _stdout_to(sink: io.StringIO) -> Iterator[None]:
    """Send both Python-level and C-level (fd 1) stdout into `sink`: FLIP prints, pytest's output must not
    carry it, and a report reader needs what it said when it fails."""
    with _FD_LOCK, tempfile.TemporaryFile(mode="w+b") as trap:
        sys.stdout.flush()
        saved = None
        try:
            saved = os.dup(1)
            os.dup2(trap.fileno(), 1)
        except OSError:  # no fd 1 (embedded interpreters): Python-level redirection still applies
            saved = None
        try:
            with contextlib.redirect_stdout(sink):
                yield
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            if saved is not None:
                os.dup2(saved, 1)
                os.close(saved)
            trap.seek(0)
            sink.write(trap.read().decode("utf-8", "replace"))


def flip(expected: np.ndarray, actual: np.ndarray, *, ppd: float | None = None) -> np.ndarray:
    """The LDR-FLIP error map (HxW float32, 0..1) of two equally sized RGBA8 images.

    flip-evaluator calls sys.exit on arguments it dislikes and prints on stdout; both are contained here:
    SystemExit and its exceptions become FlipError carrying what it printed."""
    try:
        import flip_evaluator
    except ImportError as exc:
        raise FlipError("flip-evaluator is not installed: pip install 'pytest-zbench[golden]'") from exc
    reference = np.ascontiguousarray(composite_rgb(expected))
    test = np.ascontiguousarray(composite_rgb(actual))
    parameters = {} if ppd is None else {"ppd": float(ppd)}
    said = io.StringIO()
    try:
        with _stdout_to(said):
            error_map, _mean, _params = flip_evaluator.evaluate(
                reference, test, "LDR", inputsRGB=True, applyMagma=False, computeMeanError=False,
                parameters=parameters,
            )
    except SystemExit as exc:
        text = said.getvalue().strip().replace("\n", " ") or "no message"
        raise FlipError(f"flip-evaluator exited (code {exc.code!r}) instead of returning: {text}") from None
    except Exception as exc:  # nanobind raises RuntimeError / TypeError on bad arrays
        text = said.getvalue().strip().replace("\n", " ")
        raise FlipError(f"flip-evaluator failed: {exc}".strip() + (f" (it printed: {text})" if text else "")) from exc
    error_map = np.asarray(error_map, dtype=np.float32)
    if error_map.ndim == 3:
        error_map = error_map[..., 0]
    return error_map
