"""A bisect's A/B of two commits, tried again with more launches when it ends undecided (docs/engine-ci.md,
"Undecided A/Bs: retries").

The first attempt of a pair runs as the user's --pytest-args ask. An attempt that ends `inconclusive` may be
retried with twice the launches per side of the one before (the sequential gate's --zbench-max-launches and its
--zbench-budget; without the sequential gate, --zbench-runs), up to the bisect's cap, while the bisect's budget
of minutes lasts.

Launches are not pooled across attempts. The sequential gate's alpha-spending design has spent all of its alpha
by its maximum (information fraction 1), so an attempt that ended undecided has no alpha left to extend with,
and judging its launches again together with new ones would be a second test of the same data at full alpha.
Each retry is therefore a fresh A/B with its own design and its own alpha, and the bisect counts every attempt
in its error bound: the chance that any attempt calls a pair of identical builds `regressed` is at most the sum
of the attempts' alphas (a union bound), which bisect.json reports as `false_alarm_bound`.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..regression.config import DEFAULT_ALPHA
from ..settings import DEFAULT_MAX_LAUNCHES, DEFAULT_RUNS

DEFAULT_CAP = 64  # launches per side of one attempt: three attempts from the sequential gate's 16
DEFAULT_BUDGET_MIN = 60.0  # minutes of a whole bisect after which no retry is started


@dataclass(frozen=True)
class Design:
    """How many launches one attempt gets: per side under the sequential gate (with its minutes per session),
    else a fixed count per side."""

    launches: int  # --zbench-max-launches under the sequential gate, else --zbench-runs
    budget_min: float | None  # --zbench-budget: None is the fixed design

    @property
    def sequential(self) -> bool:
        return self.budget_min is not None

    def scaled(self, launches: int) -> Design:
        """This design with `launches` per side; the session's minutes grow in proportion."""
        budget = None if self.budget_min is None else self.budget_min * launches / self.launches
        return Design(launches, budget)

    def arguments(self) -> list[str]:
        """pytest arguments that set this design, placed after the user's own (the last one given wins)."""
        if self.budget_min is None:
            return [f"--zbench-runs={self.launches}"]
        return [f"--zbench-max-launches={self.launches}", f"--zbench-budget={self.budget_min:g}"]

    def to_json(self) -> dict[str, Any]:
        return {"launches_per_side": self.launches, "session_budget_min": self.budget_min,
                "design": "sequential" if self.sequential else "fixed"}


def first_design(pytest_args: Sequence[str]) -> Design:
    """The design the user's --pytest-args give the first attempt (the plugin's defaults where they say
    nothing; an ini file's zbench_budget is not seen here, so give the sequential gate in --pytest-args)."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--zbench-budget", type=float, default=None)
    parser.add_argument("--zbench-max-launches", type=int, default=DEFAULT_MAX_LAUNCHES)
    parser.add_argument("--zbench-runs", type=int, default=DEFAULT_RUNS)
    known, _ = parser.parse_known_args(list(pytest_args))
    if known.zbench_budget is not None:
        return Design(known.zbench_max_launches, known.zbench_budget)
    return Design(known.zbench_runs, None)


@dataclass(frozen=True)
class RetryPolicy:
    """When an undecided attempt is tried again: twice its launches, up to `cap` per side, while the bisect
    has run less than `budget_min` and the retry's estimated time fits in what is left."""

    first: Design
    cap: int = DEFAULT_CAP
    budget_min: float = DEFAULT_BUDGET_MIN

    def next_design(self, last: Design) -> Design | None:
        """The design of the retry after an attempt of `last`, or None when `last` was already at the cap."""
        if last.launches >= self.cap:
            return None
        return last.scaled(min(last.launches * 2, self.cap))

    def refusal(self, last: Design, last_seconds: float, elapsed_s: float, *, made: int | None = None,
                stopped: str | None = None) -> str | None:
        """Why no retry follows an undecided attempt of `last` that took `last_seconds`, or None to retry.
        `made`: the launches per side it made (a sequential attempt may stop before its maximum, `stopped`
        saying why); the time a launch takes is reckoned from those."""
        following = self.next_design(last)
        made = last.launches if made is None else max(made, 1)
        if following is None:
            if made < last.launches:  # it did not use the cap: saying it had it would be untrue
                why = ("its intervals said the cap would not decide it" if stopped == "futile"
                       else f"stopped: {stopped}" if stopped else "it stopped early")
                return (f"it stopped at {made} launches per side ({why}); the cap of {self.cap} launches per side "
                        "(--max-launches) allows no larger retry")
            return f"it had the cap of {self.cap} launches per side (--max-launches)"
        estimate = last_seconds * following.launches / made
        left = self.budget_min * 60.0 - elapsed_s
        if estimate > left:
            return (f"a retry of {following.launches} launches per side would take about {estimate / 60:.1f} min and "
                    f"{max(left, 0) / 60:.1f} min of the bisect's {self.budget_min:g} are left (--budget)")
        return None


@dataclass
class Attempt:
    """One A/B session of a pair for one scene: its design, why it was made, what it measured and said."""

    number: int  # 1 for the first attempt
    design: Design
    why: str
    regression: dict[str, Any]  # run.json's `regression` of the scene
    launches_a: int
    launches_b: int
    stopped: str | None  # the sequential gate's stop reason, None for a fixed design
    seconds: float  # of the session (the ends' first attempt measures every scene in it)

    @property
    def verdict(self) -> str | None:
        return self.regression.get("verdict")

    @property
    def alpha(self) -> float:
        """The level this attempt's A/B test spent (the gate's alpha, the sequential design's in total)."""
        value = (self.regression.get("settings") or {}).get("alpha")
        return float(value) if isinstance(value, (int, float)) and 0 < value < 1 else DEFAULT_ALPHA

    def to_json(self) -> dict[str, Any]:
        return {"attempt": self.number, **self.design.to_json(), "why": self.why, "verdict": self.verdict,
                "launches_a": self.launches_a, "launches_b": self.launches_b, "stopped": self.stopped,
                "alpha": self.alpha, "seconds": round(self.seconds, 1)}


def attempt_from_entry(number: int, design: Design, why: str, entry: dict[str, Any], seconds: float) -> Attempt:
    """An attempt from a run.json scene entry (its `regression`, `ab` launch order and `sequential` section)."""
    order = (entry.get("ab") or {}).get("order") or []
    sequential = entry.get("sequential") or {}
    return Attempt(number, design, why, entry.get("regression") or {}, order.count("A"), order.count("B"),
                   sequential.get("stopped"), seconds)


def false_alarm_bound(attempts: Sequence[Attempt]) -> float:
    """The union bound on any attempt calling identical builds `regressed`: the sum of their alphas."""
    return min(1.0, math.fsum(a.alpha for a in attempts))
