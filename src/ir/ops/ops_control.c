/* Control flow: If, Loop, Scan. Their bodies are subgraph attributes whose
 * outer-scope references are values flagged RLX_VALUE_OUTER. Graphs holding
 * them run eagerly on the CPU (the session says so in its report).
 * Versions are the ONNX since-versions of each operator; Scan-8 (with a
 * batch axis and sequence_lens) is not implemented. */
#include <stdlib.h>
#include <string.h>

#include "base/tensor.h"
#include "ir/ops/ops.h"

/* Infers a copy of `body` with its graph inputs typed like in_types[i]
 * (NULL: keep the declared type) and its outer-scope references typed from
 * the enclosing graphs, so that outputs the model left untyped get types.
 * Returns NULL when that is not possible (the declared types then stand). */
static rlx_graph *infer_body(const rlx_infer_ctx *c, const rlx_graph *body, const rlx_value *const *in_types) {
    rlx_graph *b;
    if (rlx_graph_clone(body, &b)) return NULL;
    b->parent = c->g;
    for (size_t i = 0; i < b->n_inputs; i++) {
        const rlx_value *t = in_types ? in_types[i] : NULL;
        rlx_value *v = &b->values[b->inputs[i]];
        if (!t) continue;
        v->dtype = t->dtype;
        rlx_value_set_shape(v, t->rank, t->dims, NULL);
    }
    for (size_t i = 0; i < b->n_values; i++) {
        rlx_value *v = &b->values[i];
        if (!(v->flags & RLX_VALUE_OUTER)) continue;
        for (const rlx_graph *g = c->g; g; g = g->parent) {
            int id = rlx_graph_find(g, v->name);
            if (id < 0) continue;
            v->dtype = g->values[id].dtype;
            rlx_value_set_shape(v, g->values[id].rank, g->values[id].dims, NULL);
            break;
        }
    }
    rlx_status st = RLX_OK;
    for (size_t i = 0; i < b->n_nodes && !st; i++) st = rlx_infer_node(b, (int)i);
    if (st) {
        rlx_clear_error();
        rlx_graph_destroy(b);
        return NULL;
    }
    return b;
}

/* If's cond and Loop's M and cond hold one element: a shape known to hold
 * another count fails the load (a constant's), or the plan for the input
 * shapes (a graph input's: rlx_ictx_fail_from); before, only the kernel
 * refused them when it ran. */
static rlx_status check_one_element(rlx_infer_ctx *c, int i, const char *what) {
    const rlx_value *v = rlx_ictx_in(c, i);
    if (!v || v->rank < 0) return RLX_OK;
    bool one = true;
    for (int d = 0; d < v->rank; d++) {
        if (v->dims[d] < 0) return RLX_OK; /* not known yet */
        one &= v->dims[d] == 1;
    }
    if (one) return RLX_OK;
    char sh[128];
    rlx_status st = rlx_ictx_fail_from(c, 1u << i, "%s '%s' must have one element, got shape %s", what, v->name,
                                       rlx_shape_str(v->dims, v->rank, sh, sizeof sh));
    /* rlx_node_fault leaves control flow's faults as they are (its body's
     * nodes said whose they were): a fed value's is the caller's here */
    if (c->g->shapes_bound && rlx_value_from_caller(c->g, c->n->in[i]))
        st = rlx_fail_prefix(RLX_ERR_INVALID_ARGUMENT, "%s", "");
    return st;
}

