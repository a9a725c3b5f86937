/* Control flow (If, Loop, Scan) through the internal graph API: subgraph
 * bodies with outer-scope references, run eagerly on the CPU; results are
 * checked against sums computed in the test; the host interpreter
 * (rlx_cpu_eval_graph, which runs them) directly. */
#include "test.h"

#include "backend/cpu/cpu.h"
#include "base/mem.h"
#include "base/status.h"
#include "ir/graph.h"
#include "passes/passes.h"
#include "runtime/model.h"

static int add_input(rlx_graph *g, const char *name, rlx_dtype dt, int rank, const int64_t *dims) {
    int id;
    if (rlx_graph_add_value(g, name, &id)) return -1;
    rlx_value *v = &g->values[id];
    v->dtype = dt;
    v->flags |= RLX_VALUE_INPUT;
    rlx_value_set_shape(v, rank, dims, NULL);
    RLX_GROW(g->inputs, g->cap_inputs, g->n_inputs + 1);
    g->inputs[g->n_inputs++] = id;
    return id;
}

static int add_outer(rlx_graph *g, const char *name) {
    int id;
    if (rlx_graph_add_value(g, name, &id)) return -1;
    g->values[id].flags |= RLX_VALUE_OUTER;
    return id;
}

static int new_value(rlx_graph *g, const char *name) {
    int id;
    if (rlx_graph_add_value(g, name, &id)) return -1;
    return id;
}

static void set_output(rlx_graph *g, int id, rlx_dtype dt, int rank, const int64_t *dims) {
    RLX_GROW(g->outputs, g->cap_outputs, g->n_outputs + 1);
    g->outputs[g->n_outputs++] = id;
    g->values[id].flags |= RLX_VALUE_OUTPUT;
    g->values[id].dtype = dt;
    rlx_value_set_shape(&g->values[id], rank, dims, NULL);
}

static rlx_status add_node(rlx_graph *g, const char *op, const int *in, int n_in, const int *out, int n_out,
                           rlx_node_attr *attrs, int n_attrs) {
    return rlx_graph_add_node(g, op, "", NULL, in, n_in, out, n_out, attrs, n_attrs, NULL);
}

/* Loop: acc_{i+1} = acc_i + x * i, for M iterations; scan output = acc each
 * step. x comes from the outer scope. */
