#!/usr/bin/env bash
# The devices that are their own machine: `vm-arm64` (devices.yaml), a Debian bookworm arm64 system booted by
# qemu-system-aarch64 as `-M virt -cpu cortex-a53 -smp 4 -m 1024` (a Pi 3B+'s cores and memory), reached only
# over ssh on a loopback port. It has its own kernel, filesystem, clock, /proc and /sys: nothing of this
# repository is on it until `zbench deploy` puts it there (docs/vm-device.md).
#
#   bash ci/vm-device.sh setup            build the system image once per machine (cached), this clone's key copy
#                                         and known_hosts; prints how long it took
#   bash ci/vm-device.sh start [--keep-disk]
#                                         boot it from a fresh copy-on-write overlay (every boot starts clean), or
#                                         with --keep-disk from the overlay the last boot left (power restored
#                                         after a cut); waits until sshd answers and prints the boot time
#   bash ci/vm-device.sh stop             power it off (QEMU is ended) and remove the overlay
#   bash ci/vm-device.sh kill             cut its power: SIGKILL to QEMU, the overlay kept (the fault tests)
#   bash ci/vm-device.sh wait [SECONDS]   wait until sshd answers again (after a reboot inside the guest)
#   bash ci/vm-device.sh status           running or not, its QEMU pid and port
#   bash ci/vm-device.sh ssh [ARGS...]    ssh into it as root with its key, its host key checked
#   bash ci/vm-device.sh path             print the cached image folder
#
# The image. Nothing arm64 runs while it is built, and the build needs no binfmt_misc (this machine has none):
# `debootstrap --foreign` downloads the packages and their dependencies, every one is unpacked with
# `dpkg-deb -x` (no maintainer scripts, as ci/arm64-device.sh does), and what those scripts would have done
# for a system that only has to boot, run sshd and draw with Mesa is done here on the host: accounts from
# base-passwd's master files, the ssh host keys (made here, so the known_hosts entry is known before the first
# boot), module dependencies (depmod -b), fstab, busybox's init as PID 1 with a start script that brings up
# the network and sshd, and an initrd that loads the disk and filesystem modules and switches to the root
# filesystem (busybox-static from the same archive). `mkfs.ext4 -d` writes the tree into a filesystem image
# without mounting anything; qemu-img makes it the qcow2 base. The kernel and the initrd are copied out of
# the image and passed to QEMU (-kernel -initrd -append). The first boot under QEMU then finds a configured
# system; running `debootstrap --second-stage` in the guest instead took (TCG, no KVM) far longer.
#
# Security: the guest's root account has no password at all (`*`: no password can log in); sshd takes only
# the key made for this image, and the only way in is QEMU's user-mode network forwarding a port on
# 127.0.0.1 (hostfwd, restrict=on: the guest can reach nothing, neither the host nor the network). The host
# key is checked: known_hosts holds the key generated at build time, and nothing here turns checking off.
#
# Cache: ${XDG_CACHE_HOME:-~/.cache}/zbench/vm/<key>, the key naming the suite, architecture, package list
# and this script's layout version; built under a lock, one build at a time on the machine. This clone's
# state is in .zbench/vm/<arch>/ (the key copy, known_hosts, the overlay, QEMU's pid and console log).
#
# Needs debootstrap, qemu-system-arm, qemu-utils, e2fsprogs, cpio, xz-utils and openssh-client (ci/setup.sh).
# Environment: ZBENCH_VM_ARCH (arm64, the default; armhf), ZBENCH_VM_PORT (the loopback port, default 10022
# for arm64 and 10023 for armhf, as devices.yaml says), ZBENCH_VM_BOOT_TIMEOUT_S (default 600),
# ZBENCH_VM_MIRROR (a Debian mirror URL; default: debootstrap's own), ZBENCH_VM_SUITE (default bookworm).
set -euo pipefail
shopt -s inherit_errexit

checkout="$(cd "$(dirname "$0")/.." && pwd)"
arch="${ZBENCH_VM_ARCH:-arm64}"
suite="${ZBENCH_VM_SUITE:-bookworm}"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/zbench/vm"
layout=4   # bump when the image's layout changes, so old caches are not reused
boot_timeout_s="${ZBENCH_VM_BOOT_TIMEOUT_S:-600}"
disk_size=2G

case "$arch" in
    arm64)
        kernel_pkg=linux-image-arm64 qemu=qemu-system-aarch64 default_port=10022
        machine=(-M virt -cpu cortex-a53 -smp 4 -m 1024) console=ttyAMA0 ;;
    armhf)
        kernel_pkg=linux-image-armmp-lpae qemu=qemu-system-arm default_port=10023
        machine=(-M virt -cpu cortex-a15 -smp 4 -m 1024) console=ttyAMA0 ;;
    *) echo "vm-device: ZBENCH_VM_ARCH=$arch: use arm64 or armhf" >&2; exit 2 ;;
