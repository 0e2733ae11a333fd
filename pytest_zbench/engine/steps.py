"""One bisect step's parts: an engine commit built in a temporary worktree and deployed, and a pytest session
of the suite against deployed builds (docs/engine-ci.md, "zbench bisect").

The user's checkout is never touched: each commit is checked out with `git worktree add --detach` into a
temporary folder, built there by the user's build command (an argv list, run without a shell), and the
worktree is removed once its build is on the device. A build that fails is a skipped commit, as
`git bisect skip` makes it.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError, ZbenchError
from ..inventory import DeviceSpec
from ..lab.pull_request_ab import write_ab_inventory
from ..transports.base import Transport
from .deploy import Deployed, DeviceFiles, DeviceLock, deploy, hash_build, remove_build, resolve_root

Progress = Callable[[str], None]
BUILD_LOG_TAIL = 1200  # characters of a failed build's output kept in the report
DEFAULT_BUILD_TIMEOUT_MIN = 30.0
STOP_GRACE_S = 15.0  # a child's process group gets SIGTERM, then SIGKILL after this long

# The options of the plugin that only a measuring session accepts (settings.py refuses them beside
# --zbench-goldens-only), and whether each takes a value: a capture session gets the user's arguments without
# them. Launch counts need not be dropped: the capture session's own come after the user's and win.
MEASURING_ONLY = {"--zbench-budget": True, "--zbench-max-launches": True, "--zbench-ab": True,
                  "--zbench-sustained": True, "--zbench-sustained-interval": True, "--zbench-calibrate": False}


class BisectError(UsageError):
    """The bisect cannot run as asked (not a repository, commits not in order); the message says what to fix."""


def capture_args(pytest_args: Sequence[str]) -> list[str]:
    """The user's pytest arguments without those a goldens-only session refuses (MEASURING_ONLY), in both the
    `--opt=value` and the `--opt value` form."""
    kept: list[str] = []
    skip_value = False
    for arg in pytest_args:
        if skip_value:
            skip_value = False
            continue
        name, has_value = arg.partition("=")[0], "=" in arg
        if name in MEASURING_ONLY:
            skip_value = MEASURING_ONLY[name] and not has_value
            continue
        kept.append(arg)
    return kept


@dataclass(frozen=True)
class Finished:
    returncode: int
    output: str  # stdout and stderr, interleaved


class TimedOut(ZbenchError):
    """A child ran past its deadline; its process group was stopped. `output`: what it printed so far."""

    def __init__(self, output: str) -> None:
        super().__init__("timed out")
        self.output = output


def run_group(argv: Sequence[str], cwd: Path, env: dict[str, str] | None = None,
              timeout_s: float | None = None) -> Finished:
    """Run argv in its own process group and wait for it; whatever ends the wait (its exit, the deadline,
    KeyboardInterrupt from SIGINT or the bisect's SIGTERM), nothing of the group outlives this call: it gets
    SIGTERM (so a pytest session writes what it measured and stops its runners), then SIGKILL."""
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout_s)
        return Finished(process.returncode, output)
    except subprocess.TimeoutExpired:
        raise TimedOut(_stop_group(process)) from None
    except BaseException:
        _stop_group(process)
        raise
    finally:
        _signal_group(process, signal.SIGKILL)  # whatever the child left running in its group


def _signal_group(process: subprocess.Popen[str], sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):  # the group is gone
        pass


def _stop_group(process: subprocess.Popen[str], grace_s: float = STOP_GRACE_S) -> str:
    """SIGTERM the child's process group, SIGKILL it after `grace_s`; what the child printed meanwhile."""
    _signal_group(process, signal.SIGTERM)
    try:
        output, _ = process.communicate(timeout=grace_s)
    except subprocess.TimeoutExpired:
        _signal_group(process, signal.SIGKILL)
        output, _ = process.communicate()
    return output or ""


def git(repo: Path, *args: str, check: bool = True) -> str:
    result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise BisectError(f"git {shlex.join(args)} failed in {repo}: {result.stderr.strip()}")
    return result.stdout.strip()


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:12]


def commits_between(repo: Path, good: str, bad: str) -> list[Commit]:
    """good, then every commit on the ancestry path from good to bad, oldest first (bad last)."""
    good_sha = git(repo, "rev-parse", "--verify", f"{good}^{{commit}}")
    bad_sha = git(repo, "rev-parse", "--verify", f"{bad}^{{commit}}")
    if subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", good_sha, bad_sha],
                      capture_output=True, check=False).returncode != 0:
        raise BisectError(f"{good} is not an ancestor of {bad} in {repo}: give the older, good commit first")
    shas = [good_sha, *git(repo, "rev-list", "--ancestry-path", "--reverse", f"{good_sha}..{bad_sha}").split()]
    if len(shas) < 2:
        raise BisectError(f"{good} and {bad} are the same commit: nothing to bisect")
    return [Commit(sha, git(repo, "log", "-1", "--format=%s", sha)) for sha in shas]


@dataclass
class BuiltCommit:
    commit: Commit
    deployed: Deployed | None
    failure: str | None = None  # why the build was skipped

    @property
    def runner(self) -> list[str]:
        assert self.deployed is not None
        return self.deployed.runner


