"""Runner protocol, version 1: the contract between the host and any runner on a device.

Both sides import this package, and the runner nothing else of pytest_zbench: the reference runner writes
with it, the host reads and validates with it. Third-party runners (Zinc's own) implement the same files
from docs/runner-protocol.md, so the reader here never trusts what it is given: every bad cell, row, column
or key becomes an `Issue` that travels into run.json, and the values it could not trust are dropped, never
kept silently.

* vocabulary.py    every shared enumeration (modes, phases, GPU sources, issue kinds) as a Literal type
* display_list.py  the display list's op table: op names, keys, value kinds, animations, clip shapes
* this module      job, probe, progress lines, frames.csv, result.json, capture names
"""

from __future__ import annotations

import csv
import json
import math
import re
import struct
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

from ..errors import ZbenchError
from ..json_types import is_int
from .display_list import ops_features, walk_ops
from .limits import MAX_ARTIFACT_BYTES, MAX_ISSUES, MAX_RESULT_JSON_BYTES
from .vocabulary import (
    GPU_SOURCES,
    HOST_ISSUE_KINDS,
    ISSUE_KINDS,
    MEASURED_GPU_SOURCES,
    MODES,
    PHASES,
    PROTOCOL_VERSION,
    RUNNER_ISSUE_KINDS,
    ArchFamily,
    GpuSource,
    HostIssueKind,
    IssueKind,
    Mode,
    Phase,
    RunnerIssueKind,
)

__all__ = [
    "ABSURD_COUNT", "ABSURD_MS", "COUNTER_COLUMNS", "CPU_STAGE_COLUMNS", "FLAG_COLUMNS", "FRAME_COLUMNS",
    "GPU_SENTINELS_NS", "REFERENCE_COUNTER_COLUMNS", "STOLEN_COLUMN",
    "GPU_SOURCES", "HOST_ISSUE_KINDS", "ISSUE_KINDS", "MEASURED_GPU_SOURCES", "MODES", "PHASES", "PROTOCOL_VERSION",
    "RUNNER_ISSUE_KINDS", "TIMING_COLUMNS", "BackendInfo", "FrameTable", "FramesWriter", "GpuSource",
    "HostIssueKind", "Issue", "IssueKind", "Job", "Mode", "Phase", "Probe", "ProtocolError", "RunResult", "RunnerBuild",
    "Toolchain", "PngHeader", "RunnerIssueKind", "ZbenchError", "cap_issues", "capture_name", "capture_problem",
    "format_cell", "ops_features", "parse_build", "parse_probe", "parse_toolchain", "read_png_header",
    "parse_probe_output", "parse_progress", "progress_line", "read_frames_csv", "read_result_json", "walk_ops",
    "write_result_json",
]

FRAME_COLUMNS: tuple[str, ...] = (
    "frame",
    "phase",
    "t_start_ns",
    "cpu_ms",
    "gpu_ms",
    "gpu_source",
    "present_interval_ms",
    "complexity",
    "draw_calls",
    "texture_upload_bytes",
    "disjoint",
    "gl_error",
)
# Extra columns the reference runner writes (any runner may add its own): cpu_ms by stage, and what a frame asks
# of the rasteriser (docs/runner-protocol.md, "The reference runner's counters"; frames.schema.json).
CPU_STAGE_COLUMNS: tuple[str, ...] = ("cpu_record_ms", "cpu_flush_ms", "cpu_submit_ms")
REFERENCE_COUNTER_COLUMNS: tuple[str, ...] = (
    *CPU_STAGE_COLUMNS, "state_changes", "rt_switches", "pixels_drawn", "alloc_bytes", "minor_faults",
    "preemptions", "stolen_ms",
)
# Optional: the frame's wall time less its thread's CPU time over the same interval, in ms: time other tasks (or
# a blocking wait) took inside the frame. The busy-host guard judges a metric with it taken out
# (docs/regression.md, "A busy host"; docs/runner-protocol.md). A runner that cannot know it leaves the column out.
STOLEN_COLUMN = "stolen_ms"
# The counter that says a frame was preempted (> 0): the kernel gave the CPU to another task inside its clocks.
PREEMPTIONS_COLUMN = "preemptions"
# Columns whose cells are numbers; everything a runner adds beyond FRAME_COLUMNS is a numeric counter too.
TIMING_COLUMNS = ("cpu_ms", "gpu_ms", "present_interval_ms")
COUNTER_COLUMNS = ("complexity", "draw_calls", "texture_upload_bytes")
FLAG_COLUMNS = ("disjoint", "gl_error")

# A frame time above this is not a slow frame but a broken clock (an hour); such cells are dropped.
ABSURD_MS = 3_600_000.0
ABSURD_COUNT = 1e15


def _is_protocol_version(value: Any) -> bool:
    # `true == 1` and `1.0 == 1` in Python; the protocol field is the integer 1.
    return is_int(value) and value == PROTOCOL_VERSION


class ProtocolError(ZbenchError, ValueError):
    """A runner's output (probe, job, result) cannot be understood at all."""


@dataclass(frozen=True)
class Issue:
    kind: IssueKind  # a third-party runner may report a kind not in IssueKind: it is kept as reported
    detail: str
    frame: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"frame": self.frame, "kind": self.kind, "detail": self.detail}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Issue:
        frame = raw.get("frame")
        return cls(
            kind=cast(IssueKind, str(raw.get("kind", "unknown"))),
            detail=str(raw.get("detail", "")),
            frame=frame if isinstance(frame, int) and not isinstance(frame, bool) else None,
        )


# ---------------------------------------------------------------------------------------------- job


