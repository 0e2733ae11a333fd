"""The terminal summary table of a session, from run.json scene entries."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

COLUMNS = ("device", "scene", "runs", "frame p50", "p95", "p99", "cpu p50", "gpu p50", "jank", "regression", "perf", "golden")


def summary_lines(scenes: Iterable[dict[str, Any]], devices: dict[str, Any] | None = None) -> list[str]:
    """The table; gpu_ms of a device whose GPU time source failed the timer check is not shown, and a line
    under the table says why (`devices`: run.json's per-device sections, for the timer check's detail); a
    device whose declared refresh rate disagrees with the measured one gets a warning line."""
    scenes = list(scenes)
    rows: list[tuple[str, ...]] = [COLUMNS]
    for entry in sorted(scenes, key=lambda e: (e["device"], e["id"])):
        if entry.get("adaptive") is not None:
            rows.append(_adaptive_row(entry))
            continue
        metrics = entry.get("metrics") or {}
        frame, cpu, gpu = (metrics.get(k) or {} for k in ("frame_ms", "cpu_ms", "gpu_ms"))
        share = metrics.get("jank_share")
        runs = f"{entry.get('complete_runs', entry['runs'])}/{entry['runs']}"
        rows.append((
            entry["device"], entry["id"], runs,
            _ms(frame.get("p50")), _ms(frame.get("p95")), _ms(frame.get("p99")),
            _ms(cpu.get("p50")), "untrusted" if entry.get("gpu_valid") is False else _ms(gpu.get("p50")),
            "-" if share is None else f"{metrics.get('jank', 0)} ({share:.1%})",
            _regression(entry.get("regression")),
            entry["outcome"] + (" (partial)" if entry.get("partial") else ""),
            (entry.get("correctness") or {}).get("outcome", "-"),
        ))
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    if any(e.get("adaptive") is not None for e in scenes):
        lines.append("adaptive scenes: 'frame p50' is the score, the largest complexity within the frame budget, "
                     "± half its 95% CI (run.json scenes[].adaptive)")
    for name in sorted({e["device"] for e in scenes if e.get("gpu_valid") is False}):
        check = ((devices or {}).get(name, {}).get("gpu") or {}).get("timer_check") or {}
        lines.append(f"gpu_ms of {name} not shown: its GPU time source failed the timer check "
                     f"({check.get('detail') or 'no detail'})")
    for _, sections in sorted((devices or {}).items()):
        warning = (sections.get("display") or {}).get("refresh_warning")
        if warning:
            lines.append(f"warning: {warning}")
    return lines


def _adaptive_row(entry: dict[str, Any]) -> tuple[str, ...]:
    """An adaptive scene's row: the score in place of frame p50; the per-frame statistics, which mix the
    complexities of the plan, are not shown."""
    adaptive = entry["adaptive"]
    runs = f"{entry.get('complete_runs', entry['runs'])}/{entry['runs']}"
    return (entry["device"], entry["id"], runs, _score(adaptive), "-", "-", "-", "-", "-",
            _regression(entry.get("regression"), "adaptive.score"),
            entry["outcome"] + (" (partial)" if entry.get("partial") else ""),
            (entry.get("correctness") or {}).get("outcome", "-"))


def _score(adaptive: dict[str, Any]) -> str:
    """1234±2.5% (a lower bound: >=1234)."""
    score, ci = adaptive.get("score"), adaptive.get("ci")
    if score is None:
        return "no score"
    text = (">=" if adaptive.get("censored") == "above" else "") + f"{score:.4g}"
    if ci and score > 0:
        text += f"±{(ci[1] - ci[0]) / 2 / score:.1%}"
    return text


def _regression(section: dict[str, Any] | None, metric: str = "cpu_ms.p50") -> str:
    """The verdict, with the effect on `metric` when the gate judged it (cpu_ms.p50 1.30x = 30 % slower;
    adaptive.score 0.80x = a score 20 % lower)."""
    if not section:
        return "-"
    effects = {m["metric"]: m.get("effect") for m in section.get("metrics", [])}
    effect = effects.get(metric)
    return str(section["verdict"]) + ("" if effect is None else f" {effect:.2f}x")


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
