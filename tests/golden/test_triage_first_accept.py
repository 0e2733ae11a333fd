"""The first accept in a project without goldens/ creates the golden store and says so; run from a folder that is no
project's root, it is refused and creates nothing. A real session's capture."""

from __future__ import annotations

import yaml

from pytest_zbench.cli import main
from pytest_zbench.golden.store import load_png, pixel_digest

ROUND = "goldens/software/x86_64/round.one"


def zbench(folder, monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    monkeypatch.chdir(folder)
    capsys.readouterr()  # what the session before printed
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_first_accept_creates_the_golden_store(project, monkeypatch, capsys, tmp_path):
    project.run("--zbench-device=local", "-k", "golden and round", "--zbench-goldens-only",
                goldens=True).assert_outcomes(failed=1)
    frame = project.run_json()["scenes"][0]["correctness"]["frames"][0]
    assert (frame["status"], frame["triage"]) == ("missing", "untriaged")
    goldens = project.root / "goldens"
    assert not goldens.exists()

    code, out, err = zbench(project.root, monkeypatch, capsys, "goldens", "accept", str(project.results), "--all")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "created goldens, the golden store (docs/goldens.md, \"Store layout\"): this project had none"
    assert lines[1].startswith(f"accepted: round.one frame 0 on local ({frame['digest'][:12]})")
    assert lines[1].endswith(f"golden written to {project.root / ROUND / 'frame-0.png'}")
    assert pixel_digest(load_png(project.root / ROUND / "frame-0.png")) == frame["digest"]  # the session's capture
    assert yaml.safe_load((project.root / ROUND / "triage.yaml").read_text()) == {
        "frame-0": {"accepted": [frame["digest"]]}}

    elsewhere = tmp_path / "not-a-project"
    elsewhere.mkdir()
    code, _, err = zbench(elsewhere, monkeypatch, capsys, "goldens", "accept", str(project.results), "--all")
    assert code == 2
    assert f"goldens does not exist, and {elsewhere} is no project's root (no scenes/ folder" in err
    assert not (elsewhere / "goldens").exists()
