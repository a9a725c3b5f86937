/* Instance, adapters, device, error scopes and the pipeline cache of the
 * WebGPU backend (wgpu-native, webgpu.h with WGPUStringView and
 * callback-info structs; events are driven with wgpuInstanceProcessEvents
 * and wgpuDevicePoll). */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/webgpu_device.h"
#include "backend/webgpu/wgsl_gen.h"
#include "backend/webgpu/wgsl_sources.h"
#include "base/mem.h"
#include "base/log.h"
#include "base/options.h"
#include "base/platform.h"

/* ------------------------------------------------------------ names */

static const char *backend_name(WGPUBackendType t) {
    switch (t) {
    case WGPUBackendType_Vulkan: return "vulkan";
    case WGPUBackendType_Metal: return "metal";
    case WGPUBackendType_D3D12: return "d3d12";
    case WGPUBackendType_D3D11: return "d3d11";
    case WGPUBackendType_OpenGL: return "gl";
    case WGPUBackendType_OpenGLES: return "gles";
    case WGPUBackendType_WebGPU: return "webgpu";
    case WGPUBackendType_Null: return "null";
    default: return "unknown";
    }
}

static const char *adapter_type_name(WGPUAdapterType t) {
    switch (t) {
    case WGPUAdapterType_DiscreteGPU: return "discrete";
    case WGPUAdapterType_IntegratedGPU: return "integrated";
    case WGPUAdapterType_CPU: return "cpu";
    default: return "unknown";
    }
}

/* Primary backends first: Vulkan, Metal, D3D12 before GL and the rest. */
static int backend_rank(WGPUBackendType t) {
    switch (t) {
    case WGPUBackendType_Vulkan: case WGPUBackendType_Metal: case WGPUBackendType_D3D12: return 0;
    default: return 1;
    }
}

/* Copies a message into dst[cap] on one line: wgpu's multi-line reports
 * ("Validation Error\n\nCaused by:\n  In ...") become one line, each run
 * of white space one blank. */
static void sv_copy(char *dst, size_t cap, WGPUStringView s) {
    size_t n = 0, o = 0;
    if (s.data) n = s.length == WGPU_STRLEN ? strlen(s.data) : s.length;
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        char c = s.data[i];
        bool space = c == '\n' || c == '\r' || c == '\t' || c == ' ';
        if (space && (o == 0 || dst[o - 1] == ' ')) continue;
        dst[o++] = space ? ' ' : c;
    }
    while (o > 0 && dst[o - 1] == ' ') o--;
    dst[o] = 0;
}

/* wgpu-core's words for an operation on a device that is gone (its
 * DeviceError::Lost); wgpu-native 0.32 reports them as a validation
 * error and, after wgpuDeviceDestroy, never calls the device-lost
 * callback, so rlx marks the device lost when it sees them. */
static bool says_lost(const char *msg) { return strstr(msg, "device is lost") != NULL; }

static void mark_lost(wg_shared *sh, const char *msg) {
    if (sh->lost || sh->closing) return;
    snprintf(sh->lost_msg, sizeof sh->lost_msg, "%s", msg);
    sh->lost = true;
}

/* ------------------------------------------------------------ instance */

static WGPUInstance make_instance(WGPUInstanceBackend backends) {
    WGPUInstanceExtras ex;
    memset(&ex, 0, sizeof ex);
    ex.chain.sType = (WGPUSType)WGPUSType_InstanceExtras;
    ex.backends = backends;
    ex.flags = WGPUInstanceFlag_Default;
    WGPUInstanceDescriptor d;
    memset(&d, 0, sizeof d);
    d.nextInChain = &ex.chain;
    return wgpuCreateInstance(&d);
}

static void fill_info(WGPUAdapter a, rlx_adapter_info *o) {
    memset(o, 0, sizeof *o);
    WGPUAdapterInfo info;
    memset(&info, 0, sizeof info);
    if (wgpuAdapterGetInfo(a, &info) == WGPUStatus_Success) {
        sv_copy(o->name, sizeof o->name, info.device);
        sv_copy(o->driver, sizeof o->driver, info.description);
        snprintf(o->backend, sizeof o->backend, "%s", backend_name(info.backendType));
        snprintf(o->type, sizeof o->type, "%s", adapter_type_name(info.adapterType));
        o->vendor_id = info.vendorID;
        o->device_id = info.deviceID;
        wgpuAdapterInfoFreeMembers(info);
    } else {
        snprintf(o->name, sizeof o->name, "unknown adapter");
        snprintf(o->backend, sizeof o->backend, "unknown");
        snprintf(o->type, sizeof o->type, "unknown");
    }
    WGPULimits lim;
    memset(&lim, 0, sizeof lim);
    if (wgpuAdapterGetLimits(a, &lim) == WGPUStatus_Success) {
        o->max_buffer_size = lim.maxBufferSize;
        o->max_storage_buffer_binding_size = lim.maxStorageBufferBindingSize;
        o->max_compute_workgroups_per_dimension = lim.maxComputeWorkgroupsPerDimension;
        o->max_compute_invocations_per_workgroup = lim.maxComputeInvocationsPerWorkgroup;
        o->max_compute_workgroup_storage_size = lim.maxComputeWorkgroupStorageSize;
        o->max_storage_buffers_per_shader_stage = lim.maxStorageBuffersPerShaderStage;
    }
    o->shader_f16 = wgpuAdapterHasFeature(a, WGPUFeatureName_ShaderF16);
    o->subgroups = wgpuAdapterHasFeature(a, WGPUFeatureName_Subgroups);
    o->timestamp_query = wgpuAdapterHasFeature(a, WGPUFeatureName_TimestampQuery);
    o->cooperative_matrix = wgpuAdapterHasFeature(a, (WGPUFeatureName)WGPUNativeFeature_CooperativeMatrix);
    o->unchecked_shaders = wg_trusted_available();
}

/* The backend_rank of an adapter (1 when its info cannot be read). */
static int adapter_rank(WGPUAdapter a) {
    WGPUAdapterInfo info;
    memset(&info, 0, sizeof info);
    if (wgpuAdapterGetInfo(a, &info) != WGPUStatus_Success) return 1;
    int r = backend_rank(info.backendType);
    wgpuAdapterInfoFreeMembers(info);
    return r;
}

