"""The terminal: a progress note while a scene is measured, and the zbench section of the summary (the
table of every scene, the goldens written, where the artifacts are)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..host.measure import ProgressSink
    from .session import ZbenchPlugin


def terminal_progress(config: pytest.Config) -> ProgressSink | None:
    """A progress note (scene, launch, frame) after the test's dot, erased again, on a terminal; off one (a CI
    log), a plain line every few seconds. None under xdist workers, whose output nobody sees."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None or hasattr(config, "workerinput"):
        return None
    shown: dict[str, Any] = {"text": "", "at": 0.0}

    def write(text: str) -> None:
        with capture.global_and_fixture_disabled():  # fd capture would swallow it otherwise
            reporter.write(text, flush=True)

    if not reporter.isatty:  # a CI log: whole lines every few seconds, no backspaces (lab/ci_output.py)
        from ..lab.ci_output import LineProgress

        def write_line(line: str) -> None:
            # On a line of its own, below the dots so far; pytest's dots continue under it.
            midline = getattr(reporter, "_width_of_current_line", 1)
            write(("\n" if midline else "") + line + "\n")

        return LineProgress(write_line)

    def progress(scene_id: str, launch: int, launches: int, frame: int, of: int) -> None:
        now = time.monotonic()
        if now - shown["at"] < 0.25 and frame not in (0, of):
            return
        text = f" [{scene_id} launch {launch + 1}/{launches} frame {frame}/{of}]"
        width = len(shown["text"])
        write("\b" * width + " " * width + "\b" * width + text)
        shown["text"], shown["at"] = text, now
        if frame == of and launch + 1 == launches:
            write("\b" * len(text) + " " * len(text) + "\b" * len(text))
            shown["text"] = ""

    return progress


def write_summary(terminalreporter: Any, plugin: ZbenchPlugin) -> None:
    """The zbench section: nothing when this process measured nothing (an xdist worker, no scene run)."""
    host = plugin.host
    if plugin.is_worker or host is None or not host.record.scenes:
        return
    from ..host.summary_table import summary_lines

    terminalreporter.write_sep("-", "zbench")
    for line in summary_lines(host.record.scenes, host.record.devices):
        terminalreporter.write_line(line)
    _write_goldens(terminalreporter, plugin)
    if plugin.schema_errors:
        terminalreporter.write_line("run.json broke its schema, written as run.invalid.json:", red=True)
        for error in plugin.schema_errors[:10]:
            terminalreporter.write_line(f"  {error}", red=True)
    else:
        results = plugin.settings.results
        terminalreporter.write_line(f"artifacts: {results / 'run.json'}, report: {results / 'report.html'}")


def _write_goldens(terminalreporter: Any, plugin: ZbenchPlugin) -> None:
    """What --zbench-update-goldens wrote, and goldens that no scene uses any more."""
    settings, host = plugin.settings, plugin.host
    if settings.update_goldens is None or host is None:
        return
    from ..host.goldens import unused_goldens, written_goldens

    written = written_goldens(host.record.scenes)
    terminalreporter.write_line(f"goldens written ({settings.update_goldens}): {len(written)}")
    for written_path in written:
        terminalreporter.write_line(f"  {written_path}")
    unused = unused_goldens(settings, plugin.inventory, host.record.devices)
    if unused:
        terminalreporter.write_line(f"goldens no scene uses any more ({len(unused)}); delete them if that is right:")
        for path in unused:
            terminalreporter.write_line(f"  {path}")


class GithubAnnotations:
    """Under GitHub Actions, failed scene tests become `::error` annotations at their scene files, printed
    at the end of the session (lab/ci_output.py); the exit status does not change."""

    def __init__(self) -> None:
        from ..lab.ci_output import FailedSceneAnnotations

        self.failures = FailedSceneAnnotations()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed and ("zbench_perf" in report.keywords or "zbench_golden" in report.keywords):
            self.failures.add(report.location[0], report.location[2], report.when, report.longreprtext)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for line in self.failures.lines():
            terminalreporter.write_line(line)
