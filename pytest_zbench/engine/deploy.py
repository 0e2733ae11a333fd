"""`zbench deploy`: a built runner (one file or a folder) put on a device through its transport, in a folder
named by the content hash of its files, checked there, probed, and the older builds pruned (docs/engine-ci.md).

The steps, each through the Transport interface only (so local, ssh, adb and command all work):

1. hash the build on the host: every regular file's relative path, executable bit and SHA-256;
2. if `<root>/<hash>` is already there and its files hash the same on the device, reuse it; else push the
   files into `<root>/.incoming-<hash>-<nonce>`, mark the executables, and move the folder to `<root>/<hash>`
   only after `sha256sum` on the device agreed with every file (a half-pushed build is never a build);
3. run `<root>/<hash>/<entry> probe` and read the answer: the runner must speak the protocol, and when the
   caller expects a build identity (`expect_build`), the probe's `build.id` must be it;
4. point `<root>/current` at it, and remove all but the `keep` newest builds (never the current one).

Steps 2 to 4 hold the device's deploy lock (DeviceLock, `<root>/.lock`), so that two deploys to one device,
from one host or two, cannot prune each other's build or swap `current` under each other.

Nothing is built from unquoted input: every device command is an argv list.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import os
import posixpath
import secrets
import socket
import stat
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

from ..errors import UsageError, ZbenchError
from ..inventory import DeviceSpec
from ..protocol import Probe, parse_probe_output
from ..transports.base import Transport
from .deployed_runner import HASH_LENGTH, HASH_RE, build_folder, deploy_root

MANIFEST_NAME = ".zbench-build.json"  # written last into a build's folder; not part of its hash
DEFAULT_KEEP = 3
COMMAND_TIMEOUT_S = 60.0
PROBE_TIMEOUT_S = 120.0
LOCK_NAME = ".lock"  # in the builds' folder: held by one deploy, prune or remove at a time
LOCK_WAIT_S = 600.0
LOCK_POLL_S = 0.5

Progress = Callable[[str], None]


class DeployError(ZbenchError):
    """A deploy that could not complete; the message names the device, the build and what to do."""


@dataclass(frozen=True)
class BuildFile:
    path: str  # relative, POSIX
    sha256: str
    executable: bool


@dataclass(frozen=True)
class LocalBuild:
    """A build on the host: its files and their content hash."""

    source: Path
    entry: str  # the runner's executable, relative to the build's folder
    files: tuple[BuildFile, ...]
    content_hash: str

    @property
    def folder_is_file(self) -> bool:
        return self.source.is_file()


@dataclass
class Deployed:
    """What `deploy` did: the build's device folder, its probe, and what was pruned."""

    device: str
    content_hash: str
    folder: str
    runner: list[str]  # the argv that starts it (without `probe` / `run`)
    reused: bool
    build_id: str | None
    build_describe: str | None
    runner_name: str
    pruned: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    build_dirty: bool = False  # the probe says the engine was built from a checkout with uncommitted changes

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def hash_build(source: Path, entry: str | None = None) -> LocalBuild:
    """The build's files and content hash; `entry` defaults to the file itself, or a folder's only executable."""
    source = Path(source)
    if source.is_file():
        files = [(source.name, source)]
    elif source.is_dir():
        files = []
        for path in sorted(source.rglob("*")):
            if path.is_symlink():
                raise UsageError(f"{path}: a build may not hold symbolic links (they could point outside it); "
                                 "copy the file in")
            if path.is_file():
                files.append((path.relative_to(source).as_posix(), path))
    else:
        raise UsageError(f"{source}: no such file or folder to deploy")
    for rel, _ in files:
        # A device lists files one a line (sha256sum): a name with a line break cannot be checked there.
        if any(c in rel for c in "\n\r"):
            raise UsageError(f"{source}: the file name {rel!r} holds a line break, which the device's sha256sum "
                             "cannot report unambiguously; rename the file")
    if not files:
        raise UsageError(f"{source}: the folder holds no files to deploy")
    entries = [BuildFile(rel, _sha256(path), bool(path.stat().st_mode & stat.S_IXUSR)) for rel, path in files]
    if any(f.path == MANIFEST_NAME for f in entries):
        raise UsageError(f"{source}: {MANIFEST_NAME} is the name deploy gives its own manifest; rename that file")
    chosen = _entry(source, entries, entry)
    digest = hashlib.sha256()
    for f in entries:  # sorted by path above: the hash does not depend on the order a folder lists
        digest.update(f"{f.path}\0{int(f.executable)}\0{f.sha256}\n".encode())
    return LocalBuild(source, chosen, tuple(entries), digest.hexdigest()[:HASH_LENGTH])


