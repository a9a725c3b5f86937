/* Quantization ops: QuantizeLinear and DequantizeLinear (ONNX since-versions
 * 10, 13, 19, 21, 23), DynamicQuantizeLinear (11), QLinearMatMul (10, 21),
 * MatMulInteger (10), QLinearConv (10), ConvInteger (10).
 * Granularity and matmul parameter resolution live here too (quant_params.h)
 * so that the CPU kernels check shapes exactly as inference does. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/tensor.h"
#include "ir/ops/conv_geom.h"
#include "ir/ops/internal_ops.h"
#include "ir/ops/ops.h"
#include "ir/ops/quant_params.h"

/* ------------------------------------------------------------ types */


typedef struct type_set {
    const rlx_dtype *t;
    int n;
} type_set;

#define SET(arr) ((type_set){ (arr), (int)RLX_ARRAY_LEN(arr) })

static const rlx_dtype k_q8[] = { RLX_DTYPE_U8, RLX_DTYPE_I8 };
static const rlx_dtype k_q16[] = { RLX_DTYPE_U8, RLX_DTYPE_I8, RLX_DTYPE_U16, RLX_DTYPE_I16 };
static const rlx_dtype k_floats[] = { RLX_DTYPE_F32, RLX_DTYPE_F16, RLX_DTYPE_BF16 };
static const rlx_dtype k_f32[] = { RLX_DTYPE_F32 };
static const rlx_dtype k_i32[] = { RLX_DTYPE_I32 };
static const rlx_dtype k_precisions[] = { RLX_DTYPE_F32, RLX_DTYPE_F16, RLX_DTYPE_BF16, RLX_DTYPE_F64 };
static const rlx_dtype k_q_in19[] = { RLX_DTYPE_F32, RLX_DTYPE_F16, RLX_DTYPE_BF16, RLX_DTYPE_I32 };
static const rlx_dtype k_q_in10[] = { RLX_DTYPE_F32, RLX_DTYPE_I32 };
static const rlx_dtype k_dq_in21[] = { RLX_DTYPE_U8, RLX_DTYPE_I8, RLX_DTYPE_U16, RLX_DTYPE_I16, RLX_DTYPE_I32 };
static const rlx_dtype k_dq_in10[] = { RLX_DTYPE_U8, RLX_DTYPE_I8, RLX_DTYPE_I32 };

static bool in_set(rlx_dtype dt, type_set s) {
    for (int i = 0; i < s.n; i++)
        if (s.t[i] == dt) return true;
    return false;
}

/* Fails unless dtype `dt` of input `role` is in `s`: RLX_ERR_UNSUPPORTED for
 * the ONNX types rlx has no dtype for, RLX_ERR_INVALID_MODEL otherwise. */
static rlx_status check_type(const rlx_node *n, const char *role, int64_t dt, type_set s) {
    if (in_set((rlx_dtype)dt, s)) return RLX_OK;
    const char *onnx = (dt >= 17 && dt <= 26) ? rlx_onnx_type_name((int32_t)dt) : NULL; /* float8, int4, ... */
    if (onnx)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: %s has type %s, which rlx does not support", rlx_node_desc(n), role,
                        onnx);
    char list[160];
    size_t o = 0;
    list[0] = 0;
    for (int i = 0; i < s.n && o < sizeof list; i++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", rlx_dtype_name(s.t[i]));
    const char *name = rlx_dtype_size((rlx_dtype)dt) ? rlx_dtype_name((rlx_dtype)dt) : "unknown";
    return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %s has dtype %s (%lld), expected one of %s", rlx_node_desc(n), role,
                    name, (long long)dt, list);
}

static rlx_status check_input(rlx_infer_ctx *c, int i, const char *role, type_set s) {
    const rlx_value *v = rlx_ictx_in(c, i);
    return v ? check_type(c->n, role, v->dtype, s) : RLX_OK;
}

