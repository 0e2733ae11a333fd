"""The report's overview (each verdict with its effect and interval, sorted and filtered in headless Chromium),
its links to the full-size golden images, the baseline's distribution in the CDF, the host load in the busy-host
guard's own figures, the golden triage commands per image; and the terminal's one line for the corpus analyses.
docs/report.md."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from browser import load
from PIL import Image

from pytest_zbench.host.report import charts
from pytest_zbench.host.report.counters import counters_line
from pytest_zbench.host.report.html import write_report
from pytest_zbench.host.report.overview import effect_text, headline
from pytest_zbench.host.report.terminal_table import analysis_line
from pytest_zbench.host.run_record import validate_run
from pytest_zbench.host.verdicts.perf_gate import QUANTILE_LEVELS, frame_quantiles
from pytest_zbench.regression import contention
from pytest_zbench.regression.gate import GateConfig, judge

RECT = '{op: rect, x: 1, y: 1, w: "100% - 2", h: "100% - 2", color: "#3366CC80"}'


def _scene(device: str, scene: str, verdict: str, effect: float, ci: tuple[float, float]) -> dict:
    metric = {"metric": "cpu_ms.p50", "verdict": verdict, "effect": effect, "ci": list(ci), "bar": 0.15,
              "message": f"cpu_ms.p50 {verdict}"}
    return {"id": scene, "device": device, "runs": 3, "complete_runs": 3, "outcome": "passed",
            "metrics": {"cpu_ms": {"p50": 1.0 * effect}, "frame_ms": {"p50": 16.7}},
            "regression": {"verdict": verdict, "source": "history", "baseline": "5 runs", "metrics": [metric],
                           "message": "m"}}


DOCUMENT = {"run_id": "r", "started_utc": "t", "app": {}, "gpu": {}, "display": {}, "device": {"id": "a"},
            "devices": {"a": {}, "b": {}},
            "scenes": [_scene("a", "fill.x1", "regressed", 1.5, (1.2, 1.9)),
                       _scene("a", "fill.x2", "inconclusive", 25.0, (0.9, 700.0)),
                       _scene("b", "fill.x1", "same", 1.01, (0.98, 1.04)),
                       _scene("b", "text.a", "improved", 0.4, (0.3, 0.5))]}

# Beside the report: drives its filter form and header the way a person would, and writes what is shown.
PROBE = """<!doctype html><meta charset=utf-8><iframe id=r src="report.html" width=1300 height=900></iframe>
<pre id=found></pre><script>
document.getElementById('r').addEventListener('load', () => {
  const d = document.getElementById('r').contentDocument, f = d.getElementById('scene-filters');
  const shown = () => [...d.querySelectorAll('#scenes tbody tr')].filter(r => !r.hidden)
    .map(r => r.dataset.device + '/' + r.dataset.scene);
  const set = (name, value, kind) => { f[name].value = value; f[name].dispatchEvent(new Event(kind, {bubbles: true})); };
  const out = {all: shown()};
  set('verdict', 'inconclusive', 'change'); out.inconclusive = shown(); set('verdict', '', 'change');
  set('device', 'b', 'change'); out.device_b = shown(); set('device', '', 'change');
  set('scene', 'FILL', 'input'); out.fill = shown(); set('scene', '', 'input');
  set('effect', '2', 'input'); out.far = shown(); out.count = d.getElementById('scene-count').textContent;
  set('effect', '', 'input');
  const effect = d.querySelector('#scenes th[data-key=effect]');
  effect.click(); out.up = shown(); effect.click(); out.down = shown();
  d.querySelector('#scenes th[data-key=verdict]').click(); out.by_verdict = shown();
  document.getElementById('found').textContent = JSON.stringify(out);
});
</script>"""


def test_the_overview_shows_each_verdict_with_its_effect_and_interval():
    inconclusive = DOCUMENT["scenes"][1]["regression"]
    assert effect_text(headline(inconclusive)) == "25.000x [0.900x..700.000x] cpu_ms.p50"
    assert effect_text(headline({"verdict": "same", "metrics": [{"metric": "m", "verdict": "same", "effect": 1.2,
                                                                  "ci": None}]})) == "1.200x [no interval] m"
    assert headline({"verdict": "no_baseline", "metrics": []}) is None and effect_text(None) == ""
    # The metric the verdict is about, not merely the first: a scene regressed on p95 shows p95's effect.
    section = {"verdict": "regressed", "metrics": [{"metric": "cpu_ms.p50", "verdict": "same", "effect": 1.0},
                                                   {"metric": "cpu_ms.p95", "verdict": "regressed", "effect": 2.0}]}
    assert headline(section)["metric"] == "cpu_ms.p95"


def test_the_overview_sorts_and_filters_in_a_real_browser(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    report = write_report(DOCUMENT, results, results / "report.html")
    text = report.read_text()
    row = re.search(r"<tr [^>]*data-scene='fill.x2'[^>]*>.*?</tr>", text).group(0)
    assert ">inconclusive</td>" in row and "25.000x [0.900x..700.000x] cpu_ms.p50</td>" in row and "data-effect='25.0'" in row
    assert "src=" not in text.split("<script>", 1)[1].split("</script>", 1)[0]  # inline, nothing fetched
    (results / "probe.html").write_text(PROBE)
    loaded = load(results / "probe.html", tmp_path / "profile")
    assert loaded.console == []
    found = json.loads(loaded.dom.split("<pre id=\"found\">", 1)[1].split("</pre>", 1)[0])
    assert found["all"][0] == "a/fill.x1" and len(found["all"]) == 4  # regressed first
    assert found["inconclusive"] == ["a/fill.x2"]
    assert sorted(found["device_b"]) == ["b/fill.x1", "b/text.a"]
    assert sorted(found["fill"]) == ["a/fill.x1", "a/fill.x2", "b/fill.x1"]  # a part of the id, any case
    # At least 2x away from 1 either way: 25x slower and 0.4x (2.5x faster).
    assert sorted(found["far"]) == ["a/fill.x2", "b/text.a"] and found["count"] == "2 of 4 scene(s) shown"
    assert found["up"] == ["b/text.a", "b/fill.x1", "a/fill.x1", "a/fill.x2"]
    assert found["down"] == found["up"][::-1]
    assert found["by_verdict"][:2] == ["a/fill.x1", "a/fill.x2"]  # regressed, then inconclusive


def _png(path: Path, colour: tuple[int, int, int, int]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGBA", (32, 24), colour).save(path)
    return str(path)


def test_golden_images_link_to_their_full_size_pngs_relative_to_the_report(tmp_path):
    results = tmp_path / "results"
    kinds = {"expected": (0, 0, 255, 255), "actual": (255, 0, 0, 255), "diff": (80, 80, 80, 255)}
    artifacts = {k: f"dev/s/golden/frame-0-{k}.png" for k in kinds}
    for kind, colour in kinds.items():
        _png(results / artifacts[kind], colour)
    outside = _png(tmp_path / "elsewhere" / "actual.png", (0, 255, 0, 255))
    frames = [{"frame": 0, "status": "failed", "artifacts": artifacts, "metrics": {"bbox": [0, 0, 4, 4]}},
              {"frame": 1, "status": "missing", "artifacts": {"actual": outside}}]
    document = dict(DOCUMENT, scenes=[{"id": "s", "device": "dev", "runs": 1, "outcome": "passed",
                                       "correctness": {"outcome": "failed", "frames": frames}}])
    for report in (results / "report.html", tmp_path / "out" / "page.html"):  # `zbench report --out`
        report.parent.mkdir(exist_ok=True)
        text = write_report(document, results, report).read_text()
        hrefs = re.findall(r"<a href='([^'#]+)' target=_blank", text)
        assert len(hrefs) == 3  # expected, actual, diff; not the image outside the results folder
        assert all(not Path(h).is_absolute() for h in hrefs)
        assert sorted((report.parent / h).resolve() for h in hrefs) == sorted(
            (results / a).resolve() for a in artifacts.values())
        assert "alt='capture of frame 1'" in text  # still shown, inlined, only not linked


def test_the_cdf_draws_the_baseline_quantiles_beside_the_candidate_frames():
    # Launch summaries as the history keeps them; the median over launches of each level.
    baseline = [{"cpu_ms": {"min": 1.0 + k, "p50": 2.0 + k, "p90": 3.0, "p95": 3.5, "p99": 4.0, "p999": 4.5,
                            "max": 5.0 + k}} for k in range(3)]
    candidate = [{"cpu_ms": {"min": 1.5, "p50": 2.5, "p90": 3.5, "p95": 4.0, "p99": 4.5, "p999": 5.0, "max": 6.0}}]
    found = frame_quantiles(baseline, candidate)
    assert list(found) == ["cpu_ms"]  # no gpu_ms on either side
    entry = found["cpu_ms"]
    assert entry["levels"] == [level for _, level in QUANTILE_LEVELS] == [0.0, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0]
    assert entry["baseline"] == pytest.approx([np.median([1, 2, 3]), 3.0, 3.0, 3.5, 4.0, 4.5, 6.0], rel=1e-9)
    assert entry["n_baseline"] == 3 and entry["candidate"][-1] == 6.0 and entry["n_candidate"] == 1
    reference = charts.Quantiles("baseline cpu_ms", entry["levels"], entry["baseline"])
    svg = charts.cdf([charts.Series("launch 0", [2.0, 2.5, 3.0, 7.0])], budget=16.7, x_label="ms", caption="c",
                     references=[reference])
    assert svg.count("<g class=reference>") == 1 and svg.count("<circle") == 7 and ">baseline cpu_ms</text>" in svg
    assert "99.9 % of frames ≤ 4.500 ms" in svg


def test_the_host_load_line_says_the_figure_the_busy_host_verdict_names():
    """A mean of 0.2 preemptions per frame printed as a whole number read '0' beside a verdict naming 16.7 % of
    frames preempted: both are now the guard's preempted share."""
    rng = np.random.default_rng(3)

    def launch(p95: float, preempted: float) -> dict:
        return {"cpu_ms": {"p50": 0.2 * float(np.exp(rng.normal(0, 0.02))),
                           "p95": p95 * float(np.exp(rng.normal(0, 0.03)))},
                "gpu_ms": None, "gpu_source": None, "jank_share": 0.0, "preempted_share": preempted}

    base = [[launch(0.4, 0.004) for _ in range(5)] for _ in range(5)]
    busy = [launch(4.0, share) for share in (0.1, 0.2, 0.2)]  # mean 16.7 %
    guarded = contention.guard(judge(base, busy, GateConfig(metrics=("cpu_ms.p50", "cpu_ms.p95"))),
                               [x for s in base for x in s], busy)
    (note,) = [n for n in guarded.notes if n.startswith("busy host")]
    assert "16.7% of the candidate's measured frames were preempted" in note
    line = counters_line({"per_run": busy, "metrics": {"counters": {"preemptions": 0.2, "draw_calls": 8.0}}})
    assert "preempted frames 16.7% of measured frames" in line and "preemptions 0" not in line
    assert "draw_calls 8" in line and "mean over 3 launch(es)" in line
    assert "host load" not in counters_line({"per_run": [{"preempted_share": None}], "metrics": {}})


