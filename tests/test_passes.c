#define _POSIX_C_SOURCE 200809L
/* Compiler passes: each pass changes the graph as intended (counted on the
 * compiled program) and the results stay equal to an unoptimised
 * computation done in the test. */
#include "test.h"

#include "base/tensor.h"
#include "ir/graph.h"
#include "rlx/half.h"
#include "plan/program.h"
#include "runtime/session.h"

/* The fusion passes (tests/test_fusion.c tests them) are off here, so that
 * each pass below is seen alone. */
#define FUSIONS "fuse_activation,fuse_attention,fuse_layernorm,fuse_add_layernorm,fuse_elementwise"

/* A CPU session of m with the passes in `off` turned off (option
 * passes.disable; FUSIONS in most tests here, so that what a pass does is
 * seen unfused). */
static rlx_status create_off(const rlx_model *m, const char *off, rlx_session **s) {
    char kv[256];
    snprintf(kv, sizeof kv, "passes.disable=%s", off);
    rlx_options *o = test_options(kv, NULL);
    rlx_status st = rlx_session_create_with_options(m, NULL, o, s);
    rlx_options_destroy(o);
    return st;
}

static size_t count_op(const rlx_program *p, const char *op) {
    size_t n = 0;
    for (size_t i = 0; i < p->n_steps; i++)
        if (strcmp(p->g->nodes[p->steps[i]].op_type, op) == 0) n++;
    return n;
}

/* y = Relu(x) * c1 + Relu(x) * c2 with c1 == c2: CSE leaves one Relu and one
 * Mul; the result must equal 2 * relu(x) * c computed here. */
static void test_cse(void) {
    rlx_model *m = NULL;
    int64_t d[2] = { 3, 5 };
    CHECK_OK(rlx_model_create(13, &m));
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 2, d, NULL));
    float c = 0.75f;
    rlx_tensor *tc = test_tensor_f32(0, NULL, &c);
    CHECK_OK(rlx_model_add_initializer(m, "c1", tc));
    CHECK_OK(rlx_model_add_initializer(m, "c2", tc));
    CHECK_OK(rlx_model_add_node(m, "Relu", "r1", 1, (const char *[]){ "x" }, 1, (const char *[]){ "a" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Relu", "r2", 1, (const char *[]){ "x" }, 1, (const char *[]){ "b" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Mul", "m1", 2, (const char *[]){ "a", "c1" }, 1, (const char *[]){ "ac" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Mul", "m2", 2, (const char *[]){ "b", "c2" }, 1, (const char *[]){ "bc" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Add", "s", 2, (const char *[]){ "ac", "bc" }, 1, (const char *[]){ "y" }, 0, NULL));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    rlx_session *s = NULL;
    CHECK_OK(create_off(m, FUSIONS, &s));
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, d, -1, 1);
    rlx_tensor **out = NULL;
    size_t n = 0;
    CHECK_OK(rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, &out, &n));
    const rlx_program *p = rlx_session_last_program(s);
    CHECK(p != NULL);
    if (p) {
        CHECK_MSG(count_op(p, "Relu") == 1, "%zu Relu", count_op(p, "Relu"));
        CHECK_MSG(count_op(p, "Mul") == 1, "%zu Mul", count_op(p, "Mul"));
    }
    if (out) {
        const float *px = x->data, *py = out[0]->data;
        for (int i = 0; i < 15; i++) {
            float r = px[i] > 0 ? px[i] : 0;
            CHECK(py[i] == r * c + r * c); /* exact: same float ops */
        }
    }
    test_free_outputs(out, (int)n);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(tc);
    rlx_session_destroy(s);
    rlx_model_destroy(m);
}

/* A graph output that repeats another node keeps its own node. */
static void test_cse_keeps_outputs(void) {
    rlx_model *m = NULL;
    int64_t d[1] = { 4 };
    CHECK_OK(rlx_model_create(13, &m));
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 1, d, NULL));
    CHECK_OK(rlx_model_add_node(m, "Neg", "n1", 1, (const char *[]){ "x" }, 1, (const char *[]){ "y1" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Neg", "n2", 1, (const char *[]){ "x" }, 1, (const char *[]){ "y2" }, 0, NULL));
    CHECK_OK(rlx_model_add_output(m, "y1"));
    CHECK_OK(rlx_model_add_output(m, "y2"));
    CHECK_OK(rlx_model_finish(m));
    rlx_session *s = NULL;
    CHECK_OK(create_off(m, FUSIONS, &s));
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 1, d, -1, 1);
    rlx_tensor **out = NULL;
    size_t n = 0;
    CHECK_OK(rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, &out, &n));
    CHECK(n == 2);
    if (out && n == 2) {
        const float *px = x->data;
        for (int i = 0; i < 4; i++) {
            CHECK(((float *)out[0]->data)[i] == -px[i]);
            CHECK(((float *)out[1]->data)[i] == -px[i]);
        }
    }
    test_free_outputs(out, (int)n);
    rlx_tensor_destroy(x);
    rlx_session_destroy(s);
    rlx_model_destroy(m);
}

