"""The refresh rate a device's frames are budgeted against: declared, measured (SurfaceFlinger on Android, the
runner's probe elsewhere) or assumed, and the warning when a declared rate is not the display's."""

from __future__ import annotations

import os

import pytest

from pytest_zbench.host.devices.refresh_rate import choose_refresh, measure_refresh
from pytest_zbench.transports import make_transport
from tests.remote.android_dumps import data
from tests.remote.fake_adbd import _standins, serve_dumps


def spec_of(write_inventory, **entry):
    return write_inventory({"dev": {"transport": "local", **entry}})["dev"]


def test_declared_measured_and_assumed(write_inventory):
    declared = spec_of(write_inventory, platform="android", display={"width": 64, "height": 48, "refresh_hz": 60})
    undeclared = spec_of(write_inventory, platform="android", display={"width": 64, "height": 48})
    bare = spec_of(write_inventory, platform="android")
    # 58.98 Hz measured against 60 declared: 1.7 %, within the 2 % a panel's real rate may differ by
    close = choose_refresh(declared, 1e9 / 16954612, "surfaceflinger")
    assert (close.hz, close.source, close.warning) == (60.0, "inventory", None)
    assert close.measured_hz == pytest.approx(58.981, abs=1e-3)
    far = choose_refresh(declared, 90.0, "surfaceflinger")
    assert far.hz == 60.0 and far.source == "inventory"
    assert far.warning is not None and "declares display refresh_hz 60" in far.warning
    assert "surfaceflinger reports 90.00 Hz (-33.3%)" in far.warning and str(declared.source) in far.warning
    for spec in (undeclared, bare):
        measured = choose_refresh(spec, 1e9 / 16954612, "surfaceflinger")
        assert measured.source == "surfaceflinger" and measured.hz == pytest.approx(58.981, abs=1e-3)
        assert measured.warning is None
    assert choose_refresh(bare, 120.0, "probe").source == "probe"
    assumed = choose_refresh(bare, None, None)
    assert (assumed.hz, assumed.source) == (60.0, "assumed")
    assert assumed.display_keys() == {"refresh_source": "assumed", "measured_refresh_hz": None,
                                      "measured_refresh_source": None, "refresh_warning": None}


@pytest.mark.parametrize(("refresh_file", "hz"), [("sf-latency-catapult.txt", 1e9 / 16954612),
                                                  ("sf-latency-unknown-layer-tecno-camon20.txt", 1e9 / 16666667)])
def test_surfaceflinger_period_through_a_real_transport(write_inventory, tmp_path, refresh_file, hz):
    sandbox = tmp_path / "device"
    bin_dir = _standins(sandbox)
    serve_dumps(sandbox, sf_refresh=data(refresh_file))
    spec = spec_of(write_inventory, platform="android", env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    transport = make_transport(spec)
    transport.open()
    try:
        rate = measure_refresh(spec, transport, {"width": 64, "height": 48, "refresh_hz": 30})
    finally:
        transport.close()
    assert rate.source == "surfaceflinger" and rate.hz == pytest.approx(hz)  # the probe's 30 Hz is not asked


def test_without_surfaceflinger_the_probe_then_the_assumption(write_inventory, tmp_path):
    sandbox = tmp_path / "device"
    bin_dir = _standins(sandbox)
    serve_dumps(sandbox, sf_refresh="Can't find service: SurfaceFlinger\n")
    spec = spec_of(write_inventory, platform="android", env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    transport = make_transport(spec)
    transport.open()
    try:
        probed = measure_refresh(spec, transport, {"width": 64, "height": 48, "refresh_hz": 75})
        none = measure_refresh(spec, transport, None)
    finally:
        transport.close()
    assert (probed.hz, probed.source) == (75.0, "probe")
    assert probed.unmeasured is not None and "refresh period" in probed.unmeasured
    assert (none.hz, none.source) == (60.0, "assumed")
    linux = spec_of(write_inventory, platform="linux")
    assert measure_refresh(linux, None, {"refresh_hz": 144}).source == "probe"  # no SurfaceFlinger asked
