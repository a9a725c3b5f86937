#include "ir/op.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "base/mem.h"
#include "base/tensor.h"
#include "ir/ops/ops.h"

/* ------------------------------------------------------------ the table */

typedef struct op_family {
    const rlx_op_def *defs;
    const size_t *count;
} op_family;

static const op_family k_families[] = {
#define RLX_OP_FAMILY(name) { rlx_ops_##name, &rlx_ops_##name##_count },
    RLX_OP_FAMILIES
#undef RLX_OP_FAMILY
};

size_t rlx_op_count(void) {
    size_t n = 0;
    for (size_t f = 0; f < RLX_ARRAY_LEN(k_families); f++) n += *k_families[f].count;
    return n;
}

const rlx_op_def *rlx_op_at(size_t i) {
    for (size_t f = 0; f < RLX_ARRAY_LEN(k_families); f++) {
        if (i < *k_families[f].count) return &k_families[f].defs[i];
        i -= *k_families[f].count;
    }
    return NULL;
}

const rlx_op_def *rlx_op_find(const char *domain, const char *name) {
    if (!name) return NULL;
    if (!domain || strcmp(domain, "ai.onnx") == 0) domain = "";
    for (size_t f = 0; f < RLX_ARRAY_LEN(k_families); f++)
        for (size_t i = 0; i < *k_families[f].count; i++) {
            const rlx_op_def *d = &k_families[f].defs[i];
            if (strcmp(d->name, name) == 0 && strcmp(d->domain ? d->domain : "", domain) == 0) return d;
        }
    return NULL;
}

/* Every definition by id: row r of a family is id RLX_OPS_FIRST_<family> + r
 * (ir/op_id.h numbers the same .def rows in the same order). */
#define RLX_OP_ROW_OF(fam, id) [id] = &rlx_ops_##fam[id - RLX_OPS_FIRST_##fam],
static const rlx_op_def *const k_by_id[RLX_OP_COUNT] = {
#undef RLX_OP
#undef RLX_OP_RLX
#define RLX_OP(nm, ...) RLX_OP_ROW_OF(elementwise, RLX_OP_##nm)
#include "ir/ops/ops_elementwise.def"
#undef RLX_OP
#define RLX_OP(nm, ...) RLX_OP_ROW_OF(nn, RLX_OP_##nm)
#include "ir/ops/ops_nn.def"
#undef RLX_OP
#define RLX_OP(nm, ...) RLX_OP_ROW_OF(tensor, RLX_OP_##nm)
#include "ir/ops/ops_tensor.def"
#undef RLX_OP
#define RLX_OP(nm, ...) RLX_OP_ROW_OF(reduce, RLX_OP_##nm)
#include "ir/ops/ops_reduce.def"
#undef RLX_OP
#define RLX_OP(nm, ...) RLX_OP_ROW_OF(control, RLX_OP_##nm)
#include "ir/ops/ops_control.def"
#undef RLX_OP
#define RLX_OP(nm, ...) RLX_OP_ROW_OF(quant, RLX_OP_##nm)
#include "ir/ops/ops_quant.def"
#undef RLX_OP
#define RLX_OP(nm, ...) RLX_OP_ROW_OF(rnn, RLX_OP_##nm)
#include "ir/ops/ops_rnn.def"
#undef RLX_OP
#define RLX_OP(nm, ...) RLX_OP_ROW_OF(string, RLX_OP_##nm)
#include "ir/ops/ops_string.def"
#undef RLX_OP
#define RLX_OP_RLX(nm, ...) RLX_OP_ROW_OF(internal, RLX_OP_rlx_##nm)
#include "ir/ops/ops_internal.def"
#undef RLX_OP_RLX
};
#undef RLX_OP_ROW_OF

const rlx_op_def *rlx_op_get(rlx_op_id id) {
    return (id > RLX_OP_NONE && id < RLX_OP_COUNT) ? k_by_id[id] : NULL;
}

/* ------------------------------------------------------------ attribute ids */

static const char *const k_attr_names[RLX_A_COUNT] = {
#define RLX_ATTR_NAME(nm) [RLX_A_##nm] = #nm,
#include "ir/attr_names.def"
#undef RLX_ATTR_NAME
};

