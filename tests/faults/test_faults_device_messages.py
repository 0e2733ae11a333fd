"""What a device says reaches the user once and harmless: an unusable device's message printed once (no
chained tracebacks), a runner's stderr with its control characters escaped and the device's `env` values
masked, and a launch that touches nothing in its workdir but its own folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import yaml

from conftest import DISPLAY, HOSTILE
from pytest_zbench.settings import running_in_ci

CHAINED = ("The above exception was the direct cause", "During handling of the above exception")


def output(result: pytest.RunResult) -> str:
    return result.stdout.str() + "\n" + result.stderr.str()


def write_devices(session, entry: dict) -> None:
    (session.root / "devices.yaml").write_text(yaml.safe_dump({"devices": {session.name: entry}}))


def local_entry(runner: list[str], **extra: object) -> dict:
    return {"transport": "local", "backend": "software", "runner": runner, "display": DISPLAY, **extra}


def test_a_runner_that_is_missing_is_one_message(local_session):
    session = local_session
    write_devices(session, local_entry([str(session.root / "no-such-runner")]))
    assert_once(session.run(), "no-such-runner")


def test_a_runner_that_is_not_executable_is_one_message(local_session):
    session = local_session
    script = session.root / "runner.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o644)
    write_devices(session, local_entry([str(script)]))
    assert_once(session.run(), "runner.sh")


def test_a_probe_that_hangs_is_one_message(local_session):
    local_session.device("probe_hang")
    assert_once(local_session.run("--zbench-timeout=2"), "did not answer within its 2 s deadline")


def test_a_runner_without_skia_python_names_the_package_once(local_session):
    session = local_session
    bare = session.tmp / "bare"  # a Python of its own, without the project's packages
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    write_devices(session, local_entry([str(bare / "bin" / "python"), "-m", "pytest_zbench.runner"]))
    result = session.run()
    text = assert_once(result, "has no module 'skia'")
    assert f"install it with `{bare / 'bin' / 'python'} -m pip install skia-python`" in text
    assert "No module named" not in text and "Check the 'runner' entry" not in text


def test_ssh_to_an_unknown_host_is_one_message(local_session):
    pytest.importorskip("asyncssh")
    session = local_session
    write_devices(session, {"transport": "ssh", "host": "zbench-no-such-host.invalid", "user": "nobody",
                            "connect_timeout_s": 5, "runner": ["true"], "display": DISPLAY})
    assert_once(session.run(), "zbench-no-such-host.invalid")


def assert_once(result: pytest.RunResult, phrase: str) -> str:
    # The first test fails on the device; the other one skips, or under CI=true (inherited by the session,
    # settings.running_in_ci) fails as quarantined, naming the quarantine, not the device's message again.
    if running_in_ci(os.environ):
        result.assert_outcomes(errors=2)
    else:
        result.assert_outcomes(errors=1, skipped=1)
    text = output(result)
    assert not any(chain in text for chain in CHAINED), text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    errors = text[text.index("= ERRORS ="):text.index("short test summary info")]
    assert errors.count("is unusable in this session") == 1 and phrase in errors, errors
    return text


# A runner whose probe and frames are the hostile runner's, and whose `run` then writes to stderr what a
# terminal would act on (NUL, a screen clear, colour, BEL, a direction override) and the token it was given,
# and fails.
NOISY = textwrap.dedent(f"""\
    import os, subprocess, sys
    code = subprocess.call([sys.executable, {str(HOSTILE)!r}, *sys.argv[1:]])
    if sys.argv[1] == "run":
        sys.stderr.write("boom\\x00\\x1b[2J\\x1b[31mred\\x1b[0m\\x07 \\u202eevil token=" + os.environ["API_TOKEN"] + "\\n")
        sys.exit(1)
    sys.exit(code)
""")
TOKEN = "s3cr3t-token-0123456789"


def test_runner_stderr_is_escaped_and_env_values_masked_everywhere(local_session):
    session = local_session
    script = session.root / "noisy.py"
    script.write_text(NOISY)
    write_devices(session, local_entry(["python", str(script)], env={
        "API_TOKEN": TOKEN, "ZBENCH_FAULT": "ok", "ZBENCH_FAULT_MARK": session.mark}))
    result = session.run("-m", "zbench_perf")
    result.assert_outcomes(failed=1)
    text = output(result)
    report = (session.results / "report.html").read_text()
    document = (session.results / "run.json").read_text()
    for where, content in (("terminal", text), ("run.json", document), ("report.html", report)):
        assert TOKEN not in content, where
        for control in ("\x00", "\x1b", "\x07", "\u202e"):
            assert control not in content, (where, repr(control))
    assert "boom\\x00\\x1b[2J\\x1b[31mred\\x1b[0m\\x07 \\u202eevil token=***" in text
    details = [issue["detail"] for issue in session.issues("exit")]
    assert details and all("token=***" in d and "\\x1b[2J" in d for d in details), details
    assert json.loads(document)["scenes"]


def test_a_launch_removes_only_what_it_created_in_its_workdir(local_session):
    session = local_session
    workdir = session.root / "device-folder"
    precious = workdir / "faults.one"  # a folder of the device's that has the scene's id for a name
    precious.mkdir(parents=True)
    (precious / "keep.txt").write_text("the device's own file\n")
    (workdir / "other.txt").write_text("another file of the device\n")
    session.device(workdir=str(workdir))
    result = session.run("-m", "zbench_perf")
    result.assert_outcomes(passed=1)
    assert (precious / "keep.txt").read_text() == "the device's own file\n"
    assert sorted(p.name for p in workdir.iterdir()) == ["faults.one", "other.txt"]
    assert sorted(p.name for p in precious.iterdir()) == ["keep.txt"]
