/* import/onnx_sequence.c — ONNX sequence values resolved while importing
 * (see onnx_sequence.h for what is supported and what is refused).
 *
 * A sequence is an ordered list of value ids of the graph being imported.
 * The ONNX value that names the sequence stays a declared value of the
 * graph that no node produces and no node uses (the importer declares every
 * node output before importing nodes); only the list matters. Elements that
 * are not available (pieces of a SplitToSequence whose sizes are known only
 * at run time, when no node can compute them) are -1, with the reason kept
 * for the message of whoever asks for them: SequenceLength still works.
 *
 * Op semantics (ONNX, opset 11 unless noted):
 *   SequenceEmpty() -> [];  SequenceConstruct(t0, ..., tn-1) -> [t0..tn-1];
 *   SequenceInsert(S, t, pos = n): pos in [-n, n], negative counts from the
 *   end (pos + n); SequenceErase(S, pos = -1) and SequenceAt(S, pos): pos in
 *   [-n, n-1]; SequenceLength(S) -> int64 scalar n;
 *   SplitToSequence(x, split?; axis = 0, keepdims = 1): no split -> pieces
 *   of size 1 (axis removed when keepdims = 0); scalar split k -> pieces of
 *   k, the last one shorter; 1-D split -> pieces of those sizes;
 *   ConcatFromSequence(S; axis, new_axis = 0): Concat along axis, or along a
 *   new axis (range [-r-1, r]) when new_axis = 1;
 *   SequenceMap-17(S, inputs...; body): body applied to each position, the
 *   other inputs being sequences of the same length or tensors given whole;
 *   Identity-14 of a sequence: the same sequence. */
#include "import/onnx_sequence.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/status.h"
#include "base/tensor.h"
#include "import/onnx.h"
#include "ir/op.h"

/* Most elements of one sequence (each is a value, most also a node). */
#define MAX_SEQ_LEN 65536
/* Splits and Concats of constant sizes into more pieces than this become
 * trees of nodes of at most this many: a shape kept from when the CPU
 * executor took at most 64 inputs or outputs a node; the backends now run
 * nodes of any arity (one with run-time sizes is one Split of n outputs). */
#define NODE_MAX_IO 64

typedef struct seq_val {
    int id;       /* the ONNX value naming the sequence, in the scope's graph */
    int *elems;   /* element values, in order; -1: not available */
    size_t n;
    char *why;    /* why elements are -1, or NULL */
    char *origin; /* label of the node that made it */
} seq_val;

struct rlx_onnx_seq_scope {
    rlx_onnx_seq_scope *parent;
    rlx_onnx_importer imp;
    seq_val *seqs;
    size_t n, cap;
};

rlx_status rlx_onnx_seq_scope_create(rlx_onnx_seq_scope *parent, const rlx_onnx_importer *imp,
                                     rlx_onnx_seq_scope **out) {
    *out = NULL;
    rlx_onnx_seq_scope *s = calloc(1, sizeof *s);
    if (!s) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (sequence scope)");
    s->parent = parent;
    s->imp = *imp;
    *out = s;
    return RLX_OK;
}

void rlx_onnx_seq_scope_destroy(rlx_onnx_seq_scope *s) {
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->seqs[i].elems);
        free(s->seqs[i].why);
        free(s->seqs[i].origin);
    }
    free(s->seqs);
    free(s);
}

/* ------------------------------------------------------------ lookup */

static const seq_val *find_seq_id(const rlx_onnx_seq_scope *s, int id) {
    for (size_t i = 0; i < s->n; i++)
        if (s->seqs[i].id == id) return &s->seqs[i];
    return NULL;
}

/* The sequence of this graph named `name`, or NULL. */
static const seq_val *find_seq(const rlx_onnx_seq_scope *s, const rlx_graph *g, const char *name) {
    int id = (name && *name) ? rlx_graph_find(g, name) : -1;
    return id >= 0 ? find_seq_id(s, id) : NULL;
}

/* The sequence of an enclosing graph that `name` refers to from g, or
 * NULL (names that g defines itself shadow the enclosing ones). */
static const seq_val *find_outer_seq(const rlx_onnx_seq_scope *s, const rlx_graph *g, const char *name) {
    if (!name || !*name) return NULL;
    int id = rlx_graph_find(g, name);
    if (id >= 0 && !(g->values[id].flags & RLX_VALUE_OUTER)) return NULL;
    const rlx_onnx_seq_scope *ps = s->parent;
    for (const rlx_graph *pg = g->parent; ps && pg; pg = pg->parent, ps = ps->parent) {
        int pid = rlx_graph_find(pg, name);
        if (pid >= 0 && !(pg->values[pid].flags & RLX_VALUE_OUTER)) return find_seq_id(ps, pid);
    }
    return NULL;
}

static rlx_status outer_seq_error(const char *label, const char *name, const seq_val *sq) {
    return rlx_fail(RLX_ERR_UNSUPPORTED,
                    "%s: '%s' is a sequence of an enclosing graph (made by %s); rlx resolves sequences while "
                    "importing and cannot pass them into a subgraph (Loop/If/Scan body)",
                    label, name, sq->origin);
}

/* Input i of np, which must be a sequence of this graph. */
static rlx_status input_seq(const rlx_onnx_seq_scope *s, rlx_graph *g, const Onnx__NodeProto *np, size_t i,
                            const char *label, const seq_val **out) {
    *out = NULL;
    const char *nm = i < np->n_input ? np->input[i] : NULL;
    if (!nm || !*nm) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input %zu (a sequence) is missing", label, i);
    if ((*out = find_seq(s, g, nm))) return RLX_OK;
    const seq_val *outer = find_outer_seq(s, g, nm);
    if (outer) return outer_seq_error(label, nm, outer);
    int id = rlx_graph_find(g, nm);
    const rlx_value *v = id >= 0 ? &g->values[id] : NULL;
    if (v && (v->producer >= 0 || v->konst || (v->flags & RLX_VALUE_INPUT)))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input '%s' is a tensor, but a sequence is expected", label, nm);
    return rlx_fail(RLX_ERR_UNSUPPORTED,
                    "%s: input '%s' is not a sequence made by an earlier node of this graph; rlx resolves sequences "
                    "while importing, so they must come from sequence ops listed before their use",
                    label, nm);
}