@dataclass(frozen=True)
class Job:
    backend: str
    mode: str
    refresh_hz: float
    warmup_frames: int
    frames: int
    capture: tuple[int, ...]
    seed: int
    scene: dict[str, Any]
    complexity: tuple[float, ...] | None = None
    # A sustained launch (docs/sustained.md): measured frames stop once this many seconds have passed since
    # the first measured frame started; `frames` is then only a cap. None: render every frame.
    duration_s: float | None = None
    protocol: int = PROTOCOL_VERSION
    # Optional: the GPU time source this job must use (the host's timer check asks for finish_bracket beside a
    # timer query to check its coverage); None = the runner's own choice. A runner without it ignores the key.
    gpu_timer: GpuSource | None = None

    @property
    def total_frames(self) -> int:
        return self.warmup_frames + self.frames

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["capture"] = list(self.capture)
        out["complexity"] = list(self.complexity) if self.complexity is not None else None
        if self.gpu_timer is None:
            del out["gpu_timer"]  # the v1 job as before, for runners that check their keys
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Job:
        def need(key: str, kind: type | tuple[type, ...]) -> Any:
            if key not in raw:
                raise ProtocolError(f"job: missing key {key!r}")
            value = raw[key]
            if not isinstance(value, kind) or isinstance(value, bool):
                raise ProtocolError(f"job: key {key!r} has {value!r}, expected {kind}")
            return value

        if not _is_protocol_version(raw.get("protocol")):
            raise ProtocolError(f"job: protocol {raw.get('protocol')!r} is not {PROTOCOL_VERSION}")
        mode = need("mode", str)
        if mode not in MODES:
            raise ProtocolError(f"job: mode {mode!r} is not one of {MODES}")
        scene = need("scene", dict)
        for key in ("id", "width", "height", "ops"):
            if key not in scene:
                raise ProtocolError(f"job: scene is missing key {key!r}")
        warmup = need("warmup_frames", int)
        frames = need("frames", int)
        if warmup < 0 or frames < 1:
            raise ProtocolError(f"job: warmup_frames={warmup} frames={frames}: need warmup >= 0 and frames >= 1")
        capture = tuple(need("capture", list))
        # Captures are rendered after the measured frames, so any frame index can be asked for: animation is a
        # function of the index, and goldens stay valid whatever the run length.
        if any(not isinstance(c, int) or isinstance(c, bool) or c < 0 for c in capture):
            raise ProtocolError(f"job: capture {list(capture)} must list non-negative frame indices")
        complexity = raw.get("complexity")
        if complexity is not None:
            if not isinstance(complexity, list) or len(complexity) != warmup + frames:
                raise ProtocolError("job: complexity must be null or one number per frame, warmup included")
            bad = [c for c in complexity
                   if isinstance(c, bool) or not isinstance(c, (int, float)) or not math.isfinite(c) or c < 0]
            if bad:
                raise ProtocolError(f"job: complexity holds {bad[0]!r}; every value must be a non-negative number")
            complexity = tuple(float(c) for c in complexity)
        refresh = need("refresh_hz", (int, float))
        if not refresh > 0:
            raise ProtocolError(f"job: refresh_hz {refresh!r} must be positive")
        duration = raw.get("duration_s")
        if duration is not None and (isinstance(duration, bool) or not isinstance(duration, (int, float))
                                     or not 0 < duration < math.inf):
            raise ProtocolError(f"job: duration_s {duration!r} must be null or a positive number of seconds")
        _raise_on_schema_violations("job", raw, "job")
        gpu_timer = raw.get("gpu_timer")  # one of GPU_SOURCES or absent: the schema checks it
        return cls(
            backend=need("backend", str),
            mode=mode,
            refresh_hz=float(refresh),
            warmup_frames=warmup,
            frames=frames,
            capture=capture,
            seed=need("seed", int),
            scene=scene,
            complexity=complexity,
            gpu_timer=gpu_timer,
            duration_s=None if duration is None else float(duration),
        )

    @classmethod
    def load(cls, path: str | Path) -> Job:
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ProtocolError(f"job file {path}: {exc}") from exc
        if not isinstance(raw, dict):
            raise ProtocolError(f"job file {path}: not a JSON object")
        return cls.from_dict(raw)


# -------------------------------------------------------------------------------------------- probe


@dataclass(frozen=True)
class BackendInfo:
    features: frozenset[str]
    timer_sources: tuple[str, ...]
    info: dict[str, Any]  # gl_vendor, gl_renderer, ..., max_texture_size and whatever else the runner says


# The names a runner or `uname -m` reports for each CPU architecture family (vocabulary.ArchFamily); an
# unknown name is its own family (lower case).
ARCH_FAMILIES: dict[ArchFamily, tuple[str, ...]] = {
    "x86_64": ("x86_64", "amd64", "x64", "em64t"),
    "x86": ("i386", "i486", "i586", "i686", "x86", "i86pc"),
    "aarch64": ("aarch64", "arm64", "arm64e", "armv8l", "aarch64_be"),
    "arm": ("arm", "armv5tel", "armv6l", "armv7l", "armv7", "armhf", "armel"),
    "riscv64": ("riscv64",),
    "ppc64le": ("ppc64le",),
    "s390x": ("s390x",),
}
_ARCH_ALIASES = {alias: family for family, aliases in ARCH_FAMILIES.items() for alias in aliases}
_ARCH_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,31}$")


def arch_family(machine: str | None) -> str | None:
    """The architecture family of a machine name (`uname -m`, platform.machine()): 'AMD64' and 'x86_64' are
    x86_64, 'arm64' and 'aarch64' are aarch64, 'armv7l' is arm. None when the name is empty or unusable."""
    if not isinstance(machine, str):
        return None
    name = machine.strip().lower()
    if name in _ARCH_ALIASES:
        return _ARCH_ALIASES[name]
    if name.startswith("armv") or name.startswith("arm"):
        return "arm"
    return name if _ARCH_NAME.match(name) else None


@dataclass(frozen=True)
class Machine:
    """The probe's optional `machine`: what the runner itself runs on, as the device sees it. The host's run
    record and environment fingerprint use it in place of anything the host could read of itself."""

    arch: str  # as reported (platform.machine(), uname -m)
    family: str  # arch_family(arch)
    cpu_model: str | None = None
    cores: int | None = None
    os: str | None = None
    kernel: str | None = None
    ram_mb: int | None = None
    python: str | None = None  # the interpreter of a Python runner (the reference runner)
    libraries: dict[str, str] = field(default_factory=dict)  # name -> version of what renders (skia-python)
    emulated: bool | None = None  # True when the runner found itself under emulation (qemu-user)
    soc: str | None = None  # the system on chip, where Linux names it (runner/machine.py linux_facts)
    os_build: str | None = None  # the OS build: os-release's BUILD_ID, else the kernel's build string
    max_mhz: int | None = None  # the highest CPU clock cpufreq allows, over all CPUs


