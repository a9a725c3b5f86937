/* WGSL lowerings of the elementwise family: the standalone functions of the
 * vocabulary (src/ir/ew.h; kernels/unary.wgsl, one lowering for all) and binary arithmetic with multidirectional
 * broadcasting (kernels/binary.wgsl), variadic Sum/Mean/Max/Min as chains
 * of binary dispatches. Semantics: the ONNX operators of the same names
 * (versions as in src/ir/ops/ops_elementwise.c). f32 and f16 (computed in
 * f32, rounded once at the store); i32 for Add/Sub/Mul/Max/Min/Sum. */
#include <string.h>

#include "backend/webgpu/webgpu.h"
#include "backend/webgpu/wg_codes.h"
#include "backend/webgpu/wg_split.h"
#include "ir/ew.h"
#include "ir/op.h"

/* ------------------------------------------------------------ unary */

typedef struct unary_ctx {
    rlx_ew_call f;
    int x, y;
    float s;
    wg_elem elem;
} unary_ctx;

static rlx_status emit_unary_block(wg_lower *L, const wg_block *b, void *ctx) {
    const unary_ctx *u = ctx;
    wg_dispatch *d = wg_emit(L, "unary");
    d->elem = u->elem;
    wg_spec(L, d, "OP", u->f.kind);
    wg_bind(L, d, "x_off", u->x, b->lo[0], b->n[0]);
    wg_bind(L, d, "y_off", u->y, b->lo[1], b->n[1]);
    WG_P(L, d, wg_pu("n", b->numel), wg_pf("alpha", u->f.alpha), wg_pf("beta", u->f.beta), wg_pf("s", u->s));
    return wg_grid_1d(L, d, b->numel);
}

/* Emits y = f(x, s) over n elements, in chunks that fit one binding. */
static rlx_status emit_unary(wg_lower *L, rlx_ew_call f, int x, int y, uint64_t n, float s) {
    unary_ctx u = { f, x, y, s, wg_elem_of(L->g->values[y].dtype) };
    return wg_split_1d(L, n, 2, emit_unary_block, &u);
}

/* A standalone function of the vocabulary (src/ir/ew.h), Clip with
 * constant bounds included: one unary.wgsl dispatch per binding window. */
static rlx_status lower_unary(wg_lower *L) {
    rlx_ew_call f;
    if (!rlx_ew_resolve(L->g, L->n, &f)) return wg_decline(L, "parameters not known at compile time");
    const rlx_ew_info *r = rlx_ew_info_of(f.kind);
    if (!r->wgsl || r->arity != 1) return wg_decline(L, "no WGSL for %s", r->id);
    const rlx_value *x = wg_in(L, 0), *y = wg_out(L, 0);
    if (!x || !y || x->dtype != y->dtype) return wg_decline(L, "unary ops map a dtype to itself");
    RLX_TRY(wg_check_io(L, wg_kernel_types("unary") & (WG_F32 | WG_F16), 1));
    for (int i = 1; i < L->n->n_out; i++)
        if (wg_out(L, i)) return wg_decline(L, "extra outputs");
    if (f.kind != RLX_EW_CLIP && L->n->n_in > 1) return wg_decline(L, "extra inputs");
    uint64_t cnt = wg_numel(y);
    if (cnt == 0) return RLX_OK;
    return emit_unary(L, f, wg_in_id(L, 0), wg_out_id(L, 0), cnt, 0.0f);
}

/* ------------------------------------------------------------ binary */

/* Op codes of kernels/binary.wgsl: functions of the vocabulary; COPY is the
 * broadcast copy of the first operand. */
enum bin_code {
    BIN_ADD = RLX_EW_ADD, BIN_SUB = RLX_EW_SUB, BIN_MUL = RLX_EW_MUL, BIN_DIV = RLX_EW_DIV, BIN_POW = RLX_EW_POW,
    BIN_MAX = RLX_EW_MAX, BIN_MIN = RLX_EW_MIN, BIN_PRELU = RLX_EW_PRELU, BIN_FIRST = RLX_EW_COPY,
    BIN_CLAMP_LO = RLX_EW_CLAMP_LO, BIN_CLAMP_HI = RLX_EW_CLAMP_HI
};

#define BIN_MAX_RANK 8

typedef struct binary_ctx {
    int code, a, b, y;
    wg_elem elem;
    const wg_bcview *bs;
} binary_ctx;

/* One dispatch of kernels/binary.wgsl over a block of the output (operands
 * a, b, y; strides are never negative, so each window starts at the
 * block's first element). */
