/* An engine that draws nothing and says back the strings it is given, so that a test can read them as the kit
 * wrote them (tests/native/test_kit_json_strings.py): the probe's build `describe` is ZBENCH_ECHO from the
 * environment (the probe is composed with zk_buf_str), and the first frame reports the job's scene id, as the
 * kit's JSON parser read it, as a `shader` issue (result.json is written with fput_json_str). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zbench_kit.h"

static const char *const FEATURES[] = {"rect", NULL};
static const char *const SOURCES[] = {"none", NULL};
static const char *g_scene_id;
static int g_said;

static int e_open(void *self, char *err, size_t n) { (void)self; (void)err; (void)n; return 0; }
static void e_gpu_info(void *self, zk_buf *b) { (void)self; (void)b; }
static const char *const *e_sources(void *self) { (void)self; return SOURCES; }
static zk_gpu *e_timer(void *self, const char *s, char *err, size_t n) { (void)self; (void)s; (void)err; (void)n; return zk_no_timer(); }
static int e_prepare(void *self, const zk_job *j, char *err, size_t n) {
    (void)self; (void)err; (void)n;
    g_scene_id = j->scene_id;
    return 0;
}
static int e_draw(void *self, int f, double c, zk_counts *k, char *err, size_t n) {
    (void)self; (void)f; (void)c; (void)k; (void)err; (void)n;
    return 0;
}
static void e_submit(void *self) { (void)self; }
static int e_error(void *self, char *d, size_t n) { (void)self; (void)d; (void)n; return 0; }
static const char *e_frame_issue(void *self, char *detail, size_t n) {
    (void)self;
    if (g_said || !g_scene_id) return NULL;
    g_said = 1;
    snprintf(detail, n, "%s", g_scene_id);
    return "shader";
}
static int e_read(void *self, unsigned char *rgba, char *err, size_t n) { (void)self; (void)err; (void)n; memset(rgba, 255, 4); return 0; }

int main(int argc, char **argv) {
    zk_engine e = {.runner_name = "zbench-kit-echo", .runner_version = "0", .backend = "null", .features = FEATURES,
                   ZK_BUILD_INIT, .open = e_open, .gpu_info = e_gpu_info, .timer_sources = e_sources,
                   .open_timer = e_timer, .prepare = e_prepare, .draw = e_draw, .submit = e_submit,
                   .api_error = e_error, .frame_issue = e_frame_issue, .read_rgba = e_read};
    e.build_id = "echo";
    e.build_describe = getenv("ZBENCH_ECHO");
    return zk_main(argc, argv, &e);
}
