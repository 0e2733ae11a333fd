"""Headless Chromium (Debian's package, installed by ci/setup.sh) loading a page for real: the DOM after
layout, the console messages, a screenshot. A missing browser skips, except under CI=true, where it fails."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

CONSOLE = re.compile(r":CONSOLE[:(]\d*\)?\]? (.*)")


@dataclass
class Loaded:
    dom: str
    console: list[str]


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        # Not conftest's helper: `import conftest` finds whichever tests/ folder's conftest comes first.
        what = "the chromium browser (apt-get install chromium)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{what} is required in CI (CI=true) but missing", pytrace=False)
        pytest.skip(f"{what} is missing")
    return found


def _run(args: list[str], profile: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Chromium in a session of its own, killed with every child process if it outlives its deadline."""
    command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
               f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # helpers left behind by the browser process
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def load(page: Path, profile: Path) -> Loaded:
    """The page's DOM once loaded (scripts run, local files readable by it), and what it wrote to the console."""
    done = _run(["--allow-file-access-from-files", "--virtual-time-budget=10000", "--dump-dom", page.as_uri()],
                profile)
    assert done.returncode == 0, done.stderr[-2000:]
    return Loaded(done.stdout, [m.group(1) for m in CONSOLE.finditer(done.stderr)])


def screenshot(page: Path, png: Path, profile: Path, *, width: int = 1300, height: int = 2400) -> Path:
    done = _run([f"--window-size={width},{height}", f"--screenshot={png}", page.as_uri()], profile)
    assert done.returncode == 0 and png.is_file(), done.stderr[-2000:]
    return png
