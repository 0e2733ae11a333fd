"""The site's engines pages: per machine whose runs hold two or more engines (devices), the newest run of each
side by side, as `zbench engines` shows them (side_by_side/). Read from the same run.json files as the verdicts
(the results folders and their run archive, verdicts.run_files); a file that is not a run.json of this version
is left out (one that cannot be read at all is a note of the verdicts' reader), never a failed publish
(docs/report.md, "Engines side by side")."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..side_by_side.document import write_page
from ..side_by_side.runs import read_run, run_schema_errors
from ..side_by_side.table import Engine, EnginesError, complete_launches, engines_of, side_by_side
from .run_cache import RunCache
from .site import slug
from .verdicts import engine_keys, run_files


@dataclass(frozen=True)
class EnginesPage:
    """One machine's engines page, as the index lists it."""

    machine: str
    href: str  # relative to the site's folder
    engines: tuple[str, ...]  # the reference first
    scenes: int


def newest_engines(results: Sequence[Path], cache: RunCache | None = None) -> dict[str, list[Engine]]:
    """Per machine, the newest run of each engine that measured at least one scene. Files are read oldest
    first (run_files), so of two copies of one run (the results folder's and its archive's) the archived one,
    whose report.html outlives the next session, wins. `cache`: what an earlier publish read of each file
    (run_cache.py): a file unchanged since is not parsed again."""
    cache = cache if cache is not None else RunCache()
    # Each engine's runs from the files' extracts, then the newest that passes the schema check. The check
    # (a second for a run.json of 90 scenes) is made for the chosen files alone, newest first, and kept in
    # the cache: checking each of an archive's 500 runs took 10 minutes of a publish that needs none of them
    # (bench/bench_scale.py). One of another version holds no figures this view can trust to be comparable.
    runs: dict[tuple[str, str], list[tuple[str, int, Path]]] = {}
    order = 0
    for folder in results:
        for path in run_files(folder):
            order += 1
            kept = cache.get(path, "engines")
            if kept is None:
                try:
                    kept = {"keys": engine_keys(read_run(path, check=False), path)}
                except EnginesError:
                    continue  # a file that cannot be read is already a note of the verdicts' reader
                cache.put(path, "engines", kept)
            for machine, name, started, measured in kept.get("keys") or []:
                if measured:
                    runs.setdefault((machine, name), []).append((started, order, path))
    newest: dict[tuple[str, str], tuple[str, Path]] = {}
    for key, found in runs.items():
        for started, _, path in sorted(found, reverse=True):  # of equal starts, the file read last wins
            if _valid(path, cache):
                newest[key] = (started, path)
                break
    machines: dict[str, list[Engine]] = {}
    documents: dict[Path, list[Engine]] = {}
    for (machine, name), (_, path) in sorted(newest.items()):
        if path not in documents:
            documents[path] = engines_of(read_run(path, check=False), path)
        machines.setdefault(machine, []).append(next(e for e in documents[path] if e.name == name))
    return machines


def _valid(path: Path, cache: RunCache) -> bool:
    valid = cache.get(path, "valid")
    if valid is None:
        try:
            valid = not run_schema_errors(read_run(path, check=False), path)
        except EnginesError:
            return False
        cache.put(path, "valid", valid)
    return bool(valid)


def reference_of(engines: Sequence[Engine]) -> Engine:
    """The engine the others are divided by: the one that measured the most scenes (ties: by name), so that
    most cells have a ratio."""
    return min(engines, key=lambda e: (-sum(1 for s in e.scenes.values() if complete_launches(s)), e.name))


def write_engines(site: Path, results: Sequence[Path], cache: RunCache | None = None) -> list[EnginesPage]:
    """engines/<machine>.html for every machine with two or more engines."""
    pages = []
    for machine, engines in newest_engines(results, cache).items():
        if len(engines) < 2:
            continue
        table = side_by_side(engines, reference_of(engines).name)
        name = f"engines/{slug(machine)}.html"
        nav = "<nav><a href='../index.html'>all devices</a></nav>"
        write_page(table, site / name, nav=nav, title=f"Engines side by side on {machine}")
        pages.append(EnginesPage(machine, name, tuple(e.name for e in table.engines), len(table.rows)))
    return pages


def index_section(pages: Sequence[EnginesPage]) -> str:
    """The index's list of engines pages (nothing when no machine has two engines)."""
    if not pages:
        return ""
    rows = "".join(f"<tr><td><a href='{html.escape(p.href)}'>{html.escape(p.machine)}</a></td>"
                   f"<td>{html.escape(', '.join(p.engines))}</td><td>{html.escape(p.engines[0])}</td>"
                   f"<td class='num'>{p.scenes}</td></tr>" for p in pages)
    return ("<h2>Engines side by side</h2><p class='muted'>per machine, the newest run of each engine (device) in the "
            "results folders; ratios to the reference with their 95 % launch-bootstrap interval</p>"
            "<table><thead><tr><th>machine</th><th>engines</th><th>reference</th><th>scenes</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>")
