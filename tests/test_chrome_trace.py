"""The Chrome trace of a scene, built from a run.json entry and its frames CSV, checked against the trace event
format's rules (tests/trace_format.py); and the validator itself catches what it must."""

from __future__ import annotations

import json

from trace_format import problems

from pytest_zbench.host.report.chrome_trace import scene_trace, trace_path, write_traces

HEADER = "launch,frame,phase,t_start_ns,cpu_ms,gpu_ms,gpu_source,present_interval_ms,complexity\n"


def frames_csv() -> str:
    rows = []
    # Launch 0 on the device clock; a 3 ms CPU time on frame 2 runs past the next start (a clock that lied).
    for i, (cpu, interval) in enumerate([(4.0, 16.667), (2.0, 16.667), (30.0, 16.667), (2.5, 16.667)]):
        rows.append(f"0,{i},{'warmup' if i == 0 else 'measure'},{1_000_000_000 + i * 16_667_000},{cpu},"
                    f"{cpu / 2},gl_timer_query,{interval},{100 + i}")
    # Launch 1's runner counts from its own start: its clock does not follow launch 0's.
    for i in range(3):
        rows.append(f"1,{i},measure,{i * 16_667_000},1.5,0.75,gl_timer_query,16.667,{100 + i}")
    return HEADER + "\n".join(rows) + "\n"


def entry(gpu_valid: bool | None = True) -> dict:
    return {"id": "fill.x1", "device": "pi", "backend": "gles2", "mode": "paced", "budget_ms": 16.667,
            "samples_file": "pi/fill.x1.frames.csv", "gpu_valid": gpu_valid,
            "launches": [{"launch": 0, "conditions": {"before": {"temp_c": 51.0}, "after": {"temp_c": 53.5}}},
                         {"launch": 1, "conditions": {"before": {"temp_c": None}, "after": {}}}]}


def test_a_scene_trace_follows_the_format_with_a_track_per_launch_and_series(tmp_path):
    (tmp_path / "pi").mkdir()
    (tmp_path / "pi/fill.x1.frames.csv").write_text(frames_csv())
    trace = scene_trace(entry(), tmp_path, pid=2, run_id="r1")
    assert trace is not None
    assert problems(trace) == []
    events = trace["traceEvents"]
    names = {(e["tid"], e["args"]["name"]) for e in events if e["name"] == "thread_name"}
    assert names == {(1, "launch 0: frames"), (2, "launch 0: CPU time"), (3, "launch 0: GPU time (gl_timer_query)"),
                     (17, "launch 1: frames"), (18, "launch 1: CPU time"), (19, "launch 1: GPU time (gl_timer_query)")}
    assert [e["args"]["name"] for e in events if e["name"] == "process_name"] == ["pi (gles2)"]
    frames0 = [e for e in events if e.get("ph") == "X" and e["tid"] == 1]
    assert frames0[0]["ts"] == 0 and frames0[0]["name"] == "frame 0 (warmup)" and frames0[1]["ts"] == 16667
    cpu0 = [e for e in events if e.get("ph") == "X" and e["tid"] == 2]
    assert cpu0[2]["dur"] == 16667 and cpu0[2]["args"]["cut"]  # 30 ms cut at the next frame's start
    launch1 = [e for e in events if e.get("ph") == "X" and e["tid"] == 17]
    assert launch1[0]["ts"] > frames0[-1]["ts"] + frames0[-1]["dur"]  # placed after launch 0, not on top of it
    temps = [e["args"]["temp_c"] for e in events if e.get("ph") == "C" and e["name"].startswith("temperature")]
    assert temps == [51.0, 53.5]
    assert len([e for e in events if e.get("ph") == "C" and e["name"] == "complexity"]) == 7
    assert trace["otherData"]["scene"] == "fill.x1" and trace["otherData"]["run_id"] == "r1"


def test_untrusted_gpu_times_stay_out_of_the_trace(tmp_path):
    (tmp_path / "pi").mkdir()
    (tmp_path / "pi/fill.x1.frames.csv").write_text(frames_csv())
    trace = scene_trace(entry(gpu_valid=False), tmp_path)
    assert trace is not None and problems(trace) == []
    assert not [e for e in trace["traceEvents"] if e.get("cat") == "gpu"]
    assert "timer check" in trace["otherData"]["gpu"]


def test_traces_are_written_beside_each_frames_csv(tmp_path):
    (tmp_path / "pi").mkdir()
    (tmp_path / "pi/fill.x1.frames.csv").write_text(frames_csv())
    skipped = {"id": "other", "device": "pi", "samples_file": None}
    written = write_traces({"run_id": "r1", "devices": {"pc": {}, "pi": {}}, "scenes": [entry(), skipped]}, tmp_path)
    assert written == [tmp_path / "pi/fill.x1.trace.json"] == [trace_path(tmp_path, entry())]
    trace = json.loads(written[0].read_text())
    assert problems(trace) == [] and {e["pid"] for e in trace["traceEvents"]} == {2}


def test_the_validator_finds_broken_rules():
    named = [{"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "p"}},
             {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "t"}}]

    def x(ts, dur, tid=1):
        return {"name": "f", "ph": "X", "ts": ts, "dur": dur, "pid": 1, "tid": tid}

    assert problems({"traceEvents": named + [x(0, 10), x(10, 5)]}) == []
    assert "overlaps" in problems({"traceEvents": named + [x(0, 11), x(10, 5)]})[0]
    assert "not sorted" in problems({"traceEvents": named + [x(10, 1), x(0, 5)]})[0]
    assert "integer" in problems({"traceEvents": named + [x(0.5, 10)]})[0]
    assert "no thread_name" in problems({"traceEvents": named + [x(0, 1, tid=2)]})[0]
    assert "no process_name" in problems({"traceEvents": named[1:] + [x(0, 1)]})[0]
    assert "traceEvents" in problems({"events": []})[0]
    assert "phase" in problems([{"name": "a", "ph": "Q", "pid": 1, "tid": 1}])[0]
