/* Cases of the reduction and normalisation lowerings (lower_reduce.c): the
 * Reduce* ops over every pattern of kept and reduced axes (negative axes,
 * keepdims, noop_with_empty_axes, axes longer than a workgroup, empty
 * axes), ArgMax/ArgMin with ties and NaN, Softmax / LogSoftmax / Hardmax (the
 * pre-13 2-D coercion too, masked rows of -inf), and the normalisations
 * (Layer, RMS, Instance, Group, Lp, MeanVariance, LRN). Tolerances: the GPU
 * sums in another order (tree reductions), so sums get a relative and an
 * absolute error that grows with the reduced length. */
#include <math.h>
#include <string.h>

#include "harness.h"

static bo_shape rand_shape(int r, int lo, int hi) {
    bo_shape s = { r, { 0 } };
    for (int i = 0; i < r; i++) s.d[i] = lo + (int64_t)bo_rand_below((uint64_t)(hi - lo + 1));
    return s;
}

/* A random subset of axes of rank r (at least one), some given negative. */
static int rand_axes(int r, int64_t *ax) {
    int n = 0;
    for (int a = 0; a < r; a++)
        if (bo_rand_below(2)) ax[n++] = bo_rand_below(2) ? a - r : a;
    if (!n) ax[n++] = (int64_t)bo_rand_below((uint64_t)r);
    return n;
}

/* ------------------------------------------------------------ Reduce* */

typedef struct reduce_row {
    bool i32;          /* also i32 */
    double lo, hi;     /* input range */
} reduce_row;

static void reduce_specials(bo_ctx *ctx);

/* The edge shapes of the row kernels (reduce.wgsl, norm.wgsl,
 * norm_split.wgsl; their //!audited claims): a single element (a row of
 * one, one invocation per row), 70 rows of a strided axis of 3 (one
 * invocation per row, COLS, rows not a multiple of the workgroup's 64),
 * 67 contiguous rows of 301 (a workgroup per row, vec4 words masked at
 * both ends of each row) and 3 rows of 16,411 (split into chunks of 4,096:
 * the last one partial; with logsumexp and softmax one workgroup of 256 per
 * row instead). x dims and the reduced axis of each. */
typedef struct edge_shape {
    bo_shape s;
    int64_t axis;
    const char *what;
} edge_shape;

static const edge_shape k_edges[] = {
    { { 1, { 1 } }, 0, "single element" },
    { { 2, { 3, 70 } }, 0, "70 rows of a strided axis (COLS)" },
    { { 2, { 67, 301 } }, 1, "67 rows of 301 (vec4 words masked)" },
    { { 2, { 3, 16411 } }, 1, "3 rows of 16411 (split, last chunk partial)" },
};

/* The sum's tolerance grows with the reduced length, as gen_reduce's. */
static void len_tol(bo_case *c, int64_t len) { c->atol = c->atol * (1 + sqrt((double)len)); }

/* Reduce* over k_edges (f32; ReduceProd's product of 16,411 terms would
 * overflow, so it takes the first three). */
static void reduce_edges(bo_ctx *ctx, const reduce_row *rr) {
    const char *op = bo_op_name(ctx);
    size_t n = strcmp(op, "ReduceProd") == 0 ? 3 : BO_LEN(k_edges);
    for (size_t t = 0; t < n; t++) {
        bo_case *c = bo_next(ctx, 18);
        if (!c) continue;
        const edge_shape *e = &k_edges[t];
        rlx_tensor *x = bo_rand(RLX_DTYPE_F32, e->s.rank, e->s.d, rr->lo, rr->hi);
        char sb[96];
        bo_desc(c, "%s f32 x%s axes=[%lld] keepdims=1: %s", op, bo_shape_str(e->s.rank, e->s.d, sb, 96),
                (long long)e->axis, e->what);
        len_tol(c, e->s.d[e->axis]);
        rlx_tensor *in[2] = { x, bo_i64s(1, &e->axis) };
        bool k[2] = { false, true };
        rlx_attr a = RLX_ATTR_I("keepdims", 1);
        bo_single(c, op, 2, in, k, 1, 1, &a);
        bo_run(ctx, c);
    }
}

/* ReduceL2 of huge and tiny values (uniform in [-2, 2] times 1e20 or
 * 1e-25) over k_edges: their squares overflow to inf or vanish in f32, so
 * the GPU sums them scaled (reduce.wgsl's (scale, ssq) pairs) where the CPU
 * sums squares in double; before, it gave inf and 0. The op's tolerance,
 * its absolute part scaled with the values. Then rows of special values. */
static void reduce_l2_scales(bo_ctx *ctx) {
    static const double scales[2] = { 1e20, 1e-25 };
    for (int k = 0; k < 2; k++)
        for (size_t t = 0; t < BO_LEN(k_edges); t++) {
            bo_case *c = bo_next(ctx, 18);
            if (!c) continue;
            const edge_shape *e = &k_edges[t];
            rlx_tensor *x = bo_rand(RLX_DTYPE_F32, e->s.rank, e->s.d, -2, 2);
            float *p = x->data;
            for (size_t i = 0; i < x->nbytes / sizeof(float); i++) p[i] *= (float)scales[k];
            char sb[96];
            bo_desc(c, "ReduceL2 f32 x%s axes=[%lld] keepdims=1, values times %g: %s",
                    bo_shape_str(e->s.rank, e->s.d, sb, 96), (long long)e->axis, scales[k], e->what);
            len_tol(c, e->s.d[e->axis]);
            c->atol *= scales[k];
            rlx_tensor *in[2] = { x, bo_i64s(1, &e->axis) };
            bool kc[2] = { false, true };
            rlx_attr a = RLX_ATTR_I("keepdims", 1);
            bo_single(c, "ReduceL2", 2, in, kc, 1, 1, &a);
            bo_run(ctx, c);
        }
    /* rows of special values: the tester's [3e20, 4e20] (5e20; inf
     * before), infinities, NaN, zeros, and one of 1e-30 (0 before) */
    bo_case *c = bo_next(ctx, 18);
    if (!c) return;
    static const float rows[9][2] = { { 3e20f, 4e20f }, { INFINITY, 1 }, { INFINITY, -INFINITY }, { NAN, 1 },
                                      { INFINITY, NAN }, { 0, 0 }, { -INFINITY, 3 }, { 1e-30f, -1e-30f },
                                      { 0, 5 } };
    int64_t axis = 1;
    rlx_tensor *x = bo_rand(RLX_DTYPE_F32, 2, (int64_t[]){ 9, 2 }, -2, 2);
    memcpy(x->data, rows, sizeof rows);
    bo_desc(c, "ReduceL2 f32 x[9,2] axes=[1] keepdims=1: special values");
    c->atol = 0; /* relative only: the row of 1e-30 counts */
    rlx_tensor *in[2] = { x, bo_i64s(1, &axis) };
    bool kc[2] = { false, true };
    rlx_attr a = RLX_ATTR_I("keepdims", 1);
    bo_single(c, "ReduceL2", 2, in, kc, 1, 1, &a);
    bo_run(ctx, c);
}

