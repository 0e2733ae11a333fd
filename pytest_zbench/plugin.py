"""The pytest entry point: options, collection of scene files, fixtures, reporting.

Only this module knows pytest. Everything it calls takes plain values (Settings, SceneCase, Device, ...).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from .errors import DeviceError, DeviceQuarantined, SceneError, UsageError
from .settings import BASELINE_KEYWORDS, OPTIONS, Option, Settings, build_settings

SESSION_KEY = pytest.StashKey["ZbenchState"]()
CASE_KEY = pytest.StashKey[Any]()  # SceneCase of a collected scene test
DEVICE_KEY = pytest.StashKey[str]()
MEASUREMENT_KEY = pytest.StashKey[Any]()  # SceneMeasurement, once the test has measured
RECORDED_KEY = pytest.StashKey[bool]()


# ------------------------------------------------------------------------------------------ options


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("zbench", "render benchmarks and golden images (pytest-zbench)")
    for option in OPTIONS:
        group.addoption(option.flag, dest=_dest(option), default=None, metavar=option.name.upper(), help=option.help)
        parser.addini(option.ini, help=option.help, default=None)
    group.addoption(
        "--zbench-quick", action="store_true", default=False,
        help="a first look: 2 launches of 5 warmup + 30 measured frames unless given explicitly (default: off)",
    )
    parser.addini("zbench_quick", type="bool", default=False, help="like --zbench-quick (default: false)")
    group.addoption(
        "--zbench-calibrate", action="store_true", default=False,
        help="record the launches as A/A calibration runs in the history and gate nothing; `zbench calibrate` "
             "passes it (default: off)",
    )
    group.addoption(
        "--zbench-update-goldens", nargs="?", const="missing", default=None, metavar="missing|failed|all",
        help="write goldens from trusted captures: missing ones (the value when none is given), failing ones "
             "too, or all (default: no writing)",
    )


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def _dest(option: Option) -> str:
    return "zbench_" + option.name


class ZbenchState:
    """Session state in config.stash: settings, the host session (lazy), the terminal progress line."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        from .inventory import load_inventory

        self.config = config
        self.settings = settings
        self.inventory = load_inventory(settings.inventory)
        for name in settings.devices:
            self.inventory.get(name)  # an unknown device is a usage error now, not a failure per test
        if settings.ab:
            from .host.ab import resolve_b_runner

            resolve_b_runner(settings.ab, self.inventory)  # likewise a bad --zbench-ab
        self.is_worker = hasattr(config, "workerinput")
        self._host: Any = None
        self.schema_errors: list[str] = []

    @property
    def host(self) -> Any:
        if self._host is None:
            from .host.session import HostSession

            run = getattr(self.config, "workerinput", {}).get("zbench_run", {})
            self._host = HostSession(self.settings, self.inventory, self.config.rootpath,
                                     run_id=run.get("run_id"), started_utc=run.get("started_utc"))
        return self._host


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "zbench_scene(scene_id): the scene the `scene` fixture gives a plain test")
    config.addinivalue_line("markers", "zbench_device(name): the device the `device` fixture gives a plain test")
    config.addinivalue_line("markers", "zbench_perf: a perf test generated from a scene file")
    config.addinivalue_line("markers", "zbench_golden: a golden-image test generated from a scene file")

    def get(option: Option) -> Any:
        value = config.getoption(_dest(option))
        if value is not None:
            if option.name in ("inventory", "scenes_dir", "goldens_dir", "results", "history", "lease_dir") or (
                    option.name == "baseline" and value not in BASELINE_KEYWORDS):
                value = str(config.invocation_params.dir / value)  # command-line paths are relative to cwd
            return value
        return config.getini(option.ini)

    quick = bool(config.getoption("zbench_quick") or config.getini("zbench_quick"))
    try:
        settings = build_settings(get, config.rootpath, quick=quick,
                                  update_goldens=config.getoption("zbench_update_goldens"),
                                  calibrate=bool(config.getoption("zbench_calibrate")))
        config.stash[SESSION_KEY] = ZbenchState(config, settings)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(SESSION_KEY, None)
    if state is not None and state._host is not None:
        state.host.close()


# ---------------------------------------------------------------------------------------- collection


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    state = parent.config.stash.get(SESSION_KEY, None)
    if state is None or file_path.suffix not in (".yaml", ".yml"):
        return None
    if file_path.parent.resolve() != state.settings.scenes_dir.resolve():
        return None
    return SceneFile.from_parent(parent, path=file_path)


