"""A Markdown summary of one or more run.json documents, for $GITHUB_STEP_SUMMARY and pull request comments.

Regressed scenes come first (per regressed metric: effect, confidence interval, p and the baseline), then
perf tests that failed for another reason, golden failures with the metric that failed, inconclusive
verdicts with the launches per side that would decide them, and quarantined devices; counts on top, links
to the artifacts at the end. GitHub rejects a step summary over 1 MiB, so rows are added only while they
fit a byte budget under that, and each section says how many rows it left out (run.json has them all).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...regression.gate import GateConfig, interval_text, launches_to_decide
from .builds import build_text

GITHUB_SUMMARY_LIMIT = 1024 * 1024
# Headroom under GitHub's limit for what the leg appends around the summary (notes, other steps' lines).
DEFAULT_BUDGET = GITHUB_SUMMARY_LIMIT - 64 * 1024
MAX_CELL_CHARS = 300
LEFT_OUT = "left out to keep the summary under GitHub's 1 MiB; run.json has all."
ARTIFACT_CONTENTS = ("- each artifact holds `run.json` (every number), `report.html` (charts, golden diffs), "
                     "`junit.xml` and the per-frame CSVs")


@dataclass(frozen=True)
class Link:
    text: str
    url: str


def render_summary(documents: Sequence[Mapping[str, Any]], *, title: str = "zbench",
                   links: Sequence[Link] = (), notes: Sequence[str] = (),
                   budget_bytes: int = DEFAULT_BUDGET) -> str:
    """The Markdown; its UTF-8 size never exceeds `budget_bytes` (a few KiB at least)."""
    scenes = [scene for doc in documents for scene in doc.get("scenes", [])]
    counts = outcome_counts(scenes)
    head = [f"## {_text(title)}: {_headline(counts)}", ""]
    head += [f"> {_text(note)}" for note in notes] + ([""] if notes else [])
    head += _run_lines(documents) + [""] + _counts_table(counts) + [""]
    tail = ["### Artifacts", ""] + [f"- [{_text(link.text)}]({_url(link.url)})" for link in links]
    tail += [ARTIFACT_CONTENTS, ""]
    budget = _Budget(budget_bytes - _size(head) - _size(tail))
    body: list[str] = []
    sections = (_regressed(scenes), _perf_failures(scenes), _golden_failures(scenes), _untriaged(scenes),
                _inconclusive(scenes), _quarantined(documents))
    for i, section in enumerate(sections):
        body += budget.section(*section, sections_after=len(sections) - 1 - i)
    return "\n".join(head + body + tail)


# ----------------------------------------------------------------------------------------------- counts


def outcome_counts(scenes: Sequence[Mapping[str, Any]]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for scene in scenes:
        counts["scenes"] += 1
        outcome = scene.get("outcome", "not_run")
        counts[f"perf {outcome}"] += 1
        verdict = (scene.get("regression") or {}).get("verdict")
        if verdict:
            counts[f"verdict {verdict}"] += 1
        if outcome in ("failed", "error") and verdict != "regressed":
            counts["perf failed otherwise"] += 1
        golden = (scene.get("correctness") or {}).get("outcome")
        if golden:
            counts[f"golden {golden}"] += 1
    return counts


def _headline(counts: Counter[str]) -> str:
    parts = [f"{counts[key]} {label}" for key, label in (
        ("verdict regressed", "regressed"), ("perf failed otherwise", "perf failed"), ("golden failed", "golden failed"),
        ("verdict inconclusive", "inconclusive")) if counts[key]]
    return ", ".join(parts) if parts else f"{counts['scenes']} scene(s), nothing failed"


def _counts_table(counts: Counter[str]) -> list[str]:
    columns = (("scenes", "scenes"), ("perf passed", "perf passed"), ("perf failed", "perf failed"),
               ("perf skipped", "skipped"), ("verdict regressed", "regressed"), ("verdict improved", "improved"),
               ("verdict same", "same"), ("verdict inconclusive", "inconclusive"),
               ("verdict no_baseline", "no baseline"), ("golden passed", "golden passed"),
               ("golden failed", "golden failed"))
    return ["| " + " | ".join(label for _, label in columns) + " |",
            "|" + "---:|" * len(columns),
            "| " + " | ".join(str(counts[key]) for key, _ in columns) + " |"]


def _run_lines(documents: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = []
    for doc in documents:
        app = doc.get("app") or {}
        build = str(app.get("build_hash") or "?")[:12] + (" (dirty)" if app.get("dirty") else "")
        devices = ", ".join(sorted(doc.get("devices") or {})) or "?"
        lines.append(f"- run `{_text(str(doc.get('run_id', '?'))[:12])}` of build `{_text(build)}` on "
                     f"{_text(devices)}, started {_text(str(doc.get('started_utc', '?')))}")
        lines += [f"  - A/B on {_text(device)}: B {_text(build_text(sides.get('b')))} against A "
                  f"{_text(build_text(sides.get('a')))}" for device, sides in sorted((app.get("ab_builds") or {}).items())]
    return lines


# --------------------------------------------------------------------------------------------- sections

Section = tuple[str, Sequence[str], list[Sequence[str]]]  # (heading with its counts, column names, rows)


def _regressed(scenes: Sequence[Mapping[str, Any]]) -> Section:
    """One row per regressed metric."""
    def rows() -> Iterable[Sequence[str]]:
        for scene in _with_verdict(scenes, "regressed"):
            regression = scene["regression"]
            for metric in regression.get("metrics", []):
                if metric.get("verdict") != "regressed":
                    continue
                ci = metric.get("ci")
                yield (scene["id"], scene["device"], metric["metric"], _effect(metric.get("effect")),
                       interval_text(ci[0], ci[1]) if ci and None not in ci else "-",
                       _p(metric.get("p")), _change(metric), _baseline(regression, metric))
    found = list(rows())
    count = sum(1 for _ in _with_verdict(scenes, "regressed"))
    return (f"Regressed ({count} scene(s), {len(found)} metric(s))",
            ("scene", "device", "metric", "effect", "95% CI", "p", "baseline → now", "baseline"), found)


def _perf_failures(scenes: Sequence[Mapping[str, Any]]) -> Section:
    def rows() -> Iterable[Sequence[str]]:
        for scene in scenes:
            regression = scene.get("regression") or {}
            if scene.get("outcome") not in ("failed", "error") or regression.get("verdict") == "regressed":
                continue
            issues = scene.get("issues") or []
            reason = "; ".join(f"[{i.get('kind')}] {i.get('detail', '')}" for i in issues[:3]) or (
                regression.get("message") or "see the JUnit report")
            runs = f"{scene.get('complete_runs', '?')}/{scene.get('runs', '?')}"
            yield scene["id"], scene["device"], runs, reason
    return _counted("Perf tests failed (not a regression)", ("scene", "device", "complete launches", "why"), rows())


def _golden_failures(scenes: Sequence[Mapping[str, Any]]) -> Section:
    def rows() -> Iterable[Sequence[str]]:
        for scene in scenes:
            correctness = scene.get("correctness") or {}
            if correctness.get("outcome") != "failed":
                continue
            for invariant in correctness.get("invariants") or []:
                yield scene["id"], scene["device"], "-", "invariant", invariant, "-"
            for frame in correctness.get("frames") or []:
                cross = frame.get("cross_backend") or {}
                if frame.get("status") in ("failed", "missing", "error"):
                    yield (scene["id"], scene["device"], str(frame.get("frame")), frame["status"],
                           _failing_metrics(frame), _artifact(frame))
                if cross.get("status") == "failed":
                    yield (scene["id"], scene["device"], str(frame.get("frame")), "cross-backend failed",
                           _failing_metrics(cross), "-")
    return _counted("Golden failures", ("scene", "device", "frame", "status", "failing metric", "diff"), rows())


def _untriaged(scenes: Sequence[Mapping[str, Any]]) -> Section:
    """Captures no triage file knows that failed or have no golden (docs/goldens.md, "Triage"), with the command
    that accepts each from this run's artifact once downloaded and unpacked (ARTIFACT)."""
    def rows() -> Iterable[Sequence[str]]:
        for scene in scenes:
            for frame in (scene.get("correctness") or {}).get("frames") or []:
                if frame.get("triage") == "untriaged":
                    command = (f"zbench goldens accept ARTIFACT --device {scene['device']} --scene {scene['id']} "
                               f"--frame {frame.get('frame')}")
                    yield scene["id"], scene["device"], str(frame.get("frame")), str(frame["status"]), f"`{command}`"
    return _counted("Untriaged images", ("scene", "device", "frame", "status", "accept (or reject --reason TEXT)"),
                    rows())