static void test_loop(void) {
    int64_t d4[1] = { 4 };
    rlx_graph *g, *body;
    CHECK_OK(rlx_graph_create(13, &g));
    CHECK_OK(rlx_graph_create(13, &body));
    int x = add_input(g, "x", RLX_DTYPE_F32, 1, d4);
    int m = add_input(g, "M", RLX_DTYPE_I64, 0, NULL);
    int acc0 = add_input(g, "acc0", RLX_DTYPE_F32, 1, d4);
    /* body(i, cond, acc) -> (cond, acc + x*i, acc + x*i) */
    int bi = add_input(body, "i", RLX_DTYPE_I64, 0, NULL);
    int bc = add_input(body, "cond", RLX_DTYPE_BOOL, 0, NULL);
    int bacc = add_input(body, "acc", RLX_DTYPE_F32, 1, d4);
    int bx = add_outer(body, "x");
    int fi = new_value(body, "fi"), xi = new_value(body, "xi"), nacc = new_value(body, "nacc");
    int cout = new_value(body, "cond_out"), sc = new_value(body, "scan");
    rlx_node_attr to = { .name = rlx_strdup("to"), .type = RLX_ATTR_INT, .i = RLX_DTYPE_F32 };
    CHECK_OK(add_node(body, "Cast", &bi, 1, &fi, 1, &to, 1));
    CHECK_OK(add_node(body, "Mul", (int[]){ bx, fi }, 2, &xi, 1, NULL, 0));
    CHECK_OK(add_node(body, "Add", (int[]){ bacc, xi }, 2, &nacc, 1, NULL, 0));
    int nc = new_value(body, "nc");
    CHECK_OK(add_node(body, "Not", &bc, 1, &nc, 1, NULL, 0));
    CHECK_OK(add_node(body, "Not", &nc, 1, &cout, 1, NULL, 0));
    CHECK_OK(add_node(body, "Relu", &nacc, 1, &sc, 1, NULL, 0)); /* acc stays >= 0 with x >= 0 */
    set_output(body, cout, RLX_DTYPE_BOOL, 0, NULL);
    set_output(body, nacc, RLX_DTYPE_F32, 1, d4);
    set_output(body, sc, RLX_DTYPE_F32, 1, d4);
    int yacc = new_value(g, "acc_final"), yscan = new_value(g, "scans");
    rlx_node_attr battr = { .name = rlx_strdup("body"), .type = RLX_ATTR_GRAPH, .g = body };
    CHECK_OK(add_node(g, "Loop", (int[]){ m, -1, acc0 }, 3, (int[]){ yacc, yscan }, 2, &battr, 1));
    set_output(g, yacc, RLX_DTYPE_F32, 1, d4);
    set_output(g, yscan, RLX_DTYPE_F32, 2, (int64_t[]){ -1, 4 });
    (void)x;
    rlx_model *model = NULL;
    CHECK_OK(rlx_model_from_graph(g, &model));
    if (!model) return;
    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(model, NULL, &s));
    rlx_tensor *tx = test_tensor_random(RLX_DTYPE_F32, 1, d4, 0, 1);
    rlx_tensor *ta = test_tensor_random(RLX_DTYPE_F32, 1, d4, 0, 1);
    int64_t five = 5;
    rlx_tensor *tm = test_tensor_i64(0, NULL, &five);
    rlx_tensor **out = NULL;
    size_t n_out = 0;
    CHECK_OK(rlx_session_run(s, 3, (const char *[]){ "x", "M", "acc0" }, (const rlx_tensor *[]){ tx, tm, ta }, &out,
                             &n_out));
    if (out) {
        CHECK(n_out == 2);
        CHECK(out[1]->rank == 2 && out[1]->dims[0] == 5 && out[1]->dims[1] == 4);
        const float *px = tx->data, *pa = ta->data, *f = out[0]->data, *sc2 = out[1]->data;
        for (int j = 0; j < 4; j++) {
            float acc = pa[j];
            for (int i = 0; i < 5; i++) {
                acc = acc + px[j] * (float)i;
                CHECK(sc2[i * 4 + j] == acc);
            }
            CHECK(f[j] == acc);
        }
        test_free_outputs(out, (int)n_out);
    }
    CHECK(strstr(rlx_session_dispatch_report(s), "eagerly") != NULL);
    rlx_tensor_destroy(tx);
    rlx_tensor_destroy(ta);
    rlx_tensor_destroy(tm);
    rlx_session_destroy(s);
    rlx_model_destroy(model);
}

/* Node y = If(c) in g with the branches then: x + 1, else: x * 2 (x from
 * the outer scope, y of shape [dim]); y becomes g's output. */
static void add_if_node(rlx_graph *g, int c, int64_t dim) {
    int64_t d1[1] = { dim };
    rlx_graph *tb, *eb;
    CHECK_OK(rlx_graph_create(13, &tb));
    CHECK_OK(rlx_graph_create(13, &eb));
    int one_id, two_id;
    float one = 1, two = 2;
    CHECK_OK(rlx_graph_add_konst(tb, "one", test_tensor_f32(0, NULL, &one), &one_id));
    CHECK_OK(rlx_graph_add_konst(eb, "two", test_tensor_f32(0, NULL, &two), &two_id));
    int tx = add_outer(tb, "x"), ex = add_outer(eb, "x");
    int ty = new_value(tb, "ty"), ey = new_value(eb, "ey");
    CHECK_OK(add_node(tb, "Add", (int[]){ tx, one_id }, 2, &ty, 1, NULL, 0));
    CHECK_OK(add_node(eb, "Mul", (int[]){ ex, two_id }, 2, &ey, 1, NULL, 0));
    set_output(tb, ty, RLX_DTYPE_F32, 1, d1);
    set_output(eb, ey, RLX_DTYPE_F32, 1, d1);
    int y = new_value(g, "y");
    rlx_node_attr at[2] = { { .name = rlx_strdup("then_branch"), .type = RLX_ATTR_GRAPH, .g = tb },
                            { .name = rlx_strdup("else_branch"), .type = RLX_ATTR_GRAPH, .g = eb } };
    CHECK_OK(add_node(g, "If", &c, 1, &y, 1, at, 2));
    set_output(g, y, RLX_DTYPE_F32, 1, d1);
}

