/* backend/cpu/cpu_eval.c — the host interpreter for values that become
 * constants: constant folding (passes/fold.c) evaluates one node at a time
 * with rlx_cpu_eval_node, and eager evaluation (a session's graph with
 * data-dependent shapes or control flow, and the bodies of If, Loop and
 * Scan) runs a whole graph with rlx_cpu_eval_graph, inferring each node's
 * shapes as it goes. Both run the reference kernels through
 * rlx_cpu_run_node, the kernel table that the CPU backend's segments use. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "base/mem.h"
#include "base/options.h"
#include "base/runctl.h"
#include "base/tensor.h"

static bool shape_only_op(const rlx_node *n) { return n->op == RLX_OP_Shape || n->op == RLX_OP_Size; }

/* Whether input i (value v) of n is known enough to run n: a constant, or
 * a static shape for Shape and Size. */
static bool input_known(const rlx_node *n, int i, const rlx_value *v) {
    return i == 0 && shape_only_op(n) ? rlx_value_is_static(v) : v->konst != NULL;
}

bool rlx_cpu_eval_ready(const rlx_graph *g, const rlx_node *n) {
    for (int i = 0; i < n->n_in; i++) {
        const rlx_value *v = rlx_node_input(g, n, i);
        if (v && !input_known(n, i, v)) return false;
    }
    if (n->def->flags & RLX_OP_DATA_DEPENDENT) return true;
    for (int i = 0; i < n->n_out; i++) {
        const rlx_value *v = rlx_node_output(g, n, i);
        if (!v) continue;
        if (!rlx_value_is_static(v)) return false;
    }
    return true;
}

rlx_status rlx_cpu_eval_node(rlx_graph *g, rlx_node *n, const struct rlx_config *cfg) {
    /* a stop of the session's run: before each node folded or evaluated eagerly */
    const rlx_run_ctl *run = cfg ? cfg->run : NULL;
    if (rlx_run_stopped(run)) {
        rlx_run_stop_error(run);
        return rlx_fail_prefix(RLX_ERR_CANCELLED, "before %s: ", rlx_node_desc(n));
    }
    /* the input and output arrays: on the stack for up to 64 (every node
     * but a wide Concat, Split, Sum or Loop), else on the heap (folding
     * and eager runs allocate each output anyway) */
    const rlx_tensor *in_stack[64], **in = in_stack;
    rlx_tensor *out_stack[64] = { 0 }, **out = out_stack;
    rlx_tensor shape_only = { 0 };
    if (n->n_in > 64 || n->n_out > 64) {
        in = calloc((size_t)(n->n_in > 0 ? n->n_in : 1), sizeof *in);
        out = calloc((size_t)(n->n_out > 0 ? n->n_out : 1), sizeof *out);
        if (!in || !out) {
            free(in);
            free(out);
            return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", rlx_node_desc(n));
        }
    }
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
    for (int i = 0; i < n->n_out && !dd; i++) {
        const rlx_value *v = rlx_node_output(g, n, i);
        if (v && (st = rlx_value_limit_check(cfg, g, v))) goto fail;
    }
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
    st = rlx_cpu_run_node_cfg(g, n, in, out, true, cfg);
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
fail:
    if (st)
        for (int i = 0; i < n->n_out; i++) rlx_tensor_destroy(out[i]);
    if (in != in_stack) free(in);
    if (out != out_stack) free(out);
    return st;
}

/* Value v becomes the borrowed constant t, with its dtype and shape. */
static void bind(rlx_value *v, const rlx_tensor *t) {
    v->konst = (rlx_tensor *)t;
    v->flags |= RLX_VALUE_KONST_BORROWED;
    v->dtype = t->dtype;
    rlx_value_set_shape(v, t->rank, t->dims, NULL);
}

/* Finds a constant value by name in `g` or its enclosing graphs. */
static const rlx_value *find_outer(const rlx_graph *g, const char *name) {
    for (; g; g = g->parent) {
        int id = rlx_graph_find(g, name);
        if (id >= 0 && (g->values[id].konst || !(g->values[id].flags & RLX_VALUE_OUTER))) return &g->values[id];
    }
    return NULL;
}

