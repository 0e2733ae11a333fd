"""Scene files (scenes/*.yaml): one family per file, expanded into the SceneCases the plugin parametrises.

The file format is documented in docs/scenes.md and the ops it produces in docs/display-list.md. Everything
that can be checked without a device is checked here, at load time, so that a typo in a scene is a
SceneError naming the file, the scene and the key instead of a runner failing on a device an hour later.
Lengths stay symbolic (units.Length) until `SceneCase.job_scene` is given the surface size.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, cast

import yaml

from .errors import SceneError
from .golden.tolerance import ToleranceError, validate_tolerances
from .protocol import MODES, ops_features, walk_ops
from .protocol.display_list import (
    ANIMATIONS,
    CHOICES,
    CLIP_SHAPES,
    COMPLEXITY_COUNT,
    COMPLEXITY_OP_KEYS,
    INTEGER_RANGES,
    KEY_KINDS,
    MAX_COUNT,
    NON_NEGATIVE_KEYS,
    OPS,
    POSITIVE_KEYS,
    TEXT_PLACEHOLDERS,
    ValueKind,
    complexity_cap,
    complexity_keys_text,
    counts_complexity,
    is_adaptive,
    takes_complexity,
)
from .protocol.limits import MAX_OPS
from .regression.config import GATE_METRIC
from .units import Axis, Length, parse_length
from .yaml_loader import load_yaml

ID_RE = re.compile(r"[a-z0-9][a-z0-9_.-]*")
FAMILY_RE = re.compile(r"[a-z0-9][a-z0-9_-]*")
PARAM_RE = re.compile(r"[a-z_][a-z0-9_]*")
PLACEHOLDER_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
COLOR_RE = re.compile(r"#[0-9A-Fa-f]{6}(?:[0-9A-Fa-f]{2})?")
FILE_KEYS = ("family", "description", "defaults", "scenes")
SETTING_KEYS = ("budget_ms", "mode", "capture", "tolerance", "gate", "sustained")
# A scene's own regression gate settings (docs/scenes.md, "gate"): they replace the command line's for it.
GATE_KEYS = ("threshold", "metrics")
DEFAULTS_KEYS = (*SETTING_KEYS, "params")
SCENE_KEYS = ("id", "description", "params", "sweep", "ops", "complexity", "differential", *SETTING_KEYS)
# A differential pair (docs/scenes.md, "Differential pairs"): this scene's cost minus another scene's of the same
# file, which draws the same without the feature; the host reports the difference with an interval.
DIFFERENTIAL_KEYS = ("minus", "feature")
# An adaptive scene's `complexity`: what one unit of complexity is, the complexity captures render at, and the
# largest complexity its layout keeps on the surface (draws off the surface may be culled, docs/scenes.md).
COMPLEXITY_KEYS = ("unit", "capture", "max")
# `unroll` copies ops in the file (overdraw stacks); large counts belong in `repeat`, which the runner loops.
MAX_UNROLL = 64
# Draws in one frame, nested `repeat` counts multiplied (a `rect_batch` is its count, a `mesh` its cells): a
# frame past it takes minutes, not milliseconds (docs/scenes.md, "Caps"). The shipped corpus's largest
# frame, an adaptive scene at its `max`, draws 100,000 times.
MAX_DRAWS_PER_FRAME = 1_000_000
# A captured frame is one a default launch renders (60 warmup + 600 measured frames; settings.py): an
# animation's state at a moment a measurement sees, whatever the run length (docs/scenes.md, "Captures").
MAX_CAPTURE_FRAME = 659
# Scene cases of one corpus (every file of the scenes folder): each becomes a perf and a golden test per
# device, and collection expands every one, deselected or not.
MAX_CASES = 10_000


@dataclass(frozen=True)
class GateOverride:
    """A scene file's `gate:` settings; None keeps the command line's (or the default) for that setting."""

    threshold: float | None = None
    metrics: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "metrics": None if self.metrics is None else list(self.metrics)}


@dataclass(frozen=True)
class ComplexitySpec:
    """How the host plans an adaptive scene's complexity (docs/scenes.md, "Adaptive scenes")."""

    unit: str  # what one unit of complexity draws, in the plural: "rects", "labels"
    capture: int  # the complexity every captured frame renders at, whatever the device and the plan
    max: int = MAX_COUNT  # the largest complexity the layout keeps on the surface: the planned range
    # The most the counting ops can draw (their own cap, and MAX_DRAWS_PER_FRAME): a search that finds a device
    # within budget at `max` goes on up to it (docs/methodology.md §10, "Past max"). None: `max` is the limit.
    limit: int | None = None

    @property
    def ceiling(self) -> int:
        """The largest complexity any launch may draw."""
        return max(self.max, self.limit) if self.limit is not None else self.max


@dataclass(frozen=True)
class Differential:
    """A scene's `differential`: the scene it is compared with (same file) and the feature the difference costs."""

    minus: str
    feature: str