class SceneFile(pytest.File):
    """One scene file: a perf test per scene case and device."""

    def collect(self) -> Iterator[pytest.Item]:
        from .scenes import load_scene_file

        state = self.config.stash[SESSION_KEY]
        for case in load_scene_file(self.path):
            for device in state.settings.devices:
                for kind, test, marker in (("perf", perf_test, pytest.mark.zbench_perf),
                                           ("golden", golden_test, pytest.mark.zbench_golden)):
                    item = SceneTest.from_parent(self, name=f"{kind}[{case.id}-{device}]", callobj=test)
                    item.stash[CASE_KEY] = case
                    item.stash[DEVICE_KEY] = device
                    item.add_marker(marker)
                    yield item

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, SceneError):
            return f"{excinfo.value}\nFix the scene file; the other scene files were still collected."
        return super().repr_failure(excinfo)


class SceneTest(pytest.Function):
    """A test generated from a scene; reports the scene file as its location."""

    def reportinfo(self) -> tuple[Path, int | None, str]:
        # A line, not None: pytest reports a skip raised in a fixture (a quarantined device) at it.
        return self.path, 0, self.name


def perf_test(device: Any, scene: "Scene") -> None:
    """The generated perf test: measure the scene on the device and judge the measurement."""
    measurement = scene.measure(device)
    scene.check_perf(measurement)


def golden_test(device: Any, scene: "Scene", golden: "Golden") -> None:
    """The generated golden test: the scene's captures (from the same launches) against its goldens."""
    golden.check(scene.measure(device))


# ------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def zbench_session(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The host session: devices opened on first use and closed at the end of the session."""
    state = request.config.stash[SESSION_KEY]
    state.host.progress = _terminal_progress(request.config)
    yield state.host
    state.host.close()


@pytest.fixture
def device(request: pytest.FixtureRequest, zbench_session: Any) -> Any:
    """The device this test runs on, opened and probed once per session.

    Example::

        @pytest.mark.zbench_device("pi3b")
        def test_runner_has_timer(device):
            assert "timer_query" in device.probe().backends["gles2"].timer_sources
    """
    name = request.node.stash.get(DEVICE_KEY, None)
    if name is None:
        marker = request.node.get_closest_marker("zbench_device")
        name = marker.args[0] if marker else zbench_session.settings.devices[0]
    try:
        return zbench_session.device(name)
    except DeviceQuarantined as exc:
        pytest.skip(str(exc))
    except DeviceError as exc:
        pytest.fail(f"{exc}\nThe other tests of device {name} are skipped in this session.", pytrace=False)


@pytest.fixture
def scene(request: pytest.FixtureRequest, zbench_session: Any) -> "Scene":
    """The scene of this test, with `measure(device)` and the perf checks.

    Example::

        @pytest.mark.zbench_scene("fill.alpha.x4")
        def test_alpha_fill_has_no_severe_jank(device, scene):
            measurement = scene.measure(device)
            assert measurement.summary.severe_jank == 0
    """
    case = request.node.stash.get(CASE_KEY, None)
    if case is None:
        marker = request.node.get_closest_marker("zbench_scene")
        if marker is None:
            raise pytest.UsageError(f"{request.node.nodeid}: the `scene` fixture needs @pytest.mark.zbench_scene(ID)")
        case = _find_case(zbench_session.settings.scenes_dir, marker.args[0])
        request.node.stash[CASE_KEY] = case
    return Scene(case, zbench_session, request.node)


def _find_case(scenes_dir: Path, scene_id: str) -> Any:
    from .scenes import load_corpus

    cases, errors = load_corpus(scenes_dir)
    for case in cases:
        if case.id == scene_id:
            return case
    hint = f" ({len(errors)} scene file(s) failed to load)" if errors else ""
    raise pytest.UsageError(f"no scene {scene_id!r} in {scenes_dir}{hint}")