/* Input i of np, which must be a tensor; *id -1 when omitted and !required. */
static rlx_status input_tensor(const rlx_onnx_seq_scope *s, rlx_graph *g, const Onnx__NodeProto *np, size_t i,
                               bool required, const char *label, int *id) {
    *id = -1;
    const char *nm = i < np->n_input ? np->input[i] : NULL;
    if (!nm || !*nm) {
        if (!required) return RLX_OK;
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: required input %zu is missing", label, i);
    }
    if (find_seq(s, g, nm))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input '%s' is a sequence, but a tensor is expected", label, nm);
    const seq_val *outer = find_outer_seq(s, g, nm);
    if (outer) return outer_seq_error(label, nm, outer);
    RLX_TRY(s->imp.resolve(g, nm, id));
    if (*id < 0)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input '%s' is not defined%s", label, nm,
                        g->parent ? " (neither in this subgraph nor in an enclosing graph)" : "");
    return RLX_OK;
}

/* Element k of sq, which must be available. */
static rlx_status element(const rlx_graph *g, const seq_val *sq, size_t k, const char *label, int *id) {
    *id = sq->elems[k];
    if (*id >= 0) return RLX_OK;
    return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: element %zu of sequence '%s' cannot be computed: %s", label, k,
                    g->values[sq->id].name, sq->why ? sq->why : "unknown");
}

/* Reads attribute `name` of np: INT into *i or GRAPH into *gp (either
 * pointer may be NULL); *found says whether it is there. */
static rlx_status proto_attr(const Onnx__NodeProto *np, const char *name, const char *label, int64_t *i,
                             const Onnx__GraphProto **gp, bool *found) {
    *found = false;
    for (size_t k = 0; k < np->n_attribute; k++) {
        const Onnx__AttributeProto *ap = np->attribute[k];
        if (!ap || !ap->name || strcmp(ap->name, name) != 0) continue;
        int type = ap->has_type ? (int)ap->type : 0;
        if (i) {
            if (type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT && !(type == 0 && ap->has_i))
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' must be an integer", label, name);
            *i = ap->i;
        } else if (gp) {
            if ((type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH && type != 0) || !ap->g)
                return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' must be a graph", label, name);
            *gp = ap->g;
        }
        *found = true;
        return RLX_OK;
    }
    return RLX_OK;
}

static rlx_status attr_int_or(const Onnx__NodeProto *np, const char *name, int64_t def, const char *label,
                              int64_t *out) {
    bool found;
    *out = def;
    return proto_attr(np, name, label, out, NULL, &found);
}

/* The constant position input i of np (absent: *given false), checked
 * against a sequence of n elements: [-n, n] for insertion (inclusive_end),
 * else [-n, n-1]; negative positions count from the end. */
static rlx_status input_position(const rlx_onnx_seq_scope *s, rlx_graph *g, const Onnx__NodeProto *np, size_t i,
                                 size_t n, bool inclusive_end, const char *label, size_t *pos, bool *given) {
    *given = false;
    *pos = 0;
    int id;
    RLX_TRY(input_tensor(s, g, np, i, false, label, &id));
    if (id < 0) return RLX_OK;
    const rlx_value *v = &g->values[id];
    if (!v->konst)
        return rlx_fail(RLX_ERR_UNSUPPORTED,
                        "%s: position '%s' is computed at run time; rlx resolves sequences while importing and needs "
                        "a constant position (an initializer or a Constant node)",
                        label, v->name);
    int64_t p[2];
    size_t cnt;
    if ((v->konst->dtype != RLX_DTYPE_I64 && v->konst->dtype != RLX_DTYPE_I32) || !rlx_konst_ints(v, p, 2, &cnt) ||
        cnt != 1)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: position '%s' must be one int32 or int64 value", label, v->name);
    int64_t lo = -(int64_t)n, hi = inclusive_end ? (int64_t)n : (int64_t)n - 1;
    if (p[0] < lo || p[0] > hi)
        return rlx_fail(RLX_ERR_INVALID_MODEL,
                        "%s: position %lld is out of range for a sequence of %zu elements (accepted: [%lld, %lld])",
                        label, (long long)p[0], n, (long long)lo, (long long)hi);
    *pos = (size_t)(p[0] < 0 ? p[0] + (int64_t)n : p[0]);
    *given = true;
    return RLX_OK;
}

/* ------------------------------------------------------------ defining sequences */

/* Records output 0 of np as a sequence of the n values elems (adopted, also
 * on error; NULL when n is 0); why: reason for -1 elements, or NULL. */
static rlx_status define_seq(rlx_onnx_seq_scope *s, rlx_graph *g, const Onnx__NodeProto *np, const char *label,
                             size_t out_index, int *elems, size_t n, const char *why) {
    const char *nm = out_index < np->n_output ? np->output[out_index] : NULL;
    if (!nm || !*nm) { /* omitted output */
        free(elems);
        return RLX_OK;
    }
    int id = rlx_graph_find(g, nm);
    rlx_status st = RLX_OK;
    if (id < 0) {
        st = rlx_fail(RLX_ERR_INTERNAL, "%s: output '%s' was not declared", label, nm);
    } else if (n > MAX_SEQ_LEN) {
        st = rlx_fail(RLX_ERR_UNSUPPORTED, "%s: sequence '%s' would have %zu elements, above rlx's limit of %d",
                      label, nm, n, MAX_SEQ_LEN);
    } else if ((st = RLX_GROW(s->seqs, s->cap, s->n + 1)) == RLX_OK) {
        seq_val *sq = &s->seqs[s->n];
        memset(sq, 0, sizeof *sq);
        sq->id = id;
        sq->elems = elems;
        sq->n = n;
        sq->origin = rlx_strdup(label);
        sq->why = why ? rlx_strdup(why) : NULL;
        s->n++;
        if (!sq->origin || (why && !sq->why)) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
        return RLX_OK;
    }
    free(elems);
    return st;
}

/* A copy of n ints (never NULL on success, even for n == 0). */
static int *ints_dup(const int *v, size_t n, size_t extra) {
    int *d = malloc((n + extra + 1) * sizeof *d);
    if (d && n) memcpy(d, v, n * sizeof *d);
    return d;
}

