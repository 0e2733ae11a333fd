"""`zbench kit` and `zbench --version`: the kit the package ships and the protocol it speaks, read from the
kit's own header, agree with the host's protocol version."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_zbench import __version__
from pytest_zbench.errors import UsageError
from pytest_zbench.kit_files import kit_dir, kit_protocol, pkg_config
from pytest_zbench.protocol.vocabulary import PROTOCOL_VERSION

REPO = Path(__file__).resolve().parent.parent.parent


def _zbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_zbench.cli", *args], capture_output=True, text=True,
                          timeout=60, cwd=REPO)


def test_the_shipped_kit_is_the_repositorys_and_speaks_the_hosts_protocol():
    assert (kit_dir() / "zbench_kit.h").read_bytes() == (REPO / "native" / "kit" / "zbench_kit.h").read_bytes()
    assert kit_protocol(kit_dir()) == PROTOCOL_VERSION


def test_a_kit_of_another_protocol_is_read_as_such_and_a_header_without_one_is_refused(tmp_path):
    (tmp_path / "zbench_kit.h").write_text("/* kit */\n#define ZK_PROTOCOL 7\n#define ZK_MAX_SIDE 16384\n")
    assert kit_protocol(tmp_path) == 7
    assert "Description: pytest-zbench C runner kit, runner protocol 7" in pkg_config(tmp_path, "1.2.3")
    (tmp_path / "zbench_kit.h").write_text("#define ZK_PROTOCOLS 1\n")
    with pytest.raises(UsageError, match=r"zbench_kit\.h: no '#define ZK_PROTOCOL N' line"):
        kit_protocol(tmp_path)


def test_zbench_kit_prints_its_folder_protocol_and_a_pkg_config_file():
    assert _zbench("kit", "--path").stdout.strip() == str(kit_dir())
    assert _zbench("kit", "--protocol").stdout.strip() == str(PROTOCOL_VERSION)
    pc = _zbench("kit", "--pkg-config").stdout
    assert f"prefix={kit_dir()}\n" in pc and f"Version: {__version__}\n" in pc and "Cflags: -I${prefix}\n" in pc
    assert _zbench("kit", "--path", "--protocol").returncode == 2  # one at a time


def test_zbench_version_names_the_package_version_and_protocol():
    said = _zbench("--version")
    assert said.returncode == 0
    assert said.stdout.strip() == f"zbench {__version__} (pytest-zbench; runner protocol {PROTOCOL_VERSION})"
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", __version__) or __version__ == "0+unknown"
