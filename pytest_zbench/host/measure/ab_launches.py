"""A/B on one device: the device's own runner (A) and another runner (B), launches interleaved A, B, B, A.

Interleaving cancels drift (thermal state, clocks, background load) that would read as a regression if all
of A ran before all of B (docs/methodology.md §6, §9). Each side is a SceneMeasurement of its own: A's is the
scene's measurement (its CSV, captures and run.json metrics, as without A/B), B's has its own CSV
(`<scene>.b.frames.csv`) and launch folders (`<scene>/b-launch-<k>/`).
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Any

from ...errors import UsageError
from ...inventory import Inventory
from ...regression.interleaved_ab import DEFAULT_PATTERN, Arm, interleave
from ...scenes import SceneCase
from ...settings import Settings
from ...stats import scene_metrics, summarize_scene
from ..devices.device import Device, empty_folder, safe_component
from ..devices.environment import build_record
from ..devices.health import DeviceHealth
from .launches import ProgressSink, SamplesCsv, add_launch, guarded_launch, new_measurement
from .results import (
    ABRun,
    SceneMeasurement,
)


def resolve_b_runner(spec: str, inventory: Inventory) -> tuple[str, ...]:
    """The B runner's argv: the runner of the inventory device named `spec`, else `spec` split like a shell."""
    if spec in inventory.devices:
        return tuple(inventory.get(spec).runner)
    try:
        argv = tuple(shlex.split(spec))
    except ValueError as exc:
        raise UsageError(f"--zbench-ab: {spec!r} is neither a device of the inventory nor an argv string: {exc}") from None
    if not argv:
        raise UsageError("--zbench-ab: give the B runner, a device name or an argv string")
    return argv


def measure_ab(device: Device, case: SceneCase, settings: Settings, b_runner: tuple[str, ...], results_dir: Path,
               progress: ProgressSink | None = None, health: DeviceHealth | None = None) -> SceneMeasurement:
    """settings.runs launches per side, interleaved; returns A's measurement with the B side in `.ab`."""
    launches = ABLaunches(device, case, settings, b_runner, results_dir, progress, health)
    if launches.a.job is not None:
        try:
            launches.run(interleave(settings.runs, pattern=DEFAULT_PATTERN))
        finally:
            launches.finish()
    return launches.a


class ABLaunches:
    """One scene's A/B launches, run in one go (measure_ab) or round by round (the sequential gate,
    host/measure/sequential_rounds.py): each `run` appends its slots to the order; `finish` closes the CSVs
    and summarises both sides."""

    def __init__(self, device: Device, case: SceneCase, settings: Settings, b_runner: tuple[str, ...],
                 results_dir: Path, progress: ProgressSink | None = None, health: DeviceHealth | None = None,
                 planned: int | None = None) -> None:
        self.started = time.monotonic()
        self.device, self.case, self.settings, self.b_runner = device, case, settings, b_runner
        self.results_dir, self.progress, self.health = results_dir, progress, health or DeviceHealth()
        self.a = a = new_measurement(device, case, settings)
        self._writers: dict[str, SamplesCsv] = {}
        if a.job is None:
            return
        self.planned = planned  # launches (both sides) the progress line counts to; None: the order's length
        b = SceneMeasurement(case=case, device=device.name, backend=device.spec.backend, job=a.job,
                             budget_ms=a.budget_ms)
        device_dir = results_dir / safe_component(device.name)
        self.scene_dir = device_dir / safe_component(case.id)
        a.samples_file = device_dir / f"{case.id}.frames.csv"
        b.samples_file = device_dir / f"{case.id}.b.frames.csv"
        empty_folder(self.scene_dir)  # a previous session's launches of this scene are not ours
        a.ab = ABRun(b_runner, tuple(device.spec.runner), [], b, DEFAULT_PATTERN,
                     builds={"a": build_record(device.probe().build),
                             "b": build_record(device.probe_runner(b_runner).build)})
        self.timeout = settings.launch_timeout(a.job.refresh_hz, device.spec.timeout_s)
        self._writers = {"A": SamplesCsv(a.samples_file), "B": SamplesCsv(b.samples_file)}

    @property
    def quarantined(self) -> bool:
        return self.health.reason(self.device.name) is not None

    def run(self, arms: list[Arm]) -> None:
        """Launch `arms` in order after the slots already run."""
        a = self.a
        assert a.job is not None and a.ab is not None
        order = a.ab.order
        for arm in arms:
            slot = len(order)
            side = a if arm == "A" else a.ab.b
            k = len(side.launches)
            of = self.planned or len(order) + len(arms)

            def on_progress(frame: int, frames: int, slot: int = slot, of: int = of) -> None:
                if self.progress is not None:
                    self.progress(self.case.id, slot, of, frame, frames)

            folder = self.scene_dir / (f"launch-{k}" if arm == "A" else f"b-launch-{k}")
            # The device-side folder is named by slot, so the two sides never share one.
            outcome = guarded_launch(self.device, a.job, slot, folder, self.timeout, on_progress, self.health,
                                     self.results_dir, runner=None if arm == "A" else self.b_runner)
            order.append(arm)
            add_launch(side, self._writers[arm], outcome)

    def finish(self) -> SceneMeasurement:
        a = self.a
        for writer in self._writers.values():
            writer.close()
            if writer.failure:
                a.artifact_failures.append(writer.failure)
        if a.ab is None:
            return a
        a.wall_s = a.ab.b.wall_s = time.monotonic() - self.started
        for side in (a, a.ab.b):
            if side.summaries:
                side.summary = summarize_scene(side.summaries, side.budget_ms)
        return a


def ab_entry(run: ABRun, results_dir: Path) -> dict[str, Any]:
    """The `ab` section of a run.json scene entry: B's runner, the launch order, B's launches and samples."""
    b = run.b
    summary = b.summary.to_dict() if b.summary else None
    samples = b.samples_file
    if samples is not None and samples.is_relative_to(results_dir):
        samples = samples.relative_to(results_dir)
    return {
        "runner_b": list(run.runner),
        # Both builds, as their probes report them: B is often the change under test (a pull request's head)
        "build_a": run.builds.get("a"),
        "build_b": run.builds.get("b"),
        "order": list(run.order),
        # The pattern the order follows (ABBA: counterbalanced, docs/regression.md "A/B").
        "pattern": run.pattern,
        "runs_b": len(b.launches),
        "complete_runs_b": len(b.complete_launches),
        "partial_b": b.partial,
        "metrics_b": scene_metrics(summary),  # as complete as A's `metrics`
        "per_run_medians_b": summary["per_run_medians"] if summary else {},
        "per_run_b": summary["per_run"] if summary else [],
        "samples_file_b": None if samples is None else str(samples),
        "issues_b": [dict(i.to_dict(), launch=n) for n, launch in enumerate(b.launches) for i in launch.issues],
        **({"adaptive_b": b.adaptive.to_json()} if b.adaptive is not None else {}),
        "platform_frames_b": b.platform.entry(results_dir) if b.platform is not None else None,
    }
