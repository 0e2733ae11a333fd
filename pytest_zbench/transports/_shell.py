"""POSIX shell text for transports whose wire only carries a command string (ssh, adb).

Every argv element and environment entry is passed through shlex.quote; nothing else is ever interpolated
but values the host generated (pids, signal names from a fixed set, hex launch tokens, its own paths quoted).

A command starts with `echo zbench-pid:$$`: the first stdout line is the pid of the shell, so the host knows
which process to signal at a deadline. What follows (`supervised_command`) keeps every process of the launch
within reach (README, "Reliability"):

* With Python 3.7+ on the device, the shell becomes the same supervisor the local transport uses
  (_supervisor.py, pushed into the workdir): a child subreaper that stops what the runner leaves running,
  forwards the deadline's signals to the whole tree and stops it when the connection ends (its stdin is
  the channel, which the host never writes to).
* Without it, a shell wrapper: the runner runs in the background with ZBENCH_LAUNCH=<token> in its
  environment, which every process it starts inherits; on the runner's exit, on SIGTERM / SIGINT / SIGHUP
  and (with `watch_stdin`) when the channel's stdin reaches end of file, the runner and every process whose
  /proc/PID/environ carries the token get SIGTERM, then SIGKILL. The runner is signalled by its pid as well:
  until `env` has exec'd it, its environment does not carry the token yet. Only the wrapper shell, the
  runner's parent, signals that pid (the watchdog on stdin asks it to, with SIGTERM), so the pid cannot
  have been reused by then; the watchdog is stopped once the runner has been reaped. A process that both
  leaves the runner's process group and replaces its environment escapes it: on such devices install
  Python 3, or keep runners that do not daemonise.

Either way the status the host reads is the runner's (a runner killed by signal N kills the shell with N).
"""

from __future__ import annotations

import secrets
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import DeviceError, UsageError
from ..inventory import ENV_NAME
from ._supervisor import HOST_FOLDER, KEEPER_ID_FILE, LEFTOVER_MARK
from .base import KILL_GRACE_S, SUPERVISOR_STOP_S

PID_MARK = "zbench-pid:"
SIGNALS = ("TERM", "KILL")
LAUNCH_VARIABLE = "ZBENCH_LAUNCH"
SUPERVISOR_NAME = f"{HOST_FOLDER}/supervisor.py"  # in the device workdir


def quote_argv(argv: Sequence[str]) -> str:
    if not argv:
        raise UsageError("cannot run an empty argv")
    return " ".join(shlex.quote(str(arg)) for arg in argv)


def launch_token() -> str:
    """A fresh marker for one launch's processes (hex: safe anywhere in shell text)."""
    return "zb" + secrets.token_hex(12)


def _env_prefix(env: Mapping[str, str] | None, token: str | None) -> str:
    entries = dict(env or {})
    for key in entries:
        if not ENV_NAME.fullmatch(key):
            raise UsageError(f"environment variable name {key!r} is not a valid shell name")
    if token is not None:
        entries[LAUNCH_VARIABLE] = token
    return "env " + " ".join(shlex.quote(f"{k}={v}") for k, v in entries.items()) + " " if entries else ""


