"""A runner's build as every record names it (the Markdown summary, report.html, JUnit): its commit, dirty
flag and `git describe`, from run.json's build records (host/devices/environment.py build_record)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def build_text(build: Mapping[str, Any] | None) -> str:
    """`1a2b3c4d5e6f (dirty, v1.2-3-g1a2b3c4)`; `unknown` when the runner's probe reports no build."""
    if not build or not build.get("id"):
        return "unknown (the runner's probe reports no build)"
    notes = [n for n in ("dirty" if build.get("dirty") else "", str(build.get("describe") or "")) if n]
    return str(build["id"])[:12] + (f" ({', '.join(notes)})" if notes else "")
