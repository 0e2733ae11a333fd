"""The device inventory (devices.yaml): what each device is and how to reach it.

Validated once at configure time; a mistake is a UsageError naming the file, the device and the key, and
nothing here is ever joined into a shell command (transports pass argv lists).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeGuard, get_args

import yaml

from .engine.deployed_runner import DeployedRunnerError, expand_deployed
from .errors import InventoryError
from .json_types import is_int, is_number
from .protocol.limits import MAX_SURFACE_SIDE
from .yaml_loader import DuplicateKeyError, load_yaml

TRANSPORTS = ("local", "ssh", "adb", "command")
# The operating system a device runs (devices.yaml `platform`). Not to be confused with Android's own frame
# records, which docs/platform-frames.md calls platform frames.
Platform = Literal["linux", "raspberrypi", "android", "macos", "ios", "webos"]
PLATFORMS: tuple[Platform, ...] = get_args(Platform)
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# An environment variable name a POSIX shell accepts (the ssh and adb transports pass `env` through one).
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Keys whose value is a positive number of seconds.
SECONDS_KEYS = ("timeout_s", "connect_timeout_s", "keepalive_s")
# An Android application id: two or more dot-separated segments, each starting with a letter.
PACKAGE_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+")

COMMON_KEYS = {"transport", "backend", "runner", "platform", "device_class", "display", "workdir", "description",
               "env", "timeout_s", "ci", "prepare"}
TRANSPORT_KEYS: dict[str, set[str]] = {
    "local": set(),
    "ssh": {"host", "port", "user", "identity_file", "known_hosts", "connect_timeout_s", "keepalive_s"},
    # package: the app whose frames Android times (gfxinfo); layer: its SurfaceFlinger layer; frame_timeline:
    # a Perfetto trace of Android 12+'s FrameTimeline around each launch (docs/platform-frames.md)
    "adb": {"serial", "adb_host", "adb_port", "package", "layer", "frame_timeline"},
    # Host-side scripts for devices reachable by neither ssh nor adb (docs/command-transport.md).
    "command": {"push", "pull", "exec", "kill"},
}
REQUIRED_KEYS: dict[str, tuple[str, ...]] = {
    "local": (),
    "ssh": ("host", "user"),
    "adb": ("serial",),
    "command": ("push", "pull", "exec"),
}


@dataclass(frozen=True)
class Display:
    width: int
    height: int
    refresh_hz: float
    refresh_declared: bool = True  # False when the entry left refresh_hz out: the device's own rate is used

    def to_dict(self) -> dict[str, Any]:
        return {"width": self.width, "height": self.height, "refresh_hz": self.refresh_hz}


# The `ci` key: how the GitHub Actions matrix runs the device (README "Running a device lab").
CI_KEYS = ("labels", "timeout_minutes", "pytest_args", "ab_runner")
# What a CI leg does, chosen by the event (lab/leg.py): a pull request's A/B, the suite ungated (a pull request
# on a device without ci.ab_runner), or the history gate (push, schedule).
LEG_MODES = ("ab", "suite", "history")
# Options a single leg mode takes: anywhere else the session refuses them (settings.py).
MODE_ONLY_OPTIONS = {"--zbench-budget": "ab"}
CI_DEFAULT_TIMEOUT_MINUTES = 60
# GitHub's limits on a job: 6 hours on its hosted runners, 5 days on a self-hosted one.
CI_MAX_TIMEOUT_MINUTES = {"hosted": 360, "self-hosted": 7200}
# Placeholder of `ci.ab_runner`: the folder of the checkout (merge base or pull request head) whose runner it is.
CHECKOUT_PLACEHOLDER = "{checkout}"


@dataclass(frozen=True)
class CiSpec:
    """The device's leg of the CI matrix: the runner labels a job for it runs on, its timeout, extra pytest
    arguments, and how to start the runner built from a checkout (pull request A/B; None: no A/B)."""

    labels: tuple[str, ...]
    timeout_minutes: int = CI_DEFAULT_TIMEOUT_MINUTES
    pytest_args: tuple[str, ...] = ()  # every leg mode's
    ab_runner: tuple[str, ...] | None = None
    mode_pytest_args: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # LEG_MODES' own, after those

    def args_for(self, mode: str) -> tuple[str, ...]:
        """The extra pytest arguments of a leg in `mode` (LEG_MODES): every mode's, then the mode's own."""
        return (*self.pytest_args, *self.mode_pytest_args.get(mode, ()))

    @property
    def hosted(self) -> bool:
        """A GitHub-hosted runner: every self-hosted runner carries the `self-hosted` label."""
        return "self-hosted" not in self.labels

    def runner_from(self, checkout: str) -> tuple[str, ...] | None:
        """`ab_runner` with the checkout's folder filled in."""
        if self.ab_runner is None:
            return None
        return tuple(arg.replace(CHECKOUT_PLACEHOLDER, checkout) for arg in self.ab_runner)


