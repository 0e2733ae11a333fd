"""host.regression_gate and host.environment without pytest runs: the environment fingerprint input, JSON
safety, warnings."""

from __future__ import annotations

import json

import numpy as np

from pytest_zbench.host.environment import environment as run_environment
from pytest_zbench.host.regression_gate import GateResult
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
