/* passes/fuse_conv_residual.c — folds the residual addition of a CNN block
 * into the convolution that produces one of its operands:
 *   y = Add(Conv(x, W, B), r)          (either operand order)
 *   y = act(Add(Conv(x, W, B), r))     (an activation of fuse_activation.c:
 *                                       Relu, Clip, HardSwish, SiLU, ...)
 * and the same with Sum of exactly two inputs in place of Add (Caffe2's
 * exports, e.g. the ONNX zoo's ResNet-50: Sum(conv, r) + Relu);
 * become Conv(x, W, B, r) with the activation in its _rlx_act* attributes:
 * the internal fourth input of ir/ops/act.h, computed by every kernel as
 * act((conv(x, W) + B) + r) in f32, so the GPU adds r in the convolution's
 * epilogue instead of a dispatch of its own.
 *
 * Preconditions, each checked: the Conv output is f32 or f16 with a
 * static shape, has the Add as its only user and is not a graph output; the
 * Conv has no fused activation and no residual yet; r has exactly the Conv
 * output's shape and dtype (no broadcasting) and is not the Conv output itself; r is
 * a graph input, a constant or produced before the Conv (the fused node
 * keeps the Conv's place in the order); the Add is version 7 or later
 * (numpy broadcasting; no legacy attributes), a Sum version 6 or later
 * (no legacy attributes; with two inputs of one shape it is that Add), and
 * its output has the same shape; the activation pattern's values are
 * private to it.
 *
 * Order: after fuse_activation (a Conv whose own activation was fused,
 * Conv -> Relu -> Add, is left alone: its activation comes before the
 * addition) and before fuse_elementwise (which would otherwise take the
 * Add and its activation into a FusedElementwise dispatch).
 *
 * Results: the epilogue adds the same f32 values in the unfused order, so
 * the sum has the unfused bits on the CPU (whatever the conv path) and on
 * the GPU; the activation is then the conv epilogue's (act.h, act.wgsl),
 * which for Relu and Clip is bit-identical to the unfused op and for the
 * transcendental ones (Sigmoid, Tanh, Gelu, ...) differs by rounding only.
 *
 * f16 (fp16 models on GPU plans): the kernels read r as f16, form
 * act((acc + B) + r) in f32 and round once at the store, where the unfused
 * Conv, Add and activation round after each (README, "f16 models"): the
 * fused result is the f32 sum rounded once, within one f16 ulp of the
 * unfused one. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ops/act.h"
#include "passes/fuse_util.h"
#include "passes/passes.h"

#define PASS "fuse_conv_residual"

static rlx_status try_residual(rlx_graph *g, const rlx_fuse_users *u, int p, rlx_pass_stats *stats, bool *done) {
    rlx_node *P = &g->nodes[p];
    if (P->n_in < 2 || P->n_in > 3 || P->n_out != 1 || P->out[0] < 0) return RLX_OK;
    if (rlx_node_act(P).kind != RLX_ACT_NONE) return RLX_OK;
    int x = P->out[0];
    const rlx_value *xv = &g->values[x];
    if ((xv->dtype != RLX_DTYPE_F32 && xv->dtype != RLX_DTYPE_F16) || !rlx_value_is_static(xv) ||
        !rlx_fuse_private(g, u, x, 1))
        return RLX_OK;
    const rlx_node *A = &g->nodes[rlx_fuse_user(u, x, 0)];
    bool add = rlx_fuse_is(A, RLX_OP_Add) && A->version >= 7, sum = rlx_fuse_is(A, RLX_OP_Sum) && A->version >= 6;
    if (!(add || sum) || A->n_out != 1 || A->out[0] < 0) return RLX_OK;
    int r = rlx_fuse_other_input(A, x);
    if (r < 0) return RLX_OK;
    const rlx_value *rv = &g->values[r];
    if (rv->dtype != xv->dtype || !rlx_fuse_same_shape(rv, xv) || !rlx_fuse_same_shape(&g->values[A->out[0]], xv))
        return RLX_OK;
    if (rv->producer >= p) return RLX_OK; /* r is computed after the Conv */
    int nodes[10] = { p, (int)(A - g->nodes) };
    int nn = 2, out = A->out[0];
    rlx_act act = { RLX_ACT_NONE, 0, 0 };
    int act_out;
    if (rlx_fuse_match_act(g, u, A->out[0], nodes, &nn, &act_out, &act)) out = act_out;
    char what[768] = "";
    if (rlx_fuse_reporting()) rlx_fuse_describe(g, nodes, nn, what, sizeof what);
    int *in = realloc(P->in, 5 * sizeof *in);
    if (!in) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    P->in = in;
    if (P->n_in == 2) P->in[2] = -1; /* no bias */
    P->in[3] = r;
    P->n_in = 4;
    if (act.kind != RLX_ACT_NONE) {
        RLX_TRY(rlx_fuse_set_int(P, "_rlx_act", act.kind));
        if (act.alpha != 0.0f || signbit(act.alpha)) RLX_TRY(rlx_fuse_set_float(P, "_rlx_act_alpha", act.alpha));
        if (act.beta != 0.0f || signbit(act.beta)) RLX_TRY(rlx_fuse_set_float(P, "_rlx_act_beta", act.beta));
    }
    g->values[x].producer = -1;
    P->out[0] = out;
    for (int i = 1; i < nn; i++) g->nodes[nodes[i]].dead = true;
    g->values[out].producer = p;
    char detail[64];
    snprintf(detail, sizeof detail, "residual%s%s", act.kind != RLX_ACT_NONE ? ", act " : "",
             act.kind != RLX_ACT_NONE ? rlx_fuse_act_name(act.kind) : "");
    rlx_fuse_report(PASS, what, P, detail);
    if (stats) stats->fused += nn - 1;
    *done = true;
    return RLX_OK;
}

rlx_status rlx_pass_fuse_conv_residual(rlx_graph *g, rlx_pass_stats *stats) {
    return rlx_fuse_each_anchor(g, RLX_OP_Conv, try_residual, stats);
}
