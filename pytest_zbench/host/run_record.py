"""run.json (docs/architecture.md, "What a run writes"): the session's record, scene entries, writing and validation.

Workers of pytest-xdist build the same JSON-safe pieces and send them to the controller, which merges them
and alone writes run.json (written atomically, validated against the shipped schema before it is written).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict

from ..files import write_json_atomic
from ..gpu_timing import MixedGpuSources, run_source
from ..protocol import Toolchain
from ..stats import scene_metrics
from .devices.device import LaunchOutcome
from .devices.environment import runner_toolchain
from .measure.input_latency import summarize_input_latency
from .measure.launch_flags import flagged_launches
from .measure.process_activity import read_activity, summarize_activity
from .measure.results import SceneMeasurement
from .verdicts.differentials import differential_costs
from .verdicts.isolation import check_isolation

SCHEMA_VERSION = 1
SUITE = "render"


def load_schema() -> dict[str, Any]:
    """run.schema.json, shipped beside the protocol's schemas."""
    from ..schema import load

    return load("run")


def validate_run(document: dict[str, Any]) -> list[str]:
    """Every schema violation as 'path: message'; empty when valid."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema())
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in validator.iter_errors(document)]


def gpu_timer_counts(m: SceneMeasurement) -> dict[str, Any]:
    """Per scene: the GPU time source, how many measured frames carry a value of it, how many frames were
    flagged disjoint, and how many values were dropped as invalid (by the runner: its timer_invalid issues or
    result.json gpu.timer_stats; by the host at the protocol boundary: frames.csv timer_invalid issues)."""
    sources = sorted({row["gpu_source"] for launch in m.launches for row in launch.frames.rows
                      if row.get("gpu_source") not in (None, "none")})
    try:
        source = run_source(sources)
    except MixedGpuSources:
        source = None
    with_gpu = disjoint = invalid = 0
    for launch in m.launches:
        for row in launch.frames.rows:
            if row["phase"] == "measure" and source and row["gpu_source"] == source and row.get("gpu_ms") is not None:
                with_gpu += 1
            disjoint += bool(row.get("disjoint"))
        stats = launch.result.gpu.get("timer_stats") if isinstance(launch.result.gpu, dict) else None
        reported = stats.get("timer_invalid") if isinstance(stats, dict) else None
        runner = sum(1 for i in launch.result.issues if i.kind == "timer_invalid")
        invalid += max(runner, reported if isinstance(reported, int) and not isinstance(reported, bool) else 0)
        invalid += sum(1 for i in launch.frames.issues if i.kind == "timer_invalid")
    return {"source": source, "sources": sources, "frames_with_gpu": with_gpu,
            "disjoint": disjoint, "invalid": invalid}


def scene_entry(m: SceneMeasurement, outcome: str, *, results_dir: Path,
                gpu_valid: bool | None = None) -> dict[str, Any]:
    """One run.json `scenes[]` entry. `outcome` is the perf test's: passed, failed, skipped or error. `gpu_valid`:
    whether the device's GPU time source passed the timer check (False: gpu_ms is not charted or gated)."""
    job = m.job
    summary = m.summary.to_dict() if m.summary else None
    metrics = scene_metrics(summary)
    timer_sources = sorted({l.result.timer_source for l in m.launches if l.result.timer_source})
    present_sources = sorted({l.result.present_source for l in m.launches if l.result.present_source})
    return {
        "id": m.case.id,
        "family": m.case.family,
        "sweep": m.case.sweep,
        # A differential pair's other side and feature (scenes.py Differential; host/verdicts/differentials.py)
        "differential": (None if m.case.differential is None else
                         {"minus": m.case.differential.minus, "feature": m.case.differential.feature}),
        "device": m.device,
        **m.measured_alike(),  # backend, mode, params, surface, frame counts, seed, gpu_source
        "runs": len(m.launches),
        "complete_runs": len(m.complete_launches),
        "partial": m.partial,
        "budget_ms": round(m.budget_ms, 4) if m.budget_ms else None,
        "metrics": metrics,
        "per_run_medians": summary["per_run_medians"] if summary else {},
        # Each launch carries the verdict too, so the regression gate skips gpu_ms it must not trust, and the
        # conditions around it (throttled: measured while the device reported throttling).
        "per_run": ([dict(run, gpu_valid=False) for run in flagged_launches(m, summary["per_run"])]
                    if gpu_valid is False else flagged_launches(m, summary["per_run"])) if summary else [],
        "throttled_runs": sum(1 for run in flagged_launches(m, summary["per_run"]) if run.get("throttled"))
        if summary else 0,
        "cold": summary["cold"] if summary else {},
        "gpu_timer": gpu_timer_counts(m),
        "gpu_valid": gpu_valid if summary and summary["gpu_source"] else None,
        "timer_source": timer_sources[0] if len(timer_sources) == 1 else None,
        "present_source": present_sources[0] if len(present_sources) == 1 else None,
        # Android's own frame timing: a series of its own, never mixed with the runner's (host/measure/android_frame_series.py)
        "platform_frames": m.platform.entry(results_dir) if m.platform is not None else None,
        "notes": (summary["notes"] if summary else []) + (
            ["warm-up 0: no warmup frame, the first measured frames are cold (first use of caches, shaders and "
             "allocations)"] if job and job.warmup_frames == 0 and summary else []),
        "samples_file": results_relative(m.samples_file, results_dir),
        "launch_wall_s": [round(l.wall_s, 4) for l in m.launches],
        "runner_wall_ms": [l.runner_wall_ms for l in m.launches],
        # The runner's peak resident memory: the largest of any launch (each launch's is in launches[])
        "peak_rss_kb": max((l.runner_peak_rss_kb for l in m.launches if l.runner_peak_rss_kb is not None),
                           default=None),
        # Wake-ups and CPU time per second over the measured frames: the idle scene's own metric
        # (host/measure/process_activity.py); every scene has it where the runner reports it.
        "activity": summarize_activity([read_activity(l.result.extra.get("activity")) for l in m.launches]),
        # The input-to-photon proxy of a scene with a tap_target (host/measure/input_latency.py); else null.
        "input_to_photon": summarize_input_latency([l.result.extra.get("input_to_photon") for l in m.launches]),
        "launches": [launch_record(l) for l in m.launches],
        "outcome": outcome,
        "skipped": m.skipped,
        # Skipped because the backend does not support what the scene measures (a compressed texture format).
        "unsupported": m.unsupported,
        "correctness": None,
        "issues": [dict(i.to_dict(), launch=n) for n, launch in enumerate(m.launches) for i in launch.issues],
        # An adaptive scene's score, plans and fits (host/measure/adaptive_launches.py); fixed-load scenes have no such key.
        **({"adaptive": m.adaptive.to_json()} if m.adaptive is not None else {}),
    }