/* Enumerates the adapters of `inst` in rlx order (primary backends first,
 * otherwise as the implementation lists them). *out: malloc'ed array. */
static rlx_status enumerate(WGPUInstance inst, WGPUAdapter **out, size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    size_t n = wgpuInstanceEnumerateAdapters(inst, NULL, NULL);
    if (n == 0) return RLX_OK;
    WGPUAdapter *a = calloc(n, sizeof *a);
    if (!a) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory listing adapters");
    n = wgpuInstanceEnumerateAdapters(inst, NULL, a);
    /* stable insertion sort by backend rank */
    for (size_t i = 1; i < n; i++) {
        WGPUAdapter x = a[i];
        int rx = adapter_rank(x);
        size_t j = i;
        while (j > 0 && adapter_rank(a[j - 1]) > rx) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = x;
    }
    *out = a;
    *n_out = n;
    return RLX_OK;
}

rlx_status rlx_adapters_list(rlx_adapter_info **out, size_t *count) {
    if (out) *out = NULL;
    if (count) *count = 0;
    if (!out || !count) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "rlx_adapters_list: NULL output pointer");
    WGPUInstance inst = make_instance(WGPUInstanceBackend_All);
    if (!inst) return rlx_fail(RLX_ERR_DEVICE, "wgpu-native: cannot create a WebGPU instance");
    WGPUAdapter *a = NULL;
    size_t n = 0;
    rlx_status st = enumerate(inst, &a, &n);
    rlx_adapter_info *info = NULL;
    if (!st && n) {
        info = calloc(n, sizeof *info);
        if (!info) st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory listing adapters");
    }
    for (size_t i = 0; i < n; i++) {
        if (info) fill_info(a[i], &info[i]);
        wgpuAdapterRelease(a[i]);
    }
    free(a);
    wgpuInstanceRelease(inst);
    if (st) {
        free(info);
        return st;
    }
    *out = info;
    *count = n;
    return RLX_OK;
}

/* ------------------------------------------------------------ callbacks */

/* The answer to an adapter or device request: the handle, or the message. */
typedef struct handle_req {
    volatile int done;
    void *handle;
    char msg[256];
} handle_req;

static void req_answer(handle_req *r, bool ok, void *handle, WGPUStringView message) {
    if (ok) r->handle = handle;
    else sv_copy(r->msg, sizeof r->msg, message);
    r->done = 1;
}

static void on_adapter(WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView message, void *u1,
                       void *u2) {
    (void)u2;
    req_answer(u1, status == WGPURequestAdapterStatus_Success, adapter, message);
}

static void on_device(WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message, void *u1, void *u2) {
    (void)u2;
    req_answer(u1, status == WGPURequestDeviceStatus_Success, device, message);
}

static void on_lost(WGPUDevice const *device, WGPUDeviceLostReason reason, WGPUStringView message, void *u1,
                    void *u2) {
    (void)device;
    (void)u2;
    wg_shared *sh = u1;
    /* our own wgpuDeviceDestroy in wg_device_close sets closing first */
    if (!sh || sh->closing || reason == WGPUDeviceLostReason_CallbackCancelled) return;
    char msg[200];
    sv_copy(msg, sizeof msg, message);
    snprintf(sh->lost_msg, sizeof sh->lost_msg, "%s (%s)", msg[0] ? msg : "no message",
             reason == WGPUDeviceLostReason_Destroyed ? "the device was destroyed" : "reason unknown");
    sh->lost = true;
}

static void on_uncaptured(WGPUDevice const *device, WGPUErrorType type, WGPUStringView message, void *u1, void *u2) {
    (void)device;
    (void)u2;
    (void)type;
    wg_shared *sh = u1;
    if (!sh) return;
    sv_copy(sh->uncaptured, sizeof sh->uncaptured, message);
    if (says_lost(sh->uncaptured)) mark_lost(sh, sh->uncaptured);
}

/* Drives the instance until *flag is set, the device is lost (when lost is
 * given), or a bounded number of rounds passed: a lost or stuck device must
 * not hang the caller forever. Polls without blocking for spin_s seconds
 * first (option gpu.spin_us, default 250 us): a blocking wait on a fence
 * returns tens of microseconds after the GPU finished on some drivers,
 * which dominates a short forward pass; polling costs a core meanwhile. */
static int pump(WGPUInstance inst, WGPUDevice dev, double spin_s, volatile int *flag, const volatile bool *lost) {
    double t_spin = dev ? rlx_now_seconds() + spin_s : 0.0;
    bool spinning = dev != NULL;
    for (long i = 0; i < 20000000L && !*flag; i++) {
        wgpuInstanceProcessEvents(inst);
        if (*flag || (lost && *lost)) break;
        if (spinning && (i & 15) == 15 && rlx_now_seconds() > t_spin) spinning = false;
        if (dev) wgpuDevicePoll(dev, !spinning && i > 16, NULL);
    }
    return *flag;
}

/* ------------------------------------------------------------ open */

static const char k_driver_hint[] =
    "install a Vulkan driver: Mesa's (e.g. Debian's mesa-vulkan-drivers from bookworm-backports, with libvulkan1) "
    "or the GPU vendor's driver";

static rlx_status request_adapter(WGPUInstance inst, WGPUAdapter *out) {
    *out = NULL;
    handle_req r;
    memset(&r, 0, sizeof r);
    WGPURequestAdapterOptions o;
    memset(&o, 0, sizeof o);
    o.powerPreference = WGPUPowerPreference_HighPerformance;
    WGPURequestAdapterCallbackInfo cb;
    memset(&cb, 0, sizeof cb);
    cb.mode = WGPUCallbackMode_AllowProcessEvents;
    cb.callback = on_adapter;
    cb.userdata1 = &r;
    wgpuInstanceRequestAdapter(inst, &o, cb);
    pump(inst, NULL, 0.0, &r.done, NULL);
    *out = r.handle;
    return RLX_OK;
}

