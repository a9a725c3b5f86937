/* CPU kernels of Gemm, MatMul and the Softmax family.
 *
 * Gemm and MatMul: the reference computes in double (float dtypes) or in
 * wrapping 64-bit integers (integer dtypes) with a plain triple loop; for f32,
 * when k->reference is false, rlx_cpu_sgemm does the work, shared over the
 * worker pool (cpu_sgemm.h) (batched MatMul: one matrix per task when
 * there are at least as many matrices as threads).
 * Semantics: ONNX Gemm-11/13, MatMul-13, Softmax/LogSoftmax/Hardmax-11/13.
 *
 * Fused epilogue (src/ir/ops/act.h, passes/fuse_activation.c): Gemm and
 * MatMul apply the node's activation to each finished element, in f32; a
 * MatMul may carry a third input, a bias of N elements added to every row
 * before the activation. Integer Gemm/MatMul refuse both (the pass never
 * creates them). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_nn.h"
#include "backend/cpu/cpu_sgemm.h"
#include "backend/cpu/cpu_vmath.h"
#include "base/mem.h"
#include "base/parallel.h"
#include "base/tensor.h"
#include "ir/ops/internal_ops.h"
#include "ir/ops/ops.h"
#include "ir/ops/reduce_geom.h"

/* Elements of an integer tensor as int64 (a copy, freed by the caller). */
static rlx_status load_i64(const rlx_cpu_kctx *k, const rlx_tensor *t, int64_t **out) {
    *out = NULL;
    if (!t) return RLX_OK;
    size_t n = rlx_tensor_numel(t), bytes;
    int64_t *p = rlx_mul_ok(n + 1, sizeof *p, &bytes) ? malloc(bytes) : NULL;
    if (!p) return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (%zu-element working copy)", n);
    for (size_t i = 0; i < n; i++) p[i] = rlx_tensor_get_i64(t, i);
    *out = p;
    return RLX_OK;
}

/* ------------------------------------------------------------ Gemm */

typedef struct gemm_dims {
    int64_t m, n, kk;
    bool ta, tb;
    int64_t cs[2]; /* strides of C broadcast to [M, N] (0 where broadcast) */
} gemm_dims;

static double gemm_ref_elem(const double *a, const double *b, const gemm_dims *d, int64_t i, int64_t j) {
    double acc = 0.0;
    for (int64_t q = 0; q < d->kk; q++) {
        double av = d->ta ? a[q * d->m + i] : a[i * d->kk + q];
        double bv = d->tb ? b[j * d->kk + q] : b[q * d->n + j];
        acc += av * bv;
    }
    return acc;
}

static rlx_status gemm_float_ref(rlx_cpu_kctx *k, const gemm_dims *d, double alpha, double beta) {
    rlx_nn_buf io[4], *c = &io[2], *y = &io[3];
    RLX_TRY(rlx_nn_load_io(k, io));
    rlx_act act = rlx_node_act(k->n);
    for (int64_t i = 0; i < d->m; i++)
        for (int64_t j = 0; j < d->n; j++) {
            double v = alpha * gemm_ref_elem(io[0].p, io[1].p, d, i, j);
            if (c->p && beta != 0.0) v += beta * c->p[i * d->cs[0] + j * d->cs[1]]; /* beta 0: C unread */
            y->p[i * d->n + j] = act.kind == RLX_ACT_NONE ? v : (double)rlx_act_apply(&act, (float)v);
        }
    rlx_nn_store(k->out[0], y);
    for (int i = 0; i < 3; i++) rlx_nn_buf_free(&io[i]);
    return RLX_OK;
}

