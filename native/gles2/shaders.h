/* The GLSL ES 1.00 programs of zbench-gles2, kept apart from GL so that a tool without a context
 * (shader_dump.c) writes exactly the text the runner compiles, for glslangValidator (check_shaders.sh). */
#ifndef ZB_SHADERS_H
#define ZB_SHADERS_H

/* One fragment shader per kind of draw; each has a clipped and an unclipped variant. */
enum {
    ZB_SOLID,   /* vertex colour times an anti-aliased rect's coverage */
    ZB_TEX,     /* an RGBA texture (images, layers), times an opacity */
    ZB_RRECT,   /* a rounded rect filled or stroked, scan converted 4 x 4 a pixel */
    ZB_LINEAR,  /* linear gradient over an anti-aliased rect */
    ZB_RADIAL,  /* radial gradient over an anti-aliased rect */
    ZB_TEXT,    /* a glyph atlas's coverage times a colour */
    ZB_BLUR,    /* one separable Gaussian pass */
    ZB_VIDEO,   /* Y, U and V planes to RGB (BT.601, limited range) */
    ZB_EFFECT,  /* the `shader` op: fetches and ALU loops, with constant bounds */
    ZB_KINDS
};

/* The widest blur pass, in taps either side of the centre: sigma up to ZB_BLUR_MAX_RADIUS / 3 is drawn
 * exactly; a larger one is cut at this radius (three sigma holds 99.7 % of the kernel). */
#define ZB_BLUR_MAX_RADIUS 48

extern const char *const zb_kind_names[ZB_KINDS];
extern const char ZB_VERTEX_SHADER[];

/* The fragment shader's full text (malloc'd, NULL when out of memory). `mediump` compiles it at mediump even
 * where GL_FRAGMENT_PRECISION_HIGH is defined (ZBENCH_FRAGMENT_PRECISION, docs/native-runner.md); loops,
 * fetches and dependent are the `shader` op's (ZB_EFFECT only). */
char *zb_fragment_source(int kind, int clipped, int mediump, int loops, int fetches, int dependent);

#endif
