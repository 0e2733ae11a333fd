"""The sequential gate's schedule on one device: scenes launched in rounds within a budget of minutes.

Every scene first gets rounds up to its first look (4 launches per side), in the session's order; from then on
it is judged when its look schedule says so (regression/sequential.look_due; the look's level from alpha
spending) and stops once decided, once its intervals say its maximum could not decide it (futile), or at its
maximum of launches. What is left of the budget goes one round at a time to the undecided
scene closest to a decision (the fewest launches per side its intervals say it needs). A round that would not
fit in what is left (by that scene's last round) is not started. docs/regression.md, "The sequential gate".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...regression.gate import SceneVerdict
from ...regression.interleaved_ab import Arm
from ...regression.paired import PAIRED_IN_SESSIONS
from ...regression.sequential import (
    FIRST_LOOK,
    Look,
    SceneSequence,
    futile,
    launches_to_decide,
    look_due,
    pairs_rounds,
)
from .ab_launches import ABLaunches
from .results import SceneMeasurement

# One round is counterbalanced on its own (A, B, B, A): a drift during it charges neither side.
ROUND: tuple[Arm, ...] = ("A", "B", "B", "A")

# (A's measurement with B in .ab, the look's nominal level) -> the look's verdict, None when not gated
LookJudge = Callable[[SceneMeasurement, float], "SceneVerdict | None"]


@dataclass
class _Scene:
    launches: ABLaunches
    sequence: SceneSequence
    order: int
    round_s: float = 0.0
    to_decide: float = 0.0  # launches per side its intervals say a decision needs (smaller: more promising)

    @property
    def launched_per_side(self) -> int:
        ab = self.launches.a.ab
        return 0 if ab is None else min(ab.order.count("A"), ab.order.count("B"))

    @property
    def judged_per_side(self) -> tuple[int, int]:
        ab = self.launches.a.ab
        return len(self.launches.a.summaries), 0 if ab is None else len(ab.b.summaries)


def run_rounds(scenes: Sequence[ABLaunches], judge: LookJudge, *, budget_s: float, max_launches: int, alpha: float,
               clock: Callable[[], float] = time.monotonic) -> None:
    """Launch and judge the scenes round by round until each is decided, at its maximum, or out of budget;
    each scene's `a.sequential` holds its looks and why it stopped. The caller finishes the ABLaunches."""
    started = clock()
    pending: list[_Scene] = []
    for order, launches in enumerate(scenes):
        if launches.a.job is None:  # skipped: the runner cannot draw it
            continue
        # Rounds are A, B, B, A: the i-th A and the i-th B are adjacent, so the looks judge paired rounds where
        # the maximum lets the sign-flip test spend its alpha
        sequence = SceneSequence(max_launches=max_launches, alpha=alpha, budget_min=budget_s / 60.0,
                                 paired=PAIRED_IN_SESSIONS and pairs_rounds(max_launches, alpha))
        launches.a.sequential = sequence
        pending.append(_Scene(launches, sequence, order))
    while pending:
        if any(s.launches.quarantined for s in pending):
            _stop(pending, "device_fault")
            return
        left = budget_s - (clock() - started)
        fitting = [s for s in pending if s.round_s <= left and left > 0]
        if not fitting:
            _stop(pending, "budget")
            return
        scene = min(fitting, key=lambda s: (s.launched_per_side >= FIRST_LOOK, s.to_decide, s.order))
        round_started = clock()
        scene.launches.run(list(ROUND))
        scene.round_s = clock() - round_started
        if _look(scene, judge, clock() - started, final=scene.launched_per_side >= max_launches):
            pending.remove(scene)
        elif scene.launched_per_side >= max_launches:
            scene.sequence.stopped = "max_launches"
            pending.remove(scene)


def _look(scene: _Scene, judge: LookJudge, elapsed_s: float, *, final: bool) -> bool:
    """Judge the scene when a look is due (or, `final`, on its last round: failed launches can leave it short of
    the maximum); True when that stops it."""
    n_a, n_b = scene.judged_per_side
    n = min(n_a, n_b)
    sequence = scene.sequence
    last = min(sequence.looks[-1].launches_a, sequence.looks[-1].launches_b) if sequence.looks else 0
    # not yet its first look, not yet its next one, or the round's launches all failed (no new information)
    if not (look_due(n, last, sequence.max_launches) or (final and n > last and n >= FIRST_LOOK)):
        return False
    level = sequence.level(n)
    verdict = judge(scene.launches.a, level)
    if verdict is None:
        sequence.stopped = "not_judged"
        return True
    first = verdict.verdicts[0] if verdict.verdicts else None
    sequence.looks.append(Look(index=len(sequence.looks), launches_a=n_a, launches_b=n_b,
                               fraction=min(n / sequence.max_launches, 1.0), nominal_alpha=level,
                               verdict=verdict.verdict, effect=first.effect if first else None,
                               elapsed_s=round(elapsed_s, 3)))
    if verdict.verdict != "inconclusive":
        sequence.stopped = "decided"
        return True
    scene.to_decide = launches_to_decide(verdict, n)
    if futile(scene.to_decide, n, sequence.max_launches, futile_from=sequence.futile_from):
        sequence.stopped = "futile"
        return True
    return False


def _stop(scenes: list[_Scene], reason: str) -> None:
    for scene in scenes:
        scene.sequence.stopped = reason  # type: ignore[assignment]
    scenes.clear()
