/* Cases of the indexing lowerings (lower_index.c): Gather, GatherElements,
 * GatherND (batch_dims), ScatterND and ScatterElements (every reduction),
 * OneHot, Trilu, EyeLike, CumSum (exclusive, reverse), ConstantOfShape,
 * Dropout (inference). Negative indices and axes, indices at run time and
 * constant, i32 and i64 indices, every data dtype the lowering takes, and
 * run-time indices out of range (both backends must refuse the run, the GPU
 * naming the node). Moves are exact; CumSum sums in order on both sides. */
#include <string.h>

#include "harness.h"

static const rlx_dtype k_dts[] = { RLX_DTYPE_F32, RLX_DTYPE_I32, RLX_DTYPE_U32, RLX_DTYPE_I64, RLX_DTYPE_BOOL };

static int64_t rnd(int64_t lo, int64_t hi) { return lo + (int64_t)bo_rand_below((uint64_t)(hi - lo + 1)); }

static bo_shape rand_shape(int r, int lo, int hi) {
    bo_shape s = { r, { 0 } };
    for (int i = 0; i < r; i++) s.d[i] = rnd(lo, hi);
    return s;
}

static rlx_tensor *data(rlx_dtype dt, const bo_shape *s) {
    if (dt == RLX_DTYPE_I64) return bo_rand_int(dt, s->rank, s->d, -(1ll << 40), 1ll << 40);
    if (dt == RLX_DTYPE_U32) return bo_rand_int(dt, s->rank, s->d, 0, 0xffffffffll);
    return bo_rand_any(dt, s, -100, 100);
}

/* Indices in [-n, n) (negative ones count from the end) of dtype dt. */
static rlx_tensor *indices(rlx_dtype dt, const bo_shape *s, int64_t n, bool neg) {
    return bo_rand_int(dt, s->rank, s->d, neg ? -n : 0, n - 1);
}

static rlx_dtype pick_dt(int i, bool bool_ok) {
    rlx_dtype dt = k_dts[(size_t)i % BO_LEN(k_dts)];
    return dt == RLX_DTYPE_BOOL && !bool_ok ? RLX_DTYPE_F32 : dt;
}

/* ------------------------------------------------------------ edge cases */

/* The //!audited claims of the index kernels (gather, gather_elements,
 * gather_nd, scatter) on edge cases of run-time i64 indices, one op each
 * (ScatterElements and ScatterND with reduction add on i32, exact): 0 a
 * single element (index -1), 1 x [67, 3] with 67 index rows (a grid not a
 * multiple of 64), 2 an index of 2^33 (outside i32: the kernels read it as
 * out of range) and 3 one of -a - 1 (below the wrap); 2 and 3 must be
 * refused by both backends, the GPU reading nothing outside x. */
