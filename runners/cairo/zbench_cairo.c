/* zbench-cairo: a runner on Cairo's image surfaces (pixman, the CPU) built with the zbench kit
 * (docs/native-runner.md, "Porting an engine", "Cairo").
 *
 * The display list (docs/display-list.md) is compiled once before frame 0 into a tree of nodes; a frame clears
 * an ARGB32 image surface to white and walks the tree with Cairo calls: paths filled and stroked with Cairo's
 * anti-aliasing, gradients as Cairo patterns, images as surface patterns, text through FreeType with DejaVu
 * Sans, layers as groups. What Cairo has no drawing call for is written here on the image surface's pixels:
 * the Gaussian blur of `shadow` and `backdrop_blur` (three box blurs) and the YUV conversion of `video`. Ops
 * it cannot draw (`shader`, a runtime effect; `etc2_image`; `tap_target`, whose synthetic input the kit does
 * not make) are left out of the probe's features, so the kit skips their scenes with `feature_skipped`. */
#include <cairo-ft.h>
#include <cairo.h>
#include <ft2build.h>
#include FT_FREETYPE_H
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "noise.h"
#include "video_noise.h"
#include "zbench_kit.h"

#ifndef ZB_VERSION
#define ZB_VERSION "0.1.0"
#endif

/* A test build that draws every rect one level off in red (tests/engines/test_cairo_runner.py): its golden test
 * must fail. 0 in a normal build. */
#ifndef ZBENCH_CAIRO_RECT_RED_SHIFT
#define ZBENCH_CAIRO_RECT_RED_SHIFT 0
#endif
/* Caps from docs/display-list.md ("Complexity"). */
#define MAX_REPEAT 100000
#define MAX_BATCH 65536
#define MAX_MESH_CELLS 65536
#define CHECKER_CELL 8
#define TEXTURE_ALPHA 0xA0
#define VIDEO_FRAMES 4
#define PI 3.14159265358979323846

static const char *const FEATURES[] = {"rect", "rrect", "border", "linear_gradient", "radial_gradient", "shadow",
                                       "backdrop_blur", "text", "image", "mesh", "rect_batch", "video", "path",
                                       "clip", "layer", "group", "repeat", NULL};

static const char *const FONT_PATHS[] = {"/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                                         "/usr/share/fonts/dejavu/DejaVuSans.ttf", "/usr/share/fonts/TTF/DejaVuSans.ttf",
                                         NULL};
static const char *const CJK_FONT_PATHS[] = {"/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
                                             "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc", NULL};

/* ------------------------------------------------------------------------------------ display list */

enum { N_CONST, N_LINEAR, N_SINE, N_STEP, N_COMPLEXITY };
typedef struct {
    int kind;
    double a, b, c; /* const: a; linear: from a to b, period c; sine: center a, amplitude b, period c */
    double *values;
    int n_values, every;
} num;

enum {
    OP_RECT, OP_RRECT, OP_BORDER, OP_LINEAR, OP_RADIAL, OP_SHADOW, OP_BACKDROP, OP_TEXT, OP_IMAGE, OP_MESH,
    OP_RECT_BATCH, OP_VIDEO, OP_PATH, OP_CLIP, OP_LAYER, OP_GROUP, OP_REPEAT
};
enum { CLIP_RECT, CLIP_RRECT, CLIP_PATH };

typedef struct node {
    int op;
    num x, y, w, h, dx, dy, count, radius, width, blur, size, max_width, line_height, opacity;
    num gx0, gy0, gx1, gy1, gr; /* gradient geometry: x0 y0 x1 y1, or cx cy r */
    int has_max_width, has_line_height, has_stroke;
    double color[4], alt[4];
    cairo_operator_t blend;
    int columns, has_columns;
    /* gradients */
    int n_stops;
    num *stop_pos;
    double (*stop_color)[4];
    /* text */
    char *text;
    int templated, cjk;
    /* image */
    int tex_w, tex_h, upload, alpha_mode;
    cairo_filter_t filter;
    unsigned char *pixels; /* RGBA as the display list defines it (straight or premultiplied, `alpha_mode`) */
    unsigned char *png;
    size_t png_len;
    cairo_surface_t *once; /* upload once: made before frame 0 */
    int counted;
    /* video: the Y, U and V planes of its VIDEO_FRAMES frames */
    unsigned char *planes[VIDEO_FRAMES][3];
    /* clip shape and path points */
    int shape, closed;
    num *px, *py;
    int n_points;
    struct node *kids;
    int n_kids;
} node;

typedef struct {
    int frame;
    double complexity;
    int i; /* the innermost enclosing repeat's index, for {i} in text */
    zk_counts *counts;
} frame_state;

typedef struct {
    cairo_surface_t *surface;
    cairo_t *cr;
    int width, height;
    node *root;
    int n_root;
    FT_Library ft;
    FT_Face face, cjk_face;
    cairo_font_face_t *font, *cjk_font;
    cairo_font_options_t *font_options;
    int font_fallback, font_fallback_reported;
    char libraries[160];
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

/* A count as the reference rounds it: half to even (Python's round), never below 0, at most the largest cap. */
static int count_of(const num *n, const frame_state *st) {
    double v = nearbyint(eval(n, st));
    return v < 0 ? 0 : v > MAX_REPEAT ? MAX_REPEAT : (int)v;
}

/* ------------------------------------------------------------------------------------ compile */

typedef struct {
    char *err;
    size_t errlen;
    int code; /* ZK_EXIT_USAGE or ZK_EXIT_SKIPPED or ZK_EXIT_FAILED */
    engine *g;
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

static int parse_num(compile_ctx *c, const zj_value *v, const char *path, const char *key, int may_complexity, num *out) {
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
        if (!out->values) return bad(c, sub, "values", "out of memory");
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

static int get_num(compile_ctx *c, const zj_value *op, const char *path, const char *key, int may_complexity, num *out) {
    return parse_num(c, zj_get(op, key), path, key, may_complexity, out);
}

/* A colour as Cairo takes it: unpremultiplied components in 0..1. */
static int parse_color(compile_ctx *c, const zj_value *v, const char *path, const char *key, double out[4]) {
    if (!v || v->type != ZJ_STRING || v->string[0] != '#' || (v->len != 7 && v->len != 9))
        return bad(c, path, key, "must be a colour \"#RRGGBB\" or \"#RRGGBBAA\"");
    out[3] = 1.0;
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
        out[i] = value / 255.0;
    }
    return 0;
}

static int get_color(compile_ctx *c, const zj_value *op, const char *path, const char *key, double out[4]) {
    return parse_color(c, zj_get(op, key), path, key, out);
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

static int optional(const zj_value *op, const char *key) {
    const zj_value *v = zj_get(op, key);
    return v && v->type != ZJ_NULL;
}

static int get_rect(compile_ctx *c, const zj_value *op, const char *path, node *n) {
    return get_num(c, op, path, "x", 0, &n->x) || get_num(c, op, path, "y", 0, &n->y) || get_num(c, op, path, "w", 0, &n->w) ||
           get_num(c, op, path, "h", 0, &n->h);
}

static int get_points(compile_ctx *c, const zj_value *pts, const char *path, int min, node *n) {
    if (!pts || pts->type != ZJ_ARRAY || (int)pts->len < min) {
        char what[64];
        snprintf(what, sizeof what, "must be at least %d [x, y] points", min);
        return bad(c, path, "points", what);
    }
    n->n_points = (int)pts->len;
    n->px = calloc(pts->len, sizeof *n->px);
    n->py = calloc(pts->len, sizeof *n->py);
    if (!n->px || !n->py) return bad(c, path, "points", "out of memory");
    int i = 0;
    for (const zj_value *p = pts->first; p; p = p->next, i++) {
        if (p->type != ZJ_ARRAY || p->len != 2) return bad(c, path, "points", "every point must be [x, y]");
        if (parse_num(c, p->first, path, "points", 0, &n->px[i]) || parse_num(c, p->first->next, path, "points", 0, &n->py[i])) return -1;
    }
    return 0;
}

static void checker(unsigned char *p, int w, int h) {
    static const unsigned char colors[2][4] = {{0x20, 0x50, 0xA0, 0xFF}, {0xF0, 0xC0, 0x40, 0xFF}};
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) memcpy(p + ((size_t)y * w + x) * 4, colors[(x / CHECKER_CELL + y / CHECKER_CELL) % 2], 4);
}

/* The texture's RGBA as an ARGB32 image surface (premultiplied, native endian): Cairo's upload. `premultiplied`:
 * the colours are stored multiplied by alpha already. */
static cairo_surface_t *to_surface(const unsigned char *rgba, int w, int h, int premultiplied) {
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, w, h);
    if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) return s;
    unsigned char *data = cairo_image_surface_get_data(s);
    int stride = cairo_image_surface_get_stride(s);
    for (int y = 0; y < h; y++) {
        uint32_t *row = (uint32_t *)(void *)(data + (size_t)y * stride);
        const unsigned char *p = rgba + (size_t)y * w * 4;
        for (int x = 0; x < w; x++, p += 4) {
            uint32_t a = p[3], r = p[0], g = p[1], b = p[2];
            if (a != 255 && !premultiplied) {
                r = (r * a + 127) / 255;
                g = (g * a + 127) / 255;
                b = (b * a + 127) / 255;
            }
            row[x] = a << 24 | r << 16 | g << 8 | b;
        }
    }
    cairo_surface_mark_dirty(s);
    return s;
}

