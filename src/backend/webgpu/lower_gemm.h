/* The GEMM emitter shared by the MatMul, Gemm and Conv lowerings
 * (lower_nn.c): one batched product
 *   y[b, m, n] = act(alpha * sum_k A(b, m, k) B(b, k, n) + beta * bias(b, m, n))
 * with general strides, lowered to the generated tiled kernel (gemm_gen.c:
 * register blocked, vec4 loads, optional split-K with
 * kernels/gemm_reduce.wgsl, f16 weights), the GEMV kernel for one-row
 * MatMul/Gemm (kernels/gemv.wgsl: 16-byte loads of B, split-K), the
 * cooperative GEMM of gemm_coop_gen.c (cooperative matrices: f16 products,
 * and f32 ones in f16 mode) or the reference kernels/matmul.wgsl
 * (RLX_GEMM_KERNEL=ref). f16 products keep f32 split-K partial sums.
 *
 * Tile shapes are chosen per problem (see choose_tiles in lower_gemm.c) and
 * can be forced at run time for sweeps:
 *   RLX_GEMM_KERNEL=ref|tiled|loop|coop  kernel family (default: the
 *                                   generated kernel, which tiled forces
 *                                   in f16 mode; loop: kernels/gemm.wgsl, the
 *                                   same math with loops over the register
 *                                   block; coop in f16 mode where the
 *                                   adapter offers it)
 *   RLX_GEMM_TILE=TMxTN,WGXxWGY,BK  register block, workgroup, k step
 *                                   (e.g. 4x4,16x16,16); invalid shapes for
 *                                   the device are refused at compile
 *   RLX_GEMM_SPLITK=N               k slices for MatMul, Gemm and the
 *                                   fast conv paths, with or without
 *                                   batch dims (0: never; default: when
 *                                   the grid of tiles x batch items is
 *                                   small)
 *   RLX_GEMM_VEC4=0                 scalar loads and stores only
 *   RLX_GEMM_PREFETCH=1             register prefetch of the next k tile
 *                                   (loop kernel only)
 *   RLX_GEMM_PIPELINE=off|prefetch|double  the generated kernel's overlap
 *                                   of loads and products (wg_gemm_kernel)
 *   RLX_GEMM_CONV_GEOMETRY=params|hoist|constants  the implicit conv
 *                                   operand's index math (wg_gemm_kernel)
 *   RLX_GEMM_UNROLL_K=0             the generated kernel keeps its loop
 *                                   over the BK steps of a tile
 *   RLX_GEMM_TARGET_WG=N            workgroups the automatic choice aims
 *                                   for (default 256)
 * Internal. */
#ifndef RLX_BACKEND_WEBGPU_LOWER_GEMM_H
#define RLX_BACKEND_WEBGPU_LOWER_GEMM_H

#include "backend/webgpu/webgpu.h"
#include "backend/webgpu/wg_codes.h"
#include "ir/ops/act.h"

/* One batched GEMM. Batch dims: up to 4, outermost first; strides in
 * elements of each operand. Operand windows: (value, elem_off, elems) in
 * f32 elements; bias < 0: none. In f16 mode (caps->f16) a constant A or B
 * is read from its binary16 copy by the tiled and cooperative kernels.
 * conv: B is the implicit
 * im2col of a 2-D NCHW input (b's batch strides select image and group;
 * b_sk/b_sn unused), with the geometry below. splitk_ok: the summation
 * order may change (MatMul, Gemm, and convolution on its fast path; never
 * the im2col + GEMM reference path).
 * has_res: a residual (a Conv's fused fourth input, ir/ops/act.h) added
 * after the bias and before the activation, laid out exactly like y: the
 * element that y stores at y_off + i is read at res_off + i of value res
 * (window res_n = y_n); not with y_pix; the cooperative and the reference
 * kernels have none (the tiled kernel runs instead). */
typedef struct wg_gemm {
    uint64_t M, N, K;
    float alpha, beta;
    uint64_t a_sm, a_sk, b_sk, b_sn, bias_sm, bias_sn;
    uint64_t y_sm; /* row stride of y; 0 means N */
    int nb;
    uint64_t bdims[4], a_bs[4], b_bs[4], y_bs[4], bias_bs[4];
    int a, b, bias, y;
    uint64_t a_off, a_n, b_off, b_n, bias_off, bias_n, y_off, y_n;
    rlx_act act;
    bool conv;
    uint32_t in_h, in_w, out_w, k_h, k_w, s_h, s_w, p_h, p_w, d_h, d_w;
    /* y_pix: column n of y goes to (n / out_w) * s_h + (n % out_w) * s_w
     * (a pixel grid spread over y; not with conv, split-K or coop) */
    bool y_pix;
    bool splitk_ok;
    bool has_res;
    int res;
    uint64_t res_off, res_n;
    /* b_f32: B is read as f32 words also in an f16 product (A, the bias and
     * y halves) and never rounded to binary16 (no cooperative kernel): the
     * scratch of MatMulNBits' dequantized weights */
    bool b_f32;
    /* part_off: split-K's partial sums start at this element of the
     * scratch (the elements below hold an operand the caller wrote there:
     * MatMulNBits' dequantized weights); 0 otherwise */
    uint64_t part_off;
} wg_gemm;

