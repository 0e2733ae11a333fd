/* GPU time sources on GL: timer queries read from a ring without stalling, the finish bracket and the
 * readback bracket, each tagged with its source (docs/gpu-timing.md). */
#include "zbench_kit_gl.h"

#include <EGL/egl.h>
#include <GLES2/gl2.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GL_QUERY_COUNTER_BITS_EXT 0x8864
#define GL_QUERY_RESULT_EXT 0x8866
#define GL_QUERY_RESULT_AVAILABLE_EXT 0x8867
#define GL_TIME_ELAPSED_EXT 0x88BF
#define GL_GPU_DISJOINT_EXT 0x8FBB

/* No frame's GPU work takes ten seconds; the GPU cannot work longer than the wall time the query was in
 * flight (plus slack for the two clocks); known all-ones values are not times (docs/gpu-timing.md). */
#define ABSURD_NS 10000000000ULL
#define WALL_SLACK_RATIO 1.02
#define WALL_SLACK_NS 100000
#define RING_START 4
#define RING_MAX 32
#define DRAIN_TIMEOUT_NS 5000000000LL

typedef void (*gen_queries_fn)(GLsizei, GLuint *);
typedef void (*begin_query_fn)(GLenum, GLuint);
typedef void (*end_query_fn)(GLenum);
typedef void (*get_queryiv_fn)(GLenum, GLenum, GLint *);
typedef void (*get_query_objectiv_fn)(GLuint, GLenum, GLint *);
typedef void (*get_query_objectui64v_fn)(GLuint, GLenum, uint64_t *);
typedef void (*delete_queries_fn)(GLsizei, const GLuint *);

static struct {
    int loaded;
    const char *extension;
    int has_disjoint;
    int bits;
    gen_queries_fn gen;
    begin_query_fn begin;
    end_query_fn end;
    get_queryiv_fn getiv;
    get_query_objectiv_fn objiv;
    get_query_objectui64v_fn objui64v;
    delete_queries_fn del;
} q;

