/* passes/fold.c — shape inference and constant folding in one sweep.
 * Folding evaluates with the CPU reference kernels, so the math has one
 * implementation. Shape and Size fold from a static input shape alone. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "base/mem.h"
#include "base/tensor.h"
#include "passes/passes.h"

rlx_status rlx_pass_infer(rlx_graph *g) {
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].dead) continue;
        RLX_TRY(rlx_infer_node(g, (int)i));
    }
    return RLX_OK;
}

static bool shape_only_op(const rlx_node *n) {
    return n->op == RLX_OP_Shape || n->op == RLX_OP_Size;
}

static bool can_fold(const rlx_graph *g, const rlx_node *n, const rlx_fold_options *opt) {
    const rlx_op_def *d = n->def;
    if (d->flags & RLX_OP_NO_FOLD) return false;
    if ((d->flags & (RLX_OP_CONTROL_FLOW | RLX_OP_DATA_DEPENDENT)) && !opt->eager) return false;
    bool shape_only = shape_only_op(n);
    for (int i = 0; i < n->n_in; i++) {
        const rlx_value *v = rlx_node_input(g, n, i);
        if (!v) continue;
        if (shape_only && i == 0) {
            if (!rlx_value_is_static(v)) return false;
            continue;
        }
        if (!v->konst) return false;
    }
    if (d->flags & RLX_OP_DATA_DEPENDENT) return true;
    for (int i = 0; i < n->n_out; i++) {
        const rlx_value *v = rlx_node_output(g, n, i);
        if (!v) continue;
        if (!rlx_value_is_static(v)) return false;
        if (opt->max_elements && rlx_value_numel(v) > opt->max_elements) return false;
    }
    return true;
}

static rlx_status fold_node(rlx_graph *g, rlx_node *n) {
    const rlx_tensor *in[64];
    rlx_tensor shape_only = { 0 };
    rlx_tensor *out[64] = { 0 };
    if (n->n_in > 64 || n->n_out > 64)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: more than 64 inputs or outputs", rlx_node_desc(n));
    bool dd = (n->def->flags & RLX_OP_DATA_DEPENDENT) != 0;
    for (int i = 0; i < n->n_in; i++) {
        const rlx_value *v = rlx_node_input(g, n, i);
        in[i] = v ? v->konst : NULL;
        if (v && !v->konst && shape_only_op(n) && i == 0) {
            shape_only.dtype = v->dtype;
            shape_only.rank = v->rank;
            memcpy(shape_only.dims, v->dims, sizeof shape_only.dims);
            in[i] = &shape_only;
        }
    }
    rlx_status st = RLX_OK;
    for (int i = 0; i < n->n_out; i++) {
        rlx_value *v = rlx_node_output(g, n, i);
        if (!v) continue;
        if (dd) {
            out[i] = calloc(1, sizeof(rlx_tensor));
            if (!out[i]) { st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory"); goto fail; }
        } else {
            st = rlx_tensor_create(v->dtype, v->dims, v->rank, &out[i]);
            if (st) { rlx_fail_prefix(st, "%s: output '%s': ", rlx_node_desc(n), v->name); goto fail; }
        }
    }
    st = rlx_cpu_run_node(g, n, in, out, true);
    if (st) goto fail;
    for (int i = 0; i < n->n_out; i++) {
        rlx_value *v = rlx_node_output(g, n, i);
        if (!v) continue;
        if (dd && !out[i]->data && out[i]->dtype == RLX_DTYPE_UNDEFINED) {
            st = rlx_fail(RLX_ERR_INTERNAL, "%s: kernel did not produce output %d", rlx_node_desc(n), i);
            goto fail;
        }
        /* string elements point into the inputs (or the node's attributes),
         * which may go away with this node: the constant gets its own copy */
        if (out[i]->dtype == RLX_DTYPE_STRING && (st = rlx_tensor_own_strings(out[i]))) {
            rlx_fail_prefix(st, "%s: ", rlx_node_desc(n));
            goto fail;
        }
        rlx_value_set_konst(v, out[i]);
        out[i] = NULL;
    }
    n->dead = true;
    return RLX_OK;
fail:
    for (int i = 0; i < n->n_out; i++) rlx_tensor_destroy(out[i]);
    return st;
}

rlx_status rlx_pass_fold(rlx_graph *g, const rlx_fold_options *opt, rlx_pass_stats *stats) {
    for (size_t i = 0; i < g->n_nodes; i++) {
        rlx_node *n = &g->nodes[i];
        if (n->dead) continue;
        RLX_TRY(rlx_infer_node(g, (int)i));
        n = &g->nodes[i];
        if (!can_fold(g, n, opt)) continue;
        RLX_TRY(fold_node(g, n));
        if (stats) stats->folded++;
    }
    rlx_graph_compact(g);
    return RLX_OK;
}