/* The planes of the video op's VIDEO_FRAMES frames, as runner/interpreter.py video_planes makes them (the luma
 * noise is numpy's, video_noise.c). */
static void video_planes(node *n, int seed) {
    int w = n->tex_w, h = n->tex_h, cw = w / 2 > 0 ? w / 2 : 1, ch = h / 2 > 0 ? h / 2 : 1;
    for (int k = 0; k < VIDEO_FRAMES; k++) {
        unsigned char *Y = malloc((size_t)w * h), *U = malloc((size_t)cw * ch), *V = malloc((size_t)cw * ch);
        n->planes[k][0] = Y; n->planes[k][1] = U; n->planes[k][2] = V;
        if (!Y || !U || !V) return;
        zb_noise_bounded(Y, (size_t)w * h, 24, (uint64_t)(seed * VIDEO_FRAMES + k));
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                double v = 16 + (219.0 * ((x + y + k * 37) % w) / w) + Y[(size_t)y * w + x];
                Y[(size_t)y * w + x] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
        for (int y = 0; y < ch; y++)
            for (int x = 0; x < cw; x++) {
                double u = 128 + 48 * sin((double)(x + k * 11) / cw * 6.283), v = 128 + 48 * cos((double)(y + k * 7) / ch * 6.283);
                U[(size_t)y * cw + x] = (unsigned char)(u < 0 ? 0 : u > 255 ? 255 : u);
                V[(size_t)y * cw + x] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
    }
}

static FT_Face load_face(engine *g, const char *const *paths, const char *override) {
    FT_Face face = NULL;
    if (override) return FT_New_Face(g->ft, override, 0, &face) == 0 ? face : NULL;
    for (int i = 0; paths[i]; i++)
        if (FT_New_Face(g->ft, paths[i], 0, &face) == 0) return face;
    return NULL;
}

/* The font faces, loaded the first time a text op needs them. DejaVu Sans missing: Cairo's own sans serif and a
 * `font_fallback` issue, as the reference does; a CJK font missing fails the launch (no fallback has its glyphs). */
static int need_font(compile_ctx *c, int cjk) {
    engine *g = c->g;
    if (!g->ft && FT_Init_FreeType(&g->ft) != 0) {
        snprintf(c->err, c->errlen, "FreeType did not initialise");
        c->code = ZK_EXIT_FAILED;
        return -1;
    }
    if (!cjk && !g->font) {
        g->face = load_face(g, FONT_PATHS, NULL);
        if (g->face) g->font = cairo_ft_font_face_create_for_ft_face(g->face, 0);
        else {
            g->font = cairo_toy_font_face_create("sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
            g->font_fallback = 1;
        }
    }
    if (cjk && !g->cjk_font) {
        const char *override = getenv("ZBENCH_CJK_FONT");
        if (override && !*override) override = NULL;
        g->cjk_face = load_face(g, CJK_FONT_PATHS, override);
        if (!g->cjk_face) {
            snprintf(c->err, c->errlen, "CJK font not found (looked in %s): text with font 'cjk' needs WenQuanYi Zen Hei "
                     "(Debian: apt-get install fonts-wqy-zenhei) or Noto Sans CJK, or ZBENCH_CJK_FONT set to a CJK font file",
                     override ? override : "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc, /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc");
            c->code = ZK_EXIT_FAILED;
            return -1;
        }
        g->cjk_font = cairo_ft_font_face_create_for_ft_face(g->cjk_face, 0);
    }
    return 0;
}

static int compile_ops(compile_ctx *c, const zj_value *ops, const char *path, node **out, int *n_out, int depth);

static int compile_op(compile_ctx *c, const zj_value *op, const char *path, node *n, int depth) {
    if (op->type != ZJ_OBJECT) return bad(c, path, "op", "the op is not an object");
    const zj_value *name = zj_get(op, "op");
    if (!name || name->type != ZJ_STRING) return bad(c, path, "op", "missing or not a string");
    const char *o = name->string;
    if (strcmp(o, "rect") == 0) {
        static const char *const blends[] = {"src_over", "multiply", "screen", "plus", NULL};
        static const cairo_operator_t operators[] = {CAIRO_OPERATOR_OVER, CAIRO_OPERATOR_MULTIPLY, CAIRO_OPERATOR_SCREEN, CAIRO_OPERATOR_ADD};
        int blend = 0;
        n->op = OP_RECT;
        if (get_rect(c, op, path, n) || get_color(c, op, path, "color", n->color)) return -1;
        if (optional(op, "blend") && get_choice(c, op, path, "blend", blends, &blend)) return -1;
        n->blend = operators[blend];
#if ZBENCH_CAIRO_RECT_RED_SHIFT
        n->color[0] += (n->color[0] * 255 + ZBENCH_CAIRO_RECT_RED_SHIFT <= 255 ? 1 : -1) * ZBENCH_CAIRO_RECT_RED_SHIFT / 255.0;
#endif
        return 0;
    }
    if (strcmp(o, "rrect") == 0 || strcmp(o, "border") == 0) {
        n->op = o[0] == 'r' ? OP_RRECT : OP_BORDER;
        if (get_rect(c, op, path, n) || get_num(c, op, path, "radius", 0, &n->radius) || get_color(c, op, path, "color", n->color)) return -1;
        return n->op == OP_BORDER ? get_num(c, op, path, "width", 0, &n->width) : 0;
    }
    if (strcmp(o, "linear_gradient") == 0 || strcmp(o, "radial_gradient") == 0) {
        int linear = o[0] == 'l';
        n->op = linear ? OP_LINEAR : OP_RADIAL;
        if (get_rect(c, op, path, n)) return -1;
        if (linear ? get_num(c, op, path, "x0", 0, &n->gx0) || get_num(c, op, path, "y0", 0, &n->gy0) ||
                         get_num(c, op, path, "x1", 0, &n->gx1) || get_num(c, op, path, "y1", 0, &n->gy1)
                   : get_num(c, op, path, "cx", 0, &n->gx0) || get_num(c, op, path, "cy", 0, &n->gy0) || get_num(c, op, path, "r", 0, &n->gr))
            return -1;
        const zj_value *stops = zj_get(op, "stops");
        if (!stops || stops->type != ZJ_ARRAY || stops->len == 0) return bad(c, path, "stops", "needs a non-empty list of [pos, colour] stops");
        n->n_stops = (int)stops->len;
        n->stop_pos = calloc(stops->len, sizeof *n->stop_pos);
        n->stop_color = calloc(stops->len, sizeof *n->stop_color);
        if (!n->stop_pos || !n->stop_color) return bad(c, path, "stops", "out of memory");
        int i = 0;
        for (const zj_value *s = stops->first; s; s = s->next, i++) {
            if (s->type != ZJ_ARRAY || s->len != 2) return bad(c, path, "stops", "every stop must be [pos, colour]");
            if (parse_num(c, s->first, path, "stops", 0, &n->stop_pos[i]) || parse_color(c, s->first->next, path, "stops", n->stop_color[i])) return -1;
        }
        return 0;
    }
    if (strcmp(o, "shadow") == 0) {
        n->op = OP_SHADOW;
        return get_rect(c, op, path, n) || get_num(c, op, path, "radius", 0, &n->radius) || get_num(c, op, path, "blur", 0, &n->blur) ||
               get_num(c, op, path, "dx", 0, &n->dx) || get_num(c, op, path, "dy", 0, &n->dy) || get_color(c, op, path, "color", n->color);
    }
    if (strcmp(o, "backdrop_blur") == 0) {
        n->op = OP_BACKDROP;
        return get_rect(c, op, path, n) || get_num(c, op, path, "blur", 0, &n->blur);
    }
    if (strcmp(o, "text") == 0) {
        static const char *const fonts[] = {"sans", "cjk", NULL};
        n->op = OP_TEXT;
        if (get_num(c, op, path, "x", 0, &n->x) || get_num(c, op, path, "y", 0, &n->y) || get_num(c, op, path, "size", 0, &n->size) ||
            get_color(c, op, path, "color", n->color))
            return -1;
        const zj_value *t = zj_get(op, "text");
        if (!t || t->type != ZJ_STRING || strlen(t->string) != t->len) return bad(c, path, "text", "must be a string (without NUL)");
        n->text = strdup(t->string);
        n->templated = strstr(n->text, "{frame}") || strstr(n->text, "{i}");
        if ((n->has_max_width = optional(op, "max_width")) && get_num(c, op, path, "max_width", 0, &n->max_width)) return -1;
        if ((n->has_line_height = optional(op, "line_height")) && get_num(c, op, path, "line_height", 0, &n->line_height)) return -1;
        if (optional(op, "font") && get_choice(c, op, path, "font", fonts, &n->cjk)) return -1;
        return need_font(c, n->cjk);
    }
    if (strcmp(o, "image") == 0) {
        static const char *const patterns[] = {"checker", "noise", NULL}, *const uploads[] = {"once", "every_frame", "decode", NULL},
                                  *const filters[] = {"nearest", "linear", "mipmap", NULL},
                                  *const alphas[] = {"opaque", "premul", "unpremul", NULL};
        /* mipmap: Cairo has no mip levels; GOOD filters a downscale over the covered texels (pixman's separable
         * convolution), which is what mip levels approximate. */
        static const cairo_filter_t cairo_filters[] = {CAIRO_FILTER_NEAREST, CAIRO_FILTER_BILINEAR, CAIRO_FILTER_GOOD};
        int pattern, filter;
        n->op = OP_IMAGE;
        if (get_rect(c, op, path, n) || get_int(c, op, path, "tex_w", 1, ZK_MAX_SIDE, &n->tex_w) ||
            get_int(c, op, path, "tex_h", 1, ZK_MAX_SIDE, &n->tex_h) || get_choice(c, op, path, "pattern", patterns, &pattern) ||
            get_choice(c, op, path, "upload", uploads, &n->upload) || get_choice(c, op, path, "filter", filters, &filter))
            return -1;
        n->filter = cairo_filters[filter];
        const zj_value *seed = zj_get(op, "seed");
        if (!seed || !seed->is_integer || (pattern == 1 && seed->integer < 0)) return bad(c, path, "seed", "must be an integer (non-negative for noise)");
        if (optional(op, "alpha") && get_choice(c, op, path, "alpha", alphas, &n->alpha_mode)) return -1;
        size_t bytes = (size_t)n->tex_w * (size_t)n->tex_h * 4;
        n->pixels = malloc(bytes);
        if (!n->pixels) return bad(c, path, "tex_w", "texture too large for memory");
        if (pattern == 0) checker(n->pixels, n->tex_w, n->tex_h);
        else zb_noise_rgba(n->pixels, n->tex_w, n->tex_h, (uint64_t)seed->integer);
        if (n->alpha_mode != 0) {
            /* Translucent: alpha 0xA0 everywhere, colours premultiplied (rounded) or not (display-list.md). */
            for (size_t i = 0; i < bytes; i += 4) {
                if (n->alpha_mode == 1)
                    for (int k = 0; k < 3; k++) n->pixels[i + k] = (unsigned char)((n->pixels[i + k] * TEXTURE_ALPHA + 127) / 255);
                n->pixels[i + 3] = TEXTURE_ALPHA;
            }
        }
        if (n->upload == 0) n->once = to_surface(n->pixels, n->tex_w, n->tex_h, n->alpha_mode == 1);
        if (n->upload == 2 && !(n->png = zk_png_encode(n->pixels, n->tex_w, n->tex_h, &n->png_len)))
            return bad(c, path, "tex_w", "out of memory encoding the texture as PNG");
        return 0;
    }
    if (strcmp(o, "mesh") == 0) {
        n->op = OP_MESH;
        if (get_rect(c, op, path, n) || get_int(c, op, path, "columns", 1, MAX_MESH_CELLS, &n->columns) ||
            get_num(c, op, path, "rows", 1, &n->count) || get_color(c, op, path, "color", n->color) ||
            get_color(c, op, path, "alt_color", n->alt))
            return -1;
        if (n->count.kind != N_COMPLEXITY && (n->count.kind != N_CONST || n->count.a != floor(n->count.a) || n->count.a < 1 ||
                                              n->count.a * n->columns > MAX_MESH_CELLS))
            return bad(c, path, "rows", "must be a positive integer with columns x rows at most 65536, or \"complexity\"");
        return 0;
    }
    if (strcmp(o, "rect_batch") == 0) {
        n->op = OP_RECT_BATCH;
        if (get_num(c, op, path, "count", 1, &n->count) || get_int(c, op, path, "columns", 1, MAX_BATCH, &n->columns) ||
            get_num(c, op, path, "dx", 0, &n->dx) || get_num(c, op, path, "dy", 0, &n->dy) || get_rect(c, op, path, n) ||
            get_color(c, op, path, "color", n->color))
            return -1;
        if (n->count.kind != N_COMPLEXITY && (n->count.kind != N_CONST || n->count.a != floor(n->count.a) || n->count.a < 1 || n->count.a > MAX_BATCH))
            return bad(c, path, "count", "must be an integer in 1..65536 or \"complexity\"");
        return 0;
    }
    if (strcmp(o, "video") == 0) {
        int seed;
        n->op = OP_VIDEO;
        if (get_rect(c, op, path, n) || get_int(c, op, path, "tex_w", 1, ZK_MAX_SIDE, &n->tex_w) ||
            get_int(c, op, path, "tex_h", 1, ZK_MAX_SIDE, &n->tex_h) || get_int(c, op, path, "seed", 0, 1 << 28, &seed))
            return -1;
        video_planes(n, seed);
        for (int k = 0; k < VIDEO_FRAMES; k++)
            for (int p = 0; p < 3; p++)
                if (!n->planes[k][p]) return bad(c, path, "tex_w", "video planes too large for memory");
        return 0;
    }
    if (strcmp(o, "path") == 0) {
        n->op = OP_PATH;
        const zj_value *closed = zj_get(op, "closed");
        if (!closed || closed->type != ZJ_BOOL) return bad(c, path, "closed", "must be true or false");
        n->closed = closed->boolean;
        if (get_points(c, zj_get(op, "points"), path, 2, n) || get_color(c, op, path, "color", n->color)) return -1;
        if ((n->has_stroke = optional(op, "stroke_width")) && get_num(c, op, path, "stroke_width", 0, &n->width)) return -1;
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
            if (optional(op, "columns")) {
                if (get_int(c, op, path, "columns", 1, MAX_REPEAT, &n->columns)) return -1;
                n->has_columns = 1;
            }
        }
    } else if (strcmp(o, "layer") == 0) {
        n->op = OP_LAYER;
        if (get_num(c, op, path, "opacity", 0, &n->opacity)) return -1;
    } else if (strcmp(o, "clip") == 0) {
        static const char *const kinds[] = {"rect", "rrect", "path", NULL};
        n->op = OP_CLIP;
        const zj_value *shape = zj_get(op, "shape");
        char sub[512];
        join(sub, sizeof sub, path, ".shape");
        if (!shape || shape->type != ZJ_OBJECT) return bad(c, path, "shape", "must be an object with a kind");
        if (get_choice(c, shape, sub, "kind", kinds, &n->shape)) return -1;
        if (n->shape != CLIP_PATH) {
            if (get_rect(c, shape, sub, n)) return -1;
            if (n->shape == CLIP_RRECT && get_num(c, shape, sub, "radius", 0, &n->radius)) return -1;
        } else if (get_points(c, zj_get(shape, "points"), sub, 2, n)) {
            return -1;
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
    if (!*out) return bad(c, path, "ops", "out of memory");
    int i = 0;
    for (const zj_value *op = ops->first; op; op = op->next, i++) {
        char sub[512], index[24];
        snprintf(index, sizeof index, "[%d]", i);
        join(sub, sizeof sub, path, index);
        if (compile_op(c, op, sub, &(*out)[i], depth) != 0) return -1;
    }
    return 0;
}

static void free_num(num *n) { free(n->values); }

static void free_nodes(node *nodes, int n) {
    for (int i = 0; i < n; i++) {
        node *d = &nodes[i];
        num *nums[] = {&d->x, &d->y, &d->w, &d->h, &d->dx, &d->dy, &d->count, &d->radius, &d->width, &d->blur, &d->size,
                       &d->max_width, &d->line_height, &d->opacity, &d->gx0, &d->gy0, &d->gx1, &d->gy1, &d->gr};
        for (size_t k = 0; k < sizeof nums / sizeof *nums; k++) free_num(nums[k]);
        for (int k = 0; k < d->n_points; k++) { free_num(&d->px[k]); free_num(&d->py[k]); }
        for (int k = 0; k < d->n_stops; k++) free_num(&d->stop_pos[k]);
        free(d->px); free(d->py); free(d->stop_pos); free(d->stop_color); free(d->text); free(d->pixels); free(d->png);
        for (int k = 0; k < VIDEO_FRAMES; k++)
            for (int p = 0; p < 3; p++) free(d->planes[k][p]);
        if (d->once) cairo_surface_destroy(d->once);
        free_nodes(d->kids, d->n_kids);
        free(d->kids);
    }
}

/* The largest count a node reaches in this job, for the caps that hold per frame (display-list.md). */
static int check_counts(node *nodes, int n, const zk_job *job, char *err, size_t errlen, const char *path) {
    double max_c = 0;
    for (size_t i = 0; i < job->n_complexity; i++) max_c = job->complexity[i] > max_c ? job->complexity[i] : max_c;
    double top = nearbyint(max_c);
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

/* ------------------------------------------------------------------------------------ drawing */

static void set_color(cairo_t *cr, const double c[4]) { cairo_set_source_rgba(cr, c[0], c[1], c[2], c[3]); }

/* Aliased geometry (mesh, rect_batch, the edges of an image) as the reference's rasteriser places it: snapped to
 * Skia's 1/64 px in device space and nudged by 1/256 px, so that a pixel whose centre lies on an edge falls on
 * Skia's side of it (Skia: the shape the edge ends; pixman: the shape it starts), as zbench-gles2 does.
 * `t` is the current translation along the axis (a group's or a repeat's, device minus user). */
static double snap(double v, double t) { return floor((v + t) * 64.0 + 0.5) / 64.0 + 1.0 / 256.0 - t; }

/* The translation of the current transform (the runner only ever translates). */
static void translation(cairo_t *cr, double *tx, double *ty) {
    *tx = 0;
    *ty = 0;
    cairo_user_to_device(cr, tx, ty);
}

/* The rect, aliased as a clip (a pixel is in when its centre is), snapped as `snap` says. */
static void aliased_clip(cairo_t *cr, double x, double y, double w, double h) {
    double tx, ty;
    translation(cr, &tx, &ty);
    double x0 = snap(w < 0 ? x + w : x, tx), x1 = snap(w < 0 ? x : x + w, tx);
    double y0 = snap(h < 0 ? y + h : y, ty), y1 = snap(h < 0 ? y : y + h, ty);
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);
    cairo_rectangle(cr, x0, y0, x1 - x0, y1 - y0);
    cairo_clip(cr);
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_DEFAULT);
}

/* A rounded rect as Skia's RRect::MakeRectXY makes it: radii larger than half a side are scaled down to fit. */
static void rrect_path(cairo_t *cr, double x, double y, double w, double h, double r) {
    if (w < 0) { x += w; w = -w; }
    if (h < 0) { y += h; h = -h; }
    if (r > w / 2) r = w / 2;
    if (r > h / 2) r = h / 2;
    if (!(r > 0)) { cairo_rectangle(cr, x, y, w, h); return; }
    cairo_new_sub_path(cr);
    cairo_arc(cr, x + w - r, y + r, r, -PI / 2, 0);
    cairo_arc(cr, x + w - r, y + h - r, r, 0, PI / 2);
    cairo_arc(cr, x + r, y + h - r, r, PI / 2, PI);
    cairo_arc(cr, x + r, y + r, r, PI, 3 * PI / 2);
    cairo_close_path(cr);
}

static void points_path(cairo_t *cr, const node *d, const frame_state *st, int closed) {
    cairo_new_path(cr);
    for (int i = 0; i < d->n_points; i++) cairo_line_to(cr, eval(&d->px[i], st), eval(&d->py[i], st));
    if (closed) cairo_close_path(cr);
}

/* One box blur along a line of n values spaced `step` apart, over the window [i - left, i + right], edges
 * clamped. */
static void box_line(float *v, float *tmp, int n, size_t step, int left, int right) {
    if (left + right <= 0 || n <= 0) return;
    float scale = 1.0f / (float)(left + right + 1), acc = 0;
    for (int i = -left - 1; i < right; i++) acc += v[(size_t)(i < 0 ? 0 : i >= n ? n - 1 : i) * step];
    for (int i = 0; i < n; i++) {
        int add = i + right, drop = i - left - 1;
        acc += v[(size_t)(add >= n ? n - 1 : add) * step] - v[(size_t)(drop < 0 ? 0 : drop) * step];
        tmp[i] = acc * scale;
    }
    for (int i = 0; i < n; i++) v[(size_t)i * step] = tmp[i];
}

/* A true Gaussian kernel along a line (radius three sigma), edges clamped. */
static void gauss_line(float *v, float *tmp, int n, size_t step, const float *kernel, int radius) {
    for (int i = 0; i < n; i++) {
        float acc = 0;
        for (int k = -radius; k <= radius; k++) {
            int j = i + k < 0 ? 0 : i + k >= n ? n - 1 : i + k;
            acc += kernel[k + radius] * v[(size_t)j * step];
        }
        tmp[i] = acc;
    }
    for (int i = 0; i < n; i++) v[(size_t)i * step] = tmp[i];
}

/* A Gaussian blur of sigma over a w x h plane of floats, as Skia's raster mask blur makes it (the reference's
 * shadow and backdrop blur): below sigma 2 a true Gaussian kernel; from 2 up, the three box blurs of the SVG
 * filter specification (box size d = floor(sigma * 3 * sqrt(2 pi) / 4 + 0.5); an even d is two boxes of d set
 * half a pixel to either side and one of d + 1), whose cost per pixel does not grow with the radius. */
static int gauss_plane(float *p, int w, int h, double sigma) {
    float *tmp = malloc(sizeof *tmp * (size_t)(w > h ? w : h));
    if (!tmp) return -1;
    if (sigma < 2) {
        int radius = (int)ceil(3 * sigma);
        float kernel[16], sum = 0;
        for (int k = -radius; k <= radius; k++) sum += kernel[k + radius] = (float)exp(-(double)k * k / (2 * sigma * sigma));
        for (int k = 0; k <= 2 * radius; k++) kernel[k] /= sum;
        for (int y = 0; y < h; y++) gauss_line(p + (size_t)y * w, tmp, w, 1, kernel, radius);
        for (int x = 0; x < w; x++) gauss_line(p + x, tmp, h, (size_t)w, kernel, radius);
        free(tmp);
        return 0;
    }
    int d = (int)floor(sigma * 3 * sqrt(2 * PI) / 4 + 0.5);
    int boxes[3][2];
    if (d % 2) {
        for (int i = 0; i < 3; i++) boxes[i][0] = boxes[i][1] = d / 2;
    } else {
        boxes[0][0] = d / 2; boxes[0][1] = d / 2 - 1;
        boxes[1][0] = d / 2 - 1; boxes[1][1] = d / 2;
        boxes[2][0] = boxes[2][1] = d / 2;
    }
    for (int pass = 0; pass < 3; pass++) {
        for (int y = 0; y < h; y++) box_line(p + (size_t)y * w, tmp, w, 1, boxes[pass][0], boxes[pass][1]);
        for (int x = 0; x < w; x++) box_line(p + x, tmp, h, (size_t)w, boxes[pass][0], boxes[pass][1]);
    }
    free(tmp);
    return 0;
}

/* shadow: the rounded rect's coverage drawn into an A8 mask with a margin of three sigma, blurred, and painted
 * through as the colour (Cairo has no blur). */
static int draw_shadow(engine *g, const node *d, const frame_state *st) {
    cairo_t *cr = g->cr;
    double x = eval(&d->x, st) + eval(&d->dx, st), y = eval(&d->y, st) + eval(&d->dy, st), w = eval(&d->w, st), h = eval(&d->h, st);
    double blur = eval(&d->blur, st), r = eval(&d->radius, st);
    set_color(cr, d->color);
    if (!(blur > 0)) {
        rrect_path(cr, x, y, w, h, r);
        cairo_fill(cr);
        return 0;
    }
    double sigma = blur / 2;
    int pad = (int)ceil(3 * sigma);
    double ox = floor(x) - pad, oy = floor(y) - pad;
    int mw = (int)ceil(x + fabs(w)) - (int)floor(x) + 2 * pad + 1, mh = (int)ceil(y + fabs(h)) - (int)floor(y) + 2 * pad + 1;
    cairo_surface_t *mask = cairo_image_surface_create(CAIRO_FORMAT_A8, mw, mh);
    if (cairo_surface_status(mask) != CAIRO_STATUS_SUCCESS) { cairo_surface_destroy(mask); return -1; }
    cairo_t *mc = cairo_create(mask);
    rrect_path(mc, x - ox, y - oy, w, h, r);
    cairo_fill(mc);
    cairo_destroy(mc);
    cairo_surface_flush(mask);
    unsigned char *data = cairo_image_surface_get_data(mask);
    int stride = cairo_image_surface_get_stride(mask);
    float *plane = malloc(sizeof *plane * (size_t)mw * mh);
    if (!plane) { cairo_surface_destroy(mask); return -1; }
    for (int yy = 0; yy < mh; yy++)
        for (int xx = 0; xx < mw; xx++) plane[(size_t)yy * mw + xx] = data[(size_t)yy * stride + xx];
    int failed = gauss_plane(plane, mw, mh, sigma);
    for (int yy = 0; yy < mh; yy++)
        for (int xx = 0; xx < mw; xx++) {
            float v = plane[(size_t)yy * mw + xx] + 0.5f;
            data[(size_t)yy * stride + xx] = (unsigned char)(v > 255 ? 255 : v < 0 ? 0 : v);
        }
    free(plane);
    cairo_surface_mark_dirty(mask);
    cairo_mask_surface(cr, mask, ox, oy);
    cairo_surface_destroy(mask);
    return failed;
}

/* backdrop_blur: what is already drawn inside the rect (in device pixels: a translation is all a group or a
 * repeat adds) replaced by its blur, channel by channel on the premultiplied pixels. The blur reads the backdrop
 * around the rect too, three sigma of it (clamped at the surface's edges), as the reference's backdrop filter
 * does: only the writes stop at the rect. */
static int draw_backdrop(engine *g, const node *d, const frame_state *st) {
    double x = eval(&d->x, st), y = eval(&d->y, st), w = eval(&d->w, st), h = eval(&d->h, st), blur = eval(&d->blur, st);
    if (!(blur > 0)) return 0;
    cairo_user_to_device(g->cr, &x, &y);
    int x0 = (int)nearbyint(w < 0 ? x + w : x), y0 = (int)nearbyint(h < 0 ? y + h : y);
    int x1 = (int)nearbyint(w < 0 ? x : x + w), y1 = (int)nearbyint(h < 0 ? y : y + h);
    x0 = x0 < 0 ? 0 : x0; y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > g->width ? g->width : x1; y1 = y1 > g->height ? g->height : y1;
    if (x1 <= x0 || y1 <= y0) return 0;
    int pad = (int)ceil(1.5 * blur);
    int rx0 = x0 - pad < 0 ? 0 : x0 - pad, ry0 = y0 - pad < 0 ? 0 : y0 - pad;
    int rx1 = x1 + pad > g->width ? g->width : x1 + pad, ry1 = y1 + pad > g->height ? g->height : y1 + pad;
    int bw = rx1 - rx0, bh = ry1 - ry0;
    cairo_surface_flush(g->surface);
    unsigned char *data = cairo_image_surface_get_data(g->surface);
    int stride = cairo_image_surface_get_stride(g->surface);
    float *plane = malloc(sizeof *plane * (size_t)bw * bh);
    if (!plane) return -1;
    for (int ch = 0; ch < 4; ch++) {
        for (int yy = 0; yy < bh; yy++) {
            const uint32_t *row = (const uint32_t *)(const void *)(data + (size_t)(ry0 + yy) * stride) + rx0;
            for (int xx = 0; xx < bw; xx++) plane[(size_t)yy * bw + xx] = (float)((row[xx] >> (8 * ch)) & 0xFF);
        }
        if (gauss_plane(plane, bw, bh, blur / 2)) { free(plane); return -1; }
        for (int yy = y0 - ry0; yy < y1 - ry0; yy++) {
            uint32_t *row = (uint32_t *)(void *)(data + (size_t)(ry0 + yy) * stride) + rx0;
            for (int xx = x0 - rx0; xx < x1 - rx0; xx++) {
                float v = plane[(size_t)yy * bw + xx] + 0.5f;
                uint32_t b = (uint32_t)(v > 255 ? 255 : v < 0 ? 0 : v);
                row[xx] = (row[xx] & ~(0xFFu << (8 * ch))) | b << (8 * ch);
            }
        }
    }
    free(plane);
    cairo_surface_mark_dirty_rectangle(g->surface, x0, y0, x1 - x0, y1 - y0);
    return 0;
}

/* `{frame}` and `{i}` replaced (display-list.md, text), into a malloc'd string. */
static char *substitute(const char *text, const frame_state *st) {
    char frame[24], index[24];
    snprintf(frame, sizeof frame, "%d", st->frame);
    snprintf(index, sizeof index, "%d", st->i);
    size_t cap = strlen(text) * 4 + 64, len = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    for (const char *p = text; *p;) {
        const char *rep = NULL;
        size_t skip = 1;
        if (strncmp(p, "{frame}", 7) == 0) { rep = frame; skip = 7; }
        else if (strncmp(p, "{i}", 3) == 0) { rep = index; skip = 3; }
        size_t n = rep ? strlen(rep) : 1;
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            char *grown = realloc(out, cap);
            if (!grown) { free(out); return NULL; }
            out = grown;
        }
        memcpy(out + len, rep ? rep : p, n);
        len += n;
        p += skip;
    }
    out[len] = 0;
    return out;
}

static double advance(cairo_t *cr, const char *s) {
    cairo_text_extents_t e;
    cairo_text_extents(cr, s, &e);
    return e.x_advance;
}

/* Draws the text's lines with the first baseline at y: the reference's greedy wrap at spaces (a word wider than
 * max_width gets a line of its own) and a break at every newline. */
static void show_lines(cairo_t *cr, char *text, double x, double y, double step, int has_max, double max_width) {
    int line_no = 0;
    for (char *para = text; para;) {
        char *nl = strchr(para, '\n');
        if (nl) *nl = 0;
        if (!has_max) {
            if (*para) { cairo_move_to(cr, x, y + line_no * step); cairo_show_text(cr, para); }
            line_no++;
        } else {
            /* line holds the words from line_start to the current end; a candidate adds the next word. */
            char *line_start = para, *line_end = NULL;
            for (char *word = para;;) {
                char *sp = strchr(word, ' ');
                char *word_end = sp ? sp : word + strlen(word);
                char saved = *word_end;
                *word_end = 0;
                int fits = line_end == NULL || advance(cr, line_start) <= max_width;
                if (!fits) {
                    /* the line without this word is full: draw it, and start the next one at the word */
                    *word_end = saved;
                    *line_end = 0;
                    if (*line_start) { cairo_move_to(cr, x, y + line_no * step); cairo_show_text(cr, line_start); }
                    *line_end = ' ';
                    line_no++;
                    line_start = word;
                    *word_end = 0;
                }
                line_end = word_end;
                *word_end = saved;
                if (!sp) break;
                word = sp + 1;
            }
            if (*line_start) { cairo_move_to(cr, x, y + line_no * step); cairo_show_text(cr, line_start); }
            line_no++;
        }
        if (nl) { *nl = '\n'; para = nl + 1; } else para = NULL;
    }
}

static void draw_text(engine *g, const node *d, const frame_state *st) {
    cairo_t *cr = g->cr;
    double size = eval(&d->size, st);
    cairo_set_font_face(cr, d->cjk ? g->cjk_font : g->font);
    cairo_set_font_size(cr, size);
    cairo_set_font_options(cr, g->font_options);
    set_color(cr, d->color);
    double step = d->has_line_height ? eval(&d->line_height, st) : 1.2 * size;
    char *text = d->templated ? substitute(d->text, st) : d->text;
    if (!text) return;
    show_lines(cr, text, eval(&d->x, st), eval(&d->y, st), step, d->has_max_width, d->has_max_width ? eval(&d->max_width, st) : 0);
    if (d->templated) free(text);
}

static int draw_image(engine *g, node *d, const frame_state *st, char *err, size_t errlen) {
    cairo_t *cr = g->cr;
    double x = eval(&d->x, st), y = eval(&d->y, st), w = eval(&d->w, st), h = eval(&d->h, st);
    int64_t bytes = (int64_t)d->tex_w * d->tex_h * 4;
    cairo_surface_t *s = d->once;
    if (s) {
        if (!d->counted) { d->counted = 1; st->counts->upload_bytes += bytes; }
    } else if (d->upload == 1) {
        /* every_frame: a new surface from the pixels, as an engine uploads a texture again */
        s = to_surface(d->pixels, d->tex_w, d->tex_h, d->alpha_mode == 1);
        st->counts->upload_bytes += bytes;
    } else {
        int dw, dh;
        unsigned char *decoded = zk_png_decode_stored(d->png, d->png_len, &dw, &dh);
        if (!decoded) { snprintf(err, errlen, "image decode failed"); return -1; }
        s = to_surface(decoded, dw, dh, d->alpha_mode == 1);
        free(decoded);
        st->counts->upload_bytes += bytes;
    }
    if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
        snprintf(err, errlen, "image surface %dx%d: %s", d->tex_w, d->tex_h, cairo_status_to_string(cairo_surface_status(s)));
        if (s != d->once) cairo_surface_destroy(s);
        return -1;
    }
    if (w != 0 && h != 0) {
        cairo_save(cr);
        aliased_clip(cr, x, y, w, h); /* the reference's drawImageRect has no anti-aliasing */
        cairo_translate(cr, x, y);
        cairo_scale(cr, w / d->tex_w, h / d->tex_h);
        cairo_set_source_surface(cr, s, 0, 0);
        cairo_pattern_t *p = cairo_get_source(cr);
        cairo_pattern_set_filter(p, d->filter);
        cairo_pattern_set_extend(p, CAIRO_EXTEND_PAD); /* edge texels clamped, as a texture sampler does */
        cairo_paint(cr);
        cairo_restore(cr);
    }
    if (s != d->once) cairo_surface_destroy(s);
    return 0;
}

