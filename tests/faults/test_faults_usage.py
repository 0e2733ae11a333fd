"""Bad input is one clear error naming the file, key, scene or device and what to do, at configure or
collection time where it can be known then; never a traceback from inside the plugin."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess

import pytest
import yaml
from fault_support import clean, output
from parts import require

from pytest_zbench.protocol import arch_family

USAGE_ERROR = pytest.ExitCode.USAGE_ERROR
# Software goldens are kept per CPU architecture; the local device is this machine.
SOFTWARE_SET = arch_family(platform.machine())


def test_a_results_folder_that_is_a_file_is_one_usage_error(local_session):
    session = local_session
    session.results.write_text("not a folder")
    result = session.run()
    assert result.ret == USAGE_ERROR
    assert f"--zbench-results (ini zbench_results): {session.results} is a file" in clean(result)


def test_a_read_only_results_folder_is_one_usage_error(local_session):
    session = local_session
    session.results.mkdir()
    immutable = False
    if os.geteuid() == 0:  # root writes into any mode; an immutable folder stops it too
        immutable = shutil.which("chattr") is not None and subprocess.run(
            ["chattr", "+i", str(session.results)], capture_output=True).returncode == 0
    else:
        session.results.chmod(0o555)
    try:
        probe = session.results / "probe"
        try:
            probe.write_text("x")
            probe.unlink()
            writable = True
        except OSError:
            writable = False
        require(not writable, "a folder this user cannot write into (mode 555, and for root chattr +i: this file "
                              "system let the write through)")
        result = session.run()
        assert result.ret == USAGE_ERROR
        assert f"cannot write into {session.results}" in clean(result)
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(session.results)], check=True)
        session.results.chmod(0o755)


def test_a_missing_scenes_folder_is_a_usage_error_not_no_tests_ran(local_session):
    result = local_session.run("--zbench-scenes=scenez")
    assert result.ret == USAGE_ERROR
    assert "--zbench-scenes (ini zbench_scenes):" in clean(result) and "scenez is not a folder" in output(result)


@pytest.mark.parametrize("entry, key, phrase", [
    ({"connect_timeout_s": "abc"}, "connect_timeout_s", "positive number of seconds, got 'abc'"),
    ({"timeout_s": -5}, "timeout_s", "positive number of seconds"),
    ({"env": {"BAD-NAME": "1"}}, "env", "not an environment variable name"),
])
def test_an_inventory_mistake_names_file_device_and_key_at_start(local_session, entry, key, phrase):
    session = local_session
    if key == "connect_timeout_s":
        session.device(transport="ssh", host="127.0.0.1", user="nobody", **entry)
    else:
        session.device(**entry)
        if key == "env":
            devices = yaml.safe_load((session.root / "devices.yaml").read_text())
            devices["devices"][session.name]["env"] = entry["env"]
            (session.root / "devices.yaml").write_text(yaml.safe_dump(devices))
    result = session.run()
    assert result.ret == USAGE_ERROR
    text = clean(result)
    assert f"device '{session.name}', key '{key}'" in text and phrase in text


def test_a_device_name_given_twice_is_refused_with_its_lines(local_session):
    session = local_session
    text = (session.root / "devices.yaml").read_text()
    (session.root / "devices.yaml").write_text(text + text.replace("devices:\n", ""))
    result = session.run()
    assert result.ret == USAGE_ERROR
    assert f"'{session.name}' is given twice in one mapping (first at line 2)" in clean(result)


@pytest.mark.parametrize("document, phrase", [
    ({"scenes": {"faults.one": {}}}, "key 'scenes' is not a list"),
    ({"scenes": [{"id": "faults.one", "device": "hostile", "per_run": [{"cpu_ms": {"p50": "fast"}}]}]},
     "scenes[0].per_run[0].cpu_ms.p50 is not a number"),
])
def test_a_baseline_run_json_of_the_wrong_shape_is_a_usage_error(local_session, document, phrase):
    import json

    session = local_session
    (session.root / "old.json").write_text(json.dumps(document))
    result = session.run(f"--zbench-baseline={session.root / 'old.json'}")
    assert result.ret == USAGE_ERROR
    assert phrase in clean(result) and "--zbench-baseline: the baseline" in output(result)


def test_a_history_that_is_not_sqlite_fails_the_gate_with_a_message_not_a_traceback(local_session):
    session = local_session
    history = session.root / "history.sqlite"
    history.write_text("this is a CSV export, not a database\n" * 50)
    result = session.run("-m", "zbench_perf", f"--zbench-history={history}", "--zbench-baseline=history")
    result.assert_outcomes(failed=1)
    text = clean(result)
    assert f"{history} is not a history database" in text and "move it aside" in text
    section = session.scene()["history"]
    assert section["recorded"] is False and "not a history database" in section["reason"]
    assert history.read_text().startswith("this is a CSV export")  # never overwritten


def test_the_probe_deadline_follows_the_launch_deadline(local_session):
    session = local_session
    session.device("probe_hang")
    result = session.run("-m", "zbench_perf", "--zbench-timeout=2")
    result.assert_outcomes(errors=1)  # the device fixture fails: the device is quarantined
    assert "did not answer within its 2 s deadline" in clean(result)


THOUSAND = list(range(1000))
SWEEP = ("family: huge\nscenes:\n  - id: huge.{a}.{b}\n    sweep: {a: " + str(THOUSAND) + ", b: " + str(THOUSAND)
         + '}\n    ops: [{op: rect, x: 0, y: 0, w: 1, h: 1, color: "#000000"}]\n')
BAD_FILES = {
    "dup.yaml": ("family: faults\nscenes:\n  - id: faults.one\n    ops: [{op: rect, x: 0, y: 0, w: 1, h: 1, "
                 "color: '#000000'}]\n",
                 "id 'faults.one' is already used in"),
    "huge.yaml": (SWEEP, "the sweep makes 1000000 cases, more than the 10000"),
    "nested.yaml": ("family: nested\nscenes:\n  - id: nested.a\n    ops:\n      - unroll: 64\n        ops:\n"
                    "          - unroll: 64\n            ops:\n              - unroll: 64\n                ops:\n"
                    "                  - unroll: 64\n                    ops: [{op: rect, x: 0, y: 0, w: 1, h: 1, "
                    "color: '#000000'}]\n", "more than the 10000 a job may hold"),
    "adaptive.yaml": ("family: adaptive\nscenes:\n  - id: adaptive.a\n    ops:\n      - {op: repeat, count: "
                      "complexity, ops: [{op: rect, x: 0, y: 0, w: 1, h: 1, color: '#000000'}]}\n",
                      "an adaptive scene (a repeat whose count is \"complexity\") needs 'complexity:"),
    "tolerance.yaml": ("family: tolerance\nscenes:\n  - id: tolerance.a\n    tolerance: {software: {exakt: true}}\n"
                       "    ops: [{op: rect, x: 0, y: 0, w: 1, h: 1, color: '#000000'}]\n",
                       "key 'tolerance.software.exakt'"),
    "colour.yaml": ("family: colour\nscenes:\n  - id: colour.a\n    ops: [{op: rect, x: 0, y: 0, w: 1, h: 1, "
                    "color: #3366CC}]\n", "quote colours"),
    "zero.yaml": ("family: zero\nscenes:\n  - id: zero.a\n    ops: [{op: rrect, x: 0, y: 0, w: 0, h: 4, radius: 2, "
                  "color: '#000000'}]\n", "key 'ops[0].w': must be greater than 0"),
    "newline.yaml": ('family: newline\nscenes:\n  - id: "newline.a\\n"\n    ops: [{op: rect, x: 0, y: 0, w: 1, '
                     "h: 1, color: '#000000'}]\n", "must match"),
}


def test_scene_file_mistakes_are_collection_errors_naming_file_scene_and_key(local_session):
    session = local_session
    for name, (text, _) in BAD_FILES.items():
        (session.root / "scenes" / name).write_text(text)
    result = session.run("--zbench-update-goldens=missing", "--continue-on-collection-errors")
    text = clean(result)
    for name, (_, phrase) in BAD_FILES.items():
        assert f"scenes/{name}" in text and phrase in text, (name, phrase)
    assert str(session.root / "scenes" / "faults.yaml") in text  # the file that had the id first is named
    result.assert_outcomes(passed=2, errors=len(BAD_FILES))  # faults.yaml still ran
    written = sorted(p.relative_to(session.root).as_posix() for p in (session.root / "goldens").rglob("*.png"))
    assert written == [f"goldens/software/{SOFTWARE_SET}/faults.one/frame-0.png"]  # nothing under a bad tolerance


@pytest.mark.acceptance
def test_unusable_goldens_fail_clearly_and_update_failed_replaces_them(local_session, tmp_path):
    session = local_session
    scene = session.root / "scenes" / "faults.yaml"
    scene.write_text(scene.read_text().replace("capture: [0]", "capture: [0, 1]"))
    session.run("-m", "zbench_golden", "--zbench-update-goldens=missing", "--zbench-runs=1").assert_outcomes(passed=1)
    folder = session.root / "goldens" / "software" / str(SOFTWARE_SET) / "faults.one"
    corrupt, linked = folder / "frame-0.png", folder / "frame-1.png"
    outside = tmp_path / "elsewhere.png"
    shutil.move(linked, outside)
    linked.symlink_to(outside)  # a golden linked out of the store
    good = corrupt.read_bytes()
    corrupt.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)  # a golden that does not decode
    failed = session.run("-m", "zbench_golden", "--zbench-runs=1")
    failed.assert_outcomes(failed=1)
    text = clean(failed)
    for golden in (corrupt, linked):
        assert f"golden {golden} cannot be compared with" in text
    assert "outside the golden store" in text and "--zbench-update-goldens=failed" in text
    assert [f["status"] for f in session.scene()["correctness"]["frames"]] == ["error", "error"]
    repaired = session.run("-m", "zbench_golden", "--zbench-runs=1", "--zbench-update-goldens=failed")
    clean(repaired)
    repaired.assert_outcomes(passed=1)
    assert corrupt.read_bytes() == good and linked.is_file() and not linked.is_symlink()
    assert outside.read_bytes() == linked.read_bytes()  # the same pixels; the link's target was not written
