/* The AVX2 + FMA (rlx_ewm_<name>_v8, __m256) and AVX-512F
 * (rlx_ewm_<name>_v16, __m512) instantiations of ir/ew_math_body.h: the
 * vector forms of the vocabulary's transcendental functions, bit for bit
 * their scalar twin (ir/ew_math.h). Inline, for kernels compiled with
 * RLX_AVX2 / RLX_AVX512 (backend/cpu/cpu_vmath.h). */
#ifndef RLX_BACKEND_CPU_CPU_EW_VEC_H
#define RLX_BACKEND_CPU_CPU_EW_VEC_H

#include "backend/cpu/cpu_vmath.h"
#include "ir/ew_math.h"

#if RLX_HAVE_AVX2_BUILD
/* ---- AVX2 + FMA */
#define V __m256
#define VI __m256i
#define VM __m256
#define EWM(name) rlx_ewm_##name##_v8
#define EWM_ATTR RLX_AVX2_INLINE
#define EV_C(f) _mm256_set1_ps((float)(f))
#define EI_C(i) _mm256_set1_epi32((int)(i))
#define EV_ADD(a, b) _mm256_add_ps(a, b)
#define EV_SUB(a, b) _mm256_sub_ps(a, b)
#define EV_MUL(a, b) _mm256_mul_ps(a, b)
#define EV_DIV(a, b) _mm256_div_ps(a, b)
#define EV_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define EV_MAX(a, b) _mm256_max_ps(a, b)
#define EV_MIN(a, b) _mm256_min_ps(a, b)
#define EV_ABS(a) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a)
#define EV_SIGN(a) _mm256_and_ps(a, _mm256_set1_ps(-0.0f))
#define EV_XOR(a, b) _mm256_xor_ps(a, b)
#define EV_LT(a, b) _mm256_cmp_ps(a, b, _CMP_LT_OQ)
#define EV_EQ(a, b) _mm256_cmp_ps(a, b, _CMP_EQ_OQ)
#define EV_NAN(a) _mm256_cmp_ps(a, a, _CMP_UNORD_Q)
#define EV_SEL(m, a, b) _mm256_blendv_ps(b, a, m)
#define EV_BITS(a) _mm256_castps_si256(a)
#define EV_FLOAT(i) _mm256_castsi256_ps(i)
#define EI_ADD(i, j) _mm256_add_epi32(i, j)
#define EI_SUB(i, j) _mm256_sub_epi32(i, j)
#define EI_AND(i, j) _mm256_and_si256(i, j)
#define EI_SHL(i, n) _mm256_slli_epi32(i, n)
#define EI_SRA(i, n) _mm256_srai_epi32(i, n)
#define EI_TOF(i) _mm256_cvtepi32_ps(i)
#include "ir/ew_math_body.h"
#include "ir/ew_math_undef.h"

/* ---- AVX-512F */
#define RLX_AVX512_INLINE __attribute__((target("avx512f,avx2,fma"), always_inline)) static inline
#define V __m512
#define VI __m512i
#define VM __mmask16
#define EWM(name) rlx_ewm_##name##_v16
#define EWM_ATTR RLX_AVX512_INLINE
#define EV_C(f) _mm512_set1_ps((float)(f))
#define EI_C(i) _mm512_set1_epi32((int)(i))
#define EV_ADD(a, b) _mm512_add_ps(a, b)
#define EV_SUB(a, b) _mm512_sub_ps(a, b)
#define EV_MUL(a, b) _mm512_mul_ps(a, b)
#define EV_DIV(a, b) _mm512_div_ps(a, b)
#define EV_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define EV_MAX(a, b) _mm512_max_ps(a, b)
#define EV_MIN(a, b) _mm512_min_ps(a, b)
#define EV_ABS(a) _mm512_castsi512_ps(_mm512_and_epi32(_mm512_castps_si512(a), _mm512_set1_epi32(0x7fffffff)))
#define EV_SIGN(a) _mm512_castsi512_ps(_mm512_and_epi32(_mm512_castps_si512(a), _mm512_set1_epi32((int)0x80000000u)))
#define EV_XOR(a, b) _mm512_castsi512_ps(_mm512_xor_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)))
#define EV_LT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ)
#define EV_EQ(a, b) _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ)
#define EV_NAN(a) _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q)
#define EV_SEL(m, a, b) _mm512_mask_blend_ps(m, b, a)
#define EV_BITS(a) _mm512_castps_si512(a)
#define EV_FLOAT(i) _mm512_castsi512_ps(i)
#define EI_ADD(i, j) _mm512_add_epi32(i, j)
#define EI_SUB(i, j) _mm512_sub_epi32(i, j)
#define EI_AND(i, j) _mm512_and_epi32(i, j)
#define EI_SHL(i, n) _mm512_slli_epi32(i, n)
#define EI_SRA(i, n) _mm512_srai_epi32(i, n)
#define EI_TOF(i) _mm512_cvtepi32_ps(i)
#include "ir/ew_math_body.h"
#include "ir/ew_math_undef.h"

