/* Elementwise ops: CPU against values computed here independently, on
 * random inputs with broadcasting. */
#include "test.h"

#include "ir/ew.h"
#include "ir/ew_math.h"
#include "ir/op.h"
#include "test_node.h"

static void test_add_broadcast(void) {
    int64_t da[4] = { 2, 3, 4, 5 }, db[2] = { 4, 1 };
    rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 4, da, -2, 2);
    rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 2, db, -2, 2);
    const rlx_tensor *in[2] = { a, b };
    rlx_tensor **out = NULL;
    CHECK_OK(test_run_op("Add", 13, "cpu", 2, in, NULL, 1, 0, NULL, &out));
    if (out) {
        CHECK(out[0]->rank == 4 && out[0]->dims[3] == 5);
        const float *pa = a->data, *pb = b->data, *po = out[0]->data;
        int bad = 0;
        for (int i = 0; i < 2 * 3 * 4 * 5; i++) {
            int h = (i / 5) % 4;
            if (po[i] != pa[i] + pb[h]) bad++;
        }
        CHECK_MSG(bad == 0, "%d elements differ", bad);
    }
    test_free_outputs(out, 1);
    rlx_tensor_destroy(a);
    rlx_tensor_destroy(b);
}

/* op at opset `before` refuses big and small (want; naming the node) and
 * takes small and small; at opset `after` it takes big and small. */
static void one_shape_rule(const char *op, int before, int after, const rlx_tensor *big, const rlx_tensor *small,
                           const char *want) {
    rlx_tensor **out = NULL;
    CHECK_FAILS(test_run_op(op, before, "cpu", 2, (const rlx_tensor *[]){ big, small }, NULL, 1, 0, NULL, &out),
                RLX_ERR_INVALID_MODEL, want);
    CHECK_MSG(strstr(rlx_last_error(), "node0") != NULL, "%s-%d: %s", op, before, rlx_last_error());
    CHECK(out == NULL);
    CHECK_OK(test_run_op(op, after, "cpu", 2, (const rlx_tensor *[]){ big, small }, NULL, 1, 0, NULL, &out));
    test_free_outputs(out, 1);
    out = NULL;
    CHECK_OK(test_run_op(op, before, "cpu", 2, (const rlx_tensor *[]){ small, small }, NULL, 1, 0, NULL, &out));
    test_free_outputs(out, 1);
}

/* Runs model m (inputs p and q; destroyed here) fed p = a, q = b, which
 * must fail with `want`, then p = q = a, which must run. */
static void fed_shapes(rlx_model *m, const rlx_tensor *a, const rlx_tensor *b, const char *want) {
    rlx_session *sess = NULL;
    rlx_tensor **out = NULL;
    size_t n_out = 0;
    CHECK_OK(rlx_session_create(m, NULL, &sess));
    if (sess) {
        CHECK_FAILS(rlx_session_run(sess, 2, (const char *[]){ "p", "q" }, (const rlx_tensor *[]){ a, b }, &out,
                                    &n_out),
                    RLX_ERR_INVALID_ARGUMENT, want);
        CHECK_OK(rlx_session_run(sess, 2, (const char *[]){ "p", "q" }, (const rlx_tensor *[]){ a, a }, &out, &n_out));
        test_free_outputs(out, (int)n_out);
    }
    rlx_session_destroy(sess);
    rlx_model_destroy(m);
}

/* Pre-opset-7 broadcasting (rlx_legacy_bcast: shape inference gives A's
 * shape, passes/legacy.c unsqueezes B): Sub-6 with broadcast=1, axis=1
 * lines B [3, 4] up with A [2, 3, 4, 5] from axis 1; PRelu-6's slope [3]
 * applies per channel of [2, 3, 4] (numpy on the last axis fails; the one
 * axis of size 3, as the ONNX reference: tests/python/test_prelu_legacy_ref.py
 * has the rest); without broadcast=1, Mul-6 of
 * different shapes is refused (even where numpy would broadcast them).
 * Results against values computed here. */
