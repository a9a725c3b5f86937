/* The IR: a graph of ONNX-semantics nodes over typed values.
 *
 * - Values are referred to by index (int) into graph->values; -1 means "no
 *   value" (an omitted optional input or output).
 * - Nodes are kept in topological order in graph->nodes.
 * - A value's shape has rank dims; each dim is static (dims[i] >= 0) or not
 *   (dims[i] == RLX_DIM_DYN) in which case syms[i] names a symbol of the
 *   graph (syms[i] >= 0, e.g. "batch") or nothing (-1: unknown).
 *   rank == -1 means the rank itself is unknown.
 * - Constant values (initializers, Constant nodes, folded results) carry
 *   their data in value->konst.
 */
#ifndef RLX_IR_GRAPH_H
#define RLX_IR_GRAPH_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/attr_id.h"
#include "ir/op_id.h"
#include "rlx/rlx.h"

#define RLX_DIM_DYN (-1)

struct rlx_op_def;
struct rlx_graph;

enum {
    RLX_VALUE_INPUT = 1u << 0,       /* graph input (fed at run time) */
    RLX_VALUE_OUTPUT = 1u << 1,      /* graph output */
    RLX_VALUE_INITIALIZER = 1u << 2, /* came from an initializer (weights) */
    RLX_VALUE_OUTER = 1u << 3,       /* subgraph: refers to an outer-scope value by name */
    RLX_VALUE_KONST_BORROWED = 1u << 4, /* konst is owned by another graph */
    RLX_VALUE_FED = 1u << 5,            /* a constant of what the caller fed (a control input bound into a plan) */
    RLX_VALUE_4BIT = 1u << 6            /* a constant loaded from ONNX INT4 (as i8) or UINT4 (as u8), a byte a value */
};

typedef struct rlx_value {
    char *name;
    rlx_dtype dtype; /* RLX_DTYPE_UNDEFINED until inferred */
    int rank;        /* -1: unknown */
    int64_t dims[RLX_MAX_RANK];
    int32_t syms[RLX_MAX_RANK];
    rlx_tensor *konst; /* constant data or NULL */
    int producer;      /* node index, or -1 (input, initializer) */
    uint32_t flags;
} rlx_value;

typedef struct rlx_node_attr {
    char *name;
    rlx_attr_type type;
    float f;
    int64_t i;
    char *s;           /* STRING: NUL-terminated copy */
    rlx_tensor *t;     /* TENSOR */
    struct rlx_graph *g; /* GRAPH (subgraph body), owned */
    size_t n;          /* FLOATS, INTS, STRINGS */
    float *floats;
    int64_t *ints;
    char **strings;
} rlx_node_attr;

typedef struct rlx_node {
    char *name;
    char *op_type;
    char *domain;                 /* "" for the default ONNX domain */
    rlx_op_id op;                 /* the op, resolved once by rlx_graph_add_node */
    const struct rlx_op_def *def; /* its definition (rlx_op_get(op)) */
    int version;                  /* the op's ONNX since-version in effect */
    int *in;
    int n_in;
    int *out;
    int n_out;
    rlx_node_attr *attrs;
    int n_attrs;
    /* The parameter block: one slot per attribute of the op's schema, in
     * schema order (def->attrs[k] is slot k): the given attribute, else
     * the schema default, else type RLX_ATTR_UNDEFINED. Slots borrow the
     * strings and lists of attrs; rlx_node_resolve_params rebuilds them. */
    rlx_node_attr *params;
    /* Bit k: slot k was given on the node (in attrs), not defaulted
     * (rlx_param_given); set with params. */
    uint32_t params_given;
    /* The fused activation epilogue of a Conv, ConvTranspose, Gemm or
     * MatMul (ir/ops/act.h): the internal attributes _rlx_act,
     * _rlx_act_alpha and _rlx_act_beta, resolved with params (an
     * rlx_ew_fn code, 0 = RLX_EW_COPY: none; its two parameters), so
     * that kernels read no attribute names when they run (rlx_node_act). */
    int act_fn;
    float act_alpha, act_beta;
    bool dead; /* removed by a pass; compacted away by rlx_graph_compact */
    /* 1 + the index in the graph's `sources` of the node of the model file
     * that the import expanded into this one (a com.microsoft contrib op);
     * 0: a node as the file wrote it, or made by a pass. rlx_graph_clone
     * keeps neither (reports of plans count the plan's own nodes). */
    int source;
    /* A binary op of a model (a file's node or a builder call) before
     * opset 7 without broadcast=1 (rlx_legacy_one_shape): ONNX takes its
     * inputs of one shape, and shape inference refuses others. Nodes that
     * passes and import expansions make broadcast as numpy does at every
     * version. rlx_graph_clone keeps it. */
    bool one_shape;
} rlx_node;

