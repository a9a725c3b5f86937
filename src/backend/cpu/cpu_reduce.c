/* CPU reference kernels of the reduce family (see src/ir/ops/ops_reduce.c).
 *
 * Numerics: float inputs (f32, f64, f16, bf16) are reduced in double and
 * rounded once at the end; LogSumExp subtracts the maximum first. Integer
 * Sum, Mean, Prod, Max, Min, L1 and SumSquare accumulate in 64-bit integers
 * (wrapping like the output type would); integer L2, LogSum and LogSumExp
 * go through double and are truncated toward zero (saturating to the
 * output type, NaN -> 0).
 * Empty reductions give the identity of the reduction (ONNX Reduce*-18/20):
 * 0 for Sum, L1, L2, SumSquare; 1 for Prod; -inf (or the type's minimum) for
 * Max; +inf (or the type's maximum) for Min; -inf for LogSum and LogSumExp;
 * 0 for Mean (ONNX leaves it undefined; onnxruntime gives 0, numpy NaN).
 *
 * The normalisations and Einsum compute in double as well. Fast paths sit
 * beside the reference (k->reference false): f32 Reduce* over one contiguous
 * block of axes (double accumulators; with AVX2 in vector lanes, see
 * reduce_fast_f32), f32 Einsum (identical to the reference: same order,
 * double accumulators), and the f32 row fast paths of cpu_rows.c for
 * ArgMax / ArgMin over the last axis and LayerNormalization. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_rows.h"
#include "backend/cpu/cpu_vmath.h"
#include "base/parallel.h"
#include "base/mem.h"
#include "base/scratch.h"
#include "ir/ops/ops.h"
#include "ir/ops/reduce_geom.h"

/* ------------------------------------------------------------ helpers */

static inline double ld(const rlx_tensor *t, size_t i) {
    if (t->dtype == RLX_DTYPE_F32) return ((const float *)t->data)[i];
    return rlx_tensor_get_f64(t, i);
}

static void int_range(rlx_dtype dt, int64_t *lo, int64_t *hi);

/* Stores a double into any numeric tensor; integer outputs are truncated
 * toward zero with saturation to the output type (NaN -> 0), never
 * undefined behaviour. */
static void st_f64(rlx_tensor *t, size_t i, double v) {
    if (t->dtype == RLX_DTYPE_F32) {
        ((float *)t->data)[i] = (float)v;
        return;
    }
    if (!rlx_dtype_is_int(t->dtype)) {
        rlx_tensor_set_f64(t, i, v);
        return;
    }
    if (v != v) v = 0;
    if (t->dtype == RLX_DTYPE_U64) {
        ((uint64_t *)t->data)[i] = v <= 0 ? 0 : v >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)v;
        return;
    }
    int64_t r = v >= 9223372036854775807.0 ? INT64_MAX : v <= -9223372036854775808.0 ? INT64_MIN : (int64_t)v;
    /* the type's range, not int64's: an int8 L2 of 179.6 is 127 (it wrapped to -77) */
    int64_t lo, hi;
    int_range(t->dtype, &lo, &hi);
    rlx_tensor_set_i64(t, i, r < lo ? lo : r > hi ? hi : r);
}

/* Checks that an output has the element count the kernel computed. */
static rlx_status check_out(const rlx_cpu_kctx *k, int i, size_t want) {
    if (i >= k->n->n_out || !k->out[i]) return RLX_OK;
    if (rlx_tensor_numel(k->out[i]) != want)
        return rlx_cpu_fail(k, RLX_ERR_INTERNAL, "output %d has %zu elements, the kernel computes %zu", i,
                            rlx_tensor_numel(k->out[i]), want);
    return RLX_OK;
}

/* Offset into a tensor that broadcasts unidirectionally to shape
 * (rank, dims), of the element at row-major flat index `flat`. */
static size_t bcast_off(size_t flat, const int64_t *dims, int rank, const int64_t *bstride) {
    size_t off = 0;
    for (int d = rank - 1; d >= 0; d--) {
        size_t ext = (size_t)dims[d];
        size_t c = ext ? flat % ext : 0;
        flat = ext ? flat / ext : 0;
        off += c * (size_t)bstride[d];
    }
    return off;
}

/* ------------------------------------------------------------ reduction plan */

/* Maps every input element (in row-major order) to its output element: the
 * output offset advances by ostep[d] along input dim d (0 on reduced dims). */
typedef struct red_plan {
    int rank;
    int64_t dims[RLX_MAX_RANK];
    int64_t ostep[RLX_MAX_RANK];
    size_t n_in, n_out;
    size_t count; /* input elements per output element */
} red_plan;

static void red_plan_init(red_plan *p, const rlx_tensor *x, const rlx_reduce_spec *r) {
    memset(p, 0, sizeof *p);
    p->rank = x->rank;
    memcpy(p->dims, x->dims, sizeof p->dims);
    int64_t kd[RLX_MAX_RANK], ks[RLX_MAX_RANK];
    p->n_in = rlx_tensor_numel(x);
    p->n_out = 1;
    p->count = 1;
    for (int d = 0; d < x->rank; d++) {
        kd[d] = r->axis[d] ? 1 : x->dims[d];
        if (r->axis[d]) p->count *= (size_t)x->dims[d];
        else p->n_out *= (size_t)x->dims[d];
    }
    rlx_strides(kd, x->rank, ks);
    for (int d = 0; d < x->rank; d++) p->ostep[d] = r->axis[d] ? 0 : ks[d];
}

/* Advances the row-major counter ctr over p->dims by one and the output
 * offset *o with it. */
static inline void red_next(const red_plan *p, int64_t *ctr, size_t *o) {
    for (int d = p->rank - 1; d >= 0; d--) {
        ctr[d]++;
        *o += (size_t)p->ostep[d];
        if (ctr[d] < p->dims[d]) return;
        *o -= (size_t)(p->ostep[d] * p->dims[d]);
        ctr[d] = 0;
    }
}

#define RED_FOR(p, i, o, ...)                                               \
    do {                                                                    \
        int64_t ctr_[RLX_MAX_RANK] = { 0 };                                 \
        size_t o = 0;                                                       \
        for (size_t i = 0; i < (p)->n_in; i++, red_next((p), ctr_, &o)) {   \
            __VA_ARGS__;                                                    \
        }                                                                   \
    } while (0)

/* ------------------------------------------------------------ Reduce* */

typedef enum red_op { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_LOGSUM, R_LSE, R_SUMSQ } red_op;

static rlx_status kernel_axes(rlx_cpu_kctx *k, rlx_reduce_spec *r) {
    int64_t axes[RLX_REDUCE_MAX_AXES];
    size_t na = 0;
    if (rlx_reduce_axes_are_input(k->n)) {
        const rlx_tensor *a = k->n->n_in > 1 ? k->in[1] : NULL;
        if (a) {
            if (!rlx_dtype_is_int(a->dtype))
                return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "axes input has dtype %s, expected int64",
                                    rlx_dtype_name(a->dtype));
            na = rlx_tensor_numel(a);
            if (na > RLX_ARRAY_LEN(axes))
                return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "axes input has %zu values", na);
            for (size_t i = 0; i < na; i++) axes[i] = rlx_tensor_get_i64(a, i);
        }
    } else {
        const int64_t *at = rlx_param_ints(k->n, RLX_A_axes, &na);
        if (na > RLX_ARRAY_LEN(axes))
            return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "attribute 'axes' has %zu values", na);
        if (na) memcpy(axes, at, na * sizeof *axes);
    }
    return rlx_reduce_resolve(k->n, k->in[0]->rank, axes, na, RLX_ERR_INVALID_ARGUMENT, r);
}

