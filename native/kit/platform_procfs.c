/* The kit on a Linux kernel, Linux's and Android's alike (platform_procfs.h): CLOCK_MONOTONIC and the thread's
 * CPU clock, an absolute clock_nanosleep, and what /proc and /sys say of the process and the machine. */
#define _GNU_SOURCE /* CLOCK_BOOTTIME; clock_nanosleep and CLOCK_THREAD_CPUTIME_ID need POSIX 2008 */
#include "platform_procfs.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int64_t zk_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t zk_thread_cpu_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return -1;
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void zkp_sleep_until(int64_t target_ns) {
    struct timespec ts = {(time_t)(target_ns / 1000000000LL), (long)(target_ns % 1000000000LL)};
    /* Interrupted by SIGTERM: return, the loop checks the flag before drawing. */
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

void zkp_read_key(const char *path, const char *key, char *out, size_t n) {
    FILE *f = fopen(path, "r");
    out[0] = 0;
    if (!f) return;
    char line[512];
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) != 0) continue;
        char *v = line + klen;
        while (*v == ' ' || *v == '\t' || *v == ':' || *v == '=') v++;
        if (*v == '"') v++;
        size_t len = strcspn(v, "\"\n");
        v[len] = 0;
        snprintf(out, n, "%s", v);
        break;
    }
    fclose(f);
}

int zkp_read_long(const char *path, long *value) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[64];
    char *end = NULL;
    int ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!ok) return 0;
    *value = strtol(line, &end, 10);
    return end != line;
}

/* /proc/self/stat's starttime counts clock ticks since boot on the boot clock (CLOCK_BOOTTIME, which also counts
 * suspend); it is moved onto the monotonic clock by the two clocks' difference now (pytest_zbench/runner/process.py
 * is the same rule in Python). */
int64_t zkp_process_start_ns(const char **source) {
    *source = "proc_stat";
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f) return 0;
    char text[1024];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char *p = strrchr(text, ')');
    if (!p) return 0;
    p += 2;
    unsigned long long ticks = 0;
    /* Field 22 (starttime), counted from field 3 just after "pid (comm)". */
    for (int field = 3; field <= 22 && p; field++) {
        if (field == 22) ticks = strtoull(p, NULL, 10);
        p = strchr(p, ' ');
        if (p) p++;
    }
    long hz = sysconf(_SC_CLK_TCK);
    struct timespec boot;
    if (!ticks || hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &boot) != 0) return 0;
    int64_t boot_now = (int64_t)boot.tv_sec * 1000000000LL + boot.tv_nsec, mono_now = zk_now_ns();
    return mono_now - (boot_now - (int64_t)(ticks * 1000000000ULL / (unsigned long long)hz));
}

long zkp_peak_rss_kb(void) {
    char v[64];
    zkp_read_key("/proc/self/status", "VmHWM", v, sizeof v);
    if (v[0]) return strtol(v, NULL, 10);
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) return ru.ru_maxrss; /* KiB on Linux */
    return -1;
}

/* /proc/stat's aggregate `cpu` line, all but idle and iowait, and its per-CPU lines counted. */
int zkp_cpu_busy(int64_t *busy_ns, int *cpus, const char **source) {
    *source = "proc_stat";
    FILE *f = fopen("/proc/stat", "r");
    long hz = sysconf(_SC_CLK_TCK);
    if (!f || hz <= 0) { if (f) fclose(f); return -1; }
    char line[512];
    unsigned long long busy = 0;
    int have_total = 0, n = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "cpu ", 4) == 0) {
            unsigned long long v[8];
            /* user nice system idle iowait irq softirq steal; guest and guest_nice are inside user and nice */
            if (sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                       &v[6], &v[7]) == 8) {
                busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
                have_total = 1;
            }
        } else if (strncmp(line, "cpu", 3) == 0 && line[3] >= '0' && line[3] <= '9') {
            n++;
        }
    }
    fclose(f);
    if (!have_total || !n) return -1;
    *busy_ns = (int64_t)(busy * (1000000000ULL / (unsigned long long)hz));
    *cpus = n;
    return 0;
}

void zkp_machine(const char *arch, char *model, size_t model_len, char *os, size_t os_len, int *emulated) {
    char vendor[128];
    zkp_read_key("/proc/cpuinfo", "vendor_id", vendor, sizeof vendor);
    zkp_read_key("/proc/cpuinfo", "model name", model, model_len);
    if (!model[0]) zkp_read_key("/proc/cpuinfo", "Model", model, model_len);
    if (!model[0]) zkp_read_key("/proc/cpuinfo", "Hardware", model, model_len);
    /* qemu-user passes the host's /proc/cpuinfo through: x86 vendor lines read by an ARM process mean
     * emulation (docs/runner-protocol.md, "machine"), and the model is then the host's: left out. */
    int arm = strncmp(arch, "arm", 3) == 0 || strncmp(arch, "aarch64", 7) == 0;
    *emulated = arm && vendor[0] != 0;
    if (*emulated) model[0] = 0;
    zkp_os_name(os, os_len);
}

void zkp_sysfs_conditions(zk_buf *m) {
    char path[512];
    long value;
    double hottest = -1000.0;
    int zones = 0;
    DIR *dir = opendir("/sys/class/thermal");
    zk_buf readings = {0};
    for (struct dirent *d; dir && (d = readdir(dir)) != NULL;) {
        if (strncmp(d->d_name, "thermal_zone", 12) != 0) continue;
        snprintf(path, sizeof path, "/sys/class/thermal/%s/temp", d->d_name);
        if (!zkp_read_long(path, &value)) continue;
        double c = (value >= 1000 || value <= -1000) ? value / 1000.0 : (double)value; /* old kernels: degrees */
        if (c < -40.0 || c > 150.0) continue;
        zk_buf_add(&readings, "%s\"%s\": %.1f", zones++ ? ", " : "", d->d_name, c);
        if (c > hottest) hottest = c;
    }
    if (dir) closedir(dir);
    if (readings.oom) m->oom = 1; /* the caller's buffer says what its readings lost */
    else if (zones)
        zk_buf_add(m, "%s\"temp_c\": %.1f, \"thermal_zones_c\": {%s}", m->len ? ", " : "", hottest, readings.data);
    zk_buf_free(&readings);
    int cpus = 0;
    for (int cpu = 0; cpu < 1024; cpu++) {
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq", cpu);
        if (!zkp_read_long(path, &value)) {
            snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d", cpu);
            struct stat st;
            if (stat(path, &st) != 0) break; /* past the last CPU */
            continue;                       /* an offline CPU has no cpufreq */
        }
        zk_buf_add(m, "%s\"cpu%d\": %ld", cpus++ ? ", " : (m->len ? ", \"cpu_freq_khz\": {" : "\"cpu_freq_khz\": {"),
                   cpu, value);
    }
    if (cpus) zk_buf_add(m, "}");
}
