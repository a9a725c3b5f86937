/* passes/fold_conv_affine.c — folds a per-channel affine map that follows a
 * Conv into the Conv's weights and bias:
 *   BatchNormalization (inference): y = (x - mean) * scale / sqrt(var + eps) + bias
 *   Mul by a constant per channel:  y = x * k
 *   Add of a constant per channel:  y = x + k
 * Each is y = x * a[c] + b[c], so W'[c] = W[c] * a[c] and B'[c] = B[c] * a[c] + b[c].
 * Preconditions: f32, or f16 (GPU plans of fp16 models: the folded weights
 * and bias are computed in f32 and rounded to binary16 once; declined when
 * one would overflow, or a non-zero one round to zero); the Conv's weight,
 * bias and output of one dtype; the Conv's weight (and bias) are
 * constants; the Conv's output has no other user and is not a graph
 * output; the affine constants (f32 or f16) are per output channel (shape
 * [C], [C,1,..], [1,C,1,..]) or scalars; the Conv has no fused activation
 * (passes/fuse_activation.c runs later).
 * Chains (Conv -> Mul -> Add -> BatchNormalization) fold step by step.
 * A BatchNormalization that no Conv absorbs (DenseNet's, after a Concat) but
 * whose output is read only by a chain of such Mul / Add nodes (caffe2
 * exports: a Scale layer after each BN) becomes y = x * A + B, one Mul and
 * one Add by [C, 1, ..] constants (f32 only), which fuse_elementwise then
 * joins with what follows (the Relu): one pass over the tensor instead of
 * four.
 * The folded model differs from the unfolded one by rounding only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/status.h"
#include "base/tensor.h"
#include "ir/op.h"
#include "ir/ops/act.h"
#include "passes/fuse_util.h"
#include "passes/passes.h"
#include "rlx/half.h"

static bool is_op(const rlx_node *n, rlx_op_id op) { return n->op == op; }

/* Element i of an f32 or f16 tensor, as f32. */
static float elem(const rlx_tensor *t, size_t i) {
    if (t->dtype == RLX_DTYPE_F16) return rlx_f16_to_f32(((const uint16_t *)t->data)[i]);
    return ((const float *)t->data)[i];
}

/* v as an element of dtype dt keeps its meaning: false when v is not
 * finite (a factor of inf or NaN: the folded weights would sum infinities
 * where the unfused Mul scales one finite sum, or give 0 * inf = NaN) or an
 * f16 store loses v: beyond binary16's range, or a non-zero v that becomes
 * zero. */
static bool fits(rlx_dtype dt, float v) {
    if (dt != RLX_DTYPE_F16) return isfinite(v);
    float back = rlx_f16_to_f32(rlx_f32_to_f16(v));
    return isfinite(back) && (back != 0.0f || v == 0.0f);
}

/* Stores v as element i of an f32 or f16 tensor. */
static void put(rlx_tensor *t, size_t i, float v) {
    if (t->dtype == RLX_DTYPE_F16) ((uint16_t *)t->data)[i] = rlx_f32_to_f16(v);
    else ((float *)t->data)[i] = v;
}

/* A constant value this graph owns and nothing but one node reads (uses:
 * rlx_graph_count_uses): a fold may rewrite its data in place. */
static bool sole_owned(const rlx_graph *g, int id, const int *uses) {
    const rlx_value *v = &g->values[id];
    return v->konst && uses[id] == 1 &&
           !(v->flags & (RLX_VALUE_KONST_BORROWED | RLX_VALUE_INPUT | RLX_VALUE_OUTPUT | RLX_VALUE_OUTER));
}

/* Per-channel values of a constant that broadcasts along axis 1 of a rank-r
 * tensor with C channels: scalar, [C], or [.., C, 1, ..] with C at axis 1 of
 * the right-aligned shape. Returns false when it does not have that form. */
