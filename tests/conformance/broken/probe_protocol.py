"""Breaks probe.protocol: the probe says protocol 2."""
from _base import main, rect_runner

probe = rect_runner.probe_document
rect_runner.probe_document = lambda: {**probe(), "protocol": 2}
main()