static void index_edges(bo_ctx *ctx, const char *op) {
    bool gather = strcmp(op, "Gather") == 0, elems = strstr(op, "Elements") != NULL, nd = strstr(op, "ND") != NULL;
    bool scatter = strncmp(op, "Scatter", 7) == 0;
    for (int t = 0; t < 4; t++) {
        bo_case *c = bo_next(ctx, scatter ? 18 : 13);
        if (!c) continue;
        int64_t rows = t == 0 ? 1 : 67, cols = t == 0 ? 1 : 3;
        int64_t xd[2] = { rows, cols };
        /* indices: Gather [rows] on axis 0; *Elements [rows, cols] on axis 0; *ND [rows, 1] */
        int64_t id[2] = { rows, elems ? cols : 1 };
        int irank = gather ? 1 : 2;
        rlx_tensor *idx = bo_rand_int(RLX_DTYPE_I64, irank, id, -rows, rows - 1);
        int64_t *iv = idx->data;
        if (t == 0) iv[0] = -1;
        if (t >= 2) {
            iv[rlx_tensor_numel(idx) / 2] = t == 2 ? (int64_t)1 << 33 : -rows - 1;
            c->flags |= BO_EXPECT_ERROR;
        }
        rlx_tensor *x = bo_rand_int(scatter ? RLX_DTYPE_I32 : RLX_DTYPE_F32, 2, xd, -100, 100);
        char xb[64], ib[64];
        bo_desc(c, "%s x%s indices i64%s (edge case%s)", op, bo_shape_str(2, xd, xb, 64), bo_shape_str(irank, id, ib, 64),
                t == 2 ? ": an index of 2^33" : t == 3 ? ": an index below -a" : "");
        rlx_attr a[2] = { RLX_ATTR_I("axis", 0), RLX_ATTR_S("reduction", "add") };
        if (!scatter) {
            rlx_tensor *in[2] = { x, idx };
            bo_single(c, op, 2, in, NULL, 1, nd ? 0 : 1, a);
        } else {
            int64_t ud[2] = { rows, cols };
            rlx_tensor *in[3] = { x, idx, bo_rand_int(RLX_DTYPE_I32, 2, ud, -9, 9) };
            bo_single(c, op, 3, in, NULL, 1, nd ? 1 : 2, nd ? a + 1 : a);
        }
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ Gather */

static void gen_gather(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 60 : 14;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        int r = 1 + i % 5;
        bo_shape s = rand_shape(r, 1, 7);
        int axis = (int)bo_rand_below((uint64_t)r);
        if (i % 6 == 4) s.d[axis] = 1000; /* an embedding table */
        bo_shape is = rand_shape((int)bo_rand_below(3), 1, 5);
        if (i % 7 == 6) is.d[0] = 300, is.rank = is.rank ? is.rank : 1;
        rlx_dtype dt = pick_dt(i, true), it = i % 2 ? RLX_DTYPE_I32 : RLX_DTYPE_I64;
        bool konst = i % 3 == 1, oob = i == 5;
        rlx_tensor *idx = indices(it, &is, s.d[axis], true);
        if (oob) { /* run-time index out of range: both refuse */
            if (it == RLX_DTYPE_I64) ((int64_t *)idx->data)[0] = s.d[axis] + 3;
            else ((int32_t *)idx->data)[0] = (int32_t)s.d[axis] + 3;
            c->flags |= BO_EXPECT_ERROR;
            konst = false;
        }
        int64_t ax = bo_rand_below(2) ? axis - r : axis;
        char sb[96], ib[96];
        bo_desc(c, "Gather %s x%s indices %s%s%s axis=%lld%s", rlx_dtype_name(dt), bo_shape_str(s.rank, s.d, sb, 96),
                rlx_dtype_name(it), bo_shape_str(is.rank, is.d, ib, 96), konst ? " constant" : "", (long long)ax,
                oob ? " (an index out of range)" : "");
        rlx_tensor *in[2] = { data(dt, &s), idx };
        bool k[2] = { false, konst };
        rlx_attr a = RLX_ATTR_I("axis", ax);
        bo_single(c, "Gather", 2, in, k, 1, 1, &a);
        bo_run(ctx, c);
    }
    /* int8/uint8 data (the quantized embedding tables of quantize_dynamic
     * models): bytes four to a word, rows of whole words or not */
    for (int i = 0; i < 4; i++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        rlx_dtype dt = i % 2 ? RLX_DTYPE_I8 : RLX_DTYPE_U8;
        int64_t xd[2] = { i < 2 ? 1000 : 31, i < 2 ? 8 : 7 }, idd[2] = { 2, 5 + i };
        rlx_tensor *in[2] = { bo_rand_int(dt, 2, xd, i % 2 ? -128 : 0, i % 2 ? 127 : 255),
                              bo_rand_int(RLX_DTYPE_I64, 2, idd, -xd[0], xd[0] - 1) };
        bool k[2] = { i != 3, i == 3 }; /* both constant would fold */
        rlx_attr a = RLX_ATTR_I("axis", i == 2 ? 1 : 0);
        if (i == 2) for (int j = 0; j < 2 * (5 + i); j++) ((int64_t *)in[1]->data)[j] %= xd[1];
        bo_desc(c, "Gather %s [%lld,%lld]%s x indices i64[2,%d]%s axis=%d", rlx_dtype_name(dt), (long long)xd[0],
                (long long)xd[1], i != 3 ? " constant" : "", 5 + i, i == 3 ? " constant" : "", i == 2 ? 1 : 0);
        bo_single(c, "Gather", 2, in, k, 1, 1, &a);
        bo_run(ctx, c);
    }
    index_edges(ctx, "Gather");
}

static void gen_gather_elements(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 40 : 10;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        int r = 1 + i % 5;
        bo_shape s = rand_shape(r, 1, 6);
        int axis = (int)bo_rand_below((uint64_t)r);
        if (i % 5 == 3) s.d[axis] = 400;
        bo_shape is = s; /* indices: any size along axis, <= elsewhere */
        for (int j = 0; j < r; j++) is.d[j] = j == axis ? rnd(1, 7) : rnd(1, s.d[j]);
        rlx_dtype dt = pick_dt(i, false), it = i % 2 ? RLX_DTYPE_I32 : RLX_DTYPE_I64;
        bool konst = i % 3 == 1;
        int64_t ax = bo_rand_below(2) ? axis - r : axis;
        char sb[96], ib[96];
        bo_desc(c, "GatherElements %s x%s indices %s%s axis=%lld%s", rlx_dtype_name(dt), bo_shape_str(r, s.d, sb, 96),
                rlx_dtype_name(it), bo_shape_str(r, is.d, ib, 96), (long long)ax, konst ? " constant" : "");
        rlx_tensor *in[2] = { data(dt, &s), indices(it, &is, s.d[axis], true) };
        bool k[2] = { false, konst };
        rlx_attr a = RLX_ATTR_I("axis", ax);
        bo_single(c, "GatherElements", 2, in, k, 1, 1, &a);
        bo_run(ctx, c);
    }
    index_edges(ctx, "GatherElements");
}

