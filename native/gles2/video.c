#include "video.h"

#include <math.h>

#include "noise.h"

static unsigned char byte(double v) { return (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v); } /* clip, truncate */

void zb_video_planes(int w, int h, uint64_t seed, int k, unsigned char *y, unsigned char *u, unsigned char *v) {
    /* The noise first: default_rng(4 seed + k).integers(0, 24, (h, w)), added to a diagonal ramp that moves
     * 37 px a frame. The expressions keep numpy's order of float64 operations. */
    zb_noise_ints(y, (size_t)w * (size_t)h, seed * ZB_VIDEO_FRAMES + (uint64_t)k, 24);
    for (int r = 0; r < h; r++)
        for (int c = 0; c < w; c++) {
            unsigned char *p = y + (size_t)r * w + c;
            double ramp = (double)(219 * (int64_t)((c + r + k * 37) % w)) / (double)w;
            *p = byte(16.0 + ramp + (double)*p);
        }
    int cw = w / 2 > 1 ? w / 2 : 1, ch = h / 2 > 1 ? h / 2 : 1;
    for (int r = 0; r < ch; r++)
        for (int c = 0; c < cw; c++) {
            u[(size_t)r * cw + c] = byte(128.0 + 48.0 * sin((double)(c + k * 11) / (double)cw * 6.283));
            v[(size_t)r * cw + c] = byte(128.0 + 48.0 * cos((double)(r + k * 7) / (double)ch * 6.283));
        }
}
