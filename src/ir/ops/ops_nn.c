/* Neural-network ops: convolutions, pools, normalisations, GEMM/MatMul,
 * Softmax, Dropout, Resize, GridSample. Versions are the ONNX since-versions of each
 * operator; the CPU kernels are in src/backend/cpu/cpu_nn*.c. */
#include <math.h>
#include <string.h>

#include "base/tensor.h"
#include "ir/ops/conv_geom.h"
#include "ir/ops/gridsample.h"
#include "ir/ops/ops.h"
#include "ir/ops/reduce_geom.h"
#include "ir/ops/resize_geom.h"

/* ------------------------------------------------------------ conv, pools */

static bool is_pool_int_ok(const rlx_node *n, rlx_dtype dt) {
    /* MaxPool-12 added int8 and uint8 */
    return n->op == RLX_OP_MaxPool && n->version >= 12 && (dt == RLX_DTYPE_I8 || dt == RLX_DTYPE_U8);
}

static rlx_status infer_conv_like(rlx_infer_ctx *c, rlx_conv_kind kind) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    const rlx_value *w = kind == RLX_GEOM_POOL ? NULL : rlx_ictx_in(c, 1);
    if (!rlx_dtype_is_float(x->dtype) && !is_pool_int_ok(c->n, x->dtype))
        return rlx_ictx_fail(c, "input has dtype %s, expected a float type", rlx_dtype_name(x->dtype));
    if (x->rank < 0 || (w && w->rank < 0)) {
        for (int i = 0; i < c->n->n_out; i++) rlx_ictx_set_out_unknown(c, i, i == 1 ? RLX_DTYPE_I64 : x->dtype);
        return RLX_OK;
    }
    if (w && w->dtype != x->dtype)
        return rlx_ictx_fail(c, "weight dtype %s differs from input dtype %s", rlx_dtype_name(w->dtype),
                             rlx_dtype_name(x->dtype));
    rlx_conv_geom g;
    RLX_TRY(rlx_conv_geom_resolve(c->n, kind, x->dims, x->rank, w ? w->dims : NULL, w ? w->rank : 0, &g));
    const rlx_value *b = kind == RLX_GEOM_POOL ? NULL : rlx_ictx_in(c, 2);
    if (b && b->dtype != x->dtype)
        return rlx_ictx_fail(c, "bias dtype %s differs from input dtype %s", rlx_dtype_name(b->dtype),
                             rlx_dtype_name(x->dtype));
    if (b && b->rank >= 0 && (b->rank != 1 || (g.c_out >= 0 && b->dims[0] >= 0 && b->dims[0] != g.c_out)))
        return rlx_ictx_fail(c, "bias must have shape [%lld]", (long long)g.c_out);
    int64_t dims[RLX_MAX_RANK];
    int32_t syms[RLX_MAX_RANK];
    dims[0] = x->dims[0];
    syms[0] = x->syms[0];
    dims[1] = g.c_out;
    syms[1] = kind == RLX_GEOM_POOL ? x->syms[1] : -1;
    for (int i = 0; i < g.nsp; i++) {
        dims[2 + i] = g.out[i];
        /* a spatial dim passes its symbol through when the op keeps it */
        bool same = g.k[i] == 1 && g.stride[i] == 1 && g.pad_begin[i] == 0 && g.pad_end[i] == 0;
        syms[2 + i] = (g.out[i] < 0 && same) ? x->syms[2 + i] : -1;
    }
    rlx_ictx_set_out(c, 0, x->dtype, x->rank, dims, syms);
    /* MaxPool's optional Indices output */
    if (c->n->n_out > 1) rlx_ictx_set_out(c, 1, RLX_DTYPE_I64, x->rank, dims, syms);
    return RLX_OK;
}

/* Conv, and the fused residual of passes/fuse_conv_residual.c: an internal
 * fourth input (never accepted from a file: the table says at most 3)
 * added to the result, which must have exactly the output's static shape
 * and the input's dtype (ir/ops/act.h). */
