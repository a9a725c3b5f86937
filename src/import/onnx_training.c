/* import/onnx_training.c — the ops of domain ai.onnx.preview.training
 * (version 1), expanded at import time into default-domain nodes: Gradient
 * by reverse-mode automatic differentiation; the optimizers Adagrad, Adam
 * and Momentum by their update formulas (elementwise, numpy broadcasting).
 *
 * Why at import and not as a pass: the operator names its sub-graph by
 * value names (attributes xs, zs, y), which only the file gives meaning to,
 * and it must see the forward nodes before constant folding could turn a
 * path from an initializer in xs into a constant (losing the derivative).
 * Expanded here, the rest of rlx never sees a Gradient node: verify, shape
 * inference, folding, fusion and both backends treat the adjoint nodes like
 * any other.
 *
 * One expansion:
 *  1. the ancestors of y, of xs, zs and of the node's inputs are inferred in
 *     topological order (the importer has not run shape inference yet);
 *  2. the nodes on the path (ancestors of y, walking back no further than
 *     xs and zs) are re-evaluated where the node's inputs differ from the
 *     named values (the operator evaluates its sub-graph at its inputs);
 *  3. values that depend on xs through floating-point values are "active";
 *  4. walking the path backwards from y, seeded with ones of y's shape,
 *     each node with an active input and an output adjoint adds the nodes
 *     of its vector-Jacobian product, summed per value;
 *  5. output i becomes Identity(adjoint of xs[i]), or zeros of its shape.
 * Broadcast operands get their adjoint summed over the broadcast axes
 * (ReduceSum, keepdims) and reshaped to their shape. Nodes are emitted for
 * the graph's opset (ReduceSum and Unsqueeze take axes as an attribute
 * before opset 13, as an input from 13). */
#include "import/onnx_training.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/status.h"
#include "ir/op.h"
#include "ir/ops/ops.h"
#include "ir/ops/reduce_geom.h"
#include "rlx/half.h"

#define GRAD_DOMAIN "ai.onnx.preview.training"

bool rlx_onnx_is_training_op(const Onnx__NodeProto *np) {
    if (!np || !np->domain || strcmp(np->domain, GRAD_DOMAIN) != 0 || !np->op_type) return false;
    return !strcmp(np->op_type, "Gradient") || !strcmp(np->op_type, "Adagrad") || !strcmp(np->op_type, "Adam") ||
           !strcmp(np->op_type, "Momentum");
}

bool rlx_onnx_training_only(const Onnx__ModelProto *mp) {
    if (!mp->n_opset_import || !mp->opset_import) return false;
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *os = mp->opset_import[i];
        if (!os || !os->domain || strcmp(os->domain, GRAD_DOMAIN) != 0) return false;
    }
    return true;
}

/* ------------------------------------------------------------ emission */

typedef struct gctx {
    rlx_graph *g;
    char label[320];  /* "node 'g' (ai.onnx.preview.training.Gradient)" */
    char prefix[200]; /* name prefix of the emitted nodes */
    unsigned counter;
    size_t nv0;   /* values before the expansion: the maps cover these */
    int *fwd;     /* value at which each original value is evaluated */
    int *adj;     /* adjoint of each original value, or -1 */
    bool *active; /* depends on xs through floating-point values */
} gctx;

static void free_attrs(rlx_node_attr *attrs, int n) {
    for (int i = 0; i < n; i++) rlx_node_attr_free(&attrs[i]);
}

/* Adds op(in) writing the existing values out[0..n_out) and infers it.
 * attrs are adopted. */
static rlx_status emit_to(gctx *c, const char *op, const int *in, int n_in, rlx_node_attr *attrs, int n_attrs,
                          const int *out, int n_out) {
    char name[256];
    snprintf(name, sizeof name, "%s/%s_%u", c->prefix, op, c->counter++);
    int nid;
    /* a Cast whose to is an INT is Cast-6 or later (Cast-1's is a STRING):
     * the graph's opset is raised for it in a model older than 6 */
    int64_t opset = c->g->opset;
    if (strcmp(op, "Cast") == 0 && opset < 6) c->g->opset = 6;
    rlx_status st = rlx_graph_add_node(c->g, op, "", name, in, n_in, out, n_out, attrs, n_attrs, &nid);
    c->g->opset = opset;
    RLX_TRY(st);
    return rlx_infer_node(c->g, nid);
}

/* Adds op(in) with one new output value, *out its id. attrs are adopted. */
static rlx_status emit(gctx *c, const char *op, const int *in, int n_in, rlx_node_attr *attrs, int n_attrs,
                       int *out) {
    int id;
    rlx_status st = rlx_graph_add_value(c->g, NULL, &id);
    if (st) {
        free_attrs(attrs, n_attrs);
        return st;
    }
    RLX_TRY(emit_to(c, op, in, n_in, attrs, n_attrs, &id, 1));
    *out = id;
    return RLX_OK;
}

static rlx_status op1(gctx *c, const char *op, int a, int *out) { return emit(c, op, &a, 1, NULL, 0, out); }

static rlx_status op2(gctx *c, const char *op, int a, int b, int *out) {
    int in[2] = { a, b };
    return emit(c, op, in, 2, NULL, 0, out);
}

/* A 1-D int64 constant. */
static rlx_status k_i64(gctx *c, const int64_t *v, size_t n, int *out) {
    return rlx_graph_add_konst_i64s(c->g, NULL, v, n, out);
}

/* A constant of dtype dt and the given static shape, every element v. */
static rlx_status k_fill(gctx *c, rlx_dtype dt, int rank, const int64_t *dims, double v, int *out) {
    if (!rlx_dtype_is_float(dt))
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: gradients of %s tensors are not supported", c->label,
                        rlx_dtype_name(dt));
    rlx_tensor *t;
    RLX_TRY(rlx_tensor_create(dt, dims, rank, &t));
    size_t n = rlx_tensor_numel(t);
    for (size_t i = 0; i < n; i++) {
        switch (dt) {
        case RLX_DTYPE_F32: ((float *)t->data)[i] = (float)v; break;
        case RLX_DTYPE_F64: ((double *)t->data)[i] = v; break;
        case RLX_DTYPE_F16: ((uint16_t *)t->data)[i] = rlx_f32_to_f16((float)v); break;
        default: ((uint16_t *)t->data)[i] = rlx_f32_to_bf16((float)v); break;
        }
    }
    return rlx_graph_add_konst(c->g, NULL, t, out);
}

static rlx_status k_scalar(gctx *c, rlx_dtype dt, double v, int *out) { return k_fill(c, dt, 0, NULL, v, out); }

/* The shape of x as an int64 vector: a constant when x is static. */
static rlx_status shape_of(gctx *c, int x, int *out) {
    const rlx_value *v = &c->g->values[x];
    if (v->rank >= 0 && rlx_value_is_static(v)) {
        int64_t dims[RLX_MAX_RANK];
        memcpy(dims, v->dims, (size_t)v->rank * sizeof(int64_t));
        return k_i64(c, dims, (size_t)v->rank, out);
    }
    return op1(c, "Shape", x, out);
}

/* Gives value v the shape of x where inference of a node that takes x's
 * shape at run time (Expand, Reshape to Shape(x)) left dims unknown: the
 * symbols of x's dims are what later broadcast decisions compare. */
static void adopt_shape(gctx *c, int v, int x) {
    rlx_value *vv = &c->g->values[v];
    const rlx_value *xv = &c->g->values[x];
    if (xv->rank >= 0 && (vv->rank < 0 || vv->rank == xv->rank))
        rlx_value_set_shape(vv, xv->rank, xv->dims, xv->syms);
}

/* A tensor of x's dtype and shape filled with v. */
static rlx_status fill_like(gctx *c, int x, double v, int *out) {
    const rlx_value *xv = &c->g->values[x];
    rlx_dtype dt = xv->dtype;
    if (xv->rank >= 0 && rlx_value_is_static(xv)) {
        int64_t dims[RLX_MAX_RANK];
        int rank = xv->rank;
        memcpy(dims, xv->dims, (size_t)rank * sizeof(int64_t));
        return k_fill(c, dt, rank, dims, v, out);
    }
    int s, k;
    RLX_TRY(k_scalar(c, dt, v, &k));
    RLX_TRY(shape_of(c, x, &s));
    RLX_TRY(op2(c, "Expand", k, s, out));
    adopt_shape(c, *out, x);
    return RLX_OK;
}

