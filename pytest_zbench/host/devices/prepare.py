"""Device preparation (README "Preparing a device"): the inventory's `prepare` steps run on the device
through its transport once per session, before its first scene, and undone at the session's end, even when
the session fails or is interrupted; a cooldown before each scene.

Each step is a fixed POSIX sh script whose inputs (the sysfs folder, a governor name, a value read back
from the device) are passed as positional arguments, never joined into the script; the user's own steps
are argv lists. What a step did, or why it could not (no root, no cpufreq on this kernel), is a plain
record, run.json `conditions.prepared`:

    {"name": "governor", "done": true, "reason": null, "old": {"cpu0": "schedutil"}, "new": "performance",
     "changed": ["cpu0"], "restored": true, "restore_reason": null}

Parsing and deciding take plain values (`governor_record`, `screen_record`, `cooldown_wait`): the scripts'
output is text, the clock and the temperature reader are arguments.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import DeviceError, ZbenchError
from ...inventory import CommandStep, CooldownSpec, DeviceSpec, PrepareSpec
from ...transports import make_transport
from .conditions_probe import parse_thermal_zones

STEP_TIMEOUT_S = 30.0
# What the device gives back and the host passes to a later script: checked before it is, though it goes
# as an argument, so that a restore never writes something the prepare step did not read.
CPU_RE = re.compile(r"cpu[0-9]+")
GOVERNOR_RE = re.compile(r"[A-Za-z0-9_]+")
STAY_ON_RE = re.compile(r"[0-9]+")

# Prints `uid N`, then per CPU `cpu <name> <old> <same|set|unavailable|failed> [detail]`, or `none`.
GOVERNOR_SET = r"""
root=$1; want=$2
echo "uid $(id -u)"
found=0
for f in "$root"/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor; do
  [ -e "$f" ] || continue
  found=1
  c=${f%/cpufreq/scaling_governor}; c=${c##*/}
  old=$(cat "$f" 2>/dev/null) || { echo "cpu $c ? failed unreadable"; continue; }
  avail=$(cat "${f%scaling_governor}scaling_available_governors" 2>/dev/null)
  if [ -n "$avail" ]; then
    case " $avail " in *" $want "*) ;; *) echo "cpu $c $old unavailable $avail"; continue;; esac
  fi
  if [ "$old" = "$want" ]; then echo "cpu $c $old same"; continue; fi
  if err=$( (echo "$want" > "$f") 2>&1 ); then echo "cpu $c $old set"
  else echo "cpu $c $old failed $(echo "$err" | tr '\n' ' ')"; fi
