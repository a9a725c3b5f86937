/* Tensor ops: shaping (Reshape, Flatten, Transpose, Squeeze, Unsqueeze,
 * Expand, Tile, DepthToSpace, SpaceToDepth), joining and cutting (Concat,
 * Split, Slice, Pad, Compress), indexing (Gather*, Scatter*, OneHot, TopK,
 * NonZero, Unique), shape arithmetic (Shape, Size, Range, ConstantOfShape),
 * position-wise ops (Trilu, EyeLike, CumSum, ReverseSequence), Constant and
 * Identity.
 *
 * Versions are the ONNX since-versions of each operator reachable from
 * opset 7 (the lowest rlx imports): Reshape-1, Concat-1, Pad-1, Tile-1 and
 * Split-1 are left out, as no node can have them. The versions from 21 on
 * (21, 23, 24, 25) only add element types, except Range-27 (stash_type).
 *
 * Shape inference here carries the shape subgraphs of exported models
 * (Shape -> Gather -> Unsqueeze -> Concat -> Reshape): where an output shape
 * depends on an input's values, those values are read with rlx_konst_ints
 * when constant (then the shape is exact and static), else the dims are
 * left dynamic. Symbols pass through where the op keeps a dim unchanged. */
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "base/tensor.h"
#include "ir/ops/ops.h"
#include "ir/ops/tensor_geom.h"

/* ------------------------------------------------------------ helpers */

/* A shape being built: rank, dims, symbols. */
typedef struct shp {
    int rank;
    int64_t d[RLX_MAX_RANK];
    int32_t s[RLX_MAX_RANK];
} shp;

static void shp_dyn(shp *o, int rank) {
    o->rank = rank;
    for (int i = 0; i < RLX_MAX_RANK; i++) o->d[i] = RLX_DIM_DYN, o->s[i] = -1;
}

static void shp_from(shp *o, const rlx_value *v) {
    o->rank = v->rank;
    memcpy(o->d, v->dims, sizeof o->d);
    memcpy(o->s, v->syms, sizeof o->s);
}

/* Sets output i; symbols are dropped on static dims. Returns RLX_OK. */
static rlx_status set_out_shp(rlx_infer_ctx *c, int i, rlx_dtype dt, shp *o) {
    for (int k = 0; k < o->rank && k < RLX_MAX_RANK; k++)
        if (o->d[k] >= 0) o->s[k] = -1;
    return rlx_ictx_set_out(c, i, dt, o->rank, o->d, o->s);
}

/* Sets output 0 to dtype dt with `rank` dynamic dims (-1: rank unknown);
 * returns RLX_OK (the early exits of inference that knows no more). */
static rlx_status out_dyn(rlx_infer_ctx *c, rlx_dtype dt, int rank) {
    shp o;
    shp_dyn(&o, rank);
    return set_out_shp(c, 0, dt, &o);
}

static rlx_status fail_rank(rlx_infer_ctx *c, int64_t rank) {
    return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: output rank %lld is above the maximum %d", rlx_node_desc(c->n),
                    (long long)rank, RLX_MAX_RANK);
}

static bool is_index_dtype(rlx_dtype dt) { return dt == RLX_DTYPE_I32 || dt == RLX_DTYPE_I64; }

static rlx_status need_index(rlx_infer_ctx *c, int i, const char *what) {
    const rlx_value *v = rlx_ictx_in(c, i);
    if (v && !is_index_dtype(v->dtype))
        return rlx_ictx_fail(c, "%s '%s' has dtype %s, expected i32 or i64", what, v->name, rlx_dtype_name(v->dtype));
    return RLX_OK;
}

/* Values of integer input i when it is constant. *known is false when the
 * input is absent or not constant (and *cnt then 0).
 * errors: a rank that `ranks` (RLX_RANK_* bits: what the op's spec allows,
 * checked whether or not the values are known), not an integer tensor, or
 * more than cap values. */
static rlx_status in_ints(rlx_infer_ctx *c, int i, const char *what, unsigned ranks, int64_t *buf, size_t cap,
                          size_t *cnt, bool *known) {
    *cnt = 0;
    *known = false;
    RLX_TRY(rlx_ictx_operand_rank(c, i, what, ranks));
    const rlx_value *v = rlx_ictx_in(c, i);
    if (!v || !v->konst) return RLX_OK;
    if (!rlx_dtype_is_int(v->konst->dtype))
        return rlx_ictx_fail(c, "%s '%s' has dtype %s, expected an integer type", what, v->name,
                             rlx_dtype_name(v->konst->dtype));
    size_t n = rlx_tensor_numel(v->konst);
    if (n > cap) return rlx_ictx_fail(c, "%s '%s' has %zu values, at most %zu make sense here", what, v->name, n, cap);
    rlx_konst_ints(v, buf, cap, cnt);
    *known = true;
    return RLX_OK;
}

/* Element count of input i when it is a 1-D value of static length, else -1. */
static int64_t in_len(rlx_infer_ctx *c, int i) {
    const rlx_value *v = rlx_ictx_in(c, i);
    if (!v) return -1;
    if (v->rank == 0) return 1;
    if (v->rank == 1 && v->dims[0] >= 0) return v->dims[0];
    return -1;
}

/* The 1-D "shape" input i of Reshape, Expand and ConstantOfShape: i32 or
 * i64, rank 1, at most RLX_MAX_RANK values (an output rank above the
 * maximum otherwise); its values when constant (in_ints). */
static rlx_status shape_in(rlx_infer_ctx *c, int i, int64_t *sh, size_t *r, bool *known) {
    RLX_TRY(need_index(c, i, "shape"));
    RLX_TRY(rlx_ictx_operand_rank(c, i, "shape", RLX_RANK_1D));
    const rlx_value *sv = rlx_ictx_in(c, i);
    if (sv->konst && rlx_tensor_numel(sv->konst) > RLX_MAX_RANK) return fail_rank(c, (int64_t)rlx_tensor_numel(sv->konst));
    return in_ints(c, i, "shape", RLX_RANK_1D, sh, RLX_MAX_RANK, r, known);
}

/* Product of dims [lo, hi) of x as a dim: static when all are, else dynamic;
 * false when the static ones overflow int64;
 * the symbol survives when one symbolic dim times static 1s. */
static bool dims_product(const rlx_value *x, int lo, int hi, int64_t *d, int32_t *s) {
    int64_t p = 1;
    int n_dyn = 0;
    int32_t sym = -1;
    bool ovf = false;
    for (int i = lo; i < hi; i++) {
        if (x->dims[i] < 0) {
            n_dyn++;
            sym = x->syms[i];
        } else if (!rlx_dim_mul(p, x->dims[i], &p)) {
            ovf = true;
        }
    }
    if (n_dyn == 0 && !ovf) {
        *d = p, *s = -1;
        return true;
    }
    *d = RLX_DIM_DYN;
    *s = (n_dyn == 1 && p == 1 && !ovf) ? sym : -1;
    return !ovf;
}

/* Node-level error with an explicit status (UNSUPPORTED, ...). */
static rlx_status fail_st(const rlx_infer_ctx *c, rlx_status st, const char *fmt, ...) RLX_PRINTF(3, 4);
static rlx_status fail_st(const rlx_infer_ctx *c, rlx_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    st = rlx_node_vfail(c->n, st, fmt, ap);
    va_end(ap);
    return st;
}

/* ------------------------------------------------------------ Reshape */

/* Reshape-5/13/14/19/21: shape input; 0 copies the input dim at that
 * position (unless allowzero = 1, from 14), one -1 is inferred. The -1 is
 * exact whenever the dynamic dims of both sides cancel (same symbol, or
 * the same input dim copied by a 0). */
