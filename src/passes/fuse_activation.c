/* passes/fuse_activation.c — folds the activation that follows a Conv,
 * ConvTranspose, Gemm or MatMul into that node (the epilogue contract of
 * src/ir/ops/act.h), and a constant bias added after a MatMul into the
 * MatMul's third input.
 *
 * Activations: the ops whose vocabulary row (src/ir/ew_funcs.h) has the
 * RLX_EW_ACT flag (Relu, Clip with constant bounds, HardSigmoid, HardSwish,
 * Sigmoid, LeakyRelu, Tanh, Gelu with approximate "none" or "tanh"), read
 * by the one resolver rlx_ew_resolve, and two patterns exporters write:
 *   SiLU  x * Sigmoid(x)                      (Mul of x and Sigmoid(x), either order)
 *   GELU  x * 0.5 * (1 + Erf(x / sqrt 2))    (Div by sqrt 2 or Mul by 1/sqrt 2;
 *                                            the three factors in any association)
 * Bias: MatMul(A, B) + c with c constant of N elements shaped [N] or
 * [1, .., 1, N] (N the last dim of the output, B of rank >= 2) becomes
 * MatMul(A, B, c[N]); the bias comes before the activation, so it is only
 * folded into a MatMul that has no activation yet.
 *
 * Preconditions, each checked: the producer's output is f32 or f16 with a
 * static shape, has no other user and is not a graph output; the
 * intermediate values of a pattern have no user outside it and are not
 * graph outputs; the activation's output has the producer's shape and
 * dtype; Clip bounds are constant scalars; Gelu's approximate is "none" or
 * "tanh"; the producer has no fused activation yet; a bias has the
 * output's dtype. Results differ from the unfused graph by rounding only
 * (the activation is applied to the same f32 value).
 *
 * f16 (fp16 models on GPU plans; CPU plans see f32 after widen_f16): every
 * kernel computes the epilogue on the f32 accumulator and rounds once, at
 * the store (README, "f16 models"). Relu and Clip with f16 bounds (the
 * bounds of an f16 Clip are f16 constants) give the unfused bits, as
 * rounding to f16 is monotonic; the bias and the other activations round
 * once where the unfused pair rounds twice. The GELU pattern's constants
 * may be f16: 1/sqrt 2 and sqrt 2 are then matched at their binary16
 * values (the fused GELU uses the exact constant, an error below one f16
 * ulp of the erf argument). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/tensor.h"
#include "ir/op.h"
#include "ir/ops/act.h"
#include "passes/fuse_util.h"
#include "passes/passes.h"
#include "rlx/half.h"

#define PASS "fuse_activation"

static bool is_producer(const rlx_node *n) {
    return rlx_fuse_is(n, RLX_OP_Conv) || rlx_fuse_is(n, RLX_OP_ConvTranspose) || rlx_fuse_is(n, RLX_OP_Gemm) ||
           rlx_fuse_is(n, RLX_OP_MatMul);
}

/* A dtype the epilogues store (f32, or f16 with f32 arithmetic). */
static bool epilogue_dtype(rlx_dtype dt) { return dt == RLX_DTYPE_F32 || dt == RLX_DTYPE_F16; }

/* Constant scalar v is `want`: within 1e-5 relative, or, for an f16
 * constant, want rounded to binary16. */
static bool konst_near(const rlx_value *v, double want) {
    float c;
    if (!rlx_fuse_konst_scalar(v, &c)) return false;
    if (fabs((double)c - want) <= 1e-5 * fabs(want)) return true;
    return v->konst->dtype == RLX_DTYPE_F16 && c == rlx_f16_to_f32(rlx_f32_to_f16((float)want));
}

/* A binary op (Mul/Add/Div) of version >= 7 (numpy broadcast). */
static bool is_binary(const rlx_node *n, rlx_op_id op) {
    return rlx_fuse_is(n, op) && n->n_in == 2 && n->version >= 7 && n->n_out == 1 && n->out[0] >= 0;
}

/* The activation of unary node a (reading x) as an rlx_act: a function of
 * the vocabulary whose row has RLX_EW_ACT, with parameters known now;
 * false otherwise. */
