/* Public model API: import entry points live in src/import; this file
 * holds the model object, its description and the graph builder. */
#include "runtime/model.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/status.h"
#include "base/tensor.h"
#include "import/onnx_contrib.h"
#include "ir/op.h"
#include "passes/passes.h"

rlx_status rlx_model_from_graph(rlx_graph *g, rlx_model **out) {
    *out = NULL;
    rlx_model *m = calloc(1, sizeof *m);
    if (!m) {
        rlx_graph_destroy(g);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    }
    m->g = g;
    atomic_init(&m->refs, 1);
    rlx_status st = rlx_model_finish(m);
    if (st) {
        rlx_model_destroy(m);
        return st;
    }
    *out = m;
    return RLX_OK;
}

void rlx_model_retain(rlx_model *m) { atomic_fetch_add(&m->refs, 1); }

void rlx_model_destroy(rlx_model *m) {
    if (!m || atomic_fetch_sub(&m->refs, 1) > 1) return;
    rlx_graph_destroy(m->g);
    free(m);
}

rlx_status rlx_model_finish(rlx_model *m) {
    if (!m) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "model is NULL");
    if (m->finished) return RLX_OK;
    if (m->g->n_outputs == 0) return rlx_fail(RLX_ERR_INVALID_MODEL, "the graph has no outputs");
    RLX_TRY(rlx_pass_verify(m->g));
    RLX_TRY(rlx_pass_infer(m->g));
    int legacy = 0;
    RLX_TRY(rlx_pass_legacy(m->g, &legacy));
    if (legacy) {
        RLX_TRY(rlx_pass_verify(m->g));
        RLX_TRY(rlx_pass_infer(m->g));
    }
    m->finished = true;
    rlx_clear_error();
    return RLX_OK;
}

size_t rlx_model_num_inputs(const rlx_model *m) { return m ? m->g->n_inputs : 0; }
size_t rlx_model_num_outputs(const rlx_model *m) { return m ? m->g->n_outputs : 0; }

void rlx_value_info_fill(const rlx_graph *g, int id, rlx_value_info *info) {
    const rlx_value *v = &g->values[id];
    memset(info, 0, sizeof *info);
    info->name = v->name;
    info->dtype = v->dtype;
    info->rank = v->rank;
    for (int i = 0; i < v->rank && i < RLX_MAX_RANK; i++) {
        info->dims[i] = v->dims[i] >= 0 ? v->dims[i] : -1;
        info->dim_names[i] = (v->dims[i] < 0 && v->syms[i] >= 0) ? g->syms[v->syms[i]] : NULL;
    }
}

rlx_status rlx_model_input_info(const rlx_model *m, size_t i, rlx_value_info *info) {
    if (info) memset(info, 0, sizeof *info);
    if (!m || !info) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "model or out_info is NULL");
    if (i >= m->g->n_inputs)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "input index %zu out of range", i);
    rlx_value_info_fill(m->g, m->g->inputs[i], info);
    return RLX_OK;
}

/* info's rank, dims and dim names from a shape as the file declares it
 * (d NULL: none declared, rank -1); a dynamic dim is -1, named by its
 * symbol where it has one. */
static void decl_shape_fill(const rlx_graph *g, const rlx_decl_shape *d, rlx_value_info *info) {
    info->rank = d ? d->rank : -1;
    for (int k = 0; k < RLX_MAX_RANK; k++) {
        bool in = d && k < d->rank;
        info->dims[k] = in && d->dims[k] >= 0 ? d->dims[k] : in ? -1 : 0;
        info->dim_names[k] = in && d->dims[k] < 0 && d->syms[k] >= 0 && (size_t)d->syms[k] < g->n_syms
                                 ? g->syms[d->syms[k]]
                                 : NULL;
    }
}

size_t rlx_model_num_overridable_initializers(const rlx_model *m) { return m ? m->g->n_overridable : 0; }

