/* Depthwise 3x3 convolutions on small maps by output rows in AVX-512
 * vectors (ONNX Conv-11/22; a fast path of rlx_nn_conv_depthwise_f32,
 * cpu_nn_conv_fast.c; tested against the reference kernel and the
 * channel-blocked path in tests/test_cpu_conv_fast.c).
 *
 * Where it can run (rlx_nn_dw_rows_applies): 2-D, channel multiplier 1, a
 * 3x3 kernel, dilation 1, pads 1 on every side, stride 1 or 2, f32, a CPU
 * with AVX-512; where it runs by shape (rlx_nn_conv_depthwise_f32): output
 * rows of 12 or more columns (ShuffleNet's and MobileNet's 28x28 and 14x14
 * stages and 28x28 -> 14x14; on 7-column rows, half a vector, the
 * flattened-planes path at the end of this file (stride 1) or the
 * channel-blocked path (stride 2) is faster), on input rows of more than
 * 32 columns (MobileNetV2's 112x112 and 56x56, s1 and s2) only where the
 * input fits the caches (batch 1; the numbers are at that rule).
 *
 * Why: the channel-blocked path (cpu_nn_dw_body.h) puts 16 channels in the
 * vector lanes with 16 x 16 register transposes, in and out; on a 14 x 14
 * map those cost about as much as the arithmetic. Here a vector is 16
 * columns of one output row (a row of up to 16 outputs: one vector), so
 * nothing is transposed or copied: an input row is one masked load (lanes
 * past the row read 0, the right pad); its three taps are that vector and
 * the vector moved one lane up (lane 0 reads 0, the left pad, or the last
 * column of the vector before) or down (lane 15 the first column of the
 * vector after, or 0); at stride 2 the row is two
 * loads whose even and odd columns two permutes gather (the taps: odd
 * moved up, lane 0 the last column of the 32 before or the left pad; even,
 * odd). On rows wider than 32 columns a task prefetches the input rows
 * DWR_PF groups of output rows ahead (the next task's first ones at its
 * end): their planes' streams are short for the hardware prefetchers. A
 * task takes two channel planes (all their rows, or a block of whole
 * groups of four rows where pairs of planes give the threads fewer than 4
 * tasks each: rlx_nn_dw_split_of); at stride 2, and on stride-1 rows
 * of whole vectors wider than 32, both planes four output rows at a time
 * (DWR_GROUP: eight independent sums, enough to cover the latency of the
 * fused multiply-adds); each input row those rows read is loaded once
 * and added into every sum that reads it. On the other stride-1 rows plane
 * by plane (DWR_GROUP1: the plane's weights stay in registers, which the
 * two planes' 18 do not), four rows at a time on rows of up to 32
 * columns; on wider rows whose last vector has 8 columns or fewer
 * (MobileNetV2's 56: 3.5 vectors) eight rows at a time, and that last
 * vector of both planes is one (DWR_TAIL2).
 *
 * Arithmetic: each output starts at the bias and takes its taps in (kh, kw)
 * order as fused multiply-adds, as the channel-blocked path does, so the
 * two give the same bits (taps in the padding add nothing here and 0 x w
 * there: the same sum unless w is not finite); weights below FLT_MIN in
 * magnitude count as 0 as there. Relu and Clip without a residual are
 * applied in registers (the epilogue's comparison order), other
 * activations and the residual by rlx_nn_conv_epilogue_block over each
 * stored plane. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_nn.h"
#include "backend/cpu/cpu_sgemm.h"
#include "backend/cpu/cpu_vmath.h"
#include "base/parallel.h"

#if RLX_HAVE_AVX2_BUILD

#define DWR_ATTR __attribute__((target("avx512f,avx2,fma")))
#define DWR_UNROLL _Pragma("GCC unroll 16")
#define DWR_R RLX_NN_DWR_ROWS /* output rows at a time */
#define DWR_PF 4 /* groups of DWR_R output rows ahead whose input rows are prefetched */

typedef struct dwr_job {
    rlx_nn_conv_io io;
    size_t n_pairs;  /* pairs of channels per image (the last may be one) */
    size_t n_rb;     /* blocks of output rows per pair (whole groups of DWR_R; rlx_cpu_block_range) */
    size_t n_img;    /* images */
    bool act_in_reg; /* no residual and act NONE / RELU / CLIP */
} dwr_job;

/* The three taps (kw = 0, 1, 2) of input row `row` for output columns
 * c0 .. c0 + 15, stride S, pad 1: t[kw] lane l = row[(c0 + l) * S - 1 + kw],
 * 0 outside the row (m0 / m1: the columns [c0 * S, + 16) / [c0 * S + 16,
 * + 16) inside it). W (stride 1 only): the row has columns before c0 (the
 * vector before it, a whole one) or past c0 + 16 (mn: those inside the
 * row), whose edge columns t[0] and t[2] take; else c0 is 0 and the row
 * fits one vector. */