/* Runs model m on x with the named pass on and off; returns both outputs. */
static void run_on_off(rlx_model *m, const rlx_tensor *x, const char *pass, rlx_tensor **on, rlx_tensor **off,
                       const rlx_program **prog_on, rlx_session **s_on) {
    const char *names[1] = { "x" };
    const rlx_tensor *ins[1] = { x };
    rlx_tensor **out = NULL;
    size_t n = 0;
    char off_list[256];
    snprintf(off_list, sizeof off_list, "%s,%s", pass, FUSIONS);
    rlx_session *s = NULL;
    CHECK_OK(create_off(m, off_list, &s));
    CHECK_OK(rlx_session_run(s, 1, names, ins, &out, &n));
    *off = out ? out[0] : NULL;
    free(out);
    rlx_session_destroy(s);
    CHECK_OK(create_off(m, FUSIONS, s_on));
    CHECK_OK(rlx_session_run(*s_on, 1, names, ins, &out, &n));
    *on = out ? out[0] : NULL;
    free(out);
    *prog_on = rlx_session_last_program(*s_on);
}

/* Finishes m, runs it on a random x [xd] with fold_conv_affine on and off
 * and checks that the two agree within rounding (rtol 1e-5); returns the
 * program with the pass on (its session in *s, for the caller to destroy),
 * or NULL. */
static const rlx_program *fold_affine_on_off(rlx_model *m, const int64_t *xd, rlx_session **s) {
    CHECK_OK(rlx_model_finish(m));
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1), *on = NULL, *off = NULL;
    const rlx_program *p = NULL;
    run_on_off(m, x, "fold_conv_affine", &on, &off, &p, s);
    /* the folded chains' factors reach |a| ~ 4 with shifts ~ 3 over sums of 27
     * products: folded and unfolded round terms of that size differently (a few
     * ulps of 4, 2e-6 and up); 1e-6 absolute failed on some seeds (4: 4.9e-6) */
    CHECK(on && off && test_allclose(on, off, 1e-5, 1e-5));
    rlx_tensor_destroy(on);
    rlx_tensor_destroy(off);
    rlx_tensor_destroy(x);
    return p;
}

/* Adds to m the per-channel chain Mul(in, k) -> Add(b, .) ->
 * BatchNormalization -> out over C channels, its constants random (k and
 * the BN scale away from 0, the variance positive). */
static void add_affine_chain(rlx_model *m, int64_t C, const char *in, const char *out) {
    int64_t cd[4] = { 1, C, 1, 1 }, vd[1] = { C };
    rlx_tensor *t[6] = { test_tensor_random(RLX_DTYPE_F32, 4, cd, 0.5f, 2), test_tensor_random(RLX_DTYPE_F32, 4, cd, -1, 1),
                         test_tensor_random(RLX_DTYPE_F32, 1, vd, 0.5f, 1.5f), test_tensor_random(RLX_DTYPE_F32, 1, vd, -1, 1),
                         test_tensor_random(RLX_DTYPE_F32, 1, vd, -1, 1), test_tensor_random(RLX_DTYPE_F32, 1, vd, 0.5f, 2) };
    static const char *const names[6] = { "k", "b", "sc", "bi", "me", "va" };
    for (int i = 0; i < 6; i++) {
        CHECK_OK(rlx_model_add_initializer(m, names[i], t[i]));
        rlx_tensor_destroy(t[i]);
    }
    CHECK_OK(rlx_model_add_node(m, "Mul", "mul", 2, (const char *[]){ in, "k" }, 1, (const char *[]){ "m" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Add", "add", 2, (const char *[]){ "b", "m" }, 1, (const char *[]){ "a" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "BatchNormalization", "bn", 5, (const char *[]){ "a", "sc", "bi", "me", "va" }, 1,
                                (const char *[]){ out }, 0, NULL));
}

/* Conv -> Mul(per channel) -> Add(per channel) -> BatchNormalization folds
 * into one Conv; a Conv whose output has a second user is left alone.
 * Folded and unfolded results agree within rounding (rtol 1e-5). */
static void test_fold_conv_affine(void) {
    const int64_t C = 6;
    int64_t xd[4] = { 2, 3, 9, 7 }, wd[4] = { C, 3, 3, 3 };
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 4, wd, -1, 1);
    for (int shared = 0; shared < 2; shared++) {
        rlx_model *m = NULL;
        CHECK_OK(rlx_model_create(13, &m));
        CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 4, xd, NULL));
        CHECK_OK(rlx_model_add_initializer(m, "w", w));
        rlx_attr pads = RLX_ATTR_IS("pads", 4, ((int64_t[]){ 1, 1, 1, 1 }));
        CHECK_OK(rlx_model_add_node(m, "Conv", "conv", 2, (const char *[]){ "x", "w" }, 1, (const char *[]){ "c" }, 1, &pads));
        add_affine_chain(m, C, "c", "y");
        if (shared) { /* a second user of the conv output blocks the first fold */
            CHECK_OK(rlx_model_add_node(m, "Relu", "r", 1, (const char *[]){ "c" }, 1, (const char *[]){ "r" }, 0, NULL));
            CHECK_OK(rlx_model_add_node(m, "Add", "sum", 2, (const char *[]){ "r", "y" }, 1, (const char *[]){ "z" }, 0, NULL));
            CHECK_OK(rlx_model_add_output(m, "z"));
        } else {
            CHECK_OK(rlx_model_add_output(m, "y"));
        }
        rlx_session *s = NULL;
        const rlx_program *p = fold_affine_on_off(m, xd, &s);
        if (p) {
            CHECK_MSG(count_op(p, "Conv") == 1, "%zu Conv", count_op(p, "Conv"));
            size_t rest = count_op(p, "Mul") + count_op(p, "Add") + count_op(p, "BatchNormalization");
            CHECK_MSG(rest == (shared ? 4u : 0u), "shared=%d: %zu affine nodes left", shared, rest);
        }
        rlx_session_destroy(s);
        rlx_model_destroy(m);
    }
    rlx_tensor_destroy(w);
}

