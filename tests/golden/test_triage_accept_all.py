"""`zbench goldens accept --all` and a rejected capture: --all takes untriaged captures only, and says so in one line
per rejected capture it leaves, with the command that accepts it over its rejection. A real session's capture."""

from __future__ import annotations

import shlex

import yaml

from pytest_zbench.cli import main

ROUND = "goldens/software/x86_64/round.one"
ROUND_GOLDEN = ("--zbench-device=local", "-k", "golden and round", "--zbench-goldens-only")


def zbench(project, monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    monkeypatch.chdir(project.root)
    capsys.readouterr()  # what the sessions before printed
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_accept_all_leaves_a_rejected_capture_and_says_how_to_accept_it(project, monkeypatch, capsys):
    (project.root / "goldens").mkdir()
    project.run(*ROUND_GOLDEN, goldens=True).assert_outcomes(failed=1)  # no golden: untriaged
    code, _, err = zbench(project, monkeypatch, capsys, "goldens", "reject", str(project.results), "--all",
                          "--reason", "the corners are square")
    assert code == 0, err
    project.run(*ROUND_GOLDEN, goldens=True).assert_outcomes(failed=1)  # the same image, rejected now
    frame = project.run_json()["scenes"][0]["correctness"]["frames"][0]
    assert frame["triage"] == "rejected"
    triage_file = project.root / ROUND / "triage.yaml"
    before = triage_file.read_text()

    code, out, err = zbench(project, monkeypatch, capsys, "goldens", "accept", str(project.results), "--all")
    assert (code, err) == (1, "")  # nothing accepted
    command = f"zbench goldens accept {project.results} --device local --scene round.one --frame 0"
    assert out.splitlines() == [f"skipped: round.one frame 0 on local ({frame['digest'][:12]}) is rejected, and "
                                f"--all takes untriaged captures only; to accept it over its rejection: {command}"]
    assert triage_file.read_text() == before

    code, out, err = zbench(project, monkeypatch, capsys, *shlex.split(command)[1:])  # the line's own command
    assert code == 0, err
    assert f"accepted: round.one frame 0 on local ({frame['digest'][:12]})" in out
    assert yaml.safe_load(triage_file.read_text()) == {"frame-0": {"accepted": [frame["digest"]]}}