static void gen_gather_nd(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 40 : 10;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        int r = 1 + i % 5;
        int bd = r > 1 && i % 3 == 2 ? 1 : 0;
        bo_shape s = rand_shape(r, 1, 6);
        int q = bd + 1 + (int)bo_rand_below(2);
        bo_shape is = rand_shape(q, 1, 4);
        for (int j = 0; j < bd; j++) is.d[j] = s.d[j];
        int64_t last = 1 + (int64_t)bo_rand_below((uint64_t)(r - bd));
        is.d[q - 1] = last;
        rlx_dtype dt = pick_dt(i, true), it = RLX_DTYPE_I64; /* ONNX: i64 indices only */
        if (dt == RLX_DTYPE_BOOL) { /* bool: slices of 4k elements */
            for (int j = bd + (int)last; j < r; j++) s.d[j] = 4;
            if (bd + last == r) dt = RLX_DTYPE_U32;
        }
        rlx_tensor *idx = bo_rand_int(it, is.rank, is.d, 0, 0);
        size_t ni = rlx_tensor_numel(idx) / (size_t)last;
        for (size_t t = 0; t < ni; t++)
            for (int64_t j = 0; j < last; j++) {
                int64_t dim = s.d[bd + j], v = rnd(-dim, dim - 1);
                if (it == RLX_DTYPE_I64) ((int64_t *)idx->data)[t * (size_t)last + (size_t)j] = v;
                else ((int32_t *)idx->data)[t * (size_t)last + (size_t)j] = (int32_t)v;
            }
        char sb[96], ib[96];
        bo_desc(c, "GatherND %s x%s indices %s%s batch_dims=%d", rlx_dtype_name(dt), bo_shape_str(r, s.d, sb, 96),
                rlx_dtype_name(it), bo_shape_str(q, is.d, ib, 96), bd);
        rlx_tensor *in[2] = { data(dt, &s), idx };
        bool k[2] = { false, i % 4 == 1 };
        rlx_attr a = RLX_ATTR_I("batch_dims", bd);
        bo_single(c, "GatherND", 2, in, k, 1, 1, &a);
        bo_run(ctx, c);
    }
    index_edges(ctx, "GatherND");
}

/* ------------------------------------------------------------ Scatter */

/* Data or updates of a scatter: f32 near 1 (products of duplicates stay
 * finite), small integers under an i32 reduction, else any value. */
static rlx_tensor *scatter_values(rlx_dtype dt, bool reduce, const bo_shape *s, bool update) {
    if (dt == RLX_DTYPE_F32) return bo_rand(dt, s->rank, s->d, 0.5, 1.5);
    if (dt == RLX_DTYPE_I32 && reduce) return bo_rand_int(dt, s->rank, s->d, update ? -3 : -5, update ? 3 : 5);
    return data(dt, s);
}

/* ScatterElements / ScatterND with reduction max and min on special
 * values (bo_specials) in the data and the updates, duplicate targets:
 * the CPU's y = a >= b ? a : b (min: a <= b) in update order (a NaN
 * update wins, a NaN in y is replaced, of equal values y's stays),
 * compared value for value (BO_SAME_VALUE). f32, 2 cases per reduction. */