/* video: this frame's planes converted to RGB (BT.601 limited range, runner/interpreter.py VIDEO_SHADER) into a
 * new surface, the chroma sampled at half resolution with linear filtering, then drawn scaled into the rect. */
static int draw_video(engine *g, const node *d, const frame_state *st, char *err, size_t errlen) {
    int w = d->tex_w, h = d->tex_h, cw = w / 2 > 0 ? w / 2 : 1, ch = h / 2 > 0 ? h / 2 : 1;
    unsigned char *const *planes = d->planes[st->frame % VIDEO_FRAMES];
    st->counts->upload_bytes += (int64_t)w * h + 2 * (int64_t)cw * ch;
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h);
    if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
        snprintf(err, errlen, "video surface %dx%d: %s", w, h, cairo_status_to_string(cairo_surface_status(s)));
        cairo_surface_destroy(s);
        return -1;
    }
    unsigned char *data = cairo_image_surface_get_data(s);
    int stride = cairo_image_surface_get_stride(s);
    for (int y = 0; y < h; y++) {
        uint32_t *row = (uint32_t *)(void *)(data + (size_t)y * stride);
        /* the chroma texel grid at half scale: texel centres at (i + 0.5) * 2 in luma pixels */
        double cy = (y + 0.5) * 0.5 - 0.5;
        int y0 = (int)floor(cy);
        double fy = cy - y0;
        int ya = y0 < 0 ? 0 : y0 >= ch ? ch - 1 : y0, yb = y0 + 1 >= ch ? ch - 1 : y0 + 1 < 0 ? 0 : y0 + 1;
        for (int x = 0; x < w; x++) {
            double cx = (x + 0.5) * 0.5 - 0.5;
            int x0 = (int)floor(cx);
            double fx = cx - x0;
            int xa = x0 < 0 ? 0 : x0 >= cw ? cw - 1 : x0, xb = x0 + 1 >= cw ? cw - 1 : x0 + 1 < 0 ? 0 : x0 + 1;
            double chroma[2];
            for (int p = 0; p < 2; p++) {
                const unsigned char *c = planes[1 + p];
                double top = c[(size_t)ya * cw + xa] * (1 - fx) + c[(size_t)ya * cw + xb] * fx;
                double bottom = c[(size_t)yb * cw + xa] * (1 - fx) + c[(size_t)yb * cw + xb] * fx;
                chroma[p] = (top * (1 - fy) + bottom * fy) / 255.0 - 0.502;
            }
            double yy = (planes[0][(size_t)y * w + x] / 255.0 - 0.0627) * 1.164, u = chroma[0], v = chroma[1];
            double rgb[3] = {yy + 1.596 * v, yy - 0.392 * u - 0.813 * v, yy + 2.017 * u};
            uint32_t px = 0xFF000000u;
            for (int k = 0; k < 3; k++) {
                double c = rgb[k] < 0 ? 0 : rgb[k] > 1 ? 1 : rgb[k];
                px |= (uint32_t)(c * 255 + 0.5) << (16 - 8 * k);
            }
            row[x] = px;
        }
    }
    cairo_surface_mark_dirty(s);
    cairo_t *cr = g->cr;
    double x = eval(&d->x, st), y = eval(&d->y, st), rw = eval(&d->w, st), rh = eval(&d->h, st);
    if (rw != 0 && rh != 0) {
        cairo_save(cr);
        aliased_clip(cr, x, y, rw, rh);
        cairo_translate(cr, x, y);
        cairo_scale(cr, rw / w, rh / h);
        cairo_set_source_surface(cr, s, 0, 0);
        cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_BILINEAR);
        cairo_pattern_set_extend(cairo_get_source(cr), CAIRO_EXTEND_PAD);
        cairo_paint(cr);
        cairo_restore(cr);
    }
    cairo_surface_destroy(s);
    return 0;
}

