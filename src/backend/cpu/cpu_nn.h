/* Internal to the nn kernel files (cpu_nn.c, cpu_nn_conv.c, cpu_nn_pool.c,
 * cpu_nn_gemm.c, cpu_nn_resize.c): the kernels they define and the working-copy helpers
 * they share.
 *
 * The reference kernels compute in double on working copies of their
 * operands (exact for every f16/bf16/f32/i8/u8 value), and round once when
 * they store the result. Fast paths (f32 only) sit beside them and are used
 * when k->reference is false. */
#ifndef RLX_BACKEND_CPU_CPU_NN_H
#define RLX_BACKEND_CPU_CPU_NN_H

#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_sgemm.h"
#include "ir/ops/act.h"
#include "ir/ops/conv_geom.h"

/* Elements of a tensor as doubles: `p` borrows the tensor's data when it is
 * f64, else points to a converted copy that rlx_nn_buf_free releases. */
typedef struct rlx_nn_buf {
    double *p;
    bool owned;
} rlx_nn_buf;

/* Loads t (any numeric dtype) as doubles. NULL t gives p == NULL.
 * errors: RLX_ERR_OUT_OF_MEMORY naming the node. */
rlx_status rlx_nn_load(const rlx_cpu_kctx *k, const rlx_tensor *t, rlx_nn_buf *b);

/* Prepares a double buffer for output t: its data when f64, else scratch.
 * errors: RLX_ERR_OUT_OF_MEMORY naming the node. */
rlx_status rlx_nn_out(const rlx_cpu_kctx *k, const rlx_tensor *t, rlx_nn_buf *b);

/* The operands of a Conv, ConvTranspose, Gemm or MatMul reference: inputs
 * 0, 1 and the optional 2 loaded into io[0..2] (io[2].p NULL when absent),
 * output 0 prepared in io[3]. On error nothing stays allocated.
 * errors: RLX_ERR_OUT_OF_MEMORY naming the node. */
rlx_status rlx_nn_load_io(const rlx_cpu_kctx *k, rlx_nn_buf io[4]);

/* Writes b into t (round to nearest for float dtypes; round half to even
 * and saturate for integer dtypes) and frees b. */
void rlx_nn_store(rlx_tensor *t, rlx_nn_buf *b);

/* Writes one element of t from a double with the rounding of rlx_nn_store. */
void rlx_nn_set(rlx_tensor *t, size_t i, double v);

void rlx_nn_buf_free(rlx_nn_buf *b);

/* Input / output i of the node, or NULL when omitted or beyond the node's
 * count (k->in has only n->n_in entries). */
static inline const rlx_tensor *rlx_nn_in(const rlx_cpu_kctx *k, int i) {
    return i < k->n->n_in ? k->in[i] : NULL;
}
static inline rlx_tensor *rlx_nn_out_t(const rlx_cpu_kctx *k, int i) {
    return i < k->n->n_out ? k->out[i] : NULL;
}

/* Convolution / pool geometry widened to three spatial dims (leading dims of
 * extent 1), so that one loop nest serves 1-D, 2-D and 3-D. */
typedef struct rlx_nn_sp3 {
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
    size_t in_sp, out_sp, ksz; /* products of in, out, k */
} rlx_nn_sp3;

void rlx_nn_sp3_init(const rlx_conv_geom *g, rlx_nn_sp3 *s);

/* Checks that output t has the shape [n, c, out...] of the geometry (the
 * shape inference and the kernel resolve it the same way; a mismatch is a
 * bug). */
rlx_status rlx_nn_check_out(const rlx_cpu_kctx *k, const rlx_tensor *t, const rlx_conv_geom *g);

/* Fused activation epilogue (src/ir/ops/act.h): y[i] = act(y[i]) for
 * i < n, in place; nothing for RLX_ACT_NONE. Conv, ConvTranspose, Gemm and
 * MatMul apply it to the finished sum (accumulation + bias). The pool
 * (base/parallel.h) shares large calls out. */
void rlx_nn_act_f32(const rlx_act *a, float *y, size_t n);
/* The same on the calling thread only (for data that is hot in its cache). */
void rlx_nn_act_f32_serial(const rlx_act *a, float *y, size_t n);

/* The kernel taps (k0, k1, k2) of position (a0, a1, a2) of a reference
 * convolution or pool, in that order: body runs with q0, q1, q2 (the
 * names given) = a * s - pb + k * d for the taps that fall inside ext[3]
 * (the input's extents for Conv and pools, which gather; the output's for
 * ConvTranspose, which scatters from input position a). */
