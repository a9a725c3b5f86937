/* CPU reference kernels of the pools: MaxPool (with the optional Indices
 * output), AveragePool, LpPool and the global pools. Windows start at
 * o * stride - pad_begin and take kernel taps every `dilation` elements;
 * taps outside the input are skipped (MaxPool, LpPool, AveragePool with
 * count_include_pad=0) or count as zeros inside the explicit padding
 * (AveragePool with count_include_pad=1; taps past the end padding, which
 * ceil_mode can create, never count). Semantics: ONNX MaxPool-12/22,
 * AveragePool-19/22, LpPool-18/22, GlobalAveragePool/GlobalMaxPool-1/22,
 * GlobalLpPool-2/22. Over empty spatial dims GlobalAveragePool gives 0 and
 * GlobalMaxPool -inf, as ReduceMean and ReduceMax over them (onnxruntime
 * refuses such inputs), GlobalLpPool 0.
 *
 * Fast paths (f32, k->reference false), over the worker pool by planes
 * (image, channel): MaxPool without the Indices output and AveragePool in
 * float, each window clipped to the input once per axis (the same taps as
 * the reference, in the same order; AveragePool sums in float, so within
 * 1e-6 relative of the reference); outputs whose windows lie inside the
 * input along the last axis go tap by tap over the whole run of them. The
 * global pools run the reference's own f32 loop per plane (the same
 * bits).
 *
 * NaN propagates through MaxPool and GlobalMaxPool (as through ReduceMax
 * and PyTorch's max_pool2d): a window holding a NaN gives its first NaN in
 * tap order (the Indices output points at it). onnxruntime 1.22's CPU
 * MaxPool and GlobalMaxPool give NaN only where the window's last tap is
 * NaN ({nan, 3, -inf, 0} -> 3, {3, -2, 0, nan} -> nan: its fold keeps the
 * tap when a comparison with NaN is false; tests/python/
 * test_nan_semantics.py records it). The fast paths
 * below fold with the x86 max instructions, which skip NaN taps, so they
 * run only on planes without NaN: the column blocks (mcol_plane) watch
 * the rows they load, the other fast paths look for NaN in the plane
 * first (plane_has_nan, one vector pass); a plane with a NaN is fixed up
 * after the fast path (fpool_nan_fix: each NaN written to the outputs
 * whose windows take it). That costs the clean planes 4-11%
 * (BENCHMARKS.md, "MaxPool and NaN"). The folds described below are the
 * ones of a NaN-free plane.
 *
 * MaxPool by rows (1-D and 2-D, dilation 1, stride 1 or 2 along the last
 * axis): the reference folds a window's taps row by row, left to right,
 * best = v > best ? v : best from the first tap (of equal values, -0 and
 * +0 included, the first stays; what it does with NaN no longer matters:
 * planes with NaN do not come here). That fold splits by rows exactly: each input row's
 * taps are folded once per output column into hs (the fold that skips
 * NaNs: it starts from max(first, -inf), which is -inf for a NaN, and
 * takes the earliest of equal maxima) and hf = hs > first ? hs : first
 * (the fold from the first tap: the first tap when it is NaN, else hs).
 * A window is then hf of its first row folded with hs of its other rows,
 * a = hs > a ? hs : a, in row order: the reference's bits (NaN payloads,
 * signed zeros) for any input. The x86 max instructions compute exactly
 * "a > b ? a : b", so the rows run as vectors (AVX-512: the taps of
 * stride 2 deinterleaved by one two-source permute per tap, a pair of
 * taps from one load of 32 floats; AVX2 by two shuffles), each input row
 * once per plane (a ring of rows' hs and hf, the kernel's height rounded
 * up to a power of two). Columns whose windows are clipped (the edges)
 * run in C: masked vector code for them was slower (BENCHMARKS.md).
 * Small planes (rows of at most 32 floats, 32 outputs, 64 rows; every
 * output column's window holding an input column) run in AVX-512
 * registers instead (maxplane_small_v16): a row is loaded once and its
 * taps are permutes with column indexes clamped to the row, the plane's
 * hs and hf stay in registers (the clamped taps repeat the window's end
 * columns next to themselves, which never changes the fold: the same
 * bits). Inception v2's 3x3 s1 pool over 1024 planes of 7x7 went from
 * 0.163 to 0.040 ms, SqueezeNet's 3x3 s2 over 256 x 27x27 from 0.103 to
 * 0.027 ms (1 thread; BENCHMARKS.md, "CPU CNNs").
 *
 * AveragePool by rows (1-D and 2-D, dilation 1, any stride): each input
 * row is copied between zeros (the pads, and the taps past the end that
 * ceil mode creates), its taps summed left to right into one horizontal
 * sum per output column (AVX-512 for strides 1 and 2, 16 columns per
 * step; C otherwise), kept in the same ring of rows; an output adds its
 * window's rows' sums in row order and divides by the count as fpool_run
 * does. The zeros add nothing (a -0 sum becomes +0) and the order of the
 * additions differs from the reference's (row by row, tap by tap), within
 * the fast path's 1e-6. Stride 1 along the last axis with at most 17
 * taps, or stride 2 with 2 (AVX-512), skips the ring: per output row and 16 columns, the
 * window's rows are added into the two vectors of the 32 columns its taps
 * read, and the taps are lane shifts of that pair (avgplane_s1_v16).
 * Inception v2's 3x3 s1 pools over 14x14 and 28x28 planes went from 4.1
 * ms to about 0.6 ms per pass, DenseNet-121's 2x2 s2 ones from 0.44 to 0.19
 * ms (BENCHMARKS.md). Small planes (as MaxPool's: rows of at most 32
 * floats, 32 outputs, 64 rows; any stride) run in AVX-512 registers
 * (avgplane_small_v16): each row loaded once, its horizontal sums by
 * masked permutes (a tap off the row adds nothing), then the window's rows
 * added and divided: Inception v2's 3x3 s1 pools over 576 x 14x14 0.084 ->
 * 0.052 ms, 256 x 28x28 0.132 -> 0.077 ms, 1024 x 7x7 0.074 -> 0.050 ms
 * (1 thread; BENCHMARKS.md, "CPU CNNs").
 *
 * Both by-rows pools go by column blocks first where they can (AVX-512,
 * strides 1 and 2 along the row, at most 8 taps along it and 256 output
 * columns; mcol_plane): blocks of 16 output columns run down the whole
 * plane, each input row's taps permuted out of two pairs of vectors (the
 * same folds and sums as the paths above, in the same order: MaxPool's
 * bits, AveragePool's values of avgplane_small_k), the rows that 3-row
 * windows share kept in registers; planes of rows of at most 16 floats and
 * 8 outputs go two to a vector. This replaced the ring and the small-plane
 * paths on the models' shapes (they stay for the rest). An AveragePool
 * whose one output's window holds the whole plane (the 7x7 heads) sums the
 * plane in double, as the reference does, in another order. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_nn.h"
#include "backend/cpu/cpu_rows.h"
#include "backend/cpu/cpu_vmath.h"
#include "base/parallel.h"
#include "base/scratch.h"
#include "ir/ops/conv_geom.h"
#include "ir/ops/ops.h"

typedef enum pool_kind { POOL_MAX, POOL_AVG, POOL_LP } pool_kind;

/* Smallest finite value of a dtype: MaxPool's result for a window that holds
 * no input element. */
static double dtype_lowest(rlx_dtype dt) {
    switch (dt) {
    case RLX_DTYPE_F64: return -DBL_MAX;
    case RLX_DTYPE_F16: return -65504.0;
    case RLX_DTYPE_BF16: return -3.3895313892515355e38;
    case RLX_DTYPE_I8: return -128.0;
    case RLX_DTYPE_U8: return 0.0;
    default: return -FLT_MAX;
    }
}

/* Counts of the taps of a window along one axis that fall inside the input
 * and inside the explicitly padded input. */
static void axis_counts(const rlx_nn_sp3 *s, int ax, int64_t o, int64_t *inside, int64_t *padded) {
    int64_t ni = 0, np = 0;
    for (int64_t t = 0; t < s->k[ax]; t++) {
        int64_t p = o * s->s[ax] - s->pb[ax] + t * s->d[ax];
        ni += p >= 0 && p < s->in[ax];
        np += p >= -s->pb[ax] && p < s->in[ax] + s->pe[ax];
    }
    *inside = ni;
    *padded = np;
}

/* AveragePool's divisor factor along one axis: the taps inside the input
 * (or inside the padded input with count_include_pad), at least 1: a window
 * with no tap to count averages no element, and its sum of none, 0, is the
 * output (onnxruntime's answer and the WebGPU kernels'; ONNX's reference
 * evaluator divides 0 by 0). */
static int64_t avg_divisor(const rlx_nn_sp3 *s, int ax, int64_t o, bool count_include_pad) {
    int64_t ni, np;
    axis_counts(s, ax, o, &ni, &np);
    int64_t n = count_include_pad ? np : ni;
    return n > 0 ? n : 1;
}

/* ------------------------------------------------------------ f32 fast paths */

typedef struct fpool_job {
    const float *x;
    float *y;
    const rlx_nn_sp3 *s;
    pool_kind kind;
    /* per axis and output index: first and last + 1 kernel tap inside the
     * input, and the divisor factor (AveragePool) */
    int64_t *tlo[3], *thi[3], *cnt[3];
    int64_t clo, chi; /* outputs along the last axis whose windows are inside */
    bool rows;        /* MaxPool by rows (ring_plane) */
    bool avg_rows;    /* AveragePool by rows (ring_plane) */
    /* MaxPool of small planes in registers (maxplane_small_v16): lane o of
     * tap t reads input column tap[32 t + o], NULL where it does not apply */
    const int32_t *tap;
    /* AveragePool of small planes in registers (avgplane_small_v16): as
     * tap, with lane o of tap t of output vector v inside the row in bit o
     * of tapm[2 t + v]; NULL where it does not apply */
    const int32_t *atap;
    const uint16_t *tapm;
    /* MaxPool by column blocks (mcol_plane): the blocks, NULL where it does
     * not apply */
    const struct mcol_blk *mcol;
    int64_t mrlo, mrhi; /* mcol_plane: the output rows whose windows hold 3 input rows (stride 1 or 2 down) */
    /* AveragePool whose one output's window holds the whole plane (the 7x7
     * heads of Inception and ResNet): the plane's sum in double / div */
    bool whole;
    double div;
    rlx_cpu_isa isa;  /* its vector width */
} fpool_job;

