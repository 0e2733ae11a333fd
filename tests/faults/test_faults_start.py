"""Mistakes a session can know at its start are one usage error then, naming the option or file, the key and
what to do; never a traceback per test."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fault_support import clean

USAGE_ERROR = pytest.ExitCode.USAGE_ERROR


@contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """A folder nobody may write into, root included (chattr +i); skipped where the file system cannot."""
    immutable = False
    if os.geteuid() == 0:
        immutable = shutil.which("chattr") is not None and subprocess.run(
            ["chattr", "+i", str(folder)], capture_output=True).returncode == 0
    else:
        folder.chmod(0o555)
    try:
        try:
            (folder / "probe").write_text("x")
            (folder / "probe").unlink()
            pytest.skip("this file system lets this user write into any folder (no chattr +i)")
        except OSError:
            pass
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        folder.chmod(0o755)


def test_a_results_folder_under_a_read_only_parent_is_one_usage_error(local_session):
    session = local_session
    parent = session.root / "locked"
    parent.mkdir()
    results = parent / "results"
    with read_only(parent):
        result = session.run(f"--zbench-results={results}")
    assert result.ret == USAGE_ERROR
    text = clean(result)
    assert f"--zbench-results (ini zbench_results): cannot write into {parent} (to create {results} in it)" in text
    assert "PermissionError" not in text and "give a writable folder" in text
