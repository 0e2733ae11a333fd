"""How a sustained run (run.json `scenes[].sustained`, host/measure/sustained.py) reads: one line of text for the
terminal and the report, and the report's chart of frame time and temperature over time on one time axis."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 44, 44, 12, 28
FRAME_COLOUR, CONDITION_COLOUR = "#4a78b5", "#c0504d"
# The condition charted beside frame time: the first of these the samples carry.
CHARTED_CONDITIONS = (("temp_c", "temperature", "°C"), ("load_avg_1m", "load average (1 min)", ""))


def headline_metric(sustained: dict[str, Any]) -> str | None:
    metrics = sustained.get("metrics") or {}
    return next((m for m in ("frame_ms", "cpu_ms", "gpu_ms") if m in metrics), None)


def summary_line(scene_id: str, device: str, sustained: dict[str, Any]) -> str:
    """`sustained SCENE on DEVICE: frame_ms burst 10.1 ms, sustained 12.3 ms, ratio 1.22 [1.18, 1.26] (drift),
    steady after 84 s; 13 conditions samples every 5 s over 120 s`."""
    name = headline_metric(sustained)
    head = f"sustained {scene_id} on {device}: "
    cover = sustained.get("coverage") or {}
    tail = (f"{cover.get('samples', 0)} conditions samples every {sustained.get('interval_s')} s over "
            f"{sustained.get('measured_s')} s")
    if name is None:
        return head + "no measured frames; " + tail
    m = sustained["metrics"][name]
    steady = ("still drifting at the end" if m["steady_s"] is None else f"steady after {m['steady_s']:.0f} s")
    return (f"{head}{name} burst {m['burst_ms']:.3f} ms, sustained {m['sustained_ms']:.3f} ms, ratio "
            f"{m['ratio']:.3f} [{m['ci'][0]:.3f}, {m['ci'][1]:.3f}] ({'drift' if m['drift'] else 'no drift'}), "
            f"{steady}; {tail}")


def report_section(scene: dict[str, Any]) -> str:
    """The report's sustained block of a scene: the summary line and the chart; '' for a normal run."""
    sustained = scene.get("sustained")
    if not sustained:
        return ""
    line = html.escape(summary_line(scene["id"], scene["device"], sustained))
    return f"<p class=sustained>{line}</p>" + chart(sustained)


def chart(sustained: dict[str, Any]) -> str:
    name = headline_metric(sustained)
    frames: Sequence[Sequence[float]] = sustained["metrics"][name]["trajectory"] if name else []
    conditions = sustained.get("conditions") or []
    key, label, unit = next(((k, lbl, u) for k, lbl, u in CHARTED_CONDITIONS
                             if any(isinstance(c.get(k), (int, float)) for c in conditions)), (None, "", ""))
    points = [(c["t_s"], float(c[key])) for c in conditions if key and isinstance(c.get(key), (int, float))]
    if not frames and not points:
        return ""
    t_values = [float(t) for t, _ in frames] + [float(t) for t, _ in points]
    t0, t1 = min(t_values), max(max(t_values), min(t_values) + 1e-9)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(t: float) -> float:
        return LEFT + (t - t0) / (t1 - t0) * plot_w

    def polyline(series: Sequence[Sequence[float]], colour: str, what: str) -> tuple[str, str, str]:
        values = [v for _, v in series]
        low, high = min(values), max(values)
        span = (high - low) or 1.0
        coords = " ".join(f"{x(t):.1f},{TOP + plot_h - (v - low) / span * plot_h:.1f}" for t, v in series)
        return (f"<polyline fill='none' stroke='{colour}' stroke-width='1.5' points='{coords}'>"
                f"<title>{html.escape(what)}</title></polyline>"), f"{low:.4g}", f"{high:.4g}"

    parts = [f"<line x1='{LEFT}' y1='{TOP + plot_h}' x2='{LEFT + plot_w}' y2='{TOP + plot_h}' stroke='#999'/>"]
    if frames:
        line, low, high = polyline(frames, FRAME_COLOUR, f"{name} (median per bin)")
        parts += [line, f"<text x='2' y='{TOP + 8}' font-size='9' fill='{FRAME_COLOUR}'>{high} ms</text>",
                  f"<text x='2' y='{TOP + plot_h}' font-size='9' fill='{FRAME_COLOUR}'>{low} ms</text>"]
    if points:
        line, low, high = polyline(points, CONDITION_COLOUR, label)
        parts += [line,
                  f"<text x='{WIDTH - 2}' y='{TOP + 8}' font-size='9' text-anchor='end' fill='{CONDITION_COLOUR}'>"
                  f"{high}{unit}</text>",
                  f"<text x='{WIDTH - 2}' y='{TOP + plot_h}' font-size='9' text-anchor='end' "
                  f"fill='{CONDITION_COLOUR}'>{low}{unit}</text>"]
    parts.append(f"<text x='{LEFT}' y='{HEIGHT - 8}' font-size='9'>{t0:.0f} s</text>"
                 f"<text x='{LEFT + plot_w}' y='{HEIGHT - 8}' font-size='9' text-anchor='end'>{t1:.0f} s</text>")
    caption = (f"sustained: frame time and temperature over time ({name or 'no frames'} in blue"
               f"{f', {label} in red' if points else ', no temperature sampled'}; seconds from the first "
               "measured frame)")
    return (f"<figure><svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{HEIGHT}' "
            f"style='background:#fafafa'>{''.join(parts)}</svg><figcaption>{html.escape(caption)}</figcaption>"
            "</figure>")
