/* passes/dce.c — dead-code elimination: keeps the nodes that graph outputs
 * depend on. */
#include <stdlib.h>

#include "base/mem.h"
#include "base/status.h"
#include "passes/passes.h"

rlx_status rlx_pass_dce(rlx_graph *g, rlx_pass_stats *stats) {
    char *live = calloc(g->n_values + 1, 1);
    if (!live) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (dce)");
    for (size_t i = 0; i < g->n_outputs; i++) live[g->outputs[i]] = 1;
    for (size_t i = g->n_nodes; i-- > 0;) {
        rlx_node *n = &g->nodes[i];
        if (n->dead) continue;
        bool used = false;
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0 && live[n->out[k]]) used = true;
        if (!used) {
            n->dead = true;
            if (stats) stats->removed++;
            continue;
        }
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0) live[n->in[k]] = 1;
    }
    free(live);
    rlx_graph_compact(g);
    return RLX_OK;
}
