"""Transports: how the host reaches a device. Remote ones import their client libraries lazily."""

from __future__ import annotations

from ..errors import UsageError
from ..inventory import DeviceSpec
from .base import CommandResult, Transport, device_join

__all__ = ["CommandResult", "Transport", "device_join", "make_transport"]


def make_transport(spec: DeviceSpec) -> Transport:
    """A closed transport for the device (call `open()`); client libraries are imported only when needed."""
    if spec.transport == "local":
        from .local import LocalTransport

        return LocalTransport(spec)
    if spec.transport in ("ssh", "adb"):
        library = {"ssh": "asyncssh", "adb": "adbutils"}[spec.transport]
        try:
            if spec.transport == "ssh":
                from .ssh import SshTransport as Remote
            else:
                from .adb import AdbTransport as Remote  # type: ignore[assignment]
            return Remote(spec)
        except ModuleNotFoundError as exc:
            if exc.name != library:
                raise
            raise UsageError(
                f"device {spec.name!r} ({spec.source}): transport {spec.transport!r} needs the Python package "
                f"{library}; install it with `pip install 'pytest-zbench[remote]'`"
            ) from None
    if spec.transport == "command":
        from .command import CommandTransport

        return CommandTransport(spec)
    raise UsageError(
        f"device {spec.name!r}: transport {spec.transport!r} is not available in this installation"
    )
