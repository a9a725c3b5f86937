/* CPU fast paths of row-wise ops over f32 (see cpu_rows.h) and the CPU
 * feature test of cpu_vmath.h. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_rows.h"
#include "backend/cpu/cpu_nn.h"
#include "ir/ops/reduce_geom.h"
#include "backend/cpu/cpu_ew_vec.h"
#include "backend/cpu/cpu_vmath.h"
#include "base/parallel.h"

/* Relaxed atomics: every thread computes the same value, and a test's cap
 * is set between runs; plain ints here were a data race for TSan. */
static _Atomic int g_isa = -1, g_isa_cap = RLX_CPU_ISA_AVX512;

rlx_cpu_isa rlx_cpu_isa_get(void) {
    int isa = atomic_load_explicit(&g_isa, memory_order_relaxed);
    if (isa < 0) {
        isa = RLX_CPU_ISA_C;
#if RLX_HAVE_AVX2_BUILD
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
            isa = __builtin_cpu_supports("avx512f") ? RLX_CPU_ISA_AVX512 : RLX_CPU_ISA_AVX2;
#endif
        atomic_store_explicit(&g_isa, isa, memory_order_relaxed);
    }
    int cap = atomic_load_explicit(&g_isa_cap, memory_order_relaxed);
    return (rlx_cpu_isa)(isa < cap ? isa : cap);
}

void rlx_cpu_isa_cap(rlx_cpu_isa max) { atomic_store_explicit(&g_isa_cap, (int)max, memory_order_relaxed); }

bool rlx_cpu_has_avx2(void) { return rlx_cpu_isa_get() >= RLX_CPU_ISA_AVX2; }

/* ------------------------------------------------------------ Softmax, LogSoftmax */

typedef struct sm_job {
    const float *x;
    float *y;
    size_t len;
    bool log;
} sm_job;

#if RLX_HAVE_AVX2_BUILD
/* The first n (< 8) lanes: a mask for maskload / maskstore. */
RLX_AVX2_INLINE __m256i tail_mask(size_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Adds the 8 floats of v to the two 4-lane double accumulators. */
RLX_AVX2_INLINE void acc_pd(__m256d *a0, __m256d *a1, __m256 v) {
    *a0 = _mm256_add_pd(*a0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    *a1 = _mm256_add_pd(*a1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

RLX_AVX2_INLINE double hsum_pd(__m256d a) {
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

/* Rows [r0, r1): m = max, e = exp(x - m) (the vocabulary's Exp, vector
 * form: the bits of its f32 definition), sum of e in double: lanes j and
 * j + 4 of each block of 8 (s0, s1) in the row's order, then
 * ((s0 + s1)[0] + (s0 + s1)[2]) + ((s0 + s1)[1] + (s0 + s1)[3]): the AVX2
 * and AVX-512 forms add in this same order, so they give the same bits.
 * Softmax y = e * (1 / sum), LogSoftmax y = (x - m) - log(sum). */
RLX_AVX2 static void softmax_rows(void *ctx, size_t r0, size_t r1) {
    const sm_job *j = ctx;
    size_t len = j->len, n8 = len - len % 8, rest = len % 8;
    __m256i tm = tail_mask(rest);
    __m256 ninf = _mm256_set1_ps(-INFINITY);
    for (size_t r = r0; r < r1; r++) {
        const float *x = j->x + r * len;
        float *y = j->y + r * len;
        __m256 vm = ninf;
        for (size_t i = 0; i < n8; i += 8) vm = _mm256_max_ps(_mm256_loadu_ps(x + i), vm);
        if (rest) vm = _mm256_max_ps(_mm256_blendv_ps(ninf, _mm256_maskload_ps(x + n8, tm), _mm256_castsi256_ps(tm)), vm);
        /* max_ps may drop a NaN, but exp(NaN - m) makes the sum, hence the
         * row, NaN, as in the reference */
        float m = rlx_v8_hmax(vm);
        __m256 mm = _mm256_set1_ps(m);
        __m256d s0 = _mm256_setzero_pd(), s1 = s0;
        for (size_t i = 0; i < n8; i += 8) {
            __m256 e = rlx_ewm_exp_v8(_mm256_sub_ps(_mm256_loadu_ps(x + i), mm));
            if (!j->log) _mm256_storeu_ps(y + i, e);
            acc_pd(&s0, &s1, e);
        }
        if (rest) {
            __m256 e = rlx_ewm_exp_v8(_mm256_sub_ps(_mm256_maskload_ps(x + n8, tm), mm));
            e = _mm256_and_ps(e, _mm256_castsi256_ps(tm));
            if (!j->log) _mm256_maskstore_ps(y + n8, tm, e);
            acc_pd(&s0, &s1, e);
        }
        double sum = hsum_pd(_mm256_add_pd(s0, s1));
        if (m != m) sum = NAN;
        if (!j->log) {
            __m256 inv = _mm256_set1_ps((float)(1.0 / sum));
            for (size_t i = 0; i < n8; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), inv));
            if (rest) _mm256_maskstore_ps(y + n8, tm, _mm256_mul_ps(_mm256_maskload_ps(y + n8, tm), inv));
        } else {
            __m256 ls = _mm256_set1_ps((float)log(sum));
            for (size_t i = 0; i < n8; i += 8)
                _mm256_storeu_ps(y + i, _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), mm), ls));
            if (rest)
                _mm256_maskstore_ps(y + n8, tm, _mm256_sub_ps(_mm256_sub_ps(_mm256_maskload_ps(x + n8, tm), mm), ls));
        }
    }
}

