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
 * f = 1 - i.
 *
 * Fast path (k->reference false; every float input and output f32; any
 * attribute combination): computed in f32.
 *  - The input projection of every step and both directions is one GEMM
 *    (cpu_sgemm.h): Gx[T*N, D*G*H] = X[T*N, I] W[D*G*H, I]^T, X in its
 *    storage order (layout 0 or 1).
 *  - R^T is packed once per call into panels of 16 columns (zero-padded),
 *    and each step's H R^T runs a register-tile kernel over the batch rows
 *    padded to a multiple of 6: 6 x 32 (two panels) with AVX-512F, 6 x 16
 *    with AVX2 + FMA, portable C elsewhere (rlx_cpu_isa_get, cpu_vmath.h);
 *    batches of 1 or 2 rows take a GEMV over 8 (AVX-512) or 4 panels. GRU
 *    with linear_before_reset = 0 packs its h gate apart: that product
 *    takes (r . H) after the z and r gates.
 *  - The gates run 8 units at a time with the vocabulary's vector Sigmoid
 *    and Tanh (cpu_ew_vec.h: the bits of their f32 definitions, which the
 *    scalar gates use), max for Relu, the vocabulary's f32 function lane
 *    by lane for the other activations (and for the H % 8 tail, and
 *    everywhere without AVX2).
 *  - Work units are (direction, slice of batch rows): each runs its whole
 *    sequence on one of the pool's threads, so no step waits for another
 *    thread.
 * Against the reference (tests/test_cpu_rnn_fast.c): f32 accumulation over
 * I and H terms (the reference sums in double) gives differences of about
 * 1e-6 per step, which the recurrence carries. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_nn.h"
#include "backend/cpu/cpu_ew_vec.h"
#include "backend/cpu/cpu_sgemm.h"
#include "backend/cpu/cpu_vmath.h"
#include "base/mem.h"
#include "base/parallel.h"
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

/* ------------------------------------------------------------ fast path (f32) */

#define RF_NR 16 /* columns of a packed panel */
#define RF_MR 6  /* rows of a register tile */

typedef struct rnn_fast {
    const rlx_rnn_params *p;
    int64_t T, N, I, H, D, G;
    int g1;                /* gates of the first packed part (GRU, linear_before_reset 0: z, r) */
    size_t pan_a, pan_b;   /* panels of the two parts */
    size_t ldg;            /* floats per row of gh: (pan_a + pan_b) * 16 */
    size_t ldx;            /* floats per row of gx: D * G * H */
    const float *x, *h0, *c0, *pp;
    const int32_t *seq;
    float *gx;             /* [T*N, D*G*H], rows in X's storage order */
    float *rp;             /* per direction: part a then part b, packed */
    size_t rp_dir;         /* floats per direction in rp */
    float *bsum;           /* [D][G*H]: Wb + Rb (GRU h gate: Wb only) */
    float *rbh;            /* [D][H]: GRU's Rb of the h gate */
    int64_t slices, rows;  /* batch slices per direction, rows per slice */
    size_t nrp;            /* rows per slice padded to RF_MR */
    float *ws;             /* per unit: h, c, rh [nrp][H], gh [nrp][ldg], z [nrp][2H] */
    size_t ws_unit;
    float *y, *yh, *yc;
} rnn_fast;

/* Columns [c0, c0 + nc) of R^T (r is R_d, [G*H rows][K]) as panels of 16
 * columns: panel q, row k at dst[(q * K + k) * 16]; zero past nc. */
static void pack_rt(const float *r, int64_t K, int64_t c0, int64_t nc, float *dst) {
    size_t panels = (size_t)(nc + RF_NR - 1) / RF_NR;
    for (size_t q = 0; q < panels; q++)
        for (int64_t k = 0; k < K; k++) {
            float *o = dst + (q * (size_t)K + (size_t)k) * RF_NR;
            for (int64_t j = 0; j < RF_NR; j++) {
                int64_t col = (int64_t)q * RF_NR + j;
                o[j] = col < nc ? r[(c0 + col) * K + k] : 0.0f;
            }
        }
}

/* c[tiles * 6 rows][panels * 16] = a[tiles * 6][K] (row stride lda) times
 * the packed panels bp; c has row stride ldc. */
