/* passes/fold.c — shape inference and constant folding in one sweep.
 * Folding evaluates with the CPU backend's host interpreter
 * (rlx_cpu_eval_node: the reference kernels), so the math has one
 * implementation. Shape and Size fold from a static input shape alone. An
 * If whose condition is constant (it often depends on shapes only: silero
 * VAD's "is the input rank 2") becomes the nodes of its chosen branch, so
 * the graph needs no control flow and gets a static plan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "base/tensor.h"
#include "passes/passes.h"

rlx_status rlx_pass_infer(rlx_graph *g) {
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].dead) continue;
        RLX_TRY(rlx_infer_node(g, (int)i));
    }
    return RLX_OK;
}

/* The branch of If node n that its constant condition chooses, or NULL when
 * it cannot be inlined into g: the condition is no one-element constant, g
 * is a subgraph, the branch has inputs or another output count, a value of
 * the branch has the name of one of g (ONNX names are unique in a model
 * and its subgraphs; the inlined values keep theirs, so that subgraphs
 * nested in the branch find them), or an outer-scope name is not in g. */
static const rlx_graph *chosen_branch(const rlx_graph *g, const rlx_node *n) {
    const rlx_value *c = rlx_node_input(g, n, 0);
    if (g->parent || !c || !c->konst || rlx_tensor_numel(c->konst) != 1 || c->konst->dtype != RLX_DTYPE_BOOL)
        return NULL;
    const rlx_graph *b = rlx_param_graph(n, *(const uint8_t *)c->konst->data ? RLX_A_then_branch : RLX_A_else_branch);
    if (!b || b->n_inputs || (int)b->n_outputs != n->n_out) return NULL;
    for (size_t v = 0; v < b->n_values; v++) {
        bool outer = b->values[v].flags & RLX_VALUE_OUTER;
        if ((rlx_graph_find(g, b->values[v].name) >= 0) != outer) return NULL;
    }
    return b;
}

/* Replaces If node i of g (chosen_branch b) by b's nodes, placed where the
 * If was, and one Identity per output from the branch's output to the If's
 * (a view step). Constants of b are copied. The If is marked dead. On an
 * error g is left inconsistent (the caller fails). */