static rlx_status reduce_float(rlx_cpu_kctx *k, red_op op, const red_plan *p) {
    const rlx_tensor *x = k->in[0];
    rlx_tensor *y = k->out[0];
    if (p->n_out == 0) return RLX_OK;
    double *acc = malloc(p->n_out * sizeof *acc);
    double *mx = op == R_LSE ? malloc(p->n_out * sizeof *mx) : NULL;
    if (!acc || (op == R_LSE && !mx)) {
        free(acc);
        free(mx);
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory for %zu accumulators", p->n_out);
    }
    double init = op == R_PROD ? 1.0 : op == R_MAX ? -INFINITY : op == R_MIN ? INFINITY : 0.0;
    for (size_t o = 0; o < p->n_out; o++) acc[o] = init;
    if (op == R_LSE) {
        for (size_t o = 0; o < p->n_out; o++) mx[o] = -INFINITY;
        RED_FOR(p, i, o, {
            double v = ld(x, i);
            if (v > mx[o] || (v != v && mx[o] == mx[o])) mx[o] = v;
        });
    }
    switch (op) {
    case R_SUM: case R_MEAN: case R_LOGSUM: RED_FOR(p, i, o, acc[o] += ld(x, i)); break;
    case R_PROD: RED_FOR(p, i, o, acc[o] *= ld(x, i)); break;
    case R_L1: RED_FOR(p, i, o, acc[o] += fabs(ld(x, i))); break;
    case R_L2: case R_SUMSQ: RED_FOR(p, i, o, { double v = ld(x, i); acc[o] += v * v; }); break;
    /* NaN propagates; the first NaN met stays */
    case R_MAX:
        RED_FOR(p, i, o, { double v = ld(x, i); if (v > acc[o] || (v != v && acc[o] == acc[o])) acc[o] = v; });
        break;
    case R_MIN:
        RED_FOR(p, i, o, { double v = ld(x, i); if (v < acc[o] || (v != v && acc[o] == acc[o])) acc[o] = v; });
        break;
    case R_LSE: RED_FOR(p, i, o, { if (isfinite(mx[o])) acc[o] += exp(ld(x, i) - mx[o]); }); break;
    }
    for (size_t o = 0; o < p->n_out; o++) {
        double v = acc[o];
        switch (op) {
        case R_MEAN: v = p->count ? v / (double)p->count : 0.0; break; /* empty: 0, as onnxruntime */
        case R_L2: v = sqrt(v); break;
        case R_LOGSUM: v = log(v); break;
        case R_LSE: v = isfinite(mx[o]) ? mx[o] + log(v) : mx[o]; break;
        default: break;
        }
        st_f64(y, o, v);
    }
    free(acc);
    free(mx);
    return RLX_OK;
}

/* The smallest and largest value of an integer (or bool) dtype, as the
 * int64 bit pattern that rlx_tensor_set_i64 stores. */
static void int_range(rlx_dtype dt, int64_t *lo, int64_t *hi) {
    switch (dt) {
    case RLX_DTYPE_BOOL: *lo = 0, *hi = 1; break;
    case RLX_DTYPE_U8: *lo = 0, *hi = UINT8_MAX; break;
    case RLX_DTYPE_I8: *lo = INT8_MIN, *hi = INT8_MAX; break;
    case RLX_DTYPE_U16: *lo = 0, *hi = UINT16_MAX; break;
    case RLX_DTYPE_I16: *lo = INT16_MIN, *hi = INT16_MAX; break;
    case RLX_DTYPE_U32: *lo = 0, *hi = UINT32_MAX; break;
    case RLX_DTYPE_I32: *lo = INT32_MIN, *hi = INT32_MAX; break;
    case RLX_DTYPE_U64: *lo = 0, *hi = -1; break; /* UINT64_MAX */
    default: *lo = INT64_MIN, *hi = INT64_MAX; break;
    }
}

static rlx_status reduce_int(rlx_cpu_kctx *k, red_op op, const red_plan *p) {
    const rlx_tensor *x = k->in[0];
    rlx_tensor *y = k->out[0];
    if (p->n_out == 0) return RLX_OK;
    uint64_t *acc = malloc(p->n_out * sizeof *acc);
    if (!acc) return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory for %zu accumulators", p->n_out);
    bool u64 = x->dtype == RLX_DTYPE_U64;
    int64_t lo, hi;
    int_range(x->dtype, &lo, &hi);
    uint64_t init = op == R_PROD ? 1 : op == R_MAX ? (uint64_t)lo : op == R_MIN ? (uint64_t)hi : 0;
    for (size_t o = 0; o < p->n_out; o++) acc[o] = init;
    switch (op) {
    case R_SUM: case R_MEAN: RED_FOR(p, i, o, acc[o] += (uint64_t)rlx_tensor_get_i64(x, i)); break;
    case R_PROD: RED_FOR(p, i, o, acc[o] *= (uint64_t)rlx_tensor_get_i64(x, i)); break;
    case R_L1:
        RED_FOR(p, i, o, {
            int64_t v = rlx_tensor_get_i64(x, i);
            acc[o] += (v < 0 && !u64) ? 0 - (uint64_t)v : (uint64_t)v;
        });
        break;
    case R_SUMSQ: RED_FOR(p, i, o, { uint64_t v = (uint64_t)rlx_tensor_get_i64(x, i); acc[o] += v * v; }); break;
    case R_MAX:
        RED_FOR(p, i, o, {
            uint64_t v = (uint64_t)rlx_tensor_get_i64(x, i);
            if (u64 ? v > acc[o] : (int64_t)v > (int64_t)acc[o]) acc[o] = v;
        });
        break;
    case R_MIN:
        RED_FOR(p, i, o, {
            uint64_t v = (uint64_t)rlx_tensor_get_i64(x, i);
            if (u64 ? v < acc[o] : (int64_t)v < (int64_t)acc[o]) acc[o] = v;
        });
        break;
    default: break;
    }
    for (size_t o = 0; o < p->n_out; o++) {
        uint64_t v = acc[o];
        if (op == R_MEAN) {
            if (p->count == 0) v = 0;
            else if (u64) v = v / p->count;
            else v = (uint64_t)((int64_t)v / (int64_t)p->count);
        }
        rlx_tensor_set_i64(y, o, (int64_t)v);
    }
    free(acc);
    return RLX_OK;
}

/* ------------------------------------------------------------ vector reductions (f32) */

#if RLX_HAVE_AVX2_BUILD
/* Elements per partial result of a contiguous row: fixed, so the order of
 * the sums does not depend on the thread count. */
#define RED_BLOCK 32768

typedef struct red_job {
    red_op op;
    const float *x;
    size_t red, post, nblk;
    double *part; /* contiguous rows: [pre * nblk] partial results */
    float *y;     /* strided form: [pre * post] */
    size_t pre;
} red_job;