#define DWR_TAPS(S, W, row, t)                                                                                \
    do {                                                                                                      \
        __m512 v0_ = _mm512_maskz_loadu_ps(m0, (row) + c0 * (S));                                             \
        if ((S) == 1) {                                                                                       \
            __m512i lo_ = zi, hi_ = zi;                                                                       \
            if (W) {                                                                                          \
                if (c0) lo_ = _mm512_castps_si512(_mm512_loadu_ps((row) + c0 - 16));                          \
                hi_ = _mm512_castps_si512(_mm512_maskz_loadu_ps(mn, (row) + c0 + 16));                        \
            }                                                                                                 \
            t[0] = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(v0_), lo_, 15));               \
            t[1] = v0_;                                                                                       \
            t[2] = _mm512_castsi512_ps(_mm512_alignr_epi32(hi_, _mm512_castps_si512(v0_), 1));                \
        } else {                                                                                              \
            __m512 v1_ = _mm512_maskz_loadu_ps(m1, (row) + c0 * (S) + 16);                                    \
            t[2] = _mm512_permutex2var_ps(v0_, odd, v1_);                                                     \
            t[1] = _mm512_permutex2var_ps(v0_, even, v1_);                                                    \
            __m512i lo_ = zi; /* lane 15: column c0 * 2 - 1 (the left pad at c0 = 0) */                      \
            if (W && c0) lo_ = _mm512_castps_si512(_mm512_loadu_ps((row) + c0 * 2 - 16));                      \
            t[0] = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(t[2]), lo_, 15));               \
        }                                                                                                     \
    } while (0)

/* The multiply-adds of input row i of a group (its rows o0 * S - 1 ..):
 * ac[r] += t[kx] * w[ky * 3 + kx] for each of the RR output rows r that
 * read it (ky = i - r * S in 0 .. 2), taps kx in order. */
#define DWR_FMA_ROWS(RR, S, i, t, w, ac)                                                                      \
    DWR_UNROLL for (int kx = 0; kx < 3; kx++) {                                                               \
        DWR_UNROLL for (int r = 0; r < (RR); r++) {                                                           \
            int ky = (i) - r * (S);                                                                           \
            if (ky < 0 || ky > 2) continue;                                                                   \
            (ac)[r] = _mm512_fmadd_ps((t)[kx], (w)[ky * 3 + kx], (ac)[r]);                                    \
        }                                                                                                     \
    }

/* Output rows [o0, o0 + DWR_R) of planes xa / xb (stride S, a constant:
 * the loops unroll and the tap of each (input row, output row) pair is
 * known): every input row they read, in order, is turned into its taps
 * once and added to the sums of the output rows that read it; rows past
 * oe (the end of the task's block of rows) are computed and not stored. */
#define DWR_GROUP(S, W)                                                                                       \
    do {                                                                                                      \
        __m512 aa[DWR_R], ab[DWR_R];                                                                          \
        DWR_UNROLL for (int r = 0; r < DWR_R; r++) aa[r] = vba, ab[r] = vbb;                                  \
        int64_t i0 = o0 * (S) - 1;                                                                            \
        DWR_UNROLL for (int i = 0; i < (DWR_R - 1) * (S) + 3; i++) {                                          \
            if (i0 + i < 0 || i0 + i >= ih) continue;                                                         \
            __m512 ta[3], tb[3];                                                                              \
            DWR_TAPS(S, W, xa + (i0 + i) * iw, ta);                                                           \
            DWR_TAPS(S, W, xb + (i0 + i) * iw, tb);                                                           \
            DWR_UNROLL for (int kx = 0; kx < 3; kx++) {                                                       \
                DWR_UNROLL for (int r = 0; r < DWR_R; r++) {                                                  \
                    int ky = i - r * (S);                                                                     \
                    if (ky < 0 || ky > 2) continue;                                                           \
                    aa[r] = _mm512_fmadd_ps(ta[kx], wa[ky * 3 + kx], aa[r]);                                  \
                    ab[r] = _mm512_fmadd_ps(tb[kx], wb[ky * 3 + kx], ab[r]);                                  \
                }                                                                                             \
            }                                                                                                 \
        }                                                                                                     \
        DWR_UNROLL for (int r = 0; r < DWR_R; r++) {                                                          \
            if (o0 + r >= oe) break;                                                                          \
            __m512 va = aa[r], vb = ab[r];                                                                    \
            if (act == RLX_ACT_RELU) { /* v when NaN: NaN stays */                                            \
                va = _mm512_max_ps(vzero, va);                                                                \
                vb = _mm512_max_ps(vzero, vb);                                                                \
            } else if (act == RLX_ACT_CLIP) {                                                                 \
                va = _mm512_min_ps(vhi, _mm512_max_ps(vlo, _mm512_add_ps(va, vzero)));                        \
                vb = _mm512_min_ps(vhi, _mm512_max_ps(vlo, _mm512_add_ps(vb, vzero)));                        \
            }                                                                                                 \
            _mm512_mask_storeu_ps(ya + (o0 + r) * ow + c0, om, va);                                           \
            if (two) _mm512_mask_storeu_ps(yb + (o0 + r) * ow + c0, om, vb);                                  \
        }                                                                                                     \
    } while (0)