/* ------------------------------------------------------------ emitting nodes */

/* A new value named "<base><pre><k><post>" (or "<base>" when pre is
 * NULL), or a generated name when that one is taken or too long. */
static rlx_status new_value(rlx_graph *g, const char *base, const char *pre, size_t k, const char *post, int *id) {
    char name[400];
    int len = pre ? snprintf(name, sizeof name, "%s%s%zu%s", base, pre, k, post)
                  : snprintf(name, sizeof name, "%s", base);
    if (len < 0 || (size_t)len >= sizeof name || rlx_graph_find(g, name) >= 0) name[0] = 0;
    return rlx_graph_add_value(g, name, id);
}

/* A constant int64 value: scalar when `scalar`, else 1-D of n. */
static rlx_status konst_i64(rlx_graph *g, const int64_t *v, size_t n, bool scalar, int *id) {
    int64_t dim = (int64_t)n;
    rlx_tensor *t;
    RLX_TRY(rlx_tensor_create(RLX_DTYPE_I64, scalar ? NULL : &dim, scalar ? 0 : 1, &t));
    if (n) memcpy(t->data, v, n * sizeof *v);
    return rlx_graph_add_konst(g, NULL, t, id);
}

/* The since-version of default-domain op `op` in effect in g (0: none). */
static int op_version(const rlx_graph *g, const char *op) {
    const rlx_op_def *d = rlx_op_find("", op);
    return d ? rlx_op_version(d, g->opset) : 0;
}

/* One Split node of x along axis into n outputs outs: sizes from `sizes`
 * (constant) or from value split_id (run time, Split-13 and later only). */
static rlx_status split_node(rlx_graph *g, const char *node_name, int x, int64_t axis, const int64_t *sizes,
                             int split_id, size_t n, const int *outs) {
    rlx_node_attr attrs[2];
    int n_attrs = 0, in[2] = { x, -1 }, n_in = 1;
    RLX_TRY(rlx_node_attr_set_int(&attrs[n_attrs++], "axis", axis));
    rlx_status st = RLX_OK;
    if (op_version(g, "Split") >= 13) {
        if (split_id < 0) RLX_TRY_GOTO(st, konst_i64(g, sizes, n, false, &split_id), fail);
        in[1] = split_id;
        n_in = 2;
    } else {
        RLX_TRY_GOTO(st, rlx_node_attr_set_ints(&attrs[n_attrs], "split", sizes, n), fail);
        n_attrs++;
    }
    return rlx_graph_add_node(g, "Split", "", node_name, in, n_in, outs, (int)n, attrs, n_attrs, NULL);
fail:
    for (int i = 0; i < n_attrs; i++) rlx_node_attr_free(&attrs[i]);
    return st;
}

/* Split of x into n pieces of constant sizes: one Split node when n <=
 * NODE_MAX_IO, else a tree (a Split into groups, then each group split). */
static rlx_status split_const(rlx_graph *g, const char *node_name, const char *base, int x, int64_t axis,
                              const int64_t *sizes, size_t n, const int *outs) {
    if (n <= NODE_MAX_IO) return split_node(g, node_name, x, axis, sizes, -1, n, outs);
    size_t per = NODE_MAX_IO; /* pieces per group, a power of NODE_MAX_IO */
    while ((n + per - 1) / per > NODE_MAX_IO) per *= NODE_MAX_IO;
    size_t n_groups = (n + per - 1) / per;
    int64_t gsize[NODE_MAX_IO] = { 0 };
    int gid[NODE_MAX_IO] = { 0 };
    for (size_t j = 0; j < n_groups; j++) {
        gsize[j] = 0;
        for (size_t k = j * per; k < n && k < (j + 1) * per; k++) gsize[j] += sizes[k];
        RLX_TRY(new_value(g, base, "/group", j * per, "", &gid[j]));
    }
    RLX_TRY(split_node(g, node_name, x, axis, gsize, -1, n_groups, gid));
    for (size_t j = 0; j < n_groups; j++) {
        size_t first = j * per, cnt = n - first < per ? n - first : per;
        RLX_TRY(split_const(g, node_name, g->values[gid[j]].name, gid[j], axis, sizes + first, cnt, outs + first));
    }
    return RLX_OK;
}

/* Concat of the n values `in` along axis into out: one node when n <=
 * NODE_MAX_IO, else a tree (concatenation along one axis is associative). */
static rlx_status concat_tree(rlx_graph *g, const char *node_name, const int *in, size_t n, int64_t axis, int out) {
    rlx_node_attr a;
    if (n <= NODE_MAX_IO) {
        RLX_TRY(rlx_node_attr_set_int(&a, "axis", axis));
        return rlx_graph_add_node(g, "Concat", "", node_name, in, (int)n, &out, 1, &a, 1, NULL);
    }
    size_t per = NODE_MAX_IO;
    while ((n + per - 1) / per > NODE_MAX_IO) per *= NODE_MAX_IO;
    size_t n_groups = (n + per - 1) / per;
    int gid[NODE_MAX_IO] = { 0 };
    for (size_t j = 0; j < n_groups; j++) {
        size_t first = j * per, cnt = n - first < per ? n - first : per;
        RLX_TRY(new_value(g, g->values[out].name, "/group", first, "", &gid[j]));
        RLX_TRY(concat_tree(g, node_name, in + first, cnt, axis, gid[j]));
    }
    return concat_tree(g, node_name, gid, n_groups, axis, out);
}

/* Squeeze or Unsqueeze of x at one axis into out, in the form of the
 * graph's opset (axes an attribute before version 13, an input after). */
static rlx_status axes_node(rlx_graph *g, const char *op, const char *node_name, int x, int64_t axis, int out) {
    rlx_node_attr a;
    if (op_version(g, op) >= 13) {
        int in[2] = { x, -1 };
        RLX_TRY(konst_i64(g, &axis, 1, false, &in[1]));
        return rlx_graph_add_node(g, op, "", node_name, in, 2, &out, 1, NULL, 0, NULL);
    }
    RLX_TRY(rlx_node_attr_set_ints(&a, "axes", &axis, 1));
    return rlx_graph_add_node(g, op, "", node_name, &x, 1, &out, 1, &a, 1, NULL);
}