static void adapter_list_str(char *buf, size_t cap) {
    rlx_adapter_info *a = NULL;
    size_t n = 0;
    buf[0] = 0;
    if (rlx_adapters_list(&a, &n) != RLX_OK) {
        snprintf(buf, cap, "(listing adapters failed)");
        return;
    }
    size_t o = 0;
    o += (size_t)snprintf(buf + o, cap - o, "%zu adapter%s found", n, n == 1 ? "" : "s");
    for (size_t i = 0; i < n && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s gpu:%zu = %s (%s, %s)", i ? "," : ":", i, a[i].name, a[i].backend,
                              a[i].type);
    free(a);
}

static rlx_status open_adapter(wg_shared *b, const char *device) {
    if (strcmp(device, "gpu") == 0) {
        /* the high-performance adapter of the primary backends, else any */
        b->inst = make_instance(WGPUInstanceBackend_Primary);
        if (b->inst) request_adapter(b->inst, &b->adapter);
        if (!b->adapter) {
            if (b->inst) wgpuInstanceRelease(b->inst);
            b->inst = make_instance(WGPUInstanceBackend_All);
            if (!b->inst) return rlx_fail(RLX_ERR_DEVICE, "wgpu-native: cannot create a WebGPU instance");
            request_adapter(b->inst, &b->adapter);
        }
        if (!b->adapter) {
            char list[512];
            adapter_list_str(list, sizeof list);
            return rlx_fail(RLX_ERR_NO_ADAPTER,
                            "device 'gpu': no GPU adapter (asked wgpu-native for a high-performance adapter on "
                            "vulkan/metal/d3d12, then on every backend including gl; %s); %s",
                            list, k_driver_hint);
        }
        return RLX_OK;
    }
    /* gpu:N */
    const char *p = device + 4;
    char *end = NULL;
    if (!*p || *p < '0' || *p > '9')
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "device '%s': expected gpu or gpu:N with N a number", device);
    unsigned long idx = strtoul(p, &end, 10);
    if (*end) return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "device '%s': expected gpu or gpu:N with N a number", device);
    b->inst = make_instance(WGPUInstanceBackend_All);
    if (!b->inst) return rlx_fail(RLX_ERR_DEVICE, "wgpu-native: cannot create a WebGPU instance");
    WGPUAdapter *a = NULL;
    size_t n = 0;
    RLX_TRY(enumerate(b->inst, &a, &n));
    for (size_t i = 0; i < n; i++) {
        if (i == idx) b->adapter = a[i];
        else wgpuAdapterRelease(a[i]);
    }
    free(a);
    if (!b->adapter) {
        char list[512];
        adapter_list_str(list, sizeof list);
        return rlx_fail(RLX_ERR_NO_ADAPTER, "device '%s': no such adapter (enumerated every backend: %s)%s%s", device,
                        list, n ? "" : "; ", n ? "" : k_driver_hint);
    }
    return RLX_OK;
}

static WGPUDevice request_device(wg_shared *b, const WGPULimits *limits, const WGPUFeatureName *feat, size_t n_feat,
                                 char *msg, size_t cap) {
    handle_req r;
    memset(&r, 0, sizeof r);
    WGPUDeviceDescriptor dd;
    memset(&dd, 0, sizeof dd);
    dd.label = wg_sv("rlx");
    dd.requiredLimits = limits;
    dd.requiredFeatures = feat;
    dd.requiredFeatureCount = n_feat;
    dd.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowProcessEvents;
    dd.deviceLostCallbackInfo.callback = on_lost;
    dd.deviceLostCallbackInfo.userdata1 = b;
    dd.uncapturedErrorCallbackInfo.callback = on_uncaptured;
    dd.uncapturedErrorCallbackInfo.userdata1 = b;
    WGPURequestDeviceCallbackInfo cb;
    memset(&cb, 0, sizeof cb);
    cb.mode = WGPUCallbackMode_AllowProcessEvents;
    cb.callback = on_device;
    cb.userdata1 = &r;
    wgpuAdapterRequestDevice(b->adapter, &dd, cb);
    pump(b->inst, NULL, 0.0, &r.done, NULL);
    if (!r.handle) snprintf(msg, cap, "%s", r.msg[0] ? r.msg : "no answer");
    return r.handle;
}

