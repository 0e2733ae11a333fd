/* An engine that draws nothing, for bench/bench_native_kit.py: every nanosecond of its uncapped frame loop is
 * the runner kit's own per-frame bookkeeping (clocks, rusage, the CSV row and its flush, progress, checks). */
#include <string.h>

#include "zbench_kit.h"

static const char *const FEATURES[] = {"rect", NULL};
static const char *const SOURCES[] = {"none", NULL};

static int e_open(void *self, char *err, size_t n) { (void)self; (void)err; (void)n; return 0; }
static void e_gpu_info(void *self, zk_buf *b) { (void)self; (void)b; }
static const char *const *e_sources(void *self) { (void)self; return SOURCES; }
static zk_gpu *e_timer(void *self, const char *s, char *err, size_t n) { (void)self; (void)s; (void)err; (void)n; return zk_no_timer(); }
static int e_prepare(void *self, const zk_job *j, char *err, size_t n) { (void)self; (void)j; (void)err; (void)n; return 0; }
static int e_draw(void *self, int f, double c, zk_counts *k, char *err, size_t n) {
    (void)self; (void)f; (void)c; (void)k; (void)err; (void)n;
    return 0;
}
static void e_submit(void *self) { (void)self; }
static int e_error(void *self, char *d, size_t n) { (void)self; (void)d; (void)n; return 0; }
static int e_read(void *self, unsigned char *rgba, char *err, size_t n) { (void)self; (void)err; (void)n; memset(rgba, 255, 4); return 0; }

int main(int argc, char **argv) {
    zk_engine e = {.runner_name = "zbench-kit-null", .runner_version = "0", .backend = "null", .features = FEATURES,
                   ZK_BUILD_INIT, .open = e_open, .gpu_info = e_gpu_info, .timer_sources = e_sources,
                   .open_timer = e_timer, .prepare = e_prepare, .draw = e_draw, .submit = e_submit,
                   .api_error = e_error, .read_rgba = e_read};
    return zk_main(argc, argv, &e);
}
