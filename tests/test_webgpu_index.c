/* WebGPU lowerings of the index and logic families against the CPU
 * backend: Cast, Gather, GatherElements, GatherND, ScatterND and
 * ScatterElements (with reductions and duplicate indices), OneHot, Trilu,
 * EyeLike, CumSum, Pad (edge, reflect, wrap), Dropout, comparisons and
 * logical ops with bool results, IsNaN/IsInf, Where, the copy-based tensor
 * ops on i64 and bool, Shrink, Swish, Clip with run-time bounds or i32;
 * run-time indices out of range fail the GPU run as on the CPU (the same
 * status and message, naming the node), with in-range runs of the same
 * session around them still right. Random inputs,
 * NaN-poisoned GPU arenas (RLX_GPU_POISON=1: an unwritten element, or an
 * unwritten bool byte, fails), negative indices, every element type the GPU
 * holds (f32, i32, i64 as word pairs, bool as packed bytes), and a check in
 * the dispatch report that the node ran on the GPU.
 *
 * Tolerances: exact, except where a call states one (a chunked scan, the
 * double rounding of i64 -> f32).
 *
 * Skips (exit 0) when there is no GPU adapter, unless
 * RLX_TEST_REQUIRE_GPU=1. Inputs are small: CI runs on lavapipe. */
#define _POSIX_C_SOURCE 200809L
#include "gpu_vs_cpu.h"

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
        for (int axis = -2; axis < 3; axis++) {
            /* bool along axis 2 / -1: runs of one byte (the BYTES path) */
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
    /* bool runs of 1 and 5 bytes with an output whose length is not a
     * multiple of 4 (18 and 30 elements: the last word's padding) */
    int64_t bd[2] = { 3, 5 };
    rlx_tensor *xb2 = rnd(RLX_DTYPE_BOOL, 2, bd, 0, 1);
    for (int axis = 0; axis < 2; axis++) {
        const rlx_tensor *inb[2] = { xb2, axis ? idx64 : idx32 };
        rlx_attr atb[1] = { RLX_ATTR_I("axis", axis) };
        char label[64];
        snprintf(label, sizeof label, "Gather bool [3,5] axis %d", axis);
        if (axis == 0) { /* indices into 3 rows */
            static const int32_t v0[6] = { 0, -1, 2, 1, -3, 1 };
            for (int i = 0; i < 6; i++) ((int32_t *)idx32->data)[i] = v0[i];
        }
        gpu_vs_cpu(label, "Gather", 13, 2, inb, NULL, 1, atb, 0, 0);
    }
    rlx_tensor *all[] = { xf, xi, x64, xb, xb2, idx64, idx32, table, ids, sc };
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
    /* a mask built on the GPU feeds Where on the GPU (bool between
     * kernels), then on the CPU (RLX_GPU_DISABLE: the packed bool bytes
     * travel to the host mirror) */
    for (int where_on_cpu = 0; where_on_cpu < 2; where_on_cpu++) {
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
        CHECK_OK(rlx_options_set(g_vs_opts, "gpu.disable", where_on_cpu ? "Where" : NULL));
        CHECK_OK(rlx_session_create_with_options(m, &o, g_vs_opts, &s));
        CHECK_OK(rlx_options_set(g_vs_opts, "gpu.disable", NULL));
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
            CHECK_MSG(bad == 0, "Less -> Where (Where on the %s): %zu of 105 elements wrong (exact)",
                      where_on_cpu ? "cpu" : "gpu", bad);
            int nodes, native;
            test_report_counts(rlx_session_dispatch_report(s), "Where", &nodes, &native);
            CHECK(nodes == 1 && native == (where_on_cpu ? 0 : 1));
            test_report_counts(rlx_session_dispatch_report(s), "Less", &nodes, &native);
            CHECK(nodes == 1 && native == 1);
        }
        test_free_outputs(out, (int)n_out);
        rlx_session_destroy(s);
        rlx_model_destroy(m);
    }
    rlx_tensor *all[] = { af, bf, ai, bi, a64, b64, ab, bb, sp, c };
    for (size_t i = 0; i < RLX_ARRAY_LEN(all); i++) rlx_tensor_destroy(all[i]);
}

/* i64 across devices: ArgMax on the GPU writes i64 word pairs, an i64 Add
 * runs on the CPU (no i64 arithmetic on the GPU), its result indexes a
 * Gather on the GPU. Checked against the CPU backend, exactly. */
static void test_i64_transfers(void) {
    int64_t xd[2] = { 6, 9 }, td[2] = { 9, 4 };
    rlx_tensor *x = rnd(RLX_DTYPE_F32, 2, xd, -3, 3), *table = rnd(RLX_DTYPE_F32, 2, td, -1, 1);
    int64_t shift = -2; /* negative indices after the add (Gather counts them from the end) */
    rlx_tensor *sh = test_tensor_i64(0, NULL, &shift);
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 2, xd, NULL));
    CHECK_OK(rlx_model_add_initializer(m, "table", table));
    CHECK_OK(rlx_model_add_initializer(m, "shift", sh));
    rlx_attr am[2] = { RLX_ATTR_I("axis", 1), RLX_ATTR_I("keepdims", 0) };
    CHECK_OK(rlx_model_add_node(m, "ArgMax", "am", 1, (const char *[]){ "x" }, 1, (const char *[]){ "idx" }, 2, am));
    CHECK_OK(rlx_model_add_node(m, "Add", "add", 2, (const char *[]){ "idx", "shift" }, 1, (const char *[]){ "idx2" }, 0,
                                NULL));
    CHECK_OK(rlx_model_add_node(m, "Gather", "g", 2, (const char *[]){ "table", "idx2" }, 1, (const char *[]){ "y" }, 0,
                                NULL));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_add_output(m, "idx"));
    CHECK_OK(rlx_model_finish(m));
    rlx_tensor **oc = NULL, **og = NULL;
    size_t nc = 0, ng = 0;
    const char *names[1] = { "x" };
    const rlx_tensor *feeds[1] = { x };
    const char *devs[2] = { "cpu", "gpu" };
    for (int d = 0; d < 2; d++) {
        rlx_session *s = NULL;
        rlx_session_options o = { .device = devs[d] };
        CHECK_OK(rlx_session_create_with_options(m, &o, g_vs_opts, &s));
        CHECK_OK(rlx_session_run(s, 1, names, feeds, d ? &og : &oc, d ? &ng : &nc));
        if (d) {
            int nodes, native;
            test_report_counts(rlx_session_dispatch_report(s), "ArgMax", &nodes, &native);
            CHECK(nodes == 1 && native == 1);
            test_report_counts(rlx_session_dispatch_report(s), "Add", &nodes, &native);
            CHECK(nodes == 1 && native == 0);
            test_report_counts(rlx_session_dispatch_report(s), "Gather", &nodes, &native);
            CHECK(nodes == 1 && native == 1);
        }
        rlx_session_destroy(s);
    }
    CHECK(nc == 2 && ng == 2);
    for (size_t i = 0; oc && og && i < nc && i < ng; i++)
        CHECK_MSG(og[i]->nbytes == oc[i]->nbytes && memcmp(og[i]->data, oc[i]->data, oc[i]->nbytes) == 0,
                  "ArgMax -> Add (cpu) -> Gather: output %zu differs between gpu and cpu (exact)", i);
    test_free_outputs(oc, (int)nc);
    test_free_outputs(og, (int)ng);
    rlx_model_destroy(m);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(table);
    rlx_tensor_destroy(sh);
}

