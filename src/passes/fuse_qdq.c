/* passes/fuse_qdq.c — turns the QuantizeLinear -> DequantizeLinear pairs of
 * QDQ models (onnxruntime's quantize_static, QAT exports) into one
 * elementwise node, rlx.QuantizeDequantize (the "fake quantization" of the
 * activations), so they run in f32 on any device, fuse into elementwise
 * chains and GEMM/conv epilogues (its vocabulary row QDQ, src/ir/ew_funcs.h,
 * has RLX_EW_CHAIN and RLX_EW_ACT), and never materialise the 8-bit tensor.
 * The weights' DequantizeLinear of constants need nothing here: the fold
 * pass turns them into f32 constants before this pass, so QDQ Gemm (and
 * the Conv and MatMul that rlx_pass_fuse_qdq_conv leaves) run as the f32
 * kernels.
 *
 * A pair is taken when: Q reads an f32 tensor x; both nodes are per tensor
 * (scale of one element, f32, constant; zero point absent or a constant of
 * one element, uint8 or int8, equal in both), with equal scales; Q's output
 * is uint8 or int8 (the level range [low, low + 255] is what the row
 * encodes: low = type minimum - zero point), no graph output, and its users
 * are DequantizeLinear nodes that all match (each becomes the new node; the
 * Q node then has no user and dce removes it); Q's precision attribute
 * (version 23) is 0 or f32 and DQ's output is f32. The result equals
 * Q then DQ bit for bit on the CPU (same f32 division, rounding, saturation
 * and product).
 *
 * Before that, the integer ops of onnxruntime's quantize_dynamic become
 * ops the GPU has, with the reference kernels' bits: DynamicQuantizeLinear
 * (rewrite_dql) and MatMulInteger when its sums are exact in f32
 * (rewrite_mmi). ConvInteger, QLinearMatMul and QLinearConv stay on every
 * plan, so that both devices give the integer kernel's bits: the CPU (int8
 * GEMM, src/backend/cpu/cpu_qgemm.h) and the GPU (the integer GEMM and
 * convolution, src/backend/webgpu/lower_qgemm.c) run them exactly, and a
 * GPU plan runs the ones the GPU declines (3-D, scales that are not
 * constants) on the CPU. When the plan runs on the CPU alone
 * (stats->cpu_target), DynamicQuantizeLinear and MatMulInteger stay too:
 * the CPU's int8 GEMM runs them exactly. On every plan, before the first
 * fold (while the weights' DequantizeLinear are still there),
 * rlx_pass_fuse_qdq_conv turns the QDQ convolutions and MatMuls of
 * quantize_static into QLinearConv and QLinearMatMul, and its QDQ Gemms
 * into QGemm's integer form (emit_qgemm) (where every scale is
 * finite and positive: qdq_one), so that a GPU plan
 * and a CPU plan give the same integer bits (as f32 ops, the GPU summed in
 * another order than the CPU and put some activations one level apart,
 * which the layers after amplified). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/options.h"
#include "base/tensor.h"
#include "ir/op.h"
#include "ir/ops/internal_ops.h"
#include "ir/ops/quant_params.h"
#include "passes/fuse_util.h"
#include "passes/passes.h"

#define PASS "fuse_qdq"

/* Scale (f32) and zero point of a per-tensor Q or DQ node n (input 1 and
 * optional input 2); false when they are not constants of one element. */
static bool qparams(const rlx_graph *g, const rlx_node *n, double *scale, double *zp, rlx_dtype *zp_dt) {
    const rlx_value *s = rlx_node_input(g, n, 1), *z = n->n_in > 2 ? rlx_node_input(g, n, 2) : NULL;
    if (!s || !s->konst || s->dtype != RLX_DTYPE_F32 || rlx_value_numel(s) != 1 || !rlx_konst_scalar(s, scale))
        return false;
    *zp = 0;
    *zp_dt = RLX_DTYPE_UNDEFINED;
    if (!z) return true;
    if (!z->konst || rlx_value_numel(z) != 1 || !rlx_konst_scalar(z, zp)) return false;
    *zp_dt = z->dtype;
    return true;
}

/* Whether DQ node d reads Q's output v with Q's parameters. */
static bool dq_matches(const rlx_graph *g, const rlx_node *d, int v, double scale, double zp, rlx_dtype zp_dt) {
    double s2, z2;
    rlx_dtype zdt2;
    if (!rlx_fuse_is(d, RLX_OP_DequantizeLinear) || d->n_in < 2 || d->in[0] != v || d->n_out != 1 || d->out[0] < 0)
        return false;
    if (g->values[d->out[0]].dtype != RLX_DTYPE_F32 || !qparams(g, d, &s2, &z2, &zdt2)) return false;
    if (rlx_param_int(d, RLX_A_block_size) != 0) return false;
    /* an absent zero point is 0 of the value's type: compare values only */
    (void)zdt2, (void)zp_dt;
    return s2 == scale && z2 == zp;
}