static void gen_reduce(bo_ctx *ctx, const void *arg) {
    const reduce_row *rr = arg;
    const char *op = bo_op_name(ctx);
    int n = bo_full(ctx) ? 64 : 14;
    for (int t = 0; t < (rr->i32 ? 2 : 1); t++)
        for (int i = 0; i < n; i++) {
            if (t && !bo_full(ctx) && i % 2) continue;
            bo_case *c = bo_next(ctx, 18);
            if (!c) continue;
            rlx_dtype dt = t ? RLX_DTYPE_I32 : RLX_DTYPE_F32;
            int r = 1 + i % 6;
            bo_shape s = rand_shape(r, 1, r > 4 ? 4 : 7);
            int64_t ax[8];
            int na = rand_axes(r, ax);
            if (i % 7 == 3) s.d[r - 1] = 1000 + (int64_t)bo_rand_below(500), na = 1, ax[0] = -1; /* > 256 */
            if (i % 7 == 5) s.d[0] = 300, na = 1, ax[0] = 0;
            if (bo_full(ctx) && i == 13) s = (bo_shape){ 2, { 3, 70001 } }, na = 1, ax[0] = 1;
            int keep = i % 3 != 0;
            int noop = 0;
            bool given = i % 5 != 4; /* no axes: all of them (or none with noop_with_empty_axes) */
            if (!given && i % 2) noop = 1;
            if (i == 9) s.d[0] = 0, c->expect_op = ""; /* empty input */
            rlx_tensor *x = dt == RLX_DTYPE_I32 ? bo_rand_int(dt, s.rank, s.d, (int64_t)rr->lo, (int64_t)rr->hi)
                                                 : bo_rand(dt, s.rank, s.d, rr->lo, rr->hi);
            if (noop) c->expect_op = ""; /* an identity */
            char sb[96], ab[96];
            bo_desc(c, "%s %s x%s axes=%s keepdims=%d%s", op, rlx_dtype_name(dt), bo_shape_str(s.rank, s.d, sb, 96),
                    given ? bo_shape_str(na, ax, ab, 96) : "(none)", keep, noop ? " noop_with_empty_axes" : "");
            rlx_tensor *in[2] = { x, given ? bo_i64s(na, ax) : NULL };
            bool k[2] = { false, true };
            rlx_attr a[2] = { RLX_ATTR_I("keepdims", keep), RLX_ATTR_I("noop_with_empty_axes", noop) };
            /* the error of a sum grows with the number of terms */
            int64_t len = 1;
            for (int j = 0; j < na; j++) len *= s.d[(ax[j] + r) % r];
            if (!given) len = bo_numel(&s);
            c->atol = c->atol * (1 + sqrt((double)len));
            bo_single(c, op, 2, in, k, 1, 2, a);
            bo_run(ctx, c);
        }
    if (strcmp(op, "ReduceMax") == 0 || strcmp(op, "ReduceMin") == 0) reduce_specials(ctx);
    reduce_edges(ctx, rr);
    if (strcmp(op, "ReduceL2") == 0) reduce_l2_scales(ctx);
}

/* ReduceMax / ReduceMin on special values (bo_specials by reduced row),
 * f32 and f16, over contiguous rows longer than a workgroup (strided
 * partials, then a tree), short rows, a strided axis (its columns get
 * bo_specials' rows; also one invocation per column, COLS), all axes, and
 * rows long enough to be split in chunks (STAGE 1 and 2). The CPU returns the
 * first NaN of a row if it holds one, else the first element equal to
 * the extreme (so of -0 and +0 the first), compared value for value
 * (BO_SAME_VALUE). Chosen positions in each row of zeros tied at the
 * extreme (rows k % 8 == 3 for Max, 4 for Min; row 0 of fewer rows): +-1
 * elsewhere, -0 at 4 and +0 at 64, 256, 512 and 1024, so that the first
 * zero is not invocation 0's while invocation 0 holds a +0, in workgroups
 * of 64, 128 or 256 reading elements or vec4 words (CONTIG). */
