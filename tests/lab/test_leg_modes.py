"""`ci.pytest_args` per leg mode (README, "The `ci` key"): a push leg does not get the pull request A/B's
--zbench-budget (before, one list went to every mode and the push leg exited 4, a usage error); a budget in the
every-mode list is refused when the inventory is read, naming the key and the fix."""

from __future__ import annotations

import pytest
import yaml

from pytest_zbench.inventory import InventoryError, load_inventory
from pytest_zbench.lab.leg import LegEnvironment, run_leg

PER_MODE = {"every": ["--zbench-quick", "-k", "no_scene_is_named_so"], "ab": ["--zbench-budget=3"],
            "history": ["--zbench-frames=7"]}


def inventory(tmp_path, pytest_args) -> object:
    path = tmp_path / "devices.yaml"
    path.write_text(yaml.safe_dump({"devices": {"box": {
        "transport": "local", "backend": "software", "runner": ["python", "-m", "pytest_zbench.runner"],
        "display": {"width": 160, "height": 120, "refresh_hz": 60},
        "ci": {"labels": ["ubuntu-latest"], "pytest_args": pytest_args}}}}))
    return path


def test_each_mode_gets_every_modes_args_then_its_own(tmp_path):
    ci = load_inventory(inventory(tmp_path, PER_MODE)).get("box").ci
    assert ci.args_for("history") == ("--zbench-quick", "-k", "no_scene_is_named_so", "--zbench-frames=7")
    assert ci.args_for("ab") == ("--zbench-quick", "-k", "no_scene_is_named_so", "--zbench-budget=3")
    assert ci.args_for("suite") == ("--zbench-quick", "-k", "no_scene_is_named_so")
    assert load_inventory(inventory(tmp_path, ["--zbench-quick"])).get("box").ci.args_for("ab") == ("--zbench-quick",)


@pytest.mark.parametrize("args, key, says", [
    (["--zbench-budget=30"], "ci.pytest_args", "--zbench-budget is for the ab leg only"),
    ({"every": ["--zbench-budget", "30"]}, "ci.pytest_args", "ci.pytest_args.ab"),
    ({"nightly": ["-x"]}, "ci.pytest_args.nightly", "allowed: every, ab, suite, history"),
    ({"ab": "--zbench-budget=3"}, "ci.pytest_args.ab", "expected a list of strings"),
])
def test_a_misplaced_or_malformed_entry_is_refused_naming_the_key(tmp_path, args, key, says):
    with pytest.raises(InventoryError) as exc:
        load_inventory(inventory(tmp_path, args))
    assert key in str(exc.value) and says in str(exc.value)


def test_a_push_leg_runs_without_the_ab_legs_budget(tmp_path, capsys, monkeypatch):
    path = inventory(tmp_path, PER_MODE)
    (tmp_path / "scenes").mkdir()
    monkeypatch.chdir(tmp_path)
    env = LegEnvironment(workspace=tmp_path, temp=tmp_path / "temp", event_name="push",
                         history_dir=tmp_path / "history")
    status = run_leg("box", inventory_path=path, env=env)
    printed = capsys.readouterr().out
    assert "zbench leg: history on box:" in printed and "--zbench-frames=7" in printed
    assert "--zbench-budget" not in printed
    assert status == 5, printed  # pytest: no test selected by the every-mode -k (a usage error was 4)
