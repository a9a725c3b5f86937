/* Elementwise ops: unary math and activations, binary arithmetic with
 * multidirectional broadcasting, comparisons, logic, Where, Cast.
 * Versions are the ONNX since-versions of each operator. */
#include <string.h>

#include "base/tensor.h"
#include "ir/ops/ops.h"

bool rlx_dtype_is_float(rlx_dtype dt) {
    return dt == RLX_DTYPE_F32 || dt == RLX_DTYPE_F16 || dt == RLX_DTYPE_F64 || dt == RLX_DTYPE_BF16;
}

bool rlx_dtype_is_int(rlx_dtype dt) {
    switch (dt) {
    case RLX_DTYPE_U8: case RLX_DTYPE_I8: case RLX_DTYPE_U16: case RLX_DTYPE_I16:
    case RLX_DTYPE_I32: case RLX_DTYPE_I64: case RLX_DTYPE_U32: case RLX_DTYPE_U64: return true;
    default: return false;
    }
}

rlx_status rlx_infer_same_as_input0(rlx_infer_ctx *c) {
    return rlx_ictx_set_out_like(c, 0, rlx_ictx_in(c, 0));
}

rlx_status rlx_infer_unary_float(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    if (!rlx_dtype_is_float(x->dtype))
        return rlx_ictx_fail(c, "input '%s' has dtype %s, expected a float type", x->name, rlx_dtype_name(x->dtype));
    return rlx_ictx_set_out_like(c, 0, x);
}

/* Inputs of one shape, for a version before the one that brought
 * broadcasting (`since`; `unless`: what else lifts the rule, e.g. "
 * without broadcast=1"): a rank or a dim known on both sides that differs
 * fails, at the load, or at the plan for the fed shapes. */
static rlx_status one_shape(rlx_infer_ctx *c, int since, const char *unless) {
    const rlx_value *x0 = NULL;
    for (int i = 0; i < c->n->n_in; i++) {
        const rlx_value *x = rlx_ictx_in(c, i);
        if (!x || x->rank < 0) continue;
        if (!x0) {
            x0 = x;
            continue;
        }
        bool differ = x->rank != x0->rank;
        for (int d = 0; !differ && d < x->rank; d++)
            differ = x->dims[d] >= 0 && x0->dims[d] >= 0 && x->dims[d] != x0->dims[d];
        if (differ) {
            char a[96], b[96];
            return rlx_ictx_fail(c,
                                 "inputs '%s' of shape %s and '%s' of shape %s differ: before version %d the "
                                 "inputs have one shape%s (no broadcasting; this node is version %d)",
                                 x0->name, rlx_shape_str(x0->dims, x0->rank, a, sizeof a), x->name,
                                 rlx_shape_str(x->dims, x->rank, b, sizeof b), since, unless, c->n->version);
        }
    }
    return RLX_OK;
}

/* Broadcast of all present inputs; output dtype `dt`. */
static rlx_status broadcast_all(rlx_infer_ctx *c, rlx_dtype dt, int first, int check_dtype) {
    int rank = 0;
    int64_t dims[RLX_MAX_RANK];
    int32_t syms[RLX_MAX_RANK];
    const rlx_value *x0 = NULL;
    for (int i = first; i < c->n->n_in; i++) {
        const rlx_value *x = rlx_ictx_in(c, i);
        if (!x) continue;
        if (x->rank < 0) return rlx_ictx_set_out_unknown(c, 0, dt);
        if (check_dtype && x0 && x->dtype != x0->dtype)
            return rlx_ictx_fail(c, "inputs have different dtypes (%s and %s)", rlx_dtype_name(x0->dtype),
                                 rlx_dtype_name(x->dtype));
        if (!x0) {
            x0 = x;
            rank = x->rank;
            memcpy(dims, x->dims, sizeof dims);
            memcpy(syms, x->syms, sizeof syms);
            continue;
        }
        int r2;
        int64_t d2[RLX_MAX_RANK];
        int32_t s2[RLX_MAX_RANK];
        if (!rlx_broadcast_shapes(rank, dims, syms, x->rank, x->dims, x->syms, &r2, d2, s2)) {
            char a[96], b[96];
            return rlx_ictx_fail(c, "shapes %s and %s of input '%s' do not broadcast",
                                 rlx_shape_str(dims, rank, a, sizeof a), rlx_shape_str(x->dims, x->rank, b, sizeof b),
                                 x->name);
        }
        rank = r2;
        memcpy(dims, d2, sizeof dims);
        memcpy(syms, s2, sizeof syms);
    }
    return rlx_ictx_set_out(c, 0, dt, rank, dims, syms);
}

