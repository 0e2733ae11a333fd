"""Helpers of the fault suite shared by its conftest and its tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def processes_with(mark: str) -> dict[int, str]:
    """pid -> command line of every process carrying `mark` in its environment or on its command line."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        for name in ("cmdline", "environ"):
            try:
                data = Path(f"/proc/{entry}/{name}").read_bytes()
            except OSError:
                break
            if mark.encode() in data:
                try:
                    cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    cmdline = "?"
                found[int(entry)] = cmdline.strip()
                break
    return found


def output(result: pytest.RunResult) -> str:
    """What a pytester session printed, stdout and stderr together."""
    return result.stdout.str() + "\n" + result.stderr.str()


def clean(result: pytest.RunResult) -> str:
    """What a session printed, asserted free of tracebacks: a usage error is one message, not a crash."""
    text = output(result)
    assert "Traceback" not in text and "INTERNALERROR" not in text, text[-3000:]
    return text
