/* rlx — sessions beyond rlx_session_run: compiling ahead of the first run,
 * running into caller-provided outputs, statistics of the last compile,
 * profiling, and a description of the compiled plan (its steps and its
 * memory). Included by rlx/rlx.h; the conventions of rlx.h hold here.
 *
 * "The last plan" below is the plan the last rlx_session_prepare,
 * rlx_session_run or rlx_session_run_into of the session used: plans are
 * compiled per input-shape signature and cached (a few per session, least
 * recently used evicted), so it changes when the input shapes change.
 * Pointers marked borrowed live until the last plan changes or the session
 * is destroyed, whichever comes first.
 *
 * Licensed under the Apache License, Version 2.0. */
#ifndef RLX_SESSION_EXT_H
#define RLX_SESSION_EXT_H

#include "rlx/rlx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------ compile ahead, run into */

/* Checks inputs as rlx_session_run does, then finds or compiles the plan
 * for their shapes (it becomes the last plan) without running it, so that
 * the first run does not pay for compiling. Only the inputs' dtypes and
 * shapes matter; their data is not read (zero-filled tensors will do), and
 * it may be NULL (nbytes then unchecked: a shape larger than memory can be
 * planned), except for an input whose value decides the condition of an
 * If (one integer or bool element: plans are compiled per value of it).
 * errors: as rlx_session_run's before it runs (RLX_ERR_INVALID_ARGUMENT for
 *         an unknown or missing input, a wrong dtype or shape;
 *         RLX_ERR_UNSUPPORTED, RLX_ERR_DEVICE, RLX_ERR_OUT_OF_MEMORY while
 *         compiling, the node named); RLX_ERR_CANCELLED as a run (the
 *         terminate request or the time limit applies to compiling too:
 *         rlx_session_terminate). */
RLX_API rlx_status rlx_session_prepare(rlx_session *session, size_t n_inputs, const char *const *input_names,
                               const rlx_tensor *const *inputs);

/* As rlx_session_run, but writes the outputs into the caller's tensors:
 * outputs[i] (rlx_session_num_outputs() entries, graph-output order) must
 * have the dtype and shape that output i has for these input shapes, for
 * example tensors made with rlx_tensor_create from rlx_session_plan_value,
 * or those an earlier rlx_session_run with the same shapes returned. Once
 * the plan exists nothing is allocated per call (steady-state serving and
 * timing). Every element of every output is written; on a CPU plan the
 * kernels write them in place (no copy) when an output's data is 16-byte
 * aligned and overlaps no input and no other output, else through the
 * plan's arena and a copy. Outputs may share memory with the inputs or with
 * each other: the run reads every input as it was when called, and the
 * outputs land as if copied in graph-output order (so a buffer given twice
 * holds the later output), on every device: a GPU read-back into a buffer
 * that overlaps an input or another output, and an input passed through
 * as an output after an earlier output overwrote it, go through a staging
 * buffer the plan keeps (allocated on the first such run). An output of
 * zero bytes may have NULL data. On error the outputs' contents are
 * unspecified.
 * errors: as rlx_session_run; RLX_ERR_INVALID_ARGUMENT when a tensor is
 *         NULL, its data is NULL, or it does not match (the message names
 *         the output and gives the expected and the given dtype, shape
 *         and bytes); RLX_ERR_UNSUPPORTED
 *         for a plan that runs eagerly (control flow or data-dependent
 *         shapes: its output shapes are known only after the run) and for
 *         string outputs (use rlx_session_run). */
RLX_API rlx_status rlx_session_run_into(rlx_session *session, size_t n_inputs, const char *const *input_names,
                                const rlx_tensor *const *inputs, rlx_tensor **outputs);

/* rlx_session_run_into with run options (rlx_run_options in rlx.h; NULL:
 * none, as rlx_session_run_into). */
