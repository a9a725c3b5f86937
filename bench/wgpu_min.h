/* wgpu_min.h: the few wgpu-native calls that the developer probes on
 * wgpu-native alone (bench/coop_probe.c, bench/alu_rates.c) share: open
 * the high-performance adapter and a device with its limits, compile a
 * WGSL compute pipeline under a validation error scope, wait for a
 * callback. Header-only (static functions): each probe is one executable
 * of one .c file. Not part of rlx; rlx's own device code is
 * src/backend/webgpu/webgpu_device.c. */
#ifndef RLX_BENCH_WGPU_MIN_H
#define RLX_BENCH_WGPU_MIN_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <webgpu/webgpu.h>
#include <webgpu/wgpu.h>

/* A callback's outcome: done once it ran; status 0 on success; msg the
 * error text. */
typedef struct wm_waiter {
    int done;
    int status;
    char msg[2048];
} wm_waiter;

static inline void wm_copy_sv(char *dst, size_t cap, WGPUStringView s) {
    size_t n = s.data ? (s.length == WGPU_STRLEN ? strlen(s.data) : s.length) : 0;
    if (n >= cap) n = cap - 1;
    if (n) memcpy(dst, s.data, n);
    dst[n] = 0;
}

static inline void wm_on_adapter(WGPURequestAdapterStatus s, WGPUAdapter a, WGPUStringView m, void *u1, void *u2) {
    WGPUAdapter *out = u1;
    if (s == WGPURequestAdapterStatus_Success) *out = a;
    else fprintf(stderr, "%s: no adapter: %.*s\n", (const char *)u2, (int)m.length, m.data ? m.data : "");
}

static inline void wm_on_device(WGPURequestDeviceStatus s, WGPUDevice d, WGPUStringView m, void *u1, void *u2) {
    WGPUDevice *out = u1;
    if (s == WGPURequestDeviceStatus_Success) *out = d;
    else fprintf(stderr, "%s: no device: %.*s\n", (const char *)u2, (int)m.length, m.data ? m.data : "");
}

static inline void wm_on_scope(WGPUPopErrorScopeStatus st, WGPUErrorType t, WGPUStringView m, void *u1, void *u2) {
    (void)st;
    (void)u2;
    wm_waiter *w = u1;
    w->status = (int)t;
    if (t != WGPUErrorType_NoError) wm_copy_sv(w->msg, sizeof w->msg, m);
    w->done = 1;
}

static inline void wm_on_map(WGPUMapAsyncStatus s, WGPUStringView m, void *u1, void *u2) {
    (void)u2;
    wm_waiter *w = u1;
    w->status = s == WGPUMapAsyncStatus_Success ? 0 : 1;
    if (w->status) wm_copy_sv(w->msg, sizeof w->msg, m);
    w->done = 1;
}

static inline void wm_wait(WGPUInstance inst, WGPUDevice dev, wm_waiter *w) {
    for (long i = 0; i < 1000000L && !w->done; i++) {
        wgpuInstanceProcessEvents(inst);
        if (!w->done) wgpuDevicePoll(dev, 1, NULL);
    }
}

/* Pops the device's error scope into *sc (status 0: no error; else the
 * message) and waits for the answer. */
static inline void wm_pop_scope(WGPUInstance inst, WGPUDevice dev, wm_waiter *sc) {
    memset(sc, 0, sizeof *sc);
    WGPUPopErrorScopeCallbackInfo pc;
    memset(&pc, 0, sizeof pc);
    pc.mode = WGPUCallbackMode_AllowProcessEvents;
    pc.callback = wm_on_scope;
    pc.userdata1 = sc;
    wgpuDevicePopErrorScope(dev, pc);
    wm_wait(inst, dev, sc);
}

/* The high-performance adapter, or NULL (the reason on stderr, prefixed
 * with `tool`). */
static inline WGPUAdapter wm_adapter(WGPUInstance inst, const char *tool) {
    WGPUAdapter ad = NULL;
    WGPURequestAdapterOptions ao;
    memset(&ao, 0, sizeof ao);
    ao.powerPreference = WGPUPowerPreference_HighPerformance;
    WGPURequestAdapterCallbackInfo ac;
    memset(&ac, 0, sizeof ac);
    ac.mode = WGPUCallbackMode_AllowProcessEvents;
    ac.callback = wm_on_adapter;
    ac.userdata1 = &ad;
    ac.userdata2 = (void *)tool;
    wgpuInstanceRequestAdapter(inst, &ao, ac);
    wgpuInstanceProcessEvents(inst);
    return ad;
}

/* A device of `ad` with the adapter's own limits and the `nf` features
 * `feat`, or NULL (the reason on stderr). */
static inline WGPUDevice wm_device(WGPUInstance inst, WGPUAdapter ad, const WGPUFeatureName *feat, size_t nf,
                            const char *tool) {
    WGPULimits lim;
    memset(&lim, 0, sizeof lim);
    wgpuAdapterGetLimits(ad, &lim);
    WGPUDeviceDescriptor dd;
    memset(&dd, 0, sizeof dd);
    dd.requiredLimits = &lim;
    dd.requiredFeatureCount = nf;
    dd.requiredFeatures = feat;
    WGPUDevice dev = NULL;
    WGPURequestDeviceCallbackInfo dc;
    memset(&dc, 0, sizeof dc);
    dc.mode = WGPUCallbackMode_AllowProcessEvents;
    dc.callback = wm_on_device;
    dc.userdata1 = &dev;
    dc.userdata2 = (void *)tool;
    wgpuAdapterRequestDevice(ad, &dd, dc);
    wgpuInstanceProcessEvents(inst);
    return dev;
}

/* The compute pipeline of WGSL `src` (entry point main), or NULL with
 * the validation message in err (cap bytes, newlines as spaces). */
static inline WGPUComputePipeline wm_pipeline(WGPUInstance inst, WGPUDevice dev, const char *src, char *err, size_t cap) {
    wgpuDevicePushErrorScope(dev, WGPUErrorFilter_Validation);
    WGPUShaderSourceWGSL w;
    memset(&w, 0, sizeof w);
    w.chain.sType = WGPUSType_ShaderSourceWGSL;
    w.code.data = src;
    w.code.length = WGPU_STRLEN;
    WGPUShaderModuleDescriptor sd;
    memset(&sd, 0, sizeof sd);
    sd.nextInChain = &w.chain;
    WGPUShaderModule sm = wgpuDeviceCreateShaderModule(dev, &sd);
    WGPUComputePipelineDescriptor pd;
    memset(&pd, 0, sizeof pd);
    pd.compute.module = sm;
    pd.compute.entryPoint.data = "main";
    pd.compute.entryPoint.length = WGPU_STRLEN;
    WGPUComputePipeline pipe = wgpuDeviceCreateComputePipeline(dev, &pd);
    wm_waiter sc;
    wm_pop_scope(inst, dev, &sc);
    if (sm) wgpuShaderModuleRelease(sm);
    if (sc.status != WGPUErrorType_NoError || !pipe) {
        for (char *c = sc.msg; *c; c++)
            if (*c == '\n') *c = ' ';
        snprintf(err, cap, "%s", sc.msg[0] ? sc.msg : "no pipeline");
        if (pipe) wgpuComputePipelineRelease(pipe);
        return NULL;
    }
    return pipe;
}

#endif
