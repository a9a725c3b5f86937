/* WGSL lowerings of element-type conversion and boolean logic: Cast and
 * CastLike (kernels/cast.wgsl), the comparisons Equal, Less, Greater,
 * LessOrEqual, GreaterOrEqual, the logical And, Or, Xor, Not, IsNaN and
 * IsInf (kernels/compare.wgsl, bool results), Where (kernels/where.wgsl),
 * and QuantizeLinear / DequantizeLinear between f32 and 8-bit integers
 * (kernels/quant.wgsl). Semantics: the ONNX operators (versions noted per
 * lowering) with the CPU reference's conversions (C semantics; see
 * cast.wgsl). Element layouts: README.md, "Element types". */
#include <string.h>

#include "backend/webgpu/webgpu.h"
#include "backend/webgpu/wg_codes.h"
#include "ir/op.h"
#include "ir/ops/quant_params.h"

#define LIM31 ((uint64_t)1 << 31)

/* Type codes of cast.wgsl; -1 for a dtype the GPU does not hold. */
static int type_code(rlx_dtype dt) {
    switch (dt) {
    case RLX_DTYPE_F32: return TY_F32;
    case RLX_DTYPE_I32: return TY_I32;
    case RLX_DTYPE_U32: return TY_U32;
    case RLX_DTYPE_BOOL: return TY_BOOL;
    case RLX_DTYPE_I64: return TY_I64;
    case RLX_DTYPE_F16: return TY_F16;
    default: return -1;
    }
}

/* Cast-1/6/9/13/19/21/23 and CastLike-15/19/21/23 between f32, i32, u32,
 * bool, i64 and f16 (packed halves: no shader-f16 needed). */
static rlx_status lower_cast(wg_lower *L) {
    const rlx_value *x = wg_in(L, 0), *y = wg_out(L, 0);
    unsigned types = WG_ANY4 | WG_BOOL | WG_I64 | WG_F16;
    if (!wg_value_ok(x, types) || !wg_value_ok(y, types))
        return wg_decline(L, "cast from %s to %s", x ? rlx_dtype_name(x->dtype) : "?", y ? rlx_dtype_name(y->dtype) : "?");
    uint64_t n = wg_numel(y);
    if (n != wg_numel(x)) return wg_decline(L, "element counts differ");
    if (n == 0) return RLX_OK;
    if (wg_words(x) >= LIM31 || wg_words(y) >= LIM31) return wg_decline(L, "too large for 32-bit indexing");
    uint64_t threads = y->dtype == RLX_DTYPE_BOOL ? (n + 3) / 4 : y->dtype == RLX_DTYPE_F16 ? (n + 1) / 2 : n;
    wg_dispatch *d = wg_emit(L, "cast");
    wg_spec(L, d, "SRC", type_code(x->dtype));
    wg_spec(L, d, "DST", type_code(y->dtype));
    wg_bind_value(L, d, "x_off", wg_in_id(L, 0));
    wg_bind_value(L, d, "y_off", wg_out_id(L, 0));
    WG_P(L, d, wg_pu("n", n), wg_pu("threads", threads));
    return wg_grid_1d(L, d, threads);
}

/* ------------------------------------------------------------ quantization */

/* QuantizeLinear-10/13/19/21/23 (f32 -> int8/uint8) and
 * DequantizeLinear-10/13/19/21/23 (int8/uint8 -> f32), per tensor or per
 * axis (kernels/quant.wgsl): f32 scales; zero points absent or of the
 * integer's type; not blocked (block_size), not f16 scales or another
 * `precision`/`output_dtype`. The arithmetic is the CPU reference's. */
