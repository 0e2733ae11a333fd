"""How the host side scales: each figure at three sizes, its target, and its growth exponent (the slope of
log(time) against log(size) over the sizes; 1 is linear).

* collection: `pytest --collect-only` of a scratch project whose scenes folder holds 10, 100 and 1,000 scenes,
  copies of the real families of scenes/ under new family names (wall time, the child's peak resident memory);
* outputs: a session of 10, 100 and 1,000 scenes built from the scene entries of a real run (a small session on
  `local`, run first unless --template names a results folder), and the writers timed: the terminal table,
  run.json (the corpus sections, the schema check, the atomic write), report.html (time, size, and whether
  Chromium renders it headless) and JUnit (a pytest session of as many tests carrying the real properties, with
  and without --junitxml);
* publish: `zbench publish` of a history of 5, 50 and 500 runs of 90 scenes (3 launches each) with as many
  archived runs in the results folder (run.json from the real run's entries), then again after one new run;
* history: the history gate judging one scene (the device's other scenes read, the baseline and spread read,
  the two-level test, the series of the report) against 100, 1,000 and 10,000 stored sessions of it, each
  session also holding 9 other scenes, in SQLite and in PostgreSQL (tests/regression/pg_server.py).

    python bench/bench_scale.py [--part collection|outputs|publish|history ...] [--quick] [--template RESULTS]
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "regression"))

from synthetic_history import START, launch  # noqa: E402

from pytest_zbench.regression import store  # noqa: E402
from pytest_zbench.regression.history import History, environment_fingerprint, hash_params  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
ENV.pop("ZBENCH_HISTORY_URL", None)
# Child sessions keep their bytecode (pytest's rewritten modules too) as a developer's machine does, in a cache of
# their own (set in main): without it every session compiles the plugin's 120 modules again, a second or more.
ENV.pop("PYTHONDONTWRITEBYTECODE", None)
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly"]


# --- figures ---------------------------------------------------------------------------------------------------


def exponent(sizes: list[float], values: list[float]) -> float | None:
    """The slope of log(value) against log(size): 1 grows linearly, 2 quadratically."""
    pairs = [(math.log(s), math.log(v)) for s, v in zip(sizes, values) if s > 0 and v > 0]
    if len(pairs) < 2:
        return None
    return float(np.polyfit([p[0] for p in pairs], [p[1] for p in pairs], 1)[0])


class Table:
    def __init__(self) -> None:
        self.rows: list[tuple[str, list[float], list[float], str, float | None, str]] = []

    def add(self, figure: str, sizes: list[float], values: list[float], unit: str = "s",
            target: float | None = None) -> None:
        """A figure at each size; its target (same unit) applies to the largest size."""
        met = "" if target is None else "met" if values[-1] <= target else "NOT met"
        self.rows.append((figure, sizes, values, unit, target, met))

    def print(self, title: str) -> None:
        print(f"\n{title}")
        print(f"{'figure':<34} {'sizes':>16} {'values':>30} {'exp':>5} {'target':>10}  result")
        for figure, sizes, values, unit, target, met in self.rows:
            k = exponent(sizes, values)
            shown = " ".join(_fmt(v) for v in values)
            print(f"{figure:<34} {' '.join(f'{s:g}' for s in sizes):>16} {shown + ' ' + unit:>30} "
                  f"{'' if k is None else f'{k:.2f}':>5} {'' if target is None else f'{_fmt(target)} {unit}':>10}"
                  f"  {met}")


def _fmt(value: float) -> str:
    return f"{value:.3g}" if value < 1000 else f"{value:.0f}"


def run_child(argv: list[str], cwd: Path) -> tuple[float, float, subprocess.CompletedProcess[str] | Any]:
    """Wall seconds, the child's peak resident memory (MB, from wait4) and its output."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, cwd=cwd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = child.stdout.read() if child.stdout else ""
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    return elapsed, usage.ru_maxrss / 1024, subprocess.CompletedProcess(argv, child.returncode, out)


# --- collection ------------------------------------------------------------------------------------------------