def wrapped_command(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """The command string that reports its pid on the first stdout line, then becomes argv (no supervision:
    for short housekeeping commands)."""
    return f"echo {PID_MARK}$$; exec {_env_prefix(env, None)}{quote_argv(argv)}"


def _marked_pids(token: str) -> str:
    """Shell text printing the pid of every process carrying the token in its environment, but this shell."""
    return (f"for zb_f in $(grep -l -F {LAUNCH_VARIABLE}={token} /proc/[0-9]*/environ 2>/dev/null); do "
            'zb_p=${zb_f#/proc/}; zb_p=${zb_p%/environ}; [ "$zb_p" = "$$" ] || echo "$zb_p"; done')


def supervised_command(argv: Sequence[str], env: Mapping[str, str] | None, *, token: str,
                       supervisor: str | None = None, watch_stdin: bool = False) -> str:
    """The command string of a launch: the pid line, then the supervisor (`supervisor`: its path on the
    device, when the device has Python 3.7+) or the shell wrapper (module docstring)."""
    prefix = _env_prefix(env, token)
    if supervisor is not None:
        # --pdeathsig: the parent is the sshd (adbd) process serving the channel, gone with the connection
        return (f"echo {PID_MARK}$$; exec {prefix}python3 -I {shlex.quote(supervisor)} run --pdeathsig -- "
                f"{quote_argv(argv)}")
    rounds = max(1, int(KILL_GRACE_S * 10))
    # zb_runner is set only while the runner is this shell's unreaped child (its pid cannot be reused)
    runner_too = '[ -n "$zb_runner" ] && kill -s TERM $zb_runner 2>/dev/null; '
    stop = (f"zb_stop() {{ {runner_too}for zb_p in $(zb_marked); do kill -s TERM $zb_p 2>/dev/null; done; "
            f'zb_i=0; while [ -n "$(zb_marked)" ] && [ $zb_i -lt {rounds} ]; do sleep 0.1 2>/dev/null || sleep 1; '
            "zb_i=$((zb_i + 1)); done; for zb_p in $(zb_marked); do kill -s KILL $zb_p 2>/dev/null; done; }")
    # $$ in the watchdog subshell is this shell; it is stopped below before this shell exits
    watchdog = ("exec 3<&0; { cat <&3 >/dev/null 2>&1; kill -s TERM $$; } >/dev/null 2>&1 </dev/null & "
                "zb_watch=$!; " if watch_stdin else "")
    unwatch = 'kill -s KILL $zb_watch 2>/dev/null; ' if watch_stdin else ""
    return "; ".join([
        f"echo {PID_MARK}$$",
        "zb_runner=",
        f"zb_marked() {{ {_marked_pids(token)}; }}",
        stop,
        "trap 'zb_stop; exit 143' TERM", "trap 'zb_stop; exit 129' HUP", "trap 'zb_stop; exit 130' INT",
        f"{prefix}{quote_argv(argv)} </dev/null & zb_runner=$!",
        f"{watchdog}wait $zb_runner; zb_status=$?; zb_runner=; {unwatch}true",
        # the runner has exited: whatever of it is still running is a leftover
        f'zb_left=$(zb_marked | wc -l); if [ "$zb_left" -gt 0 ]; then zb_stop; echo "{LEFTOVER_MARK}$zb_left" >&2; fi',
        # a runner killed by signal N: the shell dies of N too, so the host reads the same status as before
        'if [ $zb_status -gt 128 ] && [ $zb_status -lt 160 ]; then trap - TERM HUP INT; '
        "kill -s $(kill -l $((zb_status - 128))) $$; fi",
        "exit $zb_status",
    ])


def keeper_command(workdir: str, keeper_id: str, *, supervisor: str | None, python: str = "python3") -> str:
    """A command that waits for end of file on stdin (the connection ended), then removes `workdir` unless a
    newer connection's keeper took it over (each keeper writes its id into the workdir first)."""
    folder, marker = shlex.quote(workdir), shlex.quote(f"{workdir}/{KEEPER_ID_FILE}")
    if not keeper_id.isalnum():
        raise ValueError(f"keeper id {keeper_id!r} must be alphanumeric")
    if supervisor is not None:
        return f"exec {shlex.quote(python)} -I {shlex.quote(supervisor)} keep {folder} {keeper_id}"
    return (f"mkdir -p {shlex.quote(f'{workdir}/{HOST_FOLDER}')} && echo {keeper_id} > {marker}; cat >/dev/null 2>&1; "
            f'[ "$(cat {marker} 2>/dev/null)" = {keeper_id} ] && rm -rf -- {folder}; true')


def parse_pid_line(line: str) -> int | None:
    line = line.strip()
    if line.startswith(PID_MARK):
        digits = line[len(PID_MARK):]
        if digits.isascii() and digits.isdigit():  # a pid, never "-1" (every process) nor other scripts' digits
            return int(digits)
    return None


def kill_command(pid: int, signal: str, token: str | None = None) -> str:
    """Signal the process group led by pid, pid itself and (with `token`) every process of the launch;
    never fails."""
    if signal not in SIGNALS or not isinstance(pid, int) or pid <= 1:
        raise ValueError(f"refusing to build a kill for pid {pid!r} signal {signal!r}")
    # `kill -s SIG -- -PGID` is the portable spelling (dash rejects `kill -SIG -- -PGID`); the second form
    # covers shells without `--`.
    marked = "" if token is None else f"for zb_p in $({_marked_pids(_token(token))}); do kill -s {signal} $zb_p 2>/dev/null; done; "
    return (f"kill -s {signal} -- -{pid} 2>/dev/null || kill -{signal} -{pid} 2>/dev/null; "
            f"kill -s {signal} {pid} 2>/dev/null; {marked}true")


@dataclass(frozen=True)
class StopStep:
    """One step of stopping a launch on a device: send `command`, then ask `alive_command` until the launch
    is gone (`note`) or `wait_s` has passed."""

    command: str
    wait_s: float
    note: str


def stop_policy(pid: int, token: str) -> tuple[StopStep, StopStep]:
    """How the ssh and adb transports stop a launch at its deadline: TERM the runner's supervisor or shell
    wrapper (it stops the whole tree), wait as long as its own grace; then KILL every process of the launch
    and wait KILL_GRACE_S. A launch still there after both is `still_running`."""
    return (StopStep(kill_command(pid, "TERM"), SUPERVISOR_STOP_S, f"runner (pid {pid}) terminated on the device"),
            StopStep(kill_command(pid, "KILL", token), KILL_GRACE_S, f"runner (pid {pid}) killed on the device"))


def still_running(device: str, pid: int, where: str, state: str | None) -> DeviceError:
    return DeviceError(f"device {device}: runner pid {pid} is still running on {where} after SIGKILL "
                       f"(state: {state!r}); stop it by hand before measuring again")


def alive_command(pid: int, token: str | None = None) -> str:
    """Prints `alive` while pid, any member of its process group or (with `token`) any process of the
    launch exists, else `gone`."""
    if not isinstance(pid, int) or pid <= 1:
        raise ValueError(f"bad pid {pid!r}")
    marked = "" if token is None else f' || [ -n "$({_marked_pids(_token(token))})" ]'
    return (f"if kill -s 0 {pid} 2>/dev/null || kill -s 0 -- -{pid} 2>/dev/null{marked}; "
            f"then echo alive; else echo gone; fi")


def _token(token: str) -> str:
    if not token.isalnum():
        raise ValueError(f"launch token {token!r} must be alphanumeric")
    return token
