/* The glyph atlas (glyphs.h). Glyphs are rasterised by FreeType with no hinting and no embedded bitmaps, at
 * one of four quarter-pixel horizontal offsets (Skia's subpixel positions), and packed into shelves of a
 * square GL_ALPHA texture; a full atlas is emptied by the caller between draws. */
#include "glyphs.h"

#include <GLES2/gl2.h>
#include <ft2build.h>
#include FT_FREETYPE_H
#include FT_OUTLINE_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ATLAS 2048
#define SLOTS 16384 /* glyphs held at once: a power of two above what the atlas holds at text sizes */
#define MAX_FONTS 4
#define PAD 1

typedef struct {
    int used;
    int font, size64, glyph, sub, lum;
    int x, y, w, h, left, top; /* atlas position and size; left and top are FreeType's bitmap bearings */
} slot;

typedef struct {
    int used, font, size64, glyph;
    double advance;
} advance_entry;

struct zb_text {
    FT_Library lib;
    FT_Face faces[MAX_FONTS];
    int n_faces;
    int face_size64[MAX_FONTS]; /* the size FT_Set_Char_Size was last given, per face */
    slot *slots;
    int n_slots;
    unsigned char *pixels; /* the atlas in memory, uploaded when dirty */
    int shelf_x, shelf_y, shelf_h;
    int dirty_y0, dirty_y1; /* rows changed since the last upload */
    GLuint texture;
    /* Advances by font, size and glyph: measuring a line for word wrap would load each glyph again */
    advance_entry *advances;
    unsigned char preblend[8][256]; /* per canonical luminance (lum >> 5), built when first used */
    int have_preblend[8];
};

/* sRGB's transfer functions, as Skia's SkColorSpaceLuminance for gamma 0 */
static float to_linear(float x) { return x <= 0.04045f ? x / 12.92f : powf((x + 0.055f) / 1.055f, 2.4f); }
static float from_linear(float y) { return y <= 0.0031308f ? y * 12.92f : 1.055f * powf(y, 1.0f / 2.4f) - 0.055f; }

int zb_text_luminance(const unsigned char rgb[3]) {
    float lum = 0.2126f * to_linear(rgb[0] / 255.0f) + 0.7152f * to_linear(rgb[1] / 255.0f) + 0.0722f * to_linear(rgb[2] / 255.0f);
    int l = (int)floorf(from_linear(lum) * 255.0f + 0.5f);
    l = l < 0 ? 0 : l > 255 ? 255 : l;
    int q = l >> 5; /* three bits, widened back to eight by repeating them */
    return (q << 5) | (q << 2) | (q >> 1);
}

/* The reference's glyph mask correction (Skia's SkMaskGamma "preblend" for A8 text, sRGB with contrast 0.5,
 * measured against the software goldens: 0.4 levels mean error on text.paragraph): the coverage that, blended
 * linearly as the blit does, gives what blending in linear light with some extra contrast would. */
