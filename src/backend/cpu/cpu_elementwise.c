/* CPU reference kernels of the elementwise family (see
 * src/ir/ops/ops_elementwise.c). The math of unary ops and binary
 * arithmetic is the elementwise vocabulary's (src/ir/ew.h): f32 by each
 * function's f32 computation, other float types by its double reference
 * (exact for + - * / sqrt after rounding back); integer types in int64. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "base/parallel.h"
#include "base/scratch.h"
#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_nn.h"
#include "ir/ew.h"
#include "ir/ops/ops.h"
#include "rlx/half.h"

/* ------------------------------------------------------------ unary */

/* The vocabulary's functions (src/ir/ew.h), one loop each: d[i] =
 * f(x[i], y[i], c[i]) in f32 (operands beyond the function's arity are not
 * read and may be NULL). */
void rlx_cpu_ew_f32(rlx_ew_fn fn, float *restrict d, const float *x, const float *y, const float *c, float p0,
                    float p1, size_t n) {
    if (rlx_cpu_ew_vec_f32(fn, d, x, p0, p1, n)) return; /* AVX2 / AVX-512 forms, same bits */
    /* + - * /, Relu and the other selects of chains (Neg, Abs, Max, Min,
     * Clip, HardSigmoid, HardSwish, LeakyRelu) in AVX-512 (the QDQ models' chains,
     * fused BatchNormalization + Relu, cheap ops computed again per element
     * in chains), the rest below; blocks of 8: simple functions become
     * vector code where the compiler sees it, same bits */
    size_t i = 0;
    switch (fn) {
    case RLX_EW_ADD: case RLX_EW_SUB: case RLX_EW_MUL: case RLX_EW_DIV: case RLX_EW_RELU: case RLX_EW_NEG:
    case RLX_EW_ABS: case RLX_EW_MAX: case RLX_EW_MIN: case RLX_EW_CLIP: case RLX_EW_HARDSIGMOID:
    case RLX_EW_HARDSWISH: case RLX_EW_LEAKYRELU: i = rlx_cpu_ew_bin_vec_f32(fn, d, x, y, p0, p1, n); break;
    default: break;
    }
    switch (fn) {
#define EW_ONE_(id, ar, i) d[i] = rlx_ew_f32_##id(x[i], (ar) > 1 ? y[i] : 0.0f, (ar) > 2 ? c[i] : 0.0f, p0, p1)
#define EW_LOOP_(id, kind, name, ar, ...)                                                                    \
    case RLX_EW_##id:                                                                                  \
        for (; i + 8 <= n; i += 8) {                                                                   \
            _Pragma("GCC unroll 8") for (size_t l = i; l < i + 8; l++) EW_ONE_(id, ar, l);             \
        }                                                                                              \
        for (; i < n; i++) EW_ONE_(id, ar, i);                                                         \
        break;
        RLX_EW_FUNCS(EW_LOOP_)
#undef EW_LOOP_
#undef EW_ONE_
    case RLX_EW_COUNT: break;
    }
}

typedef struct un_job {
    rlx_ew_call f;
    const float *a;
    float *o;
} un_job;

/* f32 over [b, e) */
static void unary_f32_range(void *ctx, size_t b, size_t e) {
    const un_job *j = ctx;
    rlx_cpu_ew_f32(j->f.kind, j->o + b, j->a + b, NULL, NULL, j->f.alpha, j->f.beta, e - b);
}

/* y = fn(x) with the node's parameters: f32 by the function's f32
 * computation, other float types by its double reference, integers (Abs,
 * Neg, Sign, Relu, Shrink) in int64. */
static rlx_status unary_run(rlx_cpu_kctx *k, rlx_ew_fn fn) {
    const rlx_tensor *x = k->in[0];
    rlx_tensor *y = k->out[0];
    size_t n = rlx_tensor_numel(x);
    rlx_ew_call f;
    if (!rlx_ew_node_params(k->n, fn, &f))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "approximate '%s' is not none or tanh",
                            rlx_param_str(k->n, RLX_A_approximate));
    if (x->dtype == RLX_DTYPE_F32) {
        un_job j = { f, x->data, y->data };
        rlx_parallel_for(n, 16384, unary_f32_range, &j); /* elementwise: same result on any split */
        return RLX_OK;
    }
    if (rlx_dtype_is_int(x->dtype)) {
        for (size_t i = 0; i < n; i++) {
            int64_t v = rlx_tensor_get_i64(x, i), r;
            switch (f.kind) {
            case RLX_EW_ABS: r = v < 0 ? -v : v; break;
            case RLX_EW_NEG: r = -v; break;
            case RLX_EW_SIGN: r = v > 0 ? 1 : v < 0 ? -1 : 0; break;
            case RLX_EW_RELU: r = v > 0 ? v : 0; break;
            case RLX_EW_SHRINK: /* in the input's type */
                rlx_tensor_set_f64(y, i, rlx_ew_f64(f.kind, (double)v, 0, 0, f.alpha, f.beta));
                continue;
            default: return rlx_cpu_fail(k, RLX_ERR_UNSUPPORTED, "integer dtype %s", rlx_dtype_name(x->dtype));
            }
            rlx_tensor_set_i64(y, i, r);
        }
        return RLX_OK;
    }
    for (size_t i = 0; i < n; i++)
        rlx_tensor_set_f64(y, i, rlx_ew_f64(f.kind, rlx_tensor_get_f64(x, i), 0, 0, f.alpha, f.beta));
    return RLX_OK;
}