static void test_legacy_broadcast(void) {
    int64_t da[4] = { 2, 3, 4, 5 }, db[2] = { 3, 4 }, dx[3] = { 2, 3, 4 }, ds[1] = { 3 };
    rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 4, da, -2, 2);
    rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 2, db, -2, 2);
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 3, dx, -2, 2);
    rlx_tensor *sl = test_tensor_random(RLX_DTYPE_F32, 1, ds, -1, 1);
    const rlx_attr bc[2] = { RLX_ATTR_I("broadcast", 1), RLX_ATTR_I("axis", 1) };
    rlx_tensor **out = NULL;
    CHECK_OK(test_run_op("Sub", 6, "cpu", 2, (const rlx_tensor *[]){ a, b }, NULL, 1, 2, bc, &out));
    if (out) {
        CHECK(out[0]->rank == 4 && out[0]->dims[0] == 2 && out[0]->dims[3] == 5);
        const float *pa = a->data, *pb = b->data, *po = out[0]->data;
        int bad = 0;
        for (int i = 0; i < 2 * 3 * 4 * 5; i++)
            if (po[i] != pa[i] - pb[(i / 5) % 12]) bad++;
        CHECK_MSG(bad == 0, "Sub-6 broadcast=1 axis=1: %d elements differ", bad);
    }
    test_free_outputs(out, 1);
    out = NULL;
    CHECK_OK(test_run_op("PRelu", 6, "cpu", 2, (const rlx_tensor *[]){ x, sl }, NULL, 1, 0, NULL, &out));
    if (out) {
        CHECK(out[0]->rank == 3 && out[0]->dims[1] == 3);
        const float *px = x->data, *ps = sl->data, *po = out[0]->data;
        int bad = 0;
        for (int i = 0; i < 2 * 3 * 4; i++) {
            float want = px[i] < 0 ? ps[(i / 4) % 3] * px[i] : px[i];
            if (po[i] != want) bad++;
        }
        CHECK_MSG(bad == 0, "PRelu-6 per-channel slope: %d elements differ", bad);
    }
    test_free_outputs(out, 1);
    out = NULL;
    CHECK_FAILS(test_run_op("Mul", 6, "cpu", 2, (const rlx_tensor *[]){ a, b }, NULL, 1, 0, NULL, &out),
                RLX_ERR_INVALID_MODEL, "broadcast");
    CHECK(out == NULL);
    /* Sum, Max, Min and Mean before version 8 take inputs of one shape (Max-6
     * of [2, 3, 4, 5] and [5] broadcast; onnxruntime refuses it at opset 7):
     * refused at load for static dims, at the plan for fed ones; version 8
     * broadcasts */
    int64_t dl[1] = { 5 }, dyn[1] = { -1 };
    rlx_tensor *last = test_tensor_random(RLX_DTYPE_F32, 1, dl, -2, 2);
    static const char *const variadic[4] = { "Sum", "Max", "Min", "Mean" };
    for (int k = 0; k < 4; k++) {
        one_shape_rule(variadic[k], 6, 8, a, last, "before version 8 the inputs have one shape");
    }
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(7, &m));
    CHECK_OK(rlx_model_add_input(m, "p", RLX_DTYPE_F32, 1, dyn, NULL));
    CHECK_OK(rlx_model_add_input(m, "q", RLX_DTYPE_F32, 1, dyn, NULL));
    CHECK_OK(rlx_model_add_node(m, "Max", "mx", 2, (const char *[]){ "p", "q" }, 1, (const char *[]){ "y" }, 0, NULL));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    rlx_tensor *one = test_tensor_random(RLX_DTYPE_F32, 1, (int64_t[]){ 1 }, -2, 2);
    fed_shapes(m, last, one, "node 'mx' (Max): inputs 'p' of shape [5] and 'q' of shape [1] differ");
    rlx_session *sess = NULL;
    size_t n_out = 0;
    /* the binary ops with a `broadcast` attribute before opset 7 take
     * inputs of one shape without broadcast=1 (Mul-6 of [2, 3, 4, 5] and
     * [5] broadcast as numpy; onnxruntime refuses it): refused at load for
     * static dims (opset 6: Add ... Div are version 6, the others 1),
     * taken at opset 7 and with equal shapes */
    static const char *const binary[11] = { "Add", "Sub", "Mul", "Div", "Pow", "Greater", "Less",
                                            "Equal", "And", "Or", "Xor" };
    int64_t d23[2] = { 2, 3 }, d3[1] = { 3 };
    rlx_tensor *bx = test_tensor_random(RLX_DTYPE_BOOL, 2, d23, 0, 1), *by = test_tensor_random(RLX_DTYPE_BOOL, 1, d3, 0, 1);
    rlx_tensor *ix = test_tensor_random(RLX_DTYPE_I32, 2, d23, -3, 3), *iy = test_tensor_random(RLX_DTYPE_I32, 1, d3, -3, 3);
    for (int k = 0; k < 11; k++) {
        const rlx_tensor *big = k < 7 ? a : k == 7 ? ix : bx, *small = k < 7 ? last : k == 7 ? iy : by;
        one_shape_rule(binary[k], 6, 7, big, small, "before version 7 the inputs have one shape without broadcast=1");
    }
    rlx_tensor_destroy(bx);
    rlx_tensor_destroy(by);
    rlx_tensor_destroy(ix);
    rlx_tensor_destroy(iy);
    /* fed shapes: refused at the run, naming the node, also where the
     * Mul-6 is fused with the Relu after it; a BatchNormalization and a
     * Mul-6 with broadcast=1 (a caffe2 export's Scale) at opset 6 still fold
     * into a Mul and an Add of rlx's own that broadcast as numpy */
    CHECK_OK(rlx_model_create(6, &m));
    CHECK_OK(rlx_model_add_input(m, "p", RLX_DTYPE_F32, 1, dyn, NULL));
    CHECK_OK(rlx_model_add_input(m, "q", RLX_DTYPE_F32, 1, dyn, NULL));
    CHECK_OK(rlx_model_add_node(m, "Mul", "mul6", 2, (const char *[]){ "p", "q" }, 1, (const char *[]){ "pq" }, 0,
                                NULL));
    CHECK_OK(rlx_model_add_node(m, "Relu", "relu", 1, (const char *[]){ "pq" }, 1, (const char *[]){ "y" }, 0, NULL));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    fed_shapes(m, last, one, "node 'mul6' (Mul): inputs 'p' of shape [5] and 'q' of shape [1] differ");
    {
        int64_t dxc[4] = { 1, 2, 3, 3 }, dc[1] = { 2 };
        rlx_tensor *cx = test_tensor_random(RLX_DTYPE_F32, 4, dxc, -1, 1), *bn[5];
        for (int k = 0; k < 5; k++) bn[k] = test_tensor_random(RLX_DTYPE_F32, 1, dc, 0.5f, 1.5f);
        CHECK_OK(rlx_model_create(6, &m));
        CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 4, dxc, NULL));
        static const char *const bn_names[5] = { "scale", "bias", "mean", "var", "k" };
        for (int k = 0; k < 5; k++) CHECK_OK(rlx_model_add_initializer(m, bn_names[k], bn[k]));
        CHECK_OK(rlx_model_add_node(m, "BatchNormalization", "bn", 5,
                                    (const char *[]){ "x", "scale", "bias", "mean", "var" }, 1, (const char *[]){ "b" },
                                    0, NULL));
        CHECK_OK(rlx_model_add_node(m, "Mul", "scale_k", 2, (const char *[]){ "b", "k" }, 1, (const char *[]){ "y" },
                                    2, bc));
        CHECK_OK(rlx_model_add_output(m, "y"));
        CHECK_OK(rlx_model_finish(m));
        sess = NULL;
        CHECK_OK(rlx_session_create(m, NULL, &sess));
        if (sess) {
            CHECK_OK(rlx_session_run(sess, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ cx }, &out, &n_out));
            test_free_outputs(out, (int)n_out);
            out = NULL;
        }
        rlx_session_destroy(sess);
        rlx_model_destroy(m);
        rlx_tensor_destroy(cx);
        for (int k = 0; k < 5; k++) rlx_tensor_destroy(bn[k]);
    }
    rlx_tensor_destroy(one);
    rlx_tensor_destroy(last);
    rlx_tensor_destroy(a);
    rlx_tensor_destroy(b);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(sl);
}

