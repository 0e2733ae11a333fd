# shellcheck shell=bash
# Sourced by ci/test.sh, ci/acceptance.sh and ci/coverage.sh: the checkout as the working folder, the virtual
# environment ci/setup.sh made first on PATH (python3, pytest, zbench and the linters are its), and `run`.
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
# Bytecode is cached (__pycache__ is ignored by git): pytest rewrites the asserts of every module of an
# installed plugin at each session's start, and without the cache each of the suite's several hundred pytest
# sessions re-parsed the whole package: 11.7 s against 7.1 s for a one-scene session.
unset PYTHONDONTWRITEBYTECODE
if [ -x .venv/bin/python ]; then
    export VIRTUAL_ENV="$PWD/.venv"
    export PATH="$VIRTUAL_ENV/bin:$PATH"
fi
echo "python: $(command -v python3) ($(python3 -c 'import sys; print(sys.version.split()[0])'))"

# Runs a command and stops the script with its status when it fails; pytest's "no tests collected" (5) fails.
run() {
    echo "+ $*"
    "$@"
    local rc=$?
    if [ $rc -eq 5 ]; then
        echo "error: no tests were collected by: $*" >&2
        exit 1
    fi
    [ $rc -eq 0 ] || exit $rc
}
