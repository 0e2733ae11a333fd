// The display list compiled for QPainter (qt_scene.h). Op semantics are the reference runner's
// (pytest_zbench/runner/interpreter.py); what each op maps to, and what Qt draws differently, is in
// docs/native-runner.md, "Porting an engine" / "Qt 6".
#include "qt_scene.h"

#include <QFile>
#include <QFontDatabase>
#include <QFontMetricsF>
#include <QLinearGradient>
#include <QPainterPath>
#include <QPen>
#include <QRadialGradient>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" {
#include "noise.h"
}

namespace zqt {

const char *const FEATURES[] = {"rect",   "rrect",      "border", "linear_gradient", "radial_gradient", "shadow",
                                "backdrop_blur", "text", "image", "mesh", "rect_batch", "shader", "path", "clip",
                                "layer",  "group",      "repeat", nullptr};

namespace {

// Caps from docs/display-list.md ("Complexity"); the texture constants are the reference runner's.
constexpr int MAX_REPEAT = 100000;
constexpr int MAX_BATCH = 65536;
constexpr int MAX_MESH_CELLS = 65536;
constexpr int MAX_LOOPS = 1024;
constexpr int MAX_FETCHES = 64;
constexpr int CHECKER_CELL = 8;
constexpr int TEXTURE_ALPHA = 0xA0;
constexpr double PI = 3.14159265358979323846;

const char *const SANS_PATHS[] = {"/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/dejavu/DejaVuSans.ttf",
                                  "/usr/share/fonts/TTF/DejaVuSans.ttf", nullptr};
const char *const CJK_PATHS[] = {"/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
                                 "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc", nullptr};

enum Op { RECT, RRECT, BORDER, LINEAR, RADIAL, SHADOW, BACKDROP, SHADER, TEXT, IMAGE, MESH, RECT_BATCH, PATH, CLIP, LAYER, GROUP, REPEAT };
enum Upload { ONCE, EVERY_FRAME, DECODE };
enum Filter { NEAREST, LINEAR_FILTER, MIPMAP };
enum ClipKind { CLIP_RECT, CLIP_RRECT, CLIP_PATH };

struct Compiler {
    char *err;
    size_t errlen;
    int code = ZK_EXIT_USAGE;
    Fonts *fonts;
    bool advanced_blends;
    int bad(const std::string &path, const char *key, const std::string &what) {
        snprintf(err, errlen, "%s.%s: %s", path.c_str(), key, what.c_str());
        code = ZK_EXIT_USAGE;
        return -1;
    }
};

}  // namespace

struct Node {
    Op op = RECT;
    Num x, y, w, h, radius, width, dx, dy, count, x0, y0, x1, y1, cx, cy, r, blur, size, max_width, line_height,
        stroke_width, opacity;
    bool has_max_width = false, has_line_height = false, has_stroke = false, closed = false;
    QColor color, alt;
    QPainter::CompositionMode blend = QPainter::CompositionMode_SourceOver;
    int columns = 1;
    bool has_columns = false;
    std::vector<std::pair<Num, QColor>> stops;
    std::vector<std::pair<Num, Num>> points;
    // text
    QString text, family;
    bool templated = false;
    // the wrapped lines of a text that is not templated, for the size and width they were wrapped at
    QStringList lines;
    double lines_size = -1, lines_width = -2;
    // image
    int tex_w = 0, tex_h = 0, upload = ONCE, filter = NEAREST;
    std::vector<unsigned char> pixels;
    QImage::Format format = QImage::Format_RGBA8888;
    QImage once;
    QByteArray png;
    bool counted = false;
    // clip
    int shape = CLIP_RECT;
    // shadow: the blurred mask of the last parameters, reused while they stay the same
    QImage shadow;
    double shadow_key[8] = {0};
    // rect_batch and mesh: the key of what was built last (count and position)
    std::vector<QRectF> rects;
    double rects_key[7] = {-1};
    // mesh: the paths of the last row count and position (the cells' first triangles, then their second ones)
    QPainterPath mesh[2];
    // shader: fetches, and whether each read depends on the one before
    int fetches = 0;
    bool dependent = false;
    // layer: its offscreen image, kept between frames
    QImage layer;
    Nodes kids;
};

double Num::at(int frame, double complexity) const {
    switch (kind) {
    case CONST: return a;
    case LINEAR: return a + (b - a) * (std::fmod((double)frame, c) / c);
    case SINE: return a + b * std::sin(2.0 * PI * frame / c);
    case STEP: return values[(size_t)((frame / every) % (int)values.size())];
    default: return complexity < 0 ? 0 : complexity;
    }
}

// A count as the reference rounds it: half to even, never below 0 (docs/display-list.md).
static int count_of(const Num &n, const FrameState &st) {
    double v = std::nearbyint(n.at(st.frame, st.complexity));
    return v < 0 ? 0 : v > MAX_REPEAT ? MAX_REPEAT : (int)v;
}

namespace {

int get_num(Compiler &c, const zj_value *op, const std::string &path, const char *key, bool may_complexity, Num *out,
            bool optional = false, bool *present = nullptr) {
    const zj_value *v = zj_get(op, key);
    *out = Num();
    if (present) *present = v && v->type != ZJ_NULL;
    if (!v || v->type == ZJ_NULL) return optional ? 0 : c.bad(path, key, "missing");
    if (v->type == ZJ_NUMBER) {
        out->a = v->number;
        return 0;
    }
    if (v->type == ZJ_STRING && std::strcmp(v->string, "complexity") == 0) {
        if (!may_complexity)
            return c.bad(path, key, "\"complexity\" is allowed only on repeat.count, rect_batch.count and mesh.rows (docs/display-list.md)");
        out->kind = Num::COMPLEXITY;
        return 0;
    }
    const zj_value *anim = zj_get(v, "anim");
    if (!anim || anim->type != ZJ_STRING) return c.bad(path, key, "is neither a number nor an animation");
    std::string sub = path + "." + key;
    if (!std::strcmp(anim->string, "linear") || !std::strcmp(anim->string, "sine")) {
        bool linear = anim->string[0] == 'l';
        const char *k1 = linear ? "from" : "center", *k2 = linear ? "to" : "amplitude";
        const zj_value *a = zj_get(v, k1), *b = zj_get(v, k2), *p = zj_get(v, "period");
        if (!a || a->type != ZJ_NUMBER) return c.bad(sub, k1, "missing or not a number");
        if (!b || b->type != ZJ_NUMBER) return c.bad(sub, k2, "missing or not a number");
        if (!p || p->type != ZJ_NUMBER || !(p->number > 0)) return c.bad(sub, "period", "must be a positive number");
        out->kind = linear ? Num::LINEAR : Num::SINE;
        out->a = a->number;
        out->b = b->number;
        out->c = p->number;
        return 0;
    }
    if (!std::strcmp(anim->string, "step")) {
        const zj_value *vals = zj_get(v, "values"), *every = zj_get(v, "every");
        if (!vals || vals->type != ZJ_ARRAY || vals->len == 0) return c.bad(sub, "values", "must be a non-empty array of numbers");
        if (!every || !every->is_integer || every->integer < 1 || every->integer > 1000000000)
            return c.bad(sub, "every", "must be a positive integer");
        out->kind = Num::STEP;
        out->every = (int)every->integer;
        for (const zj_value *e = vals->first; e; e = e->next) {
            if (e->type != ZJ_NUMBER) return c.bad(sub, "values", "must be numbers");
            out->values.push_back(e->number);
        }
        return 0;
    }
    return c.bad(sub, "anim", "must be linear, sine or step");
}

int get_nums(Compiler &c, const zj_value *op, const std::string &path, std::initializer_list<std::pair<const char *, Num *>> keys) {
    for (const auto &k : keys)
        if (get_num(c, op, path, k.first, false, k.second)) return -1;
    return 0;
}

int parse_color(const zj_value *v, QColor *out) {
    if (!v || v->type != ZJ_STRING || v->string[0] != '#' || (v->len != 7 && v->len != 9)) return -1;
    int ch[4] = {0, 0, 0, 255};
    for (size_t i = 0; i < (v->len - 1) / 2; i++) {
        int value = 0;
        for (int k = 0; k < 2; k++) {
            char hc = v->string[1 + 2 * i + k];
            value <<= 4;
            if (hc >= '0' && hc <= '9') value |= hc - '0';
            else if (hc >= 'a' && hc <= 'f') value |= hc - 'a' + 10;
            else if (hc >= 'A' && hc <= 'F') value |= hc - 'A' + 10;
            else return -1;
        }
        ch[i] = value;
    }
    *out = QColor(ch[0], ch[1], ch[2], ch[3]);
    return 0;
}

int get_color(Compiler &c, const zj_value *op, const std::string &path, const char *key, QColor *out) {
    if (parse_color(zj_get(op, key), out)) return c.bad(path, key, "must be a colour \"#RRGGBB\" or \"#RRGGBBAA\"");
    return 0;
}

int get_choice(Compiler &c, const zj_value *op, const std::string &path, const char *key, std::initializer_list<const char *> choices, int *out) {
    const zj_value *v = zj_get(op, key);
    int i = 0;
    if (v && v->type == ZJ_STRING)
        for (const char *choice : choices) {
            if (!std::strcmp(v->string, choice)) {
                *out = i;
                return 0;
            }
            i++;
        }
    std::string what = "must be one of";
    i = 0;
    for (const char *choice : choices) what += std::string(i++ ? ", " : " ") + choice;
    return c.bad(path, key, what);
}

int get_int(Compiler &c, const zj_value *op, const std::string &path, const char *key, int min, int max, int *out) {
    const zj_value *v = zj_get(op, key);
    if (!v || !v->is_integer || v->integer < min || v->integer > max)
        return c.bad(path, key, "must be an integer in " + std::to_string(min) + ".." + std::to_string(max));
    *out = (int)v->integer;
    return 0;
}

int get_points(Compiler &c, const zj_value *v, const std::string &path, const char *key, size_t min, Node *n) {
    if (!v || v->type != ZJ_ARRAY || v->len < min)
        return c.bad(path, key, "must be at least " + std::to_string(min) + " [x, y] points");
    for (const zj_value *pt = v->first; pt; pt = pt->next) {
        if (pt->type != ZJ_ARRAY || pt->len != 2) return c.bad(path, key, "every point must be [x, y]");
        // Each coordinate may be an animation: read it as the member of a two-key object.
        zj_value holder{}, xs = *pt->first, ys = *pt->first->next;
        holder.type = ZJ_OBJECT;
        xs.key = (char *)"x";
        ys.key = (char *)"y";
        xs.next = &ys;
        ys.next = nullptr;
        holder.first = &xs;
        Num px, py;
        std::string sub = path + "." + key;
        if (get_num(c, &holder, sub, "x", false, &px) || get_num(c, &holder, sub, "y", false, &py)) return -1;
        n->points.emplace_back(px, py);
    }
    return 0;
}

int compile_ops(Compiler &c, const zj_value *ops, const std::string &path, Nodes *out, int depth);

int compile_op(Compiler &c, const zj_value *op, const std::string &path, Node *n, int depth) {
    if (op->type != ZJ_OBJECT) return c.bad(path, "op", "the op is not an object");
    const zj_value *name = zj_get(op, "op");
    if (!name || name->type != ZJ_STRING) return c.bad(path, "op", "missing or not a string");
    const std::string o = name->string;
    auto xywh = [&]() { return get_nums(c, op, path, {{"x", &n->x}, {"y", &n->y}, {"w", &n->w}, {"h", &n->h}}); };
    if (o == "rect") {
        n->op = RECT;
        if (xywh() || get_color(c, op, path, "color", &n->color)) return -1;
        const zj_value *b = zj_get(op, "blend");
        int blend = 0;
        if (b && b->type != ZJ_NULL && get_choice(c, op, path, "blend", {"src_over", "multiply", "screen", "plus"}, &blend)) return -1;
        static const QPainter::CompositionMode modes[] = {QPainter::CompositionMode_SourceOver, QPainter::CompositionMode_Multiply,
                                                          QPainter::CompositionMode_Screen, QPainter::CompositionMode_Plus};
        n->blend = modes[blend];
        if ((blend == 1 || blend == 2) && !c.advanced_blends) {
            // Qt's OpenGL paint engine draws these through KHR_blend_equation_advanced, which raises
            // GL_INVALID_OPERATION on Mesa llvmpipe: skipped, not drawn wrong (docs/native-runner.md).
            snprintf(c.err, c.errlen, "rect (blend %s: Qt's OpenGL paint engine draws it with KHR_blend_equation_advanced, "
                     "which raised GL_INVALID_OPERATION on Mesa llvmpipe)", blend == 1 ? "multiply" : "screen");
            c.code = ZK_EXIT_SKIPPED;
            return -1;
        }
#ifdef ZQT_RECT_RED_DELTA
        // A test build (tests/engines/test_qt_runner.py): every rect's red this many levels off (the other way at
        // the top of the range), a change its golden test must catch.
        int red = n->color.red() + ZQT_RECT_RED_DELTA;
        n->color.setRed(red > 255 ? n->color.red() - ZQT_RECT_RED_DELTA : red);
#endif
        return 0;
    }
    if (o == "rrect" || o == "border") {
        n->op = o == "rrect" ? RRECT : BORDER;
        if (xywh() || get_num(c, op, path, "radius", false, &n->radius) || get_color(c, op, path, "color", &n->color)) return -1;
        return n->op == BORDER ? get_num(c, op, path, "width", false, &n->width) : 0;
    }
    if (o == "linear_gradient" || o == "radial_gradient") {
        n->op = o[0] == 'l' ? LINEAR : RADIAL;
        if (xywh()) return -1;
        if (n->op == LINEAR ? get_nums(c, op, path, {{"x0", &n->x0}, {"y0", &n->y0}, {"x1", &n->x1}, {"y1", &n->y1}})
                            : get_nums(c, op, path, {{"cx", &n->cx}, {"cy", &n->cy}, {"r", &n->r}}))
            return -1;
        const zj_value *stops = zj_get(op, "stops");
        if (!stops || stops->type != ZJ_ARRAY || stops->len == 0) return c.bad(path, "stops", "needs a non-empty list of [pos, colour] stops");
        for (const zj_value *s = stops->first; s; s = s->next) {
            if (s->type != ZJ_ARRAY || s->len != 2) return c.bad(path, "stops", "every stop must be [pos, colour]");
            zj_value holder{}, pos = *s->first;
            holder.type = ZJ_OBJECT;
            pos.key = (char *)"pos";
            pos.next = nullptr;
            holder.first = &pos;
            Num at;
            QColor col;
            if (get_num(c, &holder, path + ".stops", "pos", false, &at)) return -1;
            if (parse_color(s->first->next, &col)) return c.bad(path, "stops", "a stop's colour must be \"#RRGGBB\" or \"#RRGGBBAA\"");
            n->stops.emplace_back(at, col);
        }
        return 0;
    }
    if (o == "shadow") {
        n->op = SHADOW;
        return xywh() || get_nums(c, op, path, {{"radius", &n->radius}, {"blur", &n->blur}, {"dx", &n->dx}, {"dy", &n->dy}}) ||
                       get_color(c, op, path, "color", &n->color)
                   ? -1
                   : 0;
    }
    if (o == "backdrop_blur") {
        n->op = BACKDROP;
        return xywh() || get_num(c, op, path, "blur", false, &n->blur) ? -1 : 0;
    }
    if (o == "shader") {
        n->op = SHADER;
        if (xywh() || get_num(c, op, path, "loops", true, &n->count) || get_int(c, op, path, "fetches", 0, MAX_FETCHES, &n->fetches)) return -1;
        if (n->count.kind != Num::COMPLEXITY &&
            (n->count.kind != Num::CONST || n->count.a != std::floor(n->count.a) || n->count.a < 0 || n->count.a > MAX_LOOPS))
            return c.bad(path, "loops", "must be an integer in 0..1024 or \"complexity\"");
        int reads = 0;
        const zj_value *r = zj_get(op, "reads");
        if (r && r->type != ZJ_NULL && get_choice(c, op, path, "reads", {"independent", "dependent"}, &reads)) return -1;
        n->dependent = reads == 1;
        return 0;
    }
    if (o == "text") {
        n->op = TEXT;
        if (get_nums(c, op, path, {{"x", &n->x}, {"y", &n->y}, {"size", &n->size}}) || get_color(c, op, path, "color", &n->color) ||
            get_num(c, op, path, "max_width", false, &n->max_width, true, &n->has_max_width) ||
            get_num(c, op, path, "line_height", false, &n->line_height, true, &n->has_line_height))
            return -1;
        const zj_value *t = zj_get(op, "text");
        if (!t || t->type != ZJ_STRING) return c.bad(path, "text", "must be a string");
        n->text = QString::fromUtf8(t->string, (qsizetype)t->len);
        n->templated = n->text.contains(QLatin1String("{frame}")) || n->text.contains(QLatin1String("{i}"));
        int font = 0;
        const zj_value *f = zj_get(op, "font");
        if (f && f->type != ZJ_NULL && get_choice(c, op, path, "font", {"sans", "cjk"}, &font)) return -1;
        std::string why;
        if (!load_fonts(c.fonts, font == 1, &why)) {
            snprintf(c.err, c.errlen, "%s", why.c_str());
            c.code = ZK_EXIT_FAILED;
            return -1;
        }
        n->family = font == 1 ? c.fonts->cjk_family : c.fonts->sans_family;
        return 0;
    }
    if (o == "image") {
        n->op = IMAGE;
        int pattern = 0, alpha = 0;
        if (xywh() || get_int(c, op, path, "tex_w", 1, ZK_MAX_SIDE, &n->tex_w) || get_int(c, op, path, "tex_h", 1, ZK_MAX_SIDE, &n->tex_h) ||
            get_choice(c, op, path, "pattern", {"checker", "noise"}, &pattern) ||
            get_choice(c, op, path, "upload", {"once", "every_frame", "decode"}, &n->upload) ||
            get_choice(c, op, path, "filter", {"nearest", "linear", "mipmap"}, &n->filter))
            return -1;
        const zj_value *seed = zj_get(op, "seed");
        if (!seed || !seed->is_integer || (pattern == 1 && seed->integer < 0)) return c.bad(path, "seed", "must be an integer (non-negative for noise)");
        if (n->filter == MIPMAP) {
            // QPainter samples bilinearly from the image itself, with no mip levels: a downscale aliases where
            // the reference averages (texture.every_frame.mip.s1024: 4% of the area off by up to 125). Skipped,
            // not drawn as another filter (docs/native-runner.md, "Porting an engine").
            snprintf(c.err, c.errlen, "image (filter mipmap: QPainter has no mipmapped sampling)");
            c.code = ZK_EXIT_SKIPPED;
            return -1;
        }
        const zj_value *a = zj_get(op, "alpha");
        if (a && a->type != ZJ_NULL && get_choice(c, op, path, "alpha", {"opaque", "premul", "unpremul"}, &alpha)) return -1;
        size_t bytes = (size_t)n->tex_w * (size_t)n->tex_h * 4;
        n->pixels.resize(bytes);
        unsigned char *px = n->pixels.data();
        if (pattern == 0) {
            static const unsigned char colors[2][4] = {{0x20, 0x50, 0xA0, 0xFF}, {0xF0, 0xC0, 0x40, 0xFF}};
            for (int yy = 0; yy < n->tex_h; yy++)
                for (int xx = 0; xx < n->tex_w; xx++)
                    std::memcpy(px + ((size_t)yy * n->tex_w + xx) * 4, colors[(xx / CHECKER_CELL + yy / CHECKER_CELL) % 2], 4);
        } else {
            zb_noise_rgba(px, n->tex_w, n->tex_h, (uint64_t)seed->integer);
        }
        if (alpha != 0)  // translucent: alpha 0xA0 everywhere, colours premultiplied (rounded) or not
            for (size_t i = 0; i < bytes; i += 4) {
                if (alpha == 1)
                    for (int k = 0; k < 3; k++) px[i + k] = (unsigned char)((px[i + k] * TEXTURE_ALPHA + 127) / 255);
                px[i + 3] = TEXTURE_ALPHA;
            }
        n->format = alpha == 1 ? QImage::Format_RGBA8888_Premultiplied : QImage::Format_RGBA8888;
        QImage view(px, n->tex_w, n->tex_h, n->tex_w * 4, n->format);
        // `once`: converted to the painter's native format before frame 0 and kept (a GPU backend caches its
        // texture by the image's key); the other policies build a new image in every frame.
        if (n->upload == ONCE) n->once = view.convertToFormat(QImage::Format_ARGB32_Premultiplied);
        if (n->upload == DECODE) {
            size_t len = 0;
            unsigned char *png = zk_png_encode(px, n->tex_w, n->tex_h, &len);
            if (!png) return c.bad(path, "tex_w", "texture too large to encode");
            n->png = QByteArray((const char *)png, (qsizetype)len);
            std::free(png);
        }
        return 0;
    }
    if (o == "mesh") {
        n->op = MESH;
        if (xywh() || get_int(c, op, path, "columns", 1, MAX_MESH_CELLS, &n->columns) || get_num(c, op, path, "rows", true, &n->count) ||
            get_color(c, op, path, "color", &n->color) || get_color(c, op, path, "alt_color", &n->alt))
            return -1;
        if (n->count.kind != Num::COMPLEXITY &&
            (n->count.kind != Num::CONST || n->count.a != std::floor(n->count.a) || n->count.a < 1 || n->count.a * n->columns > MAX_MESH_CELLS))
            return c.bad(path, "rows", "must be a positive integer with columns x rows at most 65536, or \"complexity\"");
        return 0;
    }
    if (o == "rect_batch") {
        n->op = RECT_BATCH;
        if (get_num(c, op, path, "count", true, &n->count) || get_int(c, op, path, "columns", 1, MAX_BATCH, &n->columns) ||
            get_nums(c, op, path, {{"dx", &n->dx}, {"dy", &n->dy}}) || xywh() || get_color(c, op, path, "color", &n->color))
            return -1;
        if (n->count.kind != Num::COMPLEXITY &&
            (n->count.kind != Num::CONST || n->count.a != std::floor(n->count.a) || n->count.a < 1 || n->count.a > MAX_BATCH))
            return c.bad(path, "count", "must be an integer in 1..65536 or \"complexity\"");
        return 0;
    }
    if (o == "path") {
        n->op = PATH;
        const zj_value *closed = zj_get(op, "closed");
        if (!closed || closed->type != ZJ_BOOL) return c.bad(path, "closed", "must be true or false");
        n->closed = closed->boolean;
        return get_points(c, zj_get(op, "points"), path, "points", 2, n) || get_color(c, op, path, "color", &n->color) ||
                       get_num(c, op, path, "stroke_width", false, &n->stroke_width, true, &n->has_stroke)
                   ? -1
                   : 0;
    }
    // The ops that hold ops.
    if (o == "repeat" || o == "group") {
        n->op = o == "repeat" ? REPEAT : GROUP;
        if (get_nums(c, op, path, {{"dx", &n->dx}, {"dy", &n->dy}})) return -1;
        if (n->op == REPEAT) {
            if (get_num(c, op, path, "count", true, &n->count)) return -1;
            if (n->count.kind == Num::CONST && !(n->count.a >= 0 && n->count.a <= MAX_REPEAT))
                return c.bad(path, "count", "must be a number in 0..100000 or \"complexity\"");
            const zj_value *cols = zj_get(op, "columns");
            if (cols && cols->type != ZJ_NULL) {
                if (get_int(c, op, path, "columns", 1, MAX_REPEAT, &n->columns)) return -1;
                n->has_columns = true;
            }
        }
    } else if (o == "layer") {
        n->op = LAYER;
        if (get_num(c, op, path, "opacity", false, &n->opacity)) return -1;
    } else if (o == "clip") {
        n->op = CLIP;
        const zj_value *shape = zj_get(op, "shape");
        std::string sub = path + ".shape";
        if (!shape || shape->type != ZJ_OBJECT) return c.bad(path, "shape", "must be an object with a kind");
        if (get_choice(c, shape, sub, "kind", {"rect", "rrect", "path"}, &n->shape)) return -1;
        if (n->shape != CLIP_PATH) {
            if (get_nums(c, shape, sub, {{"x", &n->x}, {"y", &n->y}, {"w", &n->w}, {"h", &n->h}})) return -1;
            if (n->shape == CLIP_RRECT && get_num(c, shape, sub, "radius", false, &n->radius)) return -1;
        } else if (get_points(c, zj_get(shape, "points"), sub, "points", 3, n)) {
            return -1;
        }
    } else {
        // Not one of FEATURES: the kit skips such a scene before prepare; reached only by a bug.
        snprintf(c.err, c.errlen, "%s", o.c_str());
        c.code = ZK_EXIT_SKIPPED;
        return -1;
    }
    const zj_value *kids = zj_get(op, "ops");
    if (!kids || kids->type != ZJ_ARRAY) return c.bad(path, "ops", "must be an array of ops");
    return compile_ops(c, kids, path + ".ops", &n->kids, depth + 1);
}

int compile_ops(Compiler &c, const zj_value *ops, const std::string &path, Nodes *out, int depth) {
    if (depth > ZJ_MAX_DEPTH) return c.bad(path, "ops", "nested too deeply");
    int i = 0;
    for (const zj_value *op = ops->first; op; op = op->next, i++) {
        out->push_back(std::make_unique<Node>());
        if (compile_op(c, op, path + "[" + std::to_string(i) + "]", out->back().get(), depth)) return -1;
    }
    return 0;
}

// The caps that hold per frame for a count given by the complexity (docs/display-list.md, "Complexity").
int check_counts(const Nodes &nodes, double top, const std::string &path, char *err, size_t errlen) {
    int i = 0;
    for (const auto &n : nodes) {
        std::string sub = path + "[" + std::to_string(i++) + "]";
        if (n->count.kind == Num::COMPLEXITY) {
            if (n->op == REPEAT && top > MAX_REPEAT) {
                snprintf(err, errlen, "%s.count: complexity %.0f is more than %d repetitions", sub.c_str(), top, MAX_REPEAT);
                return -1;
            }
            if (n->op == RECT_BATCH && top > MAX_BATCH) {
                snprintf(err, errlen, "%s.count: complexity %.0f is more than %d rects", sub.c_str(), top, MAX_BATCH);
                return -1;
            }
            if (n->op == SHADER && top > MAX_LOOPS) {
                snprintf(err, errlen, "%s.loops: complexity %.0f is more than %d loop iterations", sub.c_str(), top, MAX_LOOPS);
                return -1;
            }
            if (n->op == MESH && top * n->columns > MAX_MESH_CELLS) {
                snprintf(err, errlen, "%s.rows: complexity %.0f x %d columns is more than %d cells", sub.c_str(), top, n->columns, MAX_MESH_CELLS);
                return -1;
            }
        }
        if (check_counts(n->kids, top, sub + ".ops", err, errlen)) return -1;
    }
    return 0;
}

// A Gaussian blur of sigma `sigma` of one plane of floats, in place: Qt has no blur on QPainter
// (QGraphicsBlurEffect is QtWidgets'), so the shadow's and the backdrop's are written here. Under sigma 2 an exact
// kernel cut at 3 sigma; from 2 on three box blurs of the SVG specification's width, as Skia's raster blurs do
// (and in time linear in the pixels, whatever the sigma). Outside the plane counts as transparent.
void box_pass(const float *in, float *out, int n, size_t stride, int lo, int hi) {
    // out[i] = mean of in[i - lo .. i + hi]
    double sum = 0;
    int width = lo + hi + 1;
    for (int i = -lo; i <= hi - 1 && i < n; i++)
        if (i >= 0) sum += in[(size_t)i * stride];
    for (int i = 0; i < n; i++) {
        int add = i + hi, drop = i - lo - 1;
        if (add < n) sum += in[(size_t)add * stride];
        if (drop >= 0) sum -= in[(size_t)drop * stride];
        out[(size_t)i * stride] = (float)(sum / width);
    }
}

void blur_plane(std::vector<float> &a, int w, int h, double sigma) {
    std::vector<float> tmp(a.size());
    if (sigma < 2.0) {
        int radius = (int)std::ceil(3.0 * sigma);
        std::vector<float> k((size_t)radius * 2 + 1);
        double sum = 0;
        for (int i = -radius; i <= radius; i++) sum += (k[(size_t)(i + radius)] = (float)std::exp(-(double)i * i / (2 * sigma * sigma)));
        for (float &v : k) v = (float)(v / sum);
        for (int pass = 0; pass < 2; pass++) {
            const std::vector<float> &in = pass ? tmp : a;
            std::vector<float> &out = pass ? a : tmp;
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    float s = 0;
                    for (int i = -radius; i <= radius; i++) {
                        int xx = pass ? x : x + i, yy = pass ? y + i : y;
                        if (xx >= 0 && xx < w && yy >= 0 && yy < h) s += k[(size_t)(i + radius)] * in[(size_t)yy * w + xx];
                    }
                    out[(size_t)y * w + x] = s;
                }
        }
        return;
    }
    int d = (int)std::floor(sigma * 3.0 * std::sqrt(2.0 * PI) / 4.0 + 0.5);
    // Odd d: three boxes of d centred. Even d: two of d (one left, one right of centre) and one of d + 1 centred.
    int lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
        if (d % 2) { lo[k] = hi[k] = d / 2; }
        else if (k == 0) { lo[k] = d / 2; hi[k] = d / 2 - 1; }
        else if (k == 1) { lo[k] = d / 2 - 1; hi[k] = d / 2; }
        else { lo[k] = hi[k] = d / 2; }
    }
    for (int k = 0; k < 3; k++) {
        for (int y = 0; y < h; y++) box_pass(&a[(size_t)y * w], &tmp[(size_t)y * w], w, 1, lo[k], hi[k]);
        for (int x = 0; x < w; x++) box_pass(&tmp[(size_t)x], &a[(size_t)x], h, (size_t)w, lo[k], hi[k]);
    }
}