class Scene:
    """One scene case bound to a test: measures it (once per session and device) and judges the result."""

    def __init__(self, case: Any, host: Any, node: pytest.Item) -> None:
        self.case = case
        self._host = host
        self._node = node

    @property
    def id(self) -> str:
        return self.case.id

    def measure(self, device: Any) -> Any:
        try:
            measurement = self._host.measure(device.name, self.case)
        except DeviceError as exc:  # e.g. its lease could not be had
            pytest.fail(str(exc), pytrace=False)
        self._node.stash[MEASUREMENT_KEY] = measurement
        if measurement.skipped:
            pytest.skip(measurement.skipped)
        return measurement

    def check_perf(self, measurement: Any) -> None:
        """Fail when the launches did not all produce trustworthy samples; the samples are kept either way."""
        __tracebackhide__ = True
        from .host.artifacts import issue_lines, junit_properties

        self._node.user_properties.extend(junit_properties(measurement, self._host.gpu_valid(measurement.device)))
        blocking = [i for i in measurement.issues if i.kind in ("exit", "timeout", "partial", "protocol", "nan",
                                                                 "connection_lost", "device_error", "quarantined")]
        if blocking or measurement.summary is None:
            complete = len(measurement.complete_launches)
            pytest.fail(
                f"scene {self.case.id} on device {measurement.device}: {complete} of {len(measurement.launches)} "
                f"launches complete; the runner's output was not trustworthy:\n{issue_lines(blocking)}\n"
                f"Samples kept (partial launches marked) in {measurement.samples_file}",
                pytrace=False,
            )
        self._gate(measurement)

    def _gate(self, measurement: Any) -> None:
        """Judge the measurement against its baseline: regressed fails, inconclusive warns."""
        __tracebackhide__ = True
        import warnings

        from .host.gating import RegressionWarning

        result = self._host.judge(measurement)
        if result is None:
            return
        self._host.entry(measurement)["regression"] = result.to_json()
        self._node.user_properties.extend(result.junit_properties())
        where = f"scene {self.case.id} on device {measurement.device}"
        if result.failed:
            pytest.fail(f"{where}: {result.message}", pytrace=False)
        note = result.warning()
        if note:
            # Located at the scene file: the place a reader goes to, not this line.
            warnings.warn_explicit(RegressionWarning(f"{where}: {note}"), RegressionWarning,
                                   filename=str(self._node.path), lineno=0)


@pytest.fixture
def golden(request: pytest.FixtureRequest, zbench_session: Any) -> "Golden":
    """Checks a measured scene's captures against the golden store (and writes goldens when asked to).

    Example::

        @pytest.mark.zbench_scene("text.labels")
        def test_labels_look_right(device, scene, golden):
            golden.check(scene.measure(device))
    """
    return Golden(zbench_session, request.node)


class Golden:
    """The golden comparison of one test: every captured frame, every metric recorded, configured ones gate."""

    def __init__(self, host: Any, node: pytest.Item) -> None:
        self._host = host
        self._node = node

    def check(self, measurement: Any) -> Any:
        __tracebackhide__ = True
        from .golden.store import GoldenStore
        from .host.goldens import check_goldens, device_arch

        settings = self._host.settings
        self._node.stash[MEASUREMENT_KEY] = measurement
        if measurement.skipped:
            pytest.skip(measurement.skipped)
        device = self._host.device(measurement.device)
        sections = self._host.record.devices.get(measurement.device, {})
        try:
            outcome = check_goldens(
                measurement, GoldenStore(settings.goldens_dir), device_class=device.spec.device_class,
                update=settings.update_goldens, results_dir=settings.results, driver=sections.get("gpu", {}),
                build_hash=self._host.record.app.get("build_hash"),
                arch=device_arch(sections),
            )
        except SceneError as exc:
            pytest.fail(str(exc), pytrace=False)
        correctness = outcome.correctness(settings.results)
        self._host.entry(measurement)["correctness"] = correctness
        for frame in correctness["frames"]:
            tight = frame.get("tightness") or {}
            for metric, values in tight.items():
                self._node.user_properties.append((f"frame{frame['frame']}_{metric}", values.get("observed")))
            self._node.user_properties.append((f"frame{frame['frame']}_status", frame["status"]))
            for kind in ("cross_backend", "cross_arch"):
                if frame.get(kind):
                    self._node.user_properties.append((f"frame{frame['frame']}_{kind}_status", frame[kind]["status"]))
        if not outcome.passed:
            lines = [f"golden test of scene {measurement.case.id} on device {measurement.device} failed:"]
            lines += [f"  {failure}" for failure in outcome.failures]
            lines += [check.message for check in outcome.checks if not check.ok]
            if any(check.status == "missing" for check in outcome.checks) and settings.update_goldens is None:
                lines.append(f"  create it: pytest --zbench-device={measurement.device} "
                             f"-k 'golden[{measurement.case.id}-{measurement.device}]' --zbench-update-goldens=missing")
            pytest.fail("\n".join(lines), pytrace=False)
        return outcome


