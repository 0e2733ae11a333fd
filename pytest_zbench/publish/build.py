"""`zbench publish`: read every scene series of a history, write the site into a new folder, then put it in
place of the old one, so a reader never sees half a site and pages of series gone from the history do not
linger (docs/report.md, "Published site")."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..errors import ZbenchError
from ..regression.changepoints import ChangePoint
from ..regression.history import History, SceneKey
from .engines import index_section, write_engines
from .run_cache import RunCache
from .series import RunPoint, SceneSeries, find_steps, run_points, scene_series
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
    absolute = Path(os.path.abspath(out))
    if not absolute.name:
        raise PublishError(f"{out} is the filesystem's root: name a folder for the site (--out DIR)")
    if Path.cwd().is_relative_to(absolute):  # replacing it would pull the folder away under the shell
        raise PublishError(f"--out {out}: the site's folder is replaced as a whole, so it cannot be the working "
                           "folder or hold it; name a folder for the site, such as zbench-site")
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise PublishError(f"{out} is not a folder: name a folder for the site (--out DIR)")
    if out.is_dir() and any(out.iterdir()) and not (out / SITE_MARKER).is_file():
        raise PublishError(f"{out} holds files that no `zbench publish` wrote, and publishing replaces the folder: "
                           "name an empty or new folder (--out DIR)")


BATCH = 32  # series read while the workers look for the change points of the batch before


def publish(history: History, out: Path, *, metric: str = "cpu_ms.p50", last: int = 200,
            results: Sequence[Path] = (), device: str | None = None, sig_level: float = 0.05, jobs: int = 1,
            progress: Callable[[int, int], None] | None = None) -> Published:
    """Write the site of `history` into `out`. jobs > 1: the change points are searched in that many worker
    processes while this one reads the history and writes the pages."""
    out = Path(os.path.abspath(out))  # `.` or `sub/..` has no name to stage the new site beside
    check_target(out)
    cache = RunCache.load(out)  # what the site being replaced read of each run.json
    verdicts = read_verdicts(results, cache)
    keys = history.scene_keys(device=device)
    staging = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    pool = ProcessPoolExecutor(jobs) if jobs > 1 and len(keys) > BATCH else None
    try:
        write_assets(staging)
        by_device: dict[tuple[str, str], list[tuple[SceneSeries, Path]]] = {}
        done = 0

        def write(batch: list[tuple[SceneKey, tuple[RunPoint, ...]]], steps: Iterable[list[ChangePoint]]) -> None:
            nonlocal done
            for (key, points), found in zip(batch, steps):
                series = scene_series(key, points, found, metric, verdicts.by_run_scene)
                by_device.setdefault((key.device, key.backend), []).append((series, write_scene(staging, series)))
                done += 1
                if progress is not None:
                    progress(done, len(keys))

        pending: tuple[list[tuple[SceneKey, tuple[RunPoint, ...]]], Future[list[list[ChangePoint]]]] | None = None
        for start in range(0, len(keys), BATCH):
            batch = [(key, run_points(history.runs_of(key, limit=last), metric)) for key in keys[start:start + BATCH]]
            values = [[p.median for p in points] for _, points in batch]
            if pool is None:
                write(batch, (find_steps(v, sig_level) for v in values))
                continue
            if pending is not None:
                write(pending[0], pending[1].result())
            pending = (batch, pool.submit(_find_all, values, sig_level))
        if pending is not None:
            write(pending[0], pending[1].result())
        summaries = [write_device(staging, device_name, backend, rows)
                     for (device_name, backend), rows in sorted(by_device.items())]
        open_rows = sorted((row for rows in by_device.values() for row in rows if row[0].open_regression),
                           key=lambda row: _order(row[0].key))
        engines = write_engines(staging, results, cache)
        cache.save(staging)
        facts = SiteFacts(str(history.location), metric, last, verdicts.files, tuple(verdicts.notes))
        write_index(staging, summaries, open_rows, facts, index_section(engines))
        _replace(staging, out)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        shutil.rmtree(staging, ignore_errors=True)
    files = [p for p in out.rglob("*") if p.is_file()]
    return Published(out / "index.html", len(keys), len(open_rows), len(files), sum(p.stat().st_size for p in files),
                     tuple(verdicts.notes))


def _find_all(values: list[list[float | None]], sig_level: float) -> list[list[ChangePoint]]:
    return [find_steps(v, sig_level) for v in values]


def _order(key: SceneKey) -> tuple[str, str, str]:
    return key.device, key.backend, key.scene_id


def _replace(staging: Path, out: Path) -> None:
    """The new site in place of the old: the old folder moved aside, the new one renamed in, the old removed."""
    old = out.with_name(f".{out.name}.{os.getpid()}.old")
    if out.exists():
        os.replace(out, old)
    os.replace(staging, out)
    shutil.rmtree(old, ignore_errors=True)