done
[ $found = 1 ] || echo none
"""
# Arguments: the sysfs folder, then pairs of CPU and governor. Prints `cpu <name> <restored|failed> [detail]`.
GOVERNOR_RESTORE = r"""
root=$1; shift
while [ $# -ge 2 ]; do
  f="$root/devices/system/cpu/$1/cpufreq/scaling_governor"
  if err=$( (echo "$2" > "$f") 2>&1 ); then echo "cpu $1 restored"
  else echo "cpu $1 failed $(echo "$err" | tr '\n' ' ')"; fi
  shift 2
done
"""
# Prints `<zone> <type> <millidegrees>` per readable zone (platform_probe.parse_thermal_zones reads it).
THERMAL_READ = r"""
root=$1
for z in "$root"/class/thermal/thermal_zone*; do
  [ -r "$z/temp" ] || continue
  t=$(cat "$z/temp" 2>/dev/null) || continue
  ty=$(cat "$z/type" 2>/dev/null | tr ' ' _)
  echo "${z##*/} ${ty:-unknown} $t"
done
"""
# Android: the old stay-on setting, then whether `svc power stayon true` took; the screen is woken up.
SCREEN_ON = r"""
echo "old $(settings get global stay_on_while_plugged_in 2>/dev/null)"
if out=$(svc power stayon true 2>&1); then echo set; else echo "failed $(echo "$out" | tr '\n' ' ')"; fi
input keyevent KEYCODE_WAKEUP >/dev/null 2>&1
exit 0
"""
SCREEN_RESTORE = r"""
if [ -n "$1" ]; then settings put global stay_on_while_plugged_in "$1"; else svc power stayon false; fi
"""

def run_script(transport: Any, script: str, *args: str) -> tuple[int | None, str]:
    """Run a fixed script with positional arguments on the device: (exit code, output)."""
    return run_argv(transport, ["sh", "-c", script, "zbench-prepare", *args])


def run_argv(transport: Any, argv: list[str]) -> tuple[int | None, str]:
    try:
        ran = transport.run(argv, timeout_s=STEP_TIMEOUT_S)
    except (DeviceError, OSError) as exc:
        return None, f"could not run it: {exc}"
    if ran.timed_out:
        return None, f"timed out after {STEP_TIMEOUT_S:.0f} s"
    return ran.exit_code, ran.stdout + ran.stderr


def step(name: str, *, done: bool, reason: str | None = None, old: Any = None, new: Any = None,
         **extra: Any) -> dict[str, Any]:
    """One `conditions.prepared` record (restored / restore_reason are filled in at the session's end)."""
    return {"name": name, "done": done, "reason": None if done else reason, "old": old, "new": new, **extra,
            "restored": None, "restore_reason": None}


def needs_root(uid: int | None, detail: str) -> str:
    """Why a write failed: as any user but root, that it needs root (research: record it, do not fail)."""
    return f"needs root ({detail.strip()})" if uid not in (None, 0) else detail.strip()


def governor_record(want: str, exit_code: int | None, output: str, *, sysfs: str) -> dict[str, Any]:
    """The governor step's record from GOVERNOR_SET's output: done when every CPU now runs `want`."""
    if exit_code != 0:
        return step("governor", done=False, reason=f"the governor script failed: {output.strip()[-300:]}", new=want)
    uid: int | None = None
    old: dict[str, str] = {}
    changed: list[str] = []
    problems: list[str] = []
    found = False
    for line in output.splitlines():
        parts = line.split(maxsplit=4)
        if len(parts) == 2 and parts[0] == "uid" and parts[1].isdigit():
            uid = int(parts[1])
        elif len(parts) >= 4 and parts[0] == "cpu" and CPU_RE.fullmatch(parts[1]):
            found = True
            cpu, was, outcome = parts[1], parts[2], parts[3]
            detail = parts[4] if len(parts) > 4 else ""
            if GOVERNOR_RE.fullmatch(was):
                old[cpu] = was
            if outcome == "set":
                changed.append(cpu)
            elif outcome == "unavailable":
                problems.append(f"{cpu}: {want} is not one of its governors ({detail.strip()})")
            elif outcome == "failed":
                problems.append(f"{cpu}: {needs_root(uid, detail or 'the write failed')}")
    if not found:
        return step("governor", done=False, new=want,
                    reason=f"no cpufreq governor under {sysfs}/devices/system/cpu (kernel without cpufreq?)")
    reason = "; ".join(problems) if problems else None
    if problems and all("needs root" in p for p in problems):
        reason = f"needs root: {reason}"
    return step("governor", done=not problems, reason=reason, old=old, new=want, changed=changed)


def governor_restore_args(record: dict[str, Any]) -> list[str]:
    """CPU and old governor pairs of the CPUs the step changed."""
    args: list[str] = []
    for cpu in record.get("changed") or []:
        was = (record.get("old") or {}).get(cpu)
        if CPU_RE.fullmatch(cpu) and isinstance(was, str) and GOVERNOR_RE.fullmatch(was):
            args += [cpu, was]
    return args


def screen_record(exit_code: int | None, output: str) -> dict[str, Any]:
    """The Android screen step's record from SCREEN_ON's output."""
    old = None
    outcome = ""
    for line in output.splitlines():
        if line.startswith("old "):
            value = line[4:].strip()
            old = value if STAY_ON_RE.fullmatch(value) else None
        elif line == "set" or line.startswith("failed"):
            outcome = line
    if exit_code != 0 or outcome != "set":
        detail = outcome[len("failed"):].strip() if outcome.startswith("failed") else output.strip()[-300:]
        return step("screen_on", done=False, reason=f"svc power stayon true failed: {detail}", old=old, new="stay on")
    return step("screen_on", done=True, old=old, new="stay on")


def hottest_c(output: str) -> float | None:
    """The hottest thermal zone's temperature in THERMAL_READ's output; None when none reads plausibly."""
    zones = parse_thermal_zones(output)
    return max((z["temp_c"] for z in zones.values()), default=None)


def cooldown_wait(spec: CooldownSpec, read_c: Callable[[], float | None], *,
                  clock: Callable[[], float] = time.monotonic,
                  sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Wait until `read_c()` is under `spec.below_c`, for at most `spec.max_wait_s`: a scene's run.json
    `cooldown` (temperatures at the start and the end, the time waited, whether it got there)."""
    start = clock()
    first = current = read_c()
    while current is not None and current >= spec.below_c and clock() - start < spec.max_wait_s:
        sleep(min(spec.poll_s, max(0.0, spec.max_wait_s - (clock() - start))))
        current = read_c()
    waited = round(clock() - start, 2)
    if current is None:
        return {"below_c": spec.below_c, "max_wait_s": spec.max_wait_s, "temp_start_c": first, "temp_end_c": None,
                "waited_s": waited, "reached": False, "reason": "no readable thermal zone"}
    reached = current < spec.below_c
    return {"below_c": spec.below_c, "max_wait_s": spec.max_wait_s, "temp_start_c": first, "temp_end_c": current,
            "waited_s": waited, "reached": reached,
            "reason": None if reached else f"still {current:g} °C after the {spec.max_wait_s:g} s wait: measured hot"}


def cool_down(transport: Any, prepare: PrepareSpec) -> dict[str, Any] | None:
    """The cooldown before a scene on the device (None when the inventory asks for none)."""
    if prepare.cooldown is None:
        return None

    def read_c() -> float | None:
        code, output = run_script(transport, THERMAL_READ, prepare.sysfs)
        return hottest_c(output) if code == 0 else None

    return cooldown_wait(prepare.cooldown, read_c)


def cooldown_lines(scenes: list[dict[str, Any]]) -> list[str]:
    """The terminal's line for each scene measured hot: its cooldown's wait ran out above the threshold."""
    lines = []
    for scene in scenes:
        cooldown = scene.get("cooldown")
        if cooldown and not cooldown["reached"]:
            lines.append(f"cooldown: {scene['id']} on {scene['device']} was measured hot: {cooldown['reason']} "
                         f"(below_c {cooldown['below_c']:g}; run.json scenes[].cooldown)")
    return lines


@dataclass
class Preparation:
    """What was done to one device, and how to undo it. `restore` runs once (later calls do nothing)."""

    device: str
    prepare: PrepareSpec
    steps: list[dict[str, Any]] = field(default_factory=list)
    restored: bool = False

    def summary(self) -> str:
        parts = []
        for record in self.steps:
            if record["done"]:
                parts.append(f"{record['name']} done" + (f" (was {_short(record['old'])})" if record["old"] else ""))
            else:
                parts.append(f"{record['name']} not done: {record['reason']}")
        return "; ".join(parts) or "nothing to do"

    def to_undo(self) -> list[dict[str, Any]]:
        """The records of steps that changed something on the device and are not undone yet, newest first."""
        commands = {c.name: c for c in self.prepare.commands}

        def changed(record: dict[str, Any]) -> bool:
            name = record["name"]
            if name == "governor":
                return bool(governor_restore_args(record))
            if name == "screen_on":
                return bool(record["done"])
            return bool(record["done"]) and name in commands and commands[name].restore is not None

        return [r for r in reversed(self.steps) if r["restored"] is None and changed(r)]

    def restore(self, transport: Any) -> None:
        """Undo the steps in reverse order; each outcome goes into its record. A step already undone is not
        undone again, so a restore cut short (a second Ctrl-C) can be run again for the rest."""
        if self.restored:
            return
        commands = {c.name: c for c in self.prepare.commands}
        for record in self.to_undo():
            name = record["name"]
            if name == "governor":
                code, output = run_script(transport, GOVERNOR_RESTORE, self.prepare.sysfs,
                                          *governor_restore_args(record))
                failed = [line for line in output.splitlines() if " failed" in line]
                _restored(record, code == 0 and not failed, "; ".join(failed) or output.strip()[-300:])
            elif name == "screen_on":
                code, output = run_script(transport, SCREEN_RESTORE, record["old"] or "")
                _restored(record, code == 0, output.strip()[-300:])
            else:
                code, output = run_argv(transport, list(commands[name].restore or ()))
                _restored(record, code == 0, f"exit {code}: {output.strip()[-300:]}")
        self.restored = True

    def fail_restore(self, reason: str) -> None:
        """The device could not be reached to undo the steps: every step that needed undoing says so."""
        for record in self.to_undo():
            _restored(record, False, reason)
        self.restored = True


def _restored(record: dict[str, Any], ok: bool, reason: str) -> None:
    record["restored"] = ok
    record["restore_reason"] = None if ok else reason


def _short(value: Any) -> str:
    if isinstance(value, dict):
        values = sorted(set(map(str, value.values())))
        return values[0] if len(values) == 1 else ", ".join(f"{k} {v}" for k, v in value.items())
    return str(value)


def prepare_device(transport: Any, spec: DeviceSpec, preparation: Preparation | None = None) -> Preparation:
    """Run the device's prepare steps (the built-in ones, then the user's commands) into `preparation`. A
    step that cannot be done is recorded as such and the others still run; an interruption keeps what was
    done in the caller's `preparation`, so that its restore undoes it."""
    prep = spec.prepare or PrepareSpec()
    preparation = preparation if preparation is not None else Preparation(spec.name, prep)
    if prep.governor is not None:
        code, output = run_script(transport, GOVERNOR_SET, prep.sysfs, prep.governor)
        preparation.steps.append(governor_record(prep.governor, code, output, sysfs=prep.sysfs))
    if prep.screen_on:
        preparation.steps.append(screen_record(*run_script(transport, SCREEN_ON)))
    if prep.cooldown is not None:  # run before each scene (cool_down); here: whether a temperature can be read
        code, output = run_script(transport, THERMAL_READ, prep.sysfs)
        now = hottest_c(output) if code == 0 else None
        cooldown = {"below_c": prep.cooldown.below_c, "max_wait_s": prep.cooldown.max_wait_s}
        preparation.steps.append(step("cooldown", done=now is not None, new=cooldown, temp_c=now,
                                      reason=f"no readable thermal zone under {prep.sysfs}/class/thermal"))
    for command in prep.commands:
        preparation.steps.append(command_record(command, *run_argv(transport, list(command.run))))
    return preparation


def command_record(command: CommandStep, exit_code: int | None, output: str) -> dict[str, Any]:
    if exit_code == 0:
        return step(command.name, done=True, new=list(command.run))
    return step(command.name, done=False, new=list(command.run),
                reason=f"exit {exit_code}: {output.strip()[-300:]}" if exit_code is not None else output)


def prepare_on(spec: DeviceSpec, preparation: Preparation) -> None:
    """Prepare the device over a connection of its own into `preparation` (closed again: the restore opens
    another, so that a connection lost during the session does not keep the device prepared)."""
    transport = make_transport(spec)
    try:
        transport.open()
        prepare_device(transport, spec, preparation)
    except (ZbenchError, OSError) as exc:
        preparation.steps.append(step("connect", done=False, reason=f"could not reach the device: {exc}"))
    finally:
        _close(transport)


def restore_on(spec: DeviceSpec, preparation: Preparation) -> None:
    """Undo what `prepare_on` did, over a new connection; a device that cannot be reached is recorded."""
    if preparation.restored:
        return
    if not preparation.to_undo():
        preparation.restored = True
        return
    transport = make_transport(spec)
    try:
        transport.open()
        preparation.restore(transport)
    except (ZbenchError, OSError) as exc:
        preparation.fail_restore(f"could not reach the device to restore it: {exc}")
    finally:
        _close(transport)


def _close(transport: Any) -> None:
    try:
        transport.close()
    except Exception:  # noqa: BLE001 - closing must not hide what the steps did
        pass


# The restore record (README "Preparing a device"): what a session changed on a device and has not undone yet,
# kept on this host beside the device's lease files from the moment it is changed until it is undone. A
# session killed with SIGKILL cannot restore; the next session on the device finds its record and undoes
# those changes first, so that it reads (and later restores) the device's own settings, not the killed
# session's.
def restore_record_path(folder: Path, device: str) -> Path:
    return folder / f"{device}.restore.json"


def save_restore_record(folder: Path, preparation: Preparation) -> None:
    """Write (or, when nothing is left to undo, remove) the device's restore record."""
    path = restore_record_path(folder, preparation.device)
    pending = preparation.to_undo()
    if not pending:
        path.unlink(missing_ok=True)
        return
    folder.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps({"device": preparation.device, "pid": os.getpid(), "steps": pending}),
                         encoding="utf-8")
    temporary.replace(path)  # whole or not at all: a record cut short by a kill is never read half


def pending_restore(folder: Path, spec: DeviceSpec) -> Preparation | None:
    """The changes an earlier session left on the device undone (its restore record), as a Preparation
    whose restore undoes them; None when there is no record, or one this host cannot read (then removed)."""
    path = restore_record_path(folder, spec.name)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        steps = [dict(s) for s in raw["steps"] if isinstance(s, dict) and isinstance(s.get("name"), str)]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        path.unlink(missing_ok=True)
        return None
    for record in steps:
        record["restored"] = record["restore_reason"] = None
    return Preparation(spec.name, spec.prepare or PrepareSpec(), steps=steps)