static bool unary_act(const rlx_graph *g, const rlx_node *a, int x, rlx_act *act) {
    memset(act, 0, sizeof *act);
    if (a->n_in < 1 || a->in[0] != x || a->n_out != 1 || a->out[0] < 0) return false;
    if (!rlx_ew_resolve(g, a, act) || !(rlx_ew_info_of(act->kind)->flags & RLX_EW_ACT)) return false;
    return a->n_in == 1 || act->kind == RLX_ACT_CLIP;
}

/* SiLU: the two users of x are Sigmoid(x) and Mul(x, sigmoid). */
static bool match_silu(const rlx_graph *g, const rlx_fuse_users *u, int x, int *nodes, int *nn, int *out) {
    if (!rlx_fuse_private(g, u, x, 2)) return false;
    const rlx_node *s = NULL, *m = NULL;
    for (int i = 0; i < 2; i++) {
        const rlx_node *n = &g->nodes[rlx_fuse_user(u, x, i)];
        if (rlx_fuse_is(n, RLX_OP_Sigmoid) && n->n_in == 1 && n->n_out == 1 && n->out[0] >= 0) s = n;
        else if (is_binary(n, RLX_OP_Mul)) m = n;
    }
    if (!s || !m || !rlx_fuse_private(g, u, s->out[0], 1) || rlx_fuse_other_input(m, x) != s->out[0]) return false;
    nodes[(*nn)++] = (int)(s - g->nodes);
    nodes[(*nn)++] = (int)(m - g->nodes);
    *out = m->out[0];
    return true;
}

/* The single user of v when v is private to it, else NULL. */
static const rlx_node *sole_user(const rlx_graph *g, const rlx_fuse_users *u, int v) {
    if (!rlx_fuse_private(g, u, v, 1)) return NULL;
    return &g->nodes[rlx_fuse_user(u, v, 0)];
}

/* True when node n is Mul(v, c) (either order) with constant scalar c == want. */
static bool mul_by(const rlx_graph *g, const rlx_node *n, int v, double want) {
    if (!is_binary(n, RLX_OP_Mul)) return false;
    int o = rlx_fuse_other_input(n, v);
    float c;
    return o >= 0 && rlx_fuse_konst_scalar(&g->values[o], &c) && c == (float)want;
}

/* GELU, erf form: x / sqrt2 (or x * 1/sqrt2) -> Erf -> + 1 -> the product
 * of x, 0.5 and (1 + erf) in any association. */
static bool match_gelu(const rlx_graph *g, const rlx_fuse_users *u, int x, int *nodes, int *nn, int *out) {
    if (!rlx_fuse_private(g, u, x, 2)) return false;
    const rlx_node *d = NULL, *o = NULL;
    for (int i = 0; i < 2; i++) {
        const rlx_node *n = &g->nodes[rlx_fuse_user(u, x, i)];
        bool is_d = false;
        if (is_binary(n, RLX_OP_Div) && n->in[0] == x && n->in[1] != x)
            is_d = konst_near(&g->values[n->in[1]], 1.4142135623730951);
        else if (is_binary(n, RLX_OP_Mul) && rlx_fuse_other_input(n, x) >= 0)
            is_d = konst_near(&g->values[rlx_fuse_other_input(n, x)], 0.7071067811865476);
        if (is_d && !d) d = n;
        else o = n;
    }
    if (!d || !o || !is_binary(o, RLX_OP_Mul)) return false;
    const rlx_node *e = sole_user(g, u, d->out[0]);
    if (!e || !rlx_fuse_is(e, RLX_OP_Erf) || e->n_in != 1 || e->n_out != 1 || e->out[0] < 0) return false;
    const rlx_node *a1 = sole_user(g, u, e->out[0]);
    float one;
    if (!a1 || !is_binary(a1, RLX_OP_Add) || rlx_fuse_other_input(a1, e->out[0]) < 0 ||
        !rlx_fuse_konst_scalar(&g->values[rlx_fuse_other_input(a1, e->out[0])], &one) || one != 1.0f)
        return false;
    const rlx_node *t = sole_user(g, u, a1->out[0]);
    if (!t || !is_binary(t, RLX_OP_Mul)) return false;
    const rlx_node *fin = NULL, *mid = NULL;
    if (mul_by(g, o, x, 0.5) && rlx_fuse_private(g, u, o->out[0], 1) &&
        rlx_fuse_other_input(t, a1->out[0]) == o->out[0]) {
        fin = t, mid = o; /* (x * 0.5) * (1 + erf) */
    } else if (o == t && rlx_fuse_other_input(t, x) == a1->out[0]) {
        const rlx_node *f = sole_user(g, u, t->out[0]); /* (x * (1 + erf)) * 0.5 */
        if (f && mul_by(g, f, t->out[0], 0.5)) fin = f, mid = t;
    } else if (mul_by(g, t, a1->out[0], 0.5) && rlx_fuse_private(g, u, t->out[0], 1) &&
               rlx_fuse_other_input(o, x) == t->out[0]) {
        fin = o, mid = t; /* x * (0.5 * (1 + erf)) */
    }
    if (!fin) return false;
    int ids[6] = { (int)(d - g->nodes), (int)(e - g->nodes), (int)(a1 - g->nodes), (int)(mid - g->nodes),
                   (int)(fin - g->nodes), -1 };
    int n = 5;
    if (t != mid && t != fin) ids[n++] = (int)(t - g->nodes);
    if (o != mid && o != fin) ids[n++] = (int)(o - g->nodes);
    for (int i = 0; i < n; i++) nodes[(*nn)++] = ids[i];
    *out = fin->out[0];
    return true;
}

