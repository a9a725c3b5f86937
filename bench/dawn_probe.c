/* dawn_probe: what a Dawn build (libwebgpu_dawn.so) offers on this machine,
 * and whether its C ABI works from C, without rlx and without Dawn's header.
 *
 *   dawn_probe [LIB]      LIB: the Dawn library (default $RLX_DAWN_LIB, else
 *                         third_party/dawn/lib/libwebgpu_dawn.so, the one
 *                         `scripts/setup.sh --dawn` unpacks)
 *
 * It dlopens LIB, creates an instance, requests adapters (Vulkan high
 * performance, low power and fallback, then any backend; repeats are shown
 * once) and for each prints its info, the subgroup sizes, the limits rlx
 * reads and every feature, by name. Then on the first discrete adapter (else
 * the first; never Dawn's null backend, which computes nothing) it opens a
 * device with shader-f16, subgroups and timestamp queries where offered and
 * runs small checked compute shaders: a vec4<f32> add (must work), a
 * vec4<f16> add (with shader-f16) and subgroupAdd(1) (with subgroups: each
 * invocation must see the subgroup size).
 *
 * Two ABIs, told apart by the entry points LIB exports (docs/dawn.md):
 * this file declares the one of Chromium 133 (chromium/6940, December
 * 2024), the build in the PyPI wheel dawn-python 0.3.0 (built 2025-06-13):
 * string views, WGPUSupportedLimits, the "2"-suffixed callback entry points
 * with two user pointers, feature numbers of that time (shader-f16 = 8,
 * subgroups = 13). That build has no chromium-experimental-subgroup-matrix
 * feature. dawn_probe_std.c covers the final webgpu.h (Dawn of 2025 on),
 * subgroup matrices included.
 *
 * Exit status: 0 when the vec4 add gave the right sums, 1 when it did not
 * or no adapter/device came, 2 when LIB could not be loaded or has neither
 * ABI. Allow_unsafe_apis is enabled (Dawn hides experimental features
 * without it); RLX_DAWN_SAFE=1 leaves it off. RLX_DAWN_ALLOW_NULL=1 lets
 * the shaders run on Dawn's null backend (their results are then wrong:
 * for checking that Dawn's validation accepts them, docs/dawn.md). */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dawn_probe.h"

/* ------------------------------------------------ the ABI (Dawn 6940) */

typedef struct dp_impl *dp_obj; /* every WGPU object handle */
typedef uint32_t dp_bool;

typedef struct dp_sv { /* WGPUStringView */
    const char *data;
    size_t length; /* SIZE_MAX: NUL-terminated */
} dp_sv;
#define DP_SV(s) ((dp_sv){(s), SIZE_MAX})
#define DP_SV_NONE ((dp_sv){NULL, 0})

typedef struct dp_chain { /* WGPUChainedStruct / WGPUChainedStructOut */
    struct dp_chain *next;
    uint32_t stype;
} dp_chain;

enum { /* WGPUSType values used */
    DP_STYPE_WGSL = 2,
    DP_STYPE_ADAPTER_SUBGROUPS = 10,
    DP_STYPE_TOGGLES = 0x5000A,
};
enum { DP_BACKEND_UNDEFINED = 0, DP_BACKEND_NULL = 1, DP_BACKEND_VULKAN = 6 };
enum { DP_POWER_LOW = 1, DP_POWER_HIGH = 2 };
enum { DP_ADAPTER_DISCRETE = 1 };
enum { DP_MODE_ALLOW_PROCESS_EVENTS = 2 };
enum { DP_SUCCESS = 1 }; /* every *Status_Success of that ABI */
enum { DP_F_TIMESTAMP = 3, DP_F_SHADER_F16 = 8, DP_F_SUBGROUPS = 13 };
enum {
    DP_USAGE_MAP_READ = 1, DP_USAGE_COPY_SRC = 4, DP_USAGE_COPY_DST = 8,
    DP_USAGE_STORAGE = 0x80,
};
enum { DP_MAP_READ = 1 };