RLX_API rlx_status rlx_session_run_into_with(rlx_session *session, const rlx_run_options *run_options, size_t n_inputs,
                                             const char *const *input_names, const rlx_tensor *const *inputs,
                                             rlx_tensor **outputs);

/* ------------------------------------------------------------ statistics */

/* What the last plan is and what compiling it cost. Times in seconds,
 * sizes in bytes. Counts of the executable are 0 where the backend does not
 * report them (has_exe_stats false: the CPU backend, eager plans). */
typedef struct rlx_session_stats {
    bool has_plan;          /* false before the first prepare or run: everything below is 0 */
    bool eager;             /* the plan runs eagerly on the CPU reference kernels (control flow or
                               data-dependent shapes remain): no steps, arena or profiling */
    double passes_s;        /* specialising to the input shapes, folding, fusion, memory plan */
    double backend_compile_s; /* the backend's compile: lowering, pipelines, buffers, bind groups */
    int nodes_folded;       /* nodes the passes computed at compile time */
    int nodes_fused;        /* nodes the fusion passes merged into others */
    int nodes_removed;      /* nodes removed as dead or duplicate */

    bool has_exe_stats;     /* the fields up to timing_inside_passes are filled */
    size_t n_dispatches;    /* GPU dispatches of one forward pass */
    size_t n_gpu_segments;  /* GPU submits of one forward pass */
    size_t n_cpu_steps;     /* steps that fall back to the CPU */
    size_t n_pipelines_new; /* pipelines this compile created (not found in the cache) */
    double lower_s;         /* lowering nodes into dispatches */
    double pipelines_s;     /* shader modules and pipelines created by this compile, the driver's
                               first-dispatch compile (pipelines_driver_s) included */
    double buffers_s;       /* arena, scratch, weights (upload included), params */
    double bind_groups_s;   /* bind groups */
    uint64_t arena_bytes;   /* device memory of the activation arena */
    uint64_t weight_bytes;  /* device memory of the weights */
    uint64_t scratch_bytes; /* device memory of kernels' scratch buffers */
    bool f16_mode;          /* GPU f16 mode (rlx_session_options.gpu_f16) */
    const char *gemm_note;  /* which fast GEMM paths are on and why; borrowed, static; NULL if none */
    bool gpu_timing;        /* the device has timestamp queries (RLX_PROFILE_TOTAL works) */
    bool timing_inside_passes; /* per-dispatch timestamps inside one compute pass */

    const char *backend;    /* "cpu" or "webgpu"; static */
    size_t n_plans_cached;  /* plans the session holds now */
    uint64_t n_compiles;    /* plans compiled since the session was created */
    /* Pipelines of the last plan (has_exe_stats; 0 on the CPU): the
     * distinct pipelines it uses that an earlier compile of the process
     * created (n_pipelines_new are those it created), and the part of
     * pipelines_s that the driver spent compiling shaders at their first
     * dispatch, which compile forces (option gpu.warm_pipelines; lavapipe
     * compiles there, NVIDIA's driver at pipeline creation). Seconds. */
    size_t n_pipelines_reused;
    double pipelines_driver_s;
    /* Shader runtime checks of the last plan (has_exe_stats; option
     * gpu.runtime_checks): the distinct pipelines it uses whose shader
     * modules were created without naga's bounds checks and loop bounding
     * (wgpu-native's wgpuDeviceCreateShaderModuleTrusted), and a sentence
     * with the mode and the counts (borrowed, valid until the session's
     * next compile or its end; NULL on the CPU). */
    size_t n_pipelines_unchecked;
    const char *runtime_checks_note;
    /* The GPU integer GEMM's products (MatMulInteger, QLinearMatMul,
     * ConvInteger, QLinearConv; option gpu.dot4): "dot4I8Packed (self-test
     * passed)" or "off (...)" with the reason (borrowed, static; NULL on
     * the CPU). */
    const char *int8_note;
} rlx_session_stats;

/* Fills *out_stats (cleared on entry) for the last plan.
 * errors: RLX_ERR_INVALID_ARGUMENT (NULL session or out_stats). */
