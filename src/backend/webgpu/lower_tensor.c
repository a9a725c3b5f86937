/* WGSL lowerings of the tensor family: data movement (bits preserved) of
 * f32, i32, u32, f16 (halves: the kernels' f16 instances, with
 * shader-f16), i64 (word pairs) and bool (bytes; only copies that write
 * their output whole, so not Concat or Pad) through kernels/copy.wgsl
 * (strided copy) and kernels/fill.wgsl: Transpose, Slice, Concat, Split,
 * Pad (constant mode; edge, reflect and wrap through kernels/pad.wgsl),
 * Expand, Tile, DepthToSpace, SpaceToDepth, and Identity/Reshape/Flatten/
 * Squeeze/Unsqueeze when the runtime did not make them views. Semantics:
 * the ONNX operators of the same names (versions noted per lowering). Index
 * math happens here, at compile time; shape-like inputs (perm, starts,
 * pads, shape) must be constant. */
#include <string.h>

#include "backend/webgpu/webgpu.h"
#include "backend/webgpu/wg_split.h"
#include "base/tensor.h"
#include "ir/op.h"
#include "ir/ops/tensor_geom.h"
#include "rlx/half.h"

#define CP_MAX_RANK 8

/* A copy over `dims` with source and destination strides (elements). */
typedef struct cpy {
    int rank;
    uint64_t dims[CP_MAX_RANK];
    int64_t ss[CP_MAX_RANK], ds[CP_MAX_RANK];
    int64_t src_base, dst_base;
} cpy;

/* *c zeroed with `rank` dims; xs and ys receive the contiguous strides of
 * values x and y. */
static void copy_setup(cpy *c, int rank, const rlx_value *x, int64_t *xs, const rlx_value *y, int64_t *ys) {
    rlx_strides(x->dims, x->rank, xs);
    rlx_strides(y->dims, y->rank, ys);
    memset(c, 0, sizeof *c);
    c->rank = rank;
}

typedef struct copy_ctx {
    int x, y;
    wg_elem elem; /* u32 (words), or f16 (halves) */
    const int64_t *ss, *ds; /* outermost first */
} copy_ctx;

/* The Params of kernels/copy.wgsl after the two offsets: n elements over
 * `rank` dims, the bases inside the bound windows, the invocations (read
 * with BYTES only), then dims and both strides, outermost first. */
static void p_copy(wg_lower *L, wg_dispatch *d, uint64_t n, int rank, int64_t sb, int64_t db, uint64_t threads,
                   const uint64_t *dims, const int64_t *ss, const int64_t *ds) {
    WG_P(L, d, wg_pu("n", n), wg_pu("rank", rank), wg_pi("src_base", sb), wg_pi("dst_base", db),
         wg_pu("threads", threads));
    wg_p_align16(L, d);
    for (int i = 0; i < CP_MAX_RANK; i++) wg_p_u32(L, d, "dims", i < rank ? (uint32_t)dims[i] : 1);
    for (int i = 0; i < CP_MAX_RANK; i++) wg_p_i32(L, d, "ss", i < rank ? (int32_t)ss[i] : 0);
    for (int i = 0; i < CP_MAX_RANK; i++) wg_p_i32(L, d, "ds", i < rank ? (int32_t)ds[i] : 0);
}

/* One dispatch of kernels/copy.wgsl over a block (operand 0 x, 1 y). */
static rlx_status emit_copy_block(wg_lower *L, const wg_block *b, void *ctx) {
    const copy_ctx *cc = ctx;
    wg_dispatch *d = wg_emit(L, "copy");
    d->elem = cc->elem;
    wg_bind(L, d, "x_off", cc->x, b->lo[0], b->n[0]);
    wg_bind(L, d, "y_off", cc->y, b->lo[1], b->n[1]);
    p_copy(L, d, b->numel, b->rank, b->base[0] - (int64_t)b->lo[0], b->base[1] - (int64_t)b->lo[1], b->numel, b->dims,
           cc->ss, cc->ds);
    return wg_grid_1d(L, d, b->numel);
}

/* Emits y[dst_base + c . ds] = x[src_base + c . ss] over c in dims (in
 * elements of y's dtype), after dropping unit dims and merging dims that
 * are contiguous in both. i64 elements move as word pairs (an inner dim of
 * 2); bool elements as bytes (copy.wgsl BYTES), which needs the copy to
 * write all of y in order (one invocation writes a whole word), else it
 * declines. */
