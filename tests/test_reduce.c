/* The reduce family: Reduce*, ArgMax/ArgMin, the normalisations and Einsum,
 * on the CPU, against values computed here independently. The kernels
 * scatter each input element into its output; the expectations here gather,
 * for each output element, the input elements that belong to it through
 * explicit index formulas, and apply the textbook formula in double. */
#include <stdbool.h>

#include "test.h"

/* f32 results are rounded once from double in the kernels; the gathers here
 * sum in another order, so allow a few ulps of f32. */
#define F32_RTOL 2e-6
#define F32_ATOL 1e-6

static rlx_tensor *rnd(rlx_dtype dt, int rank, const int64_t *dims, float lo, float hi) {
    return test_tensor_random(dt, rank, dims, lo, hi);
}

static rlx_status run(const char *op, int opset, int n_in, const rlx_tensor *const *in, const int *konst, int n_out,
                      size_t n_attrs, const rlx_attr *attrs, rlx_tensor ***out) {
    return test_run_op(op, opset, "cpu", n_in, in, konst, n_out, n_attrs, attrs, out);
}

static double getd(const rlx_tensor *t, size_t i) {
    switch (t->dtype) {
    case RLX_DTYPE_F32: return ((const float *)t->data)[i];
    case RLX_DTYPE_F64: return ((const double *)t->data)[i];
    case RLX_DTYPE_I32: return ((const int32_t *)t->data)[i];
    case RLX_DTYPE_I64: return (double)((const int64_t *)t->data)[i];
    case RLX_DTYPE_U8: case RLX_DTYPE_BOOL: return ((const uint8_t *)t->data)[i];
    case RLX_DTYPE_I8: return ((const int8_t *)t->data)[i];
    default: return NAN;
    }
}

static int64_t geti(const rlx_tensor *t, size_t i) {
    switch (t->dtype) {
    case RLX_DTYPE_I32: return ((const int32_t *)t->data)[i];
    case RLX_DTYPE_I64: return ((const int64_t *)t->data)[i];
    case RLX_DTYPE_U8: case RLX_DTYPE_BOOL: return ((const uint8_t *)t->data)[i];
    case RLX_DTYPE_I8: return ((const int8_t *)t->data)[i];
    default: return INT64_MIN;
    }
}

/* Row-major flat index of coordinates `co` in a shape. */
static size_t flat_of(const int64_t *co, const int64_t *dims, int rank) {
    size_t f = 0;
    for (int d = 0; d < rank; d++) f = f * (size_t)dims[d] + (size_t)co[d];
    return f;
}

/* Splits flat index f of a shape into coordinates. */
static void coords_of(size_t f, const int64_t *dims, int rank, int64_t *co) {
    for (int d = rank - 1; d >= 0; d--) {
        co[d] = dims[d] ? (int64_t)(f % (size_t)dims[d]) : 0;
        f = dims[d] ? f / (size_t)dims[d] : 0;
    }
}

static size_t numel_of(const int64_t *dims, int rank) {
    size_t n = 1;
    for (int d = 0; d < rank; d++) n *= (size_t)dims[d];
    return n;
}

static bool same_dims(const rlx_tensor *t, int rank, const int64_t *dims) {
    if (t->rank != rank) return false;
    for (int d = 0; d < rank; d++)
        if (t->dims[d] != dims[d]) return false;
    return true;
}

/* ================================================================ Reduce* */

enum { OP_SUM, OP_MEAN, OP_MAX, OP_MIN, OP_PROD, OP_L1, OP_L2, OP_LOGSUM, OP_LSE, OP_SUMSQ, N_OPS };
static const char *const k_ops[N_OPS] = { "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                                          "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
                                          "ReduceSumSquare" };

/* The textbook formula over the n gathered values. */
static double formula(int op, const double *v, size_t n) {
    double s = 0, p = 1, m;
    switch (op) {
    case OP_SUM: for (size_t i = 0; i < n; i++) s += v[i]; return s;
    case OP_MEAN: for (size_t i = 0; i < n; i++) s += v[i]; return s / (double)n;
    case OP_MAX: m = -INFINITY; for (size_t i = 0; i < n; i++) m = v[i] > m ? v[i] : m; return m;
    case OP_MIN: m = INFINITY; for (size_t i = 0; i < n; i++) m = v[i] < m ? v[i] : m; return m;
    case OP_PROD: for (size_t i = 0; i < n; i++) p *= v[i]; return p;
    case OP_L1: for (size_t i = 0; i < n; i++) s += fabs(v[i]); return s;
    case OP_L2: for (size_t i = 0; i < n; i++) s += v[i] * v[i]; return sqrt(s);
    case OP_LOGSUM: for (size_t i = 0; i < n; i++) s += v[i]; return log(s);
    case OP_LSE: for (size_t i = 0; i < n; i++) s += exp(v[i]); return log(s);
    case OP_SUMSQ: for (size_t i = 0; i < n; i++) s += v[i] * v[i]; return s;
    }
    return NAN;
}

/* Expected f32 result of reducing x over the axes in `mask`: for every
 * output element, enumerate the reduced coordinates and gather. */
static rlx_tensor *expect_reduce(int op, const rlx_tensor *x, const bool *mask, bool keepdims, double shift) {
    int rank = x->rank, orank = 0, nkept = 0, nred = 0;
    int64_t odims[8] = { 0 }, kept[8], red[8];
    int kept_ax[8], red_ax[8];
    for (int d = 0; d < rank; d++) {
        if (mask[d]) {
            red_ax[nred] = d, red[nred++] = x->dims[d];
            if (keepdims) odims[orank++] = 1;
        } else {
            kept_ax[nkept] = d, kept[nkept++] = x->dims[d];
            odims[orank++] = x->dims[d];
        }
    }
    rlx_tensor *y = test_tensor(RLX_DTYPE_F32, orank, odims);
    size_t n_out = numel_of(kept, nkept), n_red = numel_of(red, nred);
    double *vals = malloc((n_red + 1) * sizeof *vals);
    for (size_t o = 0; o < n_out; o++) {
        int64_t kc[8], rc[8], full[8];
        coords_of(o, kept, nkept, kc);
        for (int i = 0; i < nkept; i++) full[kept_ax[i]] = kc[i];
        for (size_t r = 0; r < n_red; r++) {
            coords_of(r, red, nred, rc);
            for (int i = 0; i < nred; i++) full[red_ax[i]] = rc[i];
            vals[r] = getd(x, flat_of(full, x->dims, rank)) - shift;
        }
        double v = formula(op, vals, n_red);
        if (op == OP_LSE) v += shift; /* log(sum exp(x)) = s + log(sum exp(x - s)) */
        ((float *)y->data)[o] = (float)v;
    }
    free(vals);
    return y;
}

enum { AX_ATTR, AX_CONST_INPUT, AX_RUNTIME_INPUT };
static const char *const k_modes[] = { "attribute", "constant input", "run-time input" };

/* Runs Reduce `op` on x with the given axes (NULL: none) in one of the three
 * ways axes can come; returns the output (caller frees) or NULL. */
static rlx_tensor *run_reduce(int op, int mode, const rlx_tensor *x, const int64_t *axes, size_t na, int keepdims,
                              int noop, rlx_status *st_out) {
    bool sum = op == OP_SUM;
    int opset = mode == AX_ATTR ? (sum ? 11 : 13) : (sum ? 13 : 18);
    rlx_attr at[3];
    size_t n_at = 0;
    at[n_at++] = RLX_ATTR_I("keepdims", keepdims);
    if (noop >= 0) at[n_at++] = RLX_ATTR_I("noop_with_empty_axes", noop);
    const rlx_tensor *in[2] = { x, NULL };
    int konst[2] = { 0, mode == AX_CONST_INPUT };
    rlx_tensor *ax = NULL;
    if (axes && mode == AX_ATTR) at[n_at++] = RLX_ATTR_IS("axes", na, axes);
    if (axes && mode != AX_ATTR) {
        int64_t d = (int64_t)na;
        ax = test_tensor(RLX_DTYPE_I64, 1, &d);
        if (na) memcpy(ax->data, axes, na * sizeof *axes);
        in[1] = ax;
    }
    rlx_tensor **out = NULL;
    rlx_status st = run(k_ops[op], opset, in[1] ? 2 : 1, in, konst, 1, n_at, at, &out);
    if (st_out) *st_out = st;
    else CHECK_MSG(st == RLX_OK, "%s (%s): %s", k_ops[op], k_modes[mode], rlx_last_error());
    rlx_tensor_destroy(ax);
    rlx_tensor *y = NULL;
    if (out) {
        y = out[0];
        free(out);
    }
    return y;
}

/* Every Reduce op, axes as attribute / constant input / run-time input,
 * keepdims 0 and 1, negative axes, no axes (all). */
