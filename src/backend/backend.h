/* The backend interface: one small vtable of a single-device executor. The
 * plan layer asks supports() per node to assign steps (plan/plan.h); the
 * runtime (runtime/exec.h) compiles the program on the session's device
 * and, when some steps run on the host, on the CPU backend too, then
 * schedules the segments: it writes host bytes to a device's arena
 * (upload), runs each segment on its backend (run_segment, which reads
 * back the segment's `down` ranges into host memory the runtime names) and
 * owns the host side of every transfer. */
#ifndef RLX_BACKEND_BACKEND_H
#define RLX_BACKEND_BACKEND_H

#include "rlx/rlx.h"
#include "base/mem.h"
#include "base/status.h"
#include "plan/program.h"

typedef struct rlx_backend rlx_backend;
typedef struct rlx_backend_exe rlx_backend_exe;

/* What an executable is made of and what compiling it cost (for `rlx bench`
 * and reports). Times in seconds. */
typedef struct rlx_exe_stats {
    size_t n_dispatches;     /* GPU dispatches of one forward pass */
    size_t n_gpu_segments;   /* submits of one forward pass */
    size_t n_cpu_steps;      /* steps that fall back to the CPU */
    size_t n_pipelines_new;  /* pipelines this compile created (not cached) */
    size_t n_pipelines_reused; /* distinct pipelines it uses that an earlier compile created */
    double lower_s;          /* lowering nodes into dispatches */
    double pipelines_s;      /* shader modules + pipelines created by this compile, and driver_s */
    double driver_s;         /* of pipelines_s: the driver's compile at first dispatch (option
                                gpu.warm_pipelines: zero-workgroup dispatches of every kernel) */
    double buffers_s;        /* arena, scratch, weights (upload included), params */
    double bind_groups_s;    /* bind groups */
    uint64_t arena_bytes, weight_bytes, scratch_bytes;
    bool f16_mode;           /* GPU f16 mode (rlx_session_options.gpu_f16 / RLX_GPU_F16) */
    const char *gemm_note;   /* which fast GEMM paths are on and why (borrowed, static per backend) */
    bool gpu_timing;         /* timestamp queries are available */
    bool timing_inside_passes; /* per-dispatch timestamps inside one pass */
    /* Compile decisions for the dispatch report, one line each ending in a
     * newline ("node 'g' (Gemm): weight 'W' kept in f32 (...)"), or NULL;
     * borrowed, valid while the executable lives. */
    const char *notes;
    /* Shader runtime checks (option gpu.runtime_checks): the distinct
     * pipelines of one forward pass whose modules were created without
     * naga's checks, and a sentence saying so and why (borrowed, valid
     * while the executable lives; NULL on the CPU). */
    size_t n_pipelines_unchecked;
    const char *checks_note;
    /* The integer GEMM's products: WGSL dot4I8Packed or the unpacked
     * emulation, and why (borrowed, static per backend; NULL on the CPU). */
    const char *int8_note;
} rlx_exe_stats;

/* One timed slice of a profiled forward pass: the public
 * rlx_profile_slice (rlx/session_ext.h), handed out as the backend wrote it. */
typedef rlx_profile_slice rlx_prof_slice;

/* Timing levels of rlx_backend.set_timing (the values of rlx_profile_level). */
enum { RLX_TIMING_OFF = RLX_PROFILE_OFF, RLX_TIMING_TOTAL = RLX_PROFILE_TOTAL, RLX_TIMING_DISPATCH = RLX_PROFILE_STEPS };

/* The slices of one timed run, owned by the runtime; backends append to it
 * (rlx_prof_add) while they run their segments. */
typedef struct rlx_prof {
    rlx_prof_slice *slices;
    size_t n, cap;
    double t0;           /* host clock at the start of the run (seconds) */
    double gpu_total_us; /* sum of the GPU segments' times */
} rlx_prof;

static inline rlx_status rlx_prof_add(rlx_prof *pr, int step, const char *kernel, double t0_us, double dur_us, bool gpu) {
    RLX_TRY(RLX_GROW(pr->slices, pr->cap, pr->n + 1));
    pr->slices[pr->n++] = (rlx_prof_slice){ step, kernel, t0_us, dur_us, gpu };
    return RLX_OK;
}

/* Called by a backend after each step it runs on the host, when set
 * (rlx_backend.set_step_hook): the runtime's progress line on long runs and
 * its check for a stop (base/runctl.h). step: the program step just run.
 * An error (RLX_ERR_CANCELLED) ends the segment with it. Must be cheap: it
 * runs per node. */
typedef rlx_status (*rlx_step_hook)(void *ctx, size_t step);

