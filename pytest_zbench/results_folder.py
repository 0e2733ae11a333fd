"""Which run.json a command means when it is given "a run.json or a results folder": the one rule `zbench
engines` and `zbench compare` share, so that both accept what the other does."""

from __future__ import annotations

from pathlib import Path

from .errors import UsageError

RUN_JSON = "run.json"


class RunJsonNotFound(UsageError):
    """The path given is neither a run.json nor a folder holding one; the message names it and what to give."""


def run_json_path(given: Path) -> Path:
    """A run.json, or a results folder's run.json."""
    if given.is_dir():
        if not (given / RUN_JSON).is_file():
            raise RunJsonNotFound(f"{given}: a folder without {RUN_JSON}: give a {RUN_JSON} or a results folder "
                                  "(--zbench-results) that holds one")
        return given / RUN_JSON
    if not given.is_file():
        raise RunJsonNotFound(f"{given}: no such file or folder: give a {RUN_JSON} or a results folder")
    return given
