"""Breaks frames.rows: frame numbers skip 5 (0, 1, 2, 3, 4, 6, 7, ...)."""
from _base import main, rect_runner

cells = rect_runner.row_cells
rect_runner.row_cells = lambda frame, *args: cells(frame + 1 if frame >= 5 else frame, *args)
main()