static rlx_status infer_reshape(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0), *sv = rlx_ictx_in(c, 1);
    bool allowzero = c->n->version >= 14 && rlx_param_int(c->n, RLX_A_allowzero) != 0;
    int64_t sh[RLX_MAX_RANK];
    size_t r = 0;
    bool known;
    RLX_TRY(shape_in(c, 1, sh, &r, &known));
    /* an empty shape tensor is known without its values: a scalar */
    if (!known && in_len(c, 1) == 0 && sv->rank == 1) known = true, r = 0;
    shp o;
    if (!known) {
        int64_t len = in_len(c, 1);
        if (len > RLX_MAX_RANK) return fail_rank(c, len);
        return out_dyn(c, x->dtype, len >= 0 ? (int)len : -1);
    }
    shp_dyn(&o, (int)r);
    int neg = -1, src[RLX_MAX_RANK];
    bool has_zero = false, unknown = false;
    for (int i = 0; i < (int)r; i++) {
        src[i] = -1;
        if (sh[i] == -1) {
            if (neg >= 0) return rlx_ictx_fail_from(c, 1u << 1, "shape has more than one -1");
            neg = i;
        } else if (sh[i] < -1) {
            return rlx_ictx_fail_from(c, 1u << 1, "shape[%d] = %lld is negative", i, (long long)sh[i]);
        } else if (sh[i] == 0 && !allowzero) {
            if (x->rank < 0) {
                unknown = true;
                continue;
            }
            if (i >= x->rank)
                return rlx_ictx_fail(c, "shape[%d] = 0 copies input dim %d, but the input has rank %d", i, i, x->rank);
            o.d[i] = x->dims[i];
            o.s[i] = x->syms[i];
            src[i] = i;
        } else {
            has_zero |= sh[i] == 0;
            o.d[i] = sh[i];
        }
    }
    if (allowzero && has_zero && neg >= 0)
        return rlx_ictx_fail(c, "shape has both 0 and -1 while allowzero = 1");
    char a[128], b[128];
    if (x->rank >= 0 && !unknown) {
        /* cancel the dynamic dims that appear on both sides */
        int32_t in_ids[RLX_MAX_RANK], out_ids[RLX_MAX_RANK];
        int n_in = 0, n_outd = 0;
        int64_t in_static = 1, out_static = 1;
        bool ovf = false;
        for (int j = 0; j < x->rank; j++) {
            if (x->dims[j] < 0) in_ids[n_in++] = x->syms[j] >= 0 ? x->syms[j] : 100000 + j;
            else ovf |= !rlx_dim_mul(in_static, x->dims[j], &in_static);
        }
        for (int i = 0; i < (int)r; i++) {
            if (i == neg) continue;
            if (o.d[i] < 0) out_ids[n_outd++] = o.s[i] >= 0 ? o.s[i] : 100000 + src[i];
            else ovf |= !rlx_dim_mul(out_static, o.d[i], &out_static);
        }
        for (int i = 0; i < n_outd; i++)
            for (int j = 0; j < n_in; j++)
                if (in_ids[j] == out_ids[i]) {
                    in_ids[j] = in_ids[--n_in];
                    out_ids[i--] = out_ids[--n_outd];
                    break;
                }
        if (ovf) return rlx_ictx_fail(c, "shape is too large");
        if (n_in == 0 && n_outd == 0) {
            if (neg >= 0) {
                if (out_static == 0 || in_static % out_static != 0)
                    return rlx_ictx_fail(c, "cannot reshape %s to %s: the -1 dim cannot be inferred",
                                         rlx_shape_str(x->dims, x->rank, a, sizeof a),
                                         rlx_shape_str(sh, (int)r, b, sizeof b));
                o.d[neg] = in_static / out_static;
            } else if (in_static != out_static) {
                return rlx_ictx_fail(c, "cannot reshape %s (%lld elements) to %s (%lld elements)",
                                     rlx_shape_str(x->dims, x->rank, a, sizeof a), (long long)in_static,
                                     rlx_shape_str(o.d, (int)r, b, sizeof b), (long long)out_static);
            }
        } else if (neg >= 0 && n_in == 1 && n_outd == 0 && in_static == out_static) {
            o.s[neg] = in_ids[0] < 100000 ? in_ids[0] : -1; /* the one dynamic input dim moves to the -1 */
        }
    }
    return set_out_shp(c, 0, x->dtype, &o);
}

