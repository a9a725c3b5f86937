/* passes/fuse_add_layernorm.c — Add(a, b) -> LayerNormalization becomes one
 * rlx.AddLayerNormalization node (src/ir/ops/internal_ops.h): the residual
 * sum is formed while the row is read, and each backend makes one pass
 * over the row (CPU: cpu_internal.c; GPU: kernels/add_layernorm.wgsl).
 *
 * Preconditions, each checked: the Add is of version >= 7 with two inputs;
 * its output has no user but the LayerNormalization (version 17) and is
 * not a graph output; LayerNormalization has only its Y output, stash_type
 * 1 (f32); all values are of one float dtype with static shapes; one Add
 * input has the output's shape (A), the other (B) that shape or its
 * trailing dims (rows repeating over the leading dims, e.g. position
 * embeddings [1, S, H] for [N, S, H]); Scale and Bias are (a suffix of) the
 * normalised dims, the same for every row. The result equals the unfused
 * pair's exactly on the CPU (same f32 sum, same double statistics). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/tensor.h"
#include "ir/op.h"
#include "ir/ops/internal_ops.h"
#include "ir/ops/ops.h"
#include "passes/fuse_util.h"
#include "passes/passes.h"

#define PASS "fuse_add_layernorm"

/* p is static and fits x as a parameter of the fused node (rlx_add_ln_fits). */
static bool fits(const rlx_value *p, const rlx_value *x, int ax) {
    return rlx_value_is_static(p) && rlx_add_ln_fits(p->dims, p->rank, x->dims, x->rank, ax);
}

static rlx_status fuse_one(rlx_graph *g, const rlx_fuse_users *u, int ln_id, rlx_pass_stats *stats, bool *done) {
    const rlx_node *ln = &g->nodes[ln_id];
    if (ln->version != 17 || ln->n_in < 2 || ln->n_out < 1 || ln->out[0] < 0) return RLX_OK;
    for (int k = 1; k < ln->n_out; k++)
        if (ln->out[k] >= 0) return RLX_OK;
    if (rlx_param_int(ln, RLX_A_stash_type) != RLX_DTYPE_F32) return RLX_OK;
    int x = ln->in[0];
    const rlx_node *add = rlx_fuse_producer(g, x);
    if (!add || !rlx_fuse_is(add, RLX_OP_Add) || add->version < 7 || add->n_in != 2 || add->n_out != 1 ||
        !rlx_fuse_private(g, u, x, 1))
        return RLX_OK;
    const rlx_value *xv = &g->values[x], *y = &g->values[ln->out[0]];
    const rlx_value *a = rlx_node_input(g, add, 0), *b = rlx_node_input(g, add, 1);
    const rlx_value *sc = rlx_node_input(g, ln, 1), *bi = rlx_node_input(g, ln, 2);
    if (!a || !b || !sc || !rlx_dtype_is_float(xv->dtype) || !rlx_fuse_same_shape(xv, y) || xv->rank < 1) return RLX_OK;
    const rlx_value *vals[4] = { a, b, sc, bi };
    for (int i = 0; i < 4; i++)
        if (vals[i] && (vals[i]->dtype != xv->dtype || !rlx_value_is_static(vals[i]))) return RLX_OK;
    int ia = add->in[0], ib = add->in[1];
    if (!rlx_fuse_same_shape(a, xv)) { /* the full-shaped operand goes first (f32 + is commutative) */
        int t = ia;
        ia = ib, ib = t;
        const rlx_value *tv = a;
        a = b, b = tv;
    }
    int ax;
    int64_t axis = rlx_param_int(ln, RLX_A_axis);
    if (!rlx_fuse_same_shape(a, xv) || !fits(b, xv, 0) || !rlx_norm_axis(axis, xv->rank, &ax) ||
        !fits(sc, xv, ax) || (bi && !fits(bi, xv, ax)))
        return RLX_OK;
    int ids[2] = { (int)(add - g->nodes), ln_id };
    char what[512] = "";
    if (rlx_fuse_reporting()) rlx_fuse_describe(g, ids, 2, what, sizeof what);
    int ins[4] = { ia, ib, ln->in[1], bi ? ln->in[2] : -1 };
    int n_in = bi ? 4 : 3, out = ln->out[0];
    rlx_node_attr attrs[2];
    RLX_TRY(rlx_node_attr_set_int(&attrs[0], "axis", axis));
    rlx_status st = rlx_node_attr_set_float(&attrs[1], "epsilon", rlx_param_float(ln, RLX_A_epsilon));
    if (st) {
        rlx_node_attr_free(&attrs[0]);
        return st;
    }
    char name[256];
    snprintf(name, sizeof name, "%s_fused", ln->name ? ln->name : "layernorm");
    g->nodes[ids[0]].dead = true;
    g->nodes[ln_id].dead = true;
    g->values[out].producer = -1;
    RLX_TRY(rlx_fuse_emplace(g, ln_id, "AddLayerNormalization", RLX_INTERNAL_DOMAIN, name, ins, n_in, &out, 1, attrs, 2));
    rlx_fuse_report(PASS, what, &g->nodes[ln_id], NULL);
    if (stats) stats->fused++;
    *done = true;
    return RLX_OK;
}

rlx_status rlx_pass_fuse_add_layernorm(rlx_graph *g, rlx_pass_stats *stats) {
    return rlx_fuse_each_anchor(g, RLX_OP_LayerNormalization, fuse_one, stats);
}
