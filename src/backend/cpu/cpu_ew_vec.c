/* The vectorised transcendental functions of the elementwise vocabulary:
 * ir/ew_math_body.h instantiated for AVX2 + FMA (8 lanes) and AVX-512F (16
 * lanes), picked at run time (rlx_cpu_isa_get). Each lane computes what
 * the scalar twin (ir/ew_math.h, the rows' f32 definitions) computes, so
 * the bits do not depend on the width or on where the scalar tail
 * begins; tests/test_cpu_ew_vec.c checks it. */
#include <math.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_ew_vec.h"
#include "backend/cpu/cpu_vmath.h"
#include "ir/ew.h"

/* The rows with a vector form: X(ID, name, args), where the row's f32
 * definition is rlx_ewm_<name>_s args (v the operand, a and b p0 and p1). */
#define EWV_LIST(X)                                                                                       \
    X(EXP, exp, (v)) X(LOG, log, (v)) X(SIGMOID, sigmoid, (v)) X(SILU, silu, (v)) X(SWISH, swish, (v, a)) \
    X(TANH, tanh, (v)) X(GELU, gelu, (v)) X(GELU_TANH, gelu_tanh, (v)) X(ERF, erf, (v))                   \
    X(ELU, elu, (v, a)) X(SELU, selu, (v, a, b)) X(SOFTPLUS, softplus, (v)) X(MISH, mish, (v))

bool rlx_cpu_ew_has_vec(rlx_ew_fn fn) {
    switch (fn) {
#define EWV_CASE_(id, name, args) case RLX_EW_##id:
        EWV_LIST(EWV_CASE_)
#undef EWV_CASE_
        return true;
    default: return false;
    }
}

#if RLX_HAVE_AVX2_BUILD
/* d[i] = fn(x[i]) over whole vectors of W lanes, the rest by the scalar
 * twin (the row's f32 definition); d may be x. */