/* ConvTranspose -> Mul -> Add (per channel) -> BatchNormalization ->
 * Relu (PP-OCR's DB head: a 2x2 stride-2 upsampling, its bias an Add, then
 * BN) folds into the ConvTranspose, whose weight [C_in, C_out / group,
 * k..] scales by output channel along its second axis and across groups
 * (group 1 and 2, with and without a bias; every channel's factor
 * different, so a wrong channel fails); folded and unfolded agree within
 * rounding. */
static void test_fold_conv_transpose_affine(void) {
    for (int group = 1; group <= 2; group++) {
        const int64_t CI = 4, CO = 6;
        int64_t xd[4] = { 1, CI, 5, 7 }, wd[4] = { CI, CO / group, 2, 3 }, vd[1] = { CO };
        rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 4, wd, -1, 1);
        rlx_tensor *wb = test_tensor_random(RLX_DTYPE_F32, 1, vd, -1, 1);
        rlx_model *m = NULL;
        CHECK_OK(rlx_model_create(13, &m));
        CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 4, xd, NULL));
        CHECK_OK(rlx_model_add_initializer(m, "w", w));
        CHECK_OK(rlx_model_add_initializer(m, "wb", wb));
        rlx_attr at[3] = { RLX_ATTR_IS("kernel_shape", 2, ((int64_t[]){ 2, 3 })),
                           RLX_ATTR_IS("strides", 2, ((int64_t[]){ 2, 3 })), RLX_ATTR_I("group", group) };
        /* group 1 without a bias */
        CHECK_OK(rlx_model_add_node(m, "ConvTranspose", "ct", group == 1 ? 2 : 3, (const char *[]){ "x", "w", "wb" }, 1,
                                    (const char *[]){ "c" }, 3, at));
        add_affine_chain(m, CO, "c", "n");
        CHECK_OK(rlx_model_add_node(m, "Relu", "r", 1, (const char *[]){ "n" }, 1, (const char *[]){ "y" }, 0, NULL));
        CHECK_OK(rlx_model_add_output(m, "y"));
        rlx_session *s = NULL;
        const rlx_program *p = fold_affine_on_off(m, xd, &s);
        if (p) {
            size_t rest = count_op(p, "Mul") + count_op(p, "Add") + count_op(p, "BatchNormalization");
            CHECK_MSG(count_op(p, "ConvTranspose") == 1 && rest == 0, "group %d: %zu ConvTranspose, %zu affine nodes left",
                      group, count_op(p, "ConvTranspose"), rest);
        }
        rlx_session_destroy(s);
        rlx_model_destroy(m);
        rlx_tensor_destroy(w);
        rlx_tensor_destroy(wb);
    }
}

/* Bytes of the constants a program's graph owns (not its model's). */
static size_t owned_konst_bytes(const rlx_program *p) {
    size_t n = 0;
    for (size_t i = 0; i < p->g->n_values; i++) {
        const rlx_value *v = &p->g->values[i];
        if (v->konst && !(v->flags & RLX_VALUE_KONST_BORROWED)) n += v->konst->nbytes;
    }
    return n;
}

/* fold_conv_affine rewrites in place a weight the plan's graph made (here
 * by folding w * 2 and w * 3, as the light models' ConstantOfShape weights)
 * when only its Conv reads it: a Conv -> Mul -> Add chain on wa adds no
 * weight copy; ws, read by two Convs, is copied for the first fold and
 * rewritten in place for the second (then its only reader; it reads
 * Relu(x), so that CSE keeps both Convs). The model's
 * initializer w stays as it was, and the result equals the unfolded plan's
 * within rounding (rtol 1e-5). Before this rule each fold step copied the
 * weights (4 copies of 45 MB in the light Inception v2). */
