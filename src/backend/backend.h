/* The backend interface: one small vtable. The runtime asks supports() per
 * node to assign steps (native or CPU fallback), then compile() turns a
 * Program into an executable that run() executes. */
#ifndef RLX_BACKEND_BACKEND_H
#define RLX_BACKEND_BACKEND_H

#include "rlx/rlx.h"
#include "runtime/program.h"

typedef struct rlx_backend rlx_backend;
typedef struct rlx_backend_exe rlx_backend_exe;

/* What an executable is made of and what compiling it cost (for `rlx bench`
 * and reports). Times in seconds. */
typedef struct rlx_exe_stats {
    size_t n_dispatches;     /* GPU dispatches of one forward pass */
    size_t n_gpu_segments;   /* submits of one forward pass */
    size_t n_cpu_steps;      /* steps that fall back to the CPU */
    size_t n_pipelines_new;  /* pipelines this compile created (not cached) */
    double lower_s;          /* lowering nodes into dispatches */
    double pipelines_s;      /* shader modules + pipelines created by this compile */
    double buffers_s;        /* arena, scratch, weights (upload included), params */
    double bind_groups_s;    /* bind groups */
    uint64_t arena_bytes, weight_bytes, scratch_bytes;
    bool f16_mode;           /* GPU f16 mode (rlx_session_options.gpu_f16 / RLX_GPU_F16) */
    const char *gemm_note;   /* which fast GEMM paths are on and why (borrowed, static per backend) */
    bool gpu_timing;         /* timestamp queries are available */
    bool timing_inside_passes; /* per-dispatch timestamps inside one pass */
} rlx_exe_stats;

/* One timed slice of a profiled forward pass: the public
 * rlx_profile_slice (rlx/session_ext.h), handed out as the backend wrote it. */
typedef rlx_profile_slice rlx_prof_slice;

/* Timing levels of rlx_backend.set_timing (the values of rlx_profile_level). */
enum { RLX_TIMING_OFF = RLX_PROFILE_OFF, RLX_TIMING_TOTAL = RLX_PROFILE_TOTAL, RLX_TIMING_DISPATCH = RLX_PROFILE_STEPS };

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
    /* Compiles a program whose step_on[] is filled in. Takes no ownership. */
    rlx_status (*compile)(rlx_backend *be, const rlx_program *p, rlx_backend_exe **out);
    /* inputs: one per program graph input, in graph->inputs order, already
     * checked for dtype and shape. outputs: n_outputs tensors in
     * graph->outputs order (caller owns): an entry that is NULL on entry is
     * created by run; a non-NULL entry is a tensor of the output's dtype
     * and shape that run fills in place (no allocation per run). */
    rlx_status (*run)(rlx_backend_exe *exe, const rlx_tensor *const *inputs, rlx_tensor **outputs);
    void (*destroy_exe)(rlx_backend_exe *exe);
    void (*destroy)(rlx_backend *be);
    /* Optional (NULL when the backend has none). exe_stats fills *out;
     * set_timing selects RLX_TIMING_* for the following runs (errors:
     * RLX_ERR_UNSUPPORTED when the device has no timestamp queries);
     * timing returns the slices of the last timed run (borrowed, valid until
     * the next run) and its total GPU time in microseconds (the sum of its
     * GPU segments, first to last timestamp of each). */
    void (*exe_stats)(rlx_backend_exe *exe, rlx_exe_stats *out);
    rlx_status (*set_timing)(rlx_backend_exe *exe, int level);
    size_t (*timing)(rlx_backend_exe *exe, const rlx_prof_slice **slices, double *gpu_total_us);
};

rlx_status rlx_backend_cpu_create(rlx_backend **out);

/* device: "gpu" or "gpu:N". errors: RLX_ERR_NO_ADAPTER, RLX_ERR_DEVICE. */
rlx_status rlx_backend_webgpu_create(const char *device, const rlx_session_options *opt, rlx_backend **out);

#endif