static void test_reduce_ops(void) {
    int64_t dims[3] = { 3, 4, 5 };
    struct { int64_t axes[3]; size_t na; bool none; int keep; } cases[] = {
        { { 1 }, 1, false, 1 },      { { 0, 2 }, 2, false, 0 }, { { -1 }, 1, false, 1 },
        { { -3, -2 }, 2, false, 0 }, { { 0 }, 0, true, 0 },     { { 0 }, 0, true, 1 },
        { { 2, 0, 1 }, 3, false, 0 },
    };
    for (int op = 0; op < N_OPS; op++) {
        /* LogSum needs a positive sum, Prod values near 1 */
        bool positive = op == OP_LOGSUM || op == OP_PROD;
        float lo = positive ? 0.5f : -2.0f, hi = positive ? 1.5f : 2.0f;
        rlx_tensor *x = rnd(RLX_DTYPE_F32, 3, dims, lo, hi);
        for (int mode = 0; mode < 3; mode++)
            for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
                bool mask[3] = { false, false, false };
                for (size_t i = 0; i < cases[c].na; i++) mask[(cases[c].axes[i] + 3) % 3] = true;
                if (cases[c].none) mask[0] = mask[1] = mask[2] = true;
                rlx_tensor *y = run_reduce(op, mode, x, cases[c].none ? NULL : cases[c].axes, cases[c].na,
                                           cases[c].keep, -1, NULL);
                rlx_tensor *want = expect_reduce(op, x, mask, cases[c].keep, 0);
                if (y) /* tolerance: F32_RTOL/F32_ATOL (a few f32 ulps) */
                    CHECK_MSG(test_allclose(y, want, F32_RTOL, F32_ATOL), "%s (%s) case %zu", k_ops[op],
                              k_modes[mode], c);
                rlx_tensor_destroy(y);
                rlx_tensor_destroy(want);
            }
        rlx_tensor_destroy(x);
    }
}

/* The oldest versions (opset 7 gives since-version 1: axes attribute). */
static void test_reduce_version1(void) {
    int64_t dims[2] = { 4, 6 }, axes[1] = { 1 };
    rlx_tensor *x = rnd(RLX_DTYPE_F32, 2, dims, -1, 1);
    for (int op = 0; op < N_OPS; op++) {
        if (op == OP_LOGSUM) continue;
        rlx_attr at[2] = { RLX_ATTR_IS("axes", 1, axes), RLX_ATTR_I("keepdims", 0) };
        const rlx_tensor *in[1] = { x };
        rlx_tensor **out = NULL;
        CHECK_OK(run(k_ops[op], 7, 1, in, NULL, 1, 2, at, &out));
        bool mask[2] = { false, true };
        rlx_tensor *want = expect_reduce(op, x, mask, false, 0);
        if (out) CHECK_MSG(test_allclose(out[0], want, F32_RTOL, F32_ATOL), "%s-1", k_ops[op]);
        test_free_outputs(out, 1);
        rlx_tensor_destroy(want);
    }
    rlx_tensor_destroy(x);
}

/* noop_with_empty_axes: axes absent or empty -> no reduction, only the
 * elementwise part (|x|, x^2, log x, ...); with 0 an empty list reduces all. */
static void test_reduce_noop(void) {
    int64_t dims[3] = { 2, 3, 4 }, none = 0;
    rlx_tensor *x = rnd(RLX_DTYPE_F32, 3, dims, 0.25f, 2.0f);
    bool nomask[3] = { false, false, false }, all[3] = { true, true, true };
    for (int op = 0; op < N_OPS; op++) {
        for (int empty_input = 0; empty_input < 2; empty_input++) {
            /* noop = 1: identity of the reduction (expect_reduce with no reduced axis) */
            rlx_tensor *y = run_reduce(op, AX_CONST_INPUT, x, empty_input ? &none : NULL, 0, 1, 1, NULL);
            rlx_tensor *want = expect_reduce(op, x, nomask, true, 0);
            if (y)
                CHECK_MSG(test_allclose(y, want, F32_RTOL, F32_ATOL), "%s noop (empty input %d)", k_ops[op],
                          empty_input);
            rlx_tensor_destroy(y);
            rlx_tensor_destroy(want);
            /* noop = 0 with an empty axes list: reduce everything */
            y = run_reduce(op, AX_CONST_INPUT, x, empty_input ? &none : NULL, 0, 0, 0, NULL);
            want = expect_reduce(op, x, all, false, 0);
            if (y)
                CHECK_MSG(test_allclose(y, want, F32_RTOL, F32_ATOL), "%s empty axes (empty input %d)", k_ops[op],
                          empty_input);
            rlx_tensor_destroy(y);
            rlx_tensor_destroy(want);
        }
    }
    /* before ReduceSum-13 there is no noop_with_empty_axes: a node that has
     * one is refused (it was ignored), and without it no axes reduce all */
    rlx_status st = RLX_OK;
    rlx_tensor *y = run_reduce(OP_SUM, AX_ATTR, x, NULL, 0, 0, 1, &st);
    const char *e = rlx_last_error();
    CHECK_MSG(!y && st == RLX_ERR_INVALID_MODEL && strstr(e, "noop_with_empty_axes") && strstr(e, "ReduceSum-13"),
              "ReduceSum-11 with noop_with_empty_axes: %s", e);
    rlx_tensor_destroy(y);
    y = run_reduce(OP_SUM, AX_ATTR, x, NULL, 0, 0, -1, NULL);
    rlx_tensor *want = expect_reduce(OP_SUM, x, all, false, 0);
    if (y) CHECK_MSG(test_allclose(y, want, F32_RTOL, F32_ATOL), "ReduceSum-11 without axes reduces all");
    rlx_tensor_destroy(y);
    rlx_tensor_destroy(want);
    rlx_tensor_destroy(x);
}

/* A zero-size reduced axis gives the identity of each reduction; Mean
 * gives 0, as onnxruntime (it was NaN, 0/0). */
static void test_reduce_empty_set(void) {
    int64_t dims[3] = { 2, 0, 4 }, ax1 = 1, ax2 = 2;
    rlx_tensor *x = test_tensor(RLX_DTYPE_F32, 3, dims);
    const double ident[N_OPS] = { 0, 0, -INFINITY, INFINITY, 1, 0, 0, -INFINITY, -INFINITY, 0 };
    for (int op = 0; op < N_OPS; op++) {
        rlx_tensor *y = run_reduce(op, AX_CONST_INPUT, x, &ax1, 1, 1, -1, NULL);
        int64_t od[3] = { 2, 1, 4 };
        CHECK_MSG(y && same_dims(y, 3, od), "%s empty set shape", k_ops[op]);
        if (y && same_dims(y, 3, od)) {
            int bad = 0;
            for (size_t i = 0; i < 8; i++) {
                double v = getd(y, i);
                if (!(v == ident[op] || (isnan(v) && isnan(ident[op])))) bad++;
            }
            CHECK_MSG(bad == 0, "%s over an empty set: %d elements are not %g", k_ops[op], bad, ident[op]);
        }
        rlx_tensor_destroy(y);
        /* reducing a non-empty axis of an empty tensor: an empty output */
        y = run_reduce(op, AX_CONST_INPUT, x, &ax2, 1, 1, -1, NULL);
        int64_t od2[3] = { 2, 0, 1 };
        CHECK_MSG(y && same_dims(y, 3, od2), "%s empty output shape", k_ops[op]);
        rlx_tensor_destroy(y);
    }
    rlx_tensor_destroy(x);
    /* integer Max / Min over an empty set: the type's minimum / maximum */
    int64_t di[2] = { 3, 0 };
    rlx_tensor *xi = test_tensor(RLX_DTYPE_I32, 2, di);
    int64_t ax = 1;
    rlx_tensor *ymax = run_reduce(OP_MAX, AX_CONST_INPUT, xi, &ax, 1, 0, -1, NULL);
    rlx_tensor *ymin = run_reduce(OP_MIN, AX_CONST_INPUT, xi, &ax, 1, 0, -1, NULL);
    CHECK(ymax && ymax->dtype == RLX_DTYPE_I32 && ymax->rank == 1 && geti(ymax, 2) == INT32_MIN);
    CHECK(ymin && ymin->dtype == RLX_DTYPE_I32 && ymin->rank == 1 && geti(ymin, 0) == INT32_MAX);
    rlx_tensor_destroy(ymax);
    rlx_tensor_destroy(ymin);
    rlx_tensor_destroy(xi);
}