static rlx_status inline_if(rlx_graph *g, size_t i, const rlx_graph *b) {
    int *map = malloc((b->n_values + 1) * sizeof *map), *if_out = malloc(((size_t)g->nodes[i].n_out + 1) * sizeof *if_out);
    if (!map || !if_out) {
        free(map);
        free(if_out);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (inlining an If)");
    }
    /* the If goes: its outputs become the Identities' */
    rlx_node *n = &g->nodes[i];
    n->dead = true;
    for (int k = 0; k < n->n_out; k++) {
        if_out[k] = n->out[k];
        if (n->out[k] >= 0) g->values[n->out[k]].producer = -1;
        n->out[k] = -1;
    }
    rlx_status st = RLX_OK;
    size_t first = g->n_nodes;
    for (size_t v = 0; v < b->n_values && !st; v++) {
        const rlx_value *bv = &b->values[v];
        if (bv->flags & RLX_VALUE_OUTER) {
            map[v] = rlx_graph_find(g, bv->name);
        } else if (bv->konst) {
            rlx_tensor *t = NULL;
            st = rlx_tensor_clone(bv->konst, &t);
            if (!st) st = rlx_graph_add_konst(g, bv->name, t, &map[v]);
        } else {
            st = rlx_graph_add_value(g, bv->name, &map[v]);
        }
    }
    for (size_t k = 0; k < b->n_nodes && !st; k++) {
        const rlx_node *bn = &b->nodes[k];
        int *ins = malloc(((size_t)(bn->n_in + bn->n_out) + 1) * sizeof(int));
        rlx_node_attr *attrs = calloc((size_t)bn->n_attrs + 1, sizeof *attrs);
        if (!ins || !attrs) st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (inlining an If)");
        int *outs = ins ? ins + bn->n_in : NULL;
        for (int j = 0; j < bn->n_in && !st; j++) ins[j] = bn->in[j] < 0 ? -1 : map[bn->in[j]];
        for (int j = 0; j < bn->n_out && !st; j++) outs[j] = bn->out[j] < 0 ? -1 : map[bn->out[j]];
        int na = 0;
        for (; na < bn->n_attrs && !st; na++) st = rlx_node_attr_copy(&attrs[na], &bn->attrs[na]);
        if (st) {
            for (int j = 0; j < na; j++) rlx_node_attr_free(&attrs[j]);
        } else {
            st = rlx_graph_add_node(g, bn->op_type, bn->domain, bn->name, ins, bn->n_in, outs, bn->n_out, attrs,
                                    bn->n_attrs, NULL);
        }
        free(attrs);
        free(ins);
    }
    for (size_t k = 0; k < b->n_outputs && !st; k++) {
        int out = if_out[k];
        if (out < 0) continue;
        int in = map[b->outputs[k]];
        char name[160];
        snprintf(name, sizeof name, "%s/output_%zu", g->nodes[i].name, k);
        st = rlx_graph_add_node(g, "Identity", "", name, &in, 1, &out, 1, NULL, 0, NULL);
    }
    free(map);
    free(if_out);
    if (st) return st;
    /* move the new nodes to just after the If */
    size_t n_new = g->n_nodes - first;
    rlx_node *tmp = malloc((n_new + 1) * sizeof *tmp);
    if (!tmp) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (inlining an If)");
    memcpy(tmp, &g->nodes[first], n_new * sizeof *tmp);
    memmove(&g->nodes[i + 1 + n_new], &g->nodes[i + 1], (first - i - 1) * sizeof *tmp);
    memcpy(&g->nodes[i + 1], tmp, n_new * sizeof *tmp);
    free(tmp);
    rlx_graph_update_producers(g);
    return RLX_OK;
}

rlx_status rlx_pass_fold(rlx_graph *g, rlx_pass_stats *stats) {
    for (size_t i = 0; i < g->n_nodes; i++) {
        rlx_node *n = &g->nodes[i];
        if (n->dead) continue;
        RLX_TRY(rlx_infer_node(g, (int)i));
        int moved = 0; /* a PRelu-6 slope that the bound shapes put on an inner axis */
        RLX_TRY(rlx_legacy_rewrite_node(g, i, true, &moved));
        if (moved) RLX_TRY(rlx_infer_node(g, (int)i)); /* its Unsqueeze, now node i */
        n = &g->nodes[i];
        const rlx_graph *b = n->op == RLX_OP_If ? chosen_branch(g, n) : NULL;
        if (b) { /* the branch's nodes follow and are folded in turn */
            RLX_TRY(inline_if(g, i, b));
            if (stats) stats->folded++;
            continue;
        }
        /* data-dependent ops and control flow stay (eager evaluation runs them) */
        if ((n->def->flags & (RLX_OP_NO_FOLD | RLX_OP_CONTROL_FLOW | RLX_OP_DATA_DEPENDENT)) ||
            !rlx_cpu_eval_ready(g, n))
            continue;
        rlx_status est = rlx_cpu_eval_node(g, n, stats ? stats->cfg : NULL);
        /* a kernel refuses the values it reads with RLX_ERR_INVALID_ARGUMENT
         * (an integer division by zero, an index out of range): the
         * caller's fault when it runs on fed values, here the model's own
         * constants, unless they came from the bound input shapes
         * (rlx_node_fault gives those back to the caller) */
        if (est == RLX_ERR_INVALID_ARGUMENT) est = rlx_fail_prefix(RLX_ERR_INVALID_MODEL, "%s", "");
        RLX_TRY(rlx_node_fault(g, n, ~0u, est));
        if (stats) stats->folded++;
    }
    rlx_graph_compact(g);
    return RLX_OK;
}
