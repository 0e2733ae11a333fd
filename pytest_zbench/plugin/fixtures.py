"""The fixtures: `zbench_session` (the host session), `device`, `scene` and `golden`. Each hands out a domain
object (a Device, a SceneCase bound to the test, the golden check) and turns its outcome into the test's:
pytest.fail with the report's text, pytest.skip with the reason, JUnit properties, warnings."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..errors import DeviceError, DeviceQuarantined, SceneError
from .stash import CASE_KEY, DEVICE_KEY, MEASUREMENT_KEY, SESSION_KEY
from .terminal import terminal_progress

if TYPE_CHECKING:
    from ..host.device import Device
    from ..host.goldens import GoldenOutcome
    from ..host.measure import SceneMeasurement
    from ..host.session import HostSession
    from ..scenes import SceneCase


@pytest.fixture(scope="session")
def zbench_session(request: pytest.FixtureRequest) -> Iterator[HostSession]:
    """The host session: devices opened on first use and closed at the end of the session."""
    host = request.config.stash[SESSION_KEY].open_host()
    host.progress = terminal_progress(request.config)
    yield host
    host.close()


@pytest.fixture
def device(request: pytest.FixtureRequest, zbench_session: HostSession) -> Device:
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
def scene(request: pytest.FixtureRequest, zbench_session: HostSession) -> Scene:
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


def _find_case(scenes_dir: Path, scene_id: str) -> SceneCase:
    from ..scenes import load_corpus

    cases, errors = load_corpus(scenes_dir)
    for case in cases:
        if case.id == scene_id:
            return case
    hint = f" ({len(errors)} scene file(s) failed to load)" if errors else ""
    raise pytest.UsageError(f"no scene {scene_id!r} in {scenes_dir}{hint}")


class Scene:
    """One scene case bound to a test: measures it (once per session and device) and judges the result."""

    def __init__(self, case: SceneCase, host: HostSession, node: pytest.Item) -> None:
        self.case = case
        self._host = host
        self._node = node

    @property
    def id(self) -> str:
        return self.case.id

    def measure(self, device: Device) -> SceneMeasurement:
        try:
            measurement = self._host.measure(device.name, self.case)
        except DeviceError as exc:  # e.g. its lease could not be had
            pytest.fail(str(exc), pytrace=False)
        self._node.stash[MEASUREMENT_KEY] = measurement
        if measurement.skipped:
            pytest.skip(measurement.skipped)
        return measurement

    def check_perf(self, measurement: SceneMeasurement) -> None:
        """Fail when the launches did not all produce trustworthy samples (the samples are kept either way),
        then judge the measurement against its baseline: regressed fails, inconclusive warns."""
        __tracebackhide__ = True
        from ..host.junit import perf_properties
        from ..host.regression_gate import RegressionWarning

        self._node.user_properties.extend(perf_properties(measurement, self._host.gpu_valid(measurement.device)))
        failure = measurement.perf_failure()
        if failure is not None:
            pytest.fail(failure, pytrace=False)
        result = self._host.judge(measurement)
        if result is None:
            return
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
def golden(request: pytest.FixtureRequest, zbench_session: HostSession) -> Golden:
    """Checks a measured scene's captures against the golden store (and writes goldens when asked to).

    Example::

        @pytest.mark.zbench_scene("text.labels")
        def test_labels_look_right(device, scene, golden):
            golden.check(scene.measure(device))
    """
    return Golden(zbench_session, request.node)


class Golden:
    """The golden comparison of one test: every captured frame, every metric recorded, configured ones gate."""

    def __init__(self, host: HostSession, node: pytest.Item) -> None:
        self._host = host
        self._node = node

    def check(self, measurement: SceneMeasurement) -> GoldenOutcome:
        __tracebackhide__ = True
        from ..host.junit import golden_properties

        self._node.stash[MEASUREMENT_KEY] = measurement
        if measurement.skipped:
            pytest.skip(measurement.skipped)
        try:
            selected = {(i.stash[DEVICE_KEY], i.stash[CASE_KEY].id) for i in self._node.session.items
                        if CASE_KEY in i.stash}  # the sweep's other cases this session runs too
            outcome = self._host.check_goldens(measurement, selected)
        except SceneError as exc:
            pytest.fail(str(exc), pytrace=False)
        self._node.user_properties.extend(golden_properties(outcome))
        failure = outcome.failure_message(measurement, self._host.settings.update_goldens)
        if failure is not None:
            pytest.fail(failure, pytrace=False)
        return outcome
