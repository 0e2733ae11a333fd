"""Breaks pacing.uncapped: uncapped jobs are vsync-paced too."""
from _base import main, rect_runner


class AlwaysPaced(rect_runner.Pacer):
    def __init__(self, mode, refresh_hz):
        super().__init__("paced", refresh_hz)


rect_runner.Pacer = AlwaysPaced
main()
