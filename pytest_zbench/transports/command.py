"""`command`: a device reached through host-side scripts (iOS through a Mac, webOS through novacom, ...).

The inventory gives four argv prefixes; the contract they implement is docs/command-transport.md:

    PUSH... LOCAL REMOTE                                   copy one file to the device
    PULL... REMOTE_DIR LOCAL_DIR                           copy the regular files of a device folder here
    EXEC... --run-id ID [--env NAME=VALUE]... -- ARGV...   run ARGV on the device, stream its stdout,
                                                           exit with its exit code (125: the tooling failed)
    KILL... ID                                             (optional) stop what `EXEC --run-id ID` started

Housekeeping goes through EXEC as two fixed argv forms, `mkdir -p DIR` and `rm -rf DIR`, which a script
for a device without a shell emulates. A relative script path is taken relative to the inventory file.
Arguments are passed as argv lists (never through a shell).
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from ..errors import DeviceError
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

    def pull_dir(self, remote: str, local: Path) -> list[Path]:
        local.mkdir(parents=True, exist_ok=True)
        # into an empty folder first, so that exactly what the script fetched is returned
        with tempfile.TemporaryDirectory(prefix=".zbench-pull-", dir=local) as staging:
            self._script("pull", [remote, staging], SCRIPT_TIMEOUT_S)
            return copy_regular_files(staging, local, move=True)

    # -- processes -----------------------------------------------------------------------------------------

    def run(self, argv: Sequence[str], *, timeout_s: float, on_line: LineCallback | None = None) -> CommandResult:
        argv = tuple(str(a) for a in argv)
        self._counter += 1
        run_id = f"zb-{os.getpid()}-{self._counter}-{secrets.token_hex(4)}"
        env_opts: list[str] = []
        for key, value in self.spec.env.items():
            env_opts += ["--env", f"{key}={value}"]
        command = [*self.prefixes["exec"], "--run-id", run_id, *env_opts, "--", *argv]
        started = time.monotonic()
        try:
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=True)
        except OSError as exc:
            raise DeviceError(f"device {self.name}: cannot start exec script {command[0]!r}: "
                              f"{exc.strerror or exc}") from None
        readers = OutputReaders(proc, on_line)
        timed_out = False
        notes: list[str] = []
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            notes.append(self._stop(proc, run_id))
        readers.join(KILL_GRACE_S)
        stderr = readers.stderr
        if notes:
            stderr += ("" if not stderr or stderr.endswith("\n") else "\n") + "".join(f"zbench: {n}\n" for n in notes)
        code = None if timed_out else proc.returncode
        if code is not None and code < 0:
            code = 128 - code  # the exec script itself was killed by a signal
        return CommandResult(argv=argv, exit_code=code, stdout=readers.stdout, stderr=stderr,
                             timed_out=timed_out, wall_s=time.monotonic() - started)

    # -- internals -------------------------------------------------------------------------------------------

    def _stop(self, proc: subprocess.Popen[bytes], run_id: str) -> str:
        """At the deadline: the kill script first (it reaches the device), then the exec script's group."""
        note = "exec script stopped"
        if "kill" in self.prefixes:
            try:
                result = subprocess.run([*self.prefixes["kill"], run_id], stdin=subprocess.DEVNULL,
                                        capture_output=True, timeout=KILL_GRACE_S * 5)
                note = f"kill script exited {result.returncode}"
                if result.returncode != 0:
                    note += f": {result.stderr.decode('utf-8', 'replace').strip()[-300:]}"
            except (OSError, subprocess.TimeoutExpired) as exc:
                note = f"kill script failed: {exc}"
            try:
                proc.wait(timeout=KILL_GRACE_S)
                return note
            except subprocess.TimeoutExpired:
                pass
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=KILL_GRACE_S)
                break
            except subprocess.TimeoutExpired:
                continue
        return note + "; exec script signalled"

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
