"""Session state of the host, without pytest: open devices, measured scenes, the run record.

A scene is measured at most once per session and device; its perf test and its golden test share the
measurement (docs/architecture.md; capture never perturbs timing because captures come after the frames).
A remote device is measured under its lease (host/devices/lease.py), so that two xdist workers, or two sessions on
this host, never measure it at once; a device that cannot be opened, or keeps faulting, is quarantined
(host/devices/health.py) and its remaining scenes are skipped with the reason.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import uuid
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import DeviceError, DeviceQuarantined, ZbenchError
from ..golden.store import GoldenStore
from ..inventory import Inventory
from ..regression.config import GateConfig
from ..scenes import SceneCase, load_scene_file
from ..settings import Settings
from .devices.device import Device, session_device
from .devices.environment import (
    ab_builds,
    app_info,
    background_load_note,
    environment,
    fingerprint,
    host_conditions,
    host_info,
    reported_device_info,
    runner_build,
    runner_toolchain,
)
from .devices.health import DeviceHealth, default_lease_dir, lease_key
from .devices.lease import DeviceLease
from .devices.prepare import cool_down
from .devices.timer_check import check_gpu_timer
from .measure.ab_launches import ABLaunches, ab_entry, measure_ab, resolve_b_runner
from .measure.adaptive_launches import measure_adaptive
from .measure.cold_start import cold_start_entry
from .measure.launches import ProgressSink, measure_scene
from .measure.results import SceneMeasurement
from .measure.sequential_rounds import run_rounds
from .measure.sustained import measure_sustained, sustained_minutes
from .run_record import RunRecord, scene_entry
from .verdicts.golden_test import GoldenOutcome, capture_launch, check_goldens, device_arch
from .verdicts.perf_gate import GateResult, HistorySection, RegressionGate

LEASE_MIN_WAIT_S = 600.0


class HostSession:
    def __init__(self, settings: Settings, inventory: Inventory, root: Path, *, run_id: str | None = None,
                 started_utc: str | None = None, probing: Mapping[str, Device] | None = None,
                 archive_off: str | None = None) -> None:
        """`probing`: devices whose probe already runs (device.start_probes), taken on their first use.
        `archive_off`: why this session keeps no run archive (None: it does; the golden failures say so)."""
        self.settings = settings
        self.archive_off = archive_off
        self.inventory = inventory
        self.root = root
        self.record = RunRecord(
            run_id=run_id or uuid.uuid4().hex,
            started_utc=started_utc or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            app=app_info(root),
            suite_version=__version__,
            host=host_info(),
            goldens_only=settings.goldens_only,
        )
        self._devices: dict[str, Device] = {}
        self._probing: dict[str, Device] = dict(probing or {})
        self.health = DeviceHealth()
        self._measurements: dict[tuple[str, str], SceneMeasurement] = {}
        self._scene_files: dict[Path, list[SceneCase]] = {}
        self._entries: dict[tuple[str, str], dict[str, Any]] = {}
        self._history_sections: dict[tuple[str, str], HistorySection | None] = {}
        self._cooldowns: dict[tuple[str, str], dict[str, Any]] = {}
        self.progress: ProgressSink | None = None
        self.gate = RegressionGate(settings)
        self.b_runner = resolve_b_runner(settings.ab, inventory) if settings.ab else None

    def device(self, name: str) -> Device:
        """The open device `name`, probed once. A device that failed to open or probe is quarantined: the
        first call raises DeviceError with the cause, later calls DeviceQuarantined."""
        if name not in self._devices:
            reason = self.health.skip_reason(name)
            if reason is not None:
                raise DeviceQuarantined(reason)
            device = self._probing.pop(name, None) or session_device(self.inventory.get(name), self.settings)
            try:
                device.probe()
                sections = self.device_sections(device)
            except Exception as exc:
                device.close()
                self.health.quarantine(name, str(exc))
                self.record.quarantined[name] = str(exc)
                # The device's own message says it all: chained, the terminal would print it twice more.
                raise DeviceError(f"device {name} is unusable in this session: {exc}") from (
                    None if isinstance(exc, ZbenchError) else exc)
            self._devices[name] = device
            self.record.devices[name] = sections
            runner_build(self.record.app, name, device.probe().build)
            if self.b_runner is not None:
                ab_builds(self.record.app, name, device.probe().build, device.probe_runner(self.b_runner).build)
            runner_toolchain(self.record.app, name, device.probe().toolchain)
            source = sections["gpu"].get("timer_source")
            if source not in (None, "none"):
                sections["gpu"]["timer_check"] = check_gpu_timer(device, self.settings, self.settings.results, source)
        return self._devices[name]

    def gpu_valid(self, device_name: str) -> bool | None:
        """Whether the device's GPU time source passed the timer check; None when it has no GPU time source."""
        check = self.record.devices.get(device_name, {}).get("gpu", {}).get("timer_check")
        return None if check is None else bool(check.get("valid"))

    def measure(self, device_name: str, case: SceneCase, session_cases: Sequence[SceneCase] = ()) -> SceneMeasurement:
        """The scene measured on the device (once per session), under the device's lease. A quarantined
        device's scenes come back skipped with the reason. `session_cases`: the scenes this session runs on the
        device, measured together with this one under the sequential gate (--zbench-budget)."""
        key = (device_name, case.id)
        if key not in self._measurements and self._sequential(case):
            # Each scene once (its perf and golden tests both name it), this one first
            cases = {c.id: c for c in [case, *session_cases]
                     if (device_name, c.id) not in self._measurements and self._sequential(c)}
            self._measure_sequential(device_name, list(cases.values()))
        if key not in self._measurements:
            device = self.device(device_name)
            skip = self.health.skip_reason(device_name)
            if skip is not None:
                return SceneMeasurement(case=case, device=device_name, backend=device.spec.backend, job=None,
                                        skipped=skip)
            with self._lease(device):
                # The cooldown under the lease: no other worker heats the device while it cools (host/devices/prepare.py)
                if device.spec.prepare is not None and (cooled := cool_down(device.transport, device.spec.prepare)):
                    self._cooldowns[key] = cooled
                if self.settings.goldens_only:  # the captures alone: one short plain launch (docs/goldens.md)
                    measurement = measure_scene(device, case, self.settings, self.settings.results, self.progress,
                                                self.health)
                elif case.adaptive:  # its launches are planned one by one, A/B included
                    # (host/measure/adaptive_launches.py)
                    measurement = measure_adaptive(device, case, self.settings, self.settings.results,
                                                   self.progress, self.health, b_runner=self.b_runner)
                elif self.b_runner is not None:
                    measurement = measure_ab(device, case, self.settings, self.b_runner, self.settings.results,
                                             self.progress, self.health)
                elif (minutes := sustained_minutes(self.settings, case)) is not None:
                    measurement = measure_sustained(device, case, self.settings, minutes, self.settings.results,
                                                    self.progress, self.health)
                else:
                    measurement = measure_scene(device, case, self.settings, self.settings.results, self.progress,
                                                self.health)
            self._keep(device_name, measurement)
        return self._measurements[key]

    def _sequential(self, case: SceneCase) -> bool:
        """Whether the scene is measured by the sequential gate: A/B under a budget, not an adaptive scene
        (its launches are planned by its search, host/measure/adaptive_launches.py)."""
        settings = self.settings
        return (settings.budget_min is not None and self.b_runner is not None and not case.adaptive
                and not settings.goldens_only and sustained_minutes(settings, case) is None)

    def _measure_sequential(self, device_name: str, cases: list[SceneCase]) -> None:
        """The scenes measured round by round within the device session's budget (docs/regression.md, "The
        sequential gate"), each kept as if measured alone."""
        assert self.b_runner is not None and self.settings.budget_min is not None
        device = self.device(device_name)
        if self.health.skip_reason(device_name) is not None:
            return  # measure() returns each scene skipped with the reason
        planned = 2 * self.settings.max_launches
        with self._lease(device):
            # One cooldown before the rounds: the scenes' rounds interleave, there is no "before a scene"
            if device.spec.prepare is not None and (cooled := cool_down(device.transport, device.spec.prepare)):
                self._cooldowns[(device_name, cases[0].id)] = cooled
            scenes = [ABLaunches(device, case, self.settings, self.b_runner, self.settings.results, self.progress,
                                 self.health, planned=planned) for case in cases]
            try:
                try:
                    run_rounds(scenes, lambda m, level: self.gate.ab_look(self.record, m, level),
                               budget_s=60.0 * self.settings.budget_min, max_launches=self.settings.max_launches,
                               alpha=GateConfig().alpha)
                finally:
                    for scene in scenes:
                        scene.finish()
            except KeyboardInterrupt:  # SIGINT, or SIGTERM read as one (plugin/zbench_plugin.py)
                self._keep_interrupted(device_name, scenes)
                raise
        for scene in scenes:
            self._keep(device_name, scene.a)

    def _keep_interrupted(self, device_name: str, scenes: Sequence[ABLaunches]) -> None:
        """Sequential scenes stopped mid-rounds: the rounds interleave, so none has finished, yet every launch
        measured so far goes to run.json and the report, each scene marked undecided (`sequential.stopped`
        interrupted, no verdict) and recorded in no history: an interrupted A/B is no run of a build."""
        for scene in scenes:
            measurement = scene.a
            if measurement.job is None or not measurement.launches:
                continue
            if measurement.sequential is not None:
                measurement.sequential.stopped = "interrupted"  # type: ignore[assignment]
            key = (device_name, measurement.case.id)
            self._measurements[key] = measurement
            self.record.artifact_failures += measurement.artifact_failures
            self._history_sections[key] = None
            self.entry(measurement)

    def _keep(self, device_name: str, measurement: SceneMeasurement) -> None:
        """A measured scene kept for the session: its history record, its artifact failures, the quarantine."""
        key = (device_name, measurement.case.id)
        self._measurements[key] = measurement
        self.record.artifact_failures += measurement.artifact_failures
        # One long launch is not comparable with the history's short ones, nor is a goldens-only launch of
        # one frame: recorded in run.json only.
        self._history_sections[key] = (None if measurement.sustained is not None or self.settings.goldens_only
                                       else self.gate.record(self.record, measurement))
        reason = self.health.reason(device_name)
        if reason is not None:
            self.record.quarantined[device_name] = reason

    def judge(self, measurement: SceneMeasurement) -> GateResult | None:
        """The regression verdict of a measured scene against the configured baseline (None: no gate),
        recorded in its run.json entry. A sustained run is not gated (docs/sustained.md)."""
        if measurement.sustained is not None:
            return None
        result = self.gate.judge(self.record, measurement)
        if result is not None:
            self.entry(measurement)["regression"] = result.to_json()
        return result

    def check_goldens(self, measurement: SceneMeasurement,
                      selected: Collection[tuple[str, str]] = ()) -> GoldenOutcome:
        """The golden check of a measured scene (writing goldens when asked to), recorded in its run.json
        entry as `correctness`. A bad tolerance in the scene file raises SceneError. `selected`: the (device,
        scene) pairs this session runs; the scene's sweep siblings among them are measured first (once, as
        their own tests would), so that identical captures across the sweep are seen whatever the order."""
        settings = self.settings
        device = self.device(measurement.device)
        sections = self.record.devices.get(measurement.device, {})
        outcome = check_goldens(
            measurement, GoldenStore(settings.goldens_dir), device_class=device.spec.device_class,
            update=settings.update_goldens, results_dir=settings.results, driver=sections.get("gpu", {}),
            build_hash=self.record.app.get("build_hash"), arch=device_arch(sections),
            run_id=self.record.run_id, archive_off=self.archive_off, **self._sweep_siblings(measurement, selected),
        )
        self.entry(measurement)["correctness"] = outcome.correctness(settings.results)
        return outcome

    def _sweep_siblings(self, measurement: SceneMeasurement, selected: Collection[tuple[str, str]]) -> dict[str, Any]:
        """The other cases of the measurement's sweep, and the captures of those measured in this process
        (check_goldens' vacuous-capture check)."""
        case = measurement.case
        if not case.sweep:
            return {}
        if case.source not in self._scene_files:
            self._scene_files[case.source] = load_scene_file(case.source)
        siblings = [c for c in self._scene_files[case.source] if c.sweep == case.sweep and c.id != case.id]
        captures = {}
        for sibling in siblings:
            if (measurement.device, sibling.id) in selected:
                self.measure(measurement.device, sibling)
            measured = self._measurements.get((measurement.device, sibling.id))
            launch = capture_launch(measured.launches) if measured is not None else None
            if launch is not None and launch.complete:
                captures[sibling.id] = dict(launch.captures)
        return {"siblings": siblings, "sibling_captures": captures}

    def set_outcome(self, measurement: SceneMeasurement, outcome: str) -> None:
        """The perf test's outcome in the scene's run.json entry: passed, failed, skipped or error."""
        self.entry(measurement)["outcome"] = outcome

    def _lease(self, device: Device) -> Any:
        """The device's lease for one scene (all its launches); a no-op for `local`. A waiter may stand
        behind other workers' scenes: it waits for a few of the longest scenes this session can measure."""
        key = lease_key(device.spec)
        if key is None:
            return contextlib.nullcontext()
        longest_scene = self.settings.runs * (self.settings.launch_timeout(60.0, device.spec.timeout_s) + 60.0)
        if self.settings.budget_min is not None:  # the sequential gate holds the lease for its whole budget
            longest_scene = max(longest_scene, 60.0 * self.settings.budget_min
                                + 4 * self.settings.launch_timeout(60.0, device.spec.timeout_s))
        return DeviceLease(key, self.settings.lease_dir or default_lease_dir(),
                           timeout_s=max(LEASE_MIN_WAIT_S, 2 * longest_scene))

    def entry(self, measurement: SceneMeasurement) -> dict[str, Any]:
        """The run.json entry of a measured scene, created once; the perf test sets its outcome, the golden
        test its correctness."""
        key = (measurement.device, measurement.case.id)
        if key not in self._entries:
            self._entries[key] = scene_entry(measurement, "not_run", results_dir=self.settings.results,
                                             gpu_valid=self.gpu_valid(measurement.device))
            self._entries[key]["history"] = self._history_sections.get(key)
            if key in self._cooldowns:
                self._entries[key]["cooldown"] = self._cooldowns[key]
            if measurement.ab is not None:
                self._entries[key]["ab"] = ab_entry(measurement.ab, self.settings.results)
            if measurement.launches:  # cold start from the process start, per launch (host/measure/cold_start.py)
                self._entries[key]["cold"] = {**self._entries[key]["cold"],
                                              "time_to_first_frame_ms": cold_start_entry(measurement.launches)}
            if measurement.sequential is not None:
                self._entries[key]["sequential"] = measurement.sequential.to_json()
            if measurement.sustained is not None:
                self._entries[key]["sustained"] = measurement.sustained
                self._entries[key]["measured_frames"] = measurement.sustained["measured_frames"]
            self.record.add_scene(self._entries[key])
        return self._entries[key]

    def device_sections(self, device: Device) -> dict[str, Any]:
        """run.json's device / gpu / display / conditions for one device, from its spec and its runner's probe,
        with its environment and fingerprint (host/devices/environment.py)."""
        spec = device.spec
        probe = device.probe()
        backend = probe.backends.get(spec.backend)
        info = dict(backend.info) if backend else {}
        timer_sources = list(backend.timer_sources) if backend else []
        display = device.display()
        local = spec.transport == "local"
        sample = device.sample_conditions()
        # What the device reports, never the host's facts: a local runner may run under an emulator.
        section_device = {"id": spec.name, "transport": spec.transport, "platform": spec.platform,
                          "device_class": spec.device_class,
                          **reported_device_info(probe.machine, None if local else device_facts(sample["device"]))}
        gpu = {
            "backend": spec.backend,
            "timer_source": timer_sources[0] if timer_sources else None,
            "timer_sources": timer_sources,
            "runner": {"name": probe.runner_name, "version": probe.runner_version,
                       # The identity the history and the "same build" note go by (regression_gate.run_info).
                       "build": probe.build.id if probe.build else None, "argv": list(spec.runner)},
            **info,
        }
        conditions = host_conditions() if local else {**sample["conditions"], "power": sample["conditions"].get(
            "power", "unknown")}
        if not local:  # the device's own load, as its platform probe read it, on the cores the device reports
            cores = (section_device.get("cpu") or {}).get("cores")
            conditions["background_load_note"] = background_load_note(conditions.get("load_avg_1m"), cores,
                                                                       f"device {spec.name}")
        conditions["deterministic"] = spec.backend == "software"
        conditions["probes_unavailable"] = sample["unavailable"]
        if sample.get("note"):
            conditions["probe_note"] = sample["note"]
        sections: dict[str, Any] = {
            "device": section_device,
            "gpu": gpu,
            # vsync and present_source are what the runner reports with its first launch (RunRecord.add_scene).
            "display": {**display.to_dict(), **device.refresh().display_keys(), "scale": 1.0, "vsync": None,
                        "present_source": None},
            "conditions": conditions,
        }
        sections["environment"] = environment(sections)
        sections["fingerprint"] = section_device["fingerprint"] = fingerprint(sections)
        return sections

    def close(self) -> None:
        self.gate.close()
        for device in [*self._devices.values(), *self._probing.values()]:
            try:
                device.close()
            except Exception:  # closing must not hide the session's real outcome
                pass
        self._devices.clear()
        self._probing.clear()


def device_facts(sampled: dict[str, Any]) -> dict[str, Any]:
    """The platform probe's `device` facts in run.json's shape (`cpu` is an object there)."""
    facts = dict(sampled)
    cpu = facts.pop("cpu", None)
    cores = facts.pop("cores", None)
    if isinstance(cpu, str):
        cpu = {"model": cpu}
    if cpu is not None or cores is not None:
        facts["cpu"] = {**(cpu or {}), **({"cores": cores} if cores is not None else {})}
    return facts
