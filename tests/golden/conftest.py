"""Constructed images for the golden tests: a small UI-like scene rendered with Skia, and text."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def _surface(w: int, h: int):
    import skia

    info = skia.ImageInfo.Make(w, h, skia.kRGBA_8888_ColorType, skia.kPremul_AlphaType)
    return skia.Surface.MakeRaster(info)


def _snapshot(surface) -> np.ndarray:
    import skia

    return surface.makeImageSnapshot().toarray(colorType=skia.kRGBA_8888_ColorType, alphaType=skia.kUnpremul_AlphaType)


@pytest.fixture(scope="session")
def ui() -> Callable[..., np.ndarray]:
    """ui(dx=0, card=(40, 120, 200)) -> 160x96 RGBA: a background, a rounded card at x=20+dx, a bar."""
    import skia

    def render(dx: int = 0, card: tuple[int, int, int] = (40, 120, 200)) -> np.ndarray:
        surface = _surface(160, 96)
        canvas = surface.getCanvas()
        canvas.clear(skia.Color(245, 245, 248))
        paint = skia.Paint(AntiAlias=True, Color=skia.Color(*card))
        canvas.drawRRect(skia.RRect.MakeRectXY(skia.Rect.MakeXYWH(20 + dx, 16, 70, 40), 8, 8), paint)
        paint.setColor(skia.Color(230, 90, 60))
        canvas.drawRect(skia.Rect.MakeXYWH(100, 70, 48, 12), paint)
        return _snapshot(surface)

    return render


@pytest.fixture(scope="session")
def text() -> Callable[[str], np.ndarray]:
    """text('Golden: 42') -> 200x60 RGBA, dark DejaVu Sans 20 px on near-white."""
    import skia

    typeface = skia.Typeface.MakeFromFile(FONT)
    assert typeface is not None, f"font {FONT} missing"

    def render(s: str) -> np.ndarray:
        surface = _surface(200, 60)
        canvas = surface.getCanvas()
        canvas.clear(skia.Color(250, 250, 250))
        canvas.drawString(s, 10, 38, skia.Font(typeface, 20), skia.Paint(AntiAlias=True, Color=skia.Color(20, 20, 30)))
        return _snapshot(surface)

    return render


def opaque(h: int, w: int, value: int | tuple[int, int, int] = 0) -> np.ndarray:
    img = np.zeros((h, w, 4), np.uint8)
    img[..., :3] = value
    img[..., 3] = 255
    return img


@pytest.fixture
def solid() -> Callable[..., np.ndarray]:
    return opaque
