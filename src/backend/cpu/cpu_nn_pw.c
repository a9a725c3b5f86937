/* The pointwise path of Conv: convolutions with few input channels per
 * group, K = c_in / group x kernel taps <= 256 (the rule: pw_by_shape),
 * f32, policy "pool"; the fast path of rlx_nn_conv_gemm_f32 for the
 * expansion and projection layers of mobile networks (MobileNetV2's
 * 16 -> 96 at 112 x 112, 24 -> 144 at 56 x 56) and for stems (3x3 or 7x7
 * on 3 channels). 1x1 stride 1 without padding reads the input in place;
 * strided 2-D ones read it in place from phase rows of the padded input
 * built once per call (pw_job); the others take the im2col of one run of
 * positions at a time.
 *
 * Why not the GEMM: with K this small a GEMM block does little arithmetic
 * per byte it moves: it packs B (the input rows), writes its output block,
 * and the epilogue then reads and writes that block again (3 MiB for
 * 96 x 8192 positions: out of L2 by then). Here B is read in place (the
 * output is C_out x HW, B the input's K rows, contiguous along HW: no
 * im2col, no packing), the weights stay packed as at compile time (their
 * mr-row panels, a few KiB), and the epilogue runs on the accumulators:
 * every output element is written once.
 *
 * A task (image and group, block of positions, block of output channels)
 * walks its positions in runs (K x run <= 16 Ki floats, in L2; 64 Ki for
 * an im2col run), and for
 * each run (its im2col first, where not 1x1 stride 1) every tile of PW_MR output
 * channels x 2 vectors of positions: PW_MR x 2 accumulators, one fused
 * multiply-add per product (the portable kernel: multiply, then add),
 * masked loads and stores for the last columns of a run.
 *
 * The arithmetic is the sgemm's (cpu_sgemm.h) for K <= 256, so the same
 * bits as the GEMM path at every ISA: each sum starts at 0 and takes its K
 * products in order; then the epilogue of the GEMM path, act((acc + b) + r)
 * with its rules (bias added when non-zero, or always without a residual
 * when there is an activation; Relu and Clip by comparisons, NaN passing
 * through), in registers for no activation, Relu and Clip; other
 * activations by the GEMM path's epilogue (rlx_nn_conv_epilogue_block)
 * over the run just stored. tests/test_cpu_conv_fast.c compares both
 * paths bit for bit, and with the reference. */
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

#define PW_MR_MAX 8
/* input floats of one run of positions (K x run: 64 KiB, in L2; runs of
 * 4 Ki floats, in L1, measured slower on 16 -> 96 at 112 x 112: the
 * output rows are written in longer pieces) */
#define PW_RUN_FLOATS 16384
/* the same for the im2col of a run (K x run: 256 KiB; longer runs make
 * fewer, longer im2col copies) */
#define PW_COL_FLOATS 65536
/* Software prefetch distances (floats) along the input and output rows.
 * At batch 8 a layer's input and output no longer stay in the caches
 * between layers (MobileNetV2's 112x112x16 input is 6.4 MiB for 8
 * images), and the K input rows and the output rows of a tile are K +
 * rows concurrent streams 50 KiB apart, more than the hardware
 * prefetchers follow. bench/conv_node, 1 thread, caches evicted, min us
 * of 15, before -> after (2026-12-05, load 7): 8x 32->16 at 112x112
 * 2060 -> 1207, 8x 96->24 at 56 1696 -> 1146, 8x 144->24 at 56 with a
 * residual 2530 -> 1962, 8x 16->96 at 112 4342 -> 3948, 1x 32->16 at
 * 112 318 -> 187; with hot caches 1x the same (121 -> 123, 130 -> 130,
 * 200 -> 196, 410 -> 419). */
#define PW_PF_MIN 256
#define PW_PF_MAX 1024
/* the largest K (one panel of the sgemm's k blocks: the same sums) */
#define PW_MAX_K 256

