"""False-positive rate and power of the regression gate on synthetic sessions with a realistic variance structure.

The model (docs/regression.md, "How well it works"):

* frames: lognormal (heavy right tail, sigma 0.25 in logs around 8 ms) or bimodal (a sticky two-state chain:
  6 ms / 18 ms frames, 10 % slow, e.g. atlas hits and misses), with AR(1) correlation inside a launch (phi 0.8);
* launches: each launch's frames move together by x exp(N(0, 0.03)) (thermal state, clocks, cache layout);
* sessions: every launch of a session moves together by x exp(N(0, tau)), tau = the session spread: 0, 3, 5, 10
  or 20 % (background load, clocks, thermal state, a reboot). Whatever moves a session moves all its scenes.

Every launch is summarised as the product does (per-launch p50 and p95 of cpu_ms, the jank share over a
16.67 ms budget; the first launch of every cell is checked against stats.summarize_launch), the candidate's
frames are scaled by 1 + shift, and the DEFAULT gate judges them (gpu_ms is not simulated and not judged):

* history, S sessions of n launches: `regression.gate.judge` with GateConfig() (cpu_ms.p50, cpu_ms.p95), the
  newest 5 sessions as the centre and all S for the between-session spread, as `--zbench-baseline=history`
  does (window 5, spread window 20);
* A/B: n + n launches interleaved in one session (both sides share its offset): `judge_interleaved` at the
  A/B defaults (threshold 5 %, cpu_ms.p50, cpu_ms.p95 and jank_share).

Per cell: FP = share of identical builds judged `regressed` (with its one-sided Clopper-Pearson 95 % upper
bound), `impr` = judged `improved` (the gate tests each direction at alpha / 2, so FP + impr is the scene's
false-change rate, at most alpha), power at 5/10/20/30 % slowdowns, and `cover` = share of 20 % slowdowns
whose 95 % CI of cpu_ms.p50 contains the true 1.20x. `launch-level FP` (S = 5, the first LAUNCH_LEVEL_TRIALS
identical builds): the same launches judged as if launches of different sessions were exchangeable (one
launch-level test across sessions), the mistake the two-level gate replaces. `--pooling` adds what pooling
other scenes of the same sessions would do.

Then, per history cell, the power for a 20 % slowdown of the gate, of the gate with its between-session floor
off (`between_floor=0`: what the floor costs; its false-alarm rate on the same identical builds too), and of the
reference t test run on the same sessions (`t_reference`: p50's session statistics, the baseline's S - 1
between-session degrees of freedom), one-sided at the gate's level for a direction (alpha / 2) and at half that
(the Bonferroni share of each of the gate's two metrics), with the paired gap between gate and t test and the t
test's own false-alarm rate; then, from the
spread of the p50 effect over the cell's identical builds, the normal-theory references: a test that knew that
spread exactly (what no test of one candidate session can beat) and a noncentral t on S - 1 df.

Last, the targets (docs/regression.md): FP at most 1 % in every cell (its Clopper-Pearson 95 % upper bound),
the gate's power at 20 % within 5 points of the t test run on the same sessions at the gate's level in every
history cell, A/B n + n at least 80 % at 10 %; each missed one is listed.

Speed: the gate is the cost (about 12-16 ms a judgement, bootstrap and min-P; a cell judges about 23,000 times
at the defaults), and it was made faster where it spends that (min-P by t quantiles, the bootstraps' medians by
a sort: docs/regression.md, "How well it works", the same counts at the same seeds). Here each simulated
session is summarised once per trial and the scaled candidate once per shift, and the bimodal chain is drawn
without a loop over frames (checked against the loop).

Run: python bench/bench_regression_power.py [--null-trials N] [--trials N] [--launches N] [--frames N]
[--jobs N] [--session-spreads TAU ...] [--pooling]. The defaults: 3,000 identical-build trials per cell, so that
a bound of 1 % can be shown for a gate whose false `regressed` rate sits near its level of 0.5 % (1,000 trials
show it only for 4 or fewer flagged, which a rate of 0.5 % exceeds half the time); docs/regression.md quotes the
table and how long it took.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

import numpy as np
from scipy import signal
from scipy import stats as sps

from pytest_zbench.regression.config import AB_GATING_METRICS, DEFAULT_AB_THRESHOLD, DEFAULT_BETWEEN_FLOOR
from pytest_zbench.regression.gate import GateConfig, SessionPool, judge, judge_interleaved
from pytest_zbench.stats import PERCENTILE_METHOD, ROUNDING_MS, LaunchSamples, summarize_launch

BUDGET_MS = 16.67
PHI = 0.8
LAUNCH_SPREAD = 0.03
SESSION_SPREADS = (0.0, 0.03, 0.05, 0.10, 0.20)
SHIFTS = (0.05, 0.10, 0.20, 0.30)
HISTORY_SESSIONS = (1, 3, 5, 10)
WINDOW = 5  # the history baseline's centre: the newest 5 runs (regression/baseline.DEFAULT_WINDOW)
FAMILIES = ("lognormal", "bimodal")
COVER_SHIFT = 0.20
LAUNCH_LEVEL_TRIALS = 1000  # identical builds judged launch-level too (the mistake is gross: 1,000 show it)
HISTORY_METRICS = GateConfig().metrics[:2]  # cpu_ms.p50, cpu_ms.p95: gpu_ms is not simulated


def ar1(rng: np.random.Generator, launches: int, frames: int, sigma: float) -> np.ndarray:
    """Stationary AR(1) noise with marginal sd `sigma`, one row per launch."""
    shocks = rng.normal(0.0, sigma * np.sqrt(1 - PHI ** 2), size=(launches, frames))
    shocks[:, 0] = rng.normal(0.0, sigma, size=launches)  # start in the stationary distribution
    return signal.lfilter([1.0], [1.0, -PHI], shocks, axis=1)


def session_frames(family: str, rng: np.random.Generator, launches: int, frames: int, tau: float) -> np.ndarray:
    """One session's launches x frames: the session's offset, each launch's own, then the frames."""
    offsets = np.exp(rng.normal(0.0, tau) + rng.normal(0.0, LAUNCH_SPREAD, size=(launches, 1)))
    if family == "lognormal":
        return 8.0 * np.exp(ar1(rng, launches, frames, 0.25)) * offsets
    first = rng.random(launches) < 0.1
    draws = rng.random((launches, frames))
    return np.where(sticky_chain(first, draws), 18.0, 6.0) * np.exp(ar1(rng, launches, frames, 0.08)) * offsets


