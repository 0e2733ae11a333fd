"""Android's own frame timing, read from the platform: pure parsers of two `dumpsys` outputs.

`dumpsys gfxinfo <package> framestats` (API 23+): for each window of the app, a CSV block between two
`---PROFILEDATA---` lines holding the last 120 frames HWUI rendered, one row per frame, nanosecond
CLOCK_MONOTONIC timestamps. The column set changes across releases (API 23/24: Flags .. FrameCompleted;
API 28 adds DequeueBufferDuration, QueueBufferDuration; API 29 GpuCompleted; API 31 renames the input
columns and adds FrameTimelineVsyncId, FrameDeadline, SwapBuffersCompleted, DisplayPresentTime; later
releases add FrameStartTime, FrameInterval, CommandSubmissionCompleted), so columns are read by header
name, never by position. Rows with non-zero Flags (window layout changed, RT animation, surface canvas,
skipped frame) are not normal frames and are dropped. The block is a ring buffer: successive dumps overlap,
so `FramestatsAccumulator` de-duplicates frames by IntendedVsync.

`dumpsys SurfaceFlinger --latency <layer>`: the refresh period in ns on the first line, then up to 127
rows of three timestamps (desired present, actual present, frame ready). Unused ring slots are all zero
and a frame whose fence has not signalled yet carries INT64_MAX: both are dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..errors import ZbenchError

PROFILEDATA = "---PROFILEDATA---"
INT64_MAX = 2**63 - 1
REQUIRED_GFX_COLUMNS = ("Flags", "IntendedVsync", "FrameCompleted")

# Flags bits of a framestats row (frameworks/base FrameInfo): any of them marks an abnormal frame.
FLAG_NAMES = {1: "window_layout_changed", 2: "rt_animation", 4: "surface_canvas", 8: "skipped_frame"}


class FrameStatsError(ZbenchError, ValueError):
    """Output that is not what the parser expects (names what was missing)."""


@dataclass(frozen=True)
class GfxFrame:
    """One row of a framestats block; `columns` maps every header name of its release to its value."""

    columns: Mapping[str, int]
    window: str = ""  # the window line above the block, e.g. "pkg/pkg.Activity/android.view.ViewRootImpl@2bd7f4e"

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
class LatencyFrame:
    desired_present_ns: int
    actual_present_ns: int
    frame_ready_ns: int


@dataclass(frozen=True)
class SurfaceFlingerLatency:
    refresh_period_ns: int
    frames: tuple[LatencyFrame, ...] = field(default_factory=tuple)

    @property
    def refresh_hz(self) -> float | None:
        return 1e9 / self.refresh_period_ns if self.refresh_period_ns > 0 else None

    def present_intervals_ms(self) -> list[float]:
        return present_intervals_ms(self.frames)


def parse_gfxinfo_framestats(text: str, *, keep_flagged: bool = False, window: str | None = None) -> list[GfxFrame]:
    """Every frame of every PROFILEDATA block in one `dumpsys gfxinfo <pkg> framestats` output.

    Sorted by (IntendedVsync, window); each window of the app has its own block and two windows drawn on
    one vsync share an IntendedVsync, so frames are keyed by both. `window`, if given, keeps only the
    blocks whose window line contains it. Rows with non-zero Flags are dropped unless `keep_flagged`. An output without any block (the app drew nothing yet)
    gives []. A block whose header lacks a required column raises FrameStatsError.
    """
    frames: dict[tuple[int, str], GfxFrame] = {}
    for label, header, rows in _profiledata_blocks(text):
        if window is not None and window not in label:
            continue
        missing = [name for name in REQUIRED_GFX_COLUMNS if name not in header]
        if missing:
            raise FrameStatsError(f"framestats header lacks {', '.join(missing)}: {','.join(header)}")
        for row in rows:
            if len(row) < len(header):
                continue  # a row cut short (dump raced with the renderer): no usable timing
            try:
                values = {name: int(cell) for name, cell in zip(header, row)}
            except ValueError:
                continue
            frame = GfxFrame(values, label)
            if frame.flags != 0 and not keep_flagged:
                continue
            if frame.intended_vsync_ns <= 0 or frame.frame_completed_ns <= 0:
                continue  # an unused ring slot
            frames.setdefault((frame.intended_vsync_ns, label), frame)
    return [frames[key] for key in sorted(frames)]


def _profiledata_blocks(text: str) -> Iterable[tuple[str, list[str], list[list[str]]]]:
    lines = text.splitlines()
    i = 0
    label = ""
    while i < len(lines):
        if lines[i].strip() != PROFILEDATA:
            if lines[i].strip():
                label = _window_label(lines[i])
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
        yield label, header, rows
        i = k + 1  # past the closing marker
        label = ""


def _window_label(line: str) -> str:
    label = line.strip()
    if label.endswith(")") and " (visibility=" in label:
        label = label[: label.rindex(" (visibility=")]
    return label


def _cells(line: str) -> list[str]:
    cells = [cell.strip() for cell in line.strip().split(",")]
    while cells and cells[-1] == "":
        cells.pop()  # every line ends with a trailing comma
    return cells


class FramestatsAccumulator:
    """Collects frames from successive framestats dumps of one app, each frame once.

    The block holds the last 120 frames: dump at least every ~2 s at 60 Hz or frames are lost;
    `gaps` counts dumps that share no frame with the previous one although both had frames (a hint that
    the polling was too slow).
    """

    def __init__(self, window: str | None = None) -> None:
        self.window = window
        self._frames: dict[tuple[int, str], GfxFrame] = {}
        self.dumps = 0
        self.gaps = 0

    def add(self, text: str) -> list[GfxFrame]:
        """Parse one dump; return only the frames not seen before, oldest first."""
        parsed = parse_gfxinfo_framestats(text, window=self.window)
        new = [frame for frame in parsed if (frame.intended_vsync_ns, frame.window) not in self._frames]
        if self._frames and parsed and len(new) == len(parsed) and parsed[0].intended_vsync_ns > max(self._frames)[0]:
            self.gaps += 1
        for frame in new:
            self._frames[(frame.intended_vsync_ns, frame.window)] = frame
        self.dumps += 1
        return new

    @property
    def frames(self) -> list[GfxFrame]:
        return [self._frames[key] for key in sorted(self._frames)]


def parse_surfaceflinger_latency(text: str) -> SurfaceFlingerLatency:
    """Parse `dumpsys SurfaceFlinger --latency <layer>`; frames sorted by actual present time.

    Raises FrameStatsError when the first line is not a refresh period (e.g. an error message). An unknown
    layer prints only the period: that gives no frames, not an error.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise FrameStatsError("empty SurfaceFlinger --latency output")
    try:
        period = int(lines[0].split()[0])
    except ValueError:
        raise FrameStatsError(f"SurfaceFlinger --latency: expected the refresh period, got {lines[0]!r}") from None
    frames = []
    for line in lines[1:]:
        cells = line.split()
        if len(cells) != 3:
            continue
        try:
            desired, actual, ready = (int(cell) for cell in cells)
        except ValueError:
            continue
        if desired == actual == ready == 0:
            continue  # unused slot
        if INT64_MAX in (desired, actual, ready) or 0 in (actual, ready):
            continue  # fence not signalled yet (pending) or not presented
        frames.append(LatencyFrame(desired, actual, ready))
    frames.sort(key=lambda f: f.actual_present_ns)
    return SurfaceFlingerLatency(period, tuple(frames))


