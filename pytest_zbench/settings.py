"""One frozen settings object, built once from command line > ini > default and validated there."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from .errors import UsageError
from .protocol import MODES
from .regression.config import (
    AB_GATING_METRICS,
    DEFAULT_AB_THRESHOLD,
    DEFAULT_BETWEEN_FLOOR,
    DEFAULT_THRESHOLD,
    GATE_METRIC,
)
from .regression.config import DEFAULT_HISTORY_PATH as DEFAULT_HISTORY
from .regression.config import GATING_METRICS as DEFAULT_GATE_METRICS
from .regression.location import HISTORY_ENV, HistoryLocation, parse_location, postgres_driver_missing

# Defaults follow docs/methodology.md (§1, §3, §4): 60 warmup frames, 600 measured, 5 independent launches,
# vsync-paced.
DEFAULT_WARMUP = 60
DEFAULT_FRAMES = 600
DEFAULT_RUNS = 5
DEFAULT_MODE = "paced"

# `--zbench-quick`: a first look in seconds, not a measurement to trust. Two launches so that spread exists.
QUICK = {"runs": 2, "warmup": 5, "frames": 30}
# `--zbench-first-look`: one representative scene per family (scenes.first_look_cases), one launch each, so that
# the whole corpus is seen within README's two minutes on 2 cores. A launch's start-up (an interpreter, Skia)
# costs more than its frames on `local`, so fewer frames buy little; 20 keep a p95 that says something.
FIRST_LOOK = {"runs": 1, "warmup": 5, "frames": 20}
# `--zbench-goldens-only`: the captures and nothing else (docs/goldens.md, "Goldens only"). The runner renders
# the capture frames after the measured ones, by frame index, so one measured frame is enough for any capture.
GOLDENS_ONLY = {"runs": 1, "warmup": 0, "frames": 1}

BASELINE_KEYWORDS = ("history", "none")

# The sequential gate (docs/regression.md, "The sequential gate"): its alpha is spent by launches / this
# maximum; bench/bench_sequential_gate.py measured its power and launches at this value.
DEFAULT_MAX_LAUNCHES = 14

# Sustained mode (docs/sustained.md): conditions every 5 s resolve a thermal time constant of tens of seconds.
DEFAULT_SUSTAINED_INTERVAL_S = 5.0


@dataclass(frozen=True)
class Option:
    """A setting's command-line flag, ini key, type and default, declared once for the plugin to register."""

    name: str
    flag: str
    ini: str
    help: str
    default: Any
    parse: Callable[[str], Any] = str
    env: str | None = None  # an environment variable read when the command line does not give the option


