"""A device as the host sees it: its inventory entry, an open transport, its runner's probe, and launches.

One launch = one runner process = the unit of statistical independence (docs/methodology.md §1). Whatever a launch
wrote is pulled back and read even when the runner failed or was killed: partial samples are data.
"""

from __future__ import annotations

import datetime as _dt
import re
import shutil
import signal
import tempfile
import unicodedata
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import DeviceError
from ...inventory import DeviceSpec, Display, Inventory
from ...protocol import (
    FrameTable,
    Issue,
    Job,
    Probe,
    ProtocolError,
    RunResult,
    cap_issues,
    capture_name,
    capture_problem,
    parse_probe_output,
    parse_progress,
    read_frames_csv,
    read_result_json,
)
from ...protocol.limits import MAX_ARTIFACT_BYTES
from ...transports import CommandResult, Transport, device_join, make_transport
from .android_frame_parsers import PLATFORM_DUMPS
from .background import Background
from .refresh_rate import RefreshRate, measure_refresh

if TYPE_CHECKING:
    from ...settings import Settings
    from .android_frame_parsers import PlatformLaunch

PROBE_CLOSE_WAIT_S = 5.0  # how long closing a device waits for a probe started early (Device.close)
PROBE_TIMEOUT_S = 120.0  # unless --zbench-timeout or the device's timeout_s says otherwise (Settings.probe_timeout)
# The surface size used when neither the inventory nor the probe says what the screen is (the refresh rate
# has its own fallbacks: host/devices/refresh_rate.py).
DEFAULT_SIZE = (800, 480)
SAFE_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")

