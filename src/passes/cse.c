/* passes/cse.c — common-subexpression elimination: a node that repeats an
 * earlier node (same op, version, inputs and attributes) is removed and its
 * outputs' uses read the earlier node's outputs. Equal small constants are
 * merged first so that their users compare equal. Nodes with subgraphs and
 * non-deterministic ops (RLX_OP_NO_FOLD) are left alone; a node whose output
 * is a graph output is kept (its name is part of the interface). */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/status.h"
#include "base/tensor.h"
#include "ir/op.h"
#include "passes/fuse_util.h"
#include "passes/passes.h"

static bool attr_equal(const rlx_node_attr *a, const rlx_node_attr *b) {
    if (strcmp(a->name, b->name) != 0 || a->type != b->type) return false;
    switch (a->type) {
    case RLX_ATTR_FLOAT: return memcmp(&a->f, &b->f, sizeof a->f) == 0;
    case RLX_ATTR_INT: return a->i == b->i;
    case RLX_ATTR_STRING: return strcmp(a->s ? a->s : "", b->s ? b->s : "") == 0;
    case RLX_ATTR_FLOATS: return a->n == b->n && (a->n == 0 || memcmp(a->floats, b->floats, a->n * sizeof(float)) == 0);
    case RLX_ATTR_INTS: return a->n == b->n && (a->n == 0 || memcmp(a->ints, b->ints, a->n * sizeof(int64_t)) == 0);
    case RLX_ATTR_STRINGS:
        if (a->n != b->n) return false;
        for (size_t i = 0; i < a->n; i++)
            if (strcmp(a->strings[i], b->strings[i]) != 0) return false;
        return true;
    case RLX_ATTR_TENSOR:
        return a->t->dtype == b->t->dtype && rlx_shape_equal(a->t->dims, a->t->rank, b->t->dims, b->t->rank) &&
               memcmp(a->t->data, b->t->data, a->t->nbytes) == 0;
    default: return false; /* graphs: never equal here */
    }
}

static bool node_equal(const rlx_node *a, const rlx_node *b) {
    if (a->def != b->def || a->version != b->version || a->n_in != b->n_in || a->n_out != b->n_out ||
        a->n_attrs != b->n_attrs)
        return false;
    for (int i = 0; i < a->n_in; i++)
        if (a->in[i] != b->in[i]) return false;
    for (int i = 0; i < a->n_out; i++)
        if ((a->out[i] < 0) != (b->out[i] < 0)) return false;
    for (int i = 0; i < a->n_attrs; i++) {
        const rlx_node_attr *bb = rlx_node_attr_find(b, a->attrs[i].name);
        if (!bb || !attr_equal(&a->attrs[i], bb)) return false;
    }
    return true;
}

static uint64_t node_hash(const rlx_node *n) {
    uint64_t h = (uint64_t)(uintptr_t)n->def * 31u + (uint64_t)n->version;
    for (int i = 0; i < n->n_in; i++) h = h * 1000003u + (uint64_t)(n->in[i] + 2);
    return h;
}


/* Merges equal constants of at most 4096 bytes (scalars and small vectors
 * that exporters repeat). */
static void merge_constants(rlx_graph *g) {
    size_t nv = g->n_values;
    int *canon = malloc((nv + 1) * sizeof *canon);
    if (!canon) return;
    size_t n_canon = 0;
    for (size_t i = 0; i < nv; i++) {
        const rlx_value *v = &g->values[i];
        if (!v->konst || v->konst->nbytes > 4096 || (v->flags & (RLX_VALUE_OUTPUT | RLX_VALUE_INPUT))) continue;
        int found = -1;
        for (size_t j = 0; j < n_canon && found < 0; j++) {
            const rlx_tensor *a = g->values[canon[j]].konst, *b = v->konst;
            if (a->dtype == b->dtype && rlx_shape_equal(a->dims, a->rank, b->dims, b->rank) &&
                memcmp(a->data, b->data, a->nbytes) == 0)
                found = canon[j];
        }
        if (found >= 0) rlx_fuse_replace_uses(g, (int)i, found);
        else canon[n_canon++] = (int)i;
    }
    free(canon);
}

rlx_status rlx_pass_cse(rlx_graph *g, rlx_pass_stats *stats) {
    merge_constants(g);
    size_t nn = g->n_nodes, cap = 16;
    while (cap < nn * 2) cap *= 2;
    int *table = malloc(cap * sizeof *table);
    if (!table) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (cse)");
    for (size_t i = 0; i < cap; i++) table[i] = -1;
    for (size_t i = 0; i < nn; i++) {
        rlx_node *n = &g->nodes[i];
        if (n->dead || (n->def->flags & (RLX_OP_NO_FOLD | RLX_OP_CONTROL_FLOW))) continue;
        size_t slot = node_hash(n) & (cap - 1);
        int match = -1;
        while (table[slot] >= 0) {
            if (node_equal(&g->nodes[table[slot]], n)) {
                match = table[slot];
                break;
            }
            slot = (slot + 1) & (cap - 1);
        }
        if (match < 0) {
            table[slot] = (int)i;
            continue;
        }
        bool keep = false;
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0 && rlx_fuse_is_output(g, n->out[k])) keep = true;
        if (keep) continue;
        const rlx_node *m = &g->nodes[match];
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0) rlx_fuse_replace_uses(g, n->out[k], m->out[k]);
        n->dead = true;
        if (stats) stats->removed++;
    }
    free(table);
    rlx_graph_compact(g);
    return RLX_OK;
}
