#!/usr/bin/env bash
# Builds the release files and checks them as a user would get them: the sdist and the wheel (python -m build,
# the version from the git tag: pyproject.toml [tool.setuptools_scm]) into DIST (default dist/), `twine check`
# on both, then the wheel installed into a fresh virtual environment, nothing of this checkout's, where
# `zbench --version`, `zbench kit` and a pytest session of one scene on `local` must run and name the wheel's
# version. .github/workflows/release.yml runs it on every push (a tag publishes the files); the release test
# (tests/release/) runs it in a tagged clone.
#
#   bash ci/release.sh [DIST] [--keep-venv DIR]     DIR: where the fresh environment is made, and left
set -euo pipefail
# shellcheck source=ci/env.sh
source "$(dirname "$0")/env.sh"

dist=dist
venv=""
while [ $# -gt 0 ]; do
    case $1 in
        --keep-venv) venv=$2; shift 2 ;;
        *) dist=$1; shift ;;
    esac
done
dist=$(realpath -m "$dist")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -n "$venv" ] || venv="$work/venv"

rm -rf "$dist"
python3 -m build --sdist --wheel --outdir "$dist" . > "$work/build.log" 2>&1 || { tail -30 "$work/build.log" >&2; exit 1; }
python3 -m twine check --strict "$dist"/*
wheels=("$dist"/*.whl)
wheel=${wheels[0]}
version=$(basename "$wheel" | cut -d- -f2)
echo "release: built $(basename "$wheel") and its sdist (version $version)"
# The listing is read whole before it is searched: `unzip -l | grep -q` under pipefail fails at random when grep
# stops reading at the first match and unzip, still writing, dies of SIGPIPE.
listing=$(unzip -Z1 "$wheel")
grep -qx "pytest_zbench/kit/zbench_kit.h" <<< "$listing" || { echo "release: the wheel lacks the C kit" >&2; exit 1; }

# The fresh environment: the system's Python (ci/setup.sh's choice), nothing of this checkout on any path.
python="${ZBENCH_PYTHON:-/usr/bin/python3}"
[ -x "$python" ] || python=python3
"$python" -m venv "$venv"
env -u PYTHONPATH -u VIRTUAL_ENV -u COVERAGE_PROCESS_START \
    "$venv/bin/pip" install -q --disable-pip-version-check "$wheel"
cd "$work"   # not the checkout: its pytest_zbench/ folder must not be imported
said=$("$venv/bin/zbench" --version)
echo "release: $said"
case "$said" in "zbench $version "*) ;; *) echo "release: zbench --version does not name $version" >&2; exit 1 ;; esac
"$venv/bin/zbench" kit
mkdir -p project/scenes
cat > project/scenes/one.yaml <<'SCENE'
family: one
scenes:
  - id: one.a
    ops: [{op: rect, x: 1, y: 1, w: "100% - 2", h: "100% - 2", color: "#3366CC"}]
SCENE
(cd project && env -u PYTHONPATH -u VIRTUAL_ENV -u COVERAGE_PROCESS_START \
    "$venv/bin/pytest" --zbench-quick --zbench-update-goldens=missing -p no:cacheprovider -q)
recorded=$("$venv/bin/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["suite_version"])' \
           project/zbench-results/run.json)
[ "$recorded" = "$version" ] || { echo "release: run.json suite_version $recorded, not $version" >&2; exit 1; }
echo "release: $version checked (sdist and wheel in $dist)"
