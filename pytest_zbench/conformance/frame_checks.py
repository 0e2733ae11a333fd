"""The kit's two plain jobs (conformance.timing, paced and uncapped): exit status, result.json, frames.csv
column by column, and the pacing of present_interval_ms. Each column's rules belong to one check, so a runner
that breaks one rule fails one check."""

from __future__ import annotations

import statistics

from ..protocol import FRAME_COLUMNS, GPU_SOURCES, PHASES
from ..schema import violations
from .context import Context, column, frames_problems, listing, numbers, result
from .launcher import Launch
from .report import CheckResult

PLAIN = ("paced", "uncapped")
# Columns judged by a check of their own; frames.rows judges the schema of every other cell.
OWN_CHECK = ("phase", "t_start_ns", "cpu_ms", "gpu_source", "present_interval_ms")
# A paced interval may sit this far from a whole number of refresh periods (a real display's timestamps jitter).
PACED_SLACK = 0.05
# Uncapped frames look paced when nearly all intervals sit this close to whole periods: a CPU-bound frame loop
# on a loaded machine jitters by more.
UNCAPPED_SLACK = 0.02
UNCAPPED_PACED_SHARE = 0.9
# cpu_ms in seconds would be 1000 times too small: the CPU time of an uncapped frame loop drawing 48 rects a
# frame is far above 1 % of its duration on any device (the reference runner: 50-90 %).
CPU_SHARE_MIN = 0.01
SLACK_MS = 50.0
# stolen_ms is read around the frame's clocks, a little outside cpu_ms's (docs/runner-protocol.md): it may pass
# the frame's cpu_ms by this much.
STOLEN_SLACK_MS = 0.5


def plain(ctx: Context) -> list[Launch]:
    return [ctx.launches[name] for name in PLAIN if name in ctx.launches]


def check_runs(ctx: Context) -> CheckResult:
    bad = []
    for launch in plain(ctx):
        if not launch.ok:
            bad.append(f"the {launch.name} job {launch.describe_exit()}: {launch.stderr_tail()}")
        elif launch.frames.error == "frames.csv was not written" or launch.result_error == "result.json was not written":
            missing = [n for n, e in (("frames.csv", launch.frames.error), ("result.json", launch.result_error))
                       if e and "not written" in e]
            bad.append(f"the {launch.name} job wrote no {' or '.join(missing)}")
    if bad:
        return result("job.runs", "fail", listing(bad),
                      "render every frame of a valid job, write OUTDIR/frames.csv and OUTDIR/result.json, exit 0")
    jobs = ", ".join(f"{l.name} ({l.job.total_frames} frames, {l.result.wall_s:.2f} s)" for l in plain(ctx) if l.job)
    return result("job.runs", "pass", f"exit 0, frames.csv and result.json written: {jobs}")


def check_result(ctx: Context) -> CheckResult:
    if why := ctx.blocked("job.runs"):
        return result("result.schema", "n/a", why)
    bad = []
    for launch in plain(ctx):
        if launch.result_error:
            bad.append(f"{launch.name}: {launch.result_error}")
            continue
        raw = launch.result_json
        bad += [f"{launch.name}: {v}" for v in violations("result", raw)]
        if isinstance(raw, dict) and launch.job and raw.get("backend") != launch.job.backend:
            bad.append(f"{launch.name}: backend {raw.get('backend')!r}, the job's is {launch.job.backend!r}")
    if bad:
        return result("result.schema", "fail", listing(bad),
                      "write result.json matching pytest_zbench/schema/result.schema.json, with the job's backend")
    return result("result.schema", "pass", "valid against result.schema.json, the job's backend")


def check_header(ctx: Context) -> CheckResult:
    if why := ctx.blocked("job.runs"):
        return result("frames.header", "n/a", why)
    bad = []
    for launch in plain(ctx):
        frames = launch.frames
        if frames.error:
            bad.append(f"{launch.name}: {frames.error}")
            continue
        header = frames.header or []
        missing = [c for c in FRAME_COLUMNS if c not in header]
        twice = sorted({c for c in header if header.count(c) > 1})
        if missing:
            bad.append(f"{launch.name}: no column {', '.join(missing)}")
        if twice:
            bad.append(f"{launch.name}: column {', '.join(twice)} twice")
        if "" in header:
            bad.append(f"{launch.name}: a column without a name")
    if bad:
        return result("frames.header", "fail", listing(bad),
                      f"start frames.csv (UTF-8) with the header {','.join(FRAME_COLUMNS)} (any order; extra "
                      f"columns allowed)")
    extra = sorted({c for l in plain(ctx) for c in (l.frames.header or []) if c not in FRAME_COLUMNS})
    return result("frames.header", "pass", "every column of frames.schema.json" +
                  (f", extra counters {', '.join(extra)}" if extra else ""))


