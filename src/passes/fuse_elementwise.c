/* passes/fuse_elementwise.c — fuses chains and small DAGs of elementwise
 * ops into one rlx.FusedElementwise node (a register program, see
 * src/ir/ops/internal_ops.h): one loop over the output on the CPU, one
 * dispatch of generated WGSL on the GPU, instead of one per op.
 *
 * Ops: those whose vocabulary row (src/ir/ew_funcs.h) has RLX_EW_CHAIN
 * (Neg Abs Exp Log Sqrt Reciprocal Floor Ceil Round Erf Sin Cos Tanh
 * Sigmoid Relu LeakyRelu Elu HardSigmoid HardSwish Softplus Softsign Gelu
 * Sign Clip (constant bounds), Add Sub Mul Div Pow PRelu, Where,
 * rlx.QuantizeDequantize), Cast (between f32, f16, bf16), and Sum, Max,
 * Min, Mean of any number of inputs: left folds of binary instructions
 * (one input: a copy; Mean: the sum divided by the count, the CPU
 * kernel's order of operations, so the same bits).
 *
 * A group grows backwards from its last node (the sink): the producer p of
 * an input v joins when p is such an op, every user of v is already in
 * the group (v is no graph output; so only the sink's value leaves the
 * group, and the group is convex), and p's output has the sink's shape or
 * broadcasts to it (numpy rules, one way) and p is cheap: RLX_EW_CHEAP in
 * its row (+ - *, comparisons and selects, Floor, Ceil, Cast, at most a
 * division by a constant: HardSwish, rlx.QuantizeDequantize), or Sum,
 * Max, Min, Mean. The program runs once per output element, so such a p
 * is computed again for every element its value broadcasts to, and its
 * inputs from outside are read at their broadcast positions in the sink's
 * shape: broadcasting composes, so the values (and bits) are those of p's
 * smaller output broadcast by its users. Transcendentals, divisions by a
 * tensor and Round (a libm call) stay out when their output is smaller
 * than the sink: once per element of their own output costs less.
 *
 * Inputs from outside broadcast to the sink's shape (the CPU kernel and
 * the generated WGSL index them so); constant scalars
 * become constant registers. Preconditions, each checked: static shapes;
 * dtypes f32/f16/bf16 (bool only for a Where condition from outside);
 * versions from the rows' SINCE (numpy broadcasting for binary ops);
 * Clip bounds constant; Gelu approximate "none" or "tanh"; at most
 * MAX_TENSOR_IN inputs from outside (a dispatch binds them all, plus the
 * output, within WebGPU's 8 storage buffers per stage), MAX_INSTR
 * instructions (a variadic op of k inputs is k - 1, Mean's k) and
 * RLX_EW_MAX_CONSTS constants (Mean's count is one); at least two ops, or a
 * Sum, Max, Min or Mean of two or more inputs, which its own kernels run
 * in one pass per input (lone_variadic), or one
 * that borders a QDQ model's 8-bit tensors (qdq_border) when fuse_qdq_ew
 * runs next (stats->qdq_ew): it then reads the bytes and writes them, one
 * dispatch where the DequantizeLinear, the op and the QuantizeLinear were
 * three or more (a QDQ ResNet's residual Add). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/tensor.h"
#include "ir/op.h"
#include "ir/ops/internal_ops.h"
#include "passes/fuse_util.h"
#include "passes/passes.h"

#define PASS "fuse_elementwise"
#define MAX_TENSOR_IN 6
#define MAX_INSTR 48
#define MAX_GROUP 48

static bool ew_float(rlx_dtype dt) { return dt == RLX_DTYPE_F32 || dt == RLX_DTYPE_F16 || dt == RLX_DTYPE_BF16; }

/* The variadic ops: Sum, Max, Min, Mean. */
static bool variadic(const rlx_node *n) {
    return n->op == RLX_OP_Sum || n->op == RLX_OP_Max || n->op == RLX_OP_Min || n->op == RLX_OP_Mean;
}

/* The instruction node n becomes (function, parameters, operand count),
 * or false: an op whose vocabulary row has RLX_EW_CHAIN, at the row's
 * SINCE version or later, with parameters known now (rlx_ew_resolve);
 * Cast (COPY, with the rounding of its output type) from version 6; Sum,
 * Max, Min and Mean of any number of inputs (ADD, MAX, MIN, ADD; arity:
 * their input count) from version 8 (numpy broadcasting), the inputs
 * folded from the left (node_instrs). */
