/* WGSL lowerings of the reduce family: Reduce* and ArgMax/ArgMin
 * (kernels/reduce.wgsl), and the normalisations and softmax that reduce
 * rows and rewrite them (kernels/norm.wgsl): LayerNormalization,
 * RMSNormalization, InstanceNormalization, GroupNormalization,
 * LpNormalization, MeanVarianceNormalization, Softmax, LogSoftmax; Hardmax
 * (ArgMax, then kernels/onehot.wgsl) and LRN (kernels/lrn.wgsl).
 * Semantics: the ONNX operators (versions noted per lowering); the axes
 * resolve through src/ir/ops/reduce_geom.h like the CPU kernels'. f32 (and
 * i32 for the Reduce* ops that wrap exactly).
 *
 * Every reduction is described by a redview: the input's dims split into
 * kept dims (the outputs, row-major) and reduced dims, each with its input
 * strides, unit dims dropped and adjacent dims merged where contiguous, so
 * any set of axes is read in place (no transposes). Scheme per dispatch:
 * one workgroup per output row with a shared-memory tree (vec4 loads when
 * the row is one contiguous block), or one invocation per row when the
 * rows are neighbours in memory (loads coalesce across invocations). */
#include <math.h>
#include <string.h>

#include "backend/webgpu/webgpu.h"
#include "backend/webgpu/wg_split.h"
#include "backend/webgpu/wg_codes.h"
#include "ir/op.h"
#include "ir/ops/reduce_geom.h"

#define RV_MAX 4 /* kept / reduced dims after merging (the kernels' vec4) */

typedef struct redview {
    int nk, nr;
    uint64_t kdim[RV_MAX], kstr[RV_MAX]; /* kept dims, outermost first, input strides */
    uint64_t rdim[RV_MAX], rstr[RV_MAX]; /* reduced dims */
    uint64_t rows, count;                /* outputs, elements per output */
} redview;

/* Builds the view of an input of `rank` dims where axis[d] marks reduced
 * dims. Declines past RV_MAX dims of a kind or 32-bit indexing. */
static rlx_status make_redview(wg_lower *L, const int64_t *dims, int rank, const bool *axis, redview *rv) {
    memset(rv, 0, sizeof *rv);
    uint64_t total = 1;
    for (int d = 0; d < rank; d++) total *= (uint64_t)dims[d];
    if (total >= ((uint64_t)1 << 31)) return wg_decline(L, "more than 2^31 elements");
    /* innermost first; kind 0 kept, 1 reduced */
    uint64_t dm[2][RLX_MAX_RANK], st[2][RLX_MAX_RANK];
    int cnt[2] = { 0, 0 }, last = -1; /* last: kind of the previous non-unit dim */
    uint64_t s = 1;
    rv->rows = rv->count = 1;
    for (int d = rank - 1; d >= 0; d--) {
        uint64_t n = (uint64_t)dims[d];
        int k = axis[d] ? 1 : 0, c = cnt[k];
        *(k ? &rv->count : &rv->rows) *= n;
        if (n == 1) continue;
        if (last == k && st[k][c - 1] * dm[k][c - 1] == s) dm[k][c - 1] *= n;
        else dm[k][c] = n, st[k][cnt[k]++] = s;
        last = k;
        s *= n;
    }
    int nk = cnt[0], nr = cnt[1];
    if (nk > RV_MAX || nr > RV_MAX) return wg_decline(L, "axes interleave into more than %d runs", RV_MAX);
    rv->nk = nk;
    rv->nr = nr;
    for (int i = 0; i < nk; i++) rv->kdim[i] = dm[0][nk - 1 - i], rv->kstr[i] = st[0][nk - 1 - i];
    for (int i = 0; i < nr; i++) rv->rdim[i] = dm[1][nr - 1 - i], rv->rstr[i] = st[1][nr - 1 - i];
    return RLX_OK;
}

/* make_redview over the one axis of the node's "axis" attribute. */
static rlx_status axis_redview(wg_lower *L, const rlx_value *x, redview *rv) {
    int ax;
    if (!rlx_norm_axis(rlx_param_int(L->n, RLX_A_axis), x->rank, &ax)) return wg_decline(L, "axis");
    bool axis[RLX_MAX_RANK] = { false };
    axis[ax] = true;
    return make_redview(L, x->dims, x->rank, axis, rv);
}

/* The reduced elements of a row are one contiguous block. */
static bool rv_contig(const redview *rv) { return rv->nr == 1 && rv->rstr[0] == 1; }

/* One invocation per row pays when neighbouring rows are neighbours in x
 * (the innermost kept dim has stride 1) and there are many rows or short
 * ones; otherwise a workgroup per row. */
static bool rv_cols(const redview *rv) {
    if (rv->count <= 1) return true;
    bool inner_kept = rv->nk > 0 && rv->kstr[rv->nk - 1] == 1;
    return inner_kept && (rv->rows >= 4096 || rv->count <= 32);
}

/* Workgroup size for a row of `items` loads. */
static uint32_t rv_wg(uint64_t items) {
    if (items >= 256 * 8) return 256;
    if (items >= 128 * 8) return 128;
    return 64;
}

