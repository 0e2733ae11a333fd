"""The sequential gate's statistics: a verdict re-judged after every round of launches, its false-alarm rate
held at the gate's alpha however many looks it takes (docs/regression.md, "The sequential gate").

Design: Lan-DeMets alpha spending (DESIGN: Hwang-Shih-DeCani gamma -1; O'Brien-Fleming type, "obf", available),
t = launches so far / the scene's maximum (per side in A/B). Each direction (regressed, improved) spends half the
scene's alpha, so the chance of any false change stays at alpha and of a false `regressed` (what fails a build)
at alpha / 2. At each look the gate's own test (regression/gate.py) runs at a nominal one-sided level: the
boundary b_k that makes the chance of first crossing at look k, with no change, equal to
alpha(t_k) - alpha(t_{k-1}), computed by the Armitage-McPherson-Rowe recursion on the canonical joint distribution
of the looks' statistics (corr = sqrt(t_j / t_k)). A look whose level the permutation test could barely reach
(below REACHABLE_SPLITS times its smallest p-value) spends nothing and leaves it to the next look.

Stopping for `same` (every metric's interval inside its same bar; a tail metric's is wider) never declares a
change, so it spends no alpha: it can only lower the false-alarm rate.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .config import GateConfig, per_direction
from .gate import SceneVerdict, Verdict, judge_interleaved, min_launches_per_side
from .multiplicity import EXHAUSTIVE_SPLITS, PERMUTATIONS
from .paired import flip_floor

# The spending function (docs/regression.md, "The sequential gate"), chosen with bench/bench_sequential_gate.py:
# Hwang-Shih-DeCani gamma -1 spends more at the middle looks than O'Brien-Fleming, where a 10 % slowdown is
# decided, for fewer launches on average at about the same power.
DESIGN = "hsd:-1"
DESIGN_NAMES = {"obf": "Lan-DeMets alpha spending, O'Brien-Fleming type, alpha split per direction",
                "hsd:-1": "Lan-DeMets alpha spending, Hwang-Shih-DeCani gamma -1, alpha split per direction"}
# A look spends nothing unless its level is at least this many times the smallest p-value its permutation test
# can give: below that only the few most extreme splits could reject, so most of what it would spend is lost to
# the test's discreteness; the next look spends it instead (bench: fewer launches at the same power).
REACHABLE_SPLITS = 5
# The look schedule, launches per side: the first look (below 4 + 4 the permutation test cannot reach p < 1/70),
# then a look every LOOK_EVERY more, and one at the maximum.
FIRST_LOOK = 4
LOOK_EVERY = 2
# Futility (docs/regression.md, "Stopping for futility"): from this look on (launches per side), an undecided
# scene whose intervals say it needs more launches per side than its maximum stops `futile`, its verdict
# inconclusive: the launches it would still get could not decide it, and they go to the other scenes. Stopping
# without a verdict declares no change, so it spends no alpha (a non-binding futility bound).
FUTILE_FROM = 6
StopReason = Literal["decided", "futile", "max_launches", "budget", "device_fault", "not_judged"]
# Points of the recursion's grid per look: the boundaries it gives move by < 1e-4 in z past 800 (unit test).
GRID_POINTS = 1200


def spent_alpha(fraction: float, alpha: float) -> float:
    """The O'Brien-Fleming-type spending function: alpha spent by information fraction t (0 < t <= 1)."""
    from scipy import stats  # here, not at import: see boundaries

    t = min(max(fraction, 1e-12), 1.0)
    return float(2.0 - 2.0 * stats.norm.cdf(stats.norm.ppf(1.0 - alpha / 2.0) / math.sqrt(t)))


def hsd_spent_alpha(fraction: float, alpha: float, gamma: float) -> float:
    """The Hwang-Shih-DeCani spending function: alpha (1 - e^(-gamma t)) / (1 - e^(-gamma)); gamma -4 is close
    to O'Brien-Fleming, larger gammas spend more of alpha at the middle looks (gamma 0: alpha t)."""
    t = min(max(fraction, 0.0), 1.0)
    if gamma == 0:
        return alpha * t
    return float(alpha * -math.expm1(-gamma * t) / -math.expm1(-gamma))


def spending(design: str) -> Callable[[float, float], float]:
    """The spending function a design names: "obf" or "hsd:GAMMA" (docs/regression.md)."""
    if design == "obf":
        return spent_alpha
    if design.startswith("hsd:"):
        gamma = float(design[4:])
        return lambda t, alpha: hsd_spent_alpha(t, alpha, gamma)
    raise ValueError(f"unknown alpha-spending design {design!r}: expected 'obf' or 'hsd:GAMMA'")


