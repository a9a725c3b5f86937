/* ir/legacy_bcast.c — pre-opset-7 broadcasting: which binary nodes
 * broadcast the legacy way, where their B lines up with A (the binary ops'
 * broadcast=1 with `axis`; PRelu-6's slope by the ONNX reference's rule),
 * and the rewrite of one such node into numpy broadcasting (an Unsqueeze of
 * B inserted before it), shared by passes/legacy.c (a model's graph), the
 * fold (a plan's) and eager evaluation (a run's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/status.h"
#include "ir/op.h"

/* Whether n is a binary op that has a `broadcast` attribute before opset 7. */
static bool has_broadcast_attr(const rlx_node *n) {
    static const rlx_op_id with_attr[] = { RLX_OP_Add, RLX_OP_Sub, RLX_OP_Mul, RLX_OP_Div, RLX_OP_Pow, RLX_OP_And,
                                           RLX_OP_Or, RLX_OP_Xor, RLX_OP_Equal, RLX_OP_Greater, RLX_OP_Less };
    if (n->version >= 7 || n->n_in != 2) return false;
    for (size_t i = 0; i < RLX_ARRAY_LEN(with_attr); i++)
        if (n->op == with_attr[i]) return true;
    return false;
}

bool rlx_legacy_broadcast_set(const rlx_node *n) {
    return n->version < 7 && rlx_attr_int(n, "broadcast", 0) != 0; /* the one place its default is written */
}

bool rlx_legacy_bcast(const rlx_node *n) {
    if (n->version >= 7 || n->n_in != 2) return false;
    if (n->op == RLX_OP_PRelu) return true;
    return rlx_legacy_broadcast_set(n) && has_broadcast_attr(n);
}

bool rlx_legacy_one_shape(const rlx_node *n) { return !rlx_legacy_broadcast_set(n) && has_broadcast_attr(n); }

/* PRelu-1/6 name no broadcasting rule (the slope is "shared across
 * channels" when it has one element); the ONNX reference implementation
 * (onnx.reference PRelu, used for every version) and the ONNX version
 * converter (PRelu 6 -> 7 "compatible") give it PRelu-7's: X and the slope
 * broadcast as numpy does (the reference's x * slope: both ways, so X
 * [3, 1] with a slope [3] gives [3, 3], as PRelu-7 does in rlx and in
 * onnxruntime), and where that fails, a 1-D slope of d values applies along
 * the one axis of X of size d. A dim unknown at load makes the choice wait
 * for the plan (RLX_LEGACY_LATER). */
static rlx_legacy_fit prelu6_axis(const rlx_value *a, const rlx_value *b, int64_t *axis) {
    rlx_legacy_fit numpy = RLX_LEGACY_FITS;
    *axis = a->rank - b->rank;
    for (int j = 1; j <= a->rank && j <= b->rank && numpy != RLX_LEGACY_NO; j++) {
        int64_t da = a->dims[a->rank - j], db = b->dims[b->rank - j];
        if (da == 1 || db == 1) continue;
        if (da < 0 || db < 0) numpy = RLX_LEGACY_LATER;
        else if (da != db) numpy = RLX_LEGACY_NO;
    }
    if (numpy != RLX_LEGACY_NO) return numpy;
    if (b->rank != 1) return RLX_LEGACY_NO;
    int64_t d = b->dims[0];
    int same = 0, unknown = 0, at = -1;
    for (int k = 0; k < a->rank; k++) {
        if (a->dims[k] < 0 || d < 0) unknown++;
        else if (a->dims[k] == d) {
            same++;
            at = k;
        }
    }
    if (same >= 2 || same + unknown == 0) return RLX_LEGACY_NO;
    if (unknown) return RLX_LEGACY_LATER;
    *axis = at;
    return RLX_LEGACY_FITS;
}

