/* WebGPU lowerings of the reduce, index and logic families (and the ops
 * added beside them) against the CPU backend: random inputs, NaN-poisoned
 * GPU arenas (RLX_GPU_POISON=1, so an unwritten element fails), edge cases
 * (size-1 and size-0 axes, rows longer than a workgroup, sizes that are not
 * multiples of 4 or powers of two, negative indices), and a check in the
 * dispatch report that the node ran on the GPU.
 *
 * Tolerances: float results are compared as |gpu - cpu| <= atol + rtol |cpu|
 * with the values stated at each call; the CPU reference accumulates in
 * double, the GPU in f32 (tree order), so sums over n elements get
 * rtol 1e-5 and an atol that grows with n. Integer, bool and index results
 * must be identical.
 *
 * Skips (exit 0) when there is no GPU adapter, unless
 * RLX_TEST_REQUIRE_GPU=1. Inputs are small: CI runs on lavapipe. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"

#include "backend/cpu/cpu.h"
#include "ir/op.h"

/* ------------------------------------------------------------ runners */

/* Parses the dispatch report: nodes and native nodes of `op`. */
static void report_counts(const char *report, const char *op, int *nodes, int *native) {
    *nodes = *native = -1;
    const char *p = report;
    size_t len = strlen(op);
    while ((p = strstr(p, op)) != NULL) {
        if (p > report && p[-1] == ' ' && p[len] == ' ') {
            int a = 0, b = 0;
            if (sscanf(p + len, "%d %d", &a, &b) == 2) {
                *nodes = a;
                *native = b;
                return;
            }
        }
        p += len;
    }
}

/* One-node model through the public builder; on the GPU, checks in the
 * dispatch report that the node ran natively (expect_native). */
static rlx_status run_op(const char *op, int64_t opset, const char *device, bool expect_native, int n_in,
                         const rlx_tensor *const *in, const int *konst, int n_out, size_t n_attrs,
                         const rlx_attr *attrs, rlx_tensor ***out) {
    *out = NULL;
    rlx_model *m = NULL;
    rlx_session *s = NULL;
    rlx_status st;
    char in_names[16][16], out_names[16][16];
    const char *in_ptrs[16], *out_ptrs[16], *feed_names[16];
    const rlx_tensor *feeds[16];
    int n_feeds = 0;
    if (n_in > 16 || n_out > 16) return RLX_ERR_INVALID_ARGUMENT;
    if ((st = rlx_model_create(opset, &m))) return st;
    for (int i = 0; i < n_in; i++) {
        if (!in[i]) {
            in_ptrs[i] = "";
            continue;
        }
        snprintf(in_names[i], sizeof in_names[i], "in%d", i);
        in_ptrs[i] = in_names[i];
        if (konst && konst[i]) {
            st = rlx_model_add_initializer(m, in_names[i], in[i]);
        } else {
            st = rlx_model_add_input(m, in_names[i], in[i]->dtype, in[i]->rank, in[i]->dims, NULL);
            feed_names[n_feeds] = in_names[i];
            feeds[n_feeds++] = in[i];
        }
        if (st) goto done;
    }
    for (int i = 0; i < n_out; i++) {
        snprintf(out_names[i], sizeof out_names[i], "out%d", i);
        out_ptrs[i] = out_names[i];
    }
    if ((st = rlx_model_add_node(m, op, "node0", (size_t)n_in, in_ptrs, (size_t)n_out, out_ptrs, n_attrs, attrs)))
        goto done;
    for (int i = 0; i < n_out; i++)
        if ((st = rlx_model_add_output(m, out_names[i]))) goto done;
    if ((st = rlx_model_finish(m))) goto done;
    rlx_session_options o = { .device = device };
    if ((st = rlx_session_create(m, &o, &s))) goto done;
    size_t n_got = 0;
    st = rlx_session_run(s, (size_t)n_feeds, feed_names, feeds, out, &n_got);
    if (!st && expect_native) {
        int nodes, native;
        report_counts(rlx_session_dispatch_report(s), op, &nodes, &native);
        CHECK_MSG(nodes == 1 && native == 1, "%s did not run natively on %s:\n%s", op, device,
                  rlx_session_dispatch_report(s));
    }
done:
    rlx_session_destroy(s);
    rlx_model_destroy(m);
    return st;
}

/* GPU against the CPU backend, n_out outputs, |g - c| <= atol + rtol |c|
 * (NaN equals NaN; integer and bool outputs need rtol = atol = 0). */
