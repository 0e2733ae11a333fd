"""README's first look: its wall time beside the budget README states, the scenes and families it saw, and its
estimate of the whole suite under --zbench-quick.

Runs the pytest command README gives after `bash ci/setup.sh &&` in this checkout (its scenes, goldens and
inventory, on `local`), with the results and the history in a temporary folder so that the checkout stays as it
is; `--runs N` repeats it (the first run also pays for cold caches: Python's bytecode, the font cache).

    python bench/bench_first_look.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_zbench.scenes import load_corpus

REPO = Path(__file__).resolve().parents[1]
SETUP_THEN = "bash ci/setup.sh && "


def readme_first_look() -> tuple[list[str], float]:
    """README's first look as pytest arguments, and the budget its comment states (seconds)."""
    line = next(line.strip() for line in (REPO / "README.md").read_text(encoding="utf-8").splitlines()
                if line.strip().startswith(SETUP_THEN))
    command, _, comment = line[len(SETUP_THEN):].partition("#")
    argv = shlex.split(command)
    budget = re.search(r"within (\d+) minutes?", comment)
    if argv[:1] != [".venv/bin/pytest"] or budget is None:
        raise SystemExit(f"README's first command is not a pytest run with a budget: {line}")
    return argv[1:], float(budget.group(1)) * 60


def run_once(args: list[str]) -> tuple[float, list[dict], str]:
    with tempfile.TemporaryDirectory(prefix="zbench-first-look-") as folder:
        extra = [f"--zbench-results={folder}/results", f"--zbench-history={folder}/history.sqlite",
                 "-p", "no:cacheprovider", "-q"]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
        env.pop("ZBENCH_HISTORY_URL", None)
        started = time.monotonic()
        ran = subprocess.run([sys.executable, "-m", "pytest", *args, *extra], cwd=REPO, env=env,
                             capture_output=True, text=True)
        wall_s = time.monotonic() - started
        if ran.returncode != 0:
            print(ran.stdout[-3000:], ran.stderr[-3000:])
            raise SystemExit(f"the first look failed (exit {ran.returncode})")
        scenes = json.loads(Path(folder, "results", "run.json").read_text())["scenes"]
    closing = next((line for line in ran.stdout.splitlines() if line.startswith("first look: ")), "(no closing line)")
    return wall_s, scenes, closing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1, help="how many first looks to time (default: 1)")
    options = parser.parse_args()
    args, budget_s = readme_first_look()
    cases, _ = load_corpus(REPO / "scenes")
    families = {case.family for case in cases}
    family_of = {case.id: case.family for case in cases}
    print(f"README's first look: pytest {' '.join(args)}; budget {budget_s:.0f} s; {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f} at the start")
    print(f"{'run':>3} {'wall s':>7} {'budget s':>8} {'of budget':>9} {'scenes':>7} {'families':>9}")
    for run in range(options.runs):
        wall_s, scenes, closing = run_once(args)
        seen = {family_of.get(scene["id"]) for scene in scenes}
        print(f"{run + 1:>3} {wall_s:7.1f} {budget_s:8.0f} {wall_s / budget_s:9.0%} {len(scenes):>7} "
              f"{len(seen & families):>4}/{len(families)}")
        print(f"    {closing}")


if __name__ == "__main__":
    main()