static void rec_gemm_c(size_t tiles, const float *a, size_t lda, const float *bp, size_t K, size_t panels, float *c,
                       size_t ldc) {
    for (size_t q = 0; q < panels; q++)
        for (size_t t = 0; t < tiles; t++) {
            float acc[RF_MR][RF_NR] = { { 0 } };
            const float *b = bp + q * K * RF_NR, *at = a + t * RF_MR * lda;
            for (size_t k = 0; k < K; k++)
                for (int r = 0; r < RF_MR; r++)
                    for (int j = 0; j < RF_NR; j++) acc[r][j] += at[r * lda + k] * b[k * RF_NR + j];
            for (int r = 0; r < RF_MR; r++) memcpy(c + (t * RF_MR + (size_t)r) * ldc + q * RF_NR, acc[r], sizeof acc[r]);
        }
}

#if RLX_HAVE_AVX2_BUILD
/* AVX2 + FMA: a 6 x 16 tile (one panel), GEMV over 4 panels. */
#define RK_SFX avx2
#define RK_ATTR RLX_AVX2
#define RK_BITS 256
#include "backend/cpu/cpu_rnn_kern.h"
/* AVX-512: a 6 x 32 tile (two adjacent panels, an odd last panel by AVX2's
 * tile), GEMV over 8 panels. */
#define RK_SFX avx512
#define RK_ATTR RLX_AVX512
#define RK_BITS 512
#define RK_TAIL_GEMM rec_gemm_avx2
#include "backend/cpu/cpu_rnn_kern.h"
#endif

/* rows: the batch rows in use (<= tiles * 6); fewer than 3 take the GEMV. */
static void rec_gemm(rlx_cpu_isa isa, size_t rows, size_t tiles, const float *a, size_t lda, const float *bp, size_t K,
                     size_t panels, float *c, size_t ldc) {
#if RLX_HAVE_AVX2_BUILD
    if (isa == RLX_CPU_ISA_AVX512) {
        if (rows < 3) rec_gemv_avx512(rows, a, lda, bp, K, panels, c, ldc);
        else rec_gemm_avx512(tiles, a, lda, bp, K, panels, c, ldc);
        return;
    }
    if (isa == RLX_CPU_ISA_AVX2) {
        if (rows < 3) rec_gemv_avx2(rows, a, lda, bp, K, panels, c, ldc);
        else rec_gemm_avx2(tiles, a, lda, bp, K, panels, c, ldc);
        return;
    }
#endif
    (void)rows, (void)isa;
    rec_gemm_c(tiles, a, lda, bp, K, panels, c, ldc);
}

/* One batch row's gate inputs and state for a step. */
typedef struct gate_row {
    const float *gx, *bs; /* X W^T row of this direction, Wb + Rb */
    const float *gh;      /* H R^T (GRU lbr 0: the h gate at ghb) */
    const float *ghb;     /* GRU, linear_before_reset 0: (r . H) R_h^T */
    const float *rbh, *pp;
    float *h, *c, *rh, *z; /* state; GRU scratch: r . h, z (and r) */
} gate_row;

static inline float f_clip(const rlx_rnn_params *p, float v) {
    if (!p->has_clip) return v;
    return v < -p->clip ? -p->clip : v > p->clip ? p->clip : v;
}

static inline float f_act(const rlx_rnn_act *a, float x) { return rlx_ew_f32(a->kind, x, x, x, a->alpha, a->beta); }

/* Scalar gate updates of units [j0, H); `phase` 0/1 splits GRU around the
 * second product. */
