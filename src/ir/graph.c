#include "ir/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/escape.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/options.h"
#include "base/status.h"
#include "base/tensor.h"
#include "ir/op.h"

/* ------------------------------------------------------------ name hash */

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static rlx_status hash_insert(rlx_graph *g, int id);

static rlx_status hash_rebuild(rlx_graph *g, size_t cap) {
    int *h = malloc(cap * sizeof *h);
    if (!h) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (name table)");
    for (size_t i = 0; i < cap; i++) h[i] = -1;
    free(g->hash);
    g->hash = h;
    g->hash_cap = cap;
    for (size_t i = 0; i < g->n_values; i++)
        if (g->values[i].name) RLX_TRY(hash_insert(g, (int)i));
    return RLX_OK;
}

static rlx_status hash_insert(rlx_graph *g, int id) {
    if ((g->n_values + 1) * 2 > g->hash_cap) {
        size_t cap = g->hash_cap ? g->hash_cap * 2 : 64;
        while (cap < (g->n_values + 1) * 2) cap *= 2;
        return hash_rebuild(g, cap); /* re-inserts every value including id */
    }
    size_t m = g->hash_cap - 1;
    size_t i = hash_str(g->values[id].name) & m;
    while (g->hash[i] >= 0) i = (i + 1) & m;
    g->hash[i] = id;
    return RLX_OK;
}

int rlx_graph_find(const rlx_graph *g, const char *name) {
    if (!g->hash_cap || !name) return -1;
    size_t m = g->hash_cap - 1;
    size_t i = hash_str(name) & m;
    while (g->hash[i] >= 0) {
        if (strcmp(g->values[g->hash[i]].name, name) == 0) return g->hash[i];
        i = (i + 1) & m;
    }
    return -1;
}

/* ------------------------------------------------------------ lifetime */

rlx_status rlx_graph_create(int64_t opset, rlx_graph **out) {
    *out = NULL;
    rlx_graph *g = calloc(1, sizeof *g);
    if (!g) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (graph)");
    g->opset = opset;
    *out = g;
    return RLX_OK;
}

void rlx_node_attr_free(rlx_node_attr *a) {
    free(a->name);
    free(a->s);
    rlx_tensor_destroy(a->t);
    rlx_graph_destroy(a->g);
    free(a->floats);
    free(a->ints);
    if (a->strings)
        for (size_t i = 0; i < a->n; i++) free(a->strings[i]);
    free(a->strings);
    memset(a, 0, sizeof *a);
}

static void node_free(rlx_node *n) {
    free(n->name);
    free(n->op_type);
    free(n->domain);
    free(n->in);
    free(n->out);
    for (int i = 0; i < n->n_attrs; i++) rlx_node_attr_free(&n->attrs[i]);
    free(n->attrs);
    free(n->params);
}

void rlx_graph_destroy(rlx_graph *g) {
    if (!g) return;
    for (size_t i = 0; i < g->n_values; i++) {
        rlx_value *v = &g->values[i];
        free(v->name);
        if (!(v->flags & RLX_VALUE_KONST_BORROWED)) rlx_tensor_destroy(v->konst);
    }
    for (size_t i = 0; i < g->n_nodes; i++) node_free(&g->nodes[i]);
    for (size_t i = 0; i < g->n_syms; i++) free(g->syms[i]);
    for (size_t i = 0; i < g->n_sources; i++) {
        free(g->sources[i].domain);
        free(g->sources[i].op);
        free(g->sources[i].name);
    }
    free(g->sources);
    free(g->values);
    free(g->nodes);
    free(g->inputs);
    free(g->overridable);
    free(g->overridable_decl);
    free(g->outputs);
    free(g->out_decl);
    free(g->syms);
    free(g->hash);
    free(g);
}

rlx_status rlx_graph_mark_source(rlx_graph *g, const char *domain, const char *op, const char *name, size_t first) {
    RLX_TRY(RLX_GROW(g->sources, g->cap_sources, g->n_sources + 1));
    rlx_node_source *src = &g->sources[g->n_sources];
    src->domain = rlx_strdup(domain ? domain : "");
    src->op = rlx_strdup(op ? op : "");
    src->name = rlx_strdup(name ? name : "");
    if (!src->domain || !src->op || !src->name) {
        free(src->domain);
        free(src->op);
        free(src->name);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    }
    g->n_sources++;
    for (size_t i = first; i < g->n_nodes; i++) g->nodes[i].source = (int)g->n_sources;
    return RLX_OK;
}

/* *a = attribute `name` of `type`: INT (i), FLOAT (f), or INTS / FLOATS of
 * the n values at v (copied). */
static rlx_status attr_set(rlx_node_attr *a, const char *name, rlx_attr_type type, int64_t i, float f, const void *v,
                           size_t n) {
    bool list = type == RLX_ATTR_INTS || type == RLX_ATTR_FLOATS;
    size_t es = type == RLX_ATTR_INTS ? sizeof(int64_t) : sizeof(float);
    void *copy = list ? malloc((n + 1) * es) : NULL;
    memset(a, 0, sizeof *a);
    if (!(a->name = rlx_strdup(name)) || (list && !copy)) {
        free(a->name);
        free(copy);
        memset(a, 0, sizeof *a);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory (attribute %s)", name);
    }
    if (list && n) memcpy(copy, v, n * es);
    if (type == RLX_ATTR_INTS) a->ints = copy;
    else a->floats = copy;
    a->type = type;
    a->i = i;
    a->f = f;
    a->n = list ? n : 0;
    return RLX_OK;
}

rlx_status rlx_node_attr_set_int(rlx_node_attr *a, const char *name, int64_t v) {
    return attr_set(a, name, RLX_ATTR_INT, v, 0.0f, NULL, 0);
}

rlx_status rlx_node_attr_set_float(rlx_node_attr *a, const char *name, float v) {
    return attr_set(a, name, RLX_ATTR_FLOAT, 0, v, NULL, 0);
}

rlx_status rlx_node_attr_set_ints(rlx_node_attr *a, const char *name, const int64_t *v, size_t n) {
    return attr_set(a, name, RLX_ATTR_INTS, 0, 0.0f, v, n);
}

