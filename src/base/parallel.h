/* A process-wide pool of worker threads for the CPU kernels' data-parallel
 * loops (platform layer: POSIX threads here).
 *
 *   static void body(void *ctx, size_t begin, size_t end) { ... }
 *   rlx_parallel_for(n, 4096, body, &ctx);   // [0, n) in chunks, all threads
 *
 * The pool starts on first use with one thread per core (option
 * cpu.threads, RLX_NUM_THREADS, overrides; 1 runs everything on the caller;
 * 0 is one per online core; more than 256 starts 256; a negative or
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

/* Number of threads the pool uses (>= 1). */
int rlx_parallel_threads(void);

/* Sets the pool's size and spin (options cpu.threads, 0: one per core;
 * cpu.pool_spin_us, -1: automatic) before it starts; sessions call it when
 * they are created. The pool is per process: the first call (or, for work
 * before any session, the environment) fixes the values.
 * errors: RLX_ERR_INVALID_ARGUMENT when a later call asks for a different
 * thread count or spin. */
rlx_status rlx_parallel_configure(int64_t threads, int64_t spin_us);

#endif
