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
from .calibration import calibrate
from .device import Device
from .environment import app_info, host_conditions, host_device_info
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
        self.progress: ProgressSink | None = None

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
            sections = self.record.devices[name] = self.device_sections(device)
            source = sections["gpu"].get("timer_source")
            if source not in (None, "none"):
                sections["gpu"]["calibration"] = calibrate(device, self.settings, self.settings.results, source)
        return self._devices[name]

    def gpu_valid(self, device_name: str) -> bool | None:
        """Whether the device's GPU time source passed calibration; None when it has no GPU time source."""
        calibration = self.record.devices.get(device_name, {}).get("gpu", {}).get("calibration")
        return None if calibration is None else bool(calibration.get("valid"))

    def measure(self, device_name: str, case: SceneCase) -> SceneMeasurement:
        key = (device_name, case.id)
        if key not in self._measurements:
            device = self.device(device_name)
            self._measurements[key] = measure_scene(device, case, self.settings, self.settings.results, self.progress)
        return self._measurements[key]

    def entry(self, measurement: SceneMeasurement) -> dict[str, Any]:
        """The run.json entry of a measured scene, created once; the perf test sets its outcome, the golden
        test its correctness."""
        key = (measurement.device, measurement.case.id)
        if key not in self._entries:
            self._entries[key] = scene_entry(measurement, "not_run", results_dir=self.settings.results,
                                             gpu_valid=self.gpu_valid(measurement.device))
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
        for device in self._devices.values():
            try:
                device.close()
            except Exception:  # closing must not hide the session's real outcome
                pass
        self._devices.clear()
