"""One leg of the CI matrix: the scene suite on one device, as the workflow's job runs it (ci/zbench-leg.sh).

The event decides what a slowdown is measured against:

* `pull_request`: A/B on the device, Chromium Pinpoint's way. The workspace holds the pull request's head;
  its merge base with the base branch is checked out beside it (a git worktree in the runner's temporary
  folder); the merge base's runner (A) and the head's (B) are launched interleaved (`--zbench-ab`), and B
  regressed fails. The history is neither read nor written (a throwaway one in the temporary folder).
* anything else (`push` to the default branch, `schedule`, `workflow_dispatch`): the history gate, against
  the history kept on the runner's machine between jobs, outside the workspace: $ZBENCH_HISTORY_URL (a path,
  or a database URL, which is handed to pytest through the environment and never put on a command line; the
  plugin's and `zbench history`'s variable too), else $ZBENCH_HISTORY_DIR/history.sqlite, else history.sqlite
  in ~/.local/share/zbench.

An engine's pull request (docs/engine-ci.md) has its two builds deployed before the leg: the device's runner
(`{deployed}`) is the merge base's, and $ZBENCH_AB_RUNNER the head's runner argv (one string, split like a
shell command line), which the leg launches as B without a `ci.ab_runner`.

Results go to zbench-results/<device>/ in the workspace (emptied first: a self-hosted runner keeps its
workspace, and an earlier run's files must never pass for this one's), with junit.xml, run.json, report.html
and summary.md; the summary is appended to $GITHUB_STEP_SUMMARY, and the outputs (folder, artifact name,
counts) written to $GITHUB_OUTPUT before the suite runs, so the upload steps find them whatever happens.
The exit status is pytest's.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError, ZbenchError
from ..host.report.markdown_summary import Link, outcome_counts, render_summary
from ..inventory import DeviceSpec, load_inventory
from ..regression.location import HISTORY_ENV
from .github import append_step_summary, write_outputs
from .matrix import ARTIFACT_PREFIX, leg_of
from .pull_request_ab import ab_option, ab_runners, write_ab_inventory

RESULTS_FOLDER = "zbench-results"
AB_RUNNER_ENV = "ZBENCH_AB_RUNNER"
PULL_REQUEST_EVENTS = ("pull_request",)
EXIT_USAGE = 2


@dataclass(frozen=True)
class LegEnvironment:
    """What the job's environment tells the leg (GitHub's variables, and the lab's ZBENCH_* ones)."""

    workspace: Path
    temp: Path
    event_name: str = "push"
    event_path: Path | None = None
    output_file: Path | None = None
    step_summary_file: Path | None = None
    run_url: str | None = None
    run_attempt: str = "1"
    history: str | None = None
    history_dir: Path | None = None
    ab_runner: str | None = None  # $ZBENCH_AB_RUNNER: B of a pull request, a deployed build's runner argv

    @classmethod
    def from_environ(cls, environ: Mapping[str, str], cwd: Path) -> LegEnvironment:
        def path(name: str) -> Path | None:
            return Path(environ[name]) if environ.get(name) else None

        run_url = None
        if environ.get("GITHUB_REPOSITORY") and environ.get("GITHUB_RUN_ID"):
            server = environ.get("GITHUB_SERVER_URL") or "https://github.com"
            run_url = f"{server}/{environ['GITHUB_REPOSITORY']}/actions/runs/{environ['GITHUB_RUN_ID']}"
        data_home = Path(environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
        return cls(
            workspace=path("GITHUB_WORKSPACE") or cwd,
            temp=path("RUNNER_TEMP") or Path(tempfile.gettempdir()),
            event_name=environ.get("GITHUB_EVENT_NAME") or "push",
            event_path=path("GITHUB_EVENT_PATH"),
            output_file=path("GITHUB_OUTPUT"),
            step_summary_file=path("GITHUB_STEP_SUMMARY"),
            run_url=run_url,
            run_attempt=environ.get("GITHUB_RUN_ATTEMPT") or "1",
            history=environ.get(HISTORY_ENV) or None,
            ab_runner=environ.get(AB_RUNNER_ENV) or None,
            history_dir=path("ZBENCH_HISTORY_DIR") or data_home / "zbench",
        )

    @property
    def pull_request(self) -> bool:
        return self.event_name in PULL_REQUEST_EVENTS


@dataclass
class LegPlan:
    """The pytest command of the leg and what the summary says about it."""

    argv: list[str]
    env: dict[str, str]
    mode: str  # one of LEG_MODES (inventory.py), or `error`
    notes: list[str] = field(default_factory=list)


def run_leg(device: str, *, inventory_path: Path, env: LegEnvironment, keyword: str = "",
            pytest_args: Sequence[str] = (), environ: Mapping[str, str] = os.environ) -> int:
    results = env.workspace / RESULTS_FOLDER / device
    # Unique per device and attempt: upload-artifact v4 names are immutable within a run, re-runs included.
    artifact = f"{ARTIFACT_PREFIX}{device}-{env.run_attempt}"
    # Relative to the workspace, as upload-artifact and the JUnit action take paths best.
    folder = f"{RESULTS_FOLDER}/{device}"
    files = {"results": folder, "junit": f"{folder}/junit.xml", "run-json": f"{folder}/run.json",
             "summary": f"{folder}/summary.md"}
    if env.output_file:
        write_outputs(env.output_file, {"artifact": artifact, **files})
    if results.exists():
        shutil.rmtree(results)
    results.mkdir(parents=True)
    scratch = env.temp / f"zbench-leg-{device}"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    plan: LegPlan | None = None
    try:
        spec = load_inventory(inventory_path).get(device)
        leg_of(spec)  # a device without a `ci` key is not a leg
        plan = _plan(spec, inventory_path, env, results, scratch, dict(environ))
        plan.argv += [*(spec.ci.args_for(plan.mode) if spec.ci else ()), *(["-k", keyword] if keyword else []),
                      *pytest_args]
        print(f"zbench leg: {plan.mode} on {device}: {shlex.join(plan.argv)}", flush=True)
        status = subprocess.call(plan.argv, cwd=env.workspace, env=plan.env)
    except ZbenchError as exc:
        print(f"zbench leg: {exc}", file=sys.stderr)
        status = EXIT_USAGE
        plan = LegPlan([], {}, "error", [f"the leg could not run: {exc}"])
    finally:
        # The merge base's worktree lives in the scratch folder: deleting it and pruning unregisters it.
        shutil.rmtree(scratch, ignore_errors=True)
        if env.pull_request:
            _git(env.workspace, "worktree", "prune", check=False)
    _report(device, plan, status, results, artifact, env)
    return status


class LegError(UsageError):
    """The leg cannot run as asked (no merge base, a bad event file); the message says what to fix."""


def _plan(spec: DeviceSpec, inventory_path: Path, env: LegEnvironment, results: Path, scratch: Path,
          environ: dict[str, str]) -> LegPlan:
    argv = [sys.executable, "-m", "pytest", f"--zbench-device={spec.name}", f"--zbench-results={results}",
            f"--junitxml={results / 'junit.xml'}", "-p", "no:cacheprovider", "-rfEs",
            # A leg's folder is uploaded as it is, one session each: a run archive would upload it twice.
            "--zbench-keep-runs=0"]
    if env.pull_request:
        return _plan_pull_request(spec, inventory_path, env, scratch, environ, argv)
    history, where = _history(env)
    plan = LegPlan(argv + [f"--zbench-devices={inventory_path}", "--zbench-baseline=history"], environ, "history")
    if "://" in history:  # a database URL: through the environment, off every command line and log
        plan.env["PYTEST_ADDOPTS"] = " ".join(filter(None, (environ.get("PYTEST_ADDOPTS"),
                                                            shlex.quote(f"--zbench-history={history}"))))
    else:
        Path(history).parent.mkdir(parents=True, exist_ok=True)
        plan.argv.append(f"--zbench-history={history}")
        if Path(history).resolve().is_relative_to(env.workspace.resolve()):
            plan.notes.append(f"the history {history} is inside the workspace, which a fresh checkout empties: "
                              "set ZBENCH_HISTORY_DIR to a folder outside it")
    plan.notes.insert(0, f"History gate on `{spec.name}` ({env.event_name}): each scene judged against its recent "
                         f"comparable runs in {where}, and recorded there.")
    return plan


def _history(env: LegEnvironment) -> tuple[str, str]:
    """(the history to pass to pytest, how the summary names it)."""
    if env.history:
        return env.history, (f"the history database of ${HISTORY_ENV}" if "://" in env.history
                             else f"`{env.history}`")
    assert env.history_dir is not None
    path = str(env.history_dir / "history.sqlite")
    return path, f"`{path}`"


def _plan_pull_request(spec: DeviceSpec, inventory_path: Path, env: LegEnvironment, scratch: Path,
                       environ: dict[str, str], argv: list[str]) -> LegPlan:
    throwaway = [f"--zbench-history={scratch / 'unused-history.sqlite'}"]
    head, base_tip = _pull_request_shas(env)
    if env.ab_runner:
        try:
            runner_b = tuple(shlex.split(env.ab_runner))
        except ValueError as exc:
            raise LegError(f"${AB_RUNNER_ENV}: not an argv string ({exc})") from None
        plan = LegPlan(argv + [f"--zbench-devices={inventory_path}", ab_option(runner_b), *throwaway], environ, "ab")
        plan.notes.append(f"Pull request A/B on `{spec.name}`: the head `{head[:12]}`'s deployed build (B, "
                          f"`{shlex.join(runner_b)}`) against the device's runner (A, `{shlex.join(spec.runner)}`), "
                          "launches interleaved on the device; B regressed fails. The history is neither read nor "
                          "written.")
        return plan
    if spec.ci is None or spec.ci.ab_runner is None:
        plan = LegPlan(argv + [f"--zbench-devices={inventory_path}", "--zbench-baseline=none", *throwaway],
                       environ, "suite")
        plan.notes.append(f"Pull request on `{spec.name}`: no A/B, the device has no `ci.ab_runner` (a runner "
                          f"built from a checkout); the suite ran on the head `{head[:12]}` without a regression gate.")
        return plan
    workspace_head = _git(env.workspace, "rev-parse", "HEAD")
    merge_base = _git(env.workspace, "merge-base", base_tip, workspace_head,
                      hint="check out with fetch-depth: 0, so that the base branch's history is there")
    base_dir = scratch / "merge-base"
    _git(env.workspace, "worktree", "prune")
    _git(env.workspace, "worktree", "add", "--detach", str(base_dir), merge_base)
    plan = LegPlan(argv, environ, "ab")
    runner_a, runner_b = ab_runners(spec, base_dir, env.workspace)
    inventory = write_ab_inventory(spec, runner_a, scratch / "devices.ab.yaml")
    plan.argv += [f"--zbench-devices={inventory}", ab_option(runner_b), *throwaway]
    plan.notes.append(f"Pull request A/B on `{spec.name}`: the head `{workspace_head[:12]}` (B) against its merge "
                      f"base `{merge_base[:12]}` (A), launches interleaved on the device; B regressed fails. The "
                      "history is neither read nor written.")
    if workspace_head != head:
        plan.notes.append(f"the workspace is at `{workspace_head[:12]}`, not the pull request's head `{head[:12]}`: "
                          "check out `github.event.pull_request.head.sha`")
    return plan


def _pull_request_shas(env: LegEnvironment) -> tuple[str, str]:
    """(head sha, base branch tip sha) from the event file."""
    if env.event_path is None:
        raise LegError("a pull_request leg needs GITHUB_EVENT_PATH, the event's JSON")
    try:
        event = json.loads(env.event_path.read_text(encoding="utf-8"))
        return event["pull_request"]["head"]["sha"], event["pull_request"]["base"]["sha"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LegError(f"{env.event_path}: not a pull_request event with head and base shas ({exc!r})") from None


def _git(workspace: Path, *args: str, hint: str = "", check: bool = True) -> str:
    result = subprocess.run(["git", "-C", str(workspace), *args], capture_output=True, text=True, check=False)
    if result.returncode != 0 and check:
        raise LegError(f"git {' '.join(args)} failed in {workspace}: {result.stderr.strip()}"
                       + (f"; {hint}" if hint else ""))
    return result.stdout.strip()


def _report(device: str, plan: LegPlan, status: int, results: Path, artifact: str, env: LegEnvironment) -> None:
    """summary.md in the results, the step summary, and the counts as outputs."""
    documents = []
    notes = list(plan.notes)
    for name in ("run.json", "run.invalid.json"):
        if (results / name).is_file():
            try:
                documents.append(json.loads((results / name).read_text(encoding="utf-8")))
            except (OSError, ValueError) as exc:
                notes.append(f"{name} could not be read: {exc}")
            if name == "run.invalid.json":
                notes.append("run.json broke its schema and was written as run.invalid.json")
            break
    else:
        notes.append(f"pytest exited with status {status} and wrote no run.json; the job's log has its output")
    links = [Link(f"artifact {artifact} (the run's artifacts)", env.run_url + "#artifacts")] if env.run_url else []
    markdown = render_summary(documents, title=f"zbench {device}", links=links, notes=notes)
    (results / "summary.md").write_text(markdown, encoding="utf-8")
    if env.step_summary_file:
        append_step_summary(env.step_summary_file, markdown)
    counts = outcome_counts([s for doc in documents for s in doc.get("scenes", [])])
    if env.output_file:
        write_outputs(env.output_file, {
            "mode": plan.mode, "exit-code": str(status), "scenes": str(counts["scenes"]),
            "regressed": str(counts["verdict regressed"]), "perf-failed": str(counts["perf failed"]),
            "golden-failed": str(counts["golden failed"]), "inconclusive": str(counts["verdict inconclusive"]),
        })
    print(f"zbench leg: {device} {plan.mode}: pytest exit {status}; summary in {results / 'summary.md'}", flush=True)
