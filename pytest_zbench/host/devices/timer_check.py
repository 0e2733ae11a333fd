"""The timer check of a device's GPU time source, once per session (docs/gpu-timing.md, docs/methodology.md).

When a device's runner times the GPU with anything but `none`, the host runs a light and a heavier variant of
the timer-check scene (gpu_timing.TIMER_CHECK_SCENE, and the same ops drawn TIMER_CHECK_FACTOR times in place)
for a few uncapped frames (interleaved frame by frame in one launch when the runner has `repeat`), and asks
gpu_timing.check_timer whether the heavy frames read clearly more GPU time. A `timer_query` must also cover the frame: the heavy variant runs once more with the job asking for
`finish_bracket` (Job.gpu_timer), and gpu_timing.check_coverage asks whether the query sees a fair share of
what the bracket sees (llvmpipe's sees one tile, 1-5 %). A source that fails either is not trusted: its gpu_ms
is neither charted nor gated (run.json `gpu_valid`), and the check's detail says why.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from ...gpu_timing import (
    MIN_COVERAGE,
    TIMER_CHECK_FACTOR,
    TIMER_CHECK_SCENE,
    bracket_fixed_ms,
    check_coverage,
    check_timer,
    heavier_scene,
)
from ...protocol import GpuSource, Job
from ...protocol.display_list import COMPLEXITY_COUNT
from ...scenes import load_corpus
from ...settings import Settings
from .device import Device, safe_component

WARMUP = 5
FRAMES = 30
# Used when the corpus has no TIMER_CHECK_SCENE (a project with its own scenes): one translucent rect, inset
# by a pixel so that no backend can turn it into a clear.
FALLBACK_COLOR = "#3366CC40"


class VariantCoverage(TypedDict):
    """One variant's coverage: the finish bracket's median, its CPU part, the timer query's share of the rest."""

    finish_ms: float | None
    finish_cpu_ms: float | None
    share: float | None
    valid: bool


class CoverageEntry(TypedDict):
    """run.json's gpu.timer_check.coverage: the timer query against a finish bracket, on both variants."""

    checked: bool
    valid: bool | None
    share: float | None  # the smaller of the two variants' shares
    min_share: float
    fixed_ms: float  # the bracket's fixed part, taken away from both (gpu_timing.bracket_fixed_ms)
    light: VariantCoverage | None
    heavy: VariantCoverage | None
    detail: str


class TimerCheckEntry(TypedDict, total=False):
    """run.json's gpu.timer_check (schema/run.schema.json)."""

    source: str
    valid: bool
    light_ms: float | None
    heavy_ms: float | None
    scene: str
    factor: int
    detail: str
    coverage: CoverageEntry


@dataclass(frozen=True)
class CheckJob:
    """One launch of the timer check: its scene and, for an interleaved job, the per-frame complexity that
    alternates the light (1) and the heavy (TIMER_CHECK_FACTOR) variant frame by frame."""

    name: str
    scene: dict[str, Any]
    complexity: tuple[float, ...] | None = None
    variant: str = ""  # "light" or "heavy" for a job of one variant; "" for an interleaved one


def _light_scene(device: Device, settings: Settings) -> dict[str, Any]:
    display = device.display()
    cases, _ = load_corpus(settings.scenes_dir) if settings.scenes_dir.is_dir() else ([], [])
    case = next((c for c in cases if c.id == TIMER_CHECK_SCENE), None)
    if case is not None:
        return case.job_scene(display.width, display.height)
    rect = {"op": "rect", "x": 1, "y": 1, "w": max(display.width - 2, 1), "h": max(display.height - 2, 1),
            "color": FALLBACK_COLOR}
    return {"id": TIMER_CHECK_SCENE, "params": {}, "width": display.width, "height": display.height,
            "features": ["rect"], "ops": [rect]}


