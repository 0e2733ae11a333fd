"""`local`: the runner as a subprocess of this host; the device folder is a temporary folder."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from ..inventory import DeviceSpec
from .base import (
    KILL_GRACE_S,
    CommandResult,
    LineCallback,
    OutputReaders,
    WorkdirMixin,
    copy_regular_files,
    resolve_program,
)


class LocalTransport(WorkdirMixin):
    def __init__(self, spec: DeviceSpec) -> None:
        self.name = spec.name
        self.spec = spec
        self._workdir: str | None = None
        self._owns_workdir = False

    def open(self) -> None:
        if self.spec.workdir:
            self._workdir = os.path.expanduser(self.spec.workdir)
            os.makedirs(self._workdir, exist_ok=True)
        else:
            self._workdir = tempfile.mkdtemp(prefix=f"zbench-{self.name}-")
            self._owns_workdir = True

    def close(self) -> None:
        if self._owns_workdir and self._workdir:
            shutil.rmtree(self._workdir, ignore_errors=True)
        self._workdir = None

    def mkdir(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def remove_tree(self, path: str) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def push(self, local: Path, remote: str) -> None:
        shutil.copyfile(local, remote)

    def pull_dir(self, remote: str, local: Path) -> list[Path]:
        return copy_regular_files(remote, local)

    def run(self, argv: Sequence[str], *, timeout_s: float, on_line: LineCallback | None = None) -> CommandResult:
        argv = tuple(argv)
        # `python` in the inventory means the interpreter running pytest, so a virtualenv just works.
        command = ([sys.executable, *argv[1:]] if argv and argv[0] in ("python", "python3")
                   else resolve_program(argv, self.spec.source))
        env = {**os.environ, **self.spec.env}
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=env, start_new_session=True,  # its own process group, so the deadline kills its children too
                # In the device folder, like a runner on a device: never pytest's working directory, from
                # which `python -m pytest_zbench.runner` would import whatever copy happens to be there.
                cwd=self._workdir,
            )
        except OSError as exc:
            return CommandResult(argv, 127, "", f"cannot start {command[0]!r}: {exc.strerror or exc}", False, 0.0)
        readers = OutputReaders(proc, on_line)
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
        readers.join(KILL_GRACE_S)
        return CommandResult(
            argv=argv,
            exit_code=None if timed_out else proc.returncode,
            stdout=readers.stdout,
            stderr=readers.stderr,
            timed_out=timed_out,
            wall_s=time.monotonic() - started,
        )


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, KILL_GRACE_S)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