#define RLX_NN_TAPS(sp, a0, a1, a2, ext, q0, q1, q2, ...)                                              \
    for (int64_t k0 = 0; k0 < (sp).k[0]; k0++) {                                                   \
        int64_t q0 = (a0) * (sp).s[0] - (sp).pb[0] + k0 * (sp).d[0];                                \
        if (q0 < 0 || q0 >= (ext)[0]) continue;                                                    \
        for (int64_t k1 = 0; k1 < (sp).k[1]; k1++) {                                               \
            int64_t q1 = (a1) * (sp).s[1] - (sp).pb[1] + k1 * (sp).d[1];                            \
            if (q1 < 0 || q1 >= (ext)[1]) continue;                                                \
            for (int64_t k2 = 0; k2 < (sp).k[2]; k2++) {                                           \
                int64_t q2 = (a2) * (sp).s[2] - (sp).pb[2] + k2 * (sp).d[2];                        \
                if (q2 < 0 || q2 >= (ext)[2]) continue;                                            \
                __VA_ARGS__                                                                        \
            }                                                                                      \
        }                                                                                          \
    }

/* Walks the flat positions [p0, p0 + np) of a 3-D grid `dims` in runs along
 * the last axis: calls body with (j = offset in the block, a0, a1, a2 = the
 * run's first position, len = run length). */
