"""The shipped command-transport scripts: clear failure without their tools, and the novacom script's
contract (quoting, pid file, kill) against a stand-in `novacom` that runs on this machine."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_zbench.transports import make_transport
from tests.waiting import gone

REPO = Path(__file__).resolve().parent.parent.parent
IOS = REPO / "ci" / "devices" / "ios-device.sh"
NOVACOM = REPO / "ci" / "devices" / "novacom-device.sh"

# novacom [-d DEV] run file:///bin/sh -- ARGS... | put file://PATH | get file://PATH, on this machine
FAKE_NOVACOM = """#!/bin/sh
[ "$1" = -d ] && shift 2
verb=$1; url=$2; shift 2
path=${url#file://}
case "$verb" in
  run) [ "$1" = -- ] && shift; exec "$path" "$@" ;;
  put) cat > "$path" ;;
  get) cat "$path" ;;
  *) echo "novacom: bad verb" >&2; exit 1 ;;
esac
"""


def test_scripts_fail_clearly_without_their_tools(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    for script, needle in ((NOVACOM, "novacom is not installed"), (IOS, "needs macOS")):
        out = subprocess.run([str(script), "push", "a", "b"], capture_output=True, text=True, env=env)
        assert out.returncode == 125 and needle in out.stderr


@pytest.fixture
def novacom_device(tmp_path, write_inventory, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "novacom").write_text(FAKE_NOVACOM)
    (bin_dir / "novacom").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    spec = write_inventory({"touchpad": {
        "transport": "command", "platform": "webos", "workdir": str(tmp_path / "media"),
        "push": [str(NOVACOM), "push"], "pull": [str(NOVACOM), "pull"],
        "exec": [str(NOVACOM), "exec"], "kill": [str(NOVACOM), "kill"],
        "env": {"ZB_GREETING": "it's \"quoted\" $HOME"},
    }})["touchpad"]
    t = make_transport(spec)
    t.open()
    yield t
    t.close()


def test_novacom_script_contract(novacom_device, tmp_path):
    t = novacom_device
    nasty = ["a b", "it's", "$(touch /tmp/zb-pwned)", '"', ""]
    result = t.run([sys.executable, "-c", "import json, os, sys; print(json.dumps([sys.argv[1:], os.environ['ZB_GREETING']]))",
                    *nasty], timeout_s=20)
    assert result.ok, result.stderr
    import json

    assert json.loads(result.stdout) == [nasty, "it's \"quoted\" $HOME"]
    assert t.run(["sh", "-c", "exit 7"], timeout_s=20).exit_code == 7
    out = t.workdir() + "/launch 1"
    t.mkdir(out)
    src = tmp_path / "job.json"
    src.write_text("{}")
    t.push(src, out + "/job.json")
    pulled = t.pull_dir(out, tmp_path / "back")
    assert [p.name for p in pulled] == ["job.json"]
    t.remove_tree(out)
    assert not os.path.exists(out)


def test_novacom_script_kill_at_deadline(novacom_device):
    mark = f"zbench-nova-{os.getpid()}-{time.monotonic_ns()}"
    result = novacom_device.run([sys.executable, "-c", "import time; time.sleep(60)", mark], timeout_s=1)
    assert result.timed_out
    assert gone(mark), "the novacom script's process outlived its deadline"
