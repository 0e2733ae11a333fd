"""Each display-list op draws what docs/display-list.md says, checked on the pixels of the software backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from parts import require

from pytest_zbench.runner.backends.software import SoftwareBackend
from pytest_zbench.runner.interpreter import (
    CHECKER_COLORS,
    CJK_FONT_PATHS,
    DisplayListError,
    Linear,
    MissingFont,
    Sine,
    Step,
    compile_scene,
)

WHITE = (255, 255, 255, 255)
BLACK = "#000000"


def render(ops: list[dict[str, Any]], *, frame: int = 0, size: tuple[int, int] = (32, 32),
           complexity: float | None = None) -> tuple[np.ndarray, Any]:
    backend = SoftwareBackend()
    surface = backend.make_surface(*size)
    program = compile_scene(ops, complexity=None if complexity is None else [complexity],
                           upload_image=backend.upload_image)
    counters = program.render(surface.getCanvas(), frame, complexity)
    return backend.read_rgba(surface), counters


def px(image: np.ndarray, x: int, y: int) -> tuple[int, ...]:
    return tuple(int(v) for v in image[y, x])


def ink(image: np.ndarray) -> np.ndarray:
    """Mask of pixels that are not white."""
    return (image[..., :3] != 255).any(axis=-1)


def rect(x: float, y: float, w: float, h: float, color: str = BLACK) -> dict[str, Any]:
    return {"op": "rect", "x": x, "y": y, "w": w, "h": h, "color": color}


def test_clear_is_opaque_white():
    image, counters = render([])
    assert (image == 255).all() and counters.draw_calls == 0


def test_rect_fills_exactly_its_pixels():
    image, counters = render([rect(4, 4, 8, 6, "#FF000080")])
    assert px(image, 4, 4) == px(image, 11, 9) == (255, 127, 127, 255)  # half-transparent red over white
    assert ink(image).sum() == 8 * 6
    assert counters.draw_calls == 1


def test_rrect_rounds_its_corners():
    image, _ = render([{"op": "rrect", "x": 0, "y": 0, "w": 32, "h": 32, "radius": 12, "color": BLACK}])
    assert px(image, 0, 0) == WHITE and px(image, 16, 16) == (0, 0, 0, 255) and px(image, 16, 0) == (0, 0, 0, 255)


def test_border_strokes_the_edge_and_leaves_the_inside():
    image, _ = render([{"op": "border", "x": 4, "y": 4, "w": 24, "h": 24, "radius": 0, "width": 2, "color": BLACK}])
    assert px(image, 4, 16) == (0, 0, 0, 255)  # centred on the edge: 3..5
    assert px(image, 16, 16) == WHITE and px(image, 1, 16) == WHITE


def test_linear_gradient_runs_from_first_to_last_stop():
    image, _ = render([{"op": "linear_gradient", "x": 0, "y": 0, "w": 32, "h": 32, "x0": 0, "y0": 0, "x1": 32, "y1": 0,
                        "stops": [[0, "#000000"], [1, "#0000FF"]]}])
    left, right = px(image, 0, 10), px(image, 31, 10)
    assert left[2] < 20 and right[2] > 235 and right[0] < 20
    assert np.all(np.diff(image[10, :, 2].astype(int)) >= 0)  # monotonic ramp


def test_radial_gradient_is_centred():
    image, _ = render([{"op": "radial_gradient", "x": 0, "y": 0, "w": 32, "h": 32, "cx": 16, "cy": 16, "r": 16,
                        "stops": [[0, "#FF0000"], [1, "#00FF00"]]}])
    assert px(image, 16, 16)[0] > 230 and px(image, 0, 0)[1] > 230
    assert px(image, 7, 16) == px(image, 24, 16)  # pixel centres 8.5 px either side of the centre


def test_shadow_is_offset_and_blurred():
    image, _ = render([{"op": "shadow", "x": 8, "y": 8, "w": 12, "h": 12, "radius": 0, "blur": 4, "dx": 4, "dy": 0,
                        "color": BLACK}])
    assert px(image, 18, 14)[0] < 40  # inside the offset box
    assert 40 < px(image, 24, 14)[0] < 250  # blurred edge just outside the offset box
    assert px(image, 2, 14) == WHITE  # the unshifted box's left edge is clear of the shadow
    sharp, _ = render([{"op": "shadow", "x": 8, "y": 8, "w": 12, "h": 12, "radius": 0, "blur": 0, "dx": 4, "dy": 0,
                        "color": BLACK}])
    assert ink(sharp).sum() == 12 * 12


def test_backdrop_blur_blurs_only_inside_its_rect():
    below = [rect(0, 0, 16, 32)]  # black left half, white right half
    sharp, _ = render(below)
    blurred, counters = render(below + [{"op": "backdrop_blur", "x": 0, "y": 0, "w": 32, "h": 16, "blur": 6}])
    assert 0 < px(blurred, 16, 8)[0] < 255 and 0 < px(blurred, 15, 8)[0] < 255  # the edge is soft inside
    assert px(blurred, 15, 24) == px(sharp, 15, 24) and px(blurred, 16, 24) == WHITE  # and sharp outside
    assert counters.draw_calls == 2


def test_text_draws_substitutes_and_wraps():
    one_line = {"op": "text", "x": 1, "y": 12, "size": 10, "color": BLACK, "text": "frame {frame} item {i}"}
    a, _ = render([one_line], frame=3, size=(200, 40))
    b, _ = render([one_line], frame=4, size=(200, 40))
    assert ink(a).any() and (a != b).any()
    assert not ink(a)[16:].any()  # one line only
    wrapped, _ = render([{**one_line, "max_width": 40}], frame=3, size=(200, 40))
    assert ink(wrapped)[16:].any()  # the same text wrapped onto a second line
    assert ink(wrapped)[:, 45:].sum() == 0


def test_text_index_comes_from_the_innermost_repeat():
    label = {"op": "text", "x": 1, "y": 10, "size": 9, "color": BLACK, "text": "{i}"}
    repeated, _ = render([{"op": "repeat", "count": 2, "dx": 0, "dy": 12, "ops": [label]}], size=(20, 26))
    zero, _ = render([{**label, "text": "0"}], size=(20, 26))
    one, _ = render([{**label, "text": "1", "y": 22}], size=(20, 26))
    assert (repeated == np.minimum(zero, one)).all()


def test_image_checker_nearest_keeps_texels():
    image, counters = render([{"op": "image", "x": 0, "y": 0, "w": 32, "h": 32, "tex_w": 16, "tex_h": 16,
                               "pattern": "checker", "seed": 0, "upload": "once", "filter": "nearest"}])
    colors = {px(image, x, y) for x in range(32) for y in range(32)}
    assert colors == {CHECKER_COLORS[0], CHECKER_COLORS[1]}
    assert px(image, 0, 0) == CHECKER_COLORS[0] and px(image, 16, 0) == CHECKER_COLORS[1]  # 8-texel cells x2
    assert counters.upload_bytes == 16 * 16 * 4


def test_image_noise_depends_on_seed_only():
    def noise(seed: int, upload: str) -> np.ndarray:
        return render([{"op": "image", "x": 0, "y": 0, "w": 8, "h": 8, "tex_w": 8, "tex_h": 8, "pattern": "noise",
                        "seed": seed, "upload": upload, "filter": "nearest"}], size=(8, 8))[0]

    assert (noise(1, "once") == noise(1, "every_frame")).all()
    assert (noise(1, "once") != noise(2, "once")).any()


def test_path_fills_or_strokes():
    triangle = {"op": "path", "points": [[0, 0], [32, 0], [0, 32]], "closed": True, "color": BLACK}
    filled, _ = render([triangle])
    assert px(filled, 4, 4)[0] == 0 and px(filled, 28, 28) == WHITE
    stroked, _ = render([{**triangle, "stroke_width": 2}])
    assert px(stroked, 8, 8) == WHITE and px(stroked, 16, 0)[0] < 128


def test_clips_restrict_and_nest():
    inner = {"op": "clip", "shape": {"kind": "rect", "x": 8, "y": 0, "w": 32, "h": 32}, "ops": [rect(0, 0, 32, 32)]}
    image, counters = render([{"op": "clip", "shape": {"kind": "rect", "x": 0, "y": 0, "w": 16, "h": 32},
                               "ops": [inner]}])
    assert ink(image)[:, 8:16].all() and not ink(image)[:, :8].any() and not ink(image)[:, 16:].any()
    assert counters.draw_calls == 1
    rounded, _ = render([{"op": "clip", "shape": {"kind": "rrect", "x": 0, "y": 0, "w": 32, "h": 32, "radius": 12},
                          "ops": [rect(0, 0, 32, 32)]}])
    assert px(rounded, 0, 0) == WHITE and px(rounded, 16, 16)[0] == 0
    triangle, _ = render([{"op": "clip", "shape": {"kind": "path", "points": [[0, 0], [32, 0], [0, 32]]},
                           "ops": [rect(0, 0, 32, 32)]}])
    assert px(triangle, 4, 4)[0] == 0 and px(triangle, 28, 28) == WHITE


def test_layer_composites_with_opacity_once():
    # Two overlapping rects in one layer: the overlap is not darker, unlike two translucent draws.
    image, _ = render([{"op": "layer", "opacity": 0.5, "ops": [rect(0, 0, 20, 20), rect(10, 10, 20, 20)]}])
    assert px(image, 5, 5) == px(image, 15, 15) == (127, 127, 127, 255)


def test_group_translates():
    image, _ = render([{"op": "group", "dx": 10, "dy": 5, "ops": [rect(0, 0, 4, 4)]}])
    assert px(image, 10, 5)[0] == 0 and px(image, 0, 0) == WHITE and ink(image).sum() == 16


def test_repeat_with_columns_lays_out_a_grid():
    image, counters = render([{"op": "repeat", "count": 5, "dx": 10, "dy": 10, "columns": 2,
                               "ops": [rect(0, 0, 2, 2)]}])
    origins = {(x, y) for x in range(0, 32, 10) for y in range(0, 32, 10) if ink(image)[y, x]}
    assert origins == {(0, 0), (10, 0), (0, 10), (10, 10), (0, 20)}
    assert counters.draw_calls == 5


def test_repeat_counts_complexity():
    ops = [{"op": "repeat", "count": "complexity", "dx": 3, "dy": 0, "ops": [rect(0, 0, 1, 1)]}]
    assert render(ops, complexity=4.0)[1].draw_calls == 4
    assert render(ops, complexity=7.2)[1].draw_calls == 7


MESH = {"op": "mesh", "x": 0, "y": 0, "w": 32, "h": 32, "columns": 4, "rows": 3, "color": BLACK,
        "alt_color": "#3366CC"}
BATCH = {"op": "rect_batch", "count": 5, "columns": 4, "dx": 8, "dy": 8, "x": 1, "y": 1, "w": 5, "h": 5,
         "color": BLACK}
SHADER = {"op": "shader", "x": 2, "y": 2, "w": 28, "h": 28, "loops": 3, "fetches": 1}


@pytest.mark.parametrize("op, key", [(MESH, "rows"), (BATCH, "count"), (SHADER, "loops")])
def test_a_count_taken_from_the_complexity_draws_what_that_fixed_count_draws(op, key):
    """Frame by frame, an op whose count is "complexity" draws exactly the fixed-load op of that count, the same
    in every frame at a given complexity, one draw call each."""
    backend = SoftwareBackend()
    plan = [2, 5, 5, 3, 5, 0]
    program = compile_scene([{**op, key: "complexity"}], complexity=plan, upload_image=backend.upload_image)
    surface = backend.make_surface(32, 32)
    drawn = {}
    for frame, complexity in enumerate(plan):
        counters = program.render(surface.getCanvas(), frame, complexity + 0.4)  # rounds to the plan's count
        assert counters.draw_calls == 1
        image = backend.read_rgba(surface)
        if complexity in drawn:
            assert np.array_equal(image, drawn[complexity])  # frame N renders the same for a given complexity
        drawn[complexity] = image
        if complexity or key == "loops":  # a shader of 0 loops is a shader; 0 rows or rects draw nothing
            fixed, _ = render([{**op, key: complexity}])
            assert np.array_equal(image, fixed), (key, complexity)
        else:
            assert (image == 255).all()
    assert not np.array_equal(drawn[2], drawn[5]) and not np.array_equal(drawn[3], drawn[5])


def test_a_shader_counting_complexity_compiles_one_effect_per_count_before_frame_0(monkeypatch):
    import pytest_zbench.runner.interpreter as interpreter

    compiled: list[int] = []
    source = interpreter.shader_source
    monkeypatch.setattr(interpreter, "shader_source", lambda loops, *rest: compiled.append(loops) or source(loops, *rest))
    plan = [8, 8, 16, 16, 32, 8.4]
    program = compile_scene([{**SHADER, "loops": "complexity"}], complexity=plan)
    assert sorted(compiled) == [8, 16, 32]  # each count once, at compile time
    canvas = SoftwareBackend().make_surface(32, 32).getCanvas()
    for frame, complexity in enumerate(plan):
        program.render(canvas, frame, complexity)
    assert sorted(compiled) == [8, 16, 32]  # no measured frame compiled anything


def test_a_mesh_counting_complexity_builds_its_vertices_before_frame_0(monkeypatch):
    import pytest_zbench.runner.interpreter as interpreter

    built: list[int] = []
    vertices = interpreter._mesh_vertices
    monkeypatch.setattr(interpreter, "_mesh_vertices",
                        lambda x, y, w, h, columns, rows, colors: built.append(rows) or vertices(x, y, w, h, columns,
                                                                                                 rows, colors))
    program = compile_scene([{**MESH, "rows": "complexity"}], complexity=[4, 4, 9, 0])
    assert sorted(built) == [4, 9]  # count 0 draws nothing
    canvas = SoftwareBackend().make_surface(32, 32).getCanvas()
    for frame, complexity in enumerate([4, 9, 0, 4]):
        program.render(canvas, frame, complexity)
    assert sorted(built) == [4, 9]


@pytest.mark.parametrize("op, key, plan, message", [
    (MESH, "rows", [1, 20_000], "ops[0] key 'rows': the job's complexity reaches 20000, more than this 'mesh' op "
                                "draws (16384)"),
    (BATCH, "count", [70_000], "ops[0] key 'count': the job's complexity reaches 70000"),
    (SHADER, "loops", [2000], "ops[0] key 'loops': the job's complexity reaches 2000, more than this 'shader' op "
                              "draws (1024)"),
    (SHADER, "loops", None, "ops[0] key 'loops': 'complexity' but the job carries no complexity list"),
    (MESH, "columns", [4], "ops[0] key 'columns': 'complexity' is taken only by repeat count, rect_batch count, "
                           "mesh rows, shader loops"),
])
def test_a_job_whose_complexity_the_op_cannot_draw_is_refused_before_frame_0(op, key, plan, message):
    with pytest.raises(DisplayListError) as error:
        compile_scene([{**op, key: "complexity"}], complexity=plan)
    assert message in str(error.value)


def test_the_counting_walk_follows_the_complexity_of_a_batch():
    program = compile_scene([{**BATCH, "count": "complexity"}], complexity=[1, 4])
    assert program.dynamic
    assert program.count(0, 1, 32, 32)["pixels_drawn"] == 25
    assert program.count(1, 4, 32, 32)["pixels_drawn"] == 100


def test_animated_numbers_follow_the_frame_index():
    assert [Linear(0, 10, 5)(f) for f in (0, 1, 5, 7)] == [0, 2, 0, 4]
    assert Sine(10, 2, 4)(1) == pytest.approx(12) and Sine(10, 2, 4)(3) == pytest.approx(8)
    assert [Step((1, 2, 3), 2)(f) for f in range(7)] == [1, 1, 2, 2, 3, 3, 1]
    moving = [{"op": "rect", "x": {"anim": "linear", "from": 0, "to": 20, "period": 4}, "y": 0, "w": 2, "h": 2,
               "color": BLACK}]
    assert px(render(moving, frame=0)[0], 0, 0)[0] == 0
    assert px(render(moving, frame=1)[0], 5, 0)[0] == 0 and px(render(moving, frame=1)[0], 0, 0) == WHITE


@pytest.mark.parametrize("ops, message", [
    ("nope", "ops: must be a list"),
    ([{"x": 1}], "ops[0]: an op must be an object"),
    ([{"op": "rect", "x": 0, "y": 0, "w": 1, "h": 1}], "ops[0] key 'color': missing"),
    ([{"op": "rect", "x": 0, "y": 0, "w": 1, "h": 1, "color": BLACK, "colour": BLACK}], "ops[0] key 'colour': unknown"),
    ([{"op": "layer", "opacity": 1, "ops": [{"op": "rect", "x": "1", "y": 0, "w": 1, "h": 1, "color": BLACK}]}],
     "ops[0].ops[0] key 'x': '1' is not a number"),
    ([{"op": "rect", "x": {"anim": "linear", "from": 0, "to": 1, "period": 0}, "y": 0, "w": 1, "h": 1,
       "color": BLACK}], "ops[0] key 'x': animation period 0 must be positive"),
    ([{"op": "repeat", "count": "complexity", "dx": 0, "dy": 0, "ops": []}], "no complexity list"),
    ([{"op": "clip", "shape": {"kind": "circle"}, "ops": []}], "ops[0] key 'shape' 'kind'"),
    ([{"op": "image", "x": 0, "y": 0, "w": 1, "h": 1, "tex_w": 0, "tex_h": 1, "pattern": "noise", "seed": 0,
       "upload": "once", "filter": "nearest"}], "ops[0] key 'tex_w'"),
])
def test_invalid_display_lists_name_the_op_and_key(ops, message):
    with pytest.raises(DisplayListError) as error:
        compile_scene(ops)
    assert message in str(error.value)


def test_the_interpreter_draws_every_op_of_the_protocol_table():
    from pytest_zbench.protocol.display_list import FEATURES, OPS
    from pytest_zbench.runner.interpreter import _Compiler

    assert FEATURES == frozenset(OPS)
    assert [name for name in OPS if not hasattr(_Compiler, f"_op_{name}")] == []


# --- the ops of the geometry, shader, draw-call, blending, texture and large-image families


def test_mesh_is_one_draw_of_two_triangles_per_cell_in_alternating_colours():
    mesh = {"op": "mesh", "x": 0, "y": 0, "w": 32, "h": 32, "columns": 2, "rows": 2, "color": "#FF0000",
            "alt_color": "#0000FF"}
    image, counters = render([mesh])
    assert counters.draw_calls == 1
    # Each cell's first triangle is its top-left half (corners x0y0, x1y0, x0y1), the second its bottom-right.
    assert px(image, 2, 2) == px(image, 18, 2) == (255, 0, 0, 255)
    assert px(image, 13, 13) == px(image, 29, 29) == (0, 0, 255, 255)
    assert not (ink(image) == 0).any()  # the grid covers the rect
    finer, _ = render([{**mesh, "columns": 8, "rows": 8}])
    assert (finer != image).any()  # the triangle count shows in the pixels


def test_rect_batch_draws_what_a_repeat_of_rects_draws_on_whole_pixels_in_one_draw():
    layout = {"count": 10, "columns": 4, "dx": 8, "dy": 6}
    batch, batch_counts = render([{"op": "rect_batch", **layout, "x": 1, "y": 1, "w": 5, "h": 4, "color": "#E9C46A"}])
    separate, separate_counts = render([{"op": "repeat", **layout, "ops": [rect(1, 1, 5, 4, "#E9C46A")]}])
    assert (batch == separate).all() and ink(batch).sum() == 10 * 5 * 4
    assert batch_counts.draw_calls == 1 and separate_counts.draw_calls == 10


def test_rect_blend_modes_change_the_composite():
    under = rect(0, 0, 32, 32, "#808080")
    over = rect(0, 0, 32, 32, "#FF8000")
    assert px(render([under, {**over, "blend": "multiply"}])[0], 4, 4) == (128, 64, 0, 255)
    assert px(render([under, {**over, "blend": "src_over"}])[0], 4, 4) == (255, 128, 0, 255)
    assert px(render([under, {**over, "blend": "plus"}])[0], 4, 4) == (255, 255, 128, 255)


def test_shader_loops_fetches_and_dependent_reads_each_change_the_pixels():
    def shaded(loops, fetches, **reads):
        return render([{"op": "shader", "x": 0, "y": 0, "w": 32, "h": 32, "loops": loops, "fetches": fetches,
                        **reads}])

    base, counters = shaded(2, 1)
    assert counters.draw_calls == 1 and (base[..., 3] == 255).all()
    assert len(np.unique(base.reshape(-1, 4), axis=0)) > 50
    assert (shaded(16, 1)[0] != base).any() and (shaded(2, 4)[0] != base).any()
    # Independent reads are the default; dependent ones read other texels (their offsets follow the texture).
    assert (shaded(2, 4, reads="independent")[0] == shaded(2, 4)[0]).all()
    assert (shaded(2, 4, reads="dependent")[0] != shaded(2, 4)[0]).any()
    assert (shaded(2, 1, reads="dependent")[0] == base).all()  # one read depends on none
    grey, _ = shaded(0, 0)
    # No fetch, no loop: mid grey times 0.4 + 0.6 * 0.5 (v stays 0.5), 0.35 of 255.
    assert (np.abs(grey[..., :3].astype(int) - 89) <= 1).all()


def test_premultiplied_and_unpremultiplied_textures_draw_the_same_picture():
    def drawn(alpha):
        return render([rect(0, 0, 32, 16, "#264653"),
                       {"op": "image", "x": 0, "y": 0, "w": 32, "h": 32, "tex_w": 32, "tex_h": 32, "pattern": "noise",
                        "seed": 5, "upload": "every_frame", "filter": "nearest", "alpha": alpha}])[0]

    premul, unpremul, opaque = drawn("premul"), drawn("unpremul"), drawn("opaque")
    assert np.abs(premul.astype(int) - unpremul.astype(int)).max() <= 2
    assert (premul != opaque).any()  # translucent: the rect shows through


def test_decoded_images_draw_the_pixels_and_count_their_upload_every_frame():
    image = {"op": "image", "x": 0, "y": 0, "w": 16, "h": 16, "tex_w": 16, "tex_h": 16, "pattern": "noise", "seed": 3,
             "filter": "nearest"}
    decoded, counts = render([{**image, "upload": "decode"}])
    assert (decoded == render([{**image, "upload": "once"}])[0]).all()  # PNG is lossless
    assert counts.upload_bytes == 16 * 16 * 4
    backend = SoftwareBackend()
    surface = backend.make_surface(16, 16)
    program = compile_scene([{**image, "upload": "decode"}])
    assert [program.render(surface.getCanvas(), f).upload_bytes for f in range(3)] == [16 * 16 * 4] * 3


def test_mipmap_filtering_differs_from_linear_when_downscaled():
    image = {"op": "image", "x": 0, "y": 0, "w": 8, "h": 8, "tex_w": 64, "tex_h": 64, "pattern": "noise", "seed": 3,
             "upload": "every_frame"}
    linear, _ = render([{**image, "filter": "linear"}], size=(8, 8))
    mipmap, _ = render([{**image, "filter": "mipmap"}], size=(8, 8))
    assert (linear != mipmap).any()
    # Mip levels average the texels: the downscaled noise is far smoother than a linear sample of it.
    assert mipmap[..., :3].std() < 0.7 * linear[..., :3].std()


def test_video_uploads_its_three_planes_every_frame_and_frames_differ():
    video = {"op": "video", "x": 0, "y": 0, "w": 32, "h": 16, "tex_w": 64, "tex_h": 32, "seed": 3}
    backend = SoftwareBackend()
    surface = backend.make_surface(32, 16)
    program = compile_scene([video])
    frames = []
    for f in range(2):
        counters = program.render(surface.getCanvas(), f)
        assert counters.upload_bytes == 64 * 32 + 2 * 32 * 16 and counters.draw_calls == 1
        frames.append(backend.read_rgba(surface))
    assert (frames[0] != frames[1]).any() and (frames[0][..., 3] == 255).all()
    assert len(np.unique(frames[0][..., :3].reshape(-1, 3), axis=0)) > 100  # colour, not one grey


def test_cjk_text_draws_ideographs_and_without_a_cjk_font_fails_naming_the_font(monkeypatch, tmp_path):
    text = {"op": "text", "x": 2, "y": 20, "size": 14, "color": BLACK, "text": "中文字", "font": "cjk"}
    monkeypatch.setenv("ZBENCH_CJK_FONT", str(tmp_path / "missing.ttc"))
    with pytest.raises(MissingFont) as error:
        compile_scene([text])
    assert "missing.ttc" in str(error.value) and "fonts-wqy-zenhei" in str(error.value)
    monkeypatch.delenv("ZBENCH_CJK_FONT")
    require(any(Path(p).is_file() for p in CJK_FONT_PATHS), "a CJK font (ci/setup.sh installs fonts-wqy-zenhei)")
    image, _ = render([text], size=(64, 32))
    sans, _ = render([{**text, "font": "sans"}], size=(64, 32))
    assert ink(image).sum() > 60 and (image != sans).any()  # glyphs, not the sans font's missing-glyph boxes


@pytest.mark.parametrize("ops, message", [
    ([{"op": "mesh", "x": 0, "y": 0, "w": 1, "h": 1, "columns": 300, "rows": 300, "color": BLACK,
       "alt_color": BLACK}], "more than 65536"),
    ([{"op": "rect_batch", "count": 4, "columns": "complexity", "dx": 0, "dy": 0, "x": 0, "y": 0, "w": 1, "h": 1,
       "color": BLACK}], "key 'columns': 'complexity' is taken only by repeat count, rect_batch count, mesh rows, "
                         "shader loops"),
    ([{"op": "shader", "x": 0, "y": 0, "w": 1, "h": 1, "loops": 5000, "fetches": 1}], "key 'loops'"),
    ([{"op": "rect", "x": 0, "y": 0, "w": 1, "h": 1, "color": BLACK, "blend": "xor"}], "key 'blend'"),
])
def test_new_ops_refuse_values_past_their_caps(ops, message):
    with pytest.raises(DisplayListError) as error:
        compile_scene(ops)
    assert message in str(error.value)
