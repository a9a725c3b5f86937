/* passes/widen_f16.c — on CPU plans, f16 values computed in f32.
 *
 * An fp16 model (f16 weights and activations, often with f32 graph inputs
 * and outputs and Casts at the edges, as onnxruntime's float16 converter
 * writes it) would run every node on the CPU's reference kernels, which
 * round each op's result to binary16. The CPU's fast kernels are f32; so,
 * for CPU plans only (stats->cpu_target), this pass rewrites the graph to
 * compute in f32, as onnxruntime's CPU provider does (it widens f16 nodes
 * with inserted Casts and removes the redundant Cast pairs):
 *
 *  - a node of a widenable op (below) with an f16 input or output reads
 *    and writes f32 instead: its f16 intermediate values become f32 in
 *    place (same id, same name), f16 constants are converted once, here;
 *  - the model's Casts keep their meaning where it is observable: a Cast
 *    to f16 stays, and a widened reader of its result gets a Cast back to
 *    f32 (the value is rounded to binary16 there, as the model says); a
 *    Cast from f16 to f32 reads the widened value (no rounding: the value
 *    never was f16); a Cast from f16 to another type reads it too;
 *  - graph inputs and outputs keep their declared types: an f16 input
 *    gets a Cast to f32 before its widened readers, an f16 output is its
 *    f32 value cast to f16 (rounded once, at the end);
 *  - an op that only moves or selects elements (Reshape, Transpose,
 *    Gather, Slice, Concat, Pad, Where, ...: the tensor family but CumSum)
 *    follows its data: it reads and writes f32 where an f16 input of it is
 *    already f32 (after a widened node), else it stays f16, exact (a Gather
 *    from an f16 table, a Reshape of an f16 graph input);
 *  - a node that is not widened (Cast to f16, CastLike, the quantization
 *    ops, the ops whose output type comes from an attribute such as
 *    ConstantOfShape, EyeLike, Range and OneHot, control flow, ops of
 *    other domains but rlx.MatMulNBits, whose A and Y may be f32 or f16)
 *    keeps its f16 values and gets Casts around it.
 *
 * The pass runs after the first fold: constant subgraphs were computed
 * already, on the reference kernels (one rounding per op).
 *
 * So values between the edges are not rounded to binary16 and do not
 * overflow at 65,504 (an f16 graph output that does becomes inf, as in
 * binary16); README's "f16 models" states the policy of each device.
 * A graph with subgraphs (If, Loop, Scan) is left as it is: their bodies
 * name outer values, whose dtypes must not change. Widenable: the
 * elementwise, nn, tensor, reduce and rnn families of the default domain
 * except the ops named above, and rlx.MatMulNBits (fuse_nbits of an f16
 * model). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/tensor.h"
#include "ir/op.h"
#include "ir/ops/ops.h"
#include "passes/fuse_util.h"
#include "passes/passes.h"
#include "rlx/half.h"

#define PASS "widen_f16"

static bool widenable(const rlx_node *n) {
    if (n->op == RLX_OP_rlx_MatMulNBits) return true; /* A and Y f32 or f16, the sum f32 either way */
    if (!n->def || (n->domain && *n->domain)) return false;
    rlx_op_id op = n->op;
    bool fam = (op >= RLX_OPS_FIRST_elementwise && op < RLX_OPS_FIRST_control) ||
               (op >= RLX_OPS_FIRST_rnn && op < RLX_OPS_FIRST_string);
    if (!fam) return false;
    switch (op) {
    case RLX_OP_CastLike: case RLX_OP_Constant: case RLX_OP_ConstantOfShape: case RLX_OP_EyeLike:
    case RLX_OP_Range: case RLX_OP_OneHot:
        return false;
    default:
        break;
    }
    for (int i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].g) return false;
    return true;
}

/* Ops that move or select elements without arithmetic (the tensor family
 * but CumSum, and Where): they follow their data. Widened only where an f16
 * input exists only as f32 already; otherwise they stay f16, bit for bit
 * (a Cast to f32 and back would quiet a signalling NaN), and a Shape of an
 * f16 input needs no Cast. */
static bool follows_data(const rlx_node *n) {
    return (n->op >= RLX_OPS_FIRST_tensor && n->op < RLX_OPS_FIRST_reduce && n->op != RLX_OP_CumSum) ||
           n->op == RLX_OP_Where;
}

typedef struct widen_ctx {
    rlx_graph *g;
    size_t n0;        /* values before the pass */
    int *wide;        /* per original value: its f32 version, or -1 */
    int *narrow;      /* per original value: its f16 version, or -1 */
    bool *f16;        /* the value was f16 when the pass began */
    int casts;        /* Cast nodes added */
} widen_ctx;

/* A new value shaped like v, of dtype dt. */
static rlx_status new_like(rlx_graph *g, int v, rlx_dtype dt, int *out) {
    RLX_TRY(rlx_graph_add_value(g, NULL, out));
    rlx_value *src = &g->values[v], *dst = &g->values[*out];
    rlx_value_set_shape(dst, src->rank, src->dims, src->syms);
    dst->dtype = dt;
    return RLX_OK;
}