/* Infers the shapes of the nodes added so far whose inputs are known, so
 * that an op that needs a shape while importing (SplitToSequence counting
 * its pieces) sees it. Failures are left to the real inference that runs
 * after the import. */
static void infer_so_far(rlx_graph *g) {
    for (size_t i = 0; i < g->n_nodes; i++) {
        const rlx_node *n = &g->nodes[i];
        bool ready = true, needed = false;
        for (int k = 0; k < n->n_in && ready; k++) {
            const rlx_value *v = rlx_node_input(g, n, k);
            if (v && v->dtype == RLX_DTYPE_UNDEFINED && !v->konst) ready = false;
        }
        for (int k = 0; k < n->n_out; k++) {
            const rlx_value *v = rlx_node_output(g, n, k);
            if (v && v->dtype == RLX_DTYPE_UNDEFINED) needed = true;
        }
        if (ready && needed && rlx_infer_node(g, (int)i) != RLX_OK) rlx_clear_error();
    }
}

/* ------------------------------------------------------------ the ops */

static bool in_count_ok(const Onnx__NodeProto *np, size_t lo, size_t hi) {
    return np->n_input >= lo && np->n_input <= hi;
}

static rlx_status arity_error(const Onnx__NodeProto *np, const char *label, const char *expected) {
    return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: has %zu inputs and %zu outputs, expected %s", label, np->n_input,
                    np->n_output, expected);
}

/* The elements of a sequence share one element type (ONNX: seq(tensor(T))):
 * elems[0..n) whose dtypes are known (graph inputs, initializers,
 * constants, outputs already inferred) must agree. */
static rlx_status same_dtype(const rlx_graph *g, const int *elems, size_t n, const char *label) {
    int first = -1;
    for (size_t i = 0; i < n; i++) {
        if (elems[i] < 0) continue;
        const rlx_value *v = &g->values[elems[i]];
        if (v->dtype == RLX_DTYPE_UNDEFINED) continue;
        if (first < 0) {
            first = elems[i];
            continue;
        }
        const rlx_value *f = &g->values[first];
        if (v->dtype != f->dtype)
            return rlx_fail(RLX_ERR_INVALID_MODEL,
                            "%s: '%s' has element type %s, but '%s' has %s; the tensors of a sequence share one "
                            "element type",
                            label, v->name, rlx_dtype_name(v->dtype), f->name, rlx_dtype_name(f->dtype));
    }
    return RLX_OK;
}

static rlx_status op_construct(rlx_onnx_seq_scope *s, rlx_graph *g, const Onnx__NodeProto *np, const char *label,
                               bool empty) {
    if (np->n_output != 1 || (empty ? np->n_input != 0 : np->n_input < 1))
        return arity_error(np, label, empty ? "no inputs and 1 output" : "1 or more inputs and 1 output");
    int *elems = malloc((np->n_input + 1) * sizeof *elems);
    if (!elems) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
    for (size_t i = 0; i < np->n_input; i++) {
        rlx_status st = input_tensor(s, g, np, i, true, label, &elems[i]);
        if (st) {
            free(elems);
            return st;
        }
    }
    rlx_status st = same_dtype(g, elems, np->n_input, label);
    if (st) {
        free(elems);
        return st;
    }
    return define_seq(s, g, np, label, 0, elems, np->n_input, NULL);
}

static rlx_status op_insert(rlx_onnx_seq_scope *s, rlx_graph *g, const Onnx__NodeProto *np, const char *label) {
    if (!in_count_ok(np, 2, 3) || np->n_output != 1) return arity_error(np, label, "2 or 3 inputs and 1 output");
    const seq_val *sq;
    int t;
    size_t pos;
    bool given;
    RLX_TRY(input_seq(s, g, np, 0, label, &sq));
    RLX_TRY(input_tensor(s, g, np, 1, true, label, &t));
    RLX_TRY(input_position(s, g, np, 2, sq->n, true, label, &pos, &given));
    if (!given) pos = sq->n;
    int *elems = ints_dup(sq->elems, sq->n, 1);
    if (!elems) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
    memmove(elems + pos + 1, elems + pos, (sq->n - pos) * sizeof *elems);
    elems[pos] = t;
    rlx_status st = same_dtype(g, elems, sq->n + 1, label);
    if (st) {
        free(elems);
        return st;
    }
    return define_seq(s, g, np, label, 0, elems, sq->n + 1, sq->why);
}

static rlx_status op_erase(rlx_onnx_seq_scope *s, rlx_graph *g, const Onnx__NodeProto *np, const char *label) {
    if (!in_count_ok(np, 1, 2) || np->n_output != 1) return arity_error(np, label, "1 or 2 inputs and 1 output");
    const seq_val *sq;
    size_t pos;
    bool given;
    RLX_TRY(input_seq(s, g, np, 0, label, &sq));
    if (sq->n == 0) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: the sequence to erase from is empty", label);
    RLX_TRY(input_position(s, g, np, 1, sq->n, false, label, &pos, &given));
    if (!given) pos = sq->n - 1;
    int *elems = ints_dup(sq->elems, sq->n, 0);
    if (!elems) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
    memmove(elems + pos, elems + pos + 1, (sq->n - pos - 1) * sizeof *elems);
    return define_seq(s, g, np, label, 0, elems, sq->n - 1, sq->why);
}

static rlx_status op_identity(rlx_onnx_seq_scope *s, rlx_graph *g, const Onnx__NodeProto *np, const char *label) {
    if (np->n_input != 1 || np->n_output != 1) return arity_error(np, label, "1 input and 1 output");
    const seq_val *sq;
    RLX_TRY(input_seq(s, g, np, 0, label, &sq));
    int *elems = ints_dup(sq->elems, sq->n, 0);
    if (!elems) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
    return define_seq(s, g, np, label, 0, elems, sq->n, sq->why);
}

/* The tensor output 0 of np, declared by the importer (-1: omitted). */
static rlx_status output_tensor(const rlx_graph *g, const Onnx__NodeProto *np, const char *label, int *id) {
    const char *nm = np->n_output ? np->output[0] : NULL;
    *id = (nm && *nm) ? rlx_graph_find(g, nm) : -1;
    if (nm && *nm && *id < 0) return rlx_fail(RLX_ERR_INTERNAL, "%s: output '%s' was not declared", label, nm);
    return RLX_OK;
}

