"""Every example command of README.md and docs/*.md (tests/docs/doc_examples.py extracts them) is checked, so
that no doc example rots unseen: an option renamed, a device or scene that is gone, a subcommand that moved.

* `zbench` commands parse with the CLI's own parser (cli._parser). Unmarked ones are run for real in a scratch
  copy of the project and must exit 0; the docs mark those that need what this machine lacks (parse only).
* `pytest` commands parse with the parser pytest builds with the installed plugins, and their values pass the
  plugin's own settings check. Unmarked ones must name devices this machine has (the inventory's local
  devices); every one that does is collected for real in a scratch copy of the project (the session pytest
  would run, up to its first launch, which is where the minutes go): the inventory, the scenes and the -k or
  -m expression must select at least one test.
* Usage lines (marked synopsis): the subcommand exists and knows every option the line names.
* Cheap commands run for real: `zbench --version`, `zbench kit`, `--help` of every subcommand the docs use.

A failure names the file, the line and the command."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pytest_zbench.cli import _parser, main
from pytest_zbench.inventory import load_inventory
from tests.docs.doc_examples import REPO, Example, all_examples, code_blocks

EXAMPLES = all_examples()
INVENTORY = load_inventory(REPO / "devices.yaml")
# Devices a command may name unmarked: those run on this machine (transport local); a Pi, a phone or the VM
# (reached over ssh, adb or a command) exist in the inventory but not here.
HERE_DEVICES = {name for name, spec in INVENTORY.devices.items() if spec.transport == "local"}
# What a scratch copy of the project holds: what an example run from the checkout's root reads.
PROJECT_FILES = ("scenes", "devices.yaml", "goldens", "pyproject.toml", "conftest.py")


def env() -> dict[str, str]:
    # The subprocesses import this tree's package, not another installation's.
    return {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "120"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A scratch project: the checkout's scenes, inventory and goldens linked in, so whatever an example writes
    (results, history, junit.xml) lands in the scratch folder and never in the checkout."""
    for name in PROJECT_FILES:
        (tmp_path / name).symlink_to(REPO / name)
    return tmp_path


def by_kind(program: str, *marks: str | None) -> list[Example]:
    return [e for e in EXAMPLES if e.program == program and e.mark in marks]


def test_the_docs_have_examples_of_each_kind() -> None:
    # Zero extracted would pass every test below vacuously: an extractor broken by a change of format must fail.
    assert len(EXAMPLES) >= 30, [e.where() for e in EXAMPLES]
    for program in ("pytest", "zbench"):
        for mark in (None, "parse only", "synopsis"):
            assert by_kind(program, mark), f"no {program} example marked {mark!r} found: the extractor is broken"


def page_devices(path: Path) -> set[str]:
    """Devices a page defines itself, in a code block that is an inventory (`devices:` at its top), as the
    quickstart's engine repository does."""
    names: set[str] = set()
    for _, block, _ in code_blocks(path.read_text(encoding="utf-8")):
        text = "\n".join(line for _, line in block)
        if text.startswith("devices:"):
            names |= set((yaml.safe_load(text) or {}).get("devices") or {})
    return names


def unknown_devices(example: Example) -> list[str]:
    return [n for n in device_names(example) if n not in INVENTORY.devices and n not in page_devices(example.path)]


def device_names(example: Example) -> list[str]:
    names: list[str] = []
    argv = list(example.argv)
    for i, word in enumerate(argv):
        if word.startswith("--zbench-device="):
            names += word.split("=", 1)[1].split(",")
        elif word in ("--zbench-device", "--device") and i + 1 < len(argv):
            names += argv[i + 1].split(",")
    return [n for n in names if n]


