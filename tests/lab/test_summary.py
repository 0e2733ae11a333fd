"""`zbench summary`: regressed first with effect, CI and baseline; golden failures with their metric;
inconclusive with the launches they need; counts; artifact links; always under GitHub's 1 MiB."""

from __future__ import annotations

import json

from pytest_zbench.cli import main
from pytest_zbench.host.report.markdown_summary import GITHUB_SUMMARY_LIMIT, Link, render_summary


def metric(name: str, verdict: str, effect: float, **extra) -> dict:
    return {"metric": name, "verdict": verdict, "effect": effect, "ci": [effect * 0.95, effect * 1.05],
            "p": 0.004, "baseline_median": 1.0, "candidate_median": effect, "n_baseline": 5, "n_candidate": 5,
            "more_launches": None, "baseline": "10 launches of 2 runs in history.sqlite", **extra}


def scene(scene_id: str, *, device: str = "pi3b", outcome: str = "passed", regression: dict | None = None,
          correctness: dict | None = None, issues: list | None = None) -> dict:
    return {"id": scene_id, "device": device, "outcome": outcome, "runs": 5, "complete_runs": 5,
            "regression": regression, "correctness": correctness or {"outcome": "passed", "frames": [],
                                                                     "invariants": []}, "issues": issues or []}


def regressed(effect: float = 1.3, baseline: str = "history: 10 launches") -> dict:
    return {"verdict": "regressed", "source": "history", "baseline": baseline, "message": "scene verdict: regressed",
            "metrics": [metric("cpu_ms.p50", "regressed", effect), metric("jank_share", "same", 1.0)]}


def document(scenes: list[dict], **extra) -> dict:
    return {"run_id": "0123456789abcdef", "started_utc": "2026-12-01T10:00:00+00:00",
            "app": {"build_hash": "c0ffee" * 7, "dirty": False}, "devices": {"pi3b": {}}, "quarantined": {},
            "scenes": scenes, **extra}


GOLDEN_FAILED = {"outcome": "failed", "invariants": ["runner reported gl_error at frame 3: GL_OUT_OF_MEMORY"], "frames": [
    {"frame": 0, "status": "failed", "message": "golden mismatch (1 gate failed):\n  max_pixels: 312 (allowed 40)",
     "tightness": {"max_delta": {"observed": 9, "bound": 2, "ratio": 4.5},
                   "max_pixels": {"observed": 312, "bound": 40, "ratio": 7.8},
                   "flip_mean": {"observed": 0.01, "bound": None, "ratio": None}},
     "artifacts": {"diff": "pi3b/fill.x4/golden/frame-0-diff.png", "actual": "pi3b/fill.x4/golden/frame-0-actual.png"}},
    {"frame": 10, "status": "passed", "tightness": {}, "artifacts": {}},
    {"frame": 15, "status": "failed", "message": "golden mismatch", "tightness": {"max_delta": {"bound": 0, "ratio": None}},
     "defect": {"failures": [{"metric": "exact", "observed": "pixels differ (1581 pixels, max delta 242)",
                              "bound": "identical pixels"}]}, "artifacts": {}},
    {"frame": 20, "status": "missing", "message": "frame 20: no golden at goldens/x.png. Record it", "artifacts": {}},
]}


def test_sections_in_order_with_their_numbers():
    inconclusive = {"verdict": "inconclusive", "source": "ab", "baseline": "A (/opt/zinc/zinc-bench)", "message": "",
                    "metrics": [metric("cpu_ms.p95", "inconclusive", 1.12, more_launches=4, n_baseline=3,
                                       n_candidate=3), metric("cpu_ms.p50", "same", 1.01)]}
    hopeless = {"verdict": "inconclusive", "source": "history", "baseline": "h", "message": "",
                "metrics": [metric("cpu_ms.p50", "inconclusive", 1.15, more_launches=None)]}
    scenes = [
        scene("text.labels", outcome="passed", regression={"verdict": "same", "metrics": []}),
        scene("fill.alpha.x4", outcome="failed", regression=regressed(1.3)),
        scene("fill.x4", correctness=GOLDEN_FAILED),
        scene("scroll.list", regression=inconclusive),
        scene("scroll.hopeless", regression=hopeless),
        scene("idle.static", outcome="failed", issues=[{"kind": "timeout", "detail": "runner killed at its 60 s deadline"}]),
    ]
    doc = document(scenes, quarantined={"nexus7": "device nexus7 is unusable: adb: device offline"})
    markdown = render_summary([doc], title="zbench pi3b", links=[Link("zbench-pi3b-1", "https://example.org/runs/7#artifacts")],
                              notes=["History gate on `pi3b`"])
    lines = markdown.splitlines()
    assert lines[0] == "## zbench pi3b: 1 regressed, 1 perf failed, 1 golden failed, 2 inconclusive"
    headings = [line for line in lines if line.startswith("### ")]
    assert headings == ["### Regressed (1 scene(s), 1 metric(s))", "### Perf tests failed (not a regression) (1)", "### Golden failures (4)",
                        "### Inconclusive (2)", "### Quarantined devices (1)", "### Artifacts"]
    row = next(line for line in lines if line.startswith("| fill.alpha.x4 "))
    assert "cpu_ms.p50" in row and "**1.300x** (+30.0%)" in row and "1.235x..1.365x" in row and "0.004" in row
    assert "1.000 → 1.300 ms" in row and "history: 10 launches of 2 runs in history.sqlite" in row
    assert "jank_share" not in markdown  # a metric that did not regress is not listed
    golden = [line for line in lines if line.startswith("| fill.x4 ")]
    assert "max_delta: 9 (allowed 2), max_pixels: 312 (allowed 40)" in golden[1] and "`pi3b/fill.x4/golden/frame-0-diff.png`" in golden[1]
    assert "invariant" in golden[0] and "GL_OUT_OF_MEMORY" in golden[0]
    assert "exact: pixels differ (1581 pixels, max delta 242) (allowed identical pixels)" in golden[2]
    assert "missing" in golden[3] and "no golden at goldens/x.png" in golden[3]
    assert not any("| 10 |" in line for line in golden)
    assert "| scroll.list | pi3b | cpu_ms.p95 | 3 | about 7 (`--zbench-runs=7`) | ab: A (/opt/zinc/zinc-bench) |" in lines
    assert any(line.startswith("| scroll.hopeless ") and "50 or more" in line for line in lines)
    assert "| idle.static | pi3b | 5/5 | [timeout] runner killed at its 60 s deadline |" in lines
    assert "| nexus7 | device nexus7 is unusable: adb: device offline |" in lines
    assert "- [zbench-pi3b-1](https://example.org/runs/7#artifacts)" in lines
    assert "> History gate on `pi3b`" in lines
    counts = lines[lines.index(next(l for l in lines if l.startswith("| scenes |"))) + 2]
    assert counts == "| 6 | 4 | 2 | 0 | 1 | 0 | 1 | 2 | 0 | 5 | 1 |"


