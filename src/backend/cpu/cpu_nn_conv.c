/* CPU kernels of Conv and ConvTranspose (ONNX Conv-11/22, ConvTranspose-11/22;
 * geometry from src/ir/ops/conv_geom.c).
 *
 * Reference kernels: plain loops in double (Conv gathers one output element
 * at a time, accumulating over (ci, kd, kh, kw) in that order; ConvTranspose
 * scatters every input element into the output).
 *
 * Fast paths, f32 only, when k->reference is false:
 *  - Conv: cpu_nn_conv_fast.c (depthwise direct loops; im2col + sgemm, a
 *    1x1 stride-1 convolution without im2col), on the worker pool.
 *  - ConvTranspose: sgemm of the transposed weight with blocks of the
 *    input (col[(oc, kk), i] = sum_ci w[ci, oc, kk] * x[ci, i]; cpu_sgemm.h
 *    shares it over the pool), then col2im adds each column into the
 *    output, output channels over the pool.
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
 * the fast paths add it in their epilogues, act((acc + b) + r); for the
 * reference, conv_residual runs the plain convolution, then y = act(y + r);
 * an f16 node (fp16 models on GPU plans) runs the reference, which adds r
 * to each sum in f32 and rounds once. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_nn.h"
#include "backend/cpu/cpu_sgemm.h"
#include "base/mem.h"
#include "base/parallel.h"
#include "base/scratch.h"
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
 * inside the input) of x[n, ci, o * s - pb + kk * d] * w[co, ci', kk]; with
 * a fused residual r (input 3; f16 nodes, conv_residual), then
 * act(f32(that) + r) in f32, rounded to the output's dtype at the store. */
static rlx_status conv_reference(rlx_cpu_kctx *k, const rlx_conv_geom *g) {
    rlx_nn_sp3 s;
    rlx_nn_sp3_init(g, &s);
    rlx_nn_buf io[4], *x = &io[0], *w = &io[1], *b = &io[2], *y = &io[3], res;
    RLX_TRY(rlx_nn_load(k, rlx_nn_in(k, 3), &res));
    rlx_status st = rlx_nn_load_io(k, io);
    if (st) {
        rlx_nn_buf_free(&res);
        return st;
    }
    int64_t cig = g->c_in / g->group, cog = g->c_out / g->group;
    rlx_act act = rlx_node_act(k->n);
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t co = 0; co < g->c_out; co++) {
            int64_t gi = co / cog;
            const double *wk = w->p + (size_t)co * (size_t)cig * s.ksz;
            double *yo = y->p + ((size_t)n * (size_t)g->c_out + (size_t)co) * s.out_sp;
            size_t oi = 0;
            for (int64_t o0 = 0; o0 < s.out[0]; o0++)
                for (int64_t o1 = 0; o1 < s.out[1]; o1++)
                    for (int64_t o2 = 0; o2 < s.out[2]; o2++, oi++) {
                        double acc = b->p ? b->p[co] : 0.0;
                        for (int64_t ic = 0; ic < cig; ic++) {
                            const double *xc =
                                x->p + ((size_t)n * (size_t)g->c_in + (size_t)(gi * cig + ic)) * s.in_sp;
                            const double *wc = wk + (size_t)ic * s.ksz;
                            RLX_NN_TAPS(s, o0, o1, o2, s.in, i0, i1, i2,
                                        acc += xc[(i0 * s.in[1] + i1) * s.in[2] + i2] *
                                               wc[(k0 * s.k[1] + k1) * s.k[2] + k2];)
                        }
                        if (res.p) acc = (double)((float)acc + (float)res.p[(size_t)(yo - y->p) + oi]);
                        yo[oi] = act.kind == RLX_ACT_NONE ? acc : (double)rlx_act_apply(&act, (float)acc);
                    }
        }
    rlx_nn_store(k->out[0], y);
    for (int i = 0; i < 3; i++) rlx_nn_buf_free(&io[i]);
    rlx_nn_buf_free(&res);
    return RLX_OK;
}