static rlx_status fuse_one(rlx_graph *g, const rlx_fuse_users *u, int qi, rlx_pass_stats *stats, bool *done) {
    const rlx_node *q = &g->nodes[qi];
    if (q->n_in < 2 || q->n_out != 1 || q->out[0] < 0) return RLX_OK;
    int x = q->in[0], v = q->out[0];
    const rlx_value *xv = &g->values[x], *qv = &g->values[v];
    if (xv->dtype != RLX_DTYPE_F32 || !rlx_value_is_static(xv) || rlx_fuse_is_output(g, v)) return RLX_OK;
    double lo;
    if (qv->dtype == RLX_DTYPE_U8) lo = 0;
    else if (qv->dtype == RLX_DTYPE_I8) lo = -128;
    else return RLX_OK;
    if (rlx_param_int(q, RLX_A_block_size) != 0) return RLX_OK;
    if (q->version >= 23) {
        int64_t prec = rlx_param_int(q, RLX_A_precision);
        if (prec != 0 && prec != RLX_DTYPE_F32) return RLX_OK;
    }
    double scale, zp;
    rlx_dtype zp_dt;
    if (!qparams(g, q, &scale, &zp, &zp_dt)) return RLX_OK;
    int nu = rlx_fuse_n_users(u, v);
    if (nu < 1) return RLX_OK;
    for (int j = 0; j < nu; j++)
        if (!dq_matches(g, &g->nodes[rlx_fuse_user(u, v, j)], v, scale, zp, zp_dt)) return RLX_OK;
    int users[64];
    if (nu > (int)RLX_ARRAY_LEN(users)) return RLX_OK;
    for (int j = 0; j < nu; j++) users[j] = rlx_fuse_user(u, v, j);
    for (int j = 0; j < nu; j++) {
        int d = users[j], out = g->nodes[d].out[0];
        char what[512] = "";
        if (rlx_fuse_reporting()) {
            int pair[2] = { qi, d };
            rlx_fuse_describe(g, pair, 2, what, sizeof what);
        }
        char name[256];
        snprintf(name, sizeof name, "%s_qdq", g->nodes[d].name ? g->nodes[d].name : "dq");
        rlx_node_attr attrs[2];
        memset(attrs, 0, sizeof attrs);
        RLX_TRY(rlx_node_attr_set_float(&attrs[0], "scale", (float)scale));
        rlx_status st = rlx_node_attr_set_float(&attrs[1], "low", (float)(lo - zp));
        if (st) {
            rlx_node_attr_free(&attrs[0]);
            return st;
        }
        g->nodes[d].dead = true;
        g->values[out].producer = -1;
        RLX_TRY(rlx_fuse_emplace(g, d, "QuantizeDequantize", RLX_INTERNAL_DOMAIN, name, &x, 1, &out, 1, attrs, 2));
        rlx_fuse_report(PASS, what, &g->nodes[d], "fake quantization in f32");
        if (stats) stats->fused++;
    }
    g->nodes[qi].dead = true; /* its only users are gone */
    *done = true;
    return RLX_OK;
}

/* ------------------------------------------------------------ dynamic quantization */

/* Appends node op(in) with one new output (its id in *out); attrs adopted. */
static rlx_status add1(rlx_graph *g, const char *op, const int *in, int n_in, rlx_node_attr *attrs, int na, int *out) {
    rlx_status st = rlx_graph_add_value(g, NULL, out);
    int id;
    if (!st) st = rlx_graph_add_node(g, op, "", NULL, in, n_in, out, 1, attrs, na, &id);
    for (int i = 0; st && i < na; i++) rlx_node_attr_free(&attrs[i]);
    return st;
}

static rlx_status add_scalar(rlx_graph *g, float v, int *out) {
    rlx_tensor *t;
    RLX_TRY(rlx_tensor_create(RLX_DTYPE_F32, NULL, 0, &t));
    *(float *)t->data = v;
    return rlx_graph_add_konst(g, NULL, t, out);
}

/* DynamicQuantizeLinear-11 (x f32 -> y u8, scale f32, zero point u8) as
 * the ops the CPU kernel computes (cpu_quant.c), which the GPU runs:
 *   rmin = ReduceMin(Where(IsNaN(x), inf, x)), rmax = ReduceMax(Where(IsNaN(x), -inf, x))
 *   (NaN elements ignored, as the kernel does),
 *   mn = Min(rmin, 0), mx = Max(rmax, 0),
 *   scale = Where(rmin > rmax, NaN, Where(mx - mn == 0, 1, mx - mn) / 255)
 *   (rmin > rmax: every element is NaN),
 *   zp = QuantizeLinear(0 - mn / scale, 1) (round half to even, saturate),
 *   y = QuantizeLinear(x, scale, zp). */
