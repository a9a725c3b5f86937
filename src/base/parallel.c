/* The worker pool behind rlx_parallel_for: N-1 workers plus the caller take
 * chunks from a shared counter; a generation number announces each job.
 * One job at a time (a mutex serialises concurrent callers).
 *
 * A job needs at most as many threads as it has chunks: the caller sets
 * how many workers may join (`team`, packed with the count that joined in
 * one atomic word), the first ones to see the job join it, the others go
 * back to waiting without touching it. When every chunk is claimed, the
 * caller closes the team (no more may join) and waits only for the
 * workers that joined before that, which count themselves `finished`
 * without a lock (one takes the lock to wake the caller if it sleeps).
 * So a region costs what its chunks cost on the threads that are there:
 * a worker still asleep, waking or descheduled when the caller and the
 * others have taken every chunk no longer holds the region up. Before,
 * the caller waited for every worker it had allowed to join: with 16
 * threads on the 16-core host, back-to-back empty regions took 419 us
 * (median; 7 us with the workers spinning), as each waited for 15
 * workers to wake one after another through the pool's mutex.
 *
 * Spinning: after a job, workers watch the generation for up to
 * cpu.pool_spin_us microseconds (RLX_POOL_SPIN_US; default 50 while the pool has at most one
 * thread per core, else 0) before they sleep on the condition variable,
 * and the caller watches the count of busy workers likewise. A model runs
 * many short parallel regions back to back and a sleeping thread takes
 * microseconds to wake: on the 2-core development VM, 9 us per empty
 * region with 2 threads asleep, 0.6-1 us spinning; MobileNetV2 9.4 -> 8.3
 * ms and ShuffleNet 8.4 -> 6.7 ms per forward pass at 2 threads. On a
 * machine busy with other work a spinning thread can hold the core that the
 * thread it waits for needs (seen there: up to 105 us per region):
 * cpu.pool_spin_us=0 turns it off. Only as many sleeping workers as the
 * job can use are woken.
 *
 * Sessions share the pool but each runs on at most its own cpu.threads:
 * the session sets a per-thread limit around its work
 * (rlx_parallel_set_limit), rlx_parallel_threads() answers the limit, so
 * kernels split their work as they would in a pool of that size, and a job
 * lets at most limit - 1 workers join; a worker that joins takes the job's
 * limit for the kernels it runs. The pool grows (never shrinks) to the
 * largest count a session asked for. */
#define _POSIX_C_SOURCE 200809L
#include "base/parallel.h"

#include "base/log.h"
#include "base/options.h"
#include "base/status.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS RLX_PARALLEL_MAX_THREADS

/* The team word: workers allowed to join in the high half, workers that
 * joined in the low half. */
#define TEAM_SHIFT 32
#define TEAM_JOINED_MASK ((1ull << TEAM_SHIFT) - 1)

typedef struct pool {
    pthread_mutex_t lock;      /* with the condition variables: sleeping and waking */
    pthread_cond_t wake, done;
    pthread_mutex_t job_lock;  /* one job at a time */
    atomic_ulong generation;   /* bumped when a job is published */
    atomic_ullong team;        /* (allowed << TEAM_SHIFT) | joined, for the current job */
    atomic_int sleepers;       /* workers waiting on `wake` (or about to) */
    atomic_int caller_asleep;  /* the caller waits on `done` */
    atomic_int n_threads;      /* including the caller; grows, never shrinks */
    atomic_int finished;       /* workers of the current job's team that are done with it */
    atomic_long spin_ns;       /* written when the pool grows */
    /* the current job, published by the release store of `team` */
    rlx_parallel_fn fn;
    void *ctx;
    size_t n, chunk;
    int limit;                 /* the caller's thread count, for the workers' kernels */
    atomic_size_t next;
} pool;

static pool g_pool;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Thread_local int t_in_region;
static _Thread_local int t_limit; /* 0: none (the pool's size) */
static atomic_uint_least64_t g_jobs;  /* jobs handed to workers (tests) */

static void run_chunks(pool *p) {
    for (;;) {
        size_t b = atomic_fetch_add(&p->next, p->chunk);
        if (b >= p->n) break;
        size_t e = b + p->chunk < p->n ? b + p->chunk : p->n;
        p->fn(p->ctx, b, e);
    }
}

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long)t.tv_sec * 1000000000L + t.tv_nsec;
}

/* One turn of a spin-wait: the CPU's pause hint, which keeps a spinning
 * thread from taking the issue slots of the thread on the same core's
 * other hardware thread (SMT) and from flooding the memory pipeline with
 * loads of a line that has not changed. */
