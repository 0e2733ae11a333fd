"""Pull request A/B on a device: the merge base's runner (A) against the head's (B), both built from their
checkouts by the device's `ci.ab_runner` template (`{checkout}` = the checkout's folder).

The plugin's A/B launches the device's own runner as A and `--zbench-ab=RUNNER` as B. So that A is the merge
base's build and not whatever the device's `runner` entry names, the leg measures through a copy of the
device's inventory entry whose runner is the merge base's: the same device, name and transport, another build.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml

from ..errors import UsageError
from ..inventory import DeviceSpec, load_inventory
from ..transports.base import resolve_program

COMMAND_KEYS = ("push", "pull", "exec", "kill")


def ab_runners(spec: DeviceSpec, base: Path, head: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(A, B): the runner built from the merge base's checkout and the one built from the head's, their
    relative paths taken from the inventory's folder (the A/B inventory and the runners' folders are elsewhere)."""
    a = spec.ci.runner_from(str(base)) if spec.ci else None
    b = spec.ci.runner_from(str(head)) if spec.ci else None
    if a is None or b is None:
        raise UsageError(f"device {spec.name!r} of {spec.source} has no 'ci.ab_runner': there is no way to run "
                         "a runner built from another checkout on it")
    return tuple(resolve_program(a, spec.source)), tuple(resolve_program(b, spec.source))


def write_ab_inventory(spec: DeviceSpec, runner_a: tuple[str, ...], out: Path) -> Path:
    """An inventory with the device alone, its runner replaced by A. Script paths that the original resolves
    against its own folder (the command transport's) are made absolute, so the copy may live elsewhere."""
    assert spec.source is not None
    raw = yaml.safe_load(spec.source.read_text(encoding="utf-8"))
    entry = dict(raw["devices"][spec.name])
    entry["runner"] = list(runner_a)
    for key in COMMAND_KEYS:
        argv = entry.get(key)
        if isinstance(argv, list) and argv:
            entry[key] = resolve_program(argv, spec.source)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(f"# {spec.name} of {spec.source}, its runner replaced by the merge base's build (A) for a pull "
                   f"request A/B; written by the CI leg.\n" + yaml.safe_dump({"devices": {spec.name: entry}},
                                                                            sort_keys=False), encoding="utf-8")
    load_inventory(out).get(spec.name)  # the copy must still be a valid entry
    return out


def ab_option(runner_b: tuple[str, ...]) -> str:
    """`--zbench-ab=...`: B's argv as one string, split back like a shell command line by the plugin."""
    return "--zbench-ab=" + shlex.join(runner_b)