/* ------------------------------------------------------------ indexing */

static rlx_tensor *i64_tensor(int rank, const int64_t *dims, const int64_t *v) { return test_tensor_i64(rank, dims, v); }

static void test_gather_elements_nd(void) {
    int64_t xd[3] = { 4, 5, 6 };
    rlx_tensor *xf = rnd(RLX_DTYPE_F32, 3, xd, -3, 3), *x64 = rnd(RLX_DTYPE_I64, 3, xd, -1000, 1000);
    /* GatherElements: indices smaller than the data in the other dims */
    int64_t id[3] = { 3, 5, 2 };
    for (int axis = -3; axis < 3; axis++) {
        int ax = (axis + 3) % 3;
        rlx_tensor *idx = rnd(RLX_DTYPE_I64, 3, id, (float)-xd[ax], (float)xd[ax]); /* negatives too */
        for (int dt = 0; dt < 2; dt++)
            for (int kidx = 0; kidx < 2; kidx++) {
                const rlx_tensor *in[2] = { dt ? x64 : xf, idx };
                int konst[2] = { 0, kidx };
                rlx_attr at[1] = { RLX_ATTR_I("axis", axis) };
                char label[96];
                snprintf(label, sizeof label, "GatherElements %s axis %d%s", dt ? "i64" : "f32", axis,
                         kidx ? " const" : "");
                gpu_vs_cpu(label, "GatherElements", 13, 2, in, konst, 1, at, 0, 0);
            }
        rlx_tensor_destroy(idx);
    }
    /* GatherND: m = 1, 2, 3; batch_dims 0 and 1 */
    {
        int64_t d1[2] = { 3, 1 }, v1[3] = { 2, -1, 0 };
        int64_t d2[3] = { 2, 2, 2 }, v2[8] = { 0, 1, 3, -2, -4, 4, 1, 0 };
        int64_t d3[2] = { 2, 3 }, v3[6] = { 3, 4, 5, 0, 0, -1 };
        int64_t db[3] = { 4, 2, 1 }, vb[8] = { 0, 4, 1, 2, -1, 3, 2, 2 };
        rlx_tensor *i1 = i64_tensor(2, d1, v1), *i2 = i64_tensor(3, d2, v2), *i3 = i64_tensor(2, d3, v3),
                   *ib = i64_tensor(3, db, vb);
        rlx_tensor *idxs[4] = { i1, i2, i3, ib };
        for (int c = 0; c < 4; c++)
            for (int dt = 0; dt < 2; dt++) {
                const rlx_tensor *in[2] = { dt ? x64 : xf, idxs[c] };
                rlx_attr at[1] = { RLX_ATTR_I("batch_dims", c == 3 ? 1 : 0) };
                char label[64];
                snprintf(label, sizeof label, "GatherND case %d %s", c, dt ? "i64" : "f32");
                gpu_vs_cpu(label, "GatherND", 13, 2, in, NULL, 1, at, 0, 0);
            }
        /* bool slices of 8 elements: whole words */
        int64_t bd[3] = { 3, 2, 8 };
        rlx_tensor *xb = rnd(RLX_DTYPE_BOOL, 3, bd, 0, 1);
        int64_t dbi[2] = { 2, 2 }, vbi[4] = { 2, 1, 0, -1 };
        rlx_tensor *ibb = i64_tensor(2, dbi, vbi);
        const rlx_tensor *in[2] = { xb, ibb };
        gpu_vs_cpu("GatherND bool", "GatherND", 13, 2, in, NULL, 0, NULL, 0, 0);
        rlx_tensor *all[] = { i1, i2, i3, ib, xb, ibb };
        for (size_t i = 0; i < RLX_ARRAY_LEN(all); i++) rlx_tensor_destroy(all[i]);
    }
    rlx_tensor_destroy(xf);
    rlx_tensor_destroy(x64);
}

