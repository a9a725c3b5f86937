/* WGSL lowerings of indexing ops: Gather (kernels/gather.wgsl), ...
 * Semantics: the ONNX operators (versions noted per lowering). Data of any
 * element type the GPU stores (f32, i32, u32, i64 as word pairs, bool as
 * bytes where runs fill whole words); indices i32 or i64 (word pairs that
 * must fit i32; constant indices are checked here, run-time ones outside
 * the range write 0 where the CPU would report an error). */
#include <string.h>

#include "backend/webgpu/webgpu.h"
#include "ir/op.h"

#define DATA_TYPES (WG_ANY4 | WG_I64 | WG_BOOL)
#define LIM31 ((uint64_t)1 << 31)

/* Words that n consecutive elements of dtype dt fill; false when they do
 * not fill whole words (bool runs of a length not a multiple of 4). */
static bool run_words(rlx_dtype dt, uint64_t n, uint64_t *w) {
    switch (dt) {
    case RLX_DTYPE_I64: *w = 2 * n; return true;
    case RLX_DTYPE_BOOL: *w = n / 4; return n % 4 == 0;
    default: *w = n; return true;
    }
}

/* Checks that every value of a constant index tensor lies in [-a, a). */
static bool konst_indices_ok(const rlx_value *idx, int64_t a) {
    const rlx_tensor *t = idx->konst;
    size_t n = rlx_tensor_numel(t);
    for (size_t i = 0; i < n; i++) {
        int64_t v = t->dtype == RLX_DTYPE_I64 ? ((const int64_t *)t->data)[i] : ((const int32_t *)t->data)[i];
        if (v < -a || v >= a) return false;
    }
    return true;
}

/* Gather-1/11/13: y = x[..., indices, ...] along `axis`. */
static rlx_status lower_gather(wg_lower *L) {
    const rlx_value *x = wg_in(L, 0), *idx = wg_in(L, 1), *y = wg_out(L, 0);
    if (!wg_value_ok(x, DATA_TYPES) || !wg_value_ok(y, DATA_TYPES) || x->dtype != y->dtype)
        return wg_decline(L, "data dtype %s", x ? rlx_dtype_name(x->dtype) : "?");
    if (!wg_value_ok(idx, WG_I32 | WG_I64)) return wg_decline(L, "indices must be i32 or i64");
    if (x->rank < 1) return wg_decline(L, "scalar data");
    int axis;
    if (!rlx_norm_axis(rlx_attr_int(L->n, "axis", 0), x->rank, &axis)) return wg_decline(L, "axis");
    uint64_t outer = 1, inner = 1, a = (uint64_t)x->dims[axis], n_idx = wg_numel(idx);
    for (int d = 0; d < axis; d++) outer *= (uint64_t)x->dims[d];
    for (int d = axis + 1; d < x->rank; d++) inner *= (uint64_t)x->dims[d];
    if (outer * n_idx * inner != wg_numel(y)) return wg_decline(L, "output size differs");
    if (wg_numel(y) == 0) return RLX_OK;
    uint64_t inner_w;
    if (!run_words(x->dtype, inner, &inner_w))
        return wg_decline(L, "bool runs of %llu elements are not whole words", (unsigned long long)inner);
    if (idx->konst && !konst_indices_ok(idx, (int64_t)a)) return wg_decline(L, "constant indices out of range");
    uint64_t n = outer * n_idx * inner_w;
    if (n >= LIM31 || wg_words(x) >= LIM31 || a >= LIM31) return wg_decline(L, "too large for 32-bit indexing");
    wg_dispatch *d = wg_emit(L, "gather");
    wg_spec(L, d, "IDX64", idx->dtype == RLX_DTYPE_I64);
    wg_bind_value(L, d, wg_in_id(L, 0));
    wg_bind_value(L, d, wg_in_id(L, 1));
    wg_bind_value(L, d, wg_out_id(L, 0));
    wg_p_u32(L, d, (uint32_t)n);
    wg_p_u32(L, d, (uint32_t)inner_w);
    wg_p_u32(L, d, (uint32_t)n_idx);
    wg_p_u32(L, d, (uint32_t)a);
    return wg_grid_1d(L, d, n);
}

const wg_lowering wg_lowerings_index[] = {
    { "Gather", lower_gather },
};
const size_t wg_lowerings_index_count = RLX_ARRAY_LEN(wg_lowerings_index);
