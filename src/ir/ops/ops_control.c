/* Control flow: If, Loop, Scan. Their bodies are subgraph attributes whose
 * outer-scope references are values flagged RLX_VALUE_OUTER. Graphs holding
 * them run eagerly on the CPU (the session says so in its report).
 * Versions are the ONNX since-versions of each operator; Scan-8 (with a
 * batch axis and sequence_lens) is not implemented. */
#include <string.h>

#include "ir/ops/ops.h"

static const rlx_graph *body_attr(const rlx_node *n, const char *name) {
    const rlx_node_attr *a = rlx_node_attr_find(n, name);
    return (a && a->type == RLX_ATTR_GRAPH) ? a->g : NULL;
}

static rlx_status infer_if(rlx_infer_ctx *c) {
    const rlx_graph *t = body_attr(c->n, "then_branch"), *e = body_attr(c->n, "else_branch");
    if (!t || !e) return rlx_ictx_fail(c, "then_branch and else_branch must be graphs");
    if ((int)t->n_outputs != c->n->n_out || (int)e->n_outputs != c->n->n_out)
        return rlx_ictx_fail(c, "branches have %zu and %zu outputs, the node %d", t->n_outputs, e->n_outputs,
                             c->n->n_out);
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
    return RLX_OK;
}

static rlx_status infer_loop(rlx_infer_ctx *c) {
    const rlx_graph *b = body_attr(c->n, "body");
    if (!b) return rlx_ictx_fail(c, "attribute 'body' must be a graph");
    int n_carried = c->n->n_in - 2;
    if (n_carried < 0 || (int)b->n_inputs != n_carried + 2 || (int)b->n_outputs < n_carried + 1 ||
        c->n->n_out != (int)b->n_outputs - 1)
        return rlx_ictx_fail(c, "body has %zu inputs and %zu outputs, which do not fit %d loop-carried values and %d "
                                "node outputs", b->n_inputs, b->n_outputs, n_carried, c->n->n_out);
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
    return RLX_OK;
}

static rlx_status infer_scan(rlx_infer_ctx *c) {
    const rlx_graph *b = body_attr(c->n, "body");
    if (!b) return rlx_ictx_fail(c, "attribute 'body' must be a graph");
    int64_t m = rlx_attr_int(c->n, "num_scan_inputs", -1);
    int n_state = c->n->n_in - (int)m;
    if (m < 1 || n_state < 0 || (int)b->n_inputs != c->n->n_in || c->n->n_out != (int)b->n_outputs)
        return rlx_ictx_fail(c, "num_scan_inputs %lld and the body's %zu inputs / %zu outputs do not fit the node",
                             (long long)m, b->n_inputs, b->n_outputs);
    size_t n_axes;
    const int64_t *axes = rlx_attr_ints(c->n, "scan_output_axes", &n_axes);
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
        if (axes && (size_t)k < n_axes && !rlx_norm_axis(axes[k], bo->rank + 1, &axis))
            return rlx_ictx_fail(c, "scan_output_axes[%d] = %lld is out of range", k, (long long)axes[k]);
        int64_t dims[RLX_MAX_RANK];
        for (int d = 0, s = 0; d < bo->rank + 1; d++) dims[d] = d == axis ? RLX_DIM_DYN : bo->dims[s++];
        rlx_ictx_set_out(c, i, bo->dtype, bo->rank + 1, dims, NULL);
    }
    return RLX_OK;
}

#define CF (RLX_OP_CONTROL_FLOW | RLX_OP_DATA_DEPENDENT)

const rlx_op_def rlx_ops_control[] = {
    { .name = "If", .domain = "", .versions = { 1, 11, 13, 16, 19, 21 }, .min_in = 1, .max_in = 1, .min_out = 1,
      .max_out = -1, .infer = infer_if, .flags = CF,
      .attrs = { { "then_branch", RLX_ATTR_GRAPH, true }, { "else_branch", RLX_ATTR_GRAPH, true } } },
    { .name = "Loop", .domain = "", .versions = { 1, 11, 13, 16, 19, 21 }, .min_in = 2, .max_in = -1, .optional_in = 3u,
      .min_out = 1, .max_out = -1, .infer = infer_loop, .flags = CF, .attrs = { { "body", RLX_ATTR_GRAPH, true } } },
    { .name = "Scan", .domain = "", .versions = { 9, 11, 16, 19, 21 }, .min_in = 1, .max_in = -1, .min_out = 1,
      .max_out = -1, .infer = infer_scan, .flags = CF,
      .attrs = { { "body", RLX_ATTR_GRAPH, true }, { "num_scan_inputs", RLX_ATTR_INT, true },
                 { "scan_input_axes", RLX_ATTR_INTS, false }, { "scan_input_directions", RLX_ATTR_INTS, false },
                 { "scan_output_axes", RLX_ATTR_INTS, false }, { "scan_output_directions", RLX_ATTR_INTS, false } } },
};
const size_t rlx_ops_control_count = RLX_ARRAY_LEN(rlx_ops_control);
