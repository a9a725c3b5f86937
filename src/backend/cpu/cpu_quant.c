/* CPU reference kernels of the quantization family (see
 * src/ir/ops/ops_quant.c and quant_params.h).
 *
 * Rounding is to nearest, ties to even (nearbyint under the default rounding
 * mode), then saturation to the output type's range.
 *  - QuantizeLinear divides x / y_scale in the precision of the scale's
 *    dtype (f32 for f32 scales; f16/bf16 scales: the f32 quotient rounded to
 *    that type, which equals the correctly rounded f16/bf16 quotient), or in
 *    the `precision` attribute's type from version 23. A NaN quotient
 *    quantizes to the type's minimum (the ONNX reference, onnxruntime),
 *    whatever the zero point; +-inf saturate.
 *  - DequantizeLinear computes (float)(x - zero_point) * (float)x_scale in
 *    f32 and rounds the product once to the output type.
 *  - MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv accumulate
 *    (a - a_zero_point) * (b - b_zero_point) in int32 (wrapping, as the
 *    spec allows "overflow only in 32 bits"); the QLinear ops requantize
 *    with y = saturate(round(acc * (a_scale * b_scale / y_scale)) + y_zp),
 *    the multiplier and product in f32 (rlx_quant_mult: onnxruntime's
 *    order and bits, so exact f32 ties round to even as there). Padding taps of the convolutions
 *    contribute 0 (the input padded with its zero point). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_qconv.h"
#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_qgemm.h"
#include "backend/cpu/cpu_sgemm.h"
#include "backend/cpu/cpu_vmath.h"
#include "base/mem.h"
#include "ir/ops/internal_ops.h"
#include "base/parallel.h"
#include "base/scratch.h"
#include "ir/ops/conv_geom.h"
#include "ir/ops/quant_params.h"
#include "rlx/half.h"

static void q_range(rlx_dtype dt, double *lo, double *hi) {
    switch (dt) {
    case RLX_DTYPE_I8: *lo = -128, *hi = 127; break;
    case RLX_DTYPE_U16: *lo = 0, *hi = 65535; break;
    case RLX_DTYPE_I16: *lo = -32768, *hi = 32767; break;
    case RLX_DTYPE_I32: *lo = -2147483648.0, *hi = 2147483647.0; break;
    default: *lo = 0, *hi = 255; break;
    }
}

/* round half to even, NaN -> 0, plus zero point, saturated */
static int64_t q_saturate(double q, double zp, double lo, double hi) {
    double r = nearbyint(q);
    if (r != r) r = 0;
    r += zp;
    if (r < lo) r = lo;
    if (r > hi) r = hi;
    return (int64_t)r;
}

/* QuantizeLinear's level of quotient q: q_saturate, but NaN gives the
 * type's minimum lo (the ONNX reference's rint(NaN) -> INT32_MIN then
 * clip; onnxruntime gives the same), whatever the zero point. */
static int64_t q_level(double q, double zp, double lo, double hi) {
    return q != q ? (int64_t)lo : q_saturate(q, zp, lo, hi);
}

/* Value rounded to the precision of dtype p (f32, f16, bf16; f64 as is). */
static double to_prec(rlx_dtype p, double v) {
    switch (p) {
    case RLX_DTYPE_F64: return v;
    case RLX_DTYPE_F16: return rlx_f16_to_f32(rlx_f32_to_f16((float)v));
    case RLX_DTYPE_BF16: return rlx_bf16_to_f32(rlx_f32_to_bf16((float)v));
    default: return (float)v;
    }
}

/* Loop bounds of a granularity: element i = (o * da + a) * inner + in takes
 * its parameter at pidx(o, a, in). */
typedef struct gran_loop {
    size_t outer, da, inner, sa; /* sa: scale extent along the axis (blocked) */
    int64_t block;
    rlx_quant_mode mode;
} gran_loop;

static rlx_status gran_setup(rlx_cpu_kctx *k, const rlx_tensor *x, const rlx_tensor *s, const rlx_tensor *zp,
                             gran_loop *L) {
    rlx_quant_gran g;
    RLX_TRY(rlx_quant_resolve_gran(k->n, x->dims, x->rank, s->dims, s->rank, zp ? zp->dims : NULL, zp ? zp->rank : -1,
                                   &g));
    size_t n = rlx_tensor_numel(x);
    L->mode = g.mode;
    L->block = g.block_size;
    if (g.mode == RLX_QUANT_PER_TENSOR) {
        if (rlx_tensor_numel(s) < 1) return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "scale has no elements");
        L->outer = 1, L->da = 1, L->inner = n, L->sa = 1;
        return RLX_OK;
    }
    L->outer = rlx_dims_span(x->dims, 0, g.axis), L->inner = rlx_dims_span(x->dims, g.axis + 1, x->rank);
    L->da = (size_t)x->dims[g.axis];
    L->sa = (size_t)s->dims[g.mode == RLX_QUANT_BLOCKED ? g.axis : 0];
    return RLX_OK;
}

static inline size_t gran_pidx(const gran_loop *L, size_t o, size_t a, size_t in) {
    switch (L->mode) {
    case RLX_QUANT_PER_AXIS: return a;
    case RLX_QUANT_BLOCKED: return (o * L->sa + a / (size_t)L->block) * L->inner + in;
    default: return 0;
    }
}

/* ------------------------------------------------------------ QuantizeLinear */

static bool q8_typed(rlx_cpu_kctx *k, const rlx_tensor *x, const rlx_tensor *s, const rlx_tensor *zp, rlx_tensor *y,
                     bool quantize);
static bool is_q8(const rlx_tensor *t);

static rlx_status k_quantize(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0], *s = k->in[1], *zp = k->n->n_in > 2 ? k->in[2] : NULL;
    rlx_tensor *y = k->out[0];
    gran_loop L;
    RLX_TRY(gran_setup(k, x, s, zp, &L));
    rlx_dtype prec = s->dtype;
    if (k->n->version < 19 || !(prec == RLX_DTYPE_F16 || prec == RLX_DTYPE_BF16)) prec = RLX_DTYPE_F32;
    int64_t pa = k->n->version >= 23 ? rlx_param_int(k->n, RLX_A_precision) : 0;
    if (pa) prec = (rlx_dtype)pa;
    if (L.mode == RLX_QUANT_PER_TENSOR && prec == RLX_DTYPE_F32 && q8_typed(k, x, s, zp, y, true)) return RLX_OK;
    double lo, hi;
    q_range(y->dtype, &lo, &hi);
    for (size_t o = 0; o < L.outer; o++)
        for (size_t a = 0; a < L.da; a++)
            for (size_t in = 0; in < L.inner; in++) {
                size_t i = (o * L.da + a) * L.inner + in, p = gran_pidx(&L, o, a, in);
                double xv = to_prec(prec, rlx_tensor_get_f64(x, i)), sv = to_prec(prec, rlx_tensor_get_f64(s, p));
                double q;
                if (prec == RLX_DTYPE_F64) {
                    q = xv / sv;
                } else {
                    float qf = (float)xv / (float)sv; /* one IEEE single division */
                    q = to_prec(prec, qf);
                }
                double z = zp ? (double)rlx_tensor_get_i64(zp, p) : 0;
                rlx_tensor_set_i64(y, i, q_level(q, z, lo, hi));
            }
    return RLX_OK;
}

/* ------------------------------------------------------------ DequantizeLinear */

static rlx_status k_dequantize(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0], *s = k->in[1], *zp = k->n->n_in > 2 ? k->in[2] : NULL;
    rlx_tensor *y = k->out[0];
    gran_loop L;
    RLX_TRY(gran_setup(k, x, s, zp, &L));
    /* a constant one failed the load (infer_dequantize); this one was fed */
    if (x->dtype == RLX_DTYPE_I32) RLX_TRY(rlx_quant_check_i32_zp(k->n, RLX_ERR_INVALID_ARGUMENT, zp));
    if (L.mode == RLX_QUANT_PER_TENSOR && q8_typed(k, x, s, zp, y, false)) return RLX_OK;
    for (size_t o = 0; o < L.outer; o++)
        for (size_t a = 0; a < L.da; a++)
            for (size_t in = 0; in < L.inner; in++) {
                size_t i = (o * L.da + a) * L.inner + in, p = gran_pidx(&L, o, a, in);
                int64_t d = rlx_tensor_get_i64(x, i) - (zp ? rlx_tensor_get_i64(zp, p) : 0);
                float v = (float)d * (float)rlx_tensor_get_f64(s, p);
                rlx_tensor_set_f64(y, i, v);
            }
    return RLX_OK;
}

