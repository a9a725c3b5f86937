/* Internal ops (domain "rlx"): nodes the fusion passes (and, for MatMulNBits, the contrib importer) create. They are
 * never imported from or written to ONNX files (the importer refuses the
 * domain); their kernels still validate everything they read, like any op.
 * IR entries: src/ir/ops/ops_internal.c; CPU kernels:
 * src/backend/cpu/cpu_internal.c (MatMulNBits: cpu_nbits.c); WGSL: src/backend/webgpu/lower_internal.c.
 *
 * rlx.FusedElementwise (passes/fuse_elementwise.c)
 *   inputs:  1..RLX_EW_MAX_IN tensors, each broadcasting (numpy rules) to the
 *            output shape, which is the broadcast of all of them. f32, f16,
 *            bf16; bool only as a Where condition.
 *   output:  one tensor of dtype `dtype` (f32, f16 or bf16).
 *   attrs:   code    INTS   5 per instruction: op, a, b, c, rnd
 *            fparams FLOATS 2 per instruction: alpha, beta (op parameters)
 *            consts  FLOATS constant registers (optional)
 *            dtype   INT    output dtype (RLX_DTYPE_*)
 *   A register program evaluated per output element: registers
 *   [0, n_in) are the inputs (each at its broadcast position), then the
 *   constants, then one register per instruction in order; instruction k
 *   reads registers a, b, c (< its own) and writes register
 *   n_in + n_consts + k. The last instruction's register is the output.
 *   Arithmetic is each function's f32 computation (rlx_ew_f32, as the
 *   unfused f32 kernels compute it); rnd (0, RLX_DTYPE_F16 or
 *   RLX_DTYPE_BF16) rounds an instruction's result to that type, which is
 *   how a Cast between float types is represented. fuse_elementwise sets
 *   it on Casts only: the f16/bf16 intermediates of a chain stay f32 (so a
 *   chain is at least as accurate as its unfused ops; onnxruntime's
 *   policy), and the output rounds once to `dtype`.
 *   Op semantics are those of the vocabulary rows (src/ir/ew_funcs.h).
 *   qin     FLOATS 2 per input (optional): scale, zero point; an input with
 *            a scale other than 0 is u8 or i8 and its register holds
 *            DequantizeLinear-13's f32 value ((float)q - zero point) * scale
 *   qout    FLOATS 2 (optional): scale (not 0), zero point; the output then
 *            has dtype u8 or i8 and holds QuantizeLinear-13's level of the
 *            last register: round_half_even(x / scale) (one f32 division)
 *            plus the zero point, saturated, NaN -> the type's minimum
 *   passes/fuse_qdq_ew.c absorbs the DequantizeLinear producers and the
 *   QuantizeLinear user of a chain into these on CPU plans (the same bits
 *   as the three nodes apart).
 *
 * rlx.AddLayerNormalization (passes/fuse_add_layernorm.c)
 *   inputs:  A [.., d_axis, ..], B (A's shape, or A's trailing dims: rows of
 *            B repeat over A's leading dims), Scale and optional Bias (shaped
 *            like the normalised dims [d_axis, ..], leading 1s allowed).
 *   output:  Y, A's shape and dtype (float).
 *   attrs:   axis INT (default -1), epsilon FLOAT (default 1e-5).
 *   Y = LayerNormalization-17(A + B, Scale, Bias) with the sum rounded to
 *   A's dtype, statistics over dims [axis, rank) (stash_type f32).
 *
 * rlx.Attention (passes/fuse_attention.c)
 *   inputs:  Q [b.., Sq, D], K [b.., Sk, D] (or K^T [b.., D, Sk] when
 *            k_transposed = 1), V [b.., Sk, Dv], optional Mask broadcasting
 *            to [b.., Sq, Sk]. All f32 or all f16; Q, K, V of one rank >= 2
 *            and the same batch dims b...
 *   output:  [b.., Sq, Dv], the inputs' type. f16 operands are computed
 *            in f32 (scores and probabilities never rounded to f16), the
 *            output rounded once.
 *   attrs:   scale FLOAT, scale_div INT (1: scores = QK^T / scale, 0: scores
 *            = QK^T * scale), k_transposed INT; and optional layouts
 *            q_perm, k_perm, v_perm, y_perm INTS (permutations of the rank):
 *            input Q is then the tensor whose Transpose(perm = q_perm) is
 *            the Q above (likewise K, V), and the output is
 *            Transpose(Y, perm = y_perm) of the Y above. These absorb the
 *            Transposes of the heads' split and merge (exporters write
 *            Reshape -> Transpose around attention).
 *   Y = Softmax(scores + Mask, last axis) V (ONNX MatMul-13, Mul/Div-14,
 *   Add-14, Softmax-13, Transpose-13).
 *
 * rlx.QuantizeDequantize (passes/fuse_qdq.c)
 *   input:   X, f32 (f16/bf16 through the vocabulary's double reference).
 *   output:  Y, X's shape and dtype.
 *   attrs:   scale FLOAT (s), low FLOAT (the lowest 8-bit level less the
 *            zero point: -zp for uint8, -128 - zp for int8).
 *   Y = s * clamp(round_half_even(X / s), low, low + 255), a NaN quotient
 *   giving level 0: QuantizeLinear then DequantizeLinear (per tensor,
 *   8-bit) without the integer tensor; the vocabulary row QDQ
 *   (src/ir/ew_funcs.h), so chains and epilogues take it. *
 * rlx.MatMulNBits (import/onnx_contrib.c, from com.microsoft.MatMulNBits
 * with bits 4, uint8 or no zero points; passes/fuse_nbits.c, from
 * DequantizeLinear of a constant int4/uint4 weight blocked along K ->
 * MatMul or Gemm, f32 or f16, scales converted to f32)
 *   inputs:  A [.., K] f32 or f16; B uint8, N * n_blocks * block_size / 2
 *            elements ([N, n_blocks, block_size / 2] as onnxruntime writes
 *            it; n_blocks = ceil(K / block_size)): per column n and block,
 *            block_size 4-bit values, two per byte, the even k in the low
 *            nibble; scales f32 [N, n_blocks]; optional zero points uint8
 *            [N, ceil(n_blocks / 2)], block 2i in the low nibble of byte i
 *            (absent: 8). The pad of the last block (k >= K) is ignored.
 *   output:  Y [.., N], A's dtype.
 *   attrs:   K, N, block_size INT (a power of 2, 16 to 4096), bits INT (4).
 *   Y[m, n] = sum_k A[m, k] W[k, n], W[k, n] = (q - zp) * scale in f32 (the
 *   weight the dequantize-at-load expansion gives). f16 A is computed in
 *   f32, Y rounded once. */
