"""`zbench publish` at lab scale: the time to publish a history of 20 devices x 100 scenes x 500 runs (3 launches
each, one scene series in 20 made 30 % slower from a random run on), and the size of the site.

The history is a SQLite file written once (and reused when --history names an existing one): the runs, scenes
and launches tables filled through the store's schema and its write transactions in bulk, since a million
History.record calls (one transaction per scene) would take longer than the publish being measured. The launch
summaries are those of tests/regression/synthetic_history.py.

Prints the writing time, the publish time (reading, change points, pages) at `--last` runs per series, and the
site's size: its files, total bytes, the largest page and the largest data file.

    python bench/bench_publish.py [--devices 20] [--scenes 100] [--runs 500] [--last 200] [--jobs N] [--history FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "regression"))

from synthetic_history import START, launch  # noqa: E402

from pytest_zbench.publish.build import publish  # noqa: E402
from pytest_zbench.regression import store  # noqa: E402
from pytest_zbench.regression.history import History, environment_fingerprint, hash_params  # noqa: E402


def write_bulk(history: History, devices: int, scenes: int, runs: int, launches: int, seed: int = 0) -> int:
    """The synthetic history in one write transaction per run index (all devices); the number of stepped series."""
    rng = np.random.default_rng(seed)
    levels = rng.uniform(1.0, 12.0, size=(devices, scenes))
    stepped = rng.random((devices, scenes)) < 0.05
    step_at = rng.integers(runs // 4, runs, size=(devices, scenes))
    params = [json.dumps({"n": s}, sort_keys=True, separators=(",", ":")) for s in range(scenes)]
    hashes = [hash_params({"n": s}) for s in range(scenes)]
    scene_row = 0
    for r in range(runs):
        started = (START + timedelta(hours=r)).isoformat().replace("+00:00", "Z")
        run_rows, scene_rows, launch_rows = [], [], []
        for d in range(devices):
            environment = {"device": {"model": f"model-{d}"}}
            run_id = f"session{r:04d}-dev{d:02d}"
            run_rows.append({"run_id": run_id, "started_utc": started, "started_ts": (START + timedelta(hours=r))
                             .timestamp(), "kind": "run", "build_hash": f"build-{r:04d}", "dirty": False,
                             "device": f"dev{d:02d}", "backend": "software",
                             "fingerprint": environment_fingerprint(environment),
                             "environment": json.dumps(environment), "host": "lab"})
            for s in range(scenes):
                scene_row += 1
                level = levels[d, s] * (1.3 if stepped[d, s] and r >= step_at[d, s] else 1.0)
                scene_rows.append({"id": scene_row, "run_id": run_id, "scene_id": f"scene.{s:03d}",
                                   "params_hash": hashes[s], "params": params[s], "mode": "uncapped",
                                   "gpu_source": None, "summary": None})
                launch_rows += [{"scene_row": scene_row, "idx": i, "summary": json.dumps(launch(rng, level, 0.02)),
                                 "samples": None} for i in range(launches)]

        def body(conn, run_rows=run_rows, scene_rows=scene_rows, launch_rows=launch_rows) -> None:
            conn.execute(store.runs.insert(), run_rows)
            conn.execute(store.scenes.insert(), scene_rows)
            conn.execute(store.launches.insert(), launch_rows)

        history.store.write(body, f"writing run {r}")
        if (r + 1) % 50 == 0:
            print(f"  {r + 1}/{runs} runs written", flush=True)
    return int(stepped.sum())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=20)
    parser.add_argument("--scenes", type=int, default=100)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--launches", type=int, default=3)
    parser.add_argument("--last", type=int, default=200, help="runs per series on the site (default: 200, "
                                                               "zbench publish's default)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="worker processes for the change points (default: the CPU count)")
    parser.add_argument("--history", type=Path, help="the history file: reused when it exists, else written there "
                                                     "(default: a temporary file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        path = args.history or Path(scratch) / "history.sqlite"
        with History(path) as history:
            if not (args.history and args.history.is_file() and history.scene_keys(device="dev00")):
                started = time.perf_counter()
                stepped = write_bulk(history, args.devices, args.scenes, args.runs, args.launches)
                print(f"history: {args.devices} devices x {args.scenes} scenes x {args.runs} runs x {args.launches} "
                      f"launches ({stepped} series stepped) written in {time.perf_counter() - started:.1f} s, "
                      f"{path.stat().st_size / 1e6:.0f} MB")
            site = Path(scratch) / "site"
            started = time.perf_counter()
            published = publish(history, site, last=args.last, jobs=args.jobs)
            elapsed = time.perf_counter() - started
        pages = [p for p in site.rglob("*.html")]
        data = [p for p in site.rglob("*.data.js")]
        largest_page = max(pages, key=lambda p: p.stat().st_size)
        largest_data = max(data, key=lambda p: p.stat().st_size)
        print(f"publish: {published.series} series, the newest {args.last} runs each, {published.open_regressions} "
              f"open regression(s), {args.jobs} worker(s), in {elapsed:.1f} s ({elapsed / max(published.series, 1) * 1000:.1f} ms a series)")
        print(f"site: {published.files} files, {published.bytes / 1e6:.1f} MB (plotly.min.js "
              f"{(site / 'assets' / 'plotly.min.js').stat().st_size / 1e6:.1f} MB once); largest page "
              f"{largest_page.stat().st_size / 1e3:.1f} kB ({largest_page.relative_to(site)}), largest data file "
              f"{largest_data.stat().st_size / 1e3:.1f} kB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