def timer_check_jobs(device: Device, settings: Settings, source: str) -> list[CheckJob]:
    """The timer check's launches for this device's surface.

    A source that times each frame by itself (finish_bracket and readback drain the pipeline every frame), on a
    runner with `repeat`: one interleaved job, the scene's ops under a repeat of count "complexity", the job's
    complexity alternating 1 and TIMER_CHECK_FACTOR, so light and heavy frames share one launch and whatever else
    the device runs hits both alike. A timer query, or a runner without `repeat`: a light and a heavy job one
    after the other, each in its steady state (a pipelined query's reading depends on the frames around it:
    interleaved on llvmpipe, the heavy frames' queries absorb the light ones' work and read 80 % of a finish
    bracket, where a steady heavy run reads 10 %)."""
    light = _light_scene(device, settings)
    backend = device.probe().backends.get(device.spec.backend)
    if source != "timer_query" and backend is not None and "repeat" in backend.features:
        scene = copy.deepcopy(light)
        scene["ops"] = [{"op": "repeat", "count": COMPLEXITY_COUNT, "dx": 0, "dy": 0, "ops": light["ops"]}]
        scene["id"] = f"{light['id']}.timer_check.x1-x{TIMER_CHECK_FACTOR}"
        scene["features"] = sorted(set(light.get("features", [])) | {"repeat"})
        complexity = tuple(1.0 if f % 2 == 0 else float(TIMER_CHECK_FACTOR) for f in range(WARMUP + 2 * FRAMES))
        return [CheckJob("interleaved", scene, complexity)]
    if backend is not None and "repeat" in backend.features:
        heavy = heavier_scene(light, TIMER_CHECK_FACTOR)
    else:  # a runner without `repeat` still draws the ops k times when they are written out k times
        heavy = copy.deepcopy(light)
        heavy["ops"] = copy.deepcopy(light["ops"]) * TIMER_CHECK_FACTOR
        heavy["id"] = f"{light['id']}.timer_check.x{TIMER_CHECK_FACTOR}"
    return [CheckJob("light", dict(light, id=f"{light['id']}.timer_check.x1"), variant="light"),
            CheckJob("heavy", heavy, variant="heavy")]


def _variant(job: CheckJob, frame: int) -> str:
    if job.complexity is None:
        return job.variant
    return "light" if job.complexity[frame] == 1 else "heavy"


def check_gpu_timer(device: Device, settings: Settings, results_dir: Path, source: str) -> TimerCheckEntry:
    """Run the timer check's launches on the device; return run.json's gpu.timer_check entry."""
    entry: TimerCheckEntry = {"source": source, "valid": False, "light_ms": None, "heavy_ms": None,
                             "scene": TIMER_CHECK_SCENE, "factor": TIMER_CHECK_FACTOR, "detail": ""}
    # values[(gpu source, variant)]: gpu_ms of measured frames; cpu_ms of the finish_bracket heavy frames.
    values: dict[tuple[str, str], list[float]] = {}
    finish_cpu: dict[str, list[float]] = {}
    bracket_failed = ""
    try:
        jobs = timer_check_jobs(device, settings, source)
        display = device.display()
        folder = results_dir / safe_component(device.name) / "_timer_check"
        # A timer query must also cover the frame: both variants once more, timed by a finish bracket.
        runs: list[tuple[CheckJob, GpuSource | None]] = [(job, None) for job in jobs]
        if source == "timer_query":
            runs += [(job, "finish_bracket") for job in jobs]
        for job, forced in runs:
            measured = FRAMES * (2 if job.complexity is not None else 1)
            launch_job = Job(backend=device.spec.backend, mode="uncapped", refresh_hz=display.refresh_hz,
                             warmup_frames=WARMUP, frames=measured, capture=(), seed=settings.seed, scene=job.scene,
                             complexity=job.complexity, gpu_timer=forced)
            name = job.name + (f".{forced}" if forced else "")
            outcome = device.launch(launch_job, 0, folder / name, timeout_s=settings.launch_timeout(
                display.refresh_hz, device.spec.timeout_s))
            if not outcome.complete:
                what = f"timer check launch ({name}) did not complete: " + "; ".join(
                    i.detail for i in outcome.issues[:3])
                if forced:  # the runner could not time with finish_bracket: coverage unknown, said so
                    bracket_failed = what
                    continue
                entry["detail"] = what
                return entry
            wanted = forced or source
            for row in outcome.frames.rows:
                if row["phase"] != "measure":
                    continue
                variant = _variant(job, int(row["frame"]))
                if row["gpu_source"] == wanted and row.get("gpu_ms") is not None and not row.get("disjoint"):
                    values.setdefault((wanted, variant), []).append(row["gpu_ms"])
                if forced and row.get("cpu_ms") is not None:
                    finish_cpu.setdefault(variant, []).append(row["cpu_ms"])
    except Exception as exc:  # the timer check must never take the session down; an unchecked source is untrusted
        entry["detail"] = f"the timer check could not run: {type(exc).__name__}: {exc}"
        return entry
    light, heavy = values.get((source, "light"), []), values.get((source, "heavy"), [])
    result = check_timer(light, heavy, source=source)
    entry["light_ms"] = _median(light)
    entry["heavy_ms"] = _median(heavy)
    entry["valid"] = result.valid
    entry["detail"] = result.detail
    if source == "timer_query":
        coverage = coverage_entry({variant: (values.get((source, variant), []),
                                             values.get(("finish_bracket", variant), []),
                                             finish_cpu.get(variant, [])) for variant in ("light", "heavy")},
                                  bracket_failed)
        entry["coverage"] = coverage
        if coverage["checked"] and not coverage["valid"]:
            entry["valid"] = False
        entry["detail"] = f"{result.detail}; {coverage['detail']}"
    return entry


