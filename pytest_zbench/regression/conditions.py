"""What else changed between the candidate and its baseline: the build, and the device's conditions (governor,
power source, thermal state, throttling) around their launches (docs/regression.md, "What else changed").

A launch's conditions are what the platform probe read just before and just after it (run.json
`launches[].conditions`: {before: {...}, after: {...}}); `compact` keeps the keys that can move a measurement,
one value per key: the reading before the launch, the one after when they differ ("a -> b"), throttled when
either reading said so. The history stores them beside each launch's summary, so a later session can name them.
Plain values; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# The conditions that can move a measurement by themselves. Temperature is left to thermal_state and
# throttled: a few degrees are not a change of conditions, a thermal warning or a clock cap is.
CONDITION_KEYS = ("governor", "power", "thermal_state", "throttled", "low_power_mode")
UNKNOWN = (None, "", "unknown")


def compact(conditions: Mapping[str, Any] | None) -> dict[str, Any]:
    """One launch's conditions, from run.json's {before, after} (or an already compact mapping)."""
    if not isinstance(conditions, Mapping):
        return {}
    if "before" not in conditions and "after" not in conditions:
        return {k: conditions[k] for k in CONDITION_KEYS if conditions.get(k) not in UNKNOWN}
    raw_before, raw_after = conditions.get("before"), conditions.get("after")
    before: Mapping[str, Any] = raw_before if isinstance(raw_before, Mapping) else {}
    after: Mapping[str, Any] = raw_after if isinstance(raw_after, Mapping) else {}
    out: dict[str, Any] = {}
    for key in CONDITION_KEYS:
        a, b = before.get(key), after.get(key)
        if key == "throttled":
            if a is True or b is True:
                out[key] = True
            elif a is False or b is False:
                out[key] = False
            continue
        known = [v for v in (a, b) if v not in UNKNOWN]
        if not known:
            continue
        out[key] = known[0] if len(set(map(str, known))) == 1 else f"{known[0]} -> {known[-1]}"
    return out


def launch_conditions(launch: Any) -> dict[str, Any]:
    """The compact conditions a launch summary dict carries (its `conditions` key), else none."""
    raw = launch.get("conditions") if isinstance(launch, Mapping) else getattr(launch, "conditions", None)
    return compact(raw)


def throttled(launch: Any) -> bool:
    return launch_conditions(launch).get("throttled") is True


@dataclass(frozen=True)
class ConditionChange:
    """A condition read differently around the candidate's launches than around the baseline's."""

    key: str
    baseline: tuple[str, ...]
    candidate: tuple[str, ...]

    def describe(self) -> str:
        return f"{self.key} {'/'.join(self.baseline)} in the baseline, {'/'.join(self.candidate)} in the candidate"

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "baseline": list(self.baseline), "candidate": list(self.candidate)}


def _values(launches: Iterable[Any], key: str) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for launch in launches:
        value = launch_conditions(launch).get(key)
        if value not in UNKNOWN:
            seen[str(value).lower() if isinstance(value, bool) else str(value)] = None
    return tuple(seen)


def conditions_changed(baseline: Sequence[Any], candidate: Sequence[Any]) -> list[ConditionChange]:
    """Each condition whose readings around the candidate's launches differ from those around the baseline's;
    a condition unknown on either side is not a change (nothing to compare)."""
    changes = []
    for key in CONDITION_KEYS:
        base, cand = _values(baseline, key), _values(candidate, key)
        if base and cand and set(base) != set(cand):
            changes.append(ConditionChange(key, base, cand))
    return changes


def throttle_note(baseline: Sequence[Any], candidate: Sequence[Any]) -> str:
    """A sentence naming launches measured while the device reported throttling, or ''."""
    parts = [f"{n} of {len(side)} {name} launches" for name, side in (("candidate", candidate), ("baseline", baseline))
             if (n := sum(1 for launch in side if throttled(launch)))]
    if not parts:
        return ""
    return (f"measured while the device reported throttling: {' and '.join(parts)} (their samples are flagged "
            "`throttled` in run.json)")


def build_note(candidate_build: str, baseline_builds: Sequence[str]) -> str:
    """A sentence when the candidate's build is the baseline's (an A/A comparison), or ''."""
    if not candidate_build or not baseline_builds:
        return ""
    same = sum(1 for build in baseline_builds if build == candidate_build)
    if same == 0:
        return ""
    where = ("the baseline's" if same == len(baseline_builds)
             else f"that of {same} of the {len(baseline_builds)} baseline sessions")
    return (f"same build: the candidate's build {candidate_build[:12]} is {where}: any difference is the "
            "machine's or the session's, not the code's")


__all__ = ["CONDITION_KEYS", "ConditionChange", "build_note", "compact", "conditions_changed",
           "launch_conditions", "throttle_note", "throttled"]
