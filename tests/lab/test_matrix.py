"""`zbench matrix`: one leg per device with a `ci` key, selected by device and label, as JSON for fromJSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pytest_zbench.cli import main
from pytest_zbench.errors import UsageError
from pytest_zbench.inventory import load_inventory
from pytest_zbench.lab.matrix import find_inventory, matrix_json, plan

REPO = Path(__file__).resolve().parents[2]


def write_inventory(folder: Path, devices: dict) -> Path:
    path = folder / "devices.yaml"
    path.write_text(yaml.safe_dump({"devices": devices}, sort_keys=False), encoding="utf-8")
    return path


LAB = {
    "local": {"transport": "local", "ci": {"labels": ["ubuntu-latest"], "timeout_minutes": 20}},
    "bench-only": {"transport": "local"},
    "pi3b": {"transport": "ssh", "host": "pi3b.lan", "user": "pi", "backend": "gles2",
             "ci": {"labels": ["self-hosted", "zbench", "pi3b"], "timeout_minutes": 90}},
    "nexus7": {"transport": "adb", "serial": "015d", "ci": {"labels": ["self-hosted", "zbench", "nexus7"]}},
}


def run_matrix(*args: str) -> tuple[int, dict, str]:
    done = subprocess.run([sys.executable, "-m", "pytest_zbench.cli", "matrix", *args], capture_output=True,
                          text=True, timeout=120, cwd=REPO, check=False)
    return done.returncode, json.loads(done.stdout) if done.returncode == 0 else {}, done.stderr


def test_shipped_inventory_gives_one_leg_per_device_with_ci_and_hosted_local_legs():
    status, matrix, _ = run_matrix()
    assert status == 0
    legs = {leg["device"]: leg for leg in matrix["include"]}
    with_ci = [name for name, spec in load_inventory(REPO / "devices.yaml").devices.items() if spec.ci]
    assert list(legs) == with_ci and {"local", "local-gles2", "pi3b", "nexus7"} <= set(legs)
    for name in ("local", "local-gles2"):
        assert legs[name]["labels"] == ["ubuntu-latest"] and legs[name]["hosted"] is True
    pi = legs["pi3b"]
    assert pi == {"device": "pi3b", "labels": ["self-hosted", "zbench", "pi3b"], "timeout_minutes": 90,
                  "hosted": False, "transport": "ssh", "backend": "gles2", "keyword": "", "check_name": "zbench pi3b"}
    assert len({leg["check_name"] for leg in legs.values()}) == len(legs)


def test_selection_by_device_label_hosted_and_keyword(tmp_path):
    inventory = load_inventory(write_inventory(tmp_path, LAB))
    assert [leg.device for leg in plan(inventory)] == ["local", "pi3b", "nexus7"]
    assert [leg.device for leg in plan(inventory, devices=["nexus7", "local", "nexus7"])] == ["nexus7", "local"]
    assert [leg.device for leg in plan(inventory, labels=["self-hosted", "zbench"])] == ["pi3b", "nexus7"]
    assert [leg.device for leg in plan(inventory, labels=["pi3b"])] == ["pi3b"]
    assert [leg.device for leg in plan(inventory, hosted_only=True)] == ["local"]
    legs = plan(inventory, devices=["pi3b"], keyword="fill and not x4")
    assert json.loads(matrix_json(legs))["include"][0]["keyword"] == "fill and not x4"
    assert json.loads(matrix_json(legs))["include"][0]["timeout_minutes"] == 90
    assert json.loads(matrix_json(plan(inventory, devices=["nexus7"])))["include"][0]["timeout_minutes"] == 60
    assert "\n" not in matrix_json(plan(inventory))


@pytest.mark.parametrize("kwargs,words", [
    ({"devices": ["bench-only"]}, ["'bench-only'", "no 'ci' key"]),
    ({"devices": ["nope"]}, ["unknown device 'nope'"]),
    ({"labels": ["gpu-farm"]}, ["labels gpu-farm", "local, pi3b, nexus7"]),
    ({"devices": ["pi3b"], "hosted_only": True}, ["devices pi3b and hosted runners only"]),
])
def test_a_selection_that_matches_nothing_says_why(tmp_path, kwargs, words):
    inventory = load_inventory(write_inventory(tmp_path, LAB))
    with pytest.raises(UsageError) as exc:
        plan(inventory, **kwargs)
    for word in words:
        assert word in str(exc.value)


def test_github_output_gets_the_matrix_and_the_leg_count(tmp_path, monkeypatch, capsys):
    inventory = write_inventory(tmp_path, LAB)
    output = tmp_path / "github_output"
    output.write_text("earlier=1\n")
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    assert main(["matrix", "--devices", str(inventory), "--device", "local,pi3b", "--github-output"]) == 0
    printed = capsys.readouterr().out.strip()
    lines = output.read_text().splitlines()
    assert lines[0] == "earlier=1" and lines[1] == f"matrix={printed}" and lines[2] == "legs=2"
    assert [leg["device"] for leg in json.loads(printed)["include"]] == ["local", "pi3b"]


def test_an_inventory_without_ci_keys_is_an_empty_matrix(tmp_path, monkeypatch, capsys):
    inventory = write_inventory(tmp_path, {"local": {"transport": "local"}})
    output = tmp_path / "github_output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    assert main(["matrix", "--devices", str(inventory), "--github-output"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"include": []} and "no device of" in captured.err
    assert output.read_text().splitlines() == ['matrix={"include":[]}', "legs=0"]


def test_usage_errors(tmp_path, monkeypatch, capsys):
    inventory = write_inventory(tmp_path, LAB)
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    assert main(["matrix", "--devices", str(inventory), "--github-output"]) == 2
    assert "$GITHUB_OUTPUT is not set" in capsys.readouterr().err
    (tmp_path / "bad.yaml").write_text("devices: {x: {transport: local, ci: {labels: []}}}")
    assert main(["matrix", "--devices", str(tmp_path / "bad.yaml")]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "'x'" in err and "'ci.labels'" in err


def test_default_inventory_is_found_from_the_current_folder(tmp_path, monkeypatch, capsys):
    inventory = write_inventory(tmp_path, LAB)
    (tmp_path / "scenes" / "deep").mkdir(parents=True)
    assert find_inventory(tmp_path / "scenes" / "deep") == inventory
    monkeypatch.chdir(tmp_path / "scenes")
    assert main(["matrix", "--label", "nexus7"]) == 0
    assert [leg["device"] for leg in json.loads(capsys.readouterr().out)["include"]] == ["nexus7"]
    monkeypatch.chdir(tmp_path.parent)
    if find_inventory(tmp_path.parent) is None:
        assert main(["matrix"]) == 2
        assert "no devices.yaml" in capsys.readouterr().err
