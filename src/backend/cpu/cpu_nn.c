/* CPU kernels of the nn family (see src/ir/ops/ops_nn.c): the kernel table,
 * the shared working-copy helpers, BatchNormalization and Dropout. Conv and
 * ConvTranspose live in cpu_nn_conv.c, the pools in cpu_nn_pool.c,
 * Gemm/MatMul/Softmax in cpu_nn_gemm.c (Softmax's f32 row fast path in
 * cpu_rows.c), Resize/Upsample in cpu_nn_resize.c and GridSample in
 * cpu_nn_gridsample.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_nn.h"
#include "backend/cpu/cpu_rows.h"
#include "base/mem.h"
#include "base/parallel.h"
#include "ir/ops/conv_geom.h"
#include "ir/ops/ops.h"

/* ------------------------------------------------------------ helpers */

/* b borrows t's data when t is f64, else owns a buffer of its size; `what`
 * names the buffer in the out-of-memory message. */
static rlx_status buf_for(const rlx_cpu_kctx *k, const rlx_tensor *t, rlx_nn_buf *b, const char *what) {
    b->p = NULL;
    b->owned = false;
    if (t->dtype == RLX_DTYPE_F64) {
        b->p = t->data;
        return RLX_OK;
    }
    size_t n = rlx_tensor_numel(t), bytes;
    if (!rlx_mul_ok(n + 1, sizeof(double), &bytes) || !(b->p = malloc(bytes)))
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (%zu-element %s)", n, what);
    b->owned = true;
    return RLX_OK;
}

rlx_status rlx_nn_load(const rlx_cpu_kctx *k, const rlx_tensor *t, rlx_nn_buf *b) {
    b->p = NULL;
    b->owned = false;
    if (!t) return RLX_OK;
    RLX_TRY(buf_for(k, t, b, "working copy"));
    size_t n = b->owned ? rlx_tensor_numel(t) : 0;
    if (t->dtype == RLX_DTYPE_F32) {
        const float *s = t->data;
        for (size_t i = 0; i < n; i++) b->p[i] = s[i];
    } else {
        for (size_t i = 0; i < n; i++) b->p[i] = rlx_tensor_get_f64(t, i);
    }
    return RLX_OK;
}

rlx_status rlx_nn_out(const rlx_cpu_kctx *k, const rlx_tensor *t, rlx_nn_buf *b) {
    return buf_for(k, t, b, "result buffer");
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

void rlx_nn_set(rlx_tensor *t, size_t i, double v) {
    if (rlx_dtype_is_float(t->dtype) || t->dtype == RLX_DTYPE_BOOL) {
        rlx_tensor_set_f64(t, i, v);
    } else if (t->dtype == RLX_DTYPE_U64) {
        v = nearbyint(v);
        ((uint64_t *)t->data)[i] = !(v > 0) ? 0 : v >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)v;
    } else {
        double lo = int_min_of(t->dtype), hi = int_max_of(t->dtype);
        v = nearbyint(v); /* half to even, as numpy.round */
        v = v != v ? 0 : v < lo ? lo : v > hi ? hi : v;
        rlx_tensor_set_i64(t, i, (int64_t)v);
    }
}

rlx_status rlx_nn_load_io(const rlx_cpu_kctx *k, rlx_nn_buf io[4]) {
    memset(io, 0, 4 * sizeof *io);
    rlx_status st = rlx_nn_load(k, k->in[0], &io[0]);
    if (!st) st = rlx_nn_load(k, k->in[1], &io[1]);
    if (!st) st = rlx_nn_load(k, rlx_nn_in(k, 2), &io[2]);
    if (!st) st = rlx_nn_out(k, k->out[0], &io[3]);
    for (int i = 0; st && i < 4; i++) rlx_nn_buf_free(&io[i]);
    return st;
}

void rlx_nn_store(rlx_tensor *t, rlx_nn_buf *b) {
    if (!b->owned) return; /* f64: written in place */
    size_t n = rlx_tensor_numel(t);
    if (t->dtype == RLX_DTYPE_F32) {
        float *d = t->data;
        for (size_t i = 0; i < n; i++) d[i] = (float)b->p[i];
    } else {
        for (size_t i = 0; i < n; i++) rlx_nn_set(t, i, b->p[i]);
    }
    rlx_nn_buf_free(b);
}

void rlx_nn_buf_free(rlx_nn_buf *b) {
    if (b->owned) free(b->p);
    b->p = NULL;
    b->owned = false;
}

typedef struct act_job {
    const rlx_act *a;
    float *y;
} act_job;

/* rlx_cpu_ew_unary_f32: the vector forms, Relu and Clip and the other
 * selects over AVX-512 (as scalar loops their comparisons became branches
 * that mispredict on signs that vary: ConvTranspose + Relu at 24 x 320 x
 * 320, 4.8 of its 8.8 ms), the rest one loop per function; the same bits
 * as rlx_act_apply */
static void act_range(void *ctx, size_t b, size_t e) {
    const act_job *j = ctx;
    const rlx_act *a = j->a;
    if (a->kind != RLX_ACT_NONE) rlx_cpu_ew_unary_f32(a->kind, j->y + b, j->y + b, a->alpha, a->beta, e - b);
}

