"""The gles2 backend in-process, frame by frame: late timer results, GL errors, shader errors, garbage and
disjoint timer values, and the timer check that a heavier scene reads as more GPU time."""

from __future__ import annotations

import os
import statistics

import pytest
from gles2_support import FakeClock, ScriptedGL

from pytest_zbench.gpu_timing import check_timer, heavier_ops
from pytest_zbench.runner.backends import FrameTiming
from pytest_zbench.runner.backends.gles2 import Gles2Backend
from pytest_zbench.runner.gl.timer import TimerQuery
from pytest_zbench.runner.interpreter import compile_scene

pytestmark = pytest.mark.usefixtures("require_egl")

TRANSLUCENT = [{"op": "rect", "x": 1, "y": 1, "w": 94, "h": 94, "color": "#3366CC40"}]


def render(backend: Gles2Backend, ops: list, frames: int, size: int = 96, *, hook=None) -> dict[int, FrameTiming]:
    """Render `frames` frames; return every frame's final timing by frame index (late ones merged in)."""
    program = compile_scene(ops, upload_image=backend.upload_image)
    surface = backend.make_surface(size, size)
    canvas = surface.getCanvas()
    timings: dict[int, FrameTiming] = {}
    for frame in range(frames):
        backend.begin_frame()
        program.render(canvas, frame)
        if hook is not None:
            hook(frame)
        timings[frame] = backend.end_frame()
        for ordinal, late in backend.late_timings():
            assert timings[ordinal].pending, "a late timing must be for a frame that was pending"
            timings[ordinal] = late
    for ordinal, late in backend.late_timings(final=True):
        timings[ordinal] = late
    return timings


@pytest.fixture
def backend():
    made = []

    def _make(**kwargs) -> Gles2Backend:
        b = Gles2Backend(**kwargs)
        made.append(b)
        return b

    yield _make
    for b in made:
        b.close()


def test_ring_mode_returns_pending_frames_and_completes_each_exactly_once(backend):
    b = backend(timer="timer_query")
    b.collects_late_timings = True
    seen: list[int] = []
    pending: list[int] = []
    program = compile_scene(TRANSLUCENT)
    canvas = b.make_surface(96, 96).getCanvas()
    for frame in range(12):
        b.begin_frame()
        program.render(canvas, frame)
        timing = b.end_frame()
        assert timing.pending and timing.gpu_ms is None and timing.gpu_source == "timer_query"
        assert timing.cpu_ms > 0
        pending.append(frame)
        seen += [ordinal for ordinal, _ in b.late_timings()]
    final = b.late_timings(final=True)
    seen += [ordinal for ordinal, _ in final]
    assert seen == pending  # each frame once, in order
    assert b.probe_info()["timer_stats"]["mode"] == "ring"


def test_ring_and_blocking_modes_time_every_frame_of_alternating_costs(backend):
    # Alternate a light and an 8x heavier frame: in both modes every frame ends up with its own value, none left
    # pending. Which frame a late value belongs to is checked on scripted values (test_gpu_timer_logic.py);
    # that a heavy frame reads as more GPU time here is a speed, printed by bench/bench_timing_accuracy.py.
    light = compile_scene(TRANSLUCENT)
    heavy = compile_scene(heavier_ops(TRANSLUCENT, 8))
    for collects in (True, False):
        b = backend(timer="timer_query")
        b.collects_late_timings = collects
        canvas = b.make_surface(96, 96).getCanvas()
        timings: dict[int, FrameTiming] = {}
        for frame in range(24):
            b.begin_frame()
            (heavy if frame % 2 else light).render(canvas, frame)
            timings[frame] = b.end_frame()
            timings.update(b.late_timings())
        timings.update(b.late_timings(final=True))
        assert sorted(timings) == list(range(24)) and not any(t.pending for t in timings.values())
        assert all(t.gpu_ms is not None and t.gpu_ms > 0 and t.gpu_source == "timer_query"
                   for t in timings.values()), (collects, timings)