/* Records that the lowering relied on two dims of one symbol being equal:
 * the session then binds each symbol to one size (rlx_graph). */
static void assume_syms_equal(rlx_graph *g) {
    while (g->parent) g = g->parent;
    g->syms_equal_assumed = true;
}

/* Two shapes known to be equal (static and equal, or the same symbols). */
static bool same_shape(rlx_graph *g, const rlx_value *a, const rlx_value *b) {
    if (a->rank < 0 || a->rank != b->rank) return false;
    bool by_sym = false;
    for (int i = 0; i < a->rank; i++) {
        if (a->dims[i] >= 0 ? a->dims[i] != b->dims[i] : (b->dims[i] >= 0 || a->syms[i] < 0 || a->syms[i] != b->syms[i]))
            return false;
        by_sym |= a->dims[i] < 0;
    }
    if (by_sym) assume_syms_equal(g);
    return true;
}

/* v with x's shape (same element count). */
static rlx_status reshape_like(gctx *c, int v, int x, int *out) {
    if (same_shape(c->g, &c->g->values[v], &c->g->values[x])) {
        *out = v;
        return RLX_OK;
    }
    int s;
    RLX_TRY(shape_of(c, x, &s));
    RLX_TRY(op2(c, "Reshape", v, s, out));
    adopt_shape(c, *out, x);
    return RLX_OK;
}

/* Unsqueeze(v) at the sorted non-negative axes (of the output). */
static rlx_status unsqueeze(gctx *c, int v, const int64_t *axes, size_t n, int *out) {
    if (c->g->opset >= 13) {
        int k;
        RLX_TRY(k_i64(c, axes, n, &k));
        return op2(c, "Unsqueeze", v, k, out);
    }
    rlx_node_attr a;
    RLX_TRY(rlx_node_attr_set_ints(&a, "axes", axes, n));
    return emit(c, "Unsqueeze", &v, 1, &a, 1, out);
}

/* ReduceSum(v) over axes (non-negative); n == 0 leaves v as it is. */
static rlx_status reduce_sum(gctx *c, int v, const int64_t *axes, size_t n, bool keepdims, int *out) {
    if (!n) {
        *out = v;
        return RLX_OK;
    }
    rlx_node_attr a[2];
    RLX_TRY(rlx_node_attr_set_int(&a[0], "keepdims", keepdims));
    if (c->g->opset >= 13) {
        int k, in[2];
        rlx_status st = k_i64(c, axes, n, &k);
        if (st) {
            free_attrs(a, 1);
            return st;
        }
        in[0] = v;
        in[1] = k;
        return emit(c, "ReduceSum", in, 2, a, 1, out);
    }
    rlx_status st = rlx_node_attr_set_ints(&a[1], "axes", axes, n);
    if (st) {
        free_attrs(a, 1);
        return st;
    }
    return emit(c, "ReduceSum", &v, 1, a, 2, out);
}

static rlx_status transpose(gctx *c, int v, const int64_t *perm, int rank, int *out) {
    rlx_node_attr a;
    RLX_TRY(rlx_node_attr_set_ints(&a, "perm", perm, (size_t)rank));
    return emit(c, "Transpose", &v, 1, &a, 1, out);
}

/* v with its last two axes swapped (rank >= 2). */
static rlx_status swap_last2(gctx *c, int v, int *out) {
    int r = c->g->values[v].rank;
    if (r < 2) return rlx_fail(RLX_ERR_INTERNAL, "%s: transpose of rank %d", c->label, r);
    int64_t perm[RLX_MAX_RANK];
    for (int i = 0; i < r; i++) perm[i] = i;
    perm[r - 2] = r - 1;
    perm[r - 1] = r - 2;
    return transpose(c, v, perm, r, out);
}

static rlx_status scale(gctx *c, int v, double k, int *out) {
    if (k == 1.0) {
        *out = v;
        return RLX_OK;
    }
    int s;
    RLX_TRY(k_scalar(c, c->g->values[v].dtype, k, &s));
    return op2(c, "Mul", v, s, out);
}

/* The adjoint v of a broadcast result, summed back to x's shape: over the
 * leading axes x lacks and the axes where x has 1 and v does not. */
static rlx_status sum_to(gctx *c, int v, int x, int *out) {
    const rlx_value *vv = &c->g->values[v], *xv = &c->g->values[x];
    int rv = vv->rank, rx = xv->rank;
    if (rv < 0 || rx < 0)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: the rank of '%s' is not known, so its gradient cannot be reduced to its shape",
                        c->label, xv->name);
    if (rx > rv)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: '%s' (rank %d) has a higher rank than its adjoint (rank %d)", c->label,
                        xv->name, rx, rv);
    int64_t axes[RLX_MAX_RANK];
    size_t n = 0;
    for (int i = 0; i < rv - rx; i++) axes[n++] = i;
    for (int j = 0; j < rx; j++) {
        int i = j + rv - rx;
        int64_t dx = xv->dims[j], dv = vv->dims[i];
        bool reduce;
        if (dx == 1) reduce = dv != 1;
        else if (dx >= 0) reduce = false; /* equal to dv after broadcasting */
        else if (dv == 1) reduce = false;
        else if (dv < 0 && vv->syms[i] >= 0 && vv->syms[i] == xv->syms[j]) {
            reduce = false;
            assume_syms_equal(c->g);
        }
        else
            return rlx_fail(RLX_ERR_UNSUPPORTED,
                            "%s: cannot tell whether axis %d of '%s' is broadcast (its size is dynamic); give the "
                            "model static shapes", c->label, j, xv->name);
        if (reduce) axes[n++] = i;
    }
    int r;
    RLX_TRY(reduce_sum(c, v, axes, n, true, &r));
    return reshape_like(c, r, x, out);
}

/* adj[orig] += contribution. */
static rlx_status accumulate(gctx *c, int orig, int contrib) {
    if (orig < 0 || (size_t)orig >= c->nv0) return rlx_fail(RLX_ERR_INTERNAL, "%s: adjoint of a new value", c->label);
    if (c->adj[orig] < 0) {
        c->adj[orig] = contrib;
        return RLX_OK;
    }
    return op2(c, "Add", c->adj[orig], contrib, &c->adj[orig]);
}

/* adj[orig] += t summed back to the shape of x (sum_to). */
static rlx_status adjoin(gctx *c, int orig, int t, int x) {
    int d;
    RLX_TRY(sum_to(c, t, x, &d));
    return accumulate(c, orig, d);
}

/* v as dtype dt (v itself when it has it). */
static rlx_status cast_to(gctx *c, int v, rlx_dtype dt, int *out) {
    if (c->g->values[v].dtype == dt) {
        *out = v;
        return RLX_OK;
    }
    rlx_node_attr a;
    RLX_TRY(rlx_node_attr_set_int(&a, "to", dt));
    return emit(c, "Cast", &v, 1, &a, 1, out);
}

/* ------------------------------------------------------------ adjoints */

/* Whether input i of node n is active. */
static bool in_active(const gctx *c, const rlx_node *n, int i) {
    return i < n->n_in && n->in[i] >= 0 && c->active[n->in[i]];
}

/* One MatMul operand's adjoint into value `into`: l^T r (tl) or l r^T,
 * summed to the shape of x2 (what the operand became: batch axes
 * broadcast) and reshaped like the forward operand x. */
static rlx_status matmul_operand_grad(gctx *c, int l, int r, bool tl, int x2, int x, int into) {
    int p, s, d;
    if (tl) RLX_TRY(swap_last2(c, l, &l));
    else RLX_TRY(swap_last2(c, r, &r));
    RLX_TRY(op2(c, "MatMul", l, r, &p));
    RLX_TRY(sum_to(c, p, x2, &s));
    RLX_TRY(reshape_like(c, s, x, &d));
    return accumulate(c, into, d);
}

