"""The terminal: the zbench section of the summary (the table of every scene, the goldens written, where the
artifacts are) and GitHub annotations. The live progress is plugin/progress.py."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .stash import ActiveZbench


def write_summary(terminalreporter: Any, plugin: ActiveZbench) -> None:
    """The zbench section: nothing when this process measured nothing (an xdist worker, no scene run)."""
    host = plugin.host
    if plugin.is_worker or host is None or not host.record.scenes:
        return
    from ..host.report.terminal_table import DEFAULT_WIDTH, summary_lines

    terminalreporter.write_sep("-", "zbench")
    writer = terminalreporter._tw  # pytest's TerminalWriter: its width and colour codes
    width = writer.fullwidth if terminalreporter.isatty else DEFAULT_WIDTH  # a CI log has no width of its own

    def markup(text: str, style: str) -> str:
        return writer.markup(text, **{style: True}) if style else text

    try:  # the table on its own: a value it cannot show must not hide the lines below it
        # Goldens only: one frame's timing is no measurement, so no table of it (docs/goldens.md).
        lines = [] if plugin.settings.goldens_only else summary_lines(host.record.scenes, host.record.devices, width=width, markup=markup)
    except Exception as exc:  # noqa: BLE001
        lines = []
        terminalreporter.write_line(f"the summary table could not be drawn: {type(exc).__name__}: {exc}; "
                                    "run.json has every number", red=True)
    for line in lines:
        terminalreporter.write_line(line)
    from ..host.report.sustained import summary_line

    for scene in host.record.scenes:
        if scene.get("sustained"):
            terminalreporter.write_line(summary_line(scene["id"], scene["device"], scene["sustained"]))
    from ..host.devices.prepare import cooldown_lines

    for line in cooldown_lines(host.record.scenes):
        terminalreporter.write_line(line, yellow=True)
    # The corpus verdicts as run.json holds them (computed once, when it was assembled; none in a goldens-only
    # run); without a document (the run record could not be assembled, reported below) they are computed here.
    document = plugin.run_document or host.record.corpus()
    _write_analysis(terminalreporter, document)
    _write_goldens(terminalreporter, plugin)
    if plugin.settings.first_look:
        terminalreporter.write_line(first_look_summary(plugin))
    for failure in plugin.artifact_failures:
        terminalreporter.write_line(f"not written: {failure}", red=True)
    if plugin.schema_errors:
        terminalreporter.write_line("run.json broke its schema, written as run.invalid.json:", red=True)
        for error in plugin.schema_errors[:10]:
            terminalreporter.write_line(f"  {error}", red=True)
    else:
        results = plugin.settings.results
        terminalreporter.write_line(f"artifacts: {results / 'run.json'}, report: {results / 'report.html'}")
        terminalreporter.write_line("goldens only: no perf test, nothing recorded in the history"
                                    if plugin.settings.goldens_only else f"history: {plugin.settings.history}")


def first_look_summary(plugin: ActiveZbench) -> str:
    """--zbench-first-look's closing line: the scenes it measured of the corpus, its time, and the whole suite's
    under --zbench-quick estimated from its own launches (host/report/session_time.py)."""
    import time

    from ..host.report.session_time import Frames, first_look_line, quick_estimate_s
    from ..scenes import first_look_cases, load_corpus
    from ..settings import QUICK

    assert plugin.host is not None
    settings = plugin.settings
    cases, _ = load_corpus(settings.scenes_dir)  # the whole corpus, whatever -k chose: the suite estimated
    adaptive = sum(1 for case in cases if case.adaptive)
    session_s = time.monotonic() - plugin.started
    entries = plugin.host.record.scenes
    estimate = quick_estimate_s(entries, session_s, len(cases) - adaptive, adaptive, len(settings.devices),
                                Frames(settings.runs, settings.warmup, settings.frames),
                                Frames(QUICK["runs"], QUICK["warmup"], QUICK["frames"]))
    return first_look_line(len({entry["id"] for entry in entries}), len(first_look_cases(cases)), len(cases),
                           session_s, estimate)


def _write_analysis(terminalreporter: Any, document: dict[str, Any]) -> None:
    """The corpus analyses: one summary line (host/report/terminal_table.py analysis_line); with -v each
    sweep's and pair's own line as well."""
    from ..host.report.terminal_table import analysis_line
    from ..host.verdicts.differentials import terminal_lines as differential_lines
    from ..host.verdicts.isolation import terminal_lines as isolation_lines

    isolation, differentials = document.get("isolation", []), document.get("differentials", [])
    line = analysis_line(isolation, differentials)
    if line is None:
        return
    terminalreporter.write_line(line, yellow=any(i.get("verdict") == "not_scaling" for i in isolation))
    if terminalreporter.config.option.verbose > 0:
        for detail in isolation_lines(isolation) + differential_lines(differentials):
            terminalreporter.write_line(f"  {detail}")


def _write_goldens(terminalreporter: Any, plugin: ActiveZbench) -> None:
    """What --zbench-update-goldens wrote, and goldens that no scene uses any more."""
    settings, host = plugin.settings, plugin.host
    if settings.update_goldens is None or host is None:
        return
    from ..host.verdicts.golden_test import unused_goldens, written_goldens

    written = written_goldens(host.record.scenes)  # relative to the results folder, as in run.json
    terminalreporter.write_line(f"goldens written ({settings.update_goldens}): {len(written)}")
    for written_path in written:
        terminalreporter.write_line(f"  {os.path.normpath(settings.results / written_path)}")
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
