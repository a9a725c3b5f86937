/* Builders of ONNX models from the protobuf-c structs, for the tests that
 * write model files by hand (test_import.c, test_dynamic.c): value infos,
 * tensors (raw, float, external data), nodes, attributes, graphs, models,
 * packing. Header-only (static inline); allocation failure exits 2.
 */
#ifndef RLX_TESTS_ONNX_BUILD_H
#define RLX_TESTS_ONNX_BUILD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/onnx.h"

/* Every part is malloc'ed, so onnx__model_proto__free_unpacked frees a
 * whole built model. */

#define DIM_UNSET INT64_MIN /* a Dimension with neither dim_value nor dim_param */

static inline void *xcalloc(size_t n, size_t s) {
    void *p = calloc(n ? n : 1, s);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static inline char *S(const char *s) {
    char *d = xcalloc(strlen(s) + 1, 1);
    memcpy(d, s, strlen(s));
    return d;
}

#define PUSH(arr, count, item)                                                 \
    do {                                                                       \
        void *np_ = realloc((arr), ((count) + 1) * sizeof *(arr));             \
        if (!np_) exit(2);                                                     \
        (arr) = np_;                                                           \
        (arr)[(count)++] = (item);                                             \
    } while (0)

static inline Onnx__GraphProto *graph_new(const char *name) {
    Onnx__GraphProto *g = xcalloc(1, sizeof *g);
    onnx__graph_proto__init(g);
    g->name = S(name);
    return g;
}

static inline Onnx__ModelProto *model_new(int64_t opset, Onnx__GraphProto *g) {
    Onnx__ModelProto *m = xcalloc(1, sizeof *m);
    onnx__model_proto__init(m);
    m->has_ir_version = 1;
    m->ir_version = 8;
    if (opset > 0) {
        Onnx__OperatorSetIdProto *os = xcalloc(1, sizeof *os);
        onnx__operator_set_id_proto__init(os);
        os->domain = S("");
        os->has_version = 1;
        os->version = opset;
        PUSH(m->opset_import, m->n_opset_import, os);
    }
    m->producer_name = S("rlx tests (onnx_build.h)");
    m->graph = g;
    return m;
}

/* A tensor type: elem < 0 gives no type at all, rank < 0 no shape. dims[i]
 * is a dim_value (negative ones included) unless params[i] is set (then a
 * dim_param) or dims[i] == DIM_UNSET. */
static inline Onnx__ValueInfoProto *vi_new(const char *name, int elem, int rank, const int64_t *dims,
                                    const char *const *params) {
    Onnx__ValueInfoProto *vi = xcalloc(1, sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = S(name);
    if (elem < 0) return vi;
    Onnx__TypeProto *tp = xcalloc(1, sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = xcalloc(1, sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->type = tp;
    if (rank < 0) return vi;
    Onnx__TensorShapeProto *sh = xcalloc(1, sizeof *sh);
    onnx__tensor_shape_proto__init(sh);
    sh->dim = xcalloc((size_t)rank, sizeof *sh->dim);
    sh->n_dim = (size_t)rank;
    for (int i = 0; i < rank; i++) {
        Onnx__TensorShapeProto__Dimension *d = xcalloc(1, sizeof *d);
        onnx__tensor_shape_proto__dimension__init(d);
        if (params && params[i]) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = S(params[i]);
        } else if (dims[i] != DIM_UNSET) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = dims[i];
        }
        sh->dim[i] = d;
    }
    tt->shape = sh;
    return vi;
}

static inline Onnx__TensorProto *tensor_new(const char *name, int dt, int rank, const int64_t *dims) {
    Onnx__TensorProto *t = xcalloc(1, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = S(name);
    t->has_data_type = 1;
    t->data_type = dt;
    t->dims = xcalloc((size_t)(rank > 0 ? rank : 1), sizeof(int64_t));
    t->n_dims = (size_t)rank;
    for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
    return t;
}

static inline Onnx__TensorProto *tensor_raw(const char *name, int dt, int rank, const int64_t *dims, const void *data,
                                     size_t nbytes) {
    Onnx__TensorProto *t = tensor_new(name, dt, rank, dims);
    t->has_raw_data = 1;
    t->raw_data.len = nbytes;
    t->raw_data.data = xcalloc(nbytes, 1);
    if (nbytes) memcpy(t->raw_data.data, data, nbytes);
    return t;
}

static inline Onnx__TensorProto *tensor_floats(const char *name, int rank, const int64_t *dims, const float *v, size_t n) {
    Onnx__TensorProto *t = tensor_new(name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, rank, dims);
    t->float_data = xcalloc(n, sizeof(float));
    t->n_float_data = n;
    memcpy(t->float_data, v, n * sizeof(float));
    return t;
}

static inline void tensor_external(Onnx__TensorProto *t, const char *location, const char *offset, const char *length) {
    const char *keys[3] = { "location", "offset", "length" }, *vals[3] = { location, offset, length };
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    for (int i = 0; i < 3; i++) {
        if (!vals[i]) continue;
        Onnx__StringStringEntryProto *e = xcalloc(1, sizeof *e);
        onnx__string_string_entry_proto__init(e);
        e->key = S(keys[i]);
        e->value = S(vals[i]);
        PUSH(t->external_data, t->n_external_data, e);
    }
}

/* "a,,b" -> {"a", "", "b"} */
static inline char **split_names(const char *list, size_t *n) {
    char **out = NULL;
    *n = 0;
    if (!list) return NULL;
    const char *p = list;
    for (;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char *s = xcalloc(len + 1, 1);
        memcpy(s, p, len);
        PUSH(out, *n, s);
        if (!e) break;
        p = e + 1;
    }
    return out;
}

static inline Onnx__NodeProto *node_new(const char *op, const char *name, const char *ins, const char *outs) {
    Onnx__NodeProto *n = xcalloc(1, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = S(op);
    if (name) n->name = S(name);
    n->input = split_names(ins, &n->n_input);
    n->output = split_names(outs, &n->n_output);
    return n;
}

static inline Onnx__AttributeProto *attr_new(const char *name, Onnx__AttributeProto__AttributeType type) {
    Onnx__AttributeProto *a = xcalloc(1, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = S(name);
    a->has_type = 1;
    a->type = type;
    return a;
}

static inline Onnx__AttributeProto *attr_i(const char *name, int64_t v) {
    Onnx__AttributeProto *a = attr_new(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
    return a;
}

static inline Onnx__AttributeProto *attr_f(const char *name, float v) {
    Onnx__AttributeProto *a = attr_new(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
    return a;
}

static inline Onnx__AttributeProto *attr_is(const char *name, size_t n, const int64_t *v) {
    Onnx__AttributeProto *a = attr_new(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->ints = xcalloc(n, sizeof(int64_t));
    a->n_ints = n;
    memcpy(a->ints, v, n * sizeof(int64_t));
    return a;
}

static inline Onnx__AttributeProto *attr_fs(const char *name, size_t n, const float *v) {
    Onnx__AttributeProto *a = attr_new(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->floats = xcalloc(n, sizeof(float));
    a->n_floats = n;
    memcpy(a->floats, v, n * sizeof(float));
    return a;
}

static inline Onnx__AttributeProto *attr_s(const char *name, const char *s) {
    Onnx__AttributeProto *a = attr_new(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.len = strlen(s);
    a->s.data = (uint8_t *)S(s);
    return a;
}

static inline Onnx__AttributeProto *attr_t(const char *name, Onnx__TensorProto *t) {
    Onnx__AttributeProto *a = attr_new(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = t;
    return a;
}

static inline Onnx__AttributeProto *attr_g(const char *name, Onnx__GraphProto *g) {
    Onnx__AttributeProto *a = attr_new(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    a->g = g;
    return a;
}

static inline void node_attr(Onnx__NodeProto *n, Onnx__AttributeProto *a) { PUSH(n->attribute, n->n_attribute, a); }
static inline void graph_node(Onnx__GraphProto *g, Onnx__NodeProto *n) { PUSH(g->node, g->n_node, n); }
static inline void graph_init(Onnx__GraphProto *g, Onnx__TensorProto *t) { PUSH(g->initializer, g->n_initializer, t); }
static inline void graph_input(Onnx__GraphProto *g, Onnx__ValueInfoProto *v) { PUSH(g->input, g->n_input, v); }
static inline void graph_output(Onnx__GraphProto *g, Onnx__ValueInfoProto *v) { PUSH(g->output, g->n_output, v); }
static inline void graph_value_info(Onnx__GraphProto *g, Onnx__ValueInfoProto *v) {
    PUSH(g->value_info, g->n_value_info, v);
}

static inline uint8_t *model_pack(const Onnx__ModelProto *m, size_t *size) {
    *size = onnx__model_proto__get_packed_size(m);
    uint8_t *buf = xcalloc(*size, 1);
    onnx__model_proto__pack(m, buf);
    return buf;
}

static inline void model_free(Onnx__ModelProto *m) { onnx__model_proto__free_unpacked(m, NULL); }

/* model_pack, then frees the model. */
static inline uint8_t *model_pack_free(Onnx__ModelProto *m, size_t *size) {
    uint8_t *buf = model_pack(m, size);
    model_free(m);
    return buf;
}

#endif