/* Adjoints of MatMul(A, B) = Y (ONNX MatMul-13, numpy matmul: 1-D operands
 * get a unit axis, batch axes broadcast). */
static rlx_status grad_matmul(gctx *c, int ia, int ib, int G, bool need_a, bool need_b) {
    int A = c->fwd[ia], B = c->fwd[ib];
    int ra = c->g->values[A].rank, rb = c->g->values[B].rank;
    if (ra < 1 || rb < 1)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: MatMul operands of unknown rank", c->label);
    int d;
    if (ra == 1 && rb == 1) { /* dot product: G is a scalar */
        if (need_a) {
            RLX_TRY(op2(c, "Mul", G, B, &d));
            RLX_TRY(accumulate(c, ia, d));
        }
        if (need_b) {
            RLX_TRY(op2(c, "Mul", G, A, &d));
            RLX_TRY(accumulate(c, ib, d));
        }
        return RLX_OK;
    }
    int A2 = A, B2 = B, G2 = G;
    if (ra == 1) {
        int64_t ax0 = 0, axm = c->g->values[G2].rank - 1;
        RLX_TRY(unsqueeze(c, A, &ax0, 1, &A2));
        RLX_TRY(unsqueeze(c, G2, &axm, 1, &G2));
    }
    if (rb == 1) {
        int64_t ax1 = 1, axe = c->g->values[G2].rank;
        RLX_TRY(unsqueeze(c, B, &ax1, 1, &B2));
        RLX_TRY(unsqueeze(c, G2, &axe, 1, &G2));
    }
    if (need_a) RLX_TRY(matmul_operand_grad(c, G2, B2, false, A2, A, ia)); /* dA = G B^T */
    if (need_b) RLX_TRY(matmul_operand_grad(c, A2, G2, true, B2, B, ib)); /* dB = A^T G */
    return RLX_OK;
}

/* One Gemm operand's adjoint into value `into`: alpha * (l' r'), l' = l^T
 * when tl (r' likewise), transposed when tout. */
static rlx_status gemm_operand_grad(gctx *c, int l, bool tl, int r, bool tr, bool tout, double alpha, int into) {
    int p, q, d;
    if (tl) RLX_TRY(swap_last2(c, l, &l));
    if (tr) RLX_TRY(swap_last2(c, r, &r));
    RLX_TRY(op2(c, "MatMul", l, r, &p));
    q = p;
    if (tout) RLX_TRY(swap_last2(c, p, &q));
    RLX_TRY(scale(c, q, alpha, &d));
    return accumulate(c, into, d);
}

/* Adjoints of Gemm-13: Y = alpha * A' B' + beta * C, A' = transA ? A^T : A. */
static rlx_status grad_gemm(gctx *c, const rlx_node *n, int G) {
    int ia = n->in[0], ib = n->in[1], ic = n->n_in > 2 ? n->in[2] : -1;
    int A = c->fwd[ia], B = c->fwd[ib];
    bool ta = rlx_param_int(n, RLX_A_transA) != 0, tb = rlx_param_int(n, RLX_A_transB) != 0;
    double alpha = rlx_param_float(n, RLX_A_alpha), beta = rlx_param_float(n, RLX_A_beta);
    bool need_a = c->active[ia], need_b = c->active[ib], need_c = ic >= 0 && c->active[ic];
    /* dA' = G B'^T, dA = transA ? dA'^T : dA'; dB' = A'^T G likewise */
    if (need_a) RLX_TRY(gemm_operand_grad(c, G, false, B, !tb, ta, alpha, ia));
    if (need_b) RLX_TRY(gemm_operand_grad(c, A, !ta, G, false, tb, alpha, ib));
    if (need_c) {
        int p;
        RLX_TRY(scale(c, G, beta, &p));
        RLX_TRY(adjoin(c, ic, p, c->fwd[ic]));
    }
    return RLX_OK;
}

/* Adjoint of ReduceSum / ReduceMean: G (kept dims restored) expanded to X's
 * shape, divided by the reduced count for the mean. */
static rlx_status grad_reduce(gctx *c, const rlx_node *n, int G, bool mean) {
    int ix = n->in[0], X = c->fwd[ix], Y = c->fwd[n->out[0]];
    const rlx_value *xv = &c->g->values[X];
    int rank = xv->rank;
    if (rank < 0) return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: %s of unknown rank", c->label, rlx_node_desc(n));
    int64_t axes[RLX_REDUCE_MAX_AXES];
    size_t na = 0;
    if (rlx_reduce_axes_are_input(n)) {
        const rlx_value *av = rlx_node_input(c->g, n, 1);
        const rlx_value *fa = av ? &c->g->values[c->fwd[n->in[1]]] : NULL;
        if (fa && !fa->konst)
            return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: the axes input of %s is not constant", c->label,
                            rlx_node_desc(n));
        if (fa && !rlx_konst_ints(fa, axes, RLX_REDUCE_MAX_AXES, &na))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: the axes input has more than %d values", rlx_node_desc(n),
                            RLX_REDUCE_MAX_AXES);
    } else {
        const int64_t *at = rlx_param_ints(n, RLX_A_axes, &na);
        if (na > RLX_REDUCE_MAX_AXES)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute 'axes' has %zu values (at most %d)", rlx_node_desc(n),
                            na, RLX_REDUCE_MAX_AXES);
        if (na) memcpy(axes, at, na * sizeof *axes);
    }
    rlx_reduce_spec spec;
    RLX_TRY(rlx_reduce_resolve(n, rank, axes, na, RLX_ERR_INVALID_MODEL, &spec));
    int d;
    if (spec.n_axes == 0) return accumulate(c, ix, G); /* the identity */
    int kept = G, s, e;
    if (!spec.keepdims) {
        int64_t ax[RLX_MAX_RANK];
        size_t k = 0;
        for (int i = 0; i < rank; i++)
            if (spec.axis[i]) ax[k++] = i;
        RLX_TRY(unsqueeze(c, G, ax, k, &kept));
    }
    RLX_TRY(shape_of(c, X, &s));
    RLX_TRY(op2(c, "Expand", kept, s, &e));
    adopt_shape(c, e, X);
    d = e;
    if (mean) {
        xv = &c->g->values[X];
        bool known = true;
        double count = 1;
        for (int i = 0; i < rank; i++)
            if (spec.axis[i]) {
                if (xv->dims[i] < 0) known = false;
                else count *= (double)xv->dims[i];
            }
        if (known) {
            RLX_TRY(scale(c, e, count > 0 ? 1.0 / count : 0.0, &d));
        } else { /* size(Y) / size(X) */
            rlx_dtype dt = xv->dtype;
            int sy, sx, fy, fx, r;
            rlx_node_attr a;
            RLX_TRY(op1(c, "Size", Y, &sy));
            RLX_TRY(op1(c, "Size", X, &sx));
            RLX_TRY(rlx_node_attr_set_int(&a, "to", dt));
            RLX_TRY(emit(c, "Cast", &sy, 1, &a, 1, &fy));
            RLX_TRY(rlx_node_attr_set_int(&a, "to", dt));
            RLX_TRY(emit(c, "Cast", &sx, 1, &a, 1, &fx));
            RLX_TRY(op2(c, "Div", fy, fx, &r));
            RLX_TRY(op2(c, "Mul", e, r, &d));
        }
    }
    return accumulate(c, ix, d);
}

/* The axes a Softmax / LogSoftmax node normalises over: its axis from
 * version 13, that axis and all after it before (the 2-D coercion). */
static rlx_status softmax_axes(gctx *c, const rlx_node *n, int rank, int64_t *axes, size_t *na) {
    int64_t axis = rlx_softmax_axis(n);
    int a;
    if (rank < 0 || !rlx_norm_axis(axis, rank, &a))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: axis %lld is out of range for rank %d", rlx_node_desc(n),
                        (long long)axis, rank);
    *na = 0;
    for (int i = a; i < (n->version >= 13 ? a + 1 : rank); i++) axes[(*na)++] = i;
    return RLX_OK;
}

