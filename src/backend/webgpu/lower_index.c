/* WGSL lowerings of indexing ops and ops that generate values: Gather,
 * GatherElements, GatherND, ScatterND, ScatterElements (with reductions,
 * without atomics), OneHot, Trilu, EyeLike, CumSum, ConstantOfShape and
 * Dropout (inference: a copy). Semantics: the ONNX operators (versions
 * noted per lowering). Data of the element types the GPU stores (f32, i32,
 * u32, i64 as word pairs, bool as bytes where runs fill whole words; see
 * README.md); indices i32 or i64 (word pairs whose values must fit i32).
 * Constant indices are checked here (out of range: the node stays on the
 * CPU, which reports it). Run-time ones out of range write 0 (Gather*) or
 * skip their update (Scatter*) and are reported through the run's status
 * words (wg_bind_status): the run then fails with RLX_ERR_INVALID_ARGUMENT
 * and the CPU's message, naming the node ("node 'g' (Gather): index 12 is
 * out of range [-10, 10)"), as the CPU does. */
#include <string.h>

#include "backend/webgpu/webgpu.h"
#include "backend/webgpu/wg_split.h"
#include "backend/webgpu/wg_codes.h"
#include "ir/op.h"

#define DATA_TYPES (WG_ANY4 | WG_I64 | WG_BOOL)
#define LIM31 ((uint64_t)1 << 31)

/* Words that n consecutive elements of dtype dt fill; false when they do
 * not fill whole words (bool runs of a length not a multiple of 4). */
static bool run_words(rlx_dtype dt, uint64_t n, uint64_t *w) {
    switch (dt) {
    case RLX_DTYPE_I64: *w = 2 * n; return true;
    case RLX_DTYPE_BOOL: case RLX_DTYPE_U8: case RLX_DTYPE_I8: *w = n / 4; return n % 4 == 0;
    default: *w = n; return true;
    }
}

/* Checks that every value of a constant index tensor, read as tuples of m
 * entries, lies in [-a, a) for a = dims[j] of its entry j (m = 1: one
 * extent for all). */
static bool konst_indices_ok(const rlx_value *idx, const int64_t *dims, uint64_t m) {
    const rlx_tensor *t = idx->konst;
    size_t n = rlx_tensor_numel(t);
    for (size_t i = 0; m && i < n; i++) {
        int64_t v = t->dtype == RLX_DTYPE_I64 ? ((const int64_t *)t->data)[i] : ((const int32_t *)t->data)[i];
        int64_t a = dims[i % m];
        if (v < -a || v >= a) return false;
    }
    return true;
}

/* The status binding of an index kernel (its binding 4, after three
 * operands, and the tag word after the offsets; kernels/index_read.wgsl):
 * run-time indices report through the run's status words (REPORT); constant
 * ones were checked here, so the kernel gets a placeholder window of its
 * output and never touches it. */
static void bind_report(wg_lower *L, wg_dispatch *d, const rlx_value *idx) {
    if (!idx->konst) {
        wg_spec(L, d, "REPORT", 1);
        wg_bind_status(L, d);
        return;
    }
    wg_bind(L, d, "s_off", wg_out_id(L, 0), 0, 1);
    wg_p_u32(L, d, "tag", 0);
}

/* The operands of an index kernel: a, b (Params fields an, bn) and output
 * 0, then the status binding (bind_report). */
static void bind_indexed(wg_lower *L, wg_dispatch *d, const char *an, int a, const char *bn, int b,
                         const rlx_value *idx) {
    wg_bind_value(L, d, an, a);
    wg_bind_value(L, d, bn, b);
    wg_bind_value(L, d, "y_off", wg_out_id(L, 0));
    bind_report(L, d, idx);
}

/* Gather-1/11/13: y = x[..., indices, ...] along `axis` (f16 data: the
 * f16 instance of gather.wgsl, halves, with shader-f16; int8/uint8 data:
 * bytes, as bool). */