/* Opens `device` into sh (zeroed by the caller, key set). */
static rlx_status shared_open(wg_shared *b, const char *device) {
    RLX_TRY(open_adapter(b, device));
    fill_info(b->adapter, &b->info);
    WGPULimits lim;
    memset(&lim, 0, sizeof lim);
    if (wgpuAdapterGetLimits(b->adapter, &lim) != WGPUStatus_Success)
        return rlx_fail(RLX_ERR_DEVICE, "adapter %s: cannot read its limits", b->info.name);
    lim.nextInChain = NULL;
    /* optional features worth having; each fast path checks its flag. The
     * experimental cooperative-matrix feature is listed last, so that a
     * device refused with it is asked for again without it, then without
     * any optional feature. */
    WGPUFeatureName feat[5];
    size_t nf = 0;
    bool ts_inside = b->info.timestamp_query &&
                     wgpuAdapterHasFeature(b->adapter, (WGPUFeatureName)WGPUNativeFeature_TimestampQueryInsidePasses);
    if (b->info.shader_f16) feat[nf++] = WGPUFeatureName_ShaderF16;
    if (b->info.subgroups) feat[nf++] = WGPUFeatureName_Subgroups;
    if (b->info.timestamp_query) feat[nf++] = WGPUFeatureName_TimestampQuery;
    if (ts_inside) feat[nf++] = (WGPUFeatureName)WGPUNativeFeature_TimestampQueryInsidePasses;
    if (b->info.cooperative_matrix) feat[nf++] = (WGPUFeatureName)WGPUNativeFeature_CooperativeMatrix;
    char msg[256] = "";
    b->dev = request_device(b, &lim, feat, nf, msg, sizeof msg);
    if (!b->dev && nf && b->info.cooperative_matrix) {
        /* wgpu-native 0.32 refuses it: "experimental features are not
         * enabled" (its C API has no switch for them) */
        snprintf(b->coop_refused, sizeof b->coop_refused, "%s", msg);
        for (char *c = b->coop_refused; *c; c++)
            if (*c == '\n' || *c == '\r') *c = ' ';
        b->dev = request_device(b, &lim, feat, --nf, msg, sizeof msg);
    }
    if (!b->dev && nf) {
        nf = 0; /* retry without the optional features */
        b->dev = request_device(b, &lim, NULL, 0, msg, sizeof msg);
    }
    if (!b->dev) b->dev = request_device(b, NULL, NULL, 0, msg, sizeof msg); /* default limits */
    if (!b->dev)
        return rlx_fail(RLX_ERR_DEVICE, "adapter %s (%s): requesting a device failed: %s", b->info.name,
                        b->info.backend, msg);
    for (size_t i = 0; i < nf; i++) {
        if (feat[i] == WGPUFeatureName_ShaderF16) b->has_f16 = true;
        else if (feat[i] == WGPUFeatureName_Subgroups) b->has_subgroups = true;
        else if (feat[i] == WGPUFeatureName_TimestampQuery) b->has_timestamp = true;
        else if (feat[i] == (WGPUFeatureName)WGPUNativeFeature_TimestampQueryInsidePasses) b->has_ts_inside = true;
        else b->has_coop_matrix = true;
    }
    memset(&b->limits, 0, sizeof b->limits);
    if (wgpuDeviceGetLimits(b->dev, &b->limits) != WGPUStatus_Success) b->limits = lim;
    b->queue = wgpuDeviceGetQueue(b->dev);
    WGPUBufferDescriptor pd;
    memset(&pd, 0, sizeof pd);
    pd.label = wg_sv("probe");
    pd.size = 16;
    pd.usage = WGPUBufferUsage_CopyDst;
    b->probe = wgpuDeviceCreateBuffer(b->dev, &pd);
    b->modules = calloc(rlx_wgsl_source_count * WG_ELEM_COUNT * 2 + 1, sizeof *b->modules);
    if (!b->modules) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    return RLX_OK;
}

/* Releases what sh holds (not sh itself). */
static void shared_close(wg_shared *b) {
    b->closing = true;
    for (size_t i = 0; i < b->n_pipes; i++) {
        if (b->pipes[i].pipe) wgpuComputePipelineRelease(b->pipes[i].pipe);
        if (b->pipes[i].module) wgpuShaderModuleRelease(b->pipes[i].module);
        free(b->pipes[i].source);
    }
    free(b->pipes);
    b->pipes = NULL;
    if (b->modules) {
        for (size_t i = 0; i < rlx_wgsl_source_count * WG_ELEM_COUNT * 2; i++)
            if (b->modules[i]) wgpuShaderModuleRelease(b->modules[i]);
        free(b->modules);
        b->modules = NULL;
    }
    if (b->probe) wgpuBufferRelease(b->probe);
    b->probe = NULL;
    if (b->queue) wgpuQueueRelease(b->queue);
    if (b->dev) {
        wgpuDeviceDestroy(b->dev);
        wgpuDeviceRelease(b->dev);
    }
    if (b->inst) wgpuInstanceProcessEvents(b->inst);
    if (b->adapter) wgpuAdapterRelease(b->adapter);
    if (b->inst) wgpuInstanceRelease(b->inst);
    b->queue = NULL;
    b->dev = NULL;
    b->adapter = NULL;
    b->inst = NULL;
}

/* Closes sh and frees it. */
static void shared_free(wg_shared *sh) {
    shared_close(sh);
    pthread_mutex_destroy(&sh->lock);
    free(sh);
}

/* The registry of shared devices, guarded by g_reg_lock (POSIX mutexes
 * here and in session.c rather than C11 mtx_t: ThreadSanitizer does not
 * intercept glibc's mtx_* and thrd_*, docs/ROBUSTNESS.md "Sanitizers").
 * Idle devices are not closed at exit: by the time atexit handlers run,
 * a Vulkan driver may already have torn itself down (seen on the NVIDIA
 * driver: releasing pipelines from atexit crashed in the driver), and the
 * process's GPU objects go with the process anyway. The registry stays
 * reachable, so leak checkers do not report it. */
static wg_shared *g_shared;
static pthread_mutex_t g_reg_lock = PTHREAD_MUTEX_INITIALIZER;

/* A recursive mutex (a shared device's lock). 0 on success. */
static int recursive_mutex_init(pthread_mutex_t *m) {
    pthread_mutexattr_t a;
    if (pthread_mutexattr_init(&a) != 0) return -1;
    int r = pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    if (r == 0) r = pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
    return r;
}

static void reg_unlink(wg_shared *sh) {
    for (wg_shared **pp = &g_shared; *pp; pp = &(*pp)->next)
        if (*pp == sh) {
            *pp = sh->next;
            break;
        }
    sh->in_registry = false;
    sh->next = NULL;
}

size_t wg_device_open_count(void) {
    pthread_mutex_lock(&g_reg_lock);
    size_t n = 0;
    for (wg_shared *p = g_shared; p; p = p->next) n++;
    pthread_mutex_unlock(&g_reg_lock);
    return n;
}

size_t wg_device_pipelines_created(const char *device) {
    pthread_mutex_lock(&g_reg_lock);
    size_t n = 0;
    for (wg_shared *p = g_shared; p; p = p->next)
        if (strcmp(p->key, device) == 0) n = p->pipes_created;
    pthread_mutex_unlock(&g_reg_lock);
    return n;
}

/* Whether sh is lost: when nothing has reached the device since the last
 * check (sh->touched), a 4-byte write to the probe buffer does (an
 * operation on a lost device reports "device is lost" at once); then
 * pending callbacks are delivered. The caller holds sh->lock. */
static bool shared_check_lost(wg_shared *sh) {
    if (!sh->lost && !sh->touched && sh->probe) {
        static const uint32_t zero[4] = { 0 };
        wgpuQueueWriteBuffer(sh->queue, sh->probe, 0, zero, 4);
    }
    sh->touched = false;
    wgpuInstanceProcessEvents(sh->inst);
    return sh->lost;
}

bool wg_device_check_lost(wg_backend *b) { return shared_check_lost(b->sh); }

