/* passes/fold.c — shape inference and constant folding in one sweep.
 * Folding evaluates with the CPU backend's host interpreter
 * (rlx_cpu_eval_node: the reference kernels), so the math has one
 * implementation. Shape and Size fold from a static input shape alone. */
#include "backend/cpu/cpu.h"
#include "passes/passes.h"

rlx_status rlx_pass_infer(rlx_graph *g) {
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].dead) continue;
        RLX_TRY(rlx_infer_node(g, (int)i));
    }
    return RLX_OK;
}

rlx_status rlx_pass_fold(rlx_graph *g, rlx_pass_stats *stats) {
    for (size_t i = 0; i < g->n_nodes; i++) {
        rlx_node *n = &g->nodes[i];
        if (n->dead) continue;
        RLX_TRY(rlx_infer_node(g, (int)i));
        n = &g->nodes[i];
        /* data-dependent ops and control flow stay (eager evaluation runs them) */
        if ((n->def->flags & (RLX_OP_NO_FOLD | RLX_OP_CONTROL_FLOW | RLX_OP_DATA_DEPENDENT)) ||
            !rlx_cpu_eval_ready(g, n))
            continue;
        RLX_TRY(rlx_cpu_eval_node(g, n, stats ? stats->cfg : NULL));
        if (stats) stats->folded++;
    }
    rlx_graph_compact(g);
    return RLX_OK;
}
