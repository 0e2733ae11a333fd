/* zbench-gles2: a native runner on EGL + OpenGL ES 2 built with the zbench kit (docs/native-runner.md).
 *
 * It draws, into an offscreen framebuffer of a surfaceless (or 1x1 pbuffer) EGL context, the display-list ops a
 * GLES2 renderer draws (docs/display-list.md, docs/native-runner.md "What zbench-gles2 draws"): rects (with
 * their blend modes), rounded rects and borders, gradients, images, meshes, text from a FreeType glyph atlas
 * (glyphs.c), shadows and backdrop blurs (separable Gaussian passes through offscreen framebuffers), layers,
 * video planes (video.c), the `shader` op, and clips, anti-aliased analytically in the fragment shaders
 * (shaders.c). What it does not draw (etc2_image without the format, tap_target, path) is left out of the
 * probe's features, so the host skips the scenes that need it. */
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES2/gl2.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "glyphs.h"
#include "noise.h"
#include "shaders.h"
#include "video.h"
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
#define MAX_STOPS 8
#define MAX_LAYERS 16
#define MAX_LINES 1024
#define MAX_EFFECTS 64
#define MAX_LOOPS 1024
#define MAX_FETCHES 64

static const char *const FEATURES[] = {"rect", "rect_batch", "mesh", "image", "repeat", "group", "clip", "rrect", "border",
                                       "linear_gradient", "radial_gradient", "shadow", "backdrop_blur", "text", "layer",
                                       "shader", "video", NULL};

/* The reference runner's fonts (runner/interpreter.py FONT_PATHS, CJK_FONT_PATHS); ZBENCH_CJK_FONT first. */
static const char *const SANS_FONTS[] = {"/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/dejavu/DejaVuSans.ttf",
                                         "/usr/share/fonts/TTF/DejaVuSans.ttf", NULL};

/* ------------------------------------------------------------------------------------ display list */

enum { N_CONST, N_LINEAR, N_SINE, N_STEP, N_COMPLEXITY };
typedef struct {
    int kind;
    double a, b, c; /* const: a; linear: from a to b, period c; sine: center a, amplitude b, period c */
    double *values;
    int n_values, every;
} num;

enum { OP_RECT, OP_RECT_BATCH, OP_MESH, OP_IMAGE, OP_REPEAT, OP_GROUP, OP_CLIP, OP_RRECT, OP_BORDER, OP_LINEAR, OP_RADIAL,
       OP_SHADOW, OP_BACKDROP, OP_TEXT, OP_LAYER, OP_SHADER, OP_VIDEO };
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

typedef struct {
    GLuint id;
    GLint scale, shape, clip, rr, rr_radius, npoly, poly, tex, premul, alpha, radius, stroke, geom, col, pos, nstops, color,
        step, sigma, blur_radius, lim, size, ty, tu, tv;
} program_t;

/* A `shader` op's program pair (unclipped, clipped) for one loop count: compiled before frame 0. */
typedef struct {
    int loops;
    program_t prog[2];
} effect_t;

typedef struct node {
    int op;
    num x, y, w, h, dx, dy, count, radius;
    /* gradients (x0, y0, x1, y1; radial: cx, cy, r in x0, y0, x1), shadow and backdrop blur, border width,
     * text size, max_width and line_height, layer opacity */
    num x0, y0, x1, y1, blur, width, size, max_width, line_height, opacity;
    int has_max_width, has_line_height;
    int n_stops;
    num stop_pos[MAX_STOPS];
    unsigned char stop_color[MAX_STOPS][4];
    /* text */
    char *text;
    int font, templated;
    /* shader */
    int fetches, dependent;
    effect_t *effects;
    int n_effects;
    /* video: the planes of its 4 frames, and the three textures updated from them every frame */
    unsigned char *planes;
    GLuint video_tex[3];
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
    int i; /* the innermost repeat's index, for text's {i} */
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
    EGLDisplay display;
    EGLContext context;
    EGLSurface surface;
    int opened;
    GLuint fbo, color_tex;
    int width, height;
    /* Per kind of draw (shaders.h), [0] without a clip, [1] with one: most draws are unclipped, and an emulated
     * or software GPU runs the clip's per-pixel scan conversion for every fragment it shades. */
    program_t prog[ZB_KINDS][2];
    int mediump; /* ZBENCH_FRAGMENT_PRECISION=mediump: every fragment shader at mediump */
    /* The framebuffer drawn into (the surface's, or a layer's) and the viewport's size (a scratch pass's) */
    GLuint target;
    int vp_w, vp_h;
    /* Layers: one full-size target per nesting depth, made when first needed */
    GLuint layer_fbo[MAX_LAYERS], layer_tex[MAX_LAYERS];
    int depth;
    /* Two scratch targets for blur passes, grown to the largest region blurred */
    GLuint scratch_fbo[2], scratch_tex[2];
    int scratch_w, scratch_h;
    GLuint noise_tex; /* the `shader` op's 64 x 64 noise, seed 0 */
    zb_text *text;
    int sans_font, cjk_font;
    zb_text_vertex *text_vertices;
    size_t text_cap;
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

/* An optional number: absent or null leaves *has 0. */
static int opt_num(compile_ctx *c, const zj_value *op, const char *path, const char *key, num *out, int *has) {
    const zj_value *v = zj_get(op, key);
    *has = v && v->type != ZJ_NULL;
    memset(out, 0, sizeof *out);
    return *has ? get_num(c, op, path, key, 0, out) : 0;
}

static int get_stops(compile_ctx *c, const zj_value *op, const char *path, node *n) {
    const zj_value *stops = zj_get(op, "stops");
    if (!stops || stops->type != ZJ_ARRAY || stops->len == 0) return bad(c, path, "stops", "needs a non-empty list of [pos, colour] stops");
    if (stops->len > MAX_STOPS) {
        snprintf(c->err, c->errlen, "%s (a gradient of more than %d stops)", "linear_gradient", MAX_STOPS);
        c->code = ZK_EXIT_SKIPPED;
        return -1;
    }
    char sub[512];
    join(sub, sizeof sub, path, ".stops");
    for (const zj_value *e = stops->first; e; e = e->next) {
        if (e->type != ZJ_ARRAY || e->len != 2) return bad(c, sub, "stop", "every stop must be [pos, colour]");
        zj_value holder = {0}, pos = *e->first, color = *e->first->next;
        holder.type = ZJ_OBJECT;
        pos.key = (char *)"pos"; color.key = (char *)"color";
        pos.next = &color; color.next = NULL;
        holder.first = &pos;
        if (get_num(c, &holder, sub, "pos", 0, &n->stop_pos[n->n_stops]) || get_color(c, &holder, sub, "color", n->stop_color[n->n_stops]))
            return -1;
        n->n_stops++;
    }
    return 0;
}

static void checker(unsigned char *p, int w, int h) {
    static const unsigned char colors[2][4] = {{0x20, 0x50, 0xA0, 0xFF}, {0xF0, 0xC0, 0x40, 0xFF}};
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) memcpy(p + ((size_t)y * w + x) * 4, colors[(x / CHECKER_CELL + y / CHECKER_CELL) % 2], 4);
}