def test_cells_cannot_break_the_table_or_inject_html():
    regression = regressed(2.0)
    regression["metrics"][0]["baseline"] = "a|b\n<script>x</script>"
    doc = document([scene("evil", outcome="failed", regression=regression)])
    row = next(line for line in render_summary([doc]).splitlines() if line.startswith("| evil "))
    assert "a\\|b &lt;script&gt;x&lt;/script&gt;" in row and "<script>" not in row
    assert row.count(" | ") == 7


def test_a_clean_run_says_nothing_failed():
    markdown = render_summary([document([scene("a"), scene("b")])])
    assert markdown.splitlines()[0] == "## zbench: 2 scene(s), nothing failed"
    assert "### Regressed" not in markdown


def test_a_huge_run_stays_under_githubs_limit_and_says_what_it_left_out():
    regression = regressed(1.5)
    regression["metrics"][0]["baseline"] = "baseline " + "x" * 2000
    scenes = [scene(f"fill.sweep.x{i}", outcome="failed", regression=regression, correctness=GOLDEN_FAILED)
              for i in range(40_000)]
    doc = document(scenes, quarantined={f"dev{i}": "r" * 500 for i in range(5000)})
    markdown = render_summary([doc, doc], links=[Link("a", "https://example.org/a")])
    size = len(markdown.encode("utf-8"))
    assert size < GITHUB_SUMMARY_LIMIT
    assert size > GITHUB_SUMMARY_LIMIT * 0.8  # the budget is used, not thrown away
    lines = markdown.splitlines()
    assert lines[0] == "## zbench: 80000 regressed, 80000 golden failed"
    # Sections after the first that fills the budget still say how many rows they had, and what they left out.
    for heading in ("### Regressed (80000 scene(s), 80000 metric(s))", "### Golden failures (320000)", "### Quarantined devices (10000)"):
        at = lines.index(heading)
        note = next(line for line in lines[at:] if line.startswith("_"))
        assert note.endswith("more row(s) left out to keep the summary under GitHub's 1 MiB; run.json has all._")
    assert lines[-1] == "- each artifact holds `run.json` (every number), `report.html` (charts, golden diffs), " \
                        "`junit.xml` and the per-frame CSVs" and "- [a](https://example.org/a)" in lines
    assert all(len(line) < 4000 for line in lines)


def test_summary_command_prints_or_appends(tmp_path, capsys):
    run = tmp_path / "run.json"
    run.write_text(json.dumps(document([scene("fill.alpha.x4", outcome="failed", regression=regressed())])))
    assert main(["summary", str(run), "--title", "lab", "--link", "run=https://example.org/r"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("## lab: 1 regressed") and "- [run](https://example.org/r)" in out
    summary = tmp_path / "step_summary.md"
    summary.write_text("earlier\n")
    assert main(["summary", str(run), str(run), "--out", str(summary)]) == 0
    text = summary.read_text()
    assert text.startswith("earlier\n## zbench: 2 regressed") and "### Regressed (2 scene(s), 2 metric(s))" in text
    assert main(["summary", str(tmp_path / "missing.json")]) == 2
    assert "not a readable run.json" in capsys.readouterr().err
    assert main(["summary", str(run), "--link", "no-url"]) == 2
    assert "expected TEXT=URL" in capsys.readouterr().err


def test_an_inconclusive_sequential_scene_is_advised_the_sequential_gates_option():
    """The sequential gate takes no --zbench-runs (a usage error under --zbench-budget): its maximum is advised."""
    inconclusive = {"verdict": "inconclusive", "source": "ab", "baseline": "ab: A", "message": "",
                    "metrics": [dict(metric("cpu_ms.p95", "inconclusive", 1.1), n_baseline=12, n_candidate=12,
                                     more_launches=9)]}
    sequential = dict(scene("scroll.list", regression=inconclusive), sequential={"stopped": "futile"})
    lines = render_summary([document([sequential])]).splitlines()
    assert any("| scroll.list |" in line and "about 21 (`--zbench-max-launches=21`)" in line for line in lines), lines
