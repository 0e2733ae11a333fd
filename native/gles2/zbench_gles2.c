/* zbench-gles2: a native runner on EGL + OpenGL ES 2 built with the zbench kit (docs/native-runner.md).
 *
 * It draws, into an offscreen framebuffer of a surfaceless (or 1x1 pbuffer) EGL context, the display-list ops a
 * small GLES2 renderer draws faithfully (docs/display-list.md): rect (with its blend modes), rect_batch, mesh,
 * image (every upload mode and filter), repeat, group and clip (rect, rounded rect and convex path, analytic
 * anti-aliasing in the fragment shader). Everything else is left out of the probe's features, so the host skips
 * the scenes that need it. */
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES2/gl2.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "noise.h"
#include "zbench_kit.h"
#include "zbench_kit_gl.h"

#ifndef ZB_VERSION
#define ZB_VERSION "0.1.0"
#endif

/* Caps from docs/display-list.md ("Complexity"). */
#define MAX_REPEAT 100000
#define MAX_BATCH 65536
#define MAX_MESH_CELLS 65536
#define MAX_POLY 8
#define MAX_CLIP_DEPTH 64
#define CHECKER_CELL 8
#define TEXTURE_ALPHA 0xA0
/* Vertex buffers kept per mesh or rect_batch op: one per count and position, built before frame 0 for every
 * count of the job's complexity (up to PREBUILT_BYTES of vertices), the others when first drawn. */
#define BATCH_CACHE 256
#define PREBUILT_BYTES (256u << 20)
#define PI 3.14159265358979323846

static const char *const FEATURES[] = {"rect", "rect_batch", "mesh", "image", "repeat", "group", "clip", NULL};

/* ------------------------------------------------------------------------------------ display list */

enum { N_CONST, N_LINEAR, N_SINE, N_STEP, N_COMPLEXITY };
typedef struct {
    int kind;
    double a, b, c; /* const: a; linear: from a to b, period c; sine: center a, amplitude b, period c */
    double *values;
    int n_values, every;
} num;

enum { OP_RECT, OP_RECT_BATCH, OP_MESH, OP_IMAGE, OP_REPEAT, OP_GROUP, OP_CLIP };
enum { BLEND_SRC_OVER, BLEND_MULTIPLY, BLEND_SCREEN, BLEND_PLUS };
enum { CLIP_RECT, CLIP_RRECT, CLIP_PATH };

typedef struct {
    float x, y;
    unsigned char c[4];
} vertex;

typedef struct batch_entry {
    int used;
    int count;
    double key[8];
    GLuint vbo;
    int vertices;
} batch_entry;

typedef struct node {
    int op;
    num x, y, w, h, dx, dy, count, radius;
    unsigned char color[4], alt[4];
    int blend, columns, has_columns;
    /* image */
    int tex_w, tex_h, upload, filter;
    unsigned char *pixels; /* straight or premultiplied as `alpha` says */
    unsigned char *png;
    size_t png_len;
    int alpha_unpremul, translucent;
    GLuint texture;
    int counted;
    /* An image over the device's maximum texture size, reduced to fit it (fit_textures): its size before, and
     * whether the frame that first drew it has reported the fallback. */
    int fallback_w, fallback_h, fallback_reported;
    /* clip */
    int shape;
    num *px, *py;
    int n_points;
    /* rect_batch and mesh vertices, per count and position */
    batch_entry *cache;
    int n_cache, cache_next;
    struct node *kids;
    int n_kids;
} node;

typedef struct {
    int frame;
    double complexity;
    double tx, ty;
    zk_counts *counts;
} frame_state;

/* The clip in force: the intersection of rect clips, at most one rounded rect and one convex polygon. */
typedef struct {
    double x0, y0, x1, y1;
    int has_rrect;
    double rr[4], rr_radius;
    int n_poly;
    double poly[MAX_POLY][3]; /* edge lines a x + b y + c, >= 0 inside, (a, b) unit length */
} clip_state;

typedef struct {
    GLuint id;
    GLint scale, shape, clip, rr, rr_radius, npoly, poly, sampler, premul;
} program_t;

typedef struct {
    EGLDisplay display;
    EGLContext context;
    EGLSurface surface;
    int opened;
    GLuint fbo, color_tex;
    int width, height;
    /* [0] without a clip, [1] with one: most draws are unclipped, and an emulated or software GPU runs the
     * clip's per-pixel scan conversion for every fragment it shades. */
    program_t solid[2], textured[2];
    node *root;
    int n_root;
    const zk_job *job;
    char gl_vendor[128], gl_renderer[128], gl_version[128], glsl_version[128];
    GLint max_texture_size;
    clip_state clip;
    int blend;
    char libraries[256];
    /* Invariants that are not GL errors, reported after each frame (e_frame_issue): the first program that
     * failed to compile or link (its draws are left out, the run goes on), whether this frame needed it, and
     * the texture-size fallbacks drawn for the first time in this frame. */
    char shader_failure[320];
    int frame_needed_failed_program;
    char fallbacks[8][200];
    int n_fallbacks;
    int64_t *vertices; /* this frame's counter (zk_counts.vertices): every glDrawArrays adds its count */
} engine;

static double eval(const num *n, const frame_state *st) {
    switch (n->kind) {
    case N_CONST: return n->a;
    case N_LINEAR: return n->a + (n->b - n->a) * (fmod((double)st->frame, n->c) / n->c);
    case N_SINE: return n->a + n->b * sin(2.0 * PI * st->frame / n->c);
    case N_STEP: return n->values[(st->frame / n->every) % n->n_values];
    default: return st->complexity < 0 ? 0 : st->complexity;
    }
}

/* A count as the reference rounds it: half to even (Python's round), never below 0, and never above the
 * largest cap of docs/display-list.md (an animated count is not checked before frame 0). */
static int count_of(const num *n, const frame_state *st) {
    double v = nearbyint(eval(n, st));
    return v < 0 ? 0 : v > MAX_REPEAT ? MAX_REPEAT : (int)v;
}

/* ------------------------------------------------------------------------------------ compile */

typedef struct {
    char *err;
    size_t errlen;
    int code; /* ZK_EXIT_USAGE or ZK_EXIT_SKIPPED */
} compile_ctx;

static int bad(compile_ctx *c, const char *path, const char *key, const char *what) {
    snprintf(c->err, c->errlen, "%s.%s: %s", path, key, what);
    c->code = ZK_EXIT_USAGE;
    return -1;
}

/* out = a + b, truncated to n bytes (an op path in a message; a deeper one is cut, never overflowed). */
static void join(char *out, size_t n, const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la >= n) la = n - 1;
    memcpy(out, a, la);
    if (lb > n - 1 - la) lb = n - 1 - la;
    memcpy(out + la, b, lb);
    out[la + lb] = 0;
}

static int get_num(compile_ctx *c, const zj_value *op, const char *path, const char *key, int may_complexity, num *out) {
    const zj_value *v = zj_get(op, key);
    memset(out, 0, sizeof *out);
    if (!v) return bad(c, path, key, "missing");
    if (v->type == ZJ_NUMBER) { out->a = v->number; return 0; }
    if (v->type == ZJ_STRING && strcmp(v->string, "complexity") == 0) {
        if (!may_complexity) return bad(c, path, key, "\"complexity\" is allowed only on repeat.count, rect_batch.count and mesh.rows (docs/display-list.md)");
        out->kind = N_COMPLEXITY;
        return 0;
    }
    const zj_value *anim = zj_get(v, "anim");
    if (!anim || anim->type != ZJ_STRING) return bad(c, path, key, "is neither a number nor an animation");
    char sub[512], dot_key[64];
    join(dot_key, sizeof dot_key, ".", key);
    join(sub, sizeof sub, path, dot_key);
    if (strcmp(anim->string, "linear") == 0 || strcmp(anim->string, "sine") == 0) {
        int linear = anim->string[0] == 'l';
        const char *k1 = linear ? "from" : "center", *k2 = linear ? "to" : "amplitude";
        const zj_value *a = zj_get(v, k1), *b = zj_get(v, k2), *p = zj_get(v, "period");
        if (!a || a->type != ZJ_NUMBER) return bad(c, sub, k1, "missing or not a number");
        if (!b || b->type != ZJ_NUMBER) return bad(c, sub, k2, "missing or not a number");
        if (!p || p->type != ZJ_NUMBER || !(p->number > 0)) return bad(c, sub, "period", "must be a positive number");
        out->kind = linear ? N_LINEAR : N_SINE;
        out->a = a->number; out->b = b->number; out->c = p->number;
        return 0;
    }
    if (strcmp(anim->string, "step") == 0) {
        const zj_value *vals = zj_get(v, "values"), *every = zj_get(v, "every");
        if (!vals || vals->type != ZJ_ARRAY || vals->len == 0) return bad(c, sub, "values", "must be a non-empty array of numbers");
        if (!every || !every->is_integer || every->integer < 1 || every->integer > 1000000000) return bad(c, sub, "every", "must be a positive integer");
        out->kind = N_STEP;
        out->values = calloc(vals->len, sizeof *out->values);
        out->n_values = (int)vals->len;
        out->every = (int)every->integer;
        int i = 0;
        for (const zj_value *e = vals->first; e; e = e->next) {
            if (e->type != ZJ_NUMBER) return bad(c, sub, "values", "must be numbers");
            out->values[i++] = e->number;
        }
        return 0;
    }
    return bad(c, sub, "anim", "must be linear, sine or step");
}

