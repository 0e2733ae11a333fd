"""The published site's files: an index of devices with their open regressions, a page per device listing its
scenes with their latest verdicts, and a page per scene whose series plotly.js draws from a data file of its own
(docs/report.md, "Published site").

    index.html                       devices, open regressions
    devices/<device>.html            the device's scenes: latest value, latest verdict, change points
    scenes/<device>/<scene>.html     the chart and the runs' table (small: the data is beside it)
    scenes/<device>/<scene>.data.js  the scene's series (window.ZBENCH_SCENE), a few dozen kB for 500 runs
    assets/plotly.min.js             plotly.js from the plotly package, written once, shared by every page
    assets/scene.js, assets/site.css

Everything is relative, nothing is fetched at view time: the folder opens from disk (file://) or from any static
server. Data goes in as <script src> files rather than fetched JSON, which browsers refuse from file:// pages.
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ZbenchError
from ..regression.config import metric_unit
from ..regression.history import SceneKey, stable_hash
from ..regression.verdict_words import CHART_COLOURS, NEUTRAL_COLOUR, verdict_rank
from .series import SceneSeries
from .verdicts import ArchivedVerdict

# The chart's colours, which tests/publish checks in the screenshot: the series, its interval bars, the
# change points, each segment's median.
COLOURS = {"series": "#1f77b4", "interval": "#9ecae1", "change": "#d62728", "segment": "#7f7f7f",
           "verdicts": CHART_COLOURS, "neutral": NEUTRAL_COLOUR}

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{margin:0 0 4px}h2{margin:22px 0 6px;font-size:18px}nav{margin-bottom:12px;font-size:13px}
table{border-collapse:collapse}td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}
th{background:#f6f6f6}td.num{text-align:right}.muted{color:#777}code{font-size:12px}
.improved,.same{color:#2a7a2a}.regressed,.open{color:#b22;font-weight:600}.inconclusive{color:#c77700}
.no_baseline,.not_judged{color:#777}.change{color:#d62728}#chart{max-width:1300px}
input.filter{margin:4px 0 6px;padding:3px 6px;width:280px}th[data-order=ascending]::after{content:" \\25B2"}
th[data-order=descending]::after{content:" \\25BC"}
"""

SITE_MARKER = ".zbench-site"  # in the site's folder: a later publish may replace the folder


def slug(text: str) -> str:
    """A file name from a device or scene name: letters, digits, `._-` kept, the rest `_`; never hidden or `..`.
    A name that had to change gets a hash of the original, so two names never share a file."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", text)[:120]
    if cleaned.startswith(".") or not cleaned:
        cleaned = "_" + cleaned
    return cleaned if cleaned == text else f"{cleaned}-{stable_hash(text)[:8]}"


def device_slug(key: SceneKey) -> str:
    return slug(f"{key.device}-{key.backend}")


def scene_slug(key: SceneKey) -> str:
    return slug(f"{key.scene_id}-{key.mode}-{key.gpu_source or 'nogpu'}-{key.params_hash[:8]}")


@dataclass(frozen=True)
class SiteFacts:
    """What the index says about where the site came from."""

    history: str
    metric: str
    last: int
    verdict_files: int
    notes: tuple[str, ...] = ()


class MissingPlotly(ZbenchError):
    """The plotly package, whose plotly.min.js the site's charts use, is not installed."""


def plotly_js() -> bytes:
    """plotly.min.js as the plotly package ships it (a dependency of pytest-zbench)."""
    try:
        return (resources.files("plotly") / "package_data" / "plotly.min.js").read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise MissingPlotly(f"the site's charts need plotly.js from the plotly package ({exc}): pip install "
                            "'plotly>=5.20' (a dependency of pytest-zbench) in this environment") from None


def write_assets(site: Path) -> None:
    assets = site / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    (assets / "plotly.min.js").write_bytes(plotly_js())
    (assets / "scene.js").write_text((resources.files(__package__) / "scene.js").read_text(encoding="utf-8"),
                                     encoding="utf-8")
    (assets / "tables.js").write_text((resources.files(__package__) / "tables.js").read_text(encoding="utf-8"),
                                      encoding="utf-8")
    (assets / "site.css").write_text(CSS, encoding="utf-8")
    (site / SITE_MARKER).write_text("a site written by `zbench publish`; it replaces this folder when run again\n",
                                    encoding="utf-8")


def _page(title: str, depth: int, body: str, scripts: Sequence[str] = ()) -> str:
    up = "../" * depth
    tags = "".join(f'<script src="{html.escape(up + s if not s.startswith(".") else s)}"></script>' for s in scripts)
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f'<link rel="stylesheet" href="{up}assets/site.css">{tags}</head><body>{body}</body></html>\n')


def _value(value: float | None, unit: str) -> str:
    return "-" if value is None else f"{value:.4g}{' ' + unit if unit == 'ms' else ''}"


