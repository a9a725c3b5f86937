/* Helpers shared by the lowerings, and the lookup of a node's lowering. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/webgpu.h"
#include "backend/webgpu/wgsl_gen.h"
#include "base/mem.h"
#include "ir/ops/act.h"
#include "ir/ops/internal_ops.h"

typedef struct lower_family {
    const wg_lowering *l;
    const size_t *count;
} lower_family;

static const lower_family k_families[] = {
    { wg_lowerings_elementwise, &wg_lowerings_elementwise_count },
    { wg_lowerings_nn, &wg_lowerings_nn_count },
    { wg_lowerings_tensor, &wg_lowerings_tensor_count },
};

static wg_lower_fn find_lowering(const rlx_node *n) {
    if (n->domain && strcmp(n->domain, RLX_INTERNAL_DOMAIN) == 0) {
        for (size_t i = 0; i < wg_lowerings_internal_count; i++)
            if (strcmp(wg_lowerings_internal[i].op, n->op_type) == 0) return wg_lowerings_internal[i].fn;
        return NULL;
    }
    if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx") != 0) return NULL;
    for (size_t f = 0; f < RLX_ARRAY_LEN(k_families); f++)
        for (size_t i = 0; i < *k_families[f].count; i++)
            if (strcmp(k_families[f].l[i].op, n->op_type) == 0) return k_families[f].l[i].fn;
    return NULL;
}

void wg_lower_free(wg_lower *L) {
    if (!L) return;
    free(L->d);
    L->d = NULL;
    L->n_d = L->cap_d = 0;
    for (size_t i = 0; i < L->n_sources; i++) free(L->sources[i]);
    free(L->sources);
    L->sources = NULL;
    L->n_sources = L->cap_sources = 0;
}

rlx_status wg_lower_node(const rlx_graph *g, const rlx_node *n, const wg_caps *caps, wg_lower *L) {
    memset(L, 0, sizeof *L);
    L->g = g;
    L->n = n;
    L->caps = caps;
    wg_lower_fn fn = find_lowering(n);
    if (!fn) return wg_decline(L, "no WGSL lowering for op %s", n->op_type);
    for (int i = 0; i < n->n_out; i++) {
        const rlx_value *v = wg_out(L, i);
        if (v && !rlx_value_is_static(v)) return wg_decline(L, "output %d has a dynamic shape", i);
    }
    rlx_status st = fn(L);
    rlx_act act = rlx_node_act(n);
    if (st == RLX_OK && act.kind != RLX_ACT_NONE && !L->act_done) {
        const rlx_value *y = wg_out(L, 0);
        if (!y || y->dtype != RLX_DTYPE_F32) st = wg_decline(L, "a fused activation on a non-f32 output");
        else if (wg_numel(y) > 0) st = wg_emit_act_epilogue(L, wg_out_id(L, 0), 0, wg_numel(y), &act);
    }
    if (st == RLX_OK && L->broken) st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory lowering to WGSL", rlx_node_desc(n));
    if (st != RLX_OK) {
        wg_lower_free(L);
        L->scratch_elems = 0;
    }
    return st;
}

rlx_status wg_decline(wg_lower *L, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(L->why, sizeof L->why, fmt, ap);
    va_end(ap);
    return RLX_ERR_UNSUPPORTED;
}

wg_dispatch *wg_emit(wg_lower *L, const char *kernel) {
    static _Thread_local wg_dispatch dummy;
    if (RLX_GROW(L->d, L->cap_d, L->n_d + 1) != RLX_OK) {
        L->broken = true;
        memset(&dummy, 0, sizeof dummy);
        return &dummy;
    }
    wg_dispatch *d = &L->d[L->n_d++];
    memset(d, 0, sizeof *d);
    d->kernel = kernel;
    d->groups[0] = d->groups[1] = d->groups[2] = 1;
    return d;
}

wg_dispatch *wg_emit_source(wg_lower *L, const char *name, const char *source) {
    char *copy = rlx_strdup(source);
    if (!copy || RLX_GROW(L->sources, L->cap_sources, L->n_sources + 1) != RLX_OK) {
        free(copy);
        L->broken = true;
        return wg_emit(L, name);
    }
    L->sources[L->n_sources++] = copy;
    wg_dispatch *d = wg_emit(L, name);
    d->source = copy;
    return d;
}

void wg_spec(wg_lower *L, wg_dispatch *d, const char *name, double value) {
    if (d->n_spec >= WG_MAX_SPEC) {
        L->broken = true;
        return;
    }
    d->spec_name[d->n_spec] = name;
    d->spec_val[d->n_spec++] = value;
}

static void push_word(wg_lower *L, wg_dispatch *d, uint32_t w) {
    if (d->n_params >= WG_MAX_PARAMS) {
        L->broken = true;
        return;
    }
    d->params[d->n_params++] = w;
}

void wg_bind(wg_lower *L, wg_dispatch *d, int value, uint64_t elem_off, uint64_t elems) {
    if (d->n_bind >= WG_MAX_BINDINGS) {
        L->broken = true;
        return;
    }
    d->bind[d->n_bind] = (wg_operand){ value, elem_off, elems };
    d->off_slot[d->n_bind++] = d->n_params;
    push_word(L, d, 0); /* patched at compile time */
}

