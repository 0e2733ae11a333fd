"""feature.<op>, capture.*, complexity: what the runner draws, and how its captures are written."""

from __future__ import annotations

import statistics
import struct
import zlib
from pathlib import Path

from ..golden.failure_images import write_artifacts
from ..golden.match import compare
from ..golden.store import GoldenError, load_png, pixel_digest
from ..golden.tolerance import (
    CROSS_DEFAULTS,
    SOFTWARE,
    Tolerance,
    parse_tolerance,
    resolve_tolerance,
)
from ..protocol import capture_name
from ..protocol.display_list import COMPLEXITY_OP_KEYS
from ..protocol.vocabulary import INVARIANT_KINDS
from .context import Context, column, listing, numbers, result
from .jobs import FEATURES, FeatureScene
from .launcher import Launch
from .report import CheckResult

COMPLEXITY_COST_RATIO = 2.0
COMPLEXITY_COST_COLUMNS = ("cpu_ms", "gpu_ms", "present_interval_ms", "draw_calls")


def runner_issues(launch: Launch) -> list[str]:
    raw = launch.result_json
    entries = raw.get("issues") if isinstance(raw, dict) else None
    if not isinstance(entries, list):
        return []
    return [f"{e.get('kind')}: {e.get('detail', '')}" for e in entries
            if isinstance(e, dict) and e.get("kind") in INVARIANT_KINDS]


def check_feature(ctx: Context, feature: str) -> CheckResult:
    name = f"feature.{feature}"
    if feature not in ctx.features:
        return result(name, "n/a", f"the probe does not list {feature}")
    if ctx.selected is not None and feature not in ctx.selected:
        return result(name, "n/a", "not selected (--features)")
    if why := ctx.blocked("job.runs"):
        return result(name, "n/a", why)
    scene = ctx.feature_scenes[feature]
    launch = ctx.launches[name]
    where = f"scene {scene.case.id} ({scene.origin}) at {scene.width}x{scene.height}"
    if not launch.ok:
        return result(name, "fail", f"{where}: the runner {launch.describe_exit()}: {launch.stderr_tail()}",
                      f"draw {feature} as docs/display-list.md specifies, or leave it out of the probe's features")
    issues = runner_issues(launch)
    if issues:
        return result(name, "fail", f"{where}: result.json reports {listing(issues, 2)}",
                      f"draw {feature} without errors, or leave it out of the probe's features")
    return result(name, "pass", f"{where}: rendered")


def capture_launches(ctx: Context) -> list[Launch]:
    """Launches that exited 0 and were asked for captures."""
    return [l for l in ctx.launches.values() if l.ok and l.job is not None and l.job.capture]


def check_written(ctx: Context) -> CheckResult:
    launches = capture_launches(ctx)
    if not launches:
        return result("capture.written", "n/a", "no launch that asked for captures completed")
    missing = [f"{l.name}: {capture_name(f)}" for l in launches for f in sorted(set(l.job.capture))  # type: ignore[union-attr]
               if f not in l.captures]
    if missing:
        return result("capture.written", "fail", f"not written: {listing(missing)}",
                      "after the measured frames, render each frame of the job's `capture` and write it as "
                      "OUTDIR/capture-<frame>.png")
    count = sum(len(l.captures) for l in launches)
    return result("capture.written", "pass", f"{count} captures in {len(launches)} launches")


def png_format(path: Path, width: int, height: int) -> str | None:
    """Why a capture is not an 8-bit RGBA PNG of width x height, or None."""
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR" or len(data) < 33:
        return "not a PNG file"
    w, h, depth, color = struct.unpack(">IIBB", data[16:26])
    kinds = {0: "grey", 2: "RGB", 3: "palette", 4: "grey+alpha", 6: "RGBA"}
    if depth != 8 or color != 6:
        return f"{depth}-bit {kinds.get(color, f'color type {color}')}, not 8-bit RGBA"
    if (w, h) != (width, height):
        return f"{w}x{h}, the scene is {width}x{height}"
    if zlib.crc32(data[12:29]) != struct.unpack(">I", data[29:33])[0]:
        return "its header chunk is corrupt"
    try:
        load_png(path)
    except GoldenError as exc:
        return f"cannot be decoded: {exc}"
    return None


