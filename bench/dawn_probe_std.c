/* dawn_probe's path for libraries with the final webgpu.h ABI: Dawn of 2025
 * on (and wgpu-native, which the build uses to test this path). Compiled
 * against third_party/wgpu's webgpu.h (the standard header; its standard
 * structs have the layouts of Dawn's December 2025 header). Dawn's own
 * extensions are declared here with the numbers of that header: toggles,
 * chromium-experimental-subgroup-matrix (feature 0x50035) and its
 * configurations (AdapterPropertiesSubgroupMatrixConfigs, sType 0x5003B).
 * Dawn renumbers experimental features now and then: for a build far from
 * December 2025 check those two numbers against its header. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <webgpu/webgpu.h>

#include "dawn_probe.h"

enum {
    DS_F_TS_INSIDE = 0x50003,       /* chromium-experimental-timestamp-query-inside-passes */
    DS_F_SUBGROUP_MATRIX = 0x50034, /* chromium-experimental-subgroup-matrix (Oct 2026; 0x50035 in Dec 2025) */
    DS_STYPE_TOGGLES = 0x5000A,
    DS_STYPE_SM_CONFIGS = 0x5003B,
};
/* WGPUSubgroupMatrixComponentType */
enum { DS_SM_F32 = 1, DS_SM_F16 = 2, DS_SM_U32 = 3, DS_SM_I32 = 4, DS_SM_U8 = 5, DS_SM_I8 = 6 };

typedef struct ds_toggles { /* WGPUDawnTogglesDescriptor */
    WGPUChainedStruct chain;
    size_t enabled_count;
    const char *const *enabled;
    size_t disabled_count;
    const char *const *disabled;
} ds_toggles;

/* WGPUSubgroupMatrixConfig: component, result, M, N, K (Dec 2025), then
 * min and max subgroup size (Oct 2026); read by ds_sm_read */
typedef struct ds_sm_config { uint32_t component, result, m, n, k, min_sg, max_sg; } ds_sm_config;

typedef struct ds_sm_configs { /* WGPUAdapterPropertiesSubgroupMatrixConfigs */
    WGPUChainedStruct chain;
    size_t count;
    const uint32_t *configs; /* count records of 5 or 7 words */
} ds_sm_configs;

static bool ds_sm_sane(const uint32_t *w, size_t count, size_t stride) {
    for (size_t i = 0; i < count; i++) {
        const uint32_t *c = w + i * stride;
        if (c[0] < 1 || c[0] > 6 || c[1] < 1 || c[1] > 6) return false;
        for (int j = 2; j < 5; j++)
            if (c[j] < 2 || c[j] > 64 || (c[j] & (c[j] - 1))) return false;
        if (stride == 7 && (c[5] > c[6] || c[6] > 1024)) return false;
    }
    return true;
}

/* The record size of this build's configs: 7 words when every record reads
 * sanely so, else 5 when they do so, else 0 (unknown: not used) */
static size_t ds_sm_stride(const ds_sm_configs *smc) {
    if (ds_sm_sane(smc->configs, smc->count, 7)) return 7;
    if (ds_sm_sane(smc->configs, smc->count, 5)) return 5;
    return 0;
}

static ds_sm_config ds_sm_read(const ds_sm_configs *smc, size_t stride, size_t i) {
    const uint32_t *c = smc->configs + i * stride;
    return (ds_sm_config){c[0], c[1], c[2], c[3], c[4], stride == 7 ? c[5] : 0, stride == 7 ? c[6] : 0};
}

static struct {
#define F(n) WGPUProc##n n;
    DP_COMMON_ENTRY_POINTS(F)
#undef F
    WGPUProcInstanceRequestAdapter InstanceRequestAdapter;
    WGPUProcAdapterRequestDevice AdapterRequestDevice;
    WGPUProcBufferMapAsync BufferMapAsync;
    void (*SmConfigsFreeMembers)(ds_sm_configs); /* Dawn only, optional */
    void (*DeviceTick)(WGPUDevice);               /* Dawn only: tells Dawn apart */
    /* wgpudawn's feature name lookup (nonzero when known), optional */
    int (*FeatureInfo)(int feature, const char **name, const char **description, int *experimental);
} S;

static bool load_std(dp_sym_fn sym, void *lib) {
#define E(n) {"wgpu" #n, (void **)&S.n},
    const dp_sym t[] = {DP_COMMON_ENTRY_POINTS(E) E(InstanceRequestAdapter) E(AdapterRequestDevice)
                            E(BufferMapAsync)};
#undef E
    bool ok = dp_resolve(sym, lib, t, sizeof t / sizeof t[0], "the final webgpu.h ABI either");
    *(void **)&S.SmConfigsFreeMembers = sym(lib, "wgpuAdapterPropertiesSubgroupMatrixConfigsFreeMembers");
    *(void **)&S.DeviceTick = sym(lib, "wgpuDeviceTick");
    *(void **)&S.FeatureInfo = sym(lib, "wgpu_dawn_feature_info");
    return ok;
}

