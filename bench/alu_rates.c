/* alu_rates: the arithmetic rate that WGSL reaches on the first
 * high-performance adapter, per element type and vector width, through
 * wgpu-native alone (naga's translation and the driver's compiler, with
 * no memory traffic in the timed loop).
 *
 *   alu_rates [GFLOP_PER_FORM]        (default 256)
 *
 * For each form (f32, vec4<f32>, f16, vec2<f16>, vec4<f16> by fma() and
 * by x * a + b, the GEMM step's lane splat, f16 products widened into
 * f32 sums, i32 multiply-adds, dot4I8Packed and dot4U8Packed) it builds a
 * kernel whose 1 Mi invocations (4096 workgroups of 256) each run 8
 * independent chains x = fma(x, a, b) (a and b read from a buffer, so
 * nothing folds) for as many steps as give
 * about GFLOP_PER_FORM x 1e9 operations in all, and writes their sum out.
 * A multiply-add counts 2 operations per lane; a dot4 of packed bytes
 * with its accumulation counts 8. It prints the best and the median of 5
 * timed dispatches (wall time of submit to idle, after one warm-up) as
 * TFLOP/s (TOP/s for integers), and a form the adapter refuses as
 * "rejected" with the reason. The question it answers for issue 12:
 * whether packed f16 arithmetic runs at twice the f32 rate on this stack
 * at all, before any GEMM tile is blamed. A developer tool; exit status
 * 0 when the adapter was opened. */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "wgpu_min.h"

typedef struct form {
    const char *name;
    const char *type;  /* the chains' WGSL type */
    const char *step;  /* one step of chain x (WGSL, %s = the chain's name) */
    const char *sum;   /* the chain's value as f32 (%s = the chain) */
    int ops;           /* operations per step (all lanes) */
    int f16;           /* needs shader-f16 */
} form;

static const form k_forms[] = {
    { "f32 fma", "f32", "%s = fma(%s, a, b);", "%s", 2, 0 },
    { "vec4<f32> fma", "vec4<f32>", "%s = fma(%s, vec4<f32>(a), vec4<f32>(b));", "dot(%s, vec4<f32>(1.0))", 8, 0 },
    { "f16 fma", "f16", "%s = fma(%s, ha, hb);", "f32(%s)", 2, 1 },
    { "vec2<f16> fma", "vec2<f16>", "%s = fma(%s, vec2<f16>(ha), vec2<f16>(hb));", "f32(%s.x + %s.y)", 4, 1 },
    { "vec4<f16> fma", "vec4<f16>", "%s = fma(%s, vec4<f16>(ha), vec4<f16>(hb));", "f32(dot(%s, vec4<f16>(1.0h)))", 8,
      1 },
    { "vec4<f32> x * a + b", "vec4<f32>", "%s = %s * vec4<f32>(a) + vec4<f32>(b);", "dot(%s, vec4<f32>(1.0))", 8, 0 },
    { "vec2<f16> x * a + b", "vec2<f16>", "%s = %s * vec2<f16>(ha) + vec2<f16>(hb);", "f32(%s.x + %s.y)", 4, 1 },
    { "vec4<f16> x * a + b", "vec4<f16>", "%s = %s * vec4<f16>(ha) + vec4<f16>(hb);", "f32(dot(%s, vec4<f16>(1.0h)))",
      8, 1 },
    { "vec4<f16> x.y * a + x (GEMM step)", "vec4<f16>", "%s = vec4<f16>(%s.y) * vec4<f16>(ha) + %s;",
      "f32(dot(%s, vec4<f16>(1.0h)))", 8, 1 },
    { "vec4<f32> fma, a lane splat (GEMM step)", "vec4<f32>", "%s = fma(vec4<f32>(%s.y), vec4<f32>(a), %s);",
      "dot(%s, vec4<f32>(1.0))", 8, 0 },
    { "vec4<f16> fma, a lane splat (GEMM step)", "vec4<f16>", "%s = fma(vec4<f16>(%s.y), vec4<f16>(ha), %s);",
      "f32(dot(%s, vec4<f16>(1.0h)))", 8, 1 },
    { "vec4<f16> products into vec4<f32> sums", "vec4<f32>",
      "%s = %s + vec4<f32>(vec4<f16>(%s.wzyx) * vec4<f16>(ha));", "dot(%s, vec4<f32>(1.0))", 8, 1 },
    { "vec4<i32> multiply-add", "vec4<i32>", "%s = %s * vec4<i32>(ia) + vec4<i32>(ib);", "f32(dot(%s, vec4<i32>(1)))",
      8, 0 },
    { "dot4I8Packed + i32", "i32", "%s = %s + dot4I8Packed(bitcast<u32>(%s), ua);", "f32(%s)", 8, 0 },
    { "dot4U8Packed + u32", "u32", "%s = %s + dot4U8Packed(%s, ua);", "f32(%s)", 8, 0 },
};

