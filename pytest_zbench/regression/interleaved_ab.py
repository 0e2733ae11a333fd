"""A/B on one device: the launch order, and judging B against A with the gate.

Interleaving A and B launches, rather than all A then all B, cancels drift (thermal state, DVFS, background
load) that would otherwise read as a regression (docs/methodology.md §6, §9). This module only plans the order
and judges the results; the plugin runs the launches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeVar

from .gate import GateConfig, SceneVerdict, judge_interleaved
from .paired import min_rounds

Arm = Literal["A", "B"]
Pattern = Literal["ABAB", "ABBA"]
T = TypeVar("T")
# Counterbalanced by default: under a steady drift (a device warming up) ABAB charges B one slot of drift per
# pair, ABBA charges neither arm (bench/bench_ab_order.py measures the bias; docs/regression.md, "A/B").
DEFAULT_PATTERN: Pattern = "ABBA"


def interleave(n_per_side: int, *, pattern: Pattern = DEFAULT_PATTERN) -> list[Arm]:
    """The launch order for n launches per side.

    ABBA (the default): A, B, B, A, A, B, ... , which cancels a linear drift (in ABAB every B runs one slot
    after its A); with an even n both arms have the same mean position, with an odd n B's is half a slot later
    over the whole run instead of one slot a pair. ABAB: A, B, A, B, ... .
    """
    if n_per_side < 1:
        raise ValueError(f"an A/B comparison needs at least one launch per side, not {n_per_side}")
    if pattern not in ("ABAB", "ABBA"):
        raise ValueError(f"pattern must be 'ABAB' or 'ABBA', not {pattern!r}")
    order: list[Arm] = []
    for i in range(n_per_side):
        order += ["B", "A"] if pattern == "ABBA" and i % 2 else ["A", "B"]
    return order


def split(order: Sequence[Arm], results: Sequence[T]) -> tuple[list[T], list[T]]:
    """Results of the launches in `order`, as (A results, B results) in launch order.

    A shorter `results` (launches that never ran after a fault) is split as far as it goes."""
    if len(results) > len(order):
        raise ValueError(f"{len(results)} results for an order of {len(order)} launches")
    a = [r for arm, r in zip(order, results) if arm == "A"]
    b = [r for arm, r in zip(order, results) if arm == "B"]
    return a, b


def judge_ab(a_launches: Sequence[Any], b_launches: Sequence[Any], config: GateConfig = GateConfig(), *,
             a_name: str = "A", b_name: str = "B", device: str = "", paired: bool = False) -> SceneVerdict:
    """Judge B (candidate) against A (baseline) from their per-launch summaries (LaunchSummary or dict),
    launch against launch: interleaved in one session, both sides share the session's offset. paired: the i-th
    of A and the i-th of B ran in one round (interleave's order), and B is judged within each round."""
    where = f" on {device}" if device else ""
    # Fewer rounds than the sign-flip test needs to reach the level (8 at 0.005) could never decide a change
    # paired: such a short run is judged unpaired, launch against launch (docs/regression.md, "Paired rounds").
    need = min_rounds(config.alpha_per_direction)
    paired = paired and need is not None and min(len(a_launches), len(b_launches)) >= need
    rounds = " in paired rounds" if paired else ""
    description = (f"{a_name}, {len(a_launches)} launches interleaved with {len(b_launches)} of {b_name}{where}"
                   f"{rounds}")
    return judge_interleaved(a_launches, b_launches, config, baseline_description=description, paired=paired)


def judge_order(order: Sequence[Arm], launches: Sequence[Any], config: GateConfig = GateConfig(),
                **kwargs: Any) -> SceneVerdict:
    """split() then judge_ab(): the per-launch summaries in the order they ran, paired by round (the i-th A
    with the i-th B: adjacent in interleave's orders)."""
    a, b = split(order, launches)
    return judge_ab(a, b, config, **{"paired": True, **kwargs})
