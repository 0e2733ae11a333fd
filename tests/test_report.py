"""report.html and the traces of a real session: a scene with a baseline, one with a missing golden, one with
a failing golden, loaded in headless Chromium (layout, images decoded, no console message) and screenshotted
for a person to look at; plus the report's rules on plain values."""

from __future__ import annotations

import json
import re
import shutil

from browser import load, screenshot
from PIL import Image
from trace_format import problems

from pytest_zbench.cli import main
from pytest_zbench.host.report import charts
from pytest_zbench.host.report.html import _issues, _regression, overall, write_report
from pytest_zbench.host.run_record import validate_run

# Run in the report's folder next to it: reads the rendered report's DOM and layout, writes what it found.
PROBE = """<!doctype html><meta charset=utf-8><iframe id=r src="report.html" width=1300 height=900></iframe>
<pre id=found></pre><script>
document.getElementById('r').addEventListener('load', () => {
  const d = document.getElementById('r').contentDocument;
  const images = [...d.images];
  const box = e => e.getBoundingClientRect();
  document.getElementById('found').textContent = JSON.stringify({
    sections: [...d.querySelectorAll('section')].map(s => [s.id, s.dataset.result]),
    rows: [...d.querySelectorAll('#scenes tr[data-result]')].map(r => r.dataset.result),
    images: images.length, decoded: images.filter(i => i.complete && i.naturalWidth > 0).length,
    charts: [...d.querySelectorAll('figure.chart svg')].map(s => [s.closest('figure').className, box(s).width,
                                                                    box(s).height]),
    ticks: d.querySelectorAll('figure.chart text.tick').length,
    zoomed: [...d.querySelectorAll('figure.zoom svg')].map(s => box(s).width),
    blink: d.querySelectorAll('.blink img').length,
    strip_rows: [...d.querySelectorAll('figure.strips text.strip-label')].map(t => t.textContent),
    notes: [...d.querySelectorAll('p.note')].filter(p => p.textContent.startsWith('History')).length,
    review: d.querySelectorAll('.review img').length,
    width: d.documentElement.scrollWidth,
  });
});
</script>"""


