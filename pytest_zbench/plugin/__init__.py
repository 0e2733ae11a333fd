"""The pytest entry point (`pytest11`: pytest_zbench.plugin). It only re-exports, by pytest role:

* options.py     command-line options, ini keys, Settings at configure time; registers the session object
* session.py     the session object (ZbenchPlugin): the hooks that need the session's state
* collection.py  scene files -> perf and golden tests
* fixtures.py    zbench_session, device, scene, golden
* terminal.py    progress note and the zbench summary section
* xdist.py       pytest-xdist scheduling and the run record between controller and workers
* hookspecs.py   the hooks a project may implement (pytest_zbench_run_finished)

Only this package imports pytest; everything it calls takes plain values (docs/architecture.md).
"""

from __future__ import annotations

from .fixtures import device, golden, scene, zbench_session
from .options import pytest_addhooks, pytest_addoption, pytest_configure, pytest_unconfigure

__all__ = [
    "device", "golden", "pytest_addhooks", "pytest_addoption", "pytest_configure", "pytest_unconfigure", "scene",
    "zbench_session",
]