/* If: y = cond ? x + 1 : x * 2, with x from the outer scope. The condition
 * is a graph input of one bool (a control input: plans are specialised on
 * its value, the branch is inlined and the plan is static); the values
 * alternate, so plans are taken from the cache too. */
static void test_if(void) {
    int64_t d3[1] = { 3 };
    rlx_graph *g;
    CHECK_OK(rlx_graph_create(13, &g));
    add_input(g, "x", RLX_DTYPE_F32, 1, d3);
    add_if_node(g, add_input(g, "c", RLX_DTYPE_BOOL, 0, NULL), 3);
    rlx_model *model = NULL;
    CHECK_OK(rlx_model_from_graph(g, &model));
    if (!model) return;
    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(model, NULL, &s));
    rlx_tensor *txv = test_tensor_random(RLX_DTYPE_F32, 1, d3, -1, 1);
    for (int r = 0; r < 4; r++) {
        int cv = r % 2;
        rlx_tensor *tc = test_tensor(RLX_DTYPE_BOOL, 0, NULL);
        *(uint8_t *)tc->data = (uint8_t)cv;
        rlx_tensor **out = NULL;
        size_t n = 0;
        CHECK_OK(rlx_session_run(s, 2, (const char *[]){ "x", "c" }, (const rlx_tensor *[]){ txv, tc }, &out, &n));
        rlx_plan_info pi;
        CHECK_MSG(rlx_session_plan_info(s, &pi) == RLX_OK, "c = %d: no static plan: %s", cv, rlx_last_error());
        if (out) {
            const float *px = txv->data, *py = out[0]->data;
            for (int i = 0; i < 3; i++) CHECK(py[i] == (cv ? px[i] + 1.0f : px[i] * 2.0f));
            test_free_outputs(out, (int)n);
        }
        rlx_tensor_destroy(tc);
    }
    /* compiled ahead from shapes only (NULL data): x may be a shape, the
     * control input's value decides the plan and must be given */
    rlx_tensor x_shape = { .dtype = RLX_DTYPE_F32, .rank = 1, .dims = { 3 } };
    rlx_tensor c_shape = { .dtype = RLX_DTYPE_BOOL, .rank = 0 };
    rlx_tensor *tc = test_tensor(RLX_DTYPE_BOOL, 0, NULL);
    CHECK_OK(rlx_session_prepare(s, 2, (const char *[]){ "x", "c" }, (const rlx_tensor *[]){ &x_shape, tc }));
    CHECK_FAILS(rlx_session_prepare(s, 2, (const char *[]){ "x", "c" }, (const rlx_tensor *[]){ txv, &c_shape }),
                RLX_ERR_INVALID_ARGUMENT, "input 'c': data is NULL, but the plan depends on its value");
    /* a run reads the data: NULL is refused there */
    rlx_tensor **out = NULL;
    size_t n = 0;
    CHECK_FAILS(rlx_session_run(s, 2, (const char *[]){ "x", "c" }, (const rlx_tensor *[]){ &x_shape, tc }, &out, &n),
                RLX_ERR_INVALID_ARGUMENT, "input 'x': nbytes 0");
    rlx_tensor_destroy(tc);
    rlx_tensor_destroy(txv);
    rlx_session_destroy(s);
    rlx_model_destroy(model);
}

/* If whose condition depends on shapes only (silero VAD's): y = len(x) == 3
 * ? x + 1 : x * 2, cond = Equal(Shape(x), [3]), x of a dim bound at run
 * time. The fold pass inlines the chosen branch, so each input shape gets a
 * static plan (rlx_session_plan_info succeeds: no eager run) and both
 * branches give their values (one f32 operation: exact). */
