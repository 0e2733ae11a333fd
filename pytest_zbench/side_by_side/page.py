"""The engines view's HTML: one column per engine, the reference first; per scene each engine's frame time p50
and p95, jank, an adaptive scene's score with its interval, and its ratio to the reference with the interval
drawn on a log strip; a scene an engine did not measure shows why. engines.html (document.py: `zbench engines`,
and `zbench publish` per machine whose runs hold several engines) and report.html's section of a run on several
devices (host/report/html.py) are made of these parts."""

from __future__ import annotations

import html
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..regression.verdict_words import CHART_COLOURS, NEUTRAL_COLOUR
from ..stats import BOOTSTRAP_CONFIDENCE
from .table import (
    SCORE_METRIC,
    Cell,
    Engine,
    Ratio,
    SideBySide,
    complete_launches,
    engines_of,
    ms,
    score_text,
    share,
    side_by_side,
)

# Added to report.html's CSS (host/report/html.py) wherever these parts are shown.
CSS = """
table.engines td,table.engines th,table.side td,table.side th{vertical-align:top;text-align:left}
table.side td{min-width:190px}table.side td.scene{min-width:0;font-weight:600;white-space:nowrap}
.fig{white-space:nowrap}.why{font-size:12px;color:#777;max-width:260px}
.ratio{white-space:nowrap}.slower{color:#b22222}.faster{color:#2a7a2a}.no-clear-difference{color:#555}
.not_run{color:#777}th.ref,td.ref{background:#f7f9fc}svg.strip{display:block;margin-top:2px}
svg.strip .tick{fill:#777;font-size:9px}
"""

# The ratio strip: a log axis symmetric about 1x, the same on every row of a page so that rows compare by eye;
# it spans the widest interval of the page, to a power of 2 from 2x up to 1024x (past it: an arrow at the end).
STRIP_W, STRIP_H, AXIS_MIN, AXIS_MAX = 190, 26, 2.0, 1024.0
DIRECTION_COLOURS = {"slower": CHART_COLOURS["regressed"], "faster": CHART_COLOURS["improved"],
                     "no clear difference": NEUTRAL_COLOUR}


def link(target: Path, page_folder: Path) -> str:
    """A link from a page in `page_folder` to `target`, relative so that a copied folder keeps it."""
    try:
        return Path(os.path.relpath(target.resolve(), page_folder.resolve())).as_posix()
    except ValueError:  # another drive (Windows)
        return target.resolve().as_uri()


def axis_bound(table: SideBySide) -> float:
    """The strip's end: the power of 2 that holds every ratio and interval end of the page (either way)."""
    ends = [v for row in table.rows for c in row.cells if c.ratio is not None
            for v in (c.ratio.value, *(c.ratio.ci or ())) if v > 0]
    widest = max((max(v, 1 / v) for v in ends), default=1.0)
    return min(max(2.0 ** math.ceil(math.log2(max(widest, 1.0)) - 1e-9), AXIS_MIN), AXIS_MAX)


def _axis_text(value: float) -> str:
    return f"{value:g}x" if value >= 1 else f"1/{1 / value:g}x"


def strip(ratio: Ratio, bound: float) -> str:
    """The ratio and its interval on the page's log axis, 1x and both ends labelled."""
    colour = DIRECTION_COLOURS[ratio.direction]
    left, right, y = 14.0, STRIP_W - 14.0, 8

    def x(value: float) -> float:
        clipped = min(max(value, 1 / bound), bound)
        return left + (math.log(clipped) + math.log(bound)) / (2 * math.log(bound)) * (right - left)

    one = x(1.0)
    parts = [f"<svg class=strip width={STRIP_W} height={STRIP_H} role=img>",
             f"<title>{html.escape(ratio.metric)} engine / reference {html.escape(ratio.text())} {ratio.direction}; "
             f"log axis {_axis_text(1 / bound)} to {_axis_text(bound)}</title>",
             f"<line x1={left} x2={right} y1={y} y2={y} stroke=#ddd />",
             f"<line x1={one:.1f} x2={one:.1f} y1=1 y2={y + 6} stroke=#999 />"]
    for value, anchor in ((1 / bound, "start"), (1.0, "middle"), (bound, "end")):
        at = {"start": left - 12, "middle": one, "end": right + 12}[anchor]
        parts.append(f"<text class=tick x={at:.1f} y={STRIP_H - 2} text-anchor={anchor}>{_axis_text(value)}</text>")
    if ratio.ci is not None:
        parts.append(f"<line x1={x(ratio.ci[0]):.1f} x2={x(ratio.ci[1]):.1f} y1={y} y2={y} stroke='{colour}' "
                     "stroke-width=3 />")
    point = x(ratio.value)
    if 1 / bound <= ratio.value <= bound:
        parts.append(f"<circle cx={point:.1f} cy={y} r=4 fill='{colour}' />")
    else:  # past the axis: an arrow at its end pointing outwards, the true value in the title and the text
        tip, back = (point + 5, point - 3) if ratio.value > bound else (point - 5, point + 3)
        parts.append(f"<polygon points='{tip:.1f},{y} {back:.1f},{y - 5} {back:.1f},{y + 5}' fill='{colour}' />")
    parts.append("</svg>")
    return "".join(parts)


