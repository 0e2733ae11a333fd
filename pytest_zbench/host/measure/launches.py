"""Measure one scene on one device: build the job, run the launches, keep every sample, summarise.

The per-scene CSV is written as soon as each launch is read, by whichever process measured the scene (one
file per device and scene, so xdist workers never share one): a crash later in the session loses nothing.
"""

from __future__ import annotations

import csv
import dataclasses
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import DeviceError
from ...gpu_timing import MixedGpuSources, run_source
from ...protocol import FRAME_COLUMNS, FrameTable, Issue, Job, RunResult, format_cell
from ...protocol.display_list import compressed_formats
from ...scenes import SceneCase
from ...settings import Settings
from ...stats import LaunchSamples, summarize_launch, summarize_scene
from ..devices import android_frame_dumps as platform_frames
from ..devices.device import Device, LaunchOutcome, empty_folder, safe_component, utc_now
from ..devices.health import DeviceHealth
from .android_frame_series import PlatformSeries
from .cold_start import time_to_first_frame_ms
from .corun_load import read_corun_load
from .results import (
    DEVICE_FAULT_KINDS,
    SceneMeasurement,
)
from .runner_conditions import runner_sample, with_runner_sample

# (scene id, launch index, launches, frame, frames) → None
ProgressSink = Callable[[str, int, int, int, int], None]

def missing_features(device: Device, case: SceneCase) -> str | None:
    """Why the device's runner cannot draw the scene, or None when it can."""
    probe = device.probe()
    backend = probe.backends.get(device.spec.backend)
    if backend is None:
        return (f"runner {probe.runner_name!r} on device {device.name} has no backend {device.spec.backend!r} "
                f"(its probe lists {', '.join(sorted(probe.backends))})")
    missing = sorted(case.features - backend.features)
    if missing:
        return (f"scene {case.id} needs feature(s) {', '.join(missing)}, which runner {probe.runner_name!r} "
                f"({device.spec.backend}) on device {device.name} does not list in its probe")
    return None


def unsupported_by_backend(device: Device, case: SceneCase) -> str | None:
    """Why the device's backend does not support what the scene measures, or None: a compressed texture
    format its probe does not list (`compressed_formats`, docs/runner-protocol.md). Its runner may draw the op
    anyway, decoded on the CPU, which would measure an RGBA upload under a compressed upload's name."""
    probe = device.probe()
    backend = probe.backends.get(device.spec.backend)
    needed = compressed_formats(case.ops)
    if backend is None or not needed:
        return None
    listed = backend.info.get("compressed_formats")
    have = {f for f in listed if isinstance(f, str)} if isinstance(listed, list) else set()
    missing = sorted(needed - have)
    if not missing:
        return None
    return (f"not supported: scene {case.id} measures {', '.join(missing)} compressed texture upload, which backend "
            f"{device.spec.backend!r} of runner {probe.runner_name!r} on device {device.name} does not do (its "
            f"probe's compressed_formats: {', '.join(sorted(have)) or 'none'}; docs/scenes.md, \"Not supported\")")


def build_job(device: Device, case: SceneCase, settings: Settings) -> Job:
    display = device.display()
    job = Job(
        backend=device.spec.backend,
        mode=case.mode or settings.mode,
        refresh_hz=display.refresh_hz,
        warmup_frames=settings.warmup,
        frames=settings.frames,
        capture=tuple(case.capture),
        seed=settings.seed,
        scene=case.job_scene(display.width, display.height),
    )
    if settings.goldens_only and case.complexity is not None:
        # An adaptive scene's goldens-only launch renders every frame at its capture complexity, the captured
        # frames inside the complexity list as adaptive launches place them (host/measure/adaptive_launches.py, docs/goldens.md).
        warmup = max(settings.warmup, max(case.capture, default=-1) + 1)
        job = dataclasses.replace(job, warmup_frames=warmup,
                                  complexity=(float(case.complexity.capture),) * (warmup + settings.frames))
    return job


def new_measurement(device: Device, case: SceneCase, settings: Settings) -> SceneMeasurement:
    """A scene's measurement before its launches: skipped with the reason, or with its job and budget."""
    measurement = SceneMeasurement(case=case, device=device.name, backend=device.spec.backend, job=None)
    # Unsupported first: a backend without the compressed format does not support the scene, whether or not
    # its runner lists the op that draws it.
    unsupported = unsupported_by_backend(device, case)
    measurement.skipped = unsupported or missing_features(device, case)
    measurement.unsupported = unsupported is not None
    if not measurement.skipped:
        measurement.job = build_job(device, case, settings)
        measurement.budget_ms = case.budget_ms or 1000.0 / measurement.job.refresh_hz
    return measurement