static void p_view(wg_lower *L, wg_dispatch *d, const redview *rv) {
    wg_p_align16(L, d);
    for (int i = 0; i < RV_MAX; i++) wg_p_u32(L, d, "kdim", i < rv->nk ? (uint32_t)rv->kdim[i] : 1);
    for (int i = 0; i < RV_MAX; i++) wg_p_u32(L, d, "kstr", i < rv->nk ? (uint32_t)rv->kstr[i] : 0);
    for (int i = 0; i < RV_MAX; i++) wg_p_u32(L, d, "rdim", i < rv->nr ? (uint32_t)rv->rdim[i] : 1);
    for (int i = 0; i < RV_MAX; i++) wg_p_u32(L, d, "rstr", i < rv->nr ? (uint32_t)rv->rstr[i] : 0);
}

/* Sets the scheme overrides and the grid of a row dispatch. */
static rlx_status rv_grid(wg_lower *L, wg_dispatch *d, const redview *rv) {
    bool cols = rv_cols(rv), contig = !cols && rv_contig(rv);
    uint32_t wg = cols ? 64 : rv_wg(contig ? rv->count / 4 + 1 : rv->count);
    wg_spec(L, d, "COLS", cols);
    wg_spec(L, d, "CONTIG", contig);
    wg_spec(L, d, "WG", wg);
    if (cols) return wg_grid_1d(L, d, rv->rows);
    return wg_grid_groups(L, d, rv->rows);
}

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* ------------------------------------------------------------ Reduce* */

static const struct {
    rlx_op_id op;
    int code;
    bool int_ok; /* i32 gives the CPU's bits (wrapping) */
} k_reduce_ops[] = {
    { RLX_OP_ReduceSum, RED_SUM, true }, { RLX_OP_ReduceMean, RED_MEAN, false }, { RLX_OP_ReduceMax, RED_MAX, true },
    { RLX_OP_ReduceMin, RED_MIN, true }, { RLX_OP_ReduceProd, RED_PROD, true }, { RLX_OP_ReduceL1, RED_L1, true },
    { RLX_OP_ReduceL2, RED_L2, false }, { RLX_OP_ReduceLogSum, RED_LOGSUM, false }, { RLX_OP_ReduceLogSumExp, RED_LSE, false },
    { RLX_OP_ReduceSumSquare, RED_SUMSQ, true },
};

/* The start of a reduction's accumulator, as bits. */
static uint32_t red_start(int code, bool is_int) {
    if (is_int) {
        switch (code) {
        case RED_PROD: return 1;
        case RED_MAX: return 0x80000000u; /* INT32_MIN */
        case RED_MIN: return 0x7fffffffu;
        default: return 0;
        }
    }
    switch (code) {
    case RED_PROD: return f32_bits(1.0f);
    case RED_MAX: case RED_LSE: return f32_bits(-INFINITY);
    case RED_MIN: return f32_bits(INFINITY);
    default: return 0;
    }
}

/* The value of a reduction over an empty set (ONNX Reduce*-18; Mean: 0,
 * as onnxruntime and the CPU), as bits. */
static uint32_t red_empty(int code, bool is_int) {
    if (!is_int && code == RED_MEAN) return f32_bits(0.0f);
    if (!is_int && code == RED_LOGSUM) return f32_bits(-INFINITY);
    return red_start(code, is_int);
}

/* Rows this long, and this few, are cut into chunks so that more than a
 * handful of workgroups work on them (reduce.wgsl STAGE 1 and 2,
 * norm_split.wgsl). */
#define SPLIT_MIN_COUNT 16384
#define SPLIT_MAX_ROWS 128
#define SPLIT_CHUNK 4096

/* Rows that are contiguous and consecutive: row o is [o count, (o+1) count). */
static bool rv_consecutive(const redview *rv) {
    return rv_contig(rv) && (rv->nk == 0 || (rv->nk == 1 && rv->kstr[0] == rv->count));
}

static bool rv_split(const redview *rv) {
    return rv_consecutive(rv) && rv->rows <= SPLIT_MAX_ROWS && rv->count >= SPLIT_MIN_COUNT;
}

/* Reduces input 0 into words [y_off, y_off + y_words) of value y (or
 * WG_SCRATCH). Few long rows (not logsumexp): chunk partials into scratch
 * words [t0, t0 + 2 rows nch), then a combining dispatch. */