/* Appends Cast(from) -> to, of dtype dt (the pass sorts the nodes at the end),
 * named '<v>/widen_f16' after the model's value v it converts, so that a
 * message about it (limits.max_tensor_bytes on a widened copy) names a
 * value of the model and the pass, not a generated 'Cast_N'. */
static rlx_status add_cast(widen_ctx *c, int v, int from, int to, rlx_dtype dt) {
    rlx_node_attr a[1];
    RLX_TRY(rlx_node_attr_set_int(&a[0], "to", dt));
    int id; /* the node adopts a, and frees it on failure */
    /* a Cast whose to is an INT is Cast-6 or later (Cast-1's is a STRING):
     * versions are resolved when a node is added, so the graph's opset is
     * raised for this one in a model older than 6 */
    int64_t opset = c->g->opset;
    if (opset < 6) c->g->opset = 6;
    char name[300];
    const char *vn = c->g->values[v].name;
    snprintf(name, sizeof name, "%s/widen_f16", vn && *vn ? vn : "value");
    rlx_status st = rlx_graph_add_node(c->g, "Cast", "", name, &from, 1, &to, 1, a, 1, &id);
    c->g->opset = opset;
    RLX_TRY(st);
    c->casts++;
    return RLX_OK;
}

/* The f32 version of original f16 value v: a converted constant, or a Cast. */
static rlx_status get_wide(widen_ctx *c, int v, int *out) {
    if (c->wide[v] < 0) {
        rlx_graph *g = c->g;
        int w;
        if (g->values[v].konst) {
            const rlx_tensor *k = g->values[v].konst;
            rlx_tensor *t;
            RLX_TRY(rlx_tensor_create(RLX_DTYPE_F32, k->dims, k->rank, &t));
            size_t n = rlx_value_numel(&g->values[v]);
            const uint16_t *h = k->data;
            float *f = t->data;
            for (size_t i = 0; i < n; i++) f[i] = rlx_f16_to_f32(h[i]);
            RLX_TRY(rlx_graph_add_konst(g, NULL, t, &w));
        } else {
            RLX_TRY(new_like(g, v, RLX_DTYPE_F32, &w));
            RLX_TRY(add_cast(c, v, c->narrow[v], w, RLX_DTYPE_F32));
        }
        c->wide[v] = w;
    }
    *out = c->wide[v];
    return RLX_OK;
}

/* The f16 version of original f16 value v (a Cast of its f32 version). */
static rlx_status get_narrow(widen_ctx *c, int v, int *out) {
    if (c->narrow[v] < 0) {
        int h;
        RLX_TRY(new_like(c->g, v, RLX_DTYPE_F16, &h));
        RLX_TRY(add_cast(c, v, c->wide[v], h, RLX_DTYPE_F16));
        c->narrow[v] = h;
    }
    *out = c->narrow[v];
    return RLX_OK;
}

static bool is_f16(const widen_ctx *c, int v) { return v >= 0 && (size_t)v < c->n0 && c->f16[v]; }

/* Node ni computes in f32: f16 inputs read their f32 versions, f16 outputs
 * become f32 (a graph output gets a new f32 value and a Cast to itself). */
static rlx_status widen_node(widen_ctx *c, size_t ni) {
    rlx_graph *g = c->g;
    for (int i = 0; i < g->nodes[ni].n_in; i++) {
        int v = g->nodes[ni].in[i];
        if (!is_f16(c, v)) continue;
        int w;
        RLX_TRY(get_wide(c, v, &w));
        g->nodes[ni].in[i] = w;
    }
    for (int i = 0; i < g->nodes[ni].n_out; i++) {
        int v = g->nodes[ni].out[i];
        if (!is_f16(c, v)) continue;
        if (rlx_fuse_is_output(g, v)) {
            int w;
            RLX_TRY(new_like(g, v, RLX_DTYPE_F32, &w));
            g->nodes[ni].out[i] = w;
            g->values[w].producer = (int)ni;
            g->values[v].producer = -1; /* the Cast's now */
            c->wide[v] = w;
            RLX_TRY(add_cast(c, v, w, v, RLX_DTYPE_F16));
        } else {
            g->values[v].dtype = RLX_DTYPE_F32;
            c->wide[v] = v;
            c->narrow[v] = -1;
        }
    }
    return RLX_OK;
}

/* Node ni stays as it is: its f16 inputs read their f16 versions. */
static rlx_status keep_node(widen_ctx *c, size_t ni) {
    for (int i = 0; i < c->g->nodes[ni].n_in; i++) {
        int v = c->g->nodes[ni].in[i];
        if (!is_f16(c, v)) continue;
        int h;
        RLX_TRY(get_narrow(c, v, &h));
        c->g->nodes[ni].in[i] = h;
    }
    return RLX_OK;
}

