"""How often the isolation check (pytest_zbench/host/verdicts/isolation.py) gets a sweep wrong: on synthetic sweeps, and
on real sessions of this machine's devices.

Synthetic: each sweep has 4 values of its dimension (1, 2, 4, 8) and R launches per value; a launch's median
cost is base * (1 + effect * k / 8) times log-normal launch-to-launch noise (sigma 10 %, the spread of launch
medians on a loaded 2-core machine), with one launch in 20 slowed by 30-100 % (a background job). The
dimension's true elasticity at the largest case is effect / (1 + effect): the share of that case's cost the
swept work accounts for. Prints, per launch count and effect, the share of sweeps judged `scales`: for an
elasticity under the threshold that is the false reassurance rate (a sweep that isolates too little passing),
above it the power.

Real (`--sessions N`): runs N pytest sessions of the scenes `-k` selects on `--device`, each with its own
results folder and history, and prints per sweep how often each verdict came out, with the range of rho and
of the elasticity over the sessions. Arguments after `--` go to every session.

    python bench/bench_isolation_rates.py [--trials N]
    python bench/bench_isolation_rates.py --sessions 6 --device local-gles2 -k "fill.opaque.x or fill.alpha.x" \\
        -- --zbench-mode=uncapped --zbench-frames=20 --zbench-runs=4
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from pytest_zbench.host.verdicts.isolation import MIN_ELASTICITY, check_isolation

VALUES = (1, 2, 4, 8)
REPO = Path(__file__).resolve().parents[1]


def sweep(rng: random.Random, launches: int, effect: float, base_ms: float) -> list[dict]:
    entries = []
    for k in VALUES:
        runs = []
        for _ in range(launches):
            cost = base_ms * (1 + effect * k / VALUES[-1]) * rng.lognormvariate(0.0, 0.10)
            if rng.random() < 0.05:
                cost *= 1.3 + 0.7 * rng.random()
            runs.append({"cpu_ms": {"p50": cost}, "partial": False, "first_frame_ms": 20.0})
        entries.append({"id": f"s.x{k}", "sweep": "s.x{n}", "device": "d", "params": {"n": k}, "per_run": runs})
    return entries


def synthetic(trials: int) -> None:
    rng = random.Random(16)
    effects = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0)
    print(f"synthetic sweeps over {VALUES}, {trials} each; threshold elasticity {MIN_ELASTICITY}")
    print(f"{'launches':>8} {'top/none':>8} {'elasticity':>10} {'scales':>7}")
    for launches in (2, 5):
        for effect in effects:
            scales = sum(check_isolation(sweep(rng, launches, effect, 2.0))[0].verdict == "scales"
                         for _ in range(trials))
            print(f"{launches:>8} {1 + effect:>7.2f}x {effect / (1 + effect):>10.2f} {scales / trials:>7.1%}")


def real(sessions: int, device: str, select: str, extra: list[str], project: Path) -> None:
    found: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="zbench-isolation-") as tmp:
        for n in range(sessions):
            results = Path(tmp) / f"s{n}"
            done = subprocess.run(
                [sys.executable, "-m", "pytest", f"--zbench-device={device}", "-k", select, "-p", "no:cacheprovider",
                 "-q", f"--zbench-results={results}", f"--zbench-history={results / 'history.sqlite'}", *extra],
                cwd=project, capture_output=True, text=True, check=False)
            run_json = results / "run.json"
            if not run_json.is_file():
                sys.exit(f"session {n + 1} wrote no run.json (exit {done.returncode}):\n{done.stdout[-2000:]}")
            for entry in json.loads(run_json.read_text(encoding="utf-8")).get("isolation") or []:
                found.setdefault(entry["family"], []).append(entry)
            print(f"session {n + 1}/{sessions}: exit {done.returncode}", file=sys.stderr)
    print(f"{sessions} sessions on {device}, -k {select!r} {' '.join(extra)}; threshold elasticity {MIN_ELASTICITY}")
    print(f"{'sweep':<34} {'metric':<7} {'verdicts':<40} {'rho':<13} {'elasticity':<13} launches")
    for family, entries in sorted(found.items()):
        verdicts = Counter(e["verdict"] + (f" ({e['likely_cause']})" if e["likely_cause"] else "") for e in entries)
        print(f"{family:<34} {entries[0]['metric']:<7} "
              f"{', '.join(f'{v} {c}' for v, c in verdicts.most_common()):<40} "
              f"{_range([e['rho'] for e in entries]):<13} {_range([e['elasticity'] for e in entries]):<13} "
              f"{entries[0]['launches']}")


def _range(values: list[float | None]) -> str:
    known = [v for v in values if v is not None]
    return f"{min(known):.2f}..{max(known):.2f}" if known else "-"


def main() -> None:
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--sessions", type=int, default=0, help="real sessions instead of synthetic sweeps")
    parser.add_argument("--device", default="local")
    parser.add_argument("-k", dest="select", default="fill.opaque.x or fill.alpha.x")
    parser.add_argument("--project", type=Path, default=REPO, help="the folder the sessions run in")
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if args.sessions:
        real(args.sessions, args.device, args.select, extra, args.project)
    else:
        synthetic(args.trials)


if __name__ == "__main__":
    main()