static rlx_status emit_reduce_to(wg_lower *L, int code, bool is_int, bool last, const redview *rv, int y,
                                 uint64_t y_off, uint64_t y_words, uint64_t t0) {
    bool half = wg_in(L, 0)->dtype == RLX_DTYPE_F16; /* HALF: packed f16 input, widened at each load */
    bool split = code != RED_LSE && rv_split(rv);
    uint64_t nch = split ? (rv->count + SPLIT_CHUNK - 1) / SPLIT_CHUNK : 0, t_words = 2 * rv->rows * nch;
    if (split) wg_scratch(L, t0 + t_words);
    for (int stage = split ? 1 : 0; stage <= (split ? 2 : 0); stage++) {
        wg_dispatch *d = wg_emit(L, "reduce");
        wg_spec(L, d, "STAGE", stage);
        wg_spec(L, d, "OP", code);
        wg_spec(L, d, "INT", is_int);
        wg_spec(L, d, "LAST", last);
        if (half) wg_spec(L, d, "HALF", 1);
        wg_bind_value4(L, d, "x_off", wg_in_id(L, 0));
        wg_bind(L, d, "y_off", y, y_off, y_words);
        if (split) wg_bind(L, d, "t_off", WG_SCRATCH, t0, t_words);
        else wg_bind(L, d, "t_off", y, y_off, 1); /* unused */
        WG_P(L, d, wg_pu("rows", rv->rows), wg_pu("count", rv->count), wg_pu("nk", rv->nk), wg_pu("nr", rv->nr),
             wg_pu("init", red_start(code, is_int)), wg_pu("chunk", SPLIT_CHUNK), wg_pu("nch", nch));
        p_view(L, d, rv);
        if (!split) {
            RLX_TRY(rv_grid(L, d, rv));
            continue;
        }
        wg_spec(L, d, "COLS", 0);
        wg_spec(L, d, "CONTIG", 1);
        wg_spec(L, d, "WG", 256);
        RLX_TRY(wg_grid_groups(L, d, stage == 1 ? rv->rows * nch : rv->rows));
    }
    return RLX_OK;
}

static rlx_status emit_reduce(wg_lower *L, int code, bool is_int, bool last, const redview *rv) {
    const rlx_value *y = wg_out(L, 0);
    if (y->dtype != RLX_DTYPE_F16) return emit_reduce_to(L, code, is_int, last, rv, wg_out_id(L, 0), 0, wg_words(y), 0);
    /* an f16 result: the f32 results into scratch [0, rows), then one
     * rounding to binary16 by cast.wgsl (one invocation per word of y) */
    wg_scratch(L, rv->rows);
    RLX_TRY(emit_reduce_to(L, code, is_int, last, rv, WG_SCRATCH, 0, rv->rows, rv->rows));
    wg_dispatch *d = wg_emit(L, "cast");
    wg_spec(L, d, "SRC", TY_F32);
    wg_spec(L, d, "DST", TY_F16);
    wg_bind(L, d, "x_off", WG_SCRATCH, 0, rv->rows);
    wg_bind_value(L, d, "y_off", wg_out_id(L, 0));
    WG_P(L, d, wg_pu("n", rv->rows), wg_pu("threads", (rv->rows + 1) / 2));
    return wg_grid_1d(L, d, (rv->rows + 1) / 2);
}

/* ReduceSum-1/11/13, Reduce{Mean,Max,Min,Prod,L1,L2,LogSum,LogSumExp,
 * SumSquare}-1/11/13/18 (Max/Min also 12, 20): axes from the attribute or a
 * constant input 1; f32, and i32 for sum, max, min, prod, l1, sumsquare. */
static rlx_status lower_reduce(wg_lower *L) {
    int code = -1;
    bool int_ok = false;
    for (size_t i = 0; i < RLX_ARRAY_LEN(k_reduce_ops); i++)
        if (k_reduce_ops[i].op == L->n->op) code = k_reduce_ops[i].code, int_ok = k_reduce_ops[i].int_ok;
    if (code < 0) return wg_decline(L, "no reduce code");
    const rlx_value *x = wg_in(L, 0), *y = wg_out(L, 0);
    unsigned mask = int_ok ? (WG_F32 | WG_F16 | WG_I32) : (WG_F32 | WG_F16);
    if (!wg_value_ok(x, mask) || !wg_value_ok(y, mask) || x->dtype != y->dtype)
        return wg_decline(L, "data must be f32, f16%s", int_ok ? " or i32" : "");
    for (int i = 1; i < L->n->n_out; i++)
        if (wg_out(L, i)) return wg_decline(L, "extra outputs");
    int64_t axes[RLX_REDUCE_MAX_AXES];
    size_t na = 0;
    if (rlx_reduce_axes_are_input(L->n)) {
        const rlx_value *a = wg_in(L, 1);
        if (a && !rlx_konst_ints(a, axes, RLX_ARRAY_LEN(axes), &na)) return wg_decline(L, "axes are not constant");
    } else {
        const int64_t *at = rlx_param_ints(L->n, RLX_A_axes, &na);
        if (na > RLX_ARRAY_LEN(axes)) return wg_decline(L, "too many axes");
        if (na) memcpy(axes, at, na * sizeof *axes);
    }
    rlx_reduce_spec spec;
    if (rlx_reduce_resolve(L->n, x->rank, axes, na, RLX_ERR_INVALID_MODEL, &spec) != RLX_OK)
        return wg_decline(L, "axes do not resolve");
    redview rv;
    RLX_TRY(make_redview(L, x->dims, x->rank, spec.axis, &rv));
    if (rv.rows != wg_numel(y)) return wg_decline(L, "output size differs from the reduction");
    if (rv.rows == 0) return RLX_OK;
    bool is_int = x->dtype == RLX_DTYPE_I32;
    uint32_t empty = red_empty(code, is_int);
    if (rv.count == 0 && x->dtype == RLX_DTYPE_F16) return wg_decline(L, "empty f16 reduction");
    if (rv.count == 0) return wg_emit_fill(L, wg_out_id(L, 0), rv.rows, empty, empty);
    return emit_reduce(L, code, is_int, false, &rv);
}

