"""The real parts a test needs (sshd, adb, PostgreSQL, headless EGL, qemu, a browser): a missing one skips the
test on a developer's machine and fails it in CI (CI=true, pytest_zbench.settings.running_in_ci), where
.ci/run installs every part, so that nothing is skipped silently there."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

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


@contextlib.contextmanager
def build_lock(name: str) -> Iterator[None]:
    """One incremental build of runner `name` at a time among the xdist workers: two workers making the same
    runner at once relink a binary the other is running ("Text file busy"); the second waits, then finds it
    made. The lock file lives in the checkout's build/ folder, which git ignores."""
    folder = Path(__file__).resolve().parents[1] / "build"
    folder.mkdir(exist_ok=True)
    with open(folder / f"{name}.build.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
