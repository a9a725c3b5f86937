/* passes/fuse_layernorm.c — a LayerNormalization written out as
 *   mean = ReduceMean(x, axes)      d = Sub(x, mean)
 *   v    = ReduceMean(Pow(d, 2) or Mul(d, d), axes)
 *   y    = Div(d, Sqrt(Add(v, eps)))  [then Mul(y, gamma)] [then Add(y, beta)]
 * (what exporters emit for LayerNorm before opset 17) becomes one
 * LayerNormalization-17 node with stash_type 1: its statistics are computed
 * in f32 (the CPU: f64) whatever x's type is. In f16 the written-out form
 * overflows: (x - mean)^2 of an outlier of 795 is 632,025, past binary16's
 * 65,504, so the variance becomes inf and every output the bias;
 * onnxruntime fuses the pattern the same way (its LayerNormFusion).
 *
 * Preconditions, each checked: every value of one float dtype, static
 * shapes; the reduced axes the last (rank - axis) axes, keepdims 1, on both
 * ReduceMeans; Pow's exponent and eps constant scalars (exponent 2);
 * gamma and beta constants of the normalised dims' shape (leading 1s
 * allowed); every intermediate value private to the pattern and no graph
 * output. Without gamma, the scale is a constant of ones. */
#include <stdio.h>
#include <string.h>

#include "base/tensor.h"
#include "ir/op.h"
#include "ir/ops/ops.h"
#include "ir/ops/reduce_geom.h"
#include "passes/fuse_util.h"
#include "passes/passes.h"
#include "rlx/half.h"

#define PASS "fuse_layernorm"

/* n is a ReduceMean of value x over a suffix of its axes, keepdims:
 * *axis receives the first reduced axis. */
static bool mean_over_suffix(const rlx_graph *g, const rlx_node *n, int x, int *axis) {
    if (!rlx_fuse_is(n, RLX_OP_ReduceMean) || n->in[0] != x || n->n_out != 1) return false;
    const rlx_value *xv = &g->values[x];
    int64_t axes[RLX_REDUCE_MAX_AXES];
    size_t na = 0;
    if (rlx_reduce_axes_are_input(n)) {
        const rlx_value *a = rlx_node_input(g, n, 1);
        if (!a || !rlx_konst_ints(a, axes, RLX_REDUCE_MAX_AXES, &na)) return false;
    } else {
        const int64_t *at = rlx_param_ints(n, RLX_A_axes, &na);
        if (!at || na > RLX_REDUCE_MAX_AXES) return false;
        memcpy(axes, at, na * sizeof *axes);
    }
    rlx_reduce_spec s;
    if (na == 0 || xv->rank < 1 || rlx_reduce_resolve(n, xv->rank, axes, na, RLX_ERR_INVALID_MODEL, &s) != RLX_OK ||
        !s.keepdims)
        return false;
    int first = xv->rank - s.n_axes;
    for (int d = 0; d < xv->rank; d++)
        if (s.axis[d] != (d >= first)) return false;
    *axis = first;
    return true;
}

/* The single user of value v (private, not a graph output), or NULL. */
static rlx_node *only_user(rlx_graph *g, const rlx_fuse_users *u, int v) {
    if (rlx_fuse_n_users(u, v) != 1 || rlx_fuse_is_output(g, v)) return NULL;
    return &g->nodes[rlx_fuse_user(u, v, 0)];
}

/* The input of binary node n other than value v, or -1. */
static int other_input(const rlx_node *n, int v) {
    if (n->n_in != 2) return -1;
    return n->in[0] == v ? n->in[1] : n->in[1] == v ? n->in[0] : -1;
}

/* p is a constant of x's dtype shaped like dims [axis, rank) of x (leading
 * 1s allowed). */
static bool fits_param(const rlx_value *p, const rlx_value *x, int axis) {
    if (!p->konst || p->dtype != x->dtype || !rlx_value_is_static(p)) return false;
    int k = x->rank - axis;
    if (p->rank < k) return false;
    for (int d = 0; d < p->rank; d++) {
        int64_t want = d < p->rank - k ? 1 : x->dims[axis + d - (p->rank - k)];
        if (p->dims[d] != want) return false;
    }
    return true;
}

