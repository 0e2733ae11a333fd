"""Breaks frames.cpu_units: cpu_ms is written in seconds."""
from _base import main, rect_runner

cells = rect_runner.row_cells
rect_runner.row_cells = lambda frame, phase, start, cpu, *args: cells(frame, phase, start, cpu / 1000, *args)
main()
