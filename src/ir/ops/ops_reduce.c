/* Reduction ops: Reduce*, ArgMax/ArgMin, the normalisations that reduce
 * (Instance-, Layer-, Group-, Lp-, MeanVariance-, RMS-Normalization, LRN)
 * and Einsum. Versions are the ONNX since-versions of each operator; the
 * axes and equations are resolved in reduce_geom.c. */
#include <string.h>

#include "base/tensor.h"
#include "ir/ops/ops.h"
#include "ir/ops/reduce_geom.h"

static bool is_numeric(rlx_dtype dt) { return rlx_dtype_is_float(dt) || rlx_dtype_is_int(dt); }

static rlx_status need_float(rlx_infer_ctx *c, const rlx_value *x) {
    if (!rlx_dtype_is_float(x->dtype))
        return rlx_ictx_fail(c, "input '%s' has dtype %s, expected a float type", x->name, rlx_dtype_name(x->dtype));
    return RLX_OK;
}

/* ------------------------------------------------------------ Reduce* */

/* Reduce*: axes from the 'axes' attribute (ReduceSum < 13, others < 18) or
 * from optional input 1. With constant (or absent) axes the output shape is
 * exact; with axes computed at run time the dims are dynamic, the rank known
 * when keepdims = 1 or when the axes input has one value (a longer list
 * may give an axis twice, which counts once). */
static rlx_status infer_reduce(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    bool minmax = c->n->op == RLX_OP_ReduceMax || c->n->op == RLX_OP_ReduceMin;
    if (!is_numeric(x->dtype) && !(minmax && x->dtype == RLX_DTYPE_BOOL))
        return rlx_ictx_fail(c, "input '%s' has dtype %s, expected a numeric type%s", x->name,
                             rlx_dtype_name(x->dtype), minmax ? " or bool" : "");
    int64_t axes[RLX_REDUCE_MAX_AXES];
    size_t na = 0;
    bool known = true;
    const rlx_value *a = NULL;
    if (rlx_reduce_axes_are_input(c->n)) { /* an axes attribute was refused when the node was added */
        a = rlx_ictx_in(c, 1);
        if (a) {
            if (!rlx_dtype_is_int(a->dtype))
                return rlx_ictx_fail(c, "axes input '%s' has dtype %s, expected int64", a->name,
                                     rlx_dtype_name(a->dtype));
            /* a 1-D list (onnxruntime refuses a scalar too: "An axes tensor must be a vector tensor") */
            RLX_TRY(rlx_ictx_operand_rank(c, 1, "axes", RLX_RANK_1D));
            if (a->konst) {
                if (!rlx_konst_ints(a, axes, RLX_ARRAY_LEN(axes), &na))
                    return rlx_ictx_fail(c, "axes input '%s' has more than %zu values", a->name, RLX_ARRAY_LEN(axes));
            } else {
                known = false;
            }
        }
    } else {
        if (c->n->n_in > 1 && c->n->in[1] >= 0)
            return rlx_ictx_fail(c, "has an axes input, but before version %d axes are an attribute",
                                 c->n->op == RLX_OP_ReduceSum ? 13 : 18);
        const int64_t *at = rlx_param_ints(c->n, RLX_A_axes, &na);
        if (na > RLX_ARRAY_LEN(axes)) return rlx_ictx_fail(c, "attribute 'axes' has %zu values", na);
        if (na) memcpy(axes, at, na * sizeof *axes);
    }
    if (x->rank < 0) return rlx_ictx_set_out_unknown(c, 0, x->dtype);
    int64_t dims[RLX_MAX_RANK];
    int32_t syms[RLX_MAX_RANK];
    if (!known) {
        bool keepdims = rlx_param_int(c->n, RLX_A_keepdims) != 0;
        int rank = -1;
        if (keepdims) {
            rank = x->rank;
        } else if (a->rank == 1 && a->dims[0] == 1 && x->rank > 0) {
            rank = x->rank - 1; /* (longer lists may repeat an axis: the rank is the run's) */
        }
        if (rank < 0) return rlx_ictx_set_out_unknown(c, 0, x->dtype);
        for (int i = 0; i < rank; i++) {
            dims[i] = (keepdims && x->dims[i] == 1) ? 1 : RLX_DIM_DYN;
            syms[i] = -1;
        }
        return rlx_ictx_set_out(c, 0, x->dtype, rank, dims, syms);
    }
    /* axes fed at run time (eager evaluation) are the caller's error */
    rlx_status bad = (a && (a->flags & RLX_VALUE_INPUT)) ? RLX_ERR_INVALID_ARGUMENT : RLX_ERR_INVALID_MODEL;
    rlx_reduce_spec r;
    RLX_TRY(rlx_reduce_resolve(c->n, x->rank, axes, na, bad, &r));
    int rank = rlx_reduce_out_shape(&r, x->dims, x->syms, dims, syms);
    return rlx_ictx_set_out(c, 0, x->dtype, rank, dims, syms);
}