static int compile_ops(compile_ctx *c, const zj_value *ops, const char *path, node **out, int *n_out, int depth);

/* One frame of a video op's three planes, in bytes. */
static size_t video_bytes(const node *d) {
    size_t cw = d->tex_w / 2 > 1 ? (size_t)d->tex_w / 2 : 1, ch = d->tex_h / 2 > 1 ? (size_t)d->tex_h / 2 : 1;
    return (size_t)d->tex_w * d->tex_h + 2 * cw * ch;
}

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
    if (strcmp(o, "rrect") == 0 || strcmp(o, "border") == 0 || strcmp(o, "shadow") == 0) {
        n->op = o[0] == 'r' ? OP_RRECT : o[0] == 'b' ? OP_BORDER : OP_SHADOW;
        if (get_num(c, op, path, "x", 0, &n->x) || get_num(c, op, path, "y", 0, &n->y) || get_num(c, op, path, "w", 0, &n->w) ||
            get_num(c, op, path, "h", 0, &n->h) || get_num(c, op, path, "radius", 0, &n->radius) || get_color(c, op, path, "color", n->color))
            return -1;
        if (n->op == OP_BORDER && get_num(c, op, path, "width", 0, &n->width)) return -1;
        if (n->op == OP_SHADOW && (get_num(c, op, path, "blur", 0, &n->blur) || get_num(c, op, path, "dx", 0, &n->dx) ||
                                   get_num(c, op, path, "dy", 0, &n->dy)))
            return -1;
        return 0;
    }
    if (strcmp(o, "linear_gradient") == 0 || strcmp(o, "radial_gradient") == 0) {
        int linear = o[0] == 'l';
        n->op = linear ? OP_LINEAR : OP_RADIAL;
        if (get_num(c, op, path, "x", 0, &n->x) || get_num(c, op, path, "y", 0, &n->y) || get_num(c, op, path, "w", 0, &n->w) ||
            get_num(c, op, path, "h", 0, &n->h))
            return -1;
        if (linear ? get_num(c, op, path, "x0", 0, &n->x0) || get_num(c, op, path, "y0", 0, &n->y0) || get_num(c, op, path, "x1", 0, &n->x1) ||
                         get_num(c, op, path, "y1", 0, &n->y1)
                   : get_num(c, op, path, "cx", 0, &n->x0) || get_num(c, op, path, "cy", 0, &n->y0) || get_num(c, op, path, "r", 0, &n->x1))
            return -1;
        return get_stops(c, op, path, n);
    }
    if (strcmp(o, "backdrop_blur") == 0) {
        n->op = OP_BACKDROP;
        return get_num(c, op, path, "x", 0, &n->x) || get_num(c, op, path, "y", 0, &n->y) || get_num(c, op, path, "w", 0, &n->w) ||
                       get_num(c, op, path, "h", 0, &n->h) || get_num(c, op, path, "blur", 0, &n->blur)
                   ? -1
                   : 0;
    }
    if (strcmp(o, "text") == 0) {
        n->op = OP_TEXT;
        static const char *const fonts[] = {"sans", "cjk", NULL};
        if (get_num(c, op, path, "x", 0, &n->x) || get_num(c, op, path, "y", 0, &n->y) || get_num(c, op, path, "size", 0, &n->size) ||
            get_color(c, op, path, "color", n->color) || opt_num(c, op, path, "max_width", &n->max_width, &n->has_max_width) ||
            opt_num(c, op, path, "line_height", &n->line_height, &n->has_line_height))
            return -1;
        const zj_value *f = zj_get(op, "font");
        if (f && f->type != ZJ_NULL && get_choice(c, op, path, "font", fonts, &n->font)) return -1;
        const zj_value *t = zj_get(op, "text");
        if (!t || t->type != ZJ_STRING) return bad(c, path, "text", "must be a string");
        n->text = strdup(t->string);
        if (!n->text) return bad(c, path, "text", "out of memory");
        n->templated = strstr(n->text, "{frame}") || strstr(n->text, "{i}");
        return 0;
    }
    if (strcmp(o, "shader") == 0) {
        n->op = OP_SHADER;
        static const char *const reads[] = {"independent", "dependent", NULL};
        if (get_num(c, op, path, "x", 0, &n->x) || get_num(c, op, path, "y", 0, &n->y) || get_num(c, op, path, "w", 0, &n->w) ||
            get_num(c, op, path, "h", 0, &n->h) || get_num(c, op, path, "loops", 1, &n->count) ||
            get_int(c, op, path, "fetches", 0, MAX_FETCHES, &n->fetches))
            return -1;
        if (n->count.kind != N_COMPLEXITY && (n->count.kind != N_CONST || n->count.a != floor(n->count.a) || n->count.a < 0 || n->count.a > MAX_LOOPS))
            return bad(c, path, "loops", "must be an integer in 0..1024 or \"complexity\"");
        const zj_value *r = zj_get(op, "reads");
        if (r && r->type != ZJ_NULL && get_choice(c, op, path, "reads", reads, &n->dependent)) return -1;
        return 0;
    }
    if (strcmp(o, "video") == 0) {
        n->op = OP_VIDEO;
        if (get_num(c, op, path, "x", 0, &n->x) || get_num(c, op, path, "y", 0, &n->y) || get_num(c, op, path, "w", 0, &n->w) ||
            get_num(c, op, path, "h", 0, &n->h) || get_int(c, op, path, "tex_w", 1, ZK_MAX_SIDE, &n->tex_w) ||
            get_int(c, op, path, "tex_h", 1, ZK_MAX_SIDE, &n->tex_h))
            return -1;
        const zj_value *seed = zj_get(op, "seed");
        if (!seed || !seed->is_integer || seed->integer < 0) return bad(c, path, "seed", "must be a non-negative integer");
        size_t frame = video_bytes(n);
        n->planes = malloc(frame * ZB_VIDEO_FRAMES);
        if (!n->planes) return bad(c, path, "tex_w", "video planes too large for memory");
        size_t luma = (size_t)n->tex_w * n->tex_h, chroma = (frame - luma) / 2;
        for (int k = 0; k < ZB_VIDEO_FRAMES; k++) {
            unsigned char *y = n->planes + frame * k;
            zb_video_planes(n->tex_w, n->tex_h, (uint64_t)seed->integer, k, y, y + luma, y + luma + chroma);
        }
        return 0;
    }
    if (strcmp(o, "layer") == 0) {
        n->op = OP_LAYER;
        if (get_num(c, op, path, "opacity", 0, &n->opacity)) return -1;
    } else if (strcmp(o, "repeat") == 0 || strcmp(o, "group") == 0) {
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
        num *nums[] = {&d->x, &d->y, &d->w, &d->h, &d->dx, &d->dy, &d->count, &d->radius, &d->x0, &d->y0, &d->x1, &d->y1,
                       &d->blur, &d->width, &d->size, &d->max_width, &d->line_height, &d->opacity};
        for (size_t k = 0; k < sizeof nums / sizeof *nums; k++) free(nums[k]->values);
        for (int k = 0; k < d->n_stops; k++) free(d->stop_pos[k].values);
        free(d->text);
        free(d->planes);
        for (int k = 0; k < 3; k++)
            if (d->video_tex[k]) glDeleteTextures(1, &d->video_tex[k]);
        for (int k = 0; k < d->n_effects; k++)
            for (int v = 0; v < 2; v++)
                if (d->effects[k].prog[v].id) glDeleteProgram(d->effects[k].prog[v].id);
        free(d->effects);
        for (int k = 0; k < d->n_points; k++) { free(d->px[k].values); free(d->py[k].values); }
        free(d->px);
        free(d->py);
        free_nodes(d->kids, d->n_kids);
    }
    free(nodes);
}

