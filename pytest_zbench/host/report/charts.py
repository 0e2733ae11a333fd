"""The report's charts as inline SVG: plain values in, one `<figure>` out, every chart with axes, tick values,
units, a legend and hover titles (docs/report.md). No library and no script: the report stays one offline
file that any browser shows, and the few chart kinds it needs (lines, a step CDF, bars, an effect interval,
per-launch strips of baseline and candidate, a scene's history with its change points, an adaptive scene's
fit) are small enough to keep here."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...adaptive_score import not_measured
from ...regression.gate import interval_text, ratio_text
from ...regression.verdict_words import CHART_COLOURS, NEUTRAL_COLOUR

WIDTH, HEIGHT = 560, 220
LEFT, RIGHT, TOP, BOTTOM = 52, 12, 26, 40  # margins: tick labels left and below, the legend on top
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
BUDGET_COLOUR = "#b22222"
# Baseline and candidate keep one colour each in every chart that sets them side by side.
BASELINE_COLOUR, CANDIDATE_COLOUR = COLOURS[0], COLOURS[1]
CHANGE_COLOUR = COLOURS[4]
# A reference distribution beside per-launch series (whose colours are COLOURS by launch): none of theirs.
REFERENCE_COLOUR = "#222222"
LEGEND_ROW = 14


@dataclass
class Series:
    label: str
    values: list[float | None]
    colour: str = COLOURS[0]
    dashed: bool = False


@dataclass
class Chart:
    """One plot area: data ranges mapped to pixels, and the SVG parts drawn so far."""

    x_min: float
    x_max: float
    y_min: float
    y_max: float
    parts: list[str] = field(default_factory=list)
    legend_parts: list[str] = field(default_factory=list)
    extra: int = 0  # the legend's rows past the first push the plot down by this much

    def x(self, value: float) -> float:
        span = (self.x_max - self.x_min) or 1.0
        return LEFT + (value - self.x_min) / span * (WIDTH - LEFT - RIGHT)

    def y(self, value: float) -> float:
        span = (self.y_max - self.y_min) or 1.0
        return HEIGHT - BOTTOM - (value - self.y_min) / span * (HEIGHT - TOP - BOTTOM)

    def axes(self, x_label: str, y_label: str, *, x_ticks: Sequence[tuple[float, str]] | None = None) -> None:
        bottom, top = HEIGHT - BOTTOM, TOP
        for value in nice_ticks(self.y_min, self.y_max):
            y = self.y(value)
            self.parts.append(f"<line x1='{LEFT}' x2='{WIDTH - RIGHT}' y1='{y:.1f}' y2='{y:.1f}' stroke='#e4e4e4'/>"
                              f"<text x='{LEFT - 4}' y='{y + 3:.1f}' text-anchor='end' class=tick>{_num(value)}</text>")
        ticks = x_ticks if x_ticks is not None else [(v, _num(v)) for v in nice_ticks(self.x_min, self.x_max)]
        for value, text in ticks:
            x = self.x(value)
            self.parts.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{bottom}' y2='{bottom + 4}' stroke='#888'/>"
                              f"<text x='{x:.1f}' y='{bottom + 14}' text-anchor='middle' class=tick>"
                              f"{html.escape(text)}</text>")
        self.parts.append(f"<line x1='{LEFT}' x2='{WIDTH - RIGHT}' y1='{bottom}' y2='{bottom}' stroke='#888'/>"
                          f"<line x1='{LEFT}' x2='{LEFT}' y1='{top}' y2='{bottom}' stroke='#888'/>"
                          f"<text x='{(LEFT + WIDTH - RIGHT) / 2}' y='{HEIGHT - 6}' text-anchor='middle' "
                          f"class=axis-label>{html.escape(x_label)}</text>"
                          f"<text transform='translate(12 {(top + bottom) / 2}) rotate(-90)' text-anchor='middle' "
                          f"class=axis-label>{html.escape(y_label)}</text>")

    def legend(self, entries: Sequence[tuple[str, str, bool]]) -> None:
        """Entries in rows above the plot: a row that is full starts the next, and the plot moves down."""
        x: float = LEFT
        row = 0
        for label, colour, dashed in entries:
            width = 28 + 6.2 * len(label)
            if x > LEFT and x + width > WIDTH - RIGHT:
                x, row = LEFT, row + 1
            y = 12 + LEGEND_ROW * row
            dash = " stroke-dasharray='4 3'" if dashed else ""
            self.legend_parts.append(f"<g class=legend-entry><line x1='{x}' x2='{x + 16}' y1='{y}' y2='{y}' "
                                     f"stroke='{colour}' stroke-width='2'{dash}/><text x='{x + 20}' y='{y + 4}'>"
                                     f"{html.escape(label)}</text></g>")
            x += width
        self.extra = LEGEND_ROW * row

    def figure(self, caption: str, kind: str) -> str:
        height = HEIGHT + self.extra
        return (f"<figure class='chart {kind}'><svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {WIDTH} {height}' "
                f"width='{WIDTH}' height='{height}' role='img' aria-label='{html.escape(caption)}'>"
                + "".join(self.legend_parts) + f"<g transform='translate(0 {self.extra})'>" + "".join(self.parts)
                + f"</g></svg><figcaption>{html.escape(caption)}</figcaption></figure>")


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values (1, 2, 2.5 or 5 times a power of ten) covering [low, high]."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low]
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.ceil(low / step - 1e-9) * step
    return [round(first + i * step, 10) for i in range(int((high - first) / step + 1e-9) + 1)]


def clip_top(values: Sequence[float], budget: float | None) -> float:
    """The value range's top: the 99th percentile with room, so one 960 ms cold frame does not flatten every
    other frame (values above it are drawn as markers at the edge, with their value). The budget is in range
    when it is near the data; far above it (a 0.2 ms frame against 16.7 ms) it would flatten them too, and
    the legend says it is off the axis instead."""
    if not values:
        return budget or 1.0
    ordered = sorted(values)
    p99 = ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]  # nearest rank: of 100 frames, the 99th
    top = max(p99 * 1.25, ordered[0] * 1.05, 1e-3)
    if budget and budget <= 2 * top:
        top = max(top, budget * 1.15)
    return top


def _budget_entry(budget: float | None, top: float) -> list[tuple[str, str, bool]]:
    if not budget:
        return []
    where = "" if budget <= top else ", above the axis"
    return [(f"budget {budget:.2f} ms{where}", BUDGET_COLOUR, True)]


def timeline(series: Sequence[Series], *, budget: float | None, warmup: int, y_label: str, caption: str) -> str:
    """Per-frame values of each launch against the frame index, warmup shaded, the budget as a line, values
    above the clipped range as triangles at the top."""
    values = [v for s in series for v in s.values if v is not None]
    if not values:
        return ""
    longest = max(len(s.values) for s in series)
    # The range is the measured frames': cold warmup frames are shaded, and clipped like any outlier.
    measured = [v for s in series for v in s.values[warmup:] if v is not None] or values
    chart = Chart(0, max(longest - 1, 1), 0, clip_top(measured, budget))
    if warmup:
        chart.parts.append(f"<rect x='{LEFT}' y='{TOP}' width='{chart.x(warmup - 0.5) - LEFT:.1f}' "
                           f"height='{HEIGHT - TOP - BOTTOM}' fill='#eee' class=warmup><title>warmup frames "
                           f"(not in the statistics)</title></rect>")
    chart.axes("frame index (launch start = 0)", y_label)
    _budget_line(chart, budget, horizontal=True)
    clipped = 0
    for s in series:
        points = []
        for i, v in enumerate(s.values):
            if v is None:
                continue
            if v > chart.y_max:
                clipped += 1
                x = chart.x(i)
                chart.parts.append(f"<path d='M{x - 4:.1f},{TOP + 6} L{x + 4:.1f},{TOP + 6} L{x:.1f},{TOP} Z' "
                                   f"fill='{s.colour}' class=outlier><title>{html.escape(s.label)}, frame {i}: "
                                   f"{v:.2f} ms (above the axis)</title></path>")
                v = chart.y_max
            points.append(f"{chart.x(i):.1f},{chart.y(v):.1f}")
        dash = " stroke-dasharray='4 3'" if s.dashed else ""
        chart.parts.append(f"<polyline fill='none' stroke='{s.colour}' stroke-width='1.2'{dash} "
                           f"points='{' '.join(points)}'><title>{html.escape(s.label)}</title></polyline>")
    chart.legend([(s.label, s.colour, s.dashed) for s in series] + _budget_entry(budget, chart.y_max))
    note = f"; {clipped} frame(s) above the axis, marked ▲" if clipped else ""
    return chart.figure(caption + note, "timeline")


@dataclass
class Quantiles:
    """A distribution known only at some levels (run.json regression.distributions.frames): drawn in the CDF
    as points joined by straight lines, beside the series drawn at full resolution."""

    label: str
    levels: list[float]  # 0..1, increasing
    values: list[float]
    colour: str = REFERENCE_COLOUR


def cdf(series: Sequence[Series], *, budget: float | None, x_label: str, caption: str,
        references: Sequence[Quantiles] = ()) -> str:
    """Empirical CDF of each series at its full resolution, the budget as a vertical line, and each reference
    distribution (the baseline's) through its known levels; the x range is clipped like a timeline's (the
    share of frames beyond it is in the caption)."""
    values = [v for s in series for v in s.values if v is not None]
    if not values:
        return ""
    top = clip_top(values + [v for r in references for v in r.values[:-1]], budget)
    chart = Chart(0, top, 0, 1)
    chart.axes(x_label, "share of frames ≤ x", x_ticks=[(v, _num(v)) for v in nice_ticks(0, top)])
    _budget_line(chart, budget, horizontal=False)
    beyond = 0
    for s in series:
        ordered = sorted(v for v in s.values if v is not None)
        if not ordered:
            continue
        n = len(ordered)
        path = [f"M{chart.x(0):.1f},{chart.y(0):.1f}"]
        for i, v in enumerate(ordered):
            if v > top:
                beyond += n - i
                break
            path.append(f"H{chart.x(v):.1f}V{chart.y((i + 1) / n):.1f}")
        path.append(f"H{chart.x(top):.1f}")
        dash = " stroke-dasharray='4 3'" if s.dashed else ""
        chart.parts.append(f"<path d='{''.join(path)}' fill='none' stroke='{s.colour}' stroke-width='1.4'{dash}>"
                           f"<title>{html.escape(s.label)}: {n} frames, median {ordered[n // 2]:.2f} ms</title></path>")
    for r in references:
        _quantile_curve(chart, r, top)
    chart.legend([(s.label, s.colour, s.dashed) for s in series] + [(r.label, r.colour, True) for r in references]
                 + _budget_entry(budget, top))
    note = f"; {beyond} frame(s) beyond the axis" if beyond else ""
    return chart.figure(caption + note, "cdf")


def _quantile_curve(chart: Chart, r: Quantiles, top: float) -> None:
    """A reference distribution: its known levels as dots joined by a dashed line, clipped at the axis' right end
    (the longest frame beyond it is in its dot's title)."""
    points = [(min(v, top), level, v) for level, v in zip(r.levels, r.values)]
    line = " ".join(f"{chart.x(x):.1f},{chart.y(level):.1f}" for x, level, _ in points)
    chart.parts.append(f"<g class=reference><polyline fill='none' stroke='{r.colour}' stroke-width='2.2' "
                       f"stroke-dasharray='6 3' points='{line}'/>"
                       + "".join(f"<circle cx='{chart.x(x):.1f}' cy='{chart.y(level):.1f}' r='3.5' fill='{r.colour}'>"
                                 f"<title>{html.escape(r.label)}: {100 * level:g} % of frames ≤ {v:.3f} ms</title>"
                                 "</circle>" for x, level, v in points)
                       + "</g>")


def bars(labels: Sequence[str], counts: Sequence[int], *, x_label: str, caption: str) -> str:
    top = max(counts, default=0)
    if not top:
        return ""
    chart = Chart(-0.5, len(counts) - 0.5, 0, top * 1.1)
    chart.axes(x_label, "frames", x_ticks=list(zip(range(len(labels)), labels)))
    width = (WIDTH - LEFT - RIGHT) / len(counts) * 0.8
    for i, (label, count) in enumerate(zip(labels, counts)):
        y = chart.y(count)
        chart.parts.append(f"<rect x='{chart.x(i) - width / 2:.1f}' y='{y:.1f}' width='{width:.1f}' "
                           f"height='{HEIGHT - BOTTOM - y:.1f}' fill='#4a78b5'><title>{html.escape(label)} ms: "
                           f"{count} frames</title></rect>"
                           + (f"<text x='{chart.x(i):.1f}' y='{y - 3:.1f}' text-anchor='middle' class=tick>{count}"
                              "</text>" if count else ""))
    return chart.figure(caption, "buckets")


@dataclass
class Effect:
    metric: str
    verdict: str
    effect: float
    ci: tuple[float, float]
    bar: float




# The effect axis: ratios on a log scale (1.25x slower sits as far from 1 as 0.8x faster), clipped to this
# range, so that the wide interval of a thin baseline (0.03x..300x) does not squash every point onto 1; an
# interval end past it is drawn as an arrow at the edge, and the title keeps the true numbers.
EFFECT_AXIS = (0.25, 4.0)
EFFECT_TICKS = (0.25, 0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0)


def effects(rows: Sequence[Effect], *, caption: str) -> str:
    """Each judged metric's effect (candidate / baseline) with its confidence interval, against 1 and the bar
    a change must clear: the verdict in one look."""
    if not rows:
        return ""
    row_h = 26
    height = TOP + BOTTOM + row_h * len(rows)
    extent = [v for r in rows for v in (r.ci[0], r.ci[1], 1 + r.bar, 1 - r.bar, r.effect) if math.isfinite(v) and v > 0]
    lo = max(EFFECT_AXIS[0], min(extent) / 1.05)
    hi = min(EFFECT_AXIS[1], max(extent) * 1.05)
    chart = Chart(math.log(lo), math.log(hi), 0, 1)

    def x(value: float) -> float:
        return chart.x(math.log(min(max(value, lo), hi)) if value > 0 else chart.x_min)

    left, right = chart.x(chart.x_min), chart.x(chart.x_max)
    parts = []
    shown: list[float] = []  # 1x first, then the others that leave room for their labels
    for value in sorted((t for t in EFFECT_TICKS if lo <= t <= hi), key=lambda t: (t != 1.0, abs(math.log(t)))):
        if all(abs(x(value) - x(other)) >= 34 for other in shown):
            shown.append(value)
    for value in shown:
        parts.append(f"<line x1='{x(value):.1f}' x2='{x(value):.1f}' y1='{TOP}' y2='{height - BOTTOM}' stroke='#e4e4e4'/>"
                     f"<text x='{x(value):.1f}' y='{height - BOTTOM + 14}' text-anchor='middle' class=tick>{value:g}x</text>")
    parts.append(f"<line x1='{x(1.0):.1f}' x2='{x(1.0):.1f}' y1='{TOP}' y2='{height - BOTTOM}' stroke='#555'/>"
                 f"<line x1='{left}' x2='{right}' y1='{height - BOTTOM}' y2='{height - BOTTOM}' stroke='#888'/>"
                 f"<text x='{(left + right) / 2}' y='{height - 6}' text-anchor='middle' class=axis-label>"
                 "candidate / baseline, log scale (1x = no change; shaded: the bar a change must clear)</text>")
    for i, row in enumerate(rows):
        y = TOP + row_h * i + row_h / 2
        colour = CHART_COLOURS.get(row.verdict, NEUTRAL_COLOUR)
        low, high = x(1 - row.bar), x(1 + row.bar)
        parts.append(f"<rect x='{low:.1f}' y='{y - 9:.1f}' width='{high - low:.1f}' height='18' fill='#f1f1f1'/>"
                     f"<line x1='{x(row.ci[0]):.1f}' x2='{x(row.ci[1]):.1f}' y1='{y}' y2='{y}' "
                     f"stroke='{colour}' stroke-width='3'/>"
                     f"<circle cx='{x(row.effect):.1f}' cy='{y}' r='4.5' fill='{colour}'><title>"
                     f"{html.escape(row.metric)}: {html.escape(ratio_text(row.effect))}, CI {html.escape(interval_text(*row.ci))}, "
                     f"{html.escape(row.verdict)}</title></circle>"
                     f"<text x='{right + 6:.1f}' y='{y + 4}' class=effect-label fill='{colour}'>"
                     f"{html.escape(row.metric)} {html.escape(row.verdict)}</text>")
        for end, edge, sign in ((row.ci[0], lo, -1), (row.ci[1], hi, 1)):
            if end < edge if sign < 0 else end > edge:  # the interval goes on past the axis: an arrow
                tip = x(edge)
                parts.append(f"<path class=clipped d='M{tip:.1f},{y} l{-7 * sign},-5 l0,10 z' fill='{colour}'/>")
    return _figure("effects", WIDTH + 190, height, parts, caption)


def _figure(kind: str, width: float, height: float, parts: Sequence[str], caption: str) -> str:
    """A chart laid out by its own rows (not a Chart's fixed plot area) as a `<figure>`."""
    return (f"<figure class='chart {kind}'><svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {width} {height}' "
            f"width='{width}' height='{height}' role='img' aria-label='{html.escape(caption)}'>" + "".join(parts)
            + f"</svg><figcaption>{html.escape(caption)}</figcaption></figure>")


@dataclass
class Strip:
    """One row of a strip plot: one side's per-launch values (a baseline session, or the candidate)."""

    label: str
    values: list[float]
    colour: str
    highlight: bool = False


def strips(rows: Sequence[Strip], *, x_label: str, title: str, title_colour: str,
           legend: Sequence[tuple[str, str]], caption: str) -> str:
    """Per-launch values of each side on one value axis: a row per side (each baseline session its own, so
    their spread shows), a dot per launch, a bar at each row's median. The gate judges these values, so the
    candidate's dots among the baseline's say what the effect says, at the launches' resolution."""
    values = [v for r in rows for v in r.values if math.isfinite(v)]
    if not values:
        return ""
    row_h, label_w = 20, 120  # label_w: the row labels' column, left of the plot
    top = 8 + 2 * LEGEND_ROW  # the title line, then the legend line
    bottom = top + row_h * len(rows)
    low, high = min(values), max(values)
    pad = (high - low) * 0.08 or abs(high) * 0.05 or 1.0
    # Gate metrics are never negative: the axis does not go below zero for room (a jank share of 0 everywhere).
    chart = Chart(max(low - pad, 0.0) if low >= 0 else low - pad, high + pad, 0, 1)
    parts = [f"<text x='{label_w + LEFT}' y='14' class=strip-title fill='{title_colour}' font-weight='600'>"
             f"{html.escape(title)}</text>"]
    x = float(label_w + LEFT)
    for label, colour in legend:
        parts.append(f"<g class=legend-entry><circle cx='{x + 5}' cy='{14 + LEGEND_ROW - 4}' r='4' fill='{colour}'/>"
                     f"<text x='{x + 13}' y='{14 + LEGEND_ROW}'>{html.escape(label)}</text></g>")
        x += 24 + 6.2 * len(label)
    plot = []
    for value in nice_ticks(chart.x_min, chart.x_max):
        px = chart.x(value)
        plot.append(f"<line x1='{px:.1f}' x2='{px:.1f}' y1='{top}' y2='{bottom}' stroke='#e4e4e4'/>"
                    f"<line x1='{px:.1f}' x2='{px:.1f}' y1='{bottom}' y2='{bottom + 4}' stroke='#888'/>"
                    f"<text x='{px:.1f}' y='{bottom + 14}' text-anchor='middle' class=tick>{_num(value)}</text>")
    for i, row in enumerate(rows):
        y = top + row_h * i + row_h / 2
        if row.highlight:
            plot.append(f"<rect x='{LEFT}' y='{y - row_h / 2:.1f}' width='{WIDTH - LEFT - RIGHT}' height='{row_h}' "
                        f"fill='{row.colour}' opacity='0.08'/>")
        plot.append(f"<text x='{LEFT - 6}' y='{y + 4}' text-anchor='end' class=strip-label>"
                    f"{html.escape(row.label)}</text>")
        known = sorted(v for v in row.values if math.isfinite(v))
        for k, value in enumerate(row.values):
            if math.isfinite(value):
                jitter = (-4, 0, 4)[k % 3]  # launches with equal values stay apart
                plot.append(f"<circle cx='{chart.x(value):.1f}' cy='{y + jitter}' r='3' fill='{row.colour}' "
                            f"opacity='0.75'><title>{html.escape(row.label)}, launch {k}: {_num(value)}</title>"
                            "</circle>")
        if known:
            median = (known[(len(known) - 1) // 2] + known[len(known) // 2]) / 2
            plot.append(f"<line x1='{chart.x(median):.1f}' x2='{chart.x(median):.1f}' y1='{y - 8}' y2='{y + 8}' "
                        f"stroke='{row.colour}' stroke-width='2.5' class=median><title>{html.escape(row.label)}: "
                        f"median {_num(median)} of {len(known)} launches</title></line>")
    plot.append(f"<line x1='{LEFT}' x2='{WIDTH - RIGHT}' y1='{bottom}' y2='{bottom}' stroke='#888'/>"
                f"<text x='{(LEFT + WIDTH - RIGHT) / 2}' y='{bottom + 30}' text-anchor='middle' class=axis-label>"
                f"{html.escape(x_label)}</text>")
    parts.append(f"<g transform='translate({label_w} 0)'>" + "".join(plot) + "</g>")
    return _figure("strips", WIDTH + label_w, bottom + 38, parts, caption)


@dataclass
class HistoryPoint:
    """One session of a scene's history: its value, the tick under it (its date), what its hover title says."""

    value: float | None
    tick: str
    title: str
    candidate: bool = False


def history(points: Sequence[HistoryPoint], steps: Sequence[tuple[int, str]], *, y_label: str,
            caption: str) -> str:
    """A scene's value per session, oldest first, with its change points (each `(index of the first session
    after the step, label)`) as dashed lines between sessions, labelled at the top; this run's session ringed."""
    known = [p.value for p in points if p.value is not None and math.isfinite(p.value)]
    if not known:
        return ""
    low, high = min(known), max(known)
    pad = (high - low) * 0.15 or abs(high) * 0.05 or 1.0
    chart = Chart(-0.5, max(len(points) - 0.5, 0.5), max(low - pad, 0.0), high + pad)
    # As many tick labels as fit (about 7 px a character), the newest among them: labels never overlap.
    fit = max(2, int((WIDTH - LEFT - RIGHT) / (7 * max(len(p.tick) for p in points) + 12)))
    every = max(1, math.ceil(len(points) / fit))
    chart.axes("session, oldest to newest (date of the run)", y_label,
               x_ticks=[(i, p.tick) for i, p in enumerate(points) if (len(points) - 1 - i) % every == 0])
    for k, (index, label) in enumerate(steps):
        px = chart.x(index - 0.5)
        anchor, dx = ("end", -3) if px > WIDTH / 2 else ("start", 3)
        chart.parts.append(f"<line x1='{px:.1f}' x2='{px:.1f}' y1='{TOP}' y2='{HEIGHT - BOTTOM}' "
                           f"stroke='{CHANGE_COLOUR}' stroke-width='1.5' stroke-dasharray='5 3' class=change-point>"
                           f"<title>change point: {html.escape(label)}</title></line>"
                           f"<text x='{px + dx:.1f}' y='{TOP + 10 + 12 * (k % 2)}' text-anchor='{anchor}' "
                           f"class=change-label fill='{CHANGE_COLOUR}'>{html.escape(label)}</text>")
    line = " ".join(f"{chart.x(i):.1f},{chart.y(p.value):.1f}" for i, p in enumerate(points) if p.value is not None)
    chart.parts.append(f"<polyline fill='none' stroke='{BASELINE_COLOUR}' stroke-width='1.2' points='{line}'/>")
    for i, p in enumerate(points):
        if p.value is None:
            continue
        colour, radius = (CANDIDATE_COLOUR, 5.5) if p.candidate else (BASELINE_COLOUR, 3)
        ring = " stroke='#333' stroke-width='1.5' class=candidate" if p.candidate else ""
        chart.parts.append(f"<circle cx='{chart.x(i):.1f}' cy='{chart.y(p.value):.1f}' r='{radius}' "
                           f"fill='{colour}'{ring}><title>{html.escape(p.title)}</title></circle>")
    entries = [("median of a session's launches", BASELINE_COLOUR, False)]
    if any(p.candidate for p in points):
        entries.append(("this run", CANDIDATE_COLOUR, False))
    if steps:
        entries.append(("change point", CHANGE_COLOUR, True))
    chart.legend(entries)
    return chart.figure(caption, "history")


def adaptive_fit(adaptive: Mapping[str, Any]) -> str:
    """An adaptive scene's frame cost against complexity: each scored launch's step medians and its fitted
    hinge (flat at the budget, then rising), the budget, the score and its interval. Everything drawn comes from
    run.json's `adaptive` section."""
    fits = (adaptive.get("fit") or {}).get("launches") or []
    budget = float(adaptive["budget_ms"])
    unit = str(adaptive.get("unit", ""))
    score = adaptive.get("score")
    unmeasured = not_measured(adaptive)
    caption = (f"frame cost (uncapped interval, ms) against complexity ({unit}); budget {budget:.2f} ms; "
               + (f"score not measured: {unmeasured}" if unmeasured is not None else f"score {score:.4g}"))
    points = [(float(p[0]), float(p[1])) for fit in fits for p in fit["points"]]
    if not points:
        chart = Chart(0, 1, 0, 1)
        chart.parts.append(f"<text x='{LEFT + 10}' y='{TOP + 20}'>no scored launch</text>")
        return chart.figure(caption, "adaptive")
    chart = Chart(0, max(x for x, _ in points) * 1.05 or 1.0, 0, max(max(y for _, y in points), 2 * budget) * 1.1)
    chart.axes(f"complexity ({unit})", "ms per frame")
    _budget_line(chart, budget, horizontal=True)
    ci = adaptive.get("ci")
    if ci:
        lo, hi = (min(max(float(v), chart.x_min), chart.x_max) for v in ci)
        chart.parts.append(f"<rect x='{chart.x(lo):.1f}' y='{TOP}' width='{max(chart.x(hi) - chart.x(lo), 1):.1f}' "
                           f"height='{HEIGHT - TOP - BOTTOM}' fill='{COLOURS[0]}' opacity='0.15'>"
                           f"<title>95% CI {ci[0]:.4g}..{ci[1]:.4g}</title></rect>")
    if score is not None and score <= chart.x_max:
        x = chart.x(float(score))
        chart.parts.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{TOP}' y2='{HEIGHT - BOTTOM}' stroke='{COLOURS[0]}'>"
                           f"<title>score {score:.4g}</title></line>")
    entries: list[tuple[str, str, bool]] = []
    for n, fit in enumerate(fits):
        colour = COLOURS[n % len(COLOURS)]
        xs = [float(p[0]) for p in fit["points"]]
        knee = min(max(float(fit["score"]), 0.0), max(xs))
        hinge = [(min(xs), budget), (knee, budget),
                 (max(xs), budget + float(fit["slope_ms"]) * max(0.0, max(xs) - knee))]
        chart.parts.append(f"<polyline fill='none' stroke='{colour}' stroke-width='1.2' points='"
                           + " ".join(f"{chart.x(x):.1f},{chart.y(min(y, chart.y_max)):.1f}" for x, y in hinge)
                           + f"'><title>launch {fit['launch']}: score {fit['score']:.4g}</title></polyline>")
        chart.parts += [f"<circle cx='{chart.x(x):.1f}' cy='{chart.y(min(y, chart.y_max)):.1f}' r='2.5' "
                        f"fill='{colour}'><title>launch {fit['launch']}: {x:g} {html.escape(unit)}, {y:.2f} ms "
                        f"({frames} frames)</title></circle>" for x, y, frames in fit["points"]]
        entries.append((f"launch {fit['launch']}", colour, False))
    chart.legend(entries + _budget_entry(budget, chart.y_max))
    return chart.figure(caption, "adaptive")


def _budget_line(chart: Chart, budget: float | None, *, horizontal: bool) -> None:
    if not budget:
        return
    title = f"<title>frame budget {budget:.2f} ms</title>"
    if horizontal:
        if budget <= chart.y_max:
            y = chart.y(budget)
            chart.parts.append(f"<line x1='{LEFT}' x2='{WIDTH - RIGHT}' y1='{y:.1f}' y2='{y:.1f}' "
                               f"stroke='{BUDGET_COLOUR}' stroke-dasharray='4 3' class=budget>{title}</line>")
    elif budget <= chart.x_max:
        x = chart.x(budget)
        chart.parts.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{TOP}' y2='{HEIGHT - BOTTOM}' "
                           f"stroke='{BUDGET_COLOUR}' stroke-dasharray='4 3' class=budget>{title}</line>")


def _num(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
