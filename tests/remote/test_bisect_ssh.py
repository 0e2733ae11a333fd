"""`zbench bisect` on a device over the real sshd: the scratch engine's builds deployed over ssh, the slow
commit found by interleaved A/B on the device, the pixel commit from the device's captures, the broken build
skipped, and no build left on the device."""

from __future__ import annotations

import sys

import pytest
import yaml

from tests.engine.scratch_engine import make_engine_repo
from tests.engine.test_bisect import REPO, SCENES, SPEED_ARGS, STEPS, assert_slow_commit_found, bisect, nothing_left

pytestmark = pytest.mark.acceptance


@pytest.fixture
def ssh_engine(sshd, tmp_path, monkeypatch):
    """The scratch engine's commits, and the suite's project with a device over the real sshd whose runner is
    {deployed}."""
    shas = make_engine_repo(tmp_path / "engine", sys.executable, STEPS)
    project = tmp_path / "suite"
    (project / "scenes").mkdir(parents=True)
    (project / "scenes" / "engine.yaml").write_text(SCENES)
    (project / "pytest.ini").write_text("[pytest]\ntestpaths = scenes\n")
    entry = sshd.device_entry(workdir=str(tmp_path / "device"), runner=["{deployed}/zbench-runner"],
                              display={"width": 320, "height": 240, "refresh_hz": 60})
    (project / "devices.yaml").write_text(yaml.safe_dump({"devices": {"box": entry}}))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    return shas, project


def test_bisect_over_ssh_names_the_pixel_commit(ssh_engine, tmp_path, capsys):
    shas, project = ssh_engine
    status, out, findings = bisect(tmp_path, capsys, shas, project, "--pixels")
    assert set(findings) == {("pixels", "engine.flat")}, out
    pixels = findings[("pixels", "engine.flat")]
    assert (pixels["status"], pixels["first_bad"]["sha"], pixels["last_good"]["sha"]) == ("culprit", shas[6], shas[5])
    assert f"skipped {shas[4][:12]}" in out
    assert status == 0
    nothing_left(tmp_path)  # the ssh device's folder is on this machine: its builds folder is empty


@pytest.mark.exclusive
def test_bisect_over_ssh_names_the_slow_commit(ssh_engine, tmp_path, capsys):
    shas, project = ssh_engine
    status, out, findings = bisect(tmp_path, capsys, shas, project, "--speed", pytest_args=SPEED_ARGS)
    assert_slow_commit_found(status, out, findings, shas)
    nothing_left(tmp_path)