rlx_status rlx_node_attr_set_floats(rlx_node_attr *a, const char *name, const float *v, size_t n) {
    return attr_set(a, name, RLX_ATTR_FLOATS, 0, 0.0f, v, n);
}

rlx_status rlx_node_attr_copy(rlx_node_attr *d, const rlx_node_attr *s) {
    memset(d, 0, sizeof *d);
    d->type = s->type;
    d->f = s->f;
    d->i = s->i;
    d->n = s->n;
    d->name = rlx_strdup(s->name);
    if (s->name && !d->name) goto oom;
    if (s->s && !(d->s = rlx_strdup(s->s))) goto oom;
    if (s->t) RLX_TRY(rlx_tensor_clone(s->t, &d->t));
    if (s->g) RLX_TRY(rlx_graph_clone(s->g, &d->g));
    if (s->floats) {
        if (!(d->floats = malloc(s->n * sizeof(float) + 1))) goto oom;
        memcpy(d->floats, s->floats, s->n * sizeof(float));
    }
    if (s->ints) {
        if (!(d->ints = malloc(s->n * sizeof(int64_t) + 1))) goto oom;
        memcpy(d->ints, s->ints, s->n * sizeof(int64_t));
    }
    if (s->strings) {
        if (!(d->strings = calloc(s->n + 1, sizeof(char *)))) goto oom;
        for (size_t i = 0; i < s->n; i++)
            if (!(d->strings[i] = rlx_strdup(s->strings[i]))) goto oom;
    }
    return RLX_OK;
oom:
    rlx_node_attr_free(d);
    return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory copying an attribute");
}

rlx_status rlx_graph_clone(const rlx_graph *src, rlx_graph **out) {
    *out = NULL;
    rlx_graph *g;
    RLX_TRY(rlx_graph_create(src->opset, &g));
    rlx_status st = RLX_OK;
    g->name_counter = src->name_counter;
    g->parent = src->parent;
    g->syms_equal_assumed = src->syms_equal_assumed;
    g->shapes_bound = src->shapes_bound;
    for (size_t i = 0; i < src->n_syms; i++)
        if (rlx_graph_sym(g, src->syms[i]) < 0) { st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory"); goto fail; }
    for (size_t i = 0; i < src->n_values; i++) {
        const rlx_value *sv = &src->values[i];
        int id;
        RLX_TRY_GOTO(st, rlx_graph_add_value(g, sv->name, &id), fail);
        rlx_value *v = &g->values[id];
        char *name = v->name;
        *v = *sv;
        v->name = name;
        if (sv->konst) v->flags |= RLX_VALUE_KONST_BORROWED;
    }
    RLX_TRY_GOTO(st, RLX_GROW(g->nodes, g->cap_nodes, src->n_nodes), fail);
    for (size_t i = 0; i < src->n_nodes; i++) {
        const rlx_node *sn = &src->nodes[i];
        rlx_node *n = &g->nodes[i];
        memset(n, 0, sizeof *n);
        g->n_nodes = i + 1;
        n->op = sn->op;
        n->def = sn->def;
        n->version = sn->version;
        n->dead = sn->dead;
        n->one_shape = sn->one_shape;
        n->name = rlx_strdup(sn->name);
        n->op_type = rlx_strdup(sn->op_type);
        n->domain = rlx_strdup(sn->domain);
        n->in = malloc(((size_t)sn->n_in + 1) * sizeof(int));
        n->out = malloc(((size_t)sn->n_out + 1) * sizeof(int));
        n->attrs = calloc((size_t)sn->n_attrs + 1, sizeof(rlx_node_attr));
        if (!n->name || !n->op_type || !n->domain || !n->in || !n->out || !n->attrs) {
            st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory cloning a graph");
            goto fail;
        }
        n->n_in = sn->n_in;
        n->n_out = sn->n_out;
        memcpy(n->in, sn->in, (size_t)sn->n_in * sizeof(int));
        memcpy(n->out, sn->out, (size_t)sn->n_out * sizeof(int));
        for (int a = 0; a < sn->n_attrs; a++) {
            RLX_TRY_GOTO(st, rlx_node_attr_copy(&n->attrs[a], &sn->attrs[a]), fail);
            n->n_attrs = a + 1;
            if (n->attrs[a].g) n->attrs[a].g->parent = g;
        }
        RLX_TRY_GOTO(st, rlx_node_resolve_params(n), fail);
    }
    RLX_TRY_GOTO(st, RLX_GROW(g->inputs, g->cap_inputs, src->n_inputs + 1), fail);
    if (src->n_inputs) memcpy(g->inputs, src->inputs, src->n_inputs * sizeof(int));
    g->n_inputs = src->n_inputs;
    RLX_TRY_GOTO(st, RLX_GROW(g->outputs, g->cap_outputs, src->n_outputs + 1), fail);
    if (src->n_outputs) memcpy(g->outputs, src->outputs, src->n_outputs * sizeof(int));
    g->n_outputs = src->n_outputs;
    *out = g;
    return RLX_OK;
fail:
    rlx_graph_destroy(g);
    return st;
}

/* ------------------------------------------------------------ values */

rlx_status rlx_graph_add_value(rlx_graph *g, const char *name, int *out_id) {
    *out_id = -1;
    char gen[48];
    if (!name || !*name) {
        do {
            snprintf(gen, sizeof gen, "_rlx_%u", g->name_counter++);
        } while (rlx_graph_find(g, gen) >= 0);
        name = gen;
    } else if (rlx_graph_find(g, name) >= 0) {
        return rlx_fail(RLX_ERR_INVALID_MODEL, "value '%s' is defined twice", name);
    }
    RLX_TRY(RLX_GROW(g->values, g->cap_values, g->n_values + 1));
    rlx_value *v = &g->values[g->n_values];
    memset(v, 0, sizeof *v);
    v->name = rlx_strdup(name);
    if (!v->name) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    v->rank = -1;
    v->producer = -1;
    for (int i = 0; i < RLX_MAX_RANK; i++) v->syms[i] = -1;
    int id = (int)g->n_values++;
    rlx_status st = hash_insert(g, id);
    if (st) {
        g->n_values--;
        free(v->name);
        return st;
    }
    *out_id = id;
    return RLX_OK;
}

void rlx_value_set_shape(rlx_value *v, int rank, const int64_t *dims, const int32_t *syms) {
    v->rank = rank;
    for (int i = 0; i < RLX_MAX_RANK; i++) {
        v->dims[i] = (i < rank && dims) ? dims[i] : 0;
        v->syms[i] = (i < rank && syms) ? syms[i] : -1;
        if (i < rank && v->dims[i] < 0) v->dims[i] = RLX_DIM_DYN;
    }
}

void rlx_value_set_konst(rlx_value *v, rlx_tensor *t) {
    if (v->konst && !(v->flags & RLX_VALUE_KONST_BORROWED)) rlx_tensor_destroy(v->konst);
    v->flags &= ~(uint32_t)RLX_VALUE_KONST_BORROWED;
    v->konst = t;
    v->dtype = t->dtype;
    rlx_value_set_shape(v, t->rank, t->dims, NULL);
}

rlx_status rlx_graph_add_konst(rlx_graph *g, const char *name, rlx_tensor *t, int *out_id) {
    rlx_status st = rlx_graph_add_value(g, name, out_id);
    if (st) {
        rlx_tensor_destroy(t);
        return st;
    }
    rlx_value_set_konst(&g->values[*out_id], t);
    return RLX_OK;
}

rlx_status rlx_graph_add_konst_i64s(rlx_graph *g, const char *name, const int64_t *v, size_t n, int *out_id) {
    int64_t d = (int64_t)n;
    rlx_tensor *t;
    RLX_TRY(rlx_tensor_create(RLX_DTYPE_I64, &d, 1, &t));
    if (n) memcpy(t->data, v, n * sizeof(int64_t));
    return rlx_graph_add_konst(g, name, t, out_id);
}

bool rlx_value_is_static(const rlx_value *v) {
    if (v->rank < 0) return false;
    for (int i = 0; i < v->rank; i++)
        if (v->dims[i] < 0) return false;
    return true;
}

size_t rlx_value_numel(const rlx_value *v) {
    if (!rlx_value_is_static(v)) return 0;
    size_t n = 1;
    for (int i = 0; i < v->rank; i++) n *= (size_t)v->dims[i];
    return n;
}

uint64_t rlx_value_bytes(const rlx_value *v) {
    uint64_t n = rlx_dtype_size(v->dtype);
    for (int i = 0; i < v->rank; i++)
        if (v->dims[i] <= 0) return 0; /* empty (or dynamic), whatever the other dims multiply to */
    for (int i = 0; i < v->rank; i++) {
        uint64_t d = (uint64_t)v->dims[i];
        if (d && n > UINT64_MAX / d) return UINT64_MAX;
        n *= d;
    }
    return n;
}

rlx_status rlx_value_limit_check(const struct rlx_config *cfg, const rlx_graph *g, const rlx_value *v) {
    if (!cfg || cfg->max_tensor_bytes <= 0 || !rlx_value_is_static(v)) return RLX_OK;
    uint64_t bytes = rlx_value_bytes(v);
    if (bytes <= (uint64_t)cfg->max_tensor_bytes) return RLX_OK;
    char what[640], sh[160];
    const char *shape = rlx_shape_str(v->dims, v->rank, sh, sizeof sh);
    if (v->producer >= 0 && (size_t)v->producer < g->n_nodes)
        snprintf(what, sizeof what, "%s: output '%s' (%s %s)", rlx_node_desc(&g->nodes[v->producer]), v->name,
                 rlx_dtype_name(v->dtype), shape);
    else
        snprintf(what, sizeof what, "value '%s' (%s %s)", v->name, rlx_dtype_name(v->dtype), shape);
    return rlx_limit_check(cfg, "limits.max_tensor_bytes", bytes, what);
}

/* Whether value v is a graph input or the output of a live node (not a
 * value a pass orphaned, which nothing writes and no plan allocates). */
static bool value_made(const rlx_graph *g, int v) {
    int p = g->values[v].producer;
    if (p >= 0) return (size_t)p < g->n_nodes && !g->nodes[p].dead;
    for (size_t i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] == v) return true;
    return false;
}

