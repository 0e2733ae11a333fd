"""Helpers for the GPU backend tests: is there a headless EGL GLES2 context here, and the runner as a subprocess.

(A module of its own rather than conftest.py: several test directories have a conftest, and `import conftest`
would find whichever was loaded last.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pytest_zbench.protocol import Job, ops_features
from pytest_zbench.runner.gl import glapi

REPO = Path(__file__).resolve().parents[2]
RECT = {"op": "rect", "x": 0, "y": 0, "w": 32, "h": 24, "color": "#3366CC80"}


@lru_cache(maxsize=1)
def egl_problem() -> str | None:
    """None when a GLES2 context can be made, else why not. Checked in a subprocess so that a driver that
    crashes cannot take the test session down with it."""
    code = ("from pytest_zbench.runner.gl.egl import EGLContext\n"
            "c = EGLContext()\nc.close()\n")
    try:
        done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=runner_env(), capture_output=True,
                              text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "making an EGL context took over 60 s"
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return lines[-1] if lines else f"exit status {done.returncode}"
    return None



def runner_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("ZBENCH_GPU_TIMER", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


def make_job(ops: list[dict[str, Any]], *, backend: str = "gles2", width: int = 32, height: int = 24,
             warmup: int = 2, frames: int = 8, capture: tuple[int, ...] = (), mode: str = "uncapped") -> Job:
    scene = {"id": "gles2.test", "params": {}, "width": width, "height": height,
             "features": sorted(ops_features(ops)), "ops": ops}
    return Job(backend=backend, mode=mode, refresh_hz=120.0, warmup_frames=warmup, frames=frames,
               capture=capture, seed=1, scene=scene)


@dataclass
class Launch:
    returncode: int
    stdout: str
    stderr: str
    outdir: Path

    def result(self) -> dict[str, Any]:
        return json.loads((self.outdir / "result.json").read_text(encoding="utf-8"))


def run_runner(tmp_path: Path, job: Job, **env: str) -> Launch:
    job_path, outdir = tmp_path / "job.json", tmp_path / "out"
    outdir.mkdir()
    job_path.write_text(job.to_json(), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pytest_zbench.runner", "run", str(job_path), str(outdir)],
                          cwd=REPO, env=runner_env(**env), capture_output=True, text=True, timeout=120)
    return Launch(done.returncode, done.stdout, done.stderr, outdir)


def probe_runner(**env: str) -> tuple[int, dict[str, Any] | None, str]:
    done = subprocess.run([sys.executable, "-m", "pytest_zbench.runner", "probe"], cwd=REPO,
                          env=runner_env(**env), capture_output=True, text=True, timeout=120)
    try:
        payload = json.loads(done.stdout)
    except json.JSONDecodeError:
        payload = None
    return done.returncode, payload, done.stderr


class ScriptedGL:
    """Just enough of glapi.GL for TimerQuery: every query begun gets the next scripted raw value and becomes
    available only when the test says the "GPU" got that far (`complete`)."""

    timer_extension = "GL_EXT_disjoint_timer_query"

    def __init__(self, values: list[int], bits: int = 64) -> None:
        self.values = list(values)
        self.bits = bits
        self.next_id = 1
        self.begun: list[int] = []  # query ids in begin order (ids are reused by the ring)
        self.result: dict[int, int] = {}
        self.available: dict[int, bool] = {}
        self.completed = 0  # how many begun queries the GPU has finished
        self.disjoint_pending = False
        self.active: int | None = None
        self.deleted: list[int] = []

    # test controls
    def complete(self, upto: int) -> None:
        self.completed = upto
        for query in self.begun[:upto]:
            self.available[query] = True

    # GL
    def counter_bits(self, target: int = glapi.GL_TIME_ELAPSED_EXT) -> int:
        return self.bits

    def get_integer(self, name: int) -> int:
        assert name == glapi.GL_GPU_DISJOINT_EXT
        flag, self.disjoint_pending = self.disjoint_pending, False
        return int(flag)

    def glGenQueries(self, n, ids) -> None:
        for i in range(n):
            ids[i] = self.next_id
            self.next_id += 1

    def glDeleteQueries(self, n, ids) -> None:
        self.deleted.extend(ids[i] for i in range(n))

    def glBeginQuery(self, target, query) -> None:
        assert target == glapi.GL_TIME_ELAPSED_EXT and self.active is None, "TIME_ELAPSED queries cannot nest"
        self.active = query
        self.begun.append(query)
        self.available[query] = False
        self.result[query] = self.values.pop(0)

    def glEndQuery(self, target) -> None:
        assert self.active is not None
        self.active = None

    def glGetQueryObjectiv(self, query, pname, ref) -> None:
        assert pname == glapi.GL_QUERY_RESULT_AVAILABLE_EXT
        ref._obj.value = int(self.available[query])

    def glGetQueryObjectui64v(self, query, pname, ref) -> None:
        assert pname == glapi.GL_QUERY_RESULT_EXT
        assert self.available[query], "a result read before it was available would stall"
        ref._obj.value = self.result[query]

    def glFlush(self) -> None:
        self.complete(len(self.begun))


class FakeClock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        self.now += 50_000_000  # 50 ms per reading: wall time never limits these values
        return self.now