static rlx_status lower_gather(wg_lower *L) {
    const rlx_value *x = wg_in(L, 0), *idx = wg_in(L, 1), *y = wg_out(L, 0);
    if (!wg_value_held(L, x, DATA_TYPES | WG_F16 | WG_Q8) || !wg_value_held(L, y, DATA_TYPES | WG_F16 | WG_Q8) ||
        x->dtype != y->dtype)
        return wg_decline(L, "data dtype %s", x ? rlx_dtype_name(x->dtype) : "?");
    if (!wg_value_ok(idx, WG_I32 | WG_I64)) return wg_decline(L, "indices must be i32 or i64");
    if (x->rank < 1) return wg_decline(L, "scalar data");
    int axis;
    if (!rlx_norm_axis(rlx_param_int(L->n, RLX_A_axis), x->rank, &axis)) return wg_decline(L, "axis");
    uint64_t outer = 1, inner = 1, a = (uint64_t)x->dims[axis], n_idx = wg_numel(idx);
    for (int d = 0; d < axis; d++) outer *= (uint64_t)x->dims[d];
    for (int d = axis + 1; d < x->rank; d++) inner *= (uint64_t)x->dims[d];
    if (outer * n_idx * inner != wg_numel(y)) return wg_decline(L, "output size differs");
    if (wg_numel(y) == 0) return RLX_OK;
    /* bool runs that are not whole words go byte by byte (BYTES) */
    uint64_t inner_w, ne = outer * n_idx * inner;
    bool bytes = !run_words(x->dtype, inner, &inner_w);
    if (bytes) inner_w = inner;
    if (idx->konst && !konst_indices_ok(idx, &x->dims[axis], 1)) return wg_decline(L, "constant indices out of range");
    uint64_t n = bytes ? (ne + 3) / 4 : outer * n_idx * inner_w;
    if (ne >= LIM31 || wg_words(x) >= (bytes ? (uint64_t)1 << 29 : LIM31) || a >= LIM31) return wg_decline(L, "too large for 32-bit indexing");
    wg_dispatch *d = wg_emit(L, "gather");
    if (x->dtype == RLX_DTYPE_F16) d->elem = WG_ELEM_F16; /* X and Y as array<f16>; indices stay words */
    wg_spec(L, d, "IDX64", idx->dtype == RLX_DTYPE_I64);
    if (bytes) wg_spec(L, d, "BYTES", 1);
    bind_indexed(L, d, "x_off", wg_in_id(L, 0), "i_off", wg_in_id(L, 1), idx);
    WG_P(L, d, wg_pu("n", n), wg_pu("inner", inner_w), wg_pu("n_idx", n_idx), wg_pu("a", a), wg_pu("ne", ne));
    return wg_grid_1d(L, d, n);
}

/* Words per element of a dtype the GPU holds in whole words (0 for bool). */
static uint64_t elem_words(rlx_dtype dt) { return dt == RLX_DTYPE_I64 ? 2 : dt == RLX_DTYPE_BOOL ? 0 : 1; }

/* The (lo, hi) fill words that hold the value 1 in dtype dt. */
static void one_words(rlx_dtype dt, uint32_t *lo, uint32_t *hi) {
    float f = 1.0f;
    switch (dt) {
    case RLX_DTYPE_F32: memcpy(lo, &f, 4), *hi = *lo; break;
    case RLX_DTYPE_I64: *lo = 1, *hi = 0; break;
    case RLX_DTYPE_BOOL: *lo = *hi = 0x01010101u; break;
    default: *lo = *hi = 1; break;
    }
}

/* Param array `name` of 8 u32 (array<vec4<u32>, 2>), after aligning. */
static void p_arr8(wg_lower *L, wg_dispatch *d, const char *name, const uint64_t *v, int n, uint32_t pad) {
    for (int i = 0; i < 8; i++) wg_p_u32(L, d, name, i < n ? (uint32_t)v[i] : pad);
}

static void strides_of(const int64_t *dims, int rank, uint64_t *str) {
    uint64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        str[i] = s;
        s *= (uint64_t)dims[i];
    }
}

/* GatherElements-11/13: y[c] = x[c with c[axis] = indices[c]]; 4-byte,
 * f16 (the f16 instance: halves) and i64 data. */