def test_the_report_of_a_real_session_in_a_real_browser(project, tmp_path, record_property):
    history = f"--zbench-history={tmp_path / 'history.sqlite'}"
    # A first session of one scene: its golden and the baseline of the next.
    project.run("--zbench-device=local", "-k", "mini.fill.x1", "--zbench-update-goldens=missing", history,
                goldens=True).assert_outcomes(passed=2)
    wrong = project.root / "goldens/software/x86_64/round.one/frame-0.png"
    wrong.parent.mkdir(parents=True)
    Image.new("RGBA", (64, 48), (255, 255, 255, 255)).save(wrong)  # no rounded rect: a region differs
    # Interleaved A/B against the same runner: one session is enough for a verdict with an interval (a second
    # session against one baseline session is inconclusive, with no interval to draw).
    result = project.run("--zbench-device=local", history, "--zbench-ab=python -m pytest_zbench.runner",
                         goldens=True)
    result.assert_outcomes(passed=4, failed=2)  # the golden of round.one (wrong) and of mini.fill.x2 (none)

    document = project.run_json()
    scenes = {s["id"]: s for s in document["scenes"]}
    assert scenes["mini.fill.x1"]["regression"]["metrics"]  # judged A/B
    for scene in document["scenes"]:
        trace = json.loads((project.results / "local" / f"{scene['id']}.trace.json").read_text())
        assert problems(trace) == [], scene["id"]

    report = project.results / "report.html"
    text = report.read_text()
    # Offline, one file: the overview's script is inline; links only to the images beside the page.
    assert "src='http" not in text and "<script src" not in text and "<link" not in text
    assert validate_run(document) == []
    hrefs = set(re.findall(r"<a href='([^'#]+)' target=_blank", text))
    assert len(hrefs) >= 4 + 1 and all((project.results / h).is_file() for h in hrefs)  # triage, review
    assert re.search(r"href='local/round.one/golden/frame-0-actual.png'[^>]*><img src='data:[^']*' "
                     r"alt='actual of frame 0'", text)
    assert "reject it (say why in --reason): <code>zbench goldens reject " in text
    # The overview row's verdict with its effect and interval; B's quantiles in the CDF beside A's frames.
    assert re.search(r"<td class='effect [a-z_]+' title='[^']*'>(&[lg]t;)?[0-9.]+x \[(&[lg]t;)?[0-9.]+x\.\.(&[lg]t;)?[0-9.]+x\] "
                     r"cpu_ms", text)
    assert text.count("<g class=reference>") == 3 and "B (candidate) cpu_ms, median of its 2 launches" in text
    (project.results / "probe.html").write_text(PROBE)
    loaded = load(project.results / "probe.html", tmp_path / "profile")
    assert loaded.console == []
    found = json.loads(loaded.dom.split("<pre id=\"found\">", 1)[1].split("</pre>", 1)[0])
    # Failed first (round.one's golden, then mini.fill.x2's missing one), the passing scene last.
    assert [s[1] for s in found["sections"]] == ["failed", "missing", "passed"]
    assert found["rows"] == ["failed", "missing", "passed"]
    assert found["images"] >= 4 + 2 + 1 and found["decoded"] == found["images"]  # triage, blink, review
    assert found["blink"] == 2 and found["review"] == 1 and len(found["zoomed"]) == 3
    kinds = [c[0] for c in found["charts"]]
    assert kinds.count("chart effects") >= 1 and kinds.count("chart cdf") == 3 and kinds.count("chart timeline") == 3
    # Each judged metric's A and B launches overlaid; mini.fill.x1's history: the first session's run (A/B runs
    # are not in it), the other scenes have none yet and say so.
    assert kinds.count("chart strips") >= 3 and found["strip_rows"][:2] == ["A", "B"]
    assert kinds.count("chart history") == 1 and found["notes"] >= 2
    assert all(w > 300 and h > 100 for _, w, h in found["charts"]) and all(w > 100 for w in found["zoomed"])
    assert found["ticks"] > 5 * len(found["charts"])
    assert found["width"] <= 1300  # nothing wider than the window

    # `zbench report RUN.json` makes the same page and traces again from the results folder.
    shown = text.split("<body>", 1)[1]
    report.unlink()
    for trace in (project.results / "local").glob("*.trace.json"):
        trace.unlink()
    assert main(["report", str(project.results / "run.json")]) == 0
    assert report.read_text().split("<body>", 1)[1] == shown
    assert len(list((project.results / "local").glob("*.trace.json"))) == 3

    png = screenshot(report, project.results / "report.png", tmp_path / "profile")
    assert png.stat().st_size > 20_000
    kept = shutil.copy(png, tmp_path / "report.png")
    record_property("screenshot", str(kept))
    print(f"report screenshot: {kept}")


def test_overall_result_and_order_put_attention_first():
    def scene(outcome, verdict, golden):
        return {"outcome": outcome, "regression": {"verdict": verdict},
                "correctness": {"outcome": "failed" if golden in ("failed", "missing") else "passed",
                                "frames": [{"status": golden}]}}

    assert overall(scene("passed", "regressed", "passed")) == "regressed"
    assert overall(scene("passed", "inconclusive", "passed")) == "passed"  # not a failure, not hidden either
    assert overall(scene("passed", "unchanged", "missing")) == "missing"
    assert overall(scene("failed", "regressed", "missing")) == "failed"
    assert overall({"outcome": "passed", "correctness": {"outcome": "failed", "frames": [{"status": "passed"}],
                                                         "invariants": ["runner reported nan"]}}) == "failed"


def test_issues_are_grouped_by_launch_and_repeats_counted():
    issues = [{"kind": "gl_error", "detail": "0x502", "launch": 0}, {"kind": "gl_error", "detail": "0x502", "launch": 0},
              {"kind": "timeout", "detail": "killed", "launch": 2}]
    text = _issues(issues)
    assert text.index("launch 0") < text.index("0x502 (×2)") < text.index("launch 2") < text.index("killed")
    assert _issues([]) == ""


