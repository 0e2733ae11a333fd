"""The reference runner: `python -m pytest_zbench.runner probe | run JOB OUTDIR` (docs/runner-protocol.md)."""

from __future__ import annotations

import time

# Taken at import, before anything heavy (skia, numpy) loads: result.json's wall_ms counts from here.
STARTED = time.perf_counter()
# The same moment on the frames' clock (t_start_ns): where cold start counts from when the process's own start
# cannot be read (runner/process.py).
STARTED_NS = time.monotonic_ns()
# The device's busy CPU time at the same moment: result.json's host_load counts from here (runner/host_load.py).
from pytest_zbench.runner import host_load as _host_load  # noqa: E402  (after the clocks above, on purpose)

HOST_AT_START = _host_load.sample()

RUNNER_NAME = "zbench-reference"


def runner_version() -> str:
    # The package's own version (pytest_zbench/__init__.py): the reference runner is released with the host.
    import pytest_zbench

    return pytest_zbench.__version__
