"""The build under test from the runner (docs/native-runner.md, "Build identity"): the probe's `build` key is
validated, recorded as app.build_hash with its source, and a device's history runs go by its runner's build, or
by the session's build and the runner's argv when the runner reports none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_zbench.host.devices.environment import app_info, runner_build, runner_toolchain
from pytest_zbench.host.run_record import RunRecord
from pytest_zbench.host.verdicts.perf_gate import runner_identity
from pytest_zbench.protocol import ProtocolError, RunnerBuild, Toolchain, parse_probe_output
from pytest_zbench.regression.conditions import build_note

PROBE = {"protocol": 1, "runner": {"name": "zinc-bench", "version": "2.1"},
         "backends": {"gles2": {"features": ["rect"], "timer_sources": ["finish_bracket"]}}}


def probe_with(build: object) -> str:
    return json.dumps({**PROBE, "build": build})


def test_the_probe_build_is_parsed_and_a_bad_one_is_named():
    probe = parse_probe_output(probe_with({"id": " abc123 ", "dirty": True, "describe": "v2.1-3-gabc123"}))
    assert probe.build == RunnerBuild("abc123", True, "v2.1-3-gabc123")
    assert parse_probe_output(json.dumps(PROBE)).build is None
    for bad, key in (({"id": ""}, "build.id"), ({"id": "a", "dirty": "yes"}, "build.dirty"),
                     ({"id": "a", "describe": 3}, "build.describe"), ("abc", "key 'build'")):
        with pytest.raises(ProtocolError, match=key):
            parse_probe_output(probe_with(bad))


def test_the_probe_toolchain_becomes_app_compiler_and_flags():
    probe = parse_probe_output(json.dumps({**PROBE, "toolchain": {"compiler": "gcc 12.2.0", "flags": "-O2 -g"}}))
    assert probe.toolchain == Toolchain("gcc 12.2.0", "-O2 -g")
    assert parse_probe_output(json.dumps(PROBE)).toolchain is None
    for bad, key in (({"compiler": 12}, "toolchain.compiler"), ({"flags": ["-O2"]}, "toolchain.flags"),
                     ("gcc", "key 'toolchain'")):
        with pytest.raises(ProtocolError, match=key):
            parse_probe_output(json.dumps({**PROBE, "toolchain": bad}))
    app = {"compiler": "", "flags": ""}
    runner_toolchain(app, "pi3b", Toolchain("gcc 12.2.0", "-O2"))
    runner_toolchain(app, "nexus7", Toolchain("clang 17", "-O3"))
    runner_toolchain(app, "old", None)
    assert (app["compiler"], app["flags"]) == ("gcc 12.2.0", "-O2")  # the first device's
    assert app["runner_toolchains"] == {"pi3b": {"compiler": "gcc 12.2.0", "flags": "-O2"},
                                        "nexus7": {"compiler": "clang 17", "flags": "-O3"}}


def test_app_build_says_where_it_comes_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ZBENCH_BUILD_HASH", "from-ci")
    app = app_info(tmp_path)
    assert (app["build_hash"], app["build_source"]) == ("from-ci", "env")
    runner_build(app, "pi3b", RunnerBuild("engine1", False, "v1"))
    runner_build(app, "nexus7", RunnerBuild("engine2", None, None))
    assert (app["build_hash"], app["build_source"], app["build_device"]) == ("engine1", "runner", "pi3b")
    assert app["runner_builds"] == {"pi3b": {"id": "engine1", "dirty": False, "describe": "v1"},
                                    "nexus7": {"id": "engine2", "dirty": None, "describe": None}}
    monkeypatch.delenv("ZBENCH_BUILD_HASH")
    outside_git = app_info(tmp_path)
    assert outside_git["build_source"] in ("harness checkout", "")


def record(devices: dict[str, dict[str, object]], app: dict[str, object]) -> RunRecord:
    return RunRecord(run_id="r", started_utc="2026-01-01T00:00:00+00:00", app=app, suite_version="0",
                     devices={name: {"gpu": {"runner": runner}} for name, runner in devices.items()})


def test_history_runs_go_by_the_runners_build_and_same_build_needs_the_same_runner():
    app = {"build_hash": "harness1", "dirty": False, "runner_builds": {"pi3b": {"id": "engine1", "dirty": True}}}
    rec = record({"pi3b": {"build": "engine1", "argv": ["/opt/zinc/zinc-bench"]},
                  "local": {"build": None, "argv": ["python", "-m", "pytest_zbench.runner"]},
                  "other": {"build": None, "argv": ["/opt/zinc/old-bench"]}}, app)
    assert runner_identity(rec, "pi3b") == ("engine1", True)
    assert runner_identity(rec, "local") == ("harness1", False)
    other, _ = runner_identity(rec, "other")
    assert other == "harness1 runner /opt/zinc/old-bench"
    # Two engine builds are two builds; the same harness with another runner binary is not "the same build".
    assert build_note("engine2", ["engine1"]) == ""
    assert build_note(other, ["harness1"]) == ""
    assert build_note(other, [other]).startswith("same build")