/* ArgMax/ArgMin-1/11/12/13: i64 indices along `axis` (keepdims), the first
 * extreme (the last with select_last_index, 12+); NaN as the CPU's fold
 * from element 0 (cpu_reduce.c): a NaN wins only as element 0. f32, f16 or
 * i32 data. */
static rlx_status lower_arg(wg_lower *L) {
    const rlx_value *x = wg_in(L, 0), *y = wg_out(L, 0);
    if (!wg_value_ok(x, WG_F32 | WG_F16 | WG_I32) || !wg_value_ok(y, WG_I64))
        return wg_decline(L, "f32, f16 or i32 data, i64 output");
    redview rv;
    RLX_TRY(axis_redview(L, x, &rv));
    if (rv.rows != wg_numel(y)) return wg_decline(L, "output size differs");
    if (rv.rows == 0) return RLX_OK;
    if (rv.count == 0) return wg_decline(L, "empty axis (the CPU reports it)");
    bool last = rlx_param_int(L->n, RLX_A_select_last_index) != 0;
    return emit_reduce(L, L->n->op == RLX_OP_ArgMax ? RED_ARGMAX : RED_ARGMIN, x->dtype == RLX_DTYPE_I32,
                       last, &rv);
}

/* Hardmax-1/11 (input coerced to 2-D at axis, default 1) and -13 (one
 * axis, default -1): 1 at the first maximum of each row, 0 elsewhere. Three
 * dispatches: the row's index as the CPU's fold from element 0 with ">"
 * picks it (RED_ARGMAX: a NaN only as element 0) into scratch (i64
 * pairs), the values (0, 1) after them, and kernels/onehot.wgsl writing y.
 * f32. */
static rlx_status lower_hardmax(wg_lower *L) {
    RLX_TRY(wg_check_io(L, WG_F32, 1));
    const rlx_value *x = wg_in(L, 0), *y = wg_out(L, 0);
    bool v13 = L->n->version >= 13;
    int axis;
    if (x->rank == 0 || !rlx_norm_axis(rlx_softmax_axis(L->n), x->rank, &axis))
        return wg_decline(L, "axis");
    uint64_t outer = 1, len = 1, inner = 1;
    for (int i = 0; i < x->rank; i++) {
        uint64_t d = (uint64_t)x->dims[i];
        if (i < axis) outer *= d;
        else if (i == axis || !v13) len *= d;
        else inner *= d;
    }
    uint64_t rows = outer * inner;
    if (rows == 0 || len == 0) return RLX_OK;
    if (len >= ((uint64_t)1 << 31)) return wg_decline(L, "too large");
    int64_t dims[3] = { (int64_t)outer, (int64_t)len, (int64_t)inner };
    bool ax[3] = { false, true, false };
    redview rv;
    RLX_TRY(make_redview(L, dims, 3, ax, &rv));
    wg_scratch(L, 2 * rows + 2);
    RLX_TRY(emit_reduce_to(L, RED_ARGMAX, false, false, &rv, WG_SCRATCH, 0, 2 * rows, 2 * rows + 2));
    wg_dispatch *f = wg_emit(L, "fill");
    wg_bind(L, f, "y_off", WG_SCRATCH, 2 * rows, 2);
    WG_P(L, f, wg_pu("n", 2), wg_pu("value", 0), wg_pu("value_hi", f32_bits(1.0f)));
    RLX_TRY(wg_grid_1d(L, f, 2));
    uint64_t n = wg_numel(y);
    wg_dispatch *d = wg_emit(L, "onehot");
    wg_spec(L, d, "ITY", TY_I64);
    wg_spec(L, d, "NEG", 0);
    wg_bind(L, d, "i_off", WG_SCRATCH, 0, 2 * rows);
    wg_bind(L, d, "v_off", WG_SCRATCH, 2 * rows, 2);
    wg_bind_value(L, d, "y_off", wg_out_id(L, 0));
    WG_P(L, d, wg_pu("n", n), wg_pu("depth", len), wg_pu("inner", inner), wg_pu("w", 1));
    return wg_grid_1d(L, d, n);
}

/* ------------------------------------------------------------ normalisations */

/* How a parameter (scale, bias) is indexed: (row % rmod) * rmul + (j / jdiv) % jmod. */
typedef struct pidx {
    int value; /* -1: absent */
    uint32_t rmod, rmul, jdiv, jmod;
} pidx;

static const pidx k_no_param = { -1, 1, 0, 1, 1 };

typedef struct norm_desc {
    int mode;
    float eps;
    pidx s, b;
    int mean_out, inv_out; /* value ids or -1 */
    wg_elem elem;          /* T of every operand: x's type (f32, f16) */
} norm_desc;

