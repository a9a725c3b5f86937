/* The Program: the backend-neutral lowered form of a specialised graph
 * (every shape static): the steps in execution order, which device runs
 * each, the memory plan of the activation arena, and the segments (runs of
 * steps on one device) with the arena ranges that travel between the host
 * and the device. Built by the plan layer (plan/plan.h), compiled and run by
 * backends (backend/backend.h) under the runtime's scheduler
 * (runtime/exec.h). */
#ifndef RLX_PLAN_PROGRAM_H
#define RLX_PLAN_PROGRAM_H

#include "ir/graph.h"

#define RLX_NO_OFFSET UINT64_MAX

/* Byte alignment of every tensor in an arena; a multiple of every WebGPU
 * minStorageBufferOffsetAlignment (at most 256 by the specification). */
#define RLX_ARENA_ALIGN 256u

/* Placement orders the planner tries (rlx_mem_plan.strategy). */
typedef enum rlx_mem_strategy {
    RLX_MEM_NO_REUSE = 0, /* every tensor its own bytes (RLX_NO_REUSE=1) */
    RLX_MEM_BY_SIZE,      /* largest tensor first */
    RLX_MEM_BY_BREADTH,   /* steps with the most live bytes first, their tensors largest first */
    RLX_MEM_BY_TIME,      /* in order of first use (a linear scan) */
    RLX_MEM_N_STRATEGIES
} rlx_mem_strategy;

typedef struct rlx_mem_plan {
    /* Per value (graph->n_values entries): */
    uint64_t *offset; /* byte offset in the arena, RLX_NO_OFFSET if not there */
    uint64_t *bytes;  /* byte size (numel * dtype size) */
    int *alias;       /* value whose storage this one shares (itself if none) */
    int *first, *last; /* steps during which its storage is live, inclusive:
                          -1 = from before the first step (graph inputs),
                          n_steps = to the end (graph outputs); -2 when not in the arena */
    uint64_t arena_bytes;   /* planned arena size (the host's copy of the arena) */
    /* Bytes [0, device_bytes) of the arena hold every value a device step
     * may touch: a device's copy of the arena is that long. Values larger
     * than buffer_limit (rlx_mem_oversized) are host-only: only CPU steps
     * touch them (rlx_plan_create sees to it) and they lie at or after
     * device_bytes. Equals arena_bytes when there are none. */
    uint64_t device_bytes;
    uint64_t noreuse_bytes; /* sum of all arena tensors, no reuse */
    uint64_t peak_bytes;    /* most bytes live at one step (lower bound) */
    /* In, set before planning: when > 0, no tensor crosses a multiple of
     * this many bytes, so the arena can be split into buffers of this size
     * (WebGPU maxBufferSize); a multiple of RLX_ARENA_ALIGN. */
    uint64_t buffer_limit;
    /* In: every value gets its own bytes (option plan.no_reuse; debugging). */
    bool no_reuse;
    rlx_mem_strategy strategy;                        /* the order that won */
    uint64_t strategy_bytes[RLX_MEM_N_STRATEGIES];    /* arena of each order tried (0: not tried) */
} rlx_mem_plan;

/* Whether a tensor of `bytes` bytes (its arena size rounded up to
 * RLX_ARENA_ALIGN) is larger than one device buffer of buffer_limit bytes
 * (0: no limit), so that no device step may touch it. */
static inline bool rlx_mem_oversized(uint64_t bytes, uint64_t buffer_limit) {
    uint64_t limit = buffer_limit / RLX_ARENA_ALIGN * RLX_ARENA_ALIGN;
    uint64_t b = ((bytes ? bytes : 1) + RLX_ARENA_ALIGN - 1) / RLX_ARENA_ALIGN * RLX_ARENA_ALIGN;
    return limit && b > limit;
}

/* Whether value v's storage is host-only (see rlx_mem_plan.device_bytes). */
static inline bool rlx_mem_host_only(const rlx_mem_plan *m, int v) {
    return m->offset[v] != RLX_NO_OFFSET && m->offset[v] >= m->device_bytes && m->device_bytes < m->arena_bytes;
}

/* Where a step runs: CPU = the host (CPU backend), GPU = the session's
 * device backend, VIEW = an alias of its input, no work. */
enum { RLX_STEP_CPU = 0, RLX_STEP_GPU = 1, RLX_STEP_VIEW = 2 };

/* One arena range that moves between the host and the device: the storage
 * of root value `value` (mem.alias[value] == value), bytes [off, off+bytes). */
typedef struct rlx_xfer {
    int value;
    uint64_t off, bytes;
} rlx_xfer;

/* A run of consecutive steps on one device (view steps join the segment
 * they sit in). Before it runs, `up` (host -> device, GPU segments only:
 * values a CPU segment produced) are written; after it, `down` (device ->
 * host: values a later CPU segment reads, and graph outputs the device
 * produced last) are read back. */
typedef struct rlx_segment {
    uint8_t on;     /* RLX_STEP_CPU or RLX_STEP_GPU */
    size_t s0, s1;  /* steps [s0, s1) */
    rlx_xfer *up, *down;
    size_t n_up, n_down;
} rlx_segment;

/* Where graph output i comes from after a run. */
typedef enum rlx_out_kind {
    RLX_OUT_KONST,  /* the value's constant */
    RLX_OUT_INPUT,  /* graph input `input` (the caller's tensor) */
    RLX_OUT_HOST,   /* the host arena at `off` (a CPU step produced it last) */
    RLX_OUT_DOWN    /* read-back `down` of segment `seg` */
} rlx_out_kind;

typedef struct rlx_out_src {
    rlx_out_kind kind;
    int input;
    uint64_t off;
    size_t seg, down;
} rlx_out_src;

typedef struct rlx_program {
    rlx_graph *g;     /* specialised graph, owned */
    int *steps;       /* node ids, in order */
    uint8_t *step_on; /* RLX_STEP_*: device of each step; VIEW = alias, no work */
    size_t n_steps;
    rlx_mem_plan mem;
    /* rlx_plan_segments: */
    rlx_segment *segs;
    size_t n_segs;
    rlx_out_src *out; /* per graph output */
    bool has_cpu;     /* a step runs on the host: the host arena exists */
    /* Lines for the dispatch report ("node 'r' (Relu) runs on the CPU:
     * ..."), each ending in a newline: plan decisions a user should know
     * about; NULL when there are none. Owned. */
    char *notes;
    /* Set by the session before the backend compile: the CPU backend may
     * also free the plain copy of the model's (borrowed) constants that the
     * plan reads through packs alone (cpu.release_packed; the session is then
     * the model's only holder: session.c, model_release_ok), recording how to
     * restore them (rlx_backend.restore_consts). */
    bool release_model_consts;
} rlx_program;

void rlx_program_destroy(rlx_program *p);

#endif
