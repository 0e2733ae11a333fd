"""The keys under which the plugin keeps its objects in pytest's stashes (config.stash, item.stash)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # named in the StashKey subscripts, which stay strings at run time
    from ..host.measure.launches import SceneMeasurement  # noqa: F401
    from ..scenes import SceneCase  # noqa: F401
    from .zbench_plugin import ZbenchPlugin  # noqa: F401

SESSION_KEY = pytest.StashKey["ZbenchPlugin"]()  # config.stash: the session object, while it is registered
CASE_KEY = pytest.StashKey["SceneCase"]()  # item.stash: the scene case of a collected scene test
DEVICE_KEY = pytest.StashKey[str]()  # item.stash: the device a collected scene test runs on
MEASUREMENT_KEY = pytest.StashKey["SceneMeasurement"]()  # item.stash: once the test has measured
RECORDED_KEY = pytest.StashKey[bool]()  # item.stash: its outcome is in run.json
