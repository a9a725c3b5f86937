/* import/onnx_contrib.c — onnxruntime's contrib ops, expanded at import
 * into default-domain nodes (import/onnx_contrib.h). One table row per op:
 * domain, name, since-version, arity, attribute schema (name, type,
 * required, default), the expansion function and one sentence for `rlx
 * ops`. Semantics: onnxruntime's docs/ContribOperators.md and the schemas
 * registered by onnxruntime 1.22; tests/python/test_contrib_ops.py compares
 * each expansion with onnxruntime on random inputs.
 *
 * The new nodes are emitted at opset RLX_CONTRIB_OPSET (whatever the
 * model's opset: Gelu-20, LayerNormalization-17, Q/DQ-21 and, for the RMS
 * norms, RMSNormalization-23 are what they need), inferred as they are
 * added; the dtypes and shapes of the node's inputs come from inferring
 * their ancestors first (the importer has not run inference yet).
 *
 * Where an expansion is inexact or slow it says so in its row:
 * MatMulNBits keeps 4-bit weights packed (rlx.MatMulNBits) but dequantizes
 * 8-bit ones and float zero points to a dense matrix at import (4 bytes a
 * weight); DynamicQuantizeLSTM computes
 * the LSTM in f32 where onnxruntime quantizes X and h dynamically to 8 bits
 * for its GEMMs; the QLinear ops round once, after the f32 op. */
#include "import/onnx_contrib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/options.h"
#include "base/status.h"
#include "base/tensor.h"
#include "ir/op.h"
#include "ir/ops/internal_ops.h"
#include "ir/ops/ops.h"
#include "ir/ops/quant_params.h"

#define MS "com.microsoft"
#define MAX_CATTRS 10

typedef struct cx cx;

/* One attribute of a contrib op: INT and FLOAT defaults in def_f, STRING in
 * def_s; no default when required or when has_def is false. */
typedef struct cattr {
    const char *name;
    rlx_attr_type type;
    bool required;
    bool has_def;
    double def_f;
    const char *def_s;
} cattr;

struct rlx_contrib_def {
    const char *domain, *name;
    int since, min_in, max_in, min_out, max_out;
    rlx_status (*expand)(cx *c);
    const char *doc;
    cattr attrs[MAX_CATTRS];
};

struct cx {
    rlx_graph *g;
    const rlx_contrib_def *def;
    const char *label, *name;
    unsigned counter;
    const int *in, *out;
    int n_in, n_out;
    const rlx_node_attr *attrs;
    int n_attrs;
    const struct rlx_config *cfg; /* limits.max_tensor_bytes; NULL: none */
};

/* ------------------------------------------------------------ attributes */

static const cattr *schema_attr(const rlx_contrib_def *d, const char *name) {
    for (int i = 0; i < MAX_CATTRS && d->attrs[i].name; i++)
        if (strcmp(d->attrs[i].name, name) == 0) return &d->attrs[i];
    return NULL;
}

static const rlx_node_attr *given(const cx *c, const char *name) {
    for (int i = 0; i < c->n_attrs; i++)
        if (strcmp(c->attrs[i].name, name) == 0) return &c->attrs[i];
    return NULL;
}

static int64_t attr_i(const cx *c, const char *name) {
    const rlx_node_attr *a = given(c, name);
    if (a) return a->i;
    const cattr *s = schema_attr(c->def, name);
    return s ? (int64_t)s->def_f : 0;
}

static float attr_f(const cx *c, const char *name) {
    const rlx_node_attr *a = given(c, name);
    if (a) return a->f;
    const cattr *s = schema_attr(c->def, name);
    return s ? (float)s->def_f : 0.0f;
}

/* Every given attribute is in the schema with its type; required ones are
 * given. */
static rlx_status check_attrs(const cx *c) {
    for (int i = 0; i < c->n_attrs; i++) {
        const rlx_node_attr *a = &c->attrs[i];
        const cattr *s = schema_attr(c->def, a->name);
        if (!s)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: unknown attribute '%s' (%s.%s has no such attribute)", c->label,
                            a->name, c->def->domain[0] ? c->def->domain : "ai.onnx", c->def->name);
        if (a->type != s->type)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' has type %s, expected %s", c->label, a->name,
                            rlx_attr_type_name(a->type), rlx_attr_type_name(s->type));
    }
    for (int i = 0; i < MAX_CATTRS && c->def->attrs[i].name; i++)
        if (c->def->attrs[i].required && !given(c, c->def->attrs[i].name))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: required attribute '%s' is missing", c->label,
                            c->def->attrs[i].name);
    return RLX_OK;
}

static rlx_status set_str(rlx_node_attr *a, const char *name, const char *s) {
    memset(a, 0, sizeof *a);
    a->type = RLX_ATTR_STRING;
    a->name = rlx_strdup(name);
    a->s = rlx_strdup(s);
    if (!a->name || !a->s) {
        rlx_node_attr_free(a);
        memset(a, 0, sizeof *a);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    }
    return RLX_OK;
}

/* ------------------------------------------------------------ inputs */

static int in_id(const cx *c, int i) { return i < c->n_in ? c->in[i] : -1; }
static int out_id(const cx *c, int i) { return i < c->n_out ? c->out[i] : -1; }
static rlx_value *val(const cx *c, int id) { return &c->g->values[id]; }

/* True when value x still needs its producer inferred. */
static bool unknown(const rlx_value *x) {
    return !x->konst && x->producer >= 0 && (x->dtype == RLX_DTYPE_UNDEFINED || x->rank < 0);
}

/* Infers the producers of value v that have not been inferred yet (and
 * theirs), each after the producers of its inputs (a depth-first post-order,
 * so the file's node order does not matter), so that v has its dtype and
 * shape. A cycle is left to rlx_pass_verify to report. */
static rlx_status need(cx *c, int v) {
    rlx_graph *g = c->g;
    if (!unknown(&g->values[v])) return RLX_OK;
    enum { NEW, OPEN, DONE };
    size_t cap = 1; /* one push per edge at most, and the root */
    for (size_t i = 0; i < g->n_nodes; i++) cap += (size_t)g->nodes[i].n_in;
    unsigned char *state = calloc(g->n_nodes + 1, 1);
    int *stack = malloc(cap * sizeof(int));
    rlx_status st = RLX_OK;
    if (!state || !stack) {
        st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", c->label);
        goto done;
    }
    size_t sp = 0;
    stack[sp++] = g->values[v].producer;
    while (sp && !st) {
        int top = stack[sp - 1];
        if (state[top] != NEW) { /* DONE: a copy pushed earlier; OPEN: its inputs are inferred */
            sp--;
            if (state[top] == OPEN) st = rlx_infer_node(g, top);
            state[top] = DONE;
            continue;
        }
        state[top] = OPEN;
        const rlx_node *n = &g->nodes[top];
        for (int i = 0; i < n->n_in && sp < cap; i++) {
            const rlx_value *x = n->in[i] >= 0 ? &g->values[n->in[i]] : NULL;
            if (x && unknown(x) && state[x->producer] == NEW) stack[sp++] = x->producer;
        }
    }
done:
    free(state);
    free(stack);
    return st;
}

/* Input i, inferred; *id its value (-1 when omitted and optional). */
static rlx_status input(cx *c, int i, int *id) {
    *id = in_id(c, i);
    if (*id < 0) return RLX_OK;
    return need(c, *id);
}

static rlx_status require_float(const cx *c, int id, const char *what) {
    rlx_dtype dt = val(c, id)->dtype;
    if (!rlx_dtype_is_float(dt))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input %s has dtype %s, expected a floating-point type", c->label,
                        what, rlx_dtype_name(dt));
    return RLX_OK;
}

/* The static dim `axis` (negative: from the end) of value id, or -1. */
static int64_t static_dim(const cx *c, int id, int axis) {
    const rlx_value *v = val(c, id);
    if (v->rank < 0) return -1;
    if (axis < 0) axis += v->rank;
    if (axis < 0 || axis >= v->rank) return -1;
    return v->dims[axis] >= 0 ? v->dims[axis] : -1;
}

/* ------------------------------------------------------------ emission */

static void free_attrs(rlx_node_attr *attrs, int n) {
    for (int i = 0; i < n; i++) rlx_node_attr_free(&attrs[i]);
}

/* Adds op(in) at opset `opset` (0: RLX_CONTRIB_OPSET) writing out[], and
 * infers it. attrs are adopted. */
static rlx_status emit_to_dom(cx *c, int opset, const char *domain, const char *op, const int *in, int n_in,
                              rlx_node_attr *attrs, int n_attrs, const int *out, int n_out) {
    char name[300];
    snprintf(name, sizeof name, "%s/%s_%u", c->name, op, c->counter++);
    int64_t saved = c->g->opset;
    c->g->opset = opset ? opset : RLX_CONTRIB_OPSET;
    int nid;
    rlx_status st = rlx_graph_add_node(c->g, op, domain, name, in, n_in, out, n_out, attrs, n_attrs, &nid);
    c->g->opset = saved;
    if (!st) st = rlx_infer_node(c->g, nid);
    if (st) rlx_fail_prefix(st, "%s: expanding: ", c->label);
    return st;
}

static rlx_status emit_to(cx *c, int opset, const char *op, const int *in, int n_in, rlx_node_attr *attrs,
                          int n_attrs, const int *out, int n_out) {
    return emit_to_dom(c, opset, "", op, in, n_in, attrs, n_attrs, out, n_out);
}

/* op(in) with one output: dst when >= 0, else a new value; *out its id. */
static rlx_status emit(cx *c, int opset, const char *op, const int *in, int n_in, rlx_node_attr *attrs, int n_attrs,
                       int dst, int *out) {
    if (dst < 0) {
        rlx_status st = rlx_graph_add_value(c->g, NULL, &dst);
        if (st) {
            free_attrs(attrs, n_attrs);
            return st;
        }
    }
    RLX_TRY(emit_to(c, opset, op, in, n_in, attrs, n_attrs, &dst, 1));
    *out = dst;
    return RLX_OK;
}

static rlx_status op1(cx *c, const char *op, int a, int dst, int *out) { return emit(c, 0, op, &a, 1, NULL, 0, dst, out); }

static rlx_status op2(cx *c, const char *op, int a, int b, int dst, int *out) {
    int in[2] = { a, b };
    return emit(c, 0, op, in, 2, NULL, 0, dst, out);
}

/* op(in) with one INT attribute. */
static rlx_status op_i(cx *c, const char *op, const int *in, int n_in, const char *an, int64_t av, int dst, int *out) {
    rlx_node_attr a;
    RLX_TRY(rlx_node_attr_set_int(&a, an, av));
    return emit(c, 0, op, in, n_in, &a, 1, dst, out);
}

/* A constant tensor of dtype dt and shape dims[rank], every element v. */
static rlx_status k_fill(cx *c, rlx_dtype dt, int rank, const int64_t *dims, double v, int *out) {
    rlx_tensor *t;
    RLX_TRY(rlx_tensor_create(dt, dims, rank, &t));
    size_t n = rlx_tensor_numel(t);
    for (size_t i = 0; i < n; i++) rlx_tensor_set_f64(t, i, v);
    return rlx_graph_add_konst(c->g, NULL, t, out);
}

static rlx_status k_scalar(cx *c, rlx_dtype dt, double v, int *out) { return k_fill(c, dt, 0, NULL, v, out); }

/* A 1-D int64 constant. */
static rlx_status k_i64(cx *c, const int64_t *v, size_t n, int *out) {
    return rlx_graph_add_konst_i64s(c->g, NULL, v, n, out);
}

/* Reshape(x, shape) with a constant shape (0 copies, -1 infers). */
static rlx_status reshape(cx *c, int x, const int64_t *shape, size_t n, int dst, int *out) {
    int s;
    RLX_TRY(k_i64(c, shape, n, &s));
    return op2(c, "Reshape", x, s, dst, out);
}

static rlx_status transpose(cx *c, int x, const int64_t *perm, size_t n, int dst, int *out) {
    rlx_node_attr a;
    RLX_TRY(rlx_node_attr_set_ints(&a, "perm", perm, n));
    return emit(c, 0, "Transpose", &x, 1, &a, 1, dst, out);
}

static rlx_status unsqueeze(cx *c, int x, int64_t axis, int *out) {
    int ax;
    RLX_TRY(k_i64(c, &axis, 1, &ax));
    return op2(c, "Unsqueeze", x, ax, -1, out);
}

/* x[..., start:end:step] along axis. */
static rlx_status slice(cx *c, int x, int64_t axis, int64_t start, int64_t end, int64_t step, int *out) {
    int in[5];
    in[0] = x;
    RLX_TRY(k_i64(c, &start, 1, &in[1]));
    RLX_TRY(k_i64(c, &end, 1, &in[2]));
    RLX_TRY(k_i64(c, &axis, 1, &in[3]));
    RLX_TRY(k_i64(c, &step, 1, &in[4]));
    return emit(c, 0, "Slice", in, 5, NULL, 0, -1, out);
}

static rlx_status concat(cx *c, const int *xs, int n, int64_t axis, int dst, int *out) {
    return op_i(c, "Concat", xs, n, "axis", axis, dst, out);
}

/* Dim `axis` of x as a scalar of dtype dt (int64 or int32): a constant
 * when static, else Shape -> Gather (-> Cast). */
static rlx_status dim_of(cx *c, int x, int64_t axis, rlx_dtype dt, int *out) {
    int64_t d = static_dim(c, x, (int)axis);
    if (d >= 0) return k_fill(c, dt, 0, NULL, (double)d, out);
    int s, i, r;
    RLX_TRY(op1(c, "Shape", x, -1, &s));
    RLX_TRY(k_fill(c, RLX_DTYPE_I64, 0, NULL, (double)axis, &i));
    RLX_TRY(op_i(c, "Gather", (int[]){ s, i }, 2, "axis", 0, -1, dt == RLX_DTYPE_I64 ? out : &r));
    return dt == RLX_DTYPE_I64 ? RLX_OK : op_i(c, "Cast", &r, 1, "to", dt, -1, out);
}

/* 0, 1, ..., n-1 for a scalar n (its dtype). */
static rlx_status arange(cx *c, int n, int *out) {
    int z, one;
    rlx_dtype dt = val(c, n)->dtype;
    RLX_TRY(k_fill(c, dt, 0, NULL, 0, &z));
    RLX_TRY(k_fill(c, dt, 0, NULL, 1, &one));
    return emit(c, 0, "Range", (int[]){ z, n, one }, 3, NULL, 0, -1, out);
}

/* ------------------------------------------------------------ activations */

static rlx_status gelu(cx *c, int x, const char *approximate) {
    rlx_node_attr a;
    RLX_TRY(set_str(&a, "approximate", approximate));
    int y;
    return emit(c, 0, "Gelu", &x, 1, &a, 1, out_id(c, 0), &y);
}

/* com.microsoft.Gelu: erf form. */
static rlx_status x_gelu(cx *c) { return gelu(c, in_id(c, 0), "none"); }

/* BiasGelu(A, B) = Gelu(A + B). */
static rlx_status x_bias_gelu(cx *c) {
    int s;
    RLX_TRY(op2(c, "Add", in_id(c, 0), in_id(c, 1), -1, &s));
    return gelu(c, s, "none");
}

/* FastGelu(X, bias) = 0.5 x (1 + tanh(0.797885 x + 0.035677 x^3)), x = X +
 * bias: the tanh form of Gelu-20 (sqrt(2/pi) = 0.797885, 0.044715 sqrt(2/pi)
 * = 0.035677). */
static rlx_status x_fast_gelu(cx *c) {
    int x = in_id(c, 0);
    if (in_id(c, 1) >= 0) RLX_TRY(op2(c, "Add", x, in_id(c, 1), -1, &x));
    return gelu(c, x, "tanh");
}

/* com.microsoft.GridSample (onnxruntime's contrib op from before ONNX had
 * one): ONNX GridSample-16, whose attributes and mode names (bilinear,
 * nearest, bicubic) it has; the ONNX op checks them. */
static rlx_status x_grid_sample(cx *c) {
    const rlx_node_attr *m = given(c, "mode"), *p = given(c, "padding_mode");
    rlx_node_attr a[3];
    RLX_TRY(rlx_node_attr_set_int(&a[0], "align_corners", attr_i(c, "align_corners")));
    rlx_status st = set_str(&a[1], "mode", m ? m->s : "bilinear");
    if (!st) {
        st = set_str(&a[2], "padding_mode", p ? p->s : "zeros");
        if (st) rlx_node_attr_free(&a[1]);
    }
    if (st) {
        rlx_node_attr_free(&a[0]);
        return st;
    }
    int y;
    return emit(c, 16, "GridSample", (int[]){ in_id(c, 0), in_id(c, 1) }, 2, a, 3, out_id(c, 0), &y);
}

/* QuickGelu(X) = X * Sigmoid(alpha X). */
static rlx_status x_quick_gelu(cx *c) {
    int x, ax, s, y;
    RLX_TRY(input(c, 0, &x));
    RLX_TRY(require_float(c, x, "X"));
    float alpha = attr_f(c, "alpha");
    ax = x;
    if (alpha != 1.0f) {
        int k;
        RLX_TRY(k_scalar(c, val(c, x)->dtype, alpha, &k));
        RLX_TRY(op2(c, "Mul", x, k, -1, &ax));
    }
    RLX_TRY(op1(c, "Sigmoid", ax, -1, &s));
    return op2(c, "Mul", x, s, out_id(c, 0), &y);
}

/* BiasAdd(X, bias, skip) = (X + bias) + skip. */
static rlx_status x_bias_add(cx *c) {
    int s, y;
    RLX_TRY(op2(c, "Add", in_id(c, 0), in_id(c, 1), -1, &s));
    return op2(c, "Add", s, in_id(c, 2), out_id(c, 0), &y);
}

/* ------------------------------------------------------------ normalizations */

/* a[0..2) = axis, the node's epsilon (for the normalization ops). */
static rlx_status norm_attrs(const cx *c, int64_t axis, rlx_node_attr *a) {
    RLX_TRY(rlx_node_attr_set_int(&a[0], "axis", axis));
    rlx_status st = rlx_node_attr_set_float(&a[1], "epsilon", attr_f(c, "epsilon"));
    if (st) rlx_node_attr_free(&a[0]);
    return st;
}

/* (input + skip) + bias, written to output 3 (input_skip_bias_sum) when the
 * node has it. */
static rlx_status skip_sum(cx *c, int bias_in, int *out) {
    int s = -1;
    bool bias = in_id(c, bias_in) >= 0;
    RLX_TRY(op2(c, "Add", in_id(c, 0), in_id(c, 1), bias ? -1 : out_id(c, 3), &s));
    if (bias) RLX_TRY(op2(c, "Add", s, in_id(c, bias_in), out_id(c, 3), &s));
    *out = s;
    return RLX_OK;
}

/* SkipLayerNormalization(input, skip, gamma, beta, bias) =
 * LayerNormalization-17(input + skip + bias, gamma, beta) over the last
 * axis; outputs mean and inv_std_var are LayerNormalization's. */