/* DWR_GROUP for one plane (xp, yp, its weights wp and bias vbp) and RR
 * output rows (stride 1; W as DWR_TAPS'): RR sums, the plane's 9 weights
 * and 3 taps stay in registers (DWR_GROUP's two planes spill their 18
 * weights to the stack: its multiply-adds read them from memory). The
 * same taps in the same order: the same bits. */
#define DWR_GROUP1(W, RR, xp, yp, wp, vbp)                                                                    \
    do {                                                                                                      \
        __m512 ac[RR];                                                                                        \
        DWR_UNROLL for (int r = 0; r < (RR); r++) ac[r] = vbp;                                                \
        int64_t i0 = o0 - 1;                                                                                  \
        DWR_UNROLL for (int i = 0; i < (RR) + 2; i++) {                                                       \
            if (i0 + i < 0 || i0 + i >= ih) continue;                                                         \
            __m512 t[3];                                                                                      \
            DWR_TAPS(1, W, (xp) + (i0 + i) * iw, t);                                                          \
            DWR_FMA_ROWS(RR, 1, i, t, wp, ac);                                                                \
        }                                                                                                     \
        DWR_UNROLL for (int r = 0; r < (RR); r++) {                                                           \
            if (o0 + r >= oe) break;                                                                          \
            __m512 v = ac[r];                                                                                 \
            DWR_ACT(v);                                                                                       \
            _mm512_mask_storeu_ps((yp) + (o0 + r) * ow + c0, om, v);                                          \
        }                                                                                                     \
    } while (0)

/* Lanes 0 - 7 from a (mask ma), lanes 8 - 15 from b (mask mb, bits 0 -
 * 7; b - 8: b's columns land in lanes 8 - 15), 0 elsewhere. */
#define DWR_LD2(ma, a, mb, b)                                                                                 \
    _mm512_mask_loadu_ps(_mm512_maskz_loadu_ps((__mmask16)(ma), (a)), (__mmask16)((unsigned)(mb) << 8), (b) - 8)

/* The last vector of a row of 1 to 8 columns (c0 .. c0 + 7, stride 1; a
 * row of 56: 3.5 vectors) of both planes in one: plane a's columns in lanes
 * 0 - 7, plane b's in lanes 8 - 15, each half with its plane's weights
 * (wab) and bias (vbab), RR output rows: half the multiply-adds of two
 * half-empty vectors. The same taps in the same order as DWR_GROUP: the
 * same bits. mt1 / mt2: the lanes whose column (c0 + lane) / column + 1 is
 * inside the row (at most 8; c0 >= 16: the columns before it are the row's). */
#define DWR_TAIL2(RR)                                                                                         \
    do {                                                                                                      \
        __m512 ac[RR];                                                                                        \
        DWR_UNROLL for (int r = 0; r < (RR); r++) ac[r] = vbab;                                               \
        int64_t i0 = o0 - 1;                                                                                  \
        DWR_UNROLL for (int i = 0; i < (RR) + 2; i++) {                                                       \
            if (i0 + i < 0 || i0 + i >= ih) continue;                                                         \
            const float *ra_ = xa + (i0 + i) * iw + c0, *rb_ = xb + (i0 + i) * iw + c0;                       \
            __m512 t[3];                                                                                      \
            t[0] = DWR_LD2(mt1, ra_ - 1, mt1, rb_ - 1);                                                       \
            t[1] = DWR_LD2(mt1, ra_, mt1, rb_);                                                               \
            t[2] = DWR_LD2(mt2, ra_ + 1, mt2, rb_ + 1);                                                       \
            DWR_FMA_ROWS(RR, 1, i, t, wab, ac);                                                               \
        }                                                                                                     \
        DWR_UNROLL for (int r = 0; r < (RR); r++) {                                                           \
            if (o0 + r >= oe) break;                                                                          \
            __m512 v = ac[r];                                                                                 \
            DWR_ACT(v);                                                                                       \
            _mm512_mask_storeu_ps(ya + (o0 + r) * ow + c0, mt1, v);                                           \
            if (two) _mm512_mask_storeu_ps(yb + (o0 + r) * ow + c0 - 8, (__mmask16)((unsigned)mt1 << 8), v);  \
        }                                                                                                     \
    } while (0)

/* The in-register activation (none, Relu, Clip: the epilogue's comparison
 * order) of a finished vector. */