static int get_color(compile_ctx *c, const zj_value *op, const char *path, const char *key, unsigned char out[4]) {
    const zj_value *v = zj_get(op, key);
    if (!v || v->type != ZJ_STRING || v->string[0] != '#' || (v->len != 7 && v->len != 9))
        return bad(c, path, key, "must be a colour \"#RRGGBB\" or \"#RRGGBBAA\"");
    out[3] = 255;
    for (size_t i = 0; i < (v->len - 1) / 2; i++) {
        unsigned value = 0;
        for (int k = 0; k < 2; k++) {
            char h = v->string[1 + 2 * i + k];
            value <<= 4;
            if (h >= '0' && h <= '9') value |= (unsigned)(h - '0');
            else if (h >= 'a' && h <= 'f') value |= (unsigned)(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F') value |= (unsigned)(h - 'A' + 10);
            else return bad(c, path, key, "must be a colour \"#RRGGBB\" or \"#RRGGBBAA\"");
        }
        out[i] = (unsigned char)value;
    }
    return 0;
}

static int get_choice(compile_ctx *c, const zj_value *op, const char *path, const char *key, const char *const *choices, int *out) {
    const zj_value *v = zj_get(op, key);
    if (v && v->type == ZJ_STRING)
        for (int i = 0; choices[i]; i++)
            if (strcmp(v->string, choices[i]) == 0) { *out = i; return 0; }
    char what[256] = "must be one of";
    for (int i = 0; choices[i]; i++) { strncat(what, i ? ", " : " ", sizeof what - strlen(what) - 1); strncat(what, choices[i], sizeof what - strlen(what) - 1); }
    return bad(c, path, key, what);
}

static int get_int(compile_ctx *c, const zj_value *op, const char *path, const char *key, int min, int max, int *out) {
    const zj_value *v = zj_get(op, key);
    if (!v || !v->is_integer || v->integer < min || v->integer > max) {
        char what[96];
        snprintf(what, sizeof what, "must be an integer in %d..%d", min, max);
        return bad(c, path, key, what);
    }
    *out = (int)v->integer;
    return 0;
}

static void checker(unsigned char *p, int w, int h) {
    static const unsigned char colors[2][4] = {{0x20, 0x50, 0xA0, 0xFF}, {0xF0, 0xC0, 0x40, 0xFF}};
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) memcpy(p + ((size_t)y * w + x) * 4, colors[(x / CHECKER_CELL + y / CHECKER_CELL) % 2], 4);
}

static int compile_ops(compile_ctx *c, const zj_value *ops, const char *path, node **out, int *n_out, int depth);

