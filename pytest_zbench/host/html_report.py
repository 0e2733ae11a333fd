"""A self-contained HTML report of a run: a table, then per scene a frame-time histogram, a timeline of
every launch, and the golden images. No scripts, no external files: images are inlined, plots are SVG."""

from __future__ import annotations

import base64
import csv
import html
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..stats import HIST_EDGES_MS

PLOT_W, PLOT_H = 520, 160
LAUNCH_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse}td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right}
td:nth-child(-n+2),th:nth-child(-n+2){text-align:left}
.passed{color:#2a7a2a}.failed,.error,.missing{color:#b22}.skipped{color:#888}
section{margin:28px 0;padding-top:8px;border-top:2px solid #eee}
.plots{display:flex;flex-wrap:wrap;gap:18px}.imgs{display:flex;flex-wrap:wrap;gap:12px}
figure{margin:0}figcaption{font-size:12px;color:#555}img{max-width:360px;image-rendering:pixelated;border:1px solid #ccc}
.issues{color:#b22;font-size:13px}code{background:#f4f4f4;padding:0 3px}
"""


def write_report(document: dict[str, Any], results_dir: Path, path: Path) -> Path:
    parts = [f"<!doctype html><meta charset=utf-8><title>zbench run {html.escape(document['run_id'][:8])}</title>",
             f"<style>{CSS}</style>", _header(document), _timer_checks(document), _table(document["scenes"])]
    for scene in document["scenes"]:
        parts.append(_scene_section(scene, results_dir))
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def _header(doc: dict[str, Any]) -> str:
    app, gpu, display = doc["app"], doc["gpu"], doc["display"]
    devices = ", ".join(doc.get("devices", {}) or [doc["device"]["id"]])
    return (f"<h1>zbench run</h1><p>started {html.escape(doc['started_utc'])} · build "
            f"<code>{html.escape(str(app.get('build_hash') or 'unknown'))[:12]}</code>"
            f"{' (dirty)' if app.get('dirty') else ''} · devices {html.escape(devices)} · backend "
            f"{html.escape(gpu.get('backend', ''))} ({html.escape(str(gpu.get('gl_renderer', '')))}), timer "
            f"{html.escape(str(gpu.get('timer_source')))} · display {display.get('width')}×{display.get('height')} @ "
            f"{display.get('refresh_hz')} Hz</p>")


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


def _table(scenes: Sequence[dict[str, Any]]) -> str:
    rows = ["<table><tr><th>device</th><th>scene</th><th>runs</th><th>frame p50</th><th>p95</th><th>p99</th>"
            "<th>cpu p50</th><th>gpu p50</th><th>jank</th><th>golden</th><th>outcome</th></tr>"]
    for s in scenes:
        metrics = s.get("metrics") or {}
        frame, cpu, gpu = (metrics.get(k) or {} for k in ("frame_ms", "cpu_ms", "gpu_ms"))
        gpu_p50 = None if s.get("gpu_valid") is False else gpu.get("p50")
        golden = (s.get("correctness") or {}).get("outcome", "")
        anchor = _anchor(s)
        if s.get("adaptive") is not None:
            rows.append(_adaptive_row(s, anchor, golden))
            continue
        rows.append(
            f"<tr><td>{html.escape(s['device'])}</td><td><a href='#{anchor}'>{html.escape(s['id'])}</a></td>"
            f"<td>{s.get('complete_runs', s['runs'])}/{s['runs']}</td>"
            + "".join(f"<td>{_ms(v)}</td>" for v in (frame.get("p50"), frame.get("p95"), frame.get("p99"),
                                                    cpu.get("p50")))
            + ("<td title='the GPU time source failed the timer check'>untrusted</td>" if s.get("gpu_valid") is False
               else f"<td>{_ms(gpu_p50)}</td>")
            + f"<td>{metrics.get('jank', '')}</td><td class='{html.escape(golden)}'>{html.escape(golden)}</td>"
            f"<td class='{html.escape(s['outcome'])}'>{html.escape(s['outcome'])}</td></tr>"
        )
    rows.append("</table>")
    return "\n".join(rows)


def _scene_section(scene: dict[str, Any], results_dir: Path) -> str:
    out = [f"<section id='{_anchor(scene)}'><h2>{html.escape(scene['id'])} on {html.escape(scene['device'])}</h2>"]
    if scene.get("skipped"):
        out.append(f"<p class=skipped>skipped: {html.escape(scene['skipped'])}</p>")
    metrics = scene.get("metrics") or {}
    budget = scene.get("budget_ms")
    plots = []
    if scene.get("adaptive") is not None:
        plots.append(_adaptive_svg(scene["adaptive"]))
    elif (metrics.get("frame_ms") or {}).get("hist"):
        plots.append(_histogram_svg(metrics["frame_ms"]["hist"], "frame time histogram (all launches)"))
    series = _launch_series(results_dir, scene.get("samples_file"))
    if series:
        plots.append(_timeline_svg(series, budget, "cpu_ms per frame, by launch (warmup shaded)"))
    if scene.get("gpu_valid") is True:
        gpu_series = _launch_series(results_dir, scene.get("samples_file"), column="gpu_ms")
        if gpu_series:
            plots.append(_timeline_svg(gpu_series, None, f"gpu_ms per frame ({scene.get('gpu_source')}), by launch"))
    if plots:
        out.append("<div class=plots>" + "".join(plots) + "</div>")
    if scene.get("gpu_valid") is False:
        out.append(f"<p class=issues>gpu_ms ({html.escape(str(scene.get('gpu_source')))}) not shown: the device's "
                   "GPU time source failed the timer check, so its values are not trusted (see the top of this "
                   "report).</p>")
    platform = _platform_frames(scene.get("platform_frames"))
    if platform:
        out.append(platform)
    correctness = scene.get("correctness") or {}
    notes = _golden_notes(correctness)
    if notes:
        out.append(notes)
    images = _golden_images(correctness, results_dir)
    if images:
        out.append("<div class=imgs>" + images + "</div>")
    issues = scene.get("issues") or []
    if issues:
        out.append("<ul class=issues>" + "".join(
            f"<li>[{html.escape(i['kind'])}] {html.escape(i['detail'])}</li>" for i in issues[:20]) + "</ul>")
    out.append("</section>")
    return "\n".join(out)


def _adaptive_row(s: dict[str, Any], anchor: str, golden: str) -> str:
    """An adaptive scene's row: its score and interval across the frame-time columns."""
    a = s["adaptive"]
    ci = f" (95% CI {a['ci'][0]:.4g}..{a['ci'][1]:.4g})" if a.get("ci") else ""
    score = "no score" if a.get("score") is None else (
        f"{'≥' if a.get('censored') == 'above' else ''}{a['score']:.4g} {html.escape(a['unit'])}{ci}")
    return (f"<tr><td>{html.escape(s['device'])}</td><td><a href='#{anchor}'>{html.escape(s['id'])}</a></td>"
            f"<td>{s.get('complete_runs', s['runs'])}/{s['runs']}</td><td colspan=6 style='text-align:left'>"
            f"score {score}</td><td class='{html.escape(golden)}'>{html.escape(golden)}</td>"
            f"<td class='{html.escape(s['outcome'])}'>{html.escape(s['outcome'])}</td></tr>")


def _adaptive_svg(a: dict[str, Any]) -> str:
    """Frame cost against complexity: each scored launch's step medians and fitted hinge, the budget, the
    score and its interval. Everything drawn comes from run.json's `adaptive` section."""
    fits = a.get("fit", {}).get("launches", [])
    budget = float(a["budget_ms"])
    points = [(p[0], p[1]) for fit in fits for p in fit["points"]]
    title = (f"frame cost (uncapped interval, ms) against complexity ({a['unit']}); budget {budget:.2f} ms; "
             + ("no score" if a.get("score") is None else f"score {a['score']:.4g}"))
    if not points:
        return _figure("<text x='30' y='40' font-size='11'>no scored launch</text>", title)
    x_max = float(max(x for x, _ in points)) * 1.05 or 1.0
    y_max = float(max(max(y for _, y in points), 2 * budget)) * 1.1
    left, bottom = 40, PLOT_H - 20

    def sx(x: float) -> float:
        return left + x / x_max * (PLOT_W - left - 10)

    def sy(y: float) -> float:
        return bottom - y / y_max * (bottom - 10)

    parts = [f"<line x1='{left}' y1='{bottom}' x2='{PLOT_W - 10}' y2='{bottom}' stroke='#999'/>",
             f"<line x1='{left}' y1='{sy(budget):.1f}' x2='{PLOT_W - 10}' y2='{sy(budget):.1f}' stroke='#b22' "
             f"stroke-dasharray='4 3'><title>budget {budget:.2f} ms</title></line>"]
    if a.get("ci"):
        lo, hi = a["ci"]
        parts.append(f"<rect x='{sx(lo):.1f}' y='10' width='{max(sx(hi) - sx(lo), 1):.1f}' height='{bottom - 10}' "
                     f"fill='#4a78b5' opacity='0.15'><title>95% CI {lo:.4g}..{hi:.4g}</title></rect>")
    if a.get("score") is not None:
        x = sx(a["score"])
        parts.append(f"<line x1='{x:.1f}' y1='10' x2='{x:.1f}' y2='{bottom}' stroke='#4a78b5'>"
                     f"<title>score {a['score']:.4g}</title></line>")
    for n, fit in enumerate(fits):
        colour = LAUNCH_COLOURS[n % len(LAUNCH_COLOURS)]
        xs = [p[0] for p in fit["points"]]
        knee = min(max(fit["score"], 0.0), max(xs))
        line = [(min(xs), budget), (knee, budget), (max(xs), budget + fit["slope_ms"] * max(0.0, max(xs) - knee))]
        parts.append(f"<polyline fill='none' stroke='{colour}' points='"
                     + " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in line)
                     + f"'><title>launch {fit['launch']}: score {fit['score']:.4g}</title></polyline>")
        parts += [f"<circle cx='{sx(x):.1f}' cy='{sy(y):.1f}' r='2.5' fill='{colour}'><title>launch "
                  f"{fit['launch']}: {x:g} {html.escape(a['unit'])}, {y:.2f} ms ({frames} frames)</title></circle>"
                  for x, y, frames in fit["points"]]
    parts.append(f"<text x='2' y='14' font-size='9'>{y_max:.0f} ms</text>"
                 f"<text x='{PLOT_W - 10}' y='{PLOT_H - 6}' font-size='9' text-anchor='end'>{x_max:.4g}</text>"
                 f"<text x='{left}' y='{PLOT_H - 6}' font-size='9'>0</text>")
    return _figure("".join(parts), title)


def _platform_frames(section: dict[str, Any] | None) -> str:
    """Android's own frame timing of the scene, in one table: a series of its own, beside the runner's."""
    if not section:
        return ""
    metrics = section.get("metrics") or {}
    frame, present = metrics.get("frame_ms") or {}, metrics.get("present_interval_ms") or {}

    def row(label: str, dist: dict[str, Any], jank: Any, n: Any) -> str:
        cells = "".join(f"<td>{_ms(dist.get(k))}</td>" for k in ("p50", "p95", "p99", "max"))
        return f"<tr><td>{html.escape(label)}</td><td>{n}</td>{cells}<td>{jank}</td></tr>"

    layers = ", ".join(section.get("layers") or []) or "none found"
    package, samples = (html.escape(str(section.get(k))) for k in ("package", "samples_file"))
    presents = row("SurfaceFlinger present interval", present, metrics.get("present_jank", ""),
                   section.get("n_present")) if section.get("present_source") else ""
    return (f"<p>Platform frames (Android's own timing of <code>{package}</code>, period "
            f"{_ms(section.get('period_ms'))} ms; {section.get('dropped_flagged', 0)} flagged frames left out; "
            f"layer {html.escape(layers)}; samples in <code>{samples}</code>):</p>"
            "<table><tr><th>series</th><th>n</th><th>p50</th><th>p95</th><th>p99</th><th>max</th><th>jank</th></tr>"
            + row("gfxinfo frame_ms (FrameCompleted - IntendedVsync)", frame, metrics.get("jank", ""), section.get("n"))
            + presents + "</table>")


def _histogram_svg(counts: Sequence[int], title: str) -> str:
    labels = [f"{a:g}-{b:g}" if b != float("inf") else f">{a:g}" for a, b in zip(HIST_EDGES_MS, HIST_EDGES_MS[1:])]
    top = max(counts) or 1
    bar_w = (PLOT_W - 40) / len(counts)
    bars = []
    for i, (count, label) in enumerate(zip(counts, labels)):
        h = (PLOT_H - 40) * count / top
        x = 30 + i * bar_w
        bars.append(f"<rect x='{x:.1f}' y='{PLOT_H - 25 - h:.1f}' width='{bar_w - 4:.1f}' height='{h:.1f}' fill='#4a78b5'>"
                    f"<title>{label} ms: {count}</title></rect>"
                    f"<text x='{x + bar_w / 2 - 2:.1f}' y='{PLOT_H - 10}' font-size='9' text-anchor='middle'>{label}</text>"
                    f"<text x='{x + bar_w / 2 - 2:.1f}' y='{PLOT_H - 28 - h:.1f}' font-size='9' text-anchor='middle'>{count}</text>")
    return _figure("".join(bars), title)


def _timeline_svg(series: dict[int, list[tuple[float | None, bool]]], budget: float | None, title: str) -> str:
    values = [v for points in series.values() for v, _ in points if v is not None]
    if not values:
        return ""
    top = max(max(values), budget or 0) * 1.1 or 1.0
    longest = max(len(points) for points in series.values())
    sx = (PLOT_W - 40) / max(longest - 1, 1)
    sy = (PLOT_H - 30) / top
    parts = [f"<line x1='30' y1='{PLOT_H - 20}' x2='{PLOT_W - 10}' y2='{PLOT_H - 20}' stroke='#999'/>"]
    warm = next((i for i, (_, is_warm) in enumerate(next(iter(series.values()))) if not is_warm), 0)
    if warm:
        parts.append(f"<rect x='30' y='10' width='{warm * sx:.1f}' height='{PLOT_H - 30}' fill='#eee'/>")
    if budget:
        y = PLOT_H - 20 - budget * sy
        parts.append(f"<line x1='30' y1='{y:.1f}' x2='{PLOT_W - 10}' y2='{y:.1f}' stroke='#b22' stroke-dasharray='4 3'>"
                     f"<title>budget {budget:.2f} ms</title></line>")
    for launch, points in sorted(series.items()):
        coords = " ".join(f"{30 + i * sx:.1f},{PLOT_H - 20 - v * sy:.1f}" for i, (v, _) in enumerate(points) if v is not None)
        colour = LAUNCH_COLOURS[launch % len(LAUNCH_COLOURS)]
        parts.append(f"<polyline fill='none' stroke='{colour}' stroke-width='1' points='{coords}'><title>launch {launch}</title></polyline>")
    parts.append(f"<text x='2' y='14' font-size='9'>{top:.1f} ms</text><text x='2' y='{PLOT_H - 20}' font-size='9'>0</text>")
    return _figure("".join(parts), title)


def _figure(svg_body: str, title: str) -> str:
    return (f"<figure><svg xmlns='http://www.w3.org/2000/svg' width='{PLOT_W}' height='{PLOT_H}' "
            f"style='background:#fafafa'>{svg_body}</svg><figcaption>{html.escape(title)}</figcaption></figure>")


def _launch_series(results_dir: Path, samples_file: str | None,
                   column: str = "cpu_ms") -> dict[int, list[tuple[float | None, bool]]]:
    if not samples_file:
        return {}
    path = results_dir / samples_file
    series: dict[int, list[tuple[float | None, bool]]] = {}
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                value = row.get(column) or ""
                series.setdefault(int(row["launch"]), []).append(
                    (float(value) if value else None, row.get("phase") == "warmup"))
    except (OSError, ValueError, KeyError):
        return {}
    return series


# What each comparison with the reference software set is, in words (run.json frames[].cross_backend / cross_arch).
CROSS_KINDS = {"cross_backend": "cross-backend", "cross_arch": "cross-architecture"}


def _golden_notes(correctness: dict[str, Any]) -> str:
    """Per frame: which set it was compared with and how it went, and the comparison with the reference set
    (a cross-architecture difference is named as one)."""
    items = []
    for frame in correctness.get("frames", []):
        status = str(frame.get("status", ""))
        against = frame.get("golden_set") or frame.get("set") or ""
        line = f"frame {frame.get('frame')}: <b class='{html.escape(status)}'>{html.escape(status)}</b>"
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
        items.append(f"<li>{line}</li>")
    return "<ul class=goldens>" + "".join(items) + "</ul>" if items else ""


def _golden_images(correctness: dict[str, Any], results_dir: Path) -> str:
    figures = []
    for frame in correctness.get("frames", []):
        for label, rel in _image_paths(frame):
            data = _inline_png(results_dir, rel)
            if data:
                figures.append(f"<figure><img src='{data}' alt='{html.escape(label)}'>"
                               f"<figcaption>frame {frame.get('frame')}: {html.escape(label)}</figcaption></figure>")
    return "".join(figures)


def _image_paths(frame: dict[str, Any]) -> Iterable[tuple[str, str]]:
    artifacts = frame.get("artifacts") or {}
    for label in ("expected", "actual", "diff", "flip"):
        if artifacts.get(label):
            yield label, artifacts[label]
    for key, words in CROSS_KINDS.items():
        cross_artifacts = (frame.get(key) or {}).get("artifacts") or {}
        for label in ("expected", "actual", "diff", "flip"):
            if cross_artifacts.get(label):
                yield f"{words} {label} (reference set {frame[key].get('reference_set', '')})", cross_artifacts[label]


def _inline_png(results_dir: Path, rel: str) -> str | None:
    path = Path(rel) if Path(rel).is_absolute() else results_dir / rel
    try:
        return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")
    except OSError:
        return None


def _anchor(scene: dict[str, Any]) -> str:
    return html.escape(f"{scene['device']}--{scene['id']}")


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"