static rlx_status infer_conv(rlx_infer_ctx *c) {
    RLX_TRY(infer_conv_like(c, RLX_GEOM_CONV));
    if (c->n->n_in <= 3) return RLX_OK;
    const rlx_value *r = rlx_ictx_in(c, 3), *x = rlx_ictx_in(c, 0), *y = rlx_ictx_out(c, 0);
    if (c->n->n_in > 4 || !r) return rlx_ictx_fail(c, "has %d inputs, expected at most 4 (X, W, B, residual)", c->n->n_in);
    if (r->dtype != x->dtype)
        return rlx_ictx_fail(c, "residual dtype %s differs from input dtype %s", rlx_dtype_name(r->dtype),
                             rlx_dtype_name(x->dtype));
    if (!y || !rlx_value_is_static(y) || !rlx_value_is_static(r) || !rlx_shape_equal(r->dims, r->rank, y->dims, y->rank)) {
        char sr[96], sy[96];
        return rlx_ictx_fail(c, "residual of shape %s must have the output's static shape %s",
                             rlx_shape_str(r->dims, r->rank, sr, sizeof sr),
                             y ? rlx_shape_str(y->dims, y->rank, sy, sizeof sy) : "?");
    }
    return RLX_OK;
}
static rlx_status infer_conv_transpose(rlx_infer_ctx *c) { return infer_conv_like(c, RLX_GEOM_CONV_TRANSPOSE); }
static rlx_status infer_pool(rlx_infer_ctx *c) {
    if (c->n->op == RLX_OP_LpPool && rlx_param_int(c->n, RLX_A_p) < 1)
        return rlx_ictx_fail(c, "p must be >= 1, got %lld", (long long)rlx_param_int(c->n, RLX_A_p));
    return infer_conv_like(c, RLX_GEOM_POOL);
}

/* GlobalAveragePool, GlobalMaxPool, GlobalLpPool: [N, C, D...] -> [N, C, 1...]. */
static rlx_status infer_global_pool(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    if (!rlx_dtype_is_float(x->dtype))
        return rlx_ictx_fail(c, "input has dtype %s, expected a float type", rlx_dtype_name(x->dtype));
    if (c->n->op == RLX_OP_GlobalLpPool && rlx_param_int(c->n, RLX_A_p) < 1)
        return rlx_ictx_fail(c, "p must be >= 1, got %lld", (long long)rlx_param_int(c->n, RLX_A_p));
    if (x->rank < 0) return rlx_ictx_set_out_unknown(c, 0, x->dtype);
    if (x->rank < 3) return rlx_ictx_fail(c, "input has rank %d, expected at least 3 (N, C, spatial...)", x->rank);
    int64_t dims[RLX_MAX_RANK];
    int32_t syms[RLX_MAX_RANK];
    for (int i = 0; i < x->rank; i++) {
        dims[i] = i < 2 ? x->dims[i] : 1;
        syms[i] = i < 2 ? x->syms[i] : -1;
    }
    return rlx_ictx_set_out(c, 0, x->dtype, x->rank, dims, syms);
}

/* ------------------------------------------------------------ BatchNormalization */

