"""Skia Ganesh on a headless EGL OpenGL ES 2 context: the reference runner's GPU backend.

The scene interpreter is the software backend's; only the surface, the flush, the clocks and the readback
differ, so a difference between the two backends' captures is a real rasteriser difference.

Per frame:

    begin_frame   start the CPU clock; the time source begins (timer_query: glBeginQueryEXT)
    ...           the interpreter records Skia draws
    end_frame     (its start closes the record stage) ctx.flush() issues the GL commands (the flush stage);
                  the time source closes its bracket (glEndQueryEXT); ctx.submit(kNo) (the submit stage)
                  → cpu_ms; finish_bracket/readback wait here → gpu_ms; glGetError → gl_error;
                  stderr is scanned for Skia's shader compile/link errors; at most FRAMES_IN_FLIGHT frames stay
                  queued (an EGL fence, as a swap chain would block), so the CPU cannot run unboundedly ahead
                  of the GPU in uncapped mode.

GPU time (see pytest_zbench.runner.gl.timer and docs/gpu-timing.md): one source per run, chosen at
construction — the best this context offers, or the one `ZBENCH_GPU_TIMER` (or the `timer` argument) forces.
With `timer_query`, results arrive a few frames late: when the runner sets `collects_late_timings`, end_frame
returns a provisional `FrameTiming(pending=True)` and the complete timing comes later from `late_timings()`;
otherwise the backend waits for each frame's own query (correct, but it stalls the pipeline every frame, and
result.json's gpu.timer_stats.mode says "blocking").
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import sys
import tempfile
import time
from collections import deque
from typing import Any

import numpy as np
import skia

from pytest_zbench.protocol import GpuSource, Issue
from pytest_zbench.protocol.display_list import FEATURES
from pytest_zbench.runner.backends import Backend, BackendUnavailable, FrameTiming, read_surface_rgba
from pytest_zbench.runner.gl import glapi
from pytest_zbench.runner.gl.egl import EGLContext, EGLUnavailable
from pytest_zbench.runner.gl.timer import (
    FORCE_ENV,
    GpuSample,
    TimerQuery,
    TimerUnavailable,
    TimeSource,
    available_sources,
    choose_source,
    make_source,
)
from pytest_zbench.runner.process import stolen_ms, thread_cpu_ns

FRAMES_IN_FLIGHT = 2

# What Skia's GL backend prints when a generated shader does not compile or a program does not link.
SHADER_ERROR = re.compile(r"Shader compilation error|link failed|Program linking failed|"
                          r"Unexpected errors compiling|GLSL.*error", re.IGNORECASE)


def shader_errors(text: str) -> list[str]:
    """The lines of Skia's stderr output that report a shader compile or program link failure."""
    return [line.strip()[:300] for line in text.splitlines() if SHADER_ERROR.search(line)]


class StderrWatch:
    """Captures file descriptor 2 (where Skia's C++ code prints) for the life of a run, hands every new chunk
    back to the real stderr when `collect()` is called, and returns it for scanning. Collection happens after
    a frame's clocks have stopped."""

    def __init__(self) -> None:
        self._saved: int | None = None
        self._file: Any = None
        self._pos = 0

    def start(self) -> None:
        if self._saved is not None:
            return
        sys.stderr.flush()
        self._file = tempfile.TemporaryFile()
        self._saved = os.dup(2)
        os.dup2(self._file.fileno(), 2)
        self._pos = 0

    def collect(self) -> str:
        if self._saved is None:
            return ""
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        size = os.fstat(self._file.fileno()).st_size
        if size <= self._pos:
            return ""
        data = os.pread(self._file.fileno(), size - self._pos, self._pos)
        self._pos += len(data)
        view = memoryview(data)
        while view:
            written = os.write(self._saved, view)
            view = view[written:]
        return data.decode("utf-8", "replace")

    def stop(self) -> str:
        if self._saved is None:
            return ""
        text = self.collect()
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._file.close()
        self._saved, self._file = None, None
        return text


def extensions_hash(extensions: set[str] | frozenset[str]) -> str:
    """sha256 of the sorted extension names joined by single spaces: independent of the driver's order."""
    return "sha256:" + hashlib.sha256(" ".join(sorted(extensions)).encode("utf-8")).hexdigest()