static const unsigned char *preblend(zb_text *t, int lum) {
    int k = lum >> 5;
    if (t->have_preblend[k]) return t->preblend[k];
    const float contrast = 0.5f, src = lum / 255.0f, lin_src = to_linear(src), dst = 1.0f - src, lin_dst = to_linear(dst);
    const float adjusted = contrast * lin_dst;
    for (int i = 0; i < 256; i++) {
        float raw = i / 255.0f, a = raw + (1.0f - raw) * adjusted * raw, r;
        if (fabsf(src - dst) < 1.0f / 256.0f) r = a;
        else r = (from_linear(lin_src * a + (1.0f - a) * lin_dst) - dst) / (src - dst);
        int v = (int)floorf(255.0f * r + 0.5f);
        t->preblend[k][i] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
    t->have_preblend[k] = 1;
    return t->preblend[k];
}

zb_text *zb_text_new(char *err, size_t errlen) {
    zb_text *t = calloc(1, sizeof *t);
    if (t) t->slots = calloc(SLOTS, sizeof *t->slots);
    if (t && t->slots) t->pixels = calloc((size_t)ATLAS * ATLAS, 1);
    if (t && t->pixels) t->advances = calloc(SLOTS, sizeof *t->advances);
    if (!t || !t->slots || !t->pixels || !t->advances) {
        snprintf(err, errlen, "out of memory for the glyph atlas");
        zb_text_free(t);
        return NULL;
    }
    if (FT_Init_FreeType(&t->lib)) {
        snprintf(err, errlen, "FreeType did not start (FT_Init_FreeType failed)");
        t->lib = NULL;
        zb_text_free(t);
        return NULL;
    }
    t->dirty_y0 = ATLAS;
    return t;
}

void zb_text_free(zb_text *t) {
    if (!t) return;
    for (int i = 0; i < t->n_faces; i++) FT_Done_Face(t->faces[i]);
    if (t->lib) FT_Done_FreeType(t->lib);
    if (t->texture) glDeleteTextures(1, &t->texture);
    free(t->slots);
    free(t->pixels);
    free(t->advances);
    free(t);
}

int zb_text_font(zb_text *t, const char *const *paths, char *err, size_t errlen) {
    if (t->n_faces >= MAX_FONTS) { snprintf(err, errlen, "too many fonts"); return -1; }
    for (int i = 0; paths[i]; i++) {
        FT_Face face;
        if (!paths[i][0] || FT_New_Face(t->lib, paths[i], 0, &face)) continue;
        t->faces[t->n_faces] = face;
        t->face_size64[t->n_faces] = -1;
        return t->n_faces++;
    }
    size_t n = (size_t)snprintf(err, errlen, "no font file could be opened of");
    for (int i = 0; paths[i] && n < errlen; i++)
        if (paths[i][0]) n += (size_t)snprintf(err + n, errlen - n, " %s", paths[i]);
    return -1;
}

/* Next code point of UTF-8 at *s (advanced); a malformed byte is U+FFFD. */
static uint32_t next_code(const unsigned char **s, const unsigned char *end) {
    const unsigned char *p = *s;
    uint32_t c = *p++;
    int extra = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : -1;
    if (extra < 0) { *s = p; return 0xFFFD; }
    c &= extra == 0 ? 0x7F : extra == 1 ? 0x1F : extra == 2 ? 0x0F : 0x07;
    for (int i = 0; i < extra; i++) {
        if (p >= end || (*p & 0xC0) != 0x80) { *s = p; return 0xFFFD; }
        c = (c << 6) | (*p++ & 0x3F);
    }
    *s = p;
    return c;
}

static int set_size(zb_text *t, int font, double size) {
    int size64 = (int)(size * 64.0); /* truncated, as Skia passes a size to FreeType (SkScalarToFDot6) */
    if (size64 < 1) size64 = 1;
    if (t->face_size64[font] != size64) {
        if (FT_Set_Char_Size(t->faces[font], 0, size64, 72, 72)) return -1;
        t->face_size64[font] = size64;
    }
    return size64;
}

static const FT_Int32 LOAD_FLAGS = FT_LOAD_NO_HINTING | FT_LOAD_NO_BITMAP;

/* The unhinted advance (16.16 linear advance, as Skia's linear metrics), in pixels. */
static double advance(zb_text *t, int font, FT_UInt glyph) {
    int size64 = t->face_size64[font];
    uint32_t h = ((uint32_t)glyph * 2654435761u ^ (uint32_t)size64 * 40503u ^ (uint32_t)font * 131u) & (SLOTS - 1);
    for (uint32_t i = 0; i < 64; i++) {
        advance_entry *e = &t->advances[(h + i) & (SLOTS - 1)];
        if (e->used && e->font == font && e->size64 == size64 && e->glyph == (int)glyph) return e->advance;
        if (e->used) continue;
        if (FT_Load_Glyph(t->faces[font], glyph, LOAD_FLAGS)) return 0;
        e->used = 1; e->font = font; e->size64 = size64; e->glyph = (int)glyph;
        e->advance = t->faces[font]->glyph->linearHoriAdvance / 65536.0;
        return e->advance;
    }
    /* A full neighbourhood: measured without being kept. */
    if (FT_Load_Glyph(t->faces[font], glyph, LOAD_FLAGS)) return 0;
    return t->faces[font]->glyph->linearHoriAdvance / 65536.0;
}

double zb_text_width(zb_text *t, int font, double size, const char *s, size_t len) {
    if (set_size(t, font, size) < 0) return 0;
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    double w = 0;
    while (p < end) w += advance(t, font, FT_Get_Char_Index(t->faces[font], next_code(&p, end)));
    return w;
}

int zb_text_wrap(zb_text *t, int font, double size, const char *s, double max_width, size_t *starts, size_t *lengths, int cap) {
    int n = 0;
    size_t len = strlen(s), para = 0;
    while (para <= len && n < cap) {
        const char *nl = memchr(s + para, '\n', len - para);
        size_t para_end = nl ? (size_t)(nl - s) : len;
        if (max_width < 0) {
            starts[n] = para; lengths[n++] = para_end - para;
        } else {
            /* Words split on single spaces, as Python's str.split(" "): a line grows word by word while it fits. */
            size_t line = para, line_end = para, word = para;
            int empty = 1;
            while (word <= para_end && n < cap) {
                const char *sp = memchr(s + word, ' ', para_end - word);
                size_t word_end = sp ? (size_t)(sp - s) : para_end;
                if (!empty && zb_text_width(t, font, size, s + line, word_end - line) > max_width) {
                    starts[n] = line; lengths[n++] = line_end - line;
                    line = word;
                }
                empty = 0;
                line_end = word_end;
                word = word_end + 1;
            }
            if (n < cap) { starts[n] = line; lengths[n++] = line_end - line; }
        }
        para = para_end + 1;
    }
    return n;
}

/* The glyph's atlas slot, rasterised into the atlas when new; NULL when the atlas or the table is full. */
static slot *glyph_slot(zb_text *t, int font, int size64, FT_UInt glyph, int sub, int lum) {
    uint32_t h = (uint32_t)glyph * 2654435761u ^ (uint32_t)size64 * 40503u ^ (uint32_t)(sub * 7 + font * 131 + lum * 977);
    for (uint32_t i = 0; i < SLOTS; i++) {
        slot *e = &t->slots[(h + i) & (SLOTS - 1)];
        if (e->used) {
            if (e->font == font && e->size64 == size64 && e->glyph == (int)glyph && e->sub == sub && e->lum == lum) return e;
            continue;
        }
        if (t->n_slots >= SLOTS * 3 / 4) return NULL;
        FT_Face face = t->faces[font];
        if (FT_Load_Glyph(face, glyph, LOAD_FLAGS)) return NULL;
        if (face->glyph->format == FT_GLYPH_FORMAT_OUTLINE) FT_Outline_Translate(&face->glyph->outline, sub * 16, 0);
        if (FT_Render_Glyph(face->glyph, FT_RENDER_MODE_NORMAL)) return NULL;
        FT_Bitmap *b = &face->glyph->bitmap;
        int w = (int)b->width, rows = (int)b->rows;
        if (t->shelf_x + w + PAD > ATLAS) { t->shelf_y += t->shelf_h + PAD; t->shelf_x = 0; t->shelf_h = 0; }
        if (t->shelf_y + rows + PAD > ATLAS || w + PAD > ATLAS) return NULL;
        const unsigned char *table = preblend(t, lum);
        for (int y = 0; y < rows; y++) {
            unsigned char *row = t->pixels + (size_t)(t->shelf_y + y) * ATLAS + t->shelf_x;
            const unsigned char *in = b->buffer + (ptrdiff_t)y * b->pitch;
            for (int x = 0; x < w; x++) row[x] = table[in[x]];
        }
        e->used = 1;
        e->font = font; e->size64 = size64; e->glyph = (int)glyph; e->sub = sub; e->lum = lum;
        e->x = t->shelf_x; e->y = t->shelf_y; e->w = w; e->h = rows;
        e->left = face->glyph->bitmap_left; e->top = face->glyph->bitmap_top;
        if (t->shelf_y < t->dirty_y0) t->dirty_y0 = t->shelf_y;
        if (t->shelf_y + rows > t->dirty_y1) t->dirty_y1 = t->shelf_y + rows;
        t->shelf_x += w + PAD;
        if (rows > t->shelf_h) t->shelf_h = rows;
        t->n_slots++;
        return e;
    }
    return NULL;
}

int zb_text_layout(zb_text *t, int font, double size, const char *s, size_t len, double x, double y, int lum, zb_text_vertex *out) {
    int size64 = set_size(t, font, size);
    if (size64 < 0) return 0;
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    /* The baseline is rounded to a pixel; the pen's x to a quarter pixel, after a half quarter's bias
     * (Skia's subpixel rounding for horizontal text). */
    double base = floor(y + 0.5), pen = x;
    int n = 0;
    while (p < end) {
        FT_UInt glyph = FT_Get_Char_Index(t->faces[font], next_code(&p, end));
        double px = pen + 0.125, ix = floor(px);
        int sub = (int)floor((px - ix) * 4.0);
        if (sub > 3) sub = 3;
        pen += advance(t, font, glyph);
        slot *e = glyph_slot(t, font, size64, glyph, sub, lum);
        if (!e) return -1;
        if (e->w == 0 || e->h == 0) continue;
        float x0 = (float)(ix + e->left), y0 = (float)(base - e->top), x1 = x0 + (float)e->w, y1 = y0 + (float)e->h;
        float u0 = (float)e->x / ATLAS, v0 = (float)e->y / ATLAS, u1 = (float)(e->x + e->w) / ATLAS, v1 = (float)(e->y + e->h) / ATLAS;
        zb_text_vertex q[6] = {{x0, y0, u0, v0}, {x1, y0, u1, v0}, {x0, y1, u0, v1}, {x1, y0, u1, v0}, {x1, y1, u1, v1}, {x0, y1, u0, v1}};
        memcpy(out + n, q, sizeof q);
        n += 6;
    }
    return n;
}

void zb_text_bind(zb_text *t) {
    if (!t->texture) {
        glGenTextures(1, &t->texture);
        glBindTexture(GL_TEXTURE_2D, t->texture);
        glTexImage2D(GL_TEXTURE_2D, 0, GL_ALPHA, ATLAS, ATLAS, 0, GL_ALPHA, GL_UNSIGNED_BYTE, t->pixels);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
        t->dirty_y0 = ATLAS;
        t->dirty_y1 = 0;
        return;
    }
    glBindTexture(GL_TEXTURE_2D, t->texture);
    if (t->dirty_y1 > t->dirty_y0) {
        /* Only the rows glyphs were added to: the atlas grows shelf by shelf. */
        glTexSubImage2D(GL_TEXTURE_2D, 0, 0, t->dirty_y0, ATLAS, t->dirty_y1 - t->dirty_y0, GL_ALPHA, GL_UNSIGNED_BYTE,
                        t->pixels + (size_t)t->dirty_y0 * ATLAS);
        t->dirty_y0 = ATLAS;
        t->dirty_y1 = 0;
    }
}

void zb_text_reset(zb_text *t) {
    memset(t->slots, 0, SLOTS * sizeof *t->slots);
    memset(t->pixels, 0, (size_t)ATLAS * ATLAS);
    t->n_slots = 0;
    t->shelf_x = t->shelf_y = t->shelf_h = 0;
    t->dirty_y0 = 0;
    t->dirty_y1 = ATLAS;
}
