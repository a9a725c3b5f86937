/* CPU kernels of the internal ops (domain "rlx", contracts in
 * src/ir/ops/internal_ops.h): the kernel table, AddLayerNormalization and
 * Attention. FusedElementwise is in cpu_fused_ew.c.
 *
 * AddLayerNormalization computes exactly what the unfused pair computes:
 * the sum rounded to the dtype (in f32 for f32), then the normalisation of
 * the row as LayerNormalization's kernel does for the same operands: its f32
 * fast path (rlx_cpu_rows_layernorm, cpu_rows.c) where that one applies
 * (f32, Scale and B one value per column, AVX2), else the statistics and
 * the normalisation in double per row, as cpu_reduce.c's reference. One
 * pass over the row reads A and B; the row is then in cache.
 * Rows are shared out over the worker pool (base/parallel.h).
 *
 * Attention: operands are read through the layout (rlx_attn_layout: the
 * strides of absorbed Transposes). The reference computes each query row in
 * double (scores, softmax, weighted sum of V). The fast path (f32, when
 * every matrix has a unit stride on one axis) does per batch and block of
 * query rows (one task of the worker pool each) what the unfused graph
 * does: scores = alpha Q K^T with rlx_cpu_sgemm_serial (cpu_sgemm.h; alpha
 * = scale, or 1 / scale rounded to f32 for scale_div), the mask added in
 * f32, the softmax of each row by cpu_rows.c's vector kernel (exp within
 * 2^-22 relative, sums in double; the double loop without AVX2), then P V
 * with rlx_cpu_sgemm_serial into the output's rows; the scores live only in
 * the task's scratch (no allocation in steady-state runs). All products
 * accumulate in f32: against the reference, |fast - ref| stays within
 * 2e-5 of max |V| plus 1e-5 |ref| on random O(1) operands with D up to 128
 * (tests/test_cpu_internal.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_nn.h"
#include "backend/cpu/cpu_rows.h"
#include "backend/cpu/cpu_vmath.h"
#include "backend/cpu/cpu_sgemm.h"
#include "base/mem.h"
#include "base/parallel.h"
#include "ir/ops/internal_ops.h"
#include "ir/ops/ops.h"

/* ------------------------------------------------------------ shared */

/* p fits x as an AddLayerNormalization operand (rlx_add_ln_fits, ax 0). */
static bool suffix_of(const rlx_tensor *p, const rlx_tensor *x) { return rlx_add_ln_fits(p->dims, p->rank, x->dims, x->rank, 0); }

/* ------------------------------------------------------------ AddLayerNormalization */

typedef struct aln_job {
    const float *a, *b, *s, *c;
    float *y;
    size_t len, nb, ns, nc;
    double eps;
    bool rows_fast; /* normalise with rlx_cpu_rows_layernorm */
} aln_job;

#if RLX_HAVE_AVX2_BUILD
/* y[i] = a[i] + b[i] for i < n, in f32 (the unfused Add's bits); y may be
 * a (in place). AddLayerNormalization's sum and Attention's mask. */
RLX_AVX2 static void add_f32_avx2(const float *a, const float *b, float *y, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    for (; i < n; i++) y[i] = a[i] + b[i];
}
#endif

/* The fast rows [r0, r1) (rows_fast, so AVX2): the sum into y in f32 with
 * B read in runs (B is a trailing run of A's dims, rlx_add_ln_fits: it
 * spans whole rows, nb % len == 0, or divides one, len % nb == 0), then
 * rlx_cpu_rows_layernorm on y in place. */
static void aln_rows_fast(const aln_job *j, size_t r0, size_t r1) {
    size_t len = j->len;
#if RLX_HAVE_AVX2_BUILD
    for (size_t r = r0; r < r1; r++) {
        size_t base = r * len;
        if (j->nb % len == 0) {
            add_f32_avx2(j->a + base, j->b + base % j->nb, j->y + base, len);
        } else if (len % j->nb == 0) {
            for (size_t c = 0; c < len; c += j->nb) add_f32_avx2(j->a + base + c, j->b, j->y + base + c, j->nb);
        } else {
            for (size_t i = 0; i < len; i++) j->y[base + i] = j->a[base + i] + j->b[(base + i) % j->nb];
        }
    }
#endif
    /* in place: a row is read before its elements are written */
    rlx_cpu_rows_layernorm(j->y + r0 * len, j->s, j->c, j->y + r0 * len, NULL, NULL, r1 - r0, len, j->eps);
}