enum { CHAINS = 8, WG = 256, GROUPS = 4096, TIMED = 5 };

/* Writes one step of chain c into dst: the form's step with every %s
 * replaced by the chain's name. */
static void put_step(char *dst, size_t cap, const char *pattern, int c) {
    size_t o = 0;
    for (const char *p = pattern; *p && o + 8 < cap; p++) {
        if (p[0] == '%' && p[1] == 's') {
            o += (size_t)snprintf(dst + o, cap - o, "x%d", c);
            p++;
        } else {
            dst[o++] = *p;
        }
    }
    dst[o] = 0;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void run_form(WGPUInstance inst, WGPUDevice dev, const form *f, double gops, WGPUBuffer in, WGPUBuffer out) {
    double per_step = (double)GROUPS * WG * CHAINS * f->ops;
    uint32_t steps = (uint32_t)(gops * 1e9 / per_step / 4.0 + 0.5) * 4u;
    if (steps < 4) steps = 4;
    char src[8192], line[256];
    size_t o = 0;
    o += (size_t)snprintf(src + o, sizeof src - o,
                          "%s@group(0) @binding(0) var<storage, read> inp: array<f32>;\n"
                          "@group(0) @binding(1) var<storage, read_write> outp: array<f32>;\n"
                          "@compute @workgroup_size(%d)\n"
                          "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {\n"
                          "    let a = inp[0]; let b = inp[1];\n"
                          "    let ia = i32(inp[2]); let ib = i32(inp[3]); let ua = bitcast<u32>(inp[4]);\n"
                          "%s",
                          f->f16 ? "enable f16;\n" : "", WG,
                          f->f16 ? "    let ha = f16(a); let hb = f16(b);\n" : "");
    for (int c = 0; c < CHAINS; c++) {
        char iv[128];
        if (strcmp(f->type, "u32") == 0) snprintf(iv, sizeof iv, "u32(gid.x + %du)", c);
        else if (strstr(f->type, "i32")) snprintf(iv, sizeof iv, "%s(i32(gid.x) + %d)", f->type, c);
        else if (strstr(f->type, "f16"))
            snprintf(iv, sizeof iv, "%s(f16(f32(gid.x %% 64u) * 0.01 + %d.0 * 0.1))", f->type, c);
        else snprintf(iv, sizeof iv, "%s(f32(gid.x %% 64u) * 0.01 + %d.0 * 0.1)", f->type, c);
        o += (size_t)snprintf(src + o, sizeof src - o, "    var x%d: %s = %s;\n", c, f->type, iv);
    }
    o += (size_t)snprintf(src + o, sizeof src - o, "    for (var i = 0u; i < %uu; i += 4u) {\n", steps);
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < CHAINS; c++) {
            put_step(line, sizeof line, f->step, c);
            o += (size_t)snprintf(src + o, sizeof src - o, "        %s\n", line);
        }
    o += (size_t)snprintf(src + o, sizeof src - o, "    }\n    var s = 0.0;\n");
    for (int c = 0; c < CHAINS; c++) {
        put_step(line, sizeof line, f->sum, c);
        o += (size_t)snprintf(src + o, sizeof src - o, "    s += %s;\n", line);
    }
    snprintf(src + o, sizeof src - o, "    outp[gid.x] = s;\n}\n");

    printf("%-40s ", f->name);
    fflush(stdout);
    char err[2048];
    WGPUComputePipeline pipe = wm_pipeline(inst, dev, src, err, sizeof err);
    if (!pipe) {
        printf("rejected: %.300s\n", err);
        return;
    }
    WGPUBindGroupEntry e[2];
    memset(e, 0, sizeof e);
    e[0].binding = 0, e[0].buffer = in, e[0].size = 64;
    e[1].binding = 1, e[1].buffer = out, e[1].size = (uint64_t)GROUPS * WG * 4;
    WGPUBindGroupDescriptor bgd;
    memset(&bgd, 0, sizeof bgd);
    bgd.layout = wgpuComputePipelineGetBindGroupLayout(pipe, 0);
    bgd.entryCount = 2;
    bgd.entries = e;
    WGPUBindGroup bg = wgpuDeviceCreateBindGroup(dev, &bgd);
    WGPUQueue q = wgpuDeviceGetQueue(dev);
    double t[TIMED];
    for (int it = -1; it < TIMED; it++) {
        WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(dev, NULL);
        WGPUComputePassEncoder cp = wgpuCommandEncoderBeginComputePass(enc, NULL);
        wgpuComputePassEncoderSetPipeline(cp, pipe);
        wgpuComputePassEncoderSetBindGroup(cp, 0, bg, 0, NULL);
        wgpuComputePassEncoderDispatchWorkgroups(cp, GROUPS, 1, 1);
        wgpuComputePassEncoderEnd(cp);
        WGPUCommandBuffer cb = wgpuCommandEncoderFinish(enc, NULL);
        double t0 = now_s();
        wgpuQueueSubmit(q, 1, &cb);
        wgpuDevicePoll(dev, 1, NULL);
        double dt = now_s() - t0;
        if (it >= 0) t[it] = dt;
        wgpuCommandBufferRelease(cb);
        wgpuComputePassEncoderRelease(cp);
        wgpuCommandEncoderRelease(enc);
    }
    qsort(t, TIMED, sizeof t[0], cmp_d);
    double total = per_step * steps;
    printf("%8.2f T/s best, %8.2f median  (%u steps, %.3f ms best)\n", total / t[0] * 1e-12,
           total / t[TIMED / 2] * 1e-12, steps, t[0] * 1e3);
    wgpuBindGroupRelease(bg);
    wgpuComputePipelineRelease(pipe);
}