/* One kernel per standalone op of the vocabulary (rows of KIND OP). */
#define EW_KERNEL_(id, kind, ...) \
    RLX_EW_KIND_##kind(static rlx_status k_ew_##id(rlx_cpu_kctx *k) { return unary_run(k, RLX_EW_##id); })
RLX_EW_FUNCS(EW_KERNEL_)
#undef EW_KERNEL_

static rlx_status k_not(rlx_cpu_kctx *k) { return unary_run(k, RLX_EW_NOT); }

/* IsNaN-20, IsInf-20 (detect_negative / detect_positive). */
static rlx_status k_isnan(rlx_cpu_kctx *k) {
    size_t n = rlx_tensor_numel(k->in[0]);
    uint8_t *o = k->out[0]->data;
    for (size_t i = 0; i < n; i++) o[i] = isnan(rlx_tensor_get_f64(k->in[0], i)) != 0;
    return RLX_OK;
}

static rlx_status k_isinf(rlx_cpu_kctx *k) {
    bool neg = rlx_param_int(k->n, RLX_A_detect_negative) != 0, pos = rlx_param_int(k->n, RLX_A_detect_positive) != 0;
    size_t n = rlx_tensor_numel(k->in[0]);
    uint8_t *o = k->out[0]->data;
    for (size_t i = 0; i < n; i++) {
        double v = rlx_tensor_get_f64(k->in[0], i);
        o[i] = isinf(v) && ((v > 0 && pos) || (v < 0 && neg));
    }
    return RLX_OK;
}

/* Clip: bounds from attributes (versions < 11) or optional inputs. */
static rlx_status k_clip(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0];
    rlx_tensor *y = k->out[0];
    double lo = -INFINITY, hi = INFINITY;
    bool is_int = rlx_dtype_is_int(x->dtype);
    if (k->n->version < 11) {
        lo = rlx_param_float(k->n, RLX_A_min);
        hi = rlx_param_float(k->n, RLX_A_max);
    } else {
        if (k->n->n_in > 1 && k->in[1]) lo = rlx_tensor_get_f64(k->in[1], 0);
        if (k->n->n_in > 2 && k->in[2]) hi = rlx_tensor_get_f64(k->in[2], 0);
    }
    size_t n = rlx_tensor_numel(x);
    if (x->dtype == RLX_DTYPE_F32) {
        const float *a = x->data;
        float *o = y->data, l = (float)lo, h = (float)hi;
        for (size_t i = 0; i < n; i++) o[i] = rlx_ew_clampf(a[i], l, h);
        return RLX_OK;
    }
    if (is_int) {
        for (size_t i = 0; i < n; i++) {
            int64_t v = rlx_tensor_get_i64(x, i);
            if (k->n->n_in > 1 && k->in[1] && v < rlx_tensor_get_i64(k->in[1], 0)) v = rlx_tensor_get_i64(k->in[1], 0);
            if (k->n->n_in > 2 && k->in[2] && v > rlx_tensor_get_i64(k->in[2], 0)) v = rlx_tensor_get_i64(k->in[2], 0);
            rlx_tensor_set_i64(y, i, v);
        }
        return RLX_OK;
    }
    for (size_t i = 0; i < n; i++) rlx_tensor_set_f64(y, i, rlx_ew_f64_CLIP(rlx_tensor_get_f64(x, i), 0, 0, lo, hi));
    return RLX_OK;
}

/* ------------------------------------------------------------ n-ary broadcast */

/* Arithmetic ops are the vocabulary's functions (src/ir/ew.h); the rest
 * follow. */
typedef enum bin_op {
    B_ADD = RLX_EW_ADD, B_SUB = RLX_EW_SUB, B_MUL = RLX_EW_MUL, B_DIV = RLX_EW_DIV, B_POW = RLX_EW_POW,
    B_MAX = RLX_EW_MAX, B_MIN = RLX_EW_MIN, B_PRELU = RLX_EW_PRELU,
    B_MOD = RLX_EW_COUNT, B_FMOD, B_EQ, B_LT, B_GT, B_LE, B_GE, B_AND, B_OR, B_XOR
} bin_op;

