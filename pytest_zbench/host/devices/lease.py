"""An exclusive, inter-process lease on one device, so two pytest-xdist workers never measure it at once.

The lock is `fcntl.flock` on `<lock_dir>/<device>.lock`: the kernel drops it when the holder exits, even
on a crash, so a stale file never blocks anybody. While held, the file names its holder (pid, host,
xdist worker, since when) so that a waiting process can say who it is waiting for.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any

from ...errors import DeviceError

DEFAULT_TIMEOUT_S = 600.0
POLL_S = 0.05


class DeviceLease:
    """`with DeviceLease("pi3b", lock_dir, timeout_s=600): ...` holds device pi3b for this process.

    Blocks up to `timeout_s` (0: try once) and then raises DeviceError naming the holder. Not re-entrant
    within one process: take it once per device (flock locks belong to the open file, not the process).
    """

    def __init__(self, device_name: str, lock_dir: str | os.PathLike[str], *, timeout_s: float = DEFAULT_TIMEOUT_S,
                 poll_s: float = POLL_S) -> None:
        if not device_name or "/" in device_name or device_name in (".", ".."):
            raise ValueError(f"device name {device_name!r} cannot name a lock file")
        self.device_name = device_name
        self.lock_dir = Path(lock_dir)
        self.path = self.lock_dir / f"{device_name}.lock"
        self.timeout_s = timeout_s
        self.poll_s = poll_s
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        if self._fd is not None:
            raise DeviceError(f"device {self.device_name}: lease already held by this object ({self.path})")
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + max(0.0, self.timeout_s)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise DeviceError(
                            f"device {self.device_name} is busy: held by {self.describe_holder()} "
                            f"(lock file {self.path}); waited {self.timeout_s:.0f} s. Wait for that run to finish, "
                            f"or run fewer workers per device."
                        ) from None
                    time.sleep(self.poll_s)
            record = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "worker": os.environ.get("PYTEST_XDIST_WORKER", ""),
                "since_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            }
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(record) + "\n").encode("utf-8"), 0)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def holder(self) -> dict[str, Any] | None:
        """What the lock file says about its current holder (None if it says nothing readable)."""
        try:
            text = self.path.read_text(encoding="utf-8").strip()
            record = json.loads(text) if text else None
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) else None

    def describe_holder(self) -> str:
        record = self.holder()
        if not record:
            return "another process (it has not written its name yet)"
        worker = f", xdist worker {record['worker']}" if record.get("worker") else ""
        return f"pid {record.get('pid')} on host {record.get('host')}{worker} since {record.get('since_utc')}"

    def __enter__(self) -> DeviceLease:
        self.acquire()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()
