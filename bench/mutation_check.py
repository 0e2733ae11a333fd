"""Deliberate changes to the product, one at a time, and whether the tests that should notice do.

Each mutation replaces one exact piece of a product file with a plausible bug (a doubled significance level,
a kill path that no longer sends SIGKILL, a reader that lets NaN through, ...) in a scratch copy of this
checkout (tracked files as they are now, uncommitted edits included; this checkout is never touched), runs
the tests that cover that code against the copy, and reports the mutation `killed` (a test failed),
`survived` (every test passed: a hole in the tests) or `error` (the tests could not run: the mutation or its
selection is broken). First the selections run once unmutated, as they must pass for the rest to mean
anything. The areas: statistics, the regression gate, the golden matcher, the transports' kill paths and
file transfers, the protocol readers, and the CI rules around them.

    python bench/mutation_check.py [--list] [-k SUBSTRING] [--workers N] [--no-baseline] [--timeout S]

Exit status: 0 when every mutation was killed, 1 when any survived or errored.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutation:
    name: str
    area: str
    path: str  # relative to the checkout
    old: str  # must occur exactly once in the file
    new: str
    tests: tuple[str, ...]  # pytest arguments: node ids, files, -k expressions


MUTATIONS: tuple[Mutation, ...] = (
    # -- statistics
    Mutation("percentiles-nearest-rank", "statistics", "pytest_zbench/stats.py",
             'PERCENTILE_METHOD: Literal["linear"] = "linear"', 'PERCENTILE_METHOD: Literal["linear"] = "nearest"',
             ("tests/test_stats.py",)),
    Mutation("jank-without-rounding-slack", "statistics", "pytest_zbench/stats.py",
             "jank = int(np.count_nonzero(known > budget_ms + ROUNDING_MS))",
             "jank = int(np.count_nonzero(known > budget_ms))", ("tests/test_stats.py",)),
    Mutation("severe-jank-at-three-budgets", "statistics", "pytest_zbench/stats.py",
             "known > 2 * budget_ms + ROUNDING_MS", "known > 3 * budget_ms + ROUNDING_MS", ("tests/test_stats.py",)),
    # -- the regression gate
    Mutation("alpha-doubled", "gate", "pytest_zbench/regression/config.py",
             "DEFAULT_ALPHA = 0.01", "DEFAULT_ALPHA = 0.02", ("tests/regression/test_regression_gate.py",)),
    Mutation("t-test-two-sided", "gate", "pytest_zbench/regression/multiplicity.py",
             "p_slow = np.where(np.isnan(t), 1.0, sps.t.sf(t, df))",
             "p_slow = np.where(np.isnan(t), 1.0, 2 * sps.t.sf(np.abs(t), df))",
             ("tests/regression/test_regression_gate.py",)),
    Mutation("between-session-spread-ignored", "gate", "pytest_zbench/regression/hierarchy.py",
             "tau2[j] = max(0.0, (ss - w_sum) / dfs)", "tau2[j] = 0.0",
             ("tests/regression/test_regression_gate.py", "tests/regression/test_regression_hierarchy.py")),
    Mutation("regressed-on-effect-or-p", "gate", "pytest_zbench/regression/gate.py",
             "if effect > worse_bar and p_worse <= alpha and ci[0] > 1:",
             "if effect > worse_bar or p_worse <= alpha and ci[0] > 1:",
             ("tests/regression/test_regression_gate.py",)),
    # -- the golden matcher
    Mutation("max-delta-inclusive", "matcher", "pytest_zbench/golden/match.py",
             "over = delta > tol.max_delta", "over = delta >= tol.max_delta", ("tests/golden/test_golden_match.py",)),
    Mutation("max-pixels-off-by-one", "matcher", "pytest_zbench/golden/match.py",
             'if m["pixels_over_gated"] > bound:', 'if m["pixels_over_gated"] > bound + 1:',
             ("tests/golden/test_golden_match.py",)),
    Mutation("ssim-sigma", "matcher", "pytest_zbench/golden/perceptual.py",
             "SSIM_SIGMA = 1.5", "SSIM_SIGMA = 1.4", ("tests/golden/test_golden_perceptual.py",)),
    Mutation("ssim-c2-doubled", "matcher", "pytest_zbench/golden/perceptual.py",
             "c2 = (SSIM_K2 * data_range) ** 2", "c2 = 2 * (SSIM_K2 * data_range) ** 2",
             ("tests/golden/test_golden_perceptual.py",)),
    Mutation("cross-reference-always-passes", "matcher", "pytest_zbench/golden/check.py",
             'status = "passed" if comparison.passed else "failed"', 'status = "passed"',
             ("tests/golden/test_golden_check.py",)),
    Mutation("cross-reference-own-tolerance", "matcher", "pytest_zbench/golden/check.py",
             "resolve_tolerance(tolerance, backend, golden_backend=SOFTWARE,",
             "resolve_tolerance(tolerance, backend, golden_backend=backend,", ("tests/golden/test_golden_check.py",)),
    Mutation("no-cross-backend-check", "matcher", "pytest_zbench/golden/check.py",
             "    if backend != SOFTWARE:\n        return CROSS_BACKEND", "    if backend != SOFTWARE:\n        return None",
             ("tests/golden/test_golden_check.py",)),
    # -- transports: kill paths and file transfers
    Mutation("command-kill-script-unused", "transports", "pytest_zbench/transports/command.py",
             'if "kill" not in self.prefixes:', 'if True:',
             ("tests/remote/test_device_scripts.py", "tests/remote/test_transports.py", "tests/faults")),
    Mutation("ssh-no-sigkill-follow-up", "transports", "pytest_zbench/transports/ssh.py",
             'await self._shell_quiet(kill_command(pid, "KILL", token))', "await asyncio.sleep(0)",
             ("tests/remote/test_transports.py", "tests/faults")),
    Mutation("adb-no-sigkill-follow-up", "transports", "pytest_zbench/transports/adb.py",
             'self._quiet(kill_command(pid, "KILL", token))', "pass",
             ("tests/remote/test_transports.py", "tests/faults")),
    Mutation("sftp-error-swallowed", "transports", "pytest_zbench/transports/ssh.py",
             'raise DeviceError(f"device {self.name}: cannot {what}: {exc.reason}") from None',
             "return None  # type: ignore[return-value]", ("tests/remote/test_transports.py", "tests/faults")),
    Mutation("transfer-not-retried-after-a-drop", "transports", "pytest_zbench/transports/ssh.py",
             "                if not dead and exc.code not in (asyncssh.FX_CONNECTION_LOST, asyncssh.FX_NO_CONNECTION):\n",
             "                if True:\n", ("tests/remote/test_transports.py", "tests/faults")),
    # -- protocol readers
    Mutation("frames-csv-lets-nan-through", "protocol", "pytest_zbench/protocol/__init__.py",
             "if math.isnan(value) or math.isinf(value):", "if math.isinf(value):", ("tests/test_protocol.py",)),
    Mutation("gpu-zero-not-garbage", "protocol", "pytest_zbench/protocol/__init__.py",
             "    if value == 0:\n        return \"0 (the counter did not run)\"",
             "    if value < 0:\n        return \"0 (the counter did not run)\"", ("tests/test_protocol.py",)),
    Mutation("pid-line-accepts-anything", "protocol", "pytest_zbench/transports/_shell.py",
             "if digits.isascii() and digits.isdigit():", "if digits.isascii() and digits.strip('-').isdigit():",
             ("tests/remote/test_transports.py", "tests/test_protocol.py", "tests/faults/test_faults_shell_wrapper.py")),
    # -- CI rules and the GPU timer check
    Mutation("ci-skips-a-device-it-cannot-run", "ci", "pytest_zbench/plugin/fixtures.py",
             "    if ci:\n        pytest.fail(", "    if False:\n        pytest.fail(",
             ("tests/test_plugin.py::test_under_ci_a_scene_the_device_cannot_run_fails_instead_of_skipping",)),
    Mutation("timer-check-never-passes", "ci", "pytest_zbench/gpu_timing.py",
             "    if ratio < min_ratio:\n", "    if ratio < min_ratio * 1000:\n",
             ("tests/gles2/test_gles2_plugin.py::test_gles2_device_reports_renderer_timer_source_and_per_frame_gpu_ms",)),
)


def scratch_copy(dest: Path) -> None:
    """The checkout's tracked files as they are in the working tree (not the index, not HEAD)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if source.is_file() or source.is_symlink():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)