static inline float bin_f32(bin_op op, float a, float b) {
    switch (op) {
    case B_FMOD: return fmodf(a, b);
    case B_MOD: {
        float r = fmodf(a, b);
        return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    }
    default: return rlx_ew_f32((rlx_ew_fn)op, a, b, 0, 0, 0);
    }
}

static inline double bin_f64(bin_op op, double a, double b) {
    switch (op) {
    case B_FMOD: return fmod(a, b);
    case B_MOD: {
        double r = fmod(a, b);
        return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    }
    case B_EQ: return a == b;
    case B_LT: return a < b;
    case B_GT: return a > b;
    case B_LE: return a <= b;
    case B_GE: return a >= b;
    case B_AND: return (a != 0) && (b != 0);
    case B_OR: return (a != 0) || (b != 0);
    case B_XOR: return (a != 0) != (b != 0);
    default: return rlx_ew_f64((rlx_ew_fn)op, a, b, 0, 0, 0);
    }
}

static inline int64_t bin_i64(bin_op op, int64_t a, int64_t b, bool *div0) {
    switch (op) {
    case B_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
    case B_SUB: return (int64_t)((uint64_t)a - (uint64_t)b);
    case B_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
    case B_DIV:
        if (b == 0) { *div0 = true; return 0; }
        if (b == -1) return (int64_t)(0 - (uint64_t)a);
        return a / b;
    case B_POW: {
        if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
        /* by squaring, wrapping as a chain of multiplications would: a^b
         * mod 2^64 (a cap of 64 multiplications was right for even a only:
         * (-1)^(2^31 - 1) gave 1) */
        uint64_t r = 1, sq = (uint64_t)a;
        for (uint64_t e = (uint64_t)b; e; e >>= 1) {
            if (e & 1) r *= sq;
            sq *= sq;
        }
        return (int64_t)r;
    }
    case B_FMOD:
        if (b == 0) { *div0 = true; return 0; }
        if (b == -1) return 0;
        return a % b;
    case B_MOD: {
        if (b == 0) { *div0 = true; return 0; }
        if (b == -1) return 0;
        int64_t r = a % b;
        return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    }
    case B_MAX: return a > b ? a : b;
    case B_MIN: return a < b ? a : b;
    case B_PRELU: return a < 0 ? a * b : a;
    case B_EQ: return a == b;
    case B_LT: return a < b;
    case B_GT: return a > b;
    case B_LE: return a <= b;
    case B_GE: return a >= b;
    case B_AND: return a && b;
    case B_OR: return a || b;
    case B_XOR: return (a != 0) != (b != 0);
    }
    return 0;
}

/* Iterates the output of a broadcast of `nin` inputs row by row; calls
 * body(out_index, in_offsets) for every element. Implemented with a macro
 * so the inner loop is specialised per dtype. */
typedef struct bcast {
    int rank;
    int64_t dims[RLX_MAX_RANK];
    int64_t st[3][RLX_MAX_RANK];
    int nin;
} bcast;

/* Fails (a shape inference bug, never a read past an input) when an input
 * does not broadcast to the output's shape. */
static rlx_status bcast_init(rlx_cpu_kctx *k, bcast *b, const rlx_tensor *out, const rlx_tensor *const *ins, int nin) {
    b->rank = out->rank;
    b->nin = nin;
    memcpy(b->dims, out->dims, sizeof b->dims);
    for (int j = 0; j < nin; j++) {
        const rlx_tensor *x = ins[j];
        bool fits = x->rank <= out->rank;
        for (int d = 0; fits && d < x->rank; d++) {
            int64_t dx = x->dims[d], dy = out->dims[out->rank - x->rank + d];
            fits = dx == dy || dx == 1;
        }
        if (!fits) {
            char sx[96], sy[96];
            return rlx_cpu_fail(k, RLX_ERR_INTERNAL, "input %d of shape %s does not broadcast to the output's %s", j,
                                rlx_shape_str(x->dims, x->rank, sx, sizeof sx),
                                rlx_shape_str(out->dims, out->rank, sy, sizeof sy));
        }
        rlx_broadcast_strides(x->dims, x->rank, out->rank, b->st[j]);
    }
    return RLX_OK;
}

/* Visits every output element: idx is the flat output index, off[j] the flat
 * offset of input j. */
