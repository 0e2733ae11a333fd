/* The kit on Android (an NDK executable or an app's native library): platform_procfs.c, and where Android
 * differs from Linux. It has no /etc/os-release: the release is a system property, which /system/build.prop
 * holds for any process to read (no Android header needed, so this file builds with any C99 compiler). A tablet
 * or phone runs on its battery: the kernel's power_supply class says the charge and whether it is plugged in,
 * which the protocol's `battery_pct` and `power` keys carry (docs/runner-protocol.md, "Conditions a runner
 * samples"). Unreadable files (SELinux denies many of /sys to an app) leave their keys out. */
#include "platform_procfs.h"

#include <stdio.h>
#include <string.h>

#define BATTERY "/sys/class/power_supply/battery/"

void zkp_os_name(char *os, size_t n) {
    char release[64];
    zkp_read_key("/system/build.prop", "ro.build.version.release", release, sizeof release);
    if (release[0]) snprintf(os, n, "Android %s", release);
    else snprintf(os, n, "Android");
}

void zk_conditions(zk_buf *m) {
    zkp_sysfs_conditions(m);
    long pct;
    if (zkp_read_long(BATTERY "capacity", &pct) && pct >= 0 && pct <= 100)
        zk_buf_add(m, "%s\"battery_pct\": %ld", m->len ? ", " : "", pct);
    char status[64];
    zkp_read_key(BATTERY "status", "", status, sizeof status);
    /* "Not charging": on the charger but held (full, or too warm to charge); the device is not on its battery. */
    const char *power = strcmp(status, "Discharging") == 0 ? "battery"
                      : strcmp(status, "Charging") == 0 || strcmp(status, "Full") == 0 ||
                                strcmp(status, "Not charging") == 0 ? "plugged" : NULL;
    if (power) zk_buf_add(m, "%s\"power\": \"%s\"", m->len ? ", " : "", power);
}
