from __future__ import annotations

import types

import numpy as np
import pytest

from pytest_zbench.golden.match import compare
from pytest_zbench.golden.tolerance import (
    GATES,
    PixelBudget,
    ToleranceError,
    parse_tolerance,
    resolve_tolerance,
    validate_tolerances,
)


def test_software_default_is_exact():
    tol = resolve_tolerance(None, "software")
    assert tol.exact and tol.gate == ("exact",)


def test_gpu_default_is_small_delta_and_count_budget():
    tol = resolve_tolerance({}, "gles2")
    assert (tol.max_delta, tol.max_pixels, tol.gate) == (2, PixelBudget(count=16), ("max_pixels",))
    assert resolve_tolerance({}, "metal") == tol  # every GPU backend shares the default


def test_cross_backend_default_masks_edges_with_their_own_budget():
    tol = resolve_tolerance(None, "gles2", golden_backend="software")
    assert tol.max_delta == 8 and tol.edge_mask is not None and tol.edge_mask.on == "both"
    assert tol.gate == ("max_pixels", "edge_mask")


def test_scene_overrides_merge_over_defaults_and_gate_follows_what_is_set():
    raw = types.MappingProxyType({"gles2": types.MappingProxyType({"max_delta": 4, "flip_mean": 0.02})})
    tol = resolve_tolerance(raw, "gles2")
    assert tol.max_delta == 4 and tol.max_pixels == PixelBudget(count=16)
    assert tol.gate == ("max_pixels", "flip_mean")


def test_explicit_gate_picks_the_gating_metrics():
    tol = resolve_tolerance({"gles2": {"ssim_min": 0.99, "gate": ["ssim_min"]}}, "gles2")
    assert tol.gate == ("ssim_min",) and tol.max_pixels is not None  # still computed, not gating


def test_cross_backend_block_is_used_only_against_the_software_golden():
    raw = {"gles2": {"max_delta": 1, "cross_backend": {"max_delta": 20, "edge_mask": {"threshold": 40}}}}
    same, cross = resolve_tolerance(raw, "gles2"), resolve_tolerance(raw, "gles2", golden_backend="software")
    assert same.max_delta == 1 and same.edge_mask is None
    assert cross.max_delta == 20 and cross.edge_mask.threshold == 40 and cross.edge_mask.max_pixels is not None


def test_cross_arch_block_is_used_only_against_the_reference_architecture():
    raw = {"software": {"cross_arch": {"max_delta": 3, "edge_mask": {"max_pixels": 500}}}}
    same = resolve_tolerance(raw, "software")
    assert same.exact and same.gate == ("exact",)  # the own set stays exact
    default = resolve_tolerance(None, "software", cross_arch=True)
    assert not default.exact and default.max_delta == 2 and default.gate == ("max_pixels", "edge_mask")
    declared = resolve_tolerance(raw, "software", cross_arch=True)
    assert declared.max_delta == 3 and declared.edge_mask.max_pixels.count == 500
    assert declared.edge_mask.threshold == default.edge_mask.threshold  # merged over the defaults
    with pytest.raises(ToleranceError, match="no cross-architecture comparison"):
        resolve_tolerance(None, "gles2", cross_arch=True)


@pytest.mark.parametrize("text,expected,of_10_000", [("0.1%", 0.001, 10), ("2 %", 0.02, 200), ("100%", 1.0, 10_000)])
def test_percent_budget(text, expected, of_10_000):
    assert parse_tolerance({"max_pixels": text}).max_pixels.fraction == pytest.approx(expected)
    assert parse_tolerance({"max_pixels": text}).max_pixels.resolve(10_000) == of_10_000


@pytest.mark.parametrize("text,delta,pixels", [
    ("maxDifference=0-2;totalPixels=0-300", (0, 2), (0, 300)),
    ("3;40", (0, 3), (0, 40)),
    ("1-4;10-20", (1, 4), (10, 20)),
])
def test_wpt_fuzzy_syntax(text, delta, pixels):
    fuzzy = parse_tolerance({"fuzzy": text}).fuzzy
    assert (fuzzy.max_difference, fuzzy.total_pixels) == (delta, pixels)