/* ArgMax/ArgMin: one axis, output int64. */
static rlx_status infer_arg(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    if (!is_numeric(x->dtype))
        return rlx_ictx_fail(c, "input '%s' has dtype %s, expected a numeric type", x->name, rlx_dtype_name(x->dtype));
    if (x->rank < 0) return rlx_ictx_set_out_unknown(c, 0, RLX_DTYPE_I64);
    int64_t axis = rlx_param_int(c->n, RLX_A_axis);
    int ax;
    if (!rlx_norm_axis(axis, x->rank, &ax))
        return rlx_ictx_fail(c, "axis %lld is out of range for an input of rank %d", (long long)axis, x->rank);
    rlx_reduce_spec r = { .rank = x->rank, .n_axes = 1, .keepdims = rlx_param_int(c->n, RLX_A_keepdims) != 0 };
    r.axis[ax] = true;
    int64_t dims[RLX_MAX_RANK];
    int32_t syms[RLX_MAX_RANK];
    int rank = rlx_reduce_out_shape(&r, x->dims, x->syms, dims, syms);
    return rlx_ictx_set_out(c, 0, RLX_DTYPE_I64, rank, dims, syms);
}

/* ------------------------------------------------------------ normalisations */

/* A per-channel parameter (1-D, length `want`, dtype of x) when static. */
static rlx_status check_vec(rlx_infer_ctx *c, const rlx_value *x, const rlx_value *p, int64_t want, const char *what) {
    if (p->dtype != x->dtype)
        return rlx_ictx_fail(c, "%s '%s' has dtype %s, the input has %s", what, p->name, rlx_dtype_name(p->dtype),
                             rlx_dtype_name(x->dtype));
    if (p->rank >= 0 && p->rank != 1)
        return rlx_ictx_fail(c, "%s '%s' has rank %d, expected 1", what, p->name, p->rank);
    if (p->rank == 1 && p->dims[0] >= 0 && want >= 0 && p->dims[0] != want)
        return rlx_ictx_fail(c, "%s '%s' has %lld elements, expected %lld", what, p->name, (long long)p->dims[0],
                             (long long)want);
    return RLX_OK;
}

/* A parameter that must broadcast unidirectionally to x (LayerNormalization
 * and RMSNormalization Scale and B). */
static rlx_status check_unidir(rlx_infer_ctx *c, const rlx_value *x, const rlx_value *p, const char *what) {
    if (p->dtype != x->dtype)
        return rlx_ictx_fail(c, "%s '%s' has dtype %s, the input has %s", what, p->name, rlx_dtype_name(p->dtype),
                             rlx_dtype_name(x->dtype));
    if (p->rank < 0 || x->rank < 0) return RLX_OK;
    char a[96], b[96];
    bool ok = p->rank <= x->rank;
    for (int i = 0; ok && i < p->rank; i++) {
        int64_t pd = p->dims[i], xd = x->dims[x->rank - p->rank + i];
        if (pd >= 0 && xd >= 0 && pd != 1 && pd != xd) ok = false;
    }
    if (!ok)
        return rlx_ictx_fail(c, "%s '%s' of shape %s does not broadcast to the input shape %s", what, p->name,
                             rlx_shape_str(p->dims, p->rank, a, sizeof a),
                             rlx_shape_str(x->dims, x->rank, b, sizeof b));
    return RLX_OK;
}

/* InstanceNormalization(input [N, C, D...], scale [C], B [C]). */
static rlx_status infer_instance_norm(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    RLX_TRY(need_float(c, x));
    if (x->rank >= 0 && x->rank < 2)
        return rlx_ictx_fail(c, "input '%s' has rank %d, expected [N, C, ...]", x->name, x->rank);
    int64_t ch = x->rank >= 2 ? x->dims[1] : RLX_DIM_DYN;
    RLX_TRY(check_vec(c, x, rlx_ictx_in(c, 1), ch, "scale"));
    RLX_TRY(check_vec(c, x, rlx_ictx_in(c, 2), ch, "B"));
    return rlx_ictx_set_out_like(c, 0, x);
}

