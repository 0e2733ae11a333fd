"""The properties a test carries into --junitxml (pytest writes `item.user_properties` as <property>).

Per-test numbers travel this way, through xdist too; bulk samples go to run.json and the CSVs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .measure.process_activity import read_activity, summarize_activity
from .measure.results import SceneMeasurement
from .report.builds import build_text
from .report.sequential_looks import trail
from .run_record import results_relative
from .verdicts.golden_test import GoldenOutcome


def perf_properties(m: SceneMeasurement, results_dir: Path, gpu_valid: bool | None = None) -> list[tuple[str, object]]:
    """The summary numbers of a perf test, as pytest's --junitxml writes them (<property>). gpu_ms is left out
    when the device's GPU time source failed the timer check (gpu_valid False): its numbers are not trusted.
    samples_file is relative to the results folder (results_dir), as in run.json."""
    props: list[tuple[str, object]] = [("zbench_device", m.device), ("zbench_scene", m.case.id),
                                       ("zbench_backend", m.backend), ("runs", len(m.launches))]
    if m.job is not None:
        props += [("mode", m.job.mode), ("measured_frames", m.job.frames), ("budget_ms", round(m.budget_ms, 4))]
    if m.ab is not None:  # both builds of an A/B, B often the change under test
        props += [("zbench_build_a", build_text(m.ab.builds.get("a"))),
                  ("zbench_build_b", build_text(m.ab.builds.get("b")))]
    if m.adaptive is not None:
        return props + adaptive_properties(m, results_dir)
    if m.sequential is not None:
        props += sequential_properties(m.sequential.to_json())
    if m.summary is None:
        return props
    s = m.summary
    for metric in ("frame_ms", "cpu_ms", "gpu_ms", "interval_ms"):
        if metric == "gpu_ms" and gpu_valid is False:
            continue
        values = s.metrics.get(metric)
        if values:
            props += [(f"{metric}_{q}", round(values[q], 4)) for q in ("p50", "p95", "p99") if values.get(q) is not None]
    props += [("jank", s.jank), ("severe_jank", s.severe_jank)]
    # The idle scene's own metric (docs/methodology.md, "Idle: wake-ups and CPU time per second").
    activity = summarize_activity([read_activity(launch.result.extra.get("activity")) for launch in m.launches])
    if activity is not None:
        props += [("wakeups_per_s", activity["wakeups_per_s"]), ("cpu_ms_per_s", activity["cpu_ms_per_s"])]
    if s.jank_share is not None:
        props.append(("jank_share", round(s.jank_share, 6)))
    if s.gpu_source:
        props.append(("gpu_source", s.gpu_source))
        if gpu_valid is not None:
            props.append(("gpu_valid", gpu_valid))
    if m.samples_file is not None:
        props.append(("samples_file", results_relative(m.samples_file, results_dir)))
    return props


def sequential_properties(sequential: dict[str, Any]) -> list[tuple[str, object]]:
    """The sequential gate's looks at the scene (run.json `sequential`, docs/regression.md "The sequential
    gate"): why it stopped, the launches it got, the last look's level, and every look in one string."""
    looks = sequential.get("looks") or []
    props: list[tuple[str, object]] = [
        ("sequential_stopped", str(sequential.get("stopped"))), ("sequential_looks", len(looks)),
        ("sequential_launches_a", sequential.get("launches_a", 0)),
        ("sequential_launches_b", sequential.get("launches_b", 0)),
        ("sequential_max_launches", sequential.get("max_launches")),
        ("sequential_alpha_per_direction", sequential.get("alpha_per_direction"))]
    if looks:
        props += [("sequential_final_level", looks[-1].get("nominal_alpha")), ("sequential_trail", trail(sequential))]
    return props


def adaptive_properties(m: SceneMeasurement, results_dir: Path) -> list[tuple[str, object]]:
    """An adaptive scene's score, its interval and unit (docs/scenes.md). Its per-frame percentiles and jank
    mix the complexities of its plan, so they are not properties (run.json still has them)."""
    assert m.adaptive is not None
    section = m.adaptive.to_json()
    props: list[tuple[str, object]] = [("adaptive_unit", section["unit"]),
                                       ("adaptive_scored_launches", len(section["per_run_scores"]))]
    if section["score"] is not None:
        props.append(("adaptive_score", section["score"]))
    if section["ci"] is not None:
        props += [("adaptive_ci_low", section["ci"][0]), ("adaptive_ci_high", section["ci"][1]),
                  ("adaptive_confidence", section["confidence"])]
    if section["censored"]:
        props.append(("adaptive_censored", section["censored"]))
    if m.samples_file is not None:
        props.append(("samples_file", results_relative(m.samples_file, results_dir)))
    return props


def golden_properties(outcome: GoldenOutcome) -> list[tuple[str, object]]:
    """The observed metrics and status of every captured frame of a golden test: frame<N>_<metric>,
    frame<N>_status, frame<N>_triage when the triage decided or could not, and, for a GPU backend or another
    CPU architecture than the reference, frame<N>_cross_backend_status or frame<N>_cross_arch_status."""
    props: list[tuple[str, object]] = []
    for check in outcome.checks:
        frame = check.key.frame
        tightness = (check.comparison.tightness if check.comparison else None) or {}
        for metric, values in tightness.items():
            props.append((f"frame{frame}_{metric}", values.get("observed")))
        props.append((f"frame{frame}_status", check.status))
        if check.triage is not None:  # accepted, rejected or untriaged (docs/goldens.md, "Triage")
            props.append((f"frame{frame}_triage", check.triage))
        cross = outcome.cross.get(frame)
        if cross:
            props.append((f"frame{frame}_{cross['kind']}_status", cross["status"]))
    return props