/* Adds the vector-Jacobian product of node `nid` (on the path, with an
 * active input and an output adjoint). */
static rlx_status backprop_node(gctx *c, int nid) {
    const rlx_node *n = &c->g->nodes[nid];
    const char *op = n->op_type;
    if (*n->domain) goto unsupported;
    int G = n->out[0] >= 0 ? c->adj[n->out[0]] : -1;
    for (int k = 1; k < n->n_out; k++)
        if (n->out[k] >= 0 && c->adj[n->out[k]] >= 0) goto unsupported;
    if (G < 0) return RLX_OK;
    int X = n->n_in > 0 && n->in[0] >= 0 ? c->fwd[n->in[0]] : -1;
    int Y = c->fwd[n->out[0]];
    int B = n->n_in > 1 && n->in[1] >= 0 ? c->fwd[n->in[1]] : -1;
    bool a0 = in_active(c, n, 0), a1 = in_active(c, n, 1);
    const int in0 = n->n_in > 0 ? n->in[0] : -1, in1 = n->n_in > 1 ? n->in[1] : -1;
    rlx_dtype dt = c->g->values[Y].dtype;
    /* emitting nodes moves c->g->nodes: n is not used past this point
     * except where it is fetched again */
    int t, u, d, k;

    if (!strcmp(op, "Add") || !strcmp(op, "Sub")) {
        if (a0) {
            RLX_TRY(adjoin(c, in0, G, X));
        }
        if (a1) {
            t = G;
            if (op[0] == 'S') RLX_TRY(op1(c, "Neg", G, &t));
            RLX_TRY(adjoin(c, in1, t, B));
        }
        return RLX_OK;
    }
    if (!strcmp(op, "Mul")) {
        if (a0) {
            RLX_TRY(op2(c, "Mul", G, B, &t));
            RLX_TRY(adjoin(c, in0, t, X));
        }
        if (a1) {
            RLX_TRY(op2(c, "Mul", G, X, &t));
            RLX_TRY(adjoin(c, in1, t, B));
        }
        return RLX_OK;
    }
    if (!strcmp(op, "Div")) { /* d/da = 1/b; d/db = -a/b^2 = -y/b */
        if (a0) {
            RLX_TRY(op2(c, "Div", G, B, &t));
            RLX_TRY(adjoin(c, in0, t, X));
        }
        if (a1) {
            RLX_TRY(op2(c, "Mul", G, Y, &t));
            RLX_TRY(op2(c, "Div", t, B, &u));
            RLX_TRY(op1(c, "Neg", u, &t));
            RLX_TRY(adjoin(c, in1, t, B));
        }
        return RLX_OK;
    }
    if (!strcmp(op, "Pow")) { /* d/dx = e x^(e-1); d/de = y ln x */
        if (a0) {
            int E;
            RLX_TRY(cast_to(c, B, dt, &E));
            int one, em1, p;
            RLX_TRY(k_scalar(c, dt, 1.0, &one));
            RLX_TRY(op2(c, "Sub", E, one, &em1));
            RLX_TRY(op2(c, "Pow", X, em1, &p));
            RLX_TRY(op2(c, "Mul", p, E, &t));
            RLX_TRY(op2(c, "Mul", G, t, &u));
            RLX_TRY(adjoin(c, in0, u, X));
        }
        if (a1) {
            int l;
            RLX_TRY(op1(c, "Log", X, &l));
            RLX_TRY(op2(c, "Mul", Y, l, &t));
            RLX_TRY(op2(c, "Mul", G, t, &u));
            RLX_TRY(adjoin(c, in1, u, B));
        }
        return RLX_OK;
    }
    if (!strcmp(op, "Sum")) {
        for (int i = 0; i < n->n_in; i++) {
            if (!in_active(c, n, i)) continue;
            int vi = n->in[i];
            RLX_TRY(adjoin(c, vi, G, c->fwd[vi]));
            n = &c->g->nodes[nid];
        }
        return RLX_OK;
    }
    if (!strcmp(op, "MatMul")) return grad_matmul(c, in0, in1, G, a0, a1);
    if (!strcmp(op, "Gemm")) return grad_gemm(c, n, G);
    if (!strcmp(op, "ReduceSum") || !strcmp(op, "ReduceMean")) return grad_reduce(c, n, G, op[6] == 'M');

    /* unary ops: only input 0 carries a gradient */
    if (!a0) goto unsupported;
    int ix = in0;
    if (!strcmp(op, "Identity")) {
        d = G;
    } else if (!strcmp(op, "Neg")) {
        RLX_TRY(op1(c, "Neg", G, &d));
    } else if (!strcmp(op, "Reshape") || !strcmp(op, "Flatten") || !strcmp(op, "Squeeze") ||
               !strcmp(op, "Unsqueeze")) {
        RLX_TRY(reshape_like(c, G, X, &d));
    } else if (!strcmp(op, "Transpose")) {
        int r = c->g->values[X].rank;
        size_t np = 0;
        const int64_t *perm = rlx_param_ints(n, RLX_A_perm, &np);
        if (r < 0 || (perm && np != (size_t)r))
            return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: %s has an unknown rank or a bad perm", c->label,
                            rlx_node_desc(n));
        int64_t inv[RLX_MAX_RANK];
        for (int i = 0; i < r; i++) inv[i] = -1;
        for (int i = 0; i < r; i++) {
            int64_t p = perm ? perm[i] : r - 1 - i;
            if (p < 0 || p >= r || inv[p] >= 0)
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: perm is not a permutation", rlx_node_desc(n));
            inv[p] = i;
        }
        RLX_TRY(transpose(c, G, inv, r, &d));
    } else if (!strcmp(op, "Relu")) { /* G where x > 0, else 0 */
        int z, m, in3[3];
        RLX_TRY(k_scalar(c, dt, 0.0, &z));
        RLX_TRY(op2(c, "Greater", X, z, &m));
        in3[0] = m;
        in3[1] = G;
        in3[2] = z;
        RLX_TRY(emit(c, "Where", in3, 3, NULL, 0, &d));
    } else if (!strcmp(op, "Sigmoid")) { /* G y (1 - y) */
        RLX_TRY(k_scalar(c, dt, 1.0, &k));
        RLX_TRY(op2(c, "Sub", k, Y, &t));
        RLX_TRY(op2(c, "Mul", Y, t, &u));
        RLX_TRY(op2(c, "Mul", G, u, &d));
    } else if (!strcmp(op, "Tanh")) { /* G (1 - y^2) */
        RLX_TRY(k_scalar(c, dt, 1.0, &k));
        RLX_TRY(op2(c, "Mul", Y, Y, &t));
        RLX_TRY(op2(c, "Sub", k, t, &u));
        RLX_TRY(op2(c, "Mul", G, u, &d));
    } else if (!strcmp(op, "Exp")) {
        RLX_TRY(op2(c, "Mul", G, Y, &d));
    } else if (!strcmp(op, "Log")) {
        RLX_TRY(op2(c, "Div", G, X, &d));
    } else if (!strcmp(op, "Sqrt")) { /* G / (2 y) */
        RLX_TRY(scale(c, Y, 2.0, &t));
        RLX_TRY(op2(c, "Div", G, t, &d));
    } else if (!strcmp(op, "Softmax") || !strcmp(op, "LogSoftmax")) {
        int64_t axes[RLX_MAX_RANK];
        size_t na = 0;
        RLX_TRY(softmax_axes(c, n, c->g->values[X].rank, axes, &na));
        int s;
        if (op[0] == 'S') { /* y (G - sum(G y)) */
            RLX_TRY(op2(c, "Mul", G, Y, &t));
            RLX_TRY(reduce_sum(c, t, axes, na, true, &s));
            RLX_TRY(op2(c, "Sub", G, s, &u));
            RLX_TRY(op2(c, "Mul", Y, u, &d));
        } else { /* G - exp(y) sum(G) */
            RLX_TRY(reduce_sum(c, G, axes, na, true, &s));
            RLX_TRY(op1(c, "Exp", Y, &t));
            RLX_TRY(op2(c, "Mul", t, s, &u));
            RLX_TRY(op2(c, "Sub", G, u, &d));
        }
    } else {
        goto unsupported;
    }
    return accumulate(c, ix, d);