static bool chain_op(const rlx_graph *g, const rlx_node *n, rlx_ew_call *f, int *arity) {
    memset(f, 0, sizeof *f);
    *arity = 0;
    if (n->dead || (n->domain && *n->domain && n->op != RLX_OP_rlx_QuantizeDequantize)) return false;
    if (variadic(n)) {
        if (n->version < 8 || n->n_in < 1) return false;
        f->kind = n->op == RLX_OP_Max ? RLX_EW_MAX : n->op == RLX_OP_Min ? RLX_EW_MIN : RLX_EW_ADD;
        *arity = n->n_in;
        return true;
    }
    if (n->op == RLX_OP_Cast) {
        if (n->version < 6) return false;
        f->kind = RLX_EW_COPY;
        *arity = 1;
        return true;
    }
    if (!rlx_ew_resolve(g, n, f)) return false;
    const rlx_ew_info *r = rlx_ew_info_of(f->kind);
    if (!(r->flags & RLX_EW_CHAIN) || n->version < r->since) {
        memset(f, 0, sizeof *f);
        return false;
    }
    *arity = r->arity;
    return true;
}

/* Instructions of node n (a chain op of `arity` operands): a variadic op
 * of k inputs k - 1 folds (one input: a copy), Mean one more, the
 * division of the sum by k (as the CPU's Mean kernel: the f32 sum, then
 * one correctly rounded division; not a product by 1 / k, which differs);
 * any other op one. */
static int node_instrs(const rlx_node *n, int arity) {
    if (!variadic(n) || arity < 2) return 1;
    return arity - 1 + (n->op == RLX_OP_Mean);
}

/* Whether node n is cheap to compute again for every element of a larger
 * output: its row has RLX_EW_CHEAP (Cast: a copy); Sum, Max and Min (+ and
 * comparisons) and Mean (+ and a division by a constant). */
static bool cheap(const rlx_node *n, const rlx_ew_call *f) {
    return variadic(n) || (rlx_ew_info_of(f->kind)->flags & RLX_EW_CHEAP);
}

/* Whether y broadcasts to s one way (numpy rules: y's dims, aligned to
 * the right, are s's or 1; y's rank at most s's). */
static bool broadcasts_to(const rlx_value *y, const rlx_value *s) {
    if (!rlx_value_is_static(y) || !rlx_value_is_static(s) || y->rank > s->rank) return false;
    for (int d = 0; d < y->rank; d++) {
        int64_t yd = y->dims[d], sd = s->dims[s->rank - y->rank + d];
        if (yd != sd && yd != 1) return false;
    }
    return true;
}

/* Whether node n can join a group whose output shape is that of value s:
 * its output has s's shape, or broadcasts to it and n is cheap (the
 * program computes n once for every element of s: an op that costs real
 * time, a transcendental, a division by a tensor, a libm call, stays out
 * and runs once on its smaller output). */
static bool candidate(const rlx_graph *g, const rlx_node *n, const rlx_value *s) {
    rlx_ew_call f;
    int used;
    if (!chain_op(g, n, &f, &used) || n->n_out != 1 || n->out[0] < 0) return false;
    const rlx_value *y = &g->values[n->out[0]];
    if (!ew_float(y->dtype) || !broadcasts_to(y, s)) return false;
    if (rlx_value_numel(y) < rlx_value_numel(s) && !cheap(n, &f)) return false;
    if (n->op == RLX_OP_Clip) {
        if (n->n_in < 1) return false;
    } else if (n->n_in != used) {
        return false;
    }
    for (int i = 0; i < used; i++) {
        const rlx_value *x = rlx_node_input(g, n, i);
        if (!x || !rlx_value_is_static(x)) return false;
        bool cond = f.kind == RLX_EW_WHERE && i == 0;
        if (cond ? x->dtype != RLX_DTYPE_BOOL : !ew_float(x->dtype)) return false;
        if (!cond && f.kind != RLX_EW_COPY && x->dtype != y->dtype) return false; /* Cast changes dtype */
    }
    return true;
}

typedef struct group {
    int nodes[MAX_GROUP];
    int n;
} group;

static bool in_group(const group *gr, int id) {
    for (int i = 0; i < gr->n; i++)
        if (gr->nodes[i] == id) return true;
    return false;
}

static bool produced_in(const rlx_graph *g, const group *gr, int v) {
    int p = g->values[v].producer;
    return p >= 0 && in_group(gr, p);
}

/* A constant scalar that becomes a constant register (it must not widen
 * the output's rank). */
static bool immediate(const rlx_graph *g, int v, const rlx_value *s) {
    const rlx_value *x = &g->values[v];
    float f;
    return x->konst && x->dtype != RLX_DTYPE_BOOL && x->rank <= s->rank && rlx_fuse_konst_scalar(x, &f);
}