/* f32 rows [r0, r1): the sum into y, the statistics in double, y in place. */
static void aln_rows_f32(void *ctx, size_t r0, size_t r1) {
    const aln_job *j = ctx;
    size_t len = j->len;
    if (j->rows_fast) {
        aln_rows_fast(j, r0, r1);
        return;
    }
    for (size_t r = r0; r < r1; r++) {
        size_t base = r * len;
        float *yr = j->y + base;
        double s = 0;
        for (size_t i = 0; i < len; i++) {
            float v = j->a[base + i] + j->b[(base + i) % j->nb];
            yr[i] = v;
            s += v;
        }
        double m = s / (double)len, q = 0;
        for (size_t i = 0; i < len; i++) {
            double d = yr[i] - m;
            q += d * d;
        }
        double inv = 1.0 / sqrt(q / (double)len + j->eps);
        for (size_t i = 0; i < len; i++) {
            double v = (yr[i] - m) * inv * j->s[i % j->ns];
            if (j->c) v += j->c[i % j->nc];
            yr[i] = (float)v;
        }
    }
}

static rlx_status k_add_layernorm(rlx_cpu_kctx *k) {
    const rlx_tensor *a = k->in[0], *b = k->in[1], *sc = k->in[2];
    const rlx_tensor *bi = k->n->n_in > 3 ? k->in[3] : NULL;
    rlx_tensor *y = k->out[0];
    int ax;
    int64_t axis = rlx_param_int(k->n, RLX_A_axis);
    if (!rlx_norm_axis(axis, a->rank, &ax))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d", (long long)axis,
                            a->rank);
    size_t rows = rlx_dims_span(a->dims, 0, ax), len = rlx_dims_span(a->dims, ax, a->rank);
    size_t nb = rlx_tensor_numel(b), ns = rlx_tensor_numel(sc), nbi = bi ? rlx_tensor_numel(bi) : 1;
    if (rows * len == 0 && rlx_tensor_numel(y) == 0 && b->dtype == a->dtype && y->dtype == a->dtype)
        return RLX_OK; /* no rows (a zero batch or sequence length): nothing to normalise */
    if (!suffix_of(b, a) || !suffix_of(sc, a) || (bi && !suffix_of(bi, a)) || ns > len || nbi > len || !nb ||
        !ns || !nbi || b->dtype != a->dtype || sc->dtype != a->dtype || (bi && bi->dtype != a->dtype) ||
        y->dtype != a->dtype || rlx_tensor_numel(y) != rows * len)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "operands do not have the shapes and dtypes of the contract");
    double eps = rlx_param_float(k->n, RLX_A_epsilon);
    if (a->dtype == RLX_DTYPE_F32) {
        /* the f32 fast path of LayerNormalization applies to the unfused pair */
        bool rows_fast = !k->reference && ns == len && (!bi || nbi == len) && len > 0 && rlx_cpu_has_avx2();
        aln_job j = { a->data, b->data, sc->data, bi ? bi->data : NULL, y->data, len, nb, ns, nbi, eps, rows_fast };
        rlx_parallel_for(rows, RLX_CPU_ROWS_GRAIN / (len ? len : 1) + 1, aln_rows_f32, &j); /* rows are independent */
        return RLX_OK;
    }
    /* other float dtypes: y rounds the sum to the dtype */
    for (size_t r = 0; r < rows; r++) {
        size_t base = r * len;
        double s = 0;
        for (size_t j = 0; j < len; j++) {
            size_t e = base + j;
            rlx_tensor_set_f64(y, e, rlx_tensor_get_f64(a, e) + rlx_tensor_get_f64(b, e % nb));
            s += rlx_tensor_get_f64(y, e);
        }
        double m = s / (double)len, q = 0;
        for (size_t j = 0; j < len; j++) {
            double d = rlx_tensor_get_f64(y, base + j) - m;
            q += d * d;
        }
        double inv = 1.0 / sqrt(q / (double)len + eps);
        for (size_t j = 0; j < len; j++) {
            double v = (rlx_tensor_get_f64(y, base + j) - m) * inv * rlx_tensor_get_f64(sc, j % ns);
            if (bi) v += rlx_tensor_get_f64(bi, j % nbi);
            rlx_tensor_set_f64(y, base + j, v);
        }
    }
    return RLX_OK;
}

