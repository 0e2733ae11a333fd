"""job.unknown_feature, job.malformed, signal.sigterm, progress, outdir.confined: how the runner behaves
when a job is not what it can draw, when it is stopped, and what else it prints and writes."""

from __future__ import annotations

import json

from ..protocol import parse_progress
from ..transports.base import KILL_GRACE_S
from .context import Context, listing, result
from .jobs import UNKNOWN_OP
from .launcher import Launch
from .report import CheckResult

# Malformed jobs every runner must refuse: (launch name, what is wrong).
MALFORMED = (("malformed-json", "a job file that is not JSON"),
             ("malformed-protocol", "a job of protocol 2"),
             ("malformed-mode", "a job with mode 'turbo'"))


def check_unknown_feature(ctx: Context) -> CheckResult:
    if why := ctx.blocked("job.runs"):
        return result("job.unknown_feature", "n/a", why)
    launch = ctx.launches["unknown-feature"]
    fix = (f"before drawing, compare the scene's features and ops with the backend's: write result.json with an "
           f"issue of kind feature_skipped naming the missing feature ({UNKNOWN_OP}), render nothing, exit non-zero "
           f"(the reference runner exits 3)")
    bad = []
    if launch.result.timed_out:
        bad.append(f"the runner {launch.describe_exit()}")
    elif launch.result.exit_code == 0:
        bad.append("exit 0, which says every frame was rendered")
    issues = launch.result_json.get("issues") if isinstance(launch.result_json, dict) else None
    skipped = [i for i in issues or [] if isinstance(i, dict) and i.get("kind") == "feature_skipped"]
    if launch.result_error:
        bad.append(launch.result_error)
    elif not skipped:
        bad.append("result.json has no feature_skipped issue")
    elif not any(UNKNOWN_OP in str(i.get("detail", "")) for i in skipped):
        bad.append(f"the feature_skipped issue does not name {UNKNOWN_OP}")
    if launch.frames.rows:
        bad.append(f"{len(launch.frames.rows)} frames rendered without the feature")
    if launch.captures:
        bad.append("captures written")
    if bad:
        return result("job.unknown_feature", "fail", listing(bad), fix)
    return result("job.unknown_feature", "pass", f"skipped with feature_skipped, exit {launch.result.exit_code}, "
                                                 f"nothing rendered")


def check_malformed(ctx: Context) -> CheckResult:
    bad = []
    for name, what in MALFORMED:
        launch = ctx.launches.get(name)
        if launch is None:
            continue
        if launch.result.timed_out:
            bad.append(f"{what}: the runner {launch.describe_exit()}")
        elif launch.result.exit_code == 0:
            bad.append(f"{what}: exit 0")
        elif not launch.result.stderr.strip():
            bad.append(f"{what}: exit {launch.result.exit_code} without a message on stderr")
        if launch.frames.rows:
            bad.append(f"{what}: {len(launch.frames.rows)} frames rendered")
    if bad:
        return result("job.malformed", "fail", listing(bad),
                      "validate the job (pytest_zbench/schema/job.schema.json) before rendering; on a bad one print "
                      "what is wrong on stderr and exit non-zero (the reference runner exits 2)")
    codes = sorted({ctx.launches[n].result.exit_code for n, _ in MALFORMED if n in ctx.launches}, key=str)
    return result("job.malformed", "pass", f"{len(MALFORMED)} malformed jobs refused with a message "
                                           f"(exit {', '.join(map(str, codes))})")


SIGTERM_LAUNCHES = ("sigterm", "sigterm-retry")
SIGTERM_RETRY = SIGTERM_LAUNCHES[1]
# A progress line may be printed just before its frame's row reaches the file: one frame of slack.
ROWS_SLACK = 1


def frames_reported(launch: Launch) -> int:
    """The most frames done that the launch's progress lines reported (0 without any)."""
    done = [parsed[0] for line in launch.stdout_lines if (parsed := parse_progress(line)) is not None]
    return max(done, default=0)


