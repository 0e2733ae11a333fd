"""The engine's `zbench` subcommands (docs/engine-ci.md):

    zbench deploy --device NAME BUILD [--entry FILE] [--keep N] [--expect-build ID] [--root DIR] [--json FILE]
    zbench deploy --device NAME --list | --remove HASH
    zbench bisect GOOD BAD --device NAME --build CMD --artifact PATH [--repo DIR] [--project DIR] [--pixels]
                  [--speed] [--scene ID ...] [--keep-builds] [--out DIR] [--pytest-args ARGS]
                  [--max-launches N] [--budget MINUTES]
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from typing import Any

from ..command_options import add_out_option
from ..errors import ZbenchError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_commands(commands: Any) -> None:
    """Register the subcommands on the `zbench` parser's subparsers; each sets its handler as `run`."""
    from .ab_attempts import DEFAULT_BUDGET_MIN, DEFAULT_CAP
    from .deploy import DEFAULT_KEEP
    from .steps import DEFAULT_BUILD_TIMEOUT_MIN

    deploy = commands.add_parser(
        "deploy", help="put a built runner on a device in a folder named by its content hash, probe it, prune",
        description="Push BUILD (a runner binary, or a folder holding one) into <workdir>/builds/<hash> on the "
                    "device, check each file's SHA-256 there, probe the runner, point <workdir>/builds/current "
                    "at it and keep the newest --keep builds. A device's runner names it as {deployed} "
                    "(docs/engine-ci.md).")
    deploy.add_argument("build", nargs="?", metavar="BUILD", help="the runner: a file, or a folder holding it")
    deploy.add_argument("--device", required=True, metavar="NAME", help="the device in the inventory")
    deploy.add_argument("--devices", default="devices.yaml", metavar="PATH", help="the inventory (default: devices.yaml)")
    deploy.add_argument("--entry", metavar="FILE", help="the runner's executable inside a BUILD folder (default: "
                                                        "the folder's only executable file at its top)")
    deploy.add_argument("--keep", type=int, default=DEFAULT_KEEP, metavar="N",
                        help=f"builds kept on the device, this one included (default: {DEFAULT_KEEP})")
    deploy.add_argument("--expect-build", metavar="ID", help="fail unless the runner's probe reports this build "
                                                             "id (default: any)")
    deploy.add_argument("--root", metavar="DIR", help="device folder of the builds (default: the device's "
                                                      "workdir/builds)")
    deploy.add_argument("--json", metavar="FILE", help="also write what was deployed as JSON to FILE")
    deploy.add_argument("--list", action="store_true", help="list the builds on the device, newest first")
    deploy.add_argument("--remove", metavar="HASH", help="remove this build from the device (not the current "
                                                        "one, unless --force)")
    deploy.add_argument("--force", action="store_true", help="with --remove: remove the current build too, and the "
                                                             "`current` link with it")
    deploy.set_defaults(run=_deploy)

    bisect = commands.add_parser(
        "bisect", help="find the engine commit that slowed a scene (interleaved A/B) or changed its pixels",
        description="Check out each step of GOOD..BAD of the engine repository in a temporary worktree, build it "
                    "with --build, deploy it to the device, and judge it by interleaved A/B against the ends "
                    "(speed) or by its capture digests (pixels). Prints each scene's culprit commit with its "
                    "effect, or the range still open; writes bisect.json and bisect.md (docs/engine-ci.md).")
    bisect.add_argument("good", metavar="GOOD", help="a commit without the change")
    bisect.add_argument("bad", metavar="BAD", help="a later commit with it")
    bisect.add_argument("--device", required=True, metavar="NAME", help="the device in the inventory")
    bisect.add_argument("--devices", default="devices.yaml", metavar="PATH", help="the inventory (default: devices.yaml)")
    bisect.add_argument("--repo", default=".", metavar="DIR", help="the engine repository (default: .)")
    bisect.add_argument("--build", required=True, metavar="CMD",
                        help="the build command, run in each commit's checkout; split like a shell command line "
                             "but run without a shell (wrap it in `sh -c '...'` for pipes)")
    bisect.add_argument("--artifact", required=True, metavar="PATH",
                        help="what the build makes, relative to the checkout: the runner or its folder")
    bisect.add_argument("--entry", metavar="FILE", help="the runner's executable inside an --artifact folder")
    bisect.add_argument("--project", default=".", metavar="DIR",
                        help="the folder pytest runs the suite in (its scenes, conftest, ini) (default: .)")
    bisect.add_argument("--speed", action="store_true", help="bisect slowdowns only (default: both)")
    bisect.add_argument("--pixels", action="store_true", help="bisect pixel changes only (default: both)")
    bisect.add_argument("--scene", action="append", default=[], metavar="ID",
                        help="only this scene, repeatable (default: every scene that changed between the ends)")
    bisect.add_argument("--keep-builds", action="store_true",
                        help="leave the bisect's builds on the device (default: they are removed at the end)")
    add_out_option(bisect, default="zbench-bisect", metavar="DIR", old=("--report",),
                   help="folder for bisect.json and bisect.md (default: zbench-bisect)")
    bisect.add_argument("--pytest-args", default="", metavar="ARGS",
                        help="arguments for each pytest session, one string split like a shell command line, such "
                             "as '-k blur --zbench-runs=6' (default: none)")
    bisect.add_argument("--build-timeout", type=float, default=DEFAULT_BUILD_TIMEOUT_MIN, metavar="MINUTES",
                        help="a build still running after this long is stopped and its commit skipped "
                             f"(default: {DEFAULT_BUILD_TIMEOUT_MIN:g})")
    bisect.add_argument("--max-launches", type=int, default=DEFAULT_CAP, metavar="N",
                        help="an A/B left inconclusive is tried again with twice the launches per side, up to N "
                             f"(default: {DEFAULT_CAP})")
    bisect.add_argument("--budget", type=float, default=DEFAULT_BUDGET_MIN, metavar="MINUTES",
                        help="no retry is started that would end after the bisect has run this long "
                             f"(default: {DEFAULT_BUDGET_MIN:g})")
    bisect.set_defaults(run=_bisect)