#define BCAST_FOR(b, idx, off, ...)                                                              \
    do {                                                                                          \
        int64_t ctr_[RLX_MAX_RANK] = { 0 };                                                       \
        int64_t off[3] = { 0, 0, 0 };                                                             \
        size_t total_ = 1;                                                                        \
        for (int d_ = 0; d_ < (b)->rank; d_++) total_ *= (size_t)(b)->dims[d_];                   \
        int64_t inner_ = (b)->rank ? (b)->dims[(b)->rank - 1] : 1;                                \
        int64_t is_[3] = { 0, 0, 0 };                                                             \
        for (int j_ = 0; j_ < (b)->nin; j_++) is_[j_] = (b)->rank ? (b)->st[j_][(b)->rank - 1] : 0; \
        for (size_t idx = 0; idx < total_ && inner_ > 0;) {                                       \
            int64_t base_[3] = { off[0], off[1], off[2] };                                        \
            for (int64_t x_ = 0; x_ < inner_; x_++, idx++) {                                      \
                off[0] = base_[0] + x_ * is_[0];                                                  \
                off[1] = base_[1] + x_ * is_[1];                                                  \
                off[2] = base_[2] + x_ * is_[2];                                                  \
                __VA_ARGS__;                                                                      \
            }                                                                                     \
            off[0] = base_[0], off[1] = base_[1], off[2] = base_[2];                              \
            for (int d_ = (b)->rank - 2; d_ >= 0; d_--) {                                         \
                ctr_[d_]++;                                                                       \
                for (int j_ = 0; j_ < (b)->nin; j_++) off[j_] += (b)->st[j_][d_];                 \
                if (ctr_[d_] < (b)->dims[d_]) break;                                              \
                for (int j_ = 0; j_ < (b)->nin; j_++) off[j_] -= (b)->st[j_][d_] * (b)->dims[d_]; \
                ctr_[d_] = 0;                                                                     \
            }                                                                                     \
        }                                                                                         \
    } while (0)

typedef struct bin_job {
    const bcast *bc;
    const float *a, *b;
    float *o;
    bin_op op;
} bin_job;

/* + - * / on a row whose operands are contiguous or one of them a scalar
 * (strides 1 or 0), in blocks of eight that become vector code (the same
 * IEEE operations, so the same bits); false for other ops and strides. */
RLX_NN_CLONES static bool bin_rows_contig(bin_op op, float *restrict o, const float *pa, const float *pb, int64_t sa,
                                          int64_t sb, size_t n) {
    if (op != B_ADD && op != B_SUB && op != B_MUL && op != B_DIV) return false;
    if (sa != 1 || (sb != 0 && sb != 1)) return false;
    float b0 = pb[0];
    size_t x = 0;
#define BIN_LOOP(OPER)                                                                         \
    if (sb == 1) {                                                                            \
        for (; x + 8 <= n; x += 8) {                                                          \
            _Pragma("GCC unroll 8") for (int l = 0; l < 8; l++) o[x + l] = pa[x + l] OPER pb[x + l]; \
        }                                                                                     \
        for (; x < n; x++) o[x] = pa[x] OPER pb[x];                                           \
    } else {                                                                                  \
        for (; x + 8 <= n; x += 8) {                                                          \
            _Pragma("GCC unroll 8") for (int l = 0; l < 8; l++) o[x + l] = pa[x + l] OPER b0; \
        }                                                                                     \
        for (; x < n; x++) o[x] = pa[x] OPER b0;                                              \
    }
    switch (op) {
    case B_ADD: BIN_LOOP(+) break;
    case B_SUB: BIN_LOOP(-) break;
    case B_MUL: BIN_LOOP(*) break;
    default: BIN_LOOP(/) break;
    }
#undef BIN_LOOP
    return true;
}

/* f32 broadcast over output rows [r0, r1) (a row = the last dim): each
 * element is computed independently, so any split gives the same result. */
static void binary_f32_rows(void *ctx, size_t r0, size_t r1) {
    const bin_job *j = ctx;
    const bcast *bc = j->bc;
    int rank = bc->rank;
    size_t inner = rank ? (size_t)bc->dims[rank - 1] : 1;
    int64_t sa = rank ? bc->st[0][rank - 1] : 0, sb = rank ? bc->st[1][rank - 1] : 0;
    for (size_t r = r0; r < r1; r++) {
        /* offsets of the row's first element: decompose r over dims[0..rank-1) */
        int64_t oa = 0, ob = 0;
        size_t rem = r;
        for (int d = rank - 2; d >= 0; d--) {
            size_t c = rem % (size_t)bc->dims[d];
            rem /= (size_t)bc->dims[d];
            oa += (int64_t)c * bc->st[0][d];
            ob += (int64_t)c * bc->st[1][d];
        }
        const float *pa = j->a + oa, *pb = j->b + ob;
        float *o = j->o + r * inner;
        if (bin_rows_contig(j->op, o, pa, pb, sa, sb, inner)) continue;
        switch (j->op) { /* the switch stays out of the inner loop for the common ops */
        case B_ADD: for (size_t x = 0; x < inner; x++) o[x] = pa[(int64_t)x * sa] + pb[(int64_t)x * sb]; break;
        case B_SUB: for (size_t x = 0; x < inner; x++) o[x] = pa[(int64_t)x * sa] - pb[(int64_t)x * sb]; break;
        case B_MUL: for (size_t x = 0; x < inner; x++) o[x] = pa[(int64_t)x * sa] * pb[(int64_t)x * sb]; break;
        case B_DIV: for (size_t x = 0; x < inner; x++) o[x] = pa[(int64_t)x * sa] / pb[(int64_t)x * sb]; break;
        default:
            for (size_t x = 0; x < inner; x++) o[x] = bin_f32(j->op, pa[(int64_t)x * sa], pb[(int64_t)x * sb]);
            break;
        }
    }
}