static rlx_status infer_batchnorm(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    int v = c->n->version;
    if (v >= 14 && rlx_param_int(c->n, RLX_A_training_mode) != 0)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: training_mode=1 is not supported (rlx runs inference only)",
                        rlx_node_desc(c->n));
    for (int i = 1; i < c->n->n_out; i++)
        if (rlx_ictx_out(c, i))
            return rlx_fail(RLX_ERR_UNSUPPORTED,
                            "%s: output %d (running or saved statistics) exists only in training mode, which is not "
                            "supported (rlx runs inference only)",
                            rlx_node_desc(c->n), i);
    if (!rlx_dtype_is_float(x->dtype))
        return rlx_ictx_fail(c, "input has dtype %s, expected a float type", rlx_dtype_name(x->dtype));
    static const char *names[5] = { "X", "scale", "B", "mean", "var" };
    bool spatial = v >= 9 || rlx_param_int(c->n, RLX_A_spatial) != 0;
    for (int i = 1; i < 5; i++) {
        const rlx_value *p = rlx_ictx_in(c, i);
        if (!p) return rlx_ictx_fail(c, "input %s is required", names[i]);
        if (!rlx_dtype_is_float(p->dtype))
            return rlx_ictx_fail(c, "input %s has dtype %s, expected a float type", names[i], rlx_dtype_name(p->dtype));
        if (v < 15 && p->dtype != x->dtype)
            return rlx_ictx_fail(c, "input %s has dtype %s, X has %s", names[i], rlx_dtype_name(p->dtype),
                                 rlx_dtype_name(x->dtype));
        if (x->rank < 0 || p->rank < 0) continue;
        if (x->rank < 2) return rlx_ictx_fail(c, "X has rank %d, expected at least 2 (N, C, ...)", x->rank);
        if (spatial) {
            if (p->rank != 1 || (p->dims[0] >= 0 && x->dims[1] >= 0 && p->dims[0] != x->dims[1]))
                return rlx_ictx_fail(c, "input %s must have shape [C] with C = %lld", names[i], (long long)x->dims[1]);
        } else {
            /* BatchNormalization-7 with spatial=0: statistics per (C, D1, ...) */
            bool ok = p->rank == x->rank - 1;
            for (int d = 0; ok && d < p->rank; d++)
                ok = p->dims[d] < 0 || x->dims[d + 1] < 0 || p->dims[d] == x->dims[d + 1];
            if (!ok) return rlx_ictx_fail(c, "input %s must have the shape of X without N (spatial=0)", names[i]);
        }
    }
    return rlx_ictx_set_out_like(c, 0, x);
}

/* ------------------------------------------------------------ Gemm, MatMul */

static bool is_matmul_dtype(rlx_dtype dt) {
    return rlx_dtype_is_float(dt) || dt == RLX_DTYPE_I32 || dt == RLX_DTYPE_I64 || dt == RLX_DTYPE_U32 ||
           dt == RLX_DTYPE_U64;
}

/* Gemm: Y[M, N] = alpha * A' B' + beta * C, C broadcast to [M, N]. */
static rlx_status infer_gemm(rlx_infer_ctx *c) {
    const rlx_value *a = rlx_ictx_in(c, 0), *b = rlx_ictx_in(c, 1), *cc = rlx_ictx_in(c, 2);
    if (!is_matmul_dtype(a->dtype)) return rlx_ictx_fail(c, "A has unsupported dtype %s", rlx_dtype_name(a->dtype));
    if (b->dtype != a->dtype || (cc && cc->dtype != a->dtype))
        return rlx_ictx_fail(c, "A, B and C must have one dtype");
    if (!cc && c->n->version < 11) return rlx_ictx_fail(c, "input C is required before Gemm-11");
    if (a->rank < 0 || b->rank < 0) {
        int64_t dims[2] = { RLX_DIM_DYN, RLX_DIM_DYN };
        return rlx_ictx_set_out(c, 0, a->dtype, 2, dims, NULL);
    }
    if (a->rank != 2 || b->rank != 2)
        return rlx_ictx_fail(c, "A and B must be 2-D (got ranks %d and %d)", a->rank, b->rank);
    bool ta = rlx_param_int(c->n, RLX_A_transA) != 0, tb = rlx_param_int(c->n, RLX_A_transB) != 0;
    int64_t m = a->dims[ta ? 1 : 0], ka = a->dims[ta ? 0 : 1];
    int64_t kb = b->dims[tb ? 1 : 0], nn = b->dims[tb ? 0 : 1];
    if (ka >= 0 && kb >= 0 && ka != kb)
        return rlx_ictx_fail(c, "inner dimensions differ: A' is [%lld, %lld], B' is [%lld, %lld]", (long long)m,
                             (long long)ka, (long long)kb, (long long)nn);
    int64_t dims[2] = { m, nn };
    int32_t syms[2] = { a->syms[ta ? 1 : 0], b->syms[tb ? 0 : 1] };
    if (cc && cc->rank >= 0) {
        if (cc->rank > 2) return rlx_ictx_fail(c, "C has rank %d, expected at most 2", cc->rank);
        for (int i = 0; i < cc->rank; i++) {
            int64_t cd = cc->dims[i], od = dims[2 - cc->rank + i];
            if (cd >= 0 && od >= 0 && cd != 1 && cd != od)
                return rlx_ictx_fail(c, "C does not broadcast to [%lld, %lld]", (long long)m, (long long)nn);
        }
    }
    return rlx_ictx_set_out(c, 0, a->dtype, 2, dims, syms);
}

