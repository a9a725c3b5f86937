/* plan/build.c — the program of one set of inputs (rlx_plan_build): the
 * model's graph specialised on their shapes, then the plan layer's steps
 * in order (plan.h). */
#include <stdio.h>

#include "base/options.h"
#include "base/status.h"
#include "base/tensor.h"
#include "plan/plan.h"

/* A copy of g specialised on the input shapes and control values, through
 * the pass pipeline. */
static rlx_status specialise(const rlx_graph *model, const rlx_tensor *const *inputs, const bool *ctl_in,
                             rlx_pass_stats *ps, rlx_graph **out) {
    *out = NULL;
    rlx_graph *g = NULL;
    RLX_TRY(rlx_graph_clone(model, &g));
    g->shapes_bound = true;
    for (size_t j = 0; j < g->n_inputs; j++) {
        rlx_value *v = &g->values[g->inputs[j]];
        rlx_value_set_shape(v, inputs[j]->rank, inputs[j]->dims, NULL);
    }
    rlx_status st = RLX_OK;
    /* control inputs: their uses read a constant of the fed value (the
     * input itself stays, unused, so that the plan's inputs are the model's) */
    for (size_t j = 0; j < g->n_inputs && ctl_in && !st; j++) {
        if (!ctl_in[j]) continue;
        rlx_tensor *t = NULL;
        int kid = -1, in = g->inputs[j];
        st = rlx_tensor_clone(inputs[j], &t);
        if (!st) st = rlx_graph_add_konst(g, NULL, t, &kid);
        if (!st) g->values[kid].flags |= RLX_VALUE_FED;
        for (size_t i = 0; i < g->n_nodes && !st; i++)
            for (int k = 0; k < g->nodes[i].n_in; k++)
                if (g->nodes[i].in[k] == in) g->nodes[i].in[k] = kid;
    }
    if (!st) st = rlx_plan_passes(g, ps);
    if (st == RLX_ERR_INVALID_ARGUMENT) {
        /* a node failed on what came from these input shapes (a Reshape
         * that cannot take them, symbols that do not broadcast:
         * rlx_node_fault); say which shapes, keep the node the passes
         * named. A value of the model alone stays RLX_ERR_INVALID_MODEL. */
        char sig[512] = "", sh[128];
        size_t o = 0;
        for (size_t j = 0; j < g->n_inputs && o < sizeof sig; j++)
            o += (size_t)snprintf(sig + o, sizeof sig - o, "%s%s=%s", j ? ", " : "", g->values[g->inputs[j]].name,
                                  rlx_shape_str(inputs[j]->dims, inputs[j]->rank, sh, sizeof sh));
        st = rlx_fail_prefix(RLX_ERR_INVALID_ARGUMENT, "the model does not accept the input shapes %s: ", sig);
    }
    if (st) {
        rlx_graph_destroy(g);
        return st;
    }
    *out = g;
    return RLX_OK;
}

rlx_status rlx_plan_build(const rlx_graph *model, const rlx_tensor *const *inputs, const bool *ctl_in,
                          rlx_backend *dev, rlx_backend *host, rlx_pass_stats *ps, char *eager_why, size_t cap,
                          rlx_program **out) {
    *out = NULL;
    if (cap) eager_why[0] = 0;
    rlx_graph *g;
    RLX_TRY(specialise(model, inputs, ctl_in, ps, &g));
    if (rlx_plan_needs_eager(g, eager_why, cap)) {
        rlx_graph_destroy(g);
        return RLX_OK;
    }
    /* before the plan allocates them (weights already exist); the values the
     * model's own nodes make were checked before the fusions already
     * (rlx_plan_passes), these are the ones the passes made or widened */
    rlx_status st = rlx_graph_limit_check(ps->cfg, g);
    if (st) {
        rlx_graph_destroy(g);
        return st;
    }
    rlx_program *p;
    RLX_TRY(rlx_plan_create(g, dev, host ? host : dev, &p)); /* takes g */
    p->mem.no_reuse = ps->cfg->no_reuse;
    st = rlx_plan_memory(p);
    if (!st)
        st = rlx_limit_check(ps->cfg, "limits.max_arena_bytes", p->mem.arena_bytes,
                             "the activation arena of this plan");
    if (!st) st = rlx_plan_segments(p);
    if (st) {
        rlx_program_destroy(p);
        return st;
    }
    *out = p;
    return RLX_OK;
}
