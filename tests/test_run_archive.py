"""The run archive: a numbered folder per session with `latest` pointing at the newest, the default paths
still the latest run's, no stale files of an earlier run in a newer run's folder, pruning, `zbench runs`."""

from __future__ import annotations

import json

from pytest_zbench.cli import main
from pytest_zbench.run_archive import latest_folder


def test_each_session_gets_its_own_folder_and_the_oldest_are_pruned(project, capsys):
    goldens_only = ("--zbench-device=local", "--zbench-goldens-only", "--zbench-update-goldens=missing")
    first = project.run(*goldens_only, "-k", "mini", goldens=True)
    first.stdout.fnmatch_lines(["run archived in *runs/0001 (*files*"])
    archived = project.results / "runs" / "0001"
    assert (archived / "run.json").is_file() and (archived / "report.html").is_file()
    assert (archived / "local" / "mini.fill.x2").is_dir()
    assert latest_folder(project.results) == archived.resolve()

    second = project.run(*goldens_only, "-k", "round", "--zbench-keep-runs=2", goldens=True)
    second.assert_outcomes(passed=1)
    newest = project.results / "runs" / "0002"
    assert latest_folder(project.results) == newest.resolve()
    # The default paths are the latest run's; the earlier run's scene folders left <results> (they are in 0001)
    # and never came into 0002.
    assert json.loads((project.results / "run.json").read_text()) == json.loads((newest / "run.json").read_text())
    assert [s["id"] for s in project.run_json()["scenes"]] == ["round.one"]
    assert not (project.results / "local" / "mini.fill.x1").exists()
    assert not (newest / "local" / "mini.fill.x1").exists() and (newest / "local" / "round.one").is_dir()
    assert (archived / "local" / "mini.fill.x1").is_dir()

    third = project.run(*goldens_only, "-k", "round", "--zbench-keep-runs=2", goldens=True)
    third.stdout.fnmatch_lines(["run archived in *runs/0003*; 1 older run(s) pruned*"])
    assert sorted(p.name for p in (project.results / "runs").iterdir()) == ["0002", "0003"]

    capsys.readouterr()  # what pytester printed
    assert main(["runs", "--results", str(project.results)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["run", "started", "(UTC)", "devices", "scenes", "passed", "failed"]
    assert [line.split()[0] for line in lines[1:]] == ["2", "3"]
    assert lines[-1].split()[2:6] == ["local", "1", "1", "0"] and lines[-1].endswith("<- latest")


def test_keep_runs_zero_keeps_no_archive(project):
    project.run("--zbench-device=local", "--zbench-goldens-only", "-k", "round", "--zbench-keep-runs=0",
                goldens=True)
    assert (project.results / "run.json").is_file()
    assert not (project.results / "runs").exists() and not (project.results / "latest").exists()


def test_no_archive_where_its_clean_up_could_remove_project_files(tmp_path):
    from pytest_zbench.run_archive import archive_refusal

    root = tmp_path / "project"
    goldens = root / "goldens"
    assert archive_refusal(root / "zbench-results", root, (goldens,)) is None
    assert "project's root" in (archive_refusal(root, root, (goldens,)) or "")
    assert "project's root" in (archive_refusal(tmp_path, root, (goldens,)) or "")
    assert "holds" in (archive_refusal(root / "out", root, (root / "out" / "goldens",)) or "")


def test_keep_runs_is_a_count(tmp_path):
    import pytest

    from pytest_zbench.errors import UsageError
    from pytest_zbench.settings import build_settings

    def settings(value):
        return build_settings(lambda option: value if option.name == "keep_runs" else None, tmp_path, quick=False)

    assert settings(None).keep_runs == 20 and settings("0").keep_runs == 0
    with pytest.raises(UsageError, match="--zbench-keep-runs: -1 must be at least 0"):
        settings("-1")