/* the subgroup-matrix feature's number in this build: by name where the
 * library can name features, else $RLX_DAWN_SM_FEATURE, else DS_F_SUBGROUP_MATRIX */
static uint32_t sm_feature(void) {
    if (S.FeatureInfo) {
        for (uint32_t f = 0x50000; f < 0x50100; f++) {
            const char *name = NULL, *desc = NULL;
            int exp = 0;
            if (S.FeatureInfo((int)f, &name, &desc, &exp) && name &&
                !strcmp(name, "chromium-experimental-subgroup-matrix"))
                return f;
        }
    }
    const char *e = getenv("RLX_DAWN_SM_FEATURE");
    return e ? (uint32_t)strtoul(e, NULL, 0) : DS_F_SUBGROUP_MATRIX;
}

static const char *std_feature_name(uint32_t f) {
    const char *name = NULL, *desc = NULL;
    int exp = 0;
    if (S.FeatureInfo && S.FeatureInfo((int)f, &name, &desc, &exp) && name) return name;
    static const char *std_names[] = {
        NULL, "core-features-and-limits", "depth-clip-control", "depth32float-stencil8",
        "texture-compression-bc", "texture-compression-bc-sliced-3d", "texture-compression-etc2",
        "texture-compression-astc", "texture-compression-astc-sliced-3d", "timestamp-query",
        "indirect-first-instance", "shader-f16", "rg11b10ufloat-renderable", "bgra8unorm-storage",
        "float32-filterable", "float32-blendable", "clip-distances", "dual-source-blending",
        "subgroups", "texture-formats-tier1", "texture-formats-tier2", "primitive-index",
        "texture-component-swizzle",
    };
    if (f < sizeof std_names / sizeof std_names[0] && std_names[f]) return std_names[f];
    if (f == DS_F_TS_INSIDE) return "chromium-experimental-timestamp-query-inside-passes (Dawn)";
    if (f == sm_feature()) return "chromium-experimental-subgroup-matrix (if this Dawn numbers it so)";
    if (f >= 0x30000 && f < 0x40000) return "(wgpu-native feature)";
    if (f >= 0x50000 && f < 0x60000) return "(Dawn feature)";
    return "(unknown)";
}

static const char *std_backend(WGPUBackendType b) {
    switch (b) {
    case WGPUBackendType_Vulkan: return "vulkan";
    case WGPUBackendType_OpenGL: return "opengl";
    case WGPUBackendType_OpenGLES: return "opengles";
    case WGPUBackendType_Null: return "null";
    default: return "other";
    }
}

static const char *std_adapter_type(WGPUAdapterType t) {
    switch (t) {
    case WGPUAdapterType_DiscreteGPU: return "discrete";
    case WGPUAdapterType_IntegratedGPU: return "integrated";
    case WGPUAdapterType_CPU: return "cpu";
    default: return "unknown";
    }
}

/* ------------------------------------------------ waiting */

static void std_on_adapter(WGPURequestAdapterStatus st, WGPUAdapter a, WGPUStringView m, void *u1, void *u2) {
    (void)u2;
    dp_done(u1, (uint32_t)st, a, m.data, m.length);
}

static void std_on_device(WGPURequestDeviceStatus st, WGPUDevice d, WGPUStringView m, void *u1, void *u2) {
    (void)u2;
    dp_done(u1, (uint32_t)st, d, m.data, m.length);
}

static void std_on_map(WGPUMapAsyncStatus st, WGPUStringView m, void *u1, void *u2) {
    (void)u2;
    dp_done(u1, (uint32_t)st, NULL, m.data, m.length);
}

/* The line of an error message worth one line of output: Tint's first
 * "error:" line (the message starts with "Error while parsing WGSL:" and
 * may hold warnings before it, candidate lists after), its location kept;
 * else the first line. */
static void error_line(const char *m, size_t len, char *out, size_t cap) {
    const char *end = m + len, *pick = NULL, *line = m;
    while (line < end && !pick) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *le = nl ? nl : end;
        for (const char *p = line; p + 7 <= le; p++)
            if (memcmp(p, " error: ", p + 8 <= le ? 8 : 7) == 0) {
                pick = line;
                break;
            }
        line = nl ? nl + 1 : end;
    }
    if (!pick) pick = m;
    const char *le = memchr(pick, '\n', (size_t)(end - pick));
    size_t n = (size_t)((le ? le : end) - pick);
    static const char prefix[] = "Error while parsing WGSL: ";
    if (n >= sizeof prefix - 1 && memcmp(pick, prefix, sizeof prefix - 1) == 0)
        pick += sizeof prefix - 1, n -= sizeof prefix - 1;
    snprintf(out, cap, "%.*s", (int)n, pick);
}

