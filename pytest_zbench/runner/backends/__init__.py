"""The seam between the scene interpreter and a rasteriser.

A backend owns the drawing surface and the clocks around a frame. The runner drives it like this, once per
launch:

    backend = open_backend("software")
    surface = backend.make_surface(width, height)
    for each frame:
        backend.begin_frame()                   # start the clocks
        ... interpreter draws on surface.getCanvas() ...
        timing = backend.end_frame()            # flush/submit, stop the clocks (and split cpu_ms by stage:
                                                # end_frame's own start closes the record stage)
    pixels = backend.read_rgba(surface)         # captures only, after all measured frames
    backend.close()

Everything the interpreter draws is plain skia-python, so a GPU backend (Ganesh on EGL) only differs in how
it makes the surface, flushes, times and reads back.
"""

from __future__ import annotations

import importlib
import inspect
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np
import skia

from pytest_zbench.protocol import GpuSource, Issue, ZbenchError


@dataclass(frozen=True)
class FrameTiming:
    """What a backend measured around one frame; becomes that frame's row of frames.csv."""

    cpu_ms: float
    # cpu_ms by stage, on the clock of cpu_ms, adding up to it (docs/runner-protocol.md, "The reference
    # runner's counters"): recording the frame's draws (on the raster backend they rasterise as they go),
    # the flush that turns recorded work into GPU commands, and the submit to the driver.
    record_ms: float | None = None
    flush_ms: float | None = None
    submit_ms: float | None = None
    gpu_ms: float | None = None
    gpu_source: GpuSource = "none"
    disjoint: bool | None = None  # None: the backend cannot tell
    gl_error: bool | None = None
    # The thread's time off the CPU inside cpu_ms's own bracket (frames.csv stolen_ms, runner/process.py
    # stolen_ms): taken where cpu_ms is, so that a GPU backend's wait for the GPU after its submit is not
    # counted (docs/runner-protocol.md). None: the platform has no thread clock.
    stolen_ms: float | None = None
    # Problems seen in this frame (an invalid timer value, a GL error code); the runner stamps the frame index.
    issues: tuple[Issue, ...] = ()
    # Provisional: the GPU values are not known yet. Only returned when the runner set
    # `Backend.collects_late_timings`; the complete timing (replacing this one entirely) comes from
    # `Backend.late_timings()`.
    pending: bool = False


class BackendUnavailable(ZbenchError, RuntimeError):
    """The backend cannot run on this device (no library, no GL context); the message says why."""


class Backend(ABC):
    """One rasteriser. Subclasses set `name` and `timer_source` and implement the abstract methods."""

    name: str = ""
    # The gpu_source this backend's frames carry; result.json's timer_source.
    timer_source: GpuSource = "none"

    @abstractmethod
    def probe_info(self) -> dict[str, Any]:
        """The probe entry: features, timer_sources, gl_vendor, gl_renderer, gl_version, glsl_version,
        max_texture_size. The same keys (minus features) go into result.json's `gpu`."""

    @property
    def features(self) -> frozenset[str]:
        return frozenset(self.probe_info()["features"])

    @abstractmethod
    def make_surface(self, width: int, height: int) -> skia.Surface:
        """A surface of width x height, 8-bit RGBA, that the interpreter draws on."""

    def upload_image(self, image: skia.Image) -> skia.Image:
        """Turn a raster image into whatever this backend draws fastest (a GPU backend returns a texture-backed
        image). Called before frame 0 for images uploaded `once`; never inside the timed section."""
        return image

    def compressed_formats(self) -> list[str]:
        """The compressed texture formats this backend uploads as such (the probe's `compressed_formats`,
        protocol.display_list.COMPRESSED_FORMATS); none by default."""
        return []

    def upload_compressed(self, data: bytes, width: int, height: int) -> skia.Image:
        """ETC2 RGB8 data as an image to draw. Without the format (compressed_formats) the data is decoded on
        the CPU, so the op still draws (references, the conformance kit), but nothing compressed is uploaded:
        the host does not measure such a scene on this backend."""
        from pytest_zbench.runner.interpreter import decode_compressed

        return decode_compressed(data, width, height)

    @abstractmethod
    def begin_frame(self) -> None:
        """Start this frame's clocks (and GPU queries)."""

    @abstractmethod
    def end_frame(self) -> FrameTiming:
        """Flush and submit the frame, stop the clocks, return what was measured."""

    # Set to True by a runner that calls late_timings() after every end_frame (and once with final=True after
    # the last frame) and holds back rows until they are complete. A backend whose GPU clock reports frames
    # late (a ring of timer queries) may then return FrameTiming(pending=True) instead of stalling.
    collects_late_timings: bool = False

    def late_timings(self, final: bool = False) -> list[tuple[int, FrameTiming]]:
        """Complete timings of frames end_frame() returned as pending, as (ordinal, timing) in order; the
        ordinal counts end_frame() calls from 0. final=True waits for every frame still outstanding."""
        return []

    @abstractmethod
    def read_rgba(self, surface: skia.Surface) -> np.ndarray:
        """The surface's pixels as a height x width x 4 uint8 array, RGBA, unpremultiplied."""

    def close(self) -> None:  # noqa: B027  (not abstract: a backend without resources need not override it)
        """Release contexts and surfaces; the default has nothing to release."""


# Backends by name. Modules are imported on demand: a device without EGL must still run `software`, and a
# backend whose module or libraries are missing simply does not appear in the probe.
BACKENDS: dict[str, str] = {
    "software": "pytest_zbench.runner.backends.software:SoftwareBackend",
    "gles2": "pytest_zbench.runner.backends.gles2:Gles2Backend",
}


def open_backend(name: str, *, timer: str | None = None) -> Backend:
    """Create the backend called `name`; raise KeyError for an unknown name, BackendUnavailable otherwise.

    `timer`: the GPU time source a job asks for (Job.gpu_timer). A backend without GPU timing serves only
    "none"; asking it for a GPU source makes it unavailable, with that reason."""
    target = BACKENDS[name]
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BackendUnavailable(f"backend {name!r} cannot be loaded: {exc}") from exc
    cls = getattr(module, class_name)
    if timer is None:
        backend: Backend = cls()
    elif "timer" in inspect.signature(cls).parameters:
        backend = cls(timer=timer)
    else:
        backend = cls()
        if timer != backend.timer_source:
            backend.close()
            raise BackendUnavailable(f"backend {name!r} has no GPU time source {timer!r} (it times with "
                                     f"{backend.timer_source!r})")
    return backend


def read_surface_rgba(surface: skia.Surface) -> np.ndarray:
    """Unpremultiplied RGBA readback shared by backends whose surfaces Skia can read directly."""
    info = skia.ImageInfo.Make(surface.width(), surface.height(), skia.kRGBA_8888_ColorType,
                               skia.kUnpremul_AlphaType)
    out = np.empty((surface.height(), surface.width(), 4), dtype=np.uint8)
    if not surface.readPixels(info, out, surface.width() * 4, 0, 0):
        raise RuntimeError("reading the surface's pixels failed")
    return out