static void test_shape_mismatch(void) {
    int64_t da[2] = { 2, 3 }, db[2] = { 2, 4 };
    rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 2, da, -1, 1);
    rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 2, db, -1, 1);
    const rlx_tensor *in[2] = { a, b };
    rlx_tensor **out = NULL;
    CHECK_FAILS(test_run_op("Mul", 13, "cpu", 2, in, NULL, 1, 0, NULL, &out), RLX_ERR_INVALID_MODEL,
                "do not broadcast");
    CHECK(out == NULL);
    rlx_tensor_destroy(a);
    rlx_tensor_destroy(b);
}

static void test_unknown_op(void) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    int64_t d[1] = { 3 };
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 1, d, NULL));
    CHECK_FAILS(rlx_model_add_node(m, "FooBar", "n1", 1, (const char *[]){ "x" }, 1, (const char *[]){ "y" }, 0, NULL),
                RLX_ERR_UNSUPPORTED, "FooBar");
    CHECK_FAILS(rlx_model_add_node(m, "HardSwish", "n2", 1, (const char *[]){ "x" }, 1, (const char *[]){ "z" }, 0, NULL),
                RLX_ERR_UNSUPPORTED, "does not exist at opset 13");
    rlx_model_destroy(m);
}

static void test_clip_versions(void) {
    int64_t d[1] = { 64 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 1, d, -3, 3);
    float lo = -0.5f, hi = 1.25f;
    rlx_tensor *tlo = test_tensor_f32(0, NULL, &lo), *thi = test_tensor_f32(0, NULL, &hi);
    const rlx_tensor *in3[3] = { x, tlo, thi };
    int konst[3] = { 0, 1, 1 };
    rlx_tensor **o11 = NULL, **o6 = NULL;
    CHECK_OK(test_run_op("Clip", 13, "cpu", 3, in3, konst, 1, 0, NULL, &o11));
    rlx_attr at[2] = { RLX_ATTR_F("min", lo), RLX_ATTR_F("max", hi) };
    const rlx_tensor *in1[1] = { x };
    CHECK_OK(test_run_op("Clip", 7, "cpu", 1, in1, NULL, 1, 2, at, &o6));
    if (o11 && o6) {
        const float *px = x->data, *a = o11[0]->data, *b = o6[0]->data;
        int bad = 0;
        for (int i = 0; i < 64; i++) {
            float want = px[i] < lo ? lo : px[i] > hi ? hi : px[i];
            if (a[i] != want || b[i] != want) bad++;
        }
        CHECK_MSG(bad == 0, "%d elements differ", bad);
    }
    test_free_outputs(o11, 1);
    test_free_outputs(o6, 1);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(tlo);
    rlx_tensor_destroy(thi);
}