static rlx_status rewrite_dql(rlx_graph *g, int ni) {
    rlx_node *n = &g->nodes[ni];
    int x = n->in[0], outs[3] = { n->out[0], n->n_out > 1 ? n->out[1] : -1, n->n_out > 2 ? n->out[2] : -1 };
    const rlx_value *xv = &g->values[x];
    if (xv->dtype != RLX_DTYPE_F32 || !rlx_value_is_static(xv) || rlx_value_numel(xv) == 0) return RLX_OK;
    n->dead = true;
    for (int k = 0; k < 3; k++)
        if (outs[k] >= 0) g->values[outs[k]].producer = -1;
    int zero, one, c255, pinf, ninf, cnan, isnan, xlo, xhi, rmin, rmax, none, mn, mx, rng, isz, r1, s0, scale, q0, izp,
        zp, y;
    rlx_node_attr a[1];
    RLX_TRY(add_scalar(g, 0.0f, &zero));
    RLX_TRY(add_scalar(g, 1.0f, &one));
    RLX_TRY(add_scalar(g, 255.0f, &c255));
    RLX_TRY(add_scalar(g, INFINITY, &pinf));
    RLX_TRY(add_scalar(g, -INFINITY, &ninf));
    RLX_TRY(add_scalar(g, NAN, &cnan));
    RLX_TRY(add1(g, "IsNaN", &x, 1, NULL, 0, &isnan));
    RLX_TRY(add1(g, "Where", (int[]){ isnan, pinf, x }, 3, NULL, 0, &xlo));
    RLX_TRY(add1(g, "Where", (int[]){ isnan, ninf, x }, 3, NULL, 0, &xhi));
    RLX_TRY(rlx_node_attr_set_int(&a[0], "keepdims", 0));
    RLX_TRY(add1(g, "ReduceMin", &xlo, 1, a, 1, &rmin));
    RLX_TRY(rlx_node_attr_set_int(&a[0], "keepdims", 0));
    RLX_TRY(add1(g, "ReduceMax", &xhi, 1, a, 1, &rmax));
    RLX_TRY(add1(g, "Greater", (int[]){ rmin, rmax }, 2, NULL, 0, &none));
    RLX_TRY(add1(g, "Min", (int[]){ rmin, zero }, 2, NULL, 0, &mn));
    RLX_TRY(add1(g, "Max", (int[]){ rmax, zero }, 2, NULL, 0, &mx));
    RLX_TRY(add1(g, "Sub", (int[]){ mx, mn }, 2, NULL, 0, &rng));
    RLX_TRY(add1(g, "Equal", (int[]){ rng, zero }, 2, NULL, 0, &isz));
    RLX_TRY(add1(g, "Where", (int[]){ isz, one, rng }, 3, NULL, 0, &r1));
    RLX_TRY(add1(g, "Div", (int[]){ r1, c255 }, 2, NULL, 0, &s0));
    RLX_TRY(add1(g, "Where", (int[]){ none, cnan, s0 }, 3, NULL, 0, &scale));
    RLX_TRY(add1(g, "Div", (int[]){ mn, scale }, 2, NULL, 0, &q0));
    RLX_TRY(add1(g, "Sub", (int[]){ zero, q0 }, 2, NULL, 0, &izp));
    RLX_TRY(add1(g, "QuantizeLinear", (int[]){ izp, one }, 2, NULL, 0, &zp));
    RLX_TRY(add1(g, "QuantizeLinear", (int[]){ x, scale, zp }, 3, NULL, 0, &y));
    /* the node's outputs keep their ids: route the new results into them */
    int made[3] = { y, scale, zp };
    for (int k = 0; k < 3; k++) {
        if (outs[k] < 0) continue;
        int id;
        RLX_TRY(add1(g, "Identity", &made[k], 1, NULL, 0, &id));
        rlx_node *idn = &g->nodes[g->n_nodes - 1];
        g->values[id].producer = -1;
        idn->out[0] = outs[k];
        g->values[outs[k]].producer = (int)g->n_nodes - 1;
    }
    return RLX_OK;
}

/* MatMulInteger-10 with a constant 2-D B (zero point per tensor or per
 * column) and A's zero point per tensor (or absent), as
 * Cast<int32>(MatMul(DequantizeLinear(A, 1, a_zp), B - b_zp)) in f32,
 * when every partial sum is an integer below 2^24 in magnitude (K * 255 *
 * max |B - b_zp| <= 2^24), so the f32 products and sums are exact and the
 * result equals the int32 kernel's. */