/* *g as an M x N x K product y = A B of row-major A [M, K] and B [K, N]:
 * alpha = beta = 1, no bias, no batch dims, every other field zero; the
 * caller then sets what differs. */
void wg_gemm_init(wg_gemm *g, uint64_t M, uint64_t N, uint64_t K);

/* Emits the dispatches of g (one GEMM, or GEMM + reduce with split-K).
 * When an operand window exceeds one storage binding
 * (maxStorageBufferBindingSize or RLX_MAX_BINDING_BYTES) the product is
 * split into blocks that fit, each its own GEMM without split-K: by items
 * of the innermost batch dim, then rows (M), then columns (N; not for the
 * implicit conv operand), all with the same bits as one dispatch; block
 * sizes are multiples of 4 where possible so that blocks keep the vec4
 * loads (a block whose offsets are not falls back to scalar loads). Only
 * when one row of A or column of B alone exceeds a binding is K split,
 * accumulating onto y (bias = y, beta = 1, the activation on the last
 * chunk): the sums then round differently. Declines on sizes past 32-bit
 * indexing, more than 16384 blocks, windows no split makes fit, or a forced
 * tile shape the device cannot run. */
rlx_status wg_emit_gemm(wg_lower *L, const wg_gemm *g);

/* The cooperative-matrix kernel for g whatever the caps and the
 * environment say (the self-test of webgpu_probe.c). */
rlx_status wg_emit_gemm_coop(wg_lower *L, const wg_gemm *g);

/* One configuration of the tiled GEMM (gemm.wgsl's override constants):
 * register block TM x TN (4 or 8 each), workgroup WGX x WGY, k step BK (a
 * multiple of 4), load modes (amode: GA_*, bmode: GB_*, wg_codes.h),
 * binary16 operands, the implicit conv's kernel size (0: from Params),
 * vec4 or pixel-grid stores, split-K partial sums, activation kind,
 * residual (RES); unroll_k also writes out the BK steps of the k loop.
 * hblock > 0 (generated kernel only; option gpu.f16_accumulate=f16): the
 * sums of f16 operands (a16 and b16) as packed f16 FMAs into f16 partial
 * sums over hblock consecutive k (a multiple of 4 that divides bk or is a
 * multiple of it), each block's partial sum added into the f32
 * accumulators; the workgroup tiles then hold f16 (needs shader-f16). The
 * error of one output is then that of f16 sums of hblock products plus
 * f32 sums of K / hblock terms; hblock 0: f32 FMAs throughout. */
typedef struct wg_gemm_kernel {
    uint32_t tm, tn, wgx, wgy, bk, amode, bmode, ckh, ckw, act, hblock;
    bool a16, b16, yvec, splitk, ypix, unroll_k, res;
    /* pipeline (generated kernel only; option gpu.gemm_pipeline): how the
     * next k tile's loads overlap this tile's products (WG_GEMM_PIPE_*) */
    uint32_t pipeline;
    /* conv_geo (bmode GB_CONV only; option gpu.gemm_conv_geometry): the
     * implicit operand's pixel (row, column) per invocation before the k
     * loop (WG_GEMM_GEO_HOIST), and with the geometry below as constants
     * (WG_GEMM_GEO_CONSTANTS; the fields are unused otherwise) */
    uint32_t conv_geo;
    uint32_t in_h, in_w, out_w, s_h, s_w, p_h, p_w, d_h, d_w;
    /* elem: the element type (WG_GEMM_ELEM_*). WG_GEMM_ELEM_Q8: the int8
     * instance, the integer GEMM of kernels/qgemm_body.wgsl (its Params,
     * bindings and overrides; lower_qgemm.c) with the tiles holding u32
     * words of four consecutive k (signed domain), bk counting words, i32
     * accumulators updated by dot4I8Packed (dot4) or its exact emulation;
     * only tm, tn, wgx, wgy, bk apply; grid: one workgroup per (batch
     * item, wgy tm x wgx tn block of y), Params' threads the batch items;
     * an 8-bit y needs n % 4 == 0 (whole words per four columns); splitk:
     * the grid times P.nsplit slices of P.ks_words k words (a multiple of
     * bk), each storing its i32 partial sums into Y (the scratch), which
     * MODE 3 of qgemm_body's kernels adds up (lower_qgemm.c). */
    uint32_t elem;
    bool dot4;
} wg_gemm_kernel;

