#!/usr/bin/env bash
# Sets up the machine of one leg of the device matrix (.github/workflows/zbench.yml), for the device's
# transport: the system packages this host needs for it, and pytest-zbench installed from this checkout
# into a virtual environment kept between jobs in the runner's tool cache ($ZBENCH_VENV to choose another).
# Safe to run again; changes nothing that is already in place.
# * A self-hosted runner needs no root: the packages are only checked, and a missing one is an error that
#   names the apt-get command for the machine's administrator (unless passwordless sudo is available).
# * A GitHub-hosted runner installs what is missing with sudo.
# Usage: bash ci/zbench-setup.sh TRANSPORT      (local, ssh, adb or command: the device's `transport`)
set -euo pipefail
cd "$(dirname "$0")/.."
transport="${1:?usage: ci/zbench-setup.sh TRANSPORT (local, ssh, adb or command)}"

case "$transport" in
    # The reference runner here: the DejaVu font it draws text with, Mesa's EGL/GLES2 for its gles2 backend.
    local) packages=(fonts-dejavu-core libegl1 libegl-mesa0 libgles2 libgl1-mesa-dri) ;;
    adb) packages=(adb) ;;
    # The runner is on the device; the host needs only Python (asyncssh, or the lab's own scripts).
    ssh | command) packages=() ;;
    *) echo "ci/zbench-setup.sh: unknown transport '$transport' (local, ssh, adb, command)" >&2; exit 2 ;;
esac

missing=()
if [ ${#packages[@]} -gt 0 ] && command -v dpkg-query >/dev/null; then
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
fi
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        sudo=()
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo=(sudo -n)
    else
        echo "ci/zbench-setup.sh: this runner's machine lacks ${missing[*]} and this user cannot install" \
             "system packages; an administrator can, once: sudo apt-get install ${missing[*]}" >&2
        exit 1
    fi
    ${sudo[@]+"${sudo[@]}"} apt-get update -q
    ${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        "${missing[@]}"
fi

venv="${ZBENCH_VENV:-${RUNNER_TOOL_CACHE:-$HOME/.cache}/zbench-venv}"
if ! "$venv/bin/python" -c "" 2>/dev/null; then
    rm -rf "$venv"
    python3 -m venv "$venv" || {
        echo "ci/zbench-setup.sh: python3 cannot create a virtual environment here (Debian: apt-get install" \
             "python3-venv)" >&2
        exit 1
    }
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check -e ".[all]"
"$venv/bin/python" -m pytest_zbench.cli --help >/dev/null
if [ -n "${GITHUB_ENV:-}" ]; then
    echo "ZBENCH_PYTHON=$venv/bin/python" >>"$GITHUB_ENV"
    echo "$venv/bin" >>"$GITHUB_PATH"
fi
echo "pytest-zbench set up in $venv for a $transport device"