/* A node of the model file that the import expanded into others: what the
 * file wrote (owned strings). */
typedef struct rlx_node_source {
    char *domain, *op, *name;
} rlx_node_source;

/* A shape as a file declares it (rank -1: none declared; dims[i] ==
 * RLX_DIM_DYN with syms[i] a symbol or -1). */
typedef struct rlx_decl_shape {
    int rank;
    int64_t dims[RLX_MAX_RANK];
    int32_t syms[RLX_MAX_RANK];
} rlx_decl_shape;

typedef struct rlx_graph {
    rlx_value *values;
    size_t n_values, cap_values;
    rlx_node *nodes;
    size_t n_nodes, cap_nodes;
    int *inputs; /* graph inputs fed at run time (no initializers) */
    size_t n_inputs, cap_inputs;
    /* Overridable initializers: initializers the file also lists as graph
     * inputs (ONNX IR >= 4, top graph only), in the file's input order.
     * They are constants here; a session that is fed one runs a copy of
     * the graph in which it is an input (runtime/session.c). Not copied by
     * rlx_graph_clone: a pass may renumber the copy's values. */
    int *overridable;
    size_t n_overridable, cap_overridable;
    /* the shape each declares as a graph input (what a fed value may have;
     * the initializer's own where the declaration contradicts it) */
    rlx_decl_shape *overridable_decl;
    size_t cap_overridable_decl;
    int *outputs;
    size_t n_outputs, cap_outputs;
    /* What the file declares for outputs[0 .. n_out_decl) (the ONNX
     * importer; NULL for built graphs), apart from the values' shapes,
     * which shape inference refines and may rename (an output declared
     * [out_len, 4] that inference finds is the input's [batch, 4]): what
     * onnxruntime shows as the output's shape (rlx_model_output_declared_info).
     * Clones do not carry it. */
    rlx_decl_shape *out_decl;
    size_t n_out_decl, cap_out_decl;
    char **syms; /* symbolic dim names */
    size_t n_syms, cap_syms;
    /* A dim name is a hint (as for onnxruntime): inputs may bind one name
     * to different sizes, and shape inference on the fed shapes decides
     * whether the ops accept them. Set when the import relied on two dims
     * of one name being equal (the Gradient lowering's broadcast axes):
     * each name must then take one size over all inputs. */
    bool syms_equal_assumed;
    /* Set on a plan's graph (the caller's input shapes bound) and on one
     * evaluated eagerly (their values bound): a node that fails there on
     * what came from the graph inputs fails with RLX_ERR_INVALID_ARGUMENT
     * (rlx_node_fault). */
    bool shapes_bound;
    int64_t opset; /* default-domain opset the graph imports */
    struct rlx_graph *parent; /* enclosing graph of a subgraph, or NULL */
    /* name -> value index hash (open addressing, -1 empty) */
    int *hash;
    size_t hash_cap;
    unsigned name_counter; /* for generated names */
    rlx_node_source *sources; /* file nodes the import expanded (rlx_node.source) */
    size_t n_sources, cap_sources;
} rlx_graph;

/* ------------------------------------------------------------ lifetime */

rlx_status rlx_graph_create(int64_t opset, rlx_graph **out);
void rlx_graph_destroy(rlx_graph *g);

/* Deep copy of the structure. Constant tensors are shared, not copied: the
 * copy borrows them (RLX_VALUE_KONST_BORROWED) and must not outlive `src`.
 * Subgraph attributes are deep-copied likewise. */
rlx_status rlx_graph_clone(const rlx_graph *src, rlx_graph **out);

/* Records a node of the model file (domain "" for the default one, op,
 * name) that the import expands into the nodes [first, g->n_nodes): their
 * `source` points to it.
 * errors: RLX_ERR_OUT_OF_MEMORY. */
rlx_status rlx_graph_mark_source(rlx_graph *g, const char *domain, const char *op, const char *name, size_t first);

/* ------------------------------------------------------------ values */

/* Adds a value with a unique name (NULL or "": a generated "_rlx_N" name).
 * errors: RLX_ERR_INVALID_MODEL if the name already exists. */
rlx_status rlx_graph_add_value(rlx_graph *g, const char *name, int *out_id);

/* Index of a value by name in this graph only, or -1. */
int rlx_graph_find(const rlx_graph *g, const char *name);

/* Sets the shape (dims/syms may be NULL for all-static / no symbols). */
void rlx_value_set_shape(rlx_value *v, int rank, const int64_t *dims, const int32_t *syms);

/* Makes the value constant, taking ownership of t (dtype and shape are set
 * from t). */
void rlx_value_set_konst(rlx_value *v, rlx_tensor *t);

/* Adds a value (named as rlx_graph_add_value) made constant with t, which
 * it adopts: t is destroyed when the value cannot be added.
 * errors: those of rlx_graph_add_value. */