typedef struct std_ctx {
    WGPUInstance instance;
    WGPUDevice device;
    int errors;
    /* while sm_check tries a configuration: errors are counted, not
     * printed (a shader Dawn refuses cascades into more errors, each object
     * made from it invalid), and the first one's line is kept */
    bool quiet;
    char first[400];
} std_ctx;

static void std_on_error(WGPUDevice const *d, WGPUErrorType type, WGPUStringView m, void *u1, void *u2) {
    (void)d, (void)u2;
    std_ctx *ctx = u1;
    size_t len = dp_sv_len(m.data, m.length);
    ctx->errors++;
    if (ctx->quiet) {
        if (!ctx->first[0]) error_line(m.data ? m.data : "", m.data ? len : 0, ctx->first, sizeof ctx->first);
        return;
    }
    printf("  uncaptured error (type %u): %.*s\n", (unsigned)type, (int)len, m.data ? m.data : "");
}

static bool std_wait(WGPUInstance inst, dp_waiter *w) {
    for (long i = 0; i < 2000000 && !w->done; i++) S.InstanceProcessEvents(inst);
    return w->done;
}

/* ------------------------------------------------ compute */

static WGPUStringView sv(const char *s) { return (WGPUStringView){s, WGPU_STRLEN}; }

/* dp_run_fn on the final ABI */
static bool std_run(void *vctx, const char *wgsl, const void *a, const void *b, void *out, size_t bytes,
                    uint32_t groups) {
    std_ctx *ctx = vctx;
    int errors_before = ctx->errors;
    WGPUDevice dev = ctx->device;
    WGPUQueue q = S.DeviceGetQueue(dev);
    WGPUShaderSourceWGSL src = {.chain = {.sType = WGPUSType_ShaderSourceWGSL}, .code = sv(wgsl)};
    WGPUShaderModuleDescriptor md = {.nextInChain = &src.chain};
    WGPUShaderModule module = S.DeviceCreateShaderModule(dev, &md);
    WGPUComputePipelineDescriptor pd = {.compute = {.module = module, .entryPoint = sv("main")}};
    WGPUComputePipeline pipe = S.DeviceCreateComputePipeline(dev, &pd);
    S.InstanceProcessEvents(ctx->instance);
    if (ctx->errors != errors_before) {
        /* a refused shader: nothing made from it would be valid (and
           wgpu-native panics at the submit of an invalid command buffer) */
        S.ComputePipelineRelease(pipe);
        S.ShaderModuleRelease(module);
        S.QueueRelease(q);
        return false;
    }
    WGPUBuffer buf[3];
    for (int i = 0; i < 3; i++) {
        WGPUBufferDescriptor bd = {
            .usage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst | WGPUBufferUsage_CopySrc,
            .size = bytes};
        buf[i] = S.DeviceCreateBuffer(dev, &bd);
    }
    WGPUBufferDescriptor rd = {.usage = WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, .size = bytes};
    WGPUBuffer readback = S.DeviceCreateBuffer(dev, &rd);
    S.QueueWriteBuffer(q, buf[0], 0, a, bytes);
    S.QueueWriteBuffer(q, buf[1], 0, b, bytes);
    WGPUBindGroupLayout layout = S.ComputePipelineGetBindGroupLayout(pipe, 0);
    WGPUBindGroupEntry e[3];
    for (uint32_t i = 0; i < 3; i++) e[i] = (WGPUBindGroupEntry){.binding = i, .buffer = buf[i], .size = bytes};
    WGPUBindGroupDescriptor bgd = {.layout = layout, .entryCount = 3, .entries = e};
    WGPUBindGroup group = S.DeviceCreateBindGroup(dev, &bgd);
    WGPUCommandEncoder enc = S.DeviceCreateCommandEncoder(dev, NULL);
    WGPUComputePassEncoder pass = S.CommandEncoderBeginComputePass(enc, NULL);
    S.ComputePassEncoderSetPipeline(pass, pipe);
    S.ComputePassEncoderSetBindGroup(pass, 0, group, 0, NULL);
    S.ComputePassEncoderDispatchWorkgroups(pass, groups, 1, 1);
    S.ComputePassEncoderEnd(pass);
    S.CommandEncoderCopyBufferToBuffer(enc, buf[2], 0, readback, 0, bytes);
    WGPUCommandBuffer cmd = S.CommandEncoderFinish(enc, NULL);
    S.QueueSubmit(q, 1, &cmd);
    dp_waiter w = {0};
    WGPUBufferMapCallbackInfo cb = {.mode = WGPUCallbackMode_AllowProcessEvents, .callback = std_on_map,
                                    .userdata1 = &w};
    S.BufferMapAsync(readback, WGPUMapMode_Read, 0, bytes, cb);
    bool ok = std_wait(ctx->instance, &w) && w.status == WGPUMapAsyncStatus_Success;
    if (ok) {
        const void *p = S.BufferGetConstMappedRange(readback, 0, bytes);
        ok = p != NULL;
        if (p) memcpy(out, p, bytes);
        S.BufferUnmap(readback);
    } else if (ctx->quiet) {
        if (!ctx->first[0]) snprintf(ctx->first, sizeof ctx->first, "map failed: status %u: %s", w.status, w.message);
    } else {
        printf("  map failed: status %u: %s\n", w.status, w.message);
    }
    S.CommandBufferRelease(cmd);
    S.ComputePassEncoderRelease(pass);
    S.CommandEncoderRelease(enc);
    S.BindGroupRelease(group);
    S.BindGroupLayoutRelease(layout);
    for (int i = 0; i < 3; i++) S.BufferRelease(buf[i]);
    S.BufferRelease(readback);
    S.ComputePipelineRelease(pipe);
    S.ShaderModuleRelease(module);
    S.QueueRelease(q);
    return ok && ctx->errors == errors_before;
}

