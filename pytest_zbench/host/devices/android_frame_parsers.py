"""Android's own frame timing, read from the platform: pure parsers of three `dumpsys` outputs, and the
accumulators that turn successive dumps of a ring buffer into each frame once (docs/platform-frames.md).

`dumpsys gfxinfo <package> framestats` (API 23+): for each window of the app, a CSV block between two
`---PROFILEDATA---` lines holding the last 120 frames HWUI rendered, one row per frame, nanosecond
CLOCK_MONOTONIC timestamps. The column set changes across releases (API 23-25: Flags .. FrameCompleted;
later DequeueBufferDuration, QueueBufferDuration, GpuCompleted; API 31 renames the input columns and adds
FrameTimelineVsyncId, FrameDeadline, SwapBuffersCompleted, DisplayPresentTime; later releases FrameInterval,
FrameStartTime, CommandSubmissionCompleted), so columns are read by header name, never by position. Rows
with non-zero Flags (window layout changed, RT animation, surface canvas, skipped frame) are not normal
frames: they are dropped from the durations and counted.

Which window a block belongs to is the window line of its process section: up to Android 9 the
`\\t<title>/android.view.ViewRootImpl@<hash> (visibility=N)` line right above the block; from Android 10 the
same line, then `Window: <title>` and the window's statistics (`... Number Frame deadline missed: N`), then
the block. A frame's identity is its own timestamps (IDENTITY_COLUMNS), never the text around it, so the
same frame in two dumps is one frame whatever the layout.

`dumpsys SurfaceFlinger --latency <layer>`: the refresh period in ns on the first line, then up to 127 rows
of three timestamps (desired present, actual present, frame ready) in ring order. Unused slots are all zero;
a fence not signalled yet reads INT64_MAX; some releases print INT64_MAX for the desired and ready times of
frames that were presented. A frame counts when its actual present time is a time.

`dumpsys SurfaceFlinger --list`: one layer name per line; `layer_candidates` picks the package's layers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ...errors import ZbenchError
from .android_frame_timeline import SurfaceFrame

PROFILEDATA = "---PROFILEDATA---"
INT64_MAX = 2**63 - 1
REQUIRED_GFX_COLUMNS = ("Flags", "IntendedVsync", "FrameCompleted")
# Timestamps HWUI sets while the frame is drawn, up to the swap, and never rewrites afterwards: the frame's
# identity. Every release has them. FrameCompleted, GpuCompleted and DisplayPresentTime are set later (a real
# dump can even show a garbage FrameCompleted that a later dump corrects), so a frame dumped twice may differ
# there and is still one frame.
IDENTITY_COLUMNS = ("IntendedVsync", "Vsync", "HandleInputStart", "AnimationStart", "PerformTraversalsStart",
                    "DrawStart", "SyncQueued", "SyncStart", "IssueDrawCommandsStart", "SwapBuffers")
# A duration longer than this is not a frame time but a garbage timestamp; Android's JankTracker ignores such
# frames too (IGNORE_EXCEEDING). Recorded dumps have rows with Flags 0 and a FrameCompleted of 2^58 + ...
MAX_FRAME_NS = 10_000_000_000
# HWUI's ring (JankTracker / CanvasContext mFrames) and SurfaceFlinger's FrameTracker (128, 127 printed).
GFX_RING_FRAMES = 120
SF_RING_FRAMES = 127

# Flags bits of a framestats row (frameworks/base FrameInfo): any of them marks an abnormal frame.
FLAG_NAMES = {1: "window_layout_changed", 2: "rt_animation", 4: "surface_canvas", 8: "skipped_frame"}

_PROCESS_LINE = re.compile(r"^\*\* Graphics info for pid (\d+) \[(.*)\] \*\*$")
_VISIBILITY = " (visibility="


class FrameStatsError(ZbenchError, ValueError):
    """Output that is not what the parser expects (names what was missing)."""


@dataclass(frozen=True)
class GfxFrame:
    """One row of a framestats block; `columns` maps every header name of its release to its value."""

    columns: Mapping[str, int]
    # The block's window, e.g. "pkg/pkg.Activity/android.view.ViewRootImpl@2bd7f4e" ("" when the dump names none)
    window: str = ""

    @property
    def flags(self) -> int:
        return self.columns["Flags"]

    @property
    def intended_vsync_ns(self) -> int:
        return self.columns["IntendedVsync"]

    @property
    def vsync_ns(self) -> int | None:
        return self.columns.get("Vsync")

    @property
    def frame_completed_ns(self) -> int:
        return self.columns["FrameCompleted"]

    @property
    def total_ms(self) -> float:
        """IntendedVsync to FrameCompleted: what the frame cost the app, as Android's own jank stats count it."""
        return (self.frame_completed_ns - self.intended_vsync_ns) / 1e6

    @property
    def plausible(self) -> bool:
        """A duration that is a time: above zero, at most MAX_FRAME_NS."""
        return 0 < self.frame_completed_ns - self.intended_vsync_ns <= MAX_FRAME_NS

    @property
    def identity(self) -> tuple[int | None, ...]:
        """The frame itself, whichever dump and whatever text around it it was read from."""
        return tuple(self.columns.get(name) for name in IDENTITY_COLUMNS)

    @property
    def gpu_completed_ns(self) -> int | None:
        value = self.columns.get("GpuCompleted")
        return value if value else None

    @property
    def gpu_ms(self) -> float | None:
        """IssueDrawCommandsStart to GpuCompleted, on releases that report GpuCompleted (API 29+)."""
        done, issued = self.gpu_completed_ns, self.columns.get("IssueDrawCommandsStart")
        if done is None or not issued or done < issued:
            return None
        return (done - issued) / 1e6

    def get(self, name: str) -> int | None:
        return self.columns.get(name)


