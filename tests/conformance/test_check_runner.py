"""`zbench check-runner` end to end: the reference runner on both backends and the rect-only third-party
runner pass; each broken runner of tests/conformance/broken/ fails exactly the check of the rule it breaks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pytest_zbench.conformance import ORDER, check_runner
from pytest_zbench.inventory import load_inventory
from pytest_zbench.schema import violations

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BROKEN = HERE / "broken"
RECT_RUNNER = REPO / "tests" / "thirdparty" / "rect_runner.py"
DISPLAY = {"width": 800, "height": 480, "refresh_hz": 60}

# broken runner -> the one check it must fail
BROKEN_RUNNERS = {
    "probe_protocol": "probe.protocol",
    "probe_schema": "probe.schema",
    "probe_build": "probe.schema",
    "probe_backend": "probe.backend",
    "job_runs": "job.runs",
    "result_schema": "result.schema",
    "frames_header": "frames.header",
    "frames_rows": "frames.rows",
    "frames_phases": "frames.phases",
    "t_start_us": "frames.t_start",
    "cpu_us": "frames.cpu_units",
    "cpu_s": "frames.cpu_units",
    "gpu_source": "frames.gpu_source",
    "stolen_ms": "frames.stolen_ms",
    "pacing_paced": "pacing.paced",
    "pacing_uncapped": "pacing.uncapped",
    "feature_render": "feature.rrect",
    "capture_written": "capture.written",
    "capture_format": "capture.format",
    "capture_determinism": "capture.determinism",
    "capture_reference": "capture.reference",
    "complexity": "complexity",
    "unknown_feature": "job.unknown_feature",
    "malformed": "job.malformed",
    "sigterm_ignored": "signal.sigterm",
    "sigterm_buffered": "signal.sigterm",
    "sigterm_rows_lost": "signal.sigterm",
    "progress": "progress",
    "outdir": "outdir.confined",
}


def spec_for(tmp_path: Path, runner: list[str], **extra):
    entry = {"transport": "local", "backend": "software", "runner": runner, "display": DISPLAY, **extra}
    path = tmp_path / "devices.yaml"
    path.write_text(yaml.safe_dump({"devices": {"dut": entry}}))
    return load_inventory(path).get("dut")


def statuses(report) -> dict[str, str]:
    return {r.name: r.status for r in report.results}


def test_every_rule_has_a_broken_runner_and_every_broken_runner_a_rule():
    scripts = {p.stem for p in BROKEN.glob("*.py") if not p.stem.startswith("_")}
    assert scripts == set(BROKEN_RUNNERS)
    caught = set(BROKEN_RUNNERS.values())
    # every check a runner can fail, except the features the broken runners do not list
    assert {n for n in ORDER if not n.startswith("feature.")} <= caught | {"feature.rrect"}


@pytest.mark.parametrize("name", sorted(BROKEN_RUNNERS))
def test_a_broken_runner_fails_exactly_the_check_of_its_rule(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)  # outdir.confined watches the current folder: only this test writes there
    spec = spec_for(tmp_path, ["python", str(BROKEN / f"{name}.py")])
    # The complexity fixture is the reference runner: its other features are not this test's business.
    features = frozenset({"rect", "repeat"}) if name == "complexity" else None
    report = check_runner(spec, features=features, scenes_dir=None, goldens_dir=None, keep=tmp_path / "keep")
    failed = [r.name for r in report.failed]
    assert failed == [BROKEN_RUNNERS[name]], "\n".join(report.lines())
    assert violations("check-runner", report.to_json()) == []
    assert report.failed[0].fix  # a failure says what to fix


def test_the_rect_only_runner_passes_with_the_other_features_not_applicable(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = spec_for(tmp_path, ["python", str(RECT_RUNNER)])
    report = check_runner(spec, scenes_dir=REPO / "scenes", goldens_dir=REPO / "goldens")
    got = statuses(report)
    assert report.passed, "\n".join(report.lines())
    assert got["feature.rect"] == "pass" and got["capture.reference"] == "pass"
    assert {n for n, s in got.items() if s == "n/a"} == {f"feature.{f}" for f in _features() if f != "rect"} | {
        "complexity", "frames.stolen_ms"}  # it does not write the optional stolen_ms
    assert set(got) == set(ORDER)


def _features() -> list[str]:
    from pytest_zbench.conformance.jobs import FEATURES

    return list(FEATURES)


def require_egl() -> None:
    """Skip without a headless EGL GLES2 context, except in CI (CI=true), where that is a failure."""
    sys.path.insert(0, str(REPO / "tests" / "gles2"))
    from gles2_support import egl_problem
    from parts import in_ci

    problem = egl_problem()
    if problem is not None:
        if in_ci():
            pytest.fail(f"no headless EGL GLES2 context in CI: {problem}", pytrace=False)
        pytest.skip(f"no headless EGL GLES2 context: {problem}")


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The CLI in `cwd` (a folder of the test's own: outdir.confined watches the current folder)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "pytest_zbench.cli", "check-runner", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.mark.acceptance
@pytest.mark.parametrize("device", ["local", "local-gles2"])
def test_the_reference_runner_passes_on_both_backends(tmp_path, device):
    if device == "local-gles2":
        require_egl()
    report_file = tmp_path / "report.json"
    done = run_cli("--device", device, "--json", str(report_file), "--devices", str(REPO / "devices.yaml"),
                   "--scenes", str(REPO / "scenes"), "--goldens", str(REPO / "goldens"), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"zbench check-runner: device {device}")
    assert len([l for l in lines if l.startswith("  pass ")]) == len(ORDER)
    assert f"runner of device {device} conforms: {len(ORDER)} passed, 0 failed, 0 not applicable" in lines[-2]
    report = json.loads(report_file.read_text())
    assert violations("check-runner", report) == []
    assert report["passed"] is True and report["counts"] == {"pass": len(ORDER), "fail": 0, "n/a": 0}
    assert [c["name"] for c in report["checks"]] == list(ORDER)
    # Each check's own launches are timed; a check judging the plain jobs' rows has none of its own.
    seconds = {c["name"]: c["seconds"] for c in report["checks"]}
    assert all(seconds[name] > 0 for name in ("probe.schema", "pacing.paced", "feature.rect", "signal.sigterm"))
    assert seconds["frames.rows"] is None and sum(filter(None, seconds.values())) <= report["wall_s"]
    assert "jobs sized to the device: a frame of the timing scene takes" in done.stdout


def test_a_failing_runner_exits_1_and_prints_what_to_fix(tmp_path):
    inventory = tmp_path / "devices.yaml"
    inventory.write_text(yaml.safe_dump({"devices": {"dut": {
        "transport": "local", "backend": "software", "runner": ["python", str(BROKEN / "progress.py")],
        "display": DISPLAY}}}))
    done = run_cli("--device", "dut", "--devices", str(inventory), "--features", "rect", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "  fail  progress" in out and "fix: print progress as one JSON object per line" in out
    assert "does NOT conform: " in out and "1 failed" in out


def test_bad_arguments_are_usage_errors(tmp_path):
    inventory = str(REPO / "devices.yaml")
    assert run_cli("--device", "nope", "--devices", inventory, cwd=tmp_path).returncode == 2
    done = run_cli("--device", "local", "--devices", inventory, "--features", "rect,sparkles", cwd=tmp_path)
    assert done.returncode == 2 and "sparkles" in done.stderr
