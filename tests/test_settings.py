"""Settings: command line > ini > default, --zbench-quick, validation naming the flag, paths and deadlines."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pytest

from pytest_zbench.errors import UsageError
from pytest_zbench.settings import OPTIONS, Option, Settings, build_settings, running_in_ci

ROOT = Path("/project/root")


def getter(cli: dict[str, Any] | None = None, ini: dict[str, Any] | None = None):
    """What the plugin's get() does: the command-line value, else the ini value (a string), else None."""
    cli, ini = cli or {}, ini or {}

    def get(option: Option) -> Any:
        if cli.get(option.name) is not None:
            return cli[option.name]
        return ini.get(option.name)

    return get


def build(cli=None, ini=None, *, quick=False, root=ROOT) -> Settings:
    return build_settings(getter(cli, ini), root, quick=quick)


def option(name: str) -> Option:
    return next(o for o in OPTIONS if o.name == name)


# ---------------------------------------------------------------------------------------- defaults


def test_defaults_follow_the_seed():
    s = build()
    assert (s.warmup, s.frames, s.runs, s.mode) == (60, 600, 5, "paced")
    assert s.devices == ("local",)
    assert s.inventory == ROOT / "devices.yaml"
    assert s.scenes_dir == ROOT / "scenes"
    assert s.results == ROOT / "zbench-results"
    assert s.timeout_s is None and s.seed == 1 and s.quick is False


def test_empty_strings_mean_unset():
    assert build(ini={o.name: "" for o in OPTIONS}) == build()


def test_options_are_declared_once_and_match_settings():
    names = [o.name for o in OPTIONS]
    assert len(set(names)) == len(names)
    assert len({o.flag for o in OPTIONS}) == len(OPTIONS)
    assert len({o.ini for o in OPTIONS}) == len(OPTIONS)
    fields = {f.name for f in dataclasses.fields(Settings)}
    assert set(names) <= fields
    for o in OPTIONS:
        assert o.flag.startswith("--zbench-") and o.ini.startswith("zbench_") and o.help


def test_settings_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        build().runs = 3  # type: ignore[misc]


# -------------------------------------------------------------------------------------- precedence


@pytest.mark.parametrize("name,cli,ini,default,want", [
    ("runs", "7", "3", 5, 7),
    ("frames", "120", "300", 600, 120),
    ("warmup", "0", "10", 60, 0),
    ("mode", "uncapped", "paced", "paced", "uncapped"),
    ("seed", "42", "9", 1, 42),
    ("timeout_s", "30", "90", None, 30.0),
])
def test_cli_beats_ini_beats_default(name, cli, ini, default, want):
    assert getattr(build(), name) == default
    assert getattr(build(ini={name: ini}), name) == option(name).parse(ini)
    assert getattr(build(cli={name: cli}, ini={name: ini}), name) == want


def test_values_already_typed_are_taken_as_they_are():
    s = build(cli={"runs": 3, "frames": 10, "timeout_s": 2.5})
    assert (s.runs, s.frames, s.timeout_s) == (3, 10, 2.5)


def test_whitespace_around_numbers():
    assert build(ini={"runs": " 4 "}).runs == 4


def test_devices_list():
    assert build(cli={"devices": "pi3b, nexus7 ,local"}).devices == ("pi3b", "nexus7", "local")
    assert build(ini={"devices": "pi3b,"}).devices == ("pi3b",)
    assert build(cli={"devices": "mac"}, ini={"devices": "pi3b"}).devices == ("mac",)


# ------------------------------------------------------------------------------------------- quick


def test_quick_gives_a_short_run():
    s = build(quick=True)
    assert (s.runs, s.warmup, s.frames) == (2, 5, 30)
    assert s.quick is True
    assert s.mode == "paced"  # quick changes lengths only


