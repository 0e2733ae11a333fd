"""`zbench`: look at the run history and move it between databases, calibrate a device's noise floor, check a
device's runner, run a device lab's CI.

    zbench history [--history PATH|URL] [--scene ID] [--device NAME] [--metric cpu_ms.p50]
    zbench history export FILE [--history PATH|URL]     copy the history into FILE (a new SQLite file)
    zbench history import FILE [--history PATH|URL]     copy FILE's runs into the history
    zbench calibrate --device NAME [--history PATH|URL] [--sessions S] [--runs N] [--frames N] [--warmup N]
                     [-k EXPR] [--results DIR] [--from-history]
    zbench report RUN.json [--out FILE]                 re-render report.html and the traces of a run
    zbench compare A B [--fail-on M:PCT]                B judged against A, scene by scene (exit 1: regressed);
                                                        each a run.json or a results folder holding one
    zbench engines RUN RUN ... [--reference NAME] [--out DIR]   engines side by side, each scene's ratio to a
                                                        reference engine (side_by_side/)
    zbench devices [--devices PATH] [--device NAME] [--no-probe]   the inventory, each device reached and probed
    zbench check-runner --device NAME [--devices PATH] [--features F,F] [--json FILE] [--keep DIR]
    zbench matrix | summary | leg ...   (lab/commands.py)
    zbench goldens accept|reject RESULTS [--run ID] [--scene ID] [--frame N] [--device NAME] [--all] [--reason TEXT]
                                                        triage a session's captures (golden/review.py)
    zbench runs [--results DIR]                         the archived runs of a results folder (run_archive.py)
    zbench publish [--history PATH|URL] [--out DIR] [--results DIR]   a static site of the history (publish/)
    zbench deploy --device NAME BUILD [--keep N] ...    a built runner onto a device by content hash (engine/)
    zbench bisect GOOD BAD --device NAME --build CMD --artifact PATH ...   the engine commit behind a slowdown or a
                                                        pixel change (engine/)

The history is a SQLite file or a postgresql:// URL; without --history, $ZBENCH_HISTORY_URL, else the
project's .zbench/history.sqlite: the nearest one in the current folder or a folder above it, where the
plugin writes it (the project's root), so any subfolder of the project finds it.

`calibrate` runs A/A sessions through pytest itself (S times `pytest --zbench-device=NAME --zbench-runs=N
--zbench-calibrate --zbench-history=PATH`), which records them as calibration runs, then computes each
scene's within- and between-session spread from those runs (regression.calibrate.calibrate_from_runs) and
stores the figures in the history. The gate uses the A/A sessions themselves for its between-session spread.
`--from-history` skips the pytest step and uses A/A runs already there.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .command_options import add_out_option
from .percentiles import PERCENTILE_NAMES
from .regression.calibrate import MIN_CALIBRATION_LAUNCHES
from .regression.config import DEFAULT_ALPHA
from .regression.gate import GATING_METRICS, GateConfig
from .regression.location import HISTORY_ENV, HistoryLocation, parse_location

if TYPE_CHECKING:
    from .regression.changepoints import ChangePoint
    from .regression.history import HistoricRun

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
PYTEST_USAGE_ERROR = 4


def _parser() -> argparse.ArgumentParser:
    from .regression.history import DEFAULT_HISTORY_PATH

    default = os.environ.get(HISTORY_ENV) or project_history(Path.cwd())
    shown = f"${HISTORY_ENV} if set, else the nearest {DEFAULT_HISTORY_PATH} here or above"
    history_help = f"history: a SQLite file or a postgresql://USER@HOST:PORT/DB URL (default: {shown})"
    parser = argparse.ArgumentParser(prog="zbench", description="pytest-zbench history, calibration, runner checks and CI")
    parser.add_argument("--version", action="version", version=_version_line())
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    history = commands.add_parser(
        "history", help="print each scene's series with its change points; export or import a history; accept "
                        "or exclude a run",
        description="Without ACTION: print each scene's series with its change points. `export FILE` copies "
                    "the history into FILE, a new SQLite file; `import FILE` copies the runs and calibrations "
                    "of FILE (a SQLite file or a URL) that the history lacks into it. `accept RUN` takes a run "
                    "the gate judged regressed or improved as the scene's new level (the runs before it are no "
                    "longer baselines); `exclude RUN` keeps a run out of every baseline; `unmark RUN` undoes "
                    "either (RUN: a run id or its start, as run.json's history.run_id; --scene limits it).")
    history.add_argument("action", nargs="?", choices=("show", "export", "import", *HISTORY_MARKS), default="show",
                         help="show (the default), export, import, accept, exclude or unmark")
    history.add_argument("file", nargs="?", metavar="FILE|RUN",
                         help="the file to export to or import from; the run to accept, exclude or unmark")
    history.add_argument("--history", default=default, metavar="PATH|URL", help=history_help)
    history.add_argument("--scene", metavar="ID", help="only this scene id (default: all)")
    history.add_argument("--device", metavar="NAME", help="only this device (default: all)")
    history.add_argument("--metric", default="cpu_ms.p50", metavar="METRIC", type=_metric,
                         help="per-launch statistic whose per-run median is the series: "
                              f"{', '.join(GATING_METRICS)}, ... (default: cpu_ms.p50)")
    history.add_argument("--last", type=_count, default=200, metavar="N",
                         help="only the newest N runs of each series (default: 200)")
    history.add_argument("--sig-level", type=_sig_level, default=0.05, metavar="P",
                         help="significance of a change point's permutation test (default: 0.05)")

    calibrate = commands.add_parser(
        "calibrate", help="run A/A sessions on a device and store its spreads",
        description="Run --sessions A/A pytest sessions on the device (pytest --zbench-calibrate), then store each "
                    "scene's within- and between-session spread in the history, with the smallest slowdown the "
                    "gate can detect at --launches; --from-history skips the sessions. docs/regression.md.")
    calibrate.add_argument("--device", required=True, metavar="NAME", help="device from devices.yaml (required)")
    calibrate.add_argument("--history", default=default, metavar="PATH|URL", help=history_help)
    calibrate.add_argument("--runs", type=int, default=10, metavar="N",
                           help=f"A/A launches per scene and session, at least {MIN_CALIBRATION_LAUNCHES} over all sessions "
                                "(default: 10)")
    calibrate.add_argument("--frames", type=int, metavar="N", help="measured frames per launch (default: pytest's)")
    calibrate.add_argument("--warmup", type=int, metavar="N", help="warmup frames per launch (default: pytest's)")
    calibrate.add_argument("--results", metavar="DIR",
                           help="artifact folder of the A/A session (default: zbench-results/calibrate-DEVICE, so "
                                "the last run's results are kept)")
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

    check = commands.add_parser("check-runner", help="run the conformance checks against a device's runner",
                                description="Launch the device's runner through its transport with small jobs "
                                            "and judge every rule of the runner protocol (docs/runner-protocol.md); "
                                            "one line per check, exit 1 on any failure.")
    check.add_argument("--device", required=True, metavar="NAME", help="device from the inventory (required)")
    check.add_argument("--devices", default="devices.yaml", metavar="PATH",
                       help="the inventory (default: devices.yaml)")
    check.add_argument("--features", metavar="F,F",
                       help="check only these display-list features (default: every feature the probe lists)")
    check.add_argument("--json", metavar="FILE", help="also write the report as JSON to FILE")
    check.add_argument("--scenes", default="scenes", metavar="DIR",
                       help="scene files whose scenes (and cross-backend tolerances) check the features "
                            "(default: scenes; the kit's own scenes cover what they do not)")
    check.add_argument("--goldens", default="goldens", metavar="DIR",
                       help="golden folder whose software goldens are the reference (default: goldens)")
    check.add_argument("--keep", metavar="DIR", help="keep every launch's job and output files in DIR (new or empty)")

    report = commands.add_parser("report", help="re-render report.html and the Chrome traces of a run.json",
                                 description="Write report.html (and each scene's <device>/<scene>.trace.json) "
                                             "again from a results folder's run.json and its CSVs: after an "
                                             "upgrade of pytest-zbench, or for a run.json copied from CI.")
    report.add_argument("run", metavar="RUN.json", help="a run.json inside its results folder")
    add_out_option(report, metavar="FILE", help="where the report goes (default: report.html beside RUN.json)")

    compare = commands.add_parser("compare", help="two runs (run.json or results folders), B judged against A",
                                  description="Every scene both runs measured, B (the candidate) judged against A "
                                              "by the regression gate as --zbench-baseline=A.json would; exit 1 "
                                              "when a scene regressed.")
    compare.add_argument("a", metavar="A", help="the baseline: a run.json, or a results folder holding one")
    compare.add_argument("b", metavar="B", help="the candidate: a run.json, or a results folder holding one")
    compare.add_argument("--threshold", type=float, default=GateConfig().threshold, metavar="FRACTION",
                         help=f"smallest slowdown that counts (default: {GateConfig().threshold:g})")
    compare.add_argument("--fail-on", action="append", default=[], metavar="METRIC:PCT",
                         help="also fail (exit 1) a scene whose median launch is worse than A's by more than PCT on "
                              "METRIC, e.g. cpu_ms.p50:10%% (repeatable): a fixed threshold for two one-off runs, "
                              "which the gate alone cannot call regressed (docs/regression.md, \"zbench compare\")")
    compare.add_argument("-v", "--verbose", action="store_true", help="each scene's full verdict message too")

    kit = commands.add_parser("kit", help="where the C runner kit this host ships is, and what it speaks",
                              description="The C runner kit (docs/native-runner.md) inside this installation: an "
                                          "engine builds its runner against it, so the runner speaks the protocol "
                                          "of the host that measures it. Without an option: its folder, protocol "
                                          "and how to include it in a Makefile.")
    kit_shown = kit.add_mutually_exclusive_group()
    kit_shown.add_argument("--path", action="store_const", dest="kit_show", const="path",
                       help="print the kit's folder only (for `KIT := $(shell zbench kit --path)`)")
    kit_shown.add_argument("--protocol", action="store_const", dest="kit_show", const="protocol",
                       help="print the runner protocol version the kit speaks")
    kit_shown.add_argument("--pkg-config", action="store_const", dest="kit_show", const="pkg-config",
                       help="print a pkg-config file (zbench-kit.pc) for the kit")

    devices = commands.add_parser("devices", help="the inventory: each device, reached and probed",
                                  description="List each device of the inventory with its transport, backend and "
                                              "runner, reach it and probe its runner; exit 1 when one is not "
                                              "reachable or lacks its backend.")
    devices.add_argument("--devices", default="devices.yaml", metavar="PATH", help="the inventory (default: devices.yaml)")
    devices.add_argument("--device", action="append", metavar="NAME", help="only this device (repeatable)")
    devices.add_argument("--no-probe", action="store_true", help="list the inventory without reaching any device")

    from .lab.commands import add_commands

    add_commands(commands)  # matrix, summary, leg: each sets `run`
    from .golden.review import add_commands as add_goldens_commands

    add_goldens_commands(commands)  # goldens accept|reject: sets `run`
    from .run_archive import add_commands as add_runs_command

    add_runs_command(commands)  # runs: sets `run`
    from .publish.command import add_commands as add_publish_command

    add_publish_command(commands, history_default=default, history_help=history_help, metric=_metric,  # publish
                        sig_level=_sig_level, count=_count)

    from .engine.commands import add_commands as add_engine_commands

    add_engine_commands(commands)  # deploy: sets `run`
    from .side_by_side.command import add_commands as add_engines_command

    add_engines_command(commands)  # engines: sets `run`
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # `zbench history | head`: the reader left. Quietly, and with no second error when Python flushes
        # stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILED


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "report":
        return _report(args)
    if args.command == "compare":
        return _compare(args)
    if args.command == "devices":
        return _devices(args)
    if args.command == "kit":
        return _kit(args)
    if hasattr(args, "run"):
        return int(args.run(args))
    if args.command == "history":
        return _history(args)
    if args.command == "check-runner":
        return _check_runner(args)
    return _calibrate(args)


def project_history(start: Path) -> str:
    """The nearest .zbench/history.sqlite in `start` or a folder above it; the one in `start` if none is."""
    from .regression.history import DEFAULT_HISTORY_PATH

    for folder in (start, *start.parents):
        if (folder / DEFAULT_HISTORY_PATH).is_file():
            return str(folder / DEFAULT_HISTORY_PATH)
    return DEFAULT_HISTORY_PATH


SERIES_STATS = (*PERCENTILE_NAMES, "max", "min", "mean", "stddev", "mad")
LAUNCH_SCALARS = ("jank", "severe_jank", "jank_share", "longest_stall_ms", "first_frame_ms", "warmup_ms")


def _metric(text: str) -> str:
    """A per-launch statistic: SERIES.STAT (cpu_ms.p50) or a launch's scalar (jank_share); else a usage error."""
    from .stats import METRICS

    series, _, stat = text.partition(".")
    if (series in METRICS and stat in SERIES_STATS) or (not stat and text in LAUNCH_SCALARS):
        return text
    known = f"{', '.join(f'{m}.STAT' for m in METRICS)} with STAT one of {', '.join(SERIES_STATS)}; or " \
            f"{', '.join(LAUNCH_SCALARS)}"
    raise argparse.ArgumentTypeError(f"unknown metric {text!r}: use {known}")