static rlx_status x_skip_ln(cx *c) {
    int s;
    RLX_TRY(skip_sum(c, 4, &s));
    rlx_node_attr a[2];
    RLX_TRY(norm_attrs(c, -1, a));
    int in[3] = { s, in_id(c, 2), in_id(c, 3) };
    int outs[3] = { out_id(c, 0), out_id(c, 1), out_id(c, 2) };
    int n_out = outs[2] >= 0 ? 3 : outs[1] >= 0 ? 2 : 1;
    return emit_to(c, 0, "LayerNormalization", in, in[2] >= 0 ? 3 : 2, a, 2, outs, n_out);
}

/* RMSNormalization-23(x, scale) into output 0; outputs 1 and 2 (mean,
 * inv_std_var: training statistics) are refused. */
static rlx_status rms_norm(cx *c, int x, int scale, int64_t axis) {
    for (int i = 1; i < c->n_out && i < 3; i++)
        if (c->out[i] >= 0)
            return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: output %d (a training statistic) is not supported", c->label, i);
    rlx_node_attr a[2];
    RLX_TRY(norm_attrs(c, axis, a));
    int y;
    return emit(c, 23, "RMSNormalization", (int[]){ x, scale }, 2, a, 2, out_id(c, 0), &y);
}

/* SkipSimplifiedLayerNormalization(input, skip, gamma, bias) =
 * RMSNormalization-23(input + skip + bias, gamma) over the last axis. */
static rlx_status x_skip_sln(cx *c) {
    int s;
    RLX_TRY(skip_sum(c, 3, &s));
    return rms_norm(c, s, in_id(c, 2), -1);
}

/* SimplifiedLayerNormalization(X, scale) = RMSNormalization-23 (axis,
 * epsilon; statistics in f32 whatever stash_type says). */
static rlx_status x_sln(cx *c) { return rms_norm(c, in_id(c, 0), in_id(c, 1), attr_i(c, "axis")); }

/* ------------------------------------------------------------ quantized ops */

/* DequantizeLinear-21(x, scale, zero_point) -> f32. */
static rlx_status dq(cx *c, int x, int scale, int zp, int *out) {
    int in[3] = { x, scale, zp };
    return emit(c, 0, "DequantizeLinear", in, zp >= 0 ? 3 : 2, NULL, 0, -1, out);
}

/* QuantizeLinear-21(y, scale, zero_point) into output 0, of the dtype of
 * input `like` (a missing zero point is 0 of that type). */
static rlx_status q(cx *c, int y, int scale, int zp, int like) {
    RLX_TRY(need(c, like));
    rlx_dtype dt = val(c, like)->dtype;
    if (dt != RLX_DTYPE_U8 && dt != RLX_DTYPE_I8)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: quantized input has dtype %s, expected uint8 or int8", c->label,
                        rlx_dtype_name(dt));
    if (zp < 0) RLX_TRY(k_scalar(c, dt, 0, &zp));
    int out;
    return emit(c, 0, "QuantizeLinear", (int[]){ y, scale, zp }, 3, NULL, 0, out_id(c, 0), &out);
}

/* QLinearAdd / QLinearMul (A, A_scale, A_zp, B, B_scale, B_zp, C_scale,
 * C_zp) = Q(DQ(A) op DQ(B)). */
static rlx_status qlinear_binary(cx *c, const char *op) {
    int a, b, y;
    RLX_TRY(dq(c, in_id(c, 0), in_id(c, 1), in_id(c, 2), &a));
    RLX_TRY(dq(c, in_id(c, 3), in_id(c, 4), in_id(c, 5), &b));
    RLX_TRY(op2(c, op, a, b, -1, &y));
    return q(c, y, in_id(c, 6), in_id(c, 7), in_id(c, 0));
}
static rlx_status x_qlinear_add(cx *c) { return qlinear_binary(c, "Add"); }
static rlx_status x_qlinear_mul(cx *c) { return qlinear_binary(c, "Mul"); }

/* QLinearSigmoid / QLinearLeakyRelu (X, X_scale, X_zp, Y_scale, Y_zp). */
static rlx_status x_qlinear_sigmoid(cx *c) {
    int x, y;
    RLX_TRY(dq(c, in_id(c, 0), in_id(c, 1), in_id(c, 2), &x));
    RLX_TRY(op1(c, "Sigmoid", x, -1, &y));
    return q(c, y, in_id(c, 3), in_id(c, 4), in_id(c, 0));
}

static rlx_status x_qlinear_leaky_relu(cx *c) {
    int x, y;
    RLX_TRY(dq(c, in_id(c, 0), in_id(c, 1), in_id(c, 2), &x));
    rlx_node_attr a;
    RLX_TRY(rlx_node_attr_set_float(&a, "alpha", attr_f(c, "alpha")));
    RLX_TRY(emit(c, 0, "LeakyRelu", &x, 1, &a, 1, -1, &y));
    return q(c, y, in_id(c, 3), in_id(c, 4), in_id(c, 0));
}

/* QLinearConcat (Y_scale, Y_zp, then X, X_scale, X_zp for each input;
 * axis) = Q(Concat(DQ(X)...)). */
static rlx_status x_qlinear_concat(cx *c) {
    int n = (c->n_in - 2) / 3;
    if (n < 1 || c->n_in != 2 + 3 * n)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: expects Y_scale, Y_zero_point and triples (X, X_scale, "
                        "X_zero_point), has %d inputs", c->label, c->n_in);
    int xs[MAX_CATTRS * 8];
    if (n > (int)(sizeof xs / sizeof xs[0]))
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: %d inputs to concatenate (at most %zu)", c->label, n,
                        sizeof xs / sizeof xs[0]);
    for (int i = 0; i < n; i++) {
        if (in_id(c, 2 + 3 * i) < 0 || in_id(c, 3 + 3 * i) < 0)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input %d or its scale is missing", c->label, i);
        RLX_TRY(dq(c, in_id(c, 2 + 3 * i), in_id(c, 3 + 3 * i), in_id(c, 4 + 3 * i), &xs[i]));
    }
    int y;
    RLX_TRY(concat(c, xs, n, attr_i(c, "axis"), -1, &y));
    return q(c, y, in_id(c, 0), in_id(c, 1), in_id(c, 2));
}

/* com.microsoft QuantizeLinear / DequantizeLinear: the standard ops (an
 * axis only when given; 1-D scales then apply along it). */
static rlx_status qdq_std(cx *c, const char *op) {
    rlx_node_attr a;
    int n_a = 0;
    if (given(c, "axis")) {
        RLX_TRY(rlx_node_attr_set_int(&a, "axis", attr_i(c, "axis")));
        n_a = 1;
    }
    int y;
    return emit(c, 0, op, c->in, c->n_in, &a, n_a, out_id(c, 0), &y);
}
static rlx_status x_quantize(cx *c) { return qdq_std(c, "QuantizeLinear"); }
static rlx_status x_dequantize(cx *c) { return qdq_std(c, "DequantizeLinear"); }

/* ------------------------------------------------------------ quantized ops: checks */

/* Whether value v may be a per-tensor parameter (rank 0, or 1-D of one
 * element) or, with n != 0, a per-column one (1-D of n elements; n < 0:
 * any length, the column count being unknown). */
static bool param_shape_ok(const rlx_value *v, int64_t n) {
    if (v->rank < 0 || v->rank == 0) return true;
    if (v->rank != 1) return false;
    return v->dims[0] < 0 || v->dims[0] == 1 || (n != 0 && (n < 0 || v->dims[0] == n));
}

/* check_scale's rule for a scale that only multiplies or divides a float
 * output (MatMulIntegerToFloat, DynamicQuantizeMatMul, QAttention, QGemm
 * without y_zero_point): any value, IEEE arithmetic (0, inf, NaN give
 * what they give in onnxruntime's float product). */
#define SCALE_FLOAT (-1)

/* Input i, a scale: f32, per tensor (or per column of n, see
 * param_shape_ok); when a constant, every element as `rule` asks (an
 * rlx_qscale_rule, or SCALE_FLOAT). Run-time scales are not checked: they
 * run as the expansion's arithmetic takes them. Missing: an error. */
static rlx_status check_scale(cx *c, int i, const char *what, int64_t n, int rule) {
    int id = in_id(c, i);
    if (id < 0) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input %s is missing", c->label, what);
    RLX_TRY(need(c, id));
    const rlx_value *v = val(c, id);
    if (v->dtype != RLX_DTYPE_F32)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %s has dtype %s, expected float", c->label, what,
                        rlx_dtype_name(v->dtype));
    if (!param_shape_ok(v, n))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %s must be a scalar or a 1-D tensor of 1%s elements, has rank %d "
                        "(first dim %lld)", c->label, what, n > 0 ? " or N" : "", v->rank,
                        (long long)(v->rank > 0 ? v->dims[0] : 0));
    if (rule == SCALE_FLOAT || !v->konst) return RLX_OK;
    int64_t bad = rlx_quant_scale_bad(v->konst, (rlx_qscale_rule)rule);
    if (bad >= 0)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %s element %lld is %g: %s", c->label, what, (long long)bad,
                        rlx_tensor_get_f64(v->konst, (size_t)bad), rlx_quant_scale_rule_text((rlx_qscale_rule)rule));
    return RLX_OK;
}

/* Input i, a zero point (absent: fine) of dtype dt (u8 or i8; UNDEFINED:
 * either), per tensor or per column of n as check_scale. */
static rlx_status check_zp(cx *c, int i, const char *what, rlx_dtype dt, int64_t n) {
    int id = in_id(c, i);
    if (id < 0) return RLX_OK;
    RLX_TRY(need(c, id));
    const rlx_value *v = val(c, id);
    bool type_ok = dt == RLX_DTYPE_UNDEFINED ? v->dtype == RLX_DTYPE_U8 || v->dtype == RLX_DTYPE_I8 : v->dtype == dt;
    if (!type_ok)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %s has dtype %s, expected %s", c->label, what,
                        rlx_dtype_name(v->dtype), dt == RLX_DTYPE_UNDEFINED ? "uint8 or int8" : rlx_dtype_name(dt));
    if (!param_shape_ok(v, n))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %s must be a scalar or a 1-D tensor of 1%s elements, has rank %d "
                        "(first dim %lld)", c->label, what, n > 0 ? " or N" : "", v->rank,
                        (long long)(v->rank > 0 ? v->dims[0] : 0));
    return RLX_OK;
}

/* Input i (8-bit quantized data): its id, inferred, u8 or i8. */
static rlx_status q8_input(cx *c, int i, const char *what, int *id) {
    RLX_TRY(input(c, i, id));
    if (*id < 0) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input %s is missing", c->label, what);
    rlx_dtype dt = val(c, *id)->dtype;
    if (dt != RLX_DTYPE_U8 && dt != RLX_DTYPE_I8)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %s has dtype %s, expected uint8 or int8", c->label, what,
                        rlx_dtype_name(dt));
    return RLX_OK;
}

/* The usual operand triple (x, scale, zero point) at inputs i, i+1, i+2,
 * all per tensor; the scale checked by `rule` (check_scale). */
static rlx_status check_triple(cx *c, int i, const char *x, const char *s, const char *z, int rule, int *id) {
    RLX_TRY(q8_input(c, i, x, id));
    RLX_TRY(check_scale(c, i + 1, s, 0, rule));
    return check_zp(c, i + 2, z, val(c, *id)->dtype, 0);
}

/* QuantizeLinear(y, 1, zp) -> dst: round half to even, plus zp,
 * saturated; zp < 0: 0 of dtype dt. */
static rlx_status round_zp(cx *c, int y, int zp, rlx_dtype dt, int dst, int *out) {
    int one;
    RLX_TRY(k_scalar(c, RLX_DTYPE_F32, 1, &one));
    if (zp < 0) RLX_TRY(k_scalar(c, dt, 0, &zp));
    return emit(c, 0, "QuantizeLinear", (int[]){ y, one, zp }, 3, NULL, 0, dst, out);
}

/* QuantizeLinear(y, scale, zp) of dtype dt (zp < 0: 0 of dt) -> dst. */
static rlx_status quant_to(cx *c, int y, int scale, int zp, rlx_dtype dt, int dst, int *out) {
    if (zp < 0) RLX_TRY(k_scalar(c, dt, 0, &zp));
    return emit(c, 0, "QuantizeLinear", (int[]){ y, scale, zp }, 3, NULL, 0, dst, out);
}

/* ------------------------------------------------------------ integer matrix products */

/* The f32 multiplier of onnxruntime's integer GEMMs, alpha * a_scale *
 * b_scale[j] (/ y_scale when ys >= 0), in that order in single precision
 * (QGemm's ComputeOutputScale; MatMulIntegerToFloat: alpha = 1): computed
 * here when the scales are constants, else as Mul and Div nodes. Shape:
 * b_scale's. */
static rlx_status gemm_multiplier(cx *c, float alpha, int as, int bs, int ys, int *out) {
    const rlx_value *va = val(c, as), *vb = val(c, bs), *vy = ys >= 0 ? val(c, ys) : NULL;
    if (va->konst && vb->konst && (!vy || vy->konst)) {
        rlx_tensor *t;
        RLX_TRY(rlx_tensor_create(RLX_DTYPE_F32, vb->dims, vb->rank, &t));
        float a = (float)rlx_tensor_get_f64(va->konst, 0), y = vy ? (float)rlx_tensor_get_f64(vy->konst, 0) : 1.0f;
        for (size_t j = 0; j < rlx_tensor_numel(t); j++) {
            float m = alpha * a;
            m = m * (float)rlx_tensor_get_f64(vb->konst, j);
            if (vy) m = m / y;
            ((float *)t->data)[j] = m;
        }
        return rlx_graph_add_konst(c->g, NULL, t, out);
    }
    int m = as;
    if (alpha != 1.0f) {
        int k;
        RLX_TRY(k_scalar(c, RLX_DTYPE_F32, alpha, &k));
        RLX_TRY(op2(c, "Mul", k, as, -1, &m));
    }
    RLX_TRY(op2(c, "Mul", m, bs, -1, &m));
    if (ys >= 0) RLX_TRY(op2(c, "Div", m, ys, -1, &m));
    *out = m;
    return RLX_OK;
}

/* MatMulInteger(a, b, a_zp, b_zp) (a zero point < 0: none; a_zp absent and
 * b_zp present: a_zp 0 of a's type), int32. */
static rlx_status mm_integer(cx *c, int a, int b, int azp, int bzp, int *out) {
    if (azp < 0 && bzp >= 0) RLX_TRY(k_scalar(c, val(c, a)->dtype, 0, &azp));
    int in[4] = { a, b, azp, bzp };
    return emit(c, 0, "MatMulInteger", in, bzp >= 0 ? 4 : azp >= 0 ? 3 : 2, NULL, 0, -1, out);
}

/* float(acc) * mult (+ bias) -> dst: the scale-and-bias output of the
 * integer GEMMs (MLAS multiplies, then adds, each rounded once). */
static rlx_status scale_bias(cx *c, int acc, int mult, int bias, int dst, int *out) {
    int f;
    RLX_TRY(op_i(c, "Cast", &acc, 1, "to", RLX_DTYPE_F32, -1, &f));
    RLX_TRY(op2(c, "Mul", f, mult, bias >= 0 ? -1 : dst, out));
    if (bias >= 0) RLX_TRY(op2(c, "Add", *out, bias, dst, out));
    return RLX_OK;
}

/* QGemm(A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp): see the
 * row's text. */
static rlx_status x_qgemm(cx *c) {
    int a, b;
    RLX_TRY(q8_input(c, 0, "A", &a));
    RLX_TRY(q8_input(c, 3, "B", &b));
    bool ta = attr_i(c, "transA") != 0, tb = attr_i(c, "transB") != 0;
    if (val(c, a)->rank != 2 || val(c, b)->rank != 2)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: A and B must be 2-D, have ranks %d and %d", c->label,
                        val(c, a)->rank, val(c, b)->rank);
    int64_t N = static_dim(c, b, tb ? 0 : 1);
    /* an integer output (y_zero_point given) refuses what has no integer
     * result; the float output takes any scale, as onnxruntime's product */
    bool qout = in_id(c, 8) >= 0;
    RLX_TRY(check_scale(c, 1, "a_scale", 0, qout ? RLX_QSCALE_DEQUANT : SCALE_FLOAT));
    RLX_TRY(check_zp(c, 2, "a_zero_point", val(c, a)->dtype, 0));
    RLX_TRY(check_scale(c, 4, "b_scale", N, qout ? RLX_QSCALE_DEQUANT : SCALE_FLOAT));
    RLX_TRY(check_zp(c, 5, "b_zero_point", val(c, b)->dtype, N));
    int bs = in_id(c, 4), bz = in_id(c, 5), cc = in_id(c, 6), ys = in_id(c, 7), yz = in_id(c, 8);
    if (bz >= 0 && rlx_value_is_static(val(c, bz)) && rlx_value_is_static(val(c, bs)) &&
        rlx_value_numel(val(c, bz)) != rlx_value_numel(val(c, bs)))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: b_scale (%zu elements) and b_zero_point (%zu) must have the same "
                        "shape", c->label, rlx_value_numel(val(c, bs)), rlx_value_numel(val(c, bz)));
    if (cc >= 0 && val(c, cc)->dtype != RLX_DTYPE_I32)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: C has dtype %s, expected int32", c->label,
                        rlx_dtype_name(val(c, cc)->dtype));
    if (yz >= 0 && ys < 0)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: y_zero_point without y_scale", c->label);
    if (ys >= 0) RLX_TRY(check_scale(c, 7, "y_scale", 0, qout ? RLX_QSCALE_REQUANT : SCALE_FLOAT));
    RLX_TRY(check_zp(c, 8, "y_zero_point", RLX_DTYPE_UNDEFINED, 0));
    static const int64_t t2[2] = { 1, 0 };
    if (ta) RLX_TRY(transpose(c, a, t2, 2, -1, &a));
    if (tb) RLX_TRY(transpose(c, b, t2, 2, -1, &b));
    int acc, mult, y;
    RLX_TRY(mm_integer(c, a, b, in_id(c, 2), bz, &acc));
    if (cc >= 0) RLX_TRY(op2(c, "Add", acc, cc, -1, &acc));
    RLX_TRY(gemm_multiplier(c, attr_f(c, "alpha"), in_id(c, 1), bs, ys, &mult));
    if (yz < 0) return scale_bias(c, acc, mult, -1, out_id(c, 0), &y);
    RLX_TRY(scale_bias(c, acc, mult, -1, -1, &y));
    return round_zp(c, y, yz, val(c, yz)->dtype, out_id(c, 0), &y);
}

/* float(MatMulInteger(a, b, a_zp, b_zp)) * (a_scale * b_scale) (+ bias)
 * into output 0: a_scale per tensor, b_scale and b_zp per tensor or per
 * column of B (its last dim). */
static rlx_status int_matmul_float(cx *c, int a, int as, int azp, int bs_i, int bz_i, int bias_i) {
    int b;
    RLX_TRY(q8_input(c, 1, "B", &b));
    int64_t N = static_dim(c, b, -1);
    RLX_TRY(check_scale(c, bs_i, "b_scale", N, SCALE_FLOAT));
    RLX_TRY(check_zp(c, bz_i, "b_zero_point", val(c, b)->dtype, N));
    int bias = in_id(c, bias_i);
    if (bias >= 0 && !rlx_dtype_is_float(val(c, bias)->dtype))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: bias has dtype %s, expected float", c->label,
                        rlx_dtype_name(val(c, bias)->dtype));
    int acc, mult, y;
    RLX_TRY(mm_integer(c, a, b, azp, in_id(c, bz_i), &acc));
    RLX_TRY(gemm_multiplier(c, 1.0f, as, in_id(c, bs_i), -1, &mult));
    return scale_bias(c, acc, mult, bias, out_id(c, 0), &y);
}

/* MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zp, b_zp, bias). */
static rlx_status x_mm_int_to_float(cx *c) {
    int a;
    RLX_TRY(q8_input(c, 0, "A", &a));
    RLX_TRY(check_scale(c, 2, "a_scale", 0, SCALE_FLOAT));
    RLX_TRY(check_zp(c, 4, "a_zero_point", val(c, a)->dtype, 0));
    return int_matmul_float(c, a, in_id(c, 2), in_id(c, 4), 3, 5, 6);
}

/* DynamicQuantizeMatMul(A, B, b_scale, b_zp, bias): A quantized by
 * DynamicQuantizeLinear-11 (uint8, its range widened to 0), then as
 * MatMulIntegerToFloat. */
static rlx_status x_dq_matmul(cx *c) {
    int a;
    RLX_TRY(input(c, 0, &a));
    if (val(c, a)->dtype != RLX_DTYPE_F32)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: A has dtype %s, expected float", c->label,
                        rlx_dtype_name(val(c, a)->dtype));
    int outs[3];
    for (int i = 0; i < 3; i++) RLX_TRY(rlx_graph_add_value(c->g, NULL, &outs[i]));
    RLX_TRY(emit_to(c, 0, "DynamicQuantizeLinear", &a, 1, NULL, 0, outs, 3));
    return int_matmul_float(c, outs[0], outs[1], outs[2], 2, 3, 4);
}

/* ------------------------------------------------------------ quantized pooling, softmax, reduce, where */

/* onnxruntime's quantize_value of the QLinear pools: nearbyint(y / y_scale
 * + y_zp) saturated, the zero point added in f32 before the rounding (so a
 * tie rounds to even after it) -> dst. */
static rlx_status ort_pool_quant(cx *c, int y, int ys, int yz, rlx_dtype dt, int dst, int *out) {
    int v;
    RLX_TRY(op2(c, "Div", y, ys, -1, &v));
    if (yz >= 0) {
        int zf;
        RLX_TRY(op_i(c, "Cast", &yz, 1, "to", RLX_DTYPE_F32, -1, &zf));
        RLX_TRY(op2(c, "Add", v, zf, -1, &v));
    }
    return round_zp(c, v, -1, dt, dst, out);
}

/* The integer global average of MLAS (QLinearGlobalAveragePool, and
 * QLinearAveragePool when the kernel covers the image without padding):
 * s = sum(x - x_zp) over `axes` (exact in f32 while n * 255 < 2^24),
 * y = QuantizeLinear(s * (x_scale / (y_scale * n)), 1, y_zp), the
 * multiplier in single precision in that order -> dst. */
static rlx_status int_global_avg(cx *c, int x, const int64_t *axes, int n_axes, int64_t n, int dst, int *out) {
    int one, d, ax, s, m, y;
    RLX_TRY(k_scalar(c, RLX_DTYPE_F32, 1, &one));
    RLX_TRY(dq(c, x, one, in_id(c, 2), &d));
    RLX_TRY(k_i64(c, axes, (size_t)n_axes, &ax));
    rlx_node_attr kd;
    RLX_TRY(rlx_node_attr_set_int(&kd, "keepdims", 1));
    RLX_TRY(emit(c, 0, "ReduceSum", (int[]){ d, ax }, 2, &kd, 1, -1, &s));
    const rlx_value *xs = val(c, in_id(c, 1)), *ys = val(c, in_id(c, 3));
    if (xs->konst && ys->konst) {
        float k = (float)rlx_tensor_get_f64(xs->konst, 0) / ((float)rlx_tensor_get_f64(ys->konst, 0) * (float)n);
        RLX_TRY(k_scalar(c, RLX_DTYPE_F32, k, &m));
    } else {
        int kn;
        RLX_TRY(k_scalar(c, RLX_DTYPE_F32, (double)n, &kn));
        RLX_TRY(op2(c, "Mul", in_id(c, 3), kn, -1, &m));
        RLX_TRY(op2(c, "Div", in_id(c, 1), m, -1, &m));
    }
    RLX_TRY(op2(c, "Mul", s, m, -1, &y));
    return round_zp(c, y, in_id(c, 4), val(c, x)->dtype, dst, out);
}

/* Transposes a channels-last x [N, spatial..., C] to channels-first [N,
 * C, spatial...] (to_first) or back. */
static rlx_status move_channels(cx *c, int x, int rank, bool to_first, int *out) {
    int64_t perm[RLX_MAX_RANK];
    perm[0] = 0;
    for (int i = 1; i < rank; i++) perm[i] = to_first ? (i == 1 ? rank - 1 : i - 1) : (i == rank - 1 ? 1 : i + 1);
    return transpose(c, x, perm, (size_t)rank, -1, out);
}

/* QLinearGlobalAveragePool (X, x_scale, x_zp, y_scale, y_zp;
 * channels_last): onnxruntime's integer mean (int_global_avg) over the
 * spatial axes, when their sizes are known at load; else
 * Q(GlobalAveragePool(DQ(X))) (channels_last through Transposes), whose f32
 * mean can put a level 1 apart. */
static rlx_status x_qlinear_gap(cx *c) {
    int x, y;
    /* onnxruntime refuses a zero x_scale too ("parameter out of computation range") */
    RLX_TRY(check_triple(c, 0, "X", "x_scale", "x_zero_point", RLX_QSCALE_REQUANT, &x));
    RLX_TRY(check_scale(c, 3, "y_scale", 0, RLX_QSCALE_REQUANT));
    RLX_TRY(check_zp(c, 4, "y_zero_point", val(c, x)->dtype, 0));
    int rank = val(c, x)->rank;
    bool last = attr_i(c, "channels_last") != 0;
    if (rank < 3)
        return rlx_fail(rank < 0 ? RLX_ERR_UNSUPPORTED : RLX_ERR_INVALID_MODEL,
                        "%s: X needs a known rank of at least 3, has %d", c->label, rank);
    int64_t n = 1, axes[RLX_MAX_RANK];
    for (int i = 0; i < rank - 2 && n > 0; i++) {
        axes[i] = last ? i + 1 : i + 2;
        int64_t d = static_dim(c, x, (int)axes[i]);
        n = d > 0 ? n * d : -1;
    }
    if (n > 0 && n < (1 << 24)) return int_global_avg(c, x, axes, rank - 2, n, out_id(c, 0), &y);
    RLX_TRY(dq(c, x, in_id(c, 1), in_id(c, 2), &y));
    if (last) RLX_TRY(move_channels(c, y, rank, true, &y));
    RLX_TRY(op1(c, "GlobalAveragePool", y, -1, &y));
    if (last) RLX_TRY(move_channels(c, y, rank, false, &y));
    return q(c, y, in_id(c, 3), in_id(c, 4), x);
}

/* QLinearAveragePool with count_include_pad and ceil_mode as onnxruntime
 * computes it: every window divided by the kernel size, also where ceil_mode
 * makes it reach past the end padding (ONNX counts only the taps inside the
 * padding). y: DQ(X), channels first. Pads y with zeros so that every
 * window is whole (the output size of ceil_mode: ceil((in + pads - k) / s)
 * + 1, less one when the last window would start past the input and the
 * begin padding), then AveragePool without padding; adding zeros leaves
 * the f32 sums as they were. Needs static spatial sizes. */
static rlx_status ort_ceil_pool(cx *c, int x, int y, int rank, bool last, const rlx_node_attr *ks,
                                const rlx_node_attr *pads, rlx_dtype dt) {
    int nsp = rank - 2, p, pk, z;
    const rlx_node_attr *st = given(c, "strides");
    int64_t pv[2 * RLX_MAX_RANK] = { 0 }, strides[RLX_MAX_RANK];
    for (int i = 0; i < nsp; i++) {
        bool hp = pads && (int)pads->n == 2 * nsp;
        int64_t in = static_dim(c, x, last ? i + 1 : i + 2), k = ks->ints[i];
        int64_t s = st && (int)st->n == nsp ? st->ints[i] : 1, pb = hp ? pads->ints[i] : 0;
        int64_t pe = hp ? pads->ints[nsp + i] : 0;
        if (in < 0 || k < 1 || s < 1 || in + pb + pe < k)
            return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: count_include_pad with ceil_mode needs static spatial sizes at "
                            "least the kernel's", c->label);
        int64_t o = (in + pb + pe - k + s - 1) / s + 1;
        if ((o - 1) * s >= in + pb) o--;
        pv[2 + i] = pb;
        pv[rank + 2 + i] = (o - 1) * s + k - in - pb;
        strides[i] = s;
    }
    RLX_TRY(k_i64(c, pv, (size_t)(2 * rank), &pk));
    RLX_TRY(k_scalar(c, RLX_DTYPE_F32, 0, &z));
    RLX_TRY(emit(c, 0, "Pad", (int[]){ y, pk, z }, 3, NULL, 0, -1, &p));
    rlx_node_attr a[2];
    RLX_TRY(rlx_node_attr_set_ints(&a[0], "kernel_shape", ks->ints, ks->n));
    rlx_status e = rlx_node_attr_set_ints(&a[1], "strides", strides, (size_t)nsp);
    if (e) {
        rlx_node_attr_free(&a[0]);
        return e;
    }
    RLX_TRY(emit(c, 0, "AveragePool", &p, 1, a, 2, -1, &p));
    if (last) RLX_TRY(move_channels(c, p, rank, false, &p));
    return ort_pool_quant(c, p, in_id(c, 3), in_id(c, 4), dt, out_id(c, 0), &p);
}

/* QLinearAveragePool (X, x_scale, x_zp, y_scale, y_zp; AveragePool's
 * attributes, channels_last): see the row's text. */
static rlx_status x_qlinear_avgpool(cx *c) {
    int x, y;
    RLX_TRY(check_triple(c, 0, "X", "x_scale", "x_zero_point", RLX_QSCALE_DEQUANT, &x));
    RLX_TRY(check_scale(c, 3, "y_scale", 0, RLX_QSCALE_REQUANT));
    rlx_dtype dt = val(c, x)->dtype;
    RLX_TRY(check_zp(c, 4, "y_zero_point", dt, 0));
    int rank = val(c, x)->rank;
    const rlx_node_attr *ks = given(c, "kernel_shape"), *pads = given(c, "pads"), *ap = given(c, "auto_pad");
    if (rank < 3 || (int)ks->n != rank - 2)
        return rlx_fail(rank < 0 ? RLX_ERR_UNSUPPORTED : RLX_ERR_INVALID_MODEL, "%s: X needs a known rank of at least "
                        "3 and kernel_shape one value per spatial axis (rank %d, %zu values)", c->label, rank, ks->n);
    bool last = attr_i(c, "channels_last") != 0;
    /* onnxruntime's own shortcut: the kernel covers the image, no padding */
    bool global = !ap || strcmp(ap->s, "NOTSET") == 0 || strcmp(ap->s, "VALID") == 0;
    int64_t n = 1, axes[RLX_MAX_RANK];
    for (int i = 0; i < rank - 2 && global; i++) {
        int64_t d = static_dim(c, x, last ? i + 1 : i + 2);
        global = d == ks->ints[i];
        n *= d;
        axes[i] = last ? i + 1 : i + 2;
    }
    for (size_t i = 0; pads && i < pads->n && global && (!ap || strcmp(ap->s, "VALID") != 0); i++)
        global = pads->ints[i] == 0;
    if (global && n < (1 << 24)) return int_global_avg(c, x, axes, rank - 2, n, out_id(c, 0), &y);
    RLX_TRY(dq(c, x, in_id(c, 1), in_id(c, 2), &y));
    if (last) RLX_TRY(move_channels(c, y, rank, true, &y));
    if (attr_i(c, "count_include_pad") && attr_i(c, "ceil_mode") && (!ap || strcmp(ap->s, "NOTSET") == 0))
        return ort_ceil_pool(c, x, y, rank, last, ks, pads, dt);
    rlx_node_attr a[MAX_CATTRS];
    int n_a = 0;
    for (int i = 0; i < c->n_attrs; i++) {
        if (strcmp(c->attrs[i].name, "channels_last") == 0) continue;
        rlx_status st = rlx_node_attr_copy(&a[n_a], &c->attrs[i]);
        if (st) {
            free_attrs(a, n_a);
            return st;
        }
        n_a++;
    }
    RLX_TRY(emit(c, 0, "AveragePool", &y, 1, a, n_a, -1, &y));
    if (last) RLX_TRY(move_channels(c, y, rank, false, &y));
    return ort_pool_quant(c, y, in_id(c, 3), in_id(c, 4), dt, out_id(c, 0), &y);
}

/* QLinearSoftmax (X, X_scale, x_zp, y_scale, y_zp; axis, opset): see the
 * row's text. */
static rlx_status x_qlinear_softmax(cx *c) {
    int x, y, k;
    /* a zero X_scale makes onnxruntime's table of exponentials NaN (arbitrary levels): refused */
    RLX_TRY(check_triple(c, 0, "X", "X_scale", "x_zero_point", RLX_QSCALE_REQUANT, &x));
    RLX_TRY(check_scale(c, 3, "y_scale", 0, RLX_QSCALE_REQUANT));
    /* onnxruntime's table of exponentials assumes a positive X_scale: with
     * a negative one its entries grow past the largest float once the
     * inputs spread over a few levels (255 * |X_scale| > 5 at the most),
     * and it returns zeros or wrong levels where rlx's softmax is the true
     * one; refused rather than differ */
    const rlx_value *xsv = val(c, in_id(c, 1));
    if (xsv->konst && rlx_tensor_get_f64(xsv->konst, 0) < 0)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: X_scale is %g: a negative X_scale is not supported (onnxruntime's "
                        "table-based softmax assumes a positive scale and returns zeros or wrong levels for it once "
                        "the inputs spread over a few levels; rlx would give the true softmax, so it refuses rather "
                        "than differ)", c->label, rlx_tensor_get_f64(xsv->konst, 0));
    rlx_dtype dt = val(c, x)->dtype;
    RLX_TRY(check_zp(c, 4, "y_zero_point", dt, 0));
    int64_t opset = attr_i(c, "opset"), axis = given(c, "axis") ? attr_i(c, "axis") : opset < 13 ? 1 : -1;
    int rank = val(c, x)->rank;
    if (rank < 1 || axis < -rank || axis >= rank)
        return rlx_fail(rank < 0 ? RLX_ERR_UNSUPPORTED : RLX_ERR_INVALID_MODEL, "%s: axis %lld out of range for "
                        "rank %d", c->label, (long long)axis, rank);
    RLX_TRY(dq(c, x, in_id(c, 1), in_id(c, 2), &y));
    if (opset < 13) { /* Softmax-1/11: over the dims from axis on, flattened */
        int s, f;
        RLX_TRY(op1(c, "Shape", x, -1, &s));
        RLX_TRY(op_i(c, "Flatten", &y, 1, "axis", axis, -1, &f));
        RLX_TRY(op_i(c, "Softmax", &f, 1, "axis", -1, -1, &f));
        RLX_TRY(op2(c, "Reshape", f, s, -1, &y));
    } else {
        RLX_TRY(op_i(c, "Softmax", &y, 1, "axis", axis, -1, &y));
    }
    const rlx_value *ys = val(c, in_id(c, 3));
    if (ys->konst) {
        RLX_TRY(k_scalar(c, RLX_DTYPE_F32, floorf(1.0f / (float)rlx_tensor_get_f64(ys->konst, 0)), &k));
    } else {
        int one;
        RLX_TRY(k_scalar(c, RLX_DTYPE_F32, 1, &one));
        RLX_TRY(op2(c, "Div", one, in_id(c, 3), -1, &k));
        RLX_TRY(op1(c, "Floor", k, -1, &k));
    }
    RLX_TRY(op2(c, "Mul", y, k, -1, &y));
    return round_zp(c, y, in_id(c, 4), dt, out_id(c, 0), &y);
}

/* QLinearReduceMean (data, data_scale, data_zp, reduced_scale,
 * reduced_zp; axes, keepdims) = Q(ReduceMean(DQ(data))). */
static rlx_status x_qlinear_reduce_mean(cx *c) {
    int x, y, ax;
    RLX_TRY(check_triple(c, 0, "data", "data_scale", "data_zero_point", RLX_QSCALE_DEQUANT, &x));
    RLX_TRY(check_scale(c, 3, "reduced_scale", 0, RLX_QSCALE_REQUANT));
    RLX_TRY(check_zp(c, 4, "reduced_zero_point", val(c, x)->dtype, 0));
    const rlx_node_attr *axes = given(c, "axes");
    RLX_TRY(dq(c, x, in_id(c, 1), in_id(c, 2), &y));
    RLX_TRY(k_i64(c, axes->ints, axes->n, &ax));
    rlx_node_attr kd;
    RLX_TRY(rlx_node_attr_set_int(&kd, "keepdims", attr_i(c, "keepdims")));
    RLX_TRY(emit(c, 0, "ReduceMean", (int[]){ y, ax }, 2, &kd, 1, -1, &y));
    return quant_to(c, y, in_id(c, 3), in_id(c, 4), val(c, x)->dtype, out_id(c, 0), &y);
}

/* QLinearWhere (condition, X, x_scale, x_zp, Y, y_scale, y_zp, z_scale,
 * z_zp) = QuantizeLinear(Where(condition, DQ(X), DQ(Y)), z_scale, z_zp):
 * the same bits as onnxruntime's Where of the requantized X and Y (its
 * tables hold Q_z(DQ(v)), and Q is elementwise), with the Where in f32,
 * which the GPU runs. */
static rlx_status x_qlinear_where(cx *c) {
    int cond, x, y, xf, yf, z;
    RLX_TRY(input(c, 0, &cond));
    if (val(c, cond)->dtype != RLX_DTYPE_BOOL)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: condition has dtype %s, expected bool", c->label,
                        rlx_dtype_name(val(c, cond)->dtype));
    RLX_TRY(check_triple(c, 1, "X", "x_scale", "x_zero_point", RLX_QSCALE_DEQUANT, &x));
    RLX_TRY(check_triple(c, 4, "Y", "y_scale", "y_zero_point", RLX_QSCALE_DEQUANT, &y));
    rlx_dtype dt = val(c, x)->dtype;
    if (val(c, y)->dtype != dt)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: X and Y have dtypes %s and %s, expected the same", c->label,
                        rlx_dtype_name(dt), rlx_dtype_name(val(c, y)->dtype));
    RLX_TRY(check_scale(c, 7, "z_scale", 0, RLX_QSCALE_REQUANT));
    RLX_TRY(check_zp(c, 8, "z_zero_point", dt, 0));
    RLX_TRY(dq(c, x, in_id(c, 2), in_id(c, 3), &xf));
    RLX_TRY(dq(c, y, in_id(c, 5), in_id(c, 6), &yf));
    RLX_TRY(emit(c, 0, "Where", (int[]){ cond, xf, yf }, 3, NULL, 0, -1, &z));
    return quant_to(c, z, in_id(c, 7), in_id(c, 8), dt, out_id(c, 0), &z);
}

