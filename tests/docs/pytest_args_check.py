"""Run as `python -m tests.docs.pytest_args_check` in a project folder: reads a JSON list of pytest argument
lists on stdin and prints a JSON list with, for each, None or why pytest with the installed plugins would refuse
it before collecting: an option no plugin registered, a value the plugin's settings refuse (build_settings, as
the plugin builds them at configure time), a -k or -m expression that is not one. Also prints, last, every
option string the parser knows (for usage lines). A process of its own: building a pytest Config loads the
plugins and conftest files of the project folder, which the test process must not share."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from typing import Any

import pytest
from _pytest.config import _prepareconfig
from _pytest.mark.expression import Expression

from pytest_zbench.errors import UsageError
from pytest_zbench.plugin.options import _dest
from pytest_zbench.settings import build_settings


def check(args: list[str]) -> str | None:
    try:
        config = _prepareconfig(list(args))
    except (pytest.UsageError, SystemExit) as exc:
        return str(exc) or "usage error"
    try:
        for option in ("keyword", "markexpr"):
            expression = config.getoption(option)
            if expression:
                try:
                    Expression.compile(expression)
                except SyntaxError as exc:  # what pytest raises for a broken expression
                    return f"{'-k' if option == 'keyword' else '-m'} {expression!r}: {exc}"

        def get(option: Any) -> Any:
            return config.getoption(_dest(option))

        try:
            build_settings(get, config.rootpath, quick=bool(config.getoption("zbench_quick")),
                           update_goldens=config.getoption("zbench_update_goldens"),
                           calibrate=bool(config.getoption("zbench_calibrate")),
                           goldens_only=bool(config.getoption("zbench_goldens_only")))
        except UsageError as exc:
            return str(exc)
        return None
    finally:
        config._ensure_unconfigure()


def option_strings() -> list[str]:
    config = _prepareconfig([])
    try:
        parser = config._parser
        names = [name for group in [parser._anonymous, *parser._groups] for option in group.options
                 for name in option.names()]
        return sorted(names)
    finally:
        config._ensure_unconfigure()


def collect(args: list[str]) -> list[Any]:
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        status = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *args])
    return [int(status), output.getvalue()]


if __name__ == "__main__":
    given = json.load(sys.stdin)
    if sys.argv[1:] == ["--collect"]:
        print(json.dumps([collect(args) for args in given]), file=sys.__stdout__)
    else:
        print(json.dumps([*[check(args) for args in given], option_strings()]))