/* Flatten-1/9/11/13/21: axis in [-r, r] (negative from 11), output 2-D. */
static rlx_status infer_flatten(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    int64_t axis = rlx_param_int(c->n, RLX_A_axis);
    shp o;
    shp_dyn(&o, 2);
    if (x->rank >= 0) {
        if (axis < -(int64_t)x->rank || axis > x->rank)
            return rlx_ictx_fail(c, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
        int ax = (int)(axis < 0 ? axis + x->rank : axis);
        if (!dims_product(x, 0, ax, &o.d[0], &o.s[0]) || !dims_product(x, ax, x->rank, &o.d[1], &o.s[1]))
            return rlx_ictx_fail(c, "output is too large (a product of input dims overflows int64)");
    }
    return set_out_shp(c, 0, x->dtype, &o);
}

/* Transpose-1/13/21: perm (rlx_transpose_perm: default, reversed axes). */
static rlx_status infer_transpose(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    size_t np;
    const int64_t *perm = rlx_param_ints(c->n, RLX_A_perm, &np);
    shp o;
    if (x->rank < 0) {
        if (perm && np > RLX_MAX_RANK) return fail_rank(c, (int64_t)np);
        return out_dyn(c, x->dtype, perm ? (int)np : -1);
    }
    int64_t p[RLX_MAX_RANK];
    RLX_TRY(rlx_transpose_perm(c->n, x->rank, p));
    o.rank = x->rank;
    for (int i = 0; i < x->rank; i++) {
        o.d[i] = x->dims[p[i]];
        o.s[i] = x->syms[p[i]];
    }
    return set_out_shp(c, 0, x->dtype, &o);
}

/* Axes of Squeeze/Unsqueeze: the attribute before version 13, input 1
 * from 13. *have: axes given at all; *known: their values are known. */
static rlx_status squeeze_axes(rlx_infer_ctx *c, int64_t *axes, size_t *n, bool *have, bool *known) {
    *n = 0;
    if (c->n->version < 13) {
        size_t cnt;
        const int64_t *a = rlx_param_ints(c->n, RLX_A_axes, &cnt);
        *have = *known = a != NULL;
        if (!a) return RLX_OK;
        if (cnt > 2 * RLX_MAX_RANK) return rlx_ictx_fail(c, "%zu axes", cnt);
        memcpy(axes, a, cnt * sizeof *a);
        *n = cnt;
        return RLX_OK;
    }
    *have = rlx_ictx_in(c, 1) != NULL;
    RLX_TRY(need_index(c, 1, "axes"));
    /* Squeeze-13: a 1-D list; Unsqueeze-13 also takes a scalar (as onnxruntime does) */
    unsigned ranks = c->n->op == RLX_OP_Unsqueeze ? RLX_RANK_0D_1D : RLX_RANK_1D;
    return in_ints(c, 1, "axes", ranks, axes, 2 * RLX_MAX_RANK, n, known);
}

/* Squeeze-1/11/13/21: removes the listed axes (which must be 1), or every
 * dim of 1 when no axes are given. */
static rlx_status infer_squeeze(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    int64_t axes[2 * RLX_MAX_RANK];
    size_t na;
    bool have, known;
    RLX_TRY(squeeze_axes(c, axes, &na, &have, &known));
    shp o;
    if (x->rank < 0) return out_dyn(c, x->dtype, -1);
    bool drop[RLX_MAX_RANK] = { false };
    if (have && !known) {
        int64_t len = in_len(c, 1);
        return out_dyn(c, x->dtype, len >= 0 && len <= x->rank ? x->rank - (int)len : -1);
    }
    if (have) {
        for (size_t i = 0; i < na; i++) {
            int a;
            RLX_TRY(rlx_ictx_axis(c, axes[i], x->rank, &a));
            if (drop[a]) return rlx_ictx_fail_from(c, 1u << 1, "axis %d is listed twice", a);
            if (x->dims[a] >= 0 && x->dims[a] != 1)
                return rlx_ictx_fail(c, "cannot squeeze axis %d of size %lld", a, (long long)x->dims[a]);
            drop[a] = true;
        }
    } else {
        for (int a = 0; a < x->rank; a++) {
            if (x->dims[a] < 0) return out_dyn(c, x->dtype, -1); /* may or may not be 1 */
            drop[a] = x->dims[a] == 1;
        }
    }
    o.rank = 0;
    for (int a = 0; a < x->rank; a++)
        if (!drop[a]) o.d[o.rank] = x->dims[a], o.s[o.rank++] = x->syms[a];
    return set_out_shp(c, 0, x->dtype, &o);
}

/* Unsqueeze-1/11/13/21: inserts dims of 1 at the listed axes of the output
 * (negative from 11; axes attribute before 13, input from 13). */
static rlx_status infer_unsqueeze(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    int64_t axes[2 * RLX_MAX_RANK];
    size_t na;
    bool have, known;
    RLX_TRY(squeeze_axes(c, axes, &na, &have, &known));
    if (!have) return rlx_ictx_fail(c, "axes are required (%s)", c->n->version < 13 ? "attribute" : "input 1");
    shp o;
    if (x->rank < 0) return out_dyn(c, x->dtype, -1);
    if (!known) {
        int64_t len = in_len(c, 1);
        if (len >= 0 && x->rank + len > RLX_MAX_RANK) return fail_rank(c, x->rank + len);
        return out_dyn(c, x->dtype, len >= 0 ? x->rank + (int)len : -1);
    }
    int64_t r = x->rank + (int64_t)na;
    if (r > RLX_MAX_RANK) return fail_rank(c, r);
    bool ins[RLX_MAX_RANK] = { false };
    for (size_t i = 0; i < na; i++) {
        int a;
        if (!rlx_norm_axis(axes[i], (int)r, &a))
            return rlx_ictx_fail_from(c, 1u << 1, "axis %lld is out of range for output rank %lld", (long long)axes[i],
                                      (long long)r);
        if (ins[a]) return rlx_ictx_fail_from(c, 1u << 1, "axis %d is listed twice", a);
        ins[a] = true;
    }
    o.rank = (int)r;
    for (int a = 0, j = 0; a < (int)r; a++) {
        if (ins[a]) o.d[a] = 1, o.s[a] = -1;
        else o.d[a] = x->dims[j], o.s[a] = x->syms[j], j++;
    }
    return set_out_shp(c, 0, x->dtype, &o);
}

/* ------------------------------------------------------------ Concat, Split */

/* Concat-4/11/13: same rank and dtype; dims other than axis must agree. */
static rlx_status infer_concat(rlx_infer_ctx *c) {
    const rlx_value *x0 = NULL;
    for (int i = 0; i < c->n->n_in; i++) {
        const rlx_value *x = rlx_ictx_in(c, i);
        if (!x) return rlx_ictx_fail(c, "input %d is missing", i);
        if (x->rank >= 0 && !x0) x0 = x;
    }
    const rlx_value *first = rlx_ictx_in(c, 0);
    shp o;
    if (!x0) return out_dyn(c, first->dtype, -1);
    const rlx_node_attr *aa = rlx_param(c->n, RLX_A_axis);
    if (!aa) return rlx_ictx_fail(c, "attribute 'axis' is required");
    int ax;
    RLX_TRY(rlx_ictx_axis(c, aa->i, x0->rank, &ax));
    shp_from(&o, x0);
    int64_t sum = 0;
    bool sum_known = true;
    for (int i = 0; i < c->n->n_in; i++) {
        const rlx_value *x = rlx_ictx_in(c, i);
        if (x->dtype != first->dtype)
            return rlx_ictx_fail(c, "input %d has dtype %s, input 0 has %s", i, rlx_dtype_name(x->dtype),
                                 rlx_dtype_name(first->dtype));
        if (x->rank < 0) {
            sum_known = false;
            continue;
        }
        if (x->rank != x0->rank)
            return rlx_ictx_fail(c, "input %d ('%s') has rank %d, input '%s' has rank %d", i, x->name, x->rank,
                                 x0->name, x0->rank);
        for (int a = 0; a < x->rank; a++) {
            if (a == ax) continue;
            if (x->dims[a] >= 0 && o.d[a] >= 0 && x->dims[a] != o.d[a]) {
                char s1[128], s2[128];
                return rlx_ictx_fail(c, "input %d has shape %s, which differs from %s outside axis %d", i,
                                     rlx_shape_str(x->dims, x->rank, s1, sizeof s1),
                                     rlx_shape_str(x0->dims, x0->rank, s2, sizeof s2), ax);
            }
            if (o.d[a] < 0 && x->dims[a] >= 0) o.d[a] = x->dims[a];
            else if (o.d[a] < 0 && o.s[a] != x->syms[a]) o.s[a] = -1;
        }
        if (x->dims[ax] < 0 || sum > INT64_MAX - x->dims[ax]) sum_known = false;
        else sum += x->dims[ax];
    }
    o.d[ax] = sum_known ? sum : RLX_DIM_DYN;
    o.s[ax] = -1;
    if (!sum_known && c->n->n_in == 1) o.s[ax] = x0->syms[ax];
    return set_out_shp(c, 0, first->dtype, &o);
}

/* Split-2/11/13/18 (see rlx_split_sizes). */
static rlx_status infer_split(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    int n_out = c->n->n_out;
    if (x->rank < 0) {
        for (int i = 0; i < n_out; i++) rlx_ictx_set_out_unknown(c, i, x->dtype);
        return RLX_OK;
    }
    int ax;
    int64_t axis = rlx_param_int(c->n, RLX_A_axis);
    RLX_TRY(rlx_ictx_axis(c, axis, x->rank, &ax));
    /* sizes for every output and room for every value of a constant split
     * input, from the graph (inference runs at compile time) */
    const rlx_value *sv = c->n->version >= 13 ? rlx_ictx_in(c, 1) : NULL;
    size_t cap = sv && sv->konst ? rlx_tensor_numel(sv->konst) : 0;
    int64_t *sizes = malloc(((size_t)n_out + cap + 1) * sizeof *sizes);
    if (!sizes) return fail_st(c, RLX_ERR_OUT_OF_MEMORY, "out of memory");
    int64_t *split_buf = sizes + n_out;
    const int64_t *split = NULL;
    size_t ns = 0;
    bool split_dyn = false;
    rlx_status st = RLX_OK;
    if (c->n->version < 13) {
        split = rlx_param_ints(c->n, RLX_A_split, &ns);
    } else if (sv) {
        bool known = false;
        st = need_index(c, 1, "split");
        if (!st) st = in_ints(c, 1, "split", RLX_RANK_1D, split_buf, cap, &ns, &known);
        if (known) split = split_buf;
        else split_dyn = true;
    }
    if (!st && split_dyn) {
        for (int i = 0; i < n_out; i++) sizes[i] = RLX_DIM_DYN;
    } else if (!st) {
        st = rlx_split_sizes(c->n, x->dims[ax], split, ns, n_out, sizes);
    }
    if (st) {
        free(sizes);
        return st;
    }
    for (int i = 0; i < n_out; i++) {
        shp o;
        shp_from(&o, x);
        o.d[ax] = sizes[i];
        o.s[ax] = (n_out == 1 && sizes[i] < 0) ? x->syms[ax] : -1;
        set_out_shp(c, i, x->dtype, &o);
    }
    free(sizes);
    return RLX_OK;
}

/* ------------------------------------------------------------ Shape, Size */

/* Shape-1/13/15/19/21: 1-D i64 of the input dims [start, end) (from 15). */
static rlx_status infer_shape(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    int64_t len = RLX_DIM_DYN;
    if (x->rank >= 0) {
        int s, e;
        rlx_shape_range(c->n, x->rank, &s, &e);
        len = e - s;
    }
    return rlx_ictx_set_out(c, 0, RLX_DTYPE_I64, 1, &len, NULL);
}

/* Size-1/13/19/21: i64 scalar, the element count. */
static rlx_status infer_size(rlx_infer_ctx *c) {
    return rlx_ictx_set_out(c, 0, RLX_DTYPE_I64, 0, NULL, NULL);
}

/* ------------------------------------------------------------ Gather */

/* Gather-1/11/13: out = data[:axis] + indices.shape + data[axis+1:]. */
static rlx_status infer_gather(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0), *idx = rlx_ictx_in(c, 1);
    RLX_TRY(need_index(c, 1, "indices"));
    shp o;
    if (x->rank < 0 || idx->rank < 0) return out_dyn(c, x->dtype, -1);
    int64_t axis = rlx_param_int(c->n, RLX_A_axis);
    int ax;
    if (x->rank == 0) return rlx_ictx_fail(c, "data must have rank >= 1");
    RLX_TRY(rlx_ictx_axis(c, axis, x->rank, &ax));
    int r = x->rank + idx->rank - 1;
    if (r > RLX_MAX_RANK) return fail_rank(c, r);
    o.rank = r;
    int k = 0;
    for (int a = 0; a < ax; a++) o.d[k] = x->dims[a], o.s[k++] = x->syms[a];
    for (int a = 0; a < idx->rank; a++) o.d[k] = idx->dims[a], o.s[k++] = idx->syms[a];
    for (int a = ax + 1; a < x->rank; a++) o.d[k] = x->dims[a], o.s[k++] = x->syms[a];
    return set_out_shp(c, 0, x->dtype, &o);
}

