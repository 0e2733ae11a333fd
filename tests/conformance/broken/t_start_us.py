"""Breaks frames.t_start: t_start_ns is written in microseconds."""
from _base import main, rect_runner

cells = rect_runner.row_cells
rect_runner.row_cells = lambda frame, phase, start, *args: cells(frame, phase, start // 1000, *args)
main()