static void test_if_shape_cond(void) {
    int64_t dyn[1] = { RLX_DIM_DYN }, one_d[1] = { 1 }, three = 3;
    rlx_graph *g;
    CHECK_OK(rlx_graph_create(13, &g));
    int x = add_input(g, "x", RLX_DTYPE_F32, 1, dyn);
    int k3, shp = new_value(g, "shp"), c = new_value(g, "c");
    CHECK_OK(rlx_graph_add_konst(g, "k3", test_tensor_i64(1, one_d, &three), &k3));
    CHECK_OK(add_node(g, "Shape", &x, 1, &shp, 1, NULL, 0));
    CHECK_OK(add_node(g, "Equal", (int[]){ shp, k3 }, 2, &c, 1, NULL, 0));
    add_if_node(g, c, RLX_DIM_DYN);
    rlx_model *model = NULL;
    CHECK_OK(rlx_model_from_graph(g, &model));
    if (!model) return;
    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(model, NULL, &s));
    for (int64_t len = 2; len <= 4 && s; len++) {
        rlx_tensor *tx_ = test_tensor_random(RLX_DTYPE_F32, 1, &len, -1, 1);
        rlx_tensor **out = NULL;
        size_t n = 0;
        CHECK_OK(rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ tx_ }, &out, &n));
        rlx_plan_info pi;
        CHECK_MSG(rlx_session_plan_info(s, &pi) == RLX_OK, "len %lld: no static plan: %s", (long long)len,
                  rlx_last_error());
        if (out) {
            const float *px = tx_->data, *py = out[0]->data;
            CHECK(out[0]->rank == 1 && out[0]->dims[0] == len);
            for (int64_t i = 0; i < len; i++) CHECK(py[i] == (len == 3 ? px[i] + 1.0f : px[i] * 2.0f));
            test_free_outputs(out, (int)n);
        }
        rlx_tensor_destroy(tx_);
    }
    rlx_session_destroy(s);
    rlx_model_destroy(model);
}

/* A control input that takes many values: y = k == 3 ? x + 1 : x * 2 with
 * k an i64 input; k = 0 .. 9. The first values get static plans; past
 * CTL_VALUES_MAX (4) new values the session stops specialising (drops the
 * plans, runs eagerly); every run's values are right (exact). */
static void test_if_many_values(void) {
    int64_t d3[1] = { 3 }, one_d[1] = { 1 }, three = 3;
    rlx_graph *g;
    CHECK_OK(rlx_graph_create(13, &g));
    add_input(g, "x", RLX_DTYPE_F32, 1, d3);
    int k = add_input(g, "k", RLX_DTYPE_I64, 1, one_d), k3, c = new_value(g, "c");
    CHECK_OK(rlx_graph_add_konst(g, "k3", test_tensor_i64(1, one_d, &three), &k3));
    CHECK_OK(add_node(g, "Equal", (int[]){ k, k3 }, 2, &c, 1, NULL, 0));
    add_if_node(g, c, 3);
    rlx_model *model = NULL;
    CHECK_OK(rlx_model_from_graph(g, &model));
    if (!model) return;
    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(model, NULL, &s));
    rlx_tensor *txv = test_tensor_random(RLX_DTYPE_F32, 1, d3, -1, 1);
    for (int64_t kv = 0; kv < 10 && s; kv++) {
        rlx_tensor *tk = test_tensor_i64(1, one_d, &kv), **out = NULL;
        size_t n = 0;
        CHECK_OK(rlx_session_run(s, 2, (const char *[]){ "x", "k" }, (const rlx_tensor *[]){ txv, tk }, &out, &n));
        rlx_plan_info pi;
        rlx_status st = rlx_session_plan_info(s, &pi);
        /* values 0 .. 4: the first plan and 4 new values; from 5 on eager */
        CHECK_MSG((st == RLX_OK) == (kv <= 4), "k = %lld: plan_info %d", (long long)kv, (int)st);
        if (out) {
            const float *px = txv->data, *py = out[0]->data;
            for (int i = 0; i < 3; i++) CHECK(py[i] == (kv == 3 ? px[i] + 1.0f : px[i] * 2.0f));
            test_free_outputs(out, (int)n);
        }
        rlx_tensor_destroy(tk);
    }
    rlx_tensor_destroy(txv);
    rlx_session_destroy(s);
    rlx_model_destroy(model);
}