static int has_extension(const char *name) {
    const char *all = (const char *)glGetString(GL_EXTENSIONS);
    size_t n = strlen(name);
    for (const char *p = all; p && (p = strstr(p, name)) != NULL; p += n)
        if ((p == all || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return 1;
    return 0;
}

static void *proc(const char *name, const char *suffix) {
    char full[64];
    snprintf(full, sizeof full, "%s%s", name, suffix);
    return (void *)eglGetProcAddress(full);
}

static void load(void) {
    if (q.loaded) return;
    q.loaded = 1;
    const char *suffix;
    if (has_extension("GL_EXT_disjoint_timer_query")) { q.extension = "GL_EXT_disjoint_timer_query"; q.has_disjoint = 1; suffix = "EXT"; }
    else if (has_extension("GL_ARB_timer_query")) { q.extension = "GL_ARB_timer_query"; suffix = ""; }
    else return;
    /* POSIX guarantees function and object pointers convert (dlsym relies on it); C99 does not. */
    *(void **)&q.gen = proc("glGenQueries", suffix);
    *(void **)&q.begin = proc("glBeginQuery", suffix);
    *(void **)&q.end = proc("glEndQuery", suffix);
    *(void **)&q.getiv = proc("glGetQueryiv", suffix);
    *(void **)&q.objiv = proc("glGetQueryObjectiv", suffix);
    *(void **)&q.objui64v = proc("glGetQueryObjectui64v", suffix);
    *(void **)&q.del = proc("glDeleteQueries", suffix);
    if (!q.gen || !q.begin || !q.end || !q.getiv || !q.objiv || !q.objui64v || !q.del) { q.extension = NULL; return; }
    GLint bits = 0;
    q.getiv(GL_TIME_ELAPSED_EXT, GL_QUERY_COUNTER_BITS_EXT, &bits);
    while (glGetError() != GL_NO_ERROR) {}
    q.bits = bits;
}

const char *zk_gl_timer_extension(int *counter_bits) {
    load();
    *counter_bits = q.bits;
    return q.extension;
}

const char *const *zk_gl_timer_sources(void) {
    static const char *const with_query[] = {"timer_query", "finish_bracket", "readback", "none", NULL};
    static const char *const without[] = {"finish_bracket", "readback", "none", NULL};
    load();
    return q.extension && q.bits > 0 ? with_query : without;
}

void zk_judge_elapsed(uint64_t raw, int have_raw, int bits, int64_t wall_ns, int disjoint, zk_sample *out) {
    out->has_value = 0;
    out->invalid[0] = 0;
    out->disjoint = disjoint ? 1 : 0;
    if (disjoint) return; /* the driver told the truth: flagged, no issue */
    if (!have_raw) snprintf(out->invalid, sizeof out->invalid, "no result: the query never became available");
    else if (raw == 0) snprintf(out->invalid, sizeof out->invalid, "0 ns: the counter did not run");
    else if (raw == 0xFFFFFFFFull || raw == 0xFFFFFFFFFFFFFFFFull || raw == 0x7FFFFFFFull || raw == 0x7FFFFFFFFFFFFFFFull)
        snprintf(out->invalid, sizeof out->invalid, "0x%llX: an all-ones sentinel, not a time", (unsigned long long)raw);
    else if (bits > 0 && bits < 64 && raw >= (1ull << bits))
        snprintf(out->invalid, sizeof out->invalid, "%llu ns does not fit the %d-bit counter", (unsigned long long)raw, bits);
    else if (raw > ABSURD_NS)
        snprintf(out->invalid, sizeof out->invalid, "%.1f ms for one frame is not a measurement", (double)raw / 1e6);
    else if (wall_ns >= 0 && (double)raw > (double)wall_ns * WALL_SLACK_RATIO + WALL_SLACK_NS)
        snprintf(out->invalid, sizeof out->invalid, "%.3f ms of GPU time reported while only %.3f ms of wall time passed",
                 (double)raw / 1e6, (double)wall_ns / 1e6);
    else { out->has_value = 1; out->gpu_ms = (double)raw / 1e6; }
}

/* -------------------------------------------------------------------------------------- immediate */

typedef struct {
    zk_gpu base;
    int kind; /* 0 none, 1 finish, 2 readback */
} bracket;

static void nop_begin(zk_gpu *g, int o) { (void)g; (void)o; }
static void nop_before(zk_gpu *g) { (void)g; }
static int nop_poll(zk_gpu *g, zk_sample *o, int c, int b) { (void)g; (void)o; (void)c; (void)b; return 0; }
static void bracket_destroy(zk_gpu *g) { free(g); }

static int bracket_after(zk_gpu *g, int ordinal, int64_t t0, zk_sample *out) {
    bracket *b = (bracket *)g;
    out->ordinal = ordinal;
    out->disjoint = -1; /* these sources cannot tell */
    if (b->kind == 0) return 0;
    if (b->kind == 1) glFinish();
    else {
        unsigned char px[4];
        glReadPixels(0, 0, 1, 1, GL_RGBA, GL_UNSIGNED_BYTE, px);
    }
    out->has_value = 1;
    out->gpu_ms = (double)(zk_now_ns() - t0) / 1e6;
    return 1;
}

/* ------------------------------------------------------------------------------------- timer query */

typedef struct {
    int ordinal;
    GLuint query;
    int64_t t_begin;
    int disjoint;
} flight;

typedef struct {
    zk_gpu base;
    GLuint all[RING_MAX];
    int n_all;
    GLuint free_q[RING_MAX];
    int n_free;
    flight ring[RING_MAX]; /* in flight, oldest first, as a circular queue */
    int head, count;
    flight active;
    int has_active;
    int stalls, disjoint_events, max_lag, ordinal_now;
} tquery;

static void grow(tquery *t, int n) {
    if (t->n_all + n > RING_MAX) n = RING_MAX - t->n_all;
    if (n <= 0) return;
    q.gen(n, t->all + t->n_all);
    for (int i = 0; i < n; i++) t->free_q[t->n_free++] = t->all[t->n_all + i];
    t->n_all += n;
}

static int disjoint_flag(void) {
    if (!q.has_disjoint) return 0;
    GLint v = 0;
    glGetIntegerv(GL_GPU_DISJOINT_EXT, &v); /* reading it also clears it */
    return v != 0;
}

static int available(GLuint id) {
    GLint v = 0;
    q.objiv(id, GL_QUERY_RESULT_AVAILABLE_EXT, &v);
    return v != 0;
}

static int wait_available(GLuint id) {
    int64_t deadline = zk_now_ns() + DRAIN_TIMEOUT_NS;
    glFlush();
    while (!available(id)) {
        if (zk_now_ns() > deadline) return 0;
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    return 1;
}

/* Collect, oldest first, the results available now (with block_oldest, wait for the oldest one first). */
static int collect(tquery *t, zk_sample *out, int cap, int block_oldest) {
    int ready = 0;
    for (int i = 0; i < t->count && ready < cap; i++) {
        flight *f = &t->ring[(t->head + i) % RING_MAX];
        if (!available(f->query)) {
            if (block_oldest && ready == 0 && wait_available(f->query)) { ready++; continue; }
            break;
        }
        ready++;
    }
    int64_t seen = zk_now_ns();
    /* Read the flag after the availability checks: an event before this read may have touched any query in
     * flight, including those that just became available. */
    if (disjoint_flag()) {
        t->disjoint_events++;
        for (int i = 0; i < t->count; i++) t->ring[(t->head + i) % RING_MAX].disjoint = 1;
    }
    for (int i = 0; i < ready; i++) {
        flight f = t->ring[t->head];
        t->head = (t->head + 1) % RING_MAX;
        t->count--;
        uint64_t raw = 0;
        q.objui64v(f.query, GL_QUERY_RESULT_EXT, &raw);
        out[i].ordinal = f.ordinal;
        zk_judge_elapsed(raw, 1, q.bits, seen - f.t_begin, f.disjoint, &out[i]);
        t->free_q[t->n_free++] = f.query;
        if (t->ordinal_now - f.ordinal > t->max_lag) t->max_lag = t->ordinal_now - f.ordinal;
    }
    return ready;
}

static zk_sample early[RING_MAX];
static int n_early;

static void tq_begin(zk_gpu *g, int ordinal) {
    tquery *t = (tquery *)g;
    t->ordinal_now = ordinal;
    if (!t->n_free) {
        if (t->n_all < RING_MAX) grow(t, t->n_all);
        else {
            /* Every query in flight and the ring at its cap: only now wait for the oldest. */
            t->stalls++;
            n_early += collect(t, early + n_early, RING_MAX - n_early, 1);
        }
    }
    if (!t->n_free) return; /* the oldest never completed: this frame goes untimed */
    t->active = (flight){ordinal, t->free_q[--t->n_free], zk_now_ns(), 0};
    t->has_active = 1;
    q.begin(GL_TIME_ELAPSED_EXT, t->active.query);
}

static void tq_before_submit(zk_gpu *g) {
    tquery *t = (tquery *)g;
    if (!t->has_active) return;
    q.end(GL_TIME_ELAPSED_EXT);
    t->ring[(t->head + t->count) % RING_MAX] = t->active;
    t->count++;
    t->has_active = 0;
}

static int tq_after(zk_gpu *g, int o, int64_t t0, zk_sample *out) { (void)g; (void)o; (void)t0; (void)out; return 0; }

static int tq_poll(zk_gpu *g, zk_sample *out, int cap, int block) {
    tquery *t = (tquery *)g;
    int n = 0;
    while (n_early && n < cap) out[n++] = early[--n_early];
    if (!block) return n + collect(t, out + n, cap - n, 0);
    if (t->count == 0) return n;
    if (!wait_available(t->ring[t->head].query)) {
        /* Never available: every frame left is reported invalid rather than waited for forever. */
        while (t->count && n < cap) {
            flight f = t->ring[t->head];
            t->head = (t->head + 1) % RING_MAX;
            t->count--;
            t->free_q[t->n_free++] = f.query;
            out[n].ordinal = f.ordinal;
            zk_judge_elapsed(0, 0, q.bits, -1, f.disjoint, &out[n]);
            n++;
        }
        return n;
    }
    return n + collect(t, out + n, cap - n, 0);
}

static void tq_stats(zk_gpu *g, zk_buf *b) {
    tquery *t = (tquery *)g;
    zk_buf_add(b, "\"mode\": \"ring\", \"extension\": \"%s\", \"counter_bits\": %d, \"ring_size\": %d, \"stalls\": %d, "
                  "\"disjoint_events\": %d, \"max_lag_frames\": %d",
               q.extension, q.bits, t->n_all, t->stalls, t->disjoint_events, t->max_lag);
}

static void tq_destroy(zk_gpu *g) {
    tquery *t = (tquery *)g;
    if (t->n_all) q.del(t->n_all, t->all);
    free(t);
}

zk_gpu *zk_gl_timer_open(const char *source, char *err, size_t errlen) {
    const char *const *offered = zk_gl_timer_sources();
    if (!source) source = offered[0];
    int found = 0;
    for (const char *const *s = offered; *s; s++) found |= strcmp(*s, source) == 0;
    if (!found) {
        if (strcmp(source, "timer_query") == 0)
            snprintf(err, errlen, "timer_query was asked for, but the context has %s", q.extension ?
                     "a timer query extension whose TIME_ELAPSED counter has 0 bits" :
                     "neither GL_EXT_disjoint_timer_query nor GL_ARB_timer_query");
        else
            snprintf(err, errlen, "GPU time source '%s' is not one of the sources this context offers", source);
        return NULL;
    }
    if (strcmp(source, "timer_query") == 0) {
        tquery *t = calloc(1, sizeof *t);
        if (!t) { snprintf(err, errlen, "out of memory"); return NULL; }
        t->base = (zk_gpu){"timer_query", 1, tq_begin, tq_before_submit, tq_after, tq_poll, tq_stats, tq_destroy};
        n_early = 0;
        grow(t, RING_START);
        disjoint_flag(); /* clear anything pending from context creation */
        return &t->base;
    }
    bracket *b = calloc(1, sizeof *b);
    if (!b) { snprintf(err, errlen, "out of memory"); return NULL; }
    b->kind = strcmp(source, "finish_bracket") == 0 ? 1 : strcmp(source, "readback") == 0 ? 2 : 0;
    b->base = (zk_gpu){b->kind == 1 ? "finish_bracket" : b->kind == 2 ? "readback" : "none", 0, nop_begin, nop_before,
                       bracket_after, nop_poll, NULL, bracket_destroy};
    return &b->base;
}