/* Parameter defaults are written once, in the op's schema row: Clip before
 * version 11 without max (min) resolves it to the schema's +FLT_MAX
 * (-FLT_MAX), which a fused Clip (chains, epilogues, the GPU's unary
 * kernel) reads through rlx_ew_resolve; and no vocabulary row of a
 * function that is an op restates a default (they write 0). */
static void test_ew_param_defaults(void) {
    rlx_node_attr lo = { .name = "min", .type = RLX_ATTR_FLOAT, .f = -0.5f };
    rlx_node n = test_make_node("Clip", 6, 1, 1, &lo, 1);
    rlx_ew_call f;
    CHECK(rlx_ew_resolve(NULL, &n, &f) && f.kind == RLX_EW_CLIP);
    CHECK_MSG(f.alpha == -0.5f && f.beta == 3.402823466e+38f, "Clip-6 min only: bounds %g, %g", f.alpha, f.beta);
    rlx_node_attr hi = { .name = "max", .type = RLX_ATTR_FLOAT, .f = 2.0f };
    n = test_make_node("Clip", 6, 1, 1, &hi, 1);
    CHECK(rlx_ew_resolve(NULL, &n, &f) && f.kind == RLX_EW_CLIP);
    CHECK_MSG(f.alpha == -3.402823466e+38f && f.beta == 2.0f, "Clip-6 max only: bounds %g, %g", f.alpha, f.beta);
    for (int i = 0; i < RLX_EW_COUNT; i++) {
        const rlx_ew_info *r = rlx_ew_info_of(i);
        if (!r->name[0] || !rlx_op_find("", r->name)) continue;
        for (int p = 0; p < 2; p++)
            CHECK_MSG(!r->param[p] || r->dflt[p] == 0.0f, "vocabulary row %s restates the default of %s (%g)", r->id,
                      r->param[p], r->dflt[p]);
    }
}

