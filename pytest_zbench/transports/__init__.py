"""Transports: how the host reaches a device. Remote ones import their client libraries lazily."""

from __future__ import annotations

from ..errors import UsageError
from ..inventory import DeviceSpec
from .base import CommandResult, Transport, device_join

__all__ = ["CommandResult", "Transport", "device_join", "make_transport", "require_client_library"]

# The Python package each remote transport's client is, and the extra that installs it.
CLIENT_LIBRARIES = {"ssh": "asyncssh", "adb": "adbutils"}
REMOTE_EXTRA = "pytest-zbench[remote]"


def _missing_library(spec: DeviceSpec, library: str) -> UsageError:
    return UsageError(f"device {spec.name!r} ({spec.source}): transport {spec.transport!r} needs the Python package "
                      f"{library}; install it with `pip install '{REMOTE_EXTRA}'`")


def require_client_library(spec: DeviceSpec) -> None:
    """A UsageError naming the extra when the device's transport client is not installed: checked once when a
    session starts (without importing the client), so that a plain install says so in one line instead of
    failing every test."""
    import importlib.util

    library = CLIENT_LIBRARIES.get(spec.transport)
    if library is None:
        return
    try:
        found = importlib.util.find_spec(library) is not None
    except ImportError:  # an import hook that refuses it
        found = False
    if not found:
        raise _missing_library(spec, library)


def make_transport(spec: DeviceSpec) -> Transport:
    """A closed transport for the device (call `open()`); client libraries are imported only when needed."""
    if spec.transport == "local":
        from .local import LocalTransport

        return LocalTransport(spec)
    if spec.transport in CLIENT_LIBRARIES:
        library = CLIENT_LIBRARIES[spec.transport]
        try:
            if spec.transport == "ssh":
                from .ssh import SshTransport as Remote
            else:
                from .adb import AdbTransport as Remote  # type: ignore[assignment]
            return Remote(spec)
        except ModuleNotFoundError as exc:
            if exc.name != library:
                raise
            raise _missing_library(spec, library) from None
    if spec.transport == "command":
        from .command import CommandTransport

        return CommandTransport(spec)
    raise UsageError(
        f"device {spec.name!r}: transport {spec.transport!r} is not available in this installation"
    )