/* The operands of norm.wgsl and norm_split.wgsl: x (vec4), scale, bias, y,
 * mean, inv_std_dev; x's first word stands in for the absent ones. */
static void bind_norm(wg_lower *L, wg_dispatch *d, const norm_desc *nd) {
    int x = wg_in_id(L, 0);
    wg_bind_value4(L, d, "x_off", x);
    wg_bind_or(L, d, "s_off", nd->s.value, x);
    wg_bind_or(L, d, "b_off", nd->b.value, x);
    wg_bind_value(L, d, "y_off", wg_out_id(L, 0));
    wg_bind_or(L, d, "m_off", nd->mean_out, x);
    wg_bind_or(L, d, "v_off", nd->inv_out, x);
}

/* The flags word of the norm kernels: which of scale, bias, mean, inv_std_dev exist. */
static uint32_t norm_flags(const norm_desc *nd) {
    return (nd->s.value >= 0 ? 1u : 0u) | (nd->b.value >= 0 ? 2u : 0u) | (nd->mean_out >= 0 ? 4u : 0u) |
           (nd->inv_out >= 0 ? 8u : 0u);
}

/* The scale and bias index words (pidx) of the norm kernels. */
static void p_norm_params(wg_lower *L, wg_dispatch *d, const norm_desc *nd) {
    const pidx *ps[2] = { &nd->s, &nd->b };
    static const char *const k_name[2][4] = { { "s_rmod", "s_rmul", "s_jdiv", "s_jmod" },
                                              { "b_rmod", "b_rmul", "b_jdiv", "b_jmod" } };
    for (int k = 0; k < 2; k++) {
        WG_P(L, d, wg_pu(k_name[k][0], ps[k]->rmod ? ps[k]->rmod : 1), wg_pu(k_name[k][1], ps[k]->rmul),
             wg_pu(k_name[k][2], ps[k]->jdiv ? ps[k]->jdiv : 1), wg_pu(k_name[k][3], ps[k]->jmod ? ps[k]->jmod : 1));
    }
}

/* The three dispatches of norm_split.wgsl: chunk statistics, row
 * statistics, the elementwise rewrite. Rows contiguous and consecutive. */
static rlx_status emit_norm_split(wg_lower *L, const norm_desc *nd, const redview *rv) {
    uint64_t nch = (rv->count + SPLIT_CHUNK - 1) / SPLIT_CHUNK;
    uint64_t st_off = 4 * rv->rows * nch, t_words = st_off + 3 * rv->rows;
    wg_scratch(L, t_words);
    const uint64_t groups[3] = { rv->rows * nch, (rv->rows + 255) / 256, (rv->rows * rv->count + 255) / 256 };
    for (int stage = 0; stage < 3; stage++) {
        wg_dispatch *d = wg_emit(L, "norm_split");
        d->elem = nd->elem;
        wg_spec(L, d, "MODE", nd->mode);
        wg_spec(L, d, "STAGE", stage);
        bind_norm(L, d, nd);
        wg_bind(L, d, "t_off", WG_SCRATCH, 0, t_words);
        WG_P(L, d, wg_pu("st_off", st_off), wg_pu("rows", rv->rows), wg_pu("count", rv->count),
             wg_pu("chunk", SPLIT_CHUNK), wg_pu("nch", nch), wg_pu("flags", norm_flags(nd)), wg_pf("eps", nd->eps),
             wg_pu("_p0", 0), wg_pu("_p1", 0));
        p_norm_params(L, d, nd);
        RLX_TRY(wg_grid_groups(L, d, groups[stage]));
    }
    return RLX_OK;
}

static rlx_status emit_norm(wg_lower *L, const norm_desc *nd, const redview *rv) {
    /* y is written at x's indices (norm.wgsl's //!audited claim) */
    if (wg_numel(wg_out(L, 0)) != wg_numel(wg_in(L, 0))) return wg_decline(L, "output size differs from the input's");
    if (nd->mode <= NM_MVN && rv_split(rv)) return emit_norm_split(L, nd, rv);
    wg_dispatch *d = wg_emit(L, "norm");
    d->elem = nd->elem;
    wg_spec(L, d, "MODE", nd->mode);
    bind_norm(L, d, nd);
    WG_P(L, d, wg_pu("rows", rv->rows), wg_pu("count", rv->count), wg_pu("nk", rv->nk), wg_pu("nr", rv->nr),
         wg_pu("flags", norm_flags(nd)), wg_pf("eps", nd->eps));
    p_norm_params(L, d, nd);
    p_view(L, d, rv);
    return rv_grid(L, d, rv);
}

/* Rows over dims [axis, rank) of x. */
static rlx_status rows_from(wg_lower *L, const rlx_value *x, int axis, redview *rv) {
    bool ax[RLX_MAX_RANK] = { false };
    for (int d = axis; d < x->rank; d++) ax[d] = true;
    return make_redview(L, x->dims, x->rank, ax, rv);
}