static rlx_status emit_copy(wg_lower *L, int x, int y, const cpy *c) {
    rlx_dtype dt = L->g->values[y].dtype;
    int64_t es = dt == RLX_DTYPE_I64 ? 2 : 1;
    uint64_t dims[CP_MAX_RANK + 1];
    int64_t ss[CP_MAX_RANK + 1], ds[CP_MAX_RANK + 1];
    int r = 0;
    uint64_t n = 1;
    if (es == 2) { /* the word pair is the innermost dim */
        dims[0] = 2;
        ss[0] = ds[0] = 1;
        r = 1;
    }
    for (int i = c->rank - 1; i >= 0; i--) {
        n *= c->dims[i];
        if (c->dims[i] == 1) continue;
        int64_t cs = c->ss[i] * es, cd = c->ds[i] * es;
        if (r > 0 && cs == ss[r - 1] * (int64_t)dims[r - 1] && cd == ds[r - 1] * (int64_t)dims[r - 1]) {
            dims[r - 1] *= c->dims[i];
            continue;
        }
        if (r == CP_MAX_RANK) return wg_decline(L, "copy of more than %d dims", CP_MAX_RANK);
        dims[r] = c->dims[i];
        ss[r] = cs;
        ds[r] = cd;
        r++;
    }
    if (n == 0) return RLX_OK;
    n *= (uint64_t)es;
    int64_t src_base = c->src_base * es, dst_base = c->dst_base * es;
    bool bytes = dt == RLX_DTYPE_BOOL;
    if (bytes) {
        /* y must be written whole, in order */
        int64_t want = 1;
        bool in_order = dst_base == 0 && n == wg_numel(&L->g->values[y]);
        for (int i = 0; i < r && in_order; i++) {
            in_order = ds[i] == want;
            want *= (int64_t)dims[i];
        }
        if (!in_order) return wg_decline(L, "bool copy that does not write its output whole");
    }
    const int64_t lim = (int64_t)1 << 31;
    if (src_base < 0 || dst_base < 0 || src_base >= lim || dst_base >= lim || n >= (uint64_t)lim)
        return wg_decline(L, "offsets");
    for (int i = 0; i < r; i++)
        if (ss[i] <= -lim || ss[i] >= lim || ds[i] <= -lim || ds[i] >= lim) return wg_decline(L, "strides");
    /* outermost first */
    wg_strided sp;
    memset(&sp, 0, sizeof sp);
    sp.rank = r;
    sp.n_ops = 2;
    sp.base[0] = src_base;
    sp.base[1] = dst_base;
    for (int i = 0; i < r; i++) {
        sp.dims[i] = dims[r - 1 - i];
        sp.str[0][i] = ss[r - 1 - i];
        sp.str[1][i] = ds[r - 1 - i];
    }
    if (bytes) { /* one dispatch: each invocation assembles a whole word of y */
        wg_dispatch *d = wg_emit(L, "copy");
        wg_spec(L, d, "BYTES", 1);
        wg_bind_value(L, d, "x_off", x);
        wg_bind_value(L, d, "y_off", y);
        p_copy(L, d, n, r, src_base, dst_base, (n + 3) / 4, sp.dims, sp.str[0], sp.str[1]);
        return wg_grid_1d(L, d, (n + 3) / 4);
    }
    /* split into blocks that fit one binding each */
    copy_ctx cc = { x, y, dt == RLX_DTYPE_F16 ? WG_ELEM_F16 : WG_ELEM_U32, sp.str[0], sp.str[1] };
    return wg_split_strided(L, &sp, emit_copy_block, &cc);
}

typedef struct fill_ctx {
    int y;
    uint32_t lo, hi;
} fill_ctx;

static rlx_status emit_fill_block(wg_lower *L, const wg_block *b, void *ctx) {
    const fill_ctx *fc = ctx;
    bool odd = (b->lo[0] & 1) != 0; /* the pattern's period is two words from word 0 of y */
    wg_dispatch *d = wg_emit(L, "fill");
    wg_bind(L, d, "y_off", fc->y, b->lo[0], b->n[0]);
    WG_P(L, d, wg_pu("n", b->numel), wg_pu("value", odd ? fc->hi : fc->lo), wg_pu("value_hi", odd ? fc->lo : fc->hi));
    return wg_grid_1d(L, d, b->numel);
}

