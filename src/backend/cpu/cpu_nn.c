/* CPU kernels of the nn family (see src/ir/ops/ops_nn.c): the kernel table,
 * the shared working-copy helpers, Conv, ConvTranspose, BatchNormalization
 * and Dropout. Pools, Gemm/MatMul/Softmax and Resize live in
 * cpu_nn_pool.c, cpu_nn_gemm.c and cpu_nn_resize.c.
 *
 * Conv has two paths: the reference (direct loops in double, one output
 * element at a time, accumulating over (ci, kd, kh, kw) in that order) and,
 * for f32 when k->reference is false, im2col + cblas_sgemm per image and
 * group. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_nn.h"
#include "base/mem.h"
#include "ir/ops/conv_geom.h"
#include "ir/ops/ops.h"

/* ------------------------------------------------------------ helpers */

rlx_status rlx_nn_load(const rlx_cpu_kctx *k, const rlx_tensor *t, rlx_nn_buf *b) {
    b->p = NULL;
    b->owned = false;
    if (!t) return RLX_OK;
    if (t->dtype == RLX_DTYPE_F64) {
        b->p = t->data;
        return RLX_OK;
    }
    size_t n = rlx_tensor_numel(t);
    b->p = malloc((n + 1) * sizeof(double));
    if (!b->p) return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (%zu-element working copy)", n);
    b->owned = true;
    if (t->dtype == RLX_DTYPE_F32) {
        const float *s = t->data;
        for (size_t i = 0; i < n; i++) b->p[i] = s[i];
    } else {
        for (size_t i = 0; i < n; i++) b->p[i] = rlx_tensor_get_f64(t, i);
    }
    return RLX_OK;
}

rlx_status rlx_nn_out(const rlx_cpu_kctx *k, const rlx_tensor *t, rlx_nn_buf *b) {
    b->owned = false;
    if (t->dtype == RLX_DTYPE_F64) {
        b->p = t->data;
        return RLX_OK;
    }
    size_t n = rlx_tensor_numel(t);
    b->p = malloc((n + 1) * sizeof(double));
    if (!b->p) return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (%zu-element result buffer)", n);
    b->owned = true;
    return RLX_OK;
}

static double int_max_of(rlx_dtype dt) {
    switch (dt) {
    case RLX_DTYPE_I8: return 127.0;
    case RLX_DTYPE_U8: return 255.0;
    case RLX_DTYPE_I16: return 32767.0;
    case RLX_DTYPE_U16: return 65535.0;
    case RLX_DTYPE_I32: return 2147483647.0;
    case RLX_DTYPE_U32: return 4294967295.0;
    default: return 9223372036854774784.0; /* largest double below 2^63 */
    }
}

static double int_min_of(rlx_dtype dt) {
    switch (dt) {
    case RLX_DTYPE_I8: return -128.0;
    case RLX_DTYPE_I16: return -32768.0;
    case RLX_DTYPE_I32: return -2147483648.0;
    case RLX_DTYPE_I64: return -9223372036854775808.0;
    default: return 0.0;
    }
}

void rlx_nn_store(rlx_tensor *t, rlx_nn_buf *b) {
    if (!b->owned) return; /* f64: written in place */
    size_t n = rlx_tensor_numel(t);
    if (t->dtype == RLX_DTYPE_F32) {
        float *d = t->data;
        for (size_t i = 0; i < n; i++) d[i] = (float)b->p[i];
    } else if (rlx_dtype_is_float(t->dtype) || t->dtype == RLX_DTYPE_BOOL) {
        for (size_t i = 0; i < n; i++) rlx_tensor_set_f64(t, i, b->p[i]);
    } else if (t->dtype == RLX_DTYPE_U64) {
        uint64_t *d = t->data;
        for (size_t i = 0; i < n; i++) {
            double v = nearbyint(b->p[i]);
            d[i] = !(v > 0) ? 0 : v >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)v;
        }
    } else {
        double lo = int_min_of(t->dtype), hi = int_max_of(t->dtype);
        for (size_t i = 0; i < n; i++) {
            double v = nearbyint(b->p[i]); /* half to even, as numpy.round */
            v = v != v ? 0 : v < lo ? lo : v > hi ? hi : v;
            rlx_tensor_set_i64(t, i, (int64_t)v);
        }
    }
    rlx_nn_buf_free(b);
}