ProgressCallback = Callable[[int, int], None]
# Values of a device's `env` shorter than this are not masked in what its runner writes: masking `1` or `on`
# would garble every message and hide nothing (README "Devices", `env`).
MASK_MIN_CHARS = 6
MASK = "***"
# Unicode's direction overrides and isolates: text that reads differently from what it is.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def sanitise(text: str, secrets: Iterable[str] = ()) -> str:
    """A runner's text as it may reach the terminal, run.json and report.html: the device's `env` values
    masked, and control characters (NUL, ESC of a colour code or a screen clear, BEL, a carriage return that
    overwrites the line) written as escapes; newlines and tabs stay."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return "".join(ch if ch in "\n\t" or (unicodedata.category(ch) != "Cc" and ch not in BIDI_CONTROLS)
                   else f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}" for ch in text)


def env_secrets(spec: DeviceSpec) -> list[str]:
    """The values of the device's `env` that are masked in what its runner writes (sanitise): not search paths
    (PATH, PYTHONPATH, LD_LIBRARY_PATH), which a traceback quotes and which hold no secret."""
    return [value for name, value in spec.env.items()
            if len(value) >= MASK_MIN_CHARS and not name.endswith("PATH")]


def safe_component(name: str) -> str:
    """A scene id or run id used as a folder name, on the host or the device: never a path of its own."""
    if not SAFE_COMPONENT.fullmatch(name) or ".." in name:
        raise DeviceError(f"{name!r} cannot be used as a folder name (letters, digits, '.', '_', '-' only)")
    return name


@dataclass
class LaunchOutcome:
    index: int
    exit_code: int | None
    timed_out: bool
    wall_s: float
    frames: FrameTable
    result: RunResult
    captures: dict[int, Path]
    local_dir: Path
    issues: list[Issue] = field(default_factory=list)
    stderr_tail: str = ""
    started_utc: str = ""
    ended_utc: str = ""
    conditions: dict[str, Any] = field(default_factory=dict)  # {"before": ..., "after": ...} platform samples
    retried: dict[str, Any] | None = None  # the first attempt, when a lost connection made it run again
    platform_frames: PlatformLaunch | None = None  # Android's own frame timing of the launch (host/devices/android_frame_dumps.py)

    @property
    def complete(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def partial(self) -> bool:
        return not self.complete

    @property
    def connection_lost(self) -> bool:
        """The transport lost the device mid-launch (no exit status, no deadline): worth one retry."""
        return self.exit_code is None and not self.timed_out

    @property
    def runner_wall_ms(self) -> float | None:
        value = self.result.extra.get("wall_ms")
        return float(value) if isinstance(value, (int, float)) else None

    @property
    def runner_peak_rss_kb(self) -> int | None:
        """The runner's peak resident set over the launch, as it reported it (result.json peak_rss_kb)."""
        value = self.result.extra.get("peak_rss_kb")
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class Device:
    """An open device: `probe()` once, then `launch(job)` as often as needed; `close()` at session end."""

    def __init__(self, spec: DeviceSpec, transport: Transport, *, probe_timeout_s: float = PROBE_TIMEOUT_S) -> None:
        self.spec = spec
        self.transport = transport
        self.probe_timeout_s = probe_timeout_s
        self._probe: Probe | None = None
        self._other_probes: dict[tuple[str, ...], Probe] = {}
        self._refresh: RefreshRate | None = None
        self._side: Transport | None = None
        self._opened = False
        self._probing: Background[CommandResult] | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    def open(self) -> None:
        if not self._opened:
            self.transport.open()
            self._opened = True

    def close(self) -> None:
        probing, self._probing = self._probing, None
        if probing is not None:
            # A probe still running (a session interrupted in its first setup) gets a moment to end; a hung one
            # is not waited for: closing the transport ends it (the connection, or the local supervisor's
            # watchdog once this host exits), and its own deadline bounds it anyway.
            probing.wait(PROBE_CLOSE_WAIT_S)
        if self._side is not None:
            side, self._side = self._side, None
            side.close()
        if self._opened:
            self._opened = False
            self.transport.close()

    def side_channel(self) -> Transport:
        """A second connection to the device, opened once, for commands that run while a launch holds the
        first (the platform frame dumps, host/devices/android_frame_dumps.py)."""
        if self._side is None:
            side = make_transport(self.spec)
            side.open()
            self._side = side
        return self._side

    def start_probe(self) -> None:
        """Start the runner's probe in the background; `probe()` waits for it. Started before the host imports
        what it measures with, the probe's process (for the reference runner a Python start, a Skia import and
        an EGL context: 0.3-0.5 s) runs beside those imports instead of after them (README, "Performance")."""
        if self._probe is None and self._probing is None:
            self._probing = Background(self._run_probe)

    def _run_probe(self, runner: Sequence[str] | None = None) -> CommandResult:
        self.open()
        return self.transport.run([*(runner or self.spec.runner), "probe"], timeout_s=self.probe_timeout_s)

    def probe(self) -> Probe:
        if self._probe is None:
            probing, self._probing = self._probing, None
            result = probing.outcome() if probing is not None else self._run_probe()
            self._probe = self._parse_probe(result, self.spec.runner,
                                            hint=f"Check the 'runner' entry of device {self.name} in {self.spec.source}.")
        return self._probe

    def probe_runner(self, runner: Sequence[str]) -> Probe:
        """The probe of another runner on this device (an A/B's B, --zbench-ab), once per session: its build."""
        key = tuple(runner)
        if key not in self._other_probes:
            self._other_probes[key] = self._parse_probe(self._run_probe(key), key, hint="Check --zbench-ab.")
        return self._other_probes[key]

    def _parse_probe(self, result: CommandResult, runner: Sequence[str], *, hint: str) -> Probe:
        command = " ".join(runner)
        if not result.ok:
            why = (f"did not answer within its {self.probe_timeout_s:g} s deadline" if result.timed_out
                   else f"exited with {result.exit_code}")
            tail = self._tail(result.stderr)
            # A runner that names what to install has said what to do; else the entry is the suspect.
            raise DeviceError(f"device {self.name}: runner probe `{command} probe` {why}: {tail}"
                              f"{'' if 'pip install' in tail else chr(10) + hint}")
        try:
            return parse_probe_output(result.stdout, source=f"device {self.name}: `{command} probe`")
        except ProtocolError as exc:
            raise DeviceError(self._clean(str(exc))) from None

    def sample_conditions(self, *, facts: bool = True) -> dict[str, Any]:
        """The platform probe now (temperature, clocks, throttling, power); never raises. `facts=False`
        beside a launch: without the probes of what the device is (conditions_probe.sample_conditions)."""
        from .conditions_probe import sample_conditions

        return sample_conditions(self.transport, self.spec, facts=facts)

    def refresh(self) -> RefreshRate:
        """The display's refresh rate and where it comes from (host/devices/refresh_rate.py), read once."""
        if self._refresh is None:
            self._refresh = measure_refresh(self.spec, self.transport, self.probe().display)
        return self._refresh

    def display(self) -> Display:
        """The surface the scenes are sized for; its refresh_hz is `refresh()`: declared, else measured."""
        refresh = self.refresh()
        if self.spec.display is not None:
            return Display(self.spec.display.width, self.spec.display.height, refresh.hz)
        probed = self.probe().display or {}
        try:
            return Display(int(probed["width"]), int(probed["height"]), refresh.hz)
        except (KeyError, TypeError, ValueError):
            return Display(*DEFAULT_SIZE, refresh.hz)

    def launch(self, job: Job, index: int, local_dir: Path, *, timeout_s: float,
               on_progress: ProgressCallback | None = None, runner: Sequence[str] | None = None) -> LaunchOutcome:
        """Run one launch of `job`, pull what it wrote into `local_dir`, and read it whatever happened.

        `runner` replaces the device's own runner argv for this launch (the B side of an A/B comparison)."""
        started_utc = utc_now()
        self.open()
        # A folder of this launch's own in the workdir, under a name nothing else has: the workdir may be a
        # folder of the device's (`workdir: /etc`), and what is removed after the launch is only what the launch
        # created, never a folder that happened to be there under the scene's id.
        scene_dir = device_join(self.transport.workdir(),
                                f".zbench-{safe_component(job.scene['id'])}-{uuid.uuid4().hex[:16]}")
        outdir = device_join(scene_dir, f"launch-{index}")
        remote_job = device_join(scene_dir, f"launch-{index}.job.json")
        # The local folder starts empty, so that nothing an earlier session left there is read as this launch's
        # output; the host's own platform frame dumps of this launch, taken just before it
        # (host/devices/android_frame_dumps.py), stay.
        empty_folder(local_dir, keep=(PLATFORM_DUMPS,))
        self.transport.mkdir(outdir)
        job_json = job.to_json()  # serialised once: the device's copy and the launch folder's are the same text
        with tempfile.TemporaryDirectory(prefix="zbench-job-") as tmp:
            job_file = Path(tmp) / "job.json"
            job_file.write_text(job_json, encoding="utf-8")
            self.transport.push(job_file, remote_job)
        (local_dir / "job.json").write_text(job_json, encoding="utf-8")

        def on_line(line: str) -> None:
            progress = parse_progress(line)
            if progress is not None and on_progress is not None:
                on_progress(*progress)

        argv = [*(runner or self.spec.runner), "run", remote_job, outdir]
        result = self.transport.run(argv, timeout_s=timeout_s, on_line=on_line)
        issues: list[Issue] = []
        too_large: dict[str, int] = {}
        try:
            too_large = self.transport.pull_dir(outdir, local_dir, max_bytes=MAX_ARTIFACT_BYTES).too_large
        except (OSError, DeviceError) as exc:
            # What was measured stays on the device (the next launch in this folder empties it first); what
            # was pulled before the failure is read below.
            issues.append(Issue("protocol", f"could not pull {outdir} from device {self.name}: {exc}; what the "
                                            f"runner wrote is left on the device in {outdir}"))
        else:
            self.transport.remove_tree(scene_dir)
        for name, size in sorted(too_large.items()):
            if not name.startswith("capture-"):
                issues.append(Issue("protocol", _too_large(name, size)))
        frames = (FrameTable() if "frames.csv" in too_large
                  else read_frames_csv(local_dir / "frames.csv", max_rows=job.total_frames))
        run_result = RunResult() if "result.json" in too_large else read_result_json(local_dir / "result.json")
        captures, invalid = self._captures(job, local_dir, too_large)
        if result.timed_out:
            issues.append(Issue("timeout", f"runner killed at its {timeout_s:.0f} s deadline on device {self.name}"))
        elif result.exit_code is None:
            issues.append(Issue("connection_lost", f"connection to device {self.name} lost during the launch: "
                                                   f"{self._tail(result.stderr)}"))
        elif result.exit_code != 0:
            issues.append(Issue("exit", f"runner {describe_exit(result.exit_code, self.spec.transport)}: "
                                        f"{self._tail(result.stderr)}"))
        if result.leftover:
            issues.append(Issue("leftover", f"the runner left {result.leftover} process(es) running when it "
                                            f"exited on device {self.name}; they were stopped"))
        rendered = len(frames.rows)
        # A sustained job ends at its duration, before its frame cap: short of the cap is not partial then.
        ended_at_duration = job.duration_s is not None and result.ok and rendered > job.warmup_frames
        if rendered < job.total_frames and not ended_at_duration:
            issues.append(Issue("partial", f"{rendered} of {job.total_frames} frames rendered; the rows are kept"))
        if result.ok:
            missing = sorted(set(job.capture) - set(captures) - set(invalid))
            if missing:
                issues.append(Issue("capture_missing", f"runner wrote no capture for frames {missing}"))
        issues += [Issue("capture_invalid", f"{why}; frame {frame} is not compared and never becomes a golden",
                         frame) for frame, why in sorted(invalid.items())]
        return LaunchOutcome(
            index=index,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            wall_s=result.wall_s,
            frames=frames,
            result=run_result,
            captures=captures,
            local_dir=local_dir,
            # What the runner wrote is cleaned (the host's own issues quote it through _tail already).
            issues=cap_issues(issues + [Issue(i.kind, self._clean(i.detail), i.frame)
                                        for i in frames.issues + run_result.issues], run_result.issues_not_kept),
            stderr_tail=self._tail(result.stderr),
            started_utc=started_utc,
            ended_utc=utc_now(),
        )


    def _clean(self, text: str) -> str:
        return sanitise(text, env_secrets(self.spec))

    def _tail(self, text: str) -> str:
        return self._clean(_tail(text))

    def _captures(self, job: Job, local_dir: Path, too_large: dict[str, int]) -> tuple[dict[int, Path],
                                                                                       dict[int, str]]:
        """The launch's captures that are 8-bit RGBA PNGs of the scene's size, and why the others are not."""
        captures: dict[int, Path] = {}
        invalid: dict[int, str] = {}
        width, height = job.scene["width"], job.scene["height"]
        for frame in job.capture:
            name = capture_name(frame)
            if name in too_large:
                invalid[frame] = _too_large(name, too_large[name])
            elif (local_dir / name).is_file():
                problem = capture_problem(local_dir / name, width, height)
                if problem is None:
                    captures[frame] = local_dir / name
                else:
                    invalid[frame] = problem
        return captures, invalid