/* One output of plane xc, its taps clipped per axis by the tables. */
static float fpool_point(const fpool_job *j, const float *xc, int64_t o0, int64_t o1, int64_t o2) {
    const rlx_nn_sp3 *s = j->s;
    float best = -FLT_MAX, acc = 0.0f;
    bool any = false;
    for (int64_t k0 = j->tlo[0][o0]; k0 < j->thi[0][o0]; k0++) {
        int64_t i0 = o0 * s->s[0] - s->pb[0] + k0 * s->d[0];
        for (int64_t k1 = j->tlo[1][o1]; k1 < j->thi[1][o1]; k1++) {
            int64_t i1 = o1 * s->s[1] - s->pb[1] + k1 * s->d[1];
            const float *xr = xc + (i0 * s->in[1] + i1) * s->in[2] + o2 * s->s[2] - s->pb[2];
            int64_t t0 = j->tlo[2][o2], t1 = j->thi[2][o2], d2 = s->d[2];
            if (j->kind == POOL_MAX) {
                for (int64_t k2 = t0; k2 < t1; k2++) {
                    float v = xr[k2 * d2];
                    if (!any || v > best || (v != v && best == best)) best = v, any = true;
                }
            } else {
                for (int64_t k2 = t0; k2 < t1; k2++) acc += xr[k2 * d2];
            }
        }
    }
    if (j->kind == POOL_MAX) return best;
    return acc / (float)(j->cnt[0][o0] * j->cnt[1][o1] * j->cnt[2][o2]);
}

/* Outputs [clo, chi) of one output row whose windows are inside the input
 * along the last axis: tap by tap over the whole run (the taps in the
 * order fpool_point takes them, so MaxPool keeps its first-tap and NaN
 * behaviour and AveragePool its sums). Needs at least one tap along axes
 * 0 and 1. */
static void fpool_run(const fpool_job *j, const float *xc, float *yr, int64_t o0, int64_t o1) {
    const rlx_nn_sp3 *s = j->s;
    int64_t clo = j->clo, n = j->chi - j->clo, st = s->s[2], d2 = s->d[2];
    float *y = yr + clo;
    bool first = true;
    for (int64_t k0 = j->tlo[0][o0]; k0 < j->thi[0][o0]; k0++) {
        int64_t i0 = o0 * s->s[0] - s->pb[0] + k0 * s->d[0];
        for (int64_t k1 = j->tlo[1][o1]; k1 < j->thi[1][o1]; k1++) {
            int64_t i1 = o1 * s->s[1] - s->pb[1] + k1 * s->d[1];
            const float *xr = xc + (i0 * s->in[1] + i1) * s->in[2] + clo * st - s->pb[2];
            for (int64_t k2 = 0; k2 < s->k[2]; k2++) {
                const float *x = xr + k2 * d2;
                if (first) {
                    for (int64_t o = 0; o < n; o++) y[o] = x[o * st];
                    first = false;
                } else if (j->kind == POOL_MAX) {
                    /* an unconditional store of the same choice as
                     * "if (v > y) y = v" (NaN included): no branch to
                     * mispredict, and the compiler's max instructions */
                    for (int64_t o = 0; o < n; o++) {
                        float v = x[o * st], c = y[o];
                        y[o] = v > c ? v : c;
                    }
                } else {
                    for (int64_t o = 0; o < n; o++) y[o] += x[o * st];
                }
            }
        }
    }
    if (j->kind == POOL_AVG) {
        float c01 = (float)(j->cnt[0][o0] * j->cnt[1][o1]);
        for (int64_t o = 0; o < n; o++) y[o] /= c01 * (float)j->cnt[2][clo + o];
    }
}

/* ------------------------------------------------------------ MaxPool by rows */

/* a > b ? a : b: the reference's step, and what the x86 max instructions
 * compute (b when either is NaN, b of two equal values) */
static inline float max_step(float a, float b) { return a > b ? a : b; }

/* hs and hf (see the top of the file) of output columns [o_lo, o_hi) of
 * input row xr whose windows are inside the row: taps xr[o * st - pb + t],
 * t < kw; portable C. */
static void maxrow_inside_c(const float *xr, int64_t st, int64_t pb, int64_t kw, int64_t o_lo, int64_t o_hi,
                            float *hs, float *hf) {
    for (int64_t o = o_lo; o < o_hi; o++) {
        const float *x = xr + o * st - pb;
        float a = max_step(x[0], -INFINITY);
        for (int64_t t = 1; t < kw; t++) a = max_step(x[t], a);
        hs[o] = a;
        hf[o] = max_step(a, x[0]);
    }
}

#if RLX_HAVE_AVX2_BUILD
/* The same with AVX-512F, 16 columns per step (the last ones masked);
 * strides 1 and 2 (stride 2: taps 2 u and 2 u + 1 are the even and odd
 * floats of the same 32, deinterleaved by one permute each). */
__attribute__((target("avx512f,avx2,fma"), always_inline)) static inline void
maxrow_inside_v16_k(const float *xr, int64_t st, int64_t pb, int64_t kw, int64_t o_lo, int64_t o_hi, float *hs,
                    float *hf) {
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (int64_t o = o_lo; o < o_hi; o += 16) {
        int64_t n = o_hi - o < 16 ? o_hi - o : 16;
        __mmask16 mo = (__mmask16)((1u << n) - 1);
        const float *x = xr + o * st - pb;
        __m512 a, x0;
        if (st == 1) {
            x0 = _mm512_maskz_loadu_ps(mo, x);
            a = _mm512_max_ps(x0, ninf);
            for (int64_t t = 1; t < kw; t++) a = _mm512_max_ps(_mm512_maskz_loadu_ps(mo, x + t), a);
        } else {
            /* taps 2 u and 2 u + 1 of column o + i: x[2 u + 2 i] and
             * x[2 u + 2 i + 1], the even and odd floats of the 32 from
             * x + 2 u (2 n of them for the last columns, 2 n - 1 when there
             * is no odd tap) */
            const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
            a = ninf, x0 = ninf;
            for (int64_t t = 0; t < kw; t += 2) {
                unsigned c = (unsigned)(2 * n - (t + 1 < kw ? 0 : 1));
                __mmask16 m0 = (__mmask16)(c >= 16 ? 0xffffu : (1u << c) - 1);
                __mmask16 m1 = (__mmask16)(c >= 32 ? 0xffffu : c > 16 ? (1u << (c - 16)) - 1 : 0);
                __m512 l0 = _mm512_maskz_loadu_ps(m0, x + t), l1 = _mm512_maskz_loadu_ps(m1, x + t + 16);
                __m512 v = _mm512_permutex2var_ps(l0, even, l1);
                if (t == 0) x0 = v;
                a = _mm512_max_ps(v, a);
                if (t + 1 < kw) a = _mm512_max_ps(_mm512_permutex2var_ps(l0, odd, l1), a);
            }
        }
        _mm512_mask_storeu_ps(hs + o, mo, a);
        _mm512_mask_storeu_ps(hf + o, mo, _mm512_max_ps(a, x0));
    }
}

/* maxrow_inside_v16_k with the common strides and widths as constants (the
 * tap loop unrolled). */
RLX_AVX512 static void maxrow_inside_v16(const float *xr, int64_t st, int64_t pb, int64_t kw, int64_t o_lo,
                                         int64_t o_hi, float *hs, float *hf) {
    if (st == 2 && kw == 3) maxrow_inside_v16_k(xr, 2, pb, 3, o_lo, o_hi, hs, hf);
    else if (st == 2 && kw == 2) maxrow_inside_v16_k(xr, 2, pb, 2, o_lo, o_hi, hs, hf);
    else if (st == 1 && kw == 3) maxrow_inside_v16_k(xr, 1, pb, 3, o_lo, o_hi, hs, hf);
    else if (st == 1 && kw == 5) maxrow_inside_v16_k(xr, 1, pb, 5, o_lo, o_hi, hs, hf);
    else if (st == 2) maxrow_inside_v16_k(xr, 2, pb, kw, o_lo, o_hi, hs, hf);
    else maxrow_inside_v16_k(xr, 1, pb, kw, o_lo, o_hi, hs, hf);
}

/* Output rows: y[o] = hf0[o] folded with rows[1..nr)[o], o < n (AVX-512F). */
RLX_AVX512 static void maxrow_fold_v16(float *y, const float *hf0, const float *const *rows, int64_t nr, int64_t n) {
    for (int64_t o = 0; o < n; o += 16) {
        __mmask16 m = (__mmask16)(n - o < 16 ? (1u << (n - o)) - 1 : 0xffffu);
        __m512 a = _mm512_maskz_loadu_ps(m, hf0 + o);
        for (int64_t r = 1; r < nr; r++) a = _mm512_max_ps(_mm512_maskz_loadu_ps(m, rows[r] + o), a);
        _mm512_mask_storeu_ps(y + o, m, a);
    }
}

/* AVX2, 8 columns per step while the loads stay inside the row (stride 2:
 * 16 floats per tap, deinterleaved by a shuffle and a permute), the rest
 * in C. */
RLX_AVX2 static void maxrow_inside_v8(const float *xr, int64_t w, int64_t st, int64_t pb, int64_t kw, int64_t o_lo,
                                      int64_t o_hi, float *hs, float *hf) {
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    int64_t o = o_lo;
    /* the last float a step of 8 loads: (o + 8) * st - pb + kw - 2 + st - 1 < w */
    for (; o + 8 <= o_hi && (o + 8) * st - pb + kw - 1 + (st - 1) <= w; o += 8) {
        const float *x = xr + o * st - pb;
        __m256 a, x0;
        if (st == 1) {
            x0 = _mm256_loadu_ps(x);
            a = _mm256_max_ps(x0, ninf);
            for (int64_t t = 1; t < kw; t++) a = _mm256_max_ps(_mm256_loadu_ps(x + t), a);
        } else {
#define EVEN8(p)                                                                                                      \
    _mm256_castpd_ps(_mm256_permute4x64_pd(                                                                           \
        _mm256_castps_pd(_mm256_shuffle_ps(_mm256_loadu_ps(p), _mm256_loadu_ps((p) + 8), _MM_SHUFFLE(2, 0, 2, 0))), \
        _MM_SHUFFLE(3, 1, 2, 0)))
            x0 = EVEN8(x);
            a = _mm256_max_ps(x0, ninf);
            for (int64_t t = 1; t < kw; t++) a = _mm256_max_ps(EVEN8(x + t), a);
#undef EVEN8
        }
        _mm256_storeu_ps(hs + o, a);
        _mm256_storeu_ps(hf + o, _mm256_max_ps(a, x0));
    }
    maxrow_inside_c(xr, st, pb, kw, o, o_hi, hs, hf);
}

RLX_AVX2 static void maxrow_fold_v8(float *y, const float *hf0, const float *const *rows, int64_t nr, int64_t n) {
    int64_t o = 0;
    for (; o + 8 <= n; o += 8) {
        __m256 a = _mm256_loadu_ps(hf0 + o);
        for (int64_t r = 1; r < nr; r++) a = _mm256_max_ps(_mm256_loadu_ps(rows[r] + o), a);
        _mm256_storeu_ps(y + o, a);
    }
    for (; o < n; o++) {
        float a = hf0[o];
        for (int64_t r = 1; r < nr; r++) a = max_step(rows[r][o], a);
        y[o] = a;
    }
}
#endif

static void maxrow_fold_c(float *y, const float *hf0, const float *const *rows, int64_t nr, int64_t n) {
    for (int64_t o = 0; o < n; o++) {
        float a = hf0[o];
        for (int64_t r = 1; r < nr; r++) a = max_step(rows[r][o], a);
        y[o] = a;
    }
}

