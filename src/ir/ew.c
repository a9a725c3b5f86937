/* The elementwise vocabulary as data, and the one resolver of its
 * attributes (see ew.h). */
#include "ir/ew.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "ir/op.h"
#include "ir/ops/ops.h"

static const rlx_ew_info k_rows[RLX_EW_COUNT] = {
#define RLX_EW_ROW_(id, kind, name, ar, fl, since, a0, d0, a1, d1, e64, e32, w) \
    { #id, #name, ar, (fl) | RLX_EW_KIND_##kind(RLX_EW_OP |) 0, since, { a0, a1 }, { d0, d1 }, w },
    RLX_EW_FUNCS(RLX_EW_ROW_)
#undef RLX_EW_ROW_
};

/* The op a node has to be for rlx_ew_resolve to take it as the row (rows
 * of KIND OP and FN; RLX_OP_NONE for NONE rows). */
static const rlx_op_id k_node_op[RLX_EW_COUNT] = {
#define RLX_EW_NODE_OP_(id, kind, name, ...) RLX_EW_HAS_OP_##kind(RLX_OP_##name +) RLX_OP_NONE,
    RLX_EW_FUNCS(RLX_EW_NODE_OP_)
#undef RLX_EW_NODE_OP_
};

/* Default of parameter i of function fn: the op schema's for rows with an
 * op (KIND OP and FN; also when an RNN gate names the function), where it
 * is written once; the row's for functions that are no op (NONE). */
static float param_default(int fn, int i) {
    const rlx_op_def *def = k_node_op[fn] != RLX_OP_NONE ? rlx_op_get(k_node_op[fn]) : NULL;
    for (int a = 0; def && a < RLX_MAX_OP_ATTRS && def->attrs[a].name; a++)
        if (strcmp(def->attrs[a].name, k_rows[fn].param[i]) == 0 && def->attrs[a].has_default) return def->attrs[a].f;
    return k_rows[fn].dflt[i];
}

/* The attribute id of parameter i of each row whose op's schema has it
 * (RLX_A_NONE for none), resolved once from the rows' names:
 * rlx_ew_node_params reads a node of the row's op by id (its parameter
 * slot), with no name lookup per run. */
static rlx_attr_id g_param_id[RLX_EW_COUNT][2];
static atomic_bool g_param_id_ready;
static pthread_once_t g_param_id_once = PTHREAD_ONCE_INIT;

static void resolve_param_ids(void) {
    for (int fn = 0; fn < RLX_EW_COUNT; fn++)
        for (int i = 0; i < 2; i++) {
            rlx_attr_id id = k_rows[fn].param[i] ? rlx_attr_id_of(k_rows[fn].param[i]) : RLX_A_NONE;
            /* only where the op's schema has the name (else the node's attribute is read by name) */
            bool slot = k_node_op[fn] != RLX_OP_NONE && rlx_op_attr_slot(k_node_op[fn], id) >= 0;
            g_param_id[fn][i] = slot ? id : RLX_A_NONE;
        }
    atomic_store_explicit(&g_param_id_ready, true, memory_order_release);
}

const rlx_ew_info *rlx_ew_info_of(int fn) { return fn >= 0 && fn < RLX_EW_COUNT ? &k_rows[fn] : NULL; }

int rlx_ew_of_op(rlx_op_id op) {
    for (int i = 0; i < RLX_EW_COUNT && op != RLX_OP_NONE; i++)
        if ((k_rows[i].flags & RLX_EW_OP) && k_node_op[i] == op) return i;
    return -1;
}

const char *rlx_ew_short_name(int fn) {
    static _Thread_local char names[RLX_EW_COUNT][20]; /* per thread: no race */
    const rlx_ew_info *r = rlx_ew_info_of(fn);
    if (!r) return "?";
    if (fn == RLX_EW_COPY) return "none";
    char *s = names[fn];
    if (!s[0]) {
        size_t i = 0;
        for (; r->id[i] && i + 1 < sizeof names[fn]; i++) s[i] = (char)tolower((unsigned char)r->id[i]);
        s[i] = 0;
    }
    return s;
}

bool rlx_ew_node_params(const rlx_node *n, rlx_ew_fn fn, rlx_ew_call *out) {
    memset(out, 0, sizeof *out);
    const rlx_ew_info *r = rlx_ew_info_of(fn);
    if (!r) return false;
    if (fn == RLX_EW_GELU) {
        const char *ap = rlx_param_str(n, RLX_A_approximate);
        if (strcmp(ap, "tanh") == 0) fn = RLX_EW_GELU_TANH;
        else if (strcmp(ap, "none") != 0) return false;
    }
    out->kind = fn;
    if (!atomic_load_explicit(&g_param_id_ready, memory_order_acquire))
        pthread_once(&g_param_id_once, resolve_param_ids);
    for (int i = 0; i < 2; i++) {
        float v = 0.0f;
        if (r->param[i]) {
            /* a node of the row's op reads its parameter slot by id (given, else the schema's default); a
             * node of another op (rows without one) reads the attribute by name */
            rlx_attr_id id = n->op == k_node_op[fn] ? g_param_id[fn][i] : RLX_A_NONE;
            const rlx_node_attr *a = id != RLX_A_NONE ? rlx_param(n, id) : rlx_node_attr_find(n, r->param[i]);
            v = a && a->type == RLX_ATTR_FLOAT ? a->f : param_default(fn, i);
        }
        if (i == 0) out->alpha = v;
        else out->beta = v;
    }
    return true;
}

/* The value of a constant scalar f32 input, if it is one. */
static bool konst_scalar(const rlx_graph *g, const rlx_node *n, int i, float *v) {
    const rlx_value *x = rlx_node_input(g, n, i);
    if (!x) return true; /* absent: the default stays */
    double d;
    if (!x->konst || !rlx_dtype_is_float(x->konst->dtype) || !rlx_konst_scalar(x, &d)) return false;
    *v = (float)d;
    return true;
}

bool rlx_ew_resolve(const rlx_graph *g, const rlx_node *n, rlx_ew_call *out) {
    memset(out, 0, sizeof *out);
    int fn = -1;
    for (int i = 0; i < RLX_EW_COUNT && fn < 0 && n->op != RLX_OP_NONE; i++)
        if ((k_rows[i].flags & (RLX_EW_OP | RLX_EW_CHAIN | RLX_EW_ACT)) && k_node_op[i] == n->op) fn = i;
    if (fn < 0) return false;
    if (fn == RLX_EW_GELU_TANH) fn = RLX_EW_GELU; /* the same name: approximate decides */
    if (fn == RLX_EW_CLIP && n->version >= 11) {
        out->kind = RLX_EW_CLIP;
        out->alpha = -INFINITY;
        out->beta = INFINITY;
        if (!g || !konst_scalar(g, n, 1, &out->alpha) || !konst_scalar(g, n, 2, &out->beta)) {
            memset(out, 0, sizeof *out);
            return false;
        }
        return true;
    }
    if (!rlx_ew_node_params(n, (rlx_ew_fn)fn, out)) {
        memset(out, 0, sizeof *out);
        return false;
    }
    return true;
}

static bool name_eq(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return false;
    return *a == *b;
}

bool rlx_ew_find_activation(const char *name, rlx_ew_call *out) {
    memset(out, 0, sizeof *out);
    for (int i = 0; i < RLX_EW_COUNT; i++)
        if ((k_rows[i].flags & RLX_EW_GATE) && name_eq(k_rows[i].name, name)) {
            out->kind = i == RLX_EW_GELU_TANH ? RLX_EW_GELU : (rlx_ew_fn)i;
            i = out->kind;
            out->alpha = k_rows[i].param[0] ? param_default(i, 0) : 0.0f;
            out->beta = k_rows[i].param[1] ? param_default(i, 1) : 0.0f;
            return true;
        }
    return false;
}
