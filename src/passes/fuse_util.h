/* Helpers shared by the fusion passes (passes/fuse_*.c, fold_conv_affine.c):
 * a value -> users index, pattern predicates, node rewriting, and the
 * fusion report.
 *
 * RLX_FUSION_REPORT=1 prints one line per fusion to stderr:
 *   fusion: <pass>: <op> '<name>' + <op> '<name>' ... -> <op> '<name>' (<detail>)
 * naming the nodes that were fused and the node that replaced them. */
#ifndef RLX_PASSES_FUSE_UTIL_H
#define RLX_PASSES_FUSE_UTIL_H

#include "base/status.h"
#include "ir/graph.h"
#include "ir/ops/act.h"
#include "passes/passes.h"

/* Users of every value: the node ids that read it (one entry per input
 * slot, so a node reading a value twice appears twice), in node order;
 * a node whose subgraphs (If branches, Loop or Scan bodies) read the value
 * by name is one more user of it (once), so that no fusion takes away a
 * value that a branch still names (fuse_nbits and fuse_qdq_conv run before
 * the fold inlines the branch of an If whose condition a plan fixes). */
typedef struct rlx_fuse_users {
    int *start; /* n_values + 1 entries: users of v are ids[start[v] .. start[v+1]) */
    int *ids;
    size_t n_values;
} rlx_fuse_users;

/* Builds the index over the live (not dead) nodes.
 * errors: RLX_ERR_OUT_OF_MEMORY. */
rlx_status rlx_fuse_users_build(const rlx_graph *g, rlx_fuse_users *u);
void rlx_fuse_users_free(rlx_fuse_users *u);

/* Number of uses of value v (node inputs and subgraph reads; graph outputs
 * not counted). */
static inline int rlx_fuse_n_users(const rlx_fuse_users *u, int v) {
    return (v < 0 || (size_t)v >= u->n_values) ? 0 : u->start[v + 1] - u->start[v];
}
/* The i-th user (node id) of value v. */
static inline int rlx_fuse_user(const rlx_fuse_users *u, int v, int i) { return u->ids[u->start[v] + i]; }

/* True when v is a graph output. */
bool rlx_fuse_is_output(const rlx_graph *g, int v);

/* Makes every node input that reads value `from` read `to` (graph outputs
 * unchanged). */
void rlx_fuse_replace_uses(rlx_graph *g, int from, int to);

/* True when value v is read by exactly n node inputs and is not a graph
 * output: the precondition for folding its producer into its users. */
bool rlx_fuse_private(const rlx_graph *g, const rlx_fuse_users *u, int v, int n);

/* One fusion attempt anchored at node `id`: rewrites the graph (the
 * fused nodes marked dead) and sets *done, or leaves it and *done false. */
typedef rlx_status (*rlx_fuse_one_fn)(rlx_graph *g, const rlx_fuse_users *u, int id, rlx_pass_stats *stats,
                                      bool *done);

/* The driver of a fusion pass anchored at one op: calls one() for every
 * node of op `anchor_op` present at the start (users indexed once,
 * before any rewrite), then compacts the graph when anything fused.
 * errors: those of one(); RLX_ERR_OUT_OF_MEMORY. */
rlx_status rlx_fuse_each_anchor(rlx_graph *g, rlx_op_id anchor_op, rlx_fuse_one_fn one, rlx_pass_stats *stats);

/* True when n is a live node of op `op` (RLX_OP_Add, ...; exact, domain
 * included). */
bool rlx_fuse_is(const rlx_node *n, rlx_op_id op);

/* The producer node of value v when it is live, else NULL. */
rlx_node *rlx_fuse_producer(const rlx_graph *g, int v);

/* A constant floating-point scalar (numel 1, f32/f16/bf16/f64) as float. */
bool rlx_fuse_konst_scalar(const rlx_value *v, float *out);

/* The input of binary node n other than value x: -1 when n does not have
 * two inputs, when both are the same value, or when neither is x. */
static inline int rlx_fuse_other_input(const rlx_node *n, int x) {
    if (n->n_in != 2 || n->in[0] == n->in[1]) return -1;
    if (n->in[0] == x) return n->in[1];
    if (n->in[1] == x) return n->in[0];
    return -1;
}

