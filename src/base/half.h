/* IEEE binary16 and bfloat16 <-> binary32 conversion (round to nearest even). */
#ifndef RLX_BASE_HALF_H
#define RLX_BASE_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t rlx_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float rlx_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline float rlx_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0) {
        if (man == 0) return rlx_bits_f32(sign);
        /* subnormal: value = man * 2^-24 */
        float v = (float)man * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    if (exp == 31) return rlx_bits_f32(sign | 0x7f800000u | (man << 13));
    return rlx_bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

static inline uint16_t rlx_f32_to_f16(float f) {
    uint32_t x = rlx_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t exp = (x >> 23) & 0xff, man = x & 0x7fffff;
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00);
    if (e <= 0) {
        if (e < -10) return (uint16_t)sign;
        man |= 0x800000;
        int shift = 14 - e;
        uint32_t half = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = (uint32_t)(e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++;
    return (uint16_t)(sign | half);
}

static inline float rlx_bf16_to_f32(uint16_t b) { return rlx_bits_f32((uint32_t)b << 16); }

static inline uint16_t rlx_f32_to_bf16(float f) {
    uint32_t x = rlx_f32_bits(f);
    if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

#endif
