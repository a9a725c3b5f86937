/* The Winograd path of Conv: F(2x2, 3x3) and F(4x4, 3x3) (Lavin and
 * Gray, "Fast Algorithms for Convolutional Neural Networks", 2015) for
 * 2-D 3x3 convolutions at stride 1, dilation 1, one group, f32, with the
 * AVX-512 sgemm kernel and policy "pool"; which shapes take it and which
 * of the two: wino_by_shape (F(4x4), only under cpu.winograd_f4x4=1) and
 * wino2_by_shape (F(2x2), the default); from 8 threads neither for 32
 * input channels or fewer, or 64 over several images (rlx_nn_wino_wanted). F(4x4) is not the default: its
 * rounding error follows the largest input of each 6x6 tile, so one
 * outlier activation (1e4 among values of 1) gave errors of 4e-4 to 6e-4
 * of the sum of |products| on outputs of its tile that never read it,
 * and heavy-tailed inputs (x exp(N(0, 2))) up to 3.9e-4, where F(2x2)
 * stays at 1e-5 (a tester's differential runs against onnxruntime,
 * 2026-12-05).
 *
 * Why: VGG-19's and ResNet-50's 3x3 convolutions ran on the implicit GEMM
 * (cpu_nn_conv_ig.c) at 50-57 GMAC/s per core, 86-97% of this VM's f32
 * peak (117 GFLOP/s measured with 12 independent chains of AVX-512
 * FMAs), and onnxruntime's at 50-59: no register tile gains more than a
 * few per cent there. F(2x2, 3x3) computes a 2x2 block of outputs from a 4x4
 * block of inputs with 16 multiplications per (input, output channel)
 * pair instead of 36.
 *
 * Per output tile (ty, tx) (rows 2ty, 2ty + 1, columns 2tx, 2tx + 1) and
 * channel pair: V = B^T d B (d the 4x4 padded inputs from row 2ty and
 * column 2tx), U = G g G^T (g the 3x3 weights; at compile time,
 * rlx_nn_wino_pack), M = sum over input channels of U (.) V (16
 * independent GEMMs [c_out, c_in] x [c_in, tiles], one per element e of
 * the 4x4), Y = A^T M A, with
 *   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],
 *   G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1],
 *   A^T = [1 1 1 0; 0 1 -1 -1].
 * The transforms only add and halve (exact scalings), so the result is
 * the convolution up to rounding; it is not the im2col + GEMM path's bits
 * (DESIGN.md's bit contract is between the direct kernel and im2col +
 * GEMM; this is a fast path with a tolerance, as the others that change
 * the order of the sums): tests/test_cpu_conv_fast.c compares it with the
 * reference at 1e-5 relative + 2e-6 absolute per product of the sum and
 * prints its largest error against the reference beside the GEMM path's
 * (about the same: 0.026 and 0.034 of that absolute term).
 *
 * F(4x4, 3x3) computes a 4x4 block of outputs from a 6x6 block of inputs
 * (rows 4ty .., columns 4tx ..) with 36 multiplications per channel pair
 * for 144 (0.56 of F(2x2)'s 64 for the same 16 outputs), with the points
 * 0, 1, -1, 2, -2 and infinity (the Toom-Cook matrices of Lavin and Gray):
 *   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0;
 *          0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1],
 *   G   = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6;
 *          1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1],
 *   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1].
 * Why these points: pairs +-a let B^T and A^T share sums (rows 1 and 2,
 * 3 and 4 of B^T from two sums each; A^T from m1 +- m2 and m3 +- m4), and
 * their entries stay at most 5 and 8. A float32 simulation of 64-channel
 * sums of products of values in [-1, 1] (numpy, Toom-Cook matrices
 * built for each set, 150 tiles) gave largest / mean errors of 1.4e-4 /
 * 4.0e-5 for these points, 1.9e-4 / 3.8e-5 for 0, +-1, +-1/2, and
 * 3.9e-5 / 2.0e-5 for 0, +-1, 1/2, -2 (not symmetric: more transform
 * operations; not taken, a possible refinement). U (G's sixths and
 * twenty-fourths, not exact in binary) is computed in double and rounded
 * once. The transforms scale by up to
 * 10 per dimension with cancellation, so the rounding error is larger
 * than F(2x2)'s: tests/test_cpu_conv_fast.c holds it to 1e-5 relative +
 * 8e-6 absolute per product of the sum (4 times F(2x2)'s term; its
 * largest error there, 0.48 of F(2x2)'s term, is 0.12 of its own, 16 times
 * F(2x2)'s and 14 times the GEMM path's), and whole models stay as close
 * to onnxruntime as before (BENCHMARKS.md: normwise 4.0e-7 on ResNet-50
 * with random weights against 3.7e-7 with F(2x2) and 3.9e-7 without
 * Winograd). Its input is split into four phase planes per row (columns
 * 4j + k, k = 0 .. 3: two rounds of the even / odd split), so tile tx
 * reads P0[tx], P1[tx], P2[tx], P3[tx], P0[tx + 1], P1[tx + 1]; its
 * transforms run on vectors of 16 consecutive tiles of the pass, which
 * may span tile rows and images (wino_segs: tile rows of 7 on 28 x 28
 * maps, 4 on 14 x 14), and its tasks take a block of tiles each when the
 * pass has fewer groups than threads. The rest (passes, tasks, the GEMMs'
 * register tile, the epilogue) is F(2x2)'s with 36 GEMMs for 16.
 *
 * The input of each image is copied once into zero-padded planes whose
 * rows are split into even and odd columns (E[j] = row[2j], O[j] =
 * row[2j + 1]), so that the row transform of the tiles of one tile row
 * is four vector expressions over consecutive tx (E[tx], E[tx + 1],
 * O[tx], O[tx + 1]). The images run in passes of one or more whole
 * images (several on small maps: a pass of about 512 tiles); the tiles of
 * a pass are numbered image by image, row-major within an image. A task
 * (group of 1 to 3 blocks of WN = 48 consecutive tiles of the pass, range
 * of output channels) transforms
 * its tiles' inputs for all input channels into V[block][16][c_in][48]
 * (its scratch), then per group of 64 output channels runs the 16 GEMMs
 * with an 8 x 48 register tile (24 accumulators; each packed panel of U,
 * c_in x 8, streams from memory once and serves every block of the task
 * from L1, V[e] stays in L2) into M[block][16][64][48] and transforms M
 * into the output rows: bias and Relu (or none) in registers, else the
 * GEMM path's epilogue (bias, fused residual, activation:
 * rlx_nn_conv_epilogue_block). Passes run one after the other; output
 * channels are split between tasks only when a pass's groups of tile
 * blocks cannot give each thread one. F(2x2) passes with at most half as
 * many groups as threads, from 3 threads (ResNet-50's 14x14 maps from 3
 * threads, its 28x28 maps from 4) run phased instead (wino_phased): each range would transform
 * the same inputs again.
 *
 * At several threads a call of one pass (batch 1; small batches of small
 * maps) pads nothing up front: each task copies the padded rows its tiles
 * read (the rows of its tile rows, or the whole planes of the images its
 * tiles span) into its own scratch first (wino_pad_task), so the call is
 * one region and no thread reads padded rows another core wrote; the rows
 * shared by neighbouring tasks are copied twice. With the shared planes a
 * thread's tiles read half their padded rows from the other core's cache
 * (the planes were split by channel), which on this VM made the 2-thread
 * speed-up 1.2-1.5x on ResNet-50's 3x3s (BENCHMARKS.md "conv3"). */
#include <float.h>
#include <math.h>
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

#define WN 48  /* tiles per task block: the register tile's width */
#define WMR 8  /* output channels per packed panel: the register tile's height */
#define WCO 64 /* output channels per M block */
/* tile blocks per task (the last group also takes the remainder: at most
 * WMAXB): a weight panel streamed from memory serves 96 tiles or more
 * (48 tiles, or a last block of a few alone, made U's traffic the limit:
 * 512 -> 512 channels at 14x14, 49 tiles, ran at 71 GMAC/s) */
#define WGRP 2
#define WMAXB (2 * WGRP - 1)
/* tiles per pass (of whole images; see rlx_nn_conv_wino_f32) and the most
 * floats of padded input a pass holds */
#define WPASS 512
#define WPASS_FLOATS ((size_t)1 << 21)

#define WMAXE 36 /* elements of the largest tile: F(4x4)'s 6 x 6 */

/* rlx_nn_wino_force: 0 by shape, 1 never, 2 F(2x2) and 4 F(4x4) wherever it applies */
static int g_wino_force;
static atomic_size_t g_wino_runs;

void rlx_nn_wino_force(int path) { g_wino_force = path; }

size_t rlx_nn_wino_runs(void) { return atomic_load(&g_wino_runs); }

