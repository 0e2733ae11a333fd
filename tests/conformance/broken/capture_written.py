"""Breaks capture.written: no capture-<frame>.png is written."""
from _base import main, rect_runner

rect_runner.write_capture = lambda pixels, path: None
main()