static rlx_status lower_gather_elements(wg_lower *L) {
    const rlx_value *x = wg_in(L, 0), *idx = wg_in(L, 1), *y = wg_out(L, 0);
    unsigned types = WG_ANY4 | WG_I64 | WG_F16;
    if (!wg_value_held(L, x, types) || !wg_value_held(L, y, types) || x->dtype != y->dtype)
        return wg_decline(L, "data dtype");
    if (!wg_value_ok(idx, WG_I32 | WG_I64)) return wg_decline(L, "indices must be i32 or i64");
    int r = x->rank, axis;
    if (r < 1 || idx->rank != r || y->rank != r) return wg_decline(L, "ranks");
    if (!rlx_norm_axis(rlx_param_int(L->n, RLX_A_axis), r, &axis)) return wg_decline(L, "axis");
    for (int d = 0; d < r; d++)
        if (y->dims[d] != idx->dims[d] || (d != axis && idx->dims[d] > x->dims[d])) return wg_decline(L, "shapes");
    uint64_t n = wg_numel(y);
    if (n == 0) return RLX_OK;
    if (idx->konst && !konst_indices_ok(idx, &x->dims[axis], 1)) return wg_decline(L, "constant indices out of range");
    if (wg_words(x) >= LIM31 || wg_words(y) >= LIM31) return wg_decline(L, "too large");
    uint64_t dims[RLX_MAX_RANK], xs[RLX_MAX_RANK];
    for (int d = 0; d < r; d++) dims[d] = (uint64_t)idx->dims[d];
    strides_of(x->dims, r, xs);
    wg_dispatch *dp = wg_emit(L, "gather_elements");
    if (x->dtype == RLX_DTYPE_F16) dp->elem = WG_ELEM_F16;
    wg_spec(L, dp, "IDX64", idx->dtype == RLX_DTYPE_I64);
    bind_indexed(L, dp, "x_off", wg_in_id(L, 0), "i_off", wg_in_id(L, 1), idx);
    WG_P(L, dp, wg_pu("n", n), wg_pu("rank", r), wg_pu("axis", axis), wg_pu("a", x->dims[axis]),
         wg_pu("w", elem_words(x->dtype)));
    wg_p_align16(L, dp);
    p_arr8(L, dp, "dims", dims, r, 1);
    p_arr8(L, dp, "xstr", xs, r, 0);
    return wg_grid_1d(L, dp, n);
}

/* Dims [b, b + m) of x and their strides in words (the entries of the
 * index tuples of GatherND/ScatterND); false when a stride is not whole
 * words (bool). */
static bool tuple_dims(const rlx_value *x, int b, int m, uint64_t *dims, uint64_t *xs) {
    for (int j = 0; j < m; j++) {
        dims[j] = (uint64_t)x->dims[b + j];
        uint64_t s = 1;
        for (int d = b + j + 1; d < x->rank; d++) s *= (uint64_t)x->dims[d];
        if (!run_words(x->dtype, s, &xs[j])) return false;
    }
    return true;
}

/* GatherND-11/12/13 (batch_dims from 12); f16 data: the f16 instance
 * (strides and slices then count halves). */