/* ------------------------------------------------------------ DynamicQuantizeLinear */

/* ONNX DynamicQuantizeLinear-11, in f32 as the spec's formulas:
 * scale = (max(0, max x) - min(0, min x)) / 255 (1/255 when that range is
 * 0), zero_point = round(saturate(0 - min / scale)), y = saturate(round(x /
 * scale) + zero_point), all to u8. NaN elements are ignored for min/max;
 * when every element is NaN the scale is NaN (the zero point 0). */
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define QUANT_HAVE_X86 1
#include <immintrin.h>

/* k_dynamic_quantize's two loops in AVX-512, the same bits: vmaxps /
 * vminps return their second operand (the running value) for a NaN x or
 * equal zeros, as the scalar comparisons keep it, so no -0 ever enters; the
 * quotient is the same IEEE division, rounded half to even, zp added, NaN
 * -> 0 (the type's minimum, as q_level), saturated (a quotient of 2^24 or more saturates either way).
 * x NULL: only min / max (*mn, *mx). */
__attribute__((target("avx512f"))) static size_t dql_avx512(const float *px, size_t n, float *mn, float *mx,
                                                            float scale, float zp, uint8_t *py) {
    size_t i = 0;
    if (!py) {
        __m512 vmx = _mm512_setzero_ps(), vmn = vmx;
        for (; i + 16 <= n; i += 16) {
            __m512 v = _mm512_loadu_ps(px + i);
            vmx = _mm512_max_ps(v, vmx);
            vmn = _mm512_min_ps(v, vmn);
        }
        float a[16], b[16];
        _mm512_storeu_ps(a, vmx);
        _mm512_storeu_ps(b, vmn);
        for (int j = 0; j < 16; j++) {
            if (a[j] > *mx) *mx = a[j];
            if (b[j] < *mn) *mn = b[j];
        }
        return i;
    }
    __m512 vs = _mm512_set1_ps(scale), vz = _mm512_set1_ps(zp), lo = _mm512_setzero_ps(), hi = _mm512_set1_ps(255);
    for (; i + 16 <= n; i += 16) {
        __m512 r = _mm512_roundscale_ps(_mm512_div_ps(_mm512_loadu_ps(px + i), vs),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        r = _mm512_add_ps(r, vz);
        r = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(r, r, _CMP_ORD_Q), r); /* NaN -> 0, the type's minimum */
        r = _mm512_min_ps(_mm512_max_ps(r, lo), hi);
        _mm_storeu_si128((__m128i *)(py + i), _mm512_cvtusepi32_epi8(_mm512_cvtps_epu32(r)));
    }
    return i;
}
#else
#define QUANT_HAVE_X86 0
#endif

/* ------------------------------------------------------------ typed QuantizeLinear / DequantizeLinear */

/* The per-tensor f32 <-> 8-bit cases of k_quantize and k_dequantize as
 * typed loops over the worker pool, the same bits: Q is the f32 quotient
 * rounded half to even, plus the zero point, saturated, NaN -> the type's
 * minimum (in float:
 * a quotient of 2^24 or more saturates either way; uint8 in AVX-512 as
 * DynamicQuantizeLinear's loop); DQ the f32 product (x - zp) * scale. */
typedef struct q8_job {
    const void *x;
    void *y;
    float scale, zp, lo, hi;
    bool is_unsigned, vec;
} q8_job;

static void q_body(void *ctx, size_t i0, size_t i1) {
    const q8_job *j = ctx;
    const float *px = (const float *)j->x + i0;
    size_t n = i1 - i0, i = 0;
#if QUANT_HAVE_X86
    if (j->vec && j->is_unsigned) i = dql_avx512(px, n, NULL, NULL, j->scale, j->zp, (uint8_t *)j->y + i0);
#endif
    for (; i < n; i++) {
        float r = nearbyintf(px[i] / j->scale) + j->zp;
        r = r != r ? j->lo : r < j->lo ? j->lo : r > j->hi ? j->hi : r; /* NaN: the type's minimum (q_level) */
        if (j->is_unsigned) ((uint8_t *)j->y)[i0 + i] = (uint8_t)r;
        else ((int8_t *)j->y)[i0 + i] = (int8_t)r;
    }
}

#if QUANT_HAVE_X86
/* dq_body's loop in AVX-512, 16 at a time, the same f32 operations (the
 * byte converted exactly, less the zero point, times the scale); returns
 * how many it did. */
__attribute__((target("avx512f"))) static size_t dq_avx512(const q8_job *j, size_t i0, size_t i1) {
    __m512 vz = _mm512_set1_ps(j->zp), vs = _mm512_set1_ps(j->scale);
    float *py = (float *)j->y;
    size_t i = i0;
    for (; i + 16 <= i1; i += 16) {
        __m128i b = _mm_loadu_si128((const __m128i *)((const uint8_t *)j->x + i));
        __m512i v = j->is_unsigned ? _mm512_cvtepu8_epi32(b) : _mm512_cvtepi8_epi32(b);
        _mm512_storeu_ps(py + i, _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(v), vz), vs));
    }
    return i;
}
#endif

static void dq_body(void *ctx, size_t i0, size_t i1) {
    const q8_job *j = ctx;
    float *py = (float *)j->y;
#if QUANT_HAVE_X86
    if (j->vec) i0 = dq_avx512(j, i0, i1);
#endif
    if (j->is_unsigned) {
        const uint8_t *px = j->x;
        for (size_t i = i0; i < i1; i++) py[i] = ((float)px[i] - j->zp) * j->scale;
    } else {
        const int8_t *px = j->x;
        for (size_t i = i0; i < i1; i++) py[i] = ((float)px[i] - j->zp) * j->scale;
    }
}

static bool q8_typed(rlx_cpu_kctx *k, const rlx_tensor *x, const rlx_tensor *s, const rlx_tensor *zp, rlx_tensor *y,
                     bool quantize) {
    const rlx_tensor *q = quantize ? y : x, *f = quantize ? x : y;
    if (k->reference || f->dtype != RLX_DTYPE_F32 || s->dtype != RLX_DTYPE_F32 || !is_q8(q) ||
        (zp && zp->dtype != q->dtype))
        return false;
    q8_job j = { .x = x->data, .y = y->data, .scale = ((const float *)s->data)[0],
                 .zp = zp ? (float)rlx_tensor_get_i64(zp, 0) : 0, .is_unsigned = q->dtype == RLX_DTYPE_U8 };
    j.lo = j.is_unsigned ? 0 : -128, j.hi = j.is_unsigned ? 255 : 127;
#if QUANT_HAVE_X86
    j.vec = rlx_cpu_isa_get() == RLX_CPU_ISA_AVX512; /* tests cap it to cover the scalar loops */
#endif
    rlx_parallel_for(rlx_tensor_numel(x), 1u << 14, quantize ? q_body : dq_body, &j);
    return true;
}

static rlx_status k_dynamic_quantize(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0];
    size_t n = rlx_tensor_numel(x);
    const float *px = x->data;
    float mx = 0, mn = 0;
    size_t i0 = 0;
#if QUANT_HAVE_X86
    bool vec = !k->reference && __builtin_cpu_supports("avx512f");
    if (vec) i0 = dql_avx512(px, n, &mn, &mx, 0, 0, NULL);