/* Whether a convolution with one input channel per group (c_in ==
 * group) takes the depthwise paths. They run each output plane over its
 * input plane alone, so a channel multiplier c_out / group of 4 or more
 * (an STFT as a 1-channel Conv with n_fft taps, a grayscale or waveform
 * stem) re-reads the input plane per output and spends its time in per-tap
 * overhead on short rows: those take im2col + GEMM, which reads the
 * input once for all outputs. Single Conv nodes, 1 thread, dev VM,
 * 2026-12-07, median us depthwise -> GEMM: silero VAD's STFT [1,1,640] by
 * [258,1,256] stride 128 999 -> 30, [1,1,16384] by [514,1,512] stride
 * 160 13800 -> 400, wav2vec2's [1,1,16000] by [512,1,10] stride 5 10700 ->
 * 460, [1,1,64,64] by [32,1,3,3] 158 -> 34, [1,1,224,224] by [64,1,7,7]
 * stride 2 12400 -> 1000, multiplier 4 [1,16,56,56] by [64,1,3,3] 274 ->
 * 162, multiplier 8 302 -> 86; multipliers 1 to 3 stay (multiplier 2
 * [1,32,56,56] 442 against 530; [1,1,256,256] by [2,1,3,3] 67-92 against
 * 136-167; multiplier 3 not measured, kept with 2). */
#define CONV_DW_MAX_MULT 3

static bool conv_depthwise(int64_t c_in, int64_t c_out, int64_t group) {
    return group >= 1 && c_in == group && c_out / group <= CONV_DW_MAX_MULT;
}

static bool conv_fits_blas(const rlx_conv_geom *g, const rlx_nn_sp3 *s) {
    int64_t cig = g->c_in / g->group, cog = g->c_out / g->group;
    return cog <= RLX_NN_BLAS_MAX && (int64_t)s->out_sp <= RLX_NN_BLAS_MAX &&
           cig * (int64_t)s->ksz <= RLX_NN_BLAS_MAX;
}

rlx_status rlx_nn_conv_prepare(const rlx_graph *g, const rlx_node *n, const rlx_tensor *const *in, int winograd,
                               rlx_cpu_sgemm_pack *out) {
    if (!rlx_nn_const_operand(g, n, in)) return RLX_OK;
    const rlx_tensor *w = in[1];
    if (w->dtype != RLX_DTYPE_F32 || w->rank < 3 ||
        rlx_cpu_gemm_policy_get() != RLX_CPU_GEMM_POOL)
        return RLX_OK;
    int64_t group = rlx_param_int(n, RLX_A_group), c_out = w->dims[0], cig = w->dims[1], ksz = 1;
    for (int i = 2; i < w->rank; i++) ksz *= w->dims[i];
    /* depthwise (one input channel per group, a small multiplier) runs
     * without a GEMM */
    if (group < 1 || cig < 1 || conv_depthwise(cig * group, c_out, group) || c_out < group || c_out % group ||
        ksz < 1)
        return RLX_OK;
    int64_t cog = c_out / group, kt = cig * ksz;
    if (cog > RLX_NN_BLAS_MAX || kt > RLX_NN_BLAS_MAX) return RLX_OK;
    /* a convolution with few output positions: transposed for the
     * channels-in-lanes path instead (cpu_nn_pwt.c) */
    const rlx_tensor *x = in[0];
    rlx_conv_geom cg;
    bool pwt = x && x->rank == w->rank && rlx_cpu_sgemm_kernel_get() == RLX_CPU_SGEMM_AVX512;
    if (pwt && rlx_conv_geom_resolve(n, RLX_GEOM_CONV, x->dims, x->rank, w->dims, w->rank, &cg) != RLX_OK) {
        rlx_clear_error(); /* the run reports it */
        pwt = false;
    }
    if (pwt) {
        rlx_nn_sp3 s;
        rlx_nn_sp3_init(&cg, &s);
        size_t n_img = cg.n > 0 ? (size_t)cg.n : 1;
        int wm = winograd ? rlx_nn_wino_wanted(&s, n_img, (size_t)group, (size_t)cig, (size_t)cog, winograd) : 0;
        float xlim = wm ? rlx_nn_wino_xlim(wm, (size_t)cig, w->data, (size_t)c_out * (size_t)kt) : 0.0f;
        if (xlim > 0.0f) {
            memset(out, 0, sizeof *out);
            RLX_TRY(rlx_nn_wino_pack(wm, (size_t)cog, (size_t)cig, w->data, &out->wino));
            out->wino_cout = (size_t)cog, out->wino_cin = (size_t)cig, out->wino_m = wm, out->wino_xlim = xlim;
            return RLX_OK;
        }
        if (rlx_nn_pwt_wanted(&s, (size_t)cog, (size_t)kt)) {
            memset(out, 0, sizeof *out);
            RLX_TRY(rlx_nn_pwt_pack((size_t)group, (size_t)cog, (size_t)kt, w->data, &out->wt));
            out->wt_groups = (size_t)group, out->wt_lanes = (size_t)cog, out->wt_k = (size_t)kt;
            const float *wd = w->data;
            size_t nw = (size_t)c_out * (size_t)kt;
            out->wt_finite = true;
            for (size_t i = 0; i < nw && out->wt_finite; i++) out->wt_finite = isfinite(wd[i]);
            return RLX_OK;
        }
    }
    return rlx_cpu_sgemm_pack_a(false, (size_t)group, (size_t)cog, (size_t)kt, w->data, (size_t)kt,
                                (size_t)(cog * kt), out);
}

