"""Cost of the golden metrics on a 1920x1080 pair, measured side by side in one run.

A UI-like frame is rendered with Skia (cards, text, a gradient, a blurred shadow) and compared with a
slightly perturbed copy (anti-aliasing-like noise of +-2 on 3% of pixels and one changed glyph-sized
patch). Prints the median time of each metric and its ratio to the fast gate (max delta + pixel budget).

    python bench/bench_golden_metrics.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from pytest_zbench.golden.match import channel_delta, compare, edge_map
from pytest_zbench.golden.perceptual import flip, ssim
from pytest_zbench.golden.store import pixel_digest
from pytest_zbench.golden.tolerance import parse_tolerance, resolve_tolerance

W, H = 1920, 1080
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def render_ui() -> np.ndarray:
    import skia

    surface = skia.Surface.MakeRaster(skia.ImageInfo.Make(W, H, skia.kRGBA_8888_ColorType, skia.kPremul_AlphaType))
    c = surface.getCanvas()
    c.clear(skia.Color(245, 245, 248))
    typeface = skia.Typeface.MakeFromFile(FONT) or skia.Typeface.MakeDefault()
    shadow = skia.Paint(AntiAlias=True, Color=skia.Color(0, 0, 0, 90),
                        MaskFilter=skia.MaskFilter.MakeBlur(skia.kNormal_BlurStyle, 8))
    card = skia.Paint(AntiAlias=True)
    ink = skia.Paint(AntiAlias=True, Color=skia.Color(25, 25, 35))
    gradient = skia.GradientShader.MakeLinear([skia.Point(0, 0), skia.Point(W, 0)],
                                              [skia.Color(66, 133, 244), skia.Color(219, 68, 55)])
    c.drawRect(skia.Rect.MakeXYWH(0, 0, W, 96), skia.Paint(Shader=gradient))
    for row in range(4):
        for col in range(6):
            x, y = 40 + col * 310, 140 + row * 230
            rect = skia.RRect.MakeRectXY(skia.Rect.MakeXYWH(x, y, 280, 200), 16, 16)
            c.drawRRect(rect.makeOffset(0, 6), shadow)
            card.setColor(skia.Color(255, 255, 255) if (row + col) % 3 else skia.Color(232, 240, 254))
            c.drawRRect(rect, card)
            c.drawString(f"Card {row * 6 + col}: settings", x + 20, y + 44, skia.Font(typeface, 24), ink)
            for line in range(4):
                c.drawString("The quick brown fox jumps over", x + 20, y + 84 + 26 * line, skia.Font(typeface, 16), ink)
    return surface.makeImageSnapshot().toarray(colorType=skia.kRGBA_8888_ColorType, alphaType=skia.kUnpremul_AlphaType)


def perturb(image: np.ndarray) -> np.ndarray:
    rng = np.random.default_rng(0)
    out = image.astype(np.int16)
    noisy = rng.random((H, W)) < 0.03
    out[noisy, :3] += rng.integers(-2, 3, size=(int(noisy.sum()), 3), dtype=np.int16)
    out[300:316, 600:612, :3] = 245  # a glyph-sized patch erased
    return out.clip(0, 255).astype(np.uint8)


def median_time(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm caches and imports
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per metric (median reported); default 5")
    parser.add_argument("--flip-repeat", type=int, default=2, help="timed runs for FLIP (slow); default 2")
    args = parser.parse_args()

    expected = render_ui()
    actual = perturb(expected)
    gpu = resolve_tolerance(None, "gles2")
    cross = resolve_tolerance(None, "gles2", golden_backend="software")
    everything = parse_tolerance({"max_delta": 2, "max_pixels": 16, "flip_mean": 0.05, "ssim_min": 0.9})

    def fast_gate() -> int:
        counts = np.bincount(channel_delta(expected, actual).ravel(), minlength=256)
        return int(counts[gpu.max_delta + 1:].sum())

    rows: list[tuple[str, float]] = []
    rows.append(("fast gate: max delta + pixel budget", median_time(fast_gate, args.repeat)))
    rows.append(("digest of decoded pixels (both images)", median_time(lambda: (pixel_digest(expected), pixel_digest(actual)), args.repeat)))
    rows.append(("edge mask (Sobel on both images)", median_time(lambda: edge_map(expected, 64, 1) & edge_map(actual, 64, 1), args.repeat)))
    rows.append(("SSIM (Gaussian 11x11, luminance)", median_time(lambda: ssim(expected, actual), args.repeat)))
    rows.append(("FLIP (flip-evaluator, LDR, CPU)", median_time(lambda: flip(expected, actual), args.flip_repeat)))
    rows.append(("compare(), same backend, perceptual off", median_time(lambda: compare(expected, actual, gpu, perceptual=False), args.repeat)))
    rows.append(("compare(), cross backend, perceptual off", median_time(lambda: compare(expected, actual, cross, perceptual=False), args.repeat)))
    rows.append(("compare(), everything (FLIP + SSIM)", median_time(lambda: compare(expected, actual, everything), args.flip_repeat)))
    rows.append(("compare(), identical pair (digest fast path)", median_time(lambda: compare(expected, expected, everything), args.repeat)))

    result = compare(expected, actual, everything)
    m = result.metrics
    print(f"pair: {W}x{H}, {m['differing_pixels']} differing pixels, max delta {m['max_delta']}, "
          f"{m['pixels_over']} over delta 2, SSIM {m['ssim']:.5f}, FLIP mean {m['flip_mean']:.5f} max {m['flip_max']:.3f}")
    base = rows[0][1]
    width = max(len(name) for name, _ in rows)
    print(f"{'metric':<{width}}  {'median ms':>10}  {'x fast gate':>11}")
    for name, seconds in rows:
        print(f"{name:<{width}}  {seconds * 1e3:>10.1f}  {seconds / base:>11.1f}")


if __name__ == "__main__":
    main()