typedef struct dp_toggles { /* WGPUDawnTogglesDescriptor */
    dp_chain chain;
    size_t enabled_count;
    const char *const *enabled;
    size_t disabled_count;
    const char *const *disabled;
} dp_toggles;

typedef struct dp_adapter_options { /* WGPURequestAdapterOptions, 40 bytes */
    dp_chain *next;
    dp_obj compatible_surface;
    uint32_t feature_level;
    uint32_t power_preference;
    uint32_t backend_type;
    dp_bool force_fallback;
    dp_bool compatibility_mode;
} dp_adapter_options;

/* the four callback infos with two user pointers, 40 bytes each */
typedef struct dp_cb_info {
    dp_chain *next;
    uint32_t mode;
    void (*callback)(void);
    void *userdata1, *userdata2;
} dp_cb_info;

typedef struct dp_future { uint64_t id; } dp_future;

typedef struct dp_adapter_info { /* WGPUAdapterInfo, 96 bytes */
    dp_chain *next;
    dp_sv vendor, architecture, device, description;
    uint32_t backend_type, adapter_type, vendor_id, device_id;
    dp_bool compatibility_mode;
} dp_adapter_info;

typedef struct dp_subgroup_sizes { /* WGPUAdapterPropertiesSubgroups */
    dp_chain chain;
    uint32_t min, max;
} dp_subgroup_sizes;

typedef struct dp_limits { /* WGPULimits, 160 bytes */
    uint32_t tex1d, tex2d, tex3d, tex_layers, bind_groups, bind_groups_plus_vb,
        bindings_per_group, dyn_uniform, dyn_storage, sampled_tex, samplers,
        storage_buffers_per_stage, storage_tex, uniform_buffers;
    uint64_t uniform_binding_size, storage_binding_size;
    uint32_t uniform_align, storage_align, vertex_buffers;
    uint64_t buffer_size;
    uint32_t vertex_attrs, vb_stride, inter_components, inter_vars, color_att,
        color_bytes, wg_storage, wg_invocations, wg_x, wg_y, wg_z, wg_per_dim,
        sb_vertex, st_vertex, sb_fragment, st_fragment;
} dp_limits;

typedef struct dp_supported_limits { /* WGPUSupportedLimits, 168 bytes */
    dp_chain *next;
    dp_limits limits;
} dp_supported_limits;

typedef struct dp_features { /* WGPUSupportedFeatures */
    size_t count;
    const uint32_t *features;
} dp_features;

typedef struct dp_queue_desc { dp_chain *next; dp_sv label; } dp_queue_desc;

typedef struct dp_device_desc { /* WGPUDeviceDescriptor, 144 bytes */
    dp_chain *next;
    dp_sv label;
    size_t required_feature_count;
    const uint32_t *required_features;
    const void *required_limits;
    dp_queue_desc default_queue;
    dp_cb_info device_lost;      /* WGPUDeviceLostCallbackInfo2 */
    struct {                     /* WGPUUncapturedErrorCallbackInfo2 (no mode) */
        dp_chain *next;
        void (*callback)(dp_obj *device, uint32_t type, dp_sv message, void *u1, void *u2);
        void *userdata1, *userdata2;
    } uncaptured_error;
} dp_device_desc;

typedef struct dp_buffer_desc { /* WGPUBufferDescriptor, 48 bytes */
    dp_chain *next;
    dp_sv label;
    uint64_t usage, size;
    dp_bool mapped_at_creation;
} dp_buffer_desc;

typedef struct dp_wgsl { dp_chain chain; dp_sv code; } dp_wgsl; /* WGPUShaderSourceWGSL */
typedef struct dp_module_desc { dp_chain *next; dp_sv label; } dp_module_desc;

typedef struct dp_pipeline_desc { /* WGPUComputePipelineDescriptor, 80 bytes */
    dp_chain *next;
    dp_sv label;
    dp_obj layout;
    struct { /* WGPUComputeState */
        dp_chain *next;
        dp_obj module;
        dp_sv entry_point;
        size_t constant_count;
        const void *constants;
    } compute;
} dp_pipeline_desc;

