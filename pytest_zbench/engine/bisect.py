"""`zbench bisect GOOD BAD`: the engine commit that made a scene slower, or changed its pixels
(docs/engine-ci.md, "zbench bisect").

Speed. The ends are measured first: an interleaved A/B of GOOD (A) against BAD (B) on the device, the gate's
A/B statistics (regression/interleaved_ab.py through the plugin's `--zbench-ab`). Each scene that regressed is
bisected on its own: a step M is judged by two A/B sessions against the ends, GOOD→M and M→BAD.
GOOD→M regressed and M→BAD not: M already has the slowdown (the culprit is at or before it); GOOD→M the same
and M→BAD regressed: M does not (the culprit is after it); anything else (both regressed: the slowdown came in
parts; neither: too small to tell at this step) stops the bisect with the range still open and the evidence,
rather than guessing. The sessions of a pair are shared by every scene.

Pixels. A backend's captures are deterministic (docs/goldens.md), so no statistics: each commit's capture
digests come from a goldens-only session with its build, and for each scene whose digest differs between
GOOD and BAD the first commit where it differs from GOOD's is found by binary search.

A commit whose build fails is skipped, as `git bisect skip` does: the search goes on with the others, and a
culprit next to a skipped commit is reported as the range it could be in.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .steps import Builds, BuiltCommit, Commit, Suite

Progress = Callable[[str], None]
SPEED = "speed"
PIXELS = "pixels"


@dataclass
class Finding:
    """One scene's answer: the culprit, or the range it lies in (`first_bad` the oldest commit known to have
    the change, `last_good` the newest known not to); with the evidence that decided each step."""

    scene: str
    kind: str  # speed | pixels
    status: str  # culprit | ambiguous | no_change
    last_good: Commit | None
    first_bad: Commit | None
    skipped: list[Commit] = field(default_factory=list)  # skipped commits between last_good and first_bad
    effect: dict[str, Any] | None = None  # the deciding metric of GOOD -> first_bad: metric, effect, ci
    evidence: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""

    def line(self) -> str:
        if self.status == "culprit" and self.first_bad is not None:
            text = f"{self.kind} {self.scene}: {self.first_bad.short} {self.first_bad.subject!r}"
            if self.effect:
                text += f" {format_effect(self.effect)}"
            return text
        if self.status == "ambiguous" and self.last_good and self.first_bad:
            return (f"{self.kind} {self.scene}: ambiguous, between {self.last_good.short} and "
                    f"{self.first_bad.short}: {self.reason}")
        return f"{self.kind} {self.scene}: {self.reason}"


def format_effect(effect: dict[str, Any]) -> str:
    ci = effect.get("ci") or []
    interval = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if len(ci) == 2 else ""
    value = effect.get("effect")
    return f"{effect['metric']} x{value:.3f}{interval}" if isinstance(value, (int, float)) else effect["metric"]


class Bisector:
    def __init__(self, commits: Sequence[Commit], builds: Builds, suite: Suite, spec_name: str, scratch: Path,
                 progress: Progress, speed_args: Sequence[str] = ()) -> None:
        self.commits = list(commits)
        self.builds, self.suite, self.device, self.scratch = builds, suite, spec_name, scratch
        self.progress = progress
        self.speed_args = list(speed_args)
        self._ab: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = {}
        self._digests: dict[str, dict[str, list[str]]] = {}
        self.undecided: list[str] = []  # scenes whose ends' A/B was inconclusive: not bisected, said so

    # -- measurements (each once) ---------------------------------------------------------------------

    def built(self, commit: Commit) -> BuiltCommit:
        return self.builds.get(commit)

    def ab(self, a: Commit, b: Commit, scene: str | None = None) -> dict[str, dict[str, Any]]:
        """scene id -> run.json `regression` of B against A, interleaved on the device: every scene of the
        selection, or only `scene` (a step's session measures only the scene being bisected)."""
        for key in ((a.sha, b.sha, ""), (a.sha, b.sha, scene or "")):
            if key in self._ab and (scene is None or scene in self._ab[key]):
                return self._ab[key]
        runner_a, runner_b = self.built(a).runner, self.built(b).runner
        from ..lab.pull_request_ab import ab_option

        self.progress(f"A/B {a.short} (A) against {b.short} (B) on {self.device}{f' for {scene}' if scene else ''}")
        folder = self.scratch / f"ab-{a.short}-{b.short}-{len(self._ab)}"
        document = self.suite.session(self.builds.spec, runner_a, folder,
                                      [ab_option(tuple(runner_b)), "-m", "zbench_perf", *self.speed_args],
                                      after=["-k", scene] if scene else [])
        self._ab[(a.sha, b.sha, scene or "")] = {s["id"]: s.get("regression") or {} for s in document.get("scenes", [])
                                                if s.get("device") == self.device}
        return self._ab[(a.sha, b.sha, scene or "")]

    def digests(self, commit: Commit) -> dict[str, list[str]]:
        """scene id -> the digests of its captures, in frame order, from a goldens-only session."""
        if commit.sha not in self._digests:
            self.progress(f"captures of {commit.short} on {self.device}")
            # One launch of one frame is enough (the captures come after the measured frames), whatever launches
            # the user's arguments ask of the speed sessions.
            document = self.suite.session(self.builds.spec, self.built(commit).runner,
                                          self.scratch / f"pixels-{commit.short}", ["--zbench-goldens-only"],
                                          after=["--zbench-runs=1", "--zbench-frames=1", "--zbench-warmup=0"])
            self._digests[commit.sha] = {
                s["id"]: [str(f.get("digest")) for f in (s.get("correctness") or {}).get("frames", [])]
                for s in document.get("scenes", []) if s.get("device") == self.device}
        return self._digests[commit.sha]

    # -- the searches ----------------------------------------------------------------------------------

    def usable(self, commit: Commit) -> bool:
        return self.built(commit).deployed is not None

    def speed(self, scenes: Sequence[str] | None = None) -> list[Finding]:
        good, bad = self.commits[0], self.commits[-1]
        ends = self.ab(good, bad)
        findings = []
        for scene, regression in sorted(ends.items()):
            if scenes and scene not in scenes:
                continue
            deciding = _deciding(regression)
            self.progress(f"{scene}: {bad.short} against {good.short} {regression.get('verdict')}"
                          + (f", {format_effect(deciding)}" if deciding else ""))
            if regression.get("verdict") == "inconclusive":
                self.undecided.append(scene)
            if regression.get("verdict") != "regressed":
                continue
            findings.append(self._bisect_speed(scene, good, bad))
        return findings

    def _bisect_speed(self, scene: str, good: Commit, bad: Commit) -> Finding:
        lo, hi = 0, len(self.commits) - 1  # commits[lo] known good, commits[hi] known bad
        evidence = [{"a": good.sha, "b": bad.sha, **_summary(self.ab(good, bad)[scene])}]
        skipped: set[int] = set()
        leaned: list[str] = []  # steps placed with the other side inconclusive
        while True:
            candidates = [i for i in range(lo + 1, hi) if i not in skipped]
            if not candidates:
                break
            mid = candidates[len(candidates) // 2]
            commit = self.commits[mid]
            built = self.built(commit)
            if built.deployed is None:
                skipped.add(mid)
                evidence.append({"commit": commit.sha, "skipped": built.failure})
                continue
            before, after = self.ab(good, commit, scene).get(scene, {}), self.ab(commit, bad, scene).get(scene, {})
            evidence += [{"a": good.sha, "b": commit.sha, **_summary(before)},
                         {"a": commit.sha, "b": bad.sha, **_summary(after)}]
            # One side regressed and the other not: the step is placed. An inconclusive other side (an A/A-like
            # pair the gate cannot call the same) still places it, and the finding says it leaned on one.
            has_it = before.get("verdict") == "regressed" and after.get("verdict") != "regressed"
            lacks_it = before.get("verdict") != "regressed" and after.get("verdict") == "regressed"
            if "inconclusive" in (before.get("verdict"), after.get("verdict")) and (has_it or lacks_it):
                leaned.append(commit.short)
            if has_it:
                hi = mid
            elif lacks_it:
                lo = mid
            else:
                return Finding(scene, SPEED, "ambiguous", self.commits[lo], self.commits[hi],
                               [self.commits[i] for i in sorted(skipped) if lo < i < hi],
                               _deciding(self.ab(good, self.commits[hi], scene)[scene]), evidence,
                               f"at {commit.short}, {good.short}->{commit.short} was {before.get('verdict')} and "
                               f"{commit.short}->{bad.short} {after.get('verdict')}: the slowdown may have come in "
                               "parts, or is too small to place at this step (more launches may tell)")
        between = [self.commits[i] for i in sorted(skipped) if lo < i < hi]
        first_bad = self.commits[hi]
        effect = _deciding(self.ab(good, first_bad, scene)[scene])
        if between:
            return Finding(scene, SPEED, "ambiguous", self.commits[lo], first_bad, between, effect, evidence,
                           f"{len(between)} commit(s) in the range could not be built: "
                           + ", ".join(c.short for c in between))
        reason = (f"placed with one side inconclusive at {', '.join(leaned)} (see the evidence)" if leaned else
                  "each step regressed against GOOD or BAD and not against the other")
        return Finding(scene, SPEED, "culprit", self.commits[lo], first_bad, [], effect, evidence, reason)

    def pixels(self, scenes: Sequence[str] | None = None) -> list[Finding]:
        good, bad = self.commits[0], self.commits[-1]
        first, last = self.digests(good), self.digests(bad)
        findings = []
        for scene in sorted(first):
            if (scenes and scene not in scenes) or first[scene] == last.get(scene):
                continue
            lo, hi, skipped = 0, len(self.commits) - 1, set()
            evidence: list[dict[str, Any]] = [{"commit": good.sha, "digests": first[scene]},
                                              {"commit": bad.sha, "digests": last.get(scene)}]
            while candidates := [i for i in range(lo + 1, hi) if i not in skipped]:
                mid = candidates[len(candidates) // 2]
                if not self.usable(self.commits[mid]):
                    skipped.add(mid)
                    evidence.append({"commit": self.commits[mid].sha, "skipped": self.built(self.commits[mid]).failure})
                    continue
                digests = self.digests(self.commits[mid]).get(scene)
                evidence.append({"commit": self.commits[mid].sha, "digests": digests})
                if digests == first[scene]:
                    lo = mid
                else:
                    hi = mid
            between = [self.commits[i] for i in sorted(skipped) if lo < i < hi]
            status = "ambiguous" if between else "culprit"
            reason = ("the capture digests first differ from the good commit's here" if not between else
                      f"{len(between)} commit(s) in the range could not be built: " + ", ".join(c.short for c in between))
            findings.append(Finding(scene, PIXELS, status, self.commits[lo], self.commits[hi], between, None,
                                    evidence, reason))
        return findings


def _summary(regression: dict[str, Any]) -> dict[str, Any]:
    return {"verdict": regression.get("verdict"), **({"deciding": _deciding(regression)} if regression else {})}


def _deciding(regression: dict[str, Any]) -> dict[str, Any] | None:
    """The metric that decided the verdict (a regressed one first), with its effect and interval."""
    metrics = regression.get("metrics") or []
    if not metrics:
        return None
    order = {"regressed": 0, "inconclusive": 1, "improved": 2, "same": 3}
    best = min(metrics, key=lambda m: order.get(m.get("verdict"), 4))
    return {"metric": best.get("metric"), "verdict": best.get("verdict"), "effect": best.get("effect"),
            "ci": best.get("ci")}


def write_report(findings: Sequence[Finding], commits: Sequence[Commit], skipped: Sequence[BuiltCommit],
                 removed: Sequence[str], out: Path) -> tuple[Path, Path]:
    """bisect.json and bisect.md in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    document = {
        "good": asdict(commits[0]), "bad": asdict(commits[-1]), "commits": [asdict(c) for c in commits],
        "findings": [{**asdict(f), "line": f.line()} for f in findings],
        "skipped": [{"commit": asdict(b.commit), "reason": b.failure} for b in skipped],
        "removed_builds": list(removed),
    }
    json_path = out / "bisect.json"
    json_path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    lines = [f"# zbench bisect {commits[0].short}..{commits[-1].short}", "",
             f"{len(commits)} commits from `{commits[0].short}` (good) to `{commits[-1].short}` (bad).", ""]
    if not findings:
        lines.append("No scene regressed or changed its pixels between the two ends.")
    for f in findings:
        lines.append(f"- **{f.kind} `{f.scene}`**: {f.status}: {f.line().split(': ', 1)[1]}")
    for b in skipped:
        lines.append(f"- skipped `{b.commit.short}` {b.commit.subject}: {(b.failure or '').splitlines()[0][:200]}")
    if removed:
        lines.append(f"\nBuilds removed from the device afterwards: {', '.join(removed)}.")
    md_path = out / "bisect.md"
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return json_path, md_path


def clean_scratch(scratch: Path) -> None:
    shutil.rmtree(scratch, ignore_errors=True)