static rlx_status gemm_int_ref(rlx_cpu_kctx *k, const gemm_dims *d, double alpha, double beta) {
    int64_t *a = NULL, *b = NULL, *c = NULL;
    rlx_status st = load_i64(k, k->in[0], &a);
    if (!st) st = load_i64(k, k->in[1], &b);
    if (!st) st = load_i64(k, rlx_nn_in(k, 2), &c);
    if (!st) {
        bool plain = alpha == 1.0 && beta == 1.0;
        for (int64_t i = 0; i < d->m; i++)
            for (int64_t j = 0; j < d->n; j++) {
                uint64_t acc = 0;
                for (int64_t q = 0; q < d->kk; q++) {
                    int64_t av = d->ta ? a[q * d->m + i] : a[i * d->kk + q];
                    int64_t bv = d->tb ? b[j * d->kk + q] : b[q * d->n + j];
                    acc += (uint64_t)av * (uint64_t)bv;
                }
                int64_t cv = c ? c[i * d->cs[0] + j * d->cs[1]] : 0;
                int64_t v = plain ? (int64_t)(acc + (uint64_t)cv)
                                  : (int64_t)(alpha * (double)(int64_t)acc + beta * (double)cv);
                rlx_tensor_set_i64(k->out[0], (size_t)(i * d->n + j), v);
            }
    }
    free(a), free(b), free(c);
    return st;
}

/* Fast path (f32): Y = beta * C (broadcast) then Y = alpha * A' B' + Y. */
static void gemm_f32_blas(rlx_cpu_kctx *k, const gemm_dims *d, float alpha, float beta) {
    /* beta 0: C is not read, as onnxruntime and PyTorch's addmm(beta=0)
     * take it (a NaN or inf in C gave NaN: 0 * NaN); the WGSL Gemm too */
    const rlx_tensor *ct = beta != 0.0f ? rlx_nn_in(k, 2) : NULL;
    float *y = k->out[0]->data;
    if (ct) {
        const float *c = ct->data;
        for (int64_t i = 0; i < d->m; i++)
            for (int64_t j = 0; j < d->n; j++) y[i * d->n + j] = beta * c[i * d->cs[0] + j * d->cs[1]];
    }
    if (d->kk == 0) { /* no products: cblas may skip the alpha scaling of nothing */
        if (!ct) memset(y, 0, (size_t)(d->m * d->n) * sizeof(float));
        rlx_act act = rlx_node_act(k->n);
        rlx_nn_act_f32(&act, y, (size_t)(d->m * d->n));
        return;
    }
    rlx_cpu_sgemm_packref bp = { k->pack, 0, 0 };
    rlx_cpu_sgemm_packed(d->ta, d->tb, (size_t)d->m, (size_t)d->n, (size_t)d->kk, alpha, k->in[0]->data,
                         (size_t)(d->ta ? d->m : d->kk), k->in[1]->data, (size_t)(d->tb ? d->kk : d->n),
                         ct ? 1.0f : 0.0f, y, (size_t)d->n, NULL, k->pack ? &bp : NULL);
    rlx_act act = rlx_node_act(k->n);
    rlx_nn_act_f32(&act, y, (size_t)(d->m * d->n));
}

rlx_status rlx_cpu_nn_gemm(rlx_cpu_kctx *k) {
    const rlx_tensor *a = k->in[0], *b = k->in[1], *c = rlx_nn_in(k, 2);
    if (a->rank != 2 || b->rank != 2)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "A and B must be 2-D (ranks %d and %d)", a->rank, b->rank);
    gemm_dims d;
    d.ta = rlx_param_int(k->n, RLX_A_transA) != 0;
    d.tb = rlx_param_int(k->n, RLX_A_transB) != 0;
    d.m = a->dims[d.ta ? 1 : 0];
    d.kk = a->dims[d.ta ? 0 : 1];
    d.n = b->dims[d.tb ? 0 : 1];
    if (b->dims[d.tb ? 1 : 0] != d.kk)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "inner dimensions differ (%lld and %lld)", (long long)d.kk,
                            (long long)b->dims[d.tb ? 1 : 0]);
    d.cs[0] = d.cs[1] = 0;
    if (c) {
        int64_t want[2] = { d.m, d.n };
        if (c->rank > 2) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "C has rank %d", c->rank);
        for (int i = 0; i < c->rank; i++) {
            int64_t cd = c->dims[i], od = want[2 - c->rank + i];
            if (cd != 1 && cd != od)
                return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "C does not broadcast to [%lld, %lld]",
                                    (long long)d.m, (long long)d.n);
        }
        rlx_broadcast_strides(c->dims, c->rank, 2, d.cs);
    }
    double alpha = rlx_param_float(k->n, RLX_A_alpha), beta = rlx_param_float(k->n, RLX_A_beta);
    if (!rlx_dtype_is_float(a->dtype)) {
        if (rlx_node_act(k->n).kind != RLX_ACT_NONE)
            return rlx_cpu_fail(k, RLX_ERR_UNSUPPORTED, "a fused activation on an integer Gemm");
        return gemm_int_ref(k, &d, alpha, beta);
    }
    if (!k->reference && a->dtype == RLX_DTYPE_F32 && d.m <= RLX_NN_BLAS_MAX && d.n <= RLX_NN_BLAS_MAX &&
        d.kk <= RLX_NN_BLAS_MAX) {
        gemm_f32_blas(k, &d, (float)alpha, (float)beta);
        return RLX_OK;
    }
    return gemm_float_ref(k, &d, alpha, beta);
}

