"""What the checks share: the device, the probe's answer, the launches so far and the verdicts so far."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..inventory import DeviceSpec
from ..schema import cell_value, frame_rules
from .jobs import FeatureScene
from .launcher import Launch, Launcher
from .reference import ReferenceRenderer
from .report import CheckResult, Status
from .sizing import FULL, Sizes


@dataclass
class Context:
    spec: DeviceSpec
    launcher: Launcher
    reference: ReferenceRenderer
    keep_dir: Path
    refresh_hz: float
    selected: frozenset[str] | None  # --features, None: every listed one
    probe_raw: dict[str, Any] | None = None
    features: frozenset[str] = frozenset()
    timer_sources: tuple[str, ...] = ()
    launches: dict[str, Launch] = field(default_factory=dict)
    feature_scenes: dict[str, FeatureScene] = field(default_factory=dict)
    results: dict[str, CheckResult] = field(default_factory=dict)
    sizes: Sizes = FULL
    spent: dict[str, float] = field(default_factory=dict)  # check -> seconds of the launches made for it

    @property
    def backend(self) -> str:
        return self.spec.backend

    @property
    def period_ms(self) -> float:
        return 1000.0 / self.refresh_hz

    def record(self, result: CheckResult) -> CheckResult:
        self.results[result.name] = result
        return result

    def blocked(self, *needs: str) -> str | None:
        """'not judged: ...' when a check this one needs did not pass, else None."""
        for name in needs:
            result = self.results.get(name)
            if result is None or result.status != "pass":
                why = "was not run" if result is None else ("failed" if result.status == "fail" else "did not apply")
                return f"not judged: it needs {name}, which {why}"
        return None

    def checked_features(self) -> list[str]:
        listed = sorted(self.features)
        return [f for f in listed if self.selected is None or f in self.selected]


def result(name: str, status: Status, detail: str, fix: str = "") -> CheckResult:
    return CheckResult(name, status, detail, fix)


def frames_problems(launches: Iterable[Launch], columns: tuple[str, ...] | None, *,
                    exclude: tuple[str, ...] = ()) -> list[str]:
    """'<launch> frame N: column: why' for cells of the given columns (None: all but `exclude`) that break
    frames.schema.json."""
    rules = frame_rules()
    found = []
    for launch in launches:
        for cells in launch.frames.cells():
            wanted = [c for c in cells if (columns is None or c in columns) and c not in exclude]
            for column, why in rules.row_problems(cells, wanted).items():
                found.append(f"{launch.name} frame {cells.get('frame', '?')}: {column} {why}")
    return found


def column(launch: Launch, name: str, *, phase: str | None = None) -> list[Any]:
    """The JSON values of one column, in row order (optionally only the rows of one phase)."""
    return [cell_value(c.get(name, "")) for c in launch.frames.cells()
            if phase is None or c.get("phase", "").strip() == phase]


def numbers(values: Iterable[Any]) -> list[float]:
    return [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]


def listing(items: list[str], limit: int = 4) -> str:
    shown = "; ".join(items[:limit])
    return shown + (f"; and {len(items) - limit} more" if len(items) > limit else "")