rlx_status rlx_graph_limit_check(const struct rlx_config *cfg, const rlx_graph *g) {
    for (size_t i = 0; i < g->n_values; i++)
        if (!g->values[i].konst && value_made(g, (int)i)) RLX_TRY(rlx_value_limit_check(cfg, g, &g->values[i]));
    return RLX_OK;
}

int rlx_graph_sym(rlx_graph *g, const char *name) {
    for (size_t i = 0; i < g->n_syms; i++)
        if (strcmp(g->syms[i], name) == 0) return (int)i;
    if (RLX_GROW(g->syms, g->cap_syms, g->n_syms + 1)) return -1;
    g->syms[g->n_syms] = rlx_strdup(name);
    if (!g->syms[g->n_syms]) return -1;
    return (int)g->n_syms++;
}

/* ------------------------------------------------------------ nodes */

const char *rlx_node_desc(const rlx_node *n) {
    static _Thread_local char buf[320];
    snprintf(buf, sizeof buf, "node '%s' (%s%s%s)", n->name ? n->name : "?",
             (n->domain && *n->domain) ? n->domain : "", (n->domain && *n->domain) ? "." : "",
             n->op_type ? n->op_type : "?");
    return buf;
}

rlx_status rlx_node_vfail(const rlx_node *n, rlx_status status, const char *fmt, va_list ap) {
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    return rlx_fail(status, "%s: %s", rlx_node_desc(n), msg);
}