def session_device(spec: DeviceSpec, settings: Settings) -> Device:
    """A device of a session, not yet opened: its transport, its probe's deadline from the settings."""
    return Device(spec, make_transport(spec), probe_timeout_s=settings.probe_timeout(spec.timeout_s, PROBE_TIMEOUT_S))


def start_probes(settings: Settings, inventory: Inventory) -> dict[str, Device]:
    """The session's device with its probe started (Device.start_probe), for a session on one device: its
    first test needs it. None for a session on several devices (each may be measured by another xdist worker,
    which would probe the rest for nothing) or on a device the inventory lacks (its first test says so)."""
    if len(settings.devices) != 1 or settings.devices[0] not in inventory.devices:
        return {}
    device = session_device(inventory.get(settings.devices[0]), settings)
    device.start_probe()
    return {device.name: device}


def _too_large(name: str, size: int) -> str:
    return (f"{name} is {size} bytes, more than the {MAX_ARTIFACT_BYTES} bytes a launch's file may be "
            "(MAX_ARTIFACT_BYTES); it was left on the device and not read")


def empty_folder(path: Path, keep: Sequence[str] = ()) -> None:
    """`path` as an empty folder but for the entries named in `keep`: whatever else was there (a file, a
    folder, a link) is removed first."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        for entry in path.iterdir():
            if entry.name in keep and entry.is_dir() and not entry.is_symlink():
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    path.mkdir(parents=True, exist_ok=True)


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")


def describe_exit(code: int, transport: str) -> str:
    """A runner's exit status in words. A runner killed by signal N exits -N over local and ssh (the
    process's own status) and 128+N over adb and command (a shell's convention): both read the same."""
    number = -code if code < 0 else code - 128 if transport in ("adb", "command") and 128 < code < 160 else None
    if number is None:
        return f"exited with {code}"
    try:
        name = f" ({signal.Signals(number).name})"
    except ValueError:
        name = ""
    return f"killed by signal {number}{name} (exit status {code})"


def _tail(text: str, lines: int = 8) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return "\n".join(kept) if kept else "(no output on stderr)"
