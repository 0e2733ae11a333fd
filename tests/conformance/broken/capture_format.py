"""Breaks capture.format: captures are RGB PNGs (no alpha channel)."""
from PIL import Image

from _base import main, rect_runner

rect_runner.write_capture = lambda pixels, path: Image.fromarray(pixels[..., :3].copy(), "RGB").save(path)
main()