/* ------------------------------------------------------------ MatMul */

typedef struct matmul_dims {
    int64_t m, n, kk;
    int obr;                       /* batch rank of the output */
    int64_t ob[RLX_MAX_RANK];      /* output batch dims */
    int64_t as[RLX_MAX_RANK], bs[RLX_MAX_RANK]; /* batch strides in matrices, 0 where broadcast */
    size_t nb;                     /* number of output matrices */
} matmul_dims;

static rlx_status matmul_dims_of(const rlx_cpu_kctx *k, matmul_dims *d) {
    const rlx_tensor *a = k->in[0], *b = k->in[1];
    int ra = a->rank, rb = b->rank;
    if (ra < 1 || rb < 1) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "operands must have rank >= 1");
    d->m = ra == 1 ? 1 : a->dims[ra - 2];
    d->kk = a->dims[ra - 1];
    d->n = rb == 1 ? 1 : b->dims[rb - 1];
    int64_t kb = rb == 1 ? b->dims[0] : b->dims[rb - 2];
    if (kb != d->kk)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "inner dimensions differ (%lld and %lld)", (long long)d->kk,
                            (long long)kb);
    int abr = ra > 2 ? ra - 2 : 0, bbr = rb > 2 ? rb - 2 : 0;
    d->obr = abr > bbr ? abr : bbr;
    d->nb = 1;
    for (int i = 0; i < d->obr; i++) {
        int ia = i - (d->obr - abr), ib = i - (d->obr - bbr);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "batch dims %lld and %lld do not broadcast",
                                (long long)da, (long long)db);
        d->ob[i] = da == 1 ? db : da;
        d->nb *= (size_t)d->ob[i];
    }
    rlx_broadcast_strides(a->dims, abr, d->obr, d->as);
    rlx_broadcast_strides(b->dims, bbr, d->obr, d->bs);
    return RLX_OK;
}

/* Matrix offsets (in matrices) of output batch bi in A and B. */
static void batch_offsets(const matmul_dims *d, size_t bi, size_t *ao, size_t *bo) {
    size_t oa = 0, ob = 0;
    for (int i = d->obr - 1; i >= 0; i--) {
        size_t idx = bi % (size_t)d->ob[i];
        bi /= (size_t)d->ob[i];
        oa += idx * (size_t)d->as[i];
        ob += idx * (size_t)d->bs[i];
    }
    *ao = oa;
    *bo = ob;
}