static int compile_op(compile_ctx *c, const zj_value *op, const char *path, node *n, int depth) {
    if (op->type != ZJ_OBJECT) return bad(c, path, "op", "the op is not an object");
    const zj_value *name = zj_get(op, "op");
    if (!name || name->type != ZJ_STRING) return bad(c, path, "op", "missing or not a string");
    const char *o = name->string;
    if (strcmp(o, "rect") == 0) {
        n->op = OP_RECT;
        static const char *const blends[] = {"src_over", "multiply", "screen", "plus", NULL};
        if (get_num(c, op, path, "x", 0, &n->x) || get_num(c, op, path, "y", 0, &n->y) || get_num(c, op, path, "w", 0, &n->w) ||
            get_num(c, op, path, "h", 0, &n->h) || get_color(c, op, path, "color", n->color))
            return -1;
        const zj_value *b = zj_get(op, "blend");
        if (b && b->type != ZJ_NULL && get_choice(c, op, path, "blend", blends, &n->blend)) return -1;
        return 0;
    }
    if (strcmp(o, "rect_batch") == 0) {
        n->op = OP_RECT_BATCH;
        if (get_num(c, op, path, "count", 1, &n->count) || get_int(c, op, path, "columns", 1, MAX_BATCH, &n->columns) ||
            get_num(c, op, path, "dx", 0, &n->dx) || get_num(c, op, path, "dy", 0, &n->dy) || get_num(c, op, path, "x", 0, &n->x) ||
            get_num(c, op, path, "y", 0, &n->y) || get_num(c, op, path, "w", 0, &n->w) || get_num(c, op, path, "h", 0, &n->h) ||
            get_color(c, op, path, "color", n->color))
            return -1;
        if (n->count.kind != N_COMPLEXITY && (n->count.kind != N_CONST || n->count.a != floor(n->count.a) || n->count.a < 1 || n->count.a > MAX_BATCH))
            return bad(c, path, "count", "must be an integer in 1..65536 or \"complexity\"");
        return 0;
    }
    if (strcmp(o, "mesh") == 0) {
        n->op = OP_MESH;
        if (get_num(c, op, path, "x", 0, &n->x) || get_num(c, op, path, "y", 0, &n->y) || get_num(c, op, path, "w", 0, &n->w) ||
            get_num(c, op, path, "h", 0, &n->h) || get_int(c, op, path, "columns", 1, MAX_MESH_CELLS, &n->columns) ||
            get_num(c, op, path, "rows", 1, &n->count) || get_color(c, op, path, "color", n->color) ||
            get_color(c, op, path, "alt_color", n->alt))
            return -1;
        if (n->count.kind != N_COMPLEXITY && (n->count.kind != N_CONST || n->count.a != floor(n->count.a) || n->count.a < 1 ||
                                              n->count.a * n->columns > MAX_MESH_CELLS))
            return bad(c, path, "rows", "must be a positive integer with columns x rows at most 65536, or \"complexity\"");
        return 0;
    }
    if (strcmp(o, "image") == 0) {
        n->op = OP_IMAGE;
        static const char *const patterns[] = {"checker", "noise", NULL}, *const uploads[] = {"once", "every_frame", "decode", NULL},
                                  *const filters[] = {"nearest", "linear", "mipmap", NULL},
                                  *const alphas[] = {"opaque", "premul", "unpremul", NULL};
        int pattern, alpha = 0;
        if (get_num(c, op, path, "x", 0, &n->x) || get_num(c, op, path, "y", 0, &n->y) || get_num(c, op, path, "w", 0, &n->w) ||
            get_num(c, op, path, "h", 0, &n->h) || get_int(c, op, path, "tex_w", 1, ZK_MAX_SIDE, &n->tex_w) ||
            get_int(c, op, path, "tex_h", 1, ZK_MAX_SIDE, &n->tex_h) || get_choice(c, op, path, "pattern", patterns, &pattern) ||
            get_choice(c, op, path, "upload", uploads, &n->upload) || get_choice(c, op, path, "filter", filters, &n->filter))
            return -1;
        const zj_value *seed = zj_get(op, "seed");
        if (!seed || !seed->is_integer || (pattern == 1 && seed->integer < 0)) return bad(c, path, "seed", "must be an integer (non-negative for noise)");
        const zj_value *a = zj_get(op, "alpha");
        if (a && a->type != ZJ_NULL && get_choice(c, op, path, "alpha", alphas, &alpha)) return -1;
        size_t bytes = (size_t)n->tex_w * (size_t)n->tex_h * 4;
        n->pixels = malloc(bytes);
        if (!n->pixels) return bad(c, path, "tex_w", "texture too large for memory");
        if (pattern == 0) checker(n->pixels, n->tex_w, n->tex_h);
        else zb_noise_rgba(n->pixels, n->tex_w, n->tex_h, (uint64_t)seed->integer);
        if (alpha != 0) {
            /* Translucent: alpha 0xA0 everywhere, colours premultiplied (rounded) or not (display-list.md). */
            for (size_t i = 0; i < bytes; i += 4) {
                if (alpha == 1)
                    for (int k = 0; k < 3; k++) n->pixels[i + k] = (unsigned char)((n->pixels[i + k] * TEXTURE_ALPHA + 127) / 255);
                n->pixels[i + 3] = TEXTURE_ALPHA;
            }
        }
        n->alpha_unpremul = alpha == 2;
        if (n->upload == 2) n->png = zk_png_encode(n->pixels, n->tex_w, n->tex_h, &n->png_len);
        return 0;
    }
    if (strcmp(o, "repeat") == 0 || strcmp(o, "group") == 0) {
        int repeat = o[0] == 'r';
        n->op = repeat ? OP_REPEAT : OP_GROUP;
        if (get_num(c, op, path, "dx", 0, &n->dx) || get_num(c, op, path, "dy", 0, &n->dy)) return -1;
        if (repeat) {
            if (get_num(c, op, path, "count", 1, &n->count)) return -1;
            if (n->count.kind == N_CONST && !(n->count.a >= 0 && n->count.a <= MAX_REPEAT))
                return bad(c, path, "count", "must be a number in 0..100000 or \"complexity\"");
            const zj_value *cols = zj_get(op, "columns");
            if (cols && cols->type != ZJ_NULL) {
                if (get_int(c, op, path, "columns", 1, MAX_REPEAT, &n->columns)) return -1;
                n->has_columns = 1;
            }
        }
    } else if (strcmp(o, "clip") == 0) {
        n->op = OP_CLIP;
        const zj_value *shape = zj_get(op, "shape");
        char sub[512];
        join(sub, sizeof sub, path, ".shape");
        static const char *const kinds[] = {"rect", "rrect", "path", NULL};
        if (!shape || shape->type != ZJ_OBJECT) return bad(c, path, "shape", "must be an object with a kind");
        if (get_choice(c, shape, sub, "kind", kinds, &n->shape)) return -1;
        if (n->shape != CLIP_PATH) {
            if (get_num(c, shape, sub, "x", 0, &n->x) || get_num(c, shape, sub, "y", 0, &n->y) || get_num(c, shape, sub, "w", 0, &n->w) ||
                get_num(c, shape, sub, "h", 0, &n->h))
                return -1;
            if (n->shape == CLIP_RRECT && get_num(c, shape, sub, "radius", 0, &n->radius)) return -1;
        } else {
            const zj_value *pts = zj_get(shape, "points");
            if (!pts || pts->type != ZJ_ARRAY || pts->len < 3) return bad(c, sub, "points", "must be at least 3 [x, y] points");
            if (pts->len > MAX_POLY) {
                snprintf(c->err, c->errlen, "clip (a path clip of more than %d points)", MAX_POLY);
                c->code = ZK_EXIT_SKIPPED;
                return -1;
            }
            n->n_points = (int)pts->len;
            n->px = calloc(pts->len, sizeof *n->px);
            n->py = calloc(pts->len, sizeof *n->py);
            int i = 0;
            for (const zj_value *p = pts->first; p; p = p->next, i++) {
                if (p->type != ZJ_ARRAY || p->len != 2) return bad(c, sub, "points", "every point must be [x, y]");
                zj_value holder = {0};
                holder.type = ZJ_OBJECT;
                zj_value xs = *p->first, ys = *p->first->next;
                xs.key = (char *)"x"; ys.key = (char *)"y";
                xs.next = &ys; ys.next = NULL;
                holder.first = &xs;
                if (get_num(c, &holder, sub, "x", 0, &n->px[i]) || get_num(c, &holder, sub, "y", 0, &n->py[i])) return -1;
            }
        }
    } else {
        snprintf(c->err, c->errlen, "%s", o);
        c->code = ZK_EXIT_SKIPPED;
        return -1;
    }
    char sub[512];
    join(sub, sizeof sub, path, ".ops");
    const zj_value *kids = zj_get(op, "ops");
    if (!kids || kids->type != ZJ_ARRAY) return bad(c, path, "ops", "must be an array of ops");
    return compile_ops(c, kids, sub, &n->kids, &n->n_kids, depth + 1);
}

static int compile_ops(compile_ctx *c, const zj_value *ops, const char *path, node **out, int *n_out, int depth) {
    if (depth > ZJ_MAX_DEPTH) return bad(c, path, "ops", "nested too deeply");
    *n_out = (int)ops->len;
    *out = calloc(ops->len + 1, sizeof **out);
    int i = 0;
    for (const zj_value *op = ops->first; op; op = op->next, i++) {
        char sub[512], index[24];
        snprintf(index, sizeof index, "[%d]", i);
        join(sub, sizeof sub, path, index);
        if (compile_op(c, op, sub, &(*out)[i], depth) != 0) return -1;
    }
    return 0;
}

static void free_nodes(node *nodes, int n) {
    for (int i = 0; i < n; i++) {
        node *d = &nodes[i];
        free(d->pixels);
        free(d->png);
        if (d->texture) glDeleteTextures(1, &d->texture);
        for (int k = 0; k < d->n_cache; k++) glDeleteBuffers(1, &d->cache[k].vbo);
        free(d->cache);
        num *nums[] = {&d->x, &d->y, &d->w, &d->h, &d->dx, &d->dy, &d->count, &d->radius};
        for (size_t k = 0; k < sizeof nums / sizeof *nums; k++) free(nums[k]->values);
        for (int k = 0; k < d->n_points; k++) { free(d->px[k].values); free(d->py[k].values); }
        free(d->px);
        free(d->py);
        free_nodes(d->kids, d->n_kids);
    }
    free(nodes);
}

/* ------------------------------------------------------------------------------------------- GL */

/* Analytic coverage of the pixel around p (window coordinates, y down like the scene: see u_scale) by the
 * clip: a box, a rounded rect (signed distance) and a convex polygon (distance to each edge). */
#define COVERAGE_GLSL \
    "precision highp float;\n" \
    "#ifdef NO_CLIP\n" \
    "float box(vec4 r, vec2 p) { vec2 d = max(min(r.zw, p + 0.5) - max(r.xy, p - 0.5), 0.0); return min(d.x, 1.0) * min(d.y, 1.0); }\n" \
    "float clip_coverage(vec2 p) { return 1.0; }\n" \
    "#else\n" \
    "uniform vec4 u_clip; uniform vec4 u_rr; uniform float u_rr_radius;\n" \
    "uniform int u_npoly; uniform vec3 u_poly[8];\n" \
    "float box(vec4 r, vec2 p) { vec2 d = max(min(r.zw, p + 0.5) - max(r.xy, p - 0.5), 0.0); return min(d.x, 1.0) * min(d.y, 1.0); }\n" \
    /* The reference's anti-aliased clip is scan converted 4 x 4 a pixel (Skia's supersampling): each of 4 \
     * sub-scanlines covers a span of quarter pixels, the rounded rect's span inset at its corners. */ \
    "float span_coverage(float l, float r, float px) {\n" \
    "  float a = floor(l * 4.0 + 0.5), b = floor(r * 4.0 + 0.5);\n" \
    "  return clamp(min(b, px * 4.0 + 4.0) - max(a, px * 4.0), 0.0, 4.0) * 0.25;\n" \
    "}\n" \
    "float clip_coverage(vec2 p) {\n" \
    "  vec4 r = u_clip; float c = 0.0;\n" \
    "  for (int k = 0; k < 4; k++) {\n" \
    "    float sy = p.y - 0.5 + (float(k) + 0.5) * 0.25;\n" \
    "    if (sy < r.y || sy >= r.w) continue;\n" \
    "    float l = r.x, rt = r.z;\n" \
    "    if (u_rr_radius >= 0.0) {\n" \
    "      if (sy < u_rr.y || sy >= u_rr.w) continue;\n" \
    "      float t = max(max(u_rr.y + u_rr_radius - sy, sy - (u_rr.w - u_rr_radius)), 0.0);\n" \
    "      float inset = u_rr_radius - sqrt(max(u_rr_radius * u_rr_radius - t * t, 0.0));\n" \
    "      l = max(l, u_rr.x + inset); rt = min(rt, u_rr.z - inset);\n" \
    "    }\n" \
    "    c += span_coverage(l, rt, p.x - 0.5);\n" \
    "  }\n" \
    "  c *= 0.25;\n" \
    "  for (int i = 0; i < 8; i++) { if (i >= u_npoly) break; c *= clamp(dot(u_poly[i].xy, p) + u_poly[i].z + 0.5, 0.0, 1.0); }\n" \
    "  return c;\n" \
    "}\n" \
    "#endif\n"