static bool per_channel(const rlx_value *k, int out_rank, int64_t c, float *dst) {
    if (!k || !k->konst || (k->konst->dtype != RLX_DTYPE_F32 && k->konst->dtype != RLX_DTYPE_F16)) return false;
    const rlx_tensor *t = k->konst;
    size_t n = rlx_tensor_numel(t);
    if (n == 1) {
        for (int64_t i = 0; i < c; i++) dst[i] = elem(t, 0);
        return true;
    }
    if ((int64_t)n != c || t->rank > out_rank) return false;
    /* the single non-1 dim must sit at axis 1 of the output after right alignment */
    int off = out_rank - t->rank;
    for (int d = 0; d < t->rank; d++) {
        bool is_c = (d + off) == 1;
        if (!is_c && t->dims[d] != 1) return false;
        if (is_c && t->dims[d] != c) return false;
    }
    if (t->rank == 1 && out_rank != 2) return false; /* [C] lines up with the last axis */
    for (int64_t i = 0; i < c; i++) dst[i] = elem(t, (size_t)i);
    return true;
}

/* The affine map (a, b) of node n applied to input `x_id`, or false. */
static bool affine_of(const rlx_graph *g, const rlx_node *n, int x_id, int out_rank, int64_t c, float *a, float *b) {
    if (is_op(n, RLX_OP_BatchNormalization)) {
        if (n->n_in < 5 || n->in[0] != x_id || rlx_param_int(n, RLX_A_training_mode) != 0) return false;
        for (int k = 1; k < n->n_out; k++)
            if (n->out[k] >= 0) return false;
        float *s = malloc((size_t)c * 4 * sizeof(float));
        if (!s) return false;
        float *bias = s + c, *mean = s + 2 * c, *var = s + 3 * c;
        bool ok = per_channel(rlx_node_input(g, n, 1), 2, c, s) && per_channel(rlx_node_input(g, n, 2), 2, c, bias) &&
                  per_channel(rlx_node_input(g, n, 3), 2, c, mean) && per_channel(rlx_node_input(g, n, 4), 2, c, var);
        if (ok) {
            double eps = rlx_param_float(n, RLX_A_epsilon);
            for (int64_t i = 0; i < c; i++) {
                double m = (double)s[i] / sqrt((double)var[i] + eps);
                a[i] = (float)m;
                b[i] = (float)((double)bias[i] - (double)mean[i] * m);
            }
        }
        free(s);
        return ok;
    }
    bool mul = is_op(n, RLX_OP_Mul), add = is_op(n, RLX_OP_Add);
    if ((!mul && !add) || n->n_in != 2) return false;
    int other = n->in[0] == x_id ? 1 : (n->in[1] == x_id ? 0 : -1);
    if (other < 0 || n->in[0] == n->in[1]) return false;
    const rlx_value *k = rlx_node_input(g, n, other);
    const rlx_value *y = rlx_node_output(g, n, 0);
    if (!y || y->rank != out_rank) return false; /* the constant must not widen the output */
    float *v = mul ? a : b;
    if (!per_channel(k, out_rank, c, v)) return false;
    for (int64_t i = 0; i < c; i++) {
        if (mul) b[i] = 0.0f;
        else a[i] = 1.0f;
    }
    return true;
}

/* The weight as rows of `per` elements that scale alike, and which output
 * channel row r feeds: Conv's weight is [C_out, per] (cog 0: row r is
 * channel r); ConvTranspose's [C_in, cog, per] with cig input channels a
 * group, so row ci * cog + oc feeds channel ci / cig * cog + oc. */
typedef struct weight_map {
    size_t per, cog, cig;
} weight_map;

static size_t out_channel(const weight_map *m, size_t r) { return m->cog ? r / m->cog / m->cig * m->cog + r % m->cog : r; }

static bool all_finite(const float *v, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return false;
    return true;
}

/* Whether x * a + b followed by * a2 + b2 folds into finite factors: a
 * non-finite constant (a Mul by inf after a BN whose scale is 0: the chain
 * gives inf, the fold 0 * inf = NaN) keeps the rest of the chain unfolded
 * (a tester's finding). */
static bool composes_finite(const float *a, const float *b, const float *a2, const float *b2, int64_t c) {
    for (int64_t k = 0; k < c; k++) {
        float na = a[k] * a2[k], nb = b[k] * a2[k] + b2[k];
        if (!isfinite(a2[k]) || !isfinite(b2[k]) || !isfinite(na) || !isfinite(nb)) return false;
    }
    return true;
}