@dataclass(frozen=True)
class DeviceSpec:
    name: str
    transport: str
    backend: str
    runner: tuple[str, ...]
    platform: Platform
    device_class: str
    display: Display | None
    workdir: str | None
    env: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float | None = None
    # Transport-specific keys (host, port, serial, ...), validated against TRANSPORT_KEYS.
    options: Mapping[str, Any] = field(default_factory=dict)
    source: Path | None = None
    ci: CiSpec | None = None  # None: the device is not in the CI matrix
    prepare: PrepareSpec | None = None  # None: the device is measured as it is (README "Preparing a device")

    def option(self, key: str, default: Any = None) -> Any:
        return self.options.get(key, default)

    def public_dict(self) -> dict[str, Any]:
        """What may go into artifacts: no identity files, no known_hosts paths, no environment values."""
        return {
            "id": self.name,
            "transport": self.transport,
            "backend": self.backend,
            "platform": self.platform,
            "device_class": self.device_class,
            "display": self.display.to_dict() if self.display else None,
        }


@dataclass(frozen=True)
class Inventory:
    path: Path
    devices: Mapping[str, DeviceSpec]

    def get(self, name: str) -> DeviceSpec:
        try:
            return self.devices[name]
        except KeyError:
            known = ", ".join(sorted(self.devices)) or "(none)"
            raise InventoryError(
                f"unknown device {name!r}: {self.path} defines {known}. "
                f"Pick one of those with --zbench-device, or add an entry to the inventory."
            ) from None


# The embedded default (README "Devices"): the reference runner in a subprocess of this machine, which every
# project has without writing a devices.yaml; a project's inventory adds devices to it or overrides it by name.
EMBEDDED_LOCAL: dict[str, Any] = {
    "transport": "local", "backend": "software", "device_class": "host",
    "runner": ["python", "-m", "pytest_zbench.runner"],
    "display": {"width": 800, "height": 480, "refresh_hz": 60},
    "description": "the embedded default: the reference runner on this machine, Skia raster",
}


def embedded_devices(path: Path) -> dict[str, DeviceSpec]:
    return {"local": _device(path, "local", EMBEDDED_LOCAL)}


