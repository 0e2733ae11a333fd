"""`zbench bisect GOOD BAD`: the engine commit that made a scene slower, or changed its pixels
(docs/engine-ci.md, "zbench bisect").

Speed. The ends are measured first: an interleaved A/B of GOOD (A) against BAD (B) on the device, the gate's
A/B statistics (regression/interleaved_ab.py through the plugin's `--zbench-ab`). Each scene that regressed is
bisected on its own: a step M is placed from two A/B sessions against the ends, GOOD→M and M→BAD, by the rule
of step_placement.py (one decided side is enough when the other is undecided; decided sides that disagree
leave the range open, with the evidence, rather than a guess). An A/B that ends inconclusive, at the ends or
at a step, is tried again with more launches within the bisect's cap and budget (ab_attempts.py), each retry
a fresh A/B counted in the finding's error bound.

Pixels. A backend's captures are deterministic (docs/goldens.md), so no statistics: each commit's capture
digests come from a goldens-only session with its build, and for each scene whose digest differs between
GOOD and BAD the first commit where it differs from GOOD's is found by binary search.

A commit whose build fails is skipped, as `git bisect skip` does: the search goes on with the others, and a
culprit next to a skipped commit is reported as the range it could be in.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .ab_attempts import Attempt, Design, RetryPolicy, attempt_from_entry, false_alarm_bound, first_design
from .step_placement import Placement, deciding, place
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
    status: str  # culprit | ambiguous | no_change | stopped (the bisect ended before the search did)
    last_good: Commit | None
    first_bad: Commit | None
    skipped: list[Commit] = field(default_factory=list)  # skipped commits between last_good and first_bad
    effect: dict[str, Any] | None = None  # the deciding metric of GOOD -> first_bad: metric, effect, ci
    evidence: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""
    # speed: the sum of the alphas of every A/B attempt made for the scene, a union bound on any of them calling
    # two builds of the same speed `regressed` (ab_attempts.py; docs/engine-ci.md, "Undecided A/Bs: retries")
    false_alarm_bound: float | None = None

    def line(self) -> str:
        if self.status == "culprit" and self.first_bad is not None:
            text = f"{self.kind} {self.scene}: {self.first_bad.short} {self.first_bad.subject!r}"
            if self.effect:
                text += f" {format_effect(self.effect)}"
            return text
        if self.status in ("ambiguous", "stopped") and self.last_good and self.first_bad:
            return (f"{self.kind} {self.scene}: {self.status}, between {self.last_good.short} and "
                    f"{self.first_bad.short}: {self.reason}")
        return f"{self.kind} {self.scene}: {self.reason}"


@dataclass
class Search:
    """The scene being searched now, its range so far (commits[lo] good, commits[hi] bad), so that a bisect
    stopped midway still reports every step judged (Bisector.stopped_finding)."""

    kind: str
    scene: str
    lo: int
    hi: int
    skipped: set[int]
    evidence: list[dict[str, Any]]
    step: int | None = None  # the step being judged, its A/Bs not yet in `evidence`


def format_effect(effect: dict[str, Any]) -> str:
    ci = effect.get("ci") or []
    interval = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if len(ci) == 2 else ""
    value = effect.get("effect")
    return f"{effect['metric']} x{value:.3f}{interval}" if isinstance(value, (int, float)) else effect["metric"]


class Bisector:
    def __init__(self, commits: Sequence[Commit], builds: Builds, suite: Suite, spec_name: str, scratch: Path,
                 progress: Progress, policy: RetryPolicy | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.commits = list(commits)
        self.builds, self.suite, self.device, self.scratch = builds, suite, spec_name, scratch
        self.progress = progress
        self.policy = policy or RetryPolicy(first_design(suite.pytest_args))
        self.clock, self.started = clock, clock()
        # (A sha, B sha, scene) -> every A/B attempt of that pair for that scene, oldest first
        self._attempts: dict[tuple[str, str, str], list[Attempt]] = {}
        self._no_retry: dict[tuple[str, str, str], str] = {}  # why an undecided pair was not tried again
        self._sessions = 0
        self._digests: dict[str, dict[str, list[str]]] = {}
        self.undecided: list[str] = []  # scenes whose ends' A/B stayed inconclusive: not bisected, said so
        self.findings: list[Finding] = []  # every search finished so far, speed and pixels
        self.current: Search | None = None  # the search under way

    # -- measurements (each once) ---------------------------------------------------------------------

    def built(self, commit: Commit) -> BuiltCommit:
        return self.builds.get(commit)

    def _session(self, a: Commit, b: Commit, scene: str | None, design: Design, why: str,
                 number: int) -> dict[str, Attempt]:
        """One A/B session of B against A, interleaved on the device: every scene of the selection, or only
        `scene`; scene id -> its attempt."""
        from ..lab.pull_request_ab import ab_option

        runner_a, runner_b = self.built(a).runner, self.built(b).runner
        self.progress(f"A/B {a.short} (A) against {b.short} (B) on {self.device}{f' for {scene}' if scene else ''}"
                      + (f", attempt {number} with {design.launches} launches per side: {why}" if number > 1 else ""))
        self._sessions += 1
        folder = self.scratch / f"ab-{a.short}-{b.short}-{self._sessions}"
        started = self.clock()
        after = (["-k", scene] if scene else []) + (design.arguments() if number > 1 else [])
        document = self.suite.session(self.builds.spec, runner_a, folder,
                                      [ab_option(tuple(runner_b)), "-m", "zbench_perf"], after=after)
        seconds = self.clock() - started
        return {s["id"]: attempt_from_entry(number, design, why, s, seconds) for s in document.get("scenes", [])
                if s.get("device") == self.device and (scene is None or s["id"] == scene)}

    def attempts(self, a: Commit, b: Commit, scene: str) -> list[Attempt]:
        """The attempts of B against A for `scene`, the first made now if there is none (a step's session
        measures only its scene; the ends' first session measures every scene, shared by all)."""
        key = (a.sha, b.sha, scene)
        ends = (a, b) == (self.commits[0], self.commits[-1])
        if key not in self._attempts and not (ends and (a.sha, b.sha, "") in self._attempts):
            for name, attempt in self._session(a, b, None if ends else scene, self.policy.first, "first", 1).items():
                self._attempts.setdefault((a.sha, b.sha, name), [attempt])
        return self._attempts.setdefault(key, [])  # [] for a scene the ends' session did not measure

    def ab(self, a: Commit, b: Commit, scene: str) -> dict[str, Any]:
        """run.json `regression` of B against A for `scene`: its latest attempt's ({} when not measured)."""
        tried = self.attempts(a, b, scene)
        return tried[-1].regression if tried else {}

    def retry(self, a: Commit, b: Commit, scene: str) -> bool:
        """Try an inconclusive pair again with more launches (ab_attempts.RetryPolicy); False when it is not
        inconclusive or no retry is allowed (the reason is kept for the finding)."""
        key = (a.sha, b.sha, scene)
        tried = self.attempts(a, b, scene)
        if not tried or tried[-1].verdict != "inconclusive" or key in self._no_retry:
            return False
        last = tried[-1]
        refusal = self.policy.refusal(last.design, last.seconds, self.clock() - self.started,
                                      made=min(last.launches_a, last.launches_b), stopped=last.stopped)
        if refusal:
            self._no_retry[key] = refusal
            self.progress(f"{scene}: {a.short}->{b.short} stays inconclusive: {refusal}")
            return False
        design = self.policy.next_design(last.design)
        assert design is not None
        why = (f"attempt {last.number} was inconclusive at {last.launches_a} + {last.launches_b} launches"
               + (f" (stopped: {last.stopped})" if last.stopped else ""))
        attempt = self._session(a, b, scene, design, why, last.number + 1).get(scene)
        if attempt is None:  # the session did not measure the scene: nothing new, no further retry
            self._no_retry[key] = "the retry's session did not measure the scene"
            return False
        tried.append(attempt)
        self.progress(f"{scene}: {a.short}->{b.short} attempt {attempt.number}: {attempt.verdict} at "
                      f"{attempt.launches_a} + {attempt.launches_b} launches")
        return True

    def pair_record(self, a: Commit, b: Commit, scene: str) -> dict[str, Any]:
        """A pair's evidence: its latest verdict and deciding metric, every attempt, why it was not retried."""
        tried = self._attempts.get((a.sha, b.sha, scene), [])
        latest = tried[-1].regression if tried else {}
        record = {"a": a.sha, "b": b.sha, **_summary(latest), "attempts": [t.to_json() for t in tried]}
        if (a.sha, b.sha, scene) in self._no_retry:
            record["not_retried"] = self._no_retry[(a.sha, b.sha, scene)]
        return record

    def scene_attempts(self, scene: str) -> list[Attempt]:
        return [t for (_, _, name), tried in self._attempts.items() if name == scene for t in tried]

    def digests(self, commit: Commit) -> dict[str, list[str]]:
        """scene id -> the digests of its captures, in frame order, from a goldens-only session."""
        if commit.sha not in self._digests:
            self.progress(f"captures of {commit.short} on {self.device}")
            # One launch of one frame is enough (the captures come after the measured frames), whatever launches
            # the user's arguments ask of the speed sessions.
            # The user's arguments are for the speed sessions: those a goldens-only session refuses (the sequential
            # gate's) are left out (steps.capture_args).
            document = self.suite.for_captures().session(self.builds.spec, self.built(commit).runner,
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
        self.attempts(good, bad, "")  # the ends' first session, every scene at once
        findings = []
        for scene in sorted(name for (a, b, name) in list(self._attempts) if (a, b) == (good.sha, bad.sha) and name):
            if scenes and scene not in scenes:
                continue
            while self.retry(good, bad, scene):  # an undecided end is tried again before the scene is given up
                pass
            regression = self.ab(good, bad, scene)
            deciding = _deciding(regression)
            self.progress(f"{scene}: {bad.short} against {good.short} {regression.get('verdict')}"
                          + (f", {format_effect(deciding)}" if deciding else ""))
            if regression.get("verdict") == "inconclusive":
                self.undecided.append(scene)
            if regression.get("verdict") != "regressed":
                continue
            findings.append(self._bisect_speed(scene, good, bad))
            self.findings.append(findings[-1])
            self.current = None
        return findings

    def stopped_finding(self, why: str) -> Finding | None:
        """The search under way when the bisect was stopped, as a finding with every step judged so far and
        the range still open; None when no search was under way. Starts no session."""
        search = self.current
        if search is None:
            return None
        evidence = list(search.evidence)
        good, bad = self.commits[0], self.commits[-1]
        if search.kind == SPEED and search.step is not None:
            step = self.commits[search.step]
            evidence += [self.pair_record(good, step, search.scene), self.pair_record(step, bad, search.scene)]
        between = [self.commits[i] for i in sorted(search.skipped) if search.lo < i < search.hi]
        return Finding(search.scene, search.kind, "stopped", self.commits[search.lo], self.commits[search.hi],
                       between, None, evidence, f"the bisect was stopped ({why}) with this range still open",
                       false_alarm_bound(self.scene_attempts(search.scene)) if search.kind == SPEED else None)

    def _place(self, scene: str, good: Commit, commit: Commit, bad: Commit) -> Placement:
        """Step `commit` placed from its A/Bs against both ends (step_placement.py), an undecided one tried
        again with more launches, the one with fewer attempts first, until placed or no retry is left."""
        ends = _deciding(self.ab(good, bad, scene))
        pairs = ((good, commit), (commit, bad))
        while True:
            placement = place(self.ab(good, commit, scene), self.ab(commit, bad, scene), ends,
                              (good.short, commit.short, bad.short))
            if placement.side != "undecided":
                return placement
            for a, b in sorted(pairs, key=lambda pair: len(self.attempts(pair[0], pair[1], scene))):
                if self.retry(a, b, scene):
                    break
            else:
                return placement

    def _bisect_speed(self, scene: str, good: Commit, bad: Commit) -> Finding:
        lo, hi = 0, len(self.commits) - 1  # commits[lo] known good, commits[hi] known bad
        evidence = [self.pair_record(good, bad, scene)]
        skipped: set[int] = set()
        leaned: list[str] = []  # steps placed from one side, the other undecided
        self.current = search = Search(SPEED, scene, lo, hi, skipped, evidence)
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
            search.step = mid
            placement = self._place(scene, good, commit, bad)
            evidence += [self.pair_record(good, commit, scene), self.pair_record(commit, bad, scene)]
            evidence.append({"commit": commit.sha, "placed": placement.side, "why": placement.why})
            search.step = None
            if placement.leaned:
                leaned.append(commit.short)
            if placement.side == "bad":
                hi = search.hi = mid
            elif placement.side == "good":
                lo = search.lo = mid
            else:
                return self._finding(scene, "ambiguous", lo, hi, skipped, evidence, f"at {commit.short}, "
                                     f"{placement.why}" + (self._why_not_retried(good, commit, bad, scene)
                                                           if placement.side == "undecided" else ""))
        between = [self.commits[i] for i in sorted(skipped) if lo < i < hi]
        if between:
            return self._finding(scene, "ambiguous", lo, hi, skipped, evidence,
                                 f"{len(between)} commit(s) in the range could not be built: "
                                 + ", ".join(c.short for c in between))
        reason = (f"placed from one side, the other undecided, at {', '.join(leaned)} (see the evidence)" if leaned
                  else "each step placed by both of its A/Bs against the ends")
        return self._finding(scene, "culprit", lo, hi, skipped, evidence, reason)

    def _why_not_retried(self, good: Commit, commit: Commit, bad: Commit, scene: str) -> str:
        reasons = [f"{a.short}->{b.short} not retried: {self._no_retry[(a.sha, b.sha, scene)]}"
                   for a, b in ((good, commit), (commit, bad)) if (a.sha, b.sha, scene) in self._no_retry]
        return ("; " + "; ".join(reasons)) if reasons else ""

    def _finding(self, scene: str, status: str, lo: int, hi: int, skipped: set[int], evidence: list[dict[str, Any]],
                 reason: str) -> Finding:
        good, first_bad = self.commits[0], self.commits[hi]
        # The effect: GOOD->first_bad's deciding metric when that A/B regressed, else the ends' (the first bad
        # commit may have been placed by its A/B against BAD alone).
        regression = self.ab(good, first_bad, scene)
        if regression.get("verdict") != "regressed":
            first_bad_pair = (good.sha, self.commits[-1].sha)
            regression = self.ab(good, self.commits[-1], scene)
        else:
            first_bad_pair = (good.sha, first_bad.sha)
        effect = _deciding(regression)
        if effect:
            effect = {**effect, "a": first_bad_pair[0], "b": first_bad_pair[1]}
        return Finding(scene, SPEED, status, self.commits[lo], first_bad,
                       [self.commits[i] for i in sorted(skipped) if lo < i < hi], effect, evidence, reason,
                       false_alarm_bound(self.scene_attempts(scene)))

    def pixels(self, scenes: Sequence[str] | None = None) -> list[Finding]:
        good, bad = self.commits[0], self.commits[-1]
        first, last = self.digests(good), self.digests(bad)
        findings = []
        for scene in sorted(first):
            if (scenes and scene not in scenes) or first[scene] == last.get(scene):
                continue
            lo, hi = 0, len(self.commits) - 1
            skipped: set[int] = set()
            evidence: list[dict[str, Any]] = [{"commit": good.sha, "digests": first[scene]},
                                              {"commit": bad.sha, "digests": last.get(scene)}]
            self.current = search = Search(PIXELS, scene, lo, hi, skipped, evidence)
            while candidates := [i for i in range(lo + 1, hi) if i not in skipped]:
                mid = candidates[len(candidates) // 2]
                if not self.usable(self.commits[mid]):
                    skipped.add(mid)
                    evidence.append({"commit": self.commits[mid].sha, "skipped": self.built(self.commits[mid]).failure})
                    continue
                digests = self.digests(self.commits[mid]).get(scene)
                evidence.append({"commit": self.commits[mid].sha, "digests": digests})
                if digests == first[scene]:
                    lo = search.lo = mid
                else:
                    hi = search.hi = mid
            between = [self.commits[i] for i in sorted(skipped) if lo < i < hi]
            status = "ambiguous" if between else "culprit"
            reason = ("the capture digests first differ from the good commit's here" if not between else
                      f"{len(between)} commit(s) in the range could not be built: " + ", ".join(c.short for c in between))
            findings.append(Finding(scene, PIXELS, status, self.commits[lo], self.commits[hi], between, None,
                                    evidence, reason))
            self.findings.append(findings[-1])
            self.current = None
        return findings


def _summary(regression: dict[str, Any]) -> dict[str, Any]:
    return {"verdict": regression.get("verdict"), **({"deciding": _deciding(regression)} if regression else {})}


def _deciding(regression: dict[str, Any]) -> dict[str, Any] | None:
    return deciding(regression)


def write_report(findings: Sequence[Finding], commits: Sequence[Commit], skipped: Sequence[BuiltCommit],
                 removed: Sequence[str], out: Path, not_bisected: Sequence[dict[str, Any]] = (),
                 searches: dict[str, dict[str, str]] | None = None,
                 left_on_device: dict[str, str] | None = None) -> tuple[Path, Path]:
    """bisect.json and bisect.md in `out`. `not_bisected`: the ends' A/B record of each scene left inconclusive
    between them (Bisector.pair_record with its `scene`). `searches`: speed and pixels, each with its `status`
    (done, failed, stopped, not run) and, unless done, its `error`: each search's findings stand on their own.
    `left_on_device`: builds of the bisect that could not be removed, with why."""
    out.mkdir(parents=True, exist_ok=True)
    document = {
        "good": asdict(commits[0]), "bad": asdict(commits[-1]), "commits": [asdict(c) for c in commits],
        "searches": dict(searches or {}),
        "findings": [{**asdict(f), "line": f.line()} for f in findings],
        "not_bisected": list(not_bisected),
        "skipped": [{"commit": asdict(b.commit), "reason": b.failure} for b in skipped],
        "removed_builds": list(removed),
        "left_on_device": dict(left_on_device or {}),
    }
    json_path = out / "bisect.json"
    json_path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    short = {c.sha: c.short for c in commits}
    lines = [f"# zbench bisect {commits[0].short}..{commits[-1].short}", "",
             f"{len(commits)} commits from `{commits[0].short}` (good) to `{commits[-1].short}` (bad).", ""]
    for kind, search in (searches or {}).items():
        if search.get("status") != "done":
            lines.append(f"The {kind} search {search.get('status')}: {search.get('error', '')}".rstrip(": ") + ".")
    if not findings and not not_bisected and all(s.get("status") == "done" for s in (searches or {}).values()):
        lines.append("No scene regressed or changed its pixels between the two ends.")
    for f in findings:
        lines.append(f"- **{f.kind} `{f.scene}`**: {f.status}: {f.line().split(': ', 1)[1]}")
        for item in f.evidence:
            lines += _evidence_lines(item, short)
        if f.false_alarm_bound is not None:
            attempts = sum(len(item.get("attempts", [])) for item in f.evidence)
            lines.append(f"  - error bound: at most {f.false_alarm_bound:.3g} that any of the scene's A/B attempts "
                         f"called two builds of one speed regressed (the sum of their alphas; {attempts} attempt(s) "
                         "listed above)")
    for record in not_bisected:
        lines.append(f"- **speed `{record['scene']}`**: not bisected, {record.get('verdict')} between the ends")
        lines += _evidence_lines(record, short)
    for b in skipped:
        lines.append(f"- skipped `{b.commit.short}` {b.commit.subject}: {(b.failure or '').splitlines()[0][:200]}")
    if removed:
        lines.append(f"\nBuilds removed from the device afterwards: {', '.join(removed)}.")
    for name, why in (left_on_device or {}).items():
        lines.append(f"\nBuild {name} of this bisect is still on the device ({why}): `zbench deploy --remove {name}`.")
    md_path = out / "bisect.md"
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return json_path, md_path


def _evidence_lines(item: dict[str, Any], short: dict[str, str]) -> list[str]:
    """bisect.md's lines for one evidence record: an A/B pair with every attempt, a placement, a skip."""
    if "attempts" in item:
        pair = f"{short.get(item['a'], item['a'][:12])}->{short.get(item['b'], item['b'][:12])}"
        lines = [f"  - A/B `{pair}`: {item.get('verdict')}"
                 + (f", {format_effect(item['deciding'])}" if item.get("deciding") else "")]
        for attempt in item["attempts"]:
            lines.append(f"    - attempt {attempt['attempt']} ({attempt['design']}, up to "
                         f"{attempt['launches_per_side']} a side): {attempt['verdict']} at {attempt['launches_a']} + "
                         f"{attempt['launches_b']} launches"
                         + (f", stopped {attempt['stopped']}" if attempt.get("stopped") else "")
                         + f", {attempt['seconds']:.0f} s, alpha {attempt['alpha']:g}; why: {attempt['why']}")
        if item.get("not_retried"):
            lines.append(f"    - not retried: {item['not_retried']}")
        return lines
    if "placed" in item:
        return [f"  - step `{short.get(item['commit'], item['commit'][:12])}` placed {item['placed']}: {item['why']}"]
    if "skipped" in item:
        return [f"  - step `{short.get(item['commit'], item['commit'][:12])}` skipped: "
                f"{(item['skipped'] or '').splitlines()[0][:200] if item['skipped'] else ''}"]
    return []


def clean_scratch(scratch: Path) -> None:
    shutil.rmtree(scratch, ignore_errors=True)
