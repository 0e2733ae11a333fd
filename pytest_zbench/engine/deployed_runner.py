"""Where a device keeps its deployed runner builds, and the inventory's way of naming one (docs/engine-ci.md).

A leaf: the inventory expands `{deployed}` with it, and `deploy.py` writes where it points, so the folder
layout is written once, here.

    <workdir>/builds/<hash>/...        one build, named by the content hash of its files
    <workdir>/builds/current           a link to the build deployed last

In a device's `runner`, `{deployed}` is `<workdir>/builds/current` and `{deployed:HASH}` is
`<workdir>/builds/HASH`: `runner: ["{deployed}/zbench-gles2"]` starts the build deployed last.
"""

from __future__ import annotations

import posixpath
import re

from ..errors import UsageError

BUILDS_FOLDER = "builds"
CURRENT_LINK = "current"
HASH_LENGTH = 16  # hex digits of the SHA-256 content hash a build's folder is named by
HASH_RE = re.compile(rf"[0-9a-f]{{{HASH_LENGTH}}}")
PLACEHOLDER_RE = re.compile(r"\{deployed(?::([^}]*))?\}")


class DeployedRunnerError(UsageError):
    """A `{deployed}` placeholder that cannot be expanded; the message says what to set (the inventory names
    the device and key around it)."""


def deploy_root(workdir: str | None) -> str | None:
    """The device folder the builds go in: `builds` in the device's (persistent) workdir; None without one."""
    return posixpath.join(workdir, BUILDS_FOLDER) if workdir else None


def build_folder(root: str, content_hash: str | None = None) -> str:
    """One build's folder in `root` (the `current` link without a hash)."""
    return posixpath.join(root, content_hash or CURRENT_LINK)


def expand_deployed(argv: tuple[str, ...], workdir: str | None) -> tuple[str, ...]:
    """`argv` with each `{deployed}` / `{deployed:HASH}` replaced by its device folder."""
    if not any(PLACEHOLDER_RE.search(arg) for arg in argv):
        return argv
    root = deploy_root(workdir)
    if root is None:
        raise DeployedRunnerError("{deployed} names a folder in the device's workdir: set `workdir` to a folder "
                                  "on the device that outlives a session (zbench deploy puts builds there)")
    assert root is not None

    def folder(match: re.Match[str]) -> str:
        content_hash = match.group(1)
        if content_hash is not None and not HASH_RE.fullmatch(content_hash):
            raise DeployedRunnerError(f"{match.group(0)}: a build's hash is {HASH_LENGTH} lower-case hex digits, "
                                      "as `zbench deploy` prints it")
        return build_folder(root, content_hash)

    return tuple(PLACEHOLDER_RE.sub(folder, arg) for arg in argv)
