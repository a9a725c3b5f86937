/* The WebGPU device side of the backend: instance, adapter, device, error
 * scopes, shader modules and the pipeline cache. Internal. */
#ifndef RLX_BACKEND_WEBGPU_WEBGPU_DEVICE_H
#define RLX_BACKEND_WEBGPU_WEBGPU_DEVICE_H

#include <webgpu/webgpu.h>
#include <webgpu/wgpu.h>

#include "backend/backend.h"
#include "backend/webgpu/webgpu.h"

typedef struct wg_pipeline {
    int kernel; /* index in rlx_wgsl_sources, or -1 for generated source */
    char *source;            /* generated WGSL (owned), the cache key with the constants */
    WGPUShaderModule module; /* the module of generated source (owned) */
    int n_spec;
    const char *spec_name[WG_MAX_SPEC];
    double spec_val[WG_MAX_SPEC];
    WGPUComputePipeline pipe;
} wg_pipeline;

/* The backend object: rlx_backend first, so the vtable's rlx_backend *
 * converts to it. Owns the instance, device and pipeline cache; executables
 * compiled by it borrow them and must be destroyed before it. */
typedef struct wg_backend {
    rlx_backend base;
    WGPUInstance inst;
    WGPUAdapter adapter;
    WGPUDevice dev;
    WGPUQueue queue;
    WGPULimits limits; /* the device's */
    wg_caps caps;
    rlx_adapter_info info;
    /* optional features enabled on the device */
    bool has_f16, has_subgroups, has_timestamp, has_coop_matrix;
    /* set by the device-lost callback */
    volatile bool lost;
    bool closing;
    char lost_msg[256];
    /* last error outside any error scope (uncaptured-error callback) */
    char uncaptured[512];
    WGPUShaderModule *modules; /* per rlx_wgsl_sources entry, created on first use */
    wg_pipeline *pipes;        /* the pipeline cache */
    size_t n_pipes, cap_pipes;
} wg_backend;

/* Opens the adapter named by `device` ("gpu" or "gpu:N") and a device on it
 * with the adapter's limits; fills b (zeroed by the caller) except `base`.
 * errors: RLX_ERR_INVALID_ARGUMENT (bad "gpu:N"), RLX_ERR_NO_ADAPTER (the
 * message says what was tried and how to get a driver), RLX_ERR_DEVICE. */
rlx_status wg_device_open(wg_backend *b, const char *device);
/* Releases pipelines, modules, device, adapter and instance. */
void wg_device_close(wg_backend *b);

/* Error scopes: push validation and out-of-memory scopes (internal errors
 * arrive through the uncaptured-error callback, checked at pop); pop
 * them all and return the first error as RLX_ERR_DEVICE (or
 * RLX_ERR_OUT_OF_MEMORY) with "<what>: <message>", RLX_ERR_DEVICE_LOST if
 * the device was lost. */
void wg_scope_push(wg_backend *b);
rlx_status wg_scope_pop(wg_backend *b, const char *what);

/* The pipeline of a dispatch's kernel and override constants, created on
 * first use inside an error scope (errors name `what`, the step, and the
 * kernel). Borrowed from the cache. */
rlx_status wg_pipeline_get(wg_backend *b, const wg_dispatch *d, const char *what, WGPUComputePipeline *out);

/* Processes events until *flag becomes non-zero (callbacks set it), or the
 * device is lost. errors: RLX_ERR_DEVICE_LOST, RLX_ERR_DEVICE (no progress). */
rlx_status wg_wait(wg_backend *b, volatile int *flag, const char *what);

/* Maps buf for reading [0, size) and waits. */
rlx_status wg_map_read(wg_backend *b, WGPUBuffer buf, uint64_t size, const char *what);

static inline WGPUStringView wg_sv(const char *s) { return (WGPUStringView){ s, WGPU_STRLEN }; }

#endif