/* A sum (L1: of |x|, SUMSQ / L2: of x^2) of n floats in 16 double lanes,
 * the lanes added in a fixed order, then the tail. */
RLX_AVX2 static double vsum_block(red_op op, const float *x, size_t n) {
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
    __m256 nz = _mm256_set1_ps(-0.0f);
    bool sq = op == R_SUMSQ || op == R_L2, ab = op == R_L1;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
        if (ab) v0 = _mm256_andnot_ps(nz, v0), v1 = _mm256_andnot_ps(nz, v1);
        __m256d d0 = _mm256_cvtps_pd(_mm256_castps256_ps128(v0)), d1 = _mm256_cvtps_pd(_mm256_extractf128_ps(v0, 1));
        __m256d d2 = _mm256_cvtps_pd(_mm256_castps256_ps128(v1)), d3 = _mm256_cvtps_pd(_mm256_extractf128_ps(v1, 1));
        if (sq) {
            a0 = _mm256_fmadd_pd(d0, d0, a0), a1 = _mm256_fmadd_pd(d1, d1, a1);
            a2 = _mm256_fmadd_pd(d2, d2, a2), a3 = _mm256_fmadd_pd(d3, d3, a3);
        } else {
            a0 = _mm256_add_pd(a0, d0), a1 = _mm256_add_pd(a1, d1), a2 = _mm256_add_pd(a2, d2), a3 = _mm256_add_pd(a3, d3);
        }
    }
    __m256d t = _mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3));
    __m128d h = _mm_add_pd(_mm256_castpd256_pd128(t), _mm256_extractf128_pd(t, 1));
    double s = _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
    for (; i < n; i++) s += sq ? (double)x[i] * (double)x[i] : ab ? fabs((double)x[i]) : (double)x[i];
    return s;
}

/* The maximum (minimum) of n floats: the first NaN if there is one, and
 * of equal values the first (so -0 and +0 come out as the reference's). */
RLX_AVX2 static double vext_block(red_op op, const float *x, size_t n) {
    __m256 m = _mm256_set1_ps(op == R_MAX ? -INFINITY : INFINITY), nan = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        m = op == R_MAX ? _mm256_max_ps(v, m) : _mm256_min_ps(v, m);
    }
    float r = op == R_MAX ? rlx_v8_hmax(m) : -rlx_v8_hmax(_mm256_sub_ps(_mm256_setzero_ps(), m));
    bool has_nan = _mm256_movemask_ps(nan) != 0;
    for (; i < n; i++) {
        has_nan |= x[i] != x[i];
        r = op == R_MAX ? (x[i] > r ? x[i] : r) : (x[i] < r ? x[i] : r);
    }
    if (has_nan || r == 0.0f)
        for (size_t j = 0; j < n; j++)
            if (x[j] != x[j] || (!has_nan && x[j] == r)) return x[j];
    return r;
}

static void vred_rows(void *ctx, size_t i0, size_t i1) {
    const red_job *j = ctx;
    for (size_t it = i0; it < i1; it++) {
        size_t a = it / j->nblk, blk = it % j->nblk, b0 = blk * RED_BLOCK;
        size_t n = j->red - b0 < RED_BLOCK ? j->red - b0 : RED_BLOCK;
        const float *x = j->x + a * j->red + b0;
        j->part[it] = (j->op == R_MAX || j->op == R_MIN) ? vext_block(j->op, x, n) : vsum_block(j->op, x, n);
    }
}

/* Columns [c0, c1) of every [red, post] slab: double accumulators, the rows
 * added in order (as the reference), 8 columns at a time. */
RLX_AVX2 static void vred_cols(void *ctx, size_t c0, size_t c1) {
    const red_job *j = ctx;
    enum { CB = 256 };
    double acc[CB];
    float ext[CB];
    bool ex = j->op == R_MAX || j->op == R_MIN;
    __m256 nz = _mm256_set1_ps(-0.0f);
    for (size_t a = 0; a < j->pre; a++)
        for (size_t cb = c0; cb < c1; cb += CB) {
            size_t nc = c1 - cb < CB ? c1 - cb : CB, n8 = nc - nc % 8;
            for (size_t c = 0; c < nc; c++) acc[c] = 0.0, ext[c] = j->op == R_MAX ? -INFINITY : INFINITY;
            for (size_t b = 0; b < j->red; b++) {
                const float *row = j->x + (a * j->red + b) * j->post + cb;
                if (ex) {
                    for (size_t c = 0; c < n8; c += 8) {
                        __m256 v = _mm256_loadu_ps(row + c), m = _mm256_loadu_ps(ext + c);
                        __m256 nv = _mm256_cmp_ps(v, v, _CMP_UNORD_Q), na = _mm256_cmp_ps(m, m, _CMP_UNORD_Q);
                        __m256 r = j->op == R_MAX ? _mm256_max_ps(v, m) : _mm256_min_ps(v, m); /* NaN m stays */
                        _mm256_storeu_ps(ext + c, _mm256_blendv_ps(r, v, _mm256_andnot_ps(na, nv)));
                    }
                    for (size_t c = n8; c < nc; c++)
                        if ((j->op == R_MAX ? row[c] > ext[c] : row[c] < ext[c]) || (row[c] != row[c] && ext[c] == ext[c]))
                            ext[c] = row[c];
                    continue;
                }
                for (size_t c = 0; c < n8; c += 8) {
                    __m256 v = _mm256_loadu_ps(row + c);
                    if (j->op == R_L1) v = _mm256_andnot_ps(nz, v);
                    __m256d d0 = _mm256_cvtps_pd(_mm256_castps256_ps128(v)), d1 = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
                    __m256d s0 = _mm256_loadu_pd(acc + c), s1 = _mm256_loadu_pd(acc + c + 4);
                    if (j->op == R_SUMSQ || j->op == R_L2) s0 = _mm256_fmadd_pd(d0, d0, s0), s1 = _mm256_fmadd_pd(d1, d1, s1);
                    else s0 = _mm256_add_pd(s0, d0), s1 = _mm256_add_pd(s1, d1);
                    _mm256_storeu_pd(acc + c, s0);
                    _mm256_storeu_pd(acc + c + 4, s1);
                }
                for (size_t c = n8; c < nc; c++) {
                    double v = row[c];
                    acc[c] += (j->op == R_SUMSQ || j->op == R_L2) ? v * v : j->op == R_L1 ? fabs(v) : v;
                }
            }
            for (size_t c = 0; c < nc; c++) {
                double v = ex ? ext[c] : acc[c];
                if (j->op == R_MEAN) v /= (double)j->red;
                else if (j->op == R_L2) v = sqrt(v);
                j->y[a * j->post + cb + c] = (float)v;
            }
        }
}