#endif
    for (size_t i = i0; i < n; i++) {
        if (px[i] > mx) mx = px[i];
        if (px[i] < mn) mn = px[i];
    }
    float range = mx == mn ? 1.0f : mx - mn;
    float scale = range / 255.0f;
    if (mx == mn && n > 0) { /* all zero, or every element NaN: then scale NaN (ONNX reference, onnxruntime) */
        size_t i = 0;
        while (i < n && px[i] != px[i]) i++;
        if (i == n) scale = NAN;
    }
    float izp = 0.0f - mn / scale;
    if (izp != izp) izp = 0; /* x holds an infinity: inf / inf */
    if (izp < 0) izp = 0;
    if (izp > 255) izp = 255;
    float zp = nearbyintf(izp);
    if (k->out[1]) ((float *)k->out[1]->data)[0] = scale;
    if (k->out[2]) ((uint8_t *)k->out[2]->data)[0] = (uint8_t)zp;
    if (k->out[0]) {
        uint8_t *py = k->out[0]->data;
        size_t j0 = 0;
#if QUANT_HAVE_X86
        if (vec) j0 = dql_avx512(px, n, NULL, NULL, scale, zp, py);
#endif
        for (size_t i = j0; i < n; i++) {
            float q = px[i] / scale;
            py[i] = (uint8_t)q_level(q, zp, 0, 255);
        }
    }
    return RLX_OK;
}

/* ------------------------------------------------------------ matmul */

typedef struct mm_param {
    const rlx_tensor *t; /* NULL: 0 (zero point) */
    int64_t strides[RLX_MAX_RANK];
} mm_param;

static rlx_status mm_param_setup(rlx_cpu_kctx *k, mm_param *p, const rlx_tensor *t, const char *what, bool per_row,
                                 const rlx_tensor *op) {
    p->t = t;
    memset(p->strides, 0, sizeof p->strides);
    if (!t) return RLX_OK;
    if (rlx_tensor_numel(t) < 1) return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "%s has no elements", what);
    return rlx_quant_mm_param(k->n, what, per_row, op->dims, op->rank, t->dims, t->rank, p->strides);
}

/* A matmul operand promoted to rank >= 2 (numpy.matmul rules). */
typedef struct mm_operand {
    int rank;
    int64_t dims[RLX_MAX_RANK];
    int64_t strides[RLX_MAX_RANK];
} mm_operand;

static void mm_promote(const rlx_tensor *t, bool is_a, mm_operand *o) {
    if (t->rank == 1) {
        o->rank = 2;
        if (is_a) o->dims[0] = 1, o->dims[1] = t->dims[0];
        else o->dims[0] = t->dims[0], o->dims[1] = 1;
    } else {
        o->rank = t->rank;
        memcpy(o->dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
    }
    rlx_strides(o->dims, o->rank, o->strides);
}

/* Offset of an operand's (or its parameter's) batch part for output batch
 * coordinates c[0..nb). */
static int64_t batch_offset(const mm_operand *o, const int64_t *strides, const int64_t *c, int nb) {
    int ob = o->rank - 2;
    int64_t off = 0;
    for (int j = 0; j < ob; j++)
        if (o->dims[j] != 1) off += c[nb - ob + j] * strides[j];
    return off;
}

/* Integer matmul: y (i32) = sum_k (a - za)(b - zb); with y_scale/y_zp
 * (QLinearMatMul) the sums are requantized to y's dtype. */
static rlx_status mm_run(rlx_cpu_kctx *k, const rlx_tensor *a, const rlx_tensor *b, const rlx_tensor *azp,
                         const rlx_tensor *bzp, const rlx_tensor *as, const rlx_tensor *bs, const rlx_tensor *ys,
                         const rlx_tensor *yzp, rlx_tensor *y) {
    if (a->rank < 1 || b->rank < 1) return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "matmul of a scalar");
    mm_operand A, B;
    mm_promote(a, true, &A);
    mm_promote(b, false, &B);
    int64_t M = A.dims[A.rank - 2], K = A.dims[A.rank - 1], N = B.dims[B.rank - 1];
    if (B.dims[B.rank - 2] != K)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "inner dims %lld and %lld differ", (long long)K,
                            (long long)B.dims[B.rank - 2]);
    mm_param pza, pzb, psa, psb;
    RLX_TRY(mm_param_setup(k, &pza, azp, "a_zero_point", true, a));
    RLX_TRY(mm_param_setup(k, &pzb, bzp, "b_zero_point", false, b));
    RLX_TRY(mm_param_setup(k, &psa, as, "a_scale", true, a));
    RLX_TRY(mm_param_setup(k, &psb, bs, "b_scale", false, b));
    bool requant = ys != NULL;
    double lo = 0, hi = 0, sy = 1, zy = 0;
    if (requant) {
        if (rlx_tensor_numel(ys) < 1 || rlx_tensor_numel(yzp) < 1)
            return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "y_scale or y_zero_point has no elements");
        q_range(y->dtype, &lo, &hi);
        sy = rlx_tensor_get_f64(ys, 0);
        zy = (double)rlx_tensor_get_i64(yzp, 0);
    }
    /* output batch dims: the broadcast of A's and B's */
    int nb = (A.rank > B.rank ? A.rank : B.rank) - 2;
    int64_t bd[RLX_MAX_RANK], c[RLX_MAX_RANK];
    size_t n_batch = 1;
    for (int j = 0; j < nb; j++) {
        int ia = j - (nb - (A.rank - 2)), ib = j - (nb - (B.rank - 2));
        int64_t da = ia >= 0 ? A.dims[ia] : 1, db = ib >= 0 ? B.dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "batch dims %lld and %lld do not broadcast", (long long)da,
                                (long long)db);
        bd[j] = da == 1 ? db : da;
        n_batch *= (size_t)bd[j];
    }
    int32_t *acc_out = y->dtype == RLX_DTYPE_I32 ? y->data : NULL;
    for (size_t bi = 0; bi < n_batch; bi++) {
        size_t rem = bi;
        for (int j = nb - 1; j >= 0; j--) {
            c[j] = (int64_t)(rem % (size_t)bd[j]);
            rem /= (size_t)bd[j];
        }
        int64_t ao = batch_offset(&A, A.strides, c, nb), bo = batch_offset(&B, B.strides, c, nb);
        int64_t zao = batch_offset(&A, pza.strides, c, nb), zbo = batch_offset(&B, pzb.strides, c, nb);
        int64_t sao = batch_offset(&A, psa.strides, c, nb), sbo = batch_offset(&B, psb.strides, c, nb);
        for (int64_t m = 0; m < M; m++) {
            int32_t za = azp ? (int32_t)rlx_tensor_get_i64(azp, (size_t)(zao + m * pza.strides[A.rank - 2])) : 0;
            double sa = as ? rlx_tensor_get_f64(as, (size_t)(sao + m * psa.strides[A.rank - 2])) : 1;
            for (int64_t n = 0; n < N; n++) {
                int32_t zb = bzp ? (int32_t)rlx_tensor_get_i64(bzp, (size_t)(zbo + n * pzb.strides[B.rank - 1])) : 0;
                uint32_t acc = 0;
                for (int64_t kk = 0; kk < K; kk++) {
                    int32_t av = (int32_t)rlx_tensor_get_i64(a, (size_t)(ao + m * K + kk)) - za;
                    int32_t bv = (int32_t)rlx_tensor_get_i64(b, (size_t)(bo + kk * N + n)) - zb;
                    acc += (uint32_t)(av * bv);
                }
                size_t yi = (bi * (size_t)M + (size_t)m) * (size_t)N + (size_t)n;
                if (!requant) {
                    acc_out[yi] = rlx_cpu_wrap32(acc);
                    continue;
                }
                double sb = rlx_tensor_get_f64(bs, (size_t)(sbo + n * psb.strides[B.rank - 1]));
                float mult = rlx_quant_mult(sa, sb, sy);
                rlx_tensor_set_i64(y, yi, q_saturate((double)((float)rlx_cpu_wrap32(acc) * mult), zy, lo, hi));
            }
        }
    }
    return RLX_OK;
}

/* ------------------------------------------------------------ int8 GEMM */

