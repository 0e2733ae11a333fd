"""Faults that used to present wrong or stale data as a measurement, or lose the session's artifacts: each
launch reads only what it wrote, a bad value is an issue, and every artifact is still written."""

from __future__ import annotations

import csv

import pytest

from pytest_zbench.host.run_record import validate_run
from pytest_zbench.protocol.limits import MAX_ARTIFACT_BYTES, MAX_ISSUES


def no_traceback(result: pytest.RunResult) -> None:
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text and "INTERNALERROR" not in text, text[-3000:]


def launch_rows(session, launch: int) -> list[dict]:
    path = session.results / session.scene()["samples_file"]
    return [row for row in csv.DictReader(open(path)) if row["launch"] == str(launch)]


@pytest.mark.acceptance
def test_a_silent_runner_in_a_reused_results_folder_reads_nothing_of_the_last_session(session):
    first = session.run("--zbench-update-goldens=missing")
    first.assert_outcomes(passed=2)
    assert (session.results / session.name / "faults.one" / "launch-0" / "capture-0.png").is_file()

    session.device("silent")  # exits 0 having written nothing, into the same results folder
    second = session.run()
    second.assert_outcomes(failed=2)
    no_traceback(second)
    second.stdout.fnmatch_lines(["*0 of 4 frames rendered*", "*result.json was not written*"])
    entry = session.scene()
    assert entry["runs"] == 2 and entry["metrics"]["cpu_ms"] == {}
    assert entry["correctness"]["outcome"] == "failed"
    assert launch_rows(session, 0) == [] and launch_rows(session, 1) == []
    for launch in (0, 1):  # only the job the host wrote: nothing of the first session is left to be read
        folder = session.results / session.name / "faults.one" / f"launch-{launch}"
        assert sorted(p.name for p in folder.iterdir()) == ["job.json"]
    assert entry["history"] is None  # nothing measured, nothing recorded


@pytest.mark.acceptance
def test_a_runner_that_leaves_files_in_a_fixed_device_workdir_is_not_read_twice(session, tmp_path):
    # With a workdir of its own (not a temporary one) the device keeps what a killed earlier session left.
    workdir = tmp_path / "device-workdir"
    session.device("ok", workdir=str(workdir))
    session.run("-m", "zbench_perf").assert_outcomes(passed=1)
    stale = workdir / "faults.one" / "launch-0"
    stale.mkdir(parents=True)
    (stale / "frames.csv").write_text("frame,phase\n0,measure\n")
    (stale / "result.json").write_text('{"protocol": 1}')
    session.device("silent", workdir=str(workdir))
    result = session.run("-m", "zbench_perf")
    result.assert_outcomes(failed=1)
    assert launch_rows(session, 0) == []
    assert any("result.json was not written" in i["detail"] for i in session.issues("protocol"))


def test_rows_beyond_the_frame_count_are_an_issue_and_not_measured(local_session):
    session = local_session  # the protocol boundary: the same for every transport
    # 300,000 rows more than asked (the first report had 2.1 million: the reader stops at the same place)
    session.device("extra_rows", env={"ZBENCH_FAULT_ROWS": "300000"})
    result = session.run("-m", "zbench_perf")
    result.assert_outcomes(failed=1)
    no_traceback(result)
    result.stdout.fnmatch_lines(["*frames.csv has more rows than the 4 frames the job asked for*"])
    assert len(launch_rows(session, 0)) == 4 and len(launch_rows(session, 1)) == 4
    assert session.scene()["metrics"]["cpu_ms"]["n"] == 3 * 2


def test_non_finite_numbers_in_result_json_are_issues_and_every_artifact_is_written(local_session):
    session = local_session  # the protocol boundary: the same for every transport
    session.device("nan_result")
    result = session.run()
    no_traceback(result)
    result.assert_outcomes(failed=2)
    document = session.run_json()
    assert validate_run(document) == []
    assert (session.results / "report.html").is_file()
    result.stdout.fnmatch_lines(["*zbench*", "*faults.one*"])  # the summary table
    details = " ".join(i["detail"] for i in session.issues("nan"))
    for key in ("wall_ms", "frames_rendered", "gpu.clock_mhz", "power_w", "nested.list[1]"):
        assert key in details, details
    assert session.scene()["runner_wall_ms"] == [None, None]


def test_two_hundred_thousand_runner_issues_are_capped(local_session):
    session = local_session  # the protocol boundary: the same for every transport
    session.device("many_issues")
    result = session.run("-m", "zbench_perf")
    no_traceback(result)
    result.assert_outcomes(passed=1)  # GL errors fail the golden test, not the timing
    kept = session.issues()
    assert len(kept) == 2 * (MAX_ISSUES + 1)  # per launch: the first issues, and one that counts the rest
    notes = [i for i in kept if i["kind"] == "issues_capped"]
    assert len(notes) == 2 and f"beyond the {MAX_ISSUES}" in notes[0]["detail"]
    assert "199000 more issues" in notes[0]["detail"] and "gl_error x 199000" in notes[0]["detail"]
    assert (session.results / "run.json").stat().st_size < 2_000_000


@pytest.mark.parametrize("fault, phrase", [
    ("capture_size", "17x13, the scene is 16x12"),
    ("capture_16bit", "16-bit"),
    ("capture_rgb", "RGB without alpha"),
    ("capture_corrupt", "not a PNG"),
    ("capture_bomb", "60000x60000, the scene is 16x12"),
    ("capture_huge", f"more than the {MAX_ARTIFACT_BYTES} bytes"),
])
def test_a_capture_that_is_not_8bit_rgba_of_the_scene_size_is_never_compared_or_written(local_session, fault,
                                                                                           phrase):
    session = local_session
    session.device(fault)
    result = session.run("-m", "zbench_golden", "--zbench-update-goldens=all", "--zbench-runs=1")
    no_traceback(result)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*{phrase}*"])
    assert not (session.root / "goldens").exists()  # not even with =all
    correctness = session.scene()["correctness"]
    assert correctness["outcome"] == "failed" and correctness["frames"][0]["status"] == "error"
    assert any(phrase in i["detail"] for i in session.issues("capture_invalid"))