/* Zero point i must have the dtype of its tensor j. */
static rlx_status check_same_type(rlx_infer_ctx *c, int i, const char *role, int j, const char *other) {
    const rlx_value *v = rlx_ictx_in(c, i), *w = rlx_ictx_in(c, j);
    if (!v || !w || v->dtype == w->dtype) return RLX_OK;
    return rlx_ictx_fail(c, "%s has dtype %s, %s has %s; they must match", role, rlx_dtype_name(v->dtype), other,
                         rlx_dtype_name(w->dtype));
}

/* Element count when every dim is known, else -1. */
static int64_t known_numel(const int64_t *d, int rank) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (d[i] < 0) return -1;
        n *= d[i];
    }
    return n;
}

/* A value with exactly one element (rank 0, or all dims 1); false when unknown. */
static bool is_single(const rlx_value *v) { return v && v->rank >= 0 && known_numel(v->dims, v->rank) == 1; }

/* ------------------------------------------------------------ granularity */

rlx_status rlx_quant_resolve_gran(const rlx_node *n, const int64_t *x, int xr, const int64_t *s, int sr,
                                  const int64_t *zp, int zr, rlx_quant_gran *g) {
    memset(g, 0, sizeof *g);
    g->mode = RLX_QUANT_PER_TENSOR;
    const char *desc = rlx_node_desc(n);
    char a[96], b[96];
    if (sr < 0) return RLX_OK; /* decided at run time */
    if (zr >= 0) {
        bool same = zr == sr;
        for (int i = 0; same && i < sr; i++)
            if (s[i] >= 0 && zp[i] >= 0 && s[i] != zp[i]) same = false;
        if (!same && !(known_numel(s, sr) == 1 && known_numel(zp, zr) == 1))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: zero point has shape %s, scale has %s; they must match", desc,
                            rlx_shape_str_q(zp, zr, a, sizeof a), rlx_shape_str_q(s, sr, b, sizeof b));
    }
    int64_t block = n->version >= 21 ? rlx_param_int(n, RLX_A_block_size) : 0;
    int64_t axis_attr = n->version >= 13 ? rlx_param_int(n, RLX_A_axis) : 1;
    if (block < 0) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: block_size %lld is negative", desc, (long long)block);
    if (block > 0) {
        g->mode = RLX_QUANT_BLOCKED;
        g->block_size = block;
        if (xr < 0) return RLX_OK;
        if (sr != xr)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: blocked quantization needs a scale of x's rank %d, got shape %s",
                            desc, xr, rlx_shape_str_q(s, sr, a, sizeof a));
        if (!rlx_norm_axis(axis_attr, xr, &g->axis))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: axis %lld is out of range for rank %d", desc,
                            (long long)axis_attr, xr);
        for (int i = 0; i < xr; i++) {
            int64_t want = x[i];
            /* ceil(x / block) without x + block - 1, which overflows for a
             * block_size near INT64_MAX */
            if (i == g->axis) want = x[i] >= 0 ? x[i] / block + (x[i] % block != 0) : RLX_DIM_DYN;
            if (want >= 0 && s[i] >= 0 && s[i] != want)
                return rlx_fail(RLX_ERR_INVALID_MODEL,
                                "%s: scale has shape %s; x %s with block_size %lld along axis %d needs dim %d = %lld",
                                desc, rlx_shape_str_q(s, sr, a, sizeof a), rlx_shape_str_q(x, xr, b, sizeof b),
                                (long long)block, g->axis, i, (long long)want);
        }
        return RLX_OK;
    }
    if (sr == 0 || known_numel(s, sr) == 1) return RLX_OK; /* per tensor */
    if (sr != 1)
        return rlx_fail(RLX_ERR_INVALID_MODEL,
                        "%s: scale of shape %s is neither a scalar, nor 1-D (per axis), nor blocked (block_size)", desc,
                        rlx_shape_str_q(s, sr, a, sizeof a));
    if (n->version < 13)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: scale has shape %s; version %d needs a scalar (per-axis from 13)",
                        desc, rlx_shape_str_q(s, sr, a, sizeof a), n->version);
    g->mode = RLX_QUANT_PER_AXIS;
    if (xr < 0) return RLX_OK;
    if (xr == 0)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: x is a scalar but the scale has shape %s", desc,
                        rlx_shape_str_q(s, sr, a, sizeof a));
    if (xr == 1) axis_attr = 0; /* a 1-D x has one axis whatever the attribute says */
    if (!rlx_norm_axis(axis_attr, xr, &g->axis))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: axis %lld is out of range for rank %d", desc, (long long)axis_attr,
                        xr);
    if (x[g->axis] >= 0 && s[0] >= 0 && s[0] != x[g->axis])
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: scale has %lld elements, x has %lld along axis %d", desc,
                        (long long)s[0], (long long)x[g->axis], g->axis);
    return RLX_OK;
}