@dataclass(frozen=True)
class GfxBlock:
    """One PROFILEDATA block: its process and window, and its rows (flagged ones included)."""

    process: str
    window: str
    frames: tuple[GfxFrame, ...]


@dataclass(frozen=True)
class LatencyFrame:
    desired_present_ns: int
    actual_present_ns: int
    frame_ready_ns: int


@dataclass(frozen=True)
class SurfaceFlingerLatency:
    refresh_period_ns: int
    frames: tuple[LatencyFrame, ...] = field(default_factory=tuple)
    # Pairs of frames that follow each other in the ring (no unused or pending slot between them)
    adjacent: tuple[tuple[LatencyFrame, LatencyFrame], ...] = field(default_factory=tuple)

    @property
    def refresh_hz(self) -> float | None:
        return 1e9 / self.refresh_period_ns if self.refresh_period_ns > 0 else None

    def present_intervals_ms(self) -> list[float]:
        return [(b.actual_present_ns - a.actual_present_ns) / 1e6 for a, b in self.adjacent]


def gfxinfo_blocks(text: str) -> list[GfxBlock]:
    """Every PROFILEDATA block of one `dumpsys gfxinfo <package> framestats` output, rows in dump order.

    An output without any block (the app drew nothing yet, no such process, a failed dump) gives []. A block
    whose header lacks a required column raises FrameStatsError. Rows cut short (a dump that raced with the
    renderer) and rows whose timestamps are not numbers are skipped.
    """
    blocks = []
    for process, window, header, rows in _profiledata_blocks(text):
        missing = [name for name in REQUIRED_GFX_COLUMNS if name not in header]
        if missing:
            raise FrameStatsError(f"framestats header lacks {', '.join(missing)}: {','.join(header)}")
        frames = []
        for row in rows:
            if len(row) < len(header):
                continue
            try:
                values = {name: int(cell) for name, cell in zip(header, row)}
            except ValueError:
                continue
            frames.append(GfxFrame(values, window))
        blocks.append(GfxBlock(process, window, tuple(frames)))
    return blocks


def parse_gfxinfo_framestats(text: str, *, keep_flagged: bool = False, window: str | None = None) -> list[GfxFrame]:
    """The frames of one dump, each once, sorted by (IntendedVsync, window).

    Two windows drawn on one vsync share an IntendedVsync and are two frames. `window`, if given, keeps only
    the blocks whose window contains it. Rows with non-zero Flags are dropped unless `keep_flagged`; so are
    rows that never completed (an unused ring slot, a frame still in flight: FrameCompleted or IntendedVsync 0)
    and normal rows whose duration is not a time (over MAX_FRAME_NS: a garbage timestamp).
    """
    frames: dict[tuple[int | None, ...], GfxFrame] = {}
    for block in gfxinfo_blocks(text):
        if window is not None and window not in block.window:
            continue
        for frame in block.frames:
            if not _completed(frame) or (frame.flags != 0 and not keep_flagged):
                continue
            if frame.flags == 0 and not frame.plausible:
                continue
            frames.setdefault(frame.identity, frame)
    return sorted(frames.values(), key=lambda f: (f.intended_vsync_ns, f.window, f.identity))


