"""`zbench check-runner` through the ssh transport (the loopback sshd): the same checks as on `local`, the
runner started, stopped with SIGTERM and its files pulled over SSH."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_zbench.conformance import check_runner

REPO = Path(__file__).resolve().parents[2]
RECT_RUNNER = REPO / "tests" / "thirdparty" / "rect_runner.py"
BROKEN = REPO / "tests" / "conformance" / "broken"
DISPLAY = {"width": 800, "height": 480, "refresh_hz": 60}


def ssh_spec(sshd, write_inventory, tmp_path: Path, script: Path):
    entry = sshd.device_entry(workdir=str(tmp_path / "ssh-device"), display=DISPLAY,
                              runner=[sys.executable, str(script)])
    return write_inventory({"pi": entry})["pi"]


@pytest.mark.acceptance
def test_the_rect_only_runner_passes_over_ssh(sshd, write_inventory, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = ssh_spec(sshd, write_inventory, tmp_path, RECT_RUNNER)
    report = check_runner(spec, scenes_dir=REPO / "scenes", goldens_dir=REPO / "goldens")
    assert report.passed, "\n".join(report.lines())
    got = {r.name: r.status for r in report.results}
    assert got["signal.sigterm"] == got["outdir.confined"] == got["capture.reference"] == "pass"
    assert report.transport == "ssh"
    # The kit's folder on the device is gone; only the host's supervisor, pushed on each connection, stays.
    assert [p.name for p in (tmp_path / "ssh-device").iterdir()] == [".zbench-host"]


@pytest.mark.acceptance
def test_a_runner_ignoring_sigterm_is_caught_over_ssh(sshd, write_inventory, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = ssh_spec(sshd, write_inventory, tmp_path, BROKEN / "sigterm_ignored.py")
    report = check_runner(spec, scenes_dir=None, goldens_dir=None)
    assert [r.name for r in report.failed] == ["signal.sigterm"], "\n".join(report.lines())
    assert "killed" in report.failed[0].detail
