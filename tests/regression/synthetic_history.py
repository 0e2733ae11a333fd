"""A synthetic lab history written through the history's own API (History.record): devices x scenes x runs,
each run a session of a few launches whose cpu_ms.p50 is lognormal around the scene's level, and chosen scenes
made slower from a chosen run on. For the publish tests and bench/bench_publish.py."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone

import numpy as np

from pytest_zbench.regression.history import History, RunInfo, SceneRecord

START = datetime(2026, 1, 5, tzinfo=timezone.utc)


def launch(rng: np.random.Generator, level: float, spread: float) -> dict[str, object]:
    """One launch's summary as the history stores it (the statistics the gate and the series read)."""
    p50 = float(level * rng.lognormal(0.0, spread))
    return {"cpu_ms": {"p50": p50, "p90": p50 * 1.2, "p99": p50 * 1.5, "mean": p50 * 1.05},
            "frames": 60, "jank_share": 0.0}


def write_history(history: History, *, devices: int, scenes: int, runs: int, launches: int = 3,
                  steps: Mapping[tuple[int, int], tuple[int, float]] | None = None, spread: float = 0.02,
                  seed: int = 0, progress: Callable[[int, int], None] | None = None) -> None:
    """`runs` sessions on each of `devices` devices (`dev00`, ...), each measuring `scenes` scenes (`scene.000`,
    ...). steps[(device, scene)] = (run, factor): that scene on that device is `factor` times slower from `run` on.
    Run r is build `build-<r>`, started r hours after START; launches vary by `spread` (the sd of their logs)."""
    rng = np.random.default_rng(seed)
    levels = rng.uniform(1.0, 12.0, size=(devices, scenes))
    steps = steps or {}
    for r in range(runs):
        started = (START + timedelta(hours=r)).isoformat().replace("+00:00", "Z")
        for d in range(devices):
            info = RunInfo(f"dev{d:02d}", "software", build_hash=f"build-{r:04d}", dirty=False,
                           environment={"device": {"model": f"model-{d}"}}, run_id=f"session{r:04d}-dev{d:02d}",
                           started_utc=started, host="lab")
            records = []
            for s in range(scenes):
                at, factor = steps.get((d, s), (runs, 1.0))
                level = levels[d, s] * (factor if r >= at else 1.0)
                records.append(SceneRecord(f"scene.{s:03d}", {"n": s}, "uncapped", None,
                                           [launch(rng, level, spread) for _ in range(launches)]))
            history.record(info, records)
        if progress is not None:
            progress(r + 1, runs)
