/* Compiler passes: each pass changes the graph as intended (counted on the
 * compiled program) and the results stay equal to an unoptimised
 * computation done in the test. */
#include "test.h"

#include "ir/graph.h"
#include "runtime/session.h"

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

int main(void) {
    test_seed_from_env();
    test_cse();
    test_cse_keeps_outputs();
    TEST_MAIN_END();
}