/* The fast paths that a pack from rlx_nn_conv_prepare reaches read the
 * weights through it alone (tests/test_cpu_conv_fast.c runs them on
 * poisoned plain weights), except: Winograd, which declines inputs past
 * its limit at run time and then runs on the plain weights; a shape
 * outside conv_fits_blas (the reference); the "blas" policy; a transposed
 * (pwt) pack that its path would not take; and a pack whose panels are
 * not the pointwise path's rows where that path runs (another sgemm tile). */
bool rlx_nn_conv_pack_serves(const rlx_node *n, const rlx_tensor *const *in, const rlx_cpu_sgemm_pack *pk) {
    const rlx_tensor *x = in[0], *w = in[1];
    if (!pk || pk->wino || pk->q8 || pk->q8conv || (!pk->data && !pk->wt) || (pk->data && pk->is_b) || !x || !w ||
        x->dtype != RLX_DTYPE_F32 || w->dtype != RLX_DTYPE_F32 || rlx_cpu_gemm_policy_get() != RLX_CPU_GEMM_POOL)
        return false;
    rlx_conv_geom g;
    if (rlx_conv_geom_resolve(n, RLX_GEOM_CONV, x->dims, x->rank, w->dims, w->rank, &g) != RLX_OK) {
        rlx_clear_error();
        return false;
    }
    rlx_nn_sp3 s;
    rlx_nn_sp3_init(&g, &s);
    if (conv_depthwise(g.c_in, g.c_out, g.group) || !conv_fits_blas(&g, &s)) return false;
    rlx_nn_conv_io io = { .s = &s, .groups = (size_t)g.group, .c_in = (size_t)g.c_in, .c_out = (size_t)g.c_out };
    io.cig = io.c_in / io.groups, io.cog = io.c_out / io.groups, io.kt = io.cig * s.ksz, io.sp = s.out_sp;
    io.direct = rlx_nn_sp3_direct(&s);
    io.res = n->n_in > 3 && in[3] ? in[3]->data : NULL;
    if (pk->wt) return rlx_nn_conv_pwt_applies(&io, pk);
    /* the pointwise path reads the pack only in its strips' rows; the
     * implicit GEMM declines another layout, the GEMM path takes any */
    return !rlx_nn_conv_pw_applies(&io) || rlx_nn_conv_pw_takes_pack(&io, pk);
}

/* Resolves the geometry and runs the fast path that applies (f32, not
 * k->reference; cpu_nn_conv_fast.c, which also adds a fused residual), or
 * the reference when `reference_ok`; *done says whether one ran. */
static rlx_status conv_run(rlx_cpu_kctx *k, bool reference_ok, bool *done) {
    const rlx_tensor *x = k->in[0], *w = k->in[1];
    *done = false;
    rlx_conv_geom g;
    RLX_TRY(rlx_conv_geom_resolve(k->n, RLX_GEOM_CONV, x->dims, x->rank, w->dims, w->rank, &g));
    RLX_TRY(rlx_nn_check_out(k, k->out[0], &g));
    rlx_nn_sp3 s;
    rlx_nn_sp3_init(&g, &s);
    *done = true;
    if (!k->reference && x->dtype == RLX_DTYPE_F32) {
        if (conv_depthwise(g.c_in, g.c_out, g.group)) return rlx_nn_conv_depthwise_f32(k, &g, &s);
        if (conv_fits_blas(&g, &s)) return rlx_nn_conv_gemm_f32(k, &g, &s);
    }
    if (reference_ok) return conv_reference(k, &g);
    *done = false;
    return RLX_OK;
}