def measure_scene(device: Device, case: SceneCase, settings: Settings, results_dir: Path,
                  progress: ProgressSink | None = None, health: DeviceHealth | None = None) -> SceneMeasurement:
    started = time.monotonic()
    measurement = new_measurement(device, case, settings)
    if measurement.job is None:
        return measurement
    job = measurement.job
    budget = measurement.budget_ms
    device_dir = results_dir / safe_component(device.name)
    scene_dir = device_dir / safe_component(case.id)
    csv_path = device_dir / f"{case.id}.frames.csv"
    measurement.samples_file = csv_path
    empty_folder(scene_dir)  # a previous session's launches and failure images of this scene are not ours
    timeout = settings.launch_timeout(job.refresh_hz, device.spec.timeout_s)
    writer = SamplesCsv(csv_path)
    health = health if health is not None else DeviceHealth()
    try:
        for index in range(settings.runs):
            def on_progress(frame: int, of: int, index: int = index) -> None:
                if progress is not None:
                    progress(case.id, index, settings.runs, frame, of)

            if progress is not None:
                progress(case.id, index, settings.runs, 0, job.total_frames)
            outcome = guarded_launch(device, job, index, scene_dir / f"launch-{index}", timeout, on_progress, health,
                                     results_dir)
            add_launch(measurement, writer, outcome)
            if health.reason(device.name) is not None:
                left = settings.runs - index - 1
                outcome.issues.append(Issue("quarantined", f"{health.skip_reason(device.name)}; "
                                                           f"{left} launch(es) of this scene not run"))
                break
    finally:
        writer.close()
        if writer.failure:
            measurement.artifact_failures.append(writer.failure)
        measurement.wall_s = time.monotonic() - started
    if measurement.summaries:
        measurement.summary = summarize_scene(measurement.summaries, budget)
    return measurement


def add_launch(measurement: SceneMeasurement, writer: SamplesCsv, outcome: LaunchOutcome) -> None:
    """Keep one launch: its rows in the scene's CSV (at once), its summary when it measured any frame."""
    assert measurement.job is not None
    measurement.launches.append(outcome)
    writer.append(len(measurement.launches) - 1, outcome.frames)
    if outcome.platform_frames is not None:
        if measurement.platform is None:
            measurement.platform = PlatformSeries.beside(writer.path, outcome.platform_frames.package)
        measurement.platform.add(len(measurement.launches) - 1, outcome.platform_frames, measurement.job.refresh_hz)
    samples = launch_samples(outcome.frames, measurement.job.mode, partial=outcome.partial)
    if samples is not None:
        summary = summarize_launch(samples, measurement.budget_ms)
        # The launch's own cold start, beside its frames: the gate can judge it (cold-start metrics)
        # and the other tasks' load beside it: the busy-host guard reads it (docs/regression.md, "A busy host")
        measurement.summaries.append(dataclasses.replace(
            summary, time_to_first_frame_ms=time_to_first_frame_ms(outcome),
            corun_load=read_corun_load(outcome.result.extra.get("host_load"))))
        measurement.summarized.append(outcome)
        measurement.samples.append(samples)


def guarded_launch(device: Device, job: Job, index: int, local_dir: Path, timeout: float, on_progress: Any,
                   health: DeviceHealth, results_dir: Path, runner: Sequence[str] | None = None) -> LaunchOutcome:
    """One launch with the platform probe before and after it. A connection lost mid-launch is retried
    once (the first attempt's files are kept beside it); deadlines and lost connections count as device
    faults for the quarantine. `runner` replaces the device's runner argv (the B side of an A/B run)."""
    outcome = _sampled_launch(device, job, index, local_dir, timeout, on_progress, runner)
    if outcome.connection_lost:
        first = outcome
        if health.fault(device.name, _fault_detail(first)):
            return first  # that fault quarantined the device: no retry
        kept = local_dir.with_name(f"{local_dir.name}.lost")
        shutil.rmtree(kept, ignore_errors=True)
        if local_dir.exists():
            local_dir.rename(kept)
        outcome = _sampled_launch(device, job, index, local_dir, timeout, on_progress, runner)
        outcome.retried = {
            "reason": _fault_detail(first), "started_utc": first.started_utc, "ended_utc": first.ended_utc,
            "frames_rendered": len(first.frames.rows), "kept_in": str(kept.relative_to(results_dir)),
        }
        outcome.issues.append(Issue("retried", f"launch {index} lost its connection and ran again; the first "
                                               f"attempt's files are kept in {kept}"))
    if outcome.timed_out or outcome.connection_lost:
        health.fault(device.name, _fault_detail(outcome))
    else:
        health.ok(device.name)
    return outcome


def _fault_detail(outcome: LaunchOutcome) -> str:
    fault = next((i for i in outcome.issues if i.kind in DEVICE_FAULT_KINDS), None)
    return fault.detail if fault else "the launch failed"


