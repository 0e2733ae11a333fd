"""Helpers shared by the runner tests: build a job file and run the runner as a real subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_zbench.protocol import Job, ops_features

REPO = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return env


def _argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest_zbench.runner", *args]


def _make_job(ops: list[dict[str, Any]], *, width: int = 48, height: int = 32, mode: str = "uncapped",
             refresh_hz: float = 120.0, warmup: int = 1, frames: int = 3, capture: tuple[int, ...] = (),
             complexity: tuple[float, ...] | None = None, features: list[str] | None = None) -> Job:
    scene = {"id": "test.scene", "params": {}, "width": width, "height": height,
             "features": sorted(ops_features(ops)) if features is None else features, "ops": ops}
    return Job(backend="software", mode=mode, refresh_hz=refresh_hz, warmup_frames=warmup, frames=frames,
               capture=capture, seed=1, scene=scene, complexity=complexity)


@pytest.fixture(scope="session")
def make_job() -> Callable[..., Job]:
    """make_job(ops, width=, height=, mode=, ...) → a small Job whose scene.features lists the ops used."""
    return _make_job


@dataclass
class Launch:
    returncode: int
    stdout: str
    stderr: str
    outdir: Path


@pytest.fixture(scope="session")
def start_runner() -> Callable[..., subprocess.Popen]:
    """start_runner(*args) starts `python -m pytest_zbench.runner *args` with pipes for stdout and stderr."""

    def _start(*args: str) -> subprocess.Popen:
        return subprocess.Popen(_argv(*args), cwd=REPO, env=_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    return _start


@pytest.fixture(scope="module")
def launch(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Launch]:
    """launch(job_or_text, *runner_options) runs `runner [options] run JOB OUTDIR` in fresh directories."""

    def _launch(job: Job | str, *options: str, timeout: float = 60.0) -> Launch:
        work = tmp_path_factory.mktemp("launch")
        job_path, outdir = work / "job.json", work / "out"
        outdir.mkdir()
        job_path.write_text(job if isinstance(job, str) else job.to_json(), encoding="utf-8")
        done = subprocess.run(_argv(*options, "run", str(job_path), str(outdir)), cwd=REPO,
                              env=_env(), capture_output=True, text=True, timeout=timeout)
        return Launch(done.returncode, done.stdout, done.stderr, outdir)

    return _launch