static rlx_status emit_binary_block(wg_lower *L, const wg_block *blk, void *ctx) {
    const binary_ctx *c = ctx;
    wg_dispatch *d = wg_emit(L, "binary");
    wg_spec(L, d, "OP", c->code);
    d->elem = c->elem;
    wg_bind(L, d, "a_off", c->a, blk->lo[0], blk->n[0]);
    wg_bind(L, d, "b_off", c->b, blk->lo[1], blk->n[1]);
    wg_bind(L, d, "y_off", c->y, blk->lo[2], blk->n[2]);
    WG_P(L, d, wg_pu("n", blk->numel), wg_pu("rank", c->bs->rank));
    wg_p_align16(L, d);
    static const char *const k_arr[3] = { "dims", "a_str", "b_str" };
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < BIN_MAX_RANK; i++) {
            uint64_t v = k == 0 ? blk->dims[i] : c->bs->str[k - 1][i];
            if (k == 0 && i >= c->bs->rank) v = 1;
            wg_p_u32(L, d, k_arr[k], (uint32_t)v);
        }
    }
    return wg_grid_1d(L, d, blk->numel);
}

/* One operand of emit_binary_at: a value (or WG_SCRATCH from element
 * base) read with the shape of `shape`. */
typedef struct bin_opnd {
    int id;
    int64_t base;
    const rlx_value *shape;
} bin_opnd;

/* y = a op b over y's shape (a, b broadcast to it), elements of type elem,
 * in blocks that fit one binding. */
static rlx_status emit_binary_at(wg_lower *L, int code, wg_elem elem, bin_opnd a, bin_opnd b, bin_opnd y) {
    const rlx_value *ins[2] = { a.shape, b.shape };
    wg_bcview bs;
    RLX_TRY(wg_bcview_make(L, ins, 2, y.shape, &bs));
    wg_strided sp;
    memset(&sp, 0, sizeof sp);
    sp.rank = bs.rank;
    sp.n_ops = 3;
    sp.base[0] = a.base, sp.base[1] = b.base, sp.base[2] = y.base;
    int64_t ys = 1;
    for (int i = bs.rank - 1; i >= 0; i--) {
        sp.dims[i] = bs.dims[i];
        sp.str[0][i] = (int64_t)bs.str[0][i];
        sp.str[1][i] = (int64_t)bs.str[1][i];
        sp.str[2][i] = ys;
        ys *= (int64_t)bs.dims[i];
    }
    binary_ctx c = { code, a.id, b.id, y.id, elem, &bs };
    return wg_split_strided(L, &sp, emit_binary_block, &c);
}

/* y = a op b over y's shape (a, b broadcast to it), in blocks that fit one
 * binding. */
static rlx_status emit_binary(wg_lower *L, int code, int a, int b, int y) {
    const rlx_value *v = L->g->values;
    bin_opnd oa = { a, 0, &v[a] }, ob = { b, 0, &v[b] }, oy = { y, 0, &v[y] };
    return emit_binary_at(L, code, wg_elem_of(v[y].dtype), oa, ob, oy);
}

static rlx_status lower_binary(wg_lower *L) {
    static const struct {
        rlx_op_id op;
        int code;
        bool int_ok;
    } ops[] = {
        { RLX_OP_Add, BIN_ADD, true }, { RLX_OP_Sub, BIN_SUB, true }, { RLX_OP_Mul, BIN_MUL, true }, { RLX_OP_Div, BIN_DIV, false },
        { RLX_OP_Pow, BIN_POW, false }, { RLX_OP_PRelu, BIN_PRELU, false },
    };
    int code = -1;
    bool int_ok = false;
    for (size_t i = 0; i < RLX_ARRAY_LEN(ops); i++)
        if (ops[i].op == L->n->op) code = ops[i].code, int_ok = ops[i].int_ok;
    if (code < 0) return wg_decline(L, "no binary code");
    if (L->n->n_in != 2 || !wg_in(L, 0) || !wg_in(L, 1)) return wg_decline(L, "expects two inputs");
    unsigned mask = wg_kernel_types("binary") & (int_ok ? (WG_F32 | WG_F16 | WG_I32) : (WG_F32 | WG_F16));
    RLX_TRY(wg_check_io(L, mask, 1));
    const rlx_value *a = wg_in(L, 0), *b = wg_in(L, 1), *y = wg_out(L, 0);
    if (a->dtype != y->dtype || b->dtype != y->dtype) return wg_decline(L, "mixed dtypes");
    if (wg_numel(y) == 0) return RLX_OK;
    return emit_binary(L, code, wg_in_id(L, 0), wg_in_id(L, 1), wg_out_id(L, 0));
}