// The shader op's pixels (docs/display-list.md; interpreter.py shader_source), computed on the CPU: QPainter has
// no programmable shading. `w` x `h` pixels whose centres are at local (x0 + i + 0.5, y0 + j + 0.5).
QImage shade(int loops, int fetches, bool dependent, double x0, double y0, int w, int h) {
    static std::vector<unsigned char> noise;
    if (noise.empty()) {
        noise.resize(64 * 64 * 4);
        zb_noise_rgba(noise.data(), 64, 64, 0);
    }
    QImage out(w, h, QImage::Format_RGBA8888);
    for (int j = 0; j < h; j++) {
        unsigned char *line = out.scanLine(j);
        for (int i = 0; i < w; i++) {
            double px = x0 + i + 0.5, py = y0 + j + 0.5;
            float c[4] = {0.5f, 0.5f, 0.5f, 1.0f};
            if (fetches) {
                float t[4] = {0, 0, 0, 0}, sum[4] = {0, 0, 0, 0};
                for (int k = 0; k < fetches; k++) {
                    double qx = px + k * 5.0, qy = py + k * 3.0;
                    if (dependent) {
                        qx += std::floor(t[0] * 8.0f);
                        qy += std::floor(t[1] * 8.0f);
                    }
                    // nearest, repeated: the texel under the point
                    int tx = (int)std::floor(qx) & 63, ty = (int)std::floor(qy) & 63;
                    const unsigned char *texel = &noise[((size_t)ty * 64 + tx) * 4];
                    for (int ch = 0; ch < 4; ch++) sum[ch] += (t[ch] = texel[ch] / 255.0f);
                }
                for (int ch = 0; ch < 4; ch++) c[ch] = sum[ch] / (float)fetches;
            }
            float v = 0.5f;
            for (int k = 0; k < loops; k++) v = 0.9f * v + 0.1f * (0.5f + 0.5f * std::sin((float)px * 0.02f + (float)py * 0.011f + (float)k * 0.37f));
            for (int ch = 0; ch < 3; ch++) {
                float value = c[ch] * (0.4f + 0.6f * v);
                line[i * 4 + ch] = (unsigned char)std::lround(std::min(1.0f, std::max(0.0f, value)) * 255.0f);
            }
            line[i * 4 + 3] = 255;
        }
    }
    return out;
}