/* hs and hf of every output column of input row xr (the last axis'
 * tables: windows clipped to the row; one without taps gives hs -inf and
 * hf -FLT_MAX, the reference's value of an empty window). */
static void maxrow_h(const fpool_job *j, const float *xr, float *hs, float *hf) {
    const rlx_nn_sp3 *s = j->s;
    int64_t w = s->in[2], st = s->s[2], pb = s->pb[2], kw = s->k[2], n = s->out[2];
    for (int64_t o = 0; o < n; o++) {
        if (o == j->clo) o = j->chi;
        if (o >= n) break;
        int64_t t0 = j->tlo[2][o], t1 = j->thi[2][o];
        if (t0 >= t1) {
            hs[o] = -INFINITY, hf[o] = -FLT_MAX;
            continue;
        }
        const float *x = xr + o * st - pb;
        float a = max_step(x[t0], -INFINITY);
        for (int64_t t = t0 + 1; t < t1; t++) a = max_step(x[t], a);
        hs[o] = a;
        hf[o] = max_step(a, x[t0]);
    }
    if (j->chi <= j->clo) return;
#if RLX_HAVE_AVX2_BUILD
    if (j->isa == RLX_CPU_ISA_AVX512) {
        maxrow_inside_v16(xr, st, pb, kw, j->clo, j->chi, hs, hf);
        return;
    }
    if (j->isa == RLX_CPU_ISA_AVX2) {
        maxrow_inside_v8(xr, w, st, pb, kw, j->clo, j->chi, hs, hf);
        return;
    }
#endif
    (void)w;
    maxrow_inside_c(xr, st, pb, kw, j->clo, j->chi, hs, hf);
}

/* Slots of the ring of rows: the power of two at least k[1] (input row r
 * in slot r & (slots - 1): a window's k[1] consecutive rows in distinct
 * slots). */
static int64_t maxrow_slots(const rlx_nn_sp3 *s) {
    int64_t n = 1;
    while (n < s->k[1]) n *= 2;
    return n;
}

/* Fills a ring slot with input row xr (hs, and what the row walker keeps
 * beside it in aux). */
typedef void (*ring_fill_fn)(const fpool_job *j, const float *xr, float *hs, float *aux);

/* Writes output row y (out[2] floats) of output row o1 from its window's
 * input rows' slots rows[0..nr) in row order (nr 0: the window holds no
 * input row); divs as ring_plane's. */
typedef void (*ring_emit_fn)(const fpool_job *j, float *y, int64_t o1, const float *const *rows, int64_t nr,
                             const float *divs);

/* One plane (spatial axis 0 of extent 1) by rows, the walker of both row
 * pools: ring holds maxrow_slots slots of 2 x out[2] floats, input row r
 * in slot r & (slots - 1), at[slot] the row a slot holds (-1: none yet);
 * a window's rows that its slots do not hold are filled by fill(j, row,
 * slot, aux) (each input row once while the windows move down), then
 * emit writes the output row. */
static void ring_plane(const fpool_job *j, const float *xc, float *yo, float *ring, int64_t *at, ring_fill_fn fill,
                       float *aux, ring_emit_fn emit, const float *divs) {
    const rlx_nn_sp3 *s = j->s;
    int64_t slots = maxrow_slots(s), n = s->out[2];
    const float *rows[64];
    for (int64_t i = 0; i < slots; i++) at[i] = -1;
    for (int64_t o1 = 0; o1 < s->out[1]; o1++) {
        int64_t t0 = j->tlo[1][o1], t1 = j->thi[1][o1];
        for (int64_t t = t0; t < t1; t++) {
            int64_t r = o1 * s->s[1] - s->pb[1] + t, slot = r & (slots - 1);
            float *hs = ring + slot * 2 * n;
            if (at[slot] != r) {
                fill(j, xc + r * s->in[2], hs, aux);
                at[slot] = r;
            }
            rows[t - t0] = hs;
        }
        emit(j, yo + o1 * n, o1, rows, t1 > t0 ? t1 - t0 : 0, divs);
    }
}

/* maxrow_h as a ring_fill_fn: hf in the slot's second half. */
static void maxrow_fill(const fpool_job *j, const float *xr, float *hs, float *aux) {
    (void)aux;
    maxrow_h(j, xr, hs, hs + j->s->out[2]);
}

/* MaxPool's ring_emit_fn: hf of the first row folded with hs of the
 * others. */
static void maxrow_emit(const fpool_job *j, float *y, int64_t o1, const float *const *rows, int64_t nr,
                        const float *divs) {
    int64_t n = j->s->out[2];
    (void)o1, (void)divs;
    if (nr <= 0) { /* no input row: no tap (the reference's lowest value) */
        for (int64_t o = 0; o < n; o++) y[o] = -FLT_MAX;
        return;
    }
    const float *hf0 = rows[0] + n;
#if RLX_HAVE_AVX2_BUILD
    if (j->isa == RLX_CPU_ISA_AVX512) {
        maxrow_fold_v16(y, hf0, rows, nr, n);
        return;
    }
    if (j->isa == RLX_CPU_ISA_AVX2) {
        maxrow_fold_v8(y, hf0, rows, nr, n);
        return;
    }
#endif
    maxrow_fold_c(y, hf0, rows, nr, n);
}

#if RLX_HAVE_AVX2_BUILD
/* The columns of MaxPool's small planes: j->tap for planes whose rows fit
 * two vectors and whose output rows two (in[2] <= 32, out[2] <= 32, at
 * most 64 rows, k[2] <= 32), where every output column's window holds an
 * input column; false elsewhere. Lane o of tap t reads column o * st - pb
 * + t clamped to [0, in[2]) (tap[32 t + o]): a tap on the pads reads the
 * row's end column, which its window reads too, next to it; a repeated
 * value never changes the fold (v > a is false for an earlier v of the
 * same window, and for a NaN), so the clamped taps give the reference's
 * bits; the first tap read is the window's first input column. */
static bool maxplane_small_taps(const fpool_job *j, int32_t *tap) {
    const rlx_nn_sp3 *s = j->s;
    int64_t w = s->in[2], n = s->out[2];
    if (!j->rows || j->isa != RLX_CPU_ISA_AVX512 || w > 32 || n > 32 || s->in[1] > 64 || s->k[2] > 32) return false;
    for (int64_t o = 0; o < n; o++)
        if (j->tlo[2][o] >= j->thi[2][o]) return false;
    for (int64_t t = 0; t < s->k[2]; t++)
        for (int64_t o = 0; o < 32; o++) {
            int64_t c = o < n ? o * s->s[2] - s->pb[2] + t : 0;
            tap[32 * t + o] = (int32_t)(c < 0 ? 0 : c >= w ? w - 1 : c);
        }
    return true;
}

/* The lanes of two vectors that hold the first len <= 32 of 32 floats. */
static inline void small_masks(int64_t len, __mmask16 *m) {
    m[0] = (__mmask16)(len >= 16 ? 0xffffu : (1u << len) - 1);
    m[1] = (__mmask16)(len <= 16 ? 0u : (1u << (len - 16)) - 1);
}

/* One small plane (maxplane_small_taps) in registers, AVX-512F: each input
 * row loaded once (two masked vectors), the hs and hf of its one or two
 * vectors of output columns from the taps' permutes, then each output row
 * hf of its window's first row folded with hs of the others in row order
 * (maxrow_emit's fold). */
__attribute__((target("avx512f,avx2,fma"), always_inline)) static inline void
maxplane_small_k(const fpool_job *j, const float *xc, float *yo, int64_t nv) {
    const rlx_nn_sp3 *s = j->s;
    int64_t w = s->in[2], n = s->out[2], kw = s->k[2];
    __mmask16 m[2], mo[2]; /* the row's floats and the output columns in the two vectors */
    small_masks(w, m);
    small_masks(n, mo);
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    __m512 hs[64][2], hf[64][2];
    for (int64_t r = 0; r < s->in[1]; r++) {
        const float *xr = xc + r * w;
        __m512 lo = _mm512_maskz_loadu_ps(m[0], xr), hi = _mm512_maskz_loadu_ps(m[1], xr + 16);
        for (int64_t v = 0; v < nv; v++) {
            const int32_t *tv = j->tap + 16 * v;
            __m512 x0 = _mm512_permutex2var_ps(lo, _mm512_loadu_si512(tv), hi);
            __m512 a = _mm512_max_ps(x0, ninf);
            for (int64_t t = 1; t < kw; t++)
                a = _mm512_max_ps(_mm512_permutex2var_ps(lo, _mm512_loadu_si512(tv + 32 * t), hi), a);
            hs[r][v] = a;
            hf[r][v] = _mm512_max_ps(a, x0);
        }
    }
    for (int64_t o1 = 0; o1 < s->out[1]; o1++) {
        int64_t t0 = j->tlo[1][o1], t1 = j->thi[1][o1], r0 = o1 * s->s[1] - s->pb[1] + t0;
        for (int64_t v = 0; v < nv; v++) {
            __m512 a = _mm512_set1_ps(-FLT_MAX); /* no input row: no tap */
            if (t1 > t0) {
                a = hf[r0][v];
                for (int64_t r = r0 + 1; r < r0 + (t1 - t0); r++) a = _mm512_max_ps(hs[r][v], a);
            }
            _mm512_mask_storeu_ps(yo + o1 * n + 16 * v, mo[v], a);
        }
    }
}

/* maxplane_small_k with one or two vectors of output columns as a
 * constant. */
RLX_AVX512 static void maxplane_small_v16(const fpool_job *j, const float *xc, float *yo) {
    if (j->s->out[2] <= 16) maxplane_small_k(j, xc, yo, 1);
    else maxplane_small_k(j, xc, yo, 2);
}
#endif

/* ------------------------------------------------------------ AveragePool by rows */

/* Floats of an input row between zeros that hold every output column's
 * whole window (the pads, ceil mode's taps past the end, and 32 more for
 * the masked vector loads of stride 2). */
static int64_t avgrow_pad_len(const rlx_nn_sp3 *s) {
    int64_t need = (s->out[2] - 1) * s->s[2] + s->k[2], have = s->pb[2] + s->in[2];
    return (need > have ? need : have) + 32;
}

/* hs[o] = the sum of the taps of output column o in input row xr, for the
 * columns [o_lo, o_hi) whose windows are inside the row (taps xr[o * st -
 * pb + t], t < kw, added left to right); portable C. */
static void sumrow_inside_c(const float *xr, int64_t st, int64_t pb, int64_t kw, int64_t o_lo, int64_t o_hi,
                            float *hs) {
    for (int64_t o = o_lo; o < o_hi; o++) {
        const float *x = xr + o * st - pb;
        float a = x[0];
        for (int64_t t = 1; t < kw; t++) a += x[t];
        hs[o] = a;
    }
}

