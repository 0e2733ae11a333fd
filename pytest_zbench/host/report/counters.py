"""The report's line of a scene's per-frame counters (run.json `metrics.counters`: the mean per measured
frame, the median over launches; the reference runner's columns are in docs/runner-protocol.md), and the
host's load on the scene in the figures the busy-host guard judges on (docs/report.md, "Counters")."""

from __future__ import annotations

import html
from typing import Any

from ...protocol import PREEMPTIONS_COLUMN
from ...regression.contention import mean_preempted_share, mean_stolen_share

# Listed first, in this order; any other counter a runner wrote follows, sorted by name.
ORDER = ("draw_calls", "state_changes", "rt_switches", "pixels_drawn", "alloc_bytes", "texture_upload_bytes",
         "minor_faults", "cpu_record_ms", "cpu_flush_ms", "cpu_submit_ms")
# Not a count to average: a frame is preempted or not, and a mean count per frame rounds to 0 where a sixth of
# the frames were preempted. It is shown as the share load_line gives, the figure the verdicts name.
AS_SHARE = (PREEMPTIONS_COLUMN,)


def counters_line(scene: dict[str, Any]) -> str:
    """`per frame (mean): draw_calls 1000 · pixels_drawn 384000 (overdraw 1.00x) · ...`, then the load line;
    '' without either."""
    counters = (scene.get("metrics") or {}).get("counters") or {}
    names = [n for n in ORDER if n in counters] + sorted(set(counters) - set(ORDER) - set(AS_SHARE))
    surface = scene.get("surface") or {}
    area = (surface.get("width") or 0) * (surface.get("height") or 0)
    items = []
    for name in names:
        value = counters[name]
        text = f"{name} {value:.3f}" if name.endswith("_ms") else f"{name} {value:.0f}"
        if name == "pixels_drawn" and area:
            text += f" (overdraw {value / area:.2f}x the surface)"
        items.append(text)
    line = (f"<p class=counters title='each counter: the mean over a launch's measured frames, the median over "
            f"launches'>per frame (mean): "
            f"{html.escape(' · '.join(items))}</p>" if items else "")
    return line + load_line(scene)


def load_line(scene: dict[str, Any]) -> str:
    """The host's load inside the scene's frames, by the busy-host guard's own definitions
    (regression/contention.py, over the scene's launches in run.json `per_run`): the share of measured frames
    the kernel preempted, and the share of cpu_ms other tasks took (stolen_ms). So the report and a verdict
    that names either figure say the same number."""
    launches = scene.get("per_run") or []
    preempted, stolen = mean_preempted_share(launches), mean_stolen_share(launches)
    items = []
    if preempted is not None:
        items.append(f"preempted frames {preempted:.1%} of measured frames")
    if stolen is not None:
        items.append(f"stolen time {stolen:.1%} of cpu_ms")
    if not items:
        return ""
    return (f"<p class=load>host load (mean over {len(launches)} launch(es)): {html.escape(' · '.join(items))}"
            "</p>")