def _cell(found: Cell, reference: str, bound: float) -> str:
    css = " class=ref" if found.engine == reference else ""
    if found.status != "measured":
        word = found.status.replace("_", " ")
        return (f"<td{css} data-status={found.status}><span class='badge {found.status}'>{word}</span>"
                f"<div class=why>{html.escape(found.reason)}</div></td>")
    lines = [f"<div class=fig>p50 {ms(found.frame_p50)} · p95 {ms(found.frame_p95)}</div>",
             f"<div class=fig>jank {share(found.jank_share)} · {found.launches} launch(es)</div>"]
    if found.score is not None:
        unit = f" {html.escape(found.score_unit)}" if found.score_unit else ""
        lines.append(f"<div class=fig>score {html.escape(score_text(found))}{unit}</div>")
    if found.engine == reference:
        lines.append("<div class=ratio>reference</div>")
    elif found.ratio is not None:
        direction = found.ratio.direction
        lines.append(f"<div class='ratio {direction.replace(' ', '-')}'>{html.escape(found.ratio.text())} "
                     f"{direction}</div>{strip(found.ratio, bound)}")
    else:
        lines.append(f"<div class=why>{html.escape(found.reason)}</div>")
    return f"<td{css} data-status=measured>{''.join(lines)}</td>"


def _engine_row(engine: Engine, page_folder: Path, reference: str) -> str:
    report = (f"<a href='{html.escape(link(engine.report, page_folder))}'>report.html</a>"
              if engine.report is not None else "")
    role = " (reference)" if engine.name == reference else ""
    return (f"<tr><td><b>{html.escape(engine.name)}</b>{role}</td><td>{html.escape(engine.backend)}</td>"
            f"<td>{html.escape(engine.runner)}</td><td>{html.escape(engine.renderer)}</td>"
            f"<td><code>{html.escape(engine.run_id[:8])}</code> {html.escape(engine.started_utc[:19].replace('T', ' '))}"
            f"</td><td>{html.escape(engine.machine)}</td><td>{report}</td></tr>")


def engines_table(table: SideBySide, page_folder: Path) -> str:
    """The engines: backend, runner, renderer, run, machine, a link to each run's report.html."""
    ref = table.reference.name
    engines = "".join(_engine_row(e, page_folder, ref) for e in table.engines)
    return ("<table class=engines><tr><th>engine</th><th>backend</th><th>runner</th><th>renderer</th><th>run</th>"
            f"<th>machine</th><th></th></tr>{engines}</table>")


def explanation(table: SideBySide) -> str:
    """What the figures are, in one paragraph, and the notes the reader must see."""
    bound = axis_bound(table)
    unmeasured = sum(1 for row in table.rows for c in row.cells if c.status != "measured")
    notes = "".join(f"<p class=failed>{html.escape(note)}</p>" for note in table.notes)
    return (f"<p>{len(table.rows)} scene(s), {len(table.engines)} engine(s), reference "
            f"<b>{html.escape(table.reference.name)}</b>. Frame time: the frame-to-frame interval (run.json "
            "<code>metrics.frame_ms</code>), the median over launches of each launch's percentile; jank: the share of "
            "janky frames. The ratio is engine / reference of the medians over launches of "
            f"<code>{html.escape(table.metric)}</code> (lower is faster; an adaptive scene: <code>{SCORE_METRIC}"
            f"</code>, higher is faster) with its {BOOTSTRAP_CONFIDENCE:.0%} interval by launch bootstrap, drawn on "
            f"one log axis for the whole page ({_axis_text(1 / bound)} to {_axis_text(bound)}, 1x marked); "
            f"<i>faster</i> or <i>slower</i> only when the interval excludes 1x. {unmeasured} cell(s) without "
            f"figures say why.</p>{notes}")


def scenes_table(table: SideBySide) -> str:
    """Per scene a row, per engine a column."""
    ref = table.reference.name
    bound = axis_bound(table)
    head = "".join(f"<th{' class=ref' if e.name == ref else ''}>{html.escape(e.name)}</th>" for e in table.engines)
    rows = "".join(f"<tr data-scene='{html.escape(row.scene)}'><td class=scene>{html.escape(row.scene)}</td>"
                   + "".join(_cell(c, ref, bound) for c in row.cells) + "</tr>" for row in table.rows)
    return f"<table class=side id=engines><tr><th>scene</th>{head}</tr>{rows}</table>"


def report_section(document: Mapping[str, Any], page_folder: Path) -> str:
    """report.html's section for a run on two or more devices that measured a scene: its engines side by side,
    the first device the reference (`zbench engines RUN --reference NAME` chooses another). Nothing otherwise."""
    engines = [e for e in engines_of(document, page_folder / "run.json")
               if any(complete_launches(s) for s in e.scenes.values())]
    if len(engines) < 2:
        return ""
    table = side_by_side(engines)
    return (f"<section id=engines-side-by-side><h2>Engines side by side</h2>{explanation(table)}"
            f"{scenes_table(table)}</section>")
