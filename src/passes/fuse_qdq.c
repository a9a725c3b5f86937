/* passes/fuse_qdq.c — turns the QuantizeLinear -> DequantizeLinear pairs of
 * QDQ models (onnxruntime's quantize_static, QAT exports) into one
 * elementwise node, rlx.QuantizeDequantize (the "fake quantization" of the
 * activations), so they run in f32 on any device, fuse into elementwise
 * chains and GEMM/conv epilogues (its vocabulary row QDQ, src/ir/ew_funcs.h,
 * has RLX_EW_CHAIN and RLX_EW_ACT), and never materialise the 8-bit tensor.
 * The weights' DequantizeLinear of constants need nothing here: the fold
 * pass turns them into f32 constants before this pass, so QDQ Conv, MatMul
 * and Gemm run as the f32 kernels.
 *
 * A pair is taken when: Q reads an f32 tensor x; both nodes are per tensor
 * (scale of one element, f32, constant; zero point absent or a constant of
 * one element, uint8 or int8, equal in both), with equal scales; Q's output
 * is uint8 or int8 (the level range [low, low + 255] is what the row
 * encodes: low = type minimum - zero point), no graph output, and its users
 * are DequantizeLinear nodes that all match (each becomes the new node; the
 * Q node then has no user and dce removes it); Q's precision attribute
 * (version 23) is 0 or f32 and DQ's output is f32. The result equals
 * Q then DQ bit for bit on the CPU (same f32 division, rounding, saturation
 * and product). */
#include <stdio.h>
#include <string.h>

#include "ir/op.h"
#include "ir/ops/internal_ops.h"
#include "passes/fuse_util.h"
#include "passes/passes.h"

#define PASS "fuse_qdq"

/* Scale (f32) and zero point of a per-tensor Q or DQ node n (input 1 and
 * optional input 2); false when they are not constants of one element. */
static bool qparams(const rlx_graph *g, const rlx_node *n, double *scale, double *zp, rlx_dtype *zp_dt) {
    const rlx_value *s = rlx_node_input(g, n, 1), *z = n->n_in > 2 ? rlx_node_input(g, n, 2) : NULL;
    if (!s || !s->konst || s->dtype != RLX_DTYPE_F32 || rlx_value_numel(s) != 1 || !rlx_konst_scalar(s, scale))
        return false;
    *zp = 0;
    *zp_dt = RLX_DTYPE_UNDEFINED;
    if (!z) return true;
    if (!z->konst || rlx_value_numel(z) != 1 || !rlx_konst_scalar(z, zp)) return false;
    *zp_dt = z->dtype;
    return true;
}

/* Whether DQ node d reads Q's output v with Q's parameters. */
static bool dq_matches(const rlx_graph *g, const rlx_node *d, int v, double scale, double zp, rlx_dtype zp_dt) {
    double s2, z2;
    rlx_dtype zdt2;
    if (!rlx_fuse_is(d, RLX_OP_DequantizeLinear) || d->n_in < 2 || d->in[0] != v || d->n_out != 1 || d->out[0] < 0)
        return false;
    if (g->values[d->out[0]].dtype != RLX_DTYPE_F32 || !qparams(g, d, &s2, &z2, &zdt2)) return false;
    if (rlx_param_int(d, "block_size") != 0) return false;
    /* an absent zero point is 0 of the value's type: compare values only */
    (void)zdt2, (void)zp_dt;
    return s2 == scale && z2 == zp;
}

static rlx_status fuse_one(rlx_graph *g, const rlx_fuse_users *u, int qi, rlx_pass_stats *stats, bool *done) {
    const rlx_node *q = &g->nodes[qi];
    if (q->n_in < 2 || q->n_out != 1 || q->out[0] < 0) return RLX_OK;
    int x = q->in[0], v = q->out[0];
    const rlx_value *xv = &g->values[x], *qv = &g->values[v];
    if (xv->dtype != RLX_DTYPE_F32 || !rlx_value_is_static(xv) || rlx_fuse_is_output(g, v)) return RLX_OK;
    double lo;
    if (qv->dtype == RLX_DTYPE_U8) lo = 0;
    else if (qv->dtype == RLX_DTYPE_I8) lo = -128;
    else return RLX_OK;
    if (rlx_param_int(q, "block_size") != 0) return RLX_OK;
    if (q->version >= 23) {
        int64_t prec = rlx_param_int(q, "precision");
        if (prec != 0 && prec != RLX_DTYPE_F32) return RLX_OK;
    }
    double scale, zp;
    rlx_dtype zp_dt;
    if (!qparams(g, q, &scale, &zp, &zp_dt)) return RLX_OK;
    int nu = rlx_fuse_n_users(u, v);
    if (nu < 1) return RLX_OK;
    for (int j = 0; j < nu; j++)
        if (!dq_matches(g, &g->nodes[rlx_fuse_user(u, v, j)], v, scale, zp, zp_dt)) return RLX_OK;
    int users[64];
    if (nu > (int)RLX_ARRAY_LEN(users)) return RLX_OK;
    for (int j = 0; j < nu; j++) users[j] = rlx_fuse_user(u, v, j);
    for (int j = 0; j < nu; j++) {
        int d = users[j], out = g->nodes[d].out[0];
        char what[512] = "";
        if (rlx_fuse_reporting()) {
            int pair[2] = { qi, d };
            rlx_fuse_describe(g, pair, 2, what, sizeof what);
        }
        char name[256];
        snprintf(name, sizeof name, "%s_qdq", g->nodes[d].name ? g->nodes[d].name : "dq");
        rlx_node_attr attrs[2];
        memset(attrs, 0, sizeof attrs);
        RLX_TRY(rlx_node_attr_set_float(&attrs[0], "scale", (float)scale));
        rlx_status st = rlx_node_attr_set_float(&attrs[1], "low", (float)(lo - zp));
        if (st) {
            rlx_node_attr_free(&attrs[0]);
            return st;
        }
        g->nodes[d].dead = true;
        g->values[out].producer = -1;
        RLX_TRY(rlx_fuse_emplace(g, d, "QuantizeDequantize", RLX_INTERNAL_DOMAIN, name, &x, 1, &out, 1, attrs, 2));
        rlx_fuse_report(PASS, what, &g->nodes[d], "fake quantization in f32");
        if (stats) stats->fused++;
    }
    g->nodes[qi].dead = true; /* its only users are gone */
    *done = true;
    return RLX_OK;
}

rlx_status rlx_pass_fuse_qdq(rlx_graph *g, rlx_pass_stats *stats) {
    return rlx_fuse_each_anchor(g, RLX_OP_QuantizeLinear, fuse_one, stats);
}