/* ------------------------------------------------------------ Attention */

typedef struct attn_geom {
    rlx_attn_layout l;
    int r;
    size_t nb, sq, sk, d, dv;      /* batches, query rows, keys, depth, value depth */
    int64_t b_rs, b_cs;            /* K as the [D, Sk] factor of the scores: row and column strides */
    bool div;
    float scale;
    int64_t ms[RLX_MAX_RANK];      /* mask broadcast strides over [b.., Sq, Sk] */
    const rlx_tensor *mask;
} attn_geom;

static rlx_status attn_resolve(rlx_cpu_kctx *k, attn_geom *g) {
    const rlx_tensor *q = k->in[0], *kk = k->in[1], *v = k->in[2];
    const rlx_tensor *m = k->n->n_in > 3 ? k->in[3] : NULL;
    rlx_tensor *y = k->out[0];
    memset(g, 0, sizeof *g);
    int r = q->rank;
    if (r < 2 || kk->rank != r || v->rank != r || y->rank != r || q->dtype != RLX_DTYPE_F32 ||
        kk->dtype != RLX_DTYPE_F32 || v->dtype != RLX_DTYPE_F32 || y->dtype != RLX_DTYPE_F32 ||
        (m && m->dtype != RLX_DTYPE_F32))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "Q, K, V (and Mask) must be f32 of one rank >= 2");
    RLX_TRY(rlx_attn_layout_of(k->n, r, q->dims, kk->dims, v->dims, &g->l));
    const rlx_attn_layout *l = &g->l;
    for (int i = 0; i < r; i++)
        if (y->dims[i] != l->y_phys[i])
            return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "the output does not have the layout's shape");
    g->r = r;
    g->div = rlx_param_int(k->n, RLX_A_scale_div) != 0;
    g->scale = rlx_param_float(k->n, RLX_A_scale);
    g->nb = rlx_dims_span(l->qd, 0, r - 2);
    g->sq = (size_t)l->qd[r - 2];
    g->d = (size_t)l->qd[r - 1];
    g->sk = (size_t)l->kd[l->kt ? r - 1 : r - 2];
    g->dv = (size_t)l->vd[r - 1];
    g->b_rs = l->kt ? l->ks[r - 2] : l->ks[r - 1];
    g->b_cs = l->kt ? l->ks[r - 1] : l->ks[r - 2];
    if (m) {
        int64_t sd[RLX_MAX_RANK];
        for (int i = 0; i < r; i++) sd[i] = l->qd[i];
        sd[r - 1] = (int64_t)g->sk;
        bool ok = m->rank <= r;
        for (int i = 0; ok && i < m->rank; i++) {
            int64_t md = m->dims[i], want = sd[r - m->rank + i];
            ok = md == 1 || md == want;
        }
        if (!ok) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "Mask does not broadcast to the scores");
        rlx_broadcast_strides(m->dims, m->rank, r, g->ms);
    }
    g->mask = m;
    return RLX_OK;
}

/* Element offsets of batch bi in Q, K, V, Y and the mask. */
static void attn_bases(const attn_geom *g, size_t bi, int64_t *o) {
    const rlx_attn_layout *l = &g->l;
    memset(o, 0, 5 * sizeof *o);
    for (int i = g->r - 3; i >= 0; i--) {
        int64_t c = (int64_t)(bi % (size_t)l->qd[i]);
        bi /= (size_t)l->qd[i];
        o[0] += c * l->qs[i], o[1] += c * l->ks[i], o[2] += c * l->vs[i], o[3] += c * l->ys[i], o[4] += c * g->ms[i];
    }
}

