/* f32 GEMM for the CPU backend, and who owns the threads.
 *
 * The arithmetic contract: equal inputs give equal outputs. Every element
 * of C is computed by the same operation sequence whatever its position
 * (row, column, edge tile, block of a split, thread count): its k products
 * are summed in k order from 0, in panels of 256 steps (fixed by k alone),
 * each panel's sum s added as c = alpha * s (first panel, beta 0),
 * beta * c + alpha * s (first panel) or c + alpha * s (later panels).
 * rlx therefore multiplies with its own packed GEMM (cpu_sgemm.c): A and B
 * packed into panels of mr rows / nr columns (zero-padded at the edges; a
 * row-major A of a product with few columns, n <= 4 nr, is read in place,
 * only a last panel of fewer than mr rows packed), an mr x nr
 * register-tile micro-kernel, edge tiles computed whole on a tile on the
 * stack and stored partially. Three kernels, picked once at run
 * time by what the CPU runs (__builtin_cpu_supports, which also checks that
 * the OS saves the registers; target attributes: no illegal instruction
 * elsewhere): AVX-512F (8 x 32; or 8 x 48 by option cpu.sgemm_tile; 12 x
 * 32, 14 x 32 for benchmarks), AVX2 + FMA (6 x 16), all a chain of fused
 * multiply-adds per element, so the same bits; and a portable C one
 * (6 x 16, multiply, then add). Results differ between the portable and
 * the FMA kernels by rounding, never between positions. Products of one
 * row (M = 1: a classifier, a decoder at one token) with an FMA kernel
 * skip the tiles and stream B with eight vectors of columns in flight (a
 * plain transposed B: 16 of its rows at a time transposed in registers
 * with AVX-512, through a panel with AVX2), each column the same FMA chain
 * and update, so the same bits as that row inside any larger product.
 * Why not OpenBLAS: its Haswell / Zen sgemm kernels (what DYNAMIC_ARCH picks
 * on AVX2 machines without AVX-512) round an element differently by its
 * position in C (groups of 6 rows alternate), so a MatMul of identical rows
 * gives rows that differ in the last bits; a softmax over huge logits (the
 * ONNX suite's light_squeezenet) turns those bits into wrong answers.
 * Speed against OpenBLAS: BENCHMARKS.md, "CPU backend".
 *
 * Two thread policies, chosen once per process (option cpu.gemm,
 * RLX_CPU_GEMM):
 *  - "pool" (default): rlx's worker pool (base/parallel.h) owns every
 *    thread; rlx_cpu_sgemm splits a GEMM into blocks of rows / columns
 *    that the pool's threads multiply with rlx_cpu_sgemm_serial.
 *    Convolutions run im2col, GEMM and epilogue per block inside the
 *    pool's tasks. OpenBLAS is not called.
 *  - "blas" (for comparisons only): every GEMM is one cblas_sgemm call,
 *    OpenBLAS with its own threads (and its position-dependent rounding);
 *    convolutions build their whole column matrix on the pool, then hand it
 *    to one GEMM. */
#ifndef RLX_BACKEND_CPU_CPU_SGEMM_H
#define RLX_BACKEND_CPU_CPU_SGEMM_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

typedef enum rlx_cpu_gemm_policy {
    RLX_CPU_GEMM_POOL = 0,
    RLX_CPU_GEMM_BLAS = 1
} rlx_cpu_gemm_policy;

/* The policy of this process (option cpu.gemm, per process: the first
 * session's value, or RLX_CPU_GEMM for work before any session). */
rlx_cpu_gemm_policy rlx_cpu_gemm_policy_get(void);

/* Sets the policy (sessions, when created). errors: RLX_ERR_INVALID_ARGUMENT
 * when the process already uses the other one. */
rlx_status rlx_cpu_gemm_policy_set(rlx_cpu_gemm_policy policy);

/* Row-major C[m, n] = alpha * op(A)[m, k] op(B)[k, n] + beta * C, op the
 * transpose where ta / tb; A is [m, k] (lda >= k) or, transposed, [k, m]
 * (lda >= m); likewise B. Dimensions and leading dims must fit a C int
 * (callers check against RLX_NN_BLAS_MAX); k may be 0 (C = beta * C).
 * Splits the work over the worker pool (policy "pool"; on the caller when
 * already inside a parallel region or when the product is small) or calls
 * OpenBLAS once (policy "blas"). Same bits for any split (see above). */
void rlx_cpu_sgemm(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                   const float *b, size_t ldb, float beta, float *c, size_t ldc);

/* An operand packed once (a layer's weights, at compile time) in the
 * micro-panels of the kernel in use when it was packed: `groups` matrices
 * op(A)_g [lanes, k] (panels of mr rows) or one op(B) [k, lanes] (panels of
 * nr columns). Products with another kernel ignore it (and pack the plain
 * operand as usual). */