typedef struct dp_bind_entry { /* WGPUBindGroupEntry, 56 bytes */
    dp_chain *next;
    uint32_t binding;
    dp_obj buffer;
    uint64_t offset, size;
    dp_obj sampler, texture_view;
} dp_bind_entry;

typedef struct dp_bind_desc { /* WGPUBindGroupDescriptor, 48 bytes */
    dp_chain *next;
    dp_sv label;
    dp_obj layout;
    size_t entry_count;
    const dp_bind_entry *entries;
} dp_bind_desc;

_Static_assert(sizeof(dp_adapter_options) == 40, "RequestAdapterOptions");
_Static_assert(sizeof(dp_cb_info) == 40, "CallbackInfo2");
_Static_assert(sizeof(dp_adapter_info) == 96, "AdapterInfo");
_Static_assert(sizeof(dp_limits) == 160, "Limits");
_Static_assert(sizeof(dp_supported_limits) == 168, "SupportedLimits");
_Static_assert(sizeof(dp_device_desc) == 144, "DeviceDescriptor");
_Static_assert(sizeof(dp_buffer_desc) == 48, "BufferDescriptor");
_Static_assert(sizeof(dp_pipeline_desc) == 80, "ComputePipelineDescriptor");
_Static_assert(sizeof(dp_bind_entry) == 56, "BindGroupEntry");
_Static_assert(sizeof(dp_toggles) == 48, "DawnTogglesDescriptor");

/* the entry points, resolved with dlsym */
static struct {
    dp_obj (*CreateInstance)(const void *desc);
    void (*InstanceProcessEvents)(dp_obj);
    dp_future (*InstanceRequestAdapter2)(dp_obj, const dp_adapter_options *, dp_cb_info);
    uint32_t (*AdapterGetInfo)(dp_obj, dp_adapter_info *);
    void (*AdapterInfoFreeMembers)(dp_adapter_info);
    uint32_t (*AdapterGetLimits)(dp_obj, dp_supported_limits *);
    void (*AdapterGetFeatures)(dp_obj, dp_features *);
    void (*SupportedFeaturesFreeMembers)(dp_features);
    dp_bool (*AdapterHasFeature)(dp_obj, uint32_t);
    dp_future (*AdapterRequestDevice2)(dp_obj, const dp_device_desc *, dp_cb_info);
    dp_obj (*DeviceGetQueue)(dp_obj);
    dp_obj (*DeviceCreateBuffer)(dp_obj, const dp_buffer_desc *);
    dp_obj (*DeviceCreateShaderModule)(dp_obj, const dp_module_desc *);
    dp_obj (*DeviceCreateComputePipeline)(dp_obj, const dp_pipeline_desc *);
    dp_obj (*ComputePipelineGetBindGroupLayout)(dp_obj, uint32_t);
    dp_obj (*DeviceCreateBindGroup)(dp_obj, const dp_bind_desc *);
    dp_obj (*DeviceCreateCommandEncoder)(dp_obj, const void *);
    dp_obj (*CommandEncoderBeginComputePass)(dp_obj, const void *);
    void (*ComputePassEncoderSetPipeline)(dp_obj, dp_obj);
    void (*ComputePassEncoderSetBindGroup)(dp_obj, uint32_t, dp_obj, size_t, const uint32_t *);
    void (*ComputePassEncoderDispatchWorkgroups)(dp_obj, uint32_t, uint32_t, uint32_t);
    void (*ComputePassEncoderEnd)(dp_obj);
    void (*CommandEncoderCopyBufferToBuffer)(dp_obj, dp_obj, uint64_t, dp_obj, uint64_t, uint64_t);
    dp_obj (*CommandEncoderFinish)(dp_obj, const void *);
    void (*QueueWriteBuffer)(dp_obj, dp_obj, uint64_t, const void *, size_t);
    void (*QueueSubmit)(dp_obj, size_t, const dp_obj *);
    dp_future (*BufferMapAsync2)(dp_obj, uint64_t, size_t, size_t, dp_cb_info);
    const void *(*BufferGetConstMappedRange)(dp_obj, size_t, size_t);
    void (*BufferUnmap)(dp_obj);
    void (*BufferRelease)(dp_obj);
    void (*BindGroupRelease)(dp_obj);
    void (*BindGroupLayoutRelease)(dp_obj);
    void (*ComputePipelineRelease)(dp_obj);
    void (*ShaderModuleRelease)(dp_obj);
    void (*CommandEncoderRelease)(dp_obj);
    void (*ComputePassEncoderRelease)(dp_obj);
    void (*CommandBufferRelease)(dp_obj);
    void (*QueueRelease)(dp_obj);
    void (*DeviceRelease)(dp_obj);
    void (*AdapterRelease)(dp_obj);
    void (*InstanceRelease)(dp_obj);
} W;