rlx_status rlx_model_overridable_initializer_info(const rlx_model *m, size_t i, rlx_value_info *info) {
    if (info) memset(info, 0, sizeof *info);
    if (!m || !info) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "model or out_info is NULL");
    if (i >= m->g->n_overridable)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "overridable initializer index %zu out of range", i);
    const rlx_graph *g = m->g;
    rlx_value_info_fill(g, g->overridable[i], info);
    decl_shape_fill(g, &g->overridable_decl[i], info); /* rank -1: any shape may be fed */
    return RLX_OK;
}

rlx_status rlx_model_output_info(const rlx_model *m, size_t i, rlx_value_info *info) {
    if (info) memset(info, 0, sizeof *info);
    if (!m || !info) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "model or out_info is NULL");
    if (i >= m->g->n_outputs)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "output index %zu out of range", i);
    rlx_value_info_fill(m->g, m->g->outputs[i], info);
    return RLX_OK;
}

rlx_status rlx_model_output_declared_info(const rlx_model *m, size_t i, rlx_value_info *info) {
    RLX_TRY(rlx_model_output_info(m, i, info));
    const rlx_graph *g = m->g;
    decl_shape_fill(g, i < g->n_out_decl ? &g->out_decl[i] : NULL, info);
    return RLX_OK;
}

/* ------------------------------------------------------------ builder */

rlx_status rlx_model_create(int64_t opset, rlx_model **out) {
    if (!out) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "out_model is NULL");
    *out = NULL;
    if (opset < RLX_OPSET_MIN || opset > RLX_OPSET_MAX)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "opset %lld is outside the supported range %d..%d", (long long)opset,
                        RLX_OPSET_MIN, RLX_OPSET_MAX);
    rlx_model *m = calloc(1, sizeof *m);
    if (!m) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    atomic_init(&m->refs, 1);
    rlx_status st = rlx_graph_create(opset, &m->g);
    if (st) {
        free(m);
        return st;
    }
    *out = m;
    return RLX_OK;
}

static rlx_status check_open(const rlx_model *m) {
    if (!m) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "model is NULL");
    if (m->finished) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "model is finished; it can no longer change");
    return RLX_OK;
}

rlx_status rlx_model_add_input(rlx_model *m, const char *name, rlx_dtype dtype, int rank, const int64_t *dims,
                               const char *const *dim_names) {
    RLX_TRY(check_open(m));
    if (!name || !*name) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "input name is empty");
    if (rank < 0 || rank > RLX_MAX_RANK) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "input '%s': rank %d", name, rank);
    if (!rlx_dtype_size(dtype)) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "input '%s': dtype %d", name, (int)dtype);
    if (rank > 0 && !dims) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "input '%s': dims is NULL", name);
    for (int i = 0; i < rank; i++)
        if (dims[i] < -1)
            return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "input '%s': dim %d is %lld (a size >= 0, or -1 for a symbolic dim)",
                            name, i, (long long)dims[i]);
    int id;
    RLX_TRY(rlx_graph_add_value(m->g, name, &id));
    RLX_TRY(RLX_GROW(m->g->inputs, m->g->cap_inputs, m->g->n_inputs + 1));
    int32_t syms[RLX_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        syms[i] = -1;
        if (dims[i] < 0 && dim_names && dim_names[i]) syms[i] = rlx_graph_sym(m->g, dim_names[i]);
    }
    rlx_value *v = &m->g->values[id];
    v->dtype = dtype;
    v->flags |= RLX_VALUE_INPUT;
    rlx_value_set_shape(v, rank, dims, syms);
    m->g->inputs[m->g->n_inputs++] = id;
    return RLX_OK;
}

rlx_status rlx_model_add_initializer(rlx_model *m, const char *name, const rlx_tensor *value) {
    RLX_TRY(check_open(m));
    /* as graph inputs: an unnamed constant could never be read */
    if (!name || !*name) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "initializer name is empty");
    if (!value) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "initializer '%s' is NULL", name);
    char what[300];
    snprintf(what, sizeof what, "initializer '%.256s'", name);
    RLX_TRY(rlx_tensor_check(value, what, NULL));
    rlx_tensor *t;
    RLX_TRY(rlx_tensor_clone(value, &t));
    int id;
    RLX_TRY(rlx_graph_add_konst(m->g, name, t, &id));
    m->g->values[id].flags |= RLX_VALUE_INITIALIZER;
    return RLX_OK;
}

