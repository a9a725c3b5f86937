/* passes/legacy.c — rewrites pre-opset-7 forms into the current ones so
 * that kernels implement one semantics: the binary ops' legacy broadcast
 * (broadcast=1 with `axis`: B's dims line up with A's starting at `axis`)
 * becomes numpy broadcasting by unsqueezing B's trailing dims, and so does
 * a PRelu-6 slope that applies along an inner axis of X (the ONNX
 * reference's rule, rlx_legacy_bcast_axis), node by node with
 * rlx_legacy_rewrite_node (src/ir/legacy_bcast.c). Runs on an imported graph
 * after shape inference (ranks must be known); the fold and eager
 * evaluation rewrite, with the shapes bound, a PRelu-6 that the model's
 * dims left open. */
#include "base/status.h"
#include "ir/op.h"
#include "passes/passes.h"

rlx_status rlx_pass_legacy(rlx_graph *g, int *changed) {
    *changed = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        int one;
        RLX_TRY(rlx_legacy_rewrite_node(g, i, false, &one));
        if (one) { /* the Unsqueeze is node i now; the node itself is i + 1 */
            i++;
            (*changed)++;
        }
    }
    return RLX_OK;
}