def run_tests(tree: Path, tests: tuple[str, ...], workers: int, timeout: float) -> tuple[str, float, str]:
    """(outcome, seconds, the last lines of pytest's output) of the selection against `tree`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree), env.get("PYTHONPATH")) if p)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    argv = [sys.executable, "-m", "pytest", *tests, "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    if workers > 1:
        argv += ["-n", str(workers)]
    started = time.monotonic()
    try:
        done = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - started, ""
    took = time.monotonic() - started
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-3:])
    outcome = {0: "passed", 1: "failed"}.get(done.returncode, f"error (pytest exit {done.returncode})")
    # Under pytest-xdist, -x stops the workers after the first failure and pytest exits 2 (interrupted).
    if done.returncode == 2 and re.search(r"\b\d+ failed\b", done.stdout):
        outcome = "failed"
    return outcome, took, tail


def apply(tree: Path, mutation: Mutation) -> str:
    path = tree / mutation.path
    text = path.read_text(encoding="utf-8")
    found = text.count(mutation.old)
    if found != 1:
        raise SystemExit(f"mutation {mutation.name}: {mutation.path} contains its text {found} times, not once; "
                         f"update the mutation to the code as it is")
    path.write_text(text.replace(mutation.old, mutation.new), encoding="utf-8")
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("-k", dest="select", default="", help="only mutations whose name or area contains this")
    parser.add_argument("--workers", type=int, default=1, help="pytest-xdist workers per selection (default 1)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated run of the selections")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per selection (default 900)")
    args = parser.parse_args()
    chosen = [m for m in MUTATIONS if args.select in m.name or args.select in m.area]
    if args.list:
        for m in chosen:
            print(f"{m.area:<11} {m.name:<36} {m.path}  [{' '.join(m.tests)}]" )
        return 0
    if not chosen:
        print(f"no mutation matches {args.select!r}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="zbench-mutants-") as scratch:
        tree = Path(scratch)
        scratch_copy(tree)
        if not args.no_baseline:
            selections = sorted({t for m in chosen for t in m.tests})
            outcome, took, tail = run_tests(tree, tuple(selections), args.workers, args.timeout * 2)
            print(f"unmutated: {outcome} in {took:.0f} s ({len(selections)} selections)")
            if outcome != "passed":
                print(tail, file=sys.stderr)
                print("the tests fail without any mutation: fix that first", file=sys.stderr)
                return 1
        results = []
        for m in chosen:
            original = apply(tree, m)
            try:
                outcome, took, tail = run_tests(tree, m.tests, args.workers, args.timeout)
            finally:
                (tree / m.path).write_text(original, encoding="utf-8")
            verdict = {"failed": "killed", "passed": "survived", "timeout": "killed (timeout)"}.get(outcome, outcome)
            results.append((m, verdict))
            print(f"{m.area:<11} {m.name:<36} {verdict:<9} {took:5.0f} s", flush=True)
    survived = [m for m, v in results if not v.startswith("killed")]
    print(f"\n{len(results) - len(survived)} of {len(results)} mutations killed")
    for m in survived:
        print(f"  not killed: {m.name} ({m.path})")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