#define EWV_LOOP_(W, T, LOAD, STORE, id, name, args)                                                      \
    case RLX_EW_##id:                                                                                      \
        for (; i + W <= n; i += W) {                                                                       \
            T v = LOAD(x + i);                                                                             \
            STORE(d + i, rlx_ewm_##name##_v##W args);                                                      \
        }                                                                                                  \
        break;
#define EWV_LOOP_8(id, name, args) EWV_LOOP_(8, __m256, _mm256_loadu_ps, _mm256_storeu_ps, id, name, args)
#define EWV_LOOP_16(id, name, args) EWV_LOOP_(16, __m512, _mm512_loadu_ps, _mm512_storeu_ps, id, name, args)
#define EWV_KERNEL_(W, T, SET1, ATTR)                                                                      \
    ATTR static bool ew_v##W(rlx_ew_fn fn, float *d, const float *x, float p0, float p1, size_t n) {      \
        T a = SET1(p0), b = SET1(p1);                                                                     \
        (void)a, (void)b;                                                                                 \
        size_t i = 0;                                                                                     \
        switch (fn) {                                                                                     \
            EWV_LIST(EWV_LOOP_##W)                                                                        \
        default: return false;                                                                            \
        }                                                                                                 \
        for (; i < n; i++) d[i] = rlx_ew_f32(fn, x[i], x[i], x[i], p0, p1);                               \
        return true;                                                                                      \
    }
EWV_KERNEL_(8, __m256, _mm256_set1_ps, RLX_AVX2)
EWV_KERNEL_(16, __m512, _mm512_set1_ps, RLX_AVX512)
#endif

#if RLX_HAVE_AVX2_BUILD
/* QDQ (rlx.QuantizeDequantize: p0 * clamp(rint_or(x / p0, p1), p1, p1 +
 * 255), ir/ew_funcs.h) over whole vectors, the scalar row's operations
 * lane by lane: the IEEE division, the 2^23 rounding with the sign copied
 * back (|q| >= 2^23 or NaN: q, or p1 for NaN), the clamp by comparisons,
 * the product; returns how many it did. The QDQ models' chains run one
 * per op. */
#define QDQ_BODY_(W, V, LOADU, STOREU, SET1, DIV, MUL, ADD, SUB, AND, OR, ANDNOT, LT, GT, UNORD, SEL)          \
    V vp0 = SET1(p0), vp1 = SET1(p1), vhi = SET1(p1 + 255.0f), two23 = SET1(8388608.0f), sgn = SET1(-0.0f); \
    size_t i = 0;                                                                                          \
    for (; i + W <= n; i += W) {                                                                           \
        V q = DIV(LOADU(x + i), vp0), a = ANDNOT(sgn, q);                                                  \
        V r = OR(SUB(ADD(a, two23), two23), AND(q, sgn));                                                  \
        V t = SEL(LT(a, two23), r, SEL(UNORD(q), vp1, q));                                                 \
        t = SEL(LT(t, vp1), vp1, t);                                                                       \
        t = SEL(GT(t, vhi), vhi, t);                                                                       \
        STOREU(d + i, MUL(vp0, t));                                                                        \
    }                                                                                                      \
    return i;
#define QDQ_SEL8_(m, a, b) _mm256_blendv_ps(b, a, m)
#define QDQ_LT8_(a, b) _mm256_cmp_ps(a, b, _CMP_LT_OQ)
#define QDQ_GT8_(a, b) _mm256_cmp_ps(a, b, _CMP_GT_OQ)
#define QDQ_UNORD8_(a) _mm256_cmp_ps(a, a, _CMP_UNORD_Q)
RLX_AVX2 static size_t qdq_v8(float *d, const float *x, float p0, float p1, size_t n) {
    QDQ_BODY_(8, __m256, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_div_ps, _mm256_mul_ps,
              _mm256_add_ps, _mm256_sub_ps, _mm256_and_ps, _mm256_or_ps, _mm256_andnot_ps, QDQ_LT8_, QDQ_GT8_,
              QDQ_UNORD8_, QDQ_SEL8_)
}
#define QDQ_SEL16_(m, a, b) _mm512_mask_blend_ps(m, b, a)
#define QDQ_LT16_(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ)
#define QDQ_GT16_(a, b) _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ)
#define QDQ_UNORD16_(a) _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q)
#define QDQ_AND16_(a, b) _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_castps_si512(b)))
#define QDQ_OR16_(a, b) _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(a), _mm512_castps_si512(b)))
#define QDQ_ANDNOT16_(a, b) _mm512_castsi512_ps(_mm512_andnot_si512(_mm512_castps_si512(a), _mm512_castps_si512(b)))
/* The quotient of the AVX-512 form: x times r = fl(1 / p0), the vector
 * divided only where that could give another level than fl(x / p0).
 * Both lie within 1.5 * 2^-23 |x / p0| of the exact quotient (r and the
 * product each round once, the division once), so a half-integer between
 * them is within 2^-22 |q| of q = x * r: where q's distance to the nearest
 * half-integer exceeds 2^-21 |q| both round to the same integer (ties
 * included: a tie of fl(x / p0) is within that distance). From |q| >= 1024
 * on both saturate alike (the levels span [p1, p1 + 255], |p1| < 768
 * checked by the caller); NaN and infinities pass as with the division. */
RLX_AVX512 static inline __m512 qdq_quot16(__m512 xv, __m512 vp0, __m512 vr) {
    __m512 q = _mm512_mul_ps(xv, vr), a = _mm512_abs_ps(q);
    __m512 f = _mm512_sub_ps(q, _mm512_roundscale_ps(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    __m512 gap = _mm512_sub_ps(_mm512_set1_ps(0.5f), _mm512_abs_ps(f)); /* to the nearest half-integer */
    __mmask16 near = _mm512_cmp_ps_mask(gap, _mm512_mul_ps(a, _mm512_set1_ps(0x1p-21f)), _CMP_LE_OQ) &
                     _mm512_cmp_ps_mask(a, _mm512_set1_ps(1024.0f), _CMP_LT_OQ);
    return near ? _mm512_div_ps(xv, vp0) : q;
}
#define QDQ_DIV16_(xv, vp0) qdq_quot16(xv, vp0, vr)
RLX_AVX512 static size_t qdq_v16(float *d, const float *x, float p0, float p1, size_t n) {
    QDQ_BODY_(16, __m512, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps, _mm512_div_ps, _mm512_mul_ps,
              _mm512_add_ps, _mm512_sub_ps, QDQ_AND16_, QDQ_OR16_, QDQ_ANDNOT16_, QDQ_LT16_, QDQ_GT16_,
              QDQ_UNORD16_, QDQ_SEL16_)
}
/* qdq_v16 with the reciprocal's product for the quotient (QDQ_DIV16_);
 * the caller checks p0 and r = 1 / p0 normal and |p1| < 768. */
RLX_AVX512 static size_t qdq_v16_recip(float *d, const float *x, float p0, float p1, size_t n) {
    __m512 vr = _mm512_set1_ps(1.0f / p0);
    QDQ_BODY_(16, __m512, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps, QDQ_DIV16_, _mm512_mul_ps,
              _mm512_add_ps, _mm512_sub_ps, QDQ_AND16_, QDQ_OR16_, QDQ_ANDNOT16_, QDQ_LT16_, QDQ_GT16_,
              QDQ_UNORD16_, QDQ_SEL16_)
}
#endif

#if RLX_HAVE_AVX2_BUILD
#define BIN_LOOP_(OP)                                                                           \
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(d + i, OP(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i))); \
    break;
/* x op y for + - * /; the selects of Relu, Neg, Abs, Max, Min, Clip,
 * HardSigmoid, HardSwish as the rows' f32 definitions (comparisons that
 * are false for NaN keep the same operand, Max and Min give NAN for a NaN
 * operand, the same products and quotients): the same bits. */
RLX_AVX512 static size_t bin_v16(rlx_ew_fn fn, float *d, const float *x, const float *y, float p0, float p1, size_t n) {
    size_t i = 0;
#define UN_LOOP_(EXPR)                                                                                            \
    for (; i + 16 <= n; i += 16) {                                                                                \
        __m512 v = _mm512_loadu_ps(x + i);                                                                        \
        _mm512_storeu_ps(d + i, EXPR);                                                                            \
    }                                                                                                             \
    break;
#define MINMAX_LOOP_(CMP)                                                                                         \
    for (; i + 16 <= n; i += 16) {                                                                                \
        __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(y + i);                                             \
        _mm512_storeu_ps(d + i, RLX_V16_MINMAX(a, b, CMP));                                                       \
    }                                                                                                             \
    break;
    switch (fn) {
    case RLX_EW_ADD: BIN_LOOP_(_mm512_add_ps)
    case RLX_EW_SUB: BIN_LOOP_(_mm512_sub_ps)
    case RLX_EW_MUL: BIN_LOOP_(_mm512_mul_ps)
    case RLX_EW_DIV: BIN_LOOP_(_mm512_div_ps)
    case RLX_EW_RELU: UN_LOOP_(rlx_v16_relu(v))
    case RLX_EW_NEG: UN_LOOP_(rlx_v16_neg(v))
    case RLX_EW_ABS: UN_LOOP_(rlx_v16_abs(v))
    case RLX_EW_MAX: MINMAX_LOOP_(_CMP_GT_OQ)
    case RLX_EW_MIN: MINMAX_LOOP_(_CMP_LT_OQ)
    case RLX_EW_CLIP: {
        __m512 lo = _mm512_set1_ps(p0), hi = _mm512_set1_ps(p1);
        UN_LOOP_(rlx_v16_clamp(v, lo, hi))
    }
    case RLX_EW_HARDSIGMOID: {
        __m512 a = _mm512_set1_ps(p0), b = _mm512_set1_ps(p1);
        UN_LOOP_(rlx_v16_hardsigmoid(v, a, b))
    }
    case RLX_EW_HARDSWISH: UN_LOOP_(rlx_v16_hardswish(v))
    case RLX_EW_LEAKYRELU: {
        __m512 a = _mm512_set1_ps(p0);
        UN_LOOP_(rlx_v16_leakyrelu(v, a))
    }
    default: break;
    }
#undef UN_LOOP_
#undef MINMAX_LOOP_
    return i;
}
#undef BIN_LOOP_
#endif

size_t rlx_cpu_ew_bin_vec_f32(rlx_ew_fn fn, float *d, const float *x, const float *y, float p0, float p1, size_t n) {
#if RLX_HAVE_AVX2_BUILD
    if (rlx_cpu_isa_get() == RLX_CPU_ISA_AVX512) return bin_v16(fn, d, x, y, p0, p1, n);
#endif
    (void)fn, (void)d, (void)x, (void)y, (void)p0, (void)p1, (void)n;
    return 0;
}

bool rlx_cpu_ew_vec_f32(rlx_ew_fn fn, float *d, const float *x, float p0, float p1, size_t n) {
#if RLX_HAVE_AVX2_BUILD
    if (fn == RLX_EW_QDQ) {
        rlx_cpu_isa isa = rlx_cpu_isa_get();
        if (isa != RLX_CPU_ISA_AVX512 && isa != RLX_CPU_ISA_AVX2) return false;
        bool recip = isnormal(p0) && isnormal(1.0f / p0) && fabsf(p1) < 768.0f;
        size_t i = isa != RLX_CPU_ISA_AVX512 ? qdq_v8(d, x, p0, p1, n)
                   : recip                   ? qdq_v16_recip(d, x, p0, p1, n)
                                             : qdq_v16(d, x, p0, p1, n);
        for (; i < n; i++) d[i] = rlx_ew_f32(fn, x[i], x[i], x[i], p0, p1);
        return true;
    }
    switch (rlx_cpu_isa_get()) {
    case RLX_CPU_ISA_AVX512: return ew_v16(fn, d, x, p0, p1, n);
    case RLX_CPU_ISA_AVX2: return ew_v8(fn, d, x, p0, p1, n);
    default: break;
    }
#endif
    (void)fn, (void)d, (void)x, (void)p0, (void)p1, (void)n;
    return false;
}

void rlx_cpu_ew_unary_f32(rlx_ew_fn fn, float *d, const float *x, float p0, float p1, size_t n) {
    if (rlx_cpu_ew_vec_f32(fn, d, x, p0, p1, n)) return;
    size_t i = 0;
    switch (fn) { /* the unary selects over AVX-512 vectors (they read x only) */
    case RLX_EW_RELU: case RLX_EW_NEG: case RLX_EW_ABS: case RLX_EW_CLIP: case RLX_EW_HARDSIGMOID:
    case RLX_EW_HARDSWISH: case RLX_EW_LEAKYRELU: i = rlx_cpu_ew_bin_vec_f32(fn, d, x, x, p0, p1, n); break;
    default: break;
    }
    /* the rest one loop per function, the switch outside it (LeakyRelu as a
     * fused activation took a switch per element) */
    switch (fn) {
#define EWU_LOOP_(id, ...)                                                                                        \
    case RLX_EW_##id:                                                                                             \
        for (; i < n; i++) d[i] = rlx_ew_f32_##id(x[i], x[i], x[i], p0, p1);                                      \
        break;
        RLX_EW_FUNCS(EWU_LOOP_)
#undef EWU_LOOP_
    case RLX_EW_COUNT: break;
    }
}