#ifndef RLX_IR_OPS_INTERNAL_OPS_H
#define RLX_IR_OPS_INTERNAL_OPS_H

#include <stdbool.h>

#include "base/status.h"
#include "ir/ew.h"
#include "ir/graph.h"

#define RLX_INTERNAL_DOMAIN "rlx"

/* ---------------------------------------------------- FusedElementwise */

#define RLX_EW_MAX_IN 16    /* tensor inputs */
#define RLX_EW_MAX_CONSTS 32
#define RLX_EW_MAX_INSTR 64

/* An instruction: op is a function of the elementwise vocabulary (an
 * rlx_ew_fn, src/ir/ew.h; COPY with rnd is Identity or a Cast between
 * float types) of register operands a, b, c (as many as its arity). */
typedef struct rlx_ew_instr {
    int op, a, b, c; /* c is Where's condition; unused operands are -1 */
    int rnd;         /* 0, RLX_DTYPE_F16 or RLX_DTYPE_BF16 */
    float alpha, beta;
} rlx_ew_instr;

typedef struct rlx_ew_prog {
    int n_in, n_consts, n_instr;
    float consts[RLX_EW_MAX_CONSTS];
    rlx_ew_instr ins[RLX_EW_MAX_INSTR];
    rlx_dtype dtype; /* output dtype */
    /* 8-bit operands (attributes qin, qout): input i with in_scale[i] != 0
     * is u8 or i8 and reads as DequantizeLinear's ((float)q - in_zp[i]) *
     * in_scale[i]; out_scale != 0: the output (dtype u8 or i8) is
     * QuantizeLinear's of the result with out_scale and out_zp */
    float in_scale[RLX_EW_MAX_IN], in_zp[RLX_EW_MAX_IN];
    float out_scale, out_zp;
} rlx_ew_prog;

/* Reads and validates the program of a FusedElementwise node (counts,
 * op codes, register references, rounding types, output dtype).
 * errors: RLX_ERR_INVALID_MODEL naming the node. */
