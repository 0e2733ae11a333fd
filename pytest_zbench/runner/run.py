"""`probe` and `run JOB OUTDIR`: the runner protocol (docs/runner-protocol.md) around the interpreter and a backend."""

from __future__ import annotations

import gc
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

import skia

from pytest_zbench.protocol import (
    PROTOCOL_VERSION,
    REFERENCE_COUNTER_COLUMNS,
    FramesWriter,
    Issue,
    Job,
    ProtocolError,
    ZbenchError,
    capture_name,
    progress_line,
    write_result_json,
)
from pytest_zbench.protocol.limits import MAX_SURFACE_SIDE
from pytest_zbench.runner import HOST_AT_START, RUNNER_NAME, STARTED, activity, conditions, host_load, runner_version
from pytest_zbench.runner.backends import BACKENDS, Backend, FrameTiming, open_backend
from pytest_zbench.runner.input_proxy import SyntheticTaps
from pytest_zbench.runner.interpreter import DisplayListError, MissingFont, Program, compile_scene
from pytest_zbench.runner.machine import machine_facts
from pytest_zbench.runner.memory import peak_rss_kb
from pytest_zbench.runner.pacing import make_pacer
from pytest_zbench.runner.process import process_start, usage

EXIT_OK = 0
EXIT_FAILED = 1  # the backend could not start or a frame raised
EXIT_USAGE = 2  # bad arguments or job file
EXIT_SKIPPED = 3  # the scene needs a feature this backend lacks
MAX_SIDE = MAX_SURFACE_SIDE
PROGRESS_EVERY_S = 0.25


class JobError(ZbenchError, ValueError):
    """A job the runner cannot accept; the message names the key."""


def probe(err: TextIO = sys.stderr) -> dict[str, Any]:
    backends = {}
    for name in BACKENDS:
        try:
            backend = open_backend(name)
            try:
                backends[name] = backend.probe_info()
            finally:
                backend.close()
        except Exception as exc:  # a backend that cannot start is left out; it must not hide the others
            print(f"probe: {exc}", file=err)
    import numpy

    libraries = {"skia-python": skia.__version__, "numpy": numpy.__version__}
    return {"protocol": PROTOCOL_VERSION, "runner": {"name": RUNNER_NAME, "version": runner_version()},
            "backends": backends, "machine": machine_facts(libraries), "toolchain": toolchain(libraries)}


def toolchain(libraries: dict[str, str]) -> dict[str, str]:
    """The probe's `toolchain` of the reference runner: it is not compiled, so its "compiler" is the
    interpreter (and the C compiler that built it) and its "flags" the versions of what renders."""
    import platform

    return {"compiler": f"{platform.python_implementation()} {platform.python_version()} "
                        f"({platform.python_compiler()})",
            "flags": ", ".join(f"{name} {version}" for name, version in libraries.items())}


def _check_scene(job: Job) -> list[str]:
    """Validate what Job.from_dict leaves to the runner; return the scene's declared features."""
    scene = job.scene
    for key in ("width", "height"):
        value = scene[key]
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SIDE:
            raise JobError(f"scene key {key!r}: {value!r} is not an integer in 1..{MAX_SIDE}")
    features = scene.get("features", [])
    if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
        raise JobError(f"scene key 'features': {features!r} is not a list of feature names")
    return features


def _usage_during(before: tuple[int, int] | None, after: tuple[int, int] | None) -> dict[str, int | None]:
    """The frame's minor_faults and preemptions columns: the process's counts after it less before."""
    if before is None or after is None:
        return {"minor_faults": None, "preemptions": None}
    return {"minor_faults": after[0] - before[0], "preemptions": after[1] - before[1]}