static rlx_status rewrite_mmi(rlx_graph *g, int ni) {
    rlx_node *n = &g->nodes[ni];
    const rlx_value *a = rlx_node_input(g, n, 0), *b = rlx_node_input(g, n, 1);
    const rlx_value *az = n->n_in > 2 ? rlx_node_input(g, n, 2) : NULL, *bz = n->n_in > 3 ? rlx_node_input(g, n, 3) : NULL;
    if (!a || !b || !b->konst || b->rank != 2 || !rlx_value_is_static(a) || n->out[0] < 0) return RLX_OK;
    if (az && (rlx_value_numel(az) != 1 || az->dtype != a->dtype)) return RLX_OK;
    if (a->dtype != RLX_DTYPE_U8 && a->dtype != RLX_DTYPE_I8) return RLX_OK;
    int64_t K = b->dims[0], N = b->dims[1];
    if (bz && !(bz->konst && (rlx_value_numel(bz) == 1 || (bz->rank == 1 && bz->dims[0] == N)))) return RLX_OK;
    rlx_tensor *bf;
    RLX_TRY(rlx_tensor_create(RLX_DTYPE_F32, b->dims, 2, &bf));
    float *pb = bf->data, mx = 0;
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++) {
            int64_t z = bz ? rlx_tensor_get_i64(bz->konst, rlx_value_numel(bz) == 1 ? 0 : (size_t)j) : 0;
            float v = (float)(rlx_tensor_get_i64(b->konst, (size_t)(k * N + j)) - z);
            pb[k * N + j] = v;
            if (fabsf(v) > mx) mx = fabsf(v);
        }
    if ((double)K * 255.0 * mx > 16777216.0) {
        rlx_tensor_destroy(bf);
        return RLX_OK;
    }
    int bid, one, af, yf, y = n->out[0];
    RLX_TRY(rlx_graph_add_konst(g, NULL, bf, &bid));
    RLX_TRY(add_scalar(g, 1.0f, &one));
    n = &g->nodes[ni];
    int dq_in[3] = { n->in[0], one, az ? n->in[2] : -1 };
    n->dead = true;
    g->values[y].producer = -1;
    RLX_TRY(add1(g, "DequantizeLinear", dq_in, az ? 3 : 2, NULL, 0, &af));
    RLX_TRY(add1(g, "MatMul", (int[]){ af, bid }, 2, NULL, 0, &yf));
    rlx_node_attr to[1];
    RLX_TRY(rlx_node_attr_set_int(&to[0], "to", RLX_DTYPE_I32));
    int tmp;
    RLX_TRY(add1(g, "Cast", &yf, 1, to, 1, &tmp));
    g->values[tmp].producer = -1;
    g->nodes[g->n_nodes - 1].out[0] = y;
    g->values[y].producer = (int)g->n_nodes - 1;
    return RLX_OK;
}

/* One element of a constant scalar or 1-D parameter (per output channel m). */
static double param_at(const rlx_value *v, int64_t m) {
    return rlx_tensor_get_f64(v->konst, rlx_value_numel(v) == 1 ? 0 : (size_t)m);
}

/* ------------------------------------------------- QDQ convolutions and MatMuls as QLinearConv, QLinearMatMul */

/* A constant f32 scale of one element or one per output channel [M] (rank
 * 1, the node's axis 0 then), and its zero point z (same element count,
 * dtype zdt; absent: false). */
static bool qdq_param_ok(const rlx_graph *g, const rlx_node *d, int64_t M, rlx_dtype zdt) {
    const rlx_value *s = rlx_node_input(g, d, 1), *z = d->n_in > 2 ? rlx_node_input(g, d, 2) : NULL;
    if (!s || !s->konst || s->dtype != RLX_DTYPE_F32 || !z || !z->konst || z->dtype != zdt) return false;
    if (rlx_param_int(d, RLX_A_block_size) != 0) return false;
    size_t ns = rlx_value_numel(s);
    if (ns != rlx_value_numel(z) || z->rank != s->rank) return false;
    if (ns == 1) return true;
    return M > 0 && s->rank == 1 && s->dims[0] == M && (int64_t)ns == M;
}

/* Whether every element of the constant scale (input 1) of Q or DQ node n
 * is finite and positive (rlx_quant_scale_bad, RLX_QSCALE_POSITIVE): what
 * quantizers write and what act_absorbed's order and the GPU's integer
 * kernels (a multiplier >= 0) assume; a chain with a zero or negative
 * scale is valid and runs as written. */
static bool qdq_scale_ok(const rlx_graph *g, const rlx_node *n) {
    const rlx_value *s = rlx_node_input(g, n, 1);
    return s && s->konst && rlx_quant_scale_bad(s->konst, RLX_QSCALE_POSITIVE) < 0;
}

/* Whether Relu or Clip(lo, hi) (lo <= hi) between a Conv or MatMul and
 * QuantizeLinear q (per tensor, a positive scale, y of dtype yt) changes
 * no quantized level: Q(lo) <= the type's minimum and Q(hi) >= its
 * maximum, computed as the kernel does (one f32 division, round half to
 * even, plus the zero point). Q is then monotonic, so Q(clamp(v, lo, hi))
 * == Q(v) for every v (onnxruntime's ClipQuantFusion drops such an
 * activation too). */
