"""The runner's peak resident memory over a launch (docs/runner-protocol.md, result.json `peak_rss_kb`).

On Linux and Android the kernel keeps the high-water mark of the process's resident set (VmHWM in
/proc/self/status), which counts every page the launch touched: the decoded images, the textures in a
software backend's memory, Skia's caches. Elsewhere getrusage's ru_maxrss is the same figure (kilobytes on
Linux, bytes on macOS). None when the platform gives neither: the host records it as unknown.
"""

from __future__ import annotations

import sys
from pathlib import Path

PROC_STATUS = Path("/proc/self/status")


def peak_rss_kb(status: Path = PROC_STATUS) -> int | None:
    """The process's peak resident set in KiB, or None where the platform does not say."""
    try:
        for line in status.read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith("VmHWM:"):
                fields = line.split()
                if len(fields) >= 2 and fields[1].isdigit():  # "VmHWM:   123456 kB"
                    return int(fields[1])
    except OSError:
        pass
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if peak <= 0:
        return None
    return int(peak // 1024) if sys.platform == "darwin" else int(peak)
