"""host.verdicts.perf_gate and host.devices.environment without pytest runs: the environment fingerprint input, JSON
safety, warnings."""

from __future__ import annotations

import json

import numpy as np

from pytest_zbench.host.devices.environment import environment as run_environment
from pytest_zbench.host.verdicts.perf_gate import GateResult
from pytest_zbench.regression.gate import GateConfig, judge
from pytest_zbench.regression.history import environment_fingerprint


def launches(level: float, n: int, seed: int, spread: float = 0.01) -> list[dict]:
    values = level * np.exp(np.random.default_rng(seed).normal(0, spread, n))
    return [{"cpu_ms": {"p50": float(v), "p95": float(v) * 1.2}, "gpu_ms": None, "gpu_source": None,
             "jank_share": 0.0} for v in values]


def test_environment_leaves_out_what_launches_fill_in_later():
    sections = {"device": {"id": "pi3b", "model": "Pi 3B+"}, "gpu": {"backend": "gles2", "timer_source": None,
                "gl_renderer": "VC4"}, "display": {"width": 800, "vsync": None, "present_source": None},
                "conditions": {"temp_c": 48.2}}
    before = environment_fingerprint(run_environment(sections))
    sections["gpu"].update(timer_source="finish_bracket", timer_source_used="finish_bracket")
    sections["display"].update(vsync=True, present_source="drm")
    sections["conditions"]["temp_c"] = 61.0
    assert environment_fingerprint(run_environment(sections)) == before
    sections["gpu"]["gl_renderer"] = "V3D"
    assert environment_fingerprint(run_environment(sections)) != before


def test_result_is_json_safe_and_says_what_would_decide_it():
    base = [launches(1.0, 4, seed, spread=0.08) for seed in range(3)]
    verdict = judge(base, launches(1.12, 4, 9, spread=0.08), GateConfig())
    result = GateResult(verdict.verdict, "history", "3 runs", verdict.message(), verdict)
    doc = result.to_json()
    json.dumps(doc, allow_nan=False)
    assert doc["verdict"] == "inconclusive" and doc["not_judged"][0]["metric"] == "gpu_ms.p50"
    assert doc["metrics"][0]["bar"] == 0.15 and doc["metrics"][0]["mode"] == "sessions"
    warning = result.warning()
    assert "regression verdict inconclusive with 4 launches vs 3 baseline session(s)" in warning
    assert "would decide it" in warning or "A/B" in warning
    props = dict(result.junit_properties())
    assert props["regression_verdict"] == "inconclusive" and "regression_effect_cpu_ms_p50" in props
    assert not result.failed
    thin = judge(base[:1], launches(1.5, 4, 9), GateConfig())
    note = GateResult(thin.verdict, "history", "1 run", thin.message(), thin).warning()
    assert "zbench calibrate --sessions 3" in note and "--zbench-ab" in note


def test_no_baseline_passes_with_a_note():
    result = GateResult("no_baseline", "history", "no comparable run of x", "no baseline: no comparable run of x")
    assert not result.failed and result.warning() == "not gated: no comparable run of x"
    assert result.to_json()["metrics"] == []


def test_a_run_file_baseline_judges_comparable_launches_and_names_what_differs(tmp_path):
    from pytest_zbench.regression.baseline import judge_against_run_file

    path = tmp_path / "run.json"
    ours = {"backend": "software", "mode": "paced", "params": {}, "gpu_source": None}
    document = {"run_id": "abcdef123", "app": {"build_hash": "deadbeef"},
                "scenes": [{"id": "s", "device": "d", **ours, "per_run": launches(1.0, 5, 1)}]}
    judged = judge_against_run_file(document, path, "s", "d", ours, launches(1.0, 5, 2))
    assert judged.verdict is not None and judged.comparable
    assert judged.description.startswith("5 launches of s on d in ") and "build deadbeef" in judged.description
    # One session: no between-session spread of its own, inconclusive unless A/A sessions supply one.
    assert judged.verdict.verdict == "inconclusive" and "one baseline session" in judged.verdict.message()
    assert judged.build == "deadbeef" and len(judged.launches) == 5
    other = judge_against_run_file(document, path, "s", "d", dict(ours, backend="gles2"), launches(1.0, 5, 2))
    assert other.verdict is None and not other.comparable
    assert "backend 'software' there, 'gles2' here" in other.message
    missing = judge_against_run_file(document, path, "t", "d", ours, launches(1.0, 5, 2))
    assert missing.verdict is None and missing.comparable and missing.message.startswith("no baseline")