rlx_status wg_emit_fill(wg_lower *L, int y, uint64_t n, uint32_t lo, uint32_t hi) {
    fill_ctx fc = { y, lo, hi };
    return n ? wg_split_1d(L, n, 1, emit_fill_block, &fc) : RLX_OK;
}

rlx_status wg_emit_copy_words(wg_lower *L, int x, int y, uint64_t n) {
    static const int64_t unit[1] = { 1 };
    copy_ctx cc = { x, y, WG_ELEM_U32, unit, unit };
    return n ? wg_split_1d(L, n, 2, emit_copy_block, &cc) : RLX_OK;
}

#define DATA_TYPES (WG_ANY4 | WG_I64 | WG_BOOL | WG_F16)

/* The data input and output must be of one dtype the GPU holds (4-byte,
 * f16 as halves, i64, bool). */
static rlx_status check_data(wg_lower *L) {
    const rlx_value *x = wg_in(L, 0), *y = wg_out(L, 0);
    if (!wg_value_held(L, x, DATA_TYPES) || !wg_value_held(L, y, DATA_TYPES) || x->dtype != y->dtype)
        return wg_decline(L, "data must be a static f32, f16 (with shader-f16), i32, u32, i64 or bool");
    for (int i = 1; i < L->n->n_out; i++)
        if (wg_out(L, i)) return wg_decline(L, "extra outputs");
    if (y->rank > CP_MAX_RANK || x->rank > CP_MAX_RANK) return wg_decline(L, "rank");
    return RLX_OK;
}

/* Identity, Reshape, Flatten, Squeeze, Unsqueeze (all versions): a
 * contiguous copy of the same elements. */
static rlx_status lower_copy(wg_lower *L) {
    RLX_TRY(check_data(L));
    const rlx_value *x = wg_in(L, 0), *y = wg_out(L, 0);
    if (wg_numel(x) != wg_numel(y)) return wg_decline(L, "element counts differ");
    cpy c = { .rank = 1, .dims = { wg_numel(y) }, .ss = { 1 }, .ds = { 1 } };
    return emit_copy(L, wg_in_id(L, 0), wg_out_id(L, 0), &c);
}

/* Transpose-1/13/21: y dims = x dims permuted by perm (rlx_transpose_perm). */
static rlx_status lower_transpose(wg_lower *L) {
    RLX_TRY(check_data(L));
    const rlx_value *x = wg_in(L, 0), *y = wg_out(L, 0);
    int r = x->rank;
    int64_t perm[CP_MAX_RANK];
    if (rlx_transpose_perm(L->n, r, perm) != RLX_OK) return wg_decline(L, "perm");
    int64_t xs[CP_MAX_RANK], ys[CP_MAX_RANK];
    cpy c;
    copy_setup(&c, r, x, xs, y, ys);
    for (int i = 0; i < r; i++) {
        int p = (int)perm[i];
        if (y->dims[i] != x->dims[p]) return wg_decline(L, "output shape differs from perm");
        c.dims[i] = (uint64_t)y->dims[i];
        c.ss[i] = xs[p];
        c.ds[i] = ys[i];
    }
    return emit_copy(L, wg_in_id(L, 0), wg_out_id(L, 0), &c);
}

/* Slice-1 (attributes) and -10/11/13 (constant inputs starts, ends, axes,
 * steps), with ONNX clamping. */
