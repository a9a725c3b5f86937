/* WebGPU lowerings of the reduce family against the CPU backend: Reduce*
 * and ArgMax/ArgMin over any axes, LayerNormalization, RMSNormalization,
 * Instance-, Group-, Lp- and MeanVarianceNormalization, LRN, Softmax,
 * LogSoftmax and Hardmax. Random inputs, NaN-poisoned GPU arenas (RLX_GPU_POISON=1, so
 * an unwritten element fails), edge cases (size-1 and size-0 axes, rows
 * longer than a workgroup, lengths that are not multiples of 4 or powers of
 * two), and a check in the dispatch report that the node ran on the GPU.
 *
 * Tolerances: float results are compared as |gpu - cpu| <= atol + rtol |cpu|
 * with the values stated at each call; the CPU reference accumulates in
 * double, the GPU in f32 (tree order), so sums over n elements get
 * rtol 1e-5 and an atol that grows with sqrt(n). Integer and index results
 * must be identical.
 *
 * Skips (exit 0) when there is no GPU adapter, unless
 * RLX_TEST_REQUIRE_GPU=1. Inputs are small: CI runs on lavapipe. */
#define _POSIX_C_SOURCE 200809L
#include "gpu_vs_cpu.h"

/* ------------------------------------------------------------ Reduce* */

typedef struct red_case {
    int rank;
    int64_t dims[5];
    int n_axes; /* -1: no axes (all, or none with noop_with_empty_axes) */
    int64_t axes[5];
    int keepdims;
} red_case;

