/* The kit on Linux (a desktop, a Raspberry Pi): platform_procfs.c, and what Linux has that Android has not. */
#include "platform_procfs.h"

void zkp_os_name(char *os, size_t n) { zkp_read_key("/etc/os-release", "PRETTY_NAME", os, n); }

void zk_conditions(zk_buf *m) { zkp_sysfs_conditions(m); }