static void test_fold_conv_affine_in_place(void) {
    const int64_t C = 5;
    int64_t xd[4] = { 1, 4, 8, 6 }, wd[4] = { C, 4, 3, 3 }, cd[4] = { 1, C, 1, 1 }, sd[1] = { 1 };
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 4, wd, -1, 1), *w0 = NULL;
    rlx_tensor *k[4], *two = test_tensor_random(RLX_DTYPE_F32, 1, sd, 2, 2), *three = test_tensor_random(RLX_DTYPE_F32, 1, sd, 3, 3);
    for (int i = 0; i < 4; i++) k[i] = test_tensor_random(RLX_DTYPE_F32, 4, cd, 0.5f, 2);
    CHECK_OK(rlx_tensor_clone(w, &w0));
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 4, xd, NULL));
    CHECK_OK(rlx_model_add_initializer(m, "w", w));
    CHECK_OK(rlx_model_add_initializer(m, "two", two));
    CHECK_OK(rlx_model_add_initializer(m, "three", three));
    const char *kn[4] = { "k0", "k1", "k2", "k3" };
    for (int i = 0; i < 4; i++) CHECK_OK(rlx_model_add_initializer(m, kn[i], k[i]));
    rlx_attr pads = RLX_ATTR_IS("pads", 4, ((int64_t[]){ 1, 1, 1, 1 }));
    CHECK_OK(rlx_model_add_node(m, "Mul", "wa", 2, (const char *[]){ "w", "two" }, 1, (const char *[]){ "wa" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Mul", "ws", 2, (const char *[]){ "w", "three" }, 1, (const char *[]){ "ws" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Conv", "c0", 2, (const char *[]){ "x", "wa" }, 1, (const char *[]){ "c0" }, 1, &pads));
    CHECK_OK(rlx_model_add_node(m, "Mul", "m0", 2, (const char *[]){ "c0", "k0" }, 1, (const char *[]){ "m0" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Add", "a0", 2, (const char *[]){ "m0", "k1" }, 1, (const char *[]){ "y0" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Conv", "c1", 2, (const char *[]){ "x", "ws" }, 1, (const char *[]){ "c1" }, 1, &pads));
    CHECK_OK(rlx_model_add_node(m, "Mul", "m1", 2, (const char *[]){ "c1", "k2" }, 1, (const char *[]){ "y1" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Relu", "xr", 1, (const char *[]){ "x" }, 1, (const char *[]){ "xr" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Conv", "c2", 2, (const char *[]){ "xr", "ws" }, 1, (const char *[]){ "c2" }, 1, &pads));
    CHECK_OK(rlx_model_add_node(m, "Mul", "m2", 2, (const char *[]){ "c2", "k3" }, 1, (const char *[]){ "y2" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Add", "s0", 2, (const char *[]){ "y0", "y1" }, 1, (const char *[]){ "s0" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Add", "s1", 2, (const char *[]){ "s0", "y2" }, 1, (const char *[]){ "y" }, 0, NULL));
    CHECK_OK(rlx_model_add_output(m, "y"));
    rlx_session *s = NULL;
    const rlx_program *p = fold_affine_on_off(m, xd, &s);
    if (p) {
        CHECK_MSG(count_op(p, "Conv") == 3 && count_op(p, "Mul") == 0, "%zu Conv, %zu Mul", count_op(p, "Conv"),
                  count_op(p, "Mul"));
        /* wa and ws (made by the fold), one copy of ws, three biases of C floats */
        size_t want = 3 * w->nbytes + 3 * (size_t)C * sizeof(float), got = owned_konst_bytes(p);
        CHECK_MSG(got <= want, "the plan owns %zu bytes of constants, want at most %zu", got, want);
    }
    CHECK(w0 && memcmp(w->data, w0->data, w->nbytes) == 0); /* the model's weights untouched */
    rlx_session_destroy(s);
    rlx_model_destroy(m);
    rlx_tensor_destroy(w);
    rlx_tensor_destroy(w0);
    rlx_tensor_destroy(two);
    rlx_tensor_destroy(three);
    for (int i = 0; i < 4; i++) rlx_tensor_destroy(k[i]);
}

/* An f16 tensor of random values in [-1, 1), rounded to binary16. */
static rlx_tensor *random_f16(int rank, const int64_t *dims) {
    rlx_tensor *r = test_tensor_random(RLX_DTYPE_F32, rank, dims, -1, 1), *t = NULL;
    CHECK_OK(rlx_tensor_create(RLX_DTYPE_F16, dims, rank, &t));
    size_t n = 1;
    for (int i = 0; i < rank; i++) n *= (size_t)dims[i];
    for (size_t i = 0; t && r && i < n; i++) ((uint16_t *)t->data)[i] = rlx_f32_to_f16(((float *)r->data)[i]);
    rlx_tensor_destroy(r);
    return t;
}

/* widen_f16 (CPU plans): x f32 -> Cast f16 -> Conv(f16 W, B) -> Relu r ->
 * Cast f32 y; outputs y (f32) and r (f16). After the pass the Conv computes
 * in f32 (its output value f32 in the program), y equals a double-precision
 * Conv of the f16-rounded x and weights within rtol 1e-5, and r is y rounded
 * to binary16 bit for bit (the f16 output edge). With the pass off the Conv
 * is f16 (the test of its dtype can fail). */
static void test_widen_f16(void) {
    const int64_t C = 4, K = 5, H = 6, W = 7;
    int64_t xd[4] = { 1, C, H, W }, wd[4] = { K, C, 3, 3 }, bd[1] = { K };
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 4, xd, NULL));
    rlx_tensor *tw = random_f16(4, wd), *tb = random_f16(1, bd);
    CHECK_OK(rlx_model_add_initializer(m, "w", tw));
    CHECK_OK(rlx_model_add_initializer(m, "b", tb));
    rlx_attr to16[1] = { RLX_ATTR_I("to", RLX_DTYPE_F16) }, to32[1] = { RLX_ATTR_I("to", RLX_DTYPE_F32) };
    int64_t pads[4] = { 1, 1, 1, 1 };
    rlx_attr ca[1] = { RLX_ATTR_IS("pads", 4, pads) };
    CHECK_OK(rlx_model_add_node(m, "Cast", "c16", 1, (const char *[]){ "x" }, 1, (const char *[]){ "xh" }, 1, to16));
    CHECK_OK(rlx_model_add_node(m, "Conv", "conv", 3, (const char *[]){ "xh", "w", "b" }, 1, (const char *[]){ "c" }, 1,
                                ca));
    CHECK_OK(rlx_model_add_node(m, "Relu", "relu", 1, (const char *[]){ "c" }, 1, (const char *[]){ "r" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Cast", "c32", 1, (const char *[]){ "r" }, 1, (const char *[]){ "y" }, 1, to32));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_add_output(m, "r"));
    CHECK_OK(rlx_model_finish(m));
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1);
    for (int pass_on = 0; pass_on < 2; pass_on++) {
        rlx_session *s = NULL;
        CHECK_OK(create_off(m, pass_on ? FUSIONS : FUSIONS ",widen_f16", &s));
        rlx_tensor **out = NULL;
        size_t n = 0;
        CHECK_OK(rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, &out, &n));
        const rlx_program *p = rlx_session_last_program(s);
        rlx_dtype conv_dt = RLX_DTYPE_UNDEFINED;
        for (size_t i = 0; p && i < p->n_steps; i++) {
            const rlx_node *nd = &p->g->nodes[p->steps[i]];
            if (strcmp(nd->op_type, "Conv") == 0) conv_dt = p->g->values[nd->out[0]].dtype;
        }
        CHECK_MSG(conv_dt == (pass_on ? RLX_DTYPE_F32 : RLX_DTYPE_F16), "widen_f16 %s: Conv output dtype %d",
                  pass_on ? "on" : "off", (int)conv_dt);
        CHECK(n == 2 && out && out[0]->dtype == RLX_DTYPE_F32 && out[1]->dtype == RLX_DTYPE_F16);
        if (pass_on && n == 2 && out) {
            const float *px = x->data, *py = out[0]->data;
            const uint16_t *pw = tw->data, *pb = tb->data, *pr = out[1]->data;
            double max_err = 0;
            int bits_off = 0;
            for (int64_t k = 0; k < K; k++)
                for (int64_t i = 0; i < H; i++)
                    for (int64_t j = 0; j < W; j++) {
                        double acc = rlx_f16_to_f32(pb[k]), mag = fabs(acc);
                        for (int64_t c = 0; c < C; c++)
                            for (int64_t di = 0; di < 3; di++)
                                for (int64_t dj = 0; dj < 3; dj++) {
                                    int64_t ii = i + di - 1, jj = j + dj - 1;
                                    if (ii < 0 || ii >= H || jj < 0 || jj >= W) continue;
                                    float xv = rlx_f16_to_f32(rlx_f32_to_f16(px[(c * H + ii) * W + jj]));
                                    double prod = (double)xv * rlx_f16_to_f32(pw[((k * C + c) * 3 + di) * 3 + dj]);
                                    acc += prod;
                                    mag += fabs(prod);
                                }
                        double want = acc > 0 ? acc : 0;
                        size_t o = (size_t)((k * H + i) * W + j);
                        /* relative to the products' magnitude: an f32 sum of 28 terms is within
                         * 28 x 2^-24 of it (2e-6), an f16 one 1e-3 off; relative to the result,
                         * a sum that cancels to near 0 failed on some seeds */
                        double err = fabs(py[o] - want) / (mag + 1e-3);
                        if (err > max_err) max_err = err;
                        bits_off += pr[o] != rlx_f32_to_f16(py[o]);
                    }
            CHECK_MSG(max_err < 1e-5, "widen_f16: Conv in f32 off by %g (relative)", max_err);
            CHECK_MSG(bits_off == 0, "widen_f16: %d elements of the f16 output are not y rounded to binary16", bits_off);
        }
        test_free_outputs(out, (int)n);
        rlx_session_destroy(s);
    }
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(tw);
    rlx_tensor_destroy(tb);
    rlx_model_destroy(m);
}

/* A model of input x (f32, dims xd) into BatchNormalization "bn" (scale sc,
 * bias bi, mean me, var va) with output "n", and initializer "k" for the
 * caller's chain; not finished. */
static rlx_model *bn_model(const int64_t *xd, rlx_tensor *k, rlx_tensor *sc, rlx_tensor *bi, rlx_tensor *me,
                           rlx_tensor *va) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 4, xd, NULL));
    CHECK_OK(rlx_model_add_initializer(m, "k", k));
    CHECK_OK(rlx_model_add_initializer(m, "sc", sc));
    CHECK_OK(rlx_model_add_initializer(m, "bi", bi));
    CHECK_OK(rlx_model_add_initializer(m, "me", me));
    CHECK_OK(rlx_model_add_initializer(m, "va", va));
    CHECK_OK(rlx_model_add_node(m, "BatchNormalization", "bn", 5, (const char *[]){ "x", "sc", "bi", "me", "va" }, 1,
                                (const char *[]){ "n" }, 0, NULL));
    return m;
}
/* BatchNormalization -> Mul(per channel) -> Add(per channel) -> Relu (the
 * DenseNet-121 of the ONNX suite after each Concat): fold_conv_affine turns
 * the BN and the chain into one Mul and one Add, fuse_elementwise joins
 * them with the Relu (FusedElementwise's rows with per-channel registers,
 * cpu_fused_ew.c, when a row has >= 16 elements; by blocks for the 3x3
 * planes). Against the double computation here (rtol 1e-5, atol 1e-6), the
 * random inputs with NaN, +-inf and -0 mixed in (they must come out as the
 * unfused ops give them); no BatchNormalization is left. Run at
 * RLX_NUM_THREADS 1, 2 and 3 (tests/CMakeLists.txt). */
