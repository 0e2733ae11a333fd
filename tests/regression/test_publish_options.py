"""`zbench publish` and `zbench history`: numeric options out of range are usage errors naming the option,
and `--out .` (a folder without a name of its own) publishes or refuses with one line instead of crashing."""

from __future__ import annotations

import math

import pytest
from synthetic_history import write_history

from pytest_zbench.cli import main
from pytest_zbench.regression.history import History


@pytest.fixture
def history_file(tmp_path):
    path = tmp_path / "history.sqlite"
    with History(str(path)) as history:
        write_history(history, devices=1, scenes=1, runs=4, seed=5)
    return path


@pytest.mark.parametrize("command", ["publish", "history"])
@pytest.mark.parametrize("level", ["7", "-1", "nan", "0", "1", "inf", "often"])
def test_a_significance_level_outside_0_1_is_a_usage_error(command, level, history_file, tmp_path, capsys):
    out = ["--out", str(tmp_path / "site")] if command == "publish" else []
    with pytest.raises(SystemExit) as exited:
        main([command, "--history", str(history_file), "--sig-level", level, *out])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --sig-level: {level!r} is not a significance level" in err, err
    assert not (tmp_path / "site").exists()


@pytest.mark.parametrize(("command", "option"), [("publish", "--last"), ("publish", "--jobs"), ("history", "--last")])
@pytest.mark.parametrize("value", ["0", "-3", "two"])
def test_counts_below_one_are_usage_errors(command, option, value, history_file, capsys):
    with pytest.raises(SystemExit) as exited:
        main([command, "--history", str(history_file), option, value])
    assert exited.value.code == 2
    assert f"argument {option}: {value!r}: give a whole number of at least 1" in capsys.readouterr().err


def test_a_valid_significance_level_is_used(history_file, capsys):
    assert main(["history", "--history", str(history_file), "--sig-level", "0.01"]) == 0
    assert "scene.000" in capsys.readouterr().out
    assert not math.isnan(0.01)


def test_publish_out_dot_is_refused_with_one_line_and_replaces_nothing(history_file, tmp_path, monkeypatch, capsys):
    # Before: `--out .` crashed with "ValueError: PosixPath('.') has an empty name". Publishing replaces its
    # folder as a whole, which would pull the working folder away under the shell: refused, for `..` too.
    here = tmp_path / "work" / "here"
    here.mkdir(parents=True)
    (here / "notes.txt").write_text("mine")
    monkeypatch.chdir(here)
    for out in (".", "..", str(here)):
        assert main(["publish", "--history", str(history_file), "--out", out]) == 1
        err = capsys.readouterr().err
        assert ": the site's folder is replaced as a whole, so it cannot be the working folder" in err, err
        assert err.count("\n") == 1, err
    assert (here / "notes.txt").read_text() == "mine" and sorted(p.name for p in tmp_path.iterdir()) == \
        ["history.sqlite", "work"]
    assert main(["publish", "--history", str(history_file), "--out", "site"]) == 0  # a folder of its own
    assert (here / "site" / "index.html").is_file()
    assert main(["publish", "--history", str(history_file), "--out", "/"]) == 1
    assert "is the filesystem's root" in capsys.readouterr().err