def check_rows(ctx: Context) -> CheckResult:
    if why := ctx.blocked("frames.header"):
        return result("frames.rows", "n/a", why)
    bad = []
    for launch in plain(ctx):
        assert launch.job is not None
        header = launch.frames.header or []
        short = [n + 2 for n, row in enumerate(launch.frames.rows) if len(row) != len(header)]
        if short:
            bad.append(f"{launch.name}: line {short[0]} has a cell count other than the header's")
        frames = [c.get("frame", "").strip() for c in launch.frames.cells()]
        expected = [str(f) for f in range(launch.job.total_frames)]
        if frames != expected:
            bad.append(f"{launch.name}: frames {_span(frames)}, expected 0..{launch.job.total_frames - 1} once "
                       f"each, in order")
    bad += frames_problems(plain(ctx), None, exclude=OWN_CHECK)
    if bad:
        return result("frames.rows", "fail", listing(bad),
                      "write one row per rendered frame, frame 0 first, warmup included, each cell as "
                      "frames.schema.json says (empty = unknown)")
    count = sum(len(l.frames.rows) for l in plain(ctx))
    return result("frames.rows", "pass", f"one row per frame in order ({count} rows), cells valid")


def _span(frames: list[str]) -> str:
    if len(frames) <= 8:
        return "[" + ", ".join(frames) + "]"
    return f"[{', '.join(frames[:4])}, ..., {', '.join(frames[-3:])}] ({len(frames)} rows)"


def check_phases(ctx: Context) -> CheckResult:
    if why := ctx.blocked("frames.rows"):
        return result("frames.phases", "n/a", why)
    bad = frames_problems(plain(ctx), ("phase",))
    for launch in plain(ctx):
        assert launch.job is not None
        for n, cells in enumerate(launch.frames.cells()):
            want = PHASES[0] if n < launch.job.warmup_frames else PHASES[1]
            if cells.get("phase", "").strip() != want:
                bad.append(f"{launch.name} frame {n}: phase {cells.get('phase')!r}, expected {want} "
                           f"(warmup_frames {launch.job.warmup_frames})")
                break
    if bad:
        return result("frames.phases", "fail", listing(bad),
                      "phase is warmup for frames 0 .. warmup_frames-1 and measure for the rest")
    return result("frames.phases", "pass", "warmup for the warmup frames, measure after")


def _measured_intervals(launch: Launch) -> list[float]:
    return numbers(column(launch, "present_interval_ms", phase="measure"))


def check_paced(ctx: Context) -> CheckResult:
    if why := ctx.blocked("frames.rows"):
        return result("pacing.paced", "n/a", why)
    launch = ctx.launches["paced"]
    bad = frames_problems([launch], ("present_interval_ms",))
    values = column(launch, "present_interval_ms", phase="measure")
    period = ctx.period_ms
    fix = (f"in paced mode present each frame on a vsync at refresh_hz: present_interval_ms is a whole number "
           f"(1, 2, ...) of refresh periods ({period:.3f} ms at {ctx.refresh_hz:g} Hz)")
    if any(v is None for v in values):
        bad.append(f"{values.count(None)} measured frames have no present_interval_ms")
    off = []
    for value in numbers(values):
        periods = value / period
        if round(periods) < 1 or abs(periods - round(periods)) > PACED_SLACK:
            off.append(f"{value:g} ms ({periods:.2f} periods)")
    if off:
        bad.append(f"{len(off)} of {len(values)} measured intervals are not whole refresh periods: {listing(off, 3)}")
    if bad:
        return result("pacing.paced", "fail", listing(bad), fix)
    multiples = sorted({round(v / period) for v in numbers(values)})
    return result("pacing.paced", "pass", f"{len(values)} intervals, all whole periods of {period:.3f} ms "
                                          f"({', '.join(f'{m}x' for m in multiples)})")