/* ------------------------------------------------------------ matmul parameters */

rlx_status rlx_quant_mm_param(const rlx_node *n, const char *what, bool per_row, const int64_t *op, int op_rank,
                              const int64_t *p, int pr, int64_t *strides) {
    int r2 = op_rank < 2 ? 2 : op_rank;
    int64_t d2[RLX_MAX_RANK];
    if (op_rank == 1) {
        if (per_row) d2[0] = 1, d2[1] = op[0];
        else d2[0] = op[0], d2[1] = 1;
    } else {
        memcpy(d2, op, sizeof(int64_t) * (size_t)op_rank);
    }
    for (int i = 0; i < r2; i++) strides[i] = 0;
    if (pr <= 0 || known_numel(p, pr) == 1) return RLX_OK;
    const char *desc = rlx_node_desc(n);
    char a[96], b[96];
    const char *kind = per_row ? "per row [M] or [..., M, 1]" : "per column [N] or [..., 1, N]";
    if (pr == 1) {
        int target = per_row ? r2 - 2 : r2 - 1;
        if (d2[target] >= 0 && p[0] >= 0 && p[0] != d2[target])
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %s has shape %s; for an operand of shape %s it must be %s",
                            desc, what, rlx_shape_str_q(p, pr, a, sizeof a), rlx_shape_str_q(op, op_rank, b, sizeof b),
                            kind);
        strides[target] = 1;
        return RLX_OK;
    }
    int reduced = per_row ? r2 - 1 : r2 - 2;
    bool ok = pr <= r2;
    int64_t step = 1;
    for (int j = pr - 1; ok && j >= 0; j--) {
        int i = r2 - pr + j;
        int64_t pd = p[j];
        if (i == reduced && pd != 1 && pd >= 0) ok = false;
        else if (pd != 1 && pd >= 0 && d2[i] >= 0 && pd != d2[i]) ok = false;
        strides[i] = pd == 1 ? 0 : step;
        if (pd > 0) step *= pd;
    }
    if (!ok)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %s has shape %s; for an operand of shape %s it must be %s", desc,
                        what, rlx_shape_str_q(p, pr, a, sizeof a), rlx_shape_str_q(op, op_rank, b, sizeof b), kind);
    return RLX_OK;
}

/* ------------------------------------------------------------ inference */

static type_set q8(void) { return SET(k_q8); }
static type_set q16(void) { return SET(k_q16); }
static type_set floats(void) { return SET(k_floats); }
static type_set f32only(void) { return SET(k_f32); }

static rlx_status check_gran(rlx_infer_ctx *c) {
    const rlx_value *x = rlx_ictx_in(c, 0), *s = rlx_ictx_in(c, 1), *z = rlx_ictx_in(c, 2);
    rlx_quant_gran g;
    return rlx_quant_resolve_gran(c->n, x->dims, x->rank, s->dims, s->rank, z ? z->dims : NULL, z ? z->rank : -1, &g);
}

/* QuantizeLinear: y = saturate(round_half_even(x / y_scale) + y_zero_point).
 * Output dtype: y_zero_point's, else output_dtype (21+), else u8. */