static rlx_status convert_attr(const rlx_attr *a, rlx_node_attr *d) {
    memset(d, 0, sizeof *d);
    rlx_node_attr tmp = { 0 };
    tmp.name = (char *)a->name;
    tmp.type = a->type;
    tmp.f = a->f;
    tmp.i = a->i;
    tmp.n = a->n;
    tmp.s = (char *)a->s;
    tmp.t = (rlx_tensor *)a->t;
    tmp.floats = (float *)a->floats;
    tmp.ints = (int64_t *)a->ints;
    tmp.strings = (char **)a->strings;
    if (!a->name) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "attribute without a name");
    switch (a->type) {
    case RLX_ATTR_FLOAT: case RLX_ATTR_INT: case RLX_ATTR_STRING: case RLX_ATTR_TENSOR:
    case RLX_ATTR_FLOATS: case RLX_ATTR_INTS: case RLX_ATTR_STRINGS: break;
    default: return rlx_fail(RLX_ERR_UNSUPPORTED, "attribute '%s': type %d is not supported by the builder", a->name, (int)a->type);
    }
    if ((a->type == RLX_ATTR_STRING && !a->s) || (a->type == RLX_ATTR_TENSOR && !a->t))
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "attribute '%s' has no value", a->name);
    /* a list of n values needs its array (a NULL one was copied as none,
     * with n kept: the node then read n values from nowhere) */
    if (a->n && ((a->type == RLX_ATTR_FLOATS && !a->floats) || (a->type == RLX_ATTR_INTS && !a->ints) ||
                 (a->type == RLX_ATTR_STRINGS && !a->strings)))
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "attribute '%s': n is %zu but its array is NULL", a->name, a->n);
    if (a->type == RLX_ATTR_STRINGS)
        for (size_t i = 0; i < a->n; i++)
            if (!a->strings[i]) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "attribute '%s': string %zu is NULL", a->name, i);
    if (a->type == RLX_ATTR_TENSOR) {
        char what[300];
        snprintf(what, sizeof what, "attribute '%.256s'", a->name);
        RLX_TRY(rlx_tensor_check(a->t, what, NULL));
    }
    return rlx_node_attr_copy(d, &tmp);
}