QString substitute(const QString &text, const FrameState &st) {
    QString out = text;
    return out.replace(QLatin1String("{frame}"), QString::number(st.frame)).replace(QLatin1String("{i}"), QString::number(st.i));
}

// Greedy word wrap, the reference's (_wrap): a word wider than max_width gets a line of its own; newlines
// always break.
QStringList wrap(const QString &text, const QFontMetricsF &fm, bool has_max, double max_width) {
    QStringList lines;
    for (const QString &paragraph : text.split(QLatin1Char('\n'))) {
        if (!has_max) {
            lines << paragraph;
            continue;
        }
        QString line;
        for (const QString &word : paragraph.split(QLatin1Char(' '))) {
            QString candidate = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
            if (!line.isEmpty() && fm.horizontalAdvance(candidate) > max_width) {
                lines << line;
                line = word;
            } else {
                line = candidate;
            }
        }
        lines << line;
    }
    return lines;
}

QFont text_font(const QString &family, double size, const QPaintDevice *device) {
    QFont font(family);
    // Fixed rasterisation settings, as the reference's: no hinting, no subpixel (LCD) text, no kerning (a
    // text blob made from a string is not shaped); the size in pixels, whatever the device's dpi.
    font.setHintingPreference(QFont::PreferNoHinting);
    font.setStyleStrategy(QFont::StyleStrategy(QFont::PreferAntialias | QFont::NoSubpixelAntialias | QFont::NoFontMerging));
    font.setKerning(false);
    if (size == std::floor(size) && size >= 1)
        font.setPixelSize((int)size);
    else
        font.setPointSizeF(size * 72.0 / device->logicalDpiY());
    return font;
}

}  // namespace

