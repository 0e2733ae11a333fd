"""DeviceLease: one holder per device across processes, a clear message naming the holder."""

from __future__ import annotations

import multiprocessing
import os
import time

import pytest

from pytest_zbench.errors import DeviceError
from pytest_zbench.host.devices.lease import DeviceLease


def _hold(lock_dir: str, ready, release) -> None:
    with DeviceLease("pi3b", lock_dir):
        ready.set()
        release.wait(20)


def test_second_process_waits_then_names_the_holder(tmp_path):
    ctx = multiprocessing.get_context("fork")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold, args=(str(tmp_path), ready, release))
    holder.start()
    try:
        assert ready.wait(10)
        started = time.monotonic()
        with pytest.raises(DeviceError) as info:
            DeviceLease("pi3b", tmp_path, timeout_s=0.3).acquire()
        assert time.monotonic() - started >= 0.3
        message = str(info.value)
        assert f"pid {holder.pid}" in message and "pi3b" in message and str(tmp_path / "pi3b.lock") in message
        # another device is free meanwhile
        with DeviceLease("nexus7", tmp_path, timeout_s=0):
            pass
    finally:
        release.set()
        holder.join(10)
    # once the holder is gone, the lease is free again
    with DeviceLease("pi3b", tmp_path, timeout_s=5) as lease:
        assert lease.held and lease.holder()["pid"] == os.getpid()
    assert not lease.held and lease.holder() is None


def test_lock_is_dropped_when_the_holder_dies(tmp_path):
    ctx = multiprocessing.get_context("fork")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold, args=(str(tmp_path), ready, release))
    holder.start()
    assert ready.wait(10)
    holder.kill()
    holder.join(10)
    with DeviceLease("pi3b", tmp_path, timeout_s=2):
        pass


def test_waiter_gets_it_when_released(tmp_path):
    ctx = multiprocessing.get_context("fork")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold, args=(str(tmp_path), ready, release))
    holder.start()
    assert ready.wait(10)
    ctx.Process(target=lambda: (time.sleep(0.2), release.set())).start()
    with DeviceLease("pi3b", tmp_path, timeout_s=10):
        pass
    holder.join(10)


def test_bad_names_are_refused(tmp_path):
    with pytest.raises(ValueError):
        DeviceLease("../x", tmp_path)