#define DWR_ACT(a)                                                                                            \
    do {                                                                                                      \
        if (act == RLX_ACT_RELU) a = _mm512_max_ps(vzero, a); /* a when NaN: NaN stays */                      \
        else if (act == RLX_ACT_CLIP) a = _mm512_min_ps(vhi, _mm512_max_ps(vlo, _mm512_add_ps(a, vzero)));     \
    } while (0)

/* Lanes [0, n) of 16 (n clamped to 0 .. 16). */
static inline __mmask16 dwr_cols(int64_t n) {
    return (__mmask16)(n >= 16 ? 0xffffu : n <= 0 ? 0u : (1u << n) - 1u);
}

/* Prefetch into L2 input rows [r0, r0 + n) (below r_end) of planes xa and
 * xb; rows past the planes' ih: the next task's planes' (next floats on
 * from xa). */
static inline void dwr_prefetch(const float *xa, const float *xb, size_t next, int64_t ih, int64_t iw, int64_t r0,
                                int64_t n, int64_t r_end) {
    int64_t lines = (iw * (int64_t)sizeof(float) + 63) / 64;
    for (int64_t r = r0; r < r0 + n && r < r_end; r++) {
        const float *pa = r < ih ? xa + r * iw : xa + next + (r - ih) * iw, *pb = pa + (xb - xa);
        for (int64_t l = 0; l < lines; l++) {
            __builtin_prefetch(pa + l * 16, 0, 2);
            __builtin_prefetch(pb + l * 16, 0, 2);
        }
    }
}

/* Weights of channel c broadcast, those below FLT_MIN in magnitude as 0. */
DWR_ATTR static void dwr_weights(const float *w, size_t c, __m512 *wv) {
    for (int t = 0; t < 9; t++) {
        float v = w[c * 9 + (size_t)t];
        wv[t] = _mm512_set1_ps(fabsf(v) < FLT_MIN ? 0.0f : v);
    }
}

/* Task `item` (image x pair of channels x block of output rows, the last
 * fastest) of job ctx (rlx_nn_item_fn). */