static void test_scatter(void) {
    static const char *const reds[5] = { "none", "add", "mul", "max", "min" };
    int64_t xd[3] = { 4, 5, 3 };
    rlx_tensor *xf = rnd(RLX_DTYPE_F32, 3, xd, -3, 3), *xi = rnd(RLX_DTYPE_I32, 3, xd, -50, 50);
    /* ScatterND: duplicate tuples (1, 2) twice and (-3 = 1, 2) */
    int64_t id[2] = { 4, 2 }, iv[8] = { 1, 2, 3, 0, 1, 2, -3, -3 };
    rlx_tensor *idx = i64_tensor(2, id, iv);
    int64_t ud[2] = { 4, 3 };
    rlx_tensor *uf = rnd(RLX_DTYPE_F32, 2, ud, -2, 2), *ui = rnd(RLX_DTYPE_I32, 2, ud, -9, 9);
    for (int r = 0; r < 5; r++)
        for (int dt = 0; dt < 2; dt++) {
            const rlx_tensor *in[3] = { dt ? xi : xf, idx, dt ? ui : uf };
            rlx_attr at[1] = { RLX_ATTR_S("reduction", reds[r]) };
            char label[64];
            snprintf(label, sizeof label, "ScatterND %s %s", reds[r], dt ? "i32" : "f32");
            gpu_vs_cpu(label, "ScatterND", 18, 3, in, NULL, 1, at, 1e-6, 1e-6);
        }
    /* full-element tuples (m = rank): slices of one element */
    int64_t id3[2] = { 3, 3 }, iv3[9] = { 0, 0, 0, 3, 4, 2, 0, 0, 0 };
    int64_t ud3[1] = { 3 };
    rlx_tensor *idx3 = i64_tensor(2, id3, iv3), *u3 = rnd(RLX_DTYPE_F32, 1, ud3, -2, 2);
    const rlx_tensor *in3[3] = { xf, idx3, u3 };
    rlx_attr add[1] = { RLX_ATTR_S("reduction", "add") };
    gpu_vs_cpu("ScatterND m = rank add", "ScatterND", 18, 3, in3, NULL, 1, add, 1e-6, 1e-6);
    /* i64 data, no reduction */
    rlx_tensor *x64 = rnd(RLX_DTYPE_I64, 3, xd, -50, 50), *u64 = rnd(RLX_DTYPE_I64, 2, ud, -9, 9);
    int64_t iv4[8] = { 1, 2, 3, 0, 0, 4, -1, -1 };
    rlx_tensor *idx4 = i64_tensor(2, id, iv4);
    const rlx_tensor *in4[3] = { x64, idx4, u64 };
    gpu_vs_cpu("ScatterND i64", "ScatterND", 13, 3, in4, NULL, 0, NULL, 0, 0);
    /* ScatterElements along each axis, duplicates within a line */
    int64_t ed[3] = { 3, 4, 2 };
    for (int axis = 0; axis < 3; axis++) {
        rlx_tensor *ei = rnd(RLX_DTYPE_I64, 3, ed, (float)-xd[axis], (float)xd[axis]);
        rlx_tensor *euf = rnd(RLX_DTYPE_F32, 3, ed, -2, 2), *eui = rnd(RLX_DTYPE_I32, 3, ed, -9, 9);
        for (int r = 0; r < 5; r++)
            for (int dt = 0; dt < 2; dt++) {
                const rlx_tensor *in[3] = { dt ? xi : xf, ei, dt ? eui : euf };
                rlx_attr at[2] = { RLX_ATTR_S("reduction", reds[r]), RLX_ATTR_I("axis", axis) };
                char label[80];
                snprintf(label, sizeof label, "ScatterElements axis %d %s %s", axis, reds[r], dt ? "i32" : "f32");
                gpu_vs_cpu(label, "ScatterElements", 18, 3, in, NULL, 2, at, 1e-6, 1e-6);
            }
        rlx_tensor_destroy(ei);
        rlx_tensor_destroy(euf);
        rlx_tensor_destroy(eui);
    }
    rlx_tensor *all[] = { xf, xi, idx, uf, ui, idx3, u3, x64, u64, idx4 };
    for (size_t i = 0; i < RLX_ARRAY_LEN(all); i++) rlx_tensor_destroy(all[i]);
}