def load_inventory(path: str | Path, *, required: bool = True) -> Inventory:
    """The devices of the inventory at `path` over the embedded default. A missing file is an error when
    `required` (a path the user named); otherwise the embedded default alone."""
    path = Path(path)
    try:
        raw = load_yaml(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if not required:
            return Inventory(path=path, devices=embedded_devices(path))
        raise InventoryError(f"{path}: inventory not found; point --zbench-devices at a devices.yaml") from None
    except DuplicateKeyError as exc:
        raise InventoryError(f"{path}, line {exc.line}: {exc.key!r} is given twice in one mapping (first at line "
                             f"{exc.first_line}); device names and keys must be unique: rename or remove one") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InventoryError(f"{path}: cannot read the inventory: {exc}") from exc
    if not isinstance(raw, dict) or not isinstance(raw.get("devices"), dict):
        raise InventoryError(f"{path}: expected a mapping with a 'devices' mapping at the top")
    unknown_top = set(raw) - {"devices"}
    if unknown_top:
        raise InventoryError(f"{path}: unknown top-level keys {sorted(unknown_top)}; only 'devices' is allowed")
    devices = {**embedded_devices(path),
               **{str(name): _device(path, str(name), entry) for name, entry in raw["devices"].items()}}
    return Inventory(path=path, devices=devices)


def _device(path: Path, name: str, entry: Any) -> DeviceSpec:
    def fail(key: str | None, message: str) -> InventoryError:
        where = f"{path}, device {name!r}" + (f", key {key!r}" if key else "")
        return InventoryError(f"{where}: {message}")

    if not NAME_RE.fullmatch(name):
        raise fail(None, "device names use letters, digits, '.', '_' and '-' only")
    if not isinstance(entry, dict):
        raise fail(None, "each device is a mapping of keys")
    transport = entry.get("transport")
    if transport not in TRANSPORTS:
        raise fail("transport", f"{transport!r} is not one of {', '.join(TRANSPORTS)}")
    allowed = COMMON_KEYS | TRANSPORT_KEYS[transport]
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise fail(unknown[0], f"not a key of a {transport} device; allowed: {', '.join(sorted(allowed))}")
    for key in REQUIRED_KEYS[transport]:
        if key not in entry:
            raise fail(key, f"a {transport} device needs it")

    def string(key: str, default: str | None = None) -> str | None:
        value = entry.get(key, default)
        if value is not None and (not isinstance(value, str) or not value):
            raise fail(key, f"expected a non-empty string, got {value!r}")
        return value

    backend = string("backend", "software")
    runner = entry.get("runner", ["python", "-m", "pytest_zbench.runner"])
    if isinstance(runner, str) or not isinstance(runner, list) or not runner or not all(
        isinstance(a, (str, int, float)) for a in runner
    ):
        raise fail("runner", "expected an argv list such as [python, -m, pytest_zbench.runner]")
    try:  # `{deployed}`: the build `zbench deploy` put on the device last (docs/engine-ci.md)
        runner = list(expand_deployed(tuple(str(a) for a in runner), string("workdir")))
    except DeployedRunnerError as exc:
        raise fail("runner", str(exc)) from None
    platform_name = string("platform", "linux")
    if not _is_platform(platform_name):
        raise fail("platform", f"{platform_name!r} is not one of {', '.join(PLATFORMS)}")
    platform = platform_name
    display = None
    if "display" in entry:
        display = _display(entry["display"], lambda msg: fail("display", msg))
    env = entry.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, (str, int, float)) for k, v in env.items()):
        raise fail("env", "expected a mapping of environment variable names to values")
    for key in env:
        if not ENV_NAME.fullmatch(key):
            raise fail("env", f"{key!r} is not an environment variable name (letters, digits and '_', not "
                              "starting with a digit)")
    for key in SECONDS_KEYS:
        value = entry.get(key)
        if value is not None and (not is_number(value) or not 0 < value < math.inf):
            raise fail(key, f"expected a positive number of seconds, got {value!r}")
    timeout = entry.get("timeout_s")
    options = {k: entry[k] for k in TRANSPORT_KEYS[transport] if k in entry}
    for key in ("host", "user", "serial", "adb_host", "package", "layer"):
        if key in options:
            string(key)
    if "package" in options and not PACKAGE_RE.fullmatch(options["package"]):
        raise fail("package", f"{options['package']!r} is not an Android application id such as com.example.bench")
    if "package" in options and platform != "android":
        raise fail("package", "platform frames are read from Android: set platform: android")
    if "layer" in options and "package" not in options:
        raise fail("layer", "a layer is read for the app named by 'package': set package too")
    if "layer" in options and any(c in options["layer"] for c in "\r\n\0"):
        raise fail("layer", "a SurfaceFlinger layer name is one line")
    timeline = options.get("frame_timeline")
    if timeline is not None and not isinstance(timeline, bool) and not (
            isinstance(timeline, str) and timeline.startswith("/") and not any(c in timeline for c in "\r\n\0")):
        raise fail("frame_timeline", "expected true, false or the device folder perfetto writes its trace to "
                                     f"(an absolute path), got {timeline!r}")
    if options.get("frame_timeline") and "package" not in options:
        raise fail("frame_timeline", "the frame timeline is read for the app named by 'package': set package too")
    for key in ("port", "adb_port"):
        if key in options and (not is_int(options[key]) or not 0 < options[key] < 65536):
            raise fail(key, f"expected a TCP port number, got {options[key]!r}")
    for key in ("identity_file", "known_hosts"):
        if key in options:
            options[key] = str(Path(os.path.expanduser(string(key) or "")))
    if transport == "command":
        for key in ("push", "pull", "exec", "kill"):
            if key in options and (isinstance(options[key], str) or not isinstance(options[key], list) or not options[key]):
                raise fail(key, "expected an argv list (see docs/command-transport.md)")
    return DeviceSpec(
        name=name,
        transport=transport,
        backend=backend or "software",
        runner=tuple(str(a) for a in runner),
        platform=platform or "linux",
        device_class=string("device_class", name) or name,
        display=display,
        workdir=string("workdir"),
        env={k: str(v) for k, v in env.items()},
        timeout_s=float(timeout) if timeout is not None else None,
        options=options,
        source=path,
        ci=_ci(entry["ci"], fail) if "ci" in entry else None,
        prepare=_prepare(entry["prepare"], platform or "linux", fail) if "prepare" in entry else None,
    )


