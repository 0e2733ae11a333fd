"""`zbench check-runner`: run the conformance checks against a device's runner, through its transport."""

from __future__ import annotations

import datetime as _dt
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from ..errors import UsageError
from ..host.devices.device import env_secrets, sanitise
from ..inventory import DeviceSpec
from ..transports import make_transport
from . import behaviour_checks as behaviour
from . import capture_checks as captures
from . import frame_checks as frames
from .context import Context, column, numbers, result
from .jobs import (
    FEATURES,
    KIT_SURFACE,
    feature_scene,
    kit_scene,
    load_project_corpus,
    make_job,
    sampler_job,
    unknown_feature_job,
)
from .launcher import Launcher, keep_folder
from .probe_checks import check_backend, run_probe
from .reference import ReferenceRenderer
from .report import CheckResult, Report
from .sizing import FULL, PACED_FRAMES, PACED_WARMUP, frame_seconds, sizes_for

DEFAULT_REFRESH_HZ = 60.0
PLAIN_TIMEOUT_S = 120.0
# The SIGTERM job is long (10 minutes paced); the host stops it this long after the plain paced job's
# whole wall time, start-up included, so the runner is surely rendering by then.
SIGTERM_AFTER_S = 1.0
SIGTERM_FRAMES = 36_000
# The cheap and the dear complexity of each op's complexity job (a batch's rects are cheap: it needs more).
COMPLEXITY_LEVELS = {"repeat": (2.0, 300.0), "rect_batch": (2.0, 20_000.0), "mesh": (2.0, 300.0),
                     "shader": (2.0, 300.0)}

ORDER = ("probe.protocol", "probe.schema", "probe.backend", "job.runs", "result.schema", "frames.header",
         "frames.rows", "frames.phases", "frames.t_start", "frames.cpu_units", "frames.gpu_source", "frames.stolen_ms",
         "pacing.paced",
         "pacing.uncapped", *(f"feature.{f}" for f in FEATURES), "capture.written", "capture.format",
         "capture.determinism", "capture.reference", "complexity", "job.unknown_feature", "job.malformed",
         "signal.sigterm", "progress", "outdir.confined")

Note = Callable[[str], None]


def parse_features(text: str | None) -> frozenset[str] | None:
    if text is None:
        return None
    names = frozenset(f.strip() for f in text.split(",") if f.strip())
    unknown = sorted(names - set(FEATURES))
    if unknown or not names:
        raise UsageError(f"--features: {', '.join(unknown) or 'nothing given'}: give display-list ops "
                         f"({', '.join(FEATURES)}), comma separated")
    return names


