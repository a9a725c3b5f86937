/* The public model inspection of rlx/inspect.h: a summary, the nodes, the
 * IR as text, and ONNX TensorProto files. */
#include <string.h>

#include "base/status.h"
#include "import/onnx.h"
#include "runtime/model.h"

rlx_status rlx_model_get_summary(const rlx_model *m, rlx_model_summary *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!m || !out) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "model or out_summary is NULL");
    const rlx_graph *g = m->g;
    out->opset = g->opset;
    out->n_nodes = g->n_nodes;
    for (size_t i = 0; i < g->n_values; i++) {
        const rlx_value *v = &g->values[i];
        if (!v->konst) continue;
        if (v->flags & RLX_VALUE_INITIALIZER) {
            out->n_initializers++;
            out->initializer_bytes += v->konst->nbytes;
        } else {
            out->n_constants++;
            out->constant_bytes += v->konst->nbytes;
        }
    }
    return RLX_OK;
}

/* Node `index` of m's graph, checked (out: the out-parameter's name). */
static rlx_status node_at(const rlx_model *m, size_t index, const void *out, const char *what, const rlx_node **n) {
    if (!m || !out) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "model or %s is NULL", what);
    if (index >= m->g->n_nodes)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "node index %zu out of range (the model has %zu)", index,
                        m->g->n_nodes);
    *n = &m->g->nodes[index];
    return RLX_OK;
}

rlx_status rlx_model_node_info(const rlx_model *m, size_t index, rlx_node_info *out) {
    if (out) memset(out, 0, sizeof *out);
    const rlx_node *n = NULL;
    RLX_TRY(node_at(m, index, out, "out_info", &n));
    out->name = n->name ? n->name : "";
    out->op = n->op_type;
    out->domain = n->domain ? n->domain : "";
    return RLX_OK;
}

rlx_status rlx_model_node_origin(const rlx_model *m, size_t index, rlx_node_origin *out) {
    if (out) memset(out, 0, sizeof *out);
    const rlx_node *n = NULL;
    RLX_TRY(node_at(m, index, out, "out_origin", &n));
    int k = n->source;
    const rlx_node_source *src = k > 0 && (size_t)k <= m->g->n_sources ? &m->g->sources[k - 1] : NULL;
    out->op = src ? src->op : "";
    out->domain = src ? src->domain : "";
    out->name = src ? src->name : "";
    out->expansion = src ? (size_t)k : 0;
    return RLX_OK;
}

rlx_status rlx_model_dump(const rlx_model *m, FILE *f) {
    if (!m || !f) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "model or file is NULL");
    rlx_graph_dump(m->g, f);
    return RLX_OK;
}

rlx_status rlx_tensor_load_onnx(const char *path, rlx_tensor **out) {
    if (out) *out = NULL;
    if (!path || !out) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "path or out_tensor is NULL");
    return rlx_onnx_load_tensor_file(path, out);
}
