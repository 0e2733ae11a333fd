"""Breaks capture.determinism: one pixel of every capture is random (an uninitialised pixel, say)."""
import numpy as np
from _base import main, rect_runner

write = rect_runner.write_capture


def noisy(pixels, path):
    pixels = pixels.copy()
    pixels[0, 0, :3] = np.random.default_rng().integers(0, 256, 3)
    write(pixels, path)


rect_runner.write_capture = noisy
main()
