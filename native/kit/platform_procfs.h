/* What Linux and Android share, both being Linux kernels: the clocks, /proc and /sys (platform_procfs.c). The
 * two platform files add what differs: the operating system's name and the conditions beyond /sys's thermal
 * zones and CPU clocks. */
#ifndef ZBENCH_PLATFORM_PROCFS_H
#define ZBENCH_PLATFORM_PROCFS_H

#include <stddef.h>

#include "zbench_platform.h"

/* The value of the first line of `path` that starts with `key` (after the separators ' ', '\t', ':', '=' and
 * an opening quote, up to a closing quote or the line's end); "" when there is none. */
void zkp_read_key(const char *path, const char *key, char *out, size_t n);

/* A whole-number file (a /sys reading): 1 with *value, 0 when it cannot be read or is not one. */
int zkp_read_long(const char *path, long *value);

/* The readable thermal zones of /sys/class/thermal (`temp_c`, `thermal_zones_c`) and each online CPU's
 * scaling_cur_freq (`cpu_freq_khz`), appended to `m` as JSON members; nothing where /sys has none. */
void zkp_sysfs_conditions(zk_buf *m);

/* The operating system's name for the probe's machine.os: platform_linux.c, platform_android.c. */
void zkp_os_name(char *os, size_t n);

#endif