/* PRelu before opset 7 (rlx_legacy_bcast_axis): numpy broadcasting where
 * X and the slope broadcast (the output may be larger than X: X [3, 1],
 * slope [3] -> [3, 3]), X's shape where a 1-D slope goes along one axis of
 * X; while that choice waits for the plan's dims, the dims both choices
 * agree on. */
static rlx_status prelu6_out(rlx_infer_ctx *c, rlx_dtype dt, rlx_legacy_fit fit, int64_t axis) {
    const rlx_value *a = rlx_ictx_in(c, 0), *b = rlx_ictx_in(c, 1);
    if (a->rank < 0 || b->rank < 0) return rlx_ictx_set_out_unknown(c, 0, dt);
    if (fit == RLX_LEGACY_FITS && axis == a->rank - b->rank) return broadcast_all(c, dt, 0, 0);
    if (fit == RLX_LEGACY_FITS) return rlx_ictx_set_out(c, 0, dt, a->rank, a->dims, a->syms);
    /* later: only a 1-D slope can go along an axis, and then X's rank is the output's */
    int rank = a->rank >= b->rank ? a->rank : b->rank;
    int64_t dims[RLX_MAX_RANK];
    int32_t syms[RLX_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        dims[i] = RLX_DIM_DYN, syms[i] = -1;
        if (ia >= 0 && (db == 1 || (da >= 0 && da != 1))) dims[i] = da, syms[i] = a->syms[ia];
        else if (ia < 0) dims[i] = db, syms[i] = b->syms[ib];
    }
    return rlx_ictx_set_out(c, 0, dt, rank, dims, syms);
}

/* The output has A's shape: B must fit inside it (a B that does not would
 * make the kernels read past it). PRelu before opset 7: prelu6_out. */
static rlx_status legacy_out(rlx_infer_ctx *c, rlx_dtype dt) {
    const rlx_value *a = rlx_ictx_in(c, 0), *b = rlx_ictx_in(c, 1);
    int64_t axis = 0;
    bool prelu6 = c->n->op == RLX_OP_PRelu;
    rlx_legacy_fit fit = RLX_LEGACY_LATER;
    if (b->rank >= 0 && a->rank >= 0) fit = rlx_legacy_bcast_axis(c->n, a, b, &axis);
    if (fit == RLX_LEGACY_NO) {
        char sa[96], sb[96];
        if (prelu6)
            return rlx_ictx_fail(c, "slope '%s' of shape %s fits neither input '%s' of shape %s by numpy "
                                    "broadcasting nor (a 1-D slope) exactly one of its axes (PRelu before opset 7, "
                                    "as the ONNX reference)",
                                 b->name, rlx_shape_str(b->dims, b->rank, sb, sizeof sb), a->name,
                                 rlx_shape_str(a->dims, a->rank, sa, sizeof sa));
        return rlx_ictx_fail(c, "input '%s' of shape %s does not broadcast onto input '%s' of shape %s "
                                "(opset < 7 broadcasting, axis %lld)",
                             b->name, rlx_shape_str(b->dims, b->rank, sb, sizeof sb), a->name,
                             rlx_shape_str(a->dims, a->rank, sa, sizeof sa), (long long)axis);
    }
    if (prelu6) return prelu6_out(c, dt, fit, axis);
    return rlx_ictx_set_out(c, 0, dt, a->rank, a->dims, a->syms);
}

/* A model's binary node before opset 7 without broadcast=1
 * (rlx_node.one_shape) takes inputs of one shape. */
static rlx_status legacy_one_shape(rlx_infer_ctx *c) {
    return c->n->one_shape ? one_shape(c, 7, " without broadcast=1") : RLX_OK;
}

rlx_status rlx_infer_broadcast(rlx_infer_ctx *c) {
    if (rlx_legacy_bcast(c->n)) return legacy_out(c, rlx_ictx_in(c, 0)->dtype);
    RLX_TRY(legacy_one_shape(c));
    return broadcast_all(c, rlx_ictx_in(c, 0)->dtype, 0, 1);
}

