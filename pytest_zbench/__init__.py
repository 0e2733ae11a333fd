"""pytest-zbench: rendering scenes as perf and golden-image tests on real devices."""

__version__ = "0.1.0"