/* MatMul: numpy matmul. A 1-D operand gets a 1 prepended (A) or appended (B)
 * which is removed from the result; batch dims broadcast. */
static rlx_status infer_matmul(rlx_infer_ctx *c) {
    const rlx_value *a = rlx_ictx_in(c, 0), *b = rlx_ictx_in(c, 1);
    if (!is_matmul_dtype(a->dtype)) return rlx_ictx_fail(c, "A has unsupported dtype %s", rlx_dtype_name(a->dtype));
    if (b->dtype != a->dtype)
        return rlx_ictx_fail(c, "A and B have different dtypes (%s and %s)", rlx_dtype_name(a->dtype),
                             rlx_dtype_name(b->dtype));
    if (a->rank < 0 || b->rank < 0) return rlx_ictx_set_out_unknown(c, 0, a->dtype);
    if (a->rank < 1 || b->rank < 1) return rlx_ictx_fail(c, "MatMul operands must have rank >= 1");
    int ra = a->rank, rb = b->rank;
    int64_t ka = a->dims[ra - 1], kb = b->dims[rb == 1 ? 0 : rb - 2];
    if (ka >= 0 && kb >= 0 && ka != kb)
        return rlx_ictx_fail(c, "inner dimensions differ (%lld and %lld)", (long long)ka, (long long)kb);
    int rank = 0;
    int64_t dims[RLX_MAX_RANK];
    int32_t syms[RLX_MAX_RANK];
    int bra = ra > 2 ? ra - 2 : 0, brb = rb > 2 ? rb - 2 : 0;
    if (!rlx_broadcast_shapes(bra, a->dims, a->syms, brb, b->dims, b->syms, &rank, dims, syms)) {
        char sa[96], sb[96];
        return rlx_ictx_fail(c, "batch dims of %s and %s do not broadcast", rlx_shape_str(a->dims, ra, sa, sizeof sa),
                             rlx_shape_str(b->dims, rb, sb, sizeof sb));
    }
    if (ra >= 2) {
        dims[rank] = a->dims[ra - 2];
        syms[rank++] = a->syms[ra - 2];
    }
    if (rb >= 2) {
        dims[rank] = b->dims[rb - 1];
        syms[rank++] = b->syms[rb - 1];
    }
    return rlx_ictx_set_out(c, 0, a->dtype, rank, dims, syms);
}

/* ------------------------------------------------------------ Softmax family */

/* Softmax, LogSoftmax, Hardmax. Before version 13 the input is coerced to
 * 2-D at `axis` (default 1); from 13 they act along `axis` (default -1). */
static rlx_status infer_softmax(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    if (!rlx_dtype_is_float(x->dtype))
        return rlx_ictx_fail(c, "input has dtype %s, expected a float type", rlx_dtype_name(x->dtype));
    if (x->rank >= 0) {
        int64_t axis = rlx_softmax_axis(c->n);
        int ax;
        RLX_TRY(rlx_ictx_axis(c, axis, x->rank, &ax));
    }
    return rlx_ictx_set_out_like(c, 0, x);
}

/* ------------------------------------------------------------ Dropout */