# The `prepare` key: steps run on the device through its transport once per session before its first scene,
# undone at the session's end (host/devices/prepare.py; README "Preparing a device").
PREPARE_KEYS = ("governor", "cooldown", "screen_on", "sysfs", "commands")
COOLDOWN_KEYS = ("below_c", "max_wait_s", "poll_s")
COMMAND_KEYS = ("name", "run", "restore")
# The built-in steps and the platforms they know how to do: cpufreq and thermal zones are Linux kernel
# interfaces (Android's too); keeping the screen on is Android's `svc power stayon`.
BUILTIN_STEP_PLATFORMS: dict[str, tuple[Platform, ...]] = {
    "governor": ("linux", "raspberrypi", "android"),
    "cooldown": ("linux", "raspberrypi", "android"),
    "screen_on": ("android",),
}
GOVERNOR_RE = re.compile(r"[A-Za-z0-9_]+")
COOLDOWN_DEFAULT_MAX_WAIT_S = 300.0
COOLDOWN_DEFAULT_POLL_S = 5.0


@dataclass(frozen=True)
class CooldownSpec:
    """Before each scene, wait until the device's hottest thermal zone is under `below_c`, for at most
    `max_wait_s`, reading it every `poll_s`."""

    below_c: float
    max_wait_s: float = COOLDOWN_DEFAULT_MAX_WAIT_S
    poll_s: float = COOLDOWN_DEFAULT_POLL_S


@dataclass(frozen=True)
class CommandStep:
    """A step of the user's own: an argv run on the device to prepare it, and one to undo it (optional)."""

    name: str
    run: tuple[str, ...]
    restore: tuple[str, ...] | None = None


@dataclass(frozen=True)
class PrepareSpec:
    """What to do to a device before it is measured (each step optional). `sysfs`: the device-side folder the
    governor and thermal files are read under (/sys; another folder for a test or a chroot)."""

    governor: str | None = None
    cooldown: CooldownSpec | None = None
    screen_on: bool = False
    sysfs: str = "/sys"
    commands: tuple[CommandStep, ...] = ()


def _prepare(raw: Any, platform: str, fail: Any) -> PrepareSpec:
    if not isinstance(raw, dict):
        raise fail("prepare", "expected a mapping such as {governor: performance, cooldown: {below_c: 50}}")
    unknown = sorted(set(raw) - set(PREPARE_KEYS))
    if unknown:
        raise fail(f"prepare.{unknown[0]}", f"not a key of 'prepare'; allowed: {', '.join(PREPARE_KEYS)}")
    governor = raw.get("governor")
    if governor is not None and (not isinstance(governor, str) or not GOVERNOR_RE.fullmatch(governor)):
        raise fail("prepare.governor", f"expected a cpufreq governor name such as performance, got {governor!r}")
    screen_on = raw.get("screen_on", False)
    if not isinstance(screen_on, bool):
        raise fail("prepare.screen_on", f"expected true or false, got {screen_on!r}")
    for step, platforms in BUILTIN_STEP_PLATFORMS.items():
        if raw.get(step) not in (None, False) and platform not in platforms:
            raise fail(f"prepare.{step}", f"a built-in step for platform {', '.join(platforms)}, not {platform}; "
                                          "use prepare.commands for steps of your own")
    sysfs = raw.get("sysfs", "/sys")
    if not isinstance(sysfs, str) or not sysfs.startswith("/") or any(c in sysfs for c in "\r\n\0"):
        raise fail("prepare.sysfs", f"expected an absolute device-side folder such as /sys, got {sysfs!r}")
    return PrepareSpec(governor=governor, cooldown=_cooldown(raw["cooldown"], fail) if "cooldown" in raw else None,
                       screen_on=screen_on, sysfs=sysfs.rstrip("/") or "/", commands=_commands(raw.get("commands", []), fail))