DWR_ATTR static void dwr_pair(void *ctx, size_t item, float *scratch) {
    (void)scratch;
    const dwr_job *j = ctx;
    const rlx_nn_sp3 *s = j->io.s;
    size_t rb = item % j->n_rb, pi = item / j->n_rb;
    size_t n = pi / j->n_pairs, ca = 2 * (pi % j->n_pairs);
    bool two = ca + 1 < j->io.c_out;
    size_t cb = two ? ca + 1 : ca;
    int64_t ih = s->in[1], iw = s->in[2], ow = s->out[2], st = s->s[1];
    size_t r_0, r_n;
    rlx_cpu_block_range((size_t)s->out[1], DWR_R, j->n_rb, rb, &r_0, &r_n);
    if (!r_n) return;
    int64_t ob = (int64_t)r_0, oe = (int64_t)(r_0 + r_n); /* output rows [ob, oe) */
    const float *xa = j->io.x + (n * j->io.c_out + ca) * s->in_sp, *xb = j->io.x + (n * j->io.c_out + cb) * s->in_sp;
    float *ya = j->io.y + (n * j->io.c_out + ca) * s->out_sp, *yb = j->io.y + (n * j->io.c_out + cb) * s->out_sp;
    __m512 wa[9], wb[9];
    dwr_weights(j->io.w, ca, wa);
    dwr_weights(j->io.w, cb, wb);
    __m512 vba = _mm512_set1_ps(j->io.b ? j->io.b[ca] : 0.0f), vbb = _mm512_set1_ps(j->io.b ? j->io.b[cb] : 0.0f);
    __m512 vzero = _mm512_setzero_ps(), vlo = _mm512_set1_ps(j->io.act.alpha), vhi = _mm512_set1_ps(j->io.act.beta);
    __m512i zi = _mm512_setzero_si512();
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    rlx_act_kind act = j->act_in_reg ? j->io.act.kind : RLX_ACT_NONE;
    if (iw <= 32) {
        for (int64_t c0 = 0; c0 < ow; c0 += 16) {
            /* the row's columns [c0 * st, + 16), [c0 * st + 16, + 16), past
             * the block (stride 1), the output row's lanes */
            __mmask16 m0 = dwr_cols(iw - c0 * st), m1 = dwr_cols(iw - c0 * st - 16), mn = dwr_cols(iw - c0 - 16);
            __mmask16 om = dwr_cols(ow - c0);
            /* stride 1 plane by plane (DWR_GROUP1: the weights in registers;
             * 1 thread, hot, 192 x 28x28 57.5 -> 50.3 us, 384 x 14x14 34.3 ->
             * 29.7, ShuffleNet's 136 x 28x28 41.4 -> 36.1; 8 rows at a time
             * measured the same) */
            if (st == 2)
                for (int64_t o0 = ob; o0 < oe; o0 += DWR_R) DWR_GROUP(2, 0);
            else
                for (int64_t o0 = ob; o0 < oe; o0 += DWR_R) {
                    if (iw <= 16) {
                        DWR_GROUP1(0, DWR_R, xa, ya, wa, vba);
                        if (two) DWR_GROUP1(0, DWR_R, xb, yb, wb, vbb);
                    } else {
                        DWR_GROUP1(1, DWR_R, xa, ya, wa, vba);
                        if (two) DWR_GROUP1(1, DWR_R, xb, yb, wb, vbb);
                    }
                }
        }
    } else {
        /* wider rows: by groups of output rows, each across the row */
        size_t next = two ? 2 * s->in_sp : s->in_sp; /* the next task's first plane, from xa */
        /* the next task's rows, if any: the next block's in these planes, or
         * the next planes' first rows */
        int64_t r_end = rb + 1 < j->n_rb || pi + 1 >= j->n_img * j->n_pairs ? ih : 2 * ih;
        /* stride 1 and a last vector of at most 8 columns (56: 3.5 vectors):
         * that vector of both planes in one (DWR_TAIL2), the others plane by
         * plane, 8 output rows at a time (DWR_GROUP1); 144 x 56x56, 1 thread,
         * hot: 182 -> 161 us (BENCHMARKS.md, "CPU depthwise 3x3 on 56-wide
         * rows"). A loop of its own: its combined weights live there only
         * (the other wide loops also measured 9-14% faster so). */
        bool tail2 = st == 1 && (ow & 15) && (ow & 15) <= 8;
        if (tail2) {
            int64_t c_end = ow & ~(int64_t)15; /* the full vectors' columns */
            __m512 wab[9], vbab = _mm512_mask_blend_ps(0xff00u, vba, vbb);
            __mmask16 mt1 = dwr_cols(ow - c_end), mt2 = dwr_cols(ow - c_end - 1); /* at most 8 lanes */
            for (int t = 0; t < 9; t++) wab[t] = _mm512_mask_blend_ps(0xff00u, wa[t], wb[t]);
            for (int64_t o0 = ob; o0 < oe;) {
                /* 2 DWR_R rows where the block has more than DWR_R left (else
                 * the rows past oe are computed, not stored) */
                int64_t rr = oe - o0 > DWR_R ? 2 * DWR_R : DWR_R;
                dwr_prefetch(xa, xb, next, ih, iw, o0 + DWR_PF * DWR_R + 1, rr, r_end);
                for (int64_t c0 = 0; c0 < c_end; c0 += 16) {
                    __mmask16 m0 = dwr_cols(iw - c0), m1 = 0, mn = dwr_cols(iw - c0 - 16), om = dwr_cols(ow - c0);
                    if (rr == 2 * DWR_R) {
                        DWR_GROUP1(1, 2 * DWR_R, xa, ya, wa, vba);
                        if (two) DWR_GROUP1(1, 2 * DWR_R, xb, yb, wb, vbb);
                    } else {
                        DWR_GROUP1(1, DWR_R, xa, ya, wa, vba);
                        if (two) DWR_GROUP1(1, DWR_R, xb, yb, wb, vbb);
                    }
                }
                int64_t c0 = c_end;
                if (rr == 2 * DWR_R) DWR_TAIL2(2 * DWR_R);
                else DWR_TAIL2(DWR_R);
                o0 += rr;
            }
        } else
            for (int64_t o0 = ob; o0 < oe; o0 += DWR_R) {
                /* the input rows new to the group DWR_PF groups on (rows past
                 * the last: the next task's planes' first rows); caches
                 * evicted, 8x 96 x 112 -> 56 s2 took 5.6 ms without, 3.8 with
                 * (DWR_PF 2 into L1: 5.8 ms; 8: 3.9, 16: 4.2) */
                dwr_prefetch(xa, xb, next, ih, iw, (o0 + DWR_PF * DWR_R) * st - st + 2, DWR_R * st, r_end);
                for (int64_t c0 = 0; c0 < ow; c0 += 16) {
                    __mmask16 m0 = dwr_cols(iw - c0 * st), m1 = dwr_cols(iw - c0 * st - 16), mn = dwr_cols(iw - c0 - 16);
                    __mmask16 om = dwr_cols(ow - c0);
                    if (st == 2) DWR_GROUP(2, 1);
                    else DWR_GROUP(1, 1);
                }
            }
    }
    if (!j->act_in_reg)
        for (int p = 0; p < (two ? 2 : 1); p++) {
            float *y = (p ? yb : ya) + ob * ow; /* the block's rows */
            rlx_nn_conv_epilogue_block(y, s->out_sp, 1, r_n * (size_t)ow, NULL,
                                       j->io.res ? j->io.res + (y - j->io.y) : NULL, &j->io.act);
        }
}

/* Whether the activation is applied in registers: no residual and act
 * NONE / RELU / CLIP (else by rlx_nn_conv_epilogue_block after the store). */