static rlx_status infer_dropout(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0);
    if (!rlx_dtype_is_float(x->dtype))
        return rlx_ictx_fail(c, "input has dtype %s, expected a float type", rlx_dtype_name(x->dtype));
    const rlx_value *ratio = rlx_ictx_in(c, 1), *train = rlx_ictx_in(c, 2);
    if (c->n->version < 12 && c->n->n_in > 1) return rlx_ictx_fail(c, "Dropout-%d takes one input", c->n->version);
    if (ratio && !rlx_dtype_is_float(ratio->dtype))
        return rlx_ictx_fail(c, "ratio has dtype %s, expected a float type", rlx_dtype_name(ratio->dtype));
    if (train && train->dtype != RLX_DTYPE_BOOL)
        return rlx_ictx_fail(c, "training_mode has dtype %s, expected bool", rlx_dtype_name(train->dtype));
    rlx_ictx_set_out_like(c, 0, x);
    /* the mask is T before Dropout-10, bool from 10 */
    return rlx_ictx_set_out(c, 1, c->n->version < 10 ? x->dtype : RLX_DTYPE_BOOL, x->rank, x->dims, x->syms);
}

/* ------------------------------------------------------------ Resize, Upsample */

/* Reads a constant float tensor as doubles; false if not constant. */
static bool konst_doubles(const rlx_value *v, double *out, size_t cap, size_t *count) {
    *count = 0;
    if (!v || !v->konst) return false;
    const rlx_tensor *t = v->konst;
    size_t n = rlx_tensor_numel(t);
    if (n > cap || (n && !rlx_dtype_is_float(t->dtype))) return false;
    for (size_t i = 0; i < n; i++) out[i] = rlx_tensor_get_f64(t, i);
    *count = n;
    return true;
}

/* A 1-D input that is present but has no elements counts as absent (Resize-11
 * passes an empty `scales` when it uses `sizes`). */
static bool known_empty(const rlx_value *v) {
    return v && v->rank == 1 && v->dims[0] == 0;
}