/* min(*v, limit) for a limit option (-1: none). */
static void cap_limit(int64_t limit, uint64_t *v) {
    if (limit >= 0 && (uint64_t)limit < *v) *v = (uint64_t)limit;
}

rlx_status wg_device_open(wg_backend *b, const char *device) {
    if (strlen(device) >= sizeof ((wg_shared *)0)->key)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "device '%s': expected gpu or gpu:N with N a number", device);
    /* limits lowered by options (tests of the split and fallback paths) */
    wg_caps *c = &b->caps;
    c->max_binding = UINT64_MAX;
    c->max_buffer = UINT64_MAX;
    cap_limit(c->cfg->gpu_max_binding_bytes, &c->max_binding);
    cap_limit(c->cfg->gpu_max_buffer_bytes, &c->max_buffer);
    uint64_t wg_storage = UINT64_MAX;
    cap_limit(c->cfg->gpu_max_wg_storage_bytes, &wg_storage);
    pthread_mutex_lock(&g_reg_lock);
    wg_shared *sh = NULL;
    for (wg_shared *p = g_shared; p; p = p->next)
        if (strcmp(p->key, device) == 0) sh = p;
    if (sh) { /* deliver a pending device-lost callback, and probe, before deciding */
        pthread_mutex_lock(&sh->lock);
        wgpuInstanceProcessEvents(sh->inst);
        if (!sh->lost) wgpuDevicePoll(sh->dev, true, NULL);
        sh->touched = false;
        shared_check_lost(sh);
        pthread_mutex_unlock(&sh->lock);
    }
    if (sh && sh->lost) { /* never hand out a lost device */
        reg_unlink(sh);
        if (sh->refs == 0) { /* an idle one: nobody else holds it */
            shared_free(sh);
        }
        sh = NULL;
    }
    rlx_status st = RLX_OK;
    if (sh) {
        sh->refs++;
    } else {
        sh = calloc(1, sizeof *sh);
        if (!sh) {
            pthread_mutex_unlock(&g_reg_lock);
            return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        }
        snprintf(sh->key, sizeof sh->key, "%s", device);
        if (recursive_mutex_init(&sh->lock) != 0) {
            free(sh);
            pthread_mutex_unlock(&g_reg_lock);
            return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "cannot create a mutex");
        }
        st = shared_open(sh, device);
        if (st) {
            shared_free(sh);
            pthread_mutex_unlock(&g_reg_lock);
            return st;
        }
        sh->refs = 1;
        sh->in_registry = true;
        sh->next = g_shared;
        g_shared = sh;
    }
    pthread_mutex_unlock(&g_reg_lock);
    b->sh = sh;
    b->inst = sh->inst;
    b->adapter = sh->adapter;
    b->dev = sh->dev;
    b->queue = sh->queue;
    b->limits = sh->limits;
    b->info = sh->info;
    b->has_f16 = sh->has_f16;
    c->shader_f16 = sh->has_f16;
    b->has_subgroups = sh->has_subgroups;
    b->has_timestamp = sh->has_timestamp;
    b->has_ts_inside = sh->has_ts_inside;
    b->has_coop_matrix = sh->has_coop_matrix;
    if (b->limits.maxStorageBufferBindingSize < c->max_binding) c->max_binding = b->limits.maxStorageBufferBindingSize;
    if (b->limits.maxBufferSize < c->max_buffer) c->max_buffer = b->limits.maxBufferSize;
    c->max_buffer &= ~(uint64_t)(RLX_ARENA_ALIGN - 1);
    if (c->max_binding > c->max_buffer) c->max_binding = c->max_buffer;
    c->max_binding &= ~(uint64_t)15; /* windows are whole 16-byte units */
    c->max_groups_per_dim = b->limits.maxComputeWorkgroupsPerDimension;
    c->storage_align = b->limits.minStorageBufferOffsetAlignment ? b->limits.minStorageBufferOffsetAlignment : 256;
    c->uniform_align = b->limits.minUniformBufferOffsetAlignment ? b->limits.minUniformBufferOffsetAlignment : 256;
    c->max_storage_per_stage = b->limits.maxStorageBuffersPerShaderStage;
    c->max_wg_storage = b->limits.maxComputeWorkgroupStorageSize;
    if (wg_storage < c->max_wg_storage) c->max_wg_storage = (uint32_t)wg_storage;
    c->max_wg_invocations = b->limits.maxComputeInvocationsPerWorkgroup;
    c->max_wg_size_x = b->limits.maxComputeWorkgroupSizeX;
    c->max_wg_size_y = b->limits.maxComputeWorkgroupSizeY;
    return RLX_OK;
}

void wg_device_close(wg_backend *b) {
    wg_shared *sh = b->sh;
    b->sh = NULL;
    b->inst = NULL;
    b->adapter = NULL;
    b->dev = NULL;
    b->queue = NULL;
    if (!sh) return;
    pthread_mutex_lock(&g_reg_lock);
    bool last = --sh->refs == 0;
    /* an idle device stays registered for the next session (opening one
     * costs far more than a session), unless lost or gpu.keep_device=0 */
    bool linger = sh->in_registry && !sh->lost && b->caps.cfg->gpu_keep_device;
    if (last && !linger && sh->in_registry) reg_unlink(sh);
    pthread_mutex_unlock(&g_reg_lock);
    if (!last || linger) return;
    shared_free(sh);
}

/* At exit: close the idle devices. */
void wg_device_lock(wg_backend *b) {
    if (b->sh) pthread_mutex_lock(&b->sh->lock);
}

void wg_device_unlock(wg_backend *b) {
    if (b->sh) pthread_mutex_unlock(&b->sh->lock);
}

/* ------------------------------------------------------------ error scopes */

typedef struct scope_res {
    volatile int done;
    WGPUErrorType type;
    char msg[512];
} scope_res;

static void on_pop(WGPUPopErrorScopeStatus status, WGPUErrorType type, WGPUStringView message, void *u1, void *u2) {
    (void)u2;
    scope_res *r = u1;
    if (status == WGPUPopErrorScopeStatus_Success) {
        r->type = type;
        if (type != WGPUErrorType_NoError) sv_copy(r->msg, sizeof r->msg, message);
    } else {
        r->type = WGPUErrorType_Unknown;
        snprintf(r->msg, sizeof r->msg, "error scope could not be popped (device lost?)");
    }
    r->done = 1;
}