static rlx_status lower_quant(wg_lower *L) {
    bool dq = L->n->op == RLX_OP_DequantizeLinear;
    const rlx_value *x = wg_in(L, 0), *s = wg_in(L, 1), *z = L->n->n_in > 2 ? wg_in(L, 2) : NULL, *y = wg_out(L, 0);
    const rlx_value *q = dq ? x : y, *f = dq ? y : x;
    if (!q || !f || !s || (q->dtype != RLX_DTYPE_U8 && q->dtype != RLX_DTYPE_I8))
        return wg_decline(L, "only int8 and uint8 levels");
    if (!wg_value_ok(f, WG_F32) || !wg_value_ok(s, WG_F32)) return wg_decline(L, "data and scale must be f32");
    if (z && (z->dtype != q->dtype || !rlx_value_is_static(z))) return wg_decline(L, "zero point of another type");
    if (!rlx_value_is_static(q)) return wg_decline(L, "dynamic shape");
    if (!dq && L->n->version >= 23 && rlx_param_int(L->n, RLX_A_precision) != 0 &&
        rlx_param_int(L->n, RLX_A_precision) != RLX_DTYPE_F32)
        return wg_decline(L, "precision other than f32");
    rlx_quant_gran g;
    RLX_TRY(rlx_quant_resolve_gran(L->n, x->dims, x->rank, s->dims, s->rank, z ? z->dims : NULL, z ? z->rank : -1, &g));
    if (g.mode == RLX_QUANT_BLOCKED) return wg_decline(L, "blocked quantization (block_size)");
    uint64_t n = wg_numel(x);
    if (n == 0) return RLX_OK;
    if (wg_numel(s) < 1 || (z && wg_numel(z) < 1)) return wg_decline(L, "empty scale or zero point");
    if (n >= LIM31) return wg_decline(L, "too large for 32-bit indexing");
    if (wg_numel(y) != n) return wg_decline(L, "output size differs from the input's");
    uint64_t inner = n, da = 1;
    if (g.mode == RLX_QUANT_PER_AXIS) {
        da = (uint64_t)x->dims[g.axis];
        inner = 1;
        for (int i = g.axis + 1; i < x->rank; i++) inner *= (uint64_t)x->dims[i];
        if (inner == 0) return RLX_OK;
    }
    uint64_t threads = dq ? n : (n + 3) / 4;
    wg_dispatch *d = wg_emit(L, "quant");
    wg_spec(L, d, "DEQUANT", dq);
    wg_spec(L, d, "SIGNED", q->dtype == RLX_DTYPE_I8);
    wg_spec(L, d, "HAS_ZP", z != NULL);
    wg_bind_value(L, d, "x_off", wg_in_id(L, 0));
    wg_bind_value(L, d, "s_off", wg_in_id(L, 1));
    wg_bind_or(L, d, "z_off", z ? wg_in_id(L, 2) : -1, wg_in_id(L, 1));
    wg_bind_value(L, d, "y_off", wg_out_id(L, 0));
    WG_P(L, d, wg_pu("n", n), wg_pu("inner", inner), wg_pu("da", da), wg_pu("threads", threads));
    return wg_grid_1d(L, d, threads);
}

/* ------------------------------------------------------------ broadcasting */

/* Params: dims, then each input's strides (fields str[k]), as
 * array<vec4<u32>, 2>. */
static void p_bcview(wg_lower *L, wg_dispatch *d, const wg_bcview *bv, const char *const *str) {
    wg_p_align16(L, d);
    for (int i = 0; i < WG_BC_MAX_RANK; i++) wg_p_u32(L, d, "dims", i < bv->rank ? (uint32_t)bv->dims[i] : 1);
    for (int k = 0; k < bv->n_in; k++)
        for (int i = 0; i < WG_BC_MAX_RANK; i++) wg_p_u32(L, d, str[k], i < bv->rank ? (uint32_t)bv->str[k][i] : 0);
}

/* ------------------------------------------------------------ bool results */

#define NUMS (WG_ANY4 | WG_I64 | WG_F16)

/* Equal-1/7/11/13/19, Less/Greater-1/7/9/13, LessOrEqual/GreaterOrEqual-12/16
 * on f32, f16 (packed halves), i32, u32, i64 (and bool for Equal); And/Or/Xor-1/7 and Not-1 on
 * bool; IsNaN-9/13/20 and IsInf-10/20 on f32 and f16. */
static rlx_status lower_compare(wg_lower *L) {
    static const struct {
        rlx_op_id op;
        int code;
        int arity;
        unsigned types;
    } ops[] = {
        { RLX_OP_Equal, CMP_EQ, 2, WG_ANY4 | WG_I64 | WG_BOOL | WG_F16 }, { RLX_OP_Less, CMP_LT, 2, NUMS },
        { RLX_OP_Greater, CMP_GT, 2, NUMS }, { RLX_OP_LessOrEqual, CMP_LE, 2, NUMS },
        { RLX_OP_GreaterOrEqual, CMP_GE, 2, NUMS }, { RLX_OP_And, CMP_AND, 2, WG_BOOL },
        { RLX_OP_Or, CMP_OR, 2, WG_BOOL }, { RLX_OP_Xor, CMP_XOR, 2, WG_BOOL }, { RLX_OP_Not, CMP_NOT, 1, WG_BOOL },
        { RLX_OP_IsNaN, CMP_ISNAN, 1, WG_F32 | WG_F16 }, { RLX_OP_IsInf, CMP_ISINF, 1, WG_F32 | WG_F16 },
    };
    int k = -1;
    for (size_t i = 0; i < RLX_ARRAY_LEN(ops); i++)
        if (ops[i].op == L->n->op) k = (int)i;
    if (k < 0) return wg_decline(L, "no compare code");
    const rlx_value *a = wg_in(L, 0), *b = ops[k].arity == 2 ? wg_in(L, 1) : a, *y = wg_out(L, 0);
    if (!wg_value_ok(a, ops[k].types) || !wg_value_ok(b, ops[k].types) || a->dtype != b->dtype)
        return wg_decline(L, "input dtype %s", a ? rlx_dtype_name(a->dtype) : "?");
    if (!wg_value_ok(y, WG_BOOL)) return wg_decline(L, "output must be bool");
    for (int i = 1; i < L->n->n_out; i++)
        if (wg_out(L, i)) return wg_decline(L, "extra outputs");
    const rlx_value *ins[2] = { a, b };
    wg_bcview bv;
    RLX_TRY(wg_bcview_make(L, ins, 2, y, &bv));
    uint64_t n = wg_numel(y);
    if (n == 0) return RLX_OK;
    if (n >= LIM31 || wg_words(a) >= LIM31 || wg_words(b) >= LIM31) return wg_decline(L, "too large");
    uint32_t flags = 0;
    if (ops[k].code == CMP_ISINF)
        flags = (rlx_param_int(L->n, RLX_A_detect_positive) ? 1u : 0u) | (rlx_param_int(L->n, RLX_A_detect_negative) ? 2u : 0u);
    uint64_t threads = (n + 3) / 4;
    wg_dispatch *d = wg_emit(L, "compare");
    wg_spec(L, d, "OP", ops[k].code);
    wg_spec(L, d, "TY", type_code(a->dtype));
    wg_bind_value(L, d, "a_off", wg_in_id(L, 0));
    wg_bind_value(L, d, "b_off", ops[k].arity == 2 ? wg_in_id(L, 1) : wg_in_id(L, 0));
    wg_bind_value(L, d, "y_off", wg_out_id(L, 0));
    WG_P(L, d, wg_pu("n", n), wg_pu("rank", bv.rank), wg_pu("threads", threads), wg_pu("flags", flags));
    p_bcview(L, d, &bv, (const char *const[]){ "a_str", "b_str" });
    return wg_grid_1d(L, d, threads);
}

