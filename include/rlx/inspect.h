/* rlx — looking inside: what a model is made of, its IR as text, the
 * operator catalogue (which ops rlx knows, their versions and which
 * backends run them), ONNX TensorProto files, and the clock rlx times
 * itself with. Included by rlx/rlx.h; the conventions of rlx.h hold here.
 *
 * Licensed under the Apache License, Version 2.0. */
#ifndef RLX_INSPECT_H
#define RLX_INSPECT_H

#include <stdio.h>

#include "rlx/rlx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- the model */

/* A model's size at a glance (rlx_model_get_summary). Sizes in bytes. */
typedef struct rlx_model_summary {
    int64_t opset;              /* opset of the default ONNX domain the model imports */
    size_t n_nodes;             /* nodes of the main graph (rlx_model_node_info) */
    size_t n_initializers;      /* ONNX initializers (weights) */
    uint64_t initializer_bytes;
    size_t n_constants;         /* other constant values (outputs of Constant nodes) */
    uint64_t constant_bytes;
} rlx_model_summary;

/* Fills *out_summary (cleared on entry).
 * errors: RLX_ERR_INVALID_ARGUMENT (NULL model or out_summary). */
RLX_API rlx_status rlx_model_get_summary(const rlx_model *model, rlx_model_summary *out_summary);

/* One node of a model's main graph, in topological order. Strings
 * borrowed from the model. */
typedef struct rlx_node_info {
    const char *name;   /* "" if the model gives none */
    const char *op;     /* op type as in the file ("Conv") */
    const char *domain; /* "" for the default ONNX domain */
} rlx_node_info;

/* Node `index` (< rlx_model_summary.n_nodes); *out_info cleared on entry.
 * errors: RLX_ERR_INVALID_ARGUMENT (index out of range). */
RLX_API rlx_status rlx_model_node_info(const rlx_model *model, size_t index, rlx_node_info *out_info);

/* Where node `index` (< rlx_model_summary.n_nodes) came from. The import
 * expands some nodes of the file into several (onnxruntime's com.microsoft
 * contrib ops, see `rlx ops`): for the nodes it made, op, domain and name
 * are those of the file's node ("QGemm", "com.microsoft", its name) and
 * `expansion` a number >= 1 that the nodes made from one file node share;
 * for a node as the file wrote it op, domain and name are "" and
 * expansion is 0. Strings borrowed from the model. */
typedef struct rlx_node_origin {
    const char *op;
    const char *domain;
    const char *name;
    size_t expansion;
} rlx_node_origin;

/* Fills *out_origin (cleared on entry).
 * errors: RLX_ERR_INVALID_ARGUMENT (NULL model or out_origin, index out of
 *         range). */
RLX_API rlx_status rlx_model_node_origin(const rlx_model *model, size_t index, rlx_node_origin *out_origin);

/* Writes the model's graph as rlx holds it, as text, to f: values with
 * dtypes and shapes (symbolic dims by name), nodes with their op version
 * and attributes, subgraphs indented. For people: the format may change.
 * errors: RLX_ERR_INVALID_ARGUMENT (NULL model or f). */
RLX_API rlx_status rlx_model_dump(const rlx_model *model, FILE *f);

/* Reads a file holding one serialized ONNX TensorProto (the format of the
 * ONNX test data sets: test_data_set_0/input_0.pb); external data is looked
 * up in the file's folder. Element types as rlx_dtype.
 * errors: RLX_ERR_IO (missing file), RLX_ERR_INVALID_MODEL (protobuf parse
 *         failed, data shorter than the shape; a file that holds an ONNX
 *         model instead is said to be one), RLX_ERR_UNSUPPORTED (an
 *         element type rlx does not have; rlx built without the ONNX
 *         importer); the message starts with the path. */
RLX_API rlx_status rlx_tensor_load_onnx(const char *path, rlx_tensor **out_tensor);

/* ------------------------------------------------------ operator catalogue */

/* Opsets of the default ONNX domain that models may import. */
#define RLX_ONNX_OPSET_MIN 1
#define RLX_ONNX_OPSET_MAX 27

/* Most since-versions one op has. */
#define RLX_OP_MAX_VERSIONS 12