def test_buckets_parse():
    tol = parse_tolerance({"buckets": [[2, 100], [8, "0.5%"]]})
    assert tol.buckets == ((2, PixelBudget(count=100)), (8, PixelBudget(fraction=0.005))) and tol.gate == ("buckets",)


@pytest.mark.parametrize("raw,key,words", [
    ({"gles2": {"max_delat": 3}}, "gles2.max_delat", "allowed keys are"),
    ({"gles2": {"max_delta": 300}}, "gles2.max_delta", "0..255"),
    ({"gles2": {"max_delta": True}}, "gles2.max_delta", "0..255"),
    ({"gles2": {"max_pixels": "lots"}}, "gles2.max_pixels", "percentage"),
    ({"gles2": {"max_pixels": "150%"}}, "gles2.max_pixels", "0..100%"),
    ({"gles2": {"gate": ["psnr"]}}, "gles2.gate", str(list(GATES))),
    ({"gles2": {"gate": ["flip_max"]}}, "gles2.gate", "set 'flip_max' too"),
    ({"gles2": {"flip_mean": 2}}, "gles2.flip_mean", "0..1"),
    ({"gles2": {"edge_mask": {"on": "actual"}}}, "gles2.edge_mask.on", "['both', 'expected']"),
    ({"gles2": {"edge_mask": {"treshold": 3}}}, "gles2.edge_mask.treshold", "allowed keys"),
    ({"gles2": {"buckets": [[8, 10], [4, 10]]}}, "gles2.buckets[1]", "larger than the previous"),
    ({"gles2": {"fuzzy": "maxDiff 3"}}, "gles2.fuzzy", "WPT"),
    ({"gles2": {"fuzzy": {"max_difference": [5, 2], "total_pixels": 3}}}, "gles2.fuzzy.max_difference", "low <= high"),
    ({"gles2": {"cross_backend": {"border": -1}}}, "gles2.cross_backend.border", ">= 0"),
    ({"software": {"cross_backend": {}}}, "software.cross_backend", "no cross-backend"),
    ({"software": {"exact": False}}, "software.gate", "nothing gates"),
    ({"gles2": {"cross_arch": {}}}, "gles2.cross_arch", "only the software backend"),
    ({"software": {"cross_arch": {"max_delta": 300}}}, "software.cross_arch.max_delta", "0..255"),
    ({"software": {"cross_arch": [2]}}, "software.cross_arch", "must be a mapping"),
    ({"../x": {}}, "../x", "backend name"),
    ({"gles2": [1]}, "gles2", "must be a mapping"),
])
def test_errors_name_the_key_and_the_allowed_values(raw, key, words):
    with pytest.raises(ToleranceError) as info:
        validate_tolerances(raw)
    assert info.value.key == key
    assert words in str(info.value) and repr(key) in str(info.value)
    assert isinstance(info.value, ValueError)


def test_to_dict_round_trips():
    raw = {"max_delta": 3, "max_pixels": "0.2%", "fuzzy": "1-4;0-30", "buckets": [[2, 10]], "border": 2,
           "edge_mask": {"threshold": 50, "max_pixels": 5}, "flip_mean": 0.1, "flip_max": 0.5, "ssim_min": 0.9}
    tol = parse_tolerance(raw)
    assert parse_tolerance(tol.to_dict()) == tol


def test_a_percent_budget_rounds_down_to_whole_pixels():
    # 0.1 % of 50 x 30 = 1,500 pixels is 1.5 pixels: a budget of 1 (and 1.999 of 1,999 pixels is 1 too).
    assert PixelBudget(fraction=0.001).resolve(1500) == 1 and PixelBudget(fraction=0.001).resolve(1999) == 1
    tol = parse_tolerance({"max_delta": 0, "max_pixels": "0.1%", "border": 0})
    expected = np.full((30, 50, 4), 128, np.uint8)
    expected[..., 3] = 255
    one, two = expected.copy(), expected.copy()
    one[5, 5, 0] = two[5, 5, 0] = two[20, 40, 1] = 200
    assert compare(expected, one, tol, perceptual=False).passed
    over = compare(expected, two, tol, perceptual=False)
    assert not over.passed and over.metrics["bounds"]["max_pixels"] == 1
