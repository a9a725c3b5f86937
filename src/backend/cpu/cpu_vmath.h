/* Vectorised f32 math for the CPU fast paths (RNN gates, Softmax rows):
 * exp of non-positive arguments, sigmoid and tanh on 8 lanes (x86 AVX2 +
 * FMA), beside the CPU test that picks them at run time.
 *
 * These are approximations with stated bounds (checked against double in
 * tests/test_cpu_rows_fast.c over dense sweeps), used only by fast paths
 * whose results are compared with the reference kernels under a
 * tolerance; the elementwise vocabulary (ir/ew.h) keeps its own,
 * correctly rounded, f32 definitions.
 *
 *  rlx_v8_exp_neg(x), x <= 0:  relative error <= 2^-22 for x >= -87.33
 *                              (exp >= the smallest normal float); 0 below
 *                              (absolute error < 1.2e-38); NaN -> NaN.
 *  rlx_v8_sigmoid(x):          relative error <= 2^-21 for x >= -87.33,
 *                              0 below (absolute error < 1.2e-38)
 *                              (1/(1+e), e*(1/(1+e)) for x < 0, e = exp(-|x|)).
 *  rlx_v8_tanh(x):             relative error <= 2^-21 everywhere (|x| <
 *                              0.625: x + x^3 P(x^2), P a degree-4 fit of
 *                              (tanh(x) - x) / x^3; else (1-e)/(1+e),
 *                              e = exp(-2|x|), the sign restored).
 *
 * Method of exp: x = n ln2 + r, |r| <= ln2/2 (n = round(x log2 e), ln2 in
 * two parts), exp(r) by its degree-7 Taylor polynomial (truncation
 * < 6e-9 relative), times 2^n built in the exponent field. */
#ifndef RLX_BACKEND_CPU_CPU_VMATH_H
#define RLX_BACKEND_CPU_CPU_VMATH_H

#include <stdbool.h>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define RLX_HAVE_AVX2_BUILD 1
#include <immintrin.h>
#else
#define RLX_HAVE_AVX2_BUILD 0
#endif

/* The vector instruction sets the fast paths pick from at run time. */
typedef enum rlx_cpu_isa {
    RLX_CPU_ISA_C = 0,      /* portable C */
    RLX_CPU_ISA_AVX2 = 1,   /* x86 AVX2 + FMA */
    RLX_CPU_ISA_AVX512 = 2  /* AVX2 + FMA and AVX-512F */
} rlx_cpu_isa;

/* The widest set this CPU runs (checked once per process; C on other
 * architectures), capped by rlx_cpu_isa_cap. */
rlx_cpu_isa rlx_cpu_isa_get(void);

/* Caps what rlx_cpu_isa_get returns from now on (process-wide; for tests
 * that run each kernel variant, not while kernels run). */
void rlx_cpu_isa_cap(rlx_cpu_isa max);

/* rlx_cpu_isa_get() >= RLX_CPU_ISA_AVX2. */
bool rlx_cpu_has_avx2(void);

#if RLX_HAVE_AVX2_BUILD
#define RLX_AVX2 __attribute__((target("avx2,fma")))
#define RLX_AVX512 __attribute__((target("avx512f,avx2,fma")))
#define RLX_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) static inline

RLX_AVX2_INLINE __m256 rlx_v8_exp_neg(__m256 x) {
    const __m256 lo = _mm256_set1_ps(-87.33654475f);
    __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    x = _mm256_max_ps(lo, x); /* NaN in x passes (the second operand wins) */
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504089f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187e-06f), r);
    __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    /* n in [-126, 0]: 2^n is a normal float; NaN lanes give NaN through p */
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_andnot_ps(under, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}

RLX_AVX2_INLINE __m256 rlx_v8_abs(__m256 x) {
    return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
}

RLX_AVX2_INLINE __m256 rlx_v8_sigmoid(__m256 x) {
    __m256 e = rlx_v8_exp_neg(_mm256_sub_ps(_mm256_setzero_ps(), rlx_v8_abs(x)));
    __m256 s = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
    __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
    __m256 v = _mm256_blendv_ps(s, _mm256_mul_ps(e, s), neg);
    __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    return _mm256_blendv_ps(v, x, nan);
}

RLX_AVX2_INLINE __m256 rlx_v8_tanh(__m256 x) {
    __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f)), ax = rlx_v8_abs(x);
    /* large |x|: (1 - e) / (1 + e), e = exp(-2|x|) */
    __m256 e = rlx_v8_exp_neg(_mm256_mul_ps(ax, _mm256_set1_ps(-2.0f)));
    __m256 big = _mm256_div_ps(_mm256_sub_ps(_mm256_set1_ps(1.0f), e), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
    /* small |x|: x + x^3 P(x^2) */
    __m256 u = _mm256_mul_ps(ax, ax);
    __m256 p = _mm256_set1_ps(-0.005691985599696636f);
    p = _mm256_fmadd_ps(p, u, _mm256_set1_ps(0.020626291632652283f));
    p = _mm256_fmadd_ps(p, u, _mm256_set1_ps(-0.05373531952500343f));
    p = _mm256_fmadd_ps(p, u, _mm256_set1_ps(0.13331381976604462f));
    p = _mm256_fmadd_ps(p, u, _mm256_set1_ps(-0.3333328068256378f));
    __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(ax, u), p, ax);
    __m256 is_small = _mm256_cmp_ps(ax, _mm256_set1_ps(0.625f), _CMP_LT_OQ);
    __m256 v = _mm256_or_ps(_mm256_blendv_ps(big, small, is_small), sign);
    __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    return _mm256_blendv_ps(v, x, nan);
}

/* Horizontal sum and maximum of 8 lanes. */
RLX_AVX2_INLINE float rlx_v8_hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

RLX_AVX2_INLINE float rlx_v8_hmax(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
#endif

#endif