/* stash_type as a dtype (LayerNormalization-17, GroupNormalization-21,
 * RMSNormalization-23): default 1 (float). */
static rlx_status stash_dtype(rlx_infer_ctx *c, rlx_dtype *out) {
    int64_t st = rlx_param_int(c->n, RLX_A_stash_type);
    if (!rlx_dtype_is_float((rlx_dtype)st))
        return rlx_ictx_fail(c, "stash_type %lld is not a float type", (long long)st);
    *out = (rlx_dtype)st;
    return RLX_OK;
}

/* LayerNormalization-17 (X, Scale, B?) -> (Y, Mean?, InvStdDev?); RMSNormalization-23 (X, scale) -> Y.
 * Mean and InvStdDev: [d0, ..., d(axis-1), 1, ..., 1] of the stash type. */
static rlx_status infer_layer_norm(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    RLX_TRY(need_float(c, x));
    rlx_dtype st = RLX_DTYPE_F32;
    RLX_TRY(stash_dtype(c, &st));
    RLX_TRY(check_unidir(c, x, rlx_ictx_in(c, 1), "Scale"));
    if (rlx_ictx_in(c, 2)) RLX_TRY(check_unidir(c, x, rlx_ictx_in(c, 2), "B"));
    rlx_ictx_set_out_like(c, 0, x);
    if (x->rank < 0) {
        rlx_ictx_set_out_unknown(c, 1, st);
        return rlx_ictx_set_out_unknown(c, 2, st);
    }
    int64_t axis = rlx_param_int(c->n, RLX_A_axis);
    int ax;
    if (!rlx_norm_axis(axis, x->rank, &ax))
        return rlx_ictx_fail(c, "axis %lld is out of range for an input of rank %d", (long long)axis, x->rank);
    int64_t dims[RLX_MAX_RANK];
    int32_t syms[RLX_MAX_RANK];
    for (int i = 0; i < x->rank; i++) {
        dims[i] = i < ax ? x->dims[i] : 1;
        syms[i] = i < ax ? x->syms[i] : -1;
    }
    rlx_ictx_set_out(c, 1, st, x->rank, dims, syms);
    return rlx_ictx_set_out(c, 2, st, x->rank, dims, syms);
}

/* GroupNormalization(X [N, C, D...], scale, bias): scale and bias are
 * [num_groups] at version 18 and [C] from version 21. */
static rlx_status infer_group_norm(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    RLX_TRY(need_float(c, x));
    rlx_dtype st = RLX_DTYPE_F32;
    RLX_TRY(stash_dtype(c, &st));
    int64_t g = rlx_param_int(c->n, RLX_A_num_groups);
    if (g <= 0) return rlx_ictx_fail(c, "num_groups is %lld, expected a positive number", (long long)g);
    if (x->rank >= 0 && x->rank < 2)
        return rlx_ictx_fail(c, "input '%s' has rank %d, expected [N, C, ...]", x->name, x->rank);
    int64_t ch = x->rank >= 2 ? x->dims[1] : RLX_DIM_DYN;
    if (ch >= 0 && ch % g != 0)
        return rlx_ictx_fail(c, "num_groups %lld does not divide the %lld channels", (long long)g, (long long)ch);
    int64_t want = c->n->version >= 21 ? ch : g;
    RLX_TRY(check_vec(c, x, rlx_ictx_in(c, 1), want, "scale"));
    RLX_TRY(check_vec(c, x, rlx_ictx_in(c, 2), want, "bias"));
    return rlx_ictx_set_out_like(c, 0, x);
}

static rlx_status infer_lp_norm(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    RLX_TRY(need_float(c, x));
    int64_t p = rlx_param_int(c->n, RLX_A_p);
    if (p != 1 && p != 2) return rlx_ictx_fail(c, "p is %lld; only 1 and 2 are defined", (long long)p);
    int64_t axis = rlx_param_int(c->n, RLX_A_axis);
    int ax;
    if (x->rank >= 0 && !rlx_norm_axis(axis, x->rank, &ax))
        return rlx_ictx_fail(c, "axis %lld is out of range for an input of rank %d", (long long)axis, x->rank);
    return rlx_ictx_set_out_like(c, 0, x);
}

