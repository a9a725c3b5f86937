/* The Program: the backend-neutral lowered form of a specialised graph
 * (every shape static): the steps in execution order, which device runs
 * each, and the memory plan of the activation arena. */
#ifndef RLX_RUNTIME_PROGRAM_H
#define RLX_RUNTIME_PROGRAM_H

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
    uint64_t arena_bytes;   /* planned arena size */
    uint64_t noreuse_bytes; /* sum of all arena tensors, no reuse */
    uint64_t peak_bytes;    /* most bytes live at one step (lower bound) */
    /* In, set before planning: when > 0, no tensor crosses a multiple of
     * this many bytes, so the arena can be split into buffers of this size
     * (WebGPU maxBufferSize); a multiple of RLX_ARENA_ALIGN. */
    uint64_t buffer_limit;
    rlx_mem_strategy strategy;                        /* the order that won */
    uint64_t strategy_bytes[RLX_MEM_N_STRATEGIES];    /* arena of each order tried (0: not tried) */
} rlx_mem_plan;

enum { RLX_STEP_CPU = 0, RLX_STEP_GPU = 1, RLX_STEP_VIEW = 2 };

typedef struct rlx_program {
    rlx_graph *g;     /* specialised graph, owned */
    int *steps;       /* node ids, in order */
    uint8_t *step_on; /* RLX_STEP_*: device of each step; VIEW = alias, no work */
    size_t n_steps;
    rlx_mem_plan mem;
} rlx_program;

void rlx_program_destroy(rlx_program *p);

/* Plans arena offsets by liveness: values whose lifetimes do not overlap
 * share bytes; outputs of view steps (RLX_STEP_VIEW) alias their input.
 * Graph inputs are placed in the arena too (copied in at run time) and
 * live from before the first step; graph outputs live to the end;
 * constants (weights) are never in the arena. Every offset is
 * RLX_ARENA_ALIGN aligned and every size rounded up to it.
 *
 * Placement: for each order (by size, by breadth, by time; Pisarchyk and
 * Lee, "Efficient Memory Management for Deep Neural Net Inference", 2020,
 * for the first two), each tensor takes the smallest gap between tensors
 * already placed that are live at the same time and that it fits in (best
 * fit), else the end; the smallest arena wins. peak_bytes, the most bytes
 * live at one step, bounds every plan from below.
 * Set RLX_NO_REUSE=1 to give every value its own bytes (debugging).
 * errors: RLX_ERR_OUT_OF_MEMORY; RLX_ERR_UNSUPPORTED when a tensor is
 * larger than mem.buffer_limit (the message names it). */
rlx_status rlx_plan_memory(rlx_program *p);

#endif
