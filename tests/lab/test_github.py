"""GitHub workflow commands: annotations escaped by the Actions toolkit's rules, outputs, step summaries."""

from __future__ import annotations

from pytest_zbench.lab.ci_output import (
    MAX_ANNOTATIONS,
    FailedSceneAnnotations,
    LineProgress,
)
from pytest_zbench.lab.github import (
    annotation,
    append_step_summary,
    escape_data,
    escape_property,
    running_in_actions,
    write_outputs,
)


def test_data_and_property_escaping():
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_data("a: b, c") == "a: b, c"
    assert escape_property("perf[fill-x1]: a, b\n%") == "perf[fill-x1]%3A a%2C b%0A%25"


def test_an_annotation_cannot_be_ended_early_or_inject_a_command():
    line = annotation("error", "slower\n::warning::injected\r\n100%", file="scenes/fill.yaml",
                      title="perf[fill.alpha.x1-local] failed, see: log")
    assert line == ("::error file=scenes/fill.yaml,title=perf[fill.alpha.x1-local] failed%2C see%3A log"
                    "::slower%0A::warning::injected%0D%0A100%25")
    assert "\n" not in line and "\r" not in line
    assert annotation("notice", "n") == "::notice::n"
    assert annotation("warning", "w", file="a,b.yaml", line=3) == "::warning file=a%2Cb.yaml,line=3::w"


def test_running_in_actions_only_when_github_says_so():
    assert running_in_actions({"GITHUB_ACTIONS": "true"})
    assert not running_in_actions({"GITHUB_ACTIONS": "false"}) and not running_in_actions({"CI": "true"})


def test_outputs_single_and_multi_line(tmp_path):
    path = tmp_path / "out"
    write_outputs(path, {"a": "1", "b": "x=y"})
    write_outputs(path, {"text": "line 1\nline 2"})
    lines = path.read_text().splitlines()
    assert lines[:2] == ["a=1", "b=x=y"]
    head, delimiter = lines[2].split("<<")
    assert head == "text" and delimiter.startswith("ghadelimiter_")
    assert lines[3:] == ["line 1", "line 2", delimiter]


def test_step_summary_is_appended(tmp_path):
    path = tmp_path / "summary.md"
    append_step_summary(path, "# one")
    append_step_summary(path, "two\n")
    assert path.read_text() == "# one\ntwo\n"


def test_line_progress_writes_a_first_line_then_one_per_interval():
    now = [100.0]
    lines: list[str] = []
    progress = LineProgress(lines.append, interval_s=5.0, clock=lambda: now[0])
    for t, frame in ((100.0, 0), (101.0, 10), (104.9, 20), (105.1, 30), (106.0, 35), (111.0, 5)):
        now[0] = t
        progress("fill.alpha.x1", 1, 2, frame, 35)
    assert lines == ["zbench: fill.alpha.x1 launch 2/2 frame 0/35 (0 s into the session)",
                     "zbench: fill.alpha.x1 launch 2/2 frame 30/35 (5 s into the session)",
                     "zbench: fill.alpha.x1 launch 2/2 frame 5/35 (11 s into the session)"]
    assert not any("\b" in line or "\r" in line for line in lines)


def test_failed_scene_annotations_are_capped_with_a_notice():
    failures = FailedSceneAnnotations()
    for i in range(MAX_ANNOTATIONS + 3):
        failures.add("scenes/fill.yaml", f"golden[fill.x{i}-local]", "call", f"frame 0: mismatch\nline {i}")
    failures.add("scenes/idle.yaml", "perf[idle-local]", "setup", "x" * 10_000)
    lines = failures.lines()
    assert len(lines) == MAX_ANNOTATIONS + 1
    assert lines[0] == "::error file=scenes/fill.yaml,title=golden[fill.x0-local] failed::frame 0: mismatch%0Aline 0"
    assert lines[-1].startswith("::notice title=zbench::4 more scene test(s) failed")
    one = FailedSceneAnnotations()
    one.add("scenes/idle.yaml", "perf[idle-local]", "setup", "x" * 10_000)
    (line,) = one.lines()
    assert "title=perf[idle-local] error in setup::" in line and len(line) < 4200


def test_xdist_worker_header_is_not_part_of_the_message():
    failures = FailedSceneAnnotations()
    failures.add("scenes/a.yaml", "perf[a-local]", "call", "[gw1] linux -- Python 3.11.7 /usr/bin/python\nslower")
    assert failures.lines() == ["::error file=scenes/a.yaml,title=perf[a-local] failed::slower"]
