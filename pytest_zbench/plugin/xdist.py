"""pytest-xdist scheduling for scene tests, used only when xdist is installed and `-n` is given.

Work units: with one device, a scene's perf and golden tests (they share one measurement); with several
devices, all of one device's tests, so that each device is measured by one worker at a time and
`--zbench-device=a,b -n 2` spreads the suite over both devices. Other tests are scheduled one by one.
"""

from __future__ import annotations

import re
from typing import Any

from xdist.scheduler import LoadScopeScheduling

SCENE_TEST = re.compile(r"::(?:perf|golden)\[(?P<case>.+)\]$")


class SceneScheduling(LoadScopeScheduling):
    def __init__(self, config: Any, log: Any = None, *, devices: tuple[str, ...]) -> None:
        super().__init__(config, log)
        self._devices = devices

    def _split_scope(self, nodeid: str) -> str:
        match = SCENE_TEST.search(nodeid)
        if match is None:
            return nodeid
        case = match.group("case")
        for device in self._devices:
            if case.endswith(f"-{device}"):
                return f"device:{device}" if len(self._devices) > 1 else f"scene:{case}"
        return nodeid