def test_untriaged_images_show_their_exact_accept_and_reject_commands(tmp_path):
    accept = "zbench goldens accept /r --device dev --scene s --frame 0"
    reject = "zbench goldens reject /r --device dev --scene s --frame 0 --reason 'WHAT IS WRONG'"
    frame = {"frame": 0, "status": "missing", "digest": "ab" * 32, "triage": "untriaged", "accept": accept,
             "reject": reject, "artifacts": {}}
    document = dict(DOCUMENT, scenes=[{"id": "s", "device": "dev", "runs": 1, "outcome": "passed",
                                       "correctness": {"outcome": "failed", "frames": [frame]}}])
    text = write_report(document, tmp_path, tmp_path / "report.html").read_text()
    assert f"<code>{accept}</code>" in text and "<code>zbench goldens reject /r --device dev --scene s --frame 0 " \
                                              "--reason &#x27;WHAT IS WRONG&#x27;</code>" in text
    assert "triage: <b>untriaged</b>, capture digest <code>abababababab</code>" in text
    passed = dict(frame, status="passed", triage=None, accept=None, reject=None)
    assert "triage-command" not in write_report(dict(document, scenes=[dict(document["scenes"][0], correctness={
        "outcome": "passed", "frames": [passed]})]), tmp_path, tmp_path / "r2.html").read_text()