/* rlx_model_add_node with in[] and out[] to fill (n_inputs, n_outputs). */
static rlx_status add_node_io(rlx_model *m, const char *op_type, const char *node_name, size_t n_inputs,
                              const char *const *inputs, size_t n_outputs, const char *const *outputs,
                              size_t n_attrs, const rlx_attr *attrs, int *in, int *out) {
    rlx_graph *g = m->g;
    for (size_t i = 0; i < n_inputs; i++) {
        if (!inputs[i] || !*inputs[i]) {
            in[i] = -1;
            continue;
        }
        in[i] = rlx_graph_find(g, inputs[i]);
        if (in[i] < 0)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "node '%s' (%s): input '%s' is not defined", node_name ? node_name : "",
                            op_type, inputs[i]);
    }
    for (size_t i = 0; i < n_outputs; i++) {
        if (!outputs[i] || !*outputs[i]) {
            out[i] = -1;
            continue;
        }
        if (rlx_graph_find(g, outputs[i]) >= 0)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "node '%s' (%s): output '%s' is already defined",
                            node_name ? node_name : "", op_type, outputs[i]);
        RLX_TRY(rlx_graph_add_value(g, outputs[i], &out[i]));
    }
    rlx_node_attr *na = calloc(n_attrs + 1, sizeof *na);
    if (!na) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < n_attrs; i++) {
        rlx_status st = convert_attr(&attrs[i], &na[i]);
        if (st) {
            for (size_t j = 0; j < i; j++) rlx_node_attr_free(&na[j]);
            free(na);
            return st;
        }
    }
    rlx_status st = RLX_OK;
    const char *dot = strrchr(op_type, '.');
    if (dot && (size_t)(dot - op_type) >= 64)
        st = rlx_fail(RLX_ERR_UNSUPPORTED, "node '%s': op %s: domain too long", node_name ? node_name : "", op_type);
    const rlx_contrib_def *cd = NULL;
    if (dot && (size_t)(dot - op_type) < 64) {
        char domain[64];
        memcpy(domain, op_type, (size_t)(dot - op_type));
        domain[dot - op_type] = 0;
        cd = rlx_onnx_contrib_find(domain, dot + 1);
        if (!cd)
            st = rlx_fail(RLX_ERR_UNSUPPORTED, "node '%s': op %s is not a contrib op that rlx expands",
                          node_name ? node_name : "", op_type);
    }
    if (cd) {
        char label[300];
        snprintf(label, sizeof label, "node '%s' (%s)", node_name ? node_name : "", op_type);
        st = rlx_onnx_contrib_expand(g, cd, label, node_name ? node_name : dot + 1, in, (int)n_inputs, out,
                                     (int)n_outputs, na, (int)n_attrs, NULL);
        for (size_t i = 0; i < n_attrs; i++) rlx_node_attr_free(&na[i]);
    } else if (!dot) {
        int id = -1;
        st = rlx_graph_add_node(g, op_type, "", node_name, in, (int)n_inputs, out, (int)n_outputs, na, (int)n_attrs,
                                &id);
        if (!st) g->nodes[id].one_shape = rlx_legacy_one_shape(&g->nodes[id]);
    }
    free(na);
    return st;
}

rlx_status rlx_model_add_node(rlx_model *m, const char *op_type, const char *node_name, size_t n_inputs,
                              const char *const *inputs, size_t n_outputs, const char *const *outputs,
                              size_t n_attrs, const rlx_attr *attrs) {
    RLX_TRY(check_open(m));
    if (!op_type) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "op_type is NULL");
    /* any arity a node's int counts hold (the ONNX importer's bound) */
    if (n_inputs > INT_MAX / 2 || n_outputs > INT_MAX / 2 || n_attrs > INT_MAX / 2)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "node '%s' (%s): too many inputs, outputs or attributes",
                        node_name ? node_name : "", op_type);
    if ((n_inputs && !inputs) || (n_outputs && !outputs) || (n_attrs && !attrs))
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "node '%s' (%s): an input, output or attribute array is NULL",
                        node_name ? node_name : "", op_type);
    int *io = malloc((n_inputs + n_outputs + 2) * sizeof *io);
    if (!io) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    /* a node that fails leaves the model as it was: its outputs' names free
     * for the next try, and none of an expansion's nodes or constants */
    size_t n_values = m->g->n_values, n_nodes = m->g->n_nodes, n_sources = m->g->n_sources;
    rlx_status st = add_node_io(m, op_type, node_name, n_inputs, inputs, n_outputs, outputs, n_attrs, attrs, io,
                                io + n_inputs + 1);
    if (st) rlx_graph_truncate(m->g, n_values, n_nodes, n_sources);
    free(io);
    return st;
}

rlx_status rlx_model_add_output(rlx_model *m, const char *name) {
    RLX_TRY(check_open(m));
    /* as rlx_model_add_input and _add_initializer (NULL was an invalid
     * model: "output '' is not defined") */
    if (!name || !*name) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "output name is empty");
    int id = rlx_graph_find(m->g, name);
    if (id < 0) return rlx_fail(RLX_ERR_INVALID_MODEL, "output '%s' is not defined", name ? name : "");
    RLX_TRY(RLX_GROW(m->g->outputs, m->g->cap_outputs, m->g->n_outputs + 1));
    m->g->outputs[m->g->n_outputs++] = id;
    m->g->values[id].flags |= RLX_VALUE_OUTPUT;
    return RLX_OK;
}
