"""Command-line options and ini keys, and the settings built from them at configure time.

`pytest_configure` builds the one Settings object and registers the session object (plugin/zbench_plugin.py) with
pytest's plugin manager, as pytest's own junitxml registers LogXML: its hooks run only in a session that was
configured, so none of them asks whether the plugin is active.

Installed into an environment, the plugin stays out of every other project's way: it registers its options
and markers and does nothing else (no inventory read, no collection hook) unless the project asks for it
(`asked_for`): a `--zbench-*` option, a `zbench_*` ini key, or a scene folder with scene files. A plain test
that uses a zbench fixture activates it then (`activate`).
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import UsageError
from ..regression.location import is_url
from ..settings import BASELINE_KEYWORDS, OPTIONS, Option, build_settings, running_in_ci
from .stash import SESSION_KEY

if TYPE_CHECKING:
    from .stash import ActiveZbench

# Options whose command-line value is a path: relative to the directory pytest was started in (an ini value
# is relative to the rootdir, in build_settings).
PATH_OPTIONS = ("inventory", "scenes_dir", "goldens_dir", "results", "history", "lease_dir")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("zbench", "render benchmarks and golden images (pytest-zbench)")
    if not _xdist_installed():
        # `-n 2` (README's own commands use it) without pytest-xdist: one line naming the extra at configure
        # time instead of pytest's "unrecognized arguments: -n". Registered only where xdist is absent, through
        # the group's _addoption as xdist registers it (pytest reserves lowercase short options otherwise).
        group._addoption("-n", "--numprocesses", dest="zbench_numprocesses_without_xdist", default=None,
                         help=argparse.SUPPRESS)
    for option in OPTIONS:
        group.addoption(option.flag, dest=_dest(option), default=None, metavar=option.name.upper(), help=option.help)
        parser.addini(option.ini, help=option.help, default=None)
    group.addoption(
        "--zbench-quick", action="store_true", default=False,
        help="a first look: 2 launches of 5 warmup + 30 measured frames unless given explicitly (default: off)",
    )
    parser.addini("zbench_quick", type="bool", default=False, help="like --zbench-quick (default: false)")
    group.addoption(
        "--zbench-first-look", action="store_true", default=False,
        help="a first look at the whole corpus in about 2 minutes: one scene per family (the first that is not "
             "adaptive or sustained), 1 launch of 5 warmup + 20 measured frames unless given explicitly, the "
             "others deselected; ends with an estimate of the whole suite under --zbench-quick (default: off)",
    )
    parser.addini("zbench_first_look", type="bool", default=False, help="like --zbench-first-look (default: false)")
    group.addoption(
        "--zbench-goldens-only", action="store_true", default=False,
        help="golden tests only: one launch of 0 warmup + 1 measured frame (then the capture frames) unless "
             "given explicitly, perf tests deselected, nothing recorded in the history (default: off)",
    )
    parser.addini("zbench_goldens_only", type="bool", default=False,
                  help="like --zbench-goldens-only (default: false)")
    group.addoption(
        "--zbench-calibrate", action="store_true", default=False,
        help="record the launches as A/A calibration runs in the history and gate nothing; `zbench calibrate` "
             "passes it (default: off)",
    )
    group.addoption(
        "--zbench-check-runner", action="store_true", default=False,
        help="before measuring, run the runner conformance checks (zbench check-runner) once per device; a "
             "failing check stops the session (default: off)",
    )
    group.addoption(
        "--zbench-update-goldens", nargs="?", const="missing", default=None, metavar="missing|failed|all",
        help="write goldens from trusted captures: missing ones (the value when none is given), failing ones "
             "too, or all (default: no writing)",
    )


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def _dest(option: Option) -> str:
    return "zbench_" + option.name


# The flags that are not Settings options (they are read in `activate`).
FLAG_DESTS = ("zbench_quick", "zbench_first_look", "zbench_calibrate", "zbench_check_runner", "zbench_update_goldens",
              "zbench_goldens_only")


def _xdist_installed() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("xdist") is not None
    except ImportError:
        return False


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("zbench_numprocesses_without_xdist", None) is not None:
        raise pytest.UsageError("-n spreads tests over processes with pytest-xdist, which is not installed: "
                                "pip install 'pytest-zbench[xdist]' (or leave -n out)")
    config.addinivalue_line("markers", "zbench_scene(scene_id): the scene the `scene` fixture gives a plain test")
    config.addinivalue_line("markers", "zbench_device(name): the device the `device` fixture gives a plain test")
    config.addinivalue_line("markers", "zbench_perf: a perf test generated from a scene file")
    config.addinivalue_line("markers", "zbench_golden: a golden-image test generated from a scene file")
    if asked_for(config) is None:
        config.pluginmanager.register(DormantZbench(config), "zbench-dormant")
        return
    activate(config)


def asked_for(config: pytest.Config) -> str | None:
    """What makes this session a zbench session (for messages), or None: the plugin then stays dormant."""
    for option in OPTIONS:
        if config.getoption(_dest(option)) is not None:
            return option.flag
        if config.getini(option.ini) not in (None, ""):
            return f"ini {option.ini}"
    for dest in FLAG_DESTS:
        if config.getoption(dest) not in (None, False):
            return "--" + dest.replace("_", "-")
    if config.getini("zbench_quick"):
        return "ini zbench_quick"
    if config.getini("zbench_first_look"):
        return "ini zbench_first_look"
    if config.getini("zbench_goldens_only"):
        return "ini zbench_goldens_only"
    from .collection import SCENE_SUFFIXES

    scenes = config.rootpath / next(o.default for o in OPTIONS if o.name == "scenes_dir")  # `scenes` at the rootdir
    if scenes.is_dir() and any(p.suffix in SCENE_SUFFIXES for p in scenes.iterdir()):
        return f"scene folder {scenes}"
    return None


def activate(config: pytest.Config) -> ActiveZbench:
    """The session object, built and registered on first use: settings (a bad value is a usage error), the
    inventory, the collection and reporting hooks."""
    plugin = config.stash.get(SESSION_KEY, None)
    if plugin is not None:
        return plugin

    def get(option: Option) -> Any:
        value = config.getoption(_dest(option))
        if value is None and option.env:
            value = os.environ.get(option.env) or None  # between the command line and the ini
        if value is not None:
            if option.name == "history" and is_url(str(value)):
                return value  # a database URL, not a path
            if option.name in PATH_OPTIONS or (option.name == "baseline" and value not in BASELINE_KEYWORDS):
                value = str(config.invocation_params.dir / value)
            return value
        return config.getini(option.ini)

    from .zbench_plugin import ZbenchPlugin

    quick = bool(config.getoption("zbench_quick") or config.getini("zbench_quick"))
    try:
        settings = build_settings(get, config.rootpath, quick=quick,
                                  update_goldens=config.getoption("zbench_update_goldens"),
                                  calibrate=bool(config.getoption("zbench_calibrate")),
                                  check_runner=bool(config.getoption("zbench_check_runner")),
                                  ci=running_in_ci(os.environ),
                                  goldens_only=bool(config.getoption("zbench_goldens_only")
                                                    or config.getini("zbench_goldens_only")),
                                  first_look=bool(config.getoption("zbench_first_look")
                                                  or config.getini("zbench_first_look")))
        plugin = ZbenchPlugin(config, settings)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[SESSION_KEY] = plugin
    config.pluginmanager.register(plugin, "zbench-session")
    if settings.keep_runs > 0:
        from ..run_archive import RunArchive, archive_refusal

        # Decided in every process (xdist workers too): a worker's golden failures say whether the commands
        # they print will find the session's captures in the archive once a later session has run.
        refused = archive_refusal(settings.results, config.rootpath,
                                  (settings.goldens_dir, settings.scenes_dir, settings.inventory,
                                   *((settings.history.path,) if settings.history.path is not None else ())))
        plugin.archive_off = refused
        if plugin.is_worker:  # the archive, and its warning, belong to the process that writes run.json
            pass
        elif refused is None:
            config.pluginmanager.register(RunArchive(settings.results, settings.keep_runs), "zbench-run-archive")
        else:
            config.issue_config_time_warning(pytest.PytestConfigWarning(
                f"zbench: no run archive: {refused}; give --zbench-results a folder of its own, or "
                "--zbench-keep-runs=0"), stacklevel=2)
    else:
        plugin.archive_off = "--zbench-keep-runs=0"
    from ..lab.github import running_in_actions

    if running_in_actions() and not plugin.is_worker:
        from .terminal import GithubAnnotations

        config.pluginmanager.register(GithubAnnotations(), "zbench-github-annotations")
    return plugin


def pytest_unconfigure(config: pytest.Config) -> None:
    plugin = config.stash.get(SESSION_KEY, None)
    if plugin is not None:  # None: dormant, or configuring failed with a usage error
        plugin.close()
        del config.stash[SESSION_KEY]
        config.pluginmanager.unregister(plugin)


class DormantZbench:
    """Registered instead of ZbenchPlugin in a session that did not ask for zbench (`asked_for`). Its one
    hook: on an xdist controller, a worker whose plain tests used a zbench fixture (and so activated the
    plugin there) sends its part of run.json; the controller activates then to merge and write it. It lives
    here, beside `activate`, so that the session object's module never imports this one."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        from .xdist import OUTPUT_KEY, merge_worker_output

        if SESSION_KEY in self.config.stash or not getattr(node, "workeroutput", {}).get(OUTPUT_KEY):
            return  # active already (its own hook merges), or nothing to merge
        merge_worker_output(node, activate(self.config).open_host().record)