static void gates_scalar(const rlx_rnn_params *p, const rlx_rnn_act *act, int64_t H, const gate_row *g, int phase,
                         int64_t j0) {
    const float *gx = g->gx, *bs = g->bs, *gh = g->gh;
    for (int64_t j = j0; j < H; j++) {
        switch (p->kind) {
        case RLX_RNN_SIMPLE: g->h[j] = f_act(&act[0], f_clip(p, gx[j] + gh[j] + bs[j])); break;
        case RLX_RNN_GRU:
            if (phase == 0) {
                float z = f_act(&act[0], f_clip(p, gx[j] + gh[j] + bs[j]));
                float r = f_act(&act[0], f_clip(p, gx[H + j] + gh[H + j] + bs[H + j]));
                g->z[j] = z;
                g->z[H + j] = r;
                g->rh[j] = r * g->h[j];
            } else {
                float z = g->z[j], r = g->z[H + j], pre;
                if (p->linear_before_reset) pre = gx[2 * H + j] + bs[2 * H + j] + r * (gh[2 * H + j] + g->rbh[j]);
                else pre = gx[2 * H + j] + bs[2 * H + j] + g->ghb[j] + g->rbh[j];
                float n = f_act(&act[1], f_clip(p, pre));
                g->h[j] = (1.0f - z) * n + z * g->h[j];
            }
            break;
        case RLX_RNN_LSTM: {
            float c = g->c[j], pi = g->pp ? g->pp[j] : 0.0f, po = g->pp ? g->pp[H + j] : 0.0f,
                  pf = g->pp ? g->pp[2 * H + j] : 0.0f;
            float gi = f_act(&act[0], f_clip(p, gx[j] + gh[j] + bs[j] + pi * c));
            float gf = p->input_forget ? 1.0f - gi
                                       : f_act(&act[0], f_clip(p, gx[2 * H + j] + gh[2 * H + j] + bs[2 * H + j] + pf * c));
            float gc = f_act(&act[1], f_clip(p, gx[3 * H + j] + gh[3 * H + j] + bs[3 * H + j]));
            float cn = gf * c + gi * gc;
            float go = f_act(&act[0], f_clip(p, gx[H + j] + gh[H + j] + bs[H + j] + po * cn));
            g->c[j] = cn;
            g->h[j] = go * f_act(&act[2], cn);
            break;
        }
        }
    }
}

#if RLX_HAVE_AVX2_BUILD
RLX_AVX2_INLINE __m256 v8_act(const rlx_rnn_act *a, __m256 x) {
    switch (a->kind) {
    case RLX_EW_SIGMOID: return rlx_ewm_sigmoid_v8(x); /* the vocabulary's vector forms: the scalar gates' bits */
    case RLX_EW_TANH: return rlx_ewm_tanh_v8(x);
    case RLX_EW_RELU: return _mm256_max_ps(_mm256_setzero_ps(), x);
    default: {
        float t[8];
        _mm256_storeu_ps(t, x);
        for (int i = 0; i < 8; i++) t[i] = f_act(a, t[i]);
        return _mm256_loadu_ps(t);
    }
    }
}

/* The gates of units [0, h8), h8 a multiple of 8; see gates_scalar. */
RLX_AVX2 static void gates_avx2(const rlx_rnn_params *p, const rlx_rnn_act *act, int64_t H, const gate_row *g,
                                int phase, int64_t h8) {
    const float *gx = g->gx, *bs = g->bs, *gh = g->gh;
    __m256 lo = _mm256_set1_ps(p->has_clip ? -p->clip : -INFINITY), hi = _mm256_set1_ps(p->has_clip ? p->clip : INFINITY);
    __m256 one = _mm256_set1_ps(1.0f);
#define V(ptr) _mm256_loadu_ps(ptr)
#define PRE(o) _mm256_add_ps(_mm256_add_ps(V(gx + (o)), V(gh + (o))), V(bs + (o)))
#define CLIPV(v) (p->has_clip ? _mm256_min_ps(hi, _mm256_max_ps(lo, v)) : (v))
    for (int64_t j = 0; j < h8; j += 8) {
        switch (p->kind) {
        case RLX_RNN_SIMPLE: _mm256_storeu_ps(g->h + j, v8_act(&act[0], CLIPV(PRE(j)))); break;
        case RLX_RNN_GRU:
            if (phase == 0) {
                __m256 z = v8_act(&act[0], CLIPV(PRE(j))), r = v8_act(&act[0], CLIPV(PRE(H + j)));
                _mm256_storeu_ps(g->z + j, z);
                _mm256_storeu_ps(g->z + H + j, r);
                _mm256_storeu_ps(g->rh + j, _mm256_mul_ps(r, V(g->h + j)));
            } else {
                __m256 z = V(g->z + j), r = V(g->z + H + j), pre = _mm256_add_ps(V(gx + 2 * H + j), V(bs + 2 * H + j));
                if (p->linear_before_reset) pre = _mm256_fmadd_ps(r, _mm256_add_ps(V(gh + 2 * H + j), V(g->rbh + j)), pre);
                else pre = _mm256_add_ps(pre, _mm256_add_ps(V(g->ghb + j), V(g->rbh + j)));
                __m256 n = v8_act(&act[1], CLIPV(pre));
                /* (1 - z) n + z h */
                _mm256_storeu_ps(g->h + j, _mm256_fmadd_ps(z, V(g->h + j), _mm256_mul_ps(_mm256_sub_ps(one, z), n)));
            }
            break;
        case RLX_RNN_LSTM: {
            __m256 c = V(g->c + j), xi = PRE(j), xf = PRE(2 * H + j), xo = PRE(H + j);
            if (g->pp) {
                xi = _mm256_fmadd_ps(V(g->pp + j), c, xi);
                xf = _mm256_fmadd_ps(V(g->pp + 2 * H + j), c, xf);
            }
            __m256 gi = v8_act(&act[0], CLIPV(xi));
            __m256 gf = p->input_forget ? _mm256_sub_ps(one, gi) : v8_act(&act[0], CLIPV(xf));
            __m256 gc = v8_act(&act[1], CLIPV(PRE(3 * H + j)));
            __m256 cn = _mm256_fmadd_ps(gf, c, _mm256_mul_ps(gi, gc));
            if (g->pp) xo = _mm256_fmadd_ps(V(g->pp + H + j), cn, xo);
            __m256 go = v8_act(&act[0], CLIPV(xo));
            _mm256_storeu_ps(g->c + j, cn);
            _mm256_storeu_ps(g->h + j, _mm256_mul_ps(go, v8_act(&act[2], cn)));
            break;
        }
        }
    }
#undef V
#undef PRE
#undef CLIPV
}
#endif