/* The vector form of reduce_fast_f32 (same [pre, red, post] view). */
static bool reduce_vec_f32(red_op op, const float *x, float *y, size_t pre, size_t red, size_t post) {
    red_job j = { .op = op, .x = x, .red = red, .post = post, .y = y, .pre = pre };
    if (post > 1) {
        rlx_parallel_for(post, 8 + 65536 / (red * pre + 1), vred_cols, &j);
        return true;
    }
    j.nblk = red == 0 ? 1 : (red + RED_BLOCK - 1) / RED_BLOCK;
    size_t items;
    if (!rlx_mul_ok(pre, j.nblk, &items)) return false;
    /* the blocks' partial results: on the stack, the calling thread's INDEX
     * buffer, else allocated for the call */
    double stack_part[64], *part = stack_part, *part_own = NULL;
    if (items > 64 && (items > SIZE_MAX / sizeof *part ||
                       (!(part = rlx_scratch_get(RLX_SCRATCH_INDEX, items * sizeof *part)) &&
                        !(part = part_own = malloc(items * sizeof *part)))))
        return false;
    j.part = part;
    rlx_parallel_for(items, 1 + 32768 / (red < RED_BLOCK ? red + 1 : RED_BLOCK), vred_rows, &j);
    for (size_t a = 0; a < pre; a++) {
        const double *pa = part + a * j.nblk;
        double v = pa[0];
        for (size_t b = 1; b < j.nblk; b++) {
            if (op == R_MAX || op == R_MIN) {
                if (v != v) break;
                if (pa[b] != pa[b] || (op == R_MAX ? pa[b] > v : pa[b] < v)) v = pa[b];
            } else {
                v += pa[b];
            }
        }
        if (op == R_MEAN) v /= (double)red;
        else if (op == R_L2) v = sqrt(v);
        y[a] = (float)v;
    }
    free(part_own);
    return true;
}
#endif

bool rlx_cpu_reduce_rows_f32(rlx_row_red kind, const float *x, float *y, size_t rows, size_t n) {
#if RLX_HAVE_AVX2_BUILD
    static const red_op k_op[] = { [RLX_ROW_MEAN] = R_MEAN, [RLX_ROW_MAX] = R_MAX, [RLX_ROW_L1] = R_L1,
                                   [RLX_ROW_L2] = R_L2 };
    if (n == 0 || (unsigned)kind > RLX_ROW_L2 || !rlx_cpu_has_avx2()) return false;
    return reduce_vec_f32(k_op[kind], x, y, rows, n, 1);
#else
    (void)kind, (void)x, (void)y, (void)rows, (void)n;
    return false;
#endif
}

/* Fast path: f32 input, the reduced axes one contiguous block, viewed as
 * [pre, red, post]. Accumulates in double; with AVX2 (reduce_vec_f32) in
 * 16 double lanes per block of 32K elements of a row, over the pool, the
 * order fixed by the sizes alone (so the same bits on any thread count):
 * the f32 results equal the reference's except where two double sums of
 * the same terms in another order round to different floats (about once
 * in 10^8 sums); without AVX2 in the reference's order (identical). */
static bool reduce_fast_f32(rlx_cpu_kctx *k, red_op op, const rlx_reduce_spec *r, const red_plan *p) {
    const rlx_tensor *x = k->in[0];
    if (x->dtype != RLX_DTYPE_F32 || k->out[0]->dtype != RLX_DTYPE_F32 || r->n_axes == 0 || p->n_out == 0 ||
        p->count == 0) /* empty reductions: the reference's identities */
        return false;
    if (op != R_SUM && op != R_MEAN && op != R_MAX && op != R_MIN && op != R_SUMSQ && op != R_L2 && op != R_L1)
        return false;
    int first = -1, last = -1;
    for (int d = 0; d < r->rank; d++)
        if (r->axis[d]) {
            if (first < 0) first = d;
            else if (last != d - 1) return false;
            last = d;
        }
    size_t pre = rlx_dims_span(x->dims, 0, first), red = rlx_dims_span(x->dims, first, last + 1);
    size_t post = rlx_dims_span(x->dims, last + 1, r->rank);
    const float *px = x->data;
    float *py = k->out[0]->data;
#if RLX_HAVE_AVX2_BUILD
    if (rlx_cpu_has_avx2() && reduce_vec_f32(op, px, py, pre, red, post)) return true;
#endif
    if (post == 1) { /* reduced block innermost: one contiguous row per output */
        for (size_t a = 0; a < pre; a++) {
            const float *row = px + a * red;
            double s = op == R_MAX ? -INFINITY : op == R_MIN ? INFINITY : 0.0;
            switch (op) {
            case R_SUM: case R_MEAN: for (size_t b = 0; b < red; b++) s += row[b]; break;
            case R_L1: for (size_t b = 0; b < red; b++) s += fabs((double)row[b]); break;
            case R_SUMSQ: case R_L2: for (size_t b = 0; b < red; b++) s += (double)row[b] * (double)row[b]; break;
            case R_MAX: case R_MIN: { /* the extreme of floats is one of them: exact in float */
                /* branch-free compare chain; NaN is tracked apart and the
                 * first NaN returned, as the reference does */
                float m = (float)s;
                int nan = 0;
                if (op == R_MAX)
                    for (size_t b = 0; b < red; b++) nan |= row[b] != row[b], m = row[b] > m ? row[b] : m;
                else
                    for (size_t b = 0; b < red; b++) nan |= row[b] != row[b], m = row[b] < m ? row[b] : m;
                for (size_t b = 0; nan && b < red; b++)
                    if (row[b] != row[b]) {
                        m = row[b];
                        break;
                    }
                s = m;
                break;
            }
            default: break;
            }
            if (op == R_MEAN) s /= (double)red;
            else if (op == R_L2) s = sqrt(s);
            py[a] = (float)s;
        }
        return true;
    }
    /* the calling thread's INDEX buffer, else allocated for the call */
    double *acc = rlx_scratch_get(RLX_SCRATCH_INDEX, post * sizeof *acc), *acc_own = NULL;
    if (!acc && !(acc = acc_own = malloc(post * sizeof *acc))) return false; /* the reference reports it */
    for (size_t a = 0; a < pre; a++) {
        double init = op == R_MAX ? -INFINITY : op == R_MIN ? INFINITY : 0.0;
        for (size_t c = 0; c < post; c++) acc[c] = init;
        const float *row = px + a * red * post;
        for (size_t b = 0; b < red; b++, row += post) {
            switch (op) {
            case R_SUM: case R_MEAN: for (size_t c = 0; c < post; c++) acc[c] += row[c]; break;
            case R_L1: for (size_t c = 0; c < post; c++) acc[c] += fabs((double)row[c]); break;
            case R_SUMSQ: case R_L2:
                for (size_t c = 0; c < post; c++) acc[c] += (double)row[c] * (double)row[c];
                break;
            case R_MAX:
                for (size_t c = 0; c < post; c++)
                    if (row[c] > acc[c] || (row[c] != row[c] && acc[c] == acc[c])) acc[c] = row[c];
                break;
            case R_MIN:
                for (size_t c = 0; c < post; c++)
                    if (row[c] < acc[c] || (row[c] != row[c] && acc[c] == acc[c])) acc[c] = row[c];
                break;
            default: break;
            }
        }
        for (size_t c = 0; c < post; c++) {
            double v = acc[c];
            if (op == R_MEAN) v /= (double)red;
            else if (op == R_L2) v = sqrt(v);
            py[a * post + c] = (float)v;
        }
    }
    free(acc_own);
    return true;
}

