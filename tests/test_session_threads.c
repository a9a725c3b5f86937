/* cpu.threads is per session (issue 14): sessions share the process's
 * worker pool, and each session's runs use at most its own count.
 *
 *  - the pool: under rlx_parallel_set_limit(2) a parallel loop on a pool of
 *    4 runs on at most 2 distinct threads, and rlx_parallel_threads()
 *    answers 2 on the caller and on the workers that run its chunks;
 *  - sessions of 4 and then 1 thread are both created (the second asked for
 *    fewer than the pool has: this used to fail), a later one of 6 grows
 *    the pool to 6 (the documented answer to "more than the pool has");
 *  - their interleaved runs of a MatMul + Relu give byte-identical outputs,
 *    which match a double-precision product (relative 1e-4 of the largest
 *    magnitude), so that agreement is not agreement on garbage;
 *  - the 1-thread session's runs hand no loop to the workers
 *    (rlx_parallel_jobs), the 4-thread session's runs do;
 *  - the two sessions run at once on two threads, same bytes (also under
 *    ThreadSanitizer: `make test-tsan`).
 * tests/python/test_cpu_threads.py compares in-process sessions with
 * one-session processes byte for byte. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"

#include "base/parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { M = 192, K = 384, N = 384 };

/* ------------------------------------------------------------ the pool */

typedef struct seen_threads {
    pthread_mutex_t lock;
    pthread_t ids[64];
    int n;
    atomic_int bad_count; /* rlx_parallel_threads() differed from `want` inside a chunk */
    int want;
} seen_threads;

static void sleep_us(long us) {
    struct timespec t = { us / 1000000, (us % 1000000) * 1000 };
    nanosleep(&t, NULL);
}

static void record_body(void *ctx, size_t b, size_t e) {
    seen_threads *s = ctx;
    if (rlx_parallel_threads() != s->want) atomic_fetch_add(&s->bad_count, 1);
    pthread_t me = pthread_self();
    pthread_mutex_lock(&s->lock);
    bool found = false;
    for (int i = 0; i < s->n; i++) found |= pthread_equal(s->ids[i], me) != 0;
    if (!found && s->n < 64) s->ids[s->n++] = me;
    pthread_mutex_unlock(&s->lock);
    sleep_us(200 * (long)(e - b)); /* long enough for every allowed worker to join */
}

static int distinct_threads(int limit, int want) {
    seen_threads s = { .n = 0, .want = want };
    pthread_mutex_init(&s.lock, NULL);
    atomic_init(&s.bad_count, 0);
    int prev = rlx_parallel_set_limit(limit);
    CHECK(rlx_parallel_threads() == want);
    rlx_parallel_for(64, 1, record_body, &s);
    rlx_parallel_set_limit(prev);
    CHECK_MSG(atomic_load(&s.bad_count) == 0, "rlx_parallel_threads() inside the loop was not %d", want);
    pthread_mutex_destroy(&s.lock);
    return s.n;
}

/* ------------------------------------------------------------ sessions */

static rlx_model *matmul_relu(const rlx_tensor *w) {
    rlx_model *m = NULL;
    CHECK_OK(rlx_model_create(13, &m));
    if (!m) return NULL;
    CHECK_OK(rlx_model_add_input(m, "x", RLX_DTYPE_F32, 2, (const int64_t[]){ M, K }, NULL));
    CHECK_OK(rlx_model_add_initializer(m, "w", w));
    CHECK_OK(rlx_model_add_node(m, "MatMul", "mm", 2, (const char *[]){ "x", "w" }, 1, (const char *[]){ "h" }, 0,
                                NULL));
    CHECK_OK(rlx_model_add_node(m, "Relu", "relu", 1, (const char *[]){ "h" }, 1, (const char *[]){ "y" }, 0, NULL));
    CHECK_OK(rlx_model_add_output(m, "y"));
    CHECK_OK(rlx_model_finish(m));
    return m;
}

static rlx_session *session_with(const rlx_model *m, const char *threads) {
    rlx_options *o = NULL;
    rlx_session *s = NULL;
    CHECK_OK(rlx_options_create(&o));
    CHECK_OK(rlx_options_set(o, "cpu.threads", threads));
    CHECK_OK(rlx_session_create_with_options(m, NULL, o, &s));
    rlx_options_destroy(o);
    return s;
}

static rlx_tensor *run1(rlx_session *s, const rlx_tensor *x) {
    rlx_tensor **outs = NULL;
    size_t n = 0;
    const char *names[] = { "x" };
    if (rlx_session_run(s, 1, names, &x, &outs, &n) != RLX_OK) {
        CHECK_MSG(0, "run failed: %s", rlx_last_error());
        return NULL;
    }
    rlx_tensor *y = outs[0];
    for (size_t i = 1; i < n; i++) rlx_tensor_destroy(outs[i]);
    free(outs);
    return y;
}

/* One session's runs on a thread of its own (sessions of 4 and 1 threads
 * run at once, as onnxruntime users run one session per request thread). */