OPTIONS: tuple[Option, ...] = (
    Option("devices", "--zbench-device", "zbench_device",
           "device name(s) from the inventory, comma separated (default: local)", "local"),
    Option("inventory", "--zbench-devices", "zbench_devices",
           "path of the device inventory (default: devices.yaml beside the ini file)", "devices.yaml"),
    Option("scenes_dir", "--zbench-scenes", "zbench_scenes",
           "folder of scene files collected as tests (default: scenes)", "scenes"),
    Option("goldens_dir", "--zbench-goldens", "zbench_goldens",
           "folder of golden images (default: goldens)", "goldens"),
    Option("results", "--zbench-results", "zbench_results",
           "artifact folder for run.json, per-frame CSVs and images (default: zbench-results)", "zbench-results"),
    Option("runs", "--zbench-runs", "zbench_runs",
           f"independent runner launches per scene (default: {DEFAULT_RUNS})", DEFAULT_RUNS, int),
    Option("frames", "--zbench-frames", "zbench_frames",
           f"measured frames per launch (default: {DEFAULT_FRAMES})", DEFAULT_FRAMES, int),
    Option("warmup", "--zbench-warmup", "zbench_warmup",
           f"warmup frames per launch, discarded from the statistics (default: {DEFAULT_WARMUP})", DEFAULT_WARMUP, int),
    Option("mode", "--zbench-mode", "zbench_mode",
           f"frame pacing: paced (simulated vsync) or uncapped (default: {DEFAULT_MODE})", DEFAULT_MODE),
    Option("timeout_s", "--zbench-timeout", "zbench_timeout",
           "wall-clock limit of one runner launch in seconds (default: computed from the frame count)", None, float),
    Option("seed", "--zbench-seed", "zbench_seed", "seed passed to the runner (default: 1)", 1, int),
    Option("history", "--zbench-history", "zbench_history",
           "run history every measured scene is recorded in: a SQLite file, or a lab's PostgreSQL database "
           "as postgresql://USER@HOST:PORT/DB (credentials from ~/.pgpass or the PG* environment); "
           f"${HISTORY_ENV} when not given on the command line (default: {DEFAULT_HISTORY})",
           DEFAULT_HISTORY, env=HISTORY_ENV),
    Option("baseline", "--zbench-baseline", "zbench_baseline",
           "what perf tests are judged against: history (the recent comparable runs in --zbench-history), "
           "none (no gate), or the path of an earlier run.json (default: history)", "history"),
    Option("threshold", "--zbench-threshold", "zbench_threshold",
           "smallest slowdown the gate calls a regression, whatever the noise; a scene file's gate: threshold "
           f"wins (default: {DEFAULT_THRESHOLD} against a history or run.json, {DEFAULT_AB_THRESHOLD} in A/B, "
           "where interleaving cancels session offsets)", None, float),
    Option("between_floor", "--zbench-between-floor", "zbench_between_floor",
           "the smallest between-session spread the history gate uses, as a fraction: a device whose sessions "
           "are known to agree more closely (a dedicated, pinned, thermally controlled board) can lower it, 0 "
           "turns it off; it keeps two or three lucky sessions from deciding a verdict, at a cost in power "
           f"against few sessions (default: {DEFAULT_BETWEEN_FLOOR})", DEFAULT_BETWEEN_FLOOR, float),
    Option("gate_metrics", "--zbench-gate-metrics", "zbench_gate_metrics",
           "per-launch statistics the gate judges, comma separated, tested together as one family (the scene's "
           "false-alarm rate is what alpha 0.01 controls); a scene file's gate: metrics wins "
           f"(default: {','.join(DEFAULT_GATE_METRICS)} against a history or run.json; A/B adds "
           f"{','.join(m for m in AB_GATING_METRICS if m not in DEFAULT_GATE_METRICS)})", None),
    Option("ab", "--zbench-ab", "zbench_ab",
           "A/B mode: B runner, a device name from the inventory (its runner) or an argv string, launched on "
           "the same device interleaved with the device's own runner (A); B is judged against A "
           "(default: off)", None),
    Option("budget_min", "--zbench-budget", "zbench_budget",
           "the sequential gate: minutes of launches per device session; each scene is launched in rounds, "
           "judged after each round and stopped once decided, what is left spent on the undecided ones "
           "(docs/regression.md, \"The sequential gate\"; default: off, a fixed --zbench-runs per scene)",
           None, float),
    Option("max_launches", "--zbench-max-launches", "zbench_max_launches",
           "with --zbench-budget: the most launches a scene gets (per side in A/B); the sequential gate's "
           f"alpha is spent by launches / this maximum (default: {DEFAULT_MAX_LAUNCHES})", DEFAULT_MAX_LAUNCHES, int),
    Option("sustained_min", "--zbench-sustained", "zbench_sustained",
           "sustained mode: one launch per scene running this many minutes (fractions allowed), with the "
           "device's conditions sampled during it; burst vs sustained speed, time to steady state and the "
           "thermal trajectory in run.json (docs/sustained.md; default: off, or the scene's `sustained` key)",
           None, float),
    Option("sustained_interval_s", "--zbench-sustained-interval", "zbench_sustained_interval",
           f"seconds between condition samples during a sustained launch (default: {DEFAULT_SUSTAINED_INTERVAL_S:g})",
           DEFAULT_SUSTAINED_INTERVAL_S, float),
    Option("keep_runs", "--zbench-keep-runs", "zbench_keep_runs",
           "sessions kept in the run archive, <results>/runs/NNNN with <results>/latest the newest; older ones are "
           "deleted, 0 keeps no archive (default: 20)", 20, int),
    Option("lease_dir", "--zbench-lease-dir", "zbench_lease_dir",
           "folder of the remote devices' lease files, shared by every session that may use them "
           "(default: zbench-leases-<uid> in the temporary folder)", None),
)


