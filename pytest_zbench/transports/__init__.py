"""Transports: how the host reaches a device. Remote ones import their client libraries lazily."""

from __future__ import annotations

from ..errors import UsageError
from ..inventory import DeviceSpec
from .base import CommandResult, Transport, device_join

__all__ = ["CommandResult", "Transport", "device_join", "make_transport"]


def make_transport(spec: DeviceSpec) -> Transport:
    if spec.transport == "local":
        from .local import LocalTransport

        return LocalTransport(spec)
    raise UsageError(
        f"device {spec.name!r}: transport {spec.transport!r} is not available in this installation"
    )
