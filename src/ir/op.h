/* Op definitions: one table entry per ONNX operator that rlx knows, with its
 * arity, attribute schema, the ONNX versions it implements and its shape
 * inference. The CPU kernel lives in src/backend/cpu, the WGSL kernel in
 * src/backend/webgpu: those are the op's other two homes.
 *
 * Adding an op: a RLX_OP row in its family's table, src/ir/ops/ops_<family>.def
 * (the row defines the op id RLX_OP_<name> too), a RLX_ATTR_NAME row in
 * src/ir/attr_names.def for each attribute name of its schema that the list
 * lacks (the row defines the id RLX_A_<name> that reads take), its CPU
 * kernel in src/backend/cpu/ (a row [RLX_OP_<name>] = fn), and a test;
 * docs/DEVELOPING.md lists every place. */
#ifndef RLX_IR_OP_H
#define RLX_IR_OP_H

#include "base/status.h"
#include "ir/graph.h"

typedef struct rlx_infer_ctx {
    rlx_graph *g;
    rlx_node *n;
    unsigned *blame; /* the inputs a failed check read (rlx_ictx_fail_from); ~0u: all */
} rlx_infer_ctx;

/* Shape inference: sets dtype and shape of every present output from the
 * inputs (and their konst data where the shape depends on values, e.g.
 * Reshape's shape input). Where a dim cannot be known, it is left dynamic
 * (RLX_DIM_DYN, sym -1); when the rank cannot be known, rank -1.
 * Returns RLX_ERR_INVALID_MODEL with a message naming the node on
 * inconsistent inputs (rank, dtype, broadcast, attributes). */
typedef rlx_status (*rlx_infer_fn)(rlx_infer_ctx *ctx);

/* One attribute of an op's schema. The default is written here and
 * nowhere else: rlx_graph_add_node gives every node a parameter block with
 * one slot per schema attribute (rlx_node.params), holding the given value
 * or this default, and kernels read the slots by attribute id
 * (rlx_param_*(n, RLX_A_<name>), graph.h; the ids come from the list
 * src/ir/attr_names.def, which has a row for every schema name).
 * Attributes without a default (has_default false: lists, tensors, graphs,
 * and scalars whose default depends on the version or on other attributes)
 * have slot type RLX_ATTR_UNDEFINED when not given. */
typedef struct rlx_attr_def {
    const char *name;
    rlx_attr_type type;
    bool required;
    bool has_default;
    int64_t i;     /* INT default */
    float f;       /* FLOAT default */
    const char *s; /* STRING default */
    /* The op's since-versions that have it, since <= version < until (0:
     * unbounded); a node of another version that carries it is refused
     * (rlx_op_attr_type). */
    int since, until;
    /* Removed because it became an input (Clip's min, Pad's pads): the
     * refusal says so. */
    bool became_input;
    /* An INT that ONNX defines as a flag, 0 or 1 (keepdims, transA,
     * ceil_mode, ...) or as a choice of two coded 0 and 1 (storage_order,
     * RNN layout): another value is refused at load (check_attrs, graph.c),
     * where reading it as "nonzero is on" would differ from onnxruntime,
     * which takes only 1 as on. */
    bool boolean;
    /* (required applies to the row's versions; an attribute required in
     * some versions only has one row for each: the parameter slot is the
     * first row of its name, which every row of the name fills) */
} rlx_attr_def;

/* Schema rows with a default (ONNX's documented default unless noted). */
#define RLX_ATTR_DEF_INT(nm, v) { nm, RLX_ATTR_INT, false, true, .i = (v) }
#define RLX_ATTR_DEF_FLOAT(nm, v) { nm, RLX_ATTR_FLOAT, false, true, .f = (v) }
#define RLX_ATTR_DEF_STRING(nm, v) { nm, RLX_ATTR_STRING, false, true, .s = (v) }
/* A 0-or-1 INT (rlx_attr_def.boolean) with its default. */
#define RLX_ATTR_DEF_BOOL(nm, v) { nm, RLX_ATTR_INT, false, true, .i = (v), .boolean = true }
/* Rows of the versions from `since` on (ONNX added the attribute then). */
#define RLX_ATTR_SINCE(nm, type, since_) { nm, type, false, .since = (since_) }
#define RLX_ATTR_DEF_INT_SINCE(nm, v, since_) { nm, RLX_ATTR_INT, false, true, .i = (v), .since = (since_) }
#define RLX_ATTR_DEF_FLOAT_SINCE(nm, v, since_) { nm, RLX_ATTR_FLOAT, false, true, .f = (v), .since = (since_) }
#define RLX_ATTR_DEF_STRING_SINCE(nm, v, since_) { nm, RLX_ATTR_STRING, false, true, .s = (v), .since = (since_) }
#define RLX_ATTR_BOOL_SINCE(nm, since_) { nm, RLX_ATTR_INT, false, .since = (since_), .boolean = true }
#define RLX_ATTR_DEF_BOOL_SINCE(nm, v, since_) \
    { nm, RLX_ATTR_INT, false, true, .i = (v), .since = (since_), .boolean = true }
