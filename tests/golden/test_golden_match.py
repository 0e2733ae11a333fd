"""The layered matcher on constructed images, and its metrics against plain-loop references."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pytest_zbench.golden.match import compare
from pytest_zbench.golden.tolerance import parse_tolerance, resolve_tolerance

SOFTWARE = resolve_tolerance(None, "software")
GPU = resolve_tolerance(None, "gles2")
CROSS = resolve_tolerance(None, "gles2", golden_backend="software")


def gates(c):
    return sorted({metric for metric, _, _ in c.failures})


# ------------------------------------------------------------------------------ constructed images


def test_identical_takes_the_fast_path(ui):
    c = compare(ui(), ui(), GPU)
    assert c.passed and c.identical
    assert (c.metrics["max_delta"], c.metrics["differing_pixels"], c.metrics["ssim"], c.metrics["flip_mean"]) == (0, 0, 1.0, 0.0)


def test_colour_change_fails_unless_the_delta_allows_it(ui):
    expected, actual = ui(), ui(card=(40, 120, 220))
    for tol in (SOFTWARE, GPU, CROSS):
        assert not compare(expected, actual, tol).passed
    loose = compare(expected, actual, parse_tolerance({"max_delta": 20, "max_pixels": 0}))
    assert loose.passed and loose.metrics["max_delta"] == 20


def test_one_pixel_shift_fails_same_backend_and_passes_behind_an_edge_mask(ui):
    expected, actual = ui(), ui(dx=1)
    assert gates(compare(expected, actual, GPU)) == ["max_pixels"]
    edges_ignored = resolve_tolerance({"gles2": {"cross_backend": {"edge_mask": {"max_pixels": None}}}}, "gles2",
                                      golden_backend="software")
    masked = compare(expected, actual, edges_ignored)
    assert masked.passed, masked.message()
    assert masked.metrics["pixels_over_gated"] == 0 < masked.metrics["edge_pixels_over"]
    tight = compare(expected, actual, parse_tolerance({"max_pixels": 0, "edge_mask": {"max_pixels": 10}}))
    assert gates(tight) == ["edge_mask"]  # edges given their own, too small, budget


def test_antialiasing_noise_passes_gpu_and_fails_exact(ui):
    expected = ui()
    rng = np.random.default_rng(7)
    actual = expected.astype(np.int16)
    noisy = rng.random(expected.shape[:2]) < 0.05
    actual[noisy, :3] += rng.integers(-2, 3, size=(int(noisy.sum()), 3))
    actual = actual.clip(0, 255).astype(np.uint8)
    assert compare(expected, actual, GPU).passed
    assert gates(compare(expected, actual, SOFTWARE)) == ["exact"]


def test_missing_glyph_fails_everywhere_even_behind_the_edge_mask(text):
    expected, actual = text("Golden: 42"), text("Golden: 4")
    for tol in (SOFTWARE, GPU, CROSS):
        c = compare(expected, actual, tol)
        assert not c.passed, tol
    # The glyph's own edges exist only in the expected image; masking edges of the expected image alone
    # hides the defect, which is why the default mask is on edges present in both images.
    def edges_ignored(on):
        return parse_tolerance({"max_delta": 8, "max_pixels": 32, "edge_mask": {"on": on}})

    assert compare(expected, actual, edges_ignored("expected")).passed
    assert not compare(expected, actual, edges_ignored("both")).passed
    bbox = compare(expected, actual, GPU).metrics["bbox"]
    assert bbox[0] > 80  # the region is where the '2' was, on the right


def test_size_mismatch_is_a_failed_comparison_that_keeps_both_images(ui):
    expected, actual = ui(), ui()[:90]
    c = compare(expected, actual, GPU)
    assert not c.passed and c.size_mismatch and gates(c) == ["size"]
    assert c.expected.shape == (96, 160, 4) and c.actual.shape == (90, 160, 4)
    assert c.metrics["expected_size"] == [160, 96] and c.metrics["actual_size"] == [160, 90]
    json.dumps(c.metrics)


def test_border_is_ignored_by_the_gates_but_recorded(solid):
    expected, actual = solid(20, 20, 100), solid(20, 20, 100)
    actual[0, :, 0] = 200  # a bad top row
    c = compare(expected, actual, parse_tolerance({"max_pixels": 0, "border": 1}))
    assert c.passed and c.metrics["pixels_over"] == 20 and c.metrics["pixels_over_border_ignored"] == 0
    assert not compare(expected, actual, parse_tolerance({"max_pixels": 0})).passed


def test_fuzzy_two_axis_ranges(solid):
    expected, actual = solid(10, 10, 50), solid(10, 10, 50)
    actual[2, 2:5, 1] += 3  # 3 pixels, delta 3
    assert compare(expected, actual, parse_tolerance({"fuzzy": "0-3;0-3"})).passed
    assert not compare(expected, actual, parse_tolerance({"fuzzy": "0-2;0-3"})).passed
    assert not compare(expected, actual, parse_tolerance({"fuzzy": "0-3;0-2"})).passed
    # A lower bound asserts that the images do differ (a reftest that must not match).
    assert not compare(expected, expected, parse_tolerance({"fuzzy": "1-3;1-3"})).passed


def test_buckets(solid):
    expected, actual = solid(10, 10, 50), solid(10, 10, 50)
    actual[0, :5, 0] += 2  # 5 pixels at delta 2
    actual[1, :2, 0] += 6  # 2 pixels at delta 6
    c = compare(expected, actual, parse_tolerance({"buckets": [[2, 5], [8, 2]]}))
    assert c.passed and [b["pixels"] for b in c.metrics["buckets"]] == [5, 2]
    assert gates(compare(expected, actual, parse_tolerance({"buckets": [[2, 4], [8, 2]]}))) == ["buckets"]
    overflow = compare(expected, actual, parse_tolerance({"buckets": [[4, 10]]}))
    assert overflow.metrics["buckets_overflow"] == 2 and not overflow.passed


def test_perceptual_gates(ui):
    expected, actual = ui(), ui(card=(40, 120, 220))
    c = compare(expected, actual, parse_tolerance({"flip_mean": 0.5, "flip_max": 1.0, "ssim_min": 0.5}))
    assert c.passed and 0 < c.metrics["flip_mean"] < c.metrics["flip_max"] <= 1 and c.metrics["ssim"] < 1
    strict = compare(expected, actual, parse_tolerance({"flip_max": 0.001, "ssim_min": 0.99999}))
    assert gates(strict) == ["flip_max", "ssim_min"]
    assert c.flip_map is not None and c.flip_map.shape == (96, 160)


def test_every_metric_is_recorded_but_only_gates_decide(ui):
    expected, actual = ui(), ui(dx=1)
    c = compare(expected, actual, parse_tolerance({"ssim_min": 0.5, "gate": ["ssim_min"], "max_pixels": 0}))
    assert c.passed and c.metrics["pixels_over"] > 0 and c.metrics["flip_mean"] > 0
    json.dumps(c.metrics)
    json.dumps(c.tightness)
    assert c.tightness["max_pixels"]["observed"] == c.metrics["pixels_over_gated"]
    assert c.tightness["max_pixels"]["bound"] == 0 and c.tightness["max_pixels"]["ratio"] is None


def test_tightness_reports_observed_beside_bounds(ui):
    c = compare(ui(), ui(card=(40, 121, 200)), GPU)
    t = c.tightness
    assert t["max_delta"] == {"observed": 1, "bound": 2, "ratio": 0.5}
    assert t["max_pixels"]["observed"] == 0 and t["max_pixels"]["bound"] == 16
    assert t["flip_mean"]["observed"] > 0 and t["flip_mean"]["bound"] is None


def test_message_reads_like_a_report(ui):
    c = compare(ui(), ui(card=(40, 120, 220)), GPU)
    text = c.message()
    assert "max_pixels" in text and "allowed <= 16" in text and "differing region" in text


# ----------------------------------------------------------------------- references with plain loops


def _reference(expected, actual, threshold):
    h, w = expected.shape[:2]
    deltas = np.zeros((h, w), int)
    for y in range(h):
        for x in range(w):
            e, a = [int(v) for v in expected[y, x]], [int(v) for v in actual[y, x]]
            pe = [(e[i] * e[3] + 127) // 255 for i in range(3)] + [e[3]]
            pa = [(a[i] * a[3] + 127) // 255 for i in range(3)] + [a[3]]
            deltas[y, x] = max(abs(pe[i] - pa[i]) for i in range(4))
    over = [(x, y) for y in range(h) for x in range(w) if deltas[y, x] > threshold]
    bbox = None
    if over:
        xs, ys = [p[0] for p in over], [p[1] for p in over]
        bbox = [min(xs), min(ys), max(xs) - min(xs) + 1, max(ys) - min(ys) + 1]
    return deltas, len(over), bbox


@pytest.mark.parametrize("seed", range(4))
def test_delta_metrics_match_a_plain_loop(seed):
    rng = np.random.default_rng(seed)
    expected = rng.integers(0, 256, size=(5, 7, 4), dtype=np.uint8)
    actual = expected.copy()
    mask = rng.random((5, 7)) < 0.5
    actual[mask] = (actual[mask].astype(int) + rng.integers(-40, 41, size=(int(mask.sum()), 4))).clip(0, 255)
    threshold = int(rng.integers(0, 10))
    deltas, n_over, bbox = _reference(expected, actual, threshold)
    c = compare(expected, actual, parse_tolerance({"max_delta": threshold, "max_pixels": 0}), perceptual=False)
    m = c.metrics
    assert np.array_equal(c.delta, deltas)
    assert m["max_delta"] == deltas.max()
    assert m["differing_pixels"] == int((deltas > 0).sum())
    assert m["pixels_over"] == n_over and m["bbox"] == bbox
    assert sum(m["histogram"].values()) == 35
    assert m["histogram"]["0"] == int((deltas == 0).sum())
    assert m["histogram"]["9-16"] == int(((deltas >= 9) & (deltas <= 16)).sum())


def test_colour_under_transparent_pixels_does_not_count(solid):
    expected = solid(4, 4, 0)
    expected[..., 3] = 0
    actual = expected.copy()
    actual[..., :3] = 255  # same invisible pixels, other stored colour
    c = compare(expected, actual, GPU)
    assert c.passed and c.metrics["max_delta"] == 0 and not c.identical
    assert not compare(expected, actual, SOFTWARE).passed  # but the software oracle is byte-exact


def test_alpha_only_difference_is_seen(solid):
    expected = solid(4, 4, 255)
    actual = expected.copy()
    actual[0, 0, 3] = 0
    assert compare(expected, actual, GPU).metrics["max_delta"] == 255


def test_max_pixels_is_a_count_allowed_and_one_more_fails(solid):
    expected = solid(32, 32, 100)
    actual = expected.copy()
    actual[4, 3:8, 0] = 120  # five pixels 20 levels off, away from the border and from any edge
    at_bound = compare(expected, actual, parse_tolerance({"max_delta": 8, "max_pixels": 5}))
    assert at_bound.passed and at_bound.metrics["pixels_over_gated"] == 5
    assert gates(compare(expected, actual, parse_tolerance({"max_delta": 8, "max_pixels": 4}))) == ["max_pixels"]