static void scatter_specials(bo_ctx *ctx, bool nd) {
    static const char *const k_red[] = { "max", "min" };
    for (int t = 0; t < 4; t++) {
        bo_case *c = bo_next(ctx, 18);
        if (!c) continue;
        const char *red = k_red[t % 2];
        int64_t xd[2] = { 8, 37 };
        rlx_tensor *x = bo_rand(RLX_DTYPE_F32, 2, xd, -2, 2), *idx, *upd;
        bo_specials(x, t < 2 ? 37 : 3);
        if (nd) { /* 16 rows of updates into the 8 rows of x */
            int64_t id[2] = { 16, 1 }, ud[2] = { 16, 37 };
            idx = bo_rand_int(RLX_DTYPE_I64, 2, id, -8, 7);
            upd = bo_rand(RLX_DTYPE_F32, 2, ud, -2, 2);
        } else { /* 37 updates per row into its 37 columns */
            idx = bo_rand_int(RLX_DTYPE_I64, 2, xd, -37, 36);
            upd = bo_rand(RLX_DTYPE_F32, 2, xd, -2, 2);
        }
        bo_specials(upd, t < 2 ? 5 : 37);
        c->flags |= BO_SAME_VALUE;
        bo_desc(c, "%s f32 x[8,37] special values, duplicate targets, reduction=%s", nd ? "ScatterND" : "ScatterElements",
                red);
        rlx_tensor *in[3] = { x, idx, upd };
        rlx_attr a[2] = { RLX_ATTR_S("reduction", red), RLX_ATTR_I("axis", 1) };
        bo_single(c, nd ? "ScatterND" : "ScatterElements", 3, in, NULL, 1, nd ? 1 : 2, a);
        bo_run(ctx, c);
    }
}

static void gen_scatter_elements(bo_ctx *ctx, const void *arg) {
    static const char *const k_red[] = { "none", "add", "mul", "max", "min" };
    int n = bo_full(ctx) ? 50 : 10;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 18);
        if (!c) continue;
        const char *red = k_red[i % BO_LEN(k_red)];
        bool reduce = strcmp(red, "none") != 0;
        int r = 1 + (i / 2) % 4;
        bo_shape s = rand_shape(r, 2, 6);
        int axis = (int)bo_rand_below((uint64_t)r);
        if (i % 7 == 6) s.d[axis] = 300;
        bo_shape is = s;
        for (int j = 0; j < r; j++) is.d[j] = rnd(1, s.d[j]);
        rlx_dtype dt = reduce ? (i % 3 == 1 ? RLX_DTYPE_I32 : RLX_DTYPE_F32) : pick_dt(i, false);
        rlx_dtype it = i % 2 ? RLX_DTYPE_I32 : RLX_DTYPE_I64;
        /* without a reduction duplicate targets make the result order-dependent: distinct indices
         * along the axis per position (a permutation prefix) */
        rlx_tensor *idx = indices(it, &is, s.d[axis], true);
        if (!reduce) {
            size_t nn = rlx_tensor_numel(idx);
            int64_t inner = 1, outer_stride;
            for (int j = axis + 1; j < r; j++) inner *= is.d[j];
            outer_stride = inner * is.d[axis];
            for (size_t t = 0; t < nn; t++) {
                int64_t pos = ((int64_t)t % outer_stride) / inner; /* coordinate along axis */
                /* distinct for distinct pos since is.d[axis] <= s.d[axis] */
                int64_t v = (pos + (int64_t)(t % (size_t)inner)) % s.d[axis];
                if (it == RLX_DTYPE_I64) ((int64_t *)idx->data)[t] = v - (t % 2 ? s.d[axis] : 0);
                else ((int32_t *)idx->data)[t] = (int32_t)(v - (t % 2 ? s.d[axis] : 0));
            }
        }
        rlx_tensor *upd = scatter_values(dt, reduce, &is, true);
        if (reduce && dt == RLX_DTYPE_F32) {
            c->rtol = 1e-6; /* duplicates added or multiplied in another order */
            c->atol = 1e-6;
        }
        int64_t ax = bo_rand_below(2) ? axis - r : axis;
        char sb[96], ib[96];
        bo_desc(c, "ScatterElements %s x%s indices %s%s axis=%lld reduction=%s", rlx_dtype_name(dt),
                bo_shape_str(r, s.d, sb, 96), rlx_dtype_name(it), bo_shape_str(r, is.d, ib, 96), (long long)ax, red);
        rlx_tensor *x = scatter_values(dt, reduce, &s, false);
        rlx_tensor *in[3] = { x, idx, upd };
        bool k[3] = { false, i % 4 == 1, false };
        rlx_attr a[2] = { RLX_ATTR_I("axis", ax), RLX_ATTR_S("reduction", red) };
        bo_single(c, "ScatterElements", 3, in, k, 1, 2, a);
        bo_run(ctx, c);
    }
    scatter_specials(ctx, false);
    index_edges(ctx, "ScatterElements");
}