def boundaries(fractions: Sequence[float], alpha: float, design: str = "obf",
               floors: Sequence[float] | None = None) -> tuple[float, ...]:
    """One-sided z boundaries for looks at the increasing information fractions `fractions`.

    A later look with the same fraction as the one before (no new launch) gets an infinite boundary: it
    spends nothing. `floors`, when given, are the smallest one-sided p-value each look's test can reach (the
    permutation test of n + n launches: 1 / C(2n, n)): a look whose level would fall below its floor could
    never reject, so it gets an infinite boundary and spends nothing, and what it did not spend is spent by the
    next look (Lan-DeMets: each look spends up to alpha(t_k), less what the looks before it spent)."""
    # scipy here, not at import: this module is imported by every session (host/measure/results.py), but only
    # a sequential A/B session draws boundaries, and scipy.optimize with scipy.stats took about a second of a
    # session's start (regression/gate.py _scipy_special).
    from scipy import optimize, stats

    spend = spending(design)
    out: list[float] = []
    grid = density = None  # the sub-density of S_k = Z_k sqrt(t_k) on paths that have not crossed yet
    previous_t, previous_spent = 0.0, 0.0
    for k, t in enumerate(fractions):
        t = min(float(t), 1.0)
        spent = spend(t, alpha)
        increment = spent - previous_spent
        if t <= previous_t or increment <= 0:
            out.append(math.inf)
            continue
        step = t - previous_t
        if grid is None:
            b = float(stats.norm.isf(increment))
        else:
            assert density is not None
            weights = density * np.gradient(grid)  # trapezoid-like quadrature weights

            def crossing(b: float, grid: np.ndarray = grid, weights: np.ndarray = weights,
                         step: float = step, t: float = t) -> float:
                return float(np.sum(weights * stats.norm.sf((b * math.sqrt(t) - grid) / math.sqrt(step))))

            if crossing(12.0) >= increment:  # too little mass left to spend: nothing can cross
                b = 12.0
            else:
                b = float(optimize.brentq(lambda z, target=increment: crossing(z) - target, -12.0, 12.0, xtol=1e-7))
        unreachable = floors is not None and float(stats.norm.sf(b)) < floors[k]
        if unreachable:
            b = math.inf
        out.append(b)
        top = (10.0 if unreachable else b) * math.sqrt(t)
        new_grid = np.linspace(-8.0 * math.sqrt(t), top, GRID_POINTS)
        if grid is None:
            density = stats.norm.pdf(new_grid, scale=math.sqrt(t))
        else:
            kernel = np.exp(-0.5 * ((new_grid[:, None] - grid[None, :]) / math.sqrt(step)) ** 2) / math.sqrt(
                2 * math.pi * step)
            density = kernel @ weights
        grid = new_grid
        previous_t = t
        if not unreachable:
            previous_spent = spent
    return tuple(out)


def nominal_alphas(fractions: Sequence[float], alpha: float, design: str = "obf",
                   floors: Sequence[float] | None = None) -> tuple[float, ...]:
    """The one-sided level each look's test runs at (the tail beyond its boundary; 0: the look spends nothing)."""
    return _nominal_alphas(tuple(float(f) for f in fractions), float(alpha), design,
                           None if floors is None else tuple(float(f) for f in floors))


@functools.lru_cache(maxsize=256)  # a session's scenes mostly look at the same fractions
def _nominal_alphas(fractions: tuple[float, ...], alpha: float, design: str,
                    floors: tuple[float, ...] | None) -> tuple[float, ...]:
    from scipy import stats  # here, not at import: see boundaries

    return tuple(0.0 if math.isinf(b) else float(stats.norm.sf(b))
                 for b in boundaries(fractions, alpha, design, floors))


def permutation_floor(launches_per_side: int) -> float:
    """The smallest one-sided p-value the A/B permutation test of n + n launches can give: 1 / C(2n, n) when it
    enumerates every split, else 1 / (its random permutations + 1) (regression/multiplicity.py)."""
    splits = math.comb(2 * launches_per_side, launches_per_side)
    return 1.0 / splits if splits <= EXHAUSTIVE_SPLITS else 1.0 / (PERMUTATIONS + 1)