/* wgpu-native 0.32 panics on WGPUErrorFilter_Internal ("invalid error
 * filter"), so internal errors are caught by the uncaptured-error callback:
 * its message is cleared on push and checked on pop. */
void wg_scope_push(wg_backend *b) {
    b->sh->uncaptured[0] = 0;
    wgpuDevicePushErrorScope(b->dev, WGPUErrorFilter_Validation);
    wgpuDevicePushErrorScope(b->dev, WGPUErrorFilter_OutOfMemory);
}

rlx_status wg_scope_pop(wg_backend *b, const char *what) {
    scope_res r[2];
    memset(r, 0, sizeof r);
    for (int i = 0; i < 2; i++) {
        WGPUPopErrorScopeCallbackInfo cb;
        memset(&cb, 0, sizeof cb);
        cb.mode = WGPUCallbackMode_AllowProcessEvents;
        cb.callback = on_pop;
        cb.userdata1 = &r[i];
        wgpuDevicePopErrorScope(b->dev, cb);
    }
    for (int i = 0; i < 2; i++) pump(b->inst, b->dev, (double)b->caps.cfg->gpu_spin_us * 1e-6, &r[i].done, &b->sh->lost);
    if (b->sh->lost) return wg_lost_error(b, what);
    /* r[0] out of memory, r[1] validation: report validation first */
    static const int order[2] = { 1, 0 };
    for (int k = 0; k < 2; k++) {
        const scope_res *x = &r[order[k]];
        if (!x->done) return rlx_fail(RLX_ERR_DEVICE, "%s: the GPU did not answer an error-scope query", what);
        if (x->type == WGPUErrorType_NoError) continue;
        if (says_lost(x->msg)) {
            mark_lost(b->sh, x->msg);
            return wg_lost_error(b, what);
        }
        const char *kind = x->type == WGPUErrorType_Validation ? "validation error"
                         : x->type == WGPUErrorType_OutOfMemory ? "out of GPU memory"
                         : x->type == WGPUErrorType_Internal ? "internal error" : "error";
        return rlx_fail(x->type == WGPUErrorType_OutOfMemory ? RLX_ERR_OUT_OF_MEMORY : RLX_ERR_DEVICE, "%s: %s: %s",
                        what, kind, x->msg);
    }
    if (b->sh->uncaptured[0]) return rlx_fail(RLX_ERR_DEVICE, "%s: GPU error: %s", what, b->sh->uncaptured);
    return RLX_OK;
}

rlx_status wg_lost_error(const wg_backend *b, const char *what) {
    return rlx_fail(RLX_ERR_DEVICE_LOST,
                    "%s: the GPU device was lost: %s; this session cannot use it again: create a new session, which "
                    "opens a new device",
                    what, b->sh->lost_msg);
}

/* ------------------------------------------------------------ test faults */

static _Atomic int g_fault;

void wg_fault_inject(wg_fault f) { atomic_store(&g_fault, (int)f); }

bool wg_fault_take(wg_fault f) {
    int want = (int)f;
    return f != WG_FAULT_NONE && atomic_compare_exchange_strong(&g_fault, &want, (int)WG_FAULT_NONE);
}

bool wg_device_destroy_for_test(const char *device) {
    pthread_mutex_lock(&g_reg_lock);
    wg_shared *sh = NULL;
    for (wg_shared *p = g_shared; p; p = p->next)
        if (strcmp(p->key, device) == 0) sh = p;
    if (sh) {
        pthread_mutex_lock(&sh->lock);
        wgpuDeviceDestroy(sh->dev);
        pthread_mutex_unlock(&sh->lock);
    }
    pthread_mutex_unlock(&g_reg_lock);
    return sh != NULL;
}

/* Processes events until *flag becomes non-zero (callbacks set it), or the
 * device is lost. errors: RLX_ERR_DEVICE_LOST, RLX_ERR_DEVICE (no progress). */
static rlx_status wg_wait(wg_backend *b, volatile int *flag, const char *what) {
    pump(b->inst, b->dev, (double)b->caps.cfg->gpu_spin_us * 1e-6, flag, &b->sh->lost);
    if (b->sh->lost) return wg_lost_error(b, what);
    if (!*flag) return rlx_fail(RLX_ERR_DEVICE, "%s: the GPU made no progress", what);
    return RLX_OK;
}

typedef struct map_res {
    volatile int done;
    WGPUMapAsyncStatus status;
    char msg[256];
} map_res;

static void on_map(WGPUMapAsyncStatus status, WGPUStringView message, void *u1, void *u2) {
    (void)u2;
    map_res *r = u1;
    r->status = status;
    if (status != WGPUMapAsyncStatus_Success) sv_copy(r->msg, sizeof r->msg, message);
    r->done = 1;
}

/* Waits for the callback that fills r; its failure (`failed`: what went
 * wrong) becomes the error, RLX_ERR_DEVICE_LOST when it says so. */
static rlx_status wait_result(wg_backend *b, map_res *r, const char *what, const char *failed) {
    RLX_TRY(wg_wait(b, &r->done, what));
    if (r->status != WGPUMapAsyncStatus_Success && says_lost(r->msg)) mark_lost(b->sh, r->msg);
    if (r->status != WGPUMapAsyncStatus_Success)
        return rlx_fail(b->sh->lost ? RLX_ERR_DEVICE_LOST : RLX_ERR_DEVICE, "%s: %s: %s", what, failed, r->msg);
    return RLX_OK;
}

rlx_status wg_map_read(wg_backend *b, WGPUBuffer buf, uint64_t size, const char *what) {
    map_res r;
    memset(&r, 0, sizeof r);
    WGPUBufferMapCallbackInfo cb = { .mode = WGPUCallbackMode_AllowProcessEvents, .callback = on_map, .userdata1 = &r };
    wgpuBufferMapAsync(buf, WGPUMapMode_Read, 0, (size_t)size, cb);
    return wait_result(b, &r, what, "mapping the staging buffer failed");
}