static atomic_size_t g_wino_phased;

size_t rlx_nn_wino_phased_runs(void) { return atomic_load(&g_wino_phased); }

/* 2-D, 3x3, stride 1, dilation 1, one group, policy "pool", AVX-512. */
static bool wino_geometry(const rlx_nn_sp3 *s, size_t groups) {
    if (g_wino_force == 1 || groups != 1 || rlx_cpu_gemm_policy_get() != RLX_CPU_GEMM_POOL ||
        rlx_cpu_sgemm_kernel_get() != RLX_CPU_SGEMM_AVX512)
        return false;
    if (s->in[0] != 1 || s->out[0] != 1 || s->k[0] != 1 || s->pb[0] != 0 || s->k[1] != 3 || s->k[2] != 3)
        return false;
    return s->s[1] == 1 && s->s[2] == 1 && s->d[1] == 1 && s->d[2] == 1 && s->out[1] > 0 && s->out[2] > 0;
}

/* Where F(2x2, 3x3) beats the implicit GEMM (single Conv + Relu nodes,
 * bench/conv_node with CONV_NODE_HOT=1, 1 thread, 2026-12-05 dev VM at
 * load 6-8, BENCHMARKS.md "Winograd"), ms implicit GEMM (or the
 * channels-in-lanes path, which takes 14x14 and smaller by shape) ->
 * Winograd: 64->64 at 224x224 36.5 -> 22.2, 128->128 at 112x112 34.7 ->
 * 18.6, 256->256 at 56x56 33.4 -> 17.2, 512->512 at 28x28 33.3 -> 18.3,
 * 64->64 at 56x56 2.12 -> 1.34, 32->32 at 56x56 0.56 -> 0.39, 128->32 at
 * 56x56 2.19 -> 1.57, 64->192 at 56x56 6.49 -> 3.50; at 28x28 32->64
 * 0.29 -> 0.23, 64->64 0.53 -> 0.47, 96->128 1.55 -> 0.97, but 128->32
 * 0.57 -> 0.63 (few output channels: the input transform's share); on
 * 14x14 maps (tile rows of 7: the transforms' vectors half empty, 49
 * tiles computed as 64) with many channels: 512->512 8.5 -> 6.6, 256->512
 * 4.20 -> 3.32, 144->288 1.30 -> 1.05, 96->208 0.63 -> 0.59, 256->256
 * 2.10 -> 2.02, 128->256 1.04 -> 1.03, but 128->128 0.52 -> 0.69 and
 * 128->32 0.17 -> 0.28. So: at least 32 input channels and 32 output
 * channels on maps of 56 x 56 or more, 64 output channels from 28 x 28,
 * 96 in and 192 out from 14 x 14. Smaller maps of several images share
 * passes (rlx_nn_conv_wino_f32; same tool, 1 thread, cold caches, load
 * 15-20, ms implicit GEMM or channels-in-lanes -> Winograd): 7 x 7 maps
 * 512->512 at batch 2 4.27 -> 3.80, batch 4 8.38 -> 7.09, batch 8
 * 17.3 -> 13.7 (batch 1, 16 tiles: 2.15 -> 2.19), but 256->256 at batch
 * 8 3.97 -> 4.20 and 128->128 1.05 -> 1.55; 14 x 14 maps 128->128 at
 * batch 8 4.33 -> 3.14. So also: 128 in and out from 14 x 14 with 192
 * tiles or more over the batch, 512 in and out from 7 x 7 with 32 tiles
 * or more (batch 2).
 * By tiles per side (the work is per tile: 55x55 and 56x56 maps are both
 * 28 x 28 tiles, 27x27 and 28x28 both 14 x 14), and from 16 input
 * channels on the large maps (bench/conv_node, caches evicted, 1 thread,
 * thread CPU us, median of 3 rounds, 2026-12-05, BENCHMARKS.md "conv3";
 * implicit GEMM or channels-in-lanes -> F(2x2)): SqueezeNet's 16->64 at
 * 55x55 655 -> 522 and 32->128 at 27x27 593 -> 426, 32->64 at 27x27 312
 * -> 250, 16->16 at 56x56 232 -> 195, 16->32 362 -> 320, 24->24 446 ->
 * 345, 16->64 at 112x112 2575 -> 2056; but 8->16 at 112x112 404 -> 463,
 * 16->32 at 28x28 102 -> 104, 32->32 at 27x27 166 -> 160 (left as they
 * were); at 2 threads (wall, hot) 16->64 at 55x55 314 -> 257, 32->64 at
 * 27x27 141 -> 123. */
static bool wino2_by_shape(const rlx_nn_sp3 *s, size_t n_img, size_t cin, size_t cout) {
    int64_t side = s->out[1] < s->out[2] ? s->out[1] : s->out[2], ts = (side + 1) / 2;
    size_t tiles = (size_t)((s->out[1] + 1) / 2) * (size_t)((s->out[2] + 1) / 2) * (n_img ? n_img : 1);
    if (ts >= 28) return cin >= 16 && cout >= 16;
    if (ts >= 14) return cin >= 32 && cout >= 64;
    if (side >= 14 && cin >= 96 && cout >= 192) return true;
    /* several images' tiles in one pass (rlx_nn_conv_wino_f32) */
    if (side >= 14) return tiles >= 192 && cin >= 128 && cout >= 128;
    return side >= 7 && tiles >= 32 && cin >= 512 && cout >= 512;
}

/* Where F(4x4, 3x3) beats F(2x2) and the implicit GEMM (or the
 * channels-in-lanes path, which takes 13x13 and 14x14 by shape):
 * bench/conv_node, CONV_NODE_HOT=1, 1 thread, median of 3 rounds of 7
 * calls, thread CPU us, 2026-12-05 dev VM at load 9-13, BENCHMARKS.md
 * "Winograd F(4x4, 3x3)"; GEMM -> F(2x2) -> F(4x4): 64->64 at 56x56 2233
 * -> 1523 -> 1266, 16->64 at 55x55 598 -> 508 -> 405, 64->32 at 56x56
 * 1111 -> 950 -> 831, 16->16 at 56x56 221 -> 169 -> 180; at 28x28
 * 128->128 2072 -> 1404 -> 1301, 32->128 at 27x27 512 -> 397 -> 346,
 * 32->64 278 -> 223 -> 223, 128->64 1055 -> 787 ->
 * 773, but 256->64 2153 -> 1571 -> 1717, 128->32 533 -> 528 -> 584,
 * 32->32 141 -> 136 -> 155, 16->32 78 -> 81 -> 89; at 14x14 and 13x13
 * (4 x 4 tiles: 16 per image) 256->256 2041 -> 1616 -> 1218, 128->128
 * 496 -> 464 -> 345, 96->208 607 -> 501 -> 348, 48->192 252 -> 270 ->
 * 175, 64->256 439 -> 450 -> 285, but 64->64 131 -> 160 -> 132, 32->64 61
 * -> 84 -> 66; at 7x7 (4 tiles per image) batch 4 256->256 2010 -> 1878
 * -> 1490, 512->512 8692 -> 6600 -> 5330, but batch 1 512->512 2186 ->
 * 2026 -> 4455 and batch 2 4267 -> 3644 -> 4951. So F(4x4) from 16 input
 * channels with at least half as many outputs: on maps of 48 or more from
 * 16 outputs, from 24 with 32 inputs and 64 outputs, from 13 with c_in x
 * c_out >= 8192, from 7 with 16 tiles over the batch and 256 channels in
 * and out; else F(2x2)'s rule. Its tiles of 16 outputs do 36 products
 * where F(2x2)'s four tiles do 64 (0.56 of the multiplications); small
 * maps lose on the tiles past the map's edge (7x7: 8x8 computed). At 2
 * threads the VM's measurements (wall time under chrt) varied too much
 * to move the rule (BENCHMARKS.md). */
static int wino_by_shape(const rlx_nn_sp3 *s, size_t n_img, size_t cin, size_t cout) {
    int64_t side = s->out[1] < s->out[2] ? s->out[1] : s->out[2];
    size_t tiles4 = (size_t)((s->out[1] + 3) / 4) * (size_t)((s->out[2] + 3) / 4) * (n_img ? n_img : 1);
    if (cin >= 16 && 2 * cout >= cin) {
        if (side >= 48 && cout >= 16) return 4;
        if (side >= 24 && cin >= 32 && cout >= 64) return 4;
        if (side >= 13 && cin * cout >= 8192) return 4;
        if (side >= 7 && tiles4 >= 16 && cin >= 256 && cout >= 256) return 4;
    }
    return wino2_by_shape(s, n_img, cin, cout) ? 2 : 0;
}

