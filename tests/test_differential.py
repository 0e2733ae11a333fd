"""Differential pairs on plain run.json scene entries (pytest_zbench/host/verdicts/differentials.py), their bootstrap
(stats.bootstrap_difference_ci) and their place in report.html."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pytest_zbench.host.verdicts.differentials import differential_costs, terminal_lines
from pytest_zbench.stats import bootstrap_difference_ci


def entry(scene: str, cpu: list[float], *, gpu: list[float] | None = None, minus: str | None = None,
          device: str = "dev", **extra: Any) -> dict[str, Any]:
    runs = [{"cpu_ms": {"p50": c}, "partial": False, **({"gpu_ms": {"p50": gpu[k]}} if gpu else {})}
            for k, c in enumerate(cpu)]
    return {"id": scene, "device": device, "params": {}, "sweep": scene, "gpu_valid": True if gpu else None,
            "per_run": runs, "skipped": None,
            "differential": {"minus": minus, "feature": "opacity group"} if minus else None, **extra}


def test_a_feature_that_costs_gets_its_difference_and_an_interval_above_zero():
    found = differential_costs([entry("layer.group", [3.1, 3.0, 3.3, 3.2, 3.05], minus="layer.direct"),
                                entry("layer.direct", [1.0, 1.1, 0.95, 1.05, 1.0])])
    assert len(found) == 1
    d = found[0]
    assert (d.scene, d.minus, d.metric, d.launches) == ("layer.group", "layer.direct", "cpu_ms", (5, 5))
    assert d.cost_ms == pytest.approx(3.1 - 1.0)
    assert d.ci_low_ms is not None and d.ci_high_ms is not None and 0 < d.ci_low_ms <= d.cost_ms <= d.ci_high_ms
    assert d.verdict == "costs"
    [line] = terminal_lines([d.to_dict() for d in found])
    assert line.startswith("differential: layer.group - layer.direct on dev: opacity group: +2.1 ms [")
    assert "cpu_ms (costs; 95% interval over launches, +210% over layer.direct)" in line


def test_overlapping_sides_are_no_difference_and_a_cheaper_feature_saves():
    same = differential_costs([entry("a", [1.0, 1.2, 0.9, 1.1], minus="b"), entry("b", [1.05, 0.95, 1.15, 1.0])])
    assert same[0].verdict == "no_difference" and same[0].ci_low_ms < 0 < same[0].ci_high_ms
    cheaper = differential_costs([entry("a", [0.5, 0.52, 0.49], minus="b"), entry("b", [1.0, 1.02, 0.99])])
    assert cheaper[0].verdict == "saves" and cheaper[0].cost_ms == pytest.approx(-0.5)


def test_gpu_time_is_the_clock_only_when_both_sides_trust_it():
    both = differential_costs([entry("a", [1, 1], gpu=[5.0, 5.2], minus="b"), entry("b", [1, 1], gpu=[2.0, 2.1])])
    assert both[0].metric == "gpu_ms" and both[0].cost_ms == pytest.approx(5.1 - 2.05)
    one = differential_costs([entry("a", [1.0, 1.1], gpu=[5.0, 5.2], minus="b"), entry("b", [0.5, 0.6])])
    assert one[0].metric == "cpu_ms"


def test_one_launch_a_side_has_a_difference_but_no_interval_and_a_missing_side_no_entry():
    [single] = differential_costs([entry("a", [2.0], minus="b"), entry("b", [1.5])])
    assert single.verdict == "inconclusive" and single.cost_ms == pytest.approx(0.5)
    assert single.ci_low_ms is None and "at least 2 a side" in single.reason
    partial = entry("b", [1.5, 1.6])
    for run in partial["per_run"]:
        run["partial"] = True
    [none] = differential_costs([entry("a", [2.0, 2.1], minus="b"), partial])
    assert none.verdict == "inconclusive" and none.cost_ms is None and "no complete launch of b" in none.reason
    assert differential_costs([entry("a", [2.0, 2.1], minus="b")]) == []  # b not measured (deselected)
    assert differential_costs([entry("a", [2.0, 2.1], minus="b"), entry("b", [1.0], device="other")]) == []


def test_pairs_are_per_device():
    found = differential_costs([entry("a", [2.0, 2.1], minus="b", device="d1"), entry("b", [1.0, 1.1], device="d1"),
                                entry("a", [9.0, 9.1], minus="b", device="d2"), entry("b", [1.0, 1.1], device="d2")])
    assert [(d.device, d.cost_ms) for d in found] == [("d1", 1.0), ("d2", 8.0)]


def test_the_bootstrap_interval_covers_the_true_difference_about_as_often_as_it_says():
    rng = np.random.default_rng(7)
    covered = 0
    for trial in range(200):
        a, b = rng.normal(3.0, 0.3, size=10), rng.normal(2.0, 0.3, size=10)
        low, high = bootstrap_difference_ci(a, b, seed=trial)
        covered += low <= 1.0 <= high
    # A percentile bootstrap of medians from 10 launches a side undercovers a little; far from 95 % is a bug.
    assert 0.85 <= covered / 200 <= 0.99
    with pytest.raises(ValueError):
        bootstrap_difference_ci([], [1.0])


def test_entries_are_valid_run_json_and_the_report_shows_pairs_and_isolation(tmp_path):
    import jsonschema

    from pytest_zbench.host.report.html import write_report
    from pytest_zbench.host.run_record import load_schema

    validator = jsonschema.Draft202012Validator(load_schema()["properties"]["differentials"])
    found = [d.to_dict() for d in differential_costs([entry("a", [2.0, 2.1], minus="b"), entry("b", [1.0, 1.1]),
                                                      entry("c", [2.0], minus="b")])]
    assert list(validator.iter_errors(found)) == []
    found[0]["verdict"] = "cheap"
    assert len(list(validator.iter_errors(found))) == 1
    found[0]["verdict"] = "costs"
    isolation = [{"family": "fill.opaque.x{layers}", "device": "dev", "dimension": "layers", "metric": "gpu_ms",
                  "values": [1, 8], "medians_ms": [0.004, 0.004], "launches": 4, "rho": -0.1, "rise_ms": 0.0,
                  "verdict": "not_scaling", "likely_cause": "culled", "reason": "gpu_ms rho -0.10"}]
    document = {"run_id": "r", "started_utc": "t", "app": {}, "gpu": {}, "display": {}, "device": {"id": "dev"},
                "scenes": [], "isolation": isolation, "differentials": found}
    text = write_report(document, tmp_path, tmp_path / "report.html").read_text()
    assert "<div class=corpus id=isolation>" in text and "<div class=corpus id=differentials>" in text
    assert "fill.opaque.x{layers}" in text and "not scaling</td><td>culled</td>" in text and "1: 0.004, 8: 0.004" in text
    assert "<td>opacity group</td><td>a</td><td>b</td>" in text and "data-differential='costs'" in text
    assert "data-differential='inconclusive'" in text
    bare = write_report({**document, "isolation": [], "differentials": []}, tmp_path, tmp_path / "bare.html")
    assert "id=isolation" not in bare.read_text()


def test_the_bootstrap_interval_of_a_difference_is_95_percent():
    # b one value: the difference's bootstrap is a's median's, shifted by b. Its ends by hand
    # (test_adaptive_score.exact_bootstrap_median_bounds): for 17 distinct values the 5th and 13th smallest at
    # 95 %; a 90 % interval would end at the 6th and 12th.
    n = 17
    a = [2.0 + 0.1 * ((5 * k) % n) for k in range(n)]
    ordered = sorted(a)
    low, high = bootstrap_difference_ci(a, [1.0], resamples=20_000)
    assert low == pytest.approx(ordered[4] - 1.0, rel=1e-12) and high == pytest.approx(ordered[12] - 1.0, rel=1e-12)