/* The vocabulary's select-type functions on one AVX-512 vector, as their
 * rows' f32 definitions (ir/ew_funcs.h: comparisons that are false for NaN
 * keep the operand, Max and Min give NaN for a NaN operand, the same
 * products and quotients), so the same bits: rlx_cpu_ew_bin_vec_f32's
 * loops and the fused programs' rows (cpu_fused_ew.c). */
RLX_AVX512_INLINE __m512 rlx_v16_relu(__m512 v) { /* x < 0 ? 0 : x: NaN and -0 pass */
    return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), _mm512_setzero_ps());
}
RLX_AVX512_INLINE __m512 rlx_v16_clamp(__m512 v, __m512 lo, __m512 hi) { /* rlx_ew_clampf: a NaN bound ignored */
    __m512 y = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, lo, _CMP_LT_OQ), lo);
    return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(y, hi, _CMP_GT_OQ), hi);
}
/* (a != a || b != b) ? NaN : (a CMP b ? a : b), CMP _CMP_GT_OQ (Max) or _CMP_LT_OQ (Min) */
#define RLX_V16_MINMAX(a, b, CMP)                                                                                  \
    _mm512_mask_mov_ps(_mm512_mask_mov_ps(b, _mm512_cmp_ps_mask(a, b, CMP), a), _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q), \
                       _mm512_set1_ps(NAN))
RLX_AVX512_INLINE __m512 rlx_v16_neg(__m512 v) {
    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), _mm512_set1_epi32((int)0x80000000u)));
}
RLX_AVX512_INLINE __m512 rlx_v16_abs(__m512 v) {
    return _mm512_castsi512_ps(_mm512_andnot_si512(_mm512_set1_epi32((int)0x80000000u), _mm512_castps_si512(v)));
}
RLX_AVX512_INLINE __m512 rlx_v16_leakyrelu(__m512 v, __m512 a) { /* x >= 0 ? x : a x: NaN gives a x */
    return _mm512_mask_mov_ps(_mm512_mul_ps(a, v), _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GE_OQ), v);
}
RLX_AVX512_INLINE __m512 rlx_v16_hardsigmoid(__m512 v, __m512 a, __m512 b) { /* clamp(a x + b, 0, 1): product, sum */
    return rlx_v16_clamp(_mm512_add_ps(_mm512_mul_ps(a, v), b), _mm512_setzero_ps(), _mm512_set1_ps(1.0f));
}
RLX_AVX512_INLINE __m512 rlx_v16_hardswish(__m512 v) { /* x clamp(x / 6 + 1/2, 0, 1): quotient, sum, product */
    __m512 t = _mm512_add_ps(_mm512_div_ps(v, _mm512_set1_ps(6.0f)), _mm512_set1_ps(0.5f));
    return _mm512_mul_ps(v, rlx_v16_clamp(t, _mm512_setzero_ps(), _mm512_set1_ps(1.0f)));
}

#endif

#endif