static rlx_status op_at(rlx_onnx_seq_scope *s, rlx_graph *g, const Onnx__NodeProto *np, const char *label) {
    if (np->n_input != 2 || np->n_output != 1) return arity_error(np, label, "2 inputs and 1 output");
    const seq_val *sq;
    size_t pos;
    bool given;
    int elem, out;
    RLX_TRY(input_seq(s, g, np, 0, label, &sq));
    RLX_TRY(input_position(s, g, np, 1, sq->n, false, label, &pos, &given));
    if (!given) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: the position input is missing", label);
    RLX_TRY(element(g, sq, pos, label, &elem));
    RLX_TRY(output_tensor(g, np, label, &out));
    if (out < 0) return RLX_OK;
    /* the output is a value of its own (it may be a graph output, or be
     * read by name from a subgraph): an Identity gives it the element */
    return rlx_graph_add_node(g, "Identity", "", np->name, &elem, 1, &out, 1, NULL, 0, NULL);
}

static rlx_status op_length(rlx_onnx_seq_scope *s, rlx_graph *g, const Onnx__NodeProto *np, const char *label) {
    if (np->n_input != 1 || np->n_output != 1) return arity_error(np, label, "1 input and 1 output");
    const seq_val *sq;
    int out;
    RLX_TRY(input_seq(s, g, np, 0, label, &sq));
    RLX_TRY(output_tensor(g, np, label, &out));
    if (out < 0) return RLX_OK;
    rlx_tensor *t;
    RLX_TRY(rlx_tensor_create(RLX_DTYPE_I64, NULL, 0, &t));
    *(int64_t *)t->data = (int64_t)sq->n;
    rlx_value_set_konst(&g->values[out], t);
    return RLX_OK;
}

static rlx_status op_concat(rlx_onnx_seq_scope *s, rlx_graph *g, const Onnx__NodeProto *np, const char *label) {
    if (np->n_input != 1 || np->n_output != 1) return arity_error(np, label, "1 input and 1 output");
    const seq_val *sq;
    int64_t axis = 0, new_axis;
    bool found;
    int out;
    RLX_TRY(input_seq(s, g, np, 0, label, &sq));
    RLX_TRY(proto_attr(np, "axis", label, &axis, NULL, &found));
    if (!found) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute 'axis' is required", label);
    RLX_TRY(attr_int_or(np, "new_axis", 0, label, &new_axis));
    if (new_axis != 0 && new_axis != 1)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: new_axis is %lld; it must be 0 or 1", label, (long long)new_axis);
    if (sq->n == 0)
        return rlx_fail(RLX_ERR_INVALID_MODEL,
                        "%s: the sequence '%s' is empty, and concatenating no tensors has no defined type or shape",
                        label, g->values[sq->id].name);
    RLX_TRY(output_tensor(g, np, label, &out));
    if (out < 0) return RLX_OK;
    int *in = malloc(sq->n * sizeof *in);
    if (!in) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
    rlx_status st = RLX_OK;
    const char *base = g->values[out].name;
    for (size_t k = 0; k < sq->n && !st; k++) {
        st = element(g, sq, k, label, &in[k]);
        if (st || !new_axis) continue;
        /* new_axis: each element gets the axis (size 1) first; axis counts
         * in the output's rank r+1, as Unsqueeze's axes do */
        int u;
        st = new_value(g, base, "/unsqueezed", k, "", &u);
        if (!st) st = axes_node(g, "Unsqueeze", np->name, in[k], axis, u);
        in[k] = u;
    }
    if (!st) st = concat_tree(g, np->name, in, sq->n, axis, out);
    free(in);
    return st;
}

