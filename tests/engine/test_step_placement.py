"""A bisect step placed from its two A/Bs against the ends (pytest_zbench/engine/step_placement.py), on run.json
`regression` entries as the plugin writes them; and the speed bisect's range narrowed by each placement
(engine/bisect.py), its A/B sessions answered from given verdicts."""

from __future__ import annotations

import hashlib
import shlex
from types import SimpleNamespace

import pytest

from pytest_zbench.engine.bisect import Bisector
from pytest_zbench.engine.step_placement import deciding, place
from pytest_zbench.engine.steps import BuiltCommit, Commit

NAMES = ("good", "m", "bad")
ENDS = {"metric": "cpu_ms.p50", "verdict": "regressed", "effect": 1.2, "ci": [1.15, 1.26]}


def regression(verdict, effect=1.0, ci=(0.9, 1.1)):
    return {"verdict": verdict, "metrics": [{"metric": "cpu_ms.p50", "verdict": verdict, "effect": effect,
                                             "ci": list(ci)}]}


SLOWER = regression("regressed", 1.2, (1.14, 1.27))
SAME = regression("same", 1.0, (0.98, 1.02))
UNDECIDED = regression("inconclusive", 1.1, (0.85, 1.5))


@pytest.mark.parametrize("before, after, side, leaned", [
    (SLOWER, SAME, "bad", False),  # both agree
    (SAME, SLOWER, "good", False),
    (SLOWER, UNDECIDED, "bad", True),  # M slower than GOOD by the bisected effect: bad, whatever M->BAD said
    (UNDECIDED, SAME, "bad", True),  # M as fast as BAD
    (UNDECIDED, SLOWER, "good", True),  # BAD slower than M
    (SAME, UNDECIDED, "good", True),  # M as fast as GOOD
    (UNDECIDED, {}, "undecided", False),  # the other side not measured is no evidence
    (UNDECIDED, UNDECIDED, "undecided", False),
    (SLOWER, SLOWER, "ambiguous", False),  # in parts
    (SAME, SAME, "ambiguous", False),
    (regression("improved", 0.8, (0.75, 0.85)), SLOWER, "ambiguous", False),
    (SLOWER, regression("improved", 0.8, (0.75, 0.85)), "ambiguous", False),
])
def test_a_step_is_placed_from_what_is_decided(before, after, side, leaned):
    placement = place(before, after, ENDS, NAMES)
    assert (placement.side, placement.leaned) == (side, leaned), placement.why
    assert f"good->m {before.get('verdict')}, m->bad {after.get('verdict')}" in placement.why


def test_a_regression_surely_smaller_than_the_ends_is_part_of_the_slowdown():
    part = regression("regressed", 1.08, (1.06, 1.10))  # wholly below the ends' [1.15, 1.26]
    for before, after in ((part, UNDECIDED), (UNDECIDED, part)):
        placement = place(before, after, ENDS, NAMES)
        assert placement.side == "ambiguous" and "in parts" in placement.why
    # An interval that reaches the ends' is the bisected effect as far as the launches can tell.
    assert place(regression("regressed", 1.1, (1.05, 1.16)), UNDECIDED, ENDS, NAMES).side == "bad"
    # Another metric than the ends' deciding one is not compared.
    other = {"verdict": "regressed", "metrics": [{"metric": "cpu_ms.p95", "verdict": "regressed", "effect": 1.05,
                                                  "ci": [1.01, 1.09]}]}
    assert place(other, UNDECIDED, ENDS, NAMES).side == "bad"


def test_the_deciding_metric_is_a_regressed_one_first():
    entry = {"verdict": "regressed", "metrics": [
        {"metric": "cpu_ms.p50", "verdict": "same", "effect": 1.0, "ci": [0.99, 1.01]},
        {"metric": "cpu_ms.p95", "verdict": "regressed", "effect": 1.3, "ci": [1.2, 1.4]}]}
    assert deciding(entry) == {"metric": "cpu_ms.p95", "verdict": "regressed", "effect": 1.3, "ci": [1.2, 1.4]}
    assert deciding({}) is None


class VerdictsSuite:
    """The suite's A/B sessions without a device: B against A is `regressed` when B holds the slowdown that came in
    at commit `culprit` and A does not, else what `same_side` says (a pair on one side of the culprit). The
    sessions run are kept, as (A, B) commit indices."""

    pytest_args: tuple[str, ...] = ()

    def __init__(self, shas: list[str], culprit: int, same_side: str) -> None:
        self.index = {sha: i for i, sha in enumerate(shas)}
        self.culprit, self.same_side = culprit, same_side
        self.sessions: list[tuple[int, int]] = []

    def session(self, spec, runner, folder, extra, after=()):
        b_runner = next(shlex.split(x.split("=", 1)[1]) for x in extra if x.startswith("--zbench-ab="))
        a, b = self.index[runner[0]], self.index[b_runner[0]]
        self.sessions.append((a, b))
        slower = a < self.culprit <= b
        verdict = "regressed" if slower else self.same_side
        effect, ci = ((1.2, [1.15, 1.26]) if slower else (1.0, [0.98, 1.02]) if verdict == "same"
                      else (1.05, [0.9, 1.3]))
        regression = {"verdict": verdict, "metrics": [{"metric": "cpu_ms.p50", "verdict": verdict, "effect": effect,
                                                       "ci": ci}]}
        return {"scenes": [{"id": "blur", "device": spec.name, "regression": regression,
                            "ab": {"order": ["A", "B", "B", "A"] * 3}}]}


class PassThroughBuilds:
    """Every commit built and deployed: its runner is its sha, which the suite reads back."""

    spec = SimpleNamespace(name="box")

    def get(self, commit: Commit) -> BuiltCommit:
        return BuiltCommit(commit, SimpleNamespace(runner=[commit.sha]))


COMMITS = [Commit(hashlib.sha1(str(i).encode()).hexdigest(), f"commit {i}") for i in range(9)]


@pytest.mark.parametrize("same_side", ["same", "inconclusive"])
@pytest.mark.parametrize("culprit", range(1, len(COMMITS)))
def test_a_speed_bisect_moves_the_end_of_the_range_the_step_was_placed_on(tmp_path, culprit, same_side):
    """Each step's A/Bs against the ends are given, no device, no build: a step placed `bad` becomes the range's
    bad end, one placed `good` its good end, and the search ends on the culprit wherever it lies. With
    `inconclusive` each step is placed by its one decided A/B (GOOD->M regressed: bad; M->BAD regressed: good)."""
    suite = VerdictsSuite([c.sha for c in COMMITS], culprit, same_side)
    bisector = Bisector(COMMITS, PassThroughBuilds(), suite, "box", tmp_path, progress=lambda line: None)
    [finding] = bisector.speed()
    assert finding.status == "culprit", finding.reason
    assert (finding.last_good, finding.first_bad) == (COMMITS[culprit - 1], COMMITS[culprit])
    placed = {item["commit"]: item["placed"] for item in finding.evidence if "placed" in item}
    by_sha = {c.sha: i for i, c in enumerate(COMMITS)}
    assert placed and all(side == ("bad" if by_sha[sha] >= culprit else "good") for sha, side in placed.items())
    # A binary search: at most ceil(log2(7 steps + 1)) = 3 steps, two A/Bs each, after the ends' one.
    assert len(placed) <= 3 and len(suite.sessions) == 1 + 2 * len(placed)
