"""Skia's CPU rasteriser: the deterministic reference. Its captures are byte-exact goldens and its cpu_ms is
the whole cost of a frame (there is no GPU to time)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import skia

from pytest_zbench.protocol.display_list import FEATURES
from pytest_zbench.runner.backends import Backend, FrameTiming, read_surface_rgba
from pytest_zbench.runner.process import stolen_ms, thread_cpu_ns


class SoftwareBackend(Backend):
    name = "software"
    timer_source = "none"

    def __init__(self) -> None:
        self._surface: skia.Surface | None = None
        self._t0 = 0
        self._thread_cpu0: int | None = None

    def probe_info(self) -> dict[str, Any]:
        return {
            "features": sorted(FEATURES),
            # Skia's raster backend has no compressed textures: an etc2_image is decoded on the CPU.
            "compressed_formats": self.compressed_formats(),
            "timer_sources": ["none"],
            "gl_vendor": "",
            "gl_renderer": "Skia raster",
            "gl_version": "",
            "glsl_version": "",
            "max_texture_size": 0,
        }

    def make_surface(self, width: int, height: int) -> skia.Surface:
        # No colour space: Skia's legacy mode does no colour conversion, so "#RRGGBB" lands in the pixels as
        # written (sRGB bytes) and captures are bit-for-bit reproducible.
        info = skia.ImageInfo.Make(width, height, skia.kRGBA_8888_ColorType, skia.kPremul_AlphaType)
        surface = skia.Surface.MakeRaster(info)
        if surface is None:
            raise RuntimeError(f"cannot allocate a {width}x{height} raster surface")
        self._surface = surface
        return surface

    def begin_frame(self) -> None:
        self._t0 = time.perf_counter_ns()
        self._thread_cpu0 = thread_cpu_ns()  # read inside the wall clock's bracket (process.stolen_ms)

    def end_frame(self) -> FrameTiming:
        # Raster drawing happens inside each draw call (the record stage); the flush is kept so the bracket
        # means the same thing as on a GPU backend (everything the frame asked for is done). A raster surface
        # has no driver to submit to: that stage is 0.
        recorded = time.perf_counter_ns()
        if self._surface is not None:
            self._surface.flushAndSubmit()
        thread_cpu1 = thread_cpu_ns()
        done = time.perf_counter_ns()
        return FrameTiming(cpu_ms=(done - self._t0) / 1e6, record_ms=(recorded - self._t0) / 1e6,
                           flush_ms=(done - recorded) / 1e6, submit_ms=0.0,
                           stolen_ms=stolen_ms(self._t0, self._thread_cpu0, thread_cpu1, done))

    def read_rgba(self, surface: skia.Surface) -> np.ndarray:
        return read_surface_rgba(surface)
