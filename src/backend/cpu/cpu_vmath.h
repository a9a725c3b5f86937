/* The CPU feature test of the fast paths (AVX2 + FMA, AVX-512F, picked at
 * run time) and small 8-lane helpers. The vectorised functions of the
 * elementwise vocabulary (exp, sigmoid, tanh, ...) are in cpu_ew_vec.h:
 * the RNN gates and the Softmax rows use those, so that they give the bits
 * of the functions' f32 definitions. */
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
