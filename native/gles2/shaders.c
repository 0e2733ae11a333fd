/* The GLSL ES 1.00 sources of zbench-gles2 (shaders.h). Every fragment shader takes its float precision from
 * the #ifdef idiom: highp where the device's fragment shaders have it (GL_FRAGMENT_PRECISION_HIGH), mediump
 * otherwise (a Tegra 3 has no highp in fragment shaders), and mediump everywhere when ZB_MEDIUMP is defined. */
#include "shaders.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const zb_kind_names[ZB_KINDS] = {"solid", "textured", "rrect", "linear", "radial", "text", "blur", "video", "effect"};

/* One vertex shader for every program: a_attr is the draw's colour (solid, rrect) or its texture or local
 * coordinates (everything else), interpolated as they are. Vertex shaders have highp by definition. */
const char ZB_VERTEX_SHADER[] =
    "#version 100\n"
    "attribute vec2 a_pos; attribute vec4 a_attr; uniform vec2 u_scale; varying vec4 v_attr;\n"
    "void main() { v_attr = a_attr; gl_Position = vec4(a_pos * u_scale - 1.0, 0.0, 1.0); }\n";

static const char PRECISION[] =
    "#if defined(GL_FRAGMENT_PRECISION_HIGH) && !defined(ZB_MEDIUMP)\n"
    "precision highp float;\n"
    "#else\n"
    "precision mediump float;\n"
    "#endif\n";

/* Analytic coverage of the pixel around p (window coordinates, y down like the scene) by an anti-aliased
 * rect (its covered area), a rounded rect and the clip in force: a box, a rounded rect and a convex polygon.
 * The reference scan converts anti-aliased shapes 4 x 4 a pixel (Skia's supersampling): each of 4
 * sub-scanlines covers a span of quarter pixels, a rounded rect's span inset at its corners. */
static const char COVERAGE[] =
    "varying vec4 v_attr;\n"
    "float box(vec4 r, vec2 p) { vec2 d = max(min(r.zw, p + 0.5) - max(r.xy, p - 0.5), 0.0); return min(d.x, 1.0) * min(d.y, 1.0); }\n"
    "float span_coverage(float l, float r, float px) {\n"
    "  float a = floor(l * 4.0 + 0.5), b = floor(r * 4.0 + 0.5);\n"
    "  return clamp(min(b, px * 4.0 + 4.0) - max(a, px * 4.0), 0.0, 4.0) * 0.25;\n"
    "}\n"
    "float rr_span(vec4 r, float radius, float sy, float px) {\n"
    "  if (sy < r.y || sy >= r.w) return 0.0;\n"
    "  float t = max(max(r.y + radius - sy, sy - (r.w - radius)), 0.0);\n"
    "  float inset = radius - sqrt(max(radius * radius - t * t, 0.0));\n"
    "  return span_coverage(r.x + inset, r.z - inset, px);\n"
    "}\n"
    "#ifdef NO_CLIP\n"
    "float clip_coverage(vec2 p) { return 1.0; }\n"
    "#else\n"
    "uniform vec4 u_clip; uniform vec4 u_rr; uniform float u_rr_radius;\n"
    "uniform int u_npoly; uniform vec3 u_poly[8];\n"
    "float clip_coverage(vec2 p) {\n"
    "  vec4 r = u_clip; float c = 0.0;\n"
    "  for (int k = 0; k < 4; k++) {\n"
    "    float sy = p.y - 0.5 + (float(k) + 0.5) * 0.25;\n"
    "    if (sy < r.y || sy >= r.w) continue;\n"
    "    float l = r.x, rt = r.z;\n"
    "    if (u_rr_radius >= 0.0) {\n"
    "      if (sy < u_rr.y || sy >= u_rr.w) continue;\n"
    "      float t = max(max(u_rr.y + u_rr_radius - sy, sy - (u_rr.w - u_rr_radius)), 0.0);\n"
    "      float inset = u_rr_radius - sqrt(max(u_rr_radius * u_rr_radius - t * t, 0.0));\n"
    "      l = max(l, u_rr.x + inset); rt = min(rt, u_rr.z - inset);\n"
    "    }\n"
    "    c += span_coverage(l, rt, p.x - 0.5);\n"
    "  }\n"
    "  c *= 0.25;\n"
    "  for (int i = 0; i < 8; i++) { if (i >= u_npoly) break; c *= clamp(dot(u_poly[i].xy, p) + u_poly[i].z + 0.5, 0.0, 1.0); }\n"
    "  return c;\n"
    "}\n"
    "#endif\n";