void rlx_nn_buf_free(rlx_nn_buf *b) {
    if (b->owned) free(b->p);
    b->p = NULL;
    b->owned = false;
}

void rlx_nn_sp3_init(const rlx_conv_geom *g, rlx_nn_sp3 *s) {
    int off = 3 - g->nsp;
    for (int i = 0; i < 3; i++) {
        int j = i - off;
        s->in[i] = j < 0 ? 1 : g->in[j];
        s->out[i] = j < 0 ? 1 : g->out[j];
        s->k[i] = j < 0 ? 1 : g->k[j];
        s->s[i] = j < 0 ? 1 : g->stride[j];
        s->d[i] = j < 0 ? 1 : g->dil[j];
        s->pb[i] = j < 0 ? 0 : g->pad_begin[j];
        s->pe[i] = j < 0 ? 0 : g->pad_end[j];
    }
    s->in_sp = (size_t)(s->in[0] * s->in[1] * s->in[2]);
    s->out_sp = (size_t)(s->out[0] * s->out[1] * s->out[2]);
    s->ksz = (size_t)(s->k[0] * s->k[1] * s->k[2]);
}

rlx_status rlx_nn_check_out(const rlx_cpu_kctx *k, const rlx_tensor *t, const rlx_conv_geom *g) {
    bool ok = t->rank == 2 + g->nsp && t->dims[0] == g->n && t->dims[1] == g->c_out;
    for (int i = 0; ok && i < g->nsp; i++) ok = t->dims[2 + i] == g->out[i];
    if (!ok) return rlx_cpu_fail(k, RLX_ERR_INTERNAL, "output shape differs from the resolved geometry");
    return RLX_OK;
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
                        yo[oi] = acc;
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

/* im2col of one group of one image: col[(c * K + kk), o] with kk the kernel
 * tap in (k0, k1, k2) order and o the output position; taps outside the
 * input (padding) store 0. */
static void im2col_f32(const float *x, const rlx_nn_sp3 *s, int64_t channels, float *col) {
    float *dst = col;
    for (int64_t c = 0; c < channels; c++) {
        const float *xc = x + (size_t)c * s->in_sp;
        for (int64_t k0 = 0; k0 < s->k[0]; k0++)
            for (int64_t k1 = 0; k1 < s->k[1]; k1++)
                for (int64_t k2 = 0; k2 < s->k[2]; k2++)
                    for (int64_t o0 = 0; o0 < s->out[0]; o0++) {
                        int64_t i0 = o0 * s->s[0] - s->pb[0] + k0 * s->d[0];
                        if (i0 < 0 || i0 >= s->in[0]) {
                            memset(dst, 0, (size_t)(s->out[1] * s->out[2]) * sizeof(float));
                            dst += s->out[1] * s->out[2];
                            continue;
                        }
                        for (int64_t o1 = 0; o1 < s->out[1]; o1++) {
                            int64_t i1 = o1 * s->s[1] - s->pb[1] + k1 * s->d[1];
                            if (i1 < 0 || i1 >= s->in[1]) {
                                memset(dst, 0, (size_t)s->out[2] * sizeof(float));
                                dst += s->out[2];
                                continue;
                            }
                            const float *row = xc + (i0 * s->in[1] + i1) * s->in[2];
                            int64_t i2 = k2 * s->d[2] - s->pb[2];
                            for (int64_t o2 = 0; o2 < s->out[2]; o2++, i2 += s->s[2])
                                *dst++ = (i2 >= 0 && i2 < s->in[2]) ? row[i2] : 0.0f;
                        }
                    }
    }
}

static bool conv_fits_blas(const rlx_conv_geom *g, const rlx_nn_sp3 *s) {
    int64_t cig = g->c_in / g->group, cog = g->c_out / g->group;
    return cog <= RLX_NN_BLAS_MAX && (int64_t)s->out_sp <= RLX_NN_BLAS_MAX &&
           cig * (int64_t)s->ksz <= RLX_NN_BLAS_MAX;
}

/* Fast path (f32): per image and group, out[cog, O] = w[cog, cig * K] x
 * col[cig * K, O] with cblas_sgemm; a 1x1 convolution with stride 1 and no
 * padding uses the input as col directly. */
static rlx_status conv_gemm_f32(rlx_cpu_kctx *k, const rlx_conv_geom *g) {
    rlx_nn_sp3 s;
    rlx_nn_sp3_init(g, &s);
    const float *x = k->in[0]->data, *w = k->in[1]->data;
    const rlx_tensor *bt = rlx_nn_in(k, 2);
    const float *b = bt ? bt->data : NULL;
    float *y = k->out[0]->data;
    int64_t cig = g->c_in / g->group, cog = g->c_out / g->group;
    size_t kt = (size_t)cig * s.ksz;
    bool direct = s.ksz == 1 && s.in_sp == s.out_sp;
    for (int i = 0; i < 3 && direct; i++) direct = s.s[i] == 1 && s.pb[i] == 0;
    float *col = NULL;
    if (!direct) {
        size_t n_col;
        if (!rlx_mul_ok(kt, s.out_sp, &n_col) || !(col = malloc((n_col + 1) * sizeof(float))))
            return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (im2col buffer of %zu x %zu)", kt, s.out_sp);
    }
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t gi = 0; gi < g->group; gi++) {
            const float *xg = x + ((size_t)n * (size_t)g->c_in + (size_t)(gi * cig)) * s.in_sp;
            float *yg = y + ((size_t)n * (size_t)g->c_out + (size_t)(gi * cog)) * s.out_sp;
            const float *cm = xg;
            if (!direct) {
                im2col_f32(xg, &s, cig, col);
                cm = col;
            }
            if (b)
                for (int64_t oc = 0; oc < cog; oc++) {
                    float bv = b[gi * cog + oc];
                    float *row = yg + (size_t)oc * s.out_sp;
                    for (size_t o = 0; o < s.out_sp; o++) row[o] = bv;
                }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)cog, (int)s.out_sp, (int)kt, 1.0f,
                        w + (size_t)(gi * cog) * kt, (int)kt, cm, (int)s.out_sp, b ? 1.0f : 0.0f, yg,
                        (int)s.out_sp);
        }
    free(col);
    return RLX_OK;
}

