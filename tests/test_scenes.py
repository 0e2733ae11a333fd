"""Scene files: the real corpus, unit resolution, sweeps, and one test per kind of mistake in a file."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pytest_zbench.errors import SceneError
from pytest_zbench.scenes import load_corpus, load_scene_file

SCENES = Path(__file__).resolve().parent.parent / "scenes"

# Written out from docs/display-list.md rather than imported, so that the loader is checked against the
# contract instead of against itself.
REQUIRED_KEYS = {
    "rect": {"x", "y", "w", "h", "color"},
    "rrect": {"x", "y", "w", "h", "radius", "color"},
    "border": {"x", "y", "w", "h", "radius", "width", "color"},
    "linear_gradient": {"x", "y", "w", "h", "x0", "y0", "x1", "y1", "stops"},
    "radial_gradient": {"x", "y", "w", "h", "cx", "cy", "r", "stops"},
    "shadow": {"x", "y", "w", "h", "radius", "blur", "dx", "dy", "color"},
    "backdrop_blur": {"x", "y", "w", "h", "blur"},
    "text": {"x", "y", "size", "color", "text"},
    "image": {"x", "y", "w", "h", "tex_w", "tex_h", "pattern", "seed", "upload", "filter"},
    "etc2_image": {"x", "y", "w", "h", "tex_w", "tex_h", "pattern", "seed", "upload", "filter"},
    "tap_target": {"x", "y", "w", "h", "color", "active_color", "tap_every"},
    "path": {"points", "closed", "color"},
    "clip": {"shape", "ops"},
    "layer": {"opacity", "ops"},
    "group": {"dx", "dy", "ops"},
    "repeat": {"count", "dx", "dy", "ops"},
    "mesh": {"x", "y", "w", "h", "columns", "rows", "color", "alt_color"},
    "rect_batch": {"count", "columns", "dx", "dy", "x", "y", "w", "h", "color"},
    "shader": {"x", "y", "w", "h", "loops", "fetches"},
    "video": {"x", "y", "w", "h", "tex_w", "tex_h", "seed"},
}


def write(tmp_path: Path, text: str, name: str = "demo.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def walk(ops):
    for op in ops:
        yield op
        yield from walk(op.get("ops", []))


@pytest.fixture(scope="module")
def corpus():
    cases, errors = load_corpus(SCENES)
    assert not errors, "\n".join(map(str, errors))
    return {case.id: case for case in cases}


# --- the real corpus -----------------------------------------------------------------------------------------


def test_corpus_has_every_family_and_the_expected_ids(corpus):
    families = {case.family for case in corpus.values()}
    assert families == {"fill", "gradients", "rrect", "border", "shadow", "text", "clip", "layer", "drawcalls",
                        "texture", "image", "scroll", "idle", "backdrop", "dirtyrect", "textscroll", "geometry",
                        "shader", "textcjk", "blending", "largeimage", "input"}
    for layers in (1, 2, 4, 8):
        assert f"fill.opaque.x{layers}" in corpus and f"fill.alpha.x{layers}" in corpus
    assert {"shadow.blur2", "shadow.blur8", "shadow.blur32", "text.changing", "clip.nested", "layer.group",
            "texture.every_frame.s1024", "texture.once.s1024", "scroll.list.steady", "idle.pulse",
            "drawcalls.rects.n10000", "scroll.list.fling", "texture.etc2.every_frame.s1024", "input.tap"} <= set(corpus)
    assert 60 <= sum(not case.adaptive for case in corpus.values()) <= 80  # and the adaptive variants
    assert corpus["fill.alpha.x4"].params == {"layers": 4}
    assert corpus["fill.alpha.x4"].sweep == "fill.alpha.x{layers}"  # what the isolation check groups by


def test_the_new_families_sweep_three_points_and_pair_each_feature_with_a_scene_of_its_file(corpus):
    sweeps = {"geometry.tris.n{tris}": "tris", "textcjk.lines{lines}": "lines", "largeimage.down.s{size}": "size",
              "texture.video.p{p}": "p"}
    for template, dimension in sweeps.items():
        values = sorted(c.params[dimension] for c in corpus.values() if c.sweep == template)
        assert len(values) == 3 and values == sorted(set(values)), template
    # The shader's two sweeps share their first case: loops at one fetch, fetches at two loops; and the
    # dependent reads beside their independent twin.
    assert {c.id for c in corpus.values() if c.family == "shader"} == {
        "shader.l2.f1", "shader.l8.f1", "shader.l32.f1", "shader.l2.f4", "shader.l2.f16", "shader.l2.f16.dependent",
        "shader.loops.adaptive"}
    pairs = {c.id: (c.differential.minus, c.differential.feature) for c in corpus.values() if c.differential}
    assert pairs["layer.group"][0] == "layer.direct" and pairs["blending.unpremul"][0] == "blending.premul"
    assert pairs["drawcalls.batch.separate"][0] == "drawcalls.batch.one"
    assert pairs["shader.l2.f16.dependent"][0] == "shader.l2.f16"
    assert pairs["texture.every_frame.mip.s1024"][0] == "texture.every_frame.lin.s1024"
    assert pairs["geometry.tris.n8192"][0] == "geometry.tris.n2" and "geometry.tris.n2" not in pairs
    for scene, (minus, _) in pairs.items():
        assert corpus[minus].source == corpus[scene].source, scene
    assert {op["font"] for op in walk(corpus["textcjk.lines4"].job_scene(800, 480)["ops"]) if "font" in op} == {"cjk"}
    assert corpus["drawcalls.batch.one"].features == {"rect_batch"} and corpus["geometry.tris.n2"].features == {"mesh"}


@pytest.mark.parametrize("differential, key, message", [
    ("{minus: demo.none, feature: x}", "differential.minus", "no scene of this file"),
    ("{minus: demo.a}", "differential.feature", "needs 'feature'"),
    ("{minus: demo.a, feature: x, extra: 1}", "differential.extra", "unknown key 'extra'"),
    ("{minus: 'Demo A', feature: x}", "differential.minus", "the id of the scene without the feature"),
])
def test_a_bad_differential_names_the_file_the_scene_and_the_key(tmp_path, differential, key, message):
    path = tmp_path / "demo.yaml"
    path.write_text("family: demo\nscenes:\n  - {id: demo.a, ops: [" + RECT + "]}\n"
                    "  - {id: demo.b, differential: " + differential + ", ops: [" + RECT + "]}\n")
    with pytest.raises(SceneError) as error:
        load_scene_file(path)
    assert error.value.scene == "demo.b" and error.value.key == key and message in str(error.value)


def test_adaptive_variants_sit_beside_the_fixed_ones_with_a_unit_a_capture_and_a_max(corpus):
    adaptive = {case_id: case for case_id, case in corpus.items() if case.adaptive}
    assert set(adaptive) == {"fill.alpha.adaptive", "drawcalls.rects.adaptive", "text.labels.adaptive",
                             "shadow.blur8.adaptive", "rrect.grid.adaptive", "gradients.linear.adaptive",
                             "image.draws.adaptive", "geometry.tris.adaptive", "shader.loops.adaptive",
                             "drawcalls.batch.adaptive"}
    assert all("adaptive" in case_id for case_id in adaptive)  # `-k adaptive` selects exactly them
    assert not any(case.adaptive for case_id, case in corpus.items() if "adaptive" not in case_id)
    for case in adaptive.values():
        assert case.complexity is not None and case.complexity.unit
        assert 0 < case.complexity.capture <= case.complexity.max
        assert case.mode is None and case.capture == (0,)
    assert corpus["fill.alpha.x4"].complexity is None


def test_fill_family_uses_only_rect_ops(corpus):
    """Its fixed-load scenes: the adaptive variant needs `repeat`, which counts its layers."""
    for case in corpus.values():
        if case.family == "fill" and not case.adaptive:
            scene = case.job_scene(800, 480)
            assert case.features == {"rect"}
            assert {op["op"] for op in walk(scene["ops"])} == {"rect"}
    assert len(corpus["fill.alpha.x8"].job_scene(800, 480)["ops"]) == 8


def test_every_resolved_op_has_the_keys_the_display_list_requires(corpus):
    for case in corpus.values():
        scene = case.job_scene(800, 480)
        json.dumps(scene)  # nothing symbolic is left for the runner
        assert scene["features"] == sorted({op["op"] for op in walk(scene["ops"])}), case.id
        for op in walk(scene["ops"]):
            assert REQUIRED_KEYS[op["op"]] <= set(op), (case.id, op)


def test_animated_scenes_capture_a_later_frame(corpus):
    assert corpus["fill.opaque.x1"].capture == (0,)
    assert corpus["scroll.list.fast"].capture == (0, 30)  # a quarter of its 120-frame period
    assert corpus["text.changing"].capture == (0, 1)
    assert corpus["idle.pulse"].mode == "paced"


# --- units, sweeps, features ---------------------------------------------------------------------------------

UNITS_FILE = """\
    family: demo
    scenes:
      - id: demo.units
        ops:
          - op: group
            dx: 10%
            dy: {anim: linear, from: 0, to: "-50vh", period: 60}
            ops:
              - op: clip
                shape: {kind: path, points: [[0, 0], ["50%", "25%"], [10vw, 100%]]}
                ops:
                  - {op: rect, x: 50%, y: 25%, w: "100% - 2", h: 10vh, color: "#11223344"}
                  - {op: shadow, x: 0, y: 0, w: 25vw, h: 5vmin, radius: 5vmin, blur: 5vmax, dx: 1vw, dy: 2,
                     color: "#000000"}
                  - op: rrect
                    x: {anim: sine, center: 50%, amplitude: 10%, period: 120}
                    y: {anim: step, values: [0, 50%], every: 10}
                    w: 8
                    h: 8
                    radius: 2
                    color: "#abcdef"