static rlx_status fuse_one(rlx_graph *g, const rlx_fuse_users *u, int m1_id, rlx_pass_stats *stats, bool *done) {
    rlx_node *m1 = &g->nodes[m1_id];
    int x = m1->in[0], axis, axis2;
    if (x < 0 || !mean_over_suffix(g, m1, x, &axis)) return RLX_OK;
    const rlx_value *xv = &g->values[x];
    if (!rlx_dtype_is_float(xv->dtype) || !rlx_value_is_static(xv)) return RLX_OK;
    int mean = m1->out[0];
    rlx_node *sub = only_user(g, u, mean);
    if (!sub || !rlx_fuse_is(sub, RLX_OP_Sub) || sub->in[0] != x || sub->in[1] != mean) return RLX_OK;
    int d = sub->out[0];
    /* d feeds the square and the Div, nothing else: the users are edges,
     * so Mul(d, d) is two of them (Pow(d, 2) one) */
    int n_users = rlx_fuse_n_users(u, d);
    if (n_users < 2 || n_users > 3 || rlx_fuse_is_output(g, d)) return RLX_OK;
    rlx_node *sq = NULL, *div = NULL;
    for (int i = 0; i < n_users; i++) {
        rlx_node *n = &g->nodes[rlx_fuse_user(u, d, i)];
        if (!div && rlx_fuse_is(n, RLX_OP_Div) && n->in[0] == d && n->in[1] != d) div = n;
        else if (!sq || sq == n) sq = n;
        else return RLX_OK;
    }
    float e = 0, eps = 0;
    if (!sq || !div) return RLX_OK;
    if (rlx_fuse_is(sq, RLX_OP_Pow)) {
        if (n_users != 2 || sq->in[0] != d || !rlx_fuse_konst_scalar(rlx_node_input(g, sq, 1), &e) || e != 2.0f)
            return RLX_OK;
    } else if (n_users != 3 || !rlx_fuse_is(sq, RLX_OP_Mul) || sq->in[0] != d || sq->in[1] != d) {
        return RLX_OK;
    }
    rlx_node *m2 = only_user(g, u, sq->out[0]);
    if (!m2 || !mean_over_suffix(g, m2, sq->out[0], &axis2) || axis2 != axis) return RLX_OK;
    rlx_node *add = only_user(g, u, m2->out[0]);
    int ke = add && rlx_fuse_is(add, RLX_OP_Add) ? other_input(add, m2->out[0]) : -1;
    if (ke < 0 || !rlx_fuse_konst_scalar(&g->values[ke], &eps)) return RLX_OK;
    rlx_node *sqrt = only_user(g, u, add->out[0]);
    if (!sqrt || !rlx_fuse_is(sqrt, RLX_OP_Sqrt) || only_user(g, u, sqrt->out[0]) != div || div->in[1] != sqrt->out[0])
        return RLX_OK;
    int ids[9] = { m1_id, (int)(sub - g->nodes), (int)(sq - g->nodes), (int)(m2 - g->nodes), (int)(add - g->nodes),
                   (int)(sqrt - g->nodes), (int)(div - g->nodes) };
    int n_ids = 7, y = div->out[0], gamma = -1, beta = -1;
    rlx_node *n = only_user(g, u, y);
    if (n && rlx_fuse_is(n, RLX_OP_Mul) && (gamma = other_input(n, y)) >= 0 && fits_param(&g->values[gamma], xv, axis)) {
        ids[n_ids++] = (int)(n - g->nodes);
        y = n->out[0];
        n = only_user(g, u, y);
    } else {
        gamma = -1;
    }
    if (n && rlx_fuse_is(n, RLX_OP_Add) && (beta = other_input(n, y)) >= 0 && fits_param(&g->values[beta], xv, axis)) {
        ids[n_ids++] = (int)(n - g->nodes);
        y = n->out[0];
    } else {
        beta = -1;
    }
    /* one dtype throughout; the elementwise values have x's shape (ids 1, 2, 6 and the affine ones) */
    for (int i = 0; i < n_ids; i++) {
        const rlx_node *k = &g->nodes[ids[i]];
        const rlx_value *o = &g->values[k->out[0]];
        bool full = i == 1 || i == 2 || i >= 6;
        if (k->n_out != 1 || o->dtype != xv->dtype || !rlx_value_is_static(o) || (full && !rlx_fuse_same_shape(o, xv)))
            return RLX_OK;
    }
    if (!rlx_fuse_same_shape(&g->values[y], xv)) return RLX_OK;
    char what[1024] = "";
    if (rlx_fuse_reporting()) rlx_fuse_describe(g, ids, n_ids, what, sizeof what);
    char name[256];
    snprintf(name, sizeof name, "%s_layernorm", g->nodes[ids[n_ids - 1]].name ? g->nodes[ids[n_ids - 1]].name : "ln");
    if (gamma < 0) { /* a scale of ones of the normalised shape */
        rlx_tensor *t = NULL;
        RLX_TRY(rlx_tensor_create(xv->dtype, xv->dims + axis, xv->rank - axis, &t));
        size_t cnt = rlx_tensor_numel(t);
        for (size_t i = 0; i < cnt; i++) rlx_tensor_set_f64(t, i, 1.0);
        char kn[280];
        snprintf(kn, sizeof kn, "%s_ones", name);
        RLX_TRY(rlx_graph_add_konst(g, kn, t, &gamma));
    }
    rlx_node_attr attrs[2];
    RLX_TRY(rlx_node_attr_set_int(&attrs[0], "axis", axis));
    rlx_status st = rlx_node_attr_set_float(&attrs[1], "epsilon", eps);
    if (st) {
        rlx_node_attr_free(&attrs[0]);
        return st;
    }
    for (int i = 0; i < n_ids; i++) g->nodes[ids[i]].dead = true;
    g->values[y].producer = -1;
    int ins[3] = { x, gamma, beta };
    int slot = ids[n_ids - 1];
    /* the node is LayerNormalization-17 whatever the model's opset (the
     * pattern comes from models older than 17): versions are resolved once,
     * when a node is added, so the graph's opset is raised for this one */
    int64_t opset = g->opset;
    if (g->opset < 17) g->opset = 17;
    st = rlx_fuse_emplace(g, slot, "LayerNormalization", "", name, ins, beta >= 0 ? 3 : 2, &y, 1, attrs, 2);
    g->opset = opset;
    RLX_TRY(st);
    rlx_fuse_report(PASS, what, &g->nodes[slot], NULL);
    if (stats) stats->fused += n_ids - 1;
    *done = true;
    return RLX_OK;
}

rlx_status rlx_pass_fuse_layernorm(rlx_graph *g, rlx_pass_stats *stats) {
    return rlx_fuse_each_anchor(g, RLX_OP_ReduceMean, fuse_one, stats);
}