/* ------------------------------------------------------------ MatMulNBits */

/* Value j (bits wide, least significant bits first) of a packed row. */
static unsigned unpack(const uint8_t *row, size_t j, int bits) {
    size_t bit = j * (size_t)bits;
    return (row[bit / 8] >> (bit % 8)) & ((1u << bits) - 1u);
}

static const rlx_tensor *konst_input(cx *c, int i, const char *what, rlx_status *st) {
    int id = in_id(c, i);
    const rlx_tensor *t = id >= 0 ? val(c, id)->konst : NULL;
    if (!t)
        *st = rlx_fail(RLX_ERR_UNSUPPORTED, "%s: input %s must be a constant (an initializer): rlx dequantizes it "
                       "when the model loads", c->label, what);
    return t;
}

/* rlx.MatMulNBits(A, B, scales f32, zero points) (+ bias) on the packed
 * weights, for bits 4 with uint8 or no zero points: B and the zero points
 * are used as they are, the scales converted to f32 when they are f16 (exact). */
static rlx_status matmul_nbits_packed(cx *c, int a, const rlx_tensor *S, int64_t K, int64_t N, int64_t bs) {
    int s = in_id(c, 2);
    if (S->dtype != RLX_DTYPE_F32) {
        rlx_tensor *sf;
        RLX_TRY(rlx_tensor_create(RLX_DTYPE_F32, S->dims, S->rank, &sf));
        for (size_t i = 0; i < rlx_tensor_numel(S); i++) ((float *)sf->data)[i] = (float)rlx_tensor_get_f64(S, i);
        RLX_TRY(rlx_graph_add_konst(c->g, NULL, sf, &s));
    }
    int in[4] = { a, in_id(c, 1), s, in_id(c, 3) };
    bool bias = in_id(c, 5) >= 0;
    int y = bias ? -1 : out_id(c, 0);
    if (y < 0) RLX_TRY(rlx_graph_add_value(c->g, NULL, &y));
    rlx_node_attr at[3];
    const char *names[3] = { "K", "N", "block_size" };
    const int64_t vals[3] = { K, N, bs };
    for (int i = 0; i < 3; i++) {
        rlx_status st = rlx_node_attr_set_int(&at[i], names[i], vals[i]);
        if (st) {
            free_attrs(at, i);
            return st;
        }
    }
    RLX_TRY(emit_to_dom(c, 0, RLX_INTERNAL_DOMAIN, "MatMulNBits", in, in[3] >= 0 ? 4 : 3, at, 3, &y, 1));
    if (bias) RLX_TRY(op2(c, "Add", y, in_id(c, 5), out_id(c, 0), &y));
    return RLX_OK;
}

/* MatMulNBits(A, B, scales, zero_points, g_idx, bias): B holds N rows of
 * K/block_size blocks of `bits`-bit unsigned values (LSB first); weight
 * (k, n) = (q - zp) * scale of its block; zp defaults to 2^(bits-1).
 * bits 4 with uint8 or no zero points (what onnxruntime's quantizer writes)
 * becomes rlx.MatMulNBits on the packed weights; otherwise (bits 8, float
 * zero points) the constant B is dequantized here into a dense K x N matrix
 * of A's dtype, then Y = MatMul(A, W) (+ bias). */
static rlx_status x_matmul_nbits(cx *c) {
    int a;
    RLX_TRY(input(c, 0, &a));
    RLX_TRY(require_float(c, a, "A"));
    rlx_dtype dt = val(c, a)->dtype;
    int64_t K = attr_i(c, "K"), N = attr_i(c, "N"), bits = attr_i(c, "bits"), bs = attr_i(c, "block_size");
    if (bits != 4 && bits != 8) /* onnxruntime's CPU kernel has these two */
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: bits=%lld is not supported (4 or 8)", c->label, (long long)bits);
    if (bs < 16 || bs > ((int64_t)1 << 40) || (bs & (bs - 1)))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: block_size=%lld must be a power of 2 from 16 to 2^40", c->label,
                        (long long)bs);
    if (K <= 0 || N <= 0 || K > (int64_t)1 << 40 || N > (int64_t)1 << 40)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: K=%lld and N=%lld must be positive", c->label, (long long)K,
                        (long long)N);
    if (in_id(c, 4) >= 0)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: input g_idx (act-order group indices) is not supported", c->label);
    rlx_status st = RLX_OK;
    const rlx_tensor *B = konst_input(c, 1, "B", &st), *S = B ? konst_input(c, 2, "scales", &st) : NULL;
    if (!S) return st;
    const rlx_tensor *Z = in_id(c, 3) >= 0 ? konst_input(c, 3, "zero_points", &st) : NULL;
    if (st) return st;
    size_t nb = (size_t)((K + bs - 1) / bs), blob = (size_t)(bs * bits / 8), zrow = (nb * (size_t)bits + 7) / 8;
    size_t kn, n_blobs, b_bytes;
    /* K, N, block_size <= 2^40 and K x N <= 2^40: N x nb fits; the bytes of B are checked */
    if (!rlx_mul_ok((size_t)K, (size_t)N, &kn) || kn > ((size_t)1 << 40) ||
        !rlx_mul_ok((size_t)N, nb, &n_blobs) || !rlx_mul_ok(n_blobs, blob, &b_bytes) || b_bytes > ((size_t)1 << 42))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: K=%lld x N=%lld with block_size=%lld is too large", c->label,
                        (long long)K, (long long)N, (long long)bs);
    if (B->dtype != RLX_DTYPE_U8 || rlx_tensor_numel(B) != b_bytes)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: B must be uint8 with N * ceil(K / block_size) * block_size * "
                        "bits / 8 = %zu elements, has %s with %zu", c->label, b_bytes,
                        rlx_dtype_name(B->dtype), rlx_tensor_numel(B));
    if (!rlx_dtype_is_float(S->dtype) || rlx_tensor_numel(S) != (size_t)N * nb)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: scales must be floating point with N * ceil(K / block_size) = "
                        "%zu elements, has %s with %zu", c->label, (size_t)N * nb, rlx_dtype_name(S->dtype),
                        rlx_tensor_numel(S));
    bool zp_packed = Z && Z->dtype == RLX_DTYPE_U8;
    if (Z && (zp_packed ? rlx_tensor_numel(Z) != (size_t)N * zrow
                        : (Z->dtype != S->dtype || rlx_tensor_numel(Z) != (size_t)N * nb)))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: zero_points must be uint8 with N * ceil(n_blocks * bits / 8) = %zu "
                        "elements or of the scales' type with %zu, has %s with %zu", c->label, (size_t)N * zrow,
                        (size_t)N * nb, rlx_dtype_name(Z->dtype), rlx_tensor_numel(Z));
    if (bits == 4 && (!Z || zp_packed) && (dt == RLX_DTYPE_F32 || dt == RLX_DTYPE_F16) && bs <= 4096 &&
        K <= INT32_MAX && N <= INT32_MAX)
        return matmul_nbits_packed(c, a, S, K, N, bs);
    rlx_tensor *W;
    /* B of K N bytes (8 bits) or K N / 2 (4 bits, float zero points) becomes
     * 4 K N (f32): checked as an initializer of that size would be */
    if (c->cfg) {
        char what[400];
        snprintf(what, sizeof what, "%s: B dequantized to %s [%lld,%lld]", c->label, rlx_dtype_name(dt),
                 (long long)K, (long long)N);
        RLX_TRY(rlx_limit_check(c->cfg, "limits.max_tensor_bytes", (uint64_t)kn * rlx_dtype_size(dt), what));
    }
    RLX_TRY(rlx_tensor_create(dt, (int64_t[]){ K, N }, 2, &W));
    const uint8_t *bp = B->data;
    double zdef = (double)(1u << (bits - 1));
    /* tiles of 16 columns n, so that the stores along n fill cache lines */
    for (size_t n0 = 0; n0 < (size_t)N; n0 += 16)
        for (size_t blk = 0; blk < nb; blk++)
            for (size_t n = n0; n < n0 + 16 && n < (size_t)N; n++) {
                float s = (float)rlx_tensor_get_f64(S, n * nb + blk);
                float z = (float)(!Z ? zdef : zp_packed ? unpack((const uint8_t *)Z->data + n * zrow, blk, (int)bits)
                                                        : rlx_tensor_get_f64(Z, n * nb + blk));
                const uint8_t *row = bp + (n * nb + blk) * blob;
                for (size_t j = 0; j < (size_t)bs && blk * (size_t)bs + j < (size_t)K; j++) {
                    size_t at = (blk * (size_t)bs + j) * (size_t)N + n;
                    float w = ((float)unpack(row, j, (int)bits) - z) * s; /* in f32, as (q - zp) * scale */
                    if (dt == RLX_DTYPE_F32) ((float *)W->data)[at] = w;
                    else rlx_tensor_set_f64(W, at, w);
                }
            }
    int w, y;
    RLX_TRY(rlx_graph_add_konst(c->g, NULL, W, &w));
    bool bias = in_id(c, 5) >= 0;
    RLX_TRY(op2(c, "MatMul", a, w, bias ? -1 : out_id(c, 0), &y));
    if (bias) RLX_TRY(op2(c, "Add", y, in_id(c, 5), out_id(c, 0), &y));
    return RLX_OK;
}

/* ------------------------------------------------------------ DynamicQuantizeLSTM */

/* [D, rows, 4H] quantized with scale and zero point of shape [D] or
 * [D, 4H] -> f32 [D, 4H, rows] (ONNX LSTM's layout). Constant inputs fold. */
static rlx_status dq_lstm_weight(cx *c, int w, int s, int zp, int *out) {
    int wf, zf, sr, zr, d;
    RLX_TRY(op_i(c, "Cast", &w, 1, "to", RLX_DTYPE_F32, -1, &wf));
    static const int64_t shp[3] = { 0, 1, -1 };
    RLX_TRY(reshape(c, zp, shp, 3, -1, &zr));
    RLX_TRY(op_i(c, "Cast", &zr, 1, "to", RLX_DTYPE_F32, -1, &zf));
    RLX_TRY(reshape(c, s, shp, 3, -1, &sr));
    RLX_TRY(op2(c, "Sub", wf, zf, -1, &d));
    RLX_TRY(op2(c, "Mul", d, sr, -1, &d));
    static const int64_t perm[3] = { 0, 2, 1 };
    return transpose(c, d, perm, 3, -1, out);
}

/* DynamicQuantizeLSTM(X, W, R, B, sequence_lens, initial_h, initial_c, P,
 * W_scale, W_zero_point, R_scale, R_zero_point) = LSTM(X, dequantized W and
 * R transposed to [D, 4H, .], B, ...), the LSTM attributes passed on. */
static rlx_status x_dq_lstm(cx *c) {
    for (int i = 8; i < 12; i++)
        if (in_id(c, i) < 0)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input %d (scale or zero point of W or R) is missing", c->label,
                            i);
    int w, r;
    RLX_TRY(dq_lstm_weight(c, in_id(c, 1), in_id(c, 8), in_id(c, 9), &w));
    RLX_TRY(dq_lstm_weight(c, in_id(c, 2), in_id(c, 10), in_id(c, 11), &r));
    int in[8];
    for (int i = 0; i < 8; i++) in[i] = in_id(c, i);
    in[1] = w, in[2] = r;
    int n_in = 8;
    while (n_in > 3 && in[n_in - 1] < 0) n_in--;
    rlx_node_attr a[MAX_CATTRS];
    int n_a = 0;
    for (int i = 0; i < c->n_attrs; i++) {
        rlx_status st = rlx_node_attr_copy(&a[n_a], &c->attrs[i]);
        if (st) {
            free_attrs(a, n_a);
            return st;
        }
        n_a++;
    }
    int outs[3] = { out_id(c, 0), out_id(c, 1), out_id(c, 2) };
    int n_out = outs[2] >= 0 ? 3 : outs[1] >= 0 ? 2 : outs[0] >= 0 ? 1 : 0;
    return emit_to(c, 0, "LSTM", in, n_in, a, n_a, outs, n_out);
}

/* ------------------------------------------------------------ rotary embedding */

/* x [..., hd] rotated by cos, sin (broadcastable to [..., rd/2]) on its
 * first rd channels: halves (x1, x2) = (x[:rd/2], x[rd/2:rd]), or the even
 * and odd channels when interleaved; (x1 cos - x2 sin, x2 cos + x1 sin). */
static rlx_status rope(cx *c, int x, int cs, int sn, int64_t hd, int64_t rd, bool interleaved, int dst, int *out) {
    int xr = x, xp = -1, x1, x2;
    if (rd < hd) {
        RLX_TRY(slice(c, x, -1, 0, rd, 1, &xr));
        RLX_TRY(slice(c, x, -1, rd, hd, 1, &xp));
    }
    if (interleaved) {
        RLX_TRY(slice(c, xr, -1, 0, rd, 2, &x1));
        RLX_TRY(slice(c, xr, -1, 1, rd, 2, &x2));
    } else {
        RLX_TRY(slice(c, xr, -1, 0, rd / 2, 1, &x1));
        RLX_TRY(slice(c, xr, -1, rd / 2, rd, 1, &x2));
    }
    int a, b, o1, o2, r;
    RLX_TRY(op2(c, "Mul", x1, cs, -1, &a));
    RLX_TRY(op2(c, "Mul", x2, sn, -1, &b));
    RLX_TRY(op2(c, "Sub", a, b, -1, &o1));
    RLX_TRY(op2(c, "Mul", x2, cs, -1, &a));
    RLX_TRY(op2(c, "Mul", x1, sn, -1, &b));
    RLX_TRY(op2(c, "Add", a, b, -1, &o2));
    int last = xp < 0 ? dst : -1;
    if (interleaved) {
        int s, u1, u2;
        RLX_TRY(unsqueeze(c, o1, -1, &u1));
        RLX_TRY(unsqueeze(c, o2, -1, &u2));
        RLX_TRY(concat(c, (int[]){ u1, u2 }, 2, -1, -1, &r));
        RLX_TRY(op1(c, "Shape", xr, -1, &s));
        RLX_TRY(op2(c, "Reshape", r, s, last, &r));
    } else {
        RLX_TRY(concat(c, (int[]){ o1, o2 }, 2, -1, last, &r));
    }
    if (xp >= 0) RLX_TRY(concat(c, (int[]){ r, xp }, 2, -1, dst, &r));
    *out = r;
    return RLX_OK;
}

/* cos and sin rows of the caches at positions pos (int64 [B or 1, S]),
 * [., S, rd/2] with a unit axis inserted at `axis`. */
static rlx_status rope_tables(cx *c, int pos, int cos_cache, int sin_cache, int64_t axis, int *cs, int *sn) {
    int t;
    RLX_TRY(op_i(c, "Gather", (int[]){ cos_cache, pos }, 2, "axis", 0, -1, &t));
    RLX_TRY(unsqueeze(c, t, axis, cs));
    RLX_TRY(op_i(c, "Gather", (int[]){ sin_cache, pos }, 2, "axis", 0, -1, &t));
    return unsqueeze(c, t, axis, sn);
}

/* Checks a cos/sin cache: floating point, rank 2, rd/2 columns when known. */
static rlx_status check_cache(cx *c, int id, const char *what, int64_t rd) {
    RLX_TRY(need(c, id));
    RLX_TRY(require_float(c, id, what));
    const rlx_value *v = val(c, id);
    if (v->rank != 2 || (v->dims[1] >= 0 && rd > 0 && v->dims[1] * 2 != rd))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %s must have shape (max_sequence_length, %lld)", c->label, what,
                        (long long)(rd / 2));
    return RLX_OK;
}

/* RotaryEmbedding(input, position_ids, cos_cache, sin_cache): input
 * [B, S, hidden] (heads of head_size along hidden) or [B, num_heads, S,
 * head_size]; position_ids [B, S], or [1] holding the first position of
 * every sequence; the first rotary_embedding_dim channels of each head
 * (all when 0) rotate by the cache rows at their positions. */
static rlx_status x_rotary(cx *c) {
    int x, pid;
    RLX_TRY(input(c, 0, &x));
    RLX_TRY(input(c, 1, &pid));
    RLX_TRY(require_float(c, x, "input"));
    if (attr_i(c, "is_packed_batching"))
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: is_packed_batching=1 (ragged batches) is not supported", c->label);
    int rank = val(c, x)->rank;
    if (rank != 3 && rank != 4)
        return rlx_fail(rank < 0 ? RLX_ERR_UNSUPPORTED : RLX_ERR_INVALID_MODEL,
                        "%s: input must have rank 3 or 4 (known when the model loads), has %d", c->label, rank);
    int64_t nh = attr_i(c, "num_heads"), rd = attr_i(c, "rotary_embedding_dim"), hd;
    RLX_TRY(need(c, in_id(c, 2)));
    int64_t half = static_dim(c, in_id(c, 2), 1);
    if (rank == 4) hd = static_dim(c, x, 3);
    else if (nh > 0) {
        int64_t hidden = static_dim(c, x, 2);
        hd = hidden > 0 && hidden % nh == 0 ? hidden / nh : -1;
    } else
        hd = rd > 0 ? -1 : half * 2;
    if (nh < 0 || rd < 0)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: num_heads and rotary_embedding_dim must be >= 0", c->label);
    if (hd <= 0)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: the head size is not known when the model loads (a static last "
                        "dim, num_heads with rank 3, or a static cos_cache)", c->label);
    if (!rd) rd = hd;
    if (rd > hd || rd % 2)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: rotary_embedding_dim %lld must be even and at most the head size "
                        "%lld", c->label, (long long)rd, (long long)hd);
    RLX_TRY(check_cache(c, in_id(c, 2), "cos_cache", rd));
    RLX_TRY(check_cache(c, in_id(c, 3), "sin_cache", rd));
    rlx_dtype pdt = val(c, pid)->dtype;
    if (pdt != RLX_DTYPE_I64 && pdt != RLX_DTYPE_I32)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: position_ids has dtype %s, expected int64", c->label,
                        rlx_dtype_name(pdt));
    int pos = pid;
    if (pdt != RLX_DTYPE_I64) RLX_TRY(op_i(c, "Cast", &pid, 1, "to", RLX_DTYPE_I64, -1, &pos));
    if (val(c, pid)->rank == 1) { /* [1]: start offset; positions start + 0..S-1 */
        int s, r, p0;
        RLX_TRY(dim_of(c, x, rank == 3 ? 1 : 2, RLX_DTYPE_I64, &s));
        RLX_TRY(arange(c, s, &r));
        static const int64_t one1[2] = { 1, 1 };
        RLX_TRY(reshape(c, pos, one1, 2, -1, &p0));
        RLX_TRY(op2(c, "Add", p0, r, -1, &pos));
    } else if (val(c, pid)->rank != 2)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: position_ids must have shape (1) or (batch_size, sequence_length)",
                        c->label);
    int cs, sn, y;
    if (rank == 4) {
        RLX_TRY(rope_tables(c, pos, in_id(c, 2), in_id(c, 3), 1, &cs, &sn));
        return rope(c, x, cs, sn, hd, rd, attr_i(c, "interleaved") != 0, out_id(c, 0), &y);
    }
    int x4, r;
    RLX_TRY(rope_tables(c, pos, in_id(c, 2), in_id(c, 3), 2, &cs, &sn));
    const int64_t heads[4] = { 0, 0, -1, hd };
    RLX_TRY(reshape(c, x, heads, 4, -1, &x4));
    RLX_TRY(rope(c, x4, cs, sn, hd, rd, attr_i(c, "interleaved") != 0, -1, &r));
    static const int64_t flat[3] = { 0, 0, -1 };
    return reshape(c, r, flat, 3, out_id(c, 0), &y);
}

