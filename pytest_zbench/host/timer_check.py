"""The timer check of a device's GPU time source, once per session (docs/gpu-timing.md, docs/methodology.md).

When a device's runner times the GPU with anything but `none`, the host runs a light and a heavier variant of
the timer-check scene (gpu_timing.TIMER_CHECK_SCENE, and the same ops drawn TIMER_CHECK_FACTOR times in place)
for a few uncapped frames, and asks gpu_timing.check_timer whether the heavy one reads clearly more GPU
time. A source that fails is not trusted: its gpu_ms is neither charted nor gated (run.json `gpu_valid`).
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any, TypedDict

from ..gpu_timing import TIMER_CHECK_FACTOR, TIMER_CHECK_SCENE, check_timer, heavier_scene
from ..protocol import Job
from ..scenes import load_corpus
from ..settings import Settings
from .device import Device, safe_component

WARMUP = 5
FRAMES = 30
# Used when the corpus has no TIMER_CHECK_SCENE (a project with its own scenes): one translucent rect, inset
# by a pixel so that no backend can turn it into a clear.
FALLBACK_COLOR = "#3366CC40"


class TimerCheckEntry(TypedDict):
    """run.json's gpu.timer_check (schema/run.schema.json)."""

    source: str
    valid: bool
    light_ms: float | None
    heavy_ms: float | None
    scene: str
    factor: int
    detail: str


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
        folder = results_dir / safe_component(device.name) / "_timer_check"
        for name, scene in (("light", light), ("heavy", heavy)):
            job = Job(backend=device.spec.backend, mode="uncapped", refresh_hz=display.refresh_hz,
                      warmup_frames=WARMUP, frames=FRAMES, capture=(), seed=settings.seed, scene=scene)
            outcome = device.launch(job, 0, folder / name, timeout_s=settings.launch_timeout(
                display.refresh_hz, device.spec.timeout_s))
            values[name] = [row["gpu_ms"] for row in outcome.frames.rows
                            if row["phase"] == "measure" and row["gpu_source"] == source
                            and row.get("gpu_ms") is not None and not row.get("disjoint")]
            if not outcome.complete:
                entry["detail"] = f"timer check launch ({name}) did not complete: " + "; ".join(
                    i.detail for i in outcome.issues[:3])
                return entry
    except Exception as exc:  # the timer check must never take the session down; an unchecked source is untrusted
        entry["detail"] = f"the timer check could not run: {type(exc).__name__}: {exc}"
        return entry
    result = check_timer(values["light"], values["heavy"], source=source)
    entry["light_ms"] = _median(values["light"])
    entry["heavy_ms"] = _median(values["heavy"])
    entry["valid"] = result.valid
    entry["detail"] = result.detail
    return entry


def _median(values: list[float]) -> float | None:
    finite = sorted(v for v in values if math.isfinite(v))
    if not finite:
        return None
    mid = len(finite) // 2
    value = finite[mid] if len(finite) % 2 else (finite[mid - 1] + finite[mid]) / 2
    return round(value, 6)
