"""pytest-zbench's one atomic file writer (run.json, goldens, failure images, traces, the progress file) and
the mode of what it writes.

A file is written to a temporary file in the same folder and moved into place with os.replace: a crash at
any point leaves either the old file or the new one, never a torn one (a stray `.<name>.*.tmp` at worst,
which golden/store.py lists). A durable write also fsyncs the file before the move and the folder after it.

A temporary file from tempfile.mkstemp is created 0600, and os.replace keeps that mode: a results folder
or a golden written that way is unreadable to the rest of the group that shares it. Such files get the mode
a plain open() would have given them, 0666 less the process's umask (0644 under the usual 022).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

# The suffix of the temporary file, so that strays are found by name.
TEMP_SUFFIX = ".tmp"


def default_mode() -> int:
    """0666 less the umask. The umask can only be read by setting it: it is set back at once."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def give_default_mode(fd: int) -> None:
    """For a file descriptor from tempfile.mkstemp, before the file is moved into place."""
    os.fchmod(fd, default_mode())


def write_bytes_atomic(path: str | Path, data: bytes, *, durable: bool = True, make_folder: bool = True) -> None:
    """`data` into `path` atomically; `durable` also fsyncs, so that the file survives a power cut (a file
    rewritten many times a second, such as the progress file, does without). Without `make_folder`, a
    missing folder is an OSError (the progress file's folder is gone once its session has ended)."""
    path = Path(path)
    if make_folder:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        give_default_mode(fd)  # mkstemp's 0600 would make the file unreadable to the group
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    if durable:
        _fsync_dir(path.parent)


def write_json_atomic(path: Path, document: Any, *, indent: int | None = 2) -> None:
    """A JSON document, indented or (indent None) compact, with a final newline."""
    # One string, then one write: json.dump to a file encodes piece by piece, in Python, 10x slower.
    text = json.dumps(document, indent=indent, sort_keys=False, allow_nan=False,
                      separators=None if indent else (",", ":")) + "\n"
    write_bytes_atomic(path, text.encode("utf-8"))


def _fsync_dir(folder: Path) -> None:
    try:
        dir_fd = os.open(folder, os.O_RDONLY)
    except OSError:  # Windows cannot open folders; os.replace is still atomic there
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
