// bench/bench_qt_overhead.py's baseline: the engine's own calls for a job (open and prepare once, then draw and
// submit per frame) in a bare loop, with none of the kit's per-frame work (no clocks per frame, no getrusage,
// no frames.csv row, no pacing). Built instead of zk_main with -DZQT_BARE_LOOP (`make bench`).
//     zbench-qt-<backend>-bare JOB FRAMES   ->   {"frames": N, "ns_per_frame": X} on stdout
#ifndef ZQT_BARE_LOOP_H
#define ZQT_BARE_LOOP_H

#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" {
#include "zbench_kit.h"
}

static int zqt_bare_main(int argc, char **argv, zk_engine *e) {
    if (argc != 3 || atoi(argv[2]) < 2) {
        fprintf(stderr, "usage: %s JOB FRAMES (FRAMES >= 2)\n", argv[0]);
        return ZK_EXIT_USAGE;
    }
    FILE *file = fopen(argv[1], "rb");
    if (!file) {
        fprintf(stderr, "%s: cannot open the job\n", argv[1]);
        return ZK_EXIT_USAGE;
    }
    std::string text;
    char chunk[65536];
    for (size_t n; (n = fread(chunk, 1, sizeof chunk, file)) > 0;) text.append(chunk, n);
    fclose(file);
    char err[1024];
    zj_value *root = zj_parse(text.data(), text.size(), err, sizeof err);
    const zj_value *scene = root ? zj_get(root, "scene") : nullptr;
    const zj_value *ops = scene ? zj_get(scene, "ops") : nullptr, *w = scene ? zj_get(scene, "width") : nullptr,
                   *h = scene ? zj_get(scene, "height") : nullptr;
    if (!ops || !w || !h || !w->is_integer || !h->is_integer) {
        fprintf(stderr, "%s: not a job with scene.ops, .width and .height%s%s\n", argv[1], root ? "" : ": ", root ? "" : err);
        return ZK_EXIT_USAGE;
    }
    zk_job job{};
    job.path = argv[1];
    job.root = root;
    job.backend = e->backend;
    job.scene = scene;
    job.ops = ops;
    job.width = (int)w->integer;
    job.height = (int)h->integer;
    if (e->open(e->self, err, sizeof err) || e->prepare(e->self, &job, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", argv[1], err);
        return ZK_EXIT_FAILED;
    }
    int frames = atoi(argv[2]);
    zk_counts counts{};
    for (int f = 0; f < 10; f++) {  // warm, as the runner's warmup frames
        if (e->draw(e->self, f, -1, &counts, err, sizeof err)) return ZK_EXIT_FAILED;
        e->submit(e->self);
    }
    int64_t start = zk_now_ns();
    for (int f = 0; f < frames; f++) {
        if (e->draw(e->self, f, -1, &counts, err, sizeof err)) {
            fprintf(stderr, "frame %d: %s\n", f, err);
            return ZK_EXIT_FAILED;
        }
        e->submit(e->self);
    }
    int64_t end = zk_now_ns();
    printf("{\"frames\": %d, \"ns_per_frame\": %.1f}\n", frames, (double)(end - start) / frames);
    e->close(e->self);
    zj_free(root);
    return 0;
}

#endif