def _burn(seconds: float) -> None:
    """Busy-wait: a known CPU cost inside the timed section, to check that regressions are detected."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@dataclass
class _Stop:
    """Set by SIGTERM/SIGINT; the frame loop checks it between frames, so rows are never half-written."""

    signum: int | None = None

    def __call__(self, signum: int, _frame: Any) -> None:
        self.signum = signum


@dataclass
class _PendingRows:
    """Rows of frames.csv waiting for their GPU timing. Frame f is end_frame() call number f (captures come
    after the measured frames), so a late timing's ordinal is its frame index."""

    timings: dict[int, FrameTiming] = field(default_factory=dict)
    cells: dict[int, dict[str, Any]] = field(default_factory=dict)
    next_frame: int = 0

    def add(self, frame: int, timing: FrameTiming, cells: dict[str, Any]) -> None:
        self.timings[frame] = timing
        self.cells[frame] = cells

    def settle(self, late: list[tuple[int, FrameTiming]]) -> None:
        for ordinal, timing in late:
            if ordinal in self.timings:  # a late timing replaces the pending one entirely, issues included
                self.timings[ordinal] = timing

    def ready(self, final: bool = False) -> list[tuple[int, FrameTiming, dict[str, Any]]]:
        """Rows that can be written now, in frame order: complete ones up to the first pending one; with
        `final`, every row left (a timing that never came is written without its GPU values)."""
        out = []
        while self.next_frame in self.timings:
            timing = self.timings[self.next_frame]
            if timing.pending and not final:
                break
            if timing.pending:
                timing = replace(timing, pending=False, gpu_ms=None)
            out.append((self.next_frame, timing, self.cells.pop(self.next_frame)))
            del self.timings[self.next_frame]
            self.next_frame += 1
        return out


@dataclass
class _Run:
    job: Job
    outdir: Path
    backend: Backend
    program: Program
    cpu_burn_ms: float
    out: TextIO
    stop: _Stop
    issues: list[Issue] = field(default_factory=list)
    frames_rendered: int = 0
    cpu_burn_per_draw_us: float = 0.0
    ended_at_duration: bool = False  # a sustained job's measured frames reached its duration_s
    activity: dict[str, Any] | None = None  # CPU time and wake-ups over the measured frames (runner/activity.py)
    taps: SyntheticTaps | None = None  # the input-to-photon proxy's taps, for a scene with a tap_target
    conditions_at_start: dict[str, Any] = field(default_factory=dict)  # result.json conditions.start

    def complexity_at(self, frame: int) -> float | None:
        values = self.job.complexity
        if values is None:
            return None
        return values[frame] if frame < len(values) else values[-1]

    def frames(self) -> None:
        job, backend, program = self.job, self.backend, self.program
        width, height = job.scene["width"], job.scene["height"]
        surface = backend.make_surface(width, height)
        canvas = surface.getCanvas()
        pacer = make_pacer(job.mode, job.refresh_hz)
        total, warmup, burn_s = job.total_frames, job.warmup_frames, self.cpu_burn_ms / 1000.0
        burn_per_draw_s = self.cpu_burn_per_draw_us / 1e6
        # A sustained job stops its measured frames at its duration, counted from the first one's start.
        duration_ns = None if job.duration_s is None else round(job.duration_s * 1e9)
        measure_start: int | None = None
        measured_from: activity.ActivitySample | None = None
        taps = self.taps = (SyntheticTaps(program.tap_every, job.seed) if program.tap_every is not None else None)
        last_progress = 0.0
        # A GPU clock that reports frames late (a ring of timer queries) need not stall: rows wait in `rows`
        # until their timing is complete and are written in frame order (docs/gpu-timing.md).
        backend.collects_late_timings = True
        rows = _PendingRows()
        # Python's cyclic collector would add pauses that belong to this harness, not to the scene.
        gc.collect()
        gc.disable()
        try:
            with FramesWriter(self.outdir / "frames.csv", REFERENCE_COUNTER_COLUMNS) as writer:
                try:
                    for f in range(total):
                        if self.stop.signum is not None:
                            break
                        complexity = self.complexity_at(f)
                        if f == warmup:
                            measured_from = activity.sample()
                        tapped = taps is not None and taps.reflects_tap(f)
                        if taps is not None and tapped:
                            taps.tap(pacer.next_start_ns())
                        t_start = pacer.begin()
                        if duration_ns is not None and f >= warmup:
                            measure_start = t_start if measure_start is None else measure_start
                            if t_start - measure_start >= duration_ns:
                                self.ended_at_duration = True
                                break
                        before = usage()
                        backend.begin_frame()
                        counters = program.render(canvas, f, complexity, tapped)
                        if burn_s or burn_per_draw_s:
                            _burn(burn_s + burn_per_draw_s * counters.draw_calls)
                        timing = backend.end_frame()
                        interval = pacer.end()
                        if taps is not None and tapped:  # read before the counting walk moves the schedule
                            taps.presented(f, pacer.present_ns(), measured=f >= warmup)
                        after = usage()
                        # Outside the frame's clocks and the pacer's schedule: the counting walk (once for a
                        # scene whose frames are alike).
                        walk_start = time.monotonic_ns()
                        counts = program.count(f, complexity, width, height)
                        pacer.exclude(time.monotonic_ns() - walk_start)
                        rows.add(f, timing, dict(
                            frame=f, phase="warmup" if f < warmup else "measure", t_start_ns=t_start,
                            present_interval_ms=interval, complexity=complexity, draw_calls=counters.draw_calls,
                            texture_upload_bytes=counters.upload_bytes, **counts,
                            **_usage_during(before, after), stolen_ms=timing.stolen_ms))
                        self.frames_rendered = f + 1
                        rows.settle(backend.late_timings())
                        self._write_ready(rows, writer)
                        now = time.perf_counter()
                        if now - last_progress >= PROGRESS_EVERY_S or f + 1 == total:
                            last_progress = now
                            print(progress_line(f + 1, total), file=self.out, flush=True)
                finally:
                    if measured_from is not None:
                        self.activity = activity.activity_between(measured_from, activity.sample())
                    # After the last frame, on SIGTERM and after a frame that raised: wait for the timings
                    # still outstanding, so that every rendered frame's row is written before anything else.
                    try:
                        rows.settle(backend.late_timings(final=True))
                    except Exception as exc:  # the rows are still written, without the values that never came
                        self.issues.append(Issue("error", f"waiting for late GPU timings failed: "
                                                          f"{type(exc).__name__}: {exc}"))
                    self._write_ready(rows, writer, final=True)
        finally:
            gc.enable()
        if self.stop.signum is None:
            self.captures(surface, canvas)

    def _write_ready(self, rows: _PendingRows, writer: FramesWriter, final: bool = False) -> None:
        for f, timing, row in rows.ready(final=final):
            writer.write(**row, cpu_ms=timing.cpu_ms, gpu_ms=timing.gpu_ms, gpu_source=timing.gpu_source,
                         disjoint=timing.disjoint, gl_error=timing.gl_error, cpu_record_ms=timing.record_ms,
                         cpu_flush_ms=timing.flush_ms, cpu_submit_ms=timing.submit_ms)
            self.issues.extend(i if i.frame is not None else replace(i, frame=f) for i in timing.issues)

    def captures(self, surface: skia.Surface, canvas: skia.Canvas) -> None:
        # After the measured frames, so readback never perturbs their timing; any frame index can be asked for.
        for frame in sorted(set(self.job.capture)):
            if self.stop.signum is not None:
                return
            self.backend.begin_frame()
            # The same frame as measured: the tap schedule is fixed by frame index.
            tapped = self.program.tap_every is not None and frame >= 1 and (frame - 1) % self.program.tap_every == 0
            self.program.render(canvas, frame, self.complexity_at(frame), tapped)
            self.backend.end_frame()
            pixels = self.backend.read_rgba(surface)
            image = skia.Image.fromarray(pixels, colorType=skia.kRGBA_8888_ColorType,
                                         alphaType=skia.kUnpremul_AlphaType)
            (self.outdir / capture_name(frame)).write_bytes(bytes(image.encodeToData(skia.kPNG, 100)))

    def write_result(self) -> None:
        write_result(self.outdir, self.job, self.backend, self.issues, self.frames_rendered, self.cpu_burn_ms,
                     self.cpu_burn_per_draw_us, self.activity,
                     self.taps.result() if self.taps is not None else None,
                     conditions_at_start=self.conditions_at_start)