static bool dw_act_in_reg(const rlx_nn_conv_io *io) {
    rlx_act_kind ak = io->act.kind;
    return !io->res && (ak == RLX_ACT_NONE || ak == RLX_ACT_RELU || ak == RLX_ACT_CLIP);
}

#endif

bool rlx_nn_dw_rows_applies(const rlx_conv_geom *g, const rlx_nn_sp3 *s) {
#if RLX_HAVE_AVX2_BUILD
    if (rlx_cpu_isa_get() < RLX_CPU_ISA_AVX512) return false;
    if (g->c_out != g->c_in || s->in[0] != 1 || s->out[0] != 1 || s->k[0] != 1) return false;
    if (s->k[1] != 3 || s->k[2] != 3 || s->d[1] != 1 || s->d[2] != 1) return false;
    for (int a = 1; a < 3; a++)
        if (s->pb[a] != 1 || s->pe[a] != 1) return false;
    if (s->out[1] < 1 || s->out[2] < 1) return false;
    if (s->s[1] == 1 && s->s[2] == 1) return true;
    return s->s[1] == 2 && s->s[2] == 2;
#else
    (void)g, (void)s;
    return false;
#endif
}

rlx_status rlx_nn_dw_rows_f32(rlx_cpu_kctx *k, const rlx_conv_geom *g, const rlx_nn_sp3 *s) {
#if RLX_HAVE_AVX2_BUILD
    dwr_job j;
    memset(&j, 0, sizeof j);
    rlx_nn_conv_io_init(k, g, s, &j.io);
    j.act_in_reg = dw_act_in_reg(&j.io);
    if (!g->n || !j.io.c_out) return RLX_OK;
    rlx_nn_dw_split sp = rlx_nn_dw_split_of(g, s, (size_t)rlx_parallel_threads());
    j.n_pairs = sp.n_cb;
    j.n_rb = sp.n_rb;
    j.n_img = (size_t)g->n;
    return rlx_nn_run_items(k, sp.tasks, 0, dwr_pair, &j);
#else
    (void)g, (void)s;
    return rlx_cpu_fail(k, RLX_ERR_INTERNAL, "depthwise rows path without AVX-512 code");
#endif
}

/* ------------------------------------------------------------ planes flattened */

/* Depthwise 3x3 pad 1 stride 1 convolutions on small maps (output planes
 * of 16 to DWF_MAX_SP points; by shape those of rows under 12 columns:
 * 7x7) with 16 channel planes flattened into one run
 * (rlx_nn_dw_flat_applies; a fast path of rlx_nn_conv_depthwise_f32,
 * tested against the reference kernel and the channel-blocked path in
 * tests/test_cpu_conv_fast.c).
 *
 * Why: on a 7 x 7 map the row path above fills 7 of 16 lanes, and the
 * channel-blocked path (cpu_nn_dw_body.h) computes 64 points for 49 and
 * spends about as long on its 16 x 16 transposes (in and out) as on the
 * arithmetic (MobileNetV2's 960 x 7 x 7: 36 us, onnxruntime's NCHWc
 * kernel, which needs no transposes, 26). In NCHW the planes of channels
 * c0 .. c0 + 15 are one run of 16 x sp floats, in and out: a vector is 16
 * consecutive points of that run, whatever plane and row each lane is in,
 * so every lane is used and nothing is transposed. Tap (ky, kx) of output
 * point q is input point q + (ky - 1) x W + kx - 1 of the input's run,
 * one masked load whose mask (a table per call: the run's pattern repeats
 * every sp vectors) leaves out the lanes whose tap falls in the padding
 * (they would read the neighbouring row or plane); a lane's weights are
 * its channel's, a permute of the 16 channels' weights of the tap (in
 * registers) by the lanes' channel numbers. DWF_V vectors are computed
 * together (independent sums in flight).
 *
 * Measured (bench/conv_node, 1 thread, hot caches, 2026-12-05 dev VM,
 * load 9-10; blocked / rows -> flat us): 960 x 7x7 35.6 / 42.1 -> 24.9;
 * 576 x 14x14 59.8 / 45.9 -> 52.0 and 384 x 14x14 40 / 31 -> 35 (the row
 * path keeps rows of 12 or more). Stride 2 onto 7x7 (split into four
 * phase planes first, or two output rows per vector) was tried: 31 and
 * 27 us against the blocked path's 29; it stays there.
 *
 * Arithmetic: each output starts at the bias and takes its taps in (kh, kw)
 * order as fused multiply-adds, taps in the padding as 0 x w, as the
 * channel-blocked path does: the same bits; weights below FLT_MIN in
 * magnitude count as 0 as there. Tasks are (block of 16 channels, group
 * of images): every output is computed the same way at every thread count. */

#define DWF_MAX_SP 256 /* output points per plane the mask table covers */

#if RLX_HAVE_AVX2_BUILD

#define DWF_V 4 /* vectors of a run computed together */