class Builds:
    """Each commit built once and deployed once; every build this bisect put on the device is removed by
    `remove_all` unless it was there before."""

    def __init__(self, repo: Path, build_argv: Sequence[str], artifact: str, entry: str | None, spec: DeviceSpec,
                 transport: Transport, scratch: Path, progress: Progress,
                 timeout_min: float = DEFAULT_BUILD_TIMEOUT_MIN) -> None:
        self.repo, self.build_argv, self.artifact, self.entry = repo, list(build_argv), artifact, entry
        self.timeout_min = timeout_min
        self.spec, self.transport, self.scratch, self.progress = spec, transport, scratch, progress
        self.root = resolve_root(spec, None)
        self.on_device = DeviceFiles(spec.name, transport)
        self.before = set(self.on_device.builds_newest_first(self.root)) if self._root_exists() else set()
        self.built: dict[str, BuiltCommit] = {}

    def _root_exists(self) -> bool:
        return self.on_device.exists(self.root)

    def get(self, commit: Commit) -> BuiltCommit:
        if commit.sha not in self.built:
            self.built[commit.sha] = self._build(commit)
        return self.built[commit.sha]

    def _build(self, commit: Commit) -> BuiltCommit:
        worktree = self.scratch / f"worktree-{commit.short}"
        git(self.repo, "worktree", "add", "--detach", str(worktree), commit.sha)
        try:
            self.progress(f"building {commit.short} {commit.subject!r}: {shlex.join(self.build_argv)}")
            try:
                result = run_group(self.build_argv, worktree, {**os.environ, "ZBENCH_COMMIT": commit.sha},
                                   self.timeout_min * 60)
            except TimedOut as exc:
                self.progress(f"build of {commit.short} ran past {self.timeout_min:g} minutes: skipping the commit")
                return BuiltCommit(commit, None, f"the build did not finish within --build-timeout "
                                                 f"{self.timeout_min:g} minutes: {exc.output[-BUILD_LOG_TAIL:].strip()}")
            except OSError as exc:  # not found, not executable: the command, not the commit's code
                return BuiltCommit(commit, None, f"the build command {self.build_argv[0]!r} could not be started "
                                                 f"in the checkout ({exc.strerror}): check --build")
            if result.returncode != 0:
                tail = result.output[-BUILD_LOG_TAIL:]
                self.progress(f"build of {commit.short} failed (exit {result.returncode}): skipping the commit")
                return BuiltCommit(commit, None, f"the build exited {result.returncode}: {tail.strip()}")
            artifact = worktree / self.artifact
            if not artifact.resolve().is_relative_to(worktree.resolve()) or not artifact.exists():
                return BuiltCommit(commit, None, f"the build made no {self.artifact} in the checkout")
            try:
                build = hash_build(artifact, self.entry)
                deployed = deploy(self.spec, self.transport, build, keep=None, make_current=False,
                                  expect_build=None, progress=self.progress)
            except ZbenchError as exc:
                return BuiltCommit(commit, None, f"the build could not be deployed: {exc}")
            return BuiltCommit(commit, deployed)
        finally:
            subprocess.run(["git", "-C", str(self.repo), "worktree", "remove", "--force", str(worktree)],
                           capture_output=True, check=False)

    def remove_all(self, keep: bool) -> tuple[list[str], dict[str, str]]:
        """Remove the builds this bisect deployed (not those on the device before it): the hashes removed, and
        each build that could not be removed (the device lost) with why, so that the report names it."""
        if keep:
            return [], {}
        removed: list[str] = []
        left: dict[str, str] = {}
        ours = [b.deployed.content_hash for b in self.built.values()
                if b.deployed and b.deployed.content_hash not in self.before]
        try:
            with DeviceLock(self.on_device, self.root):
                for name in ours:
                    try:
                        if remove_build(self.on_device, self.root, name, allow_current=True):
                            removed.append(name)
                    except (ZbenchError, OSError) as exc:
                        left[name] = _first_line(exc)
        except (ZbenchError, OSError) as exc:  # the device lost: the lock could not even be taken
            left.update({name: _first_line(exc) for name in ours if name not in removed and name not in left})
        return removed, left


@dataclass(frozen=True)
class Suite:
    """How the suite is run for a step: the project folder pytest runs in, and its extra arguments."""

    project: Path
    pytest_args: tuple[str, ...]

    def for_captures(self) -> Suite:
        """The suite with only the user's arguments a goldens-only session accepts."""
        return Suite(self.project, tuple(capture_args(self.pytest_args)))

    def session(self, spec: DeviceSpec, runner: Sequence[str], folder: Path, extra: Sequence[str],
                after: Sequence[str] = ()) -> dict[str, Any]:
        """One pytest session on the device with `runner` as its runner; run.json's document. `after` comes
        after the user's arguments (a step's `-k SCENE` narrows the user's own -k)."""
        folder.mkdir(parents=True, exist_ok=True)
        inventory = write_ab_inventory(spec, tuple(runner), folder / "devices.yaml")
        results = folder / "results"
        argv = [sys.executable, "-m", "pytest", f"--zbench-devices={inventory}", f"--zbench-device={spec.name}",
                f"--zbench-results={results}", f"--zbench-history={folder / 'unused-history.sqlite'}",
                "-p", "no:cacheprovider", "-q", "--zbench-keep-runs=0", *extra, *self.pytest_args, *after]
        result = run_group(argv, self.project)
        run_json = results / "run.json"
        if not run_json.is_file():
            raise ZbenchError(f"the suite wrote no run.json (pytest exit {result.returncode}): "
                              f"{result.output[-800:]}")
        document: dict[str, Any] = json.loads(run_json.read_text(encoding="utf-8"))
        return document


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


def make_scratch() -> Path:
    return Path(tempfile.mkdtemp(prefix="zbench-bisect-"))
