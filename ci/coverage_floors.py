"""Line coverage of each package of pytest_zbench, from a coverage.py JSON report, against its floor.

ci/coverage.sh runs ci/test.sh's test suite under coverage (the processes it starts included, see
[tool.coverage.run] in pyproject.toml), combines the data files and calls this with `coverage json`'s output.
It prints one line per package (its own modules, not its subpackages') and exits 1 when any package is below
its floor, or when a package has no floor (a new package gets one when it is added). A floor is a point a drop past which means
tests were lost or code went untested: 3-4 points under what ci/test.sh's suite (the acceptance runs not
included) measured, 90 % in all with its subprocesses. The lab and the transports read lowest because their
end-to-end runs (the device-lab leg, remote devices) are acceptance runs; the lab's best-covered module (the
Markdown summary) now counts in host/report, and the ssh launcher's device side (transports/_supervisor.py
`serve`) runs as a process sshd starts, which coverage does not follow (measured: host/measure 83.6 %, lab
65.6 %, transports 68.9 %). The engine package reads lowest of all (58.9 %): `zbench bisect` builds,
deploys and A/Bs a scratch engine's commits, whole sessions that only the acceptance runs afford.

    python ci/coverage_floors.py coverage.json
"""

from __future__ import annotations

import json
import sys
from pathlib import PurePosixPath

# Percent of statements covered, per package; "pytest_zbench" is the top-level modules.
FLOORS = {
    "pytest_zbench": 90,
    "pytest_zbench/conformance": 85,
    "pytest_zbench/engine": 55,
    "pytest_zbench/golden": 92,
    "pytest_zbench/host": 85,
    "pytest_zbench/host/devices": 85,
    "pytest_zbench/host/measure": 80,
    "pytest_zbench/host/report": 85,
    "pytest_zbench/host/verdicts": 85,
    "pytest_zbench/lab": 62,
    "pytest_zbench/plugin": 84,
    "pytest_zbench/protocol": 94,
    "pytest_zbench/publish": 92,
    "pytest_zbench/regression": 93,
    "pytest_zbench/runner": 90,
    "pytest_zbench/runner/backends": 87,
    "pytest_zbench/runner/gl": 86,
    "pytest_zbench/schema": 93,
    "pytest_zbench/side_by_side": 77,
    "pytest_zbench/transports": 65,
}


def package_of(path: str) -> str:
    """pytest_zbench/host/host_session.py -> pytest_zbench/host, wherever the checkout was."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    start = len(parts) - 1 - parts[::-1].index("pytest_zbench")
    return "/".join(parts[start:-1])


def totals(report: dict) -> dict[str, tuple[int, int]]:
    """Package -> (covered statements, statements)."""
    found: dict[str, tuple[int, int]] = {}
    for path, entry in report["files"].items():
        summary = entry["summary"]
        covered, statements = found.get(package_of(path), (0, 0))
        found[package_of(path)] = (covered + summary["covered_lines"], statements + summary["num_statements"])
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as handle:
        found = totals(json.load(handle))
    failed = []
    print(f"{'package':<32}{'stmts':>7}{'cover':>8}{'floor':>7}")
    for package in sorted(set(found) | set(FLOORS)):
        covered, statements = found.get(package, (0, 0))
        percent = 100.0 * covered / statements if statements else 0.0
        floor = FLOORS.get(package)
        verdict = ("  no floor: add one to ci/coverage_floors.py" if floor is None else
                   "  BELOW THE FLOOR" if percent < floor else "")
        if verdict:
            failed.append(package)
        print(f"{package:<32}{statements:>7}{percent:>7.1f}%{'' if floor is None else floor:>7}{verdict}")
    if failed:
        print(f"coverage below its floor (or without one): {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
