"""The percentiles of a frame-time series, their names and levels, written once: stats.py computes them, the
gate's metric names (regression/config.py), `zbench history`'s series (cli.py) and the contention
correction's tail masses (regression/contention.py) read them. A leaf module, so that reading the names does
not import numpy."""

from __future__ import annotations

from typing import Literal

PercentileName = Literal["p50", "p90", "p95", "p99", "p999"]
PERCENTILES: tuple[tuple[PercentileName, float], ...] = (("p50", 50), ("p90", 90), ("p95", 95), ("p99", 99),
                                                         ("p999", 99.9))
PERCENTILE_NAMES: tuple[PercentileName, ...] = tuple(name for name, _ in PERCENTILES)
