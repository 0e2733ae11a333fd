"""Input that would be accepted and then misbehave is refused when it is loaded: one line naming the file,
the key and what to do, before anything runs."""

from __future__ import annotations

import pytest
from fault_support import clean

USAGE_ERROR = pytest.ExitCode.USAGE_ERROR
RECT = "{op: rect, x: 0, y: 0, w: 2, h: 2, color: '#000000'}"


def test_a_display_larger_than_a_runner_renders_is_refused(local_session):
    session = local_session
    session.device(display={"width": 100000, "height": 480, "refresh_hz": 60})
    result = session.run()
    assert result.ret == USAGE_ERROR
    text = clean(result)
    assert f"device '{session.name}', key 'display': 100000 x 480 is larger than the 16384 pixels" in text


BAD_FILES = {
    "blend.yaml": ("family: blend\nscenes:\n  - id: blend.a\n    ops: [{op: rrect, x: 0, y: 0, w: 4, h: 4, "
                   "radius: 1, color: '#000000', blend: multiply}]\n",
                   "scene 'blend.a', key 'ops[0].blend': unknown key 'blend' in op 'rrect'"),
    "late.yaml": ("family: late\nscenes:\n  - id: late.a\n    capture: [1000000000000]\n    ops: [" + RECT + "]\n",
                  "scene 'late.a', key 'capture': frame 1000000000000 is past the frames of a launch"),
    "draws.yaml": ("family: draws\nscenes:\n  - id: draws.a\n    ops:\n      - op: repeat\n        count: 100000\n"
                   "        ops:\n          - {op: repeat, count: 100000, ops: [" + RECT + "]}\n",
                   "scene 'draws.a', key 'ops': one frame draws 10,000,000,000 times"),
    "self.yaml": ("family: self\nscenes:\n  - id: self.a\n    differential: {minus: self.a, feature: nothing}\n"
                  "    ops: [" + RECT + "]\n",
                  "scene 'self.a', key 'differential.minus': 'minus' names this scene itself"),
    "cycle.yaml": ("family: cycle\nscenes:\n  - id: cycle.a\n    differential: {minus: cycle.b, feature: x}\n"
                   "    ops: [" + RECT + "]\n  - id: cycle.b\n    differential: {minus: cycle.a, feature: y}\n"
                   "    ops: [" + RECT + "]\n",
                   "key 'differential.minus': the differential pairs make a cycle (cycle.a - cycle.b - cycle.a)"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_a_scene_file_mistake_is_refused_at_collection(local_session, name):
    session = local_session
    text, phrase = BAD_FILES[name]
    (session.root / "scenes" / name).write_text(text)
    result = session.run()
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error: nothing runs
    out = clean(result)
    assert f"scenes/{name}" in out and phrase in out, out[-2000:]


def test_a_yaml_error_says_how_to_run_the_other_scene_files(local_session):
    session = local_session
    broken = session.root / "scenes" / "broken.yaml"
    broken.write_text("family: broken\nscenes:\n  - id: broken.a\n    ops: [{op: rect\n")
    result = session.run("-m", "zbench_perf")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    text = clean(result)
    assert "not valid YAML" in text and "still collected" not in text
    assert f"run the other scene files with --continue-on-collection-errors, or leave this one out with " \
           f"--ignore={broken}" in text
    # Both ways the message gives run the other file.
    session.run("-m", "zbench_perf", "--continue-on-collection-errors").assert_outcomes(passed=1, errors=1)
    session.run("-m", "zbench_perf", f"--ignore={broken}").assert_outcomes(passed=1)
