"""What the site needs of each run.json in the results folders, kept in the site between publishes.

A publish reads every run.json of the results folders and their run archive: the gate's verdicts
(verdicts.py) and which engines each run holds (engines.py). An archived run never changes, yet parsing 500 of
them (a few MB each for 90 scenes) took most of a publish, and all of a publish after one new run
(bench/bench_scale.py). So each file's extract is kept in the site (`.zbench-runs.json`) under its path, size
and modification time, and only a file new or changed since the last publish is parsed again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .. import __version__

CACHE_FILE = ".zbench-runs.json"


class RunCache:
    """Extracts of run.json files by path; an entry is used while its file's size and mtime are unchanged."""

    def __init__(self, entries: dict[str, Any] | None = None) -> None:
        self.entries: dict[str, Any] = entries or {}
        self.used: set[str] = set()

    @classmethod
    def load(cls, site: Path) -> RunCache:
        """The cache of the site a publish replaces; empty when there is none or it is of another version."""
        try:
            document = json.loads((site / CACHE_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls()
        if not isinstance(document, dict) or document.get("version") != __version__ \
                or not isinstance(document.get("files"), dict):
            return cls()
        return cls(document["files"])

    def save(self, site: Path) -> None:
        """The entries this publish used (files gone from the results folders are dropped)."""
        files = {path: self.entries[path] for path in sorted(self.used) if path in self.entries}
        (site / CACHE_FILE).write_text(json.dumps({"version": __version__, "files": files}), encoding="utf-8")

    @staticmethod
    def _stamp(path: Path) -> list[int] | None:
        try:
            stat = path.stat()
        except OSError:
            return None
        return [stat.st_size, stat.st_mtime_ns]

    def get(self, path: Path, part: str) -> Any:
        """The `part` kept for `path` (None: not kept, or the file changed since)."""
        key = os.path.abspath(path)
        entry = self.entries.get(key)
        stamp = self._stamp(path)
        if not isinstance(entry, dict) or stamp is None or entry.get("stamp") != stamp:
            return None
        self.used.add(key)
        return entry.get(part)

    def put(self, path: Path, part: str, value: Any) -> None:
        key = os.path.abspath(path)
        stamp = self._stamp(path)
        if stamp is None:
            return
        entry = self.entries.get(key)
        if not isinstance(entry, dict) or entry.get("stamp") != stamp:
            entry = self.entries[key] = {"stamp": stamp}
        entry[part] = value
        self.used.add(key)