def write_result(outdir: Path, job: Job, backend: Backend, issues: list[Issue], frames_rendered: int,
                 cpu_burn_ms: float, cpu_burn_per_draw_us: float = 0.0,
                 measured_activity: dict[str, Any] | None = None,
                 input_to_photon: dict[str, Any] | None = None, *,
                 conditions_at_start: dict[str, Any]) -> None:
    info = backend.probe_info()

    started_ns, started_from = process_start()
    write_result_json(
        outdir / "result.json",
        backend=backend.name,
        timer_source=backend.timer_source,
        present_source="simulated_vsync" if job.mode == "paced" else "frame_delta",
        gpu={k: v for k, v in info.items() if k != "features"},
        issues=issues,
        wall_ms=round((time.perf_counter() - STARTED) * 1000.0, 3),
        frames_rendered=frames_rendered,
        cpu_burn_ms=cpu_burn_ms,
        cpu_burn_per_draw_us=cpu_burn_per_draw_us,
        # Cold start counts from the process's start, on the clock of t_start_ns (docs/runner-protocol.md).
        process_start_ns=started_ns,
        process_start_source=started_from,
        peak_rss_kb=peak_rss_kb(),
        activity=measured_activity,
        # what other tasks ran on the device over the whole run, for the busy-host guard (runner/host_load.py)
        host_load=host_load.between(HOST_AT_START, host_load.sample()),
        **({"input_to_photon": input_to_photon} if input_to_photon is not None else {}),
        # the start sample was taken before the first frame (run), the end one now, after the last
        conditions={"start": conditions_at_start, "end": conditions.sample()},
    )