def _entry(source: Path, files: list[BuildFile], entry: str | None) -> str:
    if entry is None:
        executables = [f.path for f in files if f.executable and "/" not in f.path]
        if source.is_file():
            executables = [files[0].path]
        if len(executables) != 1:
            raise UsageError(f"{source}: name the runner with --entry (the folder holds "
                             f"{len(executables)} executable files at its top: {', '.join(executables) or 'none'})")
        return executables[0]
    normal = PurePosixPath(entry)
    if normal.is_absolute() or ".." in normal.parts:
        raise UsageError(f"--entry {entry!r}: a path inside the build's folder, such as bin/zbench-gles2")
    match = [f for f in files if f.path == normal.as_posix()]
    if not match:
        raise UsageError(f"--entry {entry!r}: no such file in {source}")
    if not match[0].executable:
        raise UsageError(f"--entry {entry!r}: {source / entry} is not executable (chmod +x it)")
    return match[0].path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def resolve_root(spec: DeviceSpec, root: str | None) -> str:
    chosen = root or deploy_root(spec.workdir)
    if not chosen:
        raise UsageError(f"device {spec.name} ({spec.source}): a deployed build needs a folder that outlives the "
                         "session: set the device's `workdir` (builds go in its `builds` folder) or pass --root")
    if not posixpath.isabs(chosen):
        raise UsageError(f"device {spec.name}: the deploy folder {chosen!r} must be an absolute device path")
    return chosen


def deploy(spec: DeviceSpec, transport: Transport, build: LocalBuild, *, root: str | None = None,
           keep: int | None = DEFAULT_KEEP, expect_build: str | None = None, make_current: bool = True,
           progress: Progress = lambda line: None) -> Deployed:
    """Deploy `build` to the device of `spec` through an open `transport` (see the module's steps). With
    `keep=None` nothing is pruned, and with `make_current=False` `current` is left where it was (a bisect's
    builds are its own, removed when it ends). Pruning needs `make_current`: it keeps the build just deployed
    because that is the one `current` then points at, and would not know to keep another."""
    if keep is not None and keep < 1:
        raise UsageError(f"--keep {keep}: keep at least the build just deployed (1)")
    if keep is not None and not make_current:
        raise ValueError("deploy: pruning (keep) keeps the build it makes current; with make_current=False pass "
                         "keep=None")
    root = resolve_root(spec, root)
    on_device = DeviceFiles(spec.name, transport)
    with DeviceLock(on_device, root, progress=progress):
        return _deploy_locked(spec, transport, on_device, build, root, keep, expect_build, make_current, progress)