/* ------------------------------------------------------------------------------------------- GL */

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

static GLuint program(int kind, int clipped, int mediump, int loops, int fetches, int dependent, char *err, size_t errlen) {
    char *fs_src = zb_fragment_source(kind, clipped, mediump, loops, fetches, dependent);
    if (!fs_src) { snprintf(err, errlen, "out of memory"); return 0; }
#ifdef ZBENCH_GLES2_BROKEN_SHADER
    /* A test build (tests/native): the textured programs' fragment shader does not compile on the real driver,
     * so that a shader failure is reported per frame and the run goes on. */
    if (kind == ZB_TEX) {
        char *broken = realloc(fs_src, strlen(fs_src) + 32);
        if (broken) { fs_src = broken; strcat(fs_src, "\nthis is not GLSL;\n"); }
    }
#endif
    GLuint vs = shader(GL_VERTEX_SHADER, ZB_VERTEX_SHADER, err, errlen), fs = vs ? shader(GL_FRAGMENT_SHADER, fs_src, err, errlen) : 0;
    free(fs_src);
    if (!vs || !fs) {  /* the run goes on without this program: leave nothing of it behind */
        if (vs) glDeleteShader(vs);
        return 0;
    }
    GLuint p = glCreateProgram();
    glAttachShader(p, vs);
    glAttachShader(p, fs);
    glBindAttribLocation(p, 0, "a_pos");
    glBindAttribLocation(p, 1, "a_attr");
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

/* A program's uniforms (-1 for those its kind does not have) and its samplers' units. */
static void locate(program_t *p) {
    struct { GLint *loc; const char *name; } u[] = {
        {&p->scale, "u_scale"}, {&p->shape, "u_shape"}, {&p->clip, "u_clip"}, {&p->rr, "u_rr"}, {&p->rr_radius, "u_rr_radius"},
        {&p->npoly, "u_npoly"}, {&p->poly, "u_poly"}, {&p->tex, "u_tex"}, {&p->premul, "u_premul"}, {&p->alpha, "u_alpha"},
        {&p->radius, "u_radius"}, {&p->stroke, "u_stroke"}, {&p->geom, "u_geom"}, {&p->col, "u_col"}, {&p->pos, "u_pos"},
        {&p->nstops, "u_nstops"}, {&p->color, "u_color"}, {&p->step, "u_step"}, {&p->sigma, "u_sigma"},
        {&p->blur_radius, "u_radius"}, {&p->lim, "u_lim"}, {&p->size, "u_size"}, {&p->ty, "u_y"}, {&p->tu, "u_u"}, {&p->tv, "u_v"},
    };
    for (size_t i = 0; i < sizeof u / sizeof *u; i++) *u[i].loc = glGetUniformLocation(p->id, u[i].name);
    glUseProgram(p->id);
    if (p->tex >= 0) glUniform1i(p->tex, 0);
    if (p->ty >= 0) glUniform1i(p->ty, 0);
    if (p->tu >= 0) glUniform1i(p->tu, 1);
    if (p->tv >= 0) glUniform1i(p->tv, 2);
    if (p->alpha >= 0) glUniform1f(p->alpha, 1.0f);
}

/* Compiles a program pair; a failure is remembered for the frames that need it (e_frame_issue), not fatal. */
static void make_pair(engine *g, program_t pair[2], int kind, int loops, int fetches, int dependent) {
    for (int clipped = 0; clipped < 2; clipped++) {
        char err[256] = "";
        program_t *p = &pair[clipped];
        memset(p, 0, sizeof *p);
        p->id = program(kind, clipped, g->mediump, loops, fetches, dependent, err, sizeof err);
        if (!p->id) {
            /* Not a crash: the draws that need it are left out and each frame that needed it reports a
             * `shader` issue (e_frame_issue), as glGetError's are. */
            if (!g->shader_failure[0])
                snprintf(g->shader_failure, sizeof g->shader_failure, "%s %s program: %s", zb_kind_names[kind],
                         clipped ? "clipped" : "unclipped", err);
            while (glGetError() != GL_NO_ERROR) {}
            continue;
        }
        locate(p);
    }
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
    /* ZBENCH_FRAGMENT_PRECISION=mediump (docs/native-runner.md): every fragment shader at mediump, as on a GPU
     * without highp in fragment shaders; anything else but unset or "default" is refused. */
    const char *precision = getenv("ZBENCH_FRAGMENT_PRECISION");
    if (precision && *precision && strcmp(precision, "default") != 0) {
        if (strcmp(precision, "mediump") != 0) {
            snprintf(err, errlen, "ZBENCH_FRAGMENT_PRECISION=%s: must be mediump or default", precision);
            return -1;
        }
        g->mediump = 1;
    }
    for (int kind = 0; kind < ZB_KINDS; kind++)
        if (kind != ZB_EFFECT) make_pair(g, g->prog[kind], kind, 0, 0, 0);
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
    /* The precision its fragment shaders run at: mediump when ZBENCH_FRAGMENT_PRECISION asks for it or the
     * device's fragment shaders have no highp (the shaders' #ifdef GL_FRAGMENT_PRECISION_HIGH falls back). */
    GLint range[2] = {0, 0}, precision = 0;
    glGetShaderPrecisionFormat(GL_FRAGMENT_SHADER, GL_HIGH_FLOAT, range, &precision);
    zk_buf_add(b, ", \"fragment_precision\": \"%s\"", g->mediump || precision == 0 ? "mediump" : "highp");
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
            if (d->op == OP_SHADER && top > MAX_LOOPS) { snprintf(err, errlen, "%s.loops: complexity %.0f is more than %d loops", sub, top, MAX_LOOPS); return -1; }
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
            frame_state st = {(int)f, job->complexity[f], 0, 0, NULL, 0};
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

/* The `shader` op's programs, one pair per loop count the job draws (docs/display-list.md "Complexity": built
 * before frame 0, each with its constant loop bound), the noise texture they read, and the video textures. */
static effect_t *effect_for(engine *g, node *d, int loops) {
    for (int i = 0; i < d->n_effects; i++)
        if (d->effects[i].loops == loops) return &d->effects[i];
    if (!d->effects) d->effects = calloc(MAX_EFFECTS, sizeof *d->effects);
    if (!d->effects) return NULL;
    /* An animated loop count the job's list did not hold: the oldest program is replaced. */
    effect_t *e = d->n_effects < MAX_EFFECTS ? &d->effects[d->n_effects++] : &d->effects[loops % MAX_EFFECTS];
    for (int v = 0; v < 2; v++)
        if (e->prog[v].id) glDeleteProgram(e->prog[v].id);
    e->loops = loops;
    make_pair(g, e->prog, ZB_EFFECT, loops, d->fetches, d->dependent);
    return e;
}

static int prepare_effects(engine *g, node *nodes, int n, const zk_job *job) {
    for (int i = 0; i < n; i++) {
        node *d = &nodes[i];
        if (prepare_effects(g, d->kids, d->n_kids, job)) return -1;
        if (d->op == OP_SHADER) {
            if (d->count.kind == N_COMPLEXITY) {
                for (size_t f = 0; f < job->n_complexity; f++) {
                    frame_state st = {(int)f, job->complexity[f], 0, 0, NULL, 0};
                    int loops = count_of(&d->count, &st);
                    if (!effect_for(g, d, loops > MAX_LOOPS ? MAX_LOOPS : loops)) return -1;
                }
            } else if (!effect_for(g, d, (int)d->count.a)) {
                return -1;
            }
            if (!g->noise_tex) {
                unsigned char noise[64 * 64 * 4];
                zb_noise_rgba(noise, 64, 64, 0);
                glGenTextures(1, &g->noise_tex);
                glBindTexture(GL_TEXTURE_2D, g->noise_tex);
                glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA, 64, 64, 0, GL_RGBA, GL_UNSIGNED_BYTE, noise);
                glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
                glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
                glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_REPEAT);
                glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_REPEAT);
            }
        }
        if (d->op == OP_VIDEO) {
            int cw = d->tex_w / 2 > 1 ? d->tex_w / 2 : 1, ch = d->tex_h / 2 > 1 ? d->tex_h / 2 : 1;
            glGenTextures(3, d->video_tex);
            for (int k = 0; k < 3; k++) {
                glBindTexture(GL_TEXTURE_2D, d->video_tex[k]);
                glTexImage2D(GL_TEXTURE_2D, 0, GL_LUMINANCE, k ? cw : d->tex_w, k ? ch : d->tex_h, 0, GL_LUMINANCE, GL_UNSIGNED_BYTE, NULL);
                glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
                glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
                glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
                glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
            }
        }
    }
    return 0;
}