static const char SOLID_VS[] =
    "attribute vec2 a_pos; attribute vec4 a_color; uniform vec2 u_scale; varying vec4 v_color;\n"
    "void main() { v_color = a_color; gl_Position = vec4(a_pos * u_scale - 1.0, 0.0, 1.0); }\n";
static const char SOLID_FS[] = COVERAGE_GLSL
    "uniform vec4 u_shape; varying vec4 v_color;\n"
    "void main() { vec2 p = gl_FragCoord.xy; gl_FragColor = v_color * (box(u_shape, p) * clip_coverage(p)); }\n";
static const char TEX_VS[] =
    "attribute vec2 a_pos; attribute vec2 a_uv; uniform vec2 u_scale; varying vec2 v_uv;\n"
    "void main() { v_uv = a_uv; gl_Position = vec4(a_pos * u_scale - 1.0, 0.0, 1.0); }\n";
static const char TEX_FS[] = COVERAGE_GLSL
    "uniform sampler2D u_tex; uniform float u_premul; varying vec2 v_uv;\n"
    "void main() { vec4 t = texture2D(u_tex, v_uv); if (u_premul > 0.5) t.rgb *= t.a;\n"
    "  gl_FragColor = t * clip_coverage(gl_FragCoord.xy); }\n";

static GLuint shader(GLenum type, const char *src, char *err, size_t errlen) {
    GLuint s = glCreateShader(type);
    glShaderSource(s, 1, &src, NULL);
    glCompileShader(s);
    GLint ok = 0;
    glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
    if (!ok) {
        char log[512] = "";
        glGetShaderInfoLog(s, sizeof log, NULL, log);
        snprintf(err, errlen, "shader compile failed: %s", log);
        glDeleteShader(s);
        return 0;
    }
    return s;
}

static GLuint program(const char *vs_src, const char *fs_src, int textured, int clipped, char *err, size_t errlen) {
    char *fs_full = malloc(strlen(fs_src) + 64);
    if (!fs_full) { snprintf(err, errlen, "out of memory"); return 0; }
    strcpy(fs_full, clipped ? "" : "#define NO_CLIP 1\n");
    strcat(fs_full, fs_src);
#ifdef ZBENCH_GLES2_BROKEN_SHADER
    /* A test build (tests/native): the textured programs' fragment shader does not compile on the real driver,
     * so that a shader failure is reported per frame and the run goes on. */
    if (textured) strcat(fs_full, "\nthis is not GLSL;\n");
#endif
    GLuint vs = shader(GL_VERTEX_SHADER, vs_src, err, errlen), fs = vs ? shader(GL_FRAGMENT_SHADER, fs_full, err, errlen) : 0;
    free(fs_full);
    if (!vs || !fs) {  /* the run goes on without this program: leave nothing of it behind */
        if (vs) glDeleteShader(vs);
        return 0;
    }
    GLuint p = glCreateProgram();
    glAttachShader(p, vs);
    glAttachShader(p, fs);
    glBindAttribLocation(p, 0, "a_pos");
    glBindAttribLocation(p, 1, textured ? "a_uv" : "a_color");
    glLinkProgram(p);
    glDeleteShader(vs);
    glDeleteShader(fs);
    GLint ok = 0;
    glGetProgramiv(p, GL_LINK_STATUS, &ok);
    if (!ok) {
        char log[512] = "";
        glGetProgramInfoLog(p, sizeof log, NULL, log);
        snprintf(err, errlen, "program link failed: %s", log);
        glDeleteProgram(p);
        return 0;
    }
    return p;
}

static int egl_open(engine *g, char *err, size_t errlen) {
    if (g->opened) return 0;
    /* Surfaceless first (no window system, no pbuffer needed), then the default display with a pbuffer. */
    PFNEGLGETPLATFORMDISPLAYEXTPROC get_platform = (PFNEGLGETPLATFORMDISPLAYEXTPROC)eglGetProcAddress("eglGetPlatformDisplayEXT");
    const char *client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
    g->display = EGL_NO_DISPLAY;
    int surfaceless = 0;
    if (get_platform && client && strstr(client, "EGL_MESA_platform_surfaceless")) {
        g->display = get_platform(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, NULL);
        surfaceless = g->display != EGL_NO_DISPLAY;
    }
    EGLint major, minor;
    if (g->display == EGL_NO_DISPLAY || !eglInitialize(g->display, &major, &minor)) {
        surfaceless = 0;
        g->display = eglGetDisplay(EGL_DEFAULT_DISPLAY);
        if (g->display == EGL_NO_DISPLAY || !eglInitialize(g->display, &major, &minor)) {
            snprintf(err, errlen, "no EGL display (eglInitialize failed, error 0x%x)", eglGetError());
            return -1;
        }
    }
    if (!eglBindAPI(EGL_OPENGL_ES_API)) { snprintf(err, errlen, "eglBindAPI(EGL_OPENGL_ES_API) failed"); return -1; }
    EGLint attrs[] = {EGL_RENDERABLE_TYPE, EGL_OPENGL_ES2_BIT, EGL_SURFACE_TYPE, surfaceless ? 0 : EGL_PBUFFER_BIT,
                      EGL_RED_SIZE, 8, EGL_GREEN_SIZE, 8, EGL_BLUE_SIZE, 8, EGL_ALPHA_SIZE, 8, EGL_NONE};
    EGLConfig config;
    EGLint n = 0;
    if (!eglChooseConfig(g->display, attrs, &config, 1, &n) || n < 1) {
        snprintf(err, errlen, "no EGL config for an RGBA8 OpenGL ES 2 context (error 0x%x)", eglGetError());
        return -1;
    }
    EGLint ctx_attrs[] = {EGL_CONTEXT_CLIENT_VERSION, 2, EGL_NONE};
    g->context = eglCreateContext(g->display, config, EGL_NO_CONTEXT, ctx_attrs);
    if (g->context == EGL_NO_CONTEXT) { snprintf(err, errlen, "eglCreateContext failed (error 0x%x)", eglGetError()); return -1; }
    g->surface = EGL_NO_SURFACE;
    if (!surfaceless) {
        EGLint pb[] = {EGL_WIDTH, 1, EGL_HEIGHT, 1, EGL_NONE};
        g->surface = eglCreatePbufferSurface(g->display, config, pb);
        if (g->surface == EGL_NO_SURFACE) { snprintf(err, errlen, "eglCreatePbufferSurface failed (error 0x%x)", eglGetError()); return -1; }
    }
    if (!eglMakeCurrent(g->display, g->surface, g->surface, g->context)) {
        snprintf(err, errlen, "eglMakeCurrent failed (error 0x%x)", eglGetError());
        return -1;
    }
    snprintf(g->gl_vendor, sizeof g->gl_vendor, "%s", (const char *)glGetString(GL_VENDOR));
    snprintf(g->gl_renderer, sizeof g->gl_renderer, "%s", (const char *)glGetString(GL_RENDERER));
    snprintf(g->gl_version, sizeof g->gl_version, "%s", (const char *)glGetString(GL_VERSION));
    snprintf(g->glsl_version, sizeof g->glsl_version, "%s", (const char *)glGetString(GL_SHADING_LANGUAGE_VERSION));
    glGetIntegerv(GL_MAX_TEXTURE_SIZE, &g->max_texture_size);
#ifdef ZBENCH_GLES2_MAX_TEXTURE_SIZE
    /* A build emulating a GPU with a smaller limit (2048 on a 2012 tablet): the driver's or this, the smaller. */
    if (g->max_texture_size > ZBENCH_GLES2_MAX_TEXTURE_SIZE) g->max_texture_size = ZBENCH_GLES2_MAX_TEXTURE_SIZE;
#endif
    for (int clipped = 0; clipped < 2; clipped++) {
        for (int textured = 0; textured < 2; textured++) {
            program_t *p = textured ? &g->textured[clipped] : &g->solid[clipped];
            p->id = program(textured ? TEX_VS : SOLID_VS, textured ? TEX_FS : SOLID_FS, textured, clipped, err, errlen);
            if (!p->id) {
                /* Not a crash: the draws that need it are left out and each frame that needed it reports a
                 * `shader` issue (e_frame_issue), as glGetError's are. */
                if (!g->shader_failure[0])
                    snprintf(g->shader_failure, sizeof g->shader_failure, "%s %s program: %s",
                             textured ? "textured" : "solid", clipped ? "clipped" : "unclipped", err);
                err[0] = '\0';
                while (glGetError() != GL_NO_ERROR) {}
                continue;
            }
            p->scale = glGetUniformLocation(p->id, "u_scale");
            p->shape = glGetUniformLocation(p->id, "u_shape");
            p->clip = glGetUniformLocation(p->id, "u_clip");
            p->rr = glGetUniformLocation(p->id, "u_rr");
            p->rr_radius = glGetUniformLocation(p->id, "u_rr_radius");
            p->npoly = glGetUniformLocation(p->id, "u_npoly");
            p->poly = glGetUniformLocation(p->id, "u_poly");
            p->sampler = glGetUniformLocation(p->id, "u_tex");
            p->premul = glGetUniformLocation(p->id, "u_premul");
        }
    }
    g->opened = 1;
    return 0;
}