/* Operand slots of node n that the program reads (Clip: only its input). */
static int n_operands(const rlx_graph *g, const rlx_node *n) {
    rlx_ew_call f;
    int arity;
    return chain_op(g, n, &f, &arity) ? arity : 0;
}

/* The registers a group reads from outside, in order of first use, and
 * its instruction count; over: more than MAX_TENSOR_IN tensors,
 * RLX_EW_MAX_CONSTS constants or MAX_INSTR instructions. */
typedef struct regs {
    int ins[MAX_TENSOR_IN], n_in;     /* tensor inputs (values) */
    int kvals[RLX_EW_MAX_CONSTS], n_k; /* constants: a constant scalar value, or -k for Mean's count k */
    float consts[RLX_EW_MAX_CONSTS];
    int n_instr;
    bool over;
} regs;

static int index_of(const int *a, int n, int v) {
    for (int i = 0; i < n; i++)
        if (a[i] == v) return i;
    return -1;
}

static void add_const(regs *r, int key, float v) {
    if (index_of(r->kvals, r->n_k, key) >= 0) return;
    if (r->n_k == RLX_EW_MAX_CONSTS) {
        r->over = true;
        return;
    }
    r->consts[r->n_k] = v;
    r->kvals[r->n_k++] = key;
}

static void group_regs(const rlx_graph *g, const group *gr, const rlx_value *s, regs *r) {
    memset(r, 0, sizeof *r);
    for (int i = 0; i < gr->n; i++) {
        const rlx_node *n = &g->nodes[gr->nodes[i]];
        rlx_ew_call f;
        int arity;
        if (!chain_op(g, n, &f, &arity)) {
            r->over = true;
            continue;
        }
        r->n_instr += node_instrs(n, arity);
        for (int k = 0; k < arity; k++) {
            int v = n->in[k];
            if (produced_in(g, gr, v) || index_of(r->ins, r->n_in, v) >= 0) continue;
            bool cond = n->op == RLX_OP_Where && k == 0;
            float c;
            if (!cond && immediate(g, v, s) && rlx_fuse_konst_scalar(&g->values[v], &c)) {
                add_const(r, v, c);
            } else if (r->n_in == MAX_TENSOR_IN) {
                r->over = true;
            } else {
                r->ins[r->n_in++] = v;
            }
        }
        if (n->op == RLX_OP_Mean && arity > 1) add_const(r, -arity, (float)arity);
    }
    if (r->n_instr > MAX_INSTR) r->over = true;
}

/* Whether the broadcast of the tensor inputs r->ins is the shape of s (the
 * node's output shape, shape inference of rlx.FusedElementwise; a scalar
 * constant register of a higher rank than its tensor operands would widen
 * the rank otherwise). */