def gfxinfo_failure(text: str) -> str | None:
    """Why a dump has no frame data when the platform said so ("No process found for: pkg", "Failure while
    dumping the app: ..."), else None."""
    for line in text.splitlines():
        stripped = line.strip().lstrip("\ufeff")
        if stripped.startswith(("No process found for", "Failure while dumping")):
            return stripped
    return None


def _completed(frame: GfxFrame) -> bool:
    return frame.intended_vsync_ns > 0 and frame.frame_completed_ns > 0


def _profiledata_blocks(text: str) -> Iterable[tuple[str, str, list[str], list[list[str]]]]:
    """(process, window, header, rows) per block. The window is the last window line of the block's process
    section before the block: the ViewRootImpl line, or `Window: <title>` where that line is missing."""
    lines = text.lstrip("\ufeff").splitlines()
    process = window = ""
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped != PROFILEDATA:
            match = _PROCESS_LINE.match(stripped)
            if match:
                process, window = f"{match.group(2)} (pid {match.group(1)})", ""
            elif _VISIBILITY in stripped and stripped.endswith(")"):
                window = stripped[: stripped.rindex(_VISIBILITY)]
            elif stripped.startswith("Window: ") and not window:
                window = stripped[len("Window: "):]
            i += 1
            continue
        # header on the next non-empty line, rows until the closing marker
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        if j >= len(lines) or lines[j].strip() == PROFILEDATA:
            i = j + 1
            continue
        header = _cells(lines[j])
        rows = []
        k = j + 1
        while k < len(lines) and lines[k].strip() != PROFILEDATA:
            if lines[k].strip():
                rows.append(_cells(lines[k]))
            k += 1
        yield process, window, header, rows
        i = k + 1  # past the closing marker
        window = ""  # the next block has a window line of its own


def _cells(line: str) -> list[str]:
    cells = [cell.strip() for cell in line.strip().split(",")]
    while cells and cells[-1] == "":
        cells.pop()  # every line ends with a trailing comma
    return cells


class FramestatsAccumulator:
    """Collects the frames of successive framestats dumps of one app, each frame once (by its identity).

    `exclude(text)` marks the frames of a dump taken before the launch: they are never counted, whether or
    not the platform's reset cleared them. A frame seen again replaces its earlier copy (later dumps fill in
    GpuCompleted and DisplayPresentTime). `gaps` counts blocks that were full (the ring had wrapped) and
    shared no frame with what was seen of their window before: frames were lost between the two dumps.
    """

    def __init__(self, window: str | None = None) -> None:
        self.window = window
        self._frames: dict[tuple[int | None, ...], GfxFrame] = {}
        self._excluded: set[tuple[int | None, ...]] = set()
        self._seen_by_window: dict[str, set[tuple[int | None, ...]]] = {}
        self.dumps = 0
        self.gaps = 0
        self.failures: list[str] = []  # what the platform said instead of frame data, one per such dump
        self.last_failure: str | None = None  # ... of the latest dump, None when it had frame data

    def exclude(self, text: str) -> int:
        """Remember the frames of a dump as not ours; returns how many there were."""
        blocks = self._blocks(text)
        for block in blocks:
            ids = {f.identity for f in block.frames if _completed(f)}
            self._excluded |= ids
            self._seen_by_window.setdefault(block.window, set()).update(ids)
        return sum(len(b.frames) for b in blocks)

    def add(self, text: str) -> list[GfxFrame]:
        """Parse one dump; return the frames not seen before (flagged ones included), oldest first."""
        self.dumps += 1
        failure = self.last_failure = gfxinfo_failure(text)
        if failure is not None:
            self.failures.append(failure)
        new: dict[tuple[int | None, ...], GfxFrame] = {}
        for block in self._blocks(text):
            completed = [f for f in block.frames if _completed(f)]
            ids = {f.identity for f in completed}
            seen = self._seen_by_window.setdefault(block.window, set())
            if seen and len(block.frames) >= GFX_RING_FRAMES - 1 and not ids & seen:
                self.gaps += 1
            seen |= ids
            for frame in completed:
                if frame.identity in self._excluded:
                    continue
                if frame.identity not in self._frames:
                    new[frame.identity] = frame
                self._frames[frame.identity] = frame
        return sorted(new.values(), key=_gfx_order)

    def _blocks(self, text: str) -> list[GfxBlock]:
        return [b for b in gfxinfo_blocks(text) if self.window is None or self.window in b.window]

    @property
    def all_frames(self) -> list[GfxFrame]:
        """Every frame counted, flagged ones included, oldest first."""
        return sorted(self._frames.values(), key=_gfx_order)

    @property
    def frames(self) -> list[GfxFrame]:
        """The normal frames (Flags 0, a plausible duration), oldest first: the durations Android's own jank
        statistics count."""
        return [f for f in self.all_frames if f.flags == 0 and f.plausible]

    @property
    def flagged(self) -> list[GfxFrame]:
        return [f for f in self.all_frames if f.flags != 0]

    @property
    def implausible(self) -> list[GfxFrame]:
        """Normal frames whose duration is not a time (a garbage FrameCompleted): in no statistic."""
        return [f for f in self.all_frames if f.flags == 0 and not f.plausible]