rlx_status rlx_infer_broadcast_bool(rlx_infer_ctx *c) {
    if (rlx_legacy_bcast(c->n)) return legacy_out(c, RLX_DTYPE_BOOL);
    RLX_TRY(legacy_one_shape(c));
    return broadcast_all(c, RLX_DTYPE_BOOL, 0, 1);
}

/* Pow and PRelu allow different dtypes for the exponent / slope. */
static rlx_status infer_broadcast_lhs(rlx_infer_ctx *c) {
    if (rlx_legacy_bcast(c->n)) return legacy_out(c, rlx_ictx_in(c, 0)->dtype);
    RLX_TRY(legacy_one_shape(c));
    return broadcast_all(c, rlx_ictx_in(c, 0)->dtype, 0, 0);
}

/* Clip-11/12/13: min and max (inputs 1 and 2) are scalars; a 1-D tensor of
 * one value is taken too, as onnxruntime does. */
static rlx_status infer_clip(rlx_infer_ctx *c) {
    static const char *const what[3] = { "input", "min", "max" };
    for (int i = 1; i < 3 && i < c->n->n_in; i++) {
        const rlx_value *v = rlx_ictx_in(c, i);
        if (!v) continue;
        RLX_TRY(rlx_ictx_operand_rank(c, i, what[i], RLX_RANK_0D_1D));
        if (v->rank == 1 && v->dims[0] >= 0 && v->dims[0] != 1)
            return rlx_ictx_fail_from(c, 1u << i, "%s '%s' must be a scalar, got %lld values", what[i], v->name,
                                      (long long)v->dims[0]);
    }
    return rlx_ictx_set_out_like(c, 0, rlx_ictx_in(c, 0));
}

/* Gelu: a float unary whose approximate is "none" or "tanh" (ONNX Gelu-20;
 * another value was refused only when a kernel first ran). */
static rlx_status infer_gelu(rlx_infer_ctx *c) {
    const char *ap = rlx_param_str(c->n, RLX_A_approximate);
    if (strcmp(ap, "none") != 0 && strcmp(ap, "tanh") != 0)
        return rlx_ictx_fail(c, "approximate must be 'none' or 'tanh', got '%s'", ap);
    return rlx_infer_unary_float(c);
}

/* Mod: fmod is 1 for float inputs (ONNX Mod-10; onnxruntime refuses it;
 * the float case was refused only when a kernel first ran, as the caller's
 * fault). A value other than 0 and 1 is refused at load by the schema
 * (its row is boolean: check_attrs, graph.c). */
static rlx_status infer_mod(rlx_infer_ctx *c) {
    int64_t fm = rlx_param_int(c->n, RLX_A_fmod);
    rlx_dtype dt = rlx_ictx_in(c, 0)->dtype;
    if (fm == 0 && rlx_dtype_is_float(dt))
        return rlx_ictx_fail(c, "fmod must be 1 for floating-point inputs (input has dtype %s)", rlx_dtype_name(dt));
    return rlx_infer_broadcast(c);
}

/* Where(cond, x, y): broadcast of three, dtype of x. */
static rlx_status infer_where(rlx_infer_ctx *c) {
    if (rlx_ictx_in(c, 0)->dtype != RLX_DTYPE_BOOL)
        return rlx_ictx_fail(c, "condition must be bool, got %s", rlx_dtype_name(rlx_ictx_in(c, 0)->dtype));
    /* X and Y of one type (ONNX T): the kernel read Y's elements as X's type
     * (an i64 Y under an f32 X gave denormals, a u8 Y under an i64 X was
     * read past its end) */
    const rlx_value *x = rlx_ictx_in(c, 1), *y = rlx_ictx_in(c, 2);
    if (x->dtype != y->dtype && x->dtype != RLX_DTYPE_UNDEFINED && y->dtype != RLX_DTYPE_UNDEFINED)
        return rlx_ictx_fail(c, "X '%s' has dtype %s and Y '%s' has %s; they must match", x->name,
                             rlx_dtype_name(x->dtype), y->name, rlx_dtype_name(y->dtype));
    return broadcast_all(c, rlx_ictx_in(c, 1)->dtype, 0, 0);
}

