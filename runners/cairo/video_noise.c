/* The video op's luma noise (docs/display-list.md, video): numpy.random.default_rng(seed).integers(0, bound,
 * n), reproduced exactly. It draws from the PCG64 stream native/gles2/noise.c already reproduces for the noise
 * texture, so that file is compiled into this one (its generator is private to it) rather than copied. */
#include "../../native/gles2/noise.c"

#include "video_noise.h"

/* numpy's int64 draws below 2**32: Lemire's bounded method on 32-bit words (buffered_bounded_lemire_uint32). */
void zb_noise_bounded(unsigned char *out, size_t n, uint32_t bound, uint64_t seed) {
    uint64_t s[4];
    seed_state(seed, s);
    pcg64 r = {{0, 0}, {0, 0}, 0, 0};
    u128 initstate = {s[0], s[1]}, initseq = {s[2], s[3]};
    r.inc.hi = initseq.hi << 1 | initseq.lo >> 63;
    r.inc.lo = initseq.lo << 1 | 1u;
    step(&r);
    r.state = add128(r.state, initstate);
    step(&r);
    uint32_t threshold = (uint32_t)(UINT32_MAX - (bound - 1)) % bound;
    for (size_t i = 0; i < n; i++) {
        uint64_t m = (uint64_t)next32(&r) * bound;
        uint32_t leftover = (uint32_t)m;
        if (leftover < bound)
            while (leftover < threshold) {
                m = (uint64_t)next32(&r) * bound;
                leftover = (uint32_t)m;
            }
        out[i] = (unsigned char)(m >> 32);
    }
}