/* ------------------------------------------------------------------------------------------ engine */

static int e_open(void *self, char *err, size_t errlen) { return egl_open(self, err, errlen); }

static void e_gpu_info(void *self, zk_buf *b) {
    engine *g = self;
    int bits = 0;
    const char *ext = zk_gl_timer_extension(&bits);
    zk_buf_add(b, "\"gl_vendor\": ");
    zk_buf_str(b, g->gl_vendor);
    zk_buf_add(b, ", \"gl_renderer\": ");
    zk_buf_str(b, g->gl_renderer);
    zk_buf_add(b, ", \"gl_version\": ");
    zk_buf_str(b, g->gl_version);
    zk_buf_add(b, ", \"glsl_version\": ");
    zk_buf_str(b, g->glsl_version);
    zk_buf_add(b, ", \"max_texture_size\": %d, \"timer_query_extension\": ", (int)g->max_texture_size);
    zk_buf_str(b, ext);
    zk_buf_add(b, ", \"timer_query_bits\": %d", bits);
}

static const char *const *e_timer_sources(void *self) { (void)self; return zk_gl_timer_sources(); }

static zk_gpu *e_open_timer(void *self, const char *source, char *err, size_t errlen) {
    (void)self;
    return zk_gl_timer_open(source, err, errlen);
}

/* Largest count a node reaches in this job, for the caps that hold per frame (display-list.md). */
static int check_counts(node *nodes, int n, const zk_job *job, char *err, size_t errlen, const char *path) {
    double max_c = 0;
    for (size_t i = 0; i < job->n_complexity; i++) max_c = job->complexity[i] > max_c ? job->complexity[i] : max_c;
    double top = nearbyint(max_c); /* compared as a double: a huge value must not overflow an int */
    for (int i = 0; i < n; i++) {
        node *d = &nodes[i];
        char sub[512], index[24];
        snprintf(index, sizeof index, "[%d]", i);
        join(sub, sizeof sub, path, index);
        if (d->count.kind == N_COMPLEXITY) {
            if (d->op == OP_REPEAT && top > MAX_REPEAT) { snprintf(err, errlen, "%s.count: complexity %.0f is more than %d repetitions", sub, top, MAX_REPEAT); return -1; }
            if (d->op == OP_RECT_BATCH && top > MAX_BATCH) { snprintf(err, errlen, "%s.count: complexity %.0f is more than %d rects", sub, top, MAX_BATCH); return -1; }
            if (d->op == OP_MESH && top * d->columns > MAX_MESH_CELLS) {
                snprintf(err, errlen, "%s.rows: complexity %.0f x %d columns is more than %d cells", sub, top, d->columns, MAX_MESH_CELLS);
                return -1;
            }
        }
        char kid[512];
        join(kid, sizeof kid, sub, ".ops");
        if (check_counts(d->kids, d->n_kids, job, err, errlen, kid)) return -1;
    }
    return 0;
}

static void set_filter(node *d) {
    GLint min = d->filter == 0 ? GL_NEAREST : d->filter == 1 ? GL_LINEAR : GL_LINEAR_MIPMAP_LINEAR;
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, min);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, d->filter == 0 ? GL_NEAREST : GL_LINEAR);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
}

static void upload(node *d, const unsigned char *pixels) {
    if (!d->texture) glGenTextures(1, &d->texture);
    glBindTexture(GL_TEXTURE_2D, d->texture);
    /* A fresh texture image every upload (glTexImage2D, not a sub-image update): no driver cache keeps it. */
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA, d->tex_w, d->tex_h, 0, GL_RGBA, GL_UNSIGNED_BYTE, pixels);
    set_filter(d);
    if (d->filter == 2) glGenerateMipmap(GL_TEXTURE_2D);
}

static void upload_once(node *nodes, int n) {
    for (int i = 0; i < n; i++) {
        if (nodes[i].op == OP_IMAGE && nodes[i].upload == 0) upload(&nodes[i], nodes[i].pixels);
        upload_once(nodes[i].kids, nodes[i].n_kids);
    }
}

/* Before frame 0: the vertices of every count the job's complexity asks of a top-level mesh or rect_batch
 * whose position does not move, so that a measured frame at a new count draws what is ready
 * (docs/display-list.md, "Complexity"). */
static batch_entry *batch_vertices(node *d, int count, const double key[8]);

static void prebuild(node *nodes, int n, const zk_job *job) {
    size_t bytes = 0;
    for (int i = 0; i < n; i++) {
        node *d = &nodes[i];
        if ((d->op != OP_MESH && d->op != OP_RECT_BATCH) || d->count.kind != N_COMPLEXITY) continue;
        const num *pos[] = {&d->x, &d->y, &d->w, &d->h, &d->dx, &d->dy};
        int fixed = 1;
        for (size_t k = 0; k < 6; k++) fixed &= pos[k]->kind == N_CONST;
        if (!fixed) continue;
        for (size_t f = 0; f < job->n_complexity; f++) {
            frame_state st = {(int)f, job->complexity[f], 0, 0, NULL};
            int count = count_of(&d->count, &st);
            if (d->op == OP_MESH) count *= d->columns;
            if (count == 0 || (d->op == OP_RECT_BATCH && count > MAX_BATCH) || count > MAX_MESH_CELLS) continue;
            double key[8] = {d->x.a, d->y.a, d->w.a, d->h.a, d->op == OP_RECT_BATCH ? d->dx.a : 0,
                             d->op == OP_RECT_BATCH ? d->dy.a : 0, 0, 0};
            int known = 0;
            for (int c = 0; c < d->n_cache; c++) known |= d->cache[c].count == count && memcmp(d->cache[c].key, key, sizeof key) == 0;
            if (known) continue;
            if (d->n_cache >= BATCH_CACHE || bytes + (size_t)count * 6 * sizeof(vertex) > PREBUILT_BYTES) return;
            bytes += (size_t)count * 6 * sizeof(vertex);
            batch_vertices(d, count, key);
        }
    }
}

/* An image larger than the device's maximum texture size cannot be uploaded whole (glTexImage2D fails with
 * GL_INVALID_VALUE): like an engine's fallback, it is reduced to fit (the nearest source pixel, aspect ratio
 * kept) and drawn over the same rectangle, and the first frame that draws it reports a `texture_fallback`. */