static rlx_status op_split(rlx_onnx_seq_scope *s, rlx_graph *g, const Onnx__NodeProto *np, const char *label) {
    if (!in_count_ok(np, 1, 2) || np->n_output != 1) return arity_error(np, label, "1 or 2 inputs and 1 output");
    int x, sp;
    int64_t axis, keepdims;
    RLX_TRY(input_tensor(s, g, np, 0, true, label, &x));
    RLX_TRY(input_tensor(s, g, np, 1, false, label, &sp));
    RLX_TRY(attr_int_or(np, "axis", 0, label, &axis));
    RLX_TRY(attr_int_or(np, "keepdims", 1, label, &keepdims));
    if (g->values[x].rank < 0 || (sp >= 0 && g->values[sp].rank < 0)) infer_so_far(g);
    const rlx_value *xv = &g->values[x], *sv = sp >= 0 ? &g->values[sp] : NULL;
    const char *seq_name = np->output[0] && *np->output[0] ? np->output[0] : "sequence";
    const char *node_name = np->name && *np->name ? np->name : seq_name;

    int ax = -1;
    int64_t dim = RLX_DIM_DYN;
    if (xv->rank >= 0) {
        if (!rlx_norm_axis(axis, xv->rank, &ax))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: axis %lld is out of range for input '%s' of rank %d", label,
                            (long long)axis, xv->name, xv->rank);
        dim = xv->dims[ax];
        axis = ax;
    }
    /* the number of pieces and, when known, their sizes */
    size_t n = 0;
    int64_t *sizes = NULL;
    bool runtime_sizes = false;
    rlx_status st = RLX_OK;
    if (sv && sv->rank == 1 && !sv->konst) {
        if (sv->dims[0] < 0)
            return rlx_fail(RLX_ERR_UNSUPPORTED,
                            "%s: the number of pieces (the length of split '%s') is known only at run time; rlx "
                            "resolves sequences while importing",
                            label, sv->name);
        n = (size_t)sv->dims[0];
        runtime_sizes = true;
    } else if (sv && !sv->konst) {
        return rlx_fail(RLX_ERR_UNSUPPORTED,
                        "%s: split '%s' is computed at run time and is %s; the number of pieces must be known while "
                        "importing (a 1-D split of static length, or a constant split)",
                        label, sv->name, sv->rank == 0 ? "a scalar" : "of unknown rank");
    } else {
        size_t ns = sv ? rlx_tensor_numel(sv->konst) : 0;
        if (sv && (sv->konst->rank > 1 || ns > MAX_SEQ_LEN))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: split '%s' must be a scalar or a 1-D list of sizes", label,
                            sv->name);
        if ((!sv || sv->konst->rank == 0) && dim < 0)
            return rlx_fail(RLX_ERR_UNSUPPORTED,
                            "%s: the size of axis %lld of input '%s' is known only at run time, so the number of "
                            "pieces is not known while importing",
                            label, (long long)axis, xv->name);
        int64_t *vals = malloc((ns + 1) * sizeof *vals);
        size_t cnt = 0;
        if (!vals) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
        if (sv && !rlx_konst_ints(sv, vals, ns, &cnt)) {
            free(vals);
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: split '%s' must hold integers", label, sv->name);
        }
        if (!sv) { /* pieces of 1 */
            n = (size_t)dim;
        } else if (sv->konst->rank == 0) { /* pieces of k, the last shorter */
            if (vals[0] <= 0) {
                st = rlx_fail(RLX_ERR_INVALID_MODEL, "%s: split size %lld must be positive", label, (long long)vals[0]);
                free(vals);
                return st;
            }
            n = (size_t)(dim / vals[0] + (dim % vals[0] != 0));
        } else {
            n = cnt;
            int64_t sum = 0;
            for (size_t k = 0; k < n; k++) {
                if (vals[k] < 0 || vals[k] > INT64_MAX - sum) {
                    st = rlx_fail(RLX_ERR_INVALID_MODEL, "%s: split size %lld is invalid", label, (long long)vals[k]);
                    free(vals);
                    return st;
                }
                sum += vals[k];
            }
            if (dim >= 0 && sum != dim) {
                free(vals);
                return rlx_fail(RLX_ERR_INVALID_MODEL,
                                "%s: split sizes add up to %lld, but axis %d of input '%s' has %lld", label,
                                (long long)sum, ax, xv->name, (long long)dim);
            }
        }
        if (n > MAX_SEQ_LEN) {
            free(vals);
            return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: %zu pieces, above rlx's limit of %d elements per sequence",
                            label, n, MAX_SEQ_LEN);
        }
        sizes = malloc((n + 1) * sizeof *sizes);
        if (!sizes) {
            free(vals);
            return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
        }
        for (size_t k = 0; k < n; k++) {
            if (!sv) sizes[k] = 1;
            else if (sv->konst->rank == 0) sizes[k] = (int64_t)k + 1 < (int64_t)n ? vals[0] : dim - vals[0] * (int64_t)k;
            else sizes[k] = vals[k];
        }
        free(vals);
    }
    if (n > MAX_SEQ_LEN) {
        free(sizes);
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: %zu pieces, above rlx's limit of %d elements per sequence", label,
                        n, MAX_SEQ_LEN);
    }

    int *elems = malloc((n + 1) * sizeof *elems);
    if (!elems) {
        free(sizes);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
    }
    for (size_t k = 0; k < n; k++) elems[k] = -1;
    const char *why = NULL;
    bool squeeze = !sv && keepdims == 0;
    if (n == 0) {
        /* an empty axis: an empty sequence */
    } else if (runtime_sizes && op_version(g, "Split") < 13) {
        /* no node can compute the pieces; SequenceLength still can */
        why = "its sizes are computed at run time, and Split before opset 13 takes sizes only as an attribute";
    } else {
        int *pieces = malloc((n + 1) * sizeof *pieces);
        if (!pieces) st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
        for (size_t k = 0; k < n && !st; k++)
            st = new_value(g, seq_name, squeeze ? "/piece" : "[", k, squeeze ? "" : "]", &pieces[k]);
        if (!st)
            st = runtime_sizes ? split_node(g, node_name, x, axis, NULL, sp, n, pieces)
                               : split_const(g, node_name, seq_name, x, axis, sizes, n, pieces);
        for (size_t k = 0; k < n && !st; k++) {
            elems[k] = pieces[k];
            if (!squeeze) continue;
            st = new_value(g, seq_name, "[", k, "]", &elems[k]);
            if (!st) st = axes_node(g, "Squeeze", node_name, pieces[k], axis, elems[k]);
        }
        free(pieces);
    }
    free(sizes);
    if (st) {
        free(elems);
        return st;
    }
    return define_seq(s, g, np, label, 0, elems, n, why);
}

/* ------------------------------------------------------------ SequenceMap */

/* Body name -> value of g, for one unrolled iteration. */
typedef struct name_map {
    const char **from;
    int *to;
    size_t n, cap_from, cap_to;
} name_map;

static rlx_status map_put(name_map *m, const char *from, int to) {
    RLX_TRY(RLX_GROW(m->from, m->cap_from, m->n + 1));
    RLX_TRY(RLX_GROW(m->to, m->cap_to, m->n + 1));
    m->from[m->n] = from;
    m->to[m->n++] = to;
    return RLX_OK;
}

/* Latest mapping of `from` (later entries shadow earlier ones), or -1. */
static int map_get(const name_map *m, const char *from) {
    for (size_t i = m->n; i-- > 0;)
        if (strcmp(m->from[i], from) == 0) return m->to[i];
    return -1;
}

/* Imports a copy of body node bn into g with its names mapped through m
 * (names the body does not define stay: they refer to g and its enclosing
 * graphs). The copy is named "<node_name>/<body node>[i]". */
static rlx_status import_body_node(const rlx_onnx_seq_scope *s, rlx_graph *g, const Onnx__NodeProto *bn,
                                   size_t bi, const name_map *m, const char *node_name, size_t i, const char *label) {
    Onnx__NodeProto copy = *bn;
    char name[400];
    if (bn->name && *bn->name) snprintf(name, sizeof name, "%s/%s[%zu]", node_name, bn->name, i);
    else snprintf(name, sizeof name, "%s/%s#%zu[%zu]", node_name, bn->op_type ? bn->op_type : "?", bi, i);
    copy.name = name;
    char **in = malloc((bn->n_input + 1) * sizeof *in), **out = malloc((bn->n_output + 1) * sizeof *out);
    if (!in || !out) {
        free(in);
        free(out);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
    }
    for (size_t k = 0; k < bn->n_input; k++) {
        const char *nm = bn->input[k];
        int id = (nm && *nm) ? map_get(m, nm) : -1;
        in[k] = id >= 0 ? g->values[id].name : bn->input[k];
    }
    for (size_t k = 0; k < bn->n_output; k++) {
        const char *nm = bn->output[k];
        int id = (nm && *nm) ? map_get(m, nm) : -1;
        out[k] = id >= 0 ? g->values[id].name : bn->output[k];
    }
    copy.input = in;
    copy.output = out;
    rlx_status st = s->imp.import_node(s->imp.ctx, g, &copy);
    free(in);
    free(out);
    return st;
}

