#define _POSIX_C_SOURCE 200809L
/* Sessions of one process share the GPU device: one instance, adapter and
 * device per device string, reference-counted, with one pipeline cache.
 *  - two live sessions hold one device; it stays open, idle, after the
 *    last of them (gpu.keep_device=0: it closes);
 *  - a second session compiling the same model creates no pipeline;
 *  - sessions interleaved, one destroyed while the other runs on, and two
 *    threads running their own sessions at once all give the CPU's results
 *    (rtol 1e-5, atol 1e-6: GPU and CPU kernels round differently);
 *  - a lost device is not handed out again: the next session opens a
 *    fresh one (the loss is flagged as the device-lost callback would:
 *    wgpu-native 0.32 does not call it when an idle device is destroyed);
 *  - the cost: creating, compiling, running and destroying a session,
 *    the first (which opens the device) and the next ones (printed). */
#include <pthread.h>

#include "test.h"

#include "backend/backend.h"
#include "base/platform.h"
#include "plan/plan.h"
#include "runtime/session.h"
#ifdef RLX_HAVE_WEBGPU
#include "backend/webgpu/webgpu_device.h"
#endif

/* y = tanh(x * w + b) with x [batch, 16], w [16, 8]: MatMul, Add, Tanh. */
static rlx_model *small_model(float scale) {
    rlx_model *m = NULL;
    if (rlx_model_create(13, &m)) return NULL;
    rlx_model_add_input(m, "x", RLX_DTYPE_F32, 2, (const int64_t[]){ -1, 16 }, (const char *[]){ "batch", NULL });
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 16, 8 }, -scale, scale);
    rlx_tensor *b = test_tensor_random(RLX_DTYPE_F32, 1, (const int64_t[]){ 8 }, -1, 1);
    rlx_model_add_initializer(m, "w", w);
    rlx_model_add_initializer(m, "b", b);
    rlx_tensor_destroy(w);
    rlx_tensor_destroy(b);
    rlx_model_add_node(m, "MatMul", "mm", 2, (const char *[]){ "x", "w" }, 1, (const char *[]){ "h" }, 0, NULL);
    rlx_model_add_node(m, "Add", "add", 2, (const char *[]){ "h", "b" }, 1, (const char *[]){ "z" }, 0, NULL);
    rlx_model_add_node(m, "Tanh", "t", 1, (const char *[]){ "z" }, 1, (const char *[]){ "y" }, 0, NULL);
    rlx_model_add_output(m, "y");
    if (rlx_model_finish(m)) {
        rlx_model_destroy(m);
        return NULL;
    }
    return m;
}

static rlx_tensor *run1(rlx_session *s, const rlx_tensor *x) {
    rlx_tensor **out = NULL;
    size_t n = 0;
    rlx_status st = rlx_session_run(s, 1, (const char *[]){ "x" }, (const rlx_tensor *[]){ x }, &out, &n);
    if (st) {
        fprintf(stderr, "run: %s\n", rlx_last_error());
        return NULL;
    }
    rlx_tensor *y = out[0];
    for (size_t i = 1; i < n; i++) rlx_tensor_destroy(out[i]);
    free(out);
    return y;
}

/* The CPU's answer for model m and input x. */
static rlx_tensor *cpu_ref(const rlx_model *m, const rlx_tensor *x) {
    rlx_session *s = NULL;
    if (rlx_session_create(m, NULL, &s)) return NULL;
    rlx_tensor *y = run1(s, x);
    rlx_session_destroy(s);
    return y;
}

static bool close_to(const rlx_tensor *got, const rlx_tensor *want) {
    return got && want && test_allclose(got, want, 1e-5, 1e-6);
}