/* Integer dtypes: exact results (integer accumulation). */
static void test_reduce_int(void) {
    int64_t dims[3] = { 3, 4, 5 }, axes[2] = { 0, -1 };
    struct { int op; rlx_dtype dt; float lo, hi; } cases[] = {
        { OP_SUM, RLX_DTYPE_I32, -50, 50 }, { OP_MEAN, RLX_DTYPE_I32, -50, 50 }, { OP_MAX, RLX_DTYPE_I64, -1000, 1000 },
        { OP_MIN, RLX_DTYPE_U8, 0, 255 },  { OP_PROD, RLX_DTYPE_I64, -3, 4 },   { OP_L1, RLX_DTYPE_I32, -9, 9 },
        { OP_SUMSQ, RLX_DTYPE_I64, -9, 9 }, { OP_L2, RLX_DTYPE_I32, -9, 9 },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        rlx_tensor *x = rnd(cases[c].dt, 3, dims, cases[c].lo, cases[c].hi);
        int op = cases[c].op;
        rlx_tensor *y = run_reduce(op, AX_CONST_INPUT, x, axes, 2, 0, -1, NULL);
        CHECK_MSG(y && y->dtype == cases[c].dt && y->rank == 1 && y->dims[0] == 4, "%s %s shape", k_ops[op],
                  rlx_dtype_name(cases[c].dt));
        if (y && y->rank == 1 && y->dims[0] == 4) {
            int bad = 0;
            for (int64_t j = 0; j < 4; j++) {
                int64_t s = 0, p = 1, mx = INT64_MIN, mn = INT64_MAX, a = 0, q = 0;
                for (int64_t i = 0; i < 3; i++)
                    for (int64_t k = 0; k < 5; k++) {
                        int64_t v = geti(x, (size_t)(i * 20 + j * 5 + k));
                        s += v, a += v < 0 ? -v : v, q += v * v;
                        p = (int64_t)((uint64_t)p * (uint64_t)v); /* wraps for the large Max inputs */
                        mx = v > mx ? v : mx, mn = v < mn ? v : mn;
                    }
                int64_t want = op == OP_SUM ? s : op == OP_MEAN ? s / 15 : op == OP_MAX ? mx : op == OP_MIN ? mn :
                               op == OP_PROD ? p : op == OP_L1 ? a : op == OP_SUMSQ ? q : (int64_t)sqrt((double)q);
                if (geti(y, (size_t)j) != want) bad++;
            }
            CHECK_MSG(bad == 0, "%s %s: %d elements differ (exact)", k_ops[op], rlx_dtype_name(cases[c].dt), bad);
        }
        rlx_tensor_destroy(y);
        rlx_tensor_destroy(x);
    }
    /* L2, LogSum and LogSumExp go through double: a result outside the
     * output type saturates to it (an int8 L2 of [127, 127], 179.6, wrapped
     * to -77; the int32 one of [INT32_MAX, INT32_MAX] to -1257966798) */
    {
        int64_t d2[1] = { 2 }, ax0 = 0;
        rlx_tensor *x8 = test_tensor(RLX_DTYPE_I8, 1, d2), *x32 = test_tensor(RLX_DTYPE_I32, 1, d2);
        ((int8_t *)x8->data)[0] = ((int8_t *)x8->data)[1] = INT8_MAX;
        ((int32_t *)x32->data)[0] = ((int32_t *)x32->data)[1] = INT32_MAX;
        rlx_tensor *y8 = run_reduce(OP_L2, AX_CONST_INPUT, x8, &ax0, 1, 0, -1, NULL);
        rlx_tensor *y32 = run_reduce(OP_L2, AX_CONST_INPUT, x32, &ax0, 1, 0, -1, NULL);
        CHECK_MSG(y8 && geti(y8, 0) == INT8_MAX, "int8 L2 of [127, 127]: %lld", y8 ? (long long)geti(y8, 0) : 0LL);
        CHECK_MSG(y32 && geti(y32, 0) == INT32_MAX, "int32 L2 of [INT32_MAX, INT32_MAX]: %lld",
                  y32 ? (long long)geti(y32, 0) : 0LL);
        rlx_tensor_destroy(y8);
        rlx_tensor_destroy(y32);
        /* over an empty set LogSum is -inf: the type's minimum, for every width */
        int64_t d0[1] = { 0 };
        rlx_tensor *e32 = test_tensor(RLX_DTYPE_I32, 1, d0);
        rlx_tensor *ye = run_reduce(OP_LOGSUM, AX_CONST_INPUT, e32, &ax0, 1, 0, -1, NULL);
        CHECK_MSG(ye && geti(ye, 0) == INT32_MIN, "int32 LogSum of nothing: %lld", ye ? (long long)geti(ye, 0) : 0LL);
        rlx_tensor_destroy(ye);
        rlx_tensor_destroy(e32);
        rlx_tensor_destroy(x8);
        rlx_tensor_destroy(x32);
    }
    /* ReduceMax / ReduceMin on bool (version 20): any / all */
    int64_t db[2] = { 6, 3 }, ax = 1;
    rlx_tensor *xb = rnd(RLX_DTYPE_BOOL, 2, db, 0, 1);
    for (int op = OP_MAX; op <= OP_MIN; op++) {
        int64_t one = 1;
        const rlx_tensor *in[2] = { xb, NULL };
        in[1] = test_tensor_i64(1, &one, &ax);
        int konst[2] = { 0, 1 };
        rlx_tensor **out = NULL;
        CHECK_OK(run(k_ops[op], 20, 2, in, konst, 1, 0, NULL, &out));
        if (out) {
            int bad = 0;
            for (int i = 0; i < 6; i++) {
                int any = 0, every = 1;
                for (int j = 0; j < 3; j++) {
                    int v = (int)geti(xb, (size_t)(i * 3 + j));
                    any |= v, every &= v;
                }
                if (geti(out[0], (size_t)i) != (op == OP_MAX ? any : every)) bad++;
            }
            CHECK_MSG(out[0]->dtype == RLX_DTYPE_BOOL && bad == 0, "%s bool: %d rows differ", k_ops[op], bad);
        }
        test_free_outputs(out, 1);
        rlx_tensor_destroy((rlx_tensor *)in[1]);
    }
    rlx_tensor_destroy(xb);
}

/* LogSumExp subtracts the maximum: inputs near 1000 would overflow exp. */
/* LayerNormalization of a row whose x - mean passes f32's range (a
 * tester's finding: [3.3e38, 3.3e38, -3.3e38] gave -inf where the answer is
 * -1.414): the f32 fast path forms such rows in double. */
static void test_layernorm_near_f32_max(void) {
    int64_t d[2] = { 2, 3 }, len = 3;
    rlx_tensor *x = test_tensor_f32(2, d, (float[]){ 3.3e38f, 3.3e38f, -3.3e38f, 1.0f, 2.0f, 4.0f });
    rlx_tensor *sc = test_tensor_f32(1, &len, (float[]){ 1.0f, 1.0f, 1.0f });
    const rlx_tensor *in[2] = { x, sc };
    int konst[2] = { 0, 1 };
    rlx_attr a[1] = { RLX_ATTR_I("axis", -1) };
    rlx_tensor **out = NULL;
    CHECK_OK(run("LayerNormalization", 17, 2, in, konst, 1, 1, a, &out));
    if (out) {
        const float *y = out[0]->data;
        double m = 7.0 / 3.0, sd = sqrt(((1 - m) * (1 - m) + (2 - m) * (2 - m) + (4 - m) * (4 - m)) / 3 + 1e-5);
        double want[6] = { sqrt(0.5), sqrt(0.5), -sqrt(2.0), (1 - m) / sd, (2 - m) / sd, (4 - m) / sd };
        for (int i = 0; i < 6; i++) CHECK_MSG(fabs(y[i] - want[i]) < 1e-5, "y[%d] = %g, want %g", i, y[i], want[i]);
    }
    test_free_outputs(out, 1);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(sc);
}

static void test_reduce_logsumexp_large(void) {
    int64_t dims[2] = { 3, 7 }, ax = 1;
    rlx_tensor *x = rnd(RLX_DTYPE_F32, 2, dims, 998, 1002);
    rlx_tensor *y = run_reduce(OP_LSE, AX_CONST_INPUT, x, &ax, 1, 0, -1, NULL);
    bool mask[2] = { false, true };
    rlx_tensor *want = expect_reduce(OP_LSE, x, mask, false, 1000.0);
    if (y) CHECK_MSG(test_allclose(y, want, F32_RTOL, F32_ATOL), "ReduceLogSumExp near 1000 (rtol %g)", F32_RTOL);
    rlx_tensor_destroy(y);
    rlx_tensor_destroy(want);
    rlx_tensor_destroy(x);
}

/* Axes computed at run time: shape inference leaves dims dynamic (rank kept
 * with keepdims=1, or one less from an axes input of static length 1; a
 * longer list may give an axis twice, which counts once, so its rank is
 * the run's: [0, 0] of rank 3 leaves rank 2, not 1). */
static void test_reduce_dynamic_axes_inference(void) {
    struct { int keep; int64_t axes_len; int want_rank; } cases[] = { { 1, -1, 3 }, { 0, 1, 2 }, { 0, 2, -1 },
                                                                       { 0, -1, -1 } };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        rlx_model *m = NULL;
        CHECK_OK(rlx_model_create(18, &m));
        int64_t xd[3] = { 1, 4, 5 };
        CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 3, xd, NULL));
        CHECK_OK(rlx_model_add_input(m, "axes", RLX_DTYPE_I64, 1, &cases[c].axes_len, NULL));
        rlx_attr at[1] = { RLX_ATTR_I("keepdims", cases[c].keep) };
        CHECK_OK(rlx_model_add_node(m, "ReduceMean", "rm", 2, (const char *[]){ "x", "axes" }, 1,
                                    (const char *[]){ "y" }, 1, at));
        CHECK_OK(rlx_model_add_output(m, "y"));
        CHECK_OK(rlx_model_finish(m));
        rlx_value_info info;
        CHECK_OK(rlx_model_output_info(m, 0, &info));
        CHECK_MSG(info.rank == cases[c].want_rank, "case %zu: rank %d, want %d", c, info.rank, cases[c].want_rank);
        if (info.rank == 3) /* the size-1 dim stays 1 whatever is reduced */
            CHECK(info.dims[0] == 1 && info.dims[1] == -1 && info.dims[2] == -1);
        if (info.rank == 2) CHECK(info.dims[0] == -1 && info.dims[1] == -1);
        rlx_model_destroy(m);
    }
}

/* ================================================================ ArgMax / ArgMin */