def _sampled_launch(device: Device, job: Job, index: int, local_dir: Path, timeout: float,
                    on_progress: Any, runner: Sequence[str] | None) -> LaunchOutcome:
    before = device.sample_conditions(facts=False)
    started = utc_now()
    platform = platform_frames.start(device, local_dir)  # Android's own frame timing; a no-op without a package
    try:
        outcome = device.launch(job, index, local_dir, timeout_s=timeout, on_progress=on_progress, runner=runner)
    except DeviceError as exc:  # the transport gave up (it already reconnected once): no exit status
        outcome = LaunchOutcome(index=index, exit_code=None, timed_out=False, wall_s=0.0, frames=FrameTable(),
                                result=RunResult(), captures={}, local_dir=local_dir,
                                issues=[Issue("device_error", str(exc))], started_utc=started, ended_utc=utc_now())
    finally:
        platform.stop()
    outcome.platform_frames = platform.result
    after = device.sample_conditions(facts=False)
    extra = outcome.result.extra
    outcome.conditions = {"before": with_runner_sample(launch_conditions(before), runner_sample("start", extra)),
                          "after": with_runner_sample(launch_conditions(after), runner_sample("end", extra))}
    return outcome


def launch_conditions(sample: dict[str, Any]) -> dict[str, Any]:
    """What run.json keeps of a platform sample per launch: the conditions keys and the raw readings."""
    readings = {k: v for k, v in sample.get("readings", {}).items() if k != "props"}  # props: static, in `device`
    kept = {"sampled_utc": sample.get("sampled_utc"), **sample.get("conditions", {}), "readings": readings}
    if "probe" in sample.get("unavailable", {}):
        kept["unavailable"] = sample["unavailable"]["probe"]
    return kept


def launch_samples(table: FrameTable, mode: str, *, partial: bool) -> LaunchSamples | None:
    """Turn validated frames.csv rows into the arrays the statistics take; None without measured frames."""
    measured = [row for row in table.rows if row["phase"] == "measure"]
    if not measured:
        return None
    warmup = [row for row in table.rows if row["phase"] == "warmup"]

    def series(rows: list[dict[str, Any]], name: str) -> np.ndarray:
        return np.array([np.nan if row.get(name) is None else row[name] for row in rows], dtype=float)

    gpu = series(measured, "gpu_ms")
    try:
        gpu_source = run_source(row["gpu_source"] for row in measured)
    except MixedGpuSources:  # several sources mixed in one launch: never pooled
        gpu_source = None
    if gpu_source is not None:
        # Frames without the launch's source (or flagged disjoint) cannot be compared: drop their gpu_ms.
        mask = np.array([row["gpu_source"] == gpu_source and not row.get("disjoint") for row in measured])
        gpu = np.where(mask, gpu, np.nan)
    else:
        gpu = np.full(len(measured), np.nan)
    counters = {name: series(measured, name) for name in ("draw_calls", "texture_upload_bytes", *table.counter_columns)}
    return LaunchSamples(
        cpu_ms=series(measured, "cpu_ms"),
        gpu_ms=gpu,
        gpu_source=gpu_source,
        interval_ms=series(measured, "present_interval_ms"),
        warmup_cpu_ms=series(warmup, "cpu_ms"),
        counters=counters,
        mode=mode,  # type: ignore[arg-type]
        partial=partial,
    )


class SamplesCsv:
    """All launches of one scene in one CSV: a `launch` column, then the frames.csv columns as validated.

    A CSV that cannot be written (a full disk) does not stop the measurement: the failure is kept in
    `failure` (the session lists it at its end and fails) and the samples are still in run.json."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.failure: str | None = None
        self._handle: Any = None
        self._columns: list[str] | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._handle = open(path, "w", newline="", encoding="utf-8")
        except OSError as exc:
            self._fail(exc)
        else:
            self._writer = csv.writer(self._handle)

    def _fail(self, exc: OSError) -> None:
        self.failure = f"{self.path} could not be written: {exc.strerror or exc}"
        if self._handle is not None:
            try:
                self._handle.close()
            except OSError:
                pass
        self._handle = None

    def append(self, launch: int, table: FrameTable) -> None:
        if self._handle is None:
            return
        try:
            if self._columns is None:
                self._columns = [*FRAME_COLUMNS, *table.counter_columns]
                self._writer.writerow(["launch", *self._columns])
            for row in table.rows:
                self._writer.writerow([launch, *(format_cell(row.get(c)) for c in self._columns)])
            self._handle.flush()
        except OSError as exc:
            self._fail(exc)

    def close(self) -> None:
        if self._handle is None:
            return
        try:
            if self._columns is None:
                self._writer.writerow(["launch", *FRAME_COLUMNS])
            self._handle.close()
        except OSError as exc:
            self._fail(exc)
        self._handle = None