int rlx_nn_wino_wanted(const rlx_nn_sp3 *s, size_t n_img, size_t groups, size_t cin, size_t cout, int max_m) {
#if RLX_HAVE_AVX2_BUILD
    /* a task's scratch, WMAXB x (m + 2)^2 x (c_in + 64) x 48 floats, within
     * 16 MiB: F(2x2) to 1024 input channels, F(4x4) to 512 */
    if (!wino_geometry(s, groups) || !cin || !cout || cin > 1024) return 0;
    if (g_wino_force == 2 || g_wino_force == 4) return g_wino_force == 4 && cin <= 512 ? 4 : 2;
    /* From 8 threads, 32 input channels or fewer, or 64 or fewer over
     * several images: the implicit GEMM. Single nodes on the H100
     * machine's 16-core host (bench/conv_node min / median us, 2026-12-07,
     * BENCHMARKS.md; Winograd by shape -> the implicit GEMM): 64->64 at
     * 56x56, 16 threads, batch 1 249 / 276 -> 196 / 270, batch 2 496 / 578
     * -> 367 / 452, batch 4 982 / 1130 -> 754 / 880, batch 8 2086 / 2258 ->
     * 1484 / 1836; at 8 threads batch 2 621 -> 551, batch 8 2220 -> 2087;
     * at 4 threads Winograd still wins (578 / 517 against 798 / 709 at
     * batch 1); 128->128 at 28x28 stays Winograd's (16 threads, batch 1
     * 192 / 202 -> 207 / 253). In whole models at 16 threads (three
     * passes, base / new) SqueezeNet (16 and 32 input channels) gained
     * 1.01-1.12x and ResNet-50 batch 8 1.01-1.02x, but ResNet-50 batch 1
     * lost 1-5% with its 64-channel 56x56 maps off Winograd: one image
     * of them keeps it. */
    if (rlx_parallel_threads() >= 8 && (cin <= 32 || (cin <= 64 && n_img >= 2))) return 0;
    int wm = max_m >= 4 ? wino_by_shape(s, n_img, cin, cout) : wino2_by_shape(s, n_img, cin, cout) ? 2 : 0;
    return wm == 4 && cin > 512 ? 2 : wm;
#else
    (void)s, (void)n_img, (void)groups, (void)cin, (void)cout, (void)max_m;
    return 0;
#endif
}

/* Whether every value of v[0 .. n) is finite and below lim in magnitude.
 * Winograd's transforms add and subtract up to four inputs or weights
 * before and after the products: an inf becomes inf - inf = NaN where the
 * direct sum is inf, a weight's inf meets G's zeros (0 * inf), and large
 * values overflow where the direct sum does not (rlx_nn_wino_xlim). */
bool rlx_nn_wino_tame(const float *v, size_t n, float lim) {
    int bad = 0;
    for (size_t i = 0; i < n; i++) bad |= !(fabsf(v[i]) < lim);
    return !bad;
}

/* The bound on inputs for weights w[0 .. n) (see cpu_nn.h). What can
 * overflow is a product and the sums after it, not an input or a weight
 * alone: inputs and weights of 1.5e19 (both below the 2^64 that each was
 * held to before) have products of 2.25e38, finite in a direct sum that
 * meets one of them, while F(2x2)'s M took four times that (inf; a
 * tester's repro, tests/test_cpu_conv_fast.c). With X and W the largest
 * input and weight: B^T's rows add at most 2 (F(2x2)) or 10 (F(4x4))
 * times the largest value, so |V| <= 4 X or 100 X; G's rows 1.5 or 1,
 * so |U| <= 2.25 W or W; M sums cin products; A^T's rows add at most 3
 * or 19 times the largest M, so every value and partial sum of the path
 * stays below 81 or 36100 cin X W (a partial sum is bounded by the sum of
 * its terms' magnitudes). Inputs below FLT_MAX / (2^8 x that factor x cin
 * x W) leave 2^8 for rounding and the bias and residual added after; the
 * bound is also at most 2^64, so that V stays finite whatever W is.
 * Normal data is far inside it: weights of 10 at 512 input channels on
 * F(4x4) give 7e24, so inputs up to the 2^64 cap. */
float rlx_nn_wino_xlim(int m, size_t cin, const float *w, size_t n) {
    float wmax = 0.0f;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        float a = fabsf(w[i]);
        bad |= !(a < 0x1p64f);
        wmax = a > wmax ? a : wmax;
    }
    if (bad) return 0.0f;
    double f = (m == 4 ? 36100.0 : 81.0) * (double)(cin ? cin : 1) * 256.0, lim = 0x1p64;
    if (wmax > 0.0f && (double)FLT_MAX / (f * (double)wmax) < lim) lim = (double)FLT_MAX / (f * (double)wmax);
    return (float)lim;
}

/* G of F(2x2, 3x3) and of F(4x4, 3x3) (see the file's comment). */
static const double k_g2[4][3] = { { 1, 0, 0 }, { 0.5, 0.5, 0.5 }, { 0.5, -0.5, 0.5 }, { 0, 0, 1 } };
static const double k_g4[6][3] = { { 0.25, 0, 0 },
                                   { -1.0 / 6, -1.0 / 6, -1.0 / 6 },
                                   { -1.0 / 6, 1.0 / 6, -1.0 / 6 },
                                   { 1.0 / 24, 1.0 / 12, 1.0 / 6 },
                                   { 1.0 / 24, -1.0 / 12, 1.0 / 6 },
                                   { 0, 0, 1 } };

rlx_status rlx_nn_wino_pack(int m, size_t cout, size_t cin, const float *w, float **out) {
    size_t panels = (cout + WMR - 1) / WMR, n, a = (size_t)m + 2, ne = a * a;
    const double(*gm)[3] = m == 4 ? k_g4 : k_g2;
    *out = NULL;
    if ((m != 2 && m != 4) || !rlx_mul_ok(ne * panels * WMR, cin, &n) || n > SIZE_MAX / sizeof(float))
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "Winograd F(%dx%d) weights of %zu x %zu too large", m, m, cout, cin);
    float *u = calloc(n ? n : 1, sizeof(float));
    if (!u) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (Winograd weights, %zu floats)", n);
    for (size_t co = 0; co < cout; co++)
        for (size_t ci = 0; ci < cin; ci++) {
            const float *g = w + (co * cin + ci) * 9;
            double t[6][3]; /* G g, in double: U rounds once */
            for (size_t i = 0; i < a; i++)
                for (int c = 0; c < 3; c++) t[i][c] = gm[i][0] * g[c] + gm[i][1] * g[3 + c] + gm[i][2] * g[6 + c];
            for (size_t i = 0; i < a; i++)
                for (size_t kk = 0; kk < a; kk++) {
                    size_t e = i * a + kk;
                    double v = t[i][0] * gm[kk][0] + t[i][1] * gm[kk][1] + t[i][2] * gm[kk][2];
                    u[((e * panels + co / WMR) * cin + ci) * WMR + co % WMR] = (float)v;
                }
        }
    *out = u;
    return RLX_OK;
}

bool rlx_nn_conv_wino_applies(const rlx_nn_conv_io *io, const rlx_cpu_sgemm_pack *pk) {
    if (!pk || !pk->wino || pk->wino_cout != io->cog || pk->wino_cin != io->cig ||
        (pk->wino_m != 2 && pk->wino_m != 4))
        return false;
    return wino_geometry(io->s, io->groups);
}

typedef struct wino_job {
    rlx_nn_conv_io io;
    size_t m, ne;   /* outputs per tile side (2 or 4); elements per tile, (m + 2)^2 */
    const float *u; /* [ne][panels][c_in][WMR] */
    float *xs;      /* the pass's padded planes: [image][c_in][hp][m rw] */
    size_t n0, ni;  /* the pass: images [n0, n0 + ni) */
    size_t oh, ow, th, tw, tiles; /* output rows and columns; tile rows, columns and count per image */
    size_t pt;      /* the pass's tiles (ni x tiles; tile t of the pass: image t / tiles) */
    size_t hp, rw;  /* padded rows; columns of each phase (column mod m) per padded row */
    size_t ph[4];   /* where phase k of a padded row starts in it (F(4x4): 0, 2 rw, rw, 3 rw) */
    size_t n_tb, n_grp;        /* tile blocks, and groups of them (WGRP, at most WMAXB - 1 more) */
    size_t n_cr, cr_len;       /* ranges of output channels and their length */
    bool check;                /* the padding checks what it copies (rlx_nn_wino_tame) */
    float xlim;                /* with check: the bound it checks against (the pack's wino_xlim) */
    atomic_int wild;           /* with check: a value it refuses was seen */
    bool priv;                 /* each task pads the rows its tiles read into its scratch (no xs) */
    size_t xp_floats;          /* with priv: the most floats of padded rows a task holds */
    /* phased (wino_phased): V of every block of the pass, [block][e][c_in][WN],
     * and M, [block][group of WCO outputs][e][WCO][WN]; the items of each phase:
     * input channels per transform item, panels per product item, outputs per
     * output item */
    float *va, *ma;
    size_t cc_len, n_cc, pc_len, n_pc, oc_len, n_oc;
} wino_job;