def _inconclusive(scenes: Sequence[Mapping[str, Any]]) -> Section:
    def rows() -> Iterable[Sequence[str]]:
        for scene in _with_verdict(scenes, "inconclusive"):
            undecided = [m for m in scene["regression"].get("metrics", []) if m.get("verdict") == "inconclusive"]
            now, needed = launches_to_decide((m.get("n_baseline", 0), m.get("n_candidate", 0),
                                              m.get("more_launches")) for m in undecided)
            # the sequential gate takes no --zbench-runs: its maximum bounds the launches
            option = "--zbench-max-launches" if scene.get("sequential") else "--zbench-runs"
            advice = (f"about {needed} (`{option}={needed}`)" if needed else
                      f"{GateConfig.max_suggested_launches} or more")
            yield (scene["id"], scene["device"], ", ".join(m["metric"] for m in undecided) or "-", str(now), advice,
                   _baseline(scene["regression"], None))
    return _counted("Inconclusive", ("scene", "device", "undecided metrics", "launches per side",
                                     "launches that would decide it", "baseline"), rows())


def _quarantined(documents: Sequence[Mapping[str, Any]]) -> Section:
    rows = [(name, reason) for doc in documents for name, reason in (doc.get("quarantined") or {}).items()]
    return _counted("Quarantined devices", ("device", "why"), rows)


