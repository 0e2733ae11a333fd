"""The runner's side of the non-stalling timer-query ring: pending rows are held back, written in frame order
once complete, flushed as they complete, and flushed with the finals before captures and on SIGTERM."""

from __future__ import annotations

import csv
import os
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import skia
from gles2_support import RECT, make_job, run_runner

from pytest_zbench.protocol import Issue
from pytest_zbench.runner import run as runner_run
from pytest_zbench.runner.backends import Backend, FrameTiming

LAG = 2  # frames a fake timer result arrives late


class LateBackend(Backend):
    """A software surface whose GPU clock reports each frame LAG frames late, out of order when two arrive
    together, with a timer_invalid issue on frame 3. It records what frames.csv held at each frame start."""

    name = "software"
    timer_source = "timer_query"

    def __init__(self, outdir: Path, *, term_at: int | None = None) -> None:
        self.outdir = outdir
        self.term_at = term_at
        self.ordinal = 0
        self.outstanding: list[int] = []
        self.rows_on_disk: list[int] = []
        self.final_calls = 0

    def probe_info(self) -> dict[str, Any]:
        return {"features": ["rect", "unroll"], "timer_sources": ["timer_query"], "timer_source": "timer_query"}

    def make_surface(self, width: int, height: int) -> skia.Surface:
        return skia.Surface(width, height)

    def begin_frame(self) -> None:
        path = self.outdir / "frames.csv"
        self.rows_on_disk.append(len(path.read_text().splitlines()) - 1 if path.exists() else -1)

    def end_frame(self) -> FrameTiming:
        ordinal = self.ordinal
        self.ordinal += 1
        if self.term_at is not None and ordinal == self.term_at:
            os.kill(os.getpid(), signal.SIGTERM)
        assert self.collects_late_timings, "the runner must ask for late timings before the first frame"
        self.outstanding.append(ordinal)
        return FrameTiming(cpu_ms=1.0, gpu_source="timer_query", pending=True,
                           issues=(Issue("gl_error", "provisional issue, replaced by the late timing"),))

    def _timing(self, ordinal: int) -> tuple[int, FrameTiming]:
        issues = (Issue("timer_invalid", "scripted: value 0"),) if ordinal == 3 else ()
        gpu = None if ordinal == 3 else ordinal / 100.0 + 0.5
        return ordinal, FrameTiming(cpu_ms=1.0, gpu_ms=gpu, gpu_source="timer_query", disjoint=False,
                                    gl_error=False, issues=issues)

    def late_timings(self, final: bool = False) -> list[tuple[int, FrameTiming]]:
        if final:
            self.final_calls += 1
            ready, self.outstanding = self.outstanding, []
        else:
            ready = [o for o in self.outstanding if o <= self.ordinal - 1 - LAG]
            self.outstanding = [o for o in self.outstanding if o not in ready]
        return [self._timing(o) for o in sorted(ready, reverse=True)]  # out of order on purpose

    def read_rgba(self, surface: skia.Surface) -> np.ndarray:
        return surface.toarray(colorType=skia.kRGBA_8888_ColorType)


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, frames: int, capture: tuple[int, ...] = (),
         term_at: int | None = None) -> tuple[int, LateBackend, list[dict[str, str]], Path]:
    outdir = tmp_path / "out"
    outdir.mkdir()
    job = make_job([RECT], backend="software", warmup=2, frames=frames, capture=capture)
    job_path = tmp_path / "job.json"
    job_path.write_text(job.to_json(), encoding="utf-8")
    backend = LateBackend(outdir, term_at=term_at)
    monkeypatch.setattr(runner_run, "open_backend", lambda name, **_: backend)
    code = runner_run.run(str(job_path), str(outdir), out=open(os.devnull, "w"), err=open(os.devnull, "w"))
    rows = list(csv.DictReader(open(outdir / "frames.csv", newline="")))
    return code, backend, rows, outdir


def test_pending_rows_are_written_in_frame_order_with_their_late_values(tmp_path, monkeypatch):
    code, backend, rows, outdir = _run(tmp_path, monkeypatch, frames=10, capture=(0,))
    assert code == 0
    assert [int(r["frame"]) for r in rows] == list(range(12))
    for r in rows:
        frame = int(r["frame"])
        assert r["gpu_source"] == "timer_query"
        assert r["gpu_ms"] == ("" if frame == 3 else f"{frame / 100.0 + 0.5:g}")
    # The late timing replaced the provisional one entirely, issues included, stamped with its own frame.
    result = (outdir / "result.json").read_text()
    assert "provisional issue" not in result
    assert '"frame": 3' in result and "timer_invalid" in result
    assert backend.final_calls >= 1
    assert (outdir / "capture-0.png").is_file()


def test_rows_are_flushed_as_they_complete(tmp_path, monkeypatch):
    _, backend, rows, _ = _run(tmp_path, monkeypatch, frames=10)
    # At the start of frame f, the rows complete so far are on disk: frames 0 .. f-1-LAG.
    for f, on_disk in enumerate(backend.rows_on_disk):
        assert on_disk == max(f - LAG, 0), (f, backend.rows_on_disk)
    assert len(rows) == 12


def test_sigterm_flushes_the_finals_and_skips_captures(tmp_path, monkeypatch):
    code, backend, rows, outdir = _run(tmp_path, monkeypatch, frames=20, capture=(0,), term_at=6)
    assert code == 128 + signal.SIGTERM
    assert backend.final_calls == 1
    assert [int(r["frame"]) for r in rows] == list(range(7))  # every rendered frame, none pending
    assert all(r["gpu_ms"] for r in rows if r["frame"] != "3")
    assert not (outdir / "capture-0.png").exists()
    assert "stopped by SIGTERM after 7 of 22 frames" in (outdir / "result.json").read_text()


@pytest.mark.usefixtures("require_egl")
def test_gles2_timer_query_runs_on_the_ring_without_stalls(tmp_path):
    launch = run_runner(tmp_path, make_job([RECT], frames=40, capture=(0,)))
    assert launch.returncode == 0, launch.stderr
    stats = launch.result()["gpu"]["timer_stats"]
    assert stats["mode"] == "ring" and stats["stalls"] == 0
    rows = list(csv.DictReader(open(launch.outdir / "frames.csv", newline="")))
    assert [int(r["frame"]) for r in rows] == list(range(42))
    assert {r["gpu_source"] for r in rows} == {"timer_query"}
    dropped = sum(1 for r in rows if not r["gpu_ms"])
    assert dropped == stats["timer_invalid"] + stats["disjoint_frames"]
    assert dropped < len(rows) // 2
