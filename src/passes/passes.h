/* Graph passes. Each pass is one file with one entry point Graph -> Graph
 * (in place), and its own test in tests/. */
#ifndef RLX_PASSES_PASSES_H
#define RLX_PASSES_PASSES_H

#include "ir/graph.h"

typedef struct rlx_pass_stats {
    int folded;     /* nodes evaluated at compile time */
    int removed;    /* nodes removed as dead */
    int fused;      /* nodes fused into others */
    const struct rlx_config *cfg; /* in: the session's options (base/options.h), for the pipeline's debugging */
    /* in: the plan runs on the CPU backend alone; fuse_qdq then keeps
     * DynamicQuantizeLinear and MatMulInteger for the CPU's int8 kernels
     * instead of writing them as the f32 ops a GPU runs (the same bits);
     * widen_f16 computes f16 models in f32 */
    bool cpu_target;
    /* in: fuse_qdq_ew runs after fuse_elementwise (the pipeline sets it);
     * fuse_elementwise then also makes a lone op that borders 8-bit tensors
     * a FusedElementwise of one op, for fuse_qdq_ew to take */
    bool qdq_ew;
} rlx_pass_stats;

/* Shape inference and constant folding in one topological sweep: infers each
 * node's outputs and, when all its inputs are constant (or, for Shape and
 * Size, when the input shape is static), evaluates it with the CPU
 * backend's host interpreter (rlx_cpu_eval_node) and marks it dead; no
 * size limit. An If whose condition is a constant (one bool) is replaced
 * by the nodes of the branch it chooses (folded in turn), plus an Identity
 * per output, when the graph is not a subgraph and the branch's value
 * names are free in it. Other data-dependent ops and control flow are left
 * to eager evaluation (rlx_cpu_eval_graph). Dead nodes are compacted away.
 * errors: inference errors (naming the node), kernel errors. */
rlx_status rlx_pass_fold(rlx_graph *g, rlx_pass_stats *stats);

/* Shape inference only (no evaluation), for every node in order. */
rlx_status rlx_pass_infer(rlx_graph *g);

/* Removes nodes whose outputs are not used by graph outputs. */
rlx_status rlx_pass_dce(rlx_graph *g, rlx_pass_stats *stats);

/* Common-subexpression elimination: removes nodes that repeat an earlier
 * node (same op, inputs, attributes) and merges equal small constants. */
rlx_status rlx_pass_cse(rlx_graph *g, rlx_pass_stats *stats);

/* Rewrites pre-opset-7 forms (legacy broadcast of binary ops, PRelu-6's
 * slope) into current ones; sets *changed to the number of rewrites (then
 * infer the graph again). A PRelu-6 whose axis depends on dims unknown
 * here is left to the fold and eager evaluation (rlx_legacy_rewrite_node
 * with the shapes bound). */
rlx_status rlx_pass_legacy(rlx_graph *g, int *changed);


/* Folds per-channel affine maps after a Conv (BatchNormalization, Mul or
 * Add by per-channel constants) into its weights and bias. */
rlx_status rlx_pass_fold_conv_affine(rlx_graph *g, rlx_pass_stats *stats);

/* Fusions. Each checks its preconditions (no outside user of a fused
 * value, no graph output inside, static shapes, supported dtypes and
 * parameters), keeps the node order, and prints one line per fusion when
 * RLX_FUSION_REPORT=1 (passes/fuse_util.h). stats->fused counts the nodes
 * that disappeared into others. */

/* Conv/ConvTranspose/Gemm/MatMul + activation -> the node with a fused
 * activation (src/ir/ops/act.h); MatMul + Add(constant [N]) -> MatMul with
 * a bias input. */
rlx_status rlx_pass_fuse_activation(rlx_graph *g, rlx_pass_stats *stats);

/* passes/fuse_qdq.c: QuantizeLinear -> DequantizeLinear pairs (per tensor,
 * f32 data, 8-bit levels) become one rlx.QuantizeDequantize node (f32 fake
 * quantization, bit-exact with the pair); see the file for the conditions. */
rlx_status rlx_pass_fuse_qdq(rlx_graph *g, rlx_pass_stats *stats);

/* passes/fuse_nbits.c, for every plan, before the first fold:
 * DequantizeLinear(constant INT4 / UINT4 weight, blocked along K, f32 or
 * f16 scales) read only by MatMuls (A, W) and Gemms (A, W[, C]; transA 0,
 * alpha 1, beta 1) -> one rlx.MatMulNBits each (+ Add of C) on the weight
 * repacked once into its 4-bit layout (the same dequantized weights, f32);
 * see the file for the conditions. */
rlx_status rlx_pass_fuse_nbits(rlx_graph *g, rlx_pass_stats *stats);

