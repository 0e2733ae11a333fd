"""The plugin's session object: settings, the inventory and the host session, and the hooks that need them.

`pytest_configure` (plugin/options.py) creates it and registers it with pytest's plugin manager (pytest's
LogXML pattern), so its hooks exist only in a configured session. Each hook is a line or two into the module
of its role: collection, terminal, xdist; the host session (host/host_session.py) does the work.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import UsageError
from ..inventory import load_inventory
from ..settings import Settings
from .collection import collect_scene_file, deselect_perf, select_first_look
from .stash import MEASUREMENT_KEY, RECORDED_KEY
from .terminal import write_summary

if TYPE_CHECKING:
    from ..host.devices.prepare import Preparation
    from ..host.host_session import HostSession
    from .progress import ControllerProgress, TerminalNote


class ZbenchPlugin:
    """One per pytest session (and per xdist worker)."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.inventory = load_inventory(settings.inventory, required=settings.inventory_named)
        from ..transports import require_client_library

        for name in settings.devices:
            # An unknown device, or one whose transport's client is not installed, is a usage error now, in
            # one line, not a failure (and a traceback) per test.
            require_client_library(self.inventory.get(name))
        if settings.ab:
            from ..host.measure.ab_launches import resolve_b_runner

            resolve_b_runner(settings.ab, self.inventory)  # likewise a bad --zbench-ab
        if settings.baseline_file is not None:
            from ..regression.baseline import BaselineFileError, read_run_file

            try:  # and a --zbench-baseline run.json that cannot be judged against
                read_run_file(settings.baseline_file)
            except BaselineFileError as exc:
                raise UsageError(f"--zbench-baseline: {exc}") from None
        self.is_worker = hasattr(config, "workerinput")
        from ..scenes import CorpusIndex

        self.corpus = CorpusIndex()  # the scene files collected so far
        # Created by the first test that needs it: a session that measures nothing opens no device, reads no
        # git state and writes no run.json.
        self.host: HostSession | None = None
        self.schema_errors: list[str] = []
        self.run_document: dict[str, Any] | None = None  # run.json as written (the controller, at the end)
        self.artifact_failures: list[str] = []  # artifacts that could not be written (README, Reliability)
        self._sink: Any = None  # the progress sink of this process's measurements (plugin/progress.py)
        self._note: TerminalNote | None = None  # the terminal note pytest's report hooks erase first
        self._workers_progress: ControllerProgress | None = None  # xdist controller: its workers' progress
        # Devices this process prepared (the xdist controller, or the only process): restored at the end
        self.preparations: dict[str, Preparation] = {}
        self._previous_sigterm: Any = None
        self.keyword_selected_nothing: str | None = None  # the -k expression, when it deselected every test
        self.archive_off: str | None = None  # why the session keeps no run archive (plugin/options.py), or None
        self.started = time.monotonic()  # the session's start, for --zbench-first-look's closing line
        from .progress import SceneClock

        self.clock = SceneClock()  # elapsed and remaining time in the progress (this process, or the controller)

    def open_host(self) -> HostSession:
        if self.host is None:
            # The device's probe first: it runs while the host's modules import (host/devices/device.py
            # start_probes), instead of after them.
            from ..host.devices.device import start_probes

            probing = start_probes(self.settings, self.inventory)
            from ..host.host_session import HostSession

            run: dict[str, str] = {}
            if self.is_worker:
                from .xdist import worker_run

                run = worker_run(self.config)
            self.host = HostSession(self.settings, self.inventory, self.config.rootpath,
                                    run_id=run.get("run_id"), started_utc=run.get("started_utc"), probing=probing,
                                    archive_off=self.archive_off)
        return self.host

    def progress_sink(self) -> Any:
        """Where a measurement reports its scene, launch and frame: a file the xdist controller reads (on a
        worker), the terminal note, or plain lines off a terminal."""
        if self._sink is None:
            from . import progress

            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            capture = self.config.pluginmanager.get_plugin("capturemanager")
            if self.is_worker:
                folder = getattr(self.config, "workerinput", {}).get(progress.PROGRESS_DIR_KEY)
                worker = getattr(self.config, "workerinput", {}).get("workerid", "gw")
                if folder:
                    self._sink = progress.WorkerProgressFile(Path(folder) / f"{worker}.json")
            elif reporter is not None:
                self._sink = progress.in_process_sink(reporter, capture, self.clock.text)
                self._note = getattr(self._sink, "note", None)
        return self._sink

    def _terminal(self) -> Any:
        """Held around pytest's own writes to the current line: the progress note is erased first."""
        import contextlib

        return self._note.held() if self._note is not None else contextlib.nullcontext()

    def close(self) -> None:
        if self._workers_progress is not None:
            self._workers_progress.close()
            self._workers_progress = None
        try:
            self.restore_devices()  # a session interrupted before pytest_sessionfinish
        finally:
            if self._previous_sigterm is not None:
                import signal

                signal.signal(signal.SIGTERM, self._previous_sigterm)
                self._previous_sigterm = None
            if self.host is not None:
                self.host.close()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """--zbench-check-runner: check every device's runner before anything is collected or measured (on the
        xdist controller, before its workers start); a failing check ends the session. Then the devices'
        `prepare` steps, once per device in this process (never on a worker)."""
        if self.is_worker:
            return
        # SIGTERM (a CI job cancelled, a timeout) stops the session as Ctrl-C does, so that run.json and the
        # report of the scenes measured so far are written, marked interrupted.
        self._interrupt_on_sigterm()
        if self.settings.check_runner:
            self._check_runners()
        if not self.config.option.collectonly:
            self._check_history()
            self.prepare_devices()

    def _check_history(self) -> None:
        """A PostgreSQL history that refuses this session for good (a wrong password, user or database) ends it
        before anything is measured, rather than after every scene was; a server that cannot be reached now is
        tried again when the first scene is recorded (regression/store.py retries it)."""
        settings = self.settings
        if settings.goldens_only or settings.history.kind != "postgresql":
            return
        from ..regression.history import History, HistoryError

        try:
            History(settings.history, connection_retries=0).close()
        except HistoryError as exc:
            if exc.permanent:
                raise pytest.UsageError(f"{exc}; nothing was measured") from None

    def prepare_devices(self) -> None:
        """Run each session device's `prepare` steps (host/devices/prepare.py). SIGTERM is then read as an
        interruption, as Ctrl-C is, so that pytest_sessionfinish (or close) restores the devices."""
        from ..host.devices.prepare import Preparation, pending_restore, prepare_on, restore_on, save_restore_record

        specs = [self.inventory.get(name) for name in self.settings.devices]
        specs = [spec for spec in specs if spec.prepare is not None]
        if not specs:
            return
        self._interrupt_on_sigterm()
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        record = self.open_host().record
        folder = self._restore_folder()
        for spec in specs:
            assert spec.prepare is not None
            left = pending_restore(folder, spec)
            if left is not None:  # a session killed before its restore (host/devices/prepare.py, restore records)
                restore_on(spec, left)
                save_restore_record(folder, left)
                if reporter is not None:
                    done = [f"{r['name']} ({'undone' if r['restored'] else r['restore_reason']})" for r in left.steps]
                    reporter.write_line(f"zbench: {spec.name} was left prepared by a session that did not end; "
                                        f"restored first: {', '.join(done)}")
            preparation = self.preparations[spec.name] = Preparation(spec.name, spec.prepare)
            record.prepared[spec.name] = preparation.steps  # one list: the restore's outcome shows in run.json
            try:
                prepare_on(spec, preparation)
            finally:
                save_restore_record(folder, preparation)
            if reporter is not None:
                reporter.write_line(f"zbench: prepared {spec.name}: {preparation.summary()}")

    def _restore_folder(self) -> Path:
        """Where the restore records are kept: beside the lease files, which every session of the devices
        shares on this host."""
        from ..host.devices.health import default_lease_dir

        return self.settings.lease_dir or default_lease_dir()

    def restore_devices(self) -> None:
        """Undo every prepared device's steps (once; later calls do nothing)."""
        from ..host.devices.prepare import restore_on, save_restore_record

        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        for name, preparation in self.preparations.items():
            if preparation.restored:
                continue
            restore_on(self.inventory.get(name), preparation)
            save_restore_record(self._restore_folder(), preparation)  # kept for the next session if not undone
            undone = [r for r in preparation.steps if r["restored"] is not None]
            if reporter is not None and undone:
                failed = [f"{r['name']} ({r['restore_reason']})" for r in undone if not r["restored"]]
                reporter.write_line(f"zbench: restored {name}" + (f"; not restored: {', '.join(failed)}"
                                                                   if failed else ""))

    def _interrupt_on_sigterm(self) -> None:
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread() or self._previous_sigterm is not None:
            return

        def interrupt(signum: int, frame: Any) -> None:
            raise KeyboardInterrupt("SIGTERM")

        previous = signal.signal(signal.SIGTERM, interrupt)
        self._previous_sigterm = signal.SIG_DFL if previous is None else previous  # None: set outside Python

    def _check_runners(self) -> None:
        from ..conformance.session import check_session_runners

        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        outcome = check_session_runners(self.settings, self.inventory,
                                        reporter.write_line if reporter is not None else print)
        self.open_host().record.check_runner = outcome.devices
        if outcome.failed:
            pytest.exit(outcome.message(), returncode=pytest.ExitCode.TESTS_FAILED)

    # -- collection

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        return collect_scene_file(self.settings, file_path, parent)

    @pytest.hookimpl(trylast=True)  # after -k and -m have chosen: the count deselected is then the perf tests'
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if not items and config.option.keyword:
            self.keyword_selected_nothing = config.option.keyword
        deselect_perf(config, self.settings, items)
        select_first_look(config, self.settings, items)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not self.is_worker:
            self.clock.collected(item.nodeid for item in session.items)

    # -- reporting

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[
            None, pytest.TestReport, pytest.TestReport]:
        """A measured scene's entry goes into run.json with the perf test's outcome (or, when only its golden
        test ran, with outcome not_run)."""
        report = yield
        measurement = item.stash.get(MEASUREMENT_KEY, None)
        if measurement is None or item.stash.get(RECORDED_KEY, False):
            return report
        if call.when == "call" or (call.when == "setup" and report.outcome != "passed"):
            host = self.open_host()
            host.entry(measurement)
            if item.get_closest_marker("zbench_perf") is not None:
                host.set_outcome(measurement, "skipped" if report.skipped else report.outcome)
            item.stash[RECORDED_KEY] = True
        return report

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None, None, None]:
        if self.is_worker and report.when == "call" and self._sink is not None:
            self._sink.clear()  # this worker's scene is done: the controller stops showing it
        if not self.is_worker and (report.when == "call" or (report.when == "setup" and not report.passed)):
            self.clock.finished(report.nodeid)  # a worker's reports arrive here on the controller too
        with self._terminal():
            return (yield)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> Generator[None, None, None]:
        with self._terminal():  # pytest writes its `[ 4%]` here
            return (yield)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self._workers_progress is not None:
            self._workers_progress.close()
            self._workers_progress = None
        self.restore_devices()  # before run.json is written: it records the restore
        if self.host is None:
            return
        if self.is_worker:
            from .xdist import send_worker_output

            send_worker_output(session.config, self.host.record)
            return
        from ..host.run_record import write_run

        self.host.record.interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
        artifacts = write_run(self.host.record, self.settings.devices, self.settings.results)
        self.schema_errors = artifacts.schema_errors
        self.run_document = artifacts.document
        self.artifact_failures = [*self.host.record.artifact_failures, *artifacts.failures]
        if artifacts.document is not None:
            self.config.hook.pytest_zbench_run_finished(config=self.config, document=artifacts.document,
                                                        results_dir=self.settings.results)
        if self.schema_errors or self.artifact_failures:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if self.keyword_selected_nothing is not None:
            # pytest says only "N deselected": say what a scene test is called and how to list them.
            terminalreporter.write_line(
                f"zbench: -k {self.keyword_selected_nothing!r} selected no test; scene tests are named "
                "perf[SCENE-DEVICE] and golden[SCENE-DEVICE], e.g. perf[fill.opaque.x1-local]: "
                "`pytest --collect-only -q` lists them")
        write_summary(terminalreporter, self)

    # -- pytest-xdist (these hooks exist only when it is installed)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        from .xdist import make_scheduler

        return make_scheduler(config, log, self.settings.devices, by_device=self.settings.budget_min is not None)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        from .progress import PROGRESS_DIR_KEY, ControllerProgress, TerminalNote
        from .xdist import send_run

        send_run(node, self.open_host().record)
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if self._workers_progress is None and reporter is not None:
            self._note = TerminalNote(reporter, None) if reporter.isatty else None  # no capture on the controller

            def write_line(line: str) -> None:
                with self._terminal():
                    reporter.write(("\n" if reporter._tw.width_of_current_line else "") + line + "\n", flush=True)

            self._workers_progress = ControllerProgress(self._note, write_line, self.clock.text)
        if self._workers_progress is not None:
            node.workerinput[PROGRESS_DIR_KEY] = str(self._workers_progress.folder)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.clock.collected(ids)  # every worker collects the same tests: the clock counts each scene once

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        from .xdist import merge_worker_output

        merge_worker_output(node, self.open_host().record)