void wg_bind_value(wg_lower *L, wg_dispatch *d, int value) {
    const rlx_value *v = value >= 0 ? &L->g->values[value] : NULL;
    wg_bind(L, d, value, 0, v ? wg_numel(v) : 0);
}

void wg_p_u32(wg_lower *L, wg_dispatch *d, uint32_t v) { push_word(L, d, v); }
void wg_p_i32(wg_lower *L, wg_dispatch *d, int32_t v) {
    uint32_t w;
    memcpy(&w, &v, 4);
    push_word(L, d, w);
}
void wg_p_f32(wg_lower *L, wg_dispatch *d, float v) {
    uint32_t w;
    memcpy(&w, &v, 4);
    push_word(L, d, w);
}
void wg_p_align16(wg_lower *L, wg_dispatch *d) {
    while (d->n_params % 4) push_word(L, d, 0);
}

rlx_status wg_grid_groups(wg_lower *L, wg_dispatch *d, uint64_t groups) {
    uint64_t maxd = L->caps->max_groups_per_dim ? L->caps->max_groups_per_dim : 65535;
    if (groups == 0) groups = 1;
    if (groups <= maxd) {
        d->groups[0] = (uint32_t)groups;
        d->groups[1] = 1;
    } else {
        uint64_t y = (groups + maxd - 1) / maxd;
        if (y > maxd) return wg_decline(L, "%llu workgroups exceed the grid", (unsigned long long)groups);
        d->groups[0] = (uint32_t)maxd;
        d->groups[1] = (uint32_t)y;
    }
    d->groups[2] = 1;
    return RLX_OK;
}

rlx_status wg_grid_1d(wg_lower *L, wg_dispatch *d, uint64_t threads) {
    if (threads >= ((uint64_t)1 << 32) - WG_WORKGROUP * (uint64_t)65536)
        return wg_decline(L, "%llu invocations exceed a 32-bit index", (unsigned long long)threads);
    return wg_grid_groups(L, d, (threads + WG_WORKGROUP - 1) / WG_WORKGROUP);
}

void wg_scratch(wg_lower *L, uint64_t elems) {
    if (elems > L->scratch_elems) L->scratch_elems = elems;
}

uint64_t wg_numel(const rlx_value *v) { return v ? (uint64_t)rlx_value_numel(v) : 0; }

bool wg_value_ok(const rlx_value *v, unsigned mask) {
    if (!v || !rlx_value_is_static(v)) return false;
    switch (v->dtype) {
    case RLX_DTYPE_F32: return (mask & WG_F32) != 0;
    case RLX_DTYPE_I32: return (mask & WG_I32) != 0;
    case RLX_DTYPE_U32: return (mask & WG_U32) != 0;
    default: return false;
    }
}

rlx_status wg_check_io(wg_lower *L, unsigned mask, int n_out) {
    for (int i = 0; i < L->n->n_in; i++) {
        const rlx_value *v = wg_in(L, i);
        if (v && !wg_value_ok(v, mask))
            return wg_decline(L, "input %d: dtype %s or shape not handled", i, rlx_dtype_name(v->dtype));
    }
    for (int i = 0; i < L->n->n_out; i++) {
        const rlx_value *v = wg_out(L, i);
        if (!v) continue;
        if (i >= n_out) return wg_decline(L, "optional output %d is not lowered", i);
        if (!wg_value_ok(v, mask))
            return wg_decline(L, "output %d: dtype %s or shape not handled", i, rlx_dtype_name(v->dtype));
    }
    return RLX_OK;
}
