"""The `zbench` subcommands read alike: each is described in `zbench --help` and in its own --help, each that
writes files takes `--out` (an older spelling still works and says to change it), and `zbench compare`
takes a results folder where `zbench engines` does."""

from __future__ import annotations

import argparse
import json

import pytest
from test_cli_compare_devices import run_doc

from pytest_zbench.cli import _parser, main

# The subcommands whose product is files at a path the user chooses; each takes --out for that path.
WRITERS = ("report", "engines", "publish", "summary", "bisect")
OLD_SPELLINGS = {"summary": "--output", "bisect": "--report"}


def subcommands() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def options(parser: argparse.ArgumentParser, *, shown: bool = True) -> set[str]:
    return {o for a in parser._actions if not shown or a.help != argparse.SUPPRESS for o in a.option_strings}


def test_every_subcommand_is_described_in_the_overview_and_in_its_own_help(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    overview = capsys.readouterr().out
    for name, parser in subcommands().items():
        assert f"    {name}" in overview
        with pytest.raises(SystemExit) as exit_status:
            main([name, "--help"])
        assert exit_status.value.code == 0
        text = capsys.readouterr().out
        assert parser.description, f"zbench {name} --help has no description"
        assert " ".join(parser.description.split()[:3]) in " ".join(text.split()), name
    # Each subcommand's line in the overview has text after its name (argparse leaves it blank without help=).
    action = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert all(choice.help for choice in action._choices_actions)


def test_every_subcommand_that_writes_files_takes_out_and_none_shows_another_spelling():
    parsers = subcommands()
    for name in WRITERS:
        assert "--out" in options(parsers[name]), f"zbench {name} has no --out"
    for name, parser in parsers.items():
        assert not options(parser) & {"--output", "--report"}, f"zbench {name} shows an old spelling of --out"
    for name, old in OLD_SPELLINGS.items():
        assert old in options(parsers[name], shown=False)


def test_an_old_spelling_stores_the_same_option_and_says_to_use_out(tmp_path, capsys):
    run = tmp_path / "run.json"
    run.write_text(json.dumps(run_doc("aaaa", {"fill.x1": 5.0}, seed=1)))
    summary = tmp_path / "summary.md"
    assert main(["summary", str(run), "--output", str(summary)]) == 0
    assert summary.read_text().startswith("## zbench")
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["zbench summary: --output is deprecated and will be removed: use --out"]
    args = _parser().parse_args(["bisect", "a", "b", "--device", "d", "--build", "make", "--artifact", "x",
                                 "--report", "elsewhere"])
    assert args.out == "elsewhere"
    assert _parser().parse_args(["bisect", "a", "b", "--device", "d", "--build", "make", "--artifact",
                                 "x"]).out == "zbench-bisect"  # the alias leaves --out's default alone


def test_compare_takes_results_folders_and_names_a_folder_without_run_json(tmp_path, capsys):
    folders = {}
    for name, level, seed in (("a", 5.0, 1), ("b", 5.0, 50)):
        folders[name] = tmp_path / name
        folders[name].mkdir()
        (folders[name] / "run.json").write_text(json.dumps(run_doc(name * 4, {"fill.x1": level}, seed=seed)))
    assert main(["compare", str(folders["a"]), str(folders["b"])]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"A: {folders['a'] / 'run.json'} (run aaaa)   B: {folders['b'] / 'run.json'} (run bbbb)")
    assert "pi/fill.x1" in out
    assert main(["compare", str(folders["a"] / "run.json"), str(folders["b"])]) == 0  # a file and a folder
    capsys.readouterr()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["compare", str(folders["a"]), str(empty)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"zbench compare: {empty}: a folder without run.json")