static rlx_status reduce_run(rlx_cpu_kctx *k, red_op op) {
    const rlx_tensor *x = k->in[0];
    rlx_reduce_spec r;
    RLX_TRY(kernel_axes(k, &r));
    red_plan p;
    red_plan_init(&p, x, &r);
    RLX_TRY(check_out(k, 0, p.n_out));
    if (!k->reference && reduce_fast_f32(k, op, &r, &p)) return RLX_OK;
    bool int_acc = (rlx_dtype_is_int(x->dtype) || x->dtype == RLX_DTYPE_BOOL) && op != R_L2 && op != R_LOGSUM &&
                   op != R_LSE;
    if (x->dtype == RLX_DTYPE_BOOL && op != R_MAX && op != R_MIN)
        return rlx_cpu_fail(k, RLX_ERR_UNSUPPORTED, "bool input (only ReduceMax and ReduceMin take bool)");
    return int_acc ? reduce_int(k, op, &p) : reduce_float(k, op, &p);
}

#define REDUCE_KERNEL(fn, op) \
    static rlx_status fn(rlx_cpu_kctx *k) { return reduce_run(k, op); }
REDUCE_KERNEL(k_reduce_sum, R_SUM)
REDUCE_KERNEL(k_reduce_mean, R_MEAN)
REDUCE_KERNEL(k_reduce_max, R_MAX)
REDUCE_KERNEL(k_reduce_min, R_MIN)
REDUCE_KERNEL(k_reduce_prod, R_PROD)
REDUCE_KERNEL(k_reduce_l1, R_L1)
REDUCE_KERNEL(k_reduce_l2, R_L2)
REDUCE_KERNEL(k_reduce_logsum, R_LOGSUM)
REDUCE_KERNEL(k_reduce_lse, R_LSE)
REDUCE_KERNEL(k_reduce_sumsq, R_SUMSQ)

/* ------------------------------------------------------------ ArgMax / ArgMin */

/* ONNX ArgMax/ArgMin-13: index along `axis` of the first (or, with
 * select_last_index, the last) extreme element; int64 output.
 * NaN (ONNX says nothing): a left fold from element 0 in which element j
 * replaces the best so far when x[j] > best (ArgMin: <; select_last_index
 * also on ==), as onnxruntime 1.22's CPU kernels do for f16, f32 and f64
 * on every shape: a NaN at index 0 is the answer (NaN compares false, so
 * nothing replaces it), a NaN elsewhere never wins. So a row gives 0 when
 * its element 0 is NaN (all NaN included), else the index its non-NaN
 * elements give. numpy's argmax (the first NaN) differs; Hardmax
 * (cpu_nn_gemm.c) folds the same way. */
static rlx_status arg_run(rlx_cpu_kctx *k, bool is_max) {
    const rlx_tensor *x = k->in[0];
    int64_t *py = k->out[0]->data;
    int ax;
    int64_t axis = rlx_param_int(k->n, RLX_A_axis);
    if (!rlx_norm_axis(axis, x->rank, &ax))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "axis %lld is out of range for an input of rank %d",
                            (long long)axis, x->rank);
    bool last = rlx_param_int(k->n, RLX_A_select_last_index) != 0;
    size_t outer = rlx_dims_span(x->dims, 0, ax), len = (size_t)x->dims[ax], inner = rlx_dims_span(x->dims, ax + 1, x->rank);
    RLX_TRY(check_out(k, 0, outer * inner));
    if (len == 0 && outer * inner > 0)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "axis %d has size 0: there is no index to return", ax);
    if (!k->reference && x->dtype == RLX_DTYPE_F32 && inner == 1 && len > 0) {
        rlx_cpu_rows_arg(x->data, py, outer, len, is_max, last);
        return RLX_OK;
    }
    bool is_float = rlx_dtype_is_float(x->dtype), u64 = x->dtype == RLX_DTYPE_U64;
    for (size_t a = 0; a < outer; a++)
        for (size_t c = 0; c < inner; c++) {
            size_t base = a * len * inner + c, best = 0;
            for (size_t j = 1; j < len; j++) {
                size_t i = base + j * inner, b = base + best * inner;
                int cmp;
                if (is_float) {
                    double v = ld(x, i), w = ld(x, b);
                    if (v != v || w != w) cmp = -1; /* a NaN neither replaces the best nor ties it */
                    else cmp = is_max ? (v > w) - (v < w) : (v < w) - (v > w);
                } else if (u64) {
                    uint64_t v = ((const uint64_t *)x->data)[i], w = ((const uint64_t *)x->data)[b];
                    cmp = is_max ? (v > w) - (v < w) : (v < w) - (v > w);
                } else {
                    int64_t v = rlx_tensor_get_i64(x, i), w = rlx_tensor_get_i64(x, b);
                    cmp = is_max ? (v > w) - (v < w) : (v < w) - (v > w);
                }
                if (cmp > 0 || (last && cmp == 0)) best = j;
            }
            py[a * inner + c] = (int64_t)best;
        }
    return RLX_OK;
}

static rlx_status k_argmax(rlx_cpu_kctx *k) { return arg_run(k, true); }
static rlx_status k_argmin(rlx_cpu_kctx *k) { return arg_run(k, false); }

/* ------------------------------------------------------------ normalisations */

/* Mean and population variance of n values x[base + j*step], in double. */
static void moments(const rlx_tensor *x, size_t base, size_t n, size_t step, double *mean, double *var) {
    double s = 0;
    for (size_t j = 0; j < n; j++) s += ld(x, base + j * step);
    double m = s / (double)n, q = 0;
    for (size_t j = 0; j < n; j++) {
        double d = ld(x, base + j * step) - m;
        q += d * d;
    }
    *mean = m;
    *var = q / (double)n;
}

static rlx_status need_numel(const rlx_cpu_kctx *k, int i, size_t want, const char *what) {
    size_t got = rlx_tensor_numel(k->in[i]);
    if (got != want)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "%s has %zu elements, expected %zu", what, got, want);
    return RLX_OK;
}

/* ONNX InstanceNormalization-6/22: per (n, c) over the spatial dims,
 * y = scale[c] * (x - mean) / sqrt(var + epsilon) + B[c]. */
static rlx_status k_instance_norm(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0], *sc = k->in[1], *b = k->in[2];
    rlx_tensor *y = k->out[0];
    if (x->rank < 2)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "input has rank %d, expected [N, C, ...]", x->rank);
    size_t nb = (size_t)x->dims[0], ch = (size_t)x->dims[1], sp = rlx_dims_span(x->dims, 2, x->rank);
    RLX_TRY(need_numel(k, 1, ch, "scale"));
    RLX_TRY(need_numel(k, 2, ch, "B"));
    double eps = rlx_param_float(k->n, RLX_A_epsilon);
    for (size_t n = 0; n < nb; n++)
        for (size_t c = 0; c < ch; c++) {
            size_t base = (n * ch + c) * sp;
            double m, v;
            moments(x, base, sp, 1, &m, &v);
            double inv = 1.0 / sqrt(v + eps), s = ld(sc, c), bb = ld(b, c);
            for (size_t j = 0; j < sp; j++) st_f64(y, base + j, s * (ld(x, base + j) - m) * inv + bb);
        }
    return RLX_OK;
}

/* ONNX LayerNormalization-17 and RMSNormalization-23: statistics over dims
 * [axis, rank) of each row; Scale (and B) broadcast unidirectionally to X.
 * Layer: y = (x - mean) / sqrt(var + eps) * Scale + B; Mean and InvStdDev
 * outputs per row. RMS: y = x / sqrt(mean(x^2) + eps) * scale. */