static void test_generated(void) {
    /* OneHot: i64 / f32 / i32 indices, negative ones, out of range ones */
    int64_t id[2] = { 3, 4 }, iv[12] = { 0, 1, 4, -1, -5, 2, 3, 7, 9, 0, -3, 1 };
    rlx_tensor *idx = i64_tensor(2, id, iv);
    rlx_tensor *idxf = test_tensor(RLX_DTYPE_F32, 2, id), *idxi = test_tensor(RLX_DTYPE_I32, 2, id);
    for (int i = 0; i < 12; i++) ((float *)idxf->data)[i] = (float)iv[i] + 0.3f, ((int32_t *)idxi->data)[i] = (int32_t)iv[i];
    int64_t depth_v = 5, vd[1] = { 2 };
    rlx_tensor *depth = test_tensor_i64(0, NULL, &depth_v);
    float vals[2] = { -1.5f, 2.5f };
    int64_t vals64[2] = { 7, -((int64_t)1 << 40) };
    rlx_tensor *vf = test_tensor_f32(1, vd, vals), *v64 = test_tensor_i64(1, vd, vals64);
    const rlx_tensor *idxs[3] = { idx, idxf, idxi };
    for (int t = 0; t < 3; t++)
        for (int axis = -3; axis < 3; axis++)
            for (int vv = 0; vv < 2; vv++) {
                const rlx_tensor *in[3] = { idxs[t], depth, vv ? v64 : vf };
                int konst[3] = { 0, 1, 0 };
                rlx_attr at[1] = { RLX_ATTR_I("axis", axis) };
                char label[80];
                snprintf(label, sizeof label, "OneHot %s axis %d values %s", rlx_dtype_name(idxs[t]->dtype), axis,
                         vv ? "i64" : "f32");
                gpu_vs_cpu(label, "OneHot", 11, 3, in, konst, 1, at, 0, 0);
            }
    /* Trilu on f32, i64 and bool, k from -4 to 4 */
    int64_t td[3] = { 2, 5, 7 };
    rlx_tensor *tf = rnd(RLX_DTYPE_F32, 3, td, -3, 3), *t64 = rnd(RLX_DTYPE_I64, 3, td, -9, 9),
               *tb = rnd(RLX_DTYPE_BOOL, 3, td, 0, 1);
    const rlx_tensor *datas[3] = { tf, t64, tb };
    for (int dt = 0; dt < 3; dt++)
        for (int64_t k = -6; k <= 8; k += 3)
            for (int up = 0; up < 2; up++) {
                rlx_tensor *kt = test_tensor_i64(0, NULL, &k);
                const rlx_tensor *in[2] = { datas[dt], kt };
                int konst[2] = { 0, k % 2 == 0 }; /* k constant, or read at run time */
                rlx_attr at[1] = { RLX_ATTR_I("upper", up) };
                char label[80];
                snprintf(label, sizeof label, "Trilu %s k %lld upper %d", rlx_dtype_name(datas[dt]->dtype), (long long)k,
                         up);
                gpu_vs_cpu(label, "Trilu", 14, 2, in, konst, 1, at, 0, 0);
                rlx_tensor_destroy(kt);
            }
    const rlx_tensor *in1[1] = { tf };
    gpu_vs_cpu("Trilu no k", "Trilu", 14, 1, in1, NULL, 0, NULL, 0, 0);
    for (int sign = -1; sign <= 1; sign += 2) { /* run-time k beyond i32: the high word decides */
        int64_t big = sign * ((int64_t)1 << 40);
        rlx_tensor *kt = test_tensor_i64(0, NULL, &big);
        const rlx_tensor *in[2] = { tf, kt };
        gpu_vs_cpu(sign < 0 ? "Trilu k = -2^40" : "Trilu k = 2^40", "Trilu", 14, 2, in, NULL, 0, NULL, 0, 0);
        rlx_tensor_destroy(kt);
    }
    /* EyeLike with k, several output dtypes */
    int64_t ed[2] = { 5, 7 };
    rlx_tensor *e = rnd(RLX_DTYPE_F32, 2, ed, -1, 1);
    static const rlx_dtype eds[4] = { RLX_DTYPE_F32, RLX_DTYPE_I32, RLX_DTYPE_I64, RLX_DTYPE_BOOL };
    for (int t = 0; t < 4; t++)
        for (int k = -5; k <= 7; k += 3) {
            const rlx_tensor *in[1] = { e };
            rlx_attr at[2] = { RLX_ATTR_I("k", k), RLX_ATTR_I("dtype", eds[t]) };
            char label[64];
            snprintf(label, sizeof label, "EyeLike %s k %d", rlx_dtype_name(eds[t]), k);
            gpu_vs_cpu(label, "EyeLike", 22, 1, in, NULL, 2, at, 0, 0);
        }
    /* CumSum: serial lines (same f32 bits as the CPU) and workgroup scans */
    int64_t cd[3] = { 3, 4, 5 }, ld[2] = { 3, 3000 };
    rlx_tensor *cf = rnd(RLX_DTYPE_F32, 3, cd, -2, 2), *ci = rnd(RLX_DTYPE_I32, 3, cd, -100, 100),
               *cl = rnd(RLX_DTYPE_F32, 2, ld, -2, 2), *cli = rnd(RLX_DTYPE_I32, 2, ld, -1000, 1000);
    /* u32 (cumsum.wgsl instantiated for T = u32; large values wrap) */
    rlx_tensor *cu = rnd(RLX_DTYPE_U32, 3, cd, -100, 100), *clu = rnd(RLX_DTYPE_U32, 2, ld, -1000, 1000);
    for (int ex = 0; ex < 2; ex++)
        for (int rev = 0; rev < 2; rev++) {
            rlx_attr at[2] = { RLX_ATTR_I("exclusive", ex), RLX_ATTR_I("reverse", rev) };
            for (int64_t axis = -1; axis < 3; axis++) {
                rlx_tensor *ax = test_tensor_i64(0, NULL, &axis);
                const rlx_tensor *inf[2] = { cf, ax }, *ini[2] = { ci, ax }, *inu[2] = { cu, ax };
                int konst[2] = { 0, 1 };
                char label[80];
                snprintf(label, sizeof label, "CumSum f32 axis %lld excl %d rev %d", (long long)axis, ex, rev);
                gpu_vs_cpu(label, "CumSum", 14, 2, inf, konst, 2, at, 0, 0);
                snprintf(label, sizeof label, "CumSum i32 axis %lld excl %d rev %d", (long long)axis, ex, rev);
                gpu_vs_cpu(label, "CumSum", 14, 2, ini, konst, 2, at, 0, 0);
                snprintf(label, sizeof label, "CumSum u32 axis %lld excl %d rev %d", (long long)axis, ex, rev);
                gpu_vs_cpu(label, "CumSum", 14, 2, inu, konst, 2, at, 0, 0);
                rlx_tensor_destroy(ax);
            }
            int64_t one = 1;
            rlx_tensor *ax = test_tensor_i64(0, NULL, &one);
            const rlx_tensor *inl[2] = { cl, ax }, *inli[2] = { cli, ax }, *inlu[2] = { clu, ax };
            int konst[2] = { 0, 1 };
            char label[80];
            /* a 3000-long scan: chunked f32 sums against serial ones */
            snprintf(label, sizeof label, "CumSum long f32 excl %d rev %d", ex, rev);
            gpu_vs_cpu(label, "CumSum", 14, 2, inl, konst, 2, at, 1e-5, 2e-4);
            snprintf(label, sizeof label, "CumSum long i32 excl %d rev %d", ex, rev);
            gpu_vs_cpu(label, "CumSum", 14, 2, inli, konst, 2, at, 0, 0);
            snprintf(label, sizeof label, "CumSum long u32 excl %d rev %d", ex, rev);
            gpu_vs_cpu(label, "CumSum", 14, 2, inlu, konst, 2, at, 0, 0);
            rlx_tensor_destroy(ax);
        }
    /* Pad edge / reflect / wrap with negative pads */
    int64_t pd[3] = { 3, 4, 5 };
    rlx_tensor *px = rnd(RLX_DTYPE_F32, 3, pd, -3, 3), *pi = rnd(RLX_DTYPE_I32, 3, pd, -9, 9);
    int64_t pads[6] = { 1, -1, 3, 2, 2, -2 };
    rlx_tensor *pt = ints(6, pads);
    static const char *const modes[3] = { "edge", "reflect", "wrap" };
    for (int m = 0; m < 3; m++)
        for (int dt = 0; dt < 2; dt++) {
            const rlx_tensor *in[2] = { dt ? pi : px, pt };
            int konst[2] = { 0, 1 };
            rlx_attr at[1] = { RLX_ATTR_S("mode", modes[m]) };
            char label[64];
            snprintf(label, sizeof label, "Pad %s %s", modes[m], dt ? "i32" : "f32");
            gpu_vs_cpu(label, "Pad", 21, 2, in, konst, 1, at, 0, 0);
        }
    /* Dropout (inference) with its mask */
    const rlx_tensor *ind[1] = { px };
    gpu_vs_cpu_n("Dropout with mask", "Dropout", 13, 1, ind, NULL, 2, 0, NULL, 0, 0);
    /* without the mask: a view step (plan/program.c), no kernel on either
     * device; the output is the input */
    rlx_tensor **dg = NULL;
    CHECK_OK(run_op("Dropout", 7, "gpu", false, 1, ind, NULL, 1, 0, NULL, &dg));
    if (dg) CHECK_MSG(test_allclose(dg[0], px, 0, 0), "Dropout-7 on gpu: not its input");
    test_free_outputs(dg, 1);
    rlx_tensor *all[] = { idx, idxf, idxi, depth, vf, v64, tf, t64, tb, e, cf, ci, cl, cli, cu, clu, px, pi, pt };
    for (size_t i = 0; i < RLX_ARRAY_LEN(all); i++) rlx_tensor_destroy(all[i]);
}

