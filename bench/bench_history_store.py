"""What a history write and a baseline read cost in a SQLite file and in a PostgreSQL database, side by side.

Starts the same PostgreSQL server as the tests (tests/regression/pg_server.py: initdb into a temporary folder,
loopback TCP), then, interleaved (sqlite, postgresql, sqlite, ...) so that machine noise hits both alike:

* record: one scene of 5 launches with their raw samples (600 frames of cpu_ms, gpu_ms and interval_ms),
  one transaction, what a perf test does after measuring;
* window: the baseline of the next perf test (`comparable`, the 5 newest comparable runs with their launches);
* series: what `zbench history` reads for one scene (`runs_of` over every run recorded so far).

Prints medians per operation and the ratio postgresql / sqlite. The PostgreSQL server is on this machine,
so the figures are the store's and the driver's cost, without a network's round trips (add the round-trip
time, times about 8 statements per record and 2 per read, for a lab's server across a LAN).

    python bench/bench_history_store.py [-n 60]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "regression"))

from pg_server import PostgresServer  # noqa: E402

from pytest_zbench.regression.history import History, RunInfo, SceneRecord  # noqa: E402


def scene(rng: np.random.Generator) -> SceneRecord:
    launches = [{"cpu_ms": {"p50": 5.0, "p95": 6.5}, "gpu_ms": {"p50": 3.0, "p95": 3.3}, "gpu_source": "timer_query",
                 "jank_share": 0.0} for _ in range(5)]
    samples = [{"cpu_ms": rng.lognormal(1.6, 0.2, 600), "gpu_ms": rng.lognormal(1.1, 0.1, 600),
                "interval_ms": np.full(600, 16.7)} for _ in range(5)]
    return SceneRecord("fill.alpha.x4", {"layers": 4}, "paced", "timer_query", launches, samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=60, help="runs recorded per database (default 60)")
    args = parser.parse_args()
    server = PostgresServer().start()
    try:
        with tempfile.TemporaryDirectory() as folder:
            histories = {"sqlite": History(Path(folder) / "history.sqlite"),
                         "postgresql": History(server.url(server.create_database()))}
            times: dict[str, dict[str, list[float]]] = {name: {"record": [], "window": [], "series": []}
                                                        for name in histories}
            rng = np.random.default_rng(1)
            for i in range(args.n):
                record = scene(rng)
                for name, history in histories.items():
                    info = RunInfo("pi3b", "gles2", f"build{i}", False, {"gpu": {"gl_renderer": "VC4"}},
                                   started_utc=f"2026-10-01T10:{i // 60:02d}:{i % 60:02d}Z")
                    key = record.key(info)
                    start = time.perf_counter()
                    history.record(info, [record])
                    times[name]["record"].append(time.perf_counter() - start)
                    start = time.perf_counter()
                    assert len(history.comparable(key, window=5).launches) == 5 * min(i + 1, 5)
                    times[name]["window"].append(time.perf_counter() - start)
                    start = time.perf_counter()
                    assert len(history.runs_of(key)) == i + 1
                    times[name]["series"].append(time.perf_counter() - start)
            for history in histories.values():
                history.close()
    finally:
        server.stop()
    print(f"{args.n} runs per database, interleaved; medians in ms (n={args.n})")
    print(f"{'operation':<10} {'sqlite':>10} {'postgresql':>12} {'ratio':>8}")
    for operation in ("record", "window", "series"):
        lite = statistics.median(times["sqlite"][operation]) * 1000
        pg = statistics.median(times["postgresql"][operation]) * 1000
        print(f"{operation:<10} {lite:>10.2f} {pg:>12.2f} {pg / lite:>7.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