/* True when the two values have the same static shape. */
bool rlx_fuse_same_shape(const rlx_value *a, const rlx_value *b);

/* Sets (adds or replaces) an INT or FLOAT attribute of a node.
 * errors: RLX_ERR_OUT_OF_MEMORY. */
rlx_status rlx_fuse_set_int(rlx_node *n, const char *name, int64_t v);
rlx_status rlx_fuse_set_float(rlx_node *n, const char *name, float v);
/* Sets attribute `name` of n to a copy of src's value (INT, FLOAT, INTS or
 * FLOATS). errors: RLX_ERR_OUT_OF_MEMORY; RLX_ERR_INTERNAL for another type. */
rlx_status rlx_fuse_copy_attr(rlx_node *n, const rlx_node_attr *src, const char *name);

/* Replaces node `slot` (already marked dead, as are the other nodes being
 * fused) by a new node of op `domain.op`, keeping the slot's position in
 * the order. The outputs `out` must have no live producer any more (the
 * caller resets value->producer of the old outputs to -1). attrs are adopted
 * (see rlx_graph_add_node). The new node's outputs are inferred.
 * Invalidates node pointers into g->nodes.
 * errors: those of rlx_graph_add_node and of shape inference. */
rlx_status rlx_fuse_emplace(rlx_graph *g, int slot, const char *op, const char *domain, const char *name,
                            const int *in, int n_in, const int *out, int n_out, rlx_node_attr *attrs, int n_attrs);

/* The activation patterns of fuse_activation.c (a unary activation op,
 * Clip with constant bounds, the SiLU and erf-GELU patterns) reading value
 * x, which must be f32 with a static shape: on a match, appends the
 * pattern's node ids to nodes[*nn ..] (room for 7), sets *out to its result
 * (x's shape, f32) and *act, and returns true; else leaves them (act none,
 * *out -1) and returns false. Every intermediate value is private to the
 * pattern. Implemented in fuse_activation.c. */
bool rlx_fuse_match_act(const rlx_graph *g, const rlx_fuse_users *u, int x, int *nodes, int *nn, int *out,
                        rlx_act *act);
/* The lower-case name of an activation kind ("relu", "clip", ...). */
const char *rlx_fuse_act_name(rlx_act_kind k);

/* limits.max_tensor_bytes (stats->cfg; none without stats or cfg) on the
 * outputs of nodes[0..n) (ids; negative ones skipped), for a fusion that
 * runs before the pipeline's own check (rlx_plan_passes, after the fold) and
 * removes or renames these nodes: called before the rewrite, so that a
 * value too large is named with the model's node that makes it, as with
 * the fusion off, not with the node the fusion made or not at all (the
 * value, orphaned). errors: RLX_ERR_OUT_OF_MEMORY (rlx_value_limit_check). */
rlx_status rlx_fuse_limit_check(const rlx_graph *g, const rlx_pass_stats *stats, const int *nodes, int n);

/* The fusion report (option debug.fusion_report). Describe the nodes before the
 * rewrite (they may move or disappear), report after it:
 *   char what[512] = "";
 *   if (rlx_fuse_reporting()) rlx_fuse_describe(g, ids, n, what, sizeof what);
 *   ... rewrite ...
 *   rlx_fuse_report("fuse_x", what, new_node, "detail"); */
bool rlx_fuse_reporting(void);
/* Turns reporting on or off for the calling thread (the session, from its
 * option debug.fusion_report, before it runs the pass pipeline). */
void rlx_fuse_set_reporting(bool on);
/* Writes "Op 'name' + Op 'name' + ..." of nodes[0..n) into buf. */
void rlx_fuse_describe(const rlx_graph *g, const int *nodes, int n, char *buf, size_t cap);
/* Prints "fusion: <pass>: <fused> -> <op> '<name>' (<detail>)" when
 * reporting; detail may be NULL; result NULL: "-> nothing" (the nodes went). */
void rlx_fuse_report(const char *pass, const char *fused, const rlx_node *result, const char *detail);

#endif
