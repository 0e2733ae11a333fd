"""Two run.json files side by side (`zbench compare A.json B.json`): every scene measured in both, B judged
against A by the regression gate exactly as `--zbench-baseline=A.json` would judge it (regression/baseline.py),
and the scenes only one side has."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .baseline import judge_against_run_file
from .config import scene_metrics
from .gate import GateConfig
from .verdict_words import ComparedVerdict, verdict_rank

SHOWN = (("cpu_ms", "p50"), ("cpu_ms", "p95"), ("frame_ms", "p99"))


@dataclass(frozen=True)
class SceneComparison:
    device: str
    scene: str
    a: Mapping[str, Any]
    b: Mapping[str, Any]
    verdict: ComparedVerdict  # the gate's scene verdict, or no_baseline / not_comparable
    detail: str  # the deciding metric's effect and interval, or why there is no verdict
    message: str


@dataclass(frozen=True)
class RunComparison:
    scenes: tuple[SceneComparison, ...]
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]

    @property
    def regressed(self) -> bool:
        return any(s.verdict == "regressed" for s in self.scenes)


def compare_runs(a: Mapping[str, Any], a_path: Path, b: Mapping[str, Any], config: GateConfig = GateConfig()
                 ) -> RunComparison:
    """B (the candidate) against A (the baseline), scene by scene."""
    a_scenes = {(s["device"], s["id"]): s for s in a.get("scenes", [])}
    b_scenes = {(s["device"], s["id"]): s for s in b.get("scenes", [])}
    out = []
    for key in sorted(a_scenes.keys() & b_scenes.keys()):
        entry = b_scenes[key]
        candidate = [launch for launch in entry.get("per_run") or [] if not launch.get("partial")]
        comparison = {k: entry.get(k) for k in ("backend", "mode", "params", "gpu_source")}
        # The metrics that apply to the scene, as the plugin's gate chooses them (an adaptive scene: its score).
        metrics = scene_metrics(config.metrics, adaptive=entry.get("adaptive") is not None)
        if not metrics:
            why = f"none of the gated metrics ({', '.join(config.metrics)}) applies to this scene"
            out.append(SceneComparison(key[0], key[1], a_scenes[key], entry, "not_comparable", why, why))
            continue
        result = judge_against_run_file(a, a_path, key[1], key[0], comparison, candidate,
                                        dataclasses.replace(config, metrics=metrics))
        if result.verdict is None:
            verdict: ComparedVerdict = "no_baseline" if result.comparable else "not_comparable"
            out.append(SceneComparison(key[0], key[1], a_scenes[key], entry, verdict, result.message,
                                       result.message))
            continue
        deciding = next((v for v in result.verdict.verdicts if v.verdict == result.verdict.verdict),
                        result.verdict.verdicts[0] if result.verdict.verdicts else None)
        detail = ""
        if deciding is not None and deciding.effect is not None:
            detail = f"{deciding.metric} {deciding.effect:.3f}x"
            if deciding.ci is not None:
                detail += f" [{deciding.ci[0]:.3f}..{deciding.ci[1]:.3f}]"
        out.append(SceneComparison(key[0], key[1], a_scenes[key], entry, result.verdict.verdict, detail,
                                   result.verdict.message()))
    return RunComparison(tuple(out), tuple(f"{d}/{s}" for d, s in sorted(a_scenes.keys() - b_scenes.keys())),
                         tuple(f"{d}/{s}" for d, s in sorted(b_scenes.keys() - a_scenes.keys())))


def lines(comparison: RunComparison) -> list[str]:
    """The side-by-side table, regressed first, then the scenes one side lacks."""
    rows = sorted(comparison.scenes, key=lambda s: (verdict_rank(s.verdict), s.device, s.scene))
    name_w = max([len(f"{s.device}/{s.scene}") for s in rows] + [5])
    head = "".join(f"{f'{series[:-3]} {stat}':>14}" for series, stat in SHOWN)
    out = [f"{'scene':<{name_w}}{head}  {'verdict':<13}deciding metric (B/A, 95% CI)",
           f"{'':<{name_w}}{'A -> B':>14}"]
    for s in rows:
        cells = "".join(f"{_pair(s.a, s.b, series, stat):>14}" for series, stat in SHOWN)
        out.append(f"{s.device + '/' + s.scene:<{name_w}}{cells}  {s.verdict:<13}"
                   f"{s.detail if s.verdict not in ('no_baseline', 'not_comparable') else ''}")
    for s in rows:
        if s.verdict == "not_comparable":
            out.append(f"{s.device}/{s.scene}: {s.message}")
    if comparison.only_a:
        out.append(f"only in A: {', '.join(comparison.only_a)}")
    if comparison.only_b:
        out.append(f"only in B: {', '.join(comparison.only_b)}")
    return out


def _pair(a: Mapping[str, Any], b: Mapping[str, Any], series: str, stat: str) -> str:
    def value(entry: Mapping[str, Any]) -> str:
        found = ((entry.get("metrics") or {}).get(series) or {}).get(stat)
        return "-" if not isinstance(found, (int, float)) else f"{found:.3g}"

    return f"{value(a)}->{value(b)}"
