/* passes/legacy.c — rewrites pre-opset-7 forms into the current ones so
 * that kernels implement one semantics: the binary ops' legacy broadcast
 * (broadcast=1 with `axis`: B's dims line up with A's starting at `axis`)
 * becomes numpy broadcasting by unsqueezing B's trailing dims, and so does
 * a PRelu-6 slope that applies along an inner axis of X (the ONNX
 * reference's rule, rlx_legacy_bcast_axis). Runs on an imported graph after
 * shape inference (ranks must be known), and node by node in the fold,
 * where the plan's shapes decide a PRelu-6 that the model's dims left open. */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/status.h"
#include "ir/op.h"
#include "passes/passes.h"

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

rlx_status rlx_pass_legacy_node(rlx_graph *g, size_t i, bool shapes_bound, int *changed) {
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
    if (trailing == 0) return RLX_OK;
    RLX_TRY(unsqueeze_b(g, i, trailing));
    *changed = 1;
    return RLX_OK;
}

rlx_status rlx_pass_legacy(rlx_graph *g, int *changed) {
    *changed = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        int one;
        RLX_TRY(rlx_pass_legacy_node(g, i, false, &one));
        if (one) { /* the Unsqueeze is node i now; the node itself is i + 1 */
            i++;
            (*changed)++;
        }
    }
    return RLX_OK;
}
