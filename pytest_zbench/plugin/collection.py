"""Collection: every scene file in the scenes folder becomes a perf test and a golden test per scene case
and device (plugin/fixtures.py gives them their device, scene and golden)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import SceneError
from .stash import CASE_KEY, DEVICE_KEY, SESSION_KEY

if TYPE_CHECKING:
    from ..host.devices.device import Device
    from ..settings import Settings
    from .scene_checks import Golden, Scene

SCENE_SUFFIXES = (".yaml", ".yml")


def collect_scene_file(settings: Settings, file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A SceneFile for a scene file of the configured scenes folder, None for any other file."""
    if file_path.suffix not in SCENE_SUFFIXES or file_path.parent.resolve() != settings.scenes_dir.resolve():
        return None
    return SceneFile.from_parent(parent, path=file_path)


class SceneFile(pytest.File):
    """One scene file: a perf test and a golden test per scene case and device."""

    def collect(self) -> Iterator[pytest.Item]:
        from ..scenes import load_scene_file

        plugin = self.config.stash[SESSION_KEY]
        devices = plugin.settings.devices
        # Ids unique across files, and the corpus cap: a second file with an id measured nothing of its own
        # and showed the first file's results.
        for case in plugin.corpus.add(self.path, load_scene_file(self.path)):
            for device in devices:
                for kind, test, marker in (("perf", perf_test, pytest.mark.zbench_perf),
                                           ("golden", golden_test, pytest.mark.zbench_golden)):
                    item = SceneTest.from_parent(self, name=f"{kind}[{case.id}-{device}]", callobj=test)
                    item.stash[CASE_KEY] = case
                    item.stash[DEVICE_KEY] = device
                    item.add_marker(marker)
                    yield item

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, SceneError):
            # pytest runs nothing after a collection error unless told to: say how to run the other files.
            return (f"{excinfo.value}\nFix the scene file. Until then, run the other scene files with "
                    f"--continue-on-collection-errors, or leave this one out with --ignore={self.path}.")
        return super().repr_failure(excinfo)


class SceneTest(pytest.Function):
    """A test generated from a scene; reports the scene file as its location."""

    def reportinfo(self) -> tuple[Path, int | None, str]:
        # A line, not None: pytest reports a skip raised in a fixture (a quarantined device) at it.
        return self.path, 0, self.name


def deselect_perf(config: pytest.Config, settings: Settings, items: list[pytest.Item]) -> None:
    """--zbench-goldens-only: the perf tests are deselected (pytest counts them as such), so that a golden is
    recorded or checked in one short launch (docs/goldens.md, "Goldens only")."""
    if not settings.goldens_only:
        return
    perf = [item for item in items if item.get_closest_marker("zbench_perf") is not None]
    if perf:
        config.hook.pytest_deselected(items=perf)
        items[:] = [item for item in items if item.get_closest_marker("zbench_perf") is None]


def select_first_look(config: pytest.Config, settings: Settings, items: list[pytest.Item]) -> None:
    """--zbench-first-look: the scene tests of every scene but each family's representative
    (scenes.first_look_cases) are deselected (pytest counts them as such); plain tests stay."""
    if not settings.first_look:
        return
    from ..scenes import first_look_cases

    cases = [item.stash[CASE_KEY] for item in items if CASE_KEY in item.stash]
    chosen = {case.id for case in first_look_cases(dict.fromkeys(cases))}  # dict: each case once, in order
    left = [item for item in items if CASE_KEY in item.stash and item.stash[CASE_KEY].id not in chosen]
    if left:
        config.hook.pytest_deselected(items=left)
        dropped = set(map(id, left))
        items[:] = [item for item in items if id(item) not in dropped]


def perf_test(device: Device, scene: Scene) -> None:
    """The generated perf test: measure the scene on the device and judge the measurement."""
    measurement = scene.measure(device)
    scene.check_perf(measurement)


def golden_test(device: Device, scene: Scene, golden: Golden) -> None:
    """The generated golden test: the scene's captures (from the same launches) against its goldens."""
    golden.check(scene.measure(device))