/* Where-9/16: y = cond ? a : b, the three broadcast; a and b f32, i32, u32,
 * i64, bool or f16 (the f16 instance of where.wgsl, with shader-f16). */
static rlx_status lower_where(wg_lower *L) {
    const rlx_value *c = wg_in(L, 0), *a = wg_in(L, 1), *b = wg_in(L, 2), *y = wg_out(L, 0);
    unsigned types = WG_ANY4 | WG_I64 | WG_BOOL | WG_F16;
    if (!wg_value_ok(c, WG_BOOL)) return wg_decline(L, "condition must be bool");
    if (!wg_value_held(L, a, types) || !wg_value_held(L, b, types) || !wg_value_held(L, y, types) || a->dtype != y->dtype ||
        b->dtype != y->dtype)
        return wg_decline(L, "data dtype %s", y ? rlx_dtype_name(y->dtype) : "?");
    const rlx_value *ins[3] = { c, a, b };
    wg_bcview bv;
    RLX_TRY(wg_bcview_make(L, ins, 3, y, &bv));
    uint64_t n = wg_numel(y);
    if (n == 0) return RLX_OK;
    if (wg_words(y) >= LIM31 || wg_words(a) >= LIM31 || wg_words(b) >= LIM31) return wg_decline(L, "too large");
    int elem = y->dtype == RLX_DTYPE_I64 ? UNIT_PAIR : y->dtype == RLX_DTYPE_BOOL ? UNIT_BYTE : UNIT_WORD;
    uint64_t threads = elem == UNIT_BYTE ? (n + 3) / 4 : n;
    wg_dispatch *d = wg_emit(L, "where");
    if (y->dtype == RLX_DTYPE_F16) d->elem = WG_ELEM_F16; /* A, B, Y as array<f16>; C stays bytes in words */
    wg_spec(L, d, "ELEM", elem);
    static const char *const k_in[3] = { "c_off", "a_off", "b_off" }, *const k_str[3] = { "c_str", "a_str", "b_str" };
    for (int i = 0; i < 3; i++) wg_bind_value(L, d, k_in[i], wg_in_id(L, i));
    wg_bind_value(L, d, "y_off", wg_out_id(L, 0));
    WG_P(L, d, wg_pu("n", n), wg_pu("rank", bv.rank), wg_pu("threads", threads));
    p_bcview(L, d, &bv, k_str);
    return wg_grid_1d(L, d, threads);
}

const wg_lower_fn wg_lowerings_logic[RLX_OP_COUNT] = {
    [RLX_OP_Cast] = lower_cast, [RLX_OP_CastLike] = lower_cast,
    [RLX_OP_QuantizeLinear] = lower_quant, [RLX_OP_DequantizeLinear] = lower_quant,
    [RLX_OP_Equal] = lower_compare, [RLX_OP_Less] = lower_compare, [RLX_OP_Greater] = lower_compare,
    [RLX_OP_LessOrEqual] = lower_compare, [RLX_OP_GreaterOrEqual] = lower_compare, [RLX_OP_And] = lower_compare,
    [RLX_OP_Or] = lower_compare, [RLX_OP_Xor] = lower_compare, [RLX_OP_Not] = lower_compare, [RLX_OP_IsNaN] = lower_compare,
    [RLX_OP_IsInf] = lower_compare, [RLX_OP_Where] = lower_where,
};
