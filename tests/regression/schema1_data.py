"""The contents of tests/data/history/schema1.sqlite, a history file written by pytest-zbench at schema 1
(before the PostgreSQL backend), through the public History API that both versions share.

`fill(module)` writes them with a history module's History, RunInfo, SceneRecord and Calibration: the file
was made with the schema-1 module, and the migration test writes the same rows with today's module into a
fresh database and compares every row.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

ENV = {"device": {"model": "Raspberry Pi 3B+"}, "gpu": {"gl_renderer": "VC4 V3D 2.1"},
       "display": {"width": 800, "height": 480, "refresh_hz": 60.0}}


def _launches(level: float, n: int, seed: int) -> tuple[list[dict], list[dict]]:
    rng = np.random.default_rng(seed)
    summaries, samples = [], []
    for value in level * np.exp(rng.normal(0, 0.03, n)):
        summaries.append({"cpu_ms": {"p50": float(value), "p95": float(value) * 1.3}, "gpu_ms": None,
                          "gpu_source": None, "jank_share": 0.0})
        samples.append({"cpu_ms": rng.lognormal(np.log(level), 0.2, 120), "interval_ms": np.full(120, 16.7)})
    return summaries, samples


def fill(history_module: ModuleType, path: str) -> None:
    m = history_module
    with m.History(path) as history:
        for day in range(1, 5):
            kind = "calibration" if day == 4 else "run"
            info = m.RunInfo("pi3b", "gles2", f"build{day:02d}", None if day == 2 else day == 3, ENV,
                             run_id=f"run{day:02d}-pi3b", started_utc=f"2026-10-{day:02d}T10:00:00.123456Z",
                             kind=kind)
            scenes = []
            for k, scene_id in enumerate(("fill.alpha.x4", "text.labels")):
                summaries, samples = _launches(5.0 + k, 3, seed=10 * day + k)
                scenes.append(m.SceneRecord(scene_id, {"scene": {"layers": 4}, "frames": 120}, "paced", None,
                                            summaries, samples if k == 0 else None,
                                            {"frame_ms": {"p50": 16.7}, "n_launches": 3}))
            history.record(info, scenes)
        ab = m.RunInfo("pi3b", "gles2", "B: ./zinc-bench-new", None, ENV, run_id="run05-pi3b-b",
                       started_utc="2026-10-05T10:00:00Z", kind="ab")
        history.record(ab, [m.SceneRecord("fill.alpha.x4", {"scene": {"layers": 4}, "frames": 120}, "paced",
                                          "timer_query", _launches(6.0, 2, seed=99)[0])])
        key = m.SceneKey("pi3b", "gles2", "fill.alpha.x4", m.hash_params({"scene": {"layers": 4}, "frames": 120}),
                         "paced", None)
        history.save_calibration(m.Calibration(key, "cpu_ms.p50", 0.031, 3, {5: 0.21, 10: None}, 0.05, 0.8,
                                               "lognormal simulation", "build04", "f" * 16, ("run04-pi3b",),
                                               created_utc="2026-10-04T12:00:00Z"))


if __name__ == "__main__":  # python -m tests.regression.schema1_data MODULE PATH
    import importlib
    import sys

    fill(importlib.import_module(sys.argv[1]), sys.argv[2])