bool load_fonts(Fonts *fonts, bool cjk, std::string *why) {
    if (!cjk) {
        if (!fonts->sans_family.isEmpty() || !fonts->sans_missing.empty()) return true;
        for (int i = 0; SANS_PATHS[i]; i++) {
            int id = QFile::exists(QString::fromUtf8(SANS_PATHS[i])) ? QFontDatabase::addApplicationFont(QString::fromUtf8(SANS_PATHS[i])) : -1;
            if (id >= 0 && !QFontDatabase::applicationFontFamilies(id).isEmpty()) {
                fonts->sans_family = QFontDatabase::applicationFontFamilies(id).first();
                return true;
            }
        }
        // Drawn with Qt's default family and reported as a font_fallback issue, as the reference does.
        fonts->sans_missing = "DejaVu Sans not found (looked in /usr/share/fonts/truetype/dejavu, /usr/share/fonts/dejavu, "
                              "/usr/share/fonts/TTF); text uses Qt's default font";
        fonts->sans_family = QFont().family();
        return true;
    }
    if (!fonts->cjk_family.isEmpty()) return true;
    const char *override = std::getenv("ZBENCH_CJK_FONT");
    const char *const only[] = {override, nullptr};
    for (const char *const *p = override && *override ? only : CJK_PATHS; *p; p++) {
        int id = QFile::exists(QString::fromUtf8(*p)) ? QFontDatabase::addApplicationFont(QString::fromUtf8(*p)) : -1;
        if (id >= 0 && !QFontDatabase::applicationFontFamilies(id).isEmpty()) {
            fonts->cjk_family = QFontDatabase::applicationFontFamilies(id).first();
            return true;
        }
    }
    *why = override && *override ? std::string("CJK font not found (ZBENCH_CJK_FONT=") + override + ")"
                                 : "CJK font not found (looked in /usr/share/fonts/truetype/wqy/wqy-zenhei.ttc, "
                                   "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc): text with font 'cjk' needs "
                                   "WenQuanYi Zen Hei (Debian: fonts-wqy-zenhei) or Noto Sans CJK, or ZBENCH_CJK_FONT";
    return false;
}

