"""The gate's verdicts, read back from the run.json files of results folders and their run archive
(run_archive.py): the history keeps measurements, not verdicts, so a verdict is shown where its run's run.json is
still at hand, with a link to that run's report.html (docs/report.md, "Published site").

A scene entry is matched to a history run by its `history.run_id` (`<session run id>-<device>`) and its scene
id. A file that cannot be read is reported and skipped: an archive pruned or half-copied never stops a publish.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..regression.verdict_words import verdict_rank
from ..run_archive import run_folders
from .run_cache import RunCache


@dataclass(frozen=True)
class ArchivedVerdict:
    """The gate's verdict on one scene of one run, and the effect of the metric that decided it."""

    verdict: str
    metric: str | None
    effect: float | None
    ci: tuple[float, float] | None
    report: Path | None  # that run's report.html, when it exists
    run_json: Path


@dataclass
class ArchivedVerdicts:
    by_run_scene: dict[tuple[str, str], ArchivedVerdict]
    files: int
    notes: list[str]


def run_files(results: Path) -> list[Path]:
    """A results folder's run.json, then its archived runs' oldest first: a later file wins, so a run is
    linked to its own archived folder (which outlives the top-level files, rewritten by every session)."""
    found = [results / "run.json"] if (results / "run.json").is_file() else []
    return found + [folder / "run.json" for folder in run_folders(results) if (folder / "run.json").is_file()]


def read_verdicts(results_folders: Sequence[Path], cache: RunCache | None = None) -> ArchivedVerdicts:
    """`cache`: the extracts of an earlier publish (run_cache.py); a file unchanged since is not parsed again."""
    cache = cache if cache is not None else RunCache()
    out = ArchivedVerdicts({}, 0, [])
    for results in results_folders:
        for path in run_files(results):
            report = path.parent / "report.html"
            kept = cache.get(path, "verdicts")
            if kept is None:
                try:
                    document = json.loads(path.read_text(encoding="utf-8"))
                except (OSError, ValueError) as exc:
                    out.notes.append(f"{path}: not read ({exc})")
                    continue
                if not isinstance(document, dict):
                    out.notes.append(f"{path}: not a run.json (not a JSON object)")
                    continue
                kept = [[*key, v.verdict, v.metric, v.effect, list(v.ci) if v.ci else None]
                        for key, v in scene_verdicts(document.get("scenes"), path, None)]
                cache.put(path, "verdicts", kept)
                cache.put(path, "engines", {"keys": engine_keys(document, path)})
            out.files += 1
            shown = report if report.is_file() else None
            for run_id, scene_id, verdict, metric, effect, ci in kept:
                out.by_run_scene[(run_id, scene_id)] = ArchivedVerdict(verdict, metric, effect,
                                                                       tuple(ci) if ci else None, shown, path)
    return out


def engine_keys(document: dict[str, Any], path: Path) -> list[list[Any]] | None:
    """The engines of a run as engines.py weighs them: [machine, name, started_utc, measured a scene] each;
    None when the document is not shaped like a run.json."""
    from ..side_by_side.table import complete_launches, engines_of

    try:
        return [[e.machine, e.name, e.started_utc, any(complete_launches(s) for s in e.scenes.values())]
                for e in engines_of(document, path)]
    except Exception:  # noqa: BLE001 - engines.py checks such a file against the schema, which says what is wrong
        return None


def scene_verdicts(scenes: Any, path: Path, report: Path | None) -> Iterable[tuple[tuple[str, str], ArchivedVerdict]]:
    for entry in scenes if isinstance(scenes, list) else []:
        if not isinstance(entry, dict):
            continue
        history, regression = entry.get("history") or {}, entry.get("regression") or {}
        run_id, verdict = history.get("run_id"), regression.get("verdict")
        if not (isinstance(run_id, str) and isinstance(verdict, str) and isinstance(entry.get("id"), str)):
            continue  # not recorded in a history, or not gated
        yield (run_id, entry["id"]), ArchivedVerdict(verdict, *_deciding_metric(regression.get("metrics")), report,
                                                     path)


def _deciding_metric(metrics: Any) -> tuple[str | None, float | None, tuple[float, float] | None]:
    """The metric whose verdict is the scene's (the worst, in verdict_words' order): its name, effect, interval."""
    judged = [m for m in metrics if isinstance(m, dict)] if isinstance(metrics, list) else []
    if not judged:
        return None, None, None
    worst = min(judged, key=lambda m: verdict_rank(str(m.get("verdict"))))
    effect, ci = worst.get("effect"), worst.get("ci")
    interval = (float(ci[0]), float(ci[1])) if isinstance(ci, list) and len(ci) == 2 and None not in ci else None
    return (str(worst.get("metric")), float(effect) if isinstance(effect, (int, float)) else None, interval)