static size_t ceil_div_sz(size_t a, size_t b) { return (a + b - 1) / b; }
static bool is_q8(const rlx_tensor *t) { return t && (t->dtype == RLX_DTYPE_U8 || t->dtype == RLX_DTYPE_I8); }
static bool per_tensor(const rlx_tensor *t) { return t && rlx_tensor_numel(t) == 1; }
static bool per_col(const rlx_tensor *t, int64_t n) { return per_tensor(t) || (t && t->rank == 1 && t->dims[0] == n); }

rlx_status rlx_cpu_quant_prepare(const rlx_graph *g, const rlx_node *n, const rlx_tensor *const *in,
                                 rlx_cpu_sgemm_pack *out) {
    int bi = n->op == RLX_OP_QLinearMatMul || n->op == RLX_OP_QLinearConv ? 3 : 1;
    if (n->n_in <= bi || n->in[bi] < 0 || !in[bi] || !in[bi]->data || (g && !g->values[n->in[bi]].konst))
        return RLX_OK;
    const rlx_tensor *b = in[bi];
    if (n->op == RLX_OP_QLinearConv || n->op == RLX_OP_ConvInteger) {
        /* W [M, C / group, k...]: for the VNNI convolution (cpu_qconv.h)
         * when it runs here and groups have more than one input channel;
         * else as B^T [K, M] of conv_fast's product, one group only
         * (grouped and depthwise convolutions pack per run or run the
         * direct loop) */
        if (!is_q8(b) || b->rank < 3 || b->dims[0] < 1) return RLX_OK;
        int64_t G = rlx_param_int(n, RLX_A_group);
        size_t M = (size_t)b->dims[0], K = rlx_tensor_numel(b) / M;
        if (K < 1) return RLX_OK;
        if (G < 1) G = 1;
        if (rlx_cpu_qconv_available() && rlx_cpu_qconv_fits(K) && b->dims[1] > 1 && M % (size_t)G == 0) {
            rlx_cpu_qconv_pack *qc = calloc(1, sizeof *qc);
            if (!qc) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
            rlx_status st = rlx_cpu_qconv_pack_w(b->dtype == RLX_DTYPE_U8, (size_t)G, M / (size_t)G, K, b->data, qc);
            if (st) {
                free(qc);
                return st;
            }
            out->q8conv = qc;
            return RLX_OK;
        }
        if (G > 1) return RLX_OK;
        rlx_cpu_qgemm_pack *q = calloc(1, sizeof *q);
        if (!q) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        rlx_status st = rlx_cpu_qgemm_pack_bt(b->dtype == RLX_DTYPE_U8, K, M, b->data, K, q);
        if (st) {
            free(q);
            return st;
        }
        out->q8 = q;
        return RLX_OK;
    }
    if (!is_q8(b) || b->rank != 2 || b->dims[0] < 1 || b->dims[1] < 1) return RLX_OK;
    rlx_cpu_qgemm_pack *q = calloc(1, sizeof *q);
    if (!q) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    rlx_status st = rlx_cpu_qgemm_pack_b(b->dtype == RLX_DTYPE_U8, (size_t)b->dims[0], (size_t)b->dims[1], b->data,
                                         (size_t)b->dims[1], q);
    if (st) {
        free(q);
        return st;
    }
    out->q8 = q;
    return RLX_OK;
}

/* mm_fast's and conv_fast's end once a path ran: its error, the node named (the
 * message kept), or *done. */
static rlx_status fast_finish(rlx_cpu_kctx *k, rlx_status st, bool *done) {
    if (st) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s", rlx_last_error());
        return rlx_cpu_fail(k, st, "%s", msg);
    }
    *done = true;
    return RLX_OK;
}

/* mm_run on the int8 GEMM (cpu_qgemm.h, the same bits) when it applies:
 * a [..., M, K] (or [K]) times a 2-D b [K, N], 8-bit integers; a's zero
 * point per tensor (or absent), b's per tensor or per column [N]; for
 * QLinearMatMul a_scale, y_scale, y_zero_point per tensor and b_scale per
 * tensor or per column. *done: whether it ran. */
static rlx_status mm_fast(rlx_cpu_kctx *k, const rlx_tensor *a, const rlx_tensor *b, const rlx_tensor *azp,
                          const rlx_tensor *bzp, const rlx_tensor *as, const rlx_tensor *bs, const rlx_tensor *ys,
                          const rlx_tensor *yzp, rlx_tensor *y, bool *done) {
    *done = false;
    if (k->reference || !is_q8(a) || !is_q8(b) || a->rank < 1 || b->rank != 2) return RLX_OK;
    int64_t K = a->dims[a->rank - 1], N = b->dims[1];
    if (K < 1 || N < 1 || b->dims[0] != K || (azp && !per_tensor(azp)) || (bzp && !per_col(bzp, N))) return RLX_OK;
    size_t M = rlx_tensor_numel(a) / (size_t)K;
    if (M < 1 || rlx_tensor_numel(y) != M * (size_t)N) return RLX_OK;
    bool requant = ys != NULL;
    if (requant ? !is_q8(y) || !per_tensor(as) || !per_col(bs, N) || !per_tensor(ys) || !per_tensor(yzp)
                : y->dtype != RLX_DTYPE_I32)
        return RLX_OK;
    bool zb_col = bzp && rlx_tensor_numel(bzp) != 1, m_col = requant && rlx_tensor_numel(bs) != 1;
    int32_t zb1 = 0;
    float mult1 = 1;
    /* per-column tables in the calling thread's INDEX buffer, else one block */
    int32_t *tab = NULL, *tab_own = NULL;
    if ((zb_col || m_col) && !(tab = rlx_scratch_get(RLX_SCRATCH_INDEX, (size_t)N * 8)) &&
        !(tab = tab_own = malloc((size_t)N * 8)))
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (%lld columns' constants)", (long long)N);
    int32_t *zb = zb_col ? tab : &zb1;
    float *mult = m_col ? (float *)(tab + N) : &mult1;
    for (size_t j = 0; bzp && j < (zb_col ? (size_t)N : 1); j++) zb[j] = (int32_t)rlx_tensor_get_i64(bzp, j);
    double sa = requant ? rlx_tensor_get_f64(as, 0) : 1, sy = requant ? rlx_tensor_get_f64(ys, 0) : 1;
    for (size_t j = 0; requant && j < (m_col ? (size_t)N : 1); j++) mult[j] = rlx_quant_mult(sa, rlx_tensor_get_f64(bs, j), sy);
    const rlx_cpu_qgemm_pack *bp = k->pack ? k->pack->q8 : NULL;
    rlx_cpu_qgemm_args g = {
        .m = M, .n = (size_t)N, .k = (size_t)K,
        .a = a->data, .lda = (size_t)K, .a_unsigned = a->dtype == RLX_DTYPE_U8,
        .za = azp ? (int32_t)rlx_tensor_get_i64(azp, 0) : 0,
        .b = b->data, .ldb = (size_t)N, .b_unsigned = b->dtype == RLX_DTYPE_U8, .bp = bp,
        .zb = zb, .zb_per_col = zb_col,
        .c = requant ? NULL : y->data, .y = requant ? y->data : NULL, .y_unsigned = y->dtype == RLX_DTYPE_U8,
        .mult_per_col = m_col, .mult = mult, .y_zp = requant ? (double)rlx_tensor_get_i64(yzp, 0) : 0,
        .ldc = (size_t)N,
    };
    rlx_status st = rlx_cpu_qgemm(&g);
    free(tab_own);
    return fast_finish(k, st, done);
}

static rlx_status k_matmul_integer(rlx_cpu_kctx *k) {
    const rlx_tensor *azp = k->n->n_in > 2 ? k->in[2] : NULL, *bzp = k->n->n_in > 3 ? k->in[3] : NULL;
    bool done;
    RLX_TRY(mm_fast(k, k->in[0], k->in[1], azp, bzp, NULL, NULL, NULL, NULL, k->out[0], &done));
    return done ? RLX_OK : mm_run(k, k->in[0], k->in[1], azp, bzp, NULL, NULL, NULL, NULL, k->out[0]);
}

/* The scales (inputs 1, 4, 6) of QLinearMatMul / QLinearConv that arrive
 * at run time (constants were checked at load): rlx_quant_scale_rule. */
static rlx_status check_run_scales(const rlx_cpu_kctx *k) {
    for (int i = 1; i <= 6; i += i == 1 ? 3 : 2)
        RLX_TRY(rlx_quant_check_scale(k->n, RLX_ERR_INVALID_ARGUMENT,
                                      rlx_quant_scale_name(k->n->op == RLX_OP_QLinearConv, i), k->in[i],
                                      rlx_quant_scale_rule(i)));
    return RLX_OK;
}

static rlx_status qlinear_matmul_into(rlx_cpu_kctx *k, rlx_tensor *y) {
    const rlx_tensor *const *in = k->in;
    bool done;
    RLX_TRY(mm_fast(k, in[0], in[3], in[2], in[5], in[1], in[4], in[6], in[7], y, &done));
    return done ? RLX_OK : mm_run(k, in[0], in[3], in[2], in[5], in[1], in[4], in[6], in[7], y);
}

/* QLinearConv and QLinearMatMul with a QDQ chain (internal inputs 9..,
 * ir/ops/internal_ops.h): the product's 8-bit result into a tensor of its
 * own (by `into`), then the chain's program over it and the chain's other
 * inputs (the two nodes' bits). */
static rlx_status with_chain(rlx_cpu_kctx *k, rlx_status (*into)(rlx_cpu_kctx *, rlx_tensor *)) {
    rlx_ew_prog read;
    const rlx_ew_prog *pp = k->pack ? k->pack->ew : NULL; /* read at compile */
    if (!pp) {
        RLX_TRY(rlx_ew_prog_read_at(k->n, RLX_QEPI_PREFIX, RLX_QEPI_FIRST, &read));
        pp = &read;
    }
    const rlx_tensor *yz = k->in[7], *ins[RLX_EW_MAX_IN];
    rlx_tensor *out = k->out[0], *y = NULL;
    if (!yz || !out) return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "y_zero_point or the output is missing");
    RLX_TRY(rlx_tensor_create(yz->dtype, out->dims, out->rank, &y));
    rlx_status st = into(k, y);
    for (int i = 0; i < pp->n_in; i++) ins[i] = k->in[RLX_QEPI_FIRST + i] ? k->in[RLX_QEPI_FIRST + i] : y;
    if (st == RLX_OK) st = rlx_cpu_ew_prog_run(k, pp, ins);
    rlx_tensor_destroy(y);
    return st;
}