static rlx_status lower_slice(wg_lower *L) {
    RLX_TRY(check_data(L));
    const rlx_node *n = L->n;
    const rlx_value *x = wg_in(L, 0), *y = wg_out(L, 0);
    int r = x->rank;
    int64_t starts[CP_MAX_RANK], ends[CP_MAX_RANK], axes[CP_MAX_RANK], steps[CP_MAX_RANK];
    size_t ns = 0, ne = 0, na = 0, nst = 0;
    if (n->version < 10) {
        const int64_t *s = rlx_param_ints(n, RLX_A_starts, &ns), *e = rlx_param_ints(n, RLX_A_ends, &ne);
        const int64_t *a = rlx_param_ints(n, RLX_A_axes, &na);
        if (!s || !e || ns != ne || ns > CP_MAX_RANK) return wg_decline(L, "starts/ends");
        memcpy(starts, s, ns * 8);
        memcpy(ends, e, ne * 8);
        if (a) {
            if (na != ns) return wg_decline(L, "axes");
            memcpy(axes, a, na * 8);
        }
    } else {
        if (!rlx_konst_ints(wg_in(L, 1), starts, CP_MAX_RANK, &ns) || !rlx_konst_ints(wg_in(L, 2), ends, CP_MAX_RANK, &ne) ||
            ns != ne)
            return wg_decline(L, "starts/ends are not constant");
        if (wg_in(L, 3) && (!rlx_konst_ints(wg_in(L, 3), axes, CP_MAX_RANK, &na) || na != ns))
            return wg_decline(L, "axes are not constant");
        if (wg_in(L, 4) && (!rlx_konst_ints(wg_in(L, 4), steps, CP_MAX_RANK, &nst) || nst != ns))
            return wg_decline(L, "steps are not constant");
    }
    if (!na)
        for (size_t i = 0; i < ns; i++) axes[i] = (int64_t)i;
    if (!nst)
        for (size_t i = 0; i < ns; i++) steps[i] = 1;
    int64_t st[CP_MAX_RANK], step[CP_MAX_RANK], cnt[CP_MAX_RANK];
    bool seen[CP_MAX_RANK] = { false };
    for (int i = 0; i < r; i++) st[i] = 0, step[i] = 1, cnt[i] = x->dims[i];
    for (size_t i = 0; i < ns; i++) {
        int ax;
        if (!rlx_norm_axis(axes[i], r, &ax) || seen[ax]) return wg_decline(L, "axes");
        seen[ax] = true;
        int64_t dim = x->dims[ax], s = starts[i], e = ends[i], k = steps[i];
        if (k == 0) return wg_decline(L, "step 0");
        if (s < 0) s += dim;
        if (e < 0) e += dim;
        if (k > 0) {
            s = s < 0 ? 0 : s > dim ? dim : s;
            e = e < 0 ? 0 : e > dim ? dim : e;
            cnt[ax] = e > s ? (e - s + k - 1) / k : 0;
        } else {
            s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
            cnt[ax] = s > e ? (s - e + (-k) - 1) / (-k) : 0;
        }
        st[ax] = s;
        step[ax] = k;
    }
    int64_t xs[CP_MAX_RANK], ys[CP_MAX_RANK];
    cpy c;
    copy_setup(&c, r, x, xs, y, ys);
    for (int i = 0; i < r; i++) {
        if (cnt[i] != y->dims[i]) return wg_decline(L, "output shape differs from the slice");
        c.dims[i] = (uint64_t)cnt[i];
        c.ss[i] = step[i] * xs[i];
        c.ds[i] = ys[i];
        if (cnt[i] > 0) c.src_base += st[i] * xs[i];
    }
    return emit_copy(L, wg_in_id(L, 0), wg_out_id(L, 0), &c);
}

/* The copy between a part (input k of Concat, output k of Split: `what`)
 * and its slab of the whole along `axis`, from index `at` on: part into
 * whole when to_whole, else whole into part. Declines when the shapes
 * differ off the axis. */
static rlx_status slab_copy(wg_lower *L, int part, int whole, int axis, int64_t at, bool to_whole, const char *what,
                            int k) {
    const rlx_value *p = &L->g->values[part], *w = &L->g->values[whole];
    int64_t ps[CP_MAX_RANK], ws[CP_MAX_RANK];
    cpy c;
    copy_setup(&c, p->rank, p, ps, w, ws);
    for (int d = 0; d < p->rank; d++) {
        if (d != axis && p->dims[d] != w->dims[d]) return wg_decline(L, "%s %d shape", what, k);
        c.dims[d] = (uint64_t)p->dims[d];
        c.ss[d] = to_whole ? ps[d] : ws[d];
        c.ds[d] = to_whole ? ws[d] : ps[d];
    }
    if (to_whole) c.dst_base = at * ws[axis];
    else c.src_base = at * ws[axis];
    return to_whole ? emit_copy(L, part, whole, &c) : emit_copy(L, whole, part, &c);
}

/* Concat-1/4/11/13: one strided copy per input into its slab of y. */
static rlx_status lower_concat(wg_lower *L) {
    const rlx_value *y = wg_out(L, 0);
    if (!wg_value_held(L, y, WG_ANY4 | WG_I64 | WG_F16) || y->rank > CP_MAX_RANK || y->rank < 1)
        return wg_decline(L, "output");
    int axis;
    if (!rlx_norm_axis(rlx_param_int(L->n, RLX_A_axis), y->rank, &axis)) return wg_decline(L, "axis");
    int64_t at = 0;
    for (int i = 0; i < L->n->n_in; i++) {
        const rlx_value *x = wg_in(L, i);
        if (!x) continue;
        if (!wg_value_held(L, x, WG_ANY4 | WG_I64 | WG_F16) || x->dtype != y->dtype || x->rank != y->rank)
            return wg_decline(L, "input %d dtype or rank", i);
        RLX_TRY(slab_copy(L, wg_in_id(L, i), wg_out_id(L, 0), axis, at, true, "input", i));
        at += x->dims[axis];
    }
    if (at != y->dims[axis]) return wg_decline(L, "inputs do not fill the output");
    return RLX_OK;
}

