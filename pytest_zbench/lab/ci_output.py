"""What the plugin prints when nobody watches a terminal: plain progress lines and GitHub annotations.

On a terminal the progress note is rewritten in place with backspaces; in a CI log each of those would be a
fragment of garbage, so there progress is a whole line every few seconds. Under GitHub Actions each failed
scene test also becomes an `::error` annotation located at its scene file, so the failure shows in the pull
request's diff and the run's overview. Exit codes do not change: this only prints.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .github import annotation

PROGRESS_INTERVAL_S = 5.0
# GitHub shows at most 10 error annotations per step; past that, one notice says how many more failed.
MAX_ANNOTATIONS = 10
MAX_MESSAGE_CHARS = 4000
# pytest-xdist puts the worker's name and interpreter on a line above a worker's failure text.
XDIST_WORKER_HEADER = re.compile(r"\A\[gw\d+\] [^\n]*\n")


class LineProgress:
    """A progress sink (scene, launch, launches, frame, frames) that writes one plain line at the first
    call and then at most every `interval_s` seconds."""

    def __init__(self, write_line: Callable[[str], None], *, interval_s: float = PROGRESS_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic,
                 session: Callable[[], str | None] | None = None) -> None:
        self._write_line = write_line
        self._session = session  # the elapsed and remaining time of a long session, in place of the seconds
        self._interval_s = interval_s
        self._clock = clock
        self._started = clock()
        self._last: float | None = None

    def __call__(self, scene_id: str, launch: int, launches: int, frame: int, of: int) -> None:
        now = self._clock()
        if self._last is not None and now - self._last < self._interval_s:
            return
        self._last = now
        told = self._session() if self._session is not None else None
        self._write_line(f"zbench: {scene_id} launch {launch + 1}/{launches} frame {frame}/{of} "
                         f"({told or f'{now - self._started:.0f} s into the session'})")


@dataclass
class FailedSceneAnnotations:
    """Failed scene tests as GitHub `::error` annotations at their scene files."""

    failures: list[tuple[str, str, str]] = field(default_factory=list)  # (scene file, test name, message)

    def add(self, scene_file: str, test_name: str, when: str, message: str) -> None:
        what = "failed" if when == "call" else f"error in {when}"
        self.failures.append((scene_file, f"{test_name} {what}", message))

    def lines(self) -> list[str]:
        out = [annotation("error", _clip(message), file=path, title=title)
               for path, title, message in self.failures[:MAX_ANNOTATIONS]]
        left = len(self.failures) - MAX_ANNOTATIONS
        if left > 0:
            out.append(annotation("notice", f"{left} more scene test(s) failed; the job summary and the "
                                            "JUnit report list every failure", title="zbench"))
        return out


def _clip(message: str) -> str:
    message = XDIST_WORKER_HEADER.sub("", message).strip()
    return message if len(message) <= MAX_MESSAGE_CHARS else message[:MAX_MESSAGE_CHARS - 1] + "…"