static rlx_status norm_rows(rlx_cpu_kctx *k, bool rms) {
    const rlx_tensor *x = k->in[0], *sc = k->in[1];
    const rlx_tensor *b = (!rms && k->n->n_in > 2) ? k->in[2] : NULL;
    rlx_tensor *y = k->out[0];
    rlx_tensor *mean_out = (!rms && k->n->n_out > 1) ? k->out[1] : NULL;
    rlx_tensor *inv_out = (!rms && k->n->n_out > 2) ? k->out[2] : NULL;
    int ax;
    int64_t axis = rlx_param_int(k->n, RLX_A_axis);
    if (!rlx_norm_axis(axis, x->rank, &ax))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "axis %lld is out of range for an input of rank %d",
                            (long long)axis, x->rank);
    int64_t ss[RLX_MAX_RANK], bs[RLX_MAX_RANK];
    const rlx_tensor *ps[2] = { sc, b };
    for (int t = 0; t < 2; t++) {
        const rlx_tensor *p = ps[t];
        if (!p) continue;
        bool ok = p->rank <= x->rank;
        for (int i = 0; ok && i < p->rank; i++) {
            int64_t pd = p->dims[i], xd = x->dims[x->rank - p->rank + i];
            ok = pd == 1 || pd == xd;
        }
        if (!ok)
            return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "%s does not broadcast to the input shape",
                                t ? "B" : "Scale");
        rlx_broadcast_strides(p->dims, p->rank, x->rank, t ? bs : ss);
    }
    size_t rows = rlx_dims_span(x->dims, 0, ax), len = rlx_dims_span(x->dims, ax, x->rank);
    RLX_TRY(check_out(k, 1, rows));
    RLX_TRY(check_out(k, 2, rows));
    double eps = rlx_param_float(k->n, RLX_A_epsilon);
    /* When Scale and B do not vary across rows (the usual [d_axis, ...]
     * shapes), their offset within a row is computed once per column. */
    bool row_invariant = true;
    for (int d = 0; d < ax; d++) row_invariant &= ss[d] == 0 && (!b || bs[d] == 0);
    size_t *soff = row_invariant && len ? malloc(2 * len * sizeof *soff) : NULL, *boff = soff ? soff + len : NULL;
    for (size_t j = 0; soff && j < len; j++) {
        soff[j] = bcast_off(j, x->dims + ax, x->rank - ax, ss + ax);
        boff[j] = b ? bcast_off(j, x->dims + ax, x->rank - ax, bs + ax) : 0;
    }
    /* f32 fast path (cpu_rows.c) where Scale and B hold one value per column, in order */
    bool per_column = soff != NULL;
    for (size_t j = 0; per_column && j < len; j++) per_column = soff[j] == j && (!b || boff[j] == j);
    if (!k->reference && !rms && per_column && x->dtype == RLX_DTYPE_F32 && y->dtype == RLX_DTYPE_F32 &&
        sc->dtype == RLX_DTYPE_F32 && (!b || b->dtype == RLX_DTYPE_F32) &&
        (!mean_out || mean_out->dtype == RLX_DTYPE_F32) && (!inv_out || inv_out->dtype == RLX_DTYPE_F32) &&
        rlx_cpu_rows_layernorm(x->data, sc->data, b ? b->data : NULL, y->data, mean_out ? mean_out->data : NULL,
                               inv_out ? inv_out->data : NULL, rows, len, eps)) {
        free(soff);
        return RLX_OK;
    }
    for (size_t r = 0; r < rows; r++) {
        size_t base = r * len;
        double m, v, inv;
        if (rms) {
            double q = 0;
            for (size_t j = 0; j < len; j++) q += ld(x, base + j) * ld(x, base + j);
            m = 0;
            inv = 1.0 / sqrt(q / (double)len + eps);
        } else {
            moments(x, base, len, 1, &m, &v);
            inv = 1.0 / sqrt(v + eps);
        }
        for (size_t j = 0; j < len; j++) {
            size_t i = base + j;
            double val = (ld(x, i) - m) * inv * ld(sc, soff ? soff[j] : bcast_off(i, x->dims, x->rank, ss));
            if (b) val += ld(b, boff ? boff[j] : bcast_off(i, x->dims, x->rank, bs));
            st_f64(y, i, val);
        }
        if (mean_out) st_f64(mean_out, r, m);
        if (inv_out) st_f64(inv_out, r, inv);
    }
    free(soff);
    return RLX_OK;
}

static rlx_status k_layer_norm(rlx_cpu_kctx *k) { return norm_rows(k, false); }
static rlx_status k_rms_norm(rlx_cpu_kctx *k) { return norm_rows(k, true); }

/* ONNX GroupNormalization-18/21: statistics per (n, group) over the group's
 * channels and the spatial dims; scale/bias index the group (18) or the
 * channel (21). */
static rlx_status k_group_norm(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0], *sc = k->in[1], *b = k->in[2];
    rlx_tensor *y = k->out[0];
    if (x->rank < 2)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "input has rank %d, expected [N, C, ...]", x->rank);
    int64_t g = rlx_param_int(k->n, RLX_A_num_groups);
    size_t nb = (size_t)x->dims[0], ch = (size_t)x->dims[1], sp = rlx_dims_span(x->dims, 2, x->rank);
    if (g <= 0 || ch % (size_t)g != 0)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "num_groups %lld does not divide the %zu channels",
                            (long long)g, ch);
    bool per_channel = k->n->version >= 21;
    size_t np = per_channel ? ch : (size_t)g, cpg = ch / (size_t)g;
    RLX_TRY(need_numel(k, 1, np, "scale"));
    RLX_TRY(need_numel(k, 2, np, "bias"));
    double eps = rlx_param_float(k->n, RLX_A_epsilon);
    for (size_t n = 0; n < nb; n++)
        for (size_t gi = 0; gi < (size_t)g; gi++) {
            size_t base = (n * ch + gi * cpg) * sp, len = cpg * sp;
            double m, v;
            moments(x, base, len, 1, &m, &v);
            double inv = 1.0 / sqrt(v + eps);
            for (size_t j = 0; j < len; j++) {
                size_t c = gi * cpg + j / (sp ? sp : 1), pi = per_channel ? c : gi;
                st_f64(y, base + j, (ld(x, base + j) - m) * inv * ld(sc, pi) + ld(b, pi));
            }
        }
    return RLX_OK;
}

/* ONNX LpNormalization-1/22: x / ||x||_p along axis (p 1 or 2); a zero norm
 * gives 0. */