static bool load(void *lib) {
#define E(n) {"wgpu" #n, (void **)&W.n},
    const dp_sym t[] = {DP_COMMON_ENTRY_POINTS(E) E(InstanceRequestAdapter2) E(AdapterRequestDevice2)
                            E(BufferMapAsync2)};
#undef E
    return dp_resolve(dp_dlsym, lib, t, sizeof t / sizeof t[0], "the Dawn ABI this probe declares (chromium/6940)");
}

/* ------------------------------------------------ names */

static const char *feature_name(uint32_t f) {
    static const struct { uint32_t v; const char *n; } names[] = {
        {1, "depth-clip-control"}, {2, "depth32float-stencil8"}, {3, "timestamp-query"},
        {4, "texture-compression-bc"}, {5, "texture-compression-etc2"},
        {6, "texture-compression-astc"}, {7, "indirect-first-instance"}, {8, "shader-f16"},
        {9, "rg11b10ufloat-renderable"}, {10, "bgra8unorm-storage"},
        {11, "float32-filterable"}, {12, "float32-blendable"}, {13, "subgroups"},
        {14, "subgroups-f16"}, {0x50000, "dawn-internal-usages"},
        {0x50001, "dawn-multi-planar-formats"}, {0x50002, "dawn-native"},
        {0x50003, "chromium-experimental-timestamp-query-inside-passes"},
        {0x50004, "implicit-device-synchronization"},
        {0x50005, "chromium-experimental-immediate-data"}, {0x50006, "transient-attachments"},
        {0x50007, "msaa-render-to-single-sampled"}, {0x50008, "dual-source-blending"},
        {0x50009, "d3d11-multithread-protected"}, {0x5000A, "angle-texture-sharing"},
        {0x5000B, "pixel-local-storage-coherent"}, {0x5000C, "pixel-local-storage-non-coherent"},
        {0x5000D, "unorm16-texture-formats"}, {0x5000E, "snorm16-texture-formats"},
        {0x5000F, "multi-planar-format-extended-usages"}, {0x50010, "multi-planar-format-p010"},
        {0x50011, "host-mapped-pointer"}, {0x50012, "multi-planar-render-targets"},
        {0x50013, "multi-planar-format-nv12a"}, {0x50014, "framebuffer-fetch"},
        {0x50015, "buffer-map-extended-usages"}, {0x50016, "adapter-properties-memory-heaps"},
        {0x50017, "adapter-properties-d3d"}, {0x50018, "adapter-properties-vk"},
        {0x50019, "r8unorm-storage"}, {0x5001A, "format-capabilities"},
        {0x5001B, "drm-format-capabilities"}, {0x5001C, "norm16-texture-formats"},
        {0x50021, "shared-texture-memory-vk-dedicated-allocation"},
        {0x50023, "shared-texture-memory-dma-buf"}, {0x50024, "shared-texture-memory-opaque-fd"},
        {0x50028, "shared-fence-vk-semaphore-opaque-fd"}, {0x5002B, "shared-fence-sync-fd"},
        {0x50030, "static-samplers"}, {0x50031, "y-cb-cr-vulkan-samplers"},
        {0x50032, "shader-module-compilation-options"}, {0x50033, "dawn-load-resolve-texture"},
        {0x50034, "dawn-partial-load-resolve-texture"}, {0x50035, "multi-draw-indirect"},
        {0x50036, "clip-distances"}, {0x50037, "dawn-texel-copy-buffer-row-alignment"},
        {0x50038, "flexible-texture-views"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].v == f) return names[i].n;
    if (f >= 0x5001D && f <= 0x5002F) return "(shared memory/fence interop)";
    return "(unknown to this probe)";
}

