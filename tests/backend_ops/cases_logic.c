/* Cases of the logic lowerings (lower_logic.c): Cast and CastLike between
 * every pair of GPU dtypes, the comparisons on each dtype (u32 above 2^31,
 * i64 beyond 32 bits, NaN and -0), the bool operators with broadcasting,
 * IsNaN / IsInf, and Where with three-way broadcasting. Every result is
 * exact (selects, comparisons and conversions), so the tolerance is 0. */
#include <math.h>
#include <string.h>

#include "harness.h"

static const rlx_dtype k_gpu_dtypes[] = { RLX_DTYPE_F32, RLX_DTYPE_I32, RLX_DTYPE_U32, RLX_DTYPE_I64, RLX_DTYPE_BOOL };

/* Values of dtype dt for shape s: small ranges so that equal values occur,
 * and the words that matter per dtype (u32 >= 2^31, i64 past 32 bits). */
static rlx_tensor *logic_values(rlx_dtype dt, const bo_shape *s, bool wide) {
    rlx_tensor *t = bo_rand_any(dt, s, dt == RLX_DTYPE_U32 ? 0 : -3, 3);
    size_t n = rlx_tensor_numel(t);
    if (!wide) return t;
    for (size_t i = 0; i < n; i++) {
        if (bo_rand_below(2)) continue;
        switch (dt) {
        case RLX_DTYPE_U32: ((uint32_t *)t->data)[i] = 0x80000000u + (uint32_t)bo_rand_below(4); break;
        case RLX_DTYPE_I64:
            ((int64_t *)t->data)[i] = (bo_rand_below(2) ? -1 : 1) * (((int64_t)bo_rand_below(3) << 32) + (int64_t)bo_rand_below(3));
            break;
        case RLX_DTYPE_I32: ((int32_t *)t->data)[i] = bo_rand_below(2) ? INT32_MIN : INT32_MAX; break;
        case RLX_DTYPE_F32: {
            static const float k[] = { NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 1e-40f };
            ((float *)t->data)[i] = k[bo_rand_below(BO_LEN(k))];
            break;
        }
        default: break;
        }
    }
    return t;
}

/* ------------------------------------------------------------ Cast */

/* A source tensor whose values convert meaningfully to `to` (no NaN or
 * out-of-range values into integers: ONNX leaves them undefined). */
static rlx_tensor *cast_source(rlx_dtype from, rlx_dtype to, const bo_shape *s) {
    bool to_unsigned = to == RLX_DTYPE_U32;
    switch (from) {
    case RLX_DTYPE_F32: {
        rlx_tensor *t = bo_rand(from, s->rank, s->d, to_unsigned ? 0 : -1000, 1000);
        if (to == RLX_DTYPE_F32 || to == RLX_DTYPE_BOOL) bo_edges(t, 7); /* NaN -> true */
        return t;
    }
    case RLX_DTYPE_I32: return bo_rand_int(from, s->rank, s->d, to_unsigned ? 0 : -2000000000, 2000000000);
    case RLX_DTYPE_U32: return bo_rand_int(from, s->rank, s->d, 0, to == RLX_DTYPE_I32 ? 0x7fffffff : 0xffffffffll);
    case RLX_DTYPE_I64: {
        if (to == RLX_DTYPE_I32) return bo_rand_int(from, s->rank, s->d, INT32_MIN, INT32_MAX);
        if (to == RLX_DTYPE_U32) return bo_rand_int(from, s->rank, s->d, 0, 0xffffffffll);
        rlx_tensor *t = bo_rand_int(from, s->rank, s->d, -3000000000ll, 3000000000ll);
        if (to == RLX_DTYPE_F32 || to == RLX_DTYPE_BOOL || to == RLX_DTYPE_I64) /* past 32 bits, and 2^32 exactly */
            for (size_t i = 0; i < rlx_tensor_numel(t); i += 3) ((int64_t *)t->data)[i] = (int64_t)1 << (32 + i % 20);
        return t;
    }
    default: return bo_rand_int(from, s->rank, s->d, 0, 1);
    }
}

