"""check_capture: the one call a `golden` fixture makes per captured frame; plus the artifacts it writes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pytest_zbench.golden import GoldenStore, ToleranceError, check_capture, load_png
from pytest_zbench.golden.check import check_cross_reference, cross_kind
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


@pytest.mark.parametrize("spoil", ["corrupt", "16-bit", "link outside", "dangling link"])
def test_an_unusable_golden_is_an_error_that_failed_and_all_repair(tmp_path, ui, spoil):
    store = GoldenStore(tmp_path / "goldens")
    key = store.key("gles2", "pi3b", "ui.card", 60)
    path = store.path(key)
    path.parent.mkdir(parents=True)
    outside = tmp_path / "elsewhere.png"
    outside.write_bytes(encode_png(ui()))
    if spoil == "corrupt":
        path.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
    elif spoil == "16-bit":
        from test_protocol import png_bytes

        path.write_bytes(png_bytes(4, 4, depth=16))
    elif spoil == "link outside":
        path.symlink_to(outside)
    else:
        path.symlink_to(tmp_path / "goldens" / "gone.png")
    for update in (None, "missing"):
        result = run(store, ui(), update=update)
        assert result.status == "error" and not result.ok and str(path) in result.message
        assert "--zbench-update-goldens=failed" in result.message or "mode 'missing'" in result.message
    for update in ("failed", "all"):
        result = run(store, ui(), update=update)
        assert result.status == "written", result.message
        assert not path.is_symlink() and np.array_equal(store.load(key), ui())
        assert np.array_equal(load_png(outside), ui())  # a link is replaced, never written through
        path.unlink()
        if spoil == "link outside":
            path.symlink_to(outside)
        else:
            path.write_bytes(b"junk")


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


# -------------------------------------------------------------------------------------- the cross-reference check


def cross(store, capture, tmp_path, *, backend="gles2", device_class="pi3b", arch=None, tolerance=None):
    """What host/verdicts/golden_test.py does per frame: the frame's own check, then (when cross_kind says so) the capture
    against the reference software set."""
    path = tmp_path / f"capture-{backend}.png"
    path.write_bytes(encode_png(capture))
    own = run(store, path, backend=backend, device_class=device_class, arch=arch, tolerance=tolerance)
    kind = cross_kind(backend, own.key.device_class)
    assert kind is not None
    entry = check_cross_reference(store, kind=kind, backend=backend, frame=60, capture=path, tolerance=tolerance,
                                  own=own, artifacts_dir=tmp_path / "report")
    return own, entry


def test_cross_kind_names_the_second_comparison_of_each_device():
    assert cross_kind("gles2", "pi3b") == "cross_backend"
    assert cross_kind("software", "aarch64") == "cross_arch"
    assert cross_kind("software", "x86_64") is None  # the reference set itself


def test_a_gpu_renderer_that_drifted_fails_across_backends_although_its_own_golden_passes(tmp_path, ui):
    store = GoldenStore(tmp_path / "goldens")
    store.write(store.key("software", "x86_64", "ui.card", 60), ui())
    # The device's own golden was recorded from the renderer as it is now: its own check cannot see the drift.
    drifted = ui(card=(40, 120, 140))
    store.write(store.key("gles2", "pi3b", "ui.card", 60), drifted)
    own, entry = cross(store, drifted, tmp_path)
    assert own.status == "passed" and own.golden_backend == "gles2"
    assert entry["kind"] == "cross_backend" and entry["status"] == "failed"
    assert entry["reference_set"] == "software/x86_64"
    assert entry["golden"] == str(store.path_for("software", "x86_64", "ui.card", 60))
    assert "across backends: gles2 against the software reference" in entry["message"]
    assert "tolerance.gles2.cross_backend" in entry["message"]
    assert entry["metrics"]["max_delta"] == 60 and entry["tightness"]
    assert set(entry["artifacts"]) == {"expected", "actual", "diff", "flip"}
    assert all("frame-60-cross-" in p and "cross-arch" not in p for p in entry["artifacts"].values())
    assert np.array_equal(load_png(entry["artifacts"]["expected"]), ui())


def test_a_gpu_renderer_within_the_cross_backend_tolerance_passes(tmp_path, ui):
    store = GoldenStore(tmp_path / "goldens")
    store.write(store.key("software", "x86_64", "ui.card", 60), ui())
    close = ui(card=(44, 120, 200))  # 4 levels on one channel of the card: under the default max_delta 8
    store.write(store.key("gles2", "pi3b", "ui.card", 60), close)
    own, entry = cross(store, close, tmp_path)
    assert own.status == "passed" and entry["status"] == "passed" and "artifacts" not in entry
    assert entry["metrics"]["max_delta"] == 4
    # The scene's own cross_backend block is what the comparison uses: tightened, the same capture fails.
    _, strict = cross(store, close, tmp_path, tolerance={"gles2": {"cross_backend": {"max_delta": 2}}})
    assert strict["status"] == "failed"


def test_without_its_own_golden_a_gpu_frame_reuses_the_frame_check_against_the_reference(tmp_path, ui):
    store = GoldenStore(tmp_path / "goldens")
    store.write(store.key("software", "x86_64", "ui.card", 60), ui())
    own, entry = cross(store, ui(card=(40, 120, 140)), tmp_path)
    assert own.status == "failed" and own.golden_backend == "software"
    assert entry["status"] == "failed" and entry["metrics"] == own.comparison.metrics


def test_no_reference_golden_is_missing_and_a_corrupt_one_an_error(tmp_path, ui):
    store = GoldenStore(tmp_path / "goldens")
    store.write(store.key("gles2", "pi3b", "ui.card", 60), ui())
    _, entry = cross(store, ui(), tmp_path)
    assert entry["status"] == "missing" and entry["metrics"] is None and "no reference golden" in entry["message"]
    reference = store.path_for("software", "x86_64", "ui.card", 60)
    reference.parent.mkdir(parents=True)
    reference.write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    _, broken = cross(store, ui(), tmp_path)
    assert broken["status"] == "error" and "not possible" in broken["message"]


def test_another_architecture_is_held_to_the_tighter_cross_arch_tolerance(tmp_path, ui):
    store = GoldenStore(tmp_path / "goldens")
    store.write(store.key("software", "x86_64", "ui.card", 60), ui())
    one_level = ui(card=(41, 120, 200))  # a blend rounding apart: within cross_arch's max_delta 2
    store.write(store.key("software", "aarch64", "ui.card", 60), one_level)
    own, entry = cross(store, one_level, tmp_path, backend="software", arch="aarch64")
    assert own.status == "passed" and own.golden_set == "software/aarch64"
    assert entry["kind"] == "cross_arch" and entry["status"] == "passed" and entry["metrics"]["max_delta"] == 1
    # 4 levels pass across backends (above) but not across architectures.
    four = ui(card=(44, 120, 200))
    store.write(store.key("software", "aarch64", "ui.card", 60), four)
    _, drifted = cross(store, four, tmp_path, backend="software", arch="aarch64")
    assert drifted["status"] == "failed" and "tolerance.software.cross_arch" in drifted["message"]
    assert all("frame-60-cross-arch-" in p for p in drifted["artifacts"].values())
