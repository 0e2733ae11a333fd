"""The diff trace (host/report/diff_trace.py): an A/B scene's median launches side by side, valid for Perfetto."""

from __future__ import annotations

import csv
import json

from trace_format import problems

from pytest_zbench.host.report.diff_trace import diff_trace_path, median_launch, read_launches, write_diff_traces
from pytest_zbench.regression.baseline import run_file_frames

COLUMNS = ["launch", "frame", "phase", "t_start_ns", "cpu_ms", "gpu_ms", "gpu_source", "present_interval_ms",
           "complexity", "draw_calls", "texture_upload_bytes", "disjoint", "gl_error", "cpu_record_ms", "cpu_flush_ms",
           "cpu_submit_ms", "pixels_drawn"]


def write_csv(path, cpu_by_launch: dict[int, float], draws: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for launch, cpu in cpu_by_launch.items():
            for frame in range(4):
                t = 10_000_000_000 * (launch + 1) + frame * 2_000_000
                writer.writerow([launch, frame, "warmup" if frame == 0 else "measure", t, cpu + 0.01 * frame, "", "none",
                                 2.0, "", draws, 0, "", "", cpu * 0.5, cpu * 0.3, cpu * 0.1, 3072])


def entry(verdict: str) -> dict:
    return {"id": "s.one", "device": "local", "backend": "software", "samples_file": "local/s.one.frames.csv",
            "ab": {"samples_file_b": "local/s.one.b.frames.csv"}, "regression": {"verdict": verdict}}


def test_the_median_launches_of_both_sides_side_by_side(tmp_path):
    write_csv(tmp_path / "local/s.one.frames.csv", {0: 1.0, 1: 5.0, 2: 1.2}, draws=10)
    write_csv(tmp_path / "local/s.one.b.frames.csv", {0: 1.9, 1: 1.7, 2: 1.8, 3: 9.0}, draws=20)
    assert median_launch(read_launches(tmp_path / "local/s.one.frames.csv"))[0] == 2  # 1.2 between 1.0 and 5.0
    assert median_launch(read_launches(tmp_path / "local/s.one.b.frames.csv"))[0] == 2  # the lower middle: 1.8
    document = {"run_id": "r", "scenes": [entry("regressed"), dict(entry("same"), id="s.two")]}
    written = write_diff_traces(document, tmp_path)
    assert written == [diff_trace_path(tmp_path, entry("regressed"))]  # a scene judged the same gets none
    trace = json.loads(written[0].read_text())
    assert problems(trace) == []
    assert trace["otherData"]["baseline"]["launch"] == 2 and trace["otherData"]["candidate"]["launch"] == 2
    processes = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    assert processes[1].startswith("baseline: launch 2 of 3") and processes[2].startswith("candidate: launch 2 of 4")
    draws = {e["pid"]: e["args"]["draw_calls"] for e in trace["traceEvents"] if e["name"] == "draw_calls"}
    assert draws == {1: 10.0, 2: 20.0}
    stages = [e for e in trace["traceEvents"] if e.get("cat") == "cpu_stage" and e["pid"] == 2]
    assert [e["name"] for e in stages[:3]] == ["record", "flush", "submit"]
    assert stages[1]["ts"] == stages[0]["ts"] + stages[0]["dur"]  # laid end to end from the frame's start
    starts = sorted(e["ts"] for e in trace["traceEvents"] if e.get("cat") in ("frame", "warmup") and e["pid"] == 1)
    assert starts == [0, 2000, 4000, 6000]


def test_no_diff_trace_without_both_sides_in_the_folder(tmp_path):
    write_csv(tmp_path / "local/s.one.frames.csv", {0: 1.0}, draws=10)
    history = dict(entry("regressed"), ab=None)
    assert write_diff_traces({"scenes": [history]}, tmp_path) == []


def test_a_run_json_baselines_frames_are_read_from_its_own_folder_and_never_outside_it(tmp_path):
    earlier = tmp_path / "earlier"
    write_csv(earlier / "local/s.one.frames.csv", {0: 1.0, 1: 1.1, 2: 0.9}, draws=10)
    write_csv(tmp_path / "now/local/s.one.frames.csv", {0: 2.0, 1: 2.2, 2: 2.1}, draws=30)
    (tmp_path / "secret.csv").write_text("launch,frame\n")
    document = {"scenes": [{"id": "s.one", "device": "local", "samples_file": "local/s.one.frames.csv"},
                           {"id": "s.out", "device": "local", "samples_file": "../secret.csv"},
                           {"id": "s.gone", "device": "local", "samples_file": "local/missing.csv"}]}
    frames = run_file_frames(document, earlier / "run.json", "s.one", "local")
    assert frames == (earlier / "local/s.one.frames.csv").resolve()
    assert run_file_frames(document, earlier / "run.json", "s.out", "local") is None  # outside its folder
    assert run_file_frames(document, earlier / "run.json", "s.gone", "local") is None
    assert run_file_frames(document, earlier / "run.json", "s.none", "local") is None
    scene = dict(entry("regressed"), ab=None, regression={"verdict": "regressed", "source": "file",
                                                          "baseline_samples_file": str(frames)})
    written = write_diff_traces({"scenes": [scene]}, tmp_path / "now")
    trace = json.loads(written[0].read_text())
    assert problems(trace) == [] and trace["otherData"]["baseline"]["samples_file"] == str(frames)
    draws = {e["pid"]: e["args"]["draw_calls"] for e in trace["traceEvents"] if e["name"] == "draw_calls"}
    assert draws == {1: 10.0, 2: 30.0}


def test_the_report_section_names_the_moved_measurements_and_says_why_there_is_no_diff_trace(tmp_path):
    from pytest_zbench.host.report.why_regressed import why_section

    attribution = {"moved": ["draw_calls"], "moved_at": 0.02, "method": "permutation", "line": "why: ...",
                   "measurements": [
                       {"metric": "counters.draw_calls", "name": "draw_calls", "kind": "counter", "how": "exact",
                        "effect": 2.0, "ci": [2.0, 2.0], "moved": True, "baseline_median": 100, "candidate_median": 200,
                        "note": None, "text": "draw_calls 2.00x (exact, 100 -> 200)"},
                       {"metric": "cpu_ms.p50", "name": "cpu_ms.p50", "kind": "timing", "how": "gate", "effect": 0.98,
                        "ci": [0.9, 1.07], "moved": False, "note": None, "text": "cpu_ms.p50 0.98x [0.90, 1.07]"}]}
    scene = {"id": "s", "device": "d", "samples_file": "d/s.frames.csv",
             "regression": {"verdict": "improved", "source": "history", "attribution": attribution}}
    section = why_section(scene, tmp_path)
    assert "<h3>Why it improved</h3>" in section and "<b>draw_calls</b>" in section
    assert "<tr class='moved'><td>draw_calls</td><td>counter</td><td>100</td><td>200</td><td>2.00x</td>" in section
    assert "<td>0.98x</td><td>[0.90, 1.07]</td>" in section
    assert "No diff trace" in section and "history keeps them in its database" in section
    assert why_section(dict(scene, regression={"verdict": "same", "attribution": None}), tmp_path) == ""