/* passes/fuse_qdq.c, for every plan, before the first fold:
 * DequantizeLinear(x) -> Conv(DequantizeLinear(W), DequantizeLinear(B int32))
 * [-> a Relu or Clip that the Q makes a no-op] -> QuantizeLinear
 * (per-tensor activations, per-tensor or per-channel constant weights)
 * -> one QLinearConv (the integer convolution, the same bits on the CPU
 * and the GPU); likewise DequantizeLinear(x) -> MatMul(.,
 * DequantizeLinear(W [K, N])) -> QuantizeLinear -> one QLinearMatMul; and
 * DequantizeLinear(x) -> Gemm(., DequantizeLinear(W 2-D), DequantizeLinear(B
 * int32)) -> QuantizeLinear -> MatMulInteger (+ B) -> Cast -> Mul ->
 * QuantizeLinear(., 1, y_zp), onnxruntime's QGemm arithmetic (appended, then
 * the graph is sorted). */
rlx_status rlx_pass_fuse_qdq_conv(rlx_graph *g, rlx_pass_stats *stats);

/* Conv + Add(r) (+ activation) -> Conv with the residual r as an internal
 * fourth input (r of exactly the Conv output's shape; src/ir/ops/act.h). */
rlx_status rlx_pass_fuse_conv_residual(rlx_graph *g, rlx_pass_stats *stats);

/* Scaled-dot-product attention MatMul(Q, K^T) -> Mul/Div(scale) ->
 * Add(mask)? -> Softmax(last axis) -> MatMul(., V) -> rlx.Attention. */
rlx_status rlx_pass_fuse_attention(rlx_graph *g, rlx_pass_stats *stats);

/* Add(a, b) -> LayerNormalization -> rlx.AddLayerNormalization. */
rlx_status rlx_pass_fuse_add_layernorm(rlx_graph *g, rlx_pass_stats *stats);

/* LayerNorm written out (ReduceMean, Sub, Pow 2 or Mul, ReduceMean, Add eps,
 * Sqrt, Div, optional Mul gamma and Add beta) -> LayerNormalization-17 with
 * f32 statistics, as onnxruntime's LayerNormFusion: in f16 the written-out
 * squares overflow. passes/fuse_layernorm.c has the preconditions. Runs
 * before fuse_add_layernorm. */
rlx_status rlx_pass_fuse_layernorm(rlx_graph *g, rlx_pass_stats *stats);

/* Chains and small DAGs of elementwise ops over one output shape ->
 * rlx.FusedElementwise (a register program, src/ir/ops/fused_ew.h). */
rlx_status rlx_pass_fuse_elementwise(rlx_graph *g, rlx_pass_stats *stats);

/* passes/fuse_qdq_ew.c: a FusedElementwise reads the 8-bit inputs of its
 * per-tensor DequantizeLinear producers and writes the 8-bit output of its
 * per-tensor QuantizeLinear users (attributes qin, qout; the same bits),
 * so that the CPU runs a chain of one varying 8-bit operand as a table of
 * 256 bytes and the GPU one dispatch instead of three; a nearest Resize
 * of a DequantizeLinear moves the bytes first, and the DequantizeLinear ->
 * QuantizeLinear pair that may leave goes where it gives the levels back
 * (else one requantization). */
rlx_status rlx_pass_fuse_qdq_ew(rlx_graph *g, rlx_pass_stats *stats);

/* passes/fuse_qlinear_ew.c (GPU plans): a QLinearConv whose 8-bit result
 * only an 8-bit FusedElementwise chain reads takes the chain in as internal
 * inputs and attributes (ir/ops/internal_ops.h), for the GPU's integer
 * kernels to apply where they store; the same bits as the nodes apart. */
rlx_status rlx_pass_fuse_qlinear_ew(rlx_graph *g, rlx_pass_stats *stats);

/* passes/pow_exponent.c, GPU plans only (not stats->cpu_target): Pow of
 * a float x by a constant integer exponent gets an exponent of x's type
 * (all 2: Mul(x, x), the CPU's bits), so that the GPU runs it. */
rlx_status rlx_pass_pow_exponent(rlx_graph *g, rlx_pass_stats *stats);

/* passes/widen_f16.c, CPU plans only (stats->cpu_target): nodes with f16
 * values compute in f32 on the CPU's fast kernels (f16 constants converted
 * once, f16 intermediates f32), the model's Casts to f16 still round, f16
 * graph inputs and outputs keep their type through Casts at the edges;
 * ops whose type is not a parameter (quantization, CastLike, attribute-
 * typed outputs, other domains but rlx.MatMulNBits) stay f16 between
 * Casts. The file states the rules; README's "f16 models" the rounding
 * policy of each device. */
rlx_status rlx_pass_widen_f16(rlx_graph *g, rlx_pass_stats *stats);

/* Checks structure: every input defined before use, outputs defined, no
 * cycles, in g and in every subgraph (Loop body, If branches, Scan body;
 * outer-scope values count as defined there). Sorts the nodes
 * topologically when they are valid but out of order (as some exporters
 * write them).
 * errors: RLX_ERR_INVALID_MODEL naming the node (cycle, undefined input),
 * prefixed by the node that holds the subgraph and the attribute. */
rlx_status rlx_pass_verify(rlx_graph *g);

#endif