static rlx_status k_lp_norm(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0];
    rlx_tensor *y = k->out[0];
    int64_t p = rlx_param_int(k->n, RLX_A_p), axis = rlx_param_int(k->n, RLX_A_axis);
    int ax;
    if (p != 1 && p != 2)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "p is %lld; only 1 and 2 are defined", (long long)p);
    if (!rlx_norm_axis(axis, x->rank, &ax))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "axis %lld is out of range for an input of rank %d",
                            (long long)axis, x->rank);
    size_t outer = rlx_dims_span(x->dims, 0, ax), len = (size_t)x->dims[ax], inner = rlx_dims_span(x->dims, ax + 1, x->rank);
    for (size_t a = 0; a < outer; a++)
        for (size_t c = 0; c < inner; c++) {
            size_t base = a * len * inner + c;
            double s = 0;
            for (size_t j = 0; j < len; j++) {
                double v = ld(x, base + j * inner);
                s += p == 1 ? fabs(v) : v * v;
            }
            double norm = p == 1 ? s : sqrt(s);
            for (size_t j = 0; j < len; j++)
                st_f64(y, base + j * inner, norm == 0 ? 0.0 : ld(x, base + j * inner) / norm);
        }
    return RLX_OK;
}

/* ONNX MeanVarianceNormalization-9/13: (x - E[x]) / (sqrt(E[(x - E[x])^2]) + 1e-9)
 * over `axes` (default [0, 2, 3]); the 1e-9 is the constant of the ONNX
 * function body. */
static rlx_status k_mvn(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0];
    rlx_tensor *y = k->out[0];
    rlx_reduce_spec r;
    RLX_TRY(rlx_mvn_resolve(k->n, x->rank, RLX_ERR_INVALID_ARGUMENT, &r));
    red_plan p;
    red_plan_init(&p, x, &r);
    if (p.n_out == 0) return RLX_OK;
    double *mean = calloc(p.n_out, sizeof *mean), *var = calloc(p.n_out, sizeof *var);
    if (!mean || !var) {
        free(mean);
        free(var);
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory");
    }
    RED_FOR(&p, i, o, mean[o] += ld(x, i));
    for (size_t o = 0; o < p.n_out; o++) mean[o] /= (double)p.count;
    RED_FOR(&p, i, o, { double d = ld(x, i) - mean[o]; var[o] += d * d; });
    for (size_t o = 0; o < p.n_out; o++) var[o] = sqrt(var[o] / (double)p.count) + 1e-9;
    RED_FOR(&p, i, o, st_f64(y, i, (ld(x, i) - mean[o]) / var[o]));
    free(mean);
    free(var);
    return RLX_OK;
}

/* ONNX LRN-1/13: y = x / (bias + alpha / size * sum of x^2 over channels
 * [c - floor((size-1)/2), c + ceil((size-1)/2)]) ^ beta. */

/* f32: planes (image, channel) over the threads, each position's window
 * summed in double in channel order and the same pow as the generic loop
 * below, so the same bits (AlexNet's two LRNs took 12 ms at 2 threads and
 * at 16 in that loop: one thread, a generic load per tap). */
typedef struct lrn_job {
    const float *x;
    float *y;
    int64_t ch, before, after;
    size_t sp;
    double scale, beta, bias; /* scale = alpha / size */
} lrn_job;

static void lrn_planes(void *ctx, size_t p0, size_t p1) {
    const lrn_job *j = ctx;
    double sq[256];
    for (size_t p = p0; p < p1; p++) {
        int64_t n = (int64_t)p / j->ch, c = (int64_t)p % j->ch;
        int64_t lo = c - j->before < 0 ? 0 : c - j->before, hi = c + j->after > j->ch - 1 ? j->ch - 1 : c + j->after;
        const float *xc = j->x + p * j->sp;
        float *yc = j->y + p * j->sp;
        for (size_t s0 = 0; s0 < j->sp; s0 += 256) {
            size_t len = j->sp - s0 < 256 ? j->sp - s0 : 256;
            for (size_t s = 0; s < len; s++) sq[s] = 0.0;
            for (int64_t i = lo; i <= hi; i++) {
                const float *xi = j->x + (size_t)(n * j->ch + i) * j->sp + s0;
                for (size_t s = 0; s < len; s++) {
                    double v = xi[s];
                    sq[s] += v * v;
                }
            }
            for (size_t s = 0; s < len; s++)
                yc[s0 + s] = (float)((double)xc[s0 + s] / pow(j->bias + j->scale * sq[s], j->beta));
        }
    }
}

static rlx_status k_lrn(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0];
    rlx_tensor *y = k->out[0];
    int64_t size = rlx_param_int(k->n, RLX_A_size);
    if (size <= 0) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "size is %lld", (long long)size);
    if (x->rank < 2)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "input has rank %d, expected [N, C, ...]", x->rank);
    double alpha = rlx_param_float(k->n, RLX_A_alpha), beta = rlx_param_float(k->n, RLX_A_beta);
    double bias = rlx_param_float(k->n, RLX_A_bias);
    int64_t nb = x->dims[0], ch = x->dims[1], before = (size - 1) / 2, after = size / 2;
    size_t sp = rlx_dims_span(x->dims, 2, x->rank);
    if (x->dtype == RLX_DTYPE_F32 && y->dtype == RLX_DTYPE_F32) {
        lrn_job j = { x->data, y->data, ch, before, after, sp, alpha / (double)size, beta, bias };
        rlx_parallel_for((size_t)(nb * ch), 1 + 16384 / (sp + 1), lrn_planes, &j);
        return RLX_OK;
    }
    for (int64_t n = 0; n < nb; n++)
        for (int64_t c = 0; c < ch; c++) {
            int64_t lo = c - before < 0 ? 0 : c - before, hi = c + after > ch - 1 ? ch - 1 : c + after;
            for (size_t s = 0; s < sp; s++) {
                double sq = 0;
                for (int64_t i = lo; i <= hi; i++) {
                    double v = ld(x, ((size_t)(n * ch + i)) * sp + s);
                    sq += v * v;
                }
                size_t at = ((size_t)(n * ch + c)) * sp + s;
                st_f64(y, at, ld(x, at) / pow(bias + alpha / (double)size * sq, beta));
            }
        }
    return RLX_OK;
}

/* ------------------------------------------------------------ Einsum */

/* Einsum fast path for f32: the innermost summed label runs as a strided
 * loop, the other summed labels as a counter (no divisions). Products and
 * sums happen in the reference's order, in double, so the results are
 * identical. */