def check_runner(spec: DeviceSpec, *, features: frozenset[str] | None = None, scenes_dir: Path | None = None,
                 goldens_dir: Path | None = None, keep: str | Path | None = None,
                 note: Note | None = None) -> Report:
    """Run every check against the runner of `spec`; never raises for what the runner does."""
    started = time.monotonic()
    report = Report(device=spec.name, transport=spec.transport, backend=spec.backend, runner=list(spec.runner),
                    started_utc=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    transport = make_transport(spec)  # a transport this installation lacks is a usage error, before anything
    keep_dir, temporary = keep_folder(keep)
    try:
        transport.open()
        launcher = Launcher(transport, spec.runner, keep_dir, transport_kind=spec.transport)
        refresh = spec.display.refresh_hz if spec.display is not None else DEFAULT_REFRESH_HZ
        ctx = Context(spec, launcher, ReferenceRenderer(keep_dir), keep_dir, refresh, features)
        try:
            _run(ctx, scenes_dir, goldens_dir, note or (lambda _: None))
        finally:
            launcher.close()
        by_name = ctx.results
        ordered = [by_name[n] for n in ORDER if n in by_name] + [r for n, r in by_name.items() if n not in ORDER]
        raw = ctx.probe_raw or {}
        runner: dict[str, object] = raw["runner"] if isinstance(raw.get("runner"), dict) else {}
        # What the runner wrote reaches the terminal and --json as a session's would: the device's env values
        # masked, control characters escaped (host/devices/device.py, sanitise).
        secrets = env_secrets(spec)
        report.results = [replace(r, detail=sanitise(r.detail, secrets), fix=sanitise(r.fix, secrets),
                                  seconds=round(ctx.spent[r.name], 3) if r.name in ctx.spent else None)
                          for r in ordered]
        report.sizing = ctx.sizes.describe()
        report.runner_name, report.runner_version = (sanitise(str(runner.get(key, "")), secrets)
                                                     for key in ("name", "version"))
    finally:
        transport.close()
        report.wall_s = time.monotonic() - started
        if temporary:
            shutil.rmtree(keep_dir, ignore_errors=True)
        else:
            report.artifacts = str(keep_dir)
    return report


def _display_size(ctx: Context) -> tuple[int, int] | None:
    """The device's screen (the inventory's, else the probe's), or None when neither says."""
    if ctx.spec.display is not None:
        return ctx.spec.display.width, ctx.spec.display.height
    shown = (ctx.probe_raw or {}).get("display")
    if isinstance(shown, dict) and all(isinstance(shown.get(k), int) for k in ("width", "height")):
        return shown["width"], shown["height"]
    return None


def _record(ctx: Context, results: Iterable[CheckResult]) -> None:
    for r in results:
        ctx.record(r)


def _run(ctx: Context, scenes_dir: Path | None, goldens_dir: Path | None, note: Note) -> None:
    spec = ctx.spec
    timeout = spec.timeout_s or PLAIN_TIMEOUT_S
    note("probe")
    started = time.monotonic()
    _record(ctx, run_probe(ctx))
    ctx.spent["probe.schema"] = time.monotonic() - started
    ctx.record(check_backend(ctx))
    if ctx.probe_raw is not None and spec.display is None and isinstance(ctx.probe_raw.get("display"), dict):
        hz = ctx.probe_raw["display"].get("refresh_hz")
        if isinstance(hz, (int, float)) and not isinstance(hz, bool) and hz > 0:
            ctx.refresh_hz = float(hz)
    if ctx.results["probe.backend"].status != "pass":
        for name in ORDER:
            if name not in ctx.results:
                ctx.record(result(name, "n/a", ctx.blocked("probe.backend") or ""))
        return
    backend, hz, launch = ctx.backend, ctx.refresh_hz, ctx.launcher.launch

    def run(name: str, job, deadline: float = timeout, *, check: str, **kw):  # type: ignore[no-untyped-def]
        note(name)
        started = time.monotonic()
        ctx.launches[name] = launch(name, job, timeout_s=deadline, **kw)
        ctx.spent[check] = ctx.spent.get(check, 0.0) + time.monotonic() - started
        return ctx.launches[name]

    timing = kit_scene("timing")
    paced = run("paced", make_job(timing, backend, mode="paced", refresh_hz=hz, warmup=PACED_WARMUP,
                                  frames=PACED_FRAMES, capture=(0,)), check="pacing.paced")
    # The first launch measures the device; the jobs after it are sized to it (conformance/sizing.py).
    starts = numbers(column(paced, "t_start_ns"))
    ctx.sizes = sizes_for(frame_seconds(starts)) if paced.ok else FULL
    note(f"sizing: {ctx.sizes.describe()}")
    run("uncapped", make_job(timing, backend, mode="uncapped", refresh_hz=hz, warmup=ctx.sizes.uncapped_warmup,
                             frames=ctx.sizes.uncapped_frames, capture=()), check="pacing.uncapped")
    for check in (frames.check_runs, frames.check_result, frames.check_header, frames.check_rows,
                  frames.check_phases, frames.check_paced, frames.check_uncapped, frames.check_t_start,
                  frames.check_cpu_units, frames.check_gpu_source, frames.check_stolen):
        ctx.record(check(ctx))

    corpus = load_project_corpus(scenes_dir)
    display = _display_size(ctx)
    checked = ctx.checked_features() if ctx.results["job.runs"].status == "pass" else []
    for feature in checked:
        scene = feature_scene(feature, ctx.features, corpus, goldens_dir, display, ctx.sizes.max_pixels)
        ctx.feature_scenes[feature] = scene
        run(f"feature.{feature}", make_job(scene.case, backend, mode="uncapped", refresh_hz=hz, warmup=0, frames=2,
                                           size=(scene.width, scene.height)), check=f"feature.{feature}")
    for feature in FEATURES:
        ctx.record(captures.check_feature(ctx, feature))
    rendered = [f for f in FEATURES if ctx.results[f"feature.{f}"].status == "pass"]
    if rendered:
        sampler = sampler_job(rendered, backend, hz, ctx.sizes.sampler_frames)
        run("determinism-1", sampler, check="capture.determinism")
        run("determinism-2", sampler, check="capture.determinism")
    for check in (captures.check_written, captures.check_format, captures.check_determinism,
                  captures.check_reference):
        ctx.record(check(ctx))

    if ctx.results["frames.rows"].status == "pass":
        for op in captures.complexity_ops(ctx):
            measured = ctx.sizes.complexity_frames
            levels = tuple(COMPLEXITY_LEVELS[op][n % 2] for n in range(2 + measured))
            run(captures.complexity_launch(op), make_job(kit_scene(captures.complexity_launch(op)), backend,
                                                         mode="uncapped", refresh_hz=hz, warmup=2, frames=measured,
                                                         capture=(), complexity=levels), check="complexity")
    ctx.record(captures.check_complexity(ctx))

    if ctx.results["job.runs"].status == "pass":
        run("unknown-feature", unknown_feature_job(backend, hz), check="job.unknown_feature")
    ctx.record(behaviour.check_unknown_feature(ctx))
    good = make_job(kit_scene("rect"), backend, mode="uncapped", refresh_hz=hz, warmup=0, frames=2, capture=())
    texts = {"malformed-json": good.to_json()[:40],
             "malformed-protocol": replace(good, protocol=2).to_json(),
             "malformed-mode": replace(good, mode="turbo").to_json()}
    for name, _ in behaviour.MALFORMED:
        run(name, None, job_text=texts[name], check="job.malformed")
    ctx.record(behaviour.check_malformed(ctx))

    if ctx.results["frames.rows"].status == "pass":
        long_job = make_job(timing, backend, mode="paced", refresh_hz=hz, warmup=0, frames=SIGTERM_FRAMES, capture=())
        deadline = ctx.launches["paced"].result.wall_s + SIGTERM_AFTER_S
        stopped = run("sigterm", long_job, deadline, check="signal.sigterm")
        # A slow start (no frame reported before the SIGTERM) is tried once more, and both launches are judged:
        # a launch that reported frames and kept no rows lost them, which a retry must not hide.
        if stopped.result.timed_out and not stopped.frames.rows and behaviour.frames_reported(stopped) == 0:
            run(behaviour.SIGTERM_RETRY, long_job, 2 * deadline + 2.0, check="signal.sigterm")
    ctx.record(behaviour.check_sigterm(ctx))
    ctx.record(behaviour.check_progress(ctx))
    ctx.record(behaviour.check_outdir(ctx))


__all__ = ["KIT_SURFACE", "ORDER", "check_runner", "parse_features"]
