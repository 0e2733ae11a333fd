"""report.html's sections on the corpus itself: whether each sweep isolates its cost (run.json `isolation`,
host/verdicts/isolation.py) and what each differential pair's feature costs (run.json `differentials`,
host/verdicts/differentials.py). Read from run.json as it is: a run.json without them gives no section."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_zbench.host.verdicts.isolation import MIN_ELASTICITY, MIN_RISE_MS, MIN_RISE_SHARE, RHO_THRESHOLD


def isolation_section(document: Mapping[str, Any]) -> str:
    """A table of every judged sweep: values and median costs, rho, the verdict and the likely cause."""
    entries: Any = document.get("isolation")
    if not isinstance(entries, list) or not entries:
        return ""
    intro = ("Spearman's rho of every complete launch's median cost against the swept value, and the elasticity: "
             "the share of the largest case's cost the dimension accounts for. A sweep scales with "
             f"rho &gt;= {RHO_THRESHOLD}, a rise of at least {MIN_RISE_MS} ms and {MIN_RISE_SHARE:.0%}, and an "
             f"elasticity of at least {MIN_ELASTICITY} (docs/scenes.md, Isolation). One that does not measures "
             "something else on that device.")
    rows = []
    for e in sorted(entries, key=lambda e: (e.get("verdict") != "not_scaling", str(e.get("device")),
                                            str(e.get("family")))):
        verdict = str(e.get("verdict") or "")
        points = ", ".join(f"{_num(v)}: {_ms(m)}" for v, m in zip(e.get("values") or [], e.get("medians_ms") or []))
        cause = str(e.get("likely_cause") or "").replace("_", " ")
        css = "regressed" if verdict == "not_scaling" else "passed" if verdict == "scales" else "inconclusive"
        rows.append(_row("isolation", verdict, css, (
            e.get("device"), e.get("family"), e.get("dimension"), e.get("metric") or "", points, e.get("launches"),
            _num(e.get("rho")), _num(e.get("elasticity"))), e.get("reason"), after=(cause,)))
    return _table("isolation", "Isolation: does each sweep's cost rise with what it sweeps?", intro,
                  ("device", "sweep", "dimension", "metric", "value: median ms", "launches", "rho", "elasticity",
                   "verdict", "likely cause"), rows)


def differentials_section(document: Mapping[str, Any]) -> str:
    """A table of every differential pair: the feature, both sides' costs, the difference and its interval."""
    entries: Any = document.get("differentials")
    if not isinstance(entries, list) or not entries:
        return ""
    intro = ("A scene with a feature minus the scene without it: the difference of their median per-launch "
             "costs, with a 95 % bootstrap interval over launches (docs/scenes.md, Differential pairs).")
    rows = []
    for d in entries:
        low, high = d.get("ci_low_ms"), d.get("ci_high_ms")
        interval = f"[{_ms(low)}, {_ms(high)}]" if low is not None and high is not None else "-"
        launches: Sequence[Any] = d.get("launches") or []
        verdict = str(d.get("verdict") or "")
        css = {"costs": "regressed", "saves": "improved", "no_difference": "passed"}.get(verdict, "inconclusive")
        rows.append(_row("differential", verdict, css, (
            d.get("device"), d.get("feature"), d.get("scene"), d.get("minus"), d.get("metric") or "",
            _ms(d.get("with_ms")), _ms(d.get("without_ms")), _ms(d.get("cost_ms")), interval,
            " / ".join(str(n) for n in launches)), d.get("reason")))
    return _table("differentials", "Differential pairs: what each feature costs", intro,
                  ("device", "feature", "scene", "minus", "metric", "with ms", "without ms", "cost ms", "interval",
                   "launches", "verdict"), rows)


def _table(key: str, title: str, intro: str, headers: Sequence[str], rows: Sequence[str]) -> str:
    """A corpus section: its title and what it shows (both HTML), and a table whose last column is each row's reason."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    return "\n".join([f"<div class=corpus id={key}><h2>{title}</h2><p>{intro}</p>",
                      f"<table><tr>{head}<th class=prose>reason</th></tr>", *rows, "</table></div>"])


def _row(kind: str, verdict: str, css: str, cells: Sequence[Any], reason: Any, *, after: Sequence[str] = ()) -> str:
    """One row: its cells, the verdict coloured by `css`, the cells shown after it, and the reason as prose."""
    return (f"<tr data-{kind}='{html.escape(verdict)}'>"
            + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in cells)
            + f"<td class='{css}'>{html.escape(verdict.replace('_', ' '))}</td>"
            + "".join(f"<td>{html.escape(cell)}</td>" for cell in after)
            + f"<td class=prose>{html.escape(str(reason or ''))}</td></tr>")


def _ms(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def _num(value: Any) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"
