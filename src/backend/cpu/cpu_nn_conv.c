/* CPU kernels of Conv and ConvTranspose (ONNX Conv-11/22, ConvTranspose-11/22;
 * geometry from src/ir/ops/conv_geom.c).
 *
 * Reference kernels: plain loops in double (Conv gathers one output element
 * at a time, accumulating over (ci, kd, kh, kw) in that order; ConvTranspose
 * scatters every input element into the output).
 *
 * Fast paths, f32 only, when k->reference is false:
 *  - Conv with one input channel per group (depthwise, with any channel
 *    multiplier): direct loops in float, tap by tap over whole output rows.
 *  - other Conv: im2col + cblas_sgemm per image and group, over blocks of
 *    output positions so that the column buffer stays near 2 MiB; a 1x1
 *    convolution with stride 1 and no padding multiplies the input directly.
 *  - ConvTranspose: cblas_sgemm of the transposed weight with blocks of the
 *    input (col[(oc, kk), i] = sum_ci w[ci, oc, kk] * x[ci, i]), then col2im
 *    adds each column into the output.
 * They accumulate in float in another order than the references; tests
 * compare them at 1e-5 relative.
 *
 * Fused activation (src/ir/ops/act.h, set by passes/fuse_activation.c):
 * every path applies act(sum + bias) to each finished output element, in
 * f32: the references to the sum rounded to f32, the fast paths to the
 * block or plane they just finished (Conv) or to the whole output after the
 * scatter (ConvTranspose).
 *
 * Fused residual (Conv's internal fourth input, passes/fuse_conv_residual.c):
 * applied in one place for every path, conv_residual: the plain convolution,
 * then y = act(y + r). */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_nn.h"
#include "base/mem.h"
#include "ir/ops/conv_geom.h"

/* Target size of the im2col / col2im block buffer. */
#define COL_BLOCK_BYTES ((size_t)2 << 20)

/* Positions per block for a column buffer with `rows` rows. */
static size_t block_cols(size_t rows, size_t total) {
    size_t nb = COL_BLOCK_BYTES / (sizeof(float) * (rows ? rows : 1));
    if (nb < 256) nb = 256;
    return nb < total ? nb : total;
}

/* ------------------------------------------------------------ Conv */

/* Reference: y[n, co, o] = b[co] + sum over (ci in co's group, kernel taps
 * inside the input) of x[n, ci, o * s - pb + kk * d] * w[co, ci', kk]. */
static rlx_status conv_reference(rlx_cpu_kctx *k, const rlx_conv_geom *g) {
    rlx_nn_sp3 s;
    rlx_nn_sp3_init(g, &s);
    rlx_nn_buf x, w, b, y;
    rlx_status st;
    RLX_TRY(rlx_nn_load(k, k->in[0], &x));
    if ((st = rlx_nn_load(k, k->in[1], &w)) != RLX_OK) goto fail_x;
    if ((st = rlx_nn_load(k, rlx_nn_in(k, 2), &b)) != RLX_OK) goto fail_w;
    if ((st = rlx_nn_out(k, k->out[0], &y)) != RLX_OK) goto fail_b;
    int64_t cig = g->c_in / g->group, cog = g->c_out / g->group;
    rlx_act act = rlx_node_act(k->n);
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t co = 0; co < g->c_out; co++) {
            int64_t gi = co / cog;
            const double *wk = w.p + (size_t)co * (size_t)cig * s.ksz;
            double *yo = y.p + ((size_t)n * (size_t)g->c_out + (size_t)co) * s.out_sp;
            size_t oi = 0;
            for (int64_t o0 = 0; o0 < s.out[0]; o0++)
                for (int64_t o1 = 0; o1 < s.out[1]; o1++)
                    for (int64_t o2 = 0; o2 < s.out[2]; o2++, oi++) {
                        double acc = b.p ? b.p[co] : 0.0;
                        for (int64_t ic = 0; ic < cig; ic++) {
                            const double *xc =
                                x.p + ((size_t)n * (size_t)g->c_in + (size_t)(gi * cig + ic)) * s.in_sp;
                            const double *wc = wk + (size_t)ic * s.ksz;
                            for (int64_t k0 = 0; k0 < s.k[0]; k0++) {
                                int64_t i0 = o0 * s.s[0] - s.pb[0] + k0 * s.d[0];
                                if (i0 < 0 || i0 >= s.in[0]) continue;
                                for (int64_t k1 = 0; k1 < s.k[1]; k1++) {
                                    int64_t i1 = o1 * s.s[1] - s.pb[1] + k1 * s.d[1];
                                    if (i1 < 0 || i1 >= s.in[1]) continue;
                                    for (int64_t k2 = 0; k2 < s.k[2]; k2++) {
                                        int64_t i2 = o2 * s.s[2] - s.pb[2] + k2 * s.d[2];
                                        if (i2 < 0 || i2 >= s.in[2]) continue;
                                        acc += xc[(i0 * s.in[1] + i1) * s.in[2] + i2] *
                                               wc[(k0 * s.k[1] + k1) * s.k[2] + k2];
                                    }
                                }
                            }
                        }
                        yo[oi] = act.kind == RLX_ACT_NONE ? acc : (double)rlx_act_apply(&act, (float)acc);
                    }
        }
    rlx_nn_store(k->out[0], &y);
    st = RLX_OK;