def _verdict_words(verdict: ArchivedVerdict) -> str:
    effect = f" x{verdict.effect:.3f}" if verdict.effect is not None else ""
    ci = f" [{verdict.ci[0]:.3f}, {verdict.ci[1]:.3f}]" if verdict.ci is not None else ""
    return f"{verdict.verdict}{effect}{ci}" + (f" ({verdict.metric})" if verdict.metric else "")


def _link(target: Path, page_folder: Path) -> str | None:
    try:
        return Path(os.path.relpath(target.resolve(), page_folder.resolve())).as_posix()
    except ValueError:  # another drive (Windows): an absolute link
        return target.resolve().as_uri()


def _segments(series: SceneSeries) -> list[dict[str, Any]]:
    """Each stretch between change points with the median of its runs' medians (the level the chart draws)."""
    edges = [0, *[c.index for c in series.change_points], len(series.points)]
    out = []
    for start, end in zip(edges, edges[1:]):
        values = [p.median for p in series.points[start:end] if p.median is not None]
        if values:
            out.append({"start": start, "end": end, "median": _round(float(np.median(values)))})
    return out


def _round(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.5g}")


def scene_data(series: SceneSeries, page_folder: Path) -> dict[str, Any]:
    """The scene's data file: the series column by column (compact at 500 runs), its marks and its links."""
    points, key = series.points, series.key
    return {
        "title": f"{key.scene_id} on {key.device}/{key.backend}", "metric": series.metric,
        "unit": metric_unit(series.metric),
        "runs": {"run_id": [p.run_id for p in points], "started": [p.started_utc for p in points],
                 "build": [p.build_hash for p in points], "dirty": [bool(p.dirty) for p in points],
                 "launches": [p.launches for p in points], "median": [_round(p.median) for p in points],
                 "low": [_round(p.low) for p in points], "high": [_round(p.high) for p in points],
                 "env_changed": [p.environment_changed for p in points]},
        "change_points": [{"index": c.index, "magnitude": round(c.magnitude, 4), "p": round(c.p_value, 4),
                           "build": c.build_hash, "started": c.started_utc} for c in series.change_points],
        "segments": _segments(series),
        "verdicts": [{"index": i, "verdict": v.verdict, "describe": _verdict_words(v),
                      "report": _link(v.report, page_folder) if v.report is not None else None}
                     for i, v in sorted(series.verdicts.items())],
        "open_regression": series.open_regression,
    }


def write_scene(site: Path, series: SceneSeries) -> Path:
    key = series.key
    folder = site / "scenes" / device_slug(key)
    folder.mkdir(parents=True, exist_ok=True)
    name = scene_slug(key)
    data = json.dumps(scene_data(series, folder), separators=(",", ":"), allow_nan=False)
    (folder / f"{name}.data.js").write_text(f"window.ZBENCH_SCENE = {data};\n", encoding="utf-8")
    regression = (f'<p class="open">open regression: {html.escape(series.open_regression)}</p>'
                  if series.open_regression else "")
    body = (f'<nav><a href="../../index.html">all devices</a> · <a href="../../devices/{device_slug(key)}.html">'
            f"{html.escape(key.device)}/{html.escape(key.backend)}</a></nav>"
            f"<h1>{html.escape(key.scene_id)}</h1><p class='muted'>{html.escape(key.describe())}; "
            f"{len(series.points)} run(s); {html.escape(series.metric)}: per run the median over its launches, the "
            "bar their range; dashed red lines: change points; dotted: each stretch's median; diamonds: the gate's "
            f"verdicts where the run's run.json was found</p>{regression}<div id='chart'></div>"
            "<h2>Runs, newest first</h2><table><thead><tr><th>#</th><th>started (UTC)</th><th>build</th>"
            "<th>launches</th><th>median</th><th>range</th><th>verdict</th><th>notes</th></tr></thead>"
            "<tbody id='runs'></tbody></table>"
            f"<script>zbenchScenePage({json.dumps(COLOURS)});</script>")
    page = folder / f"{name}.html"
    page.write_text(_page(key.scene_id, 2, body, ["assets/plotly.min.js", "assets/scene.js",
                                                  f"./{name}.data.js"]), encoding="utf-8")
    return page


def _latest(series: SceneSeries) -> tuple[str, str]:
    """The latest verdict's words and class, or a dash."""
    latest = series.latest_verdict
    if latest is None:
        return "-", "muted"
    index, verdict = latest
    stale = "" if index == len(series.points) - 1 else f" (run #{index})"
    return _verdict_words(verdict) + stale, verdict.verdict