static rlx_status infer_quantize(rlx_infer_ctx *c) {
    const rlx_node *n = c->n;
    int v = n->version;
    RLX_TRY(check_input(c, 0, "input x", v >= 19 ? SET(k_q_in19) : SET(k_q_in10)));
    RLX_TRY(check_input(c, 1, "input y_scale", v >= 19 ? floats() : f32only()));
    RLX_TRY(check_input(c, 2, "input y_zero_point", v >= 21 ? q16() : q8()));
    const rlx_value *zp = rlx_ictx_in(c, 2);
    rlx_dtype out = zp ? zp->dtype : RLX_DTYPE_U8;
    int64_t od = v >= 21 ? rlx_param_int(n, RLX_A_output_dtype) : 0;
    if (od) {
        RLX_TRY(check_type(n, "output_dtype", od, q16()));
        if (zp && zp->dtype != (rlx_dtype)od)
            return rlx_ictx_fail(c, "output_dtype %s differs from y_zero_point's dtype %s", rlx_dtype_name((rlx_dtype)od),
                                 rlx_dtype_name(zp->dtype));
        out = (rlx_dtype)od;
    }
    int64_t prec = v >= 23 ? rlx_param_int(n, RLX_A_precision) : 0;
    if (prec) RLX_TRY(check_type(n, "precision", prec, SET(k_precisions)));
    if (v < 23 && v >= 19) {
        const rlx_value *x = rlx_ictx_in(c, 0), *s = rlx_ictx_in(c, 1);
        if (rlx_dtype_is_float(x->dtype) && x->dtype != s->dtype)
            return rlx_ictx_fail(c, "x has dtype %s, y_scale %s; they must match before version 23",
                                 rlx_dtype_name(x->dtype), rlx_dtype_name(s->dtype));
    }
    RLX_TRY(check_gran(c));
    const rlx_value *x = rlx_ictx_in(c, 0);
    return rlx_ictx_set_out(c, 0, out, x->rank, x->dims, x->syms);
}

/* DequantizeLinear: y = (x - x_zero_point) * x_scale. Output dtype:
 * output_dtype (23+), else x_scale's. */
static rlx_status infer_dequantize(rlx_infer_ctx *c) {
    const rlx_node *n = c->n;
    int v = n->version;
    RLX_TRY(check_input(c, 0, "input x",
                        v >= 21 ? SET(k_dq_in21) : SET(k_dq_in10)));
    RLX_TRY(check_input(c, 1, "input x_scale", v >= 19 ? floats() : f32only()));
    RLX_TRY(check_same_type(c, 2, "x_zero_point", 0, "x"));
    const rlx_value *zp = rlx_ictx_in(c, 2);
    if (zp && zp->konst && zp->dtype == RLX_DTYPE_I32) /* a run-time one: k_dequantize */
        RLX_TRY(rlx_quant_check_i32_zp(n, RLX_ERR_INVALID_MODEL, zp->konst));
    rlx_dtype out = rlx_ictx_in(c, 1)->dtype;
    int64_t od = v >= 23 ? rlx_param_int(n, RLX_A_output_dtype) : 0;
    if (od) {
        RLX_TRY(check_type(n, "output_dtype", od, floats()));
        out = (rlx_dtype)od;
    }
    RLX_TRY(check_gran(c));
    const rlx_value *x = rlx_ictx_in(c, 0);
    return rlx_ictx_set_out(c, 0, out, x->rank, x->dims, x->syms);
}

static rlx_status infer_dynamic_quantize(rlx_infer_ctx *c) {
    RLX_TRY(check_input(c, 0, "input x", f32only()));
    const rlx_value *x = rlx_ictx_in(c, 0);
    rlx_ictx_set_out(c, 0, RLX_DTYPE_U8, x->rank, x->dims, x->syms);
    rlx_ictx_set_out(c, 1, RLX_DTYPE_F32, 0, NULL, NULL);
    return rlx_ictx_set_out(c, 2, RLX_DTYPE_U8, 0, NULL, NULL);
}

