"""The CI matrix: one leg per inventory device with a `ci` key, as JSON for a workflow's `fromJSON`.

A leg is what the workflow needs to place and run a job for one device: the runner labels (`runs-on`), the
timeout, whether the runner is GitHub-hosted (set-up differs), the transport and backend (which system
packages the set-up checks), the pytest -k expression, and names that must be unique per device within a run
(the JUnit check's). The leg script reads the rest (pytest arguments, the A/B runner) from the inventory
itself and names its results folder and artifact, so the matrix stays a plan, not a second copy of
devices.yaml.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..inventory import DeviceSpec, Inventory

# GitHub runs at most 256 jobs from one matrix.
MAX_LEGS = 256
ARTIFACT_PREFIX = "zbench-"


@dataclass(frozen=True)
class Leg:
    device: str
    labels: tuple[str, ...]
    timeout_minutes: int
    hosted: bool
    transport: str
    backend: str
    keyword: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "labels": list(self.labels),
            "timeout_minutes": self.timeout_minutes,
            "hosted": self.hosted,
            "transport": self.transport,
            "backend": self.backend,
            "keyword": self.keyword,
            # Unique per device: the JUnit check of each leg must not overwrite another's. (The artifact's
            # name, unique per device and run attempt, is the leg's own output.)
            "check_name": f"zbench {self.device}",
        }


def leg_of(spec: DeviceSpec, keyword: str = "") -> Leg:
    if spec.ci is None:
        raise UsageError(f"device {spec.name!r} of {spec.source} has no 'ci' key, so it is not in the CI matrix; "
                         "add e.g. ci: {labels: [self-hosted, zbench, " + spec.name + "], timeout_minutes: 60}")
    return Leg(spec.name, spec.ci.labels, spec.ci.timeout_minutes, spec.ci.hosted, spec.transport, spec.backend,
               keyword)


def plan(inventory: Inventory, *, devices: Sequence[str] = (), labels: Sequence[str] = (), keyword: str = "",
         hosted_only: bool = False) -> list[Leg]:
    """The legs, in inventory order: every device with a `ci` key, or the named ones (each must have one),
    keeping those whose runner labels include every one of `labels`, and only hosted ones if asked."""
    if devices:
        specs = [inventory.get(name) for name in dict.fromkeys(devices)]
        legs = [leg_of(spec, keyword) for spec in specs]
    else:
        legs = [leg_of(spec, keyword) for spec in inventory.devices.values() if spec.ci is not None]
    selected = [leg for leg in legs if set(labels) <= set(leg.labels) and (leg.hosted or not hosted_only)]
    if (devices or labels) and not selected:
        what = [f"devices {', '.join(devices)}" if devices else "", f"labels {', '.join(labels)}" if labels else "",
                "hosted runners only" if hosted_only else ""]
        raise UsageError(f"no device of {inventory.path} matches {' and '.join(w for w in what if w)}; "
                         f"devices with a 'ci' key: {', '.join(_ci_devices(inventory)) or '(none)'}")
    if len(selected) > MAX_LEGS:
        raise UsageError(f"{len(selected)} legs: GitHub runs at most {MAX_LEGS} jobs of one matrix; select "
                         "fewer with --device or --label")
    return selected


def matrix_json(legs: Sequence[Leg]) -> str:
    """One line of JSON: `strategy: {matrix: ${{ fromJSON(...) }}}` takes it as is."""
    return json.dumps({"include": [leg.to_json() for leg in legs]}, separators=(",", ":"))


def find_inventory(start: Path) -> Path | None:
    """The project's devices.yaml: in `start` or the nearest parent folder that has one."""
    for folder in (start, *start.parents):
        candidate = folder / "devices.yaml"
        if candidate.is_file():
            return candidate
    return None


def _ci_devices(inventory: Inventory) -> list[str]:
    return [name for name, spec in inventory.devices.items() if spec.ci is not None]