/* Where a task reads its padded rows: images [ilo, ..) of the pass, each
 * c_in planes of ps floats that start at padded row rlo (the pass's xs:
 * ilo = rlo = 0, ps = hp x m x rw). */
typedef struct wino_view {
    const float *xs;
    size_t ilo, rlo, ps;
} wino_view;

/* d[0 .. rw) = line[0, 2, ..], d[rw .. 2 rw) = line[1, 3, ..] (line
 * readable 32 floats past 2 rw). */
#if RLX_HAVE_AVX2_BUILD
__attribute__((target("avx512f"))) static void wino_split(const float *line, size_t rw, float *d) {
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i od = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    for (size_t i = 0; i < rw; i += 16) {
        __mmask16 mk = rw - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (rw - i)) - 1);
        __m512 u = _mm512_loadu_ps(line + 2 * i), v = _mm512_loadu_ps(line + 2 * i + 16);
        _mm512_mask_storeu_ps(d + i, mk, _mm512_permutex2var_ps(u, ev, v));
        _mm512_mask_storeu_ps(d + rw + i, mk, _mm512_permutex2var_ps(u, od, v));
    }
}
#else
static void wino_split(const float *line, size_t rw, float *d) {
    for (size_t i = 0; i < rw; i++) d[i] = line[2 * i], d[rw + i] = line[2 * i + 1];
}
#endif

/* Padded rows [r0, r1) of plane c of the pass (image c / c_in, channel
 * c % c_in) into d[0 .. (r1 - r0) m rw): each row through a zero-padded line (line: 2 n2 + 64 floats,
 * or NULL: element by element), then split into even and odd columns; for
 * F(4x4) each of those again (phases 0, 2, then 1, 3: j->ph). With
 * j->check, the input values copied are checked (rlx_nn_wino_tame). */
static void wino_pad_rows(wino_job *j, size_t c, size_t r0, size_t r1, float *d, float *line) {
    const rlx_nn_sp3 *s = j->io.s;
    int64_t h = s->in[1], w = s->in[2], pt = s->pb[1], pl = s->pb[2];
    size_t n2 = j->m * j->rw;
    /* the input columns that land in [0, n2) */
    int64_t a = pl > 0 ? 0 : -pl, b = w < (int64_t)n2 - pl ? w : (int64_t)n2 - pl;
    const float *xc = j->io.x + (j->n0 * j->io.c_in + c) * s->in_sp;
    bool wild = false;
    for (size_t r = r0; r < r1; r++, d += n2) {
        int64_t ir = (int64_t)r - pt;
        if (ir < 0 || ir >= h || a >= b) {
            memset(d, 0, n2 * sizeof(float));
            continue;
        }
        const float *xr = xc + ir * w;
        if (j->check) wild |= !rlx_nn_wino_tame(xr + a, (size_t)(b - a), j->xlim);
        if (!line) { /* no scratch: element by element */
            for (size_t q = 0; q < n2; q++) {
                int64_t ic = (int64_t)q - pl;
                d[j->ph[q % j->m] + q / j->m] = ic >= 0 && ic < w ? xr[ic] : 0.0f;
            }
            continue;
        }
        memset(line, 0, (2 * n2 + 64) * sizeof(float));
        memcpy(line + (a + pl), xr + a, (size_t)(b - a) * sizeof(float));
        if (j->m == 2) {
            wino_split(line, j->rw, d);
            continue;
        }
        float *eo = line + n2 + 32; /* even columns, then odd ones */
        wino_split(line, 2 * j->rw, eo);
        wino_split(eo, j->rw, d);
        wino_split(eo + 2 * j->rw, j->rw, d + 2 * j->rw);
    }
    if (wild) atomic_store(&j->wild, 1);
}

/* Items: (image of the pass, input channel) pairs, each into its padded
 * planes (wino_pad_rows). */
static void wino_pad_items(void *ctx, size_t c0, size_t c1) {
    wino_job *j = ctx;
    float *line = rlx_scratch_get(RLX_SCRATCH_TASK, (2 * j->m * j->rw + 64) * sizeof(float));
    for (size_t c = c0; c < c1; c++) wino_pad_rows(j, c, 0, j->hp, j->xs + c * j->hp * j->m * j->rw, line);
}

#if RLX_HAVE_AVX2_BUILD
/* C[8][16 NV] (row stride ldc) = the kc-step sums of ap (kc x 8 packed)
 * times B[p][0 .. 16 NV - 1] = b[p * ldb + ...]. */
#define WK_ST1(i) _mm512_storeu_ps(c + (size_t)(i) * ldc, c##i##_0);
#define WK_ST2(i) WK_ST1(i) _mm512_storeu_ps(c + (size_t)(i) * ldc + 16, c##i##_1);
#define WK_ST3(i) WK_ST2(i) _mm512_storeu_ps(c + (size_t)(i) * ldc + 32, c##i##_2);
RLX_NN_K8_KERN(wino_kern3, 3, 0, WK_ST)
RLX_NN_K8_KERN(wino_kern2, 2, 0, WK_ST)
RLX_NN_K8_KERN(wino_kern1, 1, 0, WK_ST)

/* M rows c (8 x WN, row stride WN) = panel ap (cin x 8) times V b (cin x
 * WN) over the nt tiles of a block: the kernel of 16, 32 or 48 columns. */
static void wino_kern(size_t nt, size_t cin, const float *ap, const float *b, float *c) {
    if (nt > 32) wino_kern3(cin, ap, b, NULL, c, WN, false, WN);
    else if (nt > 16) wino_kern2(cin, ap, b, NULL, c, WN, false, WN);
    else wino_kern1(cin, ap, b, NULL, c, WN, false, WN);
}

/* V[e][c][t - t0] (row stride WN per channel, c_in * WN per e) of the
 * pass's tiles [t0, t0 + nt) for the input channels [c0, c1); zeros for t
 * up to WN. A run of tiles ends at the end of its tile row (of its image).
 * F(2x2): rows 2ty .. 2ty + 3 of the even and odd planes. */
__attribute__((target("avx512f"))) static void wino_in2(const wino_job *j, const wino_view *xv, size_t t0, size_t nt,
                                                        size_t c0, size_t c1, float *v) {
    size_t cin = j->io.cig, es = cin * WN, ps = xv->ps, rs = 2 * j->rw;
    for (size_t c = c0; c < c1; c++) {
        float *vc = v + c * WN;
        for (size_t t = t0; t < t0 + nt;) {
            size_t img = t / j->tiles, lt = t % j->tiles, ty = lt / j->tw, tx0 = lt % j->tw, len = j->tw - tx0;
            if (len > t0 + nt - t) len = t0 + nt - t;
            const float *r0 = xv->xs + ((img - xv->ilo) * cin + c) * ps + (2 * ty - xv->rlo) * rs, *r1 = r0 + rs,
                        *r2 = r1 + rs,
                        *r3 = r2 + rs;
            const float *e0 = r0 + tx0, *e1 = r1 + tx0, *e2 = r2 + tx0, *e3 = r3 + tx0;
            const float *o0 = e0 + j->rw, *o1 = e1 + j->rw, *o2 = e2 + j->rw, *o3 = e3 + j->rw;
            float *d = vc + (t - t0);
            for (size_t i = 0; i < len; i += 16) {
                __mmask16 mk = len - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (len - i)) - 1);
                /* row transforms a<row><k> of rows 2ty .. 2ty + 3 */
#define WI_ROW(r)                                                                                          \
    __m512 ea##r = _mm512_maskz_loadu_ps(mk, e##r + i), eb##r = _mm512_maskz_loadu_ps(mk, e##r + i + 1); \
    __m512 oa##r = _mm512_maskz_loadu_ps(mk, o##r + i), ob##r = _mm512_maskz_loadu_ps(mk, o##r + i + 1); \
    __m512 a##r##0 = _mm512_sub_ps(ea##r, eb##r), a##r##1 = _mm512_add_ps(oa##r, eb##r);                   \
    __m512 a##r##2 = _mm512_sub_ps(eb##r, oa##r), a##r##3 = _mm512_sub_ps(oa##r, ob##r);
                WI_ROW(0) WI_ROW(1) WI_ROW(2) WI_ROW(3)
#undef WI_ROW
#define WI_ST(e, x) _mm512_mask_storeu_ps(d + (e) * es + i, mk, x);
                WI_ST(0, _mm512_sub_ps(a00, a20)) WI_ST(1, _mm512_sub_ps(a01, a21))
                WI_ST(2, _mm512_sub_ps(a02, a22)) WI_ST(3, _mm512_sub_ps(a03, a23))
                WI_ST(4, _mm512_add_ps(a10, a20)) WI_ST(5, _mm512_add_ps(a11, a21))
                WI_ST(6, _mm512_add_ps(a12, a22)) WI_ST(7, _mm512_add_ps(a13, a23))
                WI_ST(8, _mm512_sub_ps(a20, a10)) WI_ST(9, _mm512_sub_ps(a21, a11))
                WI_ST(10, _mm512_sub_ps(a22, a12)) WI_ST(11, _mm512_sub_ps(a23, a13))
                WI_ST(12, _mm512_sub_ps(a10, a30)) WI_ST(13, _mm512_sub_ps(a11, a31))
                WI_ST(14, _mm512_sub_ps(a12, a32)) WI_ST(15, _mm512_sub_ps(a13, a33))
#undef WI_ST
            }
            t += len;
        }
        if (nt < WN)
            for (size_t e = 0; e < j->ne; e++) memset(vc + e * es + nt, 0, (WN - nt) * sizeof(float));
    }
}