unsupported:
    n = &c->g->nodes[nid];
    return rlx_fail(RLX_ERR_UNSUPPORTED,
                    "%s: cannot differentiate through %s, which lies on the path from xs to y: rlx's Gradient "
                    "supports Add, Sub, Mul, Div, Pow, Neg, Identity, Relu, Sigmoid, Tanh, Exp, Log, Sqrt, MatMul, "
                    "Gemm, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Sum, ReduceSum, ReduceMean, Softmax and "
                    "LogSoftmax",
                    c->label, rlx_node_desc(n));
}

/* ------------------------------------------------------------ one node */

typedef struct gnode {
    char **xs, **zs, *y;
    size_t nx, nz;
    int *in;  /* nx + nz value ids */
    int *out; /* n_out ids, -1 for omitted outputs */
    size_t n_out;
} gnode;

static void gnode_free(gnode *gn) {
    for (size_t i = 0; i < gn->nx; i++) free(gn->xs[i]);
    for (size_t i = 0; i < gn->nz; i++) free(gn->zs[i]);
    free(gn->xs);
    free(gn->zs);
    free(gn->y);
    free(gn->in);
    free(gn->out);
}

static rlx_status read_strings(const char *label, const Onnx__AttributeProto *ap, char ***out, size_t *n) {
    if (ap->n_strings && !ap->strings) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' is malformed", label, ap->name);
    *out = calloc(ap->n_strings + 1, sizeof(char *));
    if (!*out) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < ap->n_strings; i++) {
        const ProtobufCBinaryData *b = &ap->strings[i];
        if (b->len && !b->data) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' is malformed", label, ap->name);
        if (!((*out)[i] = rlx_strndup(b->len ? (const char *)b->data : "", b->len)))
            return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        (*n)++;
    }
    return RLX_OK;
}

/* Reads the attributes, inputs and outputs of a Gradient node. */
static rlx_status gnode_read(rlx_graph *g, const Onnx__NodeProto *np, const char *label, gnode *gn) {
    bool have_xs = false;
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *ap = np->attribute ? np->attribute[i] : NULL;
        if (!ap || !ap->name) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: an attribute has no name", label);
        if (!strcmp(ap->name, "xs") || !strcmp(ap->name, "zs")) {
            bool x = ap->name[0] == 'x';
            if ((x ? gn->xs : gn->zs) != NULL)
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' appears twice", label, ap->name);
            if (ap->has_type && ap->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS)
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' must be a list of strings", label, ap->name);
            RLX_TRY(read_strings(label, ap, x ? &gn->xs : &gn->zs, x ? &gn->nx : &gn->nz));
            have_xs |= x;
        } else if (!strcmp(ap->name, "y")) {
            if (gn->y) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute 'y' appears twice", label);
            if ((ap->has_type && ap->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING) || !ap->has_s ||
                (ap->s.len && !ap->s.data))
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute 'y' must be a string", label);
            if (!(gn->y = rlx_strndup(ap->s.len ? (const char *)ap->s.data : "", ap->s.len)))
                return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        }
    }
    if (!have_xs || !gn->nx) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute 'xs' is missing or empty", label);
    if (!gn->y || !*gn->y) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute 'y' is missing", label);
    if (np->n_input != gn->nx + gn->nz || (np->n_input && !np->input))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: has %zu inputs, but xs and zs name %zu tensors", label,
                        np->n_input, gn->nx + gn->nz);
    if (np->n_output > gn->nx || (np->n_output && !np->output))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: has %zu outputs, but xs names %zu tensors", label, np->n_output,
                        gn->nx);
    gn->in = calloc(np->n_input + 1, sizeof(int));
    gn->out = calloc(np->n_output + 1, sizeof(int));
    if (!gn->in || !gn->out) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < np->n_input; i++) {
        const char *nm = np->input[i];
        gn->in[i] = (nm && *nm) ? rlx_graph_find(g, nm) : -1;
        if (gn->in[i] < 0)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input %zu ('%s') is not defined", label, i, nm ? nm : "");
    }
    gn->n_out = np->n_output;
    for (size_t i = 0; i < np->n_output; i++) {
        const char *nm = np->output[i];
        gn->out[i] = (nm && *nm) ? rlx_graph_find(g, nm) : -1;
    }
    return RLX_OK;
}

static rlx_status find_named(rlx_graph *g, const char *label, const char *attr, const char *name, int *id) {
    *id = rlx_graph_find(g, name);
    if (*id < 0)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: '%s' (in attribute %s) is not a value of the graph", label, name,
                        attr);
    return RLX_OK;
}

/* A value that nothing defines yet: the output of a Gradient node not
 * expanded so far. */
static bool undefined(const rlx_value *v) {
    return v->producer < 0 && !v->konst &&
           !(v->flags & (RLX_VALUE_INPUT | RLX_VALUE_INITIALIZER | RLX_VALUE_OUTER));
}

/* Topological order of the ancestors of roots (depth first, iterative);
 * *blocked when one of them is undefined. order has room for every node. */
