/* zbench runner kit: the runner protocol (docs/runner-protocol.md) in C99, so that an engine supplies only
 * "set up", "draw frame f at complexity c" and "read back pixels". docs/native-runner.md walks through it.
 *
 * The kit owns: argument handling (`probe`, `run JOB OUTDIR`), reading and validating job.json, the feature
 * check, the frame loop (warmup and measured phases, paced on a simulated vsync or uncapped, sustained
 * duration), frames.csv, captures after the measured frames (PNG), result.json with its issues, signals and
 * exit codes, clocks (CLOCK_MONOTONIC and the thread's CPU time) and, through zbench_kit_gl.h, GPU timing. */
#ifndef ZBENCH_KIT_H
#define ZBENCH_KIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "zjson.h"

#define ZK_PROTOCOL 1

/* Exit codes (docs/runner-protocol.md, "Exit, signals, progress, files"). */
enum { ZK_EXIT_OK = 0, ZK_EXIT_FAILED = 1, ZK_EXIT_USAGE = 2, ZK_EXIT_SKIPPED = 3 };

#define ZK_MAX_SIDE 16384
#define ZK_MAX_ISSUES 1000

typedef struct zk_job {
    const char *path;
    zj_value *root;
    const char *backend;
    int paced;
    double refresh_hz;
    int warmup_frames, frames, total_frames;
    int *capture;
    size_t n_capture;
    int64_t seed;
    double *complexity; /* NULL: the job has none */
    size_t n_complexity;
    double duration_s;      /* <= 0: not a sustained launch */
    const char *gpu_timer;  /* NULL: the backend's best */
    const char *scene_id;
    int width, height;
    const zj_value *scene, *ops;
} zk_job;

/* What a frame did, filled by the engine's draw (docs/display-list.md, "Counters"). */
typedef struct zk_counts {
    int64_t draw_calls;
    int64_t upload_bytes;
    /* Vertices handed to the GPU (the counts of glDrawArrays and kin). The kit sets -1 before each draw: an
     * engine that does not count them leaves it, and frames.csv's `vertices` stays empty (unknown, not 0). */
    int64_t vertices;
} zk_counts;

/* A growable text buffer for JSON output. Start it as {0}. When memory runs out, an addition is left out and
 * `oom` is set (the text is then incomplete, and every later addition is left out too): the kit, given such a
 * buffer, leaves it out of its output and ends the run with exit 1 and an `error` issue. Nothing in the kit
 * ends the process. */