const char *rlx_attr_id_name(rlx_attr_id a) { return a > RLX_A_NONE && a < RLX_A_COUNT ? k_attr_names[a] : NULL; }

rlx_attr_id rlx_attr_id_of(const char *name) {
    size_t lo = RLX_A_NONE + 1, hi = RLX_A_COUNT; /* the rows are sorted (checked by build_attr_slots) */
    while (name && lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, k_attr_names[mid]);
        if (c == 0) return (rlx_attr_id)mid;
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    return RLX_A_NONE;
}

/* Schema slot of each attribute id in each op (0xFF: none), built once
 * from the schemas: the one place where parameter names are compared. */
enum { NO_SLOT = 0xFF };
static uint8_t g_attr_slot[RLX_OP_COUNT][RLX_A_COUNT];
static atomic_bool g_attr_slot_ready;
static pthread_once_t g_attr_slot_once = PTHREAD_ONCE_INIT;

static void build_attr_slots(void) {
    _Static_assert(RLX_MAX_OP_ATTRS < NO_SLOT, "a slot fits a byte");
    memset(g_attr_slot, NO_SLOT, sizeof g_attr_slot);
    for (size_t a = RLX_A_NONE + 2; a < RLX_A_COUNT; a++)
        if (strcmp(k_attr_names[a - 1], k_attr_names[a]) >= 0)
            rlx_internal_fault("src/ir/attr_names.def: row '%s' comes after '%s' (the rows are sorted in strcmp order, "
                               "each name once)", k_attr_names[a], k_attr_names[a - 1]);
    for (size_t op = RLX_OP_NONE + 1; op < RLX_OP_COUNT; op++) {
        const rlx_op_def *d = k_by_id[op];
        for (int k = 0; d && k < RLX_MAX_OP_ATTRS && d->attrs[k].name; k++) {
            rlx_attr_id a = rlx_attr_id_of(d->attrs[k].name);
            if (a == RLX_A_NONE)
                rlx_internal_fault("op %s: attribute '%s' of its schema has no row in src/ir/attr_names.def", d->name,
                                   d->attrs[k].name);
            else if (g_attr_slot[op][a] == NO_SLOT)
                g_attr_slot[op][a] = (uint8_t)k; /* the first row of the name (rlx_attr_def) */
        }
    }
    atomic_store_explicit(&g_attr_slot_ready, true, memory_order_release);
}

int rlx_op_attr_slot(rlx_op_id op, rlx_attr_id a) {
    if (!atomic_load_explicit(&g_attr_slot_ready, memory_order_acquire)) pthread_once(&g_attr_slot_once, build_attr_slots);
    if ((unsigned)op >= RLX_OP_COUNT || (unsigned)a >= RLX_A_COUNT) return -1;
    int s = g_attr_slot[op][a];
    return s == NO_SLOT ? -1 : s;
}

int rlx_op_version(const rlx_op_def *def, int64_t opset) {
    int v = 0;
    for (int i = 0; i < RLX_MAX_OP_VERSIONS && def->versions[i]; i++)
        if (def->versions[i] <= opset) v = def->versions[i];
    return v;
}

/* Inputs that a version made required where the op's row (which covers
 * every version) has a lower min_in: attributes that became inputs. */
static const struct {
    rlx_op_id op;
    int since, min_in;
} k_version_min_in[] = {
    { RLX_OP_Pad, 11, 2 },       /* pads */
    { RLX_OP_Slice, 10, 3 },     /* starts, ends */
    { RLX_OP_Unsqueeze, 13, 2 }, /* axes */
    { RLX_OP_TopK, 10, 2 },      /* K */
    { RLX_OP_Upsample, 9, 2 },   /* scales */
};

int rlx_op_min_inputs(const rlx_op_def *def, int version) {
    int m = def->min_in;
    for (size_t i = 0; i < sizeof k_version_min_in / sizeof k_version_min_in[0]; i++)
        if (k_version_min_in[i].op == def->id && version >= k_version_min_in[i].since && k_version_min_in[i].min_in > m)
            m = k_version_min_in[i].min_in;
    return m;
}

