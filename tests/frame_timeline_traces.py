"""Perfetto traces holding Android's FrameTimeline, built with Perfetto's own trace builder
(perfetto.trace_builder.TraceProtoBuilder) for tests of host/devices/android_frame_timeline.py.

The `perfetto` package's Python protos (0.59) do not define TracePacket.frame_timeline_event (field 76), so
each event is encoded here from frame_timeline_event.proto's field numbers and merged into a builder packet
as a field the message keeps unparsed; the builder writes the trace. Encoding is done by this file, never
by the reader under test.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfetto.trace_builder.proto_builder import TraceProtoBuilder

FRAME_TIMELINE_EVENT = 76
BUILTIN_CLOCK_MONOTONIC = 3
EXPECTED_DISPLAY, ACTUAL_DISPLAY, EXPECTED_SURFACE, ACTUAL_SURFACE, FRAME_END = 1, 2, 3, 4, 5
JANK = {"None": 1, "SurfaceFlingerScheduling": 2, "PredictionError": 4, "DisplayHAL": 8,
        "SurfaceFlingerCpuDeadlineMissed": 16, "SurfaceFlingerGpuDeadlineMissed": 32, "AppDeadlineMissed": 64,
        "BufferStuffing": 128, "Unknown": 256, "SurfaceFlingerStuffing": 512, "Dropped": 1024}
PRESENT = {"OnTime": 1, "Late": 2, "Early": 3, "Dropped": 4}


@dataclass(frozen=True)
class Frame:
    """One surface frame as a test states it: times in ns, jank types by name."""

    token: int
    layer: str
    pid: int
    expected: tuple[int, int] | None
    actual: tuple[int, int]
    jank: tuple[str, ...] = ("None",)
    present: str = "OnTime"
    ended: bool = True  # False: the trace stopped before the actual timeline's FrameEnd


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, value: int | bytes | str) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _event(kind: int, *fields: tuple[int, int | bytes | str]) -> bytes:
    body = b"".join(_field(n, v) for n, v in fields)
    return _field(FRAME_TIMELINE_EVENT, _field(kind, body))


def build_trace(frames: list[Frame], *, surfaceflinger_pid: int = 600, display_frames: bool = True) -> bytes:
    """A trace with each frame's expected and actual surface timelines (and a display frame per token)."""
    builder = TraceProtoBuilder()
    events: list[tuple[int, bytes]] = []
    cookie = 1000
    for f in frames:
        display_token = f.token + 1_000_000
        if f.expected is not None:
            cookie += 1
            events.append((f.expected[0], _event(EXPECTED_SURFACE, (1, cookie), (2, f.token), (3, display_token),
                                                  (4, f.pid), (5, f.layer))))
            events.append((f.expected[1], _event(FRAME_END, (1, cookie))))
        cookie += 1
        bits = 0
        for name in f.jank:
            bits |= JANK[name]
        events.append((f.actual[0], _event(ACTUAL_SURFACE, (1, cookie), (2, f.token), (3, display_token),
                                            (4, f.pid), (5, f.layer), (6, PRESENT[f.present]),
                                            (7, int(f.present == "OnTime")), (8, 0), (9, bits), (10, 1), (11, 1))))
        if f.ended:
            events.append((f.actual[1], _event(FRAME_END, (1, cookie))))
        if display_frames:
            cookie += 1
            events.append((f.actual[0], _event(ACTUAL_DISPLAY, (1, cookie), (2, display_token),
                                                (3, surfaceflinger_pid), (4, 1), (5, 1), (6, 0), (7, 1), (8, 1))))
            events.append((f.actual[1], _event(FRAME_END, (1, cookie))))
    for timestamp, raw in sorted(events, key=lambda e: e[0]):
        packet = builder.add_packet()
        packet.timestamp = timestamp
        packet.timestamp_clock_id = BUILTIN_CLOCK_MONOTONIC
        packet.trusted_packet_sequence_id = 1
        packet.MergeFromString(raw)  # field 76, kept as a field the package's protos do not know
    return builder.serialize()
