"""Breaks probe.schema: the probe's engine build has an empty id and a dirty flag that is not a boolean."""
from _base import main, rect_runner

probe = rect_runner.probe_document
rect_runner.probe_document = lambda: {**probe(), "build": {"id": "", "dirty": "yes"}}
main()