def _gfx_order(frame: GfxFrame) -> tuple[int, str, tuple[int | None, ...]]:
    return frame.intended_vsync_ns, frame.window, frame.identity


def parse_surfaceflinger_latency(text: str) -> SurfaceFlingerLatency:
    """Parse `dumpsys SurfaceFlinger --latency <layer>`; frames in ring (present) order.

    Raises FrameStatsError when the first line is not a refresh period (e.g. an error message). An unknown
    layer prints only the period: that gives no frames, not an error.
    """
    lines = [line.strip() for line in text.lstrip("\ufeff").splitlines() if line.strip()]
    if not lines:
        raise FrameStatsError("empty SurfaceFlinger --latency output")
    try:
        period = int(lines[0].split()[0])
    except ValueError:
        raise FrameStatsError(f"SurfaceFlinger --latency: expected the refresh period, got {lines[0]!r}") from None
    frames: list[LatencyFrame] = []
    adjacent: list[tuple[LatencyFrame, LatencyFrame]] = []
    previous: LatencyFrame | None = None
    for line in lines[1:]:
        cells = line.split()
        frame = None
        if len(cells) == 3:
            try:
                desired, actual, ready = (int(cell) for cell in cells)
                if 0 < actual < INT64_MAX:  # unused slots are 0, pending fences INT64_MAX
                    frame = LatencyFrame(desired, actual, ready)
            except ValueError:
                pass
        if frame is not None:
            if previous is not None and frame.actual_present_ns > previous.actual_present_ns:
                adjacent.append((previous, frame))
            frames.append(frame)
        previous = frame
    return SurfaceFlingerLatency(period, tuple(sorted(frames, key=lambda f: f.actual_present_ns)), tuple(adjacent))


class LatencyAccumulator:
    """Collects SurfaceFlinger latency frames of one layer across successive dumps, each frame once (a
    layer's frames are presented at distinct times), and the present intervals between frames that follow
    each other in one dump, each once: an interval across a gap between two dumps is never made up.

    `exclude(text)` marks the frames of a dump taken before the launch; no interval touches them. `gaps`
    counts full dumps that shared no frame with the previous one (frames lost in between).
    """

    def __init__(self) -> None:
        self._frames: dict[int, LatencyFrame] = {}
        self._excluded: set[int] = set()
        self._intervals: dict[tuple[int, int], float] = {}
        self._seen: set[int] = set()
        self.refresh_period_ns: int | None = None
        self.periods_ns: set[int] = set()
        self.dumps = 0
        self.gaps = 0

    def exclude(self, text: str) -> int:
        parsed = parse_surfaceflinger_latency(text)
        ids = {f.actual_present_ns for f in parsed.frames}
        self._excluded |= ids
        self._seen |= ids
        return len(ids)

    def add(self, text: str) -> list[LatencyFrame]:
        parsed = parse_surfaceflinger_latency(text)
        self.dumps += 1
        if parsed.refresh_period_ns > 0:
            self.refresh_period_ns = parsed.refresh_period_ns
            self.periods_ns.add(parsed.refresh_period_ns)
        ids = {f.actual_present_ns for f in parsed.frames}
        if self._seen and len(parsed.frames) >= SF_RING_FRAMES - 1 and not ids & self._seen:
            self.gaps += 1
        self._seen |= ids
        new = [f for f in parsed.frames
               if f.actual_present_ns not in self._excluded and f.actual_present_ns not in self._frames]
        for frame in parsed.frames:
            if frame.actual_present_ns not in self._excluded:
                self._frames[frame.actual_present_ns] = frame
        for a, b in parsed.adjacent:
            if a.actual_present_ns in self._excluded or b.actual_present_ns in self._excluded:
                continue
            ms = (b.actual_present_ns - a.actual_present_ns) / 1e6
            self._intervals[(a.actual_present_ns, b.actual_present_ns)] = ms
        return new

    @property
    def frames(self) -> list[LatencyFrame]:
        return [self._frames[key] for key in sorted(self._frames)]

    def intervals(self) -> list[tuple[LatencyFrame, float]]:
        """(the later frame, its present interval in ms), in present order."""
        return [(self._frames[b], ms) for (_, b), ms in sorted(self._intervals.items())]


