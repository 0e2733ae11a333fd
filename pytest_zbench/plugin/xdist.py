"""pytest-xdist: scheduling scene tests, and the session's run record between controller and workers. Imported
only by xdist's hooks, which run only when xdist is installed and `-n` is given.

The controller hands every worker one run id and start time (workerinput); each worker sends back its part
of the run record (workeroutput), which the controller merges and alone writes as run.json.

Work units: with one device, a scene file's tests (a scene's perf and golden tests share one measurement, and
a golden test compares its capture with those of the other cases of its sweep); with several
devices (or under the sequential gate's budget), all of one device's tests, so that each device is measured by one worker at a time and
`--zbench-device=a,b -n 2` spreads the suite over both devices. Other tests are scheduled one by one.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import pytest
from xdist.scheduler import LoadScopeScheduling

if TYPE_CHECKING:
    from ..host.run_record import RunRecord

SCENE_TEST = re.compile(r"::(?:perf|golden)\[(?P<case>.+)\]$")


class SceneScheduling(LoadScopeScheduling):  # type: ignore[misc]  # pytest-xdist ships no types
    def __init__(self, config: Any, log: Any = None, *, devices: tuple[str, ...], by_device: bool = False) -> None:
        super().__init__(config, log)
        self._devices = devices
        self._by_device = by_device or len(devices) > 1

    def _split_scope(self, nodeid: str) -> str:
        match = SCENE_TEST.search(nodeid)
        if match is None:
            return nodeid
        case = match.group("case")
        for device in self._devices:
            if case.endswith(f"-{device}"):
                return f"device:{device}" if self._by_device else f"scene-file:{nodeid.split('::')[0]}"
        return nodeid


RUN_KEY = "zbench_run"  # workerinput: the session's run id and start time
OUTPUT_KEY = "zbench"  # workeroutput: the worker's RunRecord.to_json()


def make_scheduler(config: pytest.Config, log: Any, devices: tuple[str, ...], *,
                   by_device: bool = False) -> SceneScheduling | None:
    """With plain `-n`, keep a scene file's tests on one worker (one measurement per scene), and
    with several devices keep each device on one worker (a device measures one thing at a time). `by_device`
    (the sequential gate, --zbench-budget) keeps a device's tests on one worker with one device too: its
    budget is spent over all the device's scenes at once (host/measure/sequential_rounds.py)."""
    if config.getvalue("dist") != "load":
        return None
    return SceneScheduling(config, log, devices=devices, by_device=by_device)


def send_run(node: Any, record: RunRecord) -> None:
    """Controller to worker: one run id and start time for the whole session."""
    node.workerinput[RUN_KEY] = {"run_id": record.run_id, "started_utc": record.started_utc}


def worker_run(config: pytest.Config) -> dict[str, str]:
    """On a worker, the run id and start time the controller sent."""
    return dict(getattr(config, "workerinput", {}).get(RUN_KEY, {}))


def send_worker_output(config: pytest.Config, record: RunRecord) -> None:
    """Worker to controller: this worker's part of run.json."""
    config.workeroutput[OUTPUT_KEY] = record.to_json()  # type: ignore[attr-defined]


def merge_worker_output(node: Any, record: RunRecord) -> None:
    part = getattr(node, "workeroutput", {}).get(OUTPUT_KEY)
    if part:
        record.merge(part)