static void text_needs(const node *nodes, int n, int *sans, int *cjk) {
    for (int i = 0; i < n; i++) {
        if (nodes[i].op == OP_TEXT) *(nodes[i].font ? cjk : sans) = 1;
        text_needs(nodes[i].kids, nodes[i].n_kids, sans, cjk);
    }
}

/* The glyph atlas and the fonts the scene's text needs. Without DejaVu Sans or a CJK font the launch fails
 * naming the files looked for: a fallback would draw other glyphs than the goldens hold. */
static int prepare_text(engine *g, node *nodes, int n, char *err, size_t errlen) {
    int sans = 0, cjk = 0;
    text_needs(nodes, n, &sans, &cjk);
    if (!sans && !cjk) return 0;
    if (!g->text && !(g->text = zb_text_new(err, errlen))) return -1;
    char why[400];
    if (sans && g->sans_font < 0 && (g->sans_font = zb_text_font(g->text, SANS_FONTS, why, sizeof why)) < 0) {
        snprintf(err, errlen, "text: DejaVu Sans is missing (%s)", why);
        return -1;
    }
    if (cjk && g->cjk_font < 0) {
        const char *env = getenv("ZBENCH_CJK_FONT");
        const char *const paths[] = {env ? env : "", "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
                                     "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc", NULL};
        if ((g->cjk_font = zb_text_font(g->text, paths, why, sizeof why)) < 0) {
            snprintf(err, errlen, "text (font: cjk): no CJK font (%s); install fonts-wqy-zenhei or name one in ZBENCH_CJK_FONT", why);
            return -1;
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
    g->target = g->fbo;
    g->vp_w = g->width;
    g->vp_h = g->height;
    if (prepare_effects(g, g->root, g->n_root, job) || prepare_text(g, g->root, g->n_root, err, errlen)) {
        if (!err[0]) snprintf(err, errlen, "out of memory preparing the scene's programs");
        return ZK_EXIT_FAILED;
    }
    glEnable(GL_BLEND);
    upload_once(g->root, g->n_root); /* before frame 0, counted in the first frame that draws it */
    prebuild(g->root, g->n_root, job);
    while (glGetError() != GL_NO_ERROR) {}
    return 0;
}

/* The program of a pair for a draw (the clipped variant only when a clip is in force), made current with the
 * clip and the viewport's scale. A scratch pass (offscreen) is never clipped: the clip applies when its
 * result is drawn into the target. */
static program_t *use_pair(engine *g, program_t pair[2], int offscreen) {
    clip_state *c = &g->clip;
    int clipped = !offscreen && (c->has_rrect || c->n_poly || c->x0 > 0 || c->y0 > 0 || c->x1 < g->width || c->y1 < g->height);
    program_t *p = &pair[clipped];
    if (!p->id) {
        g->frame_needed_failed_program = 1;
        return NULL;
    }
    glUseProgram(p->id);
    glUniform2f(p->scale, 2.0f / (float)g->vp_w, 2.0f / (float)g->vp_h);
    if (offscreen) return p;
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

static program_t *use_program(engine *g, int kind) { return use_pair(g, g->prog[kind], 0); }

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
    program_t *p = use_program(g, ZB_SOLID);
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

/* ------------------------------------------------------------------------------ shapes, text, effects */

/* Draws n vertices of x, y, then a 2-component attribute (texture or local coordinates) with the bound program. */
static void draw_xyuv(engine *g, const float *v, int n) {
    glBindBuffer(GL_ARRAY_BUFFER, 0);
    glEnableVertexAttribArray(0);
    glEnableVertexAttribArray(1);
    glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 4 * sizeof(float), v);
    glVertexAttribPointer(1, 2, GL_FLOAT, GL_FALSE, 4 * sizeof(float), v + 2);
    glDrawArrays(GL_TRIANGLES, 0, n);
    *g->vertices += n;
}

static void quad_uv(engine *g, float x0, float y0, float x1, float y1, float u0, float v0, float u1, float v1) {
    float v[24] = {x0, y0, u0, v0, x1, y0, u1, v0, x0, y1, u0, v1, x1, y0, u1, v0, x1, y1, u1, v1, x0, y1, u0, v1};
    draw_xyuv(g, v, 6);
}

/* A quad of colour c (premultiplied) over the pixels the box touches, for a shader that computes coverage. */
static void quad_color(engine *g, double x0, double y0, double x1, double y1, const unsigned char c[4]) {
    float fx0 = (float)floor(x0), fy0 = (float)floor(y0), fx1 = (float)ceil(x1), fy1 = (float)ceil(y1);
    vertex v[6] = {{fx0, fy0, {0}}, {fx1, fy0, {0}}, {fx0, fy1, {0}}, {fx1, fy0, {0}}, {fx1, fy1, {0}}, {fx0, fy1, {0}}};
    for (int i = 0; i < 6; i++) memcpy(v[i].c, c, 4);
    glBindBuffer(GL_ARRAY_BUFFER, 0);
    glEnableVertexAttribArray(0);
    glEnableVertexAttribArray(1);
    glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, sizeof(vertex), v);
    glVertexAttribPointer(1, 4, GL_UNSIGNED_BYTE, GL_TRUE, sizeof(vertex), (const char *)v + offsetof(vertex, c));
    glDrawArrays(GL_TRIANGLES, 0, 6);
    *g->vertices += 6;
}

static void premul_f(const unsigned char c[4], float out[4]) {
    unsigned char p[4];
    premul(c, p);
    for (int k = 0; k < 4; k++) out[k] = p[k] / 255.0f;
}

/* A rounded rect filled (stroke 0) or stroked, its radius held to half the shorter side (Skia's RRect). */
static void draw_rrect(engine *g, double x, double y, double w, double h, double r, double stroke, const unsigned char color[4], int offscreen) {
    double x0 = w < 0 ? x + w : x, x1 = w < 0 ? x : x + w, y0 = h < 0 ? y + h : y, y1 = h < 0 ? y : y + h;
    r = fmax(0.0, fmin(r, fmin(x1 - x0, y1 - y0) / 2));
    program_t *p = use_pair(g, g->prog[ZB_RRECT], offscreen);
    if (!p) return;
    glUniform4f(p->shape, (float)x0, (float)y0, (float)x1, (float)y1);
    glUniform1f(p->radius, (float)r);
    glUniform1f(p->stroke, (float)stroke);
    unsigned char c[4];
    premul(color, c);
    double grow = stroke / 2 + 1;
    quad_color(g, x0 - grow, y0 - grow, x1 + grow, y1 + grow, c);
}

static void draw_gradient(engine *g, node *d, frame_state *st) {
    double x = eval(&d->x, st) + st->tx, y = eval(&d->y, st) + st->ty, w = eval(&d->w, st), h = eval(&d->h, st);
    double x0 = w < 0 ? x + w : x, x1 = w < 0 ? x : x + w, y0 = h < 0 ? y + h : y, y1 = h < 0 ? y : y + h;
    program_t *p = use_program(g, d->op == OP_LINEAR ? ZB_LINEAR : ZB_RADIAL);
    if (!p) return;
    glUniform4f(p->shape, (float)x0, (float)y0, (float)x1, (float)y1);
    if (d->op == OP_LINEAR)
        glUniform4f(p->geom, (float)(eval(&d->x0, st) + st->tx), (float)(eval(&d->y0, st) + st->ty), (float)(eval(&d->x1, st) + st->tx),
                    (float)(eval(&d->y1, st) + st->ty));
    else
        glUniform4f(p->geom, (float)(eval(&d->x0, st) + st->tx), (float)(eval(&d->y0, st) + st->ty), (float)eval(&d->x1, st), 0.0f);
    float col[MAX_STOPS * 4] = {0}, pos[MAX_STOPS] = {0};
    for (int i = 0; i < d->n_stops; i++) {
        for (int k = 0; k < 4; k++) col[i * 4 + k] = d->stop_color[i][k] / 255.0f;
        pos[i] = (float)eval(&d->stop_pos[i], st);
    }
    glUniform4fv(p->col, MAX_STOPS, col);
    glUniform4fv(p->pos, 2, pos);
    glUniform1i(p->nstops, d->n_stops);
    static const unsigned char white[4] = {255, 255, 255, 255};
    quad_color(g, x0, y0, x1, y1, white);
}

/* The two scratch targets, at least w x h. */
static int ensure_scratch(engine *g, int w, int h) {
    if (g->scratch_tex[0] && w <= g->scratch_w && h <= g->scratch_h) return 0;
    int sw = w > g->scratch_w ? w : g->scratch_w, sh = h > g->scratch_h ? h : g->scratch_h;
    for (int k = 0; k < 2; k++) {
        if (!g->scratch_tex[k]) { glGenTextures(1, &g->scratch_tex[k]); glGenFramebuffers(1, &g->scratch_fbo[k]); }
        glBindTexture(GL_TEXTURE_2D, g->scratch_tex[k]);
        glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA, sw, sh, 0, GL_RGBA, GL_UNSIGNED_BYTE, NULL);
        /* Linear: a blur pass reads two texels at once (shaders.c); a read at a texel's centre is that texel. */
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
        glBindFramebuffer(GL_FRAMEBUFFER, g->scratch_fbo[k]);
        glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, g->scratch_tex[k], 0);
        if (glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE) return -1;
    }
    g->scratch_w = sw;
    g->scratch_h = sh;
    glBindFramebuffer(GL_FRAMEBUFFER, g->target);
    return 0;
}