static void gen_scatter_nd(bo_ctx *ctx, const void *arg) {
    static const char *const k_red[] = { "none", "add", "mul", "max", "min" };
    int n = bo_full(ctx) ? 50 : 10;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 18);
        if (!c) continue;
        const char *red = k_red[i % BO_LEN(k_red)];
        bool reduce = strcmp(red, "none") != 0;
        int r = 1 + (i / 2) % 4;
        bo_shape s = rand_shape(r, 2, 6);
        int64_t last = 1 + (int64_t)bo_rand_below((uint64_t)r);
        rlx_dtype dt = reduce ? (i % 3 == 1 ? RLX_DTYPE_I32 : RLX_DTYPE_F32) : pick_dt(i, true);
        if (dt == RLX_DTYPE_BOOL) {
            for (int j = (int)last; j < r; j++) s.d[j] = 4;
            if (last == r) dt = RLX_DTYPE_I64;
        }
        /* the updated slices: distinct without a reduction (else order-dependent) */
        int64_t n_slices = 1;
        for (int j = 0; j < last; j++) n_slices *= s.d[j];
        int64_t m = reduce ? rnd(1, 6) : rnd(1, n_slices);
        bo_shape is = { 2, { m, last } };
        rlx_dtype it = RLX_DTYPE_I64; /* ONNX: i64 indices only */
        rlx_tensor *idx = bo_rand_int(it, 2, is.d, 0, 0);
        int64_t start = (int64_t)bo_rand_below((uint64_t)n_slices);
        for (int64_t t = 0; t < m; t++) {
            int64_t lin = reduce ? (int64_t)bo_rand_below((uint64_t)n_slices) : (start + t) % n_slices;
            for (int64_t j = last - 1; j >= 0; j--) {
                int64_t v = lin % s.d[j];
                lin /= s.d[j];
                if (t % 2) v -= s.d[j]; /* negative */
                if (it == RLX_DTYPE_I64) ((int64_t *)idx->data)[t * last + j] = v;
                else ((int32_t *)idx->data)[t * last + j] = (int32_t)v;
            }
        }
        bo_shape us = { 1 + r - (int)last, { m } };
        for (int j = (int)last; j < r; j++) us.d[1 + j - last] = s.d[j];
        rlx_tensor *x = scatter_values(dt, reduce, &s, false), *upd = scatter_values(dt, reduce, &us, true);
        if (reduce && dt == RLX_DTYPE_F32) c->rtol = 1e-6, c->atol = 1e-6;
        char sb[96], ib[96];
        bo_desc(c, "ScatterND %s x%s indices %s%s reduction=%s", rlx_dtype_name(dt), bo_shape_str(r, s.d, sb, 96),
                rlx_dtype_name(it), bo_shape_str(2, is.d, ib, 96), red);
        rlx_tensor *in[3] = { x, idx, upd };
        bool k[3] = { false, i % 4 == 1, false };
        rlx_attr a = RLX_ATTR_S("reduction", red);
        bo_single(c, "ScatterND", 3, in, k, 1, 1, &a);
        bo_run(ctx, c);
    }
    scatter_specials(ctx, true);
    index_edges(ctx, "ScatterND");
}

/* ------------------------------------------------------------ OneHot, Trilu, EyeLike */

