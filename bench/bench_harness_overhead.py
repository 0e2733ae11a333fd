"""Harness overhead: the wall time of a perf test over the runner's own time for the same launches.

Runs one scene as a real pytest session on the `local` device, in a scratch project (a temporary folder with
its own scene file, devices.yaml and pytest.ini, as a new user's project has), so that the session holds
nothing but that scene: no collection of this repository's own files. It then reads the test's duration from
the JUnit file and each launch's own wall time from run.json (`runner_wall_ms`, measured by the runner from
its start to its exit). Everything in between (process start, job push, pulling and validating the files,
statistics, artifacts) is the harness. Target: at most 1.03 for a 600-frame paced scene (issue #33). The
whole session's figure is printed too, without a target: it adds the interpreter's and pytest's own start,
its plugins' and the collection, which a user pays for any plugin.

The JUnit time is the test's setup, call and teardown: the setup of the first test of a session includes
the session's own start (the host's imports, opening and probing the device), which pytest's --durations
lines show apart; they are printed too.

Each checkout's package is measured as pip installs it: copied into the scratch folder and compiled to
bytecode first (pip writes the .pyc files at install). Run from a checkout under PYTHONDONTWRITEBYTECODE, every
session would compile the package's sources again (0.2-0.4 s of the first test's setup here), which no
installed copy does; `--source` measures that case instead. pytest rewrites the asserts of every module of
a plugin's package and caches its rewritten copies beside the bytecode, which the first session after an
install writes: the sessions run without PYTHONDONTWRITEBYTECODE (as a user's environment and CI's,
ci/env.sh), after one short session per checkout that is not counted. Under that variable (or with a
read-only site-packages) pytest compiles its copies again in every session, 0.4-0.6 s of the first test's
setup here (docs/architecture.md, "A scene's way through a session").

`--before DIR` measures another checkout of pytest-zbench (e.g. a `git worktree` of the previous commit) side
by side: its sessions and this checkout's alternate in one run, each on the same scratch project, so that
both see the same machine load.

A missed target is printed, not an error: this is a bench, not a timed test (exit 1 only when a session
itself fails).

    python bench/bench_harness_overhead.py [--scene fill.opaque.x1] [--runs 3] [--frames 600] [--mode paced]
                                           [--before DIR] [--sessions 1] [--source]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.03

# The scratch project's inventory: the embedded default device, its runner started by this interpreter (the
# checkout under test reaches it through PYTHONPATH).
DEVICES_YAML = """\
devices:
  local:
    transport: local
    backend: software
    device_class: host
    runner: [{python}, -m, pytest_zbench.runner]
    display: {{width: 800, height: 480, refresh_hz: 60}}
"""
PYTEST_INI = "[pytest]\ntestpaths = scenes\n"


@dataclass(frozen=True)
class Session:
    """One measured pytest session: the runner's own time and the host's views of the same launches."""

    runner_s: float
    launch_s: float
    test_s: float
    session_s: float
    phases: dict[str, float]


def scratch_project(folder: Path, scene_file: Path) -> None:
    (folder / "scenes").mkdir()
    shutil.copy(scene_file, folder / "scenes" / scene_file.name)
    (folder / "devices.yaml").write_text(DEVICES_YAML.format(python=json.dumps(sys.executable)))
    (folder / "pytest.ini").write_text(PYTEST_INI)


def installed_copy(checkout: Path, folder: Path) -> Path:
    """`checkout`'s pytest_zbench copied into `folder` and compiled to bytecode, as an install has it."""
    shutil.copytree(checkout / "pytest_zbench", folder / "pytest_zbench",
                    ignore=shutil.ignore_patterns("__pycache__"))
    if not compileall.compile_dir(folder / "pytest_zbench", quiet=1):
        raise SystemExit(f"cannot compile the copy of {checkout}'s pytest_zbench in {folder}")
    return folder


