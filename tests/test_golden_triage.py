"""Golden triage end to end: a failing golden accepted from the session's results folder passes the next session
without capturing again; the same image rejected fails at once with its reason. Real sessions, real PNGs."""

from __future__ import annotations

import json
import shutil
import zipfile

import numpy as np
import pytest
import yaml

from pytest_zbench.cli import main
from pytest_zbench.golden.store import GoldenError, GoldenStore, load_png, make_key, pixel_digest
from pytest_zbench.golden.triage import accept, load_triage, reject

ROUND = "goldens/software/x86_64/round.one"


def zbench(project, monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    monkeypatch.chdir(project.root)
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.acceptance
def test_accept_from_the_results_folder_passes_the_next_session_and_reject_fails_it(project, monkeypatch, capsys,
                                                                                    tmp_path):
    golden_run = ("--zbench-device=local", "-k", "golden and round", "--zbench-goldens-only")
    project.run(*golden_run, "--zbench-update-goldens=missing", goldens=True).assert_outcomes(passed=1)
    golden = project.root / ROUND / "frame-0.png"
    before = golden.read_bytes()
    project.write_scene("round.yaml", (project.root / "scenes/round.yaml").read_text().replace("#CC3366", "#CC3367"))

    junit = tmp_path / "junit.xml"
    failed = project.run(*golden_run, f"--junitxml={junit}", goldens=True)
    failed.assert_outcomes(failed=1)
    assert 'name="frame0_triage" value="untriaged"' in junit.read_text()
    frame = project.run_json()["scenes"][0]["correctness"]["frames"][0]
    assert frame["triage"] == "untriaged" and len(frame["digest"]) == 64
    assert frame["accept"] in failed.stdout.str()  # the failure prints the exact command
    run = project.run_json()["run_id"][:12]  # the session, whose captures the run archive keeps
    assert frame["accept"] == (f"zbench goldens accept {project.results} --run {run} --device local "
                               "--scene round.one --frame 0")
    report = (project.results / "report.html").read_text()
    # The exact commands, as run.json records them (html-escaped: the reject command's reason is quoted)
    assert frame["reject"] == frame["accept"].replace("accept", "reject", 1) + " --reason 'WHAT IS WRONG'"
    assert f"accept this image: <code>{frame['accept']}</code>" in report
    assert "reject it (say why in --reason): <code>zbench goldens reject " in report
    artifact = tmp_path / "ci-artifact"  # the session's folder as CI would upload it
    shutil.copytree(project.results, artifact)

    code, out, err = zbench(project, monkeypatch, capsys, "goldens", "accept", str(project.results),
                            "--scene", "round.one", "--frame", "0", "--device", "local")
    assert code == 0, err
    assert f"accepted: round.one frame 0 on local ({frame['digest'][:12]})" in out
    triage_file = project.root / ROUND / "triage.yaml"
    assert yaml.safe_load(triage_file.read_text()) == {"frame-0": {"accepted": [frame["digest"]]}}
    assert golden.read_bytes() == before  # the golden PNG stays the tolerance reference

    passed = project.run(*golden_run, goldens=True)
    passed.assert_outcomes(passed=1)
    again = project.run_json()["scenes"][0]["correctness"]["frames"][0]
    assert again["triage"] == "accepted" and again["digest"] == frame["digest"] and again["metrics"] is None

    code, out, err = zbench(project, monkeypatch, capsys, "goldens", "reject", str(artifact), "--scene",
                            "round.one", "--reason", "the pink is one level off")
    assert code == 0, err
    assert "rejected: round.one frame 0 on local" in out
    triage = yaml.safe_load(triage_file.read_text())  # moved from accepted to rejected
    assert list(triage) == ["frame-0"] and list(triage["frame-0"]) == ["rejected"]
    assert triage["frame-0"]["rejected"][frame["digest"]]["reason"] == "the pink is one level off"

    rejected = project.run(*golden_run, goldens=True)
    rejected.assert_outcomes(failed=1)
    rejected.stdout.fnmatch_lines(["*frame 0: a rejected image (digest*): the pink is one level off*"])
    assert project.run_json()["scenes"][0]["correctness"]["frames"][0]["triage"] == "rejected"
    assert "not written" not in rejected.stdout.str()  # report.html drew a failed frame that has no metrics
    assert "a rejected image" in (project.results / "report.html").read_text()


def test_accept_refuses_what_it_cannot_apply(project, monkeypatch, capsys, tmp_path):
    project.run("--zbench-device=local", "-k", "golden and round", "--zbench-goldens-only", goldens=True)
    document = project.run_json()
    assert document["scenes"][0]["correctness"]["frames"][0]["status"] == "missing"
    (project.root / "goldens").mkdir()

    code, _, err = zbench(project, monkeypatch, capsys, "goldens", "accept", str(project.results))
    assert code == 2 and "--scene ID" in err and "--all" in err
    code, _, err = zbench(project, monkeypatch, capsys, "goldens", "reject", str(project.results), "--all")
    assert code == 2 and "--reason" in err
    code, _, err = zbench(project, monkeypatch, capsys, "goldens", "accept", str(tmp_path), "--all")
    assert code == 2 and "no run.json" in err

    def rewritten(change) -> str:
        folder = tmp_path / f"results-{len(list(tmp_path.iterdir()))}"
        shutil.copytree(project.results, folder)
        doc = json.loads((folder / "run.json").read_text())
        change(doc["scenes"][0]["correctness"]["frames"][0], doc)
        (folder / "run.json").write_text(json.dumps(doc))
        return str(folder)

    # A capture path that leads out of the results folder is never followed.
    outside = rewritten(lambda f, d: f["artifacts"].update(actual="../../etc/passwd"))
    code, _, err = zbench(project, monkeypatch, capsys, "goldens", "accept", outside, "--all")
    assert code == 2 and "outside the results folder" in err
    # A scene id that would name a folder outside goldens/.
    escape = rewritten(lambda f, d: d["scenes"][0].update(id="../../x"))
    code, _, err = zbench(project, monkeypatch, capsys, "goldens", "accept", escape, "--all")
    assert code == 2 and "cannot name a golden folder" in err
    # Another device class than this project's inventory gives the device.
    other = rewritten(lambda f, d: (f.update(set="gles2/pi3b"),
                                    d["devices"]["local"]["gpu"].update(backend="gles2"),
                                    d["devices"]["local"]["device"].update(device_class="pi3b")))
    code, _, err = zbench(project, monkeypatch, capsys, "goldens", "accept", other, "--all")
    assert code == 2 and "another device class" in err and "gles2/pi3b" in err
    assert not any((project.root / "goldens").rglob("*"))  # nothing written by any refusal

    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zipped:
        zipped.writestr("../run.json", "{}")
    code, _, err = zbench(project, monkeypatch, capsys, "goldens", "accept", str(evil), "--all")
    assert code == 2 and "outside the folder it is unpacked into" in err

    # A CI artifact as GitHub serves it: a zip of the results folder's contents.
    artifact = shutil.make_archive(str(tmp_path / "zbench-local-1"), "zip", project.results)
    code, out, err = zbench(project, monkeypatch, capsys, "goldens", "accept", artifact, "--all")
    assert code == 0, err
    assert "golden written to" in out and (project.root / ROUND / "frame-0.png").is_file()


def test_triage_file_reviews_well_and_a_bad_one_names_itself(tmp_path):
    store = GoldenStore(tmp_path)
    key = make_key("software", "x86_64", "fill.one", 0)
    images = [np.full((4, 4, 4), value, np.uint8) for value in (10, 20, 30)]
    for image in images[:2]:
        accept(store, key, image)
    reject(store, make_key("software", "x86_64", "fill.one", 10), images[2], "wrong colour", date="2026-12-04")
    text = (tmp_path / "software/x86_64/fill.one/triage.yaml").read_text()
    digests = sorted(pixel_digest(image) for image in images[:2])
    body = [line for line in text.splitlines() if not line.startswith("#")]
    assert body == ["frame-0:", "  accepted:", f"  - {digests[0]}", f"  - {digests[1]}", "frame-10:",
                    "  rejected:", f"    {pixel_digest(images[2])}:", "      date: '2026-12-04'",
                    "      reason: wrong colour"]
    assert (tmp_path / "software/x86_64/fill.one/frame-0.png").is_file()  # the first accepted became the golden
    triage = load_triage(store, key)
    assert triage.frame(0).accepted == set(digests) and triage.frame(10).rejected[pixel_digest(images[2])].reason

    (tmp_path / "software/x86_64/fill.one/triage.yaml").write_text("frame-0:\n  accepted: [abc]\n")
    with pytest.raises(GoldenError, match=r"triage.yaml: frame-0.accepted: 'abc' is not a digest"):
        load_triage(store, key)


def test_a_rejected_image_accepted_later_passes_and_its_rejection_is_gone(tmp_path):
    """docs/goldens.md: accepting a rejected digest moves it to `accepted` (the reverse order is the acceptance
    test above). The rejection must not stay beside the acceptance: the check reads `rejected` first, so a digest
    left in both would still fail, and the file would be refused as both accepted and rejected."""
    from pytest_zbench.golden import check_capture

    store = GoldenStore(tmp_path)
    key = make_key("gles2", "pi3b", "fill.one", 0)
    golden, capture = np.full((4, 4, 4), 10, np.uint8), np.full((4, 4, 4), 200, np.uint8)
    accept(store, key, golden)  # the golden PNG: the capture is far outside any tolerance of it

    def check():
        return check_capture(store, backend="gles2", device_class="pi3b", scene_id="fill.one", frame=0,
                             capture=capture, perceptual=False)

    reject(store, key, capture, "the fill is the wrong colour", date="2026-12-04")
    rejected = check()
    assert (rejected.status, rejected.triage) == ("failed", "rejected")
    assert "the fill is the wrong colour" in rejected.message

    applied = accept(store, key, capture)
    assert applied.changed and applied.golden_written is None  # the golden PNG stays the tolerance reference
    digest = pixel_digest(capture)
    assert yaml.safe_load((tmp_path / "gles2/pi3b/fill.one/triage.yaml").read_text()) == {
        "frame-0": {"accepted": sorted([pixel_digest(golden), digest])}}  # no `rejected` left
    frame = load_triage(store, key).frame(0)
    assert digest in frame.accepted and digest not in frame.rejected
    accepted = check()
    assert (accepted.status, accepted.triage, accepted.digest) == ("passed", "accepted", digest)
    assert np.array_equal(load_png(tmp_path / "gles2/pi3b/fill.one/frame-0.png"), golden)


def test_ci_summary_lists_untriaged_images_with_their_command():
    from pytest_zbench.host.report.markdown_summary import render_summary

    frames = [{"frame": 0, "status": "failed", "triage": "untriaged"}, {"frame": 60, "status": "passed",
                                                                         "triage": None}]
    scene = {"id": "text.labels", "device": "pi3b", "outcome": "passed",
             "correctness": {"outcome": "failed", "frames": frames}}
    markdown = render_summary([{"scenes": [scene]}])
    assert "Untriaged images (1)" in markdown
    assert "`zbench goldens accept ARTIFACT --device pi3b --scene text.labels --frame 0`" in markdown
