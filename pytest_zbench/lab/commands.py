"""The lab's `zbench` subcommands: `matrix`, `summary` and `leg` (each a parser and a function).

    zbench matrix [--devices PATH] [--device NAME ...] [--label LABEL ...] [-k EXPR] [--hosted-only]
                  [--github-output]
    zbench summary RUN.json [RUN.json ...] [--title TEXT] [--link TEXT=URL ...] [--out PATH]
    zbench leg --device NAME [--devices PATH] [-k EXPR] [-- PYTEST_ARGS ...]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..command_options import add_out_option
from ..errors import UsageError

EXIT_OK, EXIT_USAGE = 0, 2


def add_commands(commands: Any) -> None:
    """Register the subcommands on the `zbench` parser's subparsers; each sets its handler as `run`."""
    matrix = commands.add_parser("matrix", help="print the CI matrix (one leg per device with a 'ci' key) as JSON",
                                 description="Print the CI matrix as JSON: one leg per device of the inventory "
                                             "with a 'ci' key, filtered by --device and --label. README, \"Running "
                                             "a device lab\".")
    _devices_option(matrix)
    matrix.add_argument("--device", action="append", default=[], metavar="NAME",
                        help="only these devices, repeatable or comma separated (default: every device with a "
                             "'ci' key)")
    matrix.add_argument("--label", action="append", default=[], metavar="LABEL",
                        help="only legs whose runner labels include this one, repeatable (default: any)")
    matrix.add_argument("-k", dest="keyword", default="", metavar="EXPR",
                        help="pytest -k expression every leg runs with (default: the whole suite)")
    matrix.add_argument("--hosted-only", action="store_true",
                        help="only legs on GitHub-hosted runners, for a repository without the lab's "
                             "self-hosted runners (default: off)")
    matrix.add_argument("--github-output", action="store_true",
                        help="also write matrix=JSON and legs=N to the file named by $GITHUB_OUTPUT")
    matrix.set_defaults(run=_matrix)

    summary = commands.add_parser("summary", help="a Markdown summary of run.json files (for $GITHUB_STEP_SUMMARY)",
                                  description="Write the Markdown summary of one or more run.json files, regressed "
                                              "scenes first: on stdout, or appended to --out (GitHub's job "
                                              "summary).")
    summary.add_argument("runs", nargs="+", metavar="RUN.json", help="run.json files written by pytest-zbench")
    summary.add_argument("--title", default="zbench", help="heading of the summary (default: zbench)")
    summary.add_argument("--link", action="append", default=[], metavar="TEXT=URL",
                         help="a link to list under Artifacts, repeatable")
    add_out_option(summary, metavar="PATH", old=("--output",),
                   help="append to this file instead of printing, e.g. \"$GITHUB_STEP_SUMMARY\" (default: stdout)")
    summary.set_defaults(run=_summary)

    leg = commands.add_parser("leg", help="run one leg of the CI matrix as the workflow's job does "
                                          "(A/B on a pull request, the history gate otherwise)",
                              description="Run the device's leg of the CI matrix as the workflow's job does: "
                                          "A/B against the pull request's base on a pull request, the history "
                                          "gate otherwise; pytest arguments after --.")
    leg.add_argument("--device", default=os.environ.get("ZBENCH_DEVICE"), metavar="NAME",
                     help="device of the leg (default: $ZBENCH_DEVICE)")
    _devices_option(leg)
    leg.add_argument("-k", dest="keyword", default=os.environ.get("ZBENCH_KEYWORD", ""), metavar="EXPR",
                     help="pytest -k expression (default: $ZBENCH_KEYWORD, else the whole suite)")
    leg.add_argument("pytest_args", nargs=argparse.REMAINDER, metavar="-- PYTEST_ARGS",
                     help="further pytest arguments, after --")
    leg.set_defaults(run=_leg)


def _devices_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--devices", metavar="PATH",
                        help="the inventory (default: devices.yaml in this folder or the nearest parent with one)")


def _inventory_path(args: argparse.Namespace, start: Path) -> Path:
    from .matrix import find_inventory

    if args.devices:
        return Path(args.devices)
    found = find_inventory(start)
    if found is None:
        raise UsageError(f"no devices.yaml in {start} or its parents; pass --devices PATH")
    return found


def _matrix(args: argparse.Namespace) -> int:
    from ..inventory import load_inventory
    from .github import write_outputs
    from .matrix import matrix_json, plan

    try:
        inventory = load_inventory(_inventory_path(args, Path.cwd()))
        devices = [name.strip() for value in args.device for name in value.split(",") if name.strip()]
        legs = plan(inventory, devices=devices, labels=args.label, keyword=args.keyword,
                    hosted_only=args.hosted_only)
        output = os.environ.get("GITHUB_OUTPUT")
        if args.github_output and not output:
            raise UsageError("--github-output: $GITHUB_OUTPUT is not set (it is, inside a GitHub Actions step)")
    except UsageError as exc:
        print(f"zbench matrix: {exc}", file=sys.stderr)
        return EXIT_USAGE
    text = matrix_json(legs)
    print(text)
    if args.github_output:
        write_outputs(output, {"matrix": text, "legs": str(len(legs))})  # type: ignore[arg-type]
    if not legs:
        print(f"zbench matrix: no device of {inventory.path} has a 'ci' key"
              + (" with a GitHub-hosted runner" if args.hosted_only else ""), file=sys.stderr)
    return EXIT_OK


def _summary(args: argparse.Namespace) -> int:
    from ..host.report.markdown_summary import Link, render_summary
    from .github import append_step_summary

    documents, links = [], []
    try:
        for text in args.link:
            label, sep, url = text.partition("=")
            if not sep or not label or not url:
                raise UsageError(f"--link {text!r}: expected TEXT=URL")
            links.append(Link(label, url))
        for path in args.runs:
            try:
                documents.append(json.loads(Path(path).read_text(encoding="utf-8")))
            except (OSError, ValueError) as exc:
                raise UsageError(f"{path}: not a readable run.json: {exc}") from None
    except UsageError as exc:
        print(f"zbench summary: {exc}", file=sys.stderr)
        return EXIT_USAGE
    markdown = render_summary(documents, title=args.title, links=links)
    if args.out:
        append_step_summary(args.out, markdown)
    else:
        sys.stdout.write(markdown + "\n")
    return EXIT_OK


def _leg(args: argparse.Namespace) -> int:
    from .leg import LegEnvironment, run_leg

    if not args.device:
        print("zbench leg: name the device with --device NAME (or $ZBENCH_DEVICE)", file=sys.stderr)
        return EXIT_USAGE
    env = LegEnvironment.from_environ(os.environ, Path.cwd())
    try:
        inventory = _inventory_path(args, env.workspace)
    except UsageError as exc:
        print(f"zbench leg: {exc}", file=sys.stderr)
        return EXIT_USAGE
    extra = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
    return run_leg(args.device, inventory_path=inventory.resolve(), env=env, keyword=args.keyword,
                   pytest_args=extra)