static void gen_onehot(bo_ctx *ctx, const void *arg) {
    static const rlx_dtype k_it[] = { RLX_DTYPE_I64, RLX_DTYPE_I32, RLX_DTYPE_F32 };
    static const rlx_dtype k_vt[] = { RLX_DTYPE_F32, RLX_DTYPE_I32, RLX_DTYPE_U32, RLX_DTYPE_I64 };
    int n = bo_full(ctx) ? 36 : 8;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 11);
        if (!c) continue;
        int r = (int)bo_rand_below(4);
        bo_shape s = rand_shape(r, 1, 5);
        int64_t depth = i % 5 == 3 ? 300 : rnd(1, 9);
        rlx_dtype it = k_it[i % 3], vt = k_vt[(i / 3) % 4];
        rlx_tensor *idx = bo_rand_int(it, s.rank, s.d, -depth - 2, depth + 1); /* some outside: all off */
        int axis = (int)bo_rand_below((uint64_t)r + 1);
        int64_t ax = bo_rand_below(2) ? axis - (r + 1) : axis;
        rlx_tensor *v = vt == RLX_DTYPE_F32 ? bo_tensor(vt, 1, (int64_t[]){ 2 }, (float[]){ -0.5f, 2.5f })
                        : bo_rand_int(vt, 1, (int64_t[]){ 2 }, 1, 9);
        char sb[96];
        bo_desc(c, "OneHot indices %s%s depth=%lld values %s axis=%lld", rlx_dtype_name(it), bo_shape_str(r, s.d, sb, 96),
                (long long)depth, rlx_dtype_name(vt), (long long)ax);
        rlx_tensor *in[3] = { idx, bo_scalar(RLX_DTYPE_I64, (double)depth), v };
        bool k[3] = { false, true, true };
        rlx_attr a = RLX_ATTR_I("axis", ax);
        bo_single(c, "OneHot", 3, in, k, 1, 1, &a);
        bo_run(ctx, c);
    }
    /* edge shapes: one index of depth 1 (on, then off: -1 wraps from 11 on), 67 i64 indices of depth 3
     * with some outside i32 */
    for (int t = 0; t < 3; t++) {
        bo_case *c = bo_next(ctx, 11);
        if (!c) continue;
        int64_t ni = t < 2 ? 1 : 67, depth = t < 2 ? 1 : 3;
        rlx_tensor *idx = bo_rand_int(RLX_DTYPE_I64, 1, &ni, -depth, depth - 1);
        if (t == 1) ((int64_t *)idx->data)[0] = -1;
        if (t == 2) ((int64_t *)idx->data)[5] = (int64_t)1 << 33, ((int64_t *)idx->data)[9] = -((int64_t)1 << 33) + 1;
        bo_desc(c, "OneHot indices i64[%lld] depth=%lld values f32 (edge case)", (long long)ni, (long long)depth);
        rlx_tensor *in[3] = { idx, bo_scalar(RLX_DTYPE_I64, (double)depth),
                              bo_tensor(RLX_DTYPE_F32, 1, (int64_t[]){ 2 }, (float[]){ -0.5f, 2.5f }) };
        bool k[3] = { false, true, true };
        bo_single(c, "OneHot", 3, in, k, 1, 0, NULL);
        bo_run(ctx, c);
    }
}

static void gen_trilu(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 40 : 10;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 14);
        if (!c) continue;
        int r = 2 + i % 3;
        bo_shape s = rand_shape(r, 1, 7);
        if (i % 6 == 5) s.d[r - 1] = 300;
        int64_t k = rnd(-s.d[r - 2] - 1, s.d[r - 1] + 1);
        int upper = i % 2;
        rlx_dtype dt = pick_dt(i / 2, true);
        bool kin = i % 3 != 2;
        char sb[96];
        bo_desc(c, "Trilu %s x%s upper=%d k=%s%lld", rlx_dtype_name(dt), bo_shape_str(r, s.d, sb, 96), upper,
                kin ? "" : "(none) ", kin ? (long long)k : 0ll);
        rlx_tensor *in[2] = { data(dt, &s), kin ? bo_scalar(i % 4 ? RLX_DTYPE_I64 : RLX_DTYPE_I64, (double)k) : NULL };
        bool kk[2] = { false, i % 5 != 4 };
        rlx_attr a = RLX_ATTR_I("upper", upper);
        bo_single(c, "Trilu", 2, in, kk, 1, 1, &a);
        bo_run(ctx, c);
    }
    /* edge shapes: a single element (f32; bool: a word of one byte), bool
     * [3, 3] (the last word a quarter full), k at run time */
    static const struct { int64_t d[2]; rlx_dtype dt; } k_edges[] = {
        { { 1, 1 }, RLX_DTYPE_F32 }, { { 1, 1 }, RLX_DTYPE_BOOL }, { { 3, 3 }, RLX_DTYPE_BOOL } };
    for (size_t t = 0; t < BO_LEN(k_edges); t++) {
        bo_case *c = bo_next(ctx, 14);
        if (!c) continue;
        bo_shape es = { 2, { k_edges[t].d[0], k_edges[t].d[1] } };
        char sb[96];
        bo_desc(c, "Trilu %s x%s upper=%d k=0 at run time (edge shape)", rlx_dtype_name(k_edges[t].dt),
                bo_shape_str(2, es.d, sb, 96), (int)(t % 2));
        rlx_tensor *in[2] = { data(k_edges[t].dt, &es), bo_scalar(RLX_DTYPE_I64, 0) };
        bool kk[2] = { false, false };
        rlx_attr a = RLX_ATTR_I("upper", (int64_t)(t % 2));
        bo_single(c, "Trilu", 2, in, kk, 1, 1, &a);
        bo_run(ctx, c);
    }
}