def lost_rows(launch: Launch) -> str | None:
    """Why the launch's kept rows fall short of the frames its progress reported, or None."""
    reported, kept = frames_reported(launch), len(launch.frames.rows)
    if reported - ROWS_SLACK > kept:
        return (f"{launch.name}: progress reported {reported} frames rendered before SIGTERM, frames.csv keeps "
                f"{kept} row(s): rows were lost")
    return None


def check_sigterm(ctx: Context) -> CheckResult:
    if why := ctx.blocked("frames.rows"):
        return result("signal.sigterm", "n/a", why)
    tried = [ctx.launches[name] for name in SIGTERM_LAUNCHES if name in ctx.launches]
    launch = tried[-1]
    fix = ("on SIGTERM stop after the current frame, keep every row already written (flush each row as it is "
           f"written), and exit within {KILL_GRACE_S:g} s; the host sends SIGKILL then")
    lost = [why for t in tried if (why := lost_rows(t))]
    if not launch.result.timed_out:
        return result("signal.sigterm", "fail", f"the long job ended before the host's SIGTERM at "
                                                f"{launch.timeout_s:.1f} s: the runner {launch.describe_exit()}", fix)
    bad = list(lost)
    after = launch.result.wall_s - launch.timeout_s
    if after >= KILL_GRACE_S:
        bad.append(f"still running {KILL_GRACE_S:g} s after SIGTERM (it ended {after:.1f} s after it): it was killed")
    rows = launch.frames.cells()
    frames = [c.get("frame", "").strip() for c in rows]
    if launch.frames.error:
        bad.append(launch.frames.error)
    elif not rows:
        bad.append(f"no rows in frames.csv after {launch.timeout_s:.1f} s of rendering")
    elif frames != [str(n) for n in range(len(frames))] or launch.frames.torn_last_line:
        bad.append("the rows written before SIGTERM are not whole frames 0..N in order (a row cut short?)")
    if bad:
        return result("signal.sigterm", "fail", listing(bad), fix)
    return result("signal.sigterm", "pass", f"{len(rows)} rows kept, exited {after:.2f} s after SIGTERM")


def looks_like_progress(line: str) -> bool:
    text = line.strip()
    if text.startswith('{"frame"'):
        return True
    if not text.startswith("{"):
        return False
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return False
    return isinstance(obj, dict) and ("frame" in obj or "of" in obj)


def check_progress(ctx: Context) -> CheckResult:
    lines = bad = 0
    problems: list[str] = []
    for launch in ctx.launches.values():
        if launch.job is None or launch.name in SIGTERM_LAUNCHES:
            continue
        last = -1
        for line in launch.stdout_lines:
            if not looks_like_progress(line):
                continue
            lines += 1
            parsed = parse_progress(line)
            if parsed is None:
                bad += 1
                problems.append(f"{launch.name}: {line.strip()[:80]!r} is not {{\"frame\": N, \"of\": M}}")
                continue
            frame, of = parsed
            if of != launch.job.total_frames or not 0 <= frame <= of or frame < last:
                bad += 1
                problems.append(f"{launch.name}: {line.strip()!r} (the job has {launch.job.total_frames} frames)")
            last = frame
    if problems:
        return result("progress", "fail", f"{bad} of {lines} progress lines: {listing(problems, 3)}",
                      'print progress as one JSON object per line, exactly {"frame": <frames done>, "of": <total>}, '
                      "frames done never decreasing; other stdout lines are taken as log output")
    if not lines:
        return result("progress", "n/a", "the runner prints no progress lines (they are optional)")
    return result("progress", "pass", f"{lines} progress lines parse")


def check_outdir(ctx: Context) -> CheckResult:
    bad = []
    for launch in ctx.launches.values():
        if launch.stray_files:
            bad.append(f"{launch.name}: {', '.join(launch.stray_files)} beside the job file")
        if launch.job_changed:
            bad.append(f"{launch.name}: the job file was changed or removed")
    bad += [f"{path}" for path in ctx.launcher.new_files()]
    if bad:
        return result("outdir.confined", "fail", f"written outside OUTDIR: {listing(bad)}",
                      "write only inside OUTDIR (frames.csv, capture-<frame>.png, result.json); never beside the job "
                      "file, in the current folder or the device's work folder")
    return result("outdir.confined", "pass", f"{len(ctx.launches)} launches wrote only inside OUTDIR")
