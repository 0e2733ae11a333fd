"""Android's own frame timing around one launch: what HWUI (`dumpsys gfxinfo <package> framestats`) and
SurfaceFlinger (`dumpsys SurfaceFlinger --latency <layer>`) recorded while the runner ran
(docs/platform-frames.md).

    platform = start(device, local_dir)   # a no-op for a device without `package`
    try:
        outcome = device.launch(...)
    finally:
        platform.stop()
    outcome.platform_frames = platform.result   # a PlatformLaunch, or None

Before the launch one round trip takes the baseline and resets the app's statistics (`gfxinfo <package>
framestats reset`, and the layer's latency): the frames in it are the app's past, never counted, whether or
not the reset cleared them. During the launch a thread dumps again every `dump_interval_s(refresh)`
seconds, so that neither ring (HWUI keeps 120 frames, SurfaceFlinger 127) wraps between two dumps; one more
dump follows the launch. Every dump is one `sh -c` round trip on a second connection to the device
(Device.side_channel), parsed on the host; its raw text is kept in `<launch folder>/platform/`. The runner
is perturbed by what a dumpsys costs on the device and nothing else: `gfxinfo` holds the app's render thread
while it prints at most 120 rows, `SurfaceFlinger --latency` prints 127 lines from the compositor.

Without a `layer` in the inventory the layer is found in `dumpsys SurfaceFlinger --list`
(android_frames.layer_candidates), at the baseline and, until one appears, at every dump of the launch.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import DeviceError
from .android_frame_parsers import (
    GFX_RING_FRAMES,
    PLATFORM_DUMPS,
    FrameStatsError,
    PlatformLaunch,
    layer_candidates,
)
from .android_frame_timeline import TraceError, surface_frames
from .android_frame_trace import FrameTimelineTrace

if TYPE_CHECKING:
    from .device import Device

# Dump at half the time the smaller ring (HWUI's 120 frames) takes to fill at the display's rate: a dump
# that is late by as much as the interval itself still overlaps the one before.
SAFETY = 0.5
MIN_INTERVAL_S = 0.1
DUMP_TIMEOUT_S = 20.0
MAX_FAILURES = 3  # dump round trips failing in a row before the launch's collection gives up
SF_MARK = "@@zb-surfaceflinger"

# $1 the package, $2 the layer ("" while unknown: then the layer list instead of its latency), $3 "reset" or "".
# Nothing is interpolated into the script: the values arrive as positional parameters, quoted by the transport.
DUMP_SCRIPT = (
    'dumpsys gfxinfo "$1" framestats $3; echo ' + SF_MARK + '; '
    'if [ -n "$2" ]; then dumpsys SurfaceFlinger --latency "$2"; else dumpsys SurfaceFlinger --list; fi'
)
LATENCY_SCRIPT = 'dumpsys SurfaceFlinger --latency "$1"'

def dump_interval_s(refresh_hz: float) -> float:
    """Seconds between two dumps during a launch at `refresh_hz` (1.0 s at 60 Hz, 0.5 s at 120 Hz)."""
    return max(MIN_INTERVAL_S, SAFETY * GFX_RING_FRAMES / refresh_hz)


class _Collector:
    def __init__(self, device: Device, local_dir: Path) -> None:
        spec = device.spec
        refresh = device.refresh()
        # The faster of the declared and the measured rate: the ring fills at the display's real rate.
        hz = max(refresh.hz, refresh.measured_hz or 0.0)
        layer = spec.option("layer")
        self.device = device
        self.launch = PlatformLaunch(package=spec.option("package"), layer=layer,
                                     layer_source="inventory" if layer else None, interval_s=dump_interval_s(hz),
                                     dump_dir=local_dir / PLATFORM_DUMPS)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failures = 0
        self._n = 0
        timeline = spec.option("frame_timeline")
        self._trace = (FrameTimelineTrace(device.side_channel(), *([timeline] if isinstance(timeline, str) else []))
                       if timeline else None)

    # -- the three moments ---------------------------------------------------------------------------------

    def start(self) -> None:
        launch = self.launch
        if self._trace is not None:
            self._trace.start()  # before the baseline: the trace covers the whole launch
        out = self._round_trip(reset=True)
        if out is not None:
            gfx, sf = out
            launch.baseline_frames = self._read(gfx, launch.gfx.exclude, "gfxinfo")
            if launch.layer is not None:
                self._read(sf, launch.sf.exclude, "SurfaceFlinger --latency")
            elif self._found_layer(sf):
                latency = self._latency()
                if latency is not None:
                    self._read(latency, launch.sf.exclude, "SurfaceFlinger --latency")
        self._thread = threading.Thread(target=self._loop, name=f"platform-frames-{self.device.name}", daemon=True)
        self._thread.start()

    def stop(self) -> PlatformLaunch:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(DUMP_TIMEOUT_S + 5)
        self._dump()
        launch = self.launch
        if self._trace is not None:
            self._read_timeline(self._trace.stop())
        if launch.layer is None:
            launch.issues.append(f"no SurfaceFlinger layer of {launch.package} in `dumpsys SurfaceFlinger --list`: "
                                 "no present times (set `layer` in the inventory)")
        if launch.gfx.gaps or launch.sf.gaps:
            launch.issues.append(f"the ring wrapped between two dumps {launch.gfx.gaps + launch.sf.gaps} time(s): "
                                 "frames between them are missing from the platform series")
        gfx = launch.gfx
        if gfx.dumps and len(gfx.failures) == gfx.dumps:
            launch.issues.append(f"gfxinfo had no frame data in any dump of the launch: {gfx.failures[0]}")
        elif gfx.last_failure is not None:
            launch.issues.append(f"the dump after the launch had no frame data ({gfx.last_failure}): the frames "
                                 "after the dump before it are missing (keep the app alive until the run ends)")
        elif gfx.dumps and not gfx.all_frames:
            launch.issues.append(f"HWUI recorded no frame of {launch.package} during the launch (an app that draws "
                                 "only into a SurfaceView has none: its layer's presents are the series)")
        if launch.layer is not None and launch.sf.dumps and not launch.sf.frames:
            launch.issues.append(f"SurfaceFlinger layer {launch.layer!r} presented no frame during the launch")
        return launch

    def _loop(self) -> None:
        started = time.monotonic()
        due = started + self.launch.interval_s
        while not self._stop.wait(max(0.0, due - time.monotonic())):
            gaps = self.launch.gfx.gaps + self.launch.sf.gaps
            if not self._dump():
                return
            if self.launch.gfx.gaps + self.launch.sf.gaps > gaps:  # frames were lost: dump more often
                self.launch.interval_s = max(MIN_INTERVAL_S, self.launch.interval_s / 2)
            due = max(due + self.launch.interval_s, time.monotonic())

    # -- one dump ------------------------------------------------------------------------------------------

    def _dump(self) -> bool:
        """One round trip during or after the launch; False once the collection gave up."""
        if self._failures >= MAX_FAILURES:
            return False
        launch = self.launch
        out = self._round_trip(reset=False)
        if out is None:
            return self._failures < MAX_FAILURES
        launch.dumps += 1
        gfx, sf = out
        self._read(gfx, launch.gfx.add, "gfxinfo")
        if launch.layer is not None:
            self._read(sf, launch.sf.add, "SurfaceFlinger --latency")
        elif self._found_layer(sf):
            latency = self._latency()  # a layer that appeared during the launch: all its frames are ours
            if latency is not None:
                self._read(latency, launch.sf.add, "SurfaceFlinger --latency")
        return True

    def _round_trip(self, *, reset: bool) -> tuple[str, str] | None:
        launch = self.launch
        argv = ["sh", "-c", DUMP_SCRIPT, "zbench", launch.package, launch.layer or "", "reset" if reset else ""]
        stdout = self._run(argv)
        if stdout is None:
            return None
        gfx, _, sf = stdout.partition(SF_MARK + "\n")
        self._keep("gfxinfo", gfx)
        self._keep("sf-latency" if launch.layer else "sf-list", sf)
        return gfx, sf

    def _latency(self) -> str | None:
        assert self.launch.layer is not None
        stdout = self._run(["sh", "-c", LATENCY_SCRIPT, "zbench", self.launch.layer])
        if stdout is not None:
            self._keep("sf-latency", stdout)
        return stdout

    def _run(self, argv: list[str]) -> str | None:
        try:
            result = self.device.side_channel().run(argv, timeout_s=DUMP_TIMEOUT_S)
        except (DeviceError, OSError) as exc:
            self._failed(f"a platform frame dump could not run: {exc}")
            return None
        if result.timed_out or result.exit_code is None:
            self._failed(f"a platform frame dump did not finish within {DUMP_TIMEOUT_S:.0f} s")
            return None
        self._failures = 0
        return result.stdout

    def _failed(self, why: str) -> None:
        self._failures += 1
        self.launch.issues.append(why)

    def _found_layer(self, listing: str) -> bool:
        candidates = layer_candidates(listing, self.launch.package)
        if candidates:
            self.launch.layer, self.launch.layer_source = candidates[0], "surfaceflinger --list"
        return bool(candidates)

    def _read(self, text: str, reader: Any, what: str) -> int:
        try:
            value = reader(text)
        except FrameStatsError as exc:
            self.launch.issues.append(f"{what}: {exc}")
            return 0
        return value if isinstance(value, int) else len(value)

    def _read_timeline(self, trace: bytes | None) -> None:
        """The launch's FrameTimeline from the trace's bytes, kept as `frametimeline.pftrace` beside the dumps."""
        launch = self.launch
        assert self._trace is not None
        launch.timeline_issues.extend(self._trace.issues)
        if trace is None:
            return
        if launch.dump_dir is not None:
            try:
                launch.dump_dir.mkdir(parents=True, exist_ok=True)
                (launch.dump_dir / "frametimeline.pftrace").write_bytes(trace)
            except OSError as exc:
                launch.timeline_issues.append(f"could not keep the frame timeline trace: {exc}")
        try:
            launch.timeline = surface_frames(trace, launch.package)
        except TraceError as exc:
            launch.timeline_issues.append(f"the frame timeline trace is not readable: {exc}")
            return
        if not launch.timeline:
            launch.timeline_issues.append(
                f"the trace holds no FrameTimeline frame of {launch.package} (Android 12+ only; a layer named "
                f"after the package)")

    def _keep(self, kind: str, text: str) -> None:
        """The raw dump, beside the launch's other files: every figure can be recomputed from them."""
        folder = self.launch.dump_dir
        if folder is None:
            return
        self._n += 1
        try:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{self._n:03d}-{kind}.txt").write_text(text, encoding="utf-8")
        except OSError as exc:
            self.launch.issues.append(f"could not keep a dump in {folder}: {exc}")


class PlatformFrames:
    """One launch's collection, from `start`: `stop()` after the launch (idempotent), then `result` is the
    launch's PlatformLaunch (None when the device names no package)."""

    def __init__(self, collector: _Collector | None) -> None:
        self._collector = collector
        self.result: PlatformLaunch | None = None

    def stop(self) -> None:
        if self._collector is not None:
            collector, self._collector = self._collector, None
            self.result = collector.stop()


def start(device: Device, local_dir: Path) -> PlatformFrames:
    """Take the baseline and start the dumps of a launch about to run, when the device names a `package`."""
    if device.spec.platform != "android" or not device.spec.option("package"):
        return PlatformFrames(None)
    collector = _Collector(device, local_dir)
    collector.start()
    return PlatformFrames(collector)