static bool inputs_give_shape(const rlx_graph *g, const regs *r, const rlx_value *s) {
    int rank = 0;
    int64_t dims[RLX_MAX_RANK] = { 0 };
    for (int i = 0; i < r->n_in; i++) {
        const rlx_value *x = &g->values[r->ins[i]];
        int r2;
        int64_t d2[RLX_MAX_RANK];
        int32_t s2[RLX_MAX_RANK];
        if (!rlx_broadcast_shapes(rank, dims, NULL, x->rank, x->dims, NULL, &r2, d2, s2)) return false;
        rank = r2;
        memcpy(dims, d2, sizeof dims);
    }
    return r->n_in > 0 && rlx_shape_equal(dims, rank, s->dims, s->rank);
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* Grows the group of sink `s` backwards. */
static void grow(const rlx_graph *g, const rlx_fuse_users *u, const int *taken, size_t n_taken, group *gr) {
    const rlx_value *sv = &g->values[g->nodes[gr->nodes[0]].out[0]];
    bool changed = true;
    while (changed && gr->n < MAX_GROUP) {
        changed = false;
        for (int i = 0; i < gr->n && gr->n < MAX_GROUP; i++) {
            const rlx_node *n = &g->nodes[gr->nodes[i]];
            for (int k = 0; k < n_operands(g, n) && gr->n < MAX_GROUP; k++) {
                int v = n->in[k];
                int p = g->values[v].producer;
                if (p < 0 || (size_t)p >= n_taken || taken[p] || in_group(gr, p) || rlx_fuse_is_output(g, v)) continue;
                if (!candidate(g, &g->nodes[p], sv)) continue;
                bool all_in = true;
                for (int j = 0; j < rlx_fuse_n_users(u, v) && all_in; j++) all_in = in_group(gr, rlx_fuse_user(u, v, j));
                if (!all_in) continue;
                gr->nodes[gr->n++] = p;
                regs r;
                group_regs(g, gr, sv, &r);
                if (r.over || !inputs_give_shape(g, &r, sv)) { /* (emit_group's conditions) */
                    gr->n--;
                    continue;
                }
                changed = true;
            }
        }
    }
    qsort(gr->nodes, (size_t)gr->n, sizeof gr->nodes[0], cmp_int); /* node order is topological */
}

/* The register of operand value v of a group's node i: an input, a
 * constant, or the result of an earlier node; -1 when none. */
static int reg_of(const rlx_graph *g, const group *gr, const regs *r, const int *reg_of_node, int i, int v) {
    int k = index_of(r->ins, r->n_in, v);
    if (k >= 0) return k;
    if ((k = index_of(r->kvals, r->n_k, v)) >= 0) return r->n_in + k;
    for (int j = 0; j < i; j++)
        if (g->nodes[gr->nodes[j]].out[0] == v) return reg_of_node[j];
    return -1;
}

/* Builds the program of the group and replaces it by one node. */
static rlx_status emit_group(rlx_graph *g, const group *gr, rlx_pass_stats *stats) {
    int sink = gr->nodes[gr->n - 1];
    int out = g->nodes[sink].out[0];
    const rlx_value *sv = &g->values[out];
    regs R;
    group_regs(g, gr, sv, &R);
    if (R.over) return RLX_OK; /* (a group of one, qdq_border: grow checked the others) */
    int n_in = R.n_in, n_k = R.n_k;
    const int *ins = R.ins;
    if (n_in == 0) return RLX_OK; /* all constant: folding's job */
    if (!inputs_give_shape(g, &R, sv)) return RLX_OK; /* the output must be the broadcast of the tensor inputs */
    int64_t code[MAX_INSTR * 5];
    float fparams[MAX_INSTR * 2];
    int reg_of_node[MAX_GROUP], ni = 0;
    for (int i = 0; i < gr->n; i++) {
        const rlx_node *n = &g->nodes[gr->nodes[i]];
        rlx_ew_call f;
        int arity;
        chain_op(g, n, &f, &arity);
        int op = f.kind, steps = node_instrs(n, arity);
        /* rounding policy: intermediates stay f32 (as onnxruntime computes f16
         * chains), only an explicit Cast to f16/bf16 rounds; the output
         * rounds once, at the store */
        rlx_dtype dt = g->values[n->out[0]].dtype;
        int rnd = n->op == RLX_OP_Cast && dt != RLX_DTYPE_F32 ? (int)dt : 0;
        for (int t = 0; t < steps; t++) {
            /* a variadic op: step t folds operand t + 1 into the previous
             * step's result (Mean: its last step divides by the count) */
            int64_t r[3] = { -1, -1, -1 };
            bool var = variadic(n), mean_div = var && n->op == RLX_OP_Mean && arity > 1 && t == steps - 1;
            int n_ops = var ? (arity == 1 ? 1 : 2) : arity;
            for (int k = 0; k < n_ops; k++) {
                int reg;
                if (var && t > 0 && k == 0) reg = n_in + n_k + ni - 1;
                else if (mean_div) reg = n_in + index_of(R.kvals, n_k, -arity);
                else reg = reg_of(g, gr, &R, reg_of_node, i, n->in[var && t > 0 ? t + 1 : k]);
                if (reg < 0)
                    return rlx_fail(RLX_ERR_INTERNAL, "%s: %s: operand %d has no register", PASS, rlx_node_desc(n), k);
                r[k] = reg;
            }
            int64_t *c = code + 5 * ni;
            c[0] = mean_div ? RLX_EW_DIV : var && arity == 1 ? RLX_EW_COPY : op;
            if (op == RLX_EW_WHERE) { /* code order: a (true), b (false), c (condition) */
                c[1] = r[1], c[2] = r[2], c[3] = r[0];
            } else {
                c[1] = r[0], c[2] = r[1], c[3] = r[2];
            }
            c[4] = rnd;
            fparams[2 * ni] = var ? 0.0f : f.alpha;
            fparams[2 * ni + 1] = var ? 0.0f : f.beta;
            ni++;
        }
        reg_of_node[i] = n_in + n_k + ni - 1;
    }
    char what[2048] = "";
    if (rlx_fuse_reporting()) rlx_fuse_describe(g, gr->nodes, gr->n, what, sizeof what);
    rlx_node_attr attrs[4];
    int na = 0;
    rlx_status st = rlx_node_attr_set_ints(&attrs[na], "code", code, (size_t)ni * 5);
    if (!st) na++, st = rlx_node_attr_set_floats(&attrs[na], "fparams", fparams, (size_t)ni * 2);
    if (!st && n_k) na++, st = rlx_node_attr_set_floats(&attrs[na], "consts", R.consts, (size_t)n_k);
    if (!st) na++, st = rlx_node_attr_set_int(&attrs[na], "dtype", sv->dtype);
    if (!st) na++;
    if (st) {
        for (int i = 0; i < na; i++) rlx_node_attr_free(&attrs[i]);
        return st;
    }
    char name[256];
    snprintf(name, sizeof name, "%s_fused", g->nodes[sink].name ? g->nodes[sink].name : "ew");
    for (int i = 0; i < gr->n; i++) g->nodes[gr->nodes[i]].dead = true;
    g->values[out].producer = -1;
    RLX_TRY(rlx_fuse_emplace(g, sink, "FusedElementwise", RLX_INTERNAL_DOMAIN, name, ins, n_in, &out, 1, attrs, na));
    char detail[96];
    snprintf(detail, sizeof detail, "%d ops, %d inputs, %d constants", gr->n, n_in, n_k);
    rlx_fuse_report(PASS, what, &g->nodes[sink], detail);
    if (stats) stats->fused += gr->n - 1;
    return RLX_OK;
}

/* Whether node n, a group of one, borders 8-bit tensors: an operand from a
 * DequantizeLinear, or its f32 output read by QuantizeLinear nodes only
 * (fuse_qdq_ew checks the rest: per tensor, constant parameters). */
static bool qdq_border(const rlx_graph *g, const rlx_fuse_users *u, const rlx_node *n) {
    int v = n->out[0], nu = rlx_fuse_n_users(u, v);
    if (g->values[v].dtype != RLX_DTYPE_F32) return false;
    for (int k = 0; k < n_operands(g, n); k++) {
        const rlx_node *p = rlx_fuse_producer(g, n->in[k]);
        if (p && rlx_fuse_is(p, RLX_OP_DequantizeLinear)) return true;
    }
    if (nu < 1 || rlx_fuse_is_output(g, v)) return false;
    for (int j = 0; j < nu; j++)
        if (!rlx_fuse_is(&g->nodes[rlx_fuse_user(u, v, j)], RLX_OP_QuantizeLinear)) return false;
    return true;
}

/* Whether node n, a group of one, is a Sum, Max, Min or Mean of two or more
 * inputs, which its own kernels run in one pass over the output per input:
 * the CPU kernel copies the first input and folds each other one into the
 * output in turn (variadic_run, a scalar broadcast loop), the GPU lowering
 * makes one binary dispatch per input after the first (lower_variadic; Mean
 * one more, the division), so Sum of k inputs reads 2k - 1 tensors and
 * writes k - 1 where the program reads k and writes one, in one
 * vectorised loop or one dispatch; the same left fold, so the same bits.
 * Steady runs of 2^20 f32 elements (tests/python/test_fuse_lone_variadic.py
 * checks the dispatch counts and the bits): CPU Sum of 4 9.2 -> 0.68 ms,
 * Sum of 2 3.4 -> 0.71 ms; lavapipe Sum of 4 29 -> 8.6 ms, Sum of 2
 * 10.0 -> 5.7 ms. */
static bool lone_variadic(const rlx_node *n) {
    return variadic(n) && n->n_in >= 2;
}

rlx_status rlx_pass_fuse_elementwise(rlx_graph *g, rlx_pass_stats *stats) {
    rlx_fuse_users u;
    RLX_TRY(rlx_fuse_users_build(g, &u));
    size_t nn = g->n_nodes;
    int *taken = calloc(nn + 1, sizeof *taken);
    if (!taken) {
        rlx_fuse_users_free(&u);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (%s)", PASS);
    }
    rlx_status st = RLX_OK;
    bool any = false;
    for (size_t s = nn; s-- > 0 && !st;) {
        rlx_node *n = &g->nodes[s];
        if (taken[s] || n->dead || n->n_out != 1 || n->out[0] < 0) continue;
        if (!candidate(g, n, &g->values[n->out[0]])) continue;
        group gr = { { (int)s }, 1 };
        grow(g, &u, taken, nn, &gr);
        if (gr.n < 2 && !lone_variadic(n) && !(stats && stats->qdq_ew && qdq_border(g, &u, n))) continue;
        for (int i = 0; i < gr.n; i++) taken[gr.nodes[i]] = 1;
        size_t before = g->n_nodes;
        st = emit_group(g, &gr, stats);
        any |= g->n_nodes != before;
    }
    free(taken);
    rlx_fuse_users_free(&u);
    if (any) rlx_graph_compact(g);
    return st;
}