/* GatherElements-11/13: output has the shape of indices. */
/* GatherElements / ScatterElements: indices no larger than data on every
 * axis but `axis` (ONNX; the kernels refused it only when they ran). */
static rlx_status check_elements_dims(rlx_infer_ctx *c, const rlx_value *x, const rlx_value *idx, int ax) {
    for (int a = 0; a < x->rank; a++)
        if (a != ax && idx->dims[a] >= 0 && x->dims[a] >= 0 && idx->dims[a] > x->dims[a])
            return rlx_ictx_fail_from(c, 3u, "indices dim %d (%lld) exceeds the data's (%lld)", a,
                                      (long long)idx->dims[a], (long long)x->dims[a]);
    return RLX_OK;
}

static rlx_status infer_gather_elements(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0), *idx = rlx_ictx_in(c, 1);
    RLX_TRY(need_index(c, 1, "indices"));
    if (x->rank >= 0 && idx->rank >= 0) {
        if (x->rank != idx->rank)
            return rlx_ictx_fail(c, "indices have rank %d, data has rank %d", idx->rank, x->rank);
        int ax;
        int64_t axis = rlx_param_int(c->n, RLX_A_axis);
        if (x->rank == 0 || !rlx_norm_axis(axis, x->rank, &ax))
            return rlx_ictx_fail(c, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
        RLX_TRY(check_elements_dims(c, x, idx, ax));
    }
    return rlx_ictx_set_out(c, 0, x->dtype, idx->rank, idx->dims, idx->syms);
}

/* GatherND-11/12/13: out = indices.shape[:-1] + data.shape[b + m:] with m =
 * indices.shape[-1] and b = batch_dims (from 12). */
static rlx_status infer_gather_nd(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0), *idx = rlx_ictx_in(c, 1);
    if (idx->dtype != RLX_DTYPE_I64) return rlx_ictx_fail(c, "indices must be i64, got %s", rlx_dtype_name(idx->dtype));
    int64_t b = c->n->version >= 12 ? rlx_param_int(c->n, RLX_A_batch_dims) : 0;
    shp o;
    if (idx->rank == 0) return rlx_ictx_fail(c, "indices must have rank >= 1, got a scalar");
    if (x->rank == 0) return rlx_ictx_fail(c, "data must have rank >= 1, got a scalar");
    if (x->rank < 0 || idx->rank < 0 || idx->dims[idx->rank - 1] < 0)
        return out_dyn(c, x->dtype, -1);
    int64_t m = idx->dims[idx->rank - 1];
    if (b < 0 || b >= x->rank || b >= idx->rank)
        return rlx_ictx_fail(c, "batch_dims %lld must be below the ranks of data (%d) and indices (%d)", (long long)b,
                             x->rank, idx->rank);
    if (m < 1 || m > x->rank - b)
        return rlx_ictx_fail(c, "indices.shape[-1] = %lld must be in [1, %lld]", (long long)m, (long long)(x->rank - b));
    for (int a = 0; a < b; a++)
        if (x->dims[a] >= 0 && idx->dims[a] >= 0 && x->dims[a] != idx->dims[a])
            return rlx_ictx_fail(c, "batch dim %d differs: data %lld, indices %lld", a, (long long)x->dims[a],
                                 (long long)idx->dims[a]);
    int64_t r = idx->rank - 1 + x->rank - b - m;
    if (r > RLX_MAX_RANK) return fail_rank(c, r);
    o.rank = (int)r;
    int k = 0;
    for (int a = 0; a < idx->rank - 1; a++) o.d[k] = idx->dims[a], o.s[k++] = idx->syms[a];
    for (int64_t a = b + m; a < x->rank; a++) o.d[k] = x->dims[a], o.s[k++] = x->syms[a];
    return set_out_shp(c, 0, x->dtype, &o);
}

/* reduction attribute of ScatterElements / ScatterND: none (11), add and
 * mul (16), max and min (18). */
static rlx_status check_reduction(rlx_infer_ctx *c) {
    const char *r = rlx_param_str(c->n, RLX_A_reduction);
    int v = c->n->version;
    if (strcmp(r, "none") == 0) return RLX_OK;
    if ((strcmp(r, "add") == 0 || strcmp(r, "mul") == 0) && v >= 16) return RLX_OK;
    if ((strcmp(r, "max") == 0 || strcmp(r, "min") == 0) && v >= 18) return RLX_OK;
    return rlx_ictx_fail(c, "reduction '%s' is not supported at version %d", r, v);
}

/* ScatterElements-11/13/16/18: output like data; indices and updates share
 * a shape of data's rank. */
static rlx_status infer_scatter_elements(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0), *idx = rlx_ictx_in(c, 1), *u = rlx_ictx_in(c, 2);
    RLX_TRY(need_index(c, 1, "indices"));
    RLX_TRY(check_reduction(c));
    if (u->dtype != x->dtype)
        return rlx_ictx_fail(c, "updates have dtype %s, data has %s", rlx_dtype_name(u->dtype), rlx_dtype_name(x->dtype));
    if (idx->rank >= 0 && u->rank >= 0) {
        if (idx->rank != u->rank) return rlx_ictx_fail(c, "indices and updates have different ranks");
        for (int a = 0; a < idx->rank; a++)
            if (idx->dims[a] >= 0 && u->dims[a] >= 0 && idx->dims[a] != u->dims[a])
                return rlx_ictx_fail(c, "indices and updates have different shapes");
    }
    if (x->rank >= 0 && idx->rank >= 0) {
        if (x->rank != idx->rank) return rlx_ictx_fail(c, "indices have rank %d, data has rank %d", idx->rank, x->rank);
        int ax;
        int64_t axis = rlx_param_int(c->n, RLX_A_axis);
        if (x->rank == 0 || !rlx_norm_axis(axis, x->rank, &ax))
            return rlx_ictx_fail(c, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
        RLX_TRY(check_elements_dims(c, x, idx, ax));
    }
    return rlx_ictx_set_out_like(c, 0, x);
}

/* ScatterND-11/13/16/18: output like data; updates have shape
 * indices.shape[:-1] + data.shape[indices.shape[-1]:]. */
static rlx_status infer_scatter_nd(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0), *idx = rlx_ictx_in(c, 1), *u = rlx_ictx_in(c, 2);
    if (idx->dtype != RLX_DTYPE_I64) return rlx_ictx_fail(c, "indices must be i64, got %s", rlx_dtype_name(idx->dtype));
    RLX_TRY(check_reduction(c));
    if (u->dtype != x->dtype)
        return rlx_ictx_fail(c, "updates have dtype %s, data has %s", rlx_dtype_name(u->dtype), rlx_dtype_name(x->dtype));
    if (x->rank >= 0 && idx->rank >= 1 && u->rank >= 0 && idx->dims[idx->rank - 1] >= 0) {
        int64_t m = idx->dims[idx->rank - 1];
        if (m > x->rank) return rlx_ictx_fail(c, "indices.shape[-1] = %lld exceeds the data rank %d", (long long)m, x->rank);
        int64_t want = idx->rank - 1 + x->rank - m;
        if (u->rank != want)
            return rlx_ictx_fail(c, "updates have rank %d, expected %lld", u->rank, (long long)want);
        for (int a = 0; a < u->rank; a++) {
            int64_t e = a < idx->rank - 1 ? idx->dims[a] : x->dims[m + a - (idx->rank - 1)];
            if (e >= 0 && u->dims[a] >= 0 && e != u->dims[a])
                return rlx_ictx_fail(c, "updates dim %d is %lld, expected %lld", a, (long long)u->dims[a], (long long)e);
        }
    } else if (idx->rank == 0) {
        return rlx_ictx_fail(c, "indices must have rank >= 1");
    }
    return rlx_ictx_set_out_like(c, 0, x);
}

