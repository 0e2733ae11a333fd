"""The triage commands a golden failure prints still work after later sessions: they name the session's run, which
`zbench goldens accept|reject` finds in the run archive once the next session has replaced the results folder.
Real sessions, real captures."""

from __future__ import annotations

import shlex

import pytest
import yaml

from pytest_zbench.cli import main

ROUND = "goldens/software/x86_64/round.one"
ROUND_GOLDEN = ("--zbench-device=local", "-k", "golden and round", "--zbench-goldens-only")
OTHER_SCENE = ("--zbench-device=local", "-k", "mini.fill.x1")  # a perf test: no round.one in its results


def printed(stdout: str, words: str) -> list[str]:
    """The command after `words` in a failure message, as a user would paste it: its arguments after `zbench`."""
    line = next(line for line in stdout.splitlines() if line.strip().startswith(words))
    command = shlex.split(line.split(words, 1)[1])
    assert command[:2] == ["zbench", "goldens"]
    return command[1:]


def zbench(project, monkeypatch, capsys, args: list[str]) -> tuple[int, str, str]:
    monkeypatch.chdir(project.root)
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.acceptance
def test_printed_commands_take_the_sessions_capture_after_a_later_session(project, monkeypatch, capsys):
    (project.root / "goldens").mkdir()
    failed = project.run(*ROUND_GOLDEN, goldens=True)
    failed.assert_outcomes(failed=1)  # no golden yet: an untriaged capture
    first = project.run_json()
    frame = first["scenes"][0]["correctness"]["frames"][0]
    assert (frame["status"], frame["triage"]) == ("missing", "untriaged")
    accept = printed(failed.stdout.str(), "accept this image:")
    reject = printed(failed.stdout.str(), "or reject it:")
    assert shlex.join(["zbench", *accept]) == frame["accept"]  # run.json and report.html give the same one
    assert frame["triage_note"] is None  # the archive keeps the session: nothing to warn of

    # The next session replaces the results folder: round.one's capture is only in the run archive now.
    project.run(*OTHER_SCENE).assert_outcomes(passed=1)
    assert project.run_json()["run_id"] != first["run_id"]
    assert not (project.results / "local" / "round.one").exists()

    reject[reject.index("--reason") + 1] = "the corners are square"
    code, out, err = zbench(project, monkeypatch, capsys, reject)
    assert code == 0, err
    assert f"rejected: round.one frame 0 on local ({frame['digest'][:12]})" in out
    code, out, err = zbench(project, monkeypatch, capsys, accept)  # an explicit accept overrides the reject
    assert code == 0, err
    assert f"accepted: round.one frame 0 on local ({frame['digest'][:12]})" in out
    triage = yaml.safe_load((project.root / ROUND / "triage.yaml").read_text())
    assert triage == {"frame-0": {"accepted": [frame["digest"]]}}  # the first session's image, none other
    assert (project.root / ROUND / "frame-0.png").is_file()
    assert accept[accept.index("--run") + 1] == first["run_id"][:12]  # the session, not the folder's latest


def test_without_the_run_archive_the_hint_says_how_long_its_commands_work(project, monkeypatch, capsys):
    (project.root / "goldens").mkdir()
    failed = project.run(*ROUND_GOLDEN, "--zbench-keep-runs=0", goldens=True)
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines([f"*no run archive: --zbench-keep-runs=0; these work until the next session writes "
                                 f"into {project.results}*"])
    frame = project.run_json()["scenes"][0]["correctness"]["frames"][0]
    assert "no run archive: --zbench-keep-runs=0" in frame["message"]  # run.json's failure message says it too
    assert frame["triage_note"].startswith("no run archive: --zbench-keep-runs=0; these work until")
    assert f"<p class='note triage-note'>{frame['triage_note']}</p>" in (project.results / "report.html").read_text()
    accept = printed(failed.stdout.str(), "accept this image:")

    project.run(*OTHER_SCENE, "--zbench-keep-runs=0").assert_outcomes(passed=1)
    code, _, err = zbench(project, monkeypatch, capsys, accept)
    assert code == 2
    assert f"run {accept[accept.index('--run') + 1]} is not its latest run" in err
    assert "the archive was off when it ran (--zbench-keep-runs=0)" in err
    assert not any((project.root / "goldens").iterdir())  # nothing taken from the later session instead
