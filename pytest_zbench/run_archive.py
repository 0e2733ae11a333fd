"""The run archive: each session that wrote a run.json keeps its artifacts in a numbered folder of its own,
<results>/runs/<NNNN>/, with <results>/latest pointing at the newest; the oldest beyond --zbench-keep-runs are
deleted. docs/report.md, "Run archive".

The session still writes into <results> itself, so run.json, report.html and the per-scene folders stay where
users and tools find them (they are the latest run's). What goes into the run's folder is what this session
wrote: files created or changed since the session started, of its own devices and scenes (`owned`), so that
a second session writing into the same folder at the same time keeps its files out of this run's folder, and
this session's run.json is its own document even when the other one wrote results/run.json last. Files of an
earlier session that this one did not write again (the traces of scenes it did not run) are removed from
<results> when they are in the archive already and unchanged since this session started, so the top-level
folder holds the latest run and nothing older; they are never copied into a newer run's folder.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

RUNS_DIR = "runs"
LATEST = "latest"
MANIFEST = ".zbench-files"  # in a run's folder: the files it holds, relative to it, one a line
DEFAULT_KEEP_RUNS = 20
RUN_FILES = ("run.json", "run.invalid.json")
CHECK_RUNNER_DIR = "check-runner"  # conformance/session.py: <device>.json and <device>/ per device
# The words of a scene's files beside its folder, <device>/<scene>.<words>: frames.csv, b.frames.csv,
# trace.json, diff.trace.json, platform.frames.csv, frametimeline.csv (host/measure, host/report).
SCENE_FILE_WORDS = frozenset({"b", "frames", "csv", "trace", "json", "diff", "platform", "frametimeline"})


def _walk(results: Path) -> Iterator[Path]:
    """The files under `results`, outside runs/ and latest, relative to it."""
    if not results.is_dir():
        return
    for folder, dirs, files in os.walk(results):
        here = Path(folder)
        if here == results:
            dirs[:] = [d for d in dirs if d not in (RUNS_DIR, LATEST)]
        for name in files:
            if here == results and name == LATEST:
                continue
            yield (here / name).relative_to(results)


def _snapshot(results: Path) -> dict[Path, tuple[int, int]]:
    out: dict[Path, tuple[int, int]] = {}
    for rel in _walk(results):
        try:
            st = (results / rel).stat()
        except OSError:
            continue
        out[rel] = (st.st_mtime_ns, st.st_size)
    return out


def run_folders(results: Path) -> list[Path]:
    """The archived runs, oldest first."""
    base = results / RUNS_DIR
    if not base.is_dir():
        return []
    return sorted((p for p in base.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name))


def _new_run_folder(results: Path) -> Path:
    base = results / RUNS_DIR
    base.mkdir(parents=True, exist_ok=True)
    number = max((int(p.name) for p in run_folders(results)), default=0) + 1
    while True:  # mkdir is the lock: a session started at the same moment takes the next number
        folder = base / f"{number:04d}"
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            number += 1


def _manifest(folder: Path) -> set[Path]:
    try:
        return {Path(line) for line in (folder / MANIFEST).read_text(encoding="utf-8").splitlines() if line}
    except OSError:
        return set()


def _point_latest(results: Path, folder: Path) -> None:
    """results/latest -> runs/NNNN: a relative link, replaced atomically; a text file holding the relative path
    where links cannot be made (Windows without the privilege)."""
    target = os.path.relpath(folder, results)
    latest = results / LATEST
    temp = results / f".{LATEST}.{os.getpid()}.tmp"
    try:
        if temp.is_symlink() or temp.exists():
            temp.unlink()
        os.symlink(target, temp, target_is_directory=True)
        os.replace(temp, latest)
    except OSError:
        if latest.is_symlink():
            latest.unlink()
        latest.write_text(target + "\n", encoding="utf-8")


@dataclass
class Archived:
    folder: Path
    files: int
    removed_stale: int
    pruned: list[Path]


def _run_id(path: Path) -> str | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get("run_id")
    except (OSError, ValueError, AttributeError):
        return None
    return str(value) if value is not None else None


def _scene_file(name: str, scene_ids: set[str]) -> bool:
    """`name` is a file of one of `scene_ids` beside its folder: <scene>.<SCENE_FILE_WORDS joined by dots>."""
    for scene in scene_ids:
        if name.startswith(scene + ".") and set(name[len(scene) + 1:].split(".")) <= SCENE_FILE_WORDS:
            return True
    return False


def _any_scene_file(name: str) -> bool:
    """`name` looks like a file of some scene (another session's when it is none of this one's)."""
    pieces = name.split(".")
    return any(set(pieces[i:]) <= SCENE_FILE_WORDS for i in range(1, len(pieces)))


def owned(written: list[Path], document: dict[str, Any], top_is_ours: bool) -> list[Path]:
    """The files of `written` that are this session's (`document`, its run.json): its scenes' files in its
    devices' folders, its devices' other files there and in check-runner/, and the files elsewhere only when
    results/run.json is still its own (no other session wrote into the folder after it)."""
    scenes: dict[str, set[str]] = {}
    for scene in document.get("scenes") or []:
        scenes.setdefault(str(scene.get("device")), set()).add(str(scene.get("id")))
    devices = set(scenes) | set(document.get("devices") or {})
    mine = []
    for rel in written:
        parts = rel.parts
        if len(parts) == 1 or parts[0] not in devices | {CHECK_RUNNER_DIR}:
            ok = top_is_ours
        elif parts[0] == CHECK_RUNNER_DIR:
            ok = len(parts) > 1 and (parts[1] in devices or parts[1].rsplit(".", 1)[0] in devices)
        else:
            ids = scenes.get(parts[0], set())
            if len(parts) > 2:  # a folder in the device's: a scene's, or the device's own (_timer_check)
                ok = parts[1] in ids or parts[1].startswith("_")
            else:
                ok = _scene_file(parts[1], ids) or (top_is_ours and not _any_scene_file(parts[1]))
        if ok:
            mine.append(rel)
    return mine


def archive_run(results: Path, before: dict[Path, tuple[int, int]], keep: int,
                document: dict[str, Any] | None = None) -> Archived | None:
    """Copy what the session wrote (files new or changed since `before`; with its run.json `document`, only
    its own: `owned`) into a new runs/NNNN, point latest at it, remove archived files of earlier runs that no
    session changed since `before`, and prune the oldest runs beyond `keep`. None when the session wrote no
    run.json (nothing to archive)."""
    after = _snapshot(results)
    changed = sorted(rel for rel, stamp in after.items() if before.get(rel) != stamp)
    if not any(rel.name in RUN_FILES and len(rel.parts) == 1 for rel in changed):
        return None
    written = changed
    own_document = None
    if document is not None and document.get("run_id") is not None:
        run_id = str(document["run_id"])
        top_is_ours = any(_run_id(results / name) == run_id for name in RUN_FILES if Path(name) in after)
        written = owned(changed, document, top_is_ours)
        if not top_is_ours:  # another session wrote results/run.json after this one: this one's from memory
            written = [rel for rel in written if rel.name not in RUN_FILES or len(rel.parts) > 1]
            own_document = document
    folder = _new_run_folder(results)
    for rel in written:
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(results / rel, target)
    if own_document is not None:
        from .files import write_json_atomic

        write_json_atomic(folder / "run.json", own_document)
        written = [*written, Path("run.json")]
        try:  # its report too, drawn again from its own document (the one in results/ is the other session's)
            from .host.report.html import write_report

            write_report(own_document, results, folder / "report.html")
            written.append(Path("report.html"))
        except Exception:  # noqa: BLE001 - the run.json and the samples are what must not be lost
            pass
    (folder / MANIFEST).write_text("".join(f"{rel.as_posix()}\n" for rel in written), encoding="utf-8")
    _point_latest(results, folder)
    archived_before: set[Path] = set()
    for earlier in run_folders(results):
        if earlier != folder:
            archived_before |= _manifest(earlier)
    removed = 0
    for rel in sorted(set(after) - set(changed)):
        if rel in archived_before:  # an earlier run's file, kept in its own folder; no session changed it since
            try:
                (results / rel).unlink()
                removed += 1
            except OSError:
                pass
    _remove_empty_folders(results)
    pruned = prune(results, keep)
    return Archived(folder, len(written), removed, pruned)


def _remove_empty_folders(results: Path) -> None:
    for folder, _dirs, _files in os.walk(results, topdown=False):
        here = Path(folder)
        if here == results or RUNS_DIR in here.relative_to(results).parts[:1]:
            continue
        try:
            here.rmdir()
        except OSError:
            pass


def prune(results: Path, keep: int) -> list[Path]:
    """Delete the oldest archived runs beyond the newest `keep`."""
    folders = run_folders(results)
    doomed = folders[:-keep] if keep > 0 else folders
    for folder in doomed:
        shutil.rmtree(folder, ignore_errors=True)
    return doomed


def run_summary(folder: Path) -> dict[str, Any]:
    """One line's worth of an archived run: number, date, devices, scenes, passed and failed tests."""
    row: dict[str, Any] = {"number": int(folder.name), "folder": str(folder), "date": "?", "devices": [],
                           "scenes": 0, "passed": 0, "failed": 0, "note": ""}
    path = folder / "run.json"
    if not path.is_file():
        path = folder / "run.invalid.json"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        row["note"] = f"run.json unreadable: {exc}"
        return row
    row["date"] = str(document.get("started_utc", "?"))
    row["devices"] = sorted((document.get("devices") or {}).keys())
    scenes = document.get("scenes") or []
    row["scenes"] = len({(s.get("device"), s.get("id")) for s in scenes})
    for scene in scenes:
        outcomes = [scene.get("outcome"), ((scene.get("correctness") or {}).get("outcome"))]
        for outcome in outcomes:
            if outcome == "passed":
                row["passed"] += 1
            elif outcome in ("failed", "error"):
                row["failed"] += 1
    return row