typedef struct rlx_cpu_sgemm_pack {
    float *data; /* owned; NULL when empty */
    int kernel;  /* the rlx_cpu_sgemm_kernel of the layout */
    bool is_b;
    size_t groups, lanes, k, w; /* w: the panel width (mr or nr) */
    /* owned, or NULL: the constant int8 B of a MatMulInteger or
     * QLinearMatMul packed for the int8 GEMM (cpu_qgemm.h); data is then NULL */
    struct rlx_cpu_qgemm_pack *q8;
    /* owned, or NULL: the constant weights of a QLinearConv or ConvInteger
     * packed for the VNNI int8 convolution (cpu_qconv.h); data is then NULL */
    struct rlx_cpu_qconv_pack *q8conv;
    /* owned, or NULL: a 1x1 convolution's weights transposed for the
     * channels-in-lanes path (cpu_nn_pwt.c, rlx_nn_pwt_pack) of wt_groups
     * groups of [wt_lanes output channels, wt_k]; data is then NULL;
     * wt_finite: every weight finite (the path may then skip the taps
     * that read only padding: 0 x w adds nothing to a sum) */
    float *wt;
    size_t wt_groups, wt_lanes, wt_k;
    bool wt_finite;
    /* owned, or NULL: an RNN / GRU / LSTM's R packed for its recurrence,
     * slice by slice, rnn_slices[d] slices in direction d (the slices'
     * bounds follow from their count: cpu_rnn.c, rlx_cpu_rnn_prepare);
     * rnn_w (owned, or NULL) its W packed the same way, for batches whose
     * input projection runs step by step; else data may hold W for the
     * one GEMM of every step's input projection. */
    float *rnn_r, *rnn_w;
    int rnn_slices[2];
    /* owned, or NULL: a 3x3 convolution's weights transformed for the
     * Winograd path (cpu_nn_conv_wino.c, rlx_nn_wino_pack) of F(wino_m x
     * wino_m, 3x3) (2 or 4), wino_cout x wino_cin channel pairs; data is
     * then NULL. wino_xlim: the path declines inputs with a value of this
     * magnitude or more (or not finite): rlx_nn_wino_xlim of the weights */
    float *wino;
    size_t wino_cout, wino_cin;
    int wino_m;
    float wino_xlim;
    /* owned, or NULL: the elementwise program of a FusedElementwise node,
     * or of the QDQ chain a QLinearConv / QLinearMatMul carries (inputs
     * RLX_QEPI_FIRST..), read and validated once (rlx_ew_prog_read_at)
     * rather than from the node's attributes on every run */
    struct rlx_ew_prog *ew;
} rlx_cpu_sgemm_pack;

/* Packs `groups` matrices op(A)_g [m, k], A_g at a + g * gstride (row-major,
 * transposed when ta, leading dimension lda).
 * errors: RLX_ERR_OUT_OF_MEMORY. */
rlx_status rlx_cpu_sgemm_pack_a(bool ta, size_t groups, size_t m, size_t k, const float *a, size_t lda,
                                size_t gstride, rlx_cpu_sgemm_pack *out);

/* Packs op(B) [k, n] (row-major, transposed when tb, leading dimension
 * ldb). errors: RLX_ERR_OUT_OF_MEMORY. */
rlx_status rlx_cpu_sgemm_pack_b(bool tb, size_t k, size_t n, const float *b, size_t ldb, rlx_cpu_sgemm_pack *out);

/* Whether pk holds any packed operand (data, or one of the other layouts
 * above): what the CPU backend hands its nodes. */
bool rlx_cpu_sgemm_pack_holds(const rlx_cpu_sgemm_pack *pk);

/* Frees a pack's data and clears it (NULL or an empty pack: nothing). */
void rlx_cpu_sgemm_pack_free(rlx_cpu_sgemm_pack *pack);

/* The micro-panel of rows [first, first + w) of group `group` of an A pack
 * (rlx_cpu_sgemm_pack_a) whose k is at most 256 (one block of k steps):
 * step p's w values at [p * w], rows past the matrix zero. NULL when the
 * pack is empty or a B pack, was packed for another kernel than the one in
 * use, or k is larger, or the rows are not inside it (first a multiple of
 * w). For kernels that read the packed weights themselves (the pointwise
 * convolution, cpu_nn_pw.c). */
const float *rlx_cpu_sgemm_pack_a_panel(const rlx_cpu_sgemm_pack *pack, size_t group, size_t first);

/* Steps of k per packed panel of every kernel (where every product's k
 * sum is cut: see the arithmetic contract above). */
#define RLX_CPU_SGEMM_KC 256