static void reduce_specials(bo_ctx *ctx) {
    const char *op = bo_op_name(ctx);
    bool is_max = strcmp(op, "ReduceMax") == 0;
    static const struct {
        bo_shape s;
        int64_t axis; /* 99: all axes */
        bool half;
    } k_cases[] = {
        { { 2, { 16, 300 } }, -1, false }, { { 2, { 16, 13 } }, 1, false }, { { 2, { 300, 8 } }, 0, false },
        { { 3, { 2, 8, 40 } }, 99, false }, { { 2, { 2, 20000 } }, 1, false }, { { 2, { 16, 300 } }, -1, true },
        { { 2, { 16, 1100 } }, -1, true }, { { 2, { 20, 16 } }, 0, false }, /* one invocation per column (COLS) */
    };
    for (size_t t = 0; t < BO_LEN(k_cases); t++) {
        bo_case *c = bo_next(ctx, 18);
        if (!c) continue;
        const bo_shape *s = &k_cases[t].s;
        bool all = k_cases[t].axis == 99;
        int64_t len = s->d[s->rank - 1];
        rlx_tensor *x = bo_rand(k_cases[t].half ? RLX_DTYPE_F16 : RLX_DTYPE_F32, s->rank, s->d, -4, 4);
        bo_specials(x, all ? 40 : (size_t)len);
        if (k_cases[t].axis == 0 && s->rank == 2) { /* the columns get bo_specials' rows */
            int64_t td[2] = { s->d[1], s->d[0] };
            rlx_tensor *tr = bo_rand(RLX_DTYPE_F32, 2, td, -4, 4);
            bo_specials(tr, (size_t)s->d[0]);
            for (int64_t r = 0; r < s->d[0]; r++)
                for (int64_t q = 0; q < s->d[1]; q++)
                    bo_set(x, (size_t)(r * s->d[1] + q), ((const float *)tr->data)[q * s->d[0] + r]);
            rlx_tensor_destroy(tr);
        }
        size_t rows = (size_t)(bo_numel(s) / len);
        if (k_cases[t].axis == -1 || k_cases[t].axis == s->rank - 1) {
            for (size_t r = 0; r < rows && len > 256; r++) {
                if (r % 8 != (is_max ? 3u : 4u) && !(rows < 8 && r == 0)) continue;
                double far = is_max ? -1.0 : 1.0;
                for (int64_t j = 0; j < len; j++) bo_set(x, r * (size_t)len + (size_t)j, far);
                bo_set(x, r * (size_t)len + 4, -0.0);
                for (int64_t j = 64; j < len && j <= 1024; j *= 2) bo_set(x, r * (size_t)len + (size_t)j, 0.0);
            }
        }
        c->flags |= BO_SAME_VALUE;
        char sb[96];
        bo_desc(c, "%s%s x%s special values axes=", op, k_cases[t].half ? " f16" : "", bo_shape_str(s->rank, s->d, sb, 96));
        if (all) bo_desc(c, "(all)");
        else bo_desc(c, "[%lld]", (long long)k_cases[t].axis);
        rlx_tensor *in[2] = { x, all ? NULL : bo_i64s(1, &k_cases[t].axis) };
        bool k[2] = { false, true };
        rlx_attr a = RLX_ATTR_I("keepdims", 0);
        bo_single(c, op, 2, in, k, 1, 1, &a);
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ ArgMax, ArgMin */

static void gen_arg(bo_ctx *ctx, const void *arg) {
    const char *op = bo_op_name(ctx);
    int n = bo_full(ctx) ? 48 : 12;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        rlx_dtype dt = i % 3 == 2 ? RLX_DTYPE_I32 : RLX_DTYPE_F32;
        int r = 1 + i % 5;
        bo_shape s = rand_shape(r, 1, 7);
        int axis = (int)bo_rand_below((uint64_t)r);
        if (i % 4 == 1) s.d[axis] = 700;
        int64_t ax = bo_rand_below(2) ? axis - r : axis;
        /* small integer values: ties, where select_last_index decides */
        rlx_tensor *x = bo_rand_int(dt, s.rank, s.d, -3, 3);
        int last = i % 2, keep = (i / 2) % 2;
        char sb[96];
        bo_desc(c, "%s %s x%s axis=%lld keepdims=%d select_last_index=%d (ties)", op, rlx_dtype_name(dt),
                bo_shape_str(s.rank, s.d, sb, 96), (long long)ax, keep, last);
        rlx_attr a[3] = { RLX_ATTR_I("axis", ax), RLX_ATTR_I("keepdims", keep), RLX_ATTR_I("select_last_index", last) };
        bo_single(c, op, 1, &x, NULL, 1, 3, a);
        bo_run(ctx, c);
    }
    /* special values (bo_specials by row along the last axis): a NaN wins
     * only as a row's element 0 (docs/ops.md), -0 ties with +0, rows of
     * -inf, +inf or NaN only; f32 and f16, rows shorter and longer than a
     * workgroup */
    static const bo_shape k_special[] = { { 2, { 16, 13 } }, { 2, { 16, 300 } }, { 3, { 2, 8, 70 } } };
    for (int t = 0; t < 8; t++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        const bo_shape *s = &k_special[t % 3];
        bool half = t >= 6;
        int last = t % 2;
        rlx_tensor *x = bo_rand(half ? RLX_DTYPE_F16 : RLX_DTYPE_F32, s->rank, s->d, -4, 4);
        bo_specials(x, (size_t)s->d[s->rank - 1]);
        char sb[96];
        bo_desc(c, "%s%s x%s special values axis=-1 select_last_index=%d", op, half ? " f16" : "",
                bo_shape_str(s->rank, s->d, sb, 96), last);
        rlx_attr a[3] = { RLX_ATTR_I("axis", -1), RLX_ATTR_I("keepdims", 1), RLX_ATTR_I("select_last_index", last) };
        bo_single(c, op, 1, &x, NULL, 1, 3, a);
        bo_run(ctx, c);
    }
    /* NaN places: random small integers (ties), then per row (r % 7) a NaN
     * at element 0 (the answer, onnxruntime's rule), at element 0 with the
     * extreme tied later, in the middle and at the end (never the answer),
     * at the end only, everywhere, nowhere, at random in a fifth but not at
     * element 0. Shapes [outer, len, inner] reduced along 1 reach each
     * scheme of reduce.wgsl: contiguous rows shorter and longer than a
     * workgroup, f16, strided rows one invocation each (COLS) and a
     * workgroup each, few long rows (SPLIT, 2 x 16400). */
    static const struct { bo_shape s; bool half; const char *what; } k_nan[] = {
        { { 3, { 7, 13, 1 } }, false, "short contiguous rows" },
        { { 3, { 7, 300, 1 } }, false, "rows longer than a workgroup" },
        { { 3, { 7, 70, 1 } }, true, "f16 rows" },
        { { 3, { 5, 40, 3 } }, false, "strided rows, one invocation each" },
        { { 3, { 3, 100, 12 } }, false, "strided rows, a workgroup each" },
        { { 3, { 2, 16400, 1 } }, false, "few long rows (split)" },
    };
    for (int t = 0; t < 2 * (int)BO_LEN(k_nan); t++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        const bo_shape *s = &k_nan[t / 2].s;
        int last = t % 2;
        size_t outer = (size_t)s->d[0], len = (size_t)s->d[1], inner = (size_t)s->d[2];
        rlx_tensor *x = bo_rand(k_nan[t / 2].half ? RLX_DTYPE_F16 : RLX_DTYPE_F32, 3, s->d, -3, 3);
        for (size_t i = 0; i < outer * len * inner; i++) bo_set(x, i, (double)bo_rand_below(7) - 3);
        for (size_t o = 0; o < outer; o++)
            for (size_t i = 0; i < inner; i++) {
                size_t base = o * len * inner + i, r = o * inner + i;
#define AT(j) (base + (size_t)(j) * inner)
                switch (r % 7) {
                case 0: bo_set(x, AT(0), NAN); bo_set(x, AT(len / 2), NAN); break;
                case 1: bo_set(x, AT(0), NAN); bo_set(x, AT(len - 1), 9); bo_set(x, AT(len / 3), -9); break;
                case 2: bo_set(x, AT(len / 2), NAN); bo_set(x, AT(len - 1), NAN); break;
                case 3: bo_set(x, AT(len - 1), NAN); break;
                case 4: for (size_t j = 0; j < len; j++) bo_set(x, AT(j), NAN); break;
                case 5: break;
                default:
                    for (size_t j = 1; j < len; j++)
                        if (bo_rand_below(5) == 0) bo_set(x, AT(j), NAN);
                }
#undef AT
            }
        char sb[96];
        bo_desc(c, "%s%s x%s axis=1 select_last_index=%d NaN places: %s", op, k_nan[t / 2].half ? " f16" : "",
                bo_shape_str(s->rank, s->d, sb, 96), last, k_nan[t / 2].what);
        rlx_attr a[3] = { RLX_ATTR_I("axis", 1), RLX_ATTR_I("keepdims", 0), RLX_ATTR_I("select_last_index", last) };
        bo_single(c, op, 1, &x, NULL, 1, 3, a);
        bo_run(ctx, c);
    }
    /* the edge shapes (k_edges), ties among small integers */
    for (size_t t = 0; t < BO_LEN(k_edges); t++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        const edge_shape *e = &k_edges[t];
        rlx_tensor *x = bo_rand_int(RLX_DTYPE_F32, e->s.rank, e->s.d, -50, 50);
        char sb[96];
        bo_desc(c, "%s f32 x%s axis=%lld select_last_index=%d: %s", op, bo_shape_str(e->s.rank, e->s.d, sb, 96),
                (long long)e->axis, (int)(t % 2), e->what);
        rlx_attr a[3] = { RLX_ATTR_I("axis", e->axis), RLX_ATTR_I("keepdims", 1),
                          RLX_ATTR_I("select_last_index", (int64_t)(t % 2)) };
        bo_single(c, op, 1, &x, NULL, 1, 3, a);
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ Softmax family */

static void gen_softmax(bo_ctx *ctx, const void *arg) {
    const char *op = bo_op_name(ctx);
    int n = bo_full(ctx) ? 40 : 10;
    for (int i = 0; i < n; i++) {
        bool v11 = i % 5 == 2; /* the 2-D coercion of Softmax-1/11 */
        bo_case *c = bo_next(ctx, v11 ? 11 : 13);
        if (!c) continue;
        int r = 1 + i % 5;
        bo_shape s = rand_shape(r, 1, 7);
        int axis = (int)bo_rand_below((uint64_t)r);
        if (i % 4 == 3) s.d[axis] = 1000 + (int64_t)bo_rand_below(100);
        int64_t ax = bo_rand_below(2) ? axis - r : axis;
        rlx_tensor *x = bo_rand(RLX_DTYPE_F32, s.rank, s.d, i % 3 == 1 ? -80 : -4, i % 3 == 1 ? 80 : 4);
        bool masked = i % 6 == 5;
        if (masked) { /* -inf entries as attention masks make them; whole rows of -inf give NaN */
            float *v = x->data;
            for (size_t j = 0; j < rlx_tensor_numel(x); j += 3) v[j] = -INFINITY;
        }
        if (!strcmp(op, "Hardmax")) { /* ties: the first index wins */
            float *v = x->data;
            for (size_t j = 0; j < rlx_tensor_numel(x); j++) v[j] = floorf(v[j]);
        }
        char sb[96];
        bo_desc(c, "%s-%d x%s axis=%lld%s%s", op, v11 ? 11 : 13, bo_shape_str(s.rank, s.d, sb, 96), (long long)ax,
                i % 3 == 1 ? " range 80" : "", masked ? " masked (-inf)" : "");
        rlx_attr a = RLX_ATTR_I("axis", ax);
        bo_single(c, op, 1, &x, NULL, 1, 1, &a);
        bo_run(ctx, c);
    }
    /* special values (bo_specials by row): a NaN first or in the middle,
     * rows of -inf, +inf or NaN only, -0 tied with +0. Hardmax is the
     * CPU's fold from the row's first element with ">" (a NaN wins only
     * as element 0, of equal values the first), compared value for value;
     * Softmax and LogSoftmax give NaN where the CPU does */
    static const bo_shape k_special[] = { { 2, { 16, 13 } }, { 2, { 16, 300 } }, { 3, { 2, 8, 70 } } };
    for (int t = 0; t < 3; t++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        const bo_shape *s = &k_special[t];
        rlx_tensor *x = bo_rand(RLX_DTYPE_F32, s->rank, s->d, -4, 4);
        bo_specials(x, (size_t)s->d[s->rank - 1]);
        if (!strcmp(op, "Hardmax")) c->flags |= BO_SAME_VALUE;
        char sb[96];
        bo_desc(c, "%s-13 x%s special values axis=-1", op, bo_shape_str(s->rank, s->d, sb, 96));
        rlx_attr a = RLX_ATTR_I("axis", -1);
        bo_single(c, op, 1, &x, NULL, 1, 1, &a);
        bo_run(ctx, c);
    }
    /* the edge shapes (k_edges; Hardmax: small integers, ties) */
    for (size_t t = 0; t < BO_LEN(k_edges); t++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        const edge_shape *e = &k_edges[t];
        rlx_tensor *x = strcmp(op, "Hardmax") == 0 ? bo_rand_int(RLX_DTYPE_F32, e->s.rank, e->s.d, -4, 4)
                                                   : bo_rand(RLX_DTYPE_F32, e->s.rank, e->s.d, -4, 4);
        char sb[96];
        bo_desc(c, "%s-13 x%s axis=%lld: %s", op, bo_shape_str(e->s.rank, e->s.d, sb, 96), (long long)e->axis, e->what);
        rlx_attr a = RLX_ATTR_I("axis", e->axis);
        bo_single(c, op, 1, &x, NULL, 1, 1, &a);
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ normalisations */

static void gen_layernorm(bo_ctx *ctx, const void *arg) {
    bool rms = strcmp(bo_op_name(ctx), "RMSNormalization") == 0;
    int n = bo_full(ctx) ? 40 : 10;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, rms ? 23 : 17);
        if (!c) continue;
        int r = 1 + i % 5;
        bo_shape s = rand_shape(r, 1, 7);
        if (i % 4 == 1) s.d[r - 1] = 768;
        if (i % 8 == 6) s.d[r - 1] = 4099;
        int axis = (int)bo_rand_below((uint64_t)r);
        int64_t ax = i % 2 ? axis - r : axis;
        /* scale (and B) over the normalised dims, or a suffix of them */
        bo_shape w = { r - axis, { 0 } };
        for (int j = axis; j < r; j++) w.d[j - axis] = s.d[j];
        if (i % 3 == 2 && w.rank > 1) w.d[0] = 1;
        int n_out = rms ? 1 : 1 + (i % 3 == 0 ? 2 : 0);
        float eps = i % 2 ? 1e-5f : 1e-2f;
        rlx_tensor *in[3] = { bo_rand(RLX_DTYPE_F32, s.rank, s.d, -3, 5), bo_rand(RLX_DTYPE_F32, w.rank, w.d, -2, 2),
                              rms || i % 4 == 3 ? NULL : bo_rand(RLX_DTYPE_F32, w.rank, w.d, -1, 1) };
        bool k[3] = { false, i % 2 == 0, true };
        char sb[96], wb[96];
        bo_desc(c, "%s x%s axis=%lld scale%s epsilon=%g%s%s", bo_op_name(ctx), bo_shape_str(s.rank, s.d, sb, 96),
                (long long)ax, bo_shape_str(w.rank, w.d, wb, 96), eps, in[2] ? " with B" : "",
                n_out == 3 ? " + Mean, InvStdDev outputs" : "");
        rlx_attr a[2] = { RLX_ATTR_I("axis", ax), RLX_ATTR_F("epsilon", eps) };
        bo_single(c, bo_op_name(ctx), rms ? 2 : 3, in, k, n_out, 2, a);
        bo_run(ctx, c);
    }
    /* edge shapes, normalised over the last axis: a single element, 70
     * rows of one (COLS), 67 rows of 301 (vec4 words masked), 3 rows of
     * 16,411 (norm_split.wgsl, the last chunk partial); scale and B over
     * the row, LayerNormalization's Mean and InvStdDev on the odd ones */
    static const bo_shape k_ln_edges[] = { { 1, { 1 } }, { 2, { 70, 1 } }, { 2, { 67, 301 } }, { 2, { 3, 16411 } } };
    for (size_t t = 0; t < BO_LEN(k_ln_edges); t++) {
        bo_case *c = bo_next(ctx, rms ? 23 : 17);
        if (!c) continue;
        const bo_shape *s = &k_ln_edges[t];
        int64_t len = s->d[s->rank - 1];
        int n_out = rms || t % 2 == 0 ? 1 : 3;
        rlx_tensor *in[3] = { bo_rand(RLX_DTYPE_F32, s->rank, s->d, -3, 5), bo_rand(RLX_DTYPE_F32, 1, &len, -2, 2),
                              rms ? NULL : bo_rand(RLX_DTYPE_F32, 1, &len, -1, 1) };
        bool k[3] = { false, true, true };
        char sb[96];
        bo_desc(c, "%s x%s axis=-1 scale[%lld]%s%s (edge shape)", bo_op_name(ctx), bo_shape_str(s->rank, s->d, sb, 96),
                (long long)len, in[2] ? " with B" : "", n_out == 3 ? " + Mean, InvStdDev outputs" : "");
        rlx_attr a[2] = { RLX_ATTR_I("axis", -1), RLX_ATTR_F("epsilon", 1e-5f) };
        bo_single(c, bo_op_name(ctx), rms ? 2 : 3, in, k, n_out, 2, a);
        bo_run(ctx, c);
    }
    /* rows of huge values, whose centred squares overflow f32 unscaled
     * (row_scale.wgsl): |x| up to 5e20 and 5e30 on rows of 301 (a
     * workgroup each) and of 3 (COLS); a row of one repeated 1e30 (var 0);
     * rows of 16,411 (norm_split.wgsl); rows in [2e38, 3.3e38) with
     * element 0 at -3.3e38, whose x - mean passes f32's range (a tester's
     * finding: 0 and NaN on the GPU, -inf on the CPU) */
    static const struct { bo_shape s; double lo, hi; } k_big[] = {
        { { 2, { 5, 301 } }, -3e20, 5e20 }, { { 2, { 4, 301 } }, -3e30, 5e30 }, { { 2, { 70, 3 } }, -3e20, 5e20 },
        { { 2, { 2, 64 } }, 1e30, 1e30 }, { { 2, { 2, 16411 } }, -3e20, 5e20 },
        { { 2, { 4, 301 } }, 2e38, 3.3e38 }, { { 2, { 2, 16411 } }, 2e38, 3.3e38 } };
    for (size_t t = 0; t < BO_LEN(k_big); t++) {
        bo_case *c = bo_next(ctx, rms ? 23 : 17);
        if (!c) continue;
        const bo_shape *s = &k_big[t].s;
        int64_t len = s->d[s->rank - 1];
        rlx_tensor *in[3] = { bo_rand(RLX_DTYPE_F32, s->rank, s->d, k_big[t].lo, k_big[t].hi),
                              bo_rand(RLX_DTYPE_F32, 1, &len, -2, 2),
                              rms ? NULL : bo_rand(RLX_DTYPE_F32, 1, &len, -1, 1) };
        for (int64_t r = 0; k_big[t].lo >= 1e38 && r < s->d[0]; r++) bo_set(in[0], (size_t)(r * len), -3.3e38);
        bool k[3] = { false, true, true };
        char sb[96];
        bo_desc(c, "%s x%s in [%g, %g] axis=-1%s (huge values)", bo_op_name(ctx), bo_shape_str(s->rank, s->d, sb, 96),
                k_big[t].lo, k_big[t].hi, rms ? "" : " with B + Mean, InvStdDev outputs");
        rlx_attr a[2] = { RLX_ATTR_I("axis", -1), RLX_ATTR_F("epsilon", 1e-5f) };
        bo_single(c, bo_op_name(ctx), rms ? 2 : 3, in, k, rms ? 1 : 3, 2, a);
        bo_run(ctx, c);
    }
    /* huge values with an epsilon that outweighs their mean square (1e38
     * against ~3e37: a tester's finding, the GPU's RMS dropped epsilon on
     * such rows), rows of 301 and split rows */
    static const bo_shape k_big_eps[] = { { 2, { 3, 301 } }, { 2, { 2, 16411 } } };
    for (size_t t = 0; t < BO_LEN(k_big_eps); t++) {
        bo_case *c = bo_next(ctx, rms ? 23 : 17);
        if (!c) continue;
        const bo_shape *s = &k_big_eps[t];
        int64_t len = s->d[s->rank - 1];
        rlx_tensor *in[3] = { bo_rand(RLX_DTYPE_F32, s->rank, s->d, -1e19, 2e19), bo_rand(RLX_DTYPE_F32, 1, &len, -2, 2),
                              rms ? NULL : bo_rand(RLX_DTYPE_F32, 1, &len, -1, 1) };
        bool k[3] = { false, true, true };
        char sb[96];
        bo_desc(c, "%s x%s in [-1e19, 2e19] axis=-1 epsilon=1e38 (huge values, epsilon that counts)", bo_op_name(ctx),
                bo_shape_str(s->rank, s->d, sb, 96));
        rlx_attr a[2] = { RLX_ATTR_I("axis", -1), RLX_ATTR_F("epsilon", 1e38f) };
        bo_single(c, bo_op_name(ctx), rms ? 2 : 3, in, k, 1, 2, a);
        bo_run(ctx, c);
    }
    /* a NaN in a row of huge values: the whole row NaN, and (LayerNormalization)
     * its InvStdDev (a tester's finding: max / min of the scaled sums dropped it) */
    bo_case *c = bo_next(ctx, rms ? 23 : 17);
    if (c) {
        int64_t d[2] = { 3, 301 }, len = 301;
        rlx_tensor *in[3] = { bo_rand(RLX_DTYPE_F32, 2, d, -1e30, 2e30), bo_rand(RLX_DTYPE_F32, 1, &len, -2, 2),
                              rms ? NULL : bo_rand(RLX_DTYPE_F32, 1, &len, -1, 1) };
        bo_set(in[0], 7, NAN);
        bool k[3] = { false, true, true };
        bo_desc(c, "%s x[3,301] in [-1e30, 2e30] with a NaN at [0,7] axis=-1%s (huge values)", bo_op_name(ctx),
                rms ? "" : " + Mean, InvStdDev outputs");
        rlx_attr a[2] = { RLX_ATTR_I("axis", -1), RLX_ATTR_F("epsilon", 1e-5f) };
        bo_single(c, bo_op_name(ctx), rms ? 2 : 3, in, k, rms ? 1 : 3, 2, a);
        bo_run(ctx, c);
    }
}

/* InstanceNormalization and GroupNormalization (-18 and -21 alternating,
 * 2 groups where the channels allow) on edge shapes: a single element, 70
 * rows (N x C or N x groups) of one (COLS), 65 rows of 301, and rows of
 * 16,406 or 16,411 (norm_split.wgsl; GroupNormalization-21's per-channel
 * scale inside a split row). */
static void channel_norm_edges(bo_ctx *ctx, bool group) {
    static const bo_shape k_shapes[] = { { 3, { 1, 1, 1 } }, { 3, { 70, 1, 1 } }, { 3, { 5, 13, 301 } },
                                         { 3, { 1, 4, 8203 } }, { 3, { 1, 2, 16411 } } };
    for (size_t t = 0; t < BO_LEN(k_shapes); t++) {
        bool v21 = t % 2 == 1;
        bo_case *c = bo_next(ctx, group ? (v21 ? 21 : 18) : 6);
        if (!c) continue;
        const bo_shape *s = &k_shapes[t];
        int64_t g = group && s->d[1] % 2 == 0 ? 2 : 1;
        int64_t pc = !group || v21 ? s->d[1] : g;
        rlx_tensor *in[3] = { bo_rand(RLX_DTYPE_F32, s->rank, s->d, -3, 5), bo_rand(RLX_DTYPE_F32, 1, &pc, -2, 2),
                              bo_rand(RLX_DTYPE_F32, 1, &pc, -1, 1) };
        bool k[3] = { false, true, true };
        char sb[96];
        rlx_attr a[2] = { RLX_ATTR_F("epsilon", 1e-5f), RLX_ATTR_I("num_groups", g) };
        if (group) {
            bo_desc(c, "GroupNormalization-%d x%s num_groups=%lld (edge shape)", v21 ? 21 : 18,
                    bo_shape_str(s->rank, s->d, sb, 96), (long long)g);
            bo_single(c, "GroupNormalization", 3, in, k, 1, 2, a);
        } else {
            bo_desc(c, "InstanceNormalization x%s (edge shape)", bo_shape_str(s->rank, s->d, sb, 96));
            bo_single(c, "InstanceNormalization", 3, in, k, 1, 1, a);
        }
        bo_run(ctx, c);
    }
}

static void gen_instnorm(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 24 : 6;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 6);
        if (!c) continue;
        int r = 2 + i % 4;
        bo_shape s = rand_shape(r, 1, 6);
        if (i % 3 == 1) s.d[r - 1] = 500;
        bo_shape cs = { 1, { s.d[1] } };
        rlx_tensor *in[3] = { bo_rand(RLX_DTYPE_F32, s.rank, s.d, -3, 5), bo_rand(RLX_DTYPE_F32, 1, cs.d, -2, 2),
                              bo_rand(RLX_DTYPE_F32, 1, cs.d, -1, 1) };
        bool k[3] = { false, true, i % 2 == 1 };
        char sb[96];
        bo_desc(c, "InstanceNormalization x%s", bo_shape_str(s.rank, s.d, sb, 96));
        rlx_attr a = RLX_ATTR_F("epsilon", 1e-5f);
        bo_single(c, "InstanceNormalization", 3, in, k, 1, 1, &a);
        bo_run(ctx, c);
    }
    channel_norm_edges(ctx, false);
}

static void gen_groupnorm(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 24 : 6;
    for (int i = 0; i < n; i++) {
        bool v21 = i % 2;
        bo_case *c = bo_next(ctx, v21 ? 21 : 18);
        if (!c) continue;
        int r = 3 + i % 3;
        bo_shape s = rand_shape(r, 1, 6);
        int64_t g = 1 + (int64_t)bo_rand_below(4);
        s.d[1] = g * (1 + (int64_t)bo_rand_below(3));
        if (i % 4 == 3) s.d[r - 1] = 300;
        int64_t pc = v21 ? s.d[1] : g;
        rlx_tensor *in[3] = { bo_rand(RLX_DTYPE_F32, s.rank, s.d, -3, 5), bo_rand(RLX_DTYPE_F32, 1, &pc, -2, 2),
                              bo_rand(RLX_DTYPE_F32, 1, &pc, -1, 1) };
        bool k[3] = { false, true, true };
        char sb[96];
        bo_desc(c, "GroupNormalization-%d x%s num_groups=%lld", v21 ? 21 : 18, bo_shape_str(s.rank, s.d, sb, 96),
                (long long)g);
        rlx_attr a[2] = { RLX_ATTR_I("num_groups", g), RLX_ATTR_F("epsilon", 1e-5f) };
        bo_single(c, "GroupNormalization", 3, in, k, 1, 2, a);
        bo_run(ctx, c);
    }
    channel_norm_edges(ctx, true);
}

static void gen_lpnorm(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 24 : 6;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 1);
        if (!c) continue;
        int r = 1 + i % 4;
        bo_shape s = rand_shape(r, 1, 7);
        int axis = (int)bo_rand_below((uint64_t)r);
        if (i % 3 == 2) s.d[axis] = 400;
        int64_t ax = i % 2 ? axis - r : axis;
        int64_t p = 1 + i % 2;
        rlx_tensor *x = bo_rand(RLX_DTYPE_F32, s.rank, s.d, -3, 3);
        char sb[96];
        bo_desc(c, "LpNormalization x%s axis=%lld p=%lld", bo_shape_str(s.rank, s.d, sb, 96), (long long)ax, (long long)p);
        rlx_attr a[2] = { RLX_ATTR_I("axis", ax), RLX_ATTR_I("p", p) };
        bo_single(c, "LpNormalization", 1, &x, NULL, 1, 2, a);
        bo_run(ctx, c);
    }
    for (size_t t = 0; t < 2 * BO_LEN(k_edges); t++) { /* the edge shapes (k_edges), p = 1 and 2 */
        bo_case *c = bo_next(ctx, 1);
        if (!c) continue;
        const edge_shape *e = &k_edges[t / 2];
        int64_t p = 1 + (int64_t)(t % 2);
        rlx_tensor *x = bo_rand(RLX_DTYPE_F32, e->s.rank, e->s.d, -3, 3);
        char sb[96];
        bo_desc(c, "LpNormalization x%s axis=%lld p=%lld: %s", bo_shape_str(e->s.rank, e->s.d, sb, 96),
                (long long)e->axis, (long long)p, e->what);
        rlx_attr a[2] = { RLX_ATTR_I("axis", e->axis), RLX_ATTR_I("p", p) };
        bo_single(c, "LpNormalization", 1, &x, NULL, 1, 2, a);
        bo_run(ctx, c);
    }
    /* huge values (row_scale.wgsl), p = 2 and 1: rows of 301 in [-3e25, 5e25),
     * rows of 3 (COLS) in [-3e36, 5e36), rows of 16,411 (norm_split.wgsl),
     * p = 1 in [-3e37, 5e37) */
    for (int t = 0; t < 7; t++) {
        bo_case *c = bo_next(ctx, 1);
        if (!c) continue;
        /* 5, 6: p = 1 whose sum of |x| overflows f32 (a tester's finding), rows of 301 and split */
        int64_t d[2] = { t < 2 || t == 5 ? 4 : t < 4 ? 50 : 2, t < 2 || t == 5 ? 301 : t < 4 ? 3 : 16411 };
        int64_t p = t >= 5 ? 1 : 2 - t % 2;
        double m = t < 2 || t == 4 ? 1e25 : t >= 5 ? 1e37 : 1e36;
        rlx_tensor *x = bo_rand(RLX_DTYPE_F32, 2, d, -3 * m, 5 * m);
        char sb[96];
        bo_desc(c, "LpNormalization x%s in [%g, %g] axis=-1 p=%lld (huge values)", bo_shape_str(2, d, sb, 96), -3 * m,
                5 * m, (long long)p);
        rlx_attr a[2] = { RLX_ATTR_I("axis", -1), RLX_ATTR_I("p", p) };
        bo_single(c, "LpNormalization", 1, &x, NULL, 1, 2, a);
        bo_run(ctx, c);
    }
}

