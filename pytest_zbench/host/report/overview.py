"""The report's overview table: one row per scene with its numbers, its regression verdict WITH the effect and
interval the gate recorded (run.json `regression.metrics[]`), its golden and its result; sortable by any column
and filtered by device, scene, verdict and effect with a few lines of inline script (no network, no library).
docs/report.md, "Overview".

Every row carries its values as data attributes (data-device, data-effect, ...), so that sorting and filtering
read the record's values, not the cells' rounded text, and an adaptive row (whose score spans the frame-time
columns) sorts like the others."""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...adaptive_score import not_measured
from ...json_types import is_number
from ...regression.gate import interval_text, ratio_text

# What needs attention first: the summary and the page order (an unknown word sorts last).
ATTENTION = ("error", "failed", "regressed", "missing", "inconclusive", "written", "passed", "unchanged",
             "improved", "no_baseline", "skipped")

# (verdict, golden, result) of a scene, as the report words them (html.py).
Words = Callable[[Mapping[str, Any]], tuple[str, str, str]]

# (column key, header, how it sorts: "text", "number" or "rank" by ATTENTION). The key is the row's data-<key>.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("device", "device", "text"), ("scene", "scene", "text"), ("runs", "runs", "number"),
    ("frame_p50", "frame p50 ms", "number"), ("frame_p95", "p95", "number"), ("frame_p99", "p99", "number"),
    ("cpu_p50", "cpu p50 ms", "number"), ("gpu_p50", "gpu p50 ms", "number"), ("jank", "jank", "number"),
    ("slow_frames", "slow/frozen", "number"), ("overrun_p95", "overrun p95 ms", "number"),
    ("verdict", "verdict", "rank"), ("effect", "effect [interval]", "number"), ("golden", "golden", "rank"),
    ("result", "result", "rank"),
)

CSS = """
#scene-filters{margin:8px 0;font-size:13px}#scene-filters label{margin-right:12px}#scene-filters input[type=number]{width:5em}
#scenes th[data-sort]{cursor:pointer;user-select:none}#scenes th[aria-sort=ascending]::after{content:" ▲"}
#scenes th[aria-sort=descending]::after{content:" ▼"}#scenes td.effect{white-space:nowrap;text-align:left}
"""

# Sort on a header's click (again: the other way), filter on every change; the counts line says what is shown.
SCRIPT = """
(function () {
  var table = document.getElementById('scenes'), body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows), form = document.getElementById('scene-filters');
  var ranks = %s;
  function key(row, name, how) {
    var v = row.dataset[name] || '';
    if (how === 'number') { var n = parseFloat(v); return isNaN(n) ? Infinity : n; }
    if (how === 'rank') { var r = ranks.indexOf(v); return r < 0 ? ranks.length : r; }
    return v.toLowerCase();
  }
  table.tHead.addEventListener('click', function (event) {
    var th = event.target.closest('th[data-sort]');
    if (!th) return;
    var down = th.getAttribute('aria-sort') === 'ascending';
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', down ? 'descending' : 'ascending');
    var name = th.dataset.key, how = th.dataset.sort;
    rows.sort(function (a, b) {
      var x = key(a, name, how), y = key(b, name, how);
      return (x < y ? -1 : x > y ? 1 : 0) * (down ? -1 : 1);
    });
    rows.forEach(function (row) { body.appendChild(row); });
  });
  function apply() {
    var device = form.device.value, verdict = form.verdict.value, scene = form.scene.value.toLowerCase();
    var least = parseFloat(form.effect.value), shown = 0;
    rows.forEach(function (row) {
      var effect = parseFloat(row.dataset.effect);
      var away = isNaN(effect) ? NaN : Math.max(effect, 1 / effect);  // 2x slower and 0.5x both "2x away"
      var hide = (device && row.dataset.device !== device) || (verdict && row.dataset.verdict !== verdict)
        || (scene && row.dataset.scene.toLowerCase().indexOf(scene) < 0) || (!isNaN(least) && !(away >= least));
      row.hidden = !!hide;
      shown += hide ? 0 : 1;
    });
    document.getElementById('scene-count').textContent = shown + ' of ' + rows.length + ' scene(s) shown';
  }
  form.addEventListener('input', apply);
  form.addEventListener('change', apply);
  apply();
})();
"""


# Verdict words the page order does not rank (html.py sorts them last): the table's sort puts them after the rest.
VERDICTS_LAST = ("same", "not_judged")


def _data_name(key: str) -> str:
    """A column key as a data attribute's name that the script reads back unchanged (dataset.framep50)."""
    return key.replace("_", "")


def rank(word: str) -> int:
    return ATTENTION.index(word) if word in ATTENTION else len(ATTENTION)


def anchor(scene: Mapping[str, Any]) -> str:
    return html.escape(f"{scene['device']}--{scene['id']}")


