"""`local`: the runner as a subprocess of this host; the device folder is a temporary folder.

Every command runs under the supervisor (_supervisor.py, README "Reliability"): a child subreaper that
stops whatever the runner leaves running when it exits, forwards the deadline's signals to the whole tree,
and stops the tree when this host goes away (its stdin pipe from here reaches end of file, even when the
host is killed with SIGKILL). A temporary workdir has a keeper process that removes it in that case too.
"""

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
from .base import CommandResult, LineCallback, PulledFiles, WorkdirMixin, copy_regular_files, resolve_program
from .supervised import release, start_supervisor, supervised_run


class LocalTransport(WorkdirMixin):
    def __init__(self, spec: DeviceSpec) -> None:
        self.name = spec.name
        self.spec = spec
        self._workdir: str | None = None
        self._owns_workdir = False
        self._keeper: subprocess.Popen[bytes] | None = None

    def open(self) -> None:
        if self._workdir is not None:
            return
        if self.spec.workdir:
            self._workdir = os.path.expanduser(self.spec.workdir)
            os.makedirs(self._workdir, exist_ok=True)
        else:
            self._workdir = tempfile.mkdtemp(prefix=f"zbench-{self.name}-")
            self._owns_workdir = True
            self._keeper = start_supervisor(["keep", self._workdir], os.environ)

    def close(self) -> None:
        if self._owns_workdir and self._workdir:
            shutil.rmtree(self._workdir, ignore_errors=True)
        self._workdir = None
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            release(keeper)

    def mkdir(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def remove_tree(self, path: str) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def push(self, local: Path, remote: str) -> None:
        shutil.copyfile(local, remote)

    def pull_dir(self, remote: str, local: Path, *, max_bytes: int | None = None) -> PulledFiles:
        return copy_regular_files(remote, local, max_bytes=max_bytes)

    def run(self, argv: Sequence[str], *, timeout_s: float, on_line: LineCallback | None = None) -> CommandResult:
        argv = tuple(argv)
        # `python` in the inventory means the interpreter running pytest, so a virtualenv just works.
        command = ([sys.executable, *argv[1:]] if argv and argv[0] in ("python", "python3")
                   else resolve_program(argv, self.spec.source))
        # In the device folder, like a runner on a device: never pytest's working directory, from which
        # `python -m pytest_zbench.runner` would import whatever copy happens to be there.
        return supervised_run(command, {**os.environ, **self.spec.env}, timeout_s=timeout_s, on_line=on_line,
                              argv=argv, cwd=self._workdir)

    def run_script(self, script: str, *, timeout_s: float) -> CommandResult:
        # No supervisor (a Python start, most of a platform sample's time): the script starts nothing that
        # outlives it, and its own session is killed at the deadline.
        argv = ("sh", "-c", script)
        started = time.monotonic()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env={**os.environ, **self.spec.env}, cwd=self._workdir, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            out, err = proc.communicate()
            return CommandResult(argv, None, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), True,
                                 time.monotonic() - started)
        return CommandResult(argv, proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
                             False, time.monotonic() - started)