/* o = B^T d of F(4x4, 3x3) over six vectors (the file's comment). */
__attribute__((target("avx512f"), always_inline)) static inline void wino_bt6(const __m512 *d, __m512 *o) {
    const __m512 four = _mm512_set1_ps(4.0f), five = _mm512_set1_ps(5.0f);
    __m512 t0 = _mm512_fnmadd_ps(four, d[2], d[4]), t1 = _mm512_fnmadd_ps(four, d[1], d[3]);
    __m512 t2 = _mm512_sub_ps(d[4], d[2]), t3 = _mm512_sub_ps(d[3], d[1]);
    t3 = _mm512_add_ps(t3, t3);
    o[0] = _mm512_fmadd_ps(four, d[0], _mm512_fnmadd_ps(five, d[2], d[4]));
    o[1] = _mm512_add_ps(t0, t1), o[2] = _mm512_sub_ps(t0, t1);
    o[3] = _mm512_add_ps(t2, t3), o[4] = _mm512_sub_ps(t2, t3);
    o[5] = _mm512_fmadd_ps(four, d[1], _mm512_fnmadd_ps(five, d[3], d[5]));
}

/* The runs of tiles (each inside one tile row of one image) that vectors
 * of 16 consecutive tiles of the pass's [t0, t0 + nt) cover: run r of
 * vector vi = seg[r].vi lies in lanes seg[r].mk, its first tile at
 * (image seg[r].img, tile row seg[r].ty, column seg[r].tx). F(4x4) on
 * small maps (tile rows of 7 on 28 x 28 outputs, 4 on 14 x 14) transforms
 * whole vectors of tiles of several rows, not one row's at a time. */
typedef struct wino_seg {
    size_t vi, lane, len, img, ty, tx;
    __mmask16 mk;
} wino_seg;

static size_t wino_segs(const wino_job *j, size_t t0, size_t nt, wino_seg *seg) {
    size_t ns = 0;
    for (size_t t = t0; t < t0 + nt;) {
        size_t vi = (t - t0) / 16, vend = t0 + 16 * (vi + 1) < t0 + nt ? t0 + 16 * (vi + 1) : t0 + nt;
        size_t img = t / j->tiles, lt = t % j->tiles, ty = lt / j->tw, tx = lt % j->tw, len = j->tw - tx;
        if (len > vend - t) len = vend - t;
        size_t lane = (t - t0) % 16;
        seg[ns++] = (wino_seg){ vi, lane, len, img, ty, tx, (__mmask16)(((1u << len) - 1) << lane) };
        t += len;
    }
    return ns;
}

/* lanes mk of x from p[0 ..] in lane order (lane L of mk from
 * p[L - lane]): a masked load from lane floats before p (an address
 * only: the masked-off lanes are not read, and fault suppression keeps
 * them from faulting) */
#define WSEG_LD(x, sg, p) \
    x = _mm512_mask_loadu_ps(x, (sg)->mk, (const void *)((uintptr_t)(p) - (sg)->lane * sizeof(float)))

/* wino_in2's V for F(4x4): rows 4ty .. 4ty + 5, columns 4tx .. 4tx + 5 of
 * tile tx from the four phase planes (P0[tx], P1[tx], P2[tx], P3[tx],
 * P0[tx + 1], P1[tx + 1]); B^T over each row, then over each column;
 * vectors of 16 consecutive tiles (wino_segs). */
__attribute__((target("avx512f"))) static void wino_in4(const wino_job *j, const wino_view *xv, size_t t0, size_t nt,
                                                        float *v) {
    size_t cin = j->io.cig, es = cin * WN, rs = 4 * j->rw, ps = xv->ps;
    const size_t off[6] = { j->ph[0], j->ph[1], j->ph[2], j->ph[3], j->ph[0] + 1, j->ph[1] + 1 };
    wino_seg seg[WN + 3 * 16];
    size_t ns = wino_segs(j, t0, nt, seg), nv = (nt + 15) / 16;
    for (size_t c = 0; c < cin; c++) {
        float *vc = v + c * WN;
        for (size_t vi = 0, s0 = 0; vi < nv; vi++) {
            size_t s1 = s0;
            while (s1 < ns && seg[s1].vi == vi) s1++;
            __m512 w[36], x[6], o[6];
            for (size_t r = 0; r < 6; r++) { /* w[r][k]: B^T over row r */
                for (size_t q = 0; q < 6; q++) x[q] = _mm512_setzero_ps();
                for (size_t si = s0; si < s1; si++) {
                    const wino_seg *sg = &seg[si];
                    const float *p =
                        xv->xs + ((sg->img - xv->ilo) * cin + c) * ps + (4 * sg->ty + r - xv->rlo) * rs + sg->tx;
                    for (size_t q = 0; q < 6; q++) WSEG_LD(x[q], sg, p + off[q]);
                }
                wino_bt6(x, w + 6 * r);
            }
            float *d = vc + 16 * vi;
            __mmask16 mk = nt - 16 * vi >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (nt - 16 * vi)) - 1);
            for (size_t k = 0; k < 6; k++) { /* V[i][k]: B^T over column k */
                for (size_t r = 0; r < 6; r++) x[r] = w[6 * r + k];
                wino_bt6(x, o);
                for (size_t r = 0; r < 6; r++) _mm512_mask_storeu_ps(d + (6 * r + k) * es, mk, o[r]);
            }
            s0 = s1;
        }
        if (nt < WN)
            for (size_t e = 0; e < j->ne; e++) memset(vc + e * es + nt, 0, (WN - nt) * sizeof(float));
    }
}

/* y[0 .. n) += bias, then max(0, y) with relu (NaN stays NaN). */
__attribute__((target("avx512f"), always_inline)) static inline void wino_bias_relu(__m512 *y, int n, __m512 vb,
                                                                                    bool relu) {
    for (int i = 0; i < n; i++) {
        y[i] = _mm512_add_ps(y[i], vb);
        if (relu) y[i] = _mm512_max_ps(_mm512_setzero_ps(), y[i]);
    }
}

/* Output rows m ty .. m ty + m - 1 (those inside the map), columns
 * m tx0 .. m (tx0 + len) - 1 (those inside), of output channel plane yc
 * from rows (rows[r * WMAXR + ...]); without fused, the epilogue over
 * each row run written. */
#define WMAXR (4 * WN)
static void wino_put(const wino_job *j, float *yc, size_t ty, size_t tx0, size_t len, const float *rows, bool fused,
                     const float *bias) {
    const rlx_nn_conv_io *io = &j->io;
    size_t col = j->m * tx0, cols = j->m * len;
    if (col + cols > j->ow) cols = j->ow - col;
    for (size_t r = 0; r < j->m && j->m * ty + r < j->oh; r++) {
        float *y = yc + (j->m * ty + r) * j->ow + col;
        memcpy(y, rows + r * WMAXR, cols * sizeof(float));
        if (!fused)
            rlx_nn_conv_epilogue_block(y, cols, 1, cols, bias, io->res ? io->res + (y - io->y) : NULL, &io->act);
    }
}

/* a[0], b[0], a[1], b[1], .. a[7], b[7] (hi: from a[8] and b[8]) */
__attribute__((target("avx512f"), always_inline)) static inline __m512 wino_zip(__m512 a, __m512 b, bool hi) {
    const __m512i l = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i h = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    return _mm512_permutex2var_ps(a, hi ? h : l, b);
}

/* Whether io's epilogue runs in registers: bias and Relu (*relu) or no
 * activation, without a residual. */