/* The chains of one BatchNormalization (see the top of the file): BN at node
 * `bn` whose output is read, as its only use, by Mul / Add nodes by per-channel
 * constants, one after another. Rewrites them as x * A + B (a Mul in the BN's
 * slot, an Add in the chain's last) with A, B shaped [C, 1, ..] (f32); sets
 * *done (and counts it in stats->fused) when it did; rlx_fuse_each_anchor
 * runs it over the graph. errors: out of memory, those of rlx_fuse_emplace. */
static rlx_status fold_bn_chain(rlx_graph *g, const rlx_fuse_users *u, int bn, rlx_pass_stats *stats, bool *done) {
    *done = false;
    rlx_node *n = &g->nodes[bn];
    if (n->dead || !is_op(n, RLX_OP_BatchNormalization) || n->n_in < 5 || n->n_out < 1 || n->out[0] < 0) return RLX_OK;
    const rlx_value *x = rlx_node_input(g, n, 0);
    if (!x || x->dtype != RLX_DTYPE_F32 || x->rank < 3 || x->rank > RLX_MAX_RANK || !rlx_value_is_static(x) ||
        x->dims[1] < 1)
        return RLX_OK;
    int rank = x->rank, x_id = n->in[0];
    int64_t c = x->dims[1];
    float *a = malloc((size_t)c * 4 * sizeof(float));
    if (!a) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    float *b = a + c, *a2 = a + 2 * c, *b2 = a + 3 * c;
    int chain[64], nc = 0, cur = n->out[0];
    if (affine_of(g, n, x_id, rank, c, a, b) && all_finite(a, 2 * c)) {
        while (nc < 64 && rlx_fuse_n_users(u, cur) == 1 && !rlx_fuse_is_output(g, cur)) {
            int j = rlx_fuse_user(u, cur, 0);
            const rlx_node *m = &g->nodes[j];
            const rlx_value *y = m->n_out == 1 && m->out[0] >= 0 ? &g->values[m->out[0]] : NULL;
            if (!y || y->dtype != RLX_DTYPE_F32 || !rlx_fuse_same_shape(y, x) ||
                !affine_of(g, m, cur, rank, c, a2, b2) || !composes_finite(a, b, a2, b2, c))
                break;
            for (int64_t k = 0; k < c; k++) {
                a[k] *= a2[k];
                b[k] = b[k] * a2[k] + b2[k];
            }
            chain[nc++] = j;
            cur = m->out[0];
        }
    }
    if (nc == 0) {
        free(a);
        return RLX_OK;
    }
    int64_t kd[RLX_MAX_RANK];
    kd[0] = c;
    for (int d = 1; d < rank - 1; d++) kd[d] = 1;
    rlx_tensor *ta = NULL, *tb = NULL;
    rlx_status st = rlx_tensor_create(RLX_DTYPE_F32, kd, rank - 1, &ta);
    if (!st) st = rlx_tensor_create(RLX_DTYPE_F32, kd, rank - 1, &tb);
    if (st) {
        rlx_tensor_destroy(ta);
        rlx_tensor_destroy(tb);
        free(a);
        return st;
    }
    memcpy(ta->data, a, (size_t)c * sizeof(float));
    memcpy(tb->data, b, (size_t)c * sizeof(float));
    free(a);
    char what[512] = "";
    if (rlx_fuse_reporting()) {
        int ids[65];
        ids[0] = bn;
        memcpy(ids + 1, chain, (size_t)nc * sizeof(int));
        rlx_fuse_describe(g, ids, nc + 1, what, sizeof what);
    }
    int aid, bid, tid, last = chain[nc - 1], out = cur;
    if ((st = rlx_graph_add_konst(g, NULL, ta, &aid))) {
        rlx_tensor_destroy(tb);
        return st;
    }
    RLX_TRY(rlx_graph_add_konst(g, NULL, tb, &bid));
    RLX_TRY(rlx_graph_add_value(g, NULL, &tid));
    /* the BN and the chain go; their outputs lose their producers */
    int ids[65];
    ids[0] = bn;
    memcpy(ids + 1, chain, (size_t)nc * sizeof(int));
    for (int k = 0; k <= nc; k++) {
        rlx_node *m = &g->nodes[ids[k]];
        m->dead = true;
        for (int o = 0; o < m->n_out; o++)
            if (m->out[o] >= 0) g->values[m->out[o]].producer = -1;
    }
    RLX_TRY(rlx_fuse_emplace(g, bn, "Mul", "", NULL, (const int[]){ x_id, aid }, 2, &tid, 1, NULL, 0));
    RLX_TRY(rlx_fuse_emplace(g, last, "Add", "", NULL, (const int[]){ tid, bid }, 2, &out, 1, NULL, 0));
    rlx_fuse_report("fold_conv_affine", what, &g->nodes[last], "BatchNormalization and the chain as x * A + B");
    *done = true;
    if (stats) stats->fused++;
    return RLX_OK;
}