/* ------------------------------------------------------------ Slice, Pad */

/* Slice-1 (attributes starts, ends, axes) and Slice-10/11/13 (inputs
 * starts, ends, axes, steps; negative steps). */
static rlx_status infer_slice(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    shp o;
    if (x->rank < 0) return out_dyn(c, x->dtype, -1);
    int64_t st[2 * RLX_MAX_RANK], en[2 * RLX_MAX_RANK], ax[2 * RLX_MAX_RANK], sp[2 * RLX_MAX_RANK];
    size_t ns = 0, ne = 0, na = 0, nsp = 0;
    bool ks = true, ke = true, ka = true, ksp = true, have_axes, have_steps = false;
    const size_t cap = 2 * RLX_MAX_RANK;
    if (c->n->version < 10) {
        const int64_t *p;
        if (!(p = rlx_param_ints(c->n, RLX_A_starts, &ns)) || ns > cap) return rlx_ictx_fail(c, "attribute 'starts' is missing or too long");
        memcpy(st, p, ns * sizeof *p);
        if (!(p = rlx_param_ints(c->n, RLX_A_ends, &ne)) || ne > cap) return rlx_ictx_fail(c, "attribute 'ends' is missing or too long");
        memcpy(en, p, ne * sizeof *p);
        p = rlx_param_ints(c->n, RLX_A_axes, &na);
        have_axes = p != NULL;
        if (na > cap) return rlx_ictx_fail(c, "attribute 'axes' is too long");
        if (p) memcpy(ax, p, na * sizeof *p);
    } else {
        for (int i = 1; i <= 4; i++) RLX_TRY(need_index(c, i, i == 1 ? "starts" : i == 2 ? "ends" : i == 3 ? "axes" : "steps"));
        RLX_TRY(in_ints(c, 1, "starts", RLX_RANK_1D, st, cap, &ns, &ks));
        RLX_TRY(in_ints(c, 2, "ends", RLX_RANK_1D, en, cap, &ne, &ke));
        have_axes = rlx_ictx_in(c, 3) != NULL;
        have_steps = rlx_ictx_in(c, 4) != NULL;
        if (have_axes) RLX_TRY(in_ints(c, 3, "axes", RLX_RANK_1D, ax, cap, &na, &ka));
        if (have_steps) RLX_TRY(in_ints(c, 4, "steps", RLX_RANK_1D, sp, cap, &nsp, &ksp));
    }
    if (!ka) return out_dyn(c, x->dtype, x->rank); /* which axes are sliced is unknown */
    if (ks && ke && ns != ne) return rlx_ictx_fail(c, "starts has %zu values, ends %zu", ns, ne);
    if (!ks || !ke || !ksp) {
        /* the sliced axes are known, their extents are not */
        shp_from(&o, x);
        if (have_axes) {
            for (size_t i = 0; i < na; i++) {
                int a;
                RLX_TRY(rlx_ictx_axis(c, ax[i], x->rank, &a));
                o.d[a] = RLX_DIM_DYN, o.s[a] = -1;
            }
        } else {
            int64_t n = ks ? (int64_t)ns : ke ? (int64_t)ne : in_len(c, 1);
            if (n < 0 || n > x->rank) n = x->rank;
            for (int a = 0; a < n; a++) o.d[a] = RLX_DIM_DYN, o.s[a] = -1;
        }
        return set_out_shp(c, 0, x->dtype, &o);
    }
    /* checks of starts, ends, axes and steps (inputs 1-4, or attributes) against x's rank, which the model fixes */
    const unsigned vals = 0xfu << 1;
    if (have_axes && na != ns) return rlx_ictx_fail_from(c, vals, "axes has %zu values, starts %zu", na, ns);
    if (have_steps && nsp != ns) return rlx_ictx_fail_from(c, vals, "steps has %zu values, starts %zu", nsp, ns);
    rlx_slice_geom g;
    RLX_TRY(rlx_ictx_blame(c, vals, rlx_slice_resolve(c->n, x->rank, x->dims, st, en, have_axes ? ax : NULL,
                                                      have_steps ? sp : NULL, ns, &g)));
    shp_from(&o, x);
    for (int a = 0; a < x->rank; a++) {
        o.d[a] = g.count[a];
        if (!g.full[a]) o.s[a] = -1;
    }
    return set_out_shp(c, 0, x->dtype, &o);
}

/* Pad-2 (pads, value attributes), Pad-11/13 (pads, constant_value inputs),
 * Pad-18 (axes input), Pad-19 (wrap mode). Output dim = dim + begin + end. */
static rlx_status infer_pad(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    rlx_pad_mode mode;
    RLX_TRY(rlx_pad_mode_of(c->n, &mode));
    shp o;
    if (x->rank < 0) return out_dyn(c, x->dtype, -1);
    int64_t pads[4 * RLX_MAX_RANK], axes[2 * RLX_MAX_RANK];
    size_t np = 0, na = 0;
    bool kp = true, ka = true, have_axes = false;
    if (c->n->version < 11) {
        const int64_t *p = rlx_param_ints(c->n, RLX_A_pads, &np);
        if (!p) return rlx_ictx_fail(c, "attribute 'pads' is required");
        if (np > 4 * RLX_MAX_RANK) return rlx_ictx_fail(c, "pads has %zu values", np);
        memcpy(pads, p, np * sizeof *p);
    } else {
        RLX_TRY(need_index(c, 1, "pads"));
        RLX_TRY(in_ints(c, 1, "pads", RLX_RANK_1D, pads, 4 * RLX_MAX_RANK, &np, &kp));
        const rlx_value *cv = rlx_ictx_in(c, 2);
        if (cv && cv->dtype != x->dtype)
            return rlx_ictx_fail(c, "constant_value has dtype %s, data has %s", rlx_dtype_name(cv->dtype),
                                 rlx_dtype_name(x->dtype));
        if (c->n->version >= 18 && rlx_ictx_in(c, 3)) {
            have_axes = true;
            RLX_TRY(need_index(c, 3, "axes"));
            RLX_TRY(in_ints(c, 3, "axes", RLX_RANK_1D, axes, 2 * RLX_MAX_RANK, &na, &ka));
        }
    }
    if (!kp || !ka) {
        shp_from(&o, x);
        for (int a = 0; a < x->rank; a++) {
            bool touched = !have_axes || !ka;
            for (size_t i = 0; ka && have_axes && i < na; i++) {
                int b;
                if (rlx_norm_axis(axes[i], x->rank, &b) && b == a) touched = true;
            }
            if (touched) o.d[a] = RLX_DIM_DYN, o.s[a] = -1;
        }
        return set_out_shp(c, 0, x->dtype, &o);
    }
    int64_t b[RLX_MAX_RANK], e[RLX_MAX_RANK];
    /* pads and axes (inputs 1 and 3) against x's rank, which the model fixes */
    RLX_TRY(rlx_ictx_blame(c, 1u << 1 | 1u << 3, rlx_pad_resolve(c->n, x->rank, pads, np, have_axes ? axes : NULL, na, b, e)));
    shp_from(&o, x);
    for (int a = 0; a < x->rank; a++) {
        if (b[a] == 0 && e[a] == 0) continue;
        o.s[a] = -1;
        if (x->dims[a] < 0) continue;
        int64_t d = x->dims[a];
        if (b[a] > INT64_MAX / 4 || e[a] > INT64_MAX / 4 || b[a] < -d || e[a] < -d || d + b[a] + e[a] < 0)
            return rlx_ictx_fail(c, "pads %lld, %lld do not fit axis %d of size %lld", (long long)b[a], (long long)e[a],
                                 a, (long long)d);
        int64_t kept = d + (b[a] < 0 ? b[a] : 0) + (e[a] < 0 ? e[a] : 0);
        if (mode != RLX_PAD_CONSTANT && kept <= 0 && (b[a] > 0 || e[a] > 0))
            return rlx_ictx_fail(c, "axis %d has no elements to pad from in mode %s", a,
                                 rlx_param_str(c->n, RLX_A_mode));
        o.d[a] = d + b[a] + e[a];
    }
    return set_out_shp(c, 0, x->dtype, &o);
}

