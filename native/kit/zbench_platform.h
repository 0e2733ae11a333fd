/* What the kit's portable core (zbench_kit.c: the protocol) asks of the operating system. One platform file
 * answers it, chosen by kit.mk's KIT_PLATFORM (docs/native-runner.md, "Platforms"):
 *   linux    platform_linux.c and platform_procfs.c
 *   android  platform_android.c and platform_procfs.c
 *   darwin   platform_darwin.c (macOS and iOS)
 * The platform file also defines zbench_kit.h's zk_now_ns, zk_thread_cpu_ns and zk_conditions. The core reads
 * no /proc or /sys file and calls no clock beyond those: everything that differs between systems is here.
 * Internal to the kit: an engine includes zbench_kit.h only. */
#ifndef ZBENCH_PLATFORM_H
#define ZBENCH_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

#include "zbench_kit.h"

/* Sleep until zk_now_ns() reaches target_ns. A signal may end it early: the frame loop checks zk_stopping()
 * after it, so SIGTERM is answered within a frame. */
void zkp_sleep_until(int64_t target_ns);

/* When this process started, on zk_now_ns()'s clock, with where that came from (result.json
 * process_start_source); 0 when the platform cannot say. The core checks it is plausible. */
int64_t zkp_process_start_ns(const char **source);

/* The process's peak resident set so far in KiB (result.json peak_rss_kb), or -1 when the platform cannot say. */
long zkp_peak_rss_kb(void);

/* The busy time of every CPU so far, summed, and the number of CPUs counted (result.json host_load), with the
 * source's name; 0 on success, -1 when the platform cannot say (host_load is then null). */
int zkp_cpu_busy(int64_t *busy_ns, int *cpus, const char **source);

/* The probe's machine: the CPU's model name and the operating system's name ("" each when unknown), and 1 in
 * *emulated when the process runs under an emulator that shows the host's CPU (qemu-user). `arch` is uname's. */
void zkp_machine(const char *arch, char *cpu_model, size_t model_len, char *os, size_t os_len, int *emulated);

#endif