def _cooldown(raw: Any, fail: Any) -> CooldownSpec:
    if not isinstance(raw, dict) or "below_c" not in raw:
        raise fail("prepare.cooldown", "expected a mapping such as {below_c: 50, max_wait_s: 300, poll_s: 5}")
    unknown = sorted(set(raw) - set(COOLDOWN_KEYS))
    if unknown:
        raise fail(f"prepare.cooldown.{unknown[0]}", f"not a key of 'cooldown'; allowed: {', '.join(COOLDOWN_KEYS)}")
    below = raw["below_c"]
    if not is_number(below) or not 0 < below < 150:
        raise fail("prepare.cooldown.below_c", f"expected a temperature in degrees Celsius (0 to 150), got {below!r}")
    for key in ("max_wait_s", "poll_s"):
        value = raw.get(key)
        if value is not None and (not is_number(value) or not 0 < value < math.inf):
            raise fail(f"prepare.cooldown.{key}", f"expected a positive number of seconds, got {value!r}")
    return CooldownSpec(below_c=float(below), max_wait_s=float(raw.get("max_wait_s", COOLDOWN_DEFAULT_MAX_WAIT_S)),
                        poll_s=float(raw.get("poll_s", COOLDOWN_DEFAULT_POLL_S)))


def _commands(raw: Any, fail: Any) -> tuple[CommandStep, ...]:
    example = "[{name: stop-compositor, run: [systemctl, stop, weston], restore: [systemctl, start, weston]}]"
    if not isinstance(raw, list):
        raise fail("prepare.commands", f"expected a list of steps such as {example}")
    steps: list[CommandStep] = []
    for i, item in enumerate(raw):
        where = f"prepare.commands[{i}]"
        if not isinstance(item, dict) or "name" not in item or "run" not in item:
            raise fail(where, f"expected a mapping with name and run (restore optional), as in {example}")
        unknown = sorted(set(item) - set(COMMAND_KEYS))
        if unknown:
            raise fail(f"{where}.{unknown[0]}", f"not a key of a command step; allowed: {', '.join(COMMAND_KEYS)}")
        name = item["name"]
        if not isinstance(name, str) or not NAME_RE.fullmatch(name) or name in BUILTIN_STEP_PLATFORMS or \
                name in {s.name for s in steps}:
            raise fail(f"{where}.name", f"expected a name of letters, digits, '.', '_' and '-', unique and not one "
                                        f"of the built-in steps ({', '.join(BUILTIN_STEP_PLATFORMS)}), got {name!r}")
        argvs: list[tuple[str, ...] | None] = []
        for key in ("run", "restore"):
            value = item.get(key)
            if value is None and key == "restore":
                argvs.append(None)
                continue
            if isinstance(value, str) or not isinstance(value, list) or not value or not all(
                    isinstance(a, (str, int, float)) and not isinstance(a, bool) for a in value):
                raise fail(f"{where}.{key}", "expected an argv list (nothing is passed through a shell), such as "
                                             "[systemctl, stop, weston]")
            argvs.append(tuple(str(a) for a in value))
        run = argvs[0]
        assert run is not None  # required above
        steps.append(CommandStep(name=name, run=run, restore=argvs[1]))
    return tuple(steps)