static rlx_status matmul_float_ref(rlx_cpu_kctx *k, const matmul_dims *d) {
    rlx_nn_buf io[4], *c = &io[2], *y = &io[3];
    rlx_act act = rlx_node_act(k->n);
    RLX_TRY(rlx_nn_load_io(k, io));
    size_t mk = (size_t)(d->m * d->kk), kn = (size_t)(d->kk * d->n), mn = (size_t)(d->m * d->n);
    for (size_t bi = 0; bi < d->nb; bi++) {
        size_t ao, bo;
        batch_offsets(d, bi, &ao, &bo);
        const double *am = io[0].p + ao * mk, *bm = io[1].p + bo * kn;
        double *ym = y->p + bi * mn;
        for (int64_t i = 0; i < d->m; i++)
            for (int64_t j = 0; j < d->n; j++) {
                double acc = 0.0;
                for (int64_t q = 0; q < d->kk; q++) acc += am[i * d->kk + q] * bm[q * d->n + j];
                if (c->p) acc += c->p[j];
                ym[i * d->n + j] = act.kind == RLX_ACT_NONE ? acc : (double)rlx_act_apply(&act, (float)acc);
            }
    }
    rlx_nn_store(k->out[0], y);
    for (int i = 0; i < 3; i++) rlx_nn_buf_free(&io[i]);
    return RLX_OK;
}

static rlx_status matmul_int_ref(rlx_cpu_kctx *k, const matmul_dims *d) {
    int64_t *a = NULL, *b = NULL;
    rlx_status st = load_i64(k, k->in[0], &a);
    if (!st) st = load_i64(k, k->in[1], &b);
    if (!st) {
        size_t mk = (size_t)(d->m * d->kk), kn = (size_t)(d->kk * d->n), mn = (size_t)(d->m * d->n);
        for (size_t bi = 0; bi < d->nb; bi++) {
            size_t ao, bo;
            batch_offsets(d, bi, &ao, &bo);
            const int64_t *am = a + ao * mk, *bm = b + bo * kn;
            for (int64_t i = 0; i < d->m; i++)
                for (int64_t j = 0; j < d->n; j++) {
                    uint64_t acc = 0;
                    for (int64_t q = 0; q < d->kk; q++) acc += (uint64_t)am[i * d->kk + q] * (uint64_t)bm[q * d->n + j];
                    rlx_tensor_set_i64(k->out[0], bi * mn + (size_t)(i * d->n + j), (int64_t)acc);
                }
        }
    }
    free(a), free(b);
    return st;
}

/* Fast path (f32): one rlx_cpu_sgemm per output matrix, or a single one over
 * all rows of A when B has no batch dims. */
typedef struct mm_epi {
    const float *bias;
    const rlx_act *act;
    float *y;
    size_t n;
} mm_epi;

#if RLX_HAVE_AVX2_BUILD
/* y[j] += bias[j] for j < n, 32 lanes a step: the scalar loop's f32 adds. */
RLX_AVX2 static void add_bias_avx2(float *y, const float *bias, size_t n) {
    size_t j = 0;
    for (; j + 32 <= n; j += 32)
        for (size_t v = 0; v < 32; v += 8)
            _mm256_storeu_ps(y + j + v, _mm256_add_ps(_mm256_loadu_ps(y + j + v), _mm256_loadu_ps(bias + j + v)));
    for (; j + 8 <= n; j += 8) _mm256_storeu_ps(y + j, _mm256_add_ps(_mm256_loadu_ps(y + j), _mm256_loadu_ps(bias + j)));
    for (; j < n; j++) y[j] += bias[j];
}
#endif

static void mm_epi_rows(void *ctx, size_t r0, size_t r1) {
    const mm_epi *e = ctx;
#if RLX_HAVE_AVX2_BUILD
    bool vec = rlx_cpu_has_avx2();
#endif
    for (size_t r = r0; r < r1; r++) {
        float *yr = e->y + r * e->n;
#if RLX_HAVE_AVX2_BUILD
        if (vec) add_bias_avx2(yr, e->bias, e->n);
        else
#endif
            for (size_t j = 0; j < e->n; j++) yr[j] += e->bias[j];
        rlx_nn_act_f32(e->act, yr, e->n); /* inside the region: on this thread */
    }
}

/* The epilogue of the f32 fast path: y = act(y + bias), rows over the
 * worker pool. */