static void gen_mvn(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 20 : 5;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        int r = i % 2 ? 4 : 1 + i % 5;
        bo_shape s = rand_shape(r, 1, 7);
        int64_t ax[8];
        int na = rand_axes(r, ax);
        bool dflt = r == 4 && i % 2;
        rlx_tensor *x = bo_rand(RLX_DTYPE_F32, s.rank, s.d, -3, 5);
        char sb[96], ab[96];
        bo_desc(c, "MeanVarianceNormalization x%s axes=%s", bo_shape_str(s.rank, s.d, sb, 96),
                dflt ? "(default [0,2,3])" : bo_shape_str(na, ax, ab, 96));
        rlx_attr a = RLX_ATTR_IS("axes", (size_t)na, ax);
        bo_single(c, "MeanVarianceNormalization", 1, &x, NULL, 1, dflt ? 0 : 1, &a);
        bo_run(ctx, c);
    }
    for (size_t t = 0; t < BO_LEN(k_edges); t++) { /* the edge shapes (k_edges) */
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        const edge_shape *e = &k_edges[t];
        rlx_tensor *x = bo_rand(RLX_DTYPE_F32, e->s.rank, e->s.d, -3, 5);
        char sb[96];
        bo_desc(c, "MeanVarianceNormalization x%s axes=[%lld]: %s", bo_shape_str(e->s.rank, e->s.d, sb, 96),
                (long long)e->axis, e->what);
        rlx_attr a = RLX_ATTR_IS("axes", 1, &e->axis);
        bo_single(c, "MeanVarianceNormalization", 1, &x, NULL, 1, 1, &a);
        bo_run(ctx, c);
    }
    /* huge values (row_scale.wgsl): rows of 301 in [-3e25, 5e25) */
    bo_case *c = bo_next(ctx, 13);
    if (c) {
        int64_t d[3] = { 2, 3, 301 }, ax = 2;
        rlx_tensor *x = bo_rand(RLX_DTYPE_F32, 3, d, -3e25, 5e25);
        bo_desc(c, "MeanVarianceNormalization x[2,3,301] in [-3e25, 5e25] axes=[2] (huge values)");
        rlx_attr a = RLX_ATTR_IS("axes", 1, &ax);
        bo_single(c, "MeanVarianceNormalization", 1, &x, NULL, 1, 1, &a);
        bo_run(ctx, c);
    }
}