static const char *adapter_type_name(uint32_t t) {
    switch (t) {
    case 1: return "discrete";
    case 2: return "integrated";
    case 3: return "cpu";
    default: return "unknown";
    }
}

static const char *backend_name(uint32_t b) {
    static const char *n[] = {"undefined", "null", "webgpu", "d3d11", "d3d12",
                              "metal", "vulkan", "opengl", "opengles"};
    return b < sizeof n / sizeof n[0] ? n[b] : "?";
}

static void print_sv(const char *what, dp_sv s) {
    printf("  %-13s %.*s\n", what, (int)dp_sv_len(s.data, s.length), s.data ? s.data : "");
}

/* ------------------------------------------------ waiting */

static void on_object(uint32_t status, dp_obj obj, dp_sv message, void *u1, void *u2) {
    (void)u2;
    dp_done(u1, status, obj, message.data, message.length);
}

static void on_map(uint32_t status, dp_sv message, void *u1, void *u2) {
    (void)u2;
    dp_done(u1, status, NULL, message.data, message.length);
}

static void on_error(dp_obj *device, uint32_t type, dp_sv message, void *u1, void *u2) {
    (void)device, (void)u2;
    int *errors = u1;
    printf("  uncaptured error (type %u): %.*s\n", type, (int)dp_sv_len(message.data, message.length),
           message.data ? message.data : "");
    (*errors)++;
}

static dp_cb_info callback_info(void (*cb)(void), dp_waiter *w) {
    return (dp_cb_info){NULL, DP_MODE_ALLOW_PROCESS_EVENTS, cb, w, NULL};
}

static bool wait_for(dp_obj instance, dp_waiter *w) {
    for (long i = 0; i < 2000000 && !w->done; i++) W.InstanceProcessEvents(instance);
    return w->done;
}

/* ------------------------------------------------ adapters */

static const char *toggles_on[] = {"allow_unsafe_apis"};

static dp_obj request_adapter(dp_obj instance, uint32_t backend, uint32_t power, bool fallback,
                              dp_toggles *toggles) {
    dp_adapter_options o = {0};
    o.next = toggles ? &toggles->chain : NULL;
    o.power_preference = power;
    o.backend_type = backend;
    o.force_fallback = fallback;
    dp_waiter w = {0};
    W.InstanceRequestAdapter2(instance, &o, callback_info((void (*)(void))on_object, &w));
    if (!wait_for(instance, &w)) return NULL;
    if (w.status != DP_SUCCESS) {
        printf("request adapter (%s, power %u%s): status %u: %s\n", backend_name(backend), power,
               fallback ? ", fallback" : "", w.status, w.message);
        return NULL;
    }
    return w.obj;
}