static void gates(bool avx2, const rlx_rnn_params *p, const rlx_rnn_act *act, int64_t H, const gate_row *g, int phase) {
    int64_t j0 = 0;
#if RLX_HAVE_AVX2_BUILD
    if (avx2) {
        j0 = H - H % 8;
        gates_avx2(p, act, H, g, phase, j0);
    }
#endif
    (void)avx2;
    gates_scalar(p, act, H, g, phase, j0);
}

/* Runs direction d over batch rows [b0, b1) for the whole sequence. */
static void run_unit(const rnn_fast *f, size_t unit, rlx_cpu_isa isa) {
    bool avx2 = isa >= RLX_CPU_ISA_AVX2;
    const rlx_rnn_params *p = f->p;
    const int64_t T = f->T, N = f->N, H = f->H, D = f->D, G = f->G;
    int64_t d = (int64_t)unit / f->slices, b0 = ((int64_t)unit % f->slices) * f->rows;
    int64_t b1 = b0 + f->rows < N ? b0 + f->rows : N;
    if (b0 >= b1) return;
    size_t nr = (size_t)(b1 - b0), tiles = f->nrp / RF_MR, hs = (size_t)H;
    float *h = f->ws + unit * f->ws_unit, *c = h + f->nrp * hs, *rh = c + f->nrp * hs, *gh = rh + f->nrp * hs;
    float *z = gh + f->nrp * f->ldg; /* GRU: z and r per row */
    memset(h, 0, f->ws_unit * sizeof *h);
    const float *rpa = f->rp + (size_t)d * f->rp_dir, *rpb = rpa + f->pan_a * hs * RF_NR;
    const rlx_rnn_act *act = p->act[d];
    int64_t maxl = 0;
    for (size_t i = 0; i < nr; i++) {
        int64_t b = b0 + (int64_t)i, L = f->seq ? f->seq[b] : T;
        size_t sidx = p->layout ? (size_t)((b * D + d) * H) : (size_t)((d * N + b) * H);
        if (f->h0) memcpy(h + i * hs, f->h0 + sidx, hs * sizeof *h);
        if (f->c0) memcpy(c + i * hs, f->c0 + sidx, hs * sizeof *c);
        if (L > maxl) maxl = L;
    }
    gate_row g = { .bs = f->bsum + (size_t)(d * G * H), .rbh = f->rbh + (size_t)(d * H),
                   .pp = f->pp ? f->pp + (size_t)(d * 3 * H) : NULL };
    for (int64_t s = 0; s < maxl; s++) {
        rec_gemm(isa, nr, tiles, h, hs, rpa, hs, f->pan_a, gh, f->ldg);
        for (int phase = 0; phase < (p->kind == RLX_RNN_GRU ? 2 : 1); phase++) {
            if (phase == 1 && f->pan_b) rec_gemm(isa, nr, tiles, rh, hs, rpb, hs, f->pan_b, gh + f->pan_a * RF_NR, f->ldg);
            for (size_t i = 0; i < nr; i++) {
                int64_t b = b0 + (int64_t)i, L = f->seq ? f->seq[b] : T;
                if (s >= L) continue;
                int64_t t = p->reverse[d] ? L - 1 - s : s;
                size_t xrow = p->layout ? (size_t)(b * T + t) : (size_t)(t * N + b);
                g.gx = f->gx + xrow * f->ldx + (size_t)(d * G * H);
                g.gh = gh + i * f->ldg;
                g.ghb = g.gh + f->pan_a * RF_NR;
                g.h = h + i * hs, g.c = c + i * hs, g.rh = rh + i * hs, g.z = z + 2 * i * hs;
                gates(avx2, p, act, H, &g, phase);
                if (phase + 1 == (p->kind == RLX_RNN_GRU ? 2 : 1) && f->y) {
                    size_t yo = p->layout ? (size_t)(((b * T + t) * D + d) * H) : (size_t)(((t * D + d) * N + b) * H);
                    memcpy(f->y + yo, g.h, hs * sizeof *h);
                }
            }
        }
    }
    for (size_t i = 0; i < nr; i++) {
        int64_t b = b0 + (int64_t)i, L = f->seq ? f->seq[b] : T;
        size_t sidx = p->layout ? (size_t)((b * D + d) * H) : (size_t)((d * N + b) * H);
        if (L == 0) continue; /* stays 0 */
        if (f->yh) memcpy(f->yh + sidx, h + i * hs, hs * sizeof *h);
        if (f->yc) memcpy(f->yc + sidx, c + i * hs, hs * sizeof *c);
    }
}