/* The colour ramp both gradients share: stops unpremultiplied, interpolated so, then premultiplied. */
#define GRADIENT_RAMP \
    "uniform vec4 u_shape; uniform vec4 u_geom; uniform vec4 u_col[8]; uniform vec4 u_pos[2]; uniform int u_nstops;\n" \
    "float pos(int i) { vec4 q = i < 4 ? u_pos[0] : u_pos[1]; int j = i < 4 ? i : i - 4;\n" \
    "  return j == 0 ? q.x : j == 1 ? q.y : j == 2 ? q.z : q.w; }\n" \
    "vec4 ramp(float t) {\n" \
    "  vec4 c = u_col[0];\n" \
    "  for (int i = 1; i < 8; i++) {\n" \
    "    if (i >= u_nstops) break;\n" \
    "    float a = pos(i - 1), b = pos(i);\n" \
    "    if (t >= a) c = b > a ? mix(u_col[i - 1], u_col[i], clamp((t - a) / (b - a), 0.0, 1.0)) : u_col[i];\n" \
    "  }\n" \
    "  return vec4(c.rgb * c.a, c.a);\n" \
    "}\n"

static const char *const BODIES[ZB_KINDS] = {
    /* solid */
    "uniform vec4 u_shape;\n"
    "void main() { vec2 p = gl_FragCoord.xy; gl_FragColor = v_attr * (box(u_shape, p) * clip_coverage(p)); }\n",
    /* texture: premultiplied, or straight colour premultiplied here; u_alpha is a layer's opacity */
    "uniform sampler2D u_tex; uniform float u_premul; uniform float u_alpha;\n"
    "void main() { vec4 t = texture2D(u_tex, v_attr.xy); if (u_premul > 0.5) t.rgb *= t.a;\n"
    "  gl_FragColor = t * (u_alpha * clip_coverage(gl_FragCoord.xy)); }\n",
    /* rrect: u_shape the rect, u_radius its corner radius; u_stroke > 0 strokes it that wide, centred on the edge */
    "uniform vec4 u_shape; uniform float u_radius; uniform float u_stroke;\n"
    "void main() {\n"
    "  vec2 p = gl_FragCoord.xy; vec4 outer = u_shape; float ro = u_radius; vec4 inner = vec4(0.0); float ri = 0.0;\n"
    "  bool hole = false;\n"
    "  if (u_stroke > 0.0) {\n"
    "    float h = u_stroke * 0.5;\n"
    "    outer = u_shape + vec4(-h, -h, h, h); ro = u_radius > 0.0 ? u_radius + h : 0.0;\n"
    "    inner = u_shape + vec4(h, h, -h, -h); ri = max(u_radius - h, 0.0);\n"
    "    hole = inner.z > inner.x && inner.w > inner.y;\n"
    "  }\n"
    "  float c = 0.0;\n"
    "  for (int k = 0; k < 4; k++) {\n"
    "    float sy = p.y - 0.5 + (float(k) + 0.5) * 0.25;\n"
    "    c += rr_span(outer, ro, sy, p.x - 0.5);\n"
    "    if (hole) c -= rr_span(inner, ri, sy, p.x - 0.5);\n"
    "  }\n"
    "  gl_FragColor = v_attr * (clamp(c * 0.25, 0.0, 1.0) * clip_coverage(p));\n"
    "}\n",
    /* linear gradient: u_geom (x0, y0, x1, y1); stops unpremultiplied, interpolated so, then premultiplied */
    GRADIENT_RAMP
    "void main() { vec2 p = gl_FragCoord.xy; vec2 d = u_geom.zw - u_geom.xy;\n"
    "  float t = dot(p - u_geom.xy, d) / max(dot(d, d), 1e-6);\n"
    "  gl_FragColor = ramp(clamp(t, 0.0, 1.0)) * (box(u_shape, p) * clip_coverage(p)); }\n",
    /* radial gradient: u_geom (cx, cy, r) */
    GRADIENT_RAMP
    "void main() { vec2 p = gl_FragCoord.xy;\n"
    "  float t = length(p - u_geom.xy) / max(u_geom.z, 1e-6);\n"
    "  gl_FragColor = ramp(clamp(t, 0.0, 1.0)) * (box(u_shape, p) * clip_coverage(p)); }\n",
    /* text: the atlas holds coverage in alpha; u_color is premultiplied */
    "uniform sampler2D u_tex; uniform vec4 u_color;\n"
    "void main() { gl_FragColor = u_color * (texture2D(u_tex, v_attr.xy).a * clip_coverage(gl_FragCoord.xy)); }\n",
    /* blur: one pass of a Gaussian of u_sigma along u_step (a texel in texture coordinates), cut at u_radius
     * taps either side; its weights are normalised over the taps taken, and its reads clamped to u_lim (the
     * texels of the region read: the edge repeats, as Skia's clamp tile mode). Taps go in pairs, each pair one
     * linearly filtered read between its two texels weighted by their sum, so a pass of radius r reads r + 1
     * times, and the loop ends at the radius (BLUR_RADIUS bounds it, as GLSL ES 1.00 asks). u_color tints the
     * result (a shadow's colour). */
    "uniform sampler2D u_tex; uniform vec2 u_step; uniform float u_sigma; uniform float u_radius; uniform vec4 u_color;\n"
    "uniform vec4 u_shape; uniform vec4 u_lim;\n"
    "vec4 tap(vec2 uv) { return texture2D(u_tex, clamp(uv, u_lim.xy, u_lim.zw)); }\n"
    "void main() {\n"
    "  float q = -0.5 / (u_sigma * u_sigma);\n"
    "  vec4 s = tap(v_attr.xy); float ws = 1.0;\n"
    "  for (int i = 0; i < BLUR_RADIUS / 2 + 1; i++) {\n"
    "    float a = float(2 * i + 1);\n"
    "    if (a > u_radius) break;\n"
    "    float b = a + 1.0;\n"
    "    float wa = exp(a * a * q), wb = b <= u_radius ? exp(b * b * q) : 0.0;\n"
    "    float w = wa + wb, o = (a * wa + b * wb) / w;\n"
    "    s += w * (tap(v_attr.xy + o * u_step) + tap(v_attr.xy - o * u_step)); ws += 2.0 * w;\n"
    "  }\n"
    "  vec2 p = gl_FragCoord.xy;\n"
    "  gl_FragColor = s / ws * u_color * (box(u_shape, p) * clip_coverage(p));\n"
    "}\n",
    /* video: v_attr.xy is the position in Y texels; U and V are half size (runner/interpreter.py VIDEO_SHADER) */
    "uniform sampler2D u_y; uniform sampler2D u_u; uniform sampler2D u_v; uniform vec4 u_size;\n"
    "void main() { vec2 t = v_attr.xy;\n"
    "  float y = (texture2D(u_y, t / u_size.xy).r - 0.0627) * 1.164;\n"
    "  float u = texture2D(u_u, t * 0.5 / u_size.zw).r - 0.502;\n"
    "  float v = texture2D(u_v, t * 0.5 / u_size.zw).r - 0.502;\n"
    "  vec3 rgb = clamp(vec3(y + 1.596 * v, y - 0.392 * u - 0.813 * v, y + 2.017 * u), 0.0, 1.0);\n"
    "  gl_FragColor = vec4(rgb, 1.0) * clip_coverage(gl_FragCoord.xy); }\n",
    /* effect: runner/interpreter.py shader_source in GLSL; v_attr.xy is the local position p, u_tex the 64 x 64
     * noise texture (nearest, repeated) */
    "uniform sampler2D u_tex;\n"
    "void main() {\n"
    "  vec2 p = v_attr.xy; vec4 c = vec4(0.0);\n"
    "#if FETCHES > 0\n"
    "  vec4 t = vec4(0.0);\n"
    "  for (int k = 0; k < FETCHES; k++) {\n"
    "    vec2 q = p + vec2(float(k) * 5.0, float(k) * 3.0);\n"
    "#ifdef DEPENDENT\n"
    "    q += floor(t.rg * 8.0);\n"
    "#endif\n"
    "    t = texture2D(u_tex, q / 64.0); c += t;\n"
    "  }\n"
    "  c /= float(FETCHES);\n"
    "#else\n"
    "  c = vec4(0.5, 0.5, 0.5, 1.0);\n"
    "#endif\n"
    "  float v = 0.5;\n"
    "  for (int k = 0; k < LOOPS; k++) { v = 0.9 * v + 0.1 * (0.5 + 0.5 * sin(p.x * 0.02 + p.y * 0.011 + float(k) * 0.37)); }\n"
    "  gl_FragColor = vec4(c.rgb * (0.4 + 0.6 * v), 1.0) * clip_coverage(gl_FragCoord.xy);\n"
    "}\n",
};

char *zb_fragment_source(int kind, int clipped, int mediump, int loops, int fetches, int dependent) {
    if (kind < 0 || kind >= ZB_KINDS) return NULL;
    char defines[256];
    int n = snprintf(defines, sizeof defines, "#version 100\n%s%s#define BLUR_RADIUS %d\n", mediump ? "#define ZB_MEDIUMP 1\n" : "",
                     clipped ? "" : "#define NO_CLIP 1\n", ZB_BLUR_MAX_RADIUS);
    if (kind == ZB_EFFECT)
        snprintf(defines + n, sizeof defines - (size_t)n, "#define LOOPS %d\n#define FETCHES %d\n%s", loops, fetches,
                 dependent ? "#define DEPENDENT 1\n" : "");
    size_t len = strlen(defines) + strlen(PRECISION) + strlen(COVERAGE) + strlen(BODIES[kind]) + 1;
    char *out = malloc(len);
    if (!out) return NULL;
    snprintf(out, len, "%s%s%s%s", defines, PRECISION, COVERAGE, BODIES[kind]);
    return out;
}