static bool act_absorbed(const rlx_graph *g, const rlx_node *q, rlx_act act, rlx_dtype yt) {
    double lo = act.kind == RLX_ACT_RELU ? 0.0 : act.alpha, hi = act.kind == RLX_ACT_RELU ? INFINITY : act.beta;
    double s, z, qmin = yt == RLX_DTYPE_U8 ? 0 : -128;
    if ((act.kind != RLX_ACT_RELU && act.kind != RLX_ACT_CLIP) || !rlx_konst_scalar(rlx_node_input(g, q, 1), &s) ||
        !rlx_konst_scalar(rlx_node_input(g, q, 2), &z) || !(lo <= hi) || !(s > 0))
        return false; /* lo > hi: Clip gives hi everywhere */
    float sf = (float)s;
    return rintf((float)lo / sf) + z <= qmin && rintf((float)hi / sf) + z >= qmin + 255;
}

/* Appends op(in) writing `out` (-1: a new value, its id in *res), and
 * infers it (its inputs are known); rlx_pass_fuse_qdq_conv sorts the graph
 * afterwards. attrs are adopted. */
static rlx_status append(rlx_graph *g, const char *op, const char *name, const int *in, int n_in,
                         rlx_node_attr *attrs, int na, int out, int *res) {
    rlx_status st = out < 0 ? rlx_graph_add_value(g, NULL, &out) : RLX_OK;
    int id = -1;
    char nm[300];
    snprintf(nm, sizeof nm, "%s/%s", name, op);
    if (!st) st = rlx_graph_add_node(g, op, "", nm, in, n_in, &out, 1, attrs, na, &id);
    else
        for (int i = 0; i < na; i++) rlx_node_attr_free(&attrs[i]);
    if (!st) st = rlx_infer_node(g, id);
    if (res) *res = out;
    return st;
}

/* The QDQ Gemm as QGemm's integer form (the expansion of com.microsoft.QGemm
 * in src/import/onnx_contrib.c: onnxruntime's bits): [Transpose(x)] ->
 * MatMulInteger(x, W [K, N], x_zp, w_zp) (+ the int32 bias) -> Cast ->
 * Mul by alpha * x_scale * w_scale[n] / y_scale (single precision, in
 * that order; alpha is 1 when there is a bias) -> QuantizeLinear(., 1,
 * y_zp) into y. W is transposed here when transB. ins: as qdq_one's. */
static rlx_status emit_qgemm(rlx_graph *g, const rlx_node *c, const int *ins, int bias, int y) {
    const rlx_value *w = &g->values[ins[3]], *xs = &g->values[ins[1]], *ws = &g->values[ins[4]],
                    *ys = &g->values[ins[6]];
    bool ta = rlx_param_int(c, RLX_A_transA) != 0, tb = rlx_param_int(c, RLX_A_transB) != 0;
    float alpha = rlx_param_float(c, RLX_A_alpha);
    char name[256];
    snprintf(name, sizeof name, "%s_qgemm", c->name ? c->name : "gemm");
    int64_t K = w->dims[tb ? 1 : 0], N = w->dims[tb ? 0 : 1];
    int wt = ins[3], x = ins[0], acc, f, m, mult, one;
    /* both tensors before any value is added (that may move g->values) */
    rlx_tensor *mt, *t = NULL;
    RLX_TRY(rlx_tensor_create(RLX_DTYPE_F32, ws->dims, ws->rank, &mt));
    float sx = (float)rlx_tensor_get_f64(xs->konst, 0), sy = (float)rlx_tensor_get_f64(ys->konst, 0);
    for (size_t j = 0; j < rlx_tensor_numel(mt); j++) {
        float v = alpha * sx;
        v = v * (float)rlx_tensor_get_f64(ws->konst, j);
        ((float *)mt->data)[j] = v / sy;
    }
    if (tb) {
        rlx_status st = rlx_tensor_create(w->dtype, (int64_t[]){ K, N }, 2, &t);
        if (st) {
            rlx_tensor_destroy(mt);
            return st;
        }
        const uint8_t *src = w->konst->data;
        uint8_t *dst = t->data;
        for (int64_t k = 0; k < K; k++)
            for (int64_t n = 0; n < N; n++) dst[k * N + n] = src[n * K + k];
    }
    rlx_status st = rlx_graph_add_konst(g, NULL, mt, &mult);
    if (st) {
        if (t) rlx_tensor_destroy(t);
        return st;
    }
    if (t) RLX_TRY(rlx_graph_add_konst(g, NULL, t, &wt));
    RLX_TRY(add_scalar(g, 1.0f, &one));
    rlx_node_attr a[1];
    if (ta) {
        RLX_TRY(rlx_node_attr_set_ints(&a[0], "perm", (int64_t[]){ 1, 0 }, 2));
        RLX_TRY(append(g, "Transpose", name, &x, 1, a, 1, -1, &x));
    }
    RLX_TRY(append(g, "MatMulInteger", name, (int[]){ x, wt, ins[2], ins[5] }, 4, NULL, 0, -1, &acc));
    if (bias >= 0) RLX_TRY(append(g, "Add", name, (int[]){ acc, bias }, 2, NULL, 0, -1, &acc));
    RLX_TRY(rlx_node_attr_set_int(&a[0], "to", RLX_DTYPE_F32));
    RLX_TRY(append(g, "Cast", name, &acc, 1, a, 1, -1, &f));
    RLX_TRY(append(g, "Mul", name, (int[]){ f, mult }, 2, NULL, 0, -1, &m));
    return append(g, "QuantizeLinear", name, (int[]){ m, one, ins[7] }, 3, NULL, 0, y, NULL);
}

