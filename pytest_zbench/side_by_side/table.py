"""Engines side by side (`zbench engines`): several run.json files, each holding one or more engines (a device
of the inventory: a runner and its backend), put per scene next to each other, MotionMark-style, with every
engine's ratio to a reference engine (docs/report.md, "Engines side by side").

Per scene and engine: the frame time's p50 and p95 (run.json `metrics.frame_ms`, the frame-to-frame interval
that includes GPU work, stats.frame_times), the share of janky frames, an adaptive scene's score with its
interval, and the ratio engine / reference of the medians over launches of one metric with its launch-bootstrap
interval, computed by the same function as `zbench compare --fail-on` (regression/compare_runs.launch_ratio).
An adaptive scene's ratio is its score's (higher is better). A scene an engine did not measure says why: skipped
(the runner lacks a feature, the backend does not support the scene; the run's own reason), failed (no complete
launch; the first issue), or not run (not in that run's selection).

Nothing here recomputes what run.json records: the figures are read from it, only the ratios are computed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..errors import ZbenchError
from ..json_types import is_number
from ..regression.compare_runs import launch_ratio
from ..regression.config import HIGHER_IS_BETTER
from ..regression.gate import ratio_text
from ..regression.hierarchy import launch_values
from ..stats import BOOTSTRAP_CONFIDENCE
from . import DEFAULT_METRIC

SCHEMA = "zbench-engines/1"
SCORE_METRIC = "adaptive.score"

CellStatus = Literal["measured", "skipped", "failed", "not_run"]
Direction = Literal["faster", "slower", "no clear difference"]


class EnginesError(ZbenchError):
    """The runs cannot be put side by side as asked; the message names the file or option and what to do."""


@dataclass(frozen=True)
class Engine:
    """One device of one run: the engine a column of the view shows."""

    name: str  # the device's name in the inventory
    backend: str
    runner: str  # the runner's name and version, as its probe reported them
    renderer: str  # what draws: the GL renderer, else the backend's own name
    machine: str  # the machine it ran on, in words (cpu, cores, RAM, kernel)
    run_id: str
    started_utc: str
    run_json: Path
    report: Path | None  # the run's report.html, when it is beside its run.json
    scenes: Mapping[str, Mapping[str, Any]]  # scene id -> run.json scene entry

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "backend": self.backend, "runner": self.runner, "renderer": self.renderer,
                "machine": self.machine, "run_id": self.run_id, "started_utc": self.started_utc,
                "run_json": str(self.run_json), "report": str(self.report) if self.report else None}


@dataclass(frozen=True)
class Ratio:
    """engine / reference of the medians over launches of `metric`, with its 95 % launch-bootstrap interval
    (None with fewer than two launches a side: one launch has no spread to resample)."""

    metric: str
    value: float
    ci: tuple[float, float] | None
    launches: tuple[int, int]  # the engine's, the reference's

    @property
    def direction(self) -> Direction:
        """What the interval shows of the engine against the reference; a point estimate alone shows nothing."""
        if self.ci is None or self.ci[0] <= 1.0 <= self.ci[1]:
            return "no clear difference"
        higher = self.ci[0] > 1.0
        return "faster" if higher == (self.metric in HIGHER_IS_BETTER) else "slower"

    def text(self) -> str:
        ci = f" [{ratio_text(self.ci[0])}, {ratio_text(self.ci[1])}]" if self.ci else " [one launch: no CI]"
        return f"{ratio_text(self.value)}{ci}"

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "value": round(self.value, 6),
                "ci": None if self.ci is None else [round(self.ci[0], 6), round(self.ci[1], 6)],
                "confidence": BOOTSTRAP_CONFIDENCE, "launches": list(self.launches), "direction": self.direction}


@dataclass(frozen=True)
class Cell:
    """One engine on one scene."""

    engine: str
    status: CellStatus
    reason: str = ""  # why it was not measured, or why it has no ratio
    launches: int = 0
    mode: str | None = None
    frame_p50: float | None = None
    frame_p95: float | None = None
    jank_share: float | None = None
    score: float | None = None
    score_ci: tuple[float, float] | None = None
    score_unit: str | None = None
    ratio: Ratio | None = None

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason or None, "launches": self.launches, "mode": self.mode,
                "frame_ms": {"p50": self.frame_p50, "p95": self.frame_p95}, "jank_share": self.jank_share,
                "adaptive": None if self.score is None else
                {"score": self.score, "ci": None if self.score_ci is None else list(self.score_ci),
                 "unit": self.score_unit},
                "ratio": None if self.ratio is None else self.ratio.to_json()}


@dataclass(frozen=True)
class SceneRow:
    scene: str
    cells: tuple[Cell, ...]  # in the order of the engines, the reference first


@dataclass(frozen=True)
class SideBySide:
    engines: tuple[Engine, ...]  # the reference first, then in the order given
    metric: str  # the ratio's metric of fixed-load scenes (adaptive scenes: their score)
    rows: tuple[SceneRow, ...]
    notes: tuple[str, ...]  # what the reader must know: engines on different machines

    @property
    def reference(self) -> Engine:
        return self.engines[0]

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "reference": self.reference.name, "metric": self.metric,
                "adaptive_metric": SCORE_METRIC, "confidence": BOOTSTRAP_CONFIDENCE,
                "engines": [engine.to_json() for engine in self.engines], "notes": list(self.notes),
                "scenes": [{"id": row.scene, "engines": {cell.engine: cell.to_json() for cell in row.cells}}
                           for row in self.rows]}


def engines_of(document: Mapping[str, Any], run_json: Path) -> list[Engine]:
    """Each device of a run with its scene entries, in the run's device order."""
    sections = document.get("devices") or {}
    names = list(sections) + sorted({s["device"] for s in document["scenes"]} - set(sections))
    report = run_json.parent / "report.html"
    out = []
    for name in names:
        section = sections.get(name) or {}
        device, gpu = section.get("device") or {}, section.get("gpu") or {}
        scenes = {s["id"]: s for s in document["scenes"] if s["device"] == name}
        backend = str(gpu.get("backend") or next((s.get("backend") for s in scenes.values()), "") or "")
        out.append(Engine(name, backend, runner_words(gpu), str(gpu.get("gl_renderer") or backend),
                          machine_words(device), str(document.get("run_id", "")),
                          str(document.get("started_utc", "")), run_json, report if report.is_file() else None,
                          scenes))
    return out