@dataclass(frozen=True)
class Look:
    """One look at a scene: the launches judged, its information fraction and level, what it said."""

    index: int
    launches_a: int
    launches_b: int
    fraction: float
    nominal_alpha: float
    verdict: str
    effect: float | None  # the first gated metric's
    elapsed_s: float

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def look_due(launches_per_side: int, last_look: int, max_launches: int, *, first_look: int = FIRST_LOOK,
             look_every: int = LOOK_EVERY) -> bool:
    """Whether a scene with `launches_per_side` judged launches a side is due a look, its last look having had
    `last_look` (0: none): from the first look on, every `look_every` launches more, and at the maximum."""
    if launches_per_side < first_look or launches_per_side <= last_look:
        return False
    return last_look == 0 or launches_per_side - last_look >= look_every or launches_per_side >= max_launches


def look_fraction(launches_per_side: int, max_launches: int) -> float:
    return min(launches_per_side / max_launches, 1.0)


def judge_look(a_launches: Sequence[Any], b_launches: Sequence[Any], config: GateConfig,
               nominal_alpha: float, *, baseline_description: str = "", paired: bool = False) -> SceneVerdict:
    """The gate's A/B judgement at one look: changes tested at the look's nominal level; `same` when every
    metric's interval lies inside its same bar both ways, whatever the level (deciding `same` declares no change).

    paired (the launches in round order, docs/regression.md "Paired rounds"): the interval is the paired test
    inverted at the look's level, so it is the one a change is decided on; at a look whose level the sign-flip
    test cannot reach (it spends nothing), `same` is judged on the interval at the scene's own level per
    direction, and that is the interval the verdict shows.

    The session's final verdict is this function on the last look's launches and level, so the scheduler's
    decision and run.json's verdict are one computation (seeded: the same launches give the same verdict)."""
    level = max(nominal_alpha, 1e-12)
    # The fixed gate tests each direction at per_direction(alpha); the look's nominal level is already a
    # direction's, so the gate is given the alpha whose share it is.
    verdict = judge_interleaved(a_launches, b_launches, dataclasses.replace(config, alpha=2 * level),
                                baseline_description=baseline_description, paired=paired)
    if verdict.verdict in ("regressed", "improved") or not verdict.verdicts:
        return verdict
    if paired and any(v.ci is None for v in verdict.verdicts):
        # The look's level is out of the flips' reach (it spends nothing): it tests `same` only, on the interval
        # at the scene's own level per direction, which is then the interval shown and projected.
        for_same = judge_interleaved(a_launches, b_launches, config, baseline_description=baseline_description,
                                     paired=True)
        note = (f" This look tests `same` only: its level {nominal_alpha:.3g} is below what "
                f"{verdict.verdicts[0].rounds} rounds can reach, so it spends nothing.")
        verdict = SceneVerdict(tuple(
            v if v.verdict in ("same", "inconclusive") and v.ci is None else
            dataclasses.replace(v, verdict="same" if v.verdict == "same" else "inconclusive",
                                reason=(v.reason or "Inconclusive: no change is decided at this look.") + note)
            for v in for_same.verdicts), for_same.skipped, for_same.notes)
    elif not paired:
        # A look whose level n vs n launches cannot reach spends nothing, by design: no change can be decided
        # here, and the launches a fixed design would need at that level (22 a side at 1e-12) are no advice.
        verdict = SceneVerdict(tuple(
            dataclasses.replace(v, more_launches=None, advice="", reason=(
                f"Inconclusive: this look tests `same` only: its level {nominal_alpha:.3g} is below what "
                f"{v.n_candidate} vs {v.n_baseline} launches can reach, so it spends nothing (the sequential "
                "design's early looks); later rounds decide."))
            if v.verdict == "inconclusive" and min_launches_per_side(level) > min(v.n_baseline, v.n_candidate)
            else v for v in verdict.verdicts), verdict.skipped, verdict.notes)
    # The fixed design's advice names --zbench-runs, which the sequential gate does not take: its launches are
    # bounded by --zbench-max-launches and the budget.
    verdict = SceneVerdict(tuple(
        dataclasses.replace(v, advice=(
            f"About {min(v.n_baseline, v.n_candidate) + v.more_launches} launches per side would decide it "
            f"(--zbench-max-launches={min(v.n_baseline, v.n_candidate) + v.more_launches}, with a --zbench-budget "
            "that affords them)."))
        if v.verdict == "inconclusive" and v.more_launches else v for v in verdict.verdicts),
        verdict.skipped, verdict.notes)
    if all(_inside_bars(v) for v in verdict.verdicts):
        same = tuple(dataclasses.replace(v, verdict="same", more_launches=None, advice="", reason=(
            f"Same: the {v.ci_text() if v.ci_level is not None else f'{v.confidence:.0%} interval'} lies inside "
            f"both bars (±{same_bar(v.metric, v.threshold):.1%}"
            f"{f', a tail metric: {TAIL_SAME_FACTOR} x the bar' if _is_tail(v.metric) else ''}; sequential look "
            f"at level {nominal_alpha:.3g})")) for v in verdict.verdicts)
        return SceneVerdict(same, verdict.skipped, verdict.notes)
    return verdict