static void test_sharing(rlx_model *m1, rlx_model *m2) {
    rlx_session_options o = { .device = "gpu" };
    rlx_session *a = NULL, *b = NULL;
    CHECK_OK(rlx_session_create(m1, &o, &a));
    CHECK_OK(rlx_session_create(m2, &o, &b));
#ifdef RLX_HAVE_WEBGPU
    CHECK_MSG(wg_device_open_count() == 1, "two sessions hold %zu devices (want 1)", wg_device_open_count());
#endif
    rlx_tensor *x3 = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 3, 16 }, -1, 1);
    rlx_tensor *x5 = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 5, 16 }, -1, 1);
    rlx_tensor *r13 = cpu_ref(m1, x3), *r15 = cpu_ref(m1, x5), *r23 = cpu_ref(m2, x3);
    /* interleaved: a, b, a at another shape, b again */
    for (int round = 0; round < 2; round++) {
        rlx_tensor *y;
        y = run1(a, x3);
        CHECK_MSG(close_to(y, r13), "session a, [3,16], round %d", round);
        rlx_tensor_destroy(y);
        y = run1(b, x3);
        CHECK_MSG(close_to(y, r23), "session b, [3,16], round %d", round);
        rlx_tensor_destroy(y);
        y = run1(a, x5);
        CHECK_MSG(close_to(y, r15), "session a, [5,16], round %d", round);
        rlx_tensor_destroy(y);
    }
    /* a third session of m1 compiles [3,16] again: no new pipeline */
#ifdef RLX_HAVE_WEBGPU
    size_t before = 0;
    for (int k = 0; k < 2; k++) {
        rlx_session *c = NULL;
        CHECK_OK(rlx_session_create(m1, &o, &c));
        if (!c) break;
        rlx_tensor *y = run1(c, x3);
        CHECK(close_to(y, r13));
        rlx_tensor_destroy(y);
        size_t now = wg_device_pipelines_created("gpu");
        if (k == 1) CHECK_MSG(now == before, "a repeated compile created %zu pipelines", now - before);
        before = now;
        rlx_session_destroy(c);
    }
#endif
    /* destroy a: b runs on */
    rlx_session_destroy(a);
    rlx_tensor *y = run1(b, x3);
    CHECK_MSG(close_to(y, r23), "session b after a was destroyed");
    rlx_tensor_destroy(y);
    rlx_session_destroy(b);
#ifdef RLX_HAVE_WEBGPU
    CHECK_MSG(wg_device_open_count() == 1, "%zu devices open after the sessions (want 1, idle)",
              wg_device_open_count());
    /* with gpu.keep_device=0 the last session closes it */
    rlx_options *closing = test_options("gpu.keep_device=0", NULL);
    CHECK_OK(rlx_session_create_with_options(m1, &o, closing, &a));
    rlx_options_destroy(closing);
    rlx_session_destroy(a);
    CHECK_MSG(wg_device_open_count() == 0, "gpu.keep_device=0: %zu devices left open", wg_device_open_count());
#endif
    rlx_tensor_destroy(x3);
    rlx_tensor_destroy(x5);
    rlx_tensor_destroy(r13);
    rlx_tensor_destroy(r15);
    rlx_tensor_destroy(r23);
}

/* Steady-state runs reuse commands recorded during the previous run
 * (RLX_GPU_PRERECORD): every run must still see its own inputs. Fresh
 * random inputs each run, against the CPU; also with the Add on the CPU,
 * which splits the pass into two GPU segments around a CPU step. */
static void test_fresh_inputs(rlx_model *m1) {
    for (int split = 0; split < 2; split++) {
        rlx_options *opts = test_options(split ? "gpu.disable=Add" : NULL, NULL);
        rlx_session_options o = { .device = "gpu" };
        rlx_session *s = NULL;
        CHECK_OK(rlx_session_create_with_options(m1, &o, opts, &s));
        rlx_options_destroy(opts);
        for (int i = 0; s && i < 6; i++) {
            rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 4, 16 }, -1, 1);
            rlx_tensor *ref = cpu_ref(m1, x), *y = run1(s, x);
            CHECK_MSG(close_to(y, ref), "run %d with fresh inputs%s: differs from the CPU", i,
                      split ? " (Add on the CPU)" : "");
            rlx_tensor_destroy(x);
            rlx_tensor_destroy(ref);
            rlx_tensor_destroy(y);
        }
        rlx_session_destroy(s);
    }
}

/* Two threads, each with its own session on the shared device. */
typedef struct worker {
    const rlx_model *m;
    const rlx_tensor *x, *ref;
    int iters, bad;
} worker;

static void *worker_main(void *arg) {
    worker *w = arg;
    rlx_session_options o = { .device = "gpu" };
    rlx_session *s = NULL;
    if (rlx_session_create(w->m, &o, &s)) {
        w->bad = w->iters;
        return NULL;
    }
    for (int i = 0; i < w->iters; i++) {
        rlx_tensor *y = run1(s, w->x);
        if (!close_to(y, w->ref)) w->bad++;
        rlx_tensor_destroy(y);
    }
    rlx_session_destroy(s);
    return NULL;
}