/* The error for graph output `out` left without a value: the model's fault
 * (a node that inference could not give static output shapes although its
 * inputs were known, e.g. GatherND with scalar indices), named by walking
 * back from `out` to the first producer whose inputs all have values. */
static rlx_status uncomputed(const rlx_graph *b, const rlx_value *out) {
    const rlx_value *v = out;
    for (size_t step = 0; step <= b->n_nodes && v->producer >= 0 && (size_t)v->producer < b->n_nodes; step++) {
        const rlx_node *n = &b->nodes[v->producer];
        const rlx_value *missing = NULL;
        for (int i = 0; i < n->n_in && !missing; i++) {
            const rlx_value *x = rlx_node_input(b, n, i);
            if (x && !input_known(n, i, x)) missing = x;
        }
        if (!missing)
            return rlx_fail(RLX_ERR_INVALID_MODEL,
                            "%s: its output shapes do not follow from its inputs (eager evaluation), so graph output "
                            "'%s' has no value",
                            rlx_node_desc(n), out->name);
        v = missing;
    }
    return rlx_fail(RLX_ERR_INVALID_MODEL, "eager evaluation left graph output '%s' without a value", out->name);
}

/* Binds b's outer-scope references and graph inputs; evaluates every node. */
static rlx_status eval_all(rlx_graph *b, const struct rlx_config *cfg, const rlx_tensor *const *inputs) {
    for (size_t i = 0; b->parent && i < b->n_values; i++) {
        rlx_value *v = &b->values[i];
        if (!(v->flags & RLX_VALUE_OUTER) || v->konst) continue;
        const rlx_value *o = find_outer(b->parent, v->name);
        if (!o || !o->konst)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "subgraph uses '%s', which the enclosing graph does not define",
                            v->name);
        bind(v, o->konst);
    }
    for (size_t i = 0; i < b->n_inputs; i++) {
        rlx_value *v = &b->values[b->inputs[i]];
        if (!inputs[i]) return rlx_fail(RLX_ERR_INVALID_MODEL, "subgraph input '%s' has no value", v->name);
        bind(v, inputs[i]);
    }
    for (size_t i = 0; i < b->n_nodes; i++) {
        if (b->nodes[i].dead) continue;
        RLX_TRY(rlx_infer_node(b, (int)i));
        int moved = 0; /* a PRelu-6 slope that the bound shapes put on an inner axis */
        RLX_TRY(rlx_legacy_rewrite_node(b, i, true, &moved));
        if (moved) RLX_TRY(rlx_infer_node(b, (int)i)); /* its Unsqueeze, now node i */
        if (rlx_cpu_eval_ready(b, &b->nodes[i]))
            RLX_TRY(rlx_node_fault(b, &b->nodes[i], ~0u, rlx_cpu_eval_node(b, &b->nodes[i], cfg)));
    }
    for (size_t i = 0; i < b->n_outputs; i++) {
        const rlx_value *v = &b->values[b->outputs[i]];
        if (!v->konst) return uncomputed(b, v);
    }
    return RLX_OK;
}

rlx_status rlx_cpu_eval_graph(const rlx_graph *g, const rlx_graph *parent, const struct rlx_config *cfg,
                              const rlx_tensor *const *inputs, rlx_tensor **outputs) {
    rlx_graph *b;
    RLX_TRY(rlx_graph_clone(g, &b));
    b->parent = (rlx_graph *)parent;
    b->shapes_bound = true; /* its inputs' values are the caller's (or an enclosing node's) */
    rlx_status st = eval_all(b, cfg, inputs);
    for (size_t i = 0; i < b->n_outputs && !st; i++) st = rlx_tensor_clone(b->values[b->outputs[i]].konst, &outputs[i]);
    if (st)
        for (size_t i = 0; i < b->n_outputs; i++) rlx_tensor_destroy(outputs[i]), outputs[i] = NULL;
    rlx_graph_destroy(b);
    return st;
}
