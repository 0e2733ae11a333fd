"""Why it regressed when B writes garbage in a counter column (docs/regression.md, "Why it regressed"): the
candidate draws twice the rects and writes `lots` in every draw_calls cell. The why names draw_calls as
unreadable on the candidate's side, with how many cells were dropped, instead of "recorded by the baseline
only", which hid that the counter may have moved by any amount."""

from __future__ import annotations

import numpy as np
import pytest
from test_why_regressed import B_RUNNER, EXTRA_RECTS, RECTS, run_ab

from pytest_zbench.protocol import Issue, dropped_cells
from pytest_zbench.regression.attribution import explain

GARBAGE_B = B_RUNNER.replace("sys.exit(main(args))", '''\
status = main(args)
if args[:1] == ["run"]:  # every draw_calls cell of the launch's frames.csv replaced by a word
    import csv
    frames = Path(args[2]) / "frames.csv"
    with frames.open(newline="") as f:
        rows = list(csv.reader(f))
    column = rows[0].index("draw_calls")
    for row in rows[1:]:
        row[column] = "lots"
    with frames.open("w", newline="") as f:
        csv.writer(f).writerows(rows)
sys.exit(status)''')


def test_dropped_cells_are_counted_per_column_from_the_launch_issues():
    issues = [Issue("protocol", "frames.csv column 'draw_calls': 'lots' is not a number; dropped", 3),
              Issue("protocol", "frames.csv column 'draw_calls': '-2' is outside 0..1e+09; dropped", 4),
              Issue("nan", "frames.csv column 'cpu_ms': 'nan'; dropped", 5),
              Issue("protocol", "frames.csv lacks columns ['gpu_ms']; their values are unknown")]
    assert dropped_cells(issues) == {"draw_calls": 2, "cpu_ms": 1}


def test_a_counter_the_candidate_wrote_as_garbage_is_named_unreadable():
    rng = np.random.default_rng(3)
    a = [{"cpu_ms": {"p50": 1.0 + rng.normal(0, 0.01)}, "counters": {"draw_calls": 10.0}} for _ in range(6)]
    b = [{"cpu_ms": {"p50": 1.4 + rng.normal(0, 0.01)}, "counters": {}} for _ in range(6)]

    def rejudge(metrics):
        import dataclasses

        from pytest_zbench.regression.config import GateConfig
        from pytest_zbench.regression.interleaved_ab import judge_ab
        return judge_ab(a, b, dataclasses.replace(GateConfig(threshold=0.05, resamples=500), metrics=metrics))

    plain = explain(a, b, rejudge)
    assert "draw_calls not judged (recorded by the baseline only)" in plain.line()
    why = explain(a, b, rejudge, dropped=({}, {"draw_calls": 3640}))
    assert "unreadable, so not judged: draw_calls not judged (the candidate wrote 3640 cell(s) that are no " \
           "numbers, dropped (protocol issues in run.json); the baseline's median is 10)" in why.line(), why.line()
    assert "recorded by the baseline only" not in why.line()


@pytest.mark.acceptance
def test_an_ab_whose_candidate_writes_garbage_counters_names_them_in_the_why(project, tmp_path, monkeypatch):
    monkeypatch.setattr("test_why_regressed.B_RUNNER", GARBAGE_B)
    result, scene, _ = run_ab(project, tmp_path, "many.yaml", RECTS.format(extra=""), RECTS.format(extra=EXTRA_RECTS))
    regression = scene["regression"]
    assert regression["verdict"] == "regressed", regression["message"]
    draws = next(m for m in regression["attribution"]["measurements"] if m["name"] == "draw_calls")
    assert draws["how"] == "not_judged" and "the candidate wrote" in draws["note"], draws
    assert "unreadable, so not judged: draw_calls" in regression["message"]
    assert any("'draw_calls': 'lots' is not a number" in i["detail"] for i in scene["ab"]["issues_b"])
