"""report.html's sections on the corpus itself: whether each sweep isolates its cost (run.json `isolation`,
host/isolation.py) and what each differential pair's feature costs (run.json `differentials`,
host/differential.py). Read from run.json as it is: a run.json without them gives no section."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_zbench.host.isolation import MIN_ELASTICITY, MIN_RISE_MS, MIN_RISE_SHARE, RHO_THRESHOLD


def isolation_section(document: Mapping[str, Any]) -> str:
    """A table of every judged sweep: values and median costs, rho, the verdict and the likely cause."""
    entries: Any = document.get("isolation")
    if not isinstance(entries, list) or not entries:
        return ""
    rows = ["<div class=corpus id=isolation><h2>Isolation: does each sweep's cost rise with what it sweeps?</h2>"
            "<p>Spearman's rho of every complete launch's median cost against the swept value, and the "
            "elasticity: the share of the largest case's cost the dimension accounts for. A sweep scales with "
            f"rho &gt;= {RHO_THRESHOLD}, a rise of at least {MIN_RISE_MS} ms and {MIN_RISE_SHARE:.0%}, and an "
            f"elasticity of at least {MIN_ELASTICITY} (docs/scenes.md, Isolation). One that does not measures "
            "something else on that device.</p>",
            "<table><tr><th>device</th><th>sweep</th><th>dimension</th><th>metric</th><th>value: median ms</th>"
            "<th>launches</th><th>rho</th><th>elasticity</th><th>verdict</th><th>likely cause</th><th>reason</th>"
            "</tr>"]
    for e in sorted(entries, key=lambda e: (e.get("verdict") != "not_scaling", str(e.get("device")),
                                            str(e.get("family")))):
        verdict = str(e.get("verdict") or "")
        points = ", ".join(f"{_num(v)}: {_ms(m)}" for v, m in zip(e.get("values") or [], e.get("medians_ms") or []))
        cause = str(e.get("likely_cause") or "").replace("_", " ")
        css = "regressed" if verdict == "not_scaling" else "passed" if verdict == "scales" else "inconclusive"
        rows.append(f"<tr data-isolation='{html.escape(verdict)}'>" + "".join(
            f"<td>{html.escape(str(cell))}</td>" for cell in (e.get("device"), e.get("family"), e.get("dimension"),
                                                             e.get("metric") or "", points, e.get("launches"),
                                                             _num(e.get("rho")), _num(e.get("elasticity"))))
            + f"<td class='{css}'>{html.escape(verdict.replace('_', ' '))}</td><td>{html.escape(cause)}</td>"
            f"<td>{html.escape(str(e.get('reason') or ''))}</td></tr>")
    rows.append("</table></div>")
    return "\n".join(rows)


def differentials_section(document: Mapping[str, Any]) -> str:
    """A table of every differential pair: the feature, both sides' costs, the difference and its interval."""
    entries: Any = document.get("differentials")
    if not isinstance(entries, list) or not entries:
        return ""
    rows = ["<div class=corpus id=differentials><h2>Differential pairs: what each feature costs</h2>"
            "<p>A scene with a feature minus the scene without it: the difference of their median per-launch "
            "costs, with a 95 % bootstrap interval over launches (docs/scenes.md, Differential pairs).</p>",
            "<table><tr><th>device</th><th>feature</th><th>scene</th><th>minus</th><th>metric</th><th>with ms</th>"
            "<th>without ms</th><th>cost ms</th><th>interval</th><th>launches</th><th>verdict</th><th>reason</th>"
            "</tr>"]
    for d in entries:
        low, high = d.get("ci_low_ms"), d.get("ci_high_ms")
        interval = f"[{_ms(low)}, {_ms(high)}]" if low is not None and high is not None else "-"
        launches: Sequence[Any] = d.get("launches") or []
        verdict = str(d.get("verdict") or "")
        css = {"costs": "regressed", "saves": "improved", "no_difference": "passed"}.get(verdict, "inconclusive")
        rows.append(f"<tr data-differential='{html.escape(verdict)}'>" + "".join(
            f"<td>{html.escape(str(cell))}</td>" for cell in (
                d.get("device"), d.get("feature"), d.get("scene"), d.get("minus"), d.get("metric") or "",
                _ms(d.get("with_ms")), _ms(d.get("without_ms")), _ms(d.get("cost_ms")), interval,
                " / ".join(str(n) for n in launches)))
            + f"<td class='{css}'>{html.escape(verdict.replace('_', ' '))}</td>"
            f"<td>{html.escape(str(d.get('reason') or ''))}</td></tr>")
    rows.append("</table></div>")
    return "\n".join(rows)


def _ms(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def _num(value: Any) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"