rlx_status rlx_graph_add_konst(rlx_graph *g, const char *name, rlx_tensor *t, int *out_id);

/* Adds a constant 1-D int64 value of the n values v (copied), named as
 * rlx_graph_add_value (shapes, axes, starts for the nodes that importers
 * and passes add). errors: RLX_ERR_OUT_OF_MEMORY, those of
 * rlx_graph_add_value. */
rlx_status rlx_graph_add_konst_i64s(rlx_graph *g, const char *name, const int64_t *v, size_t n, int *out_id);

/* True when every dim is static. */
bool rlx_value_is_static(const rlx_value *v);

/* Element count of a static value (0 if not static). */
size_t rlx_value_numel(const rlx_value *v);

/* Bytes of a static value's elements (0 if not static or empty; UINT64_MAX when the
 * product overflows). */
uint64_t rlx_value_bytes(const rlx_value *v);

struct rlx_config;
/* Checks a static value's bytes against limits.max_tensor_bytes of cfg
 * (base/options.h; NULL: no limit; a value with dynamic dims passes), before
 * it is allocated. errors: RLX_ERR_OUT_OF_MEMORY naming the value, its
 * producer node and op, its dtype and shape, the limit and how to raise it
 * (rlx_limit_check). */
rlx_status rlx_value_limit_check(const struct rlx_config *cfg, const rlx_graph *g, const rlx_value *v);
/* rlx_value_limit_check of every value of g that a plan allocates (a
 * graph input or a live node's output) but the constants (the weights
 * exist already), in value order; a value a fusion orphaned (a chain's
 * inner value after fuse_elementwise, f32 after widen_f16) is left out. */
rlx_status rlx_graph_limit_check(const struct rlx_config *cfg, const rlx_graph *g);

/* Index of the symbol `name`, adding it if new; -1 on OOM. */
int rlx_graph_sym(rlx_graph *g, const char *name);

/* ------------------------------------------------------------ nodes */

/* Appends a node. Input and output ids are copied; attrs are adopted
 * (ownership of their allocations moves to the node; the array itself is
 * copied). The op definition is resolved for the graph's opset.
 * errors: RLX_ERR_UNSUPPORTED naming the op, node and opset if unknown;
 *         RLX_ERR_INVALID_MODEL on bad arity or attribute types. */
rlx_status rlx_graph_add_node(rlx_graph *g, const char *op_type, const char *domain,
                              const char *name, const int *in, int n_in,
                              const int *out, int n_out,
                              rlx_node_attr *attrs, int n_attrs, int *out_node);

/* Removes dead nodes, keeping order, and renumbers producers. */
void rlx_graph_compact(rlx_graph *g);

/* Drops the values from n_values on, the nodes from n_nodes on and the
 * sources from n_sources on (what a failed builder call added), and
 * rebuilds the name table: the graph is as it was when it had those
 * counts, as long as nothing older was changed meanwhile. */
void rlx_graph_truncate(rlx_graph *g, size_t n_values, size_t n_nodes, size_t n_sources);

/* Recomputes value->producer from the nodes. */
void rlx_graph_update_producers(rlx_graph *g);

/* Number of uses (as node inputs and graph outputs) of each value; `uses`
 * has n_values entries. */
void rlx_graph_count_uses(const rlx_graph *g, int *uses);

/* "node 'conv1' (Conv)" for messages; static buffer per thread. */
const char *rlx_node_desc(const rlx_node *n);

/* rlx_fail(status, "<rlx_node_desc(n)>: <fmt formatted with ap>"): the
 * body of the node-level error helpers (rlx_ictx_fail, rlx_cpu_fail). The
 * formatted part is cut at 1023 bytes; returns status. */
rlx_status rlx_node_vfail(const rlx_node *n, rlx_status status, const char *fmt, va_list ap);

/* Whether value id of g is computed (through any chain of nodes, folded
 * ones included until the graph is compacted) from what the caller feeds:
 * a graph input's data or shape, a bound control input (RLX_VALUE_FED), a
 * subgraph's inputs or outer-scope values. Initializers and constants made
 * from them alone are the model's. */
bool rlx_value_from_caller(const rlx_graph *g, int id);

/* The status of a failure `st` of node n of g, whose check read the inputs
 * in `inputs` (bit k: input k; ~0u: every input): a value that comes from
 * the model file is the model's fault (RLX_ERR_INVALID_MODEL), one that
 * comes from the caller's inputs the caller's (RLX_ERR_INVALID_ARGUMENT,
 * include/rlx/rlx.h). So RLX_ERR_INVALID_MODEL becomes
 * RLX_ERR_INVALID_ARGUMENT, with the same message, where g->shapes_bound
 * and one of those inputs comes from the caller (rlx_value_from_caller);
 * any other st is returned as it is. */
