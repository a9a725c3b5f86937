/* The runtime's scheduler: a compiled program and the run of its segments.
 *
 * A program (plan/program.h) is compiled on the session's device backend
 * and, when some steps run on the host (or the device is the CPU), on the
 * CPU backend, whose arena is then the host copy of the device's. A run
 * writes the inputs to the arena (and to the host copy when CPU steps
 * exist), then runs the segments in order: before a GPU segment its
 * uploads go from the host copy to the device; the segment's read-backs
 * land in the host copy or straight in the caller's output tensors; a CPU
 * segment runs on the CPU backend. Nothing is allocated per run, except
 * the output tensors a caller does not give.
 *
 * Caller memory in place: for the duration of a run the host backend holds
 * each graph input whose data is 16-byte aligned as the input's storage
 * (bind_value; steps only read inputs) instead of copying it into the
 * arena, and each output a CPU step produces (and no GPU segment uploads
 * from or reads back into the host arena) as the caller's output tensor
 * when that is aligned and overlaps no input and no other output;
 * everything else takes the arena and a copy, as before (GPU read-backs of
 * outputs land in the caller's tensors directly). Nothing stays bound
 * after the run. */
#ifndef RLX_RUNTIME_EXEC_H
#define RLX_RUNTIME_EXEC_H

#include "backend/backend.h"

typedef struct rlx_exec rlx_exec;

/* Compiles program p (segments planned) on device backend `dev`; `host`
 * runs its CPU steps (NULL: dev when dev is the CPU, else a CPU backend the
 * executable creates). p and the backends are borrowed and outlive it.
 * errors: the backends' compile errors. */
rlx_status rlx_exec_create(rlx_backend *dev, rlx_backend *host, const rlx_program *p, rlx_exec **out);

/* inputs: one per program graph input, in graph->inputs order, already
 * checked for dtype and shape. outputs: n_outputs tensors in
 * graph->outputs order (caller owns): all NULL on entry, then created by
 * the run (destroyed again on error), or all tensors of the outputs'
 * dtypes and shapes that the run fills in place. */
rlx_status rlx_exec_run(rlx_exec *x, const rlx_tensor *const *inputs, rlx_tensor **outputs);

void rlx_exec_destroy(rlx_exec *x);

/* Gives back the plain data of the model's constants that x's CPU compile
 * freed (rlx_program.release_model_consts), unpacked from its packs, where
 * still missing (rlx_backend.restore_consts); a no-op otherwise. */
rlx_status rlx_exec_restore_consts(rlx_exec *x);

/* The device executable's statistics; false (and *out zeroed) when the
 * device backend keeps none (the CPU). */
bool rlx_exec_stats(const rlx_exec *x, rlx_exe_stats *out);

/* Progress lines (rlx_log, RLX_LOG_PROGRESS) during the following runs:
 * once a run has taken RLX_EXEC_PROGRESS_AFTER_S seconds, a line saying
 * which step of how many it is at, rewritten at most every
 * RLX_EXEC_PROGRESS_EVERY_S seconds, cleared when the run ends. Steps are
 * counted on the host (each CPU step) and per GPU segment (one submit:
 * its steps complete together). */
#define RLX_EXEC_PROGRESS_AFTER_S 1.0
#define RLX_EXEC_PROGRESS_EVERY_S 0.25
void rlx_exec_set_progress(rlx_exec *x, bool on);

/* Checks for a stop (base/runctl.h) during the following runs: before each
 * segment and after each host step; a run that must stop returns
 * RLX_ERR_CANCELLED naming the step. ctl is borrowed (the session's);
 * NULL: no checks. */
struct rlx_run_ctl;
void rlx_exec_set_run_ctl(rlx_exec *x, const struct rlx_run_ctl *ctl);

/* Selects RLX_TIMING_* for the following runs. errors: RLX_ERR_UNSUPPORTED
 * when the device cannot time (no timestamp queries, or the CPU). */
rlx_status rlx_exec_set_timing(rlx_exec *x, int level);

/* The slices of the last timed run, in time order (GPU dispatches or
 * segments, CPU steps; borrowed, valid until the next run) and its total
 * GPU time in microseconds (the sum of its GPU segments, first to last
 * timestamp of each). */
size_t rlx_exec_timing(const rlx_exec *x, const rlx_prof_slice **slices, double *gpu_total_us);

#endif
