/* The `noise` texture of docs/display-list.md: numpy.random.default_rng(seed).integers(0, 256,
 * (h, w, 4), dtype=uint8) with alpha set to 255, reproduced exactly (SeedSequence, PCG64 XSL-RR, numpy's
 * buffered 8-bit draws), so that a runner without Python draws the same texels as the reference. */
#ifndef ZB_NOISE_H
#define ZB_NOISE_H
#include <stdint.h>
/* Fill w*h*4 bytes; seed must be >= 0. */
void zb_noise_rgba(unsigned char *out, int w, int h, uint64_t seed);
/* numpy.random.default_rng(seed).integers(0, bound, n) (int64 draws) for 2 <= bound <= 256, as bytes. */
#include <stddef.h>
void zb_noise_ints(unsigned char *out, size_t n, uint64_t seed, uint32_t bound);
#endif
