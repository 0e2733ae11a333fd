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


def test_two_sessions_in_one_results_folder_each_archive_only_their_own_files(tmp_path):
    # Before: each archive took every file changed since it started, whoever wrote it: both runs' folders held
    # the run.json written last, and the other session's was lost.
    from pytest_zbench.run_archive import _snapshot, archive_run

    results = tmp_path / "results"
    results.mkdir()

    def document(run_id: str, scene: str) -> dict:
        return {"run_id": run_id, "devices": {"box": {}}, "scenes": [{"device": "box", "id": scene}]}

    def write_session(run_id: str, scene: str) -> None:
        (results / "box" / scene / "launch-0").mkdir(parents=True)
        (results / "box" / scene / "launch-0" / "result.json").write_text(json.dumps({"run": run_id}))
        (results / "box" / f"{scene}.frames.csv").write_text(f"frame,{run_id}\n")
        (results / "run.json").write_text(json.dumps(document(run_id, scene)))
        (results / "report.html").write_text(f"<p>{run_id}</p>")

    first_before = _snapshot(results)
    second_before = _snapshot(results)  # both started before either wrote anything
    write_session("run-a", "scene.a")  # a finishes first ...
    write_session("run-b", "scene.b")  # ... b writes results/run.json after it, before a archives
    a = archive_run(results, first_before, 5, document("run-a", "scene.a"))
    b = archive_run(results, second_before, 5, document("run-b", "scene.b"))
    assert a is not None and b is not None
    assert json.loads((a.folder / "run.json").read_text())["run_id"] == "run-a"
    assert json.loads((b.folder / "run.json").read_text())["run_id"] == "run-b"
    files_a = sorted(p.relative_to(a.folder).as_posix() for p in a.folder.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b.folder).as_posix() for p in b.folder.rglob("*") if p.is_file())
    assert [f for f in files_a if f.startswith("box/")] == ["box/scene.a.frames.csv",
                                                            "box/scene.a/launch-0/result.json"]
    assert [f for f in files_b if f.startswith("box/")] == ["box/scene.b.frames.csv",
                                                            "box/scene.b/launch-0/result.json"]
    assert "run-b" not in (a.folder / "report.html").read_text() if (a.folder / "report.html").exists() else True
    assert (b.folder / "report.html").read_text() == "<p>run-b</p>"
    # Nothing measured was removed from results/ by the other's archive
    assert (results / "box" / "scene.a.frames.csv").is_file() and (results / "box" / "scene.b.frames.csv").is_file()
