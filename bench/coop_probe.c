/* coop_probe: which cooperative-matrix forms of WGSL (wgpu-native's
 * experimental `wgpu_cooperative_matrix` extension, Vulkan
 * VK_KHR_cooperative_matrix underneath) the first high-performance adapter
 * accepts, and whether each computes the right product.
 *
 *   coop_probe [SUBGROUP_SIZE]        (default 32)
 *
 * For each form (element type of A and B, of the accumulator C, matrix
 * size 8 or 16) it builds a one-subgroup kernel that loads A, B and C from
 * storage buffers with coopLoad, does one coopMultiplyAdd and stores C with
 * coopStore. A line per form says "rejected: <the validation message>" or
 * the largest error of the result read as the row-major product A x B and
 * as B x A (what column-major loads and stores give). Operands are small
 * integers, so every correct product is exact. A developer tool for the
 * cooperative-matrix GEMM (src/backend/webgpu/kernels/gemm_coop.wgsl); it
 * uses wgpu-native directly, not rlx. Exit status 0 when the adapter was
 * opened (whatever the forms gave), 1 otherwise. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wgpu_min.h"

typedef struct form {
    const char *ab, *c; /* "f32" or "f16" */
    int n;              /* 8 or 16 */
} form;

static const form k_forms[] = {
    { "f32", "f32", 8 }, { "f16", "f32", 8 },  { "f16", "f16", 8 },
    { "f16", "f32", 16 }, { "f16", "f16", 16 }, { "f32", "f32", 16 },
};

static uint16_t to_f16(float x) { /* small integers only: exact */
    if (x == 0.0f) return 0;
    uint16_t sign = x < 0 ? 0x8000 : 0;
    float a = fabsf(x);
    int e = 0;
    while (a >= 2.0f) a /= 2.0f, e++;
    while (a < 1.0f) a *= 2.0f, e--;
    return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | (uint16_t)((a - 1.0f) * 1024.0f + 0.5f));
}

static float from_f16(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    float v = e ? ldexpf(1.0f + m / 1024.0f, e - 15) : ldexpf(m / 1024.0f, -14);
    return (h & 0x8000) ? -v : v;
}

static void fill(const char *ty, const float *v, int count, unsigned char *out) {
    for (int i = 0; i < count; i++) {
        if (strcmp(ty, "f16") == 0) {
            uint16_t h = to_f16(v[i]);
            memcpy(out + 2 * i, &h, 2);
        } else {
            memcpy(out + 4 * i, &v[i], 4);
        }
    }
}