@dataclass(frozen=True)
class SceneCase:
    """One expanded scene: what the plugin turns into a perf test and a golden test."""

    id: str
    family: str
    source: Path
    params: Mapping[str, Any]
    features: frozenset[str]
    budget_ms: float | None
    mode: str | None
    capture: tuple[int, ...]
    tolerance: Mapping[str, Any]
    description: str
    # Validated ops with lengths still symbolic; job_scene resolves them for one surface.
    ops: tuple[Mapping[str, Any], ...] = field(default=(), repr=False)
    complexity: ComplexitySpec | None = None  # set exactly when the scene is adaptive
    gate: GateOverride | None = None
    # Minutes of one sustained launch (docs/sustained.md); None: --zbench-sustained decides.
    sustained_min: float | None = None
    # The id template the case was expanded from ("fill.alpha.x{layers}"): the cases of one sweep share it.
    sweep: str = ""
    differential: Differential | None = None

    def __hash__(self) -> int:
        # The generated hash would fail on the mappings; the id is unique within a corpus anyway.
        return hash((self.id, self.source))

    @property
    def adaptive(self) -> bool:
        """True when an op takes its count from "complexity", i.e. the job must carry a per-frame complexity."""
        return is_adaptive(self.ops)

    def job_scene(self, width: int, height: int) -> dict[str, Any]:
        """The job's `scene` object (docs/runner-protocol.md) with every length resolved to pixels of this surface."""
        if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (width, height)):
            raise ValueError(f"surface size must be positive integers, got {width!r} x {height!r}")
        return {
            "id": self.id,
            "params": dict(self.params),
            "width": width,
            "height": height,
            "features": sorted(self.features),
            "ops": [_resolve(op, width, height) for op in self.ops],
        }


def load_scene_file(path: Path) -> list[SceneCase]:
    """Every case of one family file, in file order; raises SceneError naming the file, scene and key."""
    path = Path(path)
    doc = _read_yaml(path)
    where = _Where(path)
    if doc is None:
        raise where.error("the file is empty; a scene file needs a 'scenes' list (docs/scenes.md)")
    if not isinstance(doc, dict):
        raise where.error("the top level must be a mapping with 'scenes' (and optionally "
                          "'family', 'description', 'defaults')")
    _check_keys(doc, FILE_KEYS, ("scenes",), where, "a scene file")
    family = doc.get("family", path.stem)
    if not isinstance(family, str) or not FAMILY_RE.fullmatch(family):
        raise where.at("family").error(f"family {family!r} must match {FAMILY_RE.pattern} (it starts every id); "
                                       "set 'family:' or rename the file")
    file_description = _string(doc.get("description", ""), where.at("description"))
    defaults_raw = _mapping(doc.get("defaults", {}), where.at("defaults"))
    _check_keys(defaults_raw, DEFAULTS_KEYS, (), where.at("defaults"), "defaults")
    defaults = _settings(defaults_raw, _Settings(), where.at("defaults"))
    default_params = _params(defaults_raw.get("params", {}), where.at("defaults").at("params"))

    scenes = doc["scenes"]
    if not isinstance(scenes, list) or not scenes:
        raise where.at("scenes").error("'scenes' must be a non-empty list of scenes")
    cases: list[SceneCase] = []
    for index, raw in enumerate(scenes):
        cases.extend(_expand_scene(raw, index, path, family, file_description, defaults, default_params))
    _check_unique(cases, path)
    _check_differentials(cases, path)
    return cases


def _check_differentials(cases: list[SceneCase], path: Path) -> None:
    """A differential's `minus` is a case of the same file: what a pair compares is read side by side. The
    `minus` links never come back to where they started: a cycle would report each pair twice, with
    opposite signs, and neither scene would be the base."""
    ids = {case.id for case in cases}
    minus = {case.id: case.differential.minus for case in cases if case.differential is not None}
    for case in cases:
        if case.differential is not None and case.differential.minus not in ids:
            raise SceneError(path, f"differential 'minus' names {case.differential.minus!r}, which is no scene of "
                                   f"this file (its scenes: {', '.join(sorted(ids))})", scene=case.id,
                             key="differential.minus")
    for start in minus:
        chain, at = [start], minus[start]
        while at in minus and at not in chain:
            chain.append(at)
            at = minus[at]
        if at == start:
            loop = " - ".join([*chain, start])
            raise SceneError(path, f"the differential pairs make a cycle ({loop}): a pair is a scene minus its "
                                   "base without the feature, and the base takes no 'differential' of its own "
                                   "back; remove 'differential' from the base scene", scene=start,
                             key="differential.minus")


def load_corpus(directory: Path) -> tuple[list[SceneCase], list[SceneError]]:
    """Every case of every *.yaml in `directory` (sorted by name), and the errors of the files that failed.

    A bad file does not stop the others: the suite still runs what it can and reports the rest. A file with
    a case whose id another file already uses is an error (CorpusIndex), since ids name golden images.
    """
    directory = Path(directory)
    if not directory.is_dir():
        return [], [SceneError(directory, "is not a directory of scene files")]
    cases: list[SceneCase] = []
    errors: list[SceneError] = []
    index = CorpusIndex()
    for path in sorted(directory.glob("*.yaml")):
        try:
            file_cases = index.add(path, load_scene_file(path))
        except SceneError as error:
            errors.append(error)
            continue
        cases.extend(file_cases)
    return cases, errors


def first_look_cases(cases: Iterable[SceneCase]) -> list[SceneCase]:
    """The representative of each family for `--zbench-first-look`, in corpus order: the family's first scene
    that is neither adaptive nor sustained (those spend many launches, or minutes, where a first look has one
    short launch to spend); a family with no such scene is represented by its first scene all the same, so that
    every family is seen."""
    chosen: dict[str, SceneCase] = {}
    fallback: dict[str, SceneCase] = {}
    for case in cases:
        fallback.setdefault(case.family, case)
        if case.family not in chosen and not case.adaptive and case.sustained_min is None:
            chosen[case.family] = case
    return [chosen.get(family, first) for family, first in fallback.items()]


