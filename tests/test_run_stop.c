/* Stopping runs (rlx_session_terminate, rlx_session_set_terminate, the
 * time limit run.timeout_ms / rlx_session_set_run_timeout): a Loop with a
 * trip count of 2^62, a while-style Loop whose condition stays true, a
 * Loop inside a Loop, a long Scan, constant folding while a plan
 * compiles, a planned CPU chain and, where a GPU
 * exists, a GPU plan of several segments. Each stopped run returns
 * RLX_ERR_CANCELLED within a bounded time with a message naming where it
 * stopped, and the same session then runs a normal input correctly. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include "test.h"

#include <pthread.h>
#include <time.h>

#include "base/platform.h"
#include "onnx_build.h"

#define F32 ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define I64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64
#define BOOL ONNX__TENSOR_PROTO__DATA_TYPE__BOOL

/* Longest a stop may take to come back here: generous, since the machine
 * running the tests may be loaded; a stop that is not checked never
 * returns (2^62 iterations), or returns after the 1e8-iteration cap. */
#define STOP_BOUND_S 5.0

static const int64_t k_d4[1] = { 4 };

static rlx_model *load(Onnx__ModelProto *m) {
    size_t size;
    uint8_t *buf = model_pack_free(m, &size);
    rlx_model *model = NULL;
    CHECK_OK(rlx_model_load_onnx_memory(buf, size, NULL, &model));
    free(buf);
    return model;
}

/* A Loop body (iter, cond, acc[4]) -> (cond, acc + 1), as graph `name`,
 * its values named prefix_*. */
static Onnx__GraphProto *add_one_body(const char *name, const char *prefix) {
    char b[64];
    Onnx__GraphProto *g = graph_new(name);
    snprintf(b, sizeof b, "%s_i", prefix);
    graph_input(g, vi_new(b, I64, 0, NULL, NULL));
    snprintf(b, sizeof b, "%s_c", prefix);
    graph_input(g, vi_new(b, BOOL, 0, NULL, NULL));
    snprintf(b, sizeof b, "%s_acc", prefix);
    graph_input(g, vi_new(b, F32, 1, k_d4, NULL));
    float one = 1.0f;
    snprintf(b, sizeof b, "%s_one", prefix);
    graph_init(g, tensor_floats(b, 0, NULL, &one, 1));
    char ins[96], outs[64];
    snprintf(ins, sizeof ins, "%s_c", prefix);
    snprintf(outs, sizeof outs, "%s_c_out", prefix);
    graph_node(g, node_new("Identity", NULL, ins, outs));
    snprintf(ins, sizeof ins, "%s_acc,%s_one", prefix, prefix);
    snprintf(outs, sizeof outs, "%s_acc_out", prefix);
    graph_node(g, node_new("Add", NULL, ins, outs));
    snprintf(b, sizeof b, "%s_c_out", prefix);
    graph_output(g, vi_new(b, BOOL, 0, NULL, NULL));
    snprintf(b, sizeof b, "%s_acc_out", prefix);
    graph_output(g, vi_new(b, F32, 1, k_d4, NULL));
    return g;
}

/* y = Loop(M, "", acc0) adding 1 per iteration, inputs M (i64 scalar) and
 * acc0 (f32 [4]); while_style: y = Loop("", cond0 = true, acc0) instead,
 * the body's condition its input (always true), input acc0 only. */
static rlx_model *loop_model(bool while_style) {
    const char *name = while_style ? "while" : "loop";
    Onnx__GraphProto *g = graph_new(name);
    if (!while_style) graph_input(g, vi_new("M", I64, 0, NULL, NULL));
    graph_input(g, vi_new("acc0", F32, 1, k_d4, NULL));
    uint8_t t = 1;
    if (while_style) graph_init(g, tensor_raw("cond0", BOOL, 0, NULL, &t, 1));
    Onnx__NodeProto *n = node_new("Loop", name, while_style ? ",cond0,acc0" : "M,,acc0", "y");
    node_attr(n, attr_g("body", add_one_body("body", "b")));
    graph_node(g, n);
    graph_output(g, vi_new("y", F32, 1, k_d4, NULL));
    return load(model_new(17, g));
}

/* A Loop of N (input) iterations whose body is a Loop of M (input, an outer
 * reference) iterations adding 1: y = acc0 + N * M. */