# Sticky two-state chain: a slow frame is followed by another slow one with probability 0.7.
P_ENTER, P_STAY = 0.1 * 0.3 / 0.9, 0.7  # stationary share of slow frames = 10 %


def sticky_chain(first: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """The chain's states (True = slow) from its first states and one uniform per frame, without a loop over
    frames: since P_ENTER < P_STAY, a draw below P_ENTER makes the next frame slow from either state, one at or
    above P_STAY makes it fast from either, and one between keeps the state. So each frame's state is the last
    forcing draw's (or the first frame's), carried forward: the same states as the frame-by-frame chain
    (`sticky_chain_loop`, checked on the first trial of every cell)."""
    forced = np.where(draws < P_ENTER, 1, np.where(draws >= P_STAY, 0, -1))
    forced[:, 0] = first
    frame = np.arange(draws.shape[1])
    last = np.maximum.accumulate(np.where(forced >= 0, frame, 0), axis=1)
    return np.take_along_axis(forced, last, axis=1) == 1


def sticky_chain_loop(first: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """The chain frame by frame, the definition sticky_chain must reproduce."""
    slow = np.zeros(draws.shape, dtype=bool)
    slow[:, 0] = first
    for t in range(1, draws.shape[1]):
        slow[:, t] = np.where(slow[:, t - 1], draws[:, t] < P_STAY, draws[:, t] < P_ENTER)
    return slow


def check_chain(rng: np.random.Generator) -> None:
    """The vectorised sticky chain is the frame-by-frame one (on draws of its own, not the trial's)."""
    first, draws = rng.random(8) < 0.1, rng.random((8, 400))
    assert np.array_equal(sticky_chain(first, draws), sticky_chain_loop(first, draws)), "sticky chain differs"


def summaries(frames: np.ndarray) -> list[dict]:
    """Per-launch statistics as stats.summarize_launch computes them (uncapped: cpu_ms = the frame time =
    the interval), vectorised over launches: the gate reads cpu_ms.p50, cpu_ms.p95 and jank_share."""
    p50, p95 = np.percentile(frames, [50, 95], axis=1, method=PERCENTILE_METHOD)
    jank = (frames > BUDGET_MS + ROUNDING_MS).mean(axis=1)
    return [{"cpu_ms": {"p50": float(a), "p95": float(b)}, "gpu_ms": None, "gpu_source": None,
             "jank_share": float(j)} for a, b, j in zip(p50, p95, jank)]


def check_summaries(frames: np.ndarray) -> None:
    """The vectorised statistics are the product's: compare with stats.summarize_launch."""
    for row, fast in zip(frames, summaries(frames)):
        nan = np.full(row.size, np.nan)
        product = summarize_launch(LaunchSamples(cpu_ms=row, gpu_ms=nan, gpu_source=None, interval_ms=row,
                                                 warmup_cpu_ms=[], counters={}, mode="uncapped"), BUDGET_MS)
        assert math.isclose(product.cpu_ms.p50, fast["cpu_ms"]["p50"]), "p50 differs from summarize_launch"
        assert math.isclose(product.cpu_ms.p95, fast["cpu_ms"]["p95"]), "p95 differs from summarize_launch"
        assert math.isclose(product.jank_share, fast["jank_share"]), "jank share differs from summarize_launch"


def session_stat(launches: list[dict]) -> float:
    """A session's statistic of cpu_ms.p50 as the gate reads it: the median of its launches' log p50."""
    return float(np.median(np.log([launch["cpu_ms"]["p50"] for launch in launches])))


def t_reference(baseline: list[list[dict]], candidate: list[dict], level: float, window: int = WINDOW) -> bool:
    """The reference t test of cpu_ms.p50, run on the same sessions the gate judges (baseline oldest first): the
    candidate session's statistic against the mean of the newest `window` baseline sessions, the spread of all
    of them (S - 1 df), one-sided at `level`; a new session's own offset counts, as in the gate (1 + 1/centre)."""
    stats = np.array([session_stat(s) for s in baseline])
    centre = stats[-window:]
    t = (session_stat(candidate) - centre.mean()) / (stats.std(ddof=1) * math.sqrt(1 + 1 / centre.size))
    return bool(t > sps.t.isf(level, stats.size - 1))


def history_verdict(history: list[list[dict]], candidate: list[dict], sessions: int, seed: int,
                    pool: list[SessionPool] | None = None, floor: float = DEFAULT_BETWEEN_FLOOR):
    """The default gate against the newest `sessions` of `history` (each session's launch summaries, oldest
    first)."""
    newest = history[-sessions:][::-1]  # newest first, as the history reads them
    return judge(newest[:WINDOW], candidate, GateConfig(seed=seed, between_floor=floor), older=newest[WINDOW:],
                 pool=pool or ())


def cell(family: str, tau: float, n: int, frames: int, null_trials: int, trials: int, seed: int) -> dict:
    """Every history size and A/B for one family and session spread, with common random numbers: each trial
    simulates one history of max(HISTORY_SESSIONS) sessions and one candidate session, then scales it."""
    rng = np.random.default_rng(seed)
    cells = [*(f"S{s}" for s in HISTORY_SESSIONS), "AB"]
    counts = {c: {"fp": 0, "improved": 0, "cover": 0, "launch_fp": 0, "launch_n": 0, "null_log": 0.0,
                  "null_log2": 0.0, "null_effects": 0, "no_floor": 0, "no_floor_fp": 0, "t_fp": 0, "t_power": 0,
                  "t_fam_power": 0, "gate_only": 0, "t_only": 0, "no_floor_only": 0, "t_only_no_floor": 0,
                  **{s: 0 for s in SHIFTS}} for c in cells}
    level = GateConfig().alpha_per_direction
    for trial in range(max(null_trials, trials)):
        history = [session_frames(family, rng, n, frames, tau) for _ in range(max(HISTORY_SESSIONS))]
        candidate = session_frames(family, rng, n, frames, tau)
        ab_session = session_frames(family, rng, 2 * n, frames, tau)  # one session, both sides' launches
        a_frames, b_frames = ab_session[:n], ab_session[n:]
        if trial == 0:
            check_summaries(candidate[:2])
            check_chain(np.random.default_rng(seed))
        # Each session is summarised once per trial (the history's for every history size and shift, A's for
        # every shift), the scaled candidate once per shift: the gate reads only these summaries.
        summarised = [summaries(s) for s in history]
        a_summaries = summaries(a_frames)
        shifts = ([0.0] if trial < null_trials else []) + (list(SHIFTS) if trial < trials else [])
        for shift in shifts:
            scaled = summaries(candidate * (1 + shift))
            for sessions in HISTORY_SESSIONS:
                key = f"S{sessions}"
                scene = history_verdict(summarised, scaled, sessions, trial)
                _count(counts[key], scene, shift)
                if sessions > 1 and shift in (0.0, COVER_SHIFT):
                    # The reference t test on the same sessions (paired with the gate's verdict).
                    reference = t_reference(summarised[-sessions:], scaled, level)
                    if shift == 0.0:
                        counts[key]["t_fp"] += reference
                    else:
                        gate = scene.verdict == "regressed"
                        counts[key]["t_power"] += reference
                        counts[key]["t_fam_power"] += t_reference(summarised[-sessions:], scaled,
                                                                  level / len(HISTORY_METRICS))
                        counts[key]["gate_only"] += gate and not reference
                        counts[key]["t_only"] += reference and not gate
                if sessions > 1 and shift in (0.0, COVER_SHIFT):
                    # What the floor costs and what it buys: the same comparison with it off.
                    no_floor = history_verdict(summarised, scaled, sessions, trial,
                                               floor=0.0).verdict == "regressed"
                    if shift == 0.0:
                        counts[key]["no_floor_fp"] += no_floor
                    else:
                        counts[key]["no_floor"] += no_floor
                        counts[key]["no_floor_only"] += no_floor and not reference
                        counts[key]["t_only_no_floor"] += reference and not no_floor
                if shift == 0.0 and sessions == 5 and trial < LAUNCH_LEVEL_TRIALS:
                    counts[key]["launch_n"] += 1
                    flat = [launch for s in summarised[-5:] for launch in s]
                    counts[key]["launch_fp"] += judge_interleaved(flat, scaled, GateConfig(seed=trial)
                                                                  ).verdict == "regressed"
            scene = judge_interleaved(a_summaries, summaries(b_frames * (1 + shift)),
                                      GateConfig(threshold=DEFAULT_AB_THRESHOLD, metrics=AB_GATING_METRICS,
                                                 seed=trial))
            _count(counts["AB"], scene, shift)
    return {"family": family, "tau": tau, "counts": counts, "null_trials": null_trials, "trials": trials}


def _count(counts: dict, scene, shift: float) -> None:
    if shift == 0.0:
        counts["fp"] += scene.verdict == "regressed"
        counts["improved"] += scene.verdict == "improved"
        p50 = scene.by_metric().get("cpu_ms.p50")
        if p50 is not None and p50.effect is not None and p50.effect > 0:
            # The spread of the effect itself over identical builds: what a test that knew it would divide by.
            counts["null_log"] += math.log(p50.effect)
            counts["null_log2"] += math.log(p50.effect) ** 2
            counts["null_effects"] += 1
        return
    counts[shift] += scene.verdict == "regressed"
    if shift == COVER_SHIFT:
        p50 = scene.by_metric().get("cpu_ms.p50")
        if p50 is not None and p50.ci is not None:
            counts["cover"] += p50.ci[0] <= 1 + shift <= p50.ci[1]


def pooling_cell(tau: float, n: int, frames: int, trials: int, seed: int, scenes: int = 3) -> dict:
    """What pooling the between-session spread over other scenes OF THE SAME SESSIONS does: the other scenes
    share every session's offset, so their deviations are the same draws again. Pooled naively (as if
    independent) they overstate the degrees of freedom; the product pools only sessions a scene has none in."""
    rng = np.random.default_rng(seed)
    out = {"own": {"fp": 0, 0.20: 0}, "pooled": {"fp": 0, 0.20: 0}}
    for trial in range(trials):
        offsets = rng.normal(0.0, tau, WINDOW + 1)
        scene_sessions = [[_with_offset(rng, n, frames, o) for o in offsets] for _ in range(scenes + 1)]
        history = [summaries(s) for s in scene_sessions[0][:WINDOW]]
        candidate = scene_sessions[0][WINDOW]
        pool = [SessionPool(f"scene {k}", [summaries(s) for s in scene_sessions[k][:WINDOW]])
                for k in range(1, scenes + 1)]
        for shift in (0.0, 0.20):
            for name, groups in (("own", None), ("pooled", pool)):
                verdict = history_verdict(history, summaries(candidate * (1 + shift)), WINDOW, trial, groups).verdict
                out[name]["fp" if shift == 0 else shift] += verdict == "regressed"
    return {"tau": tau, "trials": trials, "counts": out}


def _with_offset(rng: np.random.Generator, n: int, frames: int, offset: float) -> np.ndarray:
    return session_frames("lognormal", rng, n, frames, 0.0) * math.exp(offset)


def references(sd: float, sessions: int) -> dict[str, float]:
    """The reference tests' power for a COVER_SHIFT slowdown of p50, from the sd of log(effect) over identical
    builds: one that knew sd exactly (a normal test: the ceiling, as p95 carries no information p50 lacks here),
    and a t test that estimates it from the baseline's S - 1 between-session degrees of freedom (noncentral t),
    one-sided at the gate's level for the `regressed` direction (alpha / 2) and at the share of it the gate
    spends on each of its metrics (Bonferroni over cpu_ms.p50 and cpu_ms.p95: the gate's min-P lies between the
    two, nearer the level the more they correlate)."""
    alpha, effect, df = GateConfig().alpha_per_direction, math.log(1 + COVER_SHIFT), sessions - 1
    family = alpha / len(HISTORY_METRICS)
    return {"known": float(sps.norm.sf(sps.norm.isf(alpha) - effect / sd)),
            "t": float(sps.nct.sf(sps.t.isf(alpha, df), df, effect / sd)),
            "t_family": float(sps.nct.sf(sps.t.isf(family, df), df, effect / sd))}


def merged(parts: list[dict], name: str) -> tuple[dict, int, int]:
    """One cell's counts summed over the chunks it was run in, with its identical-build and per-shift trials."""
    counts = {k: sum(p["counts"][name][k] for p in parts) for k in parts[0]["counts"][name]}
    return counts, sum(p["null_trials"] for p in parts), sum(p["trials"] for p in parts)


def history_cells(jobs: list[tuple[str, float]], results: dict[tuple[str, float], list[dict]]):
    """Per history cell with 2 or more sessions, a dict: family, tau, sessions; at COVER_SHIFT the power of the
    gate, of the gate without the floor, of the t test run on the same sessions (`t_run`, at the gate's level,
    and `t_run_family`, at the family's share) and the paired gap gate - t_run with its 95 % half-width; the t
    test's false-alarm rate; sd (of log effect over identical builds) and the normal-theory references."""
    for family, tau in jobs:
        parts = results[(family, tau)]
        for sessions in HISTORY_SESSIONS[1:]:
            c, null, power = merged(parts, f"S{sessions}")
            if not c["null_effects"] or not power:
                continue
            sd = math.sqrt(c["null_log2"] / c["null_effects"])
            gap, gap_half = paired_gap(c["gate_only"], c["t_only"], power)
            no_floor_gap, no_floor_half = paired_gap(c["no_floor_only"], c["t_only_no_floor"], power)
            yield {"family": family, "tau": tau, "sessions": sessions, "gate": c[COVER_SHIFT] / power,
                   "no_floor": c["no_floor"] / power, "t_run": c["t_power"] / power,
                   "t_run_family": c["t_fam_power"] / power, "gap": gap, "gap_half": gap_half,
                   "no_floor_gap": no_floor_gap, "no_floor_half": no_floor_half,
                   "no_floor_fp": c["no_floor_fp"] / null if null else math.nan,
                   "t_fp": c["t_fp"] / null if null else math.nan, "sd": sd, **references(sd, sessions)}


def paired_gap(only_a: int, only_b: int, trials: int) -> tuple[float, float]:
    """The difference of two tests' power on the same trials, and its 95 % half-width: only the trials the
    two disagree on carry it."""
    gap = (only_a - only_b) / trials
    return gap, 1.96 * math.sqrt(max(only_a + only_b - trials * gap ** 2, 0.0)) / trials


def print_ceilings(jobs: list[tuple[str, float]], results: dict[tuple[str, float], list[dict]]) -> None:
    """The gate's power for a 20 % slowdown (with the between-session floor, and without it) beside what the
    reference tests of one candidate session reach: the t test run on the same sessions (paired with the gate),
    and the normal-theory references (`references`)."""
    alpha = GateConfig().alpha_per_direction
    print()
    print(f"power for a {COVER_SHIFT:.0%} slowdown: the gate (default, and with between_floor=0); the t test of p50 "
          f"run on the same sessions (S-1 df, one-sided at {alpha:g}, the gate's level for a direction, and at "
          f"{alpha / len(HISTORY_METRICS):g}, the family's Bonferroni share), the paired gap gate - t with its 95 % "
          "interval, the t test's own false-alarm rate and the gate's with the floor off (nf FP); from the sd of "
          "log(effect) over identical builds, the "
          f"normal-theory references at {alpha:g}: sd known and t on S-1 df:")
    print(f"  {'family':<10} {'session':>7} {'baseline':<12} {'gate':>6} {'no floor':>9} {'t run':>6} {'t run fam':>10} "
          f"{'gap (95 %)':>16} {'t FP':>6} {'nf FP':>6} {'sd':>7} {'sd known':>9} {'t S-1':>6}")
    for r in history_cells(jobs, results):
        gap, label = f"{r['gap']:+.3f}+-{r['gap_half']:.3f}", f"{r['sessions']} sessions"
        print(f"  {r['family']:<10} {r['tau']:>7.0%} {label:<12} {r['gate']:>6.3f} "
              f"{r['no_floor']:>9.3f} {r['t_run']:>6.3f} {r['t_run_family']:>10.3f} {gap:>16} {r['t_fp']:>6.3f} "
              f"{r['no_floor_fp']:>6.3f} "
              f"{r['sd']:>7.4f} {r['known']:>9.3f} {r['t']:>6.3f}")


# docs/regression.md, "How well it works": the targets the gate is held to.
TARGET_FP = 0.01  # false alarms per cell, the 95 % upper bound
TARGET_GAP = 0.05  # the gate's power for a 20 % slowdown at most this far below the t test on S - 1 df
TARGET_AB_POWER = 0.80  # A/B n + n at a 10 % slowdown


def print_targets(jobs: list[tuple[str, float]], results: dict[tuple[str, float], list[dict]], launches: int) -> int:
    """Each target, cell by cell: met or missed; returns the number missed. The power target is checked
    against the t test run on the same sessions at the gate's level for the direction (alpha / 2, what the gate
    itself spends on it), by the paired gap; where the gate misses it but is within TARGET_GAP of the t test at
    the family's share of that level, that is said too (not counted as met)."""
    missed: list[str] = []
    checked = 0
    for family, tau in jobs:
        parts = results[(family, tau)]
        for name in [*(f"S{s}" for s in HISTORY_SESSIONS), "AB"]:
            c, null, power = merged(parts, name)
            checked += 1
            if upper(c["fp"], null) > TARGET_FP:
                missed.append(f"{family} {tau:.0%} {name}: FP upper bound {upper(c['fp'], null):.3f} > {TARGET_FP}")
            if name == "AB" and power and c[0.10] / power < TARGET_AB_POWER:
                missed.append(f"{family} {tau:.0%} A/B {launches}+{launches}: power {c[0.10] / power:.3f} at 10 % "
                              f"< {TARGET_AB_POWER}")
    for r in history_cells(jobs, results):
        if r["gap"] < -TARGET_GAP:
            within_family = ("; within 5 points of the t test at the family's share "
                             f"({r['t_run_family']:.3f})" if r["gate"] >= r["t_run_family"] - TARGET_GAP else
                             f"; {r['t_run_family'] - r['gate']:.3f} below the t test at the family's share "
                             f"({r['t_run_family']:.3f})")
            no_floor = (f"; with the floor off {r['no_floor']:.3f} (gap {r['no_floor_gap']:+.3f} +- "
                        f"{r['no_floor_half']:.3f}, " + ("within" if r["no_floor_gap"] >= -TARGET_GAP else "not within")
                        + " 5 points)")
            missed.append(f"{r['family']} {r['tau']:.0%} {r['sessions']} sessions: power {r['gate']:.3f} at 20 % vs "
                          f"the t test's {r['t_run']:.3f} on the same sessions (gap {r['gap']:+.3f} +- "
                          f"{r['gap_half']:.3f}){within_family}{no_floor}")
    print()
    print(f"targets: FP 95 % upper bound <= {TARGET_FP:.0%} in every cell; the gate's power at 20 % within "
          f"{TARGET_GAP:.0%} of the t test on S - 1 df run on the same sessions at the gate's level (alpha / 2); "
          f"A/B {launches}+{launches} "
          f">= {TARGET_AB_POWER:.0%} at 10 %")
    for line in missed:
        print(f"  MISSED {line}")
    print(f"  {checked} cells, {len(missed)} target(s) missed")
    return len(missed)


def upper(k: int, n: int) -> float:
    """The one-sided Clopper-Pearson 95 % upper bound of a rate seen k times in n."""
    return 1.0 if k >= n else float(sps.beta.ppf(0.95, k + 1, n - k))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--null-trials", type=int, default=3000,
                        help="identical-build comparisons per cell, for the false-positive rate (default: 3000)")
    parser.add_argument("--trials", type=int, default=300, help="comparisons per cell and shift (default: 300)")
    parser.add_argument("--launches", type=int, default=10, help="launches per session and side (default: 10)")
    parser.add_argument("--frames", type=int, default=600, help="measured frames per launch (default: 600)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default: 2)")
    parser.add_argument("--session-spreads", type=float, nargs="+", default=list(SESSION_SPREADS),
                        metavar="TAU", help="session spreads to simulate, as fractions (default: 0 0.03 0.05 0.1 0.2)")
    parser.add_argument("--pooling", action="store_true",
                        help="also measure naive pooling over other scenes of the same sessions")
    args = parser.parse_args(argv)

    jobs = [(family, tau) for family in FAMILIES for tau in args.session_spreads]
    chunks = max(1, args.jobs)  # each (family, tau) split into chunks of trials, seeded apart
    print(f"{len(jobs)} (family, session spread) cells x history sizes {HISTORY_SESSIONS} + A/B; "
          f"{args.null_trials} identical-build trials and {args.trials} trials per shift; {args.launches} launches "
          f"per session, {args.frames} frames per launch; default gate: alpha {GateConfig().alpha} for the scene "
          f"({GateConfig().alpha_per_direction} per direction), "
          f"history {GateConfig().metrics[:2]} at {GateConfig().threshold}, A/B "
          f"{tuple(m for m in AB_GATING_METRICS if not m.startswith('gpu'))} at {DEFAULT_AB_THRESHOLD}; "
          f"{GateConfig().resamples} resamples; {args.jobs} process(es)", flush=True)
    started = time.perf_counter()
    results: dict[tuple[str, float], list[dict]] = {}
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {}
        for i, (family, tau) in enumerate(jobs):
            for c in range(chunks):
                null = args.null_trials // chunks + (c < args.null_trials % chunks)
                power = args.trials // chunks + (c < args.trials % chunks)
                futures[pool.submit(cell, family, tau, args.launches, args.frames, null, power,
                                    1000 * i + c)] = (family, tau)
        pooling = ([pool.submit(pooling_cell, tau, args.launches, args.frames, args.null_trials // 2, 90_000 + k)
                    for k, tau in enumerate((0.05, 0.10, 0.20))] if args.pooling else [])
        for done, future in enumerate(as_completed(futures), 1):
            results.setdefault(futures[future], []).append(future.result())
            print(f"  {done}/{len(futures)} chunks, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        pooled = [f.result() for f in pooling]

    print()
    print("FP = identical builds judged regressed (one-sided 95 % upper bound in brackets); impr = judged improved;")
    print("power at each slowdown; cover = 95 % CI of cpu_ms.p50 contains 1.20x at a 20 % slowdown")
    header = (f"{'family':<10} {'session':>7} {'baseline':<12} {'FP':>14} {'impr':>6} "
              + " ".join(f"{f'{s:.0%}':>6}" for s in SHIFTS) + f" {'cover':>6} {'launch-level FP':>16}")
    print(header)
    print("-" * len(header))
    for family, tau in jobs:
        parts = results[(family, tau)]
        for name in [*(f"S{s}" for s in HISTORY_SESSIONS), "AB"]:
            c, null, power = merged(parts, name)
            label = (f"{name[1:]} session" + ("s" if name != "S1" else "") if name != "AB"
                     else f"A/B {args.launches}+{args.launches}")
            fp = f"{c['fp'] / null:.3f} ({upper(c['fp'], null):.3f})"
            cover = "-" if name == "S1" else f"{c['cover'] / power:.3f}"
            launch = f"{c['launch_fp'] / c['launch_n']:.3f}" if name == "S5" and c["launch_n"] else ""
            print(f"{family:<10} {tau:>7.0%} {label:<12} {fp:>14} {c['improved'] / null:>6.3f} "
                  + " ".join(f"{c[s] / power:>6.3f}" for s in SHIFTS) + f" {cover:>6} {launch:>16}")
    print_ceilings(jobs, results)
    print_targets(jobs, results, args.launches)
    level = GateConfig().alpha_per_direction
    margin = 1.96 * math.sqrt(level * (1 - level) / args.null_trials)
    print()
    print(f"binomial uncertainty: at {args.null_trials} identical-build trials a true false-positive rate of "
          f"{level:.1%} (the gate's level) reads {level:.1%} +- {margin:.2%} (95 %); at {args.trials} trials a power "
          f"of 80 % reads 80 % +- {1.96 * math.sqrt(0.16 / args.trials):.1%}")
    if pooled:
        print()
        print(f"pooling the between-session spread over 3 other scenes of the SAME {WINDOW} sessions (lognormal):")
        print(f"  {'session':>7}  {'own sessions: FP':>17} {'power 20%':>10}   {'pooled: FP':>11} {'power 20%':>10}")
        for p in pooled:
            n_t, own, pool_c = p["trials"], p["counts"]["own"], p["counts"]["pooled"]
            print(f"  {p['tau']:>7.0%}  {own['fp'] / n_t:>17.3f} {own[0.2] / n_t:>10.3f}   "
                  f"{pool_c['fp'] / n_t:>11.3f} {pool_c[0.2] / n_t:>10.3f}   ({n_t} trials)")
    print(f"elapsed {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