/* WGPUSubgroupMatrixComponentType's WGSL name, bytes per element in
 * memory and WGSL array element type of the buffer that holds it (8-bit
 * components sit four to a 32-bit word, subgroupMatrixLoad reads them from
 * array<u32> / array<i32> with offset and stride in 8-bit elements); NULL
 * for a type the check does not know */
static const char *sm_type(uint32_t t, uint32_t *bytes, const char **array_elem) {
    static const struct { const char *name, *elem; uint32_t bytes; } types[] = {
        {NULL, NULL, 0}, {"f32", "f32", 4}, {"f16", "f16", 2}, {"u32", "u32", 4},
        {"i32", "i32", 4}, {"u8", "u32", 1}, {"i8", "i32", 1},
    };
    if (t < 1 || t > 6) return NULL;
    *bytes = types[t].bytes;
    *array_elem = types[t].elem;
    return types[t].name;
}

/* element i of a buffer of component type t as a double (small integers) */
static double sm_get(const uint8_t *buf, uint32_t t, uint32_t i) {
    switch (t) {
    case DS_SM_F32: { float v; memcpy(&v, buf + 4 * i, 4); return v; }
    case DS_SM_F16: { uint16_t h; memcpy(&h, buf + 2 * i, 2); return dp_from_half(h); }
    case DS_SM_U32: { uint32_t v; memcpy(&v, buf + 4 * i, 4); return v; }
    case DS_SM_I32: { int32_t v; memcpy(&v, buf + 4 * i, 4); return v; }
    case DS_SM_U8: return buf[i];
    default: return (int8_t)buf[i];
    }
}

static void sm_put(uint8_t *buf, uint32_t t, uint32_t i, double v) {
    switch (t) {
    case DS_SM_F32: { float f = (float)v; memcpy(buf + 4 * i, &f, 4); break; }
    case DS_SM_F16: { uint16_t h = dp_to_half((float)v); memcpy(buf + 2 * i, &h, 2); break; }
    case DS_SM_U32: { uint32_t u = (uint32_t)v; memcpy(buf + 4 * i, &u, 4); break; }
    case DS_SM_I32: { int32_t n = (int32_t)v; memcpy(buf + 4 * i, &n, 4); break; }
    case DS_SM_U8: buf[i] = (uint8_t)v; break;
    default: buf[i] = (uint8_t)(int8_t)v; break;
    }
}

/* WGSL of C (M x N) = A (M x K) x B (K x N), all row-major and packed,
 * with one subgroupMatrixMultiply in a workgroup of sg invocations. Dawn
 * spells load/store two ways: `subgroupMatrixLoad<T>(p, offset, col_major,
 * stride)` (2025; wgpudawn 0.32's Dawn still takes it, as a deprecated
 * builtin) and `subgroupMatrixLoad<T, row_major>(p, offset, stride)` (2026);
 * `templ` picks the second. */
static void sm_wgsl(char *w, size_t cap, const ds_sm_config *c, uint32_t sg, bool templ) {
    uint32_t cb, rb;
    const char *ae = NULL, *re = NULL;
    const char *ct = sm_type(c->component, &cb, &ae), *rt = sm_type(c->result, &rb, &re);
    bool f16 = c->component == DS_SM_F16 || c->result == DS_SM_F16;
    const char *lo = templ ? ", row_major>" : ">", *la = templ ? "" : "false, ";
    snprintf(w, cap,
             "%senable chromium_experimental_subgroup_matrix;\n"
             "@group(0) @binding(0) var<storage, read> a: array<%s>;\n"
             "@group(0) @binding(1) var<storage, read> b: array<%s>;\n"
             "@group(0) @binding(2) var<storage, read_write> c: array<%s>;\n"
             "@compute @workgroup_size(%u) fn main() {\n"
             "  let l = subgroupMatrixLoad<subgroup_matrix_left<%s, %u, %u>%s(&a, 0, %s%u);\n"
             "  let r = subgroupMatrixLoad<subgroup_matrix_right<%s, %u, %u>%s(&b, 0, %s%u);\n"
             "  let p: subgroup_matrix_result<%s, %u, %u> = subgroupMatrixMultiply<%s>(l, r);\n"
             "  subgroupMatrixStore%s(&c, 0, p, %s%u);\n}\n",
             f16 ? "enable f16;\n" : "", ae, ae, re, sg, ct, c->k, c->m, lo,
             la, c->k, ct, c->n, c->k, lo, la, c->n, rt, c->n, c->m, rt, templ ? "<row_major>" : "", la,
             c->n);
}