enum { WG_GEMM_ELEM_F32, WG_GEMM_ELEM_Q8 };

/* The tile shape for an M x N product of nbatch items (k's tm, tn, wgx,
 * wgy and bk): gpu.gemm_tile where set, else lower_gemm.c's automatic
 * rule (choose_tiles). false (k untouched) when gpu.gemm_tile is set but
 * malformed or more than the device can run: the caller declines, as the
 * f32 GEMM does. */
bool wg_gemm_auto_tile(const wg_caps *c, uint64_t M, uint64_t N, uint64_t nbatch, wg_gemm_kernel *k);

/* Split-K's slice count (1: none) for an M x N x K product of nbatch
 * items in `tiles` workgroups (tiles x items), at most max_split (the
 * caller's: two k tiles a slice): gpu.gemm_splitk where set, else slices
 * for about 1.5 x gpu.gemm_target_wg workgroups (4 x for M <= 16) when the
 * grid is at most the target and the product worth a second dispatch;
 * at most 64, and the i32/f32 partial sums [slices][nbatch][M][N] within
 * one storage binding. The f32 GEMM's and the integer GEMM's rule. */
uint64_t wg_gemm_split_count(const wg_caps *c, uint64_t M, uint64_t N, uint64_t K, uint64_t nbatch, uint64_t tiles,
                             uint64_t max_split);

/* wg_gemm_kernel.pipeline: OFF loads a k tile into workgroup memory
 * between two barriers after the products of the one before; PREFETCH
 * issues the next tile's loads into registers before this tile's products
 * and stores them after (two barriers per tile); DOUBLE keeps two copies of
 * the tiles (twice the workgroup memory) and stores the prefetched loads
 * into the one not being read (one barrier per tile). The products are
 * the same in every form: the same bits. */
enum { WG_GEMM_PIPE_OFF, WG_GEMM_PIPE_PREFETCH, WG_GEMM_PIPE_DOUBLE };
/* wg_gemm_kernel.conv_geo (the same bits every way). */
enum { WG_GEMM_GEO_PARAMS, WG_GEMM_GEO_HOIST, WG_GEMM_GEO_CONSTANTS };

/* Whether hblock f16 sums fit a tile's k step bk: a multiple of 4 that
 * divides bk or is a multiple of it (gpu.f16_block). */
static inline bool wg_gemm_hblock_fits(uint64_t hblock, uint32_t bk) {
    return hblock % 4 == 0 && (bk % hblock == 0 || hblock % bk == 0);
}

/* The WGSL of the generated tiled GEMM for k (gemm_gen.c; malloc'ed), the
 * same bits as gemm.wgsl with those overrides (f32), or as qgemm_body.wgsl
 * (WG_GEMM_ELEM_Q8). NULL on OOM or an invalid block shape. */
char *wg_gen_gemm_source(const wg_gemm_kernel *k);

/* A form of the cooperative-matrix GEMM (gemm_coop_gen.c): the element
 * type of the A and B fragments (binary16 or f32; accumulators are f32),
 * their size (8 or 16: F x F fragments), and whether coopLoad/coopStore
 * address memory column-major. wg_coop_forms lists the forms the
 * self-test (webgpu_probe.c) tries, in order of preference; caps->coop_form
 * indexes it. */
typedef struct wg_coop_form {
    bool ab_f16;
    uint8_t n;
    bool col_major;
} wg_coop_form;
extern const wg_coop_form wg_coop_forms[];
extern const size_t wg_coop_form_count;

/* The WGSL of the cooperative-matrix GEMM in form f (malloc'ed; NULL on
 * OOM or an invalid form). Same Params, bindings and overrides (A_F16,
 * B_F16, CKH, CKW, A_MODE GA_SCALAR/GA_SCALAR_M, B_MODE GB_SCALAR/GB_SCALAR_K/GB_CONV, ACT, WG = 4 * SG, SG) as the
 * gemm_common kernels; grid: one workgroup per (batch, 64 x 64 tile). */
char *wg_gen_coop_source(const wg_coop_form *f);

/* The activation kind as a WGSL override value; false when the kernels do
 * not know it. */
bool wg_act_ok(const rlx_act *a);

#endif