static void describe(dp_obj a) {
    dp_adapter_info info = {0};
    dp_subgroup_sizes sg = {{NULL, DP_STYPE_ADAPTER_SUBGROUPS}, 0, 0};
    bool has_sg = W.AdapterHasFeature(a, DP_F_SUBGROUPS);
    if (has_sg) info.next = &sg.chain;
    if (W.AdapterGetInfo(a, &info) != DP_SUCCESS) {
        memset(&info, 0, sizeof info);
        has_sg = false;
        if (W.AdapterGetInfo(a, &info) != DP_SUCCESS) printf("  (adapter info failed)\n");
    }
    print_sv("vendor", info.vendor);
    print_sv("architecture", info.architecture);
    print_sv("device", info.device);
    print_sv("description", info.description);
    printf("  %-13s %s, %s, vendor 0x%04x, device 0x%04x\n", "type", backend_name(info.backend_type),
           adapter_type_name(info.adapter_type), info.vendor_id, info.device_id);
    if (has_sg) printf("  %-13s %u .. %u\n", "subgroups", sg.min, sg.max);
    W.AdapterInfoFreeMembers(info);

    dp_supported_limits sl = {0};
    if (W.AdapterGetLimits(a, &sl) != DP_SUCCESS) printf("  (limits failed)\n");
    const dp_limits *l = &sl.limits;
    printf("  limits: maxBufferSize %llu, maxStorageBufferBindingSize %llu,\n"
           "          maxStorageBuffersPerShaderStage %u, maxComputeWorkgroupStorageSize %u,\n"
           "          maxComputeInvocationsPerWorkgroup %u, workgroup size %u x %u x %u,\n"
           "          maxComputeWorkgroupsPerDimension %u, minStorageBufferOffsetAlignment %u,\n"
           "          minUniformBufferOffsetAlignment %u, maxBindGroups %u\n",
           (unsigned long long)l->buffer_size, (unsigned long long)l->storage_binding_size,
           l->storage_buffers_per_stage, l->wg_storage, l->wg_invocations, l->wg_x, l->wg_y,
           l->wg_z, l->wg_per_dim, l->storage_align, l->uniform_align, l->bind_groups);

    dp_features fs = {0};
    W.AdapterGetFeatures(a, &fs);
    printf("  features (%zu):\n", fs.count);
    for (size_t i = 0; i < fs.count; i++)
        printf("    0x%05x %s\n", fs.features[i], feature_name(fs.features[i]));
    W.SupportedFeaturesFreeMembers(fs);
    printf("  subgroups: %s, shader-f16: %s, timestamp-query: %s, "
           "chromium-experimental-subgroup-matrix: not in this ABI\n",
           has_sg ? "yes" : "no", W.AdapterHasFeature(a, DP_F_SHADER_F16) ? "yes" : "no",
           W.AdapterHasFeature(a, DP_F_TIMESTAMP) ? "yes" : "no");
}

/* ------------------------------------------------ compute */

typedef struct run_ctx {
    dp_obj instance, device;
    int *errors; /* uncaptured errors so far */
} run_ctx;

