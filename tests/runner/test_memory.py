"""The runner's peak resident memory (pytest_zbench/runner/memory.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_zbench.runner.memory import peak_rss_kb


def test_the_kernels_high_water_mark_is_read_from_proc_status(tmp_path: Path) -> None:
    status = tmp_path / "status"
    status.write_text("Name:\tpython\nVmPeak:\t  912345 kB\nVmHWM:\t  123456 kB\nVmRSS:\t  100000 kB\n")
    assert peak_rss_kb(status) == 123456


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/status is Linux's")
def test_this_process_has_a_peak_at_least_its_current_resident_set() -> None:
    current = next(int(line.split()[1]) for line in Path("/proc/self/status").read_text().splitlines()
                   if line.startswith("VmRSS:"))
    peak = peak_rss_kb()
    assert peak is not None and peak >= current > 1000
    # Without /proc, getrusage gives the same high-water mark (KiB on Linux).
    fallback = peak_rss_kb(Path("/nonexistent/status"))
    assert fallback is not None and abs(fallback - peak) <= max(peak // 10, 1024)
