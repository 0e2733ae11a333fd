"""Where the C runner kit this package ships lives, and what it speaks (`zbench kit`, docs/native-runner.md).

The kit's sources (native/kit in the repository) ship inside a built package as pytest_zbench/kit/ (setup.py
copies them in), so an engine's build takes the kit of the very host that will measure it: `KIT := $(shell zbench kit --path)` then
`include $(KIT)/kit.mk`. The protocol version the kit speaks is read from its header, the one place it is
written for C (ZK_PROTOCOL); the host's is protocol/vocabulary.py's. A runner built on a kit of another protocol
is refused at its probe (protocol/__init__.py parse_probe), with one line.
"""

from __future__ import annotations

import re
from pathlib import Path

from .errors import UsageError

_PACKAGE = Path(__file__).resolve().parent
# A wheel's copy first; an editable install or a checkout has the repository's own folder beside the package.
KIT_PLACES = (_PACKAGE / "kit", _PACKAGE.parent / "native" / "kit")
_PROTOCOL_DEFINE = re.compile(r"^#define\s+ZK_PROTOCOL\s+(\d+)\s*$", re.MULTILINE)


def kit_dir() -> Path:
    """The kit's folder; a UsageError when this installation lacks it (a package built without its data)."""
    for place in KIT_PLACES:
        if (place / "zbench_kit.h").is_file():
            return place
    raise UsageError(f"the C runner kit is missing from this installation ({KIT_PLACES[0]}): reinstall pytest-zbench")


def kit_protocol(kit: Path) -> int:
    """The runner protocol version the kit in `kit` speaks (its header's ZK_PROTOCOL)."""
    header = kit / "zbench_kit.h"
    match = _PROTOCOL_DEFINE.search(header.read_text(encoding="utf-8"))
    if match is None:
        raise UsageError(f"{header}: no '#define ZK_PROTOCOL N' line: not a zbench runner kit")
    return int(match.group(1))


def pkg_config(kit: Path, version: str) -> str:
    """A pkg-config file for the kit: its include folder and its version (the host's)."""
    return (f"prefix={kit}\n"
            "Name: zbench-kit\n"
            f"Description: pytest-zbench C runner kit, runner protocol {kit_protocol(kit)}\n"
            f"Version: {version}\n"
            "Cflags: -I${prefix}\n")
