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
from .site import slug
from .verdicts import run_files


@dataclass(frozen=True)
class EnginesPage:
    """One machine's engines page, as the index lists it."""

    machine: str
    href: str  # relative to the site's folder
    engines: tuple[str, ...]  # the reference first
    scenes: int


def newest_engines(results: Sequence[Path]) -> dict[str, list[Engine]]:
    """Per machine, the newest run of each engine that measured at least one scene. Files are read oldest
    first (run_files), so of two copies of one run (the results folder's and its archive's) the archived one,
    whose report.html outlives the next session, wins."""
    newest: dict[tuple[str, str], Engine] = {}
    for folder in results:
        for path in run_files(folder):
            try:
                document = read_run(path, check=False)
                found = engines_of(document, path)
            except EnginesError:
                # A file that cannot be read is already a note of the verdicts' reader.
                continue
            except Exception:  # noqa: BLE001 - not shaped like a run.json: the schema check below says so
                found = None
            wins = [engine for engine in found or [] if any(complete_launches(e) for e in engine.scenes.values())
                    and ((engine.machine, engine.name) not in newest
                         or engine.started_utc >= newest[(engine.machine, engine.name)].started_utc)]
            if found is not None and not wins:
                continue  # nothing newer in it: a file left out is not checked against the schema either
            # The schema check (a second for a run.json of 90 scenes) only for a file that gives an engine's
            # newest run: checking each of an archive's 500 runs took 10 minutes of a publish that needs none of
            # them (bench/bench_scale.py). One of another version holds no figures this view can trust.
            if not run_schema_errors(document, path):
                for engine in wins if found is not None else []:
                    newest[(engine.machine, engine.name)] = engine
    machines: dict[str, list[Engine]] = {}
    for (machine, _), engine in sorted(newest.items()):
        machines.setdefault(machine, []).append(engine)
    return machines


def reference_of(engines: Sequence[Engine]) -> Engine:
    """The engine the others are divided by: the one that measured the most scenes (ties: by name), so that
    most cells have a ratio."""
    return min(engines, key=lambda e: (-sum(1 for s in e.scenes.values() if complete_launches(s)), e.name))


def write_engines(site: Path, results: Sequence[Path]) -> list[EnginesPage]:
    """engines/<machine>.html for every machine with two or more engines."""
    pages = []
    for machine, engines in newest_engines(results).items():
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