/* Index of a parameter p that broadcasts unidirectionally to x and is the
 * same for every row of dims [0, axis): within a row its elements must form
 * one run, (j / jdiv) % jmod. */
static rlx_status row_param(wg_lower *L, const rlx_value *p, const rlx_value *x, int axis, int id, pidx *out) {
    *out = k_no_param;
    if (!p) return RLX_OK;
    if (!wg_value_ok(p, WG_F32 | WG_F16) || p->dtype != x->dtype)
        return wg_decline(L, "parameter '%s' is not static and of the input's type", p->name);
    if (p->rank > x->rank) return wg_decline(L, "parameter '%s' has a higher rank than the input", p->name);
    /* per x dim: the parameter's stride (0 where broadcast) */
    uint64_t str[RLX_MAX_RANK] = { 0 }, s = 1; /* zeroed: -O3 cannot see that dims 0 .. rank - 1 are all set */
    for (int d = x->rank - 1; d >= 0; d--) {
        int j = d - (x->rank - p->rank);
        int64_t pd = j >= 0 ? p->dims[j] : 1;
        if (pd != 1 && pd != x->dims[d]) return wg_decline(L, "parameter '%s' does not broadcast", p->name);
        str[d] = pd == 1 ? 0 : s;
        s *= (uint64_t)pd;
    }
    for (int d = 0; d < axis; d++)
        if (str[d]) return wg_decline(L, "parameter '%s' varies across rows", p->name);
    /* the non-broadcast dims of the row must be consecutive */
    int first = -1, lastd = -1;
    for (int d = axis; d < x->rank; d++)
        if (str[d]) {
            if (first < 0) first = d;
            else if (lastd != d - 1) {
                /* a broadcast dim of size 1 in x between them is harmless */
                for (int k = lastd + 1; k < d; k++)
                    if (x->dims[k] != 1) return wg_decline(L, "parameter '%s' broadcasts inside a row", p->name);
            }
            lastd = d;
        }
    out->value = id;
    out->rmod = 1;
    out->rmul = 0;
    if (first < 0) {
        out->jdiv = 1;
        out->jmod = 1;
        return RLX_OK;
    }
    uint64_t inner = 1, run = 1;
    for (int d = lastd + 1; d < x->rank; d++) inner *= (uint64_t)x->dims[d];
    for (int d = first; d <= lastd; d++) run *= (uint64_t)x->dims[d];
    out->jdiv = (uint32_t)inner;
    out->jmod = (uint32_t)run;
    return RLX_OK;
}

/* LayerNormalization-17 (optional outputs Mean and InvStdDev, f32) and
 * RMSNormalization-23: statistics over dims [axis, rank). */
static rlx_status lower_layer_norm(wg_lower *L) {
    bool rms = L->n->op == RLX_OP_RMSNormalization;
    const rlx_value *x = wg_in(L, 0), *y = wg_out(L, 0);
    RLX_TRY(wg_check_io(L, WG_F32 | WG_F16, 3));
    if (x->dtype != y->dtype) return wg_decline(L, "output type differs from the input's");
    int axis;
    if (!rlx_norm_axis(rlx_param_int(L->n, RLX_A_axis), x->rank, &axis)) return wg_decline(L, "axis");
    norm_desc nd = { .mode = rms ? NM_RMS : NM_LAYER, .eps = rlx_param_float(L->n, RLX_A_epsilon),
                     .s = k_no_param, .b = k_no_param, .mean_out = -1, .inv_out = -1, .elem = wg_elem_of(x->dtype) };
    RLX_TRY(row_param(L, wg_in(L, 1), x, axis, wg_in_id(L, 1), &nd.s));
    if (!rms) RLX_TRY(row_param(L, wg_in(L, 2), x, axis, wg_in_id(L, 2), &nd.b));
    if (nd.s.value < 0) return wg_decline(L, "no scale");
    redview rv;
    RLX_TRY(rows_from(L, x, axis, &rv));
    for (int i = 1; i < L->n->n_out; i++) {
        const rlx_value *o = wg_out(L, i);
        if (!o) continue;
        if (rms || i > 2) return wg_decline(L, "output %d", i);
        if (o->dtype != x->dtype || wg_numel(o) != rv.rows)
            return wg_decline(L, "output %d is not [rows] of the input's type (the kernels store it as T)", i);
        if (i == 1) nd.mean_out = wg_out_id(L, 1);
        else nd.inv_out = wg_out_id(L, 2);
    }
    if (rv.rows == 0) return RLX_OK;
    if (rv.count == 0) return (nd.mean_out >= 0 || nd.inv_out >= 0) ? wg_decline(L, "empty rows") : RLX_OK;
    return emit_norm(L, &nd, &rv);
}

/* Per-channel scale and bias of [N, C, ...] ops: one value per channel. */
static rlx_status channel_param(wg_lower *L, int i, uint64_t want, pidx *out) {
    const rlx_value *p = wg_in(L, i);
    *out = k_no_param;
    if (!wg_value_ok(p, WG_F32) || wg_numel(p) != want) return wg_decline(L, "input %d is not f32 of %llu values", i,
                                                                          (unsigned long long)want);
    out->value = wg_in_id(L, i);
    return RLX_OK;
}

