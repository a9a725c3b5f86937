/* A process-wide pool of worker threads for the CPU kernels' data-parallel
 * loops (platform layer: POSIX threads here).
 *
 *   static void body(void *ctx, size_t begin, size_t end) { ... }
 *   rlx_parallel_for(n, 4096, body, &ctx);   // [0, n) in chunks, all threads
 *
 * The pool starts on first use with one thread per core (option
 * cpu.threads, RLX_NUM_THREADS, overrides; each session runs on at most
 * its own cpu.threads of the shared pool, which grows to the largest count
 * asked for; 1 runs everything on the caller; 0 is one per online core; more than 256 starts 256; a negative or
 * non-numeric value fails the session's creation with
 * RLX_ERR_INVALID_ARGUMENT naming the option (base/options.c), and for
 * work before any session counts as unset;
 * idle threads spin cpu.pool_spin_us microseconds, default 50, 0 when there are more threads
 * than cores, for the next region before they sleep). Work smaller than `grain`
 * items, or a call made from inside a parallel region, runs on the caller;
 * larger work wakes and waits for only as many workers as it has chunks.
 * body must not fail: kernels validate before they split. */
#ifndef RLX_BASE_PARALLEL_H
#define RLX_BASE_PARALLEL_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef void (*rlx_parallel_fn)(void *ctx, size_t begin, size_t end);

/* Runs fn over [0, n) split into contiguous chunks of at least `grain`
 * items, and returns when every chunk is done. */
void rlx_parallel_for(size_t n, size_t grain, rlx_parallel_fn fn, void *ctx);

/* Threads this thread's work may use (>= 1): the pool's size, or the
 * limit set with rlx_parallel_set_limit when smaller. Kernels split their
 * work by this count. */
int rlx_parallel_threads(void);

/* Sets the calling thread's limit (a session's cpu.threads, resolved) and
 * returns the previous one, to restore after the work; 0 lifts it. While
 * set, rlx_parallel_for uses at most that many threads (the caller
 * included) and rlx_parallel_threads answers it, so results equal a run
 * on a pool of that size. */
int rlx_parallel_set_limit(int threads);

/* One turn of a wait loop inside a parallel region, for a thread that
 * waits for other threads of the same job (e.g. a barrier between the
 * steps of a recurrence): a CPU pause while the pool spins
 * (cpu.pool_spin_us > 0: at most one thread per core) and *spins, the
 * turns taken so far (start at 0), is below a few thousand; otherwise it
 * yields the core, so that an oversubscribed pool lets the awaited thread
 * run. */
void rlx_parallel_pause(unsigned *spins);

/* Parallel loops handed to the workers since the process started (loops
 * run on the caller alone are not counted); for tests. */
uint64_t rlx_parallel_jobs(void);

/* spin_us of rlx_parallel_configure for a session that does not give
 * cpu.pool_spin_us: the process's spin stays (the first such call takes
 * the automatic one). */
#define RLX_PARALLEL_SPIN_KEEP INT64_MIN

/* Asks for a pool of `threads` (option cpu.threads, 0: one per core, more
 * than RLX_PARALLEL_MAX_THREADS: that many) with spin spin_us (cpu.pool_spin_us, -1: automatic,
 * RLX_PARALLEL_SPIN_KEEP: the process's);
 * sessions call it when they are created, and *out_threads (may be NULL)
 * receives the resolved count for their limit. The pool is per process
 * and grows to the largest count asked for (started workers are added).
 * errors: RLX_ERR_INVALID_ARGUMENT when a later call asks for a different
 * spin than the first (or, for work before any session, the environment). */
rlx_status rlx_parallel_configure(int64_t threads, int64_t spin_us, int *out_threads);

/* The most workers the pool has (option cpu.threads' maximum). */
#define RLX_PARALLEL_MAX_THREADS 256

#endif