def present_intervals_ms(frames: Iterable[LatencyFrame]) -> list[float]:
    """Intervals between successive actual present times, in ms (len(frames) - 1 values)."""
    ordered = sorted(frames, key=lambda f: f.actual_present_ns)
    return [(b.actual_present_ns - a.actual_present_ns) / 1e6 for a, b in zip(ordered, ordered[1:])]


def frame_flags(flags: int) -> list[str]:
    """Names of the bits set in a framestats Flags value."""
    return [name for bit, name in FLAG_NAMES.items() if flags & bit] + (
        [f"0x{flags & ~sum(FLAG_NAMES):x}"] if flags & ~sum(FLAG_NAMES) else []
    )


# -- dumpsys SurfaceFlinger --list ------------------------------------------------------------------------------

_NOT_A_BUFFER_LAYER = ("ActivityRecord{", "ActivityRecordInputSink", "Background for ", "Bounds for ", "Task=",
                       "Splash Screen", "animation-leash", "Letterbox", "WindowToken{", "Surface(name=")
_REQUESTED_LAYER = re.compile(r"^RequestedLayerState\{(.*?)(?: parentId=-?\d+.*)?\}$")
_LAYER_NUMBER = re.compile(r"#(\d+)$")


def layer_names(text: str) -> list[str]:
    """The layer names of `dumpsys SurfaceFlinger --list`, as `--latency` takes them (Android 15 prints each
    as `RequestedLayerState{<name> parentId=N ...}`: the name is taken out)."""
    names = []
    for line in text.lstrip("\ufeff").splitlines():
        name = line.strip()
        match = _REQUESTED_LAYER.match(name)
        if match:
            name = match.group(1)
        if name:
            names.append(name)
    return names


def layer_candidates(text: str, package: str) -> list[str]:
    """The layers of `package` that receive its frames, best first: a SurfaceView's buffer layer (BLAST from
    Android 12), another SurfaceView layer, the window's buffer layer (`pkg/Activity#N`), the window itself
    (`<hash> pkg/Activity#N`); within each kind the newest (highest #N) first. Activity records, input
    sinks, backgrounds, bounds and animation leashes never are."""
    owned = re.compile(r"(^|[\s\[])" + re.escape(package) + r"/")
    ranked = []
    for name in layer_names(text):
        if not owned.search(name) or any(mark in name for mark in _NOT_A_BUFFER_LAYER):
            continue
        if name.startswith("SurfaceView") and "(BLAST)" in name:
            kind = 0
        elif name.startswith("SurfaceView"):
            kind = 1
        elif name.startswith(package + "/"):
            kind = 2
        else:
            kind = 3
        number = _LAYER_NUMBER.search(name)
        ranked.append((kind, -(int(number.group(1)) if number else -1), name))
    return [name for _, _, name in sorted(ranked)]


# What a launch's collection holds lives here, below both device.py (whose LaunchOutcome carries it) and
# android_frame_dumps.py (which fills it), so that neither imports the other's module for it.

# The folder of a launch's local folder where the host keeps its raw platform frame dumps.
PLATFORM_DUMPS = "platform"

LayerSource = Literal["inventory", "surfaceflinger --list"]


@dataclass
class PlatformLaunch:
    """What one launch collected: the app's frames (each once) and its layer's presents."""

    package: str
    layer: str | None
    layer_source: LayerSource | None
    interval_s: float
    gfx: FramestatsAccumulator = field(default_factory=FramestatsAccumulator)
    sf: LatencyAccumulator = field(default_factory=LatencyAccumulator)
    baseline_frames: int = 0  # frames the app had before the launch (not counted)
    dumps: int = 0  # round trips during and after the launch
    issues: list[str] = field(default_factory=list)
    dump_dir: Path | None = None
    # Android 12+ FrameTimeline of the launch (devices.yaml `frame_timeline`), None when not traced
    timeline: list[SurfaceFrame] | None = None
    timeline_issues: list[str] = field(default_factory=list)

    @property
    def refresh_period_ns(self) -> int | None:
        return self.sf.refresh_period_ns
