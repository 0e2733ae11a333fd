"""The `zbench engines` subcommand: the terminal table, engines.json and engines.html of several runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..command_options import add_out_option
from . import DEFAULT_METRIC

DEFAULT_OUT = "zbench-engines"


def add_commands(commands: Any) -> None:
    engines = commands.add_parser(
        "engines", help="several engines' runs side by side, each scene's ratio to a reference engine",
        description="Put per scene the engines (devices) of several runs side by side, as MotionMark puts browsers: "
                    "each engine's frame time p50 and p95, jank, an adaptive scene's score with its interval, and "
                    "the ratio to the reference engine with its 95% launch-bootstrap interval; a scene an engine "
                    "skipped says why. Prints the table and writes engines.json and engines.html into --out. "
                    "docs/report.md, \"Engines side by side\".")
    engines.add_argument("runs", nargs="+", metavar="RUN",
                         help="a run.json, or a results folder holding one; one run per engine (a run of several "
                              "devices gives several engines)")
    engines.add_argument("--reference", metavar="NAME",
                         help="the engine (device name) the others are divided by (default: the first run's first "
                              "device)")
    engines.add_argument("--metric", default=DEFAULT_METRIC, metavar="METRIC", type=_metric,
                         help=f"the ratio's per-launch metric of fixed-load scenes, lower is faster (default: "
                              f"{DEFAULT_METRIC}; adaptive scenes are compared by their score)")
    add_out_option(engines, default=DEFAULT_OUT, metavar="DIR",
                   help=f"the folder engines.json and engines.html go into (default: {DEFAULT_OUT})")
    engines.set_defaults(run=run)


def _metric(text: str) -> str:
    from ..regression.config import GATE_METRIC

    if not GATE_METRIC.fullmatch(text):
        raise argparse.ArgumentTypeError(f"unknown metric {text!r}: use SERIES.STAT with SERIES one of cpu_ms, "
                                         "gpu_ms, interval_ms, frame_ms (frame_ms.p50, cpu_ms.p95, ...) or jank_share")
    return text


def run(args: argparse.Namespace) -> int:
    from ..files import write_json_atomic
    from ..results_folder import RunJsonNotFound
    from .document import write_page
    from .runs import load_engines
    from .table import EnginesError, lines, side_by_side

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        print(f"zbench engines: --out {out} is a file: name a folder for engines.json and engines.html",
              file=sys.stderr)
        return 2
    try:
        table = side_by_side(load_engines([Path(r) for r in args.runs]), args.reference, args.metric)
    except (EnginesError, RunJsonNotFound) as exc:
        print(f"zbench engines: {exc}", file=sys.stderr)
        return 2
    for line in lines(table):
        print(line)
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "engines.json", table.to_json())
    page = write_page(table, out / "engines.html")
    print(f"written: {out / 'engines.json'}, {page}")
    return 0