fail_b:
    rlx_nn_buf_free(&b);
fail_w:
    rlx_nn_buf_free(&w);
fail_x:
    rlx_nn_buf_free(&x);
    return st;
}


/* y[i] += w * x[i] for i < n, written in blocks of eight so that the
 * compiler vectorizes it at -O2. */
static void row_axpy(float *restrict y, const float *restrict x, float w, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        y[i] += w * x[i], y[i + 1] += w * x[i + 1], y[i + 2] += w * x[i + 2], y[i + 3] += w * x[i + 3];
        y[i + 4] += w * x[i + 4], y[i + 5] += w * x[i + 5], y[i + 6] += w * x[i + 6], y[i + 7] += w * x[i + 7];
    }
    for (; i < n; i++) y[i] += w * x[i];
}

/* y[i] += w * x[i * xs] for i < n. */
static void row_axpy_strided(float *restrict y, const float *restrict x, int64_t xs, float w, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        float a = x[i * xs], b = x[(i + 1) * xs], c = x[(i + 2) * xs], d = x[(i + 3) * xs];
        y[i] += w * a, y[i + 1] += w * b, y[i + 2] += w * c, y[i + 3] += w * d;
    }
    for (; i < n; i++) y[i] += w * x[i * xs];
}

/* Direct f32 depthwise convolution (one input channel per group): each
 * output plane starts at the bias, then every kernel tap adds w * x over the
 * output rows where it lands inside the input. */
static void conv_depthwise_f32(const float *x, const float *w, const float *b, float *y, const rlx_conv_geom *g,
                               const rlx_nn_sp3 *s, const rlx_act *act) {
    int64_t cog = g->c_out / g->group;
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t co = 0; co < g->c_out; co++) {
            int64_t ci = co / cog;
            const float *xc = x + ((size_t)n * (size_t)g->c_in + (size_t)ci) * s->in_sp;
            const float *wk = w + (size_t)co * s->ksz;
            float *yo = y + ((size_t)n * (size_t)g->c_out + (size_t)co) * s->out_sp;
            float bv = b ? b[co] : 0.0f;
            for (size_t o = 0; o < s->out_sp; o++) yo[o] = bv;
            for (int64_t k0 = 0; k0 < s->k[0]; k0++)
                for (int64_t k1 = 0; k1 < s->k[1]; k1++)
                    for (int64_t k2 = 0; k2 < s->k[2]; k2++) {
                        float wv = wk[(k0 * s->k[1] + k1) * s->k[2] + k2];
                        /* output columns whose input column is inside */
                        int64_t off = k2 * s->d[2] - s->pb[2];
                        int64_t lo = off >= 0 ? 0 : (-off + s->s[2] - 1) / s->s[2];
                        int64_t hi = s->in[2] - 1 - off < 0 ? 0 : (s->in[2] - 1 - off) / s->s[2] + 1;
                        if (hi > s->out[2]) hi = s->out[2];
                        if (lo >= hi) continue;
                        for (int64_t o0 = 0; o0 < s->out[0]; o0++) {
                            int64_t i0 = o0 * s->s[0] - s->pb[0] + k0 * s->d[0];
                            if (i0 < 0 || i0 >= s->in[0]) continue;
                            for (int64_t o1 = 0; o1 < s->out[1]; o1++) {
                                int64_t i1 = o1 * s->s[1] - s->pb[1] + k1 * s->d[1];
                                if (i1 < 0 || i1 >= s->in[1]) continue;
                                const float *xr = xc + (i0 * s->in[1] + i1) * s->in[2] + off;
                                float *yr = yo + (o0 * s->out[1] + o1) * s->out[2];
                                if (s->s[2] == 1) {
                                    row_axpy(yr + lo, xr + lo, wv, hi - lo);
                                } else {
                                    row_axpy_strided(yr + lo, xr + lo * s->s[2], s->s[2], wv, hi - lo);
                                }
                            }
                        }
                    }
            rlx_nn_act_f32_serial(act, yo, s->out_sp); /* the plane is in this thread's cache */
        }
}