# A tail metric (a high percentile, the max, the jank share) of a launch moves from launch to launch several
# times as much as its median (preemption moves the tail, not the centre), so its interval is several times as
# wide: needing it inside the median's bar is a `same` that never comes within a maximum of launches
# (docs/regression.md, "Deciding same"). Its `same` bar is this many times the gate's bar; a change is still
# judged against the gate's own bar.
TAIL_SAME_FACTOR = 2


def _is_tail(metric: str) -> bool:
    statistic = metric.rsplit(".", 1)[-1]
    return metric == "jank_share" or statistic == "max" or (statistic.startswith("p") and statistic != "p50")


def same_bar(metric: str, threshold: float) -> float:
    """The bar a metric's interval must lie inside (both ways) for a sequential look to stop the scene `same`."""
    return threshold * TAIL_SAME_FACTOR if _is_tail(metric) else threshold


def _inside_bars(v: Verdict) -> bool:
    """Whether the interval `same` is decided on (paired rounds: ci_same) lies inside the metric's same bar."""
    ci = v.ci_same if v.ci_same is not None else v.ci
    if ci is None:
        return False
    bar = same_bar(v.metric, v.threshold)
    worse_bar, better_bar = 1 + bar, 1 / (1 + bar)
    return better_bar <= ci[0] and ci[1] <= worse_bar


def launches_to_decide(verdict: SceneVerdict, launches_per_side: int) -> float:
    """How many launches per side an undecided scene would need in all, at the rate its intervals narrow
    (each end's distance from the effect ~ 1/sqrt(n)), were its effects to stay where they are: the scheduler
    spends what is left on the smallest first ("most promising"), and a scene that needs more than its maximum
    stops `futile`.

    A change needs one metric's interval off no change (its end towards 1 past it), whichever metric gets
    there first; `same` needs every interval inside its same bar (both ends), so none past a bar. The smaller of
    the two: a metric just inside the bar may still be decided a change (its effect is an estimate too). Each end
    is projected on its own: the paired interval is not symmetric, and the end that must move is the one used.
    A paired verdict whose level the rounds cannot reach yet has no interval: its ends are projected from the
    within-round spread (normal theory, the Hodges-Lehmann estimate's efficiency) at the verdict's level."""
    change, inside = [], []
    n = launches_per_side
    for v in verdict.verdicts:
        ci = v.ci if v.ci is not None else _projected_interval(v)
        if ci is None or v.effect is None or ci[0] <= 0 or v.effect <= 0 or not math.isfinite(ci[1]):
            return math.inf
        centre, lo, hi = math.log(v.effect), math.log(v.effect) - math.log(ci[0]), math.log(ci[1]) - math.log(v.effect)
        if lo <= 0 and hi <= 0:
            return float(n)
        # a change: the end towards no change must pass it
        near = lo if centre > 0 else hi
        change.append(n * (near / abs(centre)) ** 2 if centre != 0 else math.inf)
        # `same`: both ends of its interval (paired rounds: ci_same) inside the metric's same bar (a tail metric's
        # is wider)
        if v.ci_same is not None and v.ci_same[0] > 0 and math.isfinite(v.ci_same[1]):
            lo, hi = math.log(v.effect) - math.log(v.ci_same[0]), math.log(v.ci_same[1]) - math.log(v.effect)
        bar = math.log(1 + same_bar(v.metric, v.threshold))
        room_hi, room_lo = bar - centre, bar + centre
        inside.append(n * max((hi / room_hi) ** 2, (lo / room_lo) ** 2) if room_hi > 0 and room_lo > 0 else math.inf)
    if not change:
        return math.inf
    return min(min(change), max(inside))


# The Hodges-Lehmann estimate's standard error is sqrt(pi / 3) x the pairs' sd / sqrt(n) under normal errors
# (its efficiency against the mean, 3 / pi).
_HL_SE = math.sqrt(math.pi / 3)