int main(int argc, char **argv) {
    double gops = argc > 1 ? atof(argv[1]) : 256.0;
    if (!(gops > 0 && gops < 1e6)) {
        fprintf(stderr, "alu_rates: GFLOP_PER_FORM must be a number in (0, 1e6), not '%s'\n", argv[1]);
        return 2;
    }
    WGPUInstance inst = wgpuCreateInstance(NULL);
    WGPUAdapter ad = wm_adapter(inst, "alu_rates");
    if (!ad) return 1;
    WGPUAdapterInfo info;
    memset(&info, 0, sizeof info);
    wgpuAdapterGetInfo(ad, &info);
    bool has_f16 = wgpuAdapterHasFeature(ad, WGPUFeatureName_ShaderF16);
    printf("adapter: %.*s; shader-f16: %s\n", (int)info.device.length, info.device.data ? info.device.data : "",
           has_f16 ? "yes" : "no");
    WGPUFeatureName feat[1] = { WGPUFeatureName_ShaderF16 };
    WGPUDevice dev = wm_device(inst, ad, feat, has_f16 ? 1 : 0, "alu_rates");
    if (!dev) return 1;
    float host[16] = { 0.999f, 0.0001f, 3.0f, 1.0f };
    uint32_t packed = 0x01ff02feu; /* bytes 1, -1, 2, -2 as i8 */
    memcpy(&host[4], &packed, 4);
    WGPUBufferDescriptor bd;
    memset(&bd, 0, sizeof bd);
    bd.size = 64;
    bd.usage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst;
    WGPUBuffer in = wgpuDeviceCreateBuffer(dev, &bd);
    wgpuQueueWriteBuffer(wgpuDeviceGetQueue(dev), in, 0, host, sizeof host);
    bd.size = (uint64_t)GROUPS * WG * 4;
    bd.usage = WGPUBufferUsage_Storage;
    WGPUBuffer out = wgpuDeviceCreateBuffer(dev, &bd);
    for (size_t i = 0; i < sizeof k_forms / sizeof k_forms[0]; i++) {
        if (k_forms[i].f16 && !has_f16) {
            printf("%-40s skipped: no shader-f16\n", k_forms[i].name);
            continue;
        }
        run_form(inst, dev, &k_forms[i], gops, in, out);
    }
    return 0;
}