/* Expand-8/13: broadcast copy (stride 0 on broadcast dims). */
static rlx_status lower_expand(wg_lower *L) {
    RLX_TRY(check_data(L));
    const rlx_value *x = wg_in(L, 0), *y = wg_out(L, 0);
    if (x->rank > y->rank) return wg_decline(L, "rank");
    int64_t xs[CP_MAX_RANK], ys[CP_MAX_RANK];
    cpy c;
    copy_setup(&c, y->rank, x, xs, y, ys);
    for (int i = 0; i < y->rank; i++) {
        int j = i - (y->rank - x->rank);
        int64_t xd = j >= 0 ? x->dims[j] : 1;
        if (xd != 1 && xd != y->dims[i]) return wg_decline(L, "shapes do not broadcast");
        c.dims[i] = (uint64_t)y->dims[i];
        c.ss[i] = (j >= 0 && xd != 1) ? xs[j] : 0;
        c.ds[i] = ys[i];
    }
    return emit_copy(L, wg_in_id(L, 0), wg_out_id(L, 0), &c);
}

/* Pad in the edge (0), reflect (1) and wrap (2) modes (kernels/pad.wgsl):
 * pads holds [begin..., end...] for every dim; negative pads crop first,
 * as on the CPU. */
static rlx_status emit_pad_mode(wg_lower *L, const int64_t *pads, int mode) {
    const rlx_value *x = wg_in(L, 0), *y = wg_out(L, 0);
    int r = x->rank;
    uint64_t ydims[CP_MAX_RANK], xs[CP_MAX_RANK], pb[CP_MAX_RANK], lo[CP_MAX_RANK], len[CP_MAX_RANK];
    int64_t xst[CP_MAX_RANK];
    rlx_strides(x->dims, r, xst);
    for (int i = 0; i < r; i++) {
        int64_t b = pads[i], e = pads[r + i];
        if (x->dims[i] + b + e != y->dims[i]) return wg_decline(L, "output shape differs from the pads");
        int64_t l = b < 0 ? -b : 0, h = x->dims[i] + (e < 0 ? e : 0);
        if (h - l <= 0 && y->dims[i] > 0) return wg_decline(L, "axis %d has nothing to pad from (the CPU reports it)", i);
        ydims[i] = (uint64_t)y->dims[i];
        xs[i] = (uint64_t)xst[i];
        pb[i] = (uint64_t)(b > 0 ? b : 0);
        lo[i] = (uint64_t)l;
        len[i] = (uint64_t)(h - l);
    }
    uint64_t total = wg_numel(y);
    if (total == 0) return RLX_OK;
    if (wg_words(y) >= ((uint64_t)1 << 30) || wg_words(x) >= ((uint64_t)1 << 30)) return wg_decline(L, "too large");
    wg_dispatch *d = wg_emit(L, "pad");
    if (x->dtype == RLX_DTYPE_F16) d->elem = WG_ELEM_F16;
    wg_bind_value(L, d, "x_off", wg_in_id(L, 0));
    wg_bind_value(L, d, "y_off", wg_out_id(L, 0));
    WG_P(L, d, wg_pu("n", total), wg_pu("rank", r), wg_pu("mode", mode), wg_pu("w", x->dtype == RLX_DTYPE_I64 ? 2 : 1));
    wg_p_align16(L, d);
    const uint64_t *arrs[5] = { ydims, xs, pb, lo, len };
    static const char *const k_arr[5] = { "ydims", "xstr", "pb", "lo", "len" };
    for (int k = 0; k < 5; k++)
        for (int i = 0; i < CP_MAX_RANK; i++) wg_p_u32(L, d, k_arr[k], i < r ? (uint32_t)arrs[k][i] : (k == 0 ? 1 : 0));
    return wg_grid_1d(L, d, total);
}

