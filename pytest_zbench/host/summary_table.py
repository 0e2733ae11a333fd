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
    rows = [COLUMNS]
    for entry in sorted(scenes, key=lambda e: (e["device"], e["id"])):
        metrics = entry.get("metrics") or {}
        frame, cpu, gpu = (metrics.get(k) or {} for k in ("frame_ms", "cpu_ms", "gpu_ms"))
        share = metrics.get("jank_share")
        runs = f"{entry.get('complete_runs', entry['runs'])}/{entry['runs']}"
        rows.append((
            entry["device"], entry["id"], runs,
            _ms(frame.get("p50")), _ms(frame.get("p95")), _tail(frame, "p99"),
            _ms(cpu.get("p50")), "untrusted" if entry.get("gpu_valid") is False else _ms(gpu.get("p50")),
            "-" if share is None else f"{metrics.get('jank', 0)} ({share:.1%})",
            _regression(entry.get("regression")),
            entry["outcome"] + (" (partial)" if entry.get("partial") else ""),
            (entry.get("correctness") or {}).get("outcome", "-"),
        ))
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    if any("p99" in ((e.get("metrics") or {}).get("frame_ms") or {}).get("unreliable", []) for e in scenes):
        lines.append("~ p99 from fewer than 100 frames per launch: one or two frames, not a distribution's tail")
    for name in sorted({e["device"] for e in scenes if e.get("gpu_valid") is False}):
        check = ((devices or {}).get(name, {}).get("gpu") or {}).get("timer_check") or {}
        lines.append(f"gpu_ms of {name} not shown: its GPU time source failed the timer check "
                     f"({check.get('detail') or 'no detail'})")
    for _, sections in sorted((devices or {}).items()):
        warning = (sections.get("display") or {}).get("refresh_warning")
        if warning:
            lines.append(f"warning: {warning}")
    return lines


def _regression(section: dict[str, Any] | None) -> str:
    """The verdict, with the effect on cpu_ms.p50 when the gate judged it (1.30x = 30 % slower)."""
    if not section:
        return "-"
    effects = {m["metric"]: m.get("effect") for m in section.get("metrics", [])}
    effect = effects.get("cpu_ms.p50")
    return str(section["verdict"]) + ("" if effect is None else f" {effect:.2f}x")


def _tail(distribution: dict[str, Any], name: str) -> str:
    """A tail percentile, `~` in front when too few frames per launch stand behind it (stats.RELIABLE_FROM)."""
    shown = _ms(distribution.get(name))
    return f"~{shown}" if shown != "-" and name in distribution.get("unreliable", []) else shown


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