static void gpu_vs_cpu_n(const char *label, const char *op, int64_t opset, int n_in, const rlx_tensor *const *in,
                         const int *konst, int n_out, size_t n_attrs, const rlx_attr *attrs, double rtol, double atol) {
    rlx_tensor **c = NULL, **g = NULL;
    rlx_status sc = run_op(op, opset, "cpu", false, n_in, in, konst, n_out, n_attrs, attrs, &c);
    CHECK_MSG(sc == RLX_OK, "%s on cpu: %s", label, rlx_last_error());
    rlx_status sg = run_op(op, opset, "gpu", true, n_in, in, konst, n_out, n_attrs, attrs, &g);
    CHECK_MSG(sg == RLX_OK, "%s on gpu: %s", label, rlx_last_error());
    for (int i = 0; c && g && i < n_out; i++) {
        bool ok = test_allclose(g[i], c[i], rtol, atol);
        CHECK_MSG(ok, "%s: output %d: gpu differs from cpu (rtol %g, atol %g; max abs diff %g)", label, i, rtol, atol,
                  test_max_abs_diff(g[i], c[i]));
    }
    test_free_outputs(c, n_out);
    test_free_outputs(g, n_out);
}

static void gpu_vs_cpu(const char *label, const char *op, int64_t opset, int n_in, const rlx_tensor *const *in,
                       const int *konst, size_t n_attrs, const rlx_attr *attrs, double rtol, double atol) {
    gpu_vs_cpu_n(label, op, opset, n_in, in, konst, 1, n_attrs, attrs, rtol, atol);
}

static rlx_tensor *ints(int n, const int64_t *v) {
    int64_t d[1] = { n };
    return test_tensor_i64(1, d, v);
}