typedef struct runner {
    rlx_session *s;
    const rlx_tensor *x, *want;
    int bad;
} runner;

static void *run_thread(void *arg) {
    runner *r = arg;
    for (int i = 0; i < 3; i++) {
        rlx_tensor *y = run1(r->s, r->x);
        r->bad += !y || y->nbytes != r->want->nbytes || memcmp(y->data, r->want->data, y->nbytes) != 0;
        rlx_tensor_destroy(y);
    }
    return NULL;
}

int main(void) {
    test_seed_from_env();
    rlx_tensor *w = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ K, N }, -1, 1);
    rlx_tensor *x = test_tensor_random(RLX_DTYPE_F32, 2, (const int64_t[]){ M, K }, -1, 1);
    rlx_model *m = matmul_relu(w);
    if (!m) TEST_MAIN_END();

    /* a session of 4, then one of 1: both are created */
    rlx_session *s4 = session_with(m, "4"), *s1 = session_with(m, "1");
    CHECK(s4 && s1);
    CHECK_MSG(rlx_parallel_threads() == 4, "pool of %d threads, expected 4", rlx_parallel_threads());

    /* the pool honours a limit, on the caller and in the workers */
    CHECK(distinct_threads(0, 4) <= 4);
    int two = distinct_threads(2, 2), one = distinct_threads(1, 1);
    CHECK_MSG(two >= 1 && two <= 2, "limit 2: %d distinct threads ran chunks", two);
    CHECK_MSG(one == 1, "limit 1: %d distinct threads ran chunks", one);

    rlx_tensor *y4 = s4 ? run1(s4, x) : NULL, *y1 = s1 ? run1(s1, x) : NULL;

    /* a session asking for more than the pool has grows it */
    rlx_session *s6 = session_with(m, "6");
    CHECK_MSG(rlx_parallel_threads() == 6, "after a session of 6: pool of %d threads", rlx_parallel_threads());
    rlx_tensor *y6 = s6 ? run1(s6, x) : NULL, *y1b = s1 ? run1(s1, x) : NULL, *y4b = s4 ? run1(s4, x) : NULL;

    rlx_tensor *ys[] = { y1, y6, y1b, y4b };
    for (int i = 0; i < 4 && y4; i++)
        CHECK_MSG(ys[i] && ys[i]->nbytes == y4->nbytes && memcmp(ys[i]->data, y4->data, y4->nbytes) == 0,
                  "run %d differs from the 4-thread session's bytes", i);
    if (y4) { /* against a double product: relative 1e-4 of the largest magnitude */
        const float *a = x->data, *b = w->data, *got = y4->data;
        double worst = 0, big = 1e-30;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double acc = 0;
                for (int k = 0; k < K; k++) acc += (double)a[i * K + k] * b[k * N + j];
                acc = acc > 0 ? acc : 0;
                double d = acc - got[i * N + j];
                worst = d < 0 ? (-d > worst ? -d : worst) : (d > worst ? d : worst);
                big = acc > big ? acc : big;
            }
        CHECK_MSG(worst <= 1e-4 * big, "max error %g of the largest %g", worst, big);
    }

    /* the 1-thread session's runs hand no loop to the workers; the 4-thread
     * session's do */
    if (s1 && s4) {
        uint64_t j0 = rlx_parallel_jobs();
        for (int i = 0; i < 3; i++) rlx_tensor_destroy(run1(s1, x));
        uint64_t j1 = rlx_parallel_jobs();
        CHECK_MSG(j1 == j0, "the 1-thread session's runs handed %llu loops to workers", (unsigned long long)(j1 - j0));
        for (int i = 0; i < 3; i++) rlx_tensor_destroy(run1(s4, x));
        CHECK_MSG(rlx_parallel_jobs() > j1, "the 4-thread session's runs handed no loop to workers");
    }

    /* both sessions at once, each on its own thread */
    if (s1 && s4 && y4) {
        runner r[2] = { { s4, x, y4, 0 }, { s1, x, y4, 0 } };
        pthread_t t[2];
        bool started[2];
        for (int i = 0; i < 2; i++) started[i] = pthread_create(&t[i], NULL, run_thread, &r[i]) == 0;
        for (int i = 0; i < 2; i++)
            if (started[i]) pthread_join(t[i], NULL);
        CHECK_MSG(started[0] && started[1] && r[0].bad == 0 && r[1].bad == 0,
                  "concurrent runs: %d and %d outputs differ", r[0].bad, r[1].bad);
    }

    rlx_tensor *all[] = { y4, y1, y6, y1b, y4b };
    for (int i = 0; i < 5; i++) rlx_tensor_destroy(all[i]);
    rlx_session_destroy(s4);
    rlx_session_destroy(s1);
    rlx_session_destroy(s6);
    rlx_model_destroy(m);
    rlx_tensor_destroy(w);
    rlx_tensor_destroy(x);
    TEST_MAIN_END();
}
