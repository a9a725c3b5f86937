/* passes/fuse_attention.c — scaled-dot-product attention as exporters
 * write it becomes one rlx.Attention node (src/ir/ops/internal_ops.h):
 *
 *   MatMul(Q, K^T) -> Mul or Div by a constant scalar (optional)
 *                  -> Add(mask) (optional, either operand order)
 *                  -> Softmax over the last axis -> MatMul(., V)
 *
 * K^T is any tensor of shape [.., D, Sk] (the exporter's head split makes
 * it "already transposed"). Transposes that produce Q, K^T or V, or consume
 * the result (the heads' split and merge around attention, as exporters
 * write it), are absorbed as layouts (q_perm, k_perm, v_perm, y_perm:
 * strides the kernels read through) when the attention is their only
 * user; K^T = Transpose(K) of the last two axes is read as K even when the
 * Transpose has other users. On the GPU the scores never reach memory
 * (online softmax per block of keys); on the CPU they live in a block
 * buffer.
 *
 * Preconditions, each checked: one float type (f32 or f16) and static shapes throughout; Q, K^T and
 * V of one rank >= 2 with equal batch dims (no broadcasting); plain MatMuls
 * (no fused bias or activation), except that a bias fuse_activation put
 * into MatMul(Q, K^T) (a constant mask of Sk elements added straight after
 * it, no scale) is taken as the mask; the scale a constant scalar; the mask
 * broadcasting to the scores without widening them; Softmax over the last
 * axis (for versions before 13, axis = rank - 1, where the 2-D coercion is
 * the same); every intermediate value (scores, scaled, masked,
 * probabilities) used only by the next node and not a graph output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/tensor.h"
#include "ir/op.h"
#include "ir/ops/act.h"
#include "ir/ops/internal_ops.h"
#include "ir/ops/reduce_geom.h"
#include "ir/ops/tensor_geom.h"
#include "passes/fuse_util.h"
#include "passes/passes.h"

#define PASS "fuse_attention"

/* v has static shape and the chain's type dt (f32, or f16: rlx.Attention
 * then computes in f32 and rounds its output once, the rounding policy of
 * fused chains, where the unfused ops would round scores and probabilities
 * to f16). */
static bool typed_static(const rlx_value *v, rlx_dtype dt) { return v && v->dtype == dt && rlx_value_is_static(v); }

/* A MatMul without fused inputs or activation, output 0 present. */
static bool plain_matmul(const rlx_node *n) {
    return rlx_fuse_is(n, RLX_OP_MatMul) && n->n_in == 2 && n->n_out == 1 && n->out[0] >= 0 &&
           rlx_node_act(n).kind == RLX_ACT_NONE;
}

/* A MatMul with a fused bias input (fuse_activation) and no activation. */
static bool biased_matmul(const rlx_node *n) {
    return rlx_fuse_is(n, RLX_OP_MatMul) && n->n_in == 3 && n->in[2] >= 0 && n->n_out == 1 && n->out[0] >= 0 &&
           rlx_node_act(n).kind == RLX_ACT_NONE;
}

/* When value v is the output of a Transpose of rank r (of type dt, static input),
 * that node, with its permutation in perm; else NULL. */
static const rlx_node *transpose_of(const rlx_graph *g, int v, int r, rlx_dtype dt, int64_t *perm) {
    const rlx_node *t = rlx_fuse_producer(g, v);
    if (!t || !rlx_fuse_is(t, RLX_OP_Transpose) || t->n_in != 1 || t->n_out != 1) return NULL;
    const rlx_value *x = &g->values[t->in[0]];
    if (!typed_static(x, dt) || x->rank != r) return NULL;
    return rlx_transpose_perm(t, r, perm) == RLX_OK ? t : NULL;
}

static bool swaps_last_two(const int64_t *perm, int r) {
    for (int i = 0; i < r; i++)
        if (perm[i] != (i < r - 2 ? i : (i == r - 2 ? r - 1 : r - 2))) return false;
    return true;
}

