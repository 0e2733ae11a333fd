"""`local`: the runner as a subprocess of this host; the device folder is a temporary folder."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Sequence

from ..inventory import DeviceSpec
from .base import KILL_GRACE_S, CommandResult, LineCallback, WorkdirMixin, copy_regular_files


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
        command = [sys.executable, *argv[1:]] if argv and argv[0] in ("python", "python3") else list(argv)
        env = {**os.environ, **self.spec.env}
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=env, start_new_session=True,  # its own process group, so the deadline kills its children too
            )
        except OSError as exc:
            return CommandResult(argv, 127, "", f"cannot start {command[0]!r}: {exc.strerror or exc}", False, 0.0)
        out_lines: list[str] = []
        err_chunks: list[str] = []

        def read_stdout() -> None:
            assert proc.stdout is not None
            for raw in proc.stdout:
                line = raw.decode("utf-8", "replace")
                out_lines.append(line)
                if on_line is not None:
                    on_line(line.rstrip("\n"))

        def read_stderr() -> None:
            assert proc.stderr is not None
            err_chunks.append(proc.stderr.read().decode("utf-8", "replace"))

        readers = [threading.Thread(target=read_stdout, daemon=True), threading.Thread(target=read_stderr, daemon=True)]
        for reader in readers:
            reader.start()
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
        for reader in readers:
            reader.join(timeout=KILL_GRACE_S)
        return CommandResult(
            argv=argv,
            exit_code=None if timed_out else proc.returncode,
            stdout="".join(out_lines),
            stderr="".join(err_chunks),
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