def check_uncapped(ctx: Context) -> CheckResult:
    if why := ctx.blocked("frames.rows"):
        return result("pacing.uncapped", "n/a", why)
    launch = ctx.launches["uncapped"]
    bad = frames_problems([launch], ("present_interval_ms",))
    values = column(launch, "present_interval_ms", phase="measure")
    intervals = numbers(values)
    period = ctx.period_ms
    if any(v is None for v in values):
        bad.append(f"{values.count(None)} measured frames have no present_interval_ms")
    quantised = [v for v in intervals if round(v / period) >= 1 and abs(v / period - round(v / period)) <= UNCAPPED_SLACK]
    if intervals and len(quantised) >= UNCAPPED_PACED_SHARE * len(intervals):
        bad.append(f"{len(quantised)} of {len(intervals)} uncapped intervals are whole refresh periods "
                   f"(median {statistics.median(intervals):g} ms): the frames were paced")
    total = sum(numbers(column(launch, "present_interval_ms")))
    if total > launch.result.wall_s * 1000.0 + SLACK_MS:
        bad.append(f"the intervals add up to {total:.0f} ms, longer than the whole launch ({launch.result.wall_s * 1000:.0f} "
                   f"ms): not milliseconds")
    if bad:
        return result("pacing.uncapped", "fail", listing(bad),
                      "in uncapped mode never wait for vsync; present_interval_ms is the time in ms between "
                      "consecutive frame ends")
    return result("pacing.uncapped", "pass", f"{len(intervals)} intervals, median {statistics.median(intervals):.3f} ms, "
                                             f"not vsync-paced")


def check_t_start(ctx: Context) -> CheckResult:
    if why := ctx.blocked("frames.rows"):
        return result("frames.t_start", "n/a", why)
    bad = frames_problems(plain(ctx), ("t_start_ns",))
    notes = []
    fix = "t_start_ns is each frame's start in nanoseconds on a monotonic clock (never empty, strictly increasing)"
    for launch in plain(ctx):
        values = column(launch, "t_start_ns")
        if any(v is None for v in values):
            bad.append(f"{launch.name}: {values.count(None)} frames have no t_start_ns")
            continue
        starts = [int(v) for v in numbers(values)]
        back = [n for n in range(1, len(starts)) if starts[n] <= starts[n - 1]]
        if back:
            bad.append(f"{launch.name}: t_start_ns does not increase at frame {back[0]} "
                       f"({starts[back[0] - 1]} then {starts[back[0]]})")
            continue
        span_ms = (starts[-1] - starts[0]) / 1e6 if starts else 0.0
        if span_ms > launch.result.wall_s * 1000.0 + SLACK_MS:
            bad.append(f"{launch.name}: the frames span {span_ms:.0f} ms of t_start_ns, longer than the launch "
                       f"({launch.result.wall_s * 1000:.0f} ms): not nanoseconds")
        if launch.name == "paced" and len(starts) > 1:
            least = 0.5 * (len(starts) - 1) * ctx.period_ms
            if ctx.results.get("pacing.paced") is not None and ctx.results["pacing.paced"].status != "pass":
                notes.append("the paced span was not judged (pacing.paced did not pass)")
            elif span_ms < least:
                bad.append(f"paced: {len(starts)} paced frames span only {span_ms:.3f} ms of t_start_ns, at least "
                           f"{least:.0f} ms passed: not nanoseconds")
    if bad:
        return result("frames.t_start", "fail", listing(bad), fix)
    return result("frames.t_start", "pass", "strictly increasing, nanoseconds" + (f"; {notes[0]}" if notes else ""))