static bool wino_fused(const rlx_nn_conv_io *io, bool *relu) {
    *relu = io->act.kind == RLX_ACT_RELU;
    return !io->res && (*relu || io->act.kind == RLX_ACT_NONE);
}

/* Output channels [co0, co0 + nco) of the pass's tiles [t0, t0 + nt) from
 * M[e][co - co0][t - t0] (row stride WN, WCO * WN per e), then the
 * epilogue: bias and Relu (or no activation) without a residual in
 * registers, else wino_put's. F(2x2): Y = A^T M A over 4 x 4. */
__attribute__((target("avx512f"))) static void wino_out2(const wino_job *j, size_t t0, size_t nt, size_t co0,
                                                         size_t nco, const float *m) {
    const rlx_nn_conv_io *io = &j->io;
    float rows[2 * WMAXR];
    bool relu, fused = wino_fused(io, &relu);
    for (size_t co = 0; co < nco; co++) {
        const float *mc = m + co * WN;
        const float *bias = io->b ? io->b + co0 + co : NULL;
        __m512 vb = _mm512_set1_ps(bias ? *bias : 0.0f);
        for (size_t t = t0; t < t0 + nt;) {
            size_t img = t / j->tiles, lt = t % j->tiles, ty = lt / j->tw, tx0 = lt % j->tw, len = j->tw - tx0;
            float *yc = io->y + ((j->n0 + img) * io->c_out + co0 + co) * io->sp;
            if (len > t0 + nt - t) len = t0 + nt - t;
            const float *s = mc + (t - t0);
            for (size_t i = 0; i < len; i += 16) {
                __mmask16 mk = len - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (len - i)) - 1);
#define WO_LD(e) __m512 m##e = _mm512_maskz_loadu_ps(mk, s + (e) * WCO * WN + i);
                WO_LD(0) WO_LD(1) WO_LD(2) WO_LD(3) WO_LD(4) WO_LD(5) WO_LD(6) WO_LD(7)
                WO_LD(8) WO_LD(9) WO_LD(10) WO_LD(11) WO_LD(12) WO_LD(13) WO_LD(14) WO_LD(15)
#undef WO_LD
                /* over the rows of M: p<k> = m0k + m1k + m2k, q<k> = m1k - m2k - m3k */
                __m512 p0 = _mm512_add_ps(_mm512_add_ps(m0, m4), m8), p1 = _mm512_add_ps(_mm512_add_ps(m1, m5), m9);
                __m512 p2 = _mm512_add_ps(_mm512_add_ps(m2, m6), m10), p3 = _mm512_add_ps(_mm512_add_ps(m3, m7), m11);
                __m512 q0 = _mm512_sub_ps(_mm512_sub_ps(m4, m8), m12), q1 = _mm512_sub_ps(_mm512_sub_ps(m5, m9), m13);
                __m512 q2 = _mm512_sub_ps(_mm512_sub_ps(m6, m10), m14), q3 = _mm512_sub_ps(_mm512_sub_ps(m7, m11), m15);
                __m512 y[4] = { _mm512_add_ps(_mm512_add_ps(p0, p1), p2), _mm512_sub_ps(_mm512_sub_ps(p1, p2), p3),
                                _mm512_add_ps(_mm512_add_ps(q0, q1), q2), _mm512_sub_ps(_mm512_sub_ps(q1, q2), q3) };
                if (fused) wino_bias_relu(y, 4, vb, relu);
                for (size_t r = 0; r < 2; r++) { /* row r: columns 2 tx (y[2r]) and 2 tx + 1 (y[2r + 1]) */
                    _mm512_storeu_ps(rows + r * WMAXR + 2 * i, wino_zip(y[2 * r], y[2 * r + 1], false));
                    _mm512_storeu_ps(rows + r * WMAXR + 2 * i + 16, wino_zip(y[2 * r], y[2 * r + 1], true));
                }
            }
            wino_put(j, yc, ty, tx0, len, rows, fused, bias);
            t += len;
        }
    }
}

/* o[0 .. 4) = A^T m of F(4x4, 3x3) over six vectors (the file's comment). */
__attribute__((target("avx512f"), always_inline)) static inline void wino_at6(const __m512 *m, __m512 *o) {
    __m512 a = _mm512_add_ps(m[1], m[2]), b = _mm512_sub_ps(m[1], m[2]);
    __m512 c = _mm512_add_ps(m[3], m[4]), d = _mm512_sub_ps(m[3], m[4]);
    o[0] = _mm512_add_ps(_mm512_add_ps(m[0], a), c);
    o[1] = _mm512_fmadd_ps(_mm512_set1_ps(2.0f), d, b);
    o[2] = _mm512_fmadd_ps(_mm512_set1_ps(4.0f), c, a);
    o[3] = _mm512_add_ps(_mm512_fmadd_ps(_mm512_set1_ps(8.0f), d, b), m[5]);
}

/* wino_out2 for F(4x4): Y = A^T M A over 6 x 6, four rows of four
 * columns per tile; vectors of 16 consecutive tiles (wino_segs), each
 * run written by wino_put. */
__attribute__((target("avx512f"))) static void wino_out4(const wino_job *j, size_t t0, size_t nt, size_t co0,
                                                         size_t nco, const float *m) {
    const rlx_nn_conv_io *io = &j->io;
    float rows[4 * WMAXR];
    bool relu, fused = wino_fused(io, &relu);
    wino_seg seg[WN + 3 * 16];
    size_t ns = wino_segs(j, t0, nt, seg), nv = (nt + 15) / 16;
    for (size_t co = 0; co < nco; co++) {
        const float *mc = m + co * WN;
        const float *bias = io->b ? io->b + co0 + co : NULL;
        __m512 vb = _mm512_set1_ps(bias ? *bias : 0.0f);
        for (size_t vi = 0, s0 = 0; vi < nv; vi++) {
            const float *s = mc + 16 * vi;
            __m512 z[24], x[6], y[4];
            for (size_t k = 0; k < 6; k++) { /* z[p][k]: A^T over column k of M */
                for (size_t r = 0; r < 6; r++) x[r] = _mm512_loadu_ps(s + (6 * r + k) * WCO * WN);
                wino_at6(x, y);
                for (size_t p = 0; p < 4; p++) z[6 * p + k] = y[p];
            }
            for (size_t p = 0; p < 4; p++) { /* output row 4 ty + p: A^T over row p of z */
                wino_at6(z + 6 * p, y);
                if (fused) wino_bias_relu(y, 4, vb, relu);
                /* columns 4 tx + q from y[q]: two rounds of interleaving */
                __m512 a0 = wino_zip(y[0], y[2], false), a1 = wino_zip(y[0], y[2], true);
                __m512 b0 = wino_zip(y[1], y[3], false), b1 = wino_zip(y[1], y[3], true);
                float *dst = rows + p * WMAXR;
                _mm512_storeu_ps(dst, wino_zip(a0, b0, false)), _mm512_storeu_ps(dst + 16, wino_zip(a0, b0, true));
                _mm512_storeu_ps(dst + 32, wino_zip(a1, b1, false)), _mm512_storeu_ps(dst + 48, wino_zip(a1, b1, true));
            }
            for (; s0 < ns && seg[s0].vi == vi; s0++) {
                const wino_seg *sg = &seg[s0];
                float *yc = io->y + ((j->n0 + sg->img) * io->c_out + co0 + co) * io->sp;
                wino_put(j, yc, sg->ty, sg->tx, sg->len, rows + 4 * sg->lane, fused, bias);
            }
        }
    }
}
#endif

/* The first tile of block b of the pass (blocks of WN; evening them out,
 * 49 tiles as 25 + 24 rather than 48 + 1, computed as many columns and
 * measured slower on 56 x 56 maps: 196 tiles as 5 x 40) */
#define WBLK(j, b) ((b) * WN < (j)->pt ? (b) * WN : (j)->pt)

/* The padded rows that the pass's tiles [t0, t1) read (j->priv), into
 * xp (j->xp_floats: the rows, then a line for wino_pad_rows), *xv their
 * view: tiles of one image, the rows from their first tile row to their
 * last one's + m + 2; tiles of several images, their whole planes. False
 * when a value copied is not tame (j->wild is set: the caller declines). */
static bool wino_pad_task(wino_job *j, size_t t0, size_t t1, float *xp, wino_view *xv) {
    size_t ilo = t0 / j->tiles, ihi = (t1 - 1) / j->tiles, rlo = 0, rhi = j->hp, n2 = j->m * j->rw;
    if (ilo == ihi) {
        rlo = j->m * (t0 % j->tiles / j->tw);
        rhi = j->m * ((t1 - 1) % j->tiles / j->tw) + j->m + 2;
        if (rhi > j->hp) rhi = j->hp;
    }
    size_t ps = (rhi - rlo) * n2, cin = j->io.cig;
    float *line = xp + (ihi - ilo + 1) * cin * ps;
    for (size_t i = ilo; i <= ihi; i++)
        for (size_t c = 0; c < cin; c++)
            wino_pad_rows(j, i * cin + c, rlo, rhi, xp + ((i - ilo) * cin + c) * ps, line);
    *xv = (wino_view){ xp, ilo, rlo, ps };
    return !atomic_load_explicit(&j->wild, memory_order_relaxed);
}