def test_charts_clip_cold_frames_and_mark_them():
    values = [2.0] * 99 + [960.0]
    assert charts.clip_top(values, 16.7) < 30  # the budget with room, not the cold frame
    svg = charts.timeline([charts.Series("launch 0", values)], budget=16.7, warmup=0, y_label="cpu_ms", caption="c")
    assert svg.count("class=outlier") == 1 and "960.00 ms (above the axis)" in svg and "1 frame(s) above" in svg
    cold = charts.timeline([charts.Series("launch 0", [280.0, 50.0] + [2.0] * 30)], budget=16.7, warmup=2,
                           y_label="cpu_ms", caption="c")
    assert cold.count("class=outlier") == 2  # warmup frames do not set the range either
    many = charts.timeline([charts.Series(f"launch {k}", [1.0, 2.0], charts.COLOURS[k]) for k in range(8)],
                           budget=None, warmup=0, y_label="cpu_ms", caption="c")
    assert "height='234'" in many  # eight launches' legend takes two rows: the plot moves down, nothing is cut
    cdf = charts.cdf([charts.Series("launch 0", values)], budget=16.7, x_label="ms", caption="c")
    assert "1 frame(s) beyond the axis" in cdf and "budget 16.70 ms" in cdf
    assert charts.nice_ticks(0, 17) == [0, 5, 10, 15] and charts.nice_ticks(0.6, 1.4) == [0.6, 0.8, 1.0, 1.2, 1.4]


def test_a_report_without_samples_or_verdicts_still_renders(tmp_path):
    document = {"run_id": "r", "started_utc": "t", "app": {}, "gpu": {}, "display": {}, "device": {"id": "d"},
                "scenes": [{"id": "s", "device": "d", "runs": 0, "outcome": "error", "samples_file": "missing.csv"}]}
    text = write_report(document, tmp_path, tmp_path / "report.html").read_text()
    assert "data-result='error'" in text and "<svg" not in text


def test_a_large_run_charts_its_first_scenes_in_attention_order_and_keeps_the_others_words(tmp_path, monkeypatch):
    import pytest_zbench.host.report.html as report_html

    monkeypatch.setattr(report_html, "CHARTED_SCENES", 2)
    metric = {"metric": "cpu_ms.p50", "verdict": "unchanged", "effect": 1.0, "ci": [0.9, 1.1], "bar": 0.15}
    scenes = [{"id": f"s{i}", "device": "d", "runs": 1, "outcome": "passed",
               "regression": {"verdict": "regressed" if i == 3 else "unchanged", "source": "history",
                              "baseline": "2 runs", "metrics": [metric]}} for i in range(4)]
    document = {"run_id": "r", "started_utc": "t", "app": {}, "gpu": {}, "display": {}, "device": {"id": "d"},
                "scenes": scenes}
    text = write_report(document, tmp_path, tmp_path / "report.html").read_text()
    sections = {m.group(1): m.group(2) for m in re.finditer(r"<section id='d--(s\d)'.*?>(.*?)</section>", text, re.S)}
    assert "<svg" in sections["s3"] and "<svg" in sections["s0"]  # the regressed scene first, then s0
    assert "<svg" not in sections["s1"] + sections["s2"] and "charts not drawn" in sections["s2"]
    assert "cpu_ms.p50" in sections["s2"] and "Charts are drawn for the first 2 scenes" in text


def test_strips_overlay_each_baseline_session_and_the_candidate_on_one_axis():
    rows = [charts.Strip("run 1a2b3c4d", [4.0, 4.1, 4.2], charts.BASELINE_COLOUR),
            charts.Strip("run 5e6f7a8b", [4.3, 4.2], charts.BASELINE_COLOUR),
            charts.Strip("candidate (this run)", [5.0, 5.1, 5.2], charts.CANDIDATE_COLOUR, highlight=True)]
    svg = charts.strips(rows, x_label="cpu_ms.p50 per launch (ms)", title="cpu_ms.p50: regressed, effect 1.22x",
                        title_colour="#b22222", legend=[("baseline, 2 session(s), 5 launches", "#1f77b4"),
                                                        ("candidate, 3 launches", "#ff7f0e")], caption="c")
    assert "cpu_ms.p50 per launch (ms)</text>" in svg and "regressed, effect 1.22x" in svg
    assert svg.count("class=legend-entry") == 2 and svg.count("class=strip-label") == 3
    assert svg.count("<circle") == 8 + 2 and svg.count("class=median") == 3  # 8 launches, 2 legend markers
    assert "class=tick>4.5</text>" in svg and "launch 2: 5.2" in svg
    assert charts.strips([charts.Strip("a", [], "#000")], x_label="x", title="t", title_colour="#000", legend=[],
                         caption="c") == ""


