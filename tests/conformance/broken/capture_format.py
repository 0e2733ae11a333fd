"""Breaks capture.format: captures are RGB PNGs (no alpha channel)."""
from _base import main, rect_runner
from PIL import Image

rect_runner.write_capture = lambda pixels, path: Image.fromarray(pixels[..., :3].copy(), "RGB").save(path)
main()
