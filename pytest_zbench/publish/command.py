"""The `zbench publish` subcommand (cli.py adds it with the history options every history command shares)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..command_options import add_out_option

DEFAULT_OUT = "zbench-site"
DEFAULT_RESULTS = "zbench-results"


def add_commands(commands: Any, *, history_default: str, history_help: str, metric: Callable[[str], str],
                 sig_level: Callable[[str], float] = float, count: Callable[[str], int] = int) -> None:
    """`sig_level` and `count`: cli.py's range-checked argparse types, shared with `zbench history`."""
    publish = commands.add_parser(
        "publish", help="write a static site of the history: devices, open regressions, each scene's series",
        description="Write a static site (offline: plotly.js is copied into it) from a history: an index of devices "
                    "and their open regressions, a page per device with its scenes' latest verdicts, and per scene "
                    "the series over builds with each run's range over launches, the change points and the gate's "
                    "verdicts (read from the run.json files of the results folders and their run archive, linked "
                    "to their report.html). docs/report.md, \"Published site\".")
    publish.add_argument("--history", default=history_default, metavar="PATH|URL", help=history_help)
    add_out_option(publish, default=DEFAULT_OUT, metavar="DIR",
                   help=f"the site's folder, replaced as a whole (default: {DEFAULT_OUT})")
    publish.add_argument("--results", action="append", metavar="DIR",
                         help="a results folder whose run.json and archived runs give the verdicts (repeatable; "
                              f"default: {DEFAULT_RESULTS} when it exists)")
    publish.add_argument("--device", metavar="NAME", help="only this device (default: all)")
    publish.add_argument("--metric", default="cpu_ms.p50", metavar="METRIC", type=metric,
                         help="per-launch statistic whose per-run median is the series (default: cpu_ms.p50)")
    publish.add_argument("--last", type=count, default=200, metavar="N",
                         help="the newest N runs of each series (default: 200, as `zbench history`)")
    publish.add_argument("--sig-level", type=sig_level, default=0.05, metavar="P",
                         help="significance of a change point's permutation test (default: 0.05)")
    publish.add_argument("--jobs", type=count, default=os.cpu_count() or 1, metavar="N",
                         help="worker processes searching the change points (default: the CPU count)")
    publish.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import ZbenchError
    from ..regression.history import History
    from ..regression.location import parse_location
    from .build import publish

    try:
        location = parse_location(args.history)
    except ValueError as exc:
        print(f"zbench publish: --history: {exc}", file=sys.stderr)
        return 2
    if location.path is not None and not location.path.is_file():
        print(f"zbench publish: no history database at {location}; perf runs write one there (or pass --history "
              "PATH|URL)", file=sys.stderr)
        return 2
    results = [Path(r) for r in args.results] if args.results else \
        [Path(DEFAULT_RESULTS)] if Path(DEFAULT_RESULTS).is_dir() else []
    missing = [str(r) for r in results if not r.is_dir()]
    if missing:
        print(f"zbench publish: --results {', '.join(missing)}: no such folder", file=sys.stderr)
        return 2
    started = time.perf_counter()

    def progress(done: int, total: int) -> None:
        if done == total or done % 200 == 0:
            print(f"  {done}/{total} series", flush=True)

    try:
        with History(location) as history:
            site = publish(history, Path(args.out), metric=args.metric, last=args.last, results=results,
                           device=args.device, sig_level=args.sig_level, jobs=args.jobs,
                           progress=progress)
    except ZbenchError as exc:
        print(f"zbench publish: {exc}", file=sys.stderr)
        return 1
    for note in site.notes:
        print(f"note: {note}")
    print(f"published {site.series} series ({site.open_regressions} open regression(s)) to {site.index}: "
          f"{site.files} files, {site.bytes / 1e6:.1f} MB, in {time.perf_counter() - started:.1f} s")
    return 0