/* The in-register activation (none, Relu, Clip: the epilogue's comparison
 * order) of a finished vector. */
#define DWF_ACT(a)                                                                                            \
    do {                                                                                                      \
        if (act == RLX_ACT_RELU) a = _mm512_max_ps(vzero, a); /* a when NaN: NaN stays */                      \
        else if (act == RLX_ACT_CLIP) a = _mm512_min_ps(vhi, _mm512_max_ps(vlo, _mm512_add_ps(a, vzero)));     \
    } while (0)

/* Vector v of a block's run: its lanes' channels (0 .. 15) and, per tap
 * (ky * 3 + kx), the lanes whose tap is inside the input. */
typedef struct dwf_vec {
    uint8_t ch[16];
    uint16_t m[9];
} dwf_vec;

typedef struct dwf_job {
    rlx_nn_conv_io io;
    bool act_in_reg;               /* no residual and act NONE / RELU / CLIP */
    size_t n_cb, n_img, ipt, n_ig; /* channel blocks, images, images per task, tasks per block */
    int64_t off[9];                /* tap (ky, kx)'s offset in the run: (ky - 1) W + kx - 1 */
    dwf_vec tab[DWF_MAX_SP];
} dwf_job;

/* Task `item` (channel block, group of images) of job ctx (rlx_nn_item_fn). */
DWR_ATTR static void dwf_task(void *ctx, size_t item, float *scratch) {
    (void)scratch;
    const dwf_job *j = ctx;
    const rlx_nn_sp3 *s = j->io.s;
    size_t ig = item % j->n_ig, cb = item / j->n_ig;
    size_t n0 = ig * j->ipt, n1 = n0 + j->ipt < j->n_img ? n0 + j->ipt : j->n_img;
    size_t c0 = cb * 16, nc = j->io.c_out - c0 < 16 ? j->io.c_out - c0 : 16;
    size_t sp = (size_t)s->out_sp, nf = nc * sp, nv = (nf + 15) / 16;
    float wt[10][16]; /* [tap or bias][channel], 0 past the block's channels */
    memset(wt, 0, sizeof wt);
    for (size_t l = 0; l < nc; l++) {
        for (int t = 0; t < 9; t++) {
            float v = j->io.w[(c0 + l) * 9 + (size_t)t];
            wt[t][l] = fabsf(v) < FLT_MIN ? 0.0f : v;
        }
        wt[9][l] = j->io.b ? j->io.b[c0 + l] : 0.0f;
    }
    __m512 wv[10];
    DWR_UNROLL for (int t = 0; t < 10; t++) wv[t] = _mm512_loadu_ps(wt[t]);
    __m512 vzero = _mm512_setzero_ps(), vlo = _mm512_set1_ps(j->io.act.alpha), vhi = _mm512_set1_ps(j->io.act.beta);
    rlx_act_kind act = j->act_in_reg ? j->io.act.kind : RLX_ACT_NONE;
    for (size_t n = n0; n < n1; n++) {
        const float *xb = j->io.x + (n * j->io.c_out + c0) * s->in_sp;
        float *yb = j->io.y + (n * j->io.c_out + c0) * sp;
        /* tap t of vector v reads base[t] + 16 v (masked lanes read nothing) */
        const float *base[9];
        for (int t = 0; t < 9; t++) base[t] = xb + j->off[t];
        /* DWF_V vectors at a time, the last vector (lanes past the block's
         * run: tail) alone */
        size_t v = 0;
        for (; v + DWF_V < nv; v += DWF_V) {
            __m512i idx[DWF_V];
            __m512 acc[DWF_V];
            DWR_UNROLL for (int u = 0; u < DWF_V; u++) {
                idx[u] = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)j->tab[v + (size_t)u].ch));
                acc[u] = _mm512_permutexvar_ps(idx[u], wv[9]);
            }
            DWR_UNROLL for (int t = 0; t < 9; t++) {
                DWR_UNROLL for (int u = 0; u < DWF_V; u++) {
                    __m512 xv = _mm512_maskz_loadu_ps(j->tab[v + (size_t)u].m[t], base[t] + 16 * (v + (size_t)u));
                    acc[u] = _mm512_fmadd_ps(xv, _mm512_permutexvar_ps(idx[u], wv[t]), acc[u]);
                }
            }
            DWR_UNROLL for (int u = 0; u < DWF_V; u++) {
                DWF_ACT(acc[u]);
                _mm512_storeu_ps(yb + 16 * (v + (size_t)u), acc[u]);
            }
        }
        for (; v < nv; v++) {
            const dwf_vec *e = &j->tab[v];
            __m512i idx = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)e->ch));
            __mmask16 tail = v + 1 < nv ? (__mmask16)0xffffu : dwr_cols((int64_t)(nf - 16 * v));
            __m512 acc = _mm512_permutexvar_ps(idx, wv[9]);
            DWR_UNROLL for (int t = 0; t < 9; t++) {
                __m512 xv = _mm512_maskz_loadu_ps((__mmask16)(e->m[t] & tail), base[t] + 16 * v);
                acc = _mm512_fmadd_ps(xv, _mm512_permutexvar_ps(idx, wv[t]), acc);
            }
            DWF_ACT(acc);
            _mm512_mask_storeu_ps(yb + 16 * v, tail, acc);
        }
        if (!j->act_in_reg)
            rlx_nn_conv_epilogue_block(yb, nf, 1, nf, NULL, j->io.res ? j->io.res + (yb - j->io.y) : NULL,
                                       &j->io.act);
    }
}