static rlx_status k_conv(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0], *w = k->in[1];
    rlx_conv_geom g;
    RLX_TRY(rlx_conv_geom_resolve(k->n, RLX_GEOM_CONV, x->dims, x->rank, w->dims, w->rank, &g));
    RLX_TRY(rlx_nn_check_out(k, k->out[0], &g));
    rlx_nn_sp3 s;
    rlx_nn_sp3_init(&g, &s);
    if (!k->reference && x->dtype == RLX_DTYPE_F32 && conv_fits_blas(&g, &s)) return conv_gemm_f32(k, &g);
    return conv_reference(k, &g);
}

/* ------------------------------------------------------------ ConvTranspose */

/* Reference: every input element scatters x[n, ci, i] * w[ci, oc, kk] to
 * y[n, co, i * s - pb + kk * d] where that lies inside the output; y starts
 * at the bias. Weight [C_in, C_out / group, k...]. */
static rlx_status k_conv_transpose(rlx_cpu_kctx *k) {
    const rlx_tensor *xt = k->in[0], *wt = k->in[1];
    rlx_conv_geom g;
    RLX_TRY(rlx_conv_geom_resolve(k->n, RLX_GEOM_CONV_TRANSPOSE, xt->dims, xt->rank, wt->dims, wt->rank, &g));
    RLX_TRY(rlx_nn_check_out(k, k->out[0], &g));
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

/* ------------------------------------------------------------ BatchNormalization */

/* Inference: y = (x - mean) / sqrt(var + epsilon) * scale + B, statistics per
 * channel (or, for BatchNormalization-7 with spatial=0, per (C, D...)). */
static rlx_status k_batchnorm(rlx_cpu_kctx *k) {
    const rlx_tensor *xt = k->in[0];
    if (k->n->version >= 14 && rlx_attr_int(k->n, "training_mode", 0) != 0)
        return rlx_cpu_fail(k, RLX_ERR_UNSUPPORTED, "training_mode=1 is not supported (rlx runs inference only)");
    if (xt->rank < 2) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "X has rank %d, expected at least 2", xt->rank);
    size_t nb = (size_t)xt->dims[0], c = (size_t)xt->dims[1];
    size_t inner = 1;
    for (int i = 2; i < xt->rank; i++) inner *= (size_t)xt->dims[i];
    size_t np = rlx_tensor_numel(k->in[1]);
    bool per_channel = np == c;
    if (!per_channel && np != c * inner)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "scale has %zu values for %zu channels", np, c);
    for (int i = 2; i < 5; i++)
        if (rlx_tensor_numel(k->in[i]) != np)
            return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "input %d has %zu values, scale has %zu", i,
                                rlx_tensor_numel(k->in[i]), np);
    double eps = rlx_attr_float(k->n, "epsilon", 1e-5f);
    /* buffers: x, scale, B, mean, var, y */
    rlx_nn_buf buf[6] = { { 0 } };
    rlx_status st = RLX_OK;
    for (int i = 0; i < 5 && !st; i++) st = rlx_nn_load(k, k->in[i], &buf[i]);
    if (!st) st = rlx_nn_out(k, k->out[0], &buf[5]);
    if (!st) {
        const double *x = buf[0].p, *sc = buf[1].p, *bias = buf[2].p, *mean = buf[3].p, *var = buf[4].p;
        double *y = buf[5].p;
        for (size_t n = 0; n < nb; n++)
            for (size_t ch = 0; ch < c; ch++) {
                size_t base = (n * c + ch) * inner;
                for (size_t i = 0; i < inner; i++) {
                    size_t p = per_channel ? ch : ch * inner + i;
                    y[base + i] = (x[base + i] - mean[p]) / sqrt(var[p] + eps) * sc[p] + bias[p];
                }
            }
        rlx_nn_store(k->out[0], &buf[5]);
    }
    for (int i = 0; i < 6; i++) rlx_nn_buf_free(&buf[i]);
    return st;
}

