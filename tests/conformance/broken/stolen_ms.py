"""Breaks frames.stolen_ms: every frame says other tasks took 5 ms more than the whole frame lasted."""
from _base import main, rect_runner

cells = rect_runner.row_cells
rect_runner.COLUMNS = [*rect_runner.COLUMNS, "stolen_ms"]
rect_runner.row_cells = lambda frame, phase, start, cpu, *args: (
    lambda row: [*row[:-1], cpu + 5.0, row[-1]])(cells(frame, phase, start, cpu, *args))
main()