/* Rows of the versions before `until`, which made the attribute an input;
 * _REQ: those versions require it (Slice-1's starts and ends). */
#define RLX_ATTR_TO_INPUT(nm, type, until_) { nm, type, false, .until = (until_), .became_input = true }
#define RLX_ATTR_TO_INPUT_REQ(nm, type, until_) { nm, type, true, .until = (until_), .became_input = true }

enum {
    /* Output shapes depend on input values in a way that only running the
     * op reveals (NonZero, Unique): the CPU kernel allocates its outputs. */
    RLX_OP_DATA_DEPENDENT = 1u << 0,
    /* Output is a view of input 0 with another shape (Reshape, Flatten,
     * Squeeze, Unsqueeze, Identity): may alias instead of copy. */
    RLX_OP_VIEW = 1u << 1,
    /* Has subgraph attributes (If, Loop, Scan). */
    RLX_OP_CONTROL_FLOW = 1u << 2,
    /* Never constant-folded (random ops). */
    RLX_OP_NO_FOLD = 1u << 3,
    /* Takes string tensors on its inputs and outputs (rlx_op_takes_strings):
     * a data-movement op whose ONNX type constraints admit tensor(string)
     * and whose CPU kernel moves elements by size (rlx_dtype_size, so the
     * element pointers are copied unchanged), or an op that reads strings
     * (StringNormalizer). */
    RLX_OP_STRINGS = 1u << 4,
};

#define RLX_MAX_OP_VERSIONS 12
#define RLX_MAX_OP_ATTRS 16

typedef struct rlx_op_def {
    rlx_op_id id;       /* RLX_OP_<name> (ir/op_id.h) */
    const char *name;   /* ONNX op type, e.g. "Conv" */
    const char *domain; /* "" (ai.onnx) */
    /* ONNX since-versions of this op, ascending, 0-terminated; the node's
     * version is the largest one <= the model's opset. */
    int versions[RLX_MAX_OP_VERSIONS];
    int min_in, max_in;   /* max_in -1: variadic */
    /* Bit i set: input i may be omitted ("") even though i < min_in (Loop's
     * M and cond). Inputs below min_in are otherwise required. */
    uint32_t optional_in;
    int min_out, max_out;
    rlx_infer_fn infer;
    uint32_t flags;
    rlx_attr_def attrs[RLX_MAX_OP_ATTRS]; /* known attributes; ends at name NULL */
} rlx_op_def;

/* The parameter slot of attribute id a in the schema of op `op` (the index
 * k of its first row in def->attrs, and of n->params[k]), or -1 when the
 * op's schema has no such name (or op or a is out of range). Constant
 * time: a table built once, at the first call, from the schemas and
 * src/ir/attr_names.def (a schema name missing from that list is an
 * internal fault then, base/log.h). Thread-safe. */
int rlx_op_attr_slot(rlx_op_id op, rlx_attr_id a);

/* The type of attribute `name` of `def` at since-version `version`: a
 * schema row's, or one of the legacy attributes of old versions that have
 * no parameter slot (op.c: the binary ops' broadcast and axis before 7,
 * read by passes/legacy.c; consumed_inputs; flags whose one value that
 * rlx honours graph.c checks); RLX_ATTR_UNDEFINED when that version of
 * the op has no such attribute (ONNX's schema of that version). */
rlx_attr_type rlx_op_attr_type(const rlx_op_def *def, int version, const char *name);

/* Where `def` has attribute `name` at another version than `version`,
 * the since-versions that have it (*since, *until as in rlx_attr_def) and
 * whether it became an input; false when no version of the op has it. */
bool rlx_op_attr_elsewhere(const rlx_op_def *def, const char *name, int *since, int *until, bool *became_input);

/* Every attribute that some version of `def` has: the schema rows, then
 * the legacy ones; k from 0 until it returns false. */
