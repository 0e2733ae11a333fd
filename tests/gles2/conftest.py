"""Helpers for the GPU backend tests: is there a headless EGL GLES2 context here, and the runner as a subprocess.

A test that needs EGL skips when there is none, except under CI (`CI=true`), where it fails: the CI image is
supposed to have Mesa's llvmpipe, and a silently skipped GPU suite would hide that it is gone.
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

import pytest

from pytest_zbench.protocol import Job

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


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


@pytest.fixture(scope="session")
def require_egl() -> None:
    problem = egl_problem()
    if problem is None:
        return
    message = f"no headless EGL GLES2 context: {problem}"
    if _in_ci():
        pytest.fail(f"{message} (CI=true: the GPU backend must be testable in CI; install libegl1 "
                    "libegl-mesa0 libgles2 libgl1-mesa-dri)", pytrace=False)
    pytest.skip(message)


def runner_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("ZBENCH_GPU_TIMER", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


def make_job(ops: list[dict[str, Any]], *, backend: str = "gles2", width: int = 32, height: int = 24,
             warmup: int = 2, frames: int = 8, capture: tuple[int, ...] = (), mode: str = "uncapped") -> Job:
    used: set[str] = set()

    def walk(items: list[dict[str, Any]]) -> None:
        for op in items:
            used.add(op["op"])
            walk(op.get("ops", []))

    walk(ops)
    scene = {"id": "gles2.test", "params": {}, "width": width, "height": height, "features": sorted(used),
             "ops": ops}
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
