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
static const bo_op k_ops[] = {
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