rlx_status rlx_pass_fold_conv_affine(rlx_graph *g, rlx_pass_stats *stats) {
    int *uses = NULL;
    rlx_status st = RLX_OK;
    bool changed = true;
    while (changed && !st) {
        changed = false;
        free(uses);
        uses = malloc((g->n_values + 1) * sizeof *uses); /* folds add values */
        if (!uses) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        rlx_graph_count_uses(g, uses);
        for (size_t i = 0; i < g->n_nodes && !st; i++) {
            rlx_node *n = &g->nodes[i];
            if (n->dead || n->n_in < 1) continue;
            /* find a Conv producer of one of n's inputs */
            int x_id = -1, conv_id = -1;
            for (int k = 0; k < n->n_in && k < 2; k++) {
                int v = n->in[k];
                if (v < 0) continue;
                int p = g->values[v].producer;
                if (p >= 0 && !g->nodes[p].dead &&
                    (is_op(&g->nodes[p], RLX_OP_Conv) || is_op(&g->nodes[p], RLX_OP_ConvTranspose))) {
                    x_id = v;
                    conv_id = p;
                    break;
                }
            }
            if (conv_id < 0 || uses[x_id] != 1 || (g->values[x_id].flags & RLX_VALUE_OUTPUT)) continue;
            rlx_node *cv = &g->nodes[conv_id];
            if (rlx_node_act(cv).kind != RLX_ACT_NONE) continue;
            const rlx_value *w = rlx_node_input(g, cv, 1), *bias = rlx_node_input(g, cv, 2), *x = &g->values[x_id];
            if (!w || !w->konst || (x->dtype != RLX_DTYPE_F32 && x->dtype != RLX_DTYPE_F16) ||
                w->konst->dtype != x->dtype || (bias && (!bias->konst || bias->konst->dtype != x->dtype)) ||
                x->rank < 3)
                continue;
            /* output channels: Conv's weight [C_out, C_in / group, k..], ConvTranspose's [C_in, C_out / group, k..] */
            bool tr = is_op(cv, RLX_OP_ConvTranspose);
            int64_t group = tr ? rlx_param_int(cv, RLX_A_group) : 1;
            if (tr && (w->konst->rank < 2 || group < 1 || w->konst->dims[0] % group)) continue;
            int64_t c = tr ? w->konst->dims[1] * group : w->konst->dims[0];
            if (c < 1) continue;
            float *a = malloc((size_t)c * 2 * sizeof(float));
            if (!a) {
                st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
                break;
            }
            float *b = a + c;
            if (!affine_of(g, n, x_id, x->rank, c, a, b)) {
                free(a);
                continue;
            }
            /* W' = W * a (per output channel), B' = B * a + b; a weight or
             * bias only this Conv reads and the graph owns (the folds before
             * made it, or a ConstantOfShape) is rewritten in place, so that
             * a chain BN -> Mul -> Add keeps one copy of the weights, not
             * four (light Inception v2: 45 MB of weights, 225 -> 108 MB peak
             * RSS) */
            int w_id = cv->in[1], b_id = bias ? cv->in[2] : -1;
            weight_map wm = { rlx_tensor_numel(w->konst) / (size_t)c, 0, 0 };
            if (tr) {
                wm.cog = (size_t)w->konst->dims[1];
                wm.cig = (size_t)(w->konst->dims[0] / group);
                wm.per = wm.cog ? rlx_tensor_numel(w->konst) / ((size_t)w->konst->dims[0] * wm.cog) : 0;
            }
            size_t rows = wm.per ? rlx_tensor_numel(w->konst) / wm.per : 0;
            bool kept = true; /* every folded f16 value survives binary16 */
            bool f32 = x->dtype == RLX_DTYPE_F32;
            for (size_t r = 0; r < rows && kept; r++) {
                float f = a[out_channel(&wm, r)];
                if (f32) { /* a row at a time: no dtype test, no early exit per element */
                    const float *wr = (const float *)w->konst->data + r * wm.per;
                    bool fin = true;
                    for (size_t j = 0; j < wm.per; j++) fin &= isfinite(wr[j] * f) != 0;
                    kept = fin;
                    continue;
                }
                for (size_t j = 0; j < wm.per && kept; j++) kept = fits(x->dtype, elem(w->konst, r * wm.per + j) * f);
            }
            for (int64_t o = 0; o < c && kept; o++) {
                float b0 = bias ? elem(bias->konst, (size_t)o) : 0.0f;
                kept = fits(x->dtype, b0 * a[o] + b[o]);
            }
            if (!kept) { /* a folded value not finite, or an f16 weight would overflow or vanish: leave the map unfolded */
                free(a);
                continue;
            }
            bool w_in_place = sole_owned(g, w_id, uses), b_in_place = bias && sole_owned(g, b_id, uses);
            rlx_tensor *w2 = w_in_place ? w->konst : NULL, *b2 = b_in_place ? bias->konst : NULL;
            if ((!w_in_place && (st = rlx_tensor_clone(w->konst, &w2))) ||
                (!b_in_place && (st = rlx_tensor_create(x->dtype, &c, 1, &b2)))) {
                if (!w_in_place) rlx_tensor_destroy(w2);
                free(a);
                break;
            }
            for (size_t r = 0; r < rows; r++) {
                float f = a[out_channel(&wm, r)];
                if (f32) {
                    float *wr = (float *)w2->data + r * wm.per;
                    for (size_t j = 0; j < wm.per; j++) wr[j] *= f;
                    continue;
                }
                for (size_t j = 0; j < wm.per; j++) put(w2, r * wm.per + j, elem(w2, r * wm.per + j) * f);
            }
            for (int64_t o = 0; o < c; o++) {
                float b0 = bias ? elem(bias->konst, (size_t)o) : 0.0f;
                put(b2, (size_t)o, b0 * a[o] + b[o]);
            }
            free(a);
            int wid = w_id, bid = b_id;
            char what[512] = "";
            if (rlx_fuse_reporting()) rlx_fuse_describe(g, (const int[]){ conv_id, (int)i }, 2, what, sizeof what);
            if (!w_in_place && (st = rlx_graph_add_konst(g, NULL, w2, &wid))) {
                if (!b_in_place) rlx_tensor_destroy(b2);
                break;
            }
            if (!b_in_place && (st = rlx_graph_add_konst(g, NULL, b2, &bid))) break;
            cv = &g->nodes[conv_id]; /* values may have moved, nodes not */
            n = &g->nodes[i];
            if (cv->n_in < 3) {
                int *in = realloc(cv->in, 4 * sizeof(int));
                if (!in) {
                    st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
                    break;
                }
                cv->in = in;
                cv->n_in = 3;
            }
            cv->in[1] = wid;
            cv->in[2] = bid;
            /* the Conv now produces n's output; n goes away */
            g->values[cv->out[0]].producer = -1;
            cv->out[0] = n->out[0];
            g->values[n->out[0]].producer = conv_id;
            n->dead = true;
            rlx_fuse_report("fold_conv_affine", what, cv, "weights and bias rescaled");
            if (stats) stats->fused++;
            changed = true;
            break; /* recount uses */
        }
        if (changed) rlx_graph_compact(g);
    }
    free(uses);
    if (!st) st = rlx_fuse_each_anchor(g, RLX_OP_BatchNormalization, fold_bn_chain, stats);
    return st;
}
