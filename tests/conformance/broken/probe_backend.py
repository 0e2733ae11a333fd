"""Breaks probe.backend: the probe names its backend `raster`, not the device's `software`."""
from _base import main, rect_runner

probe = rect_runner.probe_document
rect_runner.probe_document = lambda: {**probe(), "backends": {"raster": probe()["backends"]["software"]}}
main()