static void test_argmax_argmin(void) {
    int64_t dims[3] = { 3, 4, 5 };
    /* values in {0, 1, 2}: many ties */
    rlx_tensor *x = test_tensor(RLX_DTYPE_F32, 3, dims);
    for (size_t i = 0; i < 60; i++) ((float *)x->data)[i] = floorf(test_rand_uniform(0, 3));
    rlx_tensor *xi = rnd(RLX_DTYPE_I32, 3, dims, -2, 2);
    for (int t = 0; t < 2; t++) {
        const rlx_tensor *src = t ? xi : x;
        for (int is_max = 0; is_max < 2; is_max++)
            for (int axis = -3; axis < 3; axis++)
                for (int keep = 0; keep < 2; keep++)
                    for (int last = 0; last < 2; last++) {
                        const char *op = is_max ? "ArgMax" : "ArgMin";
                        rlx_attr at[3] = { RLX_ATTR_I("axis", axis), RLX_ATTR_I("keepdims", keep),
                                           RLX_ATTR_I("select_last_index", last) };
                        rlx_tensor **out = NULL;
                        CHECK_OK(run(op, 13, 1, &src, NULL, 1, 3, at, &out));
                        if (!out) continue;
                        int ax = axis < 0 ? axis + 3 : axis;
                        int64_t od[3];
                        int orank = 0;
                        for (int d = 0; d < 3; d++)
                            if (d != ax) od[orank++] = dims[d];
                            else if (keep) od[orank++] = 1;
                        CHECK_MSG(out[0]->dtype == RLX_DTYPE_I64 && same_dims(out[0], orank, od), "%s shape", op);
                        int bad = 0;
                        /* expected: scan the axis, remember the first/last index of the extreme */
                        for (int64_t a = 0; a < dims[0]; a++)
                            for (int64_t b = 0; b < dims[1]; b++)
                                for (int64_t c = 0; c < dims[2]; c++) {
                                    int64_t co[3] = { a, b, c };
                                    if (co[ax] != 0) continue;
                                    double ext = is_max ? -INFINITY : INFINITY;
                                    int64_t idx = -1;
                                    for (int64_t j = 0; j < dims[ax]; j++) {
                                        co[ax] = j;
                                        double v = getd(src, flat_of(co, dims, 3));
                                        bool better = is_max ? (last ? v >= ext : v > ext)
                                                             : (last ? v <= ext : v < ext);
                                        if (better) ext = v, idx = j;
                                    }
                                    co[ax] = 0;
                                    int64_t oco[3];
                                    int k = 0;
                                    for (int d = 0; d < 3; d++)
                                        if (d != ax || keep) oco[k++] = co[d];
                                    if (((const int64_t *)out[0]->data)[flat_of(oco, od, orank)] != idx) bad++;
                                }
                        CHECK_MSG(bad == 0, "%s %s axis %d keepdims %d select_last_index %d: %d wrong (exact)", op,
                                  rlx_dtype_name(src->dtype), axis, keep, last, bad);
                        test_free_outputs(out, 1);
                    }
    }
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(xi);
}

/* NaN in the reduced axis (ONNX is silent; docs/ops.md): a left fold from
 * element 0 in which a NaN at index 0 is the answer and a NaN elsewhere
 * never wins. The expected indices are onnxruntime 1.22's (CPU EP), run
 * for f32, f16 and f64 on these rows. Each row is reduced contiguously
 * (x [13, 4], axis 1: the f32 fast path) and strided (its transpose
 * [4, 13], axis 0: the reference loop), outputs checked exactly. */
static void test_arg_nan(void) {
    static const struct {
        float v[4];
        int64_t want[4]; /* ArgMax, ArgMax select_last, ArgMin, ArgMin select_last */
    } rows[] = {
        { { NAN, 1, 3, 2 }, { 0, 0, 0, 0 } },         { { 1, NAN, 3, 2 }, { 2, 2, 0, 0 } },
        { { 1, 3, NAN, 2 }, { 1, 1, 0, 0 } },         { { 1, 3, 2, NAN }, { 1, 1, 0, 0 } },
        { { NAN, NAN, NAN, NAN }, { 0, 0, 0, 0 } },   { { 1, NAN, 3, NAN }, { 2, 2, 0, 0 } },
        { { 3, NAN, 3, 1 }, { 0, 2, 3, 3 } },         { { 3, 3, NAN, 1 }, { 0, 1, 3, 3 } },
        { { 1, NAN, 1, 3 }, { 3, 3, 0, 2 } },         { { NAN, 3, 3, 1 }, { 0, 0, 0, 0 } },
        { { 3, 1, 3, NAN }, { 0, 2, 1, 1 } },         { { NAN, 1, 3, NAN }, { 0, 0, 0, 0 } },
        { { -INFINITY, NAN, INFINITY, 0 }, { 2, 2, 0, 0 } },
    };
    enum { R = sizeof rows / sizeof rows[0] };
    static const rlx_dtype dts[3] = { RLX_DTYPE_F32, RLX_DTYPE_F16, RLX_DTYPE_F64 };
    for (int d = 0; d < 3; d++)
        for (int strided = 0; strided < 2; strided++) {
            int64_t dims[2] = { strided ? 4 : R, strided ? R : 4 };
            rlx_tensor *x = test_tensor(dts[d], 2, dims);
            for (int r = 0; r < R; r++)
                for (int j = 0; j < 4; j++) {
                    size_t i = strided ? (size_t)j * R + (size_t)r : (size_t)r * 4 + (size_t)j;
                    float v = rows[r].v[j];
                    if (dts[d] == RLX_DTYPE_F32) ((float *)x->data)[i] = v;
                    else if (dts[d] == RLX_DTYPE_F64) ((double *)x->data)[i] = v;
                    else ((uint16_t *)x->data)[i] = rlx_f32_to_f16(v);
                }
            for (int c = 0; c < 4; c++) {
                rlx_attr at[3] = { RLX_ATTR_I("axis", strided ? 0 : 1), RLX_ATTR_I("keepdims", 0),
                                   RLX_ATTR_I("select_last_index", c & 1) };
                rlx_tensor **out = NULL;
                const char *op = c < 2 ? "ArgMax" : "ArgMin";
                CHECK_OK(run(op, 13, 1, (const rlx_tensor *[]){ x }, NULL, 1, 3, at, &out));
                if (!out) continue;
                CHECK(out[0]->dtype == RLX_DTYPE_I64 && rlx_tensor_numel(out[0]) == R);
                for (int r = 0; r < R && rlx_tensor_numel(out[0]) == R; r++) {
                    int64_t got = ((const int64_t *)out[0]->data)[r];
                    CHECK_MSG(got == rows[r].want[c],
                              "%s %s select_last_index %d %s, row [%g %g %g %g]: %lld, want %lld", op,
                              rlx_dtype_name(dts[d]), c & 1, strided ? "strided" : "contiguous", rows[r].v[0],
                              rows[r].v[1], rows[r].v[2], rows[r].v[3], (long long)got, (long long)rows[r].want[c]);
                }
                test_free_outputs(out, 1);
            }
            rlx_tensor_destroy(x);
        }
}

/* ================================================================ Einsum */

static rlx_tensor *einsum(const char *eq, int n, const rlx_tensor *const *in) {
    rlx_attr at[1] = { RLX_ATTR_S("equation", eq) };
    rlx_tensor **out = NULL;
    CHECK_OK(run("Einsum", 12, n, in, NULL, 1, 1, at, &out));
    rlx_tensor *y = out ? out[0] : NULL;
    free(out);
    return y;
}

/* Compares y (any float/int dtype) with want (double values, shape wdims). */
static void check_einsum(const char *eq, const rlx_tensor *y, int rank, const int64_t *wdims, const double *want,
                         double tol) {
    CHECK_MSG(y && same_dims(y, rank, wdims), "'%s': shape", eq);
    if (!y || !same_dims(y, rank, wdims)) return;
    int bad = 0;
    size_t n = numel_of(wdims, rank);
    for (size_t i = 0; i < n; i++)
        if (!(fabs(getd(y, i) - want[i]) <= tol * (1 + fabs(want[i])))) bad++;
    CHECK_MSG(bad == 0, "'%s': %d of %zu elements differ (tolerance %g relative)", eq, bad, n, tol);
}

#define A2(t, i, j, d1) getd((t), (size_t)((i) * (d1) + (j)))
#define A3(t, i, j, k, d1, d2) getd((t), (size_t)(((i) * (d1) + (j)) * (d2) + (k)))