static rlx_model *nested_model(void) {
    Onnx__GraphProto *g = graph_new("nested");
    graph_input(g, vi_new("N", I64, 0, NULL, NULL));
    graph_input(g, vi_new("M", I64, 0, NULL, NULL));
    graph_input(g, vi_new("acc0", F32, 1, k_d4, NULL));
    Onnx__GraphProto *ob = graph_new("outer_body");
    graph_input(ob, vi_new("o_i", I64, 0, NULL, NULL));
    graph_input(ob, vi_new("o_c", BOOL, 0, NULL, NULL));
    graph_input(ob, vi_new("o_acc", F32, 1, k_d4, NULL));
    graph_node(ob, node_new("Identity", NULL, "o_c", "o_c_out"));
    Onnx__NodeProto *inner = node_new("Loop", "inner", "M,,o_acc", "o_acc_out");
    node_attr(inner, attr_g("body", add_one_body("inner_body", "ib")));
    graph_node(ob, inner);
    graph_output(ob, vi_new("o_c_out", BOOL, 0, NULL, NULL));
    graph_output(ob, vi_new("o_acc_out", F32, 1, k_d4, NULL));
    Onnx__NodeProto *outer = node_new("Loop", "outer", "N,,acc0", "y");
    node_attr(outer, attr_g("body", ob));
    graph_node(g, outer);
    graph_output(g, vi_new("y", F32, 1, k_d4, NULL));
    return load(model_new(17, g));
}

/* y = Scan over x [L, 1] of s + x_t from s0 [1]: inputs s0, x. */
static rlx_model *scan_model(void) {
    Onnx__GraphProto *g = graph_new("scan");
    const int64_t d1[1] = { 1 }, dx[2] = { DIM_UNSET, 1 };
    graph_input(g, vi_new("s0", F32, 1, d1, NULL));
    graph_input(g, vi_new("x", F32, 2, dx, (const char *const[]){ "L", NULL }));
    Onnx__GraphProto *b = graph_new("scan_body");
    graph_input(b, vi_new("s", F32, 1, d1, NULL));
    graph_input(b, vi_new("xt", F32, 1, d1, NULL));
    graph_node(b, node_new("Add", NULL, "s,xt", "s_out"));
    graph_output(b, vi_new("s_out", F32, 1, d1, NULL));
    Onnx__NodeProto *n = node_new("Scan", "scan", "s0,x", "y");
    node_attr(n, attr_g("body", b));
    node_attr(n, attr_i("num_scan_inputs", 1));
    graph_node(g, n);
    graph_output(g, vi_new("y", F32, 1, d1, NULL));
    return load(model_new(17, g));
}

/* A planned chain: y = relu(...relu(x W) W ...) over `count` MatMul+Relu
 * pairs, x [n, n] input, W [n, n] a random initializer. */
static rlx_model *chain_model(int count, int64_t n) {
    Onnx__GraphProto *g = graph_new("chain");
    const int64_t d[2] = { n, n };
    graph_input(g, vi_new("x", F32, 2, d, NULL));
    float a = sqrtf(6.0f / (float)n); /* He-style scale: values stay near 1 through the Relus */
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 2, d, -a, a);
    graph_init(g, tensor_raw("W", F32, 2, d, w->data, w->nbytes));
    rlx_tensor_destroy(w);
    char in[32] = "x", mid[32], out[32], ins[80];
    for (int i = 0; i < count; i++) {
        snprintf(mid, sizeof mid, "m%d", i);
        snprintf(out, sizeof out, "r%d", i);
        snprintf(ins, sizeof ins, "%s,W", in);
        graph_node(g, node_new("MatMul", NULL, ins, mid));
        graph_node(g, node_new("Relu", NULL, mid, out));
        snprintf(in, sizeof in, "%s", out);
    }
    graph_output(g, vi_new(in, F32, 2, d, NULL));
    return load(model_new(17, g));
}

static rlx_session *session(const rlx_model *m, const char *device, const char *timeout_ms) {
    rlx_options *o = NULL;
    rlx_session *s = NULL;
    CHECK_OK(rlx_options_create(&o));
    if (timeout_ms) CHECK_OK(rlx_options_set(o, "run.timeout_ms", timeout_ms));
    CHECK_OK(rlx_session_create_with_options(m, &(rlx_session_options){ .device = device }, o, &s));
    rlx_options_destroy(o);
    return s;
}

/* a + n, added 1.0f at a time as the models do. */
static float plus_ones(float a, int64_t n) {
    for (int64_t i = 0; i < n; i++) a += 1.0f;
    return a;
}

