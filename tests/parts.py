"""The real parts a test needs (sshd, adb, PostgreSQL, headless EGL, qemu, a browser): a missing one skips the
test on a developer's machine and fails it in CI (CI=true, pytest_zbench.settings.running_in_ci), where
.ci/run installs every part, so that nothing is skipped silently there."""

from __future__ import annotations

import os

import pytest

from pytest_zbench.settings import running_in_ci


def in_ci() -> bool:
    return running_in_ci(os.environ)


def require(available: bool, what: str) -> None:
    """Return when the part is there; else fail in CI, skip elsewhere, naming what is missing."""
    if available:
        return
    if in_ci():
        pytest.fail(f"{what} is required in CI (CI=true) but missing", pytrace=False)
    pytest.skip(f"{what} is missing")