def test_the_corpus_analyses_are_one_line():
    isolation = [{"family": f"f{k}.x{{n}}", "verdict": "not_scaling" if k < 5 else "scales"} for k in range(8)]
    differentials = [{"verdict": v} for v in ("costs", "costs", "inconclusive", "no_difference")]
    line = analysis_line(isolation, differentials)
    assert line is not None and "\n" not in line and len(line) < 200
    assert line.startswith("analysis: 5 sweep(s) do not scale (f0.x{n}, f1.x{n}, f2.x{n}, ...); 4 differential "
                           "pair(s): 2 costs, 1 inconclusive, 1 no difference")
    assert analysis_line([{"family": "f", "verdict": "scales"}], []) is None


def test_a_session_prints_one_analysis_line_and_its_details_under_v(project):
    """A differential pair measured for real: one summary line at the end of the session; -v adds the pair's
    own line; run.json and its schema hold the pair either way."""
    project.write_scene("pair.yaml", "family: pair\nscenes:\n  - {id: pair.plain, ops: [" + RECT + "]}\n"
                        "  - {id: pair.twice, differential: {minus: pair.plain, feature: a second rect}, ops: ["
                        + RECT + ", " + RECT + "]}\n")
    quiet = project.run("--zbench-device=local", "-k", "pair")
    quiet.assert_outcomes(passed=2)
    lines = quiet.stdout.lines
    assert sum(line.startswith("analysis: 1 differential pair(s): ") for line in lines) == 1
    assert not any(line.startswith("differential: ") or line.startswith("  differential: ") for line in lines)
    document = project.run_json()
    assert validate_run(document) == [] and len(document["differentials"]) == 1
    verbose = project.run("--zbench-device=local", "-k", "pair", "-v")
    assert any(line.startswith("  differential: pair.twice - pair.plain on local: a second rect: ")
               for line in verbose.stdout.lines)


def test_report_html_writes_a_thin_baselines_interval_clipped_as_the_terminal_does(tmp_path):
    """A bootstrap over a thin baseline gives ends like 2e-08 and 3e13: every view writes them as the
    terminal does (regression.gate.ratio_text), never as the raw numbers."""
    wild = _scene("a", "fill.x1", "inconclusive", 1.5, (2e-08, 29862888165460.14))
    wild["regression"]["metrics"][0].update(baseline_median=1.0, candidate_median=1.5, p=0.4)
    text = write_report(dict(DOCUMENT, scenes=[wild]), tmp_path, tmp_path / "report.html").read_text()
    assert text.count("&lt;0.001x..&gt;1000x") >= 3  # the overview, the effects chart, the metric's words
    for raw in ("2e-08", "29862888165460", "2.99e+13", "0.000x"):
        assert raw not in text, raw