/* ------------------------------------------------------------ Dropout */

/* Inference: output = data, mask (optional) all true. Dropout-12 and later
 * take ratio and training_mode as inputs; training with a ratio above 0
 * would need random numbers and is refused. */
static rlx_status k_dropout(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0];
    const rlx_tensor *ratio_t = rlx_nn_in(k, 1), *train_t = rlx_nn_in(k, 2);
    double ratio = ratio_t && rlx_tensor_numel(ratio_t) ? rlx_tensor_get_f64(ratio_t, 0)
                                                          : rlx_attr_float(k->n, "ratio", 0.5f);
    bool training = train_t && rlx_tensor_numel(train_t) && rlx_tensor_get_i64(train_t, 0) != 0;
    if (training && ratio != 0.0)
        return rlx_cpu_fail(k, RLX_ERR_UNSUPPORTED,
                            "training_mode=true with ratio %g is not supported (random dropout; rlx runs inference)",
                            ratio);
    memcpy(k->out[0]->data, x->data, x->nbytes < k->out[0]->nbytes ? x->nbytes : k->out[0]->nbytes);
    rlx_tensor *mask = rlx_nn_out_t(k, 1);
    if (mask) {
        size_t n = rlx_tensor_numel(mask);
        for (size_t i = 0; i < n; i++) rlx_tensor_set_f64(mask, i, 1.0);
    }
    return RLX_OK;
}

/* ------------------------------------------------------------ the table */

const rlx_cpu_kernel rlx_cpu_kernels_nn[] = {
    { "Conv", k_conv },
    { "ConvTranspose", k_conv_transpose },
    { "MaxPool", rlx_cpu_nn_maxpool },
    { "AveragePool", rlx_cpu_nn_avgpool },
    { "LpPool", rlx_cpu_nn_lppool },
    { "GlobalAveragePool", rlx_cpu_nn_global_avgpool },
    { "GlobalMaxPool", rlx_cpu_nn_global_maxpool },
    { "GlobalLpPool", rlx_cpu_nn_global_lppool },
    { "BatchNormalization", k_batchnorm },
    { "Gemm", rlx_cpu_nn_gemm },
    { "MatMul", rlx_cpu_nn_matmul },
    { "Softmax", rlx_cpu_nn_softmax },
    { "LogSoftmax", rlx_cpu_nn_logsoftmax },
    { "Hardmax", rlx_cpu_nn_hardmax },
    { "Dropout", k_dropout },
    { "Resize", rlx_cpu_nn_resize },
    { "Upsample", rlx_cpu_nn_resize },
};
const size_t rlx_cpu_kernels_nn_count = RLX_ARRAY_LEN(rlx_cpu_kernels_nn);