def run(job_path: str, outdir_path: str, *, cpu_burn_ms: float = 0.0, cpu_burn_per_draw_us: float = 0.0,
        out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    outdir = Path(outdir_path)
    if not outdir.is_dir():
        print(f"run: output directory {outdir} does not exist", file=err)
        return EXIT_USAGE
    try:
        job = Job.load(job_path)
        declared = _check_scene(job)
    except (ProtocolError, JobError) as exc:
        print(f"run: bad job {job_path}: {exc}", file=err)
        return EXIT_USAGE
    if job.backend not in BACKENDS:
        print(f"run: bad job {job_path}: key 'backend': {job.backend!r} is not one of {sorted(BACKENDS)}", file=err)
        return EXIT_USAGE
    try:
        backend = open_backend(job.backend, timer=job.gpu_timer)
    except Exception as exc:  # BackendUnavailable, or a driver failing in a way its backend did not foresee
        print(f"run: backend {job.backend!r} cannot start: {exc}", file=err)
        return EXIT_FAILED

    at_start = conditions.sample()
    stop = _Stop()
    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        return _run_with(job, job_path, declared, outdir, backend, cpu_burn_ms, out, err, stop, cpu_burn_per_draw_us,
                         conditions_at_start=at_start)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        backend.close()


def _run_with(job: Job, job_path: str, declared: list[str], outdir: Path, backend: Backend,
              cpu_burn_ms: float, out: TextIO, err: TextIO, stop: _Stop, cpu_burn_per_draw_us: float = 0.0, *,
              conditions_at_start: dict[str, Any]) -> int:
    supported = backend.features

    def skipped(features: frozenset[str]) -> int:
        detail = f"backend {backend.name!r} lacks feature(s) {', '.join(sorted(features))}"
        print(f"run: skipped: {detail}", file=err)
        write_result(outdir, job, backend, [Issue("feature_skipped", detail)], 0, cpu_burn_ms,
                     conditions_at_start=conditions_at_start)
        return EXIT_SKIPPED

    # Declared features first: a scene naming a feature this runner has never heard of is skipped, not failed.
    if missing := frozenset(declared) - supported:
        return skipped(missing)
    try:
        program = compile_scene(job.scene["ops"], complexity=job.complexity,
                                upload_image=backend.upload_image, upload_compressed=backend.upload_compressed)
    except DisplayListError as exc:
        print(f"run: bad job {job_path}: scene.{exc}", file=err)
        return EXIT_USAGE
    except MissingFont as exc:  # the device lacks what the scene draws with: a failure, never a fallback
        print(f"run: {exc}", file=err)
        write_result(outdir, job, backend, [Issue("error", str(exc))], 0, cpu_burn_ms,
                     conditions_at_start=conditions_at_start)
        return EXIT_FAILED
    if missing := program.features - supported:
        return skipped(missing)

    state = _Run(job, outdir, backend, program, cpu_burn_ms, out, stop, issues=list(program.issues),
                 cpu_burn_per_draw_us=cpu_burn_per_draw_us, conditions_at_start=conditions_at_start)
    code = EXIT_OK
    try:
        state.frames()
    except Exception as exc:  # a frame that raised: keep what was measured, say where it stopped
        traceback.print_exc(file=err)
        state.issues.append(Issue("error", f"{type(exc).__name__}: {exc}", state.frames_rendered))
        code = EXIT_FAILED
    if stop.signum is not None:
        name = signal.Signals(stop.signum).name
        if state.frames_rendered == job.total_frames:
            where = "after every frame, before all captures were written"
        else:
            where = f"after {state.frames_rendered} of {job.total_frames} frames"
        state.issues.append(Issue("partial", f"stopped by {name} {where}", state.frames_rendered))
        code = 128 + stop.signum
    elif code == EXIT_OK and state.frames_rendered < job.total_frames and not state.ended_at_duration:
        code = EXIT_FAILED
    state.write_result()
    return code
