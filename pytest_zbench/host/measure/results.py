"""What a scene's measurement holds, in one module below the launch loops that fill it: SceneMeasurement, the
B side of an A/B scene (ABRun), an adaptive scene's plans, fits and score (AdaptiveResult), and which issues
block a perf test. The loops are in launches.py, ab_launches.py and adaptive_launches.py
(docs/architecture.md)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ...adaptive_score import (
    BOOTSTRAP_CONFIDENCE,
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    FRAME_COST,
    MODEL,
    SETTLE_FRAMES,
    HingeFit,
    ScoreSummary,
    summarize_scores,
)
from ...protocol import Issue, Job
from ...protocol.vocabulary import HostIssueKind, IssueKind
from ...regression.baseline import MEASURED_ALIKE
from ...regression.interleaved_ab import DEFAULT_PATTERN, Arm, Pattern
from ...regression.sequential import SceneSequence
from ...scenes import ComplexitySpec, SceneCase
from ...stats import LaunchSamples, LaunchSummary, SceneSummary
from ..devices.device import LaunchOutcome
from .adaptive_extension import EXTENSION_TIME_LIMIT_S, Extension
from .android_frame_series import PlatformSeries

# Issues after which a scene's samples are not a measurement of the build's speed: the perf test fails (the
# samples are kept either way). Device faults are what the quarantine counts (host/devices/health.py).
PERF_BLOCKING_KINDS: tuple[IssueKind, ...] = ("exit", "timeout", "partial", "protocol", "nan", "connection_lost", "device_error",
                                              "quarantined")
DEVICE_FAULT_KINDS: tuple[HostIssueKind, ...] = ("timeout", "connection_lost", "device_error")


@dataclass
class SceneMeasurement:
    """Everything one scene produced on one device in this session, perf and golden tests alike."""

    case: SceneCase
    device: str
    backend: str
    job: Job | None
    launches: list[LaunchOutcome] = field(default_factory=list)
    summaries: list[LaunchSummary] = field(default_factory=list)
    summarized: list[LaunchOutcome] = field(default_factory=list)  # each summary's launch, paired in add_launch
    # Each summary's samples (paired in add_launch): the history stores them, derived once from the frames.
    samples: list[LaunchSamples] = field(default_factory=list)
    summary: SceneSummary | None = None
    skipped: str | None = None  # the reason when the device cannot run the scene
    # True when it is skipped because the backend does not support what the scene measures (a compressed
    # texture format, launches.unsupported_by_backend): a declared property of the backend, not a lost feature,
    # so it skips under CI too.
    unsupported: bool = False
    samples_file: Path | None = None
    wall_s: float = 0.0
    budget_ms: float = 0.0
    ab: ABRun | None = None  # in A/B mode: the B runner's launches, interleaved with these
    artifact_failures: list[str] = field(default_factory=list)  # files of this scene that could not be written
    adaptive: AdaptiveResult | None = None  # an adaptive scene's plans, fits and score (host/measure/adaptive_launches.py)
    platform: PlatformSeries | None = None  # Android's own frame timing of the launches, when it was collected
    sustained: dict[str, Any] | None = None  # a sustained run's analysis (host/measure/sustained.py), run.json's too
    # the sequential gate's looks and why the scene stopped (host/measure/sequential_rounds.py), run.json's too
    sequential: SceneSequence | None = None

    @property
    def issues(self) -> list[Issue]:
        return [issue for launch in self.launches for issue in launch.issues]

    @property
    def complete_launches(self) -> list[LaunchOutcome]:
        return [launch for launch in self.launches if launch.complete]

    @property
    def partial(self) -> bool:
        return any(launch.partial for launch in self.launches)

    def measured_alike(self) -> dict[str, Any]:
        """How the scene was drawn and measured, as run.json records it: what another run's entry must equal
        to be judged against this one (regression/baseline.py MEASURED_ALIKE)."""
        job = self.job
        alike = {"backend": self.backend, "mode": job.mode if job else None, "params": dict(self.case.params),
                 "gpu_source": self.summary.gpu_source if self.summary else None,
                 "surface": {"width": job.scene["width"], "height": job.scene["height"]} if job else None,
                 "warmup_frames": job.warmup_frames if job else 0, "measured_frames": job.frames if job else 0,
                 "seed": job.seed if job else None}
        assert tuple(alike) == MEASURED_ALIKE
        return alike

    def perf_failure(self) -> str | None:
        """Why the perf test fails before any regression gate, or None: a launch that did not produce
        trustworthy samples (PERF_BLOCKING_KINDS), or no summary at all."""
        blocking = [i for i in self.issues if i.kind in PERF_BLOCKING_KINDS]
        if not blocking and self.adaptive is not None and self.adaptive.scores is None:
            return (f"scene {self.case.id} on device {self.device}: no adaptive score: {self.adaptive.note}; "
                    f"samples kept in {self.samples_file}")
        if not blocking and self.summary is not None:
            return None
        return (f"scene {self.case.id} on device {self.device}: {len(self.complete_launches)} of "
                f"{len(self.launches)} launches complete; the runner's output was not trustworthy:\n"
                f"{issue_lines(blocking)}\nSamples kept (partial launches marked) in {self.samples_file}")


def issue_lines(issues: list[Issue], limit: int = 6) -> str:
    lines = [f"  - [{i.kind}]{'' if i.frame is None else f' frame {i.frame}'}: {i.detail}" for i in issues[:limit]]
    if len(issues) > limit:
        lines.append(f"  - ... and {len(issues) - limit} more (see run.json)")
    return "\n".join(lines)


@dataclass
class ABRun:
    """The B side of an A/B scene and the order the launches ran in."""

    runner: tuple[str, ...]
    a_runner: tuple[str, ...]
    order: list[Arm]
    b: SceneMeasurement
    pattern: Pattern = DEFAULT_PATTERN
    builds: dict[str, dict[str, Any] | None] = field(default_factory=dict)  # "a", "b": build_record or None


MODE = "uncapped"  # the fit reads uncapped frame intervals (adaptive_score.FRAME_COST)

Role = Literal["search", "ramp"]


@dataclass(frozen=True)
class LaunchPlan:
    """One launch's per-frame complexity, warmup included."""

    role: Role
    warmup_frames: int
    complexity: tuple[float, ...]
    hold: int

    @property
    def frames(self) -> int:
        return len(self.complexity) - self.warmup_frames

    def steps(self) -> list[list[float]]:
        """The complexity list run-length encoded: [[complexity, frames], ...] in frame order."""
        out: list[list[float]] = []
        for c in self.complexity:
            if out and out[-1][0] == c:
                out[-1][1] += 1
            else:
                out.append([c, 1])
        return out

    def job(self, base: Job) -> Job:
        return replace(base, mode=MODE, warmup_frames=self.warmup_frames, frames=self.frames,
                       complexity=self.complexity)

    def to_dict(self, launch: int) -> dict[str, Any]:
        return {"launch": launch, "role": self.role, "warmup_frames": self.warmup_frames, "frames": self.frames,
                "hold": self.hold, "steps": self.steps()}