# ------------------------------------------------------------------------------------------ reporting


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    measurement = item.stash.get(MEASUREMENT_KEY, None)
    if measurement is None or item.stash.get(RECORDED_KEY, False):
        return report
    if call.when == "call" or (call.when == "setup" and report.outcome != "passed"):
        state = item.config.stash[SESSION_KEY]
        entry = state.host.entry(measurement)
        if item.get_closest_marker("zbench_perf") is not None:
            entry["outcome"] = "skipped" if report.skipped else report.outcome
        item.stash[RECORDED_KEY] = True
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(SESSION_KEY, None)
    if state is None or state._host is None:
        return
    if state.is_worker:
        session.config.workeroutput["zbench"] = state.host.record.to_json()  # type: ignore[attr-defined]
        return
    state.schema_errors = _write_run_json(state)
    if state.schema_errors:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With plain `-n`, keep a scene's perf and golden tests on one worker (one measurement for both), and
    with several devices keep each device on one worker (a device measures one thing at a time)."""
    if config.getvalue("dist") != "load":
        return None
    from .xdist_scheduling import SceneScheduling

    return SceneScheduling(config, log, devices=config.stash[SESSION_KEY].settings.devices)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller → worker: one run id and start time for the whole session."""
    state = node.config.stash[SESSION_KEY]
    node.workerinput["zbench_run"] = {"run_id": state.host.record.run_id, "started_utc": state.host.record.started_utc}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    state = node.config.stash[SESSION_KEY]
    part = getattr(node, "workeroutput", {}).get("zbench")
    if part:
        state.host.record.merge(part)


def _write_run_json(state: ZbenchState) -> list[str]:
    """Write run.json; a document that breaks its schema is a bug of ours, but its numbers are still worth
    keeping: it goes to run.invalid.json and the session fails with the violations listed."""
    from .host.artifacts import validate_run, write_json_atomic
    from .host.html_report import write_report

    record = state.host.record
    if not record.scenes:
        return []
    document = record.document(state.settings.devices)
    errors = validate_run(document)
    name = "run.invalid.json" if errors else "run.json"
    write_json_atomic(state.settings.results / name, document)
    write_report(document, state.settings.results, state.settings.results / "report.html")
    state.config.hook.pytest_zbench_run_finished(config=state.config, document=document,
                                                 results_dir=state.settings.results)
    return errors


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(SESSION_KEY, None)
    if state is None or state.is_worker or state._host is None or not state.host.record.scenes:
        return
    from .report import summary_lines

    terminalreporter.write_sep("-", "zbench")
    for line in summary_lines(state.host.record.scenes, state.host.record.devices):
        terminalreporter.write_line(line)
    _report_goldens(terminalreporter, state)
    if state.schema_errors:
        terminalreporter.write_line("run.json broke its schema, written as run.invalid.json:", red=True)
        for error in state.schema_errors[:10]:
            terminalreporter.write_line(f"  {error}", red=True)
    else:
        results = state.settings.results
        terminalreporter.write_line(f"artifacts: {results / 'run.json'}, report: {results / 'report.html'}")


def _report_goldens(terminalreporter: Any, state: ZbenchState) -> None:
    """What --zbench-update-goldens wrote, and goldens that no scene uses any more."""
    if state.settings.update_goldens is None:
        return
    from .host.goldens import unused_goldens

    written = [f["written"] for s in state.host.record.scenes for f in (s.get("correctness") or {}).get("frames", [])
               if f.get("written")]
    terminalreporter.write_line(f"goldens written ({state.settings.update_goldens}): {len(written)}")
    for path in written:
        terminalreporter.write_line(f"  {path}")
    unused = unused_goldens(state.settings, state.inventory, state.host.record.devices)
    if unused:
        terminalreporter.write_line(f"goldens no scene uses any more ({len(unused)}); delete them if that is right:")
        for path in unused:
            terminalreporter.write_line(f"  {path}")


def _terminal_progress(config: pytest.Config) -> Any:
    """A progress note (scene, launch, frame) after the test's dot, erased again; only on a terminal."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None or hasattr(config, "workerinput") or not reporter.isatty:
        return None
    shown = {"text": "", "at": 0.0}

    def write(text: str) -> None:
        with capture.global_and_fixture_disabled():  # fd capture would swallow it otherwise
            reporter.write(text, flush=True)

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
