"""Why a scene regressed (regression/attribution.py): every measurement compared with the gate's statistics,
deterministic counters exactly, the moved ones first."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pytest_zbench.regression.attribution import MOVED_AT, exact_movement, explain, kind_of
from pytest_zbench.regression.config import GateConfig
from pytest_zbench.regression.gate import BaselineSession, judge
from pytest_zbench.regression.interleaved_ab import judge_ab

CONFIG = GateConfig(threshold=0.05, resamples=500)


def launch(cpu: float, *, uploads: float = 65536.0, draws: float = 10.0, faults: float | None = None,
           record: float | None = None) -> dict:
    counters = {"draw_calls": draws, "texture_upload_bytes": uploads, "pixels_drawn": 19200.0}
    if faults is not None:
        counters["minor_faults"] = faults
    if record is not None:
        counters["cpu_record_ms"] = record
    return {"cpu_ms": {"p50": cpu, "p95": cpu * 1.2}, "counters": counters, "time_to_first_frame_ms": 200.0 + cpu}


def ab(metrics: tuple[str, ...], a: list[dict], b: list[dict]):
    return judge_ab(a, b, dataclasses.replace(CONFIG, metrics=metrics))


def test_deterministic_counters_are_compared_exactly_without_dividing_by_their_zero_spread():
    same = exact_movement("counters.draw_calls", np.array([10.0] * 6), np.array([10.0] * 6))
    assert same is not None and same.text() == "draw_calls unchanged (exact)" and not same.moved
    doubled = exact_movement("counters.texture_upload_bytes", np.array([65536.0] * 6), np.array([131072.0] * 6))
    assert doubled is not None and doubled.moved and doubled.effect == 2.0 and doubled.ci == (2.0, 2.0)
    assert doubled.text() == "texture_upload_bytes 2.00x (exact, 6.554e+04 -> 1.311e+05)"
    new = exact_movement("counters.texture_upload_bytes", np.array([0.0] * 3), np.array([4096.0] * 3))
    assert new is not None and new.moved and new.effect is None and new.text().startswith("texture_upload_bytes new")
    gone = exact_movement("counters.texture_upload_bytes", np.array([4096.0] * 3), np.array([0.0] * 3))
    assert gone is not None and gone.moved and gone.effect == 0.0 and "gone" in gone.text()
    tiny = exact_movement("counters.draw_calls", np.array([1000.0] * 3), np.array([1005.0] * 3))
    assert tiny is not None and not tiny.moved  # exact, but below the practical floor
    assert exact_movement("counters.minor_faults", np.array([1.0, 2.0]), np.array([1.0, 1.0])) is None


def test_ab_names_the_doubled_uploads_first_then_the_cpu_time_and_not_the_unchanged_counters():
    rng = np.random.default_rng(1)
    a = [launch(1.0 + rng.normal(0, 0.02), faults=3 + rng.integers(0, 3), record=0.4 + rng.normal(0, 0.01))
         for _ in range(6)]
    b = [launch(1.3 + rng.normal(0, 0.02), uploads=131072.0, faults=3 + rng.integers(0, 3),
                record=0.4 + rng.normal(0, 0.01)) for _ in range(6)]
    why = explain(a, b, lambda metrics: ab(metrics, a, b))
    names = [m.name for m in why.movements]
    assert names[0] == "texture_upload_bytes" and why.first is not None and why.first.how == "exact"
    moved = {m.name for m in why.moved}
    assert "cpu_ms.p50" in moved and "time_to_first_frame_ms" not in moved  # 200 ms + 0.3 is < 2 %
    assert {"draw_calls", "pixels_drawn", "cpu_record_ms"}.isdisjoint(moved)
    cpu = next(m for m in why.movements if m.name == "cpu_ms.p50")
    assert cpu.how == "gate" and cpu.ci is not None and cpu.ci[0] > 1
    assert cpu.effect == pytest.approx(1.3, rel=0.05)
    assert next(m for m in why.movements if m.name == "cpu_record_ms").kind == "cpu_stage"
    line = why.line()
    assert line.startswith("why: texture_upload_bytes 2.00x (exact") and "cpu_ms.p50 1.3" in line
    assert "; not moved: " in line and "draw_calls unchanged (exact)" in line.split("; not moved: ")[1]
    assert "permutation" in why.method
    document = why.to_json()
    assert document["moved"][0] == "texture_upload_bytes"
    assert all(m["text"] for m in document["measurements"])


def test_sessions_gate_rejudged_gives_the_counters_its_interval_and_a_thin_baseline_none():
    rng = np.random.default_rng(2)
    sessions = [BaselineSession([launch(1.0 * (1 + rng.normal(0, 0.02)) + rng.normal(0, 0.01), draws=10.0 + k % 2)
                                 for k in range(5)], label=f"r{s}") for s in range(4)]
    candidate = [launch(1.0 + rng.normal(0, 0.01), draws=20.0 + k % 2) for k in range(5)]
    flat = [l for s in sessions for l in s.launches]
    why = explain(flat, candidate,
                  lambda metrics: judge(sessions, candidate, dataclasses.replace(CONFIG, metrics=metrics)))
    assert why.first is not None and why.first.name == "draw_calls" and why.first.how == "gate"
    assert why.first.ci is not None and why.first.ci[0] > 1.5
    assert "hierarchical" in why.method
    thin = explain(sessions[0].launches, candidate,
                   lambda metrics: judge(sessions[:1], candidate, dataclasses.replace(CONFIG, metrics=metrics)))
    draws = next(m for m in thin.movements if m.name == "draw_calls")
    assert draws.ci is None and not draws.moved and "between-session spread is unknown" in draws.text()


def test_a_counter_one_side_lacks_and_a_median_at_zero_are_said_plainly():
    a = [launch(1.0 + k * 0.01) for k in range(6)]
    b = [dict(launch(1.0 + k * 0.01), counters={"draw_calls": 10.0, "texture_upload_bytes": 65536.0,
                                                 "pixels_drawn": 19200.0, "preemptions": float(k % 3 != 0)})
         for k in range(6)]
    for l in a:
        l["counters"]["preemptions"] = 0.0 if l is not a[0] else 0.5
    why = explain(a, b, lambda metrics: ab(metrics, a, b))
    pre = next(m for m in why.movements if m.name == "preemptions")
    assert pre.effect is None and "0 -> " in pre.text()  # a median of 0: the medians, never a 10^9x ratio
    b2 = [dict(l, counters={k: v for k, v in l["counters"].items() if k != "pixels_drawn"}) for l in b]
    only = next(m for m in explain(a, b2, lambda metrics: ab(metrics, a, b2)).movements if m.name == "pixels_drawn")
    assert only.how == "not_judged" and "baseline only" in only.text()
    assert MOVED_AT == 0.02


def test_the_work_a_frame_asked_for_is_named_before_the_time_it_cost_even_when_the_time_moved_more():
    rng = np.random.default_rng(3)
    a = [launch(1.0 + rng.normal(0, 0.02), draws=100.0) for _ in range(6)]
    b = [launch(3.0 + rng.normal(0, 0.02), draws=150.0) for _ in range(6)]
    why = explain(a, b, lambda metrics: ab(metrics, a, b))
    assert [m.name for m in why.moved][:3] == ["draw_calls", "cpu_ms.p50", "cpu_ms.p95"]  # 1.5x before 3x
    assert why.moved[0].effect == pytest.approx(1.5, rel=1e-12)


def test_moved_counters_are_named_largest_move_first_whatever_order_the_runner_wrote_them_in():
    """Within one kind the largest move comes first, by |log effect|: a counter that halved moved as far as one
    that doubled, and one that appeared (no ratio) farther than any. The runner writes the counters in an order
    of its own, here neither by size nor its reverse, and the line must not follow it."""
    base = {"draw_calls": 100.0, "texture_upload_bytes": 65536.0, "pixels_drawn": 19200.0, "rt_switches": 10.0,
            "state_changes": 50.0, "alloc_bytes": 1000.0, "stencil_clears": 0.0}
    cand = {"draw_calls": 150.0, "texture_upload_bytes": 262144.0, "pixels_drawn": 19200.0, "rt_switches": 11.0,
            "state_changes": 20.0, "alloc_bytes": 3000.0, "stencil_clears": 5.0}
    rng = np.random.default_rng(4)
    a = [dict(launch(1.0 + rng.normal(0, 0.01)), counters=dict(base)) for _ in range(6)]
    b = [dict(launch(1.0 + rng.normal(0, 0.01)), counters=dict(cand)) for _ in range(6)]
    why = explain(a, b, lambda metrics: ab(metrics, a, b))
    # new (no ratio), 4x (|log| 1.39), 3x (1.10), 0.4x (0.92), 1.5x (0.41), 1.1x (0.095); pixels_drawn unchanged
    expected = ["stencil_clears", "texture_upload_bytes", "alloc_bytes", "state_changes", "draw_calls", "rt_switches"]
    assert [m.name for m in why.moved if m.kind == "counter"] == expected
    assert why.to_json()["moved"][:len(expected)] == expected  # run.json's list, as the report reads it
    assert why.line().startswith("why: stencil_clears new (exact, 0 -> 5), texture_upload_bytes 4.00x (exact, "
                                 "6.554e+04 -> 2.621e+05), alloc_bytes 3.00x (exact, 1000 -> 3000), "
                                 "state_changes 0.40x (exact, 50 -> 20), draw_calls 1.50x (exact, 100 -> 150), "
                                 "rt_switches 1.10x (exact, 10 -> 11)")


def test_what_the_system_did_to_a_frame_is_context_not_a_cause():
    assert kind_of("counters.preemptions") == kind_of("counters.stolen_ms") == kind_of("counters.minor_faults") == "system"
    assert kind_of("counters.cpu_flush_ms") == "cpu_stage" and kind_of("counters.alloc_bytes") == "counter"
    assert kind_of("warmup_ms") == "cold_start" and kind_of("gpu_ms.p50") == "gpu"


def test_the_gate_result_names_what_moved_under_the_verdict_in_run_json_and_junit_and_only_when_decided():
    import json

    from pytest_zbench.host.verdicts.perf_gate import _with_context

    rng = np.random.default_rng(4)
    sessions = [BaselineSession([launch(1.0 * (1 + rng.normal(0, 0.02)), draws=100.0) for _ in range(5)],
                                label=f"r{s}") for s in range(4)]
    slower = [launch(1.6 + rng.normal(0, 0.01), draws=180.0) for _ in range(5)]

    def rejudge_against(candidate):
        return lambda metrics: judge(sessions, candidate, dataclasses.replace(CONFIG, threshold=0.15, metrics=metrics))

    config = dataclasses.replace(CONFIG, threshold=0.15)
    result = _with_context(judge(sessions, slower, config), "history", "4 runs", (), {}, "c", [], sessions, slower,
                           rejudge=rejudge_against(slower))
    assert result.verdict == "regressed" and result.attribution is not None
    lines = result.message.splitlines()
    assert lines[0] == "scene verdict: regressed" and lines[1].startswith("why: draw_calls 1.80x (exact")
    doc = result.to_json()
    json.dumps(doc, allow_nan=False)
    assert doc["attribution"]["moved"][0] == "draw_calls"
    assert set(doc["attribution"]["moved"][1:3]) == {"cpu_ms.p50", "cpu_ms.p95"}  # the cost, after its cause
    props = dict(result.junit_properties())
    assert props["regression_moved"].startswith("draw_calls,cpu_ms.p") and props["regression_why"] == lines[1]

    same = [launch(1.0 * (1 + rng.normal(0, 0.02)), draws=100.0) for _ in range(5)]
    unchanged = _with_context(judge(sessions, same, config), "history", "4 runs", (), {}, "c", [], sessions, same,
                              rejudge=rejudge_against(same))
    assert unchanged.verdict in ("same", "inconclusive") and unchanged.attribution is None
    assert unchanged.to_json()["attribution"] is None and "regression_why" not in dict(unchanged.junit_properties())