class CorpusIndex:
    """The scene files of one corpus, added one by one (the plugin collects them file by file): a scene id
    belongs to one file only, and the corpus holds at most MAX_CASES cases."""

    def __init__(self) -> None:
        self.owner: dict[str, Path] = {}
        self.count = 0

    def add(self, path: Path, cases: list[SceneCase]) -> list[SceneCase]:
        """The file's cases, once checked against the files added before; raises SceneError naming both
        files of a shared id, or the cap. A refused file adds nothing."""
        for case in cases:
            first = self.owner.get(case.id)
            if first is not None and first != path:
                raise SceneError(path, f"id {case.id!r} is already used in {first}; ids name golden images and "
                                       "results, so they must be unique across the scene files: rename one",
                                 scene=case.id, key="id")
        if self.count + len(cases) > MAX_CASES:
            raise SceneError(path, f"the scene files hold more than {MAX_CASES} scene cases (the cap on one "
                                   f"corpus; {self.count} before this file, {len(cases)} in it): shrink the sweeps")
        self.owner.update({case.id: path for case in cases})
        self.count += len(cases)
        return cases


# --- reading -------------------------------------------------------------------------------------------------


def _read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SceneError(path, f"cannot read the file: {exc}") from exc
    try:
        return load_yaml(text)
    except yaml.YAMLError as exc:
        hint = ""
        if _UNQUOTED_COLOR.search(text):
            hint = ("\nAn unquoted # starts a YAML comment, which cuts a flow mapping such as "
                    "{op: rect, color: #3366CC} short: quote colours, color: \"#3366CC\".")
        raise SceneError(path, f"not valid YAML: {exc}{hint}") from exc


# `color: #3366CC` (or `- #3366CC`) outside quotes: YAML reads everything from the # on as a comment.
_UNQUOTED_COLOR = re.compile(r"[:\[,-]\s+#[0-9A-Fa-f]{6}")


# --- errors --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Where:
    """Where in the file a value sits, so that every error can name the file, the scene and the key path."""

    path: Path
    scene: str | None = None
    key: str | None = None

    def at(self, key: str | int) -> _Where:
        if isinstance(key, int):
            return replace(self, key=f"{self.key or ''}[{key}]")
        return replace(self, key=f"{self.key}.{key}" if self.key else str(key))

    def error(self, message: str) -> SceneError:
        return SceneError(self.path, message, scene=self.scene, key=self.key)


def _check_keys(raw: Mapping[Any, Any], allowed: tuple[str, ...] | set[str], required: tuple[str, ...], where: _Where,
                what: str) -> None:
    for key in raw:
        if key not in allowed:
            raise where.at(str(key)).error(f"unknown key {key!r} in {what}; allowed: {', '.join(sorted(allowed))}")
    for key in required:
        if key not in raw:
            raise where.at(key).error(f"{what} needs {key!r}")


# --- scenes and sweeps ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Settings:
    budget_ms: float | None = None
    mode: str | None = None
    capture: tuple[int, ...] | None = None  # None: chosen from the scene's animations (_auto_capture)
    tolerance: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    gate: GateOverride | None = None
    sustained_min: float | None = None


def _expand_scene(raw: Any, index: int, path: Path, family: str, file_description: str, defaults: _Settings,
                  default_params: Mapping[str, Any]) -> list[SceneCase]:
    template = raw.get("id") if isinstance(raw, dict) else None
    where = _Where(path, scene=template if isinstance(template, str) else f"#{index + 1}")
    if not isinstance(raw, dict):
        raise where.error("each scene must be a mapping with 'id' and 'ops'")
    _check_keys(raw, SCENE_KEYS, ("id", "ops"), where, "a scene")
    if not isinstance(template, str):
        raise where.at("id").error("the id must be a string such as 'fill.alpha.x{layers}'")
    settings = _settings(raw, defaults, where)
    params = {**default_params, **_params(raw.get("params", {}), where.at("params"))}
    combinations = _combinations(raw.get("sweep"), where.at("sweep"))
    swept = set(combinations[0])
    for name in PLACEHOLDER_RE.findall(template):
        if name not in swept:
            raise where.at("id").error(f"the id template uses {{{name}}} but the scene does not sweep {name!r}; "
                                       f"add {name!r} to 'sweep' or take it out of the id")
    description = _string(raw.get("description", file_description), where.at("description"))

    cases: list[SceneCase] = []
    for combination in combinations:
        case_id = _case_id(template, combination, family, where.at("id"))
        values = {**params, **combination}
        case_where = replace(where, scene=case_id)
        ops = tuple(_ops(_substitute(raw["ops"], values, case_where.at("ops")), case_where.at("ops")))
        complexity = _complexity(_substitute(raw.get("complexity"), values, case_where.at("complexity")), ops,
                                 settings, case_where)
        differential = _differential(_substitute(raw.get("differential"), values, case_where.at("differential")),
                                     case_id, case_where.at("differential"), sweep=len(combinations) > 1)
        draws = _draws_per_frame(ops, complexity.max if complexity is not None else MAX_COUNT)
        if draws > MAX_DRAWS_PER_FRAME:
            raise case_where.at("ops").error(
                f"one frame draws {draws:,} times (nested repeat counts multiply), more than the "
                f"{MAX_DRAWS_PER_FRAME:,} a frame may draw (MAX_DRAWS_PER_FRAME): lower the counts; an adaptive "
                "scene finds the count a device affords by itself (docs/scenes.md, \"Adaptive scenes\")")
        cases.append(SceneCase(
            id=case_id,
            family=family,
            source=path,
            params=MappingProxyType(dict(combination)),
            features=ops_features(ops),
            budget_ms=settings.budget_ms,
            mode=settings.mode,
            capture=settings.capture if settings.capture is not None else _auto_capture(ops),
            tolerance=MappingProxyType({k: MappingProxyType(dict(v)) for k, v in settings.tolerance.items()}),
            description=_substitute(description, values, case_where.at("description")),
            ops=ops,
            complexity=complexity,
            gate=settings.gate,
            sustained_min=settings.sustained_min,
            sweep=template,
            differential=differential,
        ))
    return cases