/* Draws into scratch k (its pixel (i, j) is the scene's (ox + i, oy + j)), or back into the target. */
static void bind_scratch(engine *g, int k, int rw, int rh) {
    /* A scratch pass replaces what the region held (blending would add the last blur's pixels to it). */
    glDisable(GL_BLEND);
    glBindFramebuffer(GL_FRAMEBUFFER, g->scratch_fbo[k]);
    glViewport(0, 0, g->scratch_w, g->scratch_h);
    g->vp_w = g->scratch_w;
    g->vp_h = g->scratch_h;
    glScissor(0, 0, rw, rh);
}

static void bind_target(engine *g) {
    glEnable(GL_BLEND);
    glBindFramebuffer(GL_FRAMEBUFFER, g->target);
    glViewport(0, 0, g->width, g->height);
    g->vp_w = g->width;
    g->vp_h = g->height;
}

/* One Gaussian pass reading scratch `from` over a rw x rh region along (sx, sy) texels, tinted by color,
 * drawn over the scratch-local box (x0, y0, x1, y1) at scene offset (ox, oy), AA-boxed by shape (scene
 * coordinates) when drawn into the target. */
static void blur_pass(engine *g, int from, int offscreen, double sigma, int radius, int rw, int rh, double ox, double oy, float sx, float sy,
                      const float color[4], const float shape[4], double x0, double y0, double x1, double y1) {
    program_t *p = use_pair(g, g->prog[ZB_BLUR], offscreen);
    if (!p) return;
    float SW = (float)g->scratch_w, SH = (float)g->scratch_h;
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, g->scratch_tex[from]);
    glUniform2f(p->step, sx / SW, sy / SH);
    glUniform1f(p->sigma, (float)sigma);
    glUniform1f(p->blur_radius, (float)radius);
    glUniform4f(p->color, color[0], color[1], color[2], color[3]);
    glUniform4f(p->shape, shape[0], shape[1], shape[2], shape[3]);
    glUniform4f(p->lim, 0.5f / SW, 0.5f / SH, ((float)rw - 0.5f) / SW, ((float)rh - 0.5f) / SH);
    /* Positions are the viewport's (scratch-local offscreen, scene in the target); uv always scratch-local. */
    double px = offscreen ? 0 : ox, py = offscreen ? 0 : oy;
    quad_uv(g, (float)(x0 + px), (float)(y0 + py), (float)(x1 + px), (float)(y1 + py), (float)(x0 / SW), (float)(y0 / SH), (float)(x1 / SW),
            (float)(y1 / SH));
}