/* Pad-2 (attributes) and -11/13/18/19/21 (constant pads, constant_value,
 * axes inputs): mode "constant" fills y with the value, then copies the
 * part of x that survives negative pads; edge, reflect and wrap
 * (Pad-19+) read each output element's source (emit_pad_mode). */
static rlx_status lower_pad(wg_lower *L) {
    RLX_TRY(check_data(L));
    const rlx_node *n = L->n;
    const rlx_value *x = wg_in(L, 0), *y = wg_out(L, 0);
    int r = x->rank;
    const char *mode = rlx_param_str(n, RLX_A_mode);
    int pmode = strcmp(mode, "edge") == 0 ? 0 : strcmp(mode, "reflect") == 0 ? 1 : strcmp(mode, "wrap") == 0 ? 2 : -1;
    if (pmode < 0 && strcmp(mode, "constant") != 0) return wg_decline(L, "mode %s", mode);
    if (pmode == 2 && n->version < 19) return wg_decline(L, "wrap before Pad-19");
    if (x->dtype == RLX_DTYPE_BOOL) return wg_decline(L, "bool data");
    bool i64 = x->dtype == RLX_DTYPE_I64;
    int64_t pads[2 * CP_MAX_RANK];
    size_t np = 0;
    uint32_t bits = 0, hi = 0;
    if (n->version < 11) {
        const int64_t *pv = rlx_param_ints(n, RLX_A_pads, &np);
        if (!pv || np != (size_t)(2 * r)) return wg_decline(L, "pads");
        memcpy(pads, pv, np * 8);
        float v = rlx_param_float(n, RLX_A_value);
        if (x->dtype == RLX_DTYPE_F32) {
            memcpy(&bits, &v, 4);
        } else if (x->dtype == RLX_DTYPE_F16) {
            bits = rlx_f32_to_f16(v);
        } else {
            int64_t iv = (int64_t)v;
            bits = (uint32_t)(uint64_t)iv;
            hi = (uint32_t)((uint64_t)iv >> 32);
        }
    } else {
        int64_t raw[2 * CP_MAX_RANK];
        size_t nr = 0;
        if (!rlx_konst_ints(wg_in(L, 1), raw, 2 * CP_MAX_RANK, &nr)) return wg_decline(L, "pads are not constant");
        int axes[CP_MAX_RANK];
        int na = r;
        for (int i = 0; i < r; i++) axes[i] = i;
        if (wg_in(L, 3)) {
            int64_t av[CP_MAX_RANK];
            size_t ac = 0;
            if (!rlx_konst_ints(wg_in(L, 3), av, CP_MAX_RANK, &ac)) return wg_decline(L, "axes are not constant");
            na = (int)ac;
            for (int i = 0; i < na; i++)
                if (!rlx_norm_axis(av[i], r, &axes[i])) return wg_decline(L, "axes");
        }
        if (nr != (size_t)(2 * na)) return wg_decline(L, "pads has %zu values", nr);
        for (int i = 0; i < 2 * r; i++) pads[i] = 0;
        for (int i = 0; i < na; i++) {
            pads[axes[i]] = raw[i];
            pads[r + axes[i]] = raw[na + i];
        }
        const rlx_value *cv = wg_in(L, 2);
        if (pmode < 0 && cv && wg_numel(cv) > 0) {
            if (!cv->konst || cv->dtype != x->dtype) return wg_decline(L, "constant_value is not a constant");
            if (x->dtype == RLX_DTYPE_F16) memcpy(&bits, cv->konst->data, 2); /* a half: the low 16 bits */
            else memcpy(&bits, cv->konst->data, 4);
            if (i64) memcpy(&hi, (const char *)cv->konst->data + 4, 4);
        }
    }
    if (x->dtype == RLX_DTYPE_F16) bits |= bits << 16; /* the fill writes words: two halves each */
    if (!i64) hi = bits;
    if (pmode >= 0) return emit_pad_mode(L, pads, pmode);
    int64_t xs[CP_MAX_RANK], ys[CP_MAX_RANK];
    rlx_strides(x->dims, r, xs);
    rlx_strides(y->dims, r, ys);
    uint64_t total = wg_numel(y);
    if (total == 0) return RLX_OK;
    RLX_TRY(wg_emit_fill(L, wg_out_id(L, 0), wg_words(y), bits, hi));
    cpy c;
    memset(&c, 0, sizeof c);
    c.rank = r;
    for (int i = 0; i < r; i++) {
        int64_t pb = pads[i], pe = pads[r + i];
        if (x->dims[i] + pb + pe != y->dims[i]) return wg_decline(L, "output shape differs from the pads");
        int64_t first = pb < 0 ? -pb : 0, last = x->dims[i] - (pe < 0 ? -pe : 0);
        if (last <= first) return RLX_OK; /* nothing of x survives: the fill is all */
        c.dims[i] = (uint64_t)(last - first);
        c.ss[i] = xs[i];
        c.ds[i] = ys[i];
        c.src_base += first * xs[i];
        c.dst_base += (pb > 0 ? pb : 0) * ys[i];
    }
    return emit_copy(L, wg_in_id(L, 0), wg_out_id(L, 0), &c);
}