static rlx_status conv_paths(rlx_cpu_kctx *k) {
    bool done;
    return conv_run(k, true, &done);
}

/* The fused residual (input 3, ir/ops/act.h): the fast paths add it in
 * their epilogues; otherwise the reference runs as a plain convolution (a
 * copy of the node without the activation and the fourth input), then
 * y = act((conv + bias) + r) over the finished output, in f32. An f16 node
 * (a GPU plan's CPU fallback) runs the reference, which adds r itself and
 * rounds once. */
static rlx_status conv_residual(rlx_cpu_kctx *k) {
    const rlx_tensor *r = k->in[3];
    rlx_tensor *y = k->out[0];
    if (!r || r->dtype != y->dtype || (y->dtype != RLX_DTYPE_F32 && y->dtype != RLX_DTYPE_F16) ||
        rlx_tensor_numel(r) != rlx_tensor_numel(y))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL,
                            "the residual input must have the output's dtype (f32 or f16) and shape");
    if (y->dtype == RLX_DTYPE_F16) return conv_paths(k);
    bool done;
    RLX_TRY(conv_run(k, false, &done));
    if (done) return RLX_OK;
    rlx_node plain = *k->n; /* the Conv alone: no residual, no activation */
    plain.act_fn = 0;
    plain.act_alpha = plain.act_beta = 0.0f;
    plain.n_in = 3;
    rlx_cpu_kctx pk = *k;
    pk.n = &plain;
    RLX_TRY(conv_paths(&pk));
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
    const rlx_conv_geom g = *gp;
    rlx_nn_sp3 s;
    rlx_nn_sp3_init(&g, &s);
    rlx_nn_buf io[4], *x = &io[0], *w = &io[1], *b = &io[2], *y = &io[3];
    RLX_TRY(rlx_nn_load_io(k, io));
    int64_t cig = g.c_in / g.group, cog = g.c_out / g.group;
    for (int64_t n = 0; n < g.n; n++)
        for (int64_t co = 0; co < g.c_out; co++) {
            double *yo = y->p + ((size_t)n * (size_t)g.c_out + (size_t)co) * s.out_sp;
            double bv = b->p ? b->p[co] : 0.0;
            for (size_t o = 0; o < s.out_sp; o++) yo[o] = bv;
        }
    for (int64_t n = 0; n < g.n; n++)
        for (int64_t ci = 0; ci < g.c_in; ci++) {
            int64_t gi = ci / cig;
            const double *xc = x->p + ((size_t)n * (size_t)g.c_in + (size_t)ci) * s.in_sp;
            size_t ii = 0;
            for (int64_t i0 = 0; i0 < s.in[0]; i0++)
                for (int64_t i1 = 0; i1 < s.in[1]; i1++)
                    for (int64_t i2 = 0; i2 < s.in[2]; i2++, ii++) {
                        double xv = xc[ii];
                        for (int64_t oc = 0; oc < cog; oc++) {
                            int64_t co = gi * cog + oc;
                            const double *wk = w->p + ((size_t)ci * (size_t)cog + (size_t)oc) * s.ksz;
                            double *yo = y->p + ((size_t)n * (size_t)g.c_out + (size_t)co) * s.out_sp;
                            RLX_NN_TAPS(s, i0, i1, i2, s.out, o0, o1, o2,
                                        yo[(o0 * s.out[1] + o1) * s.out[2] + o2] +=
                                            xv * wk[(k0 * s.k[1] + k1) * s.k[2] + k2];)
                        }
                    }
        }
    rlx_act act = rlx_node_act(k->n);
    if (act.kind != RLX_ACT_NONE) {
        size_t total = (size_t)g.n * (size_t)g.c_out * s.out_sp;
        for (size_t i = 0; i < total; i++) y->p[i] = rlx_act_apply(&act, (float)y->p[i]);
    }
    rlx_nn_store(k->out[0], y);
    for (int i = 0; i < 3; i++) rlx_nn_buf_free(&io[i]);
    return RLX_OK;
}

