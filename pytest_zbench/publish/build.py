"""`zbench publish`: read every scene series of a history, write the site into a new folder, then put it in
place of the old one, so a reader never sees half a site and pages of series gone from the history do not
linger (docs/report.md, "Published site")."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ZbenchError
from ..regression.history import History, SceneKey
from .series import SceneSeries, scene_series
from .site import SITE_MARKER, SiteFacts, write_assets, write_device, write_index, write_scene
from .verdicts import read_verdicts


class PublishError(ZbenchError):
    """The site cannot be written where it was asked to go; the message says what to do."""


@dataclass(frozen=True)
class Published:
    index: Path
    series: int
    open_regressions: int
    files: int
    bytes: int
    notes: tuple[str, ...]


def check_target(out: Path) -> None:
    """A publish replaces its folder: only an empty one, a missing one, or an earlier site is replaced."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise PublishError(f"{out} is not a folder: name a folder for the site (--out DIR)")
    if out.is_dir() and any(out.iterdir()) and not (out / SITE_MARKER).is_file():
        raise PublishError(f"{out} holds files that no `zbench publish` wrote, and publishing replaces the folder: "
                           "name an empty or new folder (--out DIR)")


def publish(history: History, out: Path, *, metric: str = "cpu_ms.p50", last: int = 200,
            results: Sequence[Path] = (), device: str | None = None, sig_level: float = 0.05,
            progress: Callable[[int, int], None] | None = None) -> Published:
    check_target(out)
    verdicts = read_verdicts(results)
    keys = history.scene_keys(device=device)
    staging = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        write_assets(staging)
        by_device: dict[tuple[str, str], list[tuple[SceneSeries, Path]]] = {}
        for done, key in enumerate(keys, 1):
            series = scene_series(key, history.runs_of(key, limit=last), metric, verdicts.by_run_scene,
                                  sig_level=sig_level)
            by_device.setdefault((key.device, key.backend), []).append((series, write_scene(staging, series)))
            if progress is not None:
                progress(done, len(keys))
        summaries = [write_device(staging, device_name, backend, rows)
                     for (device_name, backend), rows in sorted(by_device.items())]
        open_rows = sorted((row for rows in by_device.values() for row in rows if row[0].open_regression),
                           key=lambda row: _order(row[0].key))
        facts = SiteFacts(str(history.location), metric, last, verdicts.files, tuple(verdicts.notes))
        write_index(staging, summaries, open_rows, facts)
        _replace(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    files = [p for p in out.rglob("*") if p.is_file()]
    return Published(out / "index.html", len(keys), len(open_rows), len(files), sum(p.stat().st_size for p in files),
                     tuple(verdicts.notes))


def _order(key: SceneKey) -> tuple[str, str, str]:
    return key.device, key.backend, key.scene_id


def _replace(staging: Path, out: Path) -> None:
    """The new site in place of the old: the old folder moved aside, the new one renamed in, the old removed."""
    old = out.with_name(f".{out.name}.{os.getpid()}.old")
    if out.exists():
        os.replace(out, old)
    os.replace(staging, out)
    shutil.rmtree(old, ignore_errors=True)