/* ------------------------------------------------------------ data movement of i64 and bool */

static void test_move_types(void) {
    int64_t xd[4] = { 2, 3, 4, 5 };
    rlx_tensor *x64 = rnd(RLX_DTYPE_I64, 4, xd, -1000, 1000), *xb = rnd(RLX_DTYPE_BOOL, 4, xd, 0, 1);
    ((int64_t *)x64->data)[7] = (int64_t)1 << 40; /* a high word that matters */
    const rlx_tensor *datas[2] = { x64, xb };
    for (int t = 0; t < 2; t++) {
        const char *tn = t ? "bool" : "i64";
        char label[80];
        const rlx_tensor *in1[1] = { datas[t] };
        int64_t perm[4] = { 3, 1, 0, 2 };
        rlx_attr tp[1] = { RLX_ATTR_IS("perm", 4, perm) };
        snprintf(label, sizeof label, "Transpose %s", tn);
        gpu_vs_cpu(label, "Transpose", 13, 1, in1, NULL, 1, tp, 0, 0);
        int64_t st[2] = { -1, 1 }, en[2] = { -100, 4 }, ax[2] = { 3, 1 }, sp[2] = { -2, 2 };
        rlx_tensor *ts = ints(2, st), *te = ints(2, en), *ta = ints(2, ax), *tsp = ints(2, sp);
        const rlx_tensor *ins[5] = { datas[t], ts, te, ta, tsp };
        int ks[5] = { 0, 1, 1, 1, 1 };
        snprintf(label, sizeof label, "Slice %s", tn);
        gpu_vs_cpu(label, "Slice", 13, 5, ins, ks, 0, NULL, 0, 0);
        int64_t shape[5] = { 3, 2, 3, 4, 5 };
        rlx_tensor *tsh = ints(5, shape);
        const rlx_tensor *ine[2] = { datas[t], tsh };
        int ke[2] = { 0, 1 };
        snprintf(label, sizeof label, "Expand %s", tn);
        gpu_vs_cpu(label, "Expand", 13, 2, ine, ke, 0, NULL, 0, 0);
        int64_t rp[4] = { 1, 2, 1, 3 };
        rlx_tensor *trp = ints(4, rp);
        const rlx_tensor *int_[2] = { datas[t], trp };
        snprintf(label, sizeof label, "Tile %s", tn);
        gpu_vs_cpu(label, "Tile", 13, 2, int_, ke, 0, NULL, 0, 0);
        int64_t spl[2] = { 1, 4 };
        rlx_tensor *tspl = ints(2, spl);
        const rlx_tensor *insp[2] = { datas[t], tspl };
        rlx_attr sa[1] = { RLX_ATTR_I("axis", -1) };
        snprintf(label, sizeof label, "Split %s", tn);
        gpu_vs_cpu_n(label, "Split", 13, 2, insp, ke, 2, 1, sa, 0, 0);
        rlx_attr dd[1] = { RLX_ATTR_I("blocksize", 2) };
        int64_t d2s[4] = { 1, 4, 3, 2 };
        rlx_tensor *xs = t ? rnd(RLX_DTYPE_BOOL, 4, d2s, 0, 1) : rnd(RLX_DTYPE_I64, 4, d2s, -9, 9);
        const rlx_tensor *ind[1] = { xs };
        snprintf(label, sizeof label, "DepthToSpace %s", tn);
        gpu_vs_cpu(label, "DepthToSpace", 13, 1, ind, NULL, 1, dd, 0, 0);
        rlx_tensor *all[] = { ts, te, ta, tsp, tsh, trp, tspl, xs };
        for (size_t i = 0; i < RLX_ARRAY_LEN(all); i++) rlx_tensor_destroy(all[i]);
    }
    /* i64 Concat and Pad (constant and edge) */
    int64_t cd[4] = { 2, 3, 2, 5 };
    rlx_tensor *c64 = rnd(RLX_DTYPE_I64, 4, cd, -9, 9);
    const rlx_tensor *inc[2] = { x64, c64 };
    rlx_attr ca[1] = { RLX_ATTR_I("axis", 2) };
    gpu_vs_cpu("Concat i64", "Concat", 13, 2, inc, NULL, 1, ca, 0, 0);
    int64_t pads[8] = { 0, 1, -1, 2, 1, 0, 2, -2 };
    int64_t cv = -((int64_t)3 << 35);
    rlx_tensor *tp = ints(8, pads), *tc = test_tensor_i64(0, NULL, &cv);
    const rlx_tensor *inp[3] = { x64, tp, tc };
    int kp[3] = { 0, 1, 1 };
    gpu_vs_cpu("Pad i64 constant", "Pad", 13, 3, inp, kp, 0, NULL, 0, 0);
    rlx_attr edge[1] = { RLX_ATTR_S("mode", "edge") };
    gpu_vs_cpu("Pad i64 edge", "Pad", 13, 2, inp, kp, 1, edge, 0, 0);
    rlx_tensor *all[] = { x64, xb, c64, tp, tc };
    for (size_t i = 0; i < RLX_ARRAY_LEN(all); i++) rlx_tensor_destroy(all[i]);
}

