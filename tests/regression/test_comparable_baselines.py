"""A baseline measured another way is refused, never judged (docs/regression.md, "Comparable runs"): a
`--zbench-goldens-only` run (one frame, no warmup) as `--zbench-baseline` or as `zbench compare`'s A gives
"not comparable" naming the difference, and `--fail-on` is not applied across it. Before, the first said
`inconclusive 0.07x` and the second failed a build at 14.8x."""

from __future__ import annotations

import shutil

from test_gate_plugin import regression, write_inventory

from pytest_zbench.cli import main
from pytest_zbench.regression.baseline import MEASURED_ALIKE, differences

QUICK = ["--zbench-runs=3", "--zbench-frames=30", "--zbench-warmup=2", "--zbench-mode=uncapped", "-k", "mini.fill.x1"]


def test_a_goldens_only_run_is_not_a_baseline_for_a_measured_one(project, tmp_path, capsys):
    write_inventory(project, local=0)
    # As a user types it: no frame counts given, so the goldens-only preset's (project.run gives its own)
    project.pytester.runpytest_subprocess(f"--zbench-results={project.results}", "-p", "no:cacheprovider",
                                          "--zbench-goldens-only", "--zbench-update-goldens", "-k", "mini.fill.x1",
                                          timeout=300).assert_outcomes(passed=1)
    goldens_only = tmp_path / "goldens-only.json"
    shutil.copy(project.results / "run.json", goldens_only)
    entry = next(s for s in project.run_json()["scenes"] if s["id"] == "mini.fill.x1")
    assert (entry["measured_frames"], entry["warmup_frames"], entry["seed"]) == (1, 0, 1)

    project.run(*QUICK, f"--zbench-baseline={goldens_only}").assert_outcomes(passed=1)
    section = regression(project.run_json(), "mini.fill.x1")
    assert section["verdict"] == "not_judged", section
    assert "not comparable" in section["message"] and "measured_frames 1 there, 30 here" in section["message"]
    assert "warmup_frames 0 there, 2 here" in section["message"]
    measured = tmp_path / "measured.json"
    shutil.copy(project.results / "run.json", measured)

    capsys.readouterr()
    assert main(["compare", str(goldens_only), str(measured), "--fail-on", "cpu_ms.p50:10%"]) == 2
    captured = capsys.readouterr()
    assert "local/mini.fill.x1: not comparable: " in captured.out and "measured_frames 1 there, 30 here" in captured.out
    assert "FAILED" not in captured.out and "nothing was judged" in captured.err


def test_what_must_match_is_named_and_a_key_an_older_file_lacks_is_not_held_against_it():
    ours = {"backend": "software", "mode": "uncapped", "params": {}, "gpu_source": None,
            "surface": {"width": 160, "height": 120}, "warmup_frames": 2, "measured_frames": 30, "seed": 1}
    assert tuple(ours) == MEASURED_ALIKE
    assert differences(dict(ours), ours) == []
    older = {k: v for k, v in ours.items() if k != "seed"}  # run.json written before the seed was recorded
    assert differences(older, dict(ours, seed=7)) == []
    assert differences(dict(ours, surface={"width": 320, "height": 240}), ours) == [
        "surface {'width': 320, 'height': 240} there, {'width': 160, 'height': 120} here"]
    assert differences(dict(ours, seed=2), ours) == ["seed 2 there, 1 here"]