/* Makes P produce `out` (the pattern's result) and kills nodes[1..nn). */
static void rewire(rlx_graph *g, int p, const int *nodes, int nn, int out) {
    rlx_node *P = &g->nodes[p];
    g->values[P->out[0]].producer = -1;
    P->out[0] = out;
    for (int i = 1; i < nn; i++) g->nodes[nodes[i]].dead = true;
    g->values[out].producer = p;
}

const char *rlx_fuse_act_name(rlx_act_kind k) { return rlx_ew_short_name(k); }

bool rlx_fuse_match_act(const rlx_graph *g, const rlx_fuse_users *u, int x, int *nodes, int *nn, int *out,
                        rlx_act *act) {
    int n0 = *nn;
    *out = -1;
    memset(act, 0, sizeof *act);
    if (rlx_fuse_private(g, u, x, 1)) {
        const rlx_node *a = &g->nodes[rlx_fuse_user(u, x, 0)];
        if (unary_act(g, a, x, act)) {
            nodes[(*nn)++] = (int)(a - g->nodes);
            *out = a->out[0];
        }
    } else if (match_silu(g, u, x, nodes, nn, out)) {
        act->kind = RLX_ACT_SILU;
    } else if (match_gelu(g, u, x, nodes, nn, out)) {
        act->kind = RLX_ACT_GELU;
    }
    const rlx_value *yv = *out >= 0 ? &g->values[*out] : NULL;
    if (act->kind == RLX_ACT_NONE || !yv || !rlx_fuse_same_shape(yv, &g->values[x]) ||
        yv->dtype != g->values[x].dtype || !epilogue_dtype(yv->dtype)) {
        *nn = n0;
        *out = -1;
        memset(act, 0, sizeof *act);
        return false;
    }
    return true;
}

/* Tries the activation patterns on producer p; *done when one fused. */
static rlx_status try_act(rlx_graph *g, const rlx_fuse_users *u, int p, rlx_pass_stats *stats, bool *done) {
    int x = g->nodes[p].out[0];
    int nodes[8] = { p };
    int nn = 1, out = -1;
    rlx_act act;
    if (!rlx_fuse_match_act(g, u, x, nodes, &nn, &out, &act)) return RLX_OK;
    char what[768] = "";
    if (rlx_fuse_reporting()) rlx_fuse_describe(g, nodes, nn, what, sizeof what);
    rlx_node *P = &g->nodes[p];
    RLX_TRY(rlx_fuse_set_int(P, "_rlx_act", act.kind));
    if (act.alpha != 0.0f || signbit(act.alpha)) RLX_TRY(rlx_fuse_set_float(P, "_rlx_act_alpha", act.alpha));
    if (act.beta != 0.0f || signbit(act.beta)) RLX_TRY(rlx_fuse_set_float(P, "_rlx_act_beta", act.beta));
    rewire(g, p, nodes, nn, out);
    char detail[64];
    snprintf(detail, sizeof detail, "act %s", rlx_fuse_act_name(act.kind));
    rlx_fuse_report(PASS, what, &g->nodes[p], detail);
    if (stats) stats->fused += nn - 1;
    *done = true;
    return RLX_OK;
}