/* Whether the pointwise path beats im2col + GEMM, by single nodes
 * (bench/pw_conv, 1 thread, AVX-512, minimum of 15-40 interleaved calls,
 * load 8, 2026-12-03; BENCHMARKS.md "pointwise"), us pointwise / GEMM:
 * 1x1: 16->96 at 112x112 452 / 1005, 32->16 at 112 225 / 314, 24->144 at
 * 56 320 / 394, 96->24 at 56 220 / 244, 192->32 at 28 115 / 136, 64->256
 * at 56 1559 / 1641, 144->24 at 56 408 / 415, but 256->64 at 56 2414 /
 * 2201, 64->384 at 14 125 / 114, 96->576 at 14 280 / 250, 160->960 at 7
 * 220 / 198 (few positions, many output channels: the GEMM's packed B
 * panels serve more rows); im2col: 3->32 3x3 s2 at 224 819 / 887, 3->64
 * 7x7 s2 at 224 7084 / 10538, 16->16 3x3 at 160 3180 / 6321, 24->24 3x3
 * at 80 1766 / 1918; and (PP-OCRv4's, 11:20, two runs) 192->192 at 40x40
 * 2040, 1902 / 1352, 1637, 96->96 at 80 2428, 2454 / 2290, 2362, but
 * 48->48 at 160 1560, 1524 / 2702, 1794. So: K up to 32, or up to 192
 * (1x1) / 256 (im2col) with at least twice as many positions as output
 * channels and the group's weights within 32 KiB (K x c_out / group <=
 * 8 Ki floats: they stay in L1 over the runs; larger ones lose to the
 * GEMM's packed blocks). */
static bool pw_by_shape(bool direct, bool res, size_t kt, size_t cog, size_t sp) {
    if (kt <= 32 || (kt <= (direct ? 192u : 256u) && sp >= 2 * cog && kt * cog <= 8192)) return true;
    /* and 1x1s at stride 1 with K <= 256 on maps of 56x56 or more, or with
     * a residual on 28x28 or more, whatever their weights (bench/conv_node,
     * caches evicted as in a model, 1 thread, 2026-12-04; BENCHMARKS.md
     * "rn50b"), us GEMM -> pointwise: 64->256 at 56x56 with a residual
     * 1517 -> 1046 (the GEMM path wrote its 1.6 MiB block, then re-read it
     * with the residual), without 1244 -> 1103, 256->64 1295 -> 1192,
     * 256->128 2298 -> 2141, 96->96 at 80x80 1505 -> 1312, 128->512 at
     * 28x28 with a residual 1124 -> 1072; but without one 128->512 983 ->
     * 1028, 256->128 547 -> 556 at 28x28 and 192->192 at 40x40 even */
    /* From 12 threads only to K <= 128 there: the GEMM path splits better
     * (the H100 machine's 16-core host, bench/conv_node wall us, min /
     * median, 16 threads, 2026-12-07, pointwise -> GEMM: 256->128 at 56x56
     * 201 / 229 -> 151 / 166, batch 8 256->64 647 / 718 -> 590 / 643; but
     * 64->256 88 / 102 -> 105 / 117). The same bits either way. */
    if (kt > 128 && rlx_parallel_threads() >= 12) return false;
    return direct && kt <= PW_MAX_K && (sp >= 3136 || (res && sp >= 784));
}

/* The epilogue of one tile's rows. */
typedef struct pw_epi {
    bool fused;                /* bias, residual and activation here; else the plain sums are stored */
    bool add_b[PW_MR_MAX];     /* per row: whether the bias is added (the GEMM epilogue's rule) */
    float bias[PW_MR_MAX];     /* per row (0 without a bias) */
    const float *res;          /* the residual at the tile's first row and the strip's column 0, or NULL */
    rlx_act_kind act;          /* RLX_ACT_NONE, _RELU or _CLIP when fused */
    float lo, hi;              /* Clip's bounds */
    size_t pf;                 /* prefetch distance along the input rows (floats), 0: none */
    size_t pf_out;             /* the same along the output rows, for writing (full tiles) */
} pw_epi;