static rlx_status k_qlinear_matmul(rlx_cpu_kctx *k) {
    RLX_TRY(check_run_scales(k));
    return k->n->n_in > RLX_QEPI_FIRST ? with_chain(k, qlinear_matmul_into) : qlinear_matmul_into(k, k->out[0]);
}

/* ------------------------------------------------------------ convolution */

/* Integer convolution (ONNX Conv geometry): y (i32) = sum (x - zx)(w - zw[m])
 * (+ B[m]); with y_scale/y_zp (QLinearConv) requantized to y's dtype. */
static rlx_status conv_run(rlx_cpu_kctx *k, const rlx_tensor *x, const rlx_tensor *w, const rlx_tensor *xzp,
                           const rlx_tensor *wzp, const rlx_tensor *xs, const rlx_tensor *ws, const rlx_tensor *ys,
                           const rlx_tensor *yzp, const rlx_tensor *bias, rlx_tensor *y) {
    rlx_conv_geom g;
    RLX_TRY(rlx_conv_geom_resolve(k->n, RLX_GEOM_CONV, x->dims, x->rank, w->dims, w->rank, &g));
    const int64_t M = g.c_out, C = g.c_in, cin_g = C / g.group, cout_g = M / g.group;
    size_t nwz = wzp ? rlx_tensor_numel(wzp) : 1, nws = ws ? rlx_tensor_numel(ws) : 1;
    if ((wzp && nwz != 1 && nwz != (size_t)M) || (ws && nws != 1 && nws != (size_t)M))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "weight scale / zero point must have 1 or %lld elements",
                            (long long)M);
    if (xzp && rlx_tensor_numel(xzp) != 1)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "x_zero_point must have one element");
    if (bias && rlx_tensor_numel(bias) != (size_t)M)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "B must have %lld elements", (long long)M);
    bool requant = ys != NULL;
    double lo = 0, hi = 0, sx = 1, sy = 1, zy = 0;
    if (requant) {
        if (rlx_tensor_numel(xs) != 1 || rlx_tensor_numel(ys) != 1 || rlx_tensor_numel(yzp) != 1)
            return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "x_scale, y_scale and y_zero_point must have one element");
        q_range(y->dtype, &lo, &hi);
        sx = rlx_tensor_get_f64(xs, 0);
        sy = rlx_tensor_get_f64(ys, 0);
        zy = (double)rlx_tensor_get_i64(yzp, 0);
    }
    /* spatial dims padded to 3 at the front */
    int64_t in[3], kk[3], out[3], st[3], dl[3], pb[3];
    int off = 3 - g.nsp;
    for (int i = 0; i < 3; i++) {
        int j = i - off;
        in[i] = j >= 0 ? g.in[j] : 1, kk[i] = j >= 0 ? g.k[j] : 1, out[i] = j >= 0 ? g.out[j] : 1;
        st[i] = j >= 0 ? g.stride[j] : 1, dl[i] = j >= 0 ? g.dil[j] : 1, pb[i] = j >= 0 ? g.pad_begin[j] : 0;
    }
    const int32_t zx = xzp ? (int32_t)rlx_tensor_get_i64(xzp, 0) : 0;
    const int64_t in_sp = in[0] * in[1] * in[2], k_sp = kk[0] * kk[1] * kk[2], out_sp = out[0] * out[1] * out[2];
    for (int64_t n = 0; n < g.n; n++)
        for (int64_t m = 0; m < M; m++) {
            int64_t grp = m / cout_g;
            int32_t zw = wzp ? (int32_t)rlx_tensor_get_i64(wzp, nwz == 1 ? 0 : (size_t)m) : 0;
            float mult = requant ? rlx_quant_mult(sx, rlx_tensor_get_f64(ws, nws == 1 ? 0 : (size_t)m), sy) : 1;
            uint32_t b0 = bias ? (uint32_t)((const int32_t *)bias->data)[m] : 0;
            for (int64_t o0 = 0; o0 < out[0]; o0++)
                for (int64_t o1 = 0; o1 < out[1]; o1++)
                    for (int64_t o2 = 0; o2 < out[2]; o2++) {
                        uint32_t acc = b0;
                        for (int64_t ci = 0; ci < cin_g; ci++) {
                            int64_t xc = (n * C + grp * cin_g + ci) * in_sp, wc = (m * cin_g + ci) * k_sp;
                            for (int64_t k0 = 0; k0 < kk[0]; k0++) {
                                int64_t i0 = o0 * st[0] - pb[0] + k0 * dl[0];
                                if (i0 < 0 || i0 >= in[0]) continue;
                                for (int64_t k1 = 0; k1 < kk[1]; k1++) {
                                    int64_t i1 = o1 * st[1] - pb[1] + k1 * dl[1];
                                    if (i1 < 0 || i1 >= in[1]) continue;
                                    for (int64_t k2 = 0; k2 < kk[2]; k2++) {
                                        int64_t i2 = o2 * st[2] - pb[2] + k2 * dl[2];
                                        if (i2 < 0 || i2 >= in[2]) continue;
                                        int32_t xv = (int32_t)rlx_tensor_get_i64(x, (size_t)(xc + (i0 * in[1] + i1) * in[2] + i2)) - zx;
                                        int32_t wv = (int32_t)rlx_tensor_get_i64(w, (size_t)(wc + (k0 * kk[1] + k1) * kk[2] + k2)) - zw;
                                        acc += (uint32_t)(xv * wv);
                                    }
                                }
                            }
                        }
                        size_t yi = (size_t)((n * M + m) * out_sp + (o0 * out[1] + o1) * out[2] + o2);
                        int32_t v = rlx_cpu_wrap32(acc);
                        if (requant) rlx_tensor_set_i64(y, yi, q_saturate((double)((float)v * mult), zy, lo, hi));
                        else ((int32_t *)y->data)[yi] = v;
                    }
        }
    return RLX_OK;
}