/* DequantizeLinear(x) -> Conv(., DequantizeLinear(W), DequantizeLinear(B))
 * [-> Relu or Clip] -> QuantizeLinear as one QLinearConv, and
 * DequantizeLinear(x) -> MatMul(., DequantizeLinear(W)) [-> Relu or Clip]
 * -> QuantizeLinear as one QLinearMatMul, which both devices run on their
 * integer kernels (the CPU's int8 GEMM, cpu_quant.c and cpu_qgemm.c; the
 * GPU's integer convolution and GEMM, webgpu/lower_qgemm.c), with the
 * same bits: x uint8 or int8 with its scale and zero point per tensor;
 * W a constant int8 or uint8 with its scale and zero point per tensor or
 * per output channel (Conv: W [M, C/group, k...], DQ axis 0; MatMul:
 * W [K, N], per column, DQ axis 1); B (Conv only) absent or a constant
 * int32 with zero point 0 and the scale x_scale * w_scale (per channel,
 * to a relative 1e-6: quantize_static's bias); Q per tensor, its zero
 * point given (the output dtype); every scale (x's, each element of W's,
 * Q's, B's) finite and positive (qdq_scale_ok: QLinearConv and
 * QLinearMatMul refuse a zero or non-finite scale where the DQ -> op -> Q
 * chain runs it, as onnxruntime does, so such a chain stays; the zero
 * points have the operands' types, so every value is in range); the
 * Conv's (MatMul's) output read by the Q alone, or by a Relu or Clip
 * (constant bounds) that Q makes a no-op (act_absorbed),
 * read by the Q alone. This is onnxruntime's own rewrite on its CPU
 * provider: the sums are exact integers and the requantization multiplies
 * by (x_scale * w_scale) / y_scale in f32 (rlx_quant_mult: onnxruntime's
 * bits), so an output can be one level
 * from the f32 graph's where its value lies at a rounding boundary (the
 * f32 sum rounds). */