/* ------------------------------------------------------------ Constant, Identity */

/* Which value attribute a Constant node carries (ONNX Constant-1/9: value;
 * 11: sparse_value; 12: value_float(s), value_int(s), value_string(s)). */
static rlx_status infer_constant(rlx_infer_ctx *c) {
    static const char *names[] = { "value", "value_float", "value_floats", "value_int", "value_ints",
                                   "value_string", "value_strings", "sparse_value" };
    const rlx_node_attr *found = NULL;
    int which = -1;
    for (int i = 0; i < (int)RLX_ARRAY_LEN(names); i++) {
        const rlx_node_attr *a = rlx_node_attr_find(c->n, names[i]);
        if (!a) continue;
        if (found) return rlx_ictx_fail(c, "has both '%s' and '%s'", found->name, a->name);
        found = a;
        which = i;
    }
    if (!found) return rlx_ictx_fail(c, "has no value attribute");
    int64_t n = (int64_t)found->n;
    switch (which) {
    case 0:
        if (!found->t) return rlx_ictx_fail(c, "attribute 'value' is not a tensor");
        if (!rlx_dtype_size(found->t->dtype))
            return fail_st(c, RLX_ERR_UNSUPPORTED, "tensor dtype %s is not supported", rlx_dtype_name(found->t->dtype));
        return rlx_ictx_set_out(c, 0, found->t->dtype, found->t->rank, found->t->dims, NULL);
    case 1: rlx_ictx_set_out(c, 0, RLX_DTYPE_F32, 0, NULL, NULL); return RLX_OK;
    case 2:
        if (found->type == RLX_ATTR_FLOAT) n = 1;
        return rlx_ictx_set_out(c, 0, RLX_DTYPE_F32, 1, &n, NULL);
    case 3: rlx_ictx_set_out(c, 0, RLX_DTYPE_I64, 0, NULL, NULL); return RLX_OK;
    case 4:
        if (found->type == RLX_ATTR_INT) n = 1;
        return rlx_ictx_set_out(c, 0, RLX_DTYPE_I64, 1, &n, NULL);
    default: return fail_st(c, RLX_ERR_UNSUPPORTED, "attribute '%s' (strings, sparse) is not supported", found->name);
    }
}

/* ConstantOfShape-9/20/21: value (one-element tensor, default f32 0). */
static rlx_status infer_constant_of_shape(rlx_infer_ctx *c) {
    const rlx_node_attr *va = rlx_param(c->n, RLX_A_value);
    rlx_dtype dt = RLX_DTYPE_F32;
    if (va) {
        if (!va->t || rlx_tensor_numel(va->t) != 1)
            return rlx_ictx_fail(c, "attribute 'value' must be a tensor of one element");
        dt = va->t->dtype;
        if (!rlx_dtype_size(dt)) return fail_st(c, RLX_ERR_UNSUPPORTED, "value dtype %s", rlx_dtype_name(dt));
    }
    int64_t sh[RLX_MAX_RANK];
    size_t r;
    bool known;
    /* 1-D, as the spec has it: onnxruntime refuses a scalar too ("Must have a valid input shape") */
    RLX_TRY(shape_in(c, 0, sh, &r, &known));
    shp o;
    if (!known) {
        int64_t len = in_len(c, 0);
        if (len > RLX_MAX_RANK) return fail_rank(c, len);
        shp_dyn(&o, len >= 0 ? (int)len : -1);
    } else {
        shp_dyn(&o, (int)r);
        for (size_t i = 0; i < r; i++) {
            if (sh[i] < 0) return rlx_ictx_fail_from(c, 1u << 0, "shape[%zu] = %lld is negative", i, (long long)sh[i]);
            o.d[i] = sh[i];
        }
    }
    return set_out_shp(c, 0, dt, &o);
}

/* ------------------------------------------------------------ Expand, Tile */

/* Expand-8/13: bidirectional broadcast of the input with `shape`. */
static rlx_status infer_expand(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    int64_t sh[RLX_MAX_RANK];
    size_t r;
    bool known;
    RLX_TRY(shape_in(c, 1, sh, &r, &known));
    shp o;
    if (!known || x->rank < 0) {
        int64_t len = known ? (int64_t)r : in_len(c, 1);
        if (len > RLX_MAX_RANK) return fail_rank(c, len);
        return out_dyn(c, x->dtype, (len >= 0 && x->rank >= 0) ? (int)(len > x->rank ? len : x->rank) : -1);
    }
    for (size_t i = 0; i < r; i++)
        if (sh[i] < 0) return rlx_ictx_fail_from(c, 1u << 1, "shape[%zu] = %lld is negative", i, (long long)sh[i]);
    if (!rlx_broadcast_shapes(x->rank, x->dims, x->syms, (int)r, sh, NULL, &o.rank, o.d, o.s)) {
        char a[128], b[128];
        return rlx_ictx_fail(c, "input shape %s does not broadcast to %s", rlx_shape_str(x->dims, x->rank, a, sizeof a),
                             rlx_shape_str(sh, (int)r, b, sizeof b));
    }
    return set_out_shp(c, 0, x->dtype, &o);
}

/* Tile-6/13: out dim = dim * repeats. */
static rlx_status infer_tile(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    RLX_TRY(need_index(c, 1, "repeats"));
    int64_t rep[RLX_MAX_RANK];
    size_t n;
    bool known;
    shp o;
    if (x->rank < 0) return out_dyn(c, x->dtype, -1);
    RLX_TRY(in_ints(c, 1, "repeats", RLX_RANK_1D, rep, RLX_MAX_RANK, &n, &known));
    shp_from(&o, x);
    if (!known) return out_dyn(c, x->dtype, x->rank);
    if (n != (size_t)x->rank) return rlx_ictx_fail_from(c, 1u << 1, "repeats has %zu values for rank %d", n, x->rank);
    for (int a = 0; a < x->rank; a++) {
        if (rep[a] < 0) return rlx_ictx_fail_from(c, 1u << 1, "repeats[%d] = %lld is negative", a, (long long)rep[a]);
        if (rep[a] == 1) continue;
        o.s[a] = -1;
        if (x->dims[a] >= 0 && !rlx_dim_mul(x->dims[a], rep[a], &o.d[a])) return rlx_ictx_fail(c, "output is too large");
        if (x->dims[a] < 0) o.d[a] = rep[a] == 0 ? 0 : RLX_DIM_DYN;
    }
    return set_out_shp(c, 0, x->dtype, &o);
}

/* ------------------------------------------------------------ Range */

/* Range-11/27: 1-D output of max(ceil((limit - start) / delta), 0) values
 * (27 adds f16/bf16 with stash_type). */