static void test_einsum(void) {
    const double tol = 1e-5; /* f32 products summed in double, rounded once */
    double w[4096];
    int64_t d34[2] = { 3, 4 }, d45[2] = { 4, 5 }, d44[2] = { 4, 4 };
    rlx_tensor *a = rnd(RLX_DTYPE_F32, 2, d34, -1, 1), *b = rnd(RLX_DTYPE_F32, 2, d45, -1, 1);
    rlx_tensor *sq = rnd(RLX_DTYPE_F32, 2, d44, -1, 1);
    /* matmul, explicit and implicit */
    const char *mm_eqs[2] = { "ij,jk->ik", "ij,jk" };
    for (int e = 0; e < 2; e++) {
        const rlx_tensor *in[2] = { a, b };
        rlx_tensor *y = einsum(mm_eqs[e], 2, in);
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 5; k++) {
                double s = 0;
                for (int j = 0; j < 4; j++) s += A2(a, i, j, 4) * A2(b, j, k, 5);
                w[i * 5 + k] = s;
            }
        check_einsum(mm_eqs[e], y, 2, (int64_t[]){ 3, 5 }, w, tol);
        rlx_tensor_destroy(y);
    }
    /* batched matmul */
    {
        int64_t da[3] = { 2, 3, 4 }, db[3] = { 2, 4, 5 };
        rlx_tensor *x = rnd(RLX_DTYPE_F32, 3, da, -1, 1), *z = rnd(RLX_DTYPE_F32, 3, db, -1, 1);
        const rlx_tensor *in[2] = { x, z };
        rlx_tensor *y = einsum("bij,bjk->bik", 2, in);
        for (int bb = 0; bb < 2; bb++)
            for (int i = 0; i < 3; i++)
                for (int k = 0; k < 5; k++) {
                    double s = 0;
                    for (int j = 0; j < 4; j++) s += A3(x, bb, i, j, 3, 4) * A3(z, bb, j, k, 4, 5);
                    w[(bb * 3 + i) * 5 + k] = s;
                }
        check_einsum("bij,bjk->bik", y, 3, (int64_t[]){ 2, 3, 5 }, w, tol);
        rlx_tensor_destroy(y);
        rlx_tensor_destroy(x);
        rlx_tensor_destroy(z);
    }
    /* transpose, explicit and implicit ("ba" sorts to "ab") */
    {
        const char *eqs[2] = { "ij->ji", "ba" };
        for (int e = 0; e < 2; e++) {
            rlx_tensor *y = einsum(eqs[e], 1, (const rlx_tensor *[]){ a });
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 4; j++) w[j * 3 + i] = A2(a, i, j, 4);
            check_einsum(eqs[e], y, 2, (int64_t[]){ 4, 3 }, w, 0);
            rlx_tensor_destroy(y);
        }
    }
    /* trace (explicit and implicit) and diagonal */
    {
        const char *eqs[2] = { "ii->", "ii" };
        for (int e = 0; e < 2; e++) {
            rlx_tensor *y = einsum(eqs[e], 1, (const rlx_tensor *[]){ sq });
            w[0] = 0;
            for (int i = 0; i < 4; i++) w[0] += A2(sq, i, i, 4);
            check_einsum(eqs[e], y, 0, NULL, w, tol);
            rlx_tensor_destroy(y);
        }
        rlx_tensor *y = einsum("ii->i", 1, (const rlx_tensor *[]){ sq });
        for (int i = 0; i < 4; i++) w[i] = A2(sq, i, i, 4);
        check_einsum("ii->i", y, 1, (int64_t[]){ 4 }, w, 0);
        rlx_tensor_destroy(y);
    }
    /* outer product */
    {
        int64_t d3 = 3, d4 = 4;
        rlx_tensor *u = rnd(RLX_DTYPE_F32, 1, &d3, -1, 1), *v = rnd(RLX_DTYPE_F32, 1, &d4, -1, 1);
        rlx_tensor *y = einsum("i,j->ij", 2, (const rlx_tensor *[]){ u, v });
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) w[i * 4 + j] = getd(u, (size_t)i) * getd(v, (size_t)j);
        check_einsum("i,j->ij", y, 2, (int64_t[]){ 3, 4 }, w, tol);
        rlx_tensor_destroy(y);
        rlx_tensor_destroy(u);
        rlx_tensor_destroy(v);
    }
    /* ellipsis with broadcasting: [2,1,3,4] x [5,4,2] -> [2,5,3,2] */
    {
        int64_t da[4] = { 2, 1, 3, 4 }, db[3] = { 5, 4, 2 };
        rlx_tensor *x = rnd(RLX_DTYPE_F32, 4, da, -1, 1), *z = rnd(RLX_DTYPE_F32, 3, db, -1, 1);
        rlx_tensor *y = einsum("...ij,...jk->...ik", 2, (const rlx_tensor *[]){ x, z });
        for (int p = 0; p < 2; p++)
            for (int q = 0; q < 5; q++)
                for (int i = 0; i < 3; i++)
                    for (int k = 0; k < 2; k++) {
                        double s = 0;
                        for (int j = 0; j < 4; j++)
                            s += getd(x, (size_t)((p * 3 + i) * 4 + j)) * getd(z, (size_t)((q * 4 + j) * 2 + k));
                        w[((p * 5 + q) * 3 + i) * 2 + k] = s;
                    }
        check_einsum("...ij,...jk->...ik", y, 4, (int64_t[]){ 2, 5, 3, 2 }, w, tol);
        rlx_tensor_destroy(y);
        rlx_tensor_destroy(x);
        rlx_tensor_destroy(z);
    }
    /* batch diagonal with spaces in the equation (as in the ONNX node test) */
    {
        int64_t d[3] = { 3, 5, 5 };
        rlx_tensor *x = rnd(RLX_DTYPE_F64, 3, d, -1, 1);
        rlx_tensor *y = einsum("...ii ->...i", 1, (const rlx_tensor *[]){ x });
        for (int p = 0; p < 3; p++)
            for (int i = 0; i < 5; i++) w[p * 5 + i] = A3(x, p, i, i, 5, 5);
        check_einsum("...ii ->...i", y, 2, (int64_t[]){ 3, 5 }, w, 0);
        CHECK(y && y->dtype == RLX_DTYPE_F64);
        rlx_tensor_destroy(y);
        rlx_tensor_destroy(x);
    }
    /* sums over a subset, and over everything */
    {
        rlx_tensor *y = einsum("ij->i", 1, (const rlx_tensor *[]){ a });
        for (int i = 0; i < 3; i++) {
            w[i] = 0;
            for (int j = 0; j < 4; j++) w[i] += A2(a, i, j, 4);
        }
        check_einsum("ij->i", y, 1, (int64_t[]){ 3 }, w, tol);
        rlx_tensor_destroy(y);
        y = einsum("ij->", 1, (const rlx_tensor *[]){ a });
        w[0] = 0;
        for (int i = 0; i < 12; i++) w[0] += getd(a, (size_t)i);
        check_einsum("ij->", y, 0, NULL, w, tol);
        rlx_tensor_destroy(y);
    }
    /* three operands, a chain: ij,jk,kl->il */
    {
        int64_t dc[2] = { 5, 2 };
        rlx_tensor *c = rnd(RLX_DTYPE_F32, 2, dc, -1, 1);
        rlx_tensor *y = einsum("ij,jk,kl->il", 3, (const rlx_tensor *[]){ a, b, c });
        for (int i = 0; i < 3; i++)
            for (int l = 0; l < 2; l++) {
                double s = 0;
                for (int j = 0; j < 4; j++)
                    for (int k = 0; k < 5; k++) s += A2(a, i, j, 4) * A2(b, j, k, 5) * A2(c, k, l, 2);
                w[i * 2 + l] = s;
            }
        check_einsum("ij,jk,kl->il", y, 2, (int64_t[]){ 3, 2 }, w, tol);
        rlx_tensor_destroy(y);
        rlx_tensor_destroy(c);
    }
    /* mixed-case letters, implicit scalar output: bA,Ab (both letters twice) */
    {
        rlx_tensor *at = einsum("ij->ji", 1, (const rlx_tensor *[]){ a }); /* [4,3] */
        rlx_tensor *y = at ? einsum("bA,Ab", 2, (const rlx_tensor *[]){ a, at }) : NULL;
        w[0] = 0;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) w[0] += A2(a, i, j, 4) * A2(a, i, j, 4);
        check_einsum("bA,Ab", y, 0, NULL, w, tol);
        rlx_tensor_destroy(y);
        rlx_tensor_destroy(at);
    }
    /* integer Einsum (exact) and a scalar "->" */
    {
        int64_t d1[2] = { 3, 4 }, d2[2] = { 4, 2 };
        rlx_tensor *x = rnd(RLX_DTYPE_I32, 2, d1, -5, 5), *z = rnd(RLX_DTYPE_I32, 2, d2, -5, 5);
        rlx_tensor *y = einsum("ij,jk->ik", 2, (const rlx_tensor *[]){ x, z });
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 2; k++) {
                double s = 0;
                for (int j = 0; j < 4; j++) s += A2(x, i, j, 4) * A2(z, j, k, 2);
                w[i * 2 + k] = s;
            }
        check_einsum("ij,jk->ik (i32)", y, 2, (int64_t[]){ 3, 2 }, w, 0);
        CHECK(y && y->dtype == RLX_DTYPE_I32);
        rlx_tensor_destroy(y);
        rlx_tensor_destroy(x);
        rlx_tensor_destroy(z);
        float five = 5.0f;
        rlx_tensor *s = test_tensor_f32(0, NULL, &five);
        y = einsum("->", 1, (const rlx_tensor *[]){ s });
        w[0] = 5.0;
        check_einsum("->", y, 0, NULL, w, 0);
        rlx_tensor_destroy(y);
        rlx_tensor_destroy(s);
    }
    rlx_tensor_destroy(a);
    rlx_tensor_destroy(b);
    rlx_tensor_destroy(sq);
}

/* ================================================================ normalisations */