/* Walks the flat positions [p0, p0 + np) of a 3-D grid `dims` in runs along
 * the last axis: calls body with (j = offset in the block, a0, a1, a2 = the
 * run's first position, len = run length). */
#define GRID_RUNS(dims, p0, np, body)                                                      \
    do {                                                                                   \
        int64_t a2_ = (int64_t)((p0) % (size_t)(dims)[2]);                                  \
        int64_t a1_ = (int64_t)(((p0) / (size_t)(dims)[2]) % (size_t)(dims)[1]);            \
        int64_t a0_ = (int64_t)((p0) / ((size_t)(dims)[2] * (size_t)(dims)[1]));            \
        for (size_t j_ = 0; j_ < (np);) {                                                  \
            int64_t len_ = (dims)[2] - a2_;                                                \
            if ((size_t)len_ > (np) - j_) len_ = (int64_t)((np) - j_);                     \
            {                                                                              \
                size_t j = j_;                                                             \
                int64_t a0 = a0_, a1 = a1_, a2 = a2_, len = len_;                          \
                body;                                                                      \
            }                                                                              \
            j_ += (size_t)len_;                                                            \
            a2_ += len_;                                                                   \
            if (a2_ == (dims)[2]) {                                                        \
                a2_ = 0;                                                                   \
                if (++a1_ == (dims)[1]) a1_ = 0, a0_++;                                    \
            }                                                                              \
        }                                                                                  \
    } while (0)

/* im2col of output positions [p0, p0 + np) of one group of one image:
 * col[(c * K + kk) * np + j], kk the kernel tap in (k0, k1, k2) order; taps
 * outside the input (padding) store 0. */
static void im2col_block_f32(const float *x, const rlx_nn_sp3 *s, int64_t channels, size_t p0, size_t np,
                             float *col) {
    float *dst = col;
    for (int64_t c = 0; c < channels; c++) {
        const float *xc = x + (size_t)c * s->in_sp;
        for (int64_t k0 = 0; k0 < s->k[0]; k0++)
            for (int64_t k1 = 0; k1 < s->k[1]; k1++)
                for (int64_t k2 = 0; k2 < s->k[2]; k2++, dst += np)
                    GRID_RUNS(s->out, p0, np, {
                        int64_t i0 = a0 * s->s[0] - s->pb[0] + k0 * s->d[0];
                        int64_t i1 = a1 * s->s[1] - s->pb[1] + k1 * s->d[1];
                        float *d = dst + j;
                        if (i0 < 0 || i0 >= s->in[0] || i1 < 0 || i1 >= s->in[1]) {
                            memset(d, 0, (size_t)len * sizeof(float));
                        } else {
                            const float *row = xc + (i0 * s->in[1] + i1) * s->in[2];
                            int64_t i2 = a2 * s->s[2] - s->pb[2] + k2 * s->d[2];
                            for (int64_t t = 0; t < len; t++, i2 += s->s[2])
                                d[t] = (i2 >= 0 && i2 < s->in[2]) ? row[i2] : 0.0f;
                        }
                    });
    }
}

static bool conv_fits_blas(const rlx_conv_geom *g, const rlx_nn_sp3 *s) {
    int64_t cig = g->c_in / g->group, cog = g->c_out / g->group;
    return cog <= RLX_NN_BLAS_MAX && (int64_t)s->out_sp <= RLX_NN_BLAS_MAX &&
           cig * (int64_t)s->ksz <= RLX_NN_BLAS_MAX;
}

/* im2col + sgemm: per image, group and block of output positions,
 * y[cog, block] = w_g[cog, cig * K] x col[cig * K, block] (+ the bias the
 * rows start with). */