/* The same with 16 lanes where whole blocks of 16 fit (the sums as above:
 * the low then the high 8 of each block into s0 | s1 of one 8-double
 * register). */
RLX_AVX512 static void softmax_rows16(void *ctx, size_t r0, size_t r1) {
    const sm_job *j = ctx;
    size_t len = j->len, n16 = len - len % 16, n8 = len - len % 8, rest = len % 8;
    __m256i tm = tail_mask(rest);
    __m256 ninf = _mm256_set1_ps(-INFINITY);
    for (size_t r = r0; r < r1; r++) {
        const float *x = j->x + r * len;
        float *y = j->y + r * len;
        __m512 wm = _mm512_set1_ps(-INFINITY);
        for (size_t i = 0; i < n16; i += 16) wm = _mm512_max_ps(_mm512_loadu_ps(x + i), wm);
        __m256 vm = _mm256_max_ps(_mm512_castps512_ps256(wm),
                                  _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(wm), 1)));
        if (n8 > n16) vm = _mm256_max_ps(_mm256_loadu_ps(x + n16), vm);
        if (rest) vm = _mm256_max_ps(_mm256_blendv_ps(ninf, _mm256_maskload_ps(x + n8, tm), _mm256_castsi256_ps(tm)), vm);
        float m = rlx_v8_hmax(vm);
        __m512 wmm = _mm512_set1_ps(m);
        __m256 mm = _mm256_set1_ps(m);
        __m512d acc = _mm512_setzero_pd();
        for (size_t i = 0; i < n16; i += 16) {
            __m512 e = rlx_ewm_exp_v16(_mm512_sub_ps(_mm512_loadu_ps(x + i), wmm));
            if (!j->log) _mm512_storeu_ps(y + i, e);
            acc = _mm512_add_pd(acc, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
            acc = _mm512_add_pd(acc, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
        }
        if (n8 > n16) {
            __m256 e = rlx_ewm_exp_v8(_mm256_sub_ps(_mm256_loadu_ps(x + n16), mm));
            if (!j->log) _mm256_storeu_ps(y + n16, e);
            acc = _mm512_add_pd(acc, _mm512_cvtps_pd(e));
        }
        if (rest) {
            __m256 e = rlx_ewm_exp_v8(_mm256_sub_ps(_mm256_maskload_ps(x + n8, tm), mm));
            e = _mm256_and_ps(e, _mm256_castsi256_ps(tm));
            if (!j->log) _mm256_maskstore_ps(y + n8, tm, e);
            acc = _mm512_add_pd(acc, _mm512_cvtps_pd(e));
        }
        double sum = hsum_pd(_mm256_add_pd(_mm512_castpd512_pd256(acc), _mm512_extractf64x4_pd(acc, 1)));
        if (m != m) sum = NAN;
        if (!j->log) {
            __m512 inv = _mm512_set1_ps((float)(1.0 / sum));
            size_t i = 0;
            for (; i < n16; i += 16) _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(y + i), inv));
            for (; i < n8; i += 8)
                _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), _mm512_castps512_ps256(inv)));
            if (rest) _mm256_maskstore_ps(y + n8, tm, _mm256_mul_ps(_mm256_maskload_ps(y + n8, tm), _mm512_castps512_ps256(inv)));
        } else {
            __m512 ls = _mm512_set1_ps((float)log(sum));
            __m256 ls8 = _mm512_castps512_ps256(ls);
            size_t i = 0;
            for (; i < n16; i += 16)
                _mm512_storeu_ps(y + i, _mm512_sub_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), wmm), ls));
            for (; i < n8; i += 8)
                _mm256_storeu_ps(y + i, _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), mm), ls8));
            if (rest)
                _mm256_maskstore_ps(y + n8, tm, _mm256_sub_ps(_mm256_sub_ps(_mm256_maskload_ps(x + n8, tm), mm), ls8));
        }
    }
}
#endif

