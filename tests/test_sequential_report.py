"""The sequential gate's looks where people read them: the report's scene section (loaded in headless Chromium)
and the JUnit properties (docs/regression.md, "The sequential gate"). The looks come from a real SceneSequence:
its levels are the ones alpha spending gives, not numbers typed here. End to end (run.json, the report and
JUnit of a real session under a budget): tests/regression/test_sequential_gate_session.py."""

from __future__ import annotations

import json

from browser import load

from pytest_zbench.host.junit import sequential_properties
from pytest_zbench.host.report.html import write_report
from pytest_zbench.host.report.sequential_looks import summary_line, trail
from pytest_zbench.regression.sequential import Look, SceneSequence

# Run in the report's folder next to it: what the browser laid out of the scene's looks.
PROBE = """<!doctype html><meta charset=utf-8><iframe id=r src="report.html" width=1300 height=900></iframe>
<pre id=found></pre><script>
document.getElementById('r').addEventListener('load', () => {
  const d = document.getElementById('r').contentDocument;
  const rows = [...d.querySelectorAll('section table.looks tr.look')];
  document.getElementById('found').textContent = JSON.stringify({
    line: (d.querySelector('section p.sequential') || {}).textContent,
    rows: rows.map(r => [...r.cells].map(c => c.textContent)),
    visible: rows.filter(r => r.getBoundingClientRect().height > 0).length,
    note: !!d.querySelector('section p.note-levels'),
  });
});
</script>"""


def sequence(verdicts: tuple[str, ...], stopped: str) -> SceneSequence:
    """A scene's looks every 2 launches per side from 4, at the levels the sequence itself gives them."""
    seq = SceneSequence(max_launches=12, alpha=0.01, budget_min=5.0)
    for index, verdict in enumerate(verdicts):
        n = 4 + 2 * index
        seq.looks.append(Look(index=index, launches_a=n, launches_b=n, fraction=n / 12, nominal_alpha=seq.level(n),
                              verdict=verdict, effect=1.25 + 0.01 * index, elapsed_s=3.0 * (index + 1)))
    seq.stopped = stopped  # type: ignore[assignment]
    return seq


def test_the_report_shows_each_look_of_the_sequential_gate_in_a_real_browser(tmp_path):
    looks = sequence(("inconclusive", "inconclusive", "regressed"), "decided").to_json()
    assert [look["nominal_alpha"] for look in looks["looks"]][:2] == [0.0, 0.0]  # below 1/70 and 1/924
    document = {"run_id": "r", "started_utc": "t", "app": {}, "gpu": {}, "display": {}, "device": {"id": "d"},
                "scenes": [{"id": "slow", "device": "d", "runs": 8, "outcome": "failed", "sequential": looks},
                           {"id": "fixed", "device": "d", "runs": 10, "outcome": "passed"}]}
    write_report(document, tmp_path, tmp_path / "report.html")
    (tmp_path / "probe.html").write_text(PROBE)
    loaded = load(tmp_path / "probe.html", tmp_path / "profile")
    assert loaded.console == []
    found = json.loads(loaded.dom.split("<pre id=\"found\">", 1)[1].split("</pre>", 1)[0])
    assert found["line"].startswith("sequential gate: decided regressed at look 3 (8 + 8 launches, at most 12 per "
                                    "side), level ")
    assert "alpha 0.01, 0.005 per direction" in found["line"] and "budget 5.0 min" in found["line"]
    assert [row[:3] for row in found["rows"]] == [["1", "4 + 4", "0.33"], ["2", "6 + 6", "0.50"],
                                                  ["3", "8 + 8", "0.67"]]
    assert [row[4] for row in found["rows"]] == ["inconclusive", "inconclusive", "regressed"]
    assert [row[3] for row in found["rows"]][:2] == ["0", "0"]
    assert float(found["rows"][2][3]) == float(f"{looks['looks'][2]['nominal_alpha']:.2g}") > 0
    assert found["rows"][2][5] == "1.270x" and found["visible"] == 3 and found["note"]
    # the scene measured with a fixed launch count has no such block
    assert (tmp_path / "report.html").read_text().count("<div class=sequential>") == 1


def test_a_scene_stopped_before_its_first_look_says_so():
    line = summary_line(sequence((), "budget").to_json())
    assert line.startswith("sequential gate: the device session's budget ran out before its first look (0 + 0")


def test_the_junit_properties_carry_why_it_stopped_and_every_look():
    looks = sequence(("inconclusive", "inconclusive", "inconclusive", "same"), "decided").to_json()
    props = dict(sequential_properties(looks))
    assert props["sequential_stopped"] == "decided" and props["sequential_looks"] == 4
    assert props["sequential_launches_a"] == props["sequential_launches_b"] == 10
    assert props["sequential_final_level"] == looks["looks"][-1]["nominal_alpha"] > 0
    assert props["sequential_trail"] == trail(looks)
    assert props["sequential_trail"].startswith("4+4 inconclusive @0; 6+6 inconclusive @0; 8+8 inconclusive @")
    assert props["sequential_trail"].split("; ")[-1].startswith("10+10 same @")
    assert props["sequential_alpha_per_direction"] == 0.005
