"""The emulated arm64 device end to end: the reference runner on an aarch64 userland under qemu-user
(ci/arm64-device.sh), against real goldens of both architectures. Needs `bash ci/arm64-device.sh` first
(ci/test.sh runs it); in CI a missing device is a failure."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
from parts import require

from pytest_zbench.host.run_record import validate_run
from pytest_zbench.regression.history import environment_fingerprint

pytestmark = pytest.mark.acceptance  # every test here is an end-to-end acceptance run

REPO = Path(__file__).resolve().parent.parent
WRAPPER = REPO / "ci" / "arm64-device.sh"
SELECT = ("-k", "mini.fill.x2 or round")
# One launch per scene: goldens need one capture, and emulation is 5-40x slower than the host.
ONE = "--zbench-runs=1"


@pytest.fixture
def arm_project(project):
    require(shutil.which("qemu-aarch64-static") is not None, "qemu-aarch64-static (apt-get install qemu-user-static)")
    require((REPO / ".zbench" / "arm64" / "device" / "READY").is_file(),
            "the emulated arm64 device (bash ci/arm64-device.sh)")
    display = "{width: 64, height: 48, refresh_hz: 60}"
    (project.root / "devices.yaml").write_text(f"""\
devices:
  x86:
    transport: local
    backend: software
    runner: [python, -m, pytest_zbench.runner]
    display: {display}
  arm:
    transport: local
    backend: software
    runner: [{json.dumps(str(WRAPPER))}, runner]
    timeout_s: 300
    display: {display}
""")
    return project


def frames_of(document: dict, device: str) -> dict[str, dict]:
    return {s["id"]: s["correctness"]["frames"][0] for s in document["scenes"] if s["device"] == device}


def test_goldens_per_architecture_facts_from_the_device_and_a_colour_change_fails_on_both(arm_project):
    project = arm_project
    both = "--zbench-device=x86,arm"
    written = project.run(both, ONE, *SELECT, "--zbench-update-goldens=missing", goldens=True)
    written.assert_outcomes(passed=8)
    for arch in ("x86_64", "aarch64"):
        for scene in ("mini.fill.x2", "round.one"):
            assert (project.root / f"goldens/software/{arch}/{scene}/frame-0.png").is_file()

    result = project.run(both, ONE, *SELECT, goldens=True)
    result.assert_outcomes(passed=8)
    document = project.run_json()
    assert validate_run(document) == []

    # Device facts come from the device: the arm runner says aarch64, the host stays x86_64 in `host`.
    arm, x86 = document["devices"]["arm"], document["devices"]["x86"]
    assert arm["device"]["cpu"]["family"] == "aarch64" and arm["device"]["facts_from"] == "runner probe"
    assert arm["device"]["emulated"] is True and "skia-python" in arm["device"]["libraries"]
    assert x86["device"]["cpu"]["family"] == document["host"]["cpu"]["family"] == "x86_64"
    assert arm["fingerprint"] != x86["fingerprint"]
    # ... and the architecture alone changes the fingerprint (not just the device's name).
    renamed = copy.deepcopy(arm["environment"])
    renamed["device"].update(id="x86", device_class=x86["device"]["device_class"])
    assert environment_fingerprint(renamed) != x86["fingerprint"]

    # Each compared with its own set; the arm capture also with the x86_64 reference set, cross_arch.
    arm_frames, x86_frames = frames_of(document, "arm"), frames_of(document, "x86")
    for scene in ("mini.fill.x2", "round.one"):
        assert arm_frames[scene]["golden_set"] == "software/aarch64" and arm_frames[scene]["status"] == "passed"
        assert x86_frames[scene]["golden_set"] == "software/x86_64" and x86_frames[scene]["cross_arch"] is None
        cross = arm_frames[scene]["cross_arch"]
        assert cross["status"] == "passed" and cross["reference_set"] == "software/x86_64"
        assert cross["metrics"]["max_delta"] <= 2  # measured: NEON and SSE blend rounding apart by one level

    # One colour of one scene changed by one level: the exact comparison fails on both architectures.
    scene_file = project.root / "scenes" / "round.yaml"
    scene_file.write_text(scene_file.read_text().replace("#CC3366", "#CC3367"))
    changed = project.run(both, ONE, "-k", "golden and round", goldens=True)
    changed.assert_outcomes(failed=2)
    out = changed.stdout.str()
    assert "golden test of scene round.one on device x86 failed" in out
    assert "golden test of scene round.one on device arm failed" in out
    assert "set software/aarch64" in out and "set software/x86_64" in out
    failed = frames_of(project.run_json(), "arm")["round.one"]
    assert failed["status"] == "failed" and failed["metrics"]["exact"] is False

    # An architecture without its own golden fails as missing, never passes against another architecture's
    # images however close they are; the cross_arch comparison is shown beside it.
    (project.root / "goldens/software/aarch64/mini.fill.x2/frame-0.png").unlink()
    missing = project.run("--zbench-device=arm", ONE, "-k", "mini.fill.x2", goldens=True)
    missing.assert_outcomes(passed=1, failed=1)
    out = missing.stdout.str()
    assert "no golden at" in out and "software/aarch64/mini.fill.x2/frame-0.png" in out
    assert "meanwhile, passed: frame 0 vs the reference set software/x86_64" in out
    assert "across CPU architectures: this device is aarch64" in out
    assert "create it: pytest --zbench-device=arm" in out
    frame = frames_of(project.run_json(), "arm")["mini.fill.x2"]
    assert frame["status"] == "missing" and frame["cross_arch"]["status"] == "passed"
    report = (project.results / "report.html").read_text()
    assert "cross-architecture vs reference set software/x86_64" in report