static void set_stops(cairo_pattern_t *p, const node *d, const frame_state *st) {
    for (int i = 0; i < d->n_stops; i++) {
        const double *c = d->stop_color[i];
        cairo_pattern_add_color_stop_rgba(p, eval(&d->stop_pos[i], st), c[0], c[1], c[2], c[3]);
    }
    cairo_pattern_set_extend(p, CAIRO_EXTEND_PAD); /* Skia's clamp: the end colours continue past the ends */
}

static int draw_nodes(engine *g, node *nodes, int n, frame_state *st, int depth, char *err, size_t errlen);

static int draw_node(engine *g, node *d, frame_state *st, int depth, char *err, size_t errlen) {
    cairo_t *cr = g->cr;
    switch (d->op) {
    case OP_RECT: {
        double x = eval(&d->x, st), y = eval(&d->y, st), w = eval(&d->w, st), h = eval(&d->h, st);
        cairo_set_operator(cr, d->blend);
        set_color(cr, d->color);
        cairo_rectangle(cr, x, y, w, h);
        cairo_fill(cr);
        cairo_set_operator(cr, CAIRO_OPERATOR_OVER);
        break;
    }
    case OP_RRECT:
    case OP_BORDER:
        set_color(cr, d->color);
        rrect_path(cr, eval(&d->x, st), eval(&d->y, st), eval(&d->w, st), eval(&d->h, st), eval(&d->radius, st));
        if (d->op == OP_RRECT) cairo_fill(cr);
        else {
            cairo_set_line_width(cr, fabs(eval(&d->width, st)));
            cairo_stroke(cr);
        }
        break;
    case OP_LINEAR:
    case OP_RADIAL: {
        cairo_pattern_t *p = d->op == OP_LINEAR ? cairo_pattern_create_linear(eval(&d->gx0, st), eval(&d->gy0, st), eval(&d->gx1, st), eval(&d->gy1, st))
                                                : cairo_pattern_create_radial(eval(&d->gx0, st), eval(&d->gy0, st), 0, eval(&d->gx0, st), eval(&d->gy0, st), eval(&d->gr, st));
        set_stops(p, d, st);
        cairo_set_source(cr, p);
        cairo_rectangle(cr, eval(&d->x, st), eval(&d->y, st), eval(&d->w, st), eval(&d->h, st));
        cairo_fill(cr);
        cairo_pattern_destroy(p);
        break;
    }
    case OP_SHADOW:
        if (draw_shadow(g, d, st)) { snprintf(err, errlen, "out of memory blurring a shadow"); return -1; }
        break;
    case OP_BACKDROP:
        if (draw_backdrop(g, d, st)) { snprintf(err, errlen, "out of memory blurring a backdrop"); return -1; }
        break;
    case OP_TEXT: draw_text(g, d, st); break;
    case OP_IMAGE:
        if (draw_image(g, d, st, err, errlen)) return -1;
        break;
    case OP_VIDEO:
        if (draw_video(g, d, st, err, errlen)) return -1;
        break;
    case OP_PATH:
        set_color(cr, d->color);
        points_path(cr, d, st, d->closed);
        if (d->has_stroke) {
            cairo_set_line_width(cr, fabs(eval(&d->width, st)));
            cairo_stroke(cr);
        } else {
            cairo_fill(cr);
        }
        break;
    case OP_MESH:
    case OP_RECT_BATCH: {
        /* One vertex draw without anti-aliasing in the reference: one path per colour, filled aliased (a pixel is
         * in when its centre is). A mesh's two triangles of a cell are each colour's path. */
        int count = count_of(&d->count, st);
        st->counts->draw_calls++;
        if (count == 0) return 0;
        double x = eval(&d->x, st), y = eval(&d->y, st), w = eval(&d->w, st), h = eval(&d->h, st), tx, ty;
        translation(cr, &tx, &ty);
        cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);
        if (d->op == OP_RECT_BATCH) {
            double dx = eval(&d->dx, st), dy = eval(&d->dy, st);
            if (count > MAX_BATCH) count = MAX_BATCH;
            for (int i = 0; i < count; i++) {
                double x0 = x + dx * (i % d->columns), y0 = y + dy * (i / d->columns);
                double sx0 = snap(x0, tx), sy0 = snap(y0, ty);
                cairo_rectangle(cr, sx0, sy0, snap(x0 + w, tx) - sx0, snap(y0 + h, ty) - sy0);
            }
            set_color(cr, d->color);
            cairo_fill(cr);
        } else {
            int rows = count > MAX_MESH_CELLS / d->columns ? MAX_MESH_CELLS / d->columns : count, cols = d->columns;
            for (int tri = 0; tri < 2; tri++) {
                for (int r = 0; r < rows; r++) {
                    double y0 = snap(y + h * r / rows, ty), y1 = snap(y + h * (r + 1) / rows, ty);
                    for (int c = 0; c < cols; c++) {
                        double x0 = snap(x + w * c / cols, tx), x1 = snap(x + w * (c + 1) / cols, tx);
                        if (tri == 0) { cairo_move_to(cr, x0, y0); cairo_line_to(cr, x1, y0); cairo_line_to(cr, x0, y1); }
                        else { cairo_move_to(cr, x1, y0); cairo_line_to(cr, x1, y1); cairo_line_to(cr, x0, y1); }
                        cairo_close_path(cr);
                    }
                }
                set_color(cr, tri == 0 ? d->color : d->alt);
                cairo_fill(cr);
            }
        }
        cairo_set_antialias(cr, CAIRO_ANTIALIAS_DEFAULT);
        return 0;
    }
    case OP_REPEAT: {
        int count = count_of(&d->count, st), outer = st->i;
        double dx = eval(&d->dx, st), dy = eval(&d->dy, st);
        for (int i = 0; i < count; i++) {
            int col = d->has_columns ? i % d->columns : i, row = d->has_columns ? i / d->columns : i;
            st->i = i;
            cairo_save(cr);
            cairo_translate(cr, dx * col, dy * row);
            int r = draw_nodes(g, d->kids, d->n_kids, st, depth + 1, err, errlen);
            cairo_restore(cr);
            if (r) return -1;
        }
        st->i = outer;
        return 0;
    }
    case OP_GROUP: {
        cairo_save(cr);
        cairo_translate(cr, eval(&d->dx, st), eval(&d->dy, st));
        int r = draw_nodes(g, d->kids, d->n_kids, st, depth + 1, err, errlen);
        cairo_restore(cr);
        return r;
    }
    case OP_LAYER: {
        double opacity = eval(&d->opacity, st);
        /* The reference's saveLayerAlpha takes the opacity in whole 8-bit levels. */
        double alpha = nearbyint(255 * (opacity < 0 ? 0 : opacity > 1 ? 1 : opacity)) / 255.0;
        cairo_push_group(cr);
        int r = draw_nodes(g, d->kids, d->n_kids, st, depth + 1, err, errlen);
        cairo_pop_group_to_source(cr);
        cairo_paint_with_alpha(cr, alpha);
        return r;
    }
    case OP_CLIP: {
        cairo_save(cr);
        if (d->shape == CLIP_PATH) points_path(cr, d, st, 1);
        else if (d->shape == CLIP_RRECT) rrect_path(cr, eval(&d->x, st), eval(&d->y, st), eval(&d->w, st), eval(&d->h, st), eval(&d->radius, st));
        else cairo_rectangle(cr, eval(&d->x, st), eval(&d->y, st), eval(&d->w, st), eval(&d->h, st));
        cairo_clip(cr);
        int r = draw_nodes(g, d->kids, d->n_kids, st, depth + 1, err, errlen);
        cairo_restore(cr);
        return r;
    }
    }
    st->counts->draw_calls++;
    return 0;
}

