#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine for pytest-zbench: the system parts the tests start for real
# (Mesa EGL/GLES2, OpenSSH server, adb, the PostgreSQL server of the shared-history tests, the DejaVu font
# the reference runner draws text with; shellcheck, which actionlint uses for the workflow's scripts) and the
# package itself with every extra. Safe to run again. (A leg of the device matrix sets itself up with
# ci/zbench-setup.sh instead.) debootstrap and qemu-user-static are for the emulated arm64 device, which
# ci/arm64-device.sh builds.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(fonts-dejavu-core libegl1 libegl-mesa0 libgles2 libgl1-mesa-dri openssh-server openssh-client adb
          postgresql libpq5 git shellcheck debootstrap qemu-user-static)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

python3 -m pip install -q --upgrade pip
python3 -m pip install -q -e ".[test]"
python3 -m pytest --version