def _counted(heading: str, columns: Sequence[str], rows: Iterable[Sequence[str]]) -> Section:
    found = list(rows)
    return f"{heading} ({len(found)})", columns, found


def _with_verdict(scenes: Sequence[Mapping[str, Any]], verdict: str) -> Iterable[Mapping[str, Any]]:
    return (s for s in scenes if (s.get("regression") or {}).get("verdict") == verdict)


# ---------------------------------------------------------------------------------------------- cells


def _effect(effect: float | None) -> str:
    return "-" if effect is None else f"**{effect:.3f}x** ({effect - 1:+.1%})"


def _p(p: float | None) -> str:
    return "-" if p is None or not math.isfinite(p) else f"{p:.3g}"


def _change(metric: Mapping[str, Any]) -> str:
    before, after = metric.get("baseline_median"), metric.get("candidate_median")
    if before is None or after is None:
        return "-"
    if metric["metric"] == "jank_share":
        return f"{before:.2%} → {after:.2%}"
    return f"{before:.3f} → {after:.3f} ms"


def _baseline(regression: Mapping[str, Any], metric: Mapping[str, Any] | None) -> str:
    source = regression.get("source", "?")
    described = (metric or {}).get("baseline") or regression.get("baseline") or "?"
    return f"{source}: {described}"


def _failing_metrics(frame: Mapping[str, Any]) -> str:
    """The gates that failed (the defect record's), else the metrics past their bound (tightness), else the
    first line of the frame's message."""
    failures = (frame.get("defect") or {}).get("failures") or []
    failing = [f"{f.get('metric')}: {_number(f.get('observed'))} (allowed {_number(f.get('bound'))})"
               for f in failures if isinstance(f, Mapping)]
    failing = failing or [f"{name}: {_number(t.get('observed'))} (allowed {_number(t.get('bound'))})"
                          for name, t in (frame.get("tightness") or {}).items()
                          if t.get("bound") is not None and (t.get("ratio") or 0) > 1]
    if failing:
        return ", ".join(failing)
    message = str(frame.get("message") or "-")
    return message.splitlines()[0] if message else "-"


def _artifact(frame: Mapping[str, Any]) -> str:
    artifacts = frame.get("artifacts") or {}
    path = artifacts.get("diff") or next(iter(artifacts.values()), None)
    return f"`{path}`" if path else "-"


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


# ------------------------------------------------------------------------------------- markdown, bytes


def _text(value: str) -> str:
    """Plain text safe in a Markdown table cell: one line, no pipes, no HTML."""
    text = " ".join(str(value).split())
    if len(text) > MAX_CELL_CHARS:
        text = text[:MAX_CELL_CHARS - 1] + "…"
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")


def _cell(value: str) -> str:
    # Backquoted paths and bold effects are ours; everything else is escaped.
    if value.startswith("`") and value.endswith("`") and value.count("`") == 2:
        return "`" + _text(value[1:-1]).replace("`", "'") + "`"
    if value.startswith("**"):
        return value
    return _text(value)


def _url(url: str) -> str:
    return url.replace(" ", "%20").replace(")", "%29").replace("(", "%28")


def _size(lines: Sequence[str]) -> int:
    return sum(len(line.encode("utf-8")) + 1 for line in lines)


class _Budget:
    """Bytes left for the sections. Each section adds rows while they fit, keeping room for the sections
    after it to say at least how many rows they had, and says how many rows it left out."""

    # Room for a section's heading, its "N more" line, and the line of a section left out whole.
    RESERVE = 400

    def __init__(self, left: int) -> None:
        self.left = left

    def section(self, heading: str, columns: Sequence[str], rows: list[Sequence[str]],
                sections_after: int) -> list[str]:
        if not rows:
            return []
        keep = self.RESERVE * (sections_after + 1)
        lines = [f"### {heading}", "", "| " + " | ".join(columns) + " |",
                 "|" + "---|" * len(columns)]
        if _size(lines) + keep > self.left:
            return self._spend([f"_{heading}: {len(rows)} row(s) {LEFT_OUT}_", ""])
        self.left -= _size(lines)
        shown = 0
        for row in rows:
            line = "| " + " | ".join(_cell(str(cell)) for cell in row) + " |"
            cost = len(line.encode("utf-8")) + 1
            if cost + keep > self.left:
                break
            lines.append(line)
            self.left -= cost
            shown += 1
        tail = [""]
        if shown < len(rows):
            tail = ["", f"_{len(rows) - shown} more row(s) {LEFT_OUT}_", ""]
        return lines + self._spend(tail)

    def _spend(self, lines: list[str]) -> list[str]:
        self.left -= _size(lines)
        return lines