static void matmul_epilogue_f32(rlx_cpu_kctx *k, const matmul_dims *d, float *y) {
    const rlx_tensor *bt = rlx_nn_in(k, 2);
    rlx_act act = rlx_node_act(k->n);
    size_t rows = d->nb * (size_t)d->m, n = (size_t)d->n;
    if (bt) {
        mm_epi e = { bt->data, &act, y, n };
        rlx_parallel_for(rows, 16384 / (n ? n : 1) + 1, mm_epi_rows, &e);
    } else {
        rlx_nn_act_f32(&act, y, rows * n);
    }
}

typedef struct mm_batch {
    const matmul_dims *d;
    const float *a, *b;
    float *y;
    size_t mr, nr, m_blocks, n_blocks; /* each matrix in m_blocks x n_blocks blocks (rlx_cpu_split2d_choose) */
} mm_batch;

/* Tasks (matrix, row block, column block) of a batched product. */
static void mm_blocks(void *ctx, size_t t0, size_t t1) {
    const mm_batch *j = ctx;
    const matmul_dims *d = j->d;
    size_t m = (size_t)d->m, n = (size_t)d->n, kk = (size_t)d->kk, per = j->m_blocks * j->n_blocks;
    for (size_t t = t0; t < t1; t++) {
        size_t bi = t / per, r = t % per, ao, bo, i0, mi, c0, nj;
        batch_offsets(d, bi, &ao, &bo);
        rlx_cpu_block_range(m, j->mr, j->m_blocks, r / j->n_blocks, &i0, &mi);
        rlx_cpu_block_range(n, j->nr, j->n_blocks, r % j->n_blocks, &c0, &nj);
        if (!mi || !nj) continue;
        rlx_cpu_sgemm_serial(false, false, mi, nj, kk, 1.0f, j->a + ao * m * kk + i0 * kk, kk, j->b + bo * kk * n + c0,
                             n, 0.0f, j->y + bi * m * n + i0 * n + c0, n);
    }
}

static void matmul_f32_blas(rlx_cpu_kctx *k, const matmul_dims *d) {
    const float *a = k->in[0]->data, *b = k->in[1]->data;
    float *y = k->out[0]->data;
    size_t mk = (size_t)(d->m * d->kk), kn = (size_t)(d->kk * d->n), mn = (size_t)(d->m * d->n);
    if (d->kk == 0) {
        memset(y, 0, d->nb * mn * sizeof(float));
        matmul_epilogue_f32(k, d, y);
        return;
    }
    bool b_plain = k->in[1]->rank <= 2;
    if (b_plain && (int64_t)d->nb * d->m <= RLX_NN_BLAS_MAX) {
        rlx_cpu_sgemm_packref bp = { k->pack, 0, 0 };
        rlx_cpu_sgemm_packed(false, false, d->nb * (size_t)d->m, (size_t)d->n, (size_t)d->kk, 1.0f, a, (size_t)d->kk,
                             b, (size_t)d->n, 0.0f, y, (size_t)d->n, NULL, k->pack ? &bp : NULL);
        matmul_epilogue_f32(k, d, y);
        return;
    }
    if (rlx_cpu_gemm_policy_get() == RLX_CPU_GEMM_POOL) {
        /* tasks of (matrix, block of rows, block of columns): the blocks
         * split each matrix only where the batch alone cannot keep the
         * threads busy (attention's 12 heads on 16 threads); the same bits
         * on any split (cpu_sgemm.h) */
        mm_batch j = { d, a, b, y, 0, 0, 1, 1 };
        rlx_cpu_sgemm_tile(&j.mr, &j.nr);
        rlx_cpu_split2d_req q = { d->nb, (size_t)d->m, (size_t)d->n, (size_t)d->kk, j.mr, j.nr, 0,
                                  8.0 * (double)d->kk, 8.0 * (double)d->kk, (size_t)rlx_parallel_threads(),
                                  (double)(1 << 18), 0 };
        rlx_cpu_split2d sp = rlx_cpu_split2d_choose(&q);
        j.m_blocks = sp.m_blocks, j.n_blocks = sp.n_blocks;
        size_t tasks = d->nb * sp.m_blocks * sp.n_blocks;
        bool tiny = (double)d->nb * (double)d->m * (double)d->n * (double)d->kk < q.min_work;
        rlx_parallel_for(tasks, tiny ? tasks : 1, mm_blocks, &j); /* tiny: on the caller */
    } else {
        for (size_t bi = 0; bi < d->nb; bi++) {
            size_t ao, bo;
            batch_offsets(d, bi, &ao, &bo);
            rlx_cpu_sgemm(false, false, (size_t)d->m, (size_t)d->n, (size_t)d->kk, 1.0f, a + ao * mk, (size_t)d->kk,
                          b + bo * kn, (size_t)d->n, 0.0f, y + bi * mn, (size_t)d->n);
        }
    }
    matmul_epilogue_f32(k, d, y);
}