/* Row statistics by E[x^2] - E[x]^2 (the kernels use two passes). */
static void stats(const double *v, size_t n, double *mean, double *var) {
    double s = 0, q = 0;
    for (size_t i = 0; i < n; i++) s += v[i], q += v[i] * v[i];
    *mean = s / (double)n;
    *var = q / (double)n - *mean * *mean;
}

#define NORM_TOL 1e-5 /* rtol and atol: double statistics, outputs rounded to f32 */

/* Element of p (broadcasting unidirectionally to a shape of rank xrank) at
 * the coordinates co of that shape: right-aligned, size-1 dims pinned to 0. */
static double bcast_get(const rlx_tensor *p, const int64_t *co, int xrank) {
    int64_t pc[8];
    for (int d = 0; d < p->rank; d++) {
        int64_t c = co[xrank - p->rank + d];
        pc[d] = p->dims[d] == 1 ? 0 : c;
    }
    return getd(p, flat_of(pc, p->dims, p->rank));
}

static void test_layer_norm(void) {
    int64_t xd[3] = { 2, 3, 4 };
    rlx_tensor *x = rnd(RLX_DTYPE_F32, 3, xd, -2, 2);
    for (int c = 0; c < 4; c++) {
        int axis = c == 0 ? -1 : c == 1 ? 1 : c == 2 ? -2 : 2;
        int ax = axis < 0 ? axis + 3 : axis;
        bool with_b = c != 2;
        int srank = 3 - ax;
        /* case 3: a Scale that differs per row, [2, 1, 4] */
        int64_t sd3[3] = { 2, 1, 4 };
        rlx_tensor *sc = c == 3 ? rnd(RLX_DTYPE_F32, 3, sd3, 0.5f, 1.5f)
                                : rnd(RLX_DTYPE_F32, srank, xd + ax, 0.5f, 1.5f);
        rlx_tensor *b = rnd(RLX_DTYPE_F32, srank, xd + ax, -1, 1);
        rlx_attr at[2] = { RLX_ATTR_I("axis", axis), RLX_ATTR_F("epsilon", 1e-3f) };
        const rlx_tensor *in[3] = { x, sc, with_b ? b : NULL };
        rlx_tensor **out = NULL;
        CHECK_OK(run("LayerNormalization", 17, 3, in, NULL, 3, 2, at, &out));
        if (out) {
            size_t rows = numel_of(xd, ax), len = numel_of(xd + ax, 3 - ax);
            int bad = 0;
            double v[64];
            for (size_t r = 0; r < rows; r++) {
                for (size_t j = 0; j < len; j++) v[j] = getd(x, r * len + j);
                double m, var;
                stats(v, len, &m, &var);
                double inv = 1.0 / sqrt(var + (double)1e-3f);
                for (size_t j = 0; j < len; j++) {
                    int64_t co[3];
                    coords_of(r * len + j, xd, 3, co);
                    double want = (v[j] - m) * inv * bcast_get(sc, co, 3) + (with_b ? bcast_get(b, co, 3) : 0.0);
                    if (!(fabs(getd(out[0], r * len + j) - want) <= NORM_TOL * (1 + fabs(want)))) bad++;
                }
                if (!(fabs(getd(out[1], r) - m) <= NORM_TOL)) bad++;
                if (!(fabs(getd(out[2], r) - inv) <= NORM_TOL * inv)) bad++;
            }
            int64_t md[3] = { 2, ax >= 2 ? 3 : 1, 1 };
            CHECK_MSG(same_dims(out[1], 3, md) && same_dims(out[2], 3, md) && out[1]->dtype == RLX_DTYPE_F32,
                      "LayerNormalization axis %d: Mean/InvStdDev shape", axis);
            CHECK_MSG(bad == 0, "LayerNormalization axis %d: %d values differ (tolerance %g)", axis, bad, NORM_TOL);
        }
        test_free_outputs(out, 3);
        rlx_tensor_destroy(sc);
        rlx_tensor_destroy(b);
    }
    /* RMSNormalization-23 over the last two dims */
    {
        rlx_tensor *sc = rnd(RLX_DTYPE_F32, 1, xd + 2, 0.5f, 1.5f); /* [4] broadcasts over [3, 4] */
        rlx_attr at[1] = { RLX_ATTR_I("axis", -2) };
        const rlx_tensor *in[2] = { x, sc };
        rlx_tensor **out = NULL;
        CHECK_OK(run("RMSNormalization", 23, 2, in, NULL, 1, 1, at, &out));
        if (out) {
            int bad = 0;
            for (int r = 0; r < 2; r++) {
                double q = 0;
                for (int j = 0; j < 12; j++) q += getd(x, (size_t)(r * 12 + j)) * getd(x, (size_t)(r * 12 + j));
                double rms = sqrt(q / 12 + (double)1e-5f);
                for (int j = 0; j < 12; j++) {
                    double want = getd(x, (size_t)(r * 12 + j)) / rms * getd(sc, (size_t)(j % 4));
                    if (!(fabs(getd(out[0], (size_t)(r * 12 + j)) - want) <= NORM_TOL * (1 + fabs(want)))) bad++;
                }
            }
            CHECK_MSG(bad == 0, "RMSNormalization: %d values differ (tolerance %g)", bad, NORM_TOL);
        }
        test_free_outputs(out, 1);
        rlx_tensor_destroy(sc);
    }
    rlx_tensor_destroy(x);
}

/* GroupNormalization-18 ([G] scale/bias) and -21 ([C]); InstanceNormalization. */
static void test_group_instance_norm(void) {
    int64_t xd[4] = { 2, 6, 3, 2 };
    const int64_t G = 3, C = 6, S = 6;
    rlx_tensor *x = rnd(RLX_DTYPE_F32, 4, xd, -2, 2);
    for (int ver = 0; ver < 3; ver++) { /* 0: Group-18, 1: Group-21, 2: Instance */
        int64_t np = ver == 0 ? G : C;
        rlx_tensor *sc = rnd(RLX_DTYPE_F32, 1, &np, 0.5f, 1.5f), *b = rnd(RLX_DTYPE_F32, 1, &np, -1, 1);
        const rlx_tensor *in[3] = { x, sc, b };
        rlx_attr at[2] = { RLX_ATTR_I("num_groups", G), RLX_ATTR_F("epsilon", 1e-4f) };
        rlx_tensor **out = NULL;
        const char *op = ver == 2 ? "InstanceNormalization" : "GroupNormalization";
        CHECK_OK(run(op, ver == 0 ? 18 : 21, 3, in, NULL, 1, ver == 2 ? 1 : 2, ver == 2 ? at + 1 : at, &out));
        if (out) {
            int64_t groups = ver == 2 ? C : G, cpg = C / groups;
            int bad = 0;
            double v[64];
            for (int64_t n = 0; n < 2; n++)
                for (int64_t g = 0; g < groups; g++) {
                    size_t k = 0;
                    for (int64_t c = g * cpg; c < (g + 1) * cpg; c++)
                        for (int64_t s = 0; s < S; s++) v[k++] = getd(x, (size_t)((n * C + c) * S + s));
                    double m, var;
                    stats(v, k, &m, &var);
                    for (int64_t c = g * cpg; c < (g + 1) * cpg; c++)
                        for (int64_t s = 0; s < S; s++) {
                            size_t i = (size_t)((n * C + c) * S + s);
                            size_t pi = (size_t)(ver == 0 ? g : c);
                            double want = (getd(x, i) - m) / sqrt(var + (double)1e-4f) * getd(sc, pi) + getd(b, pi);
                            if (!(fabs(getd(out[0], i) - want) <= NORM_TOL * (1 + fabs(want)))) bad++;
                        }
                }
            CHECK_MSG(bad == 0, "%s (version case %d): %d values differ (tolerance %g)", op, ver, bad, NORM_TOL);
        }
        test_free_outputs(out, 1);
        rlx_tensor_destroy(sc);
        rlx_tensor_destroy(b);
    }
    rlx_tensor_destroy(x);
}

