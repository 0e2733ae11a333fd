"""Every enumeration the host and a runner share, once, as Literal types; each tuple of values is derived from
its type (typing.get_args), so the two can never disagree. docs/runner-protocol.md describes them."""

from __future__ import annotations

from typing import Literal, get_args

PROTOCOL_VERSION = 1

Mode = Literal["paced", "uncapped"]  # simulated vsync, or as fast as possible
Phase = Literal["warmup", "measure"]  # a frames.csv row's phase
# How a frame's gpu_ms was obtained; one source per launch (docs/gpu-timing.md).
GpuSource = Literal["timer_query", "cmdbuf_time", "finish_bracket", "readback", "none"]

# Issue kinds (an issue is {frame, kind, detail} in result.json and run.json). A runner reports these:
RunnerIssueKind = Literal[
    "gl_error",  # glGetError after the frame
    "shader",  # a shader failed to compile or link, or the GL context was abandoned
    "nan",  # a NaN or infinite value
    "feature_skipped",  # the backend lacks a feature the scene needs
    "timer_invalid",  # a GPU timer value that is not a time, dropped
    "partial",  # stopped (by a signal) before every frame was rendered
    "error",  # a frame raised
    "font_fallback",  # the reference font is missing; text uses another typeface
]
# ... and the host adds these when it rejects or misses what a runner wrote, or the device failed:
HostIssueKind = Literal[
    "protocol",  # a file, row, column or key the protocol does not allow; its value is dropped
    "nan",  # a NaN or infinite cell in frames.csv, or number in result.json
    "timer_invalid",  # a gpu_ms cell that is a clock's garbage, or flagged disjoint
    "exit",  # the runner exited non-zero
    "timeout",  # the runner was killed at the launch's deadline
    "partial",  # fewer frames than the job asked for
    "capture_missing",  # a capture the job asked for was not written
    "capture_invalid",  # a capture that is not an 8-bit RGBA PNG of the scene's size; never compared
    "issues_capped",  # more issues than a launch keeps (protocol/limits.py); the rest are counted
    "connection_lost",  # the transport lost the device mid-launch
    "device_error",  # the transport failed
    "quarantined",  # the device was taken out of the session; the scene's remaining launches did not run
    "retried",  # the launch lost its connection and ran again
    "leftover",  # the runner left processes running when it exited; they were stopped
    "vacuous_capture",  # a golden test's capture is one colour, or equals another case of its sweep
]
IssueKind = Literal[RunnerIssueKind, HostIssueKind]
# CPU architecture families: one rasteriser path each for the software backend, so one software golden set
# each (docs/goldens.md); protocol.arch_family maps the names a runner reports onto them.
ArchFamily = Literal["x86_64", "x86", "aarch64", "arm", "riscv64", "ppc64le", "s390x"]
# A device's power source, in result.json's conditions a runner samples and in run.json's conditions.
PowerSource = Literal["plugged", "battery", "unknown"]

MODES: tuple[Mode, ...] = get_args(Mode)
PHASES: tuple[Phase, ...] = get_args(Phase)
GPU_SOURCES: tuple[GpuSource, ...] = get_args(GpuSource)
POWER_SOURCES: tuple[PowerSource, ...] = get_args(PowerSource)
# gpu_ms from these is a measurement of the GPU; `none` is not.
MEASURED_GPU_SOURCES: tuple[GpuSource, ...] = tuple(s for s in GPU_SOURCES if s != "none")
RUNNER_ISSUE_KINDS: tuple[RunnerIssueKind, ...] = get_args(RunnerIssueKind)
HOST_ISSUE_KINDS: tuple[HostIssueKind, ...] = get_args(HostIssueKind)
ISSUE_KINDS: tuple[IssueKind, ...] = get_args(IssueKind)
# Runner issues that make a frame wrong even when its pixels match (docs/methodology.md §7: invariants that
# are not pixels): they fail a golden test (host/verdicts/golden_test.py) and a conformance capture check.
INVARIANT_KINDS: tuple[RunnerIssueKind, ...] = ("gl_error", "shader", "nan", "feature_skipped", "error")