@pytest.mark.parametrize("source", ["cli", "ini"])
def test_quick_yields_to_explicit_values(source):
    given = {"runs": "4", "frames": "100"}
    s = build(**{source: given}, quick=True)
    assert (s.runs, s.frames) == (4, 100)
    assert s.warmup == 5  # not given: quick still applies


def test_quick_values_are_validated_with_explicit_ones():
    with pytest.raises(UsageError, match="--zbench-runs"):
        build(cli={"runs": "0"}, quick=True)


# -------------------------------------------------------------------------------------- validation


@pytest.mark.parametrize("name,value,flag", [
    ("runs", "0", "--zbench-runs"),
    ("runs", "-2", "--zbench-runs"),
    ("runs", "two", "--zbench-runs"),
    ("runs", "2.5", "--zbench-runs"),
    ("frames", "0", "--zbench-frames"),
    ("frames", "1.5", "--zbench-frames"),
    ("frames", "600f", "--zbench-frames"),
    ("warmup", "-1", "--zbench-warmup"),
    ("warmup", "x", "--zbench-warmup"),
    ("mode", "vsync", "--zbench-mode"),
    ("mode", "Paced", "--zbench-mode"),
    ("timeout_s", "-1", "--zbench-timeout"),
    ("timeout_s", "0", "--zbench-timeout"),
    ("timeout_s", "soon", "--zbench-timeout"),
    ("timeout_s", "nan", "--zbench-timeout"),
    ("timeout_s", "inf", "--zbench-timeout"),
    ("seed", "0x1", "--zbench-seed"),
    ("devices", "pi3b,pi3b", "--zbench-device"),
    ("devices", "pi3b, local ,pi3b", "--zbench-device"),
    ("devices", ",", "--zbench-device"),
    ("devices", " , ,", "--zbench-device"),
])
@pytest.mark.parametrize("source", ["cli", "ini"])
def test_invalid_values_name_the_flag(name, value, flag, source):
    with pytest.raises(UsageError) as exc:
        build(**{source: {name: value}})
    assert flag in str(exc.value)
    assert not isinstance(exc.value, ValueError)


def test_parse_error_also_names_the_ini_key_and_value():
    with pytest.raises(UsageError) as exc:
        build(ini={"frames": "lots"})
    assert "zbench_frames" in str(exc.value) and "'lots'" in str(exc.value)


def test_duplicate_device_message_lists_the_devices():
    with pytest.raises(UsageError, match="pi3b,local,pi3b"):
        build(cli={"devices": "pi3b,local,pi3b"})


# ------------------------------------------------------------------------------------------- paths


@pytest.mark.parametrize("name", ["inventory", "scenes_dir", "results"])
def test_relative_paths_resolve_against_the_root(name, tmp_path):
    (tmp_path / "sub" / "dir").mkdir(parents=True)  # a named scenes folder must exist
    s = build(ini={name: "sub/dir"}, root=tmp_path)
    assert getattr(s, name) == tmp_path / "sub" / "dir"
    assert getattr(s, name).is_absolute()


@pytest.mark.parametrize("name", ["inventory", "scenes_dir", "results"])
def test_absolute_paths_are_kept(name, tmp_path):
    target = tmp_path / "elsewhere" / "x"
    target.mkdir(parents=True)
    s = build(cli={name: str(target)}, root=Path("/other/root"))
    assert getattr(s, name) == target


