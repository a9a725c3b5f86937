/* Cases of the data-movement lowerings (lower_tensor.c): Transpose,
 * Expand, Tile, DepthToSpace, SpaceToDepth, Slice, Concat, Split, Pad, and
 * the view ops (Identity, Reshape, Flatten, Squeeze, Unsqueeze: their copy
 * lowering serves steps that are not views; of a graph input they are
 * views, which the harness accepts). Every dtype the GPU holds, ranks up to
 * 6, negative axes, empty tensors. Data movement is exact: tolerance 0. */
#include <string.h>

#include "harness.h"

static const rlx_dtype k_dts[] = { RLX_DTYPE_F32, RLX_DTYPE_I32, RLX_DTYPE_U32, RLX_DTYPE_I64, RLX_DTYPE_BOOL };

/* Random data of dtype dt (i64 past 32 bits, u32 past 2^31). */
static rlx_tensor *data(rlx_dtype dt, const bo_shape *s) {
    if (dt == RLX_DTYPE_I64) return bo_rand_int(dt, s->rank, s->d, -(1ll << 40), 1ll << 40);
    if (dt == RLX_DTYPE_U32) return bo_rand_int(dt, s->rank, s->d, 0, 0xffffffffll);
    if (dt == RLX_DTYPE_I32) return bo_rand_int(dt, s->rank, s->d, INT32_MIN, INT32_MAX);
    return bo_rand_any(dt, s, -8, 8);
}

/* A random shape of rank r with dims in [lo, hi]. */
static bo_shape rand_shape(int r, int lo, int hi) {
    bo_shape s = { r, { 0 } };
    for (int i = 0; i < r; i++) s.d[i] = lo + (int64_t)bo_rand_below((uint64_t)(hi - lo + 1));
    return s;
}

static rlx_dtype pick_dt(int i, bool bool_ok) {
    rlx_dtype dt = k_dts[(size_t)i % BO_LEN(k_dts)];
    return dt == RLX_DTYPE_BOOL && !bool_ok ? RLX_DTYPE_F32 : dt;
}

static void desc_in(bo_case *c, const char *op, rlx_dtype dt, const bo_shape *s) {
    char sb[96];
    bo_desc(c, "%s %s x%s", op, rlx_dtype_name(dt), bo_shape_str(s->rank, s->d, sb, sizeof sb));
}

/* ------------------------------------------------------------ Transpose */

static void gen_transpose(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 60 : 12;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 21);
        if (!c) continue;
        int r = 1 + i % 6;
        bo_shape s = rand_shape(r, 1, r > 3 ? 4 : 9);
        if (i % 6 == 1) s.d[1] = 300; /* > 256 along one axis */
        if (i == 7) s.d[0] = 0;
        if (i == 7) c->expect_op = "";
        rlx_dtype dt = pick_dt(i, true);
        int64_t perm[8];
        for (int k = 0; k < r; k++) perm[k] = k;
        for (int k = r - 1; k > 0; k--) { /* shuffle */
            int j = (int)bo_rand_below((uint64_t)k + 1);
            int64_t t = perm[k];
            perm[k] = perm[j];
            perm[j] = t;
        }
        desc_in(c, "Transpose", dt, &s);
        char pb[64];
        bo_desc(c, " perm=%s", bo_shape_str(r, perm, pb, sizeof pb));
        rlx_tensor *x = data(dt, &s);
        rlx_attr a = RLX_ATTR_IS("perm", (size_t)r, perm);
        bo_single(c, "Transpose", 1, &x, NULL, 1, i % 5 == 4 ? 0 : 1, &a); /* no perm: reversed */
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ Expand, Tile */