@dataclass(frozen=True)
class Settings:
    devices: tuple[str, ...]
    inventory: Path
    scenes_dir: Path
    goldens_dir: Path
    results: Path
    runs: int
    frames: int
    warmup: int
    mode: str
    timeout_s: float | None
    seed: int
    quick: bool = False
    first_look: bool = False  # one scene per family, one short launch each (FIRST_LOOK)
    update_goldens: UpdatePolicy | None = None  # None: no golden is written
    history: HistoryLocation = HistoryLocation.file(DEFAULT_HISTORY)  # str() has no password
    baseline: str = "history"  # history | none | file
    baseline_file: Path | None = None  # the run.json when baseline == "file"
    threshold: float | None = None  # None: the mode's default (regression/config.py)
    gate_metrics: tuple[str, ...] | None = None  # None: the mode's default (regression/config.py)
    between_floor: float = DEFAULT_BETWEEN_FLOOR  # the history gate's smallest between-session spread
    ab: str | None = None  # the B runner: a device name or an argv string
    calibrate: bool = False  # record A/A launches as calibration runs, gate nothing
    check_runner: bool = False  # run the runner conformance kit once per device before measuring
    lease_dir: Path | None = None  # None: host.devices.health.default_lease_dir()
    budget_min: float | None = None  # the sequential gate's minutes per device session; None: fixed runs
    max_launches: int = DEFAULT_MAX_LAUNCHES  # the sequential gate's most launches per scene (per side in A/B)
    sustained_min: float | None = None  # sustained mode for every scene (minutes); None: the scene's own key
    sustained_interval_s: float = DEFAULT_SUSTAINED_INTERVAL_S
    ci: bool = False  # CI=true: every device asked for is one this CI run exists to exercise (running_in_ci)
    goldens_only: bool = False  # golden tests only: perf tests deselected, no history entry (GOLDENS_ONLY)
    keep_runs: int = 20  # sessions kept in <results>/runs (run_archive.py); 0: no archive
    # The inventory was named (--zbench-devices or its ini key): a missing file is an error, not the embedded
    # default alone (inventory.load_inventory)
    inventory_named: bool = False

    def launch_timeout(self, refresh_hz: float, device_timeout: float | None) -> float:
        """A deadline generous enough for a slow device: 20x the ideal paced time plus start-up."""
        if self.timeout_s is not None:
            return self.timeout_s
        if device_timeout is not None:
            return device_timeout
        return 60.0 + 20.0 * (self.warmup + self.frames) / refresh_hz

    def probe_timeout(self, device_timeout: float | None, default: float) -> float:
        """The deadline of a runner's probe: the one a launch is given explicitly, else `default`."""
        if self.timeout_s is not None:
            return self.timeout_s
        return device_timeout if device_timeout is not None else default


# --zbench-update-goldens: which goldens may be written from trusted captures (golden/store.decide_update).
UpdatePolicy = Literal["missing", "failed", "all"]
UPDATE_MODES: tuple[UpdatePolicy, ...] = get_args(UpdatePolicy)


def running_in_ci(environ: Mapping[str, str]) -> bool:
    """CI=true, as GitHub Actions, GitLab CI and ci/test.sh's `.ci/run` set it: a session whose devices a CI
    run is meant to exercise, where a scene test a device cannot run fails instead of skipping."""
    return environ.get("CI", "").strip().lower() == "true"