static rlx_status binary_run(rlx_cpu_kctx *k, bin_op op) {
    const rlx_tensor *a = k->in[0], *b = k->in[1];
    rlx_tensor *y = k->out[0];
    const rlx_tensor *ins[2] = { a, b };
    bcast bc;
    RLX_TRY(bcast_init(k, &bc, y, ins, 2));
    if (a->dtype == RLX_DTYPE_F32 && b->dtype == RLX_DTYPE_F32 && y->dtype == RLX_DTYPE_F32) {
        bin_job j = { &bc, a->data, b->data, y->data, op };
        size_t inner = bc.rank ? (size_t)bc.dims[bc.rank - 1] : 1, rows = inner ? rlx_tensor_numel(y) / inner : 0;
        rlx_parallel_for(rows, 16384 / (inner ? inner : 1) + 1, binary_f32_rows, &j);
        return RLX_OK;
    }
    bool cmp = y->dtype == RLX_DTYPE_BOOL && a->dtype != RLX_DTYPE_BOOL;
    bool logic = op == B_AND || op == B_OR || op == B_XOR;
    if ((rlx_dtype_is_int(a->dtype) || a->dtype == RLX_DTYPE_BOOL) && (rlx_dtype_is_int(b->dtype) || b->dtype == RLX_DTYPE_BOOL)) {
        bool div0 = false;
        if (a->dtype == RLX_DTYPE_U64 && !cmp && !logic && op != B_ADD && op != B_SUB && op != B_MUL) {
            /* unsigned 64-bit division and comparisons need unsigned math */
            const uint64_t *pa = a->data, *pb = b->data;
            uint64_t *o = y->data;
            BCAST_FOR(&bc, i, off, {
                uint64_t x = pa[off[0]], z = pb[off[1]];
                uint64_t r = 0;
                switch (op) {
                case B_DIV: case B_FMOD: case B_MOD:
                    if (!z) { div0 = true; break; }
                    r = op == B_DIV ? x / z : x % z; break;
                case B_MAX: r = x > z ? x : z; break;
                case B_MIN: r = x < z ? x : z; break;
                default: r = (uint64_t)bin_i64(op, (int64_t)x, (int64_t)z, &div0); break;
                }
                o[i] = r;
            });
        } else {
            BCAST_FOR(&bc, i, off,
                      rlx_tensor_set_i64(y, (size_t)i, bin_i64(op, rlx_tensor_get_i64(a, (size_t)off[0]),
                                                             rlx_tensor_get_i64(b, (size_t)off[1]), &div0)));
        }
        if (div0) return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "integer division by zero");
        return RLX_OK;
    }
    BCAST_FOR(&bc, i, off,
              rlx_tensor_set_f64(y, (size_t)i, bin_f64(op, rlx_tensor_get_f64(a, (size_t)off[0]),
                                                       rlx_tensor_get_f64(b, (size_t)off[1]))));
    return RLX_OK;
}

#define BINARY_KERNEL(fn, op) \
    static rlx_status fn(rlx_cpu_kctx *k) { return binary_run(k, op); }
BINARY_KERNEL(k_add, B_ADD)
BINARY_KERNEL(k_sub, B_SUB)
BINARY_KERNEL(k_mul, B_MUL)
BINARY_KERNEL(k_div, B_DIV)
BINARY_KERNEL(k_pow, B_POW)
BINARY_KERNEL(k_equal, B_EQ)
BINARY_KERNEL(k_less, B_LT)
BINARY_KERNEL(k_greater, B_GT)
BINARY_KERNEL(k_less_eq, B_LE)
BINARY_KERNEL(k_greater_eq, B_GE)
BINARY_KERNEL(k_and, B_AND)
BINARY_KERNEL(k_or, B_OR)
BINARY_KERNEL(k_xor, B_XOR)
BINARY_KERNEL(k_prelu, B_PRELU)