static void try_form(WGPUInstance inst, WGPUDevice dev, const form *f, unsigned sg) {
    WGPUQueue q = wgpuDeviceGetQueue(dev);
    int n = f->n, nn = n * n;
    char src[2048];
    bool f16 = strcmp(f->ab, "f16") == 0 || strcmp(f->c, "f16") == 0;
    snprintf(src, sizeof src,
             "%senable wgpu_cooperative_matrix;\n"
             "@group(0) @binding(0) var<storage, read_write> A: array<%s>;\n"
             "@group(0) @binding(1) var<storage, read_write> B: array<%s>;\n"
             "@group(0) @binding(2) var<storage, read_write> C: array<%s>;\n"
             "@compute @workgroup_size(%u)\n"
             "fn main() {\n"
             "    var c = coopLoad<coop_mat%dx%d<%s, C>>(&C[0], %du);\n"
             "    let a = coopLoad<coop_mat%dx%d<%s, A>>(&A[0], %du);\n"
             "    let b = coopLoad<coop_mat%dx%d<%s, B>>(&B[0], %du);\n"
             "    c = coopMultiplyAdd(a, b, c);\n"
             "    coopStore(c, &C[0], %du);\n"
             "}\n",
             f16 ? "enable f16;\n" : "", f->ab, f->ab, f->c, sg, n, n, f->c, n, n, n, f->ab, n, n, n, f->ab, n, n);
    printf("form A,B %s  C %s  %dx%d: ", f->ab, f->c, n, n);
    fflush(stdout);
    char err[2048];
    WGPUComputePipeline pipe = wm_pipeline(inst, dev, src, err, sizeof err);
    if (!pipe) {
        printf("rejected: %s\n", err);
        return;
    }
    float a[256], b[256], ab[256], ba[256];
    for (int i = 0; i < nn; i++) {
        a[i] = (float)((i * 7 + 3) % 9 - 4);
        b[i] = (float)((i * 5 + 1) % 7 - 3);
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            float s1 = 0, s2 = 0;
            for (int k = 0; k < n; k++) s1 += a[i * n + k] * b[k * n + j], s2 += b[i * n + k] * a[k * n + j];
            ab[i * n + j] = s1, ba[i * n + j] = s2;
        }
    size_t esz_ab = strcmp(f->ab, "f16") == 0 ? 2 : 4, esz_c = strcmp(f->c, "f16") == 0 ? 2 : 4;
    size_t bytes[3] = { nn * esz_ab, nn * esz_ab, nn * esz_c };
    unsigned char host[3][1024];
    float zero[256];
    memset(zero, 0, sizeof zero);
    fill(f->ab, a, nn, host[0]);
    fill(f->ab, b, nn, host[1]);
    fill(f->c, zero, nn, host[2]);
    WGPUBuffer buf[3];
    WGPUBindGroupEntry e[3];
    memset(e, 0, sizeof e);
    for (int i = 0; i < 3; i++) {
        WGPUBufferDescriptor bd;
        memset(&bd, 0, sizeof bd);
        bd.size = 1024;
        bd.usage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst | WGPUBufferUsage_CopySrc;
        buf[i] = wgpuDeviceCreateBuffer(dev, &bd);
        wgpuQueueWriteBuffer(q, buf[i], 0, host[i], 1024);
        e[i].binding = (uint32_t)i;
        e[i].buffer = buf[i];
        e[i].size = (bytes[i] + 3) & ~(size_t)3;
    }
    WGPUBufferDescriptor rd;
    memset(&rd, 0, sizeof rd);
    rd.size = 1024;
    rd.usage = WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst;
    WGPUBuffer rb = wgpuDeviceCreateBuffer(dev, &rd);
    WGPUBindGroupDescriptor bgd;
    memset(&bgd, 0, sizeof bgd);
    bgd.layout = wgpuComputePipelineGetBindGroupLayout(pipe, 0);
    bgd.entryCount = 3;
    bgd.entries = e;
    wgpuDevicePushErrorScope(dev, WGPUErrorFilter_Validation);
    WGPUBindGroup bg = wgpuDeviceCreateBindGroup(dev, &bgd);
    WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(dev, NULL);
    WGPUComputePassEncoder cp = wgpuCommandEncoderBeginComputePass(enc, NULL);
    wgpuComputePassEncoderSetPipeline(cp, pipe);
    wgpuComputePassEncoderSetBindGroup(cp, 0, bg, 0, NULL);
    wgpuComputePassEncoderDispatchWorkgroups(cp, 1, 1, 1);
    wgpuComputePassEncoderEnd(cp);
    wgpuCommandEncoderCopyBufferToBuffer(enc, buf[2], 0, rb, 0, 1024);
    WGPUCommandBuffer cb = wgpuCommandEncoderFinish(enc, NULL);
    wm_waiter sc;
    wm_pop_scope(inst, dev, &sc);
    if (sc.status != WGPUErrorType_NoError) {
        printf("compiled, but recording failed: %s\n", sc.msg);
        return;
    }
    wgpuQueueSubmit(q, 1, &cb);
    wm_waiter mw;
    memset(&mw, 0, sizeof mw);
    WGPUBufferMapCallbackInfo mc;
    memset(&mc, 0, sizeof mc);
    mc.mode = WGPUCallbackMode_AllowProcessEvents;
    mc.callback = wm_on_map;
    mc.userdata1 = &mw;
    wgpuBufferMapAsync(rb, WGPUMapMode_Read, 0, 1024, mc);
    wm_wait(inst, dev, &mw);
    if (!mw.done || mw.status) {
        printf("compiled, but the read-back failed: %s\n", mw.msg);
        return;
    }
    const unsigned char *r = wgpuBufferGetConstMappedRange(rb, 0, 1024);
    double e_ab = 0, e_ba = 0;
    for (int i = 0; i < nn; i++) {
        float v;
        if (esz_c == 2) {
            uint16_t h;
            memcpy(&h, r + 2 * i, 2);
            v = from_f16(h);
        } else {
            memcpy(&v, r + 4 * i, 4);
        }
        double d1 = fabs(v - ab[i]), d2 = fabs(v - ba[i]);
        if (!(d1 <= e_ab)) e_ab = d1;
        if (!(d2 <= e_ba)) e_ba = d2;
    }
    wgpuBufferUnmap(rb);
    printf("accepted; max error as A x B %g, as B x A %g (%s)\n", e_ab, e_ba,
           e_ab == 0 ? "row-major loads and stores" : e_ba == 0 ? "column-major loads and stores" : "WRONG");
}

int main(int argc, char **argv) {
    unsigned sg = argc > 1 ? (unsigned)atoi(argv[1]) : 32;
    if (sg == 0 || sg > 256) sg = 32;
    WGPUInstance inst = wgpuCreateInstance(NULL);
    WGPUAdapter ad = wm_adapter(inst, "coop_probe");
    if (!ad) return 1;
    WGPUAdapterInfo info;
    memset(&info, 0, sizeof info);
    wgpuAdapterGetInfo(ad, &info);
    printf("adapter: %.*s\n", (int)info.device.length, info.device.data ? info.device.data : "");
    bool has_coop = wgpuAdapterHasFeature(ad, (WGPUFeatureName)WGPUNativeFeature_CooperativeMatrix);
    bool has_f16 = wgpuAdapterHasFeature(ad, WGPUFeatureName_ShaderF16);
    printf("cooperative-matrix feature: %s; shader-f16: %s; subgroup size assumed: %u\n", has_coop ? "yes" : "no",
           has_f16 ? "yes" : "no", sg);
    WGPUFeatureName feat[2];
    size_t nf = 0;
    if (has_f16) feat[nf++] = WGPUFeatureName_ShaderF16;
    if (has_coop) feat[nf++] = (WGPUFeatureName)WGPUNativeFeature_CooperativeMatrix;
    WGPUDevice dev = wm_device(inst, ad, feat, nf, "coop_probe");
    if (!dev) return 1;
    for (size_t i = 0; i < sizeof k_forms / sizeof k_forms[0]; i++) try_form(inst, dev, &k_forms[i], sg);
    return 0;
}
