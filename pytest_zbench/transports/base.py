"""The transport interface: move files to and from a device and run argv lists there, under a deadline.

Device-side paths are POSIX strings. A transport never builds a shell command from unquoted input: argv
lists go to the device as lists (or are quoted element by element where the wire only carries a string).
"""

from __future__ import annotations

import os
import posixpath
import shutil
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

# The line a supervisor (_supervisor.py, or the shell wrapper of _shell.py) writes on stderr when the runner
# left processes running: `zbench-leftover:N`.
from ._supervisor import LEFTOVER_MARK

LineCallback = Callable[[str], None]

# After a deadline the process gets SIGTERM (so a runner can write what it has), then SIGKILL after this.
KILL_GRACE_S = 2.0
# How long a supervisor may take to stop its tree after SIGTERM (its own grace, then SIGKILL and reaping):
# the host waits this long before it uses SIGKILL itself, which would orphan what the supervisor still holds.
SUPERVISOR_STOP_S = 2 * KILL_GRACE_S + 1


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    exit_code: int | None  # None when the process was killed at the deadline or the connection was lost
    stdout: str
    stderr: str
    timed_out: bool
    wall_s: float
    leftover: int = 0  # processes the command left running when it exited, stopped by the supervisor

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class Transport(Protocol):
    """One device connection. Implementations: local, ssh, adb, command."""

    name: str

    def open(self) -> None: ...

    def close(self) -> None: ...

    def workdir(self) -> str:
        """The device-side folder this host may use (created by `open`)."""

    def mkdir(self, path: str) -> None: ...

    def remove_tree(self, path: str) -> None: ...

    def push(self, local: Path, remote: str) -> None: ...

    def pull_dir(self, remote: str, local: Path, *, max_bytes: int | None = None) -> PulledFiles:
        """Copy the regular files of a device folder (not recursive) into `local`; return their paths. A file
        larger than `max_bytes` is not copied; it is named in the result's `too_large`."""

    def run(self, argv: Sequence[str], *, timeout_s: float, on_line: LineCallback | None = None) -> CommandResult:
        """Run argv on the device; stream stdout lines to on_line; kill it on the device at the deadline."""

    def run_script(self, script: str, *, timeout_s: float) -> CommandResult:
        """Run a short fixed POSIX sh script of the host's (the platform probe's) on the device. It leaves
        nothing running, so a transport may skip a launch's supervision for it (local, ssh: it runs before
        and after every launch); at the deadline its process group is killed."""


class OutputReaders:
    """Drain a host subprocess's stdout (line by line, to `on_line`) and stderr on two threads, so that a
    chatty runner never blocks on a full pipe while the caller waits for its deadline."""

    def __init__(self, proc: subprocess.Popen[bytes], on_line: LineCallback | None) -> None:
        self.stdout_lines: list[str] = []
        self._stderr: list[str] = []
        self._threads = [threading.Thread(target=self._read_stdout, args=(proc, on_line), daemon=True),
                         threading.Thread(target=self._read_stderr, args=(proc,), daemon=True)]
        for thread in self._threads:
            thread.start()

    def _read_stdout(self, proc: subprocess.Popen[bytes], on_line: LineCallback | None) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace")
            self.stdout_lines.append(line)
            if on_line is not None:
                try:
                    on_line(line.rstrip("\r\n"))
                except Exception:  # noqa: BLE001 - a progress callback must not lose the run
                    pass

    def _read_stderr(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stderr is not None
        self._stderr.append(proc.stderr.read().decode("utf-8", "replace"))

    def join(self, timeout_s: float) -> None:
        for thread in self._threads:
            thread.join(timeout=timeout_s)

    @property
    def stdout(self) -> str:
        return "".join(self.stdout_lines)

    @property
    def stderr(self) -> str:
        return "".join(self._stderr)


class PulledFiles(list[Path]):
    """The files `pull_dir` copied, and `too_large`: name -> size of those it left on the device."""

    def __init__(self, files: list[Path] | None = None, too_large: dict[str, int] | None = None) -> None:
        super().__init__(files or [])
        self.too_large: dict[str, int] = dict(too_large or {})


def take_leftover(text: str) -> tuple[str, int]:
    """`text` without the supervisor's leftover line, and the count it gave (0 without one)."""
    kept, count = [], 0
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith(LEFTOVER_MARK) and stripped[len(LEFTOVER_MARK):].isdigit():
            count += int(stripped[len(LEFTOVER_MARK):])
        else:
            kept.append(line)
    return "".join(kept), count


def device_join(*parts: str) -> str:
    return posixpath.join(*parts)


def resolve_program(argv: Sequence[str], source: Path | str | None) -> list[str]:
    """A host-side argv with its relative paths (`ci/devices/ios-device.sh`, `python tools/runner.py`) taken
    relative to the inventory file that names them, so a device works whatever folder pytest runs in (and a
    local runner runs in its device folder, not there); a bare name stays a PATH lookup, and an element that
    names nothing there is left as it is."""
    out = [str(a) for a in argv]
    if source is None:
        return out
    folder = Path(source).resolve().parent
    for i, arg in enumerate(out):
        if "/" in arg and not arg.startswith("-") and not os.path.isabs(arg) and (folder / arg).exists():
            out[i] = str(folder / arg)
    return out


class WorkdirMixin:
    """The `workdir()` of the Transport protocol, for transports that set `_workdir` in `open()`."""

    name: str
    _workdir: str | None = None

    def workdir(self) -> str:
        if self._workdir is None:
            raise RuntimeError(f"device {self.name}: transport used before open()")
        return self._workdir


def copy_regular_files(source: str | Path, target: Path, *, move: bool = False,
                       max_bytes: int | None = None) -> PulledFiles:
    """Copy (or move) the regular files of a host folder, not its subfolders or links, into `target`; files
    larger than `max_bytes` are left where they are."""
    target.mkdir(parents=True, exist_ok=True)
    copied = PulledFiles()
    for entry in sorted(os.scandir(source), key=lambda e: e.name):
        if entry.is_file(follow_symlinks=False):
            size = entry.stat(follow_symlinks=False).st_size
            if max_bytes is not None and size > max_bytes:
                copied.too_large[entry.name] = size
                continue
            destination = target / entry.name
            if move:
                os.replace(entry.path, destination)
            else:
                shutil.copyfile(entry.path, destination)
            copied.append(destination)
    return copied