rlx_status rlx_ew_prog_read(const rlx_node *n, rlx_ew_prog *p);

/* The same for a program carried by another node: attributes named
 * <prefix>code, <prefix>fparams, ... and inputs first_in .. n_in - 1 of
 * the node as the program's (a QLinearConv's QDQ chain: prefix "_rlx_ew_",
 * first_in 9). */
rlx_status rlx_ew_prog_read_at(const rlx_node *n, const char *prefix, int first_in, rlx_ew_prog *p);

/* A QLinearConv's QDQ chain (passes/fuse_qlinear_ew.c): inputs 0..8 are
 * QLinearConv-10's (B may be absent), inputs 9.. a FusedElementwise program
 * over them whose attributes are named _rlx_ew_code, _rlx_ew_fparams, ...
 * (rlx_ew_prog_read_at). Exactly one program input is absent: the
 * convolution's 8-bit result y (its level, as QLinearConv writes it), which
 * the program reads through its qin. The program's output is 8-bit (qout)
 * with y's shape, and is the node's output. Kernels compute y as
 * QLinearConv, then the program on it: the bits of the two nodes apart. */
#define RLX_QEPI_PREFIX "_rlx_ew_"
#define RLX_QEPI_FIRST 9

/* Whether a parameter of shape p (rank pr) fits AddLayerNormalization's A of
 * shape x (rank xr): right-aligned to x, 1 on a leading run of dims and
 * equal to x on the rest (element e of A then reads p at e % numel(p));
 * also 1 on every dim before x's axis ax (constant across rows; ax 0 asks
 * nothing more). Unknown dims compare equal to unknown dims; pr < 0 fails. */
bool rlx_add_ln_fits(const int64_t *p, int pr, const int64_t *x, int xr, int ax);

/* The register written by instruction k. */
static inline int rlx_ew_reg(const rlx_ew_prog *p, int k) { return p->n_in + p->n_consts + k; }

/* ---------------------------------------------------- Attention */

/* The logical operands of an Attention node over its physical inputs:
 * dims and element strides per logical axis (strides of the physical
 * tensors, permuted), for Q [b.., Sq, D], K as stored logically ([b.., Sk,
 * D], or [b.., D, Sk] when kt), V [b.., Sk, Dv] and Y [b.., Sq, Dv]; and the
 * physical output dims. */
typedef struct rlx_attn_layout {
    int r;
    bool kt;
    int64_t qd[RLX_MAX_RANK], kd[RLX_MAX_RANK], vd[RLX_MAX_RANK], yd[RLX_MAX_RANK];
    int64_t qs[RLX_MAX_RANK], ks[RLX_MAX_RANK], vs[RLX_MAX_RANK], ys[RLX_MAX_RANK];
    int64_t y_phys[RLX_MAX_RANK];
} rlx_attn_layout;

/* Resolves the layout from the node's attributes and the physical input
 * dims (static, rank r each). Checks the permutations, equal batch dims
 * and matching D, Sk.
 * errors: RLX_ERR_INVALID_MODEL naming the node. */
rlx_status rlx_attn_layout_of(const rlx_node *n, int r, const int64_t *q, const int64_t *k, const int64_t *v,
                              rlx_attn_layout *out);

/* ---------------------------------------------------- MatMulNBits */

/* A MatMulNBits node's geometry: n_blocks nb = ceil(K / bs), blob = bs / 2
 * bytes per block, zrow = ceil(nb / 2) bytes of zero points per column. */
typedef struct rlx_nbits_geom {
    int64_t K, N, bs, nb, blob, zrow;
} rlx_nbits_geom;

/* Reads K, N, block_size and bits of a MatMulNBits node.
 * errors: RLX_ERR_INVALID_MODEL naming the node (bits other than 4, a
 * block_size that is no power of 2 in [16, 4096], K or N outside [1, 2^31)). */
rlx_status rlx_nbits_geom_of(const rlx_node *n, rlx_nbits_geom *out);

/* Checks dtypes and element counts of B (bt, nB), scales (st, nS) and the
 * zero points (has_z; zt, nZ) against g.
 * errors: RLX_ERR_INVALID_MODEL naming the node and the expected sizes. */
rlx_status rlx_nbits_check_inputs(const rlx_node *n, const rlx_nbits_geom *g, rlx_dtype bt, size_t nB,
                                  rlx_dtype st, size_t nS, bool has_z, rlx_dtype zt, size_t nZ);

#endif
