/* The kit on Darwin: macOS, and iOS where an app links it (docs/native-runner.md, "macOS", "iOS"). There is no
 * /proc or /sys, no CLOCK_BOOTTIME and no clock_nanosleep: the frames' clock is mach_absolute_time (like Linux's
 * CLOCK_MONOTONIC, it stops while the machine sleeps), pacing sleeps in a loop until the target, and the
 * machine is read from sysctl. What only the app can read (ProcessInfo's thermal state and low power mode) is
 * the engine's `conditions`; the kit adds none of its own here. */
#define _DARWIN_C_SOURCE /* struct rusage's counters and sysctlbyname beside the POSIX 2008 the build asks for */
#include "zbench_platform.h"

#include <TargetConditionals.h>
#include <errno.h>
#include <mach/mach_time.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sysctl.h>
#include <time.h>

int64_t zk_now_ns(void) {
    static mach_timebase_info_data_t base;
    if (base.denom == 0) mach_timebase_info(&base); /* 1/1 on Intel, 125/3 on Apple silicon */
    uint64_t t = mach_absolute_time();
    /* ticks * numer / denom without overflowing 64 bits for the machine's whole uptime */
    return (int64_t)(t / base.denom * base.numer + t % base.denom * base.numer / base.denom);
}

int64_t zk_thread_cpu_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return -1;
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void zkp_sleep_until(int64_t target_ns) {
    /* nanosleep is relative and may return early: sleep what is left until the target is reached. A signal
     * (SIGTERM) ends it at once, and the frame loop checks the flag before drawing. */
    for (int64_t left; (left = target_ns - zk_now_ns()) > 0;) {
        struct timespec ts = {(time_t)(left / 1000000000LL), (long)(left % 1000000000LL)};
        if (nanosleep(&ts, NULL) != 0 && errno == EINTR) return;
    }
}

int64_t zkp_process_start_ns(const char **source) {
    *source = "runner_main"; /* not read here: the kit's main is the start */
    return 0;
}

long zkp_peak_rss_kb(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
    return ru.ru_maxrss / 1024; /* bytes on Darwin, KiB on Linux */
}

int zkp_cpu_busy(int64_t *busy_ns, int *cpus, const char **source) {
    (void)busy_ns;
    (void)cpus;
    *source = "none";
    return -1; /* host_load is null: no /proc/stat */
}

static void sysctl_string(const char *name, char *out, size_t n) {
    size_t len = n;
    out[0] = 0;
    if (n == 0 || sysctlbyname(name, out, &len, NULL, 0) != 0) out[0] = 0;
    else out[len < n ? len : n - 1] = 0;
}

void zkp_machine(const char *arch, char *model, size_t model_len, char *os, size_t os_len, int *emulated) {
    (void)arch;
    char release[64];
    sysctl_string("machdep.cpu.brand_string", model, model_len); /* "Apple M2", "Intel(R) Core(TM) i7-..." */
    if (!model[0]) sysctl_string("hw.machine", model, model_len); /* iOS: "iPad13,1" */
    sysctl_string("kern.osproductversion", release, sizeof release);
#if TARGET_OS_IOS
    const char *name = "iOS";
#else
    const char *name = "macOS";
#endif
    snprintf(os, os_len, "%s%s%s", name, release[0] ? " " : "", release);
    /* Rosetta 2 runs an x86_64 build on Apple silicon: sysctl.proc_translated is 1 in a translated process. */
    int translated = 0;
    size_t len = sizeof translated;
    *emulated = sysctlbyname("sysctl.proc_translated", &translated, &len, NULL, 0) == 0 && translated == 1;
}

void zk_conditions(zk_buf *m) { (void)m; }
