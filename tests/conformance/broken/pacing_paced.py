"""Breaks pacing.paced: paced jobs run as fast as they can, intervals are frame deltas."""
from _base import main, rect_runner


class Unpaced(rect_runner.Pacer):
    def __init__(self, mode, refresh_hz):
        super().__init__("uncapped", refresh_hz)


rect_runner.Pacer = Unpaced
main()