/* Task: (group of tile blocks, range of output channels) of the pass.
 * Each weight panel of U (c_in x 8) is read once per group: for every
 * block of the group while it is in L1. */
static void wino_item(void *ctx, size_t item, float *scratch) {
#if RLX_HAVE_AVX2_BUILD
    const wino_job *j = ctx;
    size_t grp = item / j->n_cr, cr = item % j->n_cr, cin = j->io.cig;
    size_t b0 = grp * j->n_tb / j->n_grp, b1 = (grp + 1) * j->n_tb / j->n_grp, nb = b1 - b0;
    size_t c_lo = cr * j->cr_len, c_hi = c_lo + j->cr_len < j->io.cog ? c_lo + j->cr_len : j->io.cog;
    if (c_lo >= c_hi || !nb) return;
    size_t ne = j->ne, vs = ne * cin * WN, ms = ne * WCO * WN, nts[WMAXB];
    wino_view xv = { j->xs, 0, 0, j->hp * j->m * j->rw };
    if (j->priv) { /* the padded rows of this task's tiles, into its scratch */
        if (!wino_pad_task(ctx, WBLK(j, b0), WBLK(j, b1), scratch, &xv)) return;
        scratch += j->xp_floats;
    }
    float *v = scratch, *m = scratch + nb * vs;
    for (size_t bi = 0; bi < nb; bi++) {
        size_t t0 = WBLK(j, b0 + bi);
        nts[bi] = WBLK(j, b0 + bi + 1) - t0;
        if (j->m == 4) wino_in4(j, &xv, t0, nts[bi], v + bi * vs);
        else wino_in2(j, &xv, t0, nts[bi], 0, cin, v + bi * vs);
    }
    size_t panels = (j->io.cog + WMR - 1) / WMR;
    for (size_t co0 = c_lo; co0 < c_hi; co0 += WCO) {
        size_t nco = c_hi - co0 < WCO ? c_hi - co0 : WCO;
        for (size_t e = 0; e < ne; e++)
            for (size_t pr = 0; pr * WMR < nco; pr++) {
                const float *ap = j->u + ((e * panels + co0 / WMR + pr) * cin) * WMR;
                for (size_t bi = 0; bi < nb; bi++) {
                    const float *b = v + bi * vs + e * cin * WN;
                    wino_kern(nts[bi], cin, ap, b, m + bi * ms + (e * WCO + pr * WMR) * WN);
                }
            }
        for (size_t bi = 0; bi < nb; bi++) {
            if (j->m == 4) wino_out4(j, WBLK(j, b0 + bi), nts[bi], co0, nco, m + bi * ms);
            else wino_out2(j, WBLK(j, b0 + bi), nts[bi], co0, nco, m + bi * ms);
        }
    }
#else
    (void)ctx, (void)item, (void)scratch;
#endif
}

/* The phased form of a pass (F(2x2) where its groups of tile blocks are
 * at most half the threads, from 3 threads: wino_item's ranges of output channels
 * would each transform their tiles' inputs again, 16 times over on a
 * 14 x 14 map at 16 threads, and the transform and its padding are a fifth
 * of the work at one thread). Three regions over buffers shared by the
 * call: the inputs' transforms by (block, range of input channels) into
 * va, the 16 products by (e, range of weight panels) into ma, the output
 * transforms and epilogue by (block, range of output channels). Each
 * product and output is computed by the calls wino_item makes, on the
 * same operands: the same bits. */
static void wino_in_items(void *ctx, size_t i0, size_t i1) {
#if RLX_HAVE_AVX2_BUILD
    const wino_job *j = ctx;
    wino_view xv = { j->xs, 0, 0, j->hp * j->m * j->rw };
    size_t cin = j->io.cig, vs = j->ne * cin * WN;
    for (size_t i = i0; i < i1; i++) {
        size_t b = i / j->n_cc, c0 = i % j->n_cc * j->cc_len, c1 = c0 + j->cc_len < cin ? c0 + j->cc_len : cin;
        size_t t0 = WBLK(j, b);
        wino_in2(j, &xv, t0, WBLK(j, b + 1) - t0, c0, c1, j->va + b * vs);
    }
#else
    (void)ctx, (void)i0, (void)i1;
#endif
}

static void wino_gemm_items(void *ctx, size_t i0, size_t i1) {
#if RLX_HAVE_AVX2_BUILD
    const wino_job *j = ctx;
    size_t cin = j->io.cig, vs = j->ne * cin * WN, panels = (j->io.cog + WMR - 1) / WMR;
    size_t gs = j->ne * WCO * WN, n_g = (j->io.cog + WCO - 1) / WCO;
    for (size_t i = i0; i < i1; i++) {
        size_t e = i / j->n_pc, p0 = i % j->n_pc * j->pc_len, p1 = p0 + j->pc_len < panels ? p0 + j->pc_len : panels;
        for (size_t p = p0; p < p1; p++) {
            const float *ap = j->u + ((e * panels + p) * cin) * WMR;
            size_t g = p * WMR / WCO, pr = p - g * (WCO / WMR);
            for (size_t b = 0; b < j->n_tb; b++) {
                wino_kern(WBLK(j, b + 1) - WBLK(j, b), cin, ap, j->va + b * vs + e * cin * WN,
                          j->ma + (b * n_g + g) * gs + (e * WCO + pr * WMR) * WN);
            }
        }
    }
#else
    (void)ctx, (void)i0, (void)i1;
#endif
}

static void wino_out_items(void *ctx, size_t i0, size_t i1) {
#if RLX_HAVE_AVX2_BUILD
    const wino_job *j = ctx;
    size_t gs = j->ne * WCO * WN, n_g = (j->io.cog + WCO - 1) / WCO;
    for (size_t i = i0; i < i1; i++) {
        size_t b = i / j->n_oc, co0 = i % j->n_oc * j->oc_len, g = co0 / WCO;
        size_t nco = co0 + j->oc_len < j->io.cog ? j->oc_len : j->io.cog - co0, t0 = WBLK(j, b);
        wino_out2(j, t0, WBLK(j, b + 1) - t0, co0, nco, j->ma + (b * n_g + g) * gs + (co0 - g * WCO) * WN);
    }
#else
    (void)ctx, (void)i0, (void)i1;
#endif
}

/* Whether a pass of this job runs phased (above), and the floats of its
 * va and ma; sets the items' ranges for `threads` threads: at least two
 * items a thread per phase where the shape allows. */
static bool wino_phased(wino_job *j, size_t threads, size_t *floats) {
    if (j->m != 2 || threads < 3 || 2 * j->n_grp > threads) return false;
    size_t cin = j->io.cig, panels = (j->io.cog + WMR - 1) / WMR, n_g = (j->io.cog + WCO - 1) / WCO;
    size_t want = 2 * threads;
    j->n_cc = (want + j->n_tb - 1) / j->n_tb;
    j->cc_len = (cin + j->n_cc - 1) / j->n_cc;
    if (j->cc_len < 8) j->cc_len = 8;
    j->n_cc = (cin + j->cc_len - 1) / j->cc_len;
    j->n_pc = (want + j->ne - 1) / j->ne;
    if (j->n_pc > panels) j->n_pc = panels;
    j->pc_len = (panels + j->n_pc - 1) / j->n_pc;
    j->n_pc = (panels + j->pc_len - 1) / j->pc_len;
    j->oc_len = 2 * WMR;
    while (j->oc_len < WCO && j->n_tb * ((j->io.cog + 2 * j->oc_len - 1) / (2 * j->oc_len)) >= want) j->oc_len *= 2;
    j->n_oc = (j->io.cog + j->oc_len - 1) / j->oc_len;
    *floats = j->n_tb * j->ne * cin * WN + j->n_tb * n_g * j->ne * WCO * WN;
    return true;
}

/* Items: runs of input planes, a flag for any value rlx_nn_wino_tame
 * refuses. */
typedef struct tame_job {
    const float *x;
    size_t plane;
    float xlim;
    atomic_int wild;
} tame_job;

/* Whether the floats [a, a + na) and [b, b + nb) overlap. */
static bool wino_overlap(const float *a, size_t na, const float *b, size_t nb) {
    uintptr_t a0 = (uintptr_t)a, a1 = a0 + na * sizeof(float), b0 = (uintptr_t)b, b1 = b0 + nb * sizeof(float);
    return a0 < b1 && b0 < a1;
}

