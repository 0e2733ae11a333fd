"""bisect.json and bisect.md keep every A/B attempt of a speed finding, with its launches and why it was made
(pytest_zbench/engine/bisect.py write_report), and the scenes left undecided between the ends."""

from __future__ import annotations

import json

from pytest_zbench.engine.ab_attempts import Design, attempt_from_entry
from pytest_zbench.engine.bisect import Finding, write_report
from pytest_zbench.engine.steps import Commit

GOOD, STEP, BAD = (Commit(c * 40, subject) for c, subject in (("a", "start"), ("b", "batch the rects"),
                                                             ("c", "update the changelog")))


def pair(a, b, *attempts, not_retried=None):
    record = {"a": a.sha, "b": b.sha, "verdict": attempts[-1].verdict, "attempts": [t.to_json() for t in attempts]}
    return {**record, **({"not_retried": not_retried} if not_retried else {})}


def attempt(number, verdict, launches, why, per_side):
    entry = {"regression": {"verdict": verdict, "settings": {"alpha": 0.01}}, "ab": {"order": ["A", "B"] * launches},
             "sequential": {"stopped": "decided" if verdict != "inconclusive" else "max_launches"}}
    return attempt_from_entry(number, Design(per_side, 3.0 * per_side / 16), why, entry, 30.0 * number)


def test_the_report_lists_every_attempt_and_why(tmp_path):
    first = attempt(1, "inconclusive", 16, "first", 16)
    second = attempt(2, "regressed", 20, "attempt 1 was inconclusive at 16 + 16 launches (stopped: max_launches)", 32)
    evidence = [pair(GOOD, BAD, attempt(1, "regressed", 8, "first", 16)), pair(GOOD, STEP, first, second),
                pair(STEP, BAD, attempt(1, "inconclusive", 16, "first", 16)),
                {"commit": STEP.sha, "placed": "bad", "why": "placed by the decided side, the other undecided"}]
    finding = Finding("engine.busy", "speed", "culprit", GOOD, STEP, [], {"metric": "cpu_ms.p50", "effect": 1.2,
                      "ci": [1.15, 1.26], "verdict": "regressed"}, evidence, "placed from one side", 0.04)
    undecided = {"scene": "engine.flat", **pair(GOOD, BAD, attempt(1, "inconclusive", 16, "first", 16),
                                                  not_retried="it had the cap of 16 launches per side (--max-launches)")}
    json_path, md_path = write_report([finding], [GOOD, STEP, BAD], [], [], tmp_path, [undecided])

    document = json.loads(json_path.read_text())
    attempts = document["findings"][0]["evidence"][1]["attempts"]
    assert [(a["attempt"], a["launches_per_side"], a["launches_a"], a["verdict"]) for a in attempts] == [
        (1, 16, 16, "inconclusive"), (2, 32, 20, "regressed")]
    assert document["findings"][0]["false_alarm_bound"] == 0.04
    assert document["not_bisected"][0]["scene"] == "engine.flat"

    md = md_path.read_text()
    assert ("    - attempt 2 (sequential, up to 32 a side): regressed at 20 + 20 launches, stopped decided, 60 s, "
            "alpha 0.01; why: attempt 1 was inconclusive at 16 + 16 launches (stopped: max_launches)") in md
    assert f"  - step `{STEP.short}` placed bad: placed by the decided side, the other undecided" in md
    assert "error bound: at most 0.04" in md and "4 attempt(s)" in md
    assert "**speed `engine.flat`**: not bisected, inconclusive between the ends" in md
    assert "not retried: it had the cap of 16 launches per side" in md
