"""Session state of the host, without pytest: open devices, measured scenes, the run record.

A scene is measured at most once per session and device; its perf test and its golden test share the
measurement (DESIGN.md §6, and capture never perturbs timing because captures come after the frames).
"""

from __future__ import annotations

import datetime as _dt
import uuid
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import DeviceError
from ..inventory import Inventory
from ..scenes import SceneCase
from ..settings import Settings
from ..transports import make_transport
from .artifacts import RunRecord, scene_entry
from .ab import ab_entry, measure_ab, resolve_b_runner
from .device import Device
from .environment import app_info, host_conditions, host_device_info
from .gating import GateResult, RegressionGate
from .measure import ProgressSink, SceneMeasurement, measure_scene


class HostSession:
    def __init__(self, settings: Settings, inventory: Inventory, root: Path, *, run_id: str | None = None,
                 started_utc: str | None = None) -> None:
        self.settings = settings
        self.inventory = inventory
        self.root = root
        self.record = RunRecord(
            run_id=run_id or uuid.uuid4().hex,
            started_utc=started_utc or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            app=app_info(root),
            suite_version=__version__,
        )
        self._devices: dict[str, Device] = {}
        self._failed: dict[str, str] = {}
        self._measurements: dict[tuple[str, str], SceneMeasurement] = {}
        self._entries: dict[tuple[str, str], dict[str, Any]] = {}
        self._history_sections: dict[tuple[str, str], dict[str, Any] | None] = {}
        self.progress: ProgressSink | None = None
        self.gate = RegressionGate(settings)
        self.b_runner = resolve_b_runner(settings.ab, inventory) if settings.ab else None

    def device(self, name: str) -> Device:
        """The open device `name`, probed once; a device that failed to open or probe stays failed."""
        if name in self._failed:
            raise DeviceError(self._failed[name])
        if name not in self._devices:
            spec = self.inventory.get(name)
            device = Device(spec, make_transport(spec))
            try:
                device.probe()
            except Exception as exc:
                device.close()
                self._failed[name] = f"device {name} is unusable in this session: {exc}"
                raise DeviceError(self._failed[name]) from exc
            self._devices[name] = device
            self.record.devices[name] = self.device_sections(device)
        return self._devices[name]

    def measure(self, device_name: str, case: SceneCase) -> SceneMeasurement:
        key = (device_name, case.id)
        if key not in self._measurements:
            device = self.device(device_name)
            if self.b_runner is not None:
                measurement = measure_ab(device, case, self.settings, self.b_runner, self.settings.results,
                                         self.progress)
            else:
                measurement = measure_scene(device, case, self.settings, self.settings.results, self.progress)
            self._measurements[key] = measurement
            self._history_sections[key] = self.gate.record(self.record, measurement)
        return self._measurements[key]

    def judge(self, measurement: SceneMeasurement) -> GateResult | None:
        """The regression verdict of a measured scene against the configured baseline (None: no gate)."""
        return self.gate.judge(self.record, measurement)

    def entry(self, measurement: SceneMeasurement) -> dict[str, Any]:
        """The run.json entry of a measured scene, created once; the perf test sets its outcome, the golden
        test its correctness."""
        key = (measurement.device, measurement.case.id)
        if key not in self._entries:
            self._entries[key] = scene_entry(measurement, "not_run", results_dir=self.settings.results)
            self._entries[key]["history"] = self._history_sections.get(key)
            if measurement.ab is not None:
                self._entries[key]["ab"] = ab_entry(measurement.ab, self.settings.results)
            self.record.add_scene(self._entries[key])
        return self._entries[key]

    def device_sections(self, device: Device) -> dict[str, Any]:
        """§8 device / gpu / display / conditions for one device, from its spec and its runner's probe."""
        spec = device.spec
        probe = device.probe()
        backend = probe.backends.get(spec.backend)
        info = dict(backend.info) if backend else {}
        timer_sources = list(backend.timer_sources) if backend else []
        display = device.display()
        local = spec.transport == "local"
        section_device = {"id": spec.name, "transport": spec.transport, "platform": spec.platform,
                          "device_class": spec.device_class, **(host_device_info() if local else {})}
        gpu = {
            "backend": spec.backend,
            "timer_source": timer_sources[0] if timer_sources else None,
            "timer_sources": timer_sources,
            "runner": {"name": probe.runner_name, "version": probe.runner_version},
            **info,
        }
        conditions = host_conditions() if local else {"power": "unknown"}
        conditions["deterministic"] = spec.backend == "software"
        return {
            "device": section_device,
            "gpu": gpu,
            # vsync and present_source are what the runner reports with its first launch (RunRecord.add_scene).
            "display": {**display.to_dict(), "scale": 1.0, "vsync": None, "present_source": None},
            "conditions": conditions,
        }

    def close(self) -> None:
        self.gate.close()
        for device in self._devices.values():
            try:
                device.close()
            except Exception:  # closing must not hide the session's real outcome
                pass
        self._devices.clear()
