/* Per-thread scratch buffers that persist across calls, so that the CPU
 * kernels' steady-state runs allocate nothing (the first run of a plan
 * grows them; later runs of the same shapes reuse them).
 *
 *   float *buf = rlx_scratch_get(RLX_SCRATCH_SGEMM, bytes);
 *   if (!buf) ... out of memory (or bytes above RLX_SCRATCH_MAX_BYTES) ...
 *
 * Each thread has one buffer per slot (rlx_scratch_slot); a slot's buffer
 * is valid on its thread until the next rlx_scratch_get of the same slot
 * there, so nested users take different slots. Buffers are 64-byte
 * aligned, never shrink while the thread lives, and are freed when it
 * exits (POSIX thread-specific data; the pool's workers live as long as
 * the process). Requests above RLX_SCRATCH_MAX_BYTES return NULL: such
 * callers allocate and free for the call as before (rare, large work
 * whose allocation is small next to its arithmetic), which bounds what
 * the scratch keeps at RLX_SCRATCH_SLOTS x that per thread. */
#ifndef RLX_BASE_SCRATCH_H
#define RLX_BASE_SCRATCH_H

#include <stddef.h>

typedef enum rlx_scratch_slot {
    RLX_SCRATCH_SGEMM = 0, /* the GEMM's packed blocks of A and B (cpu_sgemm.c) */
    RLX_SCRATCH_TASK = 1,  /* a kernel task's own scratch (rlx_nn_run_items) */
    RLX_SCRATCH_CALL = 2,  /* a kernel call's buffer on its calling thread (shared column matrices) */
    RLX_SCRATCH_INDEX = 3, /* a kernel call's small tables on its calling thread (tap offsets, step
                              lists, per-channel constants, RNN slices), beside its CALL buffer */
    RLX_SCRATCH_SLOTS = 4
} rlx_scratch_slot;

/* Largest buffer one slot keeps: 32 MiB. */
#define RLX_SCRATCH_MAX_BYTES ((size_t)32 << 20)

/* The calling thread's buffer of slot `slot`, at least `bytes` long (its
 * contents are undefined), or NULL when bytes exceeds
 * RLX_SCRATCH_MAX_BYTES or memory runs out. */
void *rlx_scratch_get(rlx_scratch_slot slot, size_t bytes);

/* How many times a buffer has grown, over all threads and slots since the
 * process started (tests: a pool thread that first takes a node's largest
 * task on a later run grows its buffer then, once). */
unsigned long long rlx_scratch_growths(void);

#endif
