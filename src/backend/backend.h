/* The backend interface: one small vtable. The runtime asks supports() per
 * node to assign steps (native or CPU fallback), then compile() turns a
 * Program into an executable that run() executes. */
#ifndef RLX_BACKEND_BACKEND_H
#define RLX_BACKEND_BACKEND_H

#include "rlx/rlx.h"
#include "runtime/program.h"

typedef struct rlx_backend rlx_backend;
typedef struct rlx_backend_exe rlx_backend_exe;

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
     * checked for dtype and shape. outputs: n_outputs tensors created by
     * run, in graph->outputs order (caller owns). */
    rlx_status (*run)(rlx_backend_exe *exe, const rlx_tensor *const *inputs, rlx_tensor **outputs);
    void (*destroy_exe)(rlx_backend_exe *exe);
    void (*destroy)(rlx_backend *be);
};

rlx_status rlx_backend_cpu_create(rlx_backend **out);

/* device: "gpu" or "gpu:N". errors: RLX_ERR_NO_ADAPTER, RLX_ERR_DEVICE. */
rlx_status rlx_backend_webgpu_create(const char *device, const rlx_session_options *opt, rlx_backend **out);

#endif
