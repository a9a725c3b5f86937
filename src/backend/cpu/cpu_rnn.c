/* CPU reference kernels of the recurrent family: RNN, GRU, LSTM (ONNX
 * versions 7, 14, 22; see src/ir/ops/rnn_params.h for the attributes).
 *
 * Every float type is computed in double: the inputs are converted once,
 * each step is a plain matrix-vector loop per batch row, and the outputs are
 * rounded once to the tensor's dtype.
 *
 * sequence_lens (ONNX): row b runs its first L = sequence_lens[b] steps
 * (reverse directions run steps L-1 down to 0); Y is 0 at steps >= L, and
 * Y_h / Y_c hold the state after the row's last step, or 0 when L == 0 (as
 * onnxruntime does). clip bounds the input of every gate activation (not the
 * cell state passed to LSTM's h). LSTM's input_forget couples the gates as
 * f = 1 - i. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "base/mem.h"
#include "ir/ops/rnn_params.h"

/* A gate activation: the vocabulary's double reference. */
static double act_apply(const rlx_rnn_act *a, double x) { return rlx_ew_f64(a->kind, x, x, x, a->alpha, a->beta); }

static double dot(const double *a, const double *b, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* Adds n doubles to a running size, failing on overflow. */
static bool add_count(size_t *total, size_t n) {
    if (n > SIZE_MAX / sizeof(double) - *total) return false;
    *total += n;
    return true;
}

static void to_f64(const rlx_tensor *t, double *dst, size_t n) {
    if (!t) {
        memset(dst, 0, n * sizeof *dst);
        return;
    }
    if (t->dtype == RLX_DTYPE_F32) {
        const float *s = t->data;
        for (size_t i = 0; i < n; i++) dst[i] = s[i];
        return;
    }
    for (size_t i = 0; i < n; i++) dst[i] = rlx_tensor_get_f64(t, i);
}

typedef struct rnn_run {
    const rlx_rnn_params *p;
    int64_t T, N, I, H, D, G;
    const double *x, *w, *r, *b, *h0, *c0, *pp;
    double *gx, *gh, *h, *c, *tmp; /* workspace */
    rlx_tensor *y, *yh, *yc;
} rnn_run;

static double clip_in(const rlx_rnn_params *p, double v) {
    if (!p->has_clip) return v;
    return v < -p->clip ? -p->clip : v > p->clip ? p->clip : v;
}

/* Runs direction d over batch row b for its first L steps. */
static void run_row(rnn_run *u, int64_t d, int64_t b, int64_t L) {
    const rlx_rnn_params *p = u->p;
    const int64_t T = u->T, N = u->N, I = u->I, H = u->H, D = u->D, G = u->G;
    const double *w = u->w + (size_t)(d * G * H * I), *r = u->r + (size_t)(d * G * H * H);
    const double *wb = u->b + (size_t)(d * 2 * G * H), *rb = wb + G * H;
    const rlx_rnn_act *act = p->act[d];
    double *h = u->h, *c = u->c, *gx = u->gx, *gh = u->gh, *tmp = u->tmp;
    size_t sidx = p->layout ? (size_t)((b * D + d) * H) : (size_t)((d * N + b) * H); /* Y_h / initial_h */
    for (int64_t j = 0; j < H; j++) {
        h[j] = u->h0[sidx + (size_t)j];
        c[j] = u->c0[sidx + (size_t)j];
    }
    for (int64_t s = 0; s < L; s++) {
        int64_t t = p->reverse[d] ? L - 1 - s : s;
        const double *xt = u->x + (size_t)((p->layout ? b * T + t : t * N + b) * I);
        for (int64_t row = 0; row < G * H; row++) {
            gx[row] = wb[row] + dot(w + row * I, xt, I);
            gh[row] = rb[row] + dot(r + row * H, h, H);
        }
        switch (p->kind) {
        case RLX_RNN_SIMPLE:
            for (int64_t j = 0; j < H; j++) h[j] = act_apply(&act[0], clip_in(p, gx[j] + gh[j]));
            break;
        case RLX_RNN_GRU: {
            /* gates z, r, h; tmp holds the candidate */
            double *z = gx, *rr = gx + H;
            for (int64_t j = 0; j < H; j++) {
                z[j] = act_apply(&act[0], clip_in(p, gx[j] + gh[j]));
                rr[j] = act_apply(&act[0], clip_in(p, gx[H + j] + gh[H + j]));
            }
            if (p->linear_before_reset) {
                for (int64_t j = 0; j < H; j++)
                    tmp[j] = act_apply(&act[1], clip_in(p, gx[2 * H + j] + rr[j] * gh[2 * H + j]));
            } else {
                /* (r . h) R_h^T + Rb_h; gh's z/r rows are no longer needed */
                double *rh = gh;
                for (int64_t j = 0; j < H; j++) rh[j] = rr[j] * h[j];
                for (int64_t j = 0; j < H; j++)
                    tmp[j] = act_apply(&act[1], clip_in(p, gx[2 * H + j] + dot(r + (2 * H + j) * H, rh, H) +
                                                               rb[2 * H + j]));
            }
            for (int64_t j = 0; j < H; j++) h[j] = (1.0 - z[j]) * tmp[j] + z[j] * h[j];
            break;
        }
        case RLX_RNN_LSTM: {
            /* gates i, o, f, c; peepholes P[i, o, f] */
            const double *pi = u->pp + (size_t)(d * 3 * H), *po = pi + H, *pf = pi + 2 * H;
            for (int64_t j = 0; j < H; j++) {
                double gi = act_apply(&act[0], clip_in(p, gx[j] + gh[j] + pi[j] * c[j]));
                double gf = p->input_forget ? 1.0 - gi
                                            : act_apply(&act[0], clip_in(p, gx[2 * H + j] + gh[2 * H + j] + pf[j] * c[j]));
                double gc = act_apply(&act[1], clip_in(p, gx[3 * H + j] + gh[3 * H + j]));
                double cn = gf * c[j] + gi * gc;
                double go = act_apply(&act[0], clip_in(p, gx[H + j] + gh[H + j] + po[j] * cn));
                c[j] = cn;
                tmp[j] = go * act_apply(&act[2], cn);
            }
            memcpy(h, tmp, (size_t)H * sizeof *h);
            break;
        }
        }
        if (u->y) {
            size_t yo = p->layout ? (size_t)(((b * T + t) * D + d) * H) : (size_t)(((t * D + d) * N + b) * H);
            for (int64_t j = 0; j < H; j++) rlx_tensor_set_f64(u->y, yo + (size_t)j, h[j]);
        }
    }
    if (L > 0) {
        for (int64_t j = 0; j < H; j++) {
            if (u->yh) rlx_tensor_set_f64(u->yh, sidx + (size_t)j, h[j]);
            if (u->yc) rlx_tensor_set_f64(u->yc, sidx + (size_t)j, c[j]);
        }
    }
}

static rlx_status k_rnn(rlx_cpu_kctx *k) {
    rlx_rnn_params p;
    RLX_TRY(rlx_rnn_params_resolve(k->n, &p));
    const rlx_tensor *in[RLX_RNN_MAX_IN] = { 0 };
    const int64_t *dims[RLX_RNN_MAX_IN];
    int ranks[RLX_RNN_MAX_IN];
    int max_in = p.kind == RLX_RNN_LSTM ? RLX_RNN_MAX_IN : RLX_RNN_IN_C0;
    for (int i = 0; i < RLX_RNN_MAX_IN; i++) {
        in[i] = (i < k->n->n_in && i < max_in) ? k->in[i] : NULL;
        dims[i] = in[i] ? in[i]->dims : NULL;
        ranks[i] = in[i] ? in[i]->rank : -1;
    }
    if (!in[0] || !in[1] || !in[2]) return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "X, W and R are required");
    rlx_rnn_sizes sz;
    RLX_TRY(rlx_rnn_check_shapes(k->n, &p, dims, ranks, &sz));
    rnn_run u = { .p = &p, .T = sz.seq, .N = sz.batch, .I = sz.input, .H = sz.hidden, .D = p.num_dirs, .G = p.gates };
    u.y = k->n->n_out > 0 ? k->out[0] : NULL;
    u.yh = k->n->n_out > 1 ? k->out[1] : NULL;
    u.yc = k->n->n_out > 2 ? k->out[2] : NULL;
    rlx_tensor *outs[3] = { u.y, u.yh, u.yc };
    for (int i = 0; i < 3; i++)
        if (outs[i] && outs[i]->nbytes) memset(outs[i]->data, 0, outs[i]->nbytes); /* 0 bits are 0.0 in every float type */
    if (u.T == 0 || u.N == 0) return RLX_OK;

    /* sequence lengths */
    const rlx_tensor *sl = in[RLX_RNN_IN_SEQ_LENS];
    if (sl && sl->dtype != RLX_DTYPE_I32)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "sequence_lens has dtype %s, expected i32", rlx_dtype_name(sl->dtype));
    for (int64_t b = 0; sl && b < u.N; b++) {
        int32_t L = ((const int32_t *)sl->data)[b];
        if (L < 0 || L > u.T)
            return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "sequence_lens[%lld] = %d is outside [0, %lld]",
                                (long long)b, (int)L, (long long)u.T);
    }

    /* one block of doubles: inputs, then workspace */
    size_t n_x = rlx_tensor_numel(in[0]), n_w = rlx_tensor_numel(in[1]), n_r = rlx_tensor_numel(in[2]);
    size_t n_b, n_state, n_p, n_gates, total = 0;
    bool ok = rlx_mul_ok((size_t)(u.D * 2 * u.G), (size_t)u.H, &n_b) &&
              rlx_mul_ok((size_t)(u.D * u.N), (size_t)u.H, &n_state) && rlx_mul_ok((size_t)(u.D * 3), (size_t)u.H, &n_p) &&
              rlx_mul_ok((size_t)u.G, (size_t)u.H, &n_gates);
    ok = ok && add_count(&total, n_x) && add_count(&total, n_w) && add_count(&total, n_r) && add_count(&total, n_b) &&
         add_count(&total, n_state) && add_count(&total, n_state) && add_count(&total, n_p) &&
         add_count(&total, 2 * n_gates) && add_count(&total, 3 * (size_t)u.H);
    if (!ok) return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "workspace size overflows");
    double *buf = malloc(total * sizeof(double) + 1);
    if (!buf) return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (%zu doubles of workspace)", total);
    double *q = buf;
    double *x = q; q += n_x;
    double *w = q; q += n_w;
    double *r = q; q += n_r;
    double *bb = q; q += n_b;
    double *h0 = q; q += n_state;
    double *c0 = q; q += n_state;
    double *pp = q; q += n_p;
    u.gx = q; q += n_gates;
    u.gh = q; q += n_gates;
    u.h = q; q += u.H;
    u.c = q; q += u.H;
    u.tmp = q;
    to_f64(in[0], x, n_x);
    to_f64(in[1], w, n_w);
    to_f64(in[2], r, n_r);
    to_f64(in[RLX_RNN_IN_B], bb, n_b);
    to_f64(in[RLX_RNN_IN_H0], h0, n_state);
    to_f64(in[RLX_RNN_IN_C0], c0, n_state);
    to_f64(in[RLX_RNN_IN_P], pp, n_p);
    u.x = x, u.w = w, u.r = r, u.b = bb, u.h0 = h0, u.c0 = c0, u.pp = pp;
    for (int64_t d = 0; d < u.D; d++)
        for (int64_t b = 0; b < u.N; b++) run_row(&u, d, b, sl ? ((const int32_t *)sl->data)[b] : u.T);
    free(buf);
    return RLX_OK;
}

const rlx_cpu_kernel_fn rlx_cpu_kernels_rnn[RLX_OP_COUNT] = {
    [RLX_OP_RNN] = k_rnn,
    [RLX_OP_GRU] = k_rnn,
    [RLX_OP_LSTM] = k_rnn,
};