static rlx_status lower_gather_nd(wg_lower *L) {
    const rlx_value *x = wg_in(L, 0), *idx = wg_in(L, 1), *y = wg_out(L, 0);
    if (!wg_value_held(L, x, DATA_TYPES | WG_F16 | WG_Q8) || !wg_value_held(L, y, DATA_TYPES | WG_F16 | WG_Q8) ||
        x->dtype != y->dtype)
        return wg_decline(L, "data dtype");
    if (!wg_value_ok(idx, WG_I32 | WG_I64)) return wg_decline(L, "indices must be i32 or i64");
    int b = (int)(L->n->version >= 12 ? rlx_param_int(L->n, RLX_A_batch_dims) : 0), q = idx->rank;
    if (q < 1 || b < 0 || b >= q || b >= x->rank) return wg_decline(L, "ranks");
    int64_t m = idx->dims[q - 1];
    if (m < 1 || m > x->rank - b || m > 8) return wg_decline(L, "indices.shape[-1] = %lld", (long long)m);
    uint64_t nb = 1, nt = 1, sl = 1, bstride = 1;
    for (int d = 0; d < b; d++) nb *= (uint64_t)idx->dims[d];
    for (int d = b; d < q - 1; d++) nt *= (uint64_t)idx->dims[d];
    for (int d = b + (int)m; d < x->rank; d++) sl *= (uint64_t)x->dims[d];
    for (int d = b; d < x->rank; d++) bstride *= (uint64_t)x->dims[d];
    if (nb * nt * sl != wg_numel(y)) return wg_decline(L, "output size differs");
    for (int d = 0; d < b; d++) /* x's batch dims are the indices' (gather_nd.wgsl's //!audited claim) */
        if (x->dims[d] != idx->dims[d]) return wg_decline(L, "batch dims differ");
    if (wg_numel(y) == 0) return RLX_OK;
    uint64_t sl_w, bs_w;
    if (!run_words(x->dtype, sl, &sl_w) || !run_words(x->dtype, bstride, &bs_w))
        return wg_decline(L, "bool slices of %llu elements are not whole words", (unsigned long long)sl);
    if (sl_w == 0) return wg_decline(L, "empty slices");
    /* each tuple entry against its own dim */
    if (idx->konst && !konst_indices_ok(idx, &x->dims[b], (uint64_t)m))
        return wg_decline(L, "constant indices out of range");
    uint64_t n = nb * nt * sl_w;
    if (n >= LIM31 || wg_words(x) >= LIM31) return wg_decline(L, "too large");
    uint64_t dims[8], xs[8];
    if (!tuple_dims(x, b, (int)m, dims, xs)) return wg_decline(L, "bool strides");
    wg_dispatch *dp = wg_emit(L, "gather_nd");
    if (x->dtype == RLX_DTYPE_F16) dp->elem = WG_ELEM_F16;
    wg_spec(L, dp, "IDX64", idx->dtype == RLX_DTYPE_I64);
    bind_indexed(L, dp, "x_off", wg_in_id(L, 0), "i_off", wg_in_id(L, 1), idx);
    WG_P(L, dp, wg_pu("n", n), wg_pu("nt", nt), wg_pu("m", m), wg_pu("sl", sl_w), wg_pu("bstride", bs_w));
    wg_p_align16(L, dp);
    p_arr8(L, dp, "dims", dims, (int)m, 1);
    p_arr8(L, dp, "xstr", xs, (int)m, 0);
    return wg_grid_1d(L, dp, n);
}