/* dp_run_fn on this ABI */
static bool run_shader(void *vctx, const char *wgsl, const void *a, const void *b, void *out,
                       size_t bytes, uint32_t groups) {
    run_ctx *ctx = vctx;
    dp_obj instance = ctx->instance, device = ctx->device;
    int *errors = ctx->errors, errors_before = *errors;
    dp_obj q = W.DeviceGetQueue(device);
    dp_wgsl src = {{NULL, DP_STYPE_WGSL}, DP_SV(wgsl)};
    dp_module_desc md = {&src.chain, DP_SV_NONE};
    dp_obj module = W.DeviceCreateShaderModule(device, &md);
    dp_pipeline_desc pd = {0};
    pd.compute.module = module;
    pd.compute.entry_point = DP_SV("main");
    dp_obj pipe = W.DeviceCreateComputePipeline(device, &pd);
    dp_obj buf[3], readback;
    for (int i = 0; i < 3; i++) {
        dp_buffer_desc bd = {NULL, DP_SV_NONE, DP_USAGE_STORAGE | DP_USAGE_COPY_DST | DP_USAGE_COPY_SRC,
                             bytes, 0};
        buf[i] = W.DeviceCreateBuffer(device, &bd);
    }
    dp_buffer_desc rd = {NULL, DP_SV_NONE, DP_USAGE_MAP_READ | DP_USAGE_COPY_DST, bytes, 0};
    readback = W.DeviceCreateBuffer(device, &rd);
    W.QueueWriteBuffer(q, buf[0], 0, a, bytes);
    W.QueueWriteBuffer(q, buf[1], 0, b, bytes);
    dp_obj layout = W.ComputePipelineGetBindGroupLayout(pipe, 0);
    dp_bind_entry e[3];
    for (uint32_t i = 0; i < 3; i++) e[i] = (dp_bind_entry){NULL, i, buf[i], 0, bytes, NULL, NULL};
    dp_bind_desc bgd = {NULL, DP_SV_NONE, layout, 3, e};
    dp_obj group = W.DeviceCreateBindGroup(device, &bgd);
    dp_obj enc = W.DeviceCreateCommandEncoder(device, NULL);
    dp_obj pass = W.CommandEncoderBeginComputePass(enc, NULL);
    W.ComputePassEncoderSetPipeline(pass, pipe);
    W.ComputePassEncoderSetBindGroup(pass, 0, group, 0, NULL);
    W.ComputePassEncoderDispatchWorkgroups(pass, groups, 1, 1);
    W.ComputePassEncoderEnd(pass);
    W.CommandEncoderCopyBufferToBuffer(enc, buf[2], 0, readback, 0, bytes);
    dp_obj cmd = W.CommandEncoderFinish(enc, NULL);
    W.QueueSubmit(q, 1, &cmd);
    dp_waiter w = {0};
    W.BufferMapAsync2(readback, DP_MAP_READ, 0, bytes, callback_info((void (*)(void))on_map, &w));
    bool ok = wait_for(instance, &w) && w.status == DP_SUCCESS;
    if (ok) {
        const void *p = W.BufferGetConstMappedRange(readback, 0, bytes);
        ok = p != NULL;
        if (p) memcpy(out, p, bytes);
        W.BufferUnmap(readback);
    } else {
        printf("  map failed: status %u: %s\n", w.status, w.message);
    }
    W.CommandBufferRelease(cmd);
    W.ComputePassEncoderRelease(pass);
    W.CommandEncoderRelease(enc);
    W.BindGroupRelease(group);
    W.BindGroupLayoutRelease(layout);
    for (int i = 0; i < 3; i++) W.BufferRelease(buf[i]);
    W.BufferRelease(readback);
    W.ComputePipelineRelease(pipe);
    W.ShaderModuleRelease(module);
    W.QueueRelease(q);
    return ok && *errors == errors_before;
}

static int compute_checks(dp_obj instance, dp_obj adapter) {
    uint32_t want[3], nwant = 0;
    if (W.AdapterHasFeature(adapter, DP_F_SHADER_F16)) want[nwant++] = DP_F_SHADER_F16;
    if (W.AdapterHasFeature(adapter, DP_F_SUBGROUPS)) want[nwant++] = DP_F_SUBGROUPS;
    if (W.AdapterHasFeature(adapter, DP_F_TIMESTAMP)) want[nwant++] = DP_F_TIMESTAMP;
    int errors = 0;
    dp_toggles tg = {{NULL, DP_STYPE_TOGGLES}, 1, toggles_on, 0, NULL};
    dp_device_desc dd = {0};
    dd.next = getenv("RLX_DAWN_SAFE") ? NULL : &tg.chain;
    dd.required_feature_count = nwant;
    dd.required_features = want;
    dd.uncaptured_error.callback = on_error;
    dd.uncaptured_error.userdata1 = &errors;
    dp_waiter w = {0};
    W.AdapterRequestDevice2(adapter, &dd, callback_info((void (*)(void))on_object, &w));
    if (!wait_for(instance, &w) || w.status != DP_SUCCESS) {
        printf("request device: status %u: %s\n", w.status, w.message);
        return 1;
    }
    dp_obj device = w.obj;
    printf("device: opened with %u of shader-f16 / subgroups / timestamp-query\n", nwant);

    run_ctx ctx = {instance, device, &errors};
    int rc = dp_checks(run_shader, &ctx, W.AdapterHasFeature(adapter, DP_F_SHADER_F16),
                       W.AdapterHasFeature(adapter, DP_F_SUBGROUPS));
    W.DeviceRelease(device);
    return rc;
}