static int fit_textures(node *nodes, int n, int max_side) {
    for (int i = 0; i < n; i++) {
        node *d = &nodes[i];
        if (fit_textures(d->kids, d->n_kids, max_side)) return -1;
        if (d->op != OP_IMAGE || (d->tex_w <= max_side && d->tex_h <= max_side)) continue;
        double scale = (double)max_side / (double)(d->tex_w > d->tex_h ? d->tex_w : d->tex_h);
        int w = (int)(d->tex_w * scale), h = (int)(d->tex_h * scale);
        w = w < 1 ? 1 : w > max_side ? max_side : w;
        h = h < 1 ? 1 : h > max_side ? max_side : h;
        unsigned char *reduced = malloc((size_t)w * h * 4);
        if (!reduced) return -1;
        for (int y = 0; y < h; y++) {
            int sy = (int)(((double)y + 0.5) * d->tex_h / h);
            for (int x = 0; x < w; x++) {
                int sx = (int)(((double)x + 0.5) * d->tex_w / w);
                memcpy(reduced + ((size_t)y * w + x) * 4, d->pixels + ((size_t)sy * d->tex_w + sx) * 4, 4);
            }
        }
        free(d->pixels);
        d->pixels = reduced;
        d->fallback_w = d->tex_w;
        d->fallback_h = d->tex_h;
        d->tex_w = w;
        d->tex_h = h;
        if (d->png) {
            free(d->png);
            d->png = zk_png_encode(d->pixels, w, h, &d->png_len);
        }
    }
    return 0;
}

static int e_prepare(void *self, const zk_job *job, char *err, size_t errlen) {
    engine *g = self;
    compile_ctx c = {err, errlen, ZK_EXIT_USAGE};
    g->job = job;
    if (compile_ops(&c, job->ops, "ops", &g->root, &g->n_root, 0) != 0) return c.code;
    if (check_counts(g->root, g->n_root, job, err, errlen, "ops")) return ZK_EXIT_USAGE;
    if (fit_textures(g->root, g->n_root, (int)g->max_texture_size)) {
        snprintf(err, errlen, "out of memory reducing an image to GL_MAX_TEXTURE_SIZE %d", (int)g->max_texture_size);
        return ZK_EXIT_FAILED;
    }
    if (job->width > g->max_texture_size || job->height > g->max_texture_size) {
        snprintf(err, errlen, "scene %dx%d is larger than GL_MAX_TEXTURE_SIZE %d", job->width, job->height, (int)g->max_texture_size);
        return ZK_EXIT_USAGE;
    }
    g->width = job->width;
    g->height = job->height;
    glGenTextures(1, &g->color_tex);
    glBindTexture(GL_TEXTURE_2D, g->color_tex);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA, g->width, g->height, 0, GL_RGBA, GL_UNSIGNED_BYTE, NULL);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glGenFramebuffers(1, &g->fbo);
    glBindFramebuffer(GL_FRAMEBUFFER, g->fbo);
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, g->color_tex, 0);
    if (glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE) {
        snprintf(err, errlen, "the %dx%d RGBA8 framebuffer is incomplete", g->width, g->height);
        return ZK_EXIT_USAGE;
    }
    glViewport(0, 0, g->width, g->height);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    /* y maps to window y unflipped, so window row 0 is the scene's top row: glReadPixels returns the image
     * top row first and gl_FragCoord is in scene pixels. */
    float sx = 2.0f / (float)g->width, sy = 2.0f / (float)g->height;
    for (int i = 0; i < 4; i++) {
        program_t *p = i < 2 ? &g->solid[i] : &g->textured[i - 2];
        if (!p->id) continue;  /* failed to compile or link: reported by the frames that need it */
        glUseProgram(p->id);
        glUniform2f(p->scale, sx, sy);
        if (p->sampler >= 0) glUniform1i(p->sampler, 0);
    }
    glEnable(GL_BLEND);
    upload_once(g->root, g->n_root); /* before frame 0, counted in the first frame that draws it */
    prebuild(g->root, g->n_root, job);
    while (glGetError() != GL_NO_ERROR) {}
    return 0;
}

/* The program for a draw (the clipped variant only when a clip is in force), made current with the clip. */
static program_t *use_program(engine *g, int textured) {
    clip_state *c = &g->clip;
    int clipped = c->has_rrect || c->n_poly || c->x0 > 0 || c->y0 > 0 || c->x1 < g->width || c->y1 < g->height;
    program_t *p = textured ? &g->textured[clipped] : &g->solid[clipped];
    if (!p->id) {
        g->frame_needed_failed_program = 1;
        return NULL;
    }
    glUseProgram(p->id);
    if (clipped) {
        glUniform4f(p->clip, (float)c->x0, (float)c->y0, (float)c->x1, (float)c->y1);
        glUniform4f(p->rr, (float)c->rr[0], (float)c->rr[1], (float)c->rr[2], (float)c->rr[3]);
        glUniform1f(p->rr_radius, c->has_rrect ? (float)c->rr_radius : -1.0f);
        glUniform1i(p->npoly, c->n_poly);
        float poly[MAX_POLY * 3] = {0};
        for (int i = 0; i < c->n_poly; i++)
            for (int k = 0; k < 3; k++) poly[i * 3 + k] = (float)c->poly[i][k];
        glUniform3fv(p->poly, MAX_POLY, poly);
    }
    /* Pixels outside the clip's bounds are never touched: scissor them off. */
    double x0 = c->x0, y0 = c->y0, x1 = c->x1, y1 = c->y1;
    if (x0 < 0) x0 = 0;
    if (y0 < 0) y0 = 0;
    if (x1 > g->width) x1 = g->width;
    if (y1 > g->height) y1 = g->height;
    int ix0 = (int)floor(x0), iy0 = (int)floor(y0), ix1 = (int)ceil(x1), iy1 = (int)ceil(y1);
    if (ix1 < ix0) ix1 = ix0;
    if (iy1 < iy0) iy1 = iy0;
    glScissor(ix0, iy0, ix1 - ix0, iy1 - iy0);
    return p;
}

static void set_blend(engine *g, int blend) {
    if (g->blend == blend) return;
    g->blend = blend;
    /* Premultiplied colours; the target is always opaque (cleared white), so multiply's Sc (1 - Da) term is 0. */
    switch (blend) {
    case BLEND_MULTIPLY: glBlendFunc(GL_DST_COLOR, GL_ONE_MINUS_SRC_ALPHA); break;
    case BLEND_SCREEN: glBlendFunc(GL_ONE, GL_ONE_MINUS_SRC_COLOR); break;
    case BLEND_PLUS: glBlendFunc(GL_ONE, GL_ONE); break;
    default: glBlendFunc(GL_ONE, GL_ONE_MINUS_SRC_ALPHA);
    }
}

/* Non-anti-aliased geometry (mesh, rect_batch) on the reference's pixel rule. Skia rounds a vertex to 1/64 px
 * and covers a pixel whose centre lies strictly below a top edge and strictly right of a left edge; GL's
 * top-left rule gives a centre lying exactly on an edge to the other side. Snapping to 1/64 and moving by
 * 1/256 (the rasteriser's sub-pixel step, smaller than the snap) gives every such tie to Skia's side and
 * changes nothing else: a centre is never within 1/256 of a 1/64 grid line it does not lie on. */
static float snap(double v) { return (float)(floor(v * 64.0 + 0.5) / 64.0 + 1.0 / 256.0); }

static void premul(const unsigned char in[4], unsigned char out[4]) {
    for (int k = 0; k < 3; k++) out[k] = (unsigned char)((in[k] * in[3] + 127) / 255);
    out[3] = in[3];
}

static void draw_solid(engine *g, const vertex *v, int n, GLuint vbo, const float shape[4]) {
    program_t *p = use_program(g, 0);
    if (!p) return; /* its program failed: reported as a `shader` issue of the frame */
    glUniform4f(p->shape, shape[0], shape[1], shape[2], shape[3]);
    glBindBuffer(GL_ARRAY_BUFFER, vbo);
    const char *base = vbo ? NULL : (const char *)v;
    glEnableVertexAttribArray(0);
    glEnableVertexAttribArray(1);
    glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, sizeof(vertex), base);
    glVertexAttribPointer(1, 4, GL_UNSIGNED_BYTE, GL_TRUE, sizeof(vertex), base + offsetof(vertex, c));
    glDrawArrays(GL_TRIANGLES, 0, n);
    *g->vertices += n;
    glBindBuffer(GL_ARRAY_BUFFER, 0);
}

static const float NO_SHAPE[4] = {-1e9f, -1e9f, 1e9f, 1e9f};