int Scene::compile(const zk_job *job, Fonts *fonts, char *err, size_t errlen) {
    Compiler c{err, errlen, ZK_EXIT_USAGE, fonts, advanced_blends};
    width_ = job->width;
    height_ = job->height;
    if (compile_ops(c, job->ops, "ops", &root_, 0)) return c.code;
    double top = 0;
    for (size_t i = 0; i < job->n_complexity; i++) top = job->complexity[i] > top ? job->complexity[i] : top;
    if (check_counts(root_, std::nearbyint(top), "ops", err, errlen)) return ZK_EXIT_USAGE;
    return 0;
}

Scene::Scene() = default;
Scene::~Scene() = default;

void Scene::draw(QPainter &p, int frame, double complexity, zk_counts *counts) {
    FrameState st;
    st.frame = frame;
    st.complexity = complexity;
    st.counts = counts;
    p.setCompositionMode(QPainter::CompositionMode_Source);
    p.fillRect(QRect(0, 0, width_, height_), Qt::white);
    p.setCompositionMode(QPainter::CompositionMode_SourceOver);
    p.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    p.setPen(Qt::NoPen);
    draw_nodes(p, root_, st);
}

void Scene::draw_nodes(QPainter &p, const Nodes &nodes, FrameState &st) {
    for (const auto &n : nodes) draw_node(p, *n, st);
}