/* ------------------------------------------------------------ int8 convolution */

/* conv_run on the int8 GEMM (cpu_qgemm.h, the same bits) when it applies:
 * 8-bit x and W, at most 2 spatial dims, x's zero point per tensor, W's
 * per tensor or per output channel, for QLinearConv x_scale, y_scale,
 * y_zero_point per tensor and w_scale per tensor or per channel, y 8-bit
 * (ConvInteger: int32). Per image and group, the transposed product
 *   Y_g^T [P, cout_g] = cols_g^T [P, K] x W_g^T [K, cout_g]
 * (K = cin_g * kernel size, P = output pixels): cols (im2col of x, [K, P],
 * the padding taps holding x's zero point so they contribute 0; a 1x1
 * convolution of stride 1 without padding reads x itself) is A given
 * transposed with x's zero point, W_g (stored [cout_g, K]) B given
 * transposed with W's zero points per column, the int32 bias added to the
 * sums and the output stored transposed, which is NCHW. Groups with one
 * input channel each (depthwise) run a direct loop instead (conv_dw).
 * *done: whether it ran. */
typedef struct qconv_job {
    const uint8_t *x; /* one image's input channels of one group, [cin_g, H, W] */
    uint8_t *cols;    /* [K, P] */
    uint8_t pad;      /* x's zero point as a byte */
    int64_t ih, iw, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw;
} qconv_job;

/* Rows [r0, r1) of cols: row r = (ci, ky, kx). */
static void im2col_body(void *ctx, size_t r0, size_t r1) {
    const qconv_job *j = ctx;
    size_t P = (size_t)(j->oh * j->ow);
    for (size_t r = r0; r < r1; r++) {
        int64_t kx = (int64_t)r % j->kw, ky = (int64_t)r / j->kw % j->kh, ci = (int64_t)r / (j->kw * j->kh);
        const uint8_t *xc = j->x + (size_t)(ci * j->ih * j->iw);
        uint8_t *d = j->cols + r * P;
        /* the output columns whose input column lies inside: [ox0, ox1) */
        int64_t off = kx * j->dw - j->pw, ox0 = 0, ox1 = j->ow;
        while (ox0 < j->ow && ox0 * j->sw + off < 0) ox0++;
        while (ox1 > ox0 && (ox1 - 1) * j->sw + off >= j->iw) ox1--;
        for (int64_t oy = 0; oy < j->oh; oy++, d += j->ow) {
            int64_t iy = oy * j->sh + ky * j->dh - j->ph;
            if (iy < 0 || iy >= j->ih) {
                memset(d, j->pad, (size_t)j->ow);
                continue;
            }
            const uint8_t *src = xc + (size_t)(iy * j->iw + off);
            if (ox0 > 0) memset(d, j->pad, (size_t)ox0);
            if (j->sw == 1) memcpy(d + ox0, src + ox0, (size_t)(ox1 - ox0));
            else
                for (int64_t ox = ox0; ox < ox1; ox++) d[ox] = src[ox * j->sw];
            if (ox1 < j->ow) memset(d + ox1, j->pad, (size_t)(j->ow - ox1));
        }
    }
}

typedef struct qdw_job {
    const rlx_tensor *x, *w;
    rlx_tensor *y;
    int64_t C, M, cout_g, ih, iw, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw;
    int32_t zx;
    const int32_t *zw, *bias; /* per output channel */
    const float *mult;        /* per output channel; NULL: int32 output */
    double zy, lo, hi;
    bool x_unsigned, w_unsigned;
    bool avx2; /* the AVX2 loops (not under the portable int8 kernel, so tests cover both) */
} qdw_job;

#if QUANT_HAVE_X86
/* dw_body's stride-1 tap in AVX2: acc[ox] += wt * (x[ox] - zx) for ox in
 * [0, n) (x as stored: uint8 or int8, zx in the same terms), 8 at a time;
 * returns how many it did (the 32-bit products and sums wrap as the
 * scalar loop's uint32 arithmetic). */
__attribute__((target("avx2"))) static int64_t dw_tap_avx2(uint32_t *acc, const uint8_t *x, int64_t n, int32_t wt,
                                                           int32_t zx, bool x_unsigned) {
    __m256i vw = _mm256_set1_epi32(wt), vz = _mm256_set1_epi32(zx);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i b = _mm_loadl_epi64((const __m128i *)(x + i));
        __m256i v = x_unsigned ? _mm256_cvtepu8_epi32(b) : _mm256_cvtepi8_epi32(b);
        __m256i a = _mm256_loadu_si256((const __m256i *)(acc + i));
        a = _mm256_add_epi32(a, _mm256_mullo_epi32(vw, _mm256_sub_epi32(v, vz)));
        _mm256_storeu_si256((__m256i *)(acc + i), a);
    }
    return i;
}

/* The same for stride 2: x[2 * ox]; 16 bytes read per 8 outputs, so only
 * while the tap after them is inside too (n - 1 more outputs at least). */
__attribute__((target("avx2"))) static int64_t dw_tap2_avx2(uint32_t *acc, const uint8_t *x, int64_t n, int32_t wt,
                                                            int32_t zx, bool x_unsigned) {
    __m256i vw = _mm256_set1_epi32(wt), vz = _mm256_set1_epi32(zx);
    const __m128i even = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1);
    int64_t i = 0;
    for (; i + 8 < n; i += 8) {
        __m128i b = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(x + 2 * i)), even);
        __m256i v = x_unsigned ? _mm256_cvtepu8_epi32(b) : _mm256_cvtepi8_epi32(b);
        __m256i a = _mm256_loadu_si256((const __m256i *)(acc + i));
        a = _mm256_add_epi32(a, _mm256_mullo_epi32(vw, _mm256_sub_epi32(v, vz)));
        _mm256_storeu_si256((__m256i *)(acc + i), a);
    }
    return i;
}

/* The requantization of n sums in AVX2, 8 at a time, the same bits as the
 * scalar formula (rlx_cpu_requant_store): the f32 product rounded half to
 * even (vroundps), NaN -> 0, zero point added (in f32: exact below 2^24,
 * larger values saturate either way), saturated; returns how many it did. */
__attribute__((target("avx2"))) static int64_t dw_requant_avx2(const uint32_t *acc, int64_t n, float mult, double zy,
                                                               double lo, double hi, bool y_unsigned, void *y) {
    __m256 vm = _mm256_set1_ps(mult), vz = _mm256_set1_ps((float)zy), vlo = _mm256_set1_ps((float)lo),
           vhi = _mm256_set1_ps((float)hi);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 d = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(acc + i))), vm);
        d = _mm256_round_ps(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        d = _mm256_and_ps(d, _mm256_cmp_ps(d, d, _CMP_ORD_Q)); /* NaN -> 0 */
        d = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(d, vz), vlo), vhi);
        int32_t t[8];
        _mm256_storeu_si256((__m256i *)t, _mm256_cvtps_epi32(d)); /* integral and in range: exact */
        for (int k = 0; k < 8; k++) {
            if (y_unsigned) ((uint8_t *)y)[i + k] = (uint8_t)t[k];
            else ((int8_t *)y)[i + k] = (int8_t)t[k];
        }
    }
    return i;
}
#endif

/* Output planes [p0, p1) (image * M + channel) of a convolution whose groups
 * have one input channel each: per output row, an int32 row of sums
 * (wrapping, as uint32) gathers the taps inside the input. */
