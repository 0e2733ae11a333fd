/* Text for zbench-gles2: FreeType glyphs rasterised into one GL alpha atlas, laid out as the reference runner
 * lays them out (runner/interpreter.py `_op_text`: Skia with no hinting, anti-aliased edging, subpixel
 * positions): advances unhinted and unkerned, pen x quantised to quarter pixels, the baseline to a pixel. */
#ifndef ZB_GLYPHS_H
#define ZB_GLYPHS_H
#include <stddef.h>

typedef struct zb_text zb_text;

/* The atlas of one GL context and its fonts; NULL with err set when FreeType does not start. */
zb_text *zb_text_new(char *err, size_t errlen);
void zb_text_free(zb_text *t);
/* Load the first of paths that FreeType opens; returns its font index (>= 0), or -1 with err set. */
int zb_text_font(zb_text *t, const char *const *paths, char *err, size_t errlen);

/* The width of `len` bytes of UTF-8 at `size` px: the sum of the glyphs' advances, as Skia's measureText. */
double zb_text_width(zb_text *t, int font, double size, const char *s, size_t len);

/* Greedy word wrap (runner/interpreter.py `_wrap`): the lines of s, each as (start, length) into s, written
 * to starts/lengths up to cap; returns the number of lines (a newline always breaks; max_width < 0: none). */
int zb_text_wrap(zb_text *t, int font, double size, const char *s, double max_width, size_t *starts, size_t *lengths, int cap);

/* One glyph quad: position (x, y) and atlas texture coordinates (u, v), two triangles of 6 vertices. */
typedef struct {
    float x, y, u, v;
} zb_text_vertex;

/* The canonical luminance of a text colour (three bits of its sRGB luminance): glyph masks are corrected
 * for it as the reference's are (glyphs.c `preblend`). */
int zb_text_luminance(const unsigned char rgb[3]);

/* Appends the quads of a line with its baseline at (x, y) to out (room for 6 per byte of s), its glyphs'
 * masks corrected for luminance `lum` (zb_text_luminance); returns how many vertices it wrote, or -1 when
 * the atlas filled up: then draw what `out` holds, call zb_text_reset and lay the line out again. */
int zb_text_layout(zb_text *t, int font, double size, const char *s, size_t len, double x, double y, int lum, zb_text_vertex *out);

/* The atlas texture (GL_ALPHA), bound to the active texture unit; uploads glyphs rasterised since the last call. */
void zb_text_bind(zb_text *t);
/* Empties the atlas (every glyph is rasterised again when next used). */
void zb_text_reset(zb_text *t);
#endif