LaunchStatus = Literal["complete", "timeout", "connection_lost", "failed"]


class LaunchRecord(TypedDict):
    """One launch of a run.json scene entry (`scenes[].launches[]`)."""

    launch: int
    started_utc: str
    ended_utc: str
    status: LaunchStatus
    exit_code: int | None
    conditions: dict[str, Any]
    retried: dict[str, Any] | None
    peak_rss_kb: int | None
    activity: dict[str, Any] | None


def launch_record(launch: LaunchOutcome) -> LaunchRecord:
    """When a launch ran, how it ended, and the device's conditions just before and after it."""
    status: LaunchStatus
    if launch.complete:
        status = "complete"
    elif launch.timed_out:
        status = "timeout"
    elif launch.connection_lost:
        status = "connection_lost"
    else:
        status = "failed"
    return {"launch": launch.index, "started_utc": launch.started_utc, "ended_utc": launch.ended_utc,
            "status": status, "exit_code": launch.exit_code, "conditions": launch.conditions,
            "retried": launch.retried, "peak_rss_kb": launch.runner_peak_rss_kb,
            "activity": None if (activity := read_activity(launch.result.extra.get("activity"))) is None
            else activity.to_json()}


@dataclass
class RunRecord:
    """The pieces of run.json collected during a session, mergeable across xdist workers."""

    run_id: str
    started_utc: str
    app: dict[str, Any]
    suite_version: str
    devices: dict[str, dict[str, Any]] = field(default_factory=dict)
    scenes: list[dict[str, Any]] = field(default_factory=list)
    quarantined: dict[str, str] = field(default_factory=dict)  # device -> why it was taken out of the session
    # Files of measured scenes that could not be written (a CSV on a full disk); not part of run.json, listed
    # at the end of the session, which then fails.
    artifact_failures: list[str] = field(default_factory=list)
    # run.json's `check_runner` (--zbench-check-runner): per device, its conformance report and verdict
    check_runner: dict[str, dict[str, Any]] | None = None
    host: dict[str, Any] = field(default_factory=dict)  # the machine pytest ran on (not a device)
    # The session was stopped (Ctrl-C, SIGTERM) before its tests ran out: run.json holds the scenes completed
    # until then (README "Reliability").
    interrupted: bool = False
    # run.json `conditions.prepared` per device: the steps the session (its controller) ran on it and their
    # undoing (host/devices/prepare.py); a device without `prepare` in the inventory has none.
    prepared: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # --zbench-goldens-only: one frame per launch, no warmup; its timings measure nothing, so nothing is
    # concluded from them (run.json `goldens_only`; docs/goldens.md, "Goldens only").
    goldens_only: bool = False

    def corpus(self, scenes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """run.json's verdicts over the corpus (of `scenes`, by default every scene): none of a goldens-only
        run, whose one-frame timings would make a sweep or a differential pair look measured."""
        return corpus_sections([] if self.goldens_only else self.scenes if scenes is None else scenes)

    def to_json(self) -> dict[str, Any]:
        return {"devices": self.devices, "scenes": self.scenes, "quarantined": self.quarantined,
                "artifact_failures": self.artifact_failures,
                "app": {"runner_builds": self.app.get("runner_builds") or {},
                        "runner_toolchains": self.app.get("runner_toolchains") or {}}}

    def add_scene(self, entry: dict[str, Any]) -> None:
        self.scenes.append(entry)
        sections = self.devices.get(entry["device"])
        if sections is None:
            return
        # The device's sources are the ones its runner actually used, reported with the first measured scene.
        if entry.get("timer_source") and not sections["gpu"].get("timer_source_used"):
            sections["gpu"]["timer_source"] = sections["gpu"]["timer_source_used"] = entry["timer_source"]
        if entry.get("present_source") and sections["display"].get("present_source") is None:
            sections["display"]["present_source"] = entry["present_source"]
            sections["display"]["vsync"] = entry.get("mode") == "paced"

    def merge(self, part: dict[str, Any]) -> None:
        for name, section in part.get("devices", {}).items():
            self.devices.setdefault(name, section)
        # The engine builds a worker's runners reported (host/environment.runner_build): the controller probes
        # no device, so the first worker's first one becomes app.build_hash here.
        for name, build in ((part.get("app") or {}).get("runner_builds") or {}).items():
            self.app.setdefault("runner_builds", {}).setdefault(name, build)
            if self.app.get("build_source") != "runner" and isinstance(build, dict):
                self.app.update(build_hash=build.get("id"), dirty=build.get("dirty"), build_source="runner",
                                build_device=name, build_describe=build.get("describe"))
        for name, chain in ((part.get("app") or {}).get("runner_toolchains") or {}).items():
            if isinstance(chain, dict) and name not in (self.app.get("runner_toolchains") or {}):
                runner_toolchain(self.app, name, Toolchain(str(chain.get("compiler", "")), str(chain.get("flags", ""))))
        for entry in part.get("scenes", []):
            self.add_scene(entry)
        for name, reason in part.get("quarantined", {}).items():
            self.quarantined.setdefault(name, reason)
        self.artifact_failures += part.get("artifact_failures", [])

    def document(self, device_order: tuple[str, ...]) -> dict[str, Any]:
        """The run.json document. Its top-level device/gpu/display/conditions describe the first device run;
        `devices` holds every device's sections when one session measured several."""
        names = [n for n in device_order if n in self.devices] or list(self.devices)
        devices = {n: self._with_session_conditions(n) for n in names}
        for name, sections in devices.items():
            sections["conditions"] = {**sections["conditions"], "prepared": self.prepared.get(name, [])}
        primary = devices[names[0]] if names else _empty_device()
        scenes = sorted(self.scenes, key=lambda s: (names.index(s["device"]) if s["device"] in names else 99, s["id"]))
        return {
            "schema": SCHEMA_VERSION,
            "run_id": self.run_id,
            "started_utc": self.started_utc,
            "suite": SUITE,
            "suite_version": self.suite_version,
            "app": self.app,
            "host": self.host,
            "device": primary["device"],
            "gpu": primary["gpu"],
            "display": primary["display"],
            "conditions": primary["conditions"],
            "devices": devices,
            "quarantined": dict(self.quarantined),
            "interrupted": self.interrupted,
            "goldens_only": self.goldens_only,
            **({"check_runner": self.check_runner} if self.check_runner is not None else {}),
            "scenes": scenes,
            **self.corpus(scenes),
        }

    def _with_session_conditions(self, name: str) -> dict[str, Any]:
        """The device's sections with its conditions summarised over every launch of the session (in
        order of time, whichever worker ran them): temperature at the start and the end, throttling seen."""
        sections = dict(self.devices[name])
        launches = sorted((l for s in self.scenes if s["device"] == name for l in s.get("launches") or []
                           if l.get("conditions")), key=lambda l: l.get("started_utc") or "")
        if not launches:
            return sections
        samples = [l["conditions"][when] for l in launches for when in ("before", "after")
                   if l["conditions"].get(when)]
        throttled = [s.get("throttled") for s in samples if isinstance(s.get("throttled"), bool)]
        conditions = dict(sections["conditions"])
        conditions.update({
            "temp_start_c": launches[0]["conditions"].get("before", {}).get("temp_c"),
            "temp_end_c": launches[-1]["conditions"].get("after", {}).get("temp_c"),
            "temp_max_c": max((s["temp_c"] for s in samples if isinstance(s.get("temp_c"), (int, float))),
                              default=None),
            "throttled": any(throttled) if throttled else conditions.get("throttled"),
            "launches_sampled": len(launches),
        })
        for key in ("governor", "battery_pct"):
            values = [s.get(key) for s in samples if s.get(key) not in (None, "")]
            if values:
                conditions[key] = values[0] if len(set(map(str, values))) == 1 else conditions.get(key)
        sections["conditions"] = conditions
        return sections


@dataclass
class RunArtifacts:
    """What `write_run` wrote: the document, its schema violations, and every artifact that could not be
    written (each one a line naming the file and why; the others were written all the same)."""

    document: dict[str, Any] | None = None
    schema_errors: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def corpus_sections(scenes: list[dict[str, Any]]) -> dict[str, Any]:
    """run.json's verdicts over the corpus, computed once from its scene entries (the terminal reads them)."""
    return {
        # Per device, whether each sweep's cost rises with its swept dimension (host/verdicts/isolation.py)
        "isolation": [i.to_dict() for i in check_isolation(scenes)],
        # Per device, each differential pair's cost with its interval over launches (host/verdicts/differentials.py)
        "differentials": [d.to_dict() for d in differential_costs(scenes)],
    }


def write_run(record: RunRecord, device_order: tuple[str, ...], results_dir: Path) -> RunArtifacts:
    """Write run.json, a Chrome trace per scene and report.html of a session that measured anything. A document that breaks its schema
    is a bug of ours, but its numbers are still worth keeping: it goes to run.invalid.json, and the caller
    fails the session with the violations listed. Each file is written on its own: one that fails (a value
    the report cannot draw, a full disk) is listed in `failures` and never stops the other."""
    from .report.chrome_trace import write_traces
    from .report.diff_trace import write_diff_traces
    from .report.html import write_report

    artifacts = RunArtifacts()
    if not record.scenes:
        return artifacts
    try:
        document = record.document(device_order)
    except Exception as exc:  # noqa: BLE001 - reported, and the session fails; the CSVs are already written
        artifacts.failures.append(f"run.json and report.html: the run record could not be assembled: "
                                  f"{type(exc).__name__}: {exc}")
        return artifacts
    # JSON has no NaN: a non-finite number that got past the protocol boundary is a bug, reported as one,
    # and written as null rather than losing the file.
    document, non_finite = finite_document(document)
    artifacts.document = document
    try:
        artifacts.schema_errors = non_finite + validate_run(document)
    except Exception as exc:  # noqa: BLE001
        artifacts.schema_errors = [*non_finite, f"(root): the schema check failed: {type(exc).__name__}: {exc}"]
    run_path = results_dir / ("run.invalid.json" if artifacts.schema_errors else "run.json")
    for path, write in ((run_path, lambda: write_json_atomic(run_path, document)),
                        (results_dir / "<scene>.trace.json", lambda: write_traces(document, results_dir)),
                        (results_dir / "<scene>.diff.trace.json", lambda: write_diff_traces(document, results_dir)),
                        (results_dir / "report.html",
                         lambda: write_report(document, results_dir, results_dir / "report.html"))):
        try:
            write()
        except Exception as exc:  # noqa: BLE001 - each artifact on its own (README, Reliability)
            artifacts.failures.append(f"{path} could not be written: {type(exc).__name__}: {exc}")
    return artifacts


def finite_document(value: Any, where: str = "") -> tuple[Any, list[str]]:
    """`value` with NaN and infinities replaced by None, and where each one was (as schema error lines)."""
    found: list[str] = []

    def walk(item: Any, at: str) -> Any:
        if isinstance(item, float) and not math.isfinite(item):
            found.append(f"{at or '(root)'}: {item} is not a JSON number; written as null")
            return None
        if isinstance(item, dict):
            return {k: walk(v, f"{at}/{k}" if at else str(k)) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [walk(v, f"{at}/{i}" if at else str(i)) for i, v in enumerate(item)]
        return item

    return walk(value, where), found


def results_relative(path: Path | None, base: Path) -> str | None:
    """A file of the results folder as run.json and the JUnit properties name it: relative to that folder, so
    the name still points at the file once the folder is downloaded as an artifact somewhere else."""
    if path is None:
        return None
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)


def _empty_device() -> dict[str, Any]:
    return {"device": {"id": ""}, "gpu": {"backend": ""}, "display": {}, "conditions": {}}