/* reduction attribute of ScatterND/ScatterElements-16/18: scatter.wgsl RED. */
static int scatter_red(const rlx_node *n) {
    const char *s = rlx_param_str(n, RLX_A_reduction);
    static const char *const names[] = { [SR_NONE] = "none", [SR_ADD] = "add", [SR_MUL] = "mul", [SR_MAX] = "max",
                                         [SR_MIN] = "min" };
    for (int i = 0; i < 5; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

/* ScatterND-11/13/16/18 and ScatterElements-11/13/16/18: y = x, then the
 * updates in order (none, add, mul, max, min; reductions on f32 and i32). */
static rlx_status lower_scatter(wg_lower *L) {
    bool elems = L->n->op == RLX_OP_ScatterElements;
    const rlx_value *x = wg_in(L, 0), *idx = wg_in(L, 1), *u = wg_in(L, 2), *y = wg_out(L, 0);
    if (!wg_value_ok(x, DATA_TYPES) || !wg_value_ok(y, DATA_TYPES) || !wg_value_ok(u, DATA_TYPES) ||
        x->dtype != y->dtype || u->dtype != y->dtype)
        return wg_decline(L, "data dtype");
    if (!wg_value_ok(idx, WG_I32 | WG_I64)) return wg_decline(L, "indices must be i32 or i64");
    int red = scatter_red(L->n);
    if (red < 0) return wg_decline(L, "reduction");
    if (red && x->dtype != RLX_DTYPE_F32 && x->dtype != RLX_DTYPE_I32)
        return wg_decline(L, "reductions on %s", rlx_dtype_name(x->dtype));
    if (elems && x->dtype == RLX_DTYPE_BOOL) return wg_decline(L, "bool elements share words");
    if (wg_numel(x) != wg_numel(y)) return wg_decline(L, "output size");
    if (wg_words(x) >= LIM31 || wg_words(u) >= LIM31 || wg_numel(idx) >= LIM31) return wg_decline(L, "too large");
    int r = x->rank;
    uint64_t dims[8] = { 0 }, xs[8] = { 0 }, us[8] = { 0 };
    uint64_t threads, count, m = 0, sl_w = 0, w = elem_words(x->dtype);
    int axis = 0;
    if (elems) {
        if (idx->rank != r || u->rank != r || r < 1 || r > 8) return wg_decline(L, "ranks");
        if (!rlx_norm_axis(rlx_param_int(L->n, RLX_A_axis), r, &axis)) return wg_decline(L, "axis");
        for (int d = 0; d < r; d++)
            if (idx->dims[d] != u->dims[d] || (d != axis && idx->dims[d] > x->dims[d])) return wg_decline(L, "shapes");
        if (idx->konst && !konst_indices_ok(idx, &x->dims[axis], 1)) return wg_decline(L, "constant indices out of range");
        for (int d = 0; d < r; d++) dims[d] = (uint64_t)u->dims[d];
        strides_of(x->dims, r, xs);
        strides_of(u->dims, r, us);
        count = (uint64_t)u->dims[axis];
        threads = count ? wg_numel(u) / count : 0;
    } else {
        int q = idx->rank;
        if (q < 1) return wg_decline(L, "indices rank");
        m = (uint64_t)idx->dims[q - 1];
        if (m > (uint64_t)r || m > 8) return wg_decline(L, "indices.shape[-1]");
        uint64_t nt = 1, sl = 1;
        for (int d = 0; d < q - 1; d++) nt *= (uint64_t)idx->dims[d];
        for (int d = (int)m; d < r; d++) sl *= (uint64_t)x->dims[d];
        if (nt * sl != wg_numel(u)) return wg_decline(L, "updates size");
        if (!run_words(x->dtype, sl, &sl_w)) return wg_decline(L, "bool slices are not whole words");
        if (!tuple_dims(x, 0, (int)m, dims, xs)) return wg_decline(L, "bool strides");
        if (idx->konst && !konst_indices_ok(idx, x->dims, m)) return wg_decline(L, "constant indices out of range");
        count = nt;
        threads = sl_w;
        w = 1; /* ND works in words: the slices are whole words */
    }
    RLX_TRY(wg_emit_copy_words(L, wg_in_id(L, 0), wg_out_id(L, 0), wg_words(x)));
    if (threads == 0 || count == 0) return RLX_OK;
    wg_dispatch *dp = wg_emit(L, "scatter");
    wg_spec(L, dp, "IDX64", idx->dtype == RLX_DTYPE_I64);
    wg_spec(L, dp, "ELEMS", elems);
    wg_spec(L, dp, "RED", red);
    if (red != SR_NONE) dp->elem = x->dtype == RLX_DTYPE_I32 ? WG_ELEM_I32 : WG_ELEM_F32;
    bind_indexed(L, dp, "i_off", wg_in_id(L, 1), "u_off", wg_in_id(L, 2), idx);
    WG_P(L, dp, wg_pu("threads", threads), wg_pu("count", count), wg_pu("m", m), wg_pu("sl", sl_w), wg_pu("w", w),
         wg_pu("rank", r), wg_pu("axis", axis), wg_pu("a", elems ? (uint32_t)x->dims[axis] : 0));
    wg_p_align16(L, dp);
    p_arr8(L, dp, "dims", dims, 8, 1);
    p_arr8(L, dp, "xstr", xs, 8, 0);
    p_arr8(L, dp, "ustr", us, 8, 0);
    return wg_grid_1d(L, dp, threads);
}

/* OneHot-9/11: constant depth; indices f32, i32 or i64; values (off, on)
 * of a 4-byte type or i64. */
static rlx_status lower_onehot(wg_lower *L) {
    const rlx_value *idx = wg_in(L, 0), *dep = wg_in(L, 1), *val = wg_in(L, 2), *y = wg_out(L, 0);
    if (!wg_value_ok(idx, WG_F32 | WG_I32 | WG_I64)) return wg_decline(L, "indices dtype");
    if (!wg_value_ok(y, WG_ANY4 | WG_I64) || !wg_value_ok(val, WG_ANY4 | WG_I64) || val->dtype != y->dtype ||
        wg_numel(val) != 2)
        return wg_decline(L, "values dtype");
    double dv;
    if (!dep || !dep->konst || !rlx_konst_scalar(dep, &dv) || !(dv >= 1 && dv < 2147483648.0))
        return wg_decline(L, "depth is not a positive constant");
    uint64_t depth = (uint64_t)dv;
    int ax;
    if (!rlx_norm_axis(rlx_param_int(L->n, RLX_A_axis), idx->rank + 1, &ax)) return wg_decline(L, "axis");
    uint64_t inner = 1;
    for (int d = ax; d < idx->rank; d++) inner *= (uint64_t)idx->dims[d];
    uint64_t n = wg_numel(y);
    if (n != wg_numel(idx) * depth) return wg_decline(L, "output size differs");
    if (n == 0) return RLX_OK;
    if (wg_words(y) >= LIM31) return wg_decline(L, "too large");
    wg_dispatch *d = wg_emit(L, "onehot");
    wg_spec(L, d, "ITY", idx->dtype == RLX_DTYPE_F32 ? TY_F32 : idx->dtype == RLX_DTYPE_I32 ? TY_I32 : TY_I64);
    wg_spec(L, d, "NEG", L->n->version >= 11);
    wg_bind_value(L, d, "i_off", wg_in_id(L, 0));
    wg_bind_value(L, d, "v_off", wg_in_id(L, 2));
    wg_bind_value(L, d, "y_off", wg_out_id(L, 0));
    WG_P(L, d, wg_pu("n", n), wg_pu("depth", depth), wg_pu("inner", (uint32_t)(inner ? inner : 1)),
         wg_pu("w", elem_words(y->dtype)));
    return wg_grid_1d(L, d, n);
}

/* Trilu-14 (k a constant or run-time input, or absent) and EyeLike-9/22
 * (k attribute). */
static rlx_status lower_trilu(wg_lower *L) {
    bool eye = L->n->op == RLX_OP_EyeLike;
    const rlx_value *x = wg_in(L, 0), *y = wg_out(L, 0);
    unsigned types = WG_ANY4 | WG_I64 | WG_BOOL;
    if (!wg_value_ok(y, types) || !x || !rlx_value_is_static(x) || (!eye && !wg_value_ok(x, types)) ||
        (!eye && x->dtype != y->dtype))
        return wg_decline(L, "dtype");
    if (y->rank < 2 || (eye && y->rank != 2)) return wg_decline(L, "rank");
    int64_t k = 0;
    const rlx_value *kin = NULL; /* k read at run time */
    if (eye) {
        k = rlx_param_int(L->n, RLX_A_k);
    } else if (wg_in(L, 1)) {
        const rlx_value *kv_ = wg_in(L, 1);
        int64_t kv[1];
        size_t cnt = 0;
        if (kv_->konst) {
            if (!rlx_konst_ints(kv_, kv, 1, &cnt) || cnt != 1) return wg_decline(L, "k is not a scalar");
            k = kv[0];
        } else {
            if (!wg_value_ok(kv_, WG_I32 | WG_I64) || wg_numel(kv_) != 1) return wg_decline(L, "k is not an integer scalar");
            kin = kv_;
        }
    }
    int64_t N = y->dims[y->rank - 2], M = y->dims[y->rank - 1];
    if (k > M + 1) k = M + 1; /* every comparison is decided by then */
    if (k < -N - 1) k = -N - 1;
    uint64_t n = wg_numel(y);
    if (!eye && wg_numel(x) != n) return wg_decline(L, "output size differs");
    if (n == 0) return RLX_OK;
    if (n >= LIM31 || wg_words(y) >= LIM31) return wg_decline(L, "too large");
    int elem = y->dtype == RLX_DTYPE_I64 ? UNIT_PAIR : y->dtype == RLX_DTYPE_BOOL ? UNIT_BYTE : UNIT_WORD;
    uint64_t threads = elem == UNIT_BYTE ? (n + 3) / 4 : n;
    uint32_t one, hi;
    one_words(y->dtype, &one, &hi);
    wg_dispatch *d = wg_emit(L, "trilu");
    wg_spec(L, d, "MODE", eye ? TRI_EYE : rlx_param_int(L->n, RLX_A_upper) != 0 ? TRI_UPPER : TRI_LOWER);
    wg_spec(L, d, "ELEM", elem);
    if (kin) {
        wg_spec(L, d, "KIN", 1);
        wg_spec(L, d, "K32", kin->dtype == RLX_DTYPE_I32);
    }
    wg_bind_value(L, d, "x_off", eye ? wg_out_id(L, 0) : wg_in_id(L, 0));
    wg_bind_value(L, d, "y_off", wg_out_id(L, 0));
    if (kin) wg_bind_value(L, d, "k_off", wg_in_id(L, 1));
    else wg_bind(L, d, "k_off", wg_out_id(L, 0), 0, 1);
    WG_P(L, d, wg_pu("n", n), wg_pu("threads", threads), wg_pu("nn", N), wg_pu("m", M), wg_pi("k", k),
         wg_pu("one", one));
    return wg_grid_1d(L, d, threads);
}

/* CumSum-11/14 on f32, i32, u32 and f16 (cumsum.wgsl for T of that type;
 * f16 sums in TACC = f32, each output rounded once), axis a constant
 * input. */
static rlx_status lower_cumsum(wg_lower *L) {
    const rlx_value *x = wg_in(L, 0), *y = wg_out(L, 0);
    if (!wg_value_held(L, x, WG_ANY4 | WG_F16) || !wg_value_held(L, y, WG_ANY4 | WG_F16) || x->dtype != y->dtype)
        return wg_decline(L, "f32, f16, i32 or u32 data");
    int64_t av[1];
    size_t cnt = 0;
    if (!rlx_konst_ints(wg_in(L, 1), av, 1, &cnt) || cnt != 1) return wg_decline(L, "axis is not a constant scalar");
    int ax;
    if (!rlx_norm_axis(av[0], x->rank, &ax)) return wg_decline(L, "axis");
    uint64_t outer = 1, inner = 1, a = (uint64_t)x->dims[ax];
    for (int d = 0; d < ax; d++) outer *= (uint64_t)x->dims[d];
    for (int d = ax + 1; d < x->rank; d++) inner *= (uint64_t)x->dims[d];
    uint64_t lines = outer * inner;
    if (lines == 0 || a == 0) return RLX_OK;
    if (wg_numel(x) >= LIM31) return wg_decline(L, "too large");
    if (wg_numel(y) != wg_numel(x)) return wg_decline(L, "output size differs");
    /* contiguous long lines: a workgroup scan per line; else one invocation
     * per line (the CPU's order, and coalesced when inner > 1) */
    bool cols = !(inner == 1 && a >= 1024);
    wg_dispatch *d = wg_emit(L, "cumsum");
    wg_spec(L, d, "EXCL", rlx_param_int(L->n, RLX_A_exclusive) != 0);
    wg_spec(L, d, "REV", rlx_param_int(L->n, RLX_A_reverse) != 0);
    d->elem = wg_elem_of(x->dtype);
    wg_spec(L, d, "COLS", cols);
    wg_bind_value(L, d, "x_off", wg_in_id(L, 0));
    wg_bind_value(L, d, "y_off", wg_out_id(L, 0));
    WG_P(L, d, wg_pu("lines", lines), wg_pu("a", a), wg_pu("inner", inner));
    return wg_grid_groups(L, d, cols ? (lines + 255) / 256 : lines);
}

/* ConstantOfShape-9/20/21/23/24/25 when not folded (its output is static):
 * a fill with the value attribute (default f32 0). */
static rlx_status lower_constant_of_shape(wg_lower *L) {
    const rlx_value *y = wg_out(L, 0);
    if (!wg_value_ok(y, WG_ANY4 | WG_I64 | WG_BOOL)) return wg_decline(L, "dtype");
    const rlx_node_attr *a = rlx_param(L->n, RLX_A_value);
    unsigned char v[8] = { 0 };
    if (a && a->t) {
        if (a->t->dtype != y->dtype || rlx_tensor_numel(a->t) != 1) return wg_decline(L, "value");
        memcpy(v, a->t->data, a->t->nbytes < 8 ? a->t->nbytes : 8);
    }
    uint32_t lo, hi;
    if (y->dtype == RLX_DTYPE_BOOL) {
        lo = v[0] * 0x01010101u;
        hi = lo;
    } else {
        memcpy(&lo, v, 4);
        if (y->dtype == RLX_DTYPE_I64) memcpy(&hi, v + 4, 4);
        else hi = lo;
    }
    return wg_emit_fill(L, wg_out_id(L, 0), wg_words(y), lo, hi);
}

/* Dropout-1..22 in inference: y = x, the optional mask all ones (true).
 * training_mode (12+) must be absent or a constant false, or the ratio 0. */
static rlx_status lower_dropout(wg_lower *L) {
    const rlx_value *x = wg_in(L, 0), *y = wg_out(L, 0), *mask = wg_out(L, 1);
    unsigned types = WG_ANY4 | WG_I64 | WG_BOOL;
    if (!wg_value_ok(x, types) || !wg_value_ok(y, types) || x->dtype != y->dtype) return wg_decline(L, "dtype");
    if (mask && !wg_value_ok(mask, types)) return wg_decline(L, "mask dtype");
    const rlx_value *tr = wg_in(L, 2);
    if (tr) {
        int64_t t[1];
        size_t cnt = 0;
        if (!rlx_konst_ints(tr, t, 1, &cnt)) {
            /* bool constants: read the byte */
            if (!tr->konst || tr->konst->dtype != RLX_DTYPE_BOOL || rlx_tensor_numel(tr->konst) != 1)
                return wg_decline(L, "training_mode is not a constant");
            t[0] = ((const uint8_t *)tr->konst->data)[0];
        }
        if (t[0]) {
            double ratio = 0.5;
            const rlx_value *rv = wg_in(L, 1);
            if (rv && !(rv->konst && rlx_konst_scalar(rv, &ratio))) return wg_decline(L, "ratio is not a constant");
            if (ratio != 0.0) return wg_decline(L, "training_mode with a non-zero ratio");
        }
    }
    if (wg_numel(x) != wg_numel(y)) return wg_decline(L, "sizes");
    RLX_TRY(wg_emit_copy_words(L, wg_in_id(L, 0), wg_out_id(L, 0), wg_words(x)));
    if (mask) {
        uint32_t lo, hi;
        one_words(mask->dtype, &lo, &hi);
        RLX_TRY(wg_emit_fill(L, wg_out_id(L, 1), wg_words(mask), lo, hi));
    }
    return RLX_OK;
}

const wg_lower_fn wg_lowerings_index[RLX_OP_COUNT] = {
    [RLX_OP_Gather] = lower_gather, [RLX_OP_GatherElements] = lower_gather_elements, [RLX_OP_GatherND] = lower_gather_nd,
    [RLX_OP_ScatterND] = lower_scatter, [RLX_OP_ScatterElements] = lower_scatter, [RLX_OP_OneHot] = lower_onehot,
    [RLX_OP_Trilu] = lower_trilu, [RLX_OP_EyeLike] = lower_trilu, [RLX_OP_CumSum] = lower_cumsum,
    [RLX_OP_ConstantOfShape] = lower_constant_of_shape, [RLX_OP_Dropout] = lower_dropout,
};
