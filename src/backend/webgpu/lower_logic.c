/* WGSL lowerings of element-type conversion and boolean logic: Cast,
 * CastLike (kernels/cast.wgsl). Semantics: the ONNX operators (versions
 * noted per lowering) with the CPU reference's conversions (C semantics;
 * see cast.wgsl). Element layouts: README.md, "Element types". */
#include <string.h>

#include "backend/webgpu/webgpu.h"
#include "ir/op.h"

#define LIM31 ((uint64_t)1 << 31)

/* Type codes of cast.wgsl; -1 for a dtype the GPU does not hold. */
static int type_code(rlx_dtype dt) {
    switch (dt) {
    case RLX_DTYPE_F32: return 0;
    case RLX_DTYPE_I32: return 1;
    case RLX_DTYPE_U32: return 2;
    case RLX_DTYPE_BOOL: return 3;
    case RLX_DTYPE_I64: return 4;
    default: return -1;
    }
}

/* Cast-1/6/9/13/19/21/23 and CastLike-15/19/21/23 between f32, i32, u32,
 * bool and i64. */
static rlx_status lower_cast(wg_lower *L) {
    const rlx_value *x = wg_in(L, 0), *y = wg_out(L, 0);
    unsigned types = WG_ANY4 | WG_BOOL | WG_I64;
    if (!wg_value_ok(x, types) || !wg_value_ok(y, types))
        return wg_decline(L, "cast from %s to %s", x ? rlx_dtype_name(x->dtype) : "?", y ? rlx_dtype_name(y->dtype) : "?");
    uint64_t n = wg_numel(y);
    if (n != wg_numel(x)) return wg_decline(L, "element counts differ");
    if (n == 0) return RLX_OK;
    if (wg_words(x) >= LIM31 || wg_words(y) >= LIM31) return wg_decline(L, "too large for 32-bit indexing");
    uint64_t threads = y->dtype == RLX_DTYPE_BOOL ? (n + 3) / 4 : n;
    wg_dispatch *d = wg_emit(L, "cast");
    wg_spec(L, d, "SRC", type_code(x->dtype));
    wg_spec(L, d, "DST", type_code(y->dtype));
    wg_bind_value(L, d, wg_in_id(L, 0));
    wg_bind_value(L, d, wg_out_id(L, 0));
    wg_p_u32(L, d, (uint32_t)n);
    wg_p_u32(L, d, (uint32_t)threads);
    return wg_grid_1d(L, d, threads);
}

const wg_lowering wg_lowerings_logic[] = {
    { "Cast", lower_cast }, { "CastLike", lower_cast },
};
const size_t wg_lowerings_logic_count = RLX_ARRAY_LEN(wg_lowerings_logic);