def check_cpu_units(ctx: Context) -> CheckResult:
    if why := ctx.blocked("frames.t_start"):
        return result("frames.cpu_units", "n/a", why)
    bad = frames_problems(plain(ctx), ("cpu_ms",))
    fix = "cpu_ms is the frame's CPU wall time in milliseconds (not seconds, not microseconds)"
    share = None
    for launch in plain(ctx):
        values = column(launch, "cpu_ms")
        cpu = numbers(values)
        if len(cpu) < len(values) / 2:
            bad.append(f"{launch.name}: {values.count(None)} of {len(values)} frames have no cpu_ms")
            continue
        wall_ms = launch.result.wall_s * 1000.0
        if sum(cpu) > wall_ms + SLACK_MS:
            bad.append(f"{launch.name}: cpu_ms adds up to {sum(cpu):.0f} ms, longer than the whole launch "
                       f"({wall_ms:.0f} ms): microseconds?")
        if launch.name == "uncapped":
            starts = numbers(column(launch, "t_start_ns", phase="measure"))
            measured = numbers(column(launch, "cpu_ms", phase="measure"))[:-1]
            span_ms = (starts[-1] - starts[0]) / 1e6 if len(starts) > 1 else 0.0
            if span_ms > 0:
                share = sum(measured) / span_ms
                if share < CPU_SHARE_MIN:
                    bad.append(f"uncapped: cpu_ms adds up to {sum(measured):.4f} ms over {span_ms:.1f} ms of frames "
                               f"({share:.2%} of the time): seconds?")
    if bad:
        return result("frames.cpu_units", "fail", listing(bad), fix)
    return result("frames.cpu_units", "pass", "milliseconds: within the launch's wall time" +
                  (f", {share:.0%} of the uncapped frame loop" if share is not None else ""))


def check_gpu_source(ctx: Context) -> CheckResult:
    if why := ctx.blocked("frames.rows", "result.schema"):
        return result("frames.gpu_source", "n/a", why)
    bad = frames_problems(plain(ctx), ("gpu_source",))
    fix = (f"tag every row with the launch's one GPU time source ({', '.join(GPU_SOURCES)}), the one result.json's "
           f"timer_source names and the probe lists; leave gpu_ms empty with none")
    seen = set()
    for launch in plain(ctx):
        sources = {v for v in column(launch, "gpu_source") if isinstance(v, str)}
        seen |= sources
        declared = launch.result_json.get("timer_source")
        if len(sources) > 1:
            bad.append(f"{launch.name}: several sources in one launch: {', '.join(sorted(sources))}")
        elif sources and declared not in sources:
            bad.append(f"{launch.name}: rows say {next(iter(sources))}, result.json timer_source {declared!r}")
        for source in sources | {declared}:
            if source in GPU_SOURCES and source not in ctx.timer_sources:
                bad.append(f"{launch.name}: {source} is not among the probe's timer_sources {list(ctx.timer_sources)}")
        untimed = [c for c in launch.frames.cells() if c.get("gpu_source", "").strip() in ("", "none")
                   and c.get("gpu_ms", "").strip()]
        if untimed:
            bad.append(f"{launch.name} frame {untimed[0].get('frame')}: gpu_ms {untimed[0]['gpu_ms']!r} without a "
                       f"GPU time source")
    if bad:
        return result("frames.gpu_source", "fail", listing(sorted(set(bad), key=bad.index)), fix)
    return result("frames.gpu_source", "pass", f"{', '.join(sorted(seen)) or 'empty'}, as result.json and the probe say")


def check_stolen(ctx: Context) -> CheckResult:
    """The optional stolen_ms: where a runner writes it, 0 <= stolen_ms <= the frame's cpu_ms + STOLEN_SLACK_MS."""
    if why := ctx.blocked("frames.cpu_units"):
        return result("frames.stolen_ms", "n/a", why)
    written = [launch for launch in plain(ctx) if "stolen_ms" in (launch.frames.header or [])]
    if not written:
        return result("frames.stolen_ms", "n/a", "no stolen_ms column (optional)")
    bad = []
    fix = (f"stolen_ms is the frame's wall time less its thread's CPU time over the same interval, in ms: never "
           f"negative, never more than the frame's cpu_ms (+{STOLEN_SLACK_MS} ms for the clocks' bracket)")
    known = 0
    for launch in written:
        for stolen, cpu in zip(column(launch, "stolen_ms"), column(launch, "cpu_ms")):
            if not isinstance(stolen, (int, float)) or isinstance(stolen, bool):
                continue
            known += 1
            if stolen < 0 or (isinstance(cpu, (int, float)) and stolen > cpu + STOLEN_SLACK_MS):
                bad.append(f"{launch.name}: stolen_ms {stolen} against cpu_ms {cpu}")
    if bad:
        return result("frames.stolen_ms", "fail", listing(bad), fix)
    return result("frames.stolen_ms", "pass", f"{known} frames within 0..cpu_ms + {STOLEN_SLACK_MS} ms")