static const float ONES[4] = {1, 1, 1, 1};
static const float NO_BOX[4] = {-1e9f, -1e9f, 1e9f, 1e9f};

static int blur_radius(double sigma) {
    int r = (int)ceil(3.0 * sigma);
    return r > ZB_BLUR_MAX_RADIUS ? ZB_BLUR_MAX_RADIUS : r < 1 ? 1 : r;
}

/* shadow: the rounded rect's coverage into scratch 0, a horizontal pass into scratch 1, a vertical pass into
 * the target in the shadow's colour. */
static int draw_shadow(engine *g, node *d, frame_state *st, char *err, size_t errlen) {
    double x = eval(&d->x, st) + st->tx + eval(&d->dx, st), y = eval(&d->y, st) + st->ty + eval(&d->dy, st);
    double w = eval(&d->w, st), h = eval(&d->h, st), r = eval(&d->radius, st), blur = eval(&d->blur, st);
    set_blend(g, BLEND_SRC_OVER);
    if (!(blur > 0)) { draw_rrect(g, x, y, w, h, r, 0, d->color, 0); return 0; }
    double sigma = blur / 2;
    int radius = blur_radius(sigma), margin = radius + 2;
    /* The reference's blurred rounded rect covers its bounds rounded out to whole pixels (Skia's nine-patch
     * blur of a rounded rect; measured on shadow.blur2, whose shadows lie at y + 0.8). */
    double bx0 = floor(fmin(x, x + w)), by0 = floor(fmin(y, y + h)), bx1 = ceil(fmax(x, x + w)), by1 = ceil(fmax(y, y + h));
    x = bx0; y = by0; w = bx1 - bx0; h = by1 - by0;
    /* The region blurred: the shape and its margin, inside the surface grown by the margin. */
    double ox = floor(fmax(bx0 - margin, -margin)), oy = floor(fmax(by0 - margin, -margin));
    double ex = ceil(fmin(bx1 + margin, g->width + margin)), ey = ceil(fmin(by1 + margin, g->height + margin));
    int rw = (int)(ex - ox), rh = (int)(ey - oy);
    if (rw <= 0 || rh <= 0) return 0;
    if (ensure_scratch(g, rw, rh)) { snprintf(err, errlen, "the %dx%d blur targets are incomplete", rw, rh); return -1; }
    static const unsigned char white[4] = {255, 255, 255, 255};
    bind_scratch(g, 0, rw, rh);
    glClearColor(0, 0, 0, 0);
    glClear(GL_COLOR_BUFFER_BIT);
    draw_rrect(g, x - ox, y - oy, w, h, r, 0, white, 1);
    bind_scratch(g, 1, rw, rh);
    blur_pass(g, 0, 1, sigma, radius, rw, rh, ox, oy, 1, 0, ONES, NO_BOX, 0, 0, rw, rh);
    bind_target(g);
    float color[4];
    premul_f(d->color, color);
    blur_pass(g, 1, 0, sigma, radius, rw, rh, ox, oy, 0, 1, color, NO_BOX, 0, 0, rw, rh);
    return 0;
}

/* backdrop_blur: what the target holds around the rect (the rect grown by the blur's reach, inside the
 * surface, its edge repeated beyond) blurred twice and drawn back over the anti-aliased rect. */