def _deploy_locked(spec: DeviceSpec, transport: Transport, on_device: DeviceFiles, build: LocalBuild, root: str,
                   keep: int | None, expect_build: str | None, make_current: bool, progress: Progress) -> Deployed:
    folder = build_folder(root, build.content_hash)
    wrong = on_device.verify(folder, build)
    reused = not wrong
    if reused:
        progress(f"{build.content_hash} is already on {spec.name} and its files check: reusing it")
        on_device.run(["touch", folder], "mark the build as used now")
    else:
        if len(wrong) < len(build.files):  # some of it is there, damaged or half of it
            on_device.run(["rm", "-rf", folder], "remove a damaged copy of the build")
        _push(on_device, transport, build, root, folder, progress)
    runner = [posixpath.join(folder, build.entry)]
    try:
        probe = _probe(spec, transport, runner, expect_build)
    except ZbenchError:
        if not reused:  # a build that cannot answer its probe is not left behind
            on_device.run(["rm", "-rf", folder], "remove the build that failed its probe", check=False)
        raise
    described = probe.build.id if probe.build else "no build identity in its probe"
    dirty = bool(probe.build and probe.build.dirty)
    progress(f"probed {folder}: runner {probe.runner_name} {probe.runner_version}, build {described}"
             + (" DIRTY (built from a checkout with uncommitted changes)" if dirty else ""))
    _device_writes(on_device.device, root, f"write the manifest of build {build.content_hash}",
                   lambda: _write_manifest(transport, folder, build, probe))
    if make_current:
        on_device.run(["ln", "-sfn", build.content_hash, build_folder(root)], "point `current` at the build")
    pruned, kept = prune(on_device, root, keep, current=build.content_hash) if keep is not None else ([], [])
    for name in pruned:
        progress(f"pruned {name} (older than the {keep} kept)")
    return Deployed(spec.name, build.content_hash, folder, runner, reused,
                    probe.build.id if probe.build else None, probe.build.describe if probe.build else None,
                    probe.runner_name, pruned, kept, dirty)


def _device_writes(device: str, root: str, what: str, write: Callable[[], None]) -> None:
    """Run `write` (a push); an OSError becomes a one-line DeployError, a full filesystem said as such."""
    try:
        write()
    except OSError as exc:
        if exc.errno == errno.ENOSPC or "No space left" in str(exc):
            raise DeployError(f"device {device}: the filesystem of {root} is full (no space left on the device) "
                              f"while trying to {what}; free space there or remove old builds (`zbench deploy "
                              "--list`, `--remove HASH`, or a smaller --keep)") from None
        raise DeployError(f"device {device}: could not {what}: {exc.strerror or exc}") from None


def _push(on_device: DeviceFiles, transport: Transport, build: LocalBuild, root: str, folder: str,
          progress: Progress) -> None:
    incoming = posixpath.join(root, f".incoming-{build.content_hash}-{secrets.token_hex(4)}")
    moved = False
    try:
        folders = sorted({posixpath.dirname(f.path) for f in build.files} - {""})
        on_device.run(["mkdir", "-p", incoming, *(posixpath.join(incoming, d) for d in folders)],
                      "create the build's folders")
        for f in build.files:
            local = build.source if build.folder_is_file else build.source / f.path
            target = posixpath.join(incoming, f.path)
            _device_writes(on_device.device, root, f"push {f.path} of build {build.content_hash}",
                           functools.partial(transport.push, local, target))
        executables = [posixpath.join(incoming, f.path) for f in build.files if f.executable]
        if executables:
            on_device.run(["chmod", "755", *executables], "mark the build's executables")
        wrong = on_device.verify(incoming, build)
        if wrong:
            raise DeployError(f"device {on_device.device}: after the push, {len(wrong)} file(s) of build "
                              f"{build.content_hash} hash differently on the device: {', '.join(wrong[:5])}")
        # On the device's disk before it gets its name: a power cut after the rename must not leave a build
        # whose files the filesystem had not written yet (zero-length after the reboot) under its hash.
        on_device.run(["sync"], "write the build to the device's disk", check=False)
        on_device.run(["mv", incoming, folder], "move the checked build into place")
        moved = True
        progress(f"pushed {len(build.files)} file(s) to {folder}; SHA-256 checked on the device")
    finally:
        if not moved:
            on_device.run(["rm", "-rf", incoming], "remove the incoming folder", check=False)