static rlx_status attn_reference(rlx_cpu_kctx *k, const attn_geom *g) {
    const rlx_attn_layout *l = &g->l;
    const float *q = k->in[0]->data, *kk = k->in[1]->data, *v = k->in[2]->data;
    const float *m = g->mask ? g->mask->data : NULL;
    float *y = k->out[0]->data;
    int r = g->r;
    double *s = malloc((g->sk + 1) * sizeof *s), *acc = malloc((g->dv + 1) * sizeof *acc);
    if (!s || !acc) {
        free(s), free(acc);
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t bi = 0; bi < g->nb; bi++) {
        int64_t o[5];
        attn_bases(g, bi, o);
        for (size_t i = 0; i < g->sq; i++) {
            double mx = -INFINITY;
            for (size_t j = 0; j < g->sk; j++) {
                double dot = 0;
                for (size_t t = 0; t < g->d; t++)
                    dot += (double)q[o[0] + (int64_t)i * l->qs[r - 2] + (int64_t)t * l->qs[r - 1]] *
                           kk[o[1] + (int64_t)t * g->b_rs + (int64_t)j * g->b_cs];
                dot = g->div ? dot / g->scale : dot * g->scale;
                if (m) dot += m[o[4] + (int64_t)i * g->ms[r - 2] + (int64_t)j * g->ms[r - 1]];
                s[j] = dot;
                if (dot > mx) mx = dot;
            }
            double sum = 0;
            for (size_t j = 0; j < g->sk; j++) sum += (s[j] = exp(s[j] - mx));
            for (size_t t = 0; t < g->dv; t++) acc[t] = 0;
            for (size_t j = 0; j < g->sk; j++)
                for (size_t t = 0; t < g->dv; t++)
                    acc[t] += s[j] / sum * v[o[2] + (int64_t)j * l->vs[r - 2] + (int64_t)t * l->vs[r - 1]];
            for (size_t t = 0; t < g->dv; t++)
                y[o[3] + (int64_t)i * l->ys[r - 2] + (int64_t)t * l->ys[r - 1]] = (float)acc[t];
        }
    }
    free(s), free(acc);
    return RLX_OK;
}

/* A rows x cols factor with row stride rs and column stride cs as a cblas
 * row-major operand: stored as is (NoTrans, ld = rs) or transposed (Trans,
 * ld = cs); false when neither stride is 1. */
static bool blas_operand(int64_t rs, int64_t cs, size_t rows, size_t cols, bool *trans, int *ld) {
    int64_t big = 2147483647LL;
    if ((cs == 1 || cols == 1) && rs >= (int64_t)cols && rs <= big) {
        *trans = false;
        *ld = (int)(rs > 0 ? rs : 1);
        return true;
    }
    if ((rs == 1 || rows == 1) && cs >= (int64_t)rows && cs <= big) {
        *trans = true;
        *ld = (int)(cs > 0 ? cs : 1);
        return true;
    }
    return false;
}

size_t rlx_cpu_attention_rows(size_t nb, size_t sq, size_t sk, size_t d, size_t dv, size_t threads) {
    size_t mr, nr;
    rlx_cpu_sgemm_tile(&mr, &nr);
    if (!sq || !sk) return sq;
    rlx_cpu_split2d_req q = { nb, sq, sk, d + dv, mr, sk, 0, 4.0 * (double)sk, 8.0 * (double)(d + dv), threads,
                              (double)(1 << 18), 0 };
    rlx_cpu_split2d sp = rlx_cpu_split2d_choose(&q);
    size_t br = (sq + sp.m_blocks - 1) / sp.m_blocks, cap = ((size_t)1 << 18) / sk;
    br = (br + mr - 1) / mr * mr; /* whole tiles, every block but the last of one size */
    if (cap < 16) cap = 16;
    if (br > cap) br = cap;
    return br > sq ? sq : br;
}

/* true when the fast path can take this layout */
static bool attn_fast_ok(const attn_geom *g, bool *qt, int *qld, bool *bt, int *bld, bool *vt, int *vld, int *yld) {
    const rlx_attn_layout *l = &g->l;
    int r = g->r;
    bool yt;
    return blas_operand(l->qs[r - 2], l->qs[r - 1], g->sq, g->d, qt, qld) &&
           blas_operand(g->b_rs, g->b_cs, g->d, g->sk, bt, bld) &&
           blas_operand(l->vs[r - 2], l->vs[r - 1], g->sk, g->dv, vt, vld) &&
           blas_operand(l->ys[r - 2], l->ys[r - 1], g->sq, g->dv, &yt, yld) && !yt;
}