/* The job's mask table: lane l of vector v is point p = (16 v + l) % sp of
 * channel (16 v + l) / sp (computed in floats: exact, q < 2^12); its tap
 * (ky, kx) reads input (r + ky - 1, c + kx - 1), inside unless r + ky - 1
 * or c + kx - 1 is -1 or the height / width. */
DWR_ATTR static void dwf_table(dwf_job *j) {
    const rlx_nn_sp3 *s = j->io.s;
    int64_t sp = s->out_sp, ow = s->out[2];
    __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    __m512i vsp = _mm512_set1_epi32((int)sp), vow = _mm512_set1_epi32((int)ow), zero = _mm512_setzero_si512();
    __m512i hi_r = _mm512_set1_epi32((int)s->in[1] - 1), hi_c = _mm512_set1_epi32((int)s->in[2] - 1);
    __m512 fsp = _mm512_set1_ps((float)sp), fow = _mm512_set1_ps((float)ow), half = _mm512_set1_ps(0.5f);
    for (int64_t v = 0; v < sp; v++) {
        __m512i q = _mm512_add_epi32(_mm512_set1_epi32((int)(16 * v)), iota);
        __m512i ch = _mm512_cvttps_epi32(_mm512_div_ps(_mm512_add_ps(_mm512_cvtepi32_ps(q), half), fsp));
        __m512i p = _mm512_sub_epi32(q, _mm512_mullo_epi32(ch, vsp));
        __m512i r = _mm512_cvttps_epi32(_mm512_div_ps(_mm512_add_ps(_mm512_cvtepi32_ps(p), half), fow));
        __m512i c = _mm512_sub_epi32(p, _mm512_mullo_epi32(r, vow));
        __mmask16 rm[3], cm[3];
        rm[0] = _mm512_cmpgt_epi32_mask(r, zero), cm[0] = _mm512_cmpgt_epi32_mask(c, zero);
        rm[1] = cm[1] = 0xffffu;
        rm[2] = _mm512_cmplt_epi32_mask(r, hi_r), cm[2] = _mm512_cmplt_epi32_mask(c, hi_c);
        dwf_vec *e = &j->tab[v];
        _mm_storeu_si128((__m128i *)e->ch, _mm512_cvtepi32_epi8(ch));
        for (int t = 0; t < 9; t++) e->m[t] = (uint16_t)(rm[t / 3] & cm[t % 3]);
    }
}

#endif

bool rlx_nn_dw_flat_applies(const rlx_conv_geom *g, const rlx_nn_sp3 *s) {
    /* 3x3, pads 1, dilation 1, rows of at most 32, AVX-512 */
    if (!rlx_nn_dw_rows_applies(g, s) || s->s[1] != 1 || s->s[2] != 1 || s->in[2] > 32) return false;
    return s->out_sp >= 16 && s->out_sp <= DWF_MAX_SP; /* a vector in at most 16 planes; the table */
}

rlx_status rlx_nn_dw_flat_f32(rlx_cpu_kctx *k, const rlx_conv_geom *g, const rlx_nn_sp3 *s) {
#if RLX_HAVE_AVX2_BUILD
    dwf_job j;
    memset(&j, 0, sizeof j);
    rlx_nn_conv_io_init(k, g, s, &j.io);
    j.act_in_reg = dw_act_in_reg(&j.io);
    if (!g->n || !j.io.c_out) return RLX_OK;
    dwf_table(&j);
    for (int t = 0; t < 9; t++) j.off[t] = (t / 3 - 1) * s->in[2] + (t % 3 - 1);
    /* rlx_nn_dw_split_of: all images of a block in one task (its weights
     * gathered once) unless the threads need more tasks */
    rlx_nn_dw_split sp = rlx_nn_dw_split_of(g, s, (size_t)rlx_parallel_threads());
    j.n_cb = sp.n_cb;
    j.n_img = (size_t)g->n;
    j.ipt = sp.ipt;
    j.n_ig = sp.n_ig;
    return rlx_nn_run_items(k, sp.tasks, 0, dwf_task, &j);
#else
    (void)g, (void)s;
    return rlx_cpu_fail(k, RLX_ERR_INTERNAL, "depthwise flat path without AVX-512 code");
#endif
}