static void on_work_done(WGPUQueueWorkDoneStatus status, WGPUStringView message, void *u1, void *u2) {
    (void)u2;
    map_res *r = u1;
    r->status = status == WGPUQueueWorkDoneStatus_Success ? WGPUMapAsyncStatus_Success : WGPUMapAsyncStatus_Error;
    if (status != WGPUQueueWorkDoneStatus_Success) sv_copy(r->msg, sizeof r->msg, message);
    r->done = 1;
}

rlx_status wg_queue_wait(wg_backend *b, const char *what) {
    map_res r;
    memset(&r, 0, sizeof r);
    WGPUQueueWorkDoneCallbackInfo cb = { .mode = WGPUCallbackMode_AllowProcessEvents, .callback = on_work_done,
                                          .userdata1 = &r };
    wgpuQueueOnSubmittedWorkDone(b->queue, cb);
    return wait_result(b, &r, what, "the queue did not finish");
}

/* ------------------------------------------------------------ pipelines */

/* Shader runtime checks (webgpu_device.h, README.md "Runtime checks"). */
typedef WGPUShaderModule (*trusted_fn)(WGPUDevice, WGPUShaderModuleDescriptor const *, WGPUShaderRuntimeChecks);
static trusted_fn g_trusted;
static atomic_bool g_trusted_hidden;
static pthread_once_t g_trusted_once = PTHREAD_ONCE_INIT;

static void trusted_lookup(void) {
    /* the library that exports wgpuDeviceCreateShaderModule, which every
     * WebGPU implementation rlx links against has */
    WGPUShaderModule (*anchor)(WGPUDevice, WGPUShaderModuleDescriptor const *) = wgpuDeviceCreateShaderModule;
    const void *a;
    memcpy(&a, &anchor, sizeof a);
    void *f = rlx_library_symbol(a, "wgpuDeviceCreateShaderModuleTrusted");
    memcpy(&g_trusted, &f, sizeof g_trusted);
}

static trusted_fn trusted_entry(void) {
    pthread_once(&g_trusted_once, trusted_lookup);
    return atomic_load(&g_trusted_hidden) ? NULL : g_trusted;
}

bool wg_trusted_available(void) { return trusted_entry() != NULL; }

void wg_trusted_hide_for_test(bool hide) { atomic_store(&g_trusted_hidden, hide); }

bool wg_source_audited(const char *src) {
    static const char tag[] = "//!audited";
    for (const char *p = src; p && *p; p += strcspn(p, "\n"), p += *p == '\n')
        if (strncmp(p, tag, sizeof tag - 1) == 0) return true;
    return false;
}

/* The mode of gpu.runtime_checks: 0 auto (the default, also without
 * options), 1 on (all checked), 2 off. */
static int checks_mode(const wg_backend *b) {
    const char *m = b->caps.cfg ? b->caps.cfg->gpu_runtime_checks : NULL;
    return m && strcmp(m, "on") == 0 ? 1 : m && strcmp(m, "off") == 0 ? 2 : 0;
}

/* Whether the dispatch's module is created without runtime checks:
 * gpu.runtime_checks "off", or "auto" and the kernel audited, and the
 * WebGPU library has the entry point (wg_trusted_available). */
static bool wg_dispatch_unchecked(const wg_backend *b, const wg_dispatch *d) {
    int mode = checks_mode(b);
    if (mode == 1 || !wg_trusted_available()) return false;
    if (mode == 2) return true;
    if (d->source) return wg_source_audited(d->source);
    return wg_source_audited(wg_wgsl_source(d->kernel));
}

bool wg_pipeline_unchecked(const wg_backend *b, WGPUComputePipeline pipe) {
    for (size_t i = 0; pipe && i < b->sh->n_pipes; i++)
        if (b->sh->pipes[i].pipe == pipe) return b->sh->pipes[i].unchecked;
    return false;
}

void wg_runtime_checks_note(const wg_backend *b, size_t n, size_t n_unchecked, char *out, size_t cap) {
    static const char *const k_mode[3] = { "auto", "on", "off" };
    int mode = checks_mode(b);
    if (!wg_trusted_available())
        snprintf(out, cap, "all %zu pipeline%s checked (gpu.runtime_checks=%s, but the WebGPU library has no "
                           "wgpuDeviceCreateShaderModuleTrusted)", n, n == 1 ? "" : "s", k_mode[mode]);
    else
        snprintf(out, cap, "%zu of %zu pipeline%s without runtime checks (gpu.runtime_checks=%s%s)", n_unchecked, n,
                 n == 1 ? "" : "s", k_mode[mode],
                 mode == 0 ? ": audited kernels" : mode == 2 ? ": every kernel, for measurements only" : "");
}

static int find_kernel(const char *name) {
    for (size_t i = 0; i < rlx_wgsl_source_count; i++)
        if (rlx_wgsl_sources[i].name && strcmp(rlx_wgsl_sources[i].name, name) == 0) return (int)i;
    return -1;
}

static bool same_spec(const wg_pipeline *p, const wg_dispatch *d) {
    if (p->n_spec != d->n_spec) return false;
    for (int i = 0; i < d->n_spec; i++)
        if (strcmp(p->spec_name[i], d->spec_name[i]) != 0 || p->spec_val[i] != d->spec_val[i]) return false;
    return true;
}

