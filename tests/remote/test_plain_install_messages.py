"""A plain install (no `[remote]` extra) asked for an ssh or adb device: one line naming the extra, once, before
anything is collected; and asyncssh, when it is there, loads without cryptography's DSA warnings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
# Refuses one package as an install without it would: a finder first on sys.meta_path (sitecustomize runs
# before anything else imports).
REFUSE = """\
import sys
class _Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == {library!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, _Refuse())
"""


@pytest.mark.parametrize(("device", "library"), [("pi3b", "asyncssh"), ("nexus7", "adbutils")])
def test_a_device_whose_client_is_not_installed_is_one_line_naming_the_extra(tmp_path, device, library):
    (tmp_path / "sitecustomize.py").write_text(REFUSE.format(library=library))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    ran = subprocess.run([sys.executable, "-m", "pytest", f"--zbench-device={device}", "-k", "fill.opaque",
                          "-p", "no:cacheprovider", "-q", f"--zbench-results={tmp_path / 'results'}"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    output = ran.stdout + ran.stderr
    assert ran.returncode == pytest.ExitCode.USAGE_ERROR, output
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    named = [line for line in output.splitlines() if "pytest-zbench[remote]" in line]
    assert len(named) == 1 and f"device {device!r}" in named[0] and library in named[0], output


def test_asyncssh_loads_without_the_dsa_deprecation_warnings():
    quiet = subprocess.run([sys.executable, "-W", "error::UserWarning", "-c",
                            "from pytest_zbench.transports.ssh import _import_asyncssh; _import_asyncssh()"],
                           capture_output=True, text=True, timeout=120)
    assert quiet.returncode == 0, quiet.stderr[-2000:]
    # What it silences is real: the same import, unfiltered, warns (else this test proves nothing).
    loud = subprocess.run([sys.executable, "-W", "always::UserWarning", "-c", "import asyncssh"],
                          capture_output=True, text=True, timeout=120)
    assert "DSA is deprecated" in loud.stderr
