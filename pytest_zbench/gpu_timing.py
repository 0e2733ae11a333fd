"""Host-side rules that keep GPU numbers honest (docs/methodology.md §5, docs/gpu-timing.md). Plain values in, plain values out.

* `check_timer` (the timer check): a time source is only trusted if a deliberately heavier variant of a scene reads as
  more GPU time. A driver whose glFinish does not wait, or a timer query that returns a constant, fails here.
  The host runs the light and the heavy job (same device, same source, same pacing) and passes the GPU-time
  medians (or the per-launch medians, or raw values) of each.
* `check_coverage`: a timer query must account for a fair share of the work a finish bracket sees on the same
  GPU-bound scene. A timer that scales with the work but measures only part of it (llvmpipe's TIME_ELAPSED
  covers about one tile's rasterisation, not the frame's) passes the timer check and fails here.
* `heavier_ops`: the heavy variant of a display list — the same ops drawn `k` times on top of each other.
* `run_source`: the one gpu_source of a run's frames; two sources in one run is an error, never averaged.
"""

from __future__ import annotations

import copy
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from .errors import ZbenchError

# A translucent full-surface fill: overdraw that neither Skia nor a driver can cull. Opaque overdraw is a bad
# timer-check scene: llvmpipe drops binned commands under an opaque full-tile cover and tile-based GPUs with
# hidden-surface removal (PowerVR) do the same, so fill.opaque.x8 reads about as fast as fill.opaque.x1.
TIMER_CHECK_SCENE = "fill.alpha.x1"
# The heavy variant draws the scene this many times.
TIMER_CHECK_FACTOR = 8
# It must read as at least this many times the light variant's GPU time. With 8x the drawing, per-frame fixed
# costs (clear, submit, the bracket's own overhead) keep real ratios below 8; llvmpipe reads 3x-7x on a small
# surface. Below 1.5x the source is not seeing the GPU work.
MIN_RATIO = 1.5


class TimerCheck(NamedTuple):
    valid: bool
    detail: str


class MixedGpuSources(ZbenchError, ValueError):
    """One run's frames carry gpu values of more than one source."""


def _median(values: float | int | Sequence[float | int | None] | None) -> tuple[float | None, int]:
    if values is None:
        return None, 0
    if isinstance(values, bool):
        return None, 0
    if isinstance(values, (int, float)):
        values = [values]
    finite = [float(v) for v in values if v is not None and not isinstance(v, bool) and math.isfinite(float(v))]
    if not finite:
        return None, 0
    return statistics.median(finite), len(finite)


def check_timer(light_gpu_ms: float | Sequence[float | None] | None,
                      heavy_gpu_ms: float | Sequence[float | None] | None, *,
                      min_ratio: float = MIN_RATIO, source: str = "") -> TimerCheck:
    """Does the heavy variant read as clearly more GPU time than the light one?

    Each argument is a median or a sequence of values (None and non-finite values are ignored; the median
    is taken). Returns (valid, detail); detail names both medians and the ratio, or what was missing.
    """
    what = f"{source} " if source else ""
    light, n_light = _median(light_gpu_ms)
    heavy, n_heavy = _median(heavy_gpu_ms)
    if light is None or heavy is None:
        missing = " and ".join(name for name, v in (("light", light), ("heavy", heavy)) if v is None)
        return TimerCheck(False, f"{what}timer check: no GPU time for the {missing} variant; the source "
                                  "cannot be checked, so its numbers are not trusted")
    if light <= 0 or heavy <= 0:
        return TimerCheck(False, f"{what}timer check: a median of {light:g} ms (light) / {heavy:g} ms (heavy) "
                                  "is not a duration")
    ratio = heavy / light
    numbers = (f"light median {light:.4g} ms (n={n_light}), heavy median {heavy:.4g} ms (n={n_heavy}), "
               f"ratio {ratio:.2f}x")
    if ratio < min_ratio:
        return TimerCheck(False, f"{what}timer check failed: {numbers}; a variant with more GPU work must read "
                                  f"at least {min_ratio:g}x, so this source does not see the GPU's work "
                                  "(a glFinish that does not wait, a stuck or stub timer)")
    return TimerCheck(True, f"{what}timer check passed: {numbers} (>= {min_ratio:g}x)")


# On a GPU-bound scene a timer query must see at least this share of (finish bracket - CPU submit time).
MIN_COVERAGE = 0.25