typedef struct col2im_job {
    const rlx_nn_sp3 *s;
    const float *col; /* [(oc, kk), np] */
    float *y;         /* the group's first output plane */
    size_t p0, np;    /* the block of input positions */
} col2im_job;

/* Adds the columns of output channels [c0, c1) of the group into their
 * planes. */
static void col2im_channels(void *ctx, size_t c0, size_t c1) {
    const col2im_job *cj = ctx;
    const rlx_nn_sp3 *s = cj->s;
    size_t p0 = cj->p0, np = cj->np;
    for (size_t oc = c0; oc < c1; oc++) {
        float *yo = cj->y + oc * s->out_sp;
        const float *cr = cj->col + oc * s->ksz * np;
        for (int64_t k0 = 0; k0 < s->k[0]; k0++)
            for (int64_t k1 = 0; k1 < s->k[1]; k1++)
                for (int64_t k2 = 0; k2 < s->k[2]; k2++, cr += np)
                    RLX_NN_GRID_RUNS(s->in, p0, np, {
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
    float *col = NULL, *own = NULL; /* the calling thread's CALL buffer, else one block */
    if (!rlx_mul_ok(rows, nb, &n_col) || (!(col = rlx_scratch_get(RLX_SCRATCH_CALL, n_col * sizeof(float))) &&
                                          !(col = own = malloc((n_col + 1) * sizeof(float)))))
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
                rlx_cpu_sgemm(true, false, rows, np, (size_t)cig, 1.0f, wg, rows, xg + p0, s->in_sp, 0.0f, col, np);
                col2im_job cj = { s, col, y + ((size_t)n * (size_t)g->c_out + (size_t)(gi * cog)) * s->out_sp, p0, np };
                rlx_parallel_for((size_t)cog, 1, col2im_channels, &cj); /* one output plane per channel */
            }
        }
    rlx_act act = rlx_node_act(k->n);
    rlx_nn_act_f32(&act, y, (size_t)g->n * (size_t)g->c_out * s->out_sp);
    free(own);
    return RLX_OK;
}

/* --- kernel == stride: every output element takes one tap (disjoint) */

static int g_convt_force; /* rlx_nn_convt_force: 0 by shape, 1 never the disjoint path */
static atomic_size_t g_convt_runs;

void rlx_nn_convt_force(int path) { g_convt_force = path; }

size_t rlx_nn_convt_disjoint_runs(void) { return atomic_load(&g_convt_runs); }

/* Whether each output element of s receives exactly one (input position,
 * tap) pair: kernel == stride, dilation 1, no pads and out = in x stride
 * on every axis (FPN / U-Net upsampling, PP-OCR's DB head: 2x2 stride 2). */
static bool convt_disjoint(const rlx_nn_sp3 *s) {
    if (g_convt_force == 1 || rlx_cpu_gemm_policy_get() != RLX_CPU_GEMM_POOL) return false;
    for (int i = 0; i < 3; i++)
        if (s->k[i] != s->s[i] || s->d[i] != 1 || s->pb[i] || s->out[i] != s->in[i] * s->s[i]) return false;
    return true;
}

typedef struct convt_job {
    const rlx_nn_sp3 *s;
    const float *x, *w, *b;
    float *y;
    rlx_act act;
    size_t c_in, c_out, cig, cog, groups, rows; /* rows: cog x taps, the GEMM's */
    size_t in_rows, rpb, blocks;                /* input rows (in[0] x in[1]), rows per block, blocks per (n, g) */
} convt_job;

/* One block of input rows of one (image, group): its columns
 * col[(oc, kk), j] = sum over the group's ci of w[ci, oc, kk] x[ci, p0 + j]
 * (the sgemm, on this thread), then each written once where its tap lands,
 * act(col + b): the bits of the col2im path (bias, then the one column
 * added; then the activation), with no fill and no second pass. */
static void convt_disjoint_item(void *ctx, size_t item, float *col) {
    const convt_job *j = ctx;
    const rlx_nn_sp3 *s = j->s;
    size_t blk = item % j->blocks, ng = item / j->blocks, n = ng / j->groups, gi = ng % j->groups;
    size_t r0 = blk * j->rpb, r1 = r0 + j->rpb < j->in_rows ? r0 + j->rpb : j->in_rows;
    size_t w2 = (size_t)s->in[2], np = (r1 - r0) * w2, o2n = (size_t)s->out[2], s2 = (size_t)s->s[2];
    const float *xg = j->x + (n * j->c_in + gi * j->cig) * s->in_sp;
    rlx_cpu_sgemm(true, false, j->rows, np, j->cig, 1.0f, j->w + gi * j->cig * j->rows, j->rows, xg + r0 * w2,
                  s->in_sp, 0.0f, col, np);
    for (size_t oc = 0; oc < j->cog; oc++) {
        size_t co = gi * j->cog + oc;
        float bv = j->b ? j->b[co] : 0.0f, *yo = j->y + (n * j->c_out + co) * s->out_sp;
        const float *cc = col + oc * s->ksz * np;
        for (size_t r = r0; r < r1; r++) {
            size_t a0 = r / (size_t)s->in[1], a1 = r % (size_t)s->in[1];
            for (size_t k0 = 0; k0 < (size_t)s->k[0]; k0++)
                for (size_t k1 = 0; k1 < (size_t)s->k[1]; k1++) {
                    size_t o0 = a0 * (size_t)s->s[0] + k0, o1 = a1 * (size_t)s->s[1] + k1;
                    float *yr = yo + (o0 * (size_t)s->out[1] + o1) * o2n;
                    const float *cr = cc + (k0 * (size_t)s->k[1] + k1) * s2 * np + (r - r0) * w2;
                    for (size_t k2 = 0; k2 < s2; k2++, cr += np)
                        for (size_t t = 0; t < w2; t++) yr[t * s2 + k2] = cr[t] + bv;
                    rlx_nn_act_f32_serial(&j->act, yr, o2n);
                }
        }
    }
}

/* The disjoint ConvTranspose on the pool: blocks of whole input rows per
 * (image, group), each its own GEMM and scatter (the column block stays in
 * L2: 256 KiB at most, at least 4 blocks a thread where the rows allow). */
static rlx_status convt_disjoint_f32(rlx_cpu_kctx *k, const rlx_conv_geom *g, const rlx_nn_sp3 *s) {
    const rlx_tensor *bt = rlx_nn_in(k, 2);
    convt_job j = { .s = s, .x = k->in[0]->data, .w = k->in[1]->data, .b = bt ? bt->data : NULL,
                    .y = k->out[0]->data, .act = rlx_node_act(k->n), .c_in = (size_t)g->c_in,
                    .c_out = (size_t)g->c_out, .groups = (size_t)g->group };
    j.cig = j.c_in / j.groups, j.cog = j.c_out / j.groups, j.rows = j.cog * s->ksz;
    j.in_rows = (size_t)s->in[0] * (size_t)s->in[1];
    size_t w2 = (size_t)s->in[2], jobs = (size_t)g->n * j.groups, row_floats;
    if (!j.rows || !j.in_rows || !w2 || !jobs) return RLX_OK; /* an empty output */
    /* a block is at least one input row's columns: past 4 Mi floats (a task's
     * scratch is bounded) the col2im path, which splits rows too */
    if (!rlx_mul_ok(j.rows, w2, &row_floats) || row_floats > ((size_t)1 << 22)) return convt_gemm_f32(k, g, s);
    size_t by_cache = ((size_t)64 << 10) / (j.rows * w2), want = 4 * (size_t)rlx_parallel_threads();
    size_t by_threads = jobs >= want ? j.in_rows : (j.in_rows * jobs + want - 1) / want;
    j.rpb = by_cache < by_threads ? by_cache : by_threads;
    if (j.rpb < 1) j.rpb = 1;
    j.blocks = (j.in_rows + j.rpb - 1) / j.rpb;
    atomic_fetch_add(&g_convt_runs, 1);
    return rlx_nn_run_items(k, jobs * j.blocks, j.rows * j.rpb * w2, convt_disjoint_item, &j);
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
    if (!k->reference && x->dtype == RLX_DTYPE_F32 && fits)
        return cig > 0 && convt_disjoint(&s) ? convt_disjoint_f32(k, &g, &s) : convt_gemm_f32(k, &g, &s);
    return convt_reference(k, &g);
}