static rlx_status infer_mvn(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    RLX_TRY(need_float(c, x));
    rlx_reduce_spec r;
    if (x->rank >= 0) RLX_TRY(rlx_mvn_resolve(c->n, x->rank, RLX_ERR_INVALID_MODEL, &r));
    return rlx_ictx_set_out_like(c, 0, x);
}

static rlx_status infer_lrn(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    RLX_TRY(need_float(c, x));
    int64_t size = rlx_param_int(c->n, RLX_A_size);
    if (size <= 0) return rlx_ictx_fail(c, "size is %lld, expected a positive number", (long long)size);
    if (x->rank >= 0 && x->rank < 2)
        return rlx_ictx_fail(c, "input '%s' has rank %d, expected [N, C, ...]", x->name, x->rank);
    return rlx_ictx_set_out_like(c, 0, x);
}

/* ------------------------------------------------------------ Einsum */

static rlx_status infer_einsum(rlx_infer_ctx *c) {
    int n_in = c->n->n_in;
    if (n_in > RLX_EINSUM_MAX_INPUTS)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: Einsum with %d operands (supported: 1 to %d)", rlx_node_desc(c->n),
                        n_in, RLX_EINSUM_MAX_INPUTS);
    int ranks[RLX_EINSUM_MAX_INPUTS];
    const int64_t *dims[RLX_EINSUM_MAX_INPUTS];
    const int32_t *syms[RLX_EINSUM_MAX_INPUTS];
    const rlx_value *x0 = rlx_ictx_in(c, 0);
    bool unknown = false;
    for (int i = 0; i < n_in; i++) {
        const rlx_value *x = rlx_ictx_in(c, i);
        if (!x) return rlx_ictx_fail(c, "input %d is omitted; Einsum operands cannot be", i);
        if (!is_numeric(x->dtype))
            return rlx_ictx_fail(c, "input '%s' has dtype %s, expected a numeric type", x->name,
                                 rlx_dtype_name(x->dtype));
        if (x->dtype != x0->dtype)
            return rlx_ictx_fail(c, "inputs have different dtypes (%s and %s)", rlx_dtype_name(x0->dtype),
                                 rlx_dtype_name(x->dtype));
        ranks[i] = x->rank;
        dims[i] = x->dims;
        syms[i] = x->syms;
        unknown |= x->rank < 0;
    }
    if (unknown) return rlx_ictx_set_out_unknown(c, 0, x0->dtype);
    rlx_einsum e;
    RLX_TRY(rlx_einsum_resolve(c->n, n_in, ranks, dims, syms, RLX_ERR_INVALID_MODEL, &e));
    int64_t od[RLX_MAX_RANK];
    int32_t os[RLX_MAX_RANK];
    for (int i = 0; i < e.out_rank; i++) {
        od[i] = e.extent[e.out_label[i]];
        os[i] = e.sym[e.out_label[i]];
    }
    return rlx_ictx_set_out(c, 0, x0->dtype, e.out_rank, od, os);
}

/* ------------------------------------------------------------ the table */

/* axes became input 1 at version `to_input` (13 for ReduceSum, 18 for the
 * others), when noop_with_empty_axes came */
#define REDUCE_ATTRS(to_input) \
    RLX_ATTR_TO_INPUT("axes", RLX_ATTR_INTS, to_input), RLX_ATTR_DEF_BOOL("keepdims", 1), \
    RLX_ATTR_DEF_BOOL_SINCE("noop_with_empty_axes", 0, to_input)
#define REDUCE(to_input, ...)                                                                                      \
    .versions = { __VA_ARGS__ }, .min_in = 1, .max_in = 2, .min_out = 1, .max_out = 1, .infer = infer_reduce, \
    .attrs = { REDUCE_ATTRS(to_input) }
#define ARG                                                                                                     \
    .versions = { 1, 11, 12, 13 }, .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1, .infer = infer_arg,  \
    .attrs = { RLX_ATTR_DEF_INT("axis", 0), RLX_ATTR_DEF_BOOL("keepdims", 1),                                  \
               RLX_ATTR_DEF_BOOL_SINCE("select_last_index", 0, 12) }

const rlx_op_def rlx_ops_reduce[] = {
#include "ir/ops/ops_reduce.def"
};
const size_t rlx_ops_reduce_count = RLX_ARRAY_LEN(rlx_ops_reduce);