class LatencyAccumulator:
    """Collects SurfaceFlinger latency frames across successive dumps, each frame once (by actual present)."""

    def __init__(self) -> None:
        self._frames: dict[int, LatencyFrame] = {}
        self.refresh_period_ns: int | None = None

    def add(self, text: str) -> list[LatencyFrame]:
        parsed = parse_surfaceflinger_latency(text)
        self.refresh_period_ns = parsed.refresh_period_ns
        new = [frame for frame in parsed.frames if frame.actual_present_ns not in self._frames]
        for frame in new:
            self._frames[frame.actual_present_ns] = frame
        return new

    @property
    def frames(self) -> list[LatencyFrame]:
        return [self._frames[key] for key in sorted(self._frames)]


def present_intervals_ms(frames: Iterable[LatencyFrame]) -> list[float]:
    """Intervals between successive actual present times, in ms (len(frames) - 1 values)."""
    ordered = sorted(frames, key=lambda f: f.actual_present_ns)
    return [(b.actual_present_ns - a.actual_present_ns) / 1e6 for a, b in zip(ordered, ordered[1:])]


def frame_flags(flags: int) -> list[str]:
    """Names of the bits set in a framestats Flags value."""
    return [name for bit, name in FLAG_NAMES.items() if flags & bit] + (
        [f"0x{flags & ~sum(FLAG_NAMES):x}"] if flags & ~sum(FLAG_NAMES) else []
    )
