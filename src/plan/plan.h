/* The plan layer: turns the model's graph and one set of inputs into a
 * Program (plan/program.h). The session calls one entry point,
 * rlx_plan_build, which runs the named steps in this order:
 *
 *   specialise          a copy of the graph with the input shapes bound
 *                       and control inputs as constants
 *   rlx_plan_passes     the pass pipeline (fold, dce, the size limit, cse,
 *                       fusions, dce)
 *   rlx_plan_needs_eager  data-dependent shapes or control flow: no program
 *   rlx_plan_create     one step per node, each assigned to a device
 *   rlx_plan_memory     arena offsets by liveness
 *   rlx_plan_segments   segments per device, uploads and read-backs
 *
 * The plan knows backends only through their supports() and buffer limit
 * (backend.h); compiling and running a program is the backends' and the
 * runtime's (runtime/exec.h). */
#ifndef RLX_PLAN_PLAN_H
#define RLX_PLAN_PLAN_H

#include "passes/passes.h"
#include "plan/program.h"

typedef struct rlx_backend rlx_backend; /* backend/backend.h */

/* The program of the model's graph `model` (symbolic shapes; borrowed) for
 * one set of inputs: a copy specialised on the shapes of inputs[j] (one
 * per graph input, in order) and on the values of the control inputs
 * (ctl_in[j] true; ctl_in NULL: none), whose uses then read a constant;
 * then rlx_plan_passes (ps as there: ps->cfg gives the options; adds to
 * its counts). When the graph cannot become a static program
 * (rlx_plan_needs_eager), eager_why (cap > 0 bytes) says why and *out is
 * NULL: it runs eagerly. Otherwise limits.max_tensor_bytes is checked on
 * the values the passes made, steps are assigned (rlx_plan_create on dev,
 * and on host for the rest; host NULL: dev is the CPU), memory is planned
 * (plan.no_reuse) within limits.max_arena_bytes and the segments split;
 * *out is the program, owned by the caller (rlx_program_destroy).
 * Compiling it on the backends is the runtime's (runtime/exec.h).
 * errors: RLX_ERR_INVALID_ARGUMENT naming the input shapes when a node
 * cannot take them; those of the steps below. */
rlx_status rlx_plan_build(const rlx_graph *model, const rlx_tensor *const *inputs, const bool *ctl_in,
                          rlx_backend *dev, rlx_backend *host, rlx_pass_stats *ps, char *eager_why, size_t cap,
                          rlx_program **out);

/* The pass pipeline of a specialised graph (static input shapes): fold,
 * dce, cse, fold_conv_affine, fuse_activation, fuse_conv_residual,
 * fuse_attention, fuse_add_layernorm, fuse_elementwise, dce. ps->cfg (the
 * session's options, set by the caller) says which passes are off
 * (passes.disable, names checked at session creation), whether to dump
 * the graph after each pass (debug.dump_ir) and to report fusions
 * (debug.fusion_report). Adds to *ps. errors: those of the passes;
 * RLX_ERR_OUT_OF_MEMORY for a value over limits.max_tensor_bytes, checked
 * after the fold and before the fusions (rlx_graph_limit_check). */
rlx_status rlx_plan_passes(rlx_graph *g, rlx_pass_stats *ps);

/* Why specialised graph g cannot become a static program (a control-flow
 * node, or an output shape that depends on data), written into buf; NULL
 * when it can. Such graphs run eagerly (rlx_cpu_eval_graph, the CPU backend's host interpreter). */
const char *rlx_plan_needs_eager(const rlx_graph *g, char *buf, size_t cap);

/* Creates the program of g (ownership of g passes to it, also on error):
 * one step per node in order, each assigned: VIEW for a view op whose
 * output has its input's dtype and element count, else the device when
 * `dev` is not `host` and dev->supports() the node, else the host (CPU)
 * when host->supports() it. mem.buffer_limit is set to
 * dev->max_buffer_bytes; a node that reads or writes a value larger than
 * that (rlx_mem_oversized) runs on the host, and a line of p->notes says
 * so (such a value never needs the device: graph inputs, activations and
 * outputs of any size run, on the CPU where they must).
 * errors: RLX_ERR_UNSUPPORTED naming a node no backend runs;
 * RLX_ERR_OUT_OF_MEMORY. */
rlx_status rlx_plan_create(rlx_graph *g, rlx_backend *dev, rlx_backend *host, rlx_program **out);

/* Plans arena offsets by liveness: values whose lifetimes do not overlap
 * share bytes; outputs of view steps (RLX_STEP_VIEW) alias their input.
 * Graph inputs are placed in the arena too (copied in at run time) and
 * live from before the first step; graph outputs live to the end;
 * constants (weights) are never in the arena. Every storage root's offset
 * is RLX_ARENA_ALIGN aligned and its size rounded up to it. In a plan
 * without device steps, the inputs of a CPU Concat whose output is one
 * block per input (dims before the axis all 1) are planned as slices of
 * its output (alias: the Concat's output, or the last of a chain of them;
 * offset: 64-byte aligned), so that their producers write them in place
 * and the Concat copies nothing (memory.c, concat_in_place).
 *
 * Placement: for each order (by size, by breadth, by time; Pisarchyk and
 * Lee, "Efficient Memory Management for Deep Neural Net Inference", 2020,
 * for the first two), each tensor takes the smallest gap between tensors
 * already placed that are live at the same time and that it fits in (best
 * fit), else the end; the smallest arena wins. peak_bytes, the most bytes
 * live at one step, bounds every plan from below.
 * mem.no_reuse (option plan.no_reuse) gives every value its own bytes
 * (debugging). Tensors larger than mem.buffer_limit are host-only: placed
 * after mem.device_bytes, the part of the arena a device holds.
 * errors: RLX_ERR_OUT_OF_MEMORY; RLX_ERR_UNSUPPORTED when a device step
 * touches a tensor larger than mem.buffer_limit (the message names it;
 * rlx_plan_create never plans one). */
rlx_status rlx_plan_memory(rlx_program *p);

/* Splits the steps of a memory-planned program into segments (p->segs) of
 * consecutive steps on one device, and decides what travels (backend
 * neutral, as arena ranges of storage roots): a GPU segment uploads the
 * values it reads that the host produced since they were last on the
 * device; the GPU segment before a CPU segment reads back the values the
 * CPU reads that the device produced; graph outputs come from their
 * constant, the caller's input, the host arena, or a read-back of the last
 * GPU segment (p->out). Graph inputs are on the device (unless
 * host-only: rlx_mem_host_only), and on the host when a step runs there
 * (p->has_cpu). A program whose steps all run on
 * the device is one segment. errors: RLX_ERR_OUT_OF_MEMORY;
 * RLX_ERR_INTERNAL when a value is read before anything wrote it. */
rlx_status rlx_plan_segments(rlx_program *p);

#endif
