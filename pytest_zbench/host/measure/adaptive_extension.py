"""The search past an adaptive scene's `max` (docs/methodology.md §10, "Past max"): what run.json records of it.

A scene's `max` is the most its layout keeps on the surface; a device still within budget there would score
only `>= max`. The controller (adaptive_launches.py) then searches on towards the op's own limit
(scenes.ComplexitySpec.limit) within a time limit, and records how far it went and why it stopped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# Past the scene's max (docs/methodology.md §10, "Past max"): a search still within budget at `max` goes on
# towards the op's own limit while the scene's launches so far took less than this; a slower device never
# gets there, and one fast enough to need minutes keeps its censored lower bound.
EXTENSION_TIME_LIMIT_S = 60.0

# Why the search past max ended, in run.json `adaptive.plan.extension.stopped`.
ExtensionStop = Literal["budget", "limit", "time", "launches"]


@dataclass(frozen=True)
class Extension:
    """A search that went past the scene's max: from where, how far it might go, how far it went, and why it
    stopped (the budget crossed: the score is finite; else the score stays a lower bound)."""

    max_complexity: int
    limit: int
    reached: int
    stopped: ExtensionStop | None  # None while the search goes on

    def to_json(self) -> dict[str, object]:
        return {"max_complexity": self.max_complexity, "limit": self.limit, "reached": self.reached,
                "stopped": self.stopped, "time_limit_s": EXTENSION_TIME_LIMIT_S}
