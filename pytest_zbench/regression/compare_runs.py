"""Two run.json files side by side (`zbench compare A.json B.json`): every scene measured in both, B judged
against A by the regression gate exactly as `--zbench-baseline=A.json` would judge it (regression/baseline.py),
and the scenes only one side has.

With `--fail-on METRIC:PCT` (in the spirit of pytest-benchmark's --benchmark-compare-fail=median:10%), also a
fixed threshold that needs no between-session spread, for two one-off runs with few launches: B fails when the
median over its launches of METRIC is worse than A's by more than PCT and the launches agree that B is worse
(the launch-bootstrap interval of the ratio of medians excludes no change). Launch noise alone therefore
cannot fail a build, but a session offset of the size docs/regression.md measures still passes for an
effect: it is a threshold, not a test. docs/regression.md, "zbench compare"."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..stats import bootstrap_difference_ci
from .baseline import differences, judge_against_run_file, measured_alike
from .config import GATE_METRIC, HIGHER_IS_BETTER, scene_metrics
from .gate import GateConfig
from .gate import ratio_text as clip_ratio
from .hierarchy import launch_values
from .verdict_words import ComparedVerdict, verdict_rank

SHOWN = (("cpu_ms", "p50"), ("cpu_ms", "p95"), ("frame_ms", "p99"))


@dataclass(frozen=True)
class FailOn:
    """`--fail-on cpu_ms.p50:10%`: B fails when its median launch's metric is worse than A's by more than
    `limit` (a fraction) and the launches' interval shows B worse at all."""

    metric: str
    limit: float

    @classmethod
    def parse(cls, text: str) -> FailOn:
        found = re.fullmatch(r"\s*([\w.]+)\s*:\s*([0-9]*\.?[0-9]+)\s*(%?)\s*", text)
        if not found or not GATE_METRIC.fullmatch(found.group(1)):
            raise ValueError(f"--fail-on {text!r}: give METRIC:PCT, e.g. cpu_ms.p50:10% (METRIC a gate metric: "
                             "cpu_ms.p50, cpu_ms.p95, frame_ms.p99, jank_share, ...)")
        value = float(found.group(2)) / (100.0 if found.group(3) else 1.0)
        if not 0 < value < 10:
            raise ValueError(f"--fail-on {text!r}: the limit must be above 0 % and below 1000 %")
        return cls(found.group(1), value)

    def describe(self) -> str:
        return f"{self.metric}:{self.limit:.0%}"


@dataclass(frozen=True)
class ThresholdCheck:
    """One --fail-on rule on one scene: B/A of the medians over launches, its launch-bootstrap interval."""

    rule: FailOn
    ratio: float | None  # None: a side has no launch with the metric
    ci: tuple[float, float] | None
    past_limit: bool  # the ratio of medians is worse than the limit
    shown_worse: bool  # the interval excludes no change, on the worse side

    @property
    def failed(self) -> bool:
        return self.past_limit and self.shown_worse

    def describe(self) -> str:
        if self.ratio is None:
            return f"{self.rule.metric}: not measured on both sides"
        ci = f" (95% CI {clip_ratio(self.ci[0])}..{clip_ratio(self.ci[1])}, launch bootstrap)" if self.ci else ""
        better = "higher is better" if self.rule.metric in HIGHER_IS_BETTER else "lower is better"
        outcome = ("FAILED" if self.failed else
                   "ok (past the limit, but the launches do not show B worse: more launches decide it)"
                   if self.past_limit else "ok")
        return f"{self.rule.metric} B/A {clip_ratio(self.ratio)}{ci} [{better}], limit {self.rule.limit:.0%}: {outcome}"


def launch_ratio(a: Mapping[str, Any], b: Mapping[str, Any], metric: str) -> tuple[float, tuple[float, float]] | None:
    """B/A of two scene entries' medians over their complete launches of `metric`, with the launch-bootstrap
    interval of that ratio (each side's launches resampled on their own); None when a side has no launch with
    the metric. Used by --fail-on and by `zbench engines` (side_by_side/table.py)."""
    a_values = launch_values([r for r in a.get("per_run") or [] if not r.get("partial")], metric)
    b_values = launch_values([r for r in b.get("per_run") or [] if not r.get("partial")], metric)
    offset = GateConfig().offset(metric)
    with np.errstate(divide="ignore", invalid="ignore"):  # a value at or below zero: no ratio, said below
        a_log, b_log = np.log(a_values + offset), np.log(b_values + offset)
    if a_values.size == 0 or b_values.size == 0 or not (np.isfinite(a_log).all() and np.isfinite(b_log).all()):
        return None
    ratio = math.exp(float(np.median(b_log) - np.median(a_log)))
    lo, hi = (math.exp(bound) for bound in bootstrap_difference_ci(b_log.tolist(), a_log.tolist()))
    return ratio, (lo, hi)


def check_threshold(a: Mapping[str, Any], b: Mapping[str, Any], rule: FailOn) -> ThresholdCheck:
    """B's median launch against A's on one rule; the interval resamples each side's launches."""
    found = launch_ratio(a, b, rule.metric)
    if found is None:
        return ThresholdCheck(rule, None, None, False, False)
    ratio, (lo, hi) = found
    if rule.metric in HIGHER_IS_BETTER:
        past_limit, shown_worse = ratio < 1 / (1 + rule.limit), hi < 1.0
    else:
        past_limit, shown_worse = ratio > 1 + rule.limit, lo > 1.0
    return ThresholdCheck(rule, ratio, (lo, hi), past_limit, shown_worse)