static rlx_status k_mod(rlx_cpu_kctx *k) {
    bool fm = rlx_param_int(k->n, RLX_A_fmod) != 0;
    if (!fm && rlx_dtype_is_float(k->in[0]->dtype))
        return rlx_cpu_fail(k, RLX_ERR_INVALID_ARGUMENT, "fmod must be 1 for floating-point inputs");
    return binary_run(k, fm ? B_FMOD : B_MOD);
}

/* Sum and Mean of f16 or bf16: the README's rounding policy (computed in
 * f32, rounded once) over the whole sum, so the running sum is f32 (a
 * running f16 sum rounds each small term against a large partial sum). The
 * f32 accumulator is the thread's grow-only scratch (no allocation in a
 * steady run; above RLX_SCRATCH_MAX_BYTES allocated for the call). The
 * GPU's lowering adds in the same order. */
static rlx_status narrow_sum_run(rlx_cpu_kctx *k, bool mean) {
    rlx_tensor *y = k->out[0];
    size_t n = rlx_tensor_numel(y);
    if (n == 0) return RLX_OK;
    float *own = NULL, *acc = rlx_scratch_get(RLX_SCRATCH_CALL, n * sizeof *acc);
    if (!acc) acc = own = malloc(n * sizeof *acc);
    if (!acc) return rlx_cpu_fail(k, RLX_ERR_OUT_OF_MEMORY, "out of memory");
    bool first = true;
    int cnt = 0;
    rlx_status st = RLX_OK;
    for (int j = 0; j < k->n->n_in && !st; j++) {
        const rlx_tensor *x = k->in[j];
        if (!x) continue;
        const rlx_tensor *ins[1] = { x };
        bcast bc;
        st = bcast_init(k, &bc, y, ins, 1);
        if (st) break;
        BCAST_FOR(&bc, i, off, {
            float v = (float)rlx_tensor_get_f64(x, (size_t)off[0]);
            acc[i] = first ? v : acc[i] + v;
        });
        first = false;
        cnt++;
    }
    if (!st) {
        for (size_t i = 0; i < n; i++) rlx_tensor_set_f64(y, i, mean ? acc[i] / (float)cnt : acc[i]);
    }
    free(own);
    return st;
}

/* Max, Min, Sum, Mean: fold the inputs pairwise into the output. */
static rlx_status variadic_run(rlx_cpu_kctx *k, bin_op op, bool mean) {
    rlx_tensor *y = k->out[0];
    size_t n = rlx_tensor_numel(y);
    if (op == B_ADD && (y->dtype == RLX_DTYPE_F16 || y->dtype == RLX_DTYPE_BF16)) return narrow_sum_run(k, mean);
    bin_op acc_op = op;
    for (int j = 0; j < k->n->n_in; j++) {
        const rlx_tensor *x = k->in[j];
        if (!x) continue;
        const rlx_tensor *ins[1] = { x };
        bcast bc;
        RLX_TRY(bcast_init(k, &bc, y, ins, 1));
        bool first = (j == 0);
        if (y->dtype == RLX_DTYPE_F32) {
            const float *px = x->data;
            float *o = y->data;
            BCAST_FOR(&bc, i, off, o[i] = first ? px[off[0]] : bin_f32(acc_op, o[i], px[off[0]]));
        } else if (y->dtype == RLX_DTYPE_U64 && x->dtype == RLX_DTYPE_U64 && acc_op != B_ADD) {
            /* Max, Min of uint64: unsigned comparisons (bin_i64's are signed:
             * 2^63 and above compared as negative) */
            const uint64_t *px = x->data;
            uint64_t *o = y->data;
            bool mx = acc_op == B_MAX;
            BCAST_FOR(&bc, i, off, {
                uint64_t v = px[off[0]];
                o[i] = first || (mx ? v > o[i] : v < o[i]) ? v : o[i];
            });
        } else if (rlx_dtype_is_int(y->dtype)) {
            bool d0 = false;
            BCAST_FOR(&bc, i, off, {
                int64_t v = rlx_tensor_get_i64(x, (size_t)off[0]);
                rlx_tensor_set_i64(y, (size_t)i, first ? v : bin_i64(acc_op, rlx_tensor_get_i64(y, (size_t)i), v, &d0));
            });
        } else {
            BCAST_FOR(&bc, i, off, {
                double v = rlx_tensor_get_f64(x, (size_t)off[0]);
                rlx_tensor_set_f64(y, (size_t)i, first ? v : bin_f64(acc_op, rlx_tensor_get_f64(y, (size_t)i), v));
            });
        }
    }
    if (mean) {
        int cnt = 0;
        for (int j = 0; j < k->n->n_in; j++) cnt += k->in[j] != NULL;
        for (size_t i = 0; i < n; i++) rlx_tensor_set_f64(y, i, rlx_tensor_get_f64(y, i) / cnt);
    }
    return RLX_OK;
}

