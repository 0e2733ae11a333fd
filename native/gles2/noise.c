/* See noise.h. 128-bit arithmetic is written out on two 64-bit halves so that 32-bit ARM builds it too. */
#include "noise.h"

#include <stddef.h>

typedef struct { uint64_t hi, lo; } u128;

static uint64_t mul64(uint64_t a, uint64_t b, uint64_t *hi) {
    uint64_t a0 = a & 0xFFFFFFFFu, a1 = a >> 32, b0 = b & 0xFFFFFFFFu, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xFFFFFFFFu) + (p10 & 0xFFFFFFFFu);
    *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
    return (mid << 32) | (p00 & 0xFFFFFFFFu);
}

static u128 add128(u128 a, u128 b) {
    u128 r;
    r.lo = a.lo + b.lo;
    r.hi = a.hi + b.hi + (r.lo < a.lo);
    return r;
}

static u128 mul128(u128 a, u128 b) {
    u128 r;
    uint64_t hi;
    r.lo = mul64(a.lo, b.lo, &hi);
    r.hi = hi + a.hi * b.lo + a.lo * b.hi;
    return r;
}

/* SeedSequence: a pool of 4 words mixed with these hash constants (docs/display-list.md, the noise pattern). */
#define INIT_A 0x43b0d7e5u
#define MULT_A 0x931e8875u
#define INIT_B 0x8b51f9ddu
#define MULT_B 0x58f38dedu
#define MIX_MULT_L 0xca01f9ddu
#define MIX_MULT_R 0x4973f715u

static uint32_t hashmix(uint32_t value, uint32_t *hash_const) {
    value ^= *hash_const;
    *hash_const *= MULT_A;
    value *= *hash_const;
    value ^= value >> 16;
    return value;
}

static uint32_t mix(uint32_t x, uint32_t y) {
    uint32_t r = MIX_MULT_L * x - MIX_MULT_R * y;
    r ^= r >> 16;
    return r;
}

static void seed_state(uint64_t seed, uint64_t out[4]) {
    uint32_t entropy[2];
    size_t n = 0;
    do { entropy[n++] = (uint32_t)seed; seed >>= 32; } while (seed && n < 2);
    uint32_t pool[4], hc = INIT_A;
    for (size_t i = 0; i < 4; i++) pool[i] = hashmix(i < n ? entropy[i] : 0, &hc);
    for (size_t s = 0; s < 4; s++)
        for (size_t d = 0; d < 4; d++)
            if (s != d) pool[d] = mix(pool[d], hashmix(pool[s], &hc));
    uint32_t words[8], hb = INIT_B;
    for (size_t i = 0; i < 8; i++) {
        uint32_t v = pool[i % 4];
        v ^= hb;
        hb *= MULT_B;
        v *= hb;
        v ^= v >> 16;
        words[i] = v;
    }
    for (size_t i = 0; i < 4; i++) out[i] = (uint64_t)words[2 * i] | (uint64_t)words[2 * i + 1] << 32;
}

typedef struct { u128 state, inc; int has32; uint32_t next32; } pcg64;

static const u128 PCG_MULT = {0x2360ED051FC65DA4ull, 0x4385DF649FCCF645ull};

static void step(pcg64 *r) { r->state = add128(mul128(r->state, PCG_MULT), r->inc); }

static uint64_t next64(pcg64 *r) {
    step(r);
    uint64_t x = r->state.hi ^ r->state.lo;
    unsigned rot = (unsigned)(r->state.hi >> 58);
    return (x >> rot) | (x << ((64 - rot) & 63));
}

static uint32_t next32(pcg64 *r) {
    if (r->has32) { r->has32 = 0; return r->next32; }
    uint64_t v = next64(r);
    r->has32 = 1;
    r->next32 = (uint32_t)(v >> 32);
    return (uint32_t)v;
}

/* default_rng(seed)'s generator: SeedSequence's state, then PCG64's seeding. */
static void pcg_seed(pcg64 *r, uint64_t seed) {
    uint64_t s[4];
    seed_state(seed, s);
    *r = (pcg64){{0, 0}, {0, 0}, 0, 0};
    u128 initstate = {s[0], s[1]}, initseq = {s[2], s[3]};
    r->inc.hi = initseq.hi << 1 | initseq.lo >> 63;
    r->inc.lo = initseq.lo << 1 | 1u;
    step(r);
    r->state = add128(r->state, initstate);
    step(r);
}

void zb_noise_ints(unsigned char *out, size_t n, uint64_t seed, uint32_t bound) {
    pcg64 r;
    pcg_seed(&r, seed);
    /* numpy's int64 draws of a range below 2**32: Lemire's multiply-and-reject on 32-bit outputs. */
    const uint32_t threshold = (uint32_t)(UINT32_MAX - (bound - 1)) % bound;
    for (size_t i = 0; i < n; i++) {
        uint64_t m = (uint64_t)next32(&r) * bound;
        if ((uint32_t)m < bound)
            while ((uint32_t)m < threshold) m = (uint64_t)next32(&r) * bound;
        out[i] = (unsigned char)(m >> 32);
    }
}

void zb_noise_rgba(unsigned char *out, int w, int h, uint64_t seed) {
    pcg64 r;
    pcg_seed(&r, seed);
    uint32_t buf = 0;
    int bcnt = 0;
    size_t n = (size_t)w * (size_t)h * 4;
    for (size_t i = 0; i < n; i++) {
        if (!bcnt) { buf = next32(&r); bcnt = 3; }
        else { buf >>= 8; bcnt--; }
        out[i] = (i % 4 == 3) ? 255 : (unsigned char)buf;
    }
}