static bool same_batch(const rlx_value *a, const rlx_value *b) {
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank - 2; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

/* Whether v looks like the (scaled) scores: a plain MatMul's output, or a
 * Mul/Div of one by a constant scalar. */
static bool is_scores(const rlx_graph *g, int v) {
    const rlx_node *p = rlx_fuse_producer(g, v);
    if (!p) return false;
    if (plain_matmul(p)) return true;
    if (!(rlx_fuse_is(p, RLX_OP_Mul) || rlx_fuse_is(p, RLX_OP_Div)) || p->n_in != 2) return false;
    for (int j = 0; j < 2; j++) {
        const rlx_value *c = &g->values[p->in[j]];
        const rlx_node *q = rlx_fuse_producer(g, p->in[1 - j]);
        if (c->konst && rlx_tensor_numel(c->konst) == 1 && q && plain_matmul(q)) return true;
    }
    return false;
}

static rlx_status fuse_one(rlx_graph *g, const rlx_fuse_users *u, int sm_id, rlx_pass_stats *stats, bool *done) {
    const rlx_node *sm = &g->nodes[sm_id];
    if (sm->n_in != 1 || sm->n_out != 1 || sm->out[0] < 0) return RLX_OK;
    const rlx_value *sv = &g->values[sm->in[0]];
    rlx_dtype dt = sv->dtype;
    if ((dt != RLX_DTYPE_F32 && dt != RLX_DTYPE_F16) || !typed_static(sv, dt) || sv->rank < 2) return RLX_OK;
    int ax;
    int64_t axis = rlx_softmax_axis(sm);
    if (!rlx_norm_axis(axis, sv->rank, &ax) || ax != sv->rank - 1) return RLX_OK;
    /* Softmax -> MatMul(P, V) */
    int p_val = sm->out[0];
    if (!rlx_fuse_private(g, u, p_val, 1)) return RLX_OK;
    const rlx_node *pv = &g->nodes[rlx_fuse_user(u, p_val, 0)];
    if (!plain_matmul(pv) || pv->in[0] != p_val || pv->in[1] == p_val) return RLX_OK;
    /* back from Softmax: optional Add(mask), optional Mul/Div(scale), MatMul(Q, K^T) */
    int ids[9], n_ids = 0; /* Add, Mul/Div, 3 operand Transposes, the output Transpose, QK, Softmax, PV */
    int cur = sm->in[0], mask = -1, scale_div = 0;
    float scale = 1.0f;
    const rlx_node *p = rlx_fuse_producer(g, cur);
    if (p && rlx_fuse_is(p, RLX_OP_Add) && p->version >= 7 && p->n_in == 2 && rlx_fuse_private(g, u, cur, 1)) {
        for (int k = 0; k < 2; k++) {
            if (is_scores(g, p->in[k]) && p->in[1 - k] != p->in[k]) {
                mask = p->in[1 - k];
                ids[n_ids++] = (int)(p - g->nodes);
                cur = p->in[k];
                break;
            }
        }
        if (mask < 0) return RLX_OK;
        p = rlx_fuse_producer(g, cur);
    }
    if (p && (rlx_fuse_is(p, RLX_OP_Mul) || rlx_fuse_is(p, RLX_OP_Div)) && p->version >= 7 && p->n_in == 2 &&
        rlx_fuse_private(g, u, cur, 1)) {
        bool div = rlx_fuse_is(p, RLX_OP_Div);
        int k = -1;
        for (int j = 0; j < 2 && k < 0; j++) {
            const rlx_value *c = &g->values[p->in[j]];
            const rlx_node *q = rlx_fuse_producer(g, p->in[1 - j]);
            if ((!div || j == 1) && c->konst && c->dtype == dt && rlx_tensor_numel(c->konst) == 1 &&
                c->rank <= sv->rank && q && plain_matmul(q))
                k = j;
        }
        if (k < 0) return RLX_OK;
        scale = (float)rlx_tensor_get_f64(g->values[p->in[k]].konst, 0);
        scale_div = div;
        ids[n_ids++] = (int)(p - g->nodes);
        cur = p->in[1 - k];
        p = rlx_fuse_producer(g, cur);
    }
    /* MatMul(Q, K^T, c) -> Softmax: fuse_activation (which runs first)
     * folded a constant mask of Sk elements added straight after the
     * MatMul into its bias input; that bias is the mask */
    bool biased = p && mask < 0 && n_ids == 0 && biased_matmul(p);
    if (!p || !(plain_matmul(p) || biased) || !rlx_fuse_private(g, u, cur, 1)) return RLX_OK;
    if (biased) mask = p->in[2];
    const rlx_node *qk = p;
    const rlx_value *q = &g->values[qk->in[0]], *kt = &g->values[qk->in[1]], *v = &g->values[pv->in[1]];
    const rlx_value *out = &g->values[pv->out[0]], *scores = &g->values[qk->out[0]];
    if (!typed_static(q, dt) || !typed_static(kt, dt) || !typed_static(v, dt) || !typed_static(out, dt) || q->rank < 2 ||
        !same_batch(q, kt) || !same_batch(q, v) || !rlx_fuse_same_shape(scores, sv))
        return RLX_OK;
    int r = q->rank;
    int64_t sq = q->dims[r - 2], d = q->dims[r - 1], sk = kt->dims[r - 1];
    if (kt->dims[r - 2] != d || v->dims[r - 2] != sk || scores->dims[r - 2] != sq || scores->dims[r - 1] != sk)
        return RLX_OK;
    if (mask >= 0) {
        const rlx_value *mv = &g->values[mask];
        if (!typed_static(mv, dt) || mv->rank > r) return RLX_OK;
        for (int i = 0; i < mv->rank; i++) {
            int64_t md = mv->dims[i], want = scores->dims[r - mv->rank + i];
            if (md != 1 && md != want) return RLX_OK;
        }
    }
    /* Transposes around the operands (the heads' split and merge) are
     * absorbed as layouts when only the attention reads them; K^T as a
     * Transpose of K's last two axes is read as K even when shared */
    int q_in = qk->in[0], k_in = qk->in[1], v_in = pv->in[1], y = pv->out[0], k_transposed = 1;
    int64_t perms[4][RLX_MAX_RANK];
    bool has_perm[4] = { false, false, false, false };
    int absorbed = 0;
    int *ins_of[3] = { &q_in, &k_in, &v_in };
    for (int t = 0; t < 3; t++) {
        const rlx_node *tr = transpose_of(g, *ins_of[t], r, dt, perms[t]);
        if (!tr) continue;
        if (rlx_fuse_private(g, u, *ins_of[t], 1)) {
            *ins_of[t] = tr->in[0];
            has_perm[t] = true;
            ids[n_ids++] = (int)(tr - g->nodes);
            absorbed++;
        } else if (t == 1 && swaps_last_two(perms[1], r)) {
            k_in = tr->in[0];
            k_transposed = 0;
        }
    }
    if (rlx_fuse_private(g, u, y, 1)) {
        const rlx_node *ty = &g->nodes[rlx_fuse_user(u, y, 0)];
        size_t np;
        const int64_t *perm = rlx_fuse_is(ty, RLX_OP_Transpose) && ty->n_in == 1 && ty->n_out == 1 && ty->out[0] >= 0
                                  ? rlx_param_ints(ty, RLX_A_perm, &np)
                                  : NULL;
        if (perm && np == (size_t)r && typed_static(&g->values[ty->out[0]], dt)) {
            memcpy(perms[3], perm, (size_t)r * sizeof(int64_t));
            has_perm[3] = true;
            ids[n_ids++] = (int)(ty - g->nodes);
            y = ty->out[0];
            absorbed++;
        }
    }
    ids[n_ids++] = (int)(qk - g->nodes);
    ids[n_ids++] = sm_id;
    ids[n_ids++] = (int)(pv - g->nodes);
    /* report in graph order */
    for (int i = 0; i < n_ids; i++)
        for (int j = i + 1; j < n_ids; j++)
            if (ids[j] < ids[i]) {
                int t = ids[i];
                ids[i] = ids[j], ids[j] = t;
            }
    char what[1024] = "";
    if (rlx_fuse_reporting()) rlx_fuse_describe(g, ids, n_ids, what, sizeof what);
    int ins[4] = { q_in, k_in, v_in, mask };
    int n_in = mask >= 0 ? 4 : 3, slot = (int)(pv - g->nodes);
    rlx_node_attr attrs[7];
    memset(attrs, 0, sizeof attrs);
    static const char *const perm_names[4] = { "q_perm", "k_perm", "v_perm", "y_perm" };
    int na = 3;
    rlx_status st = rlx_node_attr_set_float(&attrs[0], "scale", scale);
    if (!st) st = rlx_node_attr_set_int(&attrs[1], "scale_div", scale_div);
    if (!st) st = rlx_node_attr_set_int(&attrs[2], "k_transposed", k_transposed);
    for (int t = 0; t < 4 && !st; t++)
        if (has_perm[t]) st = rlx_node_attr_set_ints(&attrs[na++], perm_names[t], perms[t], (size_t)r);
    if (st) {
        for (int i = 0; i < na; i++) rlx_node_attr_free(&attrs[i]);
        return st;
    }
    char name[256];
    snprintf(name, sizeof name, "%s_attention", sm->name ? sm->name : "softmax");
    for (int i = 0; i < n_ids; i++) g->nodes[ids[i]].dead = true;
    g->values[y].producer = -1;
    RLX_TRY(rlx_fuse_emplace(g, slot, "Attention", RLX_INTERNAL_DOMAIN, name, ins, n_in, &y, 1, attrs, na));
    char detail[200];
    snprintf(detail, sizeof detail, "%s %g, %s, %s, %d Transposes absorbed", scale_div ? "scores /" : "scores *",
             (double)scale, mask >= 0 ? "mask" : "no mask", k_transposed ? "K^T" : "K read through its Transpose",
             absorbed);
    rlx_fuse_report(PASS, what, &g->nodes[slot], detail);
    if (stats) stats->fused += n_ids - 1;
    *done = true;
    return RLX_OK;
}

rlx_status rlx_pass_fuse_attention(rlx_graph *g, rlx_pass_stats *stats) {
    return rlx_fuse_each_anchor(g, RLX_OP_Softmax, fuse_one, stats);
}