static rlx_status k_max(rlx_cpu_kctx *k) { return variadic_run(k, B_MAX, false); }
static rlx_status k_min(rlx_cpu_kctx *k) { return variadic_run(k, B_MIN, false); }
static rlx_status k_sum(rlx_cpu_kctx *k) { return variadic_run(k, B_ADD, false); }
static rlx_status k_mean(rlx_cpu_kctx *k) { return variadic_run(k, B_ADD, true); }

/* BitwiseNot/And/Or/Xor-18 and BitShift-11 on the bits of the integer type;
 * shifts by the type's width or more give 0. */
static uint64_t int_mask(rlx_dtype dt) {
    size_t bits = rlx_dtype_size(dt) * 8;
    return bits >= 64 ? ~0ull : ((1ull << bits) - 1);
}

static rlx_status k_bitwise_not(rlx_cpu_kctx *k) {
    size_t n = rlx_tensor_numel(k->in[0]);
    for (size_t i = 0; i < n; i++) rlx_tensor_set_i64(k->out[0], i, ~rlx_tensor_get_i64(k->in[0], i));
    return RLX_OK;
}

static rlx_status bitwise_run(rlx_cpu_kctx *k, int op) {
    const rlx_tensor *a = k->in[0], *b = k->in[1];
    rlx_tensor *y = k->out[0];
    const rlx_tensor *ins[2] = { a, b };
    bcast bc;
    RLX_TRY(bcast_init(k, &bc, y, ins, 2));
    uint64_t mask = int_mask(y->dtype);
    size_t bits = rlx_dtype_size(y->dtype) * 8;
    BCAST_FOR(&bc, i, off, {
        uint64_t x = (uint64_t)rlx_tensor_get_i64(a, (size_t)off[0]) & mask;
        uint64_t z = (uint64_t)rlx_tensor_get_i64(b, (size_t)off[1]) & mask;
        uint64_t r;
        switch (op) {
        case 0: r = x & z; break;
        case 1: r = x | z; break;
        case 2: r = x ^ z; break;
        case 3: r = z >= bits ? 0 : (x << z) & mask; break;
        default: r = z >= bits ? 0 : x >> z; break;
        }
        rlx_tensor_set_i64(y, (size_t)i, (int64_t)r);
    });
    return RLX_OK;
}

static rlx_status k_bitwise_and(rlx_cpu_kctx *k) { return bitwise_run(k, 0); }
static rlx_status k_bitwise_or(rlx_cpu_kctx *k) { return bitwise_run(k, 1); }
static rlx_status k_bitwise_xor(rlx_cpu_kctx *k) { return bitwise_run(k, 2); }

static rlx_status k_bitshift(rlx_cpu_kctx *k) {
    const char *dir = rlx_param_str(k->n, RLX_A_direction);
    if (strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0)
        return rlx_cpu_fail(k, RLX_ERR_INVALID_MODEL, "direction must be LEFT or RIGHT, got '%s'", dir);
    return bitwise_run(k, strcmp(dir, "LEFT") == 0 ? 3 : 4);
}

static rlx_status k_where(rlx_cpu_kctx *k) {
    const rlx_tensor *c = k->in[0], *a = k->in[1], *b = k->in[2];
    rlx_tensor *y = k->out[0];
    const rlx_tensor *ins[3] = { c, a, b };
    bcast bc;
    RLX_TRY(bcast_init(k, &bc, y, ins, 3));
    size_t es = rlx_dtype_size(y->dtype);
    const uint8_t *pc = c->data;
    const char *pa = a->data, *pb = b->data;
    char *o = y->data;
    BCAST_FOR(&bc, i, off,
              memcpy(o + (size_t)i * es, pc[off[0]] ? pa + (size_t)off[1] * es : pb + (size_t)off[2] * es, es));
    return RLX_OK;
}

/* The range of an integer dtype; false for int64 (rlx_tensor_set_f64
 * saturates to it). */
static bool int_range(rlx_dtype dt, double *lo, double *hi) {
    switch (dt) {
    case RLX_DTYPE_I8: *lo = -128.0, *hi = 127.0; return true;
    case RLX_DTYPE_U8: *lo = 0.0, *hi = 255.0; return true;
    case RLX_DTYPE_I16: *lo = -32768.0, *hi = 32767.0; return true;
    case RLX_DTYPE_U16: *lo = 0.0, *hi = 65535.0; return true;
    case RLX_DTYPE_I32: *lo = -2147483648.0, *hi = 2147483647.0; return true;
    case RLX_DTYPE_U32: *lo = 0.0, *hi = 4294967295.0; return true;
    case RLX_DTYPE_U64: *lo = 0.0, *hi = 18446744073709551616.0; return true; /* set_f64: 2^64 saturates */
    default: return false;
    }
}