/* Runs the loop model with trip count m; on success checks y = acc0 + m. */
static rlx_status run_loop_with(rlx_session *s, int64_t m, const rlx_run_options *ro) {
    rlx_tensor *tm = test_tensor_i64(0, NULL, &m);
    rlx_tensor *ta = test_tensor_random(RLX_DTYPE_F32, 1, k_d4, -1, 1);
    rlx_tensor **out = NULL;
    size_t n_out = 0;
    rlx_status st =
        rlx_session_run_with(s, ro, 2, (const char *[]){ "M", "acc0" }, (const rlx_tensor *[]){ tm, ta }, &out, &n_out);
    if (!st) {
        const float *a = ta->data, *y = out[0]->data;
        for (int j = 0; j < 4; j++) CHECK(y[j] == plus_ones(a[j], m)); /* the body's f32 additions, in order: exact */
        test_free_outputs(out, (int)n_out);
    }
    rlx_tensor_destroy(tm);
    rlx_tensor_destroy(ta);
    return st;
}

static rlx_status run_loop(rlx_session *s, int64_t m) { return run_loop_with(s, m, NULL); }

typedef struct stopper {
    rlx_session *s;
    double delay_s, called_at;
} stopper;

static void *stop_later(void *arg) {
    stopper *t = arg;
    struct timespec ts = { (time_t)t->delay_s, (long)((t->delay_s - (double)(time_t)t->delay_s) * 1e9) };
    nanosleep(&ts, NULL);
    t->called_at = rlx_now_seconds();
    CHECK_OK(rlx_session_terminate(t->s));
    return NULL;
}