MACHINE_STRINGS = ("arch", "cpu_model", "os", "kernel", "python", "soc", "os_build")
MACHINE_INTS = ("cores", "ram_mb", "max_mhz")


def parse_machine(raw: Any, *, source: str = "probe") -> Machine:
    """Validate a probe's `machine` object; raise ProtocolError naming the bad key."""
    if not isinstance(raw, dict):
        raise ProtocolError(f"{source}: key 'machine' must be an object when present")
    for key in MACHINE_STRINGS:
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise ProtocolError(f"{source}: machine.{key} must be a string, got {raw[key]!r}")
    for key in MACHINE_INTS:
        value = raw.get(key)
        if value is not None and (not is_int(value) or value < 0):
            raise ProtocolError(f"{source}: machine.{key} must be a non-negative integer, got {value!r}")
    family = arch_family(raw.get("arch"))
    if family is None:
        raise ProtocolError(f"{source}: machine.arch must name the CPU architecture (such as x86_64 or "
                            f"aarch64), got {raw.get('arch')!r}")
    libraries = raw.get("libraries", {})
    if not isinstance(libraries, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                  for k, v in libraries.items()):
        raise ProtocolError(f"{source}: machine.libraries must map library names to version strings")
    emulated = raw.get("emulated")
    if emulated is not None and not isinstance(emulated, bool):
        raise ProtocolError(f"{source}: machine.emulated must be true or false, got {emulated!r}")
    return Machine(
        arch=raw["arch"], family=family, cpu_model=raw.get("cpu_model") or None, cores=raw.get("cores"),
        os=raw.get("os") or None, kernel=raw.get("kernel") or None, ram_mb=raw.get("ram_mb"),
        python=raw.get("python") or None, libraries=dict(libraries), emulated=emulated,
        soc=raw.get("soc") or None, os_build=raw.get("os_build") or None, max_mhz=raw.get("max_mhz") or None,
    )


@dataclass(frozen=True)
class RunnerBuild:
    """The engine build a runner reports in its probe (`build`, docs/runner-protocol.md): what the host
    records as run.json's app.build_hash and keys the history's series on."""

    id: str
    dirty: bool | None = None
    describe: str | None = None


@dataclass(frozen=True)
class Toolchain:
    """What a runner was built with (probe `toolchain`): run.json's app.compiler and app.flags."""

    compiler: str = ""
    flags: str = ""


