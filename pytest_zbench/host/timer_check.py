"""The timer check of a device's GPU time source, once per session (docs/gpu-timing.md, docs/methodology.md).

When a device's runner times the GPU with anything but `none`, the host runs a light and a heavier variant of
the timer-check scene (gpu_timing.TIMER_CHECK_SCENE, and the same ops drawn TIMER_CHECK_FACTOR times in place)
for a few uncapped frames, and asks gpu_timing.check_timer whether the heavy one reads clearly more GPU
time. A `timer_query` must also cover the frame: the heavy variant runs once more with the job asking for
`finish_bracket` (Job.gpu_timer), and gpu_timing.check_coverage asks whether the query sees a fair share of
what the bracket sees (llvmpipe's sees one tile, 1-5 %). A source that fails either is not trusted: its gpu_ms
is neither charted nor gated (run.json `gpu_valid`), and the check's detail says why.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict

from ..gpu_timing import MIN_COVERAGE, TIMER_CHECK_FACTOR, TIMER_CHECK_SCENE, check_coverage, check_timer, heavier_scene
from ..protocol import Job
from ..scenes import load_corpus
from ..settings import Settings
from .device import Device, safe_component

WARMUP = 5
FRAMES = 30
# Used when the corpus has no TIMER_CHECK_SCENE (a project with its own scenes): one translucent rect, inset
# by a pixel so that no backend can turn it into a clear.
FALLBACK_COLOR = "#3366CC40"


class CoverageEntry(TypedDict):
    """run.json's gpu.timer_check.coverage: a timer query against a finish bracket on the heavy variant."""

    checked: bool
    valid: bool | None
    finish_ms: float | None
    finish_cpu_ms: float | None
    share: float | None
    min_share: float
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


def timer_check_scenes(device: Device, settings: Settings) -> tuple[dict[str, Any], dict[str, Any]]:
    """The light and heavy job scenes for this device's surface."""
    display = device.display()
    cases, _ = load_corpus(settings.scenes_dir) if settings.scenes_dir.is_dir() else ([], [])
    case = next((c for c in cases if c.id == TIMER_CHECK_SCENE), None)
    if case is not None:
        light = case.job_scene(display.width, display.height)
    else:
        rect = {"op": "rect", "x": 1, "y": 1, "w": max(display.width - 2, 1), "h": max(display.height - 2, 1),
                "color": FALLBACK_COLOR}
        light = {"id": TIMER_CHECK_SCENE, "params": {}, "width": display.width, "height": display.height,
                 "features": ["rect"], "ops": [rect]}
    backend = device.probe().backends.get(device.spec.backend)
    if backend is not None and "repeat" in backend.features:
        heavy = heavier_scene(light, TIMER_CHECK_FACTOR)
    else:  # a runner without `repeat` still draws the ops k times when they are written out k times
        heavy = copy.deepcopy(light)
        heavy["ops"] = copy.deepcopy(light["ops"]) * TIMER_CHECK_FACTOR
        heavy["id"] = f"{light['id']}.timer_check.x{TIMER_CHECK_FACTOR}"
    light = dict(light, id=f"{light['id']}.timer_check.x1")
    return light, heavy