static void test_terminate_loop(void) {
    rlx_model *m = loop_model(false);
    rlx_session *s = m ? session(m, "cpu", NULL) : NULL;
    if (!s) goto out;
    CHECK_OK(run_loop(s, 3)); /* plain run first */
    stopper t = { .s = s, .delay_s = 0.2 };
    pthread_t th;
    CHECK(pthread_create(&th, NULL, stop_later, &t) == 0);
    rlx_status st = run_loop(s, (int64_t)1 << 62);
    double back = rlx_now_seconds();
    pthread_join(th, NULL);
    CHECK_MSG(st == RLX_ERR_CANCELLED, "%s: %s", rlx_status_name(st), rlx_last_error());
    CHECK_MSG(strstr(rlx_last_error(), "node 'loop' (Loop): ") && strstr(rlx_last_error(), " of 4611686018427387904") &&
                  strstr(rlx_last_error(), "run cancelled by rlx_session_terminate"),
              "%s", rlx_last_error());
    CHECK_MSG(back - t.called_at < STOP_BOUND_S, "stopped %.3f s after rlx_session_terminate", back - t.called_at);
    fprintf(stderr, "terminate: returned %.1f ms after the call: %s\n", (back - t.called_at) * 1e3, rlx_last_error());
    /* a one-shot request: the next run works */
    CHECK_OK(run_loop(s, 5));
    /* the sticky flag: refused at the start until cleared */
    CHECK_OK(rlx_session_set_terminate(s, true));
    CHECK_FAILS(run_loop(s, 2), RLX_ERR_CANCELLED, "terminate flag is set");
    CHECK_FAILS(run_loop(s, 2), RLX_ERR_CANCELLED, "terminate flag is set");
    CHECK_OK(rlx_session_set_terminate(s, false));
    CHECK_OK(run_loop(s, 7));
    CHECK_FAILS(rlx_session_terminate(NULL), RLX_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_FAILS(rlx_session_set_run_timeout(s, -1), RLX_ERR_INVALID_ARGUMENT, "time limit");
out:
    rlx_session_destroy(s);
    rlx_model_destroy(m);
}

/* Per-run options (rlx_run_options): a flag stops the runs given it and no
 * other; its time limit replaces the session's. A looper runs the loop
 * model in its own thread on inputs the main thread made (the test's
 * random source and CHECK are not thread-safe); the main thread checks
 * the output after the join. */
typedef struct looper {
    rlx_session *s;
    const rlx_run_options *ro;
    int64_t m;
    rlx_tensor *tm, *acc, **out;
    size_t n_out;
    rlx_status st;
    char msg[512];
    double back;
} looper;

static void *loop_thread(void *arg) {
    looper *l = arg;
    l->st = rlx_session_run_with(l->s, l->ro, 2, (const char *[]){ "M", "acc0" },
                                 (const rlx_tensor *[]){ l->tm, l->acc }, &l->out, &l->n_out);
    l->back = rlx_now_seconds();
    snprintf(l->msg, sizeof l->msg, "%s", l->st ? rlx_last_error() : "");
    return NULL;
}

static void looper_start(looper *l, pthread_t *th) {
    l->tm = test_tensor_i64(0, NULL, &l->m);
    l->acc = test_tensor_random(RLX_DTYPE_F32, 1, k_d4, -1, 1);
    CHECK(pthread_create(th, NULL, loop_thread, l) == 0);
}

/* After the join: y = acc0 + m on success; frees the tensors. */
static void looper_end(looper *l) {
    if (!l->st) {
        const float *a = l->acc->data, *y = l->out[0]->data;
        for (int j = 0; j < 4; j++) CHECK(y[j] == plus_ones(a[j], l->m));
        test_free_outputs(l->out, (int)l->n_out);
    }
    rlx_tensor_destroy(l->tm);
    rlx_tensor_destroy(l->acc);
}

static void sleep_s(double s) {
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    nanosleep(&ts, NULL);
}

/* Two runs of session s given options ro (NULL: none): a long one in
 * progress and a short one waiting for its turn, then ro's terminate flag
 * (or, without ro, the session's sticky one) set; both joined. */
static void stop_in_progress_and_waiting(rlx_session *s, rlx_run_options *ro, looper *busy, looper *waiting) {
    *busy = (looper){ .s = s, .ro = ro, .m = (int64_t)1 << 62 };
    *waiting = (looper){ .s = s, .ro = ro, .m = 3 };
    pthread_t tb, tw;
    looper_start(busy, &tb);
    sleep_s(0.1);
    looper_start(waiting, &tw);
    sleep_s(0.1);
    if (ro) CHECK_OK(rlx_run_options_set_terminate(ro, true));
    else CHECK_OK(rlx_session_set_terminate(s, true));
    pthread_join(tb, NULL);
    pthread_join(tw, NULL);
    looper_end(busy);
    looper_end(waiting);
}

static void test_run_options(void) {
    rlx_model *m = loop_model(false);
    rlx_session *s1 = m ? session(m, "cpu", NULL) : NULL, *s2 = m ? session(m, "cpu", "50") : NULL;
    rlx_run_options *r1 = NULL, *r2 = NULL;
    CHECK_OK(rlx_run_options_create(&r1));
    CHECK_OK(rlx_run_options_create(&r2));
    if (!s1 || !s2 || !r1 || !r2) goto out;
    bool flag = true;
    CHECK_OK(rlx_run_options_get_terminate(r1, &flag));
    CHECK(!flag);
    CHECK_OK(run_loop_with(s1, 3, r1));
    /* two long runs on two sessions, each with its own options: setting
     * one flag stops its run only */
    looper a = { .s = s1, .ro = r1, .m = (int64_t)1 << 62 }, b = { .s = s2, .ro = r2, .m = (int64_t)1 << 62 };
    CHECK_OK(rlx_run_options_set_timeout(r2, 0)); /* none, over s2's 50 ms */
    pthread_t ta, tb;
    looper_start(&a, &ta);
    looper_start(&b, &tb);
    sleep_s(0.2);
    double t_a = rlx_now_seconds();
    CHECK_OK(rlx_run_options_set_terminate(r1, true));
    pthread_join(ta, NULL);
    sleep_s(0.1);
    double t_b = rlx_now_seconds();
    CHECK_OK(rlx_run_options_set_terminate(r2, true));
    pthread_join(tb, NULL);
    looper_end(&a);
    looper_end(&b);
    CHECK_MSG(a.st == RLX_ERR_CANCELLED && strstr(a.msg, "run cancelled by its run options"), "%s", a.msg);
    CHECK_MSG(b.st == RLX_ERR_CANCELLED && strstr(b.msg, "run cancelled by its run options"), "%s", b.msg);
    CHECK_MSG(a.back - t_a < STOP_BOUND_S, "stopped %.3f s after its flag", a.back - t_a);
    CHECK_MSG(b.back >= t_b, "the second run stopped before its own flag was set (%.3f s early)", t_b - b.back);
    fprintf(stderr, "run options: returned %.1f ms after the flag: %s\n", (a.back - t_a) * 1e3, a.msg);
    /* a set flag refuses runs given it, not the others */
    CHECK_FAILS(run_loop_with(s1, 2, r1), RLX_ERR_CANCELLED, "run options' terminate flag is set");
    CHECK_OK(run_loop_with(s1, 2, NULL));
    CHECK_OK(rlx_run_options_get_terminate(r1, &flag));
    CHECK(flag);
    CHECK_OK(rlx_run_options_set_terminate(r1, false));
    CHECK_OK(run_loop_with(s1, 4, r1));
    /* one session: a run with a flag in progress, a plain run waiting for
     * its turn; the flag stops the first, the second completes */
    looper c = { .s = s1, .ro = r1, .m = (int64_t)1 << 62 }, d = { .s = s1, .ro = NULL, .m = 9 };
    pthread_t tc, td;
    looper_start(&c, &tc);
    sleep_s(0.1);
    looper_start(&d, &td);
    sleep_s(0.1);
    CHECK_OK(rlx_run_options_set_terminate(r1, true));
    pthread_join(tc, NULL);
    pthread_join(td, NULL);
    looper_end(&c);
    looper_end(&d);
    CHECK_MSG(c.st == RLX_ERR_CANCELLED, "%s", c.msg);
    CHECK_MSG(d.st == RLX_OK, "%s", d.msg);
    CHECK_OK(rlx_run_options_set_terminate(r1, false));
    /* one session: a plain run in progress, a run with options waiting for
     * its turn: the flag stops the waiting one at once (it waited for the
     * other run's end before: a tester's finding), the first goes on */
    looper e = { .s = s1, .ro = NULL, .m = (int64_t)1 << 62 }, w = { .s = s1, .ro = r1, .m = 3 };
    pthread_t te, tw;
    looper_start(&e, &te);
    sleep_s(0.1);
    looper_start(&w, &tw);
    sleep_s(0.1);
    double t_w = rlx_now_seconds();
    CHECK_OK(rlx_run_options_set_terminate(r1, true));
    pthread_join(tw, NULL);
    CHECK_OK(rlx_session_terminate(s1)); /* now the long one */
    pthread_join(te, NULL);
    looper_end(&e);
    looper_end(&w);
    CHECK_MSG(w.st == RLX_ERR_CANCELLED && strstr(w.msg, "while it waited for its turn"), "%s", w.msg);
    CHECK_MSG(w.back - t_w < STOP_BOUND_S, "the waiting run stopped %.3f s after its flag", w.back - t_w);
    CHECK_MSG(e.st == RLX_ERR_CANCELLED && strstr(e.msg, "rlx_session_terminate"), "%s", e.msg);
    CHECK_MSG(e.back > w.back, "the run in progress ended before the waiting one was stopped");
    CHECK_OK(rlx_run_options_set_terminate(r1, false));
    /* one session, two runs given the same options, one in progress and one
     * waiting: the flag stops both, and the waiting one says it waited (it
     * took the session the first one handed over and said 'run refused',
     * as for a run given options whose flag was set before it began) */
    looper f, g;
    stop_in_progress_and_waiting(s1, r1, &f, &g);
    CHECK_MSG(f.st == RLX_ERR_CANCELLED && strstr(f.msg, "run cancelled by its run options"), "%s", f.msg);
    CHECK_MSG(g.st == RLX_ERR_CANCELLED && strstr(g.msg, "run cancelled by its run options") &&
                  strstr(g.msg, "while it waited for its turn") && !strstr(g.msg, "refused"),
              "%s", g.msg);
    CHECK_OK(rlx_run_options_set_terminate(r1, false));
    /* the session's sticky flag likewise: the run waiting says it waited */
    looper h, k;
    stop_in_progress_and_waiting(s1, NULL, &h, &k);
    CHECK_MSG(h.st == RLX_ERR_CANCELLED && strstr(h.msg, "rlx_session_set_terminate"), "%s", h.msg);
    CHECK_MSG(k.st == RLX_ERR_CANCELLED && strstr(k.msg, "rlx_session_set_terminate while it waited for its turn"),
              "%s", k.msg);
    CHECK_FAILS(run_loop_with(s1, 2, NULL), RLX_ERR_CANCELLED, "run refused: the session's terminate flag is set");
    CHECK_OK(rlx_session_set_terminate(s1, false));
    /* time limits: the options' own, none, or the session's (-1) */
    CHECK_OK(rlx_run_options_set_timeout(r1, 30));
    CHECK_FAILS(run_loop_with(s1, (int64_t)1 << 62, r1), RLX_ERR_CANCELLED, "(its run options' timeout_ms = 30)");
    CHECK_OK(rlx_run_options_set_terminate(r2, false));
    CHECK_OK(rlx_run_options_set_timeout(r2, -1));
    CHECK_FAILS(run_loop_with(s2, (int64_t)1 << 62, r2), RLX_ERR_CANCELLED, "(run.timeout_ms = 50)");
    /* run_into takes them too (refused at the start, before any plan) */
    CHECK_OK(rlx_run_options_set_terminate(r1, true));
    CHECK_FAILS(rlx_session_run_into_with(s1, r1, 0, NULL, NULL, (rlx_tensor *[]){ NULL }), RLX_ERR_CANCELLED,
                "terminate flag is set");
    /* bad arguments */
    CHECK_FAILS(rlx_run_options_set_timeout(r1, -2), RLX_ERR_INVALID_ARGUMENT, "time limit");
    CHECK_FAILS(rlx_run_options_set_timeout(r1, INT64_MAX), RLX_ERR_INVALID_ARGUMENT, "time limit");
    CHECK_FAILS(rlx_run_options_set_terminate(NULL, true), RLX_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_FAILS(rlx_run_options_get_terminate(r1, NULL), RLX_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_FAILS(rlx_run_options_create(NULL), RLX_ERR_INVALID_ARGUMENT, "NULL");
out:
    rlx_run_options_destroy(r1);
    rlx_run_options_destroy(r2);
    rlx_session_destroy(s1);
    rlx_session_destroy(s2);
    rlx_model_destroy(m);
}

static void test_timeout_loop(void) {
    rlx_model *m = loop_model(false);
    rlx_session *s = m ? session(m, "cpu", "100") : NULL;
    if (!s) goto out;
    double t0 = rlx_now_seconds();
    rlx_status st = run_loop(s, (int64_t)1 << 62);
    double took = rlx_now_seconds() - t0;
    CHECK_MSG(st == RLX_ERR_CANCELLED, "%s: %s", rlx_status_name(st), rlx_last_error());
    /* stopped at the start of an iteration or inside the body: both name it */
    CHECK_MSG(strstr(rlx_last_error(), "node 'loop' (Loop): iteration ") &&
                  strstr(rlx_last_error(), "run stopped by its time limit (run.timeout_ms = 100) after "),
              "%s", rlx_last_error());
    CHECK_MSG(took >= 0.1 && took < 0.1 + STOP_BOUND_S, "took %.3f s", took);
    fprintf(stderr, "timeout 100 ms: returned after %.1f ms: %s\n", took * 1e3, rlx_last_error());
    CHECK_OK(run_loop(s, 4)); /* well inside the limit */
    /* the limit changed at run time, then none */
    CHECK_OK(rlx_session_set_run_timeout(s, 30));
    CHECK_FAILS(run_loop(s, (int64_t)1 << 62), RLX_ERR_CANCELLED, "(run.timeout_ms = 30)");
    CHECK_OK(rlx_session_set_run_timeout(s, 0));
    CHECK_OK(run_loop(s, 6));
out:
    rlx_session_destroy(s);
    rlx_model_destroy(m);
}

static void test_timeout_while(void) {
    rlx_model *m = loop_model(true);
    rlx_session *s = m ? session(m, "cpu", "50") : NULL;
    if (!s) goto out;
    rlx_tensor *ta = test_tensor_random(RLX_DTYPE_F32, 1, k_d4, -1, 1);
    rlx_tensor **out = NULL;
    size_t n_out = 0;
    double t0 = rlx_now_seconds();
    rlx_status st = rlx_session_run(s, 1, (const char *[]){ "acc0" }, (const rlx_tensor *[]){ ta }, &out, &n_out);
    double took = rlx_now_seconds() - t0;
    CHECK(st == RLX_ERR_CANCELLED && out == NULL && n_out == 0);
    /* no trip count: the iteration alone */
    CHECK_MSG(strstr(rlx_last_error(), "node 'while' (Loop): iteration ") && !strstr(rlx_last_error(), " of ") &&
                  strstr(rlx_last_error(), "(run.timeout_ms = 50)"),
              "%s", rlx_last_error());
    CHECK_MSG(took < STOP_BOUND_S, "took %.3f s", took);
    rlx_tensor_destroy(ta);
out:
    rlx_session_destroy(s);
    rlx_model_destroy(m);
}

static void test_nested(void) {
    rlx_model *m = nested_model();
    rlx_session *s = m ? session(m, "cpu", NULL) : NULL;
    if (!s) goto out;
    int64_t nv = 3, mv = 4;
    rlx_tensor *tn = test_tensor_i64(0, NULL, &nv), *tm = test_tensor_i64(0, NULL, &mv);
    rlx_tensor *ta = test_tensor_random(RLX_DTYPE_F32, 1, k_d4, -1, 1);
    const char *names[] = { "N", "M", "acc0" };
    const rlx_tensor *ins[] = { tn, tm, ta };
    rlx_tensor **out = NULL;
    size_t n_out = 0;
    CHECK_OK(rlx_session_run(s, 3, names, ins, &out, &n_out));
    if (out) {
        for (int j = 0; j < 4; j++) CHECK(((float *)out[0]->data)[j] == plus_ones(((float *)ta->data)[j], 12));
        test_free_outputs(out, (int)n_out);
    }
    /* the inner Loop runs away: the message names both Loops */
    *(int64_t *)tm->data = (int64_t)1 << 62;
    stopper t = { .s = s, .delay_s = 0.1 };
    pthread_t th;
    CHECK(pthread_create(&th, NULL, stop_later, &t) == 0);
    rlx_status st = rlx_session_run(s, 3, names, ins, &out, &n_out);
    double back = rlx_now_seconds();
    pthread_join(th, NULL);
    CHECK(st == RLX_ERR_CANCELLED);
    CHECK_MSG(strstr(rlx_last_error(), "node 'outer' (Loop): iteration 0 of 3: in its subgraph: node 'inner' (Loop): iteration ") &&
                  strstr(rlx_last_error(), "rlx_session_terminate"),
              "%s", rlx_last_error());
    CHECK_MSG(back - t.called_at < STOP_BOUND_S, "stopped %.3f s after the call", back - t.called_at);
    *(int64_t *)tm->data = 2;
    CHECK_OK(rlx_session_run(s, 3, names, ins, &out, &n_out));
    if (out) {
        for (int j = 0; j < 4; j++) CHECK(((float *)out[0]->data)[j] == plus_ones(((float *)ta->data)[j], 6));
        test_free_outputs(out, (int)n_out);
    }
    rlx_tensor_destroy(tn);
    rlx_tensor_destroy(tm);
    rlx_tensor_destroy(ta);
out:
    rlx_session_destroy(s);
    rlx_model_destroy(m);
}

static void test_scan(void) {
    rlx_model *m = scan_model();
    rlx_session *s = m ? session(m, "cpu", "50") : NULL;
    if (!s) goto out;
    const int64_t d1[1] = { 1 }, dx[2] = { 400000, 1 }; /* 400,000 body runs: far more than 50 ms */
    rlx_tensor *s0 = test_tensor_random(RLX_DTYPE_F32, 1, d1, -1, 1);
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, dx, -1, 1);
    rlx_tensor **out = NULL;
    size_t n_out = 0;
    CHECK_FAILS(rlx_session_run(s, 2, (const char *[]){ "s0", "x" }, (const rlx_tensor *[]){ s0, x }, &out, &n_out),
                RLX_ERR_CANCELLED, "run stopped by its time limit");
    CHECK_MSG(strstr(rlx_last_error(), "node 'scan' (Scan): iteration ") && strstr(rlx_last_error(), " of 400000: "), "%s",
              rlx_last_error());
    /* a short sequence still runs: sum over 8 steps */
    rlx_tensor *x8 = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 8, 1 }, -1, 1);
    CHECK_OK(rlx_session_run(s, 2, (const char *[]){ "s0", "x" }, (const rlx_tensor *[]){ s0, x8 }, &out, &n_out));
    if (out) {
        float want = ((float *)s0->data)[0];
        for (int i = 0; i < 8; i++) want += ((float *)x8->data)[i];
        CHECK(((float *)out[0]->data)[0] == want); /* the same order of f32 additions */
        test_free_outputs(out, (int)n_out);
    }
    rlx_tensor_destroy(s0);
    rlx_tensor_destroy(x);
    rlx_tensor_destroy(x8);
out:
    rlx_session_destroy(s);
    rlx_model_destroy(m);
}