static void test_lp_mvn_lrn(void) {
    /* LpNormalization p = 1, 2 along axis 0 and -1; a zero row stays zero */
    int64_t d[2] = { 3, 4 };
    rlx_tensor *x = rnd(RLX_DTYPE_F32, 2, d, -2, 2);
    for (int j = 0; j < 4; j++) ((float *)x->data)[4 + j] = 0; /* row 1 is zero */
    for (int p = 1; p <= 2; p++)
        for (int axis = -1; axis <= 0; axis++) {
            rlx_attr at[2] = { RLX_ATTR_I("p", p), RLX_ATTR_I("axis", axis) };
            rlx_tensor **out = NULL;
            CHECK_OK(run("LpNormalization", 22, 1, (const rlx_tensor *[]){ x }, NULL, 1, 2, at, &out));
            if (!out) continue;
            int bad = 0;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 4; j++) {
                    double nrm = 0;
                    for (int t = 0; t < (axis == 0 ? 3 : 4); t++) {
                        double v = axis == 0 ? A2(x, t, j, 4) : A2(x, i, t, 4);
                        nrm += p == 1 ? fabs(v) : v * v;
                    }
                    if (p == 2) nrm = sqrt(nrm);
                    double want = nrm == 0 ? 0 : A2(x, i, j, 4) / nrm;
                    if (!(fabs(A2(out[0], i, j, 4) - want) <= NORM_TOL)) bad++;
                }
            CHECK_MSG(bad == 0, "LpNormalization p %d axis %d: %d values differ (tolerance %g)", p, axis, bad,
                      NORM_TOL);
            test_free_outputs(out, 1);
        }
    rlx_tensor_destroy(x);

    /* MeanVarianceNormalization: default axes [0,2,3] and axes [1,2]; the
     * expected value follows the ONNX function body literally. */
    int64_t d4[4] = { 2, 3, 4, 2 };
    x = rnd(RLX_DTYPE_F32, 4, d4, -2, 2);
    for (int c = 0; c < 2; c++) {
        int64_t axes[2] = { 1, 2 };
        rlx_attr at[1] = { RLX_ATTR_IS("axes", 2, axes) };
        rlx_tensor **out = NULL;
        CHECK_OK(run("MeanVarianceNormalization", 13, 1, (const rlx_tensor *[]){ x }, NULL, 1, c ? 1 : 0, at, &out));
        if (!out) continue;
        bool red[4] = { c == 0, c == 1, true, c == 0 };
        int bad = 0;
        for (size_t i = 0; i < 48; i++) {
            int64_t co[4], cc[4];
            coords_of(i, d4, 4, co);
            double s = 0, q = 0;
            size_t cnt = 0;
            for (size_t j = 0; j < 48; j++) {
                coords_of(j, d4, 4, cc);
                bool same = true;
                for (int k = 0; k < 4; k++) same &= red[k] || cc[k] == co[k];
                if (!same) continue;
                double v = getd(x, j);
                s += v, q += v * v, cnt++;
            }
            double ex = s / (double)cnt, ex2 = q / (double)cnt;
            double want = (getd(x, i) - ex) / (sqrt(ex2 - ex * ex) + 1e-9);
            if (!(fabs(getd(out[0], i) - want) <= NORM_TOL * (1 + fabs(want)))) bad++;
        }
        CHECK_MSG(bad == 0, "MeanVarianceNormalization case %d: %d values differ (tolerance %g)", c, bad, NORM_TOL);
        test_free_outputs(out, 1);
    }
    rlx_tensor_destroy(x);

    /* LRN, odd and even size */
    int64_t dl[4] = { 2, 5, 3, 2 };
    x = rnd(RLX_DTYPE_F32, 4, dl, -2, 2);
    for (int size = 3; size <= 4; size++) {
        rlx_attr at[4] = { RLX_ATTR_I("size", size), RLX_ATTR_F("alpha", 2e-2f), RLX_ATTR_F("beta", 0.5f),
                           RLX_ATTR_F("bias", 2.0f) };
        rlx_tensor **out = NULL;
        CHECK_OK(run("LRN", 13, 1, (const rlx_tensor *[]){ x }, NULL, 1, 4, at, &out));
        if (!out) continue;
        int bad = 0;
        for (size_t i = 0; i < 60; i++) {
            int64_t co[4];
            coords_of(i, dl, 4, co);
            double sq = 0;
            for (int64_t ch = 0; ch < 5; ch++) {
                /* window: c - floor((size-1)/2) .. c + ceil((size-1)/2) */
                if (ch < co[1] - (int64_t)floor((size - 1) / 2.0) || ch > co[1] + (int64_t)ceil((size - 1) / 2.0))
                    continue;
                int64_t cc[4] = { co[0], ch, co[2], co[3] };
                double v = getd(x, flat_of(cc, dl, 4));
                sq += v * v;
            }
            double want = getd(x, i) / pow((double)2.0f + (double)2e-2f / size * sq, (double)0.5f);
            if (!(fabs(getd(out[0], i) - want) <= NORM_TOL * (1 + fabs(want)))) bad++;
        }
        CHECK_MSG(bad == 0, "LRN size %d: %d values differ (tolerance %g)", size, bad, NORM_TOL);
        test_free_outputs(out, 1);
    }
    rlx_tensor_destroy(x);

    /* LRN f32 (the planes-over-threads path): AlexNet's window and
     * constants on more channels than the window and planes longer than
     * its 256-position blocks, bit for bit the formula in double with the
     * window in channel order (what the kernel promises) */
    int64_t dw[4] = { 2, 13, 17, 19 };
    x = rnd(RLX_DTYPE_F32, 4, dw, -3, 3);
    for (int size = 4; size <= 5; size++) {
        const float fa = 1e-4f * 40, fb = 0.75f, fk = 1.0f;
        rlx_attr at[4] = { RLX_ATTR_I("size", size), RLX_ATTR_F("alpha", fa), RLX_ATTR_F("beta", fb),
                           RLX_ATTR_F("bias", fk) };
        rlx_tensor **out = NULL;
        CHECK_OK(run("LRN", 13, 1, (const rlx_tensor *[]){ x }, NULL, 1, 4, at, &out));
        if (!out) continue;
        const float *px = x->data, *py = out[0]->data;
        int64_t sp = dw[2] * dw[3], before = (size - 1) / 2, after = size / 2;
        int bad = 0;
        for (int64_t n = 0; n < dw[0]; n++)
            for (int64_t c = 0; c < dw[1]; c++)
                for (int64_t q = 0; q < sp; q++) {
                    double sq = 0;
                    for (int64_t i = c - before; i <= c + after; i++) {
                        if (i < 0 || i >= dw[1]) continue;
                        double v = px[(n * dw[1] + i) * sp + q];
                        sq += v * v;
                    }
                    size_t at_i = (size_t)((n * dw[1] + c) * sp + q);
                    float want = (float)((double)px[at_i] / pow((double)fk + (double)fa / size * sq, (double)fb));
                    if (memcmp(&want, &py[at_i], sizeof want) != 0) bad++;
                }
        CHECK_MSG(bad == 0, "LRN f32 size %d [2,13,17,19]: %d values differ from the formula's bits", size, bad);
        test_free_outputs(out, 1);
    }
    rlx_tensor_destroy(x);
}

/* ================================================================ fast path */

/* Equal bit for bit (so -0 differs from +0), except that any NaN matches any
 * NaN: the sign of a NaN from arithmetic depends on operand order. */
static bool same_bits_or_nan(const rlx_tensor *a, const rlx_tensor *b) {
    if (a->dtype != RLX_DTYPE_F32 || b->dtype != RLX_DTYPE_F32 || a->nbytes != b->nbytes) return false;
    const float *pa = a->data, *pb = b->data;
    for (size_t i = 0; i < a->nbytes / 4; i++)
        if (!(isnan(pa[i]) && isnan(pb[i])) && memcmp(&pa[i], &pb[i], 4) != 0) return false;
    return true;
}

/* The f32 fast path (graph input: the CPU backend) must equal the reference
 * kernel (initializer input: constant folding) bit for bit. */
static void test_fast_path_matches_reference(void) {
    int64_t dims[4] = { 3, 5, 4, 6 };
    int64_t axsets[4][2] = { { 3, 3 }, { 1, 2 }, { 0, 0 }, { 0, 2 } };
    size_t nax[4] = { 1, 2, 1, 2 };
    int ops[7] = { OP_SUM, OP_MEAN, OP_MAX, OP_MIN, OP_SUMSQ, OP_L2, OP_L1 };
    for (int special = 0; special < 2; special++) {
    rlx_tensor *x = rnd(RLX_DTYPE_F32, 4, dims, -3, 3);
    if (special) { /* NaNs (first one wins) and signed zeros (order decides) */
        float *p = x->data;
        p[7] = NAN, p[100] = -NAN, p[101] = NAN;
        for (int i = 200; i < 360; i += 3) p[i] = (i & 1) ? 0.0f : -0.0f;
    }
    for (int o = 0; o < 7; o++)
        for (int s = 0; s < 4; s++) {
            int64_t one = (int64_t)nax[s];
            rlx_tensor *ax = test_tensor_i64(1, &one, axsets[s]);
            int opset = ops[o] == OP_SUM ? 13 : 18;
            const rlx_tensor *in[2] = { x, ax };
            int k_fast[2] = { 0, 1 }, k_ref[2] = { 1, 1 };
            rlx_tensor **fast = NULL, **ref = NULL;
            CHECK_OK(run(k_ops[ops[o]], opset, 2, in, k_fast, 1, 0, NULL, &fast));
            CHECK_OK(run(k_ops[ops[o]], opset, 2, in, k_ref, 1, 0, NULL, &ref));
            if (fast && ref)
                CHECK_MSG(same_bits_or_nan(fast[0], ref[0]),
                          "%s axes set %d special %d: fast path differs from the reference (exact)", k_ops[ops[o]], s,
                          special);
            test_free_outputs(fast, 1);
            test_free_outputs(ref, 1);
            rlx_tensor_destroy(ax);
        }
    rlx_tensor_destroy(x);
    }
}

/* Einsum's f32 fast path against the reference kernel (constant folding),
 * bit for bit, on equations with one, two and three operands. */