struct rlx_backend {
    const char *name;        /* "cpu", "webgpu" */
    rlx_device_kind kind;
    char device_name[320];   /* for reports: "NVIDIA H200 (vulkan, discrete)" */
    /* Largest buffer the device allocates (bytes; 0: no limit): the memory
     * plan keeps every tensor inside one such buffer, so the arena can be
     * split into buffers of this size. */
    uint64_t max_buffer_bytes;
    /* Whether this backend runs node n (static shapes known) natively. */
    bool (*supports)(rlx_backend *be, const rlx_graph *g, const rlx_node *n);
    /* Compiles the steps of program p that run on this backend (step_on
     * RLX_STEP_GPU for a device, RLX_STEP_CPU for the CPU backend), its
     * segments planned (rlx_plan_segments): the device's copy of the arena
     * (mem.arena_bytes, split at mem.buffer_limit), constants, and
     * whatever run_segment needs, so that running allocates nothing. p is
     * borrowed and outlives the executable. */
    rlx_status (*compile)(rlx_backend *be, const rlx_program *p, rlx_backend_exe **out);
    /* Writes `bytes` host bytes to the arena at byte offset off (one
     * tensor's range, inside one arena buffer); ordered before the next
     * run_segment. errors: RLX_ERR_DEVICE_LOST. */
    rlx_status (*upload)(rlx_backend_exe *exe, uint64_t off, const void *src, uint64_t bytes);
    /* Runs segment k of the program (its `on` is this backend) and reads
     * back its down[i] ranges into down_dst[i] (host memory, down[i].bytes
     * each; NULL when the segment has none). prof: when not NULL, the
     * run is timed (set_timing chose the level) and its slices are
     * appended. errors: the kernels' (naming the step), RLX_ERR_DEVICE,
     * RLX_ERR_DEVICE_LOST. */
    rlx_status (*run_segment)(rlx_backend_exe *exe, size_t k, void *const *down_dst, rlx_prof *prof);
    /* The host address of the arena's byte 0 for a backend whose arena is
     * host memory (the CPU), else NULL. */
    unsigned char *(*host_arena)(rlx_backend_exe *exe);
    void (*destroy_exe)(rlx_backend_exe *exe);
    void (*destroy)(rlx_backend *be);
    /* Optional (NULL when the backend has none). exe_stats fills *out;
     * set_timing selects RLX_TIMING_* for the following runs (errors:
     * RLX_ERR_UNSUPPORTED when the device has no timestamp queries). */
    void (*exe_stats)(rlx_backend_exe *exe, rlx_exe_stats *out);
    /* Optional: after each host step of a run, call fn(ctx, step) and stop
     * the segment with its error (fn NULL: no more calls). A device
     * backend without host steps leaves it NULL. */
    void (*set_step_hook)(rlx_backend_exe *exe, rlx_step_hook fn, void *ctx);
    rlx_status (*set_timing)(rlx_backend_exe *exe, int level);
    /* Optional, host backends: until rebound, the storage of root value
     * `value` (mem.alias[value] == value) and of every view of it is the
     * host memory `data` (mem.bytes[value] bytes, suitably aligned) instead
     * of its arena range; data NULL returns it to the arena. The runtime
     * binds a run's graph inputs (which steps only read) and outputs (the
     * caller's tensors) so that the run copies neither (runtime/exec.c). */
    void (*bind_value)(rlx_backend_exe *exe, int value, void *data);
    /* Optional, host backends: gives back the plain data of the model's
     * constants this executable freed (rlx_program.release_model_consts)
     * where it is still missing, unpacked exactly from its packs; a no-op
     * when it freed none. errors: RLX_ERR_OUT_OF_MEMORY, RLX_ERR_INTERNAL
     * (the GEMM kernel changed since the packing). */
    rlx_status (*restore_consts)(rlx_backend_exe *exe);
};

/* The CPU backend's configuration, from the session's options (copied at
 * creation: two sessions can differ). */
typedef struct rlx_cpu_config {
    bool prepack; /* CPU steps pack their constant GEMM operands at compile (option cpu.prepack) */
    int winograd; /* ... and 3x3 convolutions' weights for Winograd where it pays: 0 none (cpu.winograd=0),
                     2 F(2x2), 4 F(4x4) too (cpu.winograd_f4x4) */
    bool release_packed; /* ... and free the plain copy of a plan's own constants read through packs alone
                            (cpu.release_packed; cpu_backend.c), and of the model's where the program
                            says so (rlx_program.release_model_consts) */
} rlx_cpu_config;

/* cfg NULL: prepacking without Winograd (programs that tests build and
 * compile directly, and the host backend rlx_exec_create makes for them). */
rlx_status rlx_backend_cpu_create(const rlx_cpu_config *cfg, rlx_backend **out);

/* device: "gpu" or "gpu:N"; cfg: the session's resolved options
 * (base/options.h), borrowed: it must outlive the backend.
 * errors: RLX_ERR_NO_ADAPTER, RLX_ERR_DEVICE. */
struct rlx_config;
rlx_status rlx_backend_webgpu_open(const char *device, const rlx_session_options *opt, const struct rlx_config *cfg,
                                   rlx_backend **out);
/* As rlx_backend_webgpu_open with options resolved now from `options`
 * (NULL: none set), `opt` and the environment, owned by the backend
 * (tests). */
rlx_status rlx_backend_webgpu_create(const char *device, const rlx_session_options *opt, const rlx_options *options,
                                     rlx_backend **out);

#endif