def parse_zbench(argv: list[str]) -> str | None:
    """None, or argparse's complaint about argv."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            _parser().parse_args(argv)
    except SystemExit as exc:
        return stderr.getvalue().strip() or f"exit {exc.code}"
    return None


def test_zbench_examples_parse() -> None:
    failures = []
    for example in by_kind("zbench", None, "parse only"):
        error = parse_zbench(list(example.argv[1:]))
        if error:
            failures.append(f"{example.where()}\n    {error}")
        # Even a parse-only example names devices of the inventory (a device that is nowhere is a typo).
        failures += [f"{example.where()}\n    no device {name!r} in devices.yaml" for name in unknown_devices(example)]
    assert not failures, "\n".join(failures)


def test_unmarked_zbench_examples_run(project: Path) -> None:
    examples = by_kind("zbench", None)
    failures = []
    for example in examples:
        missing = [n for n in device_names(example) if n not in HERE_DEVICES]
        if missing:
            failures.append(f"{example.where()}\n    needs {', '.join(missing)}, not a device of this machine: "
                            "mark the block <!-- examples: parse only, why -->")
            continue
        done = subprocess.run([sys.executable, "-m", "pytest_zbench.cli", *example.argv[1:]], cwd=project,
                              env=env(), capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            failures.append(f"{example.where()}\n    exit {done.returncode}: {(done.stderr or done.stdout)[-800:]}")
    assert not failures, "\n".join(failures)


def test_pytest_examples_parse_and_their_values_pass_the_plugins_checks(project: Path) -> None:
    examples = by_kind("pytest", None, "parse only")
    done = subprocess.run([sys.executable, "-m", "tests.docs.pytest_args_check"], cwd=project, env=env(),
                          input=json.dumps([list(e.argv[1:]) for e in examples]), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    *errors, _ = json.loads(done.stdout)
    assert len(errors) == len(examples)
    failures = [f"{e.where()}\n    {error}" for e, error in zip(examples, errors) if error]
    failures += [f"{e.where()}\n    no device {name!r} in devices.yaml" for e in examples for name in unknown_devices(e)]
    assert not failures, "\n".join(failures)


def collect(examples: list[Example], project: Path) -> list[str | None]:
    """For each example: None, or why its session does not collect a test here."""
    # The same command in two places is collected once.
    unique = list(dict.fromkeys(e.argv[1:] for e in examples))
    done = subprocess.run([sys.executable, "-m", "tests.docs.pytest_args_check", "--collect"], cwd=project,
                          env=env(), input=json.dumps([list(argv) for argv in unique]), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    results = dict(zip(unique, json.loads(done.stdout)))
    errors: list[str | None] = []
    for status, output in (results[e.argv[1:]] for e in examples):
        counted = re.search(r"(\d+)(?:/\d+)? tests? collected", output)
        if status != 0:
            errors.append(f"exit {status}: {output[-800:]}")
        elif not counted or int(counted.group(1)) == 0:
            errors.append(f"selects no test: {output[-400:]}")
        else:
            errors.append(None)
    return errors


def test_pytest_examples_on_this_machines_devices_collect(project: Path) -> None:
    # Collecting is cheap and launches nothing, so a parse-only pytest example is collected too when every
    # device it names is one of this machine's (a block marked for its Pi line still has its local lines checked).
    examples = by_kind("pytest", None, "parse only")
    failures = [f"{e.where()}\n    needs {name}, not a device of this machine: mark the block "
                "<!-- examples: parse only, why -->" for e in examples if e.mark is None for name in device_names(e)
                if name not in HERE_DEVICES]
    runnable = [e for e in examples if all(n in HERE_DEVICES for n in device_names(e))]
    assert len(runnable) >= 10, [e.where() for e in runnable]
    errors = collect(runnable, project)
    failures += [f"{e.where()}\n    {error}" for e, error in zip(runnable, errors) if error]
    assert not failures, "\n".join(failures)


def synopsis_options(example: Example) -> tuple[list[str], list[str]]:
    """The words of a usage line that name a command, and the options it names (`[--opt X]`, `-k EXPR`,
    `--opt=VALUE`, `accept|exclude`)."""
    commands, options = [], []
    for word in example.argv[1:]:
        if " " in word:  # a quoted value ("--zbench-runs=6 -k blur", what --pytest-args passes on), not an option
            continue
        for part in word.strip("[]").split("|"):
            part = part.strip("[]")
            if part.startswith("-"):
                options.append(part.split("=", 1)[0])
            elif not options and re.fullmatch(r"[a-z][a-z-]*", part):
                commands.append(part)
    return commands, options


def subparsers(parser: object) -> dict[str, object]:
    import argparse

    for action in parser._actions:  # type: ignore[attr-defined]
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_synopses_name_existing_commands_and_options(project: Path) -> None:
    failures = []
    commands = subparsers(_parser())
    for example in by_kind("zbench", "synopsis"):
        words, options = synopsis_options(example)
        if not words or words[0] not in commands:
            failures.append(f"{example.where()}\n    no zbench command {words[:1]}")
            continue
        known = {o for action in commands[words[0]]._actions for o in action.option_strings}  # type: ignore[attr-defined]
        failures += [f"{example.where()}\n    zbench {words[0]} has no option {o}" for o in options if o not in known]
    examples = by_kind("pytest", "synopsis")
    done = subprocess.run([sys.executable, "-m", "tests.docs.pytest_args_check"], cwd=project, env=env(),
                          input="[]", capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    known_pytest = set(json.loads(done.stdout)[-1])
    assert "--zbench-device" in known_pytest and "-k" in known_pytest  # the plugin's options and pytest's own
    for example in examples:
        _, options = synopsis_options(example)
        failures += [f"{example.where()}\n    pytest has no option {o}" for o in options if o not in known_pytest]
    assert not failures, "\n".join(failures)


def test_cheap_commands_run_for_real() -> None:
    def zbench(*argv: str) -> str:
        # In this process: the console script's own main(), without an interpreter start for each.
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            try:
                status = main(list(argv))
            except SystemExit as exc:  # argparse's --version exits
                status = exc.code
        assert status in (0, None), (argv, status, stdout.getvalue())
        return stdout.getvalue()

    assert re.match(r"zbench \d+\.\d+", zbench("--version"))
    assert (Path(zbench("kit", "--path").strip()) / "zbench_kit.h").is_file()
    assert re.fullmatch(r"\d+", zbench("kit", "--protocol").strip())
    # Every subcommand the docs use answers --help: it exists, and its help text is well formed (argparse
    # formats it only when asked, so a broken %-placeholder in a help string shows only here).
    used = sorted({e.argv[1] for e in EXAMPLES if e.program == "zbench" and len(e.argv) > 1
                   and not e.argv[1].startswith("-")} & set(subparsers(_parser())))
    assert len(used) >= 8, used
    for command in used:
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout), pytest.raises(SystemExit) as exit_:
            _parser().parse_args([command, "--help"])
        assert exit_.value.code == 0 and f"zbench {command}" in stdout.getvalue(), command


PAGE = """\
Text with `pytest --zbench-device=nowhere` inline, which is prose, not an example.

    pytest --zbench-device=local -k fill \\
           --zbench-runs=2   # a comment, dropped
    bash ci/setup.sh && .venv/bin/pytest --zbench-quick; zbench kit
    pytest-zbench is not a command, nor is pytester

<!-- examples: parse only, needs a Pi -->

    pytest --zbench-device=pi3b

```text
zbench deploy: output, not a command
```

<!-- examples: synopsis -->

```sh
zbench history [--history PATH|URL] [--scene ID]
```

## A heading

    zbench runs
"""


def test_the_extractor_joins_continuations_drops_comments_splits_chains_and_reads_marks(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(PAGE, encoding="utf-8")
    from tests.docs.doc_examples import examples

    found = [(e.line, e.argv, e.mark) for e in examples(page)]
    assert found == [
        (3, ("pytest", "--zbench-device=local", "-k", "fill", "--zbench-runs=2"), None),
        (5, ("pytest", "--zbench-quick"), None),
        (5, ("zbench", "kit"), None),
        (10, ("pytest", "--zbench-device=pi3b"), "parse only"),
        (19, ("zbench", "history", "[--history", "PATH|URL]", "[--scene", "ID]"), "synopsis"),
        (24, ("zbench", "runs"), None),  # the mark belongs to the block right after it only
    ]
    assert examples(page)[3].why == "needs a Pi"
