"""What a newcomer types that pytest alone answers unhelpfully: `-n 2` where pytest-xdist is not installed, and a
`-k` that selects nothing. Each gets one line that says what to do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
REFUSE_XDIST = """\
import sys
class _Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "xdist":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _Refuse())
"""


def _pytest(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=300)


def test_dash_n_without_xdist_names_the_extra(tmp_path):
    # An install without xdist: the import refused (sitecustomize) and no plugin loaded from entry points but
    # this one, as with only `pip install pytest-zbench`.
    (tmp_path / "sitecustomize.py").write_text(REFUSE_XDIST)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    ran = _pytest(["-p", "pytest_zbench.plugin", "-n", "2", "-k", "fill.opaque.x1", "--collect-only"], env)
    output = ran.stdout + ran.stderr
    assert ran.returncode == pytest.ExitCode.USAGE_ERROR, output
    assert "pip install 'pytest-zbench[xdist]'" in output and "unrecognized arguments" not in output


def test_a_keyword_that_selects_nothing_says_how_scene_tests_are_named(tmp_path):
    ran = _pytest(["-k", "no_scene_is_called_this", "--collect-only", f"--zbench-results={tmp_path}"])
    hints = [line for line in ran.stdout.splitlines() if line.startswith("zbench: -k")]
    assert ran.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, ran.stdout + ran.stderr
    assert len(hints) == 1 and "'no_scene_is_called_this' selected no test" in hints[0]
    assert "perf[fill.opaque.x1-local]" in hints[0] and "--collect-only -q" in hints[0]
    # A keyword that selects something gets no hint.
    chosen = _pytest(["-k", "fill.opaque.x1", "--collect-only", f"--zbench-results={tmp_path}"])
    assert "zbench: -k" not in chosen.stdout and "perf[fill.opaque.x1-local]" in chosen.stdout
