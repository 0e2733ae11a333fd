"""The example commands of README.md and docs/*.md, as a reader would copy them: every line of an indented or
fenced code block that starts with `pytest`, `zbench` (or `.venv/bin/` before either), `\\` continuations joined,
`# comments` dropped, and each command of a `&&` or `;` chain on its own.

A block may be marked by an HTML comment on the lines before it (invisible in the rendered page); a fenced block
tagged `text` is output, never commands:

    <!-- examples: parse only, REASON -->   the commands need what this machine lacks (a Pi, a lab database, a
                                            results folder) or take minutes: they are parsed, never run
    <!-- examples: synopsis -->             a usage line ([--opt X], NAME, A|B): its command and every option it
                                            names must exist

Plain Python (no pytest), shared by tests/docs/test_doc_examples.py and tests/docs/test_quickstart_engine.py."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COMMAND = re.compile(r"^(?:\.venv/bin/)?(pytest|zbench)(?:\s|$)")
MARK = re.compile(r"<!--\s*examples:\s*(parse only|synopsis)\b[,:]?\s*(.*?)\s*-->")
SEPARATORS = ("&&", "||", ";", "|")


@dataclass(frozen=True)
class Example:
    path: Path           # the Markdown file
    line: int            # 1-based line of the command's first line
    text: str            # the command as written (continuations joined, the comment dropped)
    argv: tuple[str, ...]  # its words, the program first (`pytest` or `zbench`, without .venv/bin/)
    mark: str | None     # None, "parse only" or "synopsis"
    why: str             # the mark's reason
    block: int           # the number of the code block in the file, counted from 0

    @property
    def program(self) -> str:
        return self.argv[0]

    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}: {self.text}"


def doc_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def code_blocks(text: str) -> list[tuple[int, list[tuple[int, str]], tuple[str, str] | None]]:
    """(block number, [(line number, code line)], its mark) of every indented or fenced code block."""
    blocks: list[tuple[int, list[tuple[int, str]], tuple[str, str] | None]] = []
    lines = text.splitlines()
    mark: tuple[str, str] | None = None
    current: list[tuple[int, str]] | None = None
    fenced = False
    previous_blank = True
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if fenced:
            if stripped.startswith("```"):
                fenced, current = False, None
            else:
                assert current is not None
                current.append((number, line))
            continue
        if stripped.startswith("```"):
            fenced, current = True, []
            # A ```text block is what a command printed (the quickstart's outputs), not commands.
            if stripped[3:].strip() != "text":
                blocks.append((len(blocks), current, mark))
            mark = None
            continue
        indented = line.startswith("    ") and stripped
        # An indented code block starts after a blank line (it cannot interrupt a paragraph) and goes on over
        # blank lines while its lines stay indented.
        if indented and (current is not None or previous_blank):
            if current is None:
                current = []
                blocks.append((len(blocks), current, mark))
                mark = None
            current.append((number, line[4:]))
        elif stripped:
            current = None
            found = MARK.search(line)
            if found:
                mark = (found.group(1), found.group(2))
            elif not line.lstrip().startswith("<!--"):
                mark = None  # a mark belongs to the block right after it, not to one further down
        previous_blank = not stripped
    return blocks


def split_commands(words: list[str]) -> list[list[str]]:
    commands: list[list[str]] = [[]]
    for word in words:
        if word in SEPARATORS:
            commands.append([])
        else:
            commands[-1].append(word)
    return [c for c in commands if c]


def examples(path: Path) -> list[Example]:
    found: list[Example] = []
    for number, block, mark in code_blocks(path.read_text(encoding="utf-8")):
        joined: list[tuple[int, str]] = []
        pending: tuple[int, str] | None = None
        for line_number, line in block:
            if pending is not None:
                pending = (pending[0], pending[1] + " " + line.strip())
            else:
                pending = (line_number, line.strip())
            if pending[1].endswith("\\"):
                pending = (pending[0], pending[1][:-1].rstrip())
                continue
            joined.append(pending)
            pending = None
        if pending is not None:
            joined.append(pending)
        for line_number, line in joined:
            lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
            lexer.whitespace_split = True
            lexer.commenters = "#"
            try:
                words = list(lexer)
            except ValueError:  # an unbalanced quote: not a shell line, or a broken one (caught as a parse error)
                words = line.split()
            # In a usage line `|` separates alternatives (PATH|URL), not commands: the line is one command.
            if mark and mark[0] == "synopsis":
                try:
                    commands = [shlex.split(line, comments=True)]
                except ValueError:
                    commands = [line.split(" #")[0].split()]
            else:
                commands = split_commands(words)
            for command in commands:
                head = command[0]
                if not COMMAND.match(head + " "):
                    continue
                argv = (COMMAND.match(head + " ").group(1), *command[1:])  # type: ignore[union-attr]
                text = line.split(" #")[0].rstrip() if " #" in line else line
                found.append(Example(path, line_number, text, argv, mark[0] if mark else None,
                                     mark[1] if mark else "", number))
    return found


def all_examples() -> list[Example]:
    return [example for path in doc_files() for example in examples(path)]