/* MatMul + Add(constant bias of N elements) -> MatMul(A, B, bias[N]). */
static rlx_status try_bias(rlx_graph *g, const rlx_fuse_users *u, int p, rlx_pass_stats *stats, bool *done) {
    rlx_node *P = &g->nodes[p];
    int x = P->out[0];
    const rlx_value *xv = &g->values[x], *bv = rlx_node_input(g, P, 1);
    if (P->n_in != 2 || !bv || bv->rank < 2 || xv->rank < 1 || !rlx_fuse_private(g, u, x, 1)) return RLX_OK;
    const rlx_node *a = &g->nodes[rlx_fuse_user(u, x, 0)];
    int c = is_binary(a, RLX_OP_Add) ? rlx_fuse_other_input(a, x) : -1;
    if (c < 0) return RLX_OK;
    const rlx_value *cv = &g->values[c];
    int64_t n = xv->dims[xv->rank - 1];
    if (!cv->konst || cv->konst->dtype != xv->dtype || cv->rank > xv->rank || cv->rank < 1 ||
        (int64_t)rlx_tensor_numel(cv->konst) != n || cv->dims[cv->rank - 1] != n)
        return RLX_OK;
    if (!rlx_fuse_same_shape(&g->values[a->out[0]], xv)) return RLX_OK;
    int bias = c;
    if (cv->rank != 1) { /* [1, .., 1, N] -> [N] */
        rlx_tensor *t;
        RLX_TRY(rlx_tensor_clone(cv->konst, &t));
        t->rank = 1;
        t->dims[0] = n;
        RLX_TRY(rlx_graph_add_konst(g, NULL, t, &bias));
    }
    int nodes[2] = { p, (int)(a - g->nodes) };
    char what[512] = "";
    if (rlx_fuse_reporting()) rlx_fuse_describe(g, nodes, 2, what, sizeof what);
    P = &g->nodes[p];
    int *in = realloc(P->in, 4 * sizeof *in);
    if (!in) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    P->in = in;
    P->in[2] = bias;
    P->n_in = 3;
    rewire(g, p, nodes, 2, g->nodes[nodes[1]].out[0]);
    rlx_fuse_report(PASS, what, &g->nodes[p], "bias");
    if (stats) stats->fused++;
    *done = true;
    return RLX_OK;
}

rlx_status rlx_pass_fuse_activation(rlx_graph *g, rlx_pass_stats *stats) {
    rlx_fuse_users u;
    RLX_TRY(rlx_fuse_users_build(g, &u));
    rlx_status st = RLX_OK;
    bool any = false;
    for (size_t i = 0; i < g->n_nodes && !st;) {
        rlx_node *P = &g->nodes[i];
        bool done = false;
        if (is_producer(P) && P->n_out == 1 && P->out[0] >= 0 && rlx_node_act(P).kind == RLX_ACT_NONE &&
            epilogue_dtype(g->values[P->out[0]].dtype) && rlx_value_is_static(&g->values[P->out[0]])) {
            if (rlx_fuse_is(P, RLX_OP_MatMul)) st = try_bias(g, &u, (int)i, stats, &done);
            if (!st && !done) {
                st = try_act(g, &u, (int)i, stats, &done);
            }
        }
        if (st) break;
        if (done) { /* the users changed: index again, and try node i once more */
            any = true;
            rlx_fuse_users_free(&u);
            st = rlx_fuse_users_build(g, &u);
            continue;
        }
        i++;
    }
    rlx_fuse_users_free(&u);
    if (any) rlx_graph_compact(g);
    return st;
}