/* One workgroup of sg invocations computes C (M x N) = A (M x K) x B
 * (K x N), row-major, with one subgroupMatrixMultiply of configuration c;
 * operands are pseudo-random small integers (8-bit: the whole range, i8
 * negative too), so the result must be exact. Prints one line: ok,
 * FAILED with the first mismatch, refused with Dawn's first error (the
 * errors of the objects made from the refused shader only counted), or
 * why it was not tried. */
static void sm_check(std_ctx *ctx, const ds_sm_config *c, uint32_t sg) {
    uint32_t cb = 0, rb = 0;
    const char *ae = NULL, *re = NULL;
    const char *ct = sm_type(c->component, &cb, &ae), *rt = sm_type(c->result, &rb, &re);
    uint32_t m = c->m, n = c->n, k = c->k;
    printf("  subgroup matrix M%u N%u K%u %s -> %s: ", m, n, k, ct ? ct : "?", rt ? rt : "?");
    if (!ct || !rt || m > 64 || n > 64 || k > 64) {
        printf("not tried (component types %u -> %u, sizes up to 64)\n", c->component, c->result);
        return;
    }
    if (cb == 1 && (k % 4 || n % 4)) {
        printf("not tried (8-bit rows must fill whole words: K and N multiples of 4)\n");
        return;
    }
    enum { MAXE = 64 * 64 };
    static uint8_t a[MAXE * 4], b[MAXE * 4], out[MAXE * 4];
    static double fa[MAXE], fb[MAXE];
    /* 8-bit: all of u8 (values over 127) or i8 (negative); else 0..3,
       whose sums of products are exact in f16 and f32 */
    uint32_t seed = m * 131u + n * 17u + k + c->component * 7919u;
    for (uint32_t i = 0; i < MAXE; i++) {
        seed = seed * 1664525u + 1013904223u;
        uint32_t r = seed >> 24;
        fa[i] = c->component == DS_SM_U8 ? r : c->component == DS_SM_I8 ? (double)r - 128 : r % 4;
        seed = seed * 1664525u + 1013904223u;
        r = seed >> 24;
        fb[i] = c->component == DS_SM_U8 ? r : c->component == DS_SM_I8 ? (double)r - 128 : r % 4;
    }
    memset(a, 0, sizeof a), memset(b, 0, sizeof b), memset(out, 0xA5, sizeof out); /* poison */
    for (uint32_t i = 0; i < m * k; i++) sm_put(a, c->component, i, fa[i]);
    for (uint32_t i = 0; i < k * n; i++) sm_put(b, c->component, i, fb[i]);
    /* one size for the three buffers: the largest, in whole words */
    size_t bytes = (size_t)m * k * cb;
    if ((size_t)k * n * cb > bytes) bytes = (size_t)k * n * cb;
    if ((size_t)m * n * rb > bytes) bytes = (size_t)m * n * rb;
    bytes = (bytes + 15) / 16 * 16;
    char wgsl[2000], why[400] = "", why2[400] = "";
    sm_wgsl(wgsl, sizeof wgsl, c, sg, true);
    /* Dawn's errors are kept, not printed: a refused configuration is one
     * line (its first error), not the cascade of the objects made from it */
    ctx->quiet = true;
    ctx->first[0] = 0;
    int e0 = ctx->errors;
    bool templ = true, ran = std_run(ctx, wgsl, a, b, out, bytes, 1);
    int n_err = ctx->errors - e0;
    snprintf(why, sizeof why, "%s", ctx->first);
    if (!ran) { /* a Dawn of 2025 that knows only the argument spelling */
        memset(out, 0xA5, sizeof out);
        sm_wgsl(wgsl, sizeof wgsl, c, sg, false);
        templ = false;
        ctx->first[0] = 0;
        ran = std_run(ctx, wgsl, a, b, out, bytes, 1);
        snprintf(why2, sizeof why2, "%s", ctx->first);
    }
    ctx->quiet = false;
    if (!ran) {
        printf("refused: %s (%d more error%s from objects made from it; the col_major-argument spelling: %s)\n",
               why[0] ? why : "no error message", n_err > 1 ? n_err - 1 : 0, n_err == 2 ? "" : "s",
               !why2[0] || strcmp(why, why2) == 0 ? "the same" : why2);
        return;
    }
    uint32_t bad = 0, first = 0;
    double first_got = 0, first_want = 0;
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t j = 0; j < n; j++) {
            double want = 0;
            for (uint32_t q = 0; q < k; q++) want += fa[i * k + q] * fb[q * n + j];
            double got = sm_get(out, c->result, i * n + j);
            if (got != want && !bad++) first = i * n + j, first_got = got, first_want = want;
        }
    if (!bad)
        printf("ok (0 of %u wrong)%s\n", m * n, templ ? "" : " (col_major-argument spelling)");
    else
        printf("FAILED (%u of %u wrong; first C[%u][%u] = %.0f, want %.0f)%s\n", bad, m * n, first / n, first % n,
               first_got, first_want, templ ? "" : " (col_major-argument spelling)");
}