static rlx_status op_map(rlx_onnx_seq_scope *s, rlx_graph *g, const Onnx__NodeProto *np, const char *label) {
    const Onnx__GraphProto *body = NULL;
    bool found;
    RLX_TRY(proto_attr(np, "body", label, NULL, &body, &found));
    if (!found || !body) return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute 'body' is required", label);
    if (np->n_input < 1 || np->n_output < 1) return arity_error(np, label, "1 or more inputs and outputs");
    if ((body->n_input && !body->input) || (body->n_output && !body->output) || (body->n_node && !body->node) ||
        (body->n_initializer && !body->initializer))
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: the body graph is malformed", label);
    if (body->n_input != np->n_input || body->n_output != np->n_output)
        return rlx_fail(RLX_ERR_INVALID_MODEL,
                        "%s: the body has %zu inputs and %zu outputs, but the node has %zu inputs and %zu outputs",
                        label, body->n_input, body->n_output, np->n_input, np->n_output);
    for (size_t j = 0; j < body->n_node; j++) {
        const Onnx__NodeProto *bn = body->node[j];
        if (!bn || !bn->op_type || (bn->n_input && !bn->input) || (bn->n_output && !bn->output) ||
            (bn->n_attribute && !bn->attribute))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: body node #%zu is malformed", label, j);
        for (size_t k = 0; k < bn->n_attribute; k++)
            if (bn->attribute[k] && (bn->attribute[k]->g || bn->attribute[k]->n_graphs))
                return rlx_fail(RLX_ERR_UNSUPPORTED,
                                "%s: body node '%s' (%s) has a subgraph; rlx unrolls SequenceMap bodies while "
                                "importing and does not unroll nested subgraphs",
                                label, bn->name ? bn->name : "", bn->op_type);
    }
    for (size_t k = 0; k < body->n_input; k++)
        if (!body->input[k] || !body->input[k]->name || !*body->input[k]->name)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: body input #%zu has no name", label, k);
    for (size_t k = 0; k < body->n_output; k++)
        if (!body->output[k] || !body->output[k]->name || !*body->output[k]->name)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: body output #%zu has no name", label, k);

    /* the inputs: sequences (all of one length) or tensors given whole */
    const seq_val **seqs = calloc(np->n_input, sizeof *seqs);
    int *whole = malloc(np->n_input * sizeof *whole);
    int **outs = calloc(np->n_output, sizeof *outs);
    name_map m = { 0 };
    rlx_status st = RLX_OK;
    size_t n = 0;
    if (!seqs || !whole || !outs) {
        st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
        goto done;
    }
    RLX_TRY_GOTO(st, input_seq(s, g, np, 0, label, &seqs[0]), done);
    n = seqs[0]->n;
    whole[0] = -1;
    for (size_t k = 1; k < np->n_input; k++) {
        seqs[k] = find_seq(s, g, np->input[k]);
        whole[k] = -1;
        if (!seqs[k]) RLX_TRY_GOTO(st, input_tensor(s, g, np, k, true, label, &whole[k]), done);
        else if (seqs[k]->n != n) {
            st = rlx_fail(RLX_ERR_INVALID_MODEL, "%s: input sequences have %zu and %zu elements; they must agree",
                          label, n, seqs[k]->n);
            goto done;
        }
    }
    for (size_t j = 0; j < np->n_output; j++)
        if (!(outs[j] = malloc((n + 1) * sizeof *outs[j]))) {
            st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
            goto done;
        }
    const char *node_name = np->name && *np->name ? np->name : (np->output[0] ? np->output[0] : "SequenceMap");
    /* body initializers: constants shared by every iteration */
    for (size_t k = 0; k < body->n_initializer; k++) {
        const Onnx__TensorProto *tp = body->initializer[k];
        if (!tp || !tp->name || !*tp->name) {
            st = rlx_fail(RLX_ERR_INVALID_MODEL, "%s: body initializer #%zu has no name", label, k);
            goto done;
        }
        rlx_tensor *t;
        int id;
        RLX_TRY_GOTO(st, rlx_onnx_tensor_from_proto(tp, s->imp.base_dir, &t), done);
        char base[400];
        snprintf(base, sizeof base, "%s/%s", node_name, tp->name);
        st = new_value(g, base, NULL, k, NULL, &id);
        if (st) {
            rlx_tensor_destroy(t);
            goto done;
        }
        rlx_value_set_konst(&g->values[id], t);
        RLX_TRY_GOTO(st, map_put(&m, tp->name, id), done);
    }
    size_t n_shared = m.n;
    for (size_t i = 0; i < n; i++) {
        m.n = n_shared;
        for (size_t k = 0; k < np->n_input; k++) {
            int id = whole[k];
            if (seqs[k]) RLX_TRY_GOTO(st, element(g, seqs[k], i, label, &id), done);
            RLX_TRY_GOTO(st, map_put(&m, body->input[k]->name, id), done);
        }
        /* every body node output gets a fresh value of g first, so that
         * the copies refer to each other whatever their order */
        for (size_t j = 0; j < body->n_node; j++) {
            const Onnx__NodeProto *bn = body->node[j];
            for (size_t k = 0; k < bn->n_output; k++) {
                const char *nm = bn->output[k];
                if (!nm || !*nm) continue;
                char base[400];
                int id;
                snprintf(base, sizeof base, "%s/%s", node_name, nm);
                RLX_TRY_GOTO(st, new_value(g, base, "[", i, "]", &id), done);
                RLX_TRY_GOTO(st, map_put(&m, nm, id), done);
            }
        }
        for (size_t j = 0; j < body->n_node; j++)
            RLX_TRY_GOTO(st, import_body_node(s, g, body->node[j], j, &m, node_name, i, label), done);
        for (size_t j = 0; j < np->n_output; j++) {
            const char *nm = body->output[j]->name;
            int id = map_get(&m, nm);
            if (id < 0) RLX_TRY_GOTO(st, s->imp.resolve(g, nm, &id), done);
            if (id < 0) {
                st = rlx_fail(RLX_ERR_INVALID_MODEL, "%s: body output '%s' is not defined", label, nm);
                goto done;
            }
            if (find_seq_id(s, id)) {
                st = rlx_fail(RLX_ERR_UNSUPPORTED,
                              "%s: body output '%s' is a sequence; rlx does not support sequences of sequences", label,
                              nm);
                goto done;
            }
            outs[j][i] = id;
        }
    }
    for (size_t j = 0; j < np->n_output && !st; j++) {
        st = define_seq(s, g, np, label, j, outs[j], n, NULL);
        outs[j] = NULL;
    }
done:
    for (size_t j = 0; outs && j < np->n_output; j++) free(outs[j]);
    free(outs);
    free(seqs);
    free(whole);
    free(m.from);
    free(m.to);
    return st;
}