RLX_API rlx_status rlx_session_get_stats(const rlx_session *session, rlx_session_stats *out_stats);

/* ------------------------------------------------------------- profiling */

typedef enum rlx_profile_level {
    RLX_PROFILE_OFF = 0,   /* the default: runs take no timestamps */
    RLX_PROFILE_TOTAL = 1, /* GPU time of each run (GPU timestamps, one pair per submit) */
    RLX_PROFILE_STEPS = 2  /* also one slice per GPU dispatch and per CPU step */
} rlx_profile_level;

/* One timed slice of a profiled run. Times in microseconds from the start
 * of the run. A GPU slice (gpu true) is one dispatch on the GPU's clock; a
 * CPU slice is one step on the host's monotonic clock. */
typedef struct rlx_profile_slice {
    int step;            /* index of the plan step (rlx_session_plan_step), -1 if none */
    const char *kernel;  /* WGSL kernel name, "cpu" for a CPU step; static */
    double t0_us, dur_us;
    bool gpu;
} rlx_profile_slice;

/* Profiles the following runs of the last plan at `level` (it stays set for
 * that plan; other plans of the session are not profiled). Profiling costs
 * time: timestamps, and with RLX_PROFILE_STEPS on the GPU a pass per
 * dispatch where timestamps inside passes are missing.
 * errors: RLX_ERR_INVALID_ARGUMENT (no plan yet: prepare or run first; a
 *         bad level), RLX_ERR_UNSUPPORTED (an eager plan; a GPU without
 *         timestamp queries; RLX_PROFILE_TOTAL on the CPU, which has no
 *         GPU time), RLX_ERR_DEVICE. */
RLX_API rlx_status rlx_session_set_profiling(rlx_session *session, rlx_profile_level level);

/* The profile of the last run of the last plan: *out_slices (borrowed,
 * valid until the next run of the session) holds *out_n slices in start
 * order (none below RLX_PROFILE_STEPS), and *out_gpu_total_us the GPU time
 * of the run in microseconds (the sum over its GPU submits, first to last
 * timestamp of each; 0 on the CPU). All cleared on entry.
 * errors: RLX_ERR_INVALID_ARGUMENT (NULL pointers), RLX_ERR_UNSUPPORTED
 *         (no plan, an eager plan, a backend without profiling). */
RLX_API rlx_status rlx_session_profile(rlx_session *session, const rlx_profile_slice **out_slices, size_t *out_n,
                               double *out_gpu_total_us);

/* ------------------------------------------------------ the compiled plan */

/* Where a step runs. */
typedef enum rlx_step_device {
    RLX_STEP_DEVICE_CPU = 0, /* on the CPU: the CPU backend, or a GPU plan's fallback */
    RLX_STEP_DEVICE_GPU = 1, /* on the GPU */
    RLX_STEP_DEVICE_VIEW = 2 /* nowhere: its output is a view of its input (Reshape, ...) */
} rlx_step_device;

/* Placement orders the memory planner tries; the smallest arena wins. */
typedef enum rlx_plan_order {
    RLX_PLAN_ORDER_NO_REUSE = 0, /* every tensor its own bytes (RLX_NO_REUSE=1) */
    RLX_PLAN_ORDER_BY_SIZE = 1,  /* largest tensor first */
    RLX_PLAN_ORDER_BY_BREADTH = 2, /* steps with the most live bytes first */
    RLX_PLAN_ORDER_BY_TIME = 3,  /* in order of first use */
    RLX_PLAN_ORDER_COUNT = 4
} rlx_plan_order;

/* The last plan as a whole: the graph specialised to the input shapes
 * (after folding and fusion) and its memory plan. Sizes in bytes. */
