"""`zbench engines` and the published site's engines page on three real engines measured on this machine: the
reference runner on Skia raster (`local`), on Skia Ganesh over llvmpipe (`local-gles2`) and the C kit's
zbench-gles2 (`local-native`, built by ci/native-devices.sh), each in a real pytest session; the figures checked
against the sessions' run.json, the pages loaded in headless Chromium. Plus the command's errors and the
ratio's rules on plain values."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from browser import load, screenshot
from parts import require

from pytest_zbench.cli import main
from pytest_zbench.side_by_side.table import Cell, Engine, Ratio, cell, side_by_side

REPO = Path(__file__).resolve().parents[1]
NATIVE = REPO / "build" / "native" / "host" / "zbench-gles2"
ENGINES = ("local", "local-gles2", "local-native")

# Rects every engine draws, and a path the native runner does not (its probe lists no path).
SCENES_RECT = """\
family: mini
description: translucent fills
scenes:
  - id: mini.fill.x{layers}
    sweep: {layers: [1, 2]}
    ops:
      - unroll: "{layers}"
        ops:
          - {op: rect, x: 1, y: 1, w: "100% - 2", h: "100% - 2", color: "#3366CC80"}
"""
SCENES_ROUNDED = """\
family: round
description: needs path
scenes:
  - id: round.one
    ops:
      - {op: path, points: [[4, 24], [24, 4], [44, 24]], closed: true, color: "#CC3366"}
"""
# As many translucent full-surface rects as a frame holds: an adaptive scene, compared by its score.
SCENES_ADAPTIVE = """\
family: adapt
description: an adaptive fill
scenes:
  - id: adapt.fill
    complexity: {unit: layers, capture: 2, max: 3000}
    ops:
      - op: repeat
        count: complexity
        ops:
          - {op: rect, x: 1, y: 1, w: "100% - 2", h: "100% - 2", color: "#3366CC20"}
"""

INVENTORY = f"""\
devices:
  local:
    transport: local
    backend: software
    runner: [{json.dumps(sys.executable)}, -m, pytest_zbench.runner]
    display: {{width: 320, height: 240, refresh_hz: 60}}
  local-gles2:
    transport: local
    backend: gles2
    runner: [{json.dumps(sys.executable)}, -m, pytest_zbench.runner]
    env: {{ZBENCH_GPU_TIMER: finish_bracket}}
    display: {{width: 320, height: 240, refresh_hz: 60}}
  local-native:
    transport: local
    backend: gles2
    runner: [{json.dumps(str(NATIVE))}]
    env: {{ZBENCH_GPU_TIMER: finish_bracket}}
    display: {{width: 320, height: 240, refresh_hz: 60}}