def _probe(spec: DeviceSpec, transport: Transport, runner: list[str], expect_build: str | None) -> Probe:
    where = f"device {spec.name}: `{' '.join(runner)} probe`"
    result = transport.run([*runner, "probe"], timeout_s=spec.timeout_s or PROBE_TIMEOUT_S)
    if not result.ok:
        tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        raise DeployError(f"{where} failed (exit {result.exit_code}{', timed out' if result.timed_out else ''}): "
                          f"{' | '.join(tail) or 'no output'}")
    probe = parse_probe_output(result.stdout, source=where)
    if expect_build is not None:
        got = probe.build.id if probe.build else None
        if got != expect_build:
            raise DeployError(f"{where} reports build {got!r}, not the expected {expect_build!r}: the folder holds "
                              "another build than the one asked for (or the runner does not report `build`, "
                              "docs/runner-protocol.md)")
        if probe.build and probe.build.dirty:
            raise DeployError(f"{where} reports build {got!r} DIRTY: it was built from a checkout with uncommitted "
                              f"changes, so it is not {expect_build!r}; commit them, or deploy without "
                              "--expect-build")
    return probe


def _write_manifest(transport: Transport, folder: str, build: LocalBuild, probe: Probe) -> None:
    manifest = {"content_hash": build.content_hash, "entry": build.entry,
                "files": [asdict(f) for f in build.files],
                "build": asdict(probe.build) if probe.build else None,
                "runner": {"name": probe.runner_name, "version": probe.runner_version}}
    with tempfile.TemporaryDirectory(prefix="zbench-deploy-") as scratch:
        path = Path(scratch) / MANIFEST_NAME
        path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        transport.push(path, posixpath.join(folder, MANIFEST_NAME))


def prune(on_device: DeviceFiles, root: str, keep: int, *, current: str) -> tuple[list[str], list[str]]:
    """Remove all but the `keep` most recently deployed builds in `root` (by their folders' times), never
    `current`, the build deploy has just pointed `<root>/current` at under the lock (so it is not read back from
    the device); return (removed, kept), newest first."""
    builds = on_device.builds_newest_first(root)
    kept = [name for name in builds if name == current]
    for name in builds:
        if len(kept) >= keep:
            break
        if name not in kept:
            kept.append(name)
    removed = [name for name in builds if name not in kept]
    for name in removed:
        on_device.run(["rm", "-rf", build_folder(root, name)], f"remove the old build {name}")
    return removed, [name for name in builds if name in kept]


def remove_build(on_device: DeviceFiles, root: str, content_hash: str, *, allow_current: bool = False) -> bool:
    """Remove one deployed build; False when it was not on the device. The build `current` points at is
    refused unless `allow_current` (then the link goes too): the device's runner would be gone. The caller
    holds the DeviceLock."""
    if not HASH_RE.fullmatch(content_hash):
        raise UsageError(f"{content_hash!r} is not a build's hash ({HASH_LENGTH} lower-case hex digits)")
    folder = build_folder(root, content_hash)
    if not on_device.exists(folder):
        return False
    if on_device.current(root) == content_hash:
        if not allow_current:
            raise DeployError(f"device {on_device.device}: {content_hash} is the current build, the runner of every "
                              "session that names {deployed}; deploy another build first, or remove it and the "
                              "`current` link with --force")
        on_device.run(["rm", "-f", build_folder(root)], "remove the `current` link")
    on_device.run(["rm", "-rf", folder], f"remove the build {content_hash}")
    return True