def test_home_is_expanded(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    s = build(ini={"inventory": "~/lab/devices.yaml"})
    assert s.inventory == tmp_path / "lab" / "devices.yaml"


# -------------------------------------------------------------------------------------- deadlines


def test_launch_timeout_computed_from_frames():
    s = build(cli={"warmup": "60", "frames": "600"})
    assert s.launch_timeout(60.0, None) == pytest.approx(60.0 + 20.0 * 660 / 60.0)
    assert s.launch_timeout(30.0, None) == pytest.approx(60.0 + 20.0 * 660 / 30.0)  # slower display, longer
    quick = build(quick=True)
    assert quick.launch_timeout(60.0, None) < s.launch_timeout(60.0, None)


def test_launch_timeout_device_beats_computed():
    assert build().launch_timeout(60.0, 45.0) == 45.0


def test_launch_timeout_option_beats_device():
    s = build(cli={"timeout_s": "12.5"})
    assert s.launch_timeout(60.0, 45.0) == 12.5
    assert s.launch_timeout(60.0, None) == 12.5


def test_launch_timeout_is_finite_and_positive():
    s = build()
    for hz in (1.0, 24.0, 60.0, 144.0):
        t = s.launch_timeout(hz, None)
        assert math.isfinite(t) and t > 60.0


# ------------------------------------------------------------------- folders known to be wrong at configure time


def test_a_results_folder_that_is_a_file_is_a_usage_error(tmp_path):
    (tmp_path / "results").write_text("not a folder")
    with pytest.raises(UsageError, match=r"--zbench-results.*is a file"):
        build({"results": "results"}, root=tmp_path)
    with pytest.raises(UsageError, match=r"cannot be created: .*results is a file"):
        build({"results": "results/inner"}, root=tmp_path)


def test_a_results_folder_that_does_not_exist_yet_is_fine_and_not_created(tmp_path):
    assert build({"results": "new/results"}, root=tmp_path).results == tmp_path / "new" / "results"
    assert not (tmp_path / "new").exists()


def test_a_named_scenes_folder_must_exist(tmp_path):
    with pytest.raises(UsageError, match=r"--zbench-scenes.*missing-scenes is not a folder"):
        build({"scenes_dir": "missing-scenes"}, root=tmp_path)
    with pytest.raises(UsageError, match="zbench_scenes"):
        build(ini={"scenes_dir": "missing-scenes"}, root=tmp_path)
    assert build(root=tmp_path).scenes_dir == tmp_path / "scenes"  # the default may be missing


def test_the_probe_deadline_follows_an_explicit_launch_deadline():
    assert build().probe_timeout(None, 120.0) == 120.0
    assert build().probe_timeout(30.0, 120.0) == 30.0
    assert build({"timeout_s": "2"}).probe_timeout(30.0, 120.0) == 2.0


# -------------------------------------------------------------------------------------- CI


def test_ci_is_the_ci_variable_set_to_true():
    assert running_in_ci({"CI": "true"}) and running_in_ci({"CI": "TRUE "})
    assert not running_in_ci({}) and not running_in_ci({"CI": "false"}) and not running_in_ci({"CI": ""})
    assert build().ci is False
    assert build_settings(getter(), ROOT, quick=False, ci=True).ci is True


def test_the_sequential_gate_budget_needs_ab_and_a_max_of_at_least_four():
    settings = build({"budget_min": "2.5", "ab": "python -m x", "max_launches": "8"})
    assert settings.budget_min == 2.5 and settings.max_launches == 8
    assert build().budget_min is None and build().max_launches == 14
    with pytest.raises(UsageError, match="--zbench-budget.*--zbench-ab"):
        build({"budget_min": "2"})
    with pytest.raises(UsageError, match="--zbench-budget: -1"):
        build({"budget_min": "-1", "ab": "python -m x"})
    with pytest.raises(UsageError, match="--zbench-max-launches: 3 must be at least 4"):
        build({"budget_min": "2", "ab": "python -m x", "max_launches": "3"})


def test_runs_given_under_the_budget_is_a_usage_error_not_ignored():
    """The sequential gate decides how many launches a side gets; --zbench-runs was accepted and ignored."""
    with pytest.raises(UsageError, match=r"--zbench-runs=22 is not used under --zbench-budget.*--zbench-max-launches"):
        build({"budget_min": "2", "ab": "python -m x", "runs": "22"})
    assert build({"budget_min": "2", "ab": "python -m x"}, quick=True).budget_min == 2  # quick's own runs: fine
