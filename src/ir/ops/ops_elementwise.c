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
    rlx_ictx_set_out_like(c, 0, rlx_ictx_in(c, 0));
    return RLX_OK;
}

rlx_status rlx_infer_unary_float(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    if (!rlx_dtype_is_float(x->dtype))
        return rlx_ictx_fail(c, "input '%s' has dtype %s, expected a float type", x->name, rlx_dtype_name(x->dtype));
    rlx_ictx_set_out_like(c, 0, x);
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
        if (x->rank < 0) {
            rlx_ictx_set_out_unknown(c, 0, dt);
            return RLX_OK;
        }
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
    rlx_ictx_set_out(c, 0, dt, rank, dims, syms);
    return RLX_OK;
}

/* Before version 7, binary ops broadcast only with broadcast=1, B lining
 * up with A from `axis` (passes/legacy.c rewrites that into numpy form);
 * PRelu-6's slope applies per channel. The output has A's shape. */
static bool legacy_same_as_a(const rlx_infer_ctx *c) {
    if (c->n->version >= 7 || c->n->n_in != 2) return false;
    return rlx_attr_int(c->n, "broadcast", 0) != 0 || strcmp(c->n->op_type, "PRelu") == 0;
}

static rlx_status legacy_out(rlx_infer_ctx *c, rlx_dtype dt) {
    const rlx_value *a = rlx_ictx_in(c, 0);
    rlx_ictx_set_out(c, 0, dt, a->rank, a->dims, a->syms);
    return RLX_OK;
}

rlx_status rlx_infer_broadcast(rlx_infer_ctx *c) {
    if (legacy_same_as_a(c)) return legacy_out(c, rlx_ictx_in(c, 0)->dtype);
    return broadcast_all(c, rlx_ictx_in(c, 0)->dtype, 0, 1);
}

rlx_status rlx_infer_broadcast_bool(rlx_infer_ctx *c) {
    if (legacy_same_as_a(c)) return legacy_out(c, RLX_DTYPE_BOOL);
    return broadcast_all(c, RLX_DTYPE_BOOL, 0, 1);
}

/* Pow and PRelu allow different dtypes for the exponent / slope. */
static rlx_status infer_broadcast_lhs(rlx_infer_ctx *c) {
    if (legacy_same_as_a(c)) return legacy_out(c, rlx_ictx_in(c, 0)->dtype);
    return broadcast_all(c, rlx_ictx_in(c, 0)->dtype, 0, 0);
}

/* Where(cond, x, y): broadcast of three, dtype of x. */
static rlx_status infer_where(rlx_infer_ctx *c) {
    if (rlx_ictx_in(c, 0)->dtype != RLX_DTYPE_BOOL)
        return rlx_ictx_fail(c, "condition must be bool, got %s", rlx_dtype_name(rlx_ictx_in(c, 0)->dtype));
    return broadcast_all(c, rlx_ictx_in(c, 1)->dtype, 0, 0);
}

static rlx_status infer_not(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    if (x->dtype != RLX_DTYPE_BOOL) return rlx_ictx_fail(c, "input must be bool, got %s", rlx_dtype_name(x->dtype));
    rlx_ictx_set_out_like(c, 0, x);
    return RLX_OK;
}

/* IsNaN, IsInf: same shape, bool output, float input. */
static rlx_status infer_is_class(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    if (!rlx_dtype_is_float(x->dtype))
        return rlx_ictx_fail(c, "input has dtype %s, expected a float type", rlx_dtype_name(x->dtype));
    rlx_ictx_set_out(c, 0, RLX_DTYPE_BOOL, x->rank, x->dims, x->syms);
    return RLX_OK;
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
    int64_t to = rlx_attr_int(c->n, "to", 0);
    if (rlx_dtype_size((rlx_dtype)to) == 0)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: cast to dtype %lld is not supported", rlx_node_desc(c->n),
                        (long long)to);
    rlx_ictx_set_out(c, 0, (rlx_dtype)to, x->rank, x->dims, x->syms);
    return RLX_OK;
}

static rlx_status infer_castlike(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0), *like = rlx_ictx_in(c, 1);
    rlx_ictx_set_out(c, 0, like->dtype, x->rank, x->dims, x->syms);
    return RLX_OK;
}