class DeviceLock:
    """The device's deploy lock: the folder `<root>/.lock`, made by `mkdir`, which is atomic on every device
    filesystem and works through every transport (docs/engine-ci.md, "One deploy at a time"). Inside it, a
    folder names the holder (host, process, a nonce), so that a lock left by a deploy that was killed can be
    recognised and removed by hand. Waits up to `wait_s` for another holder, then fails naming it."""

    def __init__(self, on_device: DeviceFiles, root: str, *, wait_s: float = LOCK_WAIT_S,
                 progress: Progress = lambda line: None) -> None:
        self.on_device, self.root, self.wait_s, self.progress = on_device, root, wait_s, progress
        self.folder = posixpath.join(root, LOCK_NAME)
        host = "".join(c if c.isalnum() or c in "-." else "_" for c in socket.gethostname())[:64] or "host"
        self.holder = f"{host}-pid{os.getpid()}-{secrets.token_hex(4)}"

    def __enter__(self) -> DeviceLock:
        self.on_device.run(["mkdir", "-p", self.root], f"create the builds' folder {self.root}")
        deadline = time.monotonic() + self.wait_s
        said = False
        while not self.on_device.transport.run(["mkdir", self.folder], timeout_s=COMMAND_TIMEOUT_S).ok:
            holders = self.holders()
            if time.monotonic() >= deadline:
                raise DeployError(f"device {self.on_device.device}: another deploy holds {self.folder} "
                                  f"({', '.join(holders) or 'holder unknown'}) after {self.wait_s:g} s; if none is "
                                  f"running, remove that folder on the device")
            if not said:
                self.progress(f"waiting for {self.folder}, held by {', '.join(holders) or 'another deploy'}")
                said = True
            time.sleep(LOCK_POLL_S)
        self.on_device.run(["mkdir", posixpath.join(self.folder, self.holder)], "name the lock's holder")
        return self

    def holders(self) -> list[str]:
        result = self.on_device.transport.run(["ls", "-1", self.folder], timeout_s=COMMAND_TIMEOUT_S)
        return [line.strip() for line in result.stdout.splitlines() if line.strip()] if result.ok else []

    def __exit__(self, *exc: object) -> None:
        # Only our own lock is removed: the holder's folder must still be in it.
        if self.on_device.transport.run(["test", "-d", posixpath.join(self.folder, self.holder)],
                                        timeout_s=COMMAND_TIMEOUT_S).ok:
            self.on_device.run(["rm", "-rf", self.folder], f"release {self.folder}", check=False)


class DeviceFiles:
    """The few file commands deploy runs on the device, each an argv list with a short deadline."""

    def __init__(self, device: str, transport: Transport) -> None:
        self.device = device
        self.transport = transport

    def run(self, argv: list[str], what: str, *, check: bool = True) -> str:
        result = self.transport.run(argv, timeout_s=COMMAND_TIMEOUT_S)
        if check and not result.ok:
            raise DeployError(f"device {self.device}: could not {what} (`{' '.join(argv)}` exited "
                              f"{result.exit_code}): {(result.stderr or result.stdout).strip()[-300:]}")
        return result.stdout

    def exists(self, folder: str) -> bool:
        return self.transport.run(["test", "-d", folder], timeout_s=COMMAND_TIMEOUT_S).ok

    def verify(self, folder: str, build: LocalBuild) -> list[str]:
        """The build's files whose SHA-256 on the device differs from the host's (missing ones included)."""
        paths = [posixpath.join(folder, f.path) for f in build.files]
        result = self.transport.run(["sha256sum", *paths], timeout_s=COMMAND_TIMEOUT_S)
        seen: dict[str, str] = {}
        for line in result.stdout.splitlines():
            digest, _, path = line.strip().partition("  ")
            seen[path.lstrip("*")] = digest.lower()
        if not seen and not result.ok:
            if "not found" in result.stderr or result.exit_code == 127:
                raise DeployError(f"device {self.device}: `sha256sum` is not there; deploy checks each file's "
                                  "hash on the device with it (coreutils, busybox or toybox have it)")
        return [f.path for f, path in zip(build.files, paths) if seen.get(path) != f.sha256]

    def builds_newest_first(self, root: str) -> list[str]:
        listing = self.run(["ls", "-1t", root], f"list the builds in {root}")
        return [name.strip() for name in listing.splitlines() if HASH_RE.fullmatch(name.strip())]

    def current(self, root: str) -> str | None:
        result = self.transport.run(["readlink", build_folder(root)], timeout_s=COMMAND_TIMEOUT_S)
        target = os.path.basename(result.stdout.strip()) if result.ok else ""
        return target if HASH_RE.fullmatch(target) else None
