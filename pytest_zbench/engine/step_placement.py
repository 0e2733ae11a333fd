"""Which side of the culprit a bisect step M lies on, from its two A/Bs against the ends: GOOD→M and M→BAD
(docs/engine-ci.md, "A step from both ends").

Each A/B's verdict says something about M only when it is decided:

* GOOD→M `regressed`: M is slower than GOOD: it has the slowdown (bad side);
* M→BAD `same`: M is as fast as BAD, within the bars: bad side;
* M→BAD `regressed`: BAD is slower than M: M lacks the slowdown (good side);
* GOOD→M `same`: M is as fast as GOOD: good side.

A `regressed` counts for a whole side only when its effect could be the bisected one (the ends' effect): when
its interval lies wholly below the ends' interval, M holds only part of the slowdown, which came in parts, and
the step is not placed. One decided side is enough when the other is undecided: `inconclusive` says nothing
about M. Decided sides that disagree (both `regressed`: in parts; both `same`: the ends' change smaller than
the bars; an `improved` anywhere, which one slowdown between the ends cannot make) leave the step ambiguous.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Side = Literal["bad", "good", "ambiguous", "undecided"]


@dataclass(frozen=True)
class Placement:
    side: Side
    why: str
    leaned: bool = False  # placed from one decided A/B, the other undecided


def deciding(regression: dict[str, Any]) -> dict[str, Any] | None:
    """The metric that decided the verdict (a regressed one first), with its effect and interval."""
    metrics = regression.get("metrics") or []
    if not metrics:
        return None
    order = {"regressed": 0, "inconclusive": 1, "improved": 2, "same": 3}
    best = min(metrics, key=lambda m: order.get(m.get("verdict"), 4))
    return {"metric": best.get("metric"), "verdict": best.get("verdict"), "effect": best.get("effect"),
            "ci": best.get("ci")}


def _partial(regression: dict[str, Any], ends: dict[str, Any] | None) -> bool:
    """A regressed A/B whose effect is surely smaller than the ends' (its interval wholly below theirs)."""
    step, whole = deciding(regression), ends
    if not step or not whole:
        return False
    step_ci, whole_ci = step.get("ci") or [], whole.get("ci") or []
    return (step.get("metric") == whole.get("metric") and len(step_ci) == 2 and len(whole_ci) == 2
            and step_ci[1] < whole_ci[0])


def place(before: dict[str, Any], after: dict[str, Any], ends: dict[str, Any] | None,
          names: tuple[str, str, str]) -> Placement:
    """The side of step M from GOOD→M (`before`) and M→BAD (`after`), run.json `regression` entries; `ends` is
    the deciding metric of GOOD→BAD; `names` the short names of GOOD, M and BAD for the reasons."""
    good, step, bad = names
    b, a = before.get("verdict"), after.get("verdict")
    said = f"{good}->{step} {b}, {step}->{bad} {a}"
    if "improved" in (b, a):
        return Placement("ambiguous", f"{said}: an improvement cannot come from one slowdown between the ends")
    if b == "regressed" and a == "regressed":
        return Placement("ambiguous", f"{said}: the slowdown came in parts (the step is slower than {good} and "
                                      f"faster than {bad})")
    if b == "same" and a == "same":
        return Placement("ambiguous", f"{said}: the step is within the bars of both ends")
    for regressed, name in ((b == "regressed" and before, "before"), (a == "regressed" and after, "after")):
        if regressed and _partial(regressed, ends):
            return Placement("ambiguous", f"{said}: the {'step' if name == 'before' else 'rest'}'s effect is surely "
                                          "smaller than the ends': the slowdown came in parts")
    # After the conflicts above, at most one side is indicated (regressed on one A/B and same on the other agree).
    bad_side = b == "regressed" or a == "same"
    good_side = a == "regressed" or b == "same"
    if bad_side or good_side:
        leaned = not ({a, b} <= {"regressed", "same"})
        side: Side = "bad" if bad_side else "good"
        return Placement(side, f"{said}: {'placed by the decided side, the other undecided' if leaned else 'both agree'}",
                         leaned)
    return Placement("undecided", f"{said}: neither side is decided")
