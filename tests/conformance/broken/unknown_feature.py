"""Breaks job.unknown_feature: an op it does not know is drawn as if it were a rect, not skipped."""
from _base import main, rect_runner

rect_runner.unsupported = lambda job: []
main()