typedef void pw_strip_fn(size_t kt, const float *ap, const float *x, size_t ldx, const int32_t *xo, float *y,
                         size_t ldy, size_t n, size_t rows, const pw_epi *e);

/* Portable: a 6 x 16 tile, multiply then add (the portable sgemm kernel's
 * operations: the same bits). */
static void pw_strip_c(size_t kt, const float *ap, const float *x, size_t ldx, const int32_t *xo, float *y,
                       size_t ldy, size_t n, size_t rows, const pw_epi *e) {
    enum { MR = 6, NR = 16 };
    for (size_t j = 0; j < n; j += NR) {
        size_t w = n - j < NR ? n - j : NR;
        float acc[MR][NR];
        memset(acc, 0, sizeof acc);
        const float *a = ap;
        for (size_t p = 0; p < kt; p++, a += MR) {
            const float *xp = xo ? x + j + xo[p] : x + j + p * ldx;
            for (int i = 0; i < MR; i++) {
                float ai = a[i];
                for (size_t c = 0; c < w; c++) acc[i][c] += ai * xp[c];
            }
        }
        for (size_t i = 0; i < rows; i++) {
            float *yr = y + i * ldy + j;
            const float *rr = e->res ? e->res + i * ldy + j : NULL;
            for (size_t c = 0; c < w; c++) {
                float v = acc[i][c];
                if (e->fused) {
                    if (e->add_b[i]) v = v + e->bias[i];
                    if (rr) v = v + rr[c];
                    if (e->act == RLX_ACT_RELU) v = v < 0.0f ? 0.0f : v;
                    else if (e->act == RLX_ACT_CLIP) {
                        v = v < e->lo ? e->lo : v;
                        v = v > e->hi ? e->hi : v;
                    }
                }
                yr[c] = v;
            }
        }
    }
}

#if RLX_HAVE_AVX2_BUILD
/* AVX-512F: 8 x 32 (the sgemm kernel's tile). */
#define PW_SFX avx512
#define PW_ATTR RLX_AVX512
#define RLX_VBITS 512
#define PW_MR 8
#define PW_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define PW_M __mmask16
#define PW_MASK(n) ((__mmask16)((1u << (n)) - 1u))
#define PW_LOADM(p, m) _mm512_maskz_loadu_ps(m, p)
#define PW_STOREM(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#include "backend/cpu/cpu_nn_pw_kern.h"

