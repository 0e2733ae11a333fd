"""When to stop trusting a device, and which lease protects it.

A device fault is something the device or its connection did, not the runner's verdict on a scene: a launch
killed at its deadline, a connection lost mid-launch, a transport error (DeviceError). A runner that exits
non-zero, even killed by a signal, answered: that is the scene's failure, and the device stays in use.
`FAULTS_TO_QUARANTINE` faults in a row quarantine the device for the rest of the session; a device that
cannot be opened or probed is quarantined at once.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ...inventory import DeviceSpec

FAULTS_TO_QUARANTINE = 2
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass
class DeviceHealth:
    """Consecutive device faults per device, and the devices quarantined with the reason."""

    streak: dict[str, int] = field(default_factory=dict)
    quarantined: dict[str, str] = field(default_factory=dict)

    def ok(self, device: str) -> None:
        self.streak[device] = 0

    def fault(self, device: str, detail: str) -> bool:
        """Count a fault; True when this one quarantined the device."""
        self.streak[device] = self.streak.get(device, 0) + 1
        if self.streak[device] >= FAULTS_TO_QUARANTINE and device not in self.quarantined:
            self.quarantine(device, f"{self.streak[device]} device faults in a row, the last: {detail}")
            return True
        return False

    def quarantine(self, device: str, reason: str) -> None:
        self.quarantined.setdefault(device, reason)

    def reason(self, device: str) -> str | None:
        return self.quarantined.get(device)

    def skip_reason(self, device: str) -> str | None:
        reason = self.quarantined.get(device)
        if reason is None:
            return None
        return f"device {device} is quarantined for the rest of this session: {reason}"


def lease_key(spec: DeviceSpec) -> str | None:
    """The lease file name of a device, from its address rather than its inventory name, so that two
    inventories (or two names) for one physical device still share one lease. None for `local`."""
    if spec.transport == "local":
        return None
    if spec.transport == "ssh":
        raw = f"ssh-{spec.option('host')}-{spec.option('port', 22)}"
    elif spec.transport == "adb":
        raw = f"adb-{spec.option('serial')}"
    else:
        raw = f"{spec.transport}-{spec.name}"
    return _UNSAFE.sub("_", raw)


def default_lease_dir() -> Path:
    """Per user and host: every session of this user on this machine shares it (xdist workers included)."""
    return Path(tempfile.gettempdir()) / f"zbench-leases-{os.getuid()}"
