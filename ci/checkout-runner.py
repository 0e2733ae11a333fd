"""The reference runner of another checkout: `python ci/checkout-runner.py CHECKOUT probe | run JOB OUTDIR`.

A pull request's A/B (README "Running a device lab") launches the merge base's runner and the head's on one
device. For the reference runner, "built from a checkout" means its code imported from that checkout's
folder, with this interpreter and the dependencies installed for it; devices.yaml names this script in the
local devices' `ci.ab_runner`.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

if len(sys.argv) < 2:
    sys.exit("usage: python ci/checkout-runner.py CHECKOUT probe | run JOB OUTDIR")
checkout = Path(sys.argv.pop(1)).resolve()
if not (checkout / "pytest_zbench" / "runner" / "__main__.py").is_file():
    sys.exit(f"checkout-runner: {checkout} holds no reference runner (pytest_zbench/runner/__main__.py)")
sys.path.insert(0, str(checkout))
runpy.run_module("pytest_zbench.runner", run_name="__main__", alter_sys=True)