static rlx_status qdq_one(rlx_graph *g, const rlx_fuse_users *u, int ci, rlx_pass_stats *stats, bool *done) {
    const rlx_node *c = &g->nodes[ci];
    bool gm = c->op == RLX_OP_Gemm, mm = c->op == RLX_OP_MatMul || gm;
    bool tb = gm && rlx_param_int(c, RLX_A_transB) != 0;
    if (c->n_in < 2 || c->n_out != 1 || c->out[0] < 0 || !rlx_fuse_private(g, u, c->out[0], 1)) return RLX_OK;
    int qi = rlx_fuse_user(u, c->out[0], 0), qin = c->out[0], ai = -1, nn = 0;
    rlx_act act = { 0 };
    if (!rlx_fuse_is(&g->nodes[qi], RLX_OP_QuantizeLinear)) { /* Relu or Clip first? */
        if (!rlx_fuse_match_act(g, u, qin, &ai, &nn, &qin, &act) || nn != 1 || !rlx_fuse_private(g, u, qin, 1))
            return RLX_OK;
        qi = rlx_fuse_user(u, qin, 0);
    }
    const rlx_node *q = &g->nodes[qi], *dx = rlx_fuse_producer(g, c->in[0]), *dw = rlx_fuse_producer(g, c->in[1]);
    const rlx_node *db = c->n_in > 2 && c->in[2] >= 0 ? rlx_fuse_producer(g, c->in[2]) : NULL;
    if (!rlx_fuse_is(q, RLX_OP_QuantizeLinear) || q->n_in < 3 || q->in[0] != qin || q->n_out != 1 || q->out[0] < 0)
        return RLX_OK;
    if (!dx || !rlx_fuse_is(dx, RLX_OP_DequantizeLinear) || !dw || !rlx_fuse_is(dw, RLX_OP_DequantizeLinear))
        return RLX_OK;
    if (c->n_in > 2 && c->in[2] >= 0 && (!db || !rlx_fuse_is(db, RLX_OP_DequantizeLinear))) return RLX_OK;
    if (q->version >= 23) {
        int64_t prec = rlx_param_int(q, RLX_A_precision);
        if (prec != 0 && prec != RLX_DTYPE_F32) return RLX_OK;
    }
    const rlx_value *x = rlx_node_input(g, dx, 0), *w = rlx_node_input(g, dw, 0), *y = &g->values[q->out[0]];
    if (!x || !w || !w->konst || (x->dtype != RLX_DTYPE_U8 && x->dtype != RLX_DTYPE_I8) ||
        (w->dtype != RLX_DTYPE_U8 && w->dtype != RLX_DTYPE_I8) || (y->dtype != RLX_DTYPE_U8 && y->dtype != RLX_DTYPE_I8))
        return RLX_OK;
    float alpha = gm ? rlx_param_float(c, RLX_A_alpha) : 1.0f;
    /* Gemm: alpha * (x W) + beta * B; one int32 sum with B (QGemm's form)
     * needs alpha = beta = 1 when there is a B (onnxruntime's own QDQ
     * rewrite scales B by alpha too: 17 of 32 codes moved in a test) */
    bool w_ok = gm   ? w->rank == 2 && x->rank == 2 && isfinite(alpha) && alpha != 0.0f &&
                         (!db || (rlx_param_float(c, RLX_A_beta) == 1.0f && alpha == 1.0f))
                : mm ? w->rank == 2 && c->n_in == 2
                     : w->rank >= 3 && w->rank <= 4;
    if (!w_ok || g->values[c->out[0]].dtype != RLX_DTYPE_F32) return RLX_OK;
    int64_t M = w->dims[mm && !tb ? 1 : 0];
    if (!qdq_param_ok(g, dx, -1, x->dtype) || !qdq_param_ok(g, q, -1, y->dtype) || !qdq_param_ok(g, dw, M, w->dtype))
        return RLX_OK;
    /* a scale the QLinear node would refuse: the chain runs as it is */
    if (!qdq_scale_ok(g, dx) || !qdq_scale_ok(g, dw) || !qdq_scale_ok(g, q)) return RLX_OK;
    if (ai >= 0 && !act_absorbed(g, q, act, y->dtype)) return RLX_OK;
    const rlx_value *ws = rlx_node_input(g, dw, 1), *xs = rlx_node_input(g, dx, 1);
    if (rlx_value_numel(ws) != 1) {
        int64_t ax = rlx_param_int(dw, RLX_A_axis);
        if (ax < 0) ax += w->rank;
        if (ax != (mm && !tb ? 1 : 0)) return RLX_OK;
    }
    int bias = -1;
    if (db) {
        const rlx_value *b = rlx_node_input(g, db, 0), *bs = rlx_node_input(g, db, 1);
        const rlx_value *bz = db->n_in > 2 ? rlx_node_input(g, db, 2) : NULL;
        if (!b || !b->konst || b->dtype != RLX_DTYPE_I32 || b->rank != 1 || b->dims[0] != M) return RLX_OK;
        if (!bs || !bs->konst || bs->dtype != RLX_DTYPE_F32 || rlx_param_int(db, RLX_A_block_size) != 0 ||
            !qdq_scale_ok(g, db))
            return RLX_OK;
        size_t nbs = rlx_value_numel(bs);
        if (nbs != 1 && (bs->rank != 1 || (int64_t)nbs != M)) return RLX_OK;
        if (bz && (!bz->konst || rlx_value_numel(bz) != nbs)) return RLX_OK;
        for (size_t j = 0; bz && j < nbs; j++)
            if (rlx_tensor_get_i64(bz->konst, j) != 0) return RLX_OK;
        double sx = rlx_tensor_get_f64(xs->konst, 0);
        for (int64_t m = 0; m < M; m++) {
            double want = (double)(float)(sx * param_at(ws, m)), got = param_at(bs, m);
            if (!(fabs(got - want) <= 1e-6 * fabs(want))) return RLX_OK;
        }
        bias = db->in[0];
    }
    /* this pass runs before the fold, so before the pipeline's limit check:
     * the outputs it orphans (the Conv's, MatMul's or Gemm's, the
     * activation's, the DequantizeLinears') are checked here, where their
     * nodes still name them (the QLinear node's output has a byte an
     * element, the Gemm's integer form's values the Gemm's size) */
    int grp[6] = { (int)(dx - g->nodes), (int)(dw - g->nodes), ci, qi, ai, db ? (int)(db - g->nodes) : -1 };
    RLX_TRY(rlx_fuse_limit_check(g, stats, grp, 6));
    int ins[9] = { dx->in[0], dx->in[1], dx->in[2], dw->in[0], dw->in[1], dw->in[2], q->in[1], q->in[2], bias };
    int yid = q->out[0], na = c->n_attrs;
    rlx_node_attr attrs[16];
    if (na > 16) return RLX_OK;
    for (int i = 0; i < na; i++) {
        rlx_status st = rlx_node_attr_copy(&attrs[i], &c->attrs[i]);
        if (st) {
            for (int k = 0; k < i; k++) rlx_node_attr_free(&attrs[k]);
            return st;
        }
    }
    char what[512] = "";
    if (rlx_fuse_reporting()) rlx_fuse_describe(g, grp, ai >= 0 ? 5 : 4, what, sizeof what);
    char name[256];
    snprintf(name, sizeof name, "%s_qlinear", c->name ? c->name : mm ? "matmul" : "conv");
    g->nodes[ci].dead = true;
    g->nodes[qi].dead = true;
    if (ai >= 0) g->nodes[ai].dead = true;
    g->values[yid].producer = -1;
    if (gm) {
        for (int i = 0; i < na; i++) rlx_node_attr_free(&attrs[i]);
        RLX_TRY(emit_qgemm(g, &g->nodes[ci], ins, bias, yid));
        rlx_fuse_report(PASS, what, &g->nodes[g->n_nodes - 1],
                        ai >= 0 ? "QGemm's integer form (MatMulInteger, Cast, Mul, QuantizeLinear), its activation "
                                  "a no-op after Q"
                                : "QGemm's integer form (MatMulInteger, Cast, Mul, QuantizeLinear)");
        if (stats) stats->fused += ai >= 0 ? 2 : 1;
        *done = true;
        return RLX_OK;
    }
    RLX_TRY(rlx_fuse_emplace(g, ci, mm ? "QLinearMatMul" : "QLinearConv", "", name, ins, bias >= 0 ? 9 : 8, &yid, 1,
                             attrs, na));
    rlx_fuse_report(PASS, what, &g->nodes[ci],
                    mm ? (ai >= 0 ? "int8 matmul, its activation a no-op after Q" : "int8 matmul")
                       : (ai >= 0 ? "int8 convolution, its activation a no-op after Q" : "int8 convolution"));
    if (stats) stats->fused += ai >= 0 ? 2 : 1;
    *done = true;
    return RLX_OK;
}

