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

typedef struct rlx_mem_plan {
    /* Per value (graph->n_values entries): */
    uint64_t *offset; /* byte offset in the arena, RLX_NO_OFFSET if not there */
    uint64_t *bytes;  /* byte size (numel * dtype size) */
    int *alias;       /* value whose storage this one shares (itself if none) */
    uint64_t arena_bytes;   /* planned arena size */
    uint64_t noreuse_bytes; /* sum of all arena tensors, no reuse */
    uint64_t peak_bytes;    /* most bytes live at one step (lower bound) */
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

/* Plans arena offsets by liveness (greedy by size, best fit): values whose
 * lifetimes do not overlap share bytes; outputs of view ops (RLX_OP_VIEW)
 * alias their input. Graph inputs are placed in the arena too (copied in at
 * run time); constants are not. Every offset is RLX_ARENA_ALIGN aligned.
 * Set RLX_NO_REUSE=1 to give every value its own bytes (debugging). */
rlx_status rlx_plan_memory(rlx_program *p);

#endif