/* ------------------------------------------------------------ run-time indices out of range */

/* One index node "n1" over run-time inputs x (data), i (indices) and, for
 * the scatters, u (updates). */
static rlx_model *index_model(const char *op, const rlx_tensor *x, const rlx_tensor *i, const rlx_tensor *u,
                              size_t n_attrs, const rlx_attr *attrs) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(18, &m));
    CHECK_OK(rlx_model_add_input(m, "x", x->dtype, x->rank, x->dims, NULL));
    CHECK_OK(rlx_model_add_input(m, "i", i->dtype, i->rank, i->dims, NULL));
    if (u) CHECK_OK(rlx_model_add_input(m, "u", u->dtype, u->rank, u->dims, NULL));
    const char *in[3] = { "x", "i", "u" }, *out[1] = { "y" };
    CHECK_OK(rlx_model_add_node(m, op, "n1", u ? 3 : 2, in, 1, out, n_attrs, attrs));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    return m;
}

/* Runs the same feeds on the CPU and the GPU session: both succeed with
 * equal outputs (exact), or both fail with RLX_ERR_INVALID_ARGUMENT and
 * the same message, which names `node` (the GPU reports the CPU's message,
 * index value and range included, when one index is out of range). */
static void run_both(const char *label, rlx_session *sc, rlx_session *sg, size_t n, const char *const *names,
                     const rlx_tensor *const *feeds, bool bad, const char *node) {
    rlx_tensor **oc = NULL, **og = NULL;
    size_t nc = 0, ng = 0;
    rlx_status stc = rlx_session_run(sc, n, names, feeds, &oc, &nc);
    char cmsg[512];
    snprintf(cmsg, sizeof cmsg, "%s", rlx_last_error());
    rlx_status stg = rlx_session_run(sg, n, names, feeds, &og, &ng);
    const char *gmsg = rlx_last_error();
    if (bad) {
        CHECK_MSG(stc == RLX_ERR_INVALID_ARGUMENT, "%s: the cpu run should fail (status %d)", label, (int)stc);
        CHECK_MSG(stg == RLX_ERR_INVALID_ARGUMENT, "%s: the gpu run should fail with RLX_ERR_INVALID_ARGUMENT (status %d)",
                  label, (int)stg);
        CHECK_MSG(strstr(gmsg, node) != NULL, "%s: the gpu message names no %s: %s", label, node, gmsg);
        CHECK_MSG(strcmp(gmsg, cmsg) == 0, "%s: gpu message '%s', cpu message '%s'", label, gmsg, cmsg);
    } else {
        CHECK_MSG(stc == RLX_OK, "%s on cpu: %s", label, cmsg);
        CHECK_MSG(stg == RLX_OK, "%s on gpu: %s", label, gmsg);
        CHECK(nc == 1 && ng == 1);
        if (stc == RLX_OK && stg == RLX_OK && nc == 1 && ng == 1)
            CHECK_MSG(og[0]->nbytes == oc[0]->nbytes && memcmp(og[0]->data, oc[0]->data, oc[0]->nbytes) == 0,
                      "%s: gpu output differs from cpu (exact)", label);
    }
    test_free_outputs(oc, (int)nc);
    test_free_outputs(og, (int)ng);
}

/* The index values of case c with one entry replaced: at position `at`,
 * value `v` (at < 0: none). */
static rlx_tensor *with_index(const rlx_tensor *good, int at, int64_t v) {
    rlx_tensor *t = test_tensor(good->dtype, good->rank, good->dims);
    memcpy(t->data, good->data, good->nbytes);
    if (at >= 0) {
        if (t->dtype == RLX_DTYPE_I64) ((int64_t *)t->data)[at] = v;
        else ((int32_t *)t->data)[at] = (int32_t)v;
    }
    return t;
}

/* Gather, GatherElements, GatherND, ScatterElements and ScatterND with
 * run-time indices: a run with one index out of range fails on the GPU as
 * on the CPU (RLX_ERR_INVALID_ARGUMENT, the CPU's message naming the node);
 * in-range runs of the same session before, between and after succeed and
 * match the CPU (the status is reset every run), in the steady state of
 * pre-recorded commands too (several good runs first). */