static void gen_expand(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 40 : 10;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        bo_shape out, ins[2];
        bo_broadcast(1 + i % 6, 2, &out, ins);
        /* the shape input may have lower rank than x, and 1s that keep x's dims */
        bo_shape shp = ins[1];
        rlx_dtype dt = pick_dt(i, true);
        desc_in(c, "Expand", dt, &ins[0]);
        char sb[96];
        bo_desc(c, " shape=%s", bo_shape_str(shp.rank, shp.d, sb, sizeof sb));
        rlx_tensor *in[2] = { data(dt, &ins[0]), bo_i64s(shp.rank, shp.d) };
        bool k[2] = { false, true };
        bo_single(c, "Expand", 2, in, k, 1, 0, NULL);
        bo_run(ctx, c);
    }
}

static void gen_tile(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 40 : 10;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        int r = 1 + i % 6;
        bo_shape s = rand_shape(r, 1, r > 3 ? 3 : 7);
        int64_t rep[8];
        for (int k = 0; k < r; k++) rep[k] = 1 + (int64_t)bo_rand_below(3);
        if (i == 3) rep[0] = 0; /* an empty result */
        if (i == 3) c->expect_op = "";
        rlx_dtype dt = pick_dt(i, true);
        desc_in(c, "Tile", dt, &s);
        char sb[96];
        bo_desc(c, " repeats=%s", bo_shape_str(r, rep, sb, sizeof sb));
        rlx_tensor *in[2] = { data(dt, &s), bo_i64s(r, rep) };
        bool k[2] = { false, true };
        bo_single(c, "Tile", 2, in, k, 1, 0, NULL);
        bo_run(ctx, c);
    }
    /* every dim repeated: 12 copy dims that do not merge, more than one copy
     * takes (the H200 sweep found rank-6 tiles declined to the CPU) */
    static const int64_t xd[2][6] = { { 2, 3, 2, 3, 2, 3 }, { 1, 2, 3, 3, 3, 3 } };
    static const int64_t rd[2][6] = { { 2, 2, 2, 2, 2, 2 }, { 1, 3, 2, 2, 1, 2 } };
    for (int i = 0; i < 2; i++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        bo_shape s = { 6, { 0 } };
        memcpy(s.d, xd[i], sizeof xd[i]);
        rlx_dtype dt = i ? RLX_DTYPE_I64 : RLX_DTYPE_F32;
        desc_in(c, "Tile", dt, &s);
        char sb[96];
        bo_desc(c, " repeats=%s (every dim)", bo_shape_str(6, rd[i], sb, sizeof sb));
        rlx_tensor *in[2] = { data(dt, &s), bo_i64s(6, rd[i]) };
        bool k[2] = { false, true };
        bo_single(c, "Tile", 2, in, k, 1, 0, NULL);
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ DepthToSpace, SpaceToDepth */

static void gen_d2s(bo_ctx *ctx, const void *arg) {
    bool d2s = strcmp(bo_op_name(ctx), "DepthToSpace") == 0;
    int n = bo_full(ctx) ? 24 : 6;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        int64_t b = 2 + i % 2 + (i % 5 == 4 ? 2 : 0);
        bo_shape s = { 4, { 1 + (int64_t)bo_rand_below(2), 1 + (int64_t)bo_rand_below(3), 1 + (int64_t)bo_rand_below(5),
                            1 + (int64_t)bo_rand_below(5) } };
        if (d2s) s.d[1] *= b * b;
        else s.d[2] *= b, s.d[3] *= b;
        rlx_dtype dt = pick_dt(i, true);
        const char *mode = i % 2 ? "CRD" : "DCR";
        desc_in(c, d2s ? "DepthToSpace" : "SpaceToDepth", dt, &s);
        bo_desc(c, " blocksize=%lld%s%s", (long long)b, d2s ? " mode=" : "", d2s ? mode : "");
        rlx_tensor *x = data(dt, &s);
        rlx_attr a[2] = { RLX_ATTR_I("blocksize", b), RLX_ATTR_S("mode", mode) };
        bo_single(c, bo_op_name(ctx), 1, &x, NULL, 1, d2s ? 2 : 1, a);
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ Slice */

static void gen_slice(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 80 : 16;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        int r = 1 + i % 5;
        bo_shape s = rand_shape(r, 1, 9);
        if (i % 7 == 3) s.d[r - 1] = 300;
        int na = 1 + (int)bo_rand_below((uint64_t)r);
        int64_t st[8], en[8], ax[8], sp[8];
        bool used[8] = { false };
        for (int k = 0; k < na; k++) {
            int a;
            do a = (int)bo_rand_below((uint64_t)r);
            while (used[a]);
            used[a] = true;
            int64_t d = s.d[a];
            ax[k] = bo_rand_below(2) ? a - r : a; /* negative axes */
            int64_t step = (int64_t)bo_rand_below(3) + 1;
            if (bo_rand_below(3) == 0) step = -step;
            sp[k] = step;
            /* starts/ends: negative, beyond the axis (clamped), INT64 extremes */
            int64_t choices[] = { 0, d, -1, -d - 5, d + 7, (int64_t)bo_rand_below((uint64_t)d + 1), INT64_MAX, INT64_MIN };
            st[k] = choices[bo_rand_below(6)];
            en[k] = choices[bo_rand_below(8)];
            if (i % 4 == 0) { /* a plain forward slice */
                st[k] = (int64_t)bo_rand_below((uint64_t)d);
                en[k] = st[k] + 1 + (int64_t)bo_rand_below((uint64_t)(d - st[k]));
                sp[k] = 1;
            }
        }
        rlx_dtype dt = pick_dt(i, true);
        desc_in(c, "Slice", dt, &s);
        char b1[128], b2[128], b3[64], b4[64];
        bo_desc(c, " starts=%s ends=%s axes=%s steps=%s", bo_shape_str(na, st, b1, 128), bo_shape_str(na, en, b2, 128),
                bo_shape_str(na, ax, b3, 64), bo_shape_str(na, sp, b4, 64));
        c->expect_op = ""; /* may be empty */
        rlx_tensor *in[5] = { data(dt, &s), bo_i64s(na, st), bo_i64s(na, en), bo_i64s(na, ax), bo_i64s(na, sp) };
        bool k[5] = { false, true, true, true, true };
        bo_single(c, "Slice", 5, in, k, 1, 0, NULL);
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ Concat, Split */

static void gen_concat(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 48 : 12;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 13);
        if (!c) continue;
        int r = 1 + i % 6;
        bo_shape s = rand_shape(r, 1, r > 3 ? 3 : 6);
        int axis = (int)bo_rand_below((uint64_t)r);
        int n_in = 1 + (int)bo_rand_below(5);
        rlx_dtype dt = pick_dt(i, false);
        rlx_tensor *in[8];
        bool k[8];
        int64_t ax = bo_rand_below(2) ? axis - r : axis;
        bo_desc(c, "Concat %s axis=%lld:", rlx_dtype_name(dt), (long long)ax);
        for (int j = 0; j < n_in; j++) {
            bo_shape sj = s;
            sj.d[axis] = (int64_t)bo_rand_below(4) + (j == 0 || i % 3 ? 1 : 0); /* some empty along the axis */
            if (i % 5 == 2 && j == 1) sj.d[axis] = 270;
            in[j] = data(dt, &sj);
            k[j] = j == 2;
            char sb[96];
            bo_desc(c, " %s", bo_shape_str(sj.rank, sj.d, sb, sizeof sb));
        }
        c->expect_op = n_in == 1 ? "" : NULL;
        rlx_attr a = RLX_ATTR_I("axis", ax);
        bo_single(c, "Concat", n_in, in, k, 1, 1, &a);
        bo_run(ctx, c);
    }
}

static void gen_split(bo_ctx *ctx, const void *arg) {
    int n = bo_full(ctx) ? 40 : 10;
    for (int i = 0; i < n; i++) {
        bool v18 = i % 2;
        bo_case *c = bo_next(ctx, v18 ? 18 : 13);
        if (!c) continue;
        int r = 1 + i % 5;
        bo_shape s = rand_shape(r, 1, 6);
        int axis = (int)bo_rand_below((uint64_t)r);
        s.d[axis] = 3 + (int64_t)bo_rand_below(8);
        if (i % 7 == 5) s.d[axis] = 301;
        int64_t ax = bo_rand_below(2) ? axis - r : axis;
        rlx_dtype dt = pick_dt(i, true);
        desc_in(c, "Split", dt, &s);
        bo_desc(c, " axis=%lld", (long long)ax);
        rlx_attr a[2];
        size_t na = 0;
        a[na++] = RLX_ATTR_I("axis", ax);
        int n_out;
        rlx_tensor *in[2] = { data(dt, &s), NULL };
        if (v18 && i % 4 == 1) { /* num_outputs, uneven: the last part smaller */
            n_out = 2 + (int)bo_rand_below(3);
            a[na++] = RLX_ATTR_I("num_outputs", n_out);
            bo_desc(c, " num_outputs=%d", n_out);
        } else { /* explicit sizes, some 0 */
            n_out = 1 + (int)bo_rand_below(4);
            int64_t sz[8], left = s.d[axis];
            for (int j = 0; j < n_out - 1; j++) {
                sz[j] = (int64_t)bo_rand_below((uint64_t)left + 1);
                left -= sz[j];
            }
            sz[n_out - 1] = left;
            in[1] = bo_i64s(n_out, sz);
            char sb[96];
            bo_desc(c, " split=%s", bo_shape_str(n_out, sz, sb, sizeof sb));
        }
        c->expect_op = ""; /* one output or empty parts: may be no work */
        bool k[2] = { false, true };
        bo_single(c, "Split", 2, in, k, n_out, na, a);
        bo_run(ctx, c);
    }
}

/* ------------------------------------------------------------ Pad */

static void gen_pad(bo_ctx *ctx, const void *arg) {
    static const char *const k_modes[] = { "constant", "edge", "reflect", "wrap" };
    int per_mode = bo_full(ctx) ? 30 : 8;
    for (size_t m = 0; m < BO_LEN(k_modes); m++)
        for (int i = 0; i < per_mode; i++) {
            bo_case *c = bo_next(ctx, 21);
            if (!c) continue;
            const char *mode = k_modes[m];
            int r = 1 + i % 5;
            bo_shape s = rand_shape(r, 2, 7);
            if (i % 6 == 5) s.d[r - 1] = 300;
            bool reflect = strcmp(mode, "reflect") == 0;
            bool big = i % 4 == 3; /* pads larger than half the axis (reflect: up to size - 1) */
            int64_t pads[16];
            for (int k = 0; k < 2 * r; k++) {
                int64_t d = s.d[k % r];
                int64_t lim = reflect ? d - 1 : d + 2;
                pads[k] = big ? lim : (int64_t)bo_rand_below((uint64_t)(d / 2 + 1));
                if (!big && strcmp(mode, "constant") == 0 && bo_rand_below(4) == 0) pads[k] = -(int64_t)bo_rand_below((uint64_t)d / 2 + 1); /* crop */
            }
            rlx_dtype dt = pick_dt(i, false);
            desc_in(c, "Pad", dt, &s);
            char pb[160];
            bo_desc(c, " mode=%s pads=%s", mode, bo_shape_str(2 * r, pads, pb, sizeof pb));
            rlx_tensor *in[4] = { data(dt, &s), bo_i64s(2 * r, pads), NULL, NULL };
            if (strcmp(mode, "constant") == 0 && i % 2) {
                in[2] = bo_scalar(dt, dt == RLX_DTYPE_F32 ? 2.5 : 7);
                bo_desc(c, " value=given");
            }
            if (i % 5 == 4 && r > 1) { /* axes: pads for some axes only, negative */
                int64_t axes[1] = { -1 };
                int64_t p2[2] = { pads[r - 1], pads[2 * r - 1] };
                rlx_tensor_destroy(in[1]);
                in[1] = bo_i64s(2, p2);
                in[3] = bo_i64s(1, axes);
                bo_desc(c, " axes=[-1] pads=[%lld,%lld]", (long long)p2[0], (long long)p2[1]);
            }
            bool k[4] = { false, true, true, true };
            rlx_attr a = RLX_ATTR_S("mode", mode);
            bo_single(c, "Pad", 4, in, k, 1, 1, &a);
            bo_run(ctx, c);
        }
}

/* ------------------------------------------------------------ views */

static void gen_view(bo_ctx *ctx, const void *arg) {
    const char *op = bo_op_name(ctx);
    int n = bo_full(ctx) ? 20 : 5;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 21);
        if (!c) continue;
        c->flags |= BO_VIEW_OK;
        int r = 1 + i % 5;
        bo_shape s = rand_shape(r, 1, 5);
        rlx_dtype dt = pick_dt(i, true);
        desc_in(c, op, dt, &s);
        rlx_tensor *in[2] = { data(dt, &s), NULL };
        rlx_attr a[1];
        size_t na = 0;
        int n_in = 1;
        if (strcmp(op, "Reshape") == 0) {
            int64_t sh[2] = { -1, s.d[r - 1] };
            if (i % 2) sh[0] = 0, sh[1] = -1; /* 0 copies the input's dim */
            in[1] = bo_i64s(2, sh);
            n_in = 2;
            bo_desc(c, " shape=[%lld,%lld]", (long long)sh[0], (long long)sh[1]);
        } else if (strcmp(op, "Flatten") == 0) {
            a[na++] = RLX_ATTR_I("axis", (int64_t)bo_rand_below((uint64_t)r + 1) - (i % 2 ? r : 0));
            bo_desc(c, " axis=%lld", (long long)a[0].i);
        } else if (strcmp(op, "Squeeze") == 0) {
            s.d[0] = 1;
            rlx_tensor_destroy(in[0]);
            in[0] = data(dt, &s);
            if (i % 2) {
                int64_t ax[1] = { -r };
                in[1] = bo_i64s(1, ax);
                n_in = 2;
                bo_desc(c, " (dim 0 is 1) axes=[%d]", -r);
            }
        } else if (strcmp(op, "Unsqueeze") == 0) {
            int64_t ax[2] = { 0, -1 };
            in[1] = bo_i64s(1 + i % 2, ax);
            n_in = 2;
            bo_desc(c, " axes=%s", i % 2 ? "[0,-1]" : "[0]");
        }
        bool k[2] = { false, true };
        bo_single(c, op, n_in, in, k, 1, na, a);
        bo_run(ctx, c);
    }
}

#define EXACT 0, 0, "data movement: exact"
static const bo_op k_ops[] = {
    { "Transpose", gen_transpose, NULL, EXACT },
    { "Expand", gen_expand, NULL, EXACT },
    { "Tile", gen_tile, NULL, EXACT },
    { "DepthToSpace", gen_d2s, NULL, EXACT },
    { "SpaceToDepth", gen_d2s, NULL, EXACT },
    { "Slice", gen_slice, NULL, EXACT },
    { "Concat", gen_concat, NULL, EXACT },
    { "Split", gen_split, NULL, EXACT },
    { "Pad", gen_pad, NULL, EXACT },
    { "Identity", gen_view, NULL, EXACT },
    { "Reshape", gen_view, NULL, EXACT },
    { "Flatten", gen_view, NULL, EXACT },
    { "Squeeze", gen_view, NULL, EXACT },
    { "Unsqueeze", gen_view, NULL, EXACT },
};

const bo_family bo_family_tensor = { "tensor", k_ops, BO_LEN(k_ops) };
