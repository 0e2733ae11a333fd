/* numpy.random.default_rng(seed).integers(0, bound, n) for bound <= 256, exactly (video_noise.c). */
#ifndef ZB_VIDEO_NOISE_H
#define ZB_VIDEO_NOISE_H
#include <stddef.h>
#include <stdint.h>
void zb_noise_bounded(unsigned char *out, size_t n, uint32_t bound, uint64_t seed);
#endif
