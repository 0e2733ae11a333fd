"""check_capture: the one call a `golden` fixture makes per captured frame; plus the artifacts it writes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pytest_zbench.golden import GoldenStore, ToleranceError, check_capture, load_png
from pytest_zbench.golden.failure_images import WITHIN_TOLERANCE_RGB, diff_image, magma
from pytest_zbench.golden.store import encode_png
from pytest_zbench.protocol import Issue


def run(store, capture, **kw):
    args = dict(backend="gles2", device_class="pi3b", scene_id="ui.card", frame=60, capture=capture)
    args.update(kw)
    return check_capture(store, **args)


def test_missing_golden_is_reported_with_the_fix(tmp_path, ui):
    result = run(GoldenStore(tmp_path), ui())
    assert result.status == "missing" and not result.ok
    assert "--zbench-update-goldens=missing" in result.message and "gles2/pi3b/ui.card/frame-60.png" in result.message


def test_update_missing_writes_then_passes(tmp_path, ui):
    store = GoldenStore(tmp_path)
    capture = tmp_path / "capture-60.png"
    capture.write_bytes(encode_png(ui()))
    written = run(store, capture, update="missing")
    assert written.status == "written" and written.ok and np.array_equal(load_png(written.written), ui())
    again = run(store, capture, update="missing")
    assert again.status == "passed" and again.comparison.identical and again.written is None


def test_untrusted_capture_is_never_written(tmp_path, ui):
    store = GoldenStore(tmp_path)
    result = run(store, ui(), update="all", capture_trusted=False, untrusted_reason="runner exited 1 (partial)")
    assert result.status == "missing" and result.written is None
    assert "partial" in result.message and not any(tmp_path.rglob("*.png"))


def test_failure_writes_artifacts_and_a_json_defect_record(tmp_path, ui):
    store = GoldenStore(tmp_path / "goldens")
    store.write(store.key("gles2", "pi3b", "ui.card", 60), ui())
    result = run(
        store, ui(card=(200, 40, 40)), artifacts_dir=tmp_path / "report",
        device="pi3b", driver={"gl_renderer": "VC4 V3D 2.1", "gl_version": "OpenGL ES 2.0 Mesa"},
        build_hash="abc123", runner_issues=[Issue("gl_error", "GL_OUT_OF_MEMORY after frame", 60)],
    )
    assert result.status == "failed"
    assert set(result.artifacts) == {"expected", "actual", "diff", "flip"}
    for path in result.artifacts.values():
        assert load_png(path).shape == (96, 160, 4)
    record = json.loads(json.dumps(result.record))
    assert record["scene"] == "ui.card" and record["frame"] == 60 and record["backend"] == "gles2"
    assert record["driver"]["gl_renderer"] == "VC4 V3D 2.1" and record["build_hash"] == "abc123"
    assert record["bbox"] == result.comparison.metrics["bbox"] and record["metrics"]["flip_mean"] > 0
    assert record["runner_issues"] == [{"frame": 60, "kind": "gl_error", "detail": "GL_OUT_OF_MEMORY after frame"}]
    assert record["artifacts"]["diff"].endswith("frame-60-diff.png")
    assert "max_pixels" in result.message and "--zbench-update-goldens=failed" in result.message


def test_update_failed_rewrites_a_failing_golden(tmp_path, ui):
    store = GoldenStore(tmp_path)
    store.write(store.key("gles2", "pi3b", "ui.card", 60), ui())
    result = run(store, ui(card=(200, 40, 40)), update="failed")
    assert result.status == "written" and result.comparison is not None and not result.comparison.passed
    assert np.array_equal(store.load(store.key("gles2", "pi3b", "ui.card", 60)), ui(card=(200, 40, 40)))


def test_gpu_capture_is_compared_with_the_software_golden_when_it_has_none(tmp_path, ui):
    store = GoldenStore(tmp_path)
    store.write(store.key("software", "x86_64", "ui.card", 60), ui())
    result = run(store, ui(dx=1), tolerance={"gles2": {"cross_backend": {"edge_mask": {"max_pixels": 400}}}})
    assert result.status == "passed" and result.golden_backend == "software"
    assert result.comparison.tolerance.edge_mask.max_pixels.count == 400
    # --zbench-update-goldens=missing records the device's own golden, never the software one.
    written = run(store, ui(dx=1), update="missing")
    assert written.written == store.path_for("gles2", "pi3b", "ui.card", 60)
    assert np.array_equal(store.load(store.key("software", "x86_64", "ui.card", 60)), ui())


def test_software_capture_uses_its_architecture_set_and_nothing_else(tmp_path, ui):
    store = GoldenStore(tmp_path)
    store.write(store.key("software", "x86_64", "ui.card", 60), ui())
    # An aarch64 runner without its own set: missing, even though the x86_64 golden is identical.
    arm = run(store, ui(), backend="software", device_class="pi3b", arch="aarch64")
    assert arm.status == "missing" and not arm.ok and arm.comparison is None
    assert "software/aarch64/ui.card/frame-60.png" in arm.message
    assert "exact within one CPU architecture" in arm.message and "aarch64" in arm.message
    written = run(store, ui(), backend="software", device_class="pi3b", arch="aarch64", update="missing")
    assert written.written == store.path_for("software", "aarch64", "ui.card", 60)
    # Its own set then compares exactly: one level of one channel fails.
    shifted = ui(card=(41, 120, 200))
    failed = run(store, shifted, backend="software", device_class="pi3b", arch="aarch64")
    assert failed.status == "failed" and failed.golden_set == "software/aarch64"
    assert "set software/aarch64" in failed.message
    x86 = run(store, ui(), backend="software", device_class="host", arch="x86_64")
    assert x86.status == "passed" and x86.golden_set == "software/x86_64"


def test_missing_software_golden_names_the_old_layout(tmp_path, ui):
    store = GoldenStore(tmp_path)
    store.write(store.key("software", "any", "ui.card", 60), ui())
    result = run(store, ui(), backend="software", device_class="host", arch="x86_64")
    assert result.status == "missing"
    assert "git mv goldens/software/any goldens/software/x86_64" in result.message


def test_bad_tolerance_propagates_with_its_key(tmp_path, ui):
    store = GoldenStore(tmp_path)
    store.write(store.key("gles2", "pi3b", "ui.card", 60), ui())
    with pytest.raises(ToleranceError) as info:
        run(store, ui(), tolerance={"gles2": {"max_pixel": 3}})
    assert info.value.key == "gles2.max_pixel"


def test_missing_or_corrupt_capture_is_an_error_not_a_write(tmp_path):
    store = GoldenStore(tmp_path)
    assert run(store, None, update="all").status == "error"
    bad = tmp_path / "capture-60.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    result = run(store, bad, update="all")
    assert result.status == "error" and "capture-60.png" in result.message
    assert not store.exists(store.key("gles2", "pi3b", "ui.card", 60))


def test_diff_image_highlights_by_magnitude_over_dimmed_grey(solid):
    expected = solid(4, 4, (200, 30, 30))
    delta = np.zeros((4, 4), np.uint8)
    delta[0, 0], delta[0, 1], delta[0, 2] = 1, 20, 255
    diff = diff_image(expected, delta, max_delta=2)
    assert tuple(diff[0, 0, :3]) == WITHIN_TOLERANCE_RGB
    small, large = diff[0, 1, :3].astype(int), diff[0, 2, :3].astype(int)
    assert small[0] == large[0] == 255 and small[1] > large[1]  # yellow-ish to red as the delta grows
    grey = diff[3, 3, :3]
    assert grey[0] == grey[1] == grey[2] < 120  # dimmed, colourless copy of the expected pixel


def test_magma_ramp_is_dark_to_bright():
    ramp = magma(np.linspace(0, 1, 16)[None, :])
    brightness = ramp[0, :, :3].astype(int).sum(axis=1)
    assert brightness[0] < 20 and np.all(np.diff(brightness) > 0)


def test_size_mismatch_artifacts_keep_both_images(tmp_path, ui):
    from pytest_zbench.golden import compare, resolve_tolerance, write_artifacts

    c = compare(ui(), ui()[:50], resolve_tolerance(None, "gles2"))
    paths = write_artifacts(c, tmp_path, stem="frame-0")
    assert set(paths) == {"expected", "actual"} and load_png(paths["actual"]).shape == (50, 160, 4)
