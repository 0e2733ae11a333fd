"""Android 12+ FrameTimeline, read from a Perfetto trace: each frame's expected timeline (what SurfaceFlinger
predicted: the app's deadline and present time) against its actual one, and the jank types SurfaceFlinger
attributed to it (docs/platform-frames.md, "FrameTimeline").

    frames = surface_frames(trace_bytes, package)      # [SurfaceFrame], oldest first
    summary = timeline_summary(frames)                   # counts per jank type, latency statistics

The trace holds `TracePacket.frame_timeline_event` (field 76) packets written by SurfaceFlinger's
`android.surfaceflinger.frametimeline` data source: a start event per timeline (expected or actual, of a
display frame or of an app's surface frame) at the packet's timestamp, and a `FrameEnd` with the same cookie
at the timeline's end. The message is protos/perfetto/trace/android/frame_timeline_event.proto.

Why a reader of its own: the Python protos shipped in Perfetto's `perfetto` package (0.59) leave that packet
field out, and its TraceProcessor downloads a trace_processor_shell binary at run time; the few fields read
here are varints and strings, so the trace's protobuf is walked directly (`_fields`), and tests build their
traces with the package's own TraceProtoBuilder.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from ...errors import ZbenchError

FRAME_TIMELINE_DATA_SOURCE = "android.surfaceflinger.frametimeline"

# TracePacket fields, and FrameTimelineEvent's oneof (frame_timeline_event.proto)
_TRACE_PACKET = 1
_PACKET_TIMESTAMP = 8
_PACKET_CLOCK_ID = 58
_PACKET_FRAME_TIMELINE = 76
_EXPECTED_SURFACE, _ACTUAL_SURFACE, _FRAME_END = 3, 4, 5

# JankType bits, named as Perfetto's trace processor names them without spaces (its jank_type strings)
JANK_TYPES = {
    1: "None", 2: "SurfaceFlingerScheduling", 4: "PredictionError", 8: "DisplayHAL",
    16: "SurfaceFlingerCpuDeadlineMissed", 32: "SurfaceFlingerGpuDeadlineMissed", 64: "AppDeadlineMissed",
    128: "BufferStuffing", 256: "Unknown", 512: "SurfaceFlingerStuffing", 1024: "Dropped",
}
JANK_NONE, BUFFER_STUFFING = 1, 128
PRESENT_TYPES = {0: "Unspecified", 1: "OnTime", 2: "Late", 3: "Early", 4: "Dropped", 5: "Unknown"}


class TraceError(ZbenchError, ValueError):
    """Bytes that are not a Perfetto trace (says where the protobuf broke)."""


@dataclass(frozen=True)
class SurfaceFrame:
    """One frame of an app's layer: its expected and actual timelines (ns, the trace's clock), and what
    SurfaceFlinger said of it. `expected_*` is None when the trace lost the prediction (expired)."""

    token: int
    layer: str
    pid: int
    actual_start_ns: int
    actual_end_ns: int
    expected_start_ns: int | None
    expected_end_ns: int | None
    jank_bits: int
    present_type: str
    on_time_finish: bool
    gpu_composition: bool

    @property
    def jank_types(self) -> list[str]:
        """The jank types set (several may be), "None" for a frame on time, "Unspecified" for none set."""
        names = [name for bit, name in JANK_TYPES.items() if self.jank_bits & bit]
        unknown = self.jank_bits & ~sum(JANK_TYPES)
        return names + ([f"0x{unknown:x}"] if unknown else []) if self.jank_bits else ["Unspecified"]

    @property
    def missed(self) -> bool:
        """A deadline missed somewhere (app, SurfaceFlinger, display): any jank type but None and
        BufferStuffing. Buffer stuffing alone is latency, not a miss: the app queued ahead and its frame
        waited in the queue (Android's FrameTimeline documentation)."""
        return bool(self.jank_bits & ~(JANK_NONE | BUFFER_STUFFING))

    @property
    def buffer_stuffing(self) -> bool:
        return bool(self.jank_bits & BUFFER_STUFFING)

    @property
    def duration_ms(self) -> float:
        return (self.actual_end_ns - self.actual_start_ns) / 1e6

    @property
    def latency_ms(self) -> float | None:
        """Actual end minus expected end: how late (positive) or early the frame reached the display."""
        return None if self.expected_end_ns is None else (self.actual_end_ns - self.expected_end_ns) / 1e6


def surface_frames(trace: bytes, package: str | None = None) -> list[SurfaceFrame]:
    """The app surface frames of a trace whose layer belongs to `package` (its name holds `package/`), every
    app's when None; sorted by actual start. A timeline without its FrameEnd (the trace stopped first) is
    not a frame yet and is left out. Raises TraceError for bytes that are not a protobuf trace."""
    starts: dict[int, tuple[int, int, dict[int, int | bytes]]] = {}  # cookie -> (kind, start ns, fields)
    ends: dict[int, int] = {}
    for timestamp, kind, event in _timeline_events(trace):
        cookie = event.get(1, 0)
        assert isinstance(cookie, int)
        if kind == _FRAME_END:
            ends[cookie] = timestamp
        elif kind in (_EXPECTED_SURFACE, _ACTUAL_SURFACE):
            starts[cookie] = (kind, timestamp, event)
    expected: dict[tuple[int, str], tuple[int, int]] = {}
    actual: list[tuple[int, int, dict[int, int | bytes]]] = []
    for cookie, (kind, start, event) in starts.items():
        if cookie not in ends:
            continue
        layer = _text(event.get(5))
        if package is not None and f"{package}/" not in layer:
            continue
        if kind == _EXPECTED_SURFACE:
            expected[(_int(event.get(2)), layer)] = (start, ends[cookie])
        else:
            actual.append((start, ends[cookie], event))
    frames = []
    for start, end, event in actual:
        token, layer = _int(event.get(2)), _text(event.get(5))
        predicted = expected.get((token, layer))
        frames.append(SurfaceFrame(
            token=token, layer=layer, pid=_int(event.get(4)), actual_start_ns=start, actual_end_ns=end,
            expected_start_ns=predicted[0] if predicted else None, expected_end_ns=predicted[1] if predicted else None,
            jank_bits=_int(event.get(9)), present_type=PRESENT_TYPES.get(_int(event.get(6)), "Unknown"),
            on_time_finish=bool(_int(event.get(7))), gpu_composition=bool(_int(event.get(8)))))
    return sorted(frames, key=lambda f: (f.actual_start_ns, f.layer, f.token))


def jank_type_counts(frames: list[SurfaceFrame]) -> dict[str, int]:
    """How many frames carry each jank type (a frame with two types counts in both)."""
    return dict(sorted(Counter(name for f in frames for name in f.jank_types).items()))


# -- the protobuf wire format, only what a trace's frame timeline needs ------------------------------------


def _timeline_events(trace: bytes) -> Iterator[tuple[int, int, dict[int, int | bytes]]]:
    """(packet timestamp, oneof field number, the event's fields) of every frame_timeline_event packet."""
    for number, packet in _fields(trace, "Trace"):
        if number != _TRACE_PACKET or not isinstance(packet, bytes):
            continue
        timestamp, event = 0, None
        for field, value in _fields(packet, "TracePacket"):
            if field == _PACKET_TIMESTAMP and isinstance(value, int):
                timestamp = value
            elif field == _PACKET_FRAME_TIMELINE and isinstance(value, bytes):
                event = value
        if event is None:
            continue
        for kind, body in _fields(event, "FrameTimelineEvent"):
            if isinstance(body, bytes):
                yield timestamp, kind, dict(_fields(body, "FrameTimelineEvent event"))


def _fields(buf: bytes, what: str) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) of one message: varints and fixed-width values as ints, length-delimited
    values as bytes. Group wire types (deprecated, never in a trace) are an error."""
    i, n = 0, len(buf)
    while i < n:
        key, i = _varint(buf, i, what)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i, what)
            yield number, value
        elif wire == 2:
            length, i = _varint(buf, i, what)
            if i + length > n:
                raise TraceError(f"{what}: field {number} runs past the end of its message ({length} bytes)")
            yield number, buf[i:i + length]
            i += length
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            if i + width > n:
                raise TraceError(f"{what}: field {number} cut short")
            yield number, int.from_bytes(buf[i:i + width], "little")
            i += width
        else:
            raise TraceError(f"{what}: wire type {wire} at byte {i} is not a Perfetto trace's protobuf")


def _varint(buf: bytes, i: int, what: str) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise TraceError(f"{what}: a varint is cut short at byte {i}")
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, i
        shift += 7


def _int(value: int | bytes | None) -> int:
    """A varint field as a signed int64 (int32 fields are sign-extended to 64 bits on the wire)."""
    if not isinstance(value, int):
        return 0
    return value - (1 << 64) if value >= 1 << 63 else value


def _text(value: int | bytes | None) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else ""
