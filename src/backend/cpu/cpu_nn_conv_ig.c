/* The implicit-GEMM path of Conv (f32, policy "pool", the AVX-512 sgemm
 * kernel, weights packed at compile time; 1-D and 2-D, any kernel,
 * stride, dilation and pads; which shapes take it: ig_by_shape).
 *
 * Why: im2col + GEMM writes every input value kernel-size times into a
 * column matrix, then copies the columns again into the GEMM's B panels;
 * for ResNet-50's 3x3 convolutions at 1 thread that copying (and the
 * edge tiles of 7- and 14-wide maps) cost about a third of the time
 * around a micro-kernel at ~75% of peak (BENCHMARKS.md, "CPU ResNet-50").
 * Here the input is copied once per (image, group) into zero-padded planes
 * split by stride phase, xs[c][a][b][i][j] = padded[i * sh + a][j * sw + b]
 * (hq x wq each; stride 1: one plane, the padded input), so that for every
 * kernel tap the inputs of consecutive output positions are consecutive
 * floats: with positions numbered q = oh * wq + ow over rows of wq (the
 * columns ow >= OW are computed and dropped), B[k][q] = xs[koff[k] + q],
 * koff[k] the tap's offset (channel, phase plane, row and column shift).
 * The micro-kernel is an 8 x 48 tile (24 accumulators; 8 x 32 and 8 x 16
 * for a block's last positions) with B's vectors loaded from xb + koff[p]
 * instead of a packed panel; A is the sgemm's packed weights
 * (rlx_cpu_sgemm_pack_a_block). No im2col, no B packing, and the short
 * rows of small maps share whole tiles over the flat positions (7x7: 63
 * positions, tiles of 48 and 16; im2col + GEMM: 49 columns, 2 tiles of 32).
 *
 * The arithmetic is the sgemm's (cpu_sgemm.h): each sum takes its k
 * products in order from 0 by fused multiply-adds, cut into panels of
 * RLX_CPU_SGEMM_KC steps, a later panel's sum added to the earlier ones';
 * then the GEMM path's epilogue (rlx_nn_conv_epilogue_block). So the same
 * bits as im2col + GEMM, at any split and thread count
 * (tests/test_cpu_conv_fast.c compares them bit for bit).
 *
 * A task (image and group, block of positions in whole tiles, block of
 * output channels in whole panels of 8) computes its block into its
 * scratch, k panel by k panel; per k panel, a group of tiles of
 * positions at a time against every weight panel (the panel, 8 KiB, and
 * the group's inputs stay in L1: 2 tiles at stride 1, ~28 channels x 3
 * rows; 1 at larger strides, whose taps read 4 or more planes), then
 * copies the valid columns of each output row into y and runs the
 * epilogue over them. */
#include <stdatomic.h>
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

#define IG_MR 8
#define IG_NR 48
/* a task's output block (rows x positions) at most this many floats
 * (256 KiB, in L2; read and written once per k panel) */
#define IG_C_FLOATS 65536
/* the padded inputs of a batch at most this many floats at a time (a
 * scratch slot's limit, RLX_SCRATCH_MAX_BYTES) */
#define IG_XS_FLOATS (RLX_SCRATCH_MAX_BYTES / sizeof(float))

static int g_ig_force; /* rlx_nn_ig_force: 0 by shape, 1 never, 2 wherever it applies */
static atomic_size_t g_ig_runs;

void rlx_nn_ig_force(int path) { g_ig_force = path; }

size_t rlx_nn_ig_runs(void) { return atomic_load(&g_ig_runs); }

#if RLX_HAVE_AVX2_BUILD
/* C[8][16 NV] (row stride ldc) = the kc-step sums of ap (kc x 8 packed
 * weights) times B[p][0 .. 16 NV - 1] = xb[off[p] + 0 .. 16 NV - 1]: one
 * fused multiply-add chain per element from 0, then stored (first panel:
 * c = sum) or added (later panels: c = c + sum), as the sgemm kernel's
 * UPD_SET / UPD_ACC with alpha 1 (1 * s is s; fma(1, s, c) rounds as
 * c + s). NV = 3 (8 x 48: 24 accumulators, 3 loads of B and 8 broadcasts
 * per 24 fused multiply-adds) for whole tiles, 2 and 1 for the last. */