static void gen_eyelike(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 20 : 6;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 22);
        if (!c) continue;
        bo_shape s = rand_shape(2, 1, 9);
        if (i % 4 == 3) s.d[1] = 300;
        int64_t k = rnd(-s.d[0], s.d[1]);
        rlx_dtype dt = pick_dt(i, true), out = pick_dt(i + 2, true);
        char sb[96];
        bo_desc(c, "EyeLike x %s%s dtype=%s k=%lld", rlx_dtype_name(dt), bo_shape_str(2, s.d, sb, 96), rlx_dtype_name(out),
                (long long)k);
        rlx_tensor *x = data(dt, &s);
        rlx_attr a[2] = { RLX_ATTR_I("k", k), RLX_ATTR_I("dtype", (int64_t)out) };
        bo_single(c, "EyeLike", 1, &x, NULL, 1, 2, a);
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ CumSum */

static void gen_cumsum(bo_ctx *ctx, const void *arg) {
    static const rlx_dtype k_cdt[] = { RLX_DTYPE_F32, RLX_DTYPE_I32, RLX_DTYPE_U32 };
    int n = bo_full(ctx) ? 48 : 12;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 14);
        if (!c) continue;
        int r = 1 + i % 4;
        bo_shape s = rand_shape(r, 1, 7);
        int axis = (int)bo_rand_below((uint64_t)r);
        if (i % 5 == 2) s.d[axis] = 700;
        rlx_dtype dt = k_cdt[i % 3];
        int excl = (i / 3) % 2, rev = (i / 6) % 2;
        int64_t ax = bo_rand_below(2) ? axis - r : axis;
        rlx_tensor *x = dt == RLX_DTYPE_F32 ? bo_rand(dt, r, s.d, -2, 2) : bo_rand_int(dt, r, s.d, 0, 1000);
        char sb[96];
        bo_desc(c, "CumSum %s x%s axis=%lld exclusive=%d reverse=%d", rlx_dtype_name(dt), bo_shape_str(r, s.d, sb, 96),
                (long long)ax, excl, rev);
        c->atol *= s.d[axis];
        rlx_tensor *in[2] = { x, bo_scalar(i % 2 ? RLX_DTYPE_I32 : RLX_DTYPE_I64, (double)ax) };
        bool k[2] = { false, true };
        rlx_attr a[2] = { RLX_ATTR_I("exclusive", excl), RLX_ATTR_I("reverse", rev) };
        bo_single(c, "CumSum", 2, in, k, 1, 2, a);
        bo_run(ctx, c);
    }
    /* edge shapes: a single element; lines of 1,031 and 5,000 (a workgroup
     * scan per line: chunks of 5 and 20, the last ones empty or partial);
     * 67 lines of a strided axis (one invocation per line) */
    static const struct { bo_shape s; int64_t axis; rlx_dtype dt; } k_edges[] = {
        { { 1, { 1 } }, 0, RLX_DTYPE_F32 }, { { 2, { 3, 1031 } }, 1, RLX_DTYPE_I32 },
        { { 2, { 2, 5000 } }, -1, RLX_DTYPE_F32 }, { { 2, { 5, 67 } }, 0, RLX_DTYPE_U32 },
    };
    for (size_t t = 0; t < BO_LEN(k_edges); t++) {
        bo_case *c = bo_next(ctx, 14);
        if (!c) continue;
        const bo_shape *es = &k_edges[t].s;
        rlx_dtype dt = k_edges[t].dt;
        int excl = (int)(t % 2), rev = (int)(t / 2 % 2);
        rlx_tensor *x = dt == RLX_DTYPE_F32 ? bo_rand(dt, es->rank, es->d, -2, 2) : bo_rand_int(dt, es->rank, es->d, 0, 1000);
        char sb[96];
        bo_desc(c, "CumSum %s x%s axis=%lld exclusive=%d reverse=%d (edge shape)", rlx_dtype_name(dt),
                bo_shape_str(es->rank, es->d, sb, 96), (long long)k_edges[t].axis, excl, rev);
        c->atol *= es->d[(k_edges[t].axis + es->rank) % es->rank];
        rlx_tensor *in[2] = { x, bo_scalar(RLX_DTYPE_I64, (double)k_edges[t].axis) };
        bool k[2] = { false, true };
        rlx_attr a[2] = { RLX_ATTR_I("exclusive", excl), RLX_ATTR_I("reverse", rev) };
        bo_single(c, "CumSum", 2, in, k, 1, 2, a);
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ ConstantOfShape, Dropout */

static void gen_constant_of_shape(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 10 : 5;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 21);
        if (!c) continue;
        /* its shape input must be constant for a static plan, so folding computes it: the
         * lowering runs only where folding does not (none through sessions); checked as a
         * folded constant against the CPU */
        c->expect_op = "";
        bo_shape s = rand_shape(1 + i % 4, 1, 6);
        rlx_dtype dt = pick_dt(i, true);
        rlx_tensor *v = bo_rand_any(dt, &(bo_shape){ 1, { 1 } }, 1, 9);
        rlx_attr a = RLX_ATTR_T("value", v);
        char sb[96];
        bo_desc(c, "ConstantOfShape shape=%s value %s", bo_shape_str(s.rank, s.d, sb, 96), rlx_dtype_name(dt));
        /* x + ConstantOfShape: something runs on the GPU */
        rlx_tensor *sh = bo_i64s(s.rank, s.d);
        const char *kname = bo_const(c, sh);
        const char *co = bo_node(c, "ConstantOfShape", 1, &kname, 1, 1, &a);
        rlx_tensor_destroy(v);
        if (dt == RLX_DTYPE_BOOL) {
            bo_output(c, co);
        } else {
            const char *ins[2] = { bo_input(c, bo_rand_any(dt == RLX_DTYPE_U32 || dt == RLX_DTYPE_I64 ? RLX_DTYPE_F32 : dt, &s, 1, 9)), co };
            if (dt == RLX_DTYPE_U32 || dt == RLX_DTYPE_I64) bo_output(c, co);
            else bo_output(c, bo_node(c, "Add", 2, ins, 1, 0, NULL));
        }
        bo_run(ctx, c);
    }
}

