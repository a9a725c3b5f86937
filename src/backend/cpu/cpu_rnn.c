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
 * onnxruntime 1.22's GRU, LSTM and forward RNN do; its reverse RNN gives
 * initial_h there; the ONNX spec does not say). clip bounds the input of every gate activation (not the
 * cell state passed to LSTM's h). LSTM's input_forget couples the gates as
 * f = 1 - i.
 *
 * Fast path (k->reference false; every float input and output f32; any
 * attribute combination): computed in f32.
 *  - The input projection X W^T: with 12 batch rows or more, step by
 *    step inside the recurrence: each slice (below) multiplies the step's
 *    X rows by its own columns of W^T (packed like R's, at compile time
 *    when W is constant), so the projection stays in the cache (one GEMM
 *    for every step wrote T*N*D*G*H floats, 4.5 MB at the LSTM,
 *    that the gates then read back from memory: 5% of the 1-thread time),
 *    and the slices stage the next step's X rows (a share each) before
 *    the step's barrier. Fewer rows reuse each W value too few times per
 *    step: then every step's projection, both directions, is one GEMM
 *    first (cpu_sgemm.h, on the pool's threads): Gx[T*N, D*G*H] = X[T*N,
 *    I] W[D*G*H, I]^T, X in its storage order (layout 0 or 1); a constant
 *    W is packed once when the executable is compiled
 *    (rlx_cpu_rnn_prepare).
 *  - The recurrence: the threads split over the directions and over
 *    batch groups of whole tiles of 6 rows, as many as give the busiest
 *    thread the least step work (groups_for): each (direction, group)
 *    runs its own team, whose rows no other team reads or writes, so a
 *    team of one thread has no barrier at all (the LSTM's forward
 *    half, batch 30, at 16 threads: 5 teams of 3; the whole bidirectional
 *    LSTM: one team of 8 a direction, where 10 teams of one thread, each
 *    multiplying every unit's weights for its 6 rows, took 1.3x as long
 *    on the 16-core host). Each team's hidden units split
 *    into slices, one per thread of the team (units in groups of 4, spread
 *    evenly; none whose step products are below 64K multiply-adds); the
 *    teams of a direction split alike and share its packs. A slice owns
 *    the columns of every gate of its units in R^T, packed gate-major into
 *    panels of 16 columns (at compile time when R is constant and the
 *    thread count is the run's, else by the slice's first step), and its
 *    cell state, so its gate math needs no other slice: a step is one
 *    product over its team's batch rows (padded to a multiple of 6: 6 x 32 tiles
 *    with AVX-512F, an odd last panel 12 x 16, 6 x 16 with AVX2 + FMA,
 *    portable C elsewhere;
 *    rlx_cpu_isa_get, cpu_vmath.h; batches of 1 or 2 rows a GEMV), then
 *    the gates of its units, writing h of the next step (two h buffers
 *    alternate; LSTM's in chunks of 4 vectors, the gates that do not need
 *    the new cell state first, so that their chains overlap), then one
 *    barrier per step (GRU with
 *    linear_before_reset = 0: two, as its h gate's product takes r . H of
 *    every unit; its h part is packed apart).
 *  - The barrier: each (slice, phase) is claimed once (a compare-and-swap
 *    on the slice's next phase) and counted done; a thread runs its own
 *    slice, then any slice whose thread has not started (the pool may run
 *    participants one after another, or late), then waits for the count
 *    (rlx_parallel_pause: spins while the pool spins, else yields); the
 *    pool gets up to as many items again as there are slices, items that
 *    do nothing, so that threads that come late take those. So any
 *    number of threads completes, and a slice's arithmetic is the same
 *    whichever thread runs it.
 *  - The gates run 8 (AVX2) or 16 (AVX-512) units at a time, the last
 *    group under a lane mask (cpu_rnn_gates.h), with the vocabulary's
 *    vector Sigmoid and Tanh (cpu_ew_vec.h: the bits of their f32
 *    definitions), max for Relu, the vocabulary's f32 function lane by
 *    lane for the other activations; scalar without AVX2.
 *  - The same bits on every thread count: each output of a step product is
 *    one chain of fused multiply-adds in k order whatever its tile, panel
 *    or slice, and each unit's gates take the same instructions wherever
 *    its slice starts (tests/test_cpu_rows_fast.c compares every split with
 *    the 1-thread run byte for byte).
 * Against the reference (tests/test_cpu_rows_fast.c): f32 accumulation over
 * I and H terms (the reference sums in double) gives differences of about
 * 1e-6 per step, which the recurrence carries. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_nn.h"
#include "backend/cpu/cpu_ew_vec.h"
#include "backend/cpu/cpu_sgemm.h"
#include "backend/cpu/cpu_vmath.h"
#include "base/mem.h"
#include "base/parallel.h"
#include "base/scratch.h"
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
#define RF_UNIT_GRAIN 4            /* hidden units of a slice: a multiple of this (LSTM: 16 columns, one panel) */
#define RF_MIN_SLICE_FMA 65536     /* least multiply-adds of one slice's step product (a step barrier costs ~1 us) */
#define RF_STEP_X_ROWS 12          /* least batch rows whose input projection runs step by step (rnn_fast.step_x) */

/* One slice of a direction's hidden units: its columns of every gate of
 * R^T, packed, and its private state. Claimed phase by phase (`next`);
 * one per participant of the team. */
typedef struct rnn_slice {
    _Alignas(64) atomic_long next; /* the first phase not yet claimed */
    atomic_int joined;             /* its participant has started */
    int d;                         /* direction */
    int64_t u0, nu;                /* units [u0, u0 + nu) */
    int team;                      /* its team: direction d, batch group g (d * groups + g) */
    int64_t r0, r1;                /* the team's batch rows [r0, r1), r0 a multiple of RF_MR */
    size_t tiles;                  /* the team's tiles of RF_MR rows */
    size_t pan_a, pan_b, ldg;      /* panels of the two parts (GRU lbr 0: z, r | h), floats per gh row */
    int idx;                       /* its place in its team */
    const float *rp;               /* packed R^T: part a, then part b */
    float *rp_ws;                  /* rp when the slice packs it (in its first phase); NULL: packed at compile */
    const float *wp;               /* step_x: packed W^T (K = I), the columns of rp */
    float *wp_ws;                  /* wp when the slice packs it (in its first phase); NULL: packed at compile */
    float *gh;                     /* [tiles * RF_MR][ldg]: the step's products H R^T of the team's rows, gate-major */
    float *gxs;                    /* step_x: [tiles * RF_MR][ldg], the step's X W^T, as gh */
    float *c, *z;                  /* LSTM cell [tiles * RF_MR][nu]; GRU z and r [tiles * RF_MR][2 nu] */
} rnn_slice;

typedef struct rnn_sync {
    _Alignas(64) atomic_long done;  /* slice phases completed in a direction */
    _Alignas(64) atomic_int joined; /* its participants that have started (a line apart: read every phase) */
} rnn_sync;

typedef struct rnn_fast {
    const rlx_rnn_params *p;
    int64_t T, N, I, H, D, G;
    int g1;                /* gates of the first packed part (GRU, linear_before_reset 0: z, r) */
    int phases;            /* barriers per step: 2 for GRU with linear_before_reset 0, else 1 */
    int64_t steps;         /* the longest sequence */
    size_t ldx;            /* floats per row of gx: D * G * H */
    size_t nrp, tiles;     /* batch rows padded to RF_MR, tiles of RF_MR rows */
    bool step_x;           /* the input projection step by step, slice by slice (else one GEMM first: gx) */
    const float *x, *h0, *c0, *pp, *r, *w;
    const int32_t *seq;
    float *gx;             /* !step_x: [T*N, D*G*H], rows in X's storage order */
    float *xs;             /* step_x: [D][2][nrp][I], the X rows of a step (alternating) */
    float *bsum;           /* [D][G*H]: Wb + Rb (GRU h gate: Wb only) */
    float *rbh;            /* [D][H]: GRU's Rb of the h gate */
    float *hbuf;           /* [D][2][nrp][H]: h before and after a step (alternating) */
    float *rh;             /* [D][nrp][H]: GRU r . h */
    int groups;            /* batch groups: teams per direction */
    int slices[2], first[2]; /* slices of each team of direction d; the first of its group 0 */
    rnn_slice *sl;         /* [groups * (slices[0] + slices[1])], direction by direction, group by group */
    int n_sl;              /* their count */
    rnn_sync *sync;        /* [D * groups], by team */
    float *y, *yh, *yc;
} rnn_fast;

/* Packs the columns of gates [g0, g0 + ng) for units [u0, u0 + nu) of
 * R^T (r = R_d, [G*H rows][K]), gate-major (column x: gate g0 + x / nu,
 * unit u0 + x % nu), as panels of 16 columns: panel q, row k at
 * dst[(q * K + k) * 16]; zero past the last column. */
static void pack_rt(const float *r, int64_t K, int64_t H, int64_t g0, int64_t ng, int64_t u0, int64_t nu, float *dst) {
    int64_t nc = ng * nu;
    size_t panels = (size_t)(nc + RF_NR - 1) / RF_NR;
    memset(dst, 0, panels * (size_t)K * RF_NR * sizeof *dst);
    for (int64_t col = 0; col < nc; col++) { /* column col: R row (g0 + col / nu) * H + u0 + col % nu */
        const float *src = r + ((g0 + col / nu) * H + u0 + col % nu) * K;
        float *o = dst + (size_t)(col / RF_NR) * (size_t)K * RF_NR + (size_t)(col % RF_NR);
        for (int64_t k = 0; k < K; k++) o[(size_t)k * RF_NR] = src[k];
    }
}

/* Packs slice s's columns of R^T (m = R: [D][G*H][H], K = H) or of W^T
 * (m = W: [D][G*H][I], K = I) at dst. */
static void pack_slice(const rnn_fast *f, const float *m, int64_t K, const rnn_slice *s, float *dst) {
    int64_t H = f->H, G = f->G;
    const float *md = m + (size_t)(s->d * G * H * K);
    pack_rt(md, K, H, 0, f->g1, s->u0, s->nu, dst);
    if (s->pan_b) pack_rt(md, K, H, f->g1, G - f->g1, s->u0, s->nu, dst + s->pan_a * (size_t)K * RF_NR);
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
/* AVX-512, one panel at a time (the odd last panel of rec_gemm_avx512's
 * pairs: a slice of 28 LSTM units has 7), two tiles (12 rows) per pass:
 * twelve 16-lane accumulators, where one tile's six would leave the FMA
 * units waiting on their latency. Each output the same chain as in the
 * other kernels. */
#define RF_P1_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define RF_P1_ROWS12(X) RF_P1_ROWS(X) X(6) X(7) X(8) X(9) X(10) X(11)
RLX_AVX512 static void rec_gemm_p1_avx512(size_t tiles, const float *a, size_t lda, const float *bp, size_t K,
                                          size_t panels, float *c, size_t ldc) {
#define RF_P1_DECL(r) __m512 c##r = _mm512_setzero_ps();
#define RF_P1_FMA(r) c##r = _mm512_fmadd_ps(_mm512_set1_ps(a0[(r) * lda + k]), bv, c##r);
#define RF_P1_STORE(r) _mm512_storeu_ps(o + (r) * ldc, c##r);
/* the rows ROWS names of tile t (and t + 1) of panel q */
#define RF_P1_TILES(ROWS)                                                  \
    {                                                                      \
        const float *a0 = a + t * RF_MR * lda, *b = bp + q * K * RF_NR;    \
        ROWS(RF_P1_DECL)                                                   \
        for (size_t k = 0; k < K; k++, b += RF_NR) {                       \
            __m512 bv = _mm512_loadu_ps(b);                                \
            ROWS(RF_P1_FMA)                                                \
        }                                                                  \
        float *o = c + t * RF_MR * ldc + q * RF_NR;                        \
        ROWS(RF_P1_STORE)                                                  \
    }
    for (size_t q = 0; q < panels; q++) {
        size_t t = 0;
        for (; t + 2 <= tiles; t += 2) RF_P1_TILES(RF_P1_ROWS12)
        for (; t < tiles; t++) RF_P1_TILES(RF_P1_ROWS)
    }
#undef RF_P1_TILES
#undef RF_P1_DECL
#undef RF_P1_FMA
#undef RF_P1_STORE
}
#undef RF_P1_ROWS
#undef RF_P1_ROWS12
/* AVX-512: a 6 x 32 tile (two adjacent panels, an odd last panel by
 * rec_gemm_p1_avx512), GEMV over 8 panels. */
#define RK_SFX avx512
#define RK_ATTR RLX_AVX512
#define RK_BITS 512
#define RK_TAIL_GEMM rec_gemm_p1_avx512
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

/* One batch row's gate inputs and state for a step, for the units of one
 * slice: gate g of unit j at gx[g * xs + j] (GRU's h gate, g = 2, at
 * gxh[j]), bs[g * H + j], pp[g * H + j] (peepholes i, o, f; NULL: none)
 * and at gh[g * n + j], z[g * n + j] (n: the slice's units). */
typedef struct gate_row {
    const float *gx, *gxh; /* X W^T of this row and direction (the slice's gxs or a row of gx) */
    int64_t xs;            /* floats between gx's gates: n (gxs) or H (gx) */
    const float *bs;       /* Wb + Rb (GRU's h gate: Wb) */
    const float *gh;      /* H R^T (GRU lbr 0: the h gate at ghb) */
    const float *ghb;     /* GRU, linear_before_reset 0: (r . H) R_h^T */
    const float *rbh, *pp;
    const float *hp;      /* h before the step */
    float *hn, *c, *rh, *z; /* h after the step; cell; GRU scratch: r . h, z (and r) */
} gate_row;

static inline float f_clip(const rlx_rnn_params *p, float v) {
    if (!p->has_clip) return v;
    return v < -p->clip ? -p->clip : v > p->clip ? p->clip : v;
}

static inline float f_act(const rlx_rnn_act *a, float x) { return rlx_ew_f32(a->kind, x, x, x, a->alpha, a->beta); }

/* Scalar gate updates of units [0, n) (without AVX2); `phase` 0/1 splits
 * GRU around the second product. */
static void gates_scalar(const rlx_rnn_params *p, const rlx_rnn_act *act, int64_t H, int64_t n, const gate_row *g,
                         int phase) {
    const float *gx = g->gx, *bs = g->bs, *gh = g->gh;
    const int64_t xs = g->xs;
    for (int64_t j = 0; j < n; j++) {
        switch (p->kind) {
        case RLX_RNN_SIMPLE: g->hn[j] = f_act(&act[0], f_clip(p, gx[j] + gh[j] + bs[j])); break;
        case RLX_RNN_GRU:
            if (phase == 0) {
                float z = f_act(&act[0], f_clip(p, gx[j] + gh[j] + bs[j]));
                float r = f_act(&act[0], f_clip(p, gx[xs + j] + gh[n + j] + bs[H + j]));
                g->z[j] = z;
                g->z[n + j] = r;
                g->rh[j] = r * g->hp[j];
            } else {
                float z = g->z[j], r = g->z[n + j], pre;
                if (p->linear_before_reset) pre = g->gxh[j] + bs[2 * H + j] + r * (gh[2 * n + j] + g->rbh[j]);
                else pre = g->gxh[j] + bs[2 * H + j] + g->ghb[j] + g->rbh[j];
                float nn = f_act(&act[1], f_clip(p, pre));
                g->hn[j] = (1.0f - z) * nn + z * g->hp[j];
            }
            break;
        case RLX_RNN_LSTM: {
            float c = g->c[j], pi = g->pp ? g->pp[j] : 0.0f, po = g->pp ? g->pp[H + j] : 0.0f,
                  pf = g->pp ? g->pp[2 * H + j] : 0.0f;
            float gi = f_act(&act[0], f_clip(p, gx[j] + gh[j] + bs[j] + pi * c));
            float gf = p->input_forget ? 1.0f - gi
                                       : f_act(&act[0], f_clip(p, gx[2 * xs + j] + gh[2 * n + j] + bs[2 * H + j] + pf * c));
            float gc = f_act(&act[1], f_clip(p, gx[3 * xs + j] + gh[3 * n + j] + bs[3 * H + j]));
            float cn = gf * c + gi * gc;
            float go = f_act(&act[0], f_clip(p, gx[xs + j] + gh[n + j] + bs[H + j] + po * cn));
            g->c[j] = cn;
            g->hn[j] = go * f_act(&act[2], cn);
            break;
        }
        }
    }
}

#if RLX_HAVE_AVX2_BUILD
#define GV_SFX avx2
#define GV_ATTR RLX_AVX2
#define GV_W 8
#include "backend/cpu/cpu_rnn_gates.h"
#define GV_SFX avx512
#define GV_ATTR RLX_AVX512
#define GV_W 16
#include "backend/cpu/cpu_rnn_gates.h"
#endif

static void gates(rlx_cpu_isa isa, const rlx_rnn_params *p, const rlx_rnn_act *act, int64_t H, int64_t n,
                  const gate_row *g, int phase) {
#if RLX_HAVE_AVX2_BUILD
    if (isa == RLX_CPU_ISA_AVX512) {
        gates_avx512(p, act, H, n, g, phase);
        return;
    }
    if (isa == RLX_CPU_ISA_AVX2) {
        gates_avx2(p, act, H, n, g, phase);
        return;
    }
#endif
    (void)isa;
    gates_scalar(p, act, H, n, g, phase);
}

/* The row of X (and of gx) that batch row b reads at step s of direction
 * d (s < L, the row's length). */
static size_t x_row(const rnn_fast *f, int64_t d, int64_t s, int64_t b, int64_t L) {
    int64_t t = f->p->reverse[d] ? L - 1 - s : s;
    return f->p->layout ? (size_t)(b * f->T + t) : (size_t)(t * f->N + b);
}

/* step_x: copies the X rows of step s of direction d for batch rows b0,
 * b0 + stride, ... below b1 into dst ([nrp][I]); rows whose sequence is
 * over by then keep what they held (their products are not used). */
static void stage_x(const rnn_fast *f, int64_t d, int64_t s, int64_t b0, int64_t stride, int64_t b1, float *dst) {
    for (int64_t b = b0; b < b1; b += stride) {
        int64_t L = f->seq ? f->seq[b] : f->T;
        if (s < L)
            memcpy(dst + (size_t)(b * f->I), f->x + x_row(f, d, s, b, L) * (size_t)f->I, (size_t)f->I * sizeof *dst);
    }
}

/* Phase k of step s of slice `sl` (k 1: GRU's second product and its h
 * gate, linear_before_reset 0). Step 0 packs the slice's weights first.
 * With step_x, phase 0 first multiplies the step's X rows (staged in the
 * step before) by the slice's W^T, and the last phase stages the slice's
 * share of the next step's X rows (the barrier then publishes them). */
static void slice_phase(const rnn_fast *f, rnn_slice *sl, int64_t s, int k, rlx_cpu_isa isa) {
    const rlx_rnn_params *p = f->p;
    const int64_t T = f->T, N = f->N, H = f->H, I = f->I, D = f->D, G = f->G, d = sl->d, u0 = sl->u0, n = sl->nu;
    const int64_t r0 = sl->r0, r1 = sl->r1;
    const size_t hs = (size_t)H, nrh = f->nrp * hs, nri = f->nrp * (size_t)I, ro = (size_t)r0;
    if (s == 0 && k == 0) {
        if (sl->rp_ws) pack_slice(f, f->r, H, sl, sl->rp_ws);
        if (sl->wp_ws) pack_slice(f, f->w, I, sl, sl->wp_ws);
    }
    float *hbuf = f->hbuf + (size_t)d * 2 * nrh, *rh = f->rh + (size_t)d * nrh;
    const float *hp = hbuf + (size_t)(s & 1) * nrh;
    float *hn = hbuf + (size_t)((s + 1) & 1) * nrh;
    float *xsd = f->step_x ? f->xs + (size_t)d * 2 * nri : NULL;
    /* the team's rows: its tiles, the rows before it skipped (rows = N:
     * the GEMV only for batches of 1 or 2, one group) */
    if (k == 0 && xsd)
        rec_gemm(isa, (size_t)N, sl->tiles, xsd + (size_t)(s & 1) * nri + ro * (size_t)I, (size_t)I, sl->wp, (size_t)I,
                 sl->pan_a + sl->pan_b, sl->gxs, sl->ldg);
    if (k == 0) rec_gemm(isa, (size_t)N, sl->tiles, hp + ro * hs, hs, sl->rp, hs, sl->pan_a, sl->gh, sl->ldg);
    else rec_gemm(isa, (size_t)N, sl->tiles, rh + ro * hs, hs, sl->rp + sl->pan_a * hs * RF_NR, hs, sl->pan_b,
                  sl->gh + sl->pan_a * RF_NR, sl->ldg);
    const rlx_rnn_act *act = p->act[d];
    bool last = k == f->phases - 1;
    int ph1 = p->kind == RLX_RNN_GRU && p->linear_before_reset ? 1 : k; /* GRU lbr 1: both gate phases now */
    gate_row g = { .bs = f->bsum + (size_t)(d * G * H + u0), .rbh = f->rbh + (size_t)(d * H + u0),
                   .pp = f->pp ? f->pp + (size_t)(d * 3 * H + u0) : NULL, .xs = xsd ? n : H };
    for (int64_t b = r0; b < r1; b++) {
        int64_t L = f->seq ? f->seq[b] : T;
        size_t hrow = (size_t)b * hs + (size_t)u0, br = (size_t)(b - r0);
        if (s >= L) { /* the row is over: its h stays */
            if (last) memcpy(hn + hrow, hp + hrow, (size_t)n * sizeof *hn);
            continue;
        }
        int64_t t = p->reverse[d] ? L - 1 - s : s;
        g.gh = sl->gh + br * sl->ldg;
        g.ghb = g.gh + sl->pan_a * RF_NR;
        if (xsd) {
            g.gx = sl->gxs + br * sl->ldg;
            g.gxh = f->g1 < G ? g.gx + sl->pan_a * RF_NR : g.gx + 2 * n;
        } else {
            g.gx = f->gx + x_row(f, d, s, b, L) * f->ldx + (size_t)(d * G * H + u0);
            g.gxh = g.gx + 2 * H;
        }
        g.hp = hp + hrow, g.hn = hn + hrow, g.rh = rh + hrow;
        g.c = sl->c + br * (size_t)n, g.z = sl->z + 2 * br * (size_t)n;
        for (int ph = k; ph <= ph1; ph++) gates(isa, p, act, H, n, &g, ph);
        if (last && f->y) {
            size_t yo = p->layout ? (size_t)(((b * T + t) * D + d) * H) : (size_t)(((t * D + d) * N + b) * H);
            memcpy(f->y + yo + u0, g.hn, (size_t)n * sizeof *hn);
        }
    }
    if (last && xsd && s + 1 < f->steps)
        stage_x(f, d, s + 1, r0 + sl->idx, f->slices[d], r1, xsd + (size_t)((s + 1) & 1) * nri);
    if (!last || s + 1 < f->steps) return;
    for (int64_t b = r0; b < r1; b++) { /* the final state; rows of length 0 keep their zeros */
        if ((f->seq ? f->seq[b] : T) == 0) continue;
        size_t sidx = (p->layout ? (size_t)((b * D + d) * H) : (size_t)((d * N + b) * H)) + (size_t)u0;
        if (f->yh) memcpy(f->yh + sidx, hn + (size_t)b * hs + (size_t)u0, (size_t)n * sizeof *hn);
        if (f->yc) memcpy(f->yc + sidx, sl->c + (size_t)(b - r0) * (size_t)n, (size_t)n * sizeof *hn);
    }
}

/* Claims phase ph of a slice: true for the one thread that gets it. */
static bool slice_claim(rnn_slice *sl, long ph) {
    long want = ph;
    return atomic_load_explicit(&sl->next, memory_order_relaxed) == ph &&
           atomic_compare_exchange_strong_explicit(&sl->next, &want, ph + 1, memory_order_acq_rel, memory_order_relaxed);
}

/* Participant q of its direction's team: every phase, its own slice, then
 * any slice whose participant has not started (the pool may run the
 * participants one after another, or join late), then a wait until the
 * direction's phase is complete (its barrier). Each slice phase is
 * computed by exactly one thread, the same arithmetic whichever. Once the
 * whole team has started, the others' slices are left alone: their
 * cache lines (the owner's compare-and-swap every phase) are not read. */
static void participant(const rnn_fast *f, size_t q, rlx_cpu_isa isa) {
    rnn_slice *own = &f->sl[q];
    const int d = own->d, S = f->slices[d];
    rnn_slice *team = own - own->idx;
    atomic_long *done = &f->sync[own->team].done;
    const long total = (long)f->steps * f->phases;
    atomic_int *joined = &f->sync[own->team].joined;
    atomic_store_explicit(&own->joined, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(joined, 1, memory_order_relaxed);
    for (long ph = atomic_load_explicit(done, memory_order_acquire) / S; ph < total; ph++) {
        int64_t s = ph / f->phases;
        int k = (int)(ph % f->phases);
        int last = atomic_load_explicit(joined, memory_order_relaxed) < S ? S : 0; /* 0: all started */
        for (int j = -1; j < last; j++) {
            rnn_slice *o = j < 0 ? own : &team[j];
            if (j >= 0 && (o == own || atomic_load_explicit(&o->joined, memory_order_relaxed))) continue;
            if (!slice_claim(o, ph)) continue;
            slice_phase(f, o, s, k, isa);
            atomic_fetch_add_explicit(done, 1, memory_order_release);
        }
        unsigned spins = 0;
        while (atomic_load_explicit(done, memory_order_acquire) < (ph + 1) * S) rlx_parallel_pause(&spins);
    }
}

/* Items past the slices are none: the pool's threads that come last take
 * them, and the slices go to the first ones (a thread that joins late,
 * woken or scheduled late, would hold up the team that waits for it: on
 * the 16-core host, one or two of them joined 0.6-1.5 ms late in most
 * runs, the 2.4-4.8 ms LSTM's bimodal times). */
static void participants_range(void *ctx, size_t q0, size_t q1) {
    const rnn_fast *f = ctx;
    rlx_cpu_isa isa = rlx_cpu_isa_get();
    for (size_t q = q0; q < q1 && q < (size_t)f->n_sl; q++) participant(f, q, isa);
}

static bool all_f32(const rlx_tensor *const *t, int n) {
    for (int i = 0; i < n; i++)
        if (t[i] && i != RLX_RNN_IN_SEQ_LENS && t[i]->dtype != RLX_DTYPE_F32) return false;
    return true;
}

static int64_t g_min_slice_fma = RF_MIN_SLICE_FMA;

void rlx_cpu_rnn_min_slice(int64_t fma) { g_min_slice_fma = fma > 0 ? fma : RF_MIN_SLICE_FMA; }

static int g_groups_force; /* 0: by rule */

void rlx_cpu_rnn_groups(int groups) { g_groups_force = groups > 0 ? groups : 0; }

/* Slices per team of direction d for `threads` threads: the threads split
 * over the directions and batch groups, at most one slice per
 * RF_UNIT_GRAIN units, each slice's step products (K: H, or H + I with
 * step_x; rows: a group's) at least RF_MIN_SLICE_FMA multiply-adds. */
static int slices_for(int threads, int64_t D, int64_t groups, int64_t d, int64_t rows, int64_t K, int64_t H,
                      int64_t G) {
    int64_t teams = D * groups;
    int64_t want = threads >= teams ? threads / teams + (groups == 1 && d < threads % D) : 1;
    int64_t by_units = (H + RF_UNIT_GRAIN - 1) / RF_UNIT_GRAIN;
    int64_t by_work = rows * K * G * H / g_min_slice_fma;
    if (want > by_units) want = by_units;
    if (want > by_work) want = by_work;
    return want < 1 ? 1 : (int)want;
}

/* Batch groups for `threads` threads (each direction's batch tiles split
 * into this many teams, each with its own slices and barrier): the count
 * whose busiest thread has the least step work, tiles per team x unit
 * groups per slice (ties: fewer teams). Measured on the 16-core host
 * (bench/rnn_node, hot, us per call; the rule's choice in brackets):
 * the bidirectional LSTM (batch 30: 5 tiles) at 16 threads,
 * 1 team of 8 slices a direction 1479 [1], 2 of 4 1534, 5 of 1 1965 (the
 * rule before: a team per tile wherever every tile could have a thread);
 * its forward half at 16 threads 872 [5 teams of 3: 789], at 8 threads
 * 1241 [1 of 8], 5 of 1 1968; the bidirectional GRU at 16 1367 [1],
 * 5 of 1 1608. A team of one thread has no barrier, but its thread
 * multiplies every unit's weights for its tile alone. */
static int groups_for(const rnn_fast *f, int threads) {
    if (g_groups_force) {
        int64_t g = g_groups_force;
        if (g > threads / f->D) g = threads / f->D;
        if (g > (int64_t)f->tiles) g = (int64_t)f->tiles;
        return g < 1 ? 1 : (int)g;
    }
    int64_t P = (int64_t)f->tiles, ugroups = (f->H + RF_UNIT_GRAIN - 1) / RF_UNIT_GRAIN, best = 1, best_cost = -1;
    int64_t K = f->step_x ? f->H + f->I : f->H;
    for (int64_t g = 1; g <= P && g <= threads / f->D; g++) {
        int64_t gtiles = (P + g - 1) / g;
        int64_t s = slices_for(threads, f->D, g, 0, gtiles * RF_MR, K, f->H, f->G);
        int64_t cost = gtiles * ((ugroups + s - 1) / s);
        if (best_cost < 0 || cost < best_cost) best = g, best_cost = cost;
    }
    return (int)best;
}

/* The sizes of f (p, T, N, I, H, D, G) and what follows from them. */
static void fast_init(rnn_fast *f, const rlx_rnn_params *p, const rlx_rnn_sizes *sz) {
    *f = (rnn_fast){ .p = p, .T = sz->seq, .N = sz->batch, .I = sz->input, .H = sz->hidden, .D = p->num_dirs,
                     .G = p->gates };
    f->g1 = p->kind == RLX_RNN_GRU && !p->linear_before_reset ? 2 : (int)f->G;
    f->phases = f->g1 < f->G ? 2 : 1;
    f->ldx = (size_t)(f->D * f->G * f->H);
    f->nrp = (size_t)(f->N + RF_MR - 1) / RF_MR * RF_MR;
    f->tiles = f->nrp / RF_MR;
    /* a step's rows reuse each packed W value N times; fewer rows and the
     * product would wait on W (the whole of it every step) */
    f->step_x = f->N >= RF_STEP_X_ROWS;
}

/* Splits each direction's batch tiles into f->groups teams and each
 * team's units into slices for `threads` threads (f->slices, f->first)
 * and returns the slices' count; with sl, also each slice's rows (its
 * team's tiles, spread evenly), units (groups of RF_UNIT_GRAIN spread
 * evenly) and panels. The teams of a direction split their units alike,
 * so they share the packs: *panels gets the panels of one team per
 * direction (packed R has *panels * H * RF_NR floats, packed W *panels *
 * I * RF_NR). */
static int plan_slices(rnn_fast *f, int threads, rnn_slice *sl, size_t *panels) {
    int n_sl = 0;
    int64_t H = f->H, G = f->G, ugroups = (H + RF_UNIT_GRAIN - 1) / RF_UNIT_GRAIN, P = (int64_t)f->tiles;
    f->groups = groups_for(f, threads);
    int64_t gtiles = (P + f->groups - 1) / f->groups;
    if (panels) *panels = 0;
    for (int64_t d = 0; d < f->D; d++) {
        f->first[d] = n_sl;
        f->slices[d] = slices_for(threads, f->D, f->groups, d, gtiles * RF_MR, f->step_x ? H + f->I : H, H, G);
        for (int64_t gr = 0; gr < f->groups; gr++) {
            int64_t t0 = P * gr / f->groups, t1 = P * (gr + 1) / f->groups;
            for (int j = 0; sl && j < f->slices[d]; j++) {
                rnn_slice *s = &sl[n_sl + j];
                int64_t a = ugroups * j / f->slices[d] * RF_UNIT_GRAIN;
                int64_t e = ugroups * (j + 1) / f->slices[d] * RF_UNIT_GRAIN;
                s->d = (int)d;
                s->team = (int)(d * f->groups + gr);
                s->idx = j;
                s->r0 = t0 * RF_MR;
                s->r1 = t1 * RF_MR < f->N ? t1 * RF_MR : f->N;
                s->tiles = (size_t)(t1 - t0);
                s->u0 = a;
                s->nu = (e < H ? e : H) - a;
                s->pan_a = (size_t)(f->g1 * s->nu + RF_NR - 1) / RF_NR;
                s->pan_b = (size_t)((G - f->g1) * s->nu + RF_NR - 1) / RF_NR;
                s->ldg = (s->pan_a + s->pan_b) * RF_NR;
                if (panels && gr == 0) *panels += s->pan_a + s->pan_b;
            }
            n_sl += f->slices[d];
        }
    }
    return n_sl;
}

/* The fast path; false (nothing written) when the workspace does not fit
 * in memory: the reference then runs (and reports). pk: the node's packs
 * (rlx_cpu_rnn_prepare) or NULL. */
static bool rnn_fast_run(const rlx_rnn_params *p, const rlx_tensor *const *in, const rlx_rnn_sizes *sz,
                         const rlx_cpu_sgemm_pack *pk, rlx_tensor *y, rlx_tensor *yh, rlx_tensor *yc) {
    rnn_fast f;
    fast_init(&f, p, sz);
    const int64_t T = f.T, N = f.N, I = f.I, H = f.H, D = f.D, G = f.G, GH = G * H;
    f.seq = in[RLX_RNN_IN_SEQ_LENS] ? in[RLX_RNN_IN_SEQ_LENS]->data : NULL;
    for (int64_t b = 0; b < N; b++) {
        int64_t L = f.seq ? f.seq[b] : T;
        if (L > f.steps) f.steps = L;
    }
    int threads = rlx_parallel_threads();
    int n_sl = plan_slices(&f, threads, NULL, NULL);
    /* the slices in the calling thread's INDEX buffer (zeroed), else one block */
    size_t sl_bytes = (size_t)n_sl * sizeof(rnn_slice) + (size_t)(D * f.groups) * sizeof(rnn_sync);
    rnn_slice *sl = rlx_scratch_get(RLX_SCRATCH_INDEX, sl_bytes), *sl_own = NULL;
    if (sl) memset(sl, 0, sl_bytes);
    else if (!(sl = sl_own = rlx_alloc_aligned(sl_bytes))) return false;
    f.sl = sl;
    f.sync = (rnn_sync *)(sl + n_sl);
    size_t n_pan, n_rp, n_wp = 0;
    plan_slices(&f, threads, sl, &n_pan);
    /* R (and with step_x W) packed when the executable was compiled, for this split */
    bool pre = pk && pk->rnn_r && pk->rnn_slices[0] == f.slices[0] && (D < 2 || pk->rnn_slices[1] == f.slices[1]);
    const float *rp_pre = pre ? pk->rnn_r : NULL, *wp_pre = pre && f.step_x ? pk->rnn_w : NULL;
    if (!rlx_mul_ok(n_pan, (size_t)H * RF_NR, &n_rp) || (f.step_x && !rlx_mul_ok(n_pan, (size_t)I * RF_NR, &n_wp))) {
        rlx_free_aligned(sl_own);
        return false;
    }
    size_t n_ws = (rp_pre ? 0 : n_rp) + (wp_pre ? 0 : n_wp); /* floats of the slices' workspaces */
    for (int i = 0; i < n_sl; i++) {
        atomic_init(&sl[i].next, 0);
        atomic_init(&sl[i].joined, 0);
        n_ws += sl[i].tiles * RF_MR * ((f.step_x ? 2 : 1) * sl[i].ldg + 3 * (size_t)sl[i].nu);
    }
    for (int64_t t = 0; t < D * f.groups; t++) atomic_init(&f.sync[t].done, 0), atomic_init(&f.sync[t].joined, 0);
    size_t n_gx = 0, n_xs = 0, n_state, total;
    if ((f.step_x ? !rlx_mul_ok(f.nrp * (size_t)I, (size_t)(2 * D), &n_xs) : !rlx_mul_ok((size_t)(T * N), f.ldx, &n_gx)) ||
        !rlx_mul_ok(f.nrp * (size_t)H, (size_t)(3 * D), &n_state)) {
        rlx_free_aligned(sl_own);
        return false;
    }
    total = n_gx + n_xs + (size_t)(D * GH) + (size_t)(D * H) + n_state + n_ws;
    if (total < n_gx + n_xs || total < n_ws || total > SIZE_MAX / sizeof(float)) {
        rlx_free_aligned(sl_own);
        return false;
    }
    float *buf = rlx_scratch_get(RLX_SCRATCH_CALL, total * sizeof(float)), *owned = NULL;
    if (!buf && !(buf = owned = malloc(total * sizeof(float)))) {
        rlx_free_aligned(sl_own);
        return false;
    }
    f.gx = f.step_x ? NULL : buf;
    f.xs = f.step_x ? buf : NULL;
    f.bsum = buf + n_gx + n_xs;
    f.rbh = f.bsum + D * GH;
    f.hbuf = f.rbh + D * H;
    f.rh = f.hbuf + 2 * (size_t)D * f.nrp * (size_t)H;
    float *q = f.hbuf;
    memset(f.hbuf, 0, n_state * sizeof(float)); /* h, r . h: padded rows stay 0 */
    if (f.xs) memset(f.xs, 0, n_xs * sizeof(float)); /* X rows never staged: read, their products unused */
    q += n_state;
    const float *rq = rp_pre, *wq = wp_pre;
    for (int i = 0; i < n_sl; i++) {
        rnn_slice *s = &sl[i];
        size_t nu = (size_t)s->nu, pans = s->pan_a + s->pan_b, rows = s->tiles * RF_MR;
        if (s->team % f.groups) { /* a later batch group: group 0's packs */
            const rnn_slice *s0 = &sl[f.first[s->d] + s->idx];
            s->rp = s0->rp, s->wp = s0->wp;
        } else {
            if (rp_pre) s->rp = rq, rq += pans * (size_t)H * RF_NR;
            else s->rp = s->rp_ws = q, q += pans * (size_t)H * RF_NR;
            if (wp_pre) s->wp = wq, wq += pans * (size_t)I * RF_NR;
            else if (f.step_x) s->wp = s->wp_ws = q, q += pans * (size_t)I * RF_NR;
        }
        s->gh = q, q += rows * s->ldg;
        if (f.step_x) s->gxs = q, q += rows * s->ldg;
        s->c = q, q += rows * nu;
        s->z = q, q += 2 * rows * nu;
        memset(s->c, 0, 3 * rows * nu * sizeof(float));
    }
    /* several teams read a direction's packs: packed here, not by the
     * slices' first steps */
    for (int i = 0; f.groups > 1 && i < n_sl; i++) {
        rnn_slice *s = &sl[i];
        if (s->rp_ws) pack_slice(&f, in[2]->data, H, s, s->rp_ws);
        if (s->wp_ws) pack_slice(&f, in[1]->data, I, s, s->wp_ws);
        s->rp_ws = s->wp_ws = NULL;
    }
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
    f.w = in[1]->data;
    f.r = in[2]->data;
    f.h0 = in[RLX_RNN_IN_H0] ? in[RLX_RNN_IN_H0]->data : NULL;
    f.c0 = in[RLX_RNN_IN_C0] ? in[RLX_RNN_IN_C0]->data : NULL;
    f.pp = in[RLX_RNN_IN_P] ? in[RLX_RNN_IN_P]->data : NULL;
    f.y = y ? y->data : NULL;
    f.yh = yh ? yh->data : NULL;
    f.yc = yc ? yc->data : NULL;
    /* the initial state: h into the first buffer, c into the slices */
    for (int64_t d = 0; f.h0 && d < D; d++)
        for (int64_t b = 0; b < N; b++) {
            size_t sidx = p->layout ? (size_t)((b * D + d) * H) : (size_t)((d * N + b) * H);
            memcpy(f.hbuf + ((size_t)d * 2 * f.nrp + (size_t)b) * (size_t)H, f.h0 + sidx, (size_t)H * sizeof(float));
        }
    for (int i = 0; f.c0 && i < n_sl; i++) {
        rnn_slice *s = &sl[i];
        for (int64_t b = s->r0; b < s->r1; b++) {
            size_t sidx = p->layout ? (size_t)((b * D + s->d) * H) : (size_t)((s->d * N + b) * H);
            memcpy(s->c + (size_t)(b - s->r0) * (size_t)s->nu, f.c0 + sidx + (size_t)s->u0, (size_t)s->nu * sizeof(float));
        }
    }
    if (f.step_x) { /* step 0's X rows; the slices stage the later ones */
        for (int64_t d = 0; d < D; d++) stage_x(&f, d, 0, 0, 1, N, f.xs + (size_t)d * 2 * f.nrp * (size_t)I);
    } else { /* every step's X W^T, both directions, in one GEMM (W^T packed
              * once when the executable was compiled: rlx_cpu_rnn_prepare) */
        rlx_cpu_sgemm_packref wp = { pk, 0, 0 };
        rlx_cpu_sgemm_packed(false, true, (size_t)(T * N), f.ldx, (size_t)I, 1.0f, f.x, (size_t)I, f.w, (size_t)I, 0.0f,
                             f.gx, f.ldx, NULL, pk && pk->data ? &wp : NULL);
    }
    f.n_sl = n_sl;
    /* up to as many items again, none: spares for threads that come late;
     * one slice runs on the calling thread alone (a spare only made the
     * call wait for a worker to wake and take nothing) */
    int items = n_sl == 1 ? 1 : n_sl >= threads ? n_sl : 2 * n_sl < threads ? 2 * n_sl : threads;
    if (f.steps > 0) rlx_parallel_for((size_t)items, 1, participants_range, &f);
    free(owned);
    rlx_free_aligned(sl_own);
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
        rnn_fast_run(&p, in, &sz, k->pack, u.y, u.yh, u.yc))
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

rlx_status rlx_cpu_rnn_prepare(const rlx_graph *g, const rlx_node *n, const rlx_tensor *const *in,
                               rlx_cpu_sgemm_pack *out) {
    memset(out, 0, sizeof *out);
    rlx_rnn_params p;
    const int64_t *dims[RLX_RNN_MAX_IN];
    int ranks[RLX_RNN_MAX_IN];
    if (n->n_in < 3) return RLX_OK;
    if (rlx_rnn_params_resolve(n, &p)) { /* the run reports it */
        rlx_clear_error();
        return RLX_OK;
    }
    int max_in = p.kind == RLX_RNN_LSTM ? RLX_RNN_MAX_IN : RLX_RNN_IN_C0;
    for (int i = 0; i < RLX_RNN_MAX_IN; i++) {
        const rlx_tensor *t = i < n->n_in && i < max_in ? in[i] : NULL;
        dims[i] = t ? t->dims : NULL;
        ranks[i] = t ? t->rank : -1;
    }
    const rlx_tensor *w = in[1], *r = in[2];
    rlx_rnn_sizes sz;
    if (!in[0] || !w || !r || in[0]->dtype != RLX_DTYPE_F32 || rlx_rnn_check_shapes(n, &p, dims, ranks, &sz)) {
        rlx_clear_error();
        return RLX_OK;
    }
    bool w_const = w->data && w->dtype == RLX_DTYPE_F32 && (!g || (n->in[1] >= 0 && g->values[n->in[1]].konst));
    bool r_const = r->data && r->dtype == RLX_DTYPE_F32 && (!g || (n->in[2] >= 0 && g->values[n->in[2]].konst));
    int64_t rows = sz.seq * sz.batch, cols = p.num_dirs * p.gates * sz.hidden;
    if (rows < 1 || sz.input < 1 || sz.hidden < 1 || rows > RLX_NN_BLAS_MAX || cols > RLX_NN_BLAS_MAX ||
        sz.input > RLX_NN_BLAS_MAX)
        return RLX_OK;
    rnn_fast f;
    fast_init(&f, &p, &sz);
    /* W: for the one GEMM (policy pool), or per slice with step_x (below) */
    if (w_const && !f.step_x && rlx_cpu_gemm_policy_get() == RLX_CPU_GEMM_POOL)
        RLX_TRY(rlx_cpu_sgemm_pack_b(true, (size_t)sz.input, (size_t)cols, w->data, (size_t)sz.input, out));
    if (!r_const) return RLX_OK;
    int threads = rlx_parallel_threads(), n_sl = plan_slices(&f, threads, NULL, NULL);
    rnn_slice *sl = rlx_alloc_aligned((size_t)n_sl * sizeof *sl);
    size_t n_pan, n_rp = 0, n_wp = 0;
    if (!sl) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", rlx_node_desc(n));
    plan_slices(&f, threads, sl, &n_pan);
    bool pack_w = f.step_x && w_const;
    float *rp = NULL, *wp = NULL;
    if (rlx_mul_ok(n_pan, (size_t)sz.hidden * RF_NR * sizeof(float), &n_rp) &&
        (!pack_w || rlx_mul_ok(n_pan, (size_t)sz.input * RF_NR * sizeof(float), &n_wp))) {
        rp = malloc(n_rp);
        wp = pack_w ? malloc(n_wp) : NULL;
    }
    if (!rp || (pack_w && !wp)) {
        free(rp);
        free(wp);
        rlx_free_aligned(sl);
        rlx_cpu_sgemm_pack_free(out);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory (packed R and W, %zu + %zu bytes)", rlx_node_desc(n),
                        n_rp, n_wp);
    }
    float *q = rp, *qw = wp;
    for (int i = 0; i < n_sl; i++) {
        size_t pans = sl[i].pan_a + sl[i].pan_b;
        if (sl[i].team % f.groups) continue; /* later batch groups share group 0's packs */
        pack_slice(&f, r->data, sz.hidden, &sl[i], q);
        q += pans * (size_t)sz.hidden * RF_NR;
        if (!wp) continue;
        pack_slice(&f, w->data, sz.input, &sl[i], qw);
        qw += pans * (size_t)sz.input * RF_NR;
    }
    rlx_free_aligned(sl);
    out->rnn_r = rp;
    out->rnn_w = wp;
    out->rnn_slices[0] = f.slices[0];
    out->rnn_slices[1] = f.D > 1 ? f.slices[1] : 0;
    return RLX_OK;
}

const rlx_cpu_kernel_fn rlx_cpu_kernels_rnn[RLX_OP_COUNT] = {
    [RLX_OP_RNN] = k_rnn,
    [RLX_OP_GRU] = k_rnn,
    [RLX_OP_LSTM] = k_rnn,
};