static void test_fold_bn_chain(void) {
    const int64_t C = 48;
    /* rows of 63 elements; 3x3 planes (by blocks); 144 rows of 340 in
     * chunks of 49 rows (a chunk starts inside an image: the carried
     * channel index) */
    static const int64_t shapes[3][4] = { { 2, 48, 9, 7 }, { 1, 48, 3, 3 }, { 3, 48, 20, 17 } };
    int64_t cd[3] = { C, 1, 1 }, vd[1] = { C };
    rlx_tensor *k = test_tensor_random(RLX_DTYPE_F32, 3, cd, -2, 2);
    rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 3, cd, -1, 1);
    rlx_tensor *sc = test_tensor_random(RLX_DTYPE_F32, 1, vd, 0.5f, 1.5f);
    rlx_tensor *bi = test_tensor_random(RLX_DTYPE_F32, 1, vd, -1, 1);
    rlx_tensor *me = test_tensor_random(RLX_DTYPE_F32, 1, vd, -1, 1);
    rlx_tensor *va = test_tensor_random(RLX_DTYPE_F32, 1, vd, 0.5f, 2);
    for (int si = 0; si < 3; si++) {
        const int64_t *xd = shapes[si];
        rlx_model *m = bn_model(xd, k, sc, bi, me, va);
        CHECK_OK(rlx_model_add_initializer(m, "b", b));
        CHECK_OK(rlx_model_add_node(m, "Mul", "mul", 2, (const char *[]){ "k", "n" }, 1, (const char *[]){ "m" }, 0, NULL));
        CHECK_OK(rlx_model_add_node(m, "Add", "add", 2, (const char *[]){ "m", "b" }, 1, (const char *[]){ "a" }, 0, NULL));
        CHECK_OK(rlx_model_add_node(m, "Relu", "relu", 1, (const char *[]){ "a" }, 1, (const char *[]){ "y" }, 0, NULL));
        CHECK_OK(rlx_model_add_output(m, "y"));
        CHECK_OK(rlx_model_finish(m));
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -3, 3);
        float *px = x->data;
        static const float specials[] = { NAN, INFINITY, -INFINITY, -0.0f, 0.0f };
        size_t total = rlx_tensor_numel(x);
        for (size_t i = 0; i < 5; i++) px[(i * 7919u) % total] = specials[i];
        rlx_session *s = NULL;
        rlx_tensor **out = NULL;
        size_t n = 0;
        CHECK_OK(create_off(m, "cse", &s));
        CHECK_OK(rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, &out, &n));
        const rlx_program *p = rlx_session_last_program(s);
        if (p) CHECK_MSG(count_op(p, "BatchNormalization") == 0, "%zu BatchNormalization", count_op(p, "BatchNormalization"));
        if (out && n == 1) {
            const float *py = out[0]->data;
            size_t plane = total / (size_t)(xd[0] * C);
            int bad = 0;
            for (size_t i = 0; i < total && bad < 3; i++) {
                size_t c = (i / plane) % (size_t)C;
                double t = ((double)px[i] - ((float *)me->data)[c]) / sqrt((double)((float *)va->data)[c] + 1e-5) *
                               ((float *)sc->data)[c] + ((float *)bi->data)[c];
                t = t * ((float *)k->data)[c] + ((float *)b->data)[c];
                double want = t < 0 ? 0.0 : t;
                double got = py[i];
                bool ok = isnan(want) ? isnan(got)
                          : isinf(want) ? got == want
                                        : fabs(got - want) <= 1e-6 + 1e-5 * fabs(want);
                if (!ok) {
                    bad++;
                    CHECK_MSG(0, "shape %d element %zu: %g, want %g (x %g)", si, i, got, want, (double)px[i]);
                }
            }
            rlx_test_checks++;
        }
        test_free_outputs(out, (int)n);
        rlx_tensor_destroy(x);
        rlx_session_destroy(s);
        rlx_model_destroy(m);
    }
    rlx_tensor_destroy(k);
    rlx_tensor_destroy(b);
    rlx_tensor_destroy(sc);
    rlx_tensor_destroy(bi);
    rlx_tensor_destroy(me);
    rlx_tensor_destroy(va);
}