static void gen_lrn(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 20 : 5;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        int r = 3 + i % 3;
        bo_shape s = rand_shape(r, 1, 6);
        s.d[1] = 1 + (int64_t)bo_rand_below(12);
        int64_t size = 1 + 2 * (int64_t)bo_rand_below(3) + (i % 4 == 3); /* odd, and one even */
        float alpha = i % 2 ? 1e-4f : 0.5f, beta = i % 2 ? 0.75f : 0.5f, bias = i % 3 ? 1.0f : 2.0f;
        rlx_tensor *x = bo_rand(RLX_DTYPE_F32, s.rank, s.d, -3, 3);
        char sb[96];
        bo_desc(c, "LRN x%s size=%lld alpha=%g beta=%g bias=%g", bo_shape_str(s.rank, s.d, sb, 96), (long long)size, alpha,
                beta, bias);
        rlx_attr a[4] = { RLX_ATTR_I("size", size), RLX_ATTR_F("alpha", alpha), RLX_ATTR_F("beta", beta),
                          RLX_ATTR_F("bias", bias) };
        bo_single(c, "LRN", 1, &x, NULL, 1, 4, a);
        bo_run(ctx, c);
    }
    /* a single element (size 1 and 3: the window clipped to the one
     * channel), 67 channels (a grid not a multiple of 64) */
    static const bo_shape k_lrn_edges[] = { { 3, { 1, 1, 1 } }, { 3, { 1, 1, 1 } }, { 3, { 1, 67, 3 } } };
    for (size_t t = 0; t < BO_LEN(k_lrn_edges); t++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        const bo_shape *s = &k_lrn_edges[t];
        int64_t size = t == 0 ? 1 : t == 1 ? 3 : 6;
        rlx_tensor *x = bo_rand(RLX_DTYPE_F32, s->rank, s->d, -3, 3);
        char sb[96];
        bo_desc(c, "LRN x%s size=%lld (edge shape)", bo_shape_str(s->rank, s->d, sb, 96), (long long)size);
        rlx_attr a[4] = { RLX_ATTR_I("size", size), RLX_ATTR_F("alpha", 1e-4f), RLX_ATTR_F("beta", 0.75f),
                          RLX_ATTR_F("bias", 1.0f) };
        bo_single(c, "LRN", 1, &x, NULL, 1, 4, a);
        bo_run(ctx, c);
    }
}

