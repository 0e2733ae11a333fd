"""A pull request leg of an engine repository (docs/engine-ci.md): its two builds are deployed before the leg,
the device's runner is the merge base's and $ZBENCH_AB_RUNNER the head's, so the leg plans an A/B without a
`ci.ab_runner` and without a checkout of the merge base."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import yaml

from pytest_zbench.errors import UsageError
from pytest_zbench.inventory import load_inventory
from pytest_zbench.lab.leg import LegEnvironment, _plan


def leg_env(tmp_path: Path, ab_runner: str) -> LegEnvironment:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"head": {"sha": "b" * 40}, "base": {"sha": "a" * 40}}}))
    environ = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event), "ZBENCH_AB_RUNNER": ab_runner,
               "GITHUB_WORKSPACE": str(tmp_path), "RUNNER_TEMP": str(tmp_path)}
    return LegEnvironment.from_environ(environ, tmp_path)


def test_a_deployed_head_is_b_and_the_device_runner_is_a(tmp_path):
    devices = tmp_path / "devices.yaml"
    devices.write_text(yaml.safe_dump({"devices": {"pi4": {
        "transport": "local", "workdir": "/srv/zbench", "runner": ["{deployed}/zbench-gles2"], "ci": {"labels": ["x"]}}}}))
    spec = load_inventory(devices).get("pi4")
    head = "/srv/zbench/builds/0123456789abcdef/zbench-gles2"
    plan = _plan(spec, devices, leg_env(tmp_path, shlex.join([head])), tmp_path / "results", tmp_path / "scratch", {})
    assert plan.mode == "ab"
    assert f"--zbench-ab={head}" in plan.argv and f"--zbench-devices={devices}" in plan.argv
    assert "/srv/zbench/builds/current/zbench-gles2" in plan.notes[0] and head in plan.notes[0]
    # Neither history is read nor written: a throwaway one in the scratch folder.
    assert any(arg.startswith("--zbench-history=") and "scratch" in arg for arg in plan.argv)
    with pytest.raises(UsageError, match="ZBENCH_AB_RUNNER"):
        _plan(spec, devices, leg_env(tmp_path, "'unclosed"), tmp_path / "results", tmp_path / "scratch", {})
