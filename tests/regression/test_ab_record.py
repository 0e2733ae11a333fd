"""An A/B scene's record of B is as complete as A's: run.json `ab.metrics_b` holds the scene-level figures A's
`metrics` holds (jank, jank share, slow and frozen frames, counters, fps, overrun), not only the timing series.
Before, B had cpu_ms, frame_ms and interval_ms alone."""

from __future__ import annotations

from test_gate_plugin import write_inventory

from pytest_zbench.host.report.markdown_summary import render_summary
from pytest_zbench.stats import SCENE_FIGURES


def test_b_has_every_scene_figure_a_has(project):
    write_inventory(project, local=0)
    project.run("--zbench-mode=uncapped", "-k", "mini.fill.x1",
                "--zbench-ab=python -m pytest_zbench.runner --cpu-burn-ms 0").assert_outcomes(passed=1)
    (scene,) = [s for s in project.run_json()["scenes"] if s["id"] == "mini.fill.x1"]
    a, b = scene["metrics"], scene["ab"]["metrics_b"]
    assert set(a) == set(b), set(a) ^ set(b)
    for name in SCENE_FIGURES:
        assert name in b, name
    assert isinstance(b["jank_share"], float) and isinstance(b["fps"], float) and b["fps"] > 0
    assert b["cpu_ms"]["runs"] == scene["ab"]["complete_runs_b"]


BUILT_RUNNER = """\
import json, os, subprocess, sys
# The reference runner, reporting the build {build!r} in its probe as an engine's runner does.
if sys.argv[1] == "probe":
    probe = json.loads(subprocess.run([sys.executable, "-m", "pytest_zbench.runner", "probe"], check=True,
                                      capture_output=True, text=True).stdout)
    print(json.dumps(dict(probe, build={build!r})))
else:
    os.execv(sys.executable, [sys.executable, "-m", "pytest_zbench.runner", *sys.argv[1:]])
"""


def test_both_builds_of_an_ab_are_named_in_every_record(project, tmp_path):
    """Before, run.json's app and the summary named A's build alone (a pull request's merge base), and the
    head's commit B appeared nowhere."""
    builds = {"a": {"id": "a" * 40, "dirty": False, "describe": "v1.0"},
              "b": {"id": "b" * 40, "dirty": True, "describe": "v1.0-1-gbbbbbbb"}}
    for side, build in builds.items():
        (project.root / f"runner_{side}.py").write_text(BUILT_RUNNER.format(build=build))
    (project.root / "devices.yaml").write_text(
        "devices:\n  local:\n    transport: local\n    backend: software\n"
        f"    runner: [python, {str(project.root / 'runner_a.py')!r}]\n"
        "    display: {width: 160, height: 120, refresh_hz: 60}\n")
    junit = tmp_path / "junit.xml"
    project.run("--zbench-mode=uncapped", "-k", "mini.fill.x1", f"--junitxml={junit}",
                f"--zbench-ab=python {project.root / 'runner_b.py'}").assert_outcomes(passed=1)
    document = project.run_json()
    assert document["app"]["build_hash"] == "a" * 40
    assert document["app"]["ab_builds"] == {"local": builds}
    (scene,) = [s for s in document["scenes"] if s["id"] == "mini.fill.x1"]
    assert (scene["ab"]["build_a"], scene["ab"]["build_b"]) == (builds["a"], builds["b"])
    junit_text = junit.read_text()
    assert 'name="zbench_build_b" value="bbbbbbbbbbbb (dirty, v1.0-1-gbbbbbbb)"' in junit_text
    assert 'name="zbench_build_a" value="aaaaaaaaaaaa (v1.0)"' in junit_text
    assert "B <code>bbbbbbbbbbbb (dirty, v1.0-1-gbbbbbbb)</code> against A <code>aaaaaaaaaaaa (v1.0)</code>" in (
        project.results / "report.html").read_text()
    summary = render_summary([document])
    assert "A/B on local: B bbbbbbbbbbbb (dirty, v1.0-1-gbbbbbbb) against A aaaaaaaaaaaa (v1.0)" in summary, summary