/* the probe on the chromium/6940 ABI */
static int probe_6940(void *lib) {
    if (!load(lib)) return 2;
    printf("ABI: Dawn chromium/6940 (\"...2\" callback entry points)\n");
    dp_obj instance = W.CreateInstance(NULL);
    if (!instance) {
        printf("no instance\n");
        return 1;
    }
    dp_toggles tg = {{NULL, DP_STYPE_TOGGLES}, 1, toggles_on, 0, NULL};
    dp_toggles *t = getenv("RLX_DAWN_SAFE") ? NULL : &tg;
    printf("toggles: %s\n", t ? "allow_unsafe_apis" : "(none)");
    struct { uint32_t backend, power; bool fallback; const char *what; } asks[] = {
        {DP_BACKEND_VULKAN, DP_POWER_HIGH, false, "vulkan, high performance"},
        {DP_BACKEND_VULKAN, DP_POWER_LOW, false, "vulkan, low power"},
        {DP_BACKEND_VULKAN, DP_POWER_HIGH, true, "vulkan, fallback"},
        {DP_BACKEND_UNDEFINED, DP_POWER_HIGH, false, "any backend"},
    };
    dp_obj seen[4];
    uint32_t seen_ids[4][3];
    int nseen = 0, pick = -1;
    bool pick_discrete = false;
    for (size_t i = 0; i < sizeof asks / sizeof asks[0]; i++) {
        dp_obj a = request_adapter(instance, asks[i].backend, asks[i].power, asks[i].fallback, t);
        if (!a) {
            printf("adapter (%s): none\n", asks[i].what);
            continue;
        }
        dp_adapter_info info = {0};
        W.AdapterGetInfo(a, &info);
        uint32_t id[3] = {info.backend_type, info.vendor_id, info.device_id};
        uint32_t type = info.adapter_type;
        W.AdapterInfoFreeMembers(info);
        int dup = -1;
        for (int k = 0; k < nseen; k++)
            if (!memcmp(seen_ids[k], id, sizeof id)) dup = k;
        if (dup >= 0) {
            printf("adapter (%s): the same as adapter %d\n", asks[i].what, dup);
            W.AdapterRelease(a);
            continue;
        }
        printf("adapter %d (%s):\n", nseen, asks[i].what);
        describe(a);
        /* Dawn's null backend computes nothing: list it, never pick it */
        if ((id[0] != DP_BACKEND_NULL || getenv("RLX_DAWN_ALLOW_NULL")) && (pick < 0 || (type == DP_ADAPTER_DISCRETE && !pick_discrete))) {
            pick = nseen;
            pick_discrete = type == DP_ADAPTER_DISCRETE;
        }
        memcpy(seen_ids[nseen], id, sizeof id);
        seen[nseen++] = a;
    }
    int rc = 1;
    if (pick >= 0) {
        printf("compute on adapter %d\n", pick);
        rc = compute_checks(instance, seen[pick]);
    } else {
        printf("no adapter to compute on\n");
    }
    for (int k = 0; k < nseen; k++) W.AdapterRelease(seen[k]);
    W.InstanceRelease(instance);
    return rc;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : getenv("RLX_DAWN_LIB");
    if (!path) path = "third_party/dawn/lib/libwebgpu_dawn.so";
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dawn_probe: cannot load %s: %s\n", path, dlerror());
        return 2;
    }
    printf("dawn_probe: %s\n", path);
    if (dlsym(lib, "wgpuInstanceRequestAdapter2")) return probe_6940(lib);
#ifdef DP_HAVE_STD
    return dp_probe_std(dp_dlsym, lib);
#else
    fprintf(stderr, "dawn_probe: %s has no wgpuInstanceRequestAdapter2 (not chromium/6940) and this "
                    "build has no final-webgpu.h path (configure with wgpu-native present)\n", path);
    return 2;
#endif
}
