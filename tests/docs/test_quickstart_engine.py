"""docs/quickstart-engine.md, run as a reader would: its files written and its command blocks run in order in a
fresh engine folder, each block with bash, and each must exit as the page says (`exit N`) and print what it
says (`prints "TEXT"`). The page marks its blocks with HTML comments:

    <!-- quickstart: file PATH -->                      the next fenced block is the file PATH
    <!-- quickstart: run, exit N, prints "TEXT" -->     the next fenced block is commands; bash runs them

The device's workdir, /tmp/zbench-toy on the page, is a folder of this test's own (replaced in files and
commands alike), so that two runs never share a device. `zbench` and `pytest` are this tree's, on PATH as a
reader's installation puts them. A real C build on the kit, real launches, a real bisect: minutes, so
acceptance."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.docs.doc_examples import REPO

PAGE = REPO / "docs" / "quickstart-engine.md"
DEVICE_DIR = "/tmp/zbench-toy"
MARK = re.compile(r'<!--\s*quickstart:\s*(?:file\s+(?P<file>\S+)|run,\s*exit\s+(?P<exit>\d+),\s*prints\s+"(?P<prints>[^"]*)")\s*-->')


@dataclass
class Step:
    line: int
    file: str | None
    exit: int | None
    prints: str | None
    text: str
    shown: str = ""  # the ```text block right after a command block: what the page says it prints


def steps(page: str) -> list[Step]:
    found: list[Step] = []
    lines = page.splitlines()
    pending: re.Match[str] | None = None
    pending_line = 0
    i = 0
    while i < len(lines):
        match = MARK.search(lines[i])
        if match:
            pending, pending_line = match, i + 1
        elif lines[i].startswith("```") and pending is not None:
            body = []
            i += 1
            while not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            found.append(Step(pending_line, pending.group("file"),
                              int(pending.group("exit")) if pending.group("exit") else None,
                              pending.group("prints"), "\n".join(body) + "\n"))
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            if pending.group("prints") is not None and j < len(lines) and lines[j].strip() == "```text":
                shown = []
                j += 1
                while not lines[j].startswith("```"):
                    shown.append(lines[j])
                    j += 1
                found[-1].shown = "\n".join(shown)
            pending = None
        elif lines[i].startswith("#"):
            pending = None  # a mark never reaches past a heading
        i += 1
    return found


def test_the_page_has_its_steps() -> None:
    found = steps(PAGE.read_text(encoding="utf-8"))
    files = [s.file for s in found if s.file]
    runs = [s for s in found if s.file is None]
    # A mark the pattern no longer matches would drop a step silently: every mark on the page is a step.
    assert len(found) == PAGE.read_text(encoding="utf-8").count("<!-- quickstart:"), found
    assert {"engine.c", "Makefile", "devices.yaml", "scenes/fill.yaml"} <= set(files), files
    commands = "\n".join(s.text for s in runs)
    for command in ("zbench kit", "make", "zbench deploy", "zbench check-runner", "pytest --zbench-device=toy",
                    "--zbench-ab=", "zbench bisect"):
        assert command in commands, command
    assert any(s.exit == 1 for s in runs), "the gate's step exits 1: B regressed"
    # What the test checks a step prints is in the output the page shows for it: the page cannot say one thing
    # while its test checks another.
    for step in runs:
        assert step.prints and step.prints in step.shown, (step.line, step.prints, step.shown)


@pytest.fixture
def reader_env(tmp_path: Path) -> dict[str, str]:
    """PATH with `zbench` and `pytest` of this tree first, and a git identity of its own."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, module in (("zbench", "pytest_zbench.cli"), ("pytest", "pytest")):
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m {module} "$@"\n', encoding="utf-8")
        script.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(REPO),
            "GIT_AUTHOR_NAME": "Engine", "GIT_AUTHOR_EMAIL": "engine@example.com",
            "GIT_COMMITTER_NAME": "Engine", "GIT_COMMITTER_EMAIL": "engine@example.com", "COLUMNS": "120",
            "GIT_CONFIG_GLOBAL": os.devnull}


# Not `exclusive`, though the gate's step is a verdict on a speed measured here: B draws its frame eight times,
# an effect the A/B decides at any load the suite has met, so it runs beside the other acceptance tests.
@pytest.mark.acceptance
def test_every_step_of_the_quickstart_runs_as_the_page_says(tmp_path: Path, reader_env: dict[str, str]) -> None:
    engine = tmp_path / "engine"
    engine.mkdir()
    device = str(tmp_path / "device")
    started = time.monotonic()
    ran = 0
    for step in steps(PAGE.read_text(encoding="utf-8")):
        text = step.text.replace(DEVICE_DIR, device)
        where = f"{PAGE.relative_to(REPO)}:{step.line}"
        if step.file:
            (engine / step.file).parent.mkdir(parents=True, exist_ok=True)
            (engine / step.file).write_text(text, encoding="utf-8")
            continue
        # -e: a block stops at its first failing command, whose status is then the block's.
        done = subprocess.run(["bash", "-e", "-c", text], cwd=engine, env=reader_env, capture_output=True,
                              text=True, timeout=600)
        output = done.stdout + done.stderr
        assert done.returncode == step.exit, f"{where}: exit {done.returncode}, the page says {step.exit}\n" \
                                             f"{text}\n{output[-3000:]}"
        assert step.prints in output, f"{where}: {step.prints!r} not printed\n{text}\n{output[-3000:]}"
        ran += 1
    assert ran >= 6
    print(f"quickstart: {ran} command blocks in {time.monotonic() - started:.0f} s")