/* Large enough to be split across the worker threads: broadcasting rows
 * ([6,33,257] with [33,1] and with [257]) and a unary op, against values
 * computed here element by element (Sigmoid by its f32 definition, the
 * scalar twin of ir/ew_math.h); must be exact. */
static void test_parallel_split(void) {
    int64_t da[3] = { 6, 33, 257 }, db[2] = { 33, 1 }, dc[1] = { 257 };
    rlx_tensor *a = test_tensor_random(RLX_DTYPE_F32, 3, da, -2, 2);
    rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 2, db, -2, 2);
    rlx_tensor *c = test_tensor_random(RLX_DTYPE_F32, 1, dc, 0.5f, 2);
    rlx_tensor **o1 = NULL, **o2 = NULL, **o3 = NULL;
    CHECK_OK(test_run_op("Sub", 13, "cpu", 2, (const rlx_tensor *[]){ a, b }, NULL, 1, 0, NULL, &o1));
    CHECK_OK(test_run_op("Div", 13, "cpu", 2, (const rlx_tensor *[]){ a, c }, NULL, 1, 0, NULL, &o2));
    CHECK_OK(test_run_op("Sigmoid", 13, "cpu", 1, (const rlx_tensor *[]){ a }, NULL, 1, 0, NULL, &o3));
    if (o1 && o2 && o3) {
        const float *pa = a->data, *pb = b->data, *pc = c->data;
        int bad = 0;
        for (int i = 0; i < 6; i++)
            for (int j = 0; j < 33; j++)
                for (int k = 0; k < 257; k++) {
                    size_t idx = ((size_t)i * 33 + (size_t)j) * 257 + (size_t)k;
                    if (((float *)o1[0]->data)[idx] != pa[idx] - pb[j]) bad++;
                    if (((float *)o2[0]->data)[idx] != pa[idx] / pc[k]) bad++;
                    if (((float *)o3[0]->data)[idx] != rlx_ewm_sigmoid_s(pa[idx])) bad++;
                }
        CHECK_MSG(bad == 0, "%d elements differ", bad);
    }
    test_free_outputs(o1, 1);
    test_free_outputs(o2, 1);
    test_free_outputs(o3, 1);
    rlx_tensor_destroy(a);
    rlx_tensor_destroy(b);
    rlx_tensor_destroy(c);
}

/* Activations at NaN, +-inf and -0 against onnxruntime 1.x's outputs
 * (CPU provider) for the same inputs, written here: NaN where it gives NaN
 * (Relu, LeakyRelu, Clip, HardSigmoid, HardSwish, Elu, Selu, Celu,
 * Softplus keep it; ThresholdedRelu and Shrink give 0), a zero's sign where
 * it keeps -0 (Relu, LeakyRelu, Clip), others to 1e-5 relative. The twelve
 * values repeat to 44 elements so that the 8- and 16-wide forms run too. */
