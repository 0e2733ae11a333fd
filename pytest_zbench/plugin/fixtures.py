"""The fixtures: `zbench_session` (the host session), `device`, `scene` and `golden`. Each hands out a domain
object (a Device, a SceneCase bound to the test, the golden check) and turns its outcome into the test's:
pytest.fail with the report's text, pytest.skip with the reason, JUnit properties, warnings."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..errors import DeviceError, DeviceQuarantined
from .scene_checks import Golden, Scene, cannot_run
from .stash import CASE_KEY, DEVICE_KEY

if TYPE_CHECKING:
    from ..host.devices.device import Device
    from ..host.host_session import HostSession
    from ..scenes import SceneCase


@pytest.fixture(scope="session")
def zbench_session(request: pytest.FixtureRequest) -> Iterator[HostSession]:
    """The host session: devices opened on first use and closed at the end of the session. In a project that
    did not otherwise ask for zbench, the first test that uses a zbench fixture activates the plugin."""
    from .options import activate

    plugin = activate(request.config)
    host = plugin.open_host()
    host.progress = plugin.progress_sink()
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
    # The outcome is decided outside the except clause: pytest.fail or skip raised inside it would show the
    # device's error again as the context of its own ("During handling of the above exception...").
    try:
        return zbench_session.device(name)
    except DeviceQuarantined as exc:
        quarantined, failed = str(exc), None
    except DeviceError as exc:
        quarantined, failed = None, str(exc)
    if quarantined is not None:
        cannot_run(quarantined, name, zbench_session.settings.ci)
    pytest.fail(f"{failed}\nThe other tests of device {name} are skipped in this session.", pytrace=False)


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


@pytest.fixture
def golden(request: pytest.FixtureRequest, zbench_session: HostSession) -> Golden:
    """Checks a measured scene's captures against the golden store (and writes goldens when asked to).

    Example::

        @pytest.mark.zbench_scene("text.labels")
        def test_labels_look_right(device, scene, golden):
            golden.check(scene.measure(device))
    """
    return Golden(zbench_session, request.node)