static void dw_body(void *ctx, size_t p0, size_t p1) {
    const qdw_job *j = ctx;
    uint32_t acc[1024]; /* the caller checked ow <= 1024 */
    int32_t wv[64];     /* and kernel size <= 64 */
    for (size_t p = p0; p < p1; p++) {
        int64_t n = (int64_t)p / j->M, m = (int64_t)p % j->M, c = m / j->cout_g;
        const uint8_t *xb = (const uint8_t *)j->x->data + (size_t)((n * j->C + c) * j->ih * j->iw);
        const uint8_t *wb = (const uint8_t *)j->w->data + (size_t)(m * j->kh * j->kw);
        for (int64_t t = 0; t < j->kh * j->kw; t++)
            wv[t] = (j->w_unsigned ? (int32_t)wb[t] : (int32_t)(int8_t)wb[t]) - j->zw[m];
        uint8_t flip = j->x_unsigned ? 0 : 0x80u;
        int32_t zx = j->zx + (j->x_unsigned ? 0 : 128); /* x as unsigned bytes */
        size_t yo = (size_t)p * (size_t)(j->oh * j->ow);
        for (int64_t oy = 0; oy < j->oh; oy++) {
            for (int64_t ox = 0; ox < j->ow; ox++) acc[ox] = (uint32_t)j->bias[m];
            for (int64_t ky = 0; ky < j->kh; ky++) {
                int64_t iy = oy * j->sh + ky * j->dh - j->ph;
                if (iy < 0 || iy >= j->ih) continue;
                const uint8_t *xr = xb + (size_t)(iy * j->iw);
                for (int64_t kx = 0; kx < j->kw; kx++) {
                    int64_t off = kx * j->dw - j->pw, ox0 = 0, ox1 = j->ow;
                    while (ox0 < j->ow && ox0 * j->sw + off < 0) ox0++;
                    while (ox1 > ox0 && (ox1 - 1) * j->sw + off >= j->iw) ox1--;
                    int32_t wt = wv[ky * j->kw + kx];
                    const uint8_t *xs = xr + off;
                    if (j->sw == 1) {
                        int64_t ox = ox0;
#if QUANT_HAVE_X86
                        if (j->avx2)
                            ox += dw_tap_avx2(acc + ox0, xs + ox0, ox1 - ox0, wt, j->zx, j->x_unsigned);
#endif
                        for (; ox < ox1; ox++) acc[ox] += (uint32_t)(wt * ((int32_t)(uint8_t)(xs[ox] ^ flip) - zx));
                    }
                    else {
                        int64_t ox = ox0;
#if QUANT_HAVE_X86
                        if (j->avx2 && j->sw == 2)
                            ox += dw_tap2_avx2(acc + ox0, xs + 2 * ox0, ox1 - ox0, wt, j->zx, j->x_unsigned);
#endif
                        for (; ox < ox1; ox++)
                            acc[ox] += (uint32_t)(wt * ((int32_t)(uint8_t)(xs[ox * j->sw] ^ flip) - zx));
                    }
                }
            }
            size_t yi = yo + (size_t)(oy * j->ow);
            if (!j->mult) {
                int32_t *yr = (int32_t *)j->y->data + yi;
                for (int64_t ox = 0; ox < j->ow; ox++) yr[ox] = rlx_cpu_wrap32(acc[ox]);
                continue;
            }
            int64_t ox0 = 0;
#if QUANT_HAVE_X86
            if (j->avx2)
                ox0 = dw_requant_avx2(acc, j->ow, j->mult[m], j->zy, j->lo, j->hi, j->y->dtype == RLX_DTYPE_U8,
                                      (uint8_t *)j->y->data + yi);
#endif
            for (int64_t ox = ox0; ox < j->ow; ox++)
                rlx_cpu_requant_store(rlx_cpu_wrap32(acc[ox]), j->mult[m], j->zy, j->lo, j->hi,
                                      j->y->dtype == RLX_DTYPE_U8, j->y->data, yi + (size_t)ox);
        }
    }
}