/* ------------------------------------------------------------ GroupQueryAttention */

/* Packed Q, K, V along the last axis -> outs[3], of sizes[3] channels. */
static rlx_status split_qkv(cx *c, int x, const int64_t *sizes, int *outs) {
    int k;
    RLX_TRY(k_i64(c, sizes, 3, &k));
    rlx_node_attr a;
    RLX_TRY(rlx_node_attr_set_int(&a, "axis", -1));
    for (int i = 0; i < 3; i++) RLX_TRY(rlx_graph_add_value(c->g, NULL, &outs[i]));
    return emit_to(c, 0, "Split", (int[]){ x, k }, 2, &a, 1, outs, 3);
}

/* x [B, hkv, T, d] with each kv head repeated hq / hkv times in place
 * (head h of the result is kv head h / (hq / hkv)): [B, hq, T, d]; Expand
 * materializes the repeats. */
static rlx_status repeat_heads(cx *c, int x, int64_t hq, int64_t hkv, int64_t d, int *out) {
    int e;
    const int64_t rep[5] = { 1, 1, hq / hkv, 1, 1 }, merged[4] = { 0, hq, -1, d };
    RLX_TRY(k_i64(c, rep, 5, &e));
    RLX_TRY(unsqueeze(c, x, 2, &x));
    RLX_TRY(op2(c, "Expand", x, e, -1, &x));
    return reshape(c, x, merged, 4, -1, out);
}

/* The attention scores Q K^T scale of q [.., Sq, D] and k [.., T, D], then
 * softcap s tanh(x / s) when softcap > 0; constants of type dt. */
static rlx_status scaled_scores(cx *c, int q, int k, rlx_dtype dt, double scale, float softcap, int *out) {
    static const int64_t kt[4] = { 0, 1, 3, 2 };
    int kT, s, ks;
    RLX_TRY(transpose(c, k, kt, 4, -1, &kT));
    RLX_TRY(op2(c, "MatMul", q, kT, -1, &s));
    RLX_TRY(k_scalar(c, dt, scale, &ks));
    RLX_TRY(op2(c, "Mul", s, ks, -1, &s));
    if (softcap > 0.0f) {
        int kc;
        RLX_TRY(k_scalar(c, dt, softcap, &kc));
        RLX_TRY(op2(c, "Div", s, kc, -1, &s));
        RLX_TRY(op1(c, "Tanh", s, -1, &s));
        RLX_TRY(op2(c, "Mul", s, kc, -1, &s));
    }
    *out = s;
    return RLX_OK;
}

/* Output 0: the attention output p v of probabilities p [B, N, S, T] and
 * values v [B, N, T, H], heads merged back: [B, S, N H]. */
static rlx_status attn_out(cx *c, int p, int v) {
    static const int64_t bnsh[4] = { 0, 2, 1, 3 }, flat[3] = { 0, 0, -1 };
    int o;
    RLX_TRY(op2(c, "MatMul", p, v, -1, &o));
    RLX_TRY(transpose(c, o, bnsh, 4, -1, &o));
    return reshape(c, o, flat, 3, out_id(c, 0), &o);
}

/* GroupQueryAttention: see the row's text. */
static rlx_status x_gqa(cx *c) {
    int64_t nh = attr_i(c, "num_heads"), kvh = attr_i(c, "kv_num_heads");
    if (nh <= 0 || kvh <= 0 || nh > INT32_MAX || nh % kvh)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: num_heads (%lld) must be a positive multiple of kv_num_heads "
                        "(%lld), at most 2^31 - 1", c->label, (long long)nh, (long long)kvh);
    int q, k = in_id(c, 1), v = in_id(c, 2), pk = in_id(c, 3), pv = in_id(c, 4);
    RLX_TRY(input(c, 0, &q));
    RLX_TRY(require_float(c, q, "query"));
    rlx_dtype dt = val(c, q)->dtype;
    if ((k < 0) != (v < 0) || (pk < 0) != (pv < 0))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: key and value (and past_key and past_value) come together",
                        c->label);
    if (in_id(c, 5) < 0 || in_id(c, 6) < 0)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: seqlens_k and total_sequence_length are required", c->label);
    if (in_id(c, 9) >= 0)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: input position_ids is not supported (positions come from "
                        "seqlens_k)", c->label);
    if (val(c, q)->rank != 3)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: query must have rank 3 (batch, sequence, hidden)", c->label);
    int64_t d = static_dim(c, q, 2);
    int64_t hd = d <= 0 ? -1 : k >= 0 ? (d % nh ? -1 : d / nh) : (d % (nh + 2 * kvh) ? -1 : d / (nh + 2 * kvh));
    if (hd <= 0)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: query's last dim must be static and a multiple of the heads",
                        c->label);
    int64_t lws = attr_i(c, "local_window_size");
    float softcap = attr_f(c, "softcap"), scale = attr_f(c, "scale");
    if (scale == 0.0f) scale = (float)(1.0 / sqrt((double)hd));
    if (k < 0) { /* packed QKV */
        const int64_t sp[3] = { nh * hd, kvh * hd, kvh * hd };
        int outs[3];
        RLX_TRY(split_qkv(c, q, sp, outs));
        q = outs[0], k = outs[1], v = outs[2];
    }
    /* positions: past_b + s, past_b = seqlens_k[b] + 1 - S (in int32, as
     * seqlens_k, which the GPU holds) */
    int sl, one, s, past, pos, r;
    RLX_TRY(input(c, 5, &sl));
    if (val(c, sl)->dtype != RLX_DTYPE_I32)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: seqlens_k has dtype %s, expected int32", c->label,
                        rlx_dtype_name(val(c, sl)->dtype));
    RLX_TRY(k_fill(c, RLX_DTYPE_I32, 0, NULL, 1, &one));
    RLX_TRY(op2(c, "Add", sl, one, -1, &past));
    RLX_TRY(dim_of(c, q, 1, RLX_DTYPE_I32, &s));
    RLX_TRY(op2(c, "Sub", past, s, -1, &past));
    RLX_TRY(unsqueeze(c, past, 1, &past)); /* [B, 1] */
    RLX_TRY(arange(c, s, &r));
    RLX_TRY(op2(c, "Add", past, r, -1, &pos)); /* [B, S] */
    const int64_t qh[4] = { 0, 0, nh, hd }, kh[4] = { 0, 0, kvh, hd };
    RLX_TRY(reshape(c, q, qh, 4, -1, &q));
    RLX_TRY(reshape(c, k, kh, 4, -1, &k));
    RLX_TRY(reshape(c, v, kh, 4, -1, &v));
    if (attr_i(c, "do_rotary")) {
        if (in_id(c, 7) < 0 || in_id(c, 8) < 0)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: do_rotary=1 needs cos_cache and sin_cache", c->label);
        RLX_TRY(check_cache(c, in_id(c, 7), "cos_cache", hd));
        RLX_TRY(check_cache(c, in_id(c, 8), "sin_cache", hd));
        int cs, sn;
        bool il = attr_i(c, "rotary_interleaved") != 0;
        RLX_TRY(rope_tables(c, pos, in_id(c, 7), in_id(c, 8), 2, &cs, &sn));
        RLX_TRY(rope(c, q, cs, sn, hd, hd, il, -1, &q));
        RLX_TRY(rope(c, k, cs, sn, hd, hd, il, -1, &k));
    }
    static const int64_t bnsh[4] = { 0, 2, 1, 3 };
    RLX_TRY(transpose(c, q, bnsh, 4, -1, &q));
    RLX_TRY(transpose(c, k, bnsh, 4, -1, &k));
    RLX_TRY(transpose(c, v, bnsh, 4, -1, &v));
    if (pk >= 0) {
        RLX_TRY(need(c, pk));
        RLX_TRY(need(c, pv));
        RLX_TRY(concat(c, (int[]){ pk, k }, 2, 2, out_id(c, 1), &k));
        RLX_TRY(concat(c, (int[]){ pv, v }, 2, 2, out_id(c, 2), &v));
    } else {
        if (out_id(c, 1) >= 0) RLX_TRY(op1(c, "Identity", k, out_id(c, 1), &r));
        if (out_id(c, 2) >= 0) RLX_TRY(op1(c, "Identity", v, out_id(c, 2), &r));
    }
    int t;
    RLX_TRY(dim_of(c, k, 2, RLX_DTYPE_I32, &t));
    if (nh != kvh) { /* query head h reads kv head h / (nh / kvh) */
        RLX_TRY(repeat_heads(c, k, nh, kvh, hd, &k));
        RLX_TRY(repeat_heads(c, v, nh, kvh, hd, &v));
    }
    int sc;
    RLX_TRY(scaled_scores(c, q, k, dt, scale, softcap, &sc));
    if (in_id(c, 10) >= 0) RLX_TRY(op2(c, "Add", sc, in_id(c, 10), -1, &sc));
    /* causal mask [B, 1, S, T]: key j is seen by query (b, s) when j <= pos */
    int kpos, qp, valid, ninf;
    RLX_TRY(arange(c, t, &kpos));
    RLX_TRY(unsqueeze(c, pos, 1, &qp));
    RLX_TRY(unsqueeze(c, qp, 3, &qp));
    RLX_TRY(op2(c, "LessOrEqual", kpos, qp, -1, &valid));
    if (lws > 0) { /* and j >= pos - local_window_size: the last local_window_size + 1 keys */
        int lw, lo, in_win;
        RLX_TRY(k_fill(c, RLX_DTYPE_I32, 0, NULL, (double)lws + 1, &lw));
        RLX_TRY(op2(c, "Sub", qp, lw, -1, &lo));
        RLX_TRY(op2(c, "Greater", kpos, lo, -1, &in_win));
        RLX_TRY(op2(c, "And", valid, in_win, -1, &valid));
    }
    RLX_TRY(k_scalar(c, dt, -INFINITY, &ninf));
    RLX_TRY(emit(c, 0, "Where", (int[]){ valid, sc, ninf }, 3, NULL, 0, -1, &sc));
    int p;
    if (attr_i(c, "smooth_softmax") == 1) { /* a sink of logit 0: exp(x - m) / (exp(-m) + sum exp(x - m)) */
        int m, z, e, sum, em;
        RLX_TRY(k_i64(c, (int64_t[]){ -1 }, 1, &r));
        rlx_node_attr a;
        RLX_TRY(rlx_node_attr_set_int(&a, "keepdims", 1));
        RLX_TRY(emit(c, 0, "ReduceMax", (int[]){ sc, r }, 2, &a, 1, -1, &m));
        RLX_TRY(k_scalar(c, dt, 0, &z));
        RLX_TRY(op2(c, "Max", m, z, -1, &m));
        RLX_TRY(op2(c, "Sub", sc, m, -1, &e));
        RLX_TRY(op1(c, "Exp", e, -1, &e));
        RLX_TRY(rlx_node_attr_set_int(&a, "keepdims", 1));
        RLX_TRY(emit(c, 0, "ReduceSum", (int[]){ e, r }, 2, &a, 1, -1, &sum));
        RLX_TRY(op1(c, "Neg", m, -1, &em));
        RLX_TRY(op1(c, "Exp", em, -1, &em));
        RLX_TRY(op2(c, "Add", sum, em, -1, &sum));
        RLX_TRY(op2(c, "Div", e, sum, -1, &p));
    } else
        RLX_TRY(op_i(c, "Softmax", &sc, 1, "axis", -1, -1, &p));
    return attn_out(c, p, v);
}

/* ------------------------------------------------------------ Attention-23 (ai.onnx) */

/* ONNX Attention-23/24 (onnx's reference op_attention.py): Q [B, Hq, Sq, D]
 * or [B, Sq, Hq D] (3-D: q_num_heads and kv_num_heads split the heads), K
 * and V likewise with Hkv heads; past_key/past_value [B, Hkv, P, .]
 * concatenated in front along the sequence (present_key/present_value);
 * kv heads repeated for GQA (head h reads kv head h / (Hq / Hkv)); scores
 * = Q K^T scale (scale default 1/sqrt(D)), softcap c tanh(s / c) when
 * softcap > 0; the bias: attn_mask (bool: false is -inf; float: added;
 * shorter than the total length: padded with -inf / false), is_causal
 * (key j seen by query i when j <= i + P), nonpad_kv_seqlen (key j seen
 * when j < len[b]); Softmax, times V; 3-D: heads merged back.
 * qk_matmul_output: the scores before the bias (modes 0, 1), with it (2),
 * or the probabilities (3). softmax_precision is accepted (the fused
 * kernels compute the softmax in f32 anyway). */
static rlx_status x_onnx_attention(cx *c) {
    int q, k, v, mask = in_id(c, 3), pk = in_id(c, 4), pv = in_id(c, 5), npad = in_id(c, 6);
    RLX_TRY(input(c, 0, &q));
    RLX_TRY(input(c, 1, &k));
    RLX_TRY(input(c, 2, &v));
    RLX_TRY(require_float(c, q, "Q"));
    rlx_dtype dt = val(c, q)->dtype;
    if (val(c, k)->dtype != dt || val(c, v)->dtype != dt)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: Q, K and V must have one dtype", c->label);
    if ((pk < 0) != (pv < 0))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: past_key and past_value come together", c->label);
    int r = val(c, q)->rank;
    if ((r != 3 && r != 4) || val(c, k)->rank != r || val(c, v)->rank != r)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: Q, K and V must all have rank 3 or all rank 4", c->label);
    int64_t mode = attr_i(c, "qk_matmul_output_mode");
    if (mode < 0 || mode > 3)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: qk_matmul_output_mode %lld is not 0, 1, 2 or 3", c->label,
                        (long long)mode);
    int64_t hq = given(c, "q_num_heads") ? attr_i(c, "q_num_heads") : -1;
    int64_t hkv = given(c, "kv_num_heads") ? attr_i(c, "kv_num_heads") : -1;
    static const int64_t bnsh[4] = { 0, 2, 1, 3 };
    if (r == 3) { /* [B, S, H * D] -> [B, H, S, D] */
        if (hq <= 0 || hkv <= 0)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: 3-D inputs need positive q_num_heads and kv_num_heads",
                            c->label);
        const int64_t qs[4] = { 0, 0, hq, -1 }, ks[4] = { 0, 0, hkv, -1 };
        RLX_TRY(reshape(c, q, qs, 4, -1, &q));
        RLX_TRY(reshape(c, k, ks, 4, -1, &k));
        RLX_TRY(reshape(c, v, ks, 4, -1, &v));
        RLX_TRY(transpose(c, q, bnsh, 4, -1, &q));
        RLX_TRY(transpose(c, k, bnsh, 4, -1, &k));
        RLX_TRY(transpose(c, v, bnsh, 4, -1, &v));
    } else {
        int64_t sq = static_dim(c, q, 1), sk = static_dim(c, k, 1);
        if ((hq > 0 && sq >= 0 && hq != sq) || (hkv > 0 && sk >= 0 && hkv != sk))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: q_num_heads or kv_num_heads contradicts the heads of Q or K",
                            c->label);
        hq = sq, hkv = sk;
    }
    int rr;
    if (pk >= 0) {
        RLX_TRY(concat(c, (int[]){ pk, k }, 2, 2, out_id(c, 1), &k));
        RLX_TRY(concat(c, (int[]){ pv, v }, 2, 2, out_id(c, 2), &v));
    } else {
        if (out_id(c, 1) >= 0) RLX_TRY(op1(c, "Identity", k, out_id(c, 1), &rr));
        if (out_id(c, 2) >= 0) RLX_TRY(op1(c, "Identity", v, out_id(c, 2), &rr));
    }
    int64_t d = static_dim(c, q, 3);
    if (hq != hkv) { /* GQA: query head h reads kv head h / (hq / hkv) */
        int64_t dk = static_dim(c, k, 3), dv = static_dim(c, v, 3);
        if (hq <= 0 || hkv <= 0 || hq % hkv || dk < 0 || dv < 0)
            return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: grouped heads need static head counts (%lld query, %lld kv; "
                            "a multiple) and head sizes", c->label, (long long)hq, (long long)hkv);
        RLX_TRY(repeat_heads(c, k, hq, hkv, dk, &k));
        RLX_TRY(repeat_heads(c, v, hq, hkv, dv, &v));
    }
    double scale;
    if (given(c, "scale")) {
        scale = attr_f(c, "scale");
    } else {
        if (d <= 0)
            return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: the default scale needs a static head size", c->label);
        scale = 1.0 / sqrt((double)d);
    }
    int s, ninf, zero;
    RLX_TRY(scaled_scores(c, q, k, dt, scale, attr_f(c, "softcap"), &s));
    int qk = s, bias = -1, t, kpos;
    RLX_TRY(k_scalar(c, dt, -INFINITY, &ninf));
    RLX_TRY(k_scalar(c, dt, 0.0, &zero));
    RLX_TRY(dim_of(c, k, 2, RLX_DTYPE_I64, &t));
    RLX_TRY(arange(c, t, &kpos)); /* [T] */
    if (mask >= 0) {
        rlx_dtype mt = val(c, mask)->dtype;
        int mr = val(c, mask)->rank;
        if (mt != RLX_DTYPE_BOOL && mt != dt)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attn_mask has dtype %s, expected bool or %s", c->label,
                            rlx_dtype_name(mt), rlx_dtype_name(dt));
        if (mr < 1) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attn_mask must have rank >= 1", c->label);
        int64_t ml = static_dim(c, mask, -1), tl = static_dim(c, k, 2);
        if (ml < 0 || tl < 0 || ml != tl) { /* pad the key axis up to the total length */
            int len, pad, pads, fill;
            int64_t z[2 * RLX_MAX_RANK] = { 0 };
            RLX_TRY(dim_of(c, mask, mr - 1, RLX_DTYPE_I64, &len));
            RLX_TRY(op2(c, "Sub", t, len, -1, &pad));
            RLX_TRY(unsqueeze(c, pad, 0, &pad));
            RLX_TRY(k_i64(c, z, (size_t)(2 * mr - 1), &pads));
            RLX_TRY(concat(c, (int[]){ pads, pad }, 2, 0, -1, &pads));
            if (mt == RLX_DTYPE_BOOL) RLX_TRY(k_scalar(c, RLX_DTYPE_BOOL, 0, &fill));
            else fill = ninf;
            RLX_TRY(emit(c, 0, "Pad", (int[]){ mask, pads, fill }, 3, NULL, 0, -1, &mask));
        }
        if (mt == RLX_DTYPE_BOOL) RLX_TRY(emit(c, 0, "Where", (int[]){ mask, zero, ninf }, 3, NULL, 0, -1, &mask));
        bias = mask;
    }
    if (attr_i(c, "is_causal")) { /* key j seen by query i when j <= i + past */
        int sq, qpos, past, valid, causal;
        RLX_TRY(dim_of(c, q, 2, RLX_DTYPE_I64, &sq));
        RLX_TRY(arange(c, sq, &qpos));
        RLX_TRY(unsqueeze(c, qpos, 1, &qpos)); /* [Sq, 1] */
        if (pk >= 0) RLX_TRY(dim_of(c, pk, 2, RLX_DTYPE_I64, &past));
        else RLX_TRY(k_scalar(c, RLX_DTYPE_I64, 0, &past));
        RLX_TRY(op2(c, "Add", qpos, past, -1, &qpos));
        RLX_TRY(op2(c, "LessOrEqual", kpos, qpos, -1, &valid));
        RLX_TRY(emit(c, 0, "Where", (int[]){ valid, zero, ninf }, 3, NULL, 0, -1, &causal));
        if (bias >= 0) RLX_TRY(op2(c, "Add", bias, causal, -1, &bias));
        else bias = causal;
    }
    if (npad >= 0) { /* key j of batch b seen when j < nonpad_kv_seqlen[b] */
        int len, valid, pm;
        if (val(c, npad)->dtype != RLX_DTYPE_I64)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: nonpad_kv_seqlen has dtype %s, expected int64", c->label,
                            rlx_dtype_name(val(c, npad)->dtype));
        RLX_TRY(unsqueeze(c, npad, 1, &len)); /* [B, 1] */
        RLX_TRY(op2(c, "Less", kpos, len, -1, &valid));
        RLX_TRY(unsqueeze(c, valid, 1, &valid));
        RLX_TRY(unsqueeze(c, valid, 1, &valid)); /* [B, 1, 1, T] */
        RLX_TRY(emit(c, 0, "Where", (int[]){ valid, zero, ninf }, 3, NULL, 0, -1, &pm));
        if (bias >= 0) RLX_TRY(op2(c, "Add", bias, pm, -1, &bias));
        else bias = pm;
    }
    if (bias >= 0) RLX_TRY(op2(c, "Add", s, bias, -1, &s));
    int p, y;
    RLX_TRY(op_i(c, "Softmax", &s, 1, "axis", -1, -1, &p));
    if (out_id(c, 3) >= 0) RLX_TRY(op1(c, "Identity", mode == 3 ? p : mode == 2 ? s : qk, out_id(c, 3), &rr));
    if (r == 4) return op2(c, "MatMul", p, v, out_id(c, 0), &y);
    return attn_out(c, p, v);
}