/* InstanceNormalization-1/6/22: statistics per (n, c) over the spatial
 * dims; scale and B per channel. */
static rlx_status lower_instance_norm(wg_lower *L) {
    RLX_TRY(wg_check_io(L, WG_F32, 1));
    const rlx_value *x = wg_in(L, 0);
    if (x->rank < 2) return wg_decline(L, "rank %d", x->rank);
    uint64_t c = (uint64_t)x->dims[1];
    norm_desc nd = { .mode = NM_LAYER, .eps = rlx_param_float(L->n, RLX_A_epsilon), .s = k_no_param,
                     .b = k_no_param, .mean_out = -1, .inv_out = -1 };
    RLX_TRY(channel_param(L, 1, c, &nd.s));
    RLX_TRY(channel_param(L, 2, c, &nd.b));
    nd.s.rmod = nd.b.rmod = (uint32_t)(c ? c : 1);
    nd.s.rmul = nd.b.rmul = 1;
    redview rv;
    RLX_TRY(rows_from(L, x, 2, &rv));
    if (rv.rows == 0 || rv.count == 0) return RLX_OK;
    return emit_norm(L, &nd, &rv);
}

/* GroupNormalization-18 (scale and bias per group) and -21 (per channel):
 * statistics per (n, group) over the group's channels and spatial dims. */
static rlx_status lower_group_norm(wg_lower *L) {
    RLX_TRY(wg_check_io(L, WG_F32, 1));
    const rlx_value *x = wg_in(L, 0);
    if (x->rank < 2) return wg_decline(L, "rank %d", x->rank);
    int64_t g = rlx_param_int(L->n, RLX_A_num_groups);
    uint64_t c = (uint64_t)x->dims[1];
    if (g <= 0 || c % (uint64_t)g) return wg_decline(L, "num_groups");
    uint64_t cpg = c / (uint64_t)g, sp = 1;
    for (int d = 2; d < x->rank; d++) sp *= (uint64_t)x->dims[d];
    bool per_channel = L->n->version >= 21;
    norm_desc nd = { .mode = NM_LAYER, .eps = rlx_param_float(L->n, RLX_A_epsilon), .s = k_no_param,
                     .b = k_no_param, .mean_out = -1, .inv_out = -1 };
    RLX_TRY(channel_param(L, 1, per_channel ? c : (uint64_t)g, &nd.s));
    RLX_TRY(channel_param(L, 2, per_channel ? c : (uint64_t)g, &nd.b));
    pidx *ps[2] = { &nd.s, &nd.b };
    for (int k = 0; k < 2; k++) {
        ps[k]->rmod = (uint32_t)g;
        ps[k]->rmul = per_channel ? (uint32_t)cpg : 1;
        ps[k]->jdiv = per_channel ? (uint32_t)(sp ? sp : 1) : 1;
        ps[k]->jmod = per_channel ? (uint32_t)cpg : 1;
    }
    /* rows (n, group): view x as [N, G, cpg * sp] */
    int64_t dims[3] = { x->dims[0], g, (int64_t)(cpg * sp) };
    bool ax[3] = { false, false, true };
    redview rv;
    RLX_TRY(make_redview(L, dims, 3, ax, &rv));
    if (rv.rows == 0 || rv.count == 0) return RLX_OK;
    return emit_norm(L, &nd, &rv);
}

/* LpNormalization-1/22: x / ||x||_p along `axis` (p 1 or 2), 0 where the
 * norm is 0. */
static rlx_status lower_lp_norm(wg_lower *L) {
    RLX_TRY(wg_check_io(L, WG_F32, 1));
    const rlx_value *x = wg_in(L, 0);
    int64_t p = rlx_param_int(L->n, RLX_A_p);
    if (p != 1 && p != 2) return wg_decline(L, "p = %lld", (long long)p);
    redview rv;
    RLX_TRY(axis_redview(L, x, &rv));
    if (rv.rows == 0 || rv.count == 0) return RLX_OK;
    norm_desc nd = { .mode = p == 1 ? NM_LP1 : NM_LP2, .s = k_no_param, .b = k_no_param, .mean_out = -1, .inv_out = -1 };
    return emit_norm(L, &nd, &rv);
}

/* MeanVarianceNormalization-9/13: (x - mean) / (sqrt(var) + 1e-9) over
 * `axes` (default [0, 2, 3]). */
static rlx_status lower_mvn(wg_lower *L) {
    RLX_TRY(wg_check_io(L, WG_F32, 1));
    const rlx_value *x = wg_in(L, 0);
    rlx_reduce_spec r;
    if (rlx_mvn_resolve(L->n, x->rank, RLX_ERR_INVALID_MODEL, &r) != RLX_OK) return wg_decline(L, "axes");
    redview rv;
    RLX_TRY(make_redview(L, x->dims, x->rank, r.axis, &rv));
    if (rv.rows == 0 || rv.count == 0) return RLX_OK;
    norm_desc nd = { .mode = NM_MVN, .s = k_no_param, .b = k_no_param, .mean_out = -1, .inv_out = -1 };
    return emit_norm(L, &nd, &rv);
}