def test_the_regression_section_carries_the_values_judged_per_session_and_side():
    from pytest_zbench.host.verdicts.perf_gate import _with_context
    from pytest_zbench.regression.gate import BaselineSession
    from pytest_zbench.regression.interleaved_ab import judge_ab

    sessions = [BaselineSession(launches(1.0 + 0.01 * k, 4, k, spread=0.05), f"run{k}", f"build{k}") for k in range(3)]
    candidate = launches(1.2, 5, 9, spread=0.05)
    verdict = judge(sessions, candidate, GateConfig())
    doc = _with_context(verdict, "history", "3 runs", (), {}, "c", [], sessions, candidate).to_json()
    json.dumps(doc, allow_nan=False)
    dist = doc["distributions"]
    assert dist["sessions"] == [{"label": f"run{k}", "build": f"build{k}"} for k in range(3)]
    assert set(dist["metrics"]) == {v["metric"] for v in doc["metrics"]} == {"cpu_ms.p50", "cpu_ms.p95"}
    p50 = dist["metrics"]["cpu_ms.p50"]
    assert [len(s) for s in p50["baseline"]] == [4, 4, 4] and len(p50["candidate"]) == 5
    assert p50["candidate"][0] == float(f"{candidate[0]['cpu_ms']['p50']:.4g}")  # rounded to 4 digits
    assert all(len(repr(v)) <= 7 for s in p50["baseline"] for v in s)

    # A/B: the A launches are the one baseline row, the B launches the candidate's.
    a, b = launches(1.0, 6, 1), launches(1.1, 6, 2)
    ab = _with_context(judge_ab(a, b, GateConfig(threshold=0.05)), "ab", "A", (), {}, "", [],
                       [BaselineSession(a, "A")], b).to_json()["distributions"]
    assert ab["sessions"] == [{"label": "A", "build": None}]
    assert len(ab["metrics"]["cpu_ms.p50"]["baseline"]) == 1 and len(ab["metrics"]["cpu_ms.p50"]["candidate"]) == 6


def test_the_history_series_marks_the_candidate_and_the_change_points():
    from pytest_zbench.host.verdicts.perf_gate import history_series
    from pytest_zbench.regression.history import HistoricRun

    def run(k: int, level: float) -> HistoricRun:
        return HistoricRun(f"r{k}", f"2026-01-{k + 1:02d}T00:00:00Z", "run", f"b{k}", False, "f", {}, k,
                           tuple(launches(level, 3, k)), None)

    runs = [run(k, 1.0 if k < 8 else 1.3) for k in range(16)]
    series = history_series(runs, "cpu_ms.p50", candidate_run="r15")
    assert [s["candidate"] for s in series["sessions"]] == [False] * 15 + [True]
    assert series["sessions"][0] == {"run_id": "r0", "build": "b0", "started_utc": "2026-01-01T00:00:00Z",
                                     "value": series["sessions"][0]["value"], "candidate": False}
    (step,) = series["change_points"]
    assert step["index"] == 8 and 1.25 < step["magnitude"] < 1.35 and step["p_value"] <= 0.05
    flat = history_series(runs[:5], "gpu_ms.p50", candidate_run="elsewhere")
    assert [s["value"] for s in flat["sessions"]] == [None] * 5 and flat["change_points"] == []