/* rect_batch and mesh: vertices built once per count and position, in a VBO (display-list.md: a frame at a
 * count seen before draws what is ready). */
static batch_entry *batch_vertices(node *d, int count, const double key[8]) {
    for (int i = 0; i < d->n_cache; i++)
        if (d->cache[i].count == count && memcmp(d->cache[i].key, key, sizeof d->cache[i].key) == 0)
            return &d->cache[i];
    if (!d->cache) {
        d->cache = calloc(BATCH_CACHE, sizeof *d->cache);
        if (!d->cache) return NULL;
    }
    batch_entry *e;
    if (d->n_cache < BATCH_CACHE) e = &d->cache[d->n_cache++];
    else { e = &d->cache[d->cache_next]; d->cache_next = (d->cache_next + 1) % BATCH_CACHE; }
    if (!e->used) glGenBuffers(1, &e->vbo);
    e->used = 1;
    e->count = count;
    memcpy(e->key, key, sizeof e->key);
    double x = key[0], y = key[1], w = key[2], h = key[3], dx = key[4], dy = key[5];
    unsigned char c0[4], c1[4];
    premul(d->color, c0);
    premul(d->alt, c1);
    size_t n = (size_t)count * 6;
    vertex *v = malloc(n * sizeof *v);
    if (!v) { e->vertices = 0; return e; }
    size_t k = 0;
    if (d->op == OP_RECT_BATCH) {
        for (int i = 0; i < count; i++) {
            double bx = x + dx * (i % d->columns), by = y + dy * (i / d->columns);
            float x0 = snap(bx), y0 = snap(by), x1 = snap(bx + w), y1 = snap(by + h);
            vertex q[6] = {{x0, y0, {0}}, {x1, y0, {0}}, {x0, y1, {0}}, {x1, y0, {0}}, {x1, y1, {0}}, {x0, y1, {0}}};
            for (int j = 0; j < 6; j++) { q[j].c[0] = c0[0]; q[j].c[1] = c0[1]; q[j].c[2] = c0[2]; q[j].c[3] = c0[3]; v[k++] = q[j]; }
        }
    } else {
        int columns = d->columns, rows = count / columns;
        for (int r = 0; r < rows; r++) {
            float ty = snap(y + h * r / rows), by = snap(y + h * (r + 1) / rows);
            for (int c = 0; c < columns; c++) {
                float lx = snap(x + w * c / columns), rx = snap(x + w * (c + 1) / columns);
                vertex q[6] = {{lx, ty, {0}}, {rx, ty, {0}}, {lx, by, {0}}, {rx, ty, {0}}, {rx, by, {0}}, {lx, by, {0}}};
                for (int j = 0; j < 6; j++) { memcpy(q[j].c, j < 3 ? c0 : c1, 4); v[k++] = q[j]; }
            }
        }
    }
    glBindBuffer(GL_ARRAY_BUFFER, e->vbo);
    glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)(k * sizeof *v), v, GL_STATIC_DRAW);
    glBindBuffer(GL_ARRAY_BUFFER, 0);
    free(v);
    e->vertices = (int)k;
    return e;
}

static int draw_nodes(engine *g, node *nodes, int n, frame_state *st, int depth, char *err, size_t errlen);

static int draw_node(engine *g, node *d, frame_state *st, int depth, char *err, size_t errlen) {
    switch (d->op) {
    case OP_RECT: {
        double x = eval(&d->x, st) + st->tx, y = eval(&d->y, st) + st->ty, w = eval(&d->w, st), h = eval(&d->h, st);
        double x0 = w < 0 ? x + w : x, x1 = w < 0 ? x : x + w, y0 = h < 0 ? y + h : y, y1 = h < 0 ? y : y + h;
        /* Anti-aliased like the reference's paint: the quad covers every pixel the rect touches, and the
         * fragment shader weighs each by its covered area. */
        float fx0 = (float)floor(x0), fy0 = (float)floor(y0), fx1 = (float)ceil(x1), fy1 = (float)ceil(y1);
        vertex v[6] = {{fx0, fy0, {0}}, {fx1, fy0, {0}}, {fx0, fy1, {0}}, {fx1, fy0, {0}}, {fx1, fy1, {0}}, {fx0, fy1, {0}}};
        unsigned char c[4];
        premul(d->color, c);
        for (int i = 0; i < 6; i++) memcpy(v[i].c, c, 4);
        float shape[4] = {(float)x0, (float)y0, (float)x1, (float)y1};
        set_blend(g, d->blend);
        draw_solid(g, v, 6, 0, shape);
        st->counts->draw_calls++;
        return 0;
    }
    case OP_RECT_BATCH:
    case OP_MESH: {
        int count = count_of(&d->count, st);
        /* An animated count is held to the op's cap (docs/display-list.md), as checked ones are before frame 0. */
        if (d->op == OP_MESH) count = (count > MAX_MESH_CELLS / d->columns ? MAX_MESH_CELLS / d->columns : count) * d->columns;
        else if (count > MAX_BATCH) count = MAX_BATCH;
        st->counts->draw_calls++;
        if (count == 0) return 0;
        /* Translation (repeat, group) is part of the key: vertices are in window space like the clip. */
        double key[8] = {eval(&d->x, st) + st->tx, eval(&d->y, st) + st->ty, eval(&d->w, st), eval(&d->h, st),
                         d->op == OP_RECT_BATCH ? eval(&d->dx, st) : 0, d->op == OP_RECT_BATCH ? eval(&d->dy, st) : 0, 0, 0};
        batch_entry *e = batch_vertices(d, count, key);
        if (!e || !e->vertices) { snprintf(err, errlen, "out of memory for %d vertices", count * 6); return -1; }
        set_blend(g, BLEND_SRC_OVER);
        draw_solid(g, NULL, e->vertices, e->vbo, NO_SHAPE);
        return 0;
    }
    case OP_IMAGE: {
        double x = eval(&d->x, st) + st->tx, y = eval(&d->y, st) + st->ty, w = eval(&d->w, st), h = eval(&d->h, st);
        size_t bytes = (size_t)d->tex_w * d->tex_h * 4;
        if (d->upload == 0) {
            if (!d->counted) { d->counted = 1; st->counts->upload_bytes += (int64_t)bytes; }
        } else if (d->upload == 1) {
            upload(d, d->pixels);
            st->counts->upload_bytes += (int64_t)bytes;
        } else {
            /* decode: the pixels are held as a PNG and decoded into new memory every frame. */
            int dw, dh;
            unsigned char *decoded = d->png ? zk_png_decode_stored(d->png, d->png_len, &dw, &dh) : NULL;
            if (!decoded) { snprintf(err, errlen, "image decode failed"); return -1; }
            upload(d, decoded);
            free(decoded);
            st->counts->upload_bytes += (int64_t)bytes;
        }
        float x0 = (float)x, y0 = (float)y, x1 = (float)(x + w), y1 = (float)(y + h);
        float v[24] = {x0, y0, 0, 0, x1, y0, 1, 0, x0, y1, 0, 1, x1, y0, 1, 0, x1, y1, 1, 1, x0, y1, 0, 1};
        if (d->fallback_w && !d->fallback_reported && g->n_fallbacks < 8) {
            d->fallback_reported = 1;
            snprintf(g->fallbacks[g->n_fallbacks++], sizeof g->fallbacks[0],
                     "image %dx%d is larger than GL_MAX_TEXTURE_SIZE %d: drawn from a %dx%d reduction",
                     d->fallback_w, d->fallback_h, (int)g->max_texture_size, d->tex_w, d->tex_h);
        }
        set_blend(g, BLEND_SRC_OVER);
        program_t *p = use_program(g, 1);
        if (!p) return 0; /* its program failed: reported as a `shader` issue of the frame */
        glUniform1f(p->premul, d->alpha_unpremul ? 1.0f : 0.0f);
        glActiveTexture(GL_TEXTURE0);
        glBindTexture(GL_TEXTURE_2D, d->texture);
        glEnableVertexAttribArray(0);
        glEnableVertexAttribArray(1);
        glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 4 * sizeof(float), v);
        glVertexAttribPointer(1, 2, GL_FLOAT, GL_FALSE, 4 * sizeof(float), v + 2);
        glDrawArrays(GL_TRIANGLES, 0, 6);
        *g->vertices += 6;
        st->counts->draw_calls++;
        return 0;
    }
    case OP_REPEAT: {
        int count = count_of(&d->count, st);
        double dx = eval(&d->dx, st), dy = eval(&d->dy, st), tx = st->tx, ty = st->ty;
        for (int i = 0; i < count; i++) {
            int col = d->has_columns ? i % d->columns : i, row = d->has_columns ? i / d->columns : i;
            st->tx = tx + dx * col;
            st->ty = ty + dy * row;
            if (draw_nodes(g, d->kids, d->n_kids, st, depth + 1, err, errlen)) return -1;
        }
        st->tx = tx;
        st->ty = ty;
        return 0;
    }
    case OP_GROUP: {
        double tx = st->tx, ty = st->ty;
        st->tx += eval(&d->dx, st);
        st->ty += eval(&d->dy, st);
        int r = draw_nodes(g, d->kids, d->n_kids, st, depth + 1, err, errlen);
        st->tx = tx;
        st->ty = ty;
        return r;
    }
    case OP_CLIP: {
        clip_state saved = g->clip;
        clip_state *c = &g->clip;
        if (d->shape == CLIP_PATH) {
            if (c->n_poly) { snprintf(err, errlen, "a path clip inside another path clip is not drawn by this runner"); return -1; }
            double area = 0;
            int n = d->n_points;
            double px[MAX_POLY], py[MAX_POLY], bx0 = 1e30, by0 = 1e30, bx1 = -1e30, by1 = -1e30;
            for (int i = 0; i < n; i++) {
                px[i] = eval(&d->px[i], st) + st->tx;
                py[i] = eval(&d->py[i], st) + st->ty;
                bx0 = fmin(bx0, px[i]); by0 = fmin(by0, py[i]); bx1 = fmax(bx1, px[i]); by1 = fmax(by1, py[i]);
            }
            for (int i = 0; i < n; i++) area += px[i] * py[(i + 1) % n] - px[(i + 1) % n] * py[i];
            double sign = area >= 0 ? 1 : -1;
            for (int i = 0; i < n; i++) {
                double ex = px[(i + 1) % n] - px[i], ey = py[(i + 1) % n] - py[i], len = sqrt(ex * ex + ey * ey);
                if (len == 0) continue;
                /* Inside is to the left of each edge for a counter-clockwise polygon (y down: area sign flips). */
                double a = -ey / len * sign, b = ex / len * sign;
                c->poly[c->n_poly][0] = a;
                c->poly[c->n_poly][1] = b;
                c->poly[c->n_poly][2] = -(a * px[i] + b * py[i]);
                c->n_poly++;
            }
            c->x0 = fmax(c->x0, bx0); c->y0 = fmax(c->y0, by0); c->x1 = fmin(c->x1, bx1); c->y1 = fmin(c->y1, by1);
        } else {
            double x = eval(&d->x, st) + st->tx, y = eval(&d->y, st) + st->ty, w = eval(&d->w, st), h = eval(&d->h, st);
            if (d->shape == CLIP_RRECT) {
                if (c->has_rrect) { snprintf(err, errlen, "a rounded-rect clip inside another is not drawn by this runner"); return -1; }
                double r = eval(&d->radius, st);
                c->has_rrect = 1;
                c->rr[0] = x; c->rr[1] = y; c->rr[2] = x + w; c->rr[3] = y + h;
                c->rr_radius = fmax(0.0, fmin(r, fmin(w, h) / 2));
            }
            c->x0 = fmax(c->x0, x); c->y0 = fmax(c->y0, y); c->x1 = fmin(c->x1, x + w); c->y1 = fmin(c->y1, y + h);
        }
        int r = draw_nodes(g, d->kids, d->n_kids, st, depth + 1, err, errlen);
        g->clip = saved;
        return r;
    }
    }
    return 0;
}