rlx_status rlx_cpu_nn_matmul(rlx_cpu_kctx *k) {
    matmul_dims d;
    RLX_TRY(matmul_dims_of(k, &d));
    if (rlx_tensor_numel(k->out[0]) != d.nb * (size_t)(d.m * d.n))
        return rlx_cpu_fail(k, RLX_ERR_INTERNAL, "output has %zu elements, expected %zu", rlx_tensor_numel(k->out[0]),
                            d.nb * (size_t)(d.m * d.n));
    const rlx_tensor *bias = rlx_nn_in(k, 2);
    bool fused = bias || rlx_node_act(k->n).kind != RLX_ACT_NONE;
    if (fused && !rlx_dtype_is_float(k->in[0]->dtype))
        return rlx_cpu_fail(k, RLX_ERR_UNSUPPORTED, "a fused bias or activation on an integer MatMul");
    if (bias && (bias->dtype != k->in[0]->dtype || bias->rank != 1 || bias->dims[0] != d.n || k->in[1]->rank < 2))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "the fused bias must be [N] = [%lld] of the operands' dtype",
                            (long long)d.n);
    if (!rlx_dtype_is_float(k->in[0]->dtype)) return matmul_int_ref(k, &d);
    if (!k->reference && k->in[0]->dtype == RLX_DTYPE_F32 && d.m <= RLX_NN_BLAS_MAX && d.n <= RLX_NN_BLAS_MAX &&
        d.kk <= RLX_NN_BLAS_MAX) {
        matmul_f32_blas(k, &d);
        return RLX_OK;
    }
    return matmul_float_ref(k, &d);
}

/* ------------------------------------------------------------ packed weights */

/* Gemm / MatMul: a constant f32 B of rank 2 (a layer's weights), packed
 * as op(B) [K, N]. */
static rlx_status gemm_prepare(const rlx_graph *g, const rlx_node *n, const rlx_tensor *const *in, bool tb,
                               rlx_cpu_sgemm_pack *out) {
    if (!rlx_nn_const_operand(g, n, in)) return RLX_OK;
    const rlx_tensor *b = in[1];
    if (b->dtype != RLX_DTYPE_F32 || b->rank != 2 ||
        rlx_cpu_gemm_policy_get() != RLX_CPU_GEMM_POOL || b->dims[0] < 1 || b->dims[1] < 1 ||
        b->dims[0] > RLX_NN_BLAS_MAX || b->dims[1] > RLX_NN_BLAS_MAX)
        return RLX_OK;
    size_t r = (size_t)b->dims[0], c = (size_t)b->dims[1];
    return rlx_cpu_sgemm_pack_b(tb, tb ? c : r, tb ? r : c, b->data, c, out);
}

/* Gemm and MatMul read a packed B through the pack alone on their f32
 * fast path (gemm_f32_blas, matmul_f32_blas's one product of a 2-D B;
 * rlx_cpu_sgemm_packed: every route of the "pool" policy takes a usable
 * pack), which these conditions select; the rest is the reference. */
