"""Options several `zbench` subcommands share, spelled once: where a command writes its files is `--out`
whichever command it is, and a spelling a command used before still works, with a note to change it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

OUT = "--out"


class _RenamedOption(argparse.Action):
    """An option's old spelling: stores its value as the new one does and says, once per use, to change it."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        print(f"{parser.prog}: {option_string} is deprecated and will be removed: use {OUT}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_out_option(parser: argparse.ArgumentParser, *, metavar: str, help: str, default: str | None = None,
                   old: Sequence[str] = ()) -> None:
    """`--out` (dest `out`) and the command's `old` spellings of it, hidden from its --help."""
    parser.add_argument(OUT, dest="out", default=default, metavar=metavar, help=help)
    for spelling in old:
        # SUPPRESS as the default: the alias must not reset what --out's default put in the namespace.
        parser.add_argument(spelling, dest="out", default=argparse.SUPPRESS, metavar=metavar,
                            action=_RenamedOption, help=argparse.SUPPRESS)
