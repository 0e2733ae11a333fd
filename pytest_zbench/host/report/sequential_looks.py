"""How the sequential gate's looks at a scene read (run.json `scenes[].sequential`, regression/sequential.py;
docs/regression.md, "The sequential gate"): one line for the report and JUnit, and the report's table of looks.
Renderers read the record; they do not recompute the levels."""

from __future__ import annotations

import html
from typing import Any

from ...json_types import is_number

STOP_WORDS = {"decided": "decided", "futile": "undecided, and its maximum of launches could not decide it",
              "max_launches": "undecided at its maximum of launches",
              "budget": "the device session's budget ran out", "device_fault": "the device was quarantined",
              "interrupted": "undecided: the session was stopped (SIGINT or SIGTERM) during its rounds",
              "not_judged": "not gated"}


def summary_line(sequential: dict[str, Any]) -> str:
    """`sequential gate: decided same at look 3 (8 + 8 launches, at most 12 per side), level 0.0028 per direction
    (alpha 0.01, 0.005 per direction; Lan-DeMets alpha spending, ...); budget 5.0 min`."""
    looks = sequential.get("looks") or []
    stopped = sequential.get("stopped")
    last = looks[-1] if looks else None
    what = STOP_WORDS.get(str(stopped), str(stopped))
    if stopped == "decided" and last is not None:
        what = f"decided {last.get('verdict')}"
    where = (f" at look {len(looks)} ({last.get('launches_a')} + {last.get('launches_b')} launches, at most "
             f"{sequential.get('max_launches')} per side), level {_level(last.get('nominal_alpha'))} per direction"
             if last is not None else f" before its first look ({sequential.get('launches_a', 0)} + "
             f"{sequential.get('launches_b', 0)} launches)")
    per_direction = sequential.get("alpha_per_direction")
    split = f", {per_direction:g} per direction" if isinstance(per_direction, (int, float)) else ""
    return (f"sequential gate: {what}{where} (alpha {sequential.get('alpha')}{split}; "
            f"{sequential.get('design')}); budget {sequential.get('budget_min')} min")


def trail(sequential: dict[str, Any]) -> str:
    """The looks in one string for a JUnit property: `4+4 inconclusive @0; 6+6 inconclusive @0; 8+8 regressed
    @0.00059` (launches per side, verdict, the level each tail was tested at)."""
    return "; ".join(f"{look.get('launches_a')}+{look.get('launches_b')} {look.get('verdict')} "
                     f"@{_level(look.get('nominal_alpha'))}" for look in sequential.get("looks") or [])


def report_section(scene: dict[str, Any]) -> str:
    """The report's block of a scene the sequential gate judged: its line and a table of its looks; '' for a
    scene measured with a fixed launch count."""
    sequential = scene.get("sequential")
    if not isinstance(sequential, dict):
        return ""
    rows = []
    for look in sequential.get("looks") or []:
        effect = look.get("effect")
        verdict = str(look.get("verdict"))
        rows.append(f"<tr class='look {html.escape(verdict)}'><td>{look.get('index', 0) + 1}</td>"
                    f"<td>{look.get('launches_a')} + {look.get('launches_b')}</td>"
                    f"<td>{_number(look.get('fraction'), '.2f')}</td><td>{_level(look.get('nominal_alpha'))}</td>"
                    f"<td class='{html.escape(verdict)}'>{html.escape(verdict)}</td>"
                    f"<td>{_number(effect, '.3f') + 'x' if is_number(effect) else ''}</td>"
                    f"<td>{_number(look.get('elapsed_s'), '.1f')}</td></tr>")
    table = ("<table class=looks><tr><th>look</th><th>launches A + B</th><th>information fraction</th>"
             "<th>level per direction</th><th>verdict</th><th>effect (first metric)</th><th>s since the rounds "
             "began</th></tr>" + "".join(rows) + "</table>") if rows else ""
    note = ("A level of 0: the permutation test of that many launches cannot reach the level alpha spending gives "
            "the look, so it spends nothing and could only stop the scene `same`.")
    zero = any(look.get("nominal_alpha") == 0 for look in sequential.get("looks") or [])
    return (f"<div class=sequential><p class=sequential>{html.escape(summary_line(sequential))}</p>{table}"
            + (f"<p class=note-levels>{html.escape(note)}</p>" if zero else "") + "</div>")


def _level(value: Any) -> str:
    if not is_number(value):
        return ""
    return "0" if value == 0 else f"{value:.2g}"


def _number(value: Any, spec: str) -> str:
    return format(value, spec) if is_number(value) else ""