rlx_status rlx_node_fault(const rlx_graph *g, const rlx_node *n, unsigned inputs, rlx_status st);

/* ------------------------------------------------------------ attributes */

/* "FLOAT", "INTS", ... (ONNX's names), for messages. Static. */
const char *rlx_attr_type_name(rlx_attr_type t);

/* Whether `name` is one of rlx's internal attribute names ("_rlx...", set
 * by the passes: ir/ops/act.h). rlx_graph_add_node accepts them on any op
 * (the passes, and tests through rlx_model_add_node); the ONNX importer
 * refuses them, so that a model file cannot set internal state. */
bool rlx_attr_name_internal(const char *name);

const rlx_node_attr *rlx_node_attr_find(const rlx_node *n, const char *name);
int64_t rlx_attr_int(const rlx_node *n, const char *name, int64_t def);
float rlx_attr_float(const rlx_node *n, const char *name, float def);
/* Pointer to the ints and their count, or NULL/0 if absent. */
const int64_t *rlx_attr_ints(const rlx_node *n, const char *name, size_t *count);
const float *rlx_attr_floats(const rlx_node *n, const char *name, size_t *count);

/* Parameters: the node's schema attributes, given or defaulted (the
 * default is written once, in the op's schema row), read by attribute id
 * (RLX_A_<name>, ir/attr_id.h): an index into n->params through a table
 * built once from the schemas (rlx_op_attr_slot), with no name lookup.
 * The attribute must be in the schema of the node's op: one that is not
 * is an internal fault (base/log.h: the test programs fail; a release
 * build reads it as absent, 0 or NULL). Slot k of the schema is also
 * n->params[k]. */
const rlx_node_attr *rlx_param(const rlx_node *n, rlx_attr_id a);
int64_t rlx_param_int(const rlx_node *n, rlx_attr_id a);
float rlx_param_float(const rlx_node *n, rlx_attr_id a);
/* NULL when the attribute has no default and is not given. */
const char *rlx_param_str(const rlx_node *n, rlx_attr_id a);
/* A list parameter (INTS / FLOATS; lists have no default): pointer to the
 * values and their count, or NULL/0 when not given (a given empty list is
 * non-NULL with count 0). */
const int64_t *rlx_param_ints(const rlx_node *n, rlx_attr_id a, size_t *count);
const float *rlx_param_floats(const rlx_node *n, rlx_attr_id a, size_t *count);
/* A GRAPH parameter (the body of If, Loop, Scan), or NULL. */
const rlx_graph *rlx_param_graph(const rlx_node *n, rlx_attr_id a);
/* Whether the attribute was given on the node (not defaulted). */
bool rlx_param_given(const rlx_node *n, rlx_attr_id a);

/* (Re)builds n->params and n->params_given from n->attrs and the schema:
 * rlx_graph_add_node and rlx_graph_clone call it; a pass that changes a
 * schema attribute of an existing node calls it afterwards.
 * errors: RLX_ERR_OUT_OF_MEMORY. */
rlx_status rlx_node_resolve_params(rlx_node *n);

/* Frees what an attribute owns (not the struct itself). */
void rlx_node_attr_free(rlx_node_attr *a);
/* Deep copy of an attribute into *dst. */
rlx_status rlx_node_attr_copy(rlx_node_attr *dst, const rlx_node_attr *src);
/* Fill *a (overwritten) as an INT / FLOAT attribute `name` = v, or an
 * INTS / FLOATS attribute of the n values v (copied). RLX_ERR_OUT_OF_MEMORY
 * leaves *a empty (nothing to free). For passes and importers that add nodes. */
rlx_status rlx_node_attr_set_int(rlx_node_attr *a, const char *name, int64_t v);
rlx_status rlx_node_attr_set_float(rlx_node_attr *a, const char *name, float v);
rlx_status rlx_node_attr_set_ints(rlx_node_attr *a, const char *name, const int64_t *v, size_t n);
rlx_status rlx_node_attr_set_floats(rlx_node_attr *a, const char *name, const float *v, size_t n);

/* ------------------------------------------------------------ helpers */

/* Input value i of node n, or NULL when omitted / out of range. */
static inline rlx_value *rlx_node_input(const rlx_graph *g, const rlx_node *n, int i) {
    if (i < 0 || i >= n->n_in || n->in[i] < 0) return NULL;
    return &g->values[n->in[i]];
}
static inline rlx_value *rlx_node_output(const rlx_graph *g, const rlx_node *n, int i) {
    if (i < 0 || i >= n->n_out || n->out[i] < 0) return NULL;
    return &g->values[n->out[i]];
}

/* Writes a readable dump of the graph (values with shapes, nodes with
 * attributes) to f. */
#include <stdio.h>
void rlx_graph_dump(const rlx_graph *g, FILE *f);

#endif
