"""One definition of a device's environment (host/devices/environment.py): run.json's fingerprint, the history's runs
and the verdict's fingerprint changes agree, and a new runner build on the same device changes none of them."""

from __future__ import annotations

import copy

from pytest_zbench.host.devices.environment import environment, fingerprint
from pytest_zbench.host.run_record import validate_run
from pytest_zbench.regression.history import History, environment_fingerprint

SECTIONS = {
    "device": {"id": "pi3b", "model": "Pi 3B+", "os": "Raspbian 12", "kernel": "6.1.21-v7+", "fingerprint": "x"},
    "gpu": {"backend": "gles2", "gl_renderer": "VC4 V3D 2.1", "gl_version": "OpenGL ES 2.0 Mesa 22.3",
            "runner": {"name": "zinc-bench", "version": "1.0"}, "timer_source": None,
            "timer_check": {"source": "finish_bracket", "valid": True, "light_ms": 0.5, "heavy_ms": 3.1}},
    "display": {"width": 800, "height": 480, "refresh_hz": 60.0, "vsync": None, "present_source": None},
    "conditions": {"temp_c": 48.2},
}


def test_the_runner_the_timer_check_and_late_keys_are_not_the_environment():
    before = fingerprint(SECTIONS)
    later = copy.deepcopy(SECTIONS)
    later["gpu"]["runner"]["version"] = "1.1"  # a new build of the runner under test
    later["gpu"]["timer_check"].update(light_ms=0.52, heavy_ms=3.3)  # readings differ session to session
    later["gpu"].update(timer_source="finish_bracket", timer_source_used="finish_bracket")
    later["display"].update(vsync=True, present_source="drm")
    later["conditions"]["temp_c"] = 61.0
    later["device"]["fingerprint"] = before
    assert fingerprint(later) == before
    assert environment_fingerprint(environment(later)) == before
    for section, key, value in (("device", "kernel", "6.6.31+rpt"), ("gpu", "gl_version", "OpenGL ES 2.0 Mesa 23.2"),
                                ("display", "refresh_hz", 50.0)):
        changed = copy.deepcopy(SECTIONS)
        changed[section][key] = value
        assert fingerprint(changed) != before, (section, key)


def test_a_new_runner_version_is_the_same_environment_in_run_json_the_history_and_the_verdict(project, tmp_path):
    """The device's runner reports a new version (the build under test), everything else equal. The device
    also has a GPU time source, so the timer check runs in both sessions."""
    history = tmp_path / "history.sqlite"
    # The threshold keeps a 6-frame scene on a shared machine from failing the test: this is about the
    # fingerprint, not the verdict.
    args = ("--zbench-device=rectonly", "-k", "mini.fill.x1", f"--zbench-history={history}",
            "--zbench-threshold=1000")
    documents = []
    for version in ("1.0", "1.1"):
        project.write_inventory({"RECT_RUNNER_GPU": "garbage", "RECT_RUNNER_VERSION": version})
        project.run(*args).assert_outcomes(passed=1)
        document = project.run_json()
        assert validate_run(document) == []
        documents.append(document)
    first, second = (d["devices"]["rectonly"] for d in documents)
    assert (first["gpu"]["runner"]["version"], second["gpu"]["runner"]["version"]) == ("1.0", "1.1")
    assert "timer_check" in first["gpu"] and "timer_check" in second["gpu"]
    # run.json
    assert first["fingerprint"] == second["fingerprint"] == first["device"]["fingerprint"]
    assert first["environment"] == second["environment"]
    # the history
    with History(history) as db:
        (key,) = db.scene_keys(device="rectonly")
        runs = db.runs_of(key)
        assert len(runs) == 2
        assert {run.fingerprint for run in runs} == {first["fingerprint"]}
    # the verdict: judged against the first session, no fingerprint change named
    (scene,) = documents[1]["scenes"]
    assert scene["regression"]["source"] == "history" and scene["regression"]["verdict"] != "no_baseline"
    assert scene["regression"]["fingerprint_changes"] == []