def runner_words(gpu: Mapping[str, Any]) -> str:
    """The runner's name and version from the device's gpu section (the probe's, host/devices/environment.py)."""
    runner = gpu.get("runner") or {}
    if isinstance(runner, Mapping):
        return " ".join(str(runner[k]) for k in ("name", "version") if runner.get(k)) or "runner unknown"
    return str(runner)


def machine_words(device: Mapping[str, Any]) -> str:
    """The machine in words; engines are compared on one machine when these are equal."""
    cpu = device.get("cpu") or {}
    parts = [str(cpu.get("model") or "cpu unknown"), str(cpu.get("arch") or "")]
    if cpu.get("cores"):
        parts.append(f"{cpu['cores']} cores")
    if device.get("ram_mb"):
        parts.append(f"{device['ram_mb']} MB RAM")
    if device.get("kernel"):
        parts.append(f"kernel {device['kernel']}")
    if device.get("emulated"):
        parts.append("emulated")
    return ", ".join(p for p in parts if p)


def side_by_side(engines: Sequence[Engine], reference: str | None = None,
                 metric: str = DEFAULT_METRIC) -> SideBySide:
    """Every scene any engine ran, each engine's cell, the reference first."""
    names = [e.name for e in engines]
    chosen = reference if reference is not None else names[0]
    if chosen not in names:
        raise EnginesError(f"--reference {chosen}: not an engine of these runs (engines: {', '.join(names)})")
    ordered = tuple(sorted(engines, key=lambda e: e.name != chosen))
    ref = ordered[0]
    scene_ids = sorted({scene for engine in ordered for scene in engine.scenes})
    rows = tuple(SceneRow(scene, tuple(cell(engine, ref, scene, metric) for engine in ordered))
                 for scene in scene_ids)
    machines = {e.machine for e in ordered}
    notes = () if len(machines) == 1 else (
        "not one machine: the engines ran on " + "; ".join(f"{e.name}: {e.machine}" for e in ordered)
        + ". A ratio then mixes the engines with the machines.",)
    return SideBySide(ordered, metric, rows, notes)