static rlx_status infer_range(rlx_infer_ctx *c) {
    const rlx_value *s = rlx_ictx_in(c, 0), *l = rlx_ictx_in(c, 1), *d = rlx_ictx_in(c, 2);
    if (s->dtype != l->dtype || s->dtype != d->dtype)
        return rlx_ictx_fail(c, "start, limit and delta have dtypes %s, %s, %s", rlx_dtype_name(s->dtype),
                             rlx_dtype_name(l->dtype), rlx_dtype_name(d->dtype));
    bool fl = rlx_dtype_is_float(s->dtype);
    if (!fl && !rlx_dtype_is_int(s->dtype)) return rlx_ictx_fail(c, "dtype %s is not numeric", rlx_dtype_name(s->dtype));
    /* scalars; a 1-D tensor of one value is taken too, as onnxruntime's kernel does */
    static const char *const what[3] = { "start", "limit", "delta" };
    for (int i = 0; i < 3; i++) {
        const rlx_value *v = rlx_ictx_in(c, i);
        RLX_TRY(rlx_ictx_operand_rank(c, i, what[i], RLX_RANK_0D_1D));
        if (v->rank == 1 && v->dims[0] >= 0 && v->dims[0] != 1)
            return rlx_ictx_fail_from(c, 1u << i, "%s '%s' must be a scalar, got %lld values", what[i], v->name,
                                      (long long)v->dims[0]);
    }
    int64_t len = RLX_DIM_DYN;
    if (s->konst && l->konst && d->konst) {
        if (rlx_tensor_numel(s->konst) != 1 || rlx_tensor_numel(l->konst) != 1 || rlx_tensor_numel(d->konst) != 1)
            return rlx_ictx_fail(c, "start, limit and delta must hold one value each");
        double fs = 0, flim = 0, fd = 0;
        int64_t is = 0, il = 0, id = 0;
        size_t cnt;
        bool ok;
        if (fl) ok = rlx_konst_scalar(s, &fs) && rlx_konst_scalar(l, &flim) && rlx_konst_scalar(d, &fd);
        else ok = rlx_konst_ints(s, &is, 1, &cnt) && rlx_konst_ints(l, &il, 1, &cnt) && rlx_konst_ints(d, &id, 1, &cnt);
        if (!ok) return rlx_ictx_fail(c, "start, limit and delta cannot be read");
        RLX_TRY(rlx_range_count(c->n, fl, fs, flim, fd, is, il, id, &len));
    }
    return rlx_ictx_set_out(c, 0, s->dtype, 1, &len, NULL);
}

/* ------------------------------------------------------------ OneHot, Trilu, CumSum, EyeLike */

/* OneHot-9/11: out = indices.shape with depth inserted at axis (default
 * -1, in [-r-1, r]); dtype of values. */
static rlx_status infer_onehot(rlx_infer_ctx *c) {
    const rlx_value *idx = rlx_ictx_in(c, 0), *dep = rlx_ictx_in(c, 1), *val = rlx_ictx_in(c, 2);
    if (val->rank >= 0 && (val->rank != 1 || (val->dims[0] >= 0 && val->dims[0] != 2)))
        return rlx_ictx_fail(c, "values must be a 1-D tensor of 2 elements [off, on]");
    shp o;
    if (idx->rank < 0) return out_dyn(c, val->dtype, -1);
    int r = idx->rank + 1;
    if (r > RLX_MAX_RANK) return fail_rank(c, r);
    int ax;
    int64_t axis = rlx_param_int(c->n, RLX_A_axis);
    RLX_TRY(rlx_ictx_axis(c, axis, r, &ax));
    /* depth: a scalar or a 1-D tensor of one value */
    RLX_TRY(rlx_ictx_operand_rank(c, 1, "depth", RLX_RANK_0D_1D));
    if (dep->rank == 1 && dep->dims[0] >= 0 && dep->dims[0] != 1)
        return rlx_ictx_fail_from(c, 1u << 1, "depth '%s' must hold one value, got %lld", dep->name,
                                  (long long)dep->dims[0]);
    int64_t depth = RLX_DIM_DYN;
    double dv;
    if (dep->konst) {
        if (rlx_tensor_numel(dep->konst) != 1 || !rlx_konst_scalar(dep, &dv))
            return rlx_ictx_fail(c, "depth must be a numeric scalar");
        if (!(dv >= 1 && dv < 4.0e18)) return rlx_ictx_fail(c, "depth %g is outside [1, 4e18)", dv);
        depth = (int64_t)dv;
    }
    o.rank = r;
    for (int a = 0, j = 0; a < r; a++) {
        if (a == ax) o.d[a] = depth, o.s[a] = -1;
        else o.d[a] = idx->dims[j], o.s[a] = idx->syms[j], j++;
    }
    return set_out_shp(c, 0, val->dtype, &o);
}

/* Trilu-14: input [..., N, M], optional scalar k. */
static rlx_status infer_trilu(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    if (x->rank >= 0 && x->rank < 2) return rlx_ictx_fail(c, "input must have rank >= 2, got %d", x->rank);
    RLX_TRY(need_index(c, 1, "k"));
    /* k: a scalar (a 1-D tensor of one value taken too, as onnxruntime does) */
    RLX_TRY(rlx_ictx_operand_rank(c, 1, "k", RLX_RANK_0D_1D));
    const rlx_value *k = rlx_ictx_in(c, 1);
    if (k && k->rank == 1 && k->dims[0] >= 0 && k->dims[0] != 1)
        return rlx_ictx_fail_from(c, 1u << 1, "k '%s' must be a scalar, got %lld values", k->name,
                                  (long long)k->dims[0]);
    return rlx_ictx_set_out_like(c, 0, x);
}

/* CumSum-11/14: output like x; axis is an integer scalar input. */
static rlx_status infer_cumsum(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0), *ax = rlx_ictx_in(c, 1);
    RLX_TRY(need_index(c, 1, "axis"));
    if (ax->rank > 1 || (ax->rank == 1 && ax->dims[0] >= 0 && ax->dims[0] != 1))
        return rlx_ictx_fail(c, "axis must be a scalar");
    if (!rlx_dtype_is_float(x->dtype) && !rlx_dtype_is_int(x->dtype))
        return rlx_ictx_fail(c, "dtype %s is not numeric", rlx_dtype_name(x->dtype));
    int64_t a;
    size_t n;
    if (x->rank >= 0 && rlx_konst_ints(ax, &a, 1, &n) && n == 1) {
        int dummy;
        RLX_TRY(rlx_ictx_axis(c, a, x->rank, &dummy));
    }
    return rlx_ictx_set_out_like(c, 0, x);
}

/* EyeLike-9/22: 2-D; dtype attribute (default the input's), diagonal k. */
static rlx_status infer_eye_like(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    if (x->rank >= 0 && x->rank != 2) return rlx_ictx_fail(c, "input must be 2-D, got rank %d", x->rank);
    const rlx_node_attr *dta = rlx_param(c->n, RLX_A_dtype);
    rlx_dtype dt = dta ? (rlx_dtype)dta->i : x->dtype;
    if (!rlx_dtype_size(dt) || dt == RLX_DTYPE_STRING)
        return fail_st(c, RLX_ERR_UNSUPPORTED, "dtype %d is not supported", (int)dt);
    return rlx_ictx_set_out(c, 0, dt, x->rank, x->dims, x->syms);
}

/* ------------------------------------------------------------ NonZero, Unique, Compress */

/* NonZero-9/13: i64 [rank, count]; count depends on the data. */
static rlx_status infer_nonzero(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    int64_t d[2] = { x->rank < 0 ? RLX_DIM_DYN : (x->rank == 0 ? 1 : x->rank), RLX_DIM_DYN };
    return rlx_ictx_set_out(c, 0, RLX_DTYPE_I64, 2, d, NULL);
}

/* Unique-11: Y (unique elements, or slices along axis), indices,
 * inverse_indices, counts; sizes depend on the data. */
static rlx_status infer_unique(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    const rlx_node_attr *aa = rlx_param(c->n, RLX_A_axis);
    int64_t dyn = RLX_DIM_DYN, inv = RLX_DIM_DYN;
    shp o;
    if (aa && x->rank >= 0) {
        int ax;
        RLX_TRY(rlx_ictx_axis(c, aa->i, x->rank, &ax));
        shp_from(&o, x);
        o.d[ax] = RLX_DIM_DYN, o.s[ax] = -1;
        inv = x->dims[ax];
    } else if (aa) {
        shp_dyn(&o, -1);
    } else {
        shp_dyn(&o, 1);
        if (rlx_value_is_static(x)) inv = (int64_t)rlx_value_numel(x);
    }
    set_out_shp(c, 0, x->dtype, &o);
    rlx_ictx_set_out(c, 1, RLX_DTYPE_I64, 1, &dyn, NULL);
    rlx_ictx_set_out(c, 2, RLX_DTYPE_I64, 1, &inv, NULL);
    return rlx_ictx_set_out(c, 3, RLX_DTYPE_I64, 1, &dyn, NULL);
}

/* Compress-9/11: keeps the slices along axis (or the elements of the
 * flattened input) whose condition is true; exact when the condition is
 * constant. */