def check_format(ctx: Context) -> CheckResult:
    launches = [l for l in ctx.launches.values() if l.job is not None and l.captures]
    if not launches:
        return result("capture.format", "n/a", "no captures to judge")
    bad = []
    for launch in launches:
        job = launch.job
        assert job is not None
        for _frame, path in sorted(launch.captures.items()):
            why = png_format(path, job.scene["width"], job.scene["height"])
            if why:
                bad.append(f"{launch.name} {path.name}: {why}")
    if bad:
        return result("capture.format", "fail", listing(bad),
                      "write captures as 8-bit RGBA PNG (color type 6), unpremultiplied sRGB, the scene's width x height")
    return result("capture.format", "pass", f"8-bit RGBA PNGs of the scene size ({sum(len(l.captures) for l in launches)})")


def check_determinism(ctx: Context) -> CheckResult:
    if why := ctx.blocked("capture.format"):
        return result("capture.determinism", "n/a", why)
    first, second = ctx.launches.get("determinism-1"), ctx.launches.get("determinism-2")
    if first is None or second is None:
        return result("capture.determinism", "n/a", "no feature passed its check: nothing to launch twice")
    for launch in (first, second):
        if not launch.ok:
            return result("capture.determinism", "fail",
                          f"the {launch.name} job (every checked feature in one scene) {launch.describe_exit()}: "
                          f"{launch.stderr_tail()}", "render a job drawing several features as each alone")
    assert first.job is not None
    differ = []
    for frame in first.job.capture:
        a, b = first.captures.get(frame), second.captures.get(frame)
        if a is None or b is None:
            continue
        if pixel_digest(load_png(a)) != pixel_digest(load_png(b)):
            differ.append(f"frame {frame}")
    listed = first.job.scene["features"]
    features = ", ".join(listed) if len(listed) <= 4 else f"all {len(listed)} checked features"
    if differ:
        return result("capture.determinism", "fail",
                      f"{', '.join(differ)} of a scene with {features} differ between two launches",
                      "render frame N identically in every launch: animation is a function of the frame index, "
                      "never of time; no random or uninitialised pixels")
    return result("capture.determinism", "pass", f"two launches of a scene with {features}: identical captures")


def cross_tolerance(scene: FeatureScene, backend: str) -> Tolerance:
    """The scene's cross-backend tolerance for this backend; a backend named software that is not the
    reference rasteriser gets the cross-backend defaults."""
    if backend == SOFTWARE:
        return parse_tolerance(dict(CROSS_DEFAULTS), where="cross_backend defaults")
    return resolve_tolerance(scene.case.tolerance, backend, golden_backend=SOFTWARE)


def check_reference(ctx: Context) -> CheckResult:
    if why := ctx.blocked("capture.format"):
        return result("capture.reference", "n/a", why)
    judged, bad, notes = [], [], []
    for feature in FEATURES:
        check = ctx.results.get(f"feature.{feature}")
        if check is None or check.status != "pass":
            continue
        scene, launch = ctx.feature_scenes[feature], ctx.launches[f"feature.{feature}"]
        assert launch.job is not None
        tolerance = cross_tolerance(scene, ctx.backend)
        for frame in launch.job.capture:
            actual = launch.captures.get(frame)
            if actual is None:
                continue
            expected, source = ctx.reference.capture(launch.job, frame, scene.goldens.get(frame))
            if expected is None:
                bad.append(f"{feature}: no reference for frame {frame}: {source}")
                continue
            comparison = compare(expected, load_png(actual), tolerance, perceptual=False)
            judged.append(feature)
            if not comparison.passed:
                stem = f"{feature}-frame-{frame}"
                files = write_artifacts(comparison, ctx.keep_dir / "reference", stem=stem)
                failures = "; ".join(f"{m} {o} (allowed {b})" for m, o, b in comparison.failures)
                bad.append(f"{feature} (scene {scene.case.id} frame {frame}, vs {source}): {failures}; "
                           f"diff {files.get('diff', files.get('actual', ''))}")
            elif ctx.backend == SOFTWARE and not comparison.identical:
                notes.append(feature)
    if bad:
        return result("capture.reference", "fail", "\n".join(bad),
                      "draw each op as docs/display-list.md specifies (the reference is Skia raster); a real "
                      "rasteriser difference is declared in the scene's tolerance.<backend>.cross_backend")
    if not judged:
        return result("capture.reference", "n/a", "no feature rendered a capture to compare")
    names = sorted(set(judged))
    detail = (f"{len(judged)} captures of {len(names)} features" if len(names) > 4 else
              f"{len(judged)} capture{'s' if len(judged) != 1 else ''} ({', '.join(names)})") + \
        " within the cross-backend tolerance"
    if notes:
        detail += (f"; not byte-exact: {', '.join(notes)} (golden tests of a `software` device compare exactly: "
                   f"give a rasteriser other than the reference its own backend name)")
    return result("capture.reference", "pass", detail)