"""


def measure_engines(root: Path) -> Path:
    """One real session per engine in `root`, uncapped, three launches a scene; their results folders in it."""
    require(NATIVE.is_file(), "the native runner zbench-gles2 (bash ci/native-devices.sh)")
    probe = subprocess.run([str(NATIVE), "probe"], capture_output=True, text=True, timeout=60)
    require('"gles2"' in probe.stdout, f"a headless EGL GLES2 context (Mesa): {probe.stderr.strip()[-300:]}")
    (root / "scenes").mkdir(parents=True)
    for name, text in (("mini.yaml", SCENES_RECT), ("round.yaml", SCENES_ROUNDED), ("adapt.yaml", SCENES_ADAPTIVE)):
        (root / "scenes" / name).write_text(text)
    (root / "devices.yaml").write_text(INVENTORY)
    (root / "pytest.ini").write_text("[pytest]\ntestpaths = scenes\n")
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "ZBENCH_HISTORY_URL")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    for device in ENGINES:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "zbench_perf", "-q",
             f"--zbench-device={device}", "--zbench-runs=3", "--zbench-frames=20", "--zbench-warmup=3",
             "--zbench-mode=uncapped", f"--zbench-results={root / device}",
             f"--zbench-history={root / 'history.sqlite'}"],
            cwd=root, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return root


@pytest.mark.acceptance
def test_three_real_engines_side_by_side_in_the_command_and_the_published_site(tmp_path, capsys, record_property):
    """One test, so that the three sessions (about 3 minutes here) run once under xdist too."""
    runs = measure_engines(tmp_path / "runs")
    record_property("screenshot", str(check_command(runs, tmp_path / "command", capsys)))
    check_site(runs, tmp_path / "site", capsys)
    check_refusals(runs, capsys)
    check_report_of_a_run_on_two_engines(runs, tmp_path)


def median_ratio(engine: dict, reference: dict, metric: str) -> float:
    """The ratio recomputed from the two run.json entries: median over complete launches, engine / reference."""
    def values(entry: dict) -> list[float]:
        out = []
        for launch in entry["per_run"]:
            value = launch
            for part in metric.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            if isinstance(value, (int, float)) and not launch.get("partial"):
                out.append(float(value))
        return out

    return float(np.median(values(engine)) / np.median(values(reference)))


def check_command(runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """`zbench engines` over the three runs: the terminal, engines.json against run.json, engines.html in
    Chromium; returns the page's screenshot."""
    out = tmp_path / "out"
    # A results folder or its run.json, mixed.
    assert main(["engines", str(runs / "local"), str(runs / "local-gles2" / "run.json"), str(runs / "local-native"),
                 "--reference", "local", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    documents = {d: json.loads((runs / d / "run.json").read_text()) for d in ENGINES}
    entries = {d: {s["id"]: s for s in documents[d]["scenes"]} for d in ENGINES}

    # The terminal: the reference first under each scene, the native runner's skip of path with its reason.
    assert text.startswith("reference: local (software, zbench-reference")
    assert "round.one" in text and "local-native  skipped: scene round.one needs feature(s) path" in text
    assert "4 scene(s), 3 engine(s); 1 skipped, 0 failed, 0 not run" in text

    found = json.loads((out / "engines.json").read_text())
    assert found["reference"] == "local" and [e["name"] for e in found["engines"]] == list(ENGINES)
    scenes = {s["id"]: s["engines"] for s in found["scenes"]}
    assert sorted(scenes) == ["adapt.fill", "mini.fill.x1", "mini.fill.x2", "round.one"]
    for scene in ("mini.fill.x1", "mini.fill.x2", "round.one"):
        for device in ENGINES:
            got = scenes[scene][device]
            if (scene, device) == ("round.one", "local-native"):
                assert got["status"] == "skipped" and "path" in got["reason"] and got["ratio"] is None
                continue
            recorded = entries[device][scene]["metrics"]["frame_ms"]
            assert got["status"] == "measured" and got["launches"] == 3
            assert (got["frame_ms"]["p50"], got["frame_ms"]["p95"]) == (recorded["p50"], recorded["p95"])
            assert got["jank_share"] == entries[device][scene]["metrics"]["jank_share"]
            if device == "local":
                assert got["ratio"] is None
                continue
            ratio = got["ratio"]
            expected = median_ratio(entries[device][scene], entries["local"][scene], "frame_ms.p50")
            assert ratio["metric"] == "frame_ms.p50" and ratio["launches"] == [3, 3]
            # The ratio of two medians of 3, rounded to 6 digits in the file.
            assert ratio["value"] == pytest.approx(expected, rel=1e-5)
            lo, hi = ratio["ci"]
            assert lo <= ratio["value"] <= hi
            assert ratio["direction"] == ("slower" if lo > 1 else "faster" if hi < 1 else "no clear difference")
    # The adaptive scene: each engine's score and interval as run.json has them; the ratio is the score's.
    for device in ENGINES:
        adaptive = entries[device]["adapt.fill"]["adaptive"]
        got = scenes["adapt.fill"][device]
        assert got["adaptive"]["score"] == adaptive["score"] and got["adaptive"]["ci"] == adaptive["ci"]
        if device == "local":
            continue
        scores = [*adaptive["per_run_scores"], *entries["local"]["adapt.fill"]["adaptive"]["per_run_scores"]]
        if min(scores) <= 0:  # a launch over budget at every step scores 0 (a loaded machine): no ratio, and why
            assert got["ratio"] is None and "adaptive.score is 0 or below" in got["reason"]
            continue
        assert got["ratio"]["metric"] == "adaptive.score"
        assert got["ratio"]["value"] == pytest.approx(
            median_ratio(entries[device]["adapt.fill"], entries["local"]["adapt.fill"], "adaptive.score"), rel=1e-5)

    page = out / "engines.html"
    loaded = load(page, tmp_path / "profile")
    assert loaded.console == []
    dom = loaded.dom
    assert dom.count("<tr data-scene=") == 4 and dom.count("data-status=\"skipped\"") == 1
    ratios = sum(1 for s in scenes.values() for c in s.values() if c["ratio"] is not None)
    assert dom.count("<svg class=\"strip\"") == ratios and ratios >= 5  # and the adaptive scene's, when it has them
    assert "report.html" in dom and (runs / "local" / "report.html").is_file()
    png = screenshot(page, tmp_path / "engines.png", tmp_path / "profile", width=1300, height=1100)
    print(f"screenshot: {png}")
    return png


def check_site(runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`zbench publish` over the three results folders: an engines page, linked from the index."""
    site = tmp_path / "site"
    assert main(["publish", "--history", str(runs / "history.sqlite"), "--out", str(site), "--jobs", "1",
                 *[arg for d in ENGINES for arg in ("--results", str(runs / d))]]) == 0
    index = (site / "index.html").read_text()
    assert "<h2>Engines side by side</h2>" in index
    (page,) = (site / "engines").glob("*.html")
    assert f"href='engines/{page.name}'" in index
    # The reference: the engine that measured the most scenes (the native runner skips round.one).
    text = page.read_text()
    assert "reference <b>local" in text and "<a href='../index.html'>all devices</a>" in text
    loaded = load(page, tmp_path / "profile")
    assert loaded.console == [] and loaded.dom.count("<tr data-scene=") == 4
    # Each engine's report.html linked from the page, relative to it: the archived run's.
    links = [line.split("'")[1] for line in text.split("<a href=")[2:]]
    assert len(links) == 3 and all((page.parent / link).resolve().is_file() for link in links)


def check_report_of_a_run_on_two_engines(runs: Path, tmp_path: Path) -> None:
    """One session on two devices: its report.html holds the engines side by side, the first device the reference."""
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "ZBENCH_HISTORY_URL")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    results = runs / "both"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "zbench_perf", "-q", "-k",
         "mini.fill.x1 or round.one", "--zbench-device=local,local-native", "--zbench-runs=2", "--zbench-frames=10",
         "--zbench-warmup=2", "--zbench-mode=uncapped", f"--zbench-results={results}", "--zbench-baseline=none"],
        cwd=runs, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    text = (results / "report.html").read_text()
    assert text.count("<section id=engines-side-by-side>") == 1 and "reference <b>local</b>" in text
    loaded = load(results / "report.html", tmp_path / "profile")
    assert loaded.console == []
    section = loaded.dom.split('<section id="engines-side-by-side">')[1].split("</section>")[0]
    assert section.count("<tr data-scene=") == 2 and section.count('data-status="skipped"') == 1
    assert section.count('<svg class="strip"') == 1 and "needs feature(s) path" in section
    # A run on one device has no such section.
    assert "engines-side-by-side" not in (runs / "local" / "report.html").read_text()


def check_refusals(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One engine in two runs, an unknown reference, a single engine: one-line usage errors."""
    local = str(runs / "local")
    assert main(["engines", local, local]) == 2
    assert "device 'local' is in both" in capsys.readouterr().err
    assert main(["engines", local, str(runs / "local-native"), "--reference", "zinc"]) == 2
    assert "--reference zinc: not an engine of these runs (engines: local, local-native)" in capsys.readouterr().err
    assert main(["engines", local]) == 2
    assert "side by side needs at least two" in capsys.readouterr().err


def test_bad_inputs_are_one_line_errors(tmp_path, capsys):
    assert main(["engines", str(tmp_path / "none.json"), str(tmp_path)]) == 2
    assert "none.json: no such file or folder" in capsys.readouterr().err
    assert main(["engines", str(tmp_path), str(tmp_path)]) == 2
    assert "a folder without run.json" in capsys.readouterr().err
    (tmp_path / "run.json").write_text('{"scenes": []}')
    assert main(["engines", str(tmp_path / "run.json"), str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a run.json of this version" in err
    (tmp_path / "file").write_text("")
    assert main(["engines", str(tmp_path), str(tmp_path), "--out", str(tmp_path / "file")]) == 2
    assert "is a file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["engines", str(tmp_path), "--metric", "fps"])
    assert "unknown metric 'fps'" in capsys.readouterr().err


def engine(name: str, scenes: dict) -> Engine:
    return Engine(name, "software", "r 1", "x", "m", "run" + name, "2026-01-01", Path(f"{name}.json"), None, scenes)


def entry(values: list[float], mode: str = "uncapped") -> dict:
    return {"id": "s", "mode": mode, "surface": {"width": 8, "height": 8}, "params": {},
            "metrics": {"frame_ms": {"p50": float(np.median(values)) if values else None,
                                     "p95": max(values, default=None)}, "jank_share": 0.0},
            "per_run": [{"frame_ms": {"p50": v}, "partial": False} for v in values]}


def test_the_ratio_needs_the_same_settings_and_says_a_direction_only_when_its_interval_shows_one():
    ref = engine("ref", {"s": entry([2.0, 2.1, 1.9])})
    slow = cell(engine("slow", {"s": entry([4.0, 4.2, 3.8])}), ref, "s", "frame_ms.p50")
    assert slow.ratio is not None and slow.ratio.value == pytest.approx(2.0, rel=1e-9)
    assert slow.ratio.direction == "slower" and slow.ratio.ci is not None and slow.ratio.ci[0] > 1
    paced = cell(engine("paced", {"s": entry([4.0, 4.2, 3.8], mode="paced")}), ref, "s", "frame_ms.p50")
    assert paced.ratio is None and "mode paced here, uncapped on the reference ref" in paced.reason
    one = cell(engine("one", {"s": entry([1.0])}), ref, "s", "frame_ms.p50")
    assert one.ratio is not None and one.ratio.ci is None and one.ratio.direction == "no clear difference"
    assert one.ratio.text() == "0.500x [one launch: no CI]"
    # Higher is better for a score: a score above the reference's is faster.
    assert Ratio("adaptive.score", 2.0, (1.5, 2.5), (3, 3)).direction == "faster"
    assert Ratio("frame_ms.p50", 0.5, (0.4, 1.2), (3, 3)).direction == "no clear difference"
    absent = cell(engine("absent", {}), ref, "s", "frame_ms.p50")
    assert absent == Cell("absent", "not_run", absent.reason) and "not selected" in absent.reason
    table = side_by_side([engine("a", {"s": entry([1.0, 1.1])}), ref], reference="ref")
    assert [e.name for e in table.engines] == ["ref", "a"] and table.notes == ()
    # The medians are taken on the log scale, as the gate takes them: of two launches, their geometric mean.
    assert math.isclose(table.rows[0].cells[1].ratio.value, math.sqrt(1.0 * 1.1) / 2.0,  # type: ignore[union-attr]
                        rel_tol=1e-9)


def test_a_scene_without_figures_says_why_and_other_machines_are_a_note():
    ref = engine("ref", {"s": entry([2.0, 2.1, 1.9])})
    declined = dict(entry([]), issues=[{"kind": "feature_skipped", "detail": "blur: not drawn by this engine"}])
    crashed = dict(entry([]), outcome="failed", issues=[{"kind": "error", "detail": "runner exited with 139"}])
    partial = dict(entry([1.0]), per_run=[{"frame_ms": {"p50": 1.0}, "partial": True}])
    got = {name: cell(engine(name, {"s": e}), ref, "s", "frame_ms.p50")
           for name, e in (("declined", declined), ("crashed", crashed), ("partial", partial))}
    assert (got["declined"].status, got["declined"].reason) == ("skipped",
                                                                "the runner skipped it: blur: not drawn by this engine")
    assert (got["crashed"].status, got["crashed"].reason) == ("failed",
                                                              "no complete launch (error: runner exited with 139)")
    assert got["partial"].status == "failed" and got["partial"].ratio is None
    elsewhere = Engine("pi", "gles2", "r 1", "x", "Cortex-A53, aarch64, 4 cores", "runpi", "2026-01-01",
                       Path("pi.json"), None, {"s": entry([8.0, 8.0, 8.0])})
    table = side_by_side([ref, elsewhere])
    (note,) = table.notes
    assert note.startswith("not one machine: the engines ran on ref: m; pi: Cortex-A53")
    assert table.rows[0].cells[1].ratio is not None  # still shown, under the note