static void test_einsum_fast_matches_reference(void) {
    struct { const char *eq; int n; int r[3]; int64_t d[3][4]; } cases[] = {
        { "ij,jk->ik", 2, { 2, 2 }, { { 7, 9 }, { 9, 5 } } },
        { "bij,bkj->bik", 2, { 3, 3 }, { { 2, 3, 8 }, { 2, 4, 8 } } },
        { "...ij,...jk->...ik", 2, { 4, 3 }, { { 2, 1, 3, 4 }, { 5, 4, 2 } } },
        { "ii->", 1, { 2 }, { { 6, 6 } } },
        { "ijk->j", 1, { 3 }, { { 3, 4, 5 } } },
        { "ij,jk,kl->il", 3, { 2, 2, 2 }, { { 3, 4 }, { 4, 5 }, { 5, 2 } } },
        { "bhqd,bhkd->bhqk", 2, { 4, 4 }, { { 1, 2, 5, 8 }, { 1, 2, 6, 8 } } },
        { "ijkl->j", 1, { 4 }, { { 2, 3, 4, 5 } } },               /* three summed labels: carries */
        { "ijk,ikl->", 2, { 3, 3 }, { { 3, 2, 4 }, { 3, 4, 2 } } }, /* four summed labels */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        rlx_tensor *t[3] = { NULL, NULL, NULL };
        for (int i = 0; i < cases[c].n; i++) t[i] = rnd(RLX_DTYPE_F32, cases[c].r[i], cases[c].d[i], -2, 2);
        rlx_attr at[1] = { RLX_ATTR_S("equation", cases[c].eq) };
        int k_fast[3] = { 0, 0, 0 }, k_ref[3] = { 1, 1, 1 };
        rlx_tensor **fast = NULL, **ref = NULL;
        CHECK_OK(run("Einsum", 12, cases[c].n, (const rlx_tensor *const *)t, k_fast, 1, 1, at, &fast));
        CHECK_OK(run("Einsum", 12, cases[c].n, (const rlx_tensor *const *)t, k_ref, 1, 1, at, &ref));
        if (fast && ref)
            CHECK_MSG(same_bits_or_nan(fast[0], ref[0]), "Einsum '%s': fast path differs from the reference (exact)",
                      cases[c].eq);
        test_free_outputs(fast, 1);
        test_free_outputs(ref, 1);
        for (int i = 0; i < 3; i++) rlx_tensor_destroy(t[i]);
    }
}

/* ================================================================ errors */

static void test_errors(void) {
    int64_t d3[3] = { 2, 3, 4 };
    rlx_tensor *x = rnd(RLX_DTYPE_F32, 3, d3, -1, 1);
    const rlx_tensor *in1[1] = { x };
    rlx_tensor **out = NULL;
    int64_t bad_axes[1] = { 3 }, dup_axes[2] = { 1, -2 };
    rlx_attr at1[1] = { RLX_ATTR_IS("axes", 1, bad_axes) };
    CHECK_FAILS(run("ReduceSum", 11, 1, in1, NULL, 1, 1, at1, &out), RLX_ERR_INVALID_MODEL,
                "node 'node0' (ReduceSum): axes[0] = 3 is out of range");
    /* an axis given twice counts once, as onnxruntime reads it: the same
     * bits as the axis once, from the attribute (opset 13) and the input
     * (opset 18, a constant) */
    int64_t one_axis[1] = { 1 }, two = 2;
    rlx_attr at2[1] = { RLX_ATTR_IS("axes", 2, dup_axes) }, at2_once[1] = { RLX_ATTR_IS("axes", 1, one_axis) };
    rlx_tensor **once = NULL, **dup18 = NULL;
    CHECK_OK(run("ReduceMean", 13, 1, in1, NULL, 1, 1, at2, &out));
    CHECK_OK(run("ReduceMean", 13, 1, in1, NULL, 1, 1, at2_once, &once));
    rlx_tensor *dup_in = test_tensor_i64(1, &two, dup_axes);
    const rlx_tensor *in_dup[2] = { x, dup_in };
    int kdup[2] = { 0, 1 };
    CHECK_OK(run("ReduceMean", 18, 2, in_dup, kdup, 1, 0, NULL, &dup18));
    if (out && once && dup18) {
        CHECK(out[0]->rank == 3 && out[0]->dims[1] == 1 && once[0]->dims[1] == 1);
        CHECK(rlx_tensor_numel(out[0]) == 8 && rlx_tensor_numel(dup18[0]) == 8);
        CHECK(memcmp(out[0]->data, once[0]->data, 8 * sizeof(float)) == 0);
        CHECK(memcmp(dup18[0]->data, once[0]->data, 8 * sizeof(float)) == 0);
    }
    test_free_outputs(out, 1);
    test_free_outputs(once, 1);
    test_free_outputs(dup18, 1);
    rlx_tensor_destroy(dup_in);
    out = NULL;
    /* axes out of range in a constant input, and in a run-time input */
    int64_t one = 1;
    rlx_tensor *ax = test_tensor_i64(1, &one, (int64_t[]){ -4 });
    const rlx_tensor *in2[2] = { x, ax };
    int kc[2] = { 0, 1 }, kr[2] = { 0, 0 };
    CHECK_FAILS(run("ReduceMax", 18, 2, in2, kc, 1, 0, NULL, &out), RLX_ERR_INVALID_MODEL,
                "node 'node0' (ReduceMax): axes[0] = -4 is out of range");
    CHECK_FAILS(run("ReduceMax", 18, 2, in2, kr, 1, 0, NULL, &out), RLX_ERR_INVALID_ARGUMENT,
                "node 'node0' (ReduceMax): axes[0] = -4 is out of range");
    CHECK(out == NULL);
    /* the axes attribute at a version that takes an input */
    CHECK_FAILS(run("ReduceL1", 18, 1, in1, NULL, 1, 1, at1, &out), RLX_ERR_INVALID_MODEL,
                "attribute 'axes' is not an attribute of ReduceL1-18 at opset 18 (it was removed in ReduceL1-18; give it as an input)");
    rlx_attr at3[1] = { RLX_ATTR_I("axis", -4) };
    CHECK_FAILS(run("ArgMax", 13, 1, in1, NULL, 1, 1, at3, &out), RLX_ERR_INVALID_MODEL,
                "node 'node0' (ArgMax): axis -4 is out of range");
    rlx_attr at4[1] = { RLX_ATTR_I("p", 3) };
    CHECK_FAILS(run("LpNormalization", 22, 1, in1, NULL, 1, 1, at4, &out), RLX_ERR_INVALID_MODEL, "only 1 and 2");
    rlx_attr at5[1] = { RLX_ATTR_I("axis", 3) };
    rlx_tensor *sc = rnd(RLX_DTYPE_F32, 1, d3 + 2, 0, 1);
    const rlx_tensor *in_ln[2] = { x, sc };
    CHECK_FAILS(run("LayerNormalization", 17, 2, in_ln, NULL, 1, 1, at5, &out), RLX_ERR_INVALID_MODEL,
                "node 'node0' (LayerNormalization): axis 3 is out of range");
    rlx_attr at6[1] = { RLX_ATTR_I("num_groups", 2) };
    const rlx_tensor *in_gn[3] = { x, sc, sc }; /* 3 channels, 2 groups */
    CHECK_FAILS(run("GroupNormalization", 21, 3, in_gn, NULL, 1, 1, at6, &out), RLX_ERR_INVALID_MODEL,
                "does not divide");
    /* bad Einsum equations */
    int64_t d34[2] = { 3, 4 }, d55[2] = { 5, 5 };
    rlx_tensor *a = rnd(RLX_DTYPE_F32, 2, d34, -1, 1), *b = rnd(RLX_DTYPE_F32, 2, d55, -1, 1);
    struct { const char *eq; int n; const char *msg; } bad[] = {
        { "ij,jk->ik", 1, "has 2 input terms but the node has 1 input" },
        { "ij->k", 1, "output letter 'k' does not occur in any input" },
        { "i#->i", 1, "the character '#'" },
        { "ijk->i", 1, "has 3 letters but input 0 has rank 2" },
        { "i.j->ij", 1, "not part of an ellipsis" },
        { "...j->j", 1, "the output has no '...'" },
        { "ij->ii", 1, "output letter 'i' occurs twice" },
        { "ij,jk->ik", 2, "letter 'j' stands for dims of different sizes" },
        { "ij->i->j", 1, "more than one '->'" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rlx_attr at[1] = { RLX_ATTR_S("equation", bad[i].eq) };
        const rlx_tensor *in[2] = { a, b };
        CHECK_FAILS(run("Einsum", 12, bad[i].n, in, NULL, 1, 1, at, &out), RLX_ERR_INVALID_MODEL, bad[i].msg);
        CHECK_FAILS(run("Einsum", 12, bad[i].n, in, NULL, 1, 1, at, &out), RLX_ERR_INVALID_MODEL,
                    "node 'node0' (Einsum)");
    }
    rlx_tensor_destroy(a);
    rlx_tensor_destroy(b);
    rlx_tensor_destroy(sc);
    rlx_tensor_destroy(ax);
    rlx_tensor_destroy(x);
}

int main(void) {
    test_seed_from_env();
    test_reduce_ops();
    test_reduce_version1();
    test_reduce_noop();
    test_reduce_empty_set();
    test_reduce_int();
    test_reduce_logsumexp_large();
    test_layernorm_near_f32_max();
    test_reduce_dynamic_axes_inference();
    test_argmax_argmin();
    test_arg_nan();
    test_einsum();
    test_layer_norm();
    test_group_instance_norm();
    test_lp_mvn_lrn();
    test_fast_path_matches_reference();
    test_einsum_fast_matches_reference();
    test_errors();
    TEST_MAIN_END();
}