def complexity_ops(ctx: Context) -> list[str]:
    """The checked ops whose count may be the complexity, each checked with a job of its own."""
    return [op for op in COMPLEXITY_OP_KEYS if op in ctx.checked_features()]


def complexity_launch(op: str) -> str:
    """The name of an op's complexity job, and of its kit scene (conformance.<name>)."""
    return "complexity" if op == "repeat" else f"complexity.{op}"


def check_complexity(ctx: Context) -> CheckResult:
    ops = complexity_ops(ctx)
    if not ops:
        listed = any(op in ctx.features for op in COMPLEXITY_OP_KEYS)
        counting = ", ".join(COMPLEXITY_OP_KEYS)
        return result("complexity", "n/a", f"{counting} not selected (--features)" if listed else
                      f"the probe lists none of {counting}, whose counts complexity drives")
    if why := ctx.blocked("frames.rows"):
        return result("complexity", "n/a", why)
    fix = ('in frame f give every key whose value is "complexity" (repeat and rect_batch count, mesh rows, shader '
           'loops) the value round(complexity[f]), and write that complexity in the row')
    bad: list[str] = []
    signals: list[str] = []
    for op in ops:
        launch = ctx.launches[complexity_launch(op)]
        problem, signal = _complexity_problem(launch)
        if problem:
            bad.append(f"{op}: {problem}")
        else:
            signals.append(f"{op} {signal}")
    if bad:
        return result("complexity", "fail", listing(bad), fix)
    return result("complexity", "pass", listing(signals))


def _complexity_problem(launch: Launch) -> tuple[str, str]:
    """(what is wrong with one op's complexity job, or "", and the cost it read at the two levels)."""
    if not launch.ok:
        return f"the complexity job {launch.describe_exit()}: {launch.stderr_tail()}", ""
    job = launch.job
    assert job is not None and job.complexity is not None
    rows = launch.frames.cells()
    low, high = min(job.complexity), max(job.complexity)
    bad = []
    echoed = column(launch, "complexity")
    wrong = [n for n, v in enumerate(echoed) if v is not None and n < len(job.complexity)
             and abs(float(v) - job.complexity[n]) > 1e-6]
    if wrong:
        bad.append(f"frame {wrong[0]} says complexity {echoed[wrong[0]]}, the job {job.complexity[wrong[0]]:g}")
    # The first measure that rises shows the cost. CPU time rises with separate draws; work one draw hands to a
    # GPU (a batch's rasterising, a shader's loop) shows in the uncapped interval, which waits for it.
    flat = []
    for name in COMPLEXITY_COST_COLUMNS:
        values = column(launch, name)
        by = {level: numbers(v for v, c, r in zip(values, job.complexity, rows)
                             if c == level and r.get("phase", "").strip() == "measure") for level in (low, high)}
        if by[low] and by[high]:
            cheap, dear = statistics.median(by[low]), statistics.median(by[high])
            if dear >= COMPLEXITY_COST_RATIO * cheap and dear > cheap:
                return listing(bad), f"complexity {low:g} vs {high:g}: median {name} {cheap:.3g} -> {dear:.3g}"
            flat.append(f"{name} median {dear:g} at complexity {high:g} vs {cheap:g} at {low:g}")
    bad.append(f"the cost does not rise: {'; '.join(flat)}" if flat else
               f"no {', '.join(COMPLEXITY_COST_COLUMNS)} to see the cost by")
    return listing(bad), ""