static void gen_cast(bo_ctx *ctx, const void *arg) {
    bool like = arg != NULL;
    const bo_shape *sh;
    size_t n = bo_std_shapes(ctx, &sh);
    for (size_t a = 0; a < BO_LEN(k_gpu_dtypes); a++)
        for (size_t b = 0; b < BO_LEN(k_gpu_dtypes); b++)
            for (size_t i = 0; i < n; i++) {
                if (!bo_full(ctx) && i % 4 != (a + b) % 4) continue;
                bo_case *c = bo_next(ctx, 21);
                if (!c) continue;
                rlx_dtype from = k_gpu_dtypes[a], to = k_gpu_dtypes[b];
                char sb[96];
                bo_desc(c, "%s %s -> %s x%s", like ? "CastLike" : "Cast", rlx_dtype_name(from), rlx_dtype_name(to),
                        bo_shape_str(sh[i].rank, sh[i].d, sb, sizeof sb));
                if (bo_numel(&sh[i]) == 0 || from == to) c->expect_op = ""; /* a copy or a view */
                /* cast.wgsl converts an i64 beyond the i32 range to f32 as hi * 2^32 + lo, rounding
                 * twice: one ULP off the CPU's correctly rounded value at times (its stated contract) */
                if (from == RLX_DTYPE_I64 && to == RLX_DTYPE_F32) c->rtol = 1.2e-7;
                rlx_tensor *x = cast_source(from, to, &sh[i]);
                if (like) {
                    int64_t one = 1;
                    rlx_tensor *in[2] = { x, bo_rand_any(to, &(bo_shape){ 1, { one } }, 0, 1) };
                    bool k[2] = { false, true };
                    bo_single(c, "CastLike", 2, in, k, 1, 0, NULL);
                } else {
                    rlx_attr at = RLX_ATTR_I("to", (int64_t)to);
                    bo_single(c, "Cast", 1, &x, NULL, 1, 1, &at);
                }
                bo_run(ctx, c);
            }
}

/* ------------------------------------------------------------ comparisons */

typedef struct cmp_row {
    int opset;
    bool bool_ok;  /* bool inputs accepted (Equal) */
} cmp_row;

static void gen_compare(bo_ctx *ctx, const void *arg) {
    const cmp_row *r = arg;
    const char *op = bo_op_name(ctx);
    for (size_t t = 0; t < BO_LEN(k_gpu_dtypes); t++) {
        rlx_dtype dt = k_gpu_dtypes[t];
        if (dt == RLX_DTYPE_BOOL && !r->bool_ok) continue;
        int n_cases = bo_full(ctx) ? 12 : 3;
        for (int i = 0; i < n_cases; i++) {
            bo_case *c = bo_next(ctx, r->opset);
            if (!c) continue;
            bo_shape out, ins[2];
            bo_broadcast(i == 0 ? 1 : 1 + (int)bo_rand_below(6), 2, &out, ins);
            if (i == 0) ins[0].d[0] = ins[1].d[0] = 300; /* > 256 */
            bool wide = i % 2 == 1;
            rlx_tensor *in[2] = { logic_values(dt, &ins[0], wide), logic_values(dt, &ins[1], wide) };
            bool k[2] = { false, i % 3 == 2 };
            char s0[96], s1[96];
            bo_desc(c, "%s %s a%s b%s%s%s", op, rlx_dtype_name(dt), bo_shape_str(ins[0].rank, ins[0].d, s0, 96),
                    bo_shape_str(ins[1].rank, ins[1].d, s1, 96), wide ? " edge values" : "", k[1] ? " (b constant)" : "");
            bo_single(c, op, 2, in, k, 1, 0, NULL);
            bo_run(ctx, c);
        }
    }
}

/* ------------------------------------------------------------ bool ops */