/* numpy.matmul shape of inputs ia and ib into output 0 with dtype dt. */
static rlx_status infer_matmul_shape(rlx_infer_ctx *c, int ia, int ib, rlx_dtype dt) {
    const rlx_value *a = rlx_ictx_in(c, ia), *b = rlx_ictx_in(c, ib);
    if (a->rank < 0 || b->rank < 0) return rlx_ictx_set_out_unknown(c, 0, dt);
    if (a->rank == 0 || b->rank == 0) return rlx_ictx_fail(c, "matmul of a scalar");
    int64_t ka = a->dims[a->rank - 1], kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
    char s1[96], s2[96];
    if (ka >= 0 && kb >= 0 && ka != kb)
        return rlx_ictx_fail(c, "shapes %s and %s do not multiply (inner dims %lld and %lld)",
                             rlx_shape_str(a->dims, a->rank, s1, sizeof s1), rlx_shape_str(b->dims, b->rank, s2, sizeof s2),
                             (long long)ka, (long long)kb);
    int ra = a->rank > 2 ? a->rank - 2 : 0, rb = b->rank > 2 ? b->rank - 2 : 0, r;
    int64_t dims[RLX_MAX_RANK + 2];
    int32_t syms[RLX_MAX_RANK + 2];
    if (!rlx_broadcast_shapes(ra, a->dims, a->syms, rb, b->dims, b->syms, &r, dims, syms))
        return rlx_ictx_fail(c, "batch dims of %s and %s do not broadcast", rlx_shape_str(a->dims, a->rank, s1, sizeof s1),
                             rlx_shape_str(b->dims, b->rank, s2, sizeof s2));
    if (a->rank >= 2) dims[r] = a->dims[a->rank - 2], syms[r] = a->syms[a->rank - 2], r++;
    if (b->rank >= 2) dims[r] = b->dims[b->rank - 1], syms[r] = b->syms[b->rank - 1], r++;
    if (r > RLX_MAX_RANK) return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: output rank %d is too large", rlx_node_desc(c->n), r);
    return rlx_ictx_set_out(c, 0, dt, r, dims, syms);
}

static rlx_status check_mm_param(rlx_infer_ctx *c, int ip, const char *what, bool per_row, int iop) {
    const rlx_value *p = rlx_ictx_in(c, ip), *op = rlx_ictx_in(c, iop);
    if (!p || !op || op->rank < 1 || p->rank < 0) return RLX_OK;
    int64_t strides[RLX_MAX_RANK];
    return rlx_quant_mm_param(c->n, what, per_row, op->dims, op->rank, p->dims, p->rank, strides);
}

int64_t rlx_quant_scale_bad(const rlx_tensor *scale, rlx_qscale_rule rule) {
    if (!scale || (scale->dtype != RLX_DTYPE_F32 && scale->dtype != RLX_DTYPE_F64)) return -1;
    size_t count = rlx_tensor_numel(scale);
    for (size_t i = 0; i < count; i++) {
        double v = rlx_tensor_get_f64(scale, i);
        bool ok = isfinite(v) && (rule == RLX_QSCALE_DEQUANT || v != 0) && (rule != RLX_QSCALE_POSITIVE || v > 0);
        if (!ok) return (int64_t)i;
    }
    return -1;
}

const char *rlx_quant_scale_rule_text(rlx_qscale_rule rule) {
    switch (rule) {
    case RLX_QSCALE_DEQUANT:
        return "the scale of an operand of an integer output must be finite (0 is fine: the output is the zero "
               "point; NaN or inf has no integer result, onnxruntime returns arbitrary levels)";
    case RLX_QSCALE_POSITIVE: return "a scale must be finite and positive";
    case RLX_QSCALE_REQUANT: break;
    }
    return "a requantization scale must be finite and nonzero (a division by 0 or NaN has no integer result: "
           "onnxruntime returns arbitrary levels)";
}

rlx_status rlx_quant_check_scale(const rlx_node *n, rlx_status st, const char *what, const rlx_tensor *scale,
                                 rlx_qscale_rule rule) {
    int64_t i = rlx_quant_scale_bad(scale, rule);
    if (i < 0) return RLX_OK;
    return rlx_fail(st, "%s: %s element %lld is %g; %s", rlx_node_desc(n), what, (long long)i,
                    rlx_tensor_get_f64(scale, (size_t)i), rlx_quant_scale_rule_text(rule));
}

