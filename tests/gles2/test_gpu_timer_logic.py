"""GPU time validation and bookkeeping without a GPU: raw timer values, the query ring against a scripted GL,
the choice of a time source, the timer check and the one-source-per-run rule."""

from __future__ import annotations

import hashlib

import pytest
from gles2_support import FakeClock, ScriptedGL

from pytest_zbench.gpu_timing import (
    TIMER_CHECK_FACTOR,
    MixedGpuSources,
    bracket_fixed_ms,
    check_timer,
    heavier_ops,
    heavier_scene,
    run_source,
)
from pytest_zbench.host.devices.timer_check import coverage_entry
from pytest_zbench.runner.gl.timer import (
    ABSURD_NS,
    TimerQuery,
    TimerUnavailable,
    available_sources,
    choose_source,
    judge_elapsed,
)

# ------------------------------------------------------------------------------------- raw values


@pytest.mark.parametrize("raw, reason", [
    (None, "never became available"),
    (0, "0 ns"),
    (0xFFFFFFFF, "sentinel"),
    (0xFFFFFFFFFFFFFFFF, "sentinel"),
    (ABSURD_NS + 1, "not a measurement"),
])
def test_garbage_values_are_dropped_with_a_reason(raw, reason):
    verdict = judge_elapsed(raw)
    assert verdict.gpu_ms is None and not verdict.disjoint
    assert reason in verdict.invalid


def test_a_value_beyond_the_counter_bits_is_dropped():
    assert judge_elapsed(3 << 30, counter_bits=31).invalid is not None
    assert judge_elapsed(3 << 30, counter_bits=32).gpu_ms == pytest.approx((3 << 30) / 1e6)


def test_more_gpu_time_than_wall_time_is_dropped():
    # 5 ms of GPU work cannot fit into the 1 ms between issuing the commands and seeing the result.
    verdict = judge_elapsed(5_000_000, wall_ns=1_000_000)
    assert verdict.gpu_ms is None and "wall time" in verdict.invalid
    # Within the wall time (plus slack for the two clocks): kept.
    assert judge_elapsed(990_000, wall_ns=1_000_000).gpu_ms == pytest.approx(0.99)


def test_disjoint_drops_the_value_without_calling_it_garbage():
    verdict = judge_elapsed(123_456, disjoint=True)
    assert verdict == type(verdict)(None, True, None)


def test_a_plausible_value_is_kept_in_milliseconds():
    verdict = judge_elapsed(1_234_567, counter_bits=64, wall_ns=10_000_000)
    assert verdict.gpu_ms == pytest.approx(1.234567) and verdict.invalid is None and not verdict.disjoint


# ------------------------------------------------------------------------------------- the ring


def frame(timer: TimerQuery, ordinal: int) -> list:
    timer.begin(ordinal)
    timer.before_submit(ordinal)
    assert timer.after_submit(ordinal, 0) is None
    return timer.poll()