static int draw_backdrop(engine *g, node *d, frame_state *st, char *err, size_t errlen) {
    double x = eval(&d->x, st) + st->tx, y = eval(&d->y, st) + st->ty, w = eval(&d->w, st), h = eval(&d->h, st), blur = eval(&d->blur, st);
    if (!(blur > 0)) return 0;
    double sigma = blur / 2;
    int radius = blur_radius(sigma);
    double bx0 = fmin(x, x + w), by0 = fmin(y, y + h), bx1 = fmax(x, x + w), by1 = fmax(y, y + h);
    int ox = (int)floor(fmax(bx0 - radius, 0)), oy = (int)floor(fmax(by0 - radius, 0));
    int ex = (int)ceil(fmin(bx1 + radius, g->width)), ey = (int)ceil(fmin(by1 + radius, g->height));
    int rw = ex - ox, rh = ey - oy;
    if (rw <= 0 || rh <= 0) return 0;
    if (ensure_scratch(g, rw, rh)) { snprintf(err, errlen, "the %dx%d blur targets are incomplete", rw, rh); return -1; }
    glBindFramebuffer(GL_FRAMEBUFFER, g->target);
    glBindTexture(GL_TEXTURE_2D, g->scratch_tex[0]);
    glCopyTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, ox, oy, rw, rh);
    set_blend(g, BLEND_SRC_OVER);
    bind_scratch(g, 1, rw, rh);
    glClearColor(0, 0, 0, 0);
    glClear(GL_COLOR_BUFFER_BIT);
    blur_pass(g, 0, 1, sigma, radius, rw, rh, ox, oy, 1, 0, ONES, NO_BOX, 0, 0, rw, rh);
    bind_target(g);
    float shape[4] = {(float)bx0, (float)by0, (float)bx1, (float)by1};
    blur_pass(g, 1, 0, sigma, radius, rw, rh, ox, oy, 0, 1, ONES, shape, floor(bx0) - ox, floor(by0) - oy, ceil(bx1) - ox, ceil(by1) - oy);
    return 0;
}

/* A text op's string in this frame: {frame} and {i} replaced (runner/interpreter.py `_substitute`). */
static char *substitute(const char *text, const frame_state *st) {
    char frame[24], index[24];
    snprintf(frame, sizeof frame, "%d", st->frame);
    snprintf(index, sizeof index, "%d", st->i);
    size_t cap = strlen(text) * 4 + 64, n = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    for (const char *p = text; *p;) {
        const char *rep = !strncmp(p, "{frame}", 7) ? frame : !strncmp(p, "{i}", 3) ? index : NULL;
        size_t skip = rep ? (rep == frame ? 7 : 3) : 1, add = rep ? strlen(rep) : 1;
        if (n + add + 1 > cap) {
            char *grown = realloc(out, cap * 2 + add);
            if (!grown) { free(out); return NULL; }
            out = grown;
            cap = cap * 2 + add;
        }
        memcpy(out + n, rep ? rep : p, add);
        n += add;
        p += skip;
    }
    out[n] = 0;
    return out;
}

static int draw_text(engine *g, node *d, frame_state *st, char *err, size_t errlen) {
    double size = eval(&d->size, st);
    if (!(size > 0)) return 0;
    char *owned = d->templated ? substitute(d->text, st) : NULL;
    const char *s = d->templated ? owned : d->text;
    if (!s) { snprintf(err, errlen, "out of memory for text"); return -1; }
    size_t len = strlen(s), need = len * 6 + 6;
    if (need > g->text_cap) {
        zb_text_vertex *v = realloc(g->text_vertices, need * sizeof *v);
        if (!v) { free(owned); snprintf(err, errlen, "out of memory for text"); return -1; }
        g->text_vertices = v;
        g->text_cap = need;
    }
    int font = d->font ? g->cjk_font : g->sans_font;
    double x = eval(&d->x, st) + st->tx, y = eval(&d->y, st) + st->ty;
    double step = d->has_line_height ? eval(&d->line_height, st) : 1.2 * size;
    static size_t starts[MAX_LINES], lengths[MAX_LINES];
    int lines = zb_text_wrap(g->text, font, size, s, d->has_max_width ? eval(&d->max_width, st) : -1, starts, lengths, MAX_LINES);
    program_t *p = use_program(g, ZB_TEXT);
    if (!p) { free(owned); return 0; }
    set_blend(g, BLEND_SRC_OVER);
    float color[4];
    premul_f(d->color, color);
    glUniform4f(p->color, color[0], color[1], color[2], color[3]);
    glActiveTexture(GL_TEXTURE0);
    int n = 0, lum = zb_text_luminance(d->color);
    for (int l = 0; l < lines; l++) {
        if (!lengths[l]) continue;
        int added = zb_text_layout(g->text, font, size, s + starts[l], lengths[l], x, y + l * step, lum, g->text_vertices + n);
        if (added < 0) {
            /* The atlas is full: draw what it holds, empty it, lay the line out again. */
            zb_text_bind(g->text);
            if (n) draw_xyuv(g, (const float *)g->text_vertices, n);
            n = 0;
            zb_text_reset(g->text);
            added = zb_text_layout(g->text, font, size, s + starts[l], lengths[l], x, y + l * step, lum, g->text_vertices);
            if (added < 0) { free(owned); snprintf(err, errlen, "a line of text at size %g does not fit the glyph atlas", size); return -1; }
        }
        n += added;
    }
    zb_text_bind(g->text);
    if (n) draw_xyuv(g, (const float *)g->text_vertices, n);
    free(owned);
    return 0;
}

/* The `shader` op over its rect without anti-aliasing (the reference's paint has none), local coordinates
 * as the attribute. */
static void draw_effect(engine *g, node *d, frame_state *st) {
    int loops = count_of(&d->count, st);
    effect_t *e = effect_for(g, d, loops > MAX_LOOPS ? MAX_LOOPS : loops);
    if (!e) return;
    program_t *p = use_pair(g, e->prog, 0);
    if (!p) return;
    set_blend(g, BLEND_SRC_OVER);
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, g->noise_tex);
    double x = eval(&d->x, st), y = eval(&d->y, st), w = eval(&d->w, st), h = eval(&d->h, st);
    float x0 = snap(x + st->tx), y0 = snap(y + st->ty), x1 = snap(x + w + st->tx), y1 = snap(y + h + st->ty);
    quad_uv(g, x0, y0, x1, y1, x0 - (float)st->tx, y0 - (float)st->ty, x1 - (float)st->tx, y1 - (float)st->ty);
}

/* video: this frame's planes into the three textures (glTexSubImage2D, as a decoder's output would be), then
 * converted while drawn scaled into the rect; the attribute is the position in Y texels. */