def format_runs(results: Path) -> list[str]:
    folders = run_folders(results)
    if not folders:
        return [f"no archived runs in {results / RUNS_DIR}"]
    latest = latest_folder(results)
    lines = [f"{'run':>5}  {'started (UTC)':<25}  {'devices':<20}  {'scenes':>6}  {'passed':>6}  {'failed':>6}"]
    for folder in folders:
        row = run_summary(folder)
        mark = " <- latest" if latest is not None and folder.resolve() == latest.resolve() else ""
        lines.append(f"{row['number']:>5}  {row['date']:<25}  {','.join(row['devices']) or '-':<20}  "
                     f"{row['scenes']:>6}  {row['passed']:>6}  {row['failed']:>6}{mark}"
                     + (f"  {row['note']}" if row["note"] else ""))
    return lines


def latest_folder(results: Path) -> Path | None:
    latest = results / LATEST
    if latest.is_symlink() or latest.is_dir():
        return latest.resolve()
    if latest.is_file():
        return (results / latest.read_text(encoding="utf-8").strip()).resolve()
    return None


def archive_refusal(results: Path, rootdir: Path, project_paths: tuple[Path, ...]) -> str | None:
    """Why the archive stays off for this results folder, or None. Its clean-up removes files of earlier runs
    from the results folder, which is only safe in a folder of artifacts: never in the project's root, nor
    in a folder holding its goldens, scenes, inventory or history."""
    folder = results.resolve()
    if folder == rootdir.resolve() or rootdir.resolve().is_relative_to(folder):
        return f"{results} is the project's root folder (or above it)"
    for path in project_paths:
        if path.resolve().is_relative_to(folder):
            return f"{results} holds {path}, which is no artifact"
    return None