def check_gpu_timer(device: Device, settings: Settings, results_dir: Path, source: str) -> TimerCheckEntry:
    """Run both variants on the device; return run.json's gpu.timer_check entry."""
    entry: TimerCheckEntry = {"source": source, "valid": False, "light_ms": None, "heavy_ms": None,
                             "scene": TIMER_CHECK_SCENE, "factor": TIMER_CHECK_FACTOR, "detail": ""}
    try:
        light, heavy = timer_check_scenes(device, settings)
        display = device.display()
        values: dict[str, list[float]] = {}
        cpu: dict[str, list[float]] = {}
        bracket_failed = ""
        folder = results_dir / safe_component(device.name) / "_timer_check"
        runs: list[tuple[str, dict[str, Any], str | None]] = [("light", light, None), ("heavy", heavy, None)]
        if source == "timer_query":
            runs.append(("heavy.finish_bracket", heavy, "finish_bracket"))
        for name, scene, forced in runs:
            job = Job(backend=device.spec.backend, mode="uncapped", refresh_hz=display.refresh_hz,
                      warmup_frames=WARMUP, frames=FRAMES, capture=(), seed=settings.seed, scene=scene,
                      gpu_timer=forced)  # type: ignore[arg-type]
            outcome = device.launch(job, 0, folder / name, timeout_s=settings.launch_timeout(
                display.refresh_hz, device.spec.timeout_s))
            wanted = forced or source
            rows = [row for row in outcome.frames.rows if row["phase"] == "measure"]
            values[name] = [row["gpu_ms"] for row in rows if row["gpu_source"] == wanted
                            and row.get("gpu_ms") is not None and not row.get("disjoint")]
            cpu[name] = [row["cpu_ms"] for row in rows if row.get("cpu_ms") is not None]
            if not outcome.complete:
                what = f"timer check launch ({name}) did not complete: " + "; ".join(
                    i.detail for i in outcome.issues[:3])
                if forced:  # the runner could not time with finish_bracket: coverage unknown, said so
                    values[name], bracket_failed = [], what
                    continue
                entry["detail"] = what
                return entry
    except Exception as exc:  # the timer check must never take the session down; an unchecked source is untrusted
        entry["detail"] = f"the timer check could not run: {type(exc).__name__}: {exc}"
        return entry
    result = check_timer(values["light"], values["heavy"], source=source)
    entry["light_ms"] = _median(values["light"])
    entry["heavy_ms"] = _median(values["heavy"])
    entry["valid"] = result.valid
    entry["detail"] = result.detail
    if source == "timer_query":
        coverage = coverage_entry(values["heavy"], values.get("heavy.finish_bracket", []),
                                  cpu.get("heavy.finish_bracket", []), bracket_failed)
        entry["coverage"] = coverage
        if coverage["checked"] and not coverage["valid"]:
            entry["valid"] = False
        entry["detail"] = f"{result.detail}; {coverage['detail']}"
    return entry


def coverage_entry(timer_ms: Sequence[float], finish_ms: Sequence[float], finish_cpu_ms: Sequence[float],
                   failed: str = "") -> CoverageEntry:
    """The coverage part of the timer check. Not checked (the source keeps the timer check's verdict) when the
    runner gave no finish_bracket values: a runner that ignores the job's gpu_timer, or has no such source;
    `failed` says why the finish_bracket launch did not complete, if it did not."""
    if not finish_ms:
        why = failed or ("the runner gave no finish_bracket values for a job asking for them (it does not read "
                         "the job's gpu_timer, or has no finish_bracket source)")
        return {"checked": False, "valid": None, "finish_ms": None, "finish_cpu_ms": None, "share": None,
                "min_share": MIN_COVERAGE, "detail": f"timer_query coverage not checked: {why}"}
    result = check_coverage(list(timer_ms), list(finish_ms), list(finish_cpu_ms) or None)
    timer, finish, cpu = _median(timer_ms), _median(finish_ms), _median(finish_cpu_ms)
    budget = max((finish or 0.0) - (cpu or 0.0), 1e-9)
    return {"checked": True, "valid": result.valid, "finish_ms": finish, "finish_cpu_ms": cpu,
            "share": None if timer is None or finish is None else round(timer / budget, 4),
            "min_share": MIN_COVERAGE, "detail": result.detail}


def _median(values: Sequence[float]) -> float | None:
    finite = sorted(v for v in values if math.isfinite(v))
    if not finite:
        return None
    mid = len(finite) // 2
    value = finite[mid] if len(finite) % 2 else (finite[mid - 1] + finite[mid]) / 2
    return round(value, 6)
