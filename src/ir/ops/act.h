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
 * order, after the whole accumulation.
 *
 * Conv only (passes/fuse_conv_residual.c): an optional fourth input, the
 * residual r, f32 with exactly the output's shape (no broadcasting; input 2,
 * the bias, may then be absent, id -1). Kernels compute
 * out = act((acc + bias) + r) per element, in f32, in that order: the bits
 * of the unfused Conv followed by Add(., r) and the activation. The
 * importer refuses a fourth Conv input (the op table allows 3), so only
 * the pass creates it.
 *
 * Parameters per kind (ONNX semantics of the op it replaces):
 *   RELU                          max(x, 0)                    (Relu-14)
 *   CLIP        alpha=min beta=max min(max(x, alpha), beta)      (Clip-13)
 *   HARDSIGMOID alpha, beta       max(0, min(1, alpha*x+beta)) (HardSigmoid-6)
 *   HARDSWISH                     x*max(0, min(1, x/6+0.5))    (HardSwish-14)
 *   SIGMOID                       1/(1+exp(-x))                (Sigmoid-13)
 *   SILU                          x*sigmoid(x)  (x * Sigmoid(x) pattern)
 *   GELU                          0.5x(1+erf(x/sqrt 2))        (Gelu-20, or the erf pattern)
 *   GELU_TANH                     0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3)))
 *   LEAKYRELU   alpha             x >= 0 ? x : alpha*x         (LeakyRelu-16)
 *   TANH                          tanh(x)                      (Tanh-13)
 */
#ifndef RLX_IR_OPS_ACT_H
#define RLX_IR_OPS_ACT_H

#include <math.h>

#include "ir/graph.h"

typedef enum rlx_act_kind {
    RLX_ACT_NONE = 0,
    RLX_ACT_RELU = 1,
    RLX_ACT_CLIP = 2,
    RLX_ACT_HARDSIGMOID = 3,
    RLX_ACT_HARDSWISH = 4,
    RLX_ACT_SIGMOID = 5,
    RLX_ACT_SILU = 6,
    RLX_ACT_GELU = 7,
    RLX_ACT_GELU_TANH = 8,
    RLX_ACT_LEAKYRELU = 9,
    RLX_ACT_TANH = 10
} rlx_act_kind;

typedef struct rlx_act {
    rlx_act_kind kind;
    float alpha, beta;
} rlx_act;

/* The residual input of a fused Conv (input 3), or NULL. */
static inline const rlx_value *rlx_node_residual(const rlx_graph *g, const rlx_node *n) {
    return n->n_in > 3 ? rlx_node_input(g, n, 3) : NULL;
}

/* The fused activation of a node (kind NONE when there is none). */
static inline rlx_act rlx_node_act(const rlx_node *n) {
    rlx_act a;
    a.kind = (rlx_act_kind)rlx_attr_int(n, "_rlx_act", RLX_ACT_NONE);
    a.alpha = rlx_attr_float(n, "_rlx_act_alpha", 0.0f);
    a.beta = rlx_attr_float(n, "_rlx_act_beta", 0.0f);
    return a;
}

/* The activation in f32, as the CPU kernels apply it. */
static inline float rlx_act_apply(const rlx_act *a, float x) {
    switch (a->kind) {
    case RLX_ACT_NONE: return x;
    case RLX_ACT_RELU: return x > 0.0f ? x : 0.0f;
    case RLX_ACT_CLIP: return fminf(fmaxf(x, a->alpha), a->beta);
    case RLX_ACT_HARDSIGMOID: return fmaxf(0.0f, fminf(1.0f, a->alpha * x + a->beta));
    case RLX_ACT_HARDSWISH: return x * fmaxf(0.0f, fminf(1.0f, x / 6.0f + 0.5f));
    case RLX_ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case RLX_ACT_SILU: return x / (1.0f + expf(-x));
    case RLX_ACT_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case RLX_ACT_GELU_TANH:
        return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case RLX_ACT_LEAKYRELU: return x >= 0.0f ? x : a->alpha * x;
    case RLX_ACT_TANH: return tanhf(x);
    }
    return x;
}

#endif