/* Dropout in inference whose mask nothing reads (SqueezeNet's: the mask
 * output named, unused) is a view step, no copy; with the mask a graph
 * output it runs (mask all true). The output equals Relu(x) either way. */
static void test_dropout_view(void) {
    int64_t d[2] = { 4, 9 };
    for (int mask_out = 0; mask_out < 2; mask_out++) {
        rlx_model *m = NULL;
        CHECK_OK(rlx_model_create(13, &m));
        CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 2, d, NULL));
        CHECK_OK(rlx_model_add_node(m, "Relu", "r", 1, (const char *[]){ "x" }, 1, (const char *[]){ "a" }, 0, NULL));
        CHECK_OK(rlx_model_add_node(m, "Dropout", "drop", 1, (const char *[]){ "a" }, 2, (const char *[]){ "y", "mask" },
                                    0, NULL));
        CHECK_OK(rlx_model_add_output(m, "y"));
        if (mask_out) CHECK_OK(rlx_model_add_output(m, "mask"));
        CHECK_OK(rlx_model_finish(m));
        rlx_session *s = NULL;
        CHECK_OK(create_off(m, FUSIONS, &s));
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, d, -1, 1);
        rlx_tensor **out = NULL;
        size_t n = 0;
        CHECK_OK(rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, &out, &n));
        const rlx_program *p = rlx_session_last_program(s);
        if (p) {
            int view = -1;
            for (size_t i = 0; i < p->n_steps; i++)
                if (strcmp(p->g->nodes[p->steps[i]].op_type, "Dropout") == 0) view = p->step_on[i] == RLX_STEP_VIEW;
            CHECK_MSG(view == !mask_out, "mask output %d: Dropout view %d", mask_out, view);
        }
        CHECK(out && n == (size_t)(1 + mask_out));
        if (out && n >= 1) {
            const float *px = x->data, *py = out[0]->data;
            for (int i = 0; i < 36; i++) CHECK(py[i] == (px[i] < 0 ? 0.0f : px[i]));
            if (n == 2) {
                const uint8_t *pm = out[1]->data;
                int all = 1;
                for (int i = 0; i < 36; i++) all &= pm[i] == 1;
                CHECK(all);
            }
        }
        test_free_outputs(out, (int)n);
        rlx_tensor_destroy(x);
        rlx_session_destroy(s);
        rlx_model_destroy(m);
    }
}