static rlx_status infer_if(rlx_infer_ctx *c) {
    RLX_TRY(check_one_element(c, 0, "cond"));
    const rlx_graph *t = rlx_param_graph(c->n, RLX_A_then_branch), *e = rlx_param_graph(c->n, RLX_A_else_branch);
    if (!t || !e) return rlx_ictx_fail(c, "then_branch and else_branch must be graphs");
    rlx_graph *tt = infer_body(c, t, NULL), *te = infer_body(c, e, NULL);
    if (tt) t = tt;
    if (te) e = te;
    rlx_status st = RLX_OK;
    if ((int)t->n_outputs != c->n->n_out || (int)e->n_outputs != c->n->n_out) {
        st = rlx_ictx_fail(c, "then_branch has %zu outputs and else_branch %zu, but the node has %d", t->n_outputs,
                           e->n_outputs,
                           c->n->n_out);
        goto done;
    }
    for (int i = 0; i < c->n->n_out; i++) {
        const rlx_value *a = &t->values[t->outputs[i]], *b = &e->values[e->outputs[i]];
        rlx_dtype dt = a->dtype != RLX_DTYPE_UNDEFINED ? a->dtype : b->dtype;
        if (a->rank >= 0 && a->rank == b->rank) {
            int64_t dims[RLX_MAX_RANK];
            for (int d = 0; d < a->rank; d++) dims[d] = a->dims[d] == b->dims[d] ? a->dims[d] : RLX_DIM_DYN;
            rlx_ictx_set_out(c, i, dt, a->rank, dims, NULL);
        } else {
            rlx_ictx_set_out_unknown(c, i, dt);
        }
    }
done:
    rlx_graph_destroy(tt);
    rlx_graph_destroy(te);
    return st;
}

static rlx_status infer_loop(rlx_infer_ctx *c) {
    const rlx_graph *b = rlx_param_graph(c->n, RLX_A_body);
    if (!b) return rlx_ictx_fail(c, "attribute 'body' must be a graph");
    RLX_TRY(check_one_element(c, 0, "M"));
    RLX_TRY(check_one_element(c, 1, "cond"));
    int n_carried = c->n->n_in - 2;
    rlx_value iter = { .dtype = RLX_DTYPE_I64, .rank = 0 }, cond = { .dtype = RLX_DTYPE_BOOL, .rank = 0 };
    /* shape inference runs at load and compile time, not per run */
    const rlx_value **types = calloc((size_t)(n_carried > 0 ? n_carried : 0) + 3, sizeof *types);
    if (!types) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", rlx_node_desc(c->n));
    types[0] = &iter;
    types[1] = &cond;
    for (int i = 0; i < n_carried; i++) types[2 + i] = rlx_ictx_in(c, 2 + i);
    rlx_graph *typed = (n_carried >= 0 && (int)b->n_inputs == n_carried + 2) ? infer_body(c, b, types) : NULL;
    free(types);
    rlx_status st = RLX_OK;
    if (typed) b = typed;
    if (n_carried < 0 || (int)b->n_inputs != n_carried + 2 || (int)b->n_outputs < n_carried + 1 ||
        c->n->n_out != (int)b->n_outputs - 1) {
        st = rlx_ictx_fail(c, "body has %zu inputs and %zu outputs, which do not fit %d loop-carried values and %d "
                              "node outputs", b->n_inputs, b->n_outputs, n_carried, c->n->n_out);
        goto done;
    }
    for (int i = 0; i < c->n->n_out; i++) {
        const rlx_value *bo = &b->values[b->outputs[i + 1]];
        if (i < n_carried) {
            const rlx_value *init = rlx_ictx_in(c, 2 + i);
            rlx_dtype dt = init ? init->dtype : bo->dtype;
            if (init && bo->rank == init->rank && bo->rank >= 0) {
                int64_t dims[RLX_MAX_RANK];
                for (int d = 0; d < bo->rank; d++) dims[d] = bo->dims[d] == init->dims[d] ? init->dims[d] : RLX_DIM_DYN;
                rlx_ictx_set_out(c, i, dt, bo->rank, dims, NULL);
            } else {
                rlx_ictx_set_out_unknown(c, i, dt);
            }
        } else if (bo->rank >= 0 && bo->rank < RLX_MAX_RANK) {
            int64_t dims[RLX_MAX_RANK];
            dims[0] = RLX_DIM_DYN;
            for (int d = 0; d < bo->rank; d++) dims[d + 1] = bo->dims[d];
            rlx_ictx_set_out(c, i, bo->dtype, bo->rank + 1, dims, NULL);
        } else {
            rlx_ictx_set_out_unknown(c, i, bo->dtype);
        }
    }
done:
    rlx_graph_destroy(typed);
    return st;
}

