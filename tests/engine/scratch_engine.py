"""A scratch engine repository for the bisect tests: eight commits of a runner, the reference runner behind
a small script whose job is changed by the engine's engine.json as a real engine's code would change what it
draws. One commit makes a scene slower (its repeated op drawn `grow` times as often, over the same pixels), a later one changes a pixel
of another scene (a rect's colour). Plain Python, no pytest."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.engine.runner_build import reference_probe

RUNNER = '''\
#!{python}
"""The engine's runner: the reference runner drawing the job as engine.json says."""
import json, os, sys, tempfile
HERE = os.path.dirname(os.path.abspath(__file__))
def read(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return f.read()
RUNNER = [sys.executable, "-m", "pytest_zbench.runner"]
if sys.argv[1:] == ["probe"]:
    probe = json.loads(read("probe.json"))
    probe["build"] = {{"id": read("BUILD_ID").strip(), "dirty": False, "describe": None}}
    print(json.dumps(probe), flush=True)
    sys.exit(0)
if len(sys.argv) == 4 and sys.argv[1] == "run":
    engine = json.loads(read("engine.json"))
    if engine.get("sleep"):  # a launch that takes long, to stop a bisect while a session waits on it
        import time
        time.sleep(engine["sleep"])
    with open(sys.argv[2], encoding="utf-8") as f:
        job = json.load(f)
    scene = job["scene"]
    grow = engine.get("grow", {{}}).get(scene["id"])
    if grow:  # the scene's repeated op drawn `grow` times as often: real drawing work, so on-CPU time grows
        scene["ops"][0] = dict(scene["ops"][0], count=round(scene["ops"][0]["count"] * grow))
    colour = engine.get("recolor", {{}}).get(scene["id"])
    if colour:
        scene["ops"] = [dict(op, color=colour) if i == 0 else op for i, op in enumerate(scene["ops"])]
    fd, path = tempfile.mkstemp(suffix=".json", dir=os.path.dirname(os.path.abspath(sys.argv[2])))
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(job, f)
    sys.argv[2] = path
os.execv(sys.executable, RUNNER + sys.argv[1:])
'''

BUILD = '''\
"""Builds out/: the runner, its engine.json, its build identity; fails when engine.json says so."""
import json, os, shutil, stat, subprocess, sys
engine = json.load(open("engine.json"))
if engine.get("broken"):
    sys.exit("engine.json: this commit does not build")
shutil.rmtree("out", ignore_errors=True)
os.makedirs("out")
shutil.copy("runner.py", "out/zbench-runner")
os.chmod("out/zbench-runner", 0o755)
shutil.copy("engine.json", "out/engine.json")
shutil.copy("probe.json", "out/probe.json")
# The build names its commit as an engine's build does: bisect says which (ZBENCH_COMMIT), else git.
commit = os.environ.get("ZBENCH_COMMIT") or subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True,
                                                           text=True).stdout.strip()
open("out/BUILD_ID", "w").write((commit or "unknown") + "\\n")
'''


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def make_engine_repo(repo: Path, python: str, steps: list[tuple[str, dict]],
                     suite: dict[str, str] | None = None) -> list[str]:
    """A repository whose commits set engine.json to each step's dict, in order; their shas. `suite`: files
    (path: text) committed with the first step, as an engine repository keeps its scenes and inventory."""
    repo.mkdir(parents=True)
    for name, text in (suite or {}).items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "engine@example.com")
    git(repo, "config", "user.name", "Engine")
    (repo / "runner.py").write_text(RUNNER.format(python=python), encoding="utf-8")
    (repo / "build.py").write_text(BUILD, encoding="utf-8")
    (repo / "probe.json").write_text(reference_probe(), encoding="utf-8")
    (repo / ".gitignore").write_text("out/\n")
    shas = []
    for subject, engine in steps:
        (repo / "engine.json").write_text(json.dumps(engine, indent=1) + "\n", encoding="utf-8")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", subject)
        shas.append(git(repo, "rev-parse", "HEAD"))
    return shas
