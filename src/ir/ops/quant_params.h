/* Quantization ops: resolutions shared by shape inference
 * (src/ir/ops/ops_quant.c) and the CPU kernels (src/backend/cpu/cpu_quant.c).
 *
 * Semantics: ONNX QuantizeLinear and DequantizeLinear 10/13/19/21/23,
 * DynamicQuantizeLinear-11, QLinearMatMul-10/21, MatMulInteger-10,
 * QLinearConv-10, ConvInteger-10. rlx supports the integer types u8, i8,
 * u16, i16 (and i32 where the spec has it); the float8, float4, int4/uint4
 * and int2/uint2 types are reported as RLX_ERR_UNSUPPORTED naming the node
 * and the type. */
#ifndef RLX_IR_OPS_QUANT_PARAMS_H
#define RLX_IR_OPS_QUANT_PARAMS_H

#include "ir/graph.h"


typedef enum rlx_quant_mode {
    RLX_QUANT_PER_TENSOR, /* scale has one element (rank 0, or rank 1 of length 1) */
    RLX_QUANT_PER_AXIS,   /* scale is 1-D with x.dims[axis] elements (from version 13) */
    RLX_QUANT_BLOCKED     /* scale has x's rank, dims[axis] = ceil(x.dims[axis] / block_size) (from 21) */
} rlx_quant_mode;

typedef struct rlx_quant_gran {
    rlx_quant_mode mode;
    int axis;           /* normalised; 0 for per-tensor (and for a rank-1 x, whatever the attribute) */
    int64_t block_size; /* BLOCKED only */
} rlx_quant_gran;

/* Granularity of a QuantizeLinear / DequantizeLinear node from the shapes
 * of x, the scale and the zero point (zp_rank < 0: no zero point). Dims may
 * be RLX_DIM_DYN, which skips the checks they take part in.
 * errors: RLX_ERR_INVALID_MODEL naming the node (axis out of range, scale
 *         and zero point of different shapes, per-axis before version 13,
 *         a scale that fits no granularity, a bad block_size). */
rlx_status rlx_quant_resolve_gran(const rlx_node *n, const int64_t *x, int x_rank, const int64_t *scale,
                                  int scale_rank, const int64_t *zp, int zp_rank, rlx_quant_gran *gran);

/* A scale or zero point of a matmul operand (QLinearMatMul, MatMulInteger):
 * per tensor (one element), per row of `a` (1-D [M], or [..., M, 1]) or per
 * column of `b` (1-D [N], or [..., 1, N]). `op` has rank op_rank >= 1; a
 * rank-1 operand is promoted like numpy.matmul ([K] -> [1, K] for a,
 * [K, 1] for b). On success strides[0 .. max(op_rank, 2)) give the element
 * step of the parameter per promoted operand dim (0: broadcast).
 * errors: RLX_ERR_INVALID_MODEL naming the node and `what`. */
rlx_status rlx_quant_mm_param(const rlx_node *n, const char *what, bool per_row, const int64_t *op, int op_rank,
                              const int64_t *param, int param_rank, int64_t *strides);

/* What a scale may hold (rlx_quant_scale_bad), decided by what
 * onnxruntime gives for it:
 * RLX_QSCALE_REQUANT: a scale that an integer output is divided by (y_scale
 *   of QLinearMatMul / QLinearConv, the output scales of the contrib ops):
 *   finite and nonzero; a division by 0 or by NaN has no integer result
 *   (ONNX leaves it undefined; onnxruntime casts inf or NaN to an integer
 *   and returns arbitrary levels).
 * RLX_QSCALE_DEQUANT: the scale of an operand of an op with an integer
 *   output (a_scale / b_scale, x_scale / w_scale): finite; 0 is fine and
 *   makes every dequantized value 0 (onnxruntime: each output is the zero
 *   point), NaN or inf has no integer result.
 * RLX_QSCALE_POSITIVE: finite and > 0, what quantizers write (fuse_qdq_conv
 *   asks it of every scale it would give a QLinear node, so that it never
 *   makes a node that the validators refuse). */
typedef enum { RLX_QSCALE_REQUANT, RLX_QSCALE_DEQUANT, RLX_QSCALE_POSITIVE } rlx_qscale_rule;

/* The index of the first element of `scale` (f32 or f64) that `rule`
 * refuses; -1 when every element passes (and for NULL or another dtype). */
int64_t rlx_quant_scale_bad(const rlx_tensor *scale, rlx_qscale_rule rule);

/* Checks the elements of `scale` (f32 or f64; NULL: nothing to check):
 * rlx_quant_scale_bad(scale, rule) < 0.
 * errors: `st` (RLX_ERR_INVALID_MODEL for a constant of the model,
 *         RLX_ERR_INVALID_ARGUMENT for a run-time input) naming the node,
 *         `what`, the element, its value and what the rule asks. */
rlx_status rlx_quant_check_scale(const rlx_node *n, rlx_status st, const char *what, const rlx_tensor *scale,
                                 rlx_qscale_rule rule);

/* DequantizeLinear of an int32 x has no zero point (ONNX: "there's no
 * zero point (zero point is supposed to be 0)"; onnxruntime refuses a
 * nonzero one): checks that every element of `zp` (NULL: none) is 0.
 * errors: `st` (RLX_ERR_INVALID_MODEL for a constant of the model,
 *         RLX_ERR_INVALID_ARGUMENT for a run-time input) naming the node,
 *         the element and its value. */
rlx_status rlx_quant_check_i32_zp(const rlx_node *n, rlx_status st, const rlx_tensor *zp);

/* What `rule` asks of a scale and why, one clause for error messages
 * ("finite and nonzero (...)"). */
const char *rlx_quant_scale_rule_text(rlx_qscale_rule rule);

/* The rule for scale input i (1, 4 or 6) of QLinearConv / QLinearMatMul:
 * y_scale (6) requantizes, the others dequantize an operand. */
static inline rlx_qscale_rule rlx_quant_scale_rule(int i) {
    return i == 6 ? RLX_QSCALE_REQUANT : RLX_QSCALE_DEQUANT;
}

/* The name of scale input i (1, 4 or 6) of QLinearConv (conv) or
 * QLinearMatMul. */
static inline const char *rlx_quant_scale_name(bool conv, int i) {
    return i == 1 ? (conv ? "x_scale" : "a_scale") : i == 4 ? (conv ? "w_scale" : "b_scale") : "y_scale";
}

/* The requantization multiplier of QLinearConv / QLinearMatMul (and the
 * QDQ forms fused into them) as onnxruntime computes it: each scale rounded
 * to f32, then (a_scale * b_scale) / y_scale in f32 arithmetic, left to
 * right. Every device requantizes an int32 sum acc with it as
 *   y = saturate(round_half_even((float)acc * mult in f32) + y_zp),
 * the f32 product rounded once (onnxruntime's MlasRequantizeOutput), so
 * exact ties in f32 go to even as there. May be inf or NaN for extreme
 * scales; callers check. */
static inline float rlx_quant_mult(double a_scale, double b_scale, double y_scale) {
    float ab = (float)a_scale * (float)b_scale;
    return ab / (float)y_scale;
}

#endif