static rlx_tensor *rnd(rlx_dtype dt, int rank, const int64_t *dims, float lo, float hi) {
    return test_tensor_random(dt, rank, dims, lo, hi);
}

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
        for (size_t k = 0; k < RLX_ARRAY_LEN(ops); k++) {
            const char *op = ops[k];
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
            if (strcmp(op, "ReduceSum") != 0 && rc->n_axes >= 0) {
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

static void test_softmax(void) {
    static const struct {
        int rank;
        int64_t dims[4];
    } shapes[] = { { 4, { 2, 3, 5, 6 } }, { 2, { 3, 1000 } }, { 2, { 2, 5000 } }, { 3, { 4, 4100, 2 } } };
    for (size_t c = 0; c < RLX_ARRAY_LEN(shapes); c++) {
        rlx_tensor *x = rnd(RLX_DTYPE_F32, shapes[c].rank, shapes[c].dims, -5, 5);
        const rlx_tensor *in[1] = { x };
        for (int axis = -1; axis < shapes[c].rank; axis++) {
            rlx_attr at[1] = { RLX_ATTR_I("axis", axis) };
            char label[96];
            snprintf(label, sizeof label, "Softmax-13 shape %zu axis %d", c, axis);
            gpu_vs_cpu(label, "Softmax", 13, 1, in, NULL, 1, at, 1e-5, 1e-7);
            snprintf(label, sizeof label, "LogSoftmax-13 shape %zu axis %d", c, axis);
            gpu_vs_cpu(label, "LogSoftmax", 13, 1, in, NULL, 1, at, 1e-5, 1e-5);
            if (axis >= 0) {
                snprintf(label, sizeof label, "Softmax-11 shape %zu axis %d", c, axis);
                gpu_vs_cpu(label, "Softmax", 11, 1, in, NULL, 1, at, 1e-5, 1e-7);
            }
        }
        rlx_tensor_destroy(x);
    }
}

/* ------------------------------------------------------------ Cast */

static void test_cast(void) {
    int64_t d[1] = { 23 };
    /* values that probe rounding, NaN, zero, the i32 range and beyond */
    static const float fv[23] = { 0.0f, -0.0f, 0.5f, -0.5f, 1.7f, -1.7f, 123456.78f, -98765.4f, 2147483520.0f,
                                  -2147483648.0f, 3.0e9f, -3.0e9f, 1.0e12f, -1.0e12f, 1.0e19f, -1.0e19f, NAN, 42.0f,
                                  -7.0f, 1e-30f, 65536.0f, 16777217.0f, -1.5f };
    rlx_tensor *xf = test_tensor_f32(1, d, fv);
    static const int64_t iv[23] = { 0, 1, -1, 2, 1000, -1000, 2147483647LL, -2147483647LL - 1, 2147483648LL,
                                    -2147483649LL, 4294967296LL, 16777217LL, -16777217LL, 123456789012LL,
                                    -123456789012LL, 9007199254740993LL, 7, 8, 9, -10, 11, 12, 13 };
    rlx_tensor *xi64 = test_tensor_i64(1, d, iv);
    rlx_tensor *xi32 = test_tensor(RLX_DTYPE_I32, 1, d);
    for (int i = 0; i < 23; i++) ((int32_t *)xi32->data)[i] = (int32_t)(iv[i] * 7919);
    rlx_tensor *xb = rnd(RLX_DTYPE_BOOL, 1, d, 0, 1);
    const rlx_tensor *srcs[4] = { xf, xi32, xi64, xb };
    static const rlx_dtype dts[4] = { RLX_DTYPE_F32, RLX_DTYPE_I32, RLX_DTYPE_I64, RLX_DTYPE_BOOL };
    for (int s = 0; s < 4; s++)
        for (int t = 0; t < 4; t++) {
            const rlx_tensor *in[1] = { srcs[s] };
            rlx_attr at[1] = { RLX_ATTR_I("to", dts[t]) };
            char label[96];
            snprintf(label, sizeof label, "Cast %s -> %s", rlx_dtype_name(dts[s]), rlx_dtype_name(dts[t]));
            /* i64 -> f32 past 2^31 rounds twice on the GPU (documented): 1 ulp */
            double rtol = (s == 2 && t == 0) ? 1.2e-7 : 0;
            gpu_vs_cpu(label, "Cast", 21, 1, in, NULL, 1, at, rtol, 0);
        }
    /* CastLike, and a bool output whose length is not a multiple of 4 */
    int64_t d2[2] = { 3, 7 };
    rlx_tensor *x = rnd(RLX_DTYPE_F32, 2, d2, -1, 1), *like = test_tensor(RLX_DTYPE_BOOL, 1, (int64_t[]){ 1 });
    for (int i = 0; i < 21; i += 3) ((float *)x->data)[i] = 0;
    const rlx_tensor *in[2] = { x, like };
    int konst[2] = { 0, 1 };
    gpu_vs_cpu("CastLike f32 -> bool", "CastLike", 21, 2, in, konst, 0, NULL, 0, 0);
    rlx_tensor *all[] = { xf, xi64, xi32, xb, x, like };
    for (size_t i = 0; i < RLX_ARRAY_LEN(all); i++) rlx_tensor_destroy(all[i]);
}

/* ------------------------------------------------------------ Gather */

static void test_gather(void) {
    int64_t xd[3] = { 5, 6, 4 };
    rlx_tensor *xf = rnd(RLX_DTYPE_F32, 3, xd, -3, 3), *xi = rnd(RLX_DTYPE_I32, 3, xd, -100, 100);
    rlx_tensor *x64 = rnd(RLX_DTYPE_I64, 3, xd, -100, 100), *xb = rnd(RLX_DTYPE_BOOL, 3, xd, 0, 1);
    /* negative indices count from the end */
    int64_t idv[6] = { 0, -1, 3, 2, -4, 1 };
    int64_t id2[2] = { 2, 3 };
    rlx_tensor *idx64 = test_tensor_i64(2, id2, idv);
    rlx_tensor *idx32 = test_tensor(RLX_DTYPE_I32, 2, id2);
    for (int i = 0; i < 6; i++) ((int32_t *)idx32->data)[i] = (int32_t)idv[i];
    const rlx_tensor *datas[4] = { xf, xi, x64, xb };
    for (int dt = 0; dt < 4; dt++)
        for (int axis = -3; axis < 3; axis++) {
            /* bool data needs whole words per run: only axis 0 and 1 have runs of 4 */
            if (dt == 3 && (axis == 2 || axis == -1)) continue;
            for (int ik = 0; ik < 2; ik++)
                for (int konst_idx = 0; konst_idx < 2; konst_idx++) {
                    const rlx_tensor *in[2] = { datas[dt], ik ? idx32 : idx64 };
                    int konst[2] = { 0, konst_idx };
                    rlx_attr at[1] = { RLX_ATTR_I("axis", axis) };
                    char label[96];
                    snprintf(label, sizeof label, "Gather %s axis %d idx %s%s", rlx_dtype_name(datas[dt]->dtype), axis,
                             ik ? "i32" : "i64", konst_idx ? " const" : "");
                    gpu_vs_cpu(label, "Gather", 13, 2, in, konst, 1, at, 0, 0);
                }
        }
    /* embedding lookup: constant table, run-time i64 ids */
    int64_t td[2] = { 50, 12 }, ids_d[2] = { 2, 7 };
    rlx_tensor *table = rnd(RLX_DTYPE_F32, 2, td, -1, 1), *ids = rnd(RLX_DTYPE_I64, 2, ids_d, 0, 50);
    const rlx_tensor *in[2] = { table, ids };
    int konst[2] = { 1, 0 };
    gpu_vs_cpu("Gather embedding", "Gather", 13, 2, in, konst, 0, NULL, 0, 0);
    /* scalar index */
    int64_t zero = -2;
    rlx_tensor *sc = test_tensor_i64(0, NULL, &zero);
    const rlx_tensor *ins[2] = { xf, sc };
    rlx_attr at[1] = { RLX_ATTR_I("axis", 1) };
    gpu_vs_cpu("Gather scalar index", "Gather", 13, 2, ins, NULL, 1, at, 0, 0);
    rlx_tensor *all[] = { xf, xi, x64, xb, idx64, idx32, table, ids, sc };
    for (size_t i = 0; i < RLX_ARRAY_LEN(all); i++) rlx_tensor_destroy(all[i]);
}

/* ------------------------------------------------------------ bool logic */

static void test_logic(void) {
    int64_t ad[3] = { 3, 1, 7 }, bd[2] = { 5, 1 }, yd[3] = { 3, 5, 7 };
    (void)yd;
    /* small integer ranges: equal elements are frequent */
    rlx_tensor *af = rnd(RLX_DTYPE_F32, 3, ad, -2, 2), *bf = rnd(RLX_DTYPE_F32, 2, bd, -2, 2);
    for (int i = 0; i < 21; i += 2) ((float *)af->data)[i] = floorf(((float *)af->data)[i]);
    for (int i = 0; i < 5; i++) ((float *)bf->data)[i] = floorf(((float *)bf->data)[i]);
    ((float *)af->data)[3] = NAN;
    rlx_tensor *ai = rnd(RLX_DTYPE_I32, 3, ad, -3, 3), *bi = rnd(RLX_DTYPE_I32, 2, bd, -3, 3);
    rlx_tensor *a64 = rnd(RLX_DTYPE_I64, 3, ad, -3, 3), *b64 = rnd(RLX_DTYPE_I64, 2, bd, -3, 3);
    /* i64 values that differ only in the high word */
    ((int64_t *)a64->data)[0] = (int64_t)1 << 33;
    ((int64_t *)b64->data)[0] = -((int64_t)1 << 33);
    rlx_tensor *ab = rnd(RLX_DTYPE_BOOL, 3, ad, 0, 1), *bb = rnd(RLX_DTYPE_BOOL, 2, bd, 0, 1);
    static const char *const cmps[] = { "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual" };
    const rlx_tensor *pairs[3][2] = { { af, bf }, { ai, bi }, { a64, b64 } };
    for (size_t k = 0; k < RLX_ARRAY_LEN(cmps); k++)
        for (int t = 0; t < 3; t++) {
            const rlx_tensor *in[2] = { pairs[t][0], pairs[t][1] };
            char label[96];
            snprintf(label, sizeof label, "%s %s", cmps[k], rlx_dtype_name(pairs[t][0]->dtype));
            gpu_vs_cpu(label, cmps[k], 16, 2, in, NULL, 0, NULL, 0, 0);
        }
    const rlx_tensor *inb[2] = { ab, bb }, *inb1[1] = { ab };
    gpu_vs_cpu("Equal bool", "Equal", 19, 2, inb, NULL, 0, NULL, 0, 0);
    gpu_vs_cpu("And", "And", 7, 2, inb, NULL, 0, NULL, 0, 0);
    gpu_vs_cpu("Or", "Or", 7, 2, inb, NULL, 0, NULL, 0, 0);
    gpu_vs_cpu("Xor", "Xor", 7, 2, inb, NULL, 0, NULL, 0, 0);
    gpu_vs_cpu("Not", "Not", 1, 1, inb1, NULL, 0, NULL, 0, 0);
    /* IsNaN / IsInf */
    int64_t sd[1] = { 9 };
    static const float sv[9] = { 1.0f, NAN, INFINITY, -INFINITY, 0.0f, -2.5f, 3.4e38f, -NAN, 7.0f };
    rlx_tensor *sp = test_tensor_f32(1, sd, sv);
    const rlx_tensor *ins[1] = { sp };
    gpu_vs_cpu("IsNaN", "IsNaN", 20, 1, ins, NULL, 0, NULL, 0, 0);
    gpu_vs_cpu("IsInf", "IsInf", 20, 1, ins, NULL, 0, NULL, 0, 0);
    rlx_attr pos[1] = { RLX_ATTR_I("detect_negative", 0) }, neg[1] = { RLX_ATTR_I("detect_positive", 0) };
    gpu_vs_cpu("IsInf positive", "IsInf", 20, 1, ins, NULL, 1, pos, 0, 0);
    gpu_vs_cpu("IsInf negative", "IsInf", 20, 1, ins, NULL, 1, neg, 0, 0);
    /* Where: a bool condition broadcast against data of every type */
    int64_t cd[3] = { 3, 5, 1 };
    rlx_tensor *c = rnd(RLX_DTYPE_BOOL, 3, cd, 0, 1);
    const rlx_tensor *datas[4][2] = { { af, bf }, { ai, bi }, { a64, b64 }, { ab, bb } };
    for (int t = 0; t < 4; t++) {
        const rlx_tensor *in[3] = { c, datas[t][0], datas[t][1] };
        char label[64];
        snprintf(label, sizeof label, "Where %s", rlx_dtype_name(datas[t][0]->dtype));
        gpu_vs_cpu(label, "Where", 16, 3, in, NULL, 0, NULL, 0, 0);
    }
    /* a mask built on the GPU feeds Where on the GPU (bool between kernels) */
    {
        rlx_model *m = NULL;
        rlx_session *s = NULL;
        CHECK_OK(rlx_model_create(16, &m));
        CHECK_OK(rlx_model_add_input(m, "a", RLX_DTYPE_F32, 3, ad, NULL));
        CHECK_OK(rlx_model_add_input(m, "b", RLX_DTYPE_F32, 2, bd, NULL));
        const char *lt_in[2] = { "a", "b" }, *lt_out[1] = { "mask" };
        const char *w_in[3] = { "mask", "a", "b" }, *w_out[1] = { "y" };
        CHECK_OK(rlx_model_add_node(m, "Less", "lt", 2, lt_in, 1, lt_out, 0, NULL));
        CHECK_OK(rlx_model_add_node(m, "Where", "w", 3, w_in, 1, w_out, 0, NULL));
        CHECK_OK(rlx_model_add_output(m, "y"));
        CHECK_OK(rlx_model_add_output(m, "mask"));
        CHECK_OK(rlx_model_finish(m));
        rlx_session_options o = { .device = "gpu" };
        CHECK_OK(rlx_session_create(m, &o, &s));
        const char *names[2] = { "a", "b" };
        const rlx_tensor *feeds[2] = { af, bf };
        rlx_tensor **out = NULL;
        size_t n_out = 0;
        CHECK_OK(rlx_session_run(s, 2, names, feeds, &out, &n_out));
        if (out && n_out == 2) {
            const float *pa = af->data, *pb = bf->data, *py = out[0]->data;
            const uint8_t *pm = out[1]->data;
            size_t bad = 0;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 5; j++)
                    for (int k = 0; k < 7; k++) {
                        float x = pa[i * 7 + k], z = pb[j];
                        bool lt = x < z;
                        size_t at = (size_t)((i * 5 + j) * 7 + k);
                        float want = lt ? x : z;
                        if (pm[at] != (lt ? 1 : 0) || !(py[at] == want || (want != want && py[at] != py[at]))) bad++;
                    }
            CHECK_MSG(bad == 0, "Less -> Where on the GPU: %zu of 105 elements wrong (exact)", bad);
            int nodes, native;
            report_counts(rlx_session_dispatch_report(s), "Where", &nodes, &native);
            CHECK(nodes == 1 && native == 1);
            report_counts(rlx_session_dispatch_report(s), "Less", &nodes, &native);
            CHECK(nodes == 1 && native == 1);
        }
        test_free_outputs(out, (int)n_out);
        rlx_session_destroy(s);
        rlx_model_destroy(m);
    }
    rlx_tensor *all[] = { af, bf, ai, bi, a64, b64, ab, bb, sp, c };
    for (size_t i = 0; i < RLX_ARRAY_LEN(all); i++) rlx_tensor_destroy(all[i]);
}

int main(void) {
    test_seed_from_env();
    if (!test_have_gpu()) {
        fprintf(stderr, "test_webgpu_ops: skipped: no GPU adapter (lavapipe counts; install mesa-vulkan-drivers); set "
                        "RLX_TEST_REQUIRE_GPU=1 to make this a failure\n");
        return 0;
    }
    setenv("RLX_GPU_POISON", "1", 1);
    unsetenv("RLX_MAX_BINDING_BYTES");
    test_reduce();
    test_argmax();
    test_layer_norm();
    test_channel_norms();
    test_softmax();
    test_cast();
    test_gather();
    test_logic();
    TEST_MAIN_END();
}
