"""The report's "Why it regressed" section of a regressed or improved scene (run.json `regression.attribution`,
regression/attribution.py; docs/regression.md, "Why it regressed"): each measurement's effect with its interval,
the moved ones first, and the link to the scene's diff trace (host/report/diff_trace.py)."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from .diff_trace import diff_trace_path, sides, wanted

KIND_WORDS = {"counter": "counter", "cpu_stage": "CPU stage", "timing": "frame time", "gpu": "GPU time", "system": "system",
              "cold_start": "cold start"}


def why_section(scene: dict[str, Any], results_dir: Path) -> str:
    """The section's HTML; '' for a scene without an attribution (neither regressed nor improved)."""
    section = scene.get("regression") or {}
    why = section.get("attribution") if isinstance(section, dict) else None
    if not isinstance(why, dict):
        return ""
    rows = []
    for m in why.get("measurements") or []:
        ci = m.get("ci")
        interval = (f"[{_ratio(ci[0])}, {_ratio(ci[1])}]" if isinstance(ci, list) and len(ci) == 2
                    and all(isinstance(v, (int, float)) for v in ci) else "")
        effect = m.get("effect")
        rows.append(
            f"<tr class='{'moved' if m.get('moved') else 'still'}'><td>{html.escape(str(m.get('name')))}</td>"
            f"<td>{html.escape(KIND_WORDS.get(str(m.get('kind')), str(m.get('kind'))))}</td>"
            f"<td>{_number(m.get('baseline_median'))}</td><td>{_number(m.get('candidate_median'))}</td>"
            f"<td>{_ratio(effect) + 'x' if isinstance(effect, (int, float)) else ''}</td><td>{interval}</td>"
            f"<td>{'moved' if m.get('moved') else ''}</td>"
            f"<td>{html.escape(str(m.get('how')))}{': ' + html.escape(str(m['note'])) if m.get('note') else ''}</td></tr>")
    moved = ", ".join(why.get("moved") or []) or "nothing"
    floor = why.get("moved_at") or 0.02
    title = "Why it improved" if section.get("verdict") == "improved" else "Why it regressed"
    out = [f"<div class=why><h3>{title}</h3><p>moved (interval excluding 1, at least {floor:.0%} from 1; the "
           f"work first, then what it cost): <b>{html.escape(moved)}</b>. Compared with "
           f"{html.escape(str(why.get('method') or 'exact comparisons only'))}.</p>",
           "<table class=why><tr><th>measurement</th><th>kind</th><th>baseline (median)</th><th>candidate (median)"
           "</th><th>effect</th><th>interval</th><th></th><th>how</th></tr>", *rows, "</table>", _trace_link(scene, results_dir),
           "</div>"]
    return "\n".join(part for part in out if part)


def _trace_link(scene: dict[str, Any], results_dir: Path) -> str:
    path = diff_trace_path(results_dir, scene)
    if sides(scene, results_dir) is None:
        return ("<p class=trace>No diff trace: the baseline's frames are not on disk (a history keeps them in its "
                "database); an A/B run (--zbench-ab) or a run.json baseline writes one.</p>")
    if path is None or not wanted(scene, results_dir) or not path.exists():
        return ""
    rel = path.relative_to(results_dir).as_posix()
    return (f"<p class=trace>Diff trace: <a href='{html.escape(rel)}'>{html.escape(rel)}</a>, the baseline's and the "
            "candidate's median launch side by side (open it in ui.perfetto.dev).</p>")


def _ratio(value: float) -> str:
    """As the why line writes a ratio: 2.00, 1.31, 0.045."""
    return f"{value:.2f}" if abs(value) >= 0.1 else f"{value:.2g}"


def _number(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else ""