bool rlx_value_from_caller(const rlx_graph *g, int id) {
    if (id < 0) return false;
    char *seen = calloc(g->n_values + 1, 1);
    int *stack = malloc((g->n_values + 1) * sizeof *stack);
    bool from = false;
    if (!seen || !stack) {
        from = true; /* unknown: the caller's, as a bound graph was before */
        goto done;
    }
    size_t top = 0;
    stack[top++] = id;
    seen[id] = 1;
    while (top && !from) {
        const rlx_value *v = &g->values[stack[--top]];
        if (v->flags & RLX_VALUE_OUTER) {
            /* an enclosing graph's value: whatever it comes from there (the
             * caller's when no enclosing graph defines it) */
            const rlx_graph *p = g->parent;
            int pid = -1;
            while (p && (pid = rlx_graph_find(p, v->name)) < 0) p = p->parent;
            from = !p || rlx_value_from_caller(p, pid);
            continue;
        }
        if (v->flags & (RLX_VALUE_INPUT | RLX_VALUE_FED)) from = true;
        if (from || v->producer < 0 || (size_t)v->producer >= g->n_nodes) continue;
        const rlx_node *p = &g->nodes[v->producer];
        for (int k = 0; k < p->n_in; k++) {
            int in = p->in[k];
            if (in >= 0 && !seen[in]) {
                seen[in] = 1;
                stack[top++] = in;
            }
        }
    }
done:
    free(seen);
    free(stack);
    return from;
}

rlx_status rlx_node_fault(const rlx_graph *g, const rlx_node *n, unsigned inputs, rlx_status st) {
    if (st != RLX_ERR_INVALID_MODEL || !g->shapes_bound) return st;
    /* a Loop, If or Scan fails on what its subgraph's node failed on, and
     * that node's own check already said whose fault it was */
    if (n->def && (n->def->flags & RLX_OP_CONTROL_FLOW)) return st;
    for (int k = 0; k < n->n_in; k++) {
        bool read = k < 32 ? (inputs >> k & 1u) != 0 : inputs == ~0u;
        if (read && rlx_value_from_caller(g, n->in[k])) return rlx_fail_prefix(RLX_ERR_INVALID_ARGUMENT, "%s", "");
    }
    return st;
}

const char *rlx_attr_type_name(rlx_attr_type t) {
    static const char *const names[] = { "UNDEFINED", "FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS", "INTS",
                                         "STRINGS" };
    return (unsigned)t < RLX_ARRAY_LEN(names) ? names[t] : "an unknown type";
}

bool rlx_attr_name_internal(const char *name) { return name && strncmp(name, "_rlx", 4) == 0; }

/* The type the op's version gives the node's attribute `name`
 * (rlx_op_attr_type), or RLX_ATTR_UNDEFINED. */
static rlx_attr_type expected_attr_type(const rlx_node *n, const char *name) {
    return rlx_op_attr_type(n->def, n->version, name);
}

/* An attribute that the op's version does not have: a node of the default
 * domain is refused, as onnxruntime refuses it (an opset-13 Clip with the
 * min and max attributes of Clip-6 would otherwise run unclipped; a
 * misspelt name would silently mean the default). Internal ones
 * ("_rlx...") are the fusion passes' (the importer refuses them:
 * rlx_attr_name_internal); rlx's own ops (domain "rlx") are only warned
 * about. */
static rlx_status check_unknown_attrs(const rlx_graph *g, const rlx_node *n) {
    for (int i = 0; i < n->n_attrs; i++) {
        const char *name = n->attrs[i].name;
        if (!name || rlx_attr_name_internal(name) || expected_attr_type(n, name) != RLX_ATTR_UNDEFINED) continue;
        if (*n->domain) {
            if (rlx_log_enabled(RLX_LOG_WARNING))
                rlx_log(RLX_LOG_WARNING, "%s: attribute '%s' is not one rlx knows for this op; ignored",
                        rlx_node_desc(n), name);
            continue;
        }
        char at[96] = "";
        if (g->opset > 0) snprintf(at, sizeof at, " at opset %lld", (long long)g->opset);
        int since = 0, until = 0;
        bool became_input = false;
        if (!rlx_op_attr_elsewhere(n->def, name, &since, &until, &became_input))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' is not an attribute of %s-%d%s (no version of %s has it)",
                            rlx_node_desc(n), name, n->op_type, n->version, at, n->op_type);
        if (until && n->version >= until)
            return rlx_fail(RLX_ERR_INVALID_MODEL,
                            "%s: attribute '%s' is not an attribute of %s-%d%s (it was removed in %s-%d%s)",
                            rlx_node_desc(n), name, n->op_type, n->version, at, n->op_type, until,
                            became_input ? "; give it as an input" : "");
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' is not an attribute of %s-%d%s (it was added in %s-%d)",
                        rlx_node_desc(n), name, n->op_type, n->version, at, n->op_type, since);
    }
    return RLX_OK;
}

/* Whether the schema row of `name` at the node's version is a 0-or-1 INT
 * (rlx_attr_def.boolean). */
static bool attr_is_boolean(const rlx_node *n, const char *name) {
    const rlx_op_def *d = n->def;
    for (int k = 0; d && k < RLX_MAX_OP_ATTRS && d->attrs[k].name; k++) {
        const rlx_attr_def *a = &d->attrs[k];
        if (strcmp(a->name, name) == 0 && n->version >= a->since && (a->until == 0 || n->version < a->until))
            return a->boolean;
    }
    return false;
}

/* Every attribute the op's version has (its schema's, and the legacy
 * ones of old versions) has the type ONNX gives it at that version: a
 * FLOAT where an INT is expected (axis=1.5) is refused, never truncated,
 * and so is Cast-1's `to` given as an INT (Cast-1's is a STRING naming the
 * type). The scalar form of a list type is accepted (exporters write one
 * int for an ints attribute). An INT that ONNX defines as 0 or 1 (the
 * schema row's boolean) is refused with another value: onnxruntime takes
 * only 1 as on, and reading 2 or -1 as on changed output shapes silently
 * (keepdims=2). Required attributes of that version (ONNX's
 * schema marks them; test_attr_schemas compares) are given. */
