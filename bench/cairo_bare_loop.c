/* The Cairo runner's drawing with no kit around it (bench/bench_engine_overhead.py): the engine of
 * runners/cairo/zbench_cairo.c compiled in, its scene prepared from a job file, then a bare loop of the same
 * Cairo calls the runner makes per frame (clear, the display list, flush), each frame's start taken on
 * CLOCK_MONOTONIC as the kit takes it. No frames.csv, no getrusage, no progress, no pacing: what the runner adds
 * is the difference.
 *
 *     cairo-bare-loop JOB WARMUP FRAMES    prints {"intervals_ns": [...]}, the time between frame starts */
#define main zbench_cairo_runner_main
#include "zbench_cairo.c"
#undef main

#include <time.h>

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int main(int argc, char **argv) {
    static engine g;
    char err[1024];
    if (argc != 4) { fprintf(stderr, "usage: %s JOB WARMUP FRAMES\n", argv[0]); return 2; }
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 2; }
    static char text[1 << 22];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    zj_value *root = zj_parse(text, len, err, sizeof err);
    if (!root) { fprintf(stderr, "%s: %s\n", argv[1], err); return 2; }
    const zj_value *scene = zj_get(root, "scene");
    zk_job job = {0};
    job.scene = scene;
    job.ops = zj_get(scene, "ops");
    job.width = (int)zj_get(scene, "width")->integer;
    job.height = (int)zj_get(scene, "height")->integer;
    if (e_open(&g, err, sizeof err) || e_prepare(&g, &job, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
    int warmup = atoi(argv[2]), frames = atoi(argv[3]);
    zk_counts counts;
    for (int i = 0; i < warmup; i++) {
        if (e_draw(&g, i, -1, &counts, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
        e_submit(&g);
    }
    int64_t *starts = malloc(sizeof *starts * (size_t)(frames + 1));
    if (!starts) return 1;
    for (int i = 0; i < frames; i++) {
        starts[i] = now_ns();
        if (e_draw(&g, warmup + i, -1, &counts, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
        e_submit(&g);
    }
    starts[frames] = now_ns();
    printf("{\"intervals_ns\": [");
    for (int i = 0; i < frames; i++) printf("%s%lld", i ? ", " : "", (long long)(starts[i + 1] - starts[i]));
    printf("]}\n");
    free(starts);
    e_close(&g);
    zj_free(root);
    return 0;
}
