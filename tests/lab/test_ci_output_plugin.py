"""The plugin in a CI log: plain progress lines instead of backspaces, GitHub annotations for failed scene
tests under GITHUB_ACTIONS=true, exit codes unchanged."""

from __future__ import annotations

import pytest


def test_off_a_terminal_progress_is_plain_lines_and_without_github_no_annotations(project, monkeypatch):
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    result = project.run("-k", "mini.fill.x1", goldens=True)  # a subprocess writing to a pipe; no goldens yet
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = result.stdout.str()
    progress = [line for line in result.outlines if line.startswith("zbench: mini.fill.x1 launch ")]
    assert progress, text
    assert all(" frame " in line and line.endswith("into the session)") for line in progress)
    assert "\b" not in text and "\r" not in text
    assert not any(line.startswith("::") for line in result.outlines)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["no-xdist", "xdist"])
def test_failed_scene_tests_become_github_annotations(project, monkeypatch, workers):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = project.run("-k", "mini.fill", *workers, goldens=True)  # the project has no goldens: they fail
    result.assert_outcomes(passed=2, failed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    errors = sorted(line for line in result.outlines if line.startswith("::error"))
    assert len(errors) == 2, result.stdout.str()
    for line, scene in zip(errors, ("mini.fill.x1", "mini.fill.x2")):
        assert line.startswith(f"::error file=scenes/mini.yaml,title=golden[{scene}-local] failed::"
                               f"golden test of scene {scene} on device local failed:%0A")
        assert "no golden at" in line and "--zbench-update-goldens=missing" in line
