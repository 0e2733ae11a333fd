"""Golden tests end to end: real renders, real PNG goldens on disk, the update modes."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from PIL import Image

from pytest_zbench.host.run_record import validate_run

MINI = "goldens/software/x86_64/mini.fill.x1/frame-0.png"


def golden_cases(junit) -> dict[str, dict[str, str]]:
    return {c.get("name"): {p.get("name"): p.get("value") for p in c.iter("property")}
            for c in ET.parse(junit).getroot().iter("testcase") if c.get("name", "").startswith("golden[")}


@pytest.mark.acceptance
def test_missing_golden_fails_with_the_command_then_update_writes_it(project, tmp_path):
    result = project.run("--zbench-device=local", "-k", "mini", goldens=True)
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(["*no golden at*mini.fill.x1/frame-0.png*",
                                 "*create it: pytest --zbench-device=local -k 'golden[[]mini.fill.x1-local[]]' "
                                 "--zbench-update-goldens=missing*"])
    assert not (project.root / "goldens").exists()

    result = project.run("--zbench-device=local", "-k", "mini", "--zbench-update-goldens", goldens=True)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["goldens written (missing): 2", f"*{MINI}"])
    written = Image.open(project.root / MINI)
    assert written.mode == "RGBA" and written.size == (64, 48)

    junit = tmp_path / "junit.xml"
    result = project.run("--zbench-device=local", "-k", "mini", f"--junitxml={junit}", goldens=True)
    result.assert_outcomes(passed=4)
    props = golden_cases(junit)["golden[mini.fill.x1-local]"]
    assert props["frame0_status"] == "passed"
    scene = next(s for s in project.run_json()["scenes"] if s["id"] == "mini.fill.x1")
    assert validate_run(project.run_json()) == []
    assert scene["outcome"] == "passed" and scene["correctness"]["outcome"] == "passed"
    assert scene["correctness"]["frames"][0]["metrics"]["exact"] is True


@pytest.mark.acceptance
def test_colour_change_fails_with_artifacts_and_only_failed_mode_rewrites(project):
    select = ("-k", "round or mini.fill.x1")
    project.run("--zbench-device=local", *select, "--zbench-update-goldens=missing", goldens=True)
    other = project.root / MINI
    other_bytes = other.read_bytes()
    round_golden = project.root / "goldens/software/x86_64/round.one/frame-0.png"
    project.write_scene("round.yaml", (project.root / "scenes/round.yaml").read_text().replace("#CC3366", "#CC3367"))

    result = project.run("--zbench-device=local", "-k", "golden and round", goldens=True)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "frame 0 vs" in out and "exact" in out
    frame = project.run_json()["scenes"][0]["correctness"]["frames"][0]
    assert frame["status"] == "failed"
    for kind in ("expected", "actual", "diff", "flip"):
        path = project.results / frame["artifacts"][kind]
        assert path.is_file(), kind
        assert str(path) in out, kind  # the failure message names every artifact
    defect = frame["defect"]
    assert defect["scene"] == "round.one" and defect["bbox"] is not None and defect["build_hash"] is not None
    expected, actual = (Image.open(project.results / frame["artifacts"][k]) for k in ("expected", "actual"))
    assert expected.getpixel((20, 14)) != actual.getpixel((20, 14))  # inside the rounded rect

    # `missing` never rewrites an existing golden, even a failing one.
    result = project.run("--zbench-device=local", *select, "--zbench-update-goldens=missing", goldens=True)
    result.assert_outcomes(passed=3, failed=1)
    # `failed` rewrites the failing one and leaves the passing one untouched.
    before = round_golden.read_bytes()
    result = project.run("--zbench-device=local", *select, "--zbench-update-goldens=failed", goldens=True)
    result.assert_outcomes(passed=4)  # the round.one golden test passes because it wrote a new golden
    result.stdout.fnmatch_lines(["goldens written (failed): 1", "*round.one/frame-0.png"])
    assert other.read_bytes() == other_bytes and round_golden.read_bytes() != before
    project.run("--zbench-device=local", *select, goldens=True).assert_outcomes(passed=4)


def test_failed_launch_never_becomes_a_golden(project):
    project.write_inventory({"RECT_RUNNER_EXIT_AT": "3"})
    result = project.run("--zbench-device=rectonly", "-k", "mini.fill.x1", "--zbench-update-goldens=all", goldens=True)
    result.assert_outcomes(failed=2)
    assert not (project.root / MINI).exists()
    result.stdout.fnmatch_lines(["goldens written (all): 0"])


def test_non_deterministic_captures_fail_the_golden_test(project):
    project.write_inventory({"RECT_RUNNER_NOISE": "1"})
    result = project.run("--zbench-device=rectonly", "-k", "golden and mini.fill.x1", "--zbench-update-goldens",
                         goldens=True)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*frame 0 differs between launches*not deterministic*"])
    assert not (project.root / MINI).exists()


def test_runner_issues_fail_the_golden_test_even_when_pixels_match(project):
    project.run("--zbench-device=local", "-k", "mini.fill.x1", "--zbench-update-goldens", goldens=True)
    project.write_inventory({"RECT_RUNNER_BAD": "1"})
    result = project.run("--zbench-device=rectonly", "-k", "golden and mini.fill.x1", goldens=True)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*runner reported nan*"])


@pytest.mark.acceptance
def test_unused_goldens_are_listed_when_updating(project):
    project.run("--zbench-device=local", "-k", "mini", "--zbench-update-goldens", goldens=True)
    stray = project.root / "goldens/software/x86_64/mini.gone/frame-0.png"
    stray.parent.mkdir(parents=True)
    stray.write_bytes((project.root / MINI).read_bytes())
    result = project.run("--zbench-device=local", "-k", "mini", "--zbench-update-goldens", goldens=True)
    result.stdout.fnmatch_lines(["goldens no scene uses any more (1)*", "*mini.gone/frame-0.png"])


@pytest.mark.acceptance
@pytest.mark.parametrize("extra", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_perf_and_golden_tests_share_one_measurement(project, extra):
    project.run("--zbench-device=local", "-k", "mini", "--zbench-update-goldens", goldens=True)
    result = project.run("--zbench-device=local", "-k", "mini", *extra, goldens=True)
    result.assert_outcomes(passed=4)
    document = project.run_json()
    assert len(document["scenes"]) == 2
    for scene in document["scenes"]:
        assert scene["outcome"] == "passed" and scene["correctness"]["outcome"] == "passed"
        assert scene["runs"] == 2  # not 4: the golden test reused the perf test's launches
    launches = sorted(p.name for p in (project.results / "local" / "mini.fill.x1").iterdir())
    assert launches == ["launch-0", "launch-1"]  # no launch of its own for the golden test


def test_update_goldens_rejects_an_unknown_mode(project):
    result = project.run("--zbench-update-goldens=some", goldens=True)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--zbench-update-goldens*'some'*missing, failed, all*"])


@pytest.mark.acceptance
def test_cross_architecture_difference_fails_naming_the_reference_set(project, tmp_path):
    # A runner that says nothing of its machine, on a local device, is described by the host.
    project.run("--zbench-device=rectonly", "-k", "mini.fill.x1", "--zbench-update-goldens", goldens=True)
    assert project.run_json()["device"]["facts_from"] == "host"
    reference = project.root / MINI
    # The same runner reporting aarch64: its own set, recorded, then compared exactly.
    project.write_inventory({"RECT_RUNNER_ARCH": "aarch64"})
    project.run("--zbench-device=rectonly", "-k", "mini.fill.x1", "--zbench-update-goldens", goldens=True)
    own = project.root / "goldens/software/aarch64/mini.fill.x1/frame-0.png"
    assert own.is_file() and project.run_json()["device"]["cpu"]["family"] == "aarch64"
    # The reference set drifts by far more than an architecture's rounding (a block 40 levels off).
    pixels = Image.open(reference).convert("RGBA")
    for x in range(20):
        for y in range(20):
            r, g, b, a = pixels.getpixel((x, y))
            pixels.putpixel((x, y), (min(r + 40, 255), g, b, a))
    pixels.save(reference)

    junit = tmp_path / "junit.xml"
    result = project.run("--zbench-device=rectonly", "-k", "golden and mini.fill.x1", f"--junitxml={junit}",
                         goldens=True)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "vs the reference set software/x86_64" in out
    assert "across CPU architectures: this device is aarch64, the reference x86_64" in out
    assert "tolerance.software.cross_arch" in out
    frame = project.run_json()["scenes"][0]["correctness"]["frames"][0]
    assert frame["status"] == "passed" and frame["golden_set"] == "software/aarch64"  # its own set is exact
    cross = frame["cross_arch"]
    assert cross["status"] == "failed" and cross["reference_set"] == "software/x86_64" and frame["cross_backend"] is None
    assert all("frame-0-cross-arch-" in path for path in cross["artifacts"].values())
    assert golden_cases(junit)["golden[mini.fill.x1-rectonly]"]["frame0_cross_arch_status"] == "failed"
    report = (project.results / "report.html").read_text()
    assert "a cross-architecture difference" in report and "cross-architecture diff (reference set" in report


SCENES_VACUOUS = """\
family: broken
scenes:
  # A scene whose ops are drawn off the surface: the capture is the background alone.
  - id: broken.offsurface.x{layers}
    sweep: {layers: [1, 2]}
    ops:
      - unroll: "{layers}"
        ops:
          - {op: rect, x: "100% + 10", y: 1, w: 20, h: 20, color: "#3366CC80"}
  # One vertex draw of triangles, all beyond the surface's right edge.
  - id: broken.offmesh.n{cells}
    sweep: {cells: [1, 16]}
    ops:
      - {op: mesh, x: "100% + 10", y: 0, w: 40, h: 40, columns: "{cells}", rows: 1, color: "#3366CC",
         alt_color: "#CC3366"}
  # The swept rect is off the surface: every case draws the same visible pixels.
  - id: broken.hidden.x{x}
    sweep: {x: [200, 300]}
    ops:
      - {op: rect, x: 1, y: 1, w: 20, h: 20, color: "#3366CC"}
      - {op: rect, x: "{x}", y: 1, w: 20, h: 20, color: "#CC3366"}
  # An opaque overdraw stack looks like one layer by design: not vacuous.
  - id: broken.stack.x{layers}
    sweep: {layers: [1, 2]}
    ops:
      - unroll: "{layers}"
        ops:
          - {op: rect, x: 1, y: 1, w: 20, h: 20, color: "#3366CC"}