static void test_reduce(void) {
    static const red_case cases[] = {
        { 4, { 3, 5, 7, 4 }, 1, { 3 }, 1 },          /* contiguous rows of 4 */
        { 4, { 3, 5, 7, 4 }, 1, { 1 }, 0 },          /* strided middle axis */
        { 4, { 3, 5, 7, 4 }, 2, { 1, 2 }, 1 },       /* a middle block */
        { 4, { 3, 5, 7, 4 }, 2, { 0, 2 }, 0 },       /* interleaved */
        { 4, { 3, 5, 7, 4 }, 2, { -1, 0 }, 1 },      /* negative axis, outer + inner */
        { 4, { 3, 5, 7, 4 }, -1, { 0 }, 0 },         /* everything */
        { 2, { 3, 1001 }, 1, { 1 }, 1 },             /* rows longer than a workgroup, odd length */
        { 2, { 2, 4099 }, 1, { -1 }, 0 },            /* 256-wide workgroups */
        { 3, { 2, 3, 4100 }, 1, { 1 }, 1 },          /* many rows, one invocation each */
        { 3, { 4, 1, 6 }, 1, { 1 }, 1 },             /* size-1 axis */
        { 3, { 3, 0, 5 }, 1, { 1 }, 1 },             /* size-0 axis: the identity */
        { 5, { 2, 3, 2, 3, 5 }, 3, { 0, 2, 4 }, 1 }, /* three runs */
    };
    static const char *const ops[] = { "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                                       "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare" };
    for (size_t c = 0; c < RLX_ARRAY_LEN(cases); c++) {
        const red_case *rc = &cases[c];
        /* every op on the small shapes and the empty axis; on the long
         * rows, the many-rows scheme and the three runs, the ops whose
         * kernels differ (sum-like, extremes, the two-pass logsumexp) */
        bool all_ops = c < 6 || rc->dims[1] == 0;
        for (size_t k = 0; k < RLX_ARRAY_LEN(ops); k++) {
            const char *op = ops[k];
            if (!all_ops && k != 0 && k != 1 && k != 2 && k != 6 && k != 8) continue;
            bool logsum = strcmp(op, "ReduceLogSum") == 0, prod = strcmp(op, "ReduceProd") == 0;
            /* log needs a positive sum; products stay near 1 */
            rlx_tensor *x = rnd(RLX_DTYPE_F32, rc->rank, rc->dims, logsum ? 0.1f : prod ? 0.9f : -2.0f,
                                logsum ? 2.0f : prod ? 1.1f : 2.0f);
            uint64_t count = 1;
            for (int i = 0; i < rc->n_axes; i++) count *= (uint64_t)rc->dims[(rc->axes[i] + rc->rank) % rc->rank];
            if (rc->n_axes < 0) count = rlx_tensor_numel(x);
            double atol = 1e-6 * (1.0 + sqrt((double)count)); /* f32 tree sums against double sums */
            char label[160];
            /* opset 18: axes as a constant input */
            rlx_tensor *ax = rc->n_axes >= 0 ? ints(rc->n_axes, rc->axes) : NULL;
            const rlx_tensor *in[2] = { x, ax };
            int konst[2] = { 0, 1 };
            rlx_attr at[1] = { RLX_ATTR_I("keepdims", rc->keepdims) };
            snprintf(label, sizeof label, "%s-18 case %zu", op, c);
            gpu_vs_cpu(label, op, 18, ax ? 2 : 1, in, konst, 1, at, 1e-5, atol);
            /* opset 13: axes as an attribute (ReduceSum-13 takes the input) */
            if (strcmp(op, "ReduceSum") != 0 && rc->n_axes >= 0 && (c % 3 == k % 3)) {
                rlx_attr at2[2] = { RLX_ATTR_I("keepdims", rc->keepdims), RLX_ATTR_IS("axes", rc->n_axes, rc->axes) };
                snprintf(label, sizeof label, "%s-13 case %zu", op, c);
                gpu_vs_cpu(label, op, 13, 1, in, konst, 2, at2, 1e-5, atol);
            }
            rlx_tensor_destroy(x);
            rlx_tensor_destroy(ax);
        }
    }
    /* noop_with_empty_axes: each element is its own row */
    {
        int64_t d[3] = { 2, 3, 5 };
        rlx_tensor *x = rnd(RLX_DTYPE_F32, 3, d, 0.1f, 2.0f);
        const rlx_tensor *in[1] = { x };
        rlx_attr at[1] = { RLX_ATTR_I("noop_with_empty_axes", 1) };
        for (size_t k = 0; k < RLX_ARRAY_LEN(ops); k++) {
            char label[96];
            snprintf(label, sizeof label, "%s noop_with_empty_axes", ops[k]);
            gpu_vs_cpu(label, ops[k], 18, 1, in, NULL, 1, at, 1e-6, 1e-6);
        }
        rlx_tensor_destroy(x);
    }
    /* i32: wrapping sums and products are exact */
    {
        int64_t d[3] = { 3, 70, 5 };
        rlx_tensor *x = rnd(RLX_DTYPE_I32, 3, d, -1000, 1000);
        int64_t axv[2] = { 1, 2 };
        rlx_tensor *ax = ints(1, axv), *ax2 = ints(2, axv);
        static const char *const iops[] = { "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                                            "ReduceSumSquare" };
        for (size_t k = 0; k < RLX_ARRAY_LEN(iops); k++) {
            const rlx_tensor *in[2] = { x, ax }, *in2[2] = { x, ax2 };
            int konst[2] = { 0, 1 };
            char label[96];
            snprintf(label, sizeof label, "%s i32 axis 1", iops[k]);
            gpu_vs_cpu(label, iops[k], 18, 2, in, konst, 0, NULL, 0, 0);
            snprintf(label, sizeof label, "%s i32 axes 1,2", iops[k]);
            gpu_vs_cpu(label, iops[k], 18, 2, in2, konst, 0, NULL, 0, 0);
        }
        rlx_tensor_destroy(x);
        rlx_tensor_destroy(ax);
        rlx_tensor_destroy(ax2);
    }
    /* few long rows: chunk partials, then a combining pass */
    {
        int64_t d1[2] = { 3, 20001 }, d2[2] = { 5, 4001 };
        rlx_tensor *x1 = rnd(RLX_DTYPE_F32, 2, d1, 0.5f, 1.5f), *x2 = rnd(RLX_DTYPE_F32, 2, d2, -1, 1);
        rlx_tensor *xi = rnd(RLX_DTYPE_I32, 2, d1, -1000, 1000);
        int64_t a1v[1] = { 1 };
        rlx_tensor *a1 = ints(1, a1v);
        for (size_t k = 0; k < RLX_ARRAY_LEN(ops); k++) {
            if (strcmp(ops[k], "ReduceProd") == 0) continue; /* products of 20000 values overflow */
            const rlx_tensor *in[2] = { x1, a1 }, *in2[1] = { x2 };
            int konst[2] = { 0, 1 };
            char label[96];
            snprintf(label, sizeof label, "%s rows of 20001", ops[k]);
            gpu_vs_cpu(label, ops[k], 18, 2, in, konst, 0, NULL, 1e-5, 1e-4);
            snprintf(label, sizeof label, "%s of all 20005", ops[k]);
            gpu_vs_cpu(label, ops[k], 18, 1, in2, NULL, 0, NULL, 1e-5, 1e-4);
        }
        const rlx_tensor *ini[2] = { xi, a1 };
        int konst[2] = { 0, 1 };
        gpu_vs_cpu("ReduceSum i32 rows of 20001", "ReduceSum", 18, 2, ini, konst, 0, NULL, 0, 0);
        gpu_vs_cpu("ReduceMax i32 rows of 20001", "ReduceMax", 18, 2, ini, konst, 0, NULL, 0, 0);
        const rlx_tensor *inx[1] = { x1 }, *inxi[1] = { xi };
        for (int last = 0; last < 2; last++) {
            rlx_attr at[2] = { RLX_ATTR_I("axis", 1), RLX_ATTR_I("select_last_index", last) };
            gpu_vs_cpu("ArgMax rows of 20001", "ArgMax", 13, 1, inx, NULL, 2, at, 0, 0);
            gpu_vs_cpu("ArgMin i32 rows of 20001 (ties)", "ArgMin", 13, 1, inxi, NULL, 2, at, 0, 0);
        }
        rlx_tensor_destroy(x1);
        rlx_tensor_destroy(x2);
        rlx_tensor_destroy(xi);
        rlx_tensor_destroy(a1);
    }
    /* NaN propagates through max and min */
    {
        int64_t d[2] = { 4, 300 };
        rlx_tensor *x = rnd(RLX_DTYPE_F32, 2, d, -1, 1);
        ((float *)x->data)[2 * 300 + 17] = NAN;
        const rlx_tensor *in[1] = { x };
        rlx_attr at[2] = { RLX_ATTR_IS("axes", 1, (int64_t[]){ 1 }), RLX_ATTR_I("keepdims", 0) };
        gpu_vs_cpu("ReduceMax NaN", "ReduceMax", 13, 1, in, NULL, 2, at, 0, 0);
        gpu_vs_cpu("ReduceMin NaN", "ReduceMin", 13, 1, in, NULL, 2, at, 0, 0);
        rlx_tensor_destroy(x);
    }
}

static void test_argmax(void) {
    static const struct {
        int rank;
        int64_t dims[4];
        int axis;
    } cases[] = {
        { 3, { 3, 5, 7 }, 2 }, { 3, { 3, 5, 7 }, 1 }, { 3, { 3, 5, 7 }, 0 },
        { 2, { 2, 1500 }, 1 }, { 3, { 2, 3, 4100 }, 1 }, { 2, { 5, 1 }, 1 },
    };
    for (size_t c = 0; c < RLX_ARRAY_LEN(cases); c++) {
        for (int dt = 0; dt < 2; dt++) {
            /* i32 in a small range: many ties, so first / last matters */
            rlx_tensor *x = dt ? rnd(RLX_DTYPE_I32, cases[c].rank, cases[c].dims, -3, 3)
                               : rnd(RLX_DTYPE_F32, cases[c].rank, cases[c].dims, -2, 2);
            const rlx_tensor *in[1] = { x };
            for (int last = 0; last < 2; last++)
                for (int keep = 0; keep < 2; keep++) {
                    if (keep != last && c > 1) continue; /* the flags are independent: both on the small cases */
                    rlx_attr at[3] = { RLX_ATTR_I("axis", cases[c].axis - (keep ? 0 : cases[c].rank)),
                                       RLX_ATTR_I("keepdims", keep), RLX_ATTR_I("select_last_index", last) };
                    char label[96];
                    snprintf(label, sizeof label, "ArgMax/Min case %zu %s last %d keep %d", c, dt ? "i32" : "f32",
                             last, keep);
                    gpu_vs_cpu(label, "ArgMax", 13, 1, in, NULL, 3, at, 0, 0);
                    gpu_vs_cpu(label, "ArgMin", 13, 1, in, NULL, 3, at, 0, 0);
                }
            rlx_tensor_destroy(x);
        }
    }
    /* NaN is the maximum and the minimum */
    int64_t d[2] = { 3, 9 };
    rlx_tensor *x = rnd(RLX_DTYPE_F32, 2, d, -2, 2);
    ((float *)x->data)[9 + 4] = NAN;
    const rlx_tensor *in[1] = { x };
    rlx_attr at[1] = { RLX_ATTR_I("axis", 1) };
    gpu_vs_cpu("ArgMax NaN", "ArgMax", 13, 1, in, NULL, 1, at, 0, 0);
    gpu_vs_cpu("ArgMin NaN", "ArgMin", 13, 1, in, NULL, 1, at, 0, 0);
    rlx_tensor_destroy(x);
}

/* ------------------------------------------------------------ normalisations */

static void test_layer_norm(void) {
    static const struct {
        int rank;
        int64_t dims[4];
        int axis;
        int srank; /* scale dims = the trailing srank dims of x */
    } cases[] = {
        { 3, { 2, 5, 384 }, -1, 1 }, /* transformer rows, vec4 aligned */
        { 3, { 2, 5, 48 }, 1, 2 },   /* rows over two dims */
        { 3, { 3, 7, 13 }, 2, 1 },   /* 13: rows not vec4 aligned */
        { 2, { 2, 3001 }, 1, 1 },    /* long row */
        { 3, { 2, 5, 6 }, -1, 0 },   /* scalar scale */
    };
    for (size_t c = 0; c < RLX_ARRAY_LEN(cases); c++) {
        rlx_tensor *x = rnd(RLX_DTYPE_F32, cases[c].rank, cases[c].dims, -3, 3);
        int sr = cases[c].srank;
        const int64_t *sd = cases[c].dims + cases[c].rank - sr;
        rlx_tensor *s = rnd(RLX_DTYPE_F32, sr, sd, 0.5f, 1.5f), *b = rnd(RLX_DTYPE_F32, sr, sd, -1, 1);
        rlx_attr at[2] = { RLX_ATTR_I("axis", cases[c].axis), RLX_ATTR_F("epsilon", 1e-3f) };
        const rlx_tensor *in[3] = { x, s, b };
        int konst[3] = { 0, 1, 1 };
        char label[96];
        snprintf(label, sizeof label, "LayerNormalization case %zu", c);
        gpu_vs_cpu_n(label, "LayerNormalization", 17, 3, in, konst, 3, 2, at, 1e-4, 1e-5);
        snprintf(label, sizeof label, "LayerNormalization no bias case %zu", c);
        gpu_vs_cpu(label, "LayerNormalization", 17, 2, in, konst, 2, at, 1e-4, 1e-5);
        snprintf(label, sizeof label, "RMSNormalization case %zu", c);
        gpu_vs_cpu(label, "RMSNormalization", 23, 2, in, konst, 2, at, 1e-4, 1e-5);
        /* scale as a run-time input */
        int konst2[3] = { 0, 0, 0 };
        snprintf(label, sizeof label, "LayerNormalization runtime scale case %zu", c);
        gpu_vs_cpu(label, "LayerNormalization", 17, 3, in, konst2, 2, at, 1e-4, 1e-5);
        rlx_tensor_destroy(x);
        rlx_tensor_destroy(s);
        rlx_tensor_destroy(b);
    }
    /* a scale that broadcasts over part of the row: [5, 1] against [.., 5, 6] */
    int64_t xd[3] = { 2, 5, 6 }, sd[2] = { 5, 1 };
    rlx_tensor *x = rnd(RLX_DTYPE_F32, 3, xd, -3, 3), *s = rnd(RLX_DTYPE_F32, 2, sd, 0.5f, 1.5f);
    const rlx_tensor *in[2] = { x, s };
    int konst[2] = { 0, 1 };
    rlx_attr at[1] = { RLX_ATTR_I("axis", 1) };
    gpu_vs_cpu("LayerNormalization scale [5,1]", "LayerNormalization", 17, 2, in, konst, 1, at, 1e-4, 1e-5);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(s);
}

static void test_channel_norms(void) {
    int64_t xd[4] = { 2, 6, 5, 7 }, cd[1] = { 6 }, gd[1] = { 3 };
    rlx_tensor *x = rnd(RLX_DTYPE_F32, 4, xd, -3, 3);
    rlx_tensor *s = rnd(RLX_DTYPE_F32, 1, cd, 0.5f, 1.5f), *b = rnd(RLX_DTYPE_F32, 1, cd, -1, 1);
    rlx_tensor *sg = rnd(RLX_DTYPE_F32, 1, gd, 0.5f, 1.5f), *bg = rnd(RLX_DTYPE_F32, 1, gd, -1, 1);
    int konst[3] = { 0, 1, 1 };
    {
        const rlx_tensor *in[3] = { x, s, b };
        rlx_attr at[1] = { RLX_ATTR_F("epsilon", 1e-4f) };
        gpu_vs_cpu("InstanceNormalization", "InstanceNormalization", 22, 3, in, konst, 1, at, 1e-4, 1e-5);
        rlx_attr ag[2] = { RLX_ATTR_I("num_groups", 3), RLX_ATTR_F("epsilon", 1e-4f) };
        gpu_vs_cpu("GroupNormalization-21", "GroupNormalization", 21, 3, in, konst, 2, ag, 1e-4, 1e-5);
    }
    {
        const rlx_tensor *in[3] = { x, sg, bg };
        rlx_attr ag[1] = { RLX_ATTR_I("num_groups", 3) };
        gpu_vs_cpu("GroupNormalization-18", "GroupNormalization", 18, 3, in, konst, 1, ag, 1e-4, 1e-5);
    }
    /* long spatial rows (> a 256 workgroup's vec4s) */
    int64_t ld[3] = { 1, 2, 2500 }, l2[1] = { 2 };
    rlx_tensor *xl = rnd(RLX_DTYPE_F32, 3, ld, -3, 3), *sl = rnd(RLX_DTYPE_F32, 1, l2, 0.5f, 1.5f),
               *bl = rnd(RLX_DTYPE_F32, 1, l2, -1, 1);
    const rlx_tensor *inl[3] = { xl, sl, bl };
    gpu_vs_cpu("InstanceNormalization long", "InstanceNormalization", 6, 3, inl, konst, 0, NULL, 1e-4, 1e-5);
    const rlx_tensor *in1[1] = { x };
    for (int p = 1; p <= 2; p++)
        for (int axis = -1; axis <= 1; axis++) {
            rlx_attr at[2] = { RLX_ATTR_I("p", p), RLX_ATTR_I("axis", axis) };
            char label[64];
            snprintf(label, sizeof label, "LpNormalization p %d axis %d", p, axis);
            gpu_vs_cpu(label, "LpNormalization", 22, 1, in1, NULL, 2, at, 1e-5, 1e-6);
        }
    /* a zero row gives zeros */
    int64_t zd[2] = { 3, 4 };
    rlx_tensor *z = rnd(RLX_DTYPE_F32, 2, zd, -1, 1);
    for (int i = 4; i < 8; i++) ((float *)z->data)[i] = 0;
    const rlx_tensor *inz[1] = { z };
    gpu_vs_cpu("LpNormalization zero row", "LpNormalization", 22, 1, inz, NULL, 0, NULL, 1e-5, 1e-6);
    gpu_vs_cpu("MeanVarianceNormalization", "MeanVarianceNormalization", 13, 1, in1, NULL, 0, NULL, 1e-4, 1e-5);
    int64_t mv[2] = { 1, 3 };
    rlx_attr am[1] = { RLX_ATTR_IS("axes", 2, mv) };
    gpu_vs_cpu("MeanVarianceNormalization axes 1,3", "MeanVarianceNormalization", 13, 1, in1, NULL, 1, am, 1e-4, 1e-5);
    rlx_attr al[4] = { RLX_ATTR_I("size", 3), RLX_ATTR_F("alpha", 0.02f), RLX_ATTR_F("beta", 0.75f),
                       RLX_ATTR_F("bias", 2.0f) };
    gpu_vs_cpu("LRN size 3", "LRN", 13, 1, in1, NULL, 4, al, 1e-5, 1e-6);
    rlx_attr al2[1] = { RLX_ATTR_I("size", 4) };
    gpu_vs_cpu("LRN size 4", "LRN", 13, 1, in1, NULL, 1, al2, 1e-5, 1e-6);
    rlx_tensor *all[] = { x, s, b, sg, bg, xl, sl, bl, z };
    for (size_t i = 0; i < RLX_ARRAY_LEN(all); i++) rlx_tensor_destroy(all[i]);
}

/* Few long rows: the chunked scheme (norm_split.wgsl), rows of 16384 and
 * more, lengths that are not multiples of 4 or of the 4096-element chunk. */
static void test_long_rows(void) {
    int konst[3] = { 0, 1, 1 };
    {
        int64_t xd[4] = { 1, 3, 128, 161 }, cd[1] = { 3 };
        rlx_tensor *x = rnd(RLX_DTYPE_F32, 4, xd, -3, 3), *s = rnd(RLX_DTYPE_F32, 1, cd, 0.5f, 1.5f),
                   *b = rnd(RLX_DTYPE_F32, 1, cd, -1, 1);
        const rlx_tensor *in[3] = { x, s, b };
        gpu_vs_cpu("InstanceNormalization split", "InstanceNormalization", 22, 3, in, konst, 0, NULL, 1e-4, 1e-5);
        rlx_tensor_destroy(x);
        rlx_tensor_destroy(s);
        rlx_tensor_destroy(b);
    }
    {
        int64_t xd[4] = { 1, 8, 64, 81 }, cd[1] = { 8 };
        rlx_tensor *x = rnd(RLX_DTYPE_F32, 4, xd, -3, 3), *s = rnd(RLX_DTYPE_F32, 1, cd, 0.5f, 1.5f),
                   *b = rnd(RLX_DTYPE_F32, 1, cd, -1, 1);
        const rlx_tensor *in[3] = { x, s, b };
        rlx_attr ag[1] = { RLX_ATTR_I("num_groups", 2) };
        gpu_vs_cpu("GroupNormalization-21 split", "GroupNormalization", 21, 3, in, konst, 1, ag, 1e-4, 1e-5);
        rlx_tensor_destroy(x);
        rlx_tensor_destroy(s);
        rlx_tensor_destroy(b);
    }
    {
        int64_t xd[2] = { 3, 20001 }, sd[1] = { 20001 };
        /* an offset mean: the chunked variance must not cancel */
        rlx_tensor *x = rnd(RLX_DTYPE_F32, 2, xd, 97, 103), *s = rnd(RLX_DTYPE_F32, 1, sd, 0.5f, 1.5f),
                   *b = rnd(RLX_DTYPE_F32, 1, sd, -1, 1);
        const rlx_tensor *in[3] = { x, s, b };
        rlx_attr at[1] = { RLX_ATTR_I("axis", -1) };
        gpu_vs_cpu_n("LayerNormalization split", "LayerNormalization", 17, 3, in, konst, 3, 1, at, 1e-4, 1e-4);
        gpu_vs_cpu("RMSNormalization split", "RMSNormalization", 23, 2, in, konst, 1, at, 1e-4, 1e-5);
        const rlx_tensor *in1[1] = { x };
        for (int p = 1; p <= 2; p++) {
            rlx_attr ap[1] = { RLX_ATTR_I("p", p) };
            gpu_vs_cpu(p == 1 ? "LpNormalization p 1 split" : "LpNormalization p 2 split", "LpNormalization", 22, 1,
                       in1, NULL, 1, ap, 1e-4, 1e-9);
        }
        int64_t axes[1] = { 1 };
        rlx_attr am[1] = { RLX_ATTR_IS("axes", 1, axes) };
        gpu_vs_cpu("MeanVarianceNormalization split", "MeanVarianceNormalization", 13, 1, in1, NULL, 1, am, 1e-4, 1e-4);
        rlx_tensor_destroy(x);
        rlx_tensor_destroy(s);
        rlx_tensor_destroy(b);
    }
}

static void test_softmax(void) {
    static const struct {
        int rank;
        int64_t dims[4];
    } shapes[] = { { 4, { 2, 3, 5, 6 } }, { 2, { 3, 1000 } }, { 2, { 2, 5000 } }, { 3, { 4, 4100, 2 } } };
    for (size_t c = 0; c < RLX_ARRAY_LEN(shapes); c++) {
        rlx_tensor *x = rnd(RLX_DTYPE_F32, shapes[c].rank, shapes[c].dims, -5, 5);
        const rlx_tensor *in[1] = { x };
        for (int axis = -1; axis < shapes[c].rank; axis++) {
            if (c >= 2 && axis != -1 && axis != 1) continue; /* the big shapes: the last axis and a strided one */
            rlx_attr at[1] = { RLX_ATTR_I("axis", axis) };
            char label[96];
            snprintf(label, sizeof label, "Softmax-13 shape %zu axis %d", c, axis);
            gpu_vs_cpu(label, "Softmax", 13, 1, in, NULL, 1, at, 1e-5, 1e-7);
            snprintf(label, sizeof label, "LogSoftmax-13 shape %zu axis %d", c, axis);
            gpu_vs_cpu(label, "LogSoftmax", 13, 1, in, NULL, 1, at, 1e-5, 1e-5);
            if (axis >= 0 && c < 2) {
                snprintf(label, sizeof label, "Softmax-11 shape %zu axis %d", c, axis);
                gpu_vs_cpu(label, "Softmax", 11, 1, in, NULL, 1, at, 1e-5, 1e-7);
                snprintf(label, sizeof label, "Hardmax-11 shape %zu axis %d", c, axis);
                gpu_vs_cpu(label, "Hardmax", 11, 1, in, NULL, 1, at, 0, 0);
            }
            if (c < 2) {
                snprintf(label, sizeof label, "Hardmax-13 shape %zu axis %d", c, axis);
                gpu_vs_cpu(label, "Hardmax", 13, 1, in, NULL, 1, at, 0, 0);
            }
        }
        rlx_tensor_destroy(x);
    }
    /* Hardmax with ties: the first maximum wins */
    int64_t td[3] = { 3, 6, 5 };
    rlx_tensor *t = rnd(RLX_DTYPE_F32, 3, td, -2, 2);
    for (size_t i = 0; i < 90; i++) ((float *)t->data)[i] = floorf(((float *)t->data)[i]);
    const rlx_tensor *in[1] = { t };
    for (int axis = 0; axis < 3; axis++) {
        rlx_attr at[1] = { RLX_ATTR_I("axis", axis) };
        gpu_vs_cpu("Hardmax-13 ties", "Hardmax", 13, 1, in, NULL, 1, at, 0, 0);
    }
    rlx_tensor_destroy(t);
}

int main(void) {
    test_seed_from_env();
    if (!test_have_gpu()) {
        fprintf(stderr, "test_webgpu_reduce: skipped: no GPU adapter (lavapipe counts; install mesa-vulkan-drivers); "
                        "set RLX_TEST_REQUIRE_GPU=1 to make this a failure\n");
        return 0;
    }
    gpu_vs_cpu_open();
    test_reduce();
    test_argmax();
    test_layer_norm();
    test_channel_norms();
    test_long_rows();
    test_softmax();
    gpu_vs_cpu_close();
    TEST_MAIN_END();
}