def test_results_arrive_late_and_are_attached_to_the_frame_that_issued_them():
    values = [1_000_000 * (i + 1) for i in range(8)]  # frame i took i+1 ms
    gl = ScriptedGL(values)
    timer = TimerQuery(gl, ring=2, clock=FakeClock())
    got = []
    for ordinal in range(6):
        got += frame(timer, ordinal)
        gl.complete(max(0, ordinal - 1))  # the GPU trails the CPU by two frames
    got += timer.drain()
    assert [s.ordinal for s in got] == list(range(6))
    assert [s.gpu_ms for s in got] == pytest.approx([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert all(s.invalid is None and s.disjoint is False for s in got)
    assert timer.max_lag >= 2
    assert timer.stalls == 0  # the ring grew instead of waiting


def test_nothing_is_collected_before_the_gpu_got_there():
    gl = ScriptedGL([1_000_000] * 4)
    timer = TimerQuery(gl, clock=FakeClock())
    assert frame(timer, 0) == [] and frame(timer, 1) == []
    gl.complete(1)
    assert [s.ordinal for s in timer.poll()] == [0]


def test_a_full_ring_at_its_limit_waits_for_the_oldest_and_counts_the_stall():
    gl = ScriptedGL([1_000_000] * 6)
    timer = TimerQuery(gl, ring=2, max_ring=2, clock=FakeClock())
    frame(timer, 0)
    frame(timer, 1)
    # Both queries in flight, ring at its limit: beginning frame 2 must wait (the scripted glFlush lets the
    # "GPU" finish) and the collected results still come out with their own ordinals.
    got = frame(timer, 2)
    assert timer.stalls == 1 and timer.ring_size == 2
    got += timer.drain()
    assert [s.ordinal for s in got] == [0, 1, 2]


def test_garbage_results_are_dropped_and_marked_invalid():
    gl = ScriptedGL([0xFFFFFFFF, 2_000_000, 0, 4_000_000])
    timer = TimerQuery(gl, clock=FakeClock())
    got = []
    for ordinal in range(4):
        got += frame(timer, ordinal)
    got += timer.drain()
    assert [s.gpu_ms for s in got] == [None, pytest.approx(2.0), None, pytest.approx(4.0)]
    assert [s.invalid is not None for s in got] == [True, False, True, False]


def test_a_disjoint_event_drops_every_frame_in_flight_and_flags_it():
    gl = ScriptedGL([1_000_000] * 6)
    timer = TimerQuery(gl, clock=FakeClock())
    got = []
    got += frame(timer, 0)
    gl.complete(1)
    got += frame(timer, 1)  # collects frame 0 (clean); frame 1 still in flight
    frame(timer, 2)
    gl.disjoint_pending = True  # e.g. the GPU was power-gated while frames 1 and 2 ran
    got += frame(timer, 3)  # frames 1, 2 and 3 are in flight when the flag is read
    got += frame(timer, 4)
    got += timer.drain()
    by_ordinal = {s.ordinal: s for s in got}
    assert sorted(by_ordinal) == [0, 1, 2, 3, 4]
    assert by_ordinal[0].gpu_ms == pytest.approx(1.0) and by_ordinal[0].disjoint is False
    for ordinal in (1, 2, 3):
        assert by_ordinal[ordinal].gpu_ms is None and by_ordinal[ordinal].disjoint is True
        assert by_ordinal[ordinal].invalid is None  # honest driver, not garbage
    assert by_ordinal[4].gpu_ms == pytest.approx(1.0) and by_ordinal[4].disjoint is False
    assert timer.disjoint_events == 1


def test_queries_are_deleted_on_close():
    gl = ScriptedGL([1_000_000])
    timer = TimerQuery(gl, ring=3, clock=FakeClock())
    timer.close()
    assert sorted(gl.deleted) == [1, 2, 3]


def test_zero_counter_bits_means_no_timer_query():
    with pytest.raises(TimerUnavailable, match="0 counter bits"):
        TimerQuery(ScriptedGL([], bits=0))


# ------------------------------------------------------------------------------------ choosing


def test_the_best_available_source_is_chosen():
    assert choose_source(available_sources(True), None) == "timer_query"
    assert choose_source(available_sources(False), None) == "finish_bracket"
    assert "timer_query" not in available_sources(False)


def test_a_forced_source_is_used_and_must_exist():
    assert choose_source(available_sources(True), "readback") == "readback"
    assert choose_source(available_sources(True), " none ") == "none"
    with pytest.raises(TimerUnavailable, match="offers only"):
        choose_source(available_sources(False), "timer_query")
    with pytest.raises(TimerUnavailable, match="is not one of"):
        choose_source(available_sources(True), "vsync")


# -------------------------------------------------------------------------------- timer check


def test_timer_check_passes_when_the_heavy_variant_reads_clearly_more():
    valid, detail = check_timer(0.5, 3.0, source="timer_query")
    assert valid and "6.00x" in detail and detail.startswith("timer_query")


def test_timer_check_fails_for_a_source_that_does_not_see_the_gpu():
    # A glFinish that returns at once: both variants read as the submit cost.
    valid, detail = check_timer([0.2, 0.21, 0.19], [0.22, 0.2, 0.21], source="finish_bracket")
    assert not valid and "does not see" in detail


def test_timer_check_fails_without_values_and_ignores_unknown_cells():
    assert not check_timer([None, None], [1.0]).valid
    assert not check_timer(None, 1.0).valid
    assert not check_timer(0.0, 1.0).valid
    assert check_timer([None, 1.0, float("nan"), 1.0], [4.0, None]).valid


def test_coverage_takes_the_brackets_fixed_part_away_so_a_small_frame_is_not_misjudged():
    # llvmpipe on a 64x48 surface under load (medians, ms): the query sees the whole frame, but the light
    # variant's bracket is mostly its drain; against the whole bracket less CPU it read 20 %.
    entry = coverage_entry({"light": ([0.01479], [0.141], [0.06772]), "heavy": ([0.09184], [0.2339], [0.08152])})
    per_layer = ((0.2339 - 0.08152) - (0.141 - 0.06772)) / (TIMER_CHECK_FACTOR - 1)
    assert entry["fixed_ms"] == pytest.approx((0.141 - 0.06772) - per_layer, abs=1e-6)
    assert entry["checked"] and entry["valid"] is True, entry["detail"]
    assert entry["light"]["share"] > 1.0 and "minus its fixed" in entry["detail"]


def test_coverage_still_fails_a_timer_that_sees_one_tile():
    # llvmpipe at 512x512 (docs/gpu-timing.md): fill.alpha x1 and x8, timer_query against finish_bracket.
    entry = coverage_entry({"light": ([0.008], [0.531], [0.047]), "heavy": ([0.328], [3.569], [0.125])})
    assert entry["valid"] is False and entry["light"]["share"] < 0.05 and entry["heavy"]["share"] < 0.25


def test_no_fixed_part_is_taken_when_the_heavy_bracket_is_not_longer():
    assert bracket_fixed_ms(0.5, 0.5) == 0.0 and bracket_fixed_ms(0.5, 0.4) == 0.0 and bracket_fixed_ms(None, 1) == 0
    assert bracket_fixed_ms(1.0, 8.0) == pytest.approx(0.0) and bracket_fixed_ms(2.0, 9.0) == pytest.approx(1.0)


def test_the_heavy_variant_repeats_the_ops_in_place():
    ops = [{"op": "rect", "x": 1, "y": 1, "w": 10, "h": 10, "color": "#3366CC40"}]
    heavy = heavier_ops(ops)
    assert heavy == [{"op": "repeat", "count": TIMER_CHECK_FACTOR, "dx": 0, "dy": 0, "ops": ops}]
    assert heavy[0]["ops"] is not ops
    scene = {"id": "fill.alpha.x1", "features": ["rect"], "ops": ops, "width": 20, "height": 20}
    heavy_scene = heavier_scene(scene, 4)
    assert heavy_scene["features"] == ["rect", "repeat"] and heavy_scene["id"] == "fill.alpha.x1.timer_check.x4"
    assert scene["ops"] is ops and scene["features"] == ["rect"]
    with pytest.raises(ValueError):
        heavier_ops(ops, 1)


def test_one_run_has_one_gpu_source():
    assert run_source(["timer_query", "", None, "timer_query"]) == "timer_query"
    assert run_source([None, ""]) is None
    with pytest.raises(MixedGpuSources, match="finish_bracket, timer_query"):
        run_source(["timer_query", "finish_bracket"])


# ----------------------------------------------------------------------------- probe helpers


def test_extension_hash_is_the_sha256_of_the_sorted_names():
    from pytest_zbench.runner.backends.gles2 import extensions_hash

    names = {"GL_B", "GL_A"}
    assert extensions_hash(names) == "sha256:" + hashlib.sha256(b"GL_A GL_B").hexdigest()


def test_skia_shader_failures_are_recognised_in_stderr():
    from pytest_zbench.runner.backends.gles2 import shader_errors

    text = ("some log line\nShader compilation error\n------------------------\n1 #version 100\n"
            "Program linking failed.\nlink failed but did not provide an info log\n")
    assert shader_errors(text) == ["Shader compilation error", "Program linking failed.",
                                   "link failed but did not provide an info log"]
    assert shader_errors("all good\n") == []



def test_the_ring_drops_a_value_longer_than_the_wall_time_it_was_in_flight():
    class SlowClock:
        now = 0

        def __call__(self) -> int:
            self.now += 1_000_000  # 1 ms per reading
            return self.now

    gl = ScriptedGL([500_000_000, 500_000])  # 500 ms reported for a frame in flight for a few ms
    timer = TimerQuery(gl, clock=SlowClock())
    got = frame(timer, 0) + frame(timer, 1) + timer.drain()
    assert got[0].gpu_ms is None and "wall time" in got[0].invalid
    assert got[1].gpu_ms == pytest.approx(0.5)