static bool gemm_pack_serves(const rlx_node *n, const rlx_tensor *const *in, const rlx_cpu_sgemm_pack *pk) {
    const rlx_tensor *a = in[0], *b = in[1];
    if (!pk->data || !pk->is_b || !a || !b || a->dtype != RLX_DTYPE_F32 || b->rank != 2 || a->rank < 1 ||
        (n->op == RLX_OP_Gemm && a->rank != 2))
        return false;
    bool ta = n->op == RLX_OP_Gemm && rlx_param_int(n, RLX_A_transA) != 0;
    int64_t m = 1, kk = a->dims[a->rank - 1];
    if (n->op == RLX_OP_Gemm) m = a->dims[ta ? 1 : 0], kk = a->dims[ta ? 0 : 1];
    else
        for (int i = 0; i + 1 < a->rank; i++) m *= a->dims[i]; /* MatMul: the batch of A's rows, one product */
    int64_t nn = pk->lanes;
    return m <= RLX_NN_BLAS_MAX && nn <= RLX_NN_BLAS_MAX && kk <= RLX_NN_BLAS_MAX && (size_t)kk == pk->k;
}

unsigned rlx_cpu_pack_state(void) {
    size_t mr, nr;
    rlx_cpu_sgemm_tile(&mr, &nr);
    return (unsigned)rlx_cpu_sgemm_kernel_get() | (unsigned)rlx_cpu_gemm_policy_get() << 2 |
           (unsigned)rlx_nn_pwt_forced() << 4 | (unsigned)rlx_nn_pw_forced() << 6 | (unsigned)mr << 8 |
           (unsigned)nr << 16;
}

bool rlx_cpu_pack_serves(const rlx_node *n, const rlx_tensor *const *in, const rlx_cpu_sgemm_pack *pk) {
    if (!pk || n->n_in < 2 || !in[0] || !in[1] || rlx_cpu_gemm_policy_get() != RLX_CPU_GEMM_POOL) return false;
    if (n->op == RLX_OP_Conv) return rlx_nn_conv_pack_serves(n, in, pk);
    if (n->op == RLX_OP_Gemm || n->op == RLX_OP_MatMul) return gemm_pack_serves(n, in, pk);
    return false;
}

bool rlx_nn_const_operand(const rlx_graph *g, const rlx_node *n, const rlx_tensor *const *in) {
    if (n->n_in < 2 || !in[0] || !in[1] || !in[1]->data) return false;
    if (g && (n->in[0] < 0 || n->in[1] < 0 || !g->values[n->in[1]].konst || g->values[n->in[0]].dtype != RLX_DTYPE_F32))
        return false;
    return g || in[0]->dtype == RLX_DTYPE_F32;
}

rlx_status rlx_cpu_prepare_node(const rlx_graph *g, const rlx_node *n, const rlx_tensor *const *in,
                                rlx_cpu_sgemm_pack *out) {
    return rlx_cpu_prepare_node_with(g, n, in, 2, out);
}

/* The elementwise program node n carries (a FusedElementwise's, or the QDQ
 * chain of a QLinearConv / QLinearMatMul), read once into out->ew; a
 * program that does not read is left to the run, which reports it. */
static rlx_status ew_prepare(const rlx_node *n, rlx_cpu_sgemm_pack *out) {
    bool chain = (n->op == RLX_OP_QLinearConv || n->op == RLX_OP_QLinearMatMul) && n->n_in > RLX_QEPI_FIRST;
    if (n->op != RLX_OP_rlx_FusedElementwise && !chain) return RLX_OK;
    rlx_ew_prog *p = malloc(sizeof *p);
    if (!p) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    if ((chain ? rlx_ew_prog_read_at(n, RLX_QEPI_PREFIX, RLX_QEPI_FIRST, p) : rlx_ew_prog_read(n, p)) != RLX_OK) {
        rlx_clear_error();
        free(p);
        return RLX_OK;
    }
    out->ew = p;
    return RLX_OK;
}

