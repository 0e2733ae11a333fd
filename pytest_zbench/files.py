"""The mode of the files pytest-zbench writes atomically (run.json, goldens, failure images, traces).

A temporary file from tempfile.mkstemp is created 0600, and os.replace keeps that mode: a results folder
or a golden written that way is unreadable to the rest of the group that shares it. Such files get the mode
a plain open() would have given them, 0666 less the process's umask (0644 under the usual 022).
"""

from __future__ import annotations

import os


def default_mode() -> int:
    """0666 less the umask. The umask can only be read by setting it: it is set back at once."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def give_default_mode(fd: int) -> None:
    """For a file descriptor from tempfile.mkstemp, before the file is moved into place."""
    os.fchmod(fd, default_mode())
