"""Command line: `python -m pytest_zbench.runner [--cpu-burn-ms MS] [--cpu-burn-per-draw-us US] probe | run JOB OUTDIR`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import NoReturn

# The rasteriser and numpy are dependencies of pytest-zbench; an environment without them (a device's own
# Python, a broken install) gets one line naming the package instead of an import traceback.
PACKAGES = {"skia": "skia-python", "numpy": "numpy"}
try:
    from pytest_zbench.runner.run import EXIT_OK, probe, run
except ModuleNotFoundError as exc:
    if exc.name not in PACKAGES:
        raise
    sys.stderr.write(f"zbench runner: {sys.executable} has no module {exc.name!r}: install it with "
                     f"`{sys.executable} -m pip install {PACKAGES[exc.name]}`\n")
    sys.exit(1)


def _non_negative(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a non-negative number")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_zbench.runner",
        description="Reference runner of the zbench runner protocol, version 1.")
    parser.add_argument("--cpu-burn-ms", type=_non_negative, default=0.0, metavar="MS",
                        help="busy-wait MS milliseconds inside every frame's timed section (a known slowdown)")
    parser.add_argument("--cpu-burn-per-draw-us", type=_non_negative, default=0.0, metavar="US",
                        help="busy-wait US microseconds per draw call of the frame inside its timed section (a "
                             "known cost per element: an adaptive scene's score drops in proportion)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("probe", help="print this runner's backends and features as one JSON object")
    run_parser = commands.add_parser("run", help="render a job; write frames.csv, captures and result.json")
    run_parser.add_argument("job", help="path of the job file (JSON)")
    run_parser.add_argument("outdir", help="existing, empty directory for the results")
    args = parser.parse_args(argv)
    if args.command == "probe":
        print(json.dumps(probe(), sort_keys=True), flush=True)
        return EXIT_OK
    return run(args.job, args.outdir, cpu_burn_ms=args.cpu_burn_ms, cpu_burn_per_draw_us=args.cpu_burn_per_draw_us)


def exit_now(code: int) -> NoReturn:
    """End the process without Python's shutdown. Every file the runner writes is closed by the time main()
    returns (frames.csv and result.json by their writers, the backend by run()), so what the shutdown would do
    is tear down Skia, numpy and every module: 0.1-0.4 s after the runner's own wall_ms on this host, paid by
    every launch and counted as the harness's (README, "Benchmarks")."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # the host closed its end: nothing more can reach it
            pass
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