static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Spins up to p->spin_ns until the generation differs from `seen`; true
 * when it did. */
static bool spin_until_gen(pool *p, unsigned long seen) {
    long spin = atomic_load_explicit(&p->spin_ns, memory_order_relaxed);
    if (spin <= 0) return false;
    long t0 = now_ns();
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(&p->generation, memory_order_acquire) != seen) return true;
        cpu_relax();
        if ((i & 63) == 0 && now_ns() - t0 > spin) return false;
    }
}

/* Spins up to p->spin_ns until `joined` workers finished; true when they did. */
static bool spin_until_finished(pool *p, int joined) {
    long spin = atomic_load_explicit(&p->spin_ns, memory_order_relaxed);
    if (spin <= 0) return false;
    long t0 = now_ns();
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(&p->finished, memory_order_acquire) >= joined) return true;
        cpu_relax();
        if ((i & 63) == 0 && now_ns() - t0 > spin) return false;
    }
}

/* Joins the current job if it still wants a worker: true when this thread
 * is now one of its team (and must run chunks and count itself `finished`). */
static bool try_join(pool *p) {
    unsigned long long t = atomic_load_explicit(&p->team, memory_order_acquire);
    while ((t & TEAM_JOINED_MASK) < (t >> TEAM_SHIFT))
        if (atomic_compare_exchange_weak_explicit(&p->team, &t, t + 1, memory_order_acq_rel, memory_order_acquire))
            return true;
    return false;
}

static void *worker(void *arg) {
    pool *p = arg;
    unsigned long seen = 0;
    t_in_region = 1;
    for (;;) {
        if (!spin_until_gen(p, seen)) {
            pthread_mutex_lock(&p->lock);
            atomic_fetch_add(&p->sleepers, 1);
            while (atomic_load(&p->generation) == seen) pthread_cond_wait(&p->wake, &p->lock);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->lock);
        }
        seen = atomic_load(&p->generation);
        /* a job that is over has all the workers it allowed: try_join then
         * fails; a later one's (published by then) may take this thread */
        if (!try_join(p)) continue;
        t_limit = p->limit;
        run_chunks(p);
        /* (sequentially consistent with the caller's caller_asleep store
         * and finished load: one of the two sees the other) */
        atomic_fetch_add(&p->finished, 1);
        if (atomic_load(&p->caller_asleep)) {
            pthread_mutex_lock(&p->lock);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->lock);
        }
    }
    return NULL;
}

/* What the pool starts with (requested values: spin -1 = automatic), set by
 * the first rlx_parallel_configure or, when work comes before any session,
 * from the environment (base/options.c); the thread count is the largest
 * any session asked for. Once the pool has started (g_started), a larger
 * count adds workers. */
static pthread_mutex_t g_cfg_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_cfg_set, g_started;
static int g_cfg_threads;
static long g_cfg_spin;

/* The thread count a request gives (0: one per online core, at most MAX_THREADS). */
static int threads_for(long want) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    long n = want > 0 ? want : (cores > 0 ? cores : 1);
    return n > MAX_THREADS ? MAX_THREADS : (int)n;
}

/* Starts workers until the pool has n threads (the caller included) and
 * sets the automatic spin for that size; holds g_cfg_lock. A worker that
 * cannot be started leaves the pool smaller (runs stay correct). */
static void grow_locked(pool *p, int n) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int have = atomic_load(&p->n_threads);
    long spin = g_cfg_spin >= 0 ? g_cfg_spin * 1000L : (n <= cores ? 50000L : 0);
    atomic_store(&p->spin_ns, spin);
    for (int i = have; i < n; i++) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, worker, p) == 0) atomic_fetch_add(&p->n_threads, 1);
        pthread_attr_destroy(&attr);
    }
}

rlx_status rlx_parallel_configure(int64_t threads, int64_t spin_us, int *out_threads) {
    int n = threads_for((long)threads);
    if (threads > MAX_THREADS)
        rlx_log(RLX_LOG_INFO, "rlx: cpu.threads=%lld: the CPU worker pool has at most %d threads; this session uses %d",
                (long long)threads, MAX_THREADS, n);
    if (out_threads) *out_threads = n;
    pthread_mutex_lock(&g_cfg_lock);
    rlx_status st = RLX_OK;
    if (!g_cfg_set) {
        g_cfg_set = true;
        g_cfg_threads = n;
        g_cfg_spin = spin_us == RLX_PARALLEL_SPIN_KEEP ? -1 : (long)spin_us;
    } else if (spin_us != RLX_PARALLEL_SPIN_KEEP && g_cfg_spin != (long)spin_us) {
        st = rlx_fail(RLX_ERR_INVALID_ARGUMENT,
                      "cpu.pool_spin_us=%lld: the CPU worker pool is per process and already set to %ld (-1: auto)",
                      (long long)spin_us, g_cfg_spin);
    } else if (n > g_cfg_threads) {
        g_cfg_threads = n;
        if (g_started) grow_locked(&g_pool, n);
    }
    pthread_mutex_unlock(&g_cfg_lock);
    return st;
}