rlx_status rlx_quant_check_i32_zp(const rlx_node *n, rlx_status st, const rlx_tensor *zp) {
    size_t cnt = zp ? rlx_tensor_numel(zp) : 0;
    for (size_t i = 0; i < cnt; i++) {
        int64_t z = rlx_tensor_get_i64(zp, i);
        if (z != 0)
            return rlx_fail(st,
                            "%s: x_zero_point element %zu is %lld; an int32 x has no zero point (ONNX: it must be "
                            "0, or absent)",
                            rlx_node_desc(n), i, (long long)z);
    }
    return RLX_OK;
}

/* The constant scales (inputs 1, 4, 6) of QLinearMatMul / QLinearConv. */
static rlx_status check_const_scales(rlx_infer_ctx *c) {
    for (int i = 1; i <= 6; i += i == 1 ? 3 : 2) {
        const rlx_value *p = rlx_ictx_in(c, i);
        if (p && p->konst)
            RLX_TRY(rlx_quant_check_scale(c->n, RLX_ERR_INVALID_MODEL,
                                          rlx_quant_scale_name(c->n->op == RLX_OP_QLinearConv, i), p->konst,
                                          rlx_quant_scale_rule(i)));
    }
    return RLX_OK;
}

/* MatMulInteger(A, B, a_zero_point?, b_zero_point?) -> i32. */
static rlx_status infer_matmul_integer(rlx_infer_ctx *c) {
    RLX_TRY(check_input(c, 0, "input A", q8()));
    RLX_TRY(check_input(c, 1, "input B", q8()));
    RLX_TRY(check_same_type(c, 2, "a_zero_point", 0, "A"));
    RLX_TRY(check_same_type(c, 3, "b_zero_point", 1, "B"));
    RLX_TRY(check_mm_param(c, 2, "a_zero_point", true, 0));
    RLX_TRY(check_mm_param(c, 3, "b_zero_point", false, 1));
    return infer_matmul_shape(c, 0, 1, RLX_DTYPE_I32);
}

/* The QDQ chain of a QLinearConv or QLinearMatMul (passes/fuse_qlinear_ew.c;
 * internal inputs 9.., never accepted from a file: the table says at most 9): the program of
 * the _rlx_ew_* attributes over inputs 9 .., exactly one of them absent
 * (-1), which is the product's 8-bit result (qin: its dequantization);
 * the others broadcast to the product's output; an 8-bit program
 * output (qout) of the product's shape, which becomes the node's. */
static rlx_status infer_q8_chain(rlx_infer_ctx *c) {
    rlx_ew_prog p;
    RLX_TRY(rlx_ew_prog_read_at(c->n, RLX_QEPI_PREFIX, RLX_QEPI_FIRST, &p));
    const rlx_value *y = rlx_ictx_out(c, 0), *yz = rlx_ictx_in(c, 7);
    if (!y || !rlx_value_is_static(y) || !yz) return rlx_ictx_fail(c, "a QDQ chain needs a static output shape");
    int slot = -1;
    for (int i = 0; i < p.n_in; i++) {
        const rlx_value *x = rlx_ictx_in(c, RLX_QEPI_FIRST + i);
        if (!x) {
            if (slot >= 0) return rlx_ictx_fail(c, "the QDQ chain has more than one absent input");
            slot = i;
            if (p.in_scale[i] == 0) return rlx_ictx_fail(c, "the QDQ chain's convolution input has no qin");
            continue;
        }
        bool q8 = p.in_scale[i] != 0;
        if (q8 ? x->dtype != RLX_DTYPE_U8 && x->dtype != RLX_DTYPE_I8 : x->dtype != RLX_DTYPE_F32)
            return rlx_ictx_fail(c, "QDQ chain input %d has dtype %s", i, rlx_dtype_name(x->dtype));
        bool ok = rlx_value_is_static(x) && x->rank <= y->rank;
        for (int d = 0; ok && d < x->rank; d++) {
            int64_t xd = x->dims[d], yd = y->dims[y->rank - x->rank + d];
            ok = xd == yd || xd == 1;
        }
        if (!ok) return rlx_ictx_fail(c, "QDQ chain input %d does not broadcast to the product's output", i);
    }
    if (slot < 0) return rlx_ictx_fail(c, "the QDQ chain has no input for the product's result");
    if (p.out_scale == 0) return rlx_ictx_fail(c, "the QDQ chain's output is not 8-bit (qout)");
    int64_t dims[RLX_MAX_RANK];
    for (int d = 0; d < y->rank; d++) dims[d] = y->dims[d];
    return rlx_ictx_set_out(c, 0, p.dtype, y->rank, dims, NULL);
}

/* QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp). */
static rlx_status infer_qlinear_matmul(rlx_infer_ctx *c) {
    type_set sc = c->n->version >= 21 ? floats() : f32only();
    RLX_TRY(check_input(c, 0, "input a", q8()));
    RLX_TRY(check_input(c, 3, "input b", q8()));
    RLX_TRY(check_input(c, 7, "input y_zero_point", q8()));
    RLX_TRY(check_input(c, 1, "input a_scale", sc));
    RLX_TRY(check_input(c, 4, "input b_scale", sc));
    RLX_TRY(check_input(c, 6, "input y_scale", sc));
    RLX_TRY(check_same_type(c, 2, "a_zero_point", 0, "a"));
    RLX_TRY(check_same_type(c, 5, "b_zero_point", 3, "b"));
    RLX_TRY(check_mm_param(c, 1, "a_scale", true, 0));
    RLX_TRY(check_mm_param(c, 2, "a_zero_point", true, 0));
    RLX_TRY(check_mm_param(c, 4, "b_scale", false, 3));
    RLX_TRY(check_mm_param(c, 5, "b_zero_point", false, 3));
    for (int i = 6; i < 8; i++) {
        /* none (an empty one) too: the kernel refused it as the model's
         * fault when it ran, also where the caller fed it */
        const rlx_value *p = rlx_ictx_in(c, i);
        int64_t n = p->rank >= 0 ? known_numel(p->dims, p->rank) : -1;
        char s[96];
        if (n == 0 || n > 1)
            return rlx_ictx_fail_from(c, 1u << i, "%s has shape %s; it must have one element (per tensor)",
                                      i == 6 ? "y_scale" : "y_zero_point", rlx_shape_str_q(p->dims, p->rank, s, sizeof s));
    }
    RLX_TRY(check_const_scales(c));
    RLX_TRY(infer_matmul_shape(c, 0, 3, rlx_ictx_in(c, 7)->dtype));
    return c->n->n_in > RLX_QEPI_FIRST ? infer_q8_chain(c) : RLX_OK;
}

/* Conv output shape of x (input ix) and w (input iw) with dtype dt. */
static rlx_status infer_conv_shape(rlx_infer_ctx *c, int ix, int iw, rlx_dtype dt, int64_t *c_out) {
    const rlx_value *x = rlx_ictx_in(c, ix), *w = rlx_ictx_in(c, iw);
    *c_out = RLX_DIM_DYN;
    if (x->rank < 0 || w->rank < 0) return rlx_ictx_set_out_unknown(c, 0, dt);
    rlx_conv_geom g;
    RLX_TRY(rlx_conv_geom_resolve(c->n, RLX_GEOM_CONV, x->dims, x->rank, w->dims, w->rank, &g));
    int64_t dims[RLX_MAX_RANK];
    int32_t syms[RLX_MAX_RANK];
    dims[0] = x->dims[0], syms[0] = x->syms[0];
    dims[1] = g.c_out, syms[1] = -1;
    for (int i = 0; i < g.nsp; i++) dims[2 + i] = g.out[i], syms[2 + i] = -1;
    rlx_ictx_set_out(c, 0, dt, x->rank, dims, syms);
    *c_out = g.c_out;
    return RLX_OK;
}

