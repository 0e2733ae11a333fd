"""The perf verdict's words, their order and their colours, written once (docs/architecture.md, "Where each
rule lives").

The gate judges each metric and each scene with an Outcome; a perf test's verdict (run.json
`regression.verdict`) adds the two cases where nothing was judged; `zbench compare` adds the scenes whose
two runs cannot be compared. Every list, sort and colour of these words reads this module.
"""

from __future__ import annotations

from typing import Literal

# The gate's verdict on a metric, and on a scene (its worst metric).
Outcome = Literal["same", "regressed", "improved", "inconclusive"]
# A perf test's: the gate's, or no_baseline (a first run: recorded, not judged) or not_judged (the baseline
# file's run was not comparable).
GateVerdict = Literal["same", "regressed", "improved", "inconclusive", "no_baseline", "not_judged"]
# `zbench compare`'s verdict on a scene two runs share.
ComparedVerdict = Literal["same", "regressed", "improved", "inconclusive", "no_baseline", "not_judged",
                          "not_comparable"]

# The verdicts that say the build changed the scene's level: a session judged so is no baseline for the next
# until accepted as the new level (regression/history.py `comparable`, docs/regression.md "History").
CHANGES: tuple[Outcome, ...] = ("regressed", "improved")

# Most attention first: a scene's verdict is the first of its metrics' in this order, and every table and
# message lists verdicts in it. A word not in it sorts last.
VERDICT_ORDER: tuple[ComparedVerdict, ...] = ("regressed", "inconclusive", "not_comparable", "no_baseline",
                                              "not_judged", "improved", "same")

# The terminal table: the word it prints and its colour (a style of report/terminal_table.py STYLES).
TERMINAL_WORDS: dict[str, tuple[str, str]] = {
    "regressed": ("regressed", "red"), "improved": ("improved", "green"), "same": ("same", ""),
    "inconclusive": ("inconcl.", "yellow"), "no_baseline": ("new", ""), "not_judged": ("not judged", ""),
}

# report.html's charts: the colour of a metric's verdict (any other word: NEUTRAL_COLOUR).
NEUTRAL_COLOUR = "#555"
CHART_COLOURS: dict[str, str] = {"regressed": "#b22222", "improved": "#2a7a2a", "same": NEUTRAL_COLOUR,
                                 "inconclusive": "#c77700"}


def verdict_rank(verdict: str) -> int:
    """Where a verdict sorts in VERDICT_ORDER (an unknown word: after every known one)."""
    return VERDICT_ORDER.index(verdict) if verdict in VERDICT_ORDER else len(VERDICT_ORDER)