static void gen_dropout(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 15 : 5;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 22);
        if (!c) continue;
        c->flags |= BO_VIEW_OK;
        bo_shape s = rand_shape(1 + i % 4, 1, 6);
        rlx_dtype dt = RLX_DTYPE_F32;
        char sb[96];
        bo_desc(c, "Dropout %s x%s%s", rlx_dtype_name(dt), bo_shape_str(s.rank, s.d, sb, 96),
                i % 2 ? " ratio 0.5, training_mode false" : "");
        rlx_tensor *in[3] = { dt == RLX_DTYPE_F32 ? bo_rand(dt, s.rank, s.d, -2, 2) : bo_rand_int(dt, s.rank, s.d, -9, 9),
                              i % 2 ? bo_scalar(RLX_DTYPE_F32, 0.5) : NULL, i % 2 ? bo_scalar(RLX_DTYPE_BOOL, 0) : NULL };
        bool k[3] = { false, true, true };
        bo_single(c, "Dropout", 3, in, k, 1, 0, NULL);
        bo_run(ctx, c);
    }
}

#define EXACT 0, 0, "data movement: exact"
static const bo_op k_ops[] = {
    { "Gather", gen_gather, NULL, EXACT },
    { "GatherElements", gen_gather_elements, NULL, EXACT },
    { "GatherND", gen_gather_nd, NULL, EXACT },
    { "ScatterElements", gen_scatter_elements, NULL, 0, 0, "exact; f32 add/mul of duplicates 1e-6 (order)" },
    { "ScatterND", gen_scatter_nd, NULL, 0, 0, "exact; f32 add/mul of duplicates 1e-6 (order)" },
    { "OneHot", gen_onehot, NULL, EXACT },
    { "Trilu", gen_trilu, NULL, EXACT },
    { "EyeLike", gen_eyelike, NULL, EXACT },
    { "CumSum", gen_cumsum, NULL, 1e-6, 1e-6, "a running sum in order (per element 1e-6 times the axis length)" },
    { "ConstantOfShape", gen_constant_of_shape, NULL, EXACT },
    { "Dropout", gen_dropout, NULL, EXACT },
};

const bo_family bo_family_index = { "index", k_ops, BO_LEN(k_ops) };