def make_corpus(folder: Path, n: int) -> int:
    """Copies of the real scene files in `folder/scenes` (family `<family>c<k>`, ids renamed alike) holding
    about n scenes (a file's last scenes left out to stay within n); the number of scenes written."""
    from pytest_zbench.scenes import load_scene_file

    scenes = folder / "scenes"
    scenes.mkdir(parents=True)
    sources = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted((REPO / "scenes").glob("*.yaml"))]
    total, k = 0, 0
    while total < n:
        for raw in sources:
            family = raw["family"]
            doc = copy.deepcopy(raw)
            new = f"{family}c{k}"
            doc["family"] = new
            for entry in doc["scenes"]:
                entry["id"] = _renamed(entry["id"], family, new)
                differential = entry.get("differential")
                if isinstance(differential, dict) and isinstance(differential.get("minus"), str):
                    differential["minus"] = _renamed(differential["minus"], family, new)
            path = scenes / f"{new}.yaml"
            while doc["scenes"]:
                path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
                count = len(load_scene_file(path))
                if total + count <= n:
                    break
                doc["scenes"].pop()
            else:
                path.unlink()
                count = 0
            total += count
            if total >= n:
                return total
        k += 1
    return total


def _renamed(case_id: str, family: str, new: str) -> str:
    return new + case_id[len(family):] if case_id.startswith(family + ".") else case_id