static void tame_items(void *ctx, size_t i0, size_t i1) {
    tame_job *t = ctx;
    if (!rlx_nn_wino_tame(t->x + i0 * t->plane, (i1 - i0) * t->plane, t->xlim)) atomic_store(&t->wild, 1);
}

rlx_status rlx_nn_conv_wino_f32(rlx_cpu_kctx *k, const rlx_nn_conv_io *io, size_t n_img, bool *declined) {
    *declined = false;
    wino_job j;
    memset(&j, 0, sizeof j);
    atomic_init(&j.wild, 0);
    j.io = *io;
    j.u = k->pack->wino;
    const rlx_nn_sp3 *s = io->s;
    j.m = (size_t)k->pack->wino_m, j.ne = (j.m + 2) * (j.m + 2);
    j.xlim = k->pack->wino_xlim;
    j.oh = (size_t)s->out[1], j.ow = (size_t)s->out[2];
    j.th = (j.oh + j.m - 1) / j.m, j.tw = (j.ow + j.m - 1) / j.m, j.tiles = j.th * j.tw;
    j.hp = j.m * j.th + 2, j.rw = j.tw + 1;
    /* phase k (columns k, k + m, ..) of a padded row: wino_pad_items' order */
    j.ph[1] = j.rw;
    if (j.m == 4) j.ph[1] = 2 * j.rw, j.ph[2] = j.rw, j.ph[3] = 3 * j.rw;
    size_t plane = j.hp * j.m * j.rw, total;
    if (!rlx_mul_ok(plane, io->cig, &total) || total > SIZE_MAX / sizeof(float) - 16)
        return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "padded input of %zu channels too large", io->cig);
    /* images per pass: on small maps several images' tiles share the tile
     * blocks (a weight panel streamed from memory serves all of them, and
     * the last block of each image is not mostly empty: 7 x 7 outputs are
     * 16 tiles of a 48-tile block); passes of about WPASS tiles, evened
     * out, within WPASS_FLOATS of padded input. The bits do not depend on
     * it: each tile's sums run over the input channels in the same order. */
    size_t passes = (n_img * j.tiles + WPASS - 1) / WPASS, ipp = (n_img + passes - 1) / passes;
    if (ipp > WPASS_FLOATS / total) ipp = WPASS_FLOATS / total;
    if (ipp < 1) ipp = 1;
    /* an input with an inf, a NaN or a value of j.xlim or more (which
     * could overflow with these weights, rlx_nn_wino_xlim): the caller's
     * other paths, before anything is written. One pass (batch 1, small
     * batches of small maps): the padding checks the values it copies
     * (the only ones the path reads), and the path declines before its
     * tasks; else every input first, in a region of its own. */
    j.check = ipp >= n_img;
    if (!j.check) {
        tame_job t = { .x = io->x, .plane = io->s->in_sp, .xlim = j.xlim };
        atomic_init(&t.wild, 0);
        rlx_parallel_for(n_img * io->c_in, 1 + 16384 / (t.plane + 1), tame_items, &t);
        *declined = atomic_load(&t.wild) != 0;
        if (*declined) return RLX_OK;
    }
    size_t threads = (size_t)rlx_parallel_threads(), panels = (io->cog + WMR - 1) / WMR;
    /* several threads, one pass: each task pads the rows its tiles read
     * into its own scratch (wino_pad_task), so no thread reads padded rows
     * that another core wrote, and the pass is one region. Its tasks check
     * what they copy, so a declined call may have written some outputs:
     * only where y overlaps neither x nor the residual (the caller's other
     * path then writes all of y again). Only on passes of at most 2
     * groups of tile blocks, each in at most 2 ranges of output channels
     * (below): the rows that neighbouring groups share are padded by both,
     * and each range pads its group's rows again. 2 threads, wall us,
     * bench/conv_node hot, shared planes -> own rows, in the VM's fast
     * 2-thread state: 128->128 at 28x28 742 -> 735, 256->256 at 14x14 847
     * -> 851, 32->128 at 27x27 227 -> 223, but with 8 or more groups
     * 64->64 at 56x56 759 -> 793 and 96->24 at 80x80 1024 -> 1206 (few
     * outputs per padded input); in its slow state (a process's first
     * 0.1 s, and at times for minutes: 2 threads then slower than 1)
     * 128->128 at 28x28 1517 -> 1413, 512->512 at 14x14 3367 -> 3094. 16
     * threads on a 14x14 map (16 ranges of one group) keep the shared
     * planes: not measured. */
    size_t ny = io->c_out * io->sp * n_img;
    bool priv = j.check && threads > 1 && !wino_overlap(io->y, ny, io->x, io->c_in * s->in_sp * n_img) &&
                !(io->res && wino_overlap(io->y, ny, io->res, ny));
    float *own = NULL;
    size_t xsf = (ipp * total + 15) / 16 * 16, vm_cap = 0;
    rlx_status st = RLX_OK;
    for (j.n0 = 0; j.n0 < n_img && st == RLX_OK; j.n0 += j.ni) {
        j.ni = n_img - j.n0 < ipp ? n_img - j.n0 : ipp;
        j.pt = j.ni * j.tiles;
        j.n_tb = (j.pt + WN - 1) / WN;
        j.n_grp = j.n_tb / WGRP ? j.n_tb / WGRP : 1;
        /* F(4x4) (a tile of 16 outputs: a panel read per 48 tiles serves
         * 768 outputs) on fewer groups than threads: a block per group */
        if (j.m == 4 && j.n_grp < threads) j.n_grp = j.n_tb < threads ? j.n_tb : threads;
        /* ranges of output channels (whole panels): split until the pass
         * has an item per thread (each range transforms its tiles' inputs
         * again), while a range keeps 16 channels. Not 2 per thread: with
         * rlx_nn_run_items' contiguous shares a thread took both ranges of
         * one group and transformed its inputs twice (2 threads, wall us,
         * bench/conv_node hot: 128->128 at 28x28 1163 -> 1021, 256->256 at
         * 14x14 1257 -> 1070; BENCHMARKS.md "conv3") */
        j.n_cr = 1;
        while (threads > 1 && j.n_grp * j.n_cr < threads && panels / (j.n_cr * 2) >= 2) j.n_cr *= 2;
        j.cr_len = (panels + j.n_cr - 1) / j.n_cr * WMR;
        size_t nbm = (j.n_tb + j.n_grp - 1) / j.n_grp, slot = nbm * (j.ne * io->cig * WN + j.ne * WCO * WN);
        size_t vmf = 0;
        bool phased = wino_phased(&j, threads, &vmf);
        j.priv = !phased && priv && j.n_cr <= 2 && j.n_grp <= 2;
        /* the padded planes, and after them the phased form's va and ma */
        if (!j.priv && (!j.xs || vmf > vm_cap)) {
            if (vmf > vm_cap) vm_cap = vmf;
            free(own), own = NULL;
            size_t fl = xsf + vm_cap;
            if (!(j.xs = rlx_scratch_get(RLX_SCRATCH_CALL, fl * sizeof(float))) &&
                !(j.xs = own = malloc((fl + 16) * sizeof(float)))) {
                st = rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory (padded input%s of %zu floats)",
                                  vm_cap ? " and phased transforms" : "", fl);
                break;
            }
        }
        if (phased) j.va = j.xs + xsf, j.ma = j.va + j.n_tb * j.ne * io->cig * WN;
        if (j.priv) { /* the images a task's tiles touch, their planes, and a line */
            size_t imgs = (nbm * WN + j.tiles - 1) / j.tiles + 1;
            if (imgs > j.ni) imgs = j.ni;
            j.xp_floats = (imgs * total + 2 * j.m * j.rw + 64 + 15) / 16 * 16;
            slot += j.xp_floats;
        }
        if (!j.priv) rlx_parallel_for(j.ni * io->cig, 1 + 16384 / (plane + 1), wino_pad_items, &j);
        if (j.check && atomic_load(&j.wild)) {
            *declined = true;
            break;
        }
        if (phased) {
            rlx_parallel_for(j.n_tb * j.n_cc, 1, wino_in_items, &j);
            rlx_parallel_for(j.ne * j.n_pc, 1, wino_gemm_items, &j);
            rlx_parallel_for(j.n_tb * j.n_oc, 1, wino_out_items, &j);
            atomic_fetch_add(&g_wino_phased, 1);
            continue;
        }
        st = rlx_nn_run_items(k, j.n_grp * j.n_cr, slot, wino_item, &j);
        if (j.priv && atomic_load(&j.wild)) *declined = true;
    }
    free(own);
    if (*declined) return st;
    atomic_fetch_add(&g_wino_runs, 1);
    return st;
}