static rlx_status prepare_op(const rlx_graph *g, const rlx_node *n, const rlx_tensor *const *in, int winograd,
                             rlx_cpu_sgemm_pack *out) {
    if (n->op == RLX_OP_Conv) return rlx_nn_conv_prepare(g, n, in, winograd, out);
    if (n->op == RLX_OP_Gemm) return gemm_prepare(g, n, in, rlx_param_int(n, RLX_A_transB) != 0, out);
    if (n->op == RLX_OP_MatMul) return gemm_prepare(g, n, in, false, out);
    if (n->op == RLX_OP_MatMulInteger || n->op == RLX_OP_QLinearMatMul || n->op == RLX_OP_QLinearConv ||
        n->op == RLX_OP_ConvInteger)
        return rlx_cpu_quant_prepare(g, n, in, out);
    if (n->op == RLX_OP_LSTM || n->op == RLX_OP_GRU || n->op == RLX_OP_RNN) return rlx_cpu_rnn_prepare(g, n, in, out);
    return RLX_OK;
}

rlx_status rlx_cpu_prepare_node_with(const rlx_graph *g, const rlx_node *n, const rlx_tensor *const *in,
                                     int winograd, rlx_cpu_sgemm_pack *out) {
    memset(out, 0, sizeof *out);
    rlx_status st = prepare_op(g, n, in, winograd, out);
    if (st == RLX_OK) st = ew_prepare(n, out);
    if (st != RLX_OK) rlx_cpu_sgemm_pack_free(out);
    return st;
}

/* ------------------------------------------------------------ Softmax family */

typedef enum sm_kind { SM_SOFTMAX, SM_LOGSOFTMAX, SM_HARDMAX } sm_kind;

/* Before version 13 the input is viewed as 2-D [prod(dims[:axis]),
 * prod(dims[axis:])] and each row is normalised; from 13 each line along
 * `axis` is. Both are (outer, len, inner) blocks with stride `inner`. */
static rlx_status softmax_run(rlx_cpu_kctx *k, sm_kind kind) {
    const rlx_tensor *xt = k->in[0];
    int v = k->n->version;
    int64_t axis_attr = rlx_softmax_axis(k->n);
    int ax;
    if (!rlx_norm_axis(axis_attr, xt->rank, &ax))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d", (long long)axis_attr,
                            xt->rank);
    size_t outer = 1, len = 1, inner = 1;
    for (int i = 0; i < xt->rank; i++) {
        size_t dd = (size_t)xt->dims[i];
        if (i < ax) outer *= dd;
        else if (i == ax || v < 13) len *= dd;
        else inner *= dd;
    }
    rlx_nn_buf x, y;
    RLX_TRY(rlx_nn_load(k, xt, &x));
    rlx_status st = rlx_nn_out(k, k->out[0], &y);
    if (st) {
        rlx_nn_buf_free(&x);
        return st;
    }
    for (size_t o = 0; o < outer; o++)
        for (size_t in = 0; in < inner; in++) {
            const double *xl = x.p + o * len * inner + in;
            double *yl = y.p + o * len * inner + in;
            if (len == 0) continue;
            double m = xl[0];
            size_t arg = 0;
            for (size_t j = 1; j < len; j++)
                if (xl[j * inner] > m) m = xl[j * inner], arg = j;
            if (kind == SM_HARDMAX) {
                for (size_t j = 0; j < len; j++) yl[j * inner] = j == arg ? 1.0 : 0.0;
                continue;
            }
            double sum = 0.0;
            for (size_t j = 0; j < len; j++) sum += exp(xl[j * inner] - m);
            if (kind == SM_SOFTMAX) {
                for (size_t j = 0; j < len; j++) yl[j * inner] = exp(xl[j * inner] - m) / sum;
            } else {
                double ls = log(sum);
                for (size_t j = 0; j < len; j++) yl[j * inner] = xl[j * inner] - m - ls;
            }
        }
    rlx_nn_store(k->out[0], &y);
    rlx_nn_buf_free(&x);
    return RLX_OK;
}

rlx_status rlx_cpu_nn_softmax(rlx_cpu_kctx *k) { return softmax_run(k, SM_SOFTMAX); }
rlx_status rlx_cpu_nn_logsoftmax(rlx_cpu_kctx *k) { return softmax_run(k, SM_LOGSOFTMAX); }
rlx_status rlx_cpu_nn_hardmax(rlx_cpu_kctx *k) { return softmax_run(k, SM_HARDMAX); }