/* ------------------------------------------------------------ attributes */

/* Attributes of old versions without a parameter slot (rlx_op_attr_type):
 * op, name, type, the op's since-versions that have it [since, until).
 * Checked against ONNX's schema of every version by test_attr_schemas. */
static const struct {
    rlx_op_id op;
    const char *name;
    rlx_attr_type type;
    int since, until;
    bool required; /* ONNX's schema of those versions marks it required */
} k_legacy_attrs[] = {
#define CI(op) { RLX_OP_##op, "consumed_inputs", RLX_ATTR_INTS, 1, 6, false }
#define BC(op) \
    { RLX_OP_##op, "broadcast", RLX_ATTR_INT, 1, 7, false }, { RLX_OP_##op, "axis", RLX_ATTR_INT, 1, 7, false }
    /* an optimisation hint of version 1 (any value: rlx allocates its own buffers) */
    CI(Abs), CI(Add), CI(Ceil), CI(Clip), CI(Div), CI(Dropout), CI(Elu), CI(Exp), CI(Floor),
    CI(HardSigmoid), CI(InstanceNormalization), CI(LeakyRelu), CI(Log), CI(Max), CI(Mean), CI(Min), CI(Mul), CI(Neg),
    CI(PRelu), CI(Reciprocal), CI(Relu), CI(Selu), CI(Sigmoid), CI(Sqrt), CI(Sub), CI(Sum), CI(Tanh),
    /* BatchNormalization-1 requires it (its running mean and variance are updated in place) */
    { RLX_OP_BatchNormalization, "consumed_inputs", RLX_ATTR_INTS, 1, 6, true },
    /* the binary ops' broadcasting before 7, honoured by passes/legacy.c (rlx_legacy_bcast) */
    BC(Add), BC(Sub), BC(Mul), BC(Div), BC(Pow), BC(And), BC(Or), BC(Xor), BC(Equal), BC(Greater), BC(Less),
    /* Gemm's C broadcasts from 7 on; with broadcast=0 C has the full shape, which broadcasting reads the same */
    { RLX_OP_Gemm, "broadcast", RLX_ATTR_INT, 1, 7, false },
    /* is_test of BatchNormalization and Dropout before 7: rlx runs inference whatever it says, as ONNX's
     * version converter drops it (onnxruntime has no kernel of these versions) */
    { RLX_OP_BatchNormalization, "is_test", RLX_ATTR_INT, 1, 7, false },
    { RLX_OP_Dropout, "is_test", RLX_ATTR_INT, 1, 7, false },
    /* attributes whose type changed: the node keeps the file's value of the old type, and its parameter
     * slot (the schema row, of the later type) holds it converted (rlx_node_resolve_params) */
    { RLX_OP_Cast, "to", RLX_ATTR_STRING, 1, 6, true },
    { RLX_OP_LpPool, "p", RLX_ATTR_FLOAT, 1, 2, false },
    { RLX_OP_GlobalLpPool, "p", RLX_ATTR_FLOAT, 1, 2, false },
#undef CI
#undef BC
};

static bool attr_in_range(int since, int until, int version) {
    return version >= since && (until == 0 || version < until);
}

rlx_attr_type rlx_op_attr_type(const rlx_op_def *def, int version, const char *name) {
    for (int k = 0; k < RLX_MAX_OP_ATTRS && def->attrs[k].name; k++)
        if (strcmp(def->attrs[k].name, name) == 0 && attr_in_range(def->attrs[k].since, def->attrs[k].until, version))
            return def->attrs[k].type;
    for (size_t k = 0; k < RLX_ARRAY_LEN(k_legacy_attrs); k++)
        if (k_legacy_attrs[k].name && k_legacy_attrs[k].op == def->id && strcmp(k_legacy_attrs[k].name, name) == 0 &&
            attr_in_range(k_legacy_attrs[k].since, k_legacy_attrs[k].until, version))
            return k_legacy_attrs[k].type;
    return RLX_ATTR_UNDEFINED;
}

bool rlx_op_attr_at(const rlx_op_def *def, size_t k, const char **name, rlx_attr_type *type, int *since, int *until,
                    bool *required) {
    size_t n_schema = 0;
    while (n_schema < RLX_MAX_OP_ATTRS && def->attrs[n_schema].name) n_schema++;
    if (k < n_schema) {
        const rlx_attr_def *a = &def->attrs[k];
        *name = a->name, *type = a->type, *since = a->since, *until = a->until, *required = a->required;
        return true;
    }
    k -= n_schema;
    for (size_t i = 0; i < RLX_ARRAY_LEN(k_legacy_attrs); i++) {
        if (!k_legacy_attrs[i].name || k_legacy_attrs[i].op != def->id) continue;
        if (k--) continue;
        *name = k_legacy_attrs[i].name, *type = k_legacy_attrs[i].type;
        *since = k_legacy_attrs[i].since, *until = k_legacy_attrs[i].until, *required = k_legacy_attrs[i].required;
        return true;
    }
    return false;
}

bool rlx_op_attr_elsewhere(const rlx_op_def *def, const char *name, int *since, int *until, bool *became_input) {
    for (int k = 0; k < RLX_MAX_OP_ATTRS && def->attrs[k].name; k++)
        if (strcmp(def->attrs[k].name, name) == 0) {
            *since = def->attrs[k].since, *until = def->attrs[k].until, *became_input = def->attrs[k].became_input;
            return true;
        }
    for (size_t k = 0; k < RLX_ARRAY_LEN(k_legacy_attrs); k++)
        if (k_legacy_attrs[k].name && k_legacy_attrs[k].op == def->id && strcmp(k_legacy_attrs[k].name, name) == 0) {
            *since = k_legacy_attrs[k].since, *until = k_legacy_attrs[k].until, *became_input = false;
            return true;
        }
    return false;
}

/* ------------------------------------------------------------ strings */

bool rlx_op_takes_strings(const rlx_op_def *def) { return def && (def->flags & RLX_OP_STRINGS); }

/* A string value where the op takes none: refused, naming node and value.
 * The wording keeps "element type string" (the conformance runner counts
 * such tests out of scope). */
static rlx_status check_strings(const rlx_graph *g, const rlx_node *n, bool outputs) {
    if (rlx_op_takes_strings(n->def)) return RLX_OK;
    int cnt = outputs ? n->n_out : n->n_in;
    for (int i = 0; i < cnt; i++) {
        const rlx_value *v = outputs ? rlx_node_output(g, n, i) : rlx_node_input(g, n, i);
        if (v && v->dtype == RLX_DTYPE_STRING)
            return rlx_fail(RLX_ERR_UNSUPPORTED,
                            "%s: %s %d ('%s') has element type string, which rlx supports only in data-movement ops "
                            "and StringNormalizer (docs/ops.md), not in %s",
                            rlx_node_desc(n), outputs ? "output" : "input", i, v->name, n->op_type);
    }
    return RLX_OK;
}

/* ------------------------------------------------------------ inference */

rlx_status rlx_ictx_set_out(rlx_infer_ctx *c, int i, rlx_dtype dtype, int rank, const int64_t *dims,
                            const int32_t *syms) {
    rlx_value *v = rlx_ictx_out(c, i);
    if (!v) return RLX_OK;
    if (rank > 0 && dims && !rlx_shape_fits(dims, rank)) {
        char buf[160];
        return rlx_ictx_fail(c, "output %d shape %s is too large (the product of its non-zero dims overflows int64)",
                             i, rlx_shape_str(dims, rank, buf, sizeof buf));
    }
    v->dtype = dtype;
    rlx_value_set_shape(v, rank, dims, syms);
    return RLX_OK;
}

rlx_status rlx_ictx_set_out_like(rlx_infer_ctx *c, int i, const rlx_value *src) {
    return rlx_ictx_set_out(c, i, src->dtype, src->rank, src->dims, src->syms);
}

rlx_status rlx_ictx_set_out_unknown(rlx_infer_ctx *c, int i, rlx_dtype dtype) {
    return rlx_ictx_set_out(c, i, dtype, -1, NULL, NULL);
}

rlx_status rlx_ictx_fail(const rlx_infer_ctx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    rlx_status st = rlx_node_vfail(c->n, RLX_ERR_INVALID_MODEL, fmt, ap);
    va_end(ap);
    return st;
}

rlx_status rlx_ictx_blame(const rlx_infer_ctx *c, unsigned inputs, rlx_status st) {
    if (st && c->blame) *c->blame = inputs;
    return st;
}

rlx_status rlx_ictx_fail_from(const rlx_infer_ctx *c, unsigned inputs, const char *fmt, ...) {
    if (c->blame) *c->blame = inputs;
    va_list ap;
    va_start(ap, fmt);
    rlx_status st = rlx_node_vfail(c->n, RLX_ERR_INVALID_MODEL, fmt, ap);
    va_end(ap);
    return st;
}

rlx_status rlx_ictx_operand_rank(const rlx_infer_ctx *c, int i, const char *what, unsigned ranks) {
    const rlx_value *v = rlx_ictx_in(c, i);
    if (!v || v->rank < 0 || (v->rank < 32 && (ranks >> v->rank & 1u))) return RLX_OK;
    const char *want = ranks == RLX_RANK_0D ? "a scalar (0-D)" : ranks == RLX_RANK_1D ? "a 1-D tensor"
                                                                                     : "a scalar or a 1-D tensor";
    char sh[128];
    return rlx_ictx_fail_from(c, i < 32 ? 1u << i : ~0u, "%s '%s' must be %s, got rank %d (shape %s)", what, v->name,
                              want, v->rank, rlx_shape_str(v->dims, v->rank, sh, sizeof sh));
}

rlx_status rlx_ictx_axis(const rlx_infer_ctx *c, int64_t axis, int rank, int *out) {
    if (rlx_norm_axis(axis, rank, out)) return RLX_OK;
    return rlx_ictx_fail(c, "axis %lld is out of range for rank %d", (long long)axis, rank);
}

rlx_status rlx_infer_node(rlx_graph *g, int node_id) {
    rlx_node *n = &g->nodes[node_id];
    if (!n->def || !n->def->infer)
        return rlx_fail(RLX_ERR_INTERNAL, "%s: no shape inference", rlx_node_desc(n));
    for (int i = 0; i < n->n_in; i++) {
        rlx_value *v = rlx_node_input(g, n, i);
        if (v && v->dtype == RLX_DTYPE_UNDEFINED && !(v->flags & RLX_VALUE_OUTER))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input %d ('%s') has no known type (used before it is defined?)",
                            rlx_node_desc(n), i, v->name);
    }
    /* declared symbols (graph outputs, value_info) survive where inference
     * finds a dim dynamic without naming it */
    enum { KEEP = 8 };
    int prev_rank[KEEP];
    int32_t prev_syms[KEEP][RLX_MAX_RANK];
    rlx_dtype prev_dtype[KEEP];
    for (int i = 0; i < n->n_out && i < KEEP; i++) {
        const rlx_value *v = rlx_node_output(g, n, i);
        prev_rank[i] = v ? v->rank : -1;
        prev_dtype[i] = v ? v->dtype : RLX_DTYPE_UNDEFINED;
        if (v && v->rank > 0) memcpy(prev_syms[i], v->syms, sizeof prev_syms[i]);
    }
    RLX_TRY(check_strings(g, n, false));
    unsigned blame = ~0u;
    rlx_infer_ctx c = { g, n, &blame };
    rlx_status st = n->def->infer(&c);
    if (st) return rlx_node_fault(g, &g->nodes[node_id], blame, st);
    RLX_TRY(check_strings(g, n, true));
    for (int i = 0; i < n->n_out; i++) {
        rlx_value *v = rlx_node_output(g, n, i);
        if (!v) continue;
        /* a graph output keeps the element type its declaration gives (the
         * importer sets it before the producer is inferred; passes never
         * change it): a producer of another type is a malformed model, as
         * onnxruntime's type check has it */
        if (i < KEEP && (v->flags & RLX_VALUE_OUTPUT) && prev_dtype[i] != RLX_DTYPE_UNDEFINED &&
            v->dtype != RLX_DTYPE_UNDEFINED && v->dtype != prev_dtype[i])
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: output '%s' is declared %s but the node produces %s",
                            rlx_node_desc(n), v->name, rlx_dtype_name(prev_dtype[i]), rlx_dtype_name(v->dtype));
        if (i < KEEP && v->rank > 0 && v->rank == prev_rank[i] && v->rank <= RLX_MAX_RANK)
            for (int d = 0; d < v->rank; d++)
                if (v->dims[d] < 0 && v->syms[d] < 0 && prev_syms[i][d] >= 0) v->syms[d] = prev_syms[i][d];
        if (v->rank > RLX_MAX_RANK)
            return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: output '%s' has rank %d, above the maximum %d",
                            rlx_node_desc(n), v->name, v->rank, RLX_MAX_RANK);
        /* dims computed from values (Expand, Tile, ConstantOfShape, ...) can be
         * huge: a static shape must have a byte size that fits size_t, or
         * memory planning would wrap around. Whose fault: the inputs the
         * dims came from (a Range's bounds or Resize's scales fed at run
         * time are the caller's; rlx_node_fault) */
        if (rlx_value_is_static(v)) {
            size_t numel, bytes;
            if (rlx_shape_numel(v->dims, v->rank, &numel) != RLX_OK || !rlx_mul_ok(numel, rlx_dtype_size(v->dtype), &bytes))
                return rlx_node_fault(g, n, ~0u,
                                      rlx_fail(RLX_ERR_INVALID_MODEL, "%s: output '%s' is too large (its byte size overflows)",
                                               rlx_node_desc(n), v->name));
        }
    }
    return RLX_OK;
}