"""


@pytest.mark.parametrize("width, height", [(800, 480), (1920, 1080)])
def test_job_scene_resolves_units_against_the_surface(tmp_path, width, height):
    (case,) = load_scene_file(write(tmp_path, UNITS_FILE))
    scene = case.job_scene(width, height)
    assert (scene["width"], scene["height"], scene["id"]) == (width, height, "demo.units")
    group = scene["ops"][0]
    assert group["dx"] == pytest.approx(width * 0.10)
    assert group["dy"] == {"anim": "linear", "from": 0, "to": pytest.approx(-height / 2), "period": 60}
    clip = group["ops"][0]
    assert clip["shape"]["points"] == [[0, 0], [width / 2, height / 4], [pytest.approx(width / 10), height]]
    rect, shadow, rrect = clip["ops"]
    assert (rect["x"], rect["y"], rect["w"], rect["h"]) == (width / 2, height / 4, width - 2,
                                                            pytest.approx(height / 10))
    assert rect["color"] == "#11223344"
    assert shadow["w"] == width / 4
    assert shadow["h"] == shadow["radius"] == pytest.approx(min(width, height) * 0.05)
    assert shadow["blur"] == pytest.approx(max(width, height) * 0.05)
    assert (shadow["dx"], shadow["dy"], shadow["color"]) == (pytest.approx(width / 100), 2, "#000000FF")
    assert rrect["x"] == {"anim": "sine", "center": width / 2, "amplitude": pytest.approx(width / 10),
                          "period": 120}
    assert rrect["y"] == {"anim": "step", "values": [0, height / 2], "every": 10}
    assert rrect["color"] == "#ABCDEFFF"
    assert case.features == {"group", "clip", "rect", "shadow", "rrect"}
    assert case.capture == (0, 10)


def test_sweep_mapping_expands_to_every_combination(tmp_path):
    path = write(tmp_path, """\
        family: demo
        defaults: {params: {tint: "#336699"}, budget_ms: 20}
        scenes:
          - id: demo.s{size}.{upload}
            description: "{size} px, {upload}"
            sweep: {size: [16, 32], upload: [once, every_frame]}
            ops:
              - {op: image, x: 0, y: 0, w: "{size}", h: "{size}", tex_w: "{size}", tex_h: "{size}",
                 pattern: noise, upload: "{upload}"}
              - {op: text, x: 0, y: 0, size: 12, color: "{tint}", text: "{size}px at frame {frame}, item {i}"}
    """)
    cases = load_scene_file(path)
    assert [case.id for case in cases] == ["demo.s16.once", "demo.s16.every_frame", "demo.s32.once",
                                           "demo.s32.every_frame"]
    last = cases[-1]
    assert last.params == {"size": 32, "upload": "every_frame"}
    assert last.description == "32 px, every_frame"
    assert last.budget_ms == 20.0 and last.mode is None and last.tolerance == {}
    image, text = last.job_scene(100, 100)["ops"]
    assert (image["tex_w"], image["upload"], image["seed"], image["filter"]) == (32, "every_frame", 0, "linear")
    assert text["text"] == "32px at frame {frame}, item {i}"  # runner placeholders are left alone
    assert text["color"] == "#336699FF"


def test_sweep_list_couples_params_and_unroll_writes_ops_out(tmp_path):
    path = write(tmp_path, """\
        family: demo
        scenes:
          - id: demo.n{n}
            sweep: [{n: 2, w: 50%}, {n: 3, w: 25%}]
            ops:
              - unroll: "{n}"
                ops: [{op: rect, x: 0, y: 0, w: "{w}", h: 1, color: "#FFFFFF80"}]
    """)
    two, three = load_scene_file(path)
    assert [op["w"] for op in two.job_scene(400, 100)["ops"]] == [200, 200]
    assert [op["w"] for op in three.job_scene(400, 100)["ops"]] == [100, 100, 100]
    assert three.features == {"rect"}


def test_settings_merge_defaults_with_the_scene(tmp_path):
    path = write(tmp_path, """\
        family: demo
        defaults:
          mode: uncapped
          capture: [0, 5]
          tolerance: {gles2: {max_delta: 2, max_pixels: "0.5%"}, software: {max_delta: 0}}
        scenes:
          - id: demo.a
            mode: null
            capture: [7, 3]
            tolerance: {gles2: {max_delta: 4}}
            ops: [{op: rect, x: 0, y: 0, w: 1, h: 1, color: "#000000"}]
          - id: demo.b
            ops: [{op: rect, x: 0, y: 0, w: 1, h: 1, color: "#000000"}]
    """)
    a, b = load_scene_file(path)
    assert (a.mode, a.capture) == (None, (3, 7))
    assert a.tolerance == {"gles2": {"max_delta": 4, "max_pixels": "0.5%"}, "software": {"max_delta": 0}}
    assert (b.mode, b.capture, b.budget_ms) == ("uncapped", (0, 5), None)


# --- mistakes: each names the file, the scene and the key ----------------------------------------------------

RECT = '{op: rect, x: 0, y: 0, w: 1, h: 1, color: "#000000"}'
ADAPTIVE = "{op: repeat, count: complexity, ops: [" + RECT + "]}"


MESH = '{op: mesh, x: 0, y: 0, w: 8, h: 8, columns: 8, rows: complexity, color: "#000000", alt_color: "#FFFFFF"}'
SHADER = "{op: shader, x: 0, y: 0, w: 8, h: 8, loops: complexity, fetches: 1}"


def scene_file(ops: str, extra: str = "", scene_id: str = "demo.bad") -> str:
    return f"family: demo\nscenes:\n  - id: {scene_id}\n{extra}    ops: [{ops}]\n"


MISTAKES = {
    "unknown top-level key": ("family: demo\nscene: []\nscenes:\n  - {id: demo.a, ops: [" + RECT + "]}\n",
                              None, "scene", "unknown key"),
    "unknown scene key": (scene_file(RECT, "    budget: 3\n"), "demo.bad", "budget", "unknown key"),
    "unknown op": (scene_file("{op: circle, x: 0}"), "demo.bad", "ops[0].op", "unknown op 'circle'"),
    "missing op key": (scene_file("{op: rect, x: 0, y: 0, w: 1, color: '#000000'}"), "demo.bad", "ops[0].h",
                       "needs 'h'"),
    "unknown op key": (scene_file("{op: rect, x: 0, y: 0, w: 1, h: 1, colour: '#000000'}"), "demo.bad",
                       "ops[0].colour", "unknown key"),
    "bad unit": (scene_file("{op: rect, x: 5em, y: 0, w: 1, h: 1, color: '#000000'}"), "demo.bad", "ops[0].x",
                 "not a length"),
    "percent without an axis": (scene_file("{op: rrect, x: 0, y: 0, w: 1, h: 1, radius: 10%, color: '#000000'}"),
                                "demo.bad", "ops[0].radius", "vmin"),
    "bad colour": (scene_file("{op: rect, x: 0, y: 0, w: 1, h: 1, color: red}"), "demo.bad", "ops[0].color",
                   "#RRGGBB"),
    "unquoted colour": (scene_file("", "").replace("    ops: []\n", "    ops:\n      - op: rect\n        x: 0\n"
                                                  "        y: 0\n        w: 1\n        h: 1\n"
                                                  "        color: #000000\n"),
                        "demo.bad", "ops[0].color", "quote it"),
    "bad animation": (scene_file("{op: rect, x: {anim: bounce, period: 3}, y: 0, w: 1, h: 1, color: '#000000'}"),
                      "demo.bad", "ops[0].x", "linear, sine, step"),
    "nested op mistake": (scene_file("{op: layer, opacity: 1.5, ops: [" + RECT + "]}"), "demo.bad",
                          "ops[0].opacity", "0 to 1"),
    "template param not swept": (scene_file(RECT, scene_id="demo.x{layers}"), "demo.x{layers}", "id",
                                 "does not sweep 'layers'"),
    "sweep values collide": (scene_file(RECT, "    sweep: {n: [1, 2]}\n", scene_id="demo.same"), "demo.same", "id",
                             "two cases get the id"),
    "unknown param": (scene_file("{op: rect, x: '{left}', y: 0, w: 1, h: 1, color: '#000000'}"), "demo.bad",
                      "ops[0].x", "unknown param {left}"),
    "id outside the family": (scene_file(RECT, scene_id="other.a"), "other.a", "id", "must start with"),
    "key given twice": (scene_file("{op: rect, x: 0, x: 1, y: 0, w: 1, h: 1, color: '#000000'}"), None, None,
                        "given twice"),
    # Checked at load time, not on the device (README, Reliability):
    "adaptive without complexity": (scene_file(ADAPTIVE), "demo.bad", "complexity", "needs 'complexity:"),
    "complexity without adaptive": (scene_file(RECT, "    complexity: {unit: rects, capture: 1}\n"), "demo.bad",
                                    "complexity", "belongs to adaptive scenes"),
    "adaptive and paced": (scene_file(ADAPTIVE, "    mode: paced\n    complexity: {unit: rects, capture: 1}\n"),
                           "demo.bad", "mode", "measured uncapped"),
    "complexity without unit": (scene_file(ADAPTIVE, "    complexity: {capture: 1}\n"), "demo.bad", "complexity.unit",
                                "needs 'unit'"),
    "capture past max": (scene_file(ADAPTIVE, "    complexity: {unit: rects, capture: 20, max: 10}\n"), "demo.bad",
                         "complexity.capture", "from 0 to 10"),
    "unknown complexity key": (scene_file(ADAPTIVE, "    complexity: {unit: rects, capture: 1, min: 3}\n"),
                               "demo.bad", "complexity.min", "unknown key"),
    # Only the keys protocol.display_list.COMPLEXITY_OP_KEYS names take the per-frame complexity.
    "complexity on a key that may not": (scene_file(MESH.replace("columns: 8", "columns: complexity")), "demo.bad",
                                         "ops[0].columns", "'mesh' key 'columns' cannot be 'complexity': only "
                                         "repeat count, rect_batch count, mesh rows, shader loops take"),
    "complexity on a size": (scene_file(RECT.replace("w: 1", "w: complexity")), "demo.bad", "ops[0].w",
                             "'rect' key 'w' cannot be 'complexity'"),
    "adaptive mesh without complexity": (scene_file(MESH), "demo.bad", "complexity",
                                         "an adaptive scene (a mesh whose rows is \"complexity\") needs"),
    "max past the mesh's cap": (scene_file(MESH, "    complexity: {unit: rows, capture: 1, max: 9000}\n"), "demo.bad",
                                "complexity.max", "more than the mesh op can draw (8192 for its rows"),
    "max past the shader's cap": (scene_file(SHADER, "    complexity: {unit: loops, capture: 1, max: 2000}\n"),
                                  "demo.bad", "complexity.max", "more than the shader op can draw (1024"),
    "id ending in a newline": (scene_file(RECT, scene_id='"demo.a\\n"'), "demo.a\n", "id", "must match"),
    "colour ending in a newline": (scene_file('{op: rect, x: 0, y: 0, w: 1, h: 1, color: "#000000\\n"}'),
                                   "demo.bad", "ops[0].color", "#RRGGBB"),
    "unquoted colour in a flow mapping": (scene_file("{op: rect, x: 0, y: 0, w: 1, h: 1, color: #3366CC}"), None,
                                          None, "quote colours"),
    "zero width": (scene_file("{op: rect, x: 0, y: 0, w: 0, h: 1, color: '#000000'}"), "demo.bad", "ops[0].w",
                   "greater than 0"),
    "negative height": (scene_file("{op: rect, x: 0, y: 0, w: 1, h: -4, color: '#000000'}"), "demo.bad",
                        "ops[0].h", "greater than 0"),
    "negative relative width": (scene_file("{op: rect, x: 0, y: 0, w: -50%, h: 1, color: '#000000'}"), "demo.bad",
                                "ops[0].w", "greater than 0"),
    "negative radius": (scene_file("{op: rrect, x: 0, y: 0, w: 1, h: 1, radius: -2, color: '#000000'}"),
                        "demo.bad", "ops[0].radius", "0 or more"),
    "negative blur": (scene_file("{op: backdrop_blur, x: 0, y: 0, w: 1, h: 1, blur: -8}"), "demo.bad",
                      "ops[0].blur", "0 or more"),
    "zero text size": (scene_file("{op: text, x: 0, y: 0, size: 0, color: '#000000', text: hi}"), "demo.bad",
                       "ops[0].size", "greater than 0"),
    "animated size below zero": (scene_file("{op: rect, x: 0, y: 0, w: {anim: linear, from: -5, to: 10, period: 4},"
                                            " h: 1, color: '#000000'}"), "demo.bad", "ops[0].w.from", "0 or more"),
    "tolerance typo": (scene_file(RECT, "    tolerance: {gles2: {max_detla: 3}}\n"), "demo.bad",
                       "tolerance.gles2.max_detla", "unknown key"),
    "tolerance bad value": (scene_file(RECT, "    tolerance: {software: {max_delta: -1}}\n"), "demo.bad",
                            "tolerance.software.max_delta", "tolerance key"),
    "sweep too large": (scene_file(RECT, "    sweep: {a: " + str(list(range(100))) + ", b: " + str(list(range(101)))
                                   + "}\n", scene_id="demo.x{a}.{b}"), "demo.x{a}.{b}", "sweep", "10000"),
    "nested unrolls": (scene_file("{unroll: 64, ops: [{unroll: 64, ops: [{unroll: 64, ops: [" + RECT + "]}]}]}"),
                       "demo.bad", "ops[0]", "more than the 10000 a job may hold"),
}


@pytest.mark.parametrize("text, scene, key, phrase", MISTAKES.values(), ids=MISTAKES.keys())
def test_each_mistake_is_a_scene_error_naming_file_scene_and_key(tmp_path, text, scene, key, phrase):
    path = write(tmp_path, text)
    with pytest.raises(SceneError) as caught:
        load_scene_file(path)
    error = caught.value
    message = str(error)
    assert str(path) in message and phrase in message
    assert (error.scene, error.key) == (scene, key)
    if scene:
        assert repr(scene) in message
    if key:
        assert repr(key) in message


@pytest.mark.parametrize("scene_id, sweep", [
    ("demo/../../etc", ""),
    ("demo.{name}", "    sweep: {name: ['../up']}\n"),
    ("demo.{name}", "    sweep: {name: ['a\\\\b']}\n"),
])
def test_ids_cannot_escape_their_folder(tmp_path, scene_id, sweep):
    path = write(tmp_path, scene_file(RECT, sweep, scene_id=f"'{scene_id}'"))
    with pytest.raises(SceneError, match="must stay inside their folder") as caught:
        load_scene_file(path)
    assert caught.value.key == "id"


def test_load_corpus_reports_a_bad_file_and_loads_the_others(tmp_path):
    write(tmp_path, scene_file(RECT, scene_id="a.one").replace("demo", "a"), "a.yaml")
    write(tmp_path, scene_file("{op: nope}"), "b.yaml")
    write(tmp_path, "scenes: [", "c.yaml")
    write(tmp_path, scene_file(RECT, scene_id="a.one").replace("demo", "a"), "d.yaml")
    write(tmp_path, scene_file(RECT, scene_id="e.two").replace("demo", "e"), "e.yaml")
    cases, errors = load_corpus(tmp_path)
    assert [case.id for case in cases] == ["a.one", "e.two"]
    assert [Path(error.path).name for error in errors] == ["b.yaml", "c.yaml", "d.yaml"]
    assert "not valid YAML" in str(errors[1])
    assert "already used" in str(errors[2]) and errors[2].scene == "a.one"


def test_animated_sizes_may_pass_through_zero_and_relative_sums_are_kept(tmp_path):
    path = write(tmp_path, scene_file("{op: rect, x: 0, y: 0, w: {anim: linear, from: 0, to: 50%, period: 8}, "
                                      "h: '100% - 2', color: '#000000'}, {op: rrect, x: 0, y: 0, w: 1, h: 1, "
                                      "radius: 0, color: '#000000'}, {op: rect, x: -5, y: -5, w: 1, h: 1, "
                                      "color: '#000000'}"))
    (case,) = load_scene_file(path)
    ops = case.job_scene(40, 20)["ops"]
    assert ops[0]["w"] == {"anim": "linear", "from": 0, "to": 20, "period": 8} and ops[0]["h"] == 18
    assert ops[1]["radius"] == 0 and ops[2]["x"] == -5


def test_corpus_index_names_both_files_of_a_shared_id_and_caps_the_corpus(tmp_path, monkeypatch):
    import pytest_zbench.scenes as scenes

    first = load_scene_file(write(tmp_path, scene_file(RECT, scene_id="demo.a"), "a.yaml"))
    second = load_scene_file(write(tmp_path, scene_file(RECT, scene_id="demo.a"), "b.yaml"))
    index = scenes.CorpusIndex()
    index.add(tmp_path / "a.yaml", first)
    with pytest.raises(SceneError) as caught:
        index.add(tmp_path / "b.yaml", second)
    assert str(tmp_path / "a.yaml") in str(caught.value) and str(tmp_path / "b.yaml") in str(caught.value)
    monkeypatch.setattr(scenes, "MAX_CASES", 1)
    with pytest.raises(SceneError, match="more than 1 scene cases"):
        scenes.CorpusIndex().add(tmp_path / "a.yaml", first + [first[0].__class__(**{**first[0].__dict__,
                                                                                      "id": "demo.b"})])


def test_load_corpus_of_a_missing_directory_is_an_error(tmp_path):
    cases, errors = load_corpus(tmp_path / "nowhere")
    assert cases == [] and len(errors) == 1 and "nowhere" in str(errors[0])


def test_corpus_tolerances_are_accepted_by_the_golden_module(corpus):
    from pytest_zbench.golden.tolerance import validate_tolerances

    for case in corpus.values():
        validate_tolerances(case.tolerance)
    assert corpus["shadow.blur8"].tolerance == {
        "gles2": {"max_delta": 4, "cross_backend": {"max_delta": 16, "edge_mask": {"max_pixels": "2%"}}},
        "cairo": {"cross_backend": {"max_delta": 16, "edge_mask": {"max_pixels": "2%"}}},
        "raster": {"cross_backend": {"max_delta": 16, "edge_mask": {"max_pixels": "2.5%"}}}}


# --- a scene's own gate settings -------------------------------------------------------------------------------

def test_gate_settings_merge_defaults_with_the_scene(tmp_path):
    path = write(tmp_path, """\
        family: demo
        defaults:
          gate: {threshold: 0.3}
        scenes:
          - id: demo.a
            gate: {metrics: [cpu_ms.p50, jank_share]}
            ops: [{op: rect, x: 0, y: 0, w: 1, h: 1, color: "#000000"}]
          - id: demo.b
            ops: [{op: rect, x: 0, y: 0, w: 1, h: 1, color: "#000000"}]
          - id: demo.c
            gate: {threshold: 0}
            ops: [{op: rect, x: 0, y: 0, w: 1, h: 1, color: "#000000"}]
    """)
    a, b, c = load_scene_file(path)
    assert (a.gate.threshold, a.gate.metrics) == (0.3, ("cpu_ms.p50", "jank_share"))
    assert (b.gate.threshold, b.gate.metrics) == (0.3, None)
    assert c.gate.threshold == 0.0 and c.gate.to_json() == {"threshold": 0.0, "metrics": None}
    (plain,) = load_scene_file(write(tmp_path, scene_file(RECT, scene_id="demo.plain"), "plain.yaml"))
    assert plain.gate is None


@pytest.mark.parametrize("gate, key, phrase", [
    ("{threshold: -0.1}", "gate.threshold", "slowdown ratio >= 0"),
    ("{threshold: fast}", "gate.threshold", "slowdown ratio >= 0"),
    ("{metrics: cpu_ms.p50}", "gate.metrics", "non-empty list"),
    ("{metrics: []}", "gate.metrics", "non-empty list"),
    ("{metrics: [cpu_ms.p51]}", "gate.metrics", "'cpu_ms.p51' is not a gate metric"),
    ("{metrics: [jank_share, jank_share]}", "gate.metrics", "names a metric twice"),
    ("{bar: 0.2}", "gate.bar", "unknown key 'bar' in gate"),
    ("0.2", "gate", "mapping"),
])
def test_gate_mistakes_name_the_file_scene_and_key(tmp_path, gate, key, phrase):
    path = write(tmp_path, scene_file(RECT, f"    gate: {gate}\n"))
    with pytest.raises(SceneError) as caught:
        load_scene_file(path)
    assert (caught.value.scene, caught.value.key) == ("demo.bad", key)
    assert phrase in str(caught.value) and str(path) in str(caught.value)


@pytest.mark.parametrize("op, key, cap", [
    ("{op: repeat, count: complexity, ops: [" + RECT + "]}", "count", 100_000),
    ("{op: rect_batch, count: complexity, columns: 4, dx: 2, dy: 2, x: 0, y: 0, w: 1, h: 1, color: '#000000'}",
     "count", 65_536),
    (MESH, "rows", 65_536 // 8),
    (SHADER, "loops", 1024),
])
def test_each_op_that_takes_complexity_makes_its_scene_adaptive_and_bounds_its_max(tmp_path, op, key, cap):
    case, = load_scene_file(write(tmp_path, scene_file(op, "    complexity: {unit: units, capture: 1}\n")))
    assert case.adaptive and case.ops[0][key] == "complexity"
    assert case.complexity is not None and case.complexity.max == cap  # the default max is what the op can draw
    assert case.job_scene(64, 48)["ops"][0][key] == "complexity"  # the job carries the key as the scene wrote it


def test_the_fling_decelerates_by_friction_and_comes_back(corpus):
    """scroll.list.fling's offsets, as the runner receives them: each fling's steps shrink frame by frame by
    the friction factor e^(-1/22) (docs/scenes.md), it stops at -400vh and the way back mirrors the way down."""
    import math

    dy = corpus["scroll.list.fling"].job_scene(800, 480)["ops"][0]["dy"]
    assert dy["anim"] == "step" and dy["every"] == 1
    offsets = [v / 480 * 100 for v in dy["values"]]  # in vh
    down, up = offsets[:90], offsets[90:]
    assert down[0] == 0 and up[0] == pytest.approx(-400)
    steps = [b - a for a, b in zip(down, down[1:])]
    assert all(s < 0 for s in steps)
    # Rounded to 0.1vh, so compare the decay over 10 frames where the rounding is small against the steps.
    for k in (0, 10, 20, 30):
        ratio = (down[k + 11] - down[k + 10]) / (down[k + 1] - down[k])
        assert ratio == pytest.approx(math.exp(-10 / 22), abs=0.03)
    assert [-400 - u for u in up] == pytest.approx(down, abs=0.11)