typedef struct rlx_plan_info {
    size_t n_steps;          /* steps in execution order */
    size_t n_steps_device;   /* steps that run on the session's device */
    size_t n_steps_cpu;      /* steps of a GPU plan that fall back to the CPU */
    size_t n_steps_view;     /* steps that are views (no work) */
    size_t n_values;         /* values of the specialised graph (rlx_session_plan_value) */
    size_t n_arena_tensors;  /* values with their own bytes in the arena */
    size_t n_weights;        /* constants (kept outside the arena), after folding */
    uint64_t weight_bytes;
    uint64_t arena_bytes;    /* the activation arena as planned */
    uint64_t noreuse_bytes;  /* the sum of all arena tensors (no reuse) */
    uint64_t peak_bytes;     /* the most bytes live at one step: a lower bound of any plan */
    uint64_t buffer_limit;   /* no tensor crosses a multiple of it (the device's largest buffer); 0: none */
    uint32_t arena_align;    /* every arena tensor's offset and size are multiples of it */
    rlx_plan_order order;    /* the placement order that won */
    uint64_t order_bytes[RLX_PLAN_ORDER_COUNT]; /* arena of each order tried, 0 if not tried */
} rlx_plan_info;

/* Fills *out_info (cleared on entry) for the last plan.
 * errors: RLX_ERR_INVALID_ARGUMENT (no plan yet), RLX_ERR_UNSUPPORTED (the
 *         plan runs eagerly: rlx_session_dispatch_report says why). */
RLX_API rlx_status rlx_session_plan_info(const rlx_session *session, rlx_plan_info *out_info);

/* One step of the last plan. Strings borrowed. */
typedef struct rlx_plan_step {
    const char *node;       /* node name ("" if it has none) */
    const char *op;         /* op type ("Conv", "FusedElementwise") */
    const char *domain;     /* "" for the default ONNX domain, "rlx" for rlx's internal ops */
    rlx_step_device device;
    size_t n_inputs, n_outputs;
} rlx_plan_step;

/* Step `step` (< rlx_plan_info.n_steps) of the last plan; *out_step is
 * cleared on entry. errors: RLX_ERR_INVALID_ARGUMENT (no static plan, step
 * out of range). */
RLX_API rlx_status rlx_session_plan_step(const rlx_session *session, size_t step, rlx_plan_step *out_step);

/* One value of the last plan's graph, with its place in the arena. */
typedef struct rlx_plan_value {
    rlx_value_info info;  /* name, dtype, shape (static); name NULL for an omitted optional input */
    bool graph_input;     /* a graph input (copied into the arena at each run) */
    bool constant;        /* a weight or folded constant: outside the arena */
    bool in_arena;        /* has its own bytes in the arena (not a constant, not a view of another) */
    uint64_t offset;      /* byte offset in the arena; UINT64_MAX when not in the arena */
    uint64_t bytes;       /* byte size as planned (rounded up to arena_align) */
    int first_step, last_step; /* steps during which its bytes are live, inclusive: -1 = from before
                                  the first step (inputs), n_steps = to the end (outputs); -2 if not
                                  in the arena */
    const char *producer_node, *producer_op, *producer_domain; /* the node that writes it; NULL if none */
} rlx_plan_value;

/* Value `index` (< rlx_plan_info.n_values) of the last plan; *out_value is
 * cleared on entry. errors: RLX_ERR_INVALID_ARGUMENT (no static plan, index
 * out of range). */
RLX_API rlx_status rlx_session_plan_value(const rlx_session *session, size_t index, rlx_plan_value *out_value);

/* Input k (output k when `output`) of step `step` of the last plan, as
 * rlx_session_plan_value describes it; an omitted optional input gives
 * info.name NULL and rank 0. errors: RLX_ERR_INVALID_ARGUMENT (no static
 * plan, step or k out of range). */
RLX_API rlx_status rlx_session_plan_step_value(const rlx_session *session, size_t step, bool output, size_t k,
                                       rlx_plan_value *out_value);

#ifdef __cplusplus
}
#endif
#endif /* RLX_SESSION_EXT_H */