/* ------------------------------------------------------------ Attention (BERT, GPT-2) */

/* The additive mask [B, 1, 1 or S, T] of Attention's mask_index: raw
 * masks (B, T) or (B, S, T), 1 keep and 0 masked, or right-padding lengths
 * (B): key j masked when j >= length; masked keys get mask_filter_value. */
static rlx_status attn_mask(cx *c, int mask, const char *what, int t, rlx_dtype dt, int64_t b_dim, int *out) {
    /* the mask's rank and dtype copied: adding values may move c->g->values */
    const rlx_value mv_ = *val(c, mask), *mv = &mv_;
    float filter = attr_f(c, "mask_filter_value");
    int fk, zk;
    RLX_TRY(k_scalar(c, dt, filter, &fk));
    RLX_TRY(k_scalar(c, dt, 0, &zk));
    if (mv->dtype != RLX_DTYPE_I32 && mv->dtype != RLX_DTYPE_I64)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %s has dtype %s, expected int32", c->label, what,
                        rlx_dtype_name(mv->dtype));
    int keep, r;
    if (mv->rank == 1) {
        int64_t n = static_dim(c, mask, 0);
        if (n >= 0 && b_dim >= 0 && n != b_dim)
            return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: %s of shape (%lld): only the right-padding form (batch_size) "
                            "is supported among the 1-D ones", c->label, what, (long long)n);
        int kpos, len;
        RLX_TRY(arange(c, t, &kpos));
        RLX_TRY(op_i(c, "Cast", &kpos, 1, "to", mv->dtype, -1, &kpos));
        static const int64_t b111[4] = { -1, 1, 1, 1 };
        RLX_TRY(reshape(c, mask, b111, 4, -1, &len));
        RLX_TRY(op2(c, "Less", kpos, len, -1, &keep));
    } else if (mv->rank == 2 || mv->rank == 3) {
        int z;
        RLX_TRY(k_scalar(c, mv->dtype, 0, &z));
        RLX_TRY(op2(c, "Greater", mask, z, -1, &keep));
        RLX_TRY(unsqueeze(c, keep, 1, &keep));
        if (mv->rank == 2) RLX_TRY(unsqueeze(c, keep, 1, &keep));
    } else
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: %s of rank %d is not supported (rank 1: lengths, 2 or 3: raw "
                        "masks)", c->label, what, mv->rank);
    RLX_TRY(emit(c, 0, "Where", (int[]){ keep, zk, fk }, 3, NULL, 0, -1, &r));
    *out = r;
    return RLX_OK;
}

/* x with its dim `axis` held to ref's dim `raxis` (one_ok: or 1): refused
 * now where both are static, else a Reshape to x's own shape with that dim
 * replaced, which fails at run time unless they agree (the element counts
 * differ). The expansion's Adds and MatMuls would broadcast a 1 in either
 * of them, or a mask of another batch, into another output shape. */
static rlx_status pin_dim(cx *c, int x, int axis, int ref, int raxis, bool one_ok, const char *what, int *out) {
    *out = x;
    int64_t d = static_dim(c, x, axis), w = static_dim(c, ref, raxis);
    if (d >= 0 && (d == w || (one_ok && d == 1))) return RLX_OK;
    const rlx_value *xv = val(c, x), *rv = val(c, ref);
    int ax = axis < 0 ? axis + xv->rank : axis, rax = raxis < 0 ? raxis + rv->rank : raxis;
    if (d < 0 && w < 0 && ax >= 0 && ax < xv->rank && rax >= 0 && rax < rv->rank && xv->syms[ax] >= 0 &&
        xv->syms[ax] == rv->syms[rax])
        return RLX_OK; /* one symbol: equal, as the graph takes it */
    if (d >= 0 && w >= 0)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %s has %lld at axis %d, expected %lld%s", c->label, what,
                        (long long)d, axis, (long long)w, one_ok && w != 1 ? " or 1" : "");
    int r = val(c, x)->rank, sh, wd, parts[3], np = 0, tgt;
    RLX_TRY(op1(c, "Shape", x, -1, &sh));
    RLX_TRY(dim_of(c, ref, raxis, RLX_DTYPE_I64, &wd));
    if (one_ok) { /* x's dim where it is 1 */
        int dx, one, eq;
        RLX_TRY(dim_of(c, x, axis, RLX_DTYPE_I64, &dx));
        RLX_TRY(k_scalar(c, RLX_DTYPE_I64, 1, &one));
        RLX_TRY(op2(c, "Equal", dx, one, -1, &eq));
        RLX_TRY(emit(c, 0, "Where", (int[]){ eq, one, wd }, 3, NULL, 0, -1, &wd));
    }
    if (axis > 0) RLX_TRY(slice(c, sh, 0, 0, axis, 1, &parts[np++]));
    RLX_TRY(unsqueeze(c, wd, 0, &parts[np++]));
    if (axis < r - 1) RLX_TRY(slice(c, sh, 0, axis + 1, r, 1, &parts[np++]));
    RLX_TRY(concat(c, parts, np, 0, -1, &tgt));
    return op2(c, "Reshape", x, tgt, -1, out);
}

/* The unidirectional attribute of Attention, QAttention and
 * MultiHeadAttention: onnxruntime reads 1 as causal and any other value as
 * not, so values other than 0 and 1 are refused rather than guessed. */
static rlx_status unidirectional(const cx *c, bool *causal) {
    int64_t u = attr_i(c, "unidirectional");
    if (u != 0 && u != 1)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: unidirectional is %lld; it must be 0 or 1", c->label,
                        (long long)u);
    *causal = u == 1;
    return RLX_OK;
}

/* Where the inputs of Attention and QAttention are (-1: the op has none). */
typedef struct attn_io {
    int mask, past, attn_bias, past_len;
    bool quant; /* QAttention: input uint8, weight 8-bit, scales and zero points at 3, 4, 6, 7 */
} attn_io;

/* com.microsoft.Attention and QAttention without past: QKV = input x
 * weights + bias (QAttention: float(MatMulInteger) * (input_scale *
 * weight_scale) + bias, onnxruntime's arithmetic, as MatMulIntegerToFloat),
 * split by qkv_hidden_sizes (equal thirds by default), heads of hidden /
 * num_heads; softmax(Q K^T scale + mask + attention_bias) V. */
static rlx_status attention(cx *c, const attn_io *io) {
    int x, w;
    if (io->quant) {
        RLX_TRY(q8_input(c, 0, "input", &x));
        RLX_TRY(q8_input(c, 1, "weight", &w));
    } else {
        RLX_TRY(input(c, 0, &x));
        RLX_TRY(input(c, 1, &w));
        RLX_TRY(require_float(c, x, "input"));
    }
    rlx_dtype dt = io->quant ? RLX_DTYPE_F32 : val(c, x)->dtype;
    int64_t nh = attr_i(c, "num_heads");
    bool uni = false;
    RLX_TRY(unidirectional(c, &uni));
    if (in_id(c, io->past) >= 0 || out_id(c, 1) >= 0 || (io->past_len >= 0 && in_id(c, io->past_len) >= 0))
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: past / present state is not supported", c->label);
    if (attr_i(c, "do_rotary") || attr_i(c, "past_present_share_buffer"))
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: do_rotary and past_present_share_buffer are not supported", c->label);
    if (val(c, x)->rank != 3)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input must have rank 3 (batch, sequence, hidden)", c->label);
    int64_t sz[3];
    size_t n_sz = 0;
    const rlx_node_attr *qs = given(c, "qkv_hidden_sizes");
    if (qs) {
        if (qs->n != 3) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: qkv_hidden_sizes must have 3 values", c->label);
        for (int i = 0; i < 3; i++) sz[i] = qs->ints[i];
        n_sz = 3;
    } else {
        int64_t d = static_dim(c, w, 1);
        if (d > 0 && d % 3 == 0) sz[0] = sz[1] = sz[2] = d / 3, n_sz = 3;
    }
    if (!n_sz || nh <= 0 || sz[0] <= 0 || sz[2] <= 0 || sz[0] != sz[1] || sz[0] % nh || sz[2] % nh)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: Q, K and V hidden sizes (qkv_hidden_sizes, or weights' static "
                        "second dim / 3) must be multiples of num_heads, Q's equal to K's", c->label);
    int64_t hd = sz[0] / nh, hdv = sz[2] / nh;
    float scale = attr_f(c, "scale");
    if (scale == 0.0f) scale = (float)(1.0 / sqrt((double)hd));
    int qkv, outs[3];
    if (io->quant) {
        int64_t n3 = static_dim(c, w, 1);
        RLX_TRY(check_scale(c, 3, "input_scale", 0, SCALE_FLOAT));
        RLX_TRY(check_zp(c, 6, "input_zero_point", val(c, x)->dtype, 0));
        RLX_TRY(check_scale(c, 4, "weight_scale", n3, SCALE_FLOAT));
        RLX_TRY(check_zp(c, 7, "weight_zero_point", val(c, w)->dtype, n3));
        int acc, mult;
        RLX_TRY(mm_integer(c, x, w, in_id(c, 6), in_id(c, 7), &acc));
        RLX_TRY(gemm_multiplier(c, 1.0f, in_id(c, 3), in_id(c, 4), -1, &mult));
        RLX_TRY(scale_bias(c, acc, mult, in_id(c, 2), -1, &qkv));
    } else {
        RLX_TRY(op2(c, "MatMul", x, w, -1, &qkv));
        if (in_id(c, 2) >= 0) RLX_TRY(op2(c, "Add", qkv, in_id(c, 2), -1, &qkv));
    }
    RLX_TRY(split_qkv(c, qkv, sz, outs));
    const int64_t qh[4] = { 0, 0, nh, hd }, vh[4] = { 0, 0, nh, hdv };
    static const int64_t bnsh[4] = { 0, 2, 1, 3 }, bnhs[4] = { 0, 2, 3, 1 };
    int q, kT, v, sc, ks;
    RLX_TRY(reshape(c, outs[0], qh, 4, -1, &q));
    RLX_TRY(transpose(c, q, bnsh, 4, -1, &q));
    RLX_TRY(reshape(c, outs[1], qh, 4, -1, &kT));
    RLX_TRY(transpose(c, kT, bnhs, 4, -1, &kT));
    RLX_TRY(reshape(c, outs[2], vh, 4, -1, &v));
    RLX_TRY(transpose(c, v, bnsh, 4, -1, &v));
    RLX_TRY(op2(c, "MatMul", q, kT, -1, &sc));
    RLX_TRY(k_scalar(c, dt, scale, &ks));
    RLX_TRY(op2(c, "Mul", sc, ks, -1, &sc));
    int t = -1;
    if (in_id(c, io->mask) >= 0 || uni) RLX_TRY(dim_of(c, x, 1, RLX_DTYPE_I64, &t));
    if (in_id(c, io->mask) >= 0) {
        int m = -1, mi = in_id(c, io->mask), mr = val(c, mi)->rank;
        /* a mask of another batch broadcast into the scores' batch (1-D: the lengths form; other lengths
         * are refused where static) */
        if (mr >= 1 && mr <= 3) RLX_TRY(pin_dim(c, mi, 0, x, 0, false, "mask_index's batch", &mi));
        RLX_TRY(attn_mask(c, mi, "mask_index", t, dt, static_dim(c, x, 0), &m));
        RLX_TRY(op2(c, "Add", sc, m, -1, &sc));
    }
    if (uni) { /* key j > query i masked */
        int kpos, qpos, fut, fk, zk, m;
        RLX_TRY(arange(c, t, &kpos));
        RLX_TRY(unsqueeze(c, kpos, 1, &qpos));
        RLX_TRY(op2(c, "Greater", kpos, qpos, -1, &fut));
        RLX_TRY(k_scalar(c, dt, attr_f(c, "mask_filter_value"), &fk));
        RLX_TRY(k_scalar(c, dt, 0, &zk));
        RLX_TRY(emit(c, 0, "Where", (int[]){ fut, fk, zk }, 3, NULL, 0, -1, &m));
        RLX_TRY(op2(c, "Add", sc, m, -1, &sc));
    }
    int ab = io->attn_bias >= 0 ? in_id(c, io->attn_bias) : -1;
    if (ab >= 0 && val(c, ab)->rank == 4) RLX_TRY(pin_dim(c, ab, 0, x, 0, true, "attention_bias's batch", &ab));
    if (ab >= 0) RLX_TRY(op2(c, "Add", sc, ab, -1, &sc));
    int p;
    RLX_TRY(op_i(c, "Softmax", &sc, 1, "axis", -1, -1, &p));
    return attn_out(c, p, v);
}

static rlx_status x_attention(cx *c) {
    static const attn_io io = { 3, 4, 5, 6, false };
    return attention(c, &io);
}

static rlx_status x_qattention(cx *c) {
    static const attn_io io = { 5, 8, -1, -1, true };
    return attention(c, &io);
}

/* ------------------------------------------------------------ MultiHeadAttention */

/* x packed along axis 3, [B, S, N, n, H] (QKV: n = 3, KV: n = 2) -> outs[n],
 * each [B, S, N, H]. */
static rlx_status unpack_heads(cx *c, int x, int n, int64_t nh, int64_t hd, int *outs) {
    static const int64_t ones[3] = { 1, 1, 1 };
    int sz;
    RLX_TRY(k_i64(c, ones, (size_t)n, &sz));
    rlx_node_attr a;
    RLX_TRY(rlx_node_attr_set_int(&a, "axis", 3));
    for (int i = 0; i < n; i++) RLX_TRY(rlx_graph_add_value(c->g, NULL, &outs[i]));
    RLX_TRY(emit_to(c, 0, "Split", (int[]){ x, sz }, 2, &a, 1, outs, n));
    const int64_t bsnh[4] = { 0, 0, nh, hd };
    for (int i = 0; i < n; i++) RLX_TRY(reshape(c, outs[i], bsnh, 4, -1, &outs[i]));
    return RLX_OK;
}

/* Static dim `axis` of value id is `want` when both are known. */
static bool dim_is(const cx *c, int id, int axis, int64_t want) {
    int64_t d = static_dim(c, id, axis);
    return d < 0 || want < 0 || d == want;
}

/* MultiHeadAttention: see the row's text. Inputs: query, key, value, bias,
 * key_padding_mask, attention_bias, past_key, past_value,
 * past_sequence_length, cache_indirection; outputs: output, present_key,
 * present_value, qk. */