static rlx_status check_attrs(const rlx_graph *g, const rlx_node *n) {
    char at[64] = "";
    if (g->opset > 0) snprintf(at, sizeof at, " at opset %lld", (long long)g->opset);
    for (int i = 0; i < n->n_attrs; i++) {
        const rlx_node_attr *a = &n->attrs[i];
        if (!a->name) continue;
        rlx_attr_type want = expected_attr_type(n, a->name);
        if (a->type == RLX_ATTR_INT && want == RLX_ATTR_INT && attr_is_boolean(n, a->name) && a->i != 0 && a->i != 1)
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' of %s-%d%s must be 0 or 1, got %lld",
                            rlx_node_desc(n), a->name, n->op_type, n->version, at, (long long)a->i);
        if (want == RLX_ATTR_UNDEFINED || a->type == want) continue;
        if ((want == RLX_ATTR_INTS && a->type == RLX_ATTR_INT) || (want == RLX_ATTR_FLOATS && a->type == RLX_ATTR_FLOAT))
            continue;
        char got[64];
        if (a->type == RLX_ATTR_FLOAT) snprintf(got, sizeof got, "a FLOAT (%g)", (double)a->f);
        else if (a->type == RLX_ATTR_INT) snprintf(got, sizeof got, "an INT (%lld)", (long long)a->i);
        else snprintf(got, sizeof got, "%s", rlx_attr_type_name(a->type));
        return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: attribute '%s' of %s-%d%s must be %s %s, got %s",
                        rlx_node_desc(n), a->name, n->op_type, n->version, at,
                        want == RLX_ATTR_INT || want == RLX_ATTR_INTS ? "an" : "a", rlx_attr_type_name(want), got);
    }
    const char *name;
    rlx_attr_type type;
    int since, until;
    bool required;
    for (size_t k = 0; rlx_op_attr_at(n->def, k, &name, &type, &since, &until, &required); k++)
        if (required && n->version >= since && (until == 0 || n->version < until) && !rlx_node_attr_find(n, name))
            return rlx_fail(RLX_ERR_INVALID_MODEL, "%s: required attribute '%s' of %s-%d%s is missing",
                            rlx_node_desc(n), name, n->op_type, n->version, at);
    return RLX_OK;
}

/* TensorProto.DataType by name (onnx.proto): Cast-1's `to` ("FLOAT" is 1);
 * 0 for a name that is none of them. */
static int64_t dtype_code_of_name(const char *s) {
    static const char *const k_names[] = { "UNDEFINED", "FLOAT",  "UINT8",     "INT8",       "UINT16",
                                           "INT16",     "INT32",  "INT64",     "STRING",     "BOOL",
                                           "FLOAT16",   "DOUBLE", "UINT32",    "UINT64",     "COMPLEX64",
                                           "COMPLEX128", "BFLOAT16" };
    for (size_t k = 1; s && k < RLX_ARRAY_LEN(k_names); k++)
        if (strcmp(s, k_names[k]) == 0) return (int64_t)k;
    return 0;
}

/* Attributes whose type a later version changed keep the old type on the
 * node (what the file says: Cast-1's `to` a TensorProto.DataType name
 * ("FLOAT"), LpPool-1's and GlobalLpPool-1's p a FLOAT); their parameter
 * slot holds the later type, which the kernels read (rlx_node_resolve_params). Here
 * the old values are checked: a name that is no data type is refused; a p
 * that is not integral is unsupported (rlx computes integral p only). */
static rlx_status check_legacy_values(const rlx_node *n) {
    if (n->op == RLX_OP_Cast && n->version < 6) {
        const rlx_node_attr *a = rlx_node_attr_find(n, "to");
        if (a && a->type == RLX_ATTR_STRING && !dtype_code_of_name(a->s))
            return rlx_fail(RLX_ERR_INVALID_MODEL,
                            "%s: attribute 'to' is '%s', which is not a TensorProto data type name",
                            rlx_node_desc(n), a->s ? a->s : "");
    }
    if ((n->op == RLX_OP_LpPool || n->op == RLX_OP_GlobalLpPool) && n->version < 2) {
        const rlx_node_attr *a = rlx_node_attr_find(n, "p");
        if (!a || a->type != RLX_ATTR_FLOAT) return RLX_OK;
        float p = a->f;
        if (!(p >= 1.0f && p <= 1024.0f) || p != (float)(int)p)
            return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: attribute 'p' is %g: rlx computes integral p from 1 only",
                            rlx_node_desc(n), (double)p);
    }
    return RLX_OK;
}