@dataclass(frozen=True)
class SceneComparison:
    device: str
    scene: str
    a: Mapping[str, Any]
    b: Mapping[str, Any]
    verdict: ComparedVerdict  # the gate's scene verdict, or no_baseline / not_comparable
    detail: str  # the deciding metric's effect and interval, or why there is no verdict
    message: str
    thresholds: tuple[ThresholdCheck, ...] = ()

    @property
    def failed(self) -> bool:
        return self.verdict == "regressed" or any(t.failed for t in self.thresholds)


@dataclass(frozen=True)
class RunComparison:
    scenes: tuple[SceneComparison, ...]
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]

    @property
    def nothing_judged(self) -> bool:
        """Scenes in both files, none of them comparable: the files measured another way (frames, surface...)."""
        return bool(self.scenes) and all(s.verdict == "not_comparable" for s in self.scenes)

    @property
    def regressed(self) -> bool:
        """A scene the gate judged regressed, or one past a --fail-on limit."""
        return any(s.failed for s in self.scenes)


def compare_runs(a: Mapping[str, Any], a_path: Path, b: Mapping[str, Any], config: GateConfig = GateConfig(),
                 fail_on: tuple[FailOn, ...] = ()) -> RunComparison:
    """B (the candidate) against A (the baseline), scene by scene."""
    a_scenes = {(s["device"], s["id"]): s for s in a.get("scenes", [])}
    b_scenes = {(s["device"], s["id"]): s for s in b.get("scenes", [])}
    out = []
    for key in sorted(a_scenes.keys() & b_scenes.keys()):
        entry = b_scenes[key]
        comparison = measured_alike(entry)
        if differ := differences(a_scenes[key], comparison):  # no verdict and no --fail-on ratio across them
            why = f"not comparable: {'; '.join(differ)}"
            out.append(SceneComparison(key[0], key[1], a_scenes[key], entry, "not_comparable", why, why))
            continue
        thresholds = tuple(check_threshold(a_scenes[key], entry, rule) for rule in fail_on)
        candidate = [launch for launch in entry.get("per_run") or [] if not launch.get("partial")]
        # The metrics that apply to the scene, as the plugin's gate chooses them (an adaptive scene: its score).
        metrics = scene_metrics(config.metrics, adaptive=entry.get("adaptive") is not None)
        if not metrics:
            why = f"none of the gated metrics ({', '.join(config.metrics)}) applies to this scene"
            out.append(SceneComparison(key[0], key[1], a_scenes[key], entry, "not_comparable", why, why, thresholds))
            continue
        result = judge_against_run_file(a, a_path, key[1], key[0], comparison, candidate,
                                        dataclasses.replace(config, metrics=metrics))
        if result.verdict is None:
            verdict: ComparedVerdict = "no_baseline" if result.comparable else "not_comparable"
            out.append(SceneComparison(key[0], key[1], a_scenes[key], entry, verdict, result.message,
                                       result.message, thresholds))
            continue
        deciding = next((v for v in result.verdict.verdicts if v.verdict == result.verdict.verdict),
                        result.verdict.verdicts[0] if result.verdict.verdicts else None)
        detail = ""
        if deciding is not None and deciding.effect is not None:
            detail = f"{deciding.metric} {clip_ratio(deciding.effect)}"
            if deciding.ci is not None:
                detail += f" [{clip_ratio(deciding.ci[0])}..{clip_ratio(deciding.ci[1])}]"
            else:
                detail += " [no CI]"
        out.append(SceneComparison(key[0], key[1], a_scenes[key], entry, result.verdict.verdict, detail,
                                   result.verdict.message(), thresholds))
    return RunComparison(tuple(out), tuple(f"{d}/{s}" for d, s in sorted(a_scenes.keys() - b_scenes.keys())),
                         tuple(f"{d}/{s}" for d, s in sorted(b_scenes.keys() - a_scenes.keys())))


def lines(comparison: RunComparison) -> list[str]:
    """The side-by-side table, regressed first, then the scenes one side lacks."""
    rows = sorted(comparison.scenes, key=lambda s: (verdict_rank(s.verdict), s.device, s.scene))
    name_w = max([len(f"{s.device}/{s.scene}") for s in rows] + [5])
    head = "".join(f"{f'{series[:-3]} {stat}':>14}" for series, stat in SHOWN)
    out = [f"{'scene':<{name_w}}{head}  {'verdict':<13}deciding metric (B/A, 95% CI)",
           f"{'':<{name_w}}{'A -> B':>14}"]
    for s in rows:
        cells = "".join(f"{_pair(s.a, s.b, series, stat):>14}" for series, stat in SHOWN)
        out.append(f"{s.device + '/' + s.scene:<{name_w}}{cells}  {s.verdict:<13}"
                   f"{s.detail if s.verdict not in ('no_baseline', 'not_comparable') else ''}")
        out += [f"{'':<{name_w}}  --fail-on {t.describe()}" for t in s.thresholds]
    for s in rows:
        if s.verdict == "not_comparable":
            out.append(f"{s.device}/{s.scene}: {s.message}")
    if any(s.detail.endswith("[no CI]") for s in rows):
        out.append("no CI: one run a side gives no between-session spread, so the gate has no interval and cannot "
                   "say regressed (-v: why); --fail-on METRIC:PCT fails on a fixed threshold")
    if comparison.only_a:
        out.append(f"only in A: {', '.join(comparison.only_a)}")
    if comparison.only_b:
        out.append(f"only in B: {', '.join(comparison.only_b)}")
    return out


def _pair(a: Mapping[str, Any], b: Mapping[str, Any], series: str, stat: str) -> str:
    def value(entry: Mapping[str, Any]) -> str:
        found = ((entry.get("metrics") or {}).get(series) or {}).get(stat)
        return "-" if not isinstance(found, (int, float)) else f"{found:.3g}"

    return f"{value(a)}->{value(b)}"