static rlx_status x_mha(cx *c) {
    int64_t nh = attr_i(c, "num_heads");
    if (nh <= 0 || nh > INT32_MAX)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: num_heads (%lld) must be positive, at most 2^31 - 1", c->label,
                        (long long)nh);
    bool uni = false;
    RLX_TRY(unidirectional(c, &uni));
    if (in_id(c, 8) >= 0)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: input past_sequence_length (a past / present buffer shared at "
                        "max_sequence_length) is not supported", c->label);
    if (in_id(c, 9) >= 0)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: input cache_indirection (beam search) is not supported", c->label);
    if (out_id(c, 3) >= 0) return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: output qk is not supported", c->label);
    int q, k, v, bias, kpm, ab, pk, pv;
    RLX_TRY(input(c, 0, &q));
    RLX_TRY(input(c, 1, &k));
    RLX_TRY(input(c, 2, &v));
    RLX_TRY(input(c, 3, &bias));
    RLX_TRY(input(c, 4, &kpm));
    RLX_TRY(input(c, 5, &ab));
    RLX_TRY(input(c, 6, &pk));
    RLX_TRY(input(c, 7, &pv));
    RLX_TRY(require_float(c, q, "query"));
    rlx_dtype dt = val(c, q)->dtype;
    static const char *const names[8] = { "query", "key", "value", "bias", "", "attention_bias", "past_key",
                                          "past_value" };
    const int ids[8] = { q, k, v, bias, -1, ab, pk, pv };
    for (int i = 1; i < 8; i++)
        if (ids[i] >= 0 && val(c, ids[i])->dtype != dt)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: %s has dtype %s, expected %s (query's)", c->label, names[i],
                            rlx_dtype_name(val(c, ids[i])->dtype), rlx_dtype_name(dt));
    if ((pk < 0) != (pv < 0))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: past_key and past_value come together", c->label);
    if (pk >= 0 && (val(c, pk)->rank != 4 || val(c, pv)->rank != 4))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: past_key and past_value must have rank 4 (batch, num_heads, "
                        "past_sequence, head_size)", c->label);
    int qr = val(c, q)->rank, kr = k >= 0 ? val(c, k)->rank : -1, vr = v >= 0 ? val(c, v)->rank : -1;
    bool kv_bnsh = false;
    int64_t hd;
    if (qr == 5) { /* packed QKV [B, S, N, 3, H] */
        hd = static_dim(c, q, 4);
        if (k >= 0 || v >= 0)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: a packed QKV query (rank 5) comes without key and value",
                            c->label);
        if (static_dim(c, q, 2) != nh || static_dim(c, q, 3) != 3 || hd <= 0)
            return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: packed QKV must have the static shape (batch, sequence, "
                            "num_heads = %lld, 3, head_size)", c->label, (long long)nh);
        if (bias >= 0)
            return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: bias with packed QKV is not supported", c->label);
        int outs[3];
        RLX_TRY(unpack_heads(c, q, 3, nh, hd, outs));
        q = outs[0], k = outs[1], v = outs[2];
    } else if (qr == 3) {
        int64_t d = static_dim(c, q, 2);
        if (d <= 0 || d % nh)
            return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: query's hidden size must be static and a multiple of num_heads "
                            "(%lld)", c->label, (long long)nh);
        hd = d / nh;
        if (k < 0)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: key is required unless query is packed QKV (batch, sequence, "
                            "num_heads, 3, head_size)", c->label);
        if (kr == 5) { /* packed KV [B, L, N, 2, H] */
            if (v >= 0)
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: a packed KV key (rank 5) comes without value", c->label);
            if (static_dim(c, k, 2) != nh || static_dim(c, k, 3) != 2 || static_dim(c, k, 4) != hd)
                return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: packed KV must have the static shape (batch, kv_sequence, "
                                "num_heads = %lld, 2, head_size = %lld)", c->label, (long long)nh, (long long)hd);
            if (bias >= 0)
                return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: bias with packed KV is not supported", c->label);
            int outs[2];
            RLX_TRY(unpack_heads(c, k, 2, nh, hd, outs));
            k = outs[0], v = outs[1];
        } else if (kr == 3) { /* [B, L, D], [B, L, D_v] */
            if (v < 0 || vr != 3)
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: a 3-D key needs a 3-D value", c->label);
            int64_t dv = static_dim(c, v, 2);
            if (dv <= 0 || dv % nh || !dim_is(c, k, 2, d))
                return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: key's hidden size must be query's (%lld), value's static and "
                                "a multiple of num_heads (%lld)", c->label, (long long)d, (long long)nh);
            if (bias >= 0) { /* [D + D + D_v] */
                if (val(c, bias)->rank != 1 || static_dim(c, bias, 0) != 2 * d + dv)
                    return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: bias must have the static shape (%lld) (query's, "
                                    "key's and value's hidden sizes)", c->label, (long long)(2 * d + dv));
                const int64_t sz[3] = { d, d, dv };
                int b3[3];
                RLX_TRY(split_qkv(c, bias, sz, b3));
                RLX_TRY(op2(c, "Add", q, b3[0], -1, &q));
                RLX_TRY(op2(c, "Add", k, b3[1], -1, &k));
                RLX_TRY(op2(c, "Add", v, b3[2], -1, &v));
            }
            const int64_t kh[4] = { 0, 0, nh, hd }, vh[4] = { 0, 0, nh, dv / nh };
            RLX_TRY(reshape(c, k, kh, 4, -1, &k));
            RLX_TRY(reshape(c, v, vh, 4, -1, &v));
        } else if (kr == 4) { /* [B, N, L, H]: cross attention with the k/v cached */
            if (v < 0 || vr != 4 || !dim_is(c, k, 1, nh) || !dim_is(c, v, 1, nh) || !dim_is(c, k, 3, hd))
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: a 4-D key (batch, num_heads, kv_sequence, head_size) "
                                "needs a 4-D value, both of num_heads = %lld heads, key's of head size %lld",
                                c->label, (long long)nh, (long long)hd);
            if (pk >= 0)
                return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: past_key / past_value with a 4-D (batch, num_heads, "
                                "kv_sequence, head_size) key are not supported", c->label);
            if (bias >= 0) { /* onnxruntime adds the query's part only: K and V are projected already */
                if (val(c, bias)->rank != 1 || static_dim(c, bias, 0) < d)
                    return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: bias must be 1-D, of a static length of at least "
                                    "%lld (query's hidden size)", c->label, (long long)d);
                int bq;
                RLX_TRY(slice(c, bias, 0, 0, d, 1, &bq));
                RLX_TRY(op2(c, "Add", q, bq, -1, &q));
            }
            kv_bnsh = true;
        } else
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: key must have rank 3 (batch, kv_sequence, hidden), 4 (batch, "
                            "num_heads, kv_sequence, head_size) or 5 (packed KV)", c->label);
        const int64_t qh[4] = { 0, 0, nh, hd };
        RLX_TRY(reshape(c, q, qh, 4, -1, &q));
    } else
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: query must have rank 3 (batch, sequence, hidden) or 5 (packed "
                        "QKV), has rank %d", c->label, qr);
    static const int64_t bnsh[4] = { 0, 2, 1, 3 };
    RLX_TRY(transpose(c, q, bnsh, 4, -1, &q)); /* [B, N, S, H] */
    if (!kv_bnsh) {
        RLX_TRY(transpose(c, k, bnsh, 4, -1, &k));
        RLX_TRY(transpose(c, v, bnsh, 4, -1, &v));
    }
    /* [B, N, S or L, H] now; after the checks of their static dims above */
    RLX_TRY(pin_dim(c, k, 0, q, 0, false, "key's batch", &k));
    RLX_TRY(pin_dim(c, v, 0, q, 0, false, "value's batch", &v));
    int r;
    if (pk >= 0) {
        RLX_TRY(concat(c, (int[]){ pk, k }, 2, 2, out_id(c, 1), &k));
        RLX_TRY(concat(c, (int[]){ pv, v }, 2, 2, out_id(c, 2), &v));
    } else {
        if (out_id(c, 1) >= 0) RLX_TRY(op1(c, "Identity", k, out_id(c, 1), &r));
        if (out_id(c, 2) >= 0) RLX_TRY(op1(c, "Identity", v, out_id(c, 2), &r));
    }
    float scale = attr_f(c, "scale");
    if (scale == 0.0f) scale = (float)(1.0 / sqrt((double)hd));
    int sc, t;
    RLX_TRY(scaled_scores(c, q, k, dt, scale, 0.0f, &sc));
    RLX_TRY(dim_of(c, k, 2, RLX_DTYPE_I64, &t)); /* the total length P + L */
    if (kpm >= 0) {
        int mr = val(c, kpm)->rank;
        int64_t tl = static_dim(c, k, 2), ml = static_dim(c, kpm, -1);
        if (mr == 1 ? !dim_is(c, kpm, 0, static_dim(c, q, 0)) : mr != 2 && mr != 3)
            return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: key_padding_mask of rank %d%s is not supported (only (batch) "
                            "key lengths, (batch, total_sequence) and (batch, sequence, total_sequence) 1-keep "
                            "0-mask forms)", c->label, mr, mr == 1 ? " and another length than the batch" : "");
        if (mr > 1 && ml >= 0 && tl >= 0 && ml != tl)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: key_padding_mask's last dim (%lld) is not the total "
                            "sequence length (%lld: past + kv_sequence)", c->label, (long long)ml, (long long)tl);
        /* q [B, N, S, H], k [B, N, T, H] here */
        RLX_TRY(pin_dim(c, kpm, 0, q, 0, false, "key_padding_mask's batch", &kpm));
        if (mr == 3) RLX_TRY(pin_dim(c, kpm, 1, q, 2, false, "key_padding_mask's sequence", &kpm));
        if (mr > 1) RLX_TRY(pin_dim(c, kpm, mr - 1, k, 2, false, "key_padding_mask's total sequence", &kpm));
        int m;
        RLX_TRY(attn_mask(c, kpm, "key_padding_mask", t, dt, static_dim(c, q, 0), &m));
        RLX_TRY(op2(c, "Add", sc, m, -1, &sc));
    }
    if (uni) { /* key j > query s + past masked */
        int s, qpos, kpos, past, fut, fk, zk, m;
        RLX_TRY(dim_of(c, q, 2, RLX_DTYPE_I64, &s));
        RLX_TRY(arange(c, s, &qpos));
        if (pk >= 0) RLX_TRY(dim_of(c, pk, 2, RLX_DTYPE_I64, &past));
        else RLX_TRY(k_scalar(c, RLX_DTYPE_I64, 0, &past));
        RLX_TRY(op2(c, "Add", qpos, past, -1, &qpos));
        RLX_TRY(unsqueeze(c, qpos, 1, &qpos)); /* [S, 1] */
        RLX_TRY(arange(c, t, &kpos));
        RLX_TRY(op2(c, "Greater", kpos, qpos, -1, &fut));
        RLX_TRY(k_scalar(c, dt, attr_f(c, "mask_filter_value"), &fk));
        RLX_TRY(k_scalar(c, dt, 0, &zk));
        RLX_TRY(emit(c, 0, "Where", (int[]){ fut, fk, zk }, 3, NULL, 0, -1, &m));
        RLX_TRY(op2(c, "Add", sc, m, -1, &sc));
    }
    if (ab >= 0) {
        if (val(c, ab)->rank != 4)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attention_bias must have rank 4 (batch or 1, num_heads or 1, "
                            "sequence, total_sequence)", c->label);
        RLX_TRY(pin_dim(c, ab, 0, q, 0, true, "attention_bias's batch", &ab));
        RLX_TRY(pin_dim(c, ab, 1, q, 1, true, "attention_bias's heads", &ab));
        RLX_TRY(pin_dim(c, ab, 2, q, 2, false, "attention_bias's sequence", &ab));
        RLX_TRY(pin_dim(c, ab, 3, k, 2, false, "attention_bias's total sequence", &ab));
        RLX_TRY(op2(c, "Add", sc, ab, -1, &sc));
    }
    int p;
    RLX_TRY(op_i(c, "Softmax", &sc, 1, "axis", -1, -1, &p));
    return attn_out(c, p, v);
}

/* EmbedLayerNormalization: LayerNormalization(word_embedding[input_ids] +
 * position_embedding[position_ids or 0..S-1] + segment_embedding[segment_
 * ids]); mask_index = the number of non-zero mask values per row (the
 * length of a right-padded mask, as int32); embedding_sum the sum. */
static rlx_status x_embed_ln(cx *c) {
    int ids, e, p, pos;
    RLX_TRY(input(c, 0, &ids));
    if (val(c, ids)->rank != 2)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input_ids must have rank 2 (batch, sequence)", c->label);
    if ((in_id(c, 1) < 0) != (in_id(c, 4) < 0))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: segment_ids and segment_embedding come together", c->label);
    RLX_TRY(op_i(c, "Gather", (int[]){ in_id(c, 2), ids }, 2, "axis", 0, -1, &e));
    if (in_id(c, 8) >= 0) pos = in_id(c, 8);
    else {
        int s;
        RLX_TRY(dim_of(c, ids, 1, RLX_DTYPE_I64, &s));
        RLX_TRY(arange(c, s, &pos));
    }
    RLX_TRY(op_i(c, "Gather", (int[]){ in_id(c, 3), pos }, 2, "axis", 0, -1, &p));
    bool seg = in_id(c, 1) >= 0;
    RLX_TRY(op2(c, "Add", e, p, seg ? -1 : out_id(c, 2), &e));
    if (seg) {
        int sg;
        RLX_TRY(op_i(c, "Gather", (int[]){ in_id(c, 4), in_id(c, 1) }, 2, "axis", 0, -1, &sg));
        RLX_TRY(op2(c, "Add", e, sg, out_id(c, 2), &e));
    }
    rlx_node_attr a[2];
    RLX_TRY(norm_attrs(c, -1, a));
    int y;
    RLX_TRY(emit(c, 0, "LayerNormalization", (int[]){ e, in_id(c, 5), in_id(c, 6) }, 3, a, 2, out_id(c, 0), &y));
    if (out_id(c, 1) >= 0) {
        if (in_id(c, 7) < 0)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: output mask_index needs input mask", c->label);
        int z, nz, n, ax;
        RLX_TRY(need(c, in_id(c, 7)));
        RLX_TRY(k_scalar(c, val(c, in_id(c, 7))->dtype, 0, &z));
        RLX_TRY(op2(c, "Equal", in_id(c, 7), z, -1, &nz));
        RLX_TRY(op1(c, "Not", nz, -1, &nz));
        RLX_TRY(op_i(c, "Cast", &nz, 1, "to", RLX_DTYPE_I32, -1, &n));
        RLX_TRY(k_i64(c, (int64_t[]){ 1 }, 1, &ax));
        rlx_node_attr k;
        RLX_TRY(rlx_node_attr_set_int(&k, "keepdims", 0));
        RLX_TRY(emit(c, 0, "ReduceSum", (int[]){ n, ax }, 2, &k, 1, out_id(c, 1), &y));
    }
    return RLX_OK;
}

/* ------------------------------------------------------------ GatherBlockQuantized */

/* GatherBlockQuantized with uint8 data (two 4-bit values a byte, the low
 * nibble first; onnxruntime 1.22 gives it zero point 8 and no zero_points
 * input, gather_axis 0 and blocks along the last axis): the import unpacks
 * the constant data to int8 q - 8 (one byte a value, where the file has
 * half); then Gather of those rows and of the scales' rows and
 * DequantizeLinear-21 blocked along the last axis (output of the scales'
 * type). */
static rlx_status x_gather_bq(cx *c) {
    rlx_status st = RLX_OK;
    const rlx_tensor *D = konst_input(c, 0, "data", &st);
    if (!D) return st;
    int idx, s;
    RLX_TRY(input(c, 1, &idx));
    RLX_TRY(input(c, 2, &s));
    if (D->dtype != RLX_DTYPE_U8)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: data of dtype %s is not supported (uint8: 4-bit values packed "
                        "two a byte)", c->label, rlx_dtype_name(D->dtype));
    if (in_id(c, 3) >= 0)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: zero_points are not supported for uint8 data (its zero point is "
                        "8)", c->label);
    rlx_dtype it = val(c, idx)->dtype, sdt = val(c, s)->dtype;
    if (it != RLX_DTYPE_I32 && it != RLX_DTYPE_I64)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: indices have dtype %s, expected int32 or int64", c->label,
                        rlx_dtype_name(it));
    if (sdt != RLX_DTYPE_F32 && sdt != RLX_DTYPE_F16)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: scales of dtype %s are not supported (f32, f16)", c->label,
                        rlx_dtype_name(sdt));
    int r = D->rank;
    int64_t ga = attr_i(c, "gather_axis"), qa = attr_i(c, "quantize_axis"), bs = attr_i(c, "block_size");
    if (ga < 0) ga += r;
    if (qa < 0) qa += r;
    if (r < 2 || ga != 0 || qa != r - 1)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: uint8 data must have rank >= 2, gather_axis 0 and quantize_axis "
                        "the last (has rank %d, gather_axis %lld, quantize_axis %lld)", c->label, r,
                        (long long)attr_i(c, "gather_axis"), (long long)attr_i(c, "quantize_axis"));
    if (bs < 16 || bs > (1 << 30) || (bs & (bs - 1)))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: block_size (%lld) must be a power of 2 from 16 to 2^30", c->label,
                        (long long)bs);
    int64_t dims[RLX_MAX_RANK];
    for (int i = 0; i < r; i++) dims[i] = D->dims[i];
    int64_t hp = dims[r - 1];
    if (hp > INT64_MAX / 2)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: data's last dim is too large", c->label);
    dims[r - 1] = 2 * hp;
    int64_t nb = (dims[r - 1] + bs - 1) / bs;
    const rlx_value *sv = val(c, s);
    bool s_ok = sv->rank == r;
    for (int i = 0; s_ok && i < r; i++) s_ok = sv->dims[i] == (i == r - 1 ? nb : dims[i]);
    if (!s_ok)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: scales must have data's (unpacked) shape with its last dim in "
                        "blocks of %lld (ceil(%lld / %lld) = %lld)", c->label, (long long)bs,
                        (long long)dims[r - 1], (long long)bs, (long long)nb);
    if (c->cfg) {
        char what[400];
        snprintf(what, sizeof what, "%s: data unpacked to one int8 a value", c->label);
        RLX_TRY(rlx_limit_check(c->cfg, "limits.max_tensor_bytes", (uint64_t)rlx_tensor_numel(D) * 2, what));
    }
    rlx_tensor *Q;
    RLX_TRY(rlx_tensor_create(RLX_DTYPE_I8, dims, r, &Q));
    const uint8_t *src = D->data;
    int8_t *dst = Q->data;
    for (size_t i = 0, n = rlx_tensor_numel(D); i < n; i++) {
        dst[2 * i] = (int8_t)((src[i] & 0xf) - 8);
        dst[2 * i + 1] = (int8_t)((src[i] >> 4) - 8);
    }
    int q, x, y;
    RLX_TRY(rlx_graph_add_konst(c->g, NULL, Q, &q));
    RLX_TRY(op_i(c, "Gather", (int[]){ q, idx }, 2, "axis", 0, -1, &x));
    RLX_TRY(op_i(c, "Gather", (int[]){ s, idx }, 2, "axis", 0, -1, &s));
    rlx_node_attr a[2];
    RLX_TRY(rlx_node_attr_set_int(&a[0], "axis", -1));
    st = rlx_node_attr_set_int(&a[1], "block_size", bs);
    if (st) {
        rlx_node_attr_free(&a[0]);
        return st;
    }
    return emit(c, 0, "DequantizeLinear", (int[]){ x, s }, 2, a, 2, out_id(c, 0), &y);
}

/* ------------------------------------------------------------ the table */

#define A_INT(nm, v) { nm, RLX_ATTR_INT, false, true, (v), NULL }
#define A_FLOAT(nm, v) { nm, RLX_ATTR_FLOAT, false, true, (v), NULL }
#define A_REQ(nm) { nm, RLX_ATTR_INT, true, false, 0, NULL }
#define A_OPT(nm, t) { nm, t, false, false, 0, NULL }
#define A_REQ_INTS(nm) { nm, RLX_ATTR_INTS, true, false, 0, NULL }

