"""Why it regressed, end to end (docs/regression.md, "Why it regressed"): a scene copy that uploads twice the
texture bytes, and one that draws extra rects, each judged in an interleaved A/B session against the original.

A/B is the cheapest mode that is real end to end: one session, launches of the real reference runner. The
candidate (B) is a runner that draws the scene copy: `b_runner.py` swaps the job's scene for the copy of the
same id from the project's `copies/` folder, resolved for the job's surface by the scene loader, and runs the
reference runner on it. So B renders what the copy says, as a build that changed the scene's drawing would.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET

import pytest
from trace_format import problems

from pytest_zbench.host.report.diff_trace import diff_trace_path
from pytest_zbench.host.run_record import validate_run

pytestmark = pytest.mark.acceptance

# Judged through the sequential design with a budget, not a fixed number of launches: on a loaded machine six
# launches a side once left the extra-draws copy `inconclusive`; rounds go on until the verdict is decided
# (docs/regression.md, "The sequential gate"), up to the launch cap, as a device's A/B would.
GATED = ["--zbench-budget=10", "--zbench-max-launches=14", "--zbench-frames=30", "--zbench-warmup=3",
         "--zbench-mode=uncapped"]

B_RUNNER = """\
import json, sys
from pathlib import Path

from pytest_zbench.runner.__main__ import main
from pytest_zbench.scenes import load_scene_file

copies, args = Path(sys.argv[1]), sys.argv[2:]
if args[:1] == ["run"]:
    job = json.loads(Path(args[1]).read_text())
    scene = job["scene"]
    case = next(c for f in sorted(copies.glob("*.yaml")) for c in load_scene_file(f) if c.id == scene["id"])
    job["scene"] = case.job_scene(scene["width"], scene["height"])
    copy = Path(args[2]).parent / (Path(args[2]).name + ".job.json")
    copy.write_text(json.dumps(job))
    args = ["run", str(copy), args[2]]
sys.exit(main(args))
"""

TEXTURE = """\
family: up
scenes:
  - id: up.texture
    ops:
      - {{op: image, x: 4, y: 4, w: 40, h: 40, tex_w: 1024, tex_h: {tex_h}, pattern: noise, seed: 7,
         upload: every_frame, filter: mipmap}}
"""

RECTS = """\
family: many
scenes:
  - id: many.rects
    ops:
      - {{op: repeat, count: 100, columns: 10, dx: 6, dy: 4, ops: [{{op: rect, x: 0, y: 0, w: 6, h: 4, color: "#E9C46A"}}]}}
{extra}"""
# The copy's extra rects: as many draws again, each a tenth of a pixel square, so the pixels drawn hardly change
# (1 in 2,400 on the 64 x 48 surface of the test project's device).
EXTRA_RECTS = ('      - {op: repeat, count: 100, columns: 10, dx: 6, dy: 4, ops: [{op: rect, x: 1, y: 1, w: 0.1, h: 0.1, '
               'color: "#264653"}]}\n')


def run_ab(project, tmp_path, name: str, original: str, copy: str):
    (project.root / "scenes" / "mini.yaml").unlink()
    (project.root / "scenes" / "round.yaml").unlink()
    project.write_scene(name, original)
    copies = project.root / "copies"
    copies.mkdir()
    (copies / name).write_text(copy)
    (project.root / "b_runner.py").write_text(B_RUNNER)
    b_runner = f"{sys.executable} {project.root / 'b_runner.py'} {copies}"
    junit = tmp_path / "junit.xml"
    result = project.run(*GATED, f"--zbench-ab={b_runner}", f"--zbench-history={tmp_path / 'history.sqlite'}",
                         f"--junitxml={junit}")
    document = project.run_json()
    assert validate_run(document) == []
    return result, document["scenes"][0], junit


def properties(junit) -> dict[str, str]:
    case = next(ET.parse(junit).getroot().iter("testcase"))
    return {p.get("name"): p.get("value") for p in case.iter("property")}


def test_a_copy_uploading_twice_the_texture_bytes_is_regressed_with_the_upload_named_first(project, tmp_path):
    result, scene, junit = run_ab(project, tmp_path, "up.yaml", TEXTURE.format(tex_h=1024), TEXTURE.format(tex_h=2048))
    result.assert_outcomes(failed=1)
    regression = scene["regression"]
    assert regression["verdict"] == "regressed"
    why = regression["attribution"]
    assert why["moved"][0] == "texture_upload_bytes"
    upload = next(m for m in why["measurements"] if m["name"] == "texture_upload_bytes")
    assert upload["how"] == "exact" and upload["effect"] == pytest.approx(2.0, rel=1e-9)
    assert upload["candidate_median"] == pytest.approx(1024 * 2048 * 4, rel=1e-9)
    draws = next(m for m in why["measurements"] if m["name"] == "draw_calls")
    assert draws["note"] == "unchanged (exact)" and not draws["moved"]
    cpu = next(m for m in why["measurements"] if m["name"] == "cpu_ms.p50")
    assert cpu["how"] == "gate" and cpu["moved"] and cpu["ci"][0] > 1  # the cost, named after its cause
    assert regression["message"].splitlines()[1].startswith("why: texture_upload_bytes 2.00x (exact")
    result.stdout.fnmatch_lines(["*why: texture_upload_bytes 2.00x (exact*"])
    props = properties(junit)
    assert props["regression_moved"].split(",")[0] == "texture_upload_bytes"
    assert props["regression_why"].startswith("why: texture_upload_bytes")
    report = (project.results / "report.html").read_text()
    assert "Why it regressed" in report and "texture_upload_bytes" in report
    diff = diff_trace_path(project.results, scene)
    assert diff is not None and diff.exists()
    trace = json.loads(diff.read_text())
    names = {e["args"]["name"] for e in trace["traceEvents"] if e.get("ph") == "M" and e["name"] == "process_name"}
    assert any(n.startswith("baseline") for n in names) and any(n.startswith("candidate") for n in names)
    assert diff.name in report
    assert problems(trace) == []


def test_a_copy_drawing_extra_rects_names_the_draw_calls_first(project, tmp_path):
    result, scene, _ = run_ab(project, tmp_path, "many.yaml", RECTS.format(extra=""), RECTS.format(extra=EXTRA_RECTS))
    result.assert_outcomes(failed=1)
    regression = scene["regression"]
    assert regression["verdict"] == "regressed"
    why = regression["attribution"]
    assert why["moved"][0] == "draw_calls"
    draws = next(m for m in why["measurements"] if m["name"] == "draw_calls")
    assert draws["how"] == "exact" and draws["effect"] == pytest.approx(2.0, rel=1e-9)
    pixels = next(m for m in why["measurements"] if m["name"] == "pixels_drawn")
    assert not pixels["moved"] and pixels["effect"] == pytest.approx(1.0, abs=0.01)
    assert "texture_upload_bytes" not in why["moved"]
