"""`zbench`: look at the run history and calibrate a device's noise floor.

    zbench history [--history PATH] [--scene ID] [--device NAME] [--metric cpu_ms.p50]
    zbench calibrate --device NAME [--history PATH] [--sessions S] [--runs N] [-k EXPR] [--from-history]

`calibrate` runs A/A sessions through pytest itself (S times `pytest --zbench-device=NAME --zbench-runs=N
--zbench-calibrate --zbench-history=PATH`), which records them as calibration runs, then computes each
scene's within- and between-session spread from those runs (regression.calibrate.calibrate_from_runs) and
stores the figures in the history. The gate uses the A/A sessions themselves for its between-session spread.
`--from-history` skips the pytest step and uses A/A runs already there.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .regression.config import DEFAULT_ALPHA
from .regression.gate import GATING_METRICS, GateConfig

if TYPE_CHECKING:
    from .regression.changepoints import ChangePoint
    from .regression.history import HistoricRun

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
PYTEST_USAGE_ERROR = 4


def _parser() -> argparse.ArgumentParser:
    from .regression.history import DEFAULT_HISTORY_PATH

    parser = argparse.ArgumentParser(prog="zbench", description="pytest-zbench history and calibration")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    history = commands.add_parser("history", help="print each scene's series with its change points")
    history.add_argument("--history", default=DEFAULT_HISTORY_PATH, metavar="PATH",
                         help=f"history database (default: {DEFAULT_HISTORY_PATH})")
    history.add_argument("--scene", metavar="ID", help="only this scene id (default: all)")
    history.add_argument("--device", metavar="NAME", help="only this device (default: all)")
    history.add_argument("--metric", default="cpu_ms.p50", metavar="METRIC",
                         help="per-launch statistic whose per-run median is the series: "
                              f"{', '.join(GATING_METRICS)}, ... (default: cpu_ms.p50)")
    history.add_argument("--last", type=int, default=200, metavar="N",
                         help="only the newest N runs of each series (default: 200)")
    history.add_argument("--sig-level", type=float, default=0.05, metavar="P",
                         help="significance of a change point's permutation test (default: 0.05)")

    calibrate = commands.add_parser("calibrate", help="run A/A sessions on a device and store its spreads")
    calibrate.add_argument("--device", required=True, metavar="NAME", help="device from devices.yaml (required)")
    calibrate.add_argument("--history", default=DEFAULT_HISTORY_PATH, metavar="PATH",
                           help=f"history database (default: {DEFAULT_HISTORY_PATH})")
    calibrate.add_argument("--runs", type=int, default=10, metavar="N",
                           help="A/A launches per scene and session (default: 10)")
    calibrate.add_argument("--sessions", type=int, default=3, metavar="S",
                           help="A/A pytest sessions; two or more show the between-session spread (default: 3)")
    calibrate.add_argument("-k", dest="keyword", metavar="EXPR", help="pytest -k expression selecting scenes")
    calibrate.add_argument("--scene", action="append", metavar="ID",
                           help="calibrate only this scene id (repeatable; default: every scene with A/A runs)")
    calibrate.add_argument("--from-history", action="store_true",
                           help="do not run pytest; calibrate from A/A runs already in the history")
    calibrate.add_argument("--launches", default="5,10", metavar="N,N",
                           help="candidate launches to report the minimum detectable effect for (default: 5,10)")
    calibrate.add_argument("--power", type=float, default=0.8, help="power for the MDE (default: 0.8)")
    calibrate.add_argument("--alpha", type=float, default=DEFAULT_ALPHA,
                           help=f"the scene's false-alarm rate (default: {DEFAULT_ALPHA})")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "history":
        return _history(args)
    return _calibrate(args)


def _history(args: argparse.Namespace) -> int:
    from .regression.changepoints import change_points
    from .regression.history import History

    if not Path(args.history).is_file():
        print(f"zbench history: no history database at {args.history}; perf runs write one there "
              "(or pass --history PATH)", file=sys.stderr)
        return EXIT_USAGE
    with History(args.history) as history:
        keys = history.scene_keys(device=args.device, scene_id=args.scene)
        if not keys:
            what = " and ".join(f"{name} {value!r}" for name, value in
                                (("device", args.device), ("scene", args.scene)) if value)
            print(f"no runs{' of ' + what if what else ''} in {args.history}")
            return EXIT_OK
        for key in keys:
            runs = history.runs_of(key, limit=args.last)
            points = [(run, run.median(args.metric)) for run in runs]
            steps = change_points([value for _, value in points], sig_level=args.sig_level)
            _print_series(key.describe(), args.metric, points, steps)
    return EXIT_OK


def _print_series(title: str, metric: str, points: list[tuple[HistoricRun, float | None]],
                  steps: list[ChangePoint]) -> None:
    unit = "" if metric == "jank_share" else " ms"
    at_step = {step.index: step for step in steps}
    print(f"{title}  {metric}, {len(points)} run(s)")
    print(f"  {'#':>4}  {'started (UTC)':<19}  {'build':<12} {'launches':>8}  {'median':>12}")
    previous = None
    for i, (run, value) in enumerate(points):
        shown = "-" if value is None else (f"{value:.2%}" if metric == "jank_share" else f"{value:.3f}{unit}")
        notes = []
        if i in at_step:
            notes.append(f"<- step x{at_step[i].magnitude:.3f} ({at_step[i].magnitude - 1:+.1%})")
        if previous is not None and run.fingerprint != previous.fingerprint:
            notes.append("environment changed")
        if run.dirty:
            notes.append("dirty")
        started = run.started_utc.replace("T", " ")[:19]
        print(f"  {i:>4}  {started:<19}  {run.build_hash[:12]:<12} {len(run.launches):>8}  {shown:>12}"
              f"{'   ' + '; '.join(notes) if notes else ''}")
        previous = run
    if steps:
        for step in steps:
            run = points[step.index][0]
            print(f"  change point: run #{step.index}, build {run.build_hash[:12]} ({run.started_utc[:10]}), "
                  f"x{step.magnitude:.3f} ({step.magnitude - 1:+.1%}), p={step.p_value:.3g}")
    else:
        print("  change points: none")
    print()


def _calibrate(args: argparse.Namespace) -> int:
    from .regression.calibrate import calibrate_from_runs, describe
    from .regression.history import History

    try:
        ns = tuple(int(n) for n in args.launches.split(","))
        config = GateConfig(alpha=args.alpha)
    except ValueError as exc:
        print(f"zbench calibrate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.runs < 2:
        print("zbench calibrate: --runs must be at least 2 (a spread needs two launches)", file=sys.stderr)
        return EXIT_USAGE
    if args.sessions < 1:
        print("zbench calibrate: --sessions must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    if not args.from_history:
        for session in range(args.sessions):
            status = _run_aa(args, session)
            if status == PYTEST_USAGE_ERROR:
                print("zbench calibrate: pytest rejected the calibration options; the installed plugin needs "
                      "--zbench-calibrate and --zbench-history (or use --from-history)", file=sys.stderr)
                return EXIT_FAILED
            if status not in (0, 1):  # 1 = some tests failed, the A/A launches that ran are still recorded
                print(f"zbench calibrate: pytest exited with {status}; calibrating from what was recorded",
                      file=sys.stderr)
    if not Path(args.history).is_file():
        print(f"zbench calibrate: no history database at {args.history}", file=sys.stderr)
        return EXIT_FAILED
    with History(args.history) as history:
        report = calibrate_from_runs(history, args.device, args.scene, ns=ns, power=args.power, config=config)
    for calibration in report.calibrations:
        print(describe(calibration))
    for note in report.notes:
        print(f"note: {note}")
    print(f"{len(report.calibrations)} calibration(s) stored in {args.history}")
    return EXIT_OK if report.calibrations else EXIT_FAILED


def _run_aa(args: argparse.Namespace, session: int) -> int:
    command = [sys.executable, "-m", "pytest", f"--zbench-device={args.device}", f"--zbench-runs={args.runs}",
               "--zbench-calibrate", f"--zbench-history={args.history}"]
    if args.keyword:
        command += ["-k", args.keyword]
    print(f"running A/A session {session + 1} of {args.sessions}: " + " ".join(command), flush=True)
    return subprocess.call(command)


if __name__ == "__main__":
    sys.exit(main())
