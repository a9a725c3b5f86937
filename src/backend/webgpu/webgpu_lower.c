/* Helpers shared by the lowerings, and the lookup of a node's lowering. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/webgpu.h"
#include "backend/webgpu/wgsl_gen.h"
#include "base/mem.h"
#include "base/options.h"
#include "ir/ops/act.h"
#include "ir/op.h"
#include "ir/ops/internal_ops.h"

typedef struct lower_family {
    const wg_lower_fn *l; /* indexed by op id */
    /* A window larger than one binding declines (the node runs on the
     * CPU) instead of failing the compile. */
    bool decline_oversized;
} lower_family;

static const lower_family k_families[] = {
    { wg_lowerings_elementwise, false },
    { wg_lowerings_nn, false },
    { wg_lowerings_tensor, false },
    { wg_lowerings_reduce, true },
    { wg_lowerings_index, true },
    { wg_lowerings_logic, true },
    { wg_lowerings_qgemm, true },
    /* none of the internal ops splits its operands by the binding limit */
    { wg_lowerings_internal, true },
};

static wg_lower_fn find_lowering(rlx_op_id op, bool *decline_oversized) {
    if (op <= RLX_OP_NONE || op >= RLX_OP_COUNT) return NULL;
    for (size_t f = 0; f < RLX_ARRAY_LEN(k_families); f++)
        if (k_families[f].l[op]) {
            *decline_oversized = k_families[f].decline_oversized;
            return k_families[f].l[op];
        }
    return NULL;
}

wg_lower_fn wg_find_lowering(const char *domain, const char *op) {
    bool unused;
    const rlx_op_def *d = op ? rlx_op_find(domain, op) : NULL;
    return d ? find_lowering(d->id, &unused) : NULL;
}

/* gpu.disable=Op1,Op2,...: these op types run on the CPU (debugging, and
 * tests of the fallback path that must not depend on which ops have
 * lowerings). An item names an op by its type (FusedElementwise) or, as
 * `rlx ops` and the dispatch report print ops outside the default
 * domain, by domain.type (rlx.FusedElementwise). */
static bool op_disabled(const wg_caps *caps, const char *domain, const char *op) {
    const char *list = caps->cfg->gpu_disable;
    if (!list || !*list) return false;
    size_t len = strlen(op), dlen = domain ? strlen(domain) : 0;
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == len && strncmp(p, op, n) == 0) return true;
        if (dlen && n == dlen + 1 + len && strncmp(p, domain, dlen) == 0 && p[dlen] == '.' &&
            strncmp(p + dlen + 1, op, len) == 0)
            return true;
        if (!e) break;
        p = e + 1;
    }
    return false;
}

bool wg_window_fits(const wg_lower *L, uint64_t elems) {
    uint64_t align = L->caps->storage_align ? L->caps->storage_align : 256;
    return elems <= (UINT64_MAX - align) / 4 && elems * 4 + align <= L->caps->max_binding;
}

uint64_t wg_max_window(const wg_lower *L) {
    uint64_t align = L->caps->storage_align ? L->caps->storage_align : 256;
    return L->caps->max_binding > align ? (L->caps->max_binding - align) / 4 : 0;
}

uint64_t wg_binding_bytes(const wg_caps *caps, uint64_t elem_off, uint64_t elems) {
    uint64_t align = caps->storage_align ? caps->storage_align : 256;
    return (elem_off * 4) % align + (elems ? elems : 1) * 4;
}

/* Every binding window must fit maxStorageBufferBindingSize, and the
 * step's scratch one buffer: a lowering that cannot split its work by the
 * limit declines here, so the step runs on the CPU instead of failing at
 * compile. Values start RLX_ARENA_ALIGN-aligned in their buffers (arena,
 * weights, scratch), so the window's size is known exactly here. */