rlx_status rlx_pass_fuse_qdq_conv(rlx_graph *g, rlx_pass_stats *stats) {
    /* the plan's bound input shapes reach the values in the fold, after
     * this pass: inferred here first where a DequantizeLinear is, so that
     * qdq_one's limit check sees the shapes of a model with symbolic dims
     * (the same inference, in the same order, as the fold's) */
    bool dq = false;
    for (size_t i = 0; i < g->n_nodes && !dq; i++) dq = rlx_fuse_is(&g->nodes[i], RLX_OP_DequantizeLinear);
    if (dq && stats && stats->cfg && stats->cfg->max_tensor_bytes > 0) RLX_TRY(rlx_pass_infer(g));
    RLX_TRY(rlx_fuse_each_anchor(g, RLX_OP_Conv, qdq_one, stats));
    RLX_TRY(rlx_fuse_each_anchor(g, RLX_OP_MatMul, qdq_one, stats));
    size_t live = g->n_nodes;
    bool any = false;
    for (size_t i = 0; i < g->n_nodes && !any; i++) any = rlx_fuse_is(&g->nodes[i], RLX_OP_Gemm);
    if (!any) return RLX_OK;
    RLX_TRY(rlx_fuse_each_anchor(g, RLX_OP_Gemm, qdq_one, stats));
    /* a Gemm's integer form was appended (2 or 3 nodes died, 4 to 6 came):
     * put the nodes in order */
    return g->n_nodes != live ? rlx_pass_verify(g) : RLX_OK;
}

rlx_status rlx_pass_fuse_qdq(rlx_graph *g, rlx_pass_stats *stats) {
    bool any = false;
    size_t nn = g->n_nodes;
    for (size_t i = 0; i < nn; i++) {
        rlx_node *n = &g->nodes[i];
        if (n->dead || (n->domain && *n->domain)) continue;
        size_t before = g->n_nodes;
        bool cpu = stats && stats->cpu_target; /* the CPU runs these in int8 (cpu_qgemm.h) */
        if (n->op == RLX_OP_DynamicQuantizeLinear && !cpu) RLX_TRY(rewrite_dql(g, (int)i));
        else if (n->op == RLX_OP_MatMulInteger && !cpu) RLX_TRY(rewrite_mmi(g, (int)i));
        if (g->n_nodes != before) {
            any = true;
            rlx_fuse_report(PASS, rlx_node_desc(&g->nodes[i]), &g->nodes[g->n_nodes - 1], "as f32 ops");
            if (stats) stats->fused++;
        }
    }
    if (any) { /* the new nodes were appended: restore the order, infer, fold B - b_zp etc. */
        rlx_graph_compact(g);
        RLX_TRY(rlx_pass_verify(g));
        RLX_TRY(rlx_pass_fold(g, stats));
    }
    return rlx_fuse_each_anchor(g, RLX_OP_QuantizeLinear, fuse_one, stats);
}