#if RLX_HAVE_AVX2_BUILD
/* The same with AVX-512F, 16 columns per step (the last ones masked),
 * strides 1 and 2 (stride 2: the even floats of 32, one permute per tap,
 * as maxrow_inside_v16_k); the same additions in the same order. */
RLX_AVX512 static void sumrow_inside_v16(const float *xr, int64_t st, int64_t pb, int64_t kw, int64_t o_lo,
                                         int64_t o_hi, float *hs) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (int64_t o = o_lo; o < o_hi; o += 16) {
        int64_t n = o_hi - o < 16 ? o_hi - o : 16;
        __mmask16 mo = (__mmask16)((1u << n) - 1);
        const float *x = xr + o * st - pb;
        __m512 a;
        if (st == 1) {
            a = _mm512_maskz_loadu_ps(mo, x);
            for (int64_t t = 1; t < kw; t++) a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(mo, x + t));
        } else {
            /* tap t of column o + i: x[t + 2 i], the even floats of the 32
             * from x + t (2 n - 1 of them are needed) */
            unsigned c = (unsigned)(2 * n - 1);
            __mmask16 m0 = (__mmask16)(c >= 16 ? 0xffffu : (1u << c) - 1);
            __mmask16 m1 = (__mmask16)(c > 16 ? (1u << (c - 16)) - 1 : 0);
            a = _mm512_setzero_ps();
            for (int64_t t = 0; t < kw; t++) {
                __m512 v = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(m0, x + t), even,
                                                  _mm512_maskz_loadu_ps(m1, x + t + 16));
                a = t == 0 ? v : _mm512_add_ps(a, v);
            }
        }
        _mm512_mask_storeu_ps(hs + o, mo, a);
    }
}

/* y[o] = (hs0[o] + rows[1][o] + ...) / div[o], o < n (AVX-512F). */
RLX_AVX512 static void sumrow_fold_v16(float *y, const float *const *rows, int64_t nr, const float *div, int64_t n) {
    for (int64_t o = 0; o < n; o += 16) {
        __mmask16 m = (__mmask16)(n - o < 16 ? (1u << (n - o)) - 1 : 0xffffu);
        __m512 a = _mm512_maskz_loadu_ps(m, rows[0] + o);
        for (int64_t r = 1; r < nr; r++) a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(m, rows[r] + o));
        _mm512_mask_storeu_ps(y + o, m, _mm512_div_ps(a, _mm512_mask_loadu_ps(_mm512_set1_ps(1.0f), m, div + o)));
    }
}
#endif

#if RLX_HAVE_AVX2_BUILD
/* The lanes l < 16 whose column c + l lies in [0, w). */
static inline __mmask16 cols16(int64_t c, int64_t w) {
    int64_t lo = c < 0 ? -c : 0, hi = w - c;
    if (hi > 16) hi = 16;
    if (lo >= hi) return 0;
    return (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
}

/* One plane of an AveragePool of stride 1 (along the last axis) with kw <=
 * 17, or stride 2 with kw <= 2 (the 32 columns of 16 outputs' taps), in
 * registers (AVX-512F): per output row and 16 output columns, the
 * window's input rows added into two vectors of the 32 columns the taps
 * read (masked loads: outside the row reads zeros), then the kw taps added
 * by lane shifts of that pair, divided by divs. Vertical sums first: the
 * reference's terms in another order (within the fast path's 1e-6). */
RLX_AVX512 static void avgplane_s1_v16(const fpool_job *j, const float *xc, float *yo, const float *divs) {
    const rlx_nn_sp3 *s = j->s;
    int64_t w = s->in[2], n = s->out[2], kw = s->k[2], pb = s->pb[2], st = s->s[2];
    /* lane l's first tap: column st * l of the pair */
    const __m512i lane = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32((int)st));
    for (int64_t o1 = 0; o1 < s->out[1]; o1++) {
        float *y = yo + o1 * n;
        const float *div = divs + o1 * n;
        int64_t t0 = j->tlo[1][o1], t1 = j->thi[1][o1];
        for (int64_t o = 0; o < n; o += 16) {
            __mmask16 mo = (__mmask16)(n - o < 16 ? (1u << (n - o)) - 1 : 0xffffu);
            int64_t c0 = o * st - pb; /* the input column of lane 0's first tap */
            __mmask16 m0 = cols16(c0, w), m1 = cols16(c0 + 16, w);
            __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
            for (int64_t t = t0; t < t1; t++) {
                const float *xr = xc + (o1 * s->s[1] - s->pb[1] + t) * w;
                /* masked lanes are not read: the columns before 0 and past w */
                lo = _mm512_add_ps(lo, _mm512_maskz_loadu_ps(m0, xr + c0));
                hi = _mm512_add_ps(hi, _mm512_maskz_loadu_ps(m1, xr + c0 + 16));
            }
            __m512 a = st == 1 ? lo : _mm512_permutex2var_ps(lo, lane, hi);
            for (int64_t t = 1; t < kw; t++)
                a = _mm512_add_ps(a, _mm512_permutex2var_ps(lo, _mm512_add_epi32(lane, _mm512_set1_epi32((int)t)), hi));
            _mm512_mask_storeu_ps(y + o, mo, _mm512_div_ps(a, _mm512_mask_loadu_ps(_mm512_set1_ps(1.0f), mo, div + o)));
        }
    }
}
#endif

/* The horizontal sums of every output column of input row xr (windows
 * clipped to the row by the last axis' tables; no tap: 0). */
static void sumrow_h(const fpool_job *j, const float *xr, float *hs, float *pad) {
    const rlx_nn_sp3 *s = j->s;
    int64_t st = s->s[2], pb = s->pb[2], kw = s->k[2], n = s->out[2];
#if RLX_HAVE_AVX2_BUILD
    if (j->isa == RLX_CPU_ISA_AVX512 && st <= 2) {
        /* the row between zeros (avgrow_pad_len): every column's window
         * inside it, the zeros adding nothing (but -0 + 0 = +0) */
        int64_t w = s->in[2], len = avgrow_pad_len(s);
        memset(pad, 0, (size_t)pb * sizeof *pad);
        memcpy(pad + pb, xr, (size_t)w * sizeof *pad);
        memset(pad + pb + w, 0, (size_t)(len - pb - w) * sizeof *pad);
        sumrow_inside_v16(pad, st, 0, kw, 0, n, hs);
        return;
    }
#endif
    (void)pad;
    for (int64_t o = 0; o < n; o++) {
        if (o == j->clo) o = j->chi;
        if (o >= n) break;
        const float *x = xr + o * st - pb;
        float a = 0.0f;
        for (int64_t t = j->tlo[2][o]; t < j->thi[2][o]; t++) a = t == j->tlo[2][o] ? x[t] : a + x[t];
        hs[o] = a;
    }
    if (j->chi <= j->clo) return;
    sumrow_inside_c(xr, st, pb, kw, j->clo, j->chi, hs);
}

/* AveragePool's ring_emit_fn (ring slots: the first out[2] floats, the
 * horizontal sums): an output is its window's rows' sums added in row
 * order, then divided by its divisor (divs: c01 * cnt[2] per output, as
 * fpool_run divides). */
static void avgrow_emit(const fpool_job *j, float *y, int64_t o1, const float *const *rows, int64_t nr,
                        const float *divs) {
    int64_t n = j->s->out[2];
    const float *div = divs + o1 * n;
    if (nr <= 0) { /* no input row: an empty sum (fpool_point's 0 / count) */
        for (int64_t o = 0; o < n; o++) y[o] = 0.0f / div[o];
        return;
    }
#if RLX_HAVE_AVX2_BUILD
    if (j->isa == RLX_CPU_ISA_AVX512) {
        sumrow_fold_v16(y, rows, nr, div, n);
        return;
    }
#endif
    for (int64_t o = 0; o < n; o++) {
        float a = rows[0][o];
        for (int64_t r = 1; r < nr; r++) a += rows[r][o];
        y[o] = a / div[o];
    }
}

#if RLX_HAVE_AVX2_BUILD
/* The columns of AveragePool's small planes (rows of at most 32 floats, 32
 * outputs, 64 rows, k[2] <= 32; AVX-512, by rows): lane o of tap t reads
 * column c = o * st - pb + t (tap[32 t + o]) where 0 <= c < in[2] (bit o %
 * 16 of tapm[2 t + o / 16]), else adds nothing; false where they do not
 * apply. */
static bool avgplane_small_taps(const fpool_job *j, int32_t *tap, uint16_t *tapm) {
    const rlx_nn_sp3 *s = j->s;
    int64_t w = s->in[2], n = s->out[2];
    if (!j->avg_rows || j->isa != RLX_CPU_ISA_AVX512 || w > 32 || n > 32 || s->in[1] > 64 || s->k[2] > 32)
        return false;
    for (int64_t t = 0; t < s->k[2]; t++) {
        tapm[2 * t] = tapm[2 * t + 1] = 0;
        for (int64_t o = 0; o < 32; o++) {
            int64_t c = o * s->s[2] - s->pb[2] + t;
            bool in = o < n && c >= 0 && c < w;
            tap[32 * t + o] = (int32_t)(in ? c : 0);
            if (in) tapm[2 * t + o / 16] |= (uint16_t)(1u << (o % 16));
        }
    }
    return true;
}

/* One small plane (avgplane_small_taps) in registers, AVX-512F: each input
 * row loaded once (two masked vectors), its horizontal sums per output
 * column by masked permutes, taps left to right; an output is its
 * window's rows' sums added in row order, divided by c01 * cnt[2] (as
 * fpool_run divides; no input row: 0 / that). The reference's terms in
 * another order, as the other AveragePool paths: within the fast path's
 * 1e-6. nv: the vectors of output columns (1 or 2). */
__attribute__((target("avx512f,avx2,fma"), always_inline)) static inline void
avgplane_small_k(const fpool_job *j, const float *xc, float *yo, int64_t nv) {
    const rlx_nn_sp3 *s = j->s;
    int64_t w = s->in[2], n = s->out[2], kw = s->k[2];
    __mmask16 m[2], mo[2]; /* the row's floats and the output columns in the two vectors */
    small_masks(w, m);
    small_masks(n, mo);
    __m512 hs[64][2], c2[2];
    for (int64_t v = 0; v < nv; v++) {
        float c[16];
        for (int64_t l = 0; l < 16; l++) c[l] = 16 * v + l < n ? (float)j->cnt[2][16 * v + l] : 1.0f;
        c2[v] = _mm512_loadu_ps(c);
    }
    for (int64_t r = 0; r < s->in[1]; r++) {
        const float *xr = xc + r * w;
        __m512 lo = _mm512_maskz_loadu_ps(m[0], xr), hi = _mm512_maskz_loadu_ps(m[1], xr + 16);
        for (int64_t v = 0; v < nv; v++) {
            const int32_t *tv = j->atap + 16 * v;
            __m512 a = _mm512_maskz_permutex2var_ps((__mmask16)j->tapm[v], lo, _mm512_loadu_si512(tv), hi);
            for (int64_t t = 1; t < kw; t++)
                a = _mm512_add_ps(a, _mm512_maskz_permutex2var_ps((__mmask16)j->tapm[2 * t + v], lo,
                                                                  _mm512_loadu_si512(tv + 32 * t), hi));
            hs[r][v] = a;
        }
    }
    for (int64_t o1 = 0; o1 < s->out[1]; o1++) {
        int64_t t0 = j->tlo[1][o1], t1 = j->thi[1][o1], r0 = o1 * s->s[1] - s->pb[1] + t0;
        __m512 c01 = _mm512_set1_ps((float)(j->cnt[0][0] * j->cnt[1][o1]));
        for (int64_t v = 0; v < nv; v++) {
            __m512 a = _mm512_setzero_ps(); /* no input row: an empty sum */
            if (t1 > t0) {
                a = hs[r0][v];
                for (int64_t r = r0 + 1; r < r0 + (t1 - t0); r++) a = _mm512_add_ps(a, hs[r][v]);
            }
            _mm512_mask_storeu_ps(yo + o1 * n + 16 * v, mo[v], _mm512_div_ps(a, _mm512_mul_ps(c01, c2[v])));
        }
    }
}