/* Configurations to try besides the listed ones, from
 * $RLX_DAWN_SM_CONFIGS = "M,N,K,component,result;..." (component types by
 * number: 1 f32, 2 f16, 3 u32, 4 i32, 5 u8, 6 i8): how the shaders of
 * configurations a GPU elsewhere lists are put through Dawn's validation on
 * its null backend, which lists none. At most cap; malformed entries are
 * skipped with a note. */
static size_t sm_extra_configs(ds_sm_config *out, size_t cap) {
    const char *e = getenv("RLX_DAWN_SM_CONFIGS");
    size_t n = 0;
    while (e && *e && n < cap) {
        ds_sm_config c = {0};
        int used = 0;
        if (sscanf(e, "%u,%u,%u,%u,%u%n", &c.m, &c.n, &c.k, &c.component, &c.result, &used) == 5 && c.m &&
            c.n && c.k)
            out[n++] = c;
        else
            printf("  RLX_DAWN_SM_CONFIGS: skipped \"%.20s\"\n", e);
        const char *semi = strchr(e + used, ';');
        e = semi ? semi + 1 : NULL;
    }
    return n;
}

/* ------------------------------------------------ the probe */

static const char *std_toggles_on[] = {"allow_unsafe_apis"};

static void std_describe(WGPUAdapter a, bool dawn, ds_sm_configs *smc) {
    WGPUAdapterInfo info = {0};
    bool has_sm = dawn && S.AdapterHasFeature(a, (WGPUFeatureName)sm_feature());
    *smc = (ds_sm_configs){{NULL, (WGPUSType)DS_STYPE_SM_CONFIGS}, 0, NULL};
    if (has_sm) info.nextInChain = &smc->chain;
    if (S.AdapterGetInfo(a, &info) != WGPUStatus_Success) {
        printf("  (adapter info failed%s)\n", has_sm ? " with the subgroup-matrix chain: retried without" : "");
        memset(&info, 0, sizeof info);
        *smc = (ds_sm_configs){{NULL, (WGPUSType)DS_STYPE_SM_CONFIGS}, 0, NULL};
        S.AdapterGetInfo(a, &info);
    }
    const WGPUStringView *f[4] = {&info.vendor, &info.architecture, &info.device, &info.description};
    const char *what[4] = {"vendor", "architecture", "device", "description"};
    for (int i = 0; i < 4; i++)
        printf("  %-13s %.*s\n", what[i], (int)dp_sv_len(f[i]->data, f[i]->length), f[i]->data ? f[i]->data : "");
    printf("  type          %s, %s, vendor 0x%04x, device 0x%04x\n", std_backend(info.backendType),
           std_adapter_type(info.adapterType), info.vendorID, info.deviceID);
    printf("  subgroups     %u .. %u\n", info.subgroupMinSize, info.subgroupMaxSize);
    S.AdapterInfoFreeMembers(info);
    WGPULimits l = {0};
    if (S.AdapterGetLimits(a, &l) != WGPUStatus_Success) printf("  (limits failed)\n");
    printf("  limits: maxBufferSize %llu, maxStorageBufferBindingSize %llu,\n"
           "          maxStorageBuffersPerShaderStage %u, maxComputeWorkgroupStorageSize %u,\n"
           "          maxComputeInvocationsPerWorkgroup %u, workgroup size %u x %u x %u,\n"
           "          maxComputeWorkgroupsPerDimension %u, minStorageBufferOffsetAlignment %u\n",
           (unsigned long long)l.maxBufferSize, (unsigned long long)l.maxStorageBufferBindingSize,
           l.maxStorageBuffersPerShaderStage, l.maxComputeWorkgroupStorageSize,
           l.maxComputeInvocationsPerWorkgroup, l.maxComputeWorkgroupSizeX, l.maxComputeWorkgroupSizeY,
           l.maxComputeWorkgroupSizeZ, l.maxComputeWorkgroupsPerDimension, l.minStorageBufferOffsetAlignment);
    WGPUSupportedFeatures fs = {0};
    S.AdapterGetFeatures(a, &fs);
    printf("  features (%zu):\n", fs.featureCount);
    for (size_t i = 0; i < fs.featureCount; i++)
        printf("    0x%05x %s\n", (unsigned)fs.features[i], std_feature_name((uint32_t)fs.features[i]));
    S.SupportedFeaturesFreeMembers(fs);
    printf("  subgroups: %s, shader-f16: %s, timestamp-query: %s, subgroup matrix: %s\n",
           S.AdapterHasFeature(a, WGPUFeatureName_Subgroups) ? "yes" : "no",
           S.AdapterHasFeature(a, WGPUFeatureName_ShaderF16) ? "yes" : "no",
           S.AdapterHasFeature(a, WGPUFeatureName_TimestampQuery) ? "yes" : "no",
           has_sm ? "yes" : dawn ? "no" : "n/a (not Dawn)");
    size_t stride = ds_sm_stride(smc);
    if (has_sm) printf("  subgroup matrix configs: %zu, %zu words each%s\n", smc->count, stride,
                           stride ? "" : " (unknown layout: not read)");
    for (size_t i = 0; stride && i < smc->count; i++) {
        ds_sm_config c = ds_sm_read(smc, stride, i);
        printf("    config %zu: M %u N %u K %u, component %u -> result %u (1 f32, 2 f16, 3 u32, 4 i32, "
               "5 u8, 6 i8), subgroup size %u .. %u\n", i, c.m, c.n, c.k, c.component, c.result, c.min_sg,
               c.max_sg);
    }
}