static void pool_init(void) {
    pool *p = &g_pool;
    pthread_mutex_lock(&g_cfg_lock);
    if (!g_cfg_set) { /* work before any session: the environment's defaults */
        g_cfg_set = true;
        g_cfg_threads = threads_for((long)rlx_config_env_int("cpu.threads", 0));
        g_cfg_spin = (long)rlx_config_env_int("cpu.pool_spin_us", -1);
    }
    atomic_init(&p->generation, 0);
    atomic_init(&p->team, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->caller_asleep, 0);
    atomic_init(&p->finished, 0);
    atomic_init(&p->n_threads, 1);
    atomic_init(&p->spin_ns, 0);
    pthread_mutex_init(&p->lock, NULL);
    pthread_mutex_init(&p->job_lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    /* under the lock, so that a session configured meanwhile grows a
     * started pool rather than a count this start has already read */
    grow_locked(p, g_cfg_threads);
    g_started = true;
    pthread_mutex_unlock(&g_cfg_lock);
}

int rlx_parallel_threads(void) {
    pthread_once(&g_once, pool_init);
    int n = atomic_load_explicit(&g_pool.n_threads, memory_order_relaxed);
    return t_limit > 0 && t_limit < n ? t_limit : n;
}

void rlx_parallel_pause(unsigned *spins) {
    if (*spins < 4096 && atomic_load_explicit(&g_pool.spin_ns, memory_order_relaxed) > 0) {
        ++*spins;
        cpu_relax();
        return;
    }
    sched_yield();
}

uint64_t rlx_parallel_jobs(void) { return atomic_load_explicit(&g_jobs, memory_order_relaxed); }

int rlx_parallel_set_limit(int threads) {
    int prev = t_limit;
    t_limit = threads > 0 ? threads : 0;
    return prev;
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
    atomic_fetch_add_explicit(&g_jobs, 1, memory_order_relaxed);
    pthread_mutex_lock(&p->job_lock);
    /* about 4 chunks per thread for balance, never below the grain; as
     * many workers as there are chunks beyond the caller's first */
    size_t chunk = n / ((size_t)threads * 4);
    if (chunk < grain) chunk = grain;
    size_t chunks = (n + chunk - 1) / chunk, helpers = (size_t)threads - 1;
    if (helpers > chunks - 1) helpers = chunks - 1;
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->chunk = chunk;
    p->limit = threads;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    atomic_store_explicit(&p->finished, 0, memory_order_relaxed);
    /* publishes the job: a worker that joins reads the fields above */
    atomic_store_explicit(&p->team, (unsigned long long)helpers << TEAM_SHIFT, memory_order_release);
    atomic_fetch_add(&p->generation, 1);
    int asleep = atomic_load(&p->sleepers);
    if (asleep > 0) {
        pthread_mutex_lock(&p->lock);
        if ((size_t)asleep <= helpers) pthread_cond_broadcast(&p->wake);
        else
            for (size_t i = 0; i < helpers; i++) pthread_cond_signal(&p->wake);
        pthread_mutex_unlock(&p->lock);
    }
    t_in_region = 1;
    run_chunks(p);
    t_in_region = 0;
    /* every chunk is claimed: close the team (allowed = joined), so that a
     * worker that has not joined yet stays out, and wait for those that did */
    unsigned long long t = atomic_load_explicit(&p->team, memory_order_acquire);
    while (!atomic_compare_exchange_weak_explicit(&p->team, &t, ((t & TEAM_JOINED_MASK) << TEAM_SHIFT) |
                                                                    (t & TEAM_JOINED_MASK),
                                                  memory_order_acq_rel, memory_order_acquire)) {
    }
    int joined = (int)(t & TEAM_JOINED_MASK);
    if (joined > 0 && !spin_until_finished(p, joined) && atomic_load(&p->finished) < joined) {
        pthread_mutex_lock(&p->lock);
        atomic_store(&p->caller_asleep, 1);
        while (atomic_load(&p->finished) < joined) pthread_cond_wait(&p->done, &p->lock);
        atomic_store(&p->caller_asleep, 0);
        pthread_mutex_unlock(&p->lock);
    }
    pthread_mutex_unlock(&p->job_lock);
}
