"""What a scene test checks, apart from the fixtures that hand it over (plugin/fixtures.py): `Scene.check_perf`
and `Golden.check` turn the host's results into the test's outcome. Below the fixtures and the collection,
which both name these types (docs/architecture.md)."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, NoReturn

import pytest

from ..errors import DeviceError, SceneError
from .stash import CASE_KEY, DEVICE_KEY, MEASUREMENT_KEY

if TYPE_CHECKING:
    from ..host.devices.device import Device
    from ..host.host_session import HostSession
    from ..host.measure.results import SceneMeasurement
    from ..host.verdicts.golden_test import GoldenOutcome
    from ..host.verdicts.perf_gate import GateResult
    from ..regression.verdict_words import GateVerdict
    from ..scenes import SceneCase


def cannot_run(reason: str, device: str, ci: bool) -> NoReturn:
    """A scene the device cannot run (no such backend in its runner, a feature it lacks, a quarantined device)
    skips with the reason; under CI (Settings.ci) it fails: a CI run is there to exercise the devices it names,
    and a skip would let a lost backend (EGL gone from the image) pass as "8 skipped", exit 0."""
    __tracebackhide__ = True
    if ci:
        pytest.fail(f"{reason}\nCI=true: device {device} is one this CI run exercises, so a scene it "
                    f"cannot run fails instead of skipping. Restore what the device lacks, or leave the device or "
                    f"the scene out of the CI run (--zbench-device, -k).", pytrace=False)
    pytest.skip(reason)


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
            # The session's other scenes of this device: the sequential gate (--zbench-budget) measures them
            # together, round by round (host/measure/sequential_rounds.py).
            cases = [i.stash[CASE_KEY] for i in self._node.session.items
                     if CASE_KEY in i.stash and i.stash.get(DEVICE_KEY, None) == device.name]
            measurement = self._host.measure(device.name, self.case, session_cases=cases)
        except DeviceError as exc:  # e.g. its lease could not be had
            pytest.fail(str(exc), pytrace=False)
        self._node.stash[MEASUREMENT_KEY] = measurement
        if measurement.skipped:
            # A scene the backend does not support skips under CI too: nothing is lost, the backend says so.
            cannot_run(str(measurement.skipped), measurement.device,
                       self._host.settings.ci and not measurement.unsupported)
        return measurement

    def check_perf(self, measurement: SceneMeasurement) -> None:
        """Fail when the launches did not all produce trustworthy samples (the samples are kept either way),
        then judge the measurement against its baseline: regressed fails, inconclusive warns."""
        __tracebackhide__ = True
        if self._host.settings.goldens_only:
            pytest.skip("--zbench-goldens-only: one launch of one measured frame is no perf measurement")
        from ..host.junit import perf_properties
        from ..host.verdicts.perf_gate import RegressionWarning

        self._node.user_properties.extend(perf_properties(measurement, self._host.settings.results,
                                                              self._host.gpu_valid(measurement.device)))
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
        note = attention_note(result)
        if note:
            # Located at the scene file: the place a reader goes to, not this line.
            warnings.warn_explicit(RegressionWarning(f"{where}: {note}"), RegressionWarning,
                                   filename=str(self._node.path), lineno=0)


# Verdicts the terminal summarises in one line for all scenes (host/report/terminal_table.py): the first run of a
# scene (no baseline yet) and a verdict more launches would decide. A warning per scene is kept for what needs
# attention: a changed environment, a scene the history could not take.
SUMMARISED_VERDICTS: tuple[GateVerdict, ...] = ("no_baseline", "inconclusive")


def attention_note(result: GateResult) -> str | None:
    if result.verdict in SUMMARISED_VERDICTS:
        return "; ".join(result.fingerprint_changes) or None
    return result.warning()


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
            cannot_run(str(measurement.skipped), measurement.device,
                       self._host.settings.ci and not measurement.unsupported)
        try:
            # The sweep's other cases this session runs too: the generated tests carry their device; a plain
            # test (README "Fixtures and hooks") has only the case its `scene` fixture found, and no device.
            selected = {(i.stash[DEVICE_KEY], i.stash[CASE_KEY].id) for i in self._node.session.items
                        if CASE_KEY in i.stash and DEVICE_KEY in i.stash}
            outcome = self._host.check_goldens(measurement, selected)
        except SceneError as exc:
            pytest.fail(str(exc), pytrace=False)
        self._node.user_properties.extend(golden_properties(outcome))
        failure = outcome.failure_message(measurement, self._host.settings.update_goldens)
        if failure is not None:
            pytest.fail(failure, pytrace=False)
        return outcome