def _draws_per_frame(ops: Iterable[Mapping[str, Any]], complexity_max: int) -> int:
    """Draws of one frame: every op one, a rect_batch its count, a mesh its cells, a repeat its count times
    its ops; a count of "complexity" at the most the scene may ask for."""
    def count(value: Any) -> int:
        return complexity_max if value == COMPLEXITY_COUNT or not isinstance(value, int) else value

    total = 0
    for op in ops:
        if op["op"] == "repeat":
            total += count(op["count"]) * max(1, _draws_per_frame(op["ops"], complexity_max))
        elif "ops" in op:
            total += 1 + _draws_per_frame(op["ops"], complexity_max)
        elif op["op"] == "rect_batch":
            total += count(op["count"])
        elif op["op"] == "mesh":
            total += count(op["rows"]) * count(op["columns"])
        else:
            total += 1
    return total


def _differential(raw: Any, case_id: str, where: _Where, *, sweep: bool) -> Differential | None:
    """A scene's `differential: {minus: <scene id>, feature: <what the difference costs>}`. On a sweep every
    case but the one it names is compared with it (that one is the pair's base); a scene that is no sweep
    cannot be its own base."""
    if raw is None:
        return None
    spec = _mapping(raw, where)
    _check_keys(spec, DIFFERENTIAL_KEYS, DIFFERENTIAL_KEYS, where, "'differential'")
    minus = spec["minus"]
    if not isinstance(minus, str) or not ID_RE.fullmatch(minus):
        raise where.at("minus").error(f"'minus' is the id of the scene without the feature, got {minus!r}")
    feature = _string(spec["feature"], where.at("feature"))
    if not feature.strip():
        raise where.at("feature").error("'feature' says what the difference costs, e.g. 'opacity group'")
    if minus == case_id and not sweep:
        raise where.at("minus").error(f"'minus' names this scene itself ({case_id!r}): a pair is this scene minus "
                                      "the scene of this file without the feature; name that scene")
    return None if minus == case_id else Differential(minus, feature)


def _complexity(raw: Any, ops: tuple[Mapping[str, Any], ...], settings: _Settings,
                where: _Where) -> ComplexitySpec | None:
    """An adaptive scene's `complexity` mapping; a scene without an op counting "complexity" has none."""
    counting = [op for op in walk_ops(ops) if counts_complexity(op)]
    if raw is None:
        if counting:
            raise where.at("complexity").error(
                f"an adaptive scene (a {counting[0]['op']} whose {COMPLEXITY_OP_KEYS[counting[0]['op']]} is "
                "\"complexity\") needs "
                "'complexity: {unit: ..., capture: N}': what one unit draws and the complexity captures render at")
        return None
    if not counting:
        raise where.at("complexity").error(f"'complexity' belongs to adaptive scenes: give one of "
                                           f"{complexity_keys_text()} the value 'complexity', or remove the key")
    if settings.mode == "paced":
        raise where.at("mode").error("an adaptive scene is measured uncapped: its score is fitted to frame "
                                     "intervals that paced mode quantises to vsync periods; remove 'mode'")
    spec = _mapping(raw, where.at("complexity"))
    _check_keys(spec, COMPLEXITY_KEYS, ("unit", "capture"), where.at("complexity"), "'complexity'")
    unit = spec["unit"]
    if not isinstance(unit, str) or not unit.strip():
        raise where.at("complexity").at("unit").error(f"unit names what one unit of complexity draws, e.g. "
                                                     f"'rects', got {unit!r}")
    # The ops that count the complexity bound it: a mesh of 128 columns has at most 512 rows (docs/display-list.md).
    capping = min(counting, key=complexity_cap)
    cap = complexity_cap(capping)
    high = cast(int, _integer(1, MAX_COUNT)(spec.get("max", cap), where.at("complexity").at("max")))
    if high > cap:
        raise where.at("complexity").at("max").error(
            f"max {high} is more than the {capping['op']} op can draw ({cap} for its "
            f"{COMPLEXITY_OP_KEYS[capping['op']]}, docs/display-list.md); lower max to {cap} or less")
    capture = cast(int, _integer(0, high)(spec["capture"], where.at("complexity").at("capture")))
    return ComplexitySpec(unit=unit.strip(), capture=capture, max=high, limit=_complexity_limit(ops, cap, high))