static bool einsum_fast_f32(rlx_cpu_kctx *k, const rlx_einsum *e, size_t stp[][RLX_EINSUM_MAX_LABELS],
                            const int *sum_lab, int n_sum, size_t sum_total) {
    int n_in = e->n_in;
    rlx_tensor *y = k->out[0];
    if (y->dtype != RLX_DTYPE_F32 || n_sum == 0 || sum_total == 0) return false;
    const float *px[RLX_EINSUM_MAX_INPUTS];
    for (int t = 0; t < n_in; t++) {
        if (k->in[t]->dtype != RLX_DTYPE_F32) return false;
        px[t] = k->in[t]->data;
    }
    int last = sum_lab[n_sum - 1];
    size_t len = (size_t)e->extent[last], outer = sum_total / len, ls[RLX_EINSUM_MAX_INPUTS];
    for (int t = 0; t < n_in; t++) ls[t] = stp[t][last];
    float *py = y->data;
    size_t out_total = rlx_tensor_numel(y);
    for (size_t o = 0; o < out_total; o++) {
        size_t off[RLX_EINSUM_MAX_INPUTS] = { 0 }, rem = o;
        for (int i = e->out_rank - 1; i >= 0; i--) {
            int l = e->out_label[i];
            size_t c = rem % (size_t)e->extent[l];
            rem /= (size_t)e->extent[l];
            for (int t = 0; t < n_in; t++) off[t] += c * stp[t][l];
        }
        int64_t ctr[RLX_EINSUM_MAX_LABELS] = { 0 };
        double acc = 0;
        for (size_t s = 0; s < outer; s++) {
            if (n_in == 1) {
                const float *a = px[0] + off[0];
                for (size_t c = 0; c < len; c++) acc += (double)a[c * ls[0]];
            } else if (n_in == 2) {
                const float *a = px[0] + off[0], *b = px[1] + off[1];
                for (size_t c = 0; c < len; c++) acc += (double)a[c * ls[0]] * (double)b[c * ls[1]];
            } else {
                for (size_t c = 0; c < len; c++) {
                    double prod = 1;
                    for (int t = 0; t < n_in; t++) prod *= (double)px[t][off[t] + c * ls[t]];
                    acc += prod;
                }
            }
            for (int i = n_sum - 2; i >= 0; i--) { /* advance the other summed labels */
                int l = sum_lab[i];
                for (int t = 0; t < n_in; t++) off[t] += stp[t][l];
                if (++ctr[i] < e->extent[l]) break;
                for (int t = 0; t < n_in; t++) off[t] -= stp[t][l] * (size_t)e->extent[l];
                ctr[i] = 0;
            }
        }
        py[o] = (float)acc;
    }
    return true;
}

/* ONNX Einsum-12, by a plain loop over the whole index space: for every
 * output element, the sum over the summed labels of the product of the
 * operands. Repeated labels in an operand add their strides (the diagonal);
 * broadcast ellipsis dims of size 1 have stride 0. */
static rlx_status k_einsum(rlx_cpu_kctx *k) {
    int n_in = k->n->n_in;
    if (n_in > RLX_EINSUM_MAX_INPUTS)
        return rlx_cpu_fail(k, RLX_ERR_UNSUPPORTED, "Einsum with %d operands", n_in);
    int ranks[RLX_EINSUM_MAX_INPUTS];
    const int64_t *dims[RLX_EINSUM_MAX_INPUTS];
    for (int t = 0; t < n_in; t++) {
        if (!k->in[t]) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "input %d is omitted", t);
        ranks[t] = k->in[t]->rank;
        dims[t] = k->in[t]->dims;
    }
    rlx_einsum e;
    RLX_TRY(rlx_einsum_resolve(k->n, n_in, ranks, dims, NULL, RLX_ERR_INVALID_ARGUMENT, &e));
    rlx_tensor *y = k->out[0];
    if (y->rank != e.out_rank)
        return rlx_cpu_fail(k, RLX_ERR_INTERNAL, "output rank %d, equation gives %d", y->rank, e.out_rank);
    for (int i = 0; i < e.out_rank; i++)
        if (y->dims[i] != e.extent[e.out_label[i]])
            return rlx_cpu_fail(k, RLX_ERR_INTERNAL, "output dim %d is %lld, equation gives %lld", i,
                                (long long)y->dims[i], (long long)e.extent[e.out_label[i]]);
    /* per operand, the step of each label */
    size_t stp[RLX_EINSUM_MAX_INPUTS][RLX_EINSUM_MAX_LABELS];
    memset(stp, 0, sizeof stp);
    for (int t = 0; t < n_in; t++) {
        int64_t st[RLX_MAX_RANK];
        rlx_strides(dims[t], ranks[t], st);
        for (int d = 0; d < ranks[t]; d++) {
            int l = e.in_label[t][d];
            if (!(dims[t][d] == 1 && e.extent[l] != 1)) stp[t][l] += (size_t)st[d];
        }
    }
    int sum_lab[RLX_EINSUM_MAX_LABELS], n_sum = 0;
    size_t sum_total = 1;
    for (int l = 0; l < e.n_labels; l++)
        if (!e.in_output[l]) {
            sum_lab[n_sum++] = l;
            if (!rlx_mul_ok(sum_total, (size_t)e.extent[l], &sum_total))
                return rlx_cpu_fail(k, RLX_ERR_UNSUPPORTED, "the summed index space is too large");
        }
    if (!k->reference && einsum_fast_f32(k, &e, stp, sum_lab, n_sum, sum_total)) return RLX_OK;
    size_t out_total = rlx_tensor_numel(y);
    bool is_int = rlx_dtype_is_int(y->dtype);
    for (size_t o = 0; o < out_total; o++) {
        size_t base[RLX_EINSUM_MAX_INPUTS] = { 0 }, rem = o;
        for (int i = e.out_rank - 1; i >= 0; i--) {
            int l = e.out_label[i];
            size_t c = rem % (size_t)e.extent[l];
            rem /= (size_t)e.extent[l];
            for (int t = 0; t < n_in; t++) base[t] += c * stp[t][l];
        }
        double acc = 0;
        uint64_t iacc = 0;
        for (size_t s = 0; s < sum_total; s++) {
            size_t off[RLX_EINSUM_MAX_INPUTS];
            memcpy(off, base, sizeof(size_t) * (size_t)n_in);
            size_t r2 = s;
            for (int i = n_sum - 1; i >= 0; i--) {
                int l = sum_lab[i];
                size_t c = r2 % (size_t)e.extent[l];
                r2 /= (size_t)e.extent[l];
                for (int t = 0; t < n_in; t++) off[t] += c * stp[t][l];
            }
            if (is_int) {
                uint64_t prod = 1;
                for (int t = 0; t < n_in; t++) prod *= (uint64_t)rlx_tensor_get_i64(k->in[t], off[t]);
                iacc += prod;
            } else {
                double prod = 1;
                for (int t = 0; t < n_in; t++) prod *= ld(k->in[t], off[t]);
                acc += prod;
            }
        }
        if (is_int) rlx_tensor_set_i64(y, o, (int64_t)iacc);
        else st_f64(y, o, acc);
    }
    return RLX_OK;
}

const rlx_cpu_kernel_fn rlx_cpu_kernels_reduce[RLX_OP_COUNT] = {
    [RLX_OP_ReduceSum] = k_reduce_sum, [RLX_OP_ReduceMean] = k_reduce_mean, [RLX_OP_ReduceMax] = k_reduce_max,
    [RLX_OP_ReduceMin] = k_reduce_min, [RLX_OP_ReduceProd] = k_reduce_prod, [RLX_OP_ReduceL1] = k_reduce_l1,
    [RLX_OP_ReduceL2] = k_reduce_l2, [RLX_OP_ReduceLogSum] = k_reduce_logsum, [RLX_OP_ReduceLogSumExp] = k_reduce_lse,
    [RLX_OP_ReduceSumSquare] = k_reduce_sumsq, [RLX_OP_ArgMax] = k_argmax, [RLX_OP_ArgMin] = k_argmin,
    [RLX_OP_InstanceNormalization] = k_instance_norm, [RLX_OP_LayerNormalization] = k_layer_norm,
    [RLX_OP_RMSNormalization] = k_rms_norm, [RLX_OP_GroupNormalization] = k_group_norm, [RLX_OP_LpNormalization] = k_lp_norm,
    [RLX_OP_MeanVarianceNormalization] = k_mvn, [RLX_OP_LRN] = k_lrn, [RLX_OP_Einsum] = k_einsum,
};
