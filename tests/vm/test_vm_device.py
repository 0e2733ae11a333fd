"""vm-arm64 end to end (tests/vm/conftest.py, docs/vm-device.md "Faults"): the kit's aarch64 runner deployed onto
a machine of its own, and its power cut in the middle of a launch: nothing measured is lost, the other device
goes on, and the next session, with the power back and the same disk, finds the device and its build."""

from __future__ import annotations

import pytest

from pytest_zbench.host.run_record import validate_run
from vm.conftest import VmProject

pytestmark = [pytest.mark.acceptance, pytest.mark.exclusive]

SCENES = """\
family: vm
description: two small scenes, each captured
scenes:
  - id: vm.first
    capture: [0]
    ops:
      - {op: rect, x: 1, y: 1, w: "100% - 2", h: "100% - 2", color: "#3366CC"}
  - id: vm.second
    capture: [0]
    ops:
      - {op: rect, x: 2, y: 2, w: "50%", h: "50%", color: "#CC6633"}
"""
# The scenes' frames for the fault sessions: enough that a launch takes seconds under TCG, so that a power cut
# lands inside one.
LONG = ("--zbench-runs=1", "--zbench-frames=300", "--zbench-warmup=1")


def deployed_ok(project: VmProject) -> str:
    deployed = project.deploy()
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    return deployed.stdout


def test_power_cut_during_a_launch(vm_project: VmProject):
    project, vm = vm_project, vm_project.vm
    deployed_ok(project)
    project.scenes("vm.yaml", SCENES)
    session = project.popen("--zbench-device=local,vm", "-m", "zbench_perf", *LONG, "-q", "-rfEs")
    try:
        vm.wait_for_launch("vm.second")
        vm.power_cut()
        output = session.communicate(timeout=900)[0]
    finally:
        if session.poll() is None:
            session.kill()
            session.wait()
    assert session.returncode == 1, output[-3000:]
    # The scene whose launch the cut hit fails with one line that names the lost device.
    failed = [line for line in output.splitlines() if line.startswith("FAILED")]
    assert [line.split(" - ")[0] for line in failed] == ["FAILED scenes/vm.yaml::perf[vm.second-vm]"], output[-3000:]
    # The other device went on; the frames of the launch that finished are kept; the artifacts are written.
    document = project.run_json()
    assert validate_run(document) == [], validate_run(document)[:5]
    assert (project.results / "report.html").is_file()
    scenes = {(s["id"], s["device"]): s for s in document["scenes"]}
    second = scenes[("vm.second", "vm")]
    lost = [i["detail"] for i in second["issues"] if i["kind"] == "device_error"]
    assert second["outcome"] == "failed" and lost and lost[-1].startswith("device vm: "), second["issues"]
    assert "\n" not in lost[-1] and "vm" in document["quarantined"]
    for scene in ("vm.first", "vm.second"):
        assert scenes[(scene, "local")]["launches"], scene
    first = scenes[("vm.first", "vm")]
    assert first["complete_runs"] == 1 and first["launches"][0]["status"] == "complete"
    samples = (project.results / first["samples_file"]).read_text().splitlines()
    assert len(samples) > 300, f"{first['samples_file']}: {len(samples)} lines"
    # The guest keeps its own time: its clock and the offset from the host's are in every launch's conditions.
    readings = first["launches"][0]["conditions"]["before"]["readings"]
    assert abs(readings["clock_offset_s"]) < 60 and readings["clock_offset_bound_s"] > 0
    assert document["devices"]["vm"]["device"]["cpu"]["family"] == "aarch64"

    # Power restored with the same disk: the next session finds the device and its deployed build.
    vm.start(keep_disk=True)
    again = project.session("--zbench-device=vm", "-m", "zbench_perf", "--zbench-runs=1", "--zbench-frames=3",
                            "--zbench-warmup=1", "-q", "-rfEs", "-k", "vm.first")
    assert again.returncode == 0, again.stdout[-3000:]