/* cast.wgsl: n elements of type src (value x, whole) into type dst at
 * element off of the scratch, or the reverse (to_scratch false: from
 * scratch element off into value x). One invocation per element (per word
 * for an f16 destination). */
static rlx_status emit_cast_scratch(wg_lower *L, int x, uint64_t off, uint64_t n, bool to_scratch) {
    wg_dispatch *d = wg_emit(L, "cast");
    wg_spec(L, d, "SRC", to_scratch ? TY_F16 : TY_F32);
    wg_spec(L, d, "DST", to_scratch ? TY_F32 : TY_F16);
    uint64_t threads = to_scratch ? n : (n + 1) / 2;
    if (to_scratch) {
        wg_bind_value(L, d, "x_off", x);
        wg_bind(L, d, "y_off", WG_SCRATCH, off, n);
    } else {
        wg_bind(L, d, "x_off", WG_SCRATCH, off, n);
        wg_bind_value(L, d, "y_off", x);
    }
    WG_P(L, d, wg_pu("n", n), wg_pu("threads", threads));
    return wg_grid_1d(L, d, threads);
}

/* f16 Sum/Mean of three or more inputs: the README's rounding policy
 * (computed in f32, rounded once) over the whole sum, so the running sum
 * stays f32. Scratch: the f32 accumulator [0, ny), then one input widened
 * to f32 [ny, ny + its count). Each input: widened by cast.wgsl, added
 * into the accumulator (binary.wgsl over f32, broadcast to y's shape); the
 * first one copied (FIRST). Mean divides the f32 sum by the count; one
 * cast.wgsl rounds the result to y. Windows that do not fit one binding:
 * declined (the node runs on the CPU, which sums in f32 too). */
static rlx_status lower_variadic_f16_sum(wg_lower *L, bool mean, int n) {
    const rlx_value *y = wg_out(L, 0);
    uint64_t ny = wg_numel(y), nx = 0;
    for (int i = 0; i < L->n->n_in; i++)
        if (wg_in(L, i) && wg_numel(wg_in(L, i)) > nx) nx = wg_numel(wg_in(L, i));
    if (!wg_window_fits(L, ny + nx)) return wg_decline(L, "the f32 accumulator does not fit one binding");
    wg_scratch(L, ny + nx);
    rlx_value acc_shape = *y;
    acc_shape.dtype = RLX_DTYPE_F32;
    bin_opnd acc = { WG_SCRATCH, 0, &acc_shape };
    bool first = true;
    for (int i = 0; i < L->n->n_in; i++) {
        const rlx_value *x = wg_in(L, i);
        if (!x) continue;
        rlx_value xs_shape = *x;
        xs_shape.dtype = RLX_DTYPE_F32;
        bin_opnd xs = { WG_SCRATCH, (int64_t)ny, &xs_shape };
        RLX_TRY(emit_cast_scratch(L, wg_in_id(L, i), ny, wg_numel(x), true));
        RLX_TRY(emit_binary_at(L, first ? BIN_FIRST : BIN_ADD, WG_ELEM_F32, first ? xs : acc, xs, acc));
        first = false;
    }
    if (mean) {
        rlx_ew_call div = { RLX_EW_DIV, 0, 0 };
        unary_ctx u = { div, WG_SCRATCH, WG_SCRATCH, (float)n, WG_ELEM_F32 };
        RLX_TRY(wg_split_1d(L, ny, 2, emit_unary_block, &u));
    }
    return emit_cast_scratch(L, wg_out_id(L, 0), 0, ny, false);
}

/* Sum, Mean, Max, Min: y = x0 op x1, then y = y op x_k in place; Mean ends
 * with y = y / count. One input: a broadcast copy. f16 Sum/Mean of three
 * or more inputs accumulate in f32 (lower_variadic_f16_sum); of two, the
 * one binary dispatch computes in f32 and rounds once already. */
