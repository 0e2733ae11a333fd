"""A built engine runner for the deploy and bisect tests: a folder holding `zbench-runner`, an executable
script that is the reference runner with a build identity of its own (its folder's BUILD_ID file), as an
engine's CI would build one. Its probe answers the reference runner's probe, taken once per test process
(probe.json in the build), so that a probe costs a Python start, not Skia's and EGL's. Plain Python, no pytest."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

ENTRY = "zbench-runner"

SCRIPT = '''\
#!{python}
"""The reference runner, reporting the build in BUILD_ID beside this file as its probe's `build`."""
import json, os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "BUILD_ID"), encoding="utf-8") as f:
    BUILD = f.read().strip()
RUNNER = [sys.executable, "-m", "pytest_zbench.runner"]
if sys.argv[1:] == ["probe"]:
    with open(os.path.join(HERE, "probe.json"), encoding="utf-8") as f:
        probe = json.load(f)
    probe["build"] = {{"id": BUILD, "dirty": os.path.exists(os.path.join(HERE, "DIRTY")), "describe": None}}
    print(json.dumps(probe), flush=True)
else:
    os.execv(sys.executable, RUNNER + sys.argv[1:])
'''


def make_runner_build(folder: Path, build_id: str, *, data: str = "", dirty: bool = False) -> Path:
    """A runner build in `folder` (created): the script, BUILD_ID, and a data file in a subfolder; `dirty`: its
    probe says it was built from a checkout with uncommitted changes."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / ENTRY
    script.write_text(SCRIPT.format(python=sys.executable), encoding="utf-8")
    script.chmod(0o755)
    (folder / "BUILD_ID").write_text(build_id + "\n", encoding="utf-8")
    (folder / "probe.json").write_text(reference_probe(), encoding="utf-8")
    (folder / "share").mkdir(exist_ok=True)
    (folder / "share" / "data.txt").write_text(data or build_id, encoding="utf-8")
    if dirty:
        (folder / "DIRTY").write_text("uncommitted changes\n", encoding="utf-8")
    return folder


@functools.lru_cache(maxsize=1)
def reference_probe() -> str:
    """The reference runner's probe answer (its last line: one JSON object)."""
    out = subprocess.run([sys.executable, "-m", "pytest_zbench.runner", "probe"], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[2]).stdout
    return out.strip().splitlines()[-1] + "\n"
