"""The keys under which the plugin keeps its objects in pytest's stashes (config.stash, item.stash)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import pytest

if TYPE_CHECKING:  # named in the StashKey subscripts, which stay strings at run time
    from ..host.host_session import HostSession
    from ..host.measure.results import SceneMeasurement  # noqa: F401
    from ..inventory import Inventory
    from ..scenes import CorpusIndex, SceneCase  # noqa: F401
    from ..settings import Settings


class ActiveZbench(Protocol):
    """What the plugin's modules read of the session object (plugin/zbench_plugin.py ZbenchPlugin). A
    protocol, so that collection, the terminal and the fixtures, which the session object imports, do not
    import it back (tests/test_imports.py)."""

    settings: Settings
    inventory: Inventory
    corpus: CorpusIndex
    host: HostSession | None
    is_worker: bool
    schema_errors: list[str]
    run_document: dict[str, Any] | None
    artifact_failures: list[str]
    started: float  # time.monotonic() at the session's start

    def open_host(self) -> HostSession: ...

    def progress_sink(self) -> Any: ...

    def close(self) -> None: ...


SESSION_KEY = pytest.StashKey[ActiveZbench]()  # config.stash: the session object, while it is registered
CASE_KEY = pytest.StashKey["SceneCase"]()  # item.stash: the scene case of a collected scene test
DEVICE_KEY = pytest.StashKey[str]()  # item.stash: the device a collected scene test runs on
MEASUREMENT_KEY = pytest.StashKey["SceneMeasurement"]()  # item.stash: once the test has measured
RECORDED_KEY = pytest.StashKey[bool]()  # item.stash: its outcome is in run.json
