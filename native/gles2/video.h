/* The `video` op's planes (runner/interpreter.py `video_planes`): frame k of 4 of a tex_w x tex_h Y plane and
 * half-size U and V planes, byte for byte the reference's. */
#ifndef ZB_VIDEO_H
#define ZB_VIDEO_H
#include <stdint.h>
#define ZB_VIDEO_FRAMES 4
/* y holds w*h bytes, u and v (w/2 at least 1) x (h/2 at least 1) each. */
void zb_video_planes(int w, int h, uint64_t seed, int k, unsigned char *y, unsigned char *u, unsigned char *v);
#endif