esac
port="${ZBENCH_VM_PORT:-$default_port}"
# What the guest runs: its kernel and modules (kmod), sshd, Mesa's EGL and GLES2 (the kit's runner links them),
# python3 (the ssh transport's launcher runs under it, as on a Pi), procps, busybox-static (the initrd and
# PID 1).
packages="$kernel_pkg,kmod,openssh-server,procps,python3,busybox-static"
packages="$packages,libegl1,libegl-mesa0,libgles2,libgl1-mesa-dri"
# FreeType and the DejaVu font: zbench-gles2 draws text from a glyph atlas (native/gles2/glyphs.c).
packages="$packages,libfreetype6,fonts-dejavu-core"
# The modules the initrd loads before it can mount the root filesystem (with what they depend on).
initrd_modules="virtio_pci virtio_blk ext4"
state="$checkout/.zbench/vm/$arch"

die() { echo "vm-device: $*" >&2; exit 1; }
say() { echo "vm-device: $*" >&2; }

image_key() {
    local sum
    sum="$(printf '%s\n' "$suite" "$arch" "$packages" "$initrd_modules" "$disk_size" "$layout" | sha256sum)"
    echo "$suite-$arch-${sum:0:12}"
}

# -- the image --------------------------------------------------------------------------------------------

build() {  # build the image into $1 (a fresh folder)
    local target=$1 root="$1/rootfs"
    local need
    for need in debootstrap dpkg-deb mkfs.ext4 qemu-img ssh-keygen cpio xz depmod; do
        command -v "$need" >/dev/null || die "$need is not installed (ci/setup.sh installs what the VM needs)"
    done
    say "debootstrap --foreign $suite ($arch) with $packages"
    # Downloaded packages are kept for the next build (debootstrap checks each against the signed Release).
    mkdir -p "$cache_root/debs-$suite-$arch"
    # shellcheck disable=SC2086 # the mirror is one optional argument
    debootstrap --foreign --arch="$arch" --variant=minbase --include="$packages" \
        --cache-dir="$cache_root/debs-$suite-$arch" "$suite" "$root" \
        ${ZBENCH_VM_MIRROR:+"$ZBENCH_VM_MIRROR"} > "$target/debootstrap.log" 2>&1 \
        || { tail -20 "$target/debootstrap.log" >&2; die "debootstrap failed (log above)"; }
    say "unpacking $(find "$root/var/cache/apt/archives" -name "*.deb" | wc -l) packages"
    # Into the merged /usr that debootstrap made (/bin, /sbin and /lib are links into /usr): tar must keep
    # those links (--keep-directory-symlink), where a plain `dpkg-deb -x` replaces them by folders and
    # splits the system in two.
    local deb
    for deb in "$root"/var/cache/apt/archives/*.deb; do
        dpkg-deb --fsys-tarfile "$deb" | tar -x --keep-directory-symlink -C "$root" || die "unpacking $deb failed"
    done
    rm -f "$root"/var/cache/apt/archives/*.deb
    if [ ! -L "$root/bin" ] || [ ! -L "$root/lib" ]; then die "the merged /usr links are gone from the image"; fi
    rm -rf "$root/debootstrap"
    configure "$target" || die "configuring the image failed"
    make_initrd "$target" || die "making the initrd failed"
    say "writing the $disk_size ext4 filesystem and the qcow2 base"
    # No blocks reserved for root: the fault tests fill the disk and expect root's writes to fail too.
    mkfs.ext4 -q -F -m 0 -L zbench-root -d "$root" "$target/root.raw" "$disk_size" || die "mkfs.ext4 -d failed"
    qemu-img convert -q -f raw -O qcow2 "$target/root.raw" "$target/base.qcow2" || die "qemu-img convert failed"
    rm -f "$target/root.raw"
    rm -rf "$root"
    printf 'suite=%s\narch=%s\npackages=%s\nkernel=%s\n' "$suite" "$arch" "$packages" \
        "$(cat "$target/kernel-version")" > "$target/READY"
}

configure() {  # what the maintainer scripts would have done, for a system that boots, runs sshd and draws
    local target=$1 root="$1/rootfs"
    # The mount points as folders: debootstrap --foreign leaves /proc a link to the host's /proc.
    local point
    for point in proc sys dev run tmp; do
        if [ -L "$root/$point" ]; then rm -f "$root/$point"; fi
        mkdir -p "$root/$point"
    done
    chmod 1777 "$root/tmp"
    # Accounts: base-passwd's masters, sshd's privilege separation user; root has no password (`*`).
    cp "$root/usr/share/base-passwd/passwd.master" "$root/etc/passwd"
    cp "$root/usr/share/base-passwd/group.master" "$root/etc/group"
    echo "sshd:x:100:65534::/run/sshd:/usr/sbin/nologin" >> "$root/etc/passwd"
    awk -F: '{print $1 ":*:19000:0:99999:7:::"}' "$root/etc/passwd" > "$root/etc/shadow"
    awk -F: '{print $1 ":*::"}' "$root/etc/group" > "$root/etc/gshadow"
    chmod 640 "$root/etc/shadow" "$root/etc/gshadow"
    local name="vm-$arch"
    echo "$name" > "$root/etc/hostname"
    printf '127.0.0.1 localhost\n127.0.1.1 %s\n' "$name" > "$root/etc/hosts"
    echo "/dev/vda / ext4 rw,errors=remount-ro 0 1" > "$root/etc/fstab"
    ln -sf /usr/share/zoneinfo/Etc/UTC "$root/etc/localtime"
    # ssh: host keys and the client key made here; only that key logs in, as root, and nothing else.
    ssh-keygen -q -t ed25519 -N "" -C "$name host" -f "$root/etc/ssh/ssh_host_ed25519_key"
    ssh-keygen -q -t ed25519 -N "" -C "zbench $name" -f "$target/id_ed25519"
    mkdir -p "$root/root/.ssh"
    chmod 700 "$root/root/.ssh"
    cp "$target/id_ed25519.pub" "$root/root/.ssh/authorized_keys"
    chmod 600 "$root/root/.ssh/authorized_keys"
    cp "$root/etc/ssh/ssh_host_ed25519_key.pub" "$target/host_key.pub"
    # Debian's postinst writes sshd_config from this template (it includes sshd_config.d/*.conf).
    cp "$root/usr/share/openssh/sshd_config" "$root/etc/ssh/sshd_config"
    cat > "$root/etc/ssh/sshd_config.d/zbench.conf" <<'EOF'
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
# No PAM: its common-* files are what pam-auth-update (a maintainer script) writes; a key needs none of it.
UsePAM no
UseDNS no
EOF
    # PID 1 is busybox's init, not systemd: under TCG on a shared 2-core host systemd and udev took minutes
    # before sshd, this boots in well under one. It mounts the API filesystems, loads the network and entropy
    # drivers, gives the interface QEMU's fixed user-network address (10.0.2.15, gateway 10.0.2.2: no DHCP
    # wait), and keeps sshd running; `busybox reboot` and `busybox poweroff` shut it down cleanly.
    mkdir -p "$root/etc/zbench"
    cat > "$root/etc/inittab" <<'EOF'
::sysinit:/etc/zbench/rcS
::respawn:/usr/sbin/sshd -D -e
::ctrlaltdel:/bin/busybox reboot
::shutdown:/bin/busybox sync
::shutdown:/bin/busybox umount -a -r
EOF
    cat > "$root/etc/zbench/rcS" <<'EOF'
#!/bin/busybox sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
bb=/bin/busybox
$bb mount -t proc proc /proc
$bb mount -t sysfs sys /sys
$bb mkdir -p /dev/pts /dev/shm
$bb mount -t devpts -o gid=5,mode=620 devpts /dev/pts
$bb mount -t tmpfs -o mode=1777 tmpfs /dev/shm
$bb mount -t tmpfs -o mode=755 tmpfs /run
$bb mount -o remount,rw /
$bb hostname -F /etc/hostname
modprobe -a virtio_net virtio_rng
$bb ip link set lo up
$bb ip link set eth0 up
$bb ip addr add 10.0.2.15/24 dev eth0
$bb ip route add default via 10.0.2.2
$bb mkdir -p /run/sshd /var/log
$bb chmod 755 /run/sshd
EOF
    chmod 755 "$root/etc/zbench/rcS"
    # Python's bytecode, written by the host's interpreter when it is the same version (the bytecode is the
    # same on every architecture; Debian writes it in a maintainer script): without it the guest compiles
    # every module the ssh transport's launcher imports, on every boot, under TCG.
    local py
    py="$(find "$root/usr/lib" -maxdepth 1 -name 'python3.[0-9]*' -printf '%f\n' | sort -V | tail -1)"
    if [ -n "$py" ] && [ "$(/usr/bin/python3 -c 'import sys; print("python%d.%d" % sys.version_info[:2])' 2>/dev/null)" = "$py" ]; then
        /usr/bin/python3 -m compileall -q -j 0 "$root/usr/lib/$py" >/dev/null 2>&1 || true
    fi
    # The library cache and module dependencies that ldconfig and depmod would have written in the guest.
    local version
    version="$(find "$root/lib/modules" -mindepth 1 -maxdepth 1 -printf "%f\n" | sort -V | tail -1)"
    [ -n "$version" ] || die "no kernel modules in the image"
    echo "$version" > "$target/kernel-version"
    depmod -b "$root" "$version" || die "depmod -b failed for $version"
    cp "$root/boot/vmlinuz-$version" "$target/vmlinuz"
}

make_initrd() {  # a busybox initrd that loads $initrd_modules and switches to /dev/vda
    local target=$1 root="$1/rootfs" version
    version="$(cat "$target/kernel-version")"
    local initrd="$target/initrd-tree"
    mkdir -p "$initrd/bin" "$initrd/dev" "$initrd/proc" "$initrd/sys" "$initrd/newroot" "$initrd/modules"
    cp "$root/bin/busybox" "$initrd/bin/busybox"
    local module path order=()
    for module in $initrd_modules; do
        while read -r path; do
            [ -n "$path" ] || continue
            case " ${order[*]} " in *" $path "*) continue ;; esac
            order+=("$path")
        done < <(modprobe -d "$root" -S "$version" --show-depends "$module" | awk '$1 == "insmod" {print $2}')
    done
    : > "$initrd/modules/order"
    for path in "${order[@]}"; do
        module="$(basename "$path")"
        case $module in
            *.xz) xz -dc "$path" > "$initrd/modules/${module%.xz}"; module="${module%.xz}" ;;
            *) cp "$path" "$initrd/modules/$module" ;;
        esac
        echo "$module" >> "$initrd/modules/order"
    done
    cat > "$initrd/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t devtmpfs dev /dev
while read -r m; do /bin/busybox insmod "/modules/$m" 2>/dev/null || echo "initrd: insmod $m failed"; done < /modules/order
i=0
while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do /bin/busybox sleep 0.1; i=$((i + 1)); done
/bin/busybox mount -t ext4 -o rw /dev/vda /newroot || { echo "initrd: cannot mount /dev/vda"; exec /bin/busybox sh; }
/bin/busybox umount /proc
/bin/busybox mount --move /dev /newroot/dev
exec /bin/busybox switch_root /newroot /bin/busybox init
EOF
    chmod 755 "$initrd/init"
    (cd "$initrd" && find . | cpio -o -H newc --quiet | gzip -9) > "$target/initrd.img"
    rm -rf "$initrd"
    cp "$target/initrd.img" "$root/boot/initrd.img-$version"
}

ensure_image() {  # print the cached image folder, building it first when it is missing
    local key dir
    key="$(image_key)"
    dir="$cache_root/$key"
    if [ ! -f "$dir/READY" ]; then
        mkdir -p "$cache_root"
        exec 9>"$cache_root/.lock"
        flock 9  # one build at a time on this machine; a waiter finds the image built
        if [ ! -f "$dir/READY" ]; then
            local started=$SECONDS tmp
            tmp="$(mktemp -d "$cache_root/.build-XXXXXX")"
            (build "$tmp") >&2 || { rm -rf "$tmp"; exit 1; }
            rm -rf "$dir"
            chmod 755 "$tmp"
            mv "$tmp" "$dir"
            say "built $dir in $((SECONDS - started)) s"
        fi
        exec 9>&-
    fi
    echo "$dir"
}

setup_clone() {  # this clone's view: the key copy and known_hosts for the loopback port
    local image=$1
    mkdir -p "$state"
    ln -sfn "$image" "$state/image"
    install -m 600 "$image/id_ed25519" "$state/id_ed25519"
    local key
    key="$(awk '{print $1, $2}' "$image/host_key.pub")"
    echo "[127.0.0.1]:$port $key" > "$state/known_hosts"
}

# -- the running machine ----------------------------------------------------------------------------------

pid() { [ -f "$state/qemu.pid" ] && cat "$state/qemu.pid"; }
running() { local p; p="$(pid)" || return 1; [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }

# Host key checking stays on (StrictHostKeyChecking=yes against this clone's known_hosts); only the image's key.
ssh_args=(-o BatchMode=yes -o StrictHostKeyChecking=yes -o "UserKnownHostsFile=$state/known_hosts"
          -o IdentitiesOnly=yes -o "IdentityFile=$state/id_ed25519" -o ConnectTimeout=10 -p "$port" -l root)

answers() {  # sshd answers and runs a command
    ssh "${ssh_args[@]}" 127.0.0.1 true >/dev/null 2>&1
}

wait_for_ssh() {  # $1: when the boot started (SECONDS); fails with the console's last lines
    local started=$1 deadline=$(($1 + boot_timeout_s))
    while [ $SECONDS -lt $deadline ]; do
        if ! running; then
            tail -n 30 "$state/console.log" >&2 2>/dev/null || true
            die "QEMU exited during the boot (the console's last lines are above)"
        fi
        if answers; then
            echo "vm-device: vm-$arch answers on 127.0.0.1:$port after $((SECONDS - started)) s"
            return 0
        fi
        sleep 2
    done
    echo "vm-device: the console's last lines:" >&2
    tail -n 30 "$state/console.log" >&2 2>/dev/null || true
    [ "${2:-}" = stop-on-failure ] && stop
    die "vm-$arch did not answer on 127.0.0.1:$port within ${boot_timeout_s} s (ZBENCH_VM_BOOT_TIMEOUT_S)"
}

start() {
    local keep=${1:-}
    running && die "vm-$arch is already running (pid $(pid)); stop it first"
    [ -f "$state/image/READY" ] || die "vm-$arch is not set up in this clone: run bash ci/vm-device.sh setup"
    local image
    image="$(cd "$state/image" && pwd -P)"
    if [ "$keep" != "--keep-disk" ] || [ ! -f "$state/overlay.qcow2" ]; then
        [ "$keep" = "--keep-disk" ] && die "no overlay from an earlier boot to keep; start without --keep-disk"
        rm -f "$state/overlay.qcow2"
        qemu-img create -q -f qcow2 -b "$image/base.qcow2" -F qcow2 "$state/overlay.qcow2"
    fi
    : > "$state/console.log"
    local started=$SECONDS
    # -daemonize: QEMU outlives this command by design (stop or kill ends it); its pid is in qemu.pid.
    "$qemu" "${machine[@]}" -display none -monitor none -serial "file:$state/console.log" \
        -kernel "$image/vmlinuz" -initrd "$image/initrd.img" \
        -append "root=/dev/vda rw console=$console panic=10" \
        -drive "file=$state/overlay.qcow2,if=none,id=disk,format=qcow2" -device virtio-blk-pci,drive=disk \
        -netdev "user,id=net,restrict=on,hostfwd=tcp:127.0.0.1:$port-:22" -device virtio-net-pci,netdev=net,romfile= \
        -device virtio-rng-pci -rtc base=utc \
        -daemonize -pidfile "$state/qemu.pid" \
        || die "$qemu did not start (its message is above; a port taken on 127.0.0.1: ZBENCH_VM_PORT)"
    wait_for_ssh "$started" stop-on-failure  # a machine that never answered is not left running
}

stop() {
    if running; then
        local p
        p="$(pid)"
        kill "$p" 2>/dev/null || true
        local waited=0
        while kill -0 "$p" 2>/dev/null && [ $waited -lt 50 ]; do sleep 0.2; waited=$((waited + 1)); done
        kill -9 "$p" 2>/dev/null || true
        say "vm-$arch stopped (QEMU pid $p)"
    fi
    rm -f "$state/qemu.pid" "$state/overlay.qcow2"
}

power_cut() {
    running || die "vm-$arch is not running"
    local p
    p="$(pid)"
    kill -9 "$p"
    while kill -0 "$p" 2>/dev/null; do sleep 0.1; done
    rm -f "$state/qemu.pid"
    say "vm-$arch lost its power (QEMU pid $p killed); start --keep-disk powers it on with the same disk"
}

command="${1:-setup}"
[ $# -gt 0 ] && shift
case "$command" in
    setup)
        started=$SECONDS
        image="$(ensure_image)"
        setup_clone "$image"
        echo "vm-device: vm-$arch set up in $((SECONDS - started)) s: $image"
        ;;
    start) start "${1:-}" ;;
    stop) stop ;;
    kill) power_cut ;;
    wait) boot_timeout_s="${1:-$boot_timeout_s}"; wait_for_ssh "$SECONDS" ;;
    status)
        if running; then echo "vm-$arch running: QEMU pid $(pid), ssh on 127.0.0.1:$port"
        else echo "vm-$arch not running"; exit 3; fi
        ;;
    ssh) exec ssh "${ssh_args[@]}" 127.0.0.1 "$@" ;;
    path) ensure_image ;;
    *) die "unknown command $command; use setup, start, stop, kill, wait, status, ssh or path" ;;
esac