static int draw_nodes(engine *g, node *nodes, int n, frame_state *st, int depth, char *err, size_t errlen) {
    for (int i = 0; i < n; i++) {
        /* A CPU rasteriser draws as the calls are made: a long frame stops between ops on SIGTERM. */
        if (zk_stopping()) { snprintf(err, errlen, "stopped by a signal"); return -1; }
        if (draw_node(g, &nodes[i], st, depth, err, errlen)) return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------ the engine */

static int e_open(void *self, char *err, size_t errlen) {
    engine *g = self;
    /* Cairo needs no device: check that an image surface can be drawn on at all. */
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
    cairo_status_t status = cairo_surface_status(s);
    cairo_surface_destroy(s);
    if (status != CAIRO_STATUS_SUCCESS) { snprintf(err, errlen, "cairo: %s", cairo_status_to_string(status)); return -1; }
    FT_Int major = 0, minor = 0, patch = 0;
    FT_Library lib;
    if (FT_Init_FreeType(&lib) == 0) {
        FT_Library_Version(lib, &major, &minor, &patch);
        FT_Done_FreeType(lib);
    }
    snprintf(g->libraries, sizeof g->libraries, "\"cairo\": \"%s\", \"freetype\": \"%d.%d.%d\"", cairo_version_string(), major, minor, patch);
    return 0;
}

static void e_gpu_info(void *self, zk_buf *b) {
    (void)self;
    /* No GPU: the renderer is Cairo's image backend (pixman) on the CPU. */
    zk_buf_add(b, "\"renderer\": \"cairo image surface (pixman)\", \"cairo_version\": ");
    zk_buf_str(b, cairo_version_string());
}

static const char *const NO_TIMER[] = {"none", NULL};
static const char *const *e_timer_sources(void *self) { (void)self; return NO_TIMER; }

static zk_gpu *e_open_timer(void *self, const char *source, char *err, size_t errlen) {
    (void)self;
    if (source && strcmp(source, "none") != 0) {
        snprintf(err, errlen, "GPU time source %s: Cairo's image surfaces draw on the CPU, which has none", source);
        return NULL;
    }
    return zk_no_timer();
}

static int e_prepare(void *self, const zk_job *job, char *err, size_t errlen) {
    engine *g = self;
    compile_ctx c = {err, errlen, ZK_EXIT_USAGE, g};
    g->width = job->width;
    g->height = job->height;
    if (compile_ops(&c, job->ops, "ops", &g->root, &g->n_root, 0) != 0) return c.code;
    if (check_counts(g->root, g->n_root, job, err, errlen, "ops")) return ZK_EXIT_USAGE;
    g->surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, g->width, g->height);
    if (cairo_surface_status(g->surface) != CAIRO_STATUS_SUCCESS) {
        snprintf(err, errlen, "a %dx%d ARGB32 image surface: %s", g->width, g->height, cairo_status_to_string(cairo_surface_status(g->surface)));
        return ZK_EXIT_FAILED;
    }
    g->cr = cairo_create(g->surface);
    /* Text as the reference sets it: grey anti-aliasing, no hinting, unrounded advances. */
    g->font_options = cairo_font_options_create();
    cairo_font_options_set_antialias(g->font_options, CAIRO_ANTIALIAS_GRAY);
    cairo_font_options_set_hint_style(g->font_options, CAIRO_HINT_STYLE_NONE);
    cairo_font_options_set_hint_metrics(g->font_options, CAIRO_HINT_METRICS_OFF);
    return 0;
}

static int e_draw(void *self, int frame, double complexity, zk_counts *counts, char *err, size_t errlen) {
    engine *g = self;
    frame_state st = {frame, complexity, 0, counts};
    cairo_t *cr = g->cr;
    cairo_save(cr);
    cairo_set_operator(cr, CAIRO_OPERATOR_SOURCE);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_restore(cr);
    int r = draw_nodes(g, g->root, g->n_root, &st, 0, err, errlen);
    if (!r && cairo_status(cr) != CAIRO_STATUS_SUCCESS) {
        snprintf(err, errlen, "cairo: %s", cairo_status_to_string(cairo_status(cr)));
        return -1;
    }
    return r;
}

/* The image backend draws as the calls are made; flushing hands the pixels over, as glFlush would. */
static void e_submit(void *self) { cairo_surface_flush(((engine *)self)->surface); }

static int e_api_error(void *self, char *detail, size_t len) {
    engine *g = self;
    cairo_status_t s = cairo_status(g->cr);
    if (s == CAIRO_STATUS_SUCCESS) return 0;
    snprintf(detail, len, "cairo error in the frame: %s", cairo_status_to_string(s));
    return 1;
}

static const char *e_frame_issue(void *self, char *detail, size_t len) {
    engine *g = self;
    if (g->font_fallback && !g->font_fallback_reported) {
        g->font_fallback_reported = 1;
        snprintf(detail, len, "DejaVu Sans not found (looked in %s, %s, %s); text uses Cairo's sans-serif", FONT_PATHS[0], FONT_PATHS[1], FONT_PATHS[2]);
        return "font_fallback";
    }
    return NULL;
}

static int e_read_rgba(void *self, unsigned char *rgba, char *err, size_t errlen) {
    engine *g = self;
    (void)err; (void)errlen;
    cairo_surface_flush(g->surface);
    const unsigned char *data = cairo_image_surface_get_data(g->surface);
    int stride = cairo_image_surface_get_stride(g->surface);
    for (int y = 0; y < g->height; y++) {
        const uint32_t *row = (const uint32_t *)(const void *)(data + (size_t)y * stride);
        unsigned char *out = rgba + (size_t)y * g->width * 4;
        for (int x = 0; x < g->width; x++, out += 4) {
            uint32_t p = row[x], a = p >> 24;
            unsigned c[3] = {(p >> 16) & 0xFF, (p >> 8) & 0xFF, p & 0xFF};
            /* ARGB32 is premultiplied; captures are not. */
            for (int k = 0; k < 3; k++) out[k] = (unsigned char)(a == 255 ? c[k] : a == 0 ? 0 : (c[k] * 255 + a / 2) / a > 255 ? 255 : (c[k] * 255 + a / 2) / a);
            out[3] = (unsigned char)a;
        }
    }
    return 0;
}

static void e_close(void *self) {
    engine *g = self;
    free_nodes(g->root, g->n_root);
    free(g->root);
    g->root = NULL;
    if (g->cr) cairo_destroy(g->cr);
    if (g->surface) cairo_surface_destroy(g->surface);
    if (g->font_options) cairo_font_options_destroy(g->font_options);
    if (g->font) cairo_font_face_destroy(g->font);
    if (g->cjk_font) cairo_font_face_destroy(g->cjk_font);
    g->cr = NULL; g->surface = NULL; g->font_options = NULL; g->font = NULL; g->cjk_font = NULL;
    /* The FT faces outlive the Cairo faces made from them (cairo-ft.h): released last. */
    if (g->face) FT_Done_Face(g->face);
    if (g->cjk_face) FT_Done_Face(g->cjk_face);
    if (g->ft) FT_Done_FreeType(g->ft);
    g->face = g->cjk_face = NULL;
    g->ft = NULL;
}

int main(int argc, char **argv) {
    static engine g;
    zk_engine e = {
        .runner_name = "zbench-cairo",
        .runner_version = ZB_VERSION,
        .backend = "cairo",
        .features = FEATURES,
        ZK_BUILD_INIT,
        .libraries_json = g.libraries,
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