static rlx_status ancestors(rlx_graph *g, const char *label, const int *roots, size_t n_roots, int *order,
                            size_t *n_order, const char **blocked) {
    size_t nn = g->n_nodes;
    uint8_t *state = calloc(nn + 1, 1);
    struct fr { int node, next; } *st = malloc((nn + 1) * sizeof *st);
    rlx_status s = RLX_OK;
    *n_order = 0;
    if (!state || !st) {
        s = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (size_t r = 0; r < n_roots && !*blocked; r++) {
        const rlx_value *rv = &g->values[roots[r]];
        if (undefined(rv)) {
            *blocked = rv->name;
            break;
        }
        if (rv->producer < 0 || state[rv->producer]) continue;
        size_t top = 0;
        st[top].node = rv->producer;
        st[top].next = 0;
        state[rv->producer] = 1;
        while (1) {
            const rlx_node *n = &g->nodes[st[top].node];
            if (st[top].next < n->n_in) {
                int v = n->in[st[top].next++];
                if (v < 0) continue;
                const rlx_value *vv = &g->values[v];
                if (undefined(vv)) {
                    *blocked = vv->name;
                    goto done;
                }
                int p = vv->producer;
                if (p < 0 || state[p] == 2) continue;
                if (state[p] == 1) {
                    s = rlx_fail(RLX_ERR_INVALID_MODEL, "%s: the graph has a cycle through %s", label,
                                 rlx_node_desc(&g->nodes[p]));
                    goto done;
                }
                state[p] = 1;
                top++;
                st[top].node = p;
                st[top].next = 0;
                continue;
            }
            state[st[top].node] = 2;
            order[(*n_order)++] = st[top].node;
            if (top == 0) break;
            top--;
        }
    }
done:
    free(state);
    free(st);
    return s;
}

/* Marks the nodes on the path: ancestors of y, walking back no further
 * than the stop values (xs and zs). */
static rlx_status mark_path(rlx_graph *g, int y, const bool *stop, bool *on_path) {
    int *stack = malloc((g->n_values + 1) * sizeof(int));
    bool *seen = calloc(g->n_values + 1, 1);
    if (!stack || !seen) {
        free(stack);
        free(seen);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    }
    size_t top = 0;
    stack[top++] = y;
    seen[y] = true;
    while (top) {
        int v = stack[--top];
        int p = g->values[v].producer;
        if (stop[v] || p < 0 || on_path[p]) continue;
        on_path[p] = true;
        const rlx_node *n = &g->nodes[p];
        for (int i = 0; i < n->n_in; i++)
            if (n->in[i] >= 0 && !seen[n->in[i]]) {
                seen[n->in[i]] = true;
                stack[top++] = n->in[i];
            }
    }
    free(stack);
    free(seen);
    return RLX_OK;
}

/* Re-adds node nid with its inputs mapped through fwd (new outputs). */
static rlx_status clone_forward(gctx *c, int nid, const bool *stop) {
    const rlx_node *n = &c->g->nodes[nid];
    int n_in = n->n_in, n_out = n->n_out, n_attrs = n->n_attrs;
    int *in = malloc(((size_t)n_in + 1) * sizeof(int)), *out = malloc(((size_t)n_out + 1) * sizeof(int));
    rlx_node_attr *attrs = calloc((size_t)n_attrs + 1, sizeof *attrs);
    char name[300], op[128], domain[128];
    rlx_status st = RLX_OK;
    int copied = 0;
    if (!in || !out || !attrs) {
        st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    snprintf(name, sizeof name, "%s/at_inputs/%s", c->prefix, n->name);
    snprintf(op, sizeof op, "%s", n->op_type);
    snprintf(domain, sizeof domain, "%s", n->domain);
    for (int i = 0; i < n_in; i++) in[i] = n->in[i] >= 0 ? c->fwd[n->in[i]] : -1;
    for (; copied < n_attrs; copied++) RLX_TRY_GOTO(st, rlx_node_attr_copy(&attrs[copied], &n->attrs[copied]), done);
    for (int k = 0; k < n_out; k++) {
        out[k] = -1;
        if (c->g->nodes[nid].out[k] < 0) continue;
        RLX_TRY_GOTO(st, rlx_graph_add_value(c->g, NULL, &out[k]), done);
    }
    int new_id;
    st = rlx_graph_add_node(c->g, op, domain, name, in, n_in, out, n_out, attrs, n_attrs, &new_id);
    copied = 0; /* adopted */
    if (st) goto done;
    RLX_TRY_GOTO(st, rlx_infer_node(c->g, new_id), done);
    n = &c->g->nodes[nid];
    for (int k = 0; k < n_out; k++)
        if (n->out[k] >= 0 && !stop[n->out[k]]) c->fwd[n->out[k]] = out[k];
done:
    free_attrs(attrs, copied);
    free(attrs);
    free(in);
    free(out);
    return st;
}

/* Expands one Gradient node; *blocked (a value name) when its sub-graph
 * uses the output of a Gradient node not expanded yet (nothing changed). */
static rlx_status expand_one(rlx_graph *g, const Onnx__NodeProto *np, size_t index, const char **blocked) {
    gctx c = { .g = g };
    if (np->name && *np->name) {
        snprintf(c.label, sizeof c.label, "node '%s' (" GRAD_DOMAIN ".Gradient)", np->name);
        snprintf(c.prefix, sizeof c.prefix, "%s", np->name);
    } else {
        snprintf(c.label, sizeof c.label, "node #%zu (" GRAD_DOMAIN ".Gradient)", index);
        snprintf(c.prefix, sizeof c.prefix, "Gradient_%zu", index);
    }
    gnode gn = { 0 };
    int *order = NULL, *roots = NULL, *xs = NULL;
    bool *stop = NULL, *on_path = NULL;
    size_t n_order = 0;
    rlx_status st;
    RLX_TRY_GOTO(st, gnode_read(g, np, c.label, &gn), done);
    size_t nxz = gn.nx + gn.nz;
    int y;
    roots = malloc((2 * nxz + 1) * sizeof(int));
    xs = malloc((nxz + 1) * sizeof(int));
    if (!roots || !xs) {
        st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    RLX_TRY_GOTO(st, find_named(g, c.label, "y", gn.y, &y), done);
    for (size_t i = 0; i < nxz; i++)
        RLX_TRY_GOTO(st, find_named(g, c.label, i < gn.nx ? "xs" : "zs", i < gn.nx ? gn.xs[i] : gn.zs[i - gn.nx], &xs[i]),
                     done);
    size_t n_roots = 0;
    roots[n_roots++] = y;
    for (size_t i = 0; i < nxz; i++) {
        roots[n_roots++] = xs[i];
        roots[n_roots++] = gn.in[i];
    }

    /* 1. shapes of everything involved */
    order = malloc((g->n_nodes + 1) * sizeof(int));
    if (!order) {
        st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    RLX_TRY_GOTO(st, ancestors(g, c.label, roots, n_roots, order, &n_order, blocked), done);
    if (*blocked) goto done;
    for (size_t i = 0; i < n_order; i++) RLX_TRY_GOTO(st, rlx_infer_node(g, order[i]), done);
    const rlx_value *yv = &g->values[y];
    if (!rlx_dtype_is_float(yv->dtype)) {
        st = rlx_fail(RLX_ERR_INVALID_MODEL, "%s: y ('%s') has dtype %s; Gradient differentiates floating-point "
                      "tensors", c.label, yv->name, rlx_dtype_name(yv->dtype));
        goto done;
    }
    for (size_t i = 0; i < nxz; i++) {
        const rlx_value *named = &g->values[xs[i]], *fed = &g->values[gn.in[i]];
        if (i < gn.nx && !rlx_dtype_is_float(named->dtype)) {
            st = rlx_fail(RLX_ERR_INVALID_MODEL, "%s: xs '%s' has dtype %s; Gradient differentiates with respect to "
                          "floating-point tensors", c.label, named->name, rlx_dtype_name(named->dtype));
            goto done;
        }
        if (named->dtype != fed->dtype) {
            st = rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input %zu ('%s') has dtype %s, but '%s' has %s", c.label, i,
                          fed->name, rlx_dtype_name(fed->dtype), named->name, rlx_dtype_name(named->dtype));
            goto done;
        }
    }

    /* 2. the path, evaluated at the node's inputs */
    c.nv0 = g->n_values;
    c.fwd = malloc((c.nv0 + 1) * sizeof(int));
    c.adj = malloc((c.nv0 + 1) * sizeof(int));
    c.active = calloc(c.nv0 + 1, 1);
    stop = calloc(c.nv0 + 1, 1);
    on_path = calloc(g->n_nodes + 1, 1);
    if (!c.fwd || !c.adj || !c.active || !stop || !on_path) {
        st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (size_t v = 0; v < c.nv0; v++) c.fwd[v] = (int)v, c.adj[v] = -1;
    for (size_t i = 0; i < nxz; i++) {
        stop[xs[i]] = true;
        c.fwd[xs[i]] = gn.in[i];
    }
    for (size_t i = 0; i < gn.nx; i++) c.active[xs[i]] = true;
    RLX_TRY_GOTO(st, mark_path(g, y, stop, on_path), done);
    for (size_t i = 0; i < n_order; i++) {
        int nid = order[i];
        if (!on_path[nid]) continue;
        const rlx_node *n = &g->nodes[nid];
        bool moved = false, act = false;
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0) {
                moved |= c.fwd[n->in[k]] != n->in[k];
                act |= c.active[n->in[k]];
            }
        for (int k = 0; k < n->n_out; k++) /* 3. active values */
            if (act && n->out[k] >= 0 && rlx_dtype_is_float(g->values[n->out[k]].dtype)) c.active[n->out[k]] = true;
        if (moved) RLX_TRY_GOTO(st, clone_forward(&c, nid, stop), done);
    }

    /* 4. adjoints, from y back */
    if (c.active[y]) {
        RLX_TRY_GOTO(st, fill_like(&c, c.fwd[y], 1.0, &c.adj[y]), done);
        for (size_t i = n_order; i-- > 0;) {
            int nid = order[i];
            if (!on_path[nid]) continue;
            const rlx_node *n = &g->nodes[nid];
            bool act = false, has_adj = false;
            for (int k = 0; k < n->n_in; k++) act |= n->in[k] >= 0 && c.active[n->in[k]];
            for (int k = 0; k < n->n_out; k++) has_adj |= n->out[k] >= 0 && c.adj[n->out[k]] >= 0;
            if (act && has_adj) RLX_TRY_GOTO(st, backprop_node(&c, nid), done);
        }
    }

    /* 5. the outputs */
    for (size_t i = 0; i < gn.n_out; i++) {
        if (gn.out[i] < 0) continue;
        int src = c.adj[xs[i]];
        if (src < 0) RLX_TRY_GOTO(st, fill_like(&c, gn.in[i], 0.0, &src), done);
        RLX_TRY_GOTO(st, emit_to(&c, "Identity", &src, 1, NULL, 0, &gn.out[i], 1), done);
    }
    st = RLX_OK;
done:
    gnode_free(&gn);
    free(order);
    free(roots);
    free(xs);
    free(stop);
    free(on_path);
    free(c.fwd);
    free(c.adj);
    free(c.active);
    return st;
}

/* ------------------------------------------------------------ optimizers */

/* The attribute `name` of np, or NULL. */
static const Onnx__AttributeProto *proto_attr_find(const Onnx__NodeProto *np, const char *name) {
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *ap = np->attribute ? np->attribute[i] : NULL;
        if (ap && ap->name && !strcmp(ap->name, name)) return ap;
    }
    return NULL;
}

/* The FLOAT attribute `name` into *out (def when absent and not required);
 * an attribute of another type is refused rather than read as 0. */
static rlx_status proto_float(const Onnx__NodeProto *np, const char *name, float def, bool required,
                              const char *label, double *out) {
    const Onnx__AttributeProto *ap = proto_attr_find(np, name);
    *out = def;
    if (!ap) {
        if (required) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' (a float) is required", label, name);
        return RLX_OK;
    }
    if ((ap->has_type && ap->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT) || (!ap->has_type && !ap->has_f))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' must be a float", label, name);
    *out = ap->f;
    return RLX_OK;
}

/* The STRING attribute `name` copied into buf ("" when absent); an
 * attribute of another type is refused. */
static rlx_status proto_str(const Onnx__NodeProto *np, const char *name, const char *label, char *buf, size_t cap) {
    const Onnx__AttributeProto *ap = proto_attr_find(np, name);
    buf[0] = 0;
    if (!ap) return RLX_OK;
    if ((ap->has_type && ap->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING) || !ap->has_s ||
        (ap->s.len && !ap->s.data))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' must be a string", label, name);
    size_t n = ap->s.len < cap - 1 ? ap->s.len : cap - 1;
    if (n) memcpy(buf, ap->s.data, n);
    buf[n] = 0;
    return RLX_OK;
}

/* True when v is known not to hold exactly one element (rank 0, or rank 1
 * of size 1, are scalars here; unknown ranks and dims are left to the run). */
static bool not_scalar(const rlx_value *v) {
    if (v->rank < 0) return false;
    for (int i = 0; i < v->rank; i++)
        if (v->dims[i] != 1 && v->dims[i] != RLX_DIM_DYN) return true;
    return v->rank > 1;
}

/* k * v with k a scalar of v's dtype. */
static rlx_status kmul(gctx *c, double k, int v, int *out) {
    int s;
    RLX_TRY(k_scalar(c, c->g->values[v].dtype, k, &s));
    return op2(c, "Mul", s, v, out);
}

/* Where(T > 0, a, b). */
static rlx_status if_t_positive(gctx *c, int T, int a, int b, int *out) {
    rlx_tensor *z;
    int zid, m, in[3];
    RLX_TRY(rlx_tensor_create(c->g->values[T].dtype, NULL, 0, &z));
    RLX_TRY(rlx_graph_add_konst(c->g, NULL, z, &zid));
    RLX_TRY(op2(c, "Greater", T, zid, &m));
    in[0] = m;
    in[1] = a;
    in[2] = b;
    return emit(c, "Where", in, 3, NULL, 0, out);
}

/* Adagrad-1, Adam-1, Momentum-1 (ai.onnx.preview.training): inputs R
 * (learning rate), T (update count), then per optimized tensor groups of
 * X..., G..., and the state tensors; outputs X_new..., then the new states.
 * Each formula below is the operator's pseudo code, written with ops. */
static rlx_status expand_optimizer_ids(const gctx *cp, rlx_graph *g, const Onnx__NodeProto *np, const char **blocked,
                                       const char *op, int groups, size_t n_in, size_t n_out, size_t n, int *ids);

static rlx_status expand_optimizer(rlx_graph *g, const Onnx__NodeProto *np, size_t index, const char **blocked) {
    gctx c = { .g = g };
    const char *op = np->op_type;
    if (np->name && *np->name) {
        snprintf(c.label, sizeof c.label, "node '%s' (" GRAD_DOMAIN ".%s)", np->name, op);
        snprintf(c.prefix, sizeof c.prefix, "%s", np->name);
    } else {
        snprintf(c.label, sizeof c.label, "node #%zu (" GRAD_DOMAIN ".%s)", index, op);
        snprintf(c.prefix, sizeof c.prefix, "%s_%zu", op, index);
    }
    int groups = !strcmp(op, "Adam") ? 4 : 3; /* X, G and one or two states */
    size_t n_in = np->n_input, n_out = np->n_output;
    if (n_in < 2 + (size_t)groups || (n_in - 2) % (size_t)groups || (n_in && !np->input) ||
        n_out > (n_in - 2) / (size_t)groups * (size_t)(groups - 1) || (n_out && !np->output))
        return rlx_fail(RLX_ERR_INVALID_MODEL,
                        "%s: has %zu inputs and %zu outputs; expected R, T and %d groups of tensors as inputs, "
                        "%d groups as outputs",
                        c.label, n_in, n_out, groups, groups - 1);
    size_t n = (n_in - 2) / (size_t)groups;
    /* any number of optimized tensors (import time) */
    int *ids = malloc((n_in + 1) * sizeof *ids);
    if (!ids) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", c.label);
    rlx_status st = expand_optimizer_ids(&c, g, np, blocked, op, groups, n_in, n_out, n, ids);
    free(ids);
    return st;
}

static rlx_status expand_optimizer_ids(const gctx *cp, rlx_graph *g, const Onnx__NodeProto *np, const char **blocked,
                                       const char *op, int groups, size_t n_in, size_t n_out, size_t n, int *ids) {
    gctx c = *cp;
    for (size_t i = 0; i < n_in; i++) {
        const char *nm = np->input[i];
        ids[i] = (nm && *nm) ? rlx_graph_find(g, nm) : -1;
        if (ids[i] < 0)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input %zu ('%s') is missing or not defined", c.label, i,
                            nm ? nm : "");
        if (undefined(&g->values[ids[i]])) {
            *blocked = g->values[ids[i]].name;
            return RLX_OK;
        }
    }
    int R = ids[0], T = ids[1];
    if (!rlx_dtype_is_float(g->values[R].dtype) || not_scalar(&g->values[R]) ||
        !(g->values[T].dtype == RLX_DTYPE_I64 || g->values[T].dtype == RLX_DTYPE_I32) || not_scalar(&g->values[T]))
        return rlx_fail(RLX_ERR_INVALID_MODEL,
                        "%s: R ('%s', %s of rank %d) must be a floating-point scalar and T ('%s', %s of rank %d) an "
                        "integer scalar",
                        c.label, g->values[R].name, rlx_dtype_name(g->values[R].dtype), g->values[R].rank,
                        g->values[T].name, rlx_dtype_name(g->values[T].dtype), g->values[T].rank);
    bool momentum = !strcmp(op, "Momentum"), adam = !strcmp(op, "Adam");
    /* the attributes (ONNX defaults; Momentum's are all required) */
    double nc, eps, decay, alpha, beta, nc_post;
    RLX_TRY(proto_float(np, "norm_coefficient", 0.0f, momentum, c.label, &nc));
    RLX_TRY(proto_float(np, "epsilon", 1e-6f, false, c.label, &eps));
    RLX_TRY(proto_float(np, "decay_factor", 0.0f, false, c.label, &decay));
    RLX_TRY(proto_float(np, "alpha", adam ? 0.9f : 0.0f, momentum, c.label, &alpha));
    RLX_TRY(proto_float(np, "beta", adam ? 0.999f : 0.0f, momentum, c.label, &beta));
    RLX_TRY(proto_float(np, "norm_coefficient_post", 0.0f, false, c.label, &nc_post));
    char mode[32];
    RLX_TRY(proto_str(np, "mode", c.label, mode, sizeof mode));
    bool nesterov = momentum && !strcmp(mode, "nesterov");
    if (momentum && !proto_attr_find(np, "mode"))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute 'mode' ('standard' or 'nesterov') is required", c.label);
    if (momentum && !nesterov && strcmp(mode, "standard") != 0)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: mode is '%s'; expected 'standard' or 'nesterov'", c.label, mode);

    for (size_t i = 0; i < n; i++) {
        int X = ids[2 + i], G = ids[2 + n + i], S1 = ids[2 + 2 * n + i], S2 = groups == 4 ? ids[2 + 3 * n + i] : -1;
        rlx_dtype dt = g->values[X].dtype;
        if (!rlx_dtype_is_float(dt))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: '%s' has dtype %s, expected a floating-point type", c.label,
                            g->values[X].name, rlx_dtype_name(dt));
        int Rx, Tf, t1, t2, t3, gr, res[3];
        RLX_TRY(cast_to(&c, R, dt, &Rx));
        RLX_TRY(cast_to(&c, T, dt, &Tf));
        /* G_regularized = norm_coefficient * X + G */
        RLX_TRY(kmul(&c, nc, X, &t1));
        RLX_TRY(op2(&c, "Add", t1, G, &gr));
        if (!strcmp(op, "Adagrad")) {
            int one, r, hn, ha;
            /* r = R / (1 + T * decay_factor) */
            RLX_TRY(kmul(&c, decay, Tf, &t1));
            RLX_TRY(k_scalar(&c, dt, 1.0, &one));
            RLX_TRY(op2(&c, "Add", one, t1, &t2));
            RLX_TRY(op2(&c, "Div", Rx, t2, &r));
            /* H_new = H + G_r^2; X_new = X - r G_r / (sqrt(H_new) + epsilon) */
            RLX_TRY(op2(&c, "Mul", gr, gr, &t1));
            RLX_TRY(op2(&c, "Add", S1, t1, &hn));
            RLX_TRY(op1(&c, "Sqrt", hn, &t1));
            RLX_TRY(k_scalar(&c, dt, eps, &t2));
            RLX_TRY(op2(&c, "Add", t1, t2, &ha));
            RLX_TRY(op2(&c, "Mul", r, gr, &t1));
            RLX_TRY(op2(&c, "Div", t1, ha, &t2));
            RLX_TRY(op2(&c, "Sub", X, t2, &res[0]));
            res[1] = hn;
        } else if (!strcmp(op, "Adam")) {
            int vn, hn, hs, ra, one, ka, kb, xn;
            /* V_new = alpha V + (1 - alpha) G_r; H_new = beta H + (1 - beta) G_r^2 */
            RLX_TRY(kmul(&c, alpha, S1, &t1));
            RLX_TRY(kmul(&c, 1.0 - alpha, gr, &t2));
            RLX_TRY(op2(&c, "Add", t1, t2, &vn));
            RLX_TRY(kmul(&c, beta, S2, &t1));
            RLX_TRY(op2(&c, "Mul", gr, gr, &t2));
            RLX_TRY(kmul(&c, 1.0 - beta, t2, &t3));
            RLX_TRY(op2(&c, "Add", t1, t3, &hn));
            RLX_TRY(op1(&c, "Sqrt", hn, &t1));
            RLX_TRY(k_scalar(&c, dt, eps, &t2));
            RLX_TRY(op2(&c, "Add", t1, t2, &hs));
            /* R_adjusted = T > 0 ? R sqrt(1 - beta^T) / (1 - alpha^T) : R */
            RLX_TRY(k_scalar(&c, dt, 1.0, &one));
            RLX_TRY(k_scalar(&c, dt, alpha, &ka));
            RLX_TRY(k_scalar(&c, dt, beta, &kb));
            RLX_TRY(op2(&c, "Pow", kb, Tf, &t1));
            RLX_TRY(op2(&c, "Sub", one, t1, &t2));
            RLX_TRY(op1(&c, "Sqrt", t2, &t3));
            RLX_TRY(op2(&c, "Mul", Rx, t3, &t1));
            RLX_TRY(op2(&c, "Pow", ka, Tf, &t2));
            RLX_TRY(op2(&c, "Sub", one, t2, &t3));
            RLX_TRY(op2(&c, "Div", t1, t3, &t2));
            RLX_TRY(if_t_positive(&c, T, t2, Rx, &ra));
            /* X_new = X - R_adjusted V_new / H_sqrt; X_final = (1 - norm_coefficient_post) X_new */
            RLX_TRY(op2(&c, "Mul", ra, vn, &t1));
            RLX_TRY(op2(&c, "Div", t1, hs, &t2));
            RLX_TRY(op2(&c, "Sub", X, t2, &xn));
            RLX_TRY(kmul(&c, 1.0 - nc_post, xn, &res[0]));
            res[1] = vn;
            res[2] = hn;
        } else { /* Momentum */
            int kb, one, ba, vn;
            /* beta_adjusted = T > 0 ? beta : 1; V_new = alpha V + beta_adjusted G_r */
            RLX_TRY(k_scalar(&c, dt, beta, &kb));
            RLX_TRY(k_scalar(&c, dt, 1.0, &one));
            RLX_TRY(if_t_positive(&c, T, kb, one, &ba));
            RLX_TRY(kmul(&c, alpha, S1, &t1));
            RLX_TRY(op2(&c, "Mul", ba, gr, &t2));
            RLX_TRY(op2(&c, "Add", t1, t2, &vn));
            /* standard: X - R V_new; nesterov: X - R (G_r + alpha V_new) */
            int step = vn;
            if (nesterov) {
                RLX_TRY(kmul(&c, alpha, vn, &t1));
                RLX_TRY(op2(&c, "Add", gr, t1, &step));
            }
            RLX_TRY(op2(&c, "Mul", Rx, step, &t1));
            RLX_TRY(op2(&c, "Sub", X, t1, &res[0]));
            res[1] = vn;
        }
        for (int k = 0; k < groups - 1; k++) {
            size_t o = (size_t)k * n + i;
            const char *nm = o < n_out ? np->output[o] : NULL;
            if (!nm || !*nm) continue;
            int out = rlx_graph_find(g, nm);
            if (out < 0) return rlx_fail(RLX_ERR_INTERNAL, "%s: output '%s' was not declared", c.label, nm);
            RLX_TRY(emit_to(&c, "Identity", &res[k], 1, NULL, 0, &out, 1));
        }
    }
    return RLX_OK;
}