static rlx_status infer_compress(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0), *cond = rlx_ictx_in(c, 1);
    if (cond->dtype != RLX_DTYPE_BOOL) return rlx_ictx_fail(c, "condition must be bool, got %s", rlx_dtype_name(cond->dtype));
    if (cond->rank >= 0 && cond->rank != 1) return rlx_ictx_fail(c, "condition must be 1-D");
    const rlx_node_attr *aa = rlx_param(c->n, RLX_A_axis);
    int ax = -1;
    shp o;
    if (aa) {
        if (x->rank < 0) return out_dyn(c, x->dtype, -1);
        RLX_TRY(rlx_ictx_axis(c, aa->i, x->rank, &ax));
        shp_from(&o, x);
    } else {
        shp_dyn(&o, 1);
    }
    int oa = aa ? ax : 0;
    o.d[oa] = RLX_DIM_DYN, o.s[oa] = -1;
    int64_t extent = aa ? x->dims[ax] : (rlx_value_is_static(x) ? (int64_t)rlx_value_numel(x) : -1);
    if (cond->konst && extent >= 0) {
        size_t n = rlx_tensor_numel(cond->konst);
        const uint8_t *p = cond->konst->data;
        int64_t cnt = 0;
        for (size_t i = 0; i < n; i++) {
            if (!p[i]) continue;
            if ((int64_t)i >= extent)
                return rlx_ictx_fail(c, "condition is true at %zu, beyond the %lld selectable entries", i,
                                     (long long)extent);
            cnt++;
        }
        o.d[oa] = cnt;
    }
    return set_out_shp(c, 0, x->dtype, &o);
}

/* ------------------------------------------------------------ DepthToSpace, SpaceToDepth */

/* DepthToSpace-1/11/13 (mode DCR/CRD from 11), SpaceToDepth-1/13: NCHW. */
static rlx_status infer_depth_space(rlx_infer_ctx *c, bool to_space) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    int64_t b = rlx_param_int(c->n, RLX_A_blocksize);
    if (b < 1 || b > (1 << 20)) return rlx_ictx_fail(c, "blocksize %lld is outside [1, 1048576]", (long long)b);
    if (to_space && c->n->version >= 11) {
        const char *m = rlx_param_str(c->n, RLX_A_mode);
        if (strcmp(m, "DCR") != 0 && strcmp(m, "CRD") != 0) return rlx_ictx_fail(c, "mode '%s' is not DCR or CRD", m);
    }
    shp o;
    if (x->rank < 0) return out_dyn(c, x->dtype, 4);
    if (x->rank != 4) return rlx_ictx_fail(c, "input must be 4-D (NCHW), got rank %d", x->rank);
    shp_from(&o, x);
    for (int a = 1; a < 4; a++) o.s[a] = -1;
    if (to_space) {
        if (x->dims[1] >= 0 && x->dims[1] % (b * b) != 0)
            return rlx_ictx_fail(c, "channels %lld are not divisible by blocksize^2 = %lld", (long long)x->dims[1],
                                 (long long)(b * b));
        o.d[1] = x->dims[1] >= 0 ? x->dims[1] / (b * b) : RLX_DIM_DYN;
        for (int a = 2; a < 4; a++)
            if (x->dims[a] >= 0 && !rlx_dim_mul(x->dims[a], b, &o.d[a])) return rlx_ictx_fail(c, "output is too large");
    } else {
        for (int a = 2; a < 4; a++) {
            if (x->dims[a] >= 0 && x->dims[a] % b != 0)
                return rlx_ictx_fail(c, "dim %d = %lld is not divisible by blocksize %lld", a, (long long)x->dims[a],
                                     (long long)b);
            o.d[a] = x->dims[a] >= 0 ? x->dims[a] / b : RLX_DIM_DYN;
        }
        if (x->dims[1] >= 0 && !rlx_dim_mul(x->dims[1], b * b, &o.d[1])) return rlx_ictx_fail(c, "output is too large");
    }
    return set_out_shp(c, 0, x->dtype, &o);
}

static rlx_status infer_depth_to_space(rlx_infer_ctx *c) { return infer_depth_space(c, true); }
static rlx_status infer_space_to_depth(rlx_infer_ctx *c) { return infer_depth_space(c, false); }

/* ------------------------------------------------------------ ReverseSequence, TopK */

/* ReverseSequence-10: [batch, time, ...] or [time, batch, ...]. */
static rlx_status infer_reverse_sequence(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0), *len = rlx_ictx_in(c, 1);
    int64_t ba = rlx_param_int(c->n, RLX_A_batch_axis), ta = rlx_param_int(c->n, RLX_A_time_axis);
    if (!((ba == 0 && ta == 1) || (ba == 1 && ta == 0)))
        return rlx_ictx_fail(c, "batch_axis %lld and time_axis %lld must be 0 and 1 in some order", (long long)ba,
                             (long long)ta);
    if (len->dtype != RLX_DTYPE_I64)
        return rlx_ictx_fail(c, "sequence_lens must be i64, got %s", rlx_dtype_name(len->dtype));
    if (x->rank >= 0 && x->rank < 2) return rlx_ictx_fail(c, "input must have rank >= 2, got %d", x->rank);
    if (len->rank >= 0 && len->rank != 1) return rlx_ictx_fail(c, "sequence_lens must be 1-D");
    if (x->rank >= 0 && len->rank == 1 && x->dims[ba] >= 0 && len->dims[0] >= 0 && len->dims[0] != x->dims[ba])
        return rlx_ictx_fail(c, "sequence_lens has %lld entries for a batch of %lld", (long long)len->dims[0],
                             (long long)x->dims[ba]);
    return rlx_ictx_set_out_like(c, 0, x);
}

/* TopK-1 (k attribute), TopK-10 (k input), TopK-11 (largest, sorted),
 * TopK-24 (bf16). */
static rlx_status infer_topk(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    int64_t k = RLX_DIM_DYN;
    bool known = false;
    if (c->n->version < 10) {
        const rlx_node_attr *ka = rlx_param(c->n, RLX_A_k);
        if (!ka) return rlx_ictx_fail(c, "attribute 'k' is required");
        k = ka->i;
        known = true;
    } else {
        if (!rlx_ictx_in(c, 1)) return rlx_ictx_fail(c, "input k is required");
        RLX_TRY(need_index(c, 1, "k"));
        int64_t kv[1];
        size_t n;
        RLX_TRY(in_ints(c, 1, "k", RLX_RANK_1D, kv, 1, &n, &known));
        const rlx_value *kin = rlx_ictx_in(c, 1);
        if ((known && n != 1) || (kin->rank == 1 && kin->dims[0] >= 0 && kin->dims[0] != 1))
            return rlx_ictx_fail_from(c, 1u << 1, "k must be a 1-D tensor of one value");
        if (known) k = kv[0];
    }
    if (known && k < 0) return rlx_ictx_fail_from(c, 1u << 1, "k = %lld is negative", (long long)k);
    shp o;
    if (x->rank < 0) {
        shp_dyn(&o, -1);
    } else {
        int ax;
        int64_t axis = rlx_param_int(c->n, RLX_A_axis);
        if (x->rank == 0 || !rlx_norm_axis(axis, x->rank, &ax))
            return rlx_ictx_fail(c, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
        if (known && x->dims[ax] >= 0 && k > x->dims[ax])
            return rlx_ictx_fail(c, "k = %lld exceeds the axis size %lld", (long long)k, (long long)x->dims[ax]);
        shp_from(&o, x);
        o.d[ax] = k, o.s[ax] = -1;
    }
    set_out_shp(c, 0, x->dtype, &o);
    return set_out_shp(c, 1, RLX_DTYPE_I64, &o);
}

/* ------------------------------------------------------------ the table */

/* Row shape of ops_tensor.def. */
#define OP(lo, hi, olo, ohi, fn, fl, ...) \
    .min_in = lo, .max_in = hi, .min_out = olo, .max_out = ohi, .infer = fn, .flags = fl, __VA_ARGS__

const rlx_op_def rlx_ops_tensor[] = {
#include "ir/ops/ops_tensor.def"
};
const size_t rlx_ops_tensor_count = RLX_ARRAY_LEN(rlx_ops_tensor);
