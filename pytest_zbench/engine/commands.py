"""The engine's `zbench` subcommands (docs/engine-ci.md):

    zbench deploy --device NAME BUILD [--entry FILE] [--keep N] [--expect-build ID] [--root DIR] [--json FILE]
    zbench deploy --device NAME --list | --remove HASH
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