rlx_status rlx_onnx_expand_training_ops(rlx_graph *g, const Onnx__GraphProto *gp) {
    size_t n = gp->n_node;
    bool *done = calloc(n + 1, 1);
    if (!done) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    rlx_status st = RLX_OK;
    for (;;) {
        bool progress = false, pending = false;
        size_t last = 0;
        const char *why = NULL;
        for (size_t i = 0; i < n; i++) {
            if (done[i] || !rlx_onnx_is_training_op(gp->node[i])) continue;
            const char *blocked = NULL;
            if (!strcmp(gp->node[i]->op_type, "Gradient")) st = expand_one(g, gp->node[i], i, &blocked);
            else st = expand_optimizer(g, gp->node[i], i, &blocked);
            if (st) goto out;
            if (blocked) {
                pending = true;
                last = i;
                why = blocked;
            } else {
                done[i] = progress = true;
            }
        }
        if (!pending) break;
        if (!progress) {
            const Onnx__NodeProto *np = gp->node[last];
            char who[200];
            if (np->name && *np->name) snprintf(who, sizeof who, "node '%s'", np->name);
            else snprintf(who, sizeof who, "node #%zu", last);
            st = rlx_fail(RLX_ERR_INVALID_MODEL,
                          "%s (" GRAD_DOMAIN ".%s): it uses '%s', which is defined by no node (or only by "
                          "Gradient nodes that depend on each other)",
                          who, np->op_type, why);
            goto out;
        }
    }
out:
    free(done);
    return st;
}