static void draw_video(engine *g, node *d, frame_state *st) {
    size_t frame = video_bytes(d), luma = (size_t)d->tex_w * d->tex_h, chroma = (frame - luma) / 2;
    int cw = d->tex_w / 2 > 1 ? d->tex_w / 2 : 1, ch = d->tex_h / 2 > 1 ? d->tex_h / 2 : 1;
    const unsigned char *planes = d->planes + frame * (size_t)(st->frame % ZB_VIDEO_FRAMES);
    for (int k = 0; k < 3; k++) {
        glActiveTexture(GL_TEXTURE0 + k);
        glBindTexture(GL_TEXTURE_2D, d->video_tex[k]);
        glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, k ? cw : d->tex_w, k ? ch : d->tex_h, GL_LUMINANCE, GL_UNSIGNED_BYTE,
                        planes + (k == 0 ? 0 : luma + chroma * (size_t)(k - 1)));
    }
    glActiveTexture(GL_TEXTURE0);
    st->counts->upload_bytes += (int64_t)frame;
    program_t *p = use_program(g, ZB_VIDEO);
    if (!p) return;
    set_blend(g, BLEND_SRC_OVER);
    glUniform4f(p->size, (float)d->tex_w, (float)d->tex_h, (float)cw, (float)ch);
    double x = eval(&d->x, st), y = eval(&d->y, st), w = eval(&d->w, st), h = eval(&d->h, st);
    float x0 = snap(x + st->tx), y0 = snap(y + st->ty), x1 = snap(x + w + st->tx), y1 = snap(y + h + st->ty);
    double sx = d->tex_w / w, sy = d->tex_h / h;
    quad_uv(g, x0, y0, x1, y1, (float)((x0 - st->tx - x) * sx), (float)((y0 - st->ty - y) * sy), (float)((x1 - st->tx - x) * sx),
            (float)((y1 - st->ty - y) * sy));
}

static int draw_nodes(engine *g, node *nodes, int n, frame_state *st, int depth, char *err, size_t errlen);

/* layer: the ops drawn into a transparent full-size target of this nesting depth, composited with the
 * opacity the reference rounds to 8 bits (saveLayerAlpha). */
static int draw_layer(engine *g, node *d, frame_state *st, int depth, char *err, size_t errlen) {
    if (g->depth >= MAX_LAYERS) { snprintf(err, errlen, "layers nested more than %d deep are not drawn by this runner", MAX_LAYERS); return -1; }
    int k = g->depth;
    if (!g->layer_tex[k]) {
        glGenTextures(1, &g->layer_tex[k]);
        glBindTexture(GL_TEXTURE_2D, g->layer_tex[k]);
        glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA, g->width, g->height, 0, GL_RGBA, GL_UNSIGNED_BYTE, NULL);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
        glGenFramebuffers(1, &g->layer_fbo[k]);
        glBindFramebuffer(GL_FRAMEBUFFER, g->layer_fbo[k]);
        glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, g->layer_tex[k], 0);
        if (glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE) {
            snprintf(err, errlen, "the layer's %dx%d framebuffer is incomplete", g->width, g->height);
            return -1;
        }
    }
    GLuint saved = g->target;
    g->target = g->layer_fbo[k];
    bind_target(g);
    glScissor(0, 0, g->width, g->height);
    glClearColor(0, 0, 0, 0);
    glClear(GL_COLOR_BUFFER_BIT);
    g->depth++;
    int r = draw_nodes(g, d->kids, d->n_kids, st, depth + 1, err, errlen);
    g->depth--;
    g->target = saved;
    bind_target(g);
    if (r) return r;
    double opacity = eval(&d->opacity, st);
    float alpha = (float)nearbyint(255.0 * fmin(1.0, fmax(0.0, opacity))) / 255.0f;
    program_t *p = use_program(g, ZB_TEX);
    if (!p) return 0;
    set_blend(g, BLEND_SRC_OVER);
    glUniform1f(p->premul, 0.0f);
    glUniform1f(p->alpha, alpha);
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, g->layer_tex[k]);
    quad_uv(g, 0, 0, (float)g->width, (float)g->height, 0, 0, 1, 1);
    glUniform1f(p->alpha, 1.0f);
    return 0;
}

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
        program_t *p = use_program(g, ZB_TEX);
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
        int count = count_of(&d->count, st), outer = st->i;
        double dx = eval(&d->dx, st), dy = eval(&d->dy, st), tx = st->tx, ty = st->ty;
        for (int i = 0; i < count; i++) {
            int col = d->has_columns ? i % d->columns : i, row = d->has_columns ? i / d->columns : i;
            st->tx = tx + dx * col;
            st->ty = ty + dy * row;
            st->i = i;
            if (draw_nodes(g, d->kids, d->n_kids, st, depth + 1, err, errlen)) return -1;
        }
        st->tx = tx;
        st->ty = ty;
        st->i = outer;
        return 0;
    }
    case OP_RRECT:
    case OP_BORDER:
        set_blend(g, BLEND_SRC_OVER);
        draw_rrect(g, eval(&d->x, st) + st->tx, eval(&d->y, st) + st->ty, eval(&d->w, st), eval(&d->h, st), eval(&d->radius, st),
                   d->op == OP_BORDER ? fabs(eval(&d->width, st)) : 0, d->color, 0);
        st->counts->draw_calls++;
        return 0;
    case OP_LINEAR:
    case OP_RADIAL:
        set_blend(g, BLEND_SRC_OVER);
        draw_gradient(g, d, st);
        st->counts->draw_calls++;
        return 0;
    case OP_SHADOW:
        st->counts->draw_calls++;
        return draw_shadow(g, d, st, err, errlen);
    case OP_BACKDROP:
        st->counts->draw_calls++;
        return draw_backdrop(g, d, st, err, errlen);
    case OP_TEXT:
        st->counts->draw_calls++;
        return draw_text(g, d, st, err, errlen);
    case OP_SHADER:
        st->counts->draw_calls++;
        draw_effect(g, d, st);
        return 0;
    case OP_VIDEO:
        st->counts->draw_calls++;
        draw_video(g, d, st);
        return 0;
    case OP_LAYER:
        return draw_layer(g, d, st, depth, err, errlen);
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
    frame_state st = {frame, complexity, 0, 0, counts, 0};
    counts->vertices = 0;
    g->vertices = &counts->vertices;
    g->target = g->fbo;
    g->depth = 0;
    bind_target(g);
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
    zk_unpremultiply(rgba, (size_t)g->width * g->height);
    return 0;
}

static void e_close(void *self) {
    engine *g = self;
    if (!g->opened) return;
    free_nodes(g->root, g->n_root);
    g->root = NULL;
    zb_text_free(g->text);
    g->text = NULL;
    free(g->text_vertices);
    g->text_vertices = NULL;
    for (int k = 0; k < MAX_LAYERS; k++) {
        if (g->layer_fbo[k]) glDeleteFramebuffers(1, &g->layer_fbo[k]);
        if (g->layer_tex[k]) glDeleteTextures(1, &g->layer_tex[k]);
    }
    for (int k = 0; k < 2; k++) {
        if (g->scratch_fbo[k]) glDeleteFramebuffers(1, &g->scratch_fbo[k]);
        if (g->scratch_tex[k]) glDeleteTextures(1, &g->scratch_tex[k]);
    }
    if (g->noise_tex) glDeleteTextures(1, &g->noise_tex);
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
    g.sans_font = g.cjk_font = -1;
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
