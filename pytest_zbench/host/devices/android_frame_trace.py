"""A Perfetto trace of SurfaceFlinger's FrameTimeline around one launch, on an Android 12+ device
(docs/platform-frames.md, "FrameTimeline"); android_frame_dumps.py starts and stops it beside its dumps.

    trace = FrameTimelineTrace(device.side_channel())
    trace.start()          # `perfetto --background`, its config on stdin; remembers the pid
    ... the launch ...
    data = trace.stop()    # SIGTERM (perfetto writes the trace out), then the trace's bytes, base64

Each step is one `sh -c` round trip with its values as positional parameters, never in the script. The
config arrives on perfetto's stdin (`-c -`): from Android 12 SELinux keeps perfetto from reading a config
file in /data/local/tmp, and its output may only go to /data/misc/perfetto-traces. The bytes come back as
base64 text, because a transport's `run` returns text.
"""

from __future__ import annotations

import base64
import binascii
import time
from typing import TYPE_CHECKING

from ...errors import DeviceError
from ...transports._shell import LAUNCH_VARIABLE
from .android_frame_timeline import FRAME_TIMELINE_DATA_SOURCE

if TYPE_CHECKING:
    from ...transports import Transport

# The one folder perfetto may write to on a user build from Android 12 (devices.yaml `frame_timeline: true`);
# `frame_timeline: /some/folder` names another (a rooted or an emulated device).
TRACE_DIR = "/data/misc/perfetto-traces"
TIMEOUT_S = 20.0
# perfetto stops on its own after this long if the host never comes back (a launch's deadline is shorter).
MAX_DURATION_MS = 30 * 60 * 1000

CONFIG = (
    "buffers { size_kb: 8192 fill_policy: RING_BUFFER }\n"
    f'data_sources {{ config {{ name: "{FRAME_TIMELINE_DATA_SOURCE}" }} }}\n'
    f"duration_ms: {MAX_DURATION_MS}\n"
)

# $1 the config text, $2 the output file. perfetto --background prints the pid of the tracing process, which
# must outlive this command: the adb transport stops whatever a command leaves running that carries its launch
# variable (transports/_shell.py), so perfetto starts without it; it leaves the process group on its own
# (--background daemonises) and stops itself after MAX_DURATION_MS if the host never stops it.
START_SCRIPT = ('rm -f "$2"; printf "%s" "$1" | env -u ' + LAUNCH_VARIABLE
                + ' perfetto --background --txt -c - -o "$2"')
# $1 the pid, $2 the output file: stop it (perfetto writes the file on SIGTERM), wait up to 10 s for it to exit,
# print the file. An exited process no one has reaped yet is a zombie that `kill -0` still finds: it counts as
# gone (its state in /proc says Z).
STOP_SCRIPT = (
    'kill -TERM "$1" 2>/dev/null; i=0; '
    'while [ -r "/proc/$1/status" ] && ! grep -q "^State:[[:space:]]*Z" "/proc/$1/status" 2>/dev/null '
    '&& [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; '
    'if [ -f "$2" ]; then base64 "$2"; rm -f "$2"; else echo "no trace file $2" >&2; exit 1; fi'
)


class FrameTimelineTrace:
    """One tracing session; `issues` says what went wrong (a device without perfetto, a trace not written)."""

    def __init__(self, channel: Transport, trace_dir: str = TRACE_DIR) -> None:
        self.channel = channel
        self.path = f"{trace_dir.rstrip('/')}/zbench-frametimeline-{time.time_ns()}.pftrace"
        self.pid: int | None = None
        self.issues: list[str] = []

    def start(self) -> bool:
        out = self._run(["sh", "-c", START_SCRIPT, "zbench", CONFIG, self.path], "start")
        if out is None:
            return False
        pid = out.strip().splitlines()[-1].strip() if out.strip() else ""
        if not pid.isdigit():
            self.issues.append(f"perfetto did not start a trace of the frame timeline: {out.strip()[-300:]!r}")
            return False
        self.pid = int(pid)
        return True

    def stop(self) -> bytes | None:
        """The trace's bytes, or None (with an issue) when there is none."""
        if self.pid is None:
            return None
        pid, self.pid = self.pid, None
        out = self._run(["sh", "-c", STOP_SCRIPT, "zbench", str(pid), self.path], "stop")
        if out is None:
            return None
        try:
            return base64.b64decode("".join(out.split()), validate=True)
        except (binascii.Error, ValueError):
            self.issues.append(f"the frame timeline trace did not come back as base64: {out.strip()[:200]!r}")
            return None

    def _run(self, argv: list[str], step: str) -> str | None:
        try:
            result = self.channel.run(argv, timeout_s=TIMEOUT_S)
        except (DeviceError, OSError) as exc:
            self.issues.append(f"the frame timeline trace could not {step}: {exc}")
            return None
        if result.timed_out or result.exit_code != 0:
            detail = (result.stderr or result.stdout or "").strip()[-300:]
            self.issues.append(f"the frame timeline trace could not {step} (exit {result.exit_code}): {detail}")
            return None
        return result.stdout