void Scene::draw_node(QPainter &p, Node &n, FrameState &st) {
    const int f = st.frame;
    const double cx = st.complexity;
    auto v = [&](const Num &num) { return num.at(f, cx); };
    auto rect = [&]() { return QRectF(v(n.x), v(n.y), v(n.w), v(n.h)); };
    switch (n.op) {
    case RECT:
        st.counts->draw_calls++;
        if (n.blend != QPainter::CompositionMode_SourceOver) p.setCompositionMode(n.blend);
        p.setBrush(n.color);
        p.drawRect(rect());
        if (n.blend != QPainter::CompositionMode_SourceOver) p.setCompositionMode(QPainter::CompositionMode_SourceOver);
        return;
    case RRECT: {
        st.counts->draw_calls++;
        double r = v(n.radius);
        p.setBrush(n.color);
        p.drawRoundedRect(rect(), r, r);
        return;
    }
    case BORDER: {
        st.counts->draw_calls++;
        double r = v(n.radius);
        // Skia's stroke: centred on the edge, mitred corners (limit 4), butt caps.
        QPen pen(n.color, v(n.width), Qt::SolidLine, Qt::FlatCap, Qt::MiterJoin);
        pen.setMiterLimit(4.0);
        p.setPen(pen);
        p.setBrush(Qt::NoBrush);
        p.drawRoundedRect(rect(), r, r);
        p.setPen(Qt::NoPen);
        return;
    }
    case LINEAR:
    case RADIAL: {
        st.counts->draw_calls++;
        QGradientStops stops;
        for (const auto &s : n.stops) stops.append(QGradientStop(std::min(1.0, std::max(0.0, v(s.first))), s.second));
        if (n.op == LINEAR) {
            QLinearGradient g(v(n.x0), v(n.y0), v(n.x1), v(n.y1));
            g.setStops(stops);
            p.setBrush(g);
        } else {
            QRadialGradient g(v(n.cx), v(n.cy), v(n.r));
            g.setStops(stops);
            p.setBrush(g);
        }
        p.drawRect(rect());
        return;
    }
    case SHADOW: {
        st.counts->draw_calls++;
        double x = v(n.x) + v(n.dx), y = v(n.y) + v(n.dy), w = v(n.w), h = v(n.h), r = v(n.radius), blur = v(n.blur);
        if (blur <= 0) {
            p.setBrush(n.color);
            p.drawRoundedRect(QRectF(x, y, w, h), r, r);
            return;
        }
        double sigma = blur / 2.0, fx = x - std::floor(x), fy = y - std::floor(y);
        int margin = (int)std::ceil(3.0 * sigma) + 1;
        double key[8] = {w, h, r, sigma, fx, fy, (double)n.color.rgba(), 1};
        if (n.shadow.isNull() || std::memcmp(key, n.shadow_key, sizeof key) != 0) {
            int mw = (int)std::ceil(w + fx) + 2 * margin, mh = (int)std::ceil(h + fy) + 2 * margin;
            QImage mask(mw, mh, QImage::Format_Alpha8);
            mask.fill(0);
            {
                QPainter mp(&mask);
                mp.setRenderHint(QPainter::Antialiasing);
                mp.setPen(Qt::NoPen);
                mp.setBrush(Qt::black);
                mp.drawRoundedRect(QRectF(margin + fx, margin + fy, w, h), r, r);
            }
            std::vector<float> a((size_t)mw * mh);
            for (int yy = 0; yy < mh; yy++)
                for (int xx = 0; xx < mw; xx++) a[(size_t)yy * mw + xx] = mask.constScanLine(yy)[xx] / 255.0f;
            blur_plane(a, mw, mh, sigma);
            QImage out(mw, mh, QImage::Format_ARGB32_Premultiplied);
            for (int yy = 0; yy < mh; yy++) {
                QRgb *line = reinterpret_cast<QRgb *>(out.scanLine(yy));
                for (int xx = 0; xx < mw; xx++) {
                    double cov = a[(size_t)yy * mw + xx] * n.color.alphaF();
                    int al = (int)std::lround(cov * 255.0);
                    line[xx] = qRgba((int)std::lround(n.color.red() * cov), (int)std::lround(n.color.green() * cov),
                                     (int)std::lround(n.color.blue() * cov), al);
                }
            }
            n.shadow = out;
            std::memcpy(n.shadow_key, key, sizeof key);
        }
        p.drawImage(QPointF(std::floor(x) - margin, std::floor(y) - margin), n.shadow);
        return;
    }
    case BACKDROP: {
        st.counts->draw_calls++;
        double blur = v(n.blur);
        if (blur <= 0 || !grab) return;
        // What is drawn under the rect, with the blur's reach around it, blurred, then drawn back clipped to the
        // rect: a backdrop filter's layer (Skia's saveLayer with a backdrop) by hand.
        QRectF area = p.transform().mapRect(rect());
        double sigma = blur / 2.0;
        int margin = (int)std::ceil(3.0 * sigma);
        QRect src = area.toAlignedRect().adjusted(-margin, -margin, margin, margin) & QRect(0, 0, width_, height_);
        if (src.isEmpty()) return;
        QImage under = grab(p, src).convertToFormat(QImage::Format_RGBA8888_Premultiplied);
        int w = under.width(), h = under.height();
        std::vector<float> planes[4];
        for (int ch = 0; ch < 4; ch++) planes[ch].resize((size_t)w * h);
        for (int y = 0; y < h; y++) {
            const unsigned char *line = under.constScanLine(y);
            for (int x = 0; x < w; x++)
                for (int ch = 0; ch < 4; ch++) planes[ch][(size_t)y * w + x] = line[x * 4 + ch];
        }
        for (auto &plane : planes) blur_plane(plane, w, h, sigma);
        for (int y = 0; y < h; y++) {
            unsigned char *line = under.scanLine(y);
            for (int x = 0; x < w; x++)
                for (int ch = 0; ch < 4; ch++)
                    line[x * 4 + ch] = (unsigned char)std::lround(std::min(255.0f, std::max(0.0f, planes[ch][(size_t)y * w + x])));
        }
        p.save();
        p.resetTransform();
        p.setClipRect(area, Qt::IntersectClip);
        p.drawImage(src.topLeft(), under);
        p.restore();
        return;
    }
    case SHADER: {
        st.counts->draw_calls++;
        int loops = count_of(n.count, st);
        QRectF r = rect();
        // Computed in every frame, as a GPU runs a fragment shader in every frame: this is the op's cost here.
        QImage shaded = shade(loops, n.fetches, n.dependent, std::floor(r.x()), std::floor(r.y()),
                              (int)std::ceil(r.right()) - (int)std::floor(r.x()), (int)std::ceil(r.bottom()) - (int)std::floor(r.y()));
        p.save();
        p.setClipRect(r, Qt::IntersectClip);
        p.drawImage(QPointF(std::floor(r.x()), std::floor(r.y())), shaded);
        p.restore();
        return;
    }
    case TEXT: {
        st.counts->draw_calls++;
        double size = v(n.size), max_width = n.has_max_width ? v(n.max_width) : -1;
        QFont font = text_font(n.family, size, p.device());
        double step = n.has_line_height ? v(n.line_height) : 1.2 * size;
        QStringList lines;
        if (n.templated) {
            lines = wrap(substitute(n.text, st), QFontMetricsF(font, p.device()), n.has_max_width, max_width);
        } else {
            if (n.lines_size != size || n.lines_width != max_width) {
                n.lines = wrap(n.text, QFontMetricsF(font, p.device()), n.has_max_width, max_width);
                n.lines_size = size;
                n.lines_width = max_width;
            }
            lines = n.lines;
        }
        p.setFont(font);
        p.setPen(n.color);
        double x = v(n.x), y = v(n.y);
        for (int i = 0; i < lines.size(); i++)
            if (!lines[i].isEmpty()) p.drawText(QPointF(x, y + i * step), lines[i]);
        p.setPen(Qt::NoPen);
        return;
    }
    case IMAGE: {
        st.counts->draw_calls++;
        QRectF dst = rect();
        QRectF src(0, 0, n.tex_w, n.tex_h);
        // nearest: no filtering; linear: bilinear (mipmap is skipped in compile_op).
        p.setRenderHint(QPainter::SmoothPixmapTransform, n.filter != NEAREST);
        size_t bytes = n.pixels.size();
        if (n.upload == ONCE) {
            if (!n.counted) {
                n.counted = true;
                st.counts->upload_bytes += (int64_t)bytes;
            }
            p.drawImage(dst, n.once, src);
        } else if (n.upload == EVERY_FRAME) {
            // A fresh image (a copy, with a new cache key) defeats every texture cache, as the reference's.
            st.counts->upload_bytes += (int64_t)bytes;
            p.drawImage(dst, QImage(n.pixels.data(), n.tex_w, n.tex_h, n.tex_w * 4, n.format).copy(), src);
        } else {
            st.counts->upload_bytes += (int64_t)bytes;
            QImage decoded = QImage::fromData(n.png, "PNG");
            if (n.format == QImage::Format_RGBA8888_Premultiplied)  // the PNG holds the premultiplied bytes as they are
                decoded.reinterpretAsFormat(QImage::Format_RGBA8888_Premultiplied);
            p.drawImage(dst, decoded, src);
        }
        p.setRenderHint(QPainter::SmoothPixmapTransform, false);
        return;
    }
    case MESH: {
        st.counts->draw_calls++;
        int rows = count_of(n.count, st), cols = n.columns;
        if (rows == 0) return;
        double key[7] = {(double)rows, v(n.x), v(n.y), v(n.w), v(n.h), 0, 0};
        if (std::memcmp(key, n.rects_key, sizeof key) != 0) {
            // The cells' first triangles in one path, their second ones in another: two fills instead of one
            // per triangle (a GPU paint engine pays per fill). Within a cell the two share only an edge, so
            // drawing all of one colour first covers the same pixels as the reference's cell order.
            double x = key[1], y = key[2], w = key[3], h = key[4];
            n.mesh[0] = QPainterPath();
            n.mesh[1] = QPainterPath();
            for (int rr = 0; rr < rows; rr++) {
                double top = y + h * rr / rows, bottom = y + h * (rr + 1) / rows;
                for (int cc = 0; cc < cols; cc++) {
                    double left = x + w * cc / cols, right = x + w * (cc + 1) / cols;
                    n.mesh[0].moveTo(left, top);
                    n.mesh[0].lineTo(right, top);
                    n.mesh[0].lineTo(left, bottom);
                    n.mesh[0].closeSubpath();
                    n.mesh[1].moveTo(right, top);
                    n.mesh[1].lineTo(right, bottom);
                    n.mesh[1].lineTo(left, bottom);
                    n.mesh[1].closeSubpath();
                }
            }
            std::memcpy(n.rects_key, key, sizeof key);
        }
        // Not anti-aliased, like Skia's drawVertices.
        p.setRenderHint(QPainter::Antialiasing, false);
        p.fillPath(n.mesh[0], n.color);
        p.fillPath(n.mesh[1], n.alt);
        p.setRenderHint(QPainter::Antialiasing, true);
        return;
    }
    case RECT_BATCH: {
        st.counts->draw_calls++;
        int count = count_of(n.count, st);
        if (count == 0) return;
        double key[7] = {(double)count, v(n.x), v(n.y), v(n.w), v(n.h), v(n.dx), v(n.dy)};
        if (std::memcmp(key, n.rects_key, sizeof key) != 0) {
            n.rects.resize((size_t)count);
            for (int i = 0; i < count; i++)
                n.rects[(size_t)i] = QRectF(key[1] + key[5] * (i % n.columns), key[2] + key[6] * (i / n.columns), key[3], key[4]);
            std::memcpy(n.rects_key, key, sizeof key);
        }
        p.setRenderHint(QPainter::Antialiasing, false);
        p.setBrush(n.color);
        p.drawRects(n.rects.data(), count);
        p.setRenderHint(QPainter::Antialiasing, true);
        return;
    }
    case PATH: {
        st.counts->draw_calls++;
        QPainterPath path;
        path.setFillRule(Qt::WindingFill);
        path.moveTo(v(n.points[0].first), v(n.points[0].second));
        for (size_t i = 1; i < n.points.size(); i++) path.lineTo(v(n.points[i].first), v(n.points[i].second));
        if (n.closed) path.closeSubpath();
        if (n.has_stroke) {
            QPen pen(n.color, v(n.stroke_width), Qt::SolidLine, Qt::FlatCap, Qt::MiterJoin);
            pen.setMiterLimit(4.0);
            p.strokePath(path, pen);
        } else {
            p.fillPath(path, n.color);
        }
        return;
    }
    case CLIP: {
        p.save();
        if (n.shape == CLIP_RECT) {
            p.setClipRect(rect(), Qt::IntersectClip);
        } else {
            QPainterPath path;
            if (n.shape == CLIP_RRECT) {
                double r = v(n.radius);
                path.addRoundedRect(rect(), r, r);
            } else {
                path.moveTo(v(n.points[0].first), v(n.points[0].second));
                for (size_t i = 1; i < n.points.size(); i++) path.lineTo(v(n.points[i].first), v(n.points[i].second));
                path.closeSubpath();
            }
            p.setClipPath(path, Qt::IntersectClip);
        }
        draw_nodes(p, n.kids, st);
        p.restore();
        return;
    }
    case LAYER: {
        // An offscreen group composited with the opacity, as saveLayerAlpha: a QImage of the surface's size
        // (kept between frames), drawn with the painter's transform, then drawn back under the clip in force.
        int alpha = (int)std::lround(255.0 * std::min(1.0, std::max(0.0, v(n.opacity))));
        if (n.layer.isNull()) n.layer = QImage(width_, height_, QImage::Format_ARGB32_Premultiplied);
        n.layer.fill(Qt::transparent);
        {
            QPainter lp(&n.layer);
            lp.setRenderHints(p.renderHints());
            lp.setTransform(p.transform());
            lp.setPen(Qt::NoPen);
            draw_nodes(lp, n.kids, st);
        }
        n.layer.bits();  // a new cache key: a GPU paint engine uploads the layer's new pixels
        p.save();
        p.resetTransform();
        p.setOpacity(alpha / 255.0);
        p.drawImage(QPointF(0, 0), n.layer);
        p.restore();
        return;
    }
    case GROUP: {
        QTransform outer = p.transform();
        p.translate(v(n.dx), v(n.dy));
        draw_nodes(p, n.kids, st);
        p.setTransform(outer);
        return;
    }
    case REPEAT: {
        int count = count_of(n.count, st), outer_i = st.i;
        double sx = v(n.dx), sy = v(n.dy);
        QTransform outer = p.transform();
        for (int i = 0; i < count; i++) {
            int col = n.has_columns ? i % n.columns : i, row = n.has_columns ? i / n.columns : i;
            QTransform t = outer;
            p.setTransform(t.translate(sx * col, sy * row));
            st.i = i;
            draw_nodes(p, n.kids, st);
        }
        p.setTransform(outer);
        st.i = outer_i;
        return;
    }
    }
}

}  // namespace zqt