class RunArchive:
    """Registered by the plugin in the process that writes run.json (not on an xdist worker), when
    --zbench-keep-runs is above 0."""

    def __init__(self, results: Path, keep: int) -> None:
        self.results = results
        self.keep = keep
        # At configure time, before any test (or xdist worker) writes a file.
        self.before = _snapshot(results)
        self.archived: Archived | None = None
        self.failure: str | None = None
        self.document: dict[str, Any] | None = None  # this session's run.json, as it wrote it

    def pytest_zbench_run_finished(self, config: pytest.Config, document: dict[str, Any], results_dir: Path) -> None:
        self.document = document

    @pytest.hookimpl(trylast=True)  # after run.json and report.html are written
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        try:
            self.archived = archive_run(self.results, self.before, self.keep, self.document)
        except OSError as exc:
            self.failure = f"the run archive in {self.results / RUNS_DIR}: {exc}"

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.failure:
            terminalreporter.write_line(f"not written: {self.failure}", red=True)
        elif self.archived is not None:
            a = self.archived
            pruned = f"; {len(a.pruned)} older run(s) pruned" if a.pruned else ""
            terminalreporter.write_line(f"run archived in {a.folder} ({a.files} files; {self.results / LATEST} "
                                        f"points at it){pruned}; `zbench runs` lists them")


def add_commands(commands: Any) -> None:
    runs = commands.add_parser("runs", help="list the archived runs of a results folder",
                               description="One line per archived session in RESULTS/runs/: its number, start, "
                                           "devices, scenes, and passed / failed tests; `latest` marked.")
    runs.add_argument("--results", default="zbench-results", metavar="DIR",
                      help="the results folder (default: zbench-results)")
    runs.set_defaults(run=_runs)


def _runs(args: argparse.Namespace) -> int:
    for line in format_runs(Path(args.results)):
        print(line)
    return 0
