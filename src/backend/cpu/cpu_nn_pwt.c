/* The channels-in-lanes path of Conv (f32, AVX-512, policy "pool"):
 * convolutions with few output positions (ResNet-50's 7x7 stage and its
 * stride-2 convolutions to 14x14 and 7x7, MobileNetV2's last 1x1s; the
 * rule: rlx_nn_pwt_wanted).
 *
 * Why: the GEMM path (and the pointwise and implicit-GEMM ones) put
 * output positions in the vector lanes, 32 per tile: a 7x7 map (49
 * positions) computes 64 columns, so 23% of the multiply-adds are padding
 * (measured: ResNet-50's 7x7 1x1s at 37 GMAC/s where 28x28 ones reach 52,
 * BENCHMARKS.md "channels in lanes"). Here the output channels fill the
 * lanes (3 vectors, 48 channels, per weight panel) and the positions are
 * the broadcast operand, 7 per tile: 49, 196, 784 and 3136 are multiples
 * of 7, and c_out a multiple of 16.
 *
 * Layout: the weights W [c_out, K] (per group, K = c_in / group x taps in
 * im2col's order) are packed at compile time transposed, panels of 48
 * output channels (the last ones 32 or 16: pwt_panel), each panel's K
 * steps contiguous (rlx_nn_pwt_pack); per
 * run the positions are gathered into tiles of 7 positions x K steps (the
 * broadcast operand) from x itself (1x1, stride 1, no padding) or from
 * its im2col, or read in place (an offset per k step) from zero-padded
 * planes (stride 1, several taps) or from zero-padded planes split by
 * stride phase (strided, several taps: an output row's positions are
 * contiguous in each phase plane). A tile of 7 positions x 48 channels sums each 256-step k
 * panel in registers, adds the panel's sum to a 7 x 48 block on the
 * stack, and stores it transposed into the NCHW output, with the bias and
 * a Relu or Clip applied on the way (pwt_store); other activations and a
 * residual by the GEMM path's epilogue (rlx_nn_conv_epilogue_block) over
 * the panel's finished output rows. A group of up to T_GROUP tiles runs
 * each k panel (T_KC steps of the weight panel, 48 KiB at most) before
 * the next, the weights read next prefetched meanwhile (pwt_item); a task
 * runs its (weight panel, group) pairs panel by panel or, for 1x1s with
 * small weights, group by group (pwt_by_group). Read in place, an output row's last tile is as
 * wide as what is left of the row (13: 7 + 6; kernels for 1 to 7
 * positions), so no position is computed past it, and the rows whose
 * kernel rows partly read padding (a 3x3 pad 1's first and last) leave
 * those taps' steps out where every weight is finite (pwt_lists).
 *
 * The arithmetic is the sgemm's (cpu_sgemm.h): each element's products
 * in k order from 0 as one chain of fused multiply-adds per 256-step
 * panel (fma(a, b, c) = fma(b, a, c): which operand is broadcast does not
 * matter), the first panel's sum stored, later ones added; then the same
 * epilogue. A step left out would have added 0 x w = +0 (w finite) to a
 * sum that is never -0 (it starts at +0, and x + +0 is x, -x + x is +0),
 * which changes nothing. So the same bits as im2col + GEMM at every
 * thread count (tests/test_cpu_conv_fast.c, test_conv_channels_in_lanes,
 * test_conv_pwt_small_planes, test_conv_pwt_nonfinite). */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_nn.h"
#include "backend/cpu/cpu_sgemm.h"
#include "backend/cpu/cpu_vmath.h"
#include "base/mem.h"
#include "base/parallel.h"
#include "base/scratch.h"

#if RLX_HAVE_AVX2_BUILD
#include <immintrin.h>
#endif

#define T_MR 7                   /* positions per tile */
#define T_W 48                   /* output channels per weight panel */
#define T_KC RLX_CPU_SGEMM_KC     /* k steps per sum (the sgemm's cut) */
#define T_GROUP 8                /* tiles whose k panels run together (pwt_item) */

static int g_pwt_force; /* rlx_nn_pwt_force: 0 by shape, 1 never, 2 wherever it applies */
static atomic_size_t g_pwt_runs;

static bool g_pwt_in_place = true; /* rlx_nn_pwt_in_place */

void rlx_nn_pwt_force(int path) { g_pwt_force = path; }
int rlx_nn_pwt_forced(void) { return g_pwt_force; }

void rlx_nn_pwt_in_place(bool on) { g_pwt_in_place = on; }

size_t rlx_nn_pwt_runs(void) { return atomic_load(&g_pwt_runs); }

static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

/* Columns the 8 x 32 GEMM tile computes for sp positions: whole tiles of
 * 32, an edge of at most 16 on its 16-column half. */
static size_t gemm_cols(size_t sp) {
    size_t rem = sp % 32;
    return sp - rem + (rem == 0 ? 0 : rem <= 16 ? 16 : 32);
}