/* A chain constant that is not finite (a tester's finding): BN scale 0 on
 * channel 0 gives its bias, 1, then Mul by +inf: the unfused ops give inf,
 * a fold into x * A + B would give 0 * inf = NaN. The chain stays as the
 * ops give it. No random draws (see main). */
static void test_fold_bn_chain_nonfinite(void) {
    int64_t xd[4] = { 1, 2, 1, 3 }, cd[3] = { 2, 1, 1 }, vd[1] = { 2 };
    rlx_tensor *k = NULL, *sc = NULL, *bi = NULL, *me = NULL, *va = NULL, *x = NULL;
    CHECK_OK(rlx_tensor_create(RLX_DTYPE_F32, cd, 3, &k));
    CHECK_OK(rlx_tensor_create(RLX_DTYPE_F32, vd, 1, &sc));
    CHECK_OK(rlx_tensor_create(RLX_DTYPE_F32, vd, 1, &bi));
    CHECK_OK(rlx_tensor_create(RLX_DTYPE_F32, vd, 1, &me));
    CHECK_OK(rlx_tensor_create(RLX_DTYPE_F32, vd, 1, &va));
    CHECK_OK(rlx_tensor_create(RLX_DTYPE_F32, xd, 4, &x));
    if (!k || !sc || !bi || !me || !va || !x) goto out;
    ((float *)k->data)[0] = INFINITY, ((float *)k->data)[1] = 2.0f;
    ((float *)sc->data)[0] = 0.0f, ((float *)sc->data)[1] = 1.0f;
    ((float *)bi->data)[0] = 1.0f, ((float *)bi->data)[1] = 1.0f;
    ((float *)me->data)[0] = 0.0f, ((float *)me->data)[1] = 0.0f;
    ((float *)va->data)[0] = 1.0f, ((float *)va->data)[1] = 1.0f;
    for (int i = 0; i < 6; i++) ((float *)x->data)[i] = (float)i - 2.5f;
    rlx_model *m = bn_model(xd, k, sc, bi, me, va);
    CHECK_OK(rlx_model_add_node(m, "Mul", "mul", 2, (const char *[]){ "n", "k" }, 1, (const char *[]){ "y" }, 0, NULL));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    rlx_session *s = NULL;
    rlx_tensor **o = NULL;
    size_t n = 0;
    CHECK_OK(create_off(m, "cse", &s));
    CHECK_OK(rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, &o, &n));
    if (o && n == 1) {
        const float *py = o[0]->data, *px = x->data;
        for (int i = 0; i < 3; i++) CHECK_MSG(py[i] == INFINITY, "channel 0 element %d: %g, want inf", i, (double)py[i]);
        for (int i = 3; i < 6; i++) {
            float want = (float)(((double)px[i] / sqrt(1.0 + 1e-5) + 1.0) * 2.0);
            CHECK_MSG(fabsf(py[i] - want) <= 1e-5f * (1.0f + fabsf(want)), "channel 1 element %d: %g, want %g", i,
                      (double)py[i], (double)want);
        }
    }
    test_free_outputs(o, (int)n);
    rlx_session_destroy(s);
    rlx_model_destroy(m);
out:
    rlx_tensor_destroy(k);
    rlx_tensor_destroy(sc);
    rlx_tensor_destroy(bi);
    rlx_tensor_destroy(me);
    rlx_tensor_destroy(va);
    rlx_tensor_destroy(x);
}

/* The same for a Conv's per-channel Mul: x [1, 2, 1, 1] = (1, 1), output
 * channel 0's weights (1, -0.5), Mul by (inf, 2): unfused 0.5 * inf = inf;
 * folded weights (inf, -inf) would sum to NaN. */
static void test_fold_conv_nonfinite(void) {
    int64_t xd[4] = { 1, 2, 1, 1 }, wd[4] = { 2, 2, 1, 1 }, kd[3] = { 2, 1, 1 };
    rlx_tensor *x = NULL, *w = NULL, *k = NULL;
    CHECK_OK(rlx_tensor_create(RLX_DTYPE_F32, xd, 4, &x));
    CHECK_OK(rlx_tensor_create(RLX_DTYPE_F32, wd, 4, &w));
    CHECK_OK(rlx_tensor_create(RLX_DTYPE_F32, kd, 3, &k));
    rlx_model *m = NULL;
    if (!x || !w || !k) goto out;
    const float xv[2] = { 1, 1 }, wv[4] = { 1, -0.5f, 0.25f, 0.5f }, kv[2] = { INFINITY, 2 };
    memcpy(x->data, xv, sizeof xv);
    memcpy(w->data, wv, sizeof wv);
    memcpy(k->data, kv, sizeof kv);
    CHECK_OK(rlx_model_create(13, &m));
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 4, xd, NULL));
    CHECK_OK(rlx_model_add_initializer(m, "w", w));
    CHECK_OK(rlx_model_add_initializer(m, "k", k));
    CHECK_OK(rlx_model_add_node(m, "Conv", "conv", 2, (const char *[]){ "x", "w" }, 1, (const char *[]){ "c" }, 0, NULL));
    CHECK_OK(rlx_model_add_node(m, "Mul", "mul", 2, (const char *[]){ "c", "k" }, 1, (const char *[]){ "y" }, 0, NULL));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    rlx_session *s = NULL;
    rlx_tensor **o = NULL;
    size_t n = 0;
    CHECK_OK(create_off(m, "cse", &s));
    CHECK_OK(rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, &o, &n));
    if (o && n == 1) {
        const float *py = o[0]->data;
        CHECK_MSG(py[0] == INFINITY && py[1] == 1.5f, "Conv then Mul by (inf, 2): (%g, %g), want (inf, 1.5)",
                  (double)py[0], (double)py[1]);
    }
    test_free_outputs(o, (int)n);
    rlx_session_destroy(s);