static rlx_status infer_not(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    if (x->dtype != RLX_DTYPE_BOOL) return rlx_ictx_fail(c, "input must be bool, got %s", rlx_dtype_name(x->dtype));
    return rlx_ictx_set_out_like(c, 0, x);
}

/* IsNaN, IsInf: same shape, bool output, float input. */
static rlx_status infer_is_class(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    if (!rlx_dtype_is_float(x->dtype))
        return rlx_ictx_fail(c, "input has dtype %s, expected a float type", rlx_dtype_name(x->dtype));
    return rlx_ictx_set_out(c, 0, RLX_DTYPE_BOOL, x->rank, x->dims, x->syms);
}

/* Bitwise ops and BitShift: integer inputs only. */
static rlx_status infer_bitwise(rlx_infer_ctx *c) {
    for (int i = 0; i < c->n->n_in; i++) {
        const rlx_value *x = rlx_ictx_in(c, i);
        if (x && !rlx_dtype_is_int(x->dtype))
            return rlx_ictx_fail(c, "input %d has dtype %s, expected an integer type", i, rlx_dtype_name(x->dtype));
    }
    return c->n->n_in == 1 ? rlx_infer_same_as_input0(c) : rlx_infer_broadcast(c);
}

static rlx_status infer_cast(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    int64_t to = rlx_param_int(c->n, RLX_A_to);
    if (rlx_dtype_size((rlx_dtype)to) == 0)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: cast to dtype %lld (%s) is not supported", rlx_node_desc(c->n),
                        (long long)to, rlx_onnx_type_name(to >= INT32_MIN && to <= INT32_MAX ? (int32_t)to : -1));
    return rlx_ictx_set_out(c, 0, (rlx_dtype)to, x->rank, x->dims, x->syms);
}

static rlx_status infer_castlike(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0), *like = rlx_ictx_in(c, 1);
    return rlx_ictx_set_out(c, 0, like->dtype, x->rank, x->dims, x->syms);
}

/* Sum, Max, Min, Mean: numpy broadcast of every input, all of one dtype.
 * ONNX's T is floats for Sum and Mean, floats for Max and Min before
 * version 12 and every integer type from 12. Integer Sum (at any version)
 * and integer Max/Min (before 12 too) are taken: the CPU kernel computes
 * them exactly (a sum wraps as Add's does; uint64 compares unsigned), the
 * same at every version. Refused: integer Mean (the kernel's sum wraps
 * before the division, which is then truncated: no mean; onnxruntime has no
 * integer Mean either) and bool for all four (Sum gave OR). Before
 * version 8 the inputs have one shape: broadcasting came with Sum-8,
 * Max-8, ... (onnxruntime refuses Max-6 of [2, 3] and [3]; rlx broadcast
 * them); a dim known on both sides that differs fails the load, or the plan
 * for the fed shapes. */
static rlx_status infer_variadic(rlx_infer_ctx *c) {
    bool mean = c->n->op == RLX_OP_Mean;
    for (int i = 0; i < c->n->n_in; i++) {
        const rlx_value *x = rlx_ictx_in(c, i);
        if (x && !rlx_dtype_is_float(x->dtype) && (mean || !rlx_dtype_is_int(x->dtype)))
            return rlx_ictx_fail(c, "input '%s' has dtype %s, expected %s", x->name, rlx_dtype_name(x->dtype),
                                 mean ? "a float type (ONNX Mean takes f32, f16, bf16 or f64)"
                                      : "a float or integer type");
    }
    if (c->n->version < 8) RLX_TRY(one_shape(c, 8, ""));
    return rlx_infer_broadcast(c);
}

/* Row shapes of ops_elementwise.def. */
#define UNARY(...) \
    .versions = { __VA_ARGS__ }, .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1, .infer = rlx_infer_unary_float
#define UNARY_ANY(...) \
    .versions = { __VA_ARGS__ }, .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1, .infer = rlx_infer_same_as_input0
#define BINARY(fn, ...) .versions = { __VA_ARGS__ }, .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1, .infer = fn
#define VARIADIC(...) \
    .versions = { __VA_ARGS__ }, .min_in = 1, .max_in = -1, .min_out = 1, .max_out = 1, .infer = infer_variadic

const rlx_op_def rlx_ops_elementwise[] = {
#include "ir/ops/ops_elementwise.def"
};
const size_t rlx_ops_elementwise_count = RLX_ARRAY_LEN(rlx_ops_elementwise);
