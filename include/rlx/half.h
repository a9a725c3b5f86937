/* rlx — IEEE binary16 (f16) and bfloat16 (bf16) <-> binary32 conversions.
 *
 * RLX_DTYPE_F16 and RLX_DTYPE_BF16 tensors store each element as the
 * uint16_t bit pattern; these turn one element into a float and back.
 * Conversions to the 16-bit types round to nearest, ties to even (IEEE
 * 754); infinities stay infinities, NaNs stay (quiet) NaNs, f16 values
 * beyond its range become infinities and tiny ones subnormals or zero.
 * Conversions to float are exact. Inline, so they cost no call.
 * Included by rlx/rlx.h.
 *
 * Licensed under the Apache License, Version 2.0. */
#ifndef RLX_HALF_H
#define RLX_HALF_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The value of f16 bits h as a float (exact). */
static inline float rlx_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    float f;
    if (exp == 0) {
        if (man == 0) {
            memcpy(&f, &sign, 4);
            return f;
        }
        /* subnormal: value = man * 2^-24 */
        f = (float)man * (1.0f / 16777216.0f);
        return sign ? -f : f;
    }
    bits = exp == 31 ? (sign | 0x7f800000u | (man << 13)) : (sign | ((exp + 112) << 23) | (man << 13));
    memcpy(&f, &bits, 4);
    return f;
}

/* f16 bits of the float nearest to f (ties to even). */
static inline uint16_t rlx_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
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

/* The value of bf16 bits b as a float (exact: the upper half of a float). */
static inline float rlx_bf16_to_f32(uint16_t b) {
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* bf16 bits of the float nearest to f (ties to even; NaN stays NaN). */
static inline uint16_t rlx_f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

#ifdef __cplusplus
}
#endif
#endif /* RLX_HALF_H */