out:
    rlx_model_destroy(m);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(w);
    rlx_tensor_destroy(k);
}

/* A kernel that refuses the values it folds (an integer division by zero,
 * an index out of range) fails on the model's own constants with
 * RLX_ERR_INVALID_MODEL naming the node; only values that came from the
 * bound input shapes make it the caller's fault (RLX_ERR_INVALID_ARGUMENT
 * with those shapes). Both said "the model does not accept the input
 * shapes x=[2]", and a model without inputs "... input shapes : ". */
static void fold_fault_model(const char *op, bool from_shape, rlx_model **out) {
    rlx_model *m = NULL;
    int64_t d = from_shape ? -1 : 2;
    CHECK_OK(rlx_model_create(13, &m));
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_I64, 1, &d, from_shape ? (const char *[]){ "n" } : NULL));
    int64_t two = 2, av[2] = { 7, 8 }, bv[2] = { 0, 5 };
    rlx_tensor *a = test_tensor_i64(1, &two, av), *b = test_tensor_i64(1, &two, bv);
    CHECK_OK(rlx_model_add_initializer(m, "a", a));
    CHECK_OK(rlx_model_add_initializer(m, "b", b));
    const char *rhs = "b";
    if (from_shape) {
        CHECK_OK(rlx_model_add_node(m, "Shape", "shp", 1, (const char *[]){ "x" }, 1, (const char *[]){ "s" }, 0, NULL));
        rhs = "s";
    }
    CHECK_OK(rlx_model_add_node(m, op, "bad", 2, (const char *[]){ "a", rhs }, 1, (const char *[]){ "q" }, 0, NULL));
    if (from_shape) {
        CHECK_OK(rlx_model_add_node(m, "Identity", "id", 1, (const char *[]){ "q" }, 1, (const char *[]){ "y" }, 0, NULL));
    } else {
        CHECK_OK(rlx_model_add_node(m, "Add", "add", 2, (const char *[]){ "q", "x" }, 1, (const char *[]){ "y" }, 0, NULL));
    }
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    rlx_tensor_destroy(a);
    rlx_tensor_destroy(b);
    *out = m;
}

static void fold_fault_case(const char *op, bool from_shape, int64_t xlen, rlx_status want, const char *msg) {
    rlx_model *m = NULL;
    fold_fault_model(op, from_shape, &m);
    rlx_session *s = NULL;
    CHECK_OK(create_off(m, FUSIONS, &s));
    int64_t xv[5] = { 1, 1, 1, 1, 1 }; /* xlen is at most 5 */
    rlx_tensor *x = test_tensor_i64(1, &xlen, xv);
    rlx_tensor **out = NULL;
    size_t n = 0;
    CHECK_FAILS(rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, &out, &n), want, msg);
    CHECK_MSG((want == RLX_ERR_INVALID_ARGUMENT) == (strstr(rlx_last_error(), "input shapes x=[") != NULL),
              "%s: %s", op, rlx_last_error());
    test_free_outputs(out, (int)n);
    rlx_tensor_destroy(x);
    rlx_session_destroy(s);
    rlx_model_destroy(m);
}

static void test_fold_kernel_fault(void) {
    fold_fault_case("Div", false, 2, RLX_ERR_INVALID_MODEL, "node 'bad' (Div): integer division by zero");
    fold_fault_case("Mod", false, 2, RLX_ERR_INVALID_MODEL, "node 'bad' (Mod): integer division by zero");
    fold_fault_case("Gather", false, 2, RLX_ERR_INVALID_MODEL, "node 'bad' (Gather): index 5 is out of range");
    /* x of shape [0]: Shape(x) = [0], the divisor the caller's */
    fold_fault_case("Div", true, 0, RLX_ERR_INVALID_ARGUMENT, "node 'bad' (Div): integer division by zero");
    /* x of shape [5]: Gather(a, [5]) out of range for the caller's shape */
    fold_fault_case("Gather", true, 5, RLX_ERR_INVALID_ARGUMENT, "node 'bad' (Gather): index 5 is out of range");
}

int main(void) {
    test_seed_from_env();
    test_cse();
    test_cse_keeps_outputs();
    test_fold_conv_affine();
    test_widen_f16();
    /* last: the others' random inputs stay as they were (widen_f16's bound
     * was relative to the result and failed on some draws until it was
     * taken relative to the products' magnitude) */
    test_fold_bn_chain();
    test_dropout_view();
    test_fold_bn_chain_nonfinite();
    test_fold_conv_nonfinite();
    test_fold_conv_affine_in_place();
    test_fold_kernel_fault();
    test_fold_conv_transpose_affine();
    TEST_MAIN_END();
}