/* One operator rlx knows. Strings borrowed, static. */
typedef struct rlx_op_info {
    const char *domain;   /* "" for the default ONNX domain; "rlx" for the internal ops that rlx's
                             fusion passes create (never read from a file) */
    const char *name;     /* "Conv" */
    int n_versions;       /* ONNX since-versions rlx implements, ascending: a node follows the */
    int versions[RLX_OP_MAX_VERSIONS]; /* largest one <= the model's opset */
    bool internal;        /* domain "rlx" */
    bool view;            /* its output is a view of its input: no work on any device */
    bool control_flow;    /* If, Loop, Scan: a plan that keeps one runs eagerly on the CPU */
    bool data_dependent;  /* its output shape depends on data: likewise */
    bool takes_strings;   /* accepts string tensors */
    bool cpu;             /* the CPU backend has a kernel */
    bool webgpu;          /* the WebGPU backend has a lowering (false when built without WebGPU) */
    const char *webgpu_note; /* when that lowering runs the node, beyond rlx_op_catalog_webgpu_conditions
                                (dtypes, attributes, constant operands); NULL without a lowering */
} rlx_op_info;

/* Number of ops in the catalogue (default domain and internal ops). */
RLX_API size_t rlx_op_catalog_count(void);

/* Op `index` (< rlx_op_catalog_count(), in the op table's order); *out_info
 * cleared on entry. errors: RLX_ERR_INVALID_ARGUMENT (index out of range). */
RLX_API rlx_status rlx_op_catalog_get(size_t index, rlx_op_info *out_info);

/* One attribute of an op (rlx_op_catalog_attr). Strings borrowed, static. */
typedef struct rlx_op_attr_info {
    const char *name;  /* "kernel_shape" */
    const char *type;  /* "INT", "FLOAT", "STRING", "TENSOR", "GRAPH", "FLOATS", "INTS" or "STRINGS" */
    int since, until;  /* the op's since-versions that have it: since <= version < until (0: no
                          bound), as ONNX's schema of each version has it */
    bool required;
} rlx_op_attr_info;

/* Attribute k of op `index`, k from 0 (every attribute that some version of
 * the op has). A node whose since-version has no attribute of a name it
 * carries is refused when it is added (RLX_ERR_INVALID_MODEL naming the
 * node, op, attribute and opset), except internal ones ("_rlx..."). errors:
 * RLX_ERR_INVALID_ARGUMENT (index or k out of range: the end of the list;
 * *out_info cleared). */
RLX_API rlx_status rlx_op_catalog_attr(size_t index, size_t k, rlx_op_attr_info *out_info);

/* The conditions every WebGPU lowering has (static shapes, dtypes the GPU
 * holds, device limits, ...), one sentence each; *out_count of them.
 * Borrowed, static. */
RLX_API const char *const *rlx_op_catalog_webgpu_conditions(size_t *out_count);

/* Checks that the WebGPU decline notes and the lowering tables agree: every
 * op with a lowering has exactly one note, every note names ops that have
 * one. errors: RLX_ERR_INTERNAL, the message listing each disagreement
 * (separated by "; "). */
RLX_API rlx_status rlx_op_catalog_check(void);

/* onnxruntime contrib ops (domain com.microsoft, and onnxruntime's
 * SimplifiedLayerNormalization of the default domain) that the ONNX importer
 * expands into default-domain ops when a model loads: no node of these ops
 * ever reaches a backend, so they run wherever the ops they become run.
 * Strings borrowed, static. */
typedef struct rlx_contrib_op_info {
    const char *domain;    /* "com.microsoft", or "" */
    const char *name;      /* "SkipLayerNormalization" */
    int since_version;     /* the contrib op's version rlx implements */
    const char *expansion; /* what it becomes, and its limits (one or two sentences) */
} rlx_contrib_op_info;

/* Number of contrib ops the importer expands (0 when built without it). */
RLX_API size_t rlx_contrib_op_catalog_count(void);

/* Contrib op `index` (< rlx_contrib_op_catalog_count()); *out_info cleared
 * on entry. errors: RLX_ERR_INVALID_ARGUMENT (index out of range). */
RLX_API rlx_status rlx_contrib_op_catalog_get(size_t index, rlx_contrib_op_info *out_info);

/* ------------------------------------------------------------------ text */

/* Copies `text` (NULL: "") into buf (cap bytes with the NUL; cut when it
 * does not fit) with control characters and invalid UTF-8 escaped:
 * \n \r \t, \xNN for other C0 controls, DEL and bytes that are not valid
 * UTF-8, \u00NN for the C1 controls U+0080..U+009F; valid UTF-8 and
 * printable ASCII are unchanged. For printing strings that come from model
 * files (node, value and op names, domains, doc strings), so that a name
 * cannot drive the terminal of whoever runs rlx on the file. Messages of
 * rlx_last_error() are already escaped this way. Returns buf. */
RLX_API const char *rlx_escape_text(const char *text, char *buf, size_t cap);

/* ----------------------------------------------------------------- clock */

/* A monotonic clock in seconds (from an arbitrary origin): the one rlx
 * times its compile steps with. For differences only. */
RLX_API double rlx_now_seconds(void);

#ifdef __cplusplus
}
#endif
#endif /* RLX_INSPECT_H */