/* Split-1/2/11/13/18: one copy per output, each output's extent along the
 * axis taken from its inferred shape (so split sizes, equal splits and
 * num_outputs all come out of shape inference). */
static rlx_status lower_split(wg_lower *L) {
    const rlx_value *x = wg_in(L, 0);
    if (!wg_value_held(L, x, DATA_TYPES) || x->rank < 1 || x->rank > CP_MAX_RANK) return wg_decline(L, "input");
    int axis;
    if (!rlx_norm_axis(rlx_param_int(L->n, RLX_A_axis), x->rank, &axis)) return wg_decline(L, "axis");
    int64_t at = 0;
    for (int k = 0; k < L->n->n_out; k++) {
        const rlx_value *y = wg_out(L, k);
        if (!y) return wg_decline(L, "omitted output %d", k);
        if (!wg_value_held(L, y, DATA_TYPES) || y->dtype != x->dtype || y->rank != x->rank) return wg_decline(L, "output %d", k);
        if (at + y->dims[axis] > x->dims[axis]) return wg_decline(L, "outputs exceed the input");
        RLX_TRY(slab_copy(L, wg_out_id(L, k), wg_in_id(L, 0), axis, at, false, "output", k));
        at += y->dims[axis];
    }
    if (at != x->dims[axis]) return wg_decline(L, "outputs do not cover the input");
    return RLX_OK;
}

/* Tile-1/6/13: y = x repeated; as a copy over (repeat, extent) pairs of dims:
 * y strides (extent * ys, ys), x strides (0, xs). Repeats come from the
 * output shape. */
static rlx_status lower_tile(wg_lower *L) {
    RLX_TRY(check_data(L));
    const rlx_value *x = wg_in(L, 0), *y = wg_out(L, 0);
    if (x->rank != y->rank) return wg_decline(L, "rank");
    int64_t xs[CP_MAX_RANK], ys[CP_MAX_RANK];
    rlx_strides(x->dims, x->rank, xs);
    rlx_strides(y->dims, y->rank, ys);
    /* merge-friendly order: for each dim, the repeat index then the extent */
    uint64_t dims[2 * CP_MAX_RANK];
    int64_t ss[2 * CP_MAX_RANK], ds[2 * CP_MAX_RANK];
    int r = 0;
    for (int d = 0; d < x->rank; d++) {
        if (x->dims[d] == 0) return RLX_OK;
        if (y->dims[d] % x->dims[d]) return wg_decline(L, "output dim %d is not a multiple", d);
        int64_t rep = y->dims[d] / x->dims[d];
        if (rep != 1) {
            dims[r] = (uint64_t)rep;
            ss[r] = 0;
            ds[r++] = x->dims[d] * ys[d];
        }
        dims[r] = (uint64_t)x->dims[d];
        ss[r] = xs[d];
        ds[r++] = ys[d];
    }
    /* unit dims dropped, neighbours contiguous in both merged (outer into inner) */
    int m = 0;
    for (int i = 0; i < r; i++) {
        if (dims[i] == 1) continue;
        if (m > 0 && ss[m - 1] == ss[i] * (int64_t)dims[i] && ds[m - 1] == ds[i] * (int64_t)dims[i]) {
            dims[m - 1] *= dims[i];
            ss[m - 1] = ss[i];
            ds[m - 1] = ds[i];
            continue;
        }
        dims[m] = dims[i], ss[m] = ss[i], ds[m++] = ds[i];
    }
    /* a copy takes CP_MAX_RANK dims (one fewer for i64, whose word pair is
     * one): the leading dims beyond that become one copy per index */
    int lim = CP_MAX_RANK - (y->dtype == RLX_DTYPE_I64), peel = m > lim ? m - lim : 0;
    uint64_t copies = 1;
    for (int i = 0; i < peel; i++) copies *= dims[i];
    if (copies > 256) return wg_decline(L, "tile of %d dims would take %llu copies", m, (unsigned long long)copies);
    for (uint64_t k = 0; k < copies; k++) {
        cpy c;
        memset(&c, 0, sizeof c);
        uint64_t rest = k;
        for (int i = peel - 1; i >= 0; i--) {
            int64_t at = (int64_t)(rest % dims[i]);
            rest /= dims[i];
            c.src_base += at * ss[i];
            c.dst_base += at * ds[i];
        }
        for (int i = peel; i < m; i++) {
            c.dims[c.rank] = dims[i];
            c.ss[c.rank] = ss[i];
            c.ds[c.rank++] = ds[i];
        }
        if (c.rank == 0) c.rank = 1, c.dims[0] = 1, c.ss[0] = c.ds[0] = 1;
        RLX_TRY(emit_copy(L, wg_in_id(L, 0), wg_out_id(L, 0), &c));
    }
    return RLX_OK;
}