/* A planned (not eager) run stops between its steps; on a GPU, between
 * its segments (gpu.disable=Relu puts a CPU step after each MatMul; no
 * fusion takes the Relus into the MatMuls). 40 products of 384^3 (about 2.4
 * G multiply-adds): well past the 1 ms limit and the coarse clock's tick on
 * any CPU (192^3 ones finished inside one tick on a fresh clone's run). */
static void test_planned(const char *device) {
    rlx_model *m = chain_model(40, 384);
    rlx_options *o = NULL;
    rlx_session *s = NULL;
    CHECK_OK(rlx_options_create(&o));
    CHECK_OK(rlx_options_set(o, "passes.disable", "fuse_activation"));
    if (strcmp(device, "gpu") == 0) CHECK_OK(rlx_options_set(o, "gpu.disable", "Relu"));
    if (m) CHECK_OK(rlx_session_create_with_options(m, &(rlx_session_options){ .device = device }, o, &s));
    rlx_options_destroy(o);
    if (!s) goto out;
    const int64_t d[2] = { 384, 384 };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, d, -1, 1);
    const char *names[] = { "x" };
    const rlx_tensor *ins[] = { x };
    CHECK_OK(rlx_session_prepare(s, 1, names, ins)); /* compiled outside the limit */
    CHECK(strstr(rlx_session_dispatch_report(s), "eagerly") == NULL);
    rlx_tensor **out = NULL, **first = NULL;
    size_t n_out = 0;
    CHECK_OK(rlx_session_run(s, 1, names, ins, &first, &n_out)); /* the outputs of an unstopped run */
    CHECK_OK(rlx_session_set_run_timeout(s, 1));
    double t0 = rlx_now_seconds();
    rlx_status st = rlx_session_run(s, 1, names, ins, &out, &n_out);
    double took = rlx_now_seconds() - t0;
    CHECK_MSG(st == RLX_ERR_CANCELLED, "%s: %s", rlx_status_name(st), rlx_last_error());
    CHECK_MSG(strstr(rlx_last_error(), " step ") && strstr(rlx_last_error(), " of 80 (") &&
                  strstr(rlx_last_error(), "(run.timeout_ms = 1)"),
              "%s", rlx_last_error());
    fprintf(stderr, "%s plan, timeout 1 ms: returned after %.1f ms: %s\n", device, took * 1e3, rlx_last_error());
    CHECK_OK(rlx_session_set_run_timeout(s, 0));
    CHECK_OK(rlx_session_run(s, 1, names, ins, &out, &n_out));
    /* the stopped run left nothing behind: the same kernels give the same bits */
    if (out && first) {
        CHECK(out[0]->nbytes == first[0]->nbytes && !memcmp(out[0]->data, first[0]->data, out[0]->nbytes));
        double sum = 0;
        for (size_t i = 0; i < rlx_tensor_numel(first[0]); i++) sum += fabs(((float *)first[0]->data)[i]);
        CHECK_MSG(sum > 1e-3 * (double)rlx_tensor_numel(first[0]) && isfinite(sum), "mean |y| %g", sum / (192.0 * 192.0));
        fprintf(stderr, "%s plan: mean |y| %g, the same bits after the stopped run\n", device, sum / (192.0 * 192.0));
    }
    if (out) test_free_outputs(out, (int)n_out);
    if (first) test_free_outputs(first, 1);
    rlx_tensor_destroy(x);
