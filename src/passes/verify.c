/* passes/verify.c — structural checks, and a topological sort for graphs
 * that are valid but written out of order. */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/status.h"
#include "passes/passes.h"

/* Defined at the start: graph inputs, constants and outer-scope values. */
static bool defined_at_start(const rlx_value *v) {
    return (v->flags & (RLX_VALUE_INPUT | RLX_VALUE_INITIALIZER | RLX_VALUE_OUTER)) || v->konst;
}

/* Verifies the subgraphs of g's nodes (Loop body, If branches, Scan body),
 * each as a graph of its own whose outer-scope values count as defined. */
static rlx_status verify_subgraphs(rlx_graph *g) {
    for (size_t i = 0; i < g->n_nodes; i++) {
        const rlx_node *n = &g->nodes[i];
        for (int a = 0; a < n->n_attrs; a++) {
            if (!n->attrs[a].g) continue;
            rlx_status st = rlx_pass_verify(n->attrs[a].g);
            if (st) return rlx_fail_prefix(st, "%s: subgraph '%s': ", rlx_node_desc(n), n->attrs[a].name);
        }
    }
    return RLX_OK;
}

rlx_status rlx_pass_verify(rlx_graph *g) {
    size_t nn = g->n_nodes, nv = g->n_values;
    char *ready = calloc(nv + 1, 1);
    int *order = malloc((nn + 1) * sizeof(int));
    char *placed = calloc(nn + 1, 1);
    rlx_status st = RLX_OK;
    if (!ready || !order || !placed) {
        st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (verify)");
        goto done;
    }
    for (size_t i = 0; i < nv; i++) ready[i] = defined_at_start(&g->values[i]);
    /* Kahn-style: repeatedly place the first node whose inputs are ready.
     * For an ordered graph this is one pass. */
    size_t n_placed = 0;
    bool sorted = true;
    while (n_placed < nn) {
        bool progress = false;
        for (size_t i = 0; i < nn; i++) {
            if (placed[i]) continue;
            const rlx_node *n = &g->nodes[i];
            bool ok = true;
            for (int k = 0; k < n->n_in && ok; k++)
                if (n->in[k] >= 0 && !ready[n->in[k]]) ok = false;
            if (!ok) continue;
            if (n_placed != i) sorted = false;
            placed[i] = 1;
            order[n_placed++] = (int)i;
            for (int k = 0; k < n->n_out; k++)
                if (n->out[k] >= 0) ready[n->out[k]] = 1;
            progress = true;
        }
        if (!progress) break;
    }
    if (n_placed < nn) {
        /* name the first stuck node and its undefined input */
        for (size_t i = 0; i < nn; i++) {
            if (placed[i]) continue;
            const rlx_node *n = &g->nodes[i];
            for (int k = 0; k < n->n_in; k++) {
                if (n->in[k] < 0 || ready[n->in[k]]) continue;
                const rlx_value *v = &g->values[n->in[k]];
                st = rlx_fail(RLX_ERR_INVALID_MODEL,
                              v->producer >= 0
                                  ? "%s: input '%s' is part of a cycle (the graph is not a DAG)"
                                  : "%s: input '%s' is never defined",
                              rlx_node_desc(n), v->name);
                goto done;
            }
        }
        st = rlx_fail(RLX_ERR_INVALID_MODEL, "graph has a cycle");
        goto done;
    }
    for (size_t i = 0; i < g->n_outputs; i++) {
        const rlx_value *v = &g->values[g->outputs[i]];
        if (!ready[g->outputs[i]]) {
            st = rlx_fail(RLX_ERR_INVALID_MODEL, "graph output '%s' is never defined", v->name);
            goto done;
        }
    }
    if (!sorted) {
        rlx_node *nodes = malloc((nn + 1) * sizeof *nodes);
        if (!nodes) {
            st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (verify)");
            goto done;
        }
        for (size_t i = 0; i < nn; i++) nodes[i] = g->nodes[order[i]];
        memcpy(g->nodes, nodes, nn * sizeof *nodes);
        free(nodes);
        rlx_graph_update_producers(g);
    }
done:
    free(ready);
    free(order);
    free(placed);
    return st ? st : verify_subgraphs(g);
}