static rlx_status conv_gemm_f32(rlx_cpu_kctx *k, const rlx_conv_geom *g, const rlx_nn_sp3 *s) {
    const float *x = k->in[0]->data, *w = k->in[1]->data;
    const rlx_tensor *bt = rlx_nn_in(k, 2);
    const float *b = bt ? bt->data : NULL;
    float *y = k->out[0]->data;
    int64_t cig = g->c_in / g->group, cog = g->c_out / g->group;
    size_t kt = (size_t)cig * s->ksz;
    rlx_act act = rlx_node_act(k->n);
    bool direct = s->ksz == 1 && s->in_sp == s->out_sp;
    for (int i = 0; i < 3 && direct; i++) direct = s->s[i] == 1 && s->pb[i] == 0;
    size_t nb = direct ? s->out_sp : block_cols(kt, s->out_sp);
    float *col = NULL;
    if (!direct) {
        size_t n_col;
        if (!rlx_mul_ok(kt, nb, &n_col) || !(col = malloc((n_col + 1) * sizeof(float))))
            return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (im2col block of %zu x %zu)", kt, nb);
    }
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t gi = 0; gi < g->group; gi++) {
            const float *xg = x + ((size_t)n * (size_t)g->c_in + (size_t)(gi * cig)) * s->in_sp;
            float *yg = y + ((size_t)n * (size_t)g->c_out + (size_t)(gi * cog)) * s->out_sp;
            const float *wg = w + (size_t)(gi * cog) * kt;
            if (b)
                for (int64_t oc = 0; oc < cog; oc++) {
                    float bv = b[gi * cog + oc];
                    float *row = yg + (size_t)oc * s->out_sp;
                    for (size_t o = 0; o < s->out_sp; o++) row[o] = bv;
                }
            for (size_t p0 = 0; p0 < s->out_sp; p0 += nb) {
                size_t np = s->out_sp - p0 < nb ? s->out_sp - p0 : nb;
                const float *cm = direct ? xg + p0 : col;
                if (!direct) im2col_block_f32(xg, s, cig, p0, np, col);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)cog, (int)np, (int)kt, 1.0f, wg, (int)kt,
                            cm, direct ? (int)s->out_sp : (int)np, b ? 1.0f : 0.0f, yg + p0, (int)s->out_sp);
                rlx_nn_act_rows_f32(&act, yg + p0, (size_t)cog, np, s->out_sp);
            }
        }
    free(col);
    return RLX_OK;
}

static rlx_status conv_paths(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0], *w = k->in[1];
    rlx_conv_geom g;
    RLX_TRY(rlx_conv_geom_resolve(k->n, RLX_GEOM_CONV, x->dims, x->rank, w->dims, w->rank, &g));
    RLX_TRY(rlx_nn_check_out(k, k->out[0], &g));
    rlx_nn_sp3 s;
    rlx_nn_sp3_init(&g, &s);
    if (k->reference || x->dtype != RLX_DTYPE_F32) return conv_reference(k, &g);
    if (g.c_in == g.group) { /* one input channel per group */
        const rlx_tensor *b = rlx_nn_in(k, 2);
        rlx_act act = rlx_node_act(k->n);
        conv_depthwise_f32(x->data, w->data, b ? b->data : NULL, k->out[0]->data, &g, &s, &act);
        return RLX_OK;
    }
    if (conv_fits_blas(&g, &s)) return conv_gemm_f32(k, &g, &s);
    return conv_reference(k, &g);
}

/* The fused residual (input 3, ir/ops/act.h): every path above runs as a
 * plain convolution (a copy of the node without the activation and the
 * fourth input), then y = act((conv + bias) + r) over the finished output,
 * in f32. */
static rlx_status conv_residual(rlx_cpu_kctx *k) {
    const rlx_tensor *r = k->in[3];
    rlx_tensor *y = k->out[0];
    if (!r || r->dtype != RLX_DTYPE_F32 || y->dtype != RLX_DTYPE_F32 || rlx_tensor_numel(r) != rlx_tensor_numel(y))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "the residual input must be f32 with the output's shape");
    rlx_node plain = *k->n;
    rlx_node_attr *attrs = malloc(((size_t)k->n->n_attrs + 1) * sizeof *attrs);
    if (!attrs) return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory");
    plain.n_attrs = 0;
    for (int i = 0; i < k->n->n_attrs; i++) /* shallow copies, borrowed from k->n */
        if (!k->n->attrs[i].name || strncmp(k->n->attrs[i].name, "_rlx_act", 8) != 0) attrs[plain.n_attrs++] = k->n->attrs[i];
    plain.attrs = attrs;
    plain.n_in = 3;
    rlx_cpu_kctx pk = *k;
    pk.n = &plain;
    rlx_status st = conv_paths(&pk);
    free(attrs);
    if (st) return st;
    float *yp = y->data;
    const float *rp = r->data;
    size_t n = rlx_tensor_numel(y);
    for (size_t i = 0; i < n; i++) yp[i] += rp[i];
    rlx_act act = rlx_node_act(k->n);
    rlx_nn_act_f32(&act, yp, n);
    return RLX_OK;
}