/* AVX2 + FMA: 6 x 16 (the sgemm kernel's tile). */
RLX_AVX2_INLINE __m256i pw_mask8(size_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#define PW_SFX avx2
#define PW_ATTR RLX_AVX2
#define RLX_VBITS 256
#define PW_MR 6
#define PW_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define PW_M __m256i
#define PW_MASK(n) pw_mask8(n)
#define PW_LOADM(p, m) _mm256_maskload_ps(p, m)
#define PW_STOREM(p, m, v) _mm256_maskstore_ps(p, m, v)
#include "backend/cpu/cpu_nn_pw_kern.h"
#endif

static int g_pw_force; /* rlx_nn_pw_force: 0 by shape, 1 never, 2 wherever it applies */
static atomic_size_t g_pw_runs;
static int g_pw_phase = 1; /* rlx_nn_pw_phase_rows: 0 never, 1 by the rule, 2 always */
static atomic_size_t g_pw_phase_runs;

void rlx_nn_pw_force(int path) { g_pw_force = path; }
int rlx_nn_pw_forced(void) { return g_pw_force; }

void rlx_nn_pw_phase_rows(int mode) { g_pw_phase = mode; }

size_t rlx_nn_pw_phase_runs(void) { return atomic_load(&g_pw_phase_runs); }

size_t rlx_nn_pw_runs(void) { return atomic_load(&g_pw_runs); }

typedef struct pw_job {
    rlx_nn_conv_io io;          /* io.direct: B is the input itself, else a run's im2col */
    bool fused;                 /* act is none, Relu or Clip */
    size_t w_floats;            /* the scratch's weight panels (0 when packed at compile time) */
    size_t mr, vec;             /* tile rows, columns of a tile (2 vectors) */
    size_t n_cb, n_mb;          /* blocks of positions, of output channels */
    size_t run;                 /* positions per run (a multiple of vec) */
    const rlx_cpu_sgemm_pack *pack; /* the weights packed at compile time, or NULL */
    pw_strip_fn *strip;
    /* strided 2-D convolutions: the positions read in place from phase
     * rows instead of an im2col (pw_phase_fill): per (image, group) and
     * input channel, rows R = (oh - 1) sh + (kh - 1) dh + 1 of the
     * zero-padded input, each split into its sw column phases of J
     * floats: [c][r][f][q] = padded x[c][r][q sw + f]; output row oy's
     * positions ox.. of step k = (c kh + a) kw + b at oy sh sw J + ox +
     * xo[k], contiguous */
    bool phased;
    pw_strip_fn *strip_o;   /* the strip reading step p at x + xo[p] */
    float *rows;            /* [n_ng][cig][R][sw][J] */
    const int32_t *xo;      /* kt offsets */
    size_t R, J, sw, sh, ow, ng_floats;
} pw_job;

/* Items (image and group, input channel): the phase rows (pw_job). */
static void pw_phase_fill(void *ctx, size_t i0, size_t i1) {
    const pw_job *j = ctx;
    const rlx_nn_conv_io *io = &j->io;
    const rlx_nn_sp3 *s = io->s;
    size_t w_in = (size_t)s->in[2], pl = (size_t)s->pb[2], sw = j->sw, row = sw * j->J;
    for (size_t i = i0; i < i1; i++) {
        size_t ng = i / io->cig, c = i % io->cig, n = ng / io->groups, gi = ng % io->groups;
        const float *xc = io->x + (n * io->c_in + gi * io->cig + c) * s->in_sp;
        float *d = j->rows + i * j->R * row;
        for (size_t r = 0; r < j->R; r++, d += row) {
            int64_t ir = (int64_t)r - s->pb[1];
            if (ir < 0 || ir >= s->in[1]) {
                memset(d, 0, row * sizeof(float));
                continue;
            }
            /* padded column q sw + f is input column q sw + f - pl */
            for (size_t f = 0; f < sw; f++)
                rlx_nn_gather_run(d + f * j->J, xc + (size_t)ir * w_in, (int64_t)w_in, (int64_t)f - (int64_t)pl,
                                  (int64_t)sw, (int64_t)j->J);
        }
    }
}


/* Task: (image and group, block of positions, block of output channels).
 * scratch: the block's weight panels when they are not packed already. */
static void pw_item(void *ctx, size_t item, float *scratch) {
    const pw_job *j = ctx;
    rlx_nn_conv_block bk;
    if (!rlx_nn_conv_block_of(item, j->io.groups, j->io.sp, j->vec, j->n_cb, j->io.cog, j->mr, j->n_mb, &bk)) return;
    size_t n = bk.n, gi = bk.gi, p0 = bk.p0, np = bk.np, m0 = bk.m0, mi = bk.mi;
    size_t kt = j->io.kt, mr = j->mr, tiles = (mi + mr - 1) / mr;
    const float *xg = j->io.x + (n * j->io.c_in + gi * j->io.cig) * j->io.s->in_sp;
    /* !direct: the run's columns, [kt][len] (no scratch at all when direct with packed weights) */
    float *col = scratch ? scratch + j->w_floats : NULL;
    size_t row0 = n * j->io.c_out + gi * j->io.cog + m0; /* the block's first output row */
    bool packed = j->pack != NULL; /* else the panels are the scratch's first w_floats */
    const float *wg = packed ? NULL : j->io.w + (gi * j->io.cog + m0) * kt; /* (may be gone when packed) */
    if (!packed) /* panels of mr rows: [tile][p][i], rows past the block zero */
        for (size_t t = 0; t < tiles; t++)
            for (size_t p = 0; p < kt; p++)
                for (size_t i = 0; i < mr; i++) {
                    size_t r = t * mr + i;
                    scratch[(t * kt + p) * mr + i] = r < mi ? wg[r * kt + p] : 0.0f;
                }
    const float *bias = j->io.b ? j->io.b + gi * j->io.cog + m0 : NULL;
    /* the epilogue: its constant part once per block, the bias rows per
     * tile (rows past the tile are not read) */
    pw_epi e = { .fused = j->fused, .act = j->io.act.kind, .lo = j->io.act.alpha, .hi = j->io.act.beta };
    /* the GEMM epilogue's rule (epilogue_row): with a residual the bias
     * only when non-zero; without, always under an activation */
    bool bias_always = !j->io.res && j->io.act.kind != RLX_ACT_NONE;
    /* prefetch distances: the input rows about one run ahead (the first
     * tile of a run reads them: 256 to 1024 floats), the output rows 256
     * floats ahead (every tile writes its own rows) */
    size_t pf_in = j->run < PW_PF_MIN ? PW_PF_MIN : j->run > PW_PF_MAX ? PW_PF_MAX : j->run;
    e.pf_out = PW_PF_MIN;
    for (size_t c0 = p0, len; c0 < p0 + np; c0 += len) {
        len = p0 + np - c0 < j->run ? p0 + np - c0 : j->run;
        const float *xr = NULL; /* phased: the run's first position in the phase rows */
        if (j->phased) { /* runs within one output row */
            size_t oy = c0 / j->ow, ox = c0 % j->ow;
            if (len > j->ow - ox) len = j->ow - ox;
            xr = j->rows + (n * j->io.groups + gi) * j->ng_floats + oy * j->sh * j->sw * j->J + ox;
        } else if (!j->io.direct)
            rlx_nn_im2col_block(xg, j->io.s, 0, j->io.cig, c0, len, col);
        for (size_t t = 0; t < tiles; t++) {
            size_t rows = mi - t * mr < mr ? mi - t * mr : mr;
            const float *ap = packed ? rlx_cpu_sgemm_pack_a_panel(j->pack, gi, m0 + t * mr) : scratch + t * kt * mr;
            float *y = j->io.y + (row0 + t * mr) * j->io.sp + c0;
            e.res = j->fused && j->io.res ? j->io.res + (y - j->io.y) : NULL;
            e.pf = t == 0 && j->io.direct ? pf_in : 0;
            for (size_t i = 0; i < rows; i++) {
                e.bias[i] = bias ? bias[t * mr + i] : 0.0f;
                e.add_b[i] = e.bias[i] != 0.0f || bias_always;
            }
            if (j->phased) j->strip_o(kt, ap, xr, 0, j->xo, y, j->io.sp, len, rows, &e);
            else if (j->io.direct) j->strip(kt, ap, xg + c0, j->io.sp, NULL, y, j->io.sp, len, rows, &e);
            else j->strip(kt, ap, col, len, NULL, y, j->io.sp, len, rows, &e);
            if (!j->fused)
                rlx_nn_conv_epilogue_block(y, j->io.sp, rows, len, bias ? bias + t * mr : NULL,
                                           j->io.res ? j->io.res + (y - j->io.y) : NULL, &j->io.act);
        }
    }
}

/* The rows of a strip (pw_job.mr) with the process's GEMM kernel. */
static size_t pw_mr(void) {
#if RLX_HAVE_AVX2_BUILD
    if (rlx_cpu_sgemm_kernel_get() == RLX_CPU_SGEMM_AVX512) return 8;
#endif
    return 6;
}

bool rlx_nn_conv_pw_takes_pack(const rlx_nn_conv_io *io, const rlx_cpu_sgemm_pack *pk) {
    return pk && rlx_cpu_sgemm_pack_a_panel(pk, 0, 0) && pk->k == io->kt && pk->lanes == io->cog &&
           pk->groups == io->groups && pk->w == pw_mr();
}

bool rlx_nn_conv_pw_applies(const rlx_nn_conv_io *io) {
    if (g_pw_force == 1 || rlx_cpu_gemm_policy_get() != RLX_CPU_GEMM_POOL) return false;
    if (io->kt < 1 || io->kt > PW_MAX_K) return false;
    if (g_pw_force == 2) return true;
    return pw_by_shape(io->direct, io->res != NULL, io->kt, io->cog, io->sp);
}

rlx_status rlx_nn_conv_pw_f32(rlx_cpu_kctx *k, const rlx_nn_conv_io *io, size_t n_ng) {
    pw_job j;
    memset(&j, 0, sizeof j);
    j.io = *io;
    j.fused = io->act.kind == RLX_ACT_NONE || io->act.kind == RLX_ACT_RELU || io->act.kind == RLX_ACT_CLIP;
    j.strip = pw_strip_c, j.strip_o = pw_strip_c, j.mr = 6, j.vec = 16;
#if RLX_HAVE_AVX2_BUILD
    rlx_cpu_sgemm_kernel kern = rlx_cpu_sgemm_kernel_get();
    if (kern == RLX_CPU_SGEMM_AVX512) j.strip = pw_strip_avx512, j.strip_o = pw_strip_avx512_o, j.mr = 8, j.vec = 32;
    else if (kern == RLX_CPU_SGEMM_AVX2) j.strip = pw_strip_avx2, j.strip_o = pw_strip_avx2_o, j.mr = 6, j.vec = 16;
#endif
    /* strided 2-D convolutions read their positions from phase rows built
     * once per call (pw_job), not from an im2col per run (about a fifth of
     * the time of MobileNetV2's stem, 3x3 s2 3->32 on 224x224): the stem
     * 269 -> 243.5 us, at batch 8 2220 -> 2042; ResNet-50's 7x7 s2 stem
     * 2306 -> 2303 (bench/conv_node, caches hot, 1 thread, min of 30, two
     * interleaved rounds); at 2 threads the stem at batch 8 2688 -> 2466
     * us wall (medians; minima 1198 -> 1047), but at batch 1 377 -> 461
     * (the rows' fill is one more hand-over between the threads, over 3
     * channels): with several threads only from 2 (image, group)s per
     * thread (rlx_nn_pw_phase_rows(2): always) */
    const rlx_nn_sp3 *s = io->s;
    size_t threads = (size_t)rlx_parallel_threads();
    if (g_pw_phase && !io->direct && s->in[0] == 1 && s->k[0] == 1 && s->out[0] == 1 && s->pb[0] == 0 &&
        s->s[2] > 1 && (threads == 1 || n_ng >= 2 * threads || g_pw_phase == 2)) {
        j.sw = (size_t)s->s[2], j.sh = (size_t)s->s[1], j.ow = (size_t)s->out[2];
        j.R = ((size_t)s->out[1] - 1) * j.sh + ((size_t)s->k[1] - 1) * (size_t)s->d[1] + 1;
        j.J = j.ow + ((size_t)s->k[2] - 1) * (size_t)s->d[2] / j.sw;
        size_t per_c = j.R * j.sw * j.J, total;
        j.phased = rlx_mul_ok(per_c, io->cig, &j.ng_floats) && j.ng_floats < (size_t)INT32_MAX / 2 &&
                   rlx_mul_ok(j.ng_floats, n_ng, &total) && total <= ((size_t)1 << 26);
    }
    /* the weights packed at compile time when they have this kernel's
     * panels (else each block packs its rows into its scratch) */
    const rlx_cpu_sgemm_pack *pk = k->pack;
    if (rlx_nn_conv_pw_takes_pack(&j.io, pk)) j.pack = pk; /* (j.mr is pw_mr()) */
    j.run = (j.io.direct ? PW_RUN_FLOATS : PW_COL_FLOATS) / j.io.kt / j.vec * j.vec;
    if (j.run < j.vec) j.run = j.vec;
    /* a 2-D split as the GEMM path's, its a_cost the weight panels a
     * block packs (none when packed at compile time), b_cost its im2col
     * (none when B is the input itself) */
    rlx_cpu_split2d_req q = { n_ng, j.io.cog, j.io.sp, j.io.kt, j.mr, j.vec, 0, j.pack ? 0.0 : 2.0 * (double)j.io.kt,
                              j.io.direct || j.phased ? 0.0 : 4.0 * (double)j.io.kt,
                              (size_t)rlx_parallel_threads(), 0.0, 0 };
    q.min_tasks = rlx_nn_conv_min_tasks((double)n_ng * (double)j.io.cog * (double)j.io.sp * (double)j.io.kt, q.threads);
    rlx_cpu_split2d sp2 = rlx_cpu_split2d_choose(&q);
    j.n_cb = sp2.n_blocks;
    j.n_mb = sp2.m_blocks;
    size_t rows_max = ((j.io.cog + j.n_mb - 1) / j.n_mb + j.mr - 1) / j.mr * j.mr + j.mr, slot = 0, col = 0;
    if (!rlx_mul_ok(rows_max, j.io.kt, &j.w_floats) ||
        (!j.io.direct && !j.phased && !rlx_mul_ok(j.run, j.io.kt, &col)) ||
        j.w_floats > SIZE_MAX / 8 || col > SIZE_MAX / 8)
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "pointwise scratch of %zu x %zu too large", rows_max, j.io.kt);
    if (j.pack) j.w_floats = 0;
    slot = j.w_floats + col;
    atomic_fetch_add(&g_pw_runs, 1);
    if (!j.phased) return rlx_nn_run_items(k, n_ng * j.n_cb * j.n_mb, slot, pw_item, &j);
    /* the phase rows and the offsets, in the calling thread's CALL buffer
     * (or one block for the call) */
    size_t n_rows = j.ng_floats * n_ng, bytes = n_rows * sizeof(float) + j.io.kt * sizeof(int32_t);
    float *own = NULL;
    if (!(j.rows = rlx_scratch_get(RLX_SCRATCH_CALL, bytes)) && !(j.rows = own = malloc(bytes)))
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (%zu-float phase rows)", n_rows);
    int32_t *xo = (int32_t *)(j.rows + n_rows);
    size_t kh = (size_t)s->k[1], kw = (size_t)s->k[2], dh = (size_t)s->d[1], dw = (size_t)s->d[2], p = 0;
    for (size_t c = 0; c < j.io.cig; c++) /* k = (c kh + a) kw + b: im2col's order */
        for (size_t a = 0; a < kh; a++)
            for (size_t b = 0; b < kw; b++, p++)
                xo[p] = (int32_t)(((c * j.R + a * dh) * j.sw + b * dw % j.sw) * j.J + b * dw / j.sw);
    j.xo = xo;
    rlx_parallel_for(n_ng * j.io.cig, 1 + 16384 / (j.R * j.sw * j.J + 1), pw_phase_fill, &j);
    rlx_status st = rlx_nn_run_items(k, n_ng * j.n_cb * j.n_mb, slot, pw_item, &j);
    atomic_fetch_add(&g_pw_phase_runs, 1);
    free(own);
    return st;
}