static const rlx_contrib_def k_contrib[] = {
    { MS, "Attention", 1, 2, 7, 1, 2, x_attention,
      "MatMul by the merged QKV weights (+ bias), Split (qkv_hidden_sizes), MatMul, Softmax, MatMul per head "
      "(fuse_attention may take them), with mask_index as raw masks (batch, total) or (batch, S, total) or "
      "right-padding lengths (batch), masked keys at mask_filter_value; unidirectional; attention_bias. Past / "
      "present state, do_rotary and the other mask_index forms are not supported.",
      { A_INT("do_rotary", 0), A_FLOAT("mask_filter_value", -10000.0), A_REQ("num_heads"),
        A_INT("past_present_share_buffer", 0), A_OPT("qkv_hidden_sizes", RLX_ATTR_INTS), A_INT("rotary_embedding_dim", 0),
        A_FLOAT("scale", 0), A_INT("unidirectional", 0) } },
    { MS, "BiasAdd", 1, 3, 3, 1, 1, x_bias_add, "(X + bias) + skip: two Adds.", { { 0 } } },
    { MS, "BiasGelu", 1, 2, 2, 1, 1, x_bias_gelu, "Gelu-20 (erf) of A + B.", { { 0 } } },
    { MS, "DequantizeLinear", 1, 2, 3, 1, 1, x_dequantize, "DequantizeLinear-21 (axis passed on when given).",
      { A_OPT("axis", RLX_ATTR_INT) } },
    { MS, "DynamicQuantizeLSTM", 1, 12, 12, 0, 3, x_dq_lstm,
      "LSTM-14 on W and R dequantized ((w - zp) * scale, per tensor or per column, transposed to [D, 4H, .]; "
      "folded when constant). Computed in f32: onnxruntime quantizes X and h to 8 bits for its GEMMs, so "
      "results differ by that quantization error.",
      { A_OPT("activation_alpha", RLX_ATTR_FLOATS), A_OPT("activation_beta", RLX_ATTR_FLOATS),
        A_OPT("activations", RLX_ATTR_STRINGS), A_OPT("clip", RLX_ATTR_FLOAT),
        { "direction", RLX_ATTR_STRING, false, true, 0, "forward" }, A_OPT("hidden_size", RLX_ATTR_INT),
        A_INT("input_forget", 0) } },
    { MS, "DynamicQuantizeMatMul", 1, 3, 5, 1, 1, x_dq_matmul,
      "DynamicQuantizeLinear-11 of A (uint8), MatMulInteger, Cast, Mul by a_scale * b_scale (per tensor or per column "
      "of B), Add bias: onnxruntime's arithmetic (f32 product of the int32 sums, then the bias), bit-exact while the "
      "sums stay below 2^24; any scale, 0, inf and NaN too (IEEE products, as onnxruntime).",
      { { 0 } } },
    { MS, "EmbedLayerNormalization", 1, 7, 9, 1, 3, x_embed_ln,
      "Gathers of the word, position (position_ids, or 0..S-1) and segment embeddings, Adds, LayerNormalization-17; "
      "mask_index = the count of non-zero mask values per row (ReduceSum), the length of a right-padded mask.",
      { A_FLOAT("epsilon", 1e-12f), A_OPT("mask_index_type", RLX_ATTR_INT) } },
    { MS, "FastGelu", 1, 1, 2, 1, 1, x_fast_gelu, "Gelu-20 approximate=tanh of X (+ bias).", { { 0 } } },
    { MS, "Gelu", 1, 1, 1, 1, 1, x_gelu, "Gelu-20 (erf).", { { 0 } } },
    { MS, "GatherBlockQuantized", 1, 3, 4, 1, 1, x_gather_bq,
      "uint8 data (4-bit values two a byte, zero point 8, gather_axis 0, blocks along the last axis; a constant): "
      "unpacked at load to int8 q - 8 (one byte a value, twice the file's), then Gather of its rows and of the "
      "scales' and DequantizeLinear-21 blocked (f32 or f16 scales; runs on the CPU). int4 and uint4 data are not "
      "supported (the load reads 4-bit constants only as DequantizeLinear's x and x_zero_point).",
      { A_INT("block_size", 128), A_INT("gather_axis", 0), A_INT("quantize_axis", 1) } },
    { MS, "GridSample", 1, 2, 2, 1, 1, x_grid_sample,
      "GridSample-16 (the same attributes and mode names: bilinear, nearest, bicubic).",
      { A_INT("align_corners", 0), { "mode", RLX_ATTR_STRING, false, true, 0, "bilinear" },
        { "padding_mode", RLX_ATTR_STRING, false, true, 0, "zeros" } } },
    { MS, "GroupQueryAttention", 1, 7, 11, 3, 3, x_gqa,
      "MatMul, Softmax, MatMul per head with kv heads repeated (num_heads a multiple of kv_num_heads; Expand "
      "materializes the repeated K and V: num_heads / kv_num_heads times their memory), a causal "
      "mask from seqlens_k (query s of batch b at position seqlens_k[b] + 1 - S + s sees keys j <= it; "
      "local_window_size: also j >= it - local_window_size), optional rotary embedding (do_rotary, rotary_interleaved), softcap, smooth_softmax, "
      "attention_bias, packed QKV; present = Concat(past, new) along the sequence, which is onnxruntime's result "
      "when every batch's total length is past + S (no shared max-length buffer, no right padding); "
      "position_ids not supported.",
      { A_INT("do_rotary", 0), A_REQ("kv_num_heads"), A_INT("local_window_size", -1), A_REQ("num_heads"),
        A_INT("rotary_interleaved", 0), A_FLOAT("scale", 0), A_INT("smooth_softmax", -1), A_FLOAT("softcap", 0) } },
    { MS, "MatMulIntegerToFloat", 1, 4, 7, 1, 1, x_mm_int_to_float,
      "MatMulInteger, Cast, Mul by a_scale * b_scale (a_scale per tensor; b_scale per tensor or per column), Add "
      "bias: onnxruntime's arithmetic, bit-exact while the int32 sums stay below 2^24; any scale, 0, inf and NaN too "
      "(IEEE products, as onnxruntime).",
      { { 0 } } },
    { MS, "MatMulNBits", 1, 3, 6, 1, 1, x_matmul_nbits,
      "bits 4 with uint8 or no zero points: rlx.MatMulNBits on the packed blocks as they are (CPU: GEMV "
      "kernels for up to 8 rows, dequantized tiles into the GEMM beyond; WebGPU: a GEMV kernel unpacking 32 "
      "weights per 16-byte load for up to a few rows, the weights dequantized (f32) into the tiled GEMM from 32 rows "
      "of A), + bias; bits 8 or float zero points: MatMul by the constant K x N matrix that the import "
      "dequantizes (4 K N bytes in f32); accuracy_level ignored (f32 arithmetic); g_idx not supported.",
      { A_REQ("K"), A_REQ("N"), A_INT("accuracy_level", 0), A_REQ("bits"), A_REQ("block_size") } },
    { MS, "MultiHeadAttention", 1, 1, 10, 1, 4, x_mha,
      "Reshapes and Transposes to heads, MatMul, Mul (scale, default 1/sqrt(head_size)), Adds, Softmax, MatMul "
      "(fuse_attention may take them): query, key and value 3-D (+ bias, split three ways), key and value 4-D "
      "(batch, num_heads, kv_sequence, head_size) (cross attention on cached K and V; the query's part of bias "
      "only, as onnxruntime), packed KV (batch, kv_sequence, num_heads, 2, head_size) and packed QKV (batch, "
      "sequence, num_heads, 3, head_size) without bias (Split); past_key / past_value concatenated in front along "
      "the sequence (present_key / present_value); key_padding_mask (int32) as key lengths (batch) or 1-keep "
      "0-mask (batch, total_sequence) or (batch, sequence, total_sequence), masked keys at mask_filter_value; "
      "unidirectional: mask_filter_value on keys j > s + past_sequence for query s (onnxruntime 1.22's CPU kernel "
      "differs when the query is not as long as the total: it leaves its last query row unmasked and, with a past, "
      "masks the past keys); attention_bias. past_sequence_length (shared buffers), cache_indirection, the qk "
      "output and the (3 batch + 2) mask are not supported.",
      { A_FLOAT("mask_filter_value", -10000.0), A_REQ("num_heads"), A_FLOAT("scale", 0), A_INT("unidirectional", 0) } },
    { MS, "QAttention", 1, 5, 9, 1, 2, x_qattention,
      "Attention's expansion with QKV = float(MatMulInteger(input, weight, input_zero_point, weight_zero_point)) * "
      "(input_scale * weight_scale, per tensor or per column) + bias (onnxruntime's arithmetic, as "
      "MatMulIntegerToFloat, any scale), mask_index as Attention's, unidirectional; past / present state and "
      "do_rotary not supported.",
      { A_INT("do_rotary", 0), A_FLOAT("mask_filter_value", -10000.0), A_REQ("num_heads"),
        A_INT("past_present_share_buffer", 0), A_FLOAT("scale", 0), A_INT("unidirectional", 0) } },
    { MS, "QGemm", 1, 6, 9, 1, 1, x_qgemm,
      "Transposes (transA, transB), MatMulInteger (+ the int32 C, which alpha then scales too, as in onnxruntime's "
      "kernel), Cast, Mul by alpha * a_scale * b_scale / y_scale "
      "(b per tensor or per column), then QuantizeLinear(., 1, y_zero_point) (round half to even, saturate); "
      "without y_zero_point the float product (divided by y_scale when given): onnxruntime's arithmetic, bit-exact "
      "while the int32 sums stay below 2^24. Constant scales: the float output takes any (IEEE, as onnxruntime); "
      "with y_zero_point a_scale and b_scale must be finite (0 gives y_zero_point, as onnxruntime) and y_scale "
      "finite and nonzero (0 or NaN has no integer result: onnxruntime returns arbitrary levels).",
      { A_FLOAT("alpha", 1.0), A_INT("transA", 0), A_INT("transB", 0) } },
    { MS, "QLinearAdd", 1, 7, 8, 1, 1, x_qlinear_add,
      "QuantizeLinear(DequantizeLinear(A) + DequantizeLinear(B)): one rounding after the f32 sum.", { { 0 } } },
    { MS, "QLinearAveragePool", 1, 4, 5, 1, 1, x_qlinear_avgpool,
      "AveragePool-19 of DequantizeLinear(X), then Div by y_scale, Add y_zero_point, QuantizeLinear(., 1) "
      "(onnxruntime adds the zero point before rounding); channels_last through Transposes. A kernel covering the "
      "static image without padding: onnxruntime's integer mean instead (ReduceSum of x - x_zero_point, Mul by "
      "x_scale / (y_scale * n)). Count_include_pad with ceil_mode: Pad with zeros so that every window is whole, then "
      "AveragePool (onnxruntime divides by the kernel size also where a window reaches past the end padding). "
      "Constant scales: x_scale finite (0 gives y_zero_point), y_scale finite and nonzero.",
      { { "auto_pad", RLX_ATTR_STRING, false, true, 0, "NOTSET" }, A_INT("ceil_mode", 0), A_INT("channels_last", 0),
        A_INT("count_include_pad", 0), A_REQ_INTS("kernel_shape"), A_OPT("pads", RLX_ATTR_INTS),
        A_OPT("strides", RLX_ATTR_INTS) } },
    { MS, "QLinearConcat", 1, 5, -1, 1, 1, x_qlinear_concat,
      "QuantizeLinear(Concat(DequantizeLinear(X_i)...)).", { A_REQ("axis") } },
    { MS, "QLinearGlobalAveragePool", 1, 5, 5, 1, 1, x_qlinear_gap,
      "onnxruntime's integer mean: ReduceSum over the spatial axes of X - x_zero_point (DequantizeLinear with scale "
      "1), Mul by x_scale / (y_scale * n), QuantizeLinear(., 1, y_zero_point): its bits while n * 255 < 2^24; "
      "spatial sizes unknown at load: QuantizeLinear(GlobalAveragePool(DequantizeLinear(X))). Constant scales "
      "finite and nonzero (onnxruntime refuses a zero one too).",
      { A_INT("channels_last", 0) } },
    { MS, "QLinearLeakyRelu", 1, 4, 5, 1, 1, x_qlinear_leaky_relu,
      "QuantizeLinear(LeakyRelu(DequantizeLinear(X))).", { A_FLOAT("alpha", 0.01f) } },
    { MS, "QLinearMul", 1, 7, 8, 1, 1, x_qlinear_mul,
      "QuantizeLinear(DequantizeLinear(A) * DequantizeLinear(B)).", { { 0 } } },
    { MS, "QLinearReduceMean", 1, 4, 5, 1, 1, x_qlinear_reduce_mean,
      "QuantizeLinear(ReduceMean-18(DequantizeLinear(data), axes, keepdims)). Constant scales: data_scale finite "
      "(0 gives reduced_zero_point), reduced_scale finite and nonzero.",
      { A_REQ_INTS("axes"), A_REQ("keepdims") } },
    { MS, "QLinearSigmoid", 1, 4, 5, 1, 1, x_qlinear_sigmoid,
      "QuantizeLinear(Sigmoid(DequantizeLinear(X))).", { { 0 } } },
    { MS, "QLinearSoftmax", 1, 4, 5, 1, 1, x_qlinear_softmax,
      "Softmax of DequantizeLinear(X) (opset < 13: over the dims from axis on, through Flatten and Reshape), Mul by "
      "floor(1 / y_scale) as onnxruntime does, QuantizeLinear(., 1, y_zero_point); onnxruntime sums a table of "
      "exponentials instead, so a level can differ by 1. Constant scales finite and nonzero (a zero X_scale makes "
      "onnxruntime's table NaN: arbitrary levels), X_scale positive (onnxruntime's table overflows for a negative "
      "one: zeros or wrong levels; a run-time negative X_scale gives the true softmax).",
      { A_OPT("axis", RLX_ATTR_INT), A_REQ("opset") } },
    { MS, "QLinearWhere", 1, 9, 9, 1, 1, x_qlinear_where,
      "QuantizeLinear(Where(condition, DequantizeLinear(X), DequantizeLinear(Y)), z_scale, z_zp): onnxruntime's "
      "bits (Q is elementwise), the Where in f32. Constant scales: x_scale and y_scale finite (0 gives z_zero_point), "
      "z_scale finite and nonzero.", { { 0 } } },
    { MS, "QuantizeLinear", 1, 2, 3, 1, 1, x_quantize, "QuantizeLinear-21 (axis passed on when given).",
      { A_OPT("axis", RLX_ATTR_INT) } },
    { MS, "QuickGelu", 1, 1, 1, 1, 1, x_quick_gelu, "X * Sigmoid(alpha X).", { A_FLOAT("alpha", 1.702f) } },
    { MS, "RotaryEmbedding", 1, 4, 4, 1, 1, x_rotary,
      "Slices, Mul, Sub/Add and Concat over cos/sin rows Gathered at position_ids ([B, S], or [1]: a start "
      "offset); interleaved or halves, rotary_embedding_dim < head size; scale ignored; is_packed_batching not "
      "supported.",
      { A_INT("interleaved", 0), A_INT("is_packed_batching", 0), A_INT("num_heads", 0),
        A_INT("rotary_embedding_dim", 0), A_FLOAT("scale", 1.0) } },
    { MS, "SkipLayerNormalization", 1, 3, 5, 1, 4, x_skip_ln,
      "LayerNormalization-17 over the last axis of input + skip (+ bias); fuse_add_layernorm takes the Add.",
      { A_FLOAT("epsilon", 1e-12f) } },
    { MS, "SkipSimplifiedLayerNormalization", 1, 3, 4, 1, 4, x_skip_sln,
      "RMSNormalization-23 over the last axis of input + skip (+ bias) (mean, inv_std_var outputs not supported).",
      { A_FLOAT("epsilon", 1e-12f) } },
    /* ONNX's own Attention (a function op): expanded like the contrib ones */
    { "", "Attention", 23, 3, 7, 1, 4, x_onnx_attention,
      "Attention-23/24 as MatMul, Mul (scale), softcap, Add (attn_mask, is_causal, nonpad_kv_seqlen as -inf "
      "biases), Softmax, MatMul (fuse_attention takes them): 3-D or 4-D Q/K/V, past and present key/value, grouped "
      "kv heads (Expand materializes the repeats), qk_matmul_output modes 0-3.",
      { A_INT("is_causal", 0), A_OPT("kv_num_heads", RLX_ATTR_INT), A_OPT("q_num_heads", RLX_ATTR_INT),
        A_INT("qk_matmul_output_mode", 0), A_OPT("scale", RLX_ATTR_FLOAT), A_FLOAT("softcap", 0),
        A_OPT("softmax_precision", RLX_ATTR_INT) } },
    /* onnxruntime registers this one in the default domain */
    { "", "SimplifiedLayerNormalization", 1, 2, 2, 1, 2, x_sln,
      "RMSNormalization-23 (the inv_std_var output not supported); onnxruntime's schema, in the default domain.",
      { A_INT("axis", -1), A_FLOAT("epsilon", 1e-5f), A_INT("stash_type", 1) } },
};

#define N_CONTRIB (sizeof k_contrib / sizeof k_contrib[0])

const rlx_contrib_def *rlx_onnx_contrib_find(const char *domain, const char *op) {
    if (!domain || strcmp(domain, "ai.onnx") == 0) domain = "";
    if (!op) return NULL;
    for (size_t i = 0; i < N_CONTRIB; i++)
        if (strcmp(k_contrib[i].domain, domain) == 0 && strcmp(k_contrib[i].name, op) == 0) return &k_contrib[i];
    return NULL;
}

size_t rlx_onnx_contrib_count(void) { return N_CONTRIB; }

void rlx_onnx_contrib_row(size_t i, const char **domain, const char **name, int *since, const char **expansion) {
    const rlx_contrib_def *d = i < N_CONTRIB ? &k_contrib[i] : NULL;
    *domain = d ? d->domain : "";
    *name = d ? d->name : "";
    *since = d ? d->since : 0;
    *expansion = d ? d->doc : "";
}

rlx_status rlx_onnx_contrib_expand(rlx_graph *g, const rlx_contrib_def *def, const char *label, const char *name,
                                   const int *in, int n_in, const int *out, int n_out, const rlx_node_attr *attrs,
                                   int n_attrs, const struct rlx_config *cfg) {
    cx c = { .g = g, .def = def, .label = label, .name = name, .in = in, .out = out, .n_in = n_in, .n_out = n_out,
             .attrs = attrs, .n_attrs = n_attrs, .cfg = cfg };
    if (n_in < def->min_in || (def->max_in >= 0 && n_in > def->max_in))
        return def->max_in < 0 ? rlx_fail(RLX_ERR_INVALID_MODEL, "%s: has %d inputs, expected at least %d", label, n_in,
                                          def->min_in)
               : def->min_in == def->max_in
                   ? rlx_fail(RLX_ERR_INVALID_MODEL, "%s: has %d inputs, expected %d", label, n_in, def->min_in)
                   : rlx_fail(RLX_ERR_INVALID_MODEL, "%s: has %d inputs, expected %d to %d", label, n_in, def->min_in,
                              def->max_in);
    if (n_out < def->min_out || n_out > def->max_out)
        return def->min_out == def->max_out
                   ? rlx_fail(RLX_ERR_INVALID_MODEL, "%s: has %d outputs, expected %d", label, n_out, def->min_out)
                   : rlx_fail(RLX_ERR_INVALID_MODEL, "%s: has %d outputs, expected %d to %d", label, n_out,
                              def->min_out, def->max_out);
    RLX_TRY(check_attrs(&c));
    for (int i = 0; i < n_in; i++) /* the dtypes and shapes the new nodes' inference reads */
        if (in[i] >= 0) RLX_TRY(need(&c, in[i]));
    /* required inputs: those below min_in, except the optional ones inside
     * it (QLinear zero points, GQA's key/value/past, LSTM's optionals) */
    static const struct { const char *op; unsigned optional; } opt[] = {
        { "QLinearAdd", 1u << 2 | 1u << 5 }, { "QLinearMul", 1u << 2 | 1u << 5 },
        { "QLinearAveragePool", 1u << 2 }, { "QLinearSoftmax", 1u << 2 }, { "QLinearReduceMean", 1u << 2 },
        { "QLinearSigmoid", 1u << 2 }, { "QLinearLeakyRelu", 1u << 2 }, { "QLinearGlobalAveragePool", 1u << 2 },
        { "GroupQueryAttention", 0x1e }, { "DynamicQuantizeLSTM", 0xf8 }, { "QLinearConcat", ~0u << 2 },
        { "EmbedLayerNormalization", 1u << 1 | 1u << 4 },
    };
    unsigned optional = 0;
    for (size_t i = 0; i < sizeof opt / sizeof opt[0]; i++)
        if (strcmp(opt[i].op, def->name) == 0) optional = opt[i].optional;
    for (int i = 0; i < def->min_in && i < n_in; i++)
        if (in[i] < 0 && !(i < 32 && (optional >> i) & 1u))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: required input %d is missing", label, i);
    if (def->min_out && (n_out < 1 || out[0] < 0))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: output 0 is required", label);
    return def->expand(&c);
}