static void units_range(void *ctx, size_t u0, size_t u1) {
    const rnn_fast *f = ctx;
    rlx_cpu_isa isa = rlx_cpu_isa_get();
    for (size_t u = u0; u < u1; u++) run_unit(f, u, isa);
}

typedef struct pack_job {
    const rnn_fast *f;
    const float *r;
} pack_job;

static void pack_range(void *ctx, size_t d0, size_t d1) {
    const pack_job *j = ctx;
    const rnn_fast *f = j->f;
    int64_t H = f->H, GH = f->G * f->H;
    for (size_t d = d0; d < d1; d++) {
        const float *rd = j->r + d * (size_t)(GH * H);
        float *dst = f->rp + d * f->rp_dir;
        pack_rt(rd, H, 0, f->g1 * H, dst);
        if (f->pan_b) pack_rt(rd, H, f->g1 * H, GH - f->g1 * H, dst + f->pan_a * (size_t)H * RF_NR);
    }
}

static bool all_f32(const rlx_tensor *const *t, int n) {
    for (int i = 0; i < n; i++)
        if (t[i] && i != RLX_RNN_IN_SEQ_LENS && t[i]->dtype != RLX_DTYPE_F32) return false;
    return true;
}

/* The fast path; false (nothing written) when the workspace does not fit
 * in memory: the reference then runs (and reports). */
