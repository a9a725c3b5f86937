/* Shared by the two ABI paths of bench/dawn_probe (docs/dawn.md). */
#ifndef RLX_BENCH_DAWN_PROBE_H
#define RLX_BENCH_DAWN_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Runs WGSL entry `main` with three storage buffers of `bytes` each:
 * bindings 0 and 1 hold a and b, binding 2 is read back into out after
 * `groups` workgroups. False when a step failed (the path says why). */
typedef bool (*dp_run_fn)(void *ctx, const char *wgsl, const void *a, const void *b, void *out,
                          size_t bytes, uint32_t groups);

/* The checked shaders: vec4<f32> add (always), vec4<f16> add (f16),
 * subgroupAdd (subgroups). Prints a line each; 0 when the f32 add was
 * right, 1 otherwise. */
int dp_checks(dp_run_fn run, void *ctx, bool f16, bool subgroups);

/* The entry points both ABIs have under one name and signature shape, as
 * an X-macro: E(name) for wgpu<name>. Each path adds its three callback
 * entry points (RequestAdapter, RequestDevice, MapAsync). */
#define DP_COMMON_ENTRY_POINTS(E)                                                                   \
    E(CreateInstance) E(InstanceProcessEvents) E(AdapterGetInfo) E(AdapterInfoFreeMembers)         \
    E(AdapterGetLimits) E(AdapterGetFeatures) E(SupportedFeaturesFreeMembers) E(AdapterHasFeature) \
    E(DeviceGetQueue) E(DeviceCreateBuffer) E(DeviceCreateShaderModule)                            \
    E(DeviceCreateComputePipeline) E(ComputePipelineGetBindGroupLayout) E(DeviceCreateBindGroup)   \
    E(DeviceCreateCommandEncoder) E(CommandEncoderBeginComputePass)                                \
    E(ComputePassEncoderSetPipeline) E(ComputePassEncoderSetBindGroup)                             \
    E(ComputePassEncoderDispatchWorkgroups) E(ComputePassEncoderEnd)                               \
    E(CommandEncoderCopyBufferToBuffer) E(CommandEncoderFinish) E(QueueWriteBuffer) E(QueueSubmit) \
    E(BufferGetConstMappedRange) E(BufferUnmap) E(BufferRelease) E(BindGroupRelease)               \
    E(BindGroupLayoutRelease) E(ComputePipelineRelease) E(ShaderModuleRelease)                     \
    E(CommandEncoderRelease) E(ComputePassEncoderRelease) E(CommandBufferRelease) E(QueueRelease)  \
    E(DeviceRelease) E(AdapterRelease) E(InstanceRelease)

typedef struct dp_sym {
    const char *name; /* "wgpu..." */
    void **slot;      /* where dlsym's answer goes */
} dp_sym;

/* Where entry points come from: dlsym on a library, or a table a host
 * process hands over (bench/dawn_probe.py: Dawn inside a Python module). */
typedef void *(*dp_sym_fn)(void *cx, const char *name);

/* Looks up every entry of t; false, naming each missing one and `abi` (what
 * the caller expected) on stderr, when one is missing. */
bool dp_resolve(dp_sym_fn sym, void *cx, const dp_sym *t, size_t n, const char *abi);

/* dp_sym_fn over dlsym (cx: the dlopen handle) */
void *dp_dlsym(void *lib, const char *name);

/* What a callback left: done, its status, the object it gave, its message. */
typedef struct dp_waiter {
    bool done;
    uint32_t status;
    void *obj;
    char message[512];
} dp_waiter;

/* A string view's length: `length`, or strlen(data) when it is SIZE_MAX
 * (WGPU_STRLEN); 0 for a NULL data. */
size_t dp_sv_len(const char *data, size_t length);

/* Records a callback's status, object and message (a string view, cut to
 * fit) in w and marks it done. */
void dp_done(dp_waiter *w, uint32_t status, void *obj, const char *data, size_t length);

/* IEEE binary16 of a small integer-valued float (|v| < 2048) */
uint16_t dp_to_half(float v);

/* the float an IEEE binary16 holds (NaN and infinities included) */
float dp_from_half(uint16_t h);

/* The final-webgpu.h path (Dawn of 2025 on), entry points from sym(cx,
 * name): 0 when the f32 add was right, 1 when it was not or no adapter
 * came, 2 when an entry point is missing. Built only where a webgpu.h is at
 * hand (dawn_probe_std.c). */
int dp_probe_std(dp_sym_fn sym, void *cx);

/* dp_probe_std for a host process (bench/dawn_probe.py through ctypes):
 * sym(name) gives each entry point's address or NULL. Exported by
 * libdawn_probe.so. */
int dawn_probe_run(void *(*sym)(const char *name));

#endif