int dp_probe_std(dp_sym_fn sym, void *lib) {
    if (!load_std(sym, lib)) return 2;
    bool dawn = S.DeviceTick || S.SmConfigsFreeMembers || S.FeatureInfo;
    printf("ABI: final webgpu.h (%s)\n", dawn ? "Dawn" : "not Dawn: no toggles, no subgroup matrix");
    WGPUInstance inst = S.CreateInstance(NULL);
    if (!inst) {
        printf("no instance\n");
        return 1;
    }
    ds_toggles tg = {{NULL, (WGPUSType)DS_STYPE_TOGGLES}, 1, std_toggles_on, 0, NULL};
    bool use_tg = dawn && !getenv("RLX_DAWN_SAFE");
    struct { WGPUBackendType backend; WGPUPowerPreference power; bool fallback; const char *what; } asks[] = {
        {WGPUBackendType_Vulkan, WGPUPowerPreference_HighPerformance, false, "vulkan, high performance"},
        {WGPUBackendType_Vulkan, WGPUPowerPreference_LowPower, false, "vulkan, low power"},
        {WGPUBackendType_Vulkan, WGPUPowerPreference_HighPerformance, true, "vulkan, fallback"},
        {WGPUBackendType_Undefined, WGPUPowerPreference_HighPerformance, false, "any backend"},
    };
    WGPUAdapter seen[4];
    uint32_t ids[4][3], types[4];
    int nseen = 0, pick = -1;
    for (size_t i = 0; i < sizeof asks / sizeof asks[0]; i++) {
        WGPURequestAdapterOptions o = {.nextInChain = use_tg ? &tg.chain : NULL,
                                       .powerPreference = asks[i].power,
                                       .forceFallbackAdapter = asks[i].fallback,
                                       .backendType = asks[i].backend};
        dp_waiter w = {0};
        WGPURequestAdapterCallbackInfo cb = {.mode = WGPUCallbackMode_AllowProcessEvents,
                                             .callback = std_on_adapter, .userdata1 = &w};
        S.InstanceRequestAdapter(inst, &o, cb);
        if (!std_wait(inst, &w) || w.status != WGPURequestAdapterStatus_Success || !w.obj) {
            printf("adapter (%s): none (%s)\n", asks[i].what, w.message);
            continue;
        }
        WGPUAdapter a = w.obj;
        WGPUAdapterInfo info = {0};
        S.AdapterGetInfo(a, &info);
        uint32_t id[3] = {(uint32_t)info.backendType, info.vendorID, info.deviceID};
        uint32_t type = (uint32_t)info.adapterType;
        S.AdapterInfoFreeMembers(info);
        int dup = -1;
        for (int k = 0; k < nseen; k++)
            if (!memcmp(ids[k], id, sizeof id)) dup = k;
        if (dup >= 0) {
            printf("adapter (%s): the same as adapter %d\n", asks[i].what, dup);
            S.AdapterRelease(a);
            continue;
        }
        printf("adapter %d (%s):\n", nseen, asks[i].what);
        ds_sm_configs smc;
        std_describe(a, dawn, &smc);
        if (smc.count && S.SmConfigsFreeMembers) S.SmConfigsFreeMembers(smc);
        /* Dawn's null backend computes nothing: list it, never pick it */
        if ((id[0] != (uint32_t)WGPUBackendType_Null || getenv("RLX_DAWN_ALLOW_NULL")) &&
            (pick < 0 || (type == WGPUAdapterType_DiscreteGPU && types[pick] != WGPUAdapterType_DiscreteGPU)))
            pick = nseen;
        memcpy(ids[nseen], id, sizeof id);
        types[nseen] = type;
        seen[nseen++] = a;
    }
    int rc = 1;
    if (pick >= 0) {
        WGPUAdapter a = seen[pick];
        printf("compute on adapter %d\n", pick);
        WGPUFeatureName want[4];
        size_t nwant = 0;
        bool f16 = S.AdapterHasFeature(a, WGPUFeatureName_ShaderF16);
        bool sgs = S.AdapterHasFeature(a, WGPUFeatureName_Subgroups);
        bool sm = dawn && S.AdapterHasFeature(a, (WGPUFeatureName)sm_feature());
        if (f16) want[nwant++] = WGPUFeatureName_ShaderF16;
        if (sgs) want[nwant++] = WGPUFeatureName_Subgroups;
        if (S.AdapterHasFeature(a, WGPUFeatureName_TimestampQuery)) want[nwant++] = WGPUFeatureName_TimestampQuery;
        if (sm) want[nwant++] = (WGPUFeatureName)sm_feature();
        std_ctx ctx = {.instance = inst};
        WGPUDeviceDescriptor dd = {.nextInChain = use_tg ? &tg.chain : NULL,
                                   .requiredFeatureCount = nwant, .requiredFeatures = want};
        dd.uncapturedErrorCallbackInfo.callback = std_on_error;
        dd.uncapturedErrorCallbackInfo.userdata1 = &ctx;
        dp_waiter w = {0};
        WGPURequestDeviceCallbackInfo cb = {.mode = WGPUCallbackMode_AllowProcessEvents,
                                            .callback = std_on_device, .userdata1 = &w};
        S.AdapterRequestDevice(a, &dd, cb);
        if (!std_wait(inst, &w) || w.status != WGPURequestDeviceStatus_Success) {
            printf("request device: status %u: %s\n", w.status, w.message);
        } else {
            ctx.device = w.obj;
            printf("device: opened with %zu features of shader-f16 / subgroups / timestamp-query / "
                   "subgroup matrix\n", nwant);
            rc = dp_checks(std_run, &ctx, f16, sgs);
            /* RLX_DAWN_SM_FORCE=1: the RLX_DAWN_SM_CONFIGS shaders also on an
               adapter without subgroup matrices, where each is refused (how
               CTest dawn_probe_refused checks the refusal line on wgpu-native) */
            const char *force_env = getenv("RLX_DAWN_SM_FORCE");
            bool force = !sm && force_env && strcmp(force_env, "1") == 0;
            if (sm || force) {
                ds_sm_configs smc = {{NULL, (WGPUSType)DS_STYPE_SM_CONFIGS}, 0, NULL};
                WGPUAdapterInfo info = {.nextInChain = sm ? &smc.chain : NULL};
                S.AdapterGetInfo(a, &info);
                size_t stride = ds_sm_stride(&smc), listed = stride ? smc.count : 0;
                ds_sm_config extra[16];
                size_t nextra = sm_extra_configs(extra, sizeof extra / sizeof extra[0]);
                for (size_t i = 0; i < listed + nextra; i++) {
                    ds_sm_config c = i < listed ? ds_sm_read(&smc, stride, i) : extra[i - listed];
                    /* Dawn: the workgroup's x size must be a multiple of the device's
                       largest subgroup size when a shader uses subgroup matrices */
                    uint32_t sg = info.subgroupMaxSize > c.max_sg ? info.subgroupMaxSize : c.max_sg;
                    if (!sg) sg = 32;
                    if (i == listed) printf("  (configurations from RLX_DAWN_SM_CONFIGS:)\n");
                    sm_check(&ctx, &c, sg);
                }
                if (sm && S.SmConfigsFreeMembers) S.SmConfigsFreeMembers(smc);
                S.AdapterInfoFreeMembers(info);
            }
            S.DeviceRelease(ctx.device);
        }
    } else {
        printf("no adapter to compute on\n");
    }
    for (int k = 0; k < nseen; k++) S.AdapterRelease(seen[k]);
    S.InstanceRelease(inst);
    return rc;
}

typedef struct host_table { void *(*sym)(const char *name); } host_table;

static void *host_sym(void *cx, const char *name) { return ((host_table *)cx)->sym(name); }

int dawn_probe_run(void *(*sym)(const char *name)) {
    host_table t = {sym};
    fflush(stdout);
    int rc = dp_probe_std(host_sym, &t);
    fflush(stdout);
    return rc;
}