def _sig_level(text: str) -> float:
    """A significance level: a probability strictly between 0 and 1 (nan, 7 and -1 are not); else a usage error."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < 1:  # false for nan too
        raise argparse.ArgumentTypeError(f"{text!r} is not a significance level: give a probability between 0 and 1, "
                                         "such as 0.05")
    return value


def _count(text: str) -> int:
    """A count of at least 1; else a usage error."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of at least 1")
    return value


def _compare(args: argparse.Namespace) -> int:
    from .regression.baseline import BaselineFileError, read_run_file
    from .regression.compare_runs import FailOn, compare_runs, lines
    from .results_folder import RunJsonNotFound, run_json_path

    try:
        fail_on = tuple(FailOn.parse(text) for text in args.fail_on)
    except ValueError as exc:
        print(f"zbench compare: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        path_a, path_b = run_json_path(Path(args.a)), run_json_path(Path(args.b))
        a, b = read_run_file(path_a), read_run_file(path_b)
    except (RunJsonNotFound, BaselineFileError) as exc:
        print(f"zbench compare: {exc}", file=sys.stderr)
        return EXIT_USAGE
    result = compare_runs(a, path_a, b, GateConfig(threshold=args.threshold), fail_on)
    print(f"A: {path_a} (run {str(a.get('run_id', '?'))[:8]})   B: {path_b} (run {str(b.get('run_id', '?'))[:8]})")
    for line in lines(result):
        print(line)
    if args.verbose:
        for scene in result.scenes:
            print(f"\n{scene.device}/{scene.scene}:\n{scene.message}")
    if result.nothing_judged:  # a pass would claim a comparison that was never made
        print(f"zbench compare: no scene of {path_b} compares with {path_a} (each is named above with how it "
              "was measured differently): nothing was judged", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_FAILED if result.regressed else EXIT_OK


def _devices(args: argparse.Namespace) -> int:
    from .errors import ZbenchError
    from .host.devices.device import Device
    from .inventory import load_inventory
    from .transports import make_transport

    try:
        inventory = load_inventory(args.devices)
        specs = [inventory.get(name) for name in args.device] if args.device else list(inventory.devices.values())
    except ZbenchError as exc:
        print(f"zbench devices: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(f"{len(specs)} device(s) in {inventory.path}")
    unreachable = 0
    for spec in specs:
        print(f"{spec.name}: {spec.transport}, backend {spec.backend}, runner {' '.join(spec.runner)}")
        if args.no_probe:
            continue
        device = Device(spec, make_transport(spec))
        try:
            probe = device.probe()
        except ZbenchError as exc:
            unreachable += 1
            print(f"  not reachable: {str(exc).splitlines()[0]}")
            continue
        finally:
            device.close()
        backend = probe.backends.get(spec.backend)
        machine = f", on {probe.machine.arch}" if probe.machine else ""
        print(f"  reachable: runner {probe.runner_name} {probe.runner_version}{machine}; backends "
              f"{', '.join(sorted(probe.backends))}")
        if backend is None:
            unreachable += 1
            print(f"  the runner does not offer backend {spec.backend}")
        else:
            renderer = backend.info.get("gl_renderer") or backend.info.get("renderer") or ""
            print(f"  {spec.backend}: {len(backend.features)} feature(s), timer sources "
                  f"{', '.join(backend.timer_sources) or 'none'}{'; ' + str(renderer) if renderer else ''}")
    return EXIT_FAILED if unreachable else EXIT_OK


def _report(args: argparse.Namespace) -> int:
    import json

    from .host.report.chrome_trace import write_traces
    from .host.report.html import write_report
    from .host.run_record import validate_run

    run = Path(args.run)
    try:
        document = json.loads(run.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"zbench report: cannot read {run}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    errors = validate_run(document) if isinstance(document, dict) else ["not a JSON object"]
    if errors:
        print(f"zbench report: {run} is not a run.json of this version: " + "; ".join(errors[:3]), file=sys.stderr)
        return EXIT_USAGE
    results = run.resolve().parent  # run.json's paths are relative to its folder
    traces = write_traces(document, results)
    out = write_report(document, results, Path(args.out) if args.out else results / "report.html")
    print(f"report: {out}; {len(traces)} trace(s) beside the frames CSVs")
    return EXIT_OK


def _version_line() -> str:
    from . import __version__
    from .protocol.vocabulary import PROTOCOL_VERSION

    return f"zbench {__version__} (pytest-zbench; runner protocol {PROTOCOL_VERSION})"


def _kit(args: argparse.Namespace) -> int:
    from . import __version__
    from .errors import UsageError
    from .kit_files import kit_dir, kit_protocol, pkg_config

    try:
        kit = kit_dir()
        protocol = kit_protocol(kit)
    except UsageError as exc:
        print(f"zbench kit: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.kit_show == "path":
        print(kit)
    elif args.kit_show == "protocol":
        print(protocol)
    elif args.kit_show == "pkg-config":
        print(pkg_config(kit, __version__), end="")
    else:
        print(f"C runner kit of pytest-zbench {__version__}: {kit}")
        print(f"  speaks runner protocol {protocol}")
        print("  in a Makefile:  KIT := $(shell zbench kit --path)")
        print("                  include $(KIT)/kit.mk      # then compile $(KIT_SRC) with -I$(KIT_DIR)")
    return EXIT_OK


def _check_runner(args: argparse.Namespace) -> int:
    import json

    from .conformance import check_runner, parse_features
    from .errors import DeviceError, UsageError
    from .inventory import load_inventory

    try:
        spec = load_inventory(args.devices).get(args.device)
        features = parse_features(args.features)
        report = check_runner(spec, features=features, scenes_dir=Path(args.scenes), goldens_dir=Path(args.goldens),
                              keep=args.keep, note=lambda what: print(f"  ... {what}", file=sys.stderr, flush=True))
    except UsageError as exc:
        print(f"zbench check-runner: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except DeviceError as exc:
        print(f"zbench check-runner: {exc}", file=sys.stderr)
        return EXIT_FAILED
    for line in report.lines():
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")
        print(f"report written to {args.json}")
    return EXIT_OK if report.passed else EXIT_FAILED


def _location(command: str, value: str, *, must_exist: bool = True) -> HistoryLocation | None:
    """The history a command names; None (after saying why on stderr) when it is no usable location."""
    try:
        location = parse_location(value)
    except ValueError as exc:
        print(f"zbench {command}: --history: {exc}", file=sys.stderr)
        return None
    if must_exist and location.path is not None and not location.path.is_file():
        print(f"zbench {command}: no history database at {location}; perf runs write one there "
              "(or pass --history PATH|URL)", file=sys.stderr)
        return None
    return location


def _history(args: argparse.Namespace) -> int:
    from .regression.history import HistoryError

    if args.action in HISTORY_MARKS and not args.file:
        print(f"zbench history {args.action}: give the RUN to {args.action} (run.json's history.run_id, or its "
              "start)", file=sys.stderr)
        return EXIT_USAGE
    if args.action != "show" and not args.file:
        print(f"zbench history {args.action}: give the FILE to {args.action} "
              f"{'to' if args.action == 'export' else 'from'}", file=sys.stderr)
        return EXIT_USAGE
    location = _location("history", args.history, must_exist=args.action != "import")  # import may create it
    if location is None:
        return EXIT_USAGE
    try:
        if args.action == "show":
            return _show(args, location)
        if args.action in HISTORY_MARKS:
            return _mark(args, location)
        return _transfer(args, location)
    except HistoryError as exc:
        print(f"zbench history: {exc}", file=sys.stderr)
        return EXIT_FAILED


# `zbench history ACTION RUN`: the level it gives the run's scenes (regression/store.py LEVELS; None undoes).
HISTORY_MARKS = {"accept": "accepted", "exclude": "excluded", "unmark": None}


def _mark(args: argparse.Namespace, location: HistoryLocation) -> int:
    from .regression.history import History

    with History(location) as history:
        marked = history.set_level(args.file, HISTORY_MARKS[args.action], scene_id=args.scene)
    if not marked:
        print(f"zbench history {args.action}: no scene of a run {args.file!r}"
              f"{f' named {args.scene!r}' if args.scene else ''} in {location}: give run.json's history.run_id",
              file=sys.stderr)
        return EXIT_USAGE
    done = {"accept": "accepted as the new level", "exclude": "excluded from every baseline",
            "unmark": "unmarked"}[args.action]
    print(f"{marked} scene(s) of run {args.file}{f' ({args.scene})' if args.scene else ''} {done}")
    return EXIT_OK


def _show(args: argparse.Namespace, location: HistoryLocation) -> int:
    from .regression.changepoints import change_points
    from .regression.history import History

    with History(location) as history:
        keys = history.scene_keys(device=args.device, scene_id=args.scene)
        if not keys:
            what = " and ".join(f"{name} {value!r}" for name, value in
                                (("device", args.device), ("scene", args.scene)) if value)
            print(f"no runs{' of ' + what if what else ''} in {location}")
            return EXIT_OK
        for key in keys:
            runs = history.runs_of(key, limit=args.last)
            points = [(run, run.median(args.metric)) for run in runs]
            steps = change_points([value for _, value in points], sig_level=args.sig_level)
            _print_series(key.describe(), args.metric, points, steps)
    return EXIT_OK


def _transfer(args: argparse.Namespace, location: HistoryLocation) -> int:
    from .regression.history import History
    from .regression.transfer import copy_history

    exporting = args.action == "export"
    file = _location(f"history {args.action}", args.file, must_exist=not exporting)
    if file is None:
        return EXIT_USAGE
    if exporting and file.path is not None and file.path.exists():
        print(f"zbench history export: {file} exists; export writes a new file: remove it, or name another "
              "(`zbench history import` adds runs to an existing history)", file=sys.stderr)
        return EXIT_USAGE
    source, target = (location, file) if exporting else (file, location)
    if str(source) == str(target):
        print(f"zbench history {args.action}: {source} is both the source and the target", file=sys.stderr)
        return EXIT_USAGE

    def progress(done: int, total: int) -> None:
        if done == total or done % 100 == 0:
            print(f"  {done}/{total} run(s)", flush=True)

    with History(source) as origin, History(target) as destination:
        print(f"copying {source} -> {target}", flush=True)
        report = copy_history(origin, destination, progress)
    print(f"{args.action}ed: {report.describe()}")
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
    from .regression.changepoints import latest_outside

    outlier = latest_outside([value for _, value in points])
    if outlier is not None:
        # A step in the newest run is beyond the change-point test until min_size runs follow it.
        print(f"  latest run #{len(points) - 1} is outside the series' spread: x{outlier.ratio:.3f} "
              f"({outlier.ratio - 1:+.1%}) against the median of the {outlier.earlier} run(s) before it, robust z "
              f"{outlier.z:.3g}; the change-point test sees a step only once 3 runs follow it")
    print()


def _calibrate(args: argparse.Namespace) -> int:
    from .regression.calibrate import calibrate_from_runs, describe
    from .regression.history import History, HistoryError

    try:
        ns = tuple(int(n) for n in args.launches.split(","))
        config = GateConfig(alpha=args.alpha)
    except ValueError as exc:
        print(f"zbench calibrate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not args.from_history and args.sessions * args.runs < MIN_CALIBRATION_LAUNCHES:
        print(f"zbench calibrate: --sessions {args.sessions} x --runs {args.runs}: a noise floor needs at least "
              f"{MIN_CALIBRATION_LAUNCHES} A/A launches per scene over all sessions (docs/regression.md)",
              file=sys.stderr)
        return EXIT_USAGE
    for name in ("frames", "warmup"):
        value = getattr(args, name)
        if value is not None and value < (1 if name == "frames" else 0):
            print(f"zbench calibrate: --{name} {value}: must be at least {1 if name == 'frames' else 0}",
                  file=sys.stderr)
            return EXIT_USAGE
    if _location("calibrate", args.history, must_exist=args.from_history) is None:
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
    location = _location("calibrate", args.history)
    if location is None:
        return EXIT_FAILED
    try:
        with History(location) as history:
            report = calibrate_from_runs(history, args.device, args.scene, ns=ns, power=args.power, config=config)
    except HistoryError as exc:
        print(f"zbench calibrate: {exc}", file=sys.stderr)
        return EXIT_FAILED
    for calibration in report.calibrations:
        print(describe(calibration))
    for note in report.notes:
        print(f"note: {note}")
    print(f"{len(report.calibrations)} calibration(s) stored in {location}")
    return EXIT_OK if report.calibrations else EXIT_FAILED


def _run_aa(args: argparse.Namespace, session: int) -> int:
    command = [sys.executable, "-m", "pytest", f"--zbench-device={args.device}", f"--zbench-runs={args.runs}",
               "--zbench-calibrate"]
    env = dict(os.environ)
    try:
        location = parse_location(args.history)
    except ValueError:
        location = None  # reported after the run, by _location
    if location is not None and not location.is_file:
        env[HISTORY_ENV] = args.history  # a URL may carry a password: never on a command line
    else:
        command.append(f"--zbench-history={args.history}")
    if args.frames is not None:
        command.append(f"--zbench-frames={args.frames}")
    if args.warmup is not None:
        command.append(f"--zbench-warmup={args.warmup}")
    command.append(f"--zbench-results={args.results or Path('zbench-results') / f'calibrate-{args.device}'}")
    if args.keyword:
        command += ["-k", args.keyword]
    print(f"running A/A session {session + 1} of {args.sessions}: " + " ".join(command), flush=True)
    return subprocess.call(command, env=env)


if __name__ == "__main__":
    sys.exit(main())
