"""Breaks frames.gpu_source: rows say gpu_source `timer`, which is not a source of the protocol."""
from _base import main, rect_runner

rect_runner.gpu_cells = lambda frame, job: ("", "timer", "")
main()