bool rlx_op_attr_at(const rlx_op_def *def, size_t k, const char **name, rlx_attr_type *type, int *since, int *until,
                    bool *required);

/* Opsets of the default domain that rlx accepts. */
#define RLX_OPSET_MIN 1
#define RLX_OPSET_MAX 27

/* Looks an op up by domain and name. NULL if rlx does not know it. */
const rlx_op_def *rlx_op_find(const char *domain, const char *name);

/* The definition of an op id, or NULL for RLX_OP_NONE and ids out of
 * range. Constant time (no name lookup). */
const rlx_op_def *rlx_op_get(rlx_op_id id);

/* The since-version of `def` in effect at `opset`, or 0 when the op does
 * not exist yet at that opset. */
int rlx_op_version(const rlx_op_def *def, int64_t opset);

/* The number of leading inputs `def` requires at since-version `version`:
 * def->min_in, or more where a version turned attributes into required
 * inputs (Pad-11 pads, Slice-10 starts and ends, Unsqueeze-13 axes,
 * TopK-10 K, Upsample-9 scales; ONNX operator changelog). */
int rlx_op_min_inputs(const rlx_op_def *def, int version);

/* Iteration over all op definitions (for docs and reports). */
size_t rlx_op_count(void);
const rlx_op_def *rlx_op_at(size_t i);

/* Whether the op accepts string tensors (RLX_DTYPE_STRING) on its inputs
 * and outputs: its row has RLX_OP_STRINGS (the data-movement ops whose
 * ONNX type constraints admit tensor(string) and whose CPU kernels copy
 * elements by size, and StringNormalizer). rlx_infer_node refuses string
 * values on any other op (RLX_ERR_UNSUPPORTED naming node, value and op). */
bool rlx_op_takes_strings(const rlx_op_def *def);

/* Runs the op's shape inference on node `node_id` and checks the result.
 * Errors name the node. */
rlx_status rlx_infer_node(rlx_graph *g, int node_id);

/* ------------------------------------------------ helpers for infer fns */

static inline rlx_value *rlx_ictx_in(const rlx_infer_ctx *c, int i) { return rlx_node_input(c->g, c->n, i); }
static inline rlx_value *rlx_ictx_out(const rlx_infer_ctx *c, int i) { return rlx_node_output(c->g, c->n, i); }

/* Sets output i (no-op when that output is omitted). dims/syms may be NULL
 * for rank 0 / no symbols. These setters return RLX_OK, so that inference
 * can end with `return rlx_ictx_set_out(...)`. */
rlx_status rlx_ictx_set_out(rlx_infer_ctx *c, int i, rlx_dtype dtype, int rank,
                            const int64_t *dims, const int32_t *syms);
/* Output i gets dtype and shape of value v. */
rlx_status rlx_ictx_set_out_like(rlx_infer_ctx *c, int i, const rlx_value *v);
/* Output i gets dtype and unknown rank. */
rlx_status rlx_ictx_set_out_unknown(rlx_infer_ctx *c, int i, rlx_dtype dtype);

/* Fails with a message that names the node: "node 'x' (Conv): <fmt>".
 * RLX_ERR_INVALID_MODEL, or RLX_ERR_INVALID_ARGUMENT where the graph's
 * input shapes are bound and an input comes from the caller
 * (rlx_node_fault, applied by rlx_infer_node). */
rlx_status rlx_ictx_fail(const rlx_infer_ctx *c, const char *fmt, ...) RLX_PRINTF(2, 3);

/* As rlx_ictx_fail, for a check that read only the inputs in `inputs`
 * (bit k: input k), e.g. the values of Expand's shape (not x's shape, whose
 * rank the model fixes): where those come from the model it is the
 * model's fault even if x comes from the caller. */
rlx_status rlx_ictx_fail_from(const rlx_infer_ctx *c, unsigned inputs, const char *fmt, ...) RLX_PRINTF(3, 4);

/* The failure st of a helper that read only the inputs in `inputs` (as
 * rlx_ictx_fail_from); returns st. */
rlx_status rlx_ictx_blame(const rlx_infer_ctx *c, unsigned inputs, rlx_status st);

/* Ranks an operand may have (bit r: rank r), for rlx_ictx_operand_rank. */
#define RLX_RANK_0D 1u
#define RLX_RANK_1D 2u
#define RLX_RANK_0D_1D 3u