"""


@pytest.mark.acceptance
def test_vacuous_captures_fail_their_golden_tests_and_never_become_goldens(project):
    project.write_scene("broken.yaml", SCENES_VACUOUS)
    result = project.run("--zbench-device=local", "-k", "golden and broken", "--zbench-update-goldens=missing",
                         goldens=True)
    out = result.stdout.str()
    scenes = {s["id"]: s for s in project.run_json()["scenes"]}
    issues = {scene: [i["kind"] for i in s["correctness"]["issues"]] for scene, s in scenes.items()}
    assert issues["broken.offsurface.x1"] == issues["broken.offsurface.x2"] == ["vacuous_capture"]
    assert issues["broken.offmesh.n1"] == issues["broken.offmesh.n16"] == ["vacuous_capture"]
    assert "vacuous_capture at frame 0: every pixel is #FFFFFFFF" in out
    # Each case of the hidden sweep is judged against the other's capture, whichever is checked first.
    assert issues["broken.hidden.x200"] == issues["broken.hidden.x300"] == ["vacuous_capture"]
    assert "the pixels equal those of broken.hidden.x300 of the same sweep, whose ops differ" in out
    assert "the pixels equal those of broken.hidden.x200 of the same sweep" in out
    assert issues["broken.stack.x1"] == issues["broken.stack.x2"] == []
    result.assert_outcomes(passed=2, failed=6)
    assert {p.parent.name for p in (project.root / "goldens").rglob("*.png")} == {"broken.stack.x1",
                                                                                    "broken.stack.x2"}
    assert validate_run(project.run_json()) == []
    # The runner's peak resident memory per launch (result.json peak_rss_kb, from /proc on Linux): a Python
    # process with Skia and numpy loaded holds tens of MiB.
    for scene in scenes.values():
        peaks = [launch["peak_rss_kb"] for launch in scene["launches"]]
        assert len(peaks) == 2 and all(20_000 < peak < 2_000_000 for peak in peaks), peaks
        assert scene["peak_rss_kb"] == max(peaks)
