"""report.html: one self-contained, offline page of a run (docs/report.md). A summary that sorts what needs
attention first (failed, regressed, goldens to review), then per scene: the regression verdict against its
baseline (each judged metric's per-launch values, baseline and candidate overlaid; the scene's history with its
change points), the frame-time distribution at full resolution with the budget, per-launch timelines robust to cold
frames, the vsync buckets, the golden triage view and the issues grouped by launch. Charts come from
host/report/charts.py; images are inlined, each linked to its full-size PNG relative to the page (so a
downloaded artifact keeps its links); the overview table sorts and filters with a few lines of inline script
(host/report/overview.py), the rest (zoom, blink) is CSS."""

from __future__ import annotations

import base64
import csv
import html
import os
import urllib.parse
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...json_types import is_number
from ...regression.changepoints import ChangePoint
from ...regression.config import metric_unit
from ...regression.gate import interval_text, ratio_text
from ...regression.verdict_words import CHART_COLOURS, NEUTRAL_COLOUR
from ...stats import HIST_EDGES_MS
from . import charts
from .builds import build_text
from .corpus import differentials_section, isolation_section
from .counters import counters_line
from .overview import anchor as _anchor
from .overview import category_cells, overview_table
from .overview import ms_text as _ms
from .overview import rank as _rank
from .sequential_looks import report_section as sequential_section
from .sustained import report_section as sustained_section
from .why_regressed import why_section

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{margin:0 0 4px}h2{margin:0 0 6px;font-size:18px}
table{border-collapse:collapse}td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right}
td:nth-child(-n+2),th:nth-child(-n+2){text-align:left}th{background:#f6f6f6}td.prose,th.prose{text-align:left}
.passed,.unchanged,.improved{color:#2a7a2a}.failed,.error,.regressed{color:#b22;font-weight:600}
.missing,.written,.inconclusive{color:#c77700}.skipped,.no_baseline,.not_judged{color:#777}
.badge{display:inline-block;padding:0 6px;margin-right:6px;border:1px solid currentColor;border-radius:3px;font-size:12px}
section{margin:28px 0;padding-top:10px;border-top:2px solid #eee}
.plots,.imgs{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
figure{margin:0}figcaption{font-size:12px;color:#555;max-width:560px}
.chart svg{background:#fcfcfc;border:1px solid #eee;font-size:11px}.chart .tick{fill:#555;font-size:10px}
.chart .axis-label{fill:#333;font-size:11px}.chart .legend-entry text{font-size:11px}
.chart .strip-label,.chart .change-label{font-size:10px;fill:#333}.chart .change-label{fill:#9467bd}
.imgs img,.zoom svg{image-rendering:pixelated;border:1px solid #ccc;background:repeating-conic-gradient(#ddd 0 25%,#fff 0 50%) 0 0/12px 12px}
.imgs img{width:300px}.zoom svg{width:300px;height:auto}
.blink-figure label{display:block;font-size:12px;margin-bottom:2px}
.blink{position:relative;display:inline-block}.blink img{display:block}
.blink img.actual{position:absolute;left:0;top:0;opacity:0}
.blink-toggle:checked+label+.blink img.actual{animation:blink 1s steps(1) infinite}
@keyframes blink{50%{opacity:1}}
.issues{font-size:13px}.issues li{color:#922}.words{font-size:13px;margin:4px 0 10px}
code{background:#f4f4f4;padding:0 3px}.note{color:#555;font-size:13px}
"""

# The charts (inline SVG, 20 to 30 kB a scene) are drawn for the first CHARTED_SCENES scenes in the order of
# attention (failures, regressions and inconclusive verdicts first); the scenes after them keep their verdicts,
# words and tables. Charting every scene of a run of 1,000 wrote a report of 25 MB that a browser takes long to
# open (bench/bench_scale.py; 10 MB is the bound).
CHARTED_SCENES = 200


def write_report(document: dict[str, Any], results_dir: Path, path: Path) -> Path:
    from ...side_by_side.page import CSS as ENGINES_CSS
    from ...side_by_side.page import report_section as engines_section

    scenes = sorted(document["scenes"], key=_attention_key)
    engines = engines_section(document, path.parent)  # a run on several devices: its engines side by side
    parts = [f"<!doctype html><html lang=en><meta charset=utf-8><title>zbench run "
             f"{html.escape(document['run_id'][:8])}</title>",
             f"<style>{CSS}{ENGINES_CSS if engines else ''}</style><body>", _header(document),
             _timer_checks(document), _summary(scenes), overview_table(scenes, _words), engines,
             isolation_section(document), differentials_section(document)]
    timed = not document.get("goldens_only")
    parts += [_scene_section(scene, results_dir, path.parent, timed=timed, charted=i < CHARTED_SCENES)
              for i, scene in enumerate(scenes)]
    parts.append("</body></html>")
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def overall(scene: dict[str, Any]) -> str:
    """The scene's result in one word: the worst of its perf outcome and its golden, or `regressed` (an
    inconclusive verdict does not hide a pass; it sorts before the passes that were judged)."""
    words = [str(scene.get("outcome") or ""), _golden_word(scene), "regressed" if _verdict(scene) == "regressed" else ""]
    return min((w for w in words if w), key=_rank, default="")


def _words(scene: Any) -> tuple[str, str, str]:
    """(verdict, golden, result): the overview table's words of a scene."""
    return _verdict(scene), _golden_word(scene), overall(scene)


def _attention_key(scene: dict[str, Any]) -> tuple[int, int, str, str]:
    return _rank(overall(scene)), _rank(_verdict(scene)), scene["device"], scene["id"]


def _verdict(scene: dict[str, Any]) -> str:
    return str((scene.get("regression") or {}).get("verdict") or "")


def _golden_word(scene: dict[str, Any]) -> str:
    correctness = scene.get("correctness") or {}
    statuses = [str(f.get("status")) for f in correctness.get("frames", [])]
    worst = min(statuses, key=_rank, default="")
    if correctness.get("outcome") == "failed" and _rank(worst) > _rank("failed") and worst != "missing":
        return "failed"  # an invariant or a cross-reference failed, not a frame of its own set
    return worst or str(correctness.get("outcome") or "")


def _header(doc: dict[str, Any]) -> str:
    app, gpu, display = doc["app"], doc["gpu"], doc["display"]
    devices = ", ".join(doc.get("devices", {}) or [doc["device"]["id"]])
    return (f"<h1>zbench run</h1><p>started {html.escape(doc['started_utc'])} · build "
            f"<code>{html.escape(str(app.get('build_hash') or 'unknown'))[:12]}</code>"
            f"{' (dirty)' if app.get('dirty') else ''} · devices {html.escape(devices)} · backend "
            f"{html.escape(gpu.get('backend', ''))} ({html.escape(str(gpu.get('gl_renderer', '')))}), timer "
            f"{html.escape(str(gpu.get('timer_source')))} · display {display.get('width')}×{display.get('height')} @ "
            f"{display.get('refresh_hz')} Hz</p>"
            + "".join(f"<p>A/B on {html.escape(device)}: B <code>{html.escape(build_text(sides.get('b')))}</code> "
                      f"against A <code>{html.escape(build_text(sides.get('a')))}</code></p>"
                      for device, sides in sorted((app.get("ab_builds") or {}).items()))
            + ("<p class=\"failed\"><strong>Interrupted:</strong> the session was stopped before its tests ran "
               "out; this report holds the scenes completed until then.</p>" if doc.get("interrupted") else "")
            + ("<p id=goldens-only class=note><strong>Goldens only:</strong> this run rendered the captures alone "
               "(--zbench-goldens-only, one frame per launch); timings were not measured, so none is charted.</p>"
               if doc.get("goldens_only") else ""))


def _timer_checks(doc: dict[str, Any]) -> str:
    """Per device with a GPU time source: its timer check, and why its gpu_ms is hidden when it failed."""
    items = []
    for name, sections in (doc.get("devices") or {}).items():
        check = (sections.get("gpu") or {}).get("timer_check")
        if not check:
            continue
        verdict = ("trusted" if check.get("valid") else
                   "<b>not trusted</b>: gpu_ms of this device is not shown or charted, and the regression gate "
                   "skips it")
        items.append(f"<li>{html.escape(name)}: GPU time source <code>{html.escape(str(check.get('source')))}"
                     f"</code> {verdict} ({html.escape(str(check.get('detail', '')))})</li>")
    if not items:
        return ""
    return ("<p>GPU timing: gpu_ms of different sources is never compared. Timer check (a light and an 8x heavier "
            "translucent fill must read clearly different GPU times):</p><ul>" + "".join(items) + "</ul>")


def _summary(scenes: Sequence[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for scene in scenes:
        word = overall(scene)
        counts[word] = counts.get(word, 0) + 1
    review = sum(1 for s in scenes for f in (s.get("correctness") or {}).get("frames", [])
                 if f.get("status") in ("missing", "written"))
    parts = [f"<b class='{html.escape(w)}'>{n} {html.escape(w.replace('_', ' '))}</b>"
             for w, n in sorted(counts.items(), key=lambda item: _rank(item[0]))]
    goldens = f"; {review} golden(s) to review (new or missing)" if review else ""
    charted = (f" Charts are drawn for the first {CHARTED_SCENES} scenes; the others have their verdicts and "
               "tables (their frames are in their CSV files and traces)." if len(scenes) > CHARTED_SCENES else "")
    return (f"<p id=summary>{len(scenes)} scene(s): {', '.join(parts)}{goldens}. Scenes that need attention "
            f"come first.{charted}</p>")


def _scene_section(scene: dict[str, Any], results_dir: Path, report_dir: Path, *, timed: bool = True,
                   charted: bool = True) -> str:
    """`timed`: the run measured its frames' times (not --zbench-goldens-only), so they are charted.
    `charted`: the scene is among the first CHARTED_SCENES, whose charts are drawn."""
    result = overall(scene)
    out = [f"<section id='{_anchor(scene)}' data-result='{html.escape(result)}'><h2>{html.escape(scene['id'])} on "
           f"{html.escape(scene['device'])} <span class='badge {html.escape(result)}'>{html.escape(result)}</span></h2>"]
    if scene.get("skipped"):
        out.append(f"<p class=skipped>skipped: {html.escape(scene['skipped'])}</p>")
    out.append(_regression(scene, charted=charted))
    out.append(sequential_section(scene))  # '' unless the sequential gate (--zbench-budget) judged it
    out.append(why_section(scene, results_dir))  # '' unless regressed or improved
    out.append(_plots(scene, results_dir) if timed and charted else "")
    if not charted:
        out.append(f"<p class=note>charts not drawn (past the first {CHARTED_SCENES} scenes)</p>")
    out.append(counters_line(scene))
    out.append(sustained_section(scene))  # '' unless the scene ran sustained
    if scene.get("gpu_valid") is False:
        out.append(f"<p class=issues>gpu_ms ({html.escape(str(scene.get('gpu_source')))}) not shown: the device's "
                   "GPU time source failed the timer check, so its values are not trusted (see the top of this "
                   "report).</p>")
    out.append(_platform_frames(scene.get("platform_frames")))
    out.append(_goldens(scene.get("correctness") or {}, results_dir, report_dir))
    out.append(_issues(scene.get("issues") or []))
    out.append("</section>")
    return "\n".join(part for part in out if part)


def _regression(scene: dict[str, Any], *, charted: bool = True) -> str:
    """The verdict, the baseline in words, each judged metric's effect with its interval and its per-launch
    values, and the scene's history (charted: False leaves out the charts, keeping the words)."""
    section = scene.get("regression")
    if not isinstance(section, dict):
        return ""
    verdict = str(section.get("verdict") or "")
    head = (f"<p class=regression>regression verdict: <b class='{html.escape(verdict)}'>"
            f"{html.escape(verdict.replace('_', ' '))}</b> ({html.escape(str(section.get('source') or ''))})")
    if verdict == "no_baseline" or not section.get("metrics"):
        message = str(section.get("message") or section.get("baseline") or "")
        return head + f": {html.escape(message)}</p>" + (_history(section) if charted else "")
    head += f"; baseline: {html.escape(str(section.get('baseline') or ''))}</p>"
    rows, words = [], []
    for m in section.get("metrics") or []:
        ci = m.get("ci") or [None, None]
        if all(isinstance(v, (int, float)) for v in (m.get("effect"), ci[0], ci[1], m.get("bar"))):
            rows.append(charts.Effect(str(m["metric"]), str(m.get("verdict")), float(m["effect"]),
                                      (float(ci[0]), float(ci[1])), float(m["bar"])))
            words.append(f"<li><b>{html.escape(str(m['metric']))}</b> <span class='{html.escape(str(m.get('verdict')))}'>"
                         f"{html.escape(str(m.get('verdict')))}</span>: candidate {_ms(m.get('candidate_median'))} vs "
                         f"baseline {_ms(m.get('baseline_median'))} (median of launches), effect "
                         f"{html.escape(ratio_text(m['effect']))}, {round(100 * (m.get('confidence') or 0.95))}% CI "
                         f"{html.escape(interval_text(ci[0], ci[1]))}, "
                         f"bar ±{100 * m['bar']:.1f}%, {m.get('n_candidate')} vs {m.get('n_baseline')} launches"
                         + (f". {html.escape(str(m['reason']))}" if m.get("reason") else "") + "</li>")
    for item in section.get("not_judged") or []:
        text = f"{item.get('metric')} not judged: {item.get('reason')}" if isinstance(item, dict) else str(item)
        words.append(f"<li class=not_judged>{html.escape(text)}</li>")
    words_list = "<ul class=words>" + "".join(words) + "</ul>" if words else ""
    if not charted:
        return head + words_list
    chart = charts.effects(rows, caption="effect of each judged metric: point = candidate / baseline, line = its "
                                         "confidence interval, shaded = the bar")
    return head + chart + words_list + _distributions(section, scene) + _history(section)


def _unit(metric: str, scene: dict[str, Any]) -> str:
    return metric_unit(metric) or str((scene.get("adaptive") or {}).get("unit") or "")


def _distributions(section: dict[str, Any], scene: dict[str, Any]) -> str:
    """Per judged metric, the per-launch values the gate judged on one axis: a row per baseline session (A/B:
    the A launches) and the candidate's row, with the effect, its interval and the verdict in words."""
    dist = section.get("distributions")
    if not isinstance(dist, dict) or not isinstance(dist.get("metrics"), dict):
        return ("<p class=note>Per-launch values: not in this run.json (an older version wrote it), so their "
                "chart is omitted.</p>")
    ab = section.get("source") == "ab"
    sessions: list[Any] = dist["sessions"] if isinstance(dist.get("sessions"), list) else []
    figures, missing = [], []
    for m in section.get("metrics") or []:
        if not isinstance(m, dict):
            continue
        name = str(m.get("metric"))
        try:
            values = dist["metrics"][name]
            baseline = [[float(v) for v in session] for session in values["baseline"]]
            candidate = [float(v) for v in values["candidate"]]
        except (KeyError, TypeError, ValueError):
            missing.append(name)
            continue
        rows = [charts.Strip(_session_label(sessions, i, ab), session, charts.BASELINE_COLOUR)
                for i, session in enumerate(baseline)]
        rows.append(charts.Strip("B" if ab else "candidate (this run)", candidate, charts.CANDIDATE_COLOUR,
                                 highlight=True))
        n_base = sum(len(s) for s in baseline)
        legend = ([(f"A (baseline), {n_base} launches", charts.BASELINE_COLOUR),
                   (f"B (candidate), {len(candidate)} launches", charts.CANDIDATE_COLOUR)] if ab else
                  [(f"baseline, {len(baseline)} session(s), {n_base} launches", charts.BASELINE_COLOUR),
                   (f"candidate, {len(candidate)} launches", charts.CANDIDATE_COLOUR)])
        verdict = str(m.get("verdict"))
        unit = _unit(name, scene)
        figures.append(charts.strips(
            rows, x_label=f"{name} per launch" + (f" ({unit})" if unit else ""),
            title=f"{name}: {verdict}, {_effect_words(m)}", title_colour=CHART_COLOURS.get(verdict, NEUTRAL_COLOUR),
            legend=legend, caption=f"{name} of each launch (a dot) and each row's median (a bar), as the gate judged "
                                   f"them: {verdict}, {_effect_words(m)}" + (f", bar ±{100 * m['bar']:.1f}%"
                                                                             if is_number(m.get("bar")) else "")))
    note = (f"<p class=note>Per-launch values of {html.escape(', '.join(missing))}: missing or not numbers in "
            "run.json, so their chart is omitted.</p>" if missing else "")
    figures = [f for f in figures if f]
    return ("<div class=plots>" + "".join(figures) + "</div>" if figures else "") + note


def _session_label(sessions: Sequence[Any], index: int, ab: bool) -> str:
    """A baseline row's label: A in A/B, else the session's run id and build, shortened to fit the row."""
    if ab:
        return "A"
    session = sessions[index] if index < len(sessions) and isinstance(sessions[index], dict) else {}
    run, build = str(session.get("label") or "?")[:8], str(session.get("build") or "")[:7]
    return f"run {run}" + (f" {build}" if build else "")


def _effect_words(m: dict[str, Any]) -> str:
    ci: list[Any] = m["ci"] if isinstance(m.get("ci"), list) and len(m["ci"]) == 2 else [None, None]
    if not is_number(m.get("effect")):
        return "no effect"
    interval = (f"{round(100 * (m.get('confidence') or 0.95))}% CI {interval_text(ci[0], ci[1])}"
                if is_number(ci[0]) and is_number(ci[1]) else "no interval")
    return f"effect {ratio_text(m['effect'])}, {interval}"


def _history(section: dict[str, Any]) -> str:
    """The scene's recent sessions in the history with their change points, this run's session ringed."""
    series: Any = section.get("history_series")  # read as run.json has it: anything missing is caught below
    try:
        metric = str(series["metric"])
        sessions = [dict(s, run_id=str(s["run_id"])) for s in series["sessions"]]
        steps = [ChangePoint(int(c["index"]), float(c["magnitude"]), float(c["p_value"]),
                             str(sessions[int(c["index"])].get("build") or ""), sessions[int(c["index"])]["run_id"],
                             str(sessions[int(c["index"])].get("started_utc") or ""))
                 for c in series["change_points"]]
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        return ("<p class=note>History: no series of this scene in run.json (no history was read), so its chart "
                "is omitted.</p>")
    points = []
    dates = [str(s.get("started_utc") or "")[5:10] for s in sessions]
    same_day = len(set(dates)) < len(dates)  # then the time tells the sessions apart: "12-01 16:29"
    for s in sessions:
        value, when, build = s.get("value"), str(s.get("started_utc") or ""), str(s.get("build") or "?")
        mine = s.get("candidate") is True
        points.append(charts.HistoryPoint(
            float(value) if is_number(value) else None, when[5:16].replace("T", " ") if same_day else when[5:10],
            f"run {s['run_id'][:8]}, build {build[:10]}, {when[:16]}: "
            + (f"{value:.4g}" if is_number(value) else "no value") + (" (this run)" if mine else ""), mine))
    unit = metric_unit(metric)
    found = "; ".join(c.describe() for c in steps) or "none found"
    own = "" if any(p.candidate for p in points) else "; this session's run is not among them (not recorded, or A/B)"
    chart = charts.history(points, [(c.index, f"×{c.magnitude:.3f}" + (f" at {c.build_hash[:7]}" if c.build_hash else ""))
                                    for c in steps],
                           y_label=metric + (f" ({unit})" if unit else ""),
                           caption=f"history: {metric} per session (the median of its launches), the newest "
                                   f"{len(points)} run(s) of this scene; change points: {found}{own}")
    if not chart:
        why = "with a value of this metric" if points else "(A/B runs are kept out of the series)"
        return f"<p class=note>History: no run of this scene in the history yet {why}, so no chart.</p>"
    return f"<div class=plots>{chart}</div>"


def _plots(scene: dict[str, Any], results_dir: Path) -> str:
    budget = scene.get("budget_ms")
    frames = _read_frames(results_dir, scene.get("samples_file"))
    plots = []
    adaptive = scene.get("adaptive")
    if adaptive is not None:
        plots.append(charts.adaptive_fit(adaptive))
    gpu_shown = scene.get("gpu_valid") is True
    if frames:
        launches = sorted(frames)
        warmup = max((sum(1 for row in rows if row["phase"] == "warmup") for rows in frames.values()), default=0)
        measured = [charts.Series(f"launch {k} cpu_ms", [row["cpu_ms"] for row in frames[k] if row["phase"] != "warmup"],
                                  _colour(k)) for k in launches]
        if gpu_shown:
            measured += [charts.Series(f"launch {k} gpu_ms", [row["gpu_ms"] for row in frames[k]
                                                              if row["phase"] != "warmup"], _colour(k), dashed=True)
                         for k in launches]
        references = _reference_quantiles(scene, gpu_shown)
        plots.append(charts.cdf(measured, budget=budget, x_label="ms per frame", references=references,
                                caption="distribution of measured frames' CPU time" + (" and GPU time" if gpu_shown
                                                                                      else "")
                                + " per launch (every sample, warmup excluded), with the frame budget"
                                + ("; dashed with dots: " + ", ".join(r.label for r in references) if references
                                   else "; no baseline to draw beside it")))
        plots.append(charts.timeline([charts.Series(f"launch {k}", [row["cpu_ms"] for row in frames[k]], _colour(k))
                                      for k in launches], budget=budget, warmup=warmup, y_label="cpu_ms",
                                     caption="CPU time per frame by launch (warmup shaded)"))
        if gpu_shown:
            plots.append(charts.timeline([charts.Series(f"launch {k}", [row["gpu_ms"] for row in frames[k]],
                                                        _colour(k)) for k in launches],
                                         budget=budget, warmup=warmup, y_label="gpu_ms",
                                         caption=f"GPU time per frame ({scene.get('gpu_source')}) by launch"))
    # An adaptive scene's frames are of every complexity of its plan: their vsync buckets say nothing.
    hist = None if adaptive is not None else ((scene.get("metrics") or {}).get("frame_ms") or {}).get("hist")
    if hist:
        labels = [f"{a:g}-{b:g}" if b != float("inf") else f">{a:g}" for a, b in zip(HIST_EDGES_MS, HIST_EDGES_MS[1:])]
        plots.append(charts.bars(labels, hist, x_label="frame time bucket (ms), vsync multiples",
                                 caption="frame time in vsync buckets (all launches): what a viewer sees"))
    plots = [p for p in plots if p]
    return "<div class=plots>" + "".join(plots) + "</div>" if plots else ""


def _reference_quantiles(scene: dict[str, Any], gpu_shown: bool) -> list[charts.Quantiles]:
    """The other side of the regression verdict in the CDF, from run.json regression.distributions.frames: the
    baseline's distribution (history, run.json baseline), or in A/B, where this scene's frames are A's, B's."""
    section = scene.get("regression") or {}
    frames = (section.get("distributions") or {}).get("frames") if isinstance(section, dict) else None
    if not isinstance(frames, dict):
        return []
    side, name = ("candidate", "B (candidate)") if section.get("source") == "ab" else ("baseline", "baseline")
    out = []
    for series in ("cpu_ms", "gpu_ms") if gpu_shown else ("cpu_ms",):
        entry = frames.get(series) or {}
        levels, values = entry.get("levels"), entry.get(side)
        if (isinstance(levels, list) and isinstance(values, list) and len(levels) == len(values) >= 2
                and all(is_number(v) for v in levels + values)):
            out.append(charts.Quantiles(f"{name} {series}, median of its {entry.get(f'n_{side}', '?')} launches' "
                                        "quantiles", [float(v) for v in levels], [float(v) for v in values],
                                        charts.REFERENCE_COLOUR if series == "cpu_ms" else "#888888"))
    return out


def _colour(launch: int) -> str:
    return charts.COLOURS[launch % len(charts.COLOURS)]


def _read_frames(results_dir: Path, samples_file: str | None) -> dict[int, list[dict[str, Any]]]:
    if not samples_file:
        return {}
    out: dict[int, list[dict[str, Any]]] = {}
    try:
        with open(results_dir / samples_file, newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                out.setdefault(int(row["launch"]), []).append(
                    {"phase": row.get("phase") or "measure", "cpu_ms": _float(row.get("cpu_ms")),
                     "gpu_ms": _float(row.get("gpu_ms"))})
    except (OSError, ValueError, KeyError):
        return {}
    return out


def _platform_frames(section: dict[str, Any] | None) -> str:
    """Android's own frame timing of the scene, in one table: a series of its own, beside the runner's."""
    if not section:
        return ""
    metrics = section.get("metrics") or {}
    frame, present = metrics.get("frame_ms") or {}, metrics.get("present_interval_ms") or {}

    def row(label: str, dist: dict[str, Any], jank: Any, n: Any, categories: str = "<td></td><td></td>") -> str:
        cells = "".join(f"<td>{_ms(dist.get(k))}</td>" for k in ("p50", "p95", "p99", "max"))
        return f"<tr><td>{html.escape(label)}</td><td>{n}</td>{cells}<td>{jank}</td>{categories}</tr>"

    layers = ", ".join(section.get("layers") or []) or "none found"
    package, samples = (html.escape(str(section.get(k))) for k in ("package", "samples_file"))
    presents = row("SurfaceFlinger present interval", present, metrics.get("present_jank", ""),
                   section.get("n_present")) if section.get("present_source") else ""
    timeline = section.get("frame_timeline") or {}
    types = ", ".join(f"{html.escape(name)} {count}" for name, count in (timeline.get("jank_types") or {}).items())
    latency = (row("FrameTimeline latency_ms (actual - expected end; jank: deadlines missed)",
                   (timeline.get("metrics") or {}).get("latency_ms") or {}, timeline.get("missed", ""),
                   timeline.get("n")) if timeline else "")
    stuffing = (f"<p>FrameTimeline: {timeline.get('buffer_stuffing', 0)} buffer-stuffed frames (latency without a "
                f"miss, not in the latency row); jank types: {types or 'none'}; samples in "
                f"<code>{html.escape(str(timeline.get('samples_file')))}</code>.</p>" if timeline else "")
    return (f"<p>Platform frames (Android's own timing of <code>{package}</code>, period "
            f"{_ms(section.get('period_ms'))} ms; {section.get('dropped_flagged', 0)} flagged frames left out; "
            f"layer {html.escape(layers)}; samples in <code>{samples}</code>):</p>"
            "<table><tr><th>series</th><th>n</th><th>p50</th><th>p95</th><th>p99</th><th>max</th><th>jank</th>"
            "<th>slow/frozen</th><th>overrun p95 ms</th></tr>"
            + row("gfxinfo frame_ms (FrameCompleted - IntendedVsync)", frame, metrics.get("jank", ""), section.get("n"),
                  category_cells(metrics))
            + presents + latency + "</table>" + stuffing)


# What each comparison with the reference software set is, in words (run.json frames[].cross_backend / cross_arch).
CROSS_KINDS = {"cross_backend": "cross-backend", "cross_arch": "cross-architecture"}
IMAGE_KINDS = ("expected", "actual", "diff", "flip")


def _goldens(correctness: dict[str, Any], results_dir: Path, report_dir: Path) -> str:
    out = [f"<p class=issues>{html.escape(str(text))}</p>" for text in correctness.get("invariants") or []]
    for frame in correctness.get("frames", []):
        out.append(_golden_frame(frame, results_dir, report_dir))
    return "<div class=goldens>" + "".join(out) + "</div>" if out else ""


def _golden_frame(frame: dict[str, Any], results_dir: Path, report_dir: Path) -> str:
    """One captured frame: its status against which set, and for a failure the triage view (the four images,
    the failing region zoomed, expected and actual blinking, the metrics against their bounds in words); for a
    missing or newly written golden the capture to review."""
    status = str(frame.get("status", ""))
    n = frame.get("frame")
    against = frame.get("golden_set") or frame.get("set") or ""
    line = f"frame {n}: <b class='{html.escape(status)}'>{html.escape(status)}</b>"
    if against:
        line += f" against set {html.escape(str(against))}"
    if frame.get("set") and frame.get("golden_set") and frame["set"] != frame["golden_set"]:
        line += f" (no {html.escape(str(frame['set']))} golden yet)"
    elif status == "missing" and frame.get("set"):
        line += f" (no golden in set {html.escape(str(frame['set']))} yet)"
    for key, words in CROSS_KINDS.items():
        cross = frame.get(key)
        if cross:
            cross_status = str(cross.get("status", ""))
            difference = " &mdash; a cross-architecture difference" if (
                key == "cross_arch" and cross_status == "failed") else ""
            line += (f"; {words} vs reference set {html.escape(str(cross.get('reference_set', '')))}: "
                     f"<b class='{html.escape(cross_status)}'>{html.escape(cross_status)}</b>{difference}")
    out = [f"<div class=golden-frame data-status='{html.escape(status)}'><p>{line}</p>"]
    if frame.get("triage") == "rejected":  # known bad: the reason is the whole story (docs/goldens.md, "Triage")
        out.append(f"<p class=note>{html.escape(str(frame.get('message') or ''))}</p>")
    out.append(_triage_commands(frame))
    artifacts = frame.get("artifacts") or {}
    if status in ("missing", "written"):
        capture = _inline_png(results_dir, artifacts.get("actual"))
        words = ("no golden yet: check this capture by eye, then record it with --zbench-update-goldens=missing"
                 if status == "missing" else f"new golden written to {frame.get('written')}: check it by eye "
                 "before committing it")
        if capture:
            image = _linked(f"<img src='{capture}' alt='capture of frame {n}'>",
                            full_size(results_dir, artifacts.get("actual"), report_dir))
            out.append(f"<div class='imgs review'><figure>{image}<figcaption>{html.escape(words)}</figcaption>"
                       "</figure></div>")
        else:
            out.append(f"<p class=note>{html.escape(words)} (capture not found)</p>")
    elif status == "failed" or any((frame.get(k) or {}).get("status") == "failed" for k in CROSS_KINDS):
        out.append(_bounds_in_words(frame))
        out.append(_triage(n, artifacts, (frame.get("metrics") or {}).get("bbox"), results_dir, report_dir))
        for key, words in CROSS_KINDS.items():
            cross = frame.get(key) or {}
            if cross.get("status") == "failed" and cross.get("artifacts"):
                out.append(_triage(n, cross["artifacts"], (cross.get("metrics") or {}).get("bbox"), results_dir,
                                   report_dir, f"{words} ", f" (reference set {cross.get('reference_set', '')})"))
    out.append("</div>")
    return "".join(out)


def _triage_commands(frame: dict[str, Any]) -> str:
    """An untriaged capture's exact `zbench goldens accept` and `reject` commands, as run.json records them
    (docs/goldens.md, "Triage"), with the capture's digest; '' for a frame with nothing to triage."""
    accept, reject = frame.get("accept"), frame.get("reject")
    if not accept and not reject:
        return ""
    digest = str(frame.get("digest") or "")
    lines = [f"<p class='note triage-state'>triage: <b>{html.escape(str(frame.get('triage') or 'untriaged'))}</b>"
             + (f", capture digest <code>{html.escape(digest[:12])}</code>" if digest else "") + "</p>"]
    for word, command in (("accept this image", accept), ("reject it (say why in --reason)", reject)):
        if command:
            lines.append(f"<p class='note triage-command'>{word}: <code>{html.escape(str(command))}</code></p>")
    if frame.get("triage_note"):  # the session kept no run archive: how long the commands work
        lines.append(f"<p class='note triage-note'>{html.escape(str(frame['triage_note']))}</p>")
    return "".join(lines)


def _bounds_in_words(frame: dict[str, Any]) -> str:
    metrics, tightness = frame.get("metrics") or {}, frame.get("tightness") or {}
    items = []
    for name, t in tightness.items():
        observed, bound, ratio = t.get("observed"), t.get("bound"), t.get("ratio")
        if bound is None:
            items.append(f"{html.escape(name)} {_value(observed)} (not gated)")
            continue
        over = isinstance(ratio, (int, float)) and ratio > 1 or (ratio is None and observed)
        items.append(f"<span class='{'failed' if over else 'passed'}'>{html.escape(name)} {_value(observed)}"
                     f" {'over' if over else 'within'} the bound {_value(bound)}</span>")
    bbox = metrics.get("bbox")
    if bbox:
        items.append(f"differing region x={bbox[0]} y={bbox[1]}, {bbox[2]}×{bbox[3]} px")
    if metrics.get("pixels_over") is not None:
        items.append(f"{metrics['pixels_over']} pixel(s) over the per-pixel tolerance")
    return "<p class=words>" + "; ".join(items) + "</p>" if items else ""


def _triage(frame: Any, artifacts: dict[str, Any], bbox: Sequence[int] | None, results_dir: Path, report_dir: Path,
            prefix: str = "", suffix: str = "") -> str:
    images = {k: _inline_png(results_dir, artifacts.get(k)) for k in IMAGE_KINDS}
    figures = []
    for kind, data in images.items():
        if data:
            image = f"<img src='{data}' alt='{html.escape(prefix + kind)} of frame {frame}' class=triage-{kind}>"
            figures.append(f"<figure>{_linked(image, full_size(results_dir, artifacts.get(kind), report_dir))}"
                           f"<figcaption>frame {frame}: {html.escape(prefix + kind + suffix)}</figcaption></figure>")
    expected, actual = images["expected"], images["actual"]
    if expected and actual:
        toggle = f"blink-{zlib.crc32(str(artifacts.get('actual')).encode()):08x}"
        figures.append(f"<figure class=blink-figure><input type=checkbox class=blink-toggle id={toggle}><label "
                       f"for={toggle}>blink expected and actual (tick the box)</label><div class=blink><img src='{expected}' alt='expected' "
                       f"class=expected><img src='{actual}' alt='actual' class=actual></div></figure>")
    zoom = []
    size = _png_size(results_dir, artifacts.get("actual"))
    # The failing region zoomed, when it is a small part of the frame (a whole-frame difference is seen above).
    if bbox and size and bbox[2] * bbox[3] <= 0.5 * size[0] * size[1]:
        pad = 6
        x, y = max(0, bbox[0] - pad), max(0, bbox[1] - pad)
        w, h = min(size[0] - x, bbox[2] + 2 * pad), min(size[1] - y, bbox[3] + 2 * pad)
        for kind in ("expected", "actual", "diff"):
            if images[kind]:
                zoom.append(f"<figure class=zoom><svg xmlns='http://www.w3.org/2000/svg' viewBox='{x} {y} {w} {h}' "
                            f"preserveAspectRatio='xMidYMid meet'><image href='{images[kind]}' width='{size[0]}' "
                            f"height='{size[1]}' style='image-rendering:pixelated'/></svg><figcaption>{kind}, the "
                            f"differing region zoomed (x={bbox[0]} y={bbox[1]}, {bbox[2]}×{bbox[3]} px)</figcaption>"
                            "</figure>")
    return ("<div class='imgs triage'>" + "".join(figures) + "</div>"
            + ("<div class='imgs zoomed'>" + "".join(zoom) + "</div>" if zoom else ""))


def _issues(issues: Sequence[dict[str, Any]]) -> str:
    """Issues grouped by launch, a repeated one counted instead of listed again."""
    groups: dict[str, dict[tuple[str, str], int]] = {}
    for issue in issues:
        launch = issue.get("launch")
        where = "the scene" if launch is None else f"launch {launch}"
        key = (str(issue.get("kind", "")), str(issue.get("detail", "")))
        group = groups.setdefault(where, {})
        group[key] = group.get(key, 0) + 1
    if not groups:
        return ""
    items = []
    for where, found in groups.items():
        lines = "".join(f"<li>[{html.escape(kind)}] {html.escape(detail)}{f' (×{count})' if count > 1 else ''}</li>"
                        for (kind, detail), count in found.items())
        items.append(f"<li>{html.escape(where)}<ul>{lines}</ul></li>")
    return "<p>Issues:</p><ul class=issues>" + "".join(items) + "</ul>"


def _inline_png(results_dir: Path, rel: str | None) -> str | None:
    if not rel:
        return None
    path = Path(rel) if Path(rel).is_absolute() else results_dir / rel
    try:
        return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")
    except OSError:
        return None


def full_size(results_dir: Path, rel: str | None, report_dir: Path) -> str | None:
    """The link from the report to an image artifact: relative to the report's folder, so that the page and
    its results folder keep their links wherever they are unpacked (a CI artifact, the run archive); None for
    an image outside the results folder (an absolute path run.json was given), which a download would not
    hold either."""
    if not rel:
        return None
    path = (Path(rel) if Path(rel).is_absolute() else results_dir / rel).resolve()
    if not path.is_relative_to(results_dir.resolve()) or not path.is_file():
        return None
    return urllib.parse.quote(Path(os.path.relpath(path, report_dir.resolve())).as_posix())


def _linked(image: str, href: str | None) -> str:
    """An inlined image as a link to its full-size PNG (opens beside the report)."""
    if href is None:
        return image
    return f"<a href='{html.escape(href)}' target=_blank title='open the full-size PNG'>{image}</a>"


def _png_size(results_dir: Path, rel: str | None) -> tuple[int, int] | None:
    """Width and height from a PNG's IHDR chunk (bytes 16..24)."""
    if not rel:
        return None
    path = Path(rel) if Path(rel).is_absolute() else results_dir / rel
    try:
        with open(path, "rb") as handle:
            head = handle.read(24)
    except OSError:
        return None
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def _value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return html.escape(str(value))
