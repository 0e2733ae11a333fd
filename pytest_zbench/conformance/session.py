"""`pytest --zbench-check-runner`: the kit once per device before anything is measured, each report saved
in the results folder (`check-runner/<device>.json`, launch files beside it) and linked from run.json."""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import DeviceError, UsageError
from ..inventory import Inventory
from ..settings import Settings
from .kit import check_runner

LEASE_WAIT_S = 600.0
FOLDER = "check-runner"


@dataclass
class SessionCheck:
    """run.json's `check_runner`: per device the report's path (relative to the results folder) and verdict."""

    devices: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    def message(self) -> str:
        return ("the runner conformance check (--zbench-check-runner) failed, nothing was measured:\n"
                + "\n".join(f"  {f}" for f in self.failures)
                + "\nFix the runner (docs/runner-protocol.md), or run without --zbench-check-runner.")


def check_session_runners(settings: Settings, inventory: Inventory, write: Callable[[str], None]) -> SessionCheck:
    outcome = SessionCheck()
    folder = settings.results / FOLDER
    for name in settings.devices:
        spec = inventory.get(name)
        keep = folder / name
        shutil.rmtree(keep, ignore_errors=True)  # this session's launch files replace an earlier session's
        report_path = folder / f"{name}.json"
        relative = str(report_path.relative_to(settings.results))
        try:
            with _lease(spec, settings):
                report = check_runner(spec, scenes_dir=settings.scenes_dir, goldens_dir=settings.goldens_dir,
                                      keep=keep)
        except (DeviceError, UsageError) as exc:  # unreachable, or its transport is not installed
            outcome.failures.append(f"device {name} could not be checked: {exc}")
            outcome.devices[name] = {"report": None, "passed": False, "error": str(exc)}
            continue
        report_path.write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")
        for line in report.lines():
            write(line)
        outcome.devices[name] = {"report": relative, "passed": report.passed, "failed": [r.name for r in report.failed],
                                 "counts": report.counts()}
        if not report.passed:
            failed = ", ".join(r.name for r in report.failed)
            outcome.failures.append(f"device {name}: {failed} (report: {report_path})")
    return outcome


def _lease(spec: Any, settings: Settings) -> Any:
    from ..host.devices.health import default_lease_dir, lease_key
    from ..host.devices.lease import DeviceLease

    key = lease_key(spec)
    if key is None:
        return contextlib.nullcontext()
    return DeviceLease(key, settings.lease_dir or default_lease_dir(), timeout_s=LEASE_WAIT_S)