rlx_legacy_fit rlx_legacy_bcast_axis(const rlx_node *n, const rlx_value *a, const rlx_value *b, int64_t *axis) {
    if (n->op == RLX_OP_PRelu) return prelu6_axis(a, b, axis);
    *axis = rlx_attr_int(n, "axis", a->rank - b->rank);
    if (*axis < 0 && *axis >= -(int64_t)a->rank) *axis += a->rank;
    if (*axis < 0 || *axis + b->rank > a->rank) return RLX_LEGACY_NO;
    for (int k = 0; k < b->rank; k++) { /* B's dims must equal A's from axis on, or be 1 */
        int64_t da = a->dims[*axis + k], db = b->dims[k];
        if (da >= 0 && db >= 0 && db != 1 && db != da) return RLX_LEGACY_NO;
    }
    return RLX_LEGACY_FITS;
}

/* B' = Unsqueeze(B, axes = [rank(B) .. rank(B) + trailing)), placed just
 * before node i (the nodes from i on move one place down). */
static rlx_status unsqueeze_b(rlx_graph *g, size_t i, int64_t trailing) {
    const rlx_value *b = rlx_node_input(g, &g->nodes[i], 1);
    int b_rank = b->rank;
    char name[64];
    int bid = g->nodes[i].in[1], uid;
    snprintf(name, sizeof name, "%s_legacy_bcast", b->name);
    RLX_TRY(rlx_graph_add_value(g, NULL, &uid));
    rlx_node_attr *at = calloc(1, sizeof *at);
    if (!at) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    at->name = rlx_strdup("axes");
    at->type = RLX_ATTR_INTS;
    at->n = (size_t)trailing;
    at->ints = malloc((size_t)trailing * sizeof(int64_t));
    if (!at->name || !at->ints) {
        rlx_node_attr_free(at);
        free(at);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int64_t k = 0; k < trailing; k++) at->ints[k] = b_rank + k;
    int nid;
    rlx_status st = rlx_graph_add_node(g, "Unsqueeze", "", name, &bid, 1, &uid, 1, at, 1, &nid);
    free(at);
    if (st) return st;
    rlx_node added = g->nodes[nid]; /* g->nodes may have moved */
    memmove(&g->nodes[i + 1], &g->nodes[i], ((size_t)nid - i) * sizeof added);
    g->nodes[i] = added;
    g->nodes[i + 1].in[1] = uid;
    rlx_graph_update_producers(g);
    return RLX_OK;
}

rlx_status rlx_legacy_rewrite_node(rlx_graph *g, size_t i, bool shapes_bound, int *changed) {
    *changed = 0;
    const rlx_node *n = &g->nodes[i];
    if (n->dead || !rlx_legacy_bcast(n)) return RLX_OK;
    const rlx_value *a = rlx_node_input(g, n, 0), *b = rlx_node_input(g, n, 1);
    if (!a || !b || a->rank < 0 || b->rank < 0) return RLX_OK;
    int64_t axis;
    switch (rlx_legacy_bcast_axis(n, a, b, &axis)) {
    case RLX_LEGACY_FITS: break;
    case RLX_LEGACY_NO: /* shape inference refuses these already */
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input B does not broadcast onto A from axis %lld",
                        rlx_node_desc(n), (long long)axis);
    case RLX_LEGACY_LATER:
        if (!shapes_bound) return RLX_OK;
        return rlx_fail(RLX_ERR_UNSUPPORTED,
                        "%s: the axis of slope '%s' (PRelu before opset 7) depends on dims of input '%s' that "
                        "are still unknown with the input shapes bound",
                        rlx_node_desc(n), b->name, a->name);
    }
    int64_t trailing = a->rank - axis - b->rank;
    if (trailing <= 0) return RLX_OK; /* numpy broadcasting already (a PRelu-6 slope of higher rank: < 0) */
    RLX_TRY(unsqueeze_b(g, i, trailing));
    *changed = 1;
    return RLX_OK;
}