rlx_status rlx_graph_add_node(rlx_graph *g, const char *op_type, const char *domain,
                              const char *name, const int *in, int n_in,
                              const int *out, int n_out,
                              rlx_node_attr *attrs, int n_attrs, int *out_node) {
    if (out_node) *out_node = -1;
    if (!domain || strcmp(domain, "ai.onnx") == 0) domain = "";
    rlx_status st = RLX_OK;
    char gen[48];
    if (!name || !*name) {
        snprintf(gen, sizeof gen, "%s_%zu", op_type ? op_type : "node", g->n_nodes);
        name = gen;
    }
    RLX_TRY(RLX_GROW(g->nodes, g->cap_nodes, g->n_nodes + 1));
    rlx_node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->name = rlx_strdup(name);
    n->op_type = rlx_strdup(op_type ? op_type : "");
    n->domain = rlx_strdup(domain);
    n->in = malloc(((size_t)n_in + 1) * sizeof(int));
    n->out = malloc(((size_t)n_out + 1) * sizeof(int));
    n->attrs = calloc((size_t)n_attrs + 1, sizeof(rlx_node_attr));
    if (!n->name || !n->op_type || !n->domain || !n->in || !n->out || !n->attrs) {
        node_free(n);
        for (int i = 0; i < n_attrs; i++) rlx_node_attr_free(&attrs[i]);
        return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory adding a node");
    }
    memcpy(n->in, in, (size_t)n_in * sizeof(int));
    memcpy(n->out, out, (size_t)n_out * sizeof(int));
    n->n_in = n_in;
    n->n_out = n_out;
    if (n_attrs) memcpy(n->attrs, attrs, (size_t)n_attrs * sizeof(rlx_node_attr));
    n->n_attrs = n_attrs;
    for (int i = 0; i < n_attrs; i++)
        if (n->attrs[i].g) n->attrs[i].g->parent = g;
    /* the node owns everything from here on */
    int id = (int)g->n_nodes++;

    n->def = rlx_op_find(domain, op_type);
    if (!n->def) {
        st = rlx_fail(RLX_ERR_UNSUPPORTED, "%s: op %s%s%s is not supported (opset %lld)", rlx_node_desc(n),
                      *domain ? domain : "", *domain ? "." : "", op_type, (long long)g->opset);
        goto fail;
    }
    n->op = n->def->id;
    n->version = rlx_op_version(n->def, g->opset);
    if (!n->version) {
        st = rlx_fail(RLX_ERR_UNSUPPORTED,
                      "%s: op %s does not exist at opset %lld (rlx implements it from version %d; an older version "
                      "may exist in ONNX but is not supported)",
                      rlx_node_desc(n), op_type, (long long)g->opset, n->def->versions[0]);
        goto fail;
    }
    int min_in = rlx_op_min_inputs(n->def, n->version);
    if (n_in < min_in || (n->def->max_in >= 0 && n_in > n->def->max_in)) {
        st = n->def->max_in < 0
                 ? rlx_fail(RLX_ERR_INVALID_MODEL, "%s: has %d inputs, expected at least %d (version %d)",
                            rlx_node_desc(n), n_in, min_in, n->version)
             : min_in == n->def->max_in
                 ? rlx_fail(RLX_ERR_INVALID_MODEL, "%s: has %d inputs, expected %d (version %d)", rlx_node_desc(n),
                            n_in, min_in, n->version)
                 : rlx_fail(RLX_ERR_INVALID_MODEL, "%s: has %d inputs, expected %d to %d (version %d)",
                            rlx_node_desc(n), n_in, min_in, n->def->max_in, n->version);
        goto fail;
    }
    for (int i = 0; i < min_in && i < n_in; i++)
        if (in[i] < 0 && !(i < 32 && (n->def->optional_in >> i) & 1u)) {
            st = rlx_fail(RLX_ERR_INVALID_MODEL, "%s: required input %d is missing (version %d)", rlx_node_desc(n),
                          i, n->version);
            goto fail;
        }
    if (n_out < n->def->min_out || (n->def->max_out >= 0 && n_out > n->def->max_out)) {
        st = rlx_fail(RLX_ERR_INVALID_MODEL, "%s: has %d outputs, expected %d to %d", rlx_node_desc(n), n_out,
                      n->def->min_out, n->def->max_out);
        goto fail;
    }
    for (int i = 0; i < n_in; i++)
        if (in[i] >= (int)g->n_values) {
            st = rlx_fail(RLX_ERR_INTERNAL, "%s: input id out of range", rlx_node_desc(n));
            goto fail;
        }
    for (int i = 0; i < n_out; i++) {
        if (out[i] < 0) continue;
        if (out[i] >= (int)g->n_values) {
            st = rlx_fail(RLX_ERR_INTERNAL, "%s: output id out of range", rlx_node_desc(n));
            goto fail;
        }
        rlx_value *v = &g->values[out[i]];
        if (v->producer >= 0 || (v->flags & (RLX_VALUE_INPUT | RLX_VALUE_INITIALIZER | RLX_VALUE_OUTER)) || v->konst) {
            st = rlx_fail(RLX_ERR_INVALID_MODEL, "%s: output '%s' is already defined", rlx_node_desc(n), v->name);
            goto fail;
        }
        v->producer = id;
    }
    RLX_TRY_GOTO(st, check_attrs(g, n), fail);
    RLX_TRY_GOTO(st, check_unknown_attrs(g, n), fail);
    RLX_TRY_GOTO(st, check_legacy_values(n), fail);
    RLX_TRY_GOTO(st, rlx_node_resolve_params(n), fail);
    if (out_node) *out_node = id;
    return RLX_OK;
fail:
    for (int i = 0; i < n->n_out; i++)
        if (n->out[i] >= 0 && n->out[i] < (int)g->n_values && g->values[n->out[i]].producer == id)
            g->values[n->out[i]].producer = -1;
    node_free(n);
    g->n_nodes--;
    return st;
}

void rlx_graph_truncate(rlx_graph *g, size_t n_values, size_t n_nodes, size_t n_sources) {
    for (size_t i = n_nodes; i < g->n_nodes; i++) node_free(&g->nodes[i]);
    if (n_nodes < g->n_nodes) g->n_nodes = n_nodes;
    for (size_t i = n_sources; i < g->n_sources; i++) {
        free(g->sources[i].domain);
        free(g->sources[i].op);
        free(g->sources[i].name);
    }
    if (n_sources < g->n_sources) g->n_sources = n_sources;
    if (n_values >= g->n_values) return;
    for (size_t i = n_values; i < g->n_values; i++) {
        rlx_value *v = &g->values[i];
        free(v->name);
        if (!(v->flags & RLX_VALUE_KONST_BORROWED)) rlx_tensor_destroy(v->konst);
    }
    g->n_values = n_values;
    /* the old table has room for every value left: only its slots change */
    for (size_t i = 0; i < g->hash_cap; i++) g->hash[i] = -1;
    for (size_t i = 0; i < g->n_values; i++) {
        size_t m = g->hash_cap - 1, k = hash_str(g->values[i].name) & m;
        while (g->hash[k] >= 0) k = (k + 1) & m;
        g->hash[k] = (int)i;
    }
    rlx_graph_update_producers(g);
}

void rlx_graph_update_producers(rlx_graph *g) {
    for (size_t i = 0; i < g->n_values; i++) g->values[i].producer = -1;
    for (size_t i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_out; k++)
            if (g->nodes[i].out[k] >= 0) g->values[g->nodes[i].out[k]].producer = (int)i;
}

void rlx_graph_compact(rlx_graph *g) {
    size_t w = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].dead) {
            node_free(&g->nodes[i]);
            continue;
        }
        if (w != i) g->nodes[w] = g->nodes[i];
        w++;
    }
    g->n_nodes = w;
    rlx_graph_update_producers(g);
}

void rlx_graph_count_uses(const rlx_graph *g, int *uses) {
    memset(uses, 0, g->n_values * sizeof *uses);
    for (size_t i = 0; i < g->n_nodes; i++) {
        const rlx_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0) uses[n->in[k]]++;
    }
    for (size_t i = 0; i < g->n_outputs; i++) uses[g->outputs[i]]++;
}

/* ------------------------------------------------------------ attributes */