static rlx_status infer_resize(rlx_infer_ctx *c) {
    const rlx_node *n = c->n;
    const rlx_value *x = rlx_ictx_in(c, 0);
    bool upsample = n->op == RLX_OP_Upsample;
    int v = n->version;
    if (x->rank < 0) return rlx_ictx_set_out_unknown(c, 0, x->dtype);
    if (x->dtype == RLX_DTYPE_STRING || x->dtype == RLX_DTYPE_BOOL || x->dtype == RLX_DTYPE_UNDEFINED)
        return rlx_ictx_fail(c, "input has unsupported dtype %s", rlx_dtype_name(x->dtype));
    rlx_resize_attrs ra;
    RLX_TRY(rlx_resize_attrs_read(n, x->rank, &ra));
    /* where the scales and sizes inputs sit in each version */
    int i_scales = -1, i_sizes = -1;
    if (upsample) {
        if (v >= 9) i_scales = 1;
    } else if (v == 10) {
        i_scales = 1;
    } else {
        i_scales = 2, i_sizes = 3;
    }
    int need = upsample ? (v >= 9 ? 2 : 1) : (v == 10 ? 2 : v == 11 ? 3 : 1);
    if (n->n_in < need) return rlx_ictx_fail(c, "expects at least %d inputs, got %d", need, n->n_in);
    if (upsample && v >= 9 && n->n_in > 2) return rlx_ictx_fail(c, "Upsample-9 takes 2 inputs");
    if (v == 10 && !upsample && n->n_in > 2) return rlx_ictx_fail(c, "Resize-10 takes 2 inputs");
    if (upsample && v < 9 && n->n_in > 1) return rlx_ictx_fail(c, "Upsample-7 takes 1 input (scales is an attribute)");

    double scales[RLX_MAX_RANK];
    int64_t sizes[RLX_MAX_RANK];
    size_t n_scales = 0, n_sizes = 0;
    bool have_scales = false, have_sizes = false, unknown = false;
    const rlx_value *vs = i_scales >= 0 ? rlx_ictx_in(c, i_scales) : NULL;
    const rlx_value *vz = i_sizes >= 0 ? rlx_ictx_in(c, i_sizes) : NULL;
    if (vs && vs->dtype != RLX_DTYPE_F32) return rlx_ictx_fail(c, "scales must be f32, got %s", rlx_dtype_name(vs->dtype));
    if (vz && vz->dtype != RLX_DTYPE_I64) return rlx_ictx_fail(c, "sizes must be i64, got %s", rlx_dtype_name(vz->dtype));
    /* roi, scales and sizes are 1-D tensors (Resize-10/11/13/18/19, Upsample-9); roi only where
     * it is read (tf_crop_and_resize: onnxruntime ignores it otherwise, whatever its shape) */
    if (!upsample && v >= 11 && ra.coord == RLX_COORD_TF_CROP_AND_RESIZE) {
        /* refused when the model loads, not when a kernel first runs
         * (onnxruntime takes the whole input then; the spec gives no default) */
        if (!rlx_ictx_in(c, 1) || known_empty(rlx_ictx_in(c, 1)))
            return rlx_ictx_fail(c, "coordinate_transformation_mode tf_crop_and_resize needs roi");
        RLX_TRY(rlx_ictx_operand_rank(c, 1, "roi", RLX_RANK_1D));
    }
    /* both given, each with a length known to be non-zero: refused when the
     * model loads (the sizes were taken and the scales never looked at until
     * a kernel ran) */
    if (vs && vz && vs->rank == 1 && vs->dims[0] > 0 && vz->rank == 1 && vz->dims[0] > 0)
        return rlx_ictx_fail(c, "only one of scales and sizes may be given (scales has %lld values, sizes %lld)",
                             (long long)vs->dims[0], (long long)vz->dims[0]);
    if (vs) RLX_TRY(rlx_ictx_operand_rank(c, i_scales, "scales", RLX_RANK_1D));
    if (vz) RLX_TRY(rlx_ictx_operand_rank(c, i_sizes, "sizes", RLX_RANK_1D));
    if (upsample && v < 9) {
        size_t cnt;
        const float *f = rlx_param_floats(n, RLX_A_scales, &cnt);
        if (!f) return rlx_ictx_fail(c, "attribute 'scales' is required");
        if (cnt > RLX_MAX_RANK) return rlx_ictx_fail(c, "scales has %zu values for rank %d", cnt, x->rank);
        for (size_t i = 0; i < cnt; i++) scales[i] = f[i];
        n_scales = cnt;
        have_scales = true;
    } else {
        if (vz && !known_empty(vz)) {
            if (!rlx_konst_ints(vz, sizes, RLX_MAX_RANK, &n_sizes)) {
                if (vz->konst) return rlx_ictx_fail(c, "sizes has more than %d values", RLX_MAX_RANK);
                unknown = true;
            } else if (n_sizes > 0) {
                have_sizes = true;
            }
        }
        if (vs && !known_empty(vs) && !have_sizes && !unknown) {
            if (!konst_doubles(vs, scales, RLX_MAX_RANK, &n_scales)) {
                if (vs->konst) return rlx_ictx_fail(c, "scales has more than %d values", RLX_MAX_RANK);
                unknown = true;
            } else if (n_scales > 0) {
                have_scales = true;
            }
        }
        if (!have_scales && !have_sizes && !unknown)
            return rlx_ictx_fail(c, "one of scales and sizes must be given");
    }
    rlx_resize_geom g;
    RLX_TRY(rlx_resize_geom_resolve(n, &ra, x->dims, x->rank, have_scales ? scales : NULL, n_scales,
                                    have_sizes ? sizes : NULL, n_sizes, NULL, 0, &g));
    int32_t syms[RLX_MAX_RANK];
    for (int d = 0; d < x->rank; d++) syms[d] = (g.out[d] < 0 && g.scale[d] == 1.0) ? x->syms[d] : -1;
    return rlx_ictx_set_out(c, 0, x->dtype, x->rank, g.out, syms);
}

/* ------------------------------------------------------------ GridSample */

/* GridSample-16 (4-D X) and -20/22 (X [N, C, D1..Dr], grid [N, O1..Or, r]):
 * Y [N, C, O1..Or]. Attributes, ranks, the grid's last dim, the batch and
 * cubic's two spatial dims are checked here, when the model loads. */