static rlx_status check_windows(wg_lower *L) {
    const wg_caps *c = L->caps;
    if (c->max_buffer && L->scratch_elems * 4 > c->max_buffer)
        return wg_decline(L, "needs %llu bytes of scratch, more than one buffer (%llu bytes)",
                          (unsigned long long)(L->scratch_elems * 4), (unsigned long long)c->max_buffer);
    for (size_t k = 0; k < L->n_d; k++) {
        const wg_dispatch *d = &L->d[k];
        for (int i = 0; i < d->n_bind; i++) {
            int v = d->bind[i].value;
            if (v >= 0 && c->max_buffer) {
                const rlx_value *val = &L->g->values[v];
                uint64_t bytes = val->konst ? val->konst->nbytes : rlx_value_bytes(val);
                if (val->konst && d->bind[i].fmt == WG_FMT_F16) bytes /= 2; /* its binary16 copy */
                if (bytes > c->max_buffer)
                    return wg_decline(L, "'%s' (%llu bytes) exceeds one device buffer (%llu bytes: maxBufferSize or "
                                         "RLX_MAX_BUFFER_BYTES)",
                                      val->name, (unsigned long long)bytes, (unsigned long long)c->max_buffer);
            }
            /* wg_binding_bytes counts words: halves are counted as halves of them */
            uint64_t b = wg_binding_bytes(c, d->bind[i].elem_off, d->bind[i].elems);
            if (wg_operand_esize(L->g, d, i) == 2)
                b = (d->bind[i].elem_off * 2) % (c->storage_align ? c->storage_align : 256) + d->bind[i].elems * 2;
            if (b > c->max_binding) {
                const char *name = d->bind[i].value >= 0 ? L->g->values[d->bind[i].value].name
                                 : d->bind[i].value == WG_STATUS ? "status"
                                 : d->bind[i].value == WG_TABLE  ? "table" : "scratch";
                return wg_decline(L, "kernel '%s': operand %d ('%s') needs a %llu-byte binding, more than the %llu "
                                     "bytes of one (maxStorageBufferBindingSize or RLX_MAX_BINDING_BYTES), and this "
                                     "lowering does not split it",
                                  d->kernel, i, name, (unsigned long long)b, (unsigned long long)c->max_binding);
            }
        }
    }
    return RLX_OK;
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
    free(L->table);
    L->table = NULL;
    L->n_table = L->cap_table = 0;
}

uint64_t wg_table(wg_lower *L, const uint32_t *words, size_t n) {
    uint64_t at = L->n_table;
    if (RLX_GROW(L->table, L->cap_table, L->n_table + n + 1) != RLX_OK) {
        L->broken = true;
        return 0;
    }
    memcpy(L->table + L->n_table, words, n * sizeof *words);
    L->n_table += n;
    return at;
}

rlx_status wg_lower_node(const rlx_graph *g, const rlx_node *n, const wg_caps *caps, wg_lower *L) {
    memset(L, 0, sizeof *L);
    L->g = g;
    L->n = n;
    L->caps = caps;
    bool decline_oversized = false;
    wg_lower_fn fn = find_lowering(n->op, &decline_oversized);
    if (!fn) return wg_decline(L, "no WGSL lowering for op %s", n->op_type);
    if (op_disabled(caps, n->domain, n->op_type))
        return wg_decline(L, "op %s is listed in gpu.disable (RLX_GPU_DISABLE)", n->op_type);
    for (int i = 0; i < n->n_out; i++) {
        const rlx_value *v = wg_out(L, i);
        if (v && !rlx_value_is_static(v)) return wg_decline(L, "output %d has a dynamic shape", i);
    }
    rlx_status st = fn(L);
    /* a fused activation that the lowering's kernels did not apply: the
     * shared epilogue, in place over output 0 (blocks by the binding limit) */
    rlx_act act = rlx_node_act(n);
    if (st == RLX_OK && act.kind != RLX_ACT_NONE && !L->act_done) {
        const rlx_value *y = wg_out(L, 0);
        if (!y || y->dtype != RLX_DTYPE_F32) st = wg_decline(L, "a fused activation on a non-f32 output");
        else if (wg_numel(y) > 0) st = wg_emit_act_epilogue(L, wg_out_id(L, 0), 0, wg_numel(y), &act);
    }
    if (st == RLX_OK && L->broken) st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: out of memory lowering to WGSL", rlx_node_desc(n));
    for (size_t k = 0; st == RLX_OK && decline_oversized && k < L->n_d; k++)
        for (int i = 0; i < L->d[k].n_bind; i++)
            if (!wg_window_fits(L, L->d[k].bind[i].elems)) {
                st = wg_decline(L, "kernel '%s': operand %d spans %llu words, more than one storage binding",
                                L->d[k].kernel, i, (unsigned long long)L->d[k].bind[i].elems);
                break;
            }
    if (st == RLX_OK) st = check_windows(L);
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
    d->elem = wg_kernel_elem(kernel);
    d->groups[0] = d->groups[1] = d->groups[2] = 1;
    return d;
}