/* A per-tensor or per-output-channel parameter: one element or [M]. */
static rlx_status check_channel_param(rlx_infer_ctx *c, int i, const char *what, int64_t m, bool allow_channel) {
    const rlx_value *p = rlx_ictx_in(c, i);
    if (!p || p->rank < 0 || is_single(p)) return RLX_OK;
    char s[96];
    if (!allow_channel)
        return rlx_ictx_fail(c, "%s has shape %s; it must have one element (per tensor)", what,
                             rlx_shape_str_q(p->dims, p->rank, s, sizeof s));
    if (p->rank != 1 || (m >= 0 && p->dims[0] >= 0 && p->dims[0] != m))
        return rlx_ictx_fail(c, "%s has shape %s; it must have one element or %lld (one per output channel)", what,
                             rlx_shape_str_q(p->dims, p->rank, s, sizeof s), (long long)m);
    return RLX_OK;
}

/* ConvInteger(x, w, x_zero_point?, w_zero_point?) -> i32. */
static rlx_status infer_conv_integer(rlx_infer_ctx *c) {
    RLX_TRY(check_input(c, 0, "input x", q8()));
    RLX_TRY(check_input(c, 1, "input w", q8()));
    RLX_TRY(check_same_type(c, 2, "x_zero_point", 0, "x"));
    RLX_TRY(check_same_type(c, 3, "w_zero_point", 1, "w"));
    int64_t m;
    RLX_TRY(infer_conv_shape(c, 0, 1, RLX_DTYPE_I32, &m));
    RLX_TRY(check_channel_param(c, 2, "x_zero_point", m, false));
    return check_channel_param(c, 3, "w_zero_point", m, true);
}

/* QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B?). */
static rlx_status infer_qlinear_conv(rlx_infer_ctx *c) {
    RLX_TRY(check_input(c, 0, "input x", q8()));
    RLX_TRY(check_input(c, 3, "input w", q8()));
    RLX_TRY(check_input(c, 7, "input y_zero_point", q8()));
    RLX_TRY(check_input(c, 1, "input x_scale", f32only()));
    RLX_TRY(check_input(c, 4, "input w_scale", f32only()));
    RLX_TRY(check_input(c, 6, "input y_scale", f32only()));
    RLX_TRY(check_input(c, 8, "input B", SET(k_i32)));
    RLX_TRY(check_same_type(c, 2, "x_zero_point", 0, "x"));
    RLX_TRY(check_same_type(c, 5, "w_zero_point", 3, "w"));
    int64_t m;
    RLX_TRY(infer_conv_shape(c, 0, 3, rlx_ictx_in(c, 7)->dtype, &m));
    RLX_TRY(check_channel_param(c, 1, "x_scale", m, false));
    RLX_TRY(check_channel_param(c, 2, "x_zero_point", m, false));
    RLX_TRY(check_channel_param(c, 4, "w_scale", m, true));
    RLX_TRY(check_channel_param(c, 5, "w_zero_point", m, true));
    RLX_TRY(check_channel_param(c, 6, "y_scale", m, false));
    RLX_TRY(check_channel_param(c, 7, "y_zero_point", m, false));
    const rlx_value *b = rlx_ictx_in(c, 8);
    if (b && b->rank >= 0 && (b->rank != 1 || (m >= 0 && b->dims[0] >= 0 && b->dims[0] != m))) {
        char s[96];
        return rlx_ictx_fail(c, "B has shape %s, expected [%lld]", rlx_shape_str_q(b->dims, b->rank, s, sizeof s),
                             (long long)m);
    }
    RLX_TRY(check_const_scales(c));
    return c->n->n_in > RLX_QEPI_FIRST ? infer_q8_chain(c) : RLX_OK;
}

const rlx_op_def rlx_ops_quant[] = {
#include "ir/ops/ops_quant.def"
};
const size_t rlx_ops_quant_count = RLX_ARRAY_LEN(rlx_ops_quant);