static void gen_bool(bo_ctx *ctx, const void *arg) {
    const char *op = bo_op_name(ctx);
    bool unary = strcmp(op, "Not") == 0;
    int n_cases = bo_full(ctx) ? 16 : 5;
    for (int i = 0; i < n_cases; i++) {
        bo_case *c = bo_next(ctx, 7);
        if (!c) continue;
        bo_shape out, ins[2];
        bo_broadcast(1 + i % 6, 2, &out, ins);
        if (i == 0) out.d[0] = ins[0].d[0] = ins[1].d[0] = 1031; /* not a multiple of 4 bytes */
        if (i == 1) { /* empty */
            out.d[0] = 0;
            ins[0] = ins[1] = out;
            c->expect_op = "";
        }
        char s0[96], s1[96];
        if (unary) {
            rlx_tensor *x = bo_rand_int(RLX_DTYPE_BOOL, out.rank, out.d, 0, 1);
            bo_desc(c, "Not x%s", bo_shape_str(out.rank, out.d, s0, 96));
            bo_single(c, op, 1, &x, NULL, 1, 0, NULL);
        } else {
            rlx_tensor *in[2] = { bo_rand_int(RLX_DTYPE_BOOL, ins[0].rank, ins[0].d, 0, 1),
                                  bo_rand_int(RLX_DTYPE_BOOL, ins[1].rank, ins[1].d, 0, 1) };
            bo_desc(c, "%s a%s b%s", op, bo_shape_str(ins[0].rank, ins[0].d, s0, 96), bo_shape_str(ins[1].rank, ins[1].d, s1, 96));
            bo_single(c, op, 2, in, NULL, 1, 0, NULL);
        }
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ IsNaN, IsInf */

static void gen_isx(bo_ctx *ctx, const void *arg) {
    const char *op = bo_op_name(ctx);
    bool inf = strcmp(op, "IsInf") == 0;
    const bo_shape *sh;
    size_t n = bo_std_shapes(ctx, &sh);
    for (size_t i = 0; i < n; i++)
        for (int mode = 0; mode < (inf ? 3 : 1); mode++) {
            if (!bo_full(ctx) && inf && mode != (int)(i % 3)) continue;
            bo_case *c = bo_next(ctx, 20);
            if (!c) continue;
            rlx_tensor *x = bo_rand(RLX_DTYPE_F32, sh[i].rank, sh[i].d, -10, 10);
            bo_edges(x, 3);
            rlx_attr a[2] = { RLX_ATTR_I("detect_negative", mode != 1), RLX_ATTR_I("detect_positive", mode != 2) };
            char sb[96];
            bo_desc(c, "%s x%s edges", op, bo_shape_str(sh[i].rank, sh[i].d, sb, 96));
            if (inf) bo_desc(c, " detect_negative=%d detect_positive=%d", mode != 1, mode != 2);
            if (bo_numel(&sh[i]) == 0) c->expect_op = "";
            bo_single(c, op, 1, &x, NULL, 1, inf ? 2 : 0, a);
            bo_run(ctx, c);
        }
}

/* ------------------------------------------------------------ Where */

static void gen_where(bo_ctx *ctx, const void *arg) {
    int n_cases = bo_full(ctx) ? 10 : 2;
    for (size_t t = 0; t < BO_LEN(k_gpu_dtypes); t++)
        for (int i = 0; i < n_cases; i++) {
            bo_case *c = bo_next(ctx, 16);
            if (!c) continue;
            rlx_dtype dt = k_gpu_dtypes[t];
            bo_shape out, ins[3];
            bo_broadcast(1 + (int)bo_rand_below(6), 3, &out, ins);
            if (i == 0) { /* the condition broadcasts against x and y */
                ins[0] = out;
                ins[0].d[out.rank - 1] = 1;
            }
            rlx_tensor *in[3] = { bo_rand_int(RLX_DTYPE_BOOL, ins[0].rank, ins[0].d, 0, 1),
                                  logic_values(dt, &ins[1], i % 2), logic_values(dt, &ins[2], i % 2) };
            bool k[3] = { false, i % 3 == 1, false };
            char s0[96], s1[96], s2[96];
            bo_desc(c, "Where %s cond%s x%s y%s", rlx_dtype_name(dt), bo_shape_str(ins[0].rank, ins[0].d, s0, 96),
                    bo_shape_str(ins[1].rank, ins[1].d, s1, 96), bo_shape_str(ins[2].rank, ins[2].d, s2, 96));
            bo_single(c, "Where", 3, in, k, 1, 0, NULL);
            bo_run(ctx, c);
        }
}

#define EXACT 0, 0, "selects, comparisons and conversions: exact"
/* ------------------------------------------------------------ quantization */

/* QuantizeLinear (arg NULL) or DequantizeLinear: uint8 and int8, per
 * tensor over the standard shapes and per axis (random axis, negative
 * too), zero points over the whole range or absent. Quantize inputs reach
 * past both ends of the levels (saturation), hold exact ties (k + 0.5) *
 * scale and, in some cases, edges (inf, NaN, -0, denormals). Scales are
 * powers of two (x / scale exact on any GPU: the levels must equal the
 * CPU's, ties to even) except in the per-axis quantize cases, whose random
 * scales may put a quotient within a division's rounding of a tie: one
 * level there. Dequantize is exact (one f32 product). */
static void gen_quant(bo_ctx *ctx, const void *arg) {
    bool dq = arg != NULL;
    const bo_shape *sh;
    size_t n = bo_std_shapes(ctx, &sh);
    for (int per_axis = 0; per_axis < 2; per_axis++)
        for (size_t i = 0; i < (per_axis ? (bo_full(ctx) ? 24u : 8u) : n); i++) {
            bo_case *c = bo_next(ctx, per_axis ? 13 : (i % 2 ? 21 : 10));
            if (!c) continue;
            bool i8 = i % 2 == 1, has_zp = i % 3 != 2 || per_axis;
            rlx_dtype qt = i8 ? RLX_DTYPE_I8 : RLX_DTYPE_U8;
            bo_shape s = per_axis ? (bo_shape){ 0 } : sh[i];
            int axis = 0;
            if (per_axis) {
                s.rank = 1 + (int)bo_rand_below(4);
                for (int k = 0; k < s.rank; k++) s.d[k] = 1 + (int64_t)bo_rand_below(k == s.rank - 1 ? 70 : 9);
                axis = (int)bo_rand_below((uint64_t)s.rank);
            }
            int64_t np = per_axis ? s.d[axis] : 1;
            float sc[80];
            uint8_t zb[80];
            int64_t zv[80]; /* per axis: at most 69 */
            for (int64_t k = 0; k < np; k++) {
                bool pow2 = !per_axis || dq;
                sc[k] = pow2 ? (float)ldexp(1.0, -(int)bo_rand_below(8)) : (float)bo_uniform(0.003, 0.3);
                zv[k] = has_zp ? (i8 ? -128 : 0) + (int64_t)bo_rand_below(256) : 0;
                zb[k] = (uint8_t)(int8_t)zv[k];
            }
            rlx_tensor *st = per_axis ? bo_tensor(RLX_DTYPE_F32, 1, &np, sc) : bo_scalar(RLX_DTYPE_F32, sc[0]);
            rlx_tensor *zt = !has_zp ? NULL : per_axis ? bo_tensor(qt, 1, &np, zb) : bo_scalar(qt, (double)zv[0]);
            rlx_tensor *x;
            if (dq) {
                x = bo_rand_int(qt, s.rank, s.d, i8 ? -128 : 0, i8 ? 127 : 255);
            } else {
                x = bo_rand(RLX_DTYPE_F32, s.rank, s.d, -300 * sc[0], 300 * sc[0]);
                float *p = x->data;
                int64_t ne = bo_numel(&s), inner = 1;
                for (int k = axis + 1; per_axis && k < s.rank; k++) inner *= s.d[k];
                for (int64_t e = 0; e < ne; e++) {
                    int64_t pi = per_axis ? (e / inner) % np : 0;
                    double lv = (i8 ? -128.0 : 0.0) - (double)zv[pi];
                    if (e % 3 == 0) p[e] = (float)((floor(bo_uniform(lv - 4, lv + 259)) + 0.5) * sc[pi]);
                    else p[e] = (float)(bo_uniform(lv - 30, lv + 285) * sc[pi]);
                }
                if (i % 4 == 1 && ne > 0) bo_edges(x, 13);
                if (per_axis) c->atol = 1;
            }
            rlx_tensor *in[3] = { x, st, zt };
            bool k[3] = { false, true, true };
            rlx_attr at = RLX_ATTR_I("axis", per_axis && i % 2 ? axis - s.rank : axis);
            char sb[96];
            bo_desc(c, "%s %s x%s %s%s", dq ? "DequantizeLinear" : "QuantizeLinear", rlx_dtype_name(qt),
                    bo_shape_str(s.rank, s.d, sb, sizeof sb), per_axis ? "per axis " : "per tensor",
                    has_zp ? "" : " no zero point");
            if (per_axis) bo_desc(c, "%lld", (long long)(per_axis && i % 2 ? axis - s.rank : axis));
            if (bo_numel(&s) == 0) c->expect_op = "";
            bo_single(c, dq ? "DequantizeLinear" : "QuantizeLinear", has_zp ? 3 : 2, in, k, 1, per_axis ? 1 : 0, &at);
            bo_run(ctx, c);
        }
}

static const bo_op k_ops[] = {
    { "QuantizeLinear", gen_quant, NULL, 0, 0,
      "exact with power-of-two scales (ties to even, saturation, NaN); per-axis cases with random scales: one level "
      "(a quotient within a division's rounding of a tie)" },
    { "DequantizeLinear", gen_quant, "dq", 0, 0, "one f32 product: exact" },
    { "Cast", gen_cast, NULL, EXACT },
    { "CastLike", gen_cast, "like", EXACT },
    { "Equal", gen_compare, &(const cmp_row){ 19, true }, EXACT },
    { "Less", gen_compare, &(const cmp_row){ 13, false }, EXACT },
    { "Greater", gen_compare, &(const cmp_row){ 13, false }, EXACT },
    { "LessOrEqual", gen_compare, &(const cmp_row){ 16, false }, EXACT },
    { "GreaterOrEqual", gen_compare, &(const cmp_row){ 16, false }, EXACT },
    { "And", gen_bool, NULL, EXACT },
    { "Or", gen_bool, NULL, EXACT },
    { "Xor", gen_bool, NULL, EXACT },
    { "Not", gen_bool, NULL, EXACT },
    { "IsNaN", gen_isx, NULL, EXACT },
    { "IsInf", gen_isx, NULL, EXACT },
    { "Where", gen_where, NULL, EXACT },
};

const bo_family bo_family_logic = { "logic", k_ops, BO_LEN(k_ops) };
