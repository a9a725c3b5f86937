/* passes/legacy.c — rewrites pre-opset-7 forms into the current ones so
 * that kernels implement one semantics: the binary ops' legacy broadcast
 * (broadcast=1 with `axis`: B's dims line up with A's starting at `axis`)
 * becomes numpy broadcasting by unsqueezing B's trailing dims, and so does
 * PRelu-6's per-channel slope [C]. Runs on an
 * imported graph after shape inference (ranks must be known). */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/status.h"
#include "ir/op.h"
#include "passes/passes.h"

rlx_status rlx_pass_legacy(rlx_graph *g, int *changed) {
    *changed = 0;
    size_t n_nodes = g->n_nodes;
    for (size_t i = 0; i < n_nodes; i++) {
        rlx_node *n = &g->nodes[i];
        if (!rlx_legacy_bcast(n)) continue;
        const rlx_value *a = rlx_node_input(g, n, 0), *b = rlx_node_input(g, n, 1);
        if (!a || !b || a->rank < 0 || b->rank < 0) continue;
        int64_t axis;
        if (!rlx_legacy_bcast_axis(n, a, b, &axis)) /* shape inference refuses these already */
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input B does not broadcast onto A from axis %lld",
                            rlx_node_desc(n), (long long)axis);
        int64_t trailing = a->rank - axis - b->rank;
        if (trailing == 0) continue;
        /* B' = Unsqueeze(B, axes = [rank(B) .. rank(B) + trailing)) */
        char name[64];
        int bid = n->in[1], uid;
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
        for (int64_t k = 0; k < trailing; k++) at->ints[k] = b->rank + k;
        int nid;
        rlx_status st = rlx_graph_add_node(g, "Unsqueeze", "", name, &bid, 1, &uid, 1, at, 1, &nid);
        free(at);
        if (st) return st;
        g->nodes[i].in[1] = uid; /* g->nodes may have moved */
        (*changed)++;
    }
    return RLX_OK;
}