static bool rnn_fast_run(const rlx_rnn_params *p, const rlx_tensor *const *in, const rlx_rnn_sizes *sz, rlx_tensor *y,
                         rlx_tensor *yh, rlx_tensor *yc) {
    rnn_fast f = { .p = p, .T = sz->seq, .N = sz->batch, .I = sz->input, .H = sz->hidden, .D = p->num_dirs,
                   .G = p->gates };
    const int64_t T = f.T, N = f.N, I = f.I, H = f.H, D = f.D, G = f.G, GH = G * H;
    f.g1 = p->kind == RLX_RNN_GRU && !p->linear_before_reset ? 2 : (int)G;
    f.pan_a = (size_t)(f.g1 * H + RF_NR - 1) / RF_NR;
    f.pan_b = (size_t)((G - f.g1) * H + RF_NR - 1) / RF_NR;
    f.ldg = (f.pan_a + f.pan_b) * RF_NR;
    f.ldx = (size_t)(D * GH);
    int threads = rlx_parallel_threads();
    int64_t want = (threads + D - 1) / D, max_slices = (N + RF_MR - 1) / RF_MR;
    f.slices = want < max_slices ? want : max_slices;
    if (f.slices < 1) f.slices = 1;
    f.rows = (N + f.slices - 1) / f.slices;
    f.slices = (N + f.rows - 1) / f.rows;
    f.nrp = (size_t)(f.rows + RF_MR - 1) / RF_MR * RF_MR;
    f.rp_dir = (f.pan_a + f.pan_b) * (size_t)H * RF_NR;
    f.ws_unit = f.nrp * (size_t)H * 5 + f.nrp * f.ldg;
    size_t n_gx, n_units = (size_t)(D * f.slices), n_ws, total;
    if (!rlx_mul_ok((size_t)(T * N), f.ldx, &n_gx) || !rlx_mul_ok(n_units, f.ws_unit, &n_ws)) return false;
    total = n_gx + (size_t)D * f.rp_dir + (size_t)(D * GH) + (size_t)(D * H) + n_ws;
    if (total < n_gx || total > SIZE_MAX / sizeof(float)) return false;
    float *buf = malloc(total * sizeof(float));
    if (!buf) return false;
    f.gx = buf;
    f.rp = f.gx + n_gx;
    f.bsum = f.rp + (size_t)D * f.rp_dir;
    f.rbh = f.bsum + D * GH;
    f.ws = f.rbh + D * H;
    const rlx_tensor *bt = in[RLX_RNN_IN_B];
    const float *bb = bt ? bt->data : NULL;
    for (int64_t d = 0; d < D; d++) {
        for (int64_t i = 0; i < GH; i++) {
            bool rb_apart = p->kind == RLX_RNN_GRU && i >= 2 * H; /* GRU's h gate: Rb inside the reset */
            f.bsum[d * GH + i] = bb ? bb[d * 2 * GH + i] + (rb_apart ? 0.0f : bb[d * 2 * GH + GH + i]) : 0.0f;
        }
        for (int64_t j = 0; j < H; j++) f.rbh[d * H + j] = bb && p->kind == RLX_RNN_GRU ? bb[d * 2 * GH + GH + 2 * H + j] : 0.0f;
    }
    f.x = in[0]->data;
    f.h0 = in[RLX_RNN_IN_H0] ? in[RLX_RNN_IN_H0]->data : NULL;
    f.c0 = in[RLX_RNN_IN_C0] ? in[RLX_RNN_IN_C0]->data : NULL;
    f.pp = in[RLX_RNN_IN_P] ? in[RLX_RNN_IN_P]->data : NULL;
    f.seq = in[RLX_RNN_IN_SEQ_LENS] ? in[RLX_RNN_IN_SEQ_LENS]->data : NULL;
    f.y = y ? y->data : NULL;
    f.yh = yh ? yh->data : NULL;
    f.yc = yc ? yc->data : NULL;
    /* every step's X W^T, both directions, in one GEMM */
    rlx_cpu_sgemm(false, true, (size_t)(T * N), f.ldx, (size_t)I, 1.0f, f.x, (size_t)I, in[1]->data, (size_t)I, 0.0f,
                  f.gx, f.ldx);
    pack_job pj = { &f, in[2]->data };
    rlx_parallel_for((size_t)D, 1, pack_range, &pj);
    rlx_parallel_for(n_units, 1, units_range, &f);
    free(buf);
    return true;
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

    if (!k->reference && all_f32(in, RLX_RNN_MAX_IN) && (!u.y || u.y->dtype == RLX_DTYPE_F32) &&
        (!u.yh || u.yh->dtype == RLX_DTYPE_F32) && (!u.yc || u.yc->dtype == RLX_DTYPE_F32) &&
        u.T * u.N <= RLX_NN_BLAS_MAX && u.D * u.G * u.H <= RLX_NN_BLAS_MAX && u.I <= RLX_NN_BLAS_MAX &&
        rnn_fast_run(&p, in, &sz, u.y, u.yh, u.yc))
        return RLX_OK;

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