const rlx_node_attr *rlx_node_attr_find(const rlx_node *n, const char *name) {
    for (int i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].name && strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

rlx_status rlx_node_resolve_params(rlx_node *n) {
    const rlx_op_def *d = n->def;
    int cnt = 0;
    while (d && cnt < RLX_MAX_OP_ATTRS && d->attrs[cnt].name) cnt++;
    free(n->params);
    n->params = NULL;
    n->params_given = 0;
    n->act_fn = (int)rlx_attr_int(n, "_rlx_act", 0);
    n->act_alpha = rlx_attr_float(n, "_rlx_act_alpha", 0.0f);
    n->act_beta = rlx_attr_float(n, "_rlx_act_beta", 0.0f);
    if (!cnt) return RLX_OK;
    n->params = calloc((size_t)cnt, sizeof *n->params);
    if (!n->params) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory (parameters)", rlx_node_desc(n));
    for (int k = 0; k < cnt; k++) {
        const rlx_attr_def *ad = &d->attrs[k];
        rlx_node_attr *p = &n->params[k];
        const rlx_node_attr *a = rlx_node_attr_find(n, ad->name);
        if (a) {
            *p = *a; /* borrows the strings and lists */
            n->params_given |= 1u << k;
            /* the scalar form of a list type (check_attrs accepts it) reads as a list of one */
            if (ad->type == RLX_ATTR_INTS && a->type == RLX_ATTR_INT) p->type = RLX_ATTR_INTS, p->n = 1, p->ints = (int64_t *)&a->i;
            if (ad->type == RLX_ATTR_FLOATS && a->type == RLX_ATTR_FLOAT)
                p->type = RLX_ATTR_FLOATS, p->n = 1, p->floats = (float *)&a->f;
            /* an old version's type (check_legacy_values): the slot holds the later one */
            if (ad->type == RLX_ATTR_INT && a->type == RLX_ATTR_STRING && n->op == RLX_OP_Cast)
                *p = (rlx_node_attr){ .name = a->name, .type = RLX_ATTR_INT, .i = dtype_code_of_name(a->s) };
            if (ad->type == RLX_ATTR_INT && a->type == RLX_ATTR_FLOAT &&
                (n->op == RLX_OP_LpPool || n->op == RLX_OP_GlobalLpPool))
                *p = (rlx_node_attr){ .name = a->name, .type = RLX_ATTR_INT,
                                      .i = a->f >= 1.0f && a->f <= 1024.0f ? (int64_t)a->f : 0 };
        } else if (ad->has_default) {
            p->name = (char *)ad->name;
            p->type = ad->type;
            p->i = ad->i;
            p->f = ad->f;
            p->s = (char *)ad->s;
        } else {
            p->name = (char *)ad->name;
        }
    }
    return RLX_OK;
}

/* The parameter slot of attribute a in the node's op, or -1. Every read
 * names an attribute of the node's op: one that its schema lacks is a bug
 * of the reader (rlx_internal_fault, which fails the tests) and reads as
 * absent. */
static int param_slot(const rlx_node *n, rlx_attr_id a) {
    int k = n->def ? rlx_op_attr_slot(n->def->id, a) : -1;
    if (k >= 0) return n->params ? k : -1;
    const char *name = rlx_attr_id_name(a);
    rlx_internal_fault("%s: parameter '%s' read, which the op's attribute schema lacks", rlx_node_desc(n),
                       name ? name : "(no attribute)");
    return -1;
}

const rlx_node_attr *rlx_param(const rlx_node *n, rlx_attr_id a) {
    int k = param_slot(n, a);
    return k >= 0 && n->params[k].type != RLX_ATTR_UNDEFINED ? &n->params[k] : NULL;
}

int64_t rlx_param_int(const rlx_node *n, rlx_attr_id a) {
    const rlx_node_attr *p = rlx_param(n, a);
    return p && p->type == RLX_ATTR_INT ? p->i : 0;
}

float rlx_param_float(const rlx_node *n, rlx_attr_id a) {
    const rlx_node_attr *p = rlx_param(n, a);
    return p && p->type == RLX_ATTR_FLOAT ? p->f : 0.0f;
}

const char *rlx_param_str(const rlx_node *n, rlx_attr_id a) {
    const rlx_node_attr *p = rlx_param(n, a);
    return p && p->type == RLX_ATTR_STRING ? p->s : NULL;
}

const rlx_graph *rlx_param_graph(const rlx_node *n, rlx_attr_id a) {
    const rlx_node_attr *p = rlx_param(n, a);
    return p && p->type == RLX_ATTR_GRAPH ? p->g : NULL;
}

bool rlx_param_given(const rlx_node *n, rlx_attr_id a) {
    int k = param_slot(n, a);
    return k >= 0 && (n->params_given >> k & 1u);
}

int64_t rlx_attr_int(const rlx_node *n, const char *name, int64_t def) {
    const rlx_node_attr *a = rlx_node_attr_find(n, name);
    if (!a) return def;
    if (a->type == RLX_ATTR_INT) return a->i;
    if (a->type == RLX_ATTR_INTS && a->n == 1) return a->ints[0];
    if (a->type == RLX_ATTR_FLOAT) return (int64_t)a->f;
    return def;
}

float rlx_attr_float(const rlx_node *n, const char *name, float def) {
    const rlx_node_attr *a = rlx_node_attr_find(n, name);
    if (!a) return def;
    if (a->type == RLX_ATTR_FLOAT) return a->f;
    if (a->type == RLX_ATTR_INT) return (float)a->i;
    if (a->type == RLX_ATTR_FLOATS && a->n == 1) return a->floats[0];
    return def;
}

/* The values of list attribute a (of type `list`, INTS or FLOATS, or its
 * scalar form) and their count; NULL/0 when a is NULL or of another type,
 * non-NULL for a given empty list. */
static const void *attr_list(const rlx_node_attr *a, rlx_attr_type list, size_t *count) {
    bool ints = list == RLX_ATTR_INTS;
    *count = 0;
    if (!a) return NULL;
    if (a->type == list) {
        const void *v = ints ? (const void *)a->ints : (const void *)a->floats;
        *count = a->n;
        return v ? v : "";
    }
    if (a->type != (ints ? RLX_ATTR_INT : RLX_ATTR_FLOAT)) return NULL;
    *count = 1;
    return ints ? (const void *)&a->i : (const void *)&a->f;
}

const int64_t *rlx_attr_ints(const rlx_node *n, const char *name, size_t *count) {
    return attr_list(rlx_node_attr_find(n, name), RLX_ATTR_INTS, count);
}

const float *rlx_attr_floats(const rlx_node *n, const char *name, size_t *count) {
    return attr_list(rlx_node_attr_find(n, name), RLX_ATTR_FLOATS, count);
}

const int64_t *rlx_param_ints(const rlx_node *n, rlx_attr_id a, size_t *count) {
    return attr_list(rlx_param(n, a), RLX_ATTR_INTS, count);
}

const float *rlx_param_floats(const rlx_node *n, rlx_attr_id a, size_t *count) {
    return attr_list(rlx_param(n, a), RLX_ATTR_FLOATS, count);
}

/* ------------------------------------------------------------ dump */

/* Names and strings in a dump come from the model file: escaped
 * (rlx_escape_into), so that a name cannot drive the terminal. */
static void put_esc(FILE *f, const char *s) {
    char buf[1024];
    rlx_escape_into(s, buf, sizeof buf, false);
    fputs(buf, f);
}

static void dump_value_type(const rlx_graph *g, const rlx_value *v, FILE *f) {
    fprintf(f, "%s", rlx_dtype_name(v->dtype));
    if (v->rank < 0) {
        fprintf(f, "[?]");
        return;
    }
    fprintf(f, "[");
    for (int i = 0; i < v->rank; i++) {
        if (i) fprintf(f, ",");
        if (v->dims[i] >= 0) fprintf(f, "%lld", (long long)v->dims[i]);
        else if (v->syms[i] >= 0 && (size_t)v->syms[i] < g->n_syms) put_esc(f, g->syms[v->syms[i]]);
        else fprintf(f, "?");
    }
    fprintf(f, "]");
}

static void dump_attr(const rlx_node_attr *a, FILE *f) {
    put_esc(f, a->name);
    fputc('=', f);
    switch (a->type) {
    case RLX_ATTR_FLOAT: fprintf(f, "%g", (double)a->f); break;
    case RLX_ATTR_INT: fprintf(f, "%lld", (long long)a->i); break;
    case RLX_ATTR_STRING:
        fputc('"', f);
        put_esc(f, a->s);
        fputc('"', f);
        break;
    case RLX_ATTR_TENSOR: {
        char sb[128];
        fprintf(f, "tensor<%s%s>", rlx_dtype_name(a->t->dtype), rlx_shape_str(a->t->dims, a->t->rank, sb, sizeof sb));
        break;
    }
    case RLX_ATTR_GRAPH: fprintf(f, "graph(%zu nodes)", a->g ? a->g->n_nodes : 0); break;
    case RLX_ATTR_FLOATS:
        fprintf(f, "[");
        for (size_t i = 0; i < a->n && i < 16; i++) fprintf(f, i ? ",%g" : "%g", (double)a->floats[i]);
        fprintf(f, a->n > 16 ? ",...]" : "]");
        break;
    case RLX_ATTR_INTS:
        fprintf(f, "[");
        for (size_t i = 0; i < a->n && i < 16; i++) fprintf(f, i ? ",%lld" : "%lld", (long long)a->ints[i]);
        fprintf(f, a->n > 16 ? ",...]" : "]");
        break;
    case RLX_ATTR_STRINGS: fprintf(f, "strings(%zu)", a->n); break;
    default: fprintf(f, "?"); break;
    }
}

/* "<lead>%name: type" of value v. */
static void dump_typed(const rlx_graph *g, const rlx_value *v, const char *lead, FILE *f) {
    fprintf(f, "%s%%", lead);
    put_esc(f, v->name);
    fprintf(f, ": ");
    dump_value_type(g, v, f);
}

/* One line "<lead>%name: type" per value of ids[0..n). */
static void dump_io(const rlx_graph *g, const int *ids, size_t n, const char *lead, FILE *f) {
    for (size_t i = 0; i < n; i++) {
        dump_typed(g, &g->values[ids[i]], lead, f);
        fputc('\n', f);
    }
}

void rlx_graph_dump(const rlx_graph *g, FILE *f) {
    size_t n_const = 0;
    for (size_t i = 0; i < g->n_values; i++)
        if (g->values[i].konst) n_const++;
    fprintf(f, "graph opset=%lld: %zu nodes, %zu values (%zu constant)\n", (long long)g->opset, g->n_nodes,
            g->n_values, n_const);
    dump_io(g, g->inputs, g->n_inputs, "  input  ", f);
    for (size_t i = 0; i < g->n_nodes; i++) {
        const rlx_node *n = &g->nodes[i];
        if (n->dead) continue;
        fprintf(f, "  ");
        for (int k = 0; k < n->n_out; k++) {
            if (k) fprintf(f, ", ");
            if (n->out[k] < 0) {
                fprintf(f, "_");
                continue;
            }
            dump_typed(g, &g->values[n->out[k]], "", f);
        }
        fprintf(f, " = ");
        put_esc(f, n->op_type);
        fprintf(f, "-%d(", n->version);
        for (int k = 0; k < n->n_in; k++) {
            if (k) fprintf(f, ", ");
            if (n->in[k] < 0) {
                fprintf(f, "_");
                continue;
            }
            const rlx_value *v = &g->values[n->in[k]];
            fprintf(f, "%s%%", v->konst ? "const " : "");
            put_esc(f, v->name);
        }
        fprintf(f, ")");
        if (n->n_attrs) {
            fprintf(f, " {");
            for (int k = 0; k < n->n_attrs; k++) {
                if (k) fprintf(f, ", ");
                dump_attr(&n->attrs[k], f);
            }
            fprintf(f, "}");
        }
        fprintf(f, "  # ");
        put_esc(f, n->name);
        fputc('\n', f);
    }
    dump_io(g, g->outputs, g->n_outputs, "  output ", f);
}