def parse_toolchain(raw: Any, *, source: str = "probe") -> Toolchain:
    if not isinstance(raw, dict):
        raise ProtocolError(f"{source}: key 'toolchain' must be an object {{compiler, flags}}")
    for key in ("compiler", "flags"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise ProtocolError(f"{source}: toolchain.{key} must be a string, got {raw[key]!r}")
    return Toolchain(compiler=(raw.get("compiler") or "").strip(), flags=(raw.get("flags") or "").strip())


def parse_build(raw: Any, *, source: str = "probe") -> RunnerBuild:
    if not isinstance(raw, dict):
        raise ProtocolError(f"{source}: key 'build' must be an object {{id, dirty, describe}}")
    build_id, dirty, describe = raw.get("id"), raw.get("dirty"), raw.get("describe")
    if not isinstance(build_id, str) or not build_id.strip():
        raise ProtocolError(f"{source}: build.id must be a non-empty string (the engine's commit), got {build_id!r}")
    if dirty is not None and not isinstance(dirty, bool):
        raise ProtocolError(f"{source}: build.dirty must be true, false or null, got {dirty!r}")
    if describe is not None and not isinstance(describe, str):
        raise ProtocolError(f"{source}: build.describe must be a string or null, got {describe!r}")
    return RunnerBuild(build_id.strip(), dirty, describe)


@dataclass(frozen=True)
class Probe:
    runner_name: str
    runner_version: str
    backends: dict[str, BackendInfo]
    display: dict[str, Any] | None
    raw: dict[str, Any]
    machine: Machine | None = None  # None: the runner did not say what it runs on (the key is optional)
    build: RunnerBuild | None = None  # None: the runner does not report the engine build it was compiled from
    toolchain: Toolchain | None = None  # None: the runner does not say what it was built with


def parse_probe(raw: Any, *, source: str = "probe") -> Probe:
    """Validate a runner's `probe` answer; raise ProtocolError naming the bad key."""
    if not isinstance(raw, dict):
        raise ProtocolError(f"{source}: expected one JSON object, got {type(raw).__name__}")
    if not _is_protocol_version(raw.get("protocol")):
        raise ProtocolError(f"{source}: protocol {raw.get('protocol')!r}; this host speaks {PROTOCOL_VERSION}")
    runner = raw.get("runner")
    if not isinstance(runner, dict) or not isinstance(runner.get("name"), str):
        raise ProtocolError(f"{source}: key 'runner' must be an object with a string 'name'")
    backends_raw = raw.get("backends")
    if not isinstance(backends_raw, dict) or not backends_raw:
        raise ProtocolError(f"{source}: key 'backends' must be a non-empty object")
    backends: dict[str, BackendInfo] = {}
    for name, entry in backends_raw.items():
        if not isinstance(entry, dict):
            raise ProtocolError(f"{source}: backends.{name} must be an object")
        features = entry.get("features")
        if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
            raise ProtocolError(f"{source}: backends.{name}.features must be a list of strings")
        timers = entry.get("timer_sources", ["none"])
        if not isinstance(timers, list) or any(t not in GPU_SOURCES for t in timers):
            raise ProtocolError(f"{source}: backends.{name}.timer_sources must be a list drawn from {GPU_SOURCES}")
        info = {k: v for k, v in entry.items() if k not in ("features", "timer_sources")}
        backends[name] = BackendInfo(frozenset(features), tuple(timers), info)
    display = raw.get("display")
    if display is not None and not isinstance(display, dict):
        raise ProtocolError(f"{source}: key 'display' must be an object when present")
    machine = None if raw.get("machine") is None else parse_machine(raw["machine"], source=source)
    build = None if raw.get("build") is None else parse_build(raw["build"], source=source)
    toolchain = None if raw.get("toolchain") is None else parse_toolchain(raw["toolchain"], source=source)
    _raise_on_schema_violations("probe", raw, source)
    return Probe(
        runner_name=runner["name"],
        runner_version=str(runner.get("version", "")),
        backends=backends,
        display=display,
        raw=raw,
        machine=machine,
        build=build,
        toolchain=toolchain,
    )


def parse_probe_output(stdout: str, *, source: str = "probe") -> Probe:
    """The probe prints one JSON object; tolerate log lines around it but not two objects."""
    text = stdout.strip()
    try:
        return parse_probe(json.loads(text), source=source)
    except json.JSONDecodeError:
        pass
    objects = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                objects.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    if len(objects) != 1:
        raise ProtocolError(f"{source}: expected one JSON object on stdout, found {len(objects)}: {text[:200]!r}")
    return parse_probe(objects[0], source=source)


def parse_progress(line: str) -> tuple[int, int] | None:
    """A progress line `{"frame": 120, "of": 660}`; anything else is log output."""
    line = line.strip()
    if not (line.startswith("{") and '"frame"' in line):
        return None
    try:
        obj = json.loads(line)
    except json.JSONDecodeError:
        return None
    frame, of = obj.get("frame"), obj.get("of")
    if is_int(frame) and is_int(of) and set(obj) <= {"frame", "of"}:
        return frame, of
    return None


def progress_line(frame: int, of: int) -> str:
    return json.dumps({"frame": frame, "of": of})


# --------------------------------------------------------------------------------------- frames.csv


@dataclass
class FrameTable:
    """The validated rows of one launch's frames.csv. Unknown or rejected cells are None."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    counter_columns: tuple[str, ...] = ()
    issues: list[Issue] = field(default_factory=list)

    def column(self, name: str, phase: str | None = "measure") -> list[float | None]:
        return [r.get(name) for r in self.rows if phase is None or r["phase"] == phase]

    def count(self, phase: str) -> int:
        return sum(1 for r in self.rows if r["phase"] == phase)


_UNDECODABLE = "\ufffd"  # what errors="replace" puts where a byte was not UTF-8
_DIGITS = re.compile(r"[0-9]+\Z")  # ASCII only: str.isdigit() accepts '²', which int() rejects


# A frames.csv cell that is no usable number: dropped with a protocol issue that names its column (`_number`),
# which `dropped_cells` counts back per column.
_DROPPED_CELL = re.compile(r"frames\.csv column '(?P<column>[^']+)': .*; dropped")


def dropped_cells(issues: Iterable[Issue]) -> dict[str, int]:
    """frames.csv column -> how many of its cells were dropped as no usable number (not a number, out of range,
    NaN), from a launch's issues."""
    counts: dict[str, int] = {}
    for issue in issues:
        match = _DROPPED_CELL.fullmatch(issue.detail)
        if match and issue.kind in ("protocol", "nan"):
            counts[match["column"]] = counts.get(match["column"], 0) + 1
    return counts


def _number(cell: str, column: str, frame: int | None, issues: list[Issue], *, limit: float) -> float | None:
    cell = cell.strip()
    if cell == "":
        return None
    try:
        value = float(cell)
    except ValueError:
        issues.append(Issue("protocol", f"frames.csv column {column!r}: {cell!r} is not a number; dropped", frame))
        return None
    if math.isnan(value) or math.isinf(value):
        issues.append(Issue("nan", f"frames.csv column {column!r}: {cell!r}; dropped", frame))
        return None
    if value < 0 or value > limit:
        issues.append(
            Issue("protocol", f"frames.csv column {column!r}: {cell!r} is outside 0..{limit:g}; dropped", frame)
        )
        return None
    return value


# A GPU clock's garbage, read as milliseconds: all-ones counters (0x7FFFFFFF, 0xFFFFFFFF, 2^63-1, 2^64-1 ns).
GPU_SENTINELS_NS = (2**31 - 1, 2**32 - 1, 2**63 - 1, 2**64 - 1)


def _gpu_garbage(cell: str) -> str | None:
    """Why a gpu_ms cell is a clock's garbage rather than a duration, or None."""
    try:
        value = float(cell)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    if value == 0:
        return "0 (the counter did not run)"
    ns = value * 1e6
    if any(abs(ns - s) <= max(1.0, s * 1e-12) for s in GPU_SENTINELS_NS):
        return f"{cell} ms is an all-ones counter read as nanoseconds"
    return None


def _judge_gpu_ms(cell: str, value: float | None, source: str | None, disjoint_cell: str, frame: int,
                  issues: list[Issue]) -> float | None:
    """The host's own check of a runner's GPU time (docs/gpu-timing.md, "what is dropped"): a third-party
    runner may pass through what its driver returned. Garbage and values the runner itself flagged disjoint
    are dropped and counted as `timer_invalid` (other out-of-range values stay `protocol` issues)."""
    cell = cell.strip()
    if not cell or source in (None, "none"):
        return value
    why = _gpu_garbage(cell)
    if why is None and value is not None and disjoint_cell.strip() not in ("", "0", "false", "False"):
        why = f"{cell} ms reported with disjoint=1 (the GPU clock was interrupted during the frame)"
    if why is None:
        return value
    if value is None:  # already dropped by the generic check: say what it was instead
        issues[:] = [i for i in issues if not (i.frame == frame and "'gpu_ms'" in i.detail)]
    issues.append(Issue("timer_invalid", f"frames.csv gpu_ms ({source}): {why}; dropped", frame))
    return None


def read_frames_csv(path: str | Path, *, max_rows: int | None = None) -> FrameTable:
    """Read and validate frames.csv. Never raises on bad content; a missing file is an issue too.

    `max_rows`: the job's frame count, warmup included. Rows for frames beyond it are dropped, and reading
    stops at the first line past it: a runner that writes millions of rows more than it was asked for costs
    the host nothing, and none of them is measured."""
    table = FrameTable()
    issues = table.issues
    try:
        # utf-8-sig: a BOM written by a third-party runner must not hide the 'frame' column. errors="replace":
        # an undecodable byte costs its own row (below), not every row that shares its read buffer.
        handle = open(path, newline="", encoding="utf-8-sig", errors="replace")
    except OSError as exc:
        issues.append(Issue("protocol", f"frames.csv could not be read: {exc.strerror or exc}"))
        return table
    with handle:
        reader = csv.reader(handle)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            issues.append(Issue("protocol", "frames.csv is empty: no header row"))
            return table
        except (csv.Error, UnicodeDecodeError) as exc:
            issues.append(Issue("protocol", f"frames.csv header unreadable: {exc}"))
            return table
        if any(_UNDECODABLE in h for h in header):
            issues.append(Issue("protocol", "frames.csv header unreadable: bytes that are not UTF-8"))
            return table
        missing = [c for c in FRAME_COLUMNS if c not in header]
        if missing:
            issues.append(Issue("protocol", f"frames.csv lacks columns {missing}; their values are unknown"))
        if "frame" not in header or "phase" not in header:
            issues.append(Issue("protocol", "frames.csv has no 'frame' or 'phase' column: no row can be used"))
            return table
        extras = tuple(c for c in header if c not in FRAME_COLUMNS and c)
        table.counter_columns = extras
        # Each line's structure is judged in order (the frame order depends on the rows kept before it); what
        # follows is kept in `events`, and the cells of the rows kept are judged column by column below.
        events: list[Issue | _RowCells] = []
        last_frame = -1
        line_no = 1
        data_lines = 0
        while True:
            try:
                cells = next(reader)
            except StopIteration:
                break
            except (csv.Error, UnicodeDecodeError) as exc:
                events.append(Issue("protocol", f"frames.csv line {line_no + 1}: unreadable ({exc}); reading stopped"))
                break
            line_no += 1
            text = "".join(cells)  # one string to look through, not one per cell
            if not text.strip():
                continue
            data_lines += 1
            if max_rows is not None and data_lines > max_rows:
                events.append(Issue("protocol", f"frames.csv has more rows than the {max_rows} frames the job "
                                                f"asked for; reading stopped at line {line_no}, the rows from "
                                                "there on are not read or measured"))
                break
            if _UNDECODABLE in text:
                events.append(Issue("protocol", f"frames.csv line {line_no}: bytes that are not UTF-8; row dropped"))
                continue
            if len(cells) != len(header):
                events.append(
                    Issue("protocol", f"frames.csv line {line_no}: {len(cells)} cells, header has {len(header)}; row dropped")
                )
                continue
            raw = dict(zip(header, cells))
            try:
                frame = int(raw["frame"])
            except ValueError:
                events.append(Issue("protocol", f"frames.csv line {line_no}: frame {raw['frame']!r} is not an integer; row dropped"))
                continue
            if frame <= last_frame:
                events.append(Issue("protocol", f"frames.csv line {line_no}: frame {frame} out of order; row dropped", frame))
                continue
            if max_rows is not None and frame >= max_rows:
                events.append(Issue("protocol", f"frames.csv line {line_no}: frame {frame} is beyond the job's "
                                                f"{max_rows} frames (0..{max_rows - 1}); row dropped", frame))
                continue
            phase = raw["phase"].strip()
            if phase not in PHASES:
                events.append(Issue("protocol", f"frames.csv line {line_no}: phase {phase!r} not in {PHASES}; row dropped", frame))
                continue
            last_frame = frame
            events.append(_RowCells(frame, phase, cells))
    kept = [e for e in events if isinstance(e, _RowCells)]
    clean = _clean_rows(header, extras, kept)
    for event in events:
        if isinstance(event, Issue):
            issues.append(event)
        elif event.frame in clean:
            table.rows.append(clean[event.frame])
        else:
            row = _row_from_cells(dict(zip(header, event.cells)), event.frame, event.phase, extras, issues)
            if row is not None:
                table.rows.append(row)
    return table


@dataclass(frozen=True)
class _RowCells:
    """A frames.csv line whose structure is sound (cells, frame in order, phase): its cells still to judge."""

    frame: int
    phase: str
    cells: list[str]


def _row_from_cells(raw: dict[str, str], frame: int, phase: str, extras: tuple[str, ...],
                    issues: list[Issue]) -> dict[str, Any] | None:
    """One row's cells judged one by one, every bad one an issue naming its column; None when the row goes.
    The rule for each cell; `_clean_rows` finds the rows in which this finds nothing to say, column by column."""
    row: dict[str, Any] = {"frame": frame, "phase": phase}
    for column in TIMING_COLUMNS:
        row[column] = _number(raw.get(column, ""), column, frame, issues, limit=ABSURD_MS)
    t_start = raw.get("t_start_ns", "").strip()
    if t_start == "" or _DIGITS.match(t_start):
        row["t_start_ns"] = int(t_start) if t_start else None
    else:
        issues.append(Issue("protocol", f"frames.csv column 't_start_ns': {t_start!r} is not a "
                                        "non-negative integer; dropped", frame))
        row["t_start_ns"] = None
    source = raw.get("gpu_source", "").strip() or None
    if source is not None and source not in GPU_SOURCES:
        issues.append(Issue("protocol", f"frames.csv: gpu_source {source!r} not in {GPU_SOURCES}; gpu_ms dropped", frame))
        source, row["gpu_ms"] = None, None
    row["gpu_source"] = source
    row["gpu_ms"] = _judge_gpu_ms(raw.get("gpu_ms", ""), row["gpu_ms"], source, raw.get("disjoint", ""),
                                  frame, issues)
    for column in COUNTER_COLUMNS + extras:
        row[column] = _number(raw.get(column, ""), column, frame, issues, limit=ABSURD_COUNT)
    for column in FLAG_COLUMNS:
        cell = raw.get(column, "").strip()
        row[column] = None if cell == "" else cell not in ("0", "false", "False")
    return row if _drop_schema_violations(row, raw, frame, issues) else None


# A column of unsigned JSON numbers (frames.schema.json reads a cell as JSON; a negative one is out of range
# anyway) or of ASCII integers, empty cells allowed, one cell a line: one regex over a whole column says
# whether any of its cells needs a closer look. No spaces: a cell with any goes the per-cell way.
_UNSIGNED_INTEGER = "(?:0|[1-9][0-9]*)"
_UNSIGNED_NUMBER = f"{_UNSIGNED_INTEGER}(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
_CELL_PATTERNS = {kind: (re.compile(f"(?:{cell})?\\Z"), re.compile(f"(?:{cell})?(?:\\n(?:{cell})?)*\\Z"))
                  for kind, cell in (("integer", _UNSIGNED_INTEGER), ("number", _UNSIGNED_NUMBER))}


def _clean_rows(header: list[str], extras: tuple[str, ...], kept: list[_RowCells]) -> dict[int, dict[str, Any]]:
    """The rows (by frame) in which `_row_from_cells` would find no issue, built from whole columns at once.

    The per-cell rules of `_row_from_cells` and frames.schema.json are checked as vectors: a column's cells
    against one regex and their values against their range with numpy. A row any check flags is left out, and
    `_row_from_cells` reads it and says what is wrong with it, as it did with every row (40 ms for a launch's
    660 rows of 22 columns, most of the host's own work per launch; docs/architecture.md, "Host work per
    launch"). Conservative by design: leaving a good row out costs time, never a wrong value."""
    import numpy as np

    from ..schema import cell_value, frame_rules

    if not kept or len(set(header)) != len(header):  # a column named twice: its last cell counts, row by row
        return {}
    rules = frame_rules()
    count = len(kept)
    columns = dict(zip(header, (list(c) for c in zip(*(row.cells for row in kept)))))
    empty = [""] * count

    def cells(name: str) -> list[str]:
        return columns.get(name, empty)

    bad = np.zeros(count, dtype=bool)

    def numbers(name: str, limit: float, *, integer: bool = False) -> list[Any]:
        """A numeric column's values (None where empty); `integer`: ASCII integers kept as int (t_start_ns)."""
        nonlocal bad
        rule, column = rules.rule(name), cells(name)
        kind = "integer" if integer else "number"
        low = rule.minimum if rule.minimum is not None else 0.0
        high = min(limit, rule.maximum if rule.maximum is not None else limit)
        if rule.enum is not None or rule.types is None or kind not in rule.types or integer and (high < math.inf or low > 0):
            bad |= np.array([c != "" for c in column], dtype=bool)  # a rule this does not vectorise
            return [None] * count
        one, many = _CELL_PATTERNS[kind]
        joined = "\n".join(column)
        if joined.count("\n") != count - 1 or not many.match(joined):
            unreadable = np.fromiter((not one.match(c) for c in column), bool, count)
            bad |= unreadable
            column = ["" if u else c for c, u in zip(column, unreadable.tolist())]
        if integer:  # unsigned by the pattern: no range left to check
            return [int(c) if c else None for c in column]
        gaps = "" in column
        values = np.fromiter(map(float, [c or "nan" for c in column] if gaps else column), float, count)
        with np.errstate(invalid="ignore"):
            bad |= ~np.isnan(values) & ~((values >= max(0.0, low)) & (values <= high))
        return [None if c == "" else v for c, v in zip(column, values.tolist())] if gaps else values.tolist()

    def enumerated(name: str, allowed: Iterable[str]) -> list[str]:
        """A column drawn from a few values, empty allowed: each distinct cell judged once."""
        nonlocal bad
        rule, allowed, column = rules.rule(name), set(allowed), cells(name)
        verdict = {c: c == "" or (c in allowed and rule.problem(cell_value(c)) is None) for c in set(column)}
        bad |= np.fromiter((not verdict[c] for c in column), bool, count)
        return column

    row_values: dict[str, list[Any]] = {"frame": [row.frame for row in kept],
                                        "phase": enumerated("phase", PHASES)}
    # The frame cell as the schema reads it: an integer without sign, spaces or leading zeros (int() took more).
    frames = cells("frame")
    joined = "\n".join(frames)
    if "" in frames or joined.count("\n") != count - 1 or not _CELL_PATTERNS["integer"][1].match(joined):
        bad |= np.fromiter((not _CELL_PATTERNS["integer"][0].match(c) or c == "" for c in frames), bool, count)
    frame_rule = rules.rule("frame")
    if frame_rule.maximum is not None or (frame_rule.minimum or 0) > 0 or frame_rule.types != frozenset({"integer"}):
        bad[:] = True  # a frame rule this does not vectorise
    for name in TIMING_COLUMNS:
        row_values[name] = numbers(name, ABSURD_MS)
    row_values["t_start_ns"] = numbers("t_start_ns", math.inf, integer=True)
    sources = enumerated("gpu_source", GPU_SOURCES)
    row_values["gpu_source"] = [c or None for c in sources]
    flags = {name: enumerated(name, ("0", "1", "true", "false")) for name in FLAG_COLUMNS}
    # The host's own check of a GPU time (_judge_gpu_ms): a clock's garbage or a frame flagged disjoint.
    gpu = np.array([math.nan if v is None else v for v in row_values["gpu_ms"]])
    judged = np.array([s not in ("", "none") for s in sources]) & ~np.isnan(gpu)
    garbage = (gpu == 0) | np.isin(np.array(flags["disjoint"]), ("1", "true"))
    for sentinel in GPU_SENTINELS_NS:
        with np.errstate(invalid="ignore"):
            garbage |= np.abs(gpu * 1e6 - sentinel) <= max(1.0, sentinel * 1e-12)
    bad |= judged & garbage
    for name in COUNTER_COLUMNS + extras:
        row_values[name] = numbers(name, ABSURD_COUNT)
    for name in FLAG_COLUMNS:
        row_values[name] = [None if c == "" else c not in ("0", "false") for c in flags[name]]
    keys = ("frame", "phase", *TIMING_COLUMNS, "t_start_ns", "gpu_source", *COUNTER_COLUMNS, *extras, *FLAG_COLUMNS)
    good = (~bad).tolist()
    return {values[0]: dict(zip(keys, values))
            for values, ok in zip(zip(*(row_values[k] for k in keys)), good) if ok}


class FramesWriter:
    """Runner side: writes frames.csv row by row, flushing so that a killed runner leaves its frames."""

    def __init__(self, path: str | Path, extra_columns: Iterable[str] = ()) -> None:
        self.columns = FRAME_COLUMNS + tuple(extra_columns)
        self._handle = open(path, "w", newline="", encoding="utf-8")
        self._writer = csv.writer(self._handle)
        self._writer.writerow(self.columns)
        self._handle.flush()

    def write(self, **values: Any) -> None:
        self._writer.writerow([format_cell(values.get(c)) for c in self.columns])
        self._handle.flush()

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> FramesWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def format_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return f"{value:.6f}".rstrip("0").rstrip(".") if math.isfinite(value) else str(value)
    return str(value)


# --------------------------------------------------------------------------------------- result.json


@dataclass
class RunResult:
    backend: str | None = None
    timer_source: str | None = None
    present_source: str | None = None
    gpu: dict[str, Any] = field(default_factory=dict)
    issues: list[Issue] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    issues_not_kept: Counter[str] = field(default_factory=Counter)  # kind -> issues beyond MAX_ISSUES


def read_result_json(path: str | Path) -> RunResult:
    """Read result.json. A missing or malformed file is recorded as an issue, not raised.

    Python's json reads NaN, Infinity and -Infinity (and 1e999 as infinity), which JSON does not allow and
    run.json cannot hold: each such number is dropped (None) with a `nan` issue naming its key. At most
    MAX_ISSUES of the runner's issues are kept; the others are counted in `issues_not_kept`."""
    result = RunResult()
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_RESULT_JSON_BYTES:
            result.issues.append(Issue("protocol", f"result.json is {size} bytes, more than the "
                                                   f"{MAX_RESULT_JSON_BYTES} it may be (MAX_RESULT_JSON_BYTES); "
                                                   "not read"))
            return result
        raw = json.loads(path.read_text(encoding="utf-8"), parse_constant=float)
    except FileNotFoundError:
        result.issues.append(Issue("protocol", "result.json was not written"))
        return result
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        result.issues.append(Issue("protocol", f"result.json unreadable: {exc}"))
        return result
    if not isinstance(raw, dict):
        result.issues.append(Issue("protocol", "result.json is not a JSON object"))
        return result
    dropped: set[tuple[Any, ...]] = set()
    raw = _finite_json(raw, "", (), result.issues, dropped)
    if not _is_protocol_version(raw.get("protocol")):
        result.issues.append(Issue("protocol", f"result.json protocol {raw.get('protocol')!r} is not {PROTOCOL_VERSION}"))
    for key in ("backend", "timer_source", "present_source"):
        value = raw.get(key)
        if value is not None and not isinstance(value, str):
            result.issues.append(Issue("protocol", f"result.json key {key!r} is not a string; ignored"))
            value = None
        setattr(result, key, value)
    if result.timer_source is not None and result.timer_source not in GPU_SOURCES:
        result.issues.append(Issue("protocol", f"result.json timer_source {result.timer_source!r} not in {GPU_SOURCES}"))
        result.timer_source = None
    gpu = raw.get("gpu", {})
    if not isinstance(gpu, dict):
        result.issues.append(Issue("protocol", "result.json key 'gpu' is not an object; ignored"))
        gpu = {}
    result.gpu = gpu
    issues = raw.get("issues", [])
    if not isinstance(issues, list):
        result.issues.append(Issue("protocol", "result.json key 'issues' is not a list; ignored"))
        issues = []
    for entry in issues[:MAX_ISSUES]:
        if isinstance(entry, dict):
            result.issues.append(Issue.from_dict(entry))
        else:
            result.issues.append(Issue("protocol", f"result.json issue {entry!r} is not an object"))
    for entry in issues[MAX_ISSUES:]:
        result.issues_not_kept[str(entry.get("kind", "unknown")) if isinstance(entry, dict) else "protocol"] += 1
    known = {"protocol", "backend", "timer_source", "present_source", "gpu", "issues"}
    result.extra = {k: v for k, v in raw.items() if k not in known}
    result.issues.extend(_result_schema_issues(raw, result, dropped))
    return result


def _finite_json(value: Any, where: str, path: tuple[Any, ...], issues: list[Issue],
                 dropped: set[tuple[Any, ...]]) -> Any:
    """`value` with every NaN or infinite number replaced by None, each one a `nan` issue naming its key
    (and its path added to `dropped`, so that the schema check does not report the None again)."""
    if isinstance(value, float) and not math.isfinite(value):
        issues.append(Issue("nan", f"result.json {where or 'value'}: {value} is not a finite number; dropped"))
        dropped.add(path)
        return None
    if isinstance(value, dict):
        return {k: _finite_json(v, f"{where}.{k}" if where else str(k), (*path, k), issues, dropped)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_finite_json(v, f"{where}[{i}]", (*path, i), issues, dropped) for i, v in enumerate(value)]
    return value


def cap_issues(issues: list[Issue], not_kept: Mapping[str, int] | None = None) -> list[Issue]:
    """At most MAX_ISSUES issues of one launch; those beyond it (and those a reader already left out,
    `not_kept`: kind -> count) are counted in one last `issues_capped` issue, so that a runner reporting
    200,000 GL errors still gives a run.json of a readable size."""
    counts: dict[str, int] = dict(not_kept or {})
    for issue in issues[MAX_ISSUES:]:
        counts[issue.kind] = counts.get(issue.kind, 0) + 1
    if not counts:
        return issues
    total = sum(counts.values())
    kinds = ", ".join(f"{kind} x {n}" for kind, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    return [*issues[:MAX_ISSUES], Issue("issues_capped", f"{total} more issues of this launch are not kept, "
                                                         f"beyond the {MAX_ISSUES} a launch keeps (MAX_ISSUES): "
                                                         f"{kinds}")]


def write_result_json(path: str | Path, *, backend: str, timer_source: str, present_source: str,
                      gpu: Mapping[str, Any], issues: Iterable[Issue], **extra: Any) -> None:
    payload = {
        "protocol": PROTOCOL_VERSION,
        "backend": backend,
        "timer_source": timer_source,
        "present_source": present_source,
        "gpu": dict(gpu),
        "issues": [i.to_dict() for i in issues],
        **extra,
    }
    Path(path).write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n", encoding="utf-8")


# ------------------------------------------------------------------------------------- schema hooks
# The published schemas (pytest_zbench/schema/*.schema.json) are the contract; the readers above keep their
# own detailed checks (which drop what they reject), and these hooks report whatever else breaks a schema.


def _raise_on_schema_violations(name: str, raw: Mapping[str, Any], source: str) -> None:
    from ..schema import schema_file, validator_available, violations

    if not validator_available():
        # A device running the reference runner need not have jsonschema: the job it reads was written, and
        # validated, by the host; the detailed checks above still run on both sides.
        return

    found = violations(name, raw)
    if found:
        listed = "; ".join(str(v) for v in found[:3]) + (f"; and {len(found) - 3} more" if len(found) > 3 else "")
        raise ProtocolError(f"{source}: breaks {schema_file(name)}: {listed}")


def _drop_schema_violations(row: dict[str, Any], cells: Mapping[str, str], frame: int, issues: list[Issue]) -> bool:
    """Judge the cells of one frames.csv row the reader kept against frames.schema.json and drop those that
    break it; False when the row itself goes (its frame or phase cell breaks it)."""
    from ..schema import frame_rules

    kept = [c for c in cells if c in ("frame", "phase") or row.get(c) is not None]
    problems = frame_rules().row_problems(cells, kept)
    for column in ("frame", "phase"):
        if column in problems:
            issues.append(Issue("protocol", f"frames.csv column {column!r}: {problems[column]} "
                                            "(frames.schema.json); row dropped", frame))
            return False
    for column, why in problems.items():
        issues.append(Issue("protocol", f"frames.csv column {column!r}: {why} (frames.schema.json); dropped", frame))
        row[column] = None
    return True


def _result_schema_issues(raw: Mapping[str, Any], result: RunResult,
                          dropped: set[tuple[Any, ...]]) -> list[Issue]:
    """result.json against result.schema.json, leaving out the keys read_result_json already rejected
    (`dropped`: the non-finite numbers, already `nan` issues)."""
    from ..schema import violations

    rejected: set[tuple[Any, ...]] = set(dropped)
    if not _is_protocol_version(raw.get("protocol")):
        rejected.add(("protocol",))
    rejected |= {(key,) for key in ("backend", "timer_source", "present_source")
                 if raw.get(key) is not None and getattr(result, key) is None}
    if not isinstance(raw.get("gpu", {}), dict):
        rejected.add(("gpu",))
    entries = raw.get("issues", [])
    if not isinstance(entries, list):
        rejected.add(("issues",))
    else:
        # Only the issues that are kept are validated: the others are counted, never read (MAX_ISSUES), and
        # validating 200,000 of them would take the best part of a minute.
        raw = {**raw, "issues": entries[:MAX_ISSUES]}
        rejected |= {("issues", n) for n, entry in enumerate(raw["issues"]) if not isinstance(entry, dict)}
    return [Issue("protocol", f"result.json {v} (result.schema.json)") for v in violations("result", raw)
            if not any(v.path[:len(r)] == r for r in rejected)]


def capture_name(frame: int) -> str:
    return f"capture-{frame}.png"


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_COLOUR_TYPES = {0: "greyscale", 2: "RGB without alpha", 3: "palette", 4: "greyscale with alpha", 6: "RGBA"}


@dataclass(frozen=True)
class PngHeader:
    width: int
    height: int
    bit_depth: int
    colour_type: int

    @property
    def colour(self) -> str:
        return _PNG_COLOUR_TYPES.get(self.colour_type, f"colour type {self.colour_type}")


def read_png_header(path: str | Path) -> PngHeader | str:
    """A PNG's IHDR (size, bit depth, colour type), read without decoding anything; or why the file is not
    a PNG. Pillow reads a 16-bit RGBA PNG as 8-bit RGBA without a word, so the depth is checked here."""
    name = Path(path).name
    try:
        with open(path, "rb") as handle:
            head = handle.read(33)
    except OSError as exc:
        return f"{name} cannot be read: {exc.strerror or exc}"
    if head[:8] != _PNG_SIGNATURE:
        return f"{name} is not a PNG (it does not start with the PNG signature)"
    if len(head) < 33 or head[12:16] != b"IHDR":
        return f"{name} is not a PNG: no IHDR header after the signature"
    return PngHeader(*struct.unpack(">IIBB", head[16:26]))


def capture_problem(path: str | Path, width: int, height: int) -> str | None:
    """Why a capture is not what the protocol asks for (an 8-bit RGBA PNG of the scene's size), from its
    header alone, or None. Nothing is decoded: a header claiming 60000 x 60000 pixels (a decompression
    bomb) is refused before any memory is spent on it."""
    name = Path(path).name
    try:
        size = Path(path).stat().st_size
    except OSError as exc:
        return f"{name} cannot be read: {exc.strerror or exc}"
    if size > MAX_ARTIFACT_BYTES:
        return f"{name} is {size} bytes, more than the {MAX_ARTIFACT_BYTES} bytes a launch's file may be"
    header = read_png_header(path)
    if isinstance(header, str):
        return header
    if header.bit_depth != 8:
        return f"{name} is a {header.bit_depth}-bit PNG; captures are 8-bit RGBA"
    if header.colour_type != 6:
        return f"{name} is {header.colour} (PNG colour type {header.colour_type}); captures are 8-bit RGBA"
    if (header.width, header.height) != (width, height):
        return f"{name} is {header.width}x{header.height}, the scene is {width}x{height}"
    return None