out:
    rlx_session_destroy(s);
    rlx_model_destroy(m);
}

/* Constant folding while a plan compiles stops too: y = x + k, k a chain of
 * `count` Adds of constants (0 + 1 + 1 + ...), folded node by node. */
static void test_fold(void) {
    const int count = 20000; /* import and passes alone outlast the limit, even on a clock that lags under load */
    Onnx__GraphProto *g = graph_new("fold");
    const int64_t d[1] = { 64 };
    graph_input(g, vi_new("x", F32, 1, d, NULL));
    float zero[64] = { 0 }, one = 1.0f;
    graph_init(g, tensor_floats("k0", 1, d, zero, 64));
    graph_init(g, tensor_floats("one", 0, NULL, &one, 1));
    char ins[64], out[32];
    for (int i = 0; i < count; i++) {
        snprintf(ins, sizeof ins, "k%d,one", i);
        snprintf(out, sizeof out, "k%d", i + 1);
        graph_node(g, node_new("Add", NULL, ins, out));
    }
    snprintf(ins, sizeof ins, "x,k%d", count);
    graph_node(g, node_new("Add", "final", ins, "y"));
    graph_output(g, vi_new("y", F32, 1, d, NULL));
    rlx_model *m = load(model_new(17, g));
    rlx_session *s = m ? session(m, "cpu", "1") : NULL;
    if (!s) goto out;
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 1, d, -1, 1);
    rlx_tensor **y = NULL;
    size_t n_out = 0;
    double t0 = rlx_now_seconds();
    rlx_status st = rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, &y, &n_out);
    double took = rlx_now_seconds() - t0;
    CHECK_MSG(st == RLX_ERR_CANCELLED && strstr(rlx_last_error(), "compiling a plan (constant folding): before node 'Add_") &&
                  strstr(rlx_last_error(), "(run.timeout_ms = 1)"),
              "%s: %s", rlx_status_name(st), rlx_last_error());
    fprintf(stderr, "folding %d Adds, timeout 1 ms: returned after %.1f ms: %s\n", count, took * 1e3, rlx_last_error());
    CHECK_OK(rlx_session_set_run_timeout(s, 0)); /* the plan compiles again, whole */
    CHECK_OK(rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, &y, &n_out));
    if (y) {
        for (int i = 0; i < 64; i++) CHECK(((float *)y[0]->data)[i] == ((float *)x->data)[i] + (float)count);
        test_free_outputs(y, (int)n_out);
    }
    rlx_tensor_destroy(x);
out:
    rlx_session_destroy(s);
    rlx_model_destroy(m);
}

int main(void) {
    test_seed(test_seed_from_env());
    test_terminate_loop();
    test_run_options();
    test_timeout_loop();
    test_timeout_while();
    test_nested();
    test_scan();
    test_fold();
    test_planned("cpu");
    if (test_have_gpu()) test_planned("gpu");
    TEST_MAIN_END();
}