bool rlx_nn_pwt_wanted(const rlx_nn_sp3 *s, size_t cog, size_t kt) {
    size_t sp = s->out_sp;
    if (g_pwt_force == 1 || !sp || !cog || !kt || cog % 16) return false;
    if (g_pwt_force == 2) return true;
    if (kt <= 32) return false;
    bool strided = s->s[0] > 1 || s->s[1] > 1 || s->s[2] > 1;
    bool planar = s->in[0] == 1 && s->k[0] == 1, in_place = !strided && planar;
    /* read in place with no position past an output row computed (a
     * row's last tile as wide as what is left of it): 1-D / 2-D kernels
     * of several taps at stride 1 with K >= 384 or at most 1024 output
     * positions, any c_out a multiple of 16 (bench/conv_node, caches hot,
     * 1 thread, 2026-12-05; BENCHMARKS.md "small planes"), us implicit
     * GEMM -> here: SqueezeNet's 3x3 48->192 at 13x13 311 -> 264, 64->256
     * 537 -> 459 (kt 576: here before, 487 with 13-wide rows in tiles of
     * 7 + 7), 32->128 at 27x27 547 -> 517; 48->192 at 14x14 360 -> 304,
     * 16->64 at 13x13 44 -> 36, 128->32 at 14x14 167 -> 145, at 7x7 55 ->
     * 47, 5x5 16->32 at 28x28 204 -> 190, 16->128 at 28x28 315 -> 301;
     * 48->96 at 56x56 2454 -> 2413, but 16->64 (K 144) at 56x56 576 ->
     * 606 and at 55x55 571 -> 585. And 1x1s at stride 1 with K >= 256
     * on at most 1024 positions with c_out <= 64: SqueezeNet's 384->48
     * at 13x13 65.6 -> 58.9, 384->64 84.4 -> 79.8, 256->48 43.7 -> 41.0,
     * 256->32 at 27x27 125 -> 118, Inception's 480->16 at 14x14 39.5 ->
     * 29.2 (the pointwise path or the GEMM before; 128->32 at 27x27 54 ->
     * 65, 48->192 at 13x13 34 -> 45: K too short; 256->128 at 28x28 475
     * -> 494; ResNet-50's 256->1024 at 14x14 a tie hot, 1000 -> 1120 with
     * caches evicted) */
    if (in_place && s->ksz > 1 && (kt >= 384 || sp <= 1024)) return true;
    if (!strided && s->ksz == 1 && kt >= 256 && sp <= 1024 && cog <= 64) return true;
    if (cog < T_W) return false;
    /* by the padding each layout computes: positions in tiles of 7 here,
     * output channels in panels of 48 with a narrower last one (none when
     * cog is a multiple of 16); taken where the GEMM (and the implicit
     * GEMM, whose 7- and 14-wide maps fill tiles alike) computes at least
     * 15% more (7x7 maps: 64 columns for 49), as the gathering of the
     * positions and the transposed stores cost a few % (bench/pw_conv,
     * BENCHMARKS.md "channels in lanes": 14x14 maps, 208 columns for 196,
     * were 2-6% slower here; 1x1s with K <= 128 at 28x28 and 56x56 10-20%
     * slower: the transposed stores); strided convolutions with K >= 256
     * to at most 256 positions (ResNet-50's 1x1 and 3x3 stride 2 to 14x14:
     * 5-9% faster here than im2col + GEMM); and 1-D / 2-D kernels of
     * several taps at stride 1 with K >= 512, read in place (ResNet-50's
     * 3x3s: 3% faster than the implicit GEMM at 56x56, 6% at 28x28, 17% at
     * 14x14, 28% at 7x7); and 1x1s at stride 1 with K >= 512 (x read in
     * place: 1024->256 and 1024->512 at 14x14 5-15% faster than the GEMM,
     * hot and with caches evicted, 512->128 and 512->256 at 28x28 1-8%) */
    double here = (double)(ceil_div(sp, T_MR) * T_MR);
    /* and strided 1-D / 2-D kernels of several taps with K >= 512, read in
     * place from phase planes (bench/conv_node, caches evicted, 1 thread,
     * 2026-12-04; BENCHMARKS.md "rn50b"), us before -> here: ResNet-50's
     * 3x3 stride 2 128->128 to 28x28 2640 (im2col + GEMM) -> 2374, 256->256
     * to 14x14 2512 -> 2262 and 512->512 to 7x7 2516 -> 2351 (gathered from
     * im2col before) */
    return (double)gemm_cols(sp) >= 1.15 * here || (strided && sp <= 256 && kt >= 256) ||
           (in_place && s->ksz > 1 && kt >= 512) || (!strided && s->ksz == 1 && kt >= 512) ||
           (strided && planar && s->ksz > 1 && kt >= 512);
}

/* The weight panels of cog output channels (a multiple of 16): 48 wide,
 * the last ones 32 wide where 48 does not divide cog (a remainder of 16
 * as two panels of 32: 64 = 32 + 32, 256 = 4 x 48 + 2 x 32), or one of 16
 * (cog 16). Panel t's first channel (*c0) and width (*w); the count. */
static size_t pwt_panel(size_t cog, size_t t, size_t *c0, size_t *w) {
    size_t full = cog / T_W, rem = cog % T_W;
    if (rem == 16 && full) full--, rem += T_W; /* 16 + 48 = 64: two of 32 */
    size_t n = full + (rem + 31) / 32;
    if (c0) {
        *c0 = t < full ? t * T_W : full * T_W + (t - full) * 32;
        *w = t < full ? T_W : cog - *c0 < 32 ? cog - *c0 : 32;
    }
    return n;
}

rlx_status rlx_nn_pwt_pack(size_t groups, size_t cog, size_t kt, const float *w_, float **out) {
    *out = NULL;
    size_t per_group, total;
    if (cog % 16 || !rlx_mul_ok(cog, kt, &per_group) || !rlx_mul_ok(per_group, groups, &total) ||
        total > SIZE_MAX / 8)
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "transposed conv weights of %zu x %zu x %zu floats too large", groups,
                        cog, kt);
    float *d = aligned_alloc(64, (total * sizeof(float) + 64) / 64 * 64);
    if (!d) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (transposed conv weights of %zu floats)", total);
    /* group g, panel t (first channel c0, width w), step p:
     * d[g * cog * kt + c0 * kt + p * w + c] = W[g][c0 + c][p] */
    size_t panels = pwt_panel(cog, 0, NULL, NULL);
    for (size_t g = 0; g < groups; g++)
        for (size_t t = 0; t < panels; t++) {
            size_t c0, w;
            pwt_panel(cog, t, &c0, &w);
            float *dp = d + (g * cog + c0) * kt;
            for (size_t p = 0; p < kt; p++)
                for (size_t c = 0; c < w; c++) dp[p * w + c] = w_[(g * cog + c0 + c) * kt + p];
        }
    *out = d;
    return RLX_OK;
}

bool rlx_nn_conv_pwt_applies(const rlx_nn_conv_io *io, const rlx_cpu_sgemm_pack *pk) {
    if (g_pwt_force == 1 || !pk || !pk->wt || rlx_cpu_gemm_policy_get() != RLX_CPU_GEMM_POOL ||
        rlx_cpu_sgemm_kernel_get() != RLX_CPU_SGEMM_AVX512)
        return false;
    return pk->wt_groups == io->groups && pk->wt_lanes == io->cog && pk->wt_k == io->kt && io->cog % 16 == 0;
}

#if RLX_HAVE_AVX2_BUILD
/* One tile: M <= 7 positions x NV vectors of channels over n steps (a
 * panel of 16 NV channels); step p's positions at ap + p * T_MR and
 * weights at bp + p * 16 NV (pwt_kern7_<NV>: gathered tiles of 7), or
 * read in place from zero-padded planes, M the positions left in the
 * output row (no position past the row is computed), at ap + xo[p] and
 * bp + p * 16 NV (pwt_kerno<M>_<NV>: every step of a k panel) or bp +
 * ks[p] * 16 NV (pwt_kernl<M>_<NV>: a list of steps, those of a k panel
 * whose taps read inside the input, pwt_lists); the sums of rows i < M
 * stored into (first) or added to t (rows of T_W). */