def part_collection(sizes: list[int], scratch: Path) -> None:
    table = Table()
    counts, times, inside, memory = [], [], [], []
    for n in sizes:
        project = scratch / f"collect{n}"
        count = make_corpus(project, n)
        (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        run_child(PYTEST + ["--collect-only", "-q", "--zbench-device=local"], project)  # warm the bytecode
        elapsed, rss, ran = run_child(PYTEST + ["--collect-only", "-q", "--zbench-device=local"], project)
        if ran.returncode != 0 or f"{2 * count} tests collected" not in ran.stdout:
            print(ran.stdout[-3000:])
            raise SystemExit(f"collecting {count} scenes failed or collected another number of tests")
        said = re.search(r"tests? collected in ([0-9.]+)s", ran.stdout)
        counts.append(count), times.append(elapsed), memory.append(rss)
        inside.append(float(said.group(1)) if said else float("nan"))
    table.add("collection (pytest's own figure)", counts, inside, "s", 2.0)
    table.add("  the whole pytest process", counts, times, "s")
    table.add("  its peak memory", counts, memory, "MB")
    table.print("collection: scenes in the corpus (perf + golden test each, device local)")


# --- outputs ---------------------------------------------------------------------------------------------------


def real_results(scratch: Path) -> Path:
    """A real session's results folder: two scenes of the fill family on `local`, run twice (the second run is
    judged against the first)."""
    project = scratch / "real"
    (project / "scenes").mkdir(parents=True)
    shutil.copy(REPO / "scenes" / "fill.yaml", project / "scenes")
    shutil.copytree(REPO / "goldens", project / "goldens")
    (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    for _ in range(2):
        _, _, ran = run_child(PYTEST + ["-q", "--zbench-device=local", "--zbench-quick", "-k", "opaque.x1 or alpha.x1",
                                        "--zbench-results=results", "--zbench-history=history.sqlite",
                                        "--junitxml=results/junit.xml"], project)
        if "passed" not in ran.stdout:
            print(ran.stdout[-3000:])
            raise SystemExit("the real session failed")
    return project / "results"


def scaled_document(template: dict[str, Any], n: int) -> dict[str, Any]:
    """run.json of n scenes: the template's entries cycled, under new family names."""
    document = copy.deepcopy(template)
    entries = template["scenes"]
    scenes = []
    for i in range(n):
        entry = copy.deepcopy(entries[i % len(entries)])
        k = i // len(entries)
        family = entry["family"]
        entry["id"] = _renamed(entry["id"], family, f"{family}c{k}")
        entry["family"] = f"{family}c{k}"
        scenes.append(entry)
    document["scenes"] = scenes
    return document


def junit_properties(junit: Path) -> dict[str, list[tuple[str, str]]]:
    import xml.etree.ElementTree as ET

    found: dict[str, list[tuple[str, str]]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        kind = (case.get("name") or "").split("[")[0]
        if kind in ("perf", "golden") and kind not in found:
            found[kind] = [(p.get("name") or "", p.get("value") or "") for p in case.iter("property")]
    return found


def time_junit(folder: Path, n: int, properties: dict[str, list[tuple[str, str]]]) -> tuple[float, float]:
    """The seconds --junitxml adds to a session of n perf and n golden tests with the real tests' properties,
    and the file's size (MB)."""
    folder.mkdir(parents=True)
    (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (folder / "test_props.py").write_text(
        "import pytest\n"
        f"PROPS = {properties!r}\n"
        f"@pytest.mark.parametrize('kind', ['perf', 'golden'])\n"
        f"@pytest.mark.parametrize('i', range({n}))\n"
        "def test_scene(kind, i, request):\n"
        "    request.node.user_properties.extend(PROPS.get(kind, []))\n", encoding="utf-8")
    base = PYTEST + ["-q", "-p", "no:zbench"]
    plain = min(run_child(base, folder)[0] for _ in range(2))
    junit = min(run_child(base + ["--junitxml=junit.xml"], folder)[0] for _ in range(2))
    return max(junit - plain, 0.0), (folder / "junit.xml").stat().st_size / 1e6


def chromium_renders(report: Path, scratch: Path) -> str:
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        return "not checked (no chromium on PATH)"
    shot = scratch / "report.png"
    started = time.perf_counter()
    try:
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
                        "--window-size=1280,2000", f"file://{report}"], capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "NO: chromium did not finish within 120 s"
    took = time.perf_counter() - started
    return (f"yes: a {shot.stat().st_size / 1e3:.0f} kB screenshot in {took:.1f} s" if shot.is_file()
            and shot.stat().st_size > 0 else "NO: chromium wrote no screenshot")


def part_outputs(sizes: list[int], scratch: Path, template_results: Path | None) -> None:
    from pytest_zbench.files import write_json_atomic
    from pytest_zbench.host.report.html import write_report
    from pytest_zbench.host.report.terminal_table import summary_lines
    from pytest_zbench.host.run_record import corpus_sections, finite_document, validate_run

    source = template_results or real_results(scratch)
    template = json.loads((source / "run.json").read_text(encoding="utf-8"))
    properties = junit_properties(source / "junit.xml") if (source / "junit.xml").is_file() else {}
    results = scratch / "outputs"
    shutil.copytree(source, results, ignore=shutil.ignore_patterns("runs", "latest"), symlinks=True)
    figures: dict[str, list[float]] = {k: [] for k in ("terminal", "run", "run_mb", "report", "report_mb", "junit",
                                                       "junit_mb")}
    report = results / "report.html"
    for n in sizes:
        document = scaled_document(template, n)
        started = time.perf_counter()
        lines = summary_lines(document["scenes"], document["devices"], width=120)
        figures["terminal"].append(time.perf_counter() - started)
        assert len(lines) >= n
        started = time.perf_counter()
        document.update(corpus_sections(document["scenes"]))
        document, _ = finite_document(document)
        errors = validate_run(document)
        write_json_atomic(results / "run.json", document)
        figures["run"].append(time.perf_counter() - started)
        if errors:
            print(f"  run.json of {n} scenes breaks its schema: {errors[:3]}")
        figures["run_mb"].append((results / "run.json").stat().st_size / 1e6)
        started = time.perf_counter()
        write_report(document, results, report)
        figures["report"].append(time.perf_counter() - started)
        figures["report_mb"].append(report.stat().st_size / 1e6)
        junit_s, junit_mb = time_junit(scratch / f"junit{n}", n, properties)
        figures["junit"].append(junit_s), figures["junit_mb"].append(junit_mb)
    table = Table()
    table.add("terminal table", sizes, figures["terminal"], "s")
    table.add("run.json (sections, schema, write)", sizes, figures["run"], "s")
    table.add("  its size", sizes, figures["run_mb"], "MB")
    table.add("report.html", sizes, figures["report"], "s", 5.0)
    table.add("  its size", sizes, figures["report_mb"], "MB", 10.0)
    table.add("JUnit (what --junitxml adds)", sizes, figures["junit"], "s")
    table.add("  its size", sizes, figures["junit_mb"], "MB")
    table.print(f"outputs: scenes in the session (entries of {len(template['scenes'])} real scenes cycled)")
    print(f"report.html of {sizes[-1]} scenes opens in headless Chromium: {chromium_renders(report, scratch)}")


# --- histories -------------------------------------------------------------------------------------------------


def write_runs(history: History, scene_ids: list[str], first: int, count: int, *, launches: int = 3,
               batch: int = 100, seed: int = 0, first_row: int | None = None) -> int:
    """Runs first .. first+count-1 of one device (`session<r>-dev00`, one hour apart), each with every scene of
    `scene_ids`, written in bulk (one transaction per `batch` runs); the next free scene row id."""
    rng = np.random.default_rng(seed + first)
    levels = {s: 1.0 + 11.0 * (i % 17) / 17 for i, s in enumerate(scene_ids)}
    params = json.dumps({"n": 1}, sort_keys=True, separators=(",", ":"))
    params_hash = hash_params({"n": 1})
    environment = {"device": {"model": "model-0"}}
    fingerprint = environment_fingerprint(environment)
    row = first_row if first_row is not None else first * len(scene_ids) + 1
    for start in range(first, first + count, batch):
        run_rows, scene_rows, launch_rows = [], [], []
        for r in range(start, min(start + batch, first + count)):
            started = START + timedelta(hours=r)
            run_id = f"session{r:05d}-dev00"
            run_rows.append({"run_id": run_id, "started_utc": started.isoformat().replace("+00:00", "Z"),
                             "started_ts": started.timestamp(), "kind": "run", "build_hash": f"build-{r:05d}",
                             "dirty": False, "device": "dev00", "backend": "software", "fingerprint": fingerprint,
                             "environment": json.dumps(environment), "host": "lab"})
            for scene_id in scene_ids:
                scene_rows.append({"id": row, "run_id": run_id, "scene_id": scene_id, "params_hash": params_hash,
                                   "params": params, "mode": "paced", "gpu_source": None, "summary": None})
                launch_rows += [{"scene_row": row, "idx": i, "summary": json.dumps(launch(rng, levels[scene_id], 0.02)),
                                 "samples": None} for i in range(launches)]
                row += 1

        def body(conn: Any, run_rows: Any = run_rows, scene_rows: Any = scene_rows, launch_rows: Any = launch_rows) -> None:
            conn.execute(store.runs.insert(), run_rows)
            conn.execute(store.scenes.insert(), scene_rows)
            conn.execute(store.launches.insert(), launch_rows)

        history.store.write(body, f"writing runs from {start}")
    return row


# --- publish ---------------------------------------------------------------------------------------------------


PUBLISH_SCENES = 90


def archive_runs(results: Path, template: dict[str, Any], first: int, count: int) -> None:
    """Archived runs first+1 .. first+count (runs/NNNN/run.json and report.html) of the publish history: each
    run.json holds the 90 scenes' entries (the template's cycled), matched to the history's runs."""
    entries = template["scenes"]
    for r in range(first, first + count):
        folder = results / "runs" / f"{r + 1:04d}"
        folder.mkdir(parents=True)
        document = dict(template, run_id=f"session{r:05d}",
                        started_utc=(START + timedelta(hours=r)).isoformat().replace("+00:00", "Z"))
        scenes = []
        for s in range(PUBLISH_SCENES):
            entry = dict(entries[s % len(entries)])
            entry["id"] = f"scene.{s:03d}"
            entry["history"] = {**(entry.get("history") or {}), "run_id": f"session{r:05d}-dev00"}
            scenes.append(entry)
        document["scenes"] = scenes
        (folder / "run.json").write_text(json.dumps(document), encoding="utf-8")
        (folder / "report.html").write_text("<!doctype html><title>report</title>", encoding="utf-8")


def part_publish(sizes: list[int], scratch: Path, template_results: Path | None, jobs: int) -> None:
    from pytest_zbench.publish.build import publish

    source = template_results or (scratch / "real" / "results" if (scratch / "real" / "results").is_dir()
                                  else real_results(scratch))
    template = json.loads((source / "run.json").read_text(encoding="utf-8"))
    scene_ids = [f"scene.{s:03d}" for s in range(PUBLISH_SCENES)]
    full, again, incremental, archive_mb = [], [], [], []
    for n in sizes:
        folder = scratch / f"publish{n}"
        results = folder / "results"
        with History(folder / "history.sqlite") as history:
            row = write_runs(history, scene_ids, 0, n)
            archive_runs(results, template, 0, n)
            archive_mb.append(sum(p.stat().st_size for p in results.rglob("*") if p.is_file()) / 1e6)
            site = folder / "site"
            started = time.perf_counter()
            publish(history, site, results=[results], jobs=jobs)
            full.append(time.perf_counter() - started)
            started = time.perf_counter()
            publish(history, site, results=[results], jobs=jobs)
            again.append(time.perf_counter() - started)
            write_runs(history, scene_ids, n, 1, first_row=row)
            archive_runs(results, template, n, 1)
            started = time.perf_counter()
            published = publish(history, site, results=[results], jobs=jobs)
            incremental.append(time.perf_counter() - started)
            assert published.series == PUBLISH_SCENES
    table = Table()
    table.add("archive size (run.json files)", sizes, archive_mb, "MB")
    table.add("publish (a new site)", sizes, full, "s", 60.0)
    table.add("publish again, nothing new", sizes, again, "s")
    table.add("publish after one new run", sizes, incremental, "s", 5.0)
    table.print(f"publish: archived runs of {PUBLISH_SCENES} scenes (3 launches each, {jobs} worker(s))")


# --- history gate ----------------------------------------------------------------------------------------------


HISTORY_SCENES = [f"scene.{s:03d}" for s in range(10)]  # scene.000 is judged, the others fill the tables


def time_gate(history: History, repeats: int = 7) -> tuple[float, float]:
    """Median seconds of what perf_gate.PerfGate does for scene.000 of a new session: the other scenes' recent
    sessions (read once per session and device), then per scene the baseline and spread read, the two-level
    test and the series of the report."""
    from pytest_zbench.host.verdicts.perf_gate import HISTORY_SERIES_SESSIONS
    from pytest_zbench.regression.baseline import judge_against_history, read_device_sessions
    from pytest_zbench.regression.config import GateConfig

    key = next(k for k in history.scene_keys(device="dev00") if k.scene_id == HISTORY_SCENES[0])
    rng = np.random.default_rng(7)
    candidate = [launch(rng, 1.0, 0.02) for _ in range(3)]
    pools, scenes = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        pool = read_device_sessions(history, key, exclude_run="candidate-dev00")
        pools.append(time.perf_counter() - started)
        started = time.perf_counter()
        result = judge_against_history(history, key, candidate, GateConfig(), exclude_run="candidate-dev00",
                                       environment={"device": {"model": "model-0"}}, device_sessions=pool)
        history.runs_of(key, limit=HISTORY_SERIES_SESSIONS)
        scenes.append(time.perf_counter() - started)
        assert result.verdict is not None
    return statistics.median(scenes), statistics.median(pools)


def part_history(sizes: list[int], scratch: Path) -> None:
    table = Table()
    lite, lite_pool = [], []
    for n in sizes:
        with History(scratch / f"history{n}.sqlite") as history:
            write_runs(history, HISTORY_SCENES, 0, n, batch=500)
            scene_s, pool_s = time_gate(history)
            lite.append(scene_s), lite_pool.append(pool_s)
    table.add("gate per scene, SQLite", sizes, lite, "s", 0.1)
    table.add("  device's other scenes, once", sizes, lite_pool, "s")
    try:
        from pg_server import MissingPostgres, PostgresServer
        server = PostgresServer().start()
    except (ImportError, MissingPostgres, OSError) as exc:
        table.print(f"history gate: sessions of the judged scene (each with {len(HISTORY_SCENES) - 1} other scenes)")
        print(f"PostgreSQL not measured: {exc}")
        return
    try:
        pg, pg_pool = [], []
        for n in sizes:
            database = server.create_database()
            with History(server.url(database)) as history:
                write_runs(history, HISTORY_SCENES, 0, n, batch=500)
                # The planner's statistics, as autovacuum keeps them in a database filled over months: right
                # after a bulk insert it thinks the tables hold a row each and joins the runs and scenes of
                # the gate's queries by a nested loop over both (minutes at 10,000 sessions).
                server.execute("ANALYZE", database=database)
                scene_s, pool_s = time_gate(history)
                pg.append(scene_s), pg_pool.append(pool_s)
        table.add("gate per scene, PostgreSQL", sizes, pg, "s", 0.1)
        table.add("  device's other scenes, once", sizes, pg_pool, "s")
    finally:
        server.stop()
    table.print(f"history gate: sessions of the judged scene (each with {len(HISTORY_SCENES) - 1} other scenes)")


# --- main ------------------------------------------------------------------------------------------------------


PARTS = ("collection", "outputs", "publish", "history")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", action="append", choices=PARTS, help="what to measure (repeatable; default: all)")
    parser.add_argument("--quick", action="store_true", help="sizes a tenth as large (1, 10, 100 and alike)")
    parser.add_argument("--template", type=Path, help="a results folder (run.json, junit.xml) whose scene entries "
                                                      "are copied (default: a small session on local, run first)")
    parser.add_argument("--jobs", type=int, default=1, help="publish's worker processes (default: 1)")
    args = parser.parse_args()
    parts = args.part or list(PARTS)
    scale = 10 if args.quick else 1
    print(f"scale benches ({', '.join(parts)}): {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} "
          "at the start")
    with tempfile.TemporaryDirectory(prefix="zbench-scale-") as folder:
        scratch = Path(folder)
        ENV["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
        template = args.template.resolve() if args.template else None
        if "collection" in parts:
            part_collection([max(n // scale, 1) for n in (10, 100, 1000)], scratch)
        if "outputs" in parts:
            part_outputs([max(n // scale, 1) for n in (10, 100, 1000)], scratch, template)
        if "publish" in parts:
            part_publish([max(n // scale, 1) for n in (5, 50, 500)], scratch, template, args.jobs)
        if "history" in parts:
            part_history([max(n // scale, 1) for n in (100, 1000, 10000)], scratch)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