/* Cast: numeric conversions with C semantics (float to int truncates toward
 * zero), bool is x != 0; f16/bf16 round to nearest even. Float to integer
 * out of the target's range (undefined in ONNX) saturates to the range,
 * +-inf included, and NaN gives 0 (docs/ops.md; the GPU's cast.wgsl does
 * the same). Integer to integer keeps the low bits (wraps). */
static rlx_status cast_run(rlx_cpu_kctx *k) {
    const rlx_tensor *x = k->in[0];
    rlx_tensor *y = k->out[0];
    size_t n = rlx_tensor_numel(x);
    if (x->dtype == y->dtype) {
        memcpy(y->data, x->data, x->nbytes);
        return RLX_OK;
    }
    if (x->dtype == RLX_DTYPE_I32 && y->dtype == RLX_DTYPE_F32) { /* MatMulInteger's sums (quantize_dynamic) */
        const int32_t *px = x->data;
        float *py = y->data;
        for (size_t i = 0; i < n; i++) py[i] = (float)px[i]; /* one rounding, as through double */
        return RLX_OK;
    }
    bool src_int = rlx_dtype_is_int(x->dtype) || x->dtype == RLX_DTYPE_BOOL;
    bool dst_float = rlx_dtype_is_float(y->dtype);
    for (size_t i = 0; i < n; i++) {
        if (src_int && !dst_float) {
            rlx_tensor_set_i64(y, i, rlx_tensor_get_i64(x, i));
        } else if (src_int) {
            rlx_tensor_set_f64(y, i, (double)rlx_tensor_get_i64(x, i));
        } else {
            double v = rlx_tensor_get_f64(x, i);
            if (y->dtype == RLX_DTYPE_BOOL) rlx_tensor_set_i64(y, i, v != 0);
            else if (dst_float) rlx_tensor_set_f64(y, i, v);
            else {
                double lo, hi;
                if (v != v) v = 0.0;
                else if (int_range(y->dtype, &lo, &hi)) v = v < lo ? lo : v > hi ? hi : v;
                rlx_tensor_set_f64(y, i, v); /* truncates; int64: out of range saturates (no UB) */
            }
        }
    }
    return RLX_OK;
}

static rlx_status k_cast(rlx_cpu_kctx *k) {
    if (k->in[0]->dtype == RLX_DTYPE_STRING || k->out[0]->dtype == RLX_DTYPE_STRING)
        return rlx_cpu_fail(k, RLX_ERR_UNSUPPORTED, "string tensors are not supported");
    return cast_run(k);
}

const rlx_cpu_kernel_fn rlx_cpu_kernels_elementwise[RLX_OP_COUNT] = {
#define EW_ENTRY_(id, kind, name, ...) RLX_EW_KIND_##kind([RLX_OP_##name] = k_ew_##id,)
    RLX_EW_FUNCS(EW_ENTRY_)
#undef EW_ENTRY_
    [RLX_OP_Clip] = k_clip, [RLX_OP_PRelu] = k_prelu,
    [RLX_OP_Add] = k_add, [RLX_OP_Sub] = k_sub, [RLX_OP_Mul] = k_mul, [RLX_OP_Div] = k_div, [RLX_OP_Pow] = k_pow, [RLX_OP_Mod] = k_mod,
    [RLX_OP_Max] = k_max, [RLX_OP_Min] = k_min, [RLX_OP_Sum] = k_sum, [RLX_OP_Mean] = k_mean,
    [RLX_OP_Equal] = k_equal, [RLX_OP_Less] = k_less, [RLX_OP_Greater] = k_greater, [RLX_OP_LessOrEqual] = k_less_eq,
    [RLX_OP_GreaterOrEqual] = k_greater_eq, [RLX_OP_And] = k_and, [RLX_OP_Or] = k_or, [RLX_OP_Xor] = k_xor, [RLX_OP_Not] = k_not,
    [RLX_OP_IsNaN] = k_isnan, [RLX_OP_IsInf] = k_isinf, [RLX_OP_BitwiseNot] = k_bitwise_not, [RLX_OP_BitwiseAnd] = k_bitwise_and,
    [RLX_OP_BitwiseOr] = k_bitwise_or, [RLX_OP_BitwiseXor] = k_bitwise_xor, [RLX_OP_BitShift] = k_bitshift,
    [RLX_OP_Where] = k_where, [RLX_OP_Cast] = k_cast, [RLX_OP_CastLike] = k_cast,
};