/* Softmax/LogSoftmax-1/11 (input coerced to 2-D at axis, default 1) and
 * -13 (one axis, default -1). */
static rlx_status lower_softmax(wg_lower *L) {
    RLX_TRY(wg_check_io(L, WG_F32 | WG_F16, 1));
    const rlx_value *x = wg_in(L, 0);
    if (x->dtype != wg_out(L, 0)->dtype) return wg_decline(L, "output type differs from the input's");
    bool v13 = L->n->version >= 13;
    int64_t a = rlx_softmax_axis(L->n);
    int axis;
    if (x->rank == 0) {
        if (a != 0 && a != -1) return wg_decline(L, "axis");
        axis = 0;
    } else if (!rlx_norm_axis(a, x->rank, &axis)) {
        return wg_decline(L, "axis %lld out of range", (long long)a);
    }
    bool ax[RLX_MAX_RANK] = { false };
    for (int d = axis; d < x->rank; d++) ax[d] = v13 ? d == axis : true;
    redview rv;
    if (x->rank == 0) {
        int64_t one = 1;
        bool t = true;
        RLX_TRY(make_redview(L, &one, 1, &t, &rv));
    } else {
        RLX_TRY(make_redview(L, x->dims, x->rank, ax, &rv));
    }
    if (rv.rows == 0 || rv.count == 0) return RLX_OK;
    norm_desc nd = { .mode = L->n->op == RLX_OP_LogSoftmax ? NM_LOGSOFTMAX : NM_SOFTMAX,
                     .s = k_no_param, .b = k_no_param, .mean_out = -1, .inv_out = -1, .elem = wg_elem_of(x->dtype) };
    return emit_norm(L, &nd, &rv);
}

/* ------------------------------------------------------------ LRN */

/* LRN-1/13: y = x / (bias + alpha / size * sum of x^2 over channels
 * [c - floor((size-1)/2), c + ceil((size-1)/2)]) ^ beta. */
static rlx_status lower_lrn(wg_lower *L) {
    RLX_TRY(wg_check_io(L, WG_F32, 1));
    const rlx_value *x = wg_in(L, 0);
    int64_t size = rlx_param_int(L->n, RLX_A_size);
    if (size <= 0 || x->rank < 2) return wg_decline(L, "size or rank");
    uint64_t n = wg_numel(x);
    if (n == 0) return RLX_OK;
    if (n >= ((uint64_t)1 << 31)) return wg_decline(L, "too large");
    if (wg_numel(wg_out(L, 0)) != n) return wg_decline(L, "output size differs from the input's");
    uint64_t sp = 1;
    for (int d = 2; d < x->rank; d++) sp *= (uint64_t)x->dims[d];
    wg_dispatch *d = wg_emit(L, "lrn");
    wg_bind_value(L, d, "x_off", wg_in_id(L, 0));
    wg_bind_value(L, d, "y_off", wg_out_id(L, 0));
    WG_P(L, d, wg_pu("n", n), wg_pu("c", x->dims[1]), wg_pu("sp", sp), wg_pu("before", (uint32_t)((size - 1) / 2)),
         wg_pu("after", (uint32_t)(size / 2)), wg_pf("alpha", rlx_param_float(L->n, RLX_A_alpha) / (float)size),
         wg_pf("beta", rlx_param_float(L->n, RLX_A_beta)), wg_pf("bias", rlx_param_float(L->n, RLX_A_bias)));
    return wg_grid_1d(L, d, n);
}

const wg_lower_fn wg_lowerings_reduce[RLX_OP_COUNT] = {
    [RLX_OP_ReduceSum] = lower_reduce, [RLX_OP_ReduceMean] = lower_reduce, [RLX_OP_ReduceMax] = lower_reduce,
    [RLX_OP_ReduceMin] = lower_reduce, [RLX_OP_ReduceProd] = lower_reduce, [RLX_OP_ReduceL1] = lower_reduce,
    [RLX_OP_ReduceL2] = lower_reduce, [RLX_OP_ReduceLogSum] = lower_reduce, [RLX_OP_ReduceLogSumExp] = lower_reduce,
    [RLX_OP_ReduceSumSquare] = lower_reduce, [RLX_OP_ArgMax] = lower_arg, [RLX_OP_ArgMin] = lower_arg,
    [RLX_OP_LayerNormalization] = lower_layer_norm, [RLX_OP_RMSNormalization] = lower_layer_norm,
    [RLX_OP_InstanceNormalization] = lower_instance_norm, [RLX_OP_GroupNormalization] = lower_group_norm,
    [RLX_OP_LpNormalization] = lower_lp_norm, [RLX_OP_MeanVarianceNormalization] = lower_mvn,
    [RLX_OP_Softmax] = lower_softmax, [RLX_OP_LogSoftmax] = lower_softmax, [RLX_OP_Hardmax] = lower_hardmax, [RLX_OP_LRN] = lower_lrn,
};
