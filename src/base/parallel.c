/* The worker pool behind rlx_parallel_for: N-1 workers plus the caller take
 * chunks from a shared counter; a generation number wakes the workers for
 * each job. One job at a time (a mutex serialises concurrent callers). */
#define _POSIX_C_SOURCE 200809L
#include "base/parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_THREADS 256

typedef struct pool {
    pthread_mutex_t lock;      /* guards the fields below and the job slot */
    pthread_cond_t wake, done;
    pthread_mutex_t job_lock;  /* one job at a time */
    unsigned long generation;
    int n_threads;             /* including the caller */
    int busy;                  /* workers still in the current job */
    /* the current job */
    rlx_parallel_fn fn;
    void *ctx;
    size_t n, chunk;
    atomic_size_t next;
} pool;

static pool g_pool;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Thread_local int t_in_region;

static void run_chunks(pool *p) {
    for (;;) {
        size_t b = atomic_fetch_add(&p->next, p->chunk);
        if (b >= p->n) break;
        size_t e = b + p->chunk < p->n ? b + p->chunk : p->n;
        p->fn(p->ctx, b, e);
    }
}

static void *worker(void *arg) {
    pool *p = arg;
    unsigned long seen = 0;
    t_in_region = 1;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (p->generation == seen) pthread_cond_wait(&p->wake, &p->lock);
        seen = p->generation;
        pthread_mutex_unlock(&p->lock);
        run_chunks(p);
        pthread_mutex_lock(&p->lock);
        if (--p->busy == 0) pthread_cond_signal(&p->done);
    }
    return NULL;
}

static void pool_init(void) {
    pool *p = &g_pool;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int n = cores > 0 ? (int)cores : 1;
    const char *env = getenv("RLX_NUM_THREADS");
    if (env && atoi(env) > 0) n = atoi(env);
    if (n > MAX_THREADS) n = MAX_THREADS;
    pthread_mutex_init(&p->lock, NULL);
    pthread_mutex_init(&p->job_lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    p->n_threads = 1;
    for (int i = 1; i < n; i++) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, worker, p) == 0) p->n_threads++;
        pthread_attr_destroy(&attr);
    }
}

int rlx_parallel_threads(void) {
    pthread_once(&g_once, pool_init);
    return g_pool.n_threads;
}

void rlx_parallel_for(size_t n, size_t grain, rlx_parallel_fn fn, void *ctx) {
    if (n == 0) return;
    if (grain == 0) grain = 1;
    int threads = rlx_parallel_threads();
    if (threads == 1 || n <= grain || t_in_region) {
        fn(ctx, 0, n);
        return;
    }
    pool *p = &g_pool;
    pthread_mutex_lock(&p->job_lock);
    /* about 4 chunks per thread for balance, never below the grain */
    size_t chunk = n / ((size_t)threads * 4);
    if (chunk < grain) chunk = grain;
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->chunk = chunk;
    atomic_store(&p->next, 0);
    p->busy = p->n_threads - 1;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    t_in_region = 1;
    run_chunks(p);
    t_in_region = 0;
    pthread_mutex_lock(&p->lock);
    while (p->busy > 0) pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&p->job_lock);
}