class Gles2Backend(Backend):
    name = "gles2"
    timer_source: GpuSource = "none"

    def __init__(self, *, timer: str | None = None) -> None:
        forced = timer if timer is not None else (os.environ.get(FORCE_ENV, "").strip() or None)
        try:
            self._egl = EGLContext()
        except EGLUnavailable as exc:
            raise BackendUnavailable(f"backend 'gles2': {exc}") from exc
        self._ctx: skia.GrDirectContext | None = None
        self._surface: skia.Surface | None = None
        self._source: TimeSource | None = None
        self._stderr = StderrWatch()
        self._closed = False
        try:
            self._gl = gl = glapi.GL(self._egl.get_proc_address)
            bits = gl.counter_bits(glapi.GL_TIME_ELAPSED_EXT)
            self._available = available_sources(gl.timer_extension is not None and bits > 0)
            self.timer_source = choose_source(self._available, forced)
            self._forced = forced
            self._info = self._gather_info(bits)
            iface = skia.GrGLInterface.MakeEGL()
            if iface is None:
                raise BackendUnavailable("backend 'gles2': skia.GrGLInterface.MakeEGL() returned None "
                                         "(Skia could not load the GL ES functions of this context)")
            ctx = skia.GrDirectContext.MakeGL(iface)
            if ctx is None:
                raise BackendUnavailable(f"backend 'gles2': skia.GrDirectContext.MakeGL failed on "
                                         f"{self._info['gl_renderer']!r} ({self._info['gl_version']})")
            self._ctx = ctx
        except (glapi.GLUnavailable, TimerUnavailable) as exc:
            self._egl.close()
            raise BackendUnavailable(f"backend 'gles2': {exc}") from exc
        except BaseException:
            self._egl.close()
            raise
        self._fbo: int | None = None
        self._ordinal = 0
        self._t0 = 0
        self._thread_cpu0: int | None = None
        self._fences: deque[int] = deque()
        self._provisional: dict[int, FrameTiming] = {}
        self._late: list[tuple[int, FrameTiming]] = []
        self._abandoned_at: int | None = None
        self._stats = {"timer_invalid": 0, "disjoint_frames": 0, "gl_error_frames": 0, "shader_errors": 0}

    # ------------------------------------------------------------------------------------------ probe

    def _gather_info(self, time_elapsed_bits: int) -> dict[str, Any]:
        gl = self._gl
        timestamp_bits = gl.counter_bits(glapi.GL_TIMESTAMP_EXT) if gl.timer_extension else 0
        gl.drain_errors()  # a driver without TIMESTAMP support may flag INVALID_ENUM above; not a frame's error
        info = {
            "gl_vendor": gl.get_string(glapi.GL_VENDOR),
            "gl_renderer": gl.get_string(glapi.GL_RENDERER),
            "gl_version": gl.get_string(glapi.GL_VERSION),
            "glsl_version": gl.get_string(glapi.GL_SHADING_LANGUAGE_VERSION),
            "max_texture_size": gl.get_integer(glapi.GL_MAX_TEXTURE_SIZE),
            "gl_extensions": sorted(gl.extensions),
            "gl_extensions_hash": extensions_hash(gl.extensions),
            "timer_query_extension": gl.timer_extension,
            "timer_query_bits": time_elapsed_bits,
            "timer_query_timestamp_bits": timestamp_bits,
            "timer_forced": self._forced,
            "frames_in_flight": FRAMES_IN_FLIGHT if self._egl.has_fences else None,
        }
        info.update(self._egl.info())
        return info

    def probe_info(self) -> dict[str, Any]:
        info = {
            "features": sorted(FEATURES),
            "compressed_formats": self.compressed_formats(),
            # A forced source is the only one this runner offers: a host sees a runner without a timer query.
            "timer_sources": [self.timer_source] if self._forced else list(self._available),
            "timer_source": self.timer_source,
            **self._info,
        }
        if self._source is not None:
            info["timer_stats"] = self._timer_stats()
        return info

    def _timer_stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = dict(self._stats)
        source = self._source
        if isinstance(source, TimerQuery):
            stats.update(mode="ring" if self.collects_late_timings else "blocking", ring=source.ring_size,
                         max_lag_frames=source.max_lag, stalls=source.stalls,
                         disjoint_events=source.disjoint_events)
        return stats

    # -------------------------------------------------------------------------------------- surfaces

    def make_surface(self, width: int, height: int) -> skia.Surface:
        assert self._ctx is not None
        # No colour space, like the software backend: colours land in the pixels as written.
        info = skia.ImageInfo.Make(width, height, skia.kRGBA_8888_ColorType, skia.kPremul_AlphaType)
        self._stderr.start()
        surface = skia.Surface.MakeRenderTarget(self._ctx, skia.Budgeted.kNo, info)
        if surface is None:
            raise RuntimeError(f"gles2: cannot make a {width}x{height} render target "
                               f"(max texture size {self._info['max_texture_size']})")
        target = surface.getBackendRenderTarget(skia.Surface.kFlushRead_BackendHandleAccess)
        fb = skia.GrGLFramebufferInfo()
        self._fbo = fb.fFBOID if target.isValid() and target.getGLFramebufferInfo(fb) else None
        self._surface = surface
        if self._source is None:
            self._source = make_source(self.timer_source, self._gl, finish=self._finish,
                                       read_pixel=self._read_pixel)
        self._gl.drain_errors()  # errors from setup belong to no frame
        return surface

    def compressed_formats(self) -> list[str]:
        """etc2_rgb8 when Ganesh has a GL format for it on this context (GL_COMPRESSED_RGB8_ETC2 on GLES 3 or
        ARB_ES3_compatibility, GL_ETC1_RGB8_OES with OES_compressed_ETC1_RGB8_texture); without one Skia would
        decode the data on the CPU and upload RGBA, which is no compressed upload."""
        assert self._ctx is not None
        etc2 = self._ctx.compressedBackendFormat(skia.Image.CompressionType.kETC2_RGB8_UNORM)
        return ["etc2_rgb8"] if etc2.isValid() else []

    def upload_compressed(self, data: bytes, width: int, height: int) -> skia.Image:
        assert self._ctx is not None
        if not self.compressed_formats():
            return super().upload_compressed(data, width, height)
        image = skia.Image.MakeTextureFromCompressed(self._ctx, skia.Data.MakeWithCopy(data), width, height,
                                                     skia.Image.CompressionType.kETC2_RGB8_UNORM)
        if image is None:
            raise RuntimeError(f"gles2: Skia could not make a {width}x{height} ETC2 texture")
        return image

    def upload_image(self, image: skia.Image) -> skia.Image:
        assert self._ctx is not None
        texture = image.makeTextureImage(self._ctx)
        if texture is None:
            return image
        self._ctx.flushAndSubmit(skia.GrSyncCpu.kYes)  # the upload must not land in frame 0
        return texture

    def _finish(self) -> None:
        assert self._ctx is not None
        self._ctx.submit(skia.GrSyncCpu.kYes)
        self._gl.glFinish()

    def _read_pixel(self) -> bytes:
        return self._gl.read_pixel(self._fbo)

    # ---------------------------------------------------------------------------------------- frames

    def begin_frame(self) -> None:
        if self._abandoned_at is not None:
            raise RuntimeError(f"gles2: Skia abandoned the GL context at frame ordinal {self._abandoned_at}; "
                               "nothing more can be drawn")
        assert self._source is not None, "make_surface() must come before the first frame"
        self._t0 = time.perf_counter_ns()
        self._thread_cpu0 = thread_cpu_ns()  # read inside the wall clock's bracket (process.stolen_ms)
        self._source.begin(self._ordinal)

    def end_frame(self) -> FrameTiming:
        ctx, gl, source = self._ctx, self._gl, self._source
        assert ctx is not None and source is not None
        recorded = time.perf_counter_ns()  # the frame's draws are recorded: the flush stage starts
        ordinal = self._ordinal
        self._ordinal += 1
        # Skia's flush clears pending GL errors before its own allocations, so errors raised while the frame
        # was recorded (by anything else calling GL) are read first, then those of Skia's own commands.
        errors = gl.drain_errors()
        ctx.flush(skia.GrFlushInfo())
        flushed = time.perf_counter_ns()
        source.before_submit(ordinal)
        ctx.submit(skia.GrSyncCpu.kNo)
        thread_cpu1 = thread_cpu_ns()
        submitted = time.perf_counter_ns()
        cpu_ms = (submitted - self._t0) / 1e6
        sample = source.after_submit(ordinal, self._t0)
        if source.deferred and not self.collects_late_timings:
            sample = next((s for s in source.drain() if s.ordinal == ordinal), GpuSample(ordinal, None))
        errors += gl.drain_errors()
        if ctx.oomed():  # an out-of-memory error Skia saw (and consumed) itself
            errors.append(0x0505)
        # finish_bracket, readback and a blocking timer query have already waited for this frame.
        self._throttle(source.name == "none" or sample is None)

        issues: list[Issue] = []
        if errors:
            self._stats["gl_error_frames"] += 1
            issues.append(Issue("gl_error", "glGetError after the frame: "
                                + ", ".join(glapi.error_name(code) for code in errors)))
        for line in shader_errors(self._stderr.collect()):
            self._stats["shader_errors"] += 1
            issues.append(Issue("shader", line))
        if ctx.abandoned() and self._abandoned_at is None:
            self._abandoned_at = ordinal
            issues.append(Issue("shader", "Skia abandoned the GL context (a shader/program failure or a lost "
                                          "context); later frames cannot be drawn"))
        timing = FrameTiming(cpu_ms=cpu_ms, gpu_source=self.timer_source, gl_error=bool(errors),
                             issues=tuple(issues), record_ms=(recorded - self._t0) / 1e6,
                             flush_ms=(flushed - recorded) / 1e6, submit_ms=(submitted - flushed) / 1e6,
                             stolen_ms=stolen_ms(self._t0, self._thread_cpu0, thread_cpu1, submitted))
        if sample is None:  # the value arrives later, through late_timings()
            self._provisional[ordinal] = timing
            self._settle(source.poll())
            return _replace(timing, pending=True)
        if source.deferred:
            self._settle(source.poll())
        return self._complete(timing, sample)

    def _throttle(self, queued: bool) -> None:
        """Keep at most FRAMES_IN_FLIGHT frames queued on the GPU, as a swap chain would."""
        if not queued:
            return
        fence = self._egl.fence()
        if fence is None:
            return
        self._fences.append(fence)
        while len(self._fences) > FRAMES_IN_FLIGHT:
            self._egl.wait_fence(self._fences.popleft())

    def _complete(self, timing: FrameTiming, sample: GpuSample) -> FrameTiming:
        issues = timing.issues
        if sample.invalid is not None:
            self._stats["timer_invalid"] += 1
            issues += (Issue("timer_invalid", f"{self.timer_source}: {sample.invalid}; gpu_ms dropped"),)
        if sample.disjoint:
            self._stats["disjoint_frames"] += 1
        return _replace(timing, gpu_ms=sample.gpu_ms, disjoint=sample.disjoint, issues=issues)

    def _settle(self, samples: list[GpuSample]) -> None:
        for sample in samples:
            timing = self._provisional.pop(sample.ordinal, None)
            if timing is not None:
                self._late.append((sample.ordinal, self._complete(timing, sample)))

    def late_timings(self, final: bool = False) -> list[tuple[int, FrameTiming]]:
        if self._source is not None and self._source.deferred:
            self._settle(self._source.poll() if not final else self._source.drain())
        out, self._late = sorted(self._late, key=lambda pair: pair[0]), []
        return out

    # -------------------------------------------------------------------------------------- readback

    def read_rgba(self, surface: skia.Surface) -> np.ndarray:
        return read_surface_rgba(surface)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self._source is not None:
                self._source.drain()
                self._source.close()
            while self._fences:
                self._egl.wait_fence(self._fences.popleft())
            for line in shader_errors(self._stderr.stop()):
                print(f"gles2: after the last frame: {line}", file=sys.stderr)
            self._surface = None
            if self._ctx is not None:
                # Free GPU objects while the context is current; anything Skia still holds is then inert.
                self._ctx.releaseResourcesAndAbandonContext()
        finally:
            self._ctx = None
            self._egl.close()


def _replace(timing: FrameTiming, **changes: Any) -> FrameTiming:
    return dataclasses.replace(timing, **changes)