static void test_activation_nan(void) {
    static const float k_x[12] = { NAN, -NAN, -1, 1, -0.0f, 0, INFINITY, -INFINITY, 0.3f, -0.3f, 5, -5 };
    typedef struct {
        const char *op;
        int opset, n_at;
        rlx_attr at[2];
        float lo, hi; /* Clip-13's bounds when lo < hi */
        float want[12];
        bool sign0;   /* -0 stays -0 */
    } row;
    const float N = NAN, I = INFINITY;
    const row rows[] = {
        { "Relu", 14, 0, { { 0 } }, 0, 0, { N, N, 0, 1, -0.0f, 0, I, 0, 0.3f, 0, 5, 0 }, true },
        { "LeakyRelu", 16, 1, { RLX_ATTR_F("alpha", 0.1f) }, 0, 0,
          { N, N, -0.1f, 1, -0.0f, 0, I, -I, 0.3f, -0.03f, 5, -0.5f }, true },
        { "Clip", 13, 0, { { 0 } }, 0, 6, { N, N, 0, 1, -0.0f, 0, 6, 0, 0.3f, 0, 5, 0 }, true },
        { "HardSigmoid", 6, 2, { RLX_ATTR_F("alpha", 0.2f), RLX_ATTR_F("beta", 0.5f) }, 0, 0,
          { N, N, 0.3f, 0.7f, 0.5f, 0.5f, 1, 0, 0.56f, 0.44f, 1, 0 }, false },
        { "HardSwish", 14, 0, { { 0 } }, 0, 0,
          { N, N, -0.333333f, 0.666667f, 0, 0, I, N, 0.165f, -0.135f, 5, 0 }, false },
        { "Elu", 6, 1, { RLX_ATTR_F("alpha", 1.0f) }, 0, 0,
          { N, N, -0.632121f, 1, 0, 0, I, -1, 0.3f, -0.259182f, 5, -0.993262f }, false },
        { "Selu", 6, 0, { { 0 } }, 0, 0,
          { N, N, -1.11133f, 1.0507f, 0, 0, I, -1.7581f, 0.31521f, -0.455667f, 5.25351f, -1.74625f }, false },
        { "Celu", 12, 0, { { 0 } }, 0, 0,
          { N, N, -0.632121f, 1, 0, 0, I, -1, 0.3f, -0.259182f, 5, -0.993262f }, false },
        { "Softplus", 1, 0, { { 0 } }, 0, 0,
          { N, N, 0.313262f, 1.31326f, 0.693147f, 0.693147f, I, 0, 0.854355f, 0.554355f, 5.00672f, 0.00671535f },
          false },
        { "ThresholdedRelu", 10, 1, { RLX_ATTR_F("alpha", 0.5f) }, 0, 0, { 0, 0, 0, 1, 0, 0, I, 0, 0, 0, 5, 0 }, false },
        { "Shrink", 9, 2, { RLX_ATTR_F("lambd", 0.5f), RLX_ATTR_F("bias", 0.1f) }, 0, 0,
          { 0, 0, -0.9f, 0.9f, 0, 0, I, -I, 0, 0, 4.9f, -4.9f }, false },
    };
    enum { REP = 44 };
    int64_t d[1] = { REP };
    float xv[REP];
    for (int i = 0; i < REP; i++) xv[i] = k_x[i % 12];
    rlx_tensor *x = test_tensor_f32(1, d, xv);
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        const row *w = &rows[r];
        rlx_tensor **out = NULL;
        if (w->lo < w->hi) {
            rlx_tensor *tlo = test_tensor_f32(0, NULL, &w->lo), *thi = test_tensor_f32(0, NULL, &w->hi);
            CHECK_OK(test_run_op(w->op, w->opset, "cpu", 3, (const rlx_tensor *[]){ x, tlo, thi },
                                 (const int[]){ 0, 1, 1 }, 1, 0, NULL, &out));
            rlx_tensor_destroy(tlo);
            rlx_tensor_destroy(thi);
        } else {
            CHECK_OK(test_run_op(w->op, w->opset, "cpu", 1, (const rlx_tensor *[]){ x }, NULL, 1, (size_t)w->n_at,
                                 w->at, &out));
        }
        if (!out) continue;
        const float *y = out[0]->data;
        for (int i = 0; i < REP; i++) {
            float e = w->want[i % 12], g = y[i];
            bool ok = isnan(e) ? isnan(g) : isinf(e) ? g == e : fabsf(g - e) <= 1e-5f * fmaxf(1.0f, fabsf(e));
            if (ok && w->sign0 && e == 0) ok = signbit(g) == signbit(e);
            CHECK_MSG(ok, "%s(%g) = %g, onnxruntime %g (element %d)", w->op, (double)xv[i], (double)g, (double)e, i);
            if (!ok) break;
        }
        test_free_outputs(out, 1);
    }
    rlx_tensor_destroy(x);
}

