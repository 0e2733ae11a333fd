"""`zbench compare --fail-on` end to end on two one-off runs of the reference runner (docs/regression.md,
"zbench compare"): a build burning 3 ms per frame fails cpu_ms.p50:10 %, the same build passes.

Statistical, not timed: a small uncapped scene (160x120, 4 + 40 frames), 5 launches per run, no gate.
"""

from __future__ import annotations

import shutil

import pytest
from test_busy_host_gate import write_inventory

from pytest_zbench.cli import main

pytestmark = [pytest.mark.acceptance, pytest.mark.exclusive]

RUN = ["--zbench-runs=5", "--zbench-frames=40", "--zbench-warmup=4", "--zbench-mode=uncapped", "-k", "mini.fill.x1"]


def test_compare_fails_on_a_3ms_burn_and_passes_the_same_build(project, tmp_path, capsys):
    files = {}
    for name, burn in (("a", 0), ("same", 0), ("burn", 3)):
        write_inventory(project, burn)
        project.run(*RUN).assert_outcomes(passed=1)
        files[name] = tmp_path / f"{name}.json"
        shutil.copy(project.results / "run.json", files[name])
    assert main(["compare", str(files["a"]), str(files["burn"]), "--fail-on", "cpu_ms.p50:10%"]) == 1
    out = capsys.readouterr().out
    assert "local/mini.fill.x1" in out and "limit 10%: FAILED" in out and "(95% CI " in out
    assert main(["compare", str(files["a"]), str(files["same"]), "--fail-on", "cpu_ms.p50:10%"]) == 0
    assert "limit 10%: ok" in capsys.readouterr().out