/* Some f16 input of node n exists only as f32 (a widened node's result). */
static bool reads_wide(const widen_ctx *c, const rlx_node *n) {
    for (int i = 0; i < n->n_in; i++)
        if (is_f16(c, n->in[i]) && c->narrow[n->in[i]] < 0) return true;
    return false;
}

static rlx_status widen(widen_ctx *c, size_t n_nodes, int *widened) {
    rlx_graph *g = c->g;
    for (size_t ni = 0; ni < n_nodes; ni++) {
        rlx_node *n = &g->nodes[ni];
        if (n->dead) continue;
        bool touches = false;
        for (int i = 0; i < n->n_in; i++) touches |= is_f16(c, n->in[i]);
        for (int i = 0; i < n->n_out; i++) touches |= is_f16(c, n->out[i]);
        if (!touches) continue;
        if (n->op == RLX_OP_Cast && n->n_in == 1 && n->n_out == 1) {
            int x = n->in[0], y = n->out[0];
            bool from16 = is_f16(c, x), to16 = is_f16(c, y);
            if (from16 && to16) { /* a no-op: y is x */
                RLX_TRY(keep_node(c, ni));
                continue;
            }
            if (to16) { /* rounds to binary16: stays, readers widen its result */
                continue;
            }
            if (g->values[y].dtype == RLX_DTYPE_F32 && c->wide[x] < 0 && !g->values[x].konst) {
                c->wide[x] = y; /* x stays f16 (an input, a kept node's): this is its widening */
                (*widened)++;
                continue;
            }
            /* from f16 to another type: reads the f32 value (to f32: a copy,
             * or nothing where y is no graph output) */
            int w;
            RLX_TRY(get_wide(c, x, &w));
            n = &g->nodes[ni];
            if (g->values[y].dtype == RLX_DTYPE_F32 && !rlx_fuse_is_output(g, y)) {
                n->dead = true;
                g->values[y].producer = -1;
                rlx_fuse_replace_uses(g, y, w);
            } else {
                n->in[0] = w;
            }
            (*widened)++;
            continue;
        }
        if (widenable(n) && (!follows_data(n) || reads_wide(c, n))) {
            RLX_TRY(widen_node(c, ni));
            (*widened)++;
        } else {
            RLX_TRY(keep_node(c, ni));
        }
    }
    return RLX_OK;
}

rlx_status rlx_pass_widen_f16(rlx_graph *g, rlx_pass_stats *stats) {
    if (!stats || !stats->cpu_target) return RLX_OK;
    bool any16 = false;
    for (size_t v = 0; v < g->n_values; v++) any16 |= g->values[v].dtype == RLX_DTYPE_F16;
    if (!any16) return RLX_OK;
    for (size_t ni = 0; ni < g->n_nodes; ni++)
        for (int i = 0; i < g->nodes[ni].n_attrs; i++)
            if (g->nodes[ni].attrs[i].g) return RLX_OK; /* subgraphs name outer values */
    widen_ctx c = { .g = g, .n0 = g->n_values };
    c.wide = malloc(c.n0 * sizeof *c.wide);
    c.narrow = malloc(c.n0 * sizeof *c.narrow);
    c.f16 = malloc(c.n0 * sizeof *c.f16);
    rlx_status st = RLX_OK;
    if (!c.wide || !c.narrow || !c.f16) {
        st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, PASS ": %zu values", c.n0);
        goto done;
    }
    for (size_t v = 0; v < c.n0; v++) {
        c.f16[v] = g->values[v].dtype == RLX_DTYPE_F16 && !(g->values[v].flags & RLX_VALUE_OUTER);
        c.wide[v] = -1;
        c.narrow[v] = (int)v;
    }
    int widened = 0;
    st = widen(&c, g->n_nodes, &widened);
    if (st) goto done;
    if (rlx_fuse_reporting()) {
        rlx_log(RLX_LOG_DEBUG, "fusion: " PASS ": %d nodes with f16 values compute in f32, %d Casts added", widened,
                c.casts);
    }
    /* an f16 constant that only widened nodes read is dropped (its f32 copy
     * replaces it; a model's weight is borrowed, so this frees nothing of
     * the model's) */
    int *uses = calloc(g->n_values, sizeof *uses);
    if (!uses) {
        st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, PASS ": %zu values", g->n_values);
        goto done;
    }
    rlx_graph_count_uses(g, uses);
    for (size_t v = 0; v < c.n0; v++) {
        rlx_value *val = &g->values[v];
        if (!c.f16[v] || !val->konst || c.wide[v] == (int)v || uses[v]) continue;
        if (!(val->flags & RLX_VALUE_KONST_BORROWED)) rlx_tensor_destroy(val->konst);
        val->konst = NULL;
        val->flags &= ~(uint32_t)RLX_VALUE_KONST_BORROWED;
    }
    free(uses);
    /* the Casts were appended: restore the order, infer their outputs */
    rlx_graph_compact(g);
    st = rlx_pass_verify(g);
    if (!st) st = rlx_pass_infer(g);
done:
    free(c.wide);
    free(c.narrow);
    free(c.f16);
    return st;
}
