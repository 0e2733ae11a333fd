"""The pytest entry point (`pytest11`: pytest_zbench.plugin). It only re-exports, by pytest role:

* options.py          command-line options, ini keys, Settings at configure time; registers the session object
* zbench_plugin.py    the session object (ZbenchPlugin): the hooks that need the session's state
* collection.py       scene files -> perf and golden tests
* fixtures.py         zbench_session, device, scene, golden
* scene_checks.py     Scene.check_perf, Golden.check: the host's results into the test's outcome
* terminal.py         progress note and the zbench summary section
* xdist.py            pytest-xdist scheduling and the run record between controller and workers
* hookspecs.py        the hooks a project may implement (pytest_zbench_run_finished)
* stash.py            the stash keys, and what the modules read of the session object (ActiveZbench)
* rewrite_scope.py    imported first: pytest rewrites the asserts of the plugin's modules, not the host's

None of them imports one that imports it back (tests/test_imports.py walks every import).

Only this package imports pytest; everything it calls takes plain values (docs/architecture.md).
"""

from __future__ import annotations

from . import rewrite_scope  # noqa: F401  (first: the modules imported below are not assertion-rewritten)
from .fixtures import device, golden, scene, zbench_session
from .options import pytest_addhooks, pytest_addoption, pytest_configure, pytest_unconfigure

__all__ = [
    "device", "golden", "pytest_addhooks", "pytest_addoption", "pytest_configure", "pytest_unconfigure", "scene",
    "zbench_session",
]