bool rlx_cpu_rows_softmax_serial(const float *x, float *y, size_t rows, size_t len) {
#if RLX_HAVE_AVX2_BUILD
    if (!rlx_cpu_has_avx2() || len == 0) return false;
    sm_job j = { x, y, len, false };
    if (len >= 16 && rlx_cpu_isa_get() >= RLX_CPU_ISA_AVX512)
        softmax_rows16(&j, 0, rows);
    else
        softmax_rows(&j, 0, rows);
    return true;
#else
    (void)x, (void)y, (void)rows, (void)len;
    return false;
#endif
}

bool rlx_cpu_rows_softmax(const float *x, float *y, size_t rows, size_t len, bool log_softmax) {
#if RLX_HAVE_AVX2_BUILD
    if (!rlx_cpu_has_avx2() || len == 0) return false;
    sm_job j = { x, y, len, log_softmax };
    rlx_parallel_for(rows, RLX_CPU_ROWS_GRAIN / len + 1, len >= 16 && rlx_cpu_isa_get() >= RLX_CPU_ISA_AVX512 ? softmax_rows16 : softmax_rows, &j);
    return true;
#else
    (void)x, (void)y, (void)rows, (void)len, (void)log_softmax;
    return false;
#endif
}

/* ------------------------------------------------------------ ArgMax, ArgMin */

typedef struct arg_job {
    const float *x;
    int64_t *y;
    size_t len;
    bool is_max, last;
} arg_job;

static void arg_rows(void *ctx, size_t r0, size_t r1) {
    const arg_job *a = ctx;
    size_t len = a->len;
    for (size_t r = r0; r < r1; r++) {
        const float *x = a->x + r * len;
        size_t best = 0;
        float bv = x[0];
        /* four loops without a mode test inside; a NaN fails every
         * comparison, which is the reference's NaN rule (cpu_reduce.c) */
        if (a->is_max && !a->last) {
            for (size_t j = 1; j < len; j++) {
                if (x[j] > bv) bv = x[j], best = j;
            }
        } else if (a->is_max) {
            for (size_t j = 1; j < len; j++) {
                if (x[j] >= bv) bv = x[j], best = j;
            }
        } else if (!a->last) {
            for (size_t j = 1; j < len; j++) {
                if (x[j] < bv) bv = x[j], best = j;
            }
        } else {
            for (size_t j = 1; j < len; j++) {
                if (x[j] <= bv) bv = x[j], best = j;
            }
        }
        a->y[r] = (int64_t)best;
    }
}

void rlx_cpu_rows_arg(const float *x, int64_t *y, size_t rows, size_t len, bool is_max, bool last) {
    arg_job a = { x, y, len, is_max, last };
    rlx_parallel_for(rows, 16384 / len + 1, arg_rows, &a);
}

/* ------------------------------------------------------------ LayerNormalization */

typedef struct ln_job {
    const float *x, *scale, *bias;
    float *y, *mean, *inv;
    size_t len;
    double eps;
} ln_job;

#if RLX_HAVE_AVX2_BUILD
/* Per row: mean = sum / len and var = sum((x - mean)^2) / len, both sums in
 * double lanes; y = (x - mean) * inv * scale + bias in f32. */
