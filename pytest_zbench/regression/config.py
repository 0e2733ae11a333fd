"""The regression gate's knobs and the product's defaults for them, in one light module (no numpy, no scipy):
settings.py reads its option defaults from here, regression/gate.py its configuration (docs/regression.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..percentiles import PERCENTILE_NAMES

# Metric names are paths into a launch summary (LaunchSummary or its to_dict()). Against a history or a
# run.json (sessions against sessions) the default gate leaves jank_share out: a jank share counts frames past a
# fixed budget, so a session offset moves it far more at one end than the other (a session 50 % slower turns
# 0.1 % janky frames into 10 %), which no location-and-scale model of session offsets can hold to alpha (the
# bench measured 8 % false positives at a 20 % session spread); its frame times are gated instead. In A/B the
# launches are exchangeable and the permutation test holds alpha whatever a metric's shape, so jank_share gates.
GATING_METRICS: tuple[str, ...] = ("cpu_ms.p50", "cpu_ms.p95", "gpu_ms.p50", "gpu_ms.p95")
AB_GATING_METRICS: tuple[str, ...] = (*GATING_METRICS, "jank_share")
# A launch's cold start (one value per launch): the time from the runner process's start to the end of its
# first frame, and the CPU time of its warmup frames. Gated only when named (--zbench-gate-metrics, a scene
# file's gate.metrics): the process start is dominated by what the device does outside the renderer (the
# dynamic loader, the page cache, a busy host), so it is not among the defaults (docs/regression.md).
COLD_START_METRICS: tuple[str, ...] = ("time_to_first_frame_ms", "warmup_ms")
# The metrics the gate can judge: a per-launch statistic of a per-frame series, the jank share, an adaptive
# scene's score (the launch's change point, host/measure/adaptive_launches.py), or a cold-start metric.
GATE_METRIC = re.compile(r"(cpu_ms|gpu_ms|interval_ms|frame_ms)\.(" + "|".join(PERCENTILE_NAMES) + r"|max|mean)|jank_share"
                         r"|adaptive\.score|" + "|".join(COLD_START_METRICS))


def metric_unit(metric: str) -> str:
    """A gate metric's unit: ms for a statistic of frame times, a share of frames for jank_share, none for an
    adaptive score (its unit is the scene's, run.json `adaptive.unit`)."""
    return ("ms" if "_ms." in metric or metric in COLD_START_METRICS else "share of frames" if metric == "jank_share"
            else "")


# Metrics for which a larger value is better: a drop is the regression. Every other metric is lower-is-better.
HIGHER_IS_BETTER: frozenset[str] = frozenset({"adaptive.score"})
# What an adaptive scene is judged on when the gate's metrics name no adaptive metric, in every mode: its
# per-frame statistics mix the complexities of its plan, which depends on the device's speed, so they are not
# judged.
ADAPTIVE_GATING_METRICS: tuple[str, ...] = ("adaptive.score",)
# The smallest slowdown the gate calls a regression, against a history or a run.json (sessions against
# sessions) and in A/B (interleaved launches of one session, where session offsets cancel: the sensitive mode).
DEFAULT_THRESHOLD = 0.15
DEFAULT_AB_THRESHOLD = 0.05
# The scene's family-wise false-change rate: every gated metric of a scene is tested together at this alpha, and
# each direction (`regressed`, `improved`) spends half of it, as the sequential gate does: the chance that
# identical builds are called changed either way stays at alpha, and that they fail a build (`regressed`) at
# alpha / 2 (docs/regression.md, "Verdicts").
DEFAULT_ALPHA = 0.01


def per_direction(alpha: float) -> float:
    """The level each direction (`regressed`, `improved`) is tested at, of a scene's alpha: half of it, in the
    fixed gates and over the sequential gate's looks alike."""
    return alpha / 2


# The smallest between-session spread the history gate believes (a relative spread of a session's offset): an
# estimate below it is raised to it, keeping the estimate's degrees of freedom. Two or three sessions can agree
# by chance far more closely than a device's sessions do (a CI candidate read 1.54x two baseline sessions that
# agreed within 0.4 % and was flagged); 2 % is about the quietest spread measured on a real device here (1.9 %
# from 5 sessions of a quiet local run), against 14.5 % on the loaded shared machine. Its reasons and its cost in
# power: docs/regression.md, "A floor on the between-session spread".
DEFAULT_BETWEEN_FLOOR = 0.02
# `.zbench/` is the project's local, git-ignored state.
DEFAULT_HISTORY_PATH = ".zbench/history.sqlite"


@dataclass(frozen=True)
class GateConfig:
    """Knobs of the gate; the defaults are the product's documented defaults (docs/regression.md).

    threshold: the bar an effect must pass to count (the noise enters through the test and the interval, not
    the bar). alpha: the scene's family-wise false-change rate (all gated metrics together, both directions:
    each of `regressed` and `improved` is tested at alpha_per_direction = alpha / 2). resamples: of the
    hierarchical (history) or launch (A/B) bootstrap, seeded by `seed`. between_floor: the smallest relative
    between-session spread the history gate uses (DEFAULT_BETWEEN_FLOOR; 0 turns the floor off).

    jank_offset is added to both medians of jank_share (a share of frames) before the ratio is taken, so
    that 0 % -> 0 % is "same" (effect 1.0) and 0 % -> 1 % of frames janky reads as 1.2x rather than
    infinity: the offset is the jank share that counts as "a little" (5 % of frames by default).
    """

    threshold: float = DEFAULT_THRESHOLD
    alpha: float = DEFAULT_ALPHA
    confidence: float = 0.95
    resamples: int = 2000
    seed: int = 0
    metrics: tuple[str, ...] = GATING_METRICS
    jank_offset: float = 0.05
    max_suggested_launches: int = 50
    between_floor: float = DEFAULT_BETWEEN_FLOOR

    def __post_init__(self) -> None:
        checks = {
            "threshold": self.threshold >= 0,
            "alpha": 0 < self.alpha < 1,
            "confidence": 0 < self.confidence < 1,
            "resamples": self.resamples >= 100,
            "jank_offset": self.jank_offset >= 0,
            "max_suggested_launches": self.max_suggested_launches >= 2,
            "between_floor": 0 <= self.between_floor < 1,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise ValueError(f"invalid gate setting(s): {', '.join(f'{n}={getattr(self, n)!r}' for n in bad)}")
        if not self.metrics:
            raise ValueError("the gate needs at least one metric")

    @property
    def alpha_per_direction(self) -> float:
        """The level each direction is tested at: a false `regressed` (what fails a build) at most alpha / 2, a
        false change either way at most alpha."""
        return per_direction(self.alpha)

    def offset(self, metric: str) -> float:
        return self.jank_offset if metric == "jank_share" else 0.0

    @staticmethod
    def higher_is_better(metric: str) -> bool:
        return metric in HIGHER_IS_BETTER


def scene_metrics(metrics: tuple[str, ...], *, adaptive: bool) -> tuple[str, ...]:
    """The configured metrics that apply to a scene: an adaptive scene's adaptive metrics (by default
    ADAPTIVE_GATING_METRICS), a fixed-load scene's others (possibly none: then it is not gated)."""
    ours = tuple(m for m in metrics if m.startswith("adaptive.") == adaptive)
    return ours or (ADAPTIVE_GATING_METRICS if adaptive else ())