def _complexity_limit(ops: tuple[Mapping[str, Any], ...], cap: int, high: int) -> int:
    """The largest complexity the counting ops can draw: `cap`, and no more than MAX_DRAWS_PER_FRAME draws a
    frame (a frame's draws grow linearly with the complexity: a + b x complexity)."""
    one, two = _draws_per_frame(ops, 1), _draws_per_frame(ops, 2)
    per_unit, fixed = two - one, 2 * one - two
    if per_unit > 0:
        cap = min(cap, (MAX_DRAWS_PER_FRAME - fixed) // per_unit)
    return max(high, cap)


def _combinations(sweep: Any, where: _Where) -> list[dict[str, Any]]:
    """The sweep as a list of param -> value dicts: the product of a mapping, or an explicit list of cases."""
    if sweep is None:
        return [{}]
    if isinstance(sweep, dict) and sweep:
        for name, values in sweep.items():
            _param_name(name, where.at(str(name)))
            if not isinstance(values, list) or not values:
                raise where.at(str(name)).error("a swept param needs a non-empty list of values, e.g. [1, 2, 4, 8]")
        names = list(sweep)
        total = math.prod(len(sweep[n]) for n in names)
        if total > MAX_CASES:
            raise where.error(f"the sweep makes {total} cases, more than the {MAX_CASES} a corpus may hold: "
                              "sweep fewer values")
        return [dict(zip(names, values)) for values in itertools.product(*(sweep[n] for n in names))]
    if isinstance(sweep, list) and sweep and all(isinstance(case, dict) and case for case in sweep):
        if len(sweep) > MAX_CASES:
            raise where.error(f"the sweep lists {len(sweep)} cases, more than the {MAX_CASES} a corpus may hold")
        case_names = set(sweep[0])
        for position, case in enumerate(sweep):
            if set(case) != case_names:
                raise where.at(position).error(f"every case of a list sweep must set the same params "
                                               f"({', '.join(sorted(map(str, case_names)))}); this one sets "
                                               f"{', '.join(sorted(map(str, case)))}")
            for name in case:
                _param_name(name, where.at(position).at(str(name)))
        return [dict(case) for case in sweep]
    raise where.error("'sweep' must map each param to a list of values (one case per combination), or be a "
                      "list of mappings (one case each)")


def _case_id(template: str, combination: Mapping[str, Any], family: str, where: _Where) -> str:
    def value(match: re.Match[str]) -> str:
        swept = combination[match.group(1)]
        if isinstance(swept, bool) or not isinstance(swept, (str, int, float)):
            raise where.error(f"{{{match.group(1)}}} is {swept!r}; only strings and numbers can go into an id")
        return str(swept)

    case_id = PLACEHOLDER_RE.sub(value, template)
    # Ids become golden file names: nothing may climb out of, or into another, folder.
    if "/" in case_id or "\\" in case_id or ".." in case_id:
        raise where.error(f"id {case_id!r} contains '/', '\\' or '..'; ids become file names and must stay "
                          "inside their folder")
    if not ID_RE.fullmatch(case_id):
        raise where.error(f"id {case_id!r} must match {ID_RE.pattern} (lower case, digits, '_', '.', '-')")
    if not case_id.startswith(family + "."):
        raise where.error(f"id {case_id!r} must start with the family name, '{family}.'")
    return case_id


def _check_unique(cases: list[SceneCase], path: Path) -> None:
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise SceneError(path, f"two cases get the id {case.id!r}; put every param that tells cases apart "
                                   "into the id template", scene=case.id, key="id")
        seen.add(case.id)


def _positive_or_null(raw: Mapping[str, Any], key: str, where: _Where, what: str) -> float | None:
    """raw[key] as a float, None for null; anything else is the scene file's error, saying it must be `what`."""
    value = raw[key]
    if value is not None and not _positive_number(value):
        raise where.at(key).error(f"{key} must be {what}, got {value!r}")
    return None if value is None else float(value)


def _settings(raw: Mapping[str, Any], base: _Settings, where: _Where) -> _Settings:
    """`base` overridden by whatever `raw` sets; tolerances merge per backend so a scene can adjust one."""
    settings = base
    if "budget_ms" in raw:
        budget = _positive_or_null(raw, "budget_ms", where, "a positive number of milliseconds or null (null: one "
                                                            "refresh interval of the device)")
        settings = replace(settings, budget_ms=budget)
    if "mode" in raw:
        if raw["mode"] is not None and raw["mode"] not in MODES:
            raise where.at("mode").error(f"mode must be one of {', '.join(MODES)} or null (null: the command "
                                         f"line's mode), got {raw['mode']!r}")
        settings = replace(settings, mode=raw["mode"])
    if "capture" in raw:
        settings = replace(settings, capture=_capture(raw["capture"], where.at("capture")))
    if "sustained" in raw:
        minutes = _positive_or_null(raw, "sustained", where, "a positive number of minutes (one long launch of the "
                                                             "scene, docs/sustained.md) or null")
        settings = replace(settings, sustained_min=minutes)
    if "tolerance" in raw:
        tolerance = dict(settings.tolerance)
        for backend, values in _mapping(raw["tolerance"], where.at("tolerance")).items():
            if not isinstance(backend, str) or not isinstance(values, dict):
                raise where.at("tolerance").at(str(backend)).error(
                    "tolerance maps a backend name to its settings, e.g. {software: {max_delta: 0}}")
            tolerance[backend] = {**tolerance.get(backend, {}), **values}
        try:  # checked now, not when a golden first exists: --zbench-update-goldens must not write under a typo
            validate_tolerances(tolerance)
        except ToleranceError as exc:
            raise where.at("tolerance").at(exc.key).error(str(exc)) from None
        settings = replace(settings, tolerance=tolerance)
    if "gate" in raw:
        settings = replace(settings, gate=_gate(raw["gate"], settings.gate, where.at("gate")))
    return settings


def _gate(raw: Any, base: GateOverride | None, where: _Where) -> GateOverride:
    """`gate: {threshold: 0.25, metrics: [cpu_ms.p50, jank_share]}`: a scene's own bar and gated metrics, over
    the defaults' (a key left out keeps the defaults' value, then the command line's)."""
    gate = _mapping(raw, where)
    _check_keys(gate, GATE_KEYS, (), where, "gate")
    out = base or GateOverride()
    if "threshold" in gate:
        threshold = gate["threshold"]
        if not (_number(threshold) and 0 <= threshold < math.inf):
            raise where.at("threshold").error(f"threshold must be a slowdown ratio >= 0 such as 0.25 (25 %), "
                                              f"got {threshold!r}")
        out = replace(out, threshold=float(threshold))
    if "metrics" in gate:
        metrics = gate["metrics"]
        if not isinstance(metrics, list) or not metrics or not all(isinstance(m, str) for m in metrics):
            raise where.at("metrics").error(f"metrics must be a non-empty list of gate metrics such as "
                                            f"[cpu_ms.p50, jank_share], got {metrics!r}")
        bad = [m for m in metrics if not GATE_METRIC.fullmatch(m)]
        if bad:
            raise where.at("metrics").error(f"{', '.join(map(repr, bad))} is not a gate metric: give statistics "
                                            "such as cpu_ms.p50, gpu_ms.p95, frame_ms.p99, jank_share or "
                                            "time_to_first_frame_ms")
        if len(set(metrics)) != len(metrics):
            raise where.at("metrics").error(f"metrics names a metric twice: {metrics!r}")
        out = replace(out, metrics=tuple(metrics))
    return out


def _capture(raw: Any, where: _Where) -> tuple[int, ...]:
    if not isinstance(raw, list) or not raw or not all(_whole(f) and f >= 0 for f in raw):
        raise where.error(f"capture must be a non-empty list of frame indexes (whole numbers >= 0), got {raw!r}")
    beyond = [f for f in raw if f > MAX_CAPTURE_FRAME]
    if beyond:
        raise where.error(f"frame {beyond[0]} is past the frames of a launch: capture frames 0 to "
                          f"{MAX_CAPTURE_FRAME} (60 warmup + 600 measured frames; docs/scenes.md, \"Captures\")")
    return tuple(sorted(set(raw)))


def _auto_capture(ops: tuple[Mapping[str, Any], ...]) -> tuple[int, ...]:
    """Frame 0, plus for animated scenes the first frame where the fastest animation has visibly moved.

    A golden of frame 0 alone would pass even if a runner ignored animation entirely.
    """
    later: list[int] = []
    for value in _walk_values(ops):
        if isinstance(value, dict) and "anim" in value:
            frames = value["every"] if value["anim"] == "step" else value["period"] / 4
            later.append(max(1, int(frames)))
        elif isinstance(value, str) and "{frame}" in value:
            later.append(1)
    return (0, min(later)) if later else (0,)


def _params(raw: Any, where: _Where) -> dict[str, Any]:
    params = _mapping(raw, where)
    for name in params:
        _param_name(name, where.at(str(name)))
    return params


def _param_name(name: Any, where: _Where) -> None:
    if not isinstance(name, str) or not PARAM_RE.fullmatch(name):
        raise where.error(f"param name {name!r} must match {PARAM_RE.pattern}")
    if name in TEXT_PLACEHOLDERS:
        raise where.error(f"{{{name}}} is filled in by the runner; choose another param name")


# --- substitution --------------------------------------------------------------------------------------------


def _substitute(value: Any, params: Mapping[str, Any], where: _Where) -> Any:
    """Params put into every string of `value`: "{layers}" alone becomes the value itself (a number stays a
    number), inside longer text it is formatted in, and {frame} / {i} are left for the runner."""
    if isinstance(value, str):
        return _substitute_text(value, params, where)
    if isinstance(value, list):
        return [_substitute(item, params, where.at(i)) for i, item in enumerate(value)]
    if isinstance(value, dict):
        return {key: _substitute(item, params, where.at(str(key))) for key, item in value.items()}
    return value


def _substitute_text(text: str, params: Mapping[str, Any], where: _Where) -> Any:
    alone = PLACEHOLDER_RE.fullmatch(text)
    if alone and alone.group(1) in params:
        return params[alone.group(1)]

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in params:
            return str(params[name])
        if name in TEXT_PLACEHOLDERS:
            return str(match.group(0))
        known = ", ".join(sorted(params)) or "none"
        raise where.error(f"unknown param {{{name}}} (params here: {known}); define it under 'params' or 'sweep'")

    return PLACEHOLDER_RE.sub(one, text)


# --- ops -----------------------------------------------------------------------------------------------------


def _ops(raw: Any, where: _Where) -> list[dict[str, Any]]:
    if not isinstance(raw, list) or not raw:
        raise where.error("'ops' must be a non-empty list of ops")
    ops: list[dict[str, Any]] = []
    count = 0
    for index, item in enumerate(raw):
        if isinstance(item, dict) and "unroll" in item:
            added = _unroll(item, where.at(index))
        else:
            added = [_op(item, where.at(index))]
        ops.extend(added)
        count += _op_count(added)
        if count > MAX_OPS:
            raise where.error(_too_many_ops(count))
    return ops


def _op_count(ops: list[dict[str, Any]]) -> int:
    return sum(1 for _ in walk_ops(ops))


def _too_many_ops(count: int) -> str:
    return (f"{count} ops, more than the {MAX_OPS} a job may hold (nested and unrolled ops included): draw many "
            "copies with `repeat`, which the runner loops, instead of `unroll`")


def _unroll(raw: dict[str, Any], where: _Where) -> list[dict[str, Any]]:
    """`{unroll: N, ops: [...]}`: the ops written out N times, so the runner sees only the ops themselves
    (overdraw stacks stay plain `rect` ops, drawable by a runner whose probe lists nothing else)."""
    _check_keys(raw, ("unroll", "ops"), ("unroll", "ops"), where, "an unroll block")
    count = _integer(1, MAX_UNROLL)(raw["unroll"], where.at("unroll"))
    body = _ops(raw["ops"], where.at("ops"))
    if count * _op_count(body) > MAX_OPS:  # refused before the copies are made: nested unrolls multiply
        raise where.error(_too_many_ops(count * _op_count(body)))
    return [op for _ in range(count) for op in body]


def _op(raw: Any, where: _Where) -> dict[str, Any]:
    if not isinstance(raw, dict) or "op" not in raw:
        raise where.error("each op must be a mapping with an 'op' key, or an 'unroll' block")
    name = raw["op"]
    if name not in OPS:
        raise where.at("op").error(f"unknown op {name!r}; known ops: {', '.join(OPS)} (docs/display-list.md)")
    spec = OPS[name]
    given = {**spec.defaults, **raw}
    _check_keys(given, {"op", *spec.keys}, spec.required, where, f"op {name!r}")
    return {"op": name, **{key: _op_value(name, key, given[key], where.at(key)) for key in spec.keys if key in given}}


def _op_value(op: str, key: str, raw: Any, where: _Where) -> Any:
    # "complexity": the runner takes the value per frame from the job (adaptive scenes), for the keys the
    # protocol lets take it (protocol.display_list.COMPLEXITY_OP_KEYS).
    if raw == COMPLEXITY_COUNT:
        if takes_complexity(op, key):
            return COMPLEXITY_COUNT
        raise where.error(f"{op!r} key {key!r} cannot be 'complexity': only {complexity_keys_text()} take the "
                          "per-frame complexity (docs/display-list.md, \"Complexity\")")
    return VALUES[key](raw, where)


def _shape(raw: Any, where: _Where) -> dict[str, Any]:
    kind = raw.get("kind") if isinstance(raw, dict) else None
    if not isinstance(kind, str) or kind not in CLIP_SHAPES:
        raise where.error(f"a clip shape is a mapping whose 'kind' is one of {', '.join(CLIP_SHAPES)}")
    keys = ("kind", *CLIP_SHAPES[kind])
    _check_keys(raw, keys, keys, where, f"clip shape {kind!r}")
    return {"kind": kind, **{key: VALUES[key](raw[key], where.at(key)) for key in CLIP_SHAPES[kind]}}


# --- values --------------------------------------------------------------------------------------------------

Validator = Callable[[Any, _Where], Any]


def _length(axis: Axis, sign: Sign = None) -> Validator:
    def plain(value: Any, at: _Where) -> Length:
        return _static_length(value, at, axis)

    def static(value: Any, at: _Where) -> Length:
        return _signed(plain(value, at), value, at, sign)

    def moving(value: Any, at: _Where) -> Length:  # an animated size may start from, or pass through, 0
        return _signed(plain(value, at), value, at, "non_negative" if sign else None)

    def check(raw: Any, where: _Where) -> Any:
        return _animated(raw, where, static, animated=moving, delta=plain)

    return check


Sign = Literal["positive", "non_negative"] | None


def _signed(length: Length, raw: Any, where: _Where, sign: Sign) -> Length:
    """Refuse a length that is out of range on every surface (one with a relative term, "100% - 8", may
    still be right on some surfaces, and is resolved per job)."""
    coefficients = (length.px, length.width, length.height, length.vmin, length.vmax)
    if sign == "positive" and max(coefficients) <= 0:
        raise where.error(f"must be greater than 0, got {raw!r}: a size of 0 or less draws nothing")
    if sign == "non_negative" and max(coefficients) <= 0 and min(coefficients) < 0:
        raise where.error(f"must be 0 or more, got {raw!r}")
    return length


def _static_length(raw: Any, where: _Where, axis: Axis) -> Length:
    try:
        return parse_length(raw, axis)
    except ValueError as exc:
        raise where.error(str(exc)) from None


def _animated(raw: Any, where: _Where, leaf: Validator, *, animated: Validator | None = None,
              delta: Validator | None = None) -> Any:
    """A plain value checked by `leaf`, or an animation whose values are each checked by `animated` (default
    `leaf`), its amplitude (a difference, not a value) by `delta`."""
    if not isinstance(raw, dict):
        return leaf(raw, where)
    kind = raw.get("anim")
    if not isinstance(kind, str) or kind not in ANIMATIONS:
        raise where.error(f"an animation is a mapping whose 'anim' is one of {', '.join(ANIMATIONS)} "
                          "(docs/display-list.md)")
    value_keys, frames_key = ANIMATIONS[kind]
    keys = ("anim", *value_keys, frames_key)
    _check_keys(raw, keys, keys, where, f"anim {kind!r}")
    anim: dict[str, Any] = {"anim": kind}
    for key in value_keys:
        check = (delta if key == "amplitude" else animated) or leaf
        if key == "values":
            if not isinstance(raw[key], list) or not raw[key]:
                raise where.at(key).error("a step animation needs a non-empty list of values")
            anim[key] = [check(item, where.at(key).at(i)) for i, item in enumerate(raw[key])]
        else:
            anim[key] = check(raw[key], where.at(key))
    frames = raw[frames_key]
    if frames_key == "every" and not (_whole(frames) and frames >= 1):
        raise where.at(frames_key).error(f"'every' is a whole number of frames >= 1, got {frames!r}")
    if not _positive_number(frames):
        raise where.at(frames_key).error(f"'period' is a positive number of frames, got {frames!r}")
    anim[frames_key] = frames
    return anim


def _opacity(raw: Any, where: _Where) -> Any:
    def leaf(value: Any, at: _Where) -> float:
        if not _number(value) or not 0 <= value <= 1:
            raise at.error(f"opacity is a number from 0 to 1, got {value!r}")
        return cast(float, value)

    return _animated(raw, where, leaf)


def _color(raw: Any, where: _Where) -> str:
    if raw is None:
        raise where.error("no colour: an unquoted # starts a YAML comment; quote it, e.g. color: \"#3366CC\"")
    if not isinstance(raw, str) or not COLOR_RE.fullmatch(raw):
        raise where.error(f"colour must be \"#RRGGBB\" or \"#RRGGBBAA\", got {raw!r}")
    # One spelling in jobs, so identical scenes produce identical job files.
    return (raw if len(raw) == 9 else raw + "FF").upper()


def _stops(raw: Any, where: _Where) -> list[list[Any]]:
    if not isinstance(raw, list) or len(raw) < 2:
        raise where.error("stops must be a list of at least two [position, colour] pairs")
    stops: list[list[Any]] = []
    for index, stop in enumerate(raw):
        at = where.at(index)
        if not isinstance(stop, list) or len(stop) != 2 or not _number(stop[0]) or not 0 <= stop[0] <= 1:
            raise at.error(f"a stop is [position, colour] with position from 0 to 1, got {stop!r}")
        if stops and stop[0] < stops[-1][0]:
            raise at.error("stop positions must not decrease")
        stops.append([stop[0], _color(stop[1], at)])
    return stops


def _points(raw: Any, where: _Where) -> list[list[Any]]:
    if not isinstance(raw, list) or len(raw) < 2:
        raise where.error("points must be a list of at least two [x, y] pairs")
    points: list[list[Any]] = []
    for index, point in enumerate(raw):
        if not isinstance(point, list) or len(point) != 2:
            raise where.at(index).error(f"a point is [x, y], got {point!r}")
        points.append([_length("x")(point[0], where.at(index).at(0)),
                       _length("y")(point[1], where.at(index).at(1))])
    return points


def _text(raw: Any, where: _Where) -> str:
    if not isinstance(raw, str):
        raise where.error(f"text must be a string (quote it), got {raw!r}")
    return raw


def _count(raw: Any, where: _Where) -> int:
    return cast(int, _integer(1, MAX_COUNT)(raw, where))


def _integer(low: int, high: int) -> Validator:
    def check(raw: Any, where: _Where) -> int:
        if not _whole(raw) or not low <= raw <= high:
            raise where.error(f"expected a whole number from {low} to {high}, got {raw!r}")
        return cast(int, raw)

    return check


def _choice(*allowed: str) -> Validator:
    def check(raw: Any, where: _Where) -> str:
        if raw not in allowed:
            raise where.error(f"expected one of {', '.join(allowed)}, got {raw!r}")
        return cast(str, raw)

    return check


def _boolean(raw: Any, where: _Where) -> bool:
    if not isinstance(raw, bool):
        raise where.error(f"expected true or false, got {raw!r}")
    return raw


def _validator(key: str, kind: ValueKind) -> Validator:
    """The check of one display-list key, from the kind the protocol gives it."""
    sign: Sign = "positive" if key in POSITIVE_KEYS else "non_negative" if key in NON_NEGATIVE_KEYS else None
    if kind in ("x", "y"):
        return _length(kind, sign)
    if kind == "length":
        # Neither horizontal nor vertical: "%" is refused, vw / vh / vmin / vmax say what is meant.
        return _length(None, sign)
    if kind == "integer":
        return _integer(*INTEGER_RANGES[key])
    if kind == "choice":
        return _choice(*CHOICES[key])
    return {"color": _color, "stops": _stops, "points": _points, "text": _text, "opacity": _opacity,
            "count": _count, "boolean": _boolean, "shape": _shape, "ops": _ops}[kind]


VALUES: dict[str, Validator] = {key: _validator(key, kind) for key, kind in KEY_KINDS.items()}


# --- small helpers -------------------------------------------------------------------------------------------


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _positive_number(value: Any) -> bool:
    return _number(value) and value > 0


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _mapping(raw: Any, where: _Where) -> dict[Any, Any]:
    if not isinstance(raw, dict):
        raise where.error(f"expected a mapping, got {raw!r}")
    return raw


def _string(raw: Any, where: _Where) -> str:
    if not isinstance(raw, str):
        raise where.error(f"expected a string, got {raw!r}")
    return raw


def _walk_values(value: Any) -> Iterator[Any]:
    """Every mapping, list and scalar inside `value`, depth first."""
    yield value
    children = value.values() if isinstance(value, Mapping) else value if isinstance(value, (list, tuple)) else ()
    for child in children:
        yield from _walk_values(child)


def _resolve(value: Any, width: int, height: int) -> Any:
    if isinstance(value, Length):
        return value.resolve(width, height)
    if isinstance(value, Mapping):
        return {key: _resolve(item, width, height) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_resolve(item, width, height) for item in value]
    return value