/* avgplane_small_k with one or two vectors of output columns as a
 * constant. */
RLX_AVX512 static void avgplane_small_v16(const fpool_job *j, const float *xc, float *yo) {
    if (j->s->out[2] <= 16) avgplane_small_k(j, xc, yo, 1);
    else avgplane_small_k(j, xc, yo, 2);
}
#endif

/* ------------------------------------------------------------ pools by column blocks */

#if RLX_HAVE_AVX2_BUILD
/* MaxPool's and AveragePool's planes by blocks of 16 output columns
 * (AVX-512F; the by-rows planes, k[2] <= MCOL_KW, out[2] <= 16 MCOL_BLKS,
 * strides 1 and 2 along the last axis). A block runs down the whole
 * plane: an input row's 16 horizontal folds come from two pairs of
 * vectors loaded at columns b0 and b1 (masked to the row) by one
 * vpermt2ps per tap. MaxPool: hs and hf (the top of the file), with the
 * column indexes clamped to the row as maxplane_small_taps does (a tap on
 * the pads repeats the window's end column next to it: the same bits;
 * every output column's window must hold an input column), an output row
 * hf of its first input row folded with hs of the others. AveragePool: a
 * tap off the row is a masked-off lane (adds nothing), the row's sum of
 * taps left to right, an output row its rows' sums in row order divided
 * by c01 * cnt[2] (avgplane_small_k's terms, order and division: the same
 * bits as that path, within the fast path's 1e-6 of the reference). With
 * 3 rows per window and stride 1 or 2 down, the rows that the next output
 * row shares stay in registers: no ring, no stores but the outputs.
 * SqueezeNet's 3x3 s2 MaxPool over 128 x 55x55 went from 0.139 to 0.039
 * ms, Inception v2's 3x3 s2 over 192 x 56x56 from 0.210 to 0.060 (1
 * thread, BENCHMARKS.md "CPU pools by column blocks"). */
/* MCOL_BAND_BYTES: the input rows of a band of output rows that all the
 * blocks run through before the next band (the band's rows stay in L1;
 * 16 KiB was 4% faster than whole planes on 64 x 111x111) */
enum { MCOL_KW = 8, MCOL_BLKS = 16, MCOL_BAND_BYTES = 16384 };

typedef struct mcol_blk {
    int32_t b0, b1;    /* the input columns of the two pairs' first floats */
    __mmask16 m[4];    /* the lanes of the pairs' vectors inside the row */
    unsigned sel;      /* tap t from pair 1 when bit t is set, else pair 0 */
    __mmask16 mo;      /* the block's output columns */
    __mmask16 tm[MCOL_KW]; /* AveragePool: the lanes whose tap t is on the row (MaxPool: all) */
    int32_t idx[MCOL_KW][16]; /* lane l of tap t: index into its pair */
    float c2[16];      /* AveragePool: (float)cnt[2] of the block's columns */
    /* two planes in one vector (rows of at most 16 floats, at most 8
     * outputs): lanes 8 + l the next plane's column l, its pair's second
     * vector that plane's row (d1 = in_sp floats on, else 16) */
    bool two;
    int64_t d1;
    /* AveragePool with stride 1 along the row (not two): tap t a masked
     * load of lanes tm[t] at column c0 + t, no permute */
    bool ld;
    int64_t c0;
} mcol_blk;

/* The blocks of a by-rows pool, false where the path does not apply. */
static bool mcol_setup(const fpool_job *j, mcol_blk *blk) {
    const rlx_nn_sp3 *s = j->s;
    int64_t w = s->in[2], n = s->out[2], kw = s->k[2], st = s->s[2], pb = s->pb[2];
    bool maxp = j->kind == POOL_MAX;
    if (!(maxp ? j->rows : j->avg_rows) || j->isa != RLX_CPU_ISA_AVX512 || kw > MCOL_KW || n > 16 * MCOL_BLKS ||
        n < 1 || st > 2 || w < 1)
        return false;
    for (int64_t o = 0; maxp && o < n; o++)
        if (j->tlo[2][o] >= j->thi[2][o]) return false;
    if (w <= 16 && n <= 8) { /* two planes per vector: one block, one pair (a plane's row and the next's) */
        mcol_blk *k = &blk[0];
        k->two = true, k->d1 = (int64_t)s->in_sp, k->b0 = k->b1 = 0, k->sel = 0, k->ld = false, k->c0 = 0;
        k->m[0] = k->m[1] = k->m[2] = k->m[3] = cols16(0, w);
        k->mo = (__mmask16)(((1u << n) - 1) * 0x101u);
        for (int64_t l = 0; l < 16; l++) k->c2[l] = l % 8 < n ? (float)j->cnt[2][l % 8] : 1.0f;
        for (int64_t t = 0; t < kw; t++) {
            unsigned tm = 0;
            for (int64_t l = 0; l < 16; l++) {
                int64_t o = l % 8 < n ? l % 8 : n - 1, c = o * st - pb + t;
                if (l % 8 < n && c >= 0 && c < w) tm |= 1u << l;
                k->idx[t][l] = (int32_t)((c < 0 ? 0 : c >= w ? w - 1 : c) + (l < 8 ? 0 : 16));
            }
            k->tm[t] = (__mmask16)(maxp ? 0xffffu : tm);
        }
        return true;
    }
    for (int64_t b = 0; b * 16 < n; b++) {
        mcol_blk *k = &blk[b];
        int64_t o0 = 16 * b, nl = n - o0 < 16 ? n - o0 : 16;
        int64_t cmin = w, cmax = -1;
        for (int64_t l = 0; l < nl; l++)
            for (int64_t t = 0; t < kw; t++) {
                int64_t c = (o0 + l) * st - pb + t;
                c = c < 0 ? 0 : c >= w ? w - 1 : c;
                cmin = c < cmin ? c : cmin, cmax = c > cmax ? c : cmax;
            }
        k->two = false, k->d1 = 16, k->ld = !maxp && st == 1, k->c0 = o0 - pb;
        k->b0 = (int32_t)cmin, k->b1 = (int32_t)(cmax - 31);
        k->m[0] = cols16(k->b0, w), k->m[1] = cols16(k->b0 + 16, w);
        k->m[2] = cols16(k->b1, w), k->m[3] = cols16(k->b1 + 16, w);
        k->mo = (__mmask16)(nl == 16 ? 0xffffu : (1u << nl) - 1);
        k->sel = 0;
        for (int64_t l = 0; l < 16; l++) k->c2[l] = l < nl ? (float)j->cnt[2][o0 + l] : 1.0f;
        for (int64_t t = 0; t < kw; t++) {
            int64_t cl[16], lo = w, hi = -1;
            unsigned tm = 0;
            for (int64_t l = 0; l < 16; l++) {
                int64_t c = (o0 + (l < nl ? l : nl - 1)) * st - pb + t;
                if (l < nl && c >= 0 && c < w) tm |= 1u << l;
                cl[l] = c < 0 ? 0 : c >= w ? w - 1 : c;
                lo = cl[l] < lo ? cl[l] : lo, hi = cl[l] > hi ? cl[l] : hi;
            }
            k->tm[t] = (__mmask16)(maxp ? 0xffffu : tm);
            int64_t base;
            if (lo >= k->b0 && hi < k->b0 + 32) base = k->b0;
            else if (lo >= k->b1 && hi < k->b1 + 32) base = k->b1, k->sel |= 1u << t;
            else return false;
            for (int64_t l = 0; l < 16; l++) k->idx[t][l] = (int32_t)(cl[l] - base);
        }
    }
    return true;
}

/* One block's constants in registers (the struct's fields would be read
 * again after each store: a char type may alias the outputs). */
typedef struct mcol_regs {
    const float *x0, *x1; /* the pairs' first floats in input row 0 */
    const float *xl;      /* ld: tap 0's column of lane 0 in input row 0 */
    int64_t d1;           /* the pairs' second vectors: floats on from the first */
    __mmask16 m0, m1, m2, m3;
    __mmask16 tm[MCOL_KW];
    __m512i idx[MCOL_KW];
} mcol_regs;

/* Tap t of one block of the row whose pairs are (a0, a1) and (c0, c1). */
#define MCOL_TAP(t)                                                                                                \
    (maxp ? (sel >> (t) & 1u ? _mm512_permutex2var_ps(c0, k->idx[t], c1) : _mm512_permutex2var_ps(a0, k->idx[t], a1)) \
          : (sel >> (t) & 1u ? _mm512_maskz_permutex2var_ps(k->tm[t], c0, k->idx[t], c1)                        \
                             : _mm512_maskz_permutex2var_ps(k->tm[t], a0, k->idx[t], a1)))

/* One block of the input row at offset off: MaxPool's hs and hf, or
 * AveragePool's sum in hs (kw taps; tap t from pair 1 when bit t of sel is
 * set). MaxPool accumulates into *nm a lane that turns NaN where a loaded
 * pair holds a NaN (or an infinity): *nm += (a0 + a1) * 0, one add and
 * one FMA per pair (an unordered compare into a mask cost more: the mask
 * went through a general register). The fold skips NaN, so the caller
 * redoes a plane that had one. */