static int draw_nodes(engine *g, node *nodes, int n, frame_state *st, int depth, char *err, size_t errlen) {
    for (int i = 0; i < n; i++) {
        /* A software or emulated GPU draws as the calls are made: a long frame stops between ops on SIGTERM. */
        if (zk_stopping()) { snprintf(err, errlen, "stopped by a signal"); return -1; }
        if (draw_node(g, &nodes[i], st, depth, err, errlen)) return -1;
    }
    return 0;
}

static int e_draw(void *self, int frame, double complexity, zk_counts *counts, char *err, size_t errlen) {
    engine *g = self;
    frame_state st = {frame, complexity, 0, 0, counts};
    counts->vertices = 0;
    g->vertices = &counts->vertices;
    glBindFramebuffer(GL_FRAMEBUFFER, g->fbo);
    glDisable(GL_SCISSOR_TEST);
    glClearColor(1, 1, 1, 1);
    glClear(GL_COLOR_BUFFER_BIT);
    glEnable(GL_SCISSOR_TEST);
    g->clip = (clip_state){0};
    g->clip.x0 = 0; g->clip.y0 = 0; g->clip.x1 = g->width; g->clip.y1 = g->height;
    g->blend = -1;
    return draw_nodes(g, g->root, g->n_root, &st, 0, err, errlen);
}

static void e_submit(void *self) { (void)self; glFlush(); }

static int e_api_error(void *self, char *detail, size_t len) {
    (void)self;
    GLenum e = glGetError(), first = e;
    if (e == GL_NO_ERROR) return 0;
    while (e != GL_NO_ERROR) e = glGetError();
    snprintf(detail, len, "GL error 0x%04x in the frame", (unsigned)first);
    return 1;
}

static const char *e_frame_issue(void *self, char *detail, size_t len) {
    engine *g = self;
    if (g->frame_needed_failed_program) {
        g->frame_needed_failed_program = 0;
        snprintf(detail, len, "%s; the frame's draws that need it were left out", g->shader_failure);
        return "shader";
    }
    if (g->n_fallbacks > 0) {
        snprintf(detail, len, "%s", g->fallbacks[--g->n_fallbacks]);
        return "texture_fallback";
    }
    return NULL;
}

static int e_read_rgba(void *self, unsigned char *rgba, char *err, size_t errlen) {
    engine *g = self;
    glBindFramebuffer(GL_FRAMEBUFFER, g->fbo);
    glReadPixels(0, 0, g->width, g->height, GL_RGBA, GL_UNSIGNED_BYTE, rgba);
    GLenum e = glGetError();
    if (e != GL_NO_ERROR) { snprintf(err, errlen, "glReadPixels failed: GL error 0x%04x", (unsigned)e); return -1; }
    /* The framebuffer holds premultiplied colour; captures are unpremultiplied. */
    size_t n = (size_t)g->width * g->height * 4;
    for (size_t i = 0; i < n; i += 4) {
        unsigned a = rgba[i + 3];
        if (a == 255) continue;
        for (int k = 0; k < 3; k++) rgba[i + k] = a ? (unsigned char)((rgba[i + k] * 255u + a / 2) / a > 255 ? 255 : (rgba[i + k] * 255u + a / 2) / a) : 0;
    }
    return 0;
}

static void e_close(void *self) {
    engine *g = self;
    if (!g->opened) return;
    free_nodes(g->root, g->n_root);
    g->root = NULL;
    if (g->fbo) glDeleteFramebuffers(1, &g->fbo);
    if (g->color_tex) glDeleteTextures(1, &g->color_tex);
    eglMakeCurrent(g->display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    if (g->surface != EGL_NO_SURFACE) eglDestroySurface(g->display, g->surface);
    eglDestroyContext(g->display, g->context);
    eglTerminate(g->display);
    g->opened = 0;
}

int main(int argc, char **argv) {
    static engine g;
    zk_engine e = {
        .runner_name = "zbench-gles2",
        .runner_version = ZB_VERSION,
        .backend = "gles2",
        .features = FEATURES,
        ZK_BUILD_INIT,
        .self = &g,
        .open = e_open,
        .gpu_info = e_gpu_info,
        .timer_sources = e_timer_sources,
        .open_timer = e_open_timer,
        .prepare = e_prepare,
        .draw = e_draw,
        .submit = e_submit,
        .api_error = e_api_error,
        .frame_issue = e_frame_issue,
        .read_rgba = e_read_rgba,
        .close = e_close,
    };
    return zk_main(argc, argv, &e);
}
