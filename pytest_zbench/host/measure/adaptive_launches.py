"""Adaptive scenes: the host plans every launch's per-frame complexity, runs the launches, and scores them.

The runner protocol stays open-loop: a job carries its whole complexity list, so frame N of a job renders the
same every time, and the host decides before each launch what it will draw (docs/methodology.md §10):

* the search: launches that ramp the complexity up geometrically (x2 per step, each step held half as long
  as a ramp's steps, at least MIN_HOLD frames) until a step's frame cost reaches the budget. The first covers 1..FIRST_SEARCH_TOP; each further
  one continues from there, no further than SEARCH_GROWTH times its last complexity and the complexity the
  steps so far predict to cost SEARCH_REACH budgets, so that no search launch draws for long past the budget;
  a device still within budget at the scene's max is searched past it, up to what the op can draw, within
  EXTENSION_TIME_LIMIT_S (adaptive_extension.py);
* the ramps: settings.runs launches of one plan, from the complexity the search says costs RAMP_TOP budgets
  down to the one that costs RAMP_BOTTOM, in equal steps held `hold` frames each. Only ramps are scored
  (pytest_zbench.adaptive_score).

Every captured frame renders at the scene's capture complexity (the captured frames are placed in the
warmup), so captures are equal across launches, plans and devices and the goldens hold.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ...adaptive_score import (
    SETTLE_FRAMES,
    LaunchPoints,
    StepPoint,
    fit_hinge,
    step_points,
)
from ...protocol import Issue
from ...regression.interleaved_ab import Arm, interleave
from ...scenes import ComplexitySpec, SceneCase
from ...settings import Settings
from ...stats import summarize_scene
from ..devices.device import Device, LaunchOutcome, safe_component
from ..devices.health import DeviceHealth
from .adaptive_extension import EXTENSION_TIME_LIMIT_S, Extension, ExtensionStop
from .launches import ProgressSink, SamplesCsv, add_launch, guarded_launch, new_measurement
from .results import (
    MODE,
    ABRun,
    AdaptiveResult,
    LaunchPlan,
    Role,
    SceneMeasurement,
)

SEARCH_FACTOR = 2
FIRST_SEARCH_TOP = 64
SEARCH_GROWTH = 64
SEARCH_REACH = 4.0
MAX_SEARCH_LAUNCHES = 6
RAMP_TOP = 3.0  # MotionMark ramps from where the frame rate halves; from 3 budgets a ramp still crosses the
# budget when the device runs a little faster than during the search
RAMP_BOTTOM = 0.25  # ... down to a quarter budget: a device slower than during the search still starts under it
RAMP_STEPS = 24  # a ramp of `frames` measured frames has about this many steps ...
MIN_HOLD = 6  # ... each held at least this long: SETTLE_FRAMES left out, a median of the rest


def plan_warmup(settings_warmup: int, capture: Sequence[int]) -> int:
    """The warmup of an adaptive job: long enough to hold every captured frame and SETTLE_FRAMES after them."""
    return max(settings_warmup, max(capture, default=-1) + 1 + SETTLE_FRAMES)


def _with_warmup(role: Role, measured: list[float], hold: int, warmup: int, capture: Sequence[int],
                 capture_complexity: int) -> LaunchPlan:
    frames = [measured[0]] * warmup + measured
    for f in capture:
        frames[f] = float(capture_complexity)
    return LaunchPlan(role, warmup, tuple(frames), hold)


def geometric_steps(low: int, high: int, factor: int = SEARCH_FACTOR) -> list[int]:
    """low, low * factor, ... up to and including high."""
    steps = [low]
    while steps[-1] * factor < high:
        steps.append(steps[-1] * factor)
    if steps[-1] < high:
        steps.append(high)
    return steps


def complexity_at(points: Sequence[StepPoint], cost_ms: float) -> float:
    """The complexity at which the measured steps reach `cost_ms`: interpolated between the steps around it,
    extrapolated along the top two steps past the last, proportionally below the first."""
    pts = sorted(points, key=lambda p: p.complexity)
    if not pts:
        raise ValueError("no measured steps")
    for before, after in zip(pts, pts[1:]):
        if after.frame_ms >= cost_ms > before.frame_ms:
            span = after.frame_ms - before.frame_ms
            return before.complexity + (cost_ms - before.frame_ms) * (after.complexity - before.complexity) / span
    first, last = pts[0], pts[-1]
    if first.frame_ms >= cost_ms:
        return first.complexity * cost_ms / first.frame_ms
    if len(pts) >= 2:
        before = pts[-2]
        slope = (last.frame_ms - before.frame_ms) / (last.complexity - before.complexity)
        if slope > 0:
            return last.complexity + (cost_ms - last.frame_ms) / slope
    return math.inf


@dataclass
class Controller:
    """Plans an adaptive scene's launches from what the earlier ones measured."""

    spec: ComplexitySpec
    budget_ms: float
    frames: int  # measured frames of a ramp (--zbench-frames)
    warmup: int  # --zbench-warmup
    capture: tuple[int, ...]
    search_points: list[StepPoint] = field(default_factory=list)
    searches: int = 0
    clock: Callable[[], float] = time.monotonic
    extension: Extension | None = None  # set when the search went past spec.max
    _top: int = 0  # the largest complexity searched so far
    _done: bool = False
    _started: float | None = None

    def __post_init__(self) -> None:
        self._started = self.clock()

    @property
    def ceiling(self) -> int:
        """The largest complexity a launch may draw now: the scene's max, or past it the op's own limit."""
        return self.spec.ceiling if self.extension is not None else self.spec.max

    @property
    def hold(self) -> int:
        """Frames per ramp step."""
        return max(MIN_HOLD, self.frames // RAMP_STEPS)

    @property
    def search_hold(self) -> int:
        return max(MIN_HOLD, self.hold // 2)

    def next_search(self) -> LaunchPlan | None:
        """The next search launch, or None when the search has found the budget (or the scene's max)."""
        if self._done:
            return None
        if self.searches >= MAX_SEARCH_LAUNCHES:
            self._stop_extension("launches")
            return None
        ceiling = self.ceiling
        if self.searches == 0:
            low, high = 1, min(FIRST_SEARCH_TOP, ceiling)
        else:
            low = min(self._top * SEARCH_FACTOR, ceiling)
            reach = complexity_at(self.search_points, SEARCH_REACH * self.budget_ms)
            high = min(ceiling, self._top * SEARCH_GROWTH, max(low, math.ceil(reach)) if math.isfinite(reach)
                       else ceiling)
        steps = [float(c) for c in geometric_steps(low, max(low, high)) for _ in range(self.search_hold)]
        self._top = int(steps[-1])
        self.searches += 1
        return _with_warmup("search", steps, self.search_hold, plan_warmup(self.warmup, self.capture), self.capture,
                            self.spec.capture)

    def observe(self, points: LaunchPoints) -> None:
        """A search launch's steps; the search ends when one reaches the budget or the scene's max is reached."""
        self.search_points.extend(points.points)
        if self.extension is not None:
            self.extension = replace(self.extension, reached=self._top)
        if any(p.frame_ms >= self.budget_ms for p in points.points):
            self._done = True
            self._stop_extension("budget")
        elif self._top >= self.ceiling:
            # Within budget at the scene's max: go on past it while the op can draw more and time remains.
            can_go_on = self._top < self.spec.ceiling
            if can_go_on and self._in_time():
                self.extension = Extension(self.spec.max, self.spec.ceiling, self._top, None)
            else:
                self._done = True
                if can_go_on and self.extension is None:
                    self.extension = Extension(self.spec.max, self.spec.ceiling, self._top, None)
                self._stop_extension("time" if can_go_on else "limit")
        elif self.extension is not None and not self._in_time():
            self._done = True
            self._stop_extension("time")

    def _in_time(self) -> bool:
        assert self._started is not None
        return self.clock() - self._started < EXTENSION_TIME_LIMIT_S

    def _stop_extension(self, why: ExtensionStop) -> None:
        if self.extension is not None and self.extension.stopped is None:
            self.extension = replace(self.extension, stopped=why)

    def ramp(self) -> LaunchPlan:
        """The ramp every scored launch runs: from RAMP_TOP budgets down to RAMP_BOTTOM, in equal steps."""
        ceiling = self.ceiling
        top = complexity_at(self.search_points, RAMP_TOP * self.budget_ms) if self.search_points else ceiling
        high = max(2, min(ceiling, round(top) if math.isfinite(top) else ceiling))
        bottom = complexity_at(self.search_points, RAMP_BOTTOM * self.budget_ms) if self.search_points else 1
        low = max(1, min(round(bottom) if math.isfinite(bottom) else 1, high // 2))
        hold = self.hold
        count = max(1, self.frames // hold)
        levels = [float(round(high + (low - high) * i / max(count - 1, 1))) for i in range(count)]
        measured = [c for c in levels for _ in range(hold)]
        measured += [levels[-1]] * (self.frames - len(measured))  # the frames left over go to the last step
        return _with_warmup("ramp", measured, hold, plan_warmup(self.warmup, self.capture), self.capture,
                            self.spec.capture)


def measure_adaptive(device: Device, case: SceneCase, settings: Settings, results_dir: Path,
                     progress: ProgressSink | None = None, health: DeviceHealth | None = None,
                     b_runner: tuple[str, ...] | None = None) -> SceneMeasurement:
    """The search, then settings.runs ramp launches (with `b_runner`: per side, interleaved A, B, A, B, the
    B runner ramping the plan A's search found); every launch's rows in the scene's CSV at once."""
    started = time.monotonic()
    m = new_measurement(device, case, settings)
    if m.job is None:
        return m
    assert case.complexity is not None
    base = replace(m.job, mode=MODE)
    health = health if health is not None else DeviceHealth()
    controller = Controller(case.complexity, m.budget_ms, settings.frames, settings.warmup, base.capture)
    m.adaptive = AdaptiveResult(case.complexity, m.budget_ms)
    device_dir = results_dir / safe_component(device.name)
    scene_dir = device_dir / safe_component(case.id)
    m.samples_file = device_dir / f"{case.id}.frames.csv"
    writers = {"A": SamplesCsv(m.samples_file)}
    sides = {"A": m}
    if b_runner is not None:
        b = SceneMeasurement(case=case, device=device.name, backend=device.spec.backend, job=base,
                             budget_ms=m.budget_ms, samples_file=device_dir / f"{case.id}.b.frames.csv")
        b.adaptive = AdaptiveResult(case.complexity, m.budget_ms)
        assert b.samples_file is not None
        writers["B"], sides["B"] = SamplesCsv(b.samples_file), b
    timeout = settings.launch_timeout(base.refresh_hz, device.spec.timeout_s)
    slot = 0

    def launch(plan: LaunchPlan, arm: Arm, planned: int) -> LaunchOutcome | None:
        """One launch of `plan` on side `arm`; None when the device was quarantined by it."""
        nonlocal slot
        side = sides[arm]
        k = len(side.launches)
        job = plan.job(base)
        side.job = job

        def on_progress(frame: int, of: int, slot: int = slot) -> None:
            if progress is not None:
                progress(case.id, slot, planned, frame, of)

        on_progress(0, job.total_frames)
        folder = scene_dir / (f"launch-{k}" if arm == "A" else f"b-launch-{k}")
        outcome = guarded_launch(device, job, slot, folder, timeout, on_progress, health, results_dir,
                                 runner=None if arm == "A" else b_runner)
        slot += 1
        summaries = len(side.summaries)
        add_launch(side, writers[arm], outcome)
        result = side.adaptive
        assert result is not None
        result.plans[k] = plan
        points = step_points(outcome.frames.rows)
        if plan.role == "ramp" and outcome.complete and points.points:
            result.fits[k] = fit_hinge(points.points, m.budget_ms)
            result.excluded[k] = points.excluded_frames
        if len(side.summaries) > summaries:  # the launch measured frames: its summary carries its score
            side.summaries[-1] = replace(side.summaries[-1], adaptive=result.launch_info(k))
        if health.reason(device.name) is not None:
            outcome.issues.append(Issue("quarantined", f"{health.skip_reason(device.name)}; the scene's "
                                                       "remaining launches were not run"))
            return None
        if plan.role == "search":
            controller.observe(points)
        return outcome

    order: list[Arm] = interleave(settings.runs) if b_runner is not None else ["A"] * settings.runs
    searched = True
    try:
        while (plan := controller.next_search()) is not None:
            outcome = launch(plan, "A", slot + 1 + len(order))
            if outcome is None or not outcome.complete:
                searched = False
                m.adaptive.note = "the search did not complete: no ramp was planned"
                break
        for side in sides.values():
            assert side.adaptive is not None
            side.adaptive.extension = controller.extension
        if searched:
            ramp = controller.ramp()
            total = slot + len(order)
            for arm in order:
                if launch(ramp, arm, total) is None:
                    break
    finally:
        for writer in writers.values():
            writer.close()
        m.wall_s = time.monotonic() - started
    for side in sides.values():
        side.wall_s = m.wall_s
        assert side.adaptive is not None
        side.adaptive.finish()
        if side.summaries:
            side.summary = summarize_scene(side.summaries, side.budget_ms)
    if b_runner is not None:
        m.ab = ABRun(b_runner, tuple(device.spec.runner), order if searched else [], sides["B"])
    return m
