/* passes/fuse_util.c — helpers of the fusion passes (see fuse_util.h). */
#include "passes/fuse_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/mem.h"
#include "base/platform.h"
#include "base/tensor.h"
#include "ir/op.h"
#include "rlx/half.h"

rlx_status rlx_fuse_limit_check(const rlx_graph *g, const rlx_pass_stats *stats, const int *nodes, int n) {
    if (!stats || !stats->cfg) return RLX_OK;
    for (int i = 0; i < n; i++) {
        if (nodes[i] < 0 || (size_t)nodes[i] >= g->n_nodes) continue;
        const rlx_node *nd = &g->nodes[nodes[i]];
        for (int k = 0; k < nd->n_out; k++)
            if (nd->out[k] >= 0) RLX_TRY(rlx_value_limit_check(stats->cfg, g, &g->values[nd->out[k]]));
    }
    return RLX_OK;
}

/* Whether a subgraph of n before attribute a also reads outer name `name`
 * (the value is counted once per node). */
static bool outer_read_before(const rlx_node *n, int a, const char *name) {
    for (int k = 0; k < a; k++) {
        const rlx_graph *b = n->attrs[k].g;
        int id = b ? rlx_graph_find(b, name) : -1;
        if (id >= 0 && (b->values[id].flags & RLX_VALUE_OUTER)) return true;
    }
    return false;
}

/* Each value v of g that a subgraph of node n (If branch, Loop or Scan
 * body) reads by name, once per value (a nested subgraph's reference has a
 * stand-in, RLX_VALUE_OUTER, in each graph between): without fill counted
 * into u->start and *total, with fill recorded as used by node. */
static void each_outer_read(const rlx_graph *g, const rlx_node *n, rlx_fuse_users *u, int *fill, int node,
                            size_t *total) {
    for (int a = 0; a < n->n_attrs; a++) {
        const rlx_graph *b = n->attrs[a].g;
        for (size_t i = 0; b && i < b->n_values; i++) {
            const rlx_value *bv = &b->values[i];
            if (!(bv->flags & RLX_VALUE_OUTER) || !bv->name || outer_read_before(n, a, bv->name)) continue;
            int v = rlx_graph_find(g, bv->name);
            if (v < 0 || (size_t)v >= g->n_values) continue;
            if (fill) u->ids[fill[v]++] = node;
            else u->start[v + 1]++, (*total)++;
        }
    }
}

rlx_status rlx_fuse_users_build(const rlx_graph *g, rlx_fuse_users *u) {
    memset(u, 0, sizeof *u);
    size_t nv = g->n_values, total = 0;
    u->start = calloc(nv + 2, sizeof *u->start);
    if (!u->start) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (fusion users)");
    for (size_t i = 0; i < g->n_nodes; i++) {
        const rlx_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0 && (size_t)n->in[k] < nv) u->start[n->in[k] + 1]++, total++;
        each_outer_read(g, n, u, NULL, (int)i, &total);
    }
    for (size_t v = 0; v < nv; v++) u->start[v + 1] += u->start[v];
    u->ids = malloc((total + 1) * sizeof *u->ids);
    int *fill = malloc((nv + 1) * sizeof *fill);
    if (!u->ids || !fill) {
        free(fill);
        rlx_fuse_users_free(u);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (fusion users)");
    }
    memcpy(fill, u->start, nv * sizeof *fill);
    for (size_t i = 0; i < g->n_nodes; i++) {
        const rlx_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0 && (size_t)n->in[k] < nv) u->ids[fill[n->in[k]]++] = (int)i;
        each_outer_read(g, n, u, fill, (int)i, NULL);
    }
    free(fill);
    u->n_values = nv;
    return RLX_OK;
}

void rlx_fuse_users_free(rlx_fuse_users *u) {
    free(u->start);
    free(u->ids);
    memset(u, 0, sizeof *u);
}

bool rlx_fuse_is_output(const rlx_graph *g, int v) {
    for (size_t i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == v) return true;
    return false;
}

void rlx_fuse_replace_uses(rlx_graph *g, int from, int to) {
    for (size_t i = 0; i < g->n_nodes; i++) {
        rlx_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] == from) n->in[k] = to;
    }
}

bool rlx_fuse_private(const rlx_graph *g, const rlx_fuse_users *u, int v, int n) {
    if (v < 0 || (size_t)v >= g->n_values) return false;
    return rlx_fuse_n_users(u, v) == n && !rlx_fuse_is_output(g, v);
}

bool rlx_fuse_is(const rlx_node *n, rlx_op_id op) { return n && !n->dead && n->op == op; }

rlx_node *rlx_fuse_producer(const rlx_graph *g, int v) {
    if (v < 0 || (size_t)v >= g->n_values) return NULL;
    int p = g->values[v].producer;
    if (p < 0 || (size_t)p >= g->n_nodes || g->nodes[p].dead) return NULL;
    return &g->nodes[p];
}

bool rlx_fuse_konst_scalar(const rlx_value *v, float *out) {
    if (!v || !v->konst || rlx_tensor_numel(v->konst) != 1) return false;
    const rlx_tensor *t = v->konst;
    switch (t->dtype) {
    case RLX_DTYPE_F32: *out = ((const float *)t->data)[0]; return true;
    case RLX_DTYPE_F64: *out = (float)((const double *)t->data)[0]; return true;
    case RLX_DTYPE_F16: *out = rlx_f16_to_f32(((const uint16_t *)t->data)[0]); return true;
    case RLX_DTYPE_BF16: *out = rlx_bf16_to_f32(((const uint16_t *)t->data)[0]); return true;
    default: return false;
    }
}

bool rlx_fuse_same_shape(const rlx_value *a, const rlx_value *b) {
    return a && b && rlx_value_is_static(a) && rlx_value_is_static(b) &&
           rlx_shape_equal(a->dims, a->rank, b->dims, b->rank);
}