#define PWT_KERN(M, NV, SFX, AEXPR, BEXPR)                                                                        \
    RLX_AVX512 static void pwt_kern##SFX##M##_##NV(size_t n, const float *ap, const int32_t *xo,                 \
                                                   const int32_t *ks, const float *bp, float *t, bool add,      \
                                                   const char *pf, size_t pfs) {                                \
        __m512 c00 = _mm512_setzero_ps(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00, c20 = c00,      \
               c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00, c40 = c00, c41 = c00, c42 = c00,         \
               c50 = c00, c51 = c00, c52 = c00, c60 = c00, c61 = c00, c62 = c00;                                 \
        PWT_UNUSED                                                                                                \
        (void)xo, (void)ks;                                                                                       \
        _Pragma("GCC unroll 4") for (size_t p = 0; p < n; p++) {                                                    \
            const float *a_ = AEXPR, *b_ = BEXPR;                                                                 \
            if (pf) __builtin_prefetch(pf + p * pfs, 0, 2);                                                       \
            __m512 b0 = _mm512_loadu_ps(b_), b1 = NV > 1 ? _mm512_loadu_ps(b_ + 16) : b0,                         \
                   b2 = NV > 2 ? _mm512_loadu_ps(b_ + 32) : b0;                                                   \
            PWT_ROW(M, NV, 0) PWT_ROW(M, NV, 1) PWT_ROW(M, NV, 2) PWT_ROW(M, NV, 3) PWT_ROW(M, NV, 4)            \
            PWT_ROW(M, NV, 5) PWT_ROW(M, NV, 6)                                                                  \
        }                                                                                                         \
        PWT_OUT(M, NV, 0) PWT_OUT(M, NV, 1) PWT_OUT(M, NV, 2) PWT_OUT(M, NV, 3) PWT_OUT(M, NV, 4)                \
        PWT_OUT(M, NV, 5) PWT_OUT(M, NV, 6)                                                                      \
    }
#define PWT_UNUSED (void)c00, (void)c01, (void)c02, (void)c10, (void)c11, (void)c12, (void)c20, (void)c21,     \
                   (void)c22, (void)c30, (void)c31, (void)c32, (void)c40, (void)c41, (void)c42, (void)c50,     \
                   (void)c51, (void)c52, (void)c60, (void)c61, (void)c62;
#define PWT_ROW(M, NV, i)                                                                                         \
    if ((M) > (i)) {                                                                                              \
        __m512 a = _mm512_set1_ps(a_[i]);                                                                         \
        c##i##0 = _mm512_fmadd_ps(a, b0, c##i##0);                                                               \
        if (NV > 1) c##i##1 = _mm512_fmadd_ps(a, b1, c##i##1);                                                   \
        if (NV > 2) c##i##2 = _mm512_fmadd_ps(a, b2, c##i##2);                                                   \
    }
#define PWT_ST(i, j)                                                                                              \
    _mm512_storeu_ps(t + (i) * T_W + (j) * 16,                                                                    \
                     add ? _mm512_add_ps(c##i##j, _mm512_loadu_ps(t + (i) * T_W + (j) * 16)) : c##i##j);
#define PWT_OUT(M, NV, i)                                                                                         \
    if ((M) > (i)) {                                                                                              \
        PWT_ST(i, 0)                                                                                              \
        if (NV > 1) PWT_ST(i, 1)                                                                                  \
        if (NV > 2) PWT_ST(i, 2)                                                                                  \
    }
#define PWT_KERNS_O(M)                                                                                            \
    PWT_KERN(M, 1, o, ap + xo[p], bp + p * 16)                                                                   \
    PWT_KERN(M, 2, o, ap + xo[p], bp + p * 32)                                                                   \
    PWT_KERN(M, 3, o, ap + xo[p], bp + p * 48)                                                                   \
    PWT_KERN(M, 1, l, ap + xo[p], bp + (size_t)ks[p] * 16)                                                       \
    PWT_KERN(M, 2, l, ap + xo[p], bp + (size_t)ks[p] * 32)                                                       \
    PWT_KERN(M, 3, l, ap + xo[p], bp + (size_t)ks[p] * 48)
PWT_KERN(7, 1, , ap + p * T_MR, bp + p * 16)
PWT_KERN(7, 2, , ap + p * T_MR, bp + p * 32)
PWT_KERN(7, 3, , ap + p * T_MR, bp + p * 48)
PWT_KERNS_O(1)
PWT_KERNS_O(2)
PWT_KERNS_O(3)
PWT_KERNS_O(4)
PWT_KERNS_O(5)
PWT_KERNS_O(6)
PWT_KERNS_O(7)
#undef PWT_KERNS_O
#undef PWT_KERN
#undef PWT_UNUSED
#undef PWT_ROW
#undef PWT_ST
#undef PWT_OUT

/* The epilogue pwt_store applies (fused: no residual; act none, Relu or
 * Clip), per output channel in the lanes; else the GEMM path's epilogue
 * runs over the finished rows (rlx_nn_conv_epilogue_block). */
typedef struct pwt_epi {
    bool fused;
    const float *bias; /* the group's bias (NULL: none) */
    bool always;       /* add the bias even where it is 0 (under an activation) */
    rlx_act_kind act;
    float lo, hi;      /* Clip's bounds */
} pwt_epi;

/* The first m <= 7 rows of a tile's block t (rows of T_W, nc channels, a
 * multiple of 16, the first c0 of the group) stored transposed: channel
 * c's m positions at y + c * sp. Where e->fused, first act(v + b) per
 * row, with the rules of the GEMM path's epilogue (bias_act_row: the
 * bias added where non-zero, or always under an activation; Relu and
 * Clip by comparisons: max(0, v), min(hi, max(lo, v)) return v where it
 * is NaN): the same bits. Per 16 channels an 8 x 16 transpose in
 * registers (rows 0-3 and 4-7 of 4 channels per 128-bit lane; rows m..
 * read as zeros), then each channel's two halves side by side and its
 * first m floats stored under a mask (AVX-512 masked stores; the AVX
 * masked stores of 128 bits were slow here: 160->960 at 7x7 159.6 ->
 * 154.5 us hot, bench/conv_node). */
RLX_AVX512 static void pwt_store(const float *t, size_t nc, float *y, size_t sp, size_t m, const pwt_epi *e,
                                 size_t c0) {
    const __mmask16 mk = (__mmask16)((1u << m) - 1u);
    for (size_t j = 0; j < nc; j += 16) {
        __m512 r[8];
        for (size_t i = 0; i < 8; i++) r[i] = i < m ? _mm512_loadu_ps(t + i * T_W + j) : _mm512_setzero_ps();
        if (e->fused) {
            __m512 b = e->bias ? _mm512_loadu_ps(e->bias + c0 + j) : _mm512_setzero_ps();
            __mmask16 add = e->always ? (__mmask16)0xFFFF : _mm512_cmp_ps_mask(b, _mm512_setzero_ps(), _CMP_NEQ_UQ);
            __m512 lo = _mm512_set1_ps(e->act == RLX_ACT_RELU ? 0.0f : e->lo), hi = _mm512_set1_ps(e->hi);
            for (size_t i = 0; i < m; i++) {
                __m512 v = _mm512_mask_add_ps(r[i], add, r[i], b);
                if (e->act != RLX_ACT_NONE) v = _mm512_max_ps(lo, v);
                if (e->act == RLX_ACT_CLIP) v = _mm512_min_ps(hi, v);
                r[i] = v;
            }
        }
        __m512 t0 = _mm512_unpacklo_ps(r[0], r[1]), t1 = _mm512_unpackhi_ps(r[0], r[1]),
               t2 = _mm512_unpacklo_ps(r[2], r[3]), t3 = _mm512_unpackhi_ps(r[2], r[3]),
               t4 = _mm512_unpacklo_ps(r[4], r[5]), t5 = _mm512_unpackhi_ps(r[4], r[5]),
               t6 = _mm512_unpacklo_ps(r[6], r[7]), t7 = _mm512_unpackhi_ps(r[6], r[7]);
        /* u[q], v[q]: lane l holds rows 0-3, 4-7 of channel j + 4 l + q */
        __m512 u[4] = { _mm512_shuffle_ps(t0, t2, 0x44), _mm512_shuffle_ps(t0, t2, 0xEE),
                        _mm512_shuffle_ps(t1, t3, 0x44), _mm512_shuffle_ps(t1, t3, 0xEE) };
        __m512 v[4] = { _mm512_shuffle_ps(t4, t6, 0x44), _mm512_shuffle_ps(t4, t6, 0xEE),
                        _mm512_shuffle_ps(t5, t7, 0x44), _mm512_shuffle_ps(t5, t7, 0xEE) };
        /* channel j + 4 l + q: lane l of u[q] and of v[q] side by side, its
         * first m floats stored */
#define PWT_LANE(l)                                                                                               \
    {                                                                                                             \
        const __m512i ix = _mm512_setr_epi32(4 * (l), 4 * (l) + 1, 4 * (l) + 2, 4 * (l) + 3, 16 + 4 * (l),      \
                                             17 + 4 * (l), 18 + 4 * (l), 19 + 4 * (l), 0, 0, 0, 0, 0, 0, 0, 0);   \
        for (size_t q = 0; q < 4; q++)                                                                            \
            _mm512_mask_storeu_ps(y + (j + 4 * (l) + q) * sp, mk, _mm512_permutex2var_ps(u[q], ix, v[q]));        \
    }
        PWT_LANE(0) PWT_LANE(1) PWT_LANE(2) PWT_LANE(3)
#undef PWT_LANE
    }
}

typedef void pwt_kern_fn(size_t n, const float *ap, const int32_t *xo, const int32_t *ks, const float *bp, float *t,
                         bool add, const char *pf, size_t pfs);
/* [0][0][.]: gathered tiles of 7; [l][m][.]: read in place, m positions,
 * every step of the panel (l 0: pwt_kerno) or a list of them (l 1:
 * pwt_kernl) */
#define PWT_KERNS_M(X, M) { pwt_kern##X##M##_1, pwt_kern##X##M##_2, pwt_kern##X##M##_3 }
static pwt_kern_fn *const g_pwt_kerns[2][8][3] = {
    { PWT_KERNS_M(, 7), PWT_KERNS_M(o, 1), PWT_KERNS_M(o, 2), PWT_KERNS_M(o, 3), PWT_KERNS_M(o, 4), PWT_KERNS_M(o, 5),
      PWT_KERNS_M(o, 6), PWT_KERNS_M(o, 7) },
    { PWT_KERNS_M(, 7), PWT_KERNS_M(l, 1), PWT_KERNS_M(l, 2), PWT_KERNS_M(l, 3), PWT_KERNS_M(l, 4), PWT_KERNS_M(l, 5),
      PWT_KERNS_M(l, 6), PWT_KERNS_M(l, 7) }
};
#undef PWT_KERNS_M
#endif

typedef struct pwt_job {
    rlx_nn_conv_io io;
    const float *wt;  /* the transposed weights (rlx_nn_pwt_pack) */
    float *xt;        /* the gathered positions: per (image, group) tiles x kt x T_MR */
    float *col;       /* !io.direct: the column matrices, [ng][kt][sp] */
    /* in place (stride 1, 1-D / 2-D, not io.direct): the zero-padded
     * input planes, [ng][cig][hp][wp] (or x itself: io.direct); the steps
     * of each kind of output row (pwt_lists): kind d's steps of k panel q
     * are lst[d][q] .. lst[d][q + 1] - 1 of xo[d] (offsets in the planes)
     * and ks[d] (step numbers); row_kind[oy]: output row oy's kind */
    bool in_place;
    float *planes;
    const int32_t *xo0; /* kind 0's offsets: every step's */
    int32_t *xo, *ks;   /* kinds 1..: [kind - 1][kt] */
    size_t *lst, n_kp;
    uint8_t *row_kind;
    size_t hp, wp, plane, tpr, ow; /* tpr: tiles per output row of ow positions */
    /* strided (2-D, several taps): each channel's plane is sh x sw phase
     * planes of hp x wp (padded input row R, column C at phase (R % sh,
     * C % sw), position (R / sh, C / sw)); 1 x 1 at stride 1 */
    size_t sh, sw;
    size_t tiles;     /* tiles of positions per (image, group) */
    size_t panels;    /* weight panels per group */
    size_t n_pb, n_tb; /* blocks of panels, of tiles per (image, group) */
    bool pf;           /* prefetch the weights read next (pwt_item) */
} pwt_job;

/* Items (image and group, input channel): the column matrices of
 * convolutions that do not read x in place, [ng][kt][sp]. */
static void pwt_im2col(void *ctx, size_t i0, size_t i1) {
    const pwt_job *j = ctx;
    const rlx_nn_conv_io *io = &j->io;
    for (size_t i = i0; i < i1; i++) {
        size_t ng = i / io->cig, c = i % io->cig, n = ng / io->groups, gi = ng % io->groups;
        const float *xg = io->x + (n * io->c_in + gi * io->cig) * io->s->in_sp;
        rlx_nn_im2col_block(xg, io->s, c, c + 1, 0, io->sp, j->col + (ng * io->kt + c * io->s->ksz) * io->sp);
    }
}

/* Items (image and group, input channel): the zero-padded planes. */
static void pwt_pad(void *ctx, size_t i0, size_t i1) {
    const pwt_job *j = ctx;
    const rlx_nn_conv_io *io = &j->io;
    const rlx_nn_sp3 *s = io->s;
    for (size_t i = i0; i < i1; i++) {
        size_t ng = i / io->cig, c = i % io->cig, n = ng / io->groups, gi = ng % io->groups;
        const float *xc = io->x + (n * io->c_in + gi * io->cig + c) * s->in_sp;
        float *d = j->planes + i * j->plane;
        memset(d, 0, j->plane * sizeof(float));
        for (int64_t r = 0; r < s->in[1]; r++)
            memcpy(d + ((size_t)(r + s->pb[1])) * j->wp + (size_t)s->pb[2], xc + (size_t)r * (size_t)s->in[2],
                   (size_t)s->in[2] * sizeof(float));
    }
}

/* Items (image and group, input channel): the zero-padded planes split by
 * stride phase (strided convolutions read in place). */
static void pwt_pad_phases(void *ctx, size_t i0, size_t i1) {
    const pwt_job *j = ctx;
    const rlx_nn_conv_io *io = &j->io;
    const rlx_nn_sp3 *s = io->s;
    size_t sh = j->sh, sw = j->sw, ph = j->hp * j->wp;
    size_t w_in = (size_t)s->in[2], pl = (size_t)s->pb[2];
    for (size_t i = i0; i < i1; i++) {
        size_t ng = i / io->cig, c = i % io->cig, n = ng / io->groups, gi = ng % io->groups;
        const float *xc = io->x + (n * io->c_in + gi * io->cig + c) * s->in_sp;
        float *d = j->planes + i * j->plane;
        memset(d, 0, j->plane * sizeof(float));
        for (int64_t r = 0; r < s->in[1]; r++) {
            size_t pr = (size_t)(r + s->pb[1]); /* the padded row */
            if (pr >= sh * j->hp) break;
            const float *src = xc + (size_t)r * w_in;
            float *drow = d + (pr % sh) * sw * ph + (pr / sh) * j->wp;
            /* column phase f: input columns q0, q0 + sw, ... (padded q + pl) */
            size_t q_end = sw * j->wp - pl < w_in ? sw * j->wp - pl : w_in;
            for (size_t f = 0; f < sw; f++) {
                size_t q0 = (f + sw - pl % sw) % sw;
                float *dd = drow + f * ph + (q0 + pl) / sw;
                for (size_t q = q0, t = 0; q < q_end; q += sw, t++) dd[t] = src[q];
            }
        }
    }
}

/* Tiles `it` (image and group it / tiles, positions from (it % tiles) *
 * T_MR) of the positions into xt: step p's 7 values at [p * T_MR],
 * positions past the map zero; from x itself (io.direct) or the column
 * matrix, both [kt][sp]. */
static void pwt_gather(void *ctx, size_t i0, size_t i1) {
    const pwt_job *j = ctx;
    const rlx_nn_conv_io *io = &j->io;
    size_t kt = io->kt, sp = io->sp;
    for (size_t it = i0; it < i1; it++) {
        size_t ng = it / j->tiles, pos = it % j->tiles * T_MR, n = ng / io->groups, gi = ng % io->groups;
        const float *src = io->direct ? io->x + (n * io->c_in + gi * io->cig) * sp : j->col + ng * kt * sp;
        src += pos;
        float *dst = j->xt + it * kt * T_MR;
        size_t rows = sp - pos < T_MR ? sp - pos : T_MR;
        if (rows == T_MR) {
            for (size_t p = 0; p < kt; p++) memcpy(dst + p * T_MR, src + p * sp, T_MR * sizeof(float));
            continue;
        }
        for (size_t p = 0; p < kt; p++)
            for (size_t r = 0; r < T_MR; r++) dst[p * T_MR + r] = r < rows ? src[p * sp + r] : 0.0f;
    }
}

/* pwt_by_group: 0 by shape, 1 panel by panel, 2 group by group (rlx_nn_pwt_order) */
static int g_pwt_order;

void rlx_nn_pwt_order(int order) { g_pwt_order = order; }

#if RLX_HAVE_AVX2_BUILD
/* Whether pwt_item runs its block group by group: for each group of tiles
 * every weight panel (the group's inputs read once, the block's weights
 * once per group) rather than panel by panel (the block's inputs read
 * once per panel). Only where the epilogue is fused into pwt_store (the
 * GEMM path's epilogue runs over a panel's finished positions). By shape:
 * 1x1s reading x in place with weights of at most 512 KiB (ResNet-50's
 * 512->128 and 512->256 at 28x28: their 1.6 MiB input, read 3 or 6 times
 * panel by panel, left L2 between the panels; bench/conv_node, 1 thread,
 * caches evicted, medians us panel by panel -> group by group, 2026-12-06,
 * load 9: 1006, 1032 -> 839, 859 and 1705, 1695 -> 1528, 1566; but
 * 1024->256 at 14x14, 1 MiB of weights, 713, 708 -> 732, 745) */
static bool pwt_by_group(const pwt_job *j, size_t nt, size_t nr, bool fused) {
    if (!fused || nt < 2 || nr <= T_GROUP || g_pwt_order == 1) return false;
    if (g_pwt_order == 2) return true;
    return j->io.direct && j->io.kt * j->io.cog <= ((size_t)128 << 10);
}

/* One (weight panel, group of tiles) pair of pwt_item: each k panel of the
 * weight panel wp (nc channels) over the group's gn tiles (g_ap, g_kind,
 * g_kern as pwt_item sets them) before the next, the sums in accs. The
 * weights read next (the next k panel; after the last, the first k panel
 * of wn, nn channels wide, unless NULL) are fetched into L2 while a k
 * panel's tiles run, spread over their steps (pwt_job.pf). */
static void pwt_pair(const pwt_job *j, const float *wp, size_t nc, const float *wn, size_t nn, size_t gn,
                     const float *const *g_ap, const size_t *g_kind, pwt_kern_fn *const *g_kern,
                     float (*accs)[T_MR * T_W], const float *xn, size_t xn_len) {
    size_t kt = j->io.kt, n_kp = ceil_div(kt, T_KC), ld = j->io.sp;
    for (size_t q = 0; q < n_kp; q++) {
        const char *nx = NULL;
        size_t nx_bytes = 0;
        if (j->pf) {
            size_t p1 = (q + 1) * T_KC, k0 = kt < T_KC ? kt : T_KC; /* k0: a first k panel's steps */
            if (q + 1 < n_kp)
                nx = (const char *)(wp + p1 * nc), nx_bytes = (kt - p1 < T_KC ? kt - p1 : T_KC) * nc * 4;
            else if (wn)
                nx = (const char *)wn, nx_bytes = k0 * nn * 4;
        }
        for (size_t g = 0; g < gn; g++) {
            size_t d = g_kind[g], s0 = q * T_KC, steps = (kt - s0 < T_KC ? kt - s0 : T_KC);
            const int32_t *xo = NULL, *ks = NULL;
            const float *ap = g_ap[g], *bp = wp + s0 * nc;
            if (j->in_place) {
                const size_t *ls = j->lst + d * (j->n_kp + 1);
                steps = ls[q + 1] - ls[q];
                xo = (d ? j->xo + (d - 1) * kt : j->xo0) + ls[q];
                if (d) ks = j->ks + (d - 1) * kt + ls[q], bp = wp;
            } else
                ap += s0 * T_MR;
            const char *pf = NULL;
            size_t pfs = 0;
            if (nx && steps) {
                size_t b0 = nx_bytes * g / gn, b1 = nx_bytes * (g + 1) / gn;
                pf = nx + b0, pfs = (b1 - b0 + steps - 1) / steps;
                if (pfs > 64) pfs = 64; /* one prefetch a step: a line at most, the rest left to the hardware */
            }
            if (xn) { /* this tile's share of the k panel's rows of the next group's inputs, into L2 */
                size_t p0 = q * T_KC + steps * g / gn, p1 = q * T_KC + steps * (g + 1) / gn;
                for (size_t p = p0; p < p1; p++) {
                    const char *row = (const char *)(xn + p * ld);
                    for (size_t b = 0; b < xn_len * sizeof(float); b += 64) __builtin_prefetch(row + b, 0, 2);
                    __builtin_prefetch(row + xn_len * sizeof(float) - 1, 0, 2);
                }
            }
            g_kern[g](steps, ap, xo, ks, bp, accs[g], q > 0, pf, pfs);
        }
    }
}
#endif

/* Task: (image and group, block of weight panels, block of tiles). */
static void pwt_item(void *ctx, size_t item, float *scratch) {
    (void)scratch;
#if RLX_HAVE_AVX2_BUILD
    const pwt_job *j = ctx;
    const rlx_nn_conv_io *io = &j->io;
    size_t tb = item % j->n_tb, rest = item / j->n_tb;
    size_t pb = rest % j->n_pb, ng = rest / j->n_pb, n = ng / io->groups, gi = ng % io->groups;
    size_t t0, nt, r0, nr;
    rlx_cpu_block_range(j->panels, 1, j->n_pb, pb, &t0, &nt);
    rlx_cpu_block_range(j->tiles, 1, j->n_tb, tb, &r0, &nr);
    if (!nt || !nr) return;
    size_t kt = io->kt, sp = io->sp;
    /* the sums of up to T_GROUP tiles: each k panel of a weight panel
     * runs over all of them before the next (the panel's T_KC x nc
     * weights, 48 KiB at most, read from memory once per group and from
     * L2 for the group's other tiles, instead of the whole weight panel,
     * up to 884 KiB, once per tile), then the group's sums are stored
     * (transposed) together. bench/conv_node, 1 thread, Intel Xeon (2
     * 512-bit FMA ports), min us, tile by tile -> by groups: ResNet-50's
     * 3x3 512->512 at 7x7 hot 1438 -> 1270, caches evicted 1572 -> 1323,
     * its weights flushed 2203 -> 1384; 1x1 512->2048 at 7x7 733 -> 662,
     * 879 -> 714, 1043 -> 749 (BENCHMARKS.md "by k panel over groups of tiles") */
    _Alignas(64) float accs[T_GROUP][T_MR * T_W];
    size_t g_pos[T_GROUP], g_rows[T_GROUP], g_kind[T_GROUP];
    const float *g_ap[T_GROUP];
    pwt_kern_fn *g_kern[T_GROUP];
    rlx_act_kind ak = io->act.kind;
    pwt_epi epi = { .fused = !io->res && (ak == RLX_ACT_NONE || ak == RLX_ACT_RELU || ak == RLX_ACT_CLIP),
                    .bias = io->b ? io->b + gi * io->cog : NULL, .always = ak != RLX_ACT_NONE, .act = ak,
                    .lo = io->act.alpha, .hi = io->act.beta };
    /* in place: the tiles from the first whose row takes every step, so
     * that the first pass over a weight panel reads all of it in order
     * (from memory, where rows that leave steps out would skip lines that
     * the next row then misses on: ResNet-50's 512->512 3x3 on 7x7, caches
     * evicted, 2.2 -> 2.4 ms without this) */
    size_t first = 0;
    if (j->in_place)
        while (first + 1 < nr && j->row_kind[(r0 + first) / j->tpr]) first++;
    /* the block's (weight panel, group of tiles) pairs panel by panel or
     * group by group (pwt_by_group) */
    size_t n_groups = ceil_div(nr, T_GROUP);
    bool by_group = pwt_by_group(j, nt, nr, epi.fused);
    size_t outer = by_group ? n_groups : nt, inner = by_group ? nt : n_groups;
    for (size_t o = 0; o < outer; o++) {
        size_t lo = sp, hi = 0; /* panel by panel: the panel's positions */
        for (size_t i = 0; i < inner; i++) {
            size_t t = t0 + (by_group ? i : o), g0 = (by_group ? o : i) * T_GROUP;
            size_t gn = nr - g0 < T_GROUP ? nr - g0 : T_GROUP;
            size_t c0, nc; /* nc a multiple of 16 */
            pwt_panel(io->cog, t, &c0, &nc);
            const float *wp = j->wt + (gi * io->cog + c0) * kt;
            /* the weight panel of the next pair (its first k panel is
             * fetched during this pair's last) */
            const float *wn = NULL;
            size_t nn = 0;
            if (i + 1 < inner || o + 1 < outer) {
                size_t tn = i + 1 < inner ? (by_group ? t + 1 : t) : (by_group ? t0 : t + 1), cn;
                pwt_panel(io->cog, tn, &cn, &nn);
                wn = j->wt + (gi * io->cog + cn) * kt;
            }
            if (!by_group || i == 0)
                for (size_t g = 0; g < gn; g++) {
                    size_t r = r0 + (first + g0 + g) % nr;
                    if (j->in_place) {
                        size_t oy = r / j->tpr, ox = r % j->tpr * T_MR, ow = j->ow;
                        g_ap[g] = j->planes + ng * io->cig * j->plane + oy * j->wp + ox;
                        g_pos[g] = oy * ow + ox, g_rows[g] = ow - ox < T_MR ? ow - ox : T_MR;
                        g_kind[g] = j->row_kind[oy];
                    } else {
                        g_ap[g] = j->xt + (ng * j->tiles + r) * kt * T_MR;
                        g_pos[g] = r * T_MR, g_rows[g] = sp - g_pos[g] < T_MR ? sp - g_pos[g] : T_MR, g_kind[g] = 0;
                    }
                }
            for (size_t g = 0; g < gn; g++)
                g_kern[g] = j->in_place ? g_pwt_kerns[g_kind[g] > 0][g_rows[g]][nc / 16 - 1]
                                        : g_pwt_kerns[0][0][nc / 16 - 1];
            /* group by group with x read in place (1x1): during the
             * first panel, the next group's inputs fetched into L2 (its
             * rows are sp floats apart: no hardware prefetcher follows
             * them; 512->128 at 28x28, caches evicted, medians 946, 986
             * -> 839, 859 us) */
            const float *xn = NULL;
            size_t xn_len = 0;
            if (by_group && i == 0 && io->direct && o + 1 < outer) {
                size_t gq = nr - g0 - gn < T_GROUP ? nr - g0 - gn : T_GROUP, rq = r0 + (first + g0 + gn) % nr;
                size_t pos = rq * T_MR;
                xn = j->planes + ng * io->cig * j->plane + pos;
                xn_len = gq * T_MR < sp - pos ? gq * T_MR : sp - pos;
            }
            pwt_pair(j, wp, nc, wn, nn, gn, g_ap, g_kind, g_kern, accs, xn, xn_len);
            float *y = io->y + (n * io->c_out + gi * io->cog + c0) * sp;
            for (size_t g = 0; g < gn; g++) {
                pwt_store(accs[g], nc, y + g_pos[g], sp, g_rows[g], &epi, c0);
                if (g_pos[g] < lo) lo = g_pos[g];
                if (g_pos[g] + g_rows[g] > hi) hi = g_pos[g] + g_rows[g];
            }
            /* panel by panel (the only order without the fused epilogue):
             * the panel's positions [lo, hi) once its last group is stored */
            if (!epi.fused && i + 1 == inner)
                rlx_nn_conv_epilogue_block(y + lo, sp, nc, hi - lo, io->b ? io->b + gi * io->cog + c0 : NULL,
                                           io->res ? io->res + (y + lo - io->y) : NULL, &io->act);
        }
    }
#else
    (void)ctx, (void)item;
#endif
}

/* The split over the threads: one block of panels and tiles on one
 * thread; else a panel per block of panels and enough blocks of tiles for
 * about 4 items per thread (taken in turn: the load evens out). */
static void pwt_split(pwt_job *j, size_t n_ng) {
    size_t threads = (size_t)rlx_parallel_threads();
    j->n_pb = 1, j->n_tb = 1;
    if (threads <= 1) return;
    j->n_pb = j->panels;
    size_t want = 4 * threads, have = n_ng * j->n_pb;
    if (have < want) j->n_tb = (want + have - 1) / have;
    if (j->n_tb > j->tiles) j->n_tb = j->tiles;
}

/* most kinds of output rows (pwt_lists) */
#define PWT_KINDS 8

/* The step lists of an in-place run (pwt_job): off[p], step p's offset in
 * the planes. Where skip (every weight finite) and the kernel is at most
 * 32 rows tall, output row oy leaves out the steps whose kernel row reads
 * padding only (input row oy * sh - pb + a * dh outside the input: 0 x w
 * is +0, which leaves a sum as it is; a sum that starts at +0 never
 * becomes -0), so the top and bottom rows of a 3x3 pad 1 convolution take
 * 2/3 of the steps (13x13: 5% fewer multiply-adds); each k panel of
 * T_KC steps stays one sum, so the bits are those of every step. At most
 * PWT_KINDS kinds of rows (by the set of kernel rows they read), else
 * none skip. In the calling thread's RLX_SCRATCH_INDEX buffer, or (past
 * its limit) one block *own (free). */
static rlx_status pwt_lists(rlx_cpu_kctx *k, pwt_job *j, const int32_t *off, bool skip, void **own) {
    const rlx_nn_conv_io *io = &j->io;
    const rlx_nn_sp3 *s = io->s;
    size_t kt = io->kt, oh = j->tiles / j->tpr, kh = (size_t)s->k[1], kw = (size_t)s->k[2];
    j->n_kp = ceil_div(kt, T_KC);
    uint32_t masks[PWT_KINDS], full = kh >= 32 ? UINT32_MAX : (1u << kh) - 1;
    size_t n_kinds = 1;
    masks[0] = full;
    /* the lists' block: at most PWT_KINDS kinds, then the row kinds */
    size_t list_bytes = PWT_KINDS * (j->n_kp + 1) * sizeof(size_t) + (PWT_KINDS - 1) * 2 * kt * sizeof(int32_t);
    char *blk = rlx_scratch_get(RLX_SCRATCH_INDEX, list_bytes + oh + 1);
    if (!blk && !(blk = own[0] = malloc(list_bytes + oh + 1)))
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (%zu step lists of %zu)", (size_t)PWT_KINDS, kt);
    uint8_t *kind = (uint8_t *)blk + list_bytes;
    memset(kind, 0, oh);
    if (skip && !io->direct && kh <= 32 && s->k[1] > 1) {
        for (size_t oy = 0; oy < oh && n_kinds <= PWT_KINDS; oy++) {
            uint32_t m = 0;
            for (size_t a = 0; a < kh; a++) {
                int64_t r = (int64_t)oy * s->s[1] - s->pb[1] + (int64_t)a * s->d[1];
                if (r >= 0 && r < s->in[1]) m |= 1u << a;
            }
            size_t d = 0;
            while (d < n_kinds && masks[d] != m) d++;
            if (d == n_kinds && n_kinds < PWT_KINDS) masks[n_kinds++] = m;
            else if (d == n_kinds) n_kinds = PWT_KINDS + 1; /* too many: none skip */
            kind[oy] = (uint8_t)d;
        }
        if (n_kinds > PWT_KINDS) {
            n_kinds = 1;
            memset(kind, 0, oh);
        }
    }
    /* kind 0 (every step): off itself; the others' lists built here */
    j->lst = (size_t *)blk;
    j->xo = (int32_t *)(blk + n_kinds * (j->n_kp + 1) * sizeof(size_t));
    j->ks = j->xo + (n_kinds - 1) * kt;
    j->xo0 = off;
    for (size_t q = 0; q <= j->n_kp; q++) j->lst[q] = q * T_KC < kt ? q * T_KC : kt;
    for (size_t d = 1; d < n_kinds; d++) {
        size_t *ls = j->lst + d * (j->n_kp + 1), n = 0, p = 0, q = 0;
        int32_t *xo = j->xo + (d - 1) * kt, *ks = j->ks + (d - 1) * kt;
        ls[0] = 0;
        for (size_t c = 0; c < io->cig; c++)
            for (size_t a = 0; a < kh; a++)
                for (size_t b = 0; b < kw; b++, p++) {
                    if (p == (q + 1) * T_KC) ls[++q] = n;
                    if (masks[d] >> a & 1u) xo[n] = off[p], ks[n] = (int32_t)p, n++;
                }
        while (q < j->n_kp) ls[++q] = n;
    }
    j->row_kind = kind;
    return RLX_OK;
}

/* The in-place run over n_ng (image, group)s, off[p] step p's offset in
 * j->planes (pwt_lists). */
static rlx_status pwt_run_in_place(rlx_cpu_kctx *k, pwt_job *j, size_t n_ng, const int32_t *off) {
    void *own[1] = { NULL };
    RLX_TRY(pwt_lists(k, j, off, k->pack->wt_finite, own));
    pwt_split(j, n_ng);
    rlx_status st = rlx_nn_run_items(k, n_ng * j->n_pb * j->n_tb, 0, pwt_item, j);
    atomic_fetch_add(&g_pwt_runs, 1);
    free(own[0]);
    return st;
}

rlx_status rlx_nn_conv_pwt_f32(rlx_cpu_kctx *k, const rlx_nn_conv_io *io, size_t n_ng) {
    pwt_job j;
    memset(&j, 0, sizeof j);
    j.io = *io;
    j.wt = k->pack->wt;
    /* the weights read next prefetched (pwt_item) */
    j.pf = true;
    j.tiles = ceil_div(io->sp, T_MR);
    j.panels = pwt_panel(io->cog, 0, NULL, NULL);
    const rlx_nn_sp3 *s = io->s;
    j.in_place = !io->direct && s->s[0] == 1 && s->s[1] == 1 && s->s[2] == 1 && s->in[0] == 1 && s->k[0] == 1 &&
                 s->pb[0] == 0 && s->out[0] == 1 && g_pwt_in_place;
    if (j.in_place) {
        /* stride 1: the padded plane holds every tap of every output */
        j.hp = (size_t)(s->in[1] + s->pb[1] + s->pe[1]);
        j.wp = (size_t)(s->in[2] + s->pb[2] + s->pe[2]);
        j.plane = j.hp * j.wp;
        j.ow = (size_t)s->out[2];
        j.tpr = ceil_div(j.ow, T_MR);
        j.tiles = (size_t)s->out[1] * j.tpr;
        if ((double)io->cig * (double)j.plane >= (double)INT32_MAX / 2) j.in_place = false;
    }
    j.sh = 1, j.sw = 1;
    bool phased = !io->direct && !j.in_place && s->in[0] == 1 && s->k[0] == 1 && s->pb[0] == 0 && s->out[0] == 1 &&
                  s->ksz > 1 && g_pwt_in_place;
    if (phased) {
        /* strided, several taps: the padded rows and columns the taps
         * read, split by phase; an output row's positions are contiguous
         * in each phase plane, so tap (a, b) of channel c is one offset */
        j.sh = (size_t)s->s[1], j.sw = (size_t)s->s[2];
        j.ow = (size_t)s->out[2];
        size_t hp = ((size_t)s->out[1] - 1) * j.sh + ((size_t)s->k[1] - 1) * (size_t)s->d[1] + 1,
               wp = (j.ow - 1) * j.sw + ((size_t)s->k[2] - 1) * (size_t)s->d[2] + 1;
        j.hp = (hp + j.sh - 1) / j.sh, j.wp = (wp + j.sw - 1) / j.sw;
        j.plane = j.sh * j.sw * j.hp * j.wp;
        j.tpr = ceil_div(j.ow, T_MR);
        j.tiles = (size_t)s->out[1] * j.tpr;
        j.in_place = (double)io->cig * (double)j.plane < (double)INT32_MAX / 2;
    }
    if (io->direct && g_pwt_in_place && (double)io->cig * (double)io->sp < (double)INT32_MAX / 2) {
        /* x read in place: one row of sp positions per (image, group), its
         * last tile as wide as the positions left (no read past x) */
        j.in_place = true;
        j.planes = (float *)io->x;
        j.plane = io->sp, j.wp = io->sp, j.ow = io->sp, j.tpr = ceil_div(io->sp, T_MR), j.tiles = j.tpr;
        /* the offsets in the calling thread's CALL buffer (unused here: x is read in place) */
        int32_t *off = rlx_scratch_get(RLX_SCRATCH_CALL, io->kt * sizeof(int32_t)), *own = NULL;
        if (!off && !(off = own = malloc(io->kt * sizeof(int32_t) + 1)))
            return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (%zu offsets)", io->kt);
        for (size_t p = 0; p < io->kt; p++) off[p] = (int32_t)(p * io->sp);
        rlx_status st = pwt_run_in_place(k, &j, n_ng, off);
        free(own);
        return st;
    }
    if (j.in_place) {
        /* planes + 16 floats of slack + the offsets */
        size_t n_pl;
        if (!rlx_mul_ok(n_ng * io->cig, j.plane, &n_pl) || n_pl > SIZE_MAX / 16 || io->kt > SIZE_MAX / 16)
            return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "padded input of %zu planes too large", n_ng * io->cig);
        size_t total = n_pl + 16 + io->kt;
        float *own = NULL;
        if (!(j.planes = rlx_scratch_get(RLX_SCRATCH_CALL, total * sizeof(float))) &&
            !(j.planes = own = malloc((total + 1) * sizeof(float))))
            return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (%zu-float padded input)", total);
        memset(j.planes + n_pl, 0, 16 * sizeof(float));
        int32_t *off = (int32_t *)(j.planes + n_pl + 16);
        size_t kh = (size_t)s->k[1], kw = (size_t)s->k[2], ph = j.hp * j.wp, p = 0;
        for (size_t c = 0; c < io->cig; c++) /* k = (c kh + a) kw + b, the taps of one channel alike */
            for (size_t a = 0; a < kh; a++)
                for (size_t b = 0; b < kw; b++, p++) {
                    size_t r = a * (size_t)s->d[1], q = b * (size_t)s->d[2];
                    off[p] = p >= s->ksz ? off[p - s->ksz] + (int32_t)j.plane
                                         : (int32_t)(((r % j.sh) * j.sw + q % j.sw) * ph + r / j.sh * j.wp + q / j.sw);
                }
        rlx_parallel_for(n_ng * io->cig, 1 + 16384 / (j.plane + 1), phased ? pwt_pad_phases : pwt_pad, &j);
        rlx_status st = pwt_run_in_place(k, &j, n_ng, off);
        free(own);
        return st;
    }
    size_t n_xt, n_col = 0, total;
    if (!rlx_mul_ok(n_ng * j.tiles * T_MR, io->kt, &n_xt) || (!io->direct && !rlx_mul_ok(n_ng * io->sp, io->kt, &n_col)) ||
        n_xt > SIZE_MAX / 16 || n_col > SIZE_MAX / 16)
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "gathered input of %zu x %zu too large", io->sp, io->kt);
    total = n_xt + n_col;
    float *own = NULL;
    if (!(j.xt = rlx_scratch_get(RLX_SCRATCH_CALL, total * sizeof(float))) &&
        !(j.xt = own = malloc((total + 1) * sizeof(float))))
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (%zu-float gathered input)", total);
    if (!io->direct) {
        j.col = j.xt + n_xt;
        rlx_parallel_for(n_ng * io->cig, 1 + 16384 / (io->s->ksz * io->sp + 1), pwt_im2col, &j);
    }
    rlx_parallel_for(n_ng * j.tiles, 1 + 4096 / (io->kt * T_MR), pwt_gather, &j);
    pwt_split(&j, n_ng);
    rlx_status st = rlx_nn_run_items(k, n_ng * j.n_pb * j.n_tb, 0, pwt_item, &j);
    atomic_fetch_add(&g_pwt_runs, 1);
    free(own);
    return st;
}
