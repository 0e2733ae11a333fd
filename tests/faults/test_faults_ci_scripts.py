"""Set-up scripts fail loudly: a step that fails stops the script with a message and a non-zero exit, never
"ready" for a device that is not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent


def test_arm64_setup_with_a_python_lacking_skia_python_fails_before_building(tmp_path):
    bare = tmp_path / "bare"  # an interpreter without skia-python
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    cache = tmp_path / "cache"
    env = {**os.environ, "PYTHON": str(bare / "bin" / "python"), "XDG_CACHE_HOME": str(cache)}
    done = subprocess.run(["bash", str(REPO / "ci" / "arm64-device.sh"), "setup"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0, done.stdout + done.stderr
    assert "skia-python is not installed for the host interpreter" in done.stderr
    assert "ready" not in done.stdout + done.stderr and "debootstrap" not in done.stderr
    built = list((cache / "zbench" / "arm64").glob("*")) if (cache / "zbench" / "arm64").exists() else []
    assert not [p for p in built if p.name != ".lock"], built  # no device, not even a half-built one
