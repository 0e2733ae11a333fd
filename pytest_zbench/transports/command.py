"""`command`: a device reached through host-side scripts (iOS through a Mac, webOS through novacom, ...).

The inventory gives four argv prefixes; the contract they implement is docs/command-transport.md:

    PUSH... LOCAL REMOTE                                   copy one file to the device
    PULL... REMOTE_DIR LOCAL_DIR                           copy the regular files of a device folder here
    EXEC... --run-id ID [--env NAME]... -- ARGV...         run ARGV on the device with NAME set to the value
                                                           NAME has in EXEC's own environment, stream its
                                                           stdout, exit with its exit code (125: the tooling
                                                           failed)
    KILL... ID                                             (optional) stop what `EXEC --run-id ID` started

Housekeeping goes through EXEC as two fixed argv forms, `mkdir -p DIR` and `rm -rf DIR`, which a script
for a device without a shell emulates. A relative script path is taken relative to the inventory file.
Arguments are passed as argv lists (never through a shell). Every script runs under the supervisor
(supervised.py): whatever an exec script leaves running on this host is stopped with it, and at a deadline, or
when this host dies, its whole process tree is.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..errors import DeviceError
from ..inventory import DeviceSpec
from .base import (
    KILL_GRACE_S,
    CommandResult,
    LineCallback,
    PulledFiles,
    WorkdirMixin,
    copy_regular_files,
    resolve_program,
)
from .supervised import supervised_run

SCRIPT_TIMEOUT_S = 300.0
HOUSEKEEPING_TIMEOUT_S = 60.0
TOOLING_FAILED = 125


class CommandTransport(WorkdirMixin):
    def __init__(self, spec: DeviceSpec) -> None:
        self.name = spec.name
        self.spec = spec
        self.prefixes = {key: self._resolve(spec.option(key)) for key in ("push", "pull", "exec", "kill")
                         if spec.option(key)}
        self._workdir: str | None = None
        self._counter = 0

    def _resolve(self, prefix: Sequence[str]) -> list[str]:
        return resolve_program(prefix, self.spec.source)

    # -- lifecycle -------------------------------------------------------------------------------------

    def open(self) -> None:
        if self._workdir is None:
            path = self.spec.workdir or f"/tmp/zbench-{self.name}"
            self.mkdir(path)
            self._workdir = path

    def close(self) -> None:
        self._workdir = None

    # -- files -------------------------------------------------------------------------------------------

    def mkdir(self, path: str) -> None:
        self._housekeeping(["mkdir", "-p", path])

    def remove_tree(self, path: str) -> None:
        self._housekeeping(["rm", "-rf", path])

    def push(self, local: Path, remote: str) -> None:
        self._script("push", [str(local), remote], SCRIPT_TIMEOUT_S)

    def pull_dir(self, remote: str, local: Path, *, max_bytes: int | None = None) -> PulledFiles:
        local.mkdir(parents=True, exist_ok=True)
        # into an empty folder first, so that exactly what the script fetched is returned (the script copies
        # whole files: one over max_bytes is dropped with the staging folder)
        with tempfile.TemporaryDirectory(prefix=".zbench-pull-", dir=local) as staging:
            self._script("pull", [remote, staging], SCRIPT_TIMEOUT_S)
            return copy_regular_files(staging, local, move=True, max_bytes=max_bytes)

    # -- processes -----------------------------------------------------------------------------------------

    def run_script(self, script: str, *, timeout_s: float) -> CommandResult:
        return self.run(["sh", "-c", script], timeout_s=timeout_s)

    def run(self, argv: Sequence[str], *, timeout_s: float, on_line: LineCallback | None = None) -> CommandResult:
        argv = tuple(str(a) for a in argv)
        self._counter += 1
        run_id = f"zb-{os.getpid()}-{self._counter}-{secrets.token_hex(4)}"
        # The device's environment goes by name on the exec script's argv and by value in its environment,
        # so that no value (a token, a password) is visible in this host's process list.
        env_opts = [option for key in self.spec.env for option in ("--env", key)]
        command = [*self.prefixes["exec"], "--run-id", run_id, *env_opts, "--", *argv]
        result = supervised_run(command, {**os.environ, **self.spec.env}, timeout_s=timeout_s, on_line=on_line,
                                argv=argv, before_stop=lambda: self._kill_script(run_id))
        if result.exit_code == 127 and result.stdout == "" and "cannot start" in result.stderr:
            raise DeviceError(f"device {self.name}: cannot start exec script {command[0]!r}: "
                              f"{result.stderr.strip()}")
        code = result.exit_code
        if code is not None and code < 0:
            code = 128 - code  # the exec script itself was killed by a signal
        return dataclasses.replace(result, exit_code=code)

    # -- internals -------------------------------------------------------------------------------------------

    def _kill_script(self, run_id: str) -> str:
        """At the deadline, before the exec script's tree is stopped: the kill script (it reaches the device)."""
        if "kill" not in self.prefixes:
            return "no kill script"
        try:
            result = subprocess.run([*self.prefixes["kill"], run_id], stdin=subprocess.DEVNULL,
                                    capture_output=True, timeout=KILL_GRACE_S * 5)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"kill script failed: {exc}"
        note = f"kill script exited {result.returncode}"
        if result.returncode != 0:
            note += f": {result.stderr.decode('utf-8', 'replace').strip()[-300:]}"
        return note

    def _script(self, key: str, args: list[str], timeout_s: float) -> str:
        command = [*self.prefixes[key], *args]
        try:
            result = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout_s)
        except OSError as exc:
            raise DeviceError(f"device {self.name}: cannot start {key} script {command[0]!r}: "
                              f"{exc.strerror or exc}") from None
        except subprocess.TimeoutExpired:
            raise DeviceError(f"device {self.name}: {key} script {command[0]!r} took more than {timeout_s:.0f} s") from None
        if result.returncode != 0:
            tail = result.stderr.decode("utf-8", "replace").strip()[-500:] or "(no message)"
            raise DeviceError(f"device {self.name}: `{key}` script {command[0]} {' '.join(args)} failed "
                              f"({result.returncode}): {tail}")
        return result.stdout.decode("utf-8", "replace")

    def _housekeeping(self, argv: list[str]) -> None:
        result = self.run(argv, timeout_s=HOUSEKEEPING_TIMEOUT_S)
        if not result.ok:
            why = "timed out" if result.timed_out else f"exited with {result.exit_code}"
            raise DeviceError(f"device {self.name}: `{' '.join(argv)}` through the exec script {why}: "
                              f"{result.stderr.strip()[-500:]}")
