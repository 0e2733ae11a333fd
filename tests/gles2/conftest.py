"""Fixtures for the GPU backend tests.

A test that needs EGL skips when there is none, except under CI (`CI=true`), where it fails: the CI image is
supposed to have Mesa's llvmpipe, and a silently skipped GPU suite would hide that it is gone.
"""

from __future__ import annotations

import pytest
from gles2_support import egl_problem
from parts import in_ci


@pytest.fixture(scope="session")
def require_egl() -> None:
    problem = egl_problem()
    if problem is None:
        return
    message = f"no headless EGL GLES2 context: {problem}"
    if in_ci():
        pytest.fail(f"{message} (CI=true: the GPU backend must be testable in CI; install libegl1 "
                    "libegl-mesa0 libgles2 libgl1-mesa-dri)", pytrace=False)
    pytest.skip(message)