wg_dispatch *wg_emit_source(wg_lower *L, const char *name, const char *source) {
    const char *copy = wg_keep(L, "%s", source);
    wg_dispatch *d = wg_emit(L, name);
    d->source = *copy ? copy : NULL;
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

static void push_word(wg_lower *L, wg_dispatch *d, const char *name, uint32_t w, unsigned char kind) {
    if (d->n_params >= WG_MAX_PARAMS) {
        L->broken = true;
        return;
    }
    d->pname[d->n_params] = name;
    d->pkind[d->n_params] = kind;
    d->params[d->n_params++] = w;
}

wg_elem wg_elem_of(rlx_dtype dt) {
    switch (dt) {
    case RLX_DTYPE_F32: return WG_ELEM_F32;
    case RLX_DTYPE_F16: return WG_ELEM_F16;
    case RLX_DTYPE_I32: return WG_ELEM_I32;
    case RLX_DTYPE_U32: return WG_ELEM_U32;
    default: return WG_ELEM_COUNT;
    }
}

void wg_bind(wg_lower *L, wg_dispatch *d, const char *name, int value, uint64_t elem_off, uint64_t elems) {
    if (d->n_bind >= WG_MAX_BINDINGS) {
        L->broken = true;
        return;
    }
    d->bind[d->n_bind] = (wg_operand){ value, elem_off, elems, WG_FMT_NATIVE, 0 };
    d->off_slot[d->n_bind++] = d->n_params;
    push_word(L, d, name, 0, WG_WORD_INT); /* patched at compile time */
}

void wg_bind_status(wg_lower *L, wg_dispatch *d) {
    wg_bind(L, d, "s_off", WG_STATUS, 0, WG_STATUS_WORDS);
    if (L->broken) return;
    d->reports = true;
    d->tag_slot = d->n_params;
    push_word(L, d, "tag", 0, WG_WORD_INT); /* the step's tag: patched at compile time */
}

void wg_bind_f16(wg_lower *L, wg_dispatch *d, const char *name, int value, uint64_t h0, uint64_t n, uint32_t *sub) {
    uint64_t w0 = h0 / 2, w1 = (h0 + (n ? n : 1) + 1) / 2;
    wg_bind(L, d, name, value, w0, w1 - w0);
    /* an f16 value (arena or constant) is its own packed copy; the scratch
     * holds what an f16 kernel wrote there (im2col) */
    bool native = value == WG_SCRATCH || (value >= 0 && L->g->values[value].dtype == RLX_DTYPE_F16);
    if (!L->broken) {
        d->bind[d->n_bind - 1].fmt = native ? WG_FMT_NATIVE : WG_FMT_F16;
        d->bind[d->n_bind - 1].esize = 4;
    }
    *sub = (uint32_t)(h0 % 2);
}

bool wg_f16_fits(wg_lower *L, int value, uint64_t e0, uint64_t n) {
    const rlx_value *v = value >= 0 ? &L->g->values[value] : NULL;
    if (!v || !v->konst || v->dtype != RLX_DTYPE_F32 || v->konst->dtype != RLX_DTYPE_F32) return false;
    const float *f = v->konst->data;
    uint64_t total = v->konst->nbytes / 4, end = e0 + n < total ? e0 + n : total;
    uint64_t i = e0;
    while (i < end && fabsf(f[i]) < 65520.0f) i++; /* false for NaN too */
    if (i == end) return true;
    char what[160];
    snprintf(what, sizeof what, "weight '%s' kept in f32 (its element %llu, %g, is not finite in binary16)", v->name,
             (unsigned long long)i, (double)f[i]);
    size_t len = strlen(L->note);
    char key[96];
    snprintf(key, sizeof key, "weight '%s' ", v->name);
    if (!strstr(L->note, key) && len + strlen(what) + 3 < sizeof L->note)
        snprintf(L->note + len, sizeof L->note - len, "%s%s", len ? "; " : "", what);
    return false;
}

void wg_bind_value(wg_lower *L, wg_dispatch *d, const char *name, int value) {
    const rlx_value *v = value >= 0 ? &L->g->values[value] : NULL;
    bool halves = v && v->dtype == RLX_DTYPE_F16 && d->elem == WG_ELEM_F16;
    wg_bind(L, d, name, value, 0, halves ? wg_numel(v) : v ? wg_words(v) : 0);
}

int wg_operand_esize(const rlx_graph *g, const wg_dispatch *d, int i) {
    const wg_operand *o = &d->bind[i];
    if (o->esize) return o->esize;
    bool half = o->value >= 0 && o->fmt == WG_FMT_NATIVE && g->values[o->value].dtype == RLX_DTYPE_F16;
    return half && d->elem == WG_ELEM_F16 ? 2 : 4;
}

void wg_bind_or(wg_lower *L, wg_dispatch *d, const char *name, int v, int stand_in) {
    if (v >= 0) wg_bind_value(L, d, name, v);
    else wg_bind(L, d, name, stand_in, 0, 1);
}

void wg_bind_value4(wg_lower *L, wg_dispatch *d, const char *name, int value) {
    const rlx_value *v = value >= 0 ? &L->g->values[value] : NULL;
    uint64_t w = v && v->dtype == RLX_DTYPE_F16 && d->elem == WG_ELEM_F16 ? wg_numel(v) : v ? wg_words(v) : 0;
    wg_bind(L, d, name, value, 0, (w + 3) / 4 * 4);
}

void wg_p_u32(wg_lower *L, wg_dispatch *d, const char *name, uint32_t v) { push_word(L, d, name, v, WG_WORD_INT); }
void wg_p_i32(wg_lower *L, wg_dispatch *d, const char *name, int32_t v) { WG_P(L, d, wg_pi(name, v)); }
void wg_p_f32(wg_lower *L, wg_dispatch *d, const char *name, float v) { WG_P(L, d, wg_pf(name, v)); }
void wg_p_words(wg_lower *L, wg_dispatch *d, const wg_pword *w, size_t n) {
    for (size_t i = 0; i < n; i++) push_word(L, d, w[i].name, w[i].bits, w[i].kind);
}
void wg_p_align16(wg_lower *L, wg_dispatch *d) {
    while (d->n_params % 4) push_word(L, d, NULL, 0, WG_WORD_PAD);
}
const char *wg_keep(wg_lower *L, const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *copy = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (copy) vsnprintf(copy, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    va_end(ap);
    if (!copy || RLX_GROW(L->sources, L->cap_sources, L->n_sources + 1) != RLX_OK) {
        free(copy);
        L->broken = true;
        return "";
    }
    return L->sources[L->n_sources++] = copy;
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

rlx_status wg_bcview_make(wg_lower *L, const rlx_value *const *in, int n_in, const rlx_value *y, wg_bcview *bv) {
    memset(bv, 0, sizeof *bv);
    if (y->rank > RLX_MAX_RANK) return wg_decline(L, "rank %d", y->rank);
    uint64_t s[3][RLX_MAX_RANK];
    for (int k = 0; k < n_in; k++) {
        const rlx_value *v = in[k];
        if (v->rank > y->rank) return wg_decline(L, "input rank above the output's");
        uint64_t acc = 1;
        for (int i = y->rank - 1; i >= 0; i--) {
            int j = i - (y->rank - v->rank);
            int64_t d = j >= 0 ? v->dims[j] : 1;
            if (d != 1 && d != y->dims[i]) return wg_decline(L, "input %d does not broadcast", k);
            s[k][i] = d == 1 ? 0 : acc;
            acc *= (uint64_t)d;
        }
    }
    int r = 0;
    uint64_t dims[RLX_MAX_RANK], t[3][RLX_MAX_RANK];
    for (int i = y->rank - 1; i >= 0; i--) {
        uint64_t d = (uint64_t)y->dims[i];
        if (d == 1) continue;
        bool merge = r > 0;
        for (int k = 0; k < n_in && merge; k++) merge = s[k][i] == t[k][r - 1] * dims[r - 1];
        if (merge) {
            dims[r - 1] *= d;
            continue;
        }
        dims[r] = d;
        for (int k = 0; k < n_in; k++) t[k][r] = s[k][i];
        r++;
    }
    if (r > WG_BC_MAX_RANK) return wg_decline(L, "broadcast of rank %d after merging", r);
    bv->rank = r;
    bv->n_in = n_in;
    for (int i = 0; i < r; i++) {
        bv->dims[i] = dims[r - 1 - i];
        for (int k = 0; k < n_in; k++) bv->str[k][i] = t[k][r - 1 - i];
    }
    return RLX_OK;
}

uint64_t wg_numel(const rlx_value *v) { return v ? (uint64_t)rlx_value_numel(v) : 0; }

uint64_t wg_words(const rlx_value *v) {
    if (!v) return 0;
    uint64_t n = wg_numel(v);
    switch (v->dtype) {
    case RLX_DTYPE_F32: case RLX_DTYPE_I32: case RLX_DTYPE_U32: return n;
    case RLX_DTYPE_I64: return 2 * n;
    case RLX_DTYPE_F16: return (n + 1) / 2;
    case RLX_DTYPE_BOOL: case RLX_DTYPE_I8: case RLX_DTYPE_U8: return (n + 3) / 4;
    default: return 0;
    }
}

bool wg_value_ok(const rlx_value *v, unsigned mask) {
    if (!v || !rlx_value_is_static(v)) return false;
    switch (v->dtype) {
    case RLX_DTYPE_F32: return (mask & WG_F32) != 0;
    case RLX_DTYPE_I32: return (mask & WG_I32) != 0;
    case RLX_DTYPE_U32: return (mask & WG_U32) != 0;
    case RLX_DTYPE_BOOL: return (mask & WG_BOOL) != 0;
    case RLX_DTYPE_I8: case RLX_DTYPE_U8: return (mask & WG_Q8) != 0;
    case RLX_DTYPE_I64: return (mask & WG_I64) != 0;
    case RLX_DTYPE_F16: return (mask & WG_F16) != 0;
    default: return false;
    }
}

bool wg_value_held(const wg_lower *L, const rlx_value *v, unsigned mask) {
    return wg_value_ok(v, mask) && (v->dtype != RLX_DTYPE_F16 || L->caps->shader_f16);
}

/* f16 values need shader-f16: without it they stay on the host (the
 * policy of README.md, "Element types"; compile notes it once). */
static rlx_status check_f16(wg_lower *L, const rlx_value *v, unsigned mask) {
    if (v && v->dtype == RLX_DTYPE_F16 && (mask & WG_F16) && !L->caps->shader_f16)
        return wg_decline(L, "'%s' is f16 and the adapter has no shader-f16", v->name);
    return RLX_OK;
}

rlx_status wg_check_io(wg_lower *L, unsigned mask, int n_out) {
    for (int i = 0; i < L->n->n_in + L->n->n_out; i++)
        RLX_TRY(check_f16(L, i < L->n->n_in ? wg_in(L, i) : wg_out(L, i - L->n->n_in), mask));
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
