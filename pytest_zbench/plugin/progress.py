"""Live progress of the scene being measured (scene, launch, frame), beside pytest's own output.

On a terminal it is a note at the end of pytest's current line of dots, cut to the room left on that line
and erased before pytest writes there again (ZbenchPlugin wraps pytest's report hooks for that), so pytest's
`[ 4%]` column stays where it belongs. The note is written past pytest's TerminalWriter, which would count
it as part of the line. Off a terminal (a CI log) it is a plain line every few seconds (lab/ci_output.py).

On a session longer than host/report/session_time.CLOCK_AFTER_S, the note and the lines lead with the time
elapsed and an estimate of what remains (SceneClock), from the scenes finished so far.

Under pytest-xdist the scenes run on the workers, whose output nobody sees: each worker writes its current
scene, launch and frame into a small file of a folder the controller handed it (workerinput), and a thread
of the controller shows one part per worker (`gw0 fill.alpha.x2 1/5 310/660 | gw1 ...`) on a terminal, or a
line per worker every few seconds off one.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ..files import write_bytes_atomic
from ..host.report.session_time import clock_text
from ..lab.ci_output import PROGRESS_INTERVAL_S, LineProgress

NOTE_INTERVAL_S = 0.25  # how often a terminal note is rewritten
WORKER_INTERVAL_S = 0.5  # how often a worker rewrites its progress file
MIN_NOTE = 12  # narrower than this, a note says nothing: none is shown
PROGRESS_DIR_KEY = "zbench_progress_dir"  # workerinput: the folder of the workers' progress files
# A scene test's node id (plugin/collection.py names them): its perf and golden tests are one scene to measure.
SCENE_TEST = re.compile(r"::(?:perf|golden)\[(?P<scene>.+)\]$")


class SceneClock:
    """The session's elapsed time and what remains, counted in scenes (a scene on a device; its perf and golden
    tests measure it once): the scene tests collected (in this process, or on the xdist controller from its
    workers' collections) against those reported. Plain tests are not counted."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.started = clock()
        self._scenes: set[str] = set()
        self._done: set[str] = set()

    def collected(self, nodeids: Iterable[str]) -> None:
        self._scenes.update(m["scene"] for m in map(SCENE_TEST.search, nodeids) if m)

    def finished(self, nodeid: str) -> None:
        match = SCENE_TEST.search(nodeid)
        if match and match["scene"] in self._scenes:
            self._done.add(match["scene"])

    def text(self) -> str | None:
        """`1m 40s elapsed, about 3m 20s left, 12 of 40 scenes done`, or None on a short session (session_time)."""
        return clock_text(self._clock() - self.started, len(self._done), len(self._scenes))


def _with_clock(text: str, clock: Callable[[], str | None] | None, sep: str) -> str:
    told = clock() if clock is not None else None
    return f"{told}{sep}{text}" if told else text


class TerminalNote:
    """A note at the end of the terminal's current line; `lock` is held by whoever writes to the terminal
    while a note may be shown (the plugin's report hook wrappers, the controller's thread)."""

    def __init__(self, reporter: Any, capture: Any) -> None:
        self._reporter = reporter
        self._capture = capture
        self._shown = 0
        self.lock = threading.RLock()

    def _write(self, text: str) -> None:
        writer = self._reporter._tw  # pytest's TerminalWriter; its file, past its count of the line's width
        handle = getattr(writer, "_file", None)
        if handle is None:
            return
        disabled = self._capture.global_and_fixture_disabled() if self._capture is not None else None
        with disabled or contextlib.nullcontext():  # fd capture would swallow it otherwise
            handle.write(text)
            handle.flush()

    def show(self, text: str) -> None:
        with self.lock:
            writer = self._reporter._tw
            room = writer.fullwidth - writer.width_of_current_line - 1
            text = (" " + text) if room >= MIN_NOTE else ""
            if len(text) > room:
                text = text[:room - 1] + "…"
            erase = "\b" * self._shown + " " * self._shown + "\b" * self._shown
            self._write(erase + text)
            self._shown = len(text)

    def clear(self) -> None:
        with self.lock:
            if self._shown:
                self._write("\b" * self._shown + " " * self._shown + "\b" * self._shown)
                self._shown = 0

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Around one of pytest's writes: the note erased first, and not rewritten until pytest is done."""
        with self.lock:
            self.clear()
            yield


def describe(scene_id: str, launch: int, launches: int, frame: int, of: int) -> str:
    return f"{scene_id} launch {launch + 1}/{launches} frame {frame}/{of}"


class _Throttle:
    """A progress sink's rate: at most one update every `interval_s`, but always a launch's first and last
    frame, so that a short launch is seen to start and end."""

    def __init__(self, interval_s: float, clock: Callable[[], float]) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._at = -1e9

    def due(self, frame: int, of: int) -> bool:
        now = self._clock()
        if now - self._at < self.interval_s and frame not in (0, of):
            return False
        self._at = now
        return True


class NoteProgress:
    """The in-process progress sink on a terminal: the note, rewritten at most every NOTE_INTERVAL_S."""

    def __init__(self, note: TerminalNote, clock: Callable[[], float] = time.monotonic,
                 session: Callable[[], str | None] | None = None) -> None:
        self.note = note
        self._throttle = _Throttle(NOTE_INTERVAL_S, clock)
        self._session = session  # the elapsed and remaining time (SceneClock.text), first: a cut note keeps it

    def __call__(self, scene_id: str, launch: int, launches: int, frame: int, of: int) -> None:
        if not self._throttle.due(frame, of):
            return
        self.note.show(f"[{_with_clock(describe(scene_id, launch, launches, frame, of), self._session, ' | ')}]")

    def clear(self) -> None:
        self.note.clear()


class WorkerProgressFile:
    """An xdist worker's progress sink: its current scene in `<folder>/<worker>.json`, replaced atomically
    (the controller never reads half a file), removed when the test is reported."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self._throttle = _Throttle(WORKER_INTERVAL_S, clock)

    def __call__(self, scene_id: str, launch: int, launches: int, frame: int, of: int) -> None:
        if not self._throttle.due(frame, of):
            return
        state = {"scene": scene_id, "launch": launch, "launches": launches, "frame": frame, "of": of}
        try:
            write_bytes_atomic(self.path, json.dumps(state).encode("utf-8"), durable=False,
                               make_folder=False)
        except OSError:
            pass  # progress is a courtesy: a folder gone (the controller ended) must not fail a measurement

    def clear(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink()


def read_workers(folder: Path) -> dict[str, dict[str, Any]]:
    """Each worker's current scene (worker id -> state), from the files of the progress folder."""
    states: dict[str, dict[str, Any]] = {}
    try:
        paths = sorted(folder.glob("gw*.json"))
    except OSError:
        return states
    for path in paths:
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
            states[path.stem] = {k: state[k] for k in ("scene", "launch", "launches", "frame", "of")}
        except (OSError, ValueError, KeyError, TypeError):
            continue  # replaced or removed while read: the next round has it
    return states


def worker_note(states: dict[str, dict[str, Any]]) -> str:
    """One terminal note for every worker: `gw0 fill.alpha.x2 1/5 310/660 | gw1 text.labels 2/5 40/660`."""
    return " | ".join(f"{worker} {s['scene']} {s['launch'] + 1}/{s['launches']} {s['frame']}/{s['of']}"
                      for worker, s in sorted(states.items()))


class ControllerProgress:
    """The xdist controller's view of its workers: a thread reading their progress files."""

    def __init__(self, note: TerminalNote | None, write_line: Callable[[str], None],
                 session: Callable[[], str | None] | None = None) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="zbench-progress-"))
        self.note = note
        self._write_line = write_line
        self._session = session  # the elapsed and remaining time (SceneClock.text)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="zbench-progress", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        interval = NOTE_INTERVAL_S * 2 if self.note is not None else PROGRESS_INTERVAL_S
        started = time.monotonic()
        shown: dict[str, dict[str, Any]] = {}
        while not self._stop.wait(interval):
            states = read_workers(self.folder)
            if self.note is not None:
                if states:
                    self.note.show(f"[{_with_clock(worker_note(states), self._session, ' | ')}]")
                else:
                    self.note.clear()
                continue
            for worker, state in sorted(states.items()):
                if state != shown.get(worker):
                    told = self._session() if self._session is not None else None
                    self._write_line(f"zbench [{worker}]: {describe(**_args(state))} "
                                     f"({told or f'{time.monotonic() - started:.0f} s into the session'})")
            shown = states

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        if self.note is not None:
            self.note.clear()
        shutil.rmtree(self.folder, ignore_errors=True)


def _args(state: dict[str, Any]) -> dict[str, Any]:
    return {"scene_id": state["scene"], "launch": state["launch"], "launches": state["launches"],
            "frame": state["frame"], "of": state["of"]}


def in_process_sink(reporter: Any, capture: Any,
                    session: Callable[[], str | None] | None = None) -> NoteProgress | LineProgress:
    """The progress sink of a session without xdist: the note on a terminal, else plain lines; both with the
    session's elapsed and remaining time once it is long (`session`: SceneClock.text)."""
    if reporter.isatty:
        return NoteProgress(TerminalNote(reporter, capture), session=session)

    def write_line(line: str) -> None:
        # On a line of its own, below the dots so far; pytest's dots continue under it.
        midline = reporter._tw.width_of_current_line
        with (capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext()):
            reporter.write(("\n" if midline else "") + line + "\n", flush=True)

    return LineProgress(write_line, session=session)