/* The host interpreter directly: a body y = x * k (k from the enclosing
 * graph), z = NonZero(x) (data-dependent), evaluated with random non-zero
 * x and some zeros; the fold pass leaves NonZero to eager evaluation; an
 * outer reference the parent lacks is an error naming it. */
static void test_eval_graph(void) {
    int64_t d5[1] = { 5 };
    rlx_graph *parent, *body;
    CHECK_OK(rlx_graph_create(13, &parent));
    CHECK_OK(rlx_graph_create(13, &body));
    float kv = test_rand_uniform(0.5f, 2.0f), xv[5];
    for (int i = 0; i < 5; i++) xv[i] = i % 2 ? 0.0f : test_rand_uniform(0.5f, 2.0f);
    int kid;
    CHECK_OK(rlx_graph_add_konst(parent, "k", test_tensor_f32(0, NULL, &kv), &kid));
    int x = add_input(body, "x", RLX_DTYPE_F32, 1, d5), k = add_outer(body, "k");
    int y = new_value(body, "y"), z = new_value(body, "z");
    CHECK_OK(add_node(body, "Mul", (int[]){ x, k }, 2, &y, 1, NULL, 0));
    CHECK_OK(add_node(body, "NonZero", &x, 1, &z, 1, NULL, 0));
    set_output(body, y, RLX_DTYPE_F32, 1, d5);
    set_output(body, z, RLX_DTYPE_I64, -1, NULL);
    rlx_tensor *tx = test_tensor_f32(1, d5, xv), *out[2] = { 0 };
    CHECK_OK(rlx_cpu_eval_graph(body, parent, NULL, (const rlx_tensor *const[]){ tx }, out));
    if (out[0] && out[1]) {
        const float *py = out[0]->data;
        for (int i = 0; i < 5; i++) CHECK(py[i] == xv[i] * kv); /* one f32 product: exact */
        const int64_t *pz = out[1]->data;
        CHECK(out[1]->rank == 2 && out[1]->dims[0] == 1 && out[1]->dims[1] == 3);
        for (int i = 0; i < 3 && out[1]->dims[1] == 3; i++) CHECK(pz[i] == 2 * i);
    }
    for (int i = 0; i < 2; i++) rlx_tensor_destroy(out[i]), out[i] = NULL;
    /* folding with x constant: Mul folds, NonZero stays */
    rlx_graph *f;
    CHECK_OK(rlx_graph_clone(body, &f));
    f->values[x].konst = tx;
    f->values[x].flags |= RLX_VALUE_KONST_BORROWED;
    f->values[k].konst = parent->values[kid].konst;
    f->values[k].flags |= RLX_VALUE_KONST_BORROWED;
    f->values[k].dtype = RLX_DTYPE_F32;
    rlx_value_set_shape(&f->values[k], 0, NULL, NULL);
    rlx_pass_stats ps = { 0 };
    CHECK_OK(rlx_pass_fold(f, &ps));
    CHECK(ps.folded == 1 && f->n_nodes == 1 && f->nodes[0].op == RLX_OP_NonZero);
    CHECK(f->values[y].konst != NULL && f->values[z].konst == NULL);
    rlx_graph_destroy(f);
    rlx_graph *empty;
    CHECK_OK(rlx_graph_create(13, &empty));
    CHECK_FAILS(rlx_cpu_eval_graph(body, empty, NULL, (const rlx_tensor *const[]){ tx }, out), RLX_ERR_INVALID_MODEL,
                "'k', which the enclosing graph does not define");
    CHECK(out[0] == NULL && out[1] == NULL);
    rlx_graph_destroy(empty);
    rlx_tensor_destroy(tx);
    rlx_graph_destroy(body);
    rlx_graph_destroy(parent);
}

int main(void) {
    test_seed_from_env();
    test_if();
    test_if_shape_cond();
    test_if_many_values();
    test_loop();
    test_eval_graph();
    TEST_MAIN_END();
}