void rlx_nn_act_f32(const rlx_act *a, float *y, size_t n) {
    if (a->kind == RLX_ACT_NONE) return;
    act_job j = { a, y };
    rlx_parallel_for(n, 16384, act_range, &j); /* elementwise: the same on any split */
}

void rlx_nn_act_f32_serial(const rlx_act *a, float *y, size_t n) {
    act_job j = { a, y };
    act_range(&j, 0, n);
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

/* ------------------------------------------------------------ BatchNormalization */

/* Fast path (f32, per-channel statistics): y = x * a + b in float with
 * a = scale / sqrt(var + epsilon) and b = B - mean * a computed in double. */
static void batchnorm_f32(const rlx_cpu_kctx *k, size_t nb, size_t c, size_t inner, double eps) {
    const float *x = k->in[0]->data;
    float *y = k->out[0]->data;
    for (size_t ch = 0; ch < c; ch++) {
        double sd = sqrt(rlx_tensor_get_f64(k->in[4], ch) + eps);
        double a = rlx_tensor_get_f64(k->in[1], ch) / sd;
        float af = (float)a, bf = (float)(rlx_tensor_get_f64(k->in[2], ch) - rlx_tensor_get_f64(k->in[3], ch) * a);
        for (size_t n = 0; n < nb; n++) {
            const float *xr = x + (n * c + ch) * inner;
            float *yr = y + (n * c + ch) * inner;
            for (size_t i = 0; i < inner; i++) yr[i] = xr[i] * af + bf;
        }
    }
}

/* Inference: y = (x - mean) / sqrt(var + epsilon) * scale + B, statistics per
 * channel (or, for BatchNormalization-7 with spatial=0, per (C, D...)). */
static rlx_status k_batchnorm(rlx_cpu_kctx *k) {
    const rlx_tensor *xt = k->in[0];
    if (k->n->version >= 14 && rlx_param_int(k->n, RLX_A_training_mode) != 0)
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
    double eps = rlx_param_float(k->n, RLX_A_epsilon);
    if (!k->reference && per_channel && xt->dtype == RLX_DTYPE_F32) {
        batchnorm_f32(k, nb, c, inner, eps);
        return RLX_OK;
    }
    /* buffers: x, scale, B, mean, var, y */
    rlx_nn_buf buf[6] = { { 0 } };
    rlx_status st = RLX_OK;
    for (int i = 0; i < 5 && !st; i++) st = rlx_nn_load(k, k->in[i], &buf[i]);
    if (!st) st = rlx_nn_out(k, k->out[0], &buf[5]);
    if (!st) {
        const double *x = buf[0].p, *sc = buf[1].p, *bias = buf[2].p, *mean = buf[3].p, *var = buf[4].p;
        double *y = buf[5].p, *sd = malloc((np + 1) * sizeof *sd); /* sqrt(var + eps) */
        if (!sd) st = rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory");
        for (size_t p = 0; sd && p < np; p++) sd[p] = sqrt(var[p] + eps);
        for (size_t n = 0; sd && n < nb; n++)
            for (size_t ch = 0; ch < c; ch++) {
                size_t base = (n * c + ch) * inner;
                for (size_t i = 0; i < inner; i++) {
                    size_t p = per_channel ? ch : ch * inner + i;
                    y[base + i] = (x[base + i] - mean[p]) / sd[p] * sc[p] + bias[p];
                }
            }
        free(sd);
        if (!st) rlx_nn_store(k->out[0], &buf[5]);
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
                                                          : rlx_param_float(k->n, RLX_A_ratio);
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

const rlx_cpu_kernel_fn rlx_cpu_kernels_nn[RLX_OP_COUNT] = {
    [RLX_OP_Conv] = rlx_cpu_nn_conv,
    [RLX_OP_ConvTranspose] = rlx_cpu_nn_conv_transpose,
    [RLX_OP_MaxPool] = rlx_cpu_nn_maxpool,
    [RLX_OP_AveragePool] = rlx_cpu_nn_avgpool,
    [RLX_OP_LpPool] = rlx_cpu_nn_lppool,
    [RLX_OP_GlobalAveragePool] = rlx_cpu_nn_global_avgpool,
    [RLX_OP_GlobalMaxPool] = rlx_cpu_nn_global_maxpool,
    [RLX_OP_GlobalLpPool] = rlx_cpu_nn_global_lppool,
    [RLX_OP_BatchNormalization] = k_batchnorm,
    [RLX_OP_Gemm] = rlx_cpu_nn_gemm,
    [RLX_OP_MatMul] = rlx_cpu_nn_matmul,
    [RLX_OP_Softmax] = rlx_cpu_rows_softmax_kernel,
    [RLX_OP_LogSoftmax] = rlx_cpu_rows_logsoftmax_kernel,
    [RLX_OP_Hardmax] = rlx_cpu_nn_hardmax,
    [RLX_OP_Dropout] = k_dropout,
    [RLX_OP_Resize] = rlx_cpu_nn_resize,
    [RLX_OP_Upsample] = rlx_cpu_nn_resize,
    [RLX_OP_GridSample] = rlx_cpu_nn_gridsample,
};