#define SUM 1e-5, 1e-6, "tree sums in another order: relative 1e-5 plus 1e-6 per sqrt(reduced length)"
#define EXACT 0, 0, "selects: exact"
#define NORM 1e-4, 1e-5, "a mean and a variance summed in another order, then rsqrt (a few ULP)"
static const bo_op k_ops[] = {
    { "ReduceSum", gen_reduce, &(const reduce_row){ true, -2, 2 }, SUM },
    { "ReduceMax", gen_reduce, &(const reduce_row){ true, -100, 100 }, EXACT },
    { "ReduceMin", gen_reduce, &(const reduce_row){ true, -100, 100 }, EXACT },
    { "ReduceProd", gen_reduce, &(const reduce_row){ true, 0.8, 1.25 }, SUM },
    { "ReduceL1", gen_reduce, &(const reduce_row){ true, -2, 2 }, SUM },
    { "ReduceSumSquare", gen_reduce, &(const reduce_row){ true, -2, 2 }, SUM },
    { "ReduceMean", gen_reduce, &(const reduce_row){ false, -2, 2 }, SUM },
    { "ReduceL2", gen_reduce, &(const reduce_row){ false, -2, 2 }, SUM },
    { "ReduceLogSum", gen_reduce, &(const reduce_row){ false, 0.01, 2 }, SUM },
    { "ReduceLogSumExp", gen_reduce, &(const reduce_row){ false, -30, 30 }, SUM },
    { "ArgMax", gen_arg, NULL, EXACT },
    { "ArgMin", gen_arg, NULL, EXACT },
    { "Softmax", gen_softmax, NULL, 1e-5, 1e-7, "exp and a sum in another order: a few ULP of each probability" },
    { "LogSoftmax", gen_softmax, NULL, 1e-5, 1e-5, "log of a sum in another order" },
    { "Hardmax", gen_softmax, NULL, EXACT },
    { "LayerNormalization", gen_layernorm, NULL, NORM },
    { "RMSNormalization", gen_layernorm, NULL, NORM },
    { "InstanceNormalization", gen_instnorm, NULL, NORM },
    { "GroupNormalization", gen_groupnorm, NULL, NORM },
    { "LpNormalization", gen_lpnorm, NULL, NORM },
    { "MeanVarianceNormalization", gen_mvn, NULL, NORM },
    { "LRN", gen_lrn, NULL, 1e-4, 1e-6, "a window sum and pow (a few ULP)" },
};

const bo_family bo_family_reduce = { "reduce", k_ops, BO_LEN(k_ops) };