def _projected_interval(v: Verdict) -> tuple[float, float] | None:
    """A paired verdict's interval at its level projected from the within-round spread, for rounds too few for
    the sign-flip test to reach that level (no interval): normal theory. None when not a paired verdict or no
    spread."""
    if v.rounds is None or v.pair_spread is None or v.effect is None or v.ci_level is None or v.rounds < 2:
        return None
    from scipy import special  # here, not at import: see regression/gate.py _scipy_special

    z = float(special.ndtri(1 - max(v.ci_level, 1e-12)))
    half = z * _HL_SE * math.log1p(v.pair_spread) / math.sqrt(v.rounds)
    return v.effect * math.exp(-half), v.effect * math.exp(half)


def pairs_rounds(max_launches: int, alpha: float, *, reachable_splits: int = REACHABLE_SPLITS) -> bool:
    """Whether a sequential A/B scene with this maximum judges paired rounds: when the sign-flip test at its
    maximum can spend at least half a direction's alpha (its level above reachable_splits x its floor; from 12
    rounds at alpha 0.01). A smaller maximum is judged launch against launch, whose test reaches lower sooner."""
    return reachable_splits * flip_floor(max_launches) <= per_direction(alpha) / 2


def futile(to_decide: float, launches_per_side: int, max_launches: int, *, futile_from: int = FUTILE_FROM) -> bool:
    """Whether an undecided scene stops for futility: from `futile_from` launches per side on, before its
    maximum, its intervals say it needs more than its maximum (launches_to_decide)."""
    return futile_from <= launches_per_side < max_launches and to_decide > max_launches


@dataclass
class SceneSequence:
    """A scene's looks in one session and why it stopped (run.json `sequential`, docs/regression.md)."""

    max_launches: int  # per side in A/B: the information fraction's denominator
    alpha: float  # the scene's false-change rate, both directions together
    budget_min: float
    looks: list[Look] = dataclasses.field(default_factory=list)
    stopped: StopReason | None = None
    design: str = DESIGN
    reachable_splits: int = REACHABLE_SPLITS
    # paired rounds (docs/regression.md "Paired rounds"): a look's floor is the sign-flip test's, 1 / 2^n
    paired: bool = False

    @property
    def alpha_per_direction(self) -> float:
        """Each tail (`regressed`, `improved`) spends half the alpha: a scene's chance of any false change,
        either way, stays at alpha; its chance of a false `regressed` (what fails a build) at alpha / 2."""
        return per_direction(self.alpha)

    def level(self, launches_per_side: int) -> float:
        """The nominal one-sided level of a look after `launches_per_side` launches, given the looks before."""
        fractions = [look.fraction for look in self.looks] + [look_fraction(launches_per_side, self.max_launches)]
        floor = flip_floor if self.paired else permutation_floor
        floors = [self.reachable_splits * floor(min(look.launches_a, look.launches_b)) for look in self.looks]
        floors.append(self.reachable_splits * floor(launches_per_side))
        return nominal_alphas(fractions, self.alpha_per_direction, self.design, floors)[-1]

    @property
    def futile_from(self) -> int:
        """Launches per side from which an undecided scene may stop `futile`: FUTILE_FROM, or with paired rounds
        the first count whose look can spend alpha (12 at alpha 0.01). Below it the sign-flip test's interval at
        the level is its discreteness more than the launches' spread (8 rounds at 0.005: the range of the rounds'
        ratios), and projected from there it would stop for futility a slowdown 12 rounds decide."""
        if not self.paired:
            return FUTILE_FROM
        n = FUTILE_FROM
        while self.reachable_splits * flip_floor(n) > self.alpha_per_direction / 2 and n < self.max_launches:
            n += 1
        return n

    @property
    def final_level(self) -> float | None:
        return self.looks[-1].nominal_alpha if self.looks else None

    def to_json(self) -> dict[str, Any]:
        last = self.looks[-1] if self.looks else None
        return {
            "design": DESIGN_NAMES.get(self.design, self.design),
            "alpha": self.alpha,
            "alpha_per_direction": self.alpha_per_direction,
            "max_launches": self.max_launches,
            "budget_min": self.budget_min,
            "launches_a": last.launches_a if last else 0,
            "launches_b": last.launches_b if last else 0,
            "stopped": self.stopped,
            "looks": [look.to_json() for look in self.looks],
        }
