"""The display's refresh rate: declared in the inventory, measured on the device, or assumed; the budget of a
frame follows it (docs/platform-frames.md, "The refresh rate").

* Measured: on Android, SurfaceFlinger's refresh period (the first line `dumpsys SurfaceFlinger --latency`
  prints, layer or none); elsewhere the `display.refresh_hz` of the runner's probe.
* Used as the rate (and so the budget): the inventory's `display.refresh_hz` when it declares one, else the
  measured rate, else ASSUMED_HZ. `source` says which: inventory | probe | surfaceflinger | assumed.
* A declared rate more than DISAGREEMENT away from the measured one is a warning (run.json display
  `refresh_warning`, and the terminal's zbench section): the declared budget is then not the display's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ...errors import DeviceError
from ...inventory import DeviceSpec
from .android_frame_parsers import FrameStatsError, parse_surfaceflinger_latency

RefreshSource = Literal["inventory", "probe", "surfaceflinger", "assumed"]

ASSUMED_HZ = 60.0
DISAGREEMENT = 0.02
SURFACEFLINGER_TIMEOUT_S = 20.0
SURFACEFLINGER_REFRESH = ("dumpsys", "SurfaceFlinger", "--latency")


@dataclass(frozen=True)
class RefreshRate:
    hz: float
    source: RefreshSource
    measured_hz: float | None = None
    measured_source: RefreshSource | None = None
    warning: str | None = None
    unmeasured: str | None = None  # why the device's rate could not be read, when it could not

    def display_keys(self) -> dict[str, Any]:
        """run.json's display keys for it (besides refresh_hz, which is `hz`)."""
        return {"refresh_source": self.source,
                "measured_refresh_hz": None if self.measured_hz is None else round(self.measured_hz, 4),
                "measured_refresh_source": self.measured_source, "refresh_warning": self.warning}


def choose_refresh(spec: DeviceSpec, measured_hz: float | None, measured_source: RefreshSource | None,
                   unmeasured: str | None = None) -> RefreshRate:
    """The rate a device's frames are budgeted against, given what its inventory entry declares and what was
    measured on it."""
    declared = spec.display.refresh_hz if spec.display is not None and spec.display.refresh_declared else None
    warning = None
    if declared is not None and measured_hz is not None and abs(declared - measured_hz) > DISAGREEMENT * measured_hz:
        warning = (f"device {spec.name}: {spec.source or 'the inventory'} declares display refresh_hz {declared:g}, "
                   f"but {measured_source} reports {measured_hz:.2f} Hz ({(declared / measured_hz - 1):+.1%}); "
                   f"frames are budgeted against the declared rate. Correct refresh_hz, or leave it out to "
                   f"use the measured one.")
    if declared is not None:
        return RefreshRate(declared, "inventory", measured_hz, measured_source, warning, unmeasured)
    if measured_hz is not None:
        return RefreshRate(measured_hz, measured_source or "probe", measured_hz, measured_source, None, unmeasured)
    return RefreshRate(ASSUMED_HZ, "assumed", None, None, None, unmeasured)


def measure_refresh(spec: DeviceSpec, transport: Any, probe_display: Mapping[str, Any] | None) -> RefreshRate:
    """The device's refresh rate: SurfaceFlinger's on Android, the probe's elsewhere (or when SurfaceFlinger
    cannot tell); never raises."""
    unmeasured = None
    if spec.platform == "android":
        hz, unmeasured = surfaceflinger_refresh_hz(transport)
        if hz is not None:
            return choose_refresh(spec, hz, "surfaceflinger")
    probed = _probe_hz(probe_display)
    if probed is not None:
        return choose_refresh(spec, probed, "probe", unmeasured)
    return choose_refresh(spec, None, None, unmeasured or "the runner's probe reports no display refresh_hz")


def surfaceflinger_refresh_hz(transport: Any) -> tuple[float | None, str | None]:
    """(rate in Hz, None), or (None, why not), from `dumpsys SurfaceFlinger --latency` on the device."""
    try:
        result = transport.run(list(SURFACEFLINGER_REFRESH), timeout_s=SURFACEFLINGER_TIMEOUT_S)
    except (DeviceError, OSError) as exc:
        return None, f"`{' '.join(SURFACEFLINGER_REFRESH)}` could not run: {exc}"
    try:
        hz = parse_surfaceflinger_latency(result.stdout).refresh_hz
    except FrameStatsError as exc:
        return None, f"`{' '.join(SURFACEFLINGER_REFRESH)}`: {exc}"
    if hz is None or not 1 <= hz <= 1000:
        return None, f"`{' '.join(SURFACEFLINGER_REFRESH)}` printed no usable refresh period: {result.stdout[:80]!r}"
    return hz, None


def _probe_hz(display: Mapping[str, Any] | None) -> float | None:
    value = (display or {}).get("refresh_hz")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 <= value <= 1000:
        return None
    return float(value)