/* DepthToSpace-1/11/13 (DCR and CRD) and SpaceToDepth-1/13, NCHW: copies
 * over the 6-D output view with the 6-D input strides. */
static rlx_status lower_depth_space(wg_lower *L) {
    RLX_TRY(check_data(L));
    const rlx_value *x = wg_in(L, 0), *y = wg_out(L, 0);
    if (x->rank != 4 || y->rank != 4) return wg_decline(L, "rank");
    int64_t b = rlx_param_int(L->n, RLX_A_blocksize);
    if (b < 1) return wg_decline(L, "blocksize");
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    cpy c;
    memset(&c, 0, sizeof c);
    c.rank = 6;
    if (L->n->op == RLX_OP_DepthToSpace) {
        if (C % (b * b)) return wg_decline(L, "channels");
        int64_t Cp = C / (b * b);
        if (y->dims[1] != Cp || y->dims[2] != H * b || y->dims[3] != W * b) return wg_decline(L, "output shape");
        const char *mode = rlx_param_str(L->n, RLX_A_mode);
        bool crd = strcmp(mode, "CRD") == 0;
        if (!crd && strcmp(mode, "DCR") != 0) return wg_decline(L, "mode");
        /* output view (n, c', h, i, w, j) */
        int64_t dims[6] = { N, Cp, H, b, W, b };
        int64_t hw = H * W;
        int64_t ss[6] = { C * hw, crd ? b * b * hw : hw, W, crd ? b * hw : b * Cp * hw, 1, crd ? hw : Cp * hw };
        for (int i = 0; i < 6; i++) c.dims[i] = (uint64_t)dims[i], c.ss[i] = ss[i];
        rlx_strides(dims, 6, c.ds);
    } else {
        if (H % b || W % b) return wg_decline(L, "spatial dims");
        int64_t Ho = H / b, Wo = W / b;
        if (y->dims[1] != C * b * b || y->dims[2] != Ho || y->dims[3] != Wo) return wg_decline(L, "output shape");
        /* output view (n, i, j, c, h, w) */
        int64_t dims[6] = { N, b, b, C, Ho, Wo };
        int64_t ss[6] = { C * H * W, W, 1, H * W, b * W, b };
        for (int i = 0; i < 6; i++) c.dims[i] = (uint64_t)dims[i], c.ss[i] = ss[i];
        rlx_strides(dims, 6, c.ds);
    }
    return emit_copy(L, wg_in_id(L, 0), wg_out_id(L, 0), &c);
}

const wg_lower_fn wg_lowerings_tensor[RLX_OP_COUNT] = {
    [RLX_OP_Identity] = lower_copy, [RLX_OP_Reshape] = lower_copy, [RLX_OP_Flatten] = lower_copy, [RLX_OP_Squeeze] = lower_copy, [RLX_OP_Unsqueeze] = lower_copy,
    [RLX_OP_Transpose] = lower_transpose, [RLX_OP_Slice] = lower_slice, [RLX_OP_Concat] = lower_concat,
    [RLX_OP_Expand] = lower_expand, [RLX_OP_Pad] = lower_pad, [RLX_OP_Split] = lower_split, [RLX_OP_Tile] = lower_tile,
    [RLX_OP_DepthToSpace] = lower_depth_space, [RLX_OP_SpaceToDepth] = lower_depth_space,
};