static rlx_status infer_scan(rlx_infer_ctx *c) {
    const rlx_graph *b = rlx_param_graph(c->n, RLX_A_body);
    if (!b) return rlx_ictx_fail(c, "attribute 'body' must be a graph");
    int64_t m = rlx_param_int(c->n, RLX_A_num_scan_inputs);
    int n_state = (m >= 1 && m <= c->n->n_in) ? c->n->n_in - (int)m : -1;
    if (n_state < 0 || (int)b->n_inputs != c->n->n_in || c->n->n_out != (int)b->n_outputs)
        return rlx_ictx_fail(c, "num_scan_inputs %lld and the body's %zu inputs / %zu outputs do not fit the node",
                             (long long)m, b->n_inputs, b->n_outputs);
    /* type the body: states as given, scan inputs with their scan axis removed */
    size_t n_in_axes;
    const int64_t *in_axes = rlx_param_ints(c->n, RLX_A_scan_input_axes, &n_in_axes);
    /* shape inference runs at load and compile time, not per run */
    rlx_value *slices = calloc((size_t)c->n->n_in + 1, sizeof *slices);
    const rlx_value **types = calloc((size_t)c->n->n_in + 1, sizeof *types);
    rlx_graph *typed = NULL;
    if (!slices || !types) {
        free(slices);
        free(types);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", rlx_node_desc(c->n));
    }
    {
        for (int i = 0; i < c->n->n_in; i++) {
            const rlx_value *x = rlx_ictx_in(c, i);
            types[i] = x;
            if (i < n_state || !x || x->rank < 1) continue;
            int k = i - n_state, axis = 0;
            if (in_axes && (size_t)k < n_in_axes && !rlx_norm_axis(in_axes[k], x->rank, &axis)) continue;
            slices[i] = *x;
            slices[i].rank = x->rank - 1;
            for (int d = 0, o = 0; d < x->rank; d++)
                if (d != axis) slices[i].dims[o++] = x->dims[d];
            types[i] = &slices[i];
        }
        typed = infer_body(c, b, types);
        if (typed) b = typed;
    }
    free(slices);
    free(types);
    size_t n_axes;
    const int64_t *axes = rlx_param_ints(c->n, RLX_A_scan_output_axes, &n_axes);
    for (int i = 0; i < c->n->n_out; i++) {
        const rlx_value *bo = &b->values[b->outputs[i]];
        if (i < n_state) {
            rlx_ictx_set_out_like(c, i, rlx_ictx_in(c, i));
            continue;
        }
        int k = i - n_state;
        if (bo->rank < 0 || bo->rank >= RLX_MAX_RANK) {
            rlx_ictx_set_out_unknown(c, i, bo->dtype);
            continue;
        }
        int axis = 0;
        if (axes && (size_t)k < n_axes && !rlx_norm_axis(axes[k], bo->rank + 1, &axis)) {
            rlx_graph_destroy(typed);
            return rlx_ictx_fail(c, "scan_output_axes[%d] = %lld is out of range", k, (long long)axes[k]);
        }
        int64_t dims[RLX_MAX_RANK];
        for (int d = 0, s = 0; d < bo->rank + 1; d++) dims[d] = d == axis ? RLX_DIM_DYN : bo->dims[s++];
        rlx_ictx_set_out(c, i, bo->dtype, bo->rank + 1, dims, NULL);
    }
    rlx_graph_destroy(typed);
    return RLX_OK;
}

#define CF (RLX_OP_CONTROL_FLOW | RLX_OP_DATA_DEPENDENT)

const rlx_op_def rlx_ops_control[] = {
#include "ir/ops/ops_control.def"
};
const size_t rlx_ops_control_count = RLX_ARRAY_LEN(rlx_ops_control);