/* Relu over a large split input with NaN at random places: exactly
 * x < 0 ? 0 : x (NaN and -0 kept), through the vector and threaded paths. */
static void test_relu_nan_split(void) {
    int64_t d[1] = { 100003 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 1, d, -2, 2);
    float *px = x->data;
    for (int i = 0; i < 100003; i += 97) px[i] = i % 2 ? NAN : -0.0f;
    rlx_tensor **out = NULL;
    CHECK_OK(test_run_op("Relu", 14, "cpu", 1, (const rlx_tensor *[]){ x }, NULL, 1, 0, NULL, &out));
    if (out) {
        const float *y = out[0]->data;
        int bad = 0;
        for (int i = 0; i < 100003; i++) {
            float e = px[i] < 0 ? 0.0f : px[i];
            if (isnan(e) ? !isnan(y[i]) : (y[i] != e || signbit(y[i]) != signbit(e))) bad++;
        }
        CHECK_MSG(bad == 0, "%d elements differ", bad);
    }
    test_free_outputs(out, 1);
    rlx_tensor_destroy(x);
}

/* Integer Pow wraps as a chain of multiplications would (a^b mod 2^64,
 * then the type's width), for exponents past 64 too: (-1)^(2^31 - 1) is
 * -1 and 3^(2^31 - 1) mod 2^32 is 2863311531 (a cap of 64 multiplications
 * gave 1 and 2038349057); even bases reach 0. */
static void test_pow_int(void) {
    int64_t d[1] = { 5 };
    rlx_tensor *a = test_tensor(RLX_DTYPE_I32, 1, d), *b = test_tensor(RLX_DTYPE_I32, 1, d);
    const int32_t av[5] = { -1, 3, 2, -1, 3 }, bv[5] = { INT32_MAX, INT32_MAX, 64, 65, 65 };
    memcpy(a->data, av, sizeof av);
    memcpy(b->data, bv, sizeof bv);
    rlx_tensor **out = NULL;
    CHECK_OK(test_run_op("Pow", 15, "cpu", 2, (const rlx_tensor *[]){ a, b }, NULL, 1, 0, NULL, &out));
    if (out) {
        /* 3^65 mod 2^32 by repeated multiplication */
        uint32_t p65 = 1, p_max = 1, sq = 3;
        for (int i = 0; i < 65; i++) p65 *= 3u;
        for (uint32_t e = INT32_MAX; e; e >>= 1) {
            if (e & 1) p_max *= sq;
            sq *= sq;
        }
        const int32_t want[5] = { -1, (int32_t)p_max, 0, -1, (int32_t)p65 };
        const int32_t *y = out[0]->data;
        for (int i = 0; i < 5; i++)
            CHECK_MSG(y[i] == want[i], "Pow(%d, %d) = %d, want %d", av[i], bv[i], y[i], want[i]);
    }
    test_free_outputs(out, 1);
    rlx_tensor_destroy(a);
    rlx_tensor_destroy(b);
}

int main(void) {
    test_seed_from_env();
    test_add_broadcast();
    test_legacy_broadcast();
    test_shape_mismatch();
    test_unknown_op();
    test_clip_versions();
    test_ew_param_defaults();
    test_parallel_split();
    test_activation_nan();
    test_relu_nan_split();
    test_pow_int();
    TEST_MAIN_END();
}