/* The micro-panel of rows [first, first + w) of group `group` of an A pack
 * for k steps [p0, p0 + kc), kc = min(RLX_CPU_SGEMM_KC, k - p0) (p0 a
 * multiple of RLX_CPU_SGEMM_KC): step p's w values at [(p - p0) * w], rows
 * past the matrix zero. NULL as rlx_cpu_sgemm_pack_a_panel (any k). For
 * kernels that read the packed weights themselves (the implicit-GEMM
 * convolution, cpu_nn_conv_ig.c). */
const float *rlx_cpu_sgemm_pack_a_block(const rlx_cpu_sgemm_pack *pack, size_t group, size_t p0, size_t first);

/* Where a product's operand starts in a pack: group `group`, row (A) or
 * column (B) `first`. Used only when the pack has this kernel's layout, k
 * matches, `first` is a multiple of the panel width and the product's
 * rows / columns lie inside; else the plain pointer is multiplied. */
typedef struct rlx_cpu_sgemm_packref {
    const rlx_cpu_sgemm_pack *pack;
    size_t group, first;
} rlx_cpu_sgemm_packref;

/* rlx_cpu_sgemm / rlx_cpu_sgemm_serial with op(A) and / or op(B) also
 * given packed (pa, pb: NULL for none); a and b must still point at the
 * plain operands. The same bits as without the packs. */
void rlx_cpu_sgemm_packed(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                          const float *b, size_t ldb, float beta, float *c, size_t ldc,
                          const rlx_cpu_sgemm_packref *pa, const rlx_cpu_sgemm_packref *pb);
void rlx_cpu_sgemm_serial_packed(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const float *a,
                                 size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc,
                                 const rlx_cpu_sgemm_packref *pa, const rlx_cpu_sgemm_packref *pb);

/* rlx_cpu_sgemm_serial_packed with an epilogue: epi(epi_ctx, i0, m, j0, n)
 * is called on each block of C (rows [i0, i0 + m), columns [j0, j0 + n)
 * of this product's C) as soon as its sums are final, once per element,
 * the blocks disjoint and covering C (the packed product's blocks of up
 * to 128 rows, while they are in the caches; the other routes: all of C
 * at the end). A convolution's bias, residual and activation run there
 * (cpu_nn_conv_fast.c). The same bits as the product followed by epi
 * over C. */
typedef void rlx_cpu_sgemm_epi_fn(void *ctx, size_t i0, size_t m, size_t j0, size_t n);
void rlx_cpu_sgemm_serial_epi(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const float *a,
                              size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc,
                              const rlx_cpu_sgemm_packref *pa, const rlx_cpu_sgemm_packref *pb,
                              rlx_cpu_sgemm_epi_fn *epi, void *epi_ctx);

/* rlx_cpu_sgemm on the calling thread (for callers that already run inside
 * the pool's tasks); the same bits as rlx_cpu_sgemm. Allocates the packed
 * panels (up to about 2 MiB) per call; without memory it runs tile by tile
 * from panels on the stack (same bits, slower). */
void rlx_cpu_sgemm_serial(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                          const float *b, size_t ldb, float beta, float *c, size_t ldc);

/* The micro-kernels (see above). */
typedef enum rlx_cpu_sgemm_kernel {
    RLX_CPU_SGEMM_PORTABLE = 0, /* plain C, multiply then add */
    RLX_CPU_SGEMM_AVX2 = 1,     /* x86 AVX2 + FMA */
    RLX_CPU_SGEMM_AVX512 = 2    /* x86 AVX-512F */
} rlx_cpu_sgemm_kernel;

/* The kernel in use: the first call picks AVX-512 where the CPU has
 * AVX-512F, else AVX2 where it has AVX2 and FMA, else the portable one. */
rlx_cpu_sgemm_kernel rlx_cpu_sgemm_kernel_get(void);

/* Uses `kernel` from now on (process-wide; for tests, not while GEMMs
 * run). False, and no change, when this CPU or build cannot run it. */
bool rlx_cpu_sgemm_kernel_set(rlx_cpu_sgemm_kernel kernel);

/* The register tile of the AVX-512 kernel (rows x columns of C). All give
 * the same bits (one chain of fused multiply-adds per element); they differ
 * in speed only. The first use reads option cpu.sgemm_tile
 * (RLX_CPU_SGEMM_TILE: 8x32, the default, or 8x48). Packs made for one tile
 * are not used by another (the product packs its operands itself). 12 x 32
 * and 14 x 32 only through rlx_cpu_sgemm_avx512_tile_set (benchmarks,
 * tests): the pointwise and implicit-GEMM convolutions read packed weights
 * in panels of 8 rows and would pack them again per run. */
typedef enum rlx_cpu_sgemm_avx512_tile {
    RLX_CPU_SGEMM_TILE_8X32 = 0,
    RLX_CPU_SGEMM_TILE_8X48 = 1,
    RLX_CPU_SGEMM_TILE_12X32 = 2,
    RLX_CPU_SGEMM_TILE_14X32 = 3,
    RLX_CPU_SGEMM_TILE_COUNT = 4
} rlx_cpu_sgemm_avx512_tile;

