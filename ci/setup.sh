#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine for pytest-zbench: the system parts the tests start for real
# (Mesa EGL/GLES2, OpenSSH server, adb, the PostgreSQL server of the shared-history tests, the DejaVu font
# the reference runner draws text with and the CJK font of the textcjk scenes, WenQuanYi Zen Hei; shellcheck, which actionlint uses for the workflow's scripts) and the
# package itself with every extra. Safe to run again. (A leg of the device matrix sets itself up with
# ci/zbench-setup.sh instead.) debootstrap and qemu-user-static are for the emulated arm64 device, which
# ci/arm64-device.sh builds; chromium is the real browser the report's tests load report.html in. make, gcc,
# the EGL/GLES2 headers and Debian's armhf and arm64 cross compilers build the native runner (native/) for the
# three native devices, which ci/native-devices.sh sets up.
#
# The package goes into a virtual environment, .venv at the checkout's root: Debian 12 and Ubuntu 24.04 mark
# their Python as externally managed (PEP 668), so pip refuses to install into it. The environment is made
# from the distribution's Python, /usr/bin/python3 (python3-venv gives it ensurepip), or from the interpreter
# ZBENCH_PYTHON names. Use it as .venv/bin/pytest, .venv/bin/zbench, or after `. .venv/bin/activate`.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(fonts-dejavu-core fonts-wqy-zenhei libegl1 libegl-mesa0 libgles2 libgl1-mesa-dri openssh-server openssh-client adb
          postgresql libpq5 git shellcheck debootstrap qemu-user-static python3-venv chromium
          make gcc libc6-dev libegl-dev libgles-dev gcc-arm-linux-gnueabihf gcc-aarch64-linux-gnu
          libc6-dev-armhf-cross libc6-dev-arm64-cross
          # Engines nobody here wrote, built on the kit as an engine team would (runners/): Cairo and Qt 6.
          libcairo2-dev libfreetype-dev libfontconfig-dev pkg-config qt6-base-dev libqt6opengl6-dev g++
          # The kit's shaders validated as GLSL ES 1.00; its C tests (cmocka) and fuzz targets (clang's libFuzzer:
          # its runtime, and ASan's, are libclang-rt-14-dev, only a Recommends of clang, which this leaves out).
          glslang-tools libcmocka-dev clang libclang-rt-14-dev
          # The device that is its own machine: an arm64 system booted under qemu-system (ci/vm-device.sh),
          # its image made on this host (the initrd's cpio archive, its module dependencies with kmod's depmod).
          qemu-system-arm qemu-utils cpio kmod)
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

python="${ZBENCH_PYTHON:-}"
if [ -z "$python" ]; then
    if [ -x /usr/bin/python3 ]; then python=/usr/bin/python3; else python=python3; fi
fi
if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]"
.venv/bin/python -m pytest --version
echo "pytest-zbench is installed in .venv ($(.venv/bin/python -c 'import sys; print(sys.version.split()[0])')," \
     "from $python): run .venv/bin/pytest, or '. .venv/bin/activate' first"