rlx_status wg_pipeline_get(wg_backend *be, const wg_dispatch *d, const char *what, WGPUComputePipeline *out) {
    wg_shared *b = be->sh;
    *out = NULL;
    int k = d->source ? -1 : find_kernel(d->kernel);
    if (!d->source && k < 0) return rlx_fail(RLX_ERR_INTERNAL, "%s: WGSL kernel '%s' is not embedded", what, d->kernel);
    if ((unsigned)d->elem >= WG_ELEM_COUNT || (d->elem == WG_ELEM_F16 && !b->has_f16))
        return rlx_fail(RLX_ERR_INTERNAL, "%s: kernel '%s' instantiated for an element type the device lacks", what,
                        d->kernel);
    bool bad = wg_fault_take(WG_FAULT_SHADER); /* tests: compile WGSL that does not parse */
    /* an audited kernel (or gpu.runtime_checks=off) on a library with the
     * trusted entry point: a module without naga's runtime checks */
    trusted_fn trusted = wg_dispatch_unchecked(be, d) ? trusted_entry() : NULL;
    bool unchecked = trusted != NULL;
    for (size_t i = 0; i < b->n_pipes && !bad; i++) {
        const wg_pipeline *p = &b->pipes[i];
        bool same = d->source ? (p->source && strcmp(p->source, d->source) == 0) : p->kernel == k;
        if (same && p->elem == d->elem && p->unchecked == unchecked && same_spec(p, d)) {
            RLX_TRY(wg_params_check(&p->layout, d, what));
            *out = p->pipe;
            return RLX_OK;
        }
    }
    RLX_TRY(RLX_GROW(b->pipes, b->cap_pipes, b->n_pipes + 1));
    /* the text compiled: the prelude (element type), the Params struct
     * from its declaration, the //!include snippets pasted in; the
     * declaration is checked against what the lowering wrote before
     * anything is created */
    char *code = NULL, *own = NULL;
    wg_layout lay;
    rlx_status st = wg_params_expand(d->kernel, d->source ? d->source : rlx_wgsl_sources[k].source, d->elem, &code, &lay);
    if (!st) st = wg_params_check(&lay, d, what);
    if (!st && d->source && !(own = rlx_strdup(d->source))) st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    if (!st && bad) {
        static const char k_junk[] = "\n@@ not WGSL: an injected fault @@\n";
        char *c2 = realloc(code, strlen(code) + sizeof k_junk);
        if (c2) strcat(c2, k_junk), code = c2;
        else st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (st) {
        free(code);
        free(own);
        return st;
    }
    double t0 = rlx_now_seconds();
    char ctx[400];
    snprintf(ctx, sizeof ctx, "%s: creating the pipeline of kernel '%s'", what, d->kernel);
    wg_scope_push(be);
    /* embedded kernels share one module per file and element type;
     * generated source gets a module of its own, owned by its pipeline */
    size_t mk = ((size_t)k * WG_ELEM_COUNT + (size_t)d->elem) * 2 + unchecked;
    WGPUShaderModule module = d->source || bad ? NULL : b->modules[mk];
    if (!module) {
        WGPUShaderSourceWGSL src;
        memset(&src, 0, sizeof src);
        src.chain.sType = WGPUSType_ShaderSourceWGSL;
        src.code = wg_sv(code);
        WGPUShaderModuleDescriptor sd;
        memset(&sd, 0, sizeof sd);
        sd.nextInChain = &src.chain;
        sd.label = wg_sv(d->kernel);
        /* an audited kernel (or gpu.runtime_checks=off): no bounds checks,
         * no loop bounding (wgpu.h, WGPUShaderRuntimeChecks) */
        module = trusted ? trusted(b->dev, &sd, WGPUShaderRuntimeChecks_None) : wgpuDeviceCreateShaderModule(b->dev, &sd);
        if (!d->source && !bad) b->modules[mk] = module;
    }
    WGPUConstantEntry ce[WG_MAX_SPEC];
    memset(ce, 0, sizeof ce);
    for (int i = 0; i < d->n_spec; i++) {
        ce[i].key = wg_sv(d->spec_name[i]);
        ce[i].value = d->spec_val[i];
    }
    WGPUComputePipelineDescriptor pd;
    memset(&pd, 0, sizeof pd);
    pd.label = wg_sv(d->kernel);
    pd.compute.module = module;
    pd.compute.entryPoint = wg_sv("main");
    pd.compute.constantCount = (size_t)d->n_spec;
    pd.compute.constants = d->n_spec ? ce : NULL;
    WGPUComputePipeline pipe = wgpuDeviceCreateComputePipeline(b->dev, &pd);
    st = wg_scope_pop(be, ctx);
    if (!st && bad) st = rlx_fail(RLX_ERR_INTERNAL, "%s: the device accepted WGSL that does not parse", ctx);
    b->pipelines_s += rlx_now_seconds() - t0;
    if (st || !pipe) {
        if (pipe) wgpuComputePipelineRelease(pipe);
        /* a module that failed to compile is not kept */
        if (module) wgpuShaderModuleRelease(module);
        if (!d->source && !bad) b->modules[mk] = NULL;
        free(own);
        if (be->caps.cfg->gpu_trace && d->source) rlx_log(RLX_LOG_DEBUG, "webgpu: generated kernel '%s':\n%s", d->kernel, code);
        free(code);
        return st ? st : rlx_fail(RLX_ERR_DEVICE, "%s: no pipeline returned", ctx);
    }
    free(code);
    wg_pipeline *p = &b->pipes[b->n_pipes++];
    memset(p, 0, sizeof *p);
    p->kernel = k;
    p->elem = d->elem;
    p->layout = lay;
    p->source = own;
    p->module = d->source ? module : NULL;
    p->n_spec = d->n_spec;
    for (int i = 0; i < d->n_spec; i++) {
        p->spec_name[i] = d->spec_name[i];
        p->spec_val[i] = d->spec_val[i];
    }
    p->unchecked = trusted != NULL;
    p->pipe = pipe;
    b->pipes_created++;
    b->pipes_unchecked += p->unchecked;
    if (be->caps.cfg->gpu_trace) /* which kernels a new shape or model compiles (bench/shape_pipelines) */
        rlx_log(RLX_LOG_DEBUG, "webgpu: pipeline %zu created: kernel '%s' (%s%s, %d override constants; %s)",
                b->pipes_created, d->kernel,
                d->elem == WG_ELEM_F16 ? "f16" : d->elem == WG_ELEM_I32 ? "i32" : d->elem == WG_ELEM_U32 ? "u32" : "f32",
                d->source ? ", generated" : "", d->n_spec,
                p->unchecked ? "no runtime checks: wgpuDeviceCreateShaderModuleTrusted"
                             : "runtime checks: wgpuDeviceCreateShaderModule");
    *out = pipe;
    return RLX_OK;
}
