#define _POSIX_C_SOURCE 200809L
/* Compiler passes: each pass changes the graph as intended (counted on the
 * compiled program) and the results stay equal to an unoptimised
 * computation done in the test. */
#include "test.h"

#include "ir/graph.h"
#include "runtime/session.h"

/* The fusion passes (tests/test_fusion.c tests them) are off here, so that
 * each pass below is seen alone. */
#define FUSIONS "fuse_activation,fuse_attention,fuse_layernorm,fuse_add_layernorm,fuse_elementwise"

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
    CHECK_OK(rlx_session_create(m, NULL, &s));
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
    CHECK_OK(rlx_session_create(m, NULL, &s));
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
    setenv("RLX_DISABLE_PASSES", off_list, 1);
    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(m, NULL, &s));
    CHECK_OK(rlx_session_run(s, 1, names, ins, &out, &n));
    *off = out ? out[0] : NULL;
    free(out);
    rlx_session_destroy(s);
    setenv("RLX_DISABLE_PASSES", FUSIONS, 1);
    CHECK_OK(rlx_session_create(m, NULL, s_on));
    CHECK_OK(rlx_session_run(*s_on, 1, names, ins, &out, &n));
    *on = out ? out[0] : NULL;
    free(out);
    *prog_on = rlx_session_last_program(*s_on);
}

/* Conv -> Mul(per channel) -> Add(per channel) -> BatchNormalization folds
 * into one Conv; a Conv whose output has a second user is left alone.
 * Folded and unfolded results agree within rounding (rtol 1e-5). */
static void test_fold_conv_affine(void) {
    const int64_t C = 6;
    int64_t xd[4] = { 2, 3, 9, 7 }, wd[4] = { C, 3, 3, 3 }, cd[4] = { 1, C, 1, 1 }, vd[1] = { C };
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 4, wd, -1, 1);
    rlx_tensor *k = test_tensor_random(RLX_DTYPE_F32, 4, cd, 0.5f, 2);
    rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 4, cd, -1, 1);
    rlx_tensor *sc = test_tensor_random(RLX_DTYPE_F32, 1, vd, 0.5f, 1.5f);
    rlx_tensor *bi = test_tensor_random(RLX_DTYPE_F32, 1, vd, -1, 1);
    rlx_tensor *me = test_tensor_random(RLX_DTYPE_F32, 1, vd, -1, 1);
    rlx_tensor *va = test_tensor_random(RLX_DTYPE_F32, 1, vd, 0.5f, 2);
    for (int shared = 0; shared < 2; shared++) {
        rlx_model *m = NULL;
        CHECK_OK(rlx_model_create(13, &m));
        CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 4, xd, NULL));
        CHECK_OK(rlx_model_add_initializer(m, "w", w));
        CHECK_OK(rlx_model_add_initializer(m, "k", k));
        CHECK_OK(rlx_model_add_initializer(m, "b", b));
        CHECK_OK(rlx_model_add_initializer(m, "sc", sc));
        CHECK_OK(rlx_model_add_initializer(m, "bi", bi));
        CHECK_OK(rlx_model_add_initializer(m, "me", me));
        CHECK_OK(rlx_model_add_initializer(m, "va", va));
        rlx_attr pads = RLX_ATTR_IS("pads", 4, ((int64_t[]){ 1, 1, 1, 1 }));
        CHECK_OK(rlx_model_add_node(m, "Conv", "conv", 2, (const char *[]){ "x", "w" }, 1, (const char *[]){ "c" }, 1, &pads));
        CHECK_OK(rlx_model_add_node(m, "Mul", "mul", 2, (const char *[]){ "c", "k" }, 1, (const char *[]){ "m" }, 0, NULL));
        CHECK_OK(rlx_model_add_node(m, "Add", "add", 2, (const char *[]){ "b", "m" }, 1, (const char *[]){ "a" }, 0, NULL));
        CHECK_OK(rlx_model_add_node(m, "BatchNormalization", "bn", 5, (const char *[]){ "a", "sc", "bi", "me", "va" }, 1,
                                    (const char *[]){ "y" }, 0, NULL));
        if (shared) { /* a second user of the conv output blocks the first fold */
            CHECK_OK(rlx_model_add_node(m, "Relu", "r", 1, (const char *[]){ "c" }, 1, (const char *[]){ "r" }, 0, NULL));
            CHECK_OK(rlx_model_add_node(m, "Add", "sum", 2, (const char *[]){ "r", "y" }, 1, (const char *[]){ "z" }, 0, NULL));
            CHECK_OK(rlx_model_add_output(m, "z"));
        } else {
            CHECK_OK(rlx_model_add_output(m, "y"));
        }
        CHECK_OK(rlx_model_finish(m));
        rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 4, xd, -1, 1), *on = NULL, *off = NULL;
        const rlx_program *p = NULL;
        rlx_session *s = NULL;
        run_on_off(m, x, "fold_conv_affine", &on, &off, &p, &s);
        CHECK(on && off && test_allclose(on, off, 1e-5, 1e-6));
        if (p) {
            CHECK_MSG(count_op(p, "Conv") == 1, "%zu Conv", count_op(p, "Conv"));
            size_t rest = count_op(p, "Mul") + count_op(p, "Add") + count_op(p, "BatchNormalization");
            CHECK_MSG(rest == (shared ? 4u : 0u), "shared=%d: %zu affine nodes left", shared, rest);
        }
        rlx_tensor_destroy(on);
        rlx_tensor_destroy(off);
        rlx_tensor_destroy(x);
        rlx_session_destroy(s);
        rlx_model_destroy(m);
    }
    rlx_tensor_destroy(w);
    rlx_tensor_destroy(k);
    rlx_tensor_destroy(b);
    rlx_tensor_destroy(sc);
    rlx_tensor_destroy(bi);
    rlx_tensor_destroy(me);
    rlx_tensor_destroy(va);
}

int main(void) {
    test_seed_from_env();
    setenv("RLX_DISABLE_PASSES", FUSIONS, 1);
    test_cse();
    test_cse_keeps_outputs();
    test_fold_conv_affine();
    TEST_MAIN_END();
}
