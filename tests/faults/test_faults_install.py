"""A newcomer's project: no devices.yaml, only a scene file; `local`, the embedded default, needs nothing."""

from __future__ import annotations

import pytest
import yaml


def output(result: pytest.RunResult) -> str:
    return result.stdout.str() + "\n" + result.stderr.str()


def test_a_project_without_an_inventory_runs_on_the_embedded_local(project):
    (project.root / "devices.yaml").unlink()
    result = project.run("--zbench-device=local", "-k", "mini.fill.x1")
    result.assert_outcomes(passed=1)
    assert "inventory not found" not in output(result)
    (entry,) = project.run_json()["scenes"]
    assert entry["device"] == "local" and entry["outcome"] == "passed"


def test_a_project_inventory_adds_to_the_embedded_local(project):
    devices = yaml.safe_load((project.root / "devices.yaml").read_text())
    del devices["devices"]["local"]  # the project names only its own device
    (project.root / "devices.yaml").write_text(yaml.safe_dump(devices))
    result = project.run("--zbench-device=local,rectonly", "-k", "mini.fill.x1")
    result.assert_outcomes(passed=2)


def test_a_named_inventory_that_is_missing_is_still_a_usage_error(project):
    result = project.run("--zbench-devices=lab.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "lab.yaml: inventory not found; point --zbench-devices at a devices.yaml" in output(result)