def _ci(raw: Any, fail: Any) -> CiSpec:
    if not isinstance(raw, dict):
        raise fail("ci", "expected a mapping such as {labels: [self-hosted, zbench, pi3b], timeout_minutes: 60}")
    unknown = sorted(set(raw) - set(CI_KEYS))
    if unknown:
        raise fail(f"ci.{unknown[0]}", f"not a key of 'ci'; allowed: {', '.join(CI_KEYS)}")

    def strings(key: str, *, required: bool) -> tuple[str, ...] | None:
        value = raw.get(key)
        if value is None and not required:
            return None
        if isinstance(value, str) or not isinstance(value, list) or (required and not value) or not all(
                isinstance(v, (str, int, float)) and not isinstance(v, bool) and str(v) for v in value):
            raise fail(f"ci.{key}", f"expected a{' non-empty' if required else ''} list of strings, got {value!r}")
        return tuple(str(v) for v in value)

    labels = strings("labels", required=True)
    assert labels is not None
    kind = "self-hosted" if "self-hosted" in labels else "hosted"
    timeout = raw.get("timeout_minutes", CI_DEFAULT_TIMEOUT_MINUTES)
    limit = CI_MAX_TIMEOUT_MINUTES[kind]
    if not is_int(timeout) or not 1 <= timeout <= limit:
        raise fail("ci.timeout_minutes", f"expected whole minutes from 1 to {limit} (GitHub's limit for a job on a "
                                         f"{kind} runner), got {timeout!r}")
    ab_runner = strings("ab_runner", required=False)
    if ab_runner is not None and not any(CHECKOUT_PLACEHOLDER in arg for arg in ab_runner):
        raise fail("ci.ab_runner", f"expected an argv list naming the checkout as {CHECKOUT_PLACEHOLDER}, such as "
                                   f"[python, ci/checkout-runner.py, '{CHECKOUT_PLACEHOLDER}']")
    every, per_mode = _ci_pytest_args(raw.get("pytest_args"), fail)
    return CiSpec(labels=labels, timeout_minutes=timeout, pytest_args=every, ab_runner=ab_runner,
                  mode_pytest_args=per_mode)


def _ci_pytest_args(raw: Any, fail: Any) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """`ci.pytest_args`: a list for every leg mode, or a mapping of `every` and LEG_MODES to lists. An option
    only one mode takes is refused in `every` (a push leg given --zbench-budget exited with a usage error)."""
    def strings(key: str, value: Any) -> tuple[str, ...]:
        if isinstance(value, str) or not isinstance(value, list) or not all(
                isinstance(v, (str, int, float)) and not isinstance(v, bool) and str(v) for v in value):
            raise fail(key, f"expected a list of strings, got {value!r}")
        return tuple(str(v) for v in value)

    if raw is None:
        return (), {}
    if not isinstance(raw, dict):
        every, per_mode = strings("ci.pytest_args", raw), {}
    else:
        unknown = sorted(set(raw) - {"every", *LEG_MODES})
        if unknown:
            raise fail(f"ci.pytest_args.{unknown[0]}", f"not a leg mode; allowed: every, {', '.join(LEG_MODES)}")
        every = strings("ci.pytest_args.every", raw.get("every", []))
        per_mode = {mode: strings(f"ci.pytest_args.{mode}", raw[mode]) for mode in LEG_MODES if mode in raw}
    for option, mode in MODE_ONLY_OPTIONS.items():
        if any(arg == option or arg.startswith(option + "=") for arg in every):
            raise fail("ci.pytest_args", f"{option} is for the {mode} leg only (a pull request's A/B); put it under "
                                         f"ci.pytest_args.{mode}: {{{mode}: [{option}=30]}}")
    return every, per_mode


def _display(raw: Any, fail: Any) -> Display:
    if not isinstance(raw, dict):
        raise fail("expected {width, height, refresh_hz}")
    unknown = set(raw) - {"width", "height", "refresh_hz"}
    if unknown:
        raise fail(f"unknown keys {sorted(unknown)}; allowed: width, height, refresh_hz")
    width, height, hz = raw.get("width"), raw.get("height"), raw.get("refresh_hz", 60.0)
    if not is_int(width) or not is_int(height) or width <= 0 or height <= 0:
        raise fail("width and height must be positive integers")
    if max(width, height) > MAX_SURFACE_SIDE:
        raise fail(f"{width} x {height} is larger than the {MAX_SURFACE_SIDE} pixels a side a runner renders "
                   "(MAX_SURFACE_SIDE); give the screen's size in pixels")
    if not is_number(hz) or not 1 <= hz <= 1000:
        raise fail(f"refresh_hz {hz!r} must be a number between 1 and 1000")
    return Display(width, height, float(hz), refresh_declared="refresh_hz" in raw)


def _is_platform(name: str | None) -> TypeGuard[Platform]:
    return name in PLATFORMS