/* Checks the rank of input i of a value operand (a shape, repeats, axes,
 * pads, K, sizes, scales ...) against the ranks its ONNX spec allows
 * (`ranks`: RLX_RANK_* bits); absent inputs and unknown ranks pass. Fails
 * as rlx_ictx_fail_from(c, 1u << i, ...): "<what> '<name>' must be a 1-D
 * tensor, got rank 2 (shape [1,2])" (INVALID_MODEL where the model fixes
 * the rank, INVALID_ARGUMENT where a caller's feed does). */
rlx_status rlx_ictx_operand_rank(const rlx_infer_ctx *c, int i, const char *what, unsigned ranks);

/* rlx_norm_axis of axis against rank into *out, or rlx_ictx_fail "axis A is
 * out of range for rank R". */
rlx_status rlx_ictx_axis(const rlx_infer_ctx *c, int64_t axis, int rank, int *out);

/* Whether node n, before opset 7, sets the legacy attribute `broadcast`
 * (binary ops and Gemm, k_legacy_attrs; no schema slot) to a nonzero value:
 * its default 0 is written there once, for every reader. */
bool rlx_legacy_broadcast_set(const rlx_node *n);

/* Whether binary node n broadcasts the pre-opset-7 way: version < 7 and
 * either one of the ops with a `broadcast` attribute (Add Sub Mul Div Pow
 * And Or Xor Equal Greater Less) with broadcast=1, B lining up with A from
 * `axis`, or PRelu before opset 7, whose slope broadcasts with X as numpy
 * does or, failing that, a 1-D slope goes with the one axis of X of its
 * size (the ONNX reference). The output then has A's shape (the numpy
 * broadcast shape for such a PRelu; shape inference), and passes/legacy.c
 * rewrites the node into numpy broadcasting. */
bool rlx_legacy_bcast(const rlx_node *n);

/* Whether node n is one of those ops (Add ... Less) before opset 7
 * without broadcast=1: ONNX then takes inputs of one shape (onnxruntime
 * refuses Mul-6 of [2, 3] and [3]). The importer and the builder mark
 * such nodes of a model (rlx_node.one_shape); nodes made inside rlx are
 * not marked and broadcast as numpy does. */
bool rlx_legacy_one_shape(const rlx_node *n);

/* Whether B fits such a node (rlx_legacy_bcast), and where. */
typedef enum rlx_legacy_fit {
    RLX_LEGACY_FITS, /* B's dims line up with A's from *axis (each equal to A's or 1; a PRelu-6 slope
                        that broadcasts with X as numpy does: *axis = rank(A) - rank(B), maybe < 0) */
    RLX_LEGACY_NO,   /* B fits nowhere (*axis: where it was tried) */
    RLX_LEGACY_LATER /* PRelu only: the axis depends on dims unknown until the plan binds them */
} rlx_legacy_fit;

/* For such a node (rlx_legacy_bcast): sets *axis to where B's dims line
 * up with A's and says whether B fits there. */
rlx_legacy_fit rlx_legacy_bcast_axis(const rlx_node *n, const rlx_value *a, const rlx_value *b, int64_t *axis);

/* Rewrites node i of g (after its shape inference) if it broadcasts the
 * legacy way and B needs trailing dims: B' = Unsqueeze(B) is inserted as
 * node i, the node moves to i + 1, *changed = 1 (else 0). With
 * shapes_bound (a plan's graph, or one evaluated eagerly), a PRelu-6 whose
 * axis still depends on unknown dims fails with RLX_ERR_UNSUPPORTED naming
 * the node; otherwise such a node is left as it is. */
rlx_status rlx_legacy_rewrite_node(rlx_graph *g, size_t i, bool shapes_bound, int *changed);

/* Multidirectional (numpy) broadcast of two shapes (ONNX "Broadcasting").
 * Symbolic dims combine: equal symbols stay, 1 and s gives s, static n > 1
 * and a symbol gives n. Returns false if the static dims conflict. */
bool rlx_broadcast_shapes(int ra, const int64_t *da, const int32_t *sa,
                          int rb, const int64_t *db, const int32_t *sb,
                          int *rout, int64_t *dout, int32_t *sout);

/* Normalises an axis in [-rank, rank) to [0, rank); false if out of range. */
bool rlx_norm_axis(int64_t axis, int rank, int *out);

/* Reads an integer konst tensor (i32 or i64, any rank) as int64 values.
 * Returns false if the value is not constant or not an integer tensor. */
bool rlx_konst_ints(const rlx_value *v, int64_t *out, size_t cap, size_t *count);

/* Reads a float konst scalar/tensor element 0 as double; false if absent. */
bool rlx_konst_scalar(const rlx_value *v, double *out);

#endif