def _scene_row(series: SceneSeries, href: str) -> str:
    key, unit = series.key, metric_unit(series.metric)
    newest = series.points[-1] if series.points else None
    words, css = _latest(series)
    steps = series.change_points
    change = (f"{len(steps)}: newest x{steps[-1].magnitude:.3f} at run #{steps[-1].index}" if steps else "none")
    return (f"<tr><td><a href='{html.escape(href)}'>{html.escape(key.scene_id)}</a></td>"
            f"<td><code>{html.escape(key.params_hash[:8])}</code> {html.escape(key.mode)}"
            f"{' gpu ' + html.escape(key.gpu_source) if key.gpu_source else ''}</td>"
            f"<td class='num'>{len(series.points)}</td>"
            f"<td class='num'>{_value(newest.median if newest else None, unit)}</td>"
            f"<td class='{css}'>{html.escape(words)}</td><td>{html.escape(change)}</td>"
            f"<td class='open'>{html.escape(series.open_regression or '')}</td></tr>")


SCENE_HEAD = ("<tr><th>scene</th><th>params, mode</th><th>runs</th><th>newest median</th><th>latest verdict</th>"
              "<th>change points</th><th>open regression</th></tr>")


@dataclass
class DeviceSummary:
    device: str
    backend: str
    page: str
    scenes: int = 0
    runs: int = 0
    newest: str = ""
    open: int = 0
    verdicts: dict[str, int] | None = None


def write_device(site: Path, device: str, backend: str, rows: Sequence[tuple[SceneSeries, Path]]) -> DeviceSummary:
    folder = site / "devices"
    folder.mkdir(parents=True, exist_ok=True)
    name = device_slug(rows[0][0].key)
    ordered = sorted(rows, key=lambda r: (r[0].open_regression is None, r[0].key.scene_id))
    table = "".join(_scene_row(series, _link(page, folder) or "") for series, page in ordered)
    body = (f"<nav><a href='../index.html'>all devices</a></nav><h1>{html.escape(device)}/{html.escape(backend)}"
            f"</h1><p class='muted'>{len(rows)} scene series; open regressions first; click a header to sort</p>"
            f"<table class='sortable'><thead>{SCENE_HEAD}"
            f"</thead><tbody>{table}</tbody></table>")
    (folder / f"{name}.html").write_text(_page(f"{device}/{backend}", 1, body, ["assets/tables.js"]),
                                         encoding="utf-8")
    verdicts: dict[str, int] = {}
    for series, _ in rows:
        latest = series.latest_verdict
        if latest is not None:
            verdicts[latest[1].verdict] = verdicts.get(latest[1].verdict, 0) + 1
    return DeviceSummary(device, backend, f"devices/{name}.html", len(rows), sum(len(s.points) for s, _ in rows),
                         max((s.points[-1].started_utc for s, _ in rows if s.points), default=""),
                         sum(1 for s, _ in rows if s.open_regression), verdicts)


def write_index(site: Path, devices: Sequence[DeviceSummary], open_rows: Sequence[tuple[SceneSeries, Path]],
                facts: SiteFacts, engines_section: str = "") -> Path:
    """index.html; `engines_section`: the list of engines pages (publish/engines.py), after the regressions."""
    device_rows = "".join(
        f"<tr><td><a href='{html.escape(d.page)}'>{html.escape(d.device)}</a></td><td>{html.escape(d.backend)}</td>"
        f"<td class='num'>{d.scenes}</td><td class='num'>{d.runs}</td>"
        f"<td>{html.escape(d.newest[:19].replace('T', ' '))}</td>"
        f"<td class='num {'open' if d.open else ''}'>{d.open}</td><td>"
        + ", ".join(f"<span class='{html.escape(w)}'>{html.escape(w)} {n}</span>"
                    for w, n in sorted((d.verdicts or {}).items(), key=lambda wn: verdict_rank(wn[0])))
        + "</td></tr>" for d in devices)
    regressions = "".join(
        f"<tr><td>{html.escape(s.key.device)}/{html.escape(s.key.backend)}</td>"
        + _scene_row(s, _link(page, site) or "")[4:] for s, page in open_rows)
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in facts.notes)
    body = (f"<h1>zbench history</h1><p class='muted'>{html.escape(facts.history)}; metric "
            f"{html.escape(facts.metric)}, the newest {facts.last} run(s) of each series; verdicts from "
            f"{facts.verdict_files} run.json file(s); published {generated}</p>"
            f"<h2>Devices</h2><table class='sortable'><thead><tr><th>device</th><th>backend</th><th>scene series</th><th>runs</th>"
            f"<th>newest run (UTC)</th><th>open regressions</th><th>latest verdicts</th></tr></thead>"
            f"<tbody>{device_rows}</tbody></table>"
            f"<h2>Open regressions ({len(open_rows)})</h2>"
            + (f"<table class='sortable'><thead><tr><th>device</th>{SCENE_HEAD[4:]}</thead><tbody>{regressions}</tbody></table>"
               if open_rows else "<p>none</p>")
            + engines_section
            + (f"<h2>Notes</h2><ul>{notes}</ul>" if notes else ""))
    index = site / "index.html"
    index.write_text(_page("zbench history", 0, body, ["assets/tables.js"]), encoding="utf-8")
    return index