static rlx_status infer_gridsample(rlx_infer_ctx *c) {
    const rlx_node *n = c->n;
    const rlx_value *x = rlx_ictx_in(c, 0), *g = rlx_ictx_in(c, 1);
    rlx_gridsample_attrs a;
    RLX_TRY(rlx_gridsample_attrs_read(n, &a));
    if (!rlx_dtype_is_float(x->dtype))
        return rlx_ictx_fail(c, "X has dtype %s; GridSample takes float data (f32, f16, bf16, f64)",
                             rlx_dtype_name(x->dtype));
    if (!rlx_dtype_is_float(g->dtype))
        return rlx_ictx_fail(c, "grid has dtype %s, expected a float type", rlx_dtype_name(g->dtype));
    if (x->rank < 0 && g->rank < 0) return rlx_ictx_set_out_unknown(c, 0, x->dtype);
    int rank = x->rank >= 0 ? x->rank : g->rank;
    if (rank < 3) return rlx_ictx_fail(c, "%s has rank %d, expected at least 3", x->rank >= 0 ? "X" : "grid", rank);
    if (n->version < 20 && rank != 4)
        return rlx_ictx_fail(c, "GridSample-%d takes a 4-D X and grid, got rank %d", n->version, rank);
    if (x->rank >= 0 && g->rank >= 0 && g->rank != x->rank)
        return rlx_ictx_fail(c, "grid has rank %d, expected %d (X's rank)", g->rank, x->rank);
    int r = rank - 2;
    if (a.mode == RLX_GS_CUBIC && r != 2)
        return rlx_ictx_fail(c, "mode %s needs 2 spatial dims (a 4-D X), got %d", n->version >= 20 ? "cubic" : "bicubic",
                             r);
    if (g->rank >= 0 && g->dims[r + 1] >= 0 && g->dims[r + 1] != r)
        return rlx_ictx_fail(c, "grid's last dim is %lld, expected %d (X's spatial dims)", (long long)g->dims[r + 1], r);
    if (x->rank >= 0 && g->rank >= 0 && x->dims[0] >= 0 && g->dims[0] >= 0 && x->dims[0] != g->dims[0])
        return rlx_ictx_fail(c, "grid's batch %lld differs from X's %lld", (long long)g->dims[0], (long long)x->dims[0]);
    int64_t dims[RLX_MAX_RANK];
    int32_t syms[RLX_MAX_RANK];
    /* the batch: X's, unless only the grid's is static (or known at all) */
    bool from_x = x->rank >= 0 && (x->dims[0] >= 0 || g->rank < 0 || g->dims[0] < 0);
    dims[0] = from_x ? x->dims[0] : g->rank >= 0 ? g->dims[0] : RLX_DIM_DYN;
    syms[0] = from_x ? x->syms[0] : g->rank >= 0 ? g->syms[0] : -1;
    dims[1] = x->rank >= 0 ? x->dims[1] : RLX_DIM_DYN;
    syms[1] = x->rank >= 0 ? x->syms[1] : -1;
    bool known = dims[0] > 0 && dims[1] > 0; /* an output known to have elements */
    for (int d = 0; d < r; d++) {
        dims[2 + d] = g->rank >= 0 ? g->dims[1 + d] : RLX_DIM_DYN;
        syms[2 + d] = g->rank >= 0 ? g->syms[1 + d] : -1;
        known &= dims[2 + d] > 0;
    }
    /* border and reflection read a pixel for every output: an empty input
     * dim leaves none (zeros reads 0) */
    if (a.pad != RLX_GS_ZEROS && known && x->rank >= 0)
        for (int d = 0; d < r; d++)
            if (x->dims[2 + d] == 0)
                return rlx_ictx_fail(c, "padding_mode %s needs a pixel along every spatial dim; X's dim %d is empty",
                                     a.pad == RLX_GS_BORDER ? "border" : "reflection", 2 + d);
    return rlx_ictx_set_out(c, 0, x->dtype, rank, dims, syms);
}

/* ------------------------------------------------------------ the table */

#define SOFTMAX_LIKE                                                                                    \
    .versions = { 1, 11, 13 }, .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1, .infer = infer_softmax, \
    .attrs = { { "axis", RLX_ATTR_INT, false } }

const rlx_op_def rlx_ops_nn[] = {
#include "ir/ops/ops_nn.def"
};
const size_t rlx_ops_nn_count = RLX_ARRAY_LEN(rlx_ops_nn);
