/* plan/program.c — a program's steps and their devices, and its end. */
#include <stdio.h>
#include <stdlib.h>

#include "ir/op.h"
#include "plan/plan.h"

void rlx_program_destroy(rlx_program *p) {
    if (!p) return;
    rlx_graph_destroy(p->g);
    free(p->steps);
    free(p->step_on);
    free(p->mem.offset);
    free(p->mem.bytes);
    free(p->mem.alias);
    free(p->mem.first);
    free(p->mem.last);
    for (size_t k = 0; k < p->n_segs; k++) {
        free(p->segs[k].up);
        free(p->segs[k].down);
    }
    free(p->segs);
    free(p->out);
    free(p->notes);
    free(p);
}

const char *rlx_plan_needs_eager(const rlx_graph *g, char *buf, size_t cap) {
    for (size_t i = 0; i < g->n_nodes; i++) {
        const rlx_node *n = &g->nodes[i];
        if (n->def->flags & RLX_OP_CONTROL_FLOW) {
            snprintf(buf, cap, "%s is control flow", rlx_node_desc(n));
            return buf;
        }
        for (int k = 0; k < n->n_out; k++) {
            const rlx_value *v = rlx_node_output(g, n, k);
            if (v && !rlx_value_is_static(v)) {
                snprintf(buf, cap, "%s: output '%s' has a shape that depends on data", rlx_node_desc(n), v->name);
                return buf;
            }
        }
    }
    return NULL;
}

/* The device of node n (see rlx_plan_create). */
static rlx_status assign(const rlx_graph *g, const rlx_node *n, rlx_backend *dev, rlx_backend *host, uint8_t *on) {
    const rlx_value *x = rlx_node_input(g, n, 0);
    const rlx_value *y = rlx_node_output(g, n, 0);
    if ((n->def->flags & RLX_OP_VIEW) && x && y && !x->konst && x->dtype == y->dtype &&
        rlx_value_numel(x) == rlx_value_numel(y))
        *on = RLX_STEP_VIEW;
    else if (dev != host && dev->supports(dev, g, n))
        *on = RLX_STEP_GPU;
    else if (host->supports(host, g, n))
        *on = RLX_STEP_CPU;
    else
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: no kernel for op %s on any backend", rlx_node_desc(n), n->op_type);
    return RLX_OK;
}

rlx_status rlx_plan_create(rlx_graph *g, rlx_backend *dev, rlx_backend *host, rlx_program **out) {
    *out = NULL;
    rlx_program *p = calloc(1, sizeof *p);
    if (!p) {
        rlx_graph_destroy(g);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    }
    p->g = g;
    p->steps = malloc((g->n_nodes + 1) * sizeof(int));
    p->step_on = malloc(g->n_nodes + 1);
    rlx_status st = p->steps && p->step_on ? RLX_OK : rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < g->n_nodes && !st; i++) {
        p->steps[p->n_steps] = (int)i;
        st = assign(g, &g->nodes[i], dev, host, &p->step_on[p->n_steps]);
        p->n_steps++;
    }
    if (st) {
        rlx_program_destroy(p);
        return st;
    }
    p->mem.buffer_limit = dev->max_buffer_bytes;
    *out = p;
    return RLX_OK;
}
