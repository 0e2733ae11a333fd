"""One base class for every error the product raises on purpose; each says what to do next.

A leaf module: the protocol imports it (and re-exports ZbenchError), so the runner, which depends only on the
protocol, derives its errors from the same base.
"""

from __future__ import annotations


class ZbenchError(Exception):
    """Base of all pytest-zbench errors."""


class UsageError(ZbenchError):
    """Bad configuration: an option, the inventory or a scene file. The message names the file and key."""


class SceneError(UsageError):
    """A scene file that cannot be loaded; names the file, the scene and the key."""

    def __init__(self, path: object, message: str, *, scene: str | None = None, key: str | None = None) -> None:
        where = str(path)
        if scene:
            where += f", scene {scene!r}"
        if key:
            where += f", key {key!r}"
        super().__init__(f"{where}: {message}")
        self.path, self.scene, self.key = path, scene, key


class InventoryError(UsageError):
    """A bad devices.yaml entry; names the file, the device and the key."""


class DeviceError(ZbenchError):
    """A device or its transport failed while running something."""


class DeviceQuarantined(DeviceError):
    """A device taken out of this session after it failed (to open, or repeatedly); the message says why."""