static rlx_status conv_fast(rlx_cpu_kctx *k, const rlx_tensor *x, const rlx_tensor *w, const rlx_tensor *xzp,
                            const rlx_tensor *wzp, const rlx_tensor *xs, const rlx_tensor *ws, const rlx_tensor *ys,
                            const rlx_tensor *yzp, const rlx_tensor *bias, rlx_tensor *y, bool *done) {
    *done = false;
    if (k->reference || !is_q8(x) || !is_q8(w) || x->rank < 3 || x->rank > 4 || w->rank != x->rank) return RLX_OK;
    rlx_conv_geom g;
    RLX_TRY(rlx_conv_geom_resolve(k->n, RLX_GEOM_CONV, x->dims, x->rank, w->dims, w->rank, &g));
    const int64_t M = g.c_out, C = g.c_in, G = g.group;
    if (M < 1 || C < 1 || G < 1 || M % G || C % G || g.n < 1) return RLX_OK;
    const int64_t cin_g = C / G, cout_g = M / G;
    if ((xzp && !per_tensor(xzp)) || (wzp && !per_col(wzp, M)) || (bias && rlx_tensor_numel(bias) != (size_t)M))
        return RLX_OK;
    bool requant = ys != NULL;
    if (requant ? !is_q8(y) || !per_tensor(xs) || !per_col(ws, M) || !per_tensor(ys) || !per_tensor(yzp)
                : y->dtype != RLX_DTYPE_I32)
        return RLX_OK;
    int64_t ih = 1, iw = g.in[g.nsp - 1], kh = 1, kw = g.k[g.nsp - 1], oh = 1, ow = g.out[g.nsp - 1];
    int64_t sh = 1, sw = g.stride[g.nsp - 1], dh = 1, dw = g.dil[g.nsp - 1], ph = 0, pw = g.pad_begin[g.nsp - 1];
    if (g.nsp == 2)
        ih = g.in[0], kh = g.k[0], oh = g.out[0], sh = g.stride[0], dh = g.dil[0], ph = g.pad_begin[0];
    const int64_t P = oh * ow, K = cin_g * kh * kw;
    if (P < 1 || K < 1 || rlx_tensor_numel(y) != (size_t)(g.n * M * P)) return RLX_OK;
    bool dw_path = cin_g == 1;
    if (dw_path && (kh * kw > 64 || ow > 1024)) return RLX_OK;
    /* per output channel: W's zero point, the multiplier, the bias */
    /* in the calling thread's INDEX buffer, else one block (freed as zw_own) */
    int32_t *zw = rlx_scratch_get(RLX_SCRATCH_INDEX, (size_t)M * 12), *zw_own = NULL;
    if (!zw && !(zw = zw_own = malloc((size_t)M * 12)))
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (%lld channels' constants)", (long long)M);
    int32_t *b32 = zw + M;
    float *mult = (float *)(b32 + M);
    double sx = requant ? rlx_tensor_get_f64(xs, 0) : 1, sy = requant ? rlx_tensor_get_f64(ys, 0) : 1;
    size_t nwz = wzp ? rlx_tensor_numel(wzp) : 1, nws = requant ? rlx_tensor_numel(ws) : 1;
    for (int64_t m = 0; m < M; m++) {
        zw[m] = wzp ? (int32_t)rlx_tensor_get_i64(wzp, nwz == 1 ? 0 : (size_t)m) : 0;
        b32[m] = bias ? ((const int32_t *)bias->data)[m] : 0;
        mult[m] = requant ? rlx_quant_mult(sx, rlx_tensor_get_f64(ws, nws == 1 ? 0 : (size_t)m), sy) : 1;
    }
    int32_t zx = xzp ? (int32_t)rlx_tensor_get_i64(xzp, 0) : 0;
    double lo = 0, hi = 0, zy = requant ? (double)rlx_tensor_get_i64(yzp, 0) : 0;
    if (requant) q_range(y->dtype, &lo, &hi);
    rlx_status st = RLX_OK;
    size_t xsz = rlx_dtype_size(x->dtype), ysz = rlx_dtype_size(y->dtype);
    rlx_cpu_qconv_args qa = {
        .x_unsigned = x->dtype == RLX_DTYPE_U8, .zx = zx, .groups = (size_t)G, .cin_g = (size_t)cin_g,
        .cout_g = (size_t)cout_g, .ih = ih, .iw = iw, .kh = kh, .kw = kw, .oh = oh, .ow = ow, .sh = sh, .sw = sw,
        .dh = dh, .dw = dw, .ph = ph, .pw = pw, .w = w->data, .w_unsigned = w->dtype == RLX_DTYPE_U8, .zw = zw,
        .bias = b32, .mult = requant ? mult : NULL, .zy = zy, .y_unsigned = y->dtype == RLX_DTYPE_U8,
    };
    bool vnni_dw = dw_path && rlx_cpu_qconv_available() && rlx_cpu_qdw_fits(&qa);
    if (vnni_dw || (!dw_path && rlx_cpu_qconv_available() && rlx_cpu_qconv_fits((size_t)K))) {
        /* the AVX-512 depthwise or the VNNI convolution (cpu_qconv.h), the
         * latter with the weights packed at compile time or, when not
         * (tests, run-time weights), now */
        const rlx_cpu_qconv_pack *wp = k->pack ? k->pack->q8conv : NULL;
        rlx_cpu_qconv_pack own = { 0 };
        if (!vnni_dw && (!wp || wp->groups != (size_t)G || wp->cout_g != (size_t)cout_g || wp->k != (size_t)K ||
                         wp->w_unsigned != (w->dtype == RLX_DTYPE_U8) ||
                         wp->amx != rlx_cpu_qgemm_amx_for((size_t)K))) {
            st = rlx_cpu_qconv_pack_w(w->dtype == RLX_DTYPE_U8, (size_t)G, (size_t)cout_g, (size_t)K, w->data, &own);
            wp = &own;
        }
        qa.wp = wp;
        for (int64_t n = 0; n < g.n && !st; n++) {
            qa.x = (const uint8_t *)x->data + (size_t)(n * C * ih * iw) * xsz;
            qa.y = (uint8_t *)y->data + (size_t)(n * M * P) * ysz;
            st = vnni_dw ? rlx_cpu_qdw(&qa) : rlx_cpu_qconv(&qa);
        }
        rlx_cpu_qconv_pack_free(&own);
        free(zw_own);
        return fast_finish(k, st, done);
    }
    if (dw_path) {
        qdw_job j = { .x = x, .w = w, .y = y, .C = C, .M = M, .cout_g = cout_g, .ih = ih, .iw = iw, .kh = kh,
                      .kw = kw, .oh = oh, .ow = ow, .sh = sh, .sw = sw, .dh = dh, .dw = dw, .ph = ph, .pw = pw,
                      .zx = zx, .zw = zw, .bias = b32, .mult = requant ? mult : NULL, .zy = zy, .lo = lo, .hi = hi,
                      .x_unsigned = x->dtype == RLX_DTYPE_U8, .w_unsigned = w->dtype == RLX_DTYPE_U8 };
#if QUANT_HAVE_X86
        j.avx2 = rlx_cpu_qgemm_kernel_get() != RLX_CPU_QGEMM_PORTABLE && __builtin_cpu_supports("avx2");
#endif
        rlx_parallel_for((size_t)(g.n * M), ceil_div_sz(1u << 15, (size_t)(P * kh * kw)), dw_body, &j);
        free(zw_own);
        *done = true;
        return RLX_OK;
    }
    bool direct = kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0 && oh == ih && ow == iw;
    /* the column matrix in the calling thread's scratch when it fits (the
     * GEMM takes the SGEMM slot for its own buffers) */
    uint8_t *cols = NULL, *cols_owned = NULL;
    if (!direct) {
        cols = rlx_scratch_get(RLX_SCRATCH_CALL, (size_t)(K * P));
        if (!cols) cols = cols_owned = malloc((size_t)(K * P));
    }
    if (!direct && !cols) {
        free(zw_own);
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory for the int8 im2col (%lld x %lld)",
                            (long long)K, (long long)P);
    }
    const rlx_cpu_qgemm_pack *bp = G == 1 && k->pack ? k->pack->q8 : NULL;
    for (int64_t n = 0; n < g.n && !st; n++)
        for (int64_t gi = 0; gi < G && !st; gi++) {
            const uint8_t *xg = (const uint8_t *)x->data + (size_t)((n * C + gi * cin_g) * ih * iw) * xsz;
            if (!direct) {
                qconv_job j = { .x = xg, .cols = cols, .pad = (uint8_t)zx, .ih = ih, .iw = iw, .kh = kh, .kw = kw,
                                .oh = oh, .ow = ow, .sh = sh, .sw = sw, .dh = dh, .dw = dw, .ph = ph, .pw = pw };
                rlx_parallel_for((size_t)K, ceil_div_sz(1u << 14, (size_t)P), im2col_body, &j);
            }
            size_t yo = (size_t)((n * M + gi * cout_g) * P) * ysz;
            rlx_cpu_qgemm_args a = {
                .m = (size_t)P, .n = (size_t)cout_g, .k = (size_t)K,
                .a = direct ? xg : cols, .lda = (size_t)P, .a_unsigned = x->dtype == RLX_DTYPE_U8, .a_trans = true,
                .za = zx,
                .b = (const uint8_t *)w->data + (size_t)(gi * cout_g * K), .ldb = (size_t)K,
                .b_unsigned = w->dtype == RLX_DTYPE_U8, .b_trans = true, .bp = bp,
                .zb = zw + gi * cout_g, .zb_per_col = true,
                .c = requant ? NULL : (int32_t *)((uint8_t *)y->data + yo), .y = requant ? (uint8_t *)y->data + yo : NULL,
                .y_unsigned = y->dtype == RLX_DTYPE_U8, .mult_per_col = true, .mult = mult + gi * cout_g, .y_zp = zy,
                .ldc = (size_t)P, .c_trans = true, .bias = b32 + gi * cout_g,
            };
            st = rlx_cpu_qgemm(&a);
        }
    free(cols_owned), free(zw_own);
    return fast_finish(k, st, done);
}

static rlx_status k_conv_integer(rlx_cpu_kctx *k) {
    const rlx_tensor *xzp = k->n->n_in > 2 ? k->in[2] : NULL, *wzp = k->n->n_in > 3 ? k->in[3] : NULL;
    bool done;
    RLX_TRY(conv_fast(k, k->in[0], k->in[1], xzp, wzp, NULL, NULL, NULL, NULL, NULL, k->out[0], &done));
    return done ? RLX_OK : conv_run(k, k->in[0], k->in[1], xzp, wzp, NULL, NULL, NULL, NULL, NULL, k->out[0]);
}

static rlx_status qlinear_conv_into(rlx_cpu_kctx *k, rlx_tensor *y) {
    const rlx_tensor *const *in = k->in;
    const rlx_tensor *bias = k->n->n_in > 8 ? in[8] : NULL;
    bool done;
    RLX_TRY(conv_fast(k, in[0], in[3], in[2], in[5], in[1], in[4], in[6], in[7], bias, y, &done));
    return done ? RLX_OK : conv_run(k, in[0], in[3], in[2], in[5], in[1], in[4], in[6], in[7], bias, y);
}

static rlx_status k_qlinear_conv(rlx_cpu_kctx *k) {
    RLX_TRY(check_run_scales(k));
    return k->n->n_in > RLX_QEPI_FIRST ? with_chain(k, qlinear_conv_into) : qlinear_conv_into(k, k->out[0]);
}

const rlx_cpu_kernel_fn rlx_cpu_kernels_quant[RLX_OP_COUNT] = {
    [RLX_OP_QuantizeLinear] = k_quantize,
    [RLX_OP_DequantizeLinear] = k_dequantize,
    [RLX_OP_DynamicQuantizeLinear] = k_dynamic_quantize,
    [RLX_OP_MatMulInteger] = k_matmul_integer,
    [RLX_OP_QLinearMatMul] = k_qlinear_matmul,
    [RLX_OP_ConvInteger] = k_conv_integer,
    [RLX_OP_QLinearConv] = k_qlinear_conv,
};