/* ------------------------------------------------------------ entry points */

rlx_status rlx_onnx_seq_node(rlx_onnx_seq_scope *s, rlx_graph *g, const Onnx__NodeProto *np, const char *label,
                             bool *handled) {
    *handled = false;
    const char *op = np->op_type;
    bool dflt = !np->domain || !*np->domain || strcmp(np->domain, "ai.onnx") == 0;
    static const struct {
        const char *name;
        int since;
    } k_ops[] = { { "SequenceEmpty", 11 },   { "SequenceConstruct", 11 },  { "SequenceInsert", 11 },
                  { "SequenceErase", 11 },   { "SequenceAt", 11 },         { "SequenceLength", 11 },
                  { "SplitToSequence", 11 }, { "ConcatFromSequence", 11 }, { "SequenceMap", 17 } };
    int which = -1;
    for (size_t i = 0; dflt && i < RLX_ARRAY_LEN(k_ops); i++)
        if (strcmp(op, k_ops[i].name) == 0) which = (int)i;
    bool seq_identity = dflt && strcmp(op, "Identity") == 0 && np->n_input == 1 && find_seq(s, g, np->input[0]);
    if (which < 0 && !seq_identity) {
        /* any other node: it must not take a sequence (nothing to check in
         * graphs without sequences, the usual case) */
        bool any = false;
        for (const rlx_onnx_seq_scope *p = s; p && !any; p = p->parent) any = p->n > 0;
        for (size_t i = 0; any && i < np->n_input; i++) {
            const char *nm = np->input[i];
            const seq_val *sq = find_seq(s, g, nm);
            if (sq)
                return rlx_fail(RLX_ERR_UNSUPPORTED,
                                "%s: input '%s' is a sequence (made by %s); rlx resolves sequences while importing "
                                "and accepts them only as inputs of sequence ops (SequenceAt, SequenceLength, "
                                "ConcatFromSequence, ...)",
                                label, nm, sq->origin);
            if ((sq = find_outer_seq(s, g, nm))) return outer_seq_error(label, nm, sq);
        }
        return RLX_OK;
    }
    *handled = true;
    if (which >= 0 && g->opset < k_ops[which].since)
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: op %s does not exist at opset %lld (it exists from opset %d)",
                        label, op, (long long)g->opset, k_ops[which].since);
    if (seq_identity) return op_identity(s, g, np, label);
    switch (which) {
    case 0: return op_construct(s, g, np, label, true);
    case 1: return op_construct(s, g, np, label, false);
    case 2: return op_insert(s, g, np, label);
    case 3: return op_erase(s, g, np, label);
    case 4: return op_at(s, g, np, label);
    case 5: return op_length(s, g, np, label);
    case 6: return op_split(s, g, np, label);
    case 7: return op_concat(s, g, np, label);
    default: return op_map(s, g, np, label);
    }
}

rlx_status rlx_onnx_seq_check_output(const Onnx__GraphProto *gp, const Onnx__ValueInfoProto *vi) {
    if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) return RLX_OK;
    for (size_t i = 0; gp->node && i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        for (size_t k = 0; np && np->output && k < np->n_output; k++) {
            if (!np->output[k] || strcmp(np->output[k], vi->name) != 0) continue;
            char who[300];
            if (np->name && *np->name) snprintf(who, sizeof who, "node '%s'", np->name);
            else snprintf(who, sizeof who, "node #%zu", i);
            return rlx_fail(RLX_ERR_UNSUPPORTED,
                            "graph output '%s' has a sequence type (made by %s (%s)); rlx resolves sequences while "
                            "importing and cannot return them",
                            vi->name, who, np->op_type ? np->op_type : "?");
        }
    }
    return rlx_fail(RLX_ERR_UNSUPPORTED,
                    "graph output '%s' has a sequence type; rlx resolves sequences while importing and cannot "
                    "return them",
                    vi->name);
}

rlx_status rlx_onnx_seq_finish(const rlx_onnx_seq_scope *s, const rlx_graph *g) {
    if (!s->n) return RLX_OK;
    for (size_t i = 0; i < g->n_outputs; i++) {
        const seq_val *sq = find_seq_id(s, g->outputs[i]);
        if (sq)
            return rlx_fail(RLX_ERR_UNSUPPORTED,
                            "graph output '%s' is a sequence (made by %s); rlx resolves sequences while importing and "
                            "cannot return them",
                            g->values[sq->id].name, sq->origin);
    }
    for (size_t i = 0; i < g->n_nodes; i++) {
        const rlx_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_in; k++) {
            const seq_val *sq = n->in[k] >= 0 ? find_seq_id(s, n->in[k]) : NULL;
            if (sq)
                return rlx_fail(RLX_ERR_UNSUPPORTED,
                                "%s: input '%s' is a sequence (made by %s, listed after it); rlx resolves sequences "
                                "while importing and accepts them only as inputs of sequence ops, in node order",
                                rlx_node_desc(n), g->values[sq->id].name, sq->origin);
        }
    }
    return RLX_OK;
}