static rlx_status lower_variadic(wg_lower *L) {
    rlx_op_id op = L->n->op;
    int code = op == RLX_OP_Max ? BIN_MAX : op == RLX_OP_Min ? BIN_MIN : BIN_ADD;
    bool mean = op == RLX_OP_Mean;
    RLX_TRY(wg_check_io(L, mean ? (WG_F32 | WG_F16) : (WG_F32 | WG_F16 | WG_I32), 1));
    const rlx_value *y = wg_out(L, 0);
    /* any number of inputs: one dispatch each (first: the first present
     * input, after it each present one folded into y in place) */
    int n = 0, first = -1;
    for (int i = 0; i < L->n->n_in; i++) {
        if (!wg_in(L, i)) continue;
        if (wg_in(L, i)->dtype != y->dtype) return wg_decline(L, "mixed dtypes");
        if (first < 0) first = i;
        n++;
    }
    if (n == 0) return wg_decline(L, "no inputs");
    if (wg_numel(y) == 0) return RLX_OK;
    if (y->dtype == RLX_DTYPE_F16 && code == BIN_ADD && n > 2) return lower_variadic_f16_sum(L, mean, n);
    int yid = wg_out_id(L, 0), x0 = wg_in_id(L, first), k = 0;
    for (int i = first + 1; i < L->n->n_in; i++) {
        if (!wg_in(L, i)) continue;
        RLX_TRY(emit_binary(L, code, k ? yid : x0, wg_in_id(L, i), yid));
        k++;
    }
    if (n == 1) RLX_TRY(emit_binary(L, BIN_FIRST, x0, x0, yid));
    rlx_ew_call div = { RLX_EW_DIV, 0, 0 };
    if (mean && n > 1) RLX_TRY(emit_unary(L, div, yid, yid, wg_numel(y), (float)n));
    return RLX_OK;
}

/* Clip-1/6/11/12/13: constant bounds on f32 go through the unary kernel;
 * run-time scalar bounds (11+), and i32 data (12+), as two binary
 * dispatches (the second in place): floats y = CLAMP_HI(CLAMP_LO(x, lo),
 * hi), the CPU's rlx_ew_clampf (a NaN bound ignored, a tie keeps x: Max
 * and Min would propagate a NaN bound and give the bound's zero for x's);
 * i32 y = min(max(x, lo), hi). */
static rlx_status lower_clip(wg_lower *L) {
    const rlx_node *n = L->n;
    const rlx_value *x = wg_in(L, 0), *y = wg_out(L, 0);
    bool konst_bounds = true;
    for (int i = 1; i < n->n_in && i < 3; i++)
        if (wg_in(L, i) && !wg_in(L, i)->konst) konst_bounds = false;
    if (n->version < 11 || (konst_bounds && x && (x->dtype == RLX_DTYPE_F32 || x->dtype == RLX_DTYPE_F16)))
        return lower_unary(L);
    RLX_TRY(wg_check_io(L, WG_F32 | WG_F16 | WG_I32, 1));
    const rlx_value *lo = wg_in(L, 1), *hi = wg_in(L, 2);
    if ((lo && (lo->dtype != x->dtype || wg_numel(lo) != 1)) || (hi && (hi->dtype != x->dtype || wg_numel(hi) != 1)) ||
        y->dtype != x->dtype)
        return wg_decline(L, "bounds must be scalars of the input's dtype");
    if (wg_numel(y) == 0) return RLX_OK;
    int xid = wg_in_id(L, 0), yid = wg_out_id(L, 0);
    if (!lo && !hi) return emit_binary(L, BIN_FIRST, xid, xid, yid);
    bool is_int = x->dtype == RLX_DTYPE_I32;
    if (lo) RLX_TRY(emit_binary(L, is_int ? BIN_MAX : BIN_CLAMP_LO, xid, wg_in_id(L, 1), yid));
    if (hi) RLX_TRY(emit_binary(L, is_int ? BIN_MIN : BIN_CLAMP_HI, lo ? yid : xid, wg_in_id(L, 2), yid));
    return RLX_OK;
}

const wg_lower_fn wg_lowerings_elementwise[RLX_OP_COUNT] = {
#define EW_LOWERING_(id, kind, name, ...) RLX_EW_KIND_##kind([RLX_OP_##name] = lower_unary,)
    RLX_EW_FUNCS(EW_LOWERING_)
#undef EW_LOWERING_
    [RLX_OP_Clip] = lower_clip,
    [RLX_OP_Add] = lower_binary, [RLX_OP_Sub] = lower_binary, [RLX_OP_Mul] = lower_binary, [RLX_OP_Div] = lower_binary,
    [RLX_OP_Pow] = lower_binary, [RLX_OP_PRelu] = lower_binary,
    [RLX_OP_Sum] = lower_variadic, [RLX_OP_Mean] = lower_variadic, [RLX_OP_Max] = lower_variadic, [RLX_OP_Min] = lower_variadic,
};
