"""`zbench publish`: the site of a history (docs/report.md, "Published site").

* From a synthetic history written through History.record (SQLite and PostgreSQL): the series, the change point
  of a scene made 30 % slower halfway and its open regression, the other scenes quiet; the gate's verdicts read
  back from archived run.json files and linked to their report.html; the folder a publish refuses to replace.
* In headless Chromium (acceptance): the pages load with no console error, the chart is drawn (plotly marks the
  page), and its screenshot shows the series in its colour with the change point's line where the series steps.
* From real pytest sessions of the `local` device (acceptance): four sessions of one build, four of a build
  burning 2 ms more CPU per frame (four a side: the fewest in which the change-point test can find a step at
  p < 0.05), then `zbench publish` on their history and results folder.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from synthetic_history import write_history

from pytest_zbench.cli import main
from pytest_zbench.publish.build import PublishError, publish
from pytest_zbench.publish.run_cache import CACHE_FILE as RUN_CACHE
from pytest_zbench.publish.run_cache import RunCache
from pytest_zbench.publish.site import COLOURS, SITE_MARKER
from pytest_zbench.regression.history import History

STEP = 1.3  # the slowed scene: 30 % slower from run 6 of 12


def scene_data(site: Path, device: str, scene: str) -> dict:
    (path,) = (site / "scenes" / f"{device}-software").glob(f"{scene}-*.data.js")
    text = path.read_text()
    assert text.startswith("window.ZBENCH_SCENE = ") and text.endswith(";\n")
    return json.loads(text[len("window.ZBENCH_SCENE = "):-2])


@pytest.fixture
def stepped_history(history_url):
    with History(history_url) as history:
        write_history(history, devices=2, scenes=3, runs=12, steps={(0, 1): (6, STEP)}, seed=3)
        yield history


def test_the_site_shows_each_series_with_the_step_and_its_open_regression(stepped_history, tmp_path):
    site = tmp_path / "site"
    published = publish(stepped_history, site)
    assert published.series == 6 and published.open_regressions == 1

    slowed = scene_data(site, "dev00", "scene.001")
    assert len(slowed["runs"]["median"]) == 12
    assert [c["index"] for c in slowed["change_points"]] == [6]
    assert slowed["change_points"][0]["magnitude"] == pytest.approx(STEP, rel=0.05)
    assert slowed["change_points"][0]["build"] == "build-0006"
    assert slowed["open_regression"].startswith("step x1.")
    # Each run's interval is its launches' range, around their median.
    runs = slowed["runs"]
    assert all(lo <= m <= hi for lo, m, hi in zip(runs["low"], runs["median"], runs["high"]))
    assert all(n == 3 for n in runs["launches"])
    # The stretches' levels are the two builds' speeds.
    before, after = slowed["segments"]
    assert after["median"] / before["median"] == pytest.approx(STEP, rel=0.05)
    for device, scene in [("dev00", "scene.000"), ("dev00", "scene.002"), ("dev01", "scene.001")]:
        quiet = scene_data(site, device, scene)
        assert quiet["change_points"] == [] and quiet["open_regression"] is None, (device, scene)

    index = (site / "index.html").read_text()
    assert "Open regressions (1)" in index and "scene.001" in index
    assert (site / "devices" / "dev00-software.html").is_file()
    # plotly.js once, referenced by every scene page: the pages stay small.
    assert (site / "assets" / "plotly.min.js").stat().st_size > 1_000_000
    pages = list((site / "scenes").rglob("*.html"))
    assert len(pages) == 6
    for page in pages:
        text = page.read_text()
        assert '<script src="../../assets/plotly.min.js"></script>' in text and len(text) < 10_000


def test_the_gate_verdicts_come_from_archived_run_json_with_a_link_to_their_report(stepped_history, tmp_path):
    results = tmp_path / "results"
    archived = results / "runs" / "0001"
    archived.mkdir(parents=True)
    (archived / "report.html").write_text("<html>run 7</html>")
    entry = {"id": "scene.001", "device": "dev00", "history": {"run_id": "session0007-dev00", "recorded": True},
             "regression": {"verdict": "regressed", "source": "history", "baseline": "", "message": "",
                            "metrics": [{"metric": "cpu_ms.p50", "verdict": "regressed", "effect": 1.31,
                                         "ci": [1.2, 1.4]},
                                        {"metric": "cpu_ms.p90", "verdict": "same", "effect": 1.01, "ci": None}]}}
    unrelated = {"id": "scene.000", "device": "dev00", "history": {"run_id": "session0007-dev00"}, "regression": None}
    (archived / "run.json").write_text(json.dumps({"scenes": [entry, unrelated]}))
    broken = results / "runs" / "0002"
    broken.mkdir()
    (broken / "run.json").write_text("{not json")

    site = tmp_path / "site"
    published = publish(stepped_history, site, results=[results])
    assert len(published.notes) == 1 and "0002/run.json: not read" in published.notes[0]
    slowed = scene_data(site, "dev00", "scene.001")
    (verdict,) = slowed["verdicts"]
    assert verdict["index"] == 7 and verdict["verdict"] == "regressed"
    assert verdict["describe"] == "regressed x1.310 [1.200, 1.400] (cpu_ms.p50)"
    page_folder = next((site / "scenes" / "dev00-software").glob("scene.001-*.html")).parent
    assert (page_folder / verdict["report"]).resolve() == (archived / "report.html").resolve()
    assert scene_data(site, "dev00", "scene.000")["verdicts"] == []
    device_page = (site / "devices" / "dev00-software.html").read_text()
    assert "regressed x1.310 [1.200, 1.400] (cpu_ms.p50) (run #7)" in device_page

    # Published again: the site kept what it read of each run.json (publish/run_cache.py). A file rewritten
    # since is read anew, never taken from the cache; the unreadable one is still a note, not an entry.
    cache = json.loads((site / RUN_CACHE).read_text())
    assert [Path(p).name for p in cache["files"]] == ["run.json"]
    entry["regression"]["metrics"][0].update(verdict="improved", effect=0.72, ci=[0.6, 0.8])
    entry["regression"]["verdict"] = "improved"
    (archived / "run.json").write_text(json.dumps({"scenes": [entry, unrelated], "note": "rewritten"}))
    republished = publish(stepped_history, site, results=[results])
    assert len(republished.notes) == 1
    (verdict,) = scene_data(site, "dev00", "scene.001")["verdicts"]
    assert verdict["verdict"] == "improved" and verdict["describe"].startswith("improved x0.720")


def test_a_verdict_of_regressed_opens_a_regression_the_series_alone_does_not_show(tmp_path):
    from pytest_zbench.publish.series import open_regression
    from pytest_zbench.publish.verdicts import ArchivedVerdict

    regressed = ArchivedVerdict("regressed", "cpu_ms.p50", 1.2, None, None, tmp_path / "run.json")
    same = ArchivedVerdict("same", "cpu_ms.p50", 1.0, None, None, tmp_path / "run.json")
    assert "run #4" in (open_regression("cpu_ms.p50", [], None, {2: same, 4: regressed}, 5, 0.15) or "")
    assert open_regression("cpu_ms.p50", [], None, {2: regressed, 4: same}, 5, 0.15) is None


def test_the_gates_verdict_on_the_newest_run_decides_over_the_sites_own_rules(tmp_path):
    """Before: after a 9x spike at run 5, run 6 (back at run 0's level) was `inconclusive` by the gate while
    the site called it an open regression: the newest run outside the spread of the runs before it."""
    from pytest_zbench.publish.series import open_regression
    from pytest_zbench.publish.verdicts import ArchivedVerdict
    from pytest_zbench.regression.changepoints import ChangePoint, LatestOutlier

    inconclusive = ArchivedVerdict("inconclusive", "cpu_ms.p50", 0.91, (0.069, 12.05), None, tmp_path / "run.json")
    outlier = LatestOutlier(ratio=1.402, z=4.0, earlier=6)
    assert "outside their spread" in (open_regression("cpu_ms.p50", [], outlier, {}, 7, 0.15) or "")
    assert open_regression("cpu_ms.p50", [], outlier, {6: inconclusive}, 7, 0.15) is None
    step = ChangePoint(index=3, magnitude=1.5, p_value=0.001)
    assert open_regression("cpu_ms.p50", [step], None, {6: inconclusive}, 7, 0.15) is None
    # a verdict on an older run leaves the newer runs to the series' rules
    assert "outside their spread" in (open_regression("cpu_ms.p50", [], outlier, {5: inconclusive}, 7, 0.15) or "")


def test_worker_processes_publish_the_same_site(tmp_path):
    with History(tmp_path / "history.sqlite") as history:
        write_history(history, devices=2, scenes=20, runs=12, steps={(1, 7): (5, STEP)}, seed=4)
        alone = publish(history, tmp_path / "alone")
        pooled = publish(history, tmp_path / "pooled", jobs=2)
    assert alone.series == pooled.series == 40 and alone.open_regressions == pooled.open_regressions == 1
    for data in (tmp_path / "alone" / "scenes").rglob("*.data.js"):
        assert data.read_text() == (tmp_path / "pooled" / data.relative_to(tmp_path / "alone")).read_text()
    assert scene_data(tmp_path / "pooled", "dev01", "scene.007")["change_points"][0]["index"] == 5


def test_file_names_stay_in_their_folder_and_apart():
    from pytest_zbench.publish.site import slug

    assert slug("scene.001") == "scene.001"
    names = {slug(text) for text in ("a/b", "a_b", "a:b", "..", "../../etc", "")}
    assert len(names) == 6 and all("/" not in n and not n.startswith(".") for n in names)


def test_without_plotly_the_command_says_what_to_install(tmp_path, monkeypatch, capsys):
    with History(tmp_path / "h.sqlite") as history:
        write_history(history, devices=1, scenes=1, runs=2)
    monkeypatch.setitem(sys.modules, "plotly", None)  # an environment without the package
    assert main(["publish", "--history", str(tmp_path / "h.sqlite"), "--out", str(tmp_path / "s")]) == 1
    assert "pip install 'plotly>=5.20'" in capsys.readouterr().err
    assert not (tmp_path / "s").exists() and not list(tmp_path.glob(".s.*"))


def test_an_empty_history_publishes_an_index_saying_so(tmp_path):
    with History(tmp_path / "history.sqlite") as history:
        published = publish(history, tmp_path / "site")
    assert published.series == 0 and "Open regressions (0)" in (tmp_path / "site" / "index.html").read_text()


def test_publish_replaces_its_own_site_and_nothing_else(stepped_history, tmp_path):
    site = tmp_path / "site"
    publish(stepped_history, site)
    stale = site / "scenes" / "dev00-software" / "gone.html"
    stale.write_text("a series no longer in the history")
    publish(stepped_history, site, device="dev01")
    assert (site / SITE_MARKER).is_file() and not stale.exists() and not (site / "devices" / "dev00-software.html").exists()
    assert not list(tmp_path.glob(".site.*"))  # no staging folder left behind

    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(PublishError, match="holds files that no `zbench publish` wrote"):
        publish(stepped_history, other)
    assert (other / "notes.txt").read_text() == "keep me"


def test_the_command_reports_bad_input(tmp_path, capsys):
    assert main(["publish", "--history", str(tmp_path / "none.sqlite"), "--out", str(tmp_path / "s")]) == 2
    assert "no history database at" in capsys.readouterr().err
    with History(tmp_path / "h.sqlite") as history:
        write_history(history, devices=1, scenes=1, runs=2)
    assert main(["publish", "--history", str(tmp_path / "h.sqlite"), "--out", str(tmp_path / "s"),
                 "--results", str(tmp_path / "missing")]) == 2
    assert "missing: no such folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["publish", "--history", str(tmp_path / "h.sqlite"), "--metric", "cpu_ms.p51"])
    assert "unknown metric 'cpu_ms.p51'" in capsys.readouterr().err
    assert main(["publish", "--history", str(tmp_path / "h.sqlite"), "--out", str(tmp_path / "s")]) == 0
    assert re.search(r"published 1 series \(0 open regression\(s\)\) to .*index.html: \d+ files",
                     capsys.readouterr().out)


# -- in a real browser ---------------------------------------------------------------------------------------

def _rgb(hex_colour: str) -> np.ndarray:
    return np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)])


def colour_mask(png: Path, hex_colour: str, tolerance: int = 24) -> np.ndarray:
    pixels = np.asarray(Image.open(png).convert("RGB")).astype(int)
    return (np.abs(pixels - _rgb(hex_colour)).max(axis=2) <= tolerance)


def check_chart(png: Path, *, stepped: bool) -> None:
    """The screenshot shows the series in its colour and, when `stepped`, the change point's dashed line: a
    column of its colour with the series below (faster) on its left and above (slower) on its right."""
    series = colour_mask(png, COLOURS["series"])
    assert series.sum() > 500, "the series' colour is not on the page"
    change = colour_mask(png, COLOURS["change"], tolerance=16)
    columns = change.sum(axis=0)
    if not stepped:
        assert columns.max() < 60, "a change-point line on a series without one"
        return
    line = int(np.argmax(columns))
    assert columns[line] > 100, "no change-point line in the chart"
    rows, cols = np.nonzero(series)
    left, right = rows[cols < line - 20], rows[cols > line + 20]
    assert left.size > 100 and right.size > 100
    assert np.median(right) < np.median(left) - 20  # screen y grows downwards: slower is higher


def check_page(page: Path, tmp_path: Path, name: str, *, stepped: bool | None = None) -> str:
    """The page loads with nothing on the console; a scene page (`stepped` given) draws its chart. The DOM."""
    from browser import load, screenshot

    loaded = load(page, tmp_path / f"profile-{name}")
    assert loaded.console == [], f"{page.name}: console messages {loaded.console}"
    if stepped is None:
        return loaded.dom
    assert 'data-plotted="yes"' in loaded.dom and "main-svg" in loaded.dom
    check_chart(screenshot(page, tmp_path / f"{name}.png", tmp_path / f"profile-{name}-shot", height=1100),
                stepped=stepped)
    return loaded.dom


@pytest.mark.acceptance
def test_the_site_loads_in_headless_chromium_and_draws_the_step(tmp_path):
    with History(tmp_path / "history.sqlite") as history:
        write_history(history, devices=2, scenes=3, runs=12, steps={(0, 1): (6, STEP)}, seed=3)
        publish(history, tmp_path / "site")
    site = tmp_path / "site"
    index = check_page(site / "index.html", tmp_path, "index")
    assert index.count('class="filter"') == 2  # tables.js ran: a filter box above each table
    check_page(site / "devices" / "dev00-software.html", tmp_path, "device")
    scenes = site / "scenes" / "dev00-software"
    check_page(next(scenes.glob("scene.001-*.html")), tmp_path, "stepped", stepped=True)
    check_page(next(scenes.glob("scene.000-*.html")), tmp_path, "flat", stepped=False)


# -- from real sessions ----------------------------------------------------------------------------------------

SESSION = ["--zbench-runs=2", "--zbench-frames=10", "--zbench-warmup=2", "--zbench-mode=uncapped", "-k", "mini.fill.x1"]


def write_inventory(project, burn_ms: float) -> None:
    burn = f", --cpu-burn-ms, '{burn_ms}'" if burn_ms else ""
    (project.root / "devices.yaml").write_text(
        "devices:\n  local:\n    transport: local\n    backend: software\n"
        f"    runner: [python, -m, pytest_zbench.runner{burn}]\n"
        "    display: {width: 64, height: 48, refresh_hz: 60}\n")


@pytest.mark.acceptance
def test_publish_from_real_sessions_shows_the_build_that_made_a_scene_slower(project, tmp_path, monkeypatch, capsys):
    history = tmp_path / "history.sqlite"
    for session in range(8):
        slower = session >= 4
        monkeypatch.setenv("ZBENCH_BUILD_HASH", ("b" if slower else "a") * 40)
        write_inventory(project, 2.0 if slower else 0.0)
        result = project.run(*SESSION, f"--zbench-history={history}")
        assert result.ret in (0, 1), result.stdout.str()[-2000:]

    site = tmp_path / "site"
    capsys.readouterr()
    assert main(["publish", "--history", str(history), "--out", str(site), "--results", str(project.results)]) == 0
    assert "published 1 series" in capsys.readouterr().out
    data = scene_data(site, "local", "mini.fill.x1")
    assert len(data["runs"]["median"]) == 8
    # The build names the runner's argv beside ZBENCH_BUILD_HASH (host/verdicts/perf_gate.py runner_identity).
    assert [c["index"] for c in data["change_points"]] == [4] and data["change_points"][0]["build"].startswith("b" * 40)
    assert data["open_regression"] is not None
    # Every session was gated and archived: its verdict is on its run, the first slower one regressed.
    verdicts = {v["index"]: v for v in data["verdicts"]}
    assert sorted(verdicts) == list(range(8))
    assert verdicts[0]["verdict"] == "no_baseline" and verdicts[4]["verdict"] == "regressed"
    page = next((site / "scenes" / "local-software").glob("mini.fill.x1-*.html"))
    assert (page.parent / verdicts[4]["report"]).resolve() == (project.results / "runs" / "0005" / "report.html").resolve()
    check_page(page, tmp_path, "real", stepped=True)


def test_the_run_cache_gives_an_extract_only_while_its_file_is_unchanged(tmp_path):
    run = tmp_path / "run.json"
    run.write_text('{"scenes": []}')
    cache = RunCache()
    cache.put(run, "verdicts", [["r", "s", "same", None, None, None]])
    assert cache.get(run, "verdicts") == [["r", "s", "same", None, None, None]] and cache.get(run, "engines") is None
    site = tmp_path / "site"
    site.mkdir()
    cache.put(tmp_path / "gone.json", "verdicts", [])  # a file that is not there is not kept
    cache.save(site)
    kept = RunCache.load(site)
    assert kept.get(run, "verdicts") == [["r", "s", "same", None, None, None]]
    run.write_text('{"scenes": [], "x": 1}')  # rewritten: another size
    assert kept.get(run, "verdicts") is None
    document = json.loads((site / RUN_CACHE).read_text())
    (site / RUN_CACHE).write_text(json.dumps({**document, "version": "0.0.0-another"}))
    assert RunCache.load(site).entries == {}  # another version's extracts are not trusted
    (site / RUN_CACHE).write_text("{torn")
    assert RunCache.load(site).entries == {}