__attribute__((target("avx512f,avx2,fma"), always_inline)) static inline void
mcol_h(const mcol_regs *k, int64_t off, int64_t kw, unsigned sel, bool maxp, bool ld, __m512 *hs, __m512 *hf,
       __m512 *nm) {
    if (ld) { /* AveragePool, stride 1: masked loads (a lane off the row is not read and adds nothing) */
        __m512 a = _mm512_maskz_loadu_ps(k->tm[0], k->xl + off);
        for (int64_t t = 1; t < kw; t++) a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(k->tm[t], k->xl + off + t));
        *hs = *hf = a;
        return;
    }
    __m512 a0 = _mm512_maskz_loadu_ps(k->m0, k->x0 + off), a1 = _mm512_maskz_loadu_ps(k->m1, k->x0 + off + k->d1);
    __m512 c0 = a0, c1 = a1;
    if (sel) c0 = _mm512_maskz_loadu_ps(k->m2, k->x1 + off), c1 = _mm512_maskz_loadu_ps(k->m3, k->x1 + off + 16);
    __m512 x0 = MCOL_TAP(0);
    if (maxp) { /* (a0 + a1) * 0 is NaN where either is NaN (or inf: a plane redone for nothing) */
        *nm = _mm512_fmadd_ps(_mm512_add_ps(a0, a1), _mm512_setzero_ps(), *nm);
        if (sel) *nm = _mm512_fmadd_ps(_mm512_add_ps(c0, c1), _mm512_setzero_ps(), *nm);
    }
    if (!maxp) {
        for (int64_t t = 1; t < kw; t++) x0 = _mm512_add_ps(x0, MCOL_TAP(t));
        *hs = *hf = x0;
        return;
    }
    __m512 a = _mm512_max_ps(x0, _mm512_set1_ps(-INFINITY));
    for (int64_t t = 1; t < kw; t++) a = _mm512_max_ps(MCOL_TAP(t), a);
    *hs = a;
    *hf = _mm512_max_ps(a, x0);
}
#undef MCOL_TAP

/* Output row o1 of one block from its window's rows, each computed here
 * (the edge rows, and windows of other heights or strides); AveragePool's
 * before the division. */
__attribute__((target("avx512f,avx2,fma"), always_inline)) static inline __m512
mcol_out(const fpool_job *j, const mcol_regs *k, int64_t kw, unsigned sel, bool maxp, bool ld, int64_t o1,
         __m512 *nm) {
    const rlx_nn_sp3 *s = j->s;
    int64_t t0 = j->tlo[1][o1], t1 = j->thi[1][o1], r0 = o1 * s->s[1] - s->pb[1] + t0, w = s->in[2];
    /* no input row: MaxPool no tap (the reference's lowest value), AveragePool an empty sum */
    if (t1 <= t0) return maxp ? _mm512_set1_ps(-FLT_MAX) : _mm512_setzero_ps();
    __m512 hs, hf, a;
    mcol_h(k, r0 * w, kw, sel, maxp, ld, &hs, &a, nm);
    for (int64_t r = r0 + 1; r < r0 + (t1 - t0); r++) {
        mcol_h(k, r * w, kw, sel, maxp, ld, &hs, &hf, nm);
        a = maxp ? _mm512_max_ps(hs, a) : _mm512_add_ps(a, hs);
    }
    return a;
}

/* An output row's vector of one block at y: MaxPool's fold as it is,
 * AveragePool's sums divided by c01 * c2; lanes mo2 (two planes: the next
 * plane's, lanes 8 on) at y2 + 8. */
__attribute__((target("avx512f,avx2,fma"), always_inline)) static inline void
mcol_store(const fpool_job *j, float *y, __mmask16 mo, float *y2, __mmask16 mo2, __m512 a, bool maxp, __m512 c2,
           int64_t o1) {
    if (!maxp) a = _mm512_div_ps(a, _mm512_mul_ps(_mm512_set1_ps((float)(j->cnt[0][0] * j->cnt[1][o1])), c2));
    _mm512_mask_storeu_ps(y, mo, a);
    if (mo2) _mm512_mask_storeu_ps(y2, mo2, a); /* masked lanes 0..7 are not written */
}

/* One block of one plane, kw taps, sh (the stride down, when the window
 * has 3 rows), sel (the block's pairs of the taps) and the kind constants
 * where the callers pass them; output rows [rlo, rhi) have windows of 3
 * input rows. */
__attribute__((target("avx512f,avx2,fma"), always_inline)) static inline void
mcol_block_k(const fpool_job *j, const mcol_blk *b, const float *xc, float *y, int64_t rlo, int64_t rhi, int64_t kw,
             int64_t sh, unsigned sel, bool maxp, bool pair, bool ld, int64_t ra, int64_t rb, __m512 *nm) {
    const rlx_nn_sp3 *s = j->s;
    int64_t w = s->in[2], n = s->out[2];
    mcol_regs k;
    k.x0 = xc + b->b0, k.x1 = xc + b->b1, k.d1 = b->d1, k.xl = xc + b->c0;
    k.m0 = b->m[0], k.m1 = pair || !b->two ? b->m[1] : 0, k.m2 = b->m[2], k.m3 = b->m[3];
    /* two planes: lanes 8.. to the next plane's row, 8 floats before it (a lone plane: none) */
    __mmask16 mo = b->two ? (__mmask16)(b->mo & 0xffu) : b->mo, mo2 = pair ? (__mmask16)(b->mo & 0xff00u) : 0;
    float *y2 = y + s->out_sp - 8;
    __m512 c2 = _mm512_loadu_ps(b->c2);
    for (int64_t t = 0; t < kw; t++) k.idx[t] = _mm512_loadu_si512(b->idx[t]), k.tm[t] = b->tm[t];
    for (int64_t o1 = ra; o1 < rlo && o1 < rb; o1++)
        mcol_store(j, y + o1 * n, mo, y2 + o1 * n, mo2, mcol_out(j, &k, kw, sel, maxp, ld, o1, nm), maxp, c2, o1);
    int64_t ca = ra > rlo ? ra : rlo, cb = rb < rhi ? rb : rhi;
    if (cb > ca) {
        int64_t off = (ca * sh - s->pb[1]) * w;
        __m512 hsa, hfa, hsb = _mm512_setzero_ps(), hfb = hsb, hsc, hfc;
        mcol_h(&k, off, kw, sel, maxp, ld, &hsa, &hfa, nm);
        if (sh == 1) mcol_h(&k, off + w, kw, sel, maxp, ld, &hsb, &hfb, nm);
        for (int64_t o1 = ca; o1 < cb; o1++, off += sh * w) {
            if (sh == 2) mcol_h(&k, off + w, kw, sel, maxp, ld, &hsb, &hfb, nm);
            mcol_h(&k, off + 2 * w, kw, sel, maxp, ld, &hsc, &hfc, nm);
            /* MaxPool: hf of the first row, hs of the others; AveragePool: the sums in row order */
            __m512 a = maxp ? _mm512_max_ps(hsc, _mm512_max_ps(hsb, hfa)) : _mm512_add_ps(_mm512_add_ps(hsa, hsb), hsc);
            mcol_store(j, y + o1 * n, mo, y2 + o1 * n, mo2, a, maxp, c2, o1);
            if (sh == 1) hsa = hsb, hfa = hfb, hsb = hsc, hfb = hfc;
            else hsa = hsc, hfa = hfc;
        }
    }
    for (int64_t o1 = ra > rhi ? ra : rhi; o1 < rb; o1++)
        mcol_store(j, y + o1 * n, mo, y2 + o1 * n, mo2, mcol_out(j, &k, kw, sel, maxp, ld, o1, nm), maxp, c2, o1);
}

/* One plane (pair false) or two (pair true: blk[0].two, planes xc and xc
 * + in_sp): each block by mcol_block_k, the common shapes' constants
 * spelled out. MaxPool: whether a NaN (or an infinity) was read (the
 * plane, or the two, is then fixed up: fpool_nan_fix). */
RLX_AVX512 static bool mcol_plane(const fpool_job *j, const mcol_blk *blk, const float *xc, float *yo, bool pair) {
    const rlx_nn_sp3 *s = j->s;
    int64_t kw = s->k[2], sh = s->s[1], n = s->out[2];
    bool maxp = j->kind == POOL_MAX;
    int64_t rlo = j->mrlo, rhi = j->mrhi, h = s->out[1];
    int64_t band = MCOL_BAND_BYTES / (4 * s->in[2] * sh + 1);
    band = band < 2 ? 2 : band;
    __m512 nm = _mm512_setzero_ps();
#define MCOL_B(kw_, sh_, sel_, maxp_, pair_, ld_) \
    mcol_block_k(j, b, xc, y, rlo, rhi, kw_, sh_, sel_, maxp_, pair_, ld_, ra, rb, &nm)
    for (int64_t ra = 0, rb; ra < h; ra = rb) { /* bands of output rows [ra, rb) */
        rb = ra + band < h ? ra + band : h;
        for (int64_t bi = 0; bi * 16 < n; bi++) {
            const mcol_blk *b = &blk[bi];
            float *y = yo + 16 * bi;
            unsigned sel = b->sel;
            if (b->two) { /* one block */
                if (maxp && kw == 3 && sh == 1) MCOL_B(3, 1, 0u, true, pair, false);
                else if (maxp && kw == 3 && sh == 2) MCOL_B(3, 2, 0u, true, pair, false);
                else if (maxp) MCOL_B(kw, sh, 0u, true, pair, false);
                else if (kw == 3 && sh == 1) MCOL_B(3, 1, 0u, false, pair, false);
                else MCOL_B(kw, sh, 0u, false, pair, false);
            } else if (maxp) {
                if (kw == 3 && sh == 2 && sel == 4u) MCOL_B(3, 2, 4u, true, false, false);
                else if (kw == 3 && sh == 2 && sel == 0u) MCOL_B(3, 2, 0u, true, false, false);
                else if (kw == 3 && sh == 1 && sel == 0u) MCOL_B(3, 1, 0u, true, false, false);
                else if (kw == 2 && sh == 2 && sel == 0u) MCOL_B(2, 2, 0u, true, false, false);
                else MCOL_B(kw, sh, sel, true, false, false);
            } else {
                if (b->ld && kw == 3 && sh == 1) MCOL_B(3, 1, 0u, false, false, true);
                else if (b->ld) MCOL_B(kw, sh, 0u, false, false, true);
                else if (kw == 2 && sh == 2 && sel == 0u) MCOL_B(2, 2, 0u, false, false, false);
                else MCOL_B(kw, sh, sel, false, false, false);
            }
        }
    }
#undef MCOL_B
    return _mm512_cmp_ps_mask(nm, nm, _CMP_UNORD_Q) != 0;
}
#endif

/* The sum of x[0..n) in double: the reference's terms (it sums the f32
 * inputs as doubles) in another order, 16 per step with AVX-512F (two
 * accumulators of 8), in order in C. */
#if RLX_HAVE_AVX2_BUILD
RLX_AVX512 static double sum_f64_v16(const float *x, size_t n) {
    __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
        a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
    }
    if (i < n) { /* the tail: masked lanes add +0 (the reference's sum starts at +0 too) */
        __m512 v = _mm512_maskz_loadu_ps((__mmask16)((1u << (n - i)) - 1), x + i);
        a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
        a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(a0, a1));
}
#endif

static double sum_f64(const fpool_job *j, const float *x, size_t n) {
#if RLX_HAVE_AVX2_BUILD
    if (j->isa == RLX_CPU_ISA_AVX512) return sum_f64_v16(x, n);
#endif
    (void)j;
    double a = 0.0;
    for (size_t i = 0; i < n; i++) a += x[i];
    return a;
}

