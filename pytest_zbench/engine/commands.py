"""The engine's `zbench` subcommands (docs/engine-ci.md):

    zbench deploy --device NAME BUILD [--entry FILE] [--keep N] [--expect-build ID] [--root DIR] [--json FILE]
    zbench deploy --device NAME --list | --remove HASH
    zbench bisect GOOD BAD --device NAME --build CMD --artifact PATH [--repo DIR] [--project DIR] [--pixels]
                  [--speed] [--scene ID ...] [--keep-builds] [--report DIR] [--pytest-args ARGS]
                  [--max-launches N] [--budget MINUTES]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import ZbenchError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_commands(commands: Any) -> None:
    """Register the subcommands on the `zbench` parser's subparsers; each sets its handler as `run`."""
    from .ab_attempts import DEFAULT_BUDGET_MIN, DEFAULT_CAP
    from .deploy import DEFAULT_KEEP

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
    deploy.add_argument("--remove", metavar="HASH", help="remove this build from the device")
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
    bisect.add_argument("--report", default="zbench-bisect", metavar="DIR",
                        help="folder for bisect.json and bisect.md (default: zbench-bisect)")
    bisect.add_argument("--pytest-args", default="", metavar="ARGS",
                        help="arguments for each pytest session, one string split like a shell command line, such "
                             "as '-k blur --zbench-runs=6' (default: none)")
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
    from .deploy import DeviceFiles, deploy, hash_build, remove_build, resolve_root

    if sum(bool(x) for x in (args.build, args.list, args.remove)) != 1:
        print("zbench deploy: give one of BUILD, --list or --remove HASH", file=sys.stderr)
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
            removed = remove_build(DeviceFiles(spec.name, transport), root, args.remove)
            print(f"{'removed' if removed else 'not on the device:'} {args.remove}")
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
    print(f"{done.content_hash} {done.folder} build {done.build_id or '-'}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(done.to_dict(), f, indent=1)
            f.write("\n")
    return EXIT_OK


def _bisect(args: argparse.Namespace) -> int:
    import shlex
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
    if args.max_launches < 4 or not 0 < args.budget < float("inf"):
        print(f"zbench bisect: --max-launches {args.max_launches} must be at least 4 (the sequential gate's first "
              f"look) and --budget {args.budget:g} a positive number of minutes", file=sys.stderr)
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
    scratch = make_scratch()
    transport = make_transport(spec)
    removed: list[str] = []
    try:
        transport.open()
        builds = Builds(repo, build_argv, args.artifact, args.entry, spec, transport, scratch, progress)
        try:
            bisector = Bisector(commits, builds, Suite(Path(args.project).resolve(), tuple(pytest_args)), spec.name,
                                scratch, progress, policy)
            for end in (commits[0], commits[-1]):
                if not bisector.usable(end):
                    print(f"zbench bisect: {end.short} ({end.subject}) could not be built, and an end cannot be "
                          f"skipped: {bisector.built(end).failure}", file=sys.stderr)
                    return EXIT_FAILED
            both = not args.speed and not args.pixels
            findings = []
            if args.speed or both:
                findings += bisector.speed(args.scene)
            if args.pixels or both:
                findings += bisector.pixels(args.scene)
        finally:
            removed = builds.remove_all(args.keep_builds)
    except ZbenchError as exc:
        print(f"zbench bisect: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        transport.close()
        clean_scratch(scratch)
        import subprocess

        subprocess.run(["git", "-C", str(repo), "worktree", "prune"], capture_output=True, check=False)
    skipped = [b for b in builds.built.values() if b.deployed is None]
    for b in skipped:
        print(f"skipped {b.commit.short} {b.commit.subject}: {(b.failure or '').splitlines()[0][:200]}")
    for finding in findings:
        print(finding.line())
    if bisector.undecided:
        print(f"not bisected, inconclusive between the ends after their retries: {', '.join(bisector.undecided)}; "
              "a larger --max-launches or --budget, or a quieter device, may decide them (bisect.md lists each "
              "attempt)")
    elif not findings:
        print("no scene regressed or changed its pixels between the two ends")
    not_bisected = [{"scene": scene, **bisector.pair_record(commits[0], commits[-1], scene)}
                    for scene in bisector.undecided]
    json_path, md_path = write_report(findings, commits, skipped, removed, Path(args.report), not_bisected)
    print(f"report: {json_path}, {md_path}")
    # Found: every finding a culprit. A scene left undecided at the ends is said above; alone it is no finding.
    found = bool(findings) and all(f.status == "culprit" for f in findings)
    return EXIT_OK if found or (not findings and not bisector.undecided) else EXIT_FAILED