def run_session(project: Path, checkout: Path, args: argparse.Namespace, tag: str) -> Session | str:
    """One pytest session in `project` with `checkout`'s pytest_zbench first on the path; a text on failure."""
    out = project / f"out-{tag}"
    results, junit = out / "results", out / "junit.xml"
    command = [sys.executable, "-m", "pytest", "--zbench-device=local", "-k", f"perf and {args.scene}-",
               f"--zbench-runs={args.runs}", f"--zbench-frames={args.frames}", f"--zbench-warmup={args.warmup}",
               f"--zbench-mode={args.mode}", f"--zbench-results={results}", f"--junitxml={junit}",
               f"--zbench-history={out / 'history.sqlite'}", "--durations=0", "-vv", "-p", "no:cacheprovider", "-q"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(checkout), os.environ.get("PYTHONPATH")])))
    if not args.source:  # an installed package: pytest keeps its rewritten copies (module doc)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    started = time.monotonic()
    proc = subprocess.run(command, cwd=project, capture_output=True, text=True, env=env)
    session_s = time.monotonic() - started
    if proc.returncode != 0:
        return f"session of {checkout} failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    cases = [c for c in ET.parse(junit).getroot().iter("testcase") if c.get("name", "").startswith("perf[")]
    if len(cases) != 1:
        return f"expected one perf test for {args.scene}, found {len(cases)}"
    scene = json.loads((results / "run.json").read_text())["scenes"][0]
    phases = {match.group(2): float(match.group(1)) for match in
              re.finditer(r"^([0-9.]+)s (setup|call|teardown) +\S*perf\[", proc.stdout, re.MULTILINE)}
    return Session(runner_s=sum(scene["runner_wall_ms"]) / 1000.0, launch_s=sum(scene["launch_wall_s"]),
                   test_s=float(cases[0].get("time")), session_s=session_s, phases=phases)


def ratio_cell(seconds: float, runner_s: float) -> str:
    return f"{seconds:8.3f} s {seconds / runner_s:6.3f}"


def report(columns: dict[str, list[Session]]) -> None:
    """Each figure summed over a column's sessions, its ratio to the runner's time beside the target."""
    def total(sessions: list[Session], key: str) -> float:
        return sum(getattr(s, key) if key in Session.__dataclass_fields__ else s.phases.get(key, 0.0)
                   for s in sessions)

    rows = [("runner's own time (sum of launches)", "runner_s", False),
            ("launch wall time as the host saw it", "launch_s", True),
            ("perf test wall time (JUnit)", "test_s", True),
            ("  of which setup", "setup", True),
            ("  of which call", "call", True),
            ("  of which teardown", "teardown", True),
            ("whole pytest session", "session_s", True)]
    print(f"{'':40}" + "".join(f"{name:>20}" for name in columns) + "   target")
    for label, key, with_ratio in rows:
        cells = []
        for sessions in columns.values():
            runner_s = total(sessions, "runner_s")
            value = total(sessions, key)
            cells.append(ratio_cell(value, runner_s) if with_ratio else f"{value:8.3f} s       ")
        target = ""
        if key in ("test_s", "call"):
            after = next(reversed(columns.values()))
            ratio = total(after, key) / total(after, "runner_s")
            target = f"<= {TARGET:.2f} {'met' if ratio <= TARGET else 'MISSED'}"
        elif key in ("setup", "teardown"):
            target = "(share of the above)"
        elif key == "session_s":  # the interpreter's and pytest's own start: no harness target (module doc)
            target = "(with pytest's own start)"
        print(f"{label:<40}" + "".join(f"{cell:>20}" for cell in cells) + f"   {target}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", default="fill.opaque.x1")
    parser.add_argument("--scene-file", type=Path, default=None,
                        help="the scene file that holds --scene (default: scenes/<family>.yaml of this checkout)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--warmup", type=int, default=60)
    parser.add_argument("--mode", default="paced", choices=["paced", "uncapped"])
    parser.add_argument("--before", type=Path, default=None,
                        help="another checkout of pytest-zbench to measure side by side (sessions alternate)")
    parser.add_argument("--sessions", type=int, default=1, help="sessions per checkout (default: 1)")
    parser.add_argument("--source", action="store_true",
                        help="import each checkout's package in place, without compiling it first")
    args = parser.parse_args()
    scene_file = args.scene_file or ROOT / "scenes" / f"{args.scene.split('.')[0]}.yaml"
    if not scene_file.is_file():
        parser.error(f"no scene file {scene_file} for scene {args.scene!r}: name it with --scene-file")
    checkouts = {"after": ROOT}
    if args.before is not None:
        if not (args.before / "pytest_zbench" / "__init__.py").is_file():
            parser.error(f"--before {args.before}: no pytest_zbench package in that folder")
        checkouts = {"before": args.before.resolve(), "after": ROOT}
    columns: dict[str, list[Session]] = {name: [] for name in checkouts}
    load_at_start = os.getloadavg()  # the machine's load is part of the reading: printed before and after
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        scratch_project(project, scene_file)
        if not args.source:
            checkouts = {name: installed_copy(checkout, project / f"site-{name}")
                         for name, checkout in checkouts.items()}
        if not args.source:  # the first session after an install writes pytest's rewritten copies: not counted
            short = argparse.Namespace(**{**vars(args), "runs": 1, "frames": 10, "warmup": 2})
            for name, checkout in checkouts.items():
                result = run_session(project, checkout, short, f"{name}-first")
                if isinstance(result, str):
                    print(result)
                    return 1
        for round_index in range(args.sessions):
            for name, checkout in checkouts.items():
                result = run_session(project, checkout, args, f"{name}-{round_index}")
                if isinstance(result, str):
                    print(result)
                    return 1
                columns[name].append(result)
    print(f"scene {args.scene}: {args.runs} launches x ({args.warmup} warmup + {args.frames} frames), {args.mode}, "
          f"{args.sessions} session(s) per checkout, in a scratch project, the package "
          f"{'imported from source' if args.source else 'compiled as installed'}"
          f"{', PYTHONDONTWRITEBYTECODE set' if args.source and os.environ.get('PYTHONDONTWRITEBYTECODE') else ''}"
          "; load average "
          f"{', '.join(f'{v:.1f}' for v in load_at_start)} at the start, "
          f"{', '.join(f'{v:.1f}' for v in os.getloadavg())} at the end")
    report(columns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
