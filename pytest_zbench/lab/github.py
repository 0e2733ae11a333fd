"""GitHub Actions workflow commands and files, formatted by their documented rules.

An annotation is one stdout line, `::error file=F,title=T::MESSAGE`; its message escapes `%`, CR and LF, and
its properties also `:` and `,` (the escaping of the Actions toolkit's `toCommandValue` and
`escapeProperty`), so a scene's message can never end the command early or inject another one. Outputs go
to the file named by $GITHUB_OUTPUT (`name=value`, or a heredoc with a random delimiter for multi-line values),
the job summary to the file named by $GITHUB_STEP_SUMMARY.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

AnnotationLevel = Literal["error", "warning", "notice"]


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: AnnotationLevel, message: str, *, file: str | None = None, line: int | None = None,
               title: str | None = None) -> str:
    """One workflow command line, e.g. `::error file=scenes/fill.yaml,title=perf failed::...`."""
    properties = []
    if file is not None:
        properties.append(f"file={escape_property(file)}")
    if line is not None and line > 0:
        properties.append(f"line={line}")
    if title is not None:
        properties.append(f"title={escape_property(title)}")
    head = f"::{level}" + (" " + ",".join(properties) if properties else "")
    return f"{head}::{escape_data(message)}"


def running_in_actions(environ: Mapping[str, str] = os.environ) -> bool:
    return environ.get("GITHUB_ACTIONS") == "true"


def write_outputs(path: str | Path, outputs: Mapping[str, str]) -> None:
    """Append step outputs to the $GITHUB_OUTPUT file; a value with a line break is written as a heredoc."""
    with open(path, "a", encoding="utf-8") as f:
        for name, value in outputs.items():
            if "\n" in value or "\r" in value:
                delimiter = f"ghadelimiter_{uuid.uuid4().hex}"
                f.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
            else:
                f.write(f"{name}={value}\n")


def append_step_summary(path: str | Path, markdown: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(markdown if markdown.endswith("\n") else markdown + "\n")