static void test_index_errors(void) {
    typedef struct icase {
        const char *op;
        rlx_dtype idt;
        int64_t xd[3], id[3], ud[3];
        int xr, ir, ur; /* ur 0: no updates */
        int64_t good[8], alt[8];
        int bad_at[3];
        int64_t bad_v[3];
        const char *attr;
        int64_t attr_v;
    } icase;
    static const icase cases[] = {
        /* x [5, 4] along axis 0: [-5, 5) */
        { "Gather", RLX_DTYPE_I64, { 5, 4 }, { 3 }, { 0 }, 2, 1, 0, { 0, -1, 3 }, { 4, -5, 2 },
          { 1, 0, 2 }, { 7, -6, (int64_t)1 << 33 }, "axis", 0 },
        { "Gather", RLX_DTYPE_I32, { 3, 6 }, { 2, 2 }, { 0 }, 2, 2, 0, { 0, -1, 5, 2 }, { -6, 1, 1, 4 },
          { 3, 0, 1 }, { 6, -7, 100000 }, "axis", 1 },
        /* x [3, 4], indices [3, 2] along axis 1: [-4, 4) */
        { "GatherElements", RLX_DTYPE_I64, { 3, 4 }, { 3, 2 }, { 0 }, 2, 2, 0, { 0, 3, -1, 2, 1, -4 },
          { 3, 3, 0, -2, 2, 1 }, { 4, 0, 5 }, { 4, -5, 9 }, "axis", 1 },
        /* x [3, 4, 2], tuples of 2: [-3, 3) then [-4, 4) */
        { "GatherND", RLX_DTYPE_I64, { 3, 4, 2 }, { 2, 2 }, { 0 }, 3, 2, 0, { 0, 3, -1, -4 }, { 2, 1, -3, 0 },
          { 3, 0, 2 }, { 4, 3, -5 }, NULL, 0 },
        /* x [3, 4], indices/updates [2, 4] along axis 0: [-3, 3) */
        { "ScatterElements", RLX_DTYPE_I64, { 3, 4 }, { 2, 4 }, { 2, 4 }, 2, 2, 2, { 0, 1, 2, -1, -3, 2, 0, 1 },
          { 2, 2, 1, 0, 1, -1, -2, 0 }, { 5, 0, 7 }, { 3, -4, 12 }, "axis", 0 },
        /* x [4, 3], indices [2, 1], updates [2, 3]: [-4, 4) */
        { "ScatterND", RLX_DTYPE_I64, { 4, 3 }, { 2, 1 }, { 2, 3 }, 2, 2, 2, { 3, -4 }, { 1, 2 }, { 1, 0, 1 },
          { 4, -5, -1000 }, NULL, 0 },
    };
    for (size_t c = 0; c < RLX_ARRAY_LEN(cases); c++) {
        const icase *k = &cases[c];
        rlx_tensor *x = rnd(RLX_DTYPE_F32, k->xr, k->xd, -2, 2);
        rlx_tensor *u = k->ur ? rnd(RLX_DTYPE_F32, k->ur, k->ud, -2, 2) : NULL;
        rlx_tensor *good = test_tensor(k->idt, k->ir, k->id), *alt = test_tensor(k->idt, k->ir, k->id);
        size_t ni = rlx_tensor_numel(good);
        for (size_t j = 0; j < ni; j++) {
            if (k->idt == RLX_DTYPE_I64) ((int64_t *)good->data)[j] = k->good[j], ((int64_t *)alt->data)[j] = k->alt[j];
            else ((int32_t *)good->data)[j] = (int32_t)k->good[j], ((int32_t *)alt->data)[j] = (int32_t)k->alt[j];
        }
        rlx_attr at[1] = { RLX_ATTR_I(k->attr ? k->attr : "axis", k->attr_v) };
        rlx_model *m = index_model(k->op, x, good, u, k->attr ? 1 : 0, at);
        rlx_session *sc = NULL, *sg = NULL;
        rlx_session_options oc = { .device = "cpu" }, og = { .device = "gpu" };
        CHECK_OK(rlx_session_create_with_options(m, &oc, g_vs_opts, &sc));
        CHECK_OK(rlx_session_create_with_options(m, &og, g_vs_opts, &sg));
        if (!sc || !sg) {
            rlx_session_destroy(sc);
            rlx_session_destroy(sg);
            rlx_model_destroy(m);
            continue;
        }
        /* good x3 (the steady state), bad, good, bad, bad, good, bad, good:
         * each bad run has one index out of range (i32 indices: the large
         * value still fits) */
        static const int plan[] = { -1, -2, -1, 0, -2, 1, 2, -1, 0, -2 };
        for (size_t r = 0; r < RLX_ARRAY_LEN(plan); r++) {
            int b = plan[r];
            rlx_tensor *idx = b >= 0 ? with_index(good, k->bad_at[b], k->bad_v[b]) : with_index(b == -1 ? good : alt, -1, 0);
            const char *names[3] = { "x", "i", "u" };
            const rlx_tensor *feeds[3] = { x, idx, u };
            char label[128];
            snprintf(label, sizeof label, "%s idx %s run %zu (%s)", k->op, rlx_dtype_name(k->idt), r,
                     b >= 0 ? "index out of range" : "in range");
            run_both(label, sc, sg, u ? 3 : 2, names, feeds, b >= 0, "node 'n1'");
            rlx_tensor_destroy(idx);
        }
        int nodes = 0, native = 0;
        test_report_counts(rlx_session_dispatch_report(sg), k->op, &nodes, &native);
        CHECK_MSG(nodes == 1 && native == 1, "%s: the node ran on the GPU", k->op);
        rlx_session_destroy(sc);
        rlx_session_destroy(sg);
        rlx_model_destroy(m);
        rlx_tensor_destroy(x);
        rlx_tensor_destroy(u);
        rlx_tensor_destroy(good);
        rlx_tensor_destroy(alt);
    }
}

/* Two Gathers in a row, g1 then g2 (Gather(Gather(x, i1), i2)), with and
 * without a CPU step between them (a Relu sent to the CPU: two GPU
 * segments): the message names the first failing node in plan order, as
 * the CPU's does; both bad names g1. */