def coverage_entry(variants: Mapping[str, tuple[Sequence[float], Sequence[float], Sequence[float]]],
                   failed: str = "") -> CoverageEntry:
    """The coverage part of the timer check: per variant (light, heavy) the timer query's gpu_ms, the finish
    bracket's gpu_ms and its cpu_ms. The query must cover MIN_COVERAGE of the bracket's drawing on both (its
    GPU part less the fixed part both variants share, gpu_timing.bracket_fixed_ms): a timer that sees one tile
    (llvmpipe: 0-2 % of the light variant) fails on the light one, and one variant alone can mislead
    (llvmpipe's heavy frames, which flush mid-frame, read 15-40 % of their bracket).

    Not checked (the source keeps the timer check's verdict) when the runner gave no finish_bracket values: a
    runner that ignores the job's gpu_timer, or has no such source; `failed` says why that launch failed."""
    if not all(finish for _, finish, _ in variants.values()):
        why = failed or ("the runner gave no finish_bracket values for a job asking for them (it does not read "
                         "the job's gpu_timer, or has no finish_bracket source)")
        return {"checked": False, "valid": None, "share": None, "min_share": MIN_COVERAGE, "fixed_ms": 0.0,
                "light": None, "heavy": None, "detail": f"timer_query coverage not checked: {why}"}
    parts: dict[str, VariantCoverage] = {}
    details = []
    gpu_part = {name: _gpu_part(finish_ms, cpu_ms) for name, (_, finish_ms, cpu_ms) in variants.items()}
    fixed = round(bracket_fixed_ms(gpu_part.get("light"), gpu_part.get("heavy")), 6)
    for name, (timer_ms, finish_ms, cpu_ms) in variants.items():
        result = check_coverage(list(timer_ms), list(finish_ms), list(cpu_ms) or None, fixed_ms=fixed)
        timer, finish, cpu = _median(timer_ms), _median(finish_ms), _median(cpu_ms)
        budget = max((finish or 0.0) - (cpu or 0.0) - fixed, 1e-9)
        share = None if timer is None or finish is None else round(timer / budget, 4)
        parts[name] = {"finish_ms": finish, "finish_cpu_ms": cpu, "share": share, "valid": result.valid}
        details.append(f"{name}: {result.detail}")
    valid = all(part["valid"] for part in parts.values())
    shares = [part["share"] for part in parts.values() if part["share"] is not None]
    head = "timer_query coverage passed" if valid else "timer_query coverage failed"
    return {"checked": True, "valid": valid, "share": min(shares) if shares else None, "min_share": MIN_COVERAGE,
            "fixed_ms": fixed,
            "light": parts.get("light"), "heavy": parts.get("heavy"),
            "detail": f"{head} (both variants must reach {MIN_COVERAGE:.0%}): " + "; ".join(details)}


def _gpu_part(finish_ms: Sequence[float], cpu_ms: Sequence[float]) -> float | None:
    finish, cpu = _median(finish_ms), _median(cpu_ms)
    return None if finish is None else finish - (cpu or 0.0)


def _median(values: Sequence[float]) -> float | None:
    finite = sorted(v for v in values if math.isfinite(v))
    if not finite:
        return None
    mid = len(finite) // 2
    value = finite[mid] if len(finite) % 2 else (finite[mid - 1] + finite[mid]) / 2
    return round(value, 6)