typedef struct attn_job {
    const attn_geom *g;
    const float *q, *kk, *v, *m;
    float *y;
    int qld, bld, vld, yld;
    bool qt, bt, vt;
    size_t br, n_blocks; /* query rows per task, tasks per batch */
    float alpha;         /* the scores' factor: scale, or 1 / scale */
} attn_job;

/* Adds mask row mr (column stride msk) to the n scores of row. */
static void attn_add_mask(float *row, const float *mr, int64_t msk, size_t n) {
#if RLX_HAVE_AVX2_BUILD
    if (msk == 1 && rlx_cpu_has_avx2()) {
        add_f32_avx2(row, mr, row, n);
        return;
    }
#endif
    if (msk == 1) {
        for (size_t c = 0; c < n; c++) row[c] += mr[c];
    } else if (msk == 0) {
        float v = mr[0];
        for (size_t c = 0; c < n; c++) row[c] += v;
    } else {
        for (size_t c = 0; c < n; c++) row[c] += mr[(int64_t)c * msk];
    }
}

/* Task: batch item / n_blocks, its block of query rows item % n_blocks.
 * scratch: br x sk floats of scores, then sk doubles of exponentials (the
 * softmax without AVX2). The scale rides on the first product (alpha =
 * scale, or 1 / scale in f32 for scale_div), the mask is added in f32, the
 * rows' softmax is cpu_rows.c's vector one where the CPU has AVX2. */
static void attn_block(void *ctx, size_t item, float *scratch) {
    const attn_job *j = ctx;
    const attn_geom *g = j->g;
    const rlx_attn_layout *l = &g->l;
    int r = g->r;
    size_t bi = item / j->n_blocks, i0 = item % j->n_blocks * j->br;
    size_t nr = g->sq - i0 < j->br ? g->sq - i0 : j->br;
    float *s = scratch;
    double *e = (double *)(void *)(scratch + j->br * g->sk + (j->br * g->sk) % 2); /* 8-byte aligned */
    int64_t o[5], msq = g->mask ? g->ms[r - 2] : 0, msk = g->mask ? g->ms[r - 1] : 0;
    attn_bases(g, bi, o);
    if (g->d == 0) {
        memset(s, 0, nr * g->sk * sizeof *s);
    } else {
        rlx_cpu_sgemm_serial(j->qt, j->bt, nr, g->sk, g->d, j->alpha, j->q + o[0] + (int64_t)i0 * l->qs[r - 2],
                             (size_t)j->qld, j->kk + o[1], (size_t)j->bld, 0.0f, s, g->sk);
    }
    if (j->m)
        for (size_t i = 0; i < nr; i++)
            attn_add_mask(s + i * g->sk, j->m + o[4] + (int64_t)(i0 + i) * msq, msk, g->sk);
    if (!rlx_cpu_rows_softmax_serial(s, s, nr, g->sk)) {
        for (size_t i = 0; i < nr; i++) {
            float *row = s + i * g->sk;
            double mx = -INFINITY;
            for (size_t c = 0; c < g->sk; c++)
                if (row[c] > mx) mx = row[c];
            double sum = 0;
            for (size_t c = 0; c < g->sk; c++) sum += (e[c] = exp((double)row[c] - mx));
            for (size_t c = 0; c < g->sk; c++) row[c] = (float)(e[c] / sum);
        }
    }
    float *yb = j->y + o[3] + (int64_t)i0 * l->ys[r - 2];
    if (g->dv)
        rlx_cpu_sgemm_serial(false, j->vt, nr, g->dv, g->sk, 1.0f, s, g->sk, j->v + o[2], (size_t)j->vld, 0.0f, yb,
                             (size_t)j->yld);
}