def test_history_marks_change_points_and_rings_this_run():
    points = [charts.HistoryPoint(4.0 if i < 6 else 5.0, f"11-{i + 1:02d}", f"run {i}", candidate=i == 11)
              for i in range(12)]
    svg = charts.history(points, [(6, "×1.250 at abc1234")], y_label="cpu_ms.p50 (ms)", caption="c")
    assert svg.count("class=change-point") == 1 and "×1.250 at abc1234</text>" in svg
    assert svg.count("class=candidate") == 1 and "cpu_ms.p50 (ms)</text>" in svg
    assert all(f">{label}</text>" in svg for label in ("this run", "change point", "11-12"))


def test_the_regression_section_draws_what_run_json_has_and_notes_what_it_lacks():
    metric = {"metric": "cpu_ms.p50", "verdict": "regressed", "effect": 1.2, "ci": [1.1, 1.3], "bar": 0.15,
              "confidence": 0.95}
    sessions = [{"run_id": f"r{i}", "build": "b", "started_utc": f"2026-11-{i + 1:02d}T00:00:00Z",
                 "value": 4.0 if i < 6 else 5.0, "candidate": i == 11} for i in range(12)]
    section = {"verdict": "regressed", "source": "history", "baseline": "2 runs", "metrics": [metric],
               "distributions": {"sessions": [{"label": "r0", "build": "b0"}, {"label": "r1", "build": None}],
                                 "metrics": {"cpu_ms.p50": {"baseline": [[4.0, 4.1], [4.2]], "candidate": [5.0]}}},
               "history_series": {"metric": "cpu_ms.p50", "sessions": sessions,
                                  "change_points": [{"index": 6, "magnitude": 1.25, "p_value": 0.005}]}}
    text = _regression({"regression": section})
    assert "figure class='chart strips'" in text and "figure class='chart history'" in text
    assert "run r0 b0</text>" in text and "run r1</text>" in text and "class=change-point" in text
    assert "step x1.250 (+25.0%) at build b" in text  # the change point in the words `zbench history` uses
    # An older run.json, or values that are not what the schema says: a one-line note each, never a crash.
    old = _regression({"regression": {k: v for k, v in section.items() if k not in ("distributions",
                                                                                    "history_series")}})
    assert "<svg" in old and "strips" not in old and "Per-launch values: not in this run.json" in old
    assert "History: no series" in old
    bad = dict(section, distributions={"metrics": {"cpu_ms.p50": {"baseline": "x"}}},
               history_series=dict(section["history_series"], change_points=[{"index": 99, "magnitude": 1,
                                                                              "p_value": 0}]))
    text = _regression({"regression": bad})
    assert "Per-launch values of cpu_ms.p50: missing" in text and "History: no series" in text


def test_a_wide_effect_interval_is_clipped_to_the_log_axis_with_arrows_and_keeps_its_numbers():
    wide = charts.Effect("cpu_ms.p95", "inconclusive", 2.95, (0.027, 317.7), 0.15)
    narrow = charts.Effect("cpu_ms.p50", "regressed", 1.3, (1.2, 1.4), 0.15)
    svg = charts.effects([wide, narrow], caption="c")
    assert svg.count("class=clipped") == 2  # both ends of the wide interval, none of the narrow one
    assert "CI 0.027x..317.700x" in svg and ">4x<" in svg and ">0.25x<" in svg and "log scale" in svg
    assert "317x" not in svg and ">300x<" not in svg  # no tick out at the interval's end
    assert "class=clipped" not in charts.effects([narrow], caption="c")
