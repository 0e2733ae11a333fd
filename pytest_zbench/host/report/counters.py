"""The report's line of a scene's per-frame counters (run.json `metrics.counters`: the mean per measured
frame, the median over launches; the reference runner's columns are in docs/runner-protocol.md)."""

from __future__ import annotations

import html
from typing import Any

# Listed first, in this order; any other counter a runner wrote follows, sorted by name.
ORDER = ("draw_calls", "state_changes", "rt_switches", "pixels_drawn", "alloc_bytes", "texture_upload_bytes",
         "minor_faults", "cpu_record_ms", "cpu_flush_ms", "cpu_submit_ms")


def counters_line(scene: dict[str, Any]) -> str:
    """`per frame (mean): draw_calls 1000 · pixels_drawn 384000 (overdraw 1.00x) · ...`; '' without counters."""
    counters = (scene.get("metrics") or {}).get("counters") or {}
    names = [n for n in ORDER if n in counters] + sorted(set(counters) - set(ORDER))
    if not names:
        return ""
    surface = scene.get("surface") or {}
    area = (surface.get("width") or 0) * (surface.get("height") or 0)
    items = []
    for name in names:
        value = counters[name]
        text = f"{name} {value:.3f}" if name.endswith("_ms") else f"{name} {value:.0f}"
        if name == "pixels_drawn" and area:
            text += f" (overdraw {value / area:.2f}x the surface)"
        items.append(text)
    return f"<p class=counters>per frame (mean): {html.escape(' · '.join(items))}</p>"