/* The AVX-512 tile in use, and its name ("8x32", ...; "?" out of range). */
rlx_cpu_sgemm_avx512_tile rlx_cpu_sgemm_avx512_tile_get(void);
const char *rlx_cpu_sgemm_avx512_tile_name(rlx_cpu_sgemm_avx512_tile tile);

/* Uses `tile` for the AVX-512 kernel from now on (process-wide; for tests
 * and benchmarks, not while GEMMs run). False, and no change, for an
 * unknown tile or a build without the x86 kernels. */
bool rlx_cpu_sgemm_avx512_tile_set(rlx_cpu_sgemm_avx512_tile tile);

/* The tile named `name`, 8x32 or 8x48 (option cpu.sgemm_tile; sessions apply it when
 * created; NULL, for a session that does not give the option: the
 * process's tile, fixed from then on): the first call fixes the tile for the
 * process, later ones must name the same (a session's GEMMs may be
 * running with packs of that tile). Errors: RLX_ERR_INVALID_ARGUMENT
 * naming the option for another name or another tile than the fixed
 * one. Without AVX-512 it is recorded and has no effect. */
rlx_status rlx_cpu_sgemm_avx512_tile_choose(const char *name);

/* The blocking of the packed product (for benchmarks and tests, not while
 * GEMMs run; it never changes the results): rows_inner false runs a
 * block's column panels of B inside its row panels of A (A's micro-panel
 * of 256 x mr floats, 8 KiB, reused from L1; B's streamed from L2; C's
 * tiles visited along its rows), true the reverse (B's 256 x nr, 32 KiB
 * at 8 x 32: the whole L1 of a Zen 4 core, so A's panels evict it; C's
 * tiles down a column strip, which misses the cache when C is larger than
 * L2); nc: columns of B per packed block (at most 2048; at least 64).
 * False, and no change, for an nc out of range. Default (and after
 * rlx_cpu_sgemm_blocking_reset): nc 2048, B's panels inside A's for
 * products (blocks of a split) of more than 128 rows (7-9% faster at M =
 * 1024), A's inside B's for the others (which then read B once; BERT at
 * batch 1), BENCHMARKS.md "BERT encoders at batch 8". */
bool rlx_cpu_sgemm_blocking_set(bool rows_inner, size_t nc);
void rlx_cpu_sgemm_blocking_reset(void);

/* A 2-D split of `outer` independent products of one shape (images x
 * groups of a convolution; 1 for a plain product) over the threads: rows
 * (M) into m_blocks blocks of whole units of m_unit, columns (N) into
 * n_blocks blocks of n_unit (each at most max_n columns when max_n is not
 * 0), chosen to minimise the time of the slowest thread, modelled as
 * ceil(outer x blocks / threads) x (the largest block's rows x columns x
 * k multiply-adds + a_cost x its rows + b_cost x its columns + a fixed
 * cost per block). a_cost / b_cost are the work per row / column that
 * each block repeats (packing A's rows: about 8 x k; packing or building
 * B's columns; streaming an operand packed once still costs about 6 x k
 * per row or column). So every thread gets work where
 * there is enough: batch-1 products with few rows (BERT's M = 128) split
 * their columns too, late-stage convolutions with few positions split
 * their output channels. Work below min_work multiply-adds in all stays
 * in one block. min_tasks (0: none): the split with the least time among
 * those of at least min_tasks blocks (outer x blocks), where the search
 * (up to two blocks per thread along each side) has one; else the least
 * time of all (convolutions on more than 2 threads ask for 2 a thread:
 * rlx_nn_conv_min_tasks). The split never changes the results (each
 * element's arithmetic depends on k alone). */
typedef struct rlx_cpu_split2d_req {
    size_t outer, m, n, k, m_unit, n_unit, max_n;
    double a_cost, b_cost;
    size_t threads;
    double min_work;
    size_t min_tasks;
} rlx_cpu_split2d_req;

typedef struct rlx_cpu_split2d {
    size_t m_blocks, n_blocks;
} rlx_cpu_split2d;

rlx_cpu_split2d rlx_cpu_split2d_choose(const rlx_cpu_split2d_req *req);

/* Block i of n_blocks over [0, total) in whole units of `unit` (the last
 * unit may be short); extents differ by at most one unit: start *b0,
 * length *len (0 when there are more blocks than units). */
void rlx_cpu_block_range(size_t total, size_t unit, size_t n_blocks, size_t i, size_t *b0, size_t *len);

/* The register tile (rows x columns of C) of the kernel in use. */
void rlx_cpu_sgemm_tile(size_t *mr, size_t *nr);

#endif
