"""`zbench check-runner` shows what a runner wrote as a session does (host/devices/device.py, sanitise): a
device `env` value masked and control characters escaped, in the terminal's lines and in --json alike."""

from __future__ import annotations

import json
import sys

import yaml

from pytest_zbench.conformance import check_runner
from pytest_zbench.inventory import load_inventory

SECRET = "hunter2-the-device-token"

GARBAGE = f'''\
import sys
# A runner that leaks its environment and writes terminal escapes, NUL and ~300 raw bytes instead of a probe.
sys.stdout.buffer.write(bytes(range(1, 256)) + b"\\x00\\x1b[2J" + b"\\n")
sys.stderr.write("token={SECRET}\\x00 \\x1b]0;pwned\\x07 \\x1b[2J\\n")
sys.exit(3)
'''


def test_the_runners_stderr_and_garbage_probe_are_masked_and_escaped(tmp_path):
    runner = tmp_path / "leaky.py"
    runner.write_text(GARBAGE)
    path = tmp_path / "devices.yaml"
    path.write_text(yaml.safe_dump({"devices": {"box": {
        "transport": "local", "backend": "software", "runner": [sys.executable, str(runner)],
        "env": {"API_TOKEN": SECRET}, "display": {"width": 320, "height": 240, "refresh_hz": 60}}}}))
    report = check_runner(load_inventory(path).get("box"))
    assert not report.passed
    text = "\n".join(report.lines())
    dumped = json.dumps(report.to_json())
    assert "token=" in text, text  # the runner's stderr is shown ...
    for shown in (text, json.loads(dumped) and dumped):
        assert SECRET not in shown  # ... with the secret masked
    assert "token=***" in text
    assert not any(ch in text for ch in "\x00\x1b\x07"), repr(text)
    assert "\\x1b" in text and "\\x00" in text  # escaped, not dropped: the user sees what the runner sent