def _deploy(args: argparse.Namespace) -> int:
    from ..inventory import load_inventory
    from ..transports import make_transport
    from .deploy import DeviceFiles, DeviceLock, deploy, hash_build, remove_build, resolve_root

    if sum(bool(x) for x in (args.build, args.list, args.remove)) != 1:
        print("zbench deploy: give one of BUILD, --list or --remove HASH", file=sys.stderr)
        return EXIT_USAGE
    if args.force and not args.remove:
        print("zbench deploy: --force goes with --remove HASH (removing the current build)", file=sys.stderr)
        return EXIT_USAGE
    try:
        spec = load_inventory(args.devices).get(args.device)
        root = resolve_root(spec, args.root)
        build = hash_build(args.build, args.entry) if args.build else None
    except ZbenchError as exc:
        print(f"zbench deploy: {exc}", file=sys.stderr)
        return EXIT_USAGE
    transport = make_transport(spec)
    try:
        transport.open()
        if args.list:
            on_device = DeviceFiles(spec.name, transport)
            current = on_device.current(root)
            for name in on_device.builds_newest_first(root):
                print(f"{name}{'  (current)' if name == current else ''}")
            return EXIT_OK
        if args.remove:
            on_device = DeviceFiles(spec.name, transport)
            with DeviceLock(on_device, root):
                was_current = on_device.current(root) == args.remove
                removed = remove_build(on_device, root, args.remove, allow_current=args.force)
            print(f"{'removed' if removed else 'not on the device:'} {args.remove}"
                  + (" and the `current` link: no build is current now" if removed and was_current else ""))
            return EXIT_OK if removed else EXIT_FAILED
        assert build is not None
        print(f"zbench deploy: {build.source} ({len(build.files)} file(s)) is build {build.content_hash}", flush=True)
        done = deploy(spec, transport, build, root=args.root, keep=args.keep, expect_build=args.expect_build,
                      progress=lambda line: print(f"zbench deploy: {line}", flush=True))
    except ZbenchError as exc:
        print(f"zbench deploy: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        transport.close()
    print(f"{done.content_hash} {done.folder} build {done.build_id or '-'}{' DIRTY' if done.build_dirty else ''}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(done.to_dict(), f, indent=1)
            f.write("\n")
    return EXIT_OK


class _Stopped(KeyboardInterrupt):
    """SIGTERM (a cancelled CI job, `timeout`) turned into an exception, so that the bisect unwinds as on
    SIGINT: its children stopped, its worktrees, temporary folder and builds removed, its report written."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _bisect(args: argparse.Namespace) -> int:
    import shlex
    import shutil
    import subprocess
    from pathlib import Path

    from ..inventory import load_inventory
    from ..transports import make_transport
    from .ab_attempts import RetryPolicy, first_design
    from .bisect import Bisector, clean_scratch, write_report
    from .steps import Builds, Suite, commits_between, make_scratch

    def progress(line: str) -> None:
        print(f"zbench bisect: {line}", flush=True)

    try:
        pytest_args = shlex.split(args.pytest_args)
        build_argv = shlex.split(args.build)
        if not build_argv:
            raise ValueError("empty")
    except ValueError as exc:
        print(f"zbench bisect: --build or --pytest-args is not a command line ({exc})", file=sys.stderr)
        return EXIT_USAGE
    if "/" not in build_argv[0] and shutil.which(build_argv[0]) is None:
        print(f"zbench bisect: --build: {build_argv[0]!r} is not a command on PATH; give the build command, such "
              "as \"make runner\" or \"./build.sh\" (a path is taken in each commit's checkout)", file=sys.stderr)
        return EXIT_USAGE
    for name, value in (("--budget", args.budget), ("--build-timeout", args.build_timeout)):
        if not 0 < value < float("inf"):
            print(f"zbench bisect: {name} {value:g} must be a positive number of minutes", file=sys.stderr)
            return EXIT_USAGE
    if args.max_launches < 4:
        print(f"zbench bisect: --max-launches {args.max_launches} must be at least 4 (the sequential gate's first "
              "look)", file=sys.stderr)
        return EXIT_USAGE
    policy = RetryPolicy(first_design(pytest_args), cap=args.max_launches, budget_min=args.budget)
    try:
        spec = load_inventory(args.devices).get(args.device)
        repo = Path(args.repo).resolve()
        commits = commits_between(repo, args.good, args.bad)
    except ZbenchError as exc:
        print(f"zbench bisect: {exc}", file=sys.stderr)
        return EXIT_USAGE
    progress(f"{len(commits)} commits from {commits[0].short} to {commits[-1].short} on {spec.name}")
    wanted = [kind for kind in ("speed", "pixels") if getattr(args, kind)] or ["speed", "pixels"]
    searches: dict[str, dict[str, str]] = {kind: {"status": "not run"} for kind in wanted}
    previous = _on_sigterm_raise()
    scratch = make_scratch()
    transport = make_transport(spec)
    removed: list[str] = []
    left: dict[str, str] = {}
    bisector: Bisector | None = None
    builds: Builds | None = None
    failure: str | None = None  # why the bisect ended before its searches did
    stopped: int | None = None  # the signal that stopped it
    running: str | None = None  # the search under way
    try:
        try:
            transport.open()
            builds = Builds(repo, build_argv, args.artifact, args.entry, spec, transport, scratch, progress,
                            timeout_min=args.build_timeout)
            bisector = Bisector(commits, builds, Suite(Path(args.project).resolve(), tuple(pytest_args)),
                                spec.name, scratch, progress, policy)
            for end in (commits[0], commits[-1]):
                if not bisector.usable(end):
                    failure = (f"{end.short} ({end.subject}) could not be built, and an end cannot be skipped: "
                               f"{(bisector.built(end).failure or '').splitlines()[0][:300]}")
                    break
            for kind in wanted if failure is None else ():
                # Each search on its own: one that fails (a session refused, the device lost) keeps the other's
                # findings, and is said in the report.
                running = kind
                try:
                    bisector.speed(args.scene) if kind == "speed" else bisector.pixels(args.scene)
                    searches[kind] = {"status": "done"}
                except (ZbenchError, OSError) as exc:
                    searches[kind] = {"status": "failed", "error": _one_line(exc)}
                    failure = f"the {kind} search failed: {_one_line(exc)}"
                    print(f"zbench bisect: {failure}", file=sys.stderr)
                    partial = bisector.stopped_finding(f"its session failed: {_one_line(exc)}")
                    if partial is not None:
                        bisector.findings.append(partial)
                        bisector.current = None
            running = None
        except (ZbenchError, OSError) as exc:
            failure = _one_line(exc)
        except KeyboardInterrupt as exc:
            stopped = exc.signum if isinstance(exc, _Stopped) else signal.SIGINT
            if running is not None:
                searches[running] = {"status": "stopped", "error": f"stopped by {signal.Signals(stopped).name}"}
            partial = bisector.stopped_finding(signal.Signals(stopped).name) if bisector is not None else None
            if bisector is not None and partial is not None:
                bisector.findings.append(partial)
                bisector.current = None
        finally:
            # A second signal now would leave builds and worktrees behind: cleaning up takes seconds.
            _ignore_signals()
            if builds is not None:
                removed, left = builds.remove_all(args.keep_builds)
            transport.close()
            clean_scratch(scratch)
            subprocess.run(["git", "-C", str(repo), "worktree", "prune"], capture_output=True, check=False)
    finally:
        _restore_signals(previous)
    if failure and not (bisector and bisector.findings):
        print(f"zbench bisect: {failure}", file=sys.stderr)
    if stopped is not None:
        print(f"zbench bisect: stopped by {signal.Signals(stopped).name}; the report holds every step judged so far",
              file=sys.stderr)
    if bisector is None:
        return EXIT_FAILED if stopped is None else 128 + stopped
    built = builds.built.values() if builds is not None else []
    skipped = [b for b in built if b.deployed is None]
    for b in skipped:
        print(f"skipped {b.commit.short} {b.commit.subject}: {(b.failure or '').splitlines()[0][:200]}")
    findings = bisector.findings
    for finding in findings:
        print(finding.line())
    if bisector.undecided:
        print(f"not bisected, inconclusive between the ends after their retries: {', '.join(bisector.undecided)}; "
              "a larger --max-launches or --budget, or a quieter device, may decide them (bisect.md lists each "
              "attempt)")
    elif not findings and failure is None and stopped is None:
        print("no scene regressed or changed its pixels between the two ends")
    for name, why in left.items():
        print(f"build {name} of this bisect is still on {spec.name} ({why}): remove it with "
              f"`zbench deploy --device {spec.name} --remove {name}`", file=sys.stderr)
    not_bisected = [{"scene": scene, **bisector.pair_record(commits[0], commits[-1], scene)}
                    for scene in bisector.undecided]
    json_path, md_path = write_report(findings, commits, skipped, removed, Path(args.out), not_bisected,
                                      searches, left)
    print(f"report: {json_path}, {md_path}")
    if stopped is not None:
        return 128 + stopped
    # Found: every finding a culprit. A scene left undecided at the ends is said above; alone it is no finding.
    found = bool(findings) and all(f.status == "culprit" for f in findings)
    if failure is not None:
        return EXIT_FAILED
    return EXIT_OK if found or (not findings and not bisector.undecided) else EXIT_FAILED


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:600] or type(exc).__name__


_HANDLED = (signal.SIGTERM, signal.SIGINT)


def _on_sigterm_raise() -> dict[int, Any] | None:
    """SIGTERM raises _Stopped (SIGINT raises KeyboardInterrupt already); the previous handlers, or None off
    the main thread, where Python allows no handler."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def stop(signum: int, _frame: object) -> None:
        raise _Stopped(signum)

    previous: dict[int, Any] = {sig: signal.getsignal(sig) for sig in _HANDLED}
    signal.signal(signal.SIGTERM, stop)
    return previous


def _ignore_signals() -> None:
    if threading.current_thread() is threading.main_thread():
        for sig in _HANDLED:
            signal.signal(sig, signal.SIG_IGN)


def _restore_signals(previous: dict[int, Any] | None) -> None:
    for sig, handler in (previous or {}).items():
        signal.signal(sig, handler)