def complete_launches(entry: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [launch for launch in entry.get("per_run") or [] if isinstance(launch, Mapping) and not launch.get("partial")]


def unmeasured(entry: Mapping[str, Any] | None, engine: Engine) -> tuple[CellStatus, str] | None:
    """Why an engine has no figures for a scene, or None when it has them."""
    if entry is None:
        return "not_run", f"not in {engine.run_json.name} of run {engine.run_id[:8]} (not selected in that session)"
    if entry.get("skipped"):
        return "skipped", str(entry["skipped"])
    if complete_launches(entry):
        return None
    issues = [i for i in entry.get("issues") or [] if isinstance(i, Mapping)]
    declined = next((i for i in issues if i.get("kind") == "feature_skipped"), None)
    if declined is not None:  # the runner declined the scene at run time (docs/runner-protocol.md)
        return "skipped", f"the runner skipped it: {declined.get('detail') or 'feature_skipped'}"
    first = issues[0] if issues else None
    why = f"{first.get('kind')}: {first.get('detail')}" if first else f"perf test {entry.get('outcome') or 'failed'}"
    return "failed", f"no complete launch ({why})"


def cell(engine: Engine, ref: Engine, scene: str, metric: str) -> Cell:
    entry = engine.scenes.get(scene)
    missing = unmeasured(entry, engine)
    if missing is not None or entry is None:
        status, reason = missing or ("not_run", "")
        return Cell(engine.name, status, reason)
    metrics = entry.get("metrics") or {}
    frame = metrics.get("frame_ms") or {}
    adaptive = entry.get("adaptive") if isinstance(entry.get("adaptive"), Mapping) else None
    score_ci = adaptive.get("ci") if adaptive else None
    ratio, why = (None, "") if engine is ref else _ratio(entry, ref, scene, SCORE_METRIC if adaptive else metric)
    return Cell(engine.name, "measured", why, len(complete_launches(entry)), entry.get("mode"),
                _number(frame.get("p50")), _number(frame.get("p95")), _number(metrics.get("jank_share")),
                _number(adaptive.get("score")) if adaptive else None,
                (float(score_ci[0]), float(score_ci[1])) if isinstance(score_ci, list) and len(score_ci) == 2 else None,
                str(adaptive.get("unit")) if adaptive and adaptive.get("unit") else None, ratio)


def _ratio(entry: Mapping[str, Any], ref: Engine, scene: str, metric: str) -> tuple[Ratio | None, str]:
    """The ratio to the reference, or why there is none."""
    base = ref.scenes.get(scene)
    if base is None or unmeasured(base, ref) is not None:
        return None, f"no ratio: the reference {ref.name} has no figures for this scene"
    for key in ("mode", "surface", "params"):
        if entry.get(key) != base.get(key):
            return None, (f"no ratio: {key} {entry.get(key)} here, {base.get(key)} on the reference {ref.name}; "
                          "run both with the same settings")
    launches = (launch_values(complete_launches(entry), metric).size, launch_values(complete_launches(base), metric).size)
    found = launch_ratio(base, entry, metric)
    if found is None:
        if min(launches) == 0:
            return None, f"no ratio: {metric} is not measured on both"
        return None, f"no ratio: a launch's {metric} is 0 or below here or on {ref.name} (a ratio needs positive values)"
    value, ci = found
    return Ratio(metric, value, ci if min(launches) >= 2 else None, launches), ""


def _number(value: Any) -> float | None:
    return float(value) if is_number(value) else None


def ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} ms"


def share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def score_text(found: Cell) -> str:
    if found.score is None:
        return "-"
    ci = f" [{found.score_ci[0]:.4g}, {found.score_ci[1]:.4g}]" if found.score_ci else ""
    return f"{found.score:.4g}{ci}"


def ratio_cell(found: Cell, reference: str) -> str:
    """The ratio column's words: `reference`, the ratio with its interval and direction, or why there is none."""
    if found.engine == reference:
        return "reference"
    if found.ratio is None:
        return found.reason
    return f"{found.ratio.text()} {found.ratio.direction}"


def lines(table: SideBySide) -> list[str]:
    """The terminal table: per scene one line per engine, the reference first; a skipped engine's reason."""
    ref = table.reference.name
    out = [f"reference: {ref} ({table.reference.backend}, {table.reference.runner}); ratio = engine / reference of "
           f"the medians over launches ({table.metric}; adaptive scenes: {SCORE_METRIC}, higher is better), "
           f"{BOOTSTRAP_CONFIDENCE:.0%} CI by launch bootstrap"]
    out += [f"note: {note}" for note in table.notes]
    scene_w = max([len(row.scene) for row in table.rows] + [5])
    engine_w = max(len(e.name) for e in table.engines)
    out.append(f"{'scene':<{scene_w}}  {'engine':<{engine_w}}  {'frame p50':>10}  {'frame p95':>10}  {'jank':>6}  "
               f"{'score [95% CI]':<22}  vs {ref} [95% CI]")
    for row in table.rows:
        for i, found in enumerate(row.cells):
            name = row.scene if i == 0 else ""
            head = f"{name:<{scene_w}}  {found.engine:<{engine_w}}  "
            if found.status != "measured":
                out.append(f"{head}{found.status.replace('_', ' ')}: {found.reason}")
                continue
            out.append(f"{head}{ms(found.frame_p50):>10}  {ms(found.frame_p95):>10}  {share(found.jank_share):>6}  "
                       f"{score_text(found):<22}  {ratio_cell(found, ref)}")
    counts = {status: sum(1 for row in table.rows for c in row.cells if c.status == status)
              for status in ("skipped", "failed", "not_run")}
    out.append(f"{len(table.rows)} scene(s), {len(table.engines)} engine(s); "
               + ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in counts.items()))
    return out
