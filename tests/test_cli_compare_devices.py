"""`zbench compare A.json B.json` on two run documents, and `zbench devices` on a real inventory of local
runners (one of them broken)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pytest_zbench.cli import main
from pytest_zbench.regression.compare_runs import FailOn, clip_ratio, compare_runs, lines


def run_doc(run_id: str, levels: dict[str, float], seed: int, n: int = 6, noise: float = 0.01) -> dict:
    scenes = []
    for i, (scene, level) in enumerate(levels.items()):
        values = level * np.exp(np.random.default_rng(seed + i).normal(0, noise, n))
        per_run = [{"cpu_ms": {"p50": float(v), "p95": float(v) * 1.2}, "gpu_ms": None, "gpu_source": None,
                    "jank_share": 0.0, "partial": False} for v in values]
        scenes.append({"id": scene, "device": "pi", "backend": "gles2", "mode": "paced", "params": {},
                       "gpu_source": None, "per_run": per_run,
                       "metrics": {"cpu_ms": {"p50": float(np.median(values)), "p95": float(np.median(values)) * 1.2},
                                   "frame_ms": {"p99": 16.7}}})
    return {"run_id": run_id, "app": {"build_hash": run_id * 4}, "scenes": scenes}


def test_compare_judges_b_against_a_regressed_first(tmp_path, capsys):
    a = run_doc("aaaa", {"fill.x1": 5.0, "text": 3.0, "gone": 1.0}, seed=1)
    b = run_doc("bbbb", {"fill.x1": 6.5, "text": 3.0, "new": 1.0}, seed=50)
    result = compare_runs(a, tmp_path / "a.json", b)
    # One run file is one baseline session: the gate cannot tell B's slowdown from B's session's own offset,
    # so both scenes are inconclusive with that reason and the effect is still shown (docs/regression.md).
    assert {s.scene: s.verdict for s in result.scenes} == {"fill.x1": "inconclusive", "text": "inconclusive"}
    assert all("one baseline session" in s.message for s in result.scenes)
    assert result.only_a == ("pi/gone",) and result.only_b == ("pi/new",)
    text = lines(result)
    assert text[2].startswith("pi/fill.x1") and "inconclusive" in text[2] and "cpu_ms.p50 1.29" in text[2]
    assert max(len(line) for line in text[:4]) <= 100
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0  # nothing regressed
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "a.json")]) == 0
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "nothing.json")]) == 2
    assert "nothing.json" in capsys.readouterr().err


def test_compare_judges_an_adaptive_scene_on_its_score(tmp_path):
    a = run_doc("aaaa", {"rrect.grid.adaptive": 400.0}, seed=1)
    b = run_doc("bbbb", {"rrect.grid.adaptive": 300.0}, seed=50)
    for doc in (a, b):  # an adaptive scene's launches carry their score; its per-frame statistics are not judged
        entry = doc["scenes"][0]
        entry["adaptive"] = {"score": entry["metrics"]["cpu_ms"]["p50"]}
        for launch in entry["per_run"]:
            launch["adaptive"] = {"role": "ramp", "score": launch["cpu_ms"]["p50"]}
    (scene,) = compare_runs(a, tmp_path / "a.json", b).scenes
    assert scene.verdict == "inconclusive" and scene.detail.startswith("adaptive.score 0.7")
    assert "cpu_ms" not in scene.message


def test_devices_lists_the_inventory_reached_and_probed(tmp_path, capsys):
    inventory = tmp_path / "devices.yaml"
    inventory.write_text("""\
devices:
  local:
    transport: local
    backend: software
    runner: [python, -m, pytest_zbench.runner]
  rectonly:
    transport: local
    backend: software
    runner: [python, -m, pytest_zbench.runner]
  broken:
    transport: local
    backend: software
    runner: [python, -c, "import sys; sys.exit(3)"]
""")
    assert main(["devices", "--devices", str(inventory), "--device", "local", "--device", "broken"]) == 1
    out = capsys.readouterr().out
    assert "2 device(s)" in out
    assert "reachable: runner zbench-reference" in out and "software:" in out
    assert "broken: local, backend software" in out and "not reachable" in out and "exited with 3" in out
    assert main(["devices", "--devices", str(inventory), "--no-probe"]) == 0
    assert "rectonly: local" in capsys.readouterr().out
    assert main(["devices", "--devices", str(inventory), "--device", "nope"]) == 2
    assert "unknown device 'nope'" in capsys.readouterr().err


def test_fail_on_fails_a_slower_b_on_a_fixed_threshold_with_its_interval(tmp_path, capsys):
    """Two one-off runs: the gate cannot call B regressed (one session a side), --fail-on can."""
    a = run_doc("aaaa", {"fill.x1": 5.0, "text": 3.0}, seed=1)
    b = run_doc("bbbb", {"fill.x1": 6.5, "text": 3.0}, seed=50)
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--fail-on", "cpu_ms.p50:10%"]) == 1
    out = capsys.readouterr().out
    assert "--fail-on cpu_ms.p50 B/A 1.29" in out and "limit 10%: FAILED" in out
    assert out.count("(95% CI ") == 2 and out.count(": ok") == 1  # text: no change, no failure
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--fail-on", "cpu_ms.p50:40%"]) == 0
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "a.json"), "--fail-on", "cpu_ms.p95:1%"]) == 0
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--fail-on", "cpu_ms:10"]) == 2
    result = compare_runs(a, tmp_path / "a.json", b, fail_on=(FailOn.parse("cpu_ms.p50:0.1"),))
    (fill,) = [s for s in result.scenes if s.scene == "fill.x1"]
    (check,) = fill.thresholds
    assert check.ratio == pytest.approx(6.5 / 5.0, rel=0.03)  # the noise is 1 % a launch
    assert check.ci is not None and check.ci[0] <= check.ratio <= check.ci[1] and check.failed
    assert fill.verdict == "inconclusive" and result.regressed


def test_fail_on_does_not_fail_a_ratio_past_the_limit_that_the_launches_do_not_show():
    """The same build on a noisy machine: medians 20 % apart by chance, launches spread 30 % each. The ratio of
    medians is past the limit, but the launch interval spans no change, so the rule passes and says why."""
    a = run_doc("aaaa", {"fill.x1": 5.0}, seed=3, n=5, noise=0.3)
    b = run_doc("bbbb", {"fill.x1": 5.0}, seed=3, n=5, noise=0.3)
    for launch in b["scenes"][0]["per_run"]:  # the same launches, 20 % slower, plus one that was fast
        launch["cpu_ms"]["p50"] *= 1.2
    b["scenes"][0]["per_run"][0]["cpu_ms"]["p50"] /= 1.6
    (check,) = compare_runs(a, Path("a.json"), b, fail_on=(FailOn.parse("cpu_ms.p50:10%"),)).scenes[0].thresholds
    assert check.ratio > 1.1 and check.ci[0] < 1.0 < check.ci[1]
    assert check.past_limit and not check.shown_worse and not check.failed
    assert "ok (past the limit, but the launches do not show B worse" in check.describe()


def test_ratios_are_clipped_for_display():
    assert [clip_ratio(v) for v in (0.0, 2593098.183, 1.5, float("inf"))] == ["<0.001x", ">1000x", "1.500x", ">1000x"]