rlx_status rlx_cpu_nn_conv(rlx_cpu_kctx *k) {
    if (k->n->n_in > 3) return conv_residual(k);
    return conv_paths(k);
}

/* ------------------------------------------------------------ ConvTranspose */

/* Reference: every input element scatters x[n, ci, i] * w[ci, oc, kk] to
 * y[n, co, i * s - pb + kk * d] where that lies inside the output; y starts
 * at the bias. Weight [C_in, C_out / group, k...]. */
static rlx_status convt_reference(rlx_cpu_kctx *k, const rlx_conv_geom *gp) {
    const rlx_tensor *xt = k->in[0], *wt = k->in[1];
    const rlx_conv_geom g = *gp;
    rlx_nn_sp3 s;
    rlx_nn_sp3_init(&g, &s);
    rlx_nn_buf x, w, b, y;
    rlx_status st;
    RLX_TRY(rlx_nn_load(k, xt, &x));
    if ((st = rlx_nn_load(k, wt, &w)) != RLX_OK) goto fail_x;
    if ((st = rlx_nn_load(k, rlx_nn_in(k, 2), &b)) != RLX_OK) goto fail_w;
    if ((st = rlx_nn_out(k, k->out[0], &y)) != RLX_OK) goto fail_b;
    int64_t cig = g.c_in / g.group, cog = g.c_out / g.group;
    for (int64_t n = 0; n < g.n; n++)
        for (int64_t co = 0; co < g.c_out; co++) {
            double *yo = y.p + ((size_t)n * (size_t)g.c_out + (size_t)co) * s.out_sp;
            double bv = b.p ? b.p[co] : 0.0;
            for (size_t o = 0; o < s.out_sp; o++) yo[o] = bv;
        }
    for (int64_t n = 0; n < g.n; n++)
        for (int64_t ci = 0; ci < g.c_in; ci++) {
            int64_t gi = ci / cig;
            const double *xc = x.p + ((size_t)n * (size_t)g.c_in + (size_t)ci) * s.in_sp;
            size_t ii = 0;
            for (int64_t i0 = 0; i0 < s.in[0]; i0++)
                for (int64_t i1 = 0; i1 < s.in[1]; i1++)
                    for (int64_t i2 = 0; i2 < s.in[2]; i2++, ii++) {
                        double xv = xc[ii];
                        for (int64_t oc = 0; oc < cog; oc++) {
                            int64_t co = gi * cog + oc;
                            const double *wk = w.p + ((size_t)ci * (size_t)cog + (size_t)oc) * s.ksz;
                            double *yo = y.p + ((size_t)n * (size_t)g.c_out + (size_t)co) * s.out_sp;
                            for (int64_t k0 = 0; k0 < s.k[0]; k0++) {
                                int64_t o0 = i0 * s.s[0] - s.pb[0] + k0 * s.d[0];
                                if (o0 < 0 || o0 >= s.out[0]) continue;
                                for (int64_t k1 = 0; k1 < s.k[1]; k1++) {
                                    int64_t o1 = i1 * s.s[1] - s.pb[1] + k1 * s.d[1];
                                    if (o1 < 0 || o1 >= s.out[1]) continue;
                                    for (int64_t k2 = 0; k2 < s.k[2]; k2++) {
                                        int64_t o2 = i2 * s.s[2] - s.pb[2] + k2 * s.d[2];
                                        if (o2 < 0 || o2 >= s.out[2]) continue;
                                        yo[(o0 * s.out[1] + o1) * s.out[2] + o2] +=
                                            xv * wk[(k0 * s.k[1] + k1) * s.k[2] + k2];
                                    }
                                }
                            }
                        }
                    }
        }
    rlx_act act = rlx_node_act(k->n);
    if (act.kind != RLX_ACT_NONE) {
        size_t total = (size_t)g.n * (size_t)g.c_out * s.out_sp;
        for (size_t i = 0; i < total; i++) y.p[i] = rlx_act_apply(&act, (float)y.p[i]);
    }
    rlx_nn_store(k->out[0], &y);
    st = RLX_OK;
fail_b:
    rlx_nn_buf_free(&b);
fail_w:
    rlx_nn_buf_free(&w);
fail_x:
    rlx_nn_buf_free(&x);
    return st;
}