def test_gl_errors_are_surfaced_on_their_frame(backend):
    b = backend(timer="none")

    def inject(frame: int) -> None:
        if frame == 2:
            b._gl.glBindFramebuffer(0xDEAD, 0)  # an invalid target: GL_INVALID_ENUM

    timings = render(b, TRANSLUCENT, 4, hook=inject)
    assert [t.gl_error for t in timings.values()] == [False, False, True, False]
    issues = timings[2].issues
    assert [i.kind for i in issues] == ["gl_error"] and "GL_INVALID_ENUM" in issues[0].detail
    assert b.probe_info()["timer_stats"]["gl_error_frames"] == 1


def test_shader_errors_printed_by_skia_become_shader_issues(backend, capfd):
    b = backend(timer="none")

    def skia_complains(frame: int) -> None:
        if frame == 1:  # what Skia's GL backend prints (C++ side, file descriptor 2) when a shader fails
            os.write(2, b"Shader compilation error\n----\n1 #version 100\nErrors:\n0:1: error\n")

    timings = render(b, TRANSLUCENT, 3, hook=skia_complains)
    assert [i.kind for i in timings[1].issues] == ["shader"]
    assert "Shader compilation error" in timings[1].issues[0].detail
    assert not timings[0].issues and not timings[2].issues
    # The text is not swallowed: it still reaches stderr.
    assert "Shader compilation error" in capfd.readouterr().err


@pytest.mark.parametrize("collects", [True, False])
def test_garbage_and_disjoint_timer_values_are_dropped_counted_and_flagged(backend, collects):
    """The backend with a real Skia/GL context but a scripted timer: frame 1 gets 0xFFFFFFFF, frame 3 gets 0,
    frames in flight when a disjoint event is read are flagged."""
    b = backend(timer="timer_query")
    b.collects_late_timings = collects
    gl = ScriptedGL([2_000_000, 0xFFFFFFFF, 2_000_000, 0, 2_000_000, 2_000_000])
    b._source = TimerQuery(gl, clock=FakeClock())

    def gpu_progress(frame: int) -> None:
        gl.complete(frame)  # the scripted GPU finishes everything issued before this frame
        if frame == 5:
            gl.disjoint_pending = True

    timings = render(b, TRANSLUCENT, 6, hook=gpu_progress)
    result = {f: (t.gpu_ms, t.disjoint, [i.kind for i in t.issues]) for f, t in timings.items()}
    assert result[0] == (pytest.approx(2.0), False, [])
    assert result[1] == (None, False, ["timer_invalid"])
    assert result[2] == (pytest.approx(2.0), False, [])
    assert result[3] == (None, False, ["timer_invalid"])
    assert result[5] == (None, True, [])  # in flight when the disjoint flag was read
    assert all(t.gpu_source == "timer_query" for t in timings.values())
    stats = b.probe_info()["timer_stats"]
    assert stats["timer_invalid"] == 2 and stats["disjoint_frames"] >= 1
    assert "sentinel" in timings[1].issues[0].detail and "0 ns" in timings[3].issues[0].detail


@pytest.mark.parametrize("source", ["timer_query", "finish_bracket", "readback"])
def test_a_heavier_variant_reads_as_more_gpu_time(backend, source):
    """The light and the heavy variant interleaved frame by frame on one context: whatever else the machine
    runs hits both alike (run one after the other, a burst of load during the light run once read 0.85x)."""
    # Large enough that the fill, not the fixed per-frame cost of a finish, dominates a bracket on llvmpipe.
    fill = [{"op": "rect", "x": 1, "y": 1, "w": 254, "h": 254, "color": "#3366CC40"}]
    b = backend(timer=source)
    b.collects_late_timings = True
    programs = [compile_scene(ops, upload_image=b.upload_image) for ops in (fill, heavier_ops(fill, 8))]
    surface = b.make_surface(256, 256)
    canvas = surface.getCanvas()
    timings: dict[int, FrameTiming] = {}
    frames = 2 * (4 + 16)  # 4 warmup and 16 measured frames of each variant
    for frame in range(frames):
        b.begin_frame()
        programs[frame % 2].render(canvas, frame // 2)
        timings[frame] = b.end_frame()
        timings.update(b.late_timings())
    timings.update(b.late_timings(final=True))
    medians = [statistics.median(t.gpu_ms for f, t in timings.items() if f >= 8 and f % 2 == k and t.gpu_ms)
               for k in (0, 1)]
    valid, detail = check_timer(*medians, source=source)
    assert valid, detail