def headline(section: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The judged metric a scene's verdict is about: the first whose own verdict is the scene's (the one that
    made it regressed, inconclusive, ...), else the first judged; None when no metric was judged."""
    metrics = [m for m in (section or {}).get("metrics") or [] if isinstance(m, Mapping)]
    verdict = (section or {}).get("verdict")
    return next((m for m in metrics if m.get("verdict") == verdict), metrics[0] if metrics else None)


def effect_text(metric: Mapping[str, Any] | None) -> str:
    """`25.000x [0.910x..690.000x] cpu_ms.p50`: candidate / baseline, its interval, the metric; '' without an
    effect."""
    if metric is None or not is_number(metric.get("effect")):
        return ""
    ci = metric.get("ci")
    interval = (f" [{interval_text(ci[0], ci[1])}]" if isinstance(ci, (list, tuple)) and len(ci) == 2
                and all(is_number(v) for v in ci) else " [no interval]")
    return f"{ratio_text(metric['effect'])}{interval} {metric.get('metric')}"


def overview_table(scenes: Sequence[Mapping[str, Any]], words: Words) -> str:
    """The filter controls, the table and its script."""
    devices = sorted({str(s["device"]) for s in scenes})
    verdicts = sorted({w for s in scenes for w in [words(s)[0]] if w}, key=rank)
    options = "".join(f"<option>{html.escape(d)}</option>" for d in devices)
    verdict_options = "".join(f"<option value='{html.escape(v)}'>{html.escape(v.replace('_', ' '))}</option>"
                              for v in verdicts)
    controls = ("<form id=scene-filters onsubmit='return false'>"
                f"<label>device <select name=device><option value=''>all</option>{options}</select></label>"
                "<label>scene <input name=scene type=search placeholder='part of an id' size=16></label>"
                f"<label>verdict <select name=verdict><option value=''>all</option>{verdict_options}</select></label>"
                "<label title='candidate / baseline at least this far from 1, either way: 1.1 shows effects of "
                "1.1x and more and of 0.91x and less'>effect at least <input name=effect type=number min=1 "
                "step=0.05 size=5 placeholder='1.1'>x</label><span id=scene-count class=note></span></form>")
    head = "".join(f"<th data-key='{_data_name(key)}' data-sort='{how}'>{html.escape(label)}</th>" for key, label, how in COLUMNS)
    rows = [_row(s, words(s)) for s in scenes]
    ranks = "[" + ",".join(f"'{w}'" for w in ATTENTION + VERDICTS_LAST) + "]"
    return (f"<style>{CSS}</style>{controls}<table id=scenes><thead><tr>{head}</tr></thead><tbody>"
            + "\n".join(rows) + f"</tbody></table><script>{SCRIPT % ranks}</script>")


def _row(s: Mapping[str, Any], words: tuple[str, str, str]) -> str:
    verdict, golden, result = words
    metrics = s.get("metrics") or {}
    frame, cpu, gpu = (metrics.get(k) or {} for k in ("frame_ms", "cpu_ms", "gpu_ms"))
    judged = headline(s.get("regression"))
    effect = judged.get("effect") if judged is not None else None
    values: dict[str, Any] = {
        "device": s["device"], "scene": s["id"], "runs": s.get("complete_runs", s["runs"]),
        "frame_p50": frame.get("p50"), "frame_p95": frame.get("p95"), "frame_p99": frame.get("p99"),
        "cpu_p50": cpu.get("p50"), "gpu_p50": None if s.get("gpu_valid") is False else gpu.get("p50"),
        "jank": metrics.get("jank"), "slow_frames": metrics.get("slow_frames"),
        "overrun_p95": (metrics.get("overrun_ms") or {}).get("p95"), "verdict": verdict, "effect": effect if is_number(effect) else None,
        "golden": golden, "result": result,
    }
    data = " ".join(f"data-{_data_name(k)}='{html.escape(str(v))}'" for k, v in values.items() if v is not None)
    first = (f"<tr {data}><td>{html.escape(s['device'])}</td><td><a href='#{anchor(s)}'>{html.escape(s['id'])}</a>"
             f"</td><td>{s.get('complete_runs', s['runs'])}/{s['runs']}</td>")
    adaptive = s.get("adaptive")
    if adaptive is not None:  # its per-frame statistics mix the complexities of its plan: its score instead
        middle = f"<td colspan=8 style='text-align:left'>score {_score(adaptive)}</td>"
    else:
        gpu_cell = ("<td title='the GPU time source failed the timer check'>untrusted</td>"
                    if s.get("gpu_valid") is False else f"<td>{ms_text(gpu.get('p50'))}</td>")
        middle = ("".join(f"<td>{ms_text(v)}</td>" for v in (frame.get("p50"), frame.get("p95"), frame.get("p99"),
                                                        cpu.get("p50")))
                  + gpu_cell + f"<td>{metrics.get('jank', '')}</td>" + category_cells(metrics))
    title = html.escape(str((judged or {}).get("message") or (s.get("regression") or {}).get("message") or ""))
    last = (f"<td class='{html.escape(verdict)}'>{html.escape(verdict.replace('_', ' '))}</td>"
            f"<td class='effect {html.escape(verdict)}' title='{title}'>{html.escape(effect_text(judged))}</td>"
            + "".join(f"<td class='{html.escape(w)}'>{html.escape(w.replace('_', ' '))}</td>" for w in (golden, result))
            + "</tr>")
    return first + middle + last


def category_cells(metrics: Mapping[str, Any]) -> str:
    """The slow/frozen and overrun p95 cells of a series (stats.frame_categories, stats.overrun)."""
    counts = f"{metrics['slow_frames']}/{metrics.get('frozen_frames', 0)}" if "slow_frames" in metrics else ""
    return f"<td>{counts}</td><td>{ms_text((metrics.get('overrun_ms') or {}).get('p95'))}</td>"


def _score(a: Mapping[str, Any]) -> str:
    ci = f" (95% CI {a['ci'][0]:.4g}..{a['ci'][1]:.4g})" if a.get("ci") else ""
    unmeasured = not_measured(a)
    return f"not measured: {html.escape(unmeasured)}" if unmeasured is not None else (
        f"{'≥' if a.get('censored') == 'above' else ''}{a['score']:.4g} {html.escape(str(a.get('unit', '')))}{ci}")


def ms_text(value: Any) -> str:
    """A time in milliseconds as the report's tables show it (two decimals), '' when not a number."""
    return f"{value:.2f}" if is_number(value) else ""