/* sgemm + col2im (f32): per image, group and block of input positions,
 * col[(oc, kk), j] = sum over the group's ci of w[ci, oc, kk] * x[ci, p0 + j],
 * then every column entry is added at its output position. */
static rlx_status convt_gemm_f32(rlx_cpu_kctx *k, const rlx_conv_geom *g, const rlx_nn_sp3 *s) {
    const float *x = k->in[0]->data, *w = k->in[1]->data;
    const rlx_tensor *bt = rlx_nn_in(k, 2);
    const float *b = bt ? bt->data : NULL;
    float *y = k->out[0]->data;
    int64_t cig = g->c_in / g->group, cog = g->c_out / g->group;
    size_t rows = (size_t)cog * s->ksz;
    size_t nb = block_cols(rows, s->in_sp), n_col;
    float *col;
    if (!rlx_mul_ok(rows, nb, &n_col) || !(col = malloc((n_col + 1) * sizeof(float))))
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (col2im block of %zu x %zu)", rows, nb);
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t co = 0; co < g->c_out; co++) {
            float *yo = y + ((size_t)n * (size_t)g->c_out + (size_t)co) * s->out_sp;
            float bv = b ? b[co] : 0.0f;
            for (size_t o = 0; o < s->out_sp; o++) yo[o] = bv;
        }
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t gi = 0; gi < g->group; gi++) {
            const float *xg = x + ((size_t)n * (size_t)g->c_in + (size_t)(gi * cig)) * s->in_sp;
            const float *wg = w + (size_t)(gi * cig) * rows;
            for (size_t p0 = 0; p0 < s->in_sp; p0 += nb) {
                size_t np = s->in_sp - p0 < nb ? s->in_sp - p0 : nb;
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)rows, (int)np, (int)cig, 1.0f, wg, (int)rows,
                            xg + p0, (int)s->in_sp, 0.0f, col, (int)np);
                for (int64_t oc = 0; oc < cog; oc++) {
                    float *yo = y + ((size_t)n * (size_t)g->c_out + (size_t)(gi * cog + oc)) * s->out_sp;
                    const float *cr = col + (size_t)oc * s->ksz * np;
                    for (int64_t k0 = 0; k0 < s->k[0]; k0++)
                        for (int64_t k1 = 0; k1 < s->k[1]; k1++)
                            for (int64_t k2 = 0; k2 < s->k[2]; k2++, cr += np)
                                GRID_RUNS(s->in, p0, np, {
                                    int64_t o0 = a0 * s->s[0] - s->pb[0] + k0 * s->d[0];
                                    int64_t o1 = a1 * s->s[1] - s->pb[1] + k1 * s->d[1];
                                    if (o0 >= 0 && o0 < s->out[0] && o1 >= 0 && o1 < s->out[1]) {
                                        float *yr = yo + (o0 * s->out[1] + o1) * s->out[2];
                                        int64_t o2 = a2 * s->s[2] - s->pb[2] + k2 * s->d[2];
                                        for (int64_t t = 0; t < len; t++, o2 += s->s[2])
                                            if (o2 >= 0 && o2 < s->out[2]) yr[o2] += cr[j + (size_t)t];
                                    }
                                });
                }
            }
        }
    rlx_act act = rlx_node_act(k->n);
    rlx_nn_act_f32(&act, y, (size_t)g->n * (size_t)g->c_out * s->out_sp);
    free(col);
    return RLX_OK;
}

rlx_status rlx_cpu_nn_conv_transpose(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0], *w = k->in[1];
    rlx_conv_geom g;
    RLX_TRY(rlx_conv_geom_resolve(k->n, RLX_GEOM_CONV_TRANSPOSE, x->dims, x->rank, w->dims, w->rank, &g));
    RLX_TRY(rlx_nn_check_out(k, k->out[0], &g));
    rlx_nn_sp3 s;
    rlx_nn_sp3_init(&g, &s);
    int64_t cig = g.c_in / g.group, cog = g.c_out / g.group;
    bool fits = cog * (int64_t)s.ksz <= RLX_NN_BLAS_MAX && (int64_t)s.in_sp <= RLX_NN_BLAS_MAX && cig <= RLX_NN_BLAS_MAX;
    if (!k->reference && x->dtype == RLX_DTYPE_F32 && fits) return convt_gemm_f32(k, &g, &s);
    return convt_reference(k, &g);
}
