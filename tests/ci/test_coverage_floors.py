"""ci/coverage_floors.py, the per-package coverage floors ci/test.sh fails below, on reports of coverage.py's
JSON shape: a package below its floor or without one fails the run, one at its floor passes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "ci" / "coverage_floors.py"
sys.path.insert(0, str(SCRIPT.parent))
from coverage_floors import FLOORS  # noqa: E402


def _report(tmp_path: Path, percent: dict[str, float]) -> Path:
    """One 1000-statement file per package, covered to the given percent (a checkout anywhere on disk)."""
    files = {f"/somewhere/checkout/{package}/module.py": {"summary": {
        "covered_lines": round(10 * percent.get(package, floor)), "num_statements": 1000}}
        for package, floor in {**FLOORS, **percent}.items()}
    path = tmp_path / "coverage.json"
    path.write_text(json.dumps({"files": files}))
    return path


def _run(report: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(report)], capture_output=True, text=True, check=False)


def test_every_package_at_its_floor_passes(tmp_path):
    run = _run(_report(tmp_path, {}))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "BELOW" not in run.stdout


def test_a_package_a_point_below_its_floor_fails_and_is_named(tmp_path):
    run = _run(_report(tmp_path, {"pytest_zbench/regression": FLOORS["pytest_zbench/regression"] - 1}))
    assert run.returncode == 1
    assert "pytest_zbench/regression" in run.stderr and "BELOW THE FLOOR" in run.stdout


def test_a_package_without_a_floor_fails(tmp_path):
    run = _run(_report(tmp_path, {"pytest_zbench/newpackage": 100.0}))
    assert run.returncode == 1
    assert "pytest_zbench/newpackage" in run.stderr and "no floor" in run.stdout


def test_every_package_of_the_tree_has_a_floor():
    """A package added without a floor fails here, in seconds, not at the end of the coverage run."""
    root = SCRIPT.parents[1] / "pytest_zbench"
    packages = {"/".join(("pytest_zbench", *init.parent.relative_to(root).parts))
                for init in root.rglob("*.py") if "kit" not in init.relative_to(root).parts[:1]}
    assert packages - set(FLOORS) == set(), "add a floor to ci/coverage_floors.py"