static void test_threads(rlx_model *m1, rlx_model *m2) {
    /* a session held open by the main thread, so that both workers share
     * its device (and neither opens and closes its own) */
    rlx_session *keep = NULL;
    rlx_session_options o = { .device = "gpu" };
    CHECK_OK(rlx_session_create(m1, &o, &keep));
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 4, 16 }, -1, 1);
    worker w[2] = { { m1, x, cpu_ref(m1, x), 12, 0 }, { m2, x, cpu_ref(m2, x), 12, 0 } };
    pthread_t t[2];
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&t[i], NULL, worker_main, &w[i]) == 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++) CHECK_MSG(w[i].bad == 0, "thread %d: %d wrong runs of %d", i, w[i].bad, w[i].iters);
    for (int i = 0; i < 2; i++) rlx_tensor_destroy((rlx_tensor *)w[i].ref);
    rlx_tensor_destroy(x);
    rlx_session_destroy(keep);
}

#ifdef RLX_HAVE_WEBGPU
/* A lost device leaves the registry: a new session gets a fresh device. */
static void test_lost(rlx_model *m1) {
    rlx_session_options o = { .device = "gpu" };
    rlx_backend *be = NULL;
    CHECK_OK(rlx_backend_webgpu_create("gpu", &o, NULL, &be));
    if (!be) return;
    wg_shared *old = ((wg_backend *)be)->sh;
    wgpuDeviceDestroy(((wg_backend *)be)->dev);
    old->lost = true; /* what the device-lost callback does */
    rlx_session *s = NULL;
    CHECK_OK(rlx_session_create(m1, &o, &s));
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 2, 16 }, -1, 1);
    rlx_tensor *ref = cpu_ref(m1, x);
    rlx_tensor *y = s ? run1(s, x) : NULL;
    CHECK_MSG(close_to(y, ref), "a session after a device loss");
    CHECK_MSG(wg_device_open_count() == 1, "%zu devices registered (want the fresh one only)", wg_device_open_count());
    rlx_tensor_destroy(y);
    rlx_tensor_destroy(ref);
    rlx_tensor_destroy(x);
    rlx_session_destroy(s);
    be->destroy(be); /* closes the lost device: it left the registry */
    CHECK_MSG(wg_device_open_count() == 1, "%zu devices registered", wg_device_open_count());
}
#endif

/* What a session costs: create, compile, run, destroy. */
static void measure(rlx_model *m1) {
    rlx_session_options o = { .device = "gpu" };
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ 2, 16 }, -1, 1);
    enum { N = 20 };
    double t_first = 0, t_rest = 0;
    for (int i = 0; i <= N; i++) {
        double t0 = rlx_now_seconds();
        rlx_session *s = NULL;
        if (rlx_session_create(m1, &o, &s)) break;
        rlx_tensor *y = run1(s, x);
        rlx_tensor_destroy(y);
        rlx_session_destroy(s);
        double dt = rlx_now_seconds() - t0;
        if (i == 0) t_first = dt;
        else t_rest += dt;
    }
    fprintf(stderr, "session create + compile + run + destroy: first %.1f ms (opens the device), then %.1f ms "
                    "each (%d sessions, one after another, reusing the idle device)\n",
            t_first * 1e3, t_rest * 1e3 / N, N);
    rlx_tensor_destroy(x);
}

int main(void) {
    test_seed(test_seed_from_env());
    if (!test_have_gpu()) {
        fprintf(stderr, "test_webgpu_share: skipped: no GPU adapter (lavapipe counts); set RLX_TEST_REQUIRE_GPU=1 "
                        "to make this a failure\n");
        return 0;
    }
    rlx_model *m1 = small_model(1.0f), *m2 = small_model(0.5f);
    CHECK(m1 && m2);
    if (m1 && m2) {
        measure(m1);
        test_sharing(m1, m2);
        test_fresh_inputs(m1);
        test_threads(m1, m2);
#ifdef RLX_HAVE_WEBGPU
        test_lost(m1);
#endif
    }
    rlx_model_destroy(m1);
    rlx_model_destroy(m2);
    TEST_MAIN_END();
}
