"""Breaks probe.schema: the probe's display width is a string."""
from _base import main, rect_runner

probe = rect_runner.probe_document
rect_runner.probe_document = lambda: {**probe(), "display": {"width": "800", "height": 480, "refresh_hz": 60}}
main()
