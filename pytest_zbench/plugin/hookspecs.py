"""Hooks a project implements in its conftest.py to extend pytest-zbench."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def pytest_zbench_run_finished(config: pytest.Config, document: dict[str, Any], results_dir: Path) -> None:
    """Called once per session on the controller, after run.json was written (or run.invalid.json when it
    broke its schema): the place to upload results to a dashboard or a perf database.

    `document` is the run.json content (schema/run.schema.json); do not modify it.
    """