def check_coverage(timer_gpu_ms: float | Sequence[float | None] | None,
                   finish_gpu_ms: float | Sequence[float | None] | None,
                   cpu_ms: float | Sequence[float | None] | None = None, *,
                   fixed_ms: float = 0.0, min_share: float = MIN_COVERAGE) -> TimerCheck:
    """Does a timer query measure the frame, or only part of it?

    Arguments are medians (or values) from two runs of the same GPU-bound scene — use the heavy timer-check
    variant — one timed by timer_query, one by finish_bracket, and optionally the CPU time (cpu_ms) of the
    finish_bracket run. A finish bracket contains the CPU part, the GPU work and the drain; the GPU work alone
    must be at least `min_share` of what is left once the CPU part is taken away, and cannot exceed the
    bracket by much. `fixed_ms` is the bracket's fixed part, which is no drawing (bracket_fixed_ms), also taken
    away when known.
    """
    timer, _ = _median(timer_gpu_ms)
    finish, _ = _median(finish_gpu_ms)
    cpu, _ = _median(cpu_ms)
    if timer is None or finish is None:
        return TimerCheck(False, "timer_query coverage: a timer_query and a finish_bracket median are both "
                                  "needed")
    if timer <= 0 or finish <= 0:
        return TimerCheck(False, f"timer_query coverage: {timer:g} ms / {finish:g} ms is not a duration")
    budget = max(finish - (cpu or 0.0) - fixed_ms, 1e-9)
    share = timer / budget
    numbers = (f"timer_query {timer:.4g} ms against finish_bracket {finish:.4g} ms"
               + (f" minus {cpu:.4g} ms of CPU" if cpu else "")
               + (f" minus its fixed {fixed_ms:.4g} ms" if fixed_ms else "") + f": {share:.0%}")
    if timer > finish * 1.5:
        return TimerCheck(False, f"timer_query coverage failed: {numbers}; more GPU time than the whole "
                                  "finish-bracketed frame is impossible")
    if share < min_share:
        return TimerCheck(False, f"timer_query coverage failed: {numbers} (< {min_share:.0%}); the timer "
                                  "measures only part of the frame's GPU work, so its values understate it")
    return TimerCheck(True, f"timer_query coverage passed: {numbers} (>= {min_share:.0%})")


def bracket_fixed_ms(light_ms: float | None, heavy_ms: float | None, k: int = TIMER_CHECK_FACTOR) -> float:
    """The part of a finish bracket that is no drawing (the drain's round trip, the clear, the submit), from the
    GPU part (bracket less CPU) of the light variant and of the heavy one, which draws the same layer k times:
    the intercept of bracket time against the layer count. On a small surface it is most of the light frame's
    bracket (llvmpipe, 64x64: 0.06 of 0.07 ms), so without it a timer that sees the whole frame reads a fifth
    of the light bracket. 0 when the heavy variant does not read as more (noise: nothing can be taken away)."""
    if light_ms is None or heavy_ms is None or heavy_ms <= light_ms or k < 2:
        return 0.0
    per_layer = (heavy_ms - light_ms) / (k - 1)
    return max(light_ms - per_layer, 0.0)


def heavier_ops(ops: Sequence[Mapping[str, Any]], k: int = TIMER_CHECK_FACTOR) -> list[dict[str, Any]]:
    """The same display list drawn k times in place (one `repeat` with dx = dy = 0): k times the overdraw,
    so the same pixels are touched k times. Translucent ops cannot be culled; opaque ones stay unculled as
    long as they do not cover the whole target exactly (a full-target opaque rect may become a clear)."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 2:
        raise ValueError(f"k={k!r}: the heavy variant must draw the scene at least twice")
    return [{"op": "repeat", "count": k, "dx": 0, "dy": 0, "ops": copy.deepcopy(list(ops))}]


def heavier_scene(scene: Mapping[str, Any], k: int = TIMER_CHECK_FACTOR) -> dict[str, Any]:
    """A job's `scene` object with `heavier_ops` applied, its id suffixed and `repeat` added to features."""
    out = copy.deepcopy(dict(scene))
    out["ops"] = heavier_ops(scene["ops"], k)
    out["id"] = f"{scene['id']}.timer_check.x{k}"
    out["features"] = sorted(set(scene.get("features", [])) | {"repeat"})
    return out


def run_source(sources: Iterable[str | None]) -> str | None:
    """The one gpu_source of a run's frames (None, empty and `none` cells ignored); raise MixedGpuSources if
    two appear. The one rule for a launch's frames (host/measure/launches.py) and a scene's (host/run_record.py)."""
    seen = {s for s in sources if s and s != "none"}
    if len(seen) > 1:
        raise MixedGpuSources(f"one run carries gpu_ms from {', '.join(sorted(seen))}: values of different "
                              "sources are never comparable, so none of them is used")
    return next(iter(seen), None)