@dataclass
class AdaptiveResult:
    """An adaptive scene's plans, per-launch fits and score: run.json's `adaptive` section."""

    spec: ComplexitySpec
    budget_ms: float
    plans: dict[int, LaunchPlan] = field(default_factory=dict)  # launch index -> its plan
    fits: dict[int, HingeFit] = field(default_factory=dict)  # scored launches (complete ramps)
    excluded: dict[int, int] = field(default_factory=dict)  # launch index -> measured frames left out of the fit
    scores: ScoreSummary | None = None
    note: str | None = None  # why there is no score, or what limits it
    extension: Extension | None = None  # the search past the scene's max, when it went there

    def launch_info(self, launch: int) -> dict[str, Any]:
        """What a launch summary carries: its role and, for a scored launch, the score the gate judges."""
        fit = self.fits.get(launch)
        info: dict[str, Any] = {"role": self.plans[launch].role}
        if fit is not None:
            info.update(score=round(fit.score, 6), censored=fit.censored)
        return info

    def finish(self) -> None:
        scored = [self.fits[k].score for k in sorted(self.fits)]
        if scored:
            self.scores = summarize_scores(scored)
        elif self.note is None:
            self.note = "no complete ramp launch: no score"
        censored = sorted({fit.censored for fit in self.fits.values() if fit.censored})
        if "above" in censored:
            self.note = (f"a ramp stayed within budget up to its largest complexity ({self._range_text()}): "
                         "the score is a lower bound")
        elif self.scores is not None and self.scores.score <= 0:  # adaptive_score.not_measured reads this note
            lowest = min(p.complexity for fit in self.fits.values() for p in fit.points)
            self.note = (f"every ramp was over budget at every step, down to complexity {lowest:g}, and the cost "
                         "stays over the budget at any complexity: the device was never within its frame budget")
        elif "below" in censored:
            self.note = "a ramp was over budget at every step: its change point is extrapolated below the ramp"

    def _range_text(self) -> str:
        e = self.extension
        if e is None:
            return f"scene max {self.spec.max}"
        why = {"limit": "the op can draw no more", "time": f"the search past max ran out of its "
               f"{EXTENSION_TIME_LIMIT_S:g} s", "launches": "the search ran out of launches"}.get(e.stopped or "", "")
        return f"searched past the scene max {self.spec.max} up to {e.reached} of the op's {e.limit}" + (
            f"; {why}" if why else "")

    @property
    def censored(self) -> str | None:
        kinds = {fit.censored for fit in self.fits.values() if fit.censored}
        return "above" if "above" in kinds else "below" if "below" in kinds else None

    def to_json(self) -> dict[str, Any]:
        s = self.scores
        return {
            "score": None if s is None else round(s.score, 4),
            "ci": None if s is None or s.ci is None else [round(s.ci[0], 4), round(s.ci[1], 4)],
            "confidence": BOOTSTRAP_CONFIDENCE,
            "resamples": BOOTSTRAP_RESAMPLES,
            "seed": BOOTSTRAP_SEED,
            "per_run_scores": [] if s is None else [round(v, 4) for v in s.per_run_scores],
            "scored_launches": sorted(self.fits),
            "budget_ms": round(self.budget_ms, 4),
            "unit": self.spec.unit,
            "censored": self.censored,
            "note": self.note,
            "plan": {
                "mode": MODE, "frame_cost": FRAME_COST, "settle_frames": SETTLE_FRAMES,
                "capture_complexity": self.spec.capture, "max_complexity": self.spec.max,
                "extension": None if self.extension is None else self.extension.to_json(),
                "launches": [self.plans[k].to_dict(k) for k in sorted(self.plans)],
            },
            "fit": {
                "model": MODEL,
                "launches": [dict(launch=k, excluded_frames=self.excluded.get(k, 0), **self.fits[k].to_dict())
                             for k in sorted(self.fits)],
            },
        }
