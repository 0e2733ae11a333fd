"""Vacuous captures on plain values (pytest_zbench/golden/vacuous.py)."""

from __future__ import annotations

import numpy as np

from pytest_zbench.golden.vacuous import identical_siblings, ops_differ_visibly, single_colour

RECT = {"op": "rect", "x": 1, "y": 1, "w": 10, "h": 10, "color": "#3366CCFF"}


def test_a_single_colour_image_is_named_by_its_colour() -> None:
    image = np.zeros((4, 5, 4), dtype=np.uint8)
    image[...] = (0x33, 0x66, 0xCC, 0xFF)
    assert single_colour(image) == "#3366CCFF"
    assert single_colour(image[..., :3]) == "#3366CCFF"  # opaque RGB
    image[3, 4, 3] = 0xFE  # one pixel's alpha is enough to have drawn something
    assert single_colour(image) is None


def test_an_overdraw_stack_of_one_op_may_look_like_one_layer_but_other_differences_must_show() -> None:
    assert not ops_differ_visibly([RECT], [RECT, RECT, RECT])
    assert not ops_differ_visibly([{"op": "group", "ops": [RECT]}], [{"op": "group", "ops": [RECT, RECT]}])
    assert ops_differ_visibly([RECT], [dict(RECT, x=2)])
    assert ops_differ_visibly([RECT], [RECT, dict(RECT, color="#3366CC40")])
    assert ops_differ_visibly([{"op": "repeat", "count": 10, "ops": [RECT]}],
                              [{"op": "repeat", "count": 20, "ops": [RECT]}])


def test_identical_siblings_are_those_with_the_same_digest() -> None:
    assert identical_siblings("a", {"s.x2": "b", "s.x8": "a", "s.x4": "a"}) == ["s.x4", "s.x8"]
    assert identical_siblings("a", {}) == []


def test_upload_policies_and_animations_at_frame_0_are_not_visible_differences() -> None:
    image = {"op": "image", "x": 0, "y": 0, "w": 8, "h": 8, "tex_w": 8, "tex_h": 8, "pattern": "checker"}
    assert not ops_differ_visibly([dict(image, upload="once")], [dict(image, upload="every_frame")])
    assert ops_differ_visibly([dict(image, upload="once")], [dict(image, upload="once", w=9)])
    slow = [dict(RECT, y={"anim": "linear", "from": 0, "to": 100, "period": 120})]
    fast = [dict(RECT, y={"anim": "linear", "from": 0, "to": 100, "period": 30})]
    assert not ops_differ_visibly(slow, fast, frame=0)
    assert ops_differ_visibly(slow, fast, frame=30)