typedef struct zk_buf {
    char *data;
    size_t len, cap;
    int oom;
} zk_buf;
void zk_buf_add(zk_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void zk_buf_str(zk_buf *b, const char *s); /* a JSON string literal, escaped */
void zk_buf_free(zk_buf *b);

/* One GPU time value (docs/gpu-timing.md). */
typedef struct zk_sample {
    int ordinal;      /* the frame that issued it */
    int has_value;
    double gpu_ms;
    int disjoint;     /* 1, 0, or -1 when the source cannot tell */
    char invalid[160]; /* why a raw value was dropped (a timer_invalid issue), or "" */
} zk_sample;

/* A GPU time source; zbench_kit_gl.c provides the GL ones. A frame calls begin, draws, before_submit,
 * submits, then after_submit (immediate sources fill `out` and return 1); deferred sources return their
 * samples frames late through poll (block: wait for everything in flight). */
typedef struct zk_gpu zk_gpu;
struct zk_gpu {
    const char *source; /* the gpu_source tag of every row: timer_query, finish_bracket, readback, none */
    int deferred;
    void (*begin)(zk_gpu *g, int ordinal);
    void (*before_submit)(zk_gpu *g);
    int (*after_submit)(zk_gpu *g, int ordinal, int64_t t0_ns, zk_sample *out);
    int (*poll)(zk_gpu *g, zk_sample *out, int cap, int block);
    void (*stats)(zk_gpu *g, zk_buf *json_members); /* extra keys of result.json's gpu.timer_stats, or NULL */
    void (*destroy)(zk_gpu *g);
};

/* The engine: what a runner supplies. Every callback gets `self`; `err` is a message buffer of `errlen` bytes.
 * Return 0 for success. */
typedef struct zk_engine {
    const char *runner_name;     /* probe runner.name */
    const char *runner_version;  /* probe runner.version */
    const char *backend;         /* the one backend this engine renders with, e.g. "gles2" */
    const char *const *features; /* NULL-terminated display-list ops drawn faithfully */
    /* The engine's build (probe `build`; the host records it as app.build_hash). Fill with ZK_BUILD_INIT. */
    const char *build_id, *build_describe;
    int build_dirty; /* 1 dirty, 0 clean, -1 unknown */
    /* What it was built with (probe `toolchain`; run.json app.compiler, app.flags): also set by ZK_BUILD_INIT. */
    const char *build_compiler, *build_flags;
    const char *libraries_json; /* optional JSON members for machine.libraries, e.g. "\"mesa\": \"22.3.6\"" */
    void *self;

    /* Bring the backend up (context, surface-less). Called once by probe and by run. */
    int (*open)(void *self, char *err, size_t errlen);
    /* Backend keys of the probe beyond features and timer_sources (gl_vendor, ...), as JSON members
     * ("\"gl_vendor\": \"Mesa\", ..."); also result.json's gpu. */
    void (*gpu_info)(void *self, zk_buf *members);
    /* The GPU time sources this backend offers, best first (NULL-terminated static list). */
    const char *const *(*timer_sources)(void *self);
    /* Open a time source by name (forced) or NULL for the best; NULL return with err when it cannot run. */
    zk_gpu *(*open_timer)(void *self, const char *source, char *err, size_t errlen);
    /* Compile the job's scene (size job->width x job->height). Return ZK_EXIT_USAGE naming the op path and
     * key of a bad op, or ZK_EXIT_SKIPPED with the missing feature's name alone in err. */
    int (*prepare)(void *self, const zk_job *job, char *err, size_t errlen);
    /* Clear to opaque white and draw frame `frame` (complexity < 0: none). Issue the GL commands; do not
     * finish. Nonzero: the frame raised (err says what), the kit stops there. */
    int (*draw)(void *self, int frame, double complexity, zk_counts *counts, char *err, size_t errlen);
    /* Hand the frame to the driver (glFlush): cpu_ms ends on its return. */
    void (*submit)(void *self);
    /* A GL (or other API) error raised since the last call: nonzero with a detail. */
    int (*api_error)(void *self, char *detail, size_t len);
    /* Optional (NULL: none). Called after every frame, until it returns NULL: one more issue of the frame that
     * is not a GL error but breaks an invariant, as its kind (a static string: "shader", a program that failed
     * to compile or link was needed; "texture_fallback", an image over the device's maximum texture size was
     * drawn reduced) and a detail. result.json lists each under the frame (docs/native-runner.md). */
    const char *(*frame_issue)(void *self, char *detail, size_t len);
    /* The last frame drawn, width*height*4 bytes, 8-bit RGBA unpremultiplied, top row first. */
    int (*read_rgba)(void *self, unsigned char *rgba, char *err, size_t errlen);
    void (*close)(void *self);
    /* Optional (NULL: none). The device's conditions only the engine can read, as JSON members
     * ("\"thermal_state\": \"serious\", \"low_power_mode\": true"), called before the first frame and after
     * the last; they join the kit's own /sys readings in result.json `conditions.start` / `.end`
     * (docs/runner-protocol.md, "Conditions a runner samples"). */
    void (*conditions)(void *self, zk_buf *members);
} zk_engine;

/* The build identity in one line: compile with -DZK_BUILD_ID=\"<commit>\" -DZK_BUILD_DIRTY=0|1
 * -DZK_BUILD_DESCRIBE=\"<git describe>\" (native/Makefile does) and put ZK_BUILD_INIT in the engine. */
#ifndef ZK_BUILD_ID
#define ZK_BUILD_ID NULL
#endif
#ifndef ZK_BUILD_DESCRIBE
#define ZK_BUILD_DESCRIBE NULL
#endif
#ifndef ZK_BUILD_DIRTY
#define ZK_BUILD_DIRTY (-1)
#endif
/* The compiler names itself (its own predefined macros, so a cross compiler's version is the one used); the
 * flags come from the build: -DZK_BUILD_CFLAGS=\"<CFLAGS>\" (native/Makefile passes its CFLAGS). */
#ifndef ZK_BUILD_COMPILER
#if defined(__clang__)
#define ZK_BUILD_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define ZK_BUILD_COMPILER "gcc " __VERSION__
#else
#define ZK_BUILD_COMPILER NULL
#endif
#endif
#ifndef ZK_BUILD_CFLAGS
#define ZK_BUILD_CFLAGS NULL
#endif
#define ZK_BUILD_INIT .build_id = ZK_BUILD_ID, .build_describe = ZK_BUILD_DESCRIBE, .build_dirty = ZK_BUILD_DIRTY, \
                      .build_compiler = ZK_BUILD_COMPILER, .build_flags = ZK_BUILD_CFLAGS

/* Nonzero once SIGTERM or SIGINT arrived. An engine whose frames are long may poll it between draws and return
 * from `draw` early (nonzero): the kit then drops that frame, keeps every row already written and exits
 * 128 + N within the protocol's 2 s (docs/runner-protocol.md, "Exit, signals, progress, files"). */
int zk_stopping(void);

/* The `none` GPU time source, for an engine that does not time a GPU (a CPU rasteriser, a test engine). */
zk_gpu *zk_no_timer(void);

/* The runner's main: `probe` or `run JOB OUTDIR`; returns the exit status. */
int zk_main(int argc, char **argv, zk_engine *engine);

/* The conditions the kit reads itself, as JSON members (the platform's, zbench_platform.h): on Linux and Android
 * `temp_c` and `thermal_zones_c` (readable /sys/class/thermal zones), `cpu_freq_khz` (each CPU's
 * scaling_cur_freq); on Android also `battery_pct` and `power`; nothing where the platform has none (Darwin). */
void zk_conditions(zk_buf *members);

/* Clocks, in nanoseconds. */
int64_t zk_now_ns(void);        /* t_start_ns's clock: CLOCK_MONOTONIC (Linux, Android), mach_absolute_time (Darwin) */
int64_t zk_thread_cpu_ns(void); /* CLOCK_THREAD_CPUTIME_ID of the calling thread; -1 when there is none */

/* PNG, 8-bit RGBA (colour type 6), written with stored deflate blocks: no dependency beyond libc. */
int zk_png_write(const char *path, const unsigned char *rgba, int width, int height, char *err, size_t errlen);
/* Encode to memory (malloc'd), and decode what zk_png_encode wrote (stored blocks only; returns NULL otherwise). */
unsigned char *zk_png_encode(const unsigned char *rgba, int width, int height, size_t *len);
unsigned char *zk_png_decode_stored(const unsigned char *png, size_t len, int *width, int *height);

/* Premultiplied RGBA (what a GL framebuffer holds) to straight RGBA (a capture), in place, `pixels` pixels: each
 * colour channel becomes round(c * 255 / a), ties up, at most 255; alpha 0 gives 0, alpha 255 is left as is. */
void zk_unpremultiply(unsigned char *rgba, size_t pixels);

/* The frame loop as a library call, for bench/ (the kit's own per-frame bookkeeping): run `job` with `engine`
 * into `outdir` and return the exit status. */
int zk_run(zk_engine *engine, const char *job_path, const char *outdir);

#endif