static void test_index_errors_order(void) {
    int64_t xd[2] = { 6, 5 }, id[1] = { 4 };
    rlx_tensor *x = rnd(RLX_DTYPE_F32, 2, xd, -2, 2);
    static const int64_t good1[4] = { 5, 0, -6, 2 }, good2[4] = { 3, -4, 0, 1 };
    for (int split = 0; split < 2; split++) {
        rlx_model *m = NULL;
        CHECK_OK(rlx_model_create(13, &m));
        CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 2, xd, NULL));
        CHECK_OK(rlx_model_add_input(m, "i1", RLX_DTYPE_I64, 1, id, NULL));
        CHECK_OK(rlx_model_add_input(m, "i2", RLX_DTYPE_I64, 1, id, NULL));
        rlx_attr ax1[1] = { RLX_ATTR_I("axis", 1) };
        CHECK_OK(rlx_model_add_node(m, "Gather", "g1", 2, (const char *[]){ "x", "i1" }, 1, (const char *[]){ "t" }, 0,
                                    NULL));
        CHECK_OK(rlx_model_add_node(m, "Relu", "r", 1, (const char *[]){ "t" }, 1, (const char *[]){ "t2" }, 0, NULL));
        /* t2 is [4, 5]: g2 indexes axis 1, [-5, 5) */
        CHECK_OK(rlx_model_add_node(m, "Gather", "g2", 2, (const char *[]){ "t2", "i2" }, 1, (const char *[]){ "y" }, 1,
                                    ax1));
        CHECK_OK(rlx_model_add_output(m, "y"));
        CHECK_OK(rlx_model_finish(m));
        rlx_session *sc = NULL, *sg = NULL;
        rlx_session_options oc = { .device = "cpu" }, og = { .device = "gpu" };
        CHECK_OK(rlx_options_set(g_vs_opts, "gpu.disable", split ? "Relu" : NULL));
        CHECK_OK(rlx_session_create_with_options(m, &oc, g_vs_opts, &sc));
        CHECK_OK(rlx_session_create_with_options(m, &og, g_vs_opts, &sg));
        CHECK_OK(rlx_options_set(g_vs_opts, "gpu.disable", NULL));
        if (sc && sg) {
            /* which index set is bad in each run: 0 none, 1 i1, 2 i2, 3 both */
            static const int plan[] = { 0, 0, 0, 2, 0, 1, 3, 0, 2, 0 };
            for (size_t r = 0; r < RLX_ARRAY_LEN(plan); r++) {
                rlx_tensor *i1 = test_tensor_i64(1, id, good1), *i2 = test_tensor_i64(1, id, good2);
                if (plan[r] & 1) ((int64_t *)i1->data)[2] = 6;
                if (plan[r] & 2) ((int64_t *)i2->data)[1] = -6;
                const char *names[3] = { "x", "i1", "i2" };
                const rlx_tensor *feeds[3] = { x, i1, i2 };
                char label[96];
                snprintf(label, sizeof label, "Gather -> Relu%s -> Gather, run %zu (bad %d)", split ? " (cpu)" : "", r,
                         plan[r]);
                run_both(label, sc, sg, 3, names, feeds, plan[r] != 0, plan[r] & 1 ? "node 'g1'" : "node 'g2'");
                rlx_tensor_destroy(i1);
                rlx_tensor_destroy(i2);
            }
            /* plans compile at the first run: RLX_GPU_DISABLE was set until here */
            int nodes = 0, native = 0;
            test_report_counts(rlx_session_dispatch_report(sg), "Relu", &nodes, &native);
            CHECK_MSG(nodes == 1 && native == (split ? 0 : 1), "%s", rlx_session_dispatch_report(sg));
            test_report_counts(rlx_session_dispatch_report(sg), "Gather", &nodes, &native);
            CHECK_MSG(nodes == 2 && native == 2, "%s", rlx_session_dispatch_report(sg));
        }
        rlx_session_destroy(sc);
        rlx_session_destroy(sg);
        rlx_model_destroy(m);
    }
    rlx_tensor_destroy(x);
}

/* ------------------------------------------------------------ unary additions */

static void test_unary_extra(void) {
    int64_t d[2] = { 7, 9 };
    rlx_tensor *x = rnd(RLX_DTYPE_F32, 2, d, -3, 3);
    const rlx_tensor *in[1] = { x };
    rlx_attr sa[2] = { RLX_ATTR_F("lambd", 0.7f), RLX_ATTR_F("bias", 0.25f) };
    gpu_vs_cpu("Shrink", "Shrink", 9, 1, in, NULL, 2, sa, 0, 0);
    gpu_vs_cpu("Shrink defaults", "Shrink", 9, 1, in, NULL, 0, NULL, 0, 0);
    rlx_attr wa[1] = { RLX_ATTR_F("alpha", 1.7f) };
    /* exp in f32 against double: a few ulps */
    gpu_vs_cpu("Swish", "Swish", 24, 1, in, NULL, 1, wa, 1e-6, 1e-7);
    /* Clip with run-time bounds (f32), and on i32 (constant or run-time) */
    float lo = -0.5f, hi = 1.25f;
    rlx_tensor *tlo = test_tensor_f32(0, NULL, &lo), *thi = test_tensor_f32(0, NULL, &hi);
    const rlx_tensor *inc[3] = { x, tlo, thi }, *inc_hi[3] = { x, NULL, thi };
    gpu_vs_cpu("Clip run-time bounds", "Clip", 13, 3, inc, NULL, 0, NULL, 0, 0);
    gpu_vs_cpu("Clip run-time max only", "Clip", 13, 3, inc_hi, NULL, 0, NULL, 0, 0);
    rlx_tensor *xi = rnd(RLX_DTYPE_I32, 2, d, -100, 100), *ilo = test_tensor(RLX_DTYPE_I32, 0, NULL),
               *ihi = test_tensor(RLX_DTYPE_I32, 0, NULL);
    *(int32_t *)ilo->data = -20;
    *(int32_t *)ihi->data = 35;
    const rlx_tensor *ini[3] = { xi, ilo, ihi };
    int konst[3] = { 0, 1, 1 };
    gpu_vs_cpu("Clip i32 constant bounds", "Clip", 13, 3, ini, konst, 0, NULL, 0, 0);
    gpu_vs_cpu("Clip i32 run-time bounds", "Clip", 13, 3, ini, NULL, 0, NULL, 0, 0);
    rlx_tensor *all[] = { x, tlo, thi, xi, ilo, ihi };
    for (size_t i = 0; i < RLX_ARRAY_LEN(all); i++) rlx_tensor_destroy(all[i]);
}

int main(void) {
    test_seed_from_env();
    if (!test_have_gpu()) {
        fprintf(stderr, "test_webgpu_index: skipped: no GPU adapter (lavapipe counts; install mesa-vulkan-drivers); "
                        "set RLX_TEST_REQUIRE_GPU=1 to make this a failure\n");
        return 0;
    }
    gpu_vs_cpu_open();
    test_cast();
    test_gather();
    test_logic();
    test_i64_transfers();
    test_gather_elements_nd();
    test_scatter();
    test_generated();
    test_move_types();
    test_unary_extra();
    test_index_errors();
    test_index_errors_order();
    gpu_vs_cpu_close();
    TEST_MAIN_END();
}