def build_settings(get: Callable[[Option], Any], rootdir: Path, *, quick: bool,
                   update_goldens: str | None = None, calibrate: bool = False,
                   check_runner: bool = False, ci: bool = False, goldens_only: bool = False,
                   first_look: bool = False) -> Settings:
    """`get(option)` returns the command-line value, else the ini value (a string), else None."""
    values: dict[str, Any] = {}
    for option in OPTIONS:
        raw = get(option)
        if raw is None or raw == "":
            values[option.name] = option.default
            continue
        try:
            values[option.name] = option.parse(raw) if isinstance(raw, str) else raw
        except ValueError:
            raise UsageError(f"{option.flag} (ini {option.ini}): {raw!r} is not a valid {option.parse.__name__}") from None
    # Values given explicitly win over the presets; goldens-only wins over the first look, which wins over quick
    # (each asks for less than the next).
    preset = GOLDENS_ONLY if goldens_only else FIRST_LOOK if first_look else QUICK if quick else {}
    values.update({k: v for k, v in preset.items() if get(_option(k)) in (None, "")})
    devices = tuple(d.strip() for d in str(values["devices"]).split(",") if d.strip())
    if not devices:
        raise UsageError("--zbench-device: give at least one device name")
    if len(set(devices)) != len(devices):
        raise UsageError(f"--zbench-device: {','.join(devices)} names a device twice")
    for key, low in (("runs", 1), ("frames", 1), ("warmup", 0), ("keep_runs", 0)):
        if values[key] < low:
            raise UsageError(f"{_option(key).flag}: {values[key]} must be at least {low}")
    if values["mode"] not in MODES:
        raise UsageError(f"--zbench-mode: {values['mode']!r} is not one of {', '.join(MODES)}")
    if update_goldens is not None and update_goldens not in UPDATE_MODES:
        raise UsageError(f"--zbench-update-goldens: {update_goldens!r} is not one of {', '.join(UPDATE_MODES)}")
    if values["timeout_s"] is not None and not 0 < values["timeout_s"] < math.inf:
        raise UsageError(f"--zbench-timeout: {values['timeout_s']!r}; give a positive, finite number of seconds")

    def path(value: Any) -> Path:
        p = Path(str(value)).expanduser()
        return p if p.is_absolute() else rootdir / p

    results = path(values["results"])
    _check_results_folder(results)
    scenes_dir = path(values["scenes_dir"])
    if get(_option("scenes_dir")) not in (None, "") and not scenes_dir.is_dir():
        # The default folder may be missing (a project that only uses the fixtures); a named one may not.
        raise UsageError(f"--zbench-scenes (ini zbench_scenes): {scenes_dir} is not a folder; give the folder "
                         "that holds the scene files (*.yaml)")

    if values["threshold"] is not None and not 0 <= values["threshold"] < math.inf:
        raise UsageError(f"--zbench-threshold: {values['threshold']!r}; give a slowdown ratio such as 0.15 (15 %)")
    if not 0 <= values["between_floor"] < 1:
        raise UsageError(f"--zbench-between-floor: {values['between_floor']!r}; give a fraction such as 0.02 "
                         "(2 %), or 0 to turn the floor off")
    baseline = str(values["baseline"])
    baseline_file = None
    if baseline not in BASELINE_KEYWORDS:
        baseline_file = path(baseline)
        if not baseline_file.is_file():
            raise UsageError(f"--zbench-baseline: {baseline_file} is not a file; give history, none, or the "
                             "path of an earlier run.json")
        baseline = "file"
    gate_metrics = (None if values["gate_metrics"] is None else
                    tuple(m.strip() for m in str(values["gate_metrics"]).split(",") if m.strip()))
    bad = [m for m in gate_metrics or () if not GATE_METRIC.fullmatch(m)]
    if bad or gate_metrics == ():
        raise UsageError(f"--zbench-gate-metrics: {', '.join(bad) or 'nothing given'}: give statistics such as "
                         "cpu_ms.p50, gpu_ms.p95, frame_ms.p99, jank_share, adaptive.score or time_to_first_frame_ms, "
                         "comma separated")
    try:
        history = parse_location(str(values["history"]), lambda text: path(text))
    except ValueError as exc:
        raise UsageError(f"--zbench-history (ini zbench_history, ${HISTORY_ENV}): {exc}") from None
    if not history.is_file and postgres_driver_missing():
        raise UsageError(f"--zbench-history {history}: {postgres_driver_missing()}")
    ab = values["ab"].strip() if isinstance(values["ab"], str) and values["ab"].strip() else None
    if values["ab"] is not None and ab is None:
        raise UsageError("--zbench-ab: give the B runner, a device name or an argv string")
    sustained = values["sustained_min"]
    if sustained is not None and not 0 < sustained < math.inf:
        raise UsageError(f"--zbench-sustained: {sustained!r}; give the launch's duration in minutes, such as 10 "
                         "or 0.5")
    if not 0 < values["sustained_interval_s"] < math.inf:
        raise UsageError(f"--zbench-sustained-interval: {values['sustained_interval_s']!r}; give a positive "
                         "number of seconds")
    if sustained is not None and (ab or calibrate):
        raise UsageError("--zbench-sustained runs one long launch per scene; it cannot be combined with "
                         f"{'--zbench-ab' if ab else '--zbench-calibrate'}")
    if goldens_only and (ab or calibrate or sustained is not None):
        given = "--zbench-ab" if ab else "--zbench-calibrate" if calibrate else "--zbench-sustained"
        raise UsageError(f"--zbench-goldens-only runs the golden tests alone and measures nothing; it cannot be "
                         f"combined with {given}, which is about measuring")
    budget = values["budget_min"]
    if budget is not None and not 0 < budget < math.inf:
        raise UsageError(f"--zbench-budget: {budget!r}; give the device session's minutes of launches, such as "
                         "30 or 0.5")
    if values["max_launches"] < 4:
        raise UsageError(f"--zbench-max-launches: {values['max_launches']} must be at least 4 (the sequential "
                         "gate's first look is after 4 launches per side)")
    if budget is not None and not ab:
        raise UsageError("--zbench-budget: the sequential gate launches interleaved A/B rounds; give the B runner "
                         "with --zbench-ab (a history baseline is not judged sequentially: more launches of one "
                         "session cannot shrink its between-session spread, docs/regression.md)")
    if budget is not None and (sustained is not None or calibrate or goldens_only):
        given = ("--zbench-sustained" if sustained is not None else "--zbench-calibrate" if calibrate
                 else "--zbench-goldens-only")
        raise UsageError(f"--zbench-budget spends launches until each verdict is decided; it cannot be combined "
                         f"with {given}")
    if budget is not None and get(_option("runs")) not in (None, ""):
        raise UsageError(f"--zbench-runs={values['runs']} is not used under --zbench-budget: the sequential gate "
                         "launches rounds until each verdict is decided, at most --zbench-max-launches per side; "
                         "drop --zbench-runs (or its ini zbench_runs), or give --zbench-max-launches")
    if first_look and (ab or budget is not None or sustained is not None or calibrate):
        given = ("--zbench-ab" if ab else "--zbench-budget" if budget is not None
                 else "--zbench-sustained" if sustained is not None else "--zbench-calibrate")
        raise UsageError(f"--zbench-first-look is one short launch of one scene per family; it cannot be combined "
                         f"with {given}, which needs the scenes measured in full")
    if calibrate and ab:
        raise UsageError("--zbench-calibrate records A/A launches of one runner; it cannot be combined with "
                         "--zbench-ab")

    return Settings(
        devices=devices,
        inventory=path(values["inventory"]),
        scenes_dir=scenes_dir,
        goldens_dir=path(values["goldens_dir"]),
        results=results,
        runs=values["runs"],
        frames=values["frames"],
        warmup=values["warmup"],
        mode=values["mode"],
        timeout_s=values["timeout_s"],
        seed=values["seed"],
        quick=quick,
        first_look=first_look,
        update_goldens=update_goldens,
        history=history,
        baseline=baseline,
        baseline_file=baseline_file,
        threshold=values["threshold"],
        gate_metrics=gate_metrics,
        between_floor=values["between_floor"],
        ab=ab,
        calibrate=calibrate,
        check_runner=check_runner,
        lease_dir=None if values["lease_dir"] is None else path(values["lease_dir"]),
        budget_min=budget,
        max_launches=values["max_launches"],
        sustained_min=sustained,
        sustained_interval_s=values["sustained_interval_s"],
        ci=ci,
        goldens_only=goldens_only,
        keep_runs=values["keep_runs"],
        inventory_named=get(_option("inventory")) not in (None, ""),
    )


def _check_results_folder(results: Path) -> None:
    """A results folder that is a file, or that cannot be written, is one usage error now instead of a
    traceback in every test."""
    flag = "--zbench-results (ini zbench_results)"
    existing = results
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        what = "is a file" if existing == results else f"cannot be created: {existing} is a file"
        raise UsageError(f"{flag}: {results} {what}, not a folder; give a folder for run.json and the other "
                         "artifacts")
    # A folder not there yet is created by the first artifact, inside its nearest existing parent: that parent
    # must take it, or every test would fail on it. Nothing is created here: a write check leaves no file.
    try:  # os.access is not enough: root passes it on a read-only (immutable) folder
        with tempfile.TemporaryFile(dir=existing, prefix=".zbench-write-check-"):
            pass
    except OSError as exc:
        where = results if existing == results else f"{existing} (to create {results} in it)"
        raise UsageError(f"{flag}: cannot write into {where}: {exc.strerror or exc}; give a writable "
                         "folder") from None


def _option(name: str) -> Option:
    return next(o for o in OPTIONS if o.name == name)