#define IG_ST(i, v)                                                                                  \
    {                                                                                                \
        float *r = c + (size_t)(i) * ldc + 16 * (v);                                                 \
        _mm512_storeu_ps(r, add ? _mm512_add_ps(_mm512_loadu_ps(r), c##i##_##v) : c##i##_##v);      \
    }
#define IG_ST1(i) IG_ST(i, 0)
#define IG_ST2(i) IG_ST1(i) IG_ST(i, 1)
#define IG_ST3(i) IG_ST2(i) IG_ST(i, 2)
RLX_NN_K8_KERN(ig_kern3_avx512, 3, 1, IG_ST)
RLX_NN_K8_KERN(ig_kern2_avx512, 2, 1, IG_ST)
RLX_NN_K8_KERN(ig_kern1_avx512, 1, 1, IG_ST)
#endif

typedef struct ig_job {
    rlx_nn_conv_io io;
    const rlx_cpu_sgemm_pack *pack;
    float *xs;        /* [chunk][xs_len]: (image, group)s ng0.. padded into phase planes, then zeros */
    size_t ng0;       /* the chunk's first (image, group) */
    size_t xs_len;    /* floats per (image, group) */
    size_t cs;        /* floats per channel: sh x sw planes of hq x wq */
    size_t hq, wq;    /* a phase plane's rows and columns */
    size_t oh, ow;    /* the output's rows and columns */
    size_t n_pos;     /* positions: oh x wq */
    size_t n_cb, n_mb; /* blocks of positions (whole tiles) and of output channels (panels of 8) */
    size_t tile_run;   /* tiles of positions per weight panel (the file comment) */
    int32_t *koff;    /* [kt] */
} ig_job;

/* Items (image and group, input channel): the channel's phase planes;
 * the last channel also zeroes the tail past the planes. */
static void ig_pad_items(void *ctx, size_t i0, size_t i1) {
    const ig_job *j = ctx;
    const rlx_nn_conv_io *io = &j->io;
    const rlx_nn_sp3 *s = io->s;
    size_t sh = (size_t)s->s[1], sw = (size_t)s->s[2];
    for (size_t it = i0; it < i1; it++) {
        size_t ng = j->ng0 + it / io->cig, c = it % io->cig, n = ng / io->groups, gi = ng % io->groups;
        const float *xc = io->x + (n * io->c_in + gi * io->cig + c) * s->in_sp;
        float *base = j->xs + (it / io->cig) * j->xs_len, *d = base + c * j->cs;
        for (size_t a = 0; a < sh; a++)
            for (size_t b = 0; b < sw; b++)
                for (size_t i = 0; i < j->hq; i++, d += j->wq) {
                    int64_t r = (int64_t)(i * sh + a) - s->pb[1];
                    if (r < 0 || r >= s->in[1]) memset(d, 0, j->wq * sizeof(float));
                    else rlx_nn_gather_run(d, xc + r * s->in[2], s->in[2], (int64_t)b - s->pb[2], (int64_t)sw,
                                           (int64_t)j->wq);
                }
        if (c + 1 == io->cig) {
            size_t used = io->cig * j->cs;
            memset(base + used, 0, (j->xs_len - used) * sizeof(float));
        }
    }
}

/* Task: (image and group, block of positions, block of output channels). */
static void ig_item(void *ctx, size_t item, float *scratch) {
#if RLX_HAVE_AVX2_BUILD
    const ig_job *j = ctx;
    const rlx_nn_conv_io *io = &j->io;
    rlx_nn_conv_block bk;
    item += j->ng0 * j->n_cb * j->n_mb; /* items of the chunk */
    if (!rlx_nn_conv_block_of(item, io->groups, j->n_pos, IG_NR, j->n_cb, io->cog, IG_MR, j->n_mb, &bk)) return;
    size_t tiles = (bk.np + IG_NR - 1) / IG_NR, panels = (bk.mi + IG_MR - 1) / IG_MR, ldc = tiles * IG_NR;
    const float *xb = j->xs + (bk.ng - j->ng0) * j->xs_len + bk.p0;
    for (size_t p0 = 0; p0 < io->kt; p0 += RLX_CPU_SGEMM_KC) {
        size_t kc = io->kt - p0 < RLX_CPU_SGEMM_KC ? io->kt - p0 : RLX_CPU_SGEMM_KC;
        for (size_t t0 = 0; t0 < tiles; t0 += j->tile_run)
            for (size_t r = 0; r < panels; r++) {
                const float *ap = rlx_cpu_sgemm_pack_a_block(j->pack, bk.gi, p0, bk.m0 + r * IG_MR);
                for (size_t t = t0; t < t0 + j->tile_run && t < tiles; t++) {
                    size_t left = bk.np - t * IG_NR;
                    float *c = scratch + r * IG_MR * ldc + t * IG_NR;
                    if (left > 32) ig_kern3_avx512(kc, ap, xb + t * IG_NR, j->koff + p0, c, ldc, p0 > 0, 0);
                    else if (left > 16) ig_kern2_avx512(kc, ap, xb + t * IG_NR, j->koff + p0, c, ldc, p0 > 0, 0);
                    else ig_kern1_avx512(kc, ap, xb + t * IG_NR, j->koff + p0, c, ldc, p0 > 0, 0);
                }
            }
    }
    /* the valid columns of each output row in the block, then the epilogue */
    size_t row0 = bk.n * io->c_out + bk.gi * io->cog + bk.m0, q_end = bk.p0 + bk.np;
    const float *bias = io->b ? io->b + bk.gi * io->cog + bk.m0 : NULL;
    for (size_t i = 0; i < bk.mi; i++) {
        float *yr = io->y + (row0 + i) * io->sp;
        const float *cr = scratch + i * ldc; /* position bk.p0 + t at cr[t] */
        for (size_t q = bk.p0; q < q_end;) {
            size_t orow = q / j->wq, ocol = q % j->wq;
            if (ocol >= j->ow) {
                q = (orow + 1) * j->wq;
                continue;
            }
            size_t len = j->ow - ocol < q_end - q ? j->ow - ocol : q_end - q;
            float *y = yr + orow * j->ow + ocol;
            memcpy(y, cr + (q - bk.p0), len * sizeof(float));
            rlx_nn_conv_epilogue_block(y, len, 1, len, bias ? bias + i : NULL, io->res ? io->res + (y - io->y) : NULL,
                                       &io->act);
            q += len;
        }
    }
#else
    (void)ctx, (void)item, (void)scratch;
#endif
}

/* Whether the implicit GEMM beats im2col + GEMM, by single Conv + Relu
 * nodes (rlx bench, 1 thread, AVX-512, the minimum of 40 runs, 4-6
 * interleaved rounds, 2026-12-03 dev VM at load 3-6; BENCHMARKS.md,
 * "implicit GEMM"), ms GEMM -> implicit: 3x3 stride 1 64->64 at 56x56
 * 3.6 -> 3.0, 128->128 at 28x28 3.7 -> 3.0, 256->256 at 14x14 3.9 -> 3.1,
 * 512->512 at 7x7 5.0 -> 3.8; 3x3 stride 2 512->512 to 7x7 3.95 -> 3.2,
 * the 7x7 stride 2 stem 3->64 to 112x112 3.7 -> 3.5, but 3x3 stride 2
 * 128->128 to 28x28 3.64 / 3.73 and 256->256 to 14x14 3.70 / 3.72 (a
 * k panel's taps read 4 planes of ~28 channels: its inputs no longer stay
 * in L1). So: kernels of more than one tap at stride 1; at larger strides
 * only small outputs (at most 64 positions, where im2col + GEMM's edge
 * tiles waste most) or few input channels (at most 4 per group: stems). */
static bool ig_by_shape(const rlx_nn_conv_io *io) {
    const rlx_nn_sp3 *s = io->s;
    if (s->ksz <= 1) return false;
    if (s->s[1] == 1 && s->s[2] == 1) return true;
    return io->sp <= 64 || io->cig <= 4;
}

bool rlx_nn_conv_ig_applies(const rlx_nn_conv_io *io, const rlx_cpu_sgemm_pack *pk) {
#if RLX_HAVE_AVX2_BUILD
    if (g_ig_force == 1 || rlx_cpu_gemm_policy_get() != RLX_CPU_GEMM_POOL ||
        rlx_cpu_sgemm_kernel_get() != RLX_CPU_SGEMM_AVX512)
        return false;
    const rlx_nn_sp3 *s = io->s;
    if (s->in[0] != 1 || s->out[0] != 1 || s->k[0] != 1 || s->pb[0] != 0 || !io->kt || !io->sp) return false;
    /* the weights packed at compile time, in this kernel's panels */
    if (!pk || !rlx_cpu_sgemm_pack_a_block(pk, 0, 0, 0) || pk->k != io->kt || pk->lanes != io->cog ||
        pk->groups != io->groups || pk->w != IG_MR)
        return false;
    /* the padded planes' offsets fit an int32 (and their size memory) */
    size_t wp = (size_t)((s->out[2] - 1) * s->s[2] + (s->k[2] - 1) * s->d[2] + 1);
    size_t hp = (size_t)((s->out[1] - 1) * s->s[1] + (s->k[1] - 1) * s->d[1] + 1);
    double floats = (double)io->cig * (double)(hp + (size_t)s->s[1]) * (double)(wp + (size_t)s->s[2]) + 4096.0;
    if (floats > (double)INT32_MAX / 2) return false;
    if (g_ig_force == 2) return true;
    return ig_by_shape(io);
#else
    (void)io, (void)pk;
    return false;
#endif
}

rlx_status rlx_nn_conv_ig_f32(rlx_cpu_kctx *k, const rlx_nn_conv_io *io, size_t n_ng) {
    ig_job j;
    memset(&j, 0, sizeof j);
    j.io = *io;
    j.pack = k->pack;
    const rlx_nn_sp3 *s = io->s;
    size_t sh = (size_t)s->s[1], sw = (size_t)s->s[2], dh = (size_t)s->d[1], dw = (size_t)s->d[2];
    size_t kh = (size_t)s->k[1], kw = (size_t)s->k[2];
    j.oh = (size_t)s->out[1], j.ow = (size_t)s->out[2];
    /* padded rows and columns that the taps read, split by phase */
    size_t hp = (j.oh - 1) * sh + (kh - 1) * dh + 1, wp = (j.ow - 1) * sw + (kw - 1) * dw + 1;
    j.hq = (hp + sh - 1) / sh, j.wq = (wp + sw - 1) / sw;
    if (sw == 1 && s->pb[2] > 0) {
        /* rows of wq < wp: a row's right padding is the next row's left
         * padding (a tap past column wq - 1 reads the next row's first
         * columns, which are zeros while wq >= wp - left pad; past the
         * last row of a plane, the next plane's, or the zeroed tail); wq
         * still holds the row's input columns that the taps read and the
         * output's columns. 3x3 pad 1: rows of W + 1, not W + 2 (14x14:
         * 210 positions, not 224). */
        size_t pl = (size_t)s->pb[2], in_end = pl + (size_t)s->in[2], wq = wp - pl;
        if (wq < (in_end < wp ? in_end : wp)) wq = in_end < wp ? in_end : wp;
        if (wq < j.ow) wq = j.ow;
        if (wq < j.wq) j.wq = wq;
    }
    j.cs = sh * sw * j.hq * j.wq;
    j.n_pos = j.oh * j.wq;
    j.tile_run = sh * sw == 1 ? 2 : 1;
    int32_t *koff_own = NULL; /* the calling thread's INDEX buffer, else one block */
    if (!(j.koff = rlx_scratch_get(RLX_SCRATCH_INDEX, io->kt * sizeof(int32_t))) &&
        !(j.koff = koff_own = malloc(io->kt * sizeof(int32_t))))
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (%zu tap offsets)", io->kt);
    size_t max_off = 0, kk = 0;
    for (size_t c = 0; c < io->cig; c++)
        for (size_t a = 0; a < kh; a++)
            for (size_t b = 0; b < kw; b++, kk++) {
                size_t r = a * dh, col = b * dw;
                size_t off = c * j.cs + ((r % sh) * sw + col % sw) * j.hq * j.wq + (r / sh) * j.wq + col / sw;
                j.koff[kk] = (int32_t)off;
                if (off > max_off) max_off = off;
            }
    /* a tile reads up to IG_NR - 1 positions past the last one */
    j.xs_len = max_off + j.n_pos + IG_NR;
    if (j.xs_len < io->cig * j.cs) j.xs_len = io->cig * j.cs;
    j.xs_len = (j.xs_len + 15) / 16 * 16;
    /* a 2-D split as the GEMM path's: every block streams its rows of the
     * packed weights (6 k per row) and reads its positions' inputs */
    size_t cog8 = (io->cog + IG_MR - 1) / IG_MR * IG_MR, max_n = IG_C_FLOATS / cog8 / IG_NR * IG_NR;
    if (max_n < 4 * IG_NR) max_n = 4 * IG_NR;
    rlx_cpu_split2d_req q = { n_ng, io->cog, j.n_pos, io->kt, IG_MR, IG_NR, max_n, 6.0 * (double)io->kt,
                              2.0 * (double)io->kt, (size_t)rlx_parallel_threads(), 0.0, 0 };
    q.min_tasks = rlx_nn_conv_min_tasks((double)n_ng * (double)io->cog * (double)io->sp * (double)io->kt, q.threads);
    rlx_cpu_split2d sp2 = rlx_cpu_split2d_choose(&q);
    j.n_cb = sp2.n_blocks, j.n_mb = sp2.m_blocks;
    size_t b0, np, m_len;
    rlx_cpu_block_range(j.n_pos, IG_NR, j.n_cb, 0, &b0, &np);
    rlx_cpu_block_range(io->cog, IG_MR, j.n_mb, 0, &b0, &m_len);
    size_t slot = ((m_len + IG_MR - 1) / IG_MR * IG_MR) * ((np + IG_NR - 1) / IG_NR * IG_NR);
    /* (image, group)s padded at a time: within IG_XS_FLOATS (at least
     * one); one at a time when forced (tests: the chunks' offsets) */
    size_t per = IG_XS_FLOATS / j.xs_len, total;
    if (per < 1 || g_ig_force == 2) per = 1;
    if (per > n_ng) per = n_ng;
    if (!rlx_mul_ok(per, j.xs_len, &total) || total > SIZE_MAX / sizeof(float) - 16) {
        free(koff_own);
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "padded input of %zu floats too large", j.xs_len);
    }
    /* the calling thread's scratch when it fits there, else one block for the call */
    float *own = NULL;
    if (!(j.xs = rlx_scratch_get(RLX_SCRATCH_CALL, total * sizeof(float))) &&
        !(j.xs = own = malloc((total + 16) * sizeof(float)))) {
        free(koff_own);
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (padded input of %zu floats)", total);
    }
    rlx_status st = RLX_OK;
    for (j.ng0 = 0; j.ng0 < n_ng && st == RLX_OK; j.ng0 += per) {
        size_t cnt = n_ng - j.ng0 < per ? n_ng - j.ng0 : per;
        rlx_parallel_for(cnt * io->cig, 1 + 16384 / (j.cs + 1), ig_pad_items, &j);
        st = rlx_nn_run_items(k, cnt * j.n_cb * j.n_mb, slot, ig_item, &j);
    }
    free(own);
    free(koff_own);
    atomic_fetch_add(&g_ig_runs, 1);
    return st;
}