#if RLX_HAVE_AVX2_BUILD
RLX_AVX512 static bool has_nan_v16(const float *x, size_t n) {
    __mmask16 m = 0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) /* unordered: either is NaN */
        m |= _mm512_cmp_ps_mask(_mm512_loadu_ps(x + i), _mm512_loadu_ps(x + i + 16), _CMP_UNORD_Q);
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        m |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    }
    if (i < n) {
        __mmask16 t = (__mmask16)((1u << (n - i)) - 1u);
        __m512 v = _mm512_maskz_loadu_ps(t, x + i);
        m |= _mm512_mask_cmp_ps_mask(t, v, v, _CMP_UNORD_Q);
    }
    return m != 0;
}
RLX_AVX2 static bool has_nan_v8(const float *x, size_t n) {
    __m256 acc = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        acc = _mm256_or_ps(acc, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
    bool any = _mm256_movemask_ps(acc) != 0;
    for (; i < n; i++) any |= x[i] != x[i];
    return any;
}
#endif

/* MaxPool's outputs of one plane whose windows hold a NaN of xc, set to
 * the window's first NaN (NaN propagates), after a fast path that skipped
 * NaN taps: each NaN is written to every output whose window takes it, the
 * NaNs from the plane's end back, so the last written, an output's first
 * NaN in memory order, is its first in tap order. The other outputs keep
 * the fast path's values (their windows hold no NaN). */
static void fpool_nan_fix(const fpool_job *j, const float *xc, float *yo) {
    const rlx_nn_sp3 *s = j->s;
    for (int64_t i = s->in_sp; i-- > 0;) {
        float v = xc[i];
        if (v == v) continue;
        int64_t q[3] = { i / (s->in[1] * s->in[2]), i / s->in[2] % s->in[1], i % s->in[2] };
        for (int64_t t0 = 0; t0 < s->k[0]; t0++) {
            int64_t a0 = q[0] + s->pb[0] - t0 * s->d[0];
            if (a0 < 0 || a0 % s->s[0] || a0 / s->s[0] >= s->out[0]) continue;
            for (int64_t t1 = 0; t1 < s->k[1]; t1++) {
                int64_t a1 = q[1] + s->pb[1] - t1 * s->d[1];
                if (a1 < 0 || a1 % s->s[1] || a1 / s->s[1] >= s->out[1]) continue;
                for (int64_t t2 = 0; t2 < s->k[2]; t2++) {
                    int64_t a2 = q[2] + s->pb[2] - t2 * s->d[2];
                    if (a2 < 0 || a2 % s->s[2] || a2 / s->s[2] >= s->out[2]) continue;
                    yo[(a0 / s->s[0] * s->out[1] + a1 / s->s[1]) * s->out[2] + a2 / s->s[2]] = v;
                }
            }
        }
    }
}

/* Whether plane x of n floats holds a NaN: MaxPool's fast paths (the
 * folds by rows, the small planes in registers, fpool_run) skip NaN taps
 * as the x86 max instructions do, so a plane with a NaN is fixed up after
 * them (fpool_nan_fix). One read of the plane, which the pool then
 * finds in the cache. The column blocks (mcol_plane), the models' usual
 * path, find NaN in the rows they load instead. */
static bool plane_has_nan(const fpool_job *j, const float *x, size_t n) {
#if RLX_HAVE_AVX2_BUILD
    if (j->isa == RLX_CPU_ISA_AVX512) return has_nan_v16(x, n);
    if (j->isa == RLX_CPU_ISA_AVX2) return has_nan_v8(x, n);
#endif
    bool any = false;
    for (size_t i = 0; i < n; i++) any |= x[i] != x[i];
    return any;
}

static void fpool_plane_fast(const fpool_job *j, const float *xc, float *yo, float *ring, int64_t *at, float *divs,
                             float *pad);

static void fpool_planes(void *ctx, size_t p0, size_t p1) {
    const fpool_job *j = ctx;
    const rlx_nn_sp3 *s = j->s;
    float *ring = NULL, *divs = NULL, *pad = NULL;
    size_t slots = j->rows || j->avg_rows ? (size_t)maxrow_slots(s) : 0;
    /* AveragePool: the outputs' divisors and the padded row after the ring */
    size_t extra = j->avg_rows ? s->out_sp + (size_t)avgrow_pad_len(s) : 0;
    int64_t *at = NULL; /* first in the scratch: 8-byte aligned (after the floats it was not: UBSan) */
    if (slots) { /* without scratch: the plane as below */
        size_t at_words = (slots + 7) & ~(size_t)7; /* the ring stays on a 64-byte line */
        at = rlx_scratch_get(RLX_SCRATCH_TASK, at_words * sizeof(int64_t) +
                                                   (slots * 2 * (size_t)s->out[2] + extra) * sizeof(float));
        ring = at ? (float *)(at + at_words) : NULL;
    }
    if (ring && j->avg_rows) {
        divs = ring + slots * 2 * (size_t)s->out[2];
        pad = divs + s->out_sp;
        for (int64_t o1 = 0; o1 < s->out[1]; o1++) {
            float c01 = (float)(j->cnt[0][0] * j->cnt[1][o1]);
            for (int64_t o = 0; o < s->out[2]; o++) divs[o1 * s->out[2] + o] = c01 * (float)j->cnt[2][o];
        }
    }
    bool maxp = j->kind == POOL_MAX;
    for (size_t pl = p0; pl < p1; pl++) {
        const float *xc = j->x + pl * s->in_sp;
        float *yo = j->y + pl * s->out_sp;
#if RLX_HAVE_AVX2_BUILD
        if (j->mcol && !j->whole) { /* MaxPool: NaN found on the way (such a plane is fixed up) */
            bool pair = j->mcol[0].two && pl + 1 < p1; /* two planes per vector */
            if (mcol_plane(j, j->mcol, xc, yo, pair) && maxp)
                for (size_t q = 0; q <= (size_t)pair; q++) fpool_nan_fix(j, xc + q * s->in_sp, yo + q * s->out_sp);
            pl += pair;
            continue;
        }
#endif
        /* the fast paths below skip NaN taps: fpool_nan_fix after them */
        bool fix = maxp && plane_has_nan(j, xc, (size_t)s->in_sp);
        fpool_plane_fast(j, xc, yo, ring, at, divs, pad);
        if (fix) fpool_nan_fix(j, xc, yo);
    }
}

/* One plane by the fast paths other than the column blocks. */
static void fpool_plane_fast(const fpool_job *j, const float *xc, float *yo, float *ring, int64_t *at, float *divs,
                             float *pad) {
    const rlx_nn_sp3 *s = j->s;
    if (j->whole) {
        yo[0] = (float)(sum_f64(j, xc, s->in_sp) / j->div);
        return;
    }
#if RLX_HAVE_AVX2_BUILD
    if (j->tap) {
        maxplane_small_v16(j, xc, yo);
        return;
    }
    if (j->atap) {
        avgplane_small_v16(j, xc, yo);
        return;
    }
#endif
    if (ring) {
        if (j->rows) ring_plane(j, xc, yo, ring, at, maxrow_fill, NULL, maxrow_emit, NULL);
#if RLX_HAVE_AVX2_BUILD
        else if (j->isa == RLX_CPU_ISA_AVX512 && s->s[2] <= 2 && s->s[2] * 15 + s->k[2] <= 32)
            avgplane_s1_v16(j, xc, yo, divs);
#endif
        else ring_plane(j, xc, yo, ring, at, sumrow_h, pad, avgrow_emit, divs);
        return;
    }
    for (int64_t o0 = 0; o0 < s->out[0]; o0++)
        for (int64_t o1 = 0; o1 < s->out[1]; o1++) {
            float *yr = yo + (o0 * s->out[1] + o1) * s->out[2];
            int64_t a = s->out[2], b = s->out[2]; /* no run: every output one by one */
            if (j->chi > j->clo && j->thi[0][o0] > j->tlo[0][o0] && j->thi[1][o1] > j->tlo[1][o1]) {
                fpool_run(j, xc, yr, o0, o1);
                a = j->clo, b = j->chi;
            }
            for (int64_t o2 = 0; o2 < a; o2++) yr[o2] = fpool_point(j, xc, o0, o1, o2);
            for (int64_t o2 = b; o2 < s->out[2]; o2++) yr[o2] = fpool_point(j, xc, o0, o1, o2);
        }
}

/* MaxPool (no Indices) / AveragePool in f32 over the pool. false when out
 * of memory for the tap tables (the caller then runs the reference). */
static bool pool_fast_f32(rlx_cpu_kctx *k, const rlx_conv_geom *g, const rlx_nn_sp3 *s, pool_kind kind) {
    size_t n_tab = (size_t)(s->out[0] + s->out[1] + s->out[2]);
    int64_t stack_tab[768]; /* the usual sizes: no allocation in the run */
    int64_t *tab = 3 * n_tab <= 768 ? stack_tab : malloc((3 * n_tab + 1) * sizeof *tab);
    if (!tab) return false;
    fpool_job j;
    j.x = k->in[0]->data;
    j.y = k->out[0]->data;
    j.s = s;
    j.kind = kind;
    int64_t *p = tab;
    for (int ax = 0; ax < 3; ax++) {
        j.tlo[ax] = p, p += s->out[ax];
        j.thi[ax] = p, p += s->out[ax];
        j.cnt[ax] = p, p += s->out[ax];
        for (int64_t o = 0; o < s->out[ax]; o++) {
            int64_t lo = s->k[ax], hi = 0;
            for (int64_t t = 0; t < s->k[ax]; t++) {
                int64_t q = o * s->s[ax] - s->pb[ax] + t * s->d[ax];
                if (q >= 0 && q < s->in[ax]) {
                    if (t < lo) lo = t;
                    hi = t + 1;
                }
            }
            if (lo > hi) lo = hi;
            j.tlo[ax][o] = lo, j.thi[ax][o] = hi;
            j.cnt[ax][o] = avg_divisor(s, ax, o, g->count_include_pad);
        }
    }
    j.clo = 0;
    while (j.clo < s->out[2] && !(j.tlo[2][j.clo] == 0 && j.thi[2][j.clo] == s->k[2])) j.clo++;
    j.chi = j.clo;
    while (j.chi < s->out[2] && j.tlo[2][j.chi] == 0 && j.thi[2][j.chi] == s->k[2]) j.chi++;
    /* by rows: 1-D and 2-D (axis 0 of extent 1: a 3-D pool of kernel depth
     * 1 over deeper planes took this path and read the first depth slice
     * only), dilation 1, stride 1 or 2 along the last axis (a window's k[1]
     * rows in one ring, at most 64 of them) */
    j.rows = kind == POOL_MAX && s->in[0] == 1 && s->k[0] == 1 && s->d[1] == 1 && s->d[2] == 1 && s->s[2] <= 2 &&
             s->k[1] <= 64;
    /* AveragePool by rows: planes of one or two spatial axes (axis 0 of
     * extent 1), any stride */
    j.avg_rows = kind == POOL_AVG && s->in[0] == 1 && s->k[0] == 1 && s->d[1] == 1 && s->d[2] == 1 && s->k[1] <= 64;
    j.isa = rlx_cpu_isa_get();
    j.whole = kind == POOL_AVG && s->out_sp == 1;
    j.div = 1.0;
    for (int ax = 0; ax < 3 && j.whole; ax++) {
        j.whole = j.thi[ax][0] - j.tlo[ax][0] == s->in[ax]; /* every input element once */
        j.div *= (double)j.cnt[ax][0];
    }
    j.tap = j.atap = NULL;
    j.tapm = NULL;
    j.mcol = NULL;
    j.mrlo = j.mrhi = 0;
#if RLX_HAVE_AVX2_BUILD
    int32_t tap[32 * 32];
    uint16_t tapm[2 * 32];
    mcol_blk blk[MCOL_BLKS];
    if (mcol_setup(&j, blk)) {
        j.mcol = blk;
        /* the output rows whose windows hold 3 input rows: [mrlo, mrhi) */
        int64_t h = s->out[1], rlo = 0, rhi = 0;
        if (s->k[1] == 3 && (s->s[1] == 1 || s->s[1] == 2)) {
            while (rlo < h && !(j.tlo[1][rlo] == 0 && j.thi[1][rlo] == 3)) rlo++;
            rhi = rlo;
            while (rhi < h && j.tlo[1][rhi] == 0 && j.thi[1][rhi] == 3) rhi++;
        }
        j.mrlo = rlo, j.mrhi = rhi;
    } else if (maxplane_small_taps(&j, tap)) j.tap = tap;
    else if (avgplane_small_taps(&j, tap, tapm)) j.atap = tap, j.tapm = tapm;
#endif
    size_t planes = (size_t)g->n * (size_t)g->c_in;
    size_t grain = 1 + 16384 / (s->out_sp * s->ksz + 1);
    rlx_parallel_for(planes, grain, fpool_planes, &j);
    if (tab != stack_tab) free(tab);
    return true;
}

static rlx_status pool_run(rlx_cpu_kctx *k, pool_kind kind) {
    const rlx_tensor *xt = k->in[0];
    rlx_conv_geom g;
    RLX_TRY(rlx_conv_geom_resolve(k->n, RLX_GEOM_POOL, xt->dims, xt->rank, NULL, 0, &g));
    RLX_TRY(rlx_nn_check_out(k, k->out[0], &g));
    rlx_nn_sp3 s;
    rlx_nn_sp3_init(&g, &s);
    rlx_tensor *idx_t = kind == POOL_MAX ? rlx_nn_out_t(k, 1) : NULL;
    if (idx_t && idx_t->dtype != RLX_DTYPE_I64)
        return rlx_cpu_fail(k, RLX_ERR_INTERNAL, "Indices output has dtype %s", rlx_dtype_name(idx_t->dtype));
    int64_t *idx = idx_t ? idx_t->data : NULL;
    bool col_major = kind == POOL_MAX && rlx_param_int(k->n, RLX_A_storage_order) != 0;
    /* Indices: flat index into x; storage_order=1 orders the spatial part
     * column-major (first spatial axis fastest) */
    int64_t cs[3] = { 1, s.in[0], s.in[0] * s.in[1] };
    int64_t rs[3] = { s.in[1] * s.in[2], s.in[2], 1 };
    const int64_t *st = col_major ? cs : rs;
    double p = kind == POOL_LP ? (double)rlx_param_int(k->n, RLX_A_p) : 1.0;
    double lowest = dtype_lowest(xt->dtype);
    /* (the taps of an axis inside the input are consecutive: clipping per
     * axis takes exactly the reference's taps) */
    if (!k->reference && xt->dtype == RLX_DTYPE_F32 && !idx && kind != POOL_LP && pool_fast_f32(k, &g, &s, kind))
        return RLX_OK;

    rlx_nn_buf x, y;
    RLX_TRY(rlx_nn_load(k, xt, &x));
    rlx_status status = rlx_nn_out(k, k->out[0], &y);
    if (status) {
        rlx_nn_buf_free(&x);
        return status;
    }
    size_t planes = (size_t)g.n * (size_t)g.c_in;
    for (size_t pl = 0; pl < planes; pl++) {
        const double *xc = x.p + pl * s.in_sp;
        double *yo = y.p + pl * s.out_sp;
        int64_t *io = idx ? idx + pl * s.out_sp : NULL;
        size_t oi = 0;
        for (int64_t o0 = 0; o0 < s.out[0]; o0++)
            for (int64_t o1 = 0; o1 < s.out[1]; o1++)
                for (int64_t o2 = 0; o2 < s.out[2]; o2++, oi++) {
                    double acc = 0.0, best = lowest;
                    int64_t best_at = -1;
                    RLX_NN_TAPS(s, o0, o1, o2, s.in, i0, i1, i2, {
                        double v = xc[(i0 * s.in[1] + i1) * s.in[2] + i2];
                        if (kind == POOL_MAX) {
                            /* the first NaN wins and stays (NaN propagates) */
                            if (best_at < 0 || v > best || (v != v && best == best)) {
                                best = v;
                                best_at = i0 * st[0] + i1 * st[1] + i2 * st[2];
                            }
                        } else if (kind == POOL_AVG) {
                            acc += v;
                        } else {
                            acc += p == 1.0 ? fabs(v) : p == 2.0 ? v * v : pow(fabs(v), p);
                        }
                    })
                    if (kind == POOL_MAX) {
                        yo[oi] = best;
                        if (io) io[oi] = best_at < 0 ? -1 : (int64_t)(pl * s.in_sp) + best_at;
                    } else if (kind == POOL_AVG) {
                        int64_t cnt = 1;
                        int64_t o[3] = { o0, o1, o2 };
                        for (int ax = 0; ax < 3; ax++) cnt *= avg_divisor(&s, ax, o[ax], g.count_include_pad);
                        yo[oi] = acc / (double)cnt;
                    } else {
                        yo[oi] = p == 1.0 ? acc : p == 2.0 ? sqrt(acc) : pow(acc, 1.0 / p);
                    }
                }
    }
    rlx_nn_store(k->out[0], &y);
    rlx_nn_buf_free(&x);
    return RLX_OK;
}

rlx_status rlx_cpu_nn_maxpool(rlx_cpu_kctx *k) { return pool_run(k, POOL_MAX); }
rlx_status rlx_cpu_nn_avgpool(rlx_cpu_kctx *k) { return pool_run(k, POOL_AVG); }
rlx_status rlx_cpu_nn_lppool(rlx_cpu_kctx *k) { return pool_run(k, POOL_LP); }

/* Global pools: one value per (n, c) over all spatial positions. */
typedef struct global_job {
    pool_kind kind;
    const rlx_tensor *xt;
    const double *xd; /* the double copy (dtypes other than f32) */
    double *y;
    float *yf; /* the f32 output, written in place (the fast path), or NULL: y */
    size_t sp;
    double p;
} global_job;

static void global_planes(void *ctx, size_t p0, size_t p1) {
    const global_job *j = ctx;
    pool_kind kind = j->kind;
    size_t sp = j->sp;
    double p = j->p;
    bool f32 = j->xt->dtype == RLX_DTYPE_F32;
    for (size_t pl = p0; pl < p1; pl++) {
        const float *xf = f32 ? (const float *)j->xt->data + pl * sp : NULL;
        const double *xc = f32 ? NULL : j->xd + pl * sp;
        /* over an empty plane GlobalMaxPool gives ReduceMax's -inf (the type's
         * lowest value for integers) */
        double acc = kind != POOL_MAX ? 0.0
                     : sp       ? (f32 ? xf[0] : xc[0])
                     : rlx_dtype_is_float(j->xt->dtype) ? -INFINITY : dtype_lowest(j->xt->dtype);
        for (size_t i = 0; i < sp; i++) {
            double v = f32 ? xf[i] : xc[i];
            if (kind == POOL_MAX) {
                if (v != v) { /* NaN propagates: the first NaN (ReduceMax's answer) */
                    acc = v;
                    break;
                }
                acc = v > acc ? v : acc;
            }
            else if (kind == POOL_AVG) acc += v;
            else acc += p == 1.0 ? fabs(v) : p == 2.0 ? v * v : pow(fabs(v), p);
        }
        if (kind == POOL_AVG) acc = sp ? acc / (double)sp : 0.0;
        else if (kind == POOL_LP) acc = p == 1.0 ? acc : p == 2.0 ? sqrt(acc) : pow(acc, 1.0 / p);
        if (j->yf) j->yf[pl] = (float)acc; /* as rlx_nn_store rounds */
        else j->y[pl] = acc;
    }
}

static rlx_status global_run(rlx_cpu_kctx *k, pool_kind kind) {
    const rlx_tensor *xt = k->in[0];
    if (xt->rank < 3) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "input has rank %d, expected >= 3", xt->rank);
    size_t planes = (size_t)xt->dims[0] * (size_t)xt->dims[1], sp = 1;
    for (int i = 2; i < xt->rank; i++) sp *= (size_t)xt->dims[i];
    double p = kind == POOL_LP ? (double)rlx_param_int(k->n, RLX_A_p) : 1.0;
    /* f32 is read in place (summed in double); other dtypes through a copy */
    bool f32 = xt->dtype == RLX_DTYPE_F32;
    if (!k->reference && f32 && k->out[0]->dtype == RLX_DTYPE_F32) {
        /* the fast path: the reductions' vector rows (ReduceMean, ReduceMax,
         * ReduceL1 / ReduceL2 over the plane), else the same per-plane loop
         * over the pool, writing the f32 output in place (no result buffer) */
        int rk = kind == POOL_AVG ? RLX_ROW_MEAN : kind == POOL_MAX ? RLX_ROW_MAX
                 : p == 1.0       ? RLX_ROW_L1 : p == 2.0 ? RLX_ROW_L2 : -1;
        if (rk >= 0 && rlx_cpu_reduce_rows_f32((rlx_row_red)rk, xt->data, k->out[0]->data, planes, sp)) return RLX_OK;
        global_job j = { kind, xt, NULL, NULL, k->out[0]->data, sp, p };
        rlx_parallel_for(planes, 1 + 16384 / (sp + 1), global_planes, &j);
        return RLX_OK;
    }
    rlx_nn_buf x = { 0 }, y;
    if (!f32) RLX_TRY(rlx_nn_load(k, xt, &x));
    rlx_status status = rlx_nn_out(k, k->out[0], &y);
    if (status) {
        rlx_nn_buf_free(&x);
        return status;
    }
    global_job j = { kind, xt, x.p, y.p, NULL, sp, p };
    global_planes(&j, 0, planes);
    rlx_nn_store(k->out[0], &y);
    rlx_nn_buf_free(&x);
    return RLX_OK;
}

rlx_status rlx_cpu_nn_global_avgpool(rlx_cpu_kctx *k) { return global_run(k, POOL_AVG); }
rlx_status rlx_cpu_nn_global_maxpool(rlx_cpu_kctx *k) { return global_run(k, POOL_MAX); }
rlx_status rlx_cpu_nn_global_lppool(rlx_cpu_kctx *k) { return global_run(k, POOL_LP); }
