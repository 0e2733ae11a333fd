"""A release an engine team can pin: the sdist and the wheel built from a tagged commit name the tag's version,
install into a fresh environment and run a session (ci/release.sh); the kit the wheel ships builds a runner that
passes check-runner, and a runner built on a kit of another protocol version is refused in one line."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
TAG_VERSION = "9.8.7"
# Nothing of this checkout's environment reaches the fresh one.
CLEAN_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "COVERAGE_PROCESS_START")}


def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=1500, **kwargs)


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A clone of this checkout's HEAD tagged v9.8.7, its release built and checked by ci/release.sh, the fresh
    environment kept."""
    work = tmp_path_factory.mktemp("release")
    clone = work / "clone"
    cloned = _run(["git", "clone", "-q", str(REPO), str(clone)])
    assert cloned.returncode == 0, cloned.stderr
    tagged = _run(["git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@t", "tag", "-a", f"v{TAG_VERSION}",
                   "-m", "release"])
    assert tagged.returncode == 0, tagged.stderr
    venv = work / "venv"
    built = _run(["bash", "ci/release.sh", str(work / "dist"), "--keep-venv", str(venv)], cwd=clone)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return {"clone": clone, "dist": work / "dist", "venv": venv, "work": work, "log": Path(built.stdout)}


@pytest.mark.acceptance
def test_the_release_files_are_named_by_the_tag_and_the_installed_wheel_says_it(release):
    names = sorted(p.name for p in release["dist"].iterdir())
    assert names == [f"pytest_zbench-{TAG_VERSION}-py3-none-any.whl", f"pytest_zbench-{TAG_VERSION}.tar.gz"]
    said = _run([str(release["venv"] / "bin" / "zbench"), "--version"], env=CLEAN_ENV, cwd=release["work"])
    assert said.stdout.strip() == f"zbench {TAG_VERSION} (pytest-zbench; runner protocol 1)"
    plugins = _run([str(release["venv"] / "bin" / "pytest"), "-VV"], env=CLEAN_ENV, cwd=release["work"])
    assert f"pytest-zbench-{TAG_VERSION} at {release['venv']}" in plugins.stdout + plugins.stderr


def _installed_kit(venv: Path) -> Path:
    shown = _run([str(venv / "bin" / "zbench"), "kit", "--path"], env=CLEAN_ENV)
    assert shown.returncode == 0, shown.stderr
    kit = Path(shown.stdout.strip())
    assert kit.is_relative_to(venv) and (kit / "kit.mk").is_file()
    return kit


def _build_runner(clone: Path, kit: Path, out: Path) -> Path:
    made = _run(["make", "-s", "-C", str(clone / "native"), f"KIT_MK={kit / 'kit.mk'}", f"OUT={out}"])
    assert made.returncode == 0, made.stderr[-3000:]
    return out / "zbench-gles2"


def _inventory(path: Path, runner: Path) -> Path:
    path.write_text(f"""devices:
  engine:
    transport: local
    backend: gles2
    device_class: native-llvmpipe
    runner: [{runner}]
    env: {{ZBENCH_GPU_TIMER: finish_bracket}}
    display: {{width: 800, height: 480, refresh_hz: 60}}
""")
    return path


@pytest.mark.acceptance
def test_a_runner_built_on_the_installed_kit_passes_check_runner(release):
    kit = _installed_kit(release["venv"])
    runner = _build_runner(release["clone"], kit, release["work"] / "engine")
    inventory = _inventory(release["work"] / "devices.yaml", runner)
    clone = release["clone"]
    checked = _run([str(release["venv"] / "bin" / "zbench"), "check-runner", "--device", "engine",
                    "--devices", str(inventory), "--scenes", str(clone / "scenes"), "--goldens",
                    str(clone / "goldens"), "--features", "rect,clip"], env=CLEAN_ENV, cwd=release["work"])
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
    assert re.search(r"^\s*pass\s+probe\.protocol\s", checked.stdout, re.MULTILINE), checked.stdout[-2000:]


@pytest.mark.acceptance
def test_a_runner_built_on_a_kit_of_another_protocol_is_refused_in_one_line(release):
    kit = release["work"] / "kit2"
    shutil.copytree(_installed_kit(release["venv"]), kit)
    header = kit / "zbench_kit.h"
    header.write_text(re.sub(r"#define ZK_PROTOCOL 1\b", "#define ZK_PROTOCOL 2", header.read_text()))
    shown = _run([str(release["venv"] / "bin" / "zbench"), "kit", "--protocol"], env=CLEAN_ENV)
    assert shown.stdout.strip() == "1"
    runner = _build_runner(release["clone"], kit, release["work"] / "engine2")
    inventory = _inventory(release["work"] / "devices2.yaml", runner)
    listed = _run([str(release["venv"] / "bin" / "zbench"), "devices", "--devices", str(inventory)],
                  env=CLEAN_ENV, cwd=release["work"])
    refusals = [line for line in (listed.stdout + listed.stderr).splitlines() if "protocol 2" in line]
    assert len(refusals) == 1 and "this host speaks 1" in refusals[0], listed.stdout + listed.stderr


def test_the_changelogs_unreleased_entry_names_the_schemas_this_tree_speaks():
    """An engine team matches a release to its runner and history by these lines: they must not lag the code."""
    from pytest_zbench.protocol.vocabulary import PROTOCOL_VERSION
    from pytest_zbench.regression.store import SCHEMA_VERSION

    text = (Path(__file__).resolve().parents[2] / "CHANGELOG.md").read_text()
    unreleased = text.split("## Unreleased", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"Runner protocol (\d+) · run.json schema (\d+) · history schema (\d+)", unreleased)
    assert found is not None, unreleased[:200]
    assert (int(found.group(1)), int(found.group(3))) == (PROTOCOL_VERSION, SCHEMA_VERSION)