#define UNARY(nm, ...) \
    { .name = nm, .domain = "", .versions = { __VA_ARGS__ }, .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1, \
      .infer = rlx_infer_unary_float }
#define UNARY_ANY(nm, ...) \
    { .name = nm, .domain = "", .versions = { __VA_ARGS__ }, .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1, \
      .infer = rlx_infer_same_as_input0 }
#define BINARY(nm, fn, ...) \
    { .name = nm, .domain = "", .versions = { __VA_ARGS__ }, .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1, \
      .infer = fn }
#define VARIADIC(nm, ...) \
    { .name = nm, .domain = "", .versions = { __VA_ARGS__ }, .min_in = 1, .max_in = -1, .min_out = 1, .max_out = 1, \
      .infer = rlx_infer_broadcast }

const rlx_op_def rlx_ops_elementwise[] = {
    /* unary math */
    UNARY_ANY("Abs", 1, 6, 13),
    UNARY_ANY("Neg", 1, 6, 13),
    UNARY_ANY("Sign", 9, 13),
    { .name = "IsNaN", .domain = "", .versions = { 9, 13, 20 }, .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
      .infer = infer_is_class },
    { .name = "IsInf", .domain = "", .versions = { 10, 20 }, .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
      .infer = infer_is_class,
      .attrs = { { "detect_negative", RLX_ATTR_INT, false }, { "detect_positive", RLX_ATTR_INT, false } } },
    { .name = "BitwiseNot", .domain = "", .versions = { 18 }, .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
      .infer = infer_bitwise },
    BINARY("BitwiseAnd", infer_bitwise, 18),
    BINARY("BitwiseOr", infer_bitwise, 18),
    BINARY("BitwiseXor", infer_bitwise, 18),
    { .name = "BitShift", .domain = "", .versions = { 11 }, .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
      .infer = infer_bitwise, .attrs = { { "direction", RLX_ATTR_STRING, true } } },
    { .name = "Shrink", .domain = "", .versions = { 9 }, .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
      .infer = rlx_infer_same_as_input0,
      .attrs = { { "bias", RLX_ATTR_FLOAT, false }, { "lambd", RLX_ATTR_FLOAT, false } } },
    { .name = "Swish", .domain = "", .versions = { 24 }, .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
      .infer = rlx_infer_unary_float, .attrs = { { "alpha", RLX_ATTR_FLOAT, false } } },
    UNARY("Exp", 1, 6, 13),
    UNARY("Log", 1, 6, 13),
    UNARY("Sqrt", 1, 6, 13),
    UNARY("Reciprocal", 1, 6, 13),
    UNARY("Floor", 1, 6, 13),
    UNARY("Ceil", 1, 6, 13),
    UNARY("Round", 11, 22),
    UNARY("Erf", 9, 13),
    UNARY("Sin", 7, 22),
    UNARY("Cos", 7, 22),
    UNARY("Tan", 7, 22),
    UNARY("Asin", 7, 22),
    UNARY("Acos", 7, 22),
    UNARY("Atan", 7, 22),
    UNARY("Sinh", 9, 22),
    UNARY("Cosh", 9, 22),
    UNARY("Asinh", 9, 22),
    UNARY("Acosh", 9, 22),
    UNARY("Atanh", 9, 22),
    UNARY("Tanh", 1, 6, 13),
    /* activations */
    UNARY("Relu", 1, 6, 13, 14),
    UNARY("Sigmoid", 1, 6, 13),
    { .name = "LeakyRelu", .domain = "", .versions = { 1, 6, 16 }, .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
      .infer = rlx_infer_unary_float, .attrs = { { "alpha", RLX_ATTR_FLOAT, false } } },
    { .name = "Elu", .domain = "", .versions = { 1, 6, 22 }, .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
      .infer = rlx_infer_unary_float, .attrs = { { "alpha", RLX_ATTR_FLOAT, false } } },
    { .name = "Selu", .domain = "", .versions = { 1, 6, 22 }, .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
      .infer = rlx_infer_unary_float, .attrs = { { "alpha", RLX_ATTR_FLOAT, false }, { "gamma", RLX_ATTR_FLOAT, false } } },
    { .name = "Celu", .domain = "", .versions = { 12 }, .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
      .infer = rlx_infer_unary_float, .attrs = { { "alpha", RLX_ATTR_FLOAT, false } } },
    { .name = "ThresholdedRelu", .domain = "", .versions = { 10, 22 }, .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
      .infer = rlx_infer_unary_float, .attrs = { { "alpha", RLX_ATTR_FLOAT, false } } },
    { .name = "HardSigmoid", .domain = "", .versions = { 1, 6, 22 }, .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
      .infer = rlx_infer_unary_float, .attrs = { { "alpha", RLX_ATTR_FLOAT, false }, { "beta", RLX_ATTR_FLOAT, false } } },
    UNARY("HardSwish", 14, 22),
    UNARY("Softplus", 1, 22),
    UNARY("Softsign", 1, 22),
    UNARY("Mish", 18, 22),
    { .name = "Gelu", .domain = "", .versions = { 20 }, .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
      .infer = rlx_infer_unary_float, .attrs = { { "approximate", RLX_ATTR_STRING, false } } },
    /* Clip: attributes min/max up to version 6, optional inputs from 11 */
    { .name = "Clip", .domain = "", .versions = { 1, 6, 11, 12, 13 }, .min_in = 1, .max_in = 3, .min_out = 1, .max_out = 1,
      .infer = rlx_infer_same_as_input0,
      .attrs = { { "min", RLX_ATTR_FLOAT, false }, { "max", RLX_ATTR_FLOAT, false } } },
    BINARY("PRelu", infer_broadcast_lhs, 1, 6, 7, 9, 16),
    /* binary arithmetic, broadcasting from version 7 */
    BINARY("Add", rlx_infer_broadcast, 1, 6, 7, 13, 14),
    BINARY("Sub", rlx_infer_broadcast, 1, 6, 7, 13, 14),
    BINARY("Mul", rlx_infer_broadcast, 1, 6, 7, 13, 14),
    BINARY("Div", rlx_infer_broadcast, 1, 6, 7, 13, 14),
    BINARY("Pow", infer_broadcast_lhs, 1, 7, 12, 13, 15),
    { .name = "Mod", .domain = "", .versions = { 10, 13 }, .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
      .infer = rlx_infer_broadcast, .attrs = { { "fmod", RLX_ATTR_INT, false } } },
    VARIADIC("Max", 1, 6, 8, 12, 13),
    VARIADIC("Min", 1, 6, 8, 12, 13),
    VARIADIC("Sum", 1, 6, 8, 13),
    VARIADIC("Mean", 1, 6, 8, 13),
    /* comparisons and logic */
    BINARY("Equal", rlx_infer_broadcast_bool, 1, 7, 11, 13, 19),
    BINARY("Less", rlx_infer_broadcast_bool, 1, 7, 9, 13),
    BINARY("Greater", rlx_infer_broadcast_bool, 1, 7, 9, 13),
    BINARY("LessOrEqual", rlx_infer_broadcast_bool, 12, 16),
    BINARY("GreaterOrEqual", rlx_infer_broadcast_bool, 12, 16),
    BINARY("And", rlx_infer_broadcast_bool, 1, 7),
    BINARY("Or", rlx_infer_broadcast_bool, 1, 7),
    BINARY("Xor", rlx_infer_broadcast_bool, 1, 7),
    { .name = "Not", .domain = "", .versions = { 1 }, .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
      .infer = infer_not },
    { .name = "Where", .domain = "", .versions = { 9, 16 }, .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
      .infer = infer_where },
    { .name = "Cast", .domain = "", .versions = { 1, 6, 9, 13, 19, 21 }, .min_in = 1, .max_in = 1, .min_out = 1,
      .max_out = 1, .infer = infer_cast,
      .attrs = { { "to", RLX_ATTR_INT, true }, { "saturate", RLX_ATTR_INT, false } } },
    { .name = "CastLike", .domain = "", .versions = { 15, 19, 21 }, .min_in = 2, .max_in = 2, .min_out = 1,
      .max_out = 1, .infer = infer_castlike, .attrs = { { "saturate", RLX_ATTR_INT, false } } },
};
const size_t rlx_ops_elementwise_count = RLX_ARRAY_LEN(rlx_ops_elementwise);