#define RLX_NN_GRID_RUNS(dims, p0, np, body)                                                       \
    do {                                                                                           \
        int64_t a2_ = (int64_t)((p0) % (size_t)(dims)[2]);                                         \
        int64_t a1_ = (int64_t)(((p0) / (size_t)(dims)[2]) % (size_t)(dims)[1]);                   \
        int64_t a0_ = (int64_t)((p0) / ((size_t)(dims)[2] * (size_t)(dims)[1]));                   \
        for (size_t j_ = 0; j_ < (np);) {                                                          \
            int64_t len_ = (dims)[2] - a2_;                                                        \
            if ((size_t)len_ > (np) - j_) len_ = (int64_t)((np) - j_);                             \
            {                                                                                      \
                size_t j = j_;                                                                     \
                int64_t a0 = a0_, a1 = a1_, a2 = a2_, len = len_;                                  \
                body;                                                                              \
            }                                                                                      \
            j_ += (size_t)len_;                                                                    \
            a2_ += len_;                                                                           \
            if (a2_ == (dims)[2]) {                                                                \
                a2_ = 0;                                                                           \
                if (++a1_ == (dims)[1]) a1_ = 0, a0_++;                                            \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* Hot f32 loops of the fast paths: with GCC on x86-64 Linux, compiled
 * twice, for the baseline and with FMA (and the AVX it implies), the copy
 * picked at load time by the CPU's features (an ifunc); elsewhere nothing.
 * Loops written in blocks of eight (RLX_NN_BLOCK8) become 4- or 8-wide
 * vector code at -O2.
 * FMA changes the rounding of a multiply-add, so the fast paths' results
 * may differ by float rounding between machines (never the references).
 * Not under ThreadSanitizer: the ifunc resolver runs while the dynamic
 * loader relocates, before the TSan runtime starts, and GCC instruments it
 * (the program crashed before main). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && !defined(RLX_NO_CLONES) && \
    !defined(__SANITIZE_THREAD__)
#define RLX_NN_CLONES __attribute__((target_clones("fma", "default")))
#else
#define RLX_NN_CLONES
#endif
#define RLX_NN_BLOCK8(S) S(0) S(1) S(2) S(3) S(4) S(5) S(6) S(7)

/* Largest dimension passed to cblas (its integers are C int). */
#define RLX_NN_BLAS_MAX 2147483647LL

/* Kernels (ONNX semantics of the versions listed in src/ir/ops/ops_nn.c). */
rlx_status rlx_cpu_nn_conv(rlx_cpu_kctx *k);
rlx_status rlx_cpu_nn_conv_transpose(rlx_cpu_kctx *k);
rlx_status rlx_cpu_nn_maxpool(rlx_cpu_kctx *k);
rlx_status rlx_cpu_nn_avgpool(rlx_cpu_kctx *k);
rlx_status rlx_cpu_nn_lppool(rlx_cpu_kctx *k);
rlx_status rlx_cpu_nn_global_avgpool(rlx_cpu_kctx *k);
rlx_status rlx_cpu_nn_global_maxpool(rlx_cpu_kctx *k);
rlx_status rlx_cpu_nn_global_lppool(rlx_cpu_kctx *k);
rlx_status rlx_cpu_nn_gemm(rlx_cpu_kctx *k);
rlx_status rlx_cpu_nn_matmul(rlx_cpu_kctx *k);
rlx_status rlx_cpu_nn_softmax(rlx_cpu_kctx *k);
rlx_status rlx_cpu_nn_logsoftmax(rlx_cpu_kctx *k);
rlx_status rlx_cpu_nn_hardmax(rlx_cpu_kctx *k);
rlx_status rlx_cpu_nn_resize(rlx_cpu_kctx *k);
rlx_status rlx_cpu_nn_gridsample(rlx_cpu_kctx *k); /* cpu_nn_gridsample.c */

/* Whether a convolution is 1x1, stride 1 and without padding (its input
 * is its own column matrix: no im2col). */
bool rlx_nn_sp3_direct(const rlx_nn_sp3 *s);

/* What every fast f32 Conv path reads (the head of its job), from node
 * k->n: x [n, c_in, in...], w [c_out, c_in / groups, k...], b [c_out] or
 * NULL, res (the fused residual, input 3, laid out as y) or NULL, y
 * [n, c_out, out...]; cig / cog channels per group, kt = cig x kernel
 * taps (the GEMM's K), sp output positions, direct as rlx_nn_sp3_direct,
 * act the fused activation. */
typedef struct rlx_nn_conv_io {
    const float *x, *w, *b, *res;
    float *y;
    const rlx_nn_sp3 *s;
    rlx_act act;
    size_t c_in, c_out, groups, cig, cog, kt, sp;
    bool direct;
} rlx_nn_conv_io;

void rlx_nn_conv_io_init(const rlx_cpu_kctx *k, const rlx_conv_geom *g, const rlx_nn_sp3 *s, rlx_nn_conv_io *io);

/* Fast f32 Conv paths (cpu_nn_conv_fast.c), called by rlx_cpu_nn_conv with
 * the resolved geometry when k->reference is false and the tensors are f32:
 * depthwise (g->c_in == g->group), and im2col + sgemm (every dimension
 * within RLX_NN_BLAS_MAX). They write the whole output, bias, fused residual
 * (input 3 when the node has it, f32 of the output's shape, checked by the
 * caller) and fused activation included, on the worker pool.
 * errors: RLX_ERR_OUT_OF_MEMORY (scratch). */
rlx_status rlx_nn_conv_depthwise_f32(rlx_cpu_kctx *k, const rlx_conv_geom *g, const rlx_nn_sp3 *s);
rlx_status rlx_nn_conv_gemm_f32(rlx_cpu_kctx *k, const rlx_conv_geom *g, const rlx_nn_sp3 *s);

/* The pointwise path (cpu_nn_pw.c): whether it takes the convolution of
 * io (K = io->kt <= 256, by shape (cpu_nn_pw.c) or
 * wherever K allows when forced; policy "pool"; not when
 * rlx_nn_pw_force(1)), and the convolution on it over n_ng = images x
 * groups (the same bits as rlx_nn_conv_gemm_f32, which calls it).
 * errors: RLX_ERR_OUT_OF_MEMORY (scratch). */
bool rlx_nn_conv_pw_applies(const rlx_nn_conv_io *io);
/* Whether the pointwise path reads io's weights from pk (packed at compile
 * time in its strips' rows), not from the plain weights. */
bool rlx_nn_conv_pw_takes_pack(const rlx_nn_conv_io *io, const struct rlx_cpu_sgemm_pack *pk);
rlx_status rlx_nn_conv_pw_f32(rlx_cpu_kctx *k, const rlx_nn_conv_io *io, size_t n_ng);

/* For tests and measurements: whether convolutions take the pointwise
 * path from now on (process-wide; not while kernels run): 0 by shape (the
 * default), 1 never (im2col + GEMM), 2 wherever it applies (K <= 256).
 * rlx_nn_pw_runs: how many convolutions it has run in this process. */
void rlx_nn_pw_force(int path);
int rlx_nn_pw_forced(void); /* the path rlx_nn_pw_force set */
/* For tests and measurements: whether a ConvTranspose whose kernel equals
 * its stride (no pads, dilation 1: each output element one tap) takes the
 * disjoint path (cpu_nn_conv.c: per block of input rows its GEMM, then each
 * column written once, bias and activation on the way) from now on: 0 by
 * shape (the default), 1 never (the GEMM + col2im path; the same bits).
 * rlx_nn_convt_disjoint_runs: how many it has run in this process. */
void rlx_nn_convt_force(int path);
size_t rlx_nn_convt_disjoint_runs(void);
size_t rlx_nn_pw_runs(void);
/* For tests and measurements: whether the pointwise path reads the
 * positions of strided 2-D convolutions from phase rows of the padded
 * input built once per call or from an im2col per run of positions: 0
 * never, 1 by its rule (the default: at one thread, or with at least 2
 * images x groups per thread), 2 always; the same bits either way
 * (process-wide; not while kernels run). rlx_nn_pw_phase_runs: how many
 * convolutions have run so. */
void rlx_nn_pw_phase_rows(int mode);
size_t rlx_nn_pw_phase_runs(void);

/* The channels-in-lanes path of convolutions with few output positions
 * (cpu_nn_pwt.c): rlx_nn_pwt_wanted: whether a convolution of geometry
 * s, cog output channels per group and K = kt takes it (by shape, or
 * wherever cog is a multiple of 16 when forced; then its weights are
 * packed with rlx_nn_pwt_pack at compile time).
 * rlx_nn_pwt_pack: groups matrices W_g [cog, kt] (w row-major, group after
 * group; cog a multiple of 16) transposed into panels of 48 output
 * channels (the last ones 32 or 16 wide), each panel's kt steps
 * contiguous; *out owned by the caller (free).
 * errors: RLX_ERR_OUT_OF_MEMORY (also for cog not a multiple of 16). rlx_nn_conv_pwt_applies: whether the
 * convolution of io runs on it with pk (pk->wt of io's shape, cog a
 * multiple of 16; any kernel, stride, dilation and padding: the positions
 * come from im2col unless x is read in place; AVX-512 sgemm kernel, policy
 * "pool"; not when rlx_nn_pwt_force(1)); rlx_nn_conv_pwt_f32 runs it over
 * n_ng = images x groups (the same bits as im2col + GEMM).
 * errors: RLX_ERR_OUT_OF_MEMORY (scratch). */
bool rlx_nn_pwt_wanted(const rlx_nn_sp3 *s, size_t cog, size_t kt);
rlx_status rlx_nn_pwt_pack(size_t groups, size_t cog, size_t kt, const float *w, float **out);
bool rlx_nn_conv_pwt_applies(const rlx_nn_conv_io *io, const struct rlx_cpu_sgemm_pack *pk);
rlx_status rlx_nn_conv_pwt_f32(rlx_cpu_kctx *k, const rlx_nn_conv_io *io, size_t n_ng);

/* For tests and measurements: whether 1x1 convolutions are packed for and
 * take the channels-in-lanes path from now on (process-wide; not while
 * kernels run): 0 by shape (the default), 1 never, 2 wherever it applies.
 * rlx_nn_pwt_runs: how many convolutions it has run in this process. */
void rlx_nn_pwt_force(int path);
int rlx_nn_pwt_forced(void); /* the path rlx_nn_pwt_force set */
size_t rlx_nn_pwt_runs(void);
/* For tests and measurements: whether stride-1 1-D / 2-D convolutions on
 * the channels-in-lanes path read their positions in place from
 * zero-padded planes (the default) or gather them from im2col. */
void rlx_nn_pwt_in_place(bool on);
/* For tests and measurements: the order in which a task of the
 * channels-in-lanes path runs its (weight panel, group of tiles) pairs:
 * 0 by shape (the default), 1 panel by panel, 2 group by group (where
 * the epilogue is fused; the same bits either way). */
void rlx_nn_pwt_order(int order);

/* The implicit-GEMM path (cpu_nn_conv_ig.c): whether it takes the
 * convolution of io with the weights packed as pk (k->pack; NULL: it does
 * not): policy "pool", the AVX-512 sgemm kernel, pk in its panels, 1-D or
 * 2-D; by shape (cpu_nn_conv_ig.c), or wherever that allows when forced;
 * not when rlx_nn_ig_force(1). Then the convolution on it over n_ng =
 * images x groups (the same bits as im2col + GEMM).
 * errors: RLX_ERR_OUT_OF_MEMORY (the padded input, scratch). */
bool rlx_nn_conv_ig_applies(const rlx_nn_conv_io *io, const struct rlx_cpu_sgemm_pack *pk);
rlx_status rlx_nn_conv_ig_f32(rlx_cpu_kctx *k, const rlx_nn_conv_io *io, size_t n_ng);

/* For tests and measurements: whether convolutions take the implicit-GEMM
 * path from now on (process-wide; not while kernels run): 0 by shape (the
 * default), 1 never, 2 wherever it applies. rlx_nn_ig_runs: how many
 * convolutions it has run in this process. */
void rlx_nn_ig_force(int path);
size_t rlx_nn_ig_runs(void);

/* The Winograd F(2x2, 3x3) and F(4x4, 3x3) paths (cpu_nn_conv_wino.c):
 * 2-D 3x3 convolutions at stride 1, dilation 1, one group; policy "pool",
 * the AVX-512 sgemm kernel; not when rlx_nn_wino_force(1).
 * rlx_nn_wino_wanted: whether a convolution of geometry s with cin input
 * and cout output channels (groups groups) over n_img images (the batch;
 * 0 when unknown counts as 1) takes it, and as which: 0 no, 2 F(2x2), 4
 * F(4x4) (by shape, F(4x4) only when max_m is 4; or wherever the geometry
 * allows when forced); then
 * its weights are packed with rlx_nn_wino_pack at compile time.
 * rlx_nn_wino_pack: w [cout, cin, 3, 3] (row-major) transformed for
 * F(m x m, 3x3), m 2 or 4, to U = G g G^T (computed in double, rounded
 * once) and laid out [(m + 2)^2][ceil(cout / 8)][cin][8] (zeros past
 * cout); *out owned by the caller (free).
 * errors: RLX_ERR_OUT_OF_MEMORY.
 * rlx_nn_wino_xlim: for weights w[0 .. n) of a convolution with cin
 * input channels (per group) on F(m x m, 3x3), the bound on input
 * magnitudes below which no transformed value, product or sum of the
 * path can overflow (the largest transformed input times the largest
 * transformed weight, times cin terms, through the output transform,
 * with a margin of 2^8; at most 2^64); 0 when the weights are not all
 * finite and below 2^64 (they stay off the path).
 * rlx_nn_wino_tame: whether v[0 .. n) are all finite and below lim in
 * magnitude (an input that is not declines: the transforms would give
 * NaN or overflow where the direct sums do not).
 * rlx_nn_conv_wino_applies: whether the convolution of io runs on it with
 * pk (pk->wino of io's channels); rlx_nn_conv_wino_f32 runs it over n_img
 * images, or, when an input value that it reads is not tame, sets
 * *declined (the caller runs another path, which writes all of y): before
 * writing anything, except at several threads on one pass where y
 * overlaps neither x nor the residual (its tasks check the rows they pad,
 * and some may have written their outputs). Not the bits of im2col +
 * GEMM: the reference's results within a tolerance
 * (tests/test_cpu_conv_fast.c).
 * errors: RLX_ERR_OUT_OF_MEMORY (the padded input, scratch). */
int rlx_nn_wino_wanted(const rlx_nn_sp3 *s, size_t n_img, size_t groups, size_t cin, size_t cout, int max_m);
rlx_status rlx_nn_wino_pack(int m, size_t cout, size_t cin, const float *w, float **out);
float rlx_nn_wino_xlim(int m, size_t cin, const float *w, size_t n);
bool rlx_nn_wino_tame(const float *v, size_t n, float lim);
bool rlx_nn_conv_wino_applies(const rlx_nn_conv_io *io, const struct rlx_cpu_sgemm_pack *pk);
rlx_status rlx_nn_conv_wino_f32(rlx_cpu_kctx *k, const rlx_nn_conv_io *io, size_t n_img, bool *declined);

/* For tests and measurements: whether 3x3 convolutions are packed for and
 * take the Winograd path from now on (process-wide; not while kernels
 * run): 0 by shape (the default), 1 never, 2 as F(2x2) wherever it
 * applies, 4 as F(4x4) wherever it applies (F(2x2) past 512 input
 * channels). rlx_nn_wino_runs: how many convolutions it has run in this process. */
void rlx_nn_wino_force(int path);
size_t rlx_nn_wino_runs(void);
/* How many passes of it have run in its phased form (F(2x2) where the
 * pass's groups of tile blocks are at most half the threads, from 3: the
 * inputs' transforms, the products and the output transforms as three
 * regions over shared buffers; the same bits). */
size_t rlx_nn_wino_phased_runs(void);

/* im2col of output positions [p0, p0 + np) for channels [c0, c1) of one
 * group of one image x: col[((c - c0) * K + kk) * np + j], kk the kernel
 * tap in (k0, k1, k2) order, K = s->ksz; taps in the padding store 0. */
void rlx_nn_im2col_block(const float *x, const rlx_nn_sp3 *s, size_t c0, size_t c1, size_t p0, size_t np,
                         float *col);

/* One run of im2col (the vector copy where the CPU has AVX-512): d[t] =
 * row[i2 + t * st] for t < len where 0 <= i2 + t * st < w (inside the
 * row), else 0 (padding); st >= 1. */
void rlx_nn_gather_run(float *d, const float *row, int64_t w, int64_t i2, int64_t st, int64_t len);

/* The fewest tasks (rlx_cpu_split2d_req.min_tasks) a convolution of `macs`
 * multiply-adds asks of its 2-D split on `threads` threads (the GEMM,
 * pointwise and implicit-GEMM paths): 2 a thread on more than 2 threads
 * where each task keeps at least 2^17 multiply-adds (a few us), so that a
 * thread that starts late or is descheduled holds the node up by half its
 * share, its other task taken from the back by the others (the 16-core
 * host's rounds swing 2-3x, BENCHMARKS.md "Issue 13's CPU table at 16
 * threads on the H100 machine's host"; Inception v2's 1x1 192->64 at 28x28
 * was 13 tasks on 16 threads); else 0 (the split as before: 1 and 2
 * threads unchanged). */
size_t rlx_nn_conv_min_tasks(double macs, size_t threads);

/* The 2-D split request of the GEMM path (policy "pool") for convolution
 * io over n_ng images x groups on `threads` threads, with the weights
 * packed as pk (NULL: packed by each block): what rlx_nn_conv_gemm_f32
 * hands rlx_cpu_split2d_choose (for tests: the split it makes). */
rlx_cpu_split2d_req rlx_nn_conv_gemm_req(const rlx_nn_conv_io *io, const struct rlx_cpu_sgemm_pack *pk, size_t n_ng,
                                         size_t threads);

/* The block of task `item` of a convolution split into (image and group) x
 * n_cb blocks of positions (units of n_unit of sp) x n_mb blocks of a
 * group's output channels (units of m_unit of cog), the last fastest
 * (rlx_cpu_block_range): image n, group gi (ng = n * groups + gi),
 * positions [p0, p0 + np), channels [m0, m0 + mi). False when the block is
 * empty. */
typedef struct rlx_nn_conv_block {
    size_t n, gi, ng, p0, np, m0, mi;
} rlx_nn_conv_block;
bool rlx_nn_conv_block_of(size_t item, size_t groups, size_t sp, size_t n_unit, size_t n_cb, size_t cog,
                          size_t m_unit, size_t n_mb, rlx_nn_conv_block *out);

/* The GEMM path's epilogue over a rows x cols block of finished sums y (row
 * stride ld): y = act((y + bias[r]) + res) by its rules (cpu_nn_conv_fast.c;
 * bias one value per row or NULL, res laid out as y or NULL). */
void rlx_nn_conv_epilogue_block(float *y, size_t ld, size_t rows, size_t cols, const float *bias, const float *res,
                                const rlx_act *act);

/* For tests and measurements: which path 2-D / 1-D depthwise convolutions
 * with channel multiplier 1 take from now on (process-wide; not while
 * kernels run): 0 by shape (the default), 1 the plane path, 2 the
 * channel-blocked path (cpu_nn_conv_fast.c), 3 the row path
 * (cpu_nn_dw_rows.c) where rlx_nn_dw_rows_applies, 4 the flattened-planes
 * path (the same file) where rlx_nn_dw_flat_applies, else by shape. */
void rlx_nn_dw_force(int path);

/* Output rows the depthwise row path computes at a time (its blocks of
 * rows are whole multiples of it). */
#define RLX_NN_DWR_ROWS 4

/* Which path runs a depthwise convolution (rlx_nn_conv_depthwise_f32, by
 * shape and rlx_nn_dw_force) and how it splits into tasks on `threads`
 * threads (for tests and measurements; the paths take their split from
 * here). A task is (group of images, block of channels, block of output
 * rows): images in groups of ipt (n_ig groups, the last may hold fewer),
 * channels in blocks of cb (n_cb, the last may hold fewer), output rows
 * in n_rb blocks (the channel-blocked path: rows [oh rb / n_rb, oh (rb +
 * 1) / n_rb); the row path: whole groups of RLX_NN_DWR_ROWS rows,
 * rlx_cpu_block_range). tasks = n_ig x n_cb x n_rb.
 * Rules: planes: one (image, channel) plane a task; channel-blocked: at
 * least 3 tasks per thread by the images, then the rows; flat: at least 3
 * per thread by the images; rows: pairs of channel planes, and where
 * those give fewer than 4 tasks per thread on more than 2 threads, blocks
 * of rows until they do (each at least about 1 Ki output points:
 * MobileNetV2's 32 x 112x112 at batch 1 was 16 tasks on 16 threads, now
 * 64). */
typedef enum rlx_nn_dw_path {
    RLX_NN_DW_PLANES = 1,
    RLX_NN_DW_BLOCKED = 2,
    RLX_NN_DW_ROWS = 3,
    RLX_NN_DW_FLAT = 4,
} rlx_nn_dw_path;

typedef struct rlx_nn_dw_split {
    rlx_nn_dw_path path;
    size_t n_img, ipt, n_ig;
    size_t c, cb, n_cb;
    size_t oh, n_rb;
    size_t tasks;
} rlx_nn_dw_split;

rlx_nn_dw_path rlx_nn_dw_path_of(const rlx_conv_geom *g, const rlx_nn_sp3 *s);
rlx_nn_dw_split rlx_nn_dw_split_of(const rlx_conv_geom *g, const rlx_nn_sp3 *s, size_t threads);

/* Output points (images x channels x rows x output columns ow) of task
 * `item` of split sp, in the order the path numbers its tasks. */
size_t rlx_nn_dw_task_points(const rlx_nn_dw_split *sp, size_t ow, size_t item);

/* The depthwise row path (cpu_nn_dw_rows.c): whether it can run the
 * convolution of g / s (2-D, multiplier 1, 3x3, dilation 1, pads 1, stride
 * 1 or 2, AVX-512), and the convolution on it (x [n, c, h, w], w [c, 1, 3, 3], bias,
 * fused residual and activation as rlx_nn_conv_depthwise_f32), on the
 * worker pool, two channel planes (or a block of their rows) per task
 * (rlx_nn_dw_split_of); the channel-blocked path's
 * bits. errors: RLX_ERR_OUT_OF_MEMORY. */
bool rlx_nn_dw_rows_applies(const rlx_conv_geom *g, const rlx_nn_sp3 *s);
rlx_status rlx_nn_dw_rows_f32(rlx_cpu_kctx *k, const rlx_conv_geom *g, const rlx_nn_sp3 *s);

/* The depthwise flattened-planes path (cpu_nn_dw_rows.c): whether it can
 * run the convolution of g / s (where the row path can, at stride 1, on
 * output planes of 16 to 256 points), and the convolution on it (the
 * operands of rlx_nn_dw_rows_f32, 16 channel planes a task; the
 * channel-blocked path's bits). errors: RLX_ERR_OUT_OF_MEMORY. */
bool rlx_nn_dw_flat_applies(const rlx_conv_geom *g, const rlx_nn_sp3 *s);
rlx_status rlx_nn_dw_flat_f32(rlx_cpu_kctx *k, const rlx_conv_geom *g, const rlx_nn_sp3 *s);

/* Item `item` of a job, with `scratch` (the slot's buffer) to itself. */
typedef void (*rlx_nn_item_fn)(void *ctx, size_t item, float *scratch);

/* Runs fn over items [0, n_items) on the worker pool, each slot (one per
 * thread) taking the items of its contiguous share in order, then those
 * left in the others' shares from their ends, with its own slot_floats of
 * scratch (cpu_nn_conv_fast.c): the running thread's RLX_SCRATCH_TASK
 * buffer (base/scratch.h: no allocation in steady runs), so fn must not
 * call rlx_nn_run_items itself (its items would share that buffer).
 * errors: RLX_ERR_OUT_OF_MEMORY (scratch) naming the node,
 * RLX_ERR_INVALID_ARGUMENT for more than 2^32 - 1 items. */
rlx_status rlx_nn_run_items(const rlx_cpu_kctx *k, size_t n_items, size_t slot_floats, rlx_nn_item_fn fn,
                            void *ctx);

/* Whether input 1 of n is a constant with data and input 0 is f32 (what
 * rlx_cpu_prepare_node packs); g NULL (tests): input 1 counts as
 * constant, input 0's dtype is its tensor's. */
bool rlx_nn_const_operand(const rlx_graph *g, const rlx_node *n, const rlx_tensor *const *in);

/* rlx_cpu_prepare_node for Conv (cpu_nn_conv.c): the constant f32 weights
 * of a convolution that runs as im2col + GEMM (not depthwise), packed as
 * `group` matrices [c_out / group, c_in / group * kernel size]; with
 * winograd (the largest variant allowed: 0, 2 or 4), a 3x3 stride-1
 * convolution that rlx_nn_wino_wanted picks as Winograd F(2x2, 3x3) or
 * F(4x4, 3x3) weights instead. */
rlx_status rlx_nn_conv_prepare(const rlx_graph *g, const rlx_node *n, const rlx_tensor *const *in, int winograd,
                               struct rlx_cpu_sgemm_pack *out);

/* rlx_cpu_pack_serves for Conv (cpu_nn_conv.c). */
bool rlx_nn_conv_pack_serves(const rlx_node *n, const rlx_tensor *const *in, const struct rlx_cpu_sgemm_pack *pk);

/* The AVX-512 8 x 16 NV register tile (NV = 1, 2, 3) of the implicit-GEMM
 * and Winograd kernels (cpu_nn_conv_ig.c, cpu_nn_conv_wino.c):
 * RLX_NN_K8_KERN defines NAME(kc, ap, bm, off, c, ldc, add, ldb): C[8][16 NV]
 * (row stride ldc) = the kc-step sums of ap (kc x 8 packed weights) times
 * B's rows (row p at bm + off[p] with OFFS, else bm + p * ldb), one fused
 * multiply-add chain per element from 0, then ST##NV(i) of each row i (the
 * includer's store; it may read add). The accumulators c<i>_<v> are named,
 * so that the compiler keeps them in registers. */
#define RLX_NN_K8_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define RLX_NN_K8_DECL1(i) __m512 c##i##_0 = _mm512_setzero_ps();
#define RLX_NN_K8_DECL2(i) RLX_NN_K8_DECL1(i) __m512 c##i##_1 = _mm512_setzero_ps();
#define RLX_NN_K8_DECL3(i) RLX_NN_K8_DECL2(i) __m512 c##i##_2 = _mm512_setzero_ps();
#define RLX_NN_K8_LOAD1 __m512 b0 = _mm512_loadu_ps(b);
#define RLX_NN_K8_LOAD2 RLX_NN_K8_LOAD1 __m512 b1 = _mm512_loadu_ps(b + 16);
#define RLX_NN_K8_LOAD3 RLX_NN_K8_LOAD2 __m512 b2 = _mm512_loadu_ps(b + 32);
#define RLX_NN_K8_FMA1(i) c##i##_0 = _mm512_fmadd_ps(a, b0, c##i##_0);
#define RLX_NN_K8_FMA2(i) RLX_NN_K8_FMA1(i) c##i##_1 = _mm512_fmadd_ps(a, b1, c##i##_1);
#define RLX_NN_K8_FMA3(i) RLX_NN_K8_FMA2(i) c##i##_2 = _mm512_fmadd_ps(a, b2, c##i##_2);
#define RLX_NN_K8_ROW1(i) { __m512 a = _mm512_set1_ps(ap[i]); RLX_NN_K8_FMA1(i) }
#define RLX_NN_K8_ROW2(i) { __m512 a = _mm512_set1_ps(ap[i]); RLX_NN_K8_FMA2(i) }
#define RLX_NN_K8_ROW3(i) { __m512 a = _mm512_set1_ps(ap[i]); RLX_NN_K8_FMA3(i) }
#define RLX_NN_K8_KERN(NAME, NV, OFFS, ST)                                                              \
    __attribute__((target("avx512f"))) static void NAME(size_t kc, const float *ap, const float *bm,    \
                                                        const int32_t *off, float *c, size_t ldc, bool add,\
                                                        size_t ldb) {                                   \
        RLX_NN_K8_ROWS(RLX_NN_K8_DECL##NV)                                                              \
        _Pragma("GCC unroll 2") for (size_t p = 0; p < kc; p++, ap += 8, bm += (OFFS) ? 0 : ldb) {      \
            const float *b = (OFFS) ? bm + off[p] : bm;                                                 \
            RLX_NN_K8_LOAD##NV                                                                          \
            RLX_NN_K8_ROWS(RLX_NN_K8_ROW##NV)                                                           \
        }                                                                                               \
        RLX_NN_K8_ROWS(ST##NV)                                                                          \
    }

#endif
