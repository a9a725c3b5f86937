/* Fused activation epilogues.
 *
 * The fusion pass (passes/fuse_activation.c) folds an activation that follows
 * a Conv, ConvTranspose, Gemm or MatMul into that node, recorded as internal
 * attributes (names start with "_rlx_", never read from or written to ONNX):
 *   _rlx_act        INT    an rlx_act_kind
 *   _rlx_act_alpha  FLOAT  the activation's first parameter (see below)
 *   _rlx_act_beta   FLOAT  the second
 * and, for MatMul only, an optional third input: a bias of shape [N] added
 * to every row before the activation (MatMul + Add(bias) fused).
 * Kernels (CPU and WGSL) compute out = act(acc + bias) per element, in that
 * order, after the whole accumulation, in f32; an f16 node (fp16 models on
 * GPU plans) rounds that once, at the store.
 *
 * Conv only (passes/fuse_conv_residual.c): an optional fourth input, the
 * residual r, of the output's dtype (f32 or f16) and exactly its shape (no
 * broadcasting; input 2, the bias, may then be absent, id -1). Kernels
 * compute out = act((acc + bias) + r) per element, in f32, in that order:
 * in f32 the bits of the unfused Conv followed by Add(., r) and the
 * activation; in f16 that f32 result rounded once, at the store. The
 * importer refuses a fourth Conv input (the op table allows 3), so only
 * the pass creates it.
 *
 * The activation is any one-operand function of the elementwise vocabulary
 * (src/ir/ew.h): _rlx_act is its rlx_ew_fn code, alpha and beta its
 * parameters p0 and p1; which ops fuse_activation folds is the RLX_EW_ACT
 * flag of their rows, plus the SiLU pattern x * Sigmoid(x). */
#ifndef RLX_IR_OPS_ACT_H
#define RLX_IR_OPS_ACT_H

#include <math.h>

#include "ir/ew.h"
#include "ir/graph.h"

/* Thin aliases of the vocabulary: a fused activation is an rlx_ew_call. */
typedef rlx_ew_fn rlx_act_kind;
typedef rlx_ew_call rlx_act;
#define RLX_ACT_NONE RLX_EW_COPY
#define RLX_ACT_RELU RLX_EW_RELU
#define RLX_ACT_CLIP RLX_EW_CLIP
#define RLX_ACT_HARDSIGMOID RLX_EW_HARDSIGMOID
#define RLX_ACT_HARDSWISH RLX_EW_HARDSWISH
#define RLX_ACT_SIGMOID RLX_EW_SIGMOID
#define RLX_ACT_SILU RLX_EW_SILU
#define RLX_ACT_GELU RLX_EW_GELU
#define RLX_ACT_GELU_TANH RLX_EW_GELU_TANH
#define RLX_ACT_LEAKYRELU RLX_EW_LEAKYRELU
#define RLX_ACT_TANH RLX_EW_TANH

/* The residual input of a fused Conv (input 3), or NULL. */
static inline const rlx_value *rlx_node_residual(const rlx_graph *g, const rlx_node *n) {
    return n->n_in > 3 ? rlx_node_input(g, n, 3) : NULL;
}

/* The fused activation of a node (RLX_ACT_NONE when there is none), as
 * rlx_node_resolve_params resolved it from the attributes above. */
static inline rlx_act rlx_node_act(const rlx_node *n) {
    rlx_act a;
    a.kind = (rlx_ew_fn)n->act_fn;
    a.alpha = n->act_alpha;
    a.beta = n->act_beta;
    return a;
}

/* The activation in f32, as every CPU kernel applies it (the vocabulary's
 * f32 computation). */
static inline float rlx_act_apply(const rlx_act *a, float x) { return rlx_ew_f32(a->kind, x, x, x, a->alpha, a->beta); }

#endif