static rlx_status attn_fast(rlx_cpu_kctx *k, const attn_geom *g) {
    attn_job j;
    memset(&j, 0, sizeof j);
    j.g = g;
    j.q = k->in[0]->data, j.kk = k->in[1]->data, j.v = k->in[2]->data;
    j.m = g->mask ? g->mask->data : NULL;
    j.y = k->out[0]->data;
    j.alpha = g->div ? 1.0f / g->scale : g->scale;
    attn_fast_ok(g, &j.qt, &j.qld, &j.bt, &j.bld, &j.vt, &j.vld, &j.yld);
    size_t br = rlx_cpu_attention_rows(g->nb, g->sq, g->sk, g->d, g->dv, (size_t)rlx_parallel_threads());
    j.br = br;
    j.n_blocks = (g->sq + br - 1) / br;
    size_t n_s, slot;
    if (!rlx_mul_ok(br, g->sk, &n_s) || !rlx_mul_ok(g->sk, 3, &slot) || (slot += n_s + 1) < n_s)
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "scores block %zu x %zu too large", br, g->sk);
    slot += slot % 2; /* every slot's scratch 8-byte aligned, like the first: the doubles in it */
    return rlx_nn_run_items(k, g->nb * j.n_blocks, slot, attn_block, &j);
}

static rlx_status k_attention_f32(rlx_cpu_kctx *k) {
    attn_geom g;
    RLX_TRY(attn_resolve(k, &g));
    if (g.nb * g.sq * g.dv == 0) return RLX_OK;
    if (g.sk == 0) { /* no keys: the products with V are empty sums */
        memset(k->out[0]->data, 0, g.nb * g.sq * g.dv * sizeof(float));
        return RLX_OK;
    }
    const int64_t big = 2147483647LL;
    bool qt, bt, vt;
    int qld, bld, vld, yld;
    bool fits = (int64_t)g.sq <= big && (int64_t)g.sk <= big && (int64_t)g.d <= big && (int64_t)g.dv <= big &&
                attn_fast_ok(&g, &qt, &qld, &bt, &bld, &vt, &vld, &yld);
    if (k->reference || !fits) return attn_reference(k, &g);
    return attn_fast(k, &g);
}

/* f16 operands: widened to f32 copies (same dims and layout), computed as
 * f32, the result rounded once to binary16 (the GPU's rounding policy:
 * scores and probabilities are never rounded to f16). */
static rlx_status k_attention(rlx_cpu_kctx *k) {
    if (k->in[0]->dtype != RLX_DTYPE_F16) return k_attention_f32(k);
    int n_in = k->n->n_in > 3 && k->in[3] ? 4 : 3;
    rlx_tensor *w[5] = { NULL };
    const rlx_tensor *src[5] = { k->in[0], k->in[1], k->in[2], n_in > 3 ? k->in[3] : NULL, k->out[0] };
    rlx_status st = RLX_OK;
    for (int i = 0; i < 5 && !st; i++) {
        if (!src[i]) continue;
        if (src[i]->dtype != RLX_DTYPE_F16) {
            st = rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "Q, K, V (and Mask) must be of one type (f32 or f16)");
            break;
        }
        st = rlx_tensor_create(RLX_DTYPE_F32, src[i]->dims, src[i]->rank, &w[i]);
        if (st || i == 4) continue;
        size_t n = rlx_tensor_numel(src[i]);
        const uint16_t *h = src[i]->data;
        float *f = w[i]->data;
        for (size_t e = 0; e < n; e++) f[e] = rlx_f16_to_f32(h[e]);
    }
    if (!st) {
        const rlx_tensor *in[4] = { w[0], w[1], w[2], w[3] };
        rlx_tensor *out[1] = { w[4] };
        rlx_cpu_kctx k32 = *k;
        k32.in = in;
        k32.out = out;
        st = k_attention_f32(&k32);
    }
    if (!st) {
        size_t n = rlx_tensor_numel(k->out[0]);
        const float *f = w[4]->data;
        uint16_t *h = k->out[0]->data;
        for (size_t e = 0; e < n; e++) h[e] = rlx_f32_to_f16(f[e]);
    }
    for (int i = 0; i < 5; i++) rlx_tensor_destroy(w[i]);
    return st;
}

/* ------------------------------------------------------------ table */

const rlx_cpu_kernel_fn rlx_cpu_kernels_internal[RLX_OP_COUNT] = {
    [RLX_OP_rlx_FusedElementwise] = rlx_cpu_fused_elementwise,
    [RLX_OP_rlx_AddLayerNormalization] = k_add_layernorm,
    [RLX_OP_rlx_Attention] = k_attention,
    [RLX_OP_rlx_MatMulNBits] = rlx_cpu_matmul_nbits,
};