RLX_AVX2 static void ln_rows(void *ctx, size_t r0, size_t r1) {
    const ln_job *j = ctx;
    size_t len = j->len, n8 = len - len % 8, rest = len % 8;
    __m256i tm = tail_mask(rest);
    for (size_t r = r0; r < r1; r++) {
        const float *x = j->x + r * len;
        float *y = j->y + r * len;
        __m256d s0 = _mm256_setzero_pd(), s1 = s0;
        for (size_t i = 0; i < n8; i += 8) acc_pd(&s0, &s1, _mm256_loadu_ps(x + i));
        if (rest) acc_pd(&s0, &s1, _mm256_maskload_ps(x + n8, tm));
        double mean = hsum_pd(_mm256_add_pd(s0, s1)) / (double)len;
        __m256d md = _mm256_set1_pd(mean), q0 = _mm256_setzero_pd(), q1 = q0;
        for (size_t i = 0; i <= n8; i += 8) {
            if (i == n8 && !rest) break;
            __m256 v = i < n8 ? _mm256_loadu_ps(x + i) : _mm256_maskload_ps(x + n8, tm);
            __m256d d0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), md);
            __m256d d1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), md);
            if (i == n8) { /* lanes past the row are 0, not 0 - mean */
                __m256 mk = _mm256_castsi256_ps(tm);
                d0 = _mm256_and_pd(d0, _mm256_cvtps_pd(_mm256_castps256_ps128(mk)));
                d1 = _mm256_and_pd(d1, _mm256_cvtps_pd(_mm256_extractf128_ps(mk, 1)));
            }
            q0 = _mm256_fmadd_pd(d0, d0, q0);
            q1 = _mm256_fmadd_pd(d1, d1, q1);
        }
        double q = hsum_pd(_mm256_add_pd(q0, q1)), inv = 1.0 / sqrt(q / (double)len + j->eps);
        if (j->mean) j->mean[r] = (float)mean;
        if (j->inv) j->inv[r] = (float)inv;
        if (q > 9e76) { /* some |x - mean| may pass f32's range (3.4e38; sum d^2 >= d^2): in double */
            for (size_t i = 0; i < len; i++)
                y[i] = (float)(((double)x[i] - mean) * inv * j->scale[i] + (j->bias ? j->bias[i] : 0.0));
            continue;
        }
        __m256 mf = _mm256_set1_ps((float)mean), vf = _mm256_set1_ps((float)inv);
        for (size_t i = 0; i < n8; i += 8) {
            __m256 v = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), mf), vf);
            v = _mm256_mul_ps(v, _mm256_loadu_ps(j->scale + i));
            if (j->bias) v = _mm256_add_ps(v, _mm256_loadu_ps(j->bias + i));
            _mm256_storeu_ps(y + i, v);
        }
        if (rest) {
            __m256 v = _mm256_mul_ps(_mm256_sub_ps(_mm256_maskload_ps(x + n8, tm), mf), vf);
            v = _mm256_mul_ps(v, _mm256_maskload_ps(j->scale + n8, tm));
            if (j->bias) v = _mm256_add_ps(v, _mm256_maskload_ps(j->bias + n8, tm));
            _mm256_maskstore_ps(y + n8, tm, v);
        }
    }
}
#endif

bool rlx_cpu_rows_layernorm(const float *x, const float *scale, const float *bias, float *y, float *mean, float *inv,
                            size_t rows, size_t len, double eps) {
#if RLX_HAVE_AVX2_BUILD
    if (!rlx_cpu_has_avx2() || len == 0) return false;
    ln_job j = { x, scale, bias, y, mean, inv, len, eps };
    rlx_parallel_for(rows, RLX_CPU_ROWS_GRAIN / len + 1, ln_rows, &j);
    return true;
#else
    (void)x, (void)scale, (void)bias, (void)y, (void)mean, (void)inv, (void)rows, (void)len, (void)eps;
    return false;
#endif
}

/* ------------------------------------------------------------ kernels */

/* Softmax / LogSoftmax: the fast path when X and Y are f32 and each
 * normalised line is a contiguous row (the last axis from version 13, any
 * axis before); else the reference (cpu_nn_gemm.c). */
static rlx_status softmax_kernel(rlx_cpu_kctx *k, bool log_softmax) {
    const rlx_tensor *xt = k->in[0];
    int ax;
    if (!k->reference && xt->dtype == RLX_DTYPE_F32 && k->out[0]->dtype == RLX_DTYPE_F32 &&
        rlx_norm_axis(rlx_softmax_axis(k->n), xt->rank, &ax) && (k->n->version < 13 || ax == xt->rank - 1)) {
        size_t rows = rlx_dims_span(xt->dims, 0, ax), len = rlx_dims_span(xt->dims, ax, xt->rank);
        if (rows * len == 0 || rlx_cpu_rows_softmax(xt->data, k->out[0]->data, rows, len, log_softmax)) return RLX_OK;
    }
    return log_softmax ? rlx_cpu_nn_logsoftmax(k) : rlx_cpu_nn_softmax(k);
}

rlx_status rlx_cpu_rows_softmax_kernel(rlx_cpu_kctx *k) { return softmax_kernel(k, false); }
rlx_status rlx_cpu_rows_logsoftmax_kernel(rlx_cpu_kctx *k) { return softmax_kernel(k, true); }