/* ------------------------------------------------------------ helpers */

bool rlx_broadcast_shapes(int ra, const int64_t *da, const int32_t *sa, int rb, const int64_t *db,
                          const int32_t *sb, int *rout, int64_t *dout, int32_t *sout) {
    int r = ra > rb ? ra : rb;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t a = ia >= 0 ? da[ia] : 1, b = ib >= 0 ? db[ib] : 1;
        int32_t xa = (ia >= 0 && sa) ? sa[ia] : -1, xb = (ib >= 0 && sb) ? sb[ib] : -1;
        int64_t d;
        int32_t s = -1;
        if (a >= 0 && b >= 0) {
            if (a == b || b == 1) d = a;
            else if (a == 1) d = b;
            else return false;
        } else if (a == 1) {
            d = b, s = xb;
        } else if (b == 1) {
            d = a, s = xa;
        } else if (a >= 0) {
            d = a; /* the dynamic side must be a or 1 */
        } else if (b >= 0) {
            d = b;
        } else {
            d = RLX_DIM_DYN;
            s = (xa >= 0 && xa == xb) ? xa : -1;
        }
        dout[i] = d;
        sout[i] = d >= 0 ? -1 : s;
    }
    *rout = r;
    return true;
}

bool rlx_norm_axis(int64_t axis, int rank, int *out) {
    if (axis < -(int64_t)rank || axis >= rank) return false;
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}

bool rlx_konst_ints(const rlx_value *v, int64_t *out, size_t cap, size_t *count) {
    *count = 0;
    if (!v || !v->konst) return false;
    const rlx_tensor *t = v->konst;
    size_t n = rlx_tensor_numel(t);
    if (n > cap || (n && !rlx_dtype_is_int(t->dtype))) return false;
    for (size_t i = 0; i < n; i++) out[i] = rlx_tensor_get_i64(t, i);
    *count = n;
    return true;
}

bool rlx_konst_scalar(const rlx_value *v, double *out) {
    if (!v || !v->konst || rlx_tensor_numel(v->konst) < 1) return false;
    const rlx_tensor *t = v->konst;
    int64_t i = 0;
    size_t c;
    if (rlx_dtype_is_float(t->dtype)) *out = rlx_tensor_get_f64(t, 0);
    else if (rlx_tensor_numel(t) != 1 || !rlx_konst_ints(v, &i, 1, &c)) return false;
    else *out = (double)i;
    return true;
}
