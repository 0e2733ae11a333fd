"""The terminal summary table of a session, from run.json scene entries (plain values in, lines out).

Made to be read at a glance in 100 columns: scenes that regressed or failed first, then inconclusive ones,
then the rest; the device in a header line when there is one; numbers under two-line headers (`cpu ms` over
`p50 p95`); a column whose every value is the same (paced frame times at the budget) collapsed into a note;
when the table is still wider than the terminal, the least telling columns left out, and a note names them.
Every value is in run.json and report.html; the table is a digest.

A percentile the statistics mark unreliable (`unreliable` in its metric's run.json entry: a list of keys or
a mapping of key to reason) is shown with a `~` after it, whatever else the entry carries; a line under the
table names each mark the table shows (MARKS).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...adaptive_score import not_measured
from ...regression.gate import launches_to_decide
from ...regression.verdict_words import TERMINAL_WORDS
from ...stats import RELIABLE_FROM

# (text, style) -> text with the terminal's colour codes; style is one of STYLES or "".
Markup = Callable[[str, str], str]
STYLES = ("red", "green", "yellow", "bold")
DEFAULT_WIDTH = 100
GAP = "  "



@dataclass(frozen=True)
class Column:
    key: str
    group: str  # the upper header line ("" for none)
    header: str
    numeric: bool = True
    drop_rank: int = 99  # lower goes first when the table does not fit; 99: never dropped


COLUMNS: tuple[Column, ...] = (
    Column("device", "", "device", numeric=False),
    Column("scene", "", "scene", numeric=False),
    Column("runs", "", "runs", drop_rank=3),
    Column("score", "", "score"),  # an adaptive scene's (its per-frame columns are "-")
    Column("cpu_p50", "cpu ms", "p50"),
    Column("cpu_p95", "cpu ms", "p95", drop_rank=4),
    Column("gpu_p50", "gpu ms", "p50", drop_rank=6),
    Column("frame_p50", "frame ms", "p50", drop_rank=2),
    Column("frame_p95", "frame ms", "p95", drop_rank=1),
    Column("frame_p99", "frame ms", "p99", drop_rank=5),
    Column("jank", "", "jank"),
    # Android vitals' slow and frozen frames (stats.frame_categories): "slow/frozen" counts, summed over launches.
    Column("slow", "", "slow/frz", drop_rank=1),
    Column("verdict", "", "verdict", numeric=False),
    Column("result", "", "result", numeric=False),
)
# A column that says the same of every scene (frame p50 at a paced budget) is one note instead; with a couple
# of scenes a column is the clearer way to say it.
MIN_ROWS_TO_COLLAPSE = 3
COLLAPSIBLE = ("runs", "cpu_p95", "gpu_p50", "frame_p50", "frame_p95", "frame_p99")


# The marks a value can carry, each named once in a legend line under the table when a shown value has it.
UNRELIABLE, LOWER_BOUND = "~", ">="
MARKS: Mapping[str, str] = {
    UNRELIABLE: "a tail percentile from too few frames to be reliable ("
                + ", ".join(f"{name} needs {n:,} frames" for name, n in RELIABLE_FROM.items()) + ")",
    LOWER_BOUND: "a score at the largest complexity tried, a lower bound (frames kept within budget up to it)",
}


@dataclass(frozen=True)
class Cell:
    text: str
    style: str = ""
    mark: str = ""  # one of MARKS, which the text carries


def summary_lines(scenes: Iterable[dict[str, Any]], devices: dict[str, Any] | None = None, *,
                  width: int = DEFAULT_WIDTH, markup: Markup | None = None) -> list[str]:
    """The table and the notes under it. gpu_ms of a device whose GPU time source failed the timer check is
    not shown (a line says why: `devices` is run.json's per-device sections); a device whose declared refresh
    rate disagrees with the measured one gets a warning line."""
    scenes = sorted(scenes, key=_order)
    devices = devices or {}
    style = markup or (lambda text, _style: text)
    several = len({e["device"] for e in scenes}) > 1
    rows = [{c.key: cell for c, cell in zip(COLUMNS, _cells(entry))} for entry in scenes]
    columns = [c for c in COLUMNS if several or c.key != "device"]
    notes: list[str] = []
    for column in list(columns):  # a column of nothing but "-" says nothing (no GPU time, no gate)
        if column.key != "scene" and rows and all(row[column.key].text == "-" for row in rows):
            columns.remove(column)
    for key in (k for k in COLLAPSIBLE if any(c.key == k for c in columns)):
        column = next(c for c in columns if c.key == key)
        values = {row[key].text for row in rows}
        if len(values) != 1:
            continue
        value = values.pop()
        if key == "runs" and all(e.get("complete_runs") == e["runs"] for e in scenes):
            columns.remove(column)  # every launch complete: the device line gives the launches
        elif key != "runs" and len(rows) >= MIN_ROWS_TO_COLLAPSE:
            columns.remove(column)
            notes.append(f"{_label(column)} {value} ms in every scene")
    dropped: list[Column] = []
    while _table_width(columns, rows) > width and any(c.drop_rank < 99 for c in columns):
        victim = min((c for c in columns if c.drop_rank < 99), key=lambda c: c.drop_rank)
        columns.remove(victim)
        dropped.append(victim)
    widths = {c.key: max(len(c.header), *(len(row[c.key].text) for row in rows)) for c in columns}
    lines = _device_lines(scenes, devices) + _header_lines(columns, widths, style)
    for row in rows:
        cells = [style(_pad(row[c.key].text, widths[c.key], c.numeric), row[c.key].style) for c in columns]
        lines.append(GAP.join(cells).rstrip())
    lines += notes
    shown_marks = {row[c.key].mark for row in rows for c in columns}
    if shown_marks - {""}:
        lines.append("marks: " + "; ".join(f"{mark} {meaning}" for mark, meaning in MARKS.items()
                                          if mark in shown_marks))
    if dropped:
        names = ", ".join(_label(c) for c in dropped)
        lines.append(f"left out to fit {width} columns: {names} (run.json and report.html have them)")
    if any(e.get("adaptive") is not None for e in scenes):
        lines.append("adaptive scenes: the score is the largest complexity within the frame budget, ± half its "
                     "95% CI (run.json scenes[].adaptive); in the gate column, 'x score' is the score's ratio "
                     "(candidate/baseline, higher is better: 0.80x score is 20 % worse), the others cpu_ms.p50's "
                     "(lower is better)")
    lines += _unmeasured_lines(scenes)
    cold = [e["id"] for e in scenes if e.get("warmup_frames") == 0 and e.get("measured_frames")]
    if cold:
        # Cold frames (first use of caches, shaders, allocations) then enter the statistics (docs/methodology.md).
        lines.append(f"warm-up 0 (--zbench-warmup=0): the first frames are measured cold in {len(cold)} scene(s) "
                     f"({', '.join(cold[:3])}{', ...' if len(cold) > 3 else ''})")
    lines += _gate_notes(scenes, width)
    for name in sorted({e["device"] for e in scenes if e.get("gpu_valid") is False}):
        check = (devices.get(name, {}).get("gpu") or {}).get("timer_check") or {}
        lines.append(f"gpu_ms of {name} not shown: its GPU time source failed the timer check "
                     f"({check.get('detail') or 'no detail'})")
    out = [wrapped for line in lines for wrapped in _wrap(line, width)]
    # Warnings stay one line each, whatever their length: each is one thing to search a CI log for.
    for _, sections in sorted(devices.items()):
        warning = (sections.get("display") or {}).get("refresh_warning")
        if warning:
            out.append(style(f"warning: {warning}", "yellow"))
    return out


def _wrap(line: str, width: int) -> list[str]:
    """A note longer than the terminal on several lines; table rows (which fit already) stay as they are."""
    if len(line) <= width or "\x1b" in line:
        return [line]
    return textwrap.wrap(line, width, subsequent_indent="  ", break_on_hyphens=False,
                         break_long_words=False)  # a path stays whole or [line]


def _order(entry: dict[str, Any]) -> tuple[int, str, str]:
    """Regressed and failed first, then inconclusive, then the rest; by device and scene within each."""
    verdict = (entry.get("regression") or {}).get("verdict")
    failed = entry.get("outcome") in ("failed", "error") or (entry.get("correctness") or {}).get("outcome") == "failed"
    rank = 0 if failed or verdict == "regressed" else 1 if verdict == "inconclusive" else 2
    return rank, entry["device"], entry["id"]


def _cells(entry: dict[str, Any]) -> list[Cell]:
    """A scene's row. An adaptive scene's shows its score; its per-frame statistics, which mix the
    complexities of its plan, are not shown."""
    adaptive = entry.get("adaptive")
    metrics = {} if adaptive is not None else entry.get("metrics") or {}
    frame, cpu, gpu = (metrics.get(k) or {} for k in ("frame_ms", "cpu_ms", "gpu_ms"))
    runs = f"{entry.get('complete_runs', entry['runs'])}/{entry['runs']}"
    untrusted = adaptive is None and entry.get("gpu_valid") is False
    return [
        Cell(entry["device"]), Cell(entry["id"]),
        Cell(runs, "yellow" if entry.get("complete_runs", entry["runs"]) != entry["runs"] else ""),
        Cell("-") if adaptive is None else _score(adaptive),
        _value(cpu, "p50"), _value(cpu, "p95"),
        Cell("untrusted", "yellow") if untrusted else _value(gpu, "p50"),
        _value(frame, "p50"), _value(frame, "p95"), _value(frame, "p99"),
        _jank(metrics),
        _slow_frozen(metrics),
        _verdict(entry.get("regression"), "cpu_ms.p50" if adaptive is None else "adaptive.score"),
        _result(entry),
    ]


def _unmeasured_lines(scenes: Sequence[dict[str, Any]]) -> list[str]:
    """An adaptive score that could not be measured, with the reason run.json's section gives: its cell says
    only "not measured", which a reader must not take for a score of 0 that passed."""
    lines = []
    for entry in scenes:
        reason = not_measured(entry["adaptive"]) if entry.get("adaptive") is not None else None
        if reason is not None:
            lines.append(f"{entry['id']} on {entry['device']}: adaptive score not measured: {reason}")
    return lines


def _score(adaptive: dict[str, Any]) -> Cell:
    """1234±2.5% (a lower bound: >=1234)."""
    score, ci = adaptive.get("score"), adaptive.get("ci")
    if not_measured(adaptive) is not None or not isinstance(score, (int, float)):
        return Cell("not measured", "yellow")  # why: a line under the table (_unmeasured_lines)
    mark = LOWER_BOUND if adaptive.get("censored") == "above" else ""
    text = mark + f"{score:.4g}"
    if ci and score > 0:
        text += f"±{(ci[1] - ci[0]) / 2 / score:.1%}"
    return Cell(text, mark=mark)


def _value(dist: dict[str, Any], key: str) -> Cell:
    value = dist.get(key)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return Cell("-")
    mark = UNRELIABLE if _unreliable(dist, key) else ""
    return Cell(format_ms(float(value)) + mark, mark=mark)


def _unreliable(dist: dict[str, Any], key: str) -> bool:
    flags = dist.get("unreliable")
    if isinstance(flags, dict):
        return bool(flags.get(key))
    return isinstance(flags, (list, tuple)) and key in flags


def format_ms(value: float) -> str:
    """Three significant digits, at most five characters: 0.41, 16.7, 133."""
    if value < 10:
        return f"{value:.2f}"
    if value < 100:
        return f"{value:.1f}"
    return f"{value:.0f}"


def _jank(metrics: dict[str, Any]) -> Cell:
    share = metrics.get("jank_share")
    if share is None:
        return Cell("-")
    count = metrics.get("jank", 0)
    if not count:
        return Cell("0")
    return Cell(f"{count} {share:.0%}", "yellow" if share >= 0.05 else "")


def _slow_frozen(metrics: dict[str, Any]) -> Cell:
    """12/0: slow and frozen frames; yellow when any frame froze. "-" when no frame time is known (an
    adaptive scene, a launch without frames), as for jank."""
    if metrics.get("jank_share") is None or "slow_frames" not in metrics:
        return Cell("-")
    frozen = metrics.get("frozen_frames", 0)
    return Cell(f"{metrics['slow_frames']}/{frozen}", "yellow" if frozen else "")


def _verdict(section: dict[str, Any] | None, metric: str = "cpu_ms.p50") -> Cell:
    """The verdict, with the effect on `metric` when the gate judged it (cpu_ms.p50 1.30x = 30 % slower;
    adaptive.score 0.80x = a score 20 % lower)."""
    if not section:
        return Cell("-")
    verdict = str(section.get("verdict"))
    word, colour = TERMINAL_WORDS.get(verdict, (verdict, ""))
    effects = {m.get("metric"): m.get("effect") for m in section.get("metrics") or []}
    effect = effects.get(metric)
    # A score's ratio runs the other way from a time's (higher is better): it is labelled, and the note under
    # the table says so.
    label = " score" if metric == "adaptive.score" else ""
    return Cell(word + ("" if effect is None else f" {effect:.2f}x{label}"), colour)


def _result(entry: dict[str, Any]) -> Cell:
    """The perf and golden tests' outcomes in one word or two: pass, FAIL perf, FAIL golden, skip, ..."""
    perf = entry.get("outcome")
    golden = (entry.get("correctness") or {}).get("outcome")
    failed = [name for name, outcome in (("perf", perf), ("golden", golden)) if outcome in ("failed", "error")]
    if failed:
        return Cell("FAIL " + "+".join(failed) + (" partial" if entry.get("partial") else ""), "red")
    if perf == "skipped" or entry.get("skipped"):
        return Cell("skip", "yellow")
    if entry.get("partial"):
        return Cell("partial", "yellow")
    if perf == "passed" or golden == "passed":
        return Cell("pass", "green")
    return Cell("-")


def _pad(text: str, width: int, numeric: bool) -> str:
    return text.rjust(width) if numeric else text.ljust(width)


def _label(column: Column) -> str:
    return f"{column.group.split()[0]} {column.header}" if column.group else column.header


def _table_width(columns: Sequence[Column], rows: Sequence[dict[str, Cell]]) -> int:
    widths = [max(len(c.header), *(len(row[c.key].text) for row in rows)) for c in columns]
    total = sum(widths) + len(GAP) * (len(columns) - 1)
    for group in {c.group for c in columns if c.group}:  # a group's title must fit over its columns
        members = [w for c, w in zip(columns, widths) if c.group == group]
        total += max(0, len(group) - (sum(members) + len(GAP) * (len(members) - 1)))
    return total


def _header_lines(columns: Sequence[Column], widths: dict[str, int], style: Markup) -> list[str]:
    """Two lines: the groups (`cpu ms` centred over its p50 and p95), then the column names."""
    groups, names = [], []
    i = 0
    while i < len(columns):
        column = columns[i]
        if not column.group:
            groups.append(" " * widths[column.key])
            names.append(_pad(column.header, widths[column.key], column.numeric))
            i += 1
            continue
        members = [c for c in columns[i:] if c.group == column.group]
        members = members[:next((n for n, c in enumerate(columns[i:]) if c.group != column.group), len(members))]
        span = sum(widths[c.key] for c in members) + len(GAP) * (len(members) - 1)
        if len(column.group) > span:  # widen the last member so that the title fits
            widths[members[-1].key] += len(column.group) - span
            span = len(column.group)
        groups.append(column.group.center(span))
        names += [_pad(c.header, widths[c.key], True) for c in members]
        i += len(members)
    return [style(GAP.join(groups).rstrip(), "bold"), style(GAP.join(names).rstrip(), "bold")]


def _device_lines(scenes: Sequence[dict[str, Any]], devices: dict[str, Any]) -> list[str]:
    """Per device: backend, refresh rate and budget, pacing, launches and frames: what the numbers are of."""
    out = []
    for name in sorted({e["device"] for e in scenes}):
        entries = [e for e in scenes if e["device"] == name]
        first = entries[0]
        display = (devices.get(name) or {}).get("display") or {}
        hz = display.get("refresh_hz")
        budget = first.get("budget_ms")
        modes = sorted({str(e.get("mode")) for e in entries if e.get("mode")})
        runs = sorted({e["runs"] for e in entries})
        parts = [str(first.get("backend", "")),
                 f"{hz:g} Hz" if isinstance(hz, (int, float)) else "",
                 f"budget {budget:.2f} ms" if isinstance(budget, (int, float)) else "",
                 "/".join(modes),
                 f"{'/'.join(map(str, runs))} launches x {first.get('measured_frames')} frames "
                 f"(+{first.get('warmup_frames')} warmup)"]
        out.append(f"{name}: " + ", ".join(p for p in parts if p) + f"; {len(entries)} scene(s)")
    return out


def _gate_notes(scenes: Sequence[dict[str, Any]], width: int) -> list[str]:
    """One line per kind of verdict that needs no line per scene: no baseline yet, inconclusive."""
    lines = []
    new = [e for e in scenes if (e.get("regression") or {}).get("verdict") == "no_baseline"]
    if new:
        recorded = [e for e in new if (e.get("history") or {}).get("recorded")]
        where = sorted({str(e["history"]["path"]) for e in recorded})
        line = f"{len(new)} scene(s) had no baseline yet (first run): " + ("recorded" if recorded else
                                                                            "not recorded either, see the warnings")
        # One line, whatever the terminal: the history's path when it fits.
        if recorded and len(line) + len(" in ") + len(", ".join(where)) <= width:
            line += " in " + ", ".join(where)
        lines.append(line)
    undecided = [e for e in scenes if (e.get("regression") or {}).get("verdict") == "inconclusive"]
    if undecided:
        # Per scene, the launches a side in all (the markdown summary's figure, one computation)
        needed = [launches_to_decide((m.get("n_baseline", 0), m.get("n_candidate", 0), m.get("more_launches"))
                                     for m in e["regression"].get("metrics") or []
                                     if m.get("verdict") == "inconclusive")[1] for e in undecided]
        known = [n for n in needed if isinstance(n, int)]
        runs = sorted({e["runs"] for e in undecided})
        advice = (f"about {max(known)} launches per side (--zbench-runs={max(known)}) would decide them" if known
                  else "more launches per side (--zbench-runs) would decide them")
        stopped = sorted({e["sequential"]["stopped"] for e in undecided if e.get("sequential")})
        if stopped:  # the sequential gate chose the launches: its maximum or the budget is what to raise
            advice = (f"the sequential gate stopped them on {'/'.join(map(str, stopped))}: a larger "
                      "--zbench-max-launches or --zbench-budget would give them more rounds")
        lines.append(f"{len(undecided)} scene(s) inconclusive with {'/'.join(map(str, runs))} launches; {advice} "
                     "(run.json regression.message has each scene's effect and interval)")
    return lines


def analysis_line(isolation: Sequence[Mapping[str, Any]], differentials: Sequence[Mapping[str, Any]]) -> str | None:
    """The corpus analyses (sweeps that do not scale, differential costs) in ONE line: how many of each verdict
    and where each one is written; None when there is nothing to say. Their own lines (up to one per sweep and
    pair, each a few hundred characters) are in report.html and run.json, and `-v` prints them
    (docs/report.md, "Terminal")."""
    parts = []
    not_scaling = [i for i in isolation if i.get("verdict") == "not_scaling"]
    if not_scaling:
        names = sorted({str(i.get("family")) for i in not_scaling})
        parts.append(f"{len(not_scaling)} sweep(s) do not scale ({', '.join(names[:3])}"
                     f"{', ...' if len(names) > 3 else ''})")
    if differentials:
        counts: dict[str, int] = {}
        for d in differentials:
            word = str(d.get("verdict")).replace("_", " ")
            counts[word] = counts.get(word, 0) + 1
        parts.append(f"{len(differentials)} differential pair(s): "
                     + ", ".join(f"{n} {word}" for word, n in sorted(counts.items())))
    if not parts:
        return None
    return "analysis: " + "; ".join(parts) + " (report.html and run.json have each; -v lists them)"