/* The attribute `name` of n, added (zeroed, named) when absent. */
static rlx_status attr_slot(rlx_node *n, const char *name, rlx_node_attr **out) {
    for (int i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].name && strcmp(n->attrs[i].name, name) == 0) {
            rlx_node_attr_free(&n->attrs[i]);
            *out = &n->attrs[i];
            break;
        }
    if (!*out) {
        rlx_node_attr *a = realloc(n->attrs, ((size_t)n->n_attrs + 2) * sizeof *a);
        if (!a) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (attribute)");
        n->attrs = a;
        *out = &a[n->n_attrs++];
    }
    memset(*out, 0, sizeof **out);
    (*out)->name = rlx_strdup(name);
    if (!(*out)->name) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (attribute)");
    return RLX_OK;
}

rlx_status rlx_fuse_copy_attr(rlx_node *n, const rlx_node_attr *src, const char *name) {
    if (src->type != RLX_ATTR_INT && src->type != RLX_ATTR_FLOAT && src->type != RLX_ATTR_INTS &&
        src->type != RLX_ATTR_FLOATS)
        return rlx_fail(RLX_ERR_INTERNAL, "attribute '%s': only numbers and lists of them are copied", src->name);
    rlx_node_attr *a = NULL;
    RLX_TRY(attr_slot(n, name, &a));
    a->type = src->type;
    a->i = src->i;
    a->f = src->f;
    if (src->type == RLX_ATTR_INTS || src->type == RLX_ATTR_FLOATS) {
        size_t esz = src->type == RLX_ATTR_INTS ? sizeof *src->ints : sizeof *src->floats;
        void *d = malloc(src->n ? src->n * esz : 1);
        if (!d) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (attribute)");
        if (src->n) memcpy(d, src->type == RLX_ATTR_INTS ? (const void *)src->ints : (const void *)src->floats, src->n * esz);
        if (src->type == RLX_ATTR_INTS) a->ints = d;
        else a->floats = d;
        a->n = src->n;
    }
    return rlx_node_resolve_params(n);
}

rlx_status rlx_fuse_set_int(rlx_node *n, const char *name, int64_t v) {
    rlx_node_attr *a = NULL;
    RLX_TRY(attr_slot(n, name, &a));
    a->type = RLX_ATTR_INT;
    a->i = v;
    return rlx_node_resolve_params(n);
}

rlx_status rlx_fuse_set_float(rlx_node *n, const char *name, float v) {
    rlx_node_attr *a = NULL;
    RLX_TRY(attr_slot(n, name, &a));
    a->type = RLX_ATTR_FLOAT;
    a->f = v;
    return rlx_node_resolve_params(n);
}

rlx_status rlx_fuse_emplace(rlx_graph *g, int slot, const char *op, const char *domain, const char *name,
                            const int *in, int n_in, const int *out, int n_out, rlx_node_attr *attrs, int n_attrs) {
    int id = -1;
    RLX_TRY(rlx_graph_add_node(g, op, domain, name, in, n_in, out, n_out, attrs, n_attrs, &id));
    if (id != slot) {
        rlx_node tmp = g->nodes[slot];
        g->nodes[slot] = g->nodes[id];
        g->nodes[id] = tmp;
    }
    for (int k = 0; k < n_out; k++)
        if (out[k] >= 0) g->values[out[k]].producer = slot;
    return rlx_infer_node(g, slot);
}

/* Set by the session around its pass pipeline (option debug.fusion_report);
 * a pipeline runs on one thread. */
static _Thread_local bool t_reporting;

void rlx_fuse_set_reporting(bool on) { t_reporting = on; }

bool rlx_fuse_reporting(void) { return t_reporting; }

void rlx_fuse_describe(const rlx_graph *g, const int *nodes, int n, char *buf, size_t cap) {
    size_t o = strlen(buf);
    for (int i = 0; i < n && o + 1 < cap; i++) {
        const rlx_node *nd = &g->nodes[nodes[i]];
        int w = snprintf(buf + o, cap - o, "%s%s '%s'", o ? " + " : "", nd->op_type, nd->name ? nd->name : "?");
        if (w < 0) break;
        o += (size_t)w;
    }
}

void rlx_fuse_report(const char *pass, const char *fused, const rlx_node *result, const char *detail) {
    if (!rlx_fuse_reporting()) return;
    if (!result) {
        rlx_log(RLX_LOG_DEBUG, "fusion: %s: %s -> nothing%s%s%s", pass, fused, detail ? " (" : "", detail ? detail : "",
                detail ? ")" : "");
        return;
    }
    rlx_log(RLX_LOG_DEBUG, "fusion: %s: %s -> %s%s%s '%s'%s%s%s", pass, fused, (result->domain && *result->domain) ? result->domain : "",
            (result->domain && *result->domain) ? "." : "", result->op_type, result->name ? result->name : "?",
            detail ? " (" : "", detail ? detail : "", detail ? ")" : "");
}

rlx_status rlx_fuse_each_anchor(rlx_graph *g, rlx_op_id anchor_op, rlx_fuse_one_fn one, rlx_pass_stats *stats) {
    rlx_fuse_users u;
    RLX_TRY(rlx_fuse_users_build(g, &u));
    rlx_status st = RLX_OK;
    bool any = false;
    size_t nn = g->n_nodes;
    for (size_t i = 0; i < nn && !st; i++) {
        if (!rlx_fuse_is(&g->nodes[i], anchor_op)) continue;
        bool done = false;
        st = one(g, &u, (int)i, stats, &done);
        any |= done;
    }
    rlx_fuse_users_free(&u);
    if (any) rlx_graph_compact(g);
    return st;
}
